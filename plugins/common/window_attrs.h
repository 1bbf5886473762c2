// Reading a convolution's or pooling's window from a kernel's attributes
// and inputs, for plugins built on plugin_kit.h's KernelCallBase (OpenCL,
// CUDA): the same checks and messages on every device, over the shared
// geometry of window2d.h.  The runtime validated the attributes when the
// graph was built; a plugin checks them again because it must not trust
// its input to keep its index math in bounds.
#ifndef WEFT_PLUGINS_COMMON_WINDOW_ATTRS_H_
#define WEFT_PLUGINS_COMMON_WINDOW_ATTRS_H_

#include <cstdint>
#include <cstring>

#include "plugin_kit.h"
#include "window2d.h"

namespace weft_plugin_kit {

// A [H, W] pair from the 4-entry NHWC list attribute `name` (N and C must
// be 1 for strides, ksize and dilations).  Absent and optional: 1, 1.
inline weft_status* ReadWindowPair(const KernelCallBase& call,
                                   const char* name, bool required,
                                   int64_t* h, int64_t* w) {
  bool present = false;
  const int64_t* v = nullptr;
  int32_t n = 0;
  if (weft_status* s = call.AttrIntList(name, &present, &v, &n)) return s;
  if (!present) {
    if (required) {
      return call.Error(WEFT_INVALID_ARGUMENT, "attribute %s is missing",
                        name);
    }
    *h = *w = 1;
    return nullptr;
  }
  if (n != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1 ||
      v[1] > weft_window::kMaxWindowExtent ||
      v[2] > weft_window::kMaxWindowExtent) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "attribute %s must be [1, H, W, 1] with H and W in "
                      "[1, 2^31 - 1]",
                      name);
  }
  *h = v[1];
  *w = v[2];
  return nullptr;
}

// Reads strides, padding, data_format and either ksize (pooling) or
// dilations (convolution) into `w`, whose batch, input and (for
// convolution) window sizes the caller set, and computes the output size
// and padding.
inline weft_status* ReadWindowAttrs(const KernelCallBase& call, bool pooling,
                                    weft_window::Window2D* w) {
  if (weft_status* s =
          ReadWindowPair(call, "strides", true, &w->stride_h, &w->stride_w)) {
    return s;
  }
  if (pooling) {
    if (weft_status* s =
            ReadWindowPair(call, "ksize", true, &w->k_h, &w->k_w)) {
      return s;
    }
    w->dilation_h = w->dilation_w = 1;
  } else if (weft_status* s = ReadWindowPair(call, "dilations", false,
                                             &w->dilation_h,
                                             &w->dilation_w)) {
    return s;
  }
  const char* padding = nullptr;
  if (weft_status* s = call.AttrString("padding", &padding)) return s;
  const bool same = padding != nullptr && std::strcmp(padding, "SAME") == 0;
  if (!same && (padding == nullptr || std::strcmp(padding, "VALID") != 0)) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "padding '%s' is not one of \"SAME\", \"VALID\"",
                      padding != nullptr ? padding : "(missing)");
  }
  const char* format = nullptr;
  if (weft_status* s = call.AttrString("data_format", &format)) return s;
  if (format != nullptr && std::strcmp(format, "NHWC") != 0) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "data_format '%s' is not supported; only \"NHWC\" is",
                      format);
  }
  if (w->k_h <= 0 || w->k_w <= 0) {
    return call.Error(WEFT_INVALID_ARGUMENT, "the %lldx%lld window is empty",
                      static_cast<long long>(w->k_h),
                      static_cast<long long>(w->k_w));
  }
  char message[256];
  if (!weft_window::ComputeWindow2D(same, w, message, sizeof message)) {
    return call.Error(WEFT_INVALID_ARGUMENT, "%s", message);
  }
  return nullptr;
}

// A window over an NHWC tensor of `dims` (window and strides still to set).
inline weft_window::Window2D NhwcWindow(const int64_t dims[4]) {
  weft_window::Window2D w;
  w.batch = dims[0];
  w.in_h = dims[1];
  w.in_w = dims[2];
  w.channels = dims[3];
  return w;
}

