// Conv2D, FusedConv2D (relu(conv + bias)), Conv2DBackpropInput and
// Conv2DBackpropFilter on cuDNN, float32 and float64.  conv_plan.h says how
// Weft's NHWC tensors, HWIO filters and TensorFlow padding map onto cuDNN's
// NCHW/KCRS convolution with symmetric padding (test_window_math.cc checks
// it on the host); this file transposes into scratch buffers, calls cuDNN
// once per chunk of images, and transposes back (adding the bias and the
// ReLU on the way, for FusedConv2D).  The checks and messages are the
// OpenCL plugin's (plugins/opencl/conv.cc), over plugins/common's window
// geometry.
//
// cuDNN is opened on the first convolution (cudnn_loader.h); each stream
// gets its own handle, bound to it, as for cuBLAS.  The algorithm for a
// shape is chosen once per device and remembered.
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "blas_call.h"
#include "conv_plan.h"
#include "cudnn_loader.h"
#include "device_memory.h"
#include "grid_loop.h"
#include "kernel_call.h"
#include "window_attrs.h"

namespace weft_cuda {

void DestroyDnnHandle(weft_plugin_stream* stream) {
  std::lock_guard<std::mutex> lock(stream->dnn_mutex);
  if (stream->dnn != nullptr) {
    // A handle exists only once cuDNN was loaded.
    Dnn(nullptr)->destroy(stream->dnn);
    stream->dnn = nullptr;
  }
}

namespace {

using weft_window::Window2D;

static_assert(kDnnDefaultMath == static_cast<int>(CUDNN_DEFAULT_MATH) &&
                  kDnnTensorOpMath ==
                      static_cast<int>(CUDNN_TENSOR_OP_MATH) &&
                  kDnnTensorOpMathAllowConversion ==
                      static_cast<int>(CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) &&
                  kDnnFmaMath == static_cast<int>(CUDNN_FMA_MATH),
              "conv_plan.h's DnnMath mirrors cudnnMathType_t");

const int32_t kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};

// ---- Layout kernels (index math in conv_plan.h) ----

// NHWC [n, h, w, c] into NCHW [n, c, ph, pw], zeros after the data.
template <typename T>
__global__ void ToNchwKernel(const T* nhwc, T* nchw, int64_t count, int64_t c,
                             int64_t h, int64_t w, int64_t ph, int64_t pw) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    const int64_t at = NchwPaddedToNhwc(i, c, h, w, ph, pw);
    nchw[i] = at < 0 ? T(0) : nhwc[at];
  }
}

// NCHW [n, c, ph, pw] back into NHWC [n, h, w, c], dropping the padding;
// with `bias`, relu(value + bias[channel]) as the CPU's BiasRelu computes
// it (NaN stays NaN).
template <typename T>
__global__ void ToNhwcKernel(const T* nchw, T* nhwc, int64_t count, int64_t c,
                             int64_t h, int64_t w, int64_t ph, int64_t pw,
                             const T* bias) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    T v = nchw[NhwcToNchwPadded(i, c, h, w, ph, pw)];
    if (bias != nullptr) {
      v = v + bias[i % c];
      v = v < T(0) ? T(0) : v;
    }
    nhwc[i] = v;
  }
}

template <typename T>
__global__ void FilterToKcrsKernel(const T* hwio, T* kcrs, int64_t count,
                                   int64_t k, int64_t c, int64_t r,
                                   int64_t s) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    kcrs[i] = hwio[KcrsToHwio(i, k, c, r, s)];
  }
}

template <typename T>
__global__ void FilterToHwioKernel(const T* kcrs, T* hwio, int64_t count,
                                   int64_t k, int64_t c, int64_t r,
                                   int64_t s) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    hwio[i] = kcrs[HwioToKcrs(i, k, c, r, s)];
  }
}

// FusedConv2D with no input channels: the sums are empty, relu(bias).
template <typename T>
__global__ void BiasReluFillKernel(const T* bias, T* out, int64_t count,
                                   int64_t c) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    const T v = bias[i % c];
    out[i] = v < T(0) ? T(0) : v;
  }
}

// ---- cuDNN plumbing ----

enum class ConvOp { kForward, kBackwardData, kBackwardFilter };

const char* OpName(ConvOp op) {
  switch (op) {
    case ConvOp::kForward: return "Conv2D";
    case ConvOp::kBackwardData: return "Conv2DBackpropInput";
    default: return "Conv2DBackpropFilter";
  }
}

weft_status* DnnError(const KernelCall& call, const DnnApi& api,
                      cudnnStatus_t status, const char* what) {
  int32_t code = WEFT_INTERNAL;
  if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED) {
    code = WEFT_UNIMPLEMENTED;
  } else if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
             status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    code = WEFT_RESOURCE_EXHAUSTED;
  }
  return call.Error(code, "%s failed: %s (cuDNN status %d)", what,
                    api.error_string(status), static_cast<int>(status));
}

