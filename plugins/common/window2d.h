// Where a 2-D sliding window (convolution, pooling) lands on an NHWC
// input: TensorFlow's SAME and VALID rules, the output size and padding,
// and each output pixel's window clipped to the input.  Header-only and free
// of Weft types: the CPU plugin, the device plugins and bench/ all set up
// windows with it, so every device pads and clips alike.
#ifndef WEFT_PLUGINS_COMMON_WINDOW2D_H_
#define WEFT_PLUGINS_COMMON_WINDOW2D_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace weft_window {

// Where a 2-D window lands on an NHWC input.  Every field is an int64 so
// that the struct can serve as a byte-compared cache key.
struct Window2D {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  int64_t k_h = 1, k_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0;
  // SAME puts the odd padding element after the data (bottom, right), as
  // TensorFlow does, so results match models trained there.
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

// Output pixel (oy, ox)'s pooling window: where it starts (y0, x0, in
// padded coordinates) and the part of it on the input, [y_lo, y_hi) x
// [x_lo, x_hi).  Padding takes part in neither the maximum nor the
// average; the forward and gradient kernels clip alike.
struct Clip {
  int64_t y0, x0, y_lo, y_hi, x_lo, x_hi;
};

inline Clip ClipWindow(const Window2D& w, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * w.stride_h - w.pad_top;
  const int64_t x0 = ox * w.stride_w - w.pad_left;
  return Clip{y0,
              x0,
              y0 > 0 ? y0 : 0,
              y0 + w.k_h < w.in_h ? y0 + w.k_h : w.in_h,
              x0 > 0 ? x0 : 0,
              x0 + w.k_w < w.in_w ? x0 + w.k_w : w.in_w};
}

// The largest dilated window extent, stride or dilation: the runtime's
// documented limit (runtime/ops/shape_checks.h), checked again here for
// windows whose size only the filter fed at run time tells.
constexpr int64_t kMaxWindowExtent = 2147483647;

namespace nn_detail {

// One axis.  Returns why there is no output size, or nullptr: a dilated
// window wider than kMaxWindowExtent, or a VALID window that misses the
// input by a whole stride or more.  `stride` and `dilation` must be in
// [1, kMaxWindowExtent] and `in` >= 0, so nothing below overflows.
inline const char* WindowAxis(int64_t in, int64_t k, int64_t stride,
                              int64_t dilation, bool same, int64_t* out,
                              int64_t* pad_before, int64_t* pad_after) {
  int64_t reach = 0;  // (k - 1) * dilation, the extent less one
  if (__builtin_mul_overflow(k - 1, dilation, &reach) ||
      reach >= kMaxWindowExtent) {
    return "spans more than 2^31 - 1 (dilations)";
  }
  const int64_t span = reach + 1;
  *pad_before = *pad_after = 0;
  if (same) {
    *out = in / stride + (in % stride != 0);
    int64_t total = (*out - 1) * stride + span - in;
    if (*out == 0 || total < 0) total = 0;
    *pad_before = total / 2;
    *pad_after = total - *pad_before;
    return nullptr;
  }
  const int64_t fit = in - span + 1;
  *out = fit >= 0 ? fit / stride + (fit % stride != 0) : -((-fit) / stride);
  return *out >= 0 ? nullptr : "does not fit the input with VALID padding";
}

}  // namespace nn_detail

// Fills out_h/out_w and the padding from the input, window, strides and
// dilations already in `w`.  Returns why the window has no output size
// (see WindowAxis), or nullptr.
inline const char* ComputeWindow2D(bool same, Window2D* w) {
  const char* why = nn_detail::WindowAxis(w->in_h, w->k_h, w->stride_h,
                                          w->dilation_h, same, &w->out_h,
                                          &w->pad_top, &w->pad_bottom);
  if (why != nullptr) return why;
  return nn_detail::WindowAxis(w->in_w, w->k_w, w->stride_w, w->dilation_w,
                               same, &w->out_w, &w->pad_left, &w->pad_right);
}

// ComputeWindow2D, with the reason a window has no output size written
// as a message into `message` (the same words on every device).  Returns
// whether it has one.
inline bool ComputeWindow2D(bool same, Window2D* w, char* message,
                            size_t size) {
  const char* why = ComputeWindow2D(same, w);
  if (why == nullptr) return true;
  std::snprintf(message, size,
                "a %lldx%lld window (dilations %lld, %lld) over the "
                "%lldx%lld input %s",
                static_cast<long long>(w->k_h), static_cast<long long>(w->k_w),
                static_cast<long long>(w->dilation_h),
                static_cast<long long>(w->dilation_w),
                static_cast<long long>(w->in_h),
                static_cast<long long>(w->in_w), why);
  return false;
}

}  // namespace weft_window

#endif  // WEFT_PLUGINS_COMMON_WINDOW2D_H_
