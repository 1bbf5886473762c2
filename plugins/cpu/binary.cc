// Broadcasting arithmetic: Add, Sub, Mul, Div, RealDiv, FloorDiv, FloorMod,
// Pow, Maximum, Minimum.
//
// Integer semantics (runtime/ops/CONVENTIONS.md) never touch undefined
// behaviour: results wrap modulo 2^bits, MIN / -1 wraps to MIN, and the
// inputs an integer op has no value for (a zero divisor, a negative
// exponent) are refused with INVALID_ARGUMENT before anything is written.
// Floats follow IEEE: x / 0 is ±inf or NaN, never an error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "elementwise_binary.h"
#include "elementwise_types.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

WEFT_CPU_COLD weft_status* ZeroDivisor(const weft_kernel_context* ctx,
                                       int32_t dtype) {
  return NodeError(ctx, WEFT_INVALID_ARGUMENT, "integer division by zero (%s)",
                   DtypeName(dtype));
}

// Integer division and remainder have no value for a zero divisor.
struct IntegerDivisorCheck : BinaryOpDefaults {
  template <typename T>
  static weft_status* Check(const weft_kernel_context* ctx, const Tensor& y) {
    if constexpr (!kIsFloat<T>) {
      const T* p = y.data<T>();
      if (std::find(p, p + y.count, T(0)) != p + y.count) {
        return ZeroDivisor(ctx, y.dtype);
      }
    }
    return nullptr;
  }
};

struct AddOp : BinaryOpDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  static constexpr bool kVector = true;
  template <typename A, typename B>
  static auto Vector(const A& a, const B& b) {
    return a + b;
  }
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a + b;
    else return WrappingAdd(a, b);
  }
};

struct SubOp : BinaryOpDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  static constexpr bool kVector = true;
  template <typename A, typename B>
  static auto Vector(const A& a, const B& b) {
    return a - b;
  }
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a - b;
    else return WrappingSub(a, b);
  }
};

struct MulOp : BinaryOpDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  static constexpr bool kVector = true;
  template <typename A, typename B>
  static auto Vector(const A& a, const B& b) {
    return a * b;
  }
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a * b;
    else return WrappingMul(a, b);
  }
};

// Truncating integer division.  RealDiv is this op on float dtypes only.
struct DivOp : IntegerDivisorCheck {
  static constexpr unsigned kDtypes = kNumericDtypes;
  static constexpr bool kVector = true;
  static constexpr double kCost = 8;
  template <typename A, typename B>
  static auto Vector(const A& a, const B& b) {
    return a / b;
  }
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T> || std::is_unsigned_v<T>) {
      return static_cast<T>(a / b);
    } else {
      // MIN / -1 overflows; negation wraps it to MIN instead.
      return b == -1 ? WrappingNeg(a) : static_cast<T>(a / b);
    }
  }
};

struct RealDivOp : DivOp {
  static constexpr unsigned kDtypes = kFloatDtypes;
};

// Floor of the quotient.  For floats that is floor(a / b), TensorFlow's
// definition: the quotient is rounded first, so 1 // 0.1 is 10 here where
// Python's divmod-exact algorithm gives 9.
struct FloorDivOp : IntegerDivisorCheck {
  static constexpr unsigned kDtypes = kEveryNumericDtype;
  static constexpr double kCost = 10;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return std::floor(a / b);
    } else if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(a / b);
    } else {
      if (b == -1) return WrappingNeg(a);
      const T q = static_cast<T>(a / b);
      // Truncation rounded toward zero; a negative inexact quotient needs
      // one step down.  |b| >= 2 here, so q - 1 cannot overflow.
      return (a % b != 0 && (a < 0) != (b < 0)) ? static_cast<T>(q - 1) : q;
    }
  }
};

// The remainder of FloorDiv: it has the sign of the divisor (Python).
struct FloorModOp : IntegerDivisorCheck {
  static constexpr unsigned kDtypes = kEveryNumericDtype;
  static constexpr double kCost = 10;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      T r = std::fmod(a, b);
      if (r == 0) return std::copysign(T(0), b);  // 0 takes b's sign too
      // NaN (b == 0, a infinite) compares false and stays NaN.
      return (r < 0) != (b < 0) ? r + b : r;
    } else if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(a % b);
    } else {
      // MIN % -1 is undefined in C++ although its value is 0.
      if (b == -1) return T(0);
      const T r = static_cast<T>(a % b);
      // r and b have opposite signs here, so r + b cannot overflow.
      return r != 0 && (r < 0) != (b < 0) ? static_cast<T>(r + b) : r;
    }
  }
};

// Integer powers by repeated squaring, wrapping like Mul: reduction modulo
// 2^64 commutes with multiplication, so computing in uint64_t and
// truncating once gives the same bits as wrapping at every step.
template <typename T>
T IntegerPow(T base, T exponent) {
  uint64_t result = 1;
  uint64_t square = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= square;
    square *= square;
  }
  return static_cast<T>(result);
}

struct PowOp : BinaryOpDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  static constexpr double kCost = 40;
  // x^-n is a fraction an integer cannot hold.
  template <typename T>
  static weft_status* Check(const weft_kernel_context* ctx, const Tensor& y) {
    if constexpr (std::is_signed_v<T> && !kIsFloat<T>) {
      const T* p = y.data<T>();
      const T* bad = std::find_if(p, p + y.count, [](T e) { return e < 0; });
      if (bad != p + y.count) {
        return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                         "integer Pow with a negative exponent (%lld, %s)",
                         static_cast<long long>(*bad), DtypeName(y.dtype));
      }
    }
    return nullptr;
  }
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) return std::pow(a, b);
    else return IntegerPow(a, b);
  }
};

// NaN wins in Maximum and Minimum, as in NumPy: a comparison alone would
// return whichever operand happened to be second.
struct MaximumOp : BinaryOpDefaults {
  static constexpr unsigned kDtypes = kEveryNumericDtype;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a > b || std::isnan(a) ? a : b;
    else return a > b ? a : b;
  }
};

struct MinimumOp : BinaryOpDefaults {
  static constexpr unsigned kDtypes = kEveryNumericDtype;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a < b || std::isnan(a) ? a : b;
    else return a < b ? a : b;
  }
};

template <typename Op>
weft_status* Register(const Registrar& registrar, const char* name) {
  return RegisterForDtypes(registrar, name, Op::kDtypes,
                           Guarded<BinaryKernel<Op>>,
                           GuardedDescribed<BinaryDescribed<Op>>,
                           kBinaryOverwrites<Op>);
}

}  // namespace

weft_status* RegisterBinaryKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = Register<AddOp>(registrar, "Add")) ||
      (s = Register<SubOp>(registrar, "Sub")) ||
      (s = Register<MulOp>(registrar, "Mul")) ||
      (s = Register<DivOp>(registrar, "Div")) ||
      (s = Register<RealDivOp>(registrar, "RealDiv")) ||
      (s = Register<FloorDivOp>(registrar, "FloorDiv")) ||
      (s = Register<FloorModOp>(registrar, "FloorMod")) ||
      (s = Register<PowOp>(registrar, "Pow")) ||
      (s = Register<MaximumOp>(registrar, "Maximum")) ||
      (s = Register<MinimumOp>(registrar, "Minimum"))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
