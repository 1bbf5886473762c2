// The ops a training step needs besides the layers' forward kernels:
// ReluGrad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad; BiasAdd;
// BatchNormWithGlobalNormalization; ZerosLike and OnesLike; the views
// Reshape, ExpandDims, Squeeze and ReshapeLike (no copy); SumGrad, MeanGrad and ProdGrad; and the optimizer updates
// ApplyGradientDescent, ApplyMomentum and ApplyAdam.  SumToShapeOf and the
// softmax cross-entropies are with the reductions (reduction.cu).  The
// arithmetic and index math is train_ops.h's (host-tested); the checks and
// messages follow the OpenCL plugin's (plugins/opencl/grad.cc, train.cc,
// shape.cc, elementwise.cc), which follow the CPU's.
#include <cstdint>
#include <cstring>

#include "elementwise_ops.h"
#include "grid_loop.h"
#include "kernel_call.h"
#include "view_dims.h"
#include "train_ops.h"
#include "window_attrs.h"

namespace weft_cuda {
namespace {

const int32_t kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};
const int32_t kBiasTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                              WEFT_INT64};
const int32_t kFixedSizeTypes[] = {
    WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64,  WEFT_UINT8,
    WEFT_BOOL,    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8, WEFT_INT16,
    WEFT_UINT16,  WEFT_UINT32,  WEFT_UINT64};
constexpr int32_t kFixedSizeCount =
    sizeof kFixedSizeTypes / sizeof *kFixedSizeTypes;

template <typename T>
const T* In(const weft_kernel_tensor& t) {
  return static_cast<const T*>(TensorData(t));
}
template <typename T>
T* Out(const weft_kernel_tensor& t) {
  return static_cast<T*>(TensorData(t));
}

// ---- Element-wise gradients ----

const char* const kGradNames[] = {"ReluGrad", "SigmoidGrad", "TanhGrad",
                                  "SqrtGrad", "RsqrtGrad"};

template <int Op, typename T>
__global__ void ElementGradKernel(const T* a, const T* b, T* out,
                                  int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = ApplyGrad<Op, T>(a[i], b[i]);
  }
}

template <int Op>
void LaunchElementGrad(const KernelCall& call, const weft_kernel_tensor& a,
                       const weft_kernel_tensor& b,
                       const weft_kernel_tensor& z) {
  const int64_t n = z.element_count;
  if (a.dtype == WEFT_FLOAT64) {
    ElementGradKernel<Op, double>
        <<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
            In<double>(a), In<double>(b), Out<double>(z), n);
  } else {
    ElementGradKernel<Op, float>
        <<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
            In<float>(a), In<float>(b), Out<float>(z), n);
  }
}

weft_status* ElementGradCompute(void* arg, weft_kernel_context* ctx) {
  const int op = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor a, b, z;
    if (weft_status* s = call.Input(0, &a)) return s;
    if (weft_status* s = call.Input(1, &b)) return s;
    if (a.dtype != b.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "inputs are %s and %s",
                        DtypeName(a.dtype), DtypeName(b.dtype));
    }
    if (!IsFloat(a.dtype)) return call.UnsupportedDtype(a.dtype);
    if (!SameDims(a, b)) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "inputs of rank %d and %d must have the same shape",
                        a.rank, b.rank);
    }
    if (weft_status* s = call.AllocateOutput(0, a.dtype, a.dims, a.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    switch (op) {
      case kReluGrad: LaunchElementGrad<kReluGrad>(call, a, b, z); break;
      case kSigmoidGrad: LaunchElementGrad<kSigmoidGrad>(call, a, b, z); break;
      case kTanhGrad: LaunchElementGrad<kTanhGrad>(call, a, b, z); break;
      case kSqrtGrad: LaunchElementGrad<kSqrtGrad>(call, a, b, z); break;
      default: LaunchElementGrad<kRsqrtGrad>(call, a, b, z); break;
    }
    return call.CheckLaunch(kGradNames[op]);
  });
}

// ---- BiasAdd ----

