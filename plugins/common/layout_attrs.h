// The argument checks of the kernels that move elements (Transpose, Slice,
// Tile, Pad, Concat, Pack, Split, Unpack, Gather, OneHot, SliceGrad,
// PadGrad, GatherGrad, Rank, Shape, Size), for plugins built on plugin_kit.h's KernelCallBase (OpenCL,
// CUDA): each reads its attributes, checks them against the inputs with
// the CPU plugin's messages and gives the output's shape, so every device
// refuses the same arguments alike and moves elements only within bounds.
#ifndef WEFT_PLUGINS_COMMON_LAYOUT_ATTRS_H_
#define WEFT_PLUGINS_COMMON_LAYOUT_ATTRS_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "plugin_kit.h"

namespace weft_plugin_kit {

// "[2,3,4]", as the CPU plugin's messages show shapes.
inline const char* FormatShape(const int64_t* dims, int32_t rank, char* out,
                               size_t size) {
  size_t used = 0;
  for (int32_t i = 0; i <= rank && used < size; ++i) {
    const char* format = i == rank ? (i == 0 ? "[]" : "]")
                         : i == 0  ? "[%lld"
                                   : ",%lld";
    const int n = std::snprintf(out + used, size - used, format,
                                static_cast<long long>(i < rank ? dims[i]
                                                                : 0));
    used += n > 0 ? static_cast<size_t>(n) : 0;
  }
  return out;
}

// Normalises attribute `name` = `value` against `count` axes (the rank, or
// rank + 1 where an axis is inserted); negative values count from the end.
inline weft_status* NormalizeAxis(const KernelCallBase& call,
                                  const char* name, int64_t value,
                                  int32_t count, int64_t* out) {
  const int64_t axis = value < 0 ? value + count : value;
  if (axis < 0 || axis >= count) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "attribute %s = %lld is out of range [%d, %d)", name,
                      static_cast<long long>(value), -count, count);
  }
  *out = axis;
  return nullptr;
}

// An int-list attribute that must have `want` entries.
inline weft_status* ListAttr(const KernelCallBase& call, const char* name,
                             int32_t want, const int64_t** values) {
  bool present = false;
  int32_t count = 0;
  if (weft_status* s = call.AttrIntList(name, &present, values, &count)) {
    return s;
  }
  if (count != want) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "attribute %s has %d entries; the input needs %d", name,
                      count, want);
  }
  return nullptr;
}

// ---- Attribute values as elements (Pad, OneHot) ----

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// float16 nearest, ties to even (what Eigen::half(float) gives the CPU);
// NaN becomes a quiet NaN of the same sign.
inline uint16_t HalfBits(float value) {
  uint32_t u = FloatBits(value);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t h;
  if (u >= 0x47800000u) {  // 65536 and up: infinity, or NaN
    h = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (u < 0x38800000u) {  // below 2^-14: subnormal or zero
    // Adding 0.5 lines the subnormal's bits up at the bottom of the float's
    // mantissa, rounded by the float addition itself.
    float f;
    std::memcpy(&f, &u, sizeof f);
    h = FloatBits(f + 0.5f) - FloatBits(0.5f);
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    h = (u - 0x38000000u + 0xfffu + odd) >> 13;
  }
  return static_cast<uint16_t>(h | (sign >> 16));
}

// bfloat16 nearest, ties to even, as Eigen::bfloat16(float).
inline uint16_t BFloat16Bits(float value) {
  const uint32_t u = FloatBits(value);
  if (std::isnan(value)) return (u & 0x80000000u) != 0 ? 0xffc0 : 0x7fc0;
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// An integer of type I holding v truncated, 0 when v is outside I (the CPU
// plugin's ToInteger).
template <typename I>
uint64_t IntegerBits(double v) {
  const double end = std::ldexp(1.0, std::numeric_limits<I>::digits);
  const double begin = std::is_signed<I>::value ? -end : 0.0;
  const I i = v >= begin && v < end ? static_cast<I>(v) : I(0);
  uint64_t bits = 0;
  std::memcpy(&bits, &i, sizeof i);
  return bits;
}

// The bits of `v` as one element of `dtype` in the low bytes of *bits (the
// devices are little-endian); false for a dtype without values here.
inline bool EncodeElement(double v, int32_t dtype, uint64_t* bits) {
  switch (dtype) {
    case WEFT_FLOAT32: *bits = FloatBits(static_cast<float>(v)); return true;
    case WEFT_FLOAT64: std::memcpy(bits, &v, sizeof v); return true;
    case WEFT_FLOAT16: *bits = HalfBits(static_cast<float>(v)); return true;
    case WEFT_BFLOAT16:
      *bits = BFloat16Bits(static_cast<float>(v));
      return true;
    case WEFT_BOOL: *bits = v != 0; return true;
    case WEFT_INT8: *bits = IntegerBits<int8_t>(v); return true;
    case WEFT_INT16: *bits = IntegerBits<int16_t>(v); return true;
    case WEFT_INT32: *bits = IntegerBits<int32_t>(v); return true;
    case WEFT_INT64: *bits = IntegerBits<int64_t>(v); return true;
    case WEFT_UINT8: *bits = IntegerBits<uint8_t>(v); return true;
    case WEFT_UINT16: *bits = IntegerBits<uint16_t>(v); return true;
    case WEFT_UINT32: *bits = IntegerBits<uint32_t>(v); return true;
    case WEFT_UINT64: *bits = IntegerBits<uint64_t>(v); return true;
    default: return false;
  }
}

// ---- Each op's arguments ----

// Transpose: `perm` normalised into axes (an entry may count from the end,
// as on the CPU) and z's dims.
inline weft_status* TransposeArgs(const KernelCallBase& call,
                                  const weft_kernel_tensor& x, int64_t* axes,
                                  int64_t* dims) {
  bool present = false;
  const int64_t* perm = nullptr;
  int32_t n = 0;
  if (weft_status* s = call.AttrIntList("perm", &present, &perm, &n)) {
    return s;
  }
  bool ok = present && n == x.rank;
  bool seen[WEFT_MAX_RANK] = {};
  for (int32_t i = 0; ok && i < n; ++i) {
    axes[i] = perm[i] < 0 ? perm[i] + n : perm[i];
    ok = axes[i] >= 0 && axes[i] < n && !seen[axes[i]];
    if (ok) seen[axes[i]] = true;
  }
  if (!ok) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "perm (%d values) is not a permutation of the %d "
                      "axes of x",
                      n, x.rank);
  }
  for (int32_t i = 0; i < n; ++i) dims[i] = x.dims[axes[i]];
  return nullptr;
}

