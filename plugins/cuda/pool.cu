// Pooling: MaxPool, MaxPoolWithWindowIndex, AvgPool and their gradients
// MaxPoolGrad, MaxPoolReluGrad, AvgPoolGrad, MaxPoolGradFromWindowIndex and
// MaxPoolReluGradFromWindowIndex, float32 and float64.
//
// Plain kernels, not cuDNN's pooling: the op conventions fix what cuDNN
// leaves open or does otherwise.  A max-pool gradient must go to the
// window's first maximum, or its first NaN; cuDNN's backward finds the
// maximum again by comparing with the forward output, which no NaN
// equals, and documents no rule for ties.  SAME's odd padding element goes
// after the data, and AvgPool divides by the elements on the input: cuDNN
// pads symmetrically, and an explicitly padded input would count its
// padding.  The per-element functions are pool_ops.h's, which
// test_window_math.cc runs on the host against the CPU plugin's loops.
// Checks and messages are the OpenCL plugin's (plugins/opencl/conv.cc).
#include <cstdint>
#include <cstring>

#include "error_slot.h"
#include "grid_loop.h"
#include "kernel_call.h"
#include "pool_ops.h"
#include "window_attrs.h"

namespace weft_cuda {
namespace {

using weft_window::Window2D;

const int32_t kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};

// ---- Kernels: one thread per output (forward) or input (gradient)
// element ----

template <typename T>
__global__ void MaxPoolKernel(const PoolGeometry g, const T* in, T* out,
                              uint8_t* index, int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    int32_t at = 0;
    out[i] = MaxPoolAt(g, in, i, &at);
    if (index != nullptr) index[i] = static_cast<uint8_t>(at);
  }
}

template <typename T>
__global__ void AvgPoolKernel(const PoolGeometry g, const T* in, T* out,
                              int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = AvgPoolAt(g, in, i);
  }
}

template <typename T>
__global__ void MaxPoolGradKernel(const PoolGeometry g, const T* in,
                                  const T* dy, T* out, int64_t count,
                                  bool relu) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = MaxPoolGradAt(g, in, dy, relu, i);
  }
}

template <typename T>
__global__ void AvgPoolGradKernel(const PoolGeometry g, const T* dy, T* out,
                                  int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = AvgPoolGradAt(g, dy, i);
  }
}

// Marks the stream's error word (error_slot.h) when a window index names
// no element of its window; the gradient kernel ignores such an index.
__global__ void CheckWindowIndexKernel(const PoolGeometry g,
                                       const uint8_t* index, int64_t count,
                                       unsigned int* word,
                                       unsigned int launch_id) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    if (!WindowIndexValid(g, index, i)) {
      // Launches on a stream run in order: the first failing one claims
      // the word (every thread of it writes the same id).
      volatile unsigned int* w = word;
      if (*w == 0) *w = launch_id;
    }
  }
}

template <typename T>
__global__ void GradFromIndexKernel(const PoolGeometry g,
                                    const uint8_t* index, const T* orig_output,
                                    const T* dy, T* out, int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = GradFromIndexAt(g, index, orig_output, dy, i);
  }
}

constexpr int kSumThreads = 256;

// MaxPoolReluGradFromWindowIndex's second output: per channel, the sum
// over every window of what it hands out.  One block per channel; each
// thread sums a strided share of the windows, then the block adds the
// shares in a fixed tree, so the result does not vary from run to run.
template <typename T>
__global__ void ReluBiasGradKernel(const T* orig_output, const T* dy,
                                   T* bias, int64_t windows,
                                   int64_t channels) {
  __shared__ T partial[kSumThreads];
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    T sum = T(0);
    for (int64_t w = threadIdx.x; w < windows; w += blockDim.x) {
      sum += Give(orig_output, dy, w * channels + c);
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kSumThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) bias[c] = partial[0];
    __syncthreads();  // partial is reused by the next channel
  }
}

// ---- Launchers ----

template <typename T>
const T* In(const weft_kernel_tensor& t) {
  return static_cast<const T*>(TensorData(t));
}
template <typename T>
T* Out(const weft_kernel_tensor& t) {
  return static_cast<T*>(TensorData(t));
}

enum class Pool { kMax, kMaxWithIndex, kAvg };
int g_pool_tags[3];

Pool PoolOf(void* arg) {
  return static_cast<Pool>(static_cast<int*>(arg) - g_pool_tags);
}

using weft_plugin_kit::CheckWindowIndexFits;
using weft_plugin_kit::PoolGradWindow;


template <typename T>
void LaunchPool(const KernelCall& call, Pool pool, const PoolGeometry& g,
                const weft_kernel_tensor& in, const weft_kernel_tensor& out,
                uint8_t* index) {
  const int64_t n = out.element_count;
  if (pool == Pool::kAvg) {
    AvgPoolKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
        g, In<T>(in), Out<T>(out), n);
  } else {
    MaxPoolKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
        g, In<T>(in), Out<T>(out), index, n);
  }
}

