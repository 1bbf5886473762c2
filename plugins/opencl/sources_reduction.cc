// OpenCL C of the reductions Sum, Mean, Prod, Max and Min.
#include "program.h"

namespace weft_opencl {

const char* const kReductionSource = R"CLC(
/* Every reduction comes in two forms over the same arguments.  The input
 * is seen as kept dims (giving the output index) and reduced dims, each
 * merged as far as the layout allows and walked by weft_offset.
 *   NAME_group: one work-group per output; items stride over the reduced
 *     elements, then combine in local memory (group size a power of two,
 *     at most 256).  For few outputs, or a reduced axis that is contiguous.
 *   NAME_item: one item per output, looping over its elements.  For many
 *     outputs over a strided axis, where neighbouring items read
 *     neighbouring elements. */
#define WEFT_REDUCE_ARGS(T)                                                 \
  __global const T* x, long x_off, __global T* y, long y_off, long outputs, \
  long count, int kept_rank, long8 kept_dims, long8 kept_strides,           \
  int red_rank, long8 red_dims, long8 red_strides

#define WEFT_REDUCE(NAME, T, ACC, IDENTITY, LOAD, MERGE, FINISH)            \
__kernel void NAME##_group(WEFT_REDUCE_ARGS(T)) {                           \
  __local ACC scratch[256];                                                 \
  const long o = get_group_id(0);                                           \
  const int lid = get_local_id(0), size = get_local_size(0);                \
  const long base =                                                         \
      x_off + weft_offset(o, kept_rank, kept_dims, kept_strides);           \
  ACC acc = IDENTITY;                                                       \
  for (long r = lid; r < count; r += size) {                                \
    const ACC v =                                                           \
        LOAD(x[base + weft_offset(r, red_rank, red_dims, red_strides)]);    \
    acc = MERGE(acc, v);                                                    \
  }                                                                         \
  scratch[lid] = acc;                                                       \
  barrier(CLK_LOCAL_MEM_FENCE);                                             \
  for (int s = size / 2; s > 0; s >>= 1) {                                  \
    if (lid < s) scratch[lid] = MERGE(scratch[lid], scratch[lid + s]);      \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
  }                                                                         \
  if (lid == 0) y[y_off + o] = FINISH(scratch[0], count);                   \
}                                                                           \
__kernel void NAME##_item(WEFT_REDUCE_ARGS(T)) {                            \
  const long o = get_global_id(0);                                          \
  if (o >= outputs) return;                                                 \
  const long base =                                                         \
      x_off + weft_offset(o, kept_rank, kept_dims, kept_strides);           \
  ACC acc = IDENTITY;                                                       \
  for (long r = 0; r < count; ++r) {                                        \
    const ACC v =                                                           \
        LOAD(x[base + weft_offset(r, red_rank, red_dims, red_strides)]);    \
    acc = MERGE(acc, v);                                                    \
  }                                                                         \
  y[y_off + o] = FINISH(acc, count);                                        \
}

#define WEFT_ADD(a, b) ((a) + (b))
#define WEFT_MUL(a, b) ((a) * (b))
/* A NaN, once met, stays: nothing compares beyond it. */
#define WEFT_MAX_NAN(a, b) (((b) > (a) || isnan(b)) ? (b) : (a))
#define WEFT_MIN_NAN(a, b) (((b) < (a) || isnan(b)) ? (b) : (a))
#define WEFT_MAX_INT(a, b) max((a), (b))
#define WEFT_MIN_INT(a, b) min((a), (b))
#define WEFT_SAME(v) (v)
#define WEFT_DONE(acc, count) (acc)

