// The host-checkable half of the CUDA plugin's convolutions and pooling,
// without a GPU:
//  * conv_plan.h: for many windows (asymmetric SAME, strides larger than
//    the window, dilation, chunked batches), the plan and the layout
//    transposes conv.cu runs around cuDNN, with cuDNN's documented
//    cross-correlation (symmetric padding, NCHW, KCRS) simulated, give
//    exactly the CPU's NHWC convolution, input gradient and filter
//    gradient (integer-valued data, so every sum is exact); the limits and
//    the algorithm choice.
//  * pool_ops.h: the pooling kernels' per-element functions, run here on
//    the CPU, equal the CPU plugin's loops (ported below from
//    plugins/cpu/nn_pool.cc and gradient_helpers_reduce_nn.cc) bit for
//    bit, ties and NaN included; their window math equals window2d.h's.
// Prints TAP.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "conv_plan.h"
#include "pool_ops.h"
#include "window2d.h"

using namespace weft_cuda;
using weft_window::Window2D;

namespace {

int g_case = 0;
int g_failed = 0;

void Report(bool ok, const std::string& name) {
  ++g_case;
  if (!ok) ++g_failed;
  std::printf("%s %d - %s\n", ok ? "ok" : "not ok", g_case, name.c_str());
}

std::string Describe(const Window2D& w, int64_t k, bool same) {
  char text[256];
  std::snprintf(text, sizeof text,
                "[%lld,%lld,%lld,%lld] * %lldx%lldx%lld s%lld,%lld d%lld,%lld "
                "%s",
                (long long)w.batch, (long long)w.in_h, (long long)w.in_w,
                (long long)w.channels, (long long)w.k_h, (long long)w.k_w,
                (long long)k, (long long)w.stride_h, (long long)w.stride_w,
                (long long)w.dilation_h, (long long)w.dilation_w,
                same ? "SAME" : "VALID");
  return text;
}

// ---- Convolution: Weft's semantics, directly in NHWC ----------------------

struct ConvCase {
  Window2D w;
  int64_t out_c;
  bool same;
};

// y [N, OH, OW, K] = x [N, H, W, C] (*) f [KH, KW, C, K], padding as
// ComputeWindow2D placed it.
std::vector<double> RefForward(const Window2D& w, int64_t k,
                               const std::vector<double>& x,
                               const std::vector<double>& f) {
  std::vector<double> y(w.batch * w.out_h * w.out_w * k, 0.0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox)
        for (int64_t r = 0; r < w.k_h; ++r)
          for (int64_t s = 0; s < w.k_w; ++s) {
            const int64_t iy = oy * w.stride_h - w.pad_top + r * w.dilation_h;
            const int64_t ix = ox * w.stride_w - w.pad_left + s * w.dilation_w;
            if (iy < 0 || iy >= w.in_h || ix < 0 || ix >= w.in_w) continue;
            for (int64_t c = 0; c < w.channels; ++c)
              for (int64_t o = 0; o < k; ++o)
                y[((n * w.out_h + oy) * w.out_w + ox) * k + o] +=
                    x[((n * w.in_h + iy) * w.in_w + ix) * w.channels + c] *
                    f[((r * w.k_w + s) * w.channels + c) * k + o];
          }
  return y;
}

// dx [N, H, W, C] and df [KH, KW, C, K] for the output gradient dy.
void RefBackward(const Window2D& w, int64_t k, const std::vector<double>& x,
                 const std::vector<double>& f, const std::vector<double>& dy,
                 std::vector<double>* dx, std::vector<double>* df) {
  dx->assign(w.batch * w.in_h * w.in_w * w.channels, 0.0);
  df->assign(w.k_h * w.k_w * w.channels * k, 0.0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox)
        for (int64_t r = 0; r < w.k_h; ++r)
          for (int64_t s = 0; s < w.k_w; ++s) {
            const int64_t iy = oy * w.stride_h - w.pad_top + r * w.dilation_h;
            const int64_t ix = ox * w.stride_w - w.pad_left + s * w.dilation_w;
            if (iy < 0 || iy >= w.in_h || ix < 0 || ix >= w.in_w) continue;
            for (int64_t c = 0; c < w.channels; ++c)
              for (int64_t o = 0; o < k; ++o) {
                const double g = dy[((n * w.out_h + oy) * w.out_w + ox) * k + o];
                const int64_t xi =
                    ((n * w.in_h + iy) * w.in_w + ix) * w.channels + c;
                const int64_t fi = ((r * w.k_w + s) * w.channels + c) * k + o;
                (*dx)[xi] += g * f[fi];
                (*df)[fi] += g * x[xi];
              }
          }
}

// ---- Convolution: the plugin's path, with cuDNN simulated -----------------

// cuDNN's cross-correlation in NCHW/KCRS with symmetric padding, as its
// documentation defines it.
struct Dnn {
  const ConvPlan& p;
  int64_t n;  // images of this call

