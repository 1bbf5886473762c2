// The shapes of the views that move no bytes (Reshape, ExpandDims,
// Squeeze, ReshapeLike): each computes its output's dims from x (input 0)
// and the attributes, with the CPU plugin's checks and words, for the
// device plugins built on plugin_kit.h (OpenCL, CUDA), which then hand x's
// buffer on with them (kernel_forward_input).
#ifndef WEFT_PLUGINS_COMMON_VIEW_DIMS_H_
#define WEFT_PLUGINS_COMMON_VIEW_DIMS_H_

#include <cstdint>

#include "plugin_kit.h"
#include "weft/tensor.h"  // WEFT_MAX_RANK

namespace weft_plugin_kit {

// Axis `value` of a rank-`rank` shape, negative counting from the end.
inline weft_status* ViewAxis(const KernelCallBase& call, const char* name,
                             int64_t value, int32_t rank, int32_t* out) {
  const int64_t axis = value < 0 ? value + rank : value;
  if (axis < 0 || axis >= rank) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "%s = %lld is out of range for rank %d", name,
                      static_cast<long long>(value), rank);
  }
  *out = static_cast<int32_t>(axis);
  return nullptr;
}

// Each view computes its output's dims from x (input 0); ViewKernel hands
// x's buffer on with them.
using ViewDims = weft_status* (*)(const KernelCallBase& call,
                                  const weft_kernel_tensor& x, int64_t* dims,
                                  int32_t* rank);

// The shape attribute, its -1 resolved against x's element count.
inline weft_status* ReshapeDims(const KernelCallBase& call,
                                const weft_kernel_tensor& x, int64_t* dims,
                                int32_t* out_rank) {
  bool present = false;
  const int64_t* shape = nullptr;
  int32_t rank = 0;
  if (weft_status* s = call.AttrIntList("shape", &present, &shape, &rank)) {
    return s;
  }
  if (!present || rank > WEFT_MAX_RANK) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "attribute shape is missing or longer than %d",
                      WEFT_MAX_RANK);
  }
  int32_t inferred = -1;
  int64_t known = 1;
  for (int32_t i = 0; i < rank; ++i) {
    dims[i] = shape[i];
    if (shape[i] == -1 && inferred < 0) {
      inferred = i;
    } else if (shape[i] < 0 ||
               __builtin_mul_overflow(known, shape[i], &known)) {
      known = -1;
      break;
    }
  }
  const int64_t n = x.element_count;
  const bool ok =
      known >= 0 && (inferred < 0 ? known == n : known > 0 && n % known == 0);
  if (!ok) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "cannot reshape %lld elements into a shape of rank "
                      "%d",
                      static_cast<long long>(n), rank);
  }
  if (inferred >= 0) dims[inferred] = n / known;
  *out_rank = rank;
  return nullptr;
}

inline weft_status* ExpandDimsDims(const KernelCallBase& call,
                                   const weft_kernel_tensor& x, int64_t* dims,
                                   int32_t* rank) {
  if (x.rank >= WEFT_MAX_RANK) {
    return call.Error(WEFT_INVALID_ARGUMENT, "the output's rank exceeds %d",
                      WEFT_MAX_RANK);
  }
  int64_t value = 0;
  int32_t axis = 0;
  if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
  if (weft_status* s = ViewAxis(call, "axis", value, x.rank + 1, &axis)) {
    return s;
  }
  for (int32_t i = 0, j = 0; i <= x.rank; ++i) {
    dims[i] = i == axis ? 1 : x.dims[j++];
  }
  *rank = x.rank + 1;
  return nullptr;
}

// squeeze_dims absent: every size-1 axis goes.
inline weft_status* SqueezeDims(const KernelCallBase& call,
                                const weft_kernel_tensor& x, int64_t* dims,
                                int32_t* rank) {
  bool present = false;
  const int64_t* listed = nullptr;
  int32_t count = 0;
  if (weft_status* s =
          call.AttrIntList("squeeze_dims", &present, &listed, &count)) {
    return s;
  }
  bool drop[WEFT_MAX_RANK] = {};
  for (int32_t i = 0; !present && i < x.rank; ++i) drop[i] = x.dims[i] == 1;
  for (int32_t i = 0; i < count; ++i) {
    int32_t axis = 0;
    if (weft_status* s =
            ViewAxis(call, "squeeze_dims", listed[i], x.rank, &axis)) {
      return s;
    }
    if (x.dims[axis] != 1) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "cannot squeeze dimension %d: its size is %lld, "
                        "not 1",
                        axis, static_cast<long long>(x.dims[axis]));
    }
    drop[axis] = true;
  }
  *rank = 0;
  for (int32_t i = 0; i < x.rank; ++i) {
    if (!drop[i]) dims[(*rank)++] = x.dims[i];
  }
  return nullptr;
}

// x with like's run-time shape.
inline weft_status* ReshapeLikeDims(const KernelCallBase& call,
                                    const weft_kernel_tensor& x, int64_t* dims,
                                    int32_t* rank) {
  weft_kernel_tensor like;
  if (weft_status* s = call.Input(1, &like)) return s;
  if (x.element_count != like.element_count) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "x has %lld elements and like %lld; they must match",
                      static_cast<long long>(x.element_count),
                      static_cast<long long>(like.element_count));
  }
  for (int32_t i = 0; i < like.rank; ++i) dims[i] = like.dims[i];
  *rank = like.rank;
  return nullptr;
}

}  // namespace weft_plugin_kit

#endif  // WEFT_PLUGINS_COMMON_VIEW_DIMS_H_
