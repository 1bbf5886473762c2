// OpenCL C of the prelude every program starts with, and of the
// element-wise kernels: broadcasting binary ops, unary ops, Cast, BiasAdd.
// Kernels are stamped out per dtype by macros; their names are
// "<op>_<suffix>" (add_f32, cast_f32_bf16), as KernelName() spells them.
#include "program.h"

namespace weft_opencl {

const char* const kPreludeSource = R"CLC(
#ifdef WEFT_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* bfloat16 is the top half of a float32.  Narrowing rounds to nearest even
 * and keeps NaN a (quiet) NaN, as the CPU plugin does: a plain truncation
 * would round toward zero, and rounding a NaN's payload could make it
 * infinite. */
inline float weft_bf16_to_float(ushort v) { return as_float(((uint)v) << 16); }
inline ushort weft_float_to_bf16(float f) {
  uint bits = as_uint(f);
  if (isnan(f)) return (bits >> 31) ? (ushort)0xFFC0 : (ushort)0x7FC0;
  return (ushort)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

/* A failure found on the device: the first work item to fail claims the
 * stream's error word with its launch id and writes the details (the layout
 * of SlotWords in error_slot.cc). */
inline void weft_report(__global int* err, int launch, long value, long row) {
  if (atomic_cmpxchg(err, 0, launch) == 0) {
    __global long* details = (__global long*)err;
    details[1] = value;
    details[2] = row;
  }
}

/* The offset of linear index i over `rank` dims (row-major) with the given
 * strides.  One dim, the common case after merging, needs no division. */
inline long weft_offset(long i, int rank, long8 dims8, long8 strides8) {
  if (rank == 1) return i * strides8.s0;
  long dims[8], strides[8];
  vstore8(dims8, 0, dims);
  vstore8(strides8, 0, strides);
  long offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return offset;
}
)CLC";

const char* const kElementwiseSource = R"CLC(
/* ---- Binary ops with broadcasting.  rank 0: x, y and z have the same
 * shape; otherwise z's (merged) dims with x's and y's strides, 0 where
 * they broadcast. ---- */
#define WEFT_BINARY(NAME, T, BODY)                                          \
__kernel void NAME(__global const T* x, long x_off, __global const T* y,   \
                   long y_off, __global T* z, long z_off, long n, int rank, \
                   long8 dims, long8 xs, long8 ys, __global int* err,      \
                   int launch) {                                           \
  long i = get_global_id(0);                                               \
  if (i >= n) return;                                                      \
  long xi = i, yi = i;                                                     \
  if (rank > 0) {                                                          \
    xi = weft_offset(i, rank, dims, xs);                                   \
    yi = weft_offset(i, rank, dims, ys);                                   \
  }                                                                        \
  T a = x[x_off + xi], b = y[y_off + yi], r;                               \
  BODY;                                                                    \
  z[z_off + i] = r;                                                        \
}

/* NaN wins in Maximum and Minimum, as in NumPy. */
#define WEFT_FLOAT_BINARY(T, S)                                            \
  WEFT_BINARY(add_##S, T, r = a + b)                                       \
  WEFT_BINARY(sub_##S, T, r = a - b)                                       \
  WEFT_BINARY(mul_##S, T, r = a * b)                                       \
  WEFT_BINARY(div_##S, T, r = a / b)                                       \
  WEFT_BINARY(pow_##S, T, r = pow(a, b))                                   \
  WEFT_BINARY(maximum_##S, T, r = (a > b || isnan(a)) ? a : b)             \
  WEFT_BINARY(minimum_##S, T, r = (a < b || isnan(a)) ? a : b)

/* FloorDiv and FloorMod (TensorFlow's: floor(a / b), and the remainder
 * with the divisor's sign, 0 taking b's sign too). */
#define WEFT_FLOAT_FLOOR(T, S)                                             \
  WEFT_BINARY(floor_div_##S, T, r = floor(a / b))                          \
  WEFT_BINARY(floor_mod_##S, T,                                            \
      r = fmod(a, b);                                                      \
      if (r == (T)0) r = copysign((T)0, b);                                \
      else if ((r < (T)0) != (b < (T)0)) r += b)

/* Integers wrap (two's complement) through their unsigned type U; the
 * inputs an op has no value for (a zero divisor, a negative exponent) are
 * reported and give 0.  Division is signed (MIN / -1 wraps to MIN, MIN %
 * -1 is 0) or unsigned. */
#define WEFT_INT_ARITHMETIC(T, U, S)                                       \
  WEFT_BINARY(add_##S, T, r = (T)((U)a + (U)b))                            \
  WEFT_BINARY(sub_##S, T, r = (T)((U)a - (U)b))                            \
  WEFT_BINARY(mul_##S, T, r = (T)((U)a * (U)b))                            \
  WEFT_BINARY(pow_##S, T,                                                  \
      if (b < 0) { weft_report(err, launch, b, 0); r = 0; }                \
      else {                                                               \
        ulong result = 1;                                                  \
        ulong square = (ulong)a;                                           \
        for (ulong e = (ulong)b; e != 0; e >>= 1) {                        \
          if (e & 1) result *= square;                                     \
          square *= square;                                                \
        }                                                                  \
        r = (T)(U)result;                                                  \
      })
#define WEFT_ZERO_DIVISOR                                                  \
  if (b == 0) { weft_report(err, launch, 0, 0); r = 0; }
#define WEFT_INT_ORDER(T, S)                                               \
  WEFT_BINARY(maximum_##S, T, r = a > b ? a : b)                           \
  WEFT_BINARY(minimum_##S, T, r = a < b ? a : b)
#define WEFT_SIGNED_DIVISION(T, U, S)                                      \
  WEFT_BINARY(div_##S, T, WEFT_ZERO_DIVISOR                                \
      else if (b == -1) r = (T)((U)0 - (U)a);                              \
      else r = a / b)                                                      \
  WEFT_BINARY(floor_div_##S, T, WEFT_ZERO_DIVISOR                          \
      else if (b == -1) r = (T)((U)0 - (U)a);                              \
      else {                                                               \
        r = a / b;                                                         \
        if (a % b != 0 && (a < 0) != (b < 0)) r = (T)(r - 1);              \
      })                                                                   \
  WEFT_BINARY(floor_mod_##S, T, WEFT_ZERO_DIVISOR                          \
      else if (b == -1) r = 0;                                             \
      else {                                                               \
        r = a % b;                                                         \
        if (r != 0 && (r < 0) != (b < 0)) r = (T)(r + b);                  \
      })
#define WEFT_UNSIGNED_DIVISION(T, S)                                       \
  WEFT_BINARY(div_##S, T, WEFT_ZERO_DIVISOR else r = a / b)                \
  WEFT_BINARY(floor_div_##S, T, WEFT_ZERO_DIVISOR else r = a / b)          \
  WEFT_BINARY(floor_mod_##S, T, WEFT_ZERO_DIVISOR else r = a % b)
/* The arithmetic dtypes (int32, int64, uint8) have every op; the others
 * (int8, int16, uint16, uint32, uint64) the CPU's: Maximum, Minimum,
 * FloorDiv, FloorMod. */
#define WEFT_SIGNED_BINARY(T, U, S)                                        \
  WEFT_INT_ARITHMETIC(T, U, S) WEFT_INT_ORDER(T, S)                        \
  WEFT_SIGNED_DIVISION(T, U, S)

WEFT_FLOAT_BINARY(float, f32)
WEFT_FLOAT_FLOOR(float, f32)
WEFT_SIGNED_BINARY(int, uint, i32)
WEFT_SIGNED_BINARY(long, ulong, i64)
WEFT_INT_ARITHMETIC(uchar, uchar, u8)
WEFT_INT_ORDER(uchar, u8)
WEFT_UNSIGNED_DIVISION(uchar, u8)
WEFT_INT_ORDER(char, i8)
WEFT_SIGNED_DIVISION(char, uchar, i8)
WEFT_INT_ORDER(short, i16)
WEFT_SIGNED_DIVISION(short, ushort, i16)
WEFT_INT_ORDER(ushort, u16)
WEFT_UNSIGNED_DIVISION(ushort, u16)
WEFT_INT_ORDER(uint, u32)
WEFT_UNSIGNED_DIVISION(uint, u32)
WEFT_INT_ORDER(ulong, u64)
WEFT_UNSIGNED_DIVISION(ulong, u64)

/* Comparisons: the broadcasting walk of WEFT_BINARY with a bool (uchar)
 * result, each operand read through READ (nothing, or WEFT_TRUTH for bool,
 * which the CPU reads as "non-zero": a stray 2 equals 1).  IEEE as on the
 * CPU: NaN compares false, except !=. */
#define WEFT_TRUTH(v) ((v) != 0)
#define WEFT_COMPARE(NAME, T, OP, READ)                                    \
__kernel void NAME(__global const T* x, long x_off, __global const T* y,   \
                   long y_off, __global uchar* z, long z_off, long n,      \
                   int rank, long8 dims, long8 xs, long8 ys,               \
                   __global int* err, int launch) {                        \
  long i = get_global_id(0);                                               \
  if (i >= n) return;                                                      \
  long xi = i, yi = i;                                                     \
  if (rank > 0) {                                                          \
    xi = weft_offset(i, rank, dims, xs);                                   \
    yi = weft_offset(i, rank, dims, ys);                                   \
  }                                                                        \
  z[z_off + i] = (READ(x[x_off + xi]) OP READ(y[y_off + yi])) ? 1 : 0;     \
}
#define WEFT_COMPARISONS(T, S)                                             \
  WEFT_COMPARE(less_##S, T, <, )                                           \
  WEFT_COMPARE(less_equal_##S, T, <=, )                                    \
  WEFT_COMPARE(greater_##S, T, >, )                                        \
  WEFT_COMPARE(greater_equal_##S, T, >=, )                                 \
  WEFT_COMPARE(equal_##S, T, ==, )                                         \
  WEFT_COMPARE(not_equal_##S, T, !=, )
WEFT_COMPARISONS(float, f32)
WEFT_COMPARISONS(int, i32)
WEFT_COMPARISONS(long, i64)
WEFT_COMPARISONS(uchar, u8)
WEFT_COMPARE(equal_bool, uchar, ==, WEFT_TRUTH)
WEFT_COMPARE(not_equal_bool, uchar, !=, WEFT_TRUTH)
/* LogicalAnd, LogicalOr: bool operands read as "non-zero". */
#define WEFT_LOGICAL(NAME, OP)                                             \
__kernel void NAME(__global const uchar* x, long x_off,                   \
                   __global const uchar* y, long y_off, __global uchar* z, \
                   long z_off, long n, int rank, long8 dims, long8 xs,     \
                   long8 ys, __global int* err, int launch) {              \
  long i = get_global_id(0);                                               \
  if (i >= n) return;                                                      \
  long xi = i, yi = i;                                                     \
  if (rank > 0) {                                                          \
    xi = weft_offset(i, rank, dims, xs);                                   \
    yi = weft_offset(i, rank, dims, ys);                                   \
  }                                                                        \
  z[z_off + i] = (x[x_off + xi] != 0) OP (y[y_off + yi] != 0) ? 1 : 0;     \
}
WEFT_LOGICAL(logical_and_bool, &&)
WEFT_LOGICAL(logical_or_bool, ||)
#ifdef WEFT_FP64
WEFT_FLOAT_BINARY(double, f64)
WEFT_FLOAT_FLOOR(double, f64)
WEFT_COMPARISONS(double, f64)
#endif

/* ---- Unary ops ---- */
#define WEFT_UNARY(NAME, T, EXPR)                                          \
__kernel void NAME(__global const T* x, long x_off, __global T* y,         \
                   long y_off, long n) {                                   \
  long i = get_global_id(0);                                               \
  if (i >= n) return;                                                      \
  T a = x[x_off + i];                                                      \
  y[y_off + i] = EXPR;                                                     \
}

/* Sign keeps zeros (of either sign) and NaN; Relu keeps NaN. */
#define WEFT_FLOAT_UNARY(T, S)                                             \
  WEFT_UNARY(neg_##S, T, -a)                                               \
  WEFT_UNARY(abs_##S, T, fabs(a))                                          \
  WEFT_UNARY(sign_##S, T, a > (T)0 ? (T)1 : a < (T)0 ? (T)-1 : a)          \
  WEFT_UNARY(square_##S, T, a * a)                                         \
  WEFT_UNARY(relu_##S, T, a < (T)0 ? (T)0 : a)                             \
  WEFT_UNARY(exp_##S, T, exp(a))                                           \
  WEFT_UNARY(log_##S, T, log(a))                                           \
  WEFT_UNARY(sigmoid_##S, T, (T)1 / ((T)1 + exp(-a)))                      \
  WEFT_UNARY(tanh_##S, T, tanh(a))                                         \
  WEFT_UNARY(sqrt_##S, T, sqrt(a))                                         \
  WEFT_UNARY(rsqrt_##S, T, (T)1 / sqrt(a))

#define WEFT_INT_UNARY(T, U, S)                                            \
  WEFT_UNARY(neg_##S, T, (T)((U)0 - (U)a))                                 \
  WEFT_UNARY(abs_##S, T, a < 0 ? (T)((U)0 - (U)a) : a)                     \
  WEFT_UNARY(sign_##S, T, (T)((a > 0) - (a < 0)))                          \
  WEFT_UNARY(square_##S, T, (T)((U)a * (U)a))                              \
  WEFT_UNARY(relu_##S, T, a > 0 ? a : (T)0)

/* uint8: Neg wraps, Abs and Relu are the value, Sign is 0 or 1. */
#define WEFT_UNSIGNED_UNARY(T, S)                                          \
  WEFT_UNARY(neg_##S, T, (T)(0 - a))                                       \
  WEFT_UNARY(abs_##S, T, a)                                                \
  WEFT_UNARY(sign_##S, T, (T)(a > 0))                                      \
  WEFT_UNARY(square_##S, T, (T)(a * a))                                    \
  WEFT_UNARY(relu_##S, T, a)

WEFT_FLOAT_UNARY(float, f32)
WEFT_INT_UNARY(int, uint, i32)
WEFT_INT_UNARY(long, ulong, i64)
WEFT_UNSIGNED_UNARY(uchar, u8)
WEFT_UNARY(logical_not_bool, uchar, a != 0 ? 0 : 1)
#ifdef WEFT_FP64
WEFT_FLOAT_UNARY(double, f64)
#endif

/* ---- BiasAdd: value [..., C] + bias [C] ---- */
#define WEFT_BIAS_ADD(T, S)                                                \
__kernel void bias_add_##S(__global const T* x, long x_off,                \
                           __global const T* b, long b_off, __global T* y, \
                           long y_off, long n, long channels) {            \
  long i = get_global_id(0);                                               \
  if (i >= n) return;                                                      \
  y[y_off + i] = x[x_off + i] + b[b_off + i % channels];                   \
}
WEFT_BIAS_ADD(float, f32)
#ifdef WEFT_FP64
WEFT_BIAS_ADD(double, f64)
#endif

/* BiasAdd on integers wraps like Add. */
#define WEFT_INT_BIAS_ADD(T, U, S)                                         \
__kernel void bias_add_##S(__global const T* x, long x_off,                \
                           __global const T* b, long b_off,                \
                           __global T* y, long y_off, long n,              \
                           long channels) {                                \
  long i = get_global_id(0);                                               \
  if (i >= n) return;                                                      \
  y[y_off + i] = (T)((U)x[x_off + i] + (U)b[b_off + i % channels]);        \
}
WEFT_INT_BIAS_ADD(int, uint, i32)
WEFT_INT_BIAS_ADD(long, ulong, i64)

/* ---- Cast.  Each dtype has a storage type, a value type it widens to
 * (float for the 16-bit floats, every one of which is exactly a float) and
 * a kind saying how values of it convert: F float, D double, I int, L long.
 * Float to integer truncates toward zero, with NaN and out-of-range values
 * giving 0; integer to narrower integer wraps; everything to a 16-bit float
 * goes through float32, as the CPU plugin does. ---- */
#define WEFT_STORAGE_f32 float
#define WEFT_STORAGE_f16 half
#define WEFT_STORAGE_bf16 ushort
#define WEFT_STORAGE_i32 int
#define WEFT_STORAGE_i64 long
#define WEFT_STORAGE_f64 double
#define WEFT_KIND_f32 F
#define WEFT_KIND_f16 F
#define WEFT_KIND_bf16 F
#define WEFT_KIND_i32 I
#define WEFT_KIND_i64 L
#define WEFT_KIND_f64 D

#define WEFT_LOAD_f32(p, i) (p)[i]
#define WEFT_LOAD_f16(p, i) vload_half((i), (p))
#define WEFT_LOAD_bf16(p, i) weft_bf16_to_float((p)[i])
#define WEFT_LOAD_i32(p, i) (p)[i]
#define WEFT_LOAD_i64(p, i) (p)[i]
#define WEFT_LOAD_f64(p, i) (p)[i]
#define WEFT_STORE_f32(p, i, v) (p)[i] = (v)
#define WEFT_STORE_f16(p, i, v) weft_store_half((v), (i), (p))
#define WEFT_STORE_bf16(p, i, v) (p)[i] = weft_float_to_bf16(v)
#define WEFT_STORE_i32(p, i, v) (p)[i] = (v)
#define WEFT_STORE_i64(p, i, v) (p)[i] = (v)
#define WEFT_STORE_f64(p, i, v) (p)[i] = (v)

/* float16 narrowing rounds to nearest even; NaN becomes the canonical
 * quiet NaN with its sign (0x7e00), as on the CPU, where vstore_half
 * would keep some payload bits. */
inline void weft_store_half(float v, long i, __global half* p) {
  if (isnan(v)) {
    ((__global ushort*)p)[i] = (as_uint(v) >> 31) ? (ushort)0xFE00
                                                  : (ushort)0x7E00;
  } else {
    vstore_half_rte(v, i, p);
  }
}

/* Float to integer: bounds are exact in float and double (min is -2^k,
 * max + 1 is 2^k); NaN fails both comparisons. */
inline int weft_f_to_i32(float v) {
  float t = trunc(v);
  return t >= -2147483648.0f && t < 2147483648.0f ? (int)t : 0;
}
inline long weft_f_to_i64(float v) {
  float t = trunc(v);
  return t >= -9223372036854775808.0f && t < 9223372036854775808.0f
             ? (long)t : 0;
}

#define WEFT_TO_f32_F(v) (v)
#define WEFT_TO_f32_I(v) ((float)(v))
#define WEFT_TO_f32_L(v) ((float)(v))
#define WEFT_TO_f32_D(v) ((float)(v))
#define WEFT_TO_f16_F WEFT_TO_f32_F
#define WEFT_TO_f16_I WEFT_TO_f32_I
#define WEFT_TO_f16_L WEFT_TO_f32_L
#define WEFT_TO_f16_D WEFT_TO_f32_D
#define WEFT_TO_bf16_F WEFT_TO_f32_F
#define WEFT_TO_bf16_I WEFT_TO_f32_I
#define WEFT_TO_bf16_L WEFT_TO_f32_L
#define WEFT_TO_bf16_D WEFT_TO_f32_D
#define WEFT_TO_i32_F(v) weft_f_to_i32(v)
#define WEFT_TO_i32_I(v) (v)
#define WEFT_TO_i32_L(v) as_int((uint)(ulong)(v))
#define WEFT_TO_i32_D(v) weft_d_to_i32(v)
#define WEFT_TO_i64_F(v) weft_f_to_i64(v)
#define WEFT_TO_i64_I(v) ((long)(v))
#define WEFT_TO_i64_L(v) (v)
#define WEFT_TO_i64_D(v) weft_d_to_i64(v)
#define WEFT_TO_f64_F(v) ((double)(v))
#define WEFT_TO_f64_I(v) ((double)(v))
#define WEFT_TO_f64_L(v) ((double)(v))
#define WEFT_TO_f64_D(v) (v)

#define WEFT_CAST(S, D) WEFT_CAST_KIND(S, D, WEFT_KIND_##S)
#define WEFT_CAST_KIND(S, D, K) WEFT_CAST_BODY(S, D, K)
#define WEFT_CAST_BODY(S, D, K)                                            \
__kernel void cast_##S##_##D(__global const WEFT_STORAGE_##S* x,           \
                             long x_off, __global WEFT_STORAGE_##D* y,     \
                             long y_off, long n) {                         \
  long i = get_global_id(0);                                               \
  if (i >= n) return;                                                      \
  WEFT_STORE_##D(y, y_off + i, WEFT_TO_##D##_##K(WEFT_LOAD_##S(x, x_off + i))); \
}

#define WEFT_CAST_FROM(S)                                                  \
  WEFT_CAST(S, f32) WEFT_CAST(S, f16) WEFT_CAST(S, bf16)                   \
  WEFT_CAST(S, i32) WEFT_CAST(S, i64)
WEFT_CAST_FROM(f32)
WEFT_CAST_FROM(f16)
WEFT_CAST_FROM(bf16)
WEFT_CAST_FROM(i32)
WEFT_CAST_FROM(i64)

#ifdef WEFT_FP64
inline int weft_d_to_i32(double v) {
  double t = trunc(v);
  return t >= -2147483648.0 && t < 2147483648.0 ? (int)t : 0;
}
inline long weft_d_to_i64(double v) {
  double t = trunc(v);
  return t >= -9223372036854775808.0 && t < 9223372036854775808.0
             ? (long)t : 0;
}
WEFT_CAST_FROM(f64)
WEFT_CAST(f32, f64) WEFT_CAST(f16, f64) WEFT_CAST(bf16, f64)
WEFT_CAST(i32, f64) WEFT_CAST(i64, f64)
#endif

/* ---- Fill: every element a copy of the one-element `value`, by element
 * size (b1, b2, b4, b8). ---- */
#define WEFT_FILL(T, S)                                                    \
__kernel void fill_##S(__global const T* v, long v_off, __global T* y,     \
                       long y_off, long n) {                               \
  const long i = get_global_id(0);                                         \
  if (i < n) y[y_off + i] = v[v_off];                                      \
}
WEFT_FILL(uchar, b1)
WEFT_FILL(ushort, b2)
WEFT_FILL(uint, b4)
WEFT_FILL(ulong, b8)
)CLC";

}  // namespace weft_opencl
