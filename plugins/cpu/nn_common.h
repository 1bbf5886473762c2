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
#include <cstdlib>
#include <cstring>
#include <new>

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
