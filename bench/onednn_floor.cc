// The oneDNN floor of bench_peers.sh's workloads: the GEMMs and
// convolutions of one step, each a oneDNN primitive called directly (the
// library Weft's CPU plugin runs, with nothing around it), at the
// workloads' shapes.  A workload's floor is the sum of its primitives'
// median times; bench_peers.sh divides every system's step rate by it.
//
// It is a floor of those primitives only: bias adds, ReLU, pooling,
// softmax, the loss, the optimizer's updates and any layout reorders are
// not counted, so a whole step can approach the floor but not reach it.
// Layouts are a framework's: activations NHWC and matrices row-major in
// place, convolution weights in the layout oneDNN prefers (format_tag::any,
// as the CPU plugin asks for), the reorders into it left out.  Gradients a
// step does not need are not counted either: nothing asks for the input's
// gradient, so the first layer has no backward-data primitive.
//
//   MLP training (784-256-10, batch 100; SGD and Adam alike): forward
//     x[100x784]·W1, h[100x256]·W2; backward dW2 = hᵀ·dz, dh = dz·W2ᵀ,
//     dW1 = xᵀ·dh (5 GEMMs)
//   MLP inference, batch B: x[Bx784]·W1, h[Bx256]·W2 (2 GEMMs)
//   CNN training (batch 64, NHWC): conv1 5x5 1->32 SAME on 28x28 forward
//     and backward-weights; conv2 5x5 32->64 SAME on 14x14 forward,
//     backward-data and backward-weights; dense [64x3136]·[3136x10]
//     forward, its weight gradient and its input gradient.  Each weights
//     gradient is timed two ways, the backward-weights primitive and
//     forward convolutions over blocks of 8 images (as the CPU plugin
//     computes it), and the faster counts
//
// Each primitive is timed in oneDNN's OpenMP with THREADS threads and, when
// THREADS > 1, with one (the faster counts), all of a workload's primitives
// in one rotating loop (onednn_bench.h), a small one repeated within a
// sample so that the clock's own cost stays out.
// Prints, per workload, "oneDNN <version> floor for <workload> (...), N
// thread(s): X steps/s (CPU Y ms/step), ..." then one line per primitive.
//
//   onednn_floor [THREADS [REPETITIONS]]   (1, 31)
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_util.h"
#include "onednn_bench.h"

namespace {

using bench_onednn::Buffer;
using bench_onednn::Contender;
using bench_onednn::Fill;
using bench_onednn::OnednnMatMul;
using dnnl::memory;
using Tag = memory::format_tag;

// Everything a workload's primitives read and write, kept alive together.
struct Workload {
  std::string key, what;
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<std::unique_ptr<OnednnMatMul>> matmuls;
  std::vector<Contender> primitives;
  // Pairs of primitives computing the same thing two ways: only the faster
  // of each pair counts in the floor.
  std::vector<std::pair<size_t, size_t>> alternatives;
  int inner = 1;  // primitive runs per timed sample

