// Conv2D and FusedConv2D (Conv2D, BiasAdd and Relu in one: oneDNN's bias
// and ReLU post-op where no NaN can reach the ReLU, else a pass of Weft's
// Relu over each block's output): oneDNN for float32 where the plugin was
// built with it; otherwise, and for float64, patches gathered into a matrix
// (im2col) and multiplied by the filter with the plugin's Eigen GEMM.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernel.h"
#include "matmul_eigen.h"
#include "nn_common.h"
#include "nn_kernels.h"
#if WEFT_CPU_HAVE_ONEDNN
#include "onednn_nn.h"
#endif

namespace weft_cpu {
namespace {

// Bytes of patch matrix built at a time: big enough that each GEMM keeps
// every thread busy, small enough to stay in the outer caches and not to
// multiply a large input's memory by KH*KW.
constexpr int64_t kPatchBytes = int64_t{4} << 20;

template <typename T>
void ConvIm2col(const weft_kernel_context* ctx, const Window2D& w,
                int64_t out_channels, const T* in, const T* filter, T* out,
                int threads) {
  const int64_t patch = w.k_h * w.k_w * w.channels;
  const int64_t pixels = w.batch * w.out_h * w.out_w;
  if (patch == 0) {  // no input channels: an empty sum
    std::fill(out, out + pixels * out_channels, T(0));
    return;
  }
  // A 1x1 window that visits every pixel once sees the input itself as the
  // patch matrix.
  if (w.k_h == 1 && w.k_w == 1 && w.stride_h == 1 && w.stride_w == 1 &&
      w.out_h == w.in_h && w.out_w == w.in_w) {
    MatMulEigen(in, filter, out, pixels, patch, out_channels, false, false,
                threads);
    return;
  }
  const int64_t chunk = std::min<int64_t>(
      pixels, std::max<int64_t>(1, kPatchBytes / (patch * int64_t{sizeof(T)})));
  Scratch scratch(static_cast<size_t>(chunk * patch) * sizeof(T));
  T* patches = scratch.as<T>();
  for (int64_t first = 0; first < pixels; first += chunk) {
    const int64_t rows = std::min(chunk, pixels - first);
    ParallelFor(ctx, rows, patch, 2.0 * static_cast<double>(patch),
                [&](int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r) {
                    GatherPatch(w, in, first + r, patches + r * patch);
                  }
                });
    MatMulEigen<T>(patches, filter, out + first * out_channels, rows, patch,
                   out_channels, false, false, threads);
  }
}

// y += bias per channel, then ReLU (NaN stays NaN), in place.
template <typename T>
void BiasRelu(const weft_kernel_context* ctx, const T* bias, T* y,
              int64_t pixels, int64_t channels) {
  ParallelFor(ctx, pixels, channels, 2.0 * static_cast<double>(channels),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  T* row = y + p * channels;
                  for (int64_t c = 0; c < channels; ++c) {
                    const T v = row[c] + bias[c];
                    row[c] = v < T(0) ? T(0) : v;
                  }
                }
              });
}

// Whether every x[begin, end) is within `limit` in magnitude (false for
// NaN).  Eight independent accumulators, as AnyNaNIn (nan_order.h), so
// that the loop vectorises.
bool AllWithin(const float* x, int64_t begin, int64_t end, float limit) {
  constexpr int kLanes = 8;
  unsigned out[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      out[k] |= !(std::fabs(x[i + k]) <= limit);
    }
  }
  unsigned any = 0;
  for (int k = 0; k < kLanes; ++k) any |= out[k];
  for (; i < end; ++i) any |= !(std::fabs(x[i]) <= limit);
  return any == 0;
}

// The largest |x| of x[0, n), or infinity when one is NaN or infinite.
// Lanes as in AllWithin, and no early exit, so that it vectorises (a
// 3x3x512x512 filter is 2.4 million elements).
float MaxAbs(const float* x, int64_t n) {
  constexpr int kLanes = 8;
  constexpr float kMax = std::numeric_limits<float>::max();
  float most[kLanes] = {};
  unsigned bad[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const float a = std::fabs(x[i + k]);
      most[k] = a > most[k] ? a : most[k];
      bad[k] |= !(a <= kMax);
    }
  }
  float all = 0.0f;
  unsigned any = 0;
  for (int k = 0; k < kLanes; ++k) {
    all = most[k] > all ? most[k] : all;
    any |= bad[k];
  }
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    all = a > all ? a : all;
    any |= !(a <= kMax);
  }
  return any != 0 ? std::numeric_limits<float>::infinity() : all;
}

