// The per-element arithmetic and the broadcast index math of
// elementwise.cu.  Everything here is __host__ __device__ so that
// test_index_math.cu can check it on a machine without a GPU.  Included by
// nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_ELEMENTWISE_OPS_H_
#define WEFT_PLUGINS_CUDA_ELEMENTWISE_OPS_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "weft/plugin.h"

#define WEFT_CUDA_HD __host__ __device__ __forceinline__

namespace weft_cuda {

// The order is that of kBinaryNames in elementwise.cu.  kRealDiv is kDiv on
// float types; kGreater.. kLogicalOr give bool (one byte, 0 or 1).
enum BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kRealDiv, kFloorDiv, kFloorMod, kPow, kMaximum,
  kMinimum, kGreater, kGreaterEqual, kLess, kLessEqual, kEqual, kNotEqual,
  kLogicalAnd, kLogicalOr,
  kBinaryOpCount
};
// The order is that of kUnaryNames in elementwise.cu.
enum UnaryOp : int {
  kNeg, kExp, kLog, kRelu, kSigmoid, kTanh, kAbs, kSign, kSquare, kSqrt,
  kRsqrt,
  kUnaryOpCount
};

// Whether a unary op takes integers too (the others are float-only).
constexpr bool UnaryTakesIntegers(int op) {
  return op == kNeg || op == kRelu || op == kAbs || op == kSign ||
         op == kSquare;
}

// Weft's bool: one byte, any nonzero byte true.  A struct rather than C++
// bool, whose other byte values are undefined.
struct BoolByte {
  uint8_t bits;
};

constexpr bool IsBoolResult(int op) { return op >= kGreater; }

// The element type an op writes for inputs of type T.
template <int Op, typename T>
using BinaryResult = std::conditional_t<IsBoolResult(Op), uint8_t, T>;

// Where a kernel reports an input it has no value for (an integer zero
// divisor or negative exponent, a Gather index out of range); `word` is
// NULL for every launch that cannot fail.  See error_slot.h.
struct DivisionCheck {
  unsigned int* word;
  unsigned int launch_id;
};

// The first failing launch of the stream claims the word; launches run in
// stream order, so no atomics are needed.
WEFT_CUDA_HD void ReportFailure(DivisionCheck check) {
  volatile unsigned int* word = check.word;
  if (*word == 0) *word = check.launch_id;
}

// Unsigned arithmetic at least as wide as int: narrower types would be
// promoted to (signed) int, where uint16 65535 * 65535 overflows.
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned int)),
                                    unsigned int, std::make_unsigned_t<T>>;

// Integer powers by repeated squaring modulo 2^64, truncated once: the same
// bits as wrapping at every step.  `exponent` >= 0.
template <typename T>
WEFT_CUDA_HD T WrappingPow(T base, T exponent) {
  uint64_t result = 1;
  uint64_t square = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= square;
    square *= square;
  }
  return static_cast<T>(result);
}

template <typename T>
WEFT_CUDA_HD T FloatFloor(T x) {
  if constexpr (std::is_same<T, float>::value) return floorf(x);
  else return floor(x);
}

// Python's remainder for floats: the sign of the divisor, 0 taking it too;
// NaN (b == 0, a infinite) compares false and stays NaN.
template <typename T>
WEFT_CUDA_HD T FloatFloorMod(T a, T b) {
  if constexpr (std::is_same<T, float>::value) {
    const float r = fmodf(a, b);
    if (r == 0) return copysignf(0.0f, b);
    return (r < 0) != (b < 0) ? r + b : r;
  } else {
    const double r = fmod(a, b);
    if (r == 0) return copysign(0.0, b);
    return (r < 0) != (b < 0) ? r + b : r;
  }
}

// Integer division ops; `y` != 0 and, for signed types, `y` != -1.
template <int Op, typename T>
WEFT_CUDA_HD T IntegerQuotient(T x, T y) {
  const T q = static_cast<T>(x / y);
  const T r = static_cast<T>(x % y);
  // Truncation rounded toward zero; a negative inexact quotient needs one
  // step down (|y| >= 2 here, so neither step overflows).
  const bool adjust = std::is_signed<T>::value && r != 0 && (r < 0) != (y < 0);
  if constexpr (Op == kFloorDiv) return adjust ? static_cast<T>(q - 1) : q;
  else if constexpr (Op == kFloorMod) return adjust ? static_cast<T>(r + y) : r;
  else return q;
}

