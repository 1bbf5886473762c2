// Reductions: Sum, Mean, Prod, Max and Min over any set of axes, ArgMax and
// ArgMin along one, SumToShapeOf (the gradient
// of broadcasting, a Sum over split dims), Softmax and LogSoftmax over the
// last axis, and the softmax cross-entropies (dense and sparse labels).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "error_slot.h"
#include "kernel_call.h"
#include "layout_attrs.h"
#include "reduce_ops.h"
#include "train_ops.h"

namespace weft_cuda {
namespace {

// Sum, Mean, Prod, Max, Min, ArgMax, ArgMin: the CPU's dtypes.
const int32_t kReduceTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                WEFT_INT64, WEFT_UINT8};
const int32_t kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};

// Reduces `value` over the block; every thread gets the result.  blockDim.x
// must be a multiple of 32, and threads that saw no element must hold the
// identity of `combine`.
template <typename A, typename Combine>
__device__ A BlockReduce(A value, Combine combine) {
  __shared__ A partial[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  for (int delta = 16; delta > 0; delta >>= 1) {
    value = combine(value, __shfl_down_sync(0xffffffffu, value, delta));
  }
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x >> 5;
    value = partial[lane < warps ? lane : 0];
    // Lanes past the last warp hold copies, not identities: they are left
    // out instead of combined.
    for (int delta = 16; delta > 0; delta >>= 1) {
      const A other = __shfl_down_sync(0xffffffffu, value, delta);
      if (lane + delta < warps) value = combine(value, other);
    }
    if (lane == 0) partial[0] = value;
  }
  __syncthreads();
  const A result = partial[0];
  // The next call may overwrite `partial` only after everyone has read it.
  __syncthreads();
  return result;
}

struct SumOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return b > a ? b : a; }
};

// ---- Sum, Mean, Prod, Max, Min ----

const char* const kReduceNames[] = {"Sum", "Mean", "Prod", "Max", "Min"};

template <int K>
struct CombineOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return ReduceCombine<K>(a, b); }
};

// One thread per output: when many outputs sit side by side in memory,
// neighbouring threads read neighbouring elements.
template <typename T, int K>
__global__ void ReducePerThreadKernel(
    const T* in, T* out, int64_t out_count,
    // Read in place from parameter space instead of copied per thread.
    const __grid_constant__ ReduceLayout layout) {
  using A = ReduceAccumulator<K, T>;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       o < out_count; o += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const T* base = in + SpaceOffset(o, layout.kept_rank, layout.kept_dims,
                                     layout.kept_strides);
    A acc = ReduceIdentity<K, T>();
    for (int64_t r = 0; r < layout.reduced_count; ++r) {
      acc = ReduceCombine<K>(
          acc, static_cast<A>(base[SpaceOffset(r, layout.reduced_rank,
                                               layout.reduced_dims,
                                               layout.reduced_strides)]));
    }
    out[o] = ReduceFinish<K, T>(acc, layout.reduced_count);
  }
}

// One block per output: for long reductions, or for too few outputs to
// fill the GPU.
template <typename T, int K>
__global__ void ReducePerBlockKernel(
    const T* in, T* out, int64_t out_count,
    const __grid_constant__ ReduceLayout layout) {
  using A = ReduceAccumulator<K, T>;
  for (int64_t o = blockIdx.x; o < out_count; o += gridDim.x) {
    const T* base = in + SpaceOffset(o, layout.kept_rank, layout.kept_dims,
                                     layout.kept_strides);
    A acc = ReduceIdentity<K, T>();
    for (int64_t r = threadIdx.x; r < layout.reduced_count; r += blockDim.x) {
      acc = ReduceCombine<K>(
          acc, static_cast<A>(base[SpaceOffset(r, layout.reduced_rank,
                                               layout.reduced_dims,
                                               layout.reduced_strides)]));
    }
    acc = BlockReduce(acc, CombineOp<K>());
    if (threadIdx.x == 0) {
      out[o] = ReduceFinish<K, T>(acc, layout.reduced_count);
    }
  }
}

template <typename T>
__global__ void FillKernel(T* out, int64_t count, T value) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    out[i] = value;
  }
}

