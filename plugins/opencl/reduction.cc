// Sum, Mean, Prod, Max and Min over the axes of the `axes` attribute
// (absent: every axis; empty: none), with keep_dims; and SumToShapeOf (the
// gradient of broadcasting), a Sum over split dims.  Semantics follow the
// CPU plugin: Max and Min propagate NaN, integer Sum and Prod wrap, integer
// Mean truncates; an empty reduction gives 0 (Sum), 1 (Prod), NaN (float
// Mean) and is an error otherwise.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "kernel_call.h"

namespace weft_opencl {
namespace {

bool g_fp64 = false;

// The dtypes of the reductions and ArgMax/ArgMin, float64 last.
const int32_t kReducibleTypes[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_INT64,
                                   WEFT_UINT8, WEFT_FLOAT64};
constexpr int32_t kReducibleCount =
    sizeof kReducibleTypes / sizeof *kReducibleTypes;

bool Reducible(int32_t dtype) {
  for (int32_t i = 0; i < kReducibleCount - (g_fp64 ? 0 : 1); ++i)
    if (kReducibleTypes[i] == dtype) return true;
  return false;
}

enum class ReduceOp { kSum, kMean, kProd, kMax, kMin };

struct Reduction {
  const char* op;
  const char* kernel;
  ReduceOp kind;
};

const Reduction kReductions[] = {
    {"Sum", "sum", ReduceOp::kSum},    {"Mean", "mean", ReduceOp::kMean},
    {"Prod", "prod", ReduceOp::kProd}, {"Max", "max", ReduceOp::kMax},
    {"Min", "min", ReduceOp::kMin},
};

size_t PowerOfTwoAtMost(int64_t n, size_t cap) {
  size_t p = 1;
  while (p * 2 <= cap && static_cast<int64_t>(p * 2) <= n) p *= 2;
  return p;
}

weft_status* FillEmpty(KernelCall& call, const Reduction& op,
                       const weft_kernel_tensor& y) {
  const bool is_float = y.dtype == WEFT_FLOAT32 || y.dtype == WEFT_FLOAT64;
  if (op.kind == ReduceOp::kMax || op.kind == ReduceOp::kMin ||
      (op.kind == ReduceOp::kMean && !is_float)) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "%s over zero elements has no value (%s)", op.op,
                      weft_dtype_name_of(y.dtype));
  }
  unsigned char pattern[8] = {};
  const size_t size = weft_dtype_size_of(y.dtype);
  if (op.kind == ReduceOp::kProd) {
    if (y.dtype == WEFT_FLOAT32) {
      const float one = 1;
      std::memcpy(pattern, &one, sizeof one);
    } else if (y.dtype == WEFT_FLOAT64) {
      const double one = 1;
      std::memcpy(pattern, &one, sizeof one);
    } else {
      const int32_t one = 1;
      std::memcpy(pattern, &one, sizeof one);
    }
  } else if (op.kind == ReduceOp::kMean) {
    if (y.dtype == WEFT_FLOAT32) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(pattern, &nan, sizeof nan);
    } else {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(pattern, &nan, sizeof nan);
    }
  }
  return call.Fill(y, pattern, size);
}

// Enqueues reduction `kernel` ("sum", "max"...) of x into y, `count`
// elements per output.
weft_status* LaunchReduction(KernelCall& call, const char* kernel,
                             const weft_kernel_tensor& x,
                             const weft_kernel_tensor& y, int64_t count,
                             const DimWalk& kept, const DimWalk& red) {
  // Work-groups per output where items then read neighbouring elements
  // (a contiguous reduced axis) or where outputs alone are too few to
  // fill the device; else an item per output.
  const bool contiguous = red.rank > 0 && red.strides[red.rank - 1] == 1;
  const int64_t outputs = y.element_count;
  const bool grouped = count >= 32 && (contiguous || outputs < 64);
  char name[64];
  std::snprintf(name, sizeof name, "%s_%s_%s", kernel, KernelSuffix(x.dtype),
                grouped ? "group" : "item");
  const WorkSize work =
      grouped ? GroupPerRow(outputs, PowerOfTwoAtMost(count, 256))
              : Linear(outputs, 64);
  return call.Launch(Program::kReduction, name, work, Buffer(x), Buffer(y),
                     static_cast<cl_long>(outputs),
                     static_cast<cl_long>(count), kept.rank, Long8(kept.dims),
                     Long8(kept.strides), red.rank, Long8(red.dims),
                     Long8(red.strides));
}