template <typename T>
__global__ void BiasAddKernel(const T* x, const T* bias, T* y, int64_t count,
                              int64_t channels) {
  const DivisionCheck none{nullptr, 0};
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    // Integers wrap, as the CPU's do.
    y[i] = ApplyBinary<kAdd, T>(x[i], bias[i % channels], none);
  }
}

template <typename T>
void LaunchBiasAdd(const KernelCall& call, const weft_kernel_tensor& x,
                   const weft_kernel_tensor& b, const weft_kernel_tensor& y) {
  const int64_t n = y.element_count;
  BiasAddKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
      In<T>(x), In<T>(b), Out<T>(y), n, b.dims[0]);
}

weft_status* BiasAddCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    const char* format = nullptr;
    if (weft_status* s = call.AttrString("data_format", &format)) return s;
    if (format != nullptr && std::strcmp(format, "NHWC") != 0) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "data_format '%s' is not supported; only NHWC",
                        format);
    }
    weft_kernel_tensor x, b, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &b)) return s;
    if (x.rank < 1 || b.rank != 1 || b.dims[0] != x.dims[x.rank - 1]) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "bias must be [C] for a value of shape [..., C]");
    }
    if (x.dtype != b.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "value is %s but bias is %s",
                        DtypeName(x.dtype), DtypeName(b.dtype));
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    switch (x.dtype) {
      case WEFT_FLOAT32: LaunchBiasAdd<float>(call, x, b, y); break;
      case WEFT_FLOAT64: LaunchBiasAdd<double>(call, x, b, y); break;
      case WEFT_INT32: LaunchBiasAdd<int32_t>(call, x, b, y); break;
      case WEFT_INT64: LaunchBiasAdd<int64_t>(call, x, b, y); break;
      default: return call.UnsupportedDtype(x.dtype);
    }
    return call.CheckLaunch("BiasAdd");
  });
}

// ---- BatchNormWithGlobalNormalization ----

// One thread per channel computes the CPU's factor, then one per element
// applies it (train_ops.h).
template <typename T>
__global__ void BatchNormFactorKernel(const T* var, const T* gamma, T* factor,
                                      int64_t channels, T eps, bool scale) {
  for (int64_t k = GridStart(); k < channels; k += GridStride()) {
    factor[k] = BatchNormFactor<T>(var[k], eps, gamma[k], scale);
  }
}

template <typename T>
__global__ void BatchNormKernel(const T* t, const T* mean, const T* factor,
                                const T* beta, T* y, int64_t count,
                                int64_t channels) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    const int64_t k = i % channels;
    y[i] = BatchNormElement<T>(t[i], mean[k], factor[k], beta[k]);
  }
}

template <typename T>
weft_status* LaunchBatchNorm(const KernelCall& call,
                             const weft_kernel_tensor* in,
                             const weft_kernel_tensor& y, double eps,
                             bool scale) {
  const int64_t channels = in[0].dims[in[0].rank - 1];
  Scratch scratch(call);
  T* factor = nullptr;
  if (weft_status* s = scratch.Get(channels, &factor)) return s;
  BatchNormFactorKernel<T>
      <<<BlocksFor(channels), kBlockThreads, 0, call.stream()>>>(
          In<T>(in[2]), In<T>(in[4]), factor, channels, static_cast<T>(eps),
          scale);
  if (weft_status* s = call.CheckLaunch("BatchNormWithGlobalNormalization")) {
    return s;
  }
  const int64_t n = y.element_count;
  BatchNormKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
      In<T>(in[0]), In<T>(in[1]), factor, In<T>(in[3]), Out<T>(y), n,
      channels);
  return call.CheckLaunch("BatchNormWithGlobalNormalization");
}

// BatchNormWithGlobalNormalization(t, m, v, beta, gamma), channels last;
// the checks and messages are shared with the OpenCL plugin
// (window_attrs.h).
weft_status* BatchNormCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in[5], y;
    for (int i = 0; i < 5; ++i) {
      if (weft_status* s = call.Input(i, &in[i])) return s;
    }
    const weft_kernel_tensor& t = in[0];
    if (!IsFloat(t.dtype)) return call.UnsupportedDtype(t.dtype);
    double eps = 0;
    bool scale = false;
    if (weft_status* s =
            weft_plugin_kit::ReadBatchNormArgs(call, in, &eps, &scale)) {
      return s;
    }
    if (weft_status* s = call.AllocateOutput(0, t.dtype, t.dims, t.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    if (t.dtype == WEFT_FLOAT64) {
      return LaunchBatchNorm<double>(call, in, y, eps, scale);
    }
    return LaunchBatchNorm<float>(call, in, y, eps, scale);
  });
}