  double X(const std::vector<double>& x, int64_t b, int64_t c, int64_t iy,
           int64_t ix) const {
    if (iy < 0 || iy >= p.padded_h || ix < 0 || ix >= p.padded_w) return 0;
    return x[((b * p.in_c + c) * p.padded_h + iy) * p.padded_w + ix];
  }
  // For each (b, o, oy, ox, c, r, s) tap on the padded input: fn(x index or
  // -1, y index, w index).
  template <typename Fn>
  void Taps(Fn fn) const {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < p.out_c; ++o)
        for (int64_t oy = 0; oy < p.out_h; ++oy)
          for (int64_t ox = 0; ox < p.out_w; ++ox)
            for (int64_t c = 0; c < p.in_c; ++c)
              for (int64_t r = 0; r < p.k_h; ++r)
                for (int64_t s = 0; s < p.k_w; ++s) {
                  const int64_t iy = oy * p.stride_h - p.pad_h + r * p.dilation_h;
                  const int64_t ix = ox * p.stride_w - p.pad_w + s * p.dilation_w;
                  const bool inside = iy >= 0 && iy < p.padded_h && ix >= 0 &&
                                      ix < p.padded_w;
                  fn(inside ? ((b * p.in_c + c) * p.padded_h + iy) * p.padded_w + ix
                            : -1,
                     ((b * p.out_c + o) * p.out_h + oy) * p.out_w + ox,
                     ((o * p.in_c + c) * p.k_h + r) * p.k_w + s);
                }
  }
};

// The transposes of conv.cu, over one call's images.
std::vector<double> ToNchw(const ConvPlan& p, const double* nhwc, int64_t n) {
  std::vector<double> out(n * p.padded_image);
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    const int64_t at =
        NchwPaddedToNhwc(i, p.in_c, p.in_h, p.in_w, p.padded_h, p.padded_w);
    out[i] = at < 0 ? 0.0 : nhwc[at];
  }
  return out;
}

std::vector<double> FilterToKcrs(const ConvPlan& p,
                                 const std::vector<double>& hwio) {
  std::vector<double> out(p.filter_elements);
  for (int64_t i = 0; i < p.filter_elements; ++i)
    out[i] = hwio[KcrsToHwio(i, p.out_c, p.in_c, p.k_h, p.k_w)];
  return out;
}

struct PathResult {
  std::vector<double> y, dx, df;
  int64_t calls = 0;
};

PathResult PluginPath(const ConvPlan& p, const std::vector<double>& x,
                      const std::vector<double>& f,
                      const std::vector<double>& dy) {
  PathResult r;
  const int64_t x_image = int64_t{p.in_h} * p.in_w * p.in_c;
  const int64_t y_image = int64_t{p.out_h} * p.out_w * p.out_c;
  r.y.assign(p.batch * y_image, -1.0);
  r.dx.assign(p.batch * x_image, -1.0);
  std::vector<double> dw(p.filter_elements, 0.0);
  const std::vector<double> w = FilterToKcrs(p, f);
  for (int64_t call = 0; call < p.calls; ++call) {
    ++r.calls;
    const int64_t n0 = call * p.chunk, n = p.ChunkImages(call);
    const Dnn dnn{p, n};
    // Forward: x -> NCHW (padded), convolve, y -> NHWC.
    const std::vector<double> xt = ToNchw(p, x.data() + n0 * x_image, n);
    std::vector<double> yt(n * p.out_image, 0.0);
    dnn.Taps([&](int64_t xi, int64_t yi, int64_t wi) {
      if (xi >= 0) yt[yi] += xt[xi] * w[wi];
    });
    for (int64_t i = 0; i < n * y_image; ++i)
      r.y[n0 * y_image + i] =
          yt[NhwcToNchwPadded(i, p.out_c, p.out_h, p.out_w, p.out_h, p.out_w)];
    // Input gradient: dy -> NCHW, backward data into the padded input,
    // cropped back to NHWC.
    std::vector<double> dyt(n * p.out_image);
    for (int64_t i = 0; i < n * p.out_image; ++i) {
      const int64_t at =
          NchwPaddedToNhwc(i, p.out_c, p.out_h, p.out_w, p.out_h, p.out_w);
      dyt[i] = dy[n0 * y_image + at];
    }
    std::vector<double> dxt(n * p.padded_image, 0.0);
    dnn.Taps([&](int64_t xi, int64_t yi, int64_t wi) {
      if (xi >= 0) dxt[xi] += dyt[yi] * w[wi];
    });
    for (int64_t i = 0; i < n * x_image; ++i)
      r.dx[n0 * x_image + i] = dxt[NhwcToNchwPadded(
          i, p.in_c, p.in_h, p.in_w, p.padded_h, p.padded_w)];
    // Filter gradient, added over calls (beta = 1 after the first).
    dnn.Taps([&](int64_t xi, int64_t yi, int64_t wi) {
      if (xi >= 0) dw[wi] += xt[xi] * dyt[yi];
    });
  }
  r.df.resize(p.filter_elements);
  for (int64_t i = 0; i < p.filter_elements; ++i)
    r.df[i] = dw[HwioToKcrs(i, p.out_c, p.in_c, p.k_h, p.k_w)];
  return r;
}

// conv.cu's filter gradient by gemm: per chunk of images the column
// matrix (Im2ColSource), then df += col^T dy, in df's HWIO layout.  Empty
// when PlanGemmFilter refuses the window.
std::vector<double> GemmFilterPath(const Window2D& w, int64_t k,
                                   const std::vector<double>& x,
                                   const std::vector<double>& dy,
                                   int64_t column_elements) {
  GemmFilterPlan g;
  if (PlanGemmFilter(w, column_elements, &g) != nullptr) return {};
  std::vector<double> df(g.taps * k, 0.0);
  const int64_t x_image = w.in_h * w.in_w * w.channels;
  for (int64_t call = 0; call < g.calls; ++call) {
    const int64_t n0 = call * g.chunk, n = g.ChunkImages(w.batch, call);
    std::vector<double> col(n * g.rows_per_image * g.taps);
    for (int64_t i = 0; i < static_cast<int64_t>(col.size()); ++i) {
      const int64_t at = Im2ColSource(
          i, g.taps, w.k_w, w.channels, w.out_w, g.rows_per_image, w.in_h,
          w.in_w, w.stride_h, w.stride_w, w.dilation_h, w.dilation_w,
          w.pad_top, w.pad_left);
      // The kernel's 32-bit arithmetic, where the sizes here fit it.
      const int32_t at32 = Im2ColSource<int32_t>(
          static_cast<int32_t>(i), g.taps, w.k_w, w.channels, w.out_w,
          g.rows_per_image, w.in_h, w.in_w, w.stride_h, w.stride_w,
          w.dilation_h, w.dilation_w, w.pad_top, w.pad_left);
      if (at32 != at) return {};
      col[i] = at < 0 ? 0.0 : x[n0 * x_image + at];
    }
    for (int64_t m = 0; m < n * g.rows_per_image; ++m)
      for (int64_t t = 0; t < g.taps; ++t)
        for (int64_t o = 0; o < k; ++o)
          df[t * k + o] += col[m * g.taps + t] *
                           dy[(n0 * g.rows_per_image + m) * k + o];
  }
  return df;
}

