// CPU kernels of the ops in runtime/ops/gradient_helpers_reduce_nn.cc: the reduction
// gradients (SumGrad, MeanGrad, ProdGrad), the convolution gradients
// (Conv2DBackpropInput, Conv2DBackpropFilter) and the pooling gradients
// (MaxPoolGrad, AvgPoolGrad), float32 and float64.
//
// The convolution gradients are the forward im2col scheme transposed: the
// input gradient multiplies out_backprop by the filter's transpose into
// patch rows and adds each row back where GatherPatch took it from; the
// filter gradient multiplies the patch matrix's transpose by out_backprop.
// Both use the plugin's Eigen GEMM for float32 as well as float64 (oneDNN's
// backward primitives are not wired in yet).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel.h"
#include "matmul_eigen.h"
#include "nan_order.h"
#include "nn_common.h"
#include "nn_kernels.h"
#if WEFT_CPU_HAVE_ONEDNN
#include "onednn_nn_backward.h"
#endif

namespace weft_cpu {
namespace {

// ---- Reduction gradients -------------------------------------------------

// Which elements of x feed which reduced value: element i of x (row-major)
// belongs to group `offset`, the flat index over x's kept dims.
struct ReductionGroups {
  int32_t rank = 0;
  int64_t dims[WEFT_MAX_RANK];
  int64_t stride[WEFT_MAX_RANK];  // in group index; 0 on reduced axes
  int64_t groups = 1;
  int64_t size = 1;  // elements per group

  template <typename Fn>
  void ForEach(int64_t count, Fn&& fn) const {
    int64_t index[WEFT_MAX_RANK] = {0};
    int64_t group = 0;
    for (int64_t i = 0; i < count; ++i) {
      fn(i, group);
      for (int32_t a = rank - 1; a >= 0; --a) {
        group += stride[a];
        if (++index[a] < dims[a]) break;
        group -= stride[a] * dims[a];
        index[a] = 0;
      }
    }
  }
};

weft_status* ReadGroups(const weft_kernel_context* ctx, const Tensor& grad,
                        const Tensor& x, ReductionGroups* g) {
  const int64_t* axes = nullptr;
  int32_t num_axes = 0;
  bool present = false;
  if (weft_status* s =
          OptionalIntListAttr(ctx, "axes", &axes, &num_axes, &present)) {
    return s;
  }
  bool reduce[WEFT_MAX_RANK];
  std::fill(reduce, reduce + x.rank, !present);
  for (int32_t k = 0; k < num_axes; ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + x.rank : axes[k];
    if (a < 0 || a >= x.rank || reduce[a]) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "axis %lld is out of range or repeated for rank %d",
                       static_cast<long long>(axes[k]), x.rank);
    }
    reduce[a] = true;
  }
  g->rank = x.rank;
  int64_t stride = 1;
  for (int32_t a = x.rank - 1; a >= 0; --a) {
    g->dims[a] = x.dims[a];
    g->stride[a] = reduce[a] ? 0 : stride;
    if (reduce[a]) {
      g->size *= x.dims[a];
    } else {
      stride *= x.dims[a];
    }
  }
  g->groups = stride;
  if (grad.count != g->groups) {
    char a[96], b[96];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "grad %s does not hold one value per reduction of x %s",
                     FormatShape(grad.dims, grad.rank, a, sizeof a),
                     FormatShape(x.dims, x.rank, b, sizeof b));
  }
  return nullptr;
}

enum class Spread { kSum, kMean, kProd };

template <typename T, Spread kind>
void SpreadGrad(const ReductionGroups& g, const T* dy, const T* x, int64_t n,
                T* dx) {
  if (kind == Spread::kSum) {
    g.ForEach(n, [&](int64_t i, int64_t k) { dx[i] = dy[k]; });
  } else if (kind == Spread::kMean) {
    const T scale = T(1) / static_cast<T>(g.size);
    g.ForEach(n, [&](int64_t i, int64_t k) { dx[i] = dy[k] * scale; });
  } else {
    // The product of the others is the product of the nonzero elements
    // divided by x_i when the group has no zero; with one zero only that
    // element's is nonzero; with more, every one is zero.
    std::vector<T> nonzero(static_cast<size_t>(g.groups), T(1));
    std::vector<int64_t> zeros(static_cast<size_t>(g.groups), 0);
    g.ForEach(n, [&](int64_t i, int64_t k) {
      if (x[i] == T(0)) {
        ++zeros[k];
      } else {
        nonzero[k] *= x[i];
      }
    });
    g.ForEach(n, [&](int64_t i, int64_t k) {
      T others = T(0);
      if (zeros[k] == 0) {
        others = nonzero[k] / x[i];
      } else if (zeros[k] == 1 && x[i] == T(0)) {
        others = nonzero[k];
      }
      dx[i] = dy[k] * others;
    });
  }
}

