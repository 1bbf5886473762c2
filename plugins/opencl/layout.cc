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

// "[2,3,4]", as the CPU plugin's messages show shapes.
const char* FormatShape(const int64_t* dims, int32_t rank, char* out,
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

// ---- Attribute values as elements ----

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// float16 nearest, ties to even (what Eigen::half(float) gives the CPU);
// NaN becomes a quiet NaN of the same sign.
uint16_t HalfBits(float value) {
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
uint16_t BFloat16Bits(float value) {
  const uint32_t u = FloatBits(value);
  if (std::isnan(value)) return (u & 0x80000000u) != 0 ? 0xffc0 : 0x7fc0;
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// An integer of type I holding v, 0 when v is outside I (the shape
// functions admit only values the type holds, as on the CPU).
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
// devices are little-endian, as FillPattern assumes); false for a dtype
// without values here.
bool EncodeElement(double v, int32_t dtype, uint64_t* bits) {
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

// ---- Strided walks ----

// An int-list attribute that must have `want` entries.
weft_status* ListAttr(const KernelCall& call, const char* name, int32_t want,
                      const int64_t** values) {
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
    const int64_t* size = nullptr;
    if (weft_status* s = ListAttr(call, "begin", x.rank, &begin)) return s;
    if (weft_status* s = ListAttr(call, "size", x.rank, &size)) return s;
    int64_t box[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
    RowMajorStrides(x.dims, x.rank, strides);
    int64_t offset = 0;
    bool whole = true;
    for (int32_t i = 0; i < x.rank; ++i) {
      const int64_t d = x.dims[i];
      if (begin[i] < 0 || begin[i] > d || size[i] < -1 ||
          (size[i] >= 0 && size[i] > d - begin[i])) {
        char shape[256];
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "begin %lld, size %lld is out of bounds for "
                          "dimension %d of %s",
                          static_cast<long long>(begin[i]),
                          static_cast<long long>(size[i]), i,
                          FormatShape(x.dims, x.rank, shape, sizeof shape));
      }
      box[i] = size[i] < 0 ? d - begin[i] : size[i];
      offset += begin[i] * strides[i];
      whole &= box[i] == d;
    }
    if (whole) return call.ForwardInput(0, 0, x.dims, x.rank);
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
    if (weft_status* s = ListAttr(call, "multiples", x.rank, &multiples)) {
      return s;
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t i = 0; i < x.rank; ++i) {
      if (multiples[i] < 0 ||
          __builtin_mul_overflow(x.dims[i], multiples[i], &dims[i])) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "multiples[%d] = %lld is invalid for dimension "
                          "%lld", i, static_cast<long long>(multiples[i]),
                          static_cast<long long>(x.dims[i]));
      }
    }
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
    const int64_t* paddings = nullptr;
    if (weft_status* s = ListAttr(call, "paddings", 2 * x.rank, &paddings)) {
      return s;
    }
    double constant = 0;
    if (weft_status* s = call.host()->kernel_attr_float(
            call.context(), "constant_value", &constant)) {
      return s;
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t i = 0; i < x.rank; ++i) {
      const int64_t before = paddings[2 * i], after = paddings[2 * i + 1];
      if (before < 0 || after < 0 ||
          __builtin_add_overflow(x.dims[i], before, &dims[i]) ||
          __builtin_add_overflow(dims[i], after, &dims[i])) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "paddings for dimension %d are invalid", i);
      }
    }
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
    for (int32_t i = 0; i < x.rank; ++i) corner += paddings[2 * i] * strides[i];
    return LaunchWalk(call, Program::kLayout, "place", x, 0, z, corner,
                      x.element_count, x.dims, strides, x.rank);
  });
}

// ---- Pack, Unpack ----

weft_status* PackKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    const int32_t count = g_host->kernel_num_inputs(ctx);
    weft_kernel_tensor first;
    if (weft_status* s = call.Input(0, &first)) return s;
    if (first.rank >= WEFT_MAX_RANK) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "output has rank %d; ranks run from 0 to %d",
                        first.rank + 1, WEFT_MAX_RANK);
    }
    int64_t value = 0, axis = 0;
    if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
    if (weft_status* s =
            NormalizeAxis(call, "axis", value, first.rank + 1, &axis)) {
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
      if (!SameDims(v, first)) {
        char a[256], b[256];
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "input %d has shape %s but input 0 has %s; Pack "
                          "needs one shape", k,
                          FormatShape(v.dims, v.rank, a, sizeof a),
                          FormatShape(first.dims, first.rank, b, sizeof b));
      }
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t d = 0, j = 0; d <= first.rank; ++d) {
      dims[d] = d == axis ? count : first.dims[j++];
    }
    return JoinInputs(call, axis, first.dtype, dims, first.rank + 1);
  });
}

