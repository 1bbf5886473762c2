// OpenCL C of linear algebra: BatchMatMul's batched products (matmul.cc)
// and the LU factorisations of MatrixInverse and MatrixDeterminant
// (linalg.cc).
#include "program.h"

namespace weft_opencl {

const char* const kLinalgSource = R"CLC(
/* ---- BatchMatMul ---------------------------------------------------------
 * MatMul's row-vector scheme for CPU devices (sources_matmul.cc) with a
 * batch: each item computes 8 rows x 16 columns of one output matrix in
 * sixteen-lane vectors; dimension 1 of the launch runs over (matrix, group
 * of 8 rows).  Output matrix b multiplies x's matrix and y's matrix found
 * by walking b's coordinates over the broadcast batch dims (x_step and
 * y_step: elements per step of each dim, 0 where that operand
 * broadcasts).  Operands are read through strides (adj_x, adj_y).
 *
 * Per dtype S: E the accumulator (float for the 16-bit floats, as the CPU
 * widens them; unsigned integers, so that sums wrap as on the CPU), V its
 * sixteen-lane vector, LOAD one element as E, ROW sixteen contiguous ones
 * as V, MAD the multiply-add, STORE one E back as T. */
inline long2 weft_batch_sources(long b, int rank, long8 dims8, long8 x8,
                                long8 y8) {
  long dims[8], xs[8], ys[8];
  vstore8(dims8, 0, dims);
  vstore8(x8, 0, xs);
  vstore8(y8, 0, ys);
  long2 at = (long2)(0, 0);
  for (int i = rank - 1; i >= 0; --i) {
    const long coord = b % dims[i];
    b /= dims[i];
    at += (long2)(coord * xs[i], coord * ys[i]);
  }
  return at;
}

inline float16 weft_row_f16(__global const half* p, long i) {
  float lanes[16];
  for (int j = 0; j < 16; ++j) lanes[j] = vload_half(i + j, p);
  return vload16(0, lanes);
}

inline void weft_put_f16(float v, long i, __global half* p) {
  if (isnan(v)) ((__global ushort*)p)[i] = (as_uint(v) >> 31) ? 0xFE00 : 0x7E00;
  else vstore_half_rte(v, i, p);
}

#define WEFT_LOAD_f32(p, i) (p)[i]
#define WEFT_LOAD_f64(p, i) (p)[i]
#define WEFT_LOAD_f16(p, i) vload_half((i), (p))
#define WEFT_LOAD_bf16(p, i) weft_bf16_to_float((p)[i])
#define WEFT_LOAD_i32(p, i) as_uint((p)[i])
#define WEFT_LOAD_i64(p, i) as_ulong((p)[i])
#define WEFT_ROW_f32(p, i) vload16(0, (p) + (i))
#define WEFT_ROW_f64(p, i) vload16(0, (p) + (i))
#define WEFT_ROW_f16(p, i) weft_row_f16((p), (i))
#define WEFT_ROW_bf16(p, i) \
  as_float16(convert_uint16(vload16(0, (p) + (i))) << 16)
#define WEFT_ROW_i32(p, i) as_uint16(vload16(0, (p) + (i)))
#define WEFT_ROW_i64(p, i) as_ulong16(vload16(0, (p) + (i)))
#define WEFT_MAD_F(a, b, acc) fma((a), (b), (acc))
#define WEFT_MAD_I(a, b, acc) ((a) * (b) + (acc))
#define WEFT_STORE_f32(p, i, v) (p)[i] = (v)
#define WEFT_STORE_f64(p, i, v) (p)[i] = (v)
#define WEFT_STORE_f16(p, i, v) weft_put_f16((v), (i), (p))
#define WEFT_STORE_bf16(p, i, v) (p)[i] = weft_float_to_bf16(v)
#define WEFT_STORE_i32(p, i, v) (p)[i] = as_int(v)
#define WEFT_STORE_i64(p, i, v) (p)[i] = as_long(v)

#define WEFT_BATCH_MATMUL(T, E, V, S, MAD)                                  \
__kernel void batch_matmul_##S(                                             \
    __global const T* x, long x_off, __global const T* y, long y_off,       \
    __global T* z, long z_off, long M, long N, long K, long x_rs,           \
    long x_cs, long y_rs, long y_cs, long row_groups, int rank,             \
    long8 dims, long8 x_step, long8 y_step) {                               \
  const long n0 = get_global_id(0) * 16;                                    \
  const long b = get_global_id(1) / row_groups;                             \
  const long m0 = (get_global_id(1) - b * row_groups) * 8;                  \
  if (n0 >= N || m0 >= M) return;                                           \
  const long2 at = weft_batch_sources(b, rank, dims, x_step, y_step);       \
  const long xo = x_off + at.s0, yo = y_off + at.s1;                        \
  const int contiguous = y_cs == 1 && n0 + 16 <= N;                         \
  V acc[8];                                                                 \
  long row[8];                                                              \
  _Pragma("unroll")                                                         \
  for (int i = 0; i < 8; ++i) {                                             \
    acc[i] = (V)0;                                                          \
    row[i] = xo + min(m0 + i, M - 1) * x_rs;                                \
  }                                                                         \
  for (long k = 0; k < K; ++k) {                                            \
    const long yk = yo + k * y_rs;                                          \
    V bv;                                                                   \
    if (contiguous) {                                                       \
      bv = WEFT_ROW_##S(y, yk + n0);                                        \
    } else {                                                                \
      E lanes[16];                                                          \
      for (int j = 0; j < 16; ++j)                                          \
        lanes[j] = n0 + j < N ? WEFT_LOAD_##S(y, yk + (n0 + j) * y_cs)      \
                              : (E)0;                                       \
      bv = vload16(0, lanes);                                               \
    }                                                                       \
    const long xk = k * x_cs;                                               \
    _Pragma("unroll")                                                       \
    for (int i = 0; i < 8; ++i)                                             \
      acc[i] = MAD((V)(WEFT_LOAD_##S(x, row[i] + xk)), bv, acc[i]);         \
  }                                                                         \
  const long zo = z_off + (b * M + m0) * N + n0;                            \
  for (int i = 0; i < 8 && m0 + i < M; ++i) {                               \
    E lanes[16];                                                            \
    vstore16(acc[i], 0, lanes);                                             \
    for (int j = 0; j < 16 && n0 + j < N; ++j)                              \
      WEFT_STORE_##S(z, zo + i * N + j, lanes[j]);                          \
  }                                                                         \
}

WEFT_BATCH_MATMUL(float, float, float16, f32, WEFT_MAD_F)
WEFT_BATCH_MATMUL(half, float, float16, f16, WEFT_MAD_F)
WEFT_BATCH_MATMUL(ushort, float, float16, bf16, WEFT_MAD_F)
WEFT_BATCH_MATMUL(int, uint, uint16, i32, WEFT_MAD_I)
WEFT_BATCH_MATMUL(long, ulong, ulong16, i64, WEFT_MAD_I)
#ifdef WEFT_FP64
WEFT_BATCH_MATMUL(double, double, double16, f64, WEFT_MAD_F)
#endif

/* ---- MatrixInverse, MatrixDeterminant ------------------------------------
 * One work item per [M, M] matrix: the matrix is copied to `lu` (scratch)
 * and factored there as Eigen's PartialPivLU does on the CPU: at step k the
 * row with the largest |entry| of column k (the first such) is swapped in,
 * unless that entry is 0 (an exactly singular column: nothing is swapped
 * or divided), the column below the pivot is divided by it and the
 * trailing block updated.  perm[r] is the original row now at r.  Returns
 * the number of row swaps. */
#define WEFT_LU(T, S)                                                       \
inline int weft_lu_##S(__global T* lu, __global int* perm, long M) {        \
  int swaps = 0;                                                            \
  for (long r = 0; r < M; ++r) perm[r] = (int)r;                            \
  for (long k = 0; k < M; ++k) {                                            \
    long best = k;                                                          \
    T biggest = fabs(lu[k * M + k]);                                        \
    for (long r = k + 1; r < M; ++r) {                                      \
      const T v = fabs(lu[r * M + k]);                                      \
      if (v > biggest) {                                                    \
        biggest = v;                                                        \
        best = r;                                                           \
      }                                                                     \
    }                                                                       \
    if (biggest != (T)0) {                                                  \
      if (best != k) {                                                      \
        for (long c = 0; c < M; ++c) {                                      \
          const T t = lu[k * M + c];                                        \
          lu[k * M + c] = lu[best * M + c];                                 \
          lu[best * M + c] = t;                                             \
        }                                                                   \
        const int p = perm[k];                                              \
        perm[k] = perm[best];                                               \
        perm[best] = p;                                                     \
        ++swaps;                                                            \
      }                                                                     \
      const T pivot = lu[k * M + k];                                        \
      for (long r = k + 1; r < M; ++r) lu[r * M + k] /= pivot;              \
    }                                                                       \
    for (long r = k + 1; r < M; ++r) {                                      \
      const T l = lu[r * M + k];                                            \
      for (long c = k + 1; c < M; ++c) lu[r * M + c] -= l * lu[k * M + c];  \
    }                                                                       \
  }                                                                         \
  return swaps;                                                             \
}                                                                           \
                                                                            \
/* Inverse of each matrix (transposed when `adjoint`), by solving L U X =  \
 * P I column by column into the output.  bad[i] is set for a matrix that  \
 * is not finite or singular to working precision (its smallest pivot at   \
 * most M eps times its largest in magnitude, or a pivot NaN: linalg_lu.cc \
 * on the CPU); its output is then left undefined. */                      \
__kernel void matrix_inverse_##S(__global const T* x, long x_off,           \
                                 __global T* y, long y_off,                 \
                                 __global T* lu, long lu_off,               \
                                 __global int* perm, long perm_off,         \
                                 __global int* bad, long bad_off, long M,   \
                                 long count, int adjoint, T epsilon) {      \
  const long i = get_global_id(0);                                          \
  if (i >= count) return;                                                   \
  const long size = M * M;                                                  \
  __global const T* a = x + x_off + i * size;                               \
  __global T* f = lu + lu_off + i * size;                                   \
  __global int* p = perm + perm_off + i * M;                                \
  __global T* out = y + y_off + i * size;                                   \
  int finite = 1;                                                           \
  for (long e = 0; e < size; ++e) {                                         \
    f[e] = a[e];                                                            \
    finite &= isfinite(a[e]) ? 1 : 0;                                       \
  }                                                                         \
  bad[bad_off + i] = 1;                                                     \
  if (!finite) return;                                                      \
  weft_lu_##S(f, p, M);                                                     \
  T largest = (T)0, smallest = (T)INFINITY;                                 \
  int nan = 0;                                                              \
  for (long d = 0; d < M; ++d) {                                            \
    const T v = fabs(f[d * M + d]);                                         \
    nan |= isnan(v) ? 1 : 0;                                                \
    largest = fmax(largest, v);                                             \
    smallest = fmin(smallest, v);                                           \
  }                                                                         \
  const T threshold = (T)M * epsilon * largest;                             \
  if (nan || !(smallest > threshold) || !isfinite(largest)) return;         \
  bad[bad_off + i] = 0;                                                     \
  /* Column j of the inverse, solved in place in the output. */            \
  const long row_step = adjoint ? 1 : M;                                    \
  for (long j = 0; j < M; ++j) {                                            \
    __global T* col = out + (adjoint ? j * M : j);                          \
    for (long r = 0; r < M; ++r) {                                          \
      T v = p[r] == j ? (T)1 : (T)0;                                        \
      for (long c = 0; c < r; ++c) v -= f[r * M + c] * col[c * row_step];   \
      col[r * row_step] = v;                                                \
    }                                                                       \
    for (long r = M - 1; r >= 0; --r) {                                     \
      T v = col[r * row_step];                                              \
      for (long c = r + 1; c < M; ++c) v -= f[r * M + c] * col[c * row_step];\
      col[r * row_step] = v / f[r * M + r];                                 \
    }                                                                       \
  }                                                                         \
}

