// Conv2D and MatMul through a session against their peers: oneDNN called
// directly (the ceiling: the library the CPU plugin runs, with nothing
// around it) and LibTorch's eager ops (a framework users would otherwise
// pick), on the same data and the same thread count.
//
// The oneDNN side is written here against oneDNN's own API, not through
// the plugin's helpers, so that it stays a measurement of oneDNN rather
// than of our wrapping of it.  Its primitives are created once and only
// executed in the timed loop; the convolution's weights are reordered into
// the layout oneDNN prefers once, as an inference program with a constant
// filter would do.
//
// Every contender of one table is timed in the same loop, one operation
// each per repetition with the order rotating, so that load from other
// processes on a shared machine falls on all of them alike.
//
//   conv_matmul [--repetitions=21] [--threads=N (default: 1, then nproc)]
//               [--size=1024] [--only=conv|matmul]
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_util.h"
#include "onednn_bench.h"
#include "weft/weft.h"
#if WEFT_BENCH_HAVE_LIBTORCH
#include "libtorch_peer.h"
#endif

namespace {

using bench_onednn::Buffer;
using bench_onednn::Contender;
using bench_onednn::Fill;
using bench_onednn::OnednnMatMul;
using bench_onednn::TimeTogether;

// Largest difference relative to the reference's magnitude (at least 1):
// the contenders sum in different orders, so bit equality is not expected.
double Disagreement(const float* x, const float* reference, size_t count) {
  double worst = 0.0;
  for (size_t i = 0; i < count; ++i) {
    const double scale = std::max(1.0, std::fabs(double{reference[i]}));
    worst = std::max(worst, std::fabs(double{x[i]} - reference[i]) / scale);
  }
  return worst;
}

void CheckAgreement(const char* what, const float* x, const float* reference,
                    size_t count) {
  const double d = Disagreement(x, reference, count);
  if (!(d <= 1e-3)) {
    std::fprintf(stderr,
                 "conv_matmul: %s differs from oneDNN direct by %g "
                 "(relative)\n",
                 what, d);
    std::exit(1);
  }
}

// oneDNN picks its thread count when a primitive is created and when it
// runs, from the calling thread's OpenMP setting (Debian's oneDNN is built
// for OpenMP), so every side sets it before either.
void SetOpenmpThreads(int threads) { omp_set_num_threads(threads); }

// Prints the table; contenders[0] is the session, [1] oneDNN direct, the
// rest LibTorch.  Ratios are of throughput: above 1 means the session is
// faster.
void Report(const std::vector<Contender>& contenders, double flop) {
  for (const Contender& c : contenders) {
    std::printf("  %-24s %9.2f ms  %7.1f GFLOP/s  (CPU %8.2f ms)%s%s\n",
                c.name.c_str(), c.wall_s * 1e3, flop / c.wall_s * 1e-9,
                c.cpu_s * 1e3, c.note.empty() ? "" : "  ",
                c.note.c_str());
  }
  const Contender& session = contenders[0];
  for (size_t i = 1; i < contenders.size(); ++i) {
    const Contender& peer = contenders[i];
    const double ratio = peer.wall_s / session.wall_s;
    // oneDNN direct is the ceiling: the session runs the same library, so
    // the target is to add little to it.  LibTorch is a peer to beat.
    const bool ceiling = i == 1;
    const bool met = ceiling ? ratio >= 0.95 : ratio > 1.0;
    std::printf("  session / %-24s %6.3f  (CPU time %.3f)  target %s: %s\n",
                (peer.name + ":").c_str(), ratio, peer.cpu_s / session.cpu_s,
                ceiling ? ">= 0.95" : "> 1", met ? "met" : "NOT met");
  }
}

weft_session* MakeSession(weft_graph* graph, int threads) {
  weft_session_options options;
  weft_session_options_init(&options);
  // WEFT_DEVICES, when set, lets the same binary measure another device.
  options.devices =
      std::getenv("WEFT_DEVICES") != nullptr ? nullptr : "/device:CPU:0";
  options.intra_op_threads = threads;
  weft_session* session = nullptr;
  BENCH_CHECK(weft_session_create(graph, &options, &session));
  return session;
}

// ---- Conv2D -------------------------------------------------------------

struct ConvProblem {
  int64_t n = 8, h = 56, w = 56, cin = 64;
  int64_t kh = 3, kw = 3, cout = 64;
  // SAME with stride 1: output as large as the input; TensorFlow puts an
  // odd padding's extra row at the bottom, which a 3x3 window never needs.
  int64_t pad_top() const { return (kh - 1) / 2; }
  int64_t pad_bottom() const { return kh - 1 - pad_top(); }
  int64_t pad_left() const { return (kw - 1) / 2; }
  int64_t pad_right() const { return kw - 1 - pad_left(); }
  size_t input_count() const { return static_cast<size_t>(n * h * w * cin); }
  size_t filter_count() const {
    return static_cast<size_t>(kh * kw * cin * cout);
  }
  size_t output_count() const {
    return static_cast<size_t>(n * h * w * cout);
  }
  double flop() const {
    return 2.0 * static_cast<double>(n * h * w * cout) *
           static_cast<double>(kh * kw * cin);
  }
};

class OnednnConv : public bench_onednn::OnednnPrimitive {
 public:
  OnednnConv(const ConvProblem& p, const float* input, const float* filter,
             float* output) {
    using dnnl::memory;
    using Tag = memory::format_tag;
    const auto f32 = memory::data_type::f32;
    // oneDNN names dims in NCHW / OIHW order whatever the layout; the tag
    // says how they lie in memory.
    const memory::desc src({p.n, p.cin, p.h, p.w}, f32, Tag::nhwc);
    const memory::desc dst({p.n, p.cout, p.h, p.w}, f32, Tag::nhwc);
    const memory::dims weight_dims = {p.cout, p.cin, p.kh, p.kw};
    const memory::desc user_weights(weight_dims, f32, Tag::hwio);
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        dnnl::algorithm::convolution_direct, src,
        memory::desc(weight_dims, f32, Tag::any), dst, {1, 1},
        {p.pad_top(), p.pad_left()}, {p.pad_bottom(), p.pad_right()});
    const dnnl::convolution_forward::primitive_desc pd(desc, engine_);
    implementation_ = pd.impl_info_str();
    memory user(user_weights, engine_, const_cast<float*>(filter));
    memory weights(pd.weights_desc(), engine_);
    dnnl::reorder(user, weights).execute(stream_, user, weights);
    stream_.wait();
    primitive_ = dnnl::convolution_forward(pd);
    args_ = {{DNNL_ARG_SRC, memory(src, engine_, const_cast<float*>(input))},
             {DNNL_ARG_WEIGHTS, weights},
             {DNNL_ARG_DST, memory(dst, engine_, output)}};
  }
};

