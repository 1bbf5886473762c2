// OpenCL C of the row-wise nn kernels: Softmax, LogSoftmax and the softmax
// cross-entropy losses.  One work-group per row (a power of two, at most
// 256 items), which combine through local memory.
#include "program.h"

namespace weft_opencl {

const char* const kNnSource = R"CLC(
/* The group's max (NaN-blind, as the CPU's) and sum of `value`; every item
 * gets the result.  `scratch` holds one element per item. */
#define WEFT_GROUP_REDUCE(NAME, T, S, COMBINE)                              \
inline T weft_group_##NAME##_##S(__local T* scratch, T value) {             \
  const int lid = get_local_id(0), size = get_local_size(0);                \
  scratch[lid] = value;                                                     \
  barrier(CLK_LOCAL_MEM_FENCE);                                             \
  for (int s = size / 2; s > 0; s >>= 1) {                                  \
    if (lid < s) scratch[lid] = COMBINE(scratch[lid], scratch[lid + s]);    \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
  }                                                                         \
  const T result = scratch[0];                                              \
  barrier(CLK_LOCAL_MEM_FENCE);                                             \
  return result;                                                            \
}
#define WEFT_GREATER_OF(a, b) ((b) > (a) ? (b) : (a))
#define WEFT_SUM_OF(a, b) ((a) + (b))

#define WEFT_ROW_HELPERS(T, S)                                              \
WEFT_GROUP_REDUCE(max, T, S, WEFT_GREATER_OF)                               \
WEFT_GROUP_REDUCE(sum, T, S, WEFT_SUM_OF)                                   \
/* The row's max and sum of exp(x - max). */                                \
inline void weft_row_stats_##S(__local T* scratch, __global const T* xr,    \
                               long width, T* max_out, T* sum_out) {        \
  const int lid = get_local_id(0), size = get_local_size(0);                \
  T m = (T)(-INFINITY);                                                     \
  for (long k = lid; k < width; k += size) m = xr[k] > m ? xr[k] : m;       \
  m = weft_group_max_##S(scratch, m);                                       \
  T sum = (T)0;                                                             \
  for (long k = lid; k < width; k += size) sum += exp(xr[k] - m);           \
  *max_out = m;                                                             \
  *sum_out = weft_group_sum_##S(scratch, sum);                              \
}

/* Softmax: exp(x - max) / sum.  LogSoftmax: (x - max) - log(sum); the
 * shift keeps the sum in [1, width], so the log meets no zero. */
#define WEFT_SOFTMAX(T, S)                                                  \
__kernel void softmax_##S(__global const T* x, long x_off, __global T* y,   \
                          long y_off, long width, int log_softmax) {        \
  __local T scratch[256];                                                   \
  const long row = get_group_id(0);                                         \
  const int lid = get_local_id(0), size = get_local_size(0);                \
  __global const T* xr = x + x_off + row * width;                           \
  __global T* yr = y + y_off + row * width;                                 \
  T m, sum;                                                                 \
  weft_row_stats_##S(scratch, xr, width, &m, &sum);                         \
  if (log_softmax) {                                                        \
    const T log_sum = log(sum);                                             \
    for (long k = lid; k < width; k += size) yr[k] = (xr[k] - m) - log_sum; \
  } else {                                                                  \
    const T scale = (T)1 / sum;                                             \
    for (long k = lid; k < width; k += size) yr[k] = exp(xr[k] - m) * scale;\
  }                                                                         \
}

/* Dense labels: loss = sum(labels * (lse - (x - max))), computed from x
 * rather than from log(softmax), which would turn an underflowed
 * probability into an infinite loss; backprop = softmax(x) - labels. */
#define WEFT_XENT(T, S)                                                     \
__kernel void xent_##S(__global const T* x, long x_off,                     \
                       __global const T* labels, long l_off,                \
                       __global T* loss, long loss_off,                     \
                       __global T* grad, long grad_off, long width) {       \
  __local T scratch[256];                                                   \
  const long row = get_group_id(0);                                         \
  const int lid = get_local_id(0), size = get_local_size(0);                \
  __global const T* xr = x + x_off + row * width;                           \
  __global const T* lr = labels + l_off + row * width;                      \
  __global T* gr = grad + grad_off + row * width;                           \
  T m, sum;                                                                 \
  weft_row_stats_##S(scratch, xr, width, &m, &sum);                         \
  const T lse = log(sum), scale = (T)1 / sum;                               \
  T partial = (T)0;                                                         \
  for (long k = lid; k < width; k += size) {                                \
    partial += lr[k] * (lse - (xr[k] - m));                                 \
    gr[k] = exp(xr[k] - m) * scale - lr[k];                                 \
  }                                                                         \
  partial = weft_group_sum_##S(scratch, partial);                           \
  if (lid == 0) loss[loss_off + row] = partial;                             \
}

/* Sparse labels (int or long, suffix L): a label outside [0, width) is
 * reported with its row, and its row of outputs is 0. */
#define WEFT_SPARSE_XENT(T, S, L, LS)                                       \
__kernel void sparse_xent_##S##_##LS(                                       \
    __global const T* x, long x_off, __global const L* labels, long l_off,  \
    __global T* loss, long loss_off, __global T* grad, long grad_off,       \
    long width, __global int* err, int launch) {                            \
  __local T scratch[256];                                                   \
  const long row = get_group_id(0);                                         \
  const int lid = get_local_id(0), size = get_local_size(0);                \
  __global const T* xr = x + x_off + row * width;                           \
  __global T* gr = grad + grad_off + row * width;                           \
  const long label = (long)labels[l_off + row];                             \
  if (label < 0 || label >= width) {                                        \
    if (lid == 0) {                                                         \
      weft_report(err, launch, label, row);                                 \
      loss[loss_off + row] = (T)0;                                          \
    }                                                                       \
    for (long k = lid; k < width; k += size) gr[k] = (T)0;                  \
    return;                                                                 \
  }                                                                         \
  T m, sum;                                                                 \
  weft_row_stats_##S(scratch, xr, width, &m, &sum);                         \
  const T scale = (T)1 / sum;                                               \
  for (long k = lid; k < width; k += size) {                                \
    gr[k] = exp(xr[k] - m) * scale - (k == label ? (T)1 : (T)0);            \
  }                                                                         \
  if (lid == 0) loss[loss_off + row] = log(sum) - (xr[label] - m);          \
}

#define WEFT_NN(T, S)                                                       \
  WEFT_ROW_HELPERS(T, S)                                                    \
  WEFT_SOFTMAX(T, S)                                                        \
  WEFT_XENT(T, S)                                                           \
  WEFT_SPARSE_XENT(T, S, int, i32)                                          \
  WEFT_SPARSE_XENT(T, S, long, i64)

WEFT_NN(float, f32)
#ifdef WEFT_FP64
WEFT_NN(double, f64)
#endif
)CLC";

}  // namespace weft_opencl
