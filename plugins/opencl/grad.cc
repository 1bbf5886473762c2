// Gradient kernels (the ops of runtime/ops/gradient_helpers_elementwise_array.cc and
// runtime/ops/gradient_helpers_reduce_nn.cc): ReluGrad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad,
// SumGrad, MeanGrad, SliceGrad, PadGrad and GatherGrad; SumToShapeOf lives
// with the reductions.  Semantics follow the CPU plugin's gradient_helpers_elementwise_array.cc and
// gradient_helpers_reduce_nn.cc; the OpenCL C is in sources_grad.cc.
#include <cstdint>
#include <cstdio>

#include "kernel_call.h"
#include "layout_common.h"

namespace weft_opencl {
namespace {

bool g_fp64 = false;

bool IsFloat(int32_t dtype) {
  return dtype == WEFT_FLOAT32 || (g_fp64 && dtype == WEFT_FLOAT64);
}

// ---- Element-wise ----

struct ElementGrad {
  const char* op;
  const char* kernel;
};

const ElementGrad kElementGrads[] = {
    {"ReluGrad", "relu_grad"},   {"SigmoidGrad", "sigmoid_grad"},
    {"TanhGrad", "tanh_grad"},   {"SqrtGrad", "sqrt_grad"},
    {"RsqrtGrad", "rsqrt_grad"},
};

weft_status* ElementGradKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const ElementGrad& op = *static_cast<const ElementGrad*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor a, b, z;
    if (weft_status* s = call.Input(0, &a)) return s;
    if (weft_status* s = call.Input(1, &b)) return s;
    if (a.dtype != b.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "inputs are %s and %s",
                        weft_dtype_name_of(a.dtype),
                        weft_dtype_name_of(b.dtype));
    }
    if (!IsFloat(a.dtype)) return call.UnsupportedDtype(a.dtype);
    if (!SameDims(a, b)) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "inputs of rank %d and %d must have the same shape",
                        a.rank, b.rank);
    }
    if (weft_status* s = call.AllocateOutput(0, a.dtype, a.dims, a.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    char name[48];
    return call.Launch(Program::kGrad,
                       KernelName(name, sizeof name, op.kernel, a.dtype),
                       Linear(z.element_count), Buffer(a), Buffer(b),
                       Buffer(z), static_cast<cl_long>(z.element_count));
  });
}

// ---- SumGrad, MeanGrad ----

// x's dims, outermost first, with each one's stride in the index of its
// reduction (0 on reduced axes); size-1 dims dropped and neighbours that
// run on merged.  *size is the elements per reduction, *groups their count.
struct Spread {
  int rank = 0;
  cl_long dims[kMaxKernelRank] = {};
  cl_long strides[kMaxKernelRank] = {};
  int64_t size = 1, groups = 1;
};

// The axes attribute (absent: every axis) as a flag per dim of x.
weft_status* ReducedAxes(const KernelCall& call, const weft_kernel_tensor& x,
                         bool* reduced) {
  bool present = false;
  const int64_t* axes = nullptr;
  int32_t num_axes = 0;
  if (weft_status* s = call.AttrIntList("axes", &present, &axes, &num_axes)) {
    return s;
  }
  for (int32_t i = 0; i < x.rank; ++i) reduced[i] = !present;
  for (int32_t k = 0; k < num_axes; ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + x.rank : axes[k];
    if (a < 0 || a >= x.rank || reduced[a]) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "axis %lld is out of range or repeated for rank %d",
                        static_cast<long long>(axes[k]), x.rank);
    }
    reduced[a] = true;
  }
  return nullptr;
}