template <Spread kind>
weft_status* ReductionGradKernel(weft_kernel_context* ctx) {
  Tensor grad, x;
  if (weft_status* s = ReadInput(ctx, 0, &grad)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &x)) return s;
  if (grad.dtype != x.dtype) return DtypeMismatch(ctx, "x", x.dtype, grad.dtype);
  ReductionGroups g;
  if (weft_status* s = ReadGroups(ctx, grad, x, &g)) return s;
  Tensor out;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  switch (x.dtype) {
    case WEFT_FLOAT32:
      SpreadGrad<float, kind>(g, grad.data<float>(), x.data<float>(), x.count,
                              out.data<float>());
      return nullptr;
    case WEFT_FLOAT64:
      SpreadGrad<double, kind>(g, grad.data<double>(), x.data<double>(),
                               x.count, out.data<double>());
      return nullptr;
    default:
      return UnsupportedDtype(ctx, x.dtype);
  }
}

// ---- Shared by the window gradients ----------------------------------------

// A required [N, H, W, C] sizes attribute, -1 entries replaced by `fallback`.
weft_status* ReadSizes(const weft_kernel_context* ctx, const char* name,
                       const int64_t fallback[4], int64_t sizes[4]) {
  const int64_t* v = nullptr;
  int32_t n = 0;
  bool present = false;
  if (weft_status* s = OptionalIntListAttr(ctx, name, &v, &n, &present)) {
    return s;
  }
  if (!present || n != 4) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "attribute %s must be 4 sizes", name);
  }
  for (int i = 0; i < 4; ++i) {
    sizes[i] = v[i] < 0 ? fallback[i] : v[i];
    if (sizes[i] < 0) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "attribute %s has no size for dim %d", name, i);
    }
  }
  return nullptr;
}

// A window over an NHWC input of `dims` (window and strides still to set).
Window2D NhwcWindow(const int64_t dims[4]) {
  Window2D w;
  w.batch = dims[0];
  w.in_h = dims[1];
  w.in_w = dims[2];
  w.channels = dims[3];
  return w;
}

// The gradient `dy` must have the window's output shape.
weft_status* CheckOutputGrad(const weft_kernel_context* ctx, const Window2D& w,
                             int64_t channels, const Tensor& dy) {
  if (dy.rank == 4 && dy.dims[0] == w.batch && dy.dims[1] == w.out_h &&
      dy.dims[2] == w.out_w && dy.dims[3] == channels) {
    return nullptr;
  }
  char buf[96];
  return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                   "the output gradient %s is not [%lld, %lld, %lld, %lld], "
                   "the forward op's output shape",
                   FormatShape(dy.dims, dy.rank, buf, sizeof buf),
                   static_cast<long long>(w.batch),
                   static_cast<long long>(w.out_h),
                   static_cast<long long>(w.out_w),
                   static_cast<long long>(channels));
}

// Runs fn(n) for each image n in [first, last), in parallel: work on
// different images never touches the same input element.
template <typename Fn>
void ForImages(const weft_kernel_context* ctx, int64_t first, int64_t last,
               int64_t work_per_image, Fn&& fn) {
  ParallelFor(ctx, last - first, work_per_image,
              static_cast<double>(work_per_image),
              [&](int64_t begin, int64_t end) {
                for (int64_t n = begin; n < end; ++n) fn(first + n);
              });
}

// ---- Convolution gradients --------------------------------------------------

// Bytes of patch matrix handled at a time (as the forward kernel).
constexpr int64_t kPatchBytes = int64_t{4} << 20;

// Adds patch row `row` of output pixel `pixel` back into the input
// gradient `din`: the adjoint of GatherPatch.
template <typename T>
void ScatterPatch(const Window2D& w, const T* row, int64_t pixel, T* din) {
  const int64_t c = w.channels;
  ForEachTap(w, pixel, [&](int64_t at, int64_t to) {
    if (to < 0) return;
    for (int64_t k = 0; k < c; ++k) din[to + k] += row[at + k];
  });
}