// Slice: `begin` and the box's dims; *whole when the box is all of x.
inline weft_status* SliceArgs(const KernelCallBase& call,
                              const weft_kernel_tensor& x,
                              const int64_t** begin, int64_t* box,
                              bool* whole) {
  const int64_t* size = nullptr;
  if (weft_status* s = ListAttr(call, "begin", x.rank, begin)) return s;
  if (weft_status* s = ListAttr(call, "size", x.rank, &size)) return s;
  *whole = true;
  for (int32_t i = 0; i < x.rank; ++i) {
    const int64_t d = x.dims[i], b = (*begin)[i];
    if (b < 0 || b > d || size[i] < -1 ||
        (size[i] >= 0 && size[i] > d - b)) {
      char shape[256];
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "begin %lld, size %lld is out of bounds for "
                        "dimension %d of %s",
                        static_cast<long long>(b),
                        static_cast<long long>(size[i]), i,
                        FormatShape(x.dims, x.rank, shape, sizeof shape));
    }
    box[i] = size[i] < 0 ? d - b : size[i];
    *whole &= box[i] == d;
  }
  return nullptr;
}

// Tile: `multiples` and z's dims.
inline weft_status* TileArgs(const KernelCallBase& call,
                             const weft_kernel_tensor& x,
                             const int64_t** multiples, int64_t* dims) {
  if (weft_status* s = ListAttr(call, "multiples", x.rank, multiples)) {
    return s;
  }
  for (int32_t i = 0; i < x.rank; ++i) {
    const int64_t m = (*multiples)[i];
    if (m < 0 || __builtin_mul_overflow(x.dims[i], m, &dims[i])) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "multiples[%d] = %lld is invalid for dimension %lld",
                        i, static_cast<long long>(m),
                        static_cast<long long>(x.dims[i]));
    }
  }
  return nullptr;
}

// Pad: where x starts in z along each dim, z's dims and constant_value
// (EncodeElement makes it an element of x's dtype).
inline weft_status* PadArgs(const KernelCallBase& call,
                            const weft_kernel_tensor& x, int64_t* begin,
                            int64_t* dims, double* constant) {
  const int64_t* paddings = nullptr;
  if (weft_status* s = ListAttr(call, "paddings", 2 * x.rank, &paddings)) {
    return s;
  }
  if (weft_status* s = call.host()->kernel_attr_float(
          call.context(), "constant_value", constant)) {
    return s;
  }
  for (int32_t i = 0; i < x.rank; ++i) {
    const int64_t before = paddings[2 * i], after = paddings[2 * i + 1];
    if (before < 0 || after < 0 ||
        __builtin_add_overflow(x.dims[i], before, &dims[i]) ||
        __builtin_add_overflow(dims[i], after, &dims[i])) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "paddings for dimension %d are invalid", i);
    }
    begin[i] = before;
  }
  return nullptr;
}