// ---- ZerosLike, OnesLike ----

template <typename U>
__global__ void FillPatternKernel(U* out, int64_t count, U pattern) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = pattern;
  }
}

int g_zero_tag;

// ZerosLike (`arg` = &g_zero_tag) or OnesLike.
weft_status* LikeCompute(void* arg, weft_kernel_context* ctx) {
  const bool zeros = arg == &g_zero_tag;
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    uint64_t bits = 0;
    const size_t size = OnePattern(x.dtype, &bits);
    if (size != 1 && size != 2 && size != 4 && size != 8) {
      return call.UnsupportedDtype(x.dtype);
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    const int64_t n = y.element_count;
    if (n == 0) return nullptr;
    if (zeros) return call.Zeros(y);
    const unsigned int blocks = BlocksFor(n);
    switch (size) {
      case 1:
        FillPatternKernel<uint8_t><<<blocks, kBlockThreads, 0, call.stream()>>>(
            Out<uint8_t>(y), n, static_cast<uint8_t>(bits));
        break;
      case 2:
        FillPatternKernel<uint16_t><<<blocks, kBlockThreads, 0,
                                      call.stream()>>>(
            Out<uint16_t>(y), n, static_cast<uint16_t>(bits));
        break;
      case 4:
        FillPatternKernel<uint32_t><<<blocks, kBlockThreads, 0,
                                      call.stream()>>>(
            Out<uint32_t>(y), n, static_cast<uint32_t>(bits));
        break;
      default:
        FillPatternKernel<uint64_t><<<blocks, kBlockThreads, 0,
                                      call.stream()>>>(Out<uint64_t>(y), n,
                                                       bits);
        break;
    }
    return call.CheckLaunch("OnesLike");
  });
}

// ---- Views: Reshape, ExpandDims, Squeeze, ReshapeLike (their shapes:
// plugins/common/view_dims.h) ----

using weft_plugin_kit::ExpandDimsDims;
using weft_plugin_kit::ReshapeDims;
using weft_plugin_kit::ReshapeLikeDims;
using weft_plugin_kit::SqueezeDims;
using weft_plugin_kit::ViewDims;

template <ViewDims kDims>
weft_status* ViewCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    int64_t dims[WEFT_MAX_RANK];
    int32_t rank = 0;
    if (weft_status* s = kDims(call, x, dims, &rank)) return s;
    return call.ForwardInput(0, 0, dims, rank);
  });
}

// ---- SumGrad, MeanGrad ----

template <typename T, bool kMean>
__global__ void SpreadKernel(const T* grad, T* out, int64_t count,
                             const __grid_constant__ SpreadLayout layout) {
  const T scale = T(1) / static_cast<T>(layout.size);
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    const T g = grad[SpaceOffset(i, layout.rank, layout.dims,
                                 layout.strides)];
    out[i] = kMean ? g * scale : g;
  }
}

template <typename T>
void LaunchSpread(const KernelCall& call, bool mean,
                  const weft_kernel_tensor& grad, const weft_kernel_tensor& out,
                  const SpreadLayout& layout) {
  const int64_t n = out.element_count;
  if (mean) {
    SpreadKernel<T, true><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
        In<T>(grad), Out<T>(out), n, layout);
  } else {
    SpreadKernel<T, false><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
        In<T>(grad), Out<T>(out), n, layout);
  }
}

int g_mean_tag, g_prod_tag;

// ProdGrad, pass 1: each group's nonzero product and zero count.
template <typename T>
__global__ void ProdGroupsKernel(const T* x, T* nonzero, int64_t* zeros,
                                 int64_t groups,
                                 const __grid_constant__ ReduceLayout layout) {
  for (int64_t k = GridStart(); k < groups; k += GridStride()) {
    ProdGroup(x, layout, k, &nonzero[k], &zeros[k]);
  }
}