  float* NewBuffer(size_t count) {
    buffers.push_back(std::make_unique<Buffer>(count));
    Fill(*buffers.back(), 1000u + static_cast<uint32_t>(buffers.size()));
    return buffers.back()->data;
  }
  // C[m x n] = op(A) op(B) on fresh buffers.
  void AddMatMul(const std::string& name, int64_t m, int64_t k, int64_t n,
                 bool transpose_a = false, bool transpose_b = false) {
    const float* a = NewBuffer(static_cast<size_t>(m * k));
    const float* b = NewBuffer(static_cast<size_t>(k * n));
    float* c = NewBuffer(static_cast<size_t>(m * n));
    matmuls.push_back(std::make_unique<OnednnMatMul>(a, b, c, m, k, n,
                                                     transpose_a,
                                                     transpose_b));
    OnednnMatMul* mm = matmuls.back().get();
    char shape[96];
    std::snprintf(shape, sizeof shape, "[%lldx%lld]·[%lldx%lld]",
                  (long long)m, (long long)k, (long long)k, (long long)n);
    primitives.push_back({name + " " + shape, mm->implementation(),
                          [mm] { mm->Run(); }, {}, {}});
  }
};

// One convolution layer (stride 1, SAME, odd square kernel) and the
// primitives of its forward and backward passes, on oneDNN-owned memory.
class ConvLayer {
 public:
  ConvLayer(int64_t batch, int64_t size, int64_t in_channels, int64_t kernel,
            int64_t out_channels)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    const auto f32 = memory::data_type::f32;
    const int64_t pad = (kernel - 1) / 2;
    const memory::desc src({batch, in_channels, size, size}, f32, Tag::nhwc);
    const memory::desc dst({batch, out_channels, size, size}, f32,
                           Tag::nhwc);
    const memory::desc weights({out_channels, in_channels, kernel, kernel},
                               f32, Tag::any);
    const memory::dims strides = {1, 1}, padding = {pad, pad};
    forward_pd_ = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_training,
            dnnl::algorithm::convolution_direct, src, weights, dst, strides,
            padding, padding),
        engine_);
    data_pd_ = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(
            dnnl::algorithm::convolution_direct, src, weights, dst, strides,
            padding, padding),
        engine_, forward_pd_);
    weights_pd_ = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(
            dnnl::algorithm::convolution_direct, src, weights, dst, strides,
            padding, padding),
        engine_, forward_pd_);
    src_ = Filled(src);
    dst_ = Filled(dst);
    diff_src_ = Filled(src);
    diff_dst_ = Filled(dst);
    weights_ = Filled(forward_pd_.weights_desc());
    // Backward-data may want its weights in another layout than the
    // forward's; a framework would keep (or reorder to) that one too.
    data_weights_ = Filled(data_pd_.weights_desc());
    diff_weights_ = Filled(weights_pd_.diff_weights_desc());
    forward_ = dnnl::convolution_forward(forward_pd_);
    data_ = dnnl::convolution_backward_data(data_pd_);
    weights_grad_ = dnnl::convolution_backward_weights(weights_pd_);
    // The weights gradient as the CPU plugin computes it where the stride
    // is 1 (ConvWeightsAsForward in plugins/cpu/onednn_nn_backward.h): a
    // forward convolution per block of kImages images, whose batch is the
    // input channels, whose input channels are the images and whose filter
    // is the output gradient (OH x OW taps), each block's sum added to the
    // last's.  Every block reads operands of its own, already in the
    // layouts the primitive picks (the plugin's reorders into them are
    // left out, as the floor leaves out every reorder).
    const memory::desc block_src({in_channels, kImages, size, size}, f32,
                                 Tag::any);
    const memory::desc block_filter({out_channels, kImages, size, size}, f32,
                                    Tag::any);
    const memory::desc block_dst({in_channels, out_channels, kernel, kernel},
                                 f32, Tag::any);
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    dnnl::primitive_attr adding;
    adding.set_post_ops(sum);
    as_forward_pd_ = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_inference,
            dnnl::algorithm::convolution_direct, block_src, block_filter,
            block_dst, strides, padding, padding),
        adding, engine_);
    as_forward_ = dnnl::convolution_forward(as_forward_pd_);
    for (int64_t i = 0; i < batch / kImages; ++i) {
      block_src_.push_back(Filled(as_forward_pd_.src_desc()));
      block_filter_.push_back(Filled(as_forward_pd_.weights_desc()));
    }
    block_dst_ = Filled(as_forward_pd_.dst_desc());
  }

  void Forward() {
    forward_.execute(stream_, {{DNNL_ARG_SRC, src_},
                           {DNNL_ARG_WEIGHTS, weights_},
                           {DNNL_ARG_DST, dst_}});
    stream_.wait();
  }
  void BackwardData() {
    data_.execute(stream_, {{DNNL_ARG_DIFF_DST, diff_dst_},
                           {DNNL_ARG_WEIGHTS, data_weights_},
                           {DNNL_ARG_DIFF_SRC, diff_src_}});
    stream_.wait();
  }
  void BackwardWeights() {
    weights_grad_.execute(stream_, {{DNNL_ARG_SRC, src_},
                           {DNNL_ARG_DIFF_DST, diff_dst_},
                           {DNNL_ARG_DIFF_WEIGHTS, diff_weights_}});
    stream_.wait();
  }
  void BackwardWeightsAsForward() {
    for (size_t i = 0; i < block_src_.size(); ++i)
      as_forward_.execute(stream_, {{DNNL_ARG_SRC, block_src_[i]},
                                    {DNNL_ARG_WEIGHTS, block_filter_[i]},
                                    {DNNL_ARG_DST, block_dst_}});
    stream_.wait();
  }
  std::string ForwardImpl() const { return forward_pd_.impl_info_str(); }
  std::string AsForwardImpl() const {
    return as_forward_pd_.impl_info_str();
  }
  std::string DataImpl() const { return data_pd_.impl_info_str(); }
  std::string WeightsImpl() const { return weights_pd_.impl_info_str(); }

 private:
  memory Filled(const memory::desc& desc) {
    memory m(desc, engine_);
    Buffer values(desc.get_size() / sizeof(float));
    Fill(values, static_cast<uint32_t>(desc.get_size()));
    std::copy(values.data, values.data + values.size,
              static_cast<float*>(m.get_data_handle()));
    return m;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::convolution_forward::primitive_desc forward_pd_;
  dnnl::convolution_backward_data::primitive_desc data_pd_;
  dnnl::convolution_backward_weights::primitive_desc weights_pd_;
  dnnl::convolution_forward forward_;
  dnnl::convolution_backward_data data_;
  dnnl::convolution_backward_weights weights_grad_;
  memory src_, dst_, diff_src_, diff_dst_, weights_, data_weights_,
      diff_weights_;
  static constexpr int64_t kImages = 8;  // the batch must be a multiple
  dnnl::convolution_forward::primitive_desc as_forward_pd_;
  dnnl::convolution_forward as_forward_;
  std::vector<memory> block_src_, block_filter_;
  memory block_dst_;
};