// The stream's handle, made on first use.  Called with dnn_mutex held.
weft_status* StreamDnnHandle(const KernelCall& call, const DnnApi& api,
                             cudnnHandle_t* out) {
  weft_plugin_stream* stream = call.plugin_stream();
  if (stream->dnn == nullptr) {
    cudnnHandle_t handle = nullptr;
    cudnnStatus_t status = api.create(&handle);
    if (status != CUDNN_STATUS_SUCCESS) {
      return DnnError(call, api, status, "cudnnCreate");
    }
    status = api.set_stream(handle, stream->stream);
    if (status != CUDNN_STATUS_SUCCESS) {
      api.destroy(handle);
      return DnnError(call, api, status, "cudnnSetStream");
    }
    stream->dnn = handle;
  }
  *out = stream->dnn;
  return nullptr;
}

// The descriptors of one convolution (cudnn_loader.h's DescribeConv),
// destroyed with it.
class Descriptors : public ConvDescriptors {
 public:
  explicit Descriptors(const DnnApi& api) : api_(api) {}
  ~Descriptors() { DestroyConvDescriptors(api_, this); }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  // Describes `plan` for calls of `images` images.
  weft_status* Set(const KernelCall& call, const ConvPlan& p,
                   cudnnDataType_t type, int64_t images) {
    const char* what = "";
    const cudnnStatus_t s = DescribeConv(api_, p, type, images, this, &what);
    return s == CUDNN_STATUS_SUCCESS ? nullptr
                                     : DnnError(call, api_, s, what);
  }

 private:
  const DnnApi& api_;
};

// The FFT and Winograd algorithms of each direction.
bool IsTransform(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool IsTransform(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool IsTransform(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

template <typename Perf>
AlgoCandidate CandidateOf(const Perf& perf) {
  AlgoCandidate c;
  c.algo = static_cast<int>(perf.algo);
  c.transform = IsTransform(perf.algo);
  c.supported = perf.status == CUDNN_STATUS_SUCCESS;
  c.deterministic = perf.determinism == CUDNN_DETERMINISTIC;
  c.math = static_cast<int>(perf.mathType);
  c.workspace = perf.memory;
  return c;
}

struct Choice {
  int algo = 0;
  size_t workspace = 0;
};

// Chosen algorithms by (device, op, dtype, plan): cuDNN's heuristics cost
// more than a small convolution.
using ChoiceKey = std::array<int64_t, 22>;

ChoiceKey KeyOf(int ordinal, ConvOp op, cudnnDataType_t type,
                const ConvPlan& p) {
  return ChoiceKey{ordinal,      static_cast<int64_t>(op),
                   static_cast<int64_t>(type),
                   p.chunk,      p.ChunkImages(p.calls - 1),
                   p.in_c,       p.padded_h,
                   p.padded_w,   p.out_c,
                   p.k_h,        p.k_w,
                   p.out_h,      p.out_w,
                   p.pad_h,      p.pad_w,
                   p.stride_h,   p.stride_w,
                   p.dilation_h, p.dilation_w,
                   p.in_h,       p.in_w,
                   0};
}

std::mutex g_choice_mutex;
std::map<ChoiceKey, Choice>* g_choices = new std::map<ChoiceKey, Choice>;

// cuDNN's ranked algorithms for `op` on the descriptors as set.
weft_status* RankedAlgorithms(const KernelCall& call, const DnnApi& api,
                              cudnnHandle_t handle, ConvOp op,
                              const Descriptors& d, AlgoCandidate* out,
                              int* count) {
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  int returned = 0;
  switch (op) {
    case ConvOp::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      s = api.forward_algorithms(handle, d.x, d.w, d.conv, d.y,
                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                 perf);
      for (int i = 0; i < returned; ++i) out[i] = CandidateOf(perf[i]);
      break;
    }
    case ConvOp::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t
          perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      s = api.data_algorithms(handle, d.w, d.y, d.conv, d.x,
                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                              &returned, perf);
      for (int i = 0; i < returned; ++i) out[i] = CandidateOf(perf[i]);
      break;
    }
    default: {
      cudnnConvolutionBwdFilterAlgoPerf_t
          perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      s = api.filter_algorithms(handle, d.x, d.y, d.conv, d.w,
                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                &returned, perf);
      for (int i = 0; i < returned; ++i) out[i] = CandidateOf(perf[i]);
      break;
    }
  }
  if (s != CUDNN_STATUS_SUCCESS) {
    return DnnError(call, api, s, "cuDNN's algorithm heuristics");
  }
  *count = returned;
  return nullptr;
}

// The buffers a timed search runs the algorithms on: the call's own
// transposed tensors (their contents are irrelevant: every algorithm
// overwrites the output, and the call's kernels queued after the search
// write them all again) and a workspace of `workspace_bytes`.
struct Probe {
  void* x = nullptr;  // padded NCHW input (the data gradient's output)
  void* y = nullptr;  // NCHW output (or its gradient)
  void* w = nullptr;  // KCRS filter (the filter gradient's output)
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// cuDNN's algorithms for `op`, each run once on `probe` (on the handle's
// stream, which cuDNN waits for), fastest first.
weft_status* TimedAlgorithms(const KernelCall& call, const DnnApi& api,
                             cudnnHandle_t handle, ConvOp op,
                             const Descriptors& d, const Probe& probe,
                             AlgoCandidate* out, float* ms, int* count) {
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  int returned = 0;
  auto take = [&](const auto* perf) {
    for (int i = 0; i < returned; ++i) {
      out[i] = CandidateOf(perf[i]);
      ms[i] = perf[i].time;
    }
  };
  switch (op) {
    case ConvOp::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      s = api.find_forward(handle, d.x, probe.x, d.w, probe.w, d.conv, d.y,
                           probe.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                           &returned, perf, probe.workspace,
                           probe.workspace_bytes);
      take(perf);
      break;
    }
    case ConvOp::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t
          perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      s = api.find_data(handle, d.w, probe.w, d.y, probe.y, d.conv, d.x,
                        probe.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                        &returned, perf, probe.workspace,
                        probe.workspace_bytes);
      take(perf);
      break;
    }
    default: {
      cudnnConvolutionBwdFilterAlgoPerf_t
          perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      s = api.find_filter(handle, d.x, probe.x, d.y, probe.y, d.conv, d.w,
                          probe.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                          &returned, perf, probe.workspace,
                          probe.workspace_bytes);
      take(perf);
      break;
    }
  }
  if (s != CUDNN_STATUS_SUCCESS) {
    return DnnError(call, api, s, "cuDNN's timed algorithm search");
  }
  *count = returned;
  return nullptr;
}