#define WEFT_FLOAT_REDUCTIONS(T, S)                                         \
  WEFT_REDUCE(sum_##S, T, T, (T)0, WEFT_SAME, WEFT_ADD, WEFT_DONE)          \
  WEFT_REDUCE(prod_##S, T, T, (T)1, WEFT_SAME, WEFT_MUL, WEFT_DONE)         \
  WEFT_REDUCE(max_##S, T, T, (T)(-INFINITY), WEFT_SAME, WEFT_MAX_NAN,       \
              WEFT_DONE)                                                    \
  WEFT_REDUCE(min_##S, T, T, (T)INFINITY, WEFT_SAME, WEFT_MIN_NAN,          \
              WEFT_DONE)
#define WEFT_MEAN_F(acc, count) ((acc) / (float)(count))
#define WEFT_MEAN_D(acc, count) ((acc) / (double)(count))

WEFT_FLOAT_REDUCTIONS(float, f32)
WEFT_REDUCE(mean_f32, float, float, 0.0f, WEFT_SAME, WEFT_ADD, WEFT_MEAN_F)
#ifdef WEFT_FP64
WEFT_FLOAT_REDUCTIONS(double, f64)
WEFT_REDUCE(mean_f64, double, double, 0.0, WEFT_SAME, WEFT_ADD, WEFT_MEAN_D)
#endif

/* int32: Sum and Prod wrap (in uint); Mean sums in 64 bits, so that the
 * sum cannot overflow on the way, and divides truncating toward zero. */
#define WEFT_TO_UINT(v) ((uint)(v))
#define WEFT_TO_ULONG(v) ((ulong)(long)(v))
#define WEFT_AS_INT(acc, count) ((int)(acc))
#define WEFT_MEAN_I(acc, count) ((int)((long)(acc) / (count)))
WEFT_REDUCE(sum_i32, int, uint, 0u, WEFT_TO_UINT, WEFT_ADD, WEFT_AS_INT)
WEFT_REDUCE(prod_i32, int, uint, 1u, WEFT_TO_UINT, WEFT_MUL, WEFT_AS_INT)
WEFT_REDUCE(max_i32, int, int, INT_MIN, WEFT_SAME, WEFT_MAX_INT, WEFT_DONE)
WEFT_REDUCE(min_i32, int, int, INT_MAX, WEFT_SAME, WEFT_MIN_INT, WEFT_DONE)
WEFT_REDUCE(mean_i32, int, ulong, 0ul, WEFT_TO_ULONG, WEFT_ADD, WEFT_MEAN_I)

/* int64 and uint8 likewise: Sum and Prod wrap (in ulong, uint), Mean sums
 * in 64 bits and truncates. */
#define WEFT_AS_LONG(acc, count) ((long)(acc))
#define WEFT_MEAN_L(acc, count) ((long)(acc) / (count))
#define WEFT_AS_UCHAR(acc, count) ((uchar)(acc))
#define WEFT_MEAN_U8(acc, count) ((uchar)((long)(acc) / (count)))
#define WEFT_TO_ULONG_L(v) ((ulong)(v))
WEFT_REDUCE(sum_i64, long, ulong, 0ul, WEFT_TO_ULONG_L, WEFT_ADD, WEFT_AS_LONG)
WEFT_REDUCE(prod_i64, long, ulong, 1ul, WEFT_TO_ULONG_L, WEFT_MUL,
            WEFT_AS_LONG)
WEFT_REDUCE(max_i64, long, long, LONG_MIN, WEFT_SAME, WEFT_MAX_INT, WEFT_DONE)
WEFT_REDUCE(min_i64, long, long, LONG_MAX, WEFT_SAME, WEFT_MIN_INT, WEFT_DONE)
WEFT_REDUCE(mean_i64, long, ulong, 0ul, WEFT_TO_ULONG_L, WEFT_ADD, WEFT_MEAN_L)
WEFT_REDUCE(sum_u8, uchar, uint, 0u, WEFT_TO_UINT, WEFT_ADD, WEFT_AS_UCHAR)
WEFT_REDUCE(prod_u8, uchar, uint, 1u, WEFT_TO_UINT, WEFT_MUL, WEFT_AS_UCHAR)
WEFT_REDUCE(max_u8, uchar, uchar, 0, WEFT_SAME, WEFT_MAX_INT, WEFT_DONE)
WEFT_REDUCE(min_u8, uchar, uchar, 255, WEFT_SAME, WEFT_MIN_INT, WEFT_DONE)
WEFT_REDUCE(mean_u8, uchar, ulong, 0ul, WEFT_TO_ULONG_L, WEFT_ADD,
            WEFT_MEAN_U8)

/* ArgMax and ArgMin along one axis: x as [outer, length, inner], an item
 * per output (outer, inner).  Ties keep the first; for floats the first
 * NaN wins and nothing replaces it (the CPU's Beats). */
#define WEFT_FLOAT_BEATS(v, best, OP) ((best) == (best) && ((v) != (v) || (v) OP (best)))
#define WEFT_INT_BEATS(v, best, OP) ((v) OP (best))
#define WEFT_ARG(NAME, T, O, OS, OP, BEATS)                                 \
__kernel void NAME##_##OS(__global const T* x, long x_off, __global O* y,   \
                          long y_off, long outputs, long length,           \
                          long inner) {                                     \
  const long e = get_global_id(0);                                          \
  if (e >= outputs) return;                                                 \
  __global const T* p = x + x_off + (e / inner) * length * inner + e % inner; \
  T best = p[0];                                                            \
  long at = 0;                                                              \
  for (long j = 1; j < length; ++j) {                                       \
    const T v = p[j * inner];                                               \
    if (BEATS(v, best, OP)) {                                               \
      best = v;                                                             \
      at = j;                                                               \
    }                                                                       \
  }                                                                         \
  y[y_off + e] = (O)at;                                                     \
}
#define WEFT_ARGS(T, S, BEATS)                                              \
  WEFT_ARG(arg_max_##S, T, int, i32, >, BEATS)                              \
  WEFT_ARG(arg_max_##S, T, long, i64, >, BEATS)                             \
  WEFT_ARG(arg_min_##S, T, int, i32, <, BEATS)                              \
  WEFT_ARG(arg_min_##S, T, long, i64, <, BEATS)
WEFT_ARGS(float, f32, WEFT_FLOAT_BEATS)
WEFT_ARGS(int, i32, WEFT_INT_BEATS)
WEFT_ARGS(long, i64, WEFT_INT_BEATS)
WEFT_ARGS(uchar, u8, WEFT_INT_BEATS)
#ifdef WEFT_FP64
WEFT_ARGS(double, f64, WEFT_FLOAT_BEATS)
#endif
)CLC";

}  // namespace weft_opencl
