// The limits static shapes and window attributes must respect, and the
// checked arithmetic every shape function uses to stay inside them.  A
// hostile attribute (a stride of INT64_MAX, a shape of [2^62, 2^62]) must be
// refused here with a message naming the node, op and attribute: it must
// neither overflow int64 (undefined behaviour) nor reach a kernel, where a
// library such as oneDNN would refuse it with its own words, or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/registry.h"

namespace weft {

// The most elements a statically known shape may describe: 2^48, far above
// any memory (256 TiB of bytes), and low enough that byte sizes and the
// index arithmetic of kernels (count times a stride, an element size or a
// window extent) stay far from int64 overflow.  Dims that are unknown (-1)
// are left out of the count; a shape with a 0 dim holds nothing.
constexpr int64_t kMaxStaticElements = int64_t{1} << 48;

// The largest window, stride, dilation, and dilated window extent
// ((k - 1) * dilation + 1) a convolution or pooling attribute may give:
// 2^31 - 1, what oneDNN and cuDNN take.
constexpr int64_t kMaxWindowExtent = INT32_MAX;

// a * b and a + b, false instead of overflowing.
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// The element count of the known dims of `dims` into *out, refused (naming
// `what`, "attribute shape = [..]" or "output 0 [..]") above
// kMaxStaticElements.
weft_status* CheckedCount(const InferenceContext& c,
                          const std::vector<int64_t>& dims, const char* what,
                          int64_t* out);

// Every output shape of a node within kMaxStaticElements (run on each node
// after its shape function).
weft_status* CheckOutputCounts(const InferenceContext& c);

// Window attributes (strides, dilations, ksize): [1, h, w, 1] in NHWC, h and
// w in [1, kMaxWindowExtent].  Batch and channel entries other than 1 would
// slide the window across images or channels, which no kernel implements.
weft_status* ReadWindowAttr(const InferenceContext& c, const char* name,
                            int64_t* h, int64_t* w);

// The window-index ops (MaxPoolWithWindowIndex and its gradients) hold a
// position in a ksize window as uint8: at most 256 elements.
weft_status* CheckWindowIndexFits(const InferenceContext& c);

// TensorFlow's output size along one spatial axis, -1 when `in` is unknown:
// SAME covers every input position, ceil(in / stride); VALID keeps windows
// inside the input, ceil((in - extent + 1) / stride), with the dilated
// extent (window - 1) * dilation + 1 at most kMaxWindowExtent (else refused,
// naming `dilation_attr`).  `axis` ("height") names the axis in messages.
weft_status* WindowedSize(const InferenceContext& c, const char* axis,
                          const char* dilation_attr, int64_t in,
                          int64_t window, int64_t dilation, int64_t stride,
                          bool same, int64_t* out);

// Matrix products (MatMul, BatchMatMul, MatMulApplyGradientDescent): the
// [rows, cols] of the matrix a shape of rank >= 2 ends with, swapped when
// `transposed`, -1 where unknown; and the check that the inner dimensions
// agree, `a` and `b` naming the operands as used ("a", "b transposed").
void MatrixDims(const ShapeInfo& s, bool transposed, int64_t* rows,
                int64_t* cols);
weft_status* CheckInnerDims(const InferenceContext& c, const std::string& a,
                            const ShapeInfo& as, int64_t ka,
                            const std::string& b, const ShapeInfo& bs,
                            int64_t kb);

}  // namespace weft