// WEFT_CUDA_CONV_SEARCH (conv_plan.h's ConvSearch), read once; false
// when it names no mode.
bool SearchMode(ConvSearch* mode) {
  static ConvSearch parsed = ConvSearch::kTimed;
  static const bool ok =
      ParseConvSearch(std::getenv("WEFT_CUDA_CONV_SEARCH"), &parsed);
  *mode = parsed;
  return ok;
}

// Says at WEFT_LOG=info which algorithm a shape got, and how.
void LogChoice(const KernelCall& call, ConvOp op, const ConvPlan& p,
               const AlgoCandidate* ranked, const float* ms, int count,
               int pick, bool timed) {
  std::string text = "weft-cuda: ";
  text += OpName(op);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                " %lldx%lldx%lldx%lld (NCHW, padded) filter %lldx%lldx%lldx%lld"
                ": algorithm %d (%s",
                static_cast<long long>(p.chunk),
                static_cast<long long>(p.in_c),
                static_cast<long long>(p.padded_h),
                static_cast<long long>(p.padded_w),
                static_cast<long long>(p.out_c),
                static_cast<long long>(p.in_c),
                static_cast<long long>(p.k_h), static_cast<long long>(p.k_w),
                ranked[pick].algo, timed ? "timed" : "cuDNN's heuristics");
  text += buf;
  text += "); candidates:";
  for (int i = 0; i < count; ++i) {
    const AlgoCandidate& c = ranked[i];
    std::snprintf(buf, sizeof buf, " %d%s%s%s%s", c.algo,
                  c.supported ? "" : "(unsupported)",
                  c.deterministic ? "" : "(nondeterministic)",
                  c.transform ? "(transform)" : "",
                  c.math == kDnnFmaMath || c.math == kDnnDefaultMath
                      ? ""
                      : "(tensor ops)");
    text += buf;
    if (ms != nullptr && c.supported) {
      std::snprintf(buf, sizeof buf, "=%.3fms", ms[i]);
      text += buf;
    }
  }
  g_host->log(WEFT_LOG_INFO, text.c_str());
  (void)call;
}