// A required [N, H, W, C] sizes attribute (input_sizes, filter_sizes), -1
// entries replaced by `fallback`.
inline weft_status* ReadSizes(const KernelCallBase& call, const char* name,
                              const int64_t fallback[4], int64_t sizes[4]) {
  bool present = false;
  const int64_t* v = nullptr;
  int32_t n = 0;
  if (weft_status* s = call.AttrIntList(name, &present, &v, &n)) return s;
  if (!present || n != 4) {
    return call.Error(WEFT_INVALID_ARGUMENT, "attribute %s must be 4 sizes",
                      name);
  }
  for (int i = 0; i < 4; ++i) {
    sizes[i] = v[i] < 0 ? fallback[i] : v[i];
    if (sizes[i] < 0) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "attribute %s has no size for dim %d", name, i);
    }
  }
  return nullptr;
}

// Whether `dy` has the window's output shape (`channels` deep); the error
// otherwise.
inline weft_status* CheckOutputGrad(const KernelCallBase& call,
                                    const weft_window::Window2D& w,
                                    int64_t channels,
                                    const weft_kernel_tensor& dy) {
  if (dy.rank == 4 && dy.dims[0] == w.batch && dy.dims[1] == w.out_h &&
      dy.dims[2] == w.out_w && dy.dims[3] == channels) {
    return nullptr;
  }
  return call.Error(WEFT_INVALID_ARGUMENT,
                    "the output gradient (rank %d) is not [%lld, %lld, %lld, "
                    "%lld], the forward op's output shape",
                    dy.rank, static_cast<long long>(w.batch),
                    static_cast<long long>(w.out_h),
                    static_cast<long long>(w.out_w),
                    static_cast<long long>(channels));
}

// BatchNormWithGlobalNormalization's inputs (t, m, v, beta, gamma),
// channels last, and its attributes; the caller checks t's dtype first.
inline weft_status* ReadBatchNormArgs(const KernelCallBase& call,
                                      weft_kernel_tensor in[5], double* eps,
                                      bool* scale) {
  static const char* const kNames[] = {"t", "m", "v", "beta", "gamma"};
  const weft_kernel_tensor& t = in[0];
  if (t.rank < 1) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "t must have rank >= 1 (channels last), got a scalar");
  }
  const int64_t channels = t.dims[t.rank - 1];
  for (int i = 1; i < 5; ++i) {
    if (in[i].dtype != t.dtype || in[i].rank != 1 ||
        in[i].dims[0] != channels) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "%s must be [%lld] of %s, one per channel", kNames[i],
                        static_cast<long long>(channels),
                        weft_dtype_name_of(t.dtype));
    }
  }
  *eps = 0;
  if (weft_status* s = call.host()->kernel_attr_float(
          call.context(), "variance_epsilon", eps)) {
    return s;
  }
  return call.AttrBool("scale_after_normalization", false, scale);
}

// "<what> must have rank 4, got rank R".
inline weft_status* CheckRank4(const KernelCallBase& call, const char* what,
                               const weft_kernel_tensor& t) {
  if (t.rank == 4) return nullptr;
  return call.Error(WEFT_INVALID_ARGUMENT, "%s must have rank 4, got rank %d",
                    what, t.rank);
}

// The window-index ops hold a position in a window as uint8: at most 256
// elements.
inline weft_status* CheckWindowIndexFits(const KernelCallBase& call,
                                         const weft_window::Window2D& w) {
  if (w.k_h * w.k_w <= 256) return nullptr;
  return call.Error(WEFT_INVALID_ARGUMENT,
                    "a window of %lld x %lld elements has positions a uint8 "
                    "cannot hold (at most 256 elements)",
                    static_cast<long long>(w.k_h),
                    static_cast<long long>(w.k_w));
}

