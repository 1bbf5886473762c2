// Slice, Tile, Pad, Pack, Unpack and OneHot for every dtype of 1, 2, 4 or 8
// bytes (the kernels go by element size), and Shape, Size and Rank, whose
// values the host knows from the input's dims and writes to the device.
// Semantics, attributes and messages follow the CPU plugin
// (plugins/cpu/array*.cc): axes may be negative, and a OneHot index outside
// [0, depth) leaves its row all off_value (not an error, as on the CPU).
//
// Slice and Tile are strided reads of x (the array program's permute:
// Tile's output seen as [multiples[0], dims[0], multiples[1], ...] with
// stride 0 along the multiples); Pack and Unpack are row copies
// (copy_rows), as Concat and Split; Pad fills with constant_value and then
// places x inside; OneHot fills with off_value and places the on values.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernel_call.h"
#include "layout_common.h"

namespace weft_opencl {
namespace {

// ---- Strided walks ----

void RowMajorStrides(const int64_t* dims, int32_t rank, int64_t* strides) {
  int64_t stride = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
}

// `count` dims (outermost first) walked by a kernel that runs through one
// operand in order and the other at `strides`: dims of 1 dropped, and a dim
// merged into the one before it where the strides run on.
struct Walk {
  cl_int rank = 0;
  cl_long dims[kMaxKernelRank] = {};
  cl_long strides[kMaxKernelRank] = {};
};

weft_status* PlanWalk(const KernelCall& call, const int64_t* dims,
                      const int64_t* strides, int32_t count, Walk* walk) {
  for (int32_t i = 0; i < count; ++i) {
    if (dims[i] == 1) continue;
    const int r = walk->rank;
    if (r > 0 && walk->strides[r - 1] == dims[i] * strides[i]) {
      walk->dims[r - 1] *= dims[i];
      walk->strides[r - 1] = strides[i];
      continue;
    }
    if (r == kMaxKernelRank) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "the copy walks more than %d separate dims",
                        kMaxKernelRank);
    }
    walk->dims[r] = dims[i];
    walk->strides[r] = strides[i];
    walk->rank = r + 1;
  }
  if (walk->rank == 0) {  // one element
    walk->dims[0] = 1;
    walk->rank = 1;
  }
  return nullptr;
}

// Launches `name` (permute or place, by x's element size) over `n`
// elements between x at x_at and z at z_at, as PlanWalk makes the walk of
// `count` dims with `strides`.
weft_status* LaunchWalk(KernelCall& call, Program program, const char* name,
                        const weft_kernel_tensor& x, int64_t x_at,
                        const weft_kernel_tensor& z, int64_t z_at, int64_t n,
                        const int64_t* dims, const int64_t* strides,
                        int32_t count) {
  char kernel[32];
  if (weft_status* s = MoveKernel(call, name, x.dtype, kernel,
                                  sizeof kernel)) {
    return s;
  }
  Walk walk;
  if (weft_status* s = PlanWalk(call, dims, strides, count, &walk)) return s;
  BufferArg from = Buffer(x), to = Buffer(z);
  from.offset += x_at;
  to.offset += z_at;
  return call.Launch(program, kernel, Linear(n), from, to,
                     static_cast<cl_long>(n), walk.rank, Long8(walk.dims),
                     Long8(walk.strides));
}

// Allocates output 0 (x's dtype, `dims`) and reads it from x at x_at: its
// elements in order run over the `count` dims `view` and lie in x at
// `strides` along them (Slice, Tile).
weft_status* ReadStrided(KernelCall& call, const weft_kernel_tensor& x,
                         const int64_t* dims, int64_t x_at,
                         const int64_t* view, const int64_t* strides,
                         int32_t count) {
  weft_kernel_tensor z;
  if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, x.rank, &z)) {
    return s;
  }
  if (z.element_count == 0) return nullptr;
  return LaunchWalk(call, Program::kArray, "permute", x, x_at, z, 0,
                    z.element_count, view, strides, count);
}

// ---- Slice, Tile, Pad ----

