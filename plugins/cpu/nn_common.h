// Sliding-window geometry (TensorFlow's NHWC rules) and per-thread scratch
// memory, shared by the convolution and pooling kernels.
//
// Header-only and free of Weft types so that bench/ can set up the same
// geometry when it calls the oneDNN path (onednn_nn.h) directly.
#ifndef WEFT_PLUGINS_CPU_NN_COMMON_H_
#define WEFT_PLUGINS_CPU_NN_COMMON_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace weft_cpu {

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
constexpr int64_t kMaxWindowExtent = INT32_MAX;

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

// Temporary memory for one kernel call, 64-byte aligned.  Requests up to
// kKeepBytes reuse a buffer owned by the calling thread, so a steady-state
// run allocates nothing; larger ones are allocated and freed with the
// Scratch so that one huge layer does not pin its memory in every executor
// thread forever.  One Scratch per thread at a time: a second one would
// reuse the same buffer.
class Scratch {
 public:
  static constexpr size_t kKeepBytes = size_t{32} << 20;

  explicit Scratch(size_t bytes) {
    if (bytes == 0) return;
    const size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded > kKeepBytes) {
      data_ = std::aligned_alloc(64, rounded);
      if (data_ == nullptr) throw std::bad_alloc();
      owned_ = true;
      return;
    }
    Buffer& b = ThreadBuffer();
    if (b.size < rounded) {
      void* grown = std::aligned_alloc(64, rounded);
      if (grown == nullptr) throw std::bad_alloc();
      std::free(b.data);
      b.data = grown;
      b.size = rounded;
    }
    data_ = b.data;
  }
  ~Scratch() {
    if (owned_) std::free(data_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  static Buffer& ThreadBuffer() {
    static thread_local Buffer buffer;
    return buffer;
  }

  void* data_ = nullptr;
  bool owned_ = false;
};

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_NN_COMMON_H_