template <typename T, int K>
weft_status* LaunchReduce(const KernelCall& call, const void* in, void* out,
                          int64_t out_count, const ReduceLayout& layout,
                          bool innermost_reduced) {
  const T* tin = static_cast<const T*>(in);
  T* tout = static_cast<T*>(out);
  const bool per_block =
      layout.reduced_count >= 64 && (innermost_reduced || out_count < 1024);
  if (per_block) {
    const int64_t blocks = out_count < 65535 ? out_count : 65535;
    ReducePerBlockKernel<T, K>
        <<<static_cast<unsigned int>(blocks), kBlockThreads, 0,
           call.stream()>>>(tin, tout, out_count, layout);
  } else {
    ReducePerThreadKernel<T, K>
        <<<BlocksFor(out_count), kBlockThreads, 0, call.stream()>>>(
            tin, tout, out_count, layout);
  }
  return call.CheckLaunch(kReduceNames[K]);
}

template <typename T>
weft_status* LaunchReduceTyped(const KernelCall& call, int kind,
                               const void* in, void* out, int64_t out_count,
                               const ReduceLayout& layout,
                               bool innermost_reduced) {
  switch (kind) {
    case kReduceSum:
      return LaunchReduce<T, kReduceSum>(call, in, out, out_count, layout,
                                         innermost_reduced);
    case kReduceMean:
      return LaunchReduce<T, kReduceMean>(call, in, out, out_count, layout,
                                          innermost_reduced);
    case kReduceProd:
      return LaunchReduce<T, kReduceProd>(call, in, out, out_count, layout,
                                          innermost_reduced);
    case kReduceMax:
      return LaunchReduce<T, kReduceMax>(call, in, out, out_count, layout,
                                         innermost_reduced);
    default:
      return LaunchReduce<T, kReduceMin>(call, in, out, out_count, layout,
                                         innermost_reduced);
  }
}

template <typename T>
weft_status* LaunchFill(const KernelCall& call, void* out, int64_t count,
                        T value) {
  FillKernel<T><<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
      static_cast<T*>(out), count, value);
  return call.CheckLaunch("fill");
}

// Calls fn(T{}) for the reductions' dtypes; UNIMPLEMENTED for the others.
template <typename Fn>
weft_status* ForReduceType(const KernelCall& call, int32_t dtype, Fn fn) {
  switch (dtype) {
    case WEFT_FLOAT32: return fn(float{});
    case WEFT_FLOAT64: return fn(double{});
    case WEFT_INT32: return fn(int32_t{});
    case WEFT_INT64: return fn(int64_t{});
    case WEFT_UINT8: return fn(uint8_t{});
    default: return call.UnsupportedDtype(dtype);
  }
}

// "[2,3]", as the CPU's messages show shapes.
const char* ShapeText(const weft_kernel_tensor& x, char* out, size_t size) {
  return weft_plugin_kit::FormatShape(x.dims, x.rank, out, size);
}

// An output over zero elements: 0 for Sum, 1 for Prod, NaN for a float
// Mean; an error for Max, Min and an integer Mean, as on the CPU.
weft_status* ReduceEmpty(const KernelCall& call, int kind,
                         const weft_kernel_tensor& x,
                         const weft_kernel_tensor& out) {
  void* outp = TensorData(out);
  const int64_t n = out.element_count;
  if (kind == kReduceSum) return call.Zeros(out);
  if (kind == kReduceProd) {
    return ForReduceType(call, x.dtype, [&](auto zero) {
      using T = decltype(zero);
      return LaunchFill<T>(call, outp, n, T(1));
    });
  }
  if (kind == kReduceMean && IsFloat(x.dtype)) {
    if (x.dtype == WEFT_FLOAT32) {
      return LaunchFill<float>(call, outp, n,
                               std::numeric_limits<float>::quiet_NaN());
    }
    return LaunchFill<double>(call, outp, n,
                              std::numeric_limits<double>::quiet_NaN());
  }
  char shape[128];
  return call.Error(WEFT_INVALID_ARGUMENT,
                    "%s over zero elements has no value (input %s %s)",
                    kReduceNames[kind], DtypeName(x.dtype),
                    ShapeText(x, shape, sizeof shape));
}