// conv.cu's input gradient by gemm: per chunk of images dcol = dy w^T,
// then every input element gathers its entries (Col2ImGather, in 64- and
// 32-bit arithmetic).  Empty when PlanGemmFilter refuses the window or the
// two widths disagree.
std::vector<double> GemmDataPath(const Window2D& w, int64_t k,
                                 const std::vector<double>& f,
                                 const std::vector<double>& dy,
                                 int64_t column_elements) {
  GemmFilterPlan g;
  if (PlanGemmFilter(w, column_elements, &g) != nullptr) return {};
  const int64_t x_image = w.in_h * w.in_w * w.channels;
  std::vector<double> dx(w.batch * x_image);
  for (int64_t call = 0; call < g.calls; ++call) {
    const int64_t n0 = call * g.chunk, n = g.ChunkImages(w.batch, call);
    std::vector<double> dcol(n * g.rows_per_image * g.taps, 0.0);
    for (int64_t m = 0; m < n * g.rows_per_image; ++m)
      for (int64_t t = 0; t < g.taps; ++t)
        for (int64_t o = 0; o < k; ++o)
          dcol[m * g.taps + t] +=
              dy[(n0 * g.rows_per_image + m) * k + o] * f[t * k + o];
    for (int64_t i = 0; i < n * x_image; ++i) {
      const double wide = Col2ImGather<int64_t, double>(
          i, dcol.data(), g.taps, w.k_h, w.k_w, w.channels, w.out_h, w.out_w,
          g.rows_per_image, w.in_h, w.in_w, w.stride_h, w.stride_w,
          w.dilation_h, w.dilation_w, w.pad_top, w.pad_left);
      const double narrow = Col2ImGather<int32_t, double>(
          static_cast<int32_t>(i), dcol.data(), g.taps, w.k_h, w.k_w,
          w.channels, w.out_h, w.out_w, g.rows_per_image, w.in_h, w.in_w,
          w.stride_h, w.stride_w, w.dilation_h, w.dilation_w, w.pad_top,
          w.pad_left);
      if (wide != narrow) return {};
      dx[n0 * x_image + i] = wide;
    }
  }
  return dx;
}

std::vector<double> Integers(std::mt19937& rng, int64_t count) {
  std::vector<double> v(count);
  for (double& e : v) e = static_cast<double>(static_cast<int>(rng() % 7) - 3);
  return v;
}

// Plans, runs both ways and compares; `chunk_elements` small forces
// several calls.  Returns an empty string or what differed.
std::string CheckConv(ConvCase cc, int64_t chunk_elements, std::mt19937& rng,
                      int64_t* calls) {
  Window2D& w = cc.w;
  if (weft_window::ComputeWindow2D(cc.same, &w) != nullptr) return "";
  ConvPlan p;
  const char* why = PlanConv(w, cc.out_c, chunk_elements, &p);
  const std::string name = Describe(w, cc.out_c, cc.same);
  if (w.out_h == 0 || w.out_w == 0) {
    return why != nullptr ? "" : name + ": an empty output got a plan";
  }
  if (why != nullptr) return name + ": " + why;
  if (p.pad_h != w.pad_top || p.pad_w != w.pad_left ||
      p.padded_h != w.in_h + w.pad_bottom - w.pad_top ||
      p.padded_w != w.in_w + w.pad_right - w.pad_left ||
      DnnOutputSize(p.padded_h, p.pad_h, p.k_h, p.dilation_h, p.stride_h) !=
          w.out_h ||
      DnnOutputSize(p.padded_w, p.pad_w, p.k_w, p.dilation_w, p.stride_w) !=
          w.out_w ||
      p.chunk < 1 || p.chunk * p.padded_image > kDnnMaxInt ||
      (p.chunk > 1 && p.chunk * p.padded_image > chunk_elements) ||
      p.calls * p.chunk < p.batch || (p.calls - 1) * p.chunk >= p.batch) {
    return name + ": inconsistent plan";
  }
  const std::vector<double> x =
      Integers(rng, w.batch * w.in_h * w.in_w * w.channels);
  const std::vector<double> f =
      Integers(rng, w.k_h * w.k_w * w.channels * cc.out_c);
  const std::vector<double> dy =
      Integers(rng, w.batch * w.out_h * w.out_w * cc.out_c);
  const PathResult got = PluginPath(p, x, f, dy);
  std::vector<double> dx, df;
  RefBackward(w, cc.out_c, x, f, dy, &dx, &df);
  *calls = got.calls;
  if (got.y != RefForward(w, cc.out_c, x, f)) return name + ": forward";
  if (got.dx != dx) return name + ": input gradient";
  if (got.df != df) return name + ": filter gradient";
  // The gemm path, in chunks of images as small as the window allows.
  GemmFilterPlan g;
  if (PlanGemmFilter(w, chunk_elements, &g) == nullptr &&
      GemmFilterPath(w, cc.out_c, x, dy, chunk_elements) != df) {
    return name + ": filter gradient by gemm";
  }
  if (GemmFilterPath(w, cc.out_c, x, dy, kGemmFilterColumnElements) != df) {
    return name + ": filter gradient by gemm (one chunk)";
  }
  if (PlanGemmFilter(w, chunk_elements, &g) == nullptr &&
      GemmDataPath(w, cc.out_c, f, dy, chunk_elements) != dx) {
    return name + ": input gradient by gemm";
  }
  if (GemmDataPath(w, cc.out_c, f, dy, kGemmFilterColumnElements) != dx) {
    return name + ": input gradient by gemm (one chunk)";
  }
  return "";
}