weft_status* WorkspaceFor(const KernelCall& call, const DnnApi& api,
                          cudnnHandle_t handle, ConvOp op,
                          const Descriptors& d, int algo, size_t* bytes) {
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  switch (op) {
    case ConvOp::kForward:
      s = api.forward_workspace(handle, d.x, d.w, d.conv, d.y,
                                static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                bytes);
      break;
    case ConvOp::kBackwardData:
      s = api.data_workspace(
          handle, d.w, d.y, d.conv, d.x,
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
      break;
    default:
      s = api.filter_workspace(
          handle, d.x, d.y, d.conv, d.w,
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
      break;
  }
  return s == CUDNN_STATUS_SUCCESS
             ? nullptr
             : DnnError(call, api, s, "cuDNN's workspace size");
}

// The algorithm and workspace for `plan`, from the cache or chosen now
// (timed on `probe`'s buffers, whose workspace the search allocates from
// `scratch` and leaves in *workspace for the call; NULL when the choice was
// cached).  Leaves the descriptors set for a full chunk.
weft_status* Choose(const KernelCall& call, const DnnApi& api,
                    cudnnHandle_t handle, ConvOp op, const ConvPlan& p,
                    cudnnDataType_t type, Descriptors* d, Probe probe,
                    Scratch* scratch, Choice* choice, void** workspace) {
  *workspace = nullptr;
  const ChoiceKey key = KeyOf(call.device()->ordinal, op, type, p);
  {
    std::lock_guard<std::mutex> lock(g_choice_mutex);
    auto it = g_choices->find(key);
    if (it != g_choices->end()) {
      *choice = it->second;
      return d->Set(call, p, type, p.chunk);
    }
  }
  if (weft_status* s = d->Set(call, p, type, p.chunk)) return s;
  AlgoCandidate ranked[16];
  float ms[16] = {};
  int count = 0;
  if (weft_status* s =
          RankedAlgorithms(call, api, handle, op, *d, ranked, &count)) {
    return s;
  }
  ConvSearch mode = ConvSearch::kTimed;
  if (!SearchMode(&mode)) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "WEFT_CUDA_CONV_SEARCH is '%s': not timed, heuristic "
                      "or timed-nondeterministic",
                      std::getenv("WEFT_CUDA_CONV_SEARCH"));
  }
  const uint64_t cap = ConvWorkspaceCap(call.device()->memory->limit());
  bool timed = mode != ConvSearch::kHeuristic;
  if (timed) {
    // The search's workspace: the most any allowed algorithm asks for.
    uint64_t bytes = 0;
    for (int i = 0; i < count; ++i) {
      const AlgoCandidate& c = ranked[i];
      if (c.supported && c.workspace <= cap && c.workspace > bytes &&
          (c.math == kDnnFmaMath || c.math == kDnnDefaultMath)) {
        bytes = c.workspace;
      }
    }
    probe.workspace_bytes = bytes;
    AlgoCandidate found[16];
    int found_count = 0;
    weft_status* failed = scratch->Get(bytes, &probe.workspace);
    if (failed == nullptr) {
      failed = TimedAlgorithms(call, api, handle, op, *d, probe, found, ms,
                               &found_count);
    }
    if (failed == nullptr) {
      std::copy(found, found + found_count, ranked);
      count = found_count;
      *workspace = probe.workspace;
    } else {
      // No memory for the search's workspace, or cuDNN's search failed:
      // the heuristics' order serves.
      g_host->status_destroy(failed);
      g_host->log(WEFT_LOG_WARNING,
                  "weft-cuda: the timed convolution algorithm search "
                  "failed; cuDNN's heuristics choose instead");
      timed = false;
    }
  }
  const int pick =
      ChooseAlgorithm(ranked, count, timed ? probe.workspace_bytes : cap,
                      mode == ConvSearch::kTimedNondeterministic);
  if (pick < 0) {
    return call.Error(WEFT_UNIMPLEMENTED,
                      "cuDNN offers no algorithm for this %s in FMA math "
                      "within %llu bytes of workspace (%d ranked)",
                      OpName(op), static_cast<unsigned long long>(cap),
                      count);
  }
  LogChoice(call, op, p, ranked, timed ? ms : nullptr, count, pick, timed);
  Choice chosen;
  chosen.algo = ranked[pick].algo;
  chosen.workspace = ranked[pick].workspace;
  // The workspace each call's shape asks for, the last call's included;
  // the descriptors end set for a full chunk, the first call's.
  const int64_t last = p.ChunkImages(p.calls - 1);
  for (int64_t images : {last, p.chunk}) {
    if (weft_status* s = d->Set(call, p, type, images)) return s;
    size_t bytes = 0;
    if (weft_status* s =
            WorkspaceFor(call, api, handle, op, *d, chosen.algo, &bytes)) {
      return s;
    }
    if (bytes > chosen.workspace) chosen.workspace = bytes;
  }
  // The search's workspace serves this call only if it is large enough.
  if (*workspace != nullptr && chosen.workspace > probe.workspace_bytes) {
    *workspace = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(g_choice_mutex);
    (*g_choices)[key] = chosen;
  }
  *choice = chosen;
  return nullptr;
}