std::unique_ptr<Workload> MlpTraining() {
  auto w = std::make_unique<Workload>();
  w->key = "train_mlp";
  w->what = "MLP training, batch 100 (5 GEMMs)";
  w->inner = 10;
  w->AddMatMul("forward x·W1", 100, 784, 256);
  w->AddMatMul("forward h·W2", 100, 256, 10);
  w->AddMatMul("dW2 = hT·dz", 256, 100, 10, true, false);
  w->AddMatMul("dh = dz·W2T", 100, 10, 256, false, true);
  w->AddMatMul("dW1 = xT·dh", 784, 100, 256, true, false);
  return w;
}

std::unique_ptr<Workload> MlpInference(int batch) {
  auto w = std::make_unique<Workload>();
  w->key = "infer_mlp_" + std::to_string(batch);
  w->what = "MLP inference, batch " + std::to_string(batch) + " (2 GEMMs)";
  w->inner = batch < 16 ? 100 : 10;
  w->AddMatMul("forward x·W1", batch, 784, 256);
  w->AddMatMul("forward h·W2", batch, 256, 10);
  return w;
}

std::unique_ptr<Workload> CnnTraining(std::vector<std::unique_ptr<ConvLayer>>&
                                          layers) {
  auto w = std::make_unique<Workload>();
  w->key = "train_cnn";
  w->what = "CNN training, batch 64 (5 convolutions, 3 GEMMs)";
  layers.push_back(std::make_unique<ConvLayer>(64, 28, 1, 5, 32));
  layers.push_back(std::make_unique<ConvLayer>(64, 14, 32, 5, 64));
  ConvLayer* c1 = layers[layers.size() - 2].get();
  ConvLayer* c2 = layers.back().get();
  w->primitives.push_back({"conv1 forward 64x28x28x1 -> 32",
                           c1->ForwardImpl(), [c1] { c1->Forward(); }, {},
                           {}});
  w->primitives.push_back({"conv1 backward weights", c1->WeightsImpl(),
                           [c1] { c1->BackwardWeights(); }, {}, {}});
  w->primitives.push_back({"conv1 weights grad as forward",
                           c1->AsForwardImpl(),
                           [c1] { c1->BackwardWeightsAsForward(); }, {}, {}});
  w->alternatives.push_back({1, 2});
  w->primitives.push_back({"conv2 forward 64x14x14x32 -> 64",
                           c2->ForwardImpl(), [c2] { c2->Forward(); }, {},
                           {}});
  w->primitives.push_back({"conv2 backward data", c2->DataImpl(),
                           [c2] { c2->BackwardData(); }, {}, {}});
  w->primitives.push_back({"conv2 backward weights", c2->WeightsImpl(),
                           [c2] { c2->BackwardWeights(); }, {}, {}});
  w->primitives.push_back({"conv2 weights grad as forward",
                           c2->AsForwardImpl(),
                           [c2] { c2->BackwardWeightsAsForward(); }, {}, {}});
  w->alternatives.push_back({5, 6});
  w->AddMatMul("dense forward", 64, 3136, 10);
  w->AddMatMul("dense dW = hT·dz", 3136, 64, 10, true, false);
  w->AddMatMul("dense dh = dz·WT", 64, 10, 3136, false, true);
  return w;
}