weft_status* ReduceCompute(void* kernel_arg, weft_kernel_context* ctx) {
  const int kind = static_cast<int>(reinterpret_cast<intptr_t>(kernel_arg));
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor x;
    if ((status = call.Input(0, &x)) != nullptr) return status;
    bool has_axes = false, keep_dims = false;
    const int64_t* axes = nullptr;
    int32_t num_axes = 0;
    if ((status = call.AttrIntList("axes", &has_axes, &axes, &num_axes)) !=
        nullptr) {
      return status;
    }
    if ((status = call.AttrBool("keep_dims", false, &keep_dims)) != nullptr) {
      return status;
    }

    // reduced[d] != 0: axis d is reduced.  Absent axes means all of them.
    DimBuffer reduced(x.rank);
    for (int32_t d = 0; d < x.rank; ++d) reduced[d] = has_axes ? 0 : 1;
    for (int32_t i = 0; i < num_axes; ++i) {
      int64_t axis = axes[i];
      if (axis < -x.rank || axis >= x.rank) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "axis %lld is out of range for rank %d",
                          static_cast<long long>(axes[i]), x.rank);
      }
      if (axis < 0) axis += x.rank;
      if (reduced[axis]) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "axis %lld is listed twice in axes",
                          static_cast<long long>(axes[i]));
      }
      reduced[axis] = 1;
    }

    DimBuffer out_dims(x.rank);
    int32_t out_rank = 0;
    int64_t reduced_count = 1;
    for (int32_t d = 0; d < x.rank; ++d) {
      if (reduced[d]) {
        reduced_count *= x.dims[d];
        if (keep_dims) out_dims[out_rank++] = 1;
      } else {
        out_dims[out_rank++] = x.dims[d];
      }
    }
    if (kind == kReduceMean && !IsFloat(x.dtype) && reduced_count == 0) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "the integer Mean of an empty reduction is "
                        "undefined");
    }
    weft_kernel_tensor out;
    if ((status = call.AllocateOutput(0, x.dtype, out_dims.data(), out_rank,
                                      &out)) != nullptr) {
      return status;
    }
    const int64_t out_count = out.element_count;
    void* outp = TensorData(out);
    if (out_count == 0) return nullptr;
    if (reduced_count == 0) return ReduceEmpty(call, kind, x, out);

    ReduceLayout layout{};
    bool innermost_reduced = false;
    if (!CoalesceReduce(x, reduced.data(), &layout, &innermost_reduced)) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "more than %d alternating groups of kept and "
                        "reduced axes",
                        kMaxReduceGroups);
    }
    const void* xp = TensorData(x);
    return ForReduceType(call, x.dtype, [&](auto zero) {
      return LaunchReduceTyped<decltype(zero)>(call, kind, xp, outp,
                                               out_count, layout,
                                               innermost_reduced);
    });
  });
}

// ---- ArgMax, ArgMin ----

// x seen as [outer, length, inner]; one thread per output [outer, inner]
// scans its column in order, so ties and NaN resolve as on the CPU.
template <bool kMax, typename T, typename I>
__global__ void ArgKernel(const T* x, I* out, int64_t count, int64_t length,
                          int64_t inner) {
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       o < count; o += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const T* column = x + (o / inner) * length * inner + o % inner;
    T best = column[0];
    int64_t index = 0;
    for (int64_t k = 1; k < length; ++k) {
      const T v = column[k * inner];
      if (ArgBetter<kMax>(v, best)) {
        best = v;
        index = k;
      }
    }
    out[o] = static_cast<I>(index);
  }
}

template <bool kMax, typename T>
weft_status* LaunchArg(const KernelCall& call, const weft_kernel_tensor& x,
                       const weft_kernel_tensor& out, int64_t length,
                       int64_t inner) {
  const int64_t n = out.element_count;
  const T* xp = static_cast<const T*>(TensorData(x));
  if (out.dtype == WEFT_INT32) {
    ArgKernel<kMax, T, int32_t>
        <<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
            xp, static_cast<int32_t*>(TensorData(out)), n, length, inner);
  } else {
    ArgKernel<kMax, T, int64_t>
        <<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
            xp, static_cast<int64_t*>(TensorData(out)), n, length, inner);
  }
  return call.CheckLaunch(kMax ? "ArgMax" : "ArgMin");
}