template <typename T>
cudnnDataType_t DnnType() {
  return sizeof(T) == sizeof(double) ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

// Runs one convolution op on cuDNN; every tensor is non-empty.
//   kForward:        x (NHWC), filter (HWIO), bias or NULL -> out (NHWC)
//   kBackwardData:   filter, dy (NHWC) -> out (NHWC, the input's shape)
//   kBackwardFilter: x, dy -> out (HWIO)
template <typename T>
weft_status* RunConv(const KernelCall& call, ConvOp op, const ConvPlan& p,
                     const T* x, const T* filter, const T* dy, const T* bias,
                     T* out) {
  std::string why;
  const DnnApi* api = Dnn(&why);
  if (api == nullptr) {
    return call.Error(WEFT_UNAVAILABLE, "%s on CUDA needs cuDNN: %s",
                      OpName(op), why.c_str());
  }
  std::lock_guard<std::mutex> lock(call.plugin_stream()->dnn_mutex);
  cudnnHandle_t handle = nullptr;
  if (weft_status* s = StreamDnnHandle(call, *api, &handle)) return s;
  const cudnnDataType_t type = DnnType<T>();
  // Scratch goes back to the device's cache once the stream has passed
  // the work below (it is destroyed after the last launch).
  Scratch scratch(call);
  T *xt = nullptr, *yt = nullptr, *wt = nullptr;
  if (weft_status* s = scratch.Get(p.chunk * p.padded_image, &xt)) return s;
  if (weft_status* s = scratch.Get(p.chunk * p.out_image, &yt)) return s;
  if (weft_status* s = scratch.Get(p.filter_elements, &wt)) return s;
  Descriptors d(*api);
  Choice choice;
  Probe probe;
  probe.x = xt;
  probe.y = yt;
  probe.w = wt;
  void* workspace = nullptr;
  if (weft_status* s = Choose(call, *api, handle, op, p, type, &d, probe,
                              &scratch, &choice, &workspace)) {
    return s;
  }
  if (workspace == nullptr) {
    if (weft_status* s = scratch.Get(choice.workspace, &workspace)) return s;
  }
  const cudaStream_t stream = call.stream();
  if (op != ConvOp::kBackwardFilter) {
    FilterToKcrsKernel<T><<<BlocksFor(p.filter_elements), kBlockThreads, 0,
                            stream>>>(filter, wt, p.filter_elements, p.out_c,
                                      p.in_c, p.k_h, p.k_w);
    if (weft_status* s = call.CheckLaunch("the filter's transpose")) return s;
  }
  const int64_t x_image = int64_t{p.in_h} * p.in_w * p.in_c;
  const int64_t y_image = p.out_image;  // the same count in NHWC
  const T one = T(1), zero = T(0);
  for (int64_t i = 0; i < p.calls; ++i) {
    const int64_t n0 = i * p.chunk, n = p.ChunkImages(i);
    if (n != p.chunk) {
      if (weft_status* s = d.Set(call, p, type, n)) return s;
    }
    const int64_t x_count = n * p.padded_image, y_count = n * p.out_image;
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    if (op != ConvOp::kBackwardData) {
      ToNchwKernel<T><<<BlocksFor(x_count), kBlockThreads, 0, stream>>>(
          x + n0 * x_image, xt, x_count, p.in_c, p.in_h, p.in_w, p.padded_h,
          p.padded_w);
      if (weft_status* s = call.CheckLaunch("the input's transpose")) return s;
    }
    if (op != ConvOp::kForward) {
      ToNchwKernel<T><<<BlocksFor(y_count), kBlockThreads, 0, stream>>>(
          dy + n0 * y_image, yt, y_count, p.out_c, p.out_h, p.out_w, p.out_h,
          p.out_w);
      if (weft_status* s = call.CheckLaunch("the gradient's transpose")) {
        return s;
      }
    }
    switch (op) {
      case ConvOp::kForward:
        status = api->forward(
            handle, &one, d.x, xt, d.w, wt, d.conv,
            static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), workspace,
            choice.workspace, &zero, d.y, yt);
        break;
      case ConvOp::kBackwardData:
        status = api->backward_data(
            handle, &one, d.w, wt, d.y, yt, d.conv,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo),
            workspace, choice.workspace, &zero, d.x, xt);
        break;
      default:
        // The filter gradient adds up over the calls.
        status = api->backward_filter(
            handle, &one, d.x, xt, d.y, yt, d.conv,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo),
            workspace, choice.workspace, i == 0 ? &zero : &one, d.w, wt);
        break;
    }
    if (status != CUDNN_STATUS_SUCCESS) {
      return DnnError(call, *api, status, OpName(op));
    }
    if (op == ConvOp::kForward) {
      ToNhwcKernel<T><<<BlocksFor(y_count), kBlockThreads, 0, stream>>>(
          yt, out + n0 * y_image, y_count, p.out_c, p.out_h, p.out_w, p.out_h,
          p.out_w, bias);
      if (weft_status* s = call.CheckLaunch("the output's transpose")) {
        return s;
      }
    } else if (op == ConvOp::kBackwardData) {
      const int64_t count = n * x_image;
      ToNhwcKernel<T><<<BlocksFor(count), kBlockThreads, 0, stream>>>(
          xt, out + n0 * x_image, count, p.in_c, p.in_h, p.in_w, p.padded_h,
          p.padded_w, nullptr);
      if (weft_status* s = call.CheckLaunch("the gradient's transpose")) {
        return s;
      }
    }
  }
  if (op == ConvOp::kBackwardFilter) {
    FilterToHwioKernel<T><<<BlocksFor(p.filter_elements), kBlockThreads, 0,
                            stream>>>(wt, out, p.filter_elements, p.out_c,
                                      p.in_c, p.k_h, p.k_w);
    return call.CheckLaunch("the filter gradient's transpose");
  }
  return nullptr;
}

// ---- The gradients as GEMMs (conv_plan.h) ----

// The window and plan in the width the kernels compute in.
template <typename I>
struct ColumnGeometry {
  I taps, k_h, k_w, channels, out_h, out_w, rows_per_image, in_h, in_w,
      stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};

