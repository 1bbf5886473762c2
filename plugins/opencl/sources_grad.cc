// OpenCL C of the gradient kernels (grad.cc): the element-wise gradients,
// SumGrad and MeanGrad, SliceGrad and PadGrad, GatherGrad.
#include "program.h"

namespace weft_opencl {

const char* const kGradSource = R"CLC(
/* The CPU plugin computes these expressions as written, without fused
 * multiply-adds: so do we. */
#pragma OPENCL FP_CONTRACT OFF

/* ---- Element-wise gradients over two same-shaped inputs a and b:
 * ReluGrad(grad, x), the others (y, grad). ---- */
#define WEFT_GRAD2(NAME, T, EXPR)                                           \
__kernel void NAME(__global const T* ap, long a_off, __global const T* bp, \
                   long b_off, __global T* z, long z_off, long n) {        \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  const T a = ap[a_off + i], b = bp[b_off + i];                             \
  z[z_off + i] = EXPR;                                                      \
}

#define WEFT_FLOAT_GRADS(T, S)                                              \
  WEFT_GRAD2(relu_grad_##S, T, b > (T)0 ? a : (T)0)                         \
  WEFT_GRAD2(sigmoid_grad_##S, T, b * a * ((T)1 - a))                       \
  WEFT_GRAD2(tanh_grad_##S, T, b * ((T)1 - a * a))                          \
  WEFT_GRAD2(sqrt_grad_##S, T, b * (T)0.5 / a)                              \
  WEFT_GRAD2(rsqrt_grad_##S, T, b * (T)(-0.5) * a * a * a)

WEFT_FLOAT_GRADS(float, f32)
#ifdef WEFT_FP64
WEFT_FLOAT_GRADS(double, f64)
#endif

/* ---- SumGrad and MeanGrad: element i of x takes its reduction's
 * gradient, dy at weft_offset(i) over x's dims with the group index's
 * strides (0 on reduced axes), times `scale` (1, or 1 / the group size). */
#define WEFT_SPREAD(T, S)                                                   \
__kernel void spread_grad_##S(__global const T* dy, long dy_off,           \
                              __global T* dx, long dx_off, long n,         \
                              int rank, long8 dims, long8 strides,         \
                              T scale) {                                    \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  dx[dx_off + i] = dy[dy_off + weft_offset(i, rank, dims, strides)] * scale; \
}
WEFT_SPREAD(float, f32)
#ifdef WEFT_FP64
WEFT_SPREAD(double, f64)
#endif

/* ---- ProdGrad: per group, the product of its nonzero elements and its
 * count of zeros, over the group's elements in row-major order (the
 * CPU's order, so the products agree bit for bit); then each element's
 * gradient, dy times the product of the others: nonzero / x without a
 * zero, nonzero for the one zero, 0 with two or more. */
#define WEFT_PROD_GRAD(T, S)                                                \
__kernel void prod_stats_##S(__global const T* x, long x_off,              \
                             __global T* nonzero, long nz_off,             \
                             __global long* zeros, long z_off,             \
                             long groups, long size, int kept_rank,        \
                             long8 kept_dims, long8 kept_strides,          \
                             int red_rank, long8 red_dims,                 \
                             long8 red_strides) {                          \
  const long k = get_global_id(0);                                          \
  if (k >= groups) return;                                                  \
  const long base = x_off + weft_offset(k, kept_rank, kept_dims,            \
                                        kept_strides);                      \
  T product = (T)1;                                                         \
  long count = 0;                                                           \
  for (long r = 0; r < size; ++r) {                                         \
    const T v = x[base + weft_offset(r, red_rank, red_dims, red_strides)];  \
    if (v == (T)0) ++count;                                                 \
    else product *= v;                                                      \
  }                                                                         \
  nonzero[nz_off + k] = product;                                            \
  zeros[z_off + k] = count;                                                 \
}                                                                           \
__kernel void prod_grad_##S(__global const T* dy, long dy_off,             \
                            __global const T* x, long x_off,               \
                            __global const T* nonzero, long nz_off,        \
                            __global const long* zeros, long z_off,        \
                            __global T* dx, long dx_off, long n, int rank, \
                            long8 dims, long8 strides) {                    \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  const long k = weft_offset(i, rank, dims, strides);                       \
  const T v = x[x_off + i];                                                 \
  const long count = zeros[z_off + k];                                      \
  T others = (T)0;                                                          \
  if (count == 0) others = nonzero[nz_off + k] / v;                         \
  else if (count == 1 && v == (T)0) others = nonzero[nz_off + k];           \
  dx[dx_off + i] = dy[dy_off + k] * others;                                 \
}
WEFT_PROD_GRAD(float, f32)
#ifdef WEFT_FP64
WEFT_PROD_GRAD(double, f64)
#endif

/* ---- SliceGrad and PadGrad move elements of any dtype: the kernels go by
 * the element's size (b1, b2, b4, b8).  An item per output element, whose
 * coordinates over `dims` (outermost first) are those of the output.
 *   slice_grad: the output is the larger shape; inside the box of `box`
 *     dims at `begin` it holds grad's element, elsewhere 0.
 *   pad_grad: the output is the box; it reads grad (of `outer` dims) at
 *     begin + its coordinates. */
#define WEFT_BOX(T, S)                                                      \
__kernel void slice_grad_##S(__global const T* g, long g_off,              \
                             __global T* z, long z_off, long n, int rank,  \
                             long8 dims8, long8 begin8, long8 box8) {      \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  long dims[8], begin[8], box[8];                                           \
  vstore8(dims8, 0, dims);                                                  \
  vstore8(begin8, 0, begin);                                                \
  vstore8(box8, 0, box);                                                    \
  long rest = i, src = 0, stride = 1;                                       \
  bool inside = true;                                                       \
  for (int d = rank - 1; d >= 0; --d) {                                     \
    const long c = rest % dims[d] - begin[d];                               \
    rest /= dims[d];                                                        \
    inside = inside && c >= 0 && c < box[d];                                \
    src += c * stride;                                                      \
    stride *= box[d];                                                       \
  }                                                                         \
  z[z_off + i] = inside ? g[g_off + src] : (T)0;                            \
}                                                                           \
__kernel void pad_grad_##S(__global const T* g, long g_off,                \
                           __global T* z, long z_off, long n, int rank,    \
                           long8 dims8, long8 begin8, long8 outer8) {      \
  const long i = get_global_id(0);                                          \
  if (i >= n) return;                                                       \
  long dims[8], begin[8], outer[8];                                         \
  vstore8(dims8, 0, dims);                                                  \
  vstore8(begin8, 0, begin);                                                \
  vstore8(outer8, 0, outer);                                                \
  long rest = i, src = 0, stride = 1;                                       \
  for (int d = rank - 1; d >= 0; --d) {                                     \
    src += (rest % dims[d] + begin[d]) * stride;                            \
    rest /= dims[d];                                                        \
    stride *= outer[d];                                                     \
  }                                                                         \
  z[z_off + i] = g[g_off + src];                                            \
}
WEFT_BOX(uchar, b1)
WEFT_BOX(ushort, b2)
WEFT_BOX(uint, b4)
WEFT_BOX(ulong, b8)

/* ---- GatherGrad: params' shape seen as [outer, limit, inner]; element
 * (o, l, i) adds, in the order of the indices (the CPU's), every slice of
 * grad [outer, n, inner] whose index is l.  No atomics: each item owns its
 * element.  Item 0 also checks the indices. ---- */
#define WEFT_GATHER_GRAD(T, S, I, IS)                                       \
__kernel void gather_grad_##S##_##IS(                                      \
    __global const T* g, long g_off, __global const I* idx, long idx_off,  \
    __global T* z, long z_off, long total, long n, long limit, long inner, \
    __global int* err, int launch) {                                        \
  const long e = get_global_id(0);                                          \
  if (e >= total) return;                                                   \
  if (e == 0) {                                                             \
    for (long j = 0; j < n; ++j) {                                          \
      const long v = idx[idx_off + j];                                      \
      if (v < 0 || v >= limit) {                                            \
        weft_report(err, launch, v, j);                                     \
        break;                                                              \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  const long i = e % inner, l = (e / inner) % limit, o = e / (inner * limit); \
  __global const T* src = g + g_off + o * n * inner + i;                    \
  T acc = (T)0;                                                             \
  for (long j = 0; j < n; ++j) {                                            \
    if ((long)idx[idx_off + j] == l) acc += src[j * inner];                 \
  }                                                                         \
  z[z_off + e] = acc;                                                       \
}
WEFT_GATHER_GRAD(float, f32, int, i32)
WEFT_GATHER_GRAD(float, f32, long, i64)
#ifdef WEFT_FP64
WEFT_GATHER_GRAD(double, f64, int, i32)
WEFT_GATHER_GRAD(double, f64, long, i64)
#endif
)CLC";

}  // namespace weft_opencl