// Whether relu(conv(input, filter) + bias) in float32 can meet no NaN
// before its ReLU, so that oneDNN's ReLU post-op (0 for a NaN) gives Weft's
// Relu: every operand finite and small enough that no partial sum can
// overflow (K * max|filter| * max|input| + max|bias| within half the
// largest float; an overflow could add +inf to -inf).  The input is
// scanned on the kernel's threads (about a third of the cost of the pass
// over the larger output it spares), the filter and bias on this one.
bool NoNaNBeforeRelu(const weft_kernel_context* ctx, const Tensor& in,
                     const Tensor& filter, const Tensor& bias) {
  const double bound = 0.5 * std::numeric_limits<float>::max();
  const double w = MaxAbs(filter.data<float>(), filter.count);
  const double b = MaxAbs(bias.data<float>(), bias.count);
  if (!(w <= bound) || !(b <= 0.5 * bound)) return false;
  const double k = static_cast<double>(filter.count / filter.dims[3]);
  const double limit = w > 0 ? (bound - b) / (k * w)
                             : std::numeric_limits<float>::max();
  const float x_limit = static_cast<float>(
      std::min<double>(limit, std::numeric_limits<float>::max()));
  std::atomic<bool> within{true};
  ParallelFor(ctx, in.count, 1, 1, [&](int64_t begin, int64_t end) {
    if (!AllWithin(in.data<float>(), begin, end, x_limit)) {
      within.store(false, std::memory_order_relaxed);
    }
  });
  return within.load(std::memory_order_relaxed);
}

// Conv2D(input, filter), and FusedConv2D(input, filter, bias) =
// relu(Conv2D + bias) when `kFused`.
template <bool kFused>
weft_status* ConvKernel(weft_kernel_context* ctx) {
  Tensor in, filter, bias;
  if (weft_status* s = ReadInput(ctx, 0, &in)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &filter)) return s;
  if (in.dtype != filter.dtype) {
    return DtypeMismatch(ctx, "filter", filter.dtype, in.dtype);
  }
  if (weft_status* s = CheckNhwcInput(ctx, "input [N, H, W, C]", in)) return s;
  if (weft_status* s =
          CheckNhwcInput(ctx, "filter [KH, KW, Cin, Cout]", filter)) {
    return s;
  }
  if (filter.dims[2] != in.dims[3]) {
    char a[96], b[96];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "input %s has %lld channels but filter %s expects %lld",
                     FormatShape(in.dims, 4, a, sizeof a),
                     static_cast<long long>(in.dims[3]),
                     FormatShape(filter.dims, 4, b, sizeof b),
                     static_cast<long long>(filter.dims[2]));
  }
  const int64_t out_channels = filter.dims[3];
  if (kFused) {
    if (weft_status* s = ReadInput(ctx, 2, &bias)) return s;
    if (bias.dtype != in.dtype) {
      return DtypeMismatch(ctx, "bias", bias.dtype, in.dtype);
    }
    if (bias.rank != 1 || bias.dims[0] != out_channels) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "bias must be [%lld], one per output channel",
                       static_cast<long long>(out_channels));
    }
  }
  Window2D w;
  w.batch = in.dims[0];
  w.in_h = in.dims[1];
  w.in_w = in.dims[2];
  w.channels = in.dims[3];
  w.k_h = filter.dims[0];
  w.k_w = filter.dims[1];
  if (weft_status* s = ReadWindowAttrs(ctx, false, &w)) return s;
  const int64_t dims[4] = {w.batch, w.out_h, w.out_w, out_channels};
  Tensor out;
  if (weft_status* s = AllocateOutput(ctx, 0, in.dtype, dims, 4, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  const int threads = g_host->kernel_intra_op_threads(ctx);
  const int64_t pixels = w.batch * w.out_h * w.out_w;
  switch (in.dtype) {
    case WEFT_FLOAT32:
#if WEFT_CPU_HAVE_ONEDNN
      if (in.count != 0) {
        OnednnConv2D(w, out_channels, in.data<float>(), filter.data<float>(),
                     out.data<float>(), threads,
                     kFused ? bias.data<float>() : nullptr,
                     kFused && NoNaNBeforeRelu(ctx, in, filter, bias));
        return nullptr;
      }
#endif
      ConvIm2col(ctx, w, out_channels, in.data<float>(), filter.data<float>(),
                 out.data<float>(), threads);
      if (kFused) {
        BiasRelu(ctx, bias.data<float>(), out.data<float>(), pixels,
                 out_channels);
      }
      return nullptr;
    case WEFT_FLOAT64:
      ConvIm2col(ctx, w, out_channels, in.data<double>(),
                 filter.data<double>(), out.data<double>(), threads);
      if (kFused) {
        BiasRelu(ctx, bias.data<double>(), out.data<double>(), pixels,
                 out_channels);
      }
      return nullptr;
    default:
      return UnsupportedDtype(ctx, in.dtype);
  }
}

}  // namespace

weft_status* RegisterConvKernels(const Registrar& registrar) {
  if (weft_status* s = registrar.Add("Conv2D", {WEFT_FLOAT32, WEFT_FLOAT64},
                                     Guarded<ConvKernel<false>>)) {
    return s;
  }
  return registrar.Add("FusedConv2D", {WEFT_FLOAT32, WEFT_FLOAT64},
                       Guarded<ConvKernel<true>>);
}

}  // namespace weft_cpu