template <typename I>
ColumnGeometry<I> GeometryOf(const Window2D& w, const GemmFilterPlan& g) {
  auto c = [](int64_t v) { return static_cast<I>(v); };
  return {c(g.taps),     c(w.k_h),        c(w.k_w),        c(w.channels),
          c(w.out_h),    c(w.out_w),      c(g.rows_per_image),
          c(w.in_h),     c(w.in_w),       c(w.stride_h),   c(w.stride_w),
          c(w.dilation_h), c(w.dilation_w), c(w.pad_top),  c(w.pad_left)};
}

// The column matrix of a chunk of images: element i from the NHWC input x
// (conv_plan.h's Im2ColSource), zeros for padding.
template <typename T, typename I>
__global__ void Im2ColKernel(const T* x, T* col, I count,
                             ColumnGeometry<I> c) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    const I at = Im2ColSource<I>(static_cast<I>(i), c.taps, c.k_w,
                                 c.channels, c.out_w, c.rows_per_image,
                                 c.in_h, c.in_w, c.stride_h, c.stride_w,
                                 c.dilation_h, c.dilation_w, c.pad_top,
                                 c.pad_left);
    col[i] = at < 0 ? T(0) : x[at];
  }
}

// The input gradient of a chunk of images from its column matrix's
// gradient (conv_plan.h's Col2ImGather).
template <typename T, typename I>
__global__ void Col2ImKernel(const T* dcol, T* dx, I count,
                             ColumnGeometry<I> c) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    dx[i] = Col2ImGather<I, T>(static_cast<I>(i), dcol, c.taps, c.k_h, c.k_w,
                               c.channels, c.out_h, c.out_w,
                               c.rows_per_image, c.in_h, c.in_w, c.stride_h,
                               c.stride_w, c.dilation_h, c.dilation_w,
                               c.pad_top, c.pad_left);
  }
}

// Whether 32-bit arithmetic holds every value Im2ColSource and
// Col2ImGather compute for a chunk: the column matrix, the chunk's input
// and the window coordinates.
bool Fits32(const Window2D& w, const GemmFilterPlan& g) {
  const int64_t limit = 2147483647;
  const int64_t span_h = (w.out_h - 1) * w.stride_h + (w.k_h - 1) * w.dilation_h;
  const int64_t span_w = (w.out_w - 1) * w.stride_w + (w.k_w - 1) * w.dilation_w;
  return g.chunk * g.rows_per_image <= limit / g.taps &&
         g.chunk * w.in_h * w.in_w <= limit / w.channels &&
         span_h + w.in_h <= limit && span_w + w.in_w <= limit;
}

// Calls launch(geometry) with the window in 32-bit index arithmetic where
// Fits32 allows, else in 64-bit.
template <typename Launch>
void InIndexWidth(const Window2D& w, const GemmFilterPlan& g,
                  Launch&& launch) {
  if (Fits32(w, g)) {
    launch(GeometryOf<int32_t>(w, g));
  } else {
    launch(GeometryOf<int64_t>(w, g));
  }
}

// Runs chunk(blas, handle, columns, index, first image, images) for each
// of the plan's chunks of images, with a scratch column matrix for one
// chunk and the stream's cuBLAS handle held.
template <typename T, typename Chunk>
weft_status* OverGemmChunks(const KernelCall& call, const Window2D& w,
                            const GemmFilterPlan& g, Chunk&& chunk) {
  Scratch scratch(call);
  T* columns = nullptr;
  if (weft_status* s = scratch.Get(g.chunk * g.rows_per_image * g.taps,
                                   &columns)) {
    return s;
  }
  std::lock_guard<std::mutex> lock(call.plugin_stream()->blas_mutex);
  cublasHandle_t handle = nullptr;
  const BlasApi* blas = nullptr;
  if (weft_status* s = StreamBlasHandle(call, &blas, &handle)) return s;
  for (int64_t i = 0; i < g.calls; ++i) {
    if (weft_status* s = chunk(*blas, handle, columns, i, i * g.chunk,
                               g.ChunkImages(w.batch, i))) {
      return s;
    }
  }
  return nullptr;
}

