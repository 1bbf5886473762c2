// CPU kernels of the ops in runtime/ops/gradient_helpers_elementwise_array.cc.
#include <cstring>

#include "array_copy.h"
#include "broadcast.h"
#include "elementwise_types.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

// INVALID_ARGUMENT naming the shapes of a and b (`format` has two %s).
WEFT_CPU_COLD weft_status* ShapesError(const weft_kernel_context* ctx,
                                       const char* format, const Tensor& a,
                                       const Tensor& b) {
  char x[64], y[64];
  return NodeError(ctx, WEFT_INVALID_ARGUMENT, format,
                   FormatShape(a.dims, a.rank, x, sizeof x),
                   FormatShape(b.dims, b.rank, y, sizeof y));
}

// ---- SumToShapeOf ---------------------------------------------------------

// The common case: like's dims are x's trailing dims (after 1s or nothing),
// so the output is the sum of x's rows of `inner` elements (a bias
// gradient; a scalar's is the sum of everything, inner 1).  Rows are added
// in order, each a contiguous run the compiler vectorizes.
template <typename T>
bool SumRows(const Tensor& x, const Tensor& like, const Tensor& out) {
  const int32_t lead = x.rank - like.rank;
  int64_t inner = 1;
  int32_t d = like.rank - 1;
  for (; d >= 0 && like.dims[d] == x.dims[d + lead]; --d) inner *= like.dims[d];
  for (; d >= 0; --d)
    if (like.dims[d] != 1) return false;
  const int64_t rows = inner == 0 ? 0 : x.count / inner;
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  if (inner == 1) {
    // Four partial sums, combined at the end: still exact for the
    // integers-as-floats cases and no worse rounding than one sum.
    T acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= rows; i += 4)
      for (int k = 0; k < 4; ++k) acc[k] += xp[i + k];
    for (; i < rows; ++i) acc[0] += xp[i];
    op[0] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    return true;
  }
  if (rows == 0) {
    std::memset(op, 0, static_cast<size_t>(out.count) * sizeof(T));
    return true;
  }
  std::memcpy(op, xp, static_cast<size_t>(inner) * sizeof(T));
  for (int64_t r = 1; r < rows; ++r) {
    const T* row = xp + r * inner;
    for (int64_t j = 0; j < inner; ++j) op[j] += row[j];
  }
  return true;
}

template <typename T>
void SumTo(const Tensor& x, const Tensor& like, const Tensor& out) {
  if (SumRows<T>(x, like, out)) return;
  std::memset(out.base, 0, static_cast<size_t>(out.count) * sizeof(T));
  const int32_t lead = x.rank - like.rank;
  // For each dim of x: like's dim (1 for x's extra leading dims, which all
  // land in one output element) and the output's stride there.
  int64_t mod[WEFT_MAX_RANK], stride[WEFT_MAX_RANK];
  int64_t s = 1;
  for (int32_t d = x.rank - 1; d >= 0; --d) {
    mod[d] = d < lead ? 1 : like.dims[d - lead];
    stride[d] = d < lead ? 0 : s;
    s *= mod[d];
  }
  int64_t in_index[WEFT_MAX_RANK] = {}, out_index[WEFT_MAX_RANK] = {};
  int64_t offset = 0;
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  for (int64_t i = 0; i < x.count; ++i) {
    op[offset] += xp[i];
    // The odometer over x, carrying each output index modulo like's dim.
    for (int32_t d = x.rank - 1; d >= 0; --d) {
      ++in_index[d];
      if (++out_index[d] == mod[d]) {
        out_index[d] = 0;
        offset -= (mod[d] - 1) * stride[d];
      } else {
        offset += stride[d];
      }
      if (in_index[d] < x.dims[d]) break;
      in_index[d] = 0;
      // x's dim is a multiple of mod, so the output index wrapped too.
    }
  }
}

weft_status* SumToShapeOfKernel(weft_kernel_context* ctx) {
  Tensor x, like, out;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &like)) return s;
  bool ok = like.rank <= x.rank;
  for (int32_t i = 0; ok && i < like.rank; ++i) {
    const int64_t l = like.dims[i], d = x.dims[i + x.rank - like.rank];
    ok = l == 0 ? d == 0 : d % l == 0;
  }
  if (!ok) {
    return ShapesError(ctx, "x %s cannot be summed to the shape of like %s", x,
                       like);
  }
  if (weft_status* s =
          AllocateOutput(ctx, 0, x.dtype, like.dims, like.rank, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  return DispatchDtype<kFloatDtypes>(ctx, x.dtype, [&](auto tag) {
    SumTo<decltype(tag)>(x, like, out);
    return static_cast<weft_status*>(nullptr);
  });
}

// ---- ReshapeLike ----------------------------------------------------------

weft_status* ReshapeLikeKernel(weft_kernel_context* ctx) {
  Tensor x, like;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &like)) return s;
  if (x.count != like.count) {
    return ShapesError(ctx, "x %s and like %s have different element counts", x,
                       like);
  }
  return g_host->kernel_forward_input(ctx, 0, 0, like.dims, like.rank);
}