weft_status* PoolKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const Pool pool = PoolOf(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, out, index;
    if (weft_status* s = call.Input(0, &in)) return s;
    if (!IsFloat(in.dtype)) return call.UnsupportedDtype(in.dtype);
    if (weft_status* s = CheckRank4(call, "value [N, H, W, C]", in)) return s;
    Window2D w = weft_plugin_kit::NhwcWindow(in.dims);
    if (weft_status* s = weft_plugin_kit::ReadWindowAttrs(call, true, &w)) {
      return s;
    }
    if (pool == Pool::kMaxWithIndex) {
      if (weft_status* s = CheckWindowIndexFits(call, w)) return s;
    }
    const int64_t dims[4] = {w.batch, w.out_h, w.out_w, w.channels};
    if (weft_status* s = call.AllocateOutput(0, in.dtype, dims, 4, &out)) {
      return s;
    }
    uint8_t* index_data = nullptr;
    if (pool == Pool::kMaxWithIndex) {
      if (weft_status* s =
              call.AllocateOutput(1, WEFT_UINT8, dims, 4, &index)) {
        return s;
      }
      index_data = static_cast<uint8_t*>(TensorData(index));
    }
    if (out.element_count == 0) return nullptr;
    const PoolGeometry g = PoolGeometryOf(w);
    if (in.dtype == WEFT_FLOAT64) {
      LaunchPool<double>(call, pool, g, in, out, index_data);
    } else {
      LaunchPool<float>(call, pool, g, in, out, index_data);
    }
    return call.CheckLaunch(pool == Pool::kAvg ? "AvgPool" : "MaxPool");
  });
}

// MaxPoolGrad (kind 0), MaxPoolReluGrad (1), AvgPoolGrad (2).
int g_pool_grad_tags[3];

template <typename T>
void LaunchPoolGrad(const KernelCall& call, int kind, const PoolGeometry& g,
                    const weft_kernel_tensor* in,
                    const weft_kernel_tensor& dy,
                    const weft_kernel_tensor& out) {
  const int64_t n = out.element_count;
  if (kind == 2) {
    AvgPoolGradKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
        g, In<T>(dy), Out<T>(out), n);
  } else {
    MaxPoolGradKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
        g, In<T>(*in), In<T>(dy), Out<T>(out), n, kind == 1);
  }
}

weft_status* PoolGradKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const int kind = static_cast<int>(static_cast<int*>(arg) -
                                      g_pool_grad_tags);
    const bool max = kind != 2;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, dy, out;
    int64_t sizes[4];
    if (max) {
      if (weft_status* s =
              ReadRank4Pair(call, "orig_input", "grad", &in, &dy)) {
        return s;
      }
      std::memcpy(sizes, in.dims, sizeof sizes);
    } else {
      if (weft_status* s = call.Input(0, &dy)) return s;
      if (!IsFloat(dy.dtype)) return call.UnsupportedDtype(dy.dtype);
      if (weft_status* s = CheckRank4(call, "grad", dy)) return s;
    }
    Window2D w;
    if (weft_status* s = PoolGradWindow(call, dy, !max, sizes, &w)) return s;
    if (weft_status* s = call.AllocateOutput(0, dy.dtype, sizes, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    // No window (an empty output): every gradient is 0.
    if (dy.element_count == 0) return call.Zeros(out);
    const PoolGeometry g = PoolGeometryOf(w);
    if (dy.dtype == WEFT_FLOAT64) {
      LaunchPoolGrad<double>(call, kind, g, max ? &in : nullptr, dy, out);
    } else {
      LaunchPoolGrad<float>(call, kind, g, max ? &in : nullptr, dy, out);
    }
    return call.CheckLaunch(max ? "MaxPoolGrad" : "AvgPoolGrad");
  });
}

template <typename T>
void LaunchGradFromIndex(const KernelCall& call, const PoolGeometry& g,
                         const weft_kernel_tensor& index,
                         const weft_kernel_tensor* orig,
                         const weft_kernel_tensor& dy,
                         const weft_kernel_tensor& out) {
  const int64_t n = out.element_count;
  GradFromIndexKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
      g, static_cast<const uint8_t*>(TensorData(index)),
      orig != nullptr ? In<T>(*orig) : nullptr, In<T>(dy), Out<T>(out), n);
}