weft_status* ReduceKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const Reduction& op = *static_cast<const Reduction*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (!Reducible(x.dtype)) return call.UnsupportedDtype(x.dtype);
    bool have_axes = false, keep_dims = false;
    const int64_t* axes = nullptr;
    int32_t num_axes = 0;
    if (weft_status* s = call.AttrIntList("axes", &have_axes, &axes,
                                          &num_axes)) {
      return s;
    }
    if (weft_status* s = call.AttrBool("keep_dims", false, &keep_dims)) {
      return s;
    }
    bool reduced[WEFT_MAX_RANK] = {};
    if (!have_axes) {
      for (int32_t i = 0; i < x.rank; ++i) reduced[i] = true;
    }
    for (int32_t i = 0; i < num_axes; ++i) {
      const int64_t axis = axes[i] < 0 ? axes[i] + x.rank : axes[i];
      if (axis < 0 || axis >= x.rank || reduced[axis]) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "axis %lld is out of range for rank %d or listed "
                          "twice",
                          static_cast<long long>(axes[i]), x.rank);
      }
      reduced[axis] = true;
    }
    int64_t dims[WEFT_MAX_RANK];
    int32_t rank = 0;
    int64_t count = 1;
    for (int32_t i = 0; i < x.rank; ++i) {
      if (reduced[i]) {
        count *= x.dims[i];
        if (keep_dims) dims[rank++] = 1;
      } else {
        dims[rank++] = x.dims[i];
      }
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    if (count == 0) return FillEmpty(call, op, y);
    DimWalk kept, red;
    if (!SplitDims(x, reduced, &kept, &red)) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "the axes interleave into more than %d groups",
                        kMaxKernelRank);
    }
    return LaunchReduction(call, op.kernel, x, y, count, kept, red);
  });
}

// ---- SumToShapeOf ----

// Appends a dim of `size` elements `stride` apart to `walk` (outermost
// first), merging it into the last when it runs on from there.  False when
// the walk would need more than kMaxKernelRank dims.
bool Append(DimWalk* walk, int64_t size, int64_t stride) {
  if (size == 1) return true;
  if (walk->rank > 0 && walk->strides[walk->rank - 1] == size * stride) {
    walk->dims[walk->rank - 1] *= size;
    walk->strides[walk->rank - 1] = stride;
    return true;
  }
  if (walk->rank == kMaxKernelRank) return false;
  walk->dims[walk->rank] = size;
  walk->strides[walk->rank] = stride;
  ++walk->rank;
  return true;
}

// x summed into like's shape: each dim of like (aligned to x's trailing
// dims) divides x's, and x's index along it is taken modulo like's; x's
// extra leading dims are summed away.  Seen as a reduction: x's dim d of
// size q * l splits into a reduced [q] (stride l * s) and a kept [l]
// (stride s).
weft_status* SumToShapeOfKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, like, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &like)) return s;
    if (x.dtype != WEFT_FLOAT32 && !(g_fp64 && x.dtype == WEFT_FLOAT64)) {
      return call.UnsupportedDtype(x.dtype);
    }
    const int32_t lead = x.rank - like.rank;
    bool ok = lead >= 0;
    for (int32_t i = 0; ok && i < like.rank; ++i) {
      const int64_t l = like.dims[i], d = x.dims[i + lead];
      ok = l == 0 ? d == 0 : d % l == 0;
    }
    if (!ok) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "x (rank %d) cannot be summed to the shape of like "
                        "(rank %d)",
                        x.rank, like.rank);
    }
    if (weft_status* s =
            call.AllocateOutput(0, x.dtype, like.dims, like.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    const int64_t count = x.element_count / y.element_count;
    if (count == 0) return FillEmpty(call, kReductions[0], y);
    cl_long strides[WEFT_MAX_RANK];
    cl_long stride = 1;
    for (int32_t i = x.rank - 1; i >= 0; --i) {
      strides[i] = stride;
      stride *= x.dims[i];
    }
    DimWalk kept, red;
    ok = true;
    for (int32_t i = 0; ok && i < x.rank; ++i) {
      const int64_t l = i < lead ? 1 : like.dims[i - lead];
      ok = Append(&red, x.dims[i] / l, strides[i] * l) &&
           Append(&kept, l, strides[i]);
    }
    if (!ok) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "the sum walks more than %d groups of dims",
                        kMaxKernelRank);
    }
    return LaunchReduction(call, "sum", x, y, count, kept, red);
  });
}