ConvCase Case(int64_t n, int64_t h, int64_t wd, int64_t c, int64_t k,
              int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
              int64_t dw, bool same) {
  ConvCase cc;
  cc.w.batch = n;
  cc.w.in_h = h;
  cc.w.in_w = wd;
  cc.w.channels = c;
  cc.w.k_h = kh;
  cc.w.k_w = kw;
  cc.w.stride_h = sh;
  cc.w.stride_w = sw;
  cc.w.dilation_h = dh;
  cc.w.dilation_w = dw;
  cc.out_c = k;
  cc.same = same;
  return cc;
}

void TestConvCases() {
  std::mt19937 rng(17);
  struct Named {
    const char* what;
    ConvCase cc;
  };
  const Named named[] = {
      // total padding 1: 0 before, 1 after, the extra row explicit.
      {"asymmetric SAME (5x5, 2x2 window)",
       Case(2, 5, 5, 3, 4, 2, 2, 1, 1, 1, 1, true)},
      {"asymmetric SAME, stride 2 on an even input (6x6, 3x3)",
       Case(2, 6, 6, 2, 3, 3, 3, 2, 2, 1, 1, true)},
      {"asymmetric in one axis only (5x6, 3x2)",
       Case(1, 5, 6, 2, 2, 3, 2, 1, 1, 1, 1, true)},
      {"symmetric SAME (5x5, 3x3)", Case(2, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1, true)},
      {"stride larger than the window, SAME (7x6, 1x1, stride 3)",
       Case(2, 7, 6, 2, 3, 1, 1, 3, 3, 1, 1, true)},
      {"stride larger than the window, VALID (7x8, 2x2, stride 3)",
       Case(1, 7, 8, 2, 2, 2, 2, 3, 3, 1, 1, false)},
      {"VALID strided (7x6, 3x2, stride 2)",
       Case(2, 7, 6, 3, 5, 3, 2, 2, 2, 1, 1, false)},
      {"dilation 2, SAME (7x7, 2x2)", Case(1, 7, 7, 2, 4, 2, 2, 1, 1, 2, 2, true)},
      {"dilation 2, SAME, asymmetric (6x6, 3x3, stride 2)",
       Case(1, 6, 6, 2, 2, 3, 3, 2, 2, 2, 2, true)},
      {"dilation (2, 3), VALID (9x9, 3x2)",
       Case(1, 9, 9, 1, 2, 3, 2, 1, 1, 2, 3, false)},
      {"window as large as the input, VALID",
       Case(2, 4, 3, 2, 2, 4, 3, 1, 1, 1, 1, false)},
      {"1x1 input, SAME 3x3", Case(3, 1, 1, 2, 2, 3, 3, 1, 1, 1, 1, true)},
      {"the CNN's first layer (28x28x1, 5x5x32)",
       Case(2, 28, 28, 1, 32, 5, 5, 1, 1, 1, 1, true)},
  };
  for (const Named& nc : named) {
    int64_t calls = 0;
    const std::string error = CheckConv(nc.cc, kConvChunkElements, rng, &calls);
    Report(error.empty() && calls == 1,
           std::string("conv on cuDNN's terms = the CPU's: ") + nc.what +
               (error.empty() ? "" : " (" + error + ")"));
  }
  // Chunked: a chunk limit of three images' worth, over seven images.
  {
    ConvCase cc = Case(7, 5, 5, 2, 3, 2, 2, 1, 1, 1, 1, true);
    int64_t calls = 0;
    // The larger of the padded input image (2 x 6 x 6) and the output
    // image (3 x 5 x 5).
    const int64_t image = 3 * 5 * 5;
    const std::string error = CheckConv(cc, 3 * image, rng, &calls);
    Report(error.empty() && calls == 3,
           "a batch in chunks of 3 images (7 images, 3 calls; filter "
           "gradient added over calls)" +
               (error.empty() ? "" : " (" + error + ")"));
  }
  // One image per call when even one exceeds the chunk limit.
  {
    ConvCase cc = Case(3, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1, true);
    int64_t calls = 0;
    const std::string error = CheckConv(cc, 5, rng, &calls);
    Report(error.empty() && calls == 3,
           "one image per call when an image passes the chunk limit" +
               (error.empty() ? "" : " (" + error + ")"));
  }
  // Random windows.
  int checked = 0;
  std::string first_error;
  for (int t = 0; t < 400 && first_error.empty(); ++t) {
    ConvCase cc = Case(1 + rng() % 3, 1 + rng() % 9, 1 + rng() % 9,
                       1 + rng() % 3, 1 + rng() % 3, 1 + rng() % 4,
                       1 + rng() % 4, 1 + rng() % 4, 1 + rng() % 4,
                       1 + rng() % 3, 1 + rng() % 3, rng() % 2 == 0);
    int64_t calls = 0;
    first_error = CheckConv(cc, 1 + rng() % 400, rng, &calls);
    ++checked;
  }
  Report(first_error.empty(),
         "conv on cuDNN's terms = the CPU's for " + std::to_string(checked) +
             " random windows, chunk limits and paddings" +
             (first_error.empty() ? "" : " (" + first_error + ")"));
}

