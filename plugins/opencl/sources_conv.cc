// OpenCL C of the window kernels (conv.cc): Conv2D and FusedConv2D, both
// convolution gradients, max and average pooling with their gradients
// (including the window-index forms the planner's fusion makes) and batch
// normalisation.
//
// Every kernel takes the window's geometry as two long8 arguments (as
// weft_window::Window2D holds it; conv.cc packs them):
//   g0 = (batch, in_h, in_w, channels, k_h, k_w, out_h, out_w)
//   g1 = (stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left,
//         out_channels, unused)
#include "program.h"

namespace weft_opencl {

const char* const kConvSource = R"CLC(
#define WEFT_GEOMETRY                                                       \
  const long N = g0.s0, H = g0.s1, W = g0.s2, C = g0.s3;                    \
  const long KH = g0.s4, KW = g0.s5, OH = g0.s6, OW = g0.s7;                \
  const long SH = g1.s0, SW = g1.s1, DH = g1.s2, DW = g1.s3;                \
  const long PT = g1.s4, PL = g1.s5, CO = g1.s6;

/* ---- The convolutions as implicit GEMMs: an item computes 8 rows x 16
 * columns of the product in sixteen-lane vectors (as matmul_rows does, the
 * shape that runs as wide SIMD loops on CPU devices), gathering the rows'
 * operand from the window as it goes instead of from a patch matrix.  A
 * row past the end repeats the last row and is not stored; columns past
 * the end load as 0 and are not stored. */

/* Sixteen columns [n0, n0 + 16) of row `row` of a row-major matrix `ncols`
 * wide. */
#define WEFT_LOAD16(T, V, S)                                                \
inline V weft_load16_##S(__global const T* p, long row, long n0,           \
                         long ncols) {                                      \
  if (n0 + 16 <= ncols) return vload16(0, p + row * ncols + n0);            \
  T lanes[16];                                                              \
  for (int j = 0; j < 16; ++j)                                              \
    lanes[j] = n0 + j < ncols ? p[row * ncols + n0 + j] : (T)0;             \
  return vload16(0, lanes);                                                 \
}                                                                           \
inline void weft_store16_##S(__global T* p, long row, long n0, long ncols, \
                             V value) {                                     \
  if (n0 + 16 <= ncols) {                                                   \
    vstore16(value, 0, p + row * ncols + n0);                               \
    return;                                                                 \
  }                                                                         \
  T lanes[16];                                                              \
  vstore16(value, 0, lanes);                                                \
  for (int j = 0; n0 + j < ncols; ++j) p[row * ncols + n0 + j] = lanes[j];  \
}

/* The accumulators of an item's 8 rows, zeroed. */
#define WEFT_ACC_ZERO(V)                                                    \
  V acc[8];                                                                 \
  _Pragma("unroll")                                                         \
  for (int i = 0; i < 8; ++i) acc[i] = (V)0;

/* acc[i] += src[at[i] + k] * bv for the 8 rows, 0 for a row whose at[i] is
 * -1 (its tap is in the padding). */
#define WEFT_FMA_ROWS(T, V, at, src, k, bv)                                 \
  _Pragma("unroll")                                                         \
  for (int i = 0; i < 8; ++i) {                                             \
    const T a = at[i] >= 0 ? src[at[i] + (k)] : (T)0;                       \
    acc[i] = fma((V)a, bv, acc[i]);                                         \
  }

/* Stores the rows [m0, M) of the 8 into the ncols-wide `out`. */
#define WEFT_STORE_ROWS(S, out, M, ncols)                                   \
  for (int i = 0; i < 8 && m0 + i < (M); ++i)                               \
    weft_store16_##S(out, m0 + i, n0, ncols, acc[i]);

/* Conv2D: y[pixel, co] = sum over (ky, kx, ci) of x at the tap times
 * filter[ky, kx, ci, co]; FusedConv2D (fused) then adds the bias and
 * applies ReLU (NaN stays NaN, as the CPU's). */
