// How a convolution of Weft's (NHWC input, HWIO filter, TensorFlow's
// padding) runs on cuDNN, as plain C++ with no CUDA or cuDNN type, so that
// test_window_math.cc checks every rule on the host:
//
//  * Layout.  cuDNN runs in NCHW with KCRS filters, its best-supported
//    layout for both float32 and float64 (its NHWC kernels leave float64
//    out); conv.cu transposes into scratch buffers on the way in and out,
//    with the index math below.
//  * Padding.  cuDNN pads symmetrically, TensorFlow's SAME puts the odd
//    element after the data (pad_bottom = pad_top + 1).  The transposed
//    input gets that extra row (column) of zeros at the bottom (right)
//    explicitly, and cuDNN pads pad_top (pad_left) on both sides: the
//    windows land exactly where SAME puts them, and cuDNN's output size,
//    floor((H + extra + 2 * pad - span) / stride) + 1, is Weft's.  For the
//    input gradient the extra row's gradient is computed and dropped.
//  * Size.  cuDNN's dimensions and strides are ints: each transposed
//    tensor of a call holds at most 2^31 - 1 elements.  The batch goes
//    through in chunks of images that keep each under kConvChunkElements
//    (which also bounds the scratch memory); the filter gradient adds up
//    over chunks.
//  * Algorithms.  Among cuDNN's heuristic list, the first supported one
//    that sums directly (GEMM-like, not through an FFT or Winograd
//    transform, whose rounding error is larger), is deterministic, runs in
//    FMA math (never TF32 or half-precision tensor cores: results must
//    match the CPU's float32) and needs at most the workspace cap; failing
//    that, a non-deterministic one; then the transforms, as a last resort.
#ifndef WEFT_PLUGINS_CUDA_CONV_PLAN_H_
#define WEFT_PLUGINS_CUDA_CONV_PLAN_H_

#include <cstdint>
#include <string>

#include "window2d.h"

#ifdef __CUDACC__
#define WEFT_CONV_HD __host__ __device__ __forceinline__
#else
#define WEFT_CONV_HD inline
#endif

namespace weft_cuda {

// cuDNN's legacy descriptors take int sizes and strides.
constexpr int64_t kDnnMaxInt = 2147483647;
// Elements of each transposed tensor per cuDNN call, images permitting:
// 2^28 (1 GiB of float32).
constexpr int64_t kConvChunkElements = int64_t{1} << 28;
// The largest workspace an algorithm may ask for.
constexpr uint64_t kMaxConvWorkspace = uint64_t{1} << 30;

// A convolution as cuDNN runs it, per call of `chunk` images.
struct ConvPlan {
  int64_t batch = 0;   // images in the op
  int64_t chunk = 0;   // images per cuDNN call; the last call may get fewer
  int64_t calls = 0;   // ceil(batch / chunk)
  // The input [N, in_c, in_h, in_w] (NHWC in Weft), transposed to NCHW
  // [N, in_c, padded_h, padded_w] with extra_bottom rows and extra_right
  // columns of zeros after the data.
  int in_c = 0, in_h = 0, in_w = 0;
  int extra_bottom = 0, extra_right = 0;
  int padded_h = 0, padded_w = 0;
  // The filter [k_h, k_w, in_c, out_c] (HWIO), transposed to KCRS.
  int out_c = 0, k_h = 0, k_w = 0;
  // The output [N, out_c, out_h, out_w] in NCHW.
  int out_h = 0, out_w = 0;
  // cuDNN's convolution descriptor: symmetric padding (Weft's top and
  // left), strides, dilations.
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  // Elements of one transposed image and of the filter.
  int64_t padded_image = 0, out_image = 0, filter_elements = 0;