void BenchConv(int threads, int repetitions) {
  const ConvProblem p;
  Buffer input(p.input_count()), filter(p.filter_count());
  Buffer direct_output(p.output_count()), scratch(p.output_count());
  Fill(input, 12345u);
  Fill(filter, 54321u);
  // Keeps the sums near 1 whatever the window: 576-term sums of values in
  // [-1, 1) would otherwise reach the tens and make the agreement check
  // a test of rounding in large numbers.
  const float scale = 1.0f / std::sqrt(static_cast<float>(p.kh * p.kw * p.cin));
  for (size_t i = 0; i < filter.size; ++i) filter.data[i] *= scale;

  weft_graph* graph = nullptr;
  BENCH_CHECK(weft_graph_create(&graph));
  const int64_t input_dims[4] = {p.n, p.h, p.w, p.cin};
  const int64_t filter_dims[4] = {p.kh, p.kw, p.cin, p.cout};
  weft_output feed, filter_out;
  BENCH_CHECK(weft_graph_placeholder(graph, "input", WEFT_FLOAT32, input_dims,
                                     4, &feed));
  weft_tensor* filter_value = nullptr;
  BENCH_CHECK(weft_tensor_create_copy(WEFT_FLOAT32, filter_dims, 4,
                                      filter.data,
                                      filter.size * sizeof(float),
                                      &filter_value));
  BENCH_CHECK(weft_graph_constant(graph, "filter", filter_value,
                                  &filter_out));
  weft_tensor_destroy(filter_value);
  weft_op_builder* b = weft_op_begin(graph, "Conv2D", "conv");
  weft_op_add_input(b, feed);
  weft_op_add_input(b, filter_out);
  const int64_t ones[4] = {1, 1, 1, 1};
  weft_op_set_attr_int_list(b, "strides", ones, 4);
  weft_op_set_attr_int_list(b, "dilations", ones, 4);
  weft_op_set_attr_string(b, "padding", "SAME");
  weft_node* conv_node = nullptr;
  BENCH_CHECK(weft_op_finish(b, &conv_node));
  const weft_output fetch = {conv_node, 0};

  weft_session* session = MakeSession(graph, threads);
  // Zero-copy feed: copying 6 MB of input per run would be the bench's
  // cost, not the runtime's.
  weft_tensor* feed_value = nullptr;
  BENCH_CHECK(weft_tensor_create_from_data(
      WEFT_FLOAT32, input_dims, 4, input.data, input.size * sizeof(float),
      nullptr, nullptr, &feed_value));
  auto run_session = [&]() -> weft_tensor* {
    weft_tensor* result = nullptr;
    BENCH_CHECK(weft_session_run(session, &feed, &feed_value, 1, &fetch, 1,
                                 nullptr, 0, &result));
    return result;
  };

  SetOpenmpThreads(threads);
  OnednnConv direct(p, input.data, filter.data, direct_output.data);

  std::vector<Contender> contenders;
  contenders.push_back(
      {"session", "", [&] { weft_tensor_destroy(run_session()); }, {}, {}});
  contenders.push_back({"oneDNN direct", "", [&] { direct.Run(); }, {}, {}});

  // Checks run before timing, and also warm every side up.
  direct.Run();
  weft_tensor* first = run_session();
  CheckAgreement("session Conv2D",
                 static_cast<const float*>(weft_tensor_data(first)),
                 direct_output.data, p.output_count());
  weft_tensor_destroy(first);

#if WEFT_BENCH_HAVE_LIBTORCH
  bench_libtorch::SetThreads(threads);
  const bench_libtorch::ConvShape shape = {
      p.n, p.h, p.w, p.cin, p.kh, p.kw, p.cout, p.pad_top(), p.pad_left()};
  bench_libtorch::Conv2D torch_nchw(shape, input.data, filter.data, false);
  bench_libtorch::Conv2D torch_nhwc(shape, input.data, filter.data, true);
  torch_nchw.Run();
  torch_nchw.OutputNhwc(scratch.data);
  CheckAgreement("LibTorch conv2d (NCHW)", scratch.data, direct_output.data,
                 p.output_count());
  torch_nhwc.Run();
  torch_nhwc.OutputNhwc(scratch.data);
  CheckAgreement("LibTorch conv2d (channels_last)", scratch.data,
                 direct_output.data, p.output_count());
  contenders.push_back({"LibTorch NCHW", "(its native layout)",
                        [&] { torch_nchw.Run(); }, {}, {}});
  contenders.push_back({"LibTorch channels_last", "(NHWC, as the session)",
                        [&] { torch_nhwc.Run(); }, {}, {}});
#endif

  // All sides start their OpenMP parallel regions from this thread (a
  // session runs a graph with a single root on the calling thread), so
  // they share one team of workers and one thread count, set above.
  TimeTogether(contenders, repetitions);
  std::printf("conv2d: input [%lld,%lld,%lld,%lld] NHWC, filter "
              "[%lld,%lld,%lld,%lld] HWIO, stride 1, SAME, float32; "
              "%d thread%s, median of %d\n",
              (long long)p.n, (long long)p.h, (long long)p.w,
              (long long)p.cin, (long long)p.kh, (long long)p.kw,
              (long long)p.cin, (long long)p.cout, threads,
              threads == 1 ? "" : "s", repetitions);
  std::printf("  (oneDNN direct: %s; nhwc data, weights reordered once)\n",
              direct.implementation().c_str());
  Report(contenders, p.flop());

  weft_tensor_destroy(feed_value);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

// ---- MatMul -------------------------------------------------------------

void BenchMatMul(int size, int threads, int repetitions) {
  const int64_t n = size;
  const size_t elements = static_cast<size_t>(n * n);
  Buffer a(elements), b(elements), direct_c(elements);
  Fill(a, 12345u);
  Fill(b, 54321u);
  // Scaled as the convolution's filter is, for the same reason.
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (size_t i = 0; i < b.size; ++i) b.data[i] *= scale;

  weft_graph* graph = nullptr;
  BENCH_CHECK(weft_graph_create(&graph));
  const int64_t dims[2] = {n, n};
  weft_output feeds[2], product;
  BENCH_CHECK(weft_graph_placeholder(graph, "a", WEFT_FLOAT32, dims, 2,
                                     &feeds[0]));
  BENCH_CHECK(weft_graph_placeholder(graph, "b", WEFT_FLOAT32, dims, 2,
                                     &feeds[1]));
  BENCH_CHECK(weft_graph_apply(graph, "MatMul", "ab", feeds, 2, &product));
  weft_session* session = MakeSession(graph, threads);
  weft_tensor* feed_values[2] = {nullptr, nullptr};
  BENCH_CHECK(weft_tensor_create_from_data(WEFT_FLOAT32, dims, 2, a.data,
                                           elements * sizeof(float), nullptr,
                                           nullptr, &feed_values[0]));
  BENCH_CHECK(weft_tensor_create_from_data(WEFT_FLOAT32, dims, 2, b.data,
                                           elements * sizeof(float), nullptr,
                                           nullptr, &feed_values[1]));
  auto run_session = [&]() -> weft_tensor* {
    weft_tensor* result = nullptr;
    BENCH_CHECK(weft_session_run(session, feeds, feed_values, 2, &product, 1,
                                 nullptr, 0, &result));
    return result;
  };

  SetOpenmpThreads(threads);
  OnednnMatMul direct(a.data, b.data, direct_c.data, n, n, n);

  std::vector<Contender> contenders;
  contenders.push_back(
      {"session", "", [&] { weft_tensor_destroy(run_session()); }, {}, {}});
  contenders.push_back({"oneDNN direct", "", [&] { direct.Run(); }, {}, {}});

  direct.Run();
  weft_tensor* first = run_session();
  CheckAgreement("session MatMul",
                 static_cast<const float*>(weft_tensor_data(first)),
                 direct_c.data, elements);
  weft_tensor_destroy(first);

#if WEFT_BENCH_HAVE_LIBTORCH
  bench_libtorch::SetThreads(threads);
  bench_libtorch::MatMul torch_mm(a.data, b.data, n, n, n);
  torch_mm.Run();
  CheckAgreement("LibTorch mm", torch_mm.Output(), direct_c.data, elements);
  contenders.push_back({"LibTorch mm", "", [&] { torch_mm.Run(); }, {}, {}});
#endif

  TimeTogether(contenders, repetitions);
  std::printf("matmul: %d×%d×%d float32, row-major; %d thread%s, median of "
              "%d\n",
              size, size, size, threads, threads == 1 ? "" : "s",
              repetitions);
  std::printf("  (oneDNN direct: %s)\n", direct.implementation().c_str());
  Report(contenders, 2.0 * static_cast<double>(n) * n * n);

  weft_tensor_destroy(feed_values[1]);
  weft_tensor_destroy(feed_values[0]);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = 21;
  int only_threads = 0;
  int size = 1024;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (bench_int_flag(argv[i], "--repetitions", &repetitions) ||
        bench_int_flag(argv[i], "--threads", &only_threads) ||
        bench_int_flag(argv[i], "--size", &size)) {
      continue;
    }
    if (std::strncmp(argv[i], "--only=", 7) == 0) {
      only = argv[i] + 7;
      if (only == "conv" || only == "matmul") continue;
    }
    std::fprintf(stderr,
                 "usage: conv_matmul [--repetitions=N] [--threads=N] "
                 "[--size=N] [--only=conv|matmul]\n");
    return 2;
  }
  if (repetitions < 1 || size < 1 || only_threads < 0) {
    std::fprintf(stderr, "conv_matmul: repetitions and size must be >= 1\n");
    return 2;
  }
  std::vector<int> thread_counts;
  if (only_threads > 0) {
    thread_counts.push_back(only_threads);
  } else {
    const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    thread_counts.push_back(1);
    if (cores > 1) thread_counts.push_back(cores);
  }

  std::printf("peers: oneDNN %d.%d.%d called directly",
              dnnl_version()->major, dnnl_version()->minor,
              dnnl_version()->patch);
#if WEFT_BENCH_HAVE_LIBTORCH
  std::printf("; %s\n", bench_libtorch::Describe().c_str());
#else
  std::printf("; LibTorch not built in (not found at configure time)\n");
#endif
  for (int threads : thread_counts) {
    if (only.empty() || only == "conv") BenchConv(threads, repetitions);
    if (only.empty() || only == "matmul")
      BenchMatMul(size, threads, repetitions);
  }
  return 0;
}
