// exp over a run, exact down to the underflow to zero.
#ifndef WEFT_PLUGINS_CPU_EXACT_EXP_H_
#define WEFT_PLUGINS_CPU_EXACT_EXP_H_

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

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_EXACT_EXP_H_
