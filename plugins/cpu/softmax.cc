// Softmax and LogSoftmax over the last axis.
#include <cmath>
#include <cstdint>

#include <Eigen/Core>

#include "exact_math.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

// Rows [begin, end) of a [rows, width] matrix.  Subtracting the row's
// maximum keeps exp() within range whatever the logits' magnitude; the
// largest term becomes exp(0) = 1, so the sum is at least 1.
template <typename T>
void SoftmaxRows(const T* x, T* y, int64_t width, int64_t begin,
                 int64_t end) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  for (int64_t row = begin; row < end; ++row) {
    Eigen::Map<const Array> in(x + row * width, width);
    Eigen::Map<Array> out(y + row * width, width);
    const T max = in.maxCoeff();
    out = in - max;
    // Terms far below the max must underflow to 0, not to Eigen's clamp.
    ExactExp(y + row * width, y + row * width, width);
    out *= T(1) / out.sum();
  }
}

// log(softmax(x)) = (x - max) - log(sum(exp(x - max))): the shift keeps
// the sum in [1, width], so the log neither overflows nor meets a zero, and
// no probability is formed that could underflow before its log is taken.
template <typename T>
void LogSoftmaxRows(const T* x, T* y, int64_t width, int64_t begin,
                    int64_t end) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  for (int64_t row = begin; row < end; ++row) {
    Eigen::Map<const Array> in(x + row * width, width);
    Eigen::Map<Array> out(y + row * width, width);
    out = in - in.maxCoeff();
    // Eigen's clamped exp only matters for terms that vanish next to the
    // largest one, which contributes exactly 1 to the sum.
    out -= std::log(out.exp().sum());
  }
}

template <typename T, bool kLog>
weft_status* Compute(weft_kernel_context* ctx, const Tensor& x,
                     const Tensor& y) {
  const int64_t width = x.dims[x.rank - 1];
  const int64_t rows = x.count / width;
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  // Split by rows: each row needs its own max and sum.
  ParallelFor(ctx, rows, width, 30.0 * static_cast<double>(width),
              [&](int64_t begin, int64_t end) {
                if (kLog) {
                  LogSoftmaxRows(xp, yp, width, begin, end);
                } else {
                  SoftmaxRows(xp, yp, width, begin, end);
                }
              });
  return nullptr;
}

template <bool kLog>
weft_status* SoftmaxKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (x.rank < 1) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "logits must have rank >= 1, got a scalar");
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  switch (x.dtype) {
    case WEFT_FLOAT32: return Compute<float, kLog>(ctx, x, y);
    case WEFT_FLOAT64: return Compute<double, kLog>(ctx, x, y);
    default: return UnsupportedDtype(ctx, x.dtype);
  }
}

}  // namespace

weft_status* RegisterSoftmaxKernels(const Registrar& registrar) {
  if (weft_status* s = registrar.Add("Softmax", {WEFT_FLOAT32, WEFT_FLOAT64},
                                     Guarded<SoftmaxKernel<false>>)) {
    return s;
  }
  return registrar.Add("LogSoftmax", {WEFT_FLOAT32, WEFT_FLOAT64},
                       Guarded<SoftmaxKernel<true>>);
}

}  // namespace weft_cpu