  // Images of call `i` (0-based).
  int64_t ChunkImages(int64_t i) const {
    const int64_t left = batch - i * chunk;
    return left < chunk ? left : chunk;
  }
};

// cuDNN's output size along one axis for an input of `in` (padding
// included explicitly or not), symmetric padding `pad`: what
// cudnnGetConvolution2dForwardOutputDim computes.
inline int64_t DnnOutputSize(int64_t in, int64_t pad, int64_t k,
                             int64_t dilation, int64_t stride) {
  const int64_t span = (k - 1) * dilation + 1;
  const int64_t room = in + 2 * pad - span;
  return room < 0 ? 0 : room / stride + 1;
}

namespace conv_detail {

inline bool Product(int64_t a, int64_t b, int64_t c, int64_t* out) {
  int64_t ab = 0;
  return !__builtin_mul_overflow(a, b, &ab) &&
         !__builtin_mul_overflow(ab, c, out);
}

}  // namespace conv_detail

// Plans the convolution of window `w` (ComputeWindow2D's output: its
// sizes, strides, dilations, out_h/out_w and padding) with `out_channels`
// filters, `chunk_elements` bounding each transposed tensor of a call.
// Every size must be positive: the kernels handle empty tensors without
// cuDNN.  Returns why cuDNN cannot run it, or nullptr.
inline const char* PlanConv(const weft_window::Window2D& w,
                            int64_t out_channels, int64_t chunk_elements,
                            ConvPlan* plan) {
  *plan = ConvPlan();
  if (w.batch <= 0 || w.in_h <= 0 || w.in_w <= 0 || w.channels <= 0 ||
      out_channels <= 0 || w.out_h <= 0 || w.out_w <= 0 || w.k_h <= 0 ||
      w.k_w <= 0) {
    return "an empty convolution has no cuDNN plan";
  }
  const int64_t extra_bottom = w.pad_bottom - w.pad_top;
  const int64_t extra_right = w.pad_right - w.pad_left;
  // ComputeWindow2D puts the odd element after: 0 or 1 extra.
  if (extra_bottom < 0 || extra_bottom > 1 || extra_right < 0 ||
      extra_right > 1) {
    return "the padding is not TensorFlow's (the larger half after)";
  }
  const int64_t padded_h = w.in_h + extra_bottom;
  const int64_t padded_w = w.in_w + extra_right;
  int64_t padded_image = 0, out_image = 0, filter_taps = 0, filter = 0;
  if (!conv_detail::Product(w.channels, padded_h, padded_w, &padded_image) ||
      !conv_detail::Product(out_channels, w.out_h, w.out_w, &out_image) ||
      !conv_detail::Product(w.k_h, w.k_w, w.channels, &filter_taps) ||
      __builtin_mul_overflow(filter_taps, out_channels, &filter) ||
      padded_image > kDnnMaxInt || out_image > kDnnMaxInt ||
      filter > kDnnMaxInt) {
    return "an image, its output or the filter has more than 2^31 - 1 "
           "elements, cuDNN's limit";
  }
  if (w.stride_h > kDnnMaxInt || w.stride_w > kDnnMaxInt ||
      w.dilation_h > kDnnMaxInt || w.dilation_w > kDnnMaxInt) {
    return "a stride or dilation is larger than 2^31 - 1, cuDNN's limit";
  }
  if (DnnOutputSize(padded_h, w.pad_top, w.k_h, w.dilation_h, w.stride_h) !=
          w.out_h ||
      DnnOutputSize(padded_w, w.pad_left, w.k_w, w.dilation_w, w.stride_w) !=
          w.out_w) {
    return "cuDNN's output size would differ from the window's";
  }
  const int64_t largest = padded_image > out_image ? padded_image : out_image;
  int64_t chunk = chunk_elements / largest;
  const int64_t int_chunk = kDnnMaxInt / largest;  // cuDNN's N * C * H * W
  if (chunk > int_chunk) chunk = int_chunk;
  if (chunk < 1) chunk = 1;
  if (chunk > w.batch) chunk = w.batch;

  plan->batch = w.batch;
  plan->chunk = chunk;
  plan->calls = (w.batch + chunk - 1) / chunk;
  plan->in_c = static_cast<int>(w.channels);
  plan->in_h = static_cast<int>(w.in_h);
  plan->in_w = static_cast<int>(w.in_w);
  plan->extra_bottom = static_cast<int>(extra_bottom);
  plan->extra_right = static_cast<int>(extra_right);
  plan->padded_h = static_cast<int>(padded_h);
  plan->padded_w = static_cast<int>(padded_w);
  plan->out_c = static_cast<int>(out_channels);
  plan->k_h = static_cast<int>(w.k_h);
  plan->k_w = static_cast<int>(w.k_w);
  plan->out_h = static_cast<int>(w.out_h);
  plan->out_w = static_cast<int>(w.out_w);
  plan->pad_h = static_cast<int>(w.pad_top);
  plan->pad_w = static_cast<int>(w.pad_left);
  plan->stride_h = static_cast<int>(w.stride_h);
  plan->stride_w = static_cast<int>(w.stride_w);
  plan->dilation_h = static_cast<int>(w.dilation_h);
  plan->dilation_w = static_cast<int>(w.dilation_w);
  plan->padded_image = padded_image;
  plan->out_image = out_image;
  plan->filter_elements = filter;
  return nullptr;
}

// ---- Algorithm choice ----

// cudnnMathType_t's values (conv.cu checks they match).
enum DnnMath : int {
  kDnnDefaultMath = 0,
  kDnnTensorOpMath = 1,
  kDnnTensorOpMathAllowConversion = 2,
  kDnnFmaMath = 3,
};

// One entry of cuDNN's heuristic list (cudnnConvolution*AlgoPerf_t).
struct AlgoCandidate {
  int algo = 0;
  bool supported = false;  // status CUDNN_STATUS_SUCCESS
  bool deterministic = false;
  bool transform = false;  // FFT or Winograd: more rounding than a GEMM
  int math = kDnnDefaultMath;
  uint64_t workspace = 0;
};

// The workspace cap: kMaxConvWorkspace, or a quarter of the device's
// memory limit when that is smaller (0: none).
inline uint64_t ConvWorkspaceCap(uint64_t memory_limit) {
  if (memory_limit != 0 && memory_limit / 4 < kMaxConvWorkspace) {
    return memory_limit / 4;
  }
  return kMaxConvWorkspace;
}

// How a convolution's algorithm is chosen (WEFT_CUDA_CONV_SEARCH):
//   kTimed (default, "timed"): every candidate runs once per shape and the
//     fastest allowed one is kept; deterministic algorithms first.  Two
//     algorithms that time alike may be picked differently by two
//     processes, and their results can differ in the last bits.
//   kHeuristic ("heuristic"): cuDNN's first allowed guess, the same in
//     every process on the same GPU and cuDNN.
//   kTimedNondeterministic ("timed-nondeterministic"): timed, and
//     algorithms that add with atomics (a result can differ in the last
//     bits from one run to the next) compete on equal terms.  On an H200
//     the CNN's filter gradients ran 2-5x faster so (plugins/cuda/README.md).
enum class ConvSearch { kTimed, kHeuristic, kTimedNondeterministic };

// The mode `text` names (NULL or empty: the default); false for anything
// else.
inline bool ParseConvSearch(const char* text, ConvSearch* out) {
  const std::string t = text != nullptr ? text : "";
  if (t.empty() || t == "timed") {
    *out = ConvSearch::kTimed;
  } else if (t == "heuristic") {
    *out = ConvSearch::kHeuristic;
  } else if (t == "timed-nondeterministic") {
    *out = ConvSearch::kTimedNondeterministic;
  } else {
    return false;
  }
  return true;
}

// The candidate to run, in the list's (expected or measured speed) order:
// the first supported one in FMA or default math within the cap that is
// direct and deterministic; else direct; else deterministic; else any;
// -1 if none.  With `any_determinism` a direct algorithm is taken first
// whether deterministic or not.  Tensor-op math (TF32, half-precision
// conversion) is never taken.
inline int ChooseAlgorithm(const AlgoCandidate* candidates, int count,
                           uint64_t workspace_cap,
                           bool any_determinism = false) {
  for (int pass = 0; pass < 4; ++pass) {
    const bool direct = pass < 2,
               deterministic = pass % 2 == 0 && !any_determinism;
    for (int i = 0; i < count; ++i) {
      const AlgoCandidate& c = candidates[i];
      if (!c.supported || c.workspace > workspace_cap) continue;
      if (c.math != kDnnFmaMath && c.math != kDnnDefaultMath) continue;
      if (direct && c.transform) continue;
      if (deterministic && !c.deterministic) continue;
      return i;
    }
  }
  return -1;
}

// ---- The filter gradient as one GEMM (conv.cu's FilterGradientByGemm) ----
//
// With NHWC input and HWIO filter, the filter gradient is a matrix
// product: df[(r, s, c), o] = sum over (n, oy, ox) of
// col[(n, oy, ox), (r, s, c)] * dy[(n, oy, ox), o], where col holds, for
// each output position, the input values its window reads (zeros for
// padding).  df is then already in HWIO and dy already in NHWC: one cuBLAS
// gemm per chunk of images, after an im2col kernel, and the sums run in
// cuBLAS's fixed order (deterministic) where cuDNN's only deterministic
// direct algorithm for this gradient ran 5x slower on an H200.

// Elements of the column matrix per call: 2^26 (256 MiB of float32).
constexpr int64_t kGemmFilterColumnElements = int64_t{1} << 26;

struct GemmFilterPlan {
  int64_t rows_per_image = 0;  // out_h * out_w
  int64_t taps = 0;            // k_h * k_w * channels: df's rows
  int64_t chunk = 0;           // images per gemm
  int64_t calls = 0;