void TestConvLimits() {
  ConvPlan p;
  ConvCase empty = Case(0, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1, true);
  weft_window::ComputeWindow2D(true, &empty.w);
  Report(PlanConv(empty.w, 4, kConvChunkElements, &p) != nullptr &&
             empty.w.out_h == 5,
         "an empty batch has no plan (the kernels answer it without cuDNN)");
  ConvCase no_channels = Case(2, 5, 5, 0, 4, 3, 3, 1, 1, 1, 1, true);
  weft_window::ComputeWindow2D(true, &no_channels.w);
  Report(PlanConv(no_channels.w, 4, kConvChunkElements, &p) != nullptr &&
             PlanConv(no_channels.w, 0, kConvChunkElements, &p) != nullptr,
         "no input or output channels: no plan");
  // One image of 2^31 elements (padded) is past cuDNN's int sizes.
  ConvCase big = Case(1, 32768, 32767, 2, 1, 2, 2, 1, 1, 1, 1, true);
  weft_window::ComputeWindow2D(true, &big.w);  // SAME 2x2: one extra column
  const char* why = PlanConv(big.w, 1, kConvChunkElements, &p);
  Report(why != nullptr && std::strstr(why, "2^31") != nullptr,
         std::string("an image past 2^31 - 1 elements is refused: ") +
             (why ? why : "(planned)"));
  ConvCase fits = Case(1, 32768, 32767, 2, 1, 2, 2, 1, 1, 1, 1, false);
  weft_window::ComputeWindow2D(false, &fits.w);  // VALID: no extra column
  why = PlanConv(fits.w, 1, kConvChunkElements, &p);
  Report(why == nullptr && p.chunk == 1 && p.padded_image == 2147418112,
         "one just under it is planned, one image per call");
  ConvCase batch = Case(100000, 64, 64, 64, 64, 3, 3, 1, 1, 1, 1, true);
  weft_window::ComputeWindow2D(true, &batch.w);
  why = PlanConv(batch.w, 64, kConvChunkElements, &p);
  Report(why == nullptr && p.chunk == kConvChunkElements / (64 * 64 * 64) &&
             p.calls == (100000 + p.chunk - 1) / p.chunk &&
             p.ChunkImages(p.calls - 1) == 100000 - (p.calls - 1) * p.chunk,
         "a large batch goes in chunks of 2^28 elements (" +
             std::to_string(p.chunk) + " images, " + std::to_string(p.calls) +
             " calls)");
  // The filter gradient's gemm: the CNN's second layer (64 images of
  // 14x14 outputs, 5x5x32 taps) in one chunk; a cap of two images' columns
  // makes 32 chunks; an image past the cap is refused (cuDNN then runs).
  ConvCase cnn = Case(64, 14, 14, 32, 64, 5, 5, 1, 1, 1, 1, true);
  weft_window::ComputeWindow2D(true, &cnn.w);
  GemmFilterPlan g;
  const bool one = PlanGemmFilter(cnn.w, kGemmFilterColumnElements, &g) ==
                       nullptr &&
                   g.taps == 800 && g.rows_per_image == 196 &&
                   g.chunk == 64 && g.calls == 1;
  const bool two = PlanGemmFilter(cnn.w, 2 * 196 * 800 + 5, &g) == nullptr &&
                   g.chunk == 2 && g.calls == 32 && g.ChunkImages(64, 31) == 2;
  Report(one && two && PlanGemmFilter(cnn.w, 196 * 800 - 1, &g) != nullptr,
         "the filter gradient's gemm: chunks of whole images under the "
         "column cap; an image past it is refused");
  ConvCase wide = Case(1, 8, 8, 65536, 65536, 1, 1, 1, 1, 1, 1, true);
  weft_window::ComputeWindow2D(true, &wide.w);
  Report(PlanConv(wide.w, 65536, kConvChunkElements, &p) != nullptr,
         "a filter past 2^31 - 1 elements is refused");
}

void TestAlgorithms() {
  // {algo, supported, deterministic, transform, math, workspace}
  AlgoCandidate list[6];
  list[0] = {7, false, true, false, kDnnFmaMath, 0};       // unsupported
  list[1] = {6, true, true, false, kDnnTensorOpMath, 0};   // TF32
  list[2] = {5, true, true, true, kDnnFmaMath, 0};         // Winograd
  list[3] = {1, true, false, false, kDnnFmaMath, 100};     // not deterministic
  list[4] = {2, true, true, false, kDnnFmaMath, 5000};     // large workspace
  list[5] = {0, true, true, false, kDnnDefaultMath, 10};
  Report(ChooseAlgorithm(list, 6, 1000) == 5,
         "the first supported, direct, deterministic, non-tensor-op "
         "algorithm within the workspace cap");
  Report(ChooseAlgorithm(list, 6, 1 << 20) == 4,
         "a larger cap takes the faster one");
  Report(ChooseAlgorithm(list, 5, 1000) == 3,
         "a non-deterministic direct one before a transform");
  Report(ChooseAlgorithm(list, 3, 1000) == 2,
         "a transform (FFT, Winograd) only when nothing direct qualifies");
  Report(ChooseAlgorithm(list, 2, 1 << 20) == -1 &&
             ChooseAlgorithm(list, 0, 1 << 20) == -1,
         "none: -1 (unsupported and tensor-op math never chosen)");
  Report(ChooseAlgorithm(list, 6, 1 << 20, true) == 3 &&
             ChooseAlgorithm(list, 3, 1000, true) == 2,
         "with any determinism: the first direct one, deterministic or "
         "not; still a transform only when nothing direct qualifies");
  list[5].math = kDnnTensorOpMathAllowConversion;
  Report(ChooseAlgorithm(list + 5, 1, 1000) == -1,
         "half-precision conversion never chosen");
  Report(ConvWorkspaceCap(0) == kMaxConvWorkspace &&
             ConvWorkspaceCap(uint64_t{1} << 40) == kMaxConvWorkspace &&
             ConvWorkspaceCap(uint64_t{1} << 30) == uint64_t{1} << 28,
         "workspace cap: 1 GiB, or a quarter of WEFT_CUDA_MEMORY_LIMIT");
}