// Pass 2: each element's gradient, grad times the product of the others.
template <typename T>
__global__ void ProdSpreadKernel(const T* grad, const T* x, const T* nonzero,
                                 const int64_t* zeros, T* out, int64_t count,
                                 const __grid_constant__ SpreadLayout layout) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    const int64_t k = SpaceOffset(i, layout.rank, layout.dims, layout.strides);
    out[i] = grad[k] * ProdOthers(nonzero[k], zeros[k], x[i]);
  }
}

template <typename T>
weft_status* LaunchProdGrad(const KernelCall& call,
                            const weft_kernel_tensor& grad,
                            const weft_kernel_tensor& x,
                            const weft_kernel_tensor& out,
                            const SpreadLayout& spread,
                            const bool* reduced) {
  int64_t flags[WEFT_MAX_RANK];
  for (int32_t a = 0; a < x.rank; ++a) flags[a] = reduced[a] ? 1 : 0;
  ReduceLayout layout{};
  bool innermost_reduced = false;
  if (!CoalesceReduce(x, flags, &layout, &innermost_reduced)) {
    return call.Error(WEFT_UNIMPLEMENTED,
                      "more than %d alternating groups of kept and reduced "
                      "axes",
                      kMaxReduceGroups);
  }
  Scratch scratch(call);
  T* nonzero = nullptr;
  int64_t* zeros = nullptr;
  if (weft_status* s = scratch.Get(spread.groups, &nonzero)) return s;
  if (weft_status* s = scratch.Get(spread.groups, &zeros)) return s;
  ProdGroupsKernel<T><<<BlocksFor(spread.groups), kBlockThreads, 0,
                        call.stream()>>>(In<T>(x), nonzero, zeros,
                                         spread.groups, layout);
  if (weft_status* s = call.CheckLaunch("ProdGrad")) return s;
  const int64_t n = out.element_count;
  ProdSpreadKernel<T><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
      In<T>(grad), In<T>(x), nonzero, zeros, Out<T>(out), n, spread);
  return call.CheckLaunch("ProdGrad");
}

// SumGrad(grad, x) and, with `arg` = &g_mean_tag or &g_prod_tag,
// MeanGrad(grad, x) or ProdGrad(grad, x), attrs axes (absent: every axis)
// and keep_dims.
weft_status* SpreadCompute(void* arg, weft_kernel_context* ctx) {
  const bool mean = arg == &g_mean_tag;
  const bool prod = arg == &g_prod_tag;
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor grad, x, out;
    if (weft_status* s = call.Input(0, &grad)) return s;
    if (weft_status* s = call.Input(1, &x)) return s;
    if (grad.dtype != x.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "grad is %s but x is %s",
                        DtypeName(grad.dtype), DtypeName(x.dtype));
    }
    if (!IsFloat(x.dtype)) return call.UnsupportedDtype(x.dtype);
    bool present = false;
    const int64_t* axes = nullptr;
    int32_t num_axes = 0;
    if (weft_status* s = call.AttrIntList("axes", &present, &axes, &num_axes)) {
      return s;
    }
    bool reduced[WEFT_MAX_RANK];
    for (int32_t i = 0; i < x.rank; ++i) reduced[i] = !present;
    for (int32_t k = 0; k < num_axes; ++k) {
      const int64_t a = axes[k] < 0 ? axes[k] + x.rank : axes[k];
      if (a < 0 || a >= x.rank || reduced[a]) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "axis %lld is out of range or repeated for rank %d",
                          static_cast<long long>(axes[k]), x.rank);
      }
      reduced[a] = true;
    }
    const SpreadLayout layout = BuildSpread(x.dims, x.rank, reduced);
    if (grad.element_count != layout.groups) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "grad (%lld elements) does not hold one value per "
                        "reduction of x (%lld)",
                        static_cast<long long>(grad.element_count),
                        static_cast<long long>(layout.groups));
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank,
                                             &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    if (prod) {
      return x.dtype == WEFT_FLOAT64
                 ? LaunchProdGrad<double>(call, grad, x, out, layout, reduced)
                 : LaunchProdGrad<float>(call, grad, x, out, layout, reduced);
    }
    if (x.dtype == WEFT_FLOAT64) {
      LaunchSpread<double>(call, mean, grad, out, layout);
    } else {
      LaunchSpread<float>(call, mean, grad, out, layout);
    }
    return call.CheckLaunch(mean ? "MeanGrad" : "SumGrad");
  });
}