  int64_t ChunkImages(int64_t batch, int64_t i) const {
    const int64_t left = batch - i * chunk;
    return left < chunk ? left : chunk;
  }
};

// Plans the filter gradient of window `w` (non-empty) as gemms over
// chunks of images whose column matrices hold at most `column_elements`;
// nullptr, or why it cannot (one image's columns alone are larger).
inline const char* PlanGemmFilter(const weft_window::Window2D& w,
                                  int64_t column_elements,
                                  GemmFilterPlan* plan) {
  *plan = GemmFilterPlan();
  int64_t rows = 0, taps = 0, per_image = 0;
  if (__builtin_mul_overflow(w.out_h, w.out_w, &rows) ||
      !conv_detail::Product(w.k_h, w.k_w, w.channels, &taps) ||
      __builtin_mul_overflow(rows, taps, &per_image) || per_image <= 0 ||
      per_image > column_elements) {
    return "one image's column matrix is too large";
  }
  plan->rows_per_image = rows;
  plan->taps = taps;
  plan->chunk = column_elements / per_image;
  if (plan->chunk > w.batch) plan->chunk = w.batch;
  plan->calls = (w.batch + plan->chunk - 1) / plan->chunk;
  return nullptr;
}

// Element i of the column matrix (row (n, oy, ox) of `rows_per_image` per
// image, column (r, s, c) of `taps`): its offset in the NHWC input from
// the chunk's first image, or -1 where the window reads padding.  `I` is
// int64_t, or int32_t where the column matrix, the chunk's input and
// every coordinate fit (the GPU divides 32-bit integers several times
// faster).
template <typename I = int64_t>
WEFT_CONV_HD I Im2ColSource(I i, I taps, I k_w, I channels, I out_w,
                            I rows_per_image, I in_h, I in_w, I stride_h,
                            I stride_w, I dilation_h, I dilation_w,
                            I pad_top, I pad_left) {
  const I row = i / taps, tap = i % taps;
  const I c = tap % channels, rs = tap / channels;
  const I s = rs % k_w, r = rs / k_w;
  const I n = row / rows_per_image, pixel = row % rows_per_image;
  const I oy = pixel / out_w, ox = pixel % out_w;
  const I y = oy * stride_h - pad_top + r * dilation_h;
  const I x = ox * stride_w - pad_left + s * dilation_w;
  if (y < 0 || y >= in_h || x < 0 || x >= in_w) return -1;
  return ((n * in_h + y) * in_w + x) * channels + c;
}

// The input gradient the same way (conv.cu's DataGradientByGemm): the
// column matrix's gradient dcol = dy w^T ([rows, taps], one gemm per chunk
// of images, GemmFilterPlan's chunks), then each input element gathers the
// entries of dcol that the forward's column matrix copied from it, in (r, s)
// order: no atomics, one fixed order.
//
// Element i of the input gradient (NHWC, from the chunk's first image).
template <typename I, typename T>
WEFT_CONV_HD T Col2ImGather(I i, const T* dcol, I taps, I k_h, I k_w,
                            I channels, I out_h, I out_w, I rows_per_image,
                            I in_h, I in_w, I stride_h, I stride_w,
                            I dilation_h, I dilation_w, I pad_top,
                            I pad_left) {
  const I c = i % channels;
  I rest = i / channels;
  const I x = rest % in_w;
  rest /= in_w;
  const I y = rest % in_h;
  const I n = rest / in_h;
  T sum = T(0);
  for (I r = 0; r < k_h; ++r) {
    const I ty = y + pad_top - r * dilation_h;
    if (ty < 0) break;  // smaller still for the rows after
    if (ty % stride_h != 0) continue;
    const I oy = ty / stride_h;
    if (oy >= out_h) continue;
    for (I s = 0; s < k_w; ++s) {
      const I tx = x + pad_left - s * dilation_w;
      if (tx < 0) break;
      if (tx % stride_w != 0) continue;
      const I ox = tx / stride_w;
      if (ox >= out_w) continue;
      sum += dcol[(n * rows_per_image + oy * out_w + ox) * taps +
                  (r * k_w + s) * channels + c];
    }
  }
  return sum;
}

// ---- Layout index math (the transposes of conv.cu) ----

// Element i of the NCHW tensor [n, c, ph, pw] that holds the NHWC tensor
// [n, h, w, c] (h <= ph, w <= pw) with zeros after: its offset in the
// NHWC tensor, or -1 for a zero.
WEFT_CONV_HD int64_t NchwPaddedToNhwc(int64_t i, int64_t c, int64_t h,
                                      int64_t w, int64_t ph, int64_t pw) {
  const int64_t x = i % pw;
  i /= pw;
  const int64_t y = i % ph;
  i /= ph;
  const int64_t ch = i % c;
  const int64_t n = i / c;
  if (y >= h || x >= w) return -1;
  return ((n * h + y) * w + x) * c + ch;
}

// Element i of the NHWC tensor [n, h, w, c]: its offset in the NCHW tensor
// [n, c, ph, pw] that holds it (the inverse, dropping the padding).
WEFT_CONV_HD int64_t NhwcToNchwPadded(int64_t i, int64_t c, int64_t h,
                                      int64_t w, int64_t ph, int64_t pw) {
  const int64_t ch = i % c;
  i /= c;
  const int64_t x = i % w;
  i /= w;
  const int64_t y = i % h;
  const int64_t n = i / h;
  return ((n * c + ch) * ph + y) * pw + x;
}

// Element i of the KCRS filter [k, c, r, s]: its offset in the HWIO
// filter [r, s, c, k].
WEFT_CONV_HD int64_t KcrsToHwio(int64_t i, int64_t k, int64_t c, int64_t r,
                                int64_t s) {
  const int64_t x = i % s;
  i /= s;
  const int64_t y = i % r;
  i /= r;
  const int64_t ch = i % c;
  const int64_t o = i / c;
  return ((y * s + x) * c + ch) * k + o;
}

// Element i of the HWIO filter [r, s, c, k]: its offset in the KCRS
// filter [k, c, r, s].
WEFT_CONV_HD int64_t HwioToKcrs(int64_t i, int64_t k, int64_t c, int64_t r,
                                int64_t s) {
  const int64_t o = i % k;
  i /= k;
  const int64_t ch = i % c;
  i /= c;
  const int64_t x = i % s;
  const int64_t y = i / s;
  return ((o * c + ch) * r + y) * s + x;
}

// ---- Pooling windows (pool.cu) ----

// Output pixel (oy, ox)'s window, as weft_window::ClipWindow computes it
// (which is host-only): where it starts in padded coordinates and the part
// of it on the input, [y_lo, y_hi) x [x_lo, x_hi).
struct PoolClip {
  int64_t y0, x0, y_lo, y_hi, x_lo, x_hi;
};

WEFT_CONV_HD PoolClip ClipPoolWindow(int64_t in_h, int64_t in_w, int64_t k_h,
                                     int64_t k_w, int64_t stride_h,
                                     int64_t stride_w, int64_t pad_top,
                                     int64_t pad_left, int64_t oy,
                                     int64_t ox) {
  const int64_t y0 = oy * stride_h - pad_top;
  const int64_t x0 = ox * stride_w - pad_left;
  return PoolClip{y0,
                  x0,
                  y0 > 0 ? y0 : 0,
                  y0 + k_h < in_h ? y0 + k_h : in_h,
                  x0 > 0 ? x0 : 0,
                  x0 + k_w < in_w ? x0 + k_w : in_w};
}

// The output positions along one axis whose windows (o * stride - pad,
// size k, no dilation) hold input position `y`: [*lo, *hi), empty when
// *lo >= *hi.  The pooling gradients gather over these, in increasing
// order, which is the order in which the CPU's windows add into an
// element.
WEFT_CONV_HD void WindowsHolding(int64_t y, int64_t pad, int64_t k,
                                 int64_t stride, int64_t out, int64_t* lo,
                                 int64_t* hi) {
  const int64_t at = y + pad;  // position in padded coordinates, >= 0
  const int64_t first = at - k + 1;
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int64_t last = at / stride + 1;
  *hi = last < out ? last : out;
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_CONV_PLAN_H_