void TestConvSearch() {
  ConvSearch m = ConvSearch::kHeuristic;
  bool ok = ParseConvSearch(nullptr, &m) && m == ConvSearch::kTimed;
  ok = ok && ParseConvSearch("", &m) && m == ConvSearch::kTimed;
  ok = ok && ParseConvSearch("timed", &m) && m == ConvSearch::kTimed;
  ok = ok && ParseConvSearch("heuristic", &m) && m == ConvSearch::kHeuristic;
  ok = ok && ParseConvSearch("timed-nondeterministic", &m) &&
       m == ConvSearch::kTimedNondeterministic;
  for (const char* bad : {"Timed", "fast", "timed ", "1"}) {
    ok = ok && !ParseConvSearch(bad, &m);
  }
  Report(ok, "WEFT_CUDA_CONV_SEARCH: timed (default), heuristic, "
             "timed-nondeterministic; anything else refused");
}

void TestLayoutBijections() {
  bool ok = true;
  for (int trial = 0; trial < 20 && ok; ++trial) {
    const int64_t n = 1 + trial % 3, c = 1 + trial % 4, h = 1 + trial % 5,
                  w = 2 + trial % 3, ph = h + trial % 2, pw = w + (trial / 2) % 2;
    std::vector<int> seen(n * h * w * c, 0);
    for (int64_t i = 0; i < n * c * ph * pw; ++i) {
      const int64_t at = NchwPaddedToNhwc(i, c, h, w, ph, pw);
      if (at >= 0) {
        ++seen[at];
        ok = ok && NhwcToNchwPadded(at, c, h, w, ph, pw) == i;
      }
    }
    for (int s : seen) ok = ok && s == 1;
    const int64_t k = 1 + trial % 4, r = 1 + trial % 3, s2 = 1 + trial % 5;
    for (int64_t i = 0; i < k * c * r * s2; ++i)
      ok = ok && HwioToKcrs(KcrsToHwio(i, k, c, r, s2), k, c, r, s2) == i;
  }
  Report(ok, "the NHWC/NCHW and HWIO/KCRS transposes are inverse "
             "bijections (padding excepted)");
}

// ---- Pooling ----------------------------------------------------------------

void TestPoolWindows() {
  std::mt19937 rng(5);
  bool clip_ok = true, holders_ok = true;
  for (int t = 0; t < 2000; ++t) {
    Window2D w;
    w.batch = 1;
    w.in_h = 1 + rng() % 12;
    w.in_w = 1 + rng() % 12;
    w.channels = 1;
    w.k_h = 1 + rng() % 5;
    w.k_w = 1 + rng() % 5;
    w.stride_h = 1 + rng() % 5;
    w.stride_w = 1 + rng() % 5;
    const bool same = rng() % 2 == 0;
    if (weft_window::ComputeWindow2D(same, &w) != nullptr) continue;
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        const weft_window::Clip a = weft_window::ClipWindow(w, oy, ox);
        const PoolClip b =
            ClipPoolWindow(w.in_h, w.in_w, w.k_h, w.k_w, w.stride_h,
                           w.stride_w, w.pad_top, w.pad_left, oy, ox);
        clip_ok = clip_ok && a.y0 == b.y0 && a.x0 == b.x0 &&
                  a.y_lo == b.y_lo && a.y_hi == b.y_hi && a.x_lo == b.x_lo &&
                  a.x_hi == b.x_hi;
      }
    for (int64_t y = 0; y < w.in_h; ++y) {
      int64_t lo = 0, hi = 0;
      WindowsHolding(y, w.pad_top, w.k_h, w.stride_h, w.out_h, &lo, &hi);
      for (int64_t oy = 0; oy < w.out_h; ++oy) {
        const weft_window::Clip c = weft_window::ClipWindow(w, oy, 0);
        const bool holds = y >= c.y_lo && y < c.y_hi;
        holders_ok = holders_ok && holds == (oy >= lo && oy < hi);
      }
    }
  }
  Report(clip_ok, "ClipPoolWindow (device) = window2d.h's ClipWindow");
  Report(holders_ok,
         "WindowsHolding names exactly the windows that hold each element");
}

// The CPU plugin's pooling loops, one channel at a time (ported from
// plugins/cpu/nn_pool.cc and gradient_helpers_reduce_nn.cc).
template <typename T>
bool Beats(T v, T best) {
  return best == best && (v != v || v > best);
}