// ---- Optimizer updates ----
//
// The host hands an update its variables' current values as its leading
// inputs and publishes its outputs as their new values.  Scalars stay on
// the device: every thread reads them.

template <typename T>
__global__ void DescentKernel(const T* var, const T* alpha, const T* delta,
                              T* var_out, int64_t count) {
  const T a = alpha[0];
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    var_out[i] = DescentStep(var[i], a, delta[i]);
  }
}

template <typename T>
__global__ void MomentumKernel(const T* var, const T* accum, const T* lr,
                               const T* grad, const T* momentum, T* var_out,
                               T* accum_out, int64_t count, bool nesterov) {
  const T l = lr[0], m = momentum[0];
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    MomentumStep(var[i], accum[i], l, grad[i], m, nesterov, &var_out[i],
                 &accum_out[i]);
  }
}

template <typename T>
__global__ void AdamKernel(const T* var, const T* m, const T* v,
                           const T* beta1_power, const T* beta2_power,
                           const T* lr, const T* beta1, const T* beta2,
                           const T* epsilon, const T* grad, T* var_out,
                           T* m_out, T* v_out, int64_t count) {
  const T alpha = AdamAlpha(lr[0], beta1_power[0], beta2_power[0]);
  const T b1 = beta1[0], b2 = beta2[0], eps = epsilon[0];
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    AdamStep(var[i], m[i], v[i], grad[i], alpha, b1, b2, eps, &var_out[i],
             &m_out[i], &v_out[i]);
  }
}

struct Update {
  const char* op;
  int32_t num_inputs;
  int32_t num_outputs;   // the variables: the leading inputs
  unsigned scalar_mask;  // bit i: input i is a scalar
};

const Update kDescent = {"ApplyGradientDescent", 3, 1, 1u << 1};
const Update kMomentum = {"ApplyMomentum", 5, 2, (1u << 2) | (1u << 4)};
const Update kAdam = {"ApplyAdam", 10, 3, 0x1f8u};

template <typename T>
void LaunchUpdate(const KernelCall& call, const Update& op,
                  const weft_kernel_tensor* in, const weft_kernel_tensor* out,
                  bool nesterov) {
  const int64_t n = in[0].element_count;
  const unsigned int blocks = BlocksFor(n);
  const cudaStream_t stream = call.stream();
  if (&op == &kDescent) {
    DescentKernel<T><<<blocks, kBlockThreads, 0, stream>>>(
        In<T>(in[0]), In<T>(in[1]), In<T>(in[2]), Out<T>(out[0]), n);
  } else if (&op == &kMomentum) {
    MomentumKernel<T><<<blocks, kBlockThreads, 0, stream>>>(
        In<T>(in[0]), In<T>(in[1]), In<T>(in[2]), In<T>(in[3]), In<T>(in[4]),
        Out<T>(out[0]), Out<T>(out[1]), n, nesterov);
  } else {
    AdamKernel<T><<<blocks, kBlockThreads, 0, stream>>>(
        In<T>(in[0]), In<T>(in[1]), In<T>(in[2]), In<T>(in[3]), In<T>(in[4]),
        In<T>(in[5]), In<T>(in[6]), In<T>(in[7]), In<T>(in[8]), In<T>(in[9]),
        Out<T>(out[0]), Out<T>(out[1]), Out<T>(out[2]), n);
  }
}