#define WEFT_CONV_FORWARD(T, V, S)                                          \
__kernel void conv2d_##S(__global const T* x, long x_off,                  \
                         __global const T* f, long f_off,                  \
                         __global const T* bias, long b_off,               \
                         __global T* y, long y_off, long8 g0, long8 g1,    \
                         int fused) {                                       \
  WEFT_GEOMETRY                                                             \
  const long n0 = get_global_id(0) * 16, m0 = get_global_id(1) * 8;         \
  const long M = N * OH * OW;                                               \
  if (n0 >= CO || m0 >= M) return;                                          \
  long base[8], y0[8], x0[8];                                               \
  _Pragma("unroll")                                                         \
  for (int i = 0; i < 8; ++i) {                                             \
    const long p = min(m0 + i, M - 1);                                      \
    x0[i] = p % OW * SW - PL;                                               \
    y0[i] = p / OW % OH * SH - PT;                                          \
    base[i] = p / (OW * OH) * H;                                            \
  }                                                                         \
  __global const T* xp = x + x_off;                                         \
  __global const T* fp = f + f_off;                                         \
  WEFT_ACC_ZERO(V)                                                          \
  for (long ky = 0; ky < KH; ++ky) {                                        \
    for (long kx = 0; kx < KW; ++kx) {                                      \
      long at[8];                                                           \
      _Pragma("unroll")                                                     \
      for (int i = 0; i < 8; ++i) {                                         \
        const long iy = y0[i] + ky * DH, ix = x0[i] + kx * DW;              \
        at[i] = iy >= 0 && iy < H && ix >= 0 && ix < W                      \
                    ? ((base[i] + iy) * W + ix) * C : -1;                   \
      }                                                                     \
      const long frow = (ky * KW + kx) * C;                                 \
      for (long ci = 0; ci < C; ++ci) {                                     \
        const V bv = weft_load16_##S(fp, frow + ci, n0, CO);                \
        WEFT_FMA_ROWS(T, V, at, xp, ci, bv)                                 \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  if (fused) {                                                              \
    const V b = weft_load16_##S(bias + b_off, 0, n0, CO);                   \
    _Pragma("unroll")                                                       \
    for (int i = 0; i < 8; ++i) {                                           \
      const V v = acc[i] + b;                                               \
      acc[i] = select(v, (V)0, v < (V)0);                                   \
    }                                                                       \
  }                                                                         \
  WEFT_STORE_ROWS(S, y + y_off, M, CO)                                      \
}

/* The filter [KH, KW, C, CO] as [KH, KW, CO, C], so that the input
 * gradient reads it a row of input channels at a time. */
#define WEFT_FILTER_SWAP(T, S)                                              \
__kernel void filter_swap_##S(__global const T* f, long f_off,             \
                              __global T* out, long out_off, long taps,    \
                              long C, long CO) {                            \
  const long i = get_global_id(0);                                          \
  if (i >= taps * C * CO) return;                                           \
  const long co = i % CO, ci = i / CO % C, tap = i / (CO * C);              \
  out[out_off + (tap * CO + co) * C + ci] = f[f_off + i];                   \
}

/* Conv2DBackpropInput: dx[n, iy, ix, ci] = sum over the taps (ky, kx) whose
 * output pixel (oy, ox) reads (iy, ix), and over co, of dy[n, oy, ox, co]
 * times filter[ky, kx, ci, co] (`fs`: the swapped filter). */
#define WEFT_CONV_BACKPROP_INPUT(T, V, S)                                   \
__kernel void conv2d_backprop_input_##S(                                    \
    __global const T* fs, long f_off, __global const T* dy, long dy_off,   \
    __global T* dx, long dx_off, long8 g0, long8 g1) {                      \
  WEFT_GEOMETRY                                                             \
  const long n0 = get_global_id(0) * 16, m0 = get_global_id(1) * 8;         \
  const long M = N * H * W;                                                 \
  if (n0 >= C || m0 >= M) return;                                           \
  long img[8], iy[8], ix[8];                                                \
  _Pragma("unroll")                                                         \
  for (int i = 0; i < 8; ++i) {                                             \
    const long p = min(m0 + i, M - 1);                                      \
    ix[i] = p % W;                                                          \
    iy[i] = p / W % H;                                                      \
    img[i] = p / (W * H) * OH;                                              \
  }                                                                         \
  __global const T* gp = dy + dy_off;                                       \
  __global const T* fp = fs + f_off;                                        \
  WEFT_ACC_ZERO(V)                                                          \
  for (long ky = 0; ky < KH; ++ky) {                                        \
    for (long kx = 0; kx < KW; ++kx) {                                      \
      long at[8];                                                           \
      _Pragma("unroll")                                                     \
      for (int i = 0; i < 8; ++i) {                                         \
        const long ty = iy[i] + PT - ky * DH, tx = ix[i] + PL - kx * DW;    \
        const long oy = ty / SH, ox = tx / SW;                              \
        at[i] = ty >= 0 && tx >= 0 && ty % SH == 0 && tx % SW == 0 &&       \
                        oy < OH && ox < OW                                  \
                    ? ((img[i] + oy) * OW + ox) * CO : -1;                  \
      }                                                                     \
      const long frow = (ky * KW + kx) * CO;                                \
      for (long co = 0; co < CO; ++co) {                                    \
        const V bv = weft_load16_##S(fp, frow + co, n0, C);                 \
        WEFT_FMA_ROWS(T, V, at, gp, co, bv)                                 \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  WEFT_STORE_ROWS(S, dx + dx_off, M, C)                                     \
}

/* Conv2DBackpropFilter: df[(ky, kx, ci), co] = sum over the output pixels
 * of x at the tap (ky, kx) of the pixel, channel ci, times dy[pixel, co]. */
#define WEFT_CONV_BACKPROP_FILTER(T, V, S)                                  \
__kernel void conv2d_backprop_filter_##S(                                   \
    __global const T* x, long x_off, __global const T* dy, long dy_off,    \
    __global T* df, long df_off, long8 g0, long8 g1) {                      \
  WEFT_GEOMETRY                                                             \
  const long n0 = get_global_id(0) * 16, m0 = get_global_id(1) * 8;         \
  const long M = KH * KW * C;                                               \
  if (n0 >= CO || m0 >= M) return;                                          \
  long dy_[8], dx_[8], ch[8];                                               \
  _Pragma("unroll")                                                         \
  for (int i = 0; i < 8; ++i) {                                             \
    const long r = min(m0 + i, M - 1);                                      \
    ch[i] = r % C;                                                          \
    dx_[i] = r / C % KW * DW - PL;                                          \
    dy_[i] = r / (C * KW) * DH - PT;                                        \
  }                                                                         \
  __global const T* xp = x + x_off;                                         \
  __global const T* gp = dy + dy_off;                                       \
  WEFT_ACC_ZERO(V)                                                          \
  for (long n = 0; n < N; ++n) {                                            \
    for (long oy = 0; oy < OH; ++oy) {                                      \
      long row[8];                                                          \
      _Pragma("unroll")                                                     \
      for (int i = 0; i < 8; ++i) {                                         \
        const long iy = oy * SH + dy_[i];                                   \
        row[i] = iy >= 0 && iy < H ? (n * H + iy) * W : -1;                 \
      }                                                                     \
      for (long ox = 0; ox < OW; ++ox) {                                    \
        const V bv = weft_load16_##S(gp, (n * OH + oy) * OW + ox, n0, CO);  \
        _Pragma("unroll")                                                   \
        for (int i = 0; i < 8; ++i) {                                       \
          const long ix = ox * SW + dx_[i];                                 \
          const T a = row[i] >= 0 && ix >= 0 && ix < W                      \
                          ? xp[(row[i] + ix) * C + ch[i]] : (T)0;           \
          acc[i] = fma((V)a, bv, acc[i]);                                   \
        }                                                                   \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  WEFT_STORE_ROWS(S, df + df_off, M, CO)                                    \
}

/* ---- Pooling: an item per output element (n, oy, ox, c), channels
 * fastest, so neighbouring items read neighbouring memory.  Windows are
 * clipped to the input (padding takes part in neither the maximum nor the
 * average).  The maximum is the first in row-major order on ties, and the
 * first NaN if the window holds one (runtime/ops/CONVENTIONS.md). */

/* The clipped window of output pixel (oy, ox): rows [ylo, yhi), columns
 * [xlo, xhi), starting (unclipped) at (wy, wx). */
#define WEFT_CLIP(oy, ox)                                                   \
  const long wy = (oy) * SH - PT, wx = (ox) * SW - PL;                      \
  const long ylo = max(wy, 0L), yhi = min(wy + KH, H);                      \
  const long xlo = max(wx, 0L), xhi = min(wx + KW, W);

/* The maximum of channel c's window and its position in the unclipped
 * window. */
#define WEFT_WINDOW_MAX(T, S)                                               \
inline T weft_window_max_##S(__global const T* image, long c, long C,      \
                             long W, long wy, long wx, long ylo, long yhi, \
                             long xlo, long xhi, long KW, int* where) {     \
  T best = image[(ylo * W + xlo) * C + c];                                  \
  int at = (int)((ylo - wy) * KW + (xlo - wx));                             \
  for (long yy = ylo; yy < yhi; ++yy) {                                     \
    for (long xx = xlo; xx < xhi; ++xx) {                                   \
      const T v = image[(yy * W + xx) * C + c];                             \
      if (best == best && (v != v || v > best)) {                           \
        best = v;                                                           \
        at = (int)((yy - wy) * KW + (xx - wx));                             \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  *where = at;                                                              \
  return best;                                                              \
}

/* MaxPool (index NULL... with_index 0) and MaxPoolWithWindowIndex. */
#define WEFT_MAX_POOL(T, S)                                                 \
__kernel void max_pool_##S(__global const T* x, long x_off,                \
                           __global T* y, long y_off,                       \
                           __global uchar* index, long i_off, long8 g0,    \
                           long8 g1, int with_index) {                      \
  WEFT_GEOMETRY                                                             \
  const long e = get_global_id(0);                                          \
  if (e >= N * OH * OW * C) return;                                         \
  const long c = e % C, ox = e / C % OW, oy = e / (C * OW) % OH;            \
  const long n = e / (C * OW * OH);                                         \
  WEFT_CLIP(oy, ox)                                                         \
  int where = 0;                                                            \
  y[y_off + e] = weft_window_max_##S(x + x_off + n * H * W * C, c, C, W,    \
                                     wy, wx, ylo, yhi, xlo, xhi, KW,        \
                                     &where);                               \
  if (with_index) index[i_off + e] = (uchar)where;                          \
}

/* AvgPool: the mean of the window's elements on the input. */
#define WEFT_AVG_POOL(T, S)                                                 \
__kernel void avg_pool_##S(__global const T* x, long x_off,                \
                           __global T* y, long y_off, long8 g0, long8 g1) { \
  WEFT_GEOMETRY                                                             \
  const long e = get_global_id(0);                                          \
  if (e >= N * OH * OW * C) return;                                         \
  const long c = e % C, ox = e / C % OW, oy = e / (C * OW) % OH;            \
  const long n = e / (C * OW * OH);                                         \
  WEFT_CLIP(oy, ox)                                                         \
  __global const T* image = x + x_off + n * H * W * C;                      \
  T sum = (T)0;                                                             \
  for (long yy = ylo; yy < yhi; ++yy)                                       \
    for (long xx = xlo; xx < xhi; ++xx) sum += image[(yy * W + xx) * C + c]; \
  y[y_off + e] = sum / (T)((yhi - ylo) * (xhi - xlo));                      \
}

/* The output pixels whose windows hold input row iy: [*lo, *hi). */
inline void weft_windows_over(long i, long P, long K, long S, long O,
                              long* lo, long* hi) {
  const long first = i + P - K + 1; /* the lowest window start holding i */
  *lo = first <= 0 ? 0 : (first + S - 1) / S;
  const long last = (i + P) / S;
  *hi = min(last + 1, O);
}

/* The pooling gradients, an item per input element, each adding what the
 * windows over it hand it (no two items write one element: no atomics).
 *   kind 0 MaxPoolGrad: a window's gradient goes to its maximum;
 *   kind 1 MaxPoolReluGrad: ... where that maximum is > 0;
 *   kind 2 AvgPoolGrad: shared among the window's elements on the input. */
#define WEFT_POOL_GRAD(T, S)                                                \
__kernel void pool_grad_##S(__global const T* x, long x_off,               \
                            __global const T* dy, long dy_off,             \
                            __global T* dx, long dx_off, long8 g0,         \
                            long8 g1, int kind) {                           \
  WEFT_GEOMETRY                                                             \
  const long e = get_global_id(0);                                          \
  if (e >= N * H * W * C) return;                                           \
  const long c = e % C, ix = e / C % W, iy = e / (C * W) % H;               \
  const long n = e / (C * W * H);                                           \
  long oy_lo, oy_hi, ox_lo, ox_hi;                                          \
  weft_windows_over(iy, PT, KH, SH, OH, &oy_lo, &oy_hi);                    \
  weft_windows_over(ix, PL, KW, SW, OW, &ox_lo, &ox_hi);                    \
  __global const T* image = x + x_off + n * H * W * C;                      \
  __global const T* g = dy + dy_off + n * OH * OW * C;                      \
  T sum = (T)0;                                                             \
  for (long oy = oy_lo; oy < oy_hi; ++oy) {                                 \
    for (long ox = ox_lo; ox < ox_hi; ++ox) {                               \
      WEFT_CLIP(oy, ox)                                                     \
      const T gv = g[(oy * OW + ox) * C + c];                               \
      if (kind == 2) {                                                      \
        sum += gv / (T)((yhi - ylo) * (xhi - xlo));                         \
        continue;                                                           \
      }                                                                     \
      int where = 0;                                                        \
      const T best = weft_window_max_##S(image, c, C, W, wy, wx, ylo, yhi,  \
                                         xlo, xhi, KW, &where);             \
      if (where == (int)((iy - wy) * KW + (ix - wx)) &&                     \
          (kind == 0 || best > (T)0))                                       \
        sum += gv;                                                          \
    }                                                                       \
  }                                                                         \
  dx[dx_off + e] = sum;                                                     \
}

/* MaxPoolGradFromWindowIndex (relu 0) and MaxPoolReluGradFromWindowIndex
 * (relu 1): each window's gradient goes to the element its index names,
 * where orig_output (the window's maximum) is > 0 for the latter.
 * Indices were checked first (check_window_index). */
#define WEFT_POOL_GRAD_FROM_INDEX(T, S)                                     \
__kernel void pool_grad_from_index_##S(                                     \
    __global const T* orig, long o_off, __global const uchar* index,       \
    long i_off, __global const T* dy, long dy_off, __global T* dx,         \
    long dx_off, long8 g0, long8 g1, int relu) {                            \
  WEFT_GEOMETRY                                                             \
  const long e = get_global_id(0);                                          \
  if (e >= N * H * W * C) return;                                           \
  const long c = e % C, ix = e / C % W, iy = e / (C * W) % H;               \
  const long n = e / (C * W * H);                                           \
  long oy_lo, oy_hi, ox_lo, ox_hi;                                          \
  weft_windows_over(iy, PT, KH, SH, OH, &oy_lo, &oy_hi);                    \
  weft_windows_over(ix, PL, KW, SW, OW, &ox_lo, &ox_hi);                    \
  T sum = (T)0;                                                             \
  for (long oy = oy_lo; oy < oy_hi; ++oy) {                                 \
    for (long ox = ox_lo; ox < ox_hi; ++ox) {                               \
      const long at = ((n * OH + oy) * OW + ox) * C + c;                    \
      const long wy = oy * SH - PT, wx = ox * SW - PL;                      \
      if ((long)index[i_off + at] == (iy - wy) * KW + (ix - wx) &&          \
          (!relu || orig[o_off + at] > (T)0))                               \
        sum += dy[dy_off + at];                                             \
    }                                                                       \
  }                                                                         \
  dx[dx_off + e] = sum;                                                     \
}                                                                           \
/* MaxPoolReluGradFromWindowIndex's bias_backprop: per channel, the sum of \
 * what the windows handed out. */                                          \
__kernel void pool_relu_bias_grad_##S(                                      \
    __global const T* orig, long o_off, __global const T* dy, long dy_off, \
    __global T* db, long db_off, long pixels, long C) {                     \
  const long c = get_global_id(0);                                          \
  if (c >= C) return;                                                       \
  T sum = (T)0;                                                             \
  for (long p = 0; p < pixels; ++p) {                                       \
    const long at = p * C + c;                                              \
    if (orig[o_off + at] > (T)0) sum += dy[dy_off + at];                    \
  }                                                                         \
  db[db_off + c] = sum;                                                     \
}

/* Each window index must name an element of its clipped window (it came
 * from MaxPoolWithWindowIndex with the same attributes); the first that
 * does not is reported with its value and position. */
__kernel void check_window_index(__global const uchar* index, long i_off,
                                 long8 g0, long8 g1, __global int* err,
                                 int launch) {
  WEFT_GEOMETRY
  const long e = get_global_id(0);
  if (e >= N * OH * OW * C) return;
  const long ox = e / C % OW, oy = e / (C * OW) % OH;
  WEFT_CLIP(oy, ox)
  const long v = index[i_off + e];
  const long y = wy + v / KW, x = wx + v % KW;
  if (v >= KH * KW || y < ylo || y >= yhi || x < xlo || x >= xhi)
    weft_report(err, launch, v, e);
}

/* BatchNormWithGlobalNormalization: (t - m) / sqrt(v + eps) * gamma + beta
 * per channel (the last axis), computed as the CPU does: the factor
 * 1 / sqrt(v + eps), times gamma when scaling, first. */
#define WEFT_BATCH_NORM(T, S)                                               \
__kernel void batch_norm_##S(__global const T* t, long t_off,              \
                             __global const T* m, long m_off,              \
                             __global const T* v, long v_off,              \
                             __global const T* beta, long beta_off,        \
                             __global const T* gamma, long gamma_off,      \
                             __global T* y, long y_off, long n, long C,    \
                             T eps, int scale) {                            \
  const long e = get_global_id(0);                                          \
  if (e >= n) return;                                                       \
  const long c = e % C;                                                     \
  T factor = (T)1 / sqrt(v[v_off + c] + eps);                               \
  if (scale) factor *= gamma[gamma_off + c];                                \
  y[y_off + e] = (t[t_off + e] - m[m_off + c]) * factor + beta[beta_off + c];\
}

#define WEFT_CONV_ALL(T, V, S)                                              \
  WEFT_LOAD16(T, V, S)                                                      \
  WEFT_CONV_FORWARD(T, V, S)                                                \
  WEFT_FILTER_SWAP(T, S)                                                    \
  WEFT_CONV_BACKPROP_INPUT(T, V, S)                                         \
  WEFT_CONV_BACKPROP_FILTER(T, V, S)                                        \
  WEFT_WINDOW_MAX(T, S)                                                     \
  WEFT_MAX_POOL(T, S)                                                       \
  WEFT_AVG_POOL(T, S)                                                       \
  WEFT_POOL_GRAD(T, S)                                                      \
  WEFT_POOL_GRAD_FROM_INDEX(T, S)                                           \
  WEFT_BATCH_NORM(T, S)

WEFT_CONV_ALL(float, float16, f32)
#ifdef WEFT_FP64
WEFT_CONV_ALL(double, double16, f64)
#endif
)CLC";

}  // namespace weft_opencl