// Concat of the node's inputs (`first` is input 0): the axis and z's dims.
inline weft_status* ConcatArgs(const KernelCallBase& call,
                               const weft_kernel_tensor& first,
                               int64_t* axis, int64_t* dims) {
  const int32_t count = call.host()->kernel_num_inputs(call.context());
  if (first.rank == 0) {
    return call.Error(WEFT_INVALID_ARGUMENT, "cannot concatenate scalars");
  }
  int64_t value = 0;
  if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
  if (weft_status* s = NormalizeAxis(call, "axis", value, first.rank, axis)) {
    return s;
  }
  for (int32_t i = 0; i < first.rank; ++i) dims[i] = first.dims[i];
  dims[*axis] = 0;
  for (int32_t k = 0; k < count; ++k) {
    weft_kernel_tensor v;
    if (weft_status* s = call.Input(k, &v)) return s;
    bool ok = v.dtype == first.dtype && v.rank == first.rank;
    for (int32_t i = 0; ok && i < v.rank; ++i) {
      ok = i == *axis || v.dims[i] == first.dims[i];
    }
    if (!ok) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "input %d does not match input 0 in dtype, rank or "
                        "the dims off axis %lld",
                        k, static_cast<long long>(*axis));
    }
    dims[*axis] += v.dims[*axis];
  }
  return nullptr;
}

// Pack of the node's inputs (`first` is input 0): the new axis and z's
// dims (rank first.rank + 1).
inline weft_status* PackArgs(const KernelCallBase& call,
                             const weft_kernel_tensor& first, int64_t* axis,
                             int64_t* dims) {
  const int32_t count = call.host()->kernel_num_inputs(call.context());
  if (first.rank >= WEFT_MAX_RANK) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "output has rank %d; ranks run from 0 to %d",
                      first.rank + 1, WEFT_MAX_RANK);
  }
  int64_t value = 0;
  if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
  if (weft_status* s =
          NormalizeAxis(call, "axis", value, first.rank + 1, axis)) {
    return s;
  }
  for (int32_t k = 0; k < count; ++k) {
    weft_kernel_tensor v;
    if (weft_status* s = call.Input(k, &v)) return s;
    if (v.dtype != first.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "an input is %s, expected %s",
                        weft_dtype_name_of(v.dtype),
                        weft_dtype_name_of(first.dtype));
    }
    bool same = v.rank == first.rank;
    for (int32_t i = 0; same && i < v.rank; ++i) {
      same = v.dims[i] == first.dims[i];
    }
    if (!same) {
      char a[256], b[256];
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "input %d has shape %s but input 0 has %s; Pack "
                        "needs one shape",
                        k, FormatShape(v.dims, v.rank, a, sizeof a),
                        FormatShape(first.dims, first.rank, b, sizeof b));
    }
  }
  for (int32_t d = 0, j = 0; d <= first.rank; ++d) {
    dims[d] = d == *axis ? count : first.dims[j++];
  }
  return nullptr;
}

// Split: the axis, the number of pieces and each piece's dims.
inline weft_status* SplitArgs(const KernelCallBase& call,
                              const weft_kernel_tensor& x, int64_t* axis,
                              int64_t* pieces, int64_t* dims) {
  if (x.rank == 0) {
    return call.Error(WEFT_INVALID_ARGUMENT, "cannot split a scalar");
  }
  int64_t value = 0;
  if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
  if (weft_status* s = call.AttrInt("num_split", 1, pieces)) return s;
  if (weft_status* s = NormalizeAxis(call, "axis", value, x.rank, axis)) {
    return s;
  }
  if (*pieces < 1 ||
      *pieces != call.host()->kernel_num_outputs(call.context()) ||
      x.dims[*axis] % *pieces != 0) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "dim %lld of x (%lld) does not split into %lld pieces",
                      static_cast<long long>(*axis),
                      static_cast<long long>(x.dims[*axis]),
                      static_cast<long long>(*pieces));
  }
  for (int32_t i = 0; i < x.rank; ++i) dims[i] = x.dims[i];
  dims[*axis] = x.dims[*axis] / *pieces;
  return nullptr;
}

