// The per-element bodies of the pooling kernels (pool.cu), written once
// for the device and the host: test_window_math.cc runs these very
// functions on the CPU against the CPU plugin's loops.
//
// Forward kernels run one thread per output element, gradients one thread
// per input element: each gathers from the windows that hold it, in
// increasing (oy, ox) order, the order in which the CPU plugin's windows
// add into it, so no atomics are needed and the sums are the CPU's.
// The rules are the op conventions': a window's maximum is its first
// largest element, or its first NaN; padding takes part in neither the
// maximum nor the average (which divides by the elements on the input);
// a max-pool gradient goes to the element the maximum came from.
#ifndef WEFT_PLUGINS_CUDA_POOL_OPS_H_
#define WEFT_PLUGINS_CUDA_POOL_OPS_H_

#include <cstdint>

#include "conv_plan.h"

namespace weft_cuda {

// A pooling window over an NHWC tensor: Window2D's fields the kernels
// read, passed by value.
struct PoolGeometry {
  int64_t batch, in_h, in_w, channels;
  int64_t k_h, k_w, stride_h, stride_w, pad_top, pad_left;
  int64_t out_h, out_w;
};

inline PoolGeometry PoolGeometryOf(const weft_window::Window2D& w) {
  return PoolGeometry{w.batch,    w.in_h,     w.in_w,    w.channels,
                      w.k_h,      w.k_w,      w.stride_h, w.stride_w,
                      w.pad_top,  w.pad_left, w.out_h,   w.out_w};
}

WEFT_CONV_HD PoolClip ClipOf(const PoolGeometry& g, int64_t oy, int64_t ox) {
  return ClipPoolWindow(g.in_h, g.in_w, g.k_h, g.k_w, g.stride_h, g.stride_w,
                        g.pad_top, g.pad_left, oy, ox);
}

// The maximum of window (n, oy, ox) in channel c, and (*position) where it
// is in the unclipped window, (y - y0) * k_w + (x - x0): its first largest
// element, or its first NaN.  Windows always hold an input element (the
// shape rules see to it).
template <typename T>
WEFT_CONV_HD T WindowMax(const PoolGeometry& g, const T* in, int64_t n,
                         int64_t oy, int64_t ox, int64_t c,
                         int32_t* position) {
  const PoolClip cl = ClipOf(g, oy, ox);
  const T* image = in + n * g.in_h * g.in_w * g.channels + c;
  T best = image[(cl.y_lo * g.in_w + cl.x_lo) * g.channels];
  int32_t at = static_cast<int32_t>((cl.y_lo - cl.y0) * g.k_w +
                                    (cl.x_lo - cl.x0));
  for (int64_t y = cl.y_lo; y < cl.y_hi; ++y) {
    for (int64_t x = cl.x_lo; x < cl.x_hi; ++x) {
      const T v = image[(y * g.in_w + x) * g.channels];
      // The CPU's Beats<true>: strictly larger, or the first NaN, which
      // nothing then replaces.
      if (best == best && (v != v || v > best)) {
        best = v;
        at = static_cast<int32_t>((y - cl.y0) * g.k_w + (x - cl.x0));
      }
    }
  }
  *position = at;
  return best;
}

// Output element i of MaxPool / MaxPoolWithWindowIndex ([n, oy, ox, c]).
template <typename T>
WEFT_CONV_HD T MaxPoolAt(const PoolGeometry& g, const T* in, int64_t i,
                         int32_t* position) {
  const int64_t c = i % g.channels;
  int64_t rest = i / g.channels;
  const int64_t ox = rest % g.out_w;
  rest /= g.out_w;
  const int64_t oy = rest % g.out_h;
  const int64_t n = rest / g.out_h;
  return WindowMax(g, in, n, oy, ox, c, position);
}

// Output element i of AvgPool: the sum in (y, x) order over the window's
// elements on the input, divided by their count.
template <typename T>
WEFT_CONV_HD T AvgPoolAt(const PoolGeometry& g, const T* in, int64_t i) {
  const int64_t c = i % g.channels;
  int64_t rest = i / g.channels;
  const int64_t ox = rest % g.out_w;
  rest /= g.out_w;
  const int64_t oy = rest % g.out_h;
  const int64_t n = rest / g.out_h;
  const PoolClip cl = ClipOf(g, oy, ox);
  const T* image = in + n * g.in_h * g.in_w * g.channels + c;
  T sum = T(0);
  for (int64_t y = cl.y_lo; y < cl.y_hi; ++y) {
    for (int64_t x = cl.x_lo; x < cl.x_hi; ++x) {
      sum += image[(y * g.in_w + x) * g.channels];
    }
  }
  return sum / static_cast<T>((cl.y_hi - cl.y_lo) * (cl.x_hi - cl.x_lo));
}

// Input element i ([n, y, x, c]) and the windows that hold it.
struct Holders {
  int64_t n, y, x, c;
  int64_t oy_lo, oy_hi, ox_lo, ox_hi;
};

WEFT_CONV_HD Holders HoldersOf(const PoolGeometry& g, int64_t i) {
  Holders h;
  h.c = i % g.channels;
  int64_t rest = i / g.channels;
  h.x = rest % g.in_w;
  rest /= g.in_w;
  h.y = rest % g.in_h;
  h.n = rest / g.in_h;
  WindowsHolding(h.y, g.pad_top, g.k_h, g.stride_h, g.out_h, &h.oy_lo,
                 &h.oy_hi);
  WindowsHolding(h.x, g.pad_left, g.k_w, g.stride_w, g.out_w, &h.ox_lo,
                 &h.ox_hi);
  return h;
}

// Input element i of MaxPoolGrad(in, dy): dy of each window whose maximum
// is this element, added in window order.  `relu` (MaxPoolReluGrad): only
// where that maximum, this element, is > 0.
template <typename T>
WEFT_CONV_HD T MaxPoolGradAt(const PoolGeometry& g, const T* in, const T* dy,
                             bool relu, int64_t i) {
  const Holders h = HoldersOf(g, i);
  T sum = T(0);
  for (int64_t oy = h.oy_lo; oy < h.oy_hi; ++oy) {
    for (int64_t ox = h.ox_lo; ox < h.ox_hi; ++ox) {
      int32_t at = 0;
      WindowMax(g, in, h.n, oy, ox, h.c, &at);
      const PoolClip cl = ClipOf(g, oy, ox);
      if (at == static_cast<int32_t>((h.y - cl.y0) * g.k_w + (h.x - cl.x0))) {
        sum += dy[((h.n * g.out_h + oy) * g.out_w + ox) * g.channels + h.c];
      }
    }
  }
  if (relu && !(in[i] > T(0))) return T(0);
  return sum;
}

// Input element i of AvgPoolGrad(dy): each window's dy times one over its
// count of input elements, added in window order.
template <typename T>
WEFT_CONV_HD T AvgPoolGradAt(const PoolGeometry& g, const T* dy, int64_t i) {
  const Holders h = HoldersOf(g, i);
  T sum = T(0);
  for (int64_t oy = h.oy_lo; oy < h.oy_hi; ++oy) {
    for (int64_t ox = h.ox_lo; ox < h.ox_hi; ++ox) {
      const PoolClip cl = ClipOf(g, oy, ox);
      const T scale =
          T(1) / static_cast<T>((cl.y_hi - cl.y_lo) * (cl.x_hi - cl.x_lo));
      sum += dy[((h.n * g.out_h + oy) * g.out_w + ox) * g.channels + h.c] *
             scale;
    }
  }
  return sum;
}

// Whether output element o's window index names an element of its
// (clipped) window, as MaxPoolWithWindowIndex with these attributes
// writes it.
WEFT_CONV_HD bool WindowIndexValid(const PoolGeometry& g,
                                   const uint8_t* index, int64_t o) {
  int64_t rest = o / g.channels;
  const int64_t ox = rest % g.out_w;
  rest /= g.out_w;
  const int64_t oy = rest % g.out_h;
  const PoolClip cl = ClipOf(g, oy, ox);
  const int64_t at = index[o];
  if (at >= g.k_h * g.k_w) return false;
  const int64_t y = cl.y0 + at / g.k_w, x = cl.x0 + at % g.k_w;
  return y >= cl.y_lo && y < cl.y_hi && x >= cl.x_lo && x < cl.x_hi;
}

// What window o hands out: its dy, or with `orig_output`
// (MaxPoolReluGradFromWindowIndex) dy only where its maximum is > 0.
template <typename T>
WEFT_CONV_HD T Give(const T* orig_output, const T* dy, int64_t o) {
  return orig_output == nullptr || orig_output[o] > T(0) ? dy[o] : T(0);
}

// Input element i of MaxPoolGradFromWindowIndex: what each window whose
// index names this element hands out, added in window order.
template <typename T>
WEFT_CONV_HD T GradFromIndexAt(const PoolGeometry& g, const uint8_t* index,
                               const T* orig_output, const T* dy, int64_t i) {
  const Holders h = HoldersOf(g, i);
  T sum = T(0);
  for (int64_t oy = h.oy_lo; oy < h.oy_hi; ++oy) {
    for (int64_t ox = h.ox_lo; ox < h.ox_hi; ++ox) {
      const PoolClip cl = ClipOf(g, oy, ox);
      const int64_t o =
          ((h.n * g.out_h + oy) * g.out_w + ox) * g.channels + h.c;
      if (static_cast<int64_t>(index[o]) ==
          (h.y - cl.y0) * g.k_w + (h.x - cl.x0)) {
        sum += Give(orig_output, dy, o);
      }
    }
  }
  return sum;
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_POOL_OPS_H_