weft_status* SliceKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    const int64_t* begin = nullptr;
    int64_t box[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
    bool whole = false;
    if (weft_status* s = SliceArgs(call, x, &begin, box, &whole)) return s;
    if (whole) return call.ForwardInput(0, 0, x.dims, x.rank);
    RowMajorStrides(x.dims, x.rank, strides);
    int64_t offset = 0;
    for (int32_t i = 0; i < x.rank; ++i) offset += begin[i] * strides[i];
    return ReadStrided(call, x, box, offset, box, strides, x.rank);
  });
}

weft_status* TileKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    const int64_t* multiples = nullptr;
    int64_t dims[WEFT_MAX_RANK];
    if (weft_status* s = TileArgs(call, x, &multiples, dims)) return s;
    // Along axis i, z's coordinate is (copy, position in x): two dims, the
    // copy's with stride 0.
    int64_t strides[WEFT_MAX_RANK];
    RowMajorStrides(x.dims, x.rank, strides);
    int64_t view[2 * WEFT_MAX_RANK], view_strides[2 * WEFT_MAX_RANK];
    for (int32_t i = 0; i < x.rank; ++i) {
      view[2 * i] = multiples[i];
      view_strides[2 * i] = 0;
      view[2 * i + 1] = x.dims[i];
      view_strides[2 * i + 1] = strides[i];
    }
    return ReadStrided(call, x, dims, 0, view, view_strides, 2 * x.rank);
  });
}

weft_status* PadKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, z;
    if (weft_status* s = call.Input(0, &x)) return s;
    int64_t dims[WEFT_MAX_RANK], begin[WEFT_MAX_RANK];
    double constant = 0;
    if (weft_status* s = PadArgs(call, x, begin, dims, &constant)) return s;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, x.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    uint64_t element = 0;
    const size_t element_size = weft_dtype_size_of(x.dtype);
    if (!EncodeElement(constant, x.dtype, &element)) {
      return call.UnsupportedDtype(x.dtype);
    }
    if (z.element_count != x.element_count) {
      if (weft_status* s = call.Fill(z, &element, element_size)) return s;
    }
    if (x.element_count == 0) return nullptr;
    int64_t strides[WEFT_MAX_RANK];
    RowMajorStrides(dims, x.rank, strides);
    int64_t corner = 0;
    for (int32_t i = 0; i < x.rank; ++i) corner += begin[i] * strides[i];
    return LaunchWalk(call, Program::kLayout, "place", x, 0, z, corner,
                      x.element_count, x.dims, strides, x.rank);
  });
}

// ---- Pack, Unpack ----

weft_status* PackKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor first;
    if (weft_status* s = call.Input(0, &first)) return s;
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = PackArgs(call, first, &axis, dims)) return s;
    return JoinInputs(call, axis, first.dtype, dims, first.rank + 1);
  });
}

weft_status* UnpackKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = UnpackArgs(call, x, &axis, dims)) return s;
    return CutInto(call, x, axis, x.dims[axis], dims, x.rank - 1);
  });
}

// ---- OneHot ----

bool HasMoveKernels(int32_t dtype) {
  return SizeSuffix(weft_dtype_size_of(dtype)) != nullptr;
}

weft_status* OneHotKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor idx, z;
    if (weft_status* s = call.Input(0, &idx)) return s;
    OneHotAttrs a{};
    int64_t dims[WEFT_MAX_RANK];
    weft_status* s = nullptr;
    if ((s = OneHotArgs(call, idx, HasMoveKernels, &a, dims))) return s;
    if ((s = call.AllocateOutput(0, a.dtype, dims, idx.rank + 1, &z))) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    if ((s = call.Fill(z, &a.off, weft_dtype_size_of(a.dtype)))) return s;
    char name[32];
    std::snprintf(name, sizeof name, "one_hot_%s_%s",
                  SizeSuffix(weft_dtype_size_of(a.dtype)),
                  KernelSuffix(idx.dtype));
    const int64_t inner = DimProduct(idx.dims, a.axis, idx.rank);
    return call.Launch(Program::kLayout, name, Linear(idx.element_count),
                       Buffer(idx), Buffer(z),
                       static_cast<cl_long>(idx.element_count),
                       static_cast<cl_long>(a.depth),
                       static_cast<cl_long>(inner),
                       static_cast<cl_ulong>(a.on));
  });
}