// Unpack: the axis and each output's dims (rank x.rank - 1); the pieces
// are x.dims[axis].
inline weft_status* UnpackArgs(const KernelCallBase& call,
                               const weft_kernel_tensor& x, int64_t* axis,
                               int64_t* dims) {
  int64_t value = 0;
  if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
  if (weft_status* s = NormalizeAxis(call, "axis", value, x.rank, axis)) {
    return s;
  }
  const int64_t pieces = x.dims[*axis];
  const int32_t outputs = call.host()->kernel_num_outputs(call.context());
  if (pieces != outputs) {
    char shape[256];
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "the node has %d outputs but dimension %lld of %s is "
                      "%lld",
                      outputs, static_cast<long long>(*axis),
                      FormatShape(x.dims, x.rank, shape, sizeof shape),
                      static_cast<long long>(pieces));
  }
  for (int32_t d = 0, j = 0; d < x.rank; ++d) {
    if (d != *axis) dims[j++] = x.dims[d];
  }
  return nullptr;
}

// Gather: the axis and z's dims and rank (the indices' dtype is the
// caller's to check).
inline weft_status* GatherArgs(const KernelCallBase& call,
                               const weft_kernel_tensor& params,
                               const weft_kernel_tensor& idx, int64_t* axis,
                               int64_t* dims, int32_t* rank) {
  if (params.rank == 0) {
    return call.Error(WEFT_INVALID_ARGUMENT, "params must have rank >= 1");
  }
  int64_t value = 0;
  if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
  if (weft_status* s = NormalizeAxis(call, "axis", value, params.rank, axis)) {
    return s;
  }
  *rank = params.rank - 1 + idx.rank;
  if (*rank > WEFT_MAX_RANK) {
    return call.Error(WEFT_INVALID_ARGUMENT, "the output would have rank %d",
                      *rank);
  }
  int32_t r = 0;
  for (int64_t i = 0; i < *axis; ++i) dims[r++] = params.dims[i];
  for (int32_t i = 0; i < idx.rank; ++i) dims[r++] = idx.dims[i];
  for (int64_t i = *axis + 1; i < params.rank; ++i) dims[r++] = params.dims[i];
  return nullptr;
}

// OneHot's attributes, with on_value and off_value as elements of dtype.
struct OneHotAttrs {
  int64_t depth;
  int64_t axis;
  int32_t dtype;
  uint64_t on;
  uint64_t off;
};

// OneHot: its attributes and z's dims (rank idx.rank + 1).  `movable`
// says whether the device has kernels for a dtype.
inline weft_status* OneHotArgs(const KernelCallBase& call,
                               const weft_kernel_tensor& idx,
                               bool (*movable)(int32_t), OneHotAttrs* a,
                               int64_t* dims) {
  if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
    return call.Error(WEFT_INVALID_ARGUMENT, "indices is %s, expected int32",
                      weft_dtype_name_of(idx.dtype));
  }
  int64_t value = 0;
  double on_value = 0, off_value = 0;
  const weft_host_api* host = call.host();
  weft_kernel_context* ctx = call.context();
  weft_status* s = nullptr;
  if ((s = host->kernel_attr_int(ctx, "depth", &a->depth)) ||
      (s = call.AttrInt("axis", -1, &value)) ||
      (s = host->kernel_attr_float(ctx, "on_value", &on_value)) ||
      (s = host->kernel_attr_float(ctx, "off_value", &off_value)) ||
      (s = call.AttrDtype("dtype", &a->dtype)) ||
      (s = NormalizeAxis(call, "axis", value, idx.rank + 1, &a->axis))) {
    return s;
  }
  if (idx.rank >= WEFT_MAX_RANK) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "output has rank %d; ranks run from 0 to %d",
                      idx.rank + 1, WEFT_MAX_RANK);
  }
  if (a->depth < 0 || !movable(a->dtype) ||
      !EncodeElement(on_value, a->dtype, &a->on) ||
      !EncodeElement(off_value, a->dtype, &a->off)) {
    const char* type = weft_dtype_name_of(a->dtype);
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "depth %lld or dtype %s is invalid",
                      static_cast<long long>(a->depth), type ? type : "?");
  }
  for (int32_t d = 0, j = 0; d <= idx.rank; ++d) {
    dims[d] = d == a->axis ? a->depth : idx.dims[j++];
  }
  return nullptr;
}