// One primitive's median times per run, and the thread count they came at.
struct Timed {
  std::string name, implementation;
  double wall, cpu;
  int threads;
};

std::vector<Timed> Time(Workload& w, int threads, int repetitions) {
  // Repeat small primitives within a sample (the clock reads cost about
  // a microsecond, a batch-1 GEMM a few).
  for (Contender& c : w.primitives) {
    const std::function<void()> once = c.run;
    const int inner = w.inner;
    c.run = [once, inner] {
      for (int i = 0; i < inner; ++i) once();
    };
  }
  bench_onednn::TimeTogether(w.primitives, repetitions);
  std::vector<Timed> timed;
  for (const Contender& c : w.primitives)
    timed.push_back({c.name, c.note, c.wall_s / w.inner, c.cpu_s / w.inner,
                     threads});
  return timed;
}

void Report(const Workload& w, const std::vector<Timed>& timed, int threads,
            int repetitions, const char* version) {
  // The slower of each pair of alternatives does not count.
  std::vector<bool> counted(timed.size(), true);
  for (const auto& pair : w.alternatives) {
    const bool first_faster = timed[pair.first].wall <= timed[pair.second].wall;
    counted[first_faster ? pair.second : pair.first] = false;
  }
  double wall = 0, cpu = 0;
  size_t count = 0;
  for (size_t i = 0; i < timed.size(); ++i) {
    if (!counted[i]) continue;
    wall += timed[i].wall;
    cpu += timed[i].cpu;
    ++count;
  }
  std::printf("oneDNN %s floor for %s (%s), %d thread(s): %.1f steps/s "
              "(CPU %.3f ms/step), sum of %zu primitives' medians of %d\n",
              version, w.key.c_str(), w.what.c_str(), threads, 1.0 / wall,
              cpu * 1e3, count, repetitions);
  for (size_t i = 0; i < timed.size(); ++i) {
    const Timed& t = timed[i];
    std::printf("    %-40s %9.4f ms (CPU %9.4f ms, %d thread%s)  %s%s\n",
                t.name.c_str(), t.wall * 1e3, t.cpu * 1e3, t.threads,
                t.threads == 1 ? "" : "s", t.implementation.c_str(),
                counted[i] ? "" : " (slower way, not counted)");
  }
}

std::vector<std::unique_ptr<Workload>> MakeWorkloads(
    std::vector<std::unique_ptr<ConvLayer>>& layers) {
  std::vector<std::unique_ptr<Workload>> workloads;
  workloads.push_back(MlpTraining());
  workloads.push_back(MlpInference(1));
  workloads.push_back(MlpInference(256));
  workloads.push_back(CnnTraining(layers));
  return workloads;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 31;
  if (threads < 1 || repetitions < 1) {
    std::fprintf(stderr, "usage: onednn_floor [THREADS [REPETITIONS]]\n");
    return 2;
  }
  const dnnl_version_t* v = dnnl_version();
  const std::string version = std::to_string(v->major) + "." +
                              std::to_string(v->minor) + "." +
                              std::to_string(v->patch);
  // At THREADS > 1 each primitive is also timed on one thread and the
  // faster counts: a framework may run a small product on one thread
  // (waking a sleeping OpenMP worker costs more than a batch-1 GEMM).
  std::vector<int> counts = {1};
  if (threads > 1) counts.push_back(threads);
  std::vector<std::vector<Timed>> best;
  std::vector<std::unique_ptr<ConvLayer>> layers;
  std::vector<std::unique_ptr<Workload>> workloads;
  for (int count : counts) {
    // Debian's oneDNN runs on OpenMP and takes its thread count from the
    // calling thread's setting, when a primitive is created and when it
    // runs: each count gets primitives of its own.
    omp_set_num_threads(count);
    layers.clear();
    workloads = MakeWorkloads(layers);
    for (size_t i = 0; i < workloads.size(); ++i) {
      std::vector<Timed> timed = Time(*workloads[i], count, repetitions);
      if (best.size() <= i) {
        best.push_back(timed);
        continue;
      }
      for (size_t j = 0; j < timed.size(); ++j)
        if (timed[j].wall < best[i][j].wall) best[i][j] = timed[j];
    }
  }
  for (size_t i = 0; i < workloads.size(); ++i)
    Report(*workloads[i], best[i], threads, repetitions, version.c_str());
  return 0;
}
