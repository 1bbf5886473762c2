// OpenCL C of MatMul: C = op(A) op(B), tiled through local memory.
#include "program.h"

namespace weft_opencl {

const char* const kMatMulSource = R"CLC(
/* A group of 16 x 16 items computes a 64 x 64 tile of C, each item a 4 x 4
 * block (rows ty + 16 i, columns tx + 16 j, so that neighbouring items touch
 * neighbouring columns).  K advances 16 at a time through tiles of A and B
 * in local memory.  Operands are addressed through strides, so transposes
 * cost nothing: A(m, k) = a[m * a_rs + k * a_cs], B(k, n) = b[k * b_rs +
 * n * b_cs].  Elements past the edges load as 0 and are not stored. */
#define WEFT_TILE 64
#define WEFT_TILE_K 16
#define WEFT_ITEMS 16
#define WEFT_PER_ITEM 4

#define WEFT_MATMUL(T, S)                                                   \
__kernel __attribute__((reqd_work_group_size(WEFT_ITEMS, WEFT_ITEMS, 1)))   \
void matmul_##S(__global const T* a, long a_off, __global const T* b,       \
                long b_off, __global T* c, long c_off, long M, long N,      \
                long K, long a_rs, long a_cs, long b_rs, long b_cs) {       \
  __local T a_tile[WEFT_TILE_K][WEFT_TILE];                                 \
  __local T b_tile[WEFT_TILE_K][WEFT_TILE];                                 \
  const int tx = get_local_id(0), ty = get_local_id(1);                     \
  const int item = ty * WEFT_ITEMS + tx;                                    \
  const long m0 = (long)get_group_id(1) * WEFT_TILE;                        \
  const long n0 = (long)get_group_id(0) * WEFT_TILE;                        \
  T acc[WEFT_PER_ITEM][WEFT_PER_ITEM];                                      \
  for (int i = 0; i < WEFT_PER_ITEM; ++i)                                   \
    for (int j = 0; j < WEFT_PER_ITEM; ++j) acc[i][j] = (T)0;               \
  for (long k0 = 0; k0 < K; k0 += WEFT_TILE_K) {                            \
    /* 1024 elements of each tile, 4 per item. */                           \
    for (int l = 0; l < 4; ++l) {                                           \
      const int e = item + l * WEFT_ITEMS * WEFT_ITEMS;                     \
      const int am = e / WEFT_TILE_K, ak = e % WEFT_TILE_K;                 \
      const long gm = m0 + am, gk = k0 + ak;                                \
      a_tile[ak][am] = (gm < M && gk < K)                                   \
          ? a[a_off + gm * a_rs + gk * a_cs] : (T)0;                        \
      const int bk = e / WEFT_TILE, bn = e % WEFT_TILE;                     \
      const long hk = k0 + bk, hn = n0 + bn;                                \
      b_tile[bk][bn] = (hk < K && hn < N)                                   \
          ? b[b_off + hk * b_rs + hn * b_cs] : (T)0;                        \
    }                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
    for (int k = 0; k < WEFT_TILE_K; ++k) {                                 \
      T av[WEFT_PER_ITEM], bv[WEFT_PER_ITEM];                               \
      for (int i = 0; i < WEFT_PER_ITEM; ++i) {                             \
        av[i] = a_tile[k][ty + i * WEFT_ITEMS];                             \
        bv[i] = b_tile[k][tx + i * WEFT_ITEMS];                             \
      }                                                                     \
      for (int i = 0; i < WEFT_PER_ITEM; ++i)                               \
        for (int j = 0; j < WEFT_PER_ITEM; ++j)                             \
          acc[i][j] += av[i] * bv[j];                                       \
    }                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
  }                                                                         \
  for (int i = 0; i < WEFT_PER_ITEM; ++i) {                                 \
    const long m = m0 + ty + i * WEFT_ITEMS;                                \
    if (m >= M) continue;                                                   \
    for (int j = 0; j < WEFT_PER_ITEM; ++j) {                               \
      const long n = n0 + tx + j * WEFT_ITEMS;                              \
      if (n < N) c[c_off + m * N + n] = acc[i][j];                          \
    }                                                                       \
  }                                                                         \
}

/* For CPU devices (PoCL): each item computes 8 rows x 16 columns of C in
 * sixteen-lane vectors, streaming B's rows and broadcasting A's elements.
 * Such a device runs a work-group's items as loops; explicit vectors make
 * the FMAs as wide as the SIMD unit, where the tiled kernel above keeps
 * its 4 x 4 blocks in arrays the compiler does not vectorize (about 20x
 * slower on PoCL).  Columns past N and a strided B (transpose_b) take a
 * gathering load; rows past M read row M - 1 and are not stored. */
#define WEFT_MATMUL_ROWS(T, V, S)                                           \
inline V weft_load_row16_##S(__global const T* b, long k, long n0, long N,  \
                             long b_rs, long b_cs, int contiguous) {        \
  if (contiguous) return vload16(0, b + k * b_rs + n0);                     \
  T lanes[16];                                                              \
  for (int j = 0; j < 16; ++j)                                              \
    lanes[j] = n0 + j < N ? b[k * b_rs + (n0 + j) * b_cs] : (T)0;           \
  return vload16(0, lanes);                                                 \
}                                                                           \
__kernel void matmul_rows_##S(                                              \
    __global const T* a, long a_off, __global const T* b, long b_off,       \
    __global T* c, long c_off, long M, long N, long K, long a_rs,           \
    long a_cs, long b_rs, long b_cs) {                                      \
  const long n0 = get_global_id(0) * 16;                                    \
  const long m0 = get_global_id(1) * 8;                                     \
  if (n0 >= N || m0 >= M) return;                                           \
  const int contiguous = b_cs == 1 && n0 + 16 <= N;                         \
  V acc[8];                                                                 \
  long row[8];                                                              \
  _Pragma("unroll")                                                         \
  for (int i = 0; i < 8; ++i) {                                             \
    acc[i] = (V)0;                                                          \
    row[i] = a_off + min(m0 + i, M - 1) * a_rs;                             \
  }                                                                         \
  __global const T* bp = b + b_off;                                         \
  for (long k = 0; k < K; ++k) {                                            \
    const V bv =                                                            \
        weft_load_row16_##S(bp, k, n0, N, b_rs, b_cs, contiguous);          \
    const long ak = k * a_cs;                                               \
    _Pragma("unroll")                                                       \
    for (int i = 0; i < 8; ++i) acc[i] = fma((V)a[row[i] + ak], bv, acc[i]);\
  }                                                                         \
  for (int i = 0; i < 8 && m0 + i < M; ++i) {                               \
    __global T* cp = c + c_off + (m0 + i) * N + n0;                         \
    if (n0 + 16 <= N) {                                                     \
      vstore16(acc[i], 0, cp);                                              \
    } else {                                                                \
      T lanes[16];                                                          \
      vstore16(acc[i], 0, lanes);                                           \
      for (int j = 0; n0 + j < N; ++j) cp[j] = lanes[j];                    \
    }                                                                       \
  }                                                                         \
}

WEFT_MATMUL(float, f32)
WEFT_MATMUL_ROWS(float, float16, f32)
#ifdef WEFT_FP64
WEFT_MATMUL(double, f64)
WEFT_MATMUL_ROWS(double, double16, f64)
#endif
)CLC";

}  // namespace weft_opencl