// ---- SliceGrad and PadGrad --------------------------------------------------

// Copies the box of the smaller shape (grad for SliceGrad, like for PadGrad)
// between grad and a new output of like's shape, at `begin` in the larger.
template <bool kSlice>
weft_status* BoxKernel(weft_kernel_context* ctx) {
  Tensor grad, like, out;
  if (weft_status* s = ReadInput(ctx, 0, &grad)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &like)) return s;
  const int64_t* begin = nullptr;
  int32_t n = 0;
  if (weft_status* s = g_host->kernel_attr_int_list(ctx, "begin", &begin, &n)) {
    return s;
  }
  const Tensor& inner = kSlice ? grad : like;
  const Tensor& outer = kSlice ? like : grad;
  bool ok = grad.rank == like.rank && n == grad.rank;
  for (int32_t i = 0; ok && i < n; ++i) {
    ok = begin[i] >= 0 && begin[i] + inner.dims[i] <= outer.dims[i];
  }
  if (!ok) {
    return ShapesError(ctx, "a box of %s at begin does not fit in %s", inner,
                       outer);
  }
  if (weft_status* s =
          AllocateOutput(ctx, 0, grad.dtype, like.dims, like.rank, &out)) {
    return s;
  }
  const size_t element = weft_dtype_size_of(grad.dtype);
  if (kSlice)
    std::memset(out.base, 0, static_cast<size_t>(out.count) * element);
  if (inner.count == 0) return nullptr;
  Box box;
  box.rank = n;
  int64_t outer_strides[WEFT_MAX_RANK], inner_strides[WEFT_MAX_RANK];
  RowMajorStrides(outer.dims, n, outer_strides);
  RowMajorStrides(inner.dims, n, inner_strides);
  int64_t offset = 0;
  for (int32_t i = 0; i < n; ++i) {
    box.size[i] = inner.dims[i];
    offset += begin[i] * outer_strides[i];
    box.src_stride[i] = kSlice ? inner_strides[i] : outer_strides[i];
    box.dst_stride[i] = kSlice ? outer_strides[i] : inner_strides[i];
  }
  const char* src = grad.base + (kSlice ? 0 : offset * element);
  char* dst = out.base + (kSlice ? offset * element : 0);
  CopyBox(ctx, src, dst, box, element);
  return nullptr;
}

// ---- GatherGrad -------------------------------------------------------------

template <typename T, typename Index>
weft_status* ScatterAdd(const weft_kernel_context* ctx, const Tensor& grad,
                        const Tensor& idx, const Tensor& out, int32_t axis) {
  const int64_t limit = out.dims[axis];
  const int64_t outer = Product(out.dims, 0, axis);
  const int64_t inner = Product(out.dims, axis + 1, out.rank);
  const int64_t n = idx.count;
  if (grad.count != outer * n * inner) {
    char a[64], b[64];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "grad %s does not match params %s gathered by %lld "
                     "indices along axis %d",
                     FormatShape(grad.dims, grad.rank, a, sizeof a),
                     FormatShape(out.dims, out.rank, b, sizeof b),
                     static_cast<long long>(n), axis);
  }
  const Index* ip = idx.data<Index>();
  for (int64_t j = 0; j < n; ++j) {
    if (ip[j] < 0 || ip[j] >= limit) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "indices[%lld] = %lld is out of range [0, %lld)",
                       static_cast<long long>(j), static_cast<long long>(ip[j]),
                       static_cast<long long>(limit));
    }
  }
  std::memset(out.base, 0, static_cast<size_t>(out.count) * sizeof(T));
  const T* gp = grad.data<T>();
  T* op = out.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      T* dst = op + (o * limit + static_cast<int64_t>(ip[j])) * inner;
      const T* src = gp + (o * n + j) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
    }
  }
  return nullptr;
}