template <typename T>
void CpuPool(const Window2D& w, bool max, const std::vector<T>& in,
             std::vector<T>* out, std::vector<uint8_t>* index) {
  const int64_t c = w.channels;
  out->assign(w.batch * w.out_h * w.out_w * c, T(0));
  index->assign(out->size(), 0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox)
        for (int64_t k = 0; k < c; ++k) {
          const weft_window::Clip cl = weft_window::ClipWindow(w, oy, ox);
          const int64_t o = ((n * w.out_h + oy) * w.out_w + ox) * c + k;
          T best = max ? -std::numeric_limits<T>::infinity() : T(0);
          int64_t at = 0;
          bool first = true;
          for (int64_t y = cl.y_lo; y < cl.y_hi; ++y)
            for (int64_t x = cl.x_lo; x < cl.x_hi; ++x) {
              const T v = in[((n * w.in_h + y) * w.in_w + x) * c + k];
              if (max) {
                // PoolRowsWithIndex starts from the first element.
                if (first || Beats(v, best)) {
                  best = v;
                  at = (y - cl.y0) * w.k_w + (x - cl.x0);
                }
                first = false;
              } else {
                best += v;
              }
            }
          if (!max) best /= static_cast<T>((cl.y_hi - cl.y_lo) * (cl.x_hi - cl.x_lo));
          (*out)[o] = best;
          (*index)[o] = static_cast<uint8_t>(at);
        }
}

// MaxPoolGradImage / AvgPoolGradImage / PoolGradFromIndexImage's
// overlapping branch: each window adds into its element(s) in window
// order.  kind: 0 max, 1 max relu, 2 avg, 3 from index, 4 from index relu.
template <typename T>
std::vector<T> CpuPoolGrad(const Window2D& w, int kind,
                           const std::vector<T>& in, const std::vector<T>& dy,
                           const std::vector<uint8_t>& index,
                           const std::vector<T>& orig_output) {
  const int64_t c = w.channels;
  std::vector<T> din(w.batch * w.in_h * w.in_w * c, T(0));
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        const weft_window::Clip cl = weft_window::ClipWindow(w, oy, ox);
        for (int64_t k = 0; k < c; ++k) {
          const int64_t o = ((n * w.out_h + oy) * w.out_w + ox) * c + k;
          const T g = dy[o];
          if (kind == 2) {
            const T scale = T(1) / static_cast<T>((cl.y_hi - cl.y_lo) *
                                                  (cl.x_hi - cl.x_lo));
            for (int64_t y = cl.y_lo; y < cl.y_hi; ++y)
              for (int64_t x = cl.x_lo; x < cl.x_hi; ++x)
                din[((n * w.in_h + y) * w.in_w + x) * c + k] += g * scale;
            continue;
          }
          if (kind >= 3) {
            const T give = kind == 4 && !(orig_output[o] > T(0)) ? T(0) : g;
            const int64_t y = cl.y0 + index[o] / w.k_w;
            const int64_t x = cl.x0 + index[o] % w.k_w;
            din[((n * w.in_h + y) * w.in_w + x) * c + k] += give;
            continue;
          }
          int64_t bi = ((n * w.in_h + cl.y_lo) * w.in_w + cl.x_lo) * c + k;
          T bv = in[bi];
          for (int64_t y = cl.y_lo; y < cl.y_hi; ++y)
            for (int64_t x = cl.x_lo; x < cl.x_hi; ++x) {
              const int64_t at = ((n * w.in_h + y) * w.in_w + x) * c + k;
              if (Beats(in[at], bv)) {
                bv = in[at];
                bi = at;
              }
            }
          din[bi] += kind == 1 ? (bv > T(0) ? g : T(0)) : g;
        }
      }
  return din;
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <typename T>
std::string CheckPool(const Window2D& w, std::mt19937& rng) {
  const int64_t in_count = w.batch * w.in_h * w.in_w * w.channels;
  const int64_t out_count = w.batch * w.out_h * w.out_w * w.channels;
  // Few distinct values (ties), a NaN now and then, and non-integers.
  std::vector<T> in(in_count), dy(out_count);
  for (T& v : in) {
    const unsigned r = rng() % 40;
    v = r == 0 ? std::numeric_limits<T>::quiet_NaN()
               : r == 1 ? -std::numeric_limits<T>::infinity()
                        : static_cast<T>(static_cast<int>(r % 5) - 2) / T(3);
  }
  for (T& v : dy) v = static_cast<T>(static_cast<int>(rng() % 1000) - 500) / T(7);
  const PoolGeometry g = PoolGeometryOf(w);
  std::vector<T> cpu_max, cpu_avg;
  std::vector<uint8_t> cpu_index, unused;
  CpuPool(w, true, in, &cpu_max, &cpu_index);
  CpuPool(w, false, in, &cpu_avg, &unused);
  std::vector<T> gpu_max(out_count), gpu_avg(out_count);
  std::vector<uint8_t> gpu_index(out_count);
  bool valid = true;
  for (int64_t o = 0; o < out_count; ++o) {
    int32_t at = -1;
    gpu_max[o] = MaxPoolAt(g, in.data(), o, &at);
    gpu_index[o] = static_cast<uint8_t>(at);
    gpu_avg[o] = AvgPoolAt(g, in.data(), o);
    valid = valid && WindowIndexValid(g, gpu_index.data(), o);
  }
  if (!SameBits(gpu_max, cpu_max) || gpu_index != cpu_index) return "MaxPool";
  if (!SameBits(gpu_avg, cpu_avg)) return "AvgPool";
  if (!valid) return "WindowIndexValid refuses MaxPool's own index";
  const char* const kNames[] = {"MaxPoolGrad", "MaxPoolReluGrad",
                                "AvgPoolGrad", "MaxPoolGradFromWindowIndex",
                                "MaxPoolReluGradFromWindowIndex"};
  for (int kind = 0; kind < 5; ++kind) {
    const std::vector<T> cpu =
        CpuPoolGrad(w, kind, in, dy, cpu_index, cpu_max);
    std::vector<T> gpu(in_count);
    for (int64_t i = 0; i < in_count; ++i) {
      switch (kind) {
        case 0:
        case 1:
          gpu[i] = MaxPoolGradAt(g, in.data(), dy.data(), kind == 1, i);
          break;
        case 2:
          gpu[i] = AvgPoolGradAt(g, dy.data(), i);
          break;
        default:
          gpu[i] = GradFromIndexAt(g, gpu_index.data(),
                                   kind == 4 ? cpu_max.data() : nullptr,
                                   dy.data(), i);
          break;
      }
    }
    // The relu variants' zeros may differ in sign (0 + -0): compare values
    // there.
    bool same = SameBits(gpu, cpu);
    if (!same && (kind == 1 || kind == 4)) {
      same = true;
      for (int64_t i = 0; i < in_count; ++i)
        same = same && (gpu[i] == cpu[i] || (gpu[i] != gpu[i] && cpu[i] != cpu[i]));
    }
    if (!same) return kNames[kind];
  }
  return "";
}

