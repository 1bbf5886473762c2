// MaxPool and AvgPool: oneDNN for float32 where the plugin was built with
// it; otherwise, and for float64, direct loops over each window.
// MaxPoolWithWindowIndex: loops, for float32 and float64.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernel.h"
#include "nan_order.h"
#include "nn_common.h"
#include "nn_kernels.h"
#if WEFT_CPU_HAVE_ONEDNN
#include "onednn_nn.h"
#endif

namespace weft_cpu {
namespace {

// Output rows [begin, end), a row being one (image, output y).  Windows are
// clipped to the input, so padding takes part in neither the maximum nor the
// average: TensorFlow's SAME semantics.  A NaN in a window is its maximum.  Channels are innermost in NHWC, so
// the inner loop runs over contiguous memory and vectorises.
template <typename T, bool kMax>
void PoolRows(const Window2D& w, const T* in, T* out, int64_t begin,
              int64_t end) {
  const int64_t c = w.channels;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t n = row / w.out_h;
    for (int64_t ox = 0; ox < w.out_w; ++ox) {
      const Clip cl = ClipWindow(w, row % w.out_h, ox);
      const int64_t y_lo = cl.y_lo, y_hi = cl.y_hi;
      const int64_t x_lo = cl.x_lo, x_hi = cl.x_hi;
      T* o = out + (row * w.out_w + ox) * c;
      std::fill(o, o + c,
                kMax ? -std::numeric_limits<T>::infinity() : T(0));
      for (int64_t y = y_lo; y < y_hi; ++y) {
        for (int64_t x = x_lo; x < x_hi; ++x) {
          const T* p = in + ((n * w.in_h + y) * w.in_w + x) * c;
          for (int64_t k = 0; k < c; ++k) {
            o[k] = kMax ? (Beats<true>(p[k], o[k]) ? p[k] : o[k])
                        : o[k] + p[k];
          }
        }
      }
      if (!kMax) {
        // SAME windows always hold at least one input element.
        const T count = static_cast<T>((y_hi - y_lo) * (x_hi - x_lo));
        for (int64_t k = 0; k < c; ++k) o[k] /= count;
      }
    }
  }
}

template <typename T>
void PoolLoops(const weft_kernel_context* ctx, const Window2D& w, bool max,
               const T* in, T* out) {
  const int64_t rows = w.batch * w.out_h;
  const int64_t per_row = w.out_w * w.channels * w.k_h * w.k_w;
  ParallelFor(ctx, rows, per_row, static_cast<double>(per_row),
              [&](int64_t begin, int64_t end) {
                if (max) {
                  PoolRows<T, true>(w, in, out, begin, end);
                } else {
                  PoolRows<T, false>(w, in, out, begin, end);
                }
              });
}

#if WEFT_CPU_HAVE_ONEDNN
// oneDNN's max pooling keeps or drops a NaN depending on where it sits in
// the window, so images holding one take the loops.  The input goes in
// groups of images of about a megabyte: the NaN scan brings each group into
// cache just before oneDNN reads it.  On [16,56,56,64] with 3x3 windows and
// stride 2 (a loaded 2-core machine, best of 100 runs), one thread: 4.7 ms
// before the scan, 4.4-4.8 ms with it (one scan of the whole input first
// cost 6.2 ms).  On several threads the groups, as many for each thread,
// are the WorkPool's chunks, each scanned and pooled by the thread that
// claims it with a one-thread primitive (as OnednnPool2D splits a batch;
// an image's outputs depend on its own windows alone, so the split changes
// no bit); one image alone is scanned on the pool and pooled on oneDNN's
// threads.
void OnednnMaxPoolPropagatingNaN(const weft_kernel_context* ctx,
                                 const Window2D& w, const float* in,
                                 float* out) {
  const int threads = onednn_nn_detail::PoolThreads(
      w, g_host->kernel_intra_op_threads(ctx));
  const int64_t image_in = w.in_h * w.in_w * w.channels;
  const int64_t image_out = w.out_h * w.out_w * w.channels;
  const int64_t most =
      std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(image_in, 1));
  int64_t groups = (w.batch + most - 1) / most;
  groups = std::min(w.batch, (groups + threads - 1) / threads * threads);
  const int64_t per = (w.batch + groups - 1) / groups;
  groups = (w.batch + per - 1) / per;
  WorkPool* pool = groups > 1 ? WorkPool::For(threads) : nullptr;
  auto group = [&](int64_t g, int pool_threads, bool scan_on_pool) {
    Window2D part = w;
    part.batch = std::min(per, w.batch - g * per);
    const float* x = in + g * per * image_in;
    float* y = out + g * per * image_out;
    const int64_t n = part.batch * image_in;
    if (scan_on_pool ? AnyNaN(ctx, x, n) : AnyNaNIn(x, int64_t{0}, n)) {
      PoolLoops(ctx, part, true, x, y);
    } else {
      OnednnPool2D(part, true, x, y, pool_threads);
    }
  };
  if (pool != nullptr) {
    pool->Run(groups, [&](int64_t g) { group(g, 1, false); });
    return;
  }
  for (int64_t g = 0; g < groups; ++g) group(g, threads, true);
}
#endif

