// Convolution, pooling, bias, losses and batch normalisation: the family's
// registration and the window attributes convolution and pooling share.
#include <cstring>

#include "kernel.h"
#include "nn_common.h"
#include "nn_kernels.h"

namespace weft_cpu {
namespace {

// A [1, h, w, 1] list attribute with h and w in [1, kMaxWindowExtent].
weft_status* ReadHw(const weft_kernel_context* ctx, const char* name,
                    bool required, int64_t* h, int64_t* w) {
  const int64_t* v = nullptr;
  int32_t n = 0;
  bool present = false;
  if (weft_status* s = OptionalIntListAttr(ctx, name, &v, &n, &present)) {
    return s;
  }
  if (!present) {
    if (required) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "missing attribute '%s'", name);
    }
    *h = *w = 1;
    return nullptr;
  }
  const auto fits = [](int64_t x) { return x > 0 && x <= kMaxWindowExtent; };
  if (n != 4 || v[0] != 1 || v[3] != 1 || !fits(v[1]) || !fits(v[2])) {
    char buf[96];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "attribute %s must be [1, h, w, 1] with h and w in "
                     "[1, 2^31 - 1], got %s",
                     name, FormatShape(v, n, buf, sizeof buf));
  }
  *h = v[1];
  *w = v[2];
  return nullptr;
}

}  // namespace

weft_status* CheckNhwcInput(const weft_kernel_context* ctx, const char* what,
                            const Tensor& t) {
  if (t.rank == 4) return nullptr;
  char buf[96];
  return NodeError(ctx, WEFT_INVALID_ARGUMENT, "%s must have rank 4, got %s",
                   what, FormatShape(t.dims, t.rank, buf, sizeof buf));
}

weft_status* ReadWindowAttrs(const weft_kernel_context* ctx, bool pooling,
                             Window2D* w) {
  if (weft_status* s =
          ReadHw(ctx, "strides", true, &w->stride_h, &w->stride_w)) {
    return s;
  }
  if (pooling) {
    if (weft_status* s = ReadHw(ctx, "ksize", true, &w->k_h, &w->k_w)) {
      return s;
    }
    w->dilation_h = w->dilation_w = 1;
  } else if (weft_status* s = ReadHw(ctx, "dilations", false, &w->dilation_h,
                                     &w->dilation_w)) {
    return s;
  }
  const char* padding = nullptr;
  if (weft_status* s = g_host->kernel_attr_string(ctx, "padding", &padding)) {
    return s;
  }
  const bool same = std::strcmp(padding, "SAME") == 0;
  if (!same && std::strcmp(padding, "VALID") != 0) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "padding '%s' is not one of \"SAME\", \"VALID\"",
                     padding);
  }
  const char* format = nullptr;
  weft_status* s = g_host->kernel_attr_string(ctx, "data_format", &format);
  if (s != nullptr && StatusCode(s) != WEFT_NOT_FOUND) return s;
  DiscardStatus(s);
  if (format != nullptr && std::strcmp(format, "NHWC") != 0) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "data_format '%s' is not supported; only \"NHWC\" is",
                     format);
  }
  if (w->k_h <= 0 || w->k_w <= 0) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "the %lldx%lld window is empty",
                     static_cast<long long>(w->k_h),
                     static_cast<long long>(w->k_w));
  }
  char message[256];
  if (!ComputeWindow2D(same, w, message, sizeof message)) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT, "%s", message);
  }
  return nullptr;
}

weft_status* RegisterNnKernels(const Registrar& registrar) {
  using RegisterFn = weft_status* (*)(const Registrar&);
  static constexpr RegisterFn kParts[] = {
      RegisterChannelKernels, RegisterXentKernels, RegisterConvKernels,
      RegisterPoolKernels};
  for (RegisterFn part : kParts) {
    if (weft_status* s = part(registrar)) return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