void TestPoolKernels() {
  std::mt19937 rng(23);
  struct Named {
    const char* what;
    int64_t n, h, w, c, kh, kw, sh, sw;
    bool same;
  };
  const Named named[] = {
      {"tiled 2x2/2 VALID", 2, 6, 6, 3, 2, 2, 2, 2, false},
      {"2x2/2 SAME on an odd input (asymmetric)", 2, 5, 5, 3, 2, 2, 2, 2, true},
      {"overlapping 3x3 stride (2, 1) SAME", 2, 6, 7, 3, 3, 3, 2, 1, true},
      {"stride larger than the window (1x1/3)", 1, 7, 7, 2, 1, 1, 3, 3, true},
      {"stride larger than the window (2x2/3, VALID)", 1, 8, 7, 2, 2, 2, 3, 3,
       false},
      {"window larger than the input, SAME", 1, 2, 3, 2, 4, 5, 1, 1, true},
      {"the CNN's pools (28x28, 2x2/2 SAME)", 2, 28, 28, 4, 2, 2, 2, 2, true},
  };
  for (const Named& nc : named) {
    Window2D w;
    w.batch = nc.n;
    w.in_h = nc.h;
    w.in_w = nc.w;
    w.channels = nc.c;
    w.k_h = nc.kh;
    w.k_w = nc.kw;
    w.stride_h = nc.sh;
    w.stride_w = nc.sw;
    weft_window::ComputeWindow2D(nc.same, &w);
    const std::string f = CheckPool<float>(w, rng);
    const std::string d = CheckPool<double>(w, rng);
    Report(f.empty() && d.empty(),
           std::string("pooling kernels = the CPU's loops, bit for bit "
                       "(ties, NaN, -inf): ") +
               nc.what +
               (f.empty() && d.empty() ? "" : " (differs: " + f + d + ")"));
  }
  std::string first;
  int checked = 0;
  for (int t = 0; t < 300 && first.empty(); ++t) {
    Window2D w;
    w.batch = 1 + rng() % 2;
    w.in_h = 1 + rng() % 9;
    w.in_w = 1 + rng() % 9;
    w.channels = 1 + rng() % 3;
    w.k_h = 1 + rng() % 4;
    w.k_w = 1 + rng() % 4;
    w.stride_h = 1 + rng() % 4;
    w.stride_w = 1 + rng() % 4;
    if (weft_window::ComputeWindow2D(rng() % 2 == 0, &w) != nullptr) continue;
    if (w.out_h == 0 || w.out_w == 0) continue;
    first = CheckPool<float>(w, rng);
    ++checked;
  }
  Report(first.empty(), "pooling kernels = the CPU's loops for " +
                            std::to_string(checked) + " random windows" +
                            (first.empty() ? "" : " (" + first + ")"));
  // A window index naming padding, or past the window, is refused.
  Window2D w;
  w.batch = 1;
  w.in_h = 5;
  w.in_w = 5;
  w.channels = 1;
  w.k_h = 2;
  w.k_w = 2;
  w.stride_h = 2;
  w.stride_w = 2;
  weft_window::ComputeWindow2D(true, &w);  // last row/column of windows clipped
  const PoolGeometry g = PoolGeometryOf(w);
  const int64_t last = (w.out_h * w.out_w) - 1;  // window at (4, 4): 1x1
  std::vector<uint8_t> index(w.out_h * w.out_w, 0);
  bool ok = WindowIndexValid(g, index.data(), last);
  index[last] = 1;  // (4, 5): padding
  ok = ok && !WindowIndexValid(g, index.data(), last);
  index[0] = 4;  // past a 2x2 window
  ok = ok && !WindowIndexValid(g, index.data(), 0);
  index[0] = 3;
  ok = ok && WindowIndexValid(g, index.data(), 0);
  Report(ok, "window indexes naming padding or past the window are invalid");
}

}  // namespace

int main() {
  std::printf("1..44\n");
  TestConvCases();
  TestConvLimits();
  TestAlgorithms();
  TestConvSearch();
  TestLayoutBijections();
  TestPoolWindows();
  TestPoolKernels();
  if (g_case != 44) std::printf("# planned 44, ran %d\n", g_case);
  return g_failed == 0 && g_case == 44 ? 0 : 1;
}
