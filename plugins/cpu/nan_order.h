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

// Whether any of x[0, n) is NaN, scanned on the kernel's intra-op threads.
template <typename T>
bool AnyNaN(const weft_kernel_context* ctx, const T* x, int64_t n) {
  std::atomic<bool> found{false};
  ParallelFor(ctx, n, 1, 1, [&](int64_t begin, int64_t end) {
    bool here = false;
    for (int64_t i = begin; i < end; ++i) here |= x[i] != x[i];
    if (here) found.store(true, std::memory_order_relaxed);
  });
  return found.load(std::memory_order_relaxed);
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_NAN_ORDER_H_
