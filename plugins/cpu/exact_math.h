// exp and log over a run, exact at the subnormal end of float ranges, where
// Eigen's vectorised forms clamp.
#ifndef WEFT_PLUGINS_CPU_EXACT_MATH_H_
#define WEFT_PLUGINS_CPU_EXACT_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include <Eigen/Core>

namespace weft_cpu {

// Eigen's vectorised exp clamps its argument below at about log(min
// normal), so exp(-inf) would come out as ~1e-38 (float) instead of 0.
// Below that point exp(x) = exp(x/2)^2 is computed in range and rounds to the
// right subnormal or to 0.  Runs without such inputs, the usual case, skip
// the second exp.  y may alias x: Eigen reads each element before writing it.
template <typename T>
void ExactExp(const T* x, T* y, int64_t n) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  Eigen::Map<const Array> in(x, n);
  Eigen::Map<Array> out(y, n);
  const T lowest_normal_result = std::log(std::numeric_limits<T>::min());
  if ((in < lowest_normal_result).any()) {
    out = (in < lowest_normal_result)
              .select((in * T(0.5)).exp().square(), in.exp());
  } else {
    out = in.exp();
  }
}

// Eigen's vectorised log clamps its argument below at the smallest normal,
// so every subnormal x gave log(min normal) (-87.3 in float) instead of
// down to -103.3.  Runs holding a subnormal, rare in practice, go through
// the C library's log, which is exact there; the others pay one compare
// per element.  y may alias x: each element is read before it is written.
template <typename T>
void ExactLog(const T* x, T* y, int64_t n) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  Eigen::Map<const Array> in(x, n);
  Eigen::Map<Array> out(y, n);
  const T min_normal = std::numeric_limits<T>::min();
  if ((in > T(0) && in < min_normal).any()) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
  } else {
    out = in.log();
  }
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_EXACT_MATH_H_