// MaxPoolWithWindowIndex, output rows [begin, end): the maximum as
// PoolRows finds it, and where in its (unclipped) window it is.  The
// position is kept per channel as int32 beside the value, so the channel
// loop vectorises, and narrowed to uint8 once per window.
template <typename T>
void PoolRowsWithIndex(const Window2D& w, const T* in, T* out,
                       uint8_t* index, int64_t begin, int64_t end) {
  const int64_t c = w.channels;
  const int64_t ahead = w.stride_h * w.in_w * c;
  std::vector<int32_t> best(static_cast<size_t>(c));
  int32_t* bi = best.data();
  for (int64_t row = begin; row < end; ++row) {
    const int64_t n = row / w.out_h;
    for (int64_t ox = 0; ox < w.out_w; ++ox) {
      const Clip cl = ClipWindow(w, row % w.out_h, ox);
      const int64_t y0 = cl.y0, x0 = cl.x0;
      const int64_t y_lo = cl.y_lo, y_hi = cl.y_hi;
      const int64_t x_lo = cl.x_lo, x_hi = cl.x_hi;
      T* o = out + (row * w.out_w + ox) * c;
      uint8_t* ix = index + (row * w.out_w + ox) * c;
      // Valid windows hold at least one input element (shape function).
      const T* first = in + ((n * w.in_h + y_lo) * w.in_w + x_lo) * c;
      const int32_t first_at =
          static_cast<int32_t>((y_lo - y0) * w.k_w + (x_lo - x0));
      for (int64_t k = 0; k < c; ++k) {
        o[k] = first[k];
        bi[k] = first_at;
      }
      for (int64_t y = y_lo; y < y_hi; ++y) {
        for (int64_t x = x_lo; x < x_hi; ++x) {
          const T* p = in + ((n * w.in_h + y) * w.in_w + x) * c;
          const int32_t at = static_cast<int32_t>((y - y0) * w.k_w + (x - x0));
          for (int64_t k = 0; k < c; k += 64 / sizeof(T))
            __builtin_prefetch(p + ahead + k);
          for (int64_t k = 0; k < c; ++k) {
            // Beats<true>, branch-free.
            const T v = p[k], b = o[k];
            const bool take = (b == b) & ((v != v) | (v > b));
            o[k] = take ? v : b;
            bi[k] = take ? at : bi[k];
          }
        }
      }
      for (int64_t k = 0; k < c; ++k) ix[k] = static_cast<uint8_t>(bi[k]);
    }
  }
}