// ---- Shape, Size, Rank ----

// Allocates output 0 and writes the values to it.
weft_status* PutValues(KernelCall& call, const ShapeValues& v) {
  weft_kernel_tensor z;
  int64_t n = v.count;
  if (weft_status* s = call.AllocateOutput(0, v.dtype, &n, v.rank, &z)) {
    return s;
  }
  const char* name = v.dtype == WEFT_INT32 ? "put_i32" : "put_i64";
  for (int64_t i = 0; i < n; i += kMaxKernelRank) {
    cl_long chunk[kMaxKernelRank] = {};
    const int64_t m = n - i < kMaxKernelRank ? n - i : kMaxKernelRank;
    for (int64_t k = 0; k < m; ++k) chunk[k] = v.values[i + k];
    BufferArg to = Buffer(z);
    to.offset += i;
    if (weft_status* s = call.Launch(Program::kLayout, name, Linear(m), to,
                                     static_cast<cl_int>(m), Long8(chunk))) {
      return s;
    }
  }
  return nullptr;
}

// `arg`: &kShape, &kSize or &kRank.
const ShapeOp kShape = ShapeOp::kShape, kSize = ShapeOp::kSize,
              kRank = ShapeOp::kRank;

weft_status* ShapeKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const ShapeOp what = *static_cast<const ShapeOp*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    ShapeValues values;
    if (weft_status* s = ShapeArgs(call, what, x, &values)) return s;
    return PutValues(call, values);
  });
}

}  // namespace

weft_status* RegisterLayoutKernels(weft_kernel_registrar* registrar, bool) {
  // Every dtype but string (all are 1, 2, 4 or 8 bytes), as on the CPU.
  const int32_t movable[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                             WEFT_INT64,   WEFT_UINT8,   WEFT_BOOL,
                             WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8,
                             WEFT_INT16,   WEFT_UINT16,  WEFT_UINT32,
                             WEFT_UINT64};
  const int32_t count = sizeof movable / sizeof *movable;
  const int32_t indices[] = {WEFT_INT32, WEFT_INT64};
  // Shape and Size: x of any dtype, out_type int32 or int64; OneHot:
  // indices int32 or int64, its output any dtype.
  const weft_kernel_type_constraint out_type = {"out_type", indices, 2};
  const weft_kernel_type_constraint one_hot_dtype = {"dtype", movable, count};
  struct Entry {
    const char* op;
    const char* dtype_attr;
    const int32_t* dtypes;
    int32_t num_dtypes;
    weft_kernel_compute_fn compute;
    const void* arg;
    const weft_kernel_type_constraint* more;
  };
  const Entry kernels[] = {
      {"Slice", "T", movable, count, SliceKernel, nullptr, nullptr},
      {"Tile", "T", movable, count, TileKernel, nullptr, nullptr},
      {"Pad", "T", movable, count, PadKernel, nullptr, nullptr},
      {"Pack", "T", movable, count, PackKernel, nullptr, nullptr},
      {"Unpack", "T", movable, count, UnpackKernel, nullptr, nullptr},
      {"OneHot", "TI", indices, 2, OneHotKernel, nullptr, &one_hot_dtype},
      {"Shape", "T", movable, count, ShapeKernel, &kShape, &out_type},
      {"Size", "T", movable, count, ShapeKernel, &kSize, &out_type},
      {"Rank", "T", movable, count, ShapeKernel, &kRank, nullptr},
  };
  for (const Entry& e : kernels) {
    if (weft_status* s = RegisterKernel(
            registrar, e.op, e.dtype_attr, e.dtypes, e.num_dtypes, e.compute,
            const_cast<void*>(e.arg), e.more, e.more != nullptr ? 1 : 0)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_opencl