weft_status* UpdateCompute(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const Update& op = *static_cast<const Update*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in[10], out[3];
    for (int32_t i = 0; i < op.num_inputs; ++i) {
      if (weft_status* s = call.Input(i, &in[i])) return s;
      if (in[i].dtype != in[0].dtype) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "input %d is %s; the variable is %s", i,
                          DtypeName(in[i].dtype), DtypeName(in[0].dtype));
      }
      if ((op.scalar_mask >> i) & 1u) {
        if (in[i].element_count != 1) {
          return call.Error(WEFT_INVALID_ARGUMENT,
                            "input %d must be a scalar, has %lld elements",
                            i, static_cast<long long>(in[i].element_count));
        }
      } else if (!SameDims(in[i], in[0])) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "input %d (rank %d) does not have the variable's "
                          "shape (rank %d)",
                          i, in[i].rank, in[0].rank);
      }
    }
    const weft_kernel_tensor& var = in[0];
    if (!IsFloat(var.dtype)) return call.UnsupportedDtype(var.dtype);
    bool nesterov = false;
    if (&op == &kMomentum) {
      if (weft_status* s = call.AttrBool("use_nesterov", false, &nesterov)) {
        return s;
      }
    }
    for (int32_t r = 0; r < op.num_outputs; ++r) {
      if (weft_status* s = call.AllocateOutput(r, var.dtype, var.dims,
                                               var.rank, &out[r])) {
        return s;
      }
    }
    if (var.element_count == 0) return nullptr;
    if (var.dtype == WEFT_FLOAT64) {
      LaunchUpdate<double>(call, op, in, out, nesterov);
    } else {
      LaunchUpdate<float>(call, op, in, out, nesterov);
    }
    return call.CheckLaunch(op.op);
  });
}

void* OpArg(int op) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(op));
}

}  // namespace

weft_status* RegisterTrainingKernels(weft_kernel_registrar* registrar) {
  for (int op = kReluGrad; op <= kRsqrtGrad; ++op) {
    if (weft_status* s = RegisterKernel(registrar, kGradNames[op], "T",
                                        kFloatTypes, 2, ElementGradCompute,
                                        OpArg(op))) {
      return s;
    }
  }
  struct Entry {
    const char* op;
    const int32_t* dtypes;
    int32_t num_dtypes;
    weft_kernel_compute_fn compute;
    void* arg;
  };
  const Entry kernels[] = {
      {"BiasAdd", kBiasTypes, 4, BiasAddCompute, nullptr},
      {"BatchNormWithGlobalNormalization", kFloatTypes, 2, BatchNormCompute,
       nullptr},
      {"ZerosLike", kFixedSizeTypes, kFixedSizeCount, LikeCompute,
       &g_zero_tag},
      {"OnesLike", kFixedSizeTypes, kFixedSizeCount, LikeCompute, nullptr},
      {"SumGrad", kFloatTypes, 2, SpreadCompute, nullptr},
      {"MeanGrad", kFloatTypes, 2, SpreadCompute, &g_mean_tag},
      {"ProdGrad", kFloatTypes, 2, SpreadCompute, &g_prod_tag},
      {"ApplyGradientDescent", kFloatTypes, 2, UpdateCompute,
       const_cast<Update*>(&kDescent)},
      {"ApplyMomentum", kFloatTypes, 2, UpdateCompute,
       const_cast<Update*>(&kMomentum)},
      {"ApplyAdam", kFloatTypes, 2, UpdateCompute,
       const_cast<Update*>(&kAdam)},
  };
  for (const Entry& e : kernels) {
    if (weft_status* s = RegisterKernel(registrar, e.op, "T", e.dtypes,
                                        e.num_dtypes, e.compute, e.arg)) {
      return s;
    }
  }
  // Views take every dtype: no constraint.
  struct View {
    const char* op;
    weft_kernel_compute_fn compute;
  };
  const View views[] = {{"Reshape", ViewCompute<ReshapeDims>},
                        {"ExpandDims", ViewCompute<ExpandDimsDims>},
                        {"Squeeze", ViewCompute<SqueezeDims>},
                        {"ReshapeLike", ViewCompute<ReshapeLikeDims>}};
  for (const View& v : views) {
    if (weft_status* s = RegisterKernel(registrar, v.op, nullptr, nullptr, 0,
                                        v.compute, nullptr)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_cuda