// df (HWIO) = col^T dy over chunks of images: in column-major terms
// df^T [out_c x taps] = dy^T [out_c x rows] * col [rows x taps], the first
// chunk with beta 0 and the rest adding, so the sums run in one fixed order.
template <typename T>
weft_status* FilterGradientByGemm(const KernelCall& call, const Window2D& w,
                                  const GemmFilterPlan& g, int64_t out_c,
                                  const T* x, const T* dy, T* out) {
  const int64_t x_image = w.in_h * w.in_w * w.channels;
  return OverGemmChunks<T>(
      call, w, g,
      [&](const BlasApi& blas, cublasHandle_t handle, T* col, int64_t i,
          int64_t n0, int64_t n) -> weft_status* {
        const int64_t rows = n * g.rows_per_image;
        const int64_t count = rows * g.taps;
        InIndexWidth(w, g, [&](auto c) {
          using I = decltype(c.taps);
          Im2ColKernel<T, I><<<BlocksFor(count), kBlockThreads, 0,
                               call.stream()>>>(x + n0 * x_image, col,
                                                static_cast<I>(count), c);
        });
        if (weft_status* s = call.CheckLaunch("the input's column matrix")) {
          return s;
        }
        const cublasStatus_t status =
            Gemm(blas, handle, CUBLAS_OP_N, CUBLAS_OP_T, out_c, g.taps, rows,
                 dy + n0 * g.rows_per_image * out_c, out_c, col, g.taps, out,
                 out_c, i == 0 ? T(0) : T(1));
        return status == CUBLAS_STATUS_SUCCESS
                   ? nullptr
                   : BlasError(call, blas, status,
                               "the filter gradient's gemm");
      });
}

// dx (NHWC) per chunk of images: dcol = dy w^T, in column-major terms
// dcol^T [taps x rows] = (w as [out_c x taps])^T [taps x out_c] *
// dy^T [out_c x rows]; then every input element gathers its entries.
template <typename T>
weft_status* DataGradientByGemm(const KernelCall& call, const Window2D& w,
                                const GemmFilterPlan& g, int64_t out_c,
                                const T* filter, const T* dy, T* out) {
  const int64_t x_image = w.in_h * w.in_w * w.channels;
  return OverGemmChunks<T>(
      call, w, g,
      [&](const BlasApi& blas, cublasHandle_t handle, T* dcol, int64_t,
          int64_t n0, int64_t n) -> weft_status* {
        const cublasStatus_t status =
            Gemm(blas, handle, CUBLAS_OP_T, CUBLAS_OP_N, g.taps,
                 n * g.rows_per_image, out_c, filter, out_c,
                 dy + n0 * g.rows_per_image * out_c, out_c, dcol, g.taps);
        if (status != CUBLAS_STATUS_SUCCESS) {
          return BlasError(call, blas, status, "the input gradient's gemm");
        }
        const int64_t count = n * x_image;
        InIndexWidth(w, g, [&](auto c) {
          using I = decltype(c.taps);
          Col2ImKernel<T, I><<<BlocksFor(count), kBlockThreads, 0,
                               call.stream()>>>(dcol, out + n0 * x_image,
                                                static_cast<I>(count), c);
        });
        return call.CheckLaunch("the input gradient's gather");
      });
}

// Under the deterministic searches (timed-nondeterministic keeps cuDNN's
// atomic algorithms in the race), a gradient runs as GEMMs where the
// column matrix fits: whether it does, with the plan in *g.
bool GemmGradient(const Window2D& w, GemmFilterPlan* g) {
  ConvSearch mode = ConvSearch::kTimed;
  return SearchMode(&mode) && mode != ConvSearch::kTimedNondeterministic &&
         PlanGemmFilter(w, kGemmFilterColumnElements, g) == nullptr;
}

// ---- The kernels: checks as in plugins/opencl/conv.cc ----

weft_status* Plan(const KernelCall& call, const Window2D& w,
                  int64_t out_channels, ConvPlan* plan) {
  const char* why = PlanConv(w, out_channels, kConvChunkElements, plan);
  if (why == nullptr) return nullptr;
  return call.Error(WEFT_UNIMPLEMENTED, "cuDNN cannot run this convolution: %s",
                    why);
}

template <typename T>
weft_status* Typed(const KernelCall& call, ConvOp op, const ConvPlan& p,
                   const weft_kernel_tensor* x, const weft_kernel_tensor* f,
                   const weft_kernel_tensor* dy, const weft_kernel_tensor* bias,
                   const weft_kernel_tensor& out) {
  auto data = [](const weft_kernel_tensor* t) -> const T* {
    return t != nullptr ? static_cast<const T*>(TensorData(*t)) : nullptr;
  };
  return RunConv<T>(call, op, p, data(x), data(f), data(dy), data(bias),
                    static_cast<T*>(TensorData(out)));
}

weft_status* Dispatch(const KernelCall& call, ConvOp op, const ConvPlan& p,
                      const weft_kernel_tensor* x, const weft_kernel_tensor* f,
                      const weft_kernel_tensor* dy,
                      const weft_kernel_tensor* bias,
                      const weft_kernel_tensor& out) {
  if (out.dtype == WEFT_FLOAT64) {
    return Typed<double>(call, op, p, x, f, dy, bias, out);
  }
  return Typed<float>(call, op, p, x, f, dy, bias, out);
}

int g_fused_tag;

