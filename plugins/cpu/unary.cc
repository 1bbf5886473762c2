// Element-wise unary ops, and Identity (which forwards its input untouched).
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "exact_exp.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

enum class UnaryOp { kNeg, kExp, kLog, kRelu, kSigmoid, kTanh };

template <UnaryOp op, typename T>
void Run(const T* x, T* y, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<const Array> in(x, n);
    Eigen::Map<Array> out(y, n);
    if constexpr (op == UnaryOp::kNeg) out = -in;
    if constexpr (op == UnaryOp::kExp) ExactExp(x, y, n);
    if constexpr (op == UnaryOp::kLog) out = in.log();
    // NaN in, NaN out (NaN < 0 is false); a plain max would return
    // whichever operand the instruction favours.
    if constexpr (op == UnaryOp::kRelu) out = (in < T(0)).select(T(0), in);
    // exp(-x) overflows to inf for very negative x, giving exactly 0; no
    // NaN arises on either tail.
    if constexpr (op == UnaryOp::kSigmoid) out = T(1) / (T(1) + (-in).exp());
    if constexpr (op == UnaryOp::kTanh) out = in.tanh();
  } else {
    using U = std::make_unsigned_t<T>;
    // Negating MIN wraps to MIN, as two's complement does, instead of
    // overflowing.
    if constexpr (op == UnaryOp::kNeg) {
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(U(0) - U(x[i]));
    }
    if constexpr (op == UnaryOp::kRelu) {
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : T(0);
    }
  }
}

template <UnaryOp op>
constexpr double CostPerElement() {
  return op == UnaryOp::kNeg || op == UnaryOp::kRelu ? 1 : 20;
}

template <UnaryOp op, typename T>
weft_status* Compute(weft_kernel_context* ctx, const Tensor& x,
                     const Tensor& y) {
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  ParallelFor(ctx, y.count, 1, CostPerElement<op>(),
              [&](int64_t begin, int64_t end) {
                Run<op, T>(xp + begin, yp + begin, end - begin);
              });
  return nullptr;
}

template <UnaryOp op>
weft_status* UnaryKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  constexpr bool kIntegers = op == UnaryOp::kNeg || op == UnaryOp::kRelu;
  switch (x.dtype) {
    case WEFT_FLOAT32: return Compute<op, float>(ctx, x, y);
    case WEFT_FLOAT64: return Compute<op, double>(ctx, x, y);
    case WEFT_INT32:
      if constexpr (kIntegers) return Compute<op, int32_t>(ctx, x, y);
      break;
    case WEFT_INT64:
      if constexpr (kIntegers) return Compute<op, int64_t>(ctx, x, y);
      break;
    default:
      break;
  }
  return UnsupportedDtype(ctx, x.dtype);
}

// Output 0 is input 0 under the same shape: no copy, whatever the dtype.
weft_status* IdentityKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  return g_host->kernel_forward_input(ctx, 0, 0, x.dims, x.rank);
}

}  // namespace

weft_status* RegisterUnaryKernels(const Registrar& registrar) {
  const auto all_numbers = {int32_t{WEFT_FLOAT32}, int32_t{WEFT_FLOAT64},
                            int32_t{WEFT_INT32}, int32_t{WEFT_INT64}};
  const auto floats = {int32_t{WEFT_FLOAT32}, int32_t{WEFT_FLOAT64}};
  weft_status* s = nullptr;
  if ((s = registrar.Add("Neg", all_numbers,
                         Guarded<UnaryKernel<UnaryOp::kNeg>>)) ||
      (s = registrar.Add("Relu", all_numbers,
                         Guarded<UnaryKernel<UnaryOp::kRelu>>)) ||
      (s = registrar.Add("Exp", floats,
                         Guarded<UnaryKernel<UnaryOp::kExp>>)) ||
      (s = registrar.Add("Log", floats,
                         Guarded<UnaryKernel<UnaryOp::kLog>>)) ||
      (s = registrar.Add("Sigmoid", floats,
                         Guarded<UnaryKernel<UnaryOp::kSigmoid>>)) ||
      (s = registrar.Add("Tanh", floats,
                         Guarded<UnaryKernel<UnaryOp::kTanh>>)) ||
      (s = registrar.Add("Identity", {}, Guarded<IdentityKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