weft_status* UnpackKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    int64_t value = 0, axis = 0;
    if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
    if (weft_status* s = NormalizeAxis(call, "axis", value, x.rank, &axis)) {
      return s;
    }
    const int64_t pieces = x.dims[axis];
    const int32_t outputs = g_host->kernel_num_outputs(ctx);
    if (pieces != outputs) {
      char shape[256];
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "the node has %d outputs but dimension %lld of %s is "
                        "%lld", outputs, static_cast<long long>(axis),
                        FormatShape(x.dims, x.rank, shape, sizeof shape),
                        static_cast<long long>(pieces));
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t d = 0, j = 0; d < x.rank; ++d) {
      if (d != axis) dims[j++] = x.dims[d];
    }
    return CutInto(call, x, axis, pieces, dims, x.rank - 1);
  });
}

// ---- OneHot ----

weft_status* OneHotKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor idx, z;
    if (weft_status* s = call.Input(0, &idx)) return s;
    if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
      return call.Error(WEFT_INVALID_ARGUMENT, "indices is %s, expected int32",
                        weft_dtype_name_of(idx.dtype));
    }
    int64_t depth = 0, value = 0, axis = 0;
    double on_value = 0, off_value = 0;
    int32_t dtype = 0;
    const weft_host_api* host = call.host();
    weft_status* s = nullptr;
    if ((s = host->kernel_attr_int(ctx, "depth", &depth)) ||
        (s = call.AttrInt("axis", -1, &value)) ||
        (s = host->kernel_attr_float(ctx, "on_value", &on_value)) ||
        (s = host->kernel_attr_float(ctx, "off_value", &off_value)) ||
        (s = call.AttrDtype("dtype", &dtype)) ||
        (s = NormalizeAxis(call, "axis", value, idx.rank + 1, &axis))) {
      return s;
    }
    if (idx.rank >= WEFT_MAX_RANK) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "output has rank %d; ranks run from 0 to %d",
                        idx.rank + 1, WEFT_MAX_RANK);
    }
    uint64_t on = 0, off = 0;
    const char* size = SizeSuffix(weft_dtype_size_of(dtype));
    if (depth < 0 || size == nullptr || !EncodeElement(on_value, dtype, &on) ||
        !EncodeElement(off_value, dtype, &off)) {
      const char* type = weft_dtype_name_of(dtype);
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "depth %lld or dtype %s is invalid",
                        static_cast<long long>(depth), type ? type : "?");
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t d = 0, j = 0; d <= idx.rank; ++d) {
      dims[d] = d == axis ? depth : idx.dims[j++];
    }
    if ((s = call.AllocateOutput(0, dtype, dims, idx.rank + 1, &z))) return s;
    if (z.element_count == 0) return nullptr;
    if ((s = call.Fill(z, &off, weft_dtype_size_of(dtype)))) return s;
    char name[32];
    std::snprintf(name, sizeof name, "one_hot_%s_%s", size,
                  KernelSuffix(idx.dtype));
    const int64_t inner = DimProduct(idx.dims, axis, idx.rank);
    return call.Launch(Program::kLayout, name, Linear(idx.element_count),
                       Buffer(idx), Buffer(z),
                       static_cast<cl_long>(idx.element_count),
                       static_cast<cl_long>(depth),
                       static_cast<cl_long>(inner), static_cast<cl_ulong>(on));
  });
}

// ---- Shape, Size, Rank ----

// out_type, int32 or int64.
weft_status* OutType(const KernelCall& call, int32_t* out) {
  if (weft_status* s = call.AttrDtype("out_type", out)) return s;
  if (*out != WEFT_INT32 && *out != WEFT_INT64) {
    const char* name = weft_dtype_name_of(*out);
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "out_type must be int32 or int64, got %s",
                      name ? name : "?");
  }
  return nullptr;
}

// Allocates output 0 (`rank` 0 or 1, of `dtype`) and writes `n` values to
// it, refusing what int32 cannot hold rather than wrapping it.
weft_status* PutValues(KernelCall& call, int32_t dtype, int32_t rank,
                       const int64_t* values, int64_t n) {
  for (int64_t i = 0; dtype == WEFT_INT32 && i < n; ++i) {
    if (values[i] > INT32_MAX) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "%lld does not fit out_type int32",
                        static_cast<long long>(values[i]));
    }
  }
  weft_kernel_tensor z;
  if (weft_status* s = call.AllocateOutput(0, dtype, &n, rank, &z)) return s;
  const char* name = dtype == WEFT_INT32 ? "put_i32" : "put_i64";
  for (int64_t i = 0; i < n; i += kMaxKernelRank) {
    cl_long chunk[kMaxKernelRank] = {};
    const int64_t m = n - i < kMaxKernelRank ? n - i : kMaxKernelRank;
    for (int64_t k = 0; k < m; ++k) chunk[k] = values[i + k];
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
const int kShape = 0, kSize = 1, kRank = 2;

weft_status* ShapeKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const int what = *static_cast<const int*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (what == kRank) {
      const int64_t rank = x.rank;
      return PutValues(call, WEFT_INT32, 0, &rank, 1);
    }
    int32_t type = 0;
    if (weft_status* s = OutType(call, &type)) return s;
    if (what == kSize) {
      return PutValues(call, type, 0, &x.element_count, 1);
    }
    return PutValues(call, type, 1, x.dims, x.rank);
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
