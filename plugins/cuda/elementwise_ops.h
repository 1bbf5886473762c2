// The per-element arithmetic and the broadcast index math of
// elementwise.cu.  Everything here is __host__ __device__ so that
// test_index_math.cu can check it on a machine without a GPU.  Included by
// nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_ELEMENTWISE_OPS_H_
#define WEFT_PLUGINS_CUDA_ELEMENTWISE_OPS_H_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "weft/plugin.h"

#define WEFT_CUDA_HD __host__ __device__ __forceinline__

namespace weft_cuda {

enum BinaryOp : int { kAdd, kSub, kMul, kDiv };
enum UnaryOp : int { kNeg, kExp, kLog, kRelu, kSigmoid, kTanh };

// Where an integer Div reports a zero divisor; `word` is NULL for every
// other launch.  See error_slot.h.
struct DivisionCheck {
  unsigned int* word;
  unsigned int launch_id;
};

template <int Op, typename T>
WEFT_CUDA_HD T ApplyBinary(T x, T y, DivisionCheck check) {
  if constexpr (std::is_floating_point<T>::value) {
    if constexpr (Op == kAdd) return x + y;
    if constexpr (Op == kSub) return x - y;
    if constexpr (Op == kMul) return x * y;
    if constexpr (Op == kDiv) return x / y;
  } else {
    // Signed overflow is undefined behaviour, unsigned arithmetic wraps:
    // computing in unsigned gives the two's-complement results the op
    // conventions ask for.
    using U = std::make_unsigned_t<T>;
    if constexpr (Op == kAdd) return static_cast<T>(U(x) + U(y));
    if constexpr (Op == kSub) return static_cast<T>(U(x) - U(y));
    if constexpr (Op == kMul) return static_cast<T>(U(x) * U(y));
    if constexpr (Op == kDiv) {
      if (y == 0) {
        // The first failing launch of the stream claims the word; launches
        // run in stream order, so no atomics are needed.
        volatile unsigned int* word = check.word;
        if (*word == 0) *word = check.launch_id;
        return 0;
      }
      // The one quotient that overflows, MIN / -1, wraps to MIN.
      if (y == -1) return static_cast<T>(U(0) - U(x));
      return x / y;  // C++ truncates toward zero, as the conventions say
    }
  }
}

template <int Op, typename T>
WEFT_CUDA_HD T ApplyUnary(T x) {
  constexpr bool kSingle = std::is_same<T, float>::value;
  if constexpr (Op == kNeg) {
    if constexpr (std::is_integral<T>::value) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(U(0) - U(x));  // -MIN wraps to MIN
    } else {
      return -x;
    }
  }
  // NaN stays NaN rather than becoming 0.
  if constexpr (Op == kRelu) return (x > T(0) || x != x) ? x : T(0);
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

template <typename From, typename To>
WEFT_CUDA_HD To Convert(From x) {
  if constexpr (std::is_floating_point<From>::value &&
                std::is_integral<To>::value) {
    // Truncate toward zero; NaN and values outside To's range give 0 (a C++
    // conversion would be undefined there).  2^31 and 2^63 are exact
    // doubles, so the bounds are exact too.
    constexpr double kLimit =
        sizeof(To) == 4 ? 2147483648.0 : 9223372036854775808.0;
    const double t = trunc(static_cast<double>(x));
    return (t >= -kLimit && t < kLimit) ? static_cast<To>(t) : To(0);
  } else {
    // Integer narrowing is modular, the two's-complement behaviour CUDA and
    // every host compiler implement.
    return static_cast<To>(x);
  }
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

// Builds the coalesced layout of a broadcast to `out_dims`: dimensions of
// size 1 in the output are dropped, and neighbours that both operands treat
// alike (both present, or one broadcast in both) merge into one.  Returns
// false when more than kMaxBroadcastRank dimensions remain.
inline bool CoalesceBroadcast(const weft_kernel_tensor& x,
                              const weft_kernel_tensor& y,
                              const int64_t* out_dims, int32_t rank,
                              BroadcastLayout* layout) {
  bool x_full[kMaxBroadcastRank], y_full[kMaxBroadcastRank];
  int32_t groups = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (out_dims[d] == 1) continue;
    const bool xf = AlignedDim(x, rank, d) != 1;
    const bool yf = AlignedDim(y, rank, d) != 1;
    if (groups > 0 && x_full[groups - 1] == xf && y_full[groups - 1] == yf) {
      layout->dims[groups - 1] *= out_dims[d];
      continue;
    }
    if (groups == kMaxBroadcastRank) return false;
    layout->dims[groups] = out_dims[d];
    x_full[groups] = xf;
    y_full[groups] = yf;
    ++groups;
  }
  layout->rank = groups;
  int64_t x_stride = 1, y_stride = 1;
  for (int32_t g = groups - 1; g >= 0; --g) {
    layout->x_strides[g] = x_full[g] ? x_stride : 0;
    layout->y_strides[g] = y_full[g] ? y_stride : 0;
    if (x_full[g]) x_stride *= layout->dims[g];
    if (y_full[g]) y_stride *= layout->dims[g];
  }
  return true;
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