WEFT_LU(float, f32)
#ifdef WEFT_FP64
WEFT_LU(double, f64)
#endif

/* The determinant as the product of the pivots and the permutation's
 * sign, each factor renormalised into [0.5, 1) with its binary exponent
 * summed apart (in double where the device has it, as the CPU does), so
 * that no partial product over- or underflows; the result narrows to T
 * with values beyond its range becoming infinities. */
#ifdef WEFT_FP64
#define WEFT_DET_ACC double
#else
#define WEFT_DET_ACC float
#endif
#define WEFT_DETERMINANT(T, S, MAX)                                         \
__kernel void matrix_determinant_##S(__global const T* x, long x_off,       \
                                     __global T* y, long y_off,             \
                                     __global T* lu, long lu_off,           \
                                     __global int* perm, long perm_off,     \
                                     long M, long count) {                  \
  const long i = get_global_id(0);                                          \
  if (i >= count) return;                                                   \
  const long size = M * M;                                                  \
  __global T* f = lu + lu_off + i * size;                                   \
  for (long e = 0; e < size; ++e) f[e] = x[x_off + i * size + e];           \
  const int swaps = weft_lu_##S(f, perm + perm_off + i * M, M);             \
  WEFT_DET_ACC mantissa = (swaps & 1) ? -1 : 1;                             \
  int exponent = 0;                                                         \
  for (long d = 0; d < M; ++d) {                                            \
    int e = 0;                                                              \
    mantissa = frexp(mantissa * (WEFT_DET_ACC)f[d * M + d], &e);            \
    exponent += e;                                                          \
  }                                                                         \
  const WEFT_DET_ACC v = ldexp(mantissa, exponent);                         \
  y[y_off + i] = v > MAX ? (T)INFINITY : v < -MAX ? -(T)INFINITY : (T)v;    \
}

WEFT_DETERMINANT(float, f32, FLT_MAX)
#ifdef WEFT_FP64
WEFT_DETERMINANT(double, f64, DBL_MAX)
#endif
)CLC";

}  // namespace weft_opencl
