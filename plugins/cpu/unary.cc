// Element-wise unary ops, and Identity (which forwards its input untouched,
// whatever its dtype).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "elementwise_types.h"
#include "exact_math.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

enum class UnaryOp {
  kNeg, kAbs, kSign, kSquare, kRelu,  // numeric
  kExp, kLog, kSigmoid, kTanh, kSqrt, kRsqrt,  // float
};

constexpr bool TakesIntegers(UnaryOp op) {
  return op == UnaryOp::kNeg || op == UnaryOp::kAbs || op == UnaryOp::kSign ||
         op == UnaryOp::kSquare || op == UnaryOp::kRelu;
}

template <UnaryOp op, typename T>
void Run(const T* x, T* y, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<const Array> in(x, n);
    Eigen::Map<Array> out(y, n);
    if constexpr (op == UnaryOp::kNeg) out = -in;
    if constexpr (op == UnaryOp::kAbs) out = in.abs();
    // Zeros (of either sign) and NaN come back as they are.
    if constexpr (op == UnaryOp::kSign) {
      for (int64_t i = 0; i < n; ++i) {
        y[i] = x[i] > T(0) ? T(1) : x[i] < T(0) ? T(-1) : x[i];
      }
    }
    if constexpr (op == UnaryOp::kSquare) out = in.square();
    if constexpr (op == UnaryOp::kExp) ExactExp(x, y, n);
    if constexpr (op == UnaryOp::kLog) ExactLog(x, y, n);
    // NaN in, NaN out (NaN < 0 is false); a plain max would return
    // whichever operand the instruction favours.
    if constexpr (op == UnaryOp::kRelu) out = (in < T(0)).select(T(0), in);
    // exp(-x) overflows to inf for very negative x, giving exactly 0; no
    // NaN arises on either tail.
    if constexpr (op == UnaryOp::kSigmoid) out = T(1) / (T(1) + (-in).exp());
    if constexpr (op == UnaryOp::kTanh) out = in.tanh();
    // Not Eigen's sqrt: with EIGEN_FAST_MATH (its default) float sqrt is an
    // rsqrt estimate that is off in the last bits and wrong for infinity.
    // The loop compiles to the exact instruction.  Negative inputs give NaN.
    if constexpr (op == UnaryOp::kSqrt) {
      for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
    }
    if constexpr (op == UnaryOp::kRsqrt) {
      for (int64_t i = 0; i < n; ++i) y[i] = T(1) / std::sqrt(x[i]);
    }
  } else {
    // Integers wrap: -MIN and |MIN| are MIN, MIN * MIN is 0.  Unsigned
    // Neg is 2^bits - x; unsigned Relu and Abs are the identity.
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      if constexpr (op == UnaryOp::kNeg) y[i] = WrappingNeg(v);
      if constexpr (op == UnaryOp::kAbs) {
        y[i] = std::is_signed_v<T> && v < T(0) ? WrappingNeg(v) : v;
      }
      if constexpr (op == UnaryOp::kSign) {
        y[i] = static_cast<T>((v > T(0)) - (v < T(0)));
      }
      if constexpr (op == UnaryOp::kSquare) y[i] = WrappingMul(v, v);
      if constexpr (op == UnaryOp::kRelu) y[i] = v > T(0) ? v : T(0);
    }
  }
}

template <UnaryOp op>
constexpr double CostPerElement() {
  return TakesIntegers(op) ? 1 : 20;
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
constexpr unsigned kDtypes = TakesIntegers(op) ? kNumericDtypes : kFloatDtypes;

template <UnaryOp op>
weft_status* UnaryKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  Tensor y;
  // Over the input where the host allows it: element-wise, and the dtype is
  // checked before anything is written.
  if (weft_status* s =
          AllocateOutputOver(ctx, 0, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  return DispatchDtype<kDtypes<op>>(ctx, x.dtype, [&](auto tag) {
    return Compute<op, decltype(tag)>(ctx, x, y);
  });
}

// UnaryKernel through compute_described (host 1.8): y was made by the host,
// over x where it could.
template <UnaryOp op>
weft_status* UnaryDescribed(weft_kernel_context* ctx,
                            const weft_kernel_tensor* inputs,
                            int32_t num_inputs,
                            const weft_kernel_tensor* outputs,
                            int32_t num_outputs) {
  Tensor x, y;
  if (weft_status* s = ReadDescribed(ctx, inputs, num_inputs, outputs,
                                     num_outputs, &x, 1, &y, 1))
    return s;
  if (!IsOutput(y, x.dtype, x.dims, x.rank))
    return DescribedOutputMismatch(ctx, y, x.dtype, x.dims, x.rank);
  if (y.count == 0) return nullptr;
  return DispatchDtype<kDtypes<op>>(ctx, x.dtype, [&](auto tag) {
    return Compute<op, decltype(tag)>(ctx, x, y);
  });
}

// Output 0 is input 0 under the same shape: no copy, whatever the dtype.
weft_status* IdentityKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  return g_host->kernel_forward_input(ctx, 0, 0, x.dims, x.rank);
}

template <UnaryOp op>
weft_status* Register(const Registrar& registrar, const char* name) {
  return RegisterForDtypes(registrar, name, kDtypes<op>,
                           Guarded<UnaryKernel<op>>,
                           GuardedDescribed<UnaryDescribed<op>>, 1u);
}

}  // namespace

weft_status* RegisterUnaryKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = Register<UnaryOp::kNeg>(registrar, "Neg")) ||
      (s = Register<UnaryOp::kAbs>(registrar, "Abs")) ||
      (s = Register<UnaryOp::kSign>(registrar, "Sign")) ||
      (s = Register<UnaryOp::kSquare>(registrar, "Square")) ||
      (s = Register<UnaryOp::kRelu>(registrar, "Relu")) ||
      (s = Register<UnaryOp::kExp>(registrar, "Exp")) ||
      (s = Register<UnaryOp::kLog>(registrar, "Log")) ||
      (s = Register<UnaryOp::kSigmoid>(registrar, "Sigmoid")) ||
      (s = Register<UnaryOp::kTanh>(registrar, "Tanh")) ||
      (s = Register<UnaryOp::kSqrt>(registrar, "Sqrt")) ||
      (s = Register<UnaryOp::kRsqrt>(registrar, "Rsqrt")) ||
      (s = registrar.Add("Identity", {}, Guarded<IdentityKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