// Conv2D(input, filter) and, with `arg` set, FusedConv2D(input, filter,
// bias) = relu(Conv2D + bias).
weft_status* ConvKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool fused = arg != nullptr;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, filter, bias, out;
    if (weft_status* s =
            ReadRank4Pair(call, "input [N, H, W, C]",
                          "filter [KH, KW, Cin, Cout]", &in, &filter)) {
      return s;
    }
    if (fused) {
      if (weft_status* s = call.Input(2, &bias)) return s;
    }
    Window2D w;
    if (weft_status* s = weft_plugin_kit::ConvWindow(
            call, in, filter, fused ? &bias : nullptr, &w)) {
      return s;
    }
    const int64_t out_channels = filter.dims[3];
    const int64_t dims[4] = {w.batch, w.out_h, w.out_w, out_channels};
    if (weft_status* s = call.AllocateOutput(0, in.dtype, dims, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    if (in.element_count == 0) {
      // No input channels: the sums are empty, 0 or relu(bias).
      if (!fused) return call.Zeros(out);
      if (in.dtype == WEFT_FLOAT64) {
        BiasReluFillKernel<double><<<BlocksFor(out.element_count),
                                     kBlockThreads, 0, call.stream()>>>(
            static_cast<const double*>(TensorData(bias)),
            static_cast<double*>(TensorData(out)), out.element_count,
            out_channels);
      } else {
        BiasReluFillKernel<float><<<BlocksFor(out.element_count),
                                    kBlockThreads, 0, call.stream()>>>(
            static_cast<const float*>(TensorData(bias)),
            static_cast<float*>(TensorData(out)), out.element_count,
            out_channels);
      }
      return call.CheckLaunch("FusedConv2D's bias");
    }
    ConvPlan plan;
    if (weft_status* s = Plan(call, w, out_channels, &plan)) return s;
    return Dispatch(call, ConvOp::kForward, plan, &in, &filter, nullptr,
                    fused ? &bias : nullptr, out);
  });
}

weft_status* ConvBackpropInputKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor filter, dy, out;
    if (weft_status* s =
            ReadRank4Pair(call, "filter", "out_backprop", &filter, &dy)) {
      return s;
    }
    int64_t sizes[4];
    Window2D w;
    if (weft_status* s = weft_plugin_kit::ConvBackpropInputWindow(
            call, filter, dy, sizes, &w)) {
      return s;
    }
    const int64_t out_channels = filter.dims[3];
    if (weft_status* s = call.AllocateOutput(0, dy.dtype, sizes, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    if (filter.element_count == 0 || dy.element_count == 0) {
      return call.Zeros(out);
    }
    GemmFilterPlan gemm;
    if (GemmGradient(w, &gemm)) {
      auto run = [&](auto zero) {
        using T = decltype(zero);
        return DataGradientByGemm<T>(
            call, w, gemm, out_channels,
            static_cast<const T*>(TensorData(filter)),
            static_cast<const T*>(TensorData(dy)),
            static_cast<T*>(TensorData(out)));
      };
      return out.dtype == WEFT_FLOAT64 ? run(0.0) : run(0.0f);
    }
    ConvPlan plan;
    if (weft_status* s = Plan(call, w, out_channels, &plan)) return s;
    return Dispatch(call, ConvOp::kBackwardData, plan, nullptr, &filter, &dy,
                    nullptr, out);
  });
}

weft_status* ConvBackpropFilterKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, dy, out;
    if (weft_status* s = ReadRank4Pair(call, "input", "out_backprop", &in,
                                       &dy)) {
      return s;
    }
    int64_t sizes[4];
    Window2D w;
    if (weft_status* s = weft_plugin_kit::ConvBackpropFilterWindow(
            call, in, dy, sizes, &w)) {
      return s;
    }
    if (weft_status* s = call.AllocateOutput(0, in.dtype, sizes, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    if (in.element_count == 0 || dy.element_count == 0) {
      return call.Zeros(out);
    }
    GemmFilterPlan gemm;
    if (GemmGradient(w, &gemm)) {
      auto run = [&](auto zero) {
        using T = decltype(zero);
        return FilterGradientByGemm<T>(
            call, w, gemm, sizes[3], static_cast<const T*>(TensorData(in)),
            static_cast<const T*>(TensorData(dy)),
            static_cast<T*>(TensorData(out)));
      };
      return out.dtype == WEFT_FLOAT64 ? run(0.0) : run(0.0f);
    }
    ConvPlan plan;
    if (weft_status* s = Plan(call, w, sizes[3], &plan)) return s;
    return Dispatch(call, ConvOp::kBackwardFilter, plan, &in, nullptr, &dy,
                    nullptr, out);
  });
}

}  // namespace

weft_status* RegisterConvKernels(weft_kernel_registrar* registrar) {
  struct Entry {
    const char* op;
    weft_kernel_compute_fn compute;
    void* arg;
  };
  const Entry kernels[] = {
      {"Conv2D", ConvKernel, nullptr},
      {"FusedConv2D", ConvKernel, &g_fused_tag},
      {"Conv2DBackpropInput", ConvBackpropInputKernel, nullptr},
      {"Conv2DBackpropFilter", ConvBackpropFilterKernel, nullptr},
  };
  for (const Entry& e : kernels) {
    if (weft_status* s = RegisterKernel(registrar, e.op, "T", kFloatTypes, 2,
                                        e.compute, e.arg)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_cuda
