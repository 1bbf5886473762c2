// Patch gathering and per-thread scratch memory, shared by the convolution
// and pooling kernels; the window geometry itself (TensorFlow's NHWC rules)
// is plugins/common/window2d.h.
//
// Header-only and free of Weft types so that bench/ can set up the same
// geometry when it calls the oneDNN path (onednn_nn.h) directly.
#ifndef WEFT_PLUGINS_CPU_NN_COMMON_H_
#define WEFT_PLUGINS_CPU_NN_COMMON_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "host_memory.h"  // Scratch
#include "window2d.h"

namespace weft_cpu {

// The window geometry (Window2D, ClipWindow, ComputeWindow2D) is shared
// with the other device plugins: plugins/common/window2d.h.
using weft_window::Clip;
using weft_window::ClipWindow;
using weft_window::ComputeWindow2D;
using weft_window::kMaxWindowExtent;
using weft_window::Window2D;

// Visits the KH*KW taps of output pixel `pixel` (counted over N, OH, OW):
// tap(at, from) with `at` the tap's offset in a [KH, KW, Cin] patch row
// (matching the HWIO filter's rows) and `from` the offset of the input
// pixel it reads in the NHWC input, or -1 for a tap in the padding.
template <typename Fn>
void ForEachTap(const Window2D& w, int64_t pixel, Fn&& tap) {
  const int64_t ox = pixel % w.out_w;
  const int64_t oy = pixel / w.out_w % w.out_h;
  const int64_t n = pixel / (w.out_w * w.out_h);
  const int64_t c = w.channels;
  int64_t at = 0;
  for (int64_t ky = 0; ky < w.k_h; ++ky) {
    const int64_t iy = oy * w.stride_h - w.pad_top + ky * w.dilation_h;
    const bool row_inside = iy >= 0 && iy < w.in_h;
    for (int64_t kx = 0; kx < w.k_w; ++kx, at += c) {
      const int64_t ix = ox * w.stride_w - w.pad_left + kx * w.dilation_w;
      tap(at, row_inside && ix >= 0 && ix < w.in_w
                  ? ((n * w.in_h + iy) * w.in_w + ix) * c
                  : int64_t{-1});
    }
  }
}

// Copies the receptive field of output pixel `pixel` into `row`; taps in
// the padding are zero.
template <typename T>
void GatherPatch(const Window2D& w, const T* in, int64_t pixel, T* row) {
  const int64_t c = w.channels;
  ForEachTap(w, pixel, [&](int64_t at, int64_t from) {
    if (from >= 0) {
      std::memcpy(row + at, in + from, static_cast<size_t>(c) * sizeof(T));
    } else {
      std::fill(row + at, row + at + c, T(0));
    }
  });
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_NN_COMMON_H_
