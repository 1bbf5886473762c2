// Per-channel affine ops over the last axis: BiasAdd and
// BatchNormWithGlobalNormalization.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernel.h"
#include "nn_common.h"
#include "nn_kernels.h"

namespace weft_cpu {
namespace {

// Integer bias addition wraps (two's complement) instead of being undefined
// on overflow, like the element-wise Add.
template <typename T>
T AddWrapping(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

weft_status* ChannelMismatch(const weft_kernel_context* ctx,
                             const char* what, const Tensor& x,
                             const Tensor& p) {
  char a[96], b[96];
  return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                   "%s %s does not match the last dim of %s", what,
                   FormatShape(p.dims, p.rank, b, sizeof b),
                   FormatShape(x.dims, x.rank, a, sizeof a));
}

// Reads the per-channel parameter input `index`: rank 1, length C, same
// dtype as x.
weft_status* ReadChannelParam(const weft_kernel_context* ctx, int32_t index,
                              const char* what, const Tensor& x, Tensor* p) {
  if (weft_status* s = ReadInput(ctx, index, p)) return s;
  if (p->dtype != x.dtype) return DtypeMismatch(ctx, what, p->dtype, x.dtype);
  if (p->rank != 1 || p->dims[0] != x.dims[x.rank - 1]) {
    return ChannelMismatch(ctx, what, x, *p);
  }
  return nullptr;
}

template <typename T>
void BiasAdd(const weft_kernel_context* ctx, const Tensor& x,
             const Tensor& bias, const Tensor& y) {
  const int64_t c = bias.count;
  const T* xp = x.data<T>();
  const T* bp = bias.data<T>();
  T* yp = y.data<T>();
  ParallelFor(ctx, x.count / c, c, static_cast<double>(c),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const T* in = xp + r * c;
                  T* out = yp + r * c;
                  for (int64_t k = 0; k < c; ++k) {
                    out[k] = AddWrapping(in[k], bp[k]);
                  }
                }
              });
}

weft_status* BiasAddKernel(weft_kernel_context* ctx) {
  Tensor x, bias;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (x.rank < 1) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "value must have rank >= 1 (channels last), got a "
                     "scalar");
  }
  if (weft_status* s = ReadChannelParam(ctx, 1, "bias", x, &bias)) return s;
  // Over x where nothing else reads it (a MatMul's or convolution's
  // product, as a dense layer builds it): each element is read before it
  // is written.  Into a fresh output the MLP's 100x256 BiasAdd took 5.1
  // us against 2.6 for the Relu after it, which writes over its input;
  // over x, 3.3 - 3.5 (WEFT_BENCH_TRACE, one thread, Ice Lake Xeon).
  Tensor y;
  if (weft_status* s =
          AllocateOutputOver(ctx, 0, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  switch (x.dtype) {
    case WEFT_FLOAT32: BiasAdd<float>(ctx, x, bias, y); return nullptr;
    case WEFT_FLOAT64: BiasAdd<double>(ctx, x, bias, y); return nullptr;
    case WEFT_INT32: BiasAdd<int32_t>(ctx, x, bias, y); return nullptr;
    case WEFT_INT64: BiasAdd<int64_t>(ctx, x, bias, y); return nullptr;
    default: return UnsupportedDtype(ctx, x.dtype);
  }
}

// One multiply per element instead of a division and a square root: the
// per-channel factor rsqrt(v + eps) * gamma is computed once.
template <typename T>
void BatchNorm(const weft_kernel_context* ctx, const Tensor* in, double eps,
               bool scale, const Tensor& y) {
  const Tensor& t = in[0];
  const int64_t c = in[1].count;
  const T* mean = in[1].data<T>();
  const T* var = in[2].data<T>();
  const T* beta = in[3].data<T>();
  const T* gamma = in[4].data<T>();
  Scratch scratch(static_cast<size_t>(c) * sizeof(T));
  T* factor = scratch.as<T>();
  for (int64_t k = 0; k < c; ++k) {
    factor[k] = T(1) / std::sqrt(var[k] + static_cast<T>(eps));
    if (scale) factor[k] *= gamma[k];
  }
  const T* tp = t.data<T>();
  T* yp = y.data<T>();
  ParallelFor(ctx, t.count / c, c, 2.0 * static_cast<double>(c),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const T* x = tp + r * c;
                  T* out = yp + r * c;
                  for (int64_t k = 0; k < c; ++k) {
                    out[k] = (x[k] - mean[k]) * factor[k] + beta[k];
                  }
                }
              });
}

weft_status* BatchNormKernel(weft_kernel_context* ctx) {
  static const char* const kNames[] = {"t", "m", "v", "beta", "gamma"};
  Tensor in[5];
  if (weft_status* s = ReadInput(ctx, 0, &in[0])) return s;
  if (in[0].rank < 1) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "t must have rank >= 1 (channels last), got a scalar");
  }
  for (int32_t i = 1; i < 5; ++i) {
    if (weft_status* s = ReadChannelParam(ctx, i, kNames[i], in[0], &in[i])) {
      return s;
    }
  }
  double eps = 0;
  if (weft_status* s =
          g_host->kernel_attr_float(ctx, "variance_epsilon", &eps)) {
    return s;
  }
  bool scale = false;
  if (weft_status* s = OptionalBoolAttr(ctx, "scale_after_normalization",
                                        false, &scale)) {
    return s;
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, in[0].dtype, in[0].dims,
                                      in[0].rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  switch (in[0].dtype) {
    case WEFT_FLOAT32:
      BatchNorm<float>(ctx, in, eps, scale, y);
      return nullptr;
    case WEFT_FLOAT64:
      BatchNorm<double>(ctx, in, eps, scale, y);
      return nullptr;
    default:
      return UnsupportedDtype(ctx, in[0].dtype);
  }
}

}  // namespace

weft_status* RegisterChannelKernels(const Registrar& registrar) {
  if (weft_status* s = registrar.Add(
          "BiasAdd", {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32, WEFT_INT64},
          Guarded<BiasAddKernel>)) {
    return s;
  }
  return registrar.Add("BatchNormWithGlobalNormalization",
                       {WEFT_FLOAT32, WEFT_FLOAT64},
                       Guarded<BatchNormKernel>);
}

}  // namespace weft_cpu