template <typename T>
void ConvBackpropInput(const weft_kernel_context* ctx, const Window2D& w,
                       int64_t out_channels, const T* filter, const T* dy,
                       T* din, int threads) {
  std::fill(din, din + w.batch * w.in_h * w.in_w * w.channels, T(0));
  const int64_t patch = w.k_h * w.k_w * w.channels;
  const int64_t per_image = w.out_h * w.out_w;
  const int64_t pixels = w.batch * per_image;
  if (patch == 0 || pixels == 0) return;
  const int64_t chunk = std::min<int64_t>(
      pixels, std::max<int64_t>(1, kPatchBytes / (patch * int64_t{sizeof(T)})));
  Scratch scratch(static_cast<size_t>(chunk * patch) * sizeof(T));
  T* rows = scratch.as<T>();
  for (int64_t first = 0; first < pixels; first += chunk) {
    const int64_t count = std::min(chunk, pixels - first);
    // rows [count, patch] = dy [count, Cout] * filter [patch, Cout]^T
    MatMulEigen<T>(dy + first * out_channels, filter, rows, count,
                   out_channels, patch, false, true, threads);
    ForImages(ctx, first / per_image, (first + count - 1) / per_image + 1,
              per_image * patch, [&](int64_t n) {
                const int64_t lo = std::max(first, n * per_image);
                const int64_t hi = std::min(first + count, (n + 1) * per_image);
                for (int64_t p = lo; p < hi; ++p)
                  ScatterPatch(w, rows + (p - first) * patch, p, din);
              });
  }
}

template <typename T>
void ConvBackpropFilter(const weft_kernel_context* ctx, const Window2D& w,
                        int64_t out_channels, const T* in, const T* dy,
                        T* dfilter, int threads) {
  const int64_t patch = w.k_h * w.k_w * w.channels;
  const int64_t pixels = w.batch * w.out_h * w.out_w;
  const int64_t filter_size = patch * out_channels;
  std::fill(dfilter, dfilter + filter_size, T(0));
  if (patch == 0 || pixels == 0 || out_channels == 0) return;
  const int64_t chunk = std::min<int64_t>(
      pixels, std::max<int64_t>(1, kPatchBytes / (patch * int64_t{sizeof(T)})));
  // One Scratch per thread at a time: the patch rows and the partial
  // product share it.
  Scratch scratch(static_cast<size_t>(chunk * patch + filter_size) *
                  sizeof(T));
  T* patches = scratch.as<T>();
  T* partial = patches + chunk * patch;
  for (int64_t first = 0; first < pixels; first += chunk) {
    const int64_t count = std::min(chunk, pixels - first);
    ParallelFor(ctx, count, patch, 2.0 * static_cast<double>(patch),
                [&](int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r)
                    GatherPatch(w, in, first + r, patches + r * patch);
                });
    // partial [patch, Cout] = patches [count, patch]^T * dy [count, Cout]
    MatMulEigen<T>(patches, dy + first * out_channels, partial, patch, count,
                   out_channels, true, false, threads);
    for (int64_t i = 0; i < filter_size; ++i) dfilter[i] += partial[i];
  }
}

// Reads inputs 0 and 1: rank 4, one dtype.
weft_status* ReadRank4Pair(const weft_kernel_context* ctx, const char* first,
                           const char* second, Tensor* a, Tensor* b) {
  if (weft_status* s = ReadInput(ctx, 0, a)) return s;
  if (weft_status* s = ReadInput(ctx, 1, b)) return s;
  if (a->dtype != b->dtype) return DtypeMismatch(ctx, second, b->dtype, a->dtype);
  if (weft_status* s = CheckNhwcInput(ctx, first, *a)) return s;
  return CheckNhwcInput(ctx, second, *b);
}

