// Limits of static shapes and windows, and the checks that keep shape
// arithmetic inside them.
#include "ops/shape_checks.h"

#include <string>
#include <utility>

#include "base/status.h"
#include "tensor/dims.h"

namespace weft {
namespace {

std::string ListString(const std::vector<int64_t>& v) {
  return ShapeString(v.data(), static_cast<int32_t>(v.size()));
}

}  // namespace

weft_status* CheckedCount(const InferenceContext& c,
                          const std::vector<int64_t>& dims, const char* what,
                          int64_t* out) {
  // The product of the non-zero dims must fit even when a 0 dim empties
  // the shape: kernels and shape functions take partial products (outer
  // and inner sizes around an axis), and [2^63 - 1, 3, 0] would overflow
  // there though it holds nothing.
  bool empty = false;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) continue;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (!CheckedMul(n, d, &n))
      return c.Fail("%s %s: the product of its dimensions overflows int64, "
                    "far past the 2^48 elements a static shape may hold",
                    what, ListString(dims).c_str());
  }
  if (empty) {
    *out = 0;
    return nullptr;
  }
  if (n > kMaxStaticElements)
    return c.Fail("%s %s has more than 2^48 elements, the most a static "
                  "shape may hold", what, ListString(dims).c_str());
  *out = n;
  return nullptr;
}

weft_status* CheckOutputCounts(const InferenceContext& c) {
  for (size_t i = 0; i < c.output_shapes.size(); ++i) {
    const ShapeInfo& s = c.output_shapes[i];
    if (!s.known_rank()) continue;
    const std::string what = "output " + std::to_string(i) + " shape";
    int64_t n = 0;
    WEFT_RETURN_IF_ERROR(CheckedCount(c, s.dims, what.c_str(), &n));
  }
  return nullptr;
}

weft_status* ReadWindowAttr(const InferenceContext& c, const char* name,
                            int64_t* h, int64_t* w) {
  const std::vector<int64_t>& v = c.attr(name)->ints;
  auto fits = [](int64_t x) { return x > 0 && x <= kMaxWindowExtent; };
  bool ok = v.size() == 4 && v[0] == 1 && v[3] == 1 && fits(v[1]) &&
            fits(v[2]);
  if (!ok)
    return c.Fail("attribute %s must be [1, h, w, 1] (NHWC) with h and w "
                  "in [1, 2^31 - 1], got %s", name, ListString(v).c_str());
  *h = v[1];
  *w = v[2];
  return nullptr;
}

weft_status* WindowedSize(const InferenceContext& c, const char* axis,
                          const char* dilation_attr, int64_t in,
                          int64_t window, int64_t dilation, int64_t stride,
                          bool same, int64_t* out) {
  // Both factors are at most 2^31 - 1 (ReadWindowAttr, and a window from a
  // static shape at most 2^48), so the product cannot overflow.
  int64_t extent = 0;
  if (window > 0 &&
      (!CheckedMul(window - 1, dilation, &extent) ||
       extent >= kMaxWindowExtent))
    return c.Fail("the %s window of %lld dilated by %s %lld spans more than "
                  "2^31 - 1", axis, static_cast<long long>(window),
                  dilation_attr, static_cast<long long>(dilation));
  ++extent;
  if (in < 0) {
    *out = -1;
    return nullptr;
  }
  if (same) {
    // ceil(in / stride) without forming in + stride - 1.
    *out = in / stride + (in % stride != 0);
    return nullptr;
  }
  const int64_t fit = in - extent + 1;
  // Ceiling division that rounds toward +inf for negative `fit` too; a
  // window short by less than one stride gives an empty output, as in
  // TensorFlow.
  *out = fit >= 0 ? fit / stride + (fit % stride != 0) : -((-fit) / stride);
  if (*out < 0)
    return c.Fail("with VALID padding the %s window (%lld, dilated) does "
                  "not fit the input %s %lld", axis,
                  static_cast<long long>(extent), axis,
                  static_cast<long long>(in));
  return nullptr;
}

weft_status* CheckWindowIndexFits(const InferenceContext& c) {
  int64_t kh = 0, kw = 0;
  WEFT_RETURN_IF_ERROR(ReadWindowAttr(c, "ksize", &kh, &kw));
  if (kh * kw <= 256) return nullptr;
  return c.Fail("a window of %lld x %lld elements has positions a uint8 "
                "cannot hold (at most 256 elements)",
                static_cast<long long>(kh), static_cast<long long>(kw));
}

void MatrixDims(const ShapeInfo& s, bool transposed, int64_t* rows,
                int64_t* cols) {
  *rows = *cols = -1;
  if (!s.known_rank()) return;
  *rows = s.dims[s.rank - 2];
  *cols = s.dims[s.rank - 1];
  if (transposed) std::swap(*rows, *cols);
}

weft_status* CheckInnerDims(const InferenceContext& c, const std::string& a,
                            const ShapeInfo& as, int64_t ka,
                            const std::string& b, const ShapeInfo& bs,
                            int64_t kb) {
  if (ka < 0 || kb < 0 || ka == kb) return nullptr;
  return c.Fail("inner dimensions differ: %s is %s, %s is %s (K = %lld vs "
                "%lld)", a.c_str(), as.ToString().c_str(), b.c_str(),
                bs.ToString().c_str(), static_cast<long long>(ka),
                static_cast<long long>(kb));
}

}  // namespace weft
