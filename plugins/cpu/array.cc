// Shapes and data movement: the ops that read only an input's shape (Rank,
// Shape, Size), the views that never copy (Reshape, ExpandDims, Squeeze),
// and the fills (Fill, ZerosLike, OnesLike).  The layout, join and index
// kernels live in array_layout.cc, array_join.cc and array_index.cc.
#include <cstring>

#include "array_copy.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

weft_status* OutType(const weft_kernel_context* ctx, int32_t* out) {
  if (weft_status* s = g_host->kernel_attr_dtype(ctx, "out_type", out)) {
    return s;
  }
  if (*out != WEFT_INT32 && *out != WEFT_INT64) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "out_type must be int32 or int64, got %s",
                     DtypeName(*out));
  }
  return nullptr;
}

// Writes `values` as out_type, refusing what int32 cannot hold rather than
// wrapping it.
weft_status* WriteIndexValues(const weft_kernel_context* ctx,
                              const Tensor& out, const int64_t* values,
                              int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (out.dtype == WEFT_INT64) {
      out.data<int64_t>()[i] = values[i];
    } else if (values[i] > INT32_MAX) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "%lld does not fit out_type int32",
                       static_cast<long long>(values[i]));
    } else {
      out.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    }
  }
  return nullptr;
}

weft_status* RankKernel(weft_kernel_context* ctx) {
  Tensor x, y;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = AllocateOutput(ctx, 0, WEFT_INT32, nullptr, 0, &y)) {
    return s;
  }
  *y.data<int32_t>() = x.rank;
  return nullptr;
}

weft_status* ShapeKernel(weft_kernel_context* ctx) {
  Tensor x, y;
  int32_t type = 0;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = OutType(ctx, &type)) return s;
  const int64_t rank = x.rank;
  if (weft_status* s = AllocateOutput(ctx, 0, type, &rank, 1, &y)) return s;
  return WriteIndexValues(ctx, y, x.dims, x.rank);
}

weft_status* SizeKernel(weft_kernel_context* ctx) {
  Tensor x, y;
  int32_t type = 0;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = OutType(ctx, &type)) return s;
  if (weft_status* s = AllocateOutput(ctx, 0, type, nullptr, 0, &y)) return s;
  return WriteIndexValues(ctx, y, &x.count, 1);
}

// The shape attribute with its -1 resolved against the input's element
// count, which may have been unknown when the graph was built.
weft_status* ReshapeKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  const int64_t* shape = nullptr;
  int32_t rank = 0;
  if (weft_status* s =
          g_host->kernel_attr_int_list(ctx, "shape", &shape, &rank)) {
    return s;
  }
  if (rank < 0 || rank > WEFT_MAX_RANK) return RankTooLarge(ctx, "shape", rank);
  int64_t dims[WEFT_MAX_RANK];
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
  const bool ok =
      known >= 0 && (inferred < 0 ? known == x.count
                                  : known > 0 && x.count % known == 0);
  if (!ok) {
    char from[256], to[256];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT, "cannot reshape %s into %s",
                     FormatShape(x.dims, x.rank, from, sizeof from),
                     FormatShape(shape, rank, to, sizeof to));
  }
  if (inferred >= 0) dims[inferred] = x.count / known;
  return g_host->kernel_forward_input(ctx, 0, 0, dims, rank);
}

weft_status* ExpandDimsKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (x.rank >= WEFT_MAX_RANK) return RankTooLarge(ctx, "output", x.rank + 1);
  int64_t axis_attr = 0;
  int32_t axis = 0;
  if (weft_status* s = g_host->kernel_attr_int(ctx, "axis", &axis_attr)) {
    return s;
  }
  if (weft_status* s = NormalizeAxis(ctx, "axis", axis_attr, x.rank + 1,
                                     &axis)) {
    return s;
  }
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t i = 0, j = 0; i <= x.rank; ++i) {
    dims[i] = i == axis ? 1 : x.dims[j++];
  }
  return g_host->kernel_forward_input(ctx, 0, 0, dims, x.rank + 1);
}

weft_status* SqueezeKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  const int64_t* listed = nullptr;
  int32_t count = 0;
  bool present = false;
  if (weft_status* s = OptionalIntListAttr(ctx, "squeeze_dims", &listed,
                                           &count, &present)) {
    return s;
  }
  bool drop[WEFT_MAX_RANK] = {};
  for (int32_t i = 0; !present && i < x.rank; ++i) drop[i] = x.dims[i] == 1;
  for (int32_t i = 0; i < count; ++i) {
    int32_t axis = 0;
    if (weft_status* s =
            NormalizeAxis(ctx, "squeeze_dims", listed[i], x.rank, &axis)) {
      return s;
    }
    if (x.dims[axis] != 1) {
      char shape[256];
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "cannot squeeze dimension %d of %s: its size is %lld, "
                       "not 1", axis,
                       FormatShape(x.dims, x.rank, shape, sizeof shape),
                       static_cast<long long>(x.dims[axis]));
    }
    drop[axis] = true;
  }
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = 0;
  for (int32_t i = 0; i < x.rank; ++i) {
    if (!drop[i]) dims[rank++] = x.dims[i];
  }
  return g_host->kernel_forward_input(ctx, 0, 0, dims, rank);
}

weft_status* FillKernel(weft_kernel_context* ctx) {
  Tensor value, y;
  if (weft_status* s = ReadInput(ctx, 0, &value)) return s;
  if (value.count != 1) {
    char shape[256];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "value must be a scalar, got shape %s",
                     FormatShape(value.dims, value.rank, shape, sizeof shape));
  }
  const int64_t* dims = nullptr;
  int32_t rank = 0;
  if (weft_status* s =
          g_host->kernel_attr_int_list(ctx, "shape", &dims, &rank)) {
    return s;
  }
  if (weft_status* s = AllocateOutput(ctx, 0, value.dtype, dims, rank, &y)) {
    return s;
  }
  FillElements(ctx, y.base, y.count, value.base, weft_dtype_size_of(y.dtype));
  return nullptr;
}

// ZerosLike and OnesLike: the element is 0 or 1 encoded in x's dtype.
template <int kValue>
weft_status* ConstantLikeKernel(weft_kernel_context* ctx) {
  Tensor x, y;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  unsigned char element[8];
  if (!EncodeElement(kValue, x.dtype, element)) {
    return UnsupportedDtype(ctx, x.dtype);
  }
  FillElements(ctx, y.base, y.count, element, weft_dtype_size_of(y.dtype));
  return nullptr;
}

}  // namespace

weft_status* RegisterArrayKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = registrar.Add("Rank", {}, Guarded<RankKernel>)) ||
      (s = registrar.Add("Shape", {}, Guarded<ShapeKernel>)) ||
      (s = registrar.Add("Size", {}, Guarded<SizeKernel>)) ||
      (s = registrar.Add("Reshape", {}, Guarded<ReshapeKernel>)) ||
      (s = registrar.Add("ExpandDims", {}, Guarded<ExpandDimsKernel>)) ||
      (s = registrar.Add("Squeeze", {}, Guarded<SqueezeKernel>)) ||
      (s = registrar.Add("Fill", {}, Guarded<FillKernel>)) ||
      (s = registrar.Add("ZerosLike", {}, Guarded<ConstantLikeKernel<0>>)) ||
      (s = registrar.Add("OnesLike", {}, Guarded<ConstantLikeKernel<1>>)) ||
      (s = RegisterArrayLayoutKernels(registrar)) ||
      (s = RegisterArrayJoinKernels(registrar)) ||
      (s = RegisterArrayIndexKernels(registrar))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
