// The arithmetic and index math of Sum, Mean, Prod, Max, Min, ArgMax and
// ArgMin (reduction.cu): which input elements each output element reduces,
// how they combine, and how the total becomes the result.  __host__ __device__, so that test_index_math.cu can check it
// without a GPU.  Included by nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_REDUCE_OPS_H_
#define WEFT_PLUGINS_CUDA_REDUCE_OPS_H_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "weft/plugin.h"

namespace weft_cuda {

// Integers accumulate in 64-bit unsigned arithmetic: it wraps instead of
// overflowing into undefined behaviour, and truncated to 32 bits it equals
// the wrapped int32 sum.
template <typename T>
using Accumulator =
    std::conditional_t<std::is_integral<T>::value, unsigned long long, T>;

template <typename T, bool kMean>
__host__ __device__ __forceinline__ T Finish(Accumulator<T> sum,
                                             int64_t count) {
  if constexpr (!kMean) {
    return static_cast<T>(sum);
  } else if constexpr (std::is_integral<T>::value) {
    // Truncates toward zero, like integer Div.
    return static_cast<T>(static_cast<long long>(sum) / count);
  } else {
    return sum / static_cast<T>(count);
  }
}

// ---- The reductions' arithmetic ----

enum ReduceKind : int { kReduceSum, kReduceMean, kReduceProd, kReduceMax,
                        kReduceMin };

// What a reduction accumulates in.  Sum, Mean and Prod of integers: 64-bit
// unsigned, which wraps, and truncated to T equals T's wrapped result (the
// CPU's same-width unsigned arithmetic).  Max and Min of integers: a 64-bit
// integer of T's signedness (warp shuffles move no narrower types).
// Floats: T.
template <int K, typename T>
using ReduceAccumulator = std::conditional_t<
    !std::is_integral<T>::value, T,
    std::conditional_t<(K == kReduceMax || K == kReduceMin) &&
                           std::is_signed<T>::value,
                       long long, unsigned long long>>;

// The largest value of integer type T, as an accumulator (numeric_limits
// is host-only in device code).
template <typename T, typename A>
__host__ __device__ __forceinline__ A IntegerMax() {
  constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  return static_cast<A>(~0ull >> (64 - kBits + (std::is_signed<T>::value)));
}

// The value that changes nothing: what threads that saw no element hold.
template <int K, typename T>
__host__ __device__ __forceinline__ ReduceAccumulator<K, T> ReduceIdentity() {
  using A = ReduceAccumulator<K, T>;
  if constexpr (K == kReduceProd) {
    return A(1);
  } else if constexpr (K == kReduceMax) {
    if constexpr (std::is_floating_point<T>::value) return -A(INFINITY);
    else if constexpr (std::is_signed<T>::value) return -IntegerMax<T, A>() - 1;
    else return A(0);
  } else if constexpr (K == kReduceMin) {
    if constexpr (std::is_floating_point<T>::value) return A(INFINITY);
    else return IntegerMax<T, A>();
  } else {
    return A(0);
  }
}

// Combines two partial results.  Max and Min propagate NaN: once either
// side is NaN the result is (CONVENTIONS.md), whatever the order the
// partials meet in.
template <int K, typename A>
__host__ __device__ __forceinline__ A ReduceCombine(A a, A b) {
  if constexpr (K == kReduceProd) {
    return a * b;
  } else if constexpr (K == kReduceMax) {
    return a != a ? a : (b > a || b != b) ? b : a;
  } else if constexpr (K == kReduceMin) {
    return a != a ? a : (b < a || b != b) ? b : a;
  } else {
    return a + b;
  }
}

template <int K, typename T>
__host__ __device__ __forceinline__ T ReduceFinish(ReduceAccumulator<K, T> a,
                                                   int64_t count) {
  if constexpr (K == kReduceMean) return Finish<T, true>(a, count);
  else return static_cast<T>(a);
}

// ArgMax (kMax) and ArgMin: whether `candidate`, met after `best`, takes
// its place.  Ties keep the first index; a NaN beats every number and the
// first NaN stays.
template <bool kMax, typename T>
__host__ __device__ __forceinline__ bool ArgBetter(T candidate, T best) {
  if (best != best) return false;
  if (candidate != candidate) return true;
  return kMax ? candidate > best : candidate < best;
}

constexpr int kMaxReduceGroups = 8;

// Kept (output) and reduced index spaces after coalescing, with the input
// stride of each dimension.  Passed to kernels by value.
struct ReduceLayout {
  int32_t kept_rank;
  int32_t reduced_rank;
  int64_t kept_dims[kMaxReduceGroups];
  int64_t kept_strides[kMaxReduceGroups];
  int64_t reduced_dims[kMaxReduceGroups];
  int64_t reduced_strides[kMaxReduceGroups];
  int64_t reduced_count;
};

// The input offset of element `index` of a row-major index space.
__host__ __device__ __forceinline__ int64_t SpaceOffset(
    int64_t index, int32_t rank, const int64_t* dims, const int64_t* strides) {
  int64_t offset = 0;
  for (int32_t d = rank - 1; d >= 0; --d) {
    offset += (index % dims[d]) * strides[d];
    index /= dims[d];
  }
  return offset;
}

// Builds the layout of reducing `x` over the axes flagged in `reduced`
// (non-zero: reduced).  Size-1 dimensions are dropped and neighbours of the
// same kind merge, since row-major order makes them one contiguous
// dimension.  `*innermost_reduced` says whether the fastest-moving input
// dimension is reduced.  Returns false when more than kMaxReduceGroups
// groups of one kind remain.  `x` must have no dimension of size 0.
inline bool CoalesceReduce(const weft_kernel_tensor& x, const int64_t* reduced,
                           ReduceLayout* layout, bool* innermost_reduced) {
  int64_t dims[2 * kMaxReduceGroups];
  bool is_reduced[2 * kMaxReduceGroups];
  int32_t groups = 0;
  for (int32_t d = 0; d < x.rank; ++d) {
    if (x.dims[d] == 1) continue;
    const bool r = reduced[d] != 0;
    if (groups > 0 && is_reduced[groups - 1] == r) {
      dims[groups - 1] *= x.dims[d];
      continue;
    }
    if (groups == 2 * kMaxReduceGroups) return false;
    dims[groups] = x.dims[d];
    is_reduced[groups] = r;
    ++groups;
  }
  *innermost_reduced = groups > 0 && is_reduced[groups - 1];
  int64_t strides[2 * kMaxReduceGroups];
  int64_t stride = 1;
  for (int32_t g = groups - 1; g >= 0; --g) {
    strides[g] = stride;
    stride *= dims[g];
  }
  layout->kept_rank = 0;
  layout->reduced_rank = 0;
  layout->reduced_count = 1;
  for (int32_t g = 0; g < groups; ++g) {
    if (is_reduced[g]) {
      if (layout->reduced_rank == kMaxReduceGroups) return false;
      layout->reduced_dims[layout->reduced_rank] = dims[g];
      layout->reduced_strides[layout->reduced_rank++] = strides[g];
      layout->reduced_count *= dims[g];
    } else {
      if (layout->kept_rank == kMaxReduceGroups) return false;
      layout->kept_dims[layout->kept_rank] = dims[g];
      layout->kept_strides[layout->kept_rank++] = strides[g];
    }
  }
  return true;
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_REDUCE_OPS_H_