weft_status* ArgCompute(void* kernel_arg, weft_kernel_context* ctx) {
  const bool max = kernel_arg != nullptr;
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor x, out;
    if ((status = call.Input(0, &x)) != nullptr) return status;
    int64_t axis = 0;
    if ((status = call.AttrInt("axis", 0, &axis)) != nullptr) return status;
    int32_t out_type = WEFT_INT64;
    status = call.AttrDtype("output_type", &out_type);
    if (status != nullptr) {
      if (call.host()->status_code(status) != WEFT_NOT_FOUND) return status;
      call.host()->status_destroy(status);
      out_type = WEFT_INT64;
    }
    char shape[128];
    if (out_type != WEFT_INT32 && out_type != WEFT_INT64) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "output_type must be int32 or int64, got %s",
                        DtypeName(out_type));
    }
    const int64_t a = axis < 0 ? axis + x.rank : axis;
    if (a < 0 || a >= x.rank) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "axis %lld is out of range for input shape %s",
                        static_cast<long long>(axis),
                        ShapeText(x, shape, sizeof shape));
    }
    const int64_t length = x.dims[a];
    if (length == 0 || (out_type == WEFT_INT32 &&
                        length > std::numeric_limits<int32_t>::max())) {
      return call.Error(WEFT_INVALID_ARGUMENT, "axis %lld of input shape %s %s",
                        static_cast<long long>(axis),
                        ShapeText(x, shape, sizeof shape),
                        length == 0 ? "is empty: there is no index to return"
                                    : "is too long for output_type int32");
    }
    DimBuffer dims(x.rank);
    int64_t inner = 1;
    for (int32_t i = 0; i < x.rank; ++i) {
      if (i > a) inner *= x.dims[i];
      if (i != a) dims[i < a ? i : i - 1] = x.dims[i];
    }
    if ((status = call.AllocateOutput(0, out_type, dims.data(), x.rank - 1,
                                      &out)) != nullptr) {
      return status;
    }
    if (out.element_count == 0) return nullptr;
    return ForReduceType(call, x.dtype, [&](auto zero) {
      using T = decltype(zero);
      return max ? LaunchArg<true, T>(call, x, out, length, inner)
                 : LaunchArg<false, T>(call, x, out, length, inner);
    });
  });
}

// ---- Softmax ----

template <typename T>
__device__ __forceinline__ T Exp(T x) {
  if constexpr (std::is_same<T, float>::value) return expf(x);
  else return exp(x);
}

template <typename T>
__device__ __forceinline__ T Log(T x) {
  if constexpr (std::is_same<T, float>::value) return logf(x);
  else return log(x);
}

// One block per row, three passes over it: max, sum of shifted
// exponentials, and the normalized output.  Subtracting the row max keeps
// exp() from overflowing.  kLog (LogSoftmax): (x - max) - log(sum), as the
// CPU computes it; the shift keeps the sum in [1, width], so the log
// neither overflows nor meets a zero.  Kernels not written for the GPU:
// with cuDNN's softmax the op would need a library most kernels do not.
template <typename T, bool kLog>
__global__ void SoftmaxKernel(const T* in, T* out, int64_t rows,
                              int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * cols;
    T* y = out + row * cols;
    T max = -static_cast<T>(INFINITY);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      max = x[c] > max ? x[c] : max;
    }
    max = BlockReduce(max, MaxOp());
    T sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      sum += Exp(x[c] - max);
    }
    sum = BlockReduce(sum, SumOp());
    if constexpr (kLog) {
      const T log_sum = Log(sum);
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        y[c] = (x[c] - max) - log_sum;
      }
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        y[c] = Exp(x[c] - max) / sum;
      }
    }
  }
}