weft_status* Conv2DBackpropInputKernel(weft_kernel_context* ctx) {
  Tensor filter, dy;
  if (weft_status* s =
          ReadRank4Pair(ctx, "filter", "out_backprop", &filter, &dy)) {
    return s;
  }
  const int64_t fallback[4] = {dy.dims[0], -1, -1, filter.dims[2]};
  int64_t sizes[4];
  if (weft_status* s = ReadSizes(ctx, "input_sizes", fallback, sizes)) {
    return s;
  }
  Window2D w = NhwcWindow(sizes);
  w.k_h = filter.dims[0];
  w.k_w = filter.dims[1];
  if (weft_status* s = ReadWindowAttrs(ctx, false, &w)) return s;
  if (w.channels != filter.dims[2]) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "input_sizes has %lld channels, the filter %lld",
                     static_cast<long long>(w.channels),
                     static_cast<long long>(filter.dims[2]));
  }
  if (weft_status* s = CheckOutputGrad(ctx, w, filter.dims[3], dy)) return s;
  Tensor out;
  if (weft_status* s = AllocateOutput(ctx, 0, dy.dtype, sizes, 4, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  const int threads = g_host->kernel_intra_op_threads(ctx);
  switch (dy.dtype) {
    case WEFT_FLOAT32:
#if WEFT_CPU_HAVE_ONEDNN
      if (dy.count != 0 && filter.count != 0) {
        OnednnConv2DBackpropInput(w, filter.dims[3], filter.data<float>(),
                                  dy.data<float>(), out.data<float>(),
                                  threads);
        return nullptr;
      }
#endif
      ConvBackpropInput(ctx, w, filter.dims[3], filter.data<float>(),
                        dy.data<float>(), out.data<float>(), threads);
      return nullptr;
    case WEFT_FLOAT64:
      ConvBackpropInput(ctx, w, filter.dims[3], filter.data<double>(),
                        dy.data<double>(), out.data<double>(), threads);
      return nullptr;
    default:
      return UnsupportedDtype(ctx, dy.dtype);
  }
}

weft_status* Conv2DBackpropFilterKernel(weft_kernel_context* ctx) {
  Tensor in, dy;
  if (weft_status* s = ReadRank4Pair(ctx, "input", "out_backprop", &in, &dy)) {
    return s;
  }
  const int64_t fallback[4] = {-1, -1, in.dims[3], dy.dims[3]};
  int64_t sizes[4];
  if (weft_status* s = ReadSizes(ctx, "filter_sizes", fallback, sizes)) {
    return s;
  }
  Window2D w = NhwcWindow(in.dims);
  w.k_h = sizes[0];
  w.k_w = sizes[1];
  if (weft_status* s = ReadWindowAttrs(ctx, false, &w)) return s;
  if (sizes[2] != in.dims[3]) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "filter_sizes has %lld input channels, the input %lld",
                     static_cast<long long>(sizes[2]),
                     static_cast<long long>(in.dims[3]));
  }
  if (weft_status* s = CheckOutputGrad(ctx, w, sizes[3], dy)) return s;
  Tensor out;
  if (weft_status* s = AllocateOutput(ctx, 0, in.dtype, sizes, 4, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  const int threads = g_host->kernel_intra_op_threads(ctx);
  switch (in.dtype) {
    case WEFT_FLOAT32:
#if WEFT_CPU_HAVE_ONEDNN
      if (dy.count != 0 && in.count != 0) {
        OnednnConv2DBackpropFilter(w, sizes[3], in.data<float>(),
                                   dy.data<float>(), out.data<float>(),
                                   threads);
        return nullptr;
      }
#endif
      ConvBackpropFilter(ctx, w, sizes[3], in.data<float>(), dy.data<float>(),
                         out.data<float>(), threads);
      return nullptr;
    case WEFT_FLOAT64:
      ConvBackpropFilter(ctx, w, sizes[3], in.data<double>(),
                         dy.data<double>(), out.data<double>(), threads);
      return nullptr;
    default:
      return UnsupportedDtype(ctx, in.dtype);
  }
}

// ---- Pooling gradients ------------------------------------------------------

// Index: int32_t when an image's elements fit (the offsets then vectorise
// alongside float values), else int64_t.  kRelu (MaxPoolReluGrad): a
// window's gradient goes to its maximum only where that maximum is > 0,
// which is ReluGrad(MaxPoolGrad(x, g), x) in one pass (the mask depends on
// the element the gradient lands on, never on the sum it lands in).
template <typename T, typename Index, bool kRelu>
void MaxPoolGradImage(const Window2D& w, const T* in, const T* dy, T* din,
                      int64_t n) {
  const int64_t c = w.channels;
  // Per channel, the best value so far and where it is: comparing against
  // the kept value reads the window's rows contiguously (no load through
  // the index), so the channel loop vectorises.
  std::vector<Index> best(static_cast<size_t>(c));
  std::vector<T> best_value(static_cast<size_t>(c));
  const T* image = in + n * w.in_h * w.in_w * c;
  T* dimage = din + n * w.in_h * w.in_w * c;
  for (int64_t oy = 0; oy < w.out_h; ++oy) {
    for (int64_t ox = 0; ox < w.out_w; ++ox) {
      const Clip r = ClipWindow(w, oy, ox);
      if (r.y_lo >= r.y_hi || r.x_lo >= r.x_hi) continue;
      const int64_t first = (r.y_lo * w.in_w + r.x_lo) * c;
      Index* bi = best.data();
      T* bv = best_value.data();
      for (int64_t k = 0; k < c; ++k) {
        bi[k] = static_cast<Index>(first + k);
        bv[k] = image[first + k];
      }
      for (int64_t y = r.y_lo; y < r.y_hi; ++y) {
        for (int64_t x = r.x_lo; x < r.x_hi; ++x) {
          const int64_t at = (y * w.in_w + x) * c;
          const T* row = image + at;
          const Index base = static_cast<Index>(at);
          for (int64_t k = 0; k < c; ++k) {
            // Beats<true>, written with & and | so that no branch stops
            // the loop from vectorising.
            const T v = row[k], b = bv[k];
            const bool take = (b == b) & ((v != v) | (v > b));
            bv[k] = take ? v : b;
            bi[k] = take ? base + static_cast<Index>(k) : bi[k];
          }
        }
      }
      const T* g = dy + ((n * w.out_h + oy) * w.out_w + ox) * c;
      if (kRelu) {
        for (int64_t k = 0; k < c; ++k)
          dimage[bi[k]] += bv[k] > T(0) ? g[k] : T(0);
      } else {
        for (int64_t k = 0; k < c; ++k) dimage[bi[k]] += g[k];
      }
    }
  }
}

// Windows that tile the input (stride = window, so no element is in two
// windows): each element's gradient is written once, with no clearing
// pass and no scatter.  Per window and channel the maximum is found as
// MaxPoolGradImage finds it, then a second pass over the (cached) window
// hands the window's gradient to the first element equal to it (the first
// NaN when it is NaN) and zero to the rest: `rest` holds what is still to
// hand out, so a later equal element gets zero.  Elements no window
// covers (VALID's remainder) are cleared first.
template <typename T, bool kRelu>
void MaxPoolGradTiled(const Window2D& w, const T* in, const T* dy, T* din,
                      int64_t n) {
  const int64_t c = w.channels;
  std::vector<T> best_value(static_cast<size_t>(c)), rest(static_cast<size_t>(c));
  const int64_t image_size = w.in_h * w.in_w * c;
  const T* image = in + n * image_size;
  T* dimage = din + n * image_size;
  const Clip first = ClipWindow(w, 0, 0);
  const Clip last = ClipWindow(w, w.out_h - 1, w.out_w - 1);
  if (first.y_lo > 0 || first.x_lo > 0 || last.y_hi < w.in_h ||
      last.x_hi < w.in_w)
    std::fill(dimage, dimage + image_size, T(0));
  T* bv = best_value.data();
  T* r = rest.data();
  for (int64_t oy = 0; oy < w.out_h; ++oy) {
    for (int64_t ox = 0; ox < w.out_w; ++ox) {
      const Clip cl = ClipWindow(w, oy, ox);
      if (cl.y_lo >= cl.y_hi || cl.x_lo >= cl.x_hi) continue;
      const T* start = image + (cl.y_lo * w.in_w + cl.x_lo) * c;
      for (int64_t k = 0; k < c; ++k) bv[k] = start[k];
      for (int64_t y = cl.y_lo; y < cl.y_hi; ++y) {
        for (int64_t x = cl.x_lo; x < cl.x_hi; ++x) {
          const T* row = image + (y * w.in_w + x) * c;
          for (int64_t k = 0; k < c; ++k) {
            const T v = row[k], b = bv[k];
            const bool take = (b == b) & ((v != v) | (v > b));
            bv[k] = take ? v : b;
          }
        }
      }
      const T* g = dy + ((n * w.out_h + oy) * w.out_w + ox) * c;
      for (int64_t k = 0; k < c; ++k)
        r[k] = !kRelu || bv[k] > T(0) ? g[k] : T(0);
      for (int64_t y = cl.y_lo; y < cl.y_hi; ++y) {
        for (int64_t x = cl.x_lo; x < cl.x_hi; ++x) {
          const int64_t at = (y * w.in_w + x) * c;
          const T* row = image + at;
          T* drow = dimage + at;
          for (int64_t k = 0; k < c; ++k) {
            const T v = row[k], b = bv[k], give = r[k];
            const bool here = (v == b) | ((v != v) & (b != b));
            drow[k] = here ? give : T(0);
            r[k] = here ? T(0) : give;
          }
        }
      }
    }
  }
}

template <typename T>
void AvgPoolGradImage(const Window2D& w, const T* dy, T* din, int64_t n) {
  const int64_t c = w.channels;
  T* dimage = din + n * w.in_h * w.in_w * c;
  for (int64_t oy = 0; oy < w.out_h; ++oy) {
    for (int64_t ox = 0; ox < w.out_w; ++ox) {
      const Clip r = ClipWindow(w, oy, ox);
      if (r.y_lo >= r.y_hi || r.x_lo >= r.x_hi) continue;
      const T scale =
          T(1) / static_cast<T>((r.y_hi - r.y_lo) * (r.x_hi - r.x_lo));
      const T* g = dy + ((n * w.out_h + oy) * w.out_w + ox) * c;
      for (int64_t y = r.y_lo; y < r.y_hi; ++y) {
        for (int64_t x = r.x_lo; x < r.x_hi; ++x) {
          T* to = dimage + (y * w.in_w + x) * c;
          for (int64_t k = 0; k < c; ++k) to[k] += g[k] * scale;
        }
      }
    }
  }
}

enum class PoolGradOp { kMax, kMaxRelu, kAvg };

// Each image's gradient is cleared just before its windows add into it
// (on the thread that adds, while the image is in its cache) rather than
// the whole output first in one pass; max-pool windows that tile the input
// need no clearing (MaxPoolGradTiled).
template <typename T, PoolGradOp op>
void PoolGrad(const weft_kernel_context* ctx, const Window2D& w, const T* in,
              const T* dy, T* din) {
  constexpr bool kRelu = op == PoolGradOp::kMaxRelu;
  const int64_t image = w.in_h * w.in_w * w.channels;
  const int64_t work = w.out_h * w.out_w * w.channels * w.k_h * w.k_w;
  const bool tiled = op != PoolGradOp::kAvg && w.stride_h == w.k_h &&
                     w.stride_w == w.k_w;
  ForImages(ctx, 0, w.batch, work + image, [&](int64_t n) {
    if (tiled) {
      MaxPoolGradTiled<T, kRelu>(w, in, dy, din, n);
      return;
    }
    std::fill(din + n * image, din + (n + 1) * image, T(0));
    if (op == PoolGradOp::kAvg)
      AvgPoolGradImage(w, dy, din, n);
    else if (image <= INT32_MAX)
      MaxPoolGradImage<T, int32_t, kRelu>(w, in, dy, din, n);
    else
      MaxPoolGradImage<T, int64_t, kRelu>(w, in, dy, din, n);
  });
}

// MaxPoolGrad(orig_input, grad), MaxPoolReluGrad(orig_input, grad) and
// AvgPoolGrad(grad) attr input_sizes.
// These loops, not oneDNN's pooling backward: on [64,28,28,32] NHWC, one
// thread, oneDNN 2.6's backward (jit:avx2) took 1.5 / 1.5 / 5.5 ms for
// AvgPoolGrad with 2x2/2, 3x3/2 and 3x3/1 windows against 0.54 / 0.82 /
// 2.7 ms here, and MaxPoolGrad, which must first rerun the forward in
// training mode for oneDNN's workspace, 9.5 / 9.3 / 36 ms against 2.7 /
// 4.5 / 17 ms; the CNN step ran 8 % faster on these loops.
template <PoolGradOp op>
weft_status* PoolGradKernel(weft_kernel_context* ctx) {
  constexpr bool kMax = op != PoolGradOp::kAvg;
  Tensor in, dy;
  if (kMax) {
    if (weft_status* s = ReadRank4Pair(ctx, "orig_input", "grad", &in, &dy)) {
      return s;
    }
  } else {
    if (weft_status* s = ReadInput(ctx, 0, &dy)) return s;
    if (weft_status* s = CheckNhwcInput(ctx, "grad", dy)) return s;
  }
  int64_t sizes[4];
  if (kMax) {
    std::copy(in.dims, in.dims + 4, sizes);
  } else {
    const int64_t fallback[4] = {dy.dims[0], -1, -1, dy.dims[3]};
    if (weft_status* s = ReadSizes(ctx, "input_sizes", fallback, sizes)) {
      return s;
    }
  }
  Window2D w = NhwcWindow(sizes);
  if (weft_status* s = ReadWindowAttrs(ctx, true, &w)) return s;
  if (weft_status* s = CheckOutputGrad(ctx, w, w.channels, dy)) return s;
  Tensor out;
  if (weft_status* s = AllocateOutput(ctx, 0, dy.dtype, sizes, 4, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  switch (dy.dtype) {
    case WEFT_FLOAT32:
      PoolGrad<float, op>(ctx, w, in.data<float>(), dy.data<float>(),
                          out.data<float>());
      return nullptr;
    case WEFT_FLOAT64:
      PoolGrad<double, op>(ctx, w, in.data<double>(), dy.data<double>(),
                           out.data<double>());
      return nullptr;
    default:
      return UnsupportedDtype(ctx, dy.dtype);
  }
}

// ---- Max-pool gradients from the window index -----------------------------

// Image n of MaxPoolGradFromWindowIndex (orig_output null) or
// MaxPoolReluGradFromWindowIndex: each window's gradient (where its
// maximum orig_output is > 0, for the latter) goes to the element its
// window index names.  Windows that do not overlap (stride >= ksize) write
// each element once, comparing the index with each position so the
// channel loop vectorises; overlapping ones add into a cleared image.
// `give` is scratch of one pixel's channels; `channel_sums` (may be null)
// gets, per channel, the sum of what the image's windows handed out.
// Returns false when an index names no element of its (clipped) window:
// the index did not come from MaxPoolWithWindowIndex with these
// attributes.
template <typename T>
bool PoolGradFromIndexImage(const Window2D& w, const uint8_t* index,
                            const T* orig_output, const T* dy, T* din,
                            int64_t n, T* give, T* channel_sums) {
  const int64_t c = w.channels;
  const int64_t image_size = w.in_h * w.in_w * c;
  T* dimage = din + n * image_size;
  const bool disjoint = w.stride_h >= w.k_h && w.stride_w >= w.k_w;
  const Clip first = ClipWindow(w, 0, 0);
  const Clip last = ClipWindow(w, w.out_h - 1, w.out_w - 1);
  const bool covered = w.stride_h == w.k_h && w.stride_w == w.k_w &&
                       first.y_lo == 0 && first.x_lo == 0 &&
                       last.y_hi == w.in_h && last.x_hi == w.in_w;
  if (!disjoint || !covered) std::fill(dimage, dimage + image_size, T(0));
  const int64_t window = w.k_h * w.k_w;
  for (int64_t oy = 0; oy < w.out_h; ++oy) {
    for (int64_t ox = 0; ox < w.out_w; ++ox) {
      const Clip cl = ClipWindow(w, oy, ox);
      const int64_t y0 = cl.y0, x0 = cl.x0;
      const int64_t at = ((n * w.out_h + oy) * w.out_w + ox) * c;
      const T* g = dy + at;
      const uint8_t* ix = index + at;
      // Every index must name an element of the clipped window: checked
      // by its largest value where the window is whole, else one by one.
      if (cl.y_hi - cl.y_lo == w.k_h && cl.x_hi - cl.x_lo == w.k_w) {
        uint8_t top = 0;
        for (int64_t k = 0; k < c; ++k) top = std::max(top, ix[k]);
        if (top >= window) return false;
      } else {
        for (int64_t k = 0; k < c; ++k) {
          const int64_t y = y0 + ix[k] / w.k_w, x = x0 + ix[k] % w.k_w;
          if (ix[k] >= window || y < cl.y_lo || y >= cl.y_hi ||
              x < cl.x_lo || x >= cl.x_hi)
            return false;
        }
      }
      // Loaded unconditionally, selected after: a conditional load
      // becomes a masked load, slow on some machines.
      for (int64_t k = 0; k < c; ++k) {
        const T gk = g[k];
        give[k] = orig_output == nullptr || orig_output[at + k] > T(0)
                      ? gk : T(0);
      }
      if (channel_sums != nullptr)
        for (int64_t k = 0; k < c; ++k) channel_sums[k] += give[k];
      if (!disjoint) {
        for (int64_t k = 0; k < c; ++k) {
          const int64_t y = y0 + ix[k] / w.k_w, x = x0 + ix[k] % w.k_w;
          dimage[(y * w.in_w + x) * c + k] += give[k];
        }
        continue;
      }
      for (int64_t y = cl.y_lo; y < cl.y_hi; ++y) {
        for (int64_t x = cl.x_lo; x < cl.x_hi; ++x) {
          const int32_t pos = static_cast<int32_t>((y - y0) * w.k_w + (x - x0));
          T* drow = dimage + (y * w.in_w + x) * c;
          for (int64_t k = 0; k < c; ++k)
            drow[k] = static_cast<int32_t>(ix[k]) == pos ? give[k] : T(0);
        }
      }
    }
  }
  return true;
}

// MaxPoolGradFromWindowIndex(window_index, grad) and (kRelu)
// MaxPoolReluGradFromWindowIndex(orig_output, window_index, grad), attr
// input_sizes with the pool's attributes.
template <bool kRelu>
weft_status* PoolGradFromIndexKernel(weft_kernel_context* ctx) {
  constexpr int32_t kIndex = kRelu ? 1 : 0;
  Tensor orig_output, index, dy;
  if (kRelu) {
    if (weft_status* s = ReadInput(ctx, 0, &orig_output)) return s;
  }
  if (weft_status* s = ReadInput(ctx, kIndex, &index)) return s;
  if (weft_status* s = ReadInput(ctx, kIndex + 1, &dy)) return s;
  if (index.dtype != WEFT_UINT8) {
    return DtypeMismatch(ctx, "window_index", index.dtype, WEFT_UINT8);
  }
  if (kRelu && orig_output.dtype != dy.dtype) {
    return DtypeMismatch(ctx, "orig_output", orig_output.dtype, dy.dtype);
  }
  if (weft_status* s = CheckNhwcInput(ctx, "grad", dy)) return s;
  const int64_t fallback[4] = {dy.dims[0], -1, -1, dy.dims[3]};
  int64_t sizes[4];
  if (weft_status* s = ReadSizes(ctx, "input_sizes", fallback, sizes)) {
    return s;
  }
  Window2D w = NhwcWindow(sizes);
  if (weft_status* s = ReadWindowAttrs(ctx, true, &w)) return s;
  if (weft_status* s = CheckOutputGrad(ctx, w, w.channels, dy)) return s;
  if (weft_status* s = CheckWindowIndexFits(ctx, w)) return s;
  for (const Tensor* t : {&index, &orig_output}) {
    if (t == &orig_output && !kRelu) continue;
    if (!std::equal(t->dims, t->dims + t->rank, dy.dims, dy.dims + dy.rank)) {
      char got[96], want[96];
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "%s %s is not grad's shape %s",
                       t == &index ? "window_index" : "orig_output",
                       FormatShape(t->dims, t->rank, got, sizeof got),
                       FormatShape(dy.dims, dy.rank, want, sizeof want));
    }
  }
  Tensor out, bias;
  if (weft_status* s = AllocateOutput(ctx, 0, dy.dtype, sizes, 4, &out)) {
    return s;
  }
  // kRelu: output 1, the gradient summed over all but the channel axis
  // (the bias gradient of the layer the ReLU ends, which the planner
  // takes from here instead of a SumToShapeOf pass over output 0).
  if (kRelu) {
    if (weft_status* s = AllocateOutput(ctx, 1, dy.dtype, &w.channels, 1,
                                        &bias)) {
      return s;
    }
  }
  std::atomic<bool> bad{false};
  auto run = [&](auto* din) {
    using T = std::remove_pointer_t<decltype(din)>;
    const int64_t image = w.in_h * w.in_w * w.channels;
    const int64_t work = w.out_h * w.out_w * w.channels * w.k_h * w.k_w;
    // Per image, then added in image order: the same sum whatever the
    // threads.
    std::vector<T> sums(kRelu ? static_cast<size_t>(w.batch * w.channels) : 0,
                        T(0));
    if (out.count != 0) {
      ParallelFor(ctx, w.batch, work + image,
                  static_cast<double>(work + image),
                  [&](int64_t begin, int64_t end) {
                    std::vector<T> give(static_cast<size_t>(w.channels));
                    for (int64_t n = begin; n < end; ++n) {
                      if (!PoolGradFromIndexImage<T>(
                              w, index.data<uint8_t>(),
                              kRelu ? orig_output.data<T>() : nullptr,
                              dy.data<T>(), din, n, give.data(),
                              kRelu ? sums.data() + n * w.channels : nullptr))
                        bad.store(true, std::memory_order_relaxed);
                    }
                  });
    }
    if (kRelu) {
      T* b = bias.data<T>();
      std::fill(b, b + w.channels, T(0));
      for (int64_t n = 0; n < w.batch; ++n)
        for (int64_t k = 0; k < w.channels; ++k)
          b[k] += sums[n * w.channels + k];
    }
  };
  switch (dy.dtype) {
    case WEFT_FLOAT32:
      run(out.data<float>());
      break;
    case WEFT_FLOAT64:
      run(out.data<double>());
      break;
    default:
      return UnsupportedDtype(ctx, dy.dtype);
  }
  if (bad.load()) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "window_index names a position outside its window: "
                     "it must come from MaxPoolWithWindowIndex with the same "
                     "ksize, strides and padding");
  }
  return nullptr;
}

}  // namespace