// ---- ArgMax, ArgMin ----

// ArgMax (arg NULL) and ArgMin: the index along `axis` of the largest
// (smallest) element, as output_type (int32 or int64, default int64).
weft_status* ArgKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool is_min = arg != nullptr;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (!Reducible(x.dtype)) return call.UnsupportedDtype(x.dtype);
    int64_t axis = 0;
    if (weft_status* s = call.AttrInt("axis", 0, &axis)) return s;
    int32_t out_type = WEFT_INT64;
    weft_status* status = call.AttrDtype("output_type", &out_type);
    if (status != nullptr) {
      if (call.host()->status_code(status) != WEFT_NOT_FOUND) return status;
      call.host()->status_destroy(status);
      out_type = WEFT_INT64;
    }
    if (out_type != WEFT_INT32 && out_type != WEFT_INT64) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "output_type must be int32 or int64, got %s",
                        weft_dtype_name_of(out_type));
    }
    const int64_t a = axis < 0 ? axis + x.rank : axis;
    if (a < 0 || a >= x.rank) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "axis %lld is out of range for an input of rank %d",
                        static_cast<long long>(axis), x.rank);
    }
    const int64_t length = x.dims[a];
    if (length == 0 || (out_type == WEFT_INT32 && length > INT32_MAX)) {
      return call.Error(WEFT_INVALID_ARGUMENT, "axis %lld %s",
                        static_cast<long long>(axis),
                        length == 0 ? "is empty: there is no index to return"
                                    : "is too long for output_type int32");
    }
    int64_t dims[WEFT_MAX_RANK];
    int64_t inner = 1;
    for (int32_t i = 0; i < x.rank; ++i) {
      if (i > a) inner *= x.dims[i];
      if (i != a) dims[i < a ? i : i - 1] = x.dims[i];
    }
    if (weft_status* s =
            call.AllocateOutput(0, out_type, dims, x.rank - 1, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    char name[48];
    std::snprintf(name, sizeof name, "%s_%s_%s",
                  is_min ? "arg_min" : "arg_max", KernelSuffix(x.dtype),
                  KernelSuffix(out_type));
    return call.Launch(Program::kReduction, name, Linear(y.element_count),
                       Buffer(x), Buffer(y),
                       static_cast<cl_long>(y.element_count),
                       static_cast<cl_long>(length),
                       static_cast<cl_long>(inner));
  });
}

int g_arg_min_tag;

}  // namespace

weft_status* RegisterReductionKernels(weft_kernel_registrar* registrar,
                                      bool fp64) {
  g_fp64 = fp64;
  const int32_t count = kReducibleCount - (fp64 ? 0 : 1);
  for (const Reduction& op : kReductions) {
    if (weft_status* s =
            RegisterKernel(registrar, op.op, "T", kReducibleTypes, count,
                           ReduceKernel, const_cast<Reduction*>(&op))) {
      return s;
    }
  }
  if (weft_status* s = RegisterKernel(registrar, "ArgMax", "T",
                                      kReducibleTypes, count, ArgKernel,
                                      nullptr)) {
    return s;
  }
  if (weft_status* s = RegisterKernel(registrar, "ArgMin", "T",
                                      kReducibleTypes, count, ArgKernel,
                                      &g_arg_min_tag)) {
    return s;
  }
  const int32_t floats[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  return RegisterKernel(registrar, "SumToShapeOf", "T", floats, fp64 ? 2 : 1,
                        SumToShapeOfKernel, nullptr);
}

}  // namespace weft_opencl