template <typename T>
weft_status* LaunchSoftmax(const KernelCall& call, bool log, const void* in,
                           void* out, int64_t rows, int64_t cols) {
  // Short rows would leave most of a 256-thread block idle.
  const int threads = cols <= 32 ? 32 : cols <= 128 ? 128 : kBlockThreads;
  const int64_t blocks = rows < 65535 ? rows : 65535;
  if (log) {
    SoftmaxKernel<T, true><<<static_cast<unsigned int>(blocks), threads, 0,
                             call.stream()>>>(static_cast<const T*>(in),
                                              static_cast<T*>(out), rows,
                                              cols);
    return call.CheckLaunch("LogSoftmax");
  }
  SoftmaxKernel<T, false><<<static_cast<unsigned int>(blocks), threads, 0,
                            call.stream()>>>(static_cast<const T*>(in),
                                             static_cast<T*>(out), rows, cols);
  return call.CheckLaunch("Softmax");
}

// Softmax, or LogSoftmax with `arg` set.
weft_status* SoftmaxCompute(void* arg, weft_kernel_context* ctx) {
  const bool log = arg != nullptr;
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor x, out;
    if ((status = call.Input(0, &x)) != nullptr) return status;
    if (x.rank < 1) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "%s needs logits of rank >= 1, got a scalar",
                        log ? "LogSoftmax" : "Softmax");
    }
    if ((status = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &out)) !=
        nullptr) {
      return status;
    }
    if (x.element_count == 0) return nullptr;
    const int64_t cols = x.dims[x.rank - 1];
    const int64_t rows = x.element_count / cols;
    switch (x.dtype) {
      case WEFT_FLOAT32:
        return LaunchSoftmax<float>(call, log, TensorData(x), TensorData(out),
                                    rows, cols);
      case WEFT_FLOAT64:
        return LaunchSoftmax<double>(call, log, TensorData(x),
                                     TensorData(out), rows, cols);
      default:
        return call.Error(WEFT_UNIMPLEMENTED, "no CUDA kernel for %s",
                          DtypeName(x.dtype));
    }
  });
}

// ---- SumToShapeOf ----

// x summed into like's run-time shape (train_ops.h: SumToShapeLayout).
weft_status* SumToShapeOfCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, like, out;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &like)) return s;
    if (!IsFloat(x.dtype)) return call.UnsupportedDtype(x.dtype);
    if (!SumToShapeFits(x.dims, x.rank, like.dims, like.rank)) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "x (rank %d) does not sum into like's shape (rank "
                        "%d): aligned from the right, each dim of x must be "
                        "a multiple of like's",
                        x.rank, like.rank);
    }
    if (weft_status* s =
            call.AllocateOutput(0, x.dtype, like.dims, like.rank, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    if (x.element_count == 0) return call.Zeros(out);  // empty sums
    ReduceLayout layout{};
    bool innermost_reduced = false;
    if (!SumToShapeLayout(x.dims, x.rank, like.dims, like.rank, &layout,
                          &innermost_reduced)) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "more than %d alternating groups of kept and summed "
                        "dims",
                        kMaxReduceGroups);
    }
    if (x.dtype == WEFT_FLOAT64) {
      return LaunchReduceTyped<double>(call, false, TensorData(x),
                                       TensorData(out), out.element_count,
                                       layout, innermost_reduced);
    }
    return LaunchReduceTyped<float>(call, false, TensorData(x),
                                    TensorData(out), out.element_count, layout,
                                    innermost_reduced);
  });
}

// ---- Softmax cross-entropy ----
//
// One block per row of features [B, C], as Softmax: the row's max, the sum
// of shifted exponentials, then per class the probability (times the
// sum's reciprocal, as the CPU computes it) less the label for backprop,
// and the loss from x itself, log(sum) - (x - max), never from an
// underflowed probability.