template <typename T>
void LaunchReluBiasGrad(const KernelCall& call, const PoolGeometry& g,
                        const weft_kernel_tensor& orig,
                        const weft_kernel_tensor& dy,
                        const weft_kernel_tensor& bias) {
  const int64_t blocks = g.channels < 65535 ? g.channels : 65535;
  ReluBiasGradKernel<T><<<static_cast<unsigned int>(blocks), kSumThreads, 0,
                          call.stream()>>>(
      In<T>(orig), In<T>(dy), Out<T>(bias), g.batch * g.out_h * g.out_w,
      g.channels);
}

// MaxPoolGradFromWindowIndex(window_index, grad) and, with `arg` set,
// MaxPoolReluGradFromWindowIndex(orig_output, window_index, grad) ->
// (backprop, bias_backprop).
weft_status* PoolGradFromIndexKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool relu = arg != nullptr;
    const int32_t first = relu ? 1 : 0;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor orig, index, dy, out, bias;
    if (relu) {
      if (weft_status* s = call.Input(0, &orig)) return s;
    }
    if (weft_status* s = call.Input(first, &index)) return s;
    if (weft_status* s = call.Input(first + 1, &dy)) return s;
    if (!IsFloat(dy.dtype)) return call.UnsupportedDtype(dy.dtype);
    if (index.dtype != WEFT_UINT8) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "window_index is %s, not uint8",
                        DtypeName(index.dtype));
    }
    if (relu && orig.dtype != dy.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "orig_output is %s but grad is %s",
                        DtypeName(orig.dtype), DtypeName(dy.dtype));
    }
    if (weft_status* s = CheckRank4(call, "grad", dy)) return s;
    int64_t sizes[4];
    Window2D w;
    if (weft_status* s = PoolGradWindow(call, dy, true, sizes, &w)) return s;
    if (weft_status* s = CheckWindowIndexFits(call, w)) return s;
    if (!SameDims(index, dy) || (relu && !SameDims(orig, dy))) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "%s is not grad's shape",
                        SameDims(index, dy) ? "orig_output" : "window_index");
    }
    if (weft_status* s = call.AllocateOutput(0, dy.dtype, sizes, 4, &out)) {
      return s;
    }
    if (relu) {
      if (weft_status* s =
              call.AllocateOutput(1, dy.dtype, &w.channels, 1, &bias)) {
        return s;
      }
    }
    const PoolGeometry g = PoolGeometryOf(w);
    const bool fp64 = dy.dtype == WEFT_FLOAT64;
    if (dy.element_count != 0) {
      ErrorSlot& errors = *call.plugin_stream()->errors;
      const unsigned int id = errors.RegisterLaunch(call.NodeDescription(
          "window_index names a position outside its window: it must come "
          "from MaxPoolWithWindowIndex with the same ksize, strides and "
          "padding"));
      CheckWindowIndexKernel<<<BlocksFor(dy.element_count), kBlockThreads, 0,
                               call.stream()>>>(
          g, static_cast<const uint8_t*>(TensorData(index)),
          dy.element_count, errors.device_word(), id);
      if (weft_status* s = call.CheckLaunch("the window index check")) {
        return s;
      }
    }
    if (out.element_count != 0) {
      if (dy.element_count == 0) {
        if (weft_status* s = call.Zeros(out)) return s;
      } else {
        if (fp64) {
          LaunchGradFromIndex<double>(call, g, index, relu ? &orig : nullptr,
                                      dy, out);
        } else {
          LaunchGradFromIndex<float>(call, g, index, relu ? &orig : nullptr,
                                     dy, out);
        }
        if (weft_status* s = call.CheckLaunch("MaxPoolGradFromWindowIndex")) {
          return s;
        }
      }
    }
    if (!relu || bias.element_count == 0) return nullptr;
    if (fp64) {
      LaunchReluBiasGrad<double>(call, g, orig, dy, bias);
    } else {
      LaunchReluBiasGrad<float>(call, g, orig, dy, bias);
    }
    return call.CheckLaunch("the bias gradient");
  });
}

int g_relu_tag;

}  // namespace

weft_status* RegisterPoolKernels(weft_kernel_registrar* registrar) {
  struct Entry {
    const char* op;
    weft_kernel_compute_fn compute;
    void* arg;
  };
  const Entry kernels[] = {
      {"MaxPool", PoolKernel, &g_pool_tags[0]},
      {"MaxPoolWithWindowIndex", PoolKernel, &g_pool_tags[1]},
      {"AvgPool", PoolKernel, &g_pool_tags[2]},
      {"MaxPoolGrad", PoolGradKernel, &g_pool_grad_tags[0]},
      {"MaxPoolReluGrad", PoolGradKernel, &g_pool_grad_tags[1]},
      {"AvgPoolGrad", PoolGradKernel, &g_pool_grad_tags[2]},
      {"MaxPoolGradFromWindowIndex", PoolGradFromIndexKernel, nullptr},
      {"MaxPoolReluGradFromWindowIndex", PoolGradFromIndexKernel,
       &g_relu_tag},
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
