// OpenCL C of the optimizer updates (train.cc): ApplyGradientDescent,
// ApplyMomentum and ApplyAdam.  Each reads the variables' current values
// and writes their new values to fresh outputs; scalar inputs (learning
// rate, momentum, Adam's betas) are one-element buffers.
#include "program.h"

namespace weft_opencl {

const char* const kTrainSource = R"CLC(
/* The CPU plugin's expressions, in its order, without fused multiply-adds. */
#pragma OPENCL FP_CONTRACT OFF

#define WEFT_IN(T, N) __global const T* N, long N##_off
#define WEFT_OUT(T, N) __global T* N, long N##_off
#define WEFT_AT(N) N[N##_off + i]
#define WEFT_SCALAR(N) N[N##_off]

#define WEFT_UPDATES(T, S)                                                  \
/* var - alpha * delta */                                                   \
__kernel void apply_gradient_descent_##S(WEFT_IN(T, var),                  \
    WEFT_IN(T, alpha), WEFT_IN(T, delta), WEFT_OUT(T, new_var), long n) {  \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  WEFT_AT(new_var) = WEFT_AT(var) - WEFT_SCALAR(alpha) * WEFT_AT(delta);    \
}                                                                           \
/* accum' = accum * momentum + grad; var - lr * accum', or with Nesterov   \
 * var - (grad * lr + accum' * momentum * lr). */                           \
__kernel void apply_momentum_##S(WEFT_IN(T, var), WEFT_IN(T, accum),       \
    WEFT_IN(T, lr), WEFT_IN(T, grad), WEFT_IN(T, momentum),                \
    WEFT_OUT(T, new_var), WEFT_OUT(T, new_accum), long n, int nesterov) {   \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  const T rate = WEFT_SCALAR(lr), mu = WEFT_SCALAR(momentum);               \
  const T g = WEFT_AT(grad);                                                \
  const T a = WEFT_AT(accum) * mu + g;                                      \
  WEFT_AT(new_accum) = a;                                                   \
  WEFT_AT(new_var) = nesterov ? WEFT_AT(var) - (g * rate + a * mu * rate)   \
                              : WEFT_AT(var) - rate * a;                    \
}                                                                           \
/* m' = m + (grad - m)(1 - beta1), v' = v + (grad^2 - v)(1 - beta2),       \
 * var - alpha m' / (sqrt(v') + epsilon) with                               \
 * alpha = lr sqrt(1 - beta2^t) / (1 - beta1^t). */                         \
__kernel void apply_adam_##S(WEFT_IN(T, var), WEFT_IN(T, m),               \
    WEFT_IN(T, v), WEFT_IN(T, beta1_power), WEFT_IN(T, beta2_power),       \
    WEFT_IN(T, lr), WEFT_IN(T, beta1), WEFT_IN(T, beta2),                  \
    WEFT_IN(T, epsilon), WEFT_IN(T, grad), WEFT_OUT(T, new_var),           \
    WEFT_OUT(T, new_m), WEFT_OUT(T, new_v), long n) {                       \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  const T b1 = WEFT_SCALAR(beta1), b2 = WEFT_SCALAR(beta2);                 \
  const T alpha = WEFT_SCALAR(lr) * sqrt((T)1 - WEFT_SCALAR(beta2_power)) / \
                  ((T)1 - WEFT_SCALAR(beta1_power));                        \
  const T g = WEFT_AT(grad), m_old = WEFT_AT(m), v_old = WEFT_AT(v);        \
  const T m_new = m_old + (g - m_old) * ((T)1 - b1);                        \
  const T v_new = v_old + (g * g - v_old) * ((T)1 - b2);                    \
  WEFT_AT(new_m) = m_new;                                                   \
  WEFT_AT(new_v) = v_new;                                                   \
  WEFT_AT(new_var) = WEFT_AT(var) -                                         \
      alpha * m_new / (sqrt(v_new) + WEFT_SCALAR(epsilon));                 \
}

WEFT_UPDATES(float, f32)
#ifdef WEFT_FP64
WEFT_UPDATES(double, f64)
#endif
)CLC";

}  // namespace weft_opencl