// SparseSoftmaxCrossEntropyWithLogits: a label outside [0, C) marks the
// stream's error word (error_slot.h) and gives its row a NaN loss and a
// zero gradient: defined values, and the run fails at synchronization.
template <typename T, typename L>
__global__ void SparseXentKernel(const T* features, const L* labels, T* loss,
                                 T* backprop, int64_t rows, int64_t cols,
                                 unsigned int* word, unsigned int launch_id) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = features + row * cols;
    T* g = backprop + row * cols;
    const int64_t label = static_cast<int64_t>(labels[row]);
    if (label < 0 || label >= cols) {  // the same for the whole block
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) g[c] = T(0);
      if (threadIdx.x == 0) {
        loss[row] = static_cast<T>(NAN);
        volatile unsigned int* w = word;
        if (*w == 0) *w = launch_id;
      }
      continue;
    }
    T max = -static_cast<T>(INFINITY);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      max = x[c] > max ? x[c] : max;
    }
    max = BlockReduce(max, MaxOp());
    T sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      sum += Exp(x[c] - max);
    }
    sum = BlockReduce(sum, SumOp());
    const T inverse = T(1) / sum;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const T p = Exp(x[c] - max) * inverse;
      g[c] = c == label ? p - T(1) : p;
    }
    if (threadIdx.x == 0) loss[row] = Log(sum) - (x[label] - max);
  }
}

// SoftmaxCrossEntropyWithLogits: loss = sum over classes of
// label * (log(sum) - (x - max)), backprop = p - label.
template <typename T>
__global__ void DenseXentKernel(const T* features, const T* labels, T* loss,
                                T* backprop, int64_t rows, int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = features + row * cols;
    const T* l = labels + row * cols;
    T* g = backprop + row * cols;
    T max = -static_cast<T>(INFINITY);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      max = x[c] > max ? x[c] : max;
    }
    max = BlockReduce(max, MaxOp());
    T sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      sum += Exp(x[c] - max);
    }
    sum = BlockReduce(sum, SumOp());
    const T lse = Log(sum), inverse = T(1) / sum;
    T part = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      part += l[c] * (lse - (x[c] - max));
      g[c] = Exp(x[c] - max) * inverse - l[c];
    }
    part = BlockReduce(part, SumOp());
    if (threadIdx.x == 0) loss[row] = part;
  }
}

int RowThreads(int64_t cols) {
  return cols <= 32 ? 32 : cols <= 128 ? 128 : kBlockThreads;
}

unsigned int RowBlocks(int64_t rows) {
  return static_cast<unsigned int>(rows < 65535 ? rows : 65535);
}

template <typename T, typename L>
void LaunchSparseXent(const KernelCall& call, const weft_kernel_tensor& x,
                      const weft_kernel_tensor& labels,
                      const weft_kernel_tensor& loss,
                      const weft_kernel_tensor& backprop, unsigned int* word,
                      unsigned int id) {
  SparseXentKernel<T, L><<<RowBlocks(x.dims[0]), RowThreads(x.dims[1]), 0,
                           call.stream()>>>(
      static_cast<const T*>(TensorData(x)),
      static_cast<const L*>(TensorData(labels)),
      static_cast<T*>(TensorData(loss)), static_cast<T*>(TensorData(backprop)),
      x.dims[0], x.dims[1], word, id);
}

template <typename T>
void LaunchDenseXent(const KernelCall& call, const weft_kernel_tensor& x,
                     const weft_kernel_tensor& labels,
                     const weft_kernel_tensor& loss,
                     const weft_kernel_tensor& backprop) {
  DenseXentKernel<T><<<RowBlocks(x.dims[0]), RowThreads(x.dims[1]), 0,
                       call.stream()>>>(
      static_cast<const T*>(TensorData(x)),
      static_cast<const T*>(TensorData(labels)),
      static_cast<T*>(TensorData(loss)), static_cast<T*>(TensorData(backprop)),
      x.dims[0], x.dims[1]);
}

