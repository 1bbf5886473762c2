// MatMul through a session vs the CPU plugin's Eigen product called
// directly (MatMulEigen from plugins/cpu/matmul_eigen.h), with the same
// thread count.
//
// In a plugin built without oneDNN both sides run that same function, so
// the ratio of their throughputs is what the runtime adds around one large
// kernel: feeding, output allocation, scheduling, fetching.  With oneDNN
// the plugin sends a float32 product this large to oneDNN instead, and the
// ratio becomes oneDNN's gain over the Eigen fallback; the runtime's
// overhead is then measured by bench/conv_matmul, against oneDNN called
// directly.
//
// The two are timed alternately, one product each per repetition, so that
// load from other processes on a shared machine hits both alike.
//
//   matmul_overhead [--size=1024] [--repetitions=15] [--threads=nproc]
//                   [--inter-op-threads=0]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_util.h"
#include "matmul_eigen.h"
#include "weft/weft.h"

int main(int argc, char** argv) {
  int size = 1024;
  int repetitions = 15;
  int threads = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  int inter_op_threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (bench_int_flag(argv[i], "--size", &size) ||
        bench_int_flag(argv[i], "--repetitions", &repetitions) ||
        bench_int_flag(argv[i], "--threads", &threads) ||
        bench_int_flag(argv[i], "--inter-op-threads", &inter_op_threads)) {
      continue;
    }
    std::fprintf(stderr,
                 "usage: matmul_overhead [--size=N] [--repetitions=N] "
                 "[--threads=N] [--inter-op-threads=N]\n");
    return 2;
  }
  if (size < 1 || repetitions < 1 || threads < 1) {
    std::fprintf(stderr, "matmul_overhead: size, repetitions and threads "
                         "must be >= 1\n");
    return 2;
  }

  const int64_t n = size;
  const size_t elements = static_cast<size_t>(n * n);
  std::vector<float> a(elements), b(elements), direct_c(elements);
  // Values in [-1, 1) from a fixed LCG: denormals and huge values would time
  // something other than the common case.
  uint32_t state = 12345u;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 23) -
           1.0f;
  };
  for (size_t i = 0; i < elements; ++i) a[i] = next();
  for (size_t i = 0; i < elements; ++i) b[i] = next();

  weft_graph* graph = nullptr;
  BENCH_CHECK(weft_graph_create(&graph));
  const int64_t dims[2] = {n, n};
  weft_output feeds[2], product;
  BENCH_CHECK(weft_graph_placeholder(graph, "a", WEFT_FLOAT32, dims, 2,
                                     &feeds[0]));
  BENCH_CHECK(weft_graph_placeholder(graph, "b", WEFT_FLOAT32, dims, 2,
                                     &feeds[1]));
  BENCH_CHECK(weft_graph_apply(graph, "MatMul", "ab", feeds, 2, &product));

  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = std::getenv("WEFT_DEVICES") != nullptr ? nullptr
                                                           : "/device:CPU:0";
  options.intra_op_threads = threads;
  options.inter_op_threads = inter_op_threads;
  weft_session* session = nullptr;
  BENCH_CHECK(weft_session_create(graph, &options, &session));

  // Zero-copy feeds: copying 8 MB of inputs per run would be the bench's
  // cost, not the runtime's.  The vectors outlive every use.
  weft_tensor* feed_values[2] = {nullptr, nullptr};
  BENCH_CHECK(weft_tensor_create_from_data(
      WEFT_FLOAT32, dims, 2, a.data(), elements * sizeof(float), nullptr,
      nullptr, &feed_values[0]));
  BENCH_CHECK(weft_tensor_create_from_data(
      WEFT_FLOAT32, dims, 2, b.data(), elements * sizeof(float), nullptr,
      nullptr, &feed_values[1]));

  auto run_session = [&]() -> weft_tensor* {
    weft_tensor* result = nullptr;
    BENCH_CHECK(weft_session_run(session, feeds, feed_values, 2, &product, 1,
                                 nullptr, 0, &result));
    return result;
  };
  auto run_direct = [&] {
    weft_cpu::MatMulEigen(a.data(), b.data(), direct_c.data(), n, n, n, false,
                          false, threads);
  };

  // Warm-up: builds and caches the plan, starts both thread pools and
  // faults in every page; then checks the two sides agree.
  weft_tensor* first = run_session();
  run_direct();
  const float* session_c = static_cast<const float*>(weft_tensor_data(first));
  double max_difference = 0.0;
  for (size_t i = 0; i < elements; ++i) {
    max_difference = std::max(
        max_difference, std::fabs(static_cast<double>(session_c[i]) -
                                  static_cast<double>(direct_c[i])));
  }
  weft_tensor_destroy(first);
  if (max_difference > 1e-3) {
    std::fprintf(stderr,
                 "matmul_overhead: session and direct products differ by "
                 "%g\n",
                 max_difference);
    return 1;
  }

  std::vector<double> session_samples, direct_samples;
  std::vector<double> session_cpu, direct_cpu;
  for (int r = 0; r < repetitions; ++r) {
    // Alternate which side goes first so neither always inherits a cache or
    // frequency state from the other.
    for (int side = 0; side < 2; ++side) {
      const bool session_turn = (side == 0) == (r % 2 == 0);
      const double start = bench_now_seconds();
      const double cpu_start = bench_process_cpu_seconds();
      if (session_turn) {
        weft_tensor_destroy(run_session());
        session_samples.push_back(bench_now_seconds() - start);
        session_cpu.push_back(bench_process_cpu_seconds() - cpu_start);
      } else {
        run_direct();
        direct_samples.push_back(bench_now_seconds() - start);
        direct_cpu.push_back(bench_process_cpu_seconds() - cpu_start);
      }
    }
  }
  const double session_cpu_s = bench_median(session_cpu.data(), repetitions);
  const double direct_cpu_s = bench_median(direct_cpu.data(), repetitions);
  const double session_s =
      bench_median(session_samples.data(), repetitions);
  const double direct_s = bench_median(direct_samples.data(), repetitions);

  const double flop = 2.0 * static_cast<double>(n) * n * n;
  const double ratio = direct_s / session_s;
  const double target = 0.95;
  std::printf("matmul: %d×%d×%d float32, %d thread%s, median of %d\n", size,
              size, size, threads, threads == 1 ? "" : "s", repetitions);
  std::printf("  session:  %9.2f ms  %8.1f GFLOP/s\n", session_s * 1e3,
              flop / session_s * 1e-9);
  std::printf("  direct:   %9.2f ms  %8.1f GFLOP/s  (MatMulEigen)\n",
              direct_s * 1e3, flop / direct_s * 1e-9);
  std::printf("  CPU time (all threads): session %.2f ms, direct %.2f ms, "
              "direct/session %.3f\n",
              session_cpu_s * 1e3, direct_cpu_s * 1e3,
              direct_cpu_s / session_cpu_s);
#if WEFT_CPU_HAVE_ONEDNN
  (void)target;
  std::printf("  session/direct throughput: %.3f   (the session's MatMul runs "
              "oneDNN in this build: the gain over Eigen, not overhead; see "
              "conv_matmul)\n",
              ratio);
#else
  std::printf("  session/direct throughput: %.3f   target ≥ %.2f: %s\n",
              ratio, target, ratio >= target ? "met" : "NOT met");
#endif

  weft_tensor_destroy(feed_values[1]);
  weft_tensor_destroy(feed_values[0]);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  return 0;
}
