// The NaN contract of maxima and minima (runtime/ops/CONVENTIONS.md): NaN
// propagates, as in NumPy and JAX, so Max, Min, Maximum, Minimum, MaxPool
// and ArgMax/ArgMin agree on which element wins.
#ifndef WEFT_PLUGINS_CPU_NAN_ORDER_H_
#define WEFT_PLUGINS_CPU_NAN_ORDER_H_

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "kernel.h"

namespace weft_cpu {

// True when v should replace the best so far: strictly beyond it (so ties
// keep the first), or the first NaN (which nothing then replaces).  Free of
// branches, so loops over it vectorise.
template <bool kMax, typename T>
inline bool Beats(T v, T best) {
  const bool beyond = kMax ? v > best : v < best;
  if constexpr (std::is_floating_point_v<T>) {
    return best == best && (v != v || beyond);
  } else {
    return beyond;
  }
}

// Whether any of x[begin, end) is NaN.  Eight independent accumulators let
// the compiler vectorise the loop at -O2 (one accumulator does not: five
// times slower on data in cache).
template <typename T>
bool AnyNaNIn(const T* x, int64_t begin, int64_t end) {
  constexpr int kLanes = 8;
  unsigned lanes[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lanes[k] |= x[i + k] != x[i + k];
  }
  unsigned found = 0;
  for (int k = 0; k < kLanes; ++k) found |= lanes[k];
  for (; i < end; ++i) found |= x[i] != x[i];
  return found != 0;
}

// Whether any of x[0, n) is NaN, scanned on the kernel's intra-op threads.
template <typename T>
bool AnyNaN(const weft_kernel_context* ctx, const T* x, int64_t n) {
  std::atomic<bool> found{false};
  ParallelFor(ctx, n, 1, 1, [&](int64_t begin, int64_t end) {
    if (AnyNaNIn(x, begin, end)) found.store(true, std::memory_order_relaxed);
  });
  return found.load(std::memory_order_relaxed);
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_NAN_ORDER_H_