template <int Op, typename T>
WEFT_CUDA_HD BinaryResult<Op, T> ApplyBinary(T x, T y, DivisionCheck check) {
  if constexpr (std::is_same<T, BoolByte>::value) {
    const bool a = x.bits != 0, b = y.bits != 0;
    if constexpr (Op == kEqual) return a == b;
    if constexpr (Op == kNotEqual) return a != b;
    if constexpr (Op == kLogicalAnd) return a && b;
    if constexpr (Op == kLogicalOr) return a || b;
  } else {
    if constexpr (Op == kGreater) return x > y;
    if constexpr (Op == kGreaterEqual) return x >= y;
    if constexpr (Op == kLess) return x < y;
    if constexpr (Op == kLessEqual) return x <= y;
    if constexpr (Op == kEqual) return x == y;
    if constexpr (Op == kNotEqual) return x != y;
    // NaN wins in Maximum and Minimum (NumPy): a comparison alone would
    // return whichever operand happened to be second.
    if constexpr (Op == kMaximum) return (x > y || x != x) ? x : y;
    if constexpr (Op == kMinimum) return (x < y || x != x) ? x : y;
    if constexpr (std::is_floating_point<T>::value) {
      if constexpr (Op == kAdd) return x + y;
      if constexpr (Op == kSub) return x - y;
      if constexpr (Op == kMul) return x * y;
      if constexpr (Op == kDiv || Op == kRealDiv) return x / y;
      // TensorFlow's floor(x / y): the quotient is rounded first.
      if constexpr (Op == kFloorDiv) return FloatFloor(x / y);
      if constexpr (Op == kFloorMod) return FloatFloorMod(x, y);
      if constexpr (Op == kPow) {
        if constexpr (std::is_same<T, float>::value) return powf(x, y);
        else return pow(x, y);
      }
    } else {
      // Signed overflow is undefined behaviour, unsigned arithmetic wraps:
      // computing in unsigned gives the two's-complement results the op
      // conventions ask for.
      using U = WrapType<T>;
      if constexpr (Op == kAdd) return static_cast<T>(U(x) + U(y));
      if constexpr (Op == kSub) return static_cast<T>(U(x) - U(y));
      if constexpr (Op == kMul) return static_cast<T>(U(x) * U(y));
      if constexpr (Op == kPow) {
        // x^-n is a fraction an integer cannot hold.
        if (std::is_signed<T>::value && y < T(0)) {
          ReportFailure(check);
          return 0;
        }
        return WrappingPow(x, y);
      }
      if constexpr (Op == kDiv || Op == kFloorDiv || Op == kFloorMod) {
        if (y == T(0)) {
          ReportFailure(check);
          return 0;
        }
        if constexpr (std::is_signed<T>::value) {
          // MIN / -1 overflows (and MIN % -1 is undefined although its
          // value is 0): the quotient wraps to MIN.
          if (y == T(-1)) {
            return Op == kFloorMod ? T(0) : static_cast<T>(U(0) - U(x));
          }
        }
        // C++ truncates toward zero, as Div's conventions say.
        return IntegerQuotient<Op>(x, y);
      }
    }
  }
}