// SoftmaxCrossEntropyWithLogits(features, labels) and, with `arg` set,
// SparseSoftmaxCrossEntropyWithLogits(features, labels) -> (loss [B],
// backprop [B, C]).
weft_status* XentCompute(void* arg, weft_kernel_context* ctx) {
  const bool sparse = arg != nullptr;
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, labels, loss, backprop;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &labels)) return s;
    if (!IsFloat(x.dtype)) return call.UnsupportedDtype(x.dtype);
    if (sparse) {
      if (labels.dtype != WEFT_INT32 && labels.dtype != WEFT_INT64) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "labels must be int32 or int64, got %s",
                          DtypeName(labels.dtype));
      }
      if (labels.rank != 1 || x.rank != 2 || labels.dims[0] != x.dims[0]) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "features (rank %d) must be [batch, classes] and "
                          "labels (rank %d) [batch]",
                          x.rank, labels.rank);
      }
    } else {
      if (labels.dtype != x.dtype) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "labels are %s but features %s",
                          DtypeName(labels.dtype), DtypeName(x.dtype));
      }
      if (!SameDims(labels, x) || x.rank != 2) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "features (rank %d) and labels (rank %d) must both "
                          "be [batch, classes]",
                          x.rank, labels.rank);
      }
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, 1, &loss)) {
      return s;
    }
    if (weft_status* s =
            call.AllocateOutput(1, x.dtype, x.dims, 2, &backprop)) {
      return s;
    }
    if (loss.element_count == 0) return nullptr;
    const bool fp64 = x.dtype == WEFT_FLOAT64;
    if (!sparse) {
      if (fp64) {
        LaunchDenseXent<double>(call, x, labels, loss, backprop);
      } else {
        LaunchDenseXent<float>(call, x, labels, loss, backprop);
      }
      return call.CheckLaunch("SoftmaxCrossEntropyWithLogits");
    }
    char what[160];
    std::snprintf(what, sizeof what,
                  "a label is outside the valid range [0, %lld) (the device "
                  "does not say which batch row)",
                  static_cast<long long>(x.dims[1]));
    ErrorSlot& errors = *call.plugin_stream()->errors;
    const unsigned int id = errors.RegisterLaunch(call.NodeDescription(what));
    unsigned int* word = errors.device_word();
    const bool wide = labels.dtype == WEFT_INT64;
    if (fp64) {
      if (wide) {
        LaunchSparseXent<double, int64_t>(call, x, labels, loss, backprop,
                                          word, id);
      } else {
        LaunchSparseXent<double, int32_t>(call, x, labels, loss, backprop,
                                          word, id);
      }
    } else if (wide) {
      LaunchSparseXent<float, int64_t>(call, x, labels, loss, backprop, word,
                                       id);
    } else {
      LaunchSparseXent<float, int32_t>(call, x, labels, loss, backprop, word,
                                       id);
    }
    return call.CheckLaunch("SparseSoftmaxCrossEntropyWithLogits");
  });
}

}  // namespace

weft_status* RegisterReductionKernels(weft_kernel_registrar* registrar) {
  static int log_tag, arg_max_tag;
  weft_status* status = nullptr;
  for (int kind = kReduceSum; kind <= kReduceMin && status == nullptr;
       ++kind) {
    status = RegisterKernel(registrar, kReduceNames[kind], "T", kReduceTypes,
                            5, ReduceCompute,
                            reinterpret_cast<void*>(static_cast<intptr_t>(kind)));
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "ArgMax", "T", kReduceTypes, 5,
                            ArgCompute, &arg_max_tag);
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "ArgMin", "T", kReduceTypes, 5,
                            ArgCompute, nullptr);
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "Softmax", "T", kFloatTypes, 2,
                            SoftmaxCompute, nullptr);
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "LogSoftmax", "T", kFloatTypes, 2,
                            SoftmaxCompute, &log_tag);
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "SumToShapeOf", "T", kFloatTypes, 2,
                            SumToShapeOfCompute, nullptr);
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "SoftmaxCrossEntropyWithLogits", "T",
                            kFloatTypes, 2, XentCompute, nullptr);
  }
  if (status == nullptr) {
    static const int32_t kLabelTypes[] = {WEFT_INT32, WEFT_INT64};
    static const weft_kernel_type_constraint kLabels = {"Tlabels",
                                                        kLabelTypes, 2};
    static int sparse_tag;
    status = RegisterKernel(registrar, "SparseSoftmaxCrossEntropyWithLogits",
                            "T", kFloatTypes, 2, XentCompute, &sparse_tag,
                            &kLabels, 1);
  }
  return status;
}

}  // namespace weft_cuda
