// OpenCL C of layout.cc.  Slice and Tile are strided reads (the array
// program's permute_<size>), Pack and Unpack row copies (its copy_rows);
// what is left here writes: Pad's interior, OneHot's on values and the
// index values of Shape, Size and Rank.  Element kernels go by size (b1,
// b2, b4, b8), so one serves every dtype.
#include "program.h"

namespace weft_opencl {

const char* const kLayoutSource = R"CLC(
/* place: x's element i (all of x, in order) to z at the offset its
 * coordinates over `dims` have with z's `strides` (Pad's interior; z_off
 * is the interior's corner).
 * one_hot: z seen as [outer, depth, inner] and already off_value; item p
 * of the indices ([outer, inner]) writes `on` where its index lies in
 * [0, depth) and leaves its row alone elsewhere. */
#define WEFT_ONE_HOT(T, S, I, IS)                                           \
__kernel void one_hot_##S##_##IS(__global const I* idx, long idx_off,      \
                                 __global T* z, long z_off, long n,        \
                                 long depth, long inner, ulong on) {       \
  const long p = get_global_id(0);                                          \
  if (p >= n) return;                                                       \
  const long v = idx[idx_off + p];                                          \
  if (v < 0 || v >= depth) return;                                          \
  const long o = p / inner;                                                 \
  z[z_off + (o * depth + v) * inner + (p - o * inner)] = (T)on;             \
}
#define WEFT_PLACE(T, S)                                                    \
__kernel void place_##S(__global const T* x, long x_off, __global T* z,    \
                        long z_off, long n, int rank, long8 dims,          \
                        long8 strides) {                                   \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  z[z_off + weft_offset(i, rank, dims, strides)] = x[x_off + i];            \
}                                                                           \
WEFT_ONE_HOT(T, S, int, i32)                                                \
WEFT_ONE_HOT(T, S, long, i64)
WEFT_PLACE(uchar, b1)
WEFT_PLACE(ushort, b2)
WEFT_PLACE(uint, b4)
WEFT_PLACE(ulong, b8)

/* put: the first n (at most 8) of `values` into z, as Shape, Size and Rank
 * write the dims the host knows. */
#define WEFT_PUT(T, S)                                                      \
__kernel void put_##S(__global T* z, long z_off, int n, long8 values) {    \
  const int i = get_global_id(0);                                           \
  if (i >= n) return;                                                       \
  long v[8];                                                                \
  vstore8(values, 0, v);                                                    \
  z[z_off + i] = (T)v[i];                                                   \
}
WEFT_PUT(int, i32)
WEFT_PUT(long, i64)
)CLC";

}  // namespace weft_opencl