template <int Op, typename T>
WEFT_CUDA_HD T ApplyUnary(T x) {
  constexpr bool kSingle = std::is_same<T, float>::value;
  if constexpr (Op == kNeg) {
    if constexpr (std::is_integral<T>::value) {
      using U = WrapType<T>;
      return static_cast<T>(U(0) - U(x));  // -MIN wraps to MIN
    } else {
      return -x;
    }
  }
  // NaN stays NaN rather than becoming 0.
  if constexpr (Op == kRelu) return (x > T(0) || x != x) ? x : T(0);
  if constexpr (Op == kAbs) {
    if constexpr (std::is_floating_point<T>::value) {
      if constexpr (kSingle) return fabsf(x); else return fabs(x);
    } else if constexpr (std::is_signed<T>::value) {
      using U = WrapType<T>;
      return x < T(0) ? static_cast<T>(U(0) - U(x)) : x;  // |MIN| is MIN
    } else {
      return x;
    }
  }
  // Zeros (of either sign) and NaN come back as they are.
  if constexpr (Op == kSign) {
    if constexpr (std::is_floating_point<T>::value) {
      return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
    } else if constexpr (std::is_signed<T>::value) {
      return static_cast<T>((x > T(0)) - (x < T(0)));
    } else {
      return static_cast<T>(x != T(0));
    }
  }
  if constexpr (Op == kSquare) {
    if constexpr (std::is_floating_point<T>::value) {
      return x * x;
    } else {
      using U = WrapType<T>;
      return static_cast<T>(U(x) * U(x));
    }
  }
  // The correctly rounded square root (nvcc's default -prec-sqrt=true) and
  // an IEEE division, as the CPU's 1 / sqrt(x); negatives give NaN.
  if constexpr (Op == kSqrt) {
    if constexpr (kSingle) return sqrtf(x); else return sqrt(x);
  }
  if constexpr (Op == kRsqrt) {
    if constexpr (kSingle) return 1.0f / sqrtf(x); else return 1.0 / sqrt(x);
  }
  if constexpr (Op == kExp) {
    if constexpr (kSingle) return expf(x); else return exp(x);
  }
  if constexpr (Op == kLog) {
    if constexpr (kSingle) return logf(x); else return log(x);
  }
  if constexpr (Op == kSigmoid) {
    // exp(-x) overflows to inf for very negative x, giving exactly 0.
    if constexpr (kSingle) return 1.0f / (1.0f + expf(-x));
    else return 1.0 / (1.0 + exp(-x));
  }
  if constexpr (Op == kTanh) {
    if constexpr (kSingle) return tanhf(x); else return tanh(x);
  }
}

// ---- Cast ----

// Cast converts through a value type: float for the 16-bit floats (every
// half and bfloat16 is exactly a float), bool for BoolByte, the type itself
// otherwise; then narrows to the destination (the CPU plugin's cast.cc).
WEFT_CUDA_HD float Widen(__half v) { return __half2float(v); }
WEFT_CUDA_HD float Widen(__nv_bfloat16 v) { return __bfloat162float(v); }
WEFT_CUDA_HD bool Widen(BoolByte v) { return v.bits != 0; }
template <typename T>
WEFT_CUDA_HD T Widen(T v) {
  return v;
}