// Conv2D's window over NHWC `in` with HWIO `filter` (both rank 4, one
// dtype), checking their channels agree and, for FusedConv2D, that `bias`
// is [Cout] of their dtype.
inline weft_status* ConvWindow(const KernelCallBase& call,
                               const weft_kernel_tensor& in,
                               const weft_kernel_tensor& filter,
                               const weft_kernel_tensor* bias,
                               weft_window::Window2D* w) {
  if (filter.dims[2] != in.dims[3]) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "input has %lld channels but the filter expects %lld",
                      static_cast<long long>(in.dims[3]),
                      static_cast<long long>(filter.dims[2]));
  }
  const int64_t out_channels = filter.dims[3];
  if (bias != nullptr && (bias->dtype != in.dtype || bias->rank != 1 ||
                          bias->dims[0] != out_channels)) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "bias must be [%lld] of %s, one per output channel",
                      static_cast<long long>(out_channels),
                      weft_dtype_name_of(in.dtype));
  }
  *w = NhwcWindow(in.dims);
  w->k_h = filter.dims[0];
  w->k_w = filter.dims[1];
  return ReadWindowAttrs(call, false, w);
}

// Conv2DBackpropInput's window: over input_sizes (-1 entries from the
// operands) into `sizes`, the filter's channels agreeing, `dy` of the
// forward output's shape.
inline weft_status* ConvBackpropInputWindow(const KernelCallBase& call,
                                            const weft_kernel_tensor& filter,
                                            const weft_kernel_tensor& dy,
                                            int64_t sizes[4],
                                            weft_window::Window2D* w) {
  const int64_t fallback[4] = {dy.dims[0], -1, -1, filter.dims[2]};
  if (weft_status* s = ReadSizes(call, "input_sizes", fallback, sizes)) {
    return s;
  }
  *w = NhwcWindow(sizes);
  w->k_h = filter.dims[0];
  w->k_w = filter.dims[1];
  if (weft_status* s = ReadWindowAttrs(call, false, w)) return s;
  if (w->channels != filter.dims[2]) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "input_sizes has %lld channels, the filter %lld",
                      static_cast<long long>(w->channels),
                      static_cast<long long>(filter.dims[2]));
  }
  return CheckOutputGrad(call, *w, filter.dims[3], dy);
}

// Conv2DBackpropFilter's window: filter_sizes (-1 entries from the
// operands) into `sizes`, the input's channels agreeing, `dy` of the
// forward output's shape.
inline weft_status* ConvBackpropFilterWindow(const KernelCallBase& call,
                                             const weft_kernel_tensor& in,
                                             const weft_kernel_tensor& dy,
                                             int64_t sizes[4],
                                             weft_window::Window2D* w) {
  const int64_t fallback[4] = {-1, -1, in.dims[3], dy.dims[3]};
  if (weft_status* s = ReadSizes(call, "filter_sizes", fallback, sizes)) {
    return s;
  }
  *w = NhwcWindow(in.dims);
  w->k_h = sizes[0];
  w->k_w = sizes[1];
  if (weft_status* s = ReadWindowAttrs(call, false, w)) return s;
  if (sizes[2] != in.dims[3]) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "filter_sizes has %lld input channels, the input %lld",
                      static_cast<long long>(sizes[2]),
                      static_cast<long long>(in.dims[3]));
  }
  return CheckOutputGrad(call, *w, sizes[3], dy);
}

// A pooling gradient's window: over input_sizes (-1 entries from the
// gradient `dy`) when `sizes_from_attr`, else over the `sizes` given; the
// gradient must have the window's output shape.
inline weft_status* PoolGradWindow(const KernelCallBase& call,
                                   const weft_kernel_tensor& dy,
                                   bool sizes_from_attr, int64_t sizes[4],
                                   weft_window::Window2D* w) {
  if (sizes_from_attr) {
    const int64_t fallback[4] = {dy.dims[0], -1, -1, dy.dims[3]};
    if (weft_status* s = ReadSizes(call, "input_sizes", fallback, sizes)) {
      return s;
    }
  }
  *w = NhwcWindow(sizes);
  if (weft_status* s = ReadWindowAttrs(call, true, w)) return s;
  return CheckOutputGrad(call, *w, w->channels, dy);
}

}  // namespace weft_plugin_kit

#endif  // WEFT_PLUGINS_COMMON_WINDOW_ATTRS_H_