// SliceGrad (`slice`: grad is a box of like's shape, at `begin`) and
// PadGrad (like's shape is the box, read out of grad): inputs grad and like
// and attribute `begin`.
inline weft_status* BoxGradArgs(const KernelCallBase& call, bool slice,
                                weft_kernel_tensor* grad,
                                weft_kernel_tensor* like,
                                const int64_t** begin) {
  if (weft_status* s = call.Input(0, grad)) return s;
  if (weft_status* s = call.Input(1, like)) return s;
  bool present = false;
  int32_t n = 0;
  if (weft_status* s = call.AttrIntList("begin", &present, begin, &n)) {
    return s;
  }
  const weft_kernel_tensor& inner = slice ? *grad : *like;
  const weft_kernel_tensor& outer = slice ? *like : *grad;
  bool ok = grad->rank == like->rank && n == grad->rank;
  for (int32_t i = 0; ok && i < n; ++i) {
    ok = (*begin)[i] >= 0 && (*begin)[i] + inner.dims[i] <= outer.dims[i];
  }
  if (!ok) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "a box of rank %d at begin (%d values) does not fit in "
                      "rank %d",
                      inner.rank, n, outer.rank);
  }
  return nullptr;
}

// GatherGrad(grad, indices, params): reads the three inputs; params' dims
// seen as [outer, limit, inner] around the axis; grad must hold outer * n *
// inner elements (n: the indices).  The dtypes are the caller's to check.
struct GatherGradShape {
  int64_t outer;
  int64_t limit;
  int64_t inner;
  int64_t n;
};

inline weft_status* GatherGradArgs(const KernelCallBase& call,
                                   weft_kernel_tensor* grad_out,
                                   weft_kernel_tensor* idx_out,
                                   weft_kernel_tensor* params_out,
                                   GatherGradShape* shape) {
  if (weft_status* s = call.Input(0, grad_out)) return s;
  if (weft_status* s = call.Input(1, idx_out)) return s;
  if (weft_status* s = call.Input(2, params_out)) return s;
  const weft_kernel_tensor& grad = *grad_out;
  const weft_kernel_tensor& idx = *idx_out;
  const weft_kernel_tensor& params = *params_out;
  if (params.rank == 0) {
    return call.Error(WEFT_INVALID_ARGUMENT, "params must have rank >= 1");
  }
  int64_t value = 0;
  if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
  const int64_t axis = value < 0 ? value + params.rank : value;
  if (axis < 0 || axis >= params.rank) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "axis = %lld is out of range for rank %d",
                      static_cast<long long>(value), params.rank);
  }
  shape->outer = 1;
  shape->inner = 1;
  for (int64_t i = 0; i < axis; ++i) shape->outer *= params.dims[i];
  for (int64_t i = axis + 1; i < params.rank; ++i) {
    shape->inner *= params.dims[i];
  }
  shape->limit = params.dims[axis];
  shape->n = idx.element_count;
  const int64_t want = shape->outer * shape->n * shape->inner;
  if (grad.element_count != want) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "grad has %lld elements; params gathered by %lld "
                      "indices along axis %lld give %lld",
                      static_cast<long long>(grad.element_count),
                      static_cast<long long>(shape->n),
                      static_cast<long long>(axis),
                      static_cast<long long>(want));
  }
  return nullptr;
}

// Rank, Size and Shape: the values a kernel writes (at most WEFT_MAX_RANK),
// their dtype and the output's rank.  Rank is an int32 scalar; Size and
// Shape take out_type (int32 or int64), and a value int32 cannot hold is
// refused rather than wrapped.
enum class ShapeOp { kShape, kSize, kRank };

struct ShapeValues {
  int32_t dtype;
  int32_t rank;
  int64_t count;
  int64_t values[WEFT_MAX_RANK];
};

inline weft_status* ShapeArgs(const KernelCallBase& call, ShapeOp op,
                              const weft_kernel_tensor& x, ShapeValues* out) {
  if (op == ShapeOp::kRank) {
    *out = ShapeValues{WEFT_INT32, 0, 1, {x.rank}};
    return nullptr;
  }
  if (weft_status* s = call.AttrDtype("out_type", &out->dtype)) return s;
  if (out->dtype != WEFT_INT32 && out->dtype != WEFT_INT64) {
    const char* name = weft_dtype_name_of(out->dtype);
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "out_type must be int32 or int64, got %s",
                      name ? name : "?");
  }
  if (op == ShapeOp::kSize) {
    out->rank = 0;
    out->count = 1;
    out->values[0] = x.element_count;
  } else {
    out->rank = 1;
    out->count = x.rank;
    for (int32_t i = 0; i < x.rank; ++i) out->values[i] = x.dims[i];
  }
  for (int64_t i = 0; out->dtype == WEFT_INT32 && i < out->count; ++i) {
    if (out->values[i] > INT32_MAX) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "%lld does not fit out_type int32",
                        static_cast<long long>(out->values[i]));
    }
  }
  return nullptr;
}

}  // namespace weft_plugin_kit

#endif  // WEFT_PLUGINS_COMMON_LAYOUT_ATTRS_H_