weft_status* GatherGradKernel(weft_kernel_context* ctx) {
  Tensor grad, idx, params, out;
  if (weft_status* s = ReadInput(ctx, 0, &grad)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &idx)) return s;
  if (weft_status* s = ReadInput(ctx, 2, &params)) return s;
  int64_t axis_attr = 0;
  weft_status* s = g_host->kernel_attr_int(ctx, "axis", &axis_attr);
  if (StatusCode(s) == WEFT_NOT_FOUND) {
    DiscardStatus(s);
  } else if (s != nullptr) {
    return s;
  }
  int32_t axis = 0;
  if (params.rank == 0) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT, "params must have rank >= 1");
  }
  if ((s = NormalizeAxis(ctx, "axis", axis_attr, params.rank, &axis))) return s;
  if ((s = AllocateOutput(ctx, 0, grad.dtype, params.dims, params.rank,
                          &out))) {
    return s;
  }
  return DispatchDtype<kFloatDtypes>(ctx, grad.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (idx.dtype == WEFT_INT32)
      return ScatterAdd<T, int32_t>(ctx, grad, idx, out, axis);
    if (idx.dtype == WEFT_INT64)
      return ScatterAdd<T, int64_t>(ctx, grad, idx, out, axis);
    return UnsupportedDtype(ctx, idx.dtype);
  });
}

// ---- Element-wise gradients -------------------------------------------------

enum class GradOp { kRelu, kSigmoid, kTanh, kSqrt, kRsqrt };

// ReluGrad takes (grad, x); the others (y, grad).
template <GradOp op, typename T>
T Apply(T a, T b) {
  if constexpr (op == GradOp::kRelu) return b > T(0) ? a : T(0);
  if constexpr (op == GradOp::kSigmoid) return b * a * (T(1) - a);
  if constexpr (op == GradOp::kTanh) return b * (T(1) - a * a);
  if constexpr (op == GradOp::kSqrt) return b * T(0.5) / a;
  if constexpr (op == GradOp::kRsqrt) return b * T(-0.5) * a * a * a;
}

template <GradOp op>
weft_status* GradKernel(weft_kernel_context* ctx) {
  Tensor a, b, out;
  if (weft_status* s = ReadInput(ctx, 0, &a)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &b)) return s;
  if (!SameShape(a, b)) {
    return ShapesError(ctx, "inputs %s and %s must have the same shape", a, b);
  }
  if (a.dtype != b.dtype)
    return DtypeMismatch(ctx, "input 1", b.dtype, a.dtype);
  // Over input 0 where the host allows it: element-wise.
  if (weft_status* s =
          AllocateOutputOver(ctx, 0, 0, a.dtype, a.dims, a.rank, &out)) {
    return s;
  }
  return DispatchDtype<kFloatDtypes>(ctx, a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* op_ = out.data<T>();
    ParallelFor(ctx, out.count, 1, 4.0, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) op_[i] = Apply<op, T>(ap[i], bp[i]);
    });
    return static_cast<weft_status*>(nullptr);
  });
}

}  // namespace

weft_status* RegisterGradKernelsA(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = RegisterForDtypes(registrar, "SumToShapeOf", kFloatDtypes,
                             Guarded<SumToShapeOfKernel>)) ||
      (s = registrar.Add("ReshapeLike", {}, Guarded<ReshapeLikeKernel>)) ||
      (s = registrar.Add("SliceGrad", {}, Guarded<BoxKernel<true>>)) ||
      (s = registrar.Add("PadGrad", {}, Guarded<BoxKernel<false>>)) ||
      (s = RegisterForDtypes(registrar, "GatherGrad", kFloatDtypes,
                             Guarded<GatherGradKernel>)) ||
      (s = RegisterForDtypes(registrar, "ReluGrad", kFloatDtypes,
                             Guarded<GradKernel<GradOp::kRelu>>)) ||
      (s = RegisterForDtypes(registrar, "SigmoidGrad", kFloatDtypes,
                             Guarded<GradKernel<GradOp::kSigmoid>>)) ||
      (s = RegisterForDtypes(registrar, "TanhGrad", kFloatDtypes,
                             Guarded<GradKernel<GradOp::kTanh>>)) ||
      (s = RegisterForDtypes(registrar, "SqrtGrad", kFloatDtypes,
                             Guarded<GradKernel<GradOp::kSqrt>>)) ||
      (s = RegisterForDtypes(registrar, "RsqrtGrad", kFloatDtypes,
                             Guarded<GradKernel<GradOp::kRsqrt>>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
