// OpenCL C of the array kernels that move elements of any dtype
// (Transpose, Concat, Split, Gather): they go by the element's size (b1,
// b2, b4, b8), as SliceGrad's do.
#include "program.h"

namespace weft_opencl {

const char* const kArraySource = R"CLC(
/* permute: z (dims, outermost first) reads x at the strides x has along
 * each of z's dims (a transpose).  copy_rows: `n` elements as rows of
 * `cols`, row r of x starting at r * x_row + x_col, of z at r * z_row +
 * z_col (one concat input into its columns, or one split piece out of
 * them). */
#define WEFT_MOVE(T, S)                                                     \
__kernel void permute_##S(__global const T* x, long x_off,                 \
                          __global T* z, long z_off, long n, int rank,     \
                          long8 dims, long8 strides) {                     \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  z[z_off + i] = x[x_off + weft_offset(i, rank, dims, strides)];            \
}                                                                           \
__kernel void copy_rows_##S(__global const T* x, long x_off,               \
                            __global T* z, long z_off, long n, long cols,  \
                            long x_row, long x_col, long z_row,            \
                            long z_col) {                                  \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  const long r = i / cols, c = i - r * cols;                                \
  z[z_off + r * z_row + z_col + c] = x[x_off + r * x_row + x_col + c];      \
}
WEFT_MOVE(uchar, b1)
WEFT_MOVE(ushort, b2)
WEFT_MOVE(uint, b4)
WEFT_MOVE(ulong, b8)

/* select: z = c ? t : e over z's dims, each operand at its own strides (0
 * where it broadcasts); a condition byte is true when non-zero. */
#define WEFT_SELECT(T, S)                                                   \
__kernel void select_##S(__global const uchar* c, long c_off,              \
                         __global const T* t, long t_off,                  \
                         __global const T* e, long e_off, __global T* z,   \
                         long z_off, long n, int rank, long8 dims,         \
                         long8 cs, long8 ts, long8 es) {                   \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  z[z_off + i] = c[c_off + weft_offset(i, rank, dims, cs)] != 0             \
                     ? t[t_off + weft_offset(i, rank, dims, ts)]            \
                     : e[e_off + weft_offset(i, rank, dims, es)];           \
}
WEFT_SELECT(uchar, b1)
WEFT_SELECT(ushort, b2)
WEFT_SELECT(uint, b4)
WEFT_SELECT(ulong, b8)

/* gather: params seen as [outer, limit, inner], z as [outer, n, inner];
 * an index outside [0, limit) is reported (and its slice left zero). */
#define WEFT_GATHER(T, S, I, IS)                                            \
__kernel void gather_##S##_##IS(                                           \
    __global const T* p, long p_off, __global const I* idx, long idx_off,  \
    __global T* z, long z_off, long total, long n, long limit, long inner, \
    __global int* err, int launch) {                                        \
  const long e = get_global_id(0);                                          \
  if (e >= total) return;                                                   \
  const long i = e % inner, k = (e / inner) % n, o = e / (inner * n);       \
  const long v = idx[idx_off + k];                                          \
  if (v < 0 || v >= limit) {                                                \
    weft_report(err, launch, v, k);                                         \
    z[z_off + e] = (T)0;                                                    \
    return;                                                                 \
  }                                                                         \
  z[z_off + e] = p[p_off + (o * limit + v) * inner + i];                    \
}
WEFT_GATHER(uchar, b1, int, i32)
WEFT_GATHER(uchar, b1, long, i64)
WEFT_GATHER(ushort, b2, int, i32)
WEFT_GATHER(ushort, b2, long, i64)
WEFT_GATHER(uint, b4, int, i32)
WEFT_GATHER(uint, b4, long, i64)
WEFT_GATHER(ulong, b8, int, i32)
WEFT_GATHER(ulong, b8, long, i64)
)CLC";

}  // namespace weft_opencl