weft_status* RegisterGradKernelsB(const Registrar& registrar) {
  struct Entry {
    const char* op;
    weft_kernel_compute_fn compute;
  };
  static constexpr Entry kKernels[] = {
      {"SumGrad", Guarded<ReductionGradKernel<Spread::kSum>>},
      {"MeanGrad", Guarded<ReductionGradKernel<Spread::kMean>>},
      {"ProdGrad", Guarded<ReductionGradKernel<Spread::kProd>>},
      {"Conv2DBackpropInput", Guarded<Conv2DBackpropInputKernel>},
      {"Conv2DBackpropFilter", Guarded<Conv2DBackpropFilterKernel>},
      {"MaxPoolGrad", Guarded<PoolGradKernel<PoolGradOp::kMax>>},
      {"MaxPoolReluGrad", Guarded<PoolGradKernel<PoolGradOp::kMaxRelu>>},
      {"AvgPoolGrad", Guarded<PoolGradKernel<PoolGradOp::kAvg>>},
      {"MaxPoolGradFromWindowIndex", Guarded<PoolGradFromIndexKernel<false>>},
      {"MaxPoolReluGradFromWindowIndex",
       Guarded<PoolGradFromIndexKernel<true>>},
  };
  for (const Entry& e : kKernels) {
    if (weft_status* s =
            registrar.Add(e.op, {WEFT_FLOAT32, WEFT_FLOAT64}, e.compute)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_cpu