// MaxPoolWithWindowIndex(value) -> (output, window_index).  One pass over
// the input (no NaN scan: the loop itself keeps the first NaN), at about
// the cost of oneDNN's pooling and its NaN scan together, and the gradient
// then reads the index instead of the input.
weft_status* PoolWithIndexKernel(weft_kernel_context* ctx) {
  Tensor in;
  Window2D w;
  if (weft_status* s = ReadPoolInput(ctx, &in, &w)) return s;
  if (weft_status* s = CheckWindowIndexFits(ctx, w)) return s;
  const int64_t dims[4] = {w.batch, w.out_h, w.out_w, w.channels};
  Tensor out, index;
  if (weft_status* s = AllocateOutput(ctx, 0, in.dtype, dims, 4, &out)) {
    return s;
  }
  if (weft_status* s = AllocateOutput(ctx, 1, WEFT_UINT8, dims, 4, &index)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  const int64_t rows = w.batch * w.out_h;
  const int64_t per_row = w.out_w * w.channels * w.k_h * w.k_w;
  auto run = [&](auto* data) {
    using T = std::remove_pointer_t<decltype(data)>;
    const T* x = in.data<T>();
    ParallelFor(ctx, rows, per_row, static_cast<double>(per_row),
                [&](int64_t begin, int64_t end) {
                  PoolRowsWithIndex<T>(w, x, data, index.data<uint8_t>(),
                                       begin, end);
                });
  };
  switch (in.dtype) {
    case WEFT_FLOAT32:
      run(out.data<float>());
      return nullptr;
    case WEFT_FLOAT64:
      run(out.data<double>());
      return nullptr;
    default:
      return UnsupportedDtype(ctx, in.dtype);
  }
}

template <bool kMax>
weft_status* PoolKernel(weft_kernel_context* ctx) {
  Tensor in;
  Window2D w;
  if (weft_status* s = ReadPoolInput(ctx, &in, &w)) return s;
  const int64_t dims[4] = {w.batch, w.out_h, w.out_w, w.channels};
  Tensor out;
  if (weft_status* s = AllocateOutput(ctx, 0, in.dtype, dims, 4, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  switch (in.dtype) {
    case WEFT_FLOAT32:
#if WEFT_CPU_HAVE_ONEDNN
      if (kMax) {
        OnednnMaxPoolPropagatingNaN(ctx, w, in.data<float>(),
                                    out.data<float>());
      } else {
        OnednnPool2D(w, false, in.data<float>(), out.data<float>(),
                     g_host->kernel_intra_op_threads(ctx));
      }
#else
      PoolLoops(ctx, w, kMax, in.data<float>(), out.data<float>());
#endif
      return nullptr;
    case WEFT_FLOAT64:
      PoolLoops(ctx, w, kMax, in.data<double>(), out.data<double>());
      return nullptr;
    default:
      return UnsupportedDtype(ctx, in.dtype);
  }
}

}  // namespace

weft_status* ReadPoolInput(const weft_kernel_context* ctx, Tensor* in,
                           Window2D* w) {
  if (weft_status* s = ReadInput(ctx, 0, in)) return s;
  if (weft_status* s = CheckNhwcInput(ctx, "value [N, H, W, C]", *in)) {
    return s;
  }
  w->batch = in->dims[0];
  w->in_h = in->dims[1];
  w->in_w = in->dims[2];
  w->channels = in->dims[3];
  return ReadWindowAttrs(ctx, true, w);
}

weft_status* CheckWindowIndexFits(const weft_kernel_context* ctx,
                                  const Window2D& w) {
  if (w.k_h * w.k_w <= 256) return nullptr;
  return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                   "a window of %lld x %lld elements has positions a uint8 "
                   "cannot hold (at most 256 elements)",
                   static_cast<long long>(w.k_h),
                   static_cast<long long>(w.k_w));
}

weft_status* RegisterPoolKernels(const Registrar& registrar) {
  if (weft_status* s = registrar.Add("MaxPool", {WEFT_FLOAT32, WEFT_FLOAT64},
                                     Guarded<PoolKernel<true>>)) {
    return s;
  }
  if (weft_status* s =
          registrar.Add("MaxPoolWithWindowIndex", {WEFT_FLOAT32, WEFT_FLOAT64},
                        Guarded<PoolWithIndexKernel>)) {
    return s;
  }
  return registrar.Add("AvgPool", {WEFT_FLOAT32, WEFT_FLOAT64},
                       Guarded<PoolKernel<false>>);
}

}  // namespace weft_cpu