template <typename To, typename V>
WEFT_CUDA_HD To Narrow(V v) {
  if constexpr (std::is_same<To, BoolByte>::value) {
    return BoolByte{static_cast<uint8_t>(v != V(0) ? 1 : 0)};
  } else if constexpr (std::is_same<To, __half>::value) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same<To, __nv_bfloat16>::value) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_integral<To>::value &&
                       std::is_floating_point<V>::value) {
    // Truncate toward zero; NaN and values outside To's range give 0 (a C++
    // conversion would be undefined there).  The bounds, 0 or -2^k and
    // 2^k, are exact doubles.
    constexpr int kBits = 8 * static_cast<int>(sizeof(To)) -
                          (std::is_signed<To>::value ? 1 : 0);
    constexpr double kHigh = 2.0 * static_cast<double>(1ull << (kBits - 1));
    constexpr double kLow = std::is_signed<To>::value ? -kHigh : 0.0;
    const double t = trunc(static_cast<double>(v));
    return (t >= kLow && t < kHigh) ? static_cast<To>(t) : To(0);
  } else {
    // Integer narrowing is modular, the two's-complement behaviour CUDA and
    // every host compiler implement.
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
WEFT_CUDA_HD To Convert(From x) {
  return Narrow<To>(Widen(x));
}

// Enough for any two shapes of rank <= 8, and for most higher ranks, since
// coalescing merges every run of dimensions broadcast the same way.
constexpr int kMaxBroadcastRank = 8;

// Passed to kernels by value: it lives in the parameter space, with no
// device allocation or copy per launch.
struct BroadcastLayout {
  int32_t rank;
  int64_t dims[kMaxBroadcastRank];
  int64_t x_strides[kMaxBroadcastRank];  // 0 where x is broadcast
  int64_t y_strides[kMaxBroadcastRank];
};

// Dimension `d` of `tensor` once its shape is right-aligned to `rank`.
inline int64_t AlignedDim(const weft_kernel_tensor& tensor, int32_t rank,
                          int32_t d) {
  const int32_t i = d - (rank - tensor.rank);
  return i < 0 ? 1 : tensor.dims[i];
}

// The coalesced broadcast of N operands to one output: what Select (three
// operands) runs on, and the two-operand BroadcastLayout is built from.
template <int N>
struct OperandsLayout {
  int32_t rank;
  int64_t dims[kMaxBroadcastRank];
  int64_t strides[N][kMaxBroadcastRank];  // 0 where the operand is broadcast
};

// Builds the coalesced layout of a broadcast to `out_dims`: dimensions of
// size 1 in the output are dropped, and neighbours that every operand
// treats alike (present, or broadcast, in both) merge into one.  Returns
// false when more than kMaxBroadcastRank dimensions remain.
template <int N>
bool CoalesceOperands(const weft_kernel_tensor* const* operands,
                      const int64_t* out_dims, int32_t rank,
                      OperandsLayout<N>* layout) {
  bool full[N][kMaxBroadcastRank];
  int32_t groups = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (out_dims[d] == 1) continue;
    bool present[N];
    bool same = groups > 0;
    for (int k = 0; k < N; ++k) {
      present[k] = AlignedDim(*operands[k], rank, d) != 1;
      same = same && full[k][groups - 1] == present[k];
    }
    if (same) {
      layout->dims[groups - 1] *= out_dims[d];
      continue;
    }
    if (groups == kMaxBroadcastRank) return false;
    layout->dims[groups] = out_dims[d];
    for (int k = 0; k < N; ++k) full[k][groups] = present[k];
    ++groups;
  }
  layout->rank = groups;
  for (int k = 0; k < N; ++k) {
    int64_t stride = 1;
    for (int32_t g = groups - 1; g >= 0; --g) {
      layout->strides[k][g] = full[k][g] ? stride : 0;
      if (full[k][g]) stride *= layout->dims[g];
    }
  }
  return true;
}

// The two-operand case, as the binary kernels take it.
inline bool CoalesceBroadcast(const weft_kernel_tensor& x,
                              const weft_kernel_tensor& y,
                              const int64_t* out_dims, int32_t rank,
                              BroadcastLayout* layout) {
  const weft_kernel_tensor* operands[2] = {&x, &y};
  OperandsLayout<2> both;
  if (!CoalesceOperands<2>(operands, out_dims, rank, &both)) return false;
  layout->rank = both.rank;
  for (int32_t g = 0; g < both.rank; ++g) {
    layout->dims[g] = both.dims[g];
    layout->x_strides[g] = both.strides[0][g];
    layout->y_strides[g] = both.strides[1][g];
  }
  return true;
}

// The element of each operand that output element `i` reads.
template <int N>
WEFT_CUDA_HD void OperandOffsets(const OperandsLayout<N>& layout, int64_t i,
                                 int64_t* offsets) {
  for (int k = 0; k < N; ++k) offsets[k] = 0;
  int64_t rest = i;
  for (int d = layout.rank - 1; d >= 0; --d) {
    const int64_t coordinate = rest % layout.dims[d];
    rest /= layout.dims[d];
    for (int k = 0; k < N; ++k) offsets[k] += coordinate * layout.strides[k][d];
  }
}

// The elements of x and y that output element `i` combines.
WEFT_CUDA_HD void BroadcastOffsets(const BroadcastLayout& layout, int64_t i,
                                   int64_t* x_offset, int64_t* y_offset) {
  int64_t rest = i, xo = 0, yo = 0;
  for (int d = layout.rank - 1; d >= 0; --d) {
    const int64_t coordinate = rest % layout.dims[d];
    rest /= layout.dims[d];
    xo += coordinate * layout.x_strides[d];
    yo += coordinate * layout.y_strides[d];
  }
  *x_offset = xo;
  *y_offset = yo;
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_ELEMENTWISE_OPS_H_