weft_status* PlanSpread(const KernelCall& call, const weft_kernel_tensor& x,
                        Spread* plan) {
  bool reduced[WEFT_MAX_RANK];
  if (weft_status* s = ReducedAxes(call, x, reduced)) return s;
  // Innermost first, then reversed.
  cl_long dims[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
  int rank = 0;
  int64_t stride = 1;
  for (int32_t a = x.rank - 1; a >= 0; --a) {
    const int64_t d = x.dims[a];
    const cl_long s = reduced[a] ? 0 : stride;
    if (reduced[a]) {
      plan->size *= d;
    } else {
      stride *= d;
    }
    if (d == 1) continue;
    if (rank > 0 && strides[rank - 1] * dims[rank - 1] == s) {
      dims[rank - 1] *= d;  // 0 * n == 0: reduced dims merge too
      continue;
    }
    dims[rank] = d;
    strides[rank] = s;
    ++rank;
  }
  plan->groups = stride;
  if (rank > kMaxKernelRank) {
    return call.Error(WEFT_UNIMPLEMENTED,
                      "the axes interleave into %d groups; the OpenCL kernel "
                      "walks at most %d",
                      rank, kMaxKernelRank);
  }
  plan->rank = rank;
  for (int i = 0; i < rank; ++i) {
    plan->dims[i] = dims[rank - 1 - i];
    plan->strides[i] = strides[rank - 1 - i];
  }
  return nullptr;
}

// ProdGrad: dx = dy times the product of the others in x's group, from
// per-group statistics (the product of the nonzero elements, the count of
// zeros) taken in the CPU's order, one item per group.
weft_status* ProdGrad(KernelCall& call, const weft_kernel_tensor& grad,
                      const weft_kernel_tensor& x,
                      const weft_kernel_tensor& dx, const Spread& plan) {
  bool reduced[WEFT_MAX_RANK];
  if (weft_status* s = ReducedAxes(call, x, reduced)) return s;
  DimWalk kept, red;
  if (!SplitDims(x, reduced, &kept, &red)) {
    return call.Error(WEFT_UNIMPLEMENTED,
                      "the axes interleave into more than %d groups",
                      kMaxKernelRank);
  }
  const size_t size = weft_dtype_size_of(x.dtype);
  TempBuffer nonzero, zeros;
  if (weft_status* s = nonzero.Create(call, plan.groups * size)) return s;
  if (weft_status* s = zeros.Create(call, plan.groups * sizeof(cl_long))) {
    return s;
  }
  char name[48];
  if (weft_status* s = call.Launch(
          Program::kGrad, KernelName(name, sizeof name, "prod_stats", x.dtype),
          Linear(plan.groups, 64), Buffer(x), nonzero.arg(), zeros.arg(),
          static_cast<cl_long>(plan.groups), static_cast<cl_long>(plan.size),
          kept.rank, Long8(kept.dims), Long8(kept.strides), red.rank,
          Long8(red.dims), Long8(red.strides))) {
    return s;
  }
  return call.Launch(Program::kGrad,
                     KernelName(name, sizeof name, "prod_grad", x.dtype),
                     Linear(dx.element_count), Buffer(grad), Buffer(x),
                     nonzero.arg(), zeros.arg(), Buffer(dx),
                     static_cast<cl_long>(dx.element_count),
                     static_cast<cl_int>(plan.rank), Long8(plan.dims),
                     Long8(plan.strides));
}

int g_mean_tag, g_prod_tag;

// SumGrad (arg NULL), MeanGrad (&g_mean_tag), ProdGrad (&g_prod_tag).
weft_status* SpreadGradKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool mean = arg == &g_mean_tag;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor grad, x, dx;
    if (weft_status* s = call.Input(0, &grad)) return s;
    if (weft_status* s = call.Input(1, &x)) return s;
    if (grad.dtype != x.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "grad is %s but x is %s",
                        weft_dtype_name_of(grad.dtype),
                        weft_dtype_name_of(x.dtype));
    }
    if (!IsFloat(x.dtype)) return call.UnsupportedDtype(x.dtype);
    Spread plan;
    if (weft_status* s = PlanSpread(call, x, &plan)) return s;
    if (grad.element_count != plan.groups) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "grad has %lld elements, not one per reduction of x "
                        "(%lld)",
                        static_cast<long long>(grad.element_count),
                        static_cast<long long>(plan.groups));
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &dx)) {
      return s;
    }
    if (dx.element_count == 0) return nullptr;
    if (arg == &g_prod_tag) return ProdGrad(call, grad, x, dx, plan);
    char name[48];
    KernelName(name, sizeof name, "spread_grad", x.dtype);
    const WorkSize work = Linear(dx.element_count);
    const cl_long n = dx.element_count;
    const cl_int rank = plan.rank;
    // The CPU's scale: 1 / size in the dtype.
    if (x.dtype == WEFT_FLOAT32) {
      const cl_float scale =
          mean ? 1.0f / static_cast<float>(plan.size) : 1.0f;
      return call.Launch(Program::kGrad, name, work, Buffer(grad), Buffer(dx),
                         n, rank, Long8(plan.dims), Long8(plan.strides),
                         scale);
    }
    const cl_double scale = mean ? 1.0 / static_cast<double>(plan.size) : 1.0;
    return call.Launch(Program::kGrad, name, work, Buffer(grad), Buffer(dx), n,
                       rank, Long8(plan.dims), Long8(plan.strides), scale);
  });
}

// ---- SliceGrad, PadGrad ----

// `arg` non-NULL: SliceGrad (grad is the box, the output like's shape);
// else PadGrad (like is the box, read out of grad).
weft_status* BoxKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool slice = arg != nullptr;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor grad, like, z;
    const int64_t* begin = nullptr;
    if (weft_status* s = BoxGradArgs(call, slice, &grad, &like, &begin)) {
      return s;
    }
    const int32_t n = grad.rank;
    const weft_kernel_tensor& inner = slice ? grad : like;
    const weft_kernel_tensor& outer = slice ? like : grad;
    const char* suffix = SizeSuffix(weft_dtype_size_of(grad.dtype));
    if (suffix == nullptr) return call.UnsupportedDtype(grad.dtype);
    if (weft_status* s =
            call.AllocateOutput(0, grad.dtype, like.dims, like.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    if (inner.element_count == 0) {  // SliceGrad of nothing: zeros
      const uint64_t zero = 0;
      return call.Fill(z, &zero, weft_dtype_size_of(z.dtype));
    }
    // Dims where both shapes are 1 say nothing.
    cl_long dims[kMaxKernelRank] = {}, starts[kMaxKernelRank] = {},
            other[kMaxKernelRank] = {};
    int rank = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (outer.dims[i] == 1) continue;  // inner is 1 too, begin 0
      if (rank == kMaxKernelRank) {
        return call.Error(WEFT_UNIMPLEMENTED,
                          "more than %d dims larger than 1", kMaxKernelRank);
      }
      dims[rank] = like.dims[i];
      starts[rank] = begin[i];
      other[rank] = grad.dims[i];
      ++rank;
    }
    char name[32];
    std::snprintf(name, sizeof name, "%s_%s",
                  slice ? "slice_grad" : "pad_grad", suffix);
    return call.Launch(Program::kGrad, name, Linear(z.element_count),
                       Buffer(grad), Buffer(z),
                       static_cast<cl_long>(z.element_count),
                       static_cast<cl_int>(rank), Long8(dims), Long8(starts),
                       Long8(other));
  });
}

// ---- GatherGrad ----

weft_status* GatherGradKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor grad, idx, params, z;
    weft_plugin_kit::GatherGradShape shape{};
    if (weft_status* s = GatherGradArgs(call, &grad, &idx, &params, &shape)) {
      return s;
    }
    if (!IsFloat(grad.dtype)) return call.UnsupportedDtype(grad.dtype);
    if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
      return call.UnsupportedDtype(idx.dtype);
    }
    const int64_t limit = shape.limit, n = shape.n, inner = shape.inner;
    if (weft_status* s = call.AllocateOutput(0, grad.dtype, params.dims,
                                             params.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    char name[48];
    std::snprintf(name, sizeof name, "gather_grad_%s_%s",
                  KernelSuffix(grad.dtype), KernelSuffix(idx.dtype));
    const ErrorArg errors =
        call.Checked(DeviceError::kIndexOutOfRange, idx.dtype, limit);
    return call.Launch(Program::kGrad, name, Linear(z.element_count),
                       Buffer(grad), Buffer(idx), Buffer(z),
                       static_cast<cl_long>(z.element_count),
                       static_cast<cl_long>(n), static_cast<cl_long>(limit),
                       static_cast<cl_long>(inner), errors);
  });
}

int g_slice_tag;

}  // namespace

weft_status* RegisterGradKernels(weft_kernel_registrar* registrar,
                                 bool fp64) {
  g_fp64 = fp64;
  const int32_t floats[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  const int32_t float_count = fp64 ? 2 : 1;
  for (const ElementGrad& op : kElementGrads) {
    if (weft_status* s = RegisterKernel(registrar, op.op, "T", floats,
                                        float_count, ElementGradKernel,
                                        const_cast<ElementGrad*>(&op))) {
      return s;
    }
  }
  weft_status* s = nullptr;
  if ((s = RegisterKernel(registrar, "SumGrad", "T", floats, float_count,
                          SpreadGradKernel, nullptr)) ||
      (s = RegisterKernel(registrar, "MeanGrad", "T", floats, float_count,
                          SpreadGradKernel, &g_mean_tag)) ||
      (s = RegisterKernel(registrar, "ProdGrad", "T", floats, float_count,
                          SpreadGradKernel, &g_prod_tag)) ||
      (s = RegisterKernel(registrar, "GatherGrad", "T", floats, float_count,
                          GatherGradKernel, nullptr))) {
    return s;
  }
  // SliceGrad and PadGrad move bytes: every dtype of 1, 2, 4 or 8 bytes.
  if ((s = RegisterKernel(registrar, "SliceGrad", "T", kFixedSizeTypes,
                          kFixedSizeTypeCount, BoxKernel, &g_slice_tag)) ||
      (s = RegisterKernel(registrar, "PadGrad", "T", kFixedSizeTypes,
                          kFixedSizeTypeCount, BoxKernel, nullptr))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_opencl
