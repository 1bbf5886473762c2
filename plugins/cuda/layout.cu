// Kernels that move elements without arithmetic: Transpose, Slice, Tile,
// Pad, Concat, Split, Pack, Unpack, Fill, Gather, OneHot, SliceGrad and
// PadGrad, for every dtype of 1, 2, 4 or 8 bytes (the kernels go by element
// size).  Most are a walk in row-major order over one operand with the
// other read or written at strides (layout_ops.h); the argument checks and
// messages are the OpenCL plugin's, which follow the CPU's.  A Gather index
// out of range fails the run at synchronization, through the stream's
// error word.
#include <cstdint>
#include <cstdio>

#include "error_slot.h"
#include "kernel_call.h"
#include "layout_ops.h"

namespace weft_cuda {
namespace {

__device__ __forceinline__ int64_t GridStart() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

// z[i] = x[walk(i)]: a strided read into a row-major output.
template <typename Word>
__global__ void ReadWalkKernel(const Word* x, Word* z, int64_t count,
                               const __grid_constant__ StridedWalk walk) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    z[i] = x[WalkOffset(walk, i)];
  }
}

// z[walk(i)] = x[i]: a row-major input placed at strides.
template <typename Word>
__global__ void WriteWalkKernel(const Word* x, Word* z, int64_t count,
                                const __grid_constant__ StridedWalk walk) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    z[WalkOffset(walk, i)] = x[i];
  }
}

// z[i] = *value, the value read on the device (Fill) or the pattern given.
template <typename Word>
__global__ void FillKernel(const Word* value, Word pattern, Word* z,
                           int64_t count) {
  const Word v = value != nullptr ? *value : pattern;
  for (int64_t i = GridStart(); i < count; i += GridStride()) z[i] = v;
}

enum class Direction { kRead, kWrite };

template <typename Word>
weft_status* LaunchWalkOf(const KernelCall& call, Direction direction,
                          const void* x, void* z, int64_t count,
                          const StridedWalk& walk) {
  const Word* from = static_cast<const Word*>(x);
  Word* to = static_cast<Word*>(z);
  if (direction == Direction::kRead) {
    ReadWalkKernel<Word><<<BlocksFor(count), kBlockThreads, 0,
                           call.stream()>>>(from, to, count, walk);
  } else {
    WriteWalkKernel<Word><<<BlocksFor(count), kBlockThreads, 0,
                            call.stream()>>>(from, to, count, walk);
  }
  return call.CheckLaunch(direction == Direction::kRead ? "strided read"
                                                        : "strided write");
}

// Moves `count` elements of `dtype` between x (at element x_at) and z (at
// z_at), walking `dims` with `strides` on x (kRead) or on z (kWrite).
weft_status* MoveElements(const KernelCall& call, Direction direction,
                          int32_t dtype, const weft_kernel_tensor& x,
                          int64_t x_at, const weft_kernel_tensor& z,
                          int64_t z_at, int64_t count,
                          const StridedWalk& walk) {
  if (count == 0) return nullptr;
  const size_t size = weft_dtype_size_of(dtype);
  const void* from = static_cast<const char*>(TensorData(x)) + x_at * size;
  void* to = static_cast<char*>(TensorData(z)) + z_at * size;
  switch (size) {
    case 1:
      return LaunchWalkOf<uint8_t>(call, direction, from, to, count, walk);
    case 2:
      return LaunchWalkOf<uint16_t>(call, direction, from, to, count, walk);
    case 4:
      return LaunchWalkOf<uint32_t>(call, direction, from, to, count, walk);
    case 8:
      return LaunchWalkOf<uint64_t>(call, direction, from, to, count, walk);
    default:
      return call.UnsupportedDtype(dtype);
  }
}

template <typename Word>
weft_status* LaunchFillOf(const KernelCall& call, const void* value,
                          uint64_t pattern, void* z, int64_t count) {
  FillKernel<Word><<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
      static_cast<const Word*>(value), static_cast<Word>(pattern),
      static_cast<Word*>(z), count);
  return call.CheckLaunch("fill");
}

// Fills z with the element at device address `value`, or with `pattern`'s
// low bytes when `value` is NULL.
weft_status* FillElements(const KernelCall& call, const weft_kernel_tensor& z,
                          const void* value, uint64_t pattern) {
  if (z.element_count == 0) return nullptr;
  void* to = TensorData(z);
  const int64_t n = z.element_count;
  switch (weft_dtype_size_of(z.dtype)) {
    case 1: return LaunchFillOf<uint8_t>(call, value, pattern, to, n);
    case 2: return LaunchFillOf<uint16_t>(call, value, pattern, to, n);
    case 4: return LaunchFillOf<uint32_t>(call, value, pattern, to, n);
    case 8: return LaunchFillOf<uint64_t>(call, value, pattern, to, n);
    default: return call.UnsupportedDtype(z.dtype);
  }
}

weft_status* TooManyDims(const KernelCall& call) {
  return call.Error(WEFT_UNIMPLEMENTED,
                    "the copy walks more than %d separate dims",
                    kMaxWalkRank);
}

bool MovableDtype(int32_t dtype) {
  const size_t size = weft_dtype_size_of(dtype);
  return size == 1 || size == 2 || size == 4 || size == 8;
}

// "[2,3,4]", as the CPU plugin's messages show shapes.
const char* FormatDims(const int64_t* dims, int32_t rank, char* out,
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

// Attribute `name` = `value` against `count` axes; negative values count
// from the end.
weft_status* NormalizeAxis(const KernelCall& call, const char* name,
                           int64_t value, int32_t count, int64_t* out) {
  const int64_t axis = value < 0 ? value + count : value;
  if (axis < 0 || axis >= count) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "attribute %s = %lld is out of range [%d, %d)", name,
                      static_cast<long long>(value), -count, count);
  }
  *out = axis;
  return nullptr;
}

// Reads the kernel's first input and checks that the kernels can move its
// elements; Begin() first.
weft_status* FirstInput(KernelCall& call, weft_kernel_tensor* x) {
  if (weft_status* s = call.Begin()) return s;
  if (weft_status* s = call.Input(0, x)) return s;
  if (!MovableDtype(x->dtype)) return call.UnsupportedDtype(x->dtype);
  return nullptr;
}

// Allocates output `index` (x's dtype, `dims`) and reads into it the box of
// those dims at `begin` in x.
weft_status* ReadBox(const KernelCall& call, const weft_kernel_tensor& x,
                     int32_t index, const int64_t* dims, int32_t rank,
                     const int64_t* box_dims, const int64_t* begin) {
  weft_kernel_tensor z;
  if (weft_status* s = call.AllocateOutput(index, x.dtype, dims, rank, &z)) {
    return s;
  }
  StridedWalk walk;
  int64_t corner = 0;
  if (!PlanBox(x.dims, x.rank, box_dims, begin, &walk, &corner)) {
    return TooManyDims(call);
  }
  return MoveElements(call, Direction::kRead, x.dtype, x, corner, z, 0,
                      z.element_count, walk);
}

// Writes x (of dims `box_dims`, x's own or with an axis of 1 added) into z
// as the box at `begin`.
weft_status* WriteBox(const KernelCall& call, const weft_kernel_tensor& x,
                      const int64_t* box_dims, const weft_kernel_tensor& z,
                      const int64_t* begin) {
  StridedWalk walk;
  int64_t corner = 0;
  if (!PlanBox(z.dims, z.rank, box_dims, begin, &walk, &corner)) {
    return TooManyDims(call);
  }
  return MoveElements(call, Direction::kWrite, x.dtype, x, 0, z, corner,
                      x.element_count, walk);
}

// ---- Transpose, Slice, Tile, Pad ----

weft_status* TransposeCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x, z;
    if (weft_status* s = FirstInput(call, &x)) return s;
    bool present = false;
    const int64_t* perm = nullptr;
    int32_t n = 0;
    if (weft_status* s = call.AttrIntList("perm", &present, &perm, &n)) {
      return s;
    }
    // An entry may count from the end (-1 is the last axis), as on the CPU.
    bool ok = present && n == x.rank;
    bool seen[WEFT_MAX_RANK] = {};
    int64_t axes[WEFT_MAX_RANK];
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
    int64_t dims[WEFT_MAX_RANK];
    StridedWalk walk;
    const bool planned = PlanTranspose(x.dims, x.rank, axes, dims, &walk);
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, n, &z)) {
      return s;
    }
    if (!planned) return TooManyDims(call);
    return MoveElements(call, Direction::kRead, x.dtype, x, 0, z, 0,
                        z.element_count, walk);
  });
}

weft_status* SliceCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x;
    if (weft_status* s = FirstInput(call, &x)) return s;
    const int64_t* begin = nullptr;
    const int64_t* size = nullptr;
    if (weft_status* s = ListAttr(call, "begin", x.rank, &begin)) return s;
    if (weft_status* s = ListAttr(call, "size", x.rank, &size)) return s;
    int64_t box[WEFT_MAX_RANK];
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
                          FormatDims(x.dims, x.rank, shape, sizeof shape));
      }
      box[i] = size[i] < 0 ? d - begin[i] : size[i];
      whole &= box[i] == d;
    }
    if (whole) return call.ForwardInput(0, 0, x.dims, x.rank);
    return ReadBox(call, x, 0, box, x.rank, box, begin);
  });
}

weft_status* TileCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x, z;
    if (weft_status* s = FirstInput(call, &x)) return s;
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
                          "%lld",
                          i, static_cast<long long>(multiples[i]),
                          static_cast<long long>(x.dims[i]));
      }
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, x.rank, &z)) {
      return s;
    }
    StridedWalk walk;
    if (!PlanTile(x.dims, x.rank, multiples, &walk)) return TooManyDims(call);
    return MoveElements(call, Direction::kRead, x.dtype, x, 0, z, 0,
                        z.element_count, walk);
  });
}

weft_status* PadCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x, z;
    if (weft_status* s = FirstInput(call, &x)) return s;
    const int64_t* paddings = nullptr;
    if (weft_status* s = ListAttr(call, "paddings", 2 * x.rank, &paddings)) {
      return s;
    }
    double constant = 0;
    if (weft_status* s = call.host()->kernel_attr_float(
            call.context(), "constant_value", &constant)) {
      return s;
    }
    int64_t dims[WEFT_MAX_RANK], begin[WEFT_MAX_RANK];
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
    uint64_t element = 0;
    if (!EncodeElement(constant, x.dtype, &element)) {
      return call.UnsupportedDtype(x.dtype);
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, x.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    if (z.element_count != x.element_count) {
      if (weft_status* s = FillElements(call, z, nullptr, element)) return s;
    }
    return WriteBox(call, x, x.dims, z, begin);
  });
}

// ---- Concat, Pack, Split, Unpack ----

// Allocates output 0 (`dtype`, `dims`) and writes input k into it at offset
// sum(input j's extent along `axis`, j < k), as Concat and Pack do; `pack`:
// each input's extent along the (new) axis is 1.
weft_status* JoinInputs(const KernelCall& call, int64_t axis, int32_t dtype,
                        const int64_t* dims, int32_t rank, bool pack) {
  weft_kernel_tensor z;
  if (weft_status* s = call.AllocateOutput(0, dtype, dims, rank, &z)) {
    return s;
  }
  if (z.element_count == 0) return nullptr;
  const int32_t count = g_host->kernel_num_inputs(call.context());
  int64_t begin[WEFT_MAX_RANK] = {};
  for (int32_t k = 0; k < count; ++k) {
    weft_kernel_tensor v;
    if (weft_status* s = call.Input(k, &v)) return s;
    int64_t box[WEFT_MAX_RANK];
    for (int32_t d = 0, j = 0; d < rank; ++d) {
      box[d] = pack && d == axis ? 1 : v.dims[j++];
    }
    if (weft_status* s = WriteBox(call, v, box, z, begin)) return s;
    begin[axis] += box[axis];
  }
  return nullptr;
}

// Reads output k (of dims `dims`, rank `rank`: Unpack's lack the axis)
// from x as the box at k * the piece's extent along `axis`.
weft_status* CutInto(const KernelCall& call, const weft_kernel_tensor& x,
                     int64_t axis, int64_t pieces, const int64_t* dims,
                     int32_t rank) {
  int64_t box[WEFT_MAX_RANK], begin[WEFT_MAX_RANK] = {};
  for (int32_t d = 0; d < x.rank; ++d) box[d] = x.dims[d];
  box[axis] = x.dims[axis] / pieces;
  for (int64_t k = 0; k < pieces; ++k) {
    begin[axis] = k * box[axis];
    if (weft_status* s = ReadBox(call, x, static_cast<int32_t>(k), dims,
                                 rank, box, begin)) {
      return s;
    }
  }
  return nullptr;
}

weft_status* ConcatCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor first;
    if (weft_status* s = FirstInput(call, &first)) return s;
    const int32_t count = g_host->kernel_num_inputs(ctx);
    if (first.rank == 0) {
      return call.Error(WEFT_INVALID_ARGUMENT, "cannot concatenate scalars");
    }
    int64_t value = 0, axis = 0;
    if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
    if (weft_status* s =
            NormalizeAxis(call, "axis", value, first.rank, &axis)) {
      return s;
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t i = 0; i < first.rank; ++i) dims[i] = first.dims[i];
    dims[axis] = 0;
    for (int32_t k = 0; k < count; ++k) {
      weft_kernel_tensor v;
      if (weft_status* s = call.Input(k, &v)) return s;
      bool ok = v.dtype == first.dtype && v.rank == first.rank;
      for (int32_t i = 0; ok && i < v.rank; ++i) {
        ok = i == axis || v.dims[i] == first.dims[i];
      }
      if (!ok) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "input %d does not match input 0 in dtype, rank or "
                          "the dims off axis %lld",
                          k, static_cast<long long>(axis));
      }
      dims[axis] += v.dims[axis];
    }
    return JoinInputs(call, axis, first.dtype, dims, first.rank, false);
  });
}

weft_status* PackCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor first;
    if (weft_status* s = FirstInput(call, &first)) return s;
    const int32_t count = g_host->kernel_num_inputs(ctx);
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
                          DtypeName(v.dtype), DtypeName(first.dtype));
      }
      if (!SameDims(v, first)) {
        char a[256], b[256];
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "input %d has shape %s but input 0 has %s; Pack "
                          "needs one shape",
                          k, FormatDims(v.dims, v.rank, a, sizeof a),
                          FormatDims(first.dims, first.rank, b, sizeof b));
      }
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t d = 0, j = 0; d <= first.rank; ++d) {
      dims[d] = d == axis ? count : first.dims[j++];
    }
    return JoinInputs(call, axis, first.dtype, dims, first.rank + 1, true);
  });
}

weft_status* SplitCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x;
    if (weft_status* s = FirstInput(call, &x)) return s;
    if (x.rank == 0) {
      return call.Error(WEFT_INVALID_ARGUMENT, "cannot split a scalar");
    }
    int64_t value = 0, axis = 0, pieces = 0;
    if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
    if (weft_status* s = call.AttrInt("num_split", 1, &pieces)) return s;
    if (weft_status* s = NormalizeAxis(call, "axis", value, x.rank, &axis)) {
      return s;
    }
    if (pieces < 1 || pieces != g_host->kernel_num_outputs(ctx) ||
        x.dims[axis] % pieces != 0) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "dim %lld of x (%lld) does not split into %lld "
                        "pieces",
                        static_cast<long long>(axis),
                        static_cast<long long>(x.dims[axis]),
                        static_cast<long long>(pieces));
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t i = 0; i < x.rank; ++i) dims[i] = x.dims[i];
    dims[axis] = x.dims[axis] / pieces;
    return CutInto(call, x, axis, pieces, dims, x.rank);
  });
}

weft_status* UnpackCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x;
    if (weft_status* s = FirstInput(call, &x)) return s;
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
                        "%lld",
                        outputs, static_cast<long long>(axis),
                        FormatDims(x.dims, x.rank, shape, sizeof shape),
                        static_cast<long long>(pieces));
    }
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t d = 0, j = 0; d < x.rank; ++d) {
      if (d != axis) dims[j++] = x.dims[d];
    }
    return CutInto(call, x, axis, pieces, dims, x.rank - 1);
  });
}

// ---- Fill ----

weft_status* FillCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor value, z;
    if (weft_status* s = FirstInput(call, &value)) return s;
    if (value.element_count != 1) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "value must hold one element, not %lld",
                        static_cast<long long>(value.element_count));
    }
    bool present = false;
    const int64_t* shape = nullptr;
    int32_t rank = 0;
    if (weft_status* s = call.AttrIntList("shape", &present, &shape, &rank)) {
      return s;
    }
    for (int32_t i = 0; i < rank; ++i) {
      if (shape[i] < 0) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "shape[%d] = %lld is not a size", i,
                          static_cast<long long>(shape[i]));
      }
    }
    if (weft_status* s = call.AllocateOutput(0, value.dtype, shape, rank,
                                             &z)) {
      return s;
    }
    return FillElements(call, z, TensorData(value), 0);
  });
}

// ---- Gather, OneHot ----

template <typename Word, typename Index>
__global__ void GatherKernel(const Word* params, const Index* indices,
                             Word* z, int64_t count,
                             const GatherShape shape, unsigned int* word,
                             unsigned int launch_id) {
  for (int64_t e = GridStart(); e < count; e += GridStride()) {
    const int64_t v = indices[GatherIndexSlot(shape, e)];
    int64_t source = 0;
    if (GatherSource(shape, e, v, &source)) {
      z[e] = params[source];
    } else {
      // The first failing launch of the stream claims the word (launches
      // run in stream order); the slice is left zero.
      volatile unsigned int* w = word;
      if (*w == 0) *w = launch_id;
      z[e] = Word(0);
    }
  }
}

template <typename Word, typename Index>
weft_status* LaunchGatherOf(const KernelCall& call,
                            const weft_kernel_tensor& params,
                            const weft_kernel_tensor& indices,
                            const weft_kernel_tensor& z,
                            const GatherShape& shape) {
  char what[96];
  std::snprintf(what, sizeof what, "an index is out of range [0, %lld)",
                static_cast<long long>(shape.limit));
  ErrorSlot& errors = *call.plugin_stream()->errors;
  const unsigned int id = errors.RegisterLaunch(call.NodeDescription(what));
  const int64_t n = z.element_count;
  GatherKernel<Word, Index><<<BlocksFor(n), kBlockThreads, 0,
                              call.stream()>>>(
      static_cast<const Word*>(TensorData(params)),
      static_cast<const Index*>(TensorData(indices)),
      static_cast<Word*>(TensorData(z)), n, shape, errors.device_word(), id);
  return call.CheckLaunch("Gather");
}

template <typename Index>
weft_status* LaunchGatherBySize(const KernelCall& call,
                                const weft_kernel_tensor& params,
                                const weft_kernel_tensor& indices,
                                const weft_kernel_tensor& z,
                                const GatherShape& shape) {
  switch (weft_dtype_size_of(params.dtype)) {
    case 1:
      return LaunchGatherOf<uint8_t, Index>(call, params, indices, z, shape);
    case 2:
      return LaunchGatherOf<uint16_t, Index>(call, params, indices, z, shape);
    case 4:
      return LaunchGatherOf<uint32_t, Index>(call, params, indices, z, shape);
    default:
      return LaunchGatherOf<uint64_t, Index>(call, params, indices, z, shape);
  }
}

int64_t DimProduct(const int64_t* dims, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

weft_status* GatherCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor params, idx, z;
    if (weft_status* s = FirstInput(call, &params)) return s;
    if (weft_status* s = call.Input(1, &idx)) return s;
    if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
      return call.UnsupportedDtype(idx.dtype);
    }
    if (params.rank == 0) {
      return call.Error(WEFT_INVALID_ARGUMENT, "params must have rank >= 1");
    }
    int64_t value = 0, axis = 0;
    if (weft_status* s = call.AttrInt("axis", 0, &value)) return s;
    if (weft_status* s =
            NormalizeAxis(call, "axis", value, params.rank, &axis)) {
      return s;
    }
    const int32_t rank = params.rank - 1 + idx.rank;
    if (rank > WEFT_MAX_RANK) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "the output would have rank %d", rank);
    }
    int64_t dims[WEFT_MAX_RANK];
    int32_t r = 0;
    for (int64_t i = 0; i < axis; ++i) dims[r++] = params.dims[i];
    for (int32_t i = 0; i < idx.rank; ++i) dims[r++] = idx.dims[i];
    for (int64_t i = axis + 1; i < params.rank; ++i) {
      dims[r++] = params.dims[i];
    }
    if (weft_status* s = call.AllocateOutput(0, params.dtype, dims, rank,
                                             &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    const GatherShape shape{idx.element_count, params.dims[axis],
                            DimProduct(params.dims, axis + 1, params.rank)};
    if (idx.dtype == WEFT_INT32) {
      return LaunchGatherBySize<int32_t>(call, params, idx, z, shape);
    }
    return LaunchGatherBySize<int64_t>(call, params, idx, z, shape);
  });
}

template <typename Word, typename Index>
__global__ void OneHotKernel(const Index* indices, Word* z, int64_t count,
                             int64_t depth, int64_t inner, Word on) {
  for (int64_t j = GridStart(); j < count; j += GridStride()) {
    const int64_t target = OneHotTarget(j, depth, inner, indices[j]);
    if (target >= 0) z[target] = on;
  }
}

template <typename Word>
weft_status* LaunchOneHotOf(const KernelCall& call,
                            const weft_kernel_tensor& idx,
                            const weft_kernel_tensor& z, int64_t depth,
                            int64_t inner, uint64_t on) {
  const int64_t n = idx.element_count;
  Word* out = static_cast<Word*>(TensorData(z));
  const Word value = static_cast<Word>(on);
  if (idx.dtype == WEFT_INT32) {
    OneHotKernel<Word, int32_t><<<BlocksFor(n), kBlockThreads, 0,
                                  call.stream()>>>(
        static_cast<const int32_t*>(TensorData(idx)), out, n, depth, inner,
        value);
  } else {
    OneHotKernel<Word, int64_t><<<BlocksFor(n), kBlockThreads, 0,
                                  call.stream()>>>(
        static_cast<const int64_t*>(TensorData(idx)), out, n, depth, inner,
        value);
  }
  return call.CheckLaunch("OneHot");
}

weft_status* OneHotCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor idx, z;
    if (weft_status* s = call.Input(0, &idx)) return s;
    if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
      return call.Error(WEFT_INVALID_ARGUMENT, "indices is %s, expected int32",
                        DtypeName(idx.dtype));
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
    if (depth < 0 || !MovableDtype(dtype) ||
        !EncodeElement(on_value, dtype, &on) ||
        !EncodeElement(off_value, dtype, &off)) {
      const char* type = DtypeName(dtype);
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
    if ((s = FillElements(call, z, nullptr, off))) return s;
    const int64_t inner = DimProduct(idx.dims, axis, idx.rank);
    switch (weft_dtype_size_of(dtype)) {
      case 1: return LaunchOneHotOf<uint8_t>(call, idx, z, depth, inner, on);
      case 2: return LaunchOneHotOf<uint16_t>(call, idx, z, depth, inner, on);
      case 4: return LaunchOneHotOf<uint32_t>(call, idx, z, depth, inner, on);
      default:
        return LaunchOneHotOf<uint64_t>(call, idx, z, depth, inner, on);
    }
  });
}

// ---- SliceGrad, PadGrad ----

// `arg` non-NULL: SliceGrad (grad is the box, the output like's shape,
// zeros elsewhere); else PadGrad (like is the box, read out of grad).
weft_status* BoxGradCompute(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool slice = arg != nullptr;
    KernelCall call(ctx);
    weft_kernel_tensor grad, like, z;
    if (weft_status* s = FirstInput(call, &grad)) return s;
    if (weft_status* s = call.Input(1, &like)) return s;
    bool present = false;
    const int64_t* begin = nullptr;
    int32_t n = 0;
    if (weft_status* s = call.AttrIntList("begin", &present, &begin, &n)) {
      return s;
    }
    const weft_kernel_tensor& inner = slice ? grad : like;
    const weft_kernel_tensor& outer = slice ? like : grad;
    bool ok = grad.rank == like.rank && n == grad.rank;
    for (int32_t i = 0; ok && i < n; ++i) {
      ok = begin[i] >= 0 && begin[i] + inner.dims[i] <= outer.dims[i];
    }
    if (!ok) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "a box of rank %d at begin (%d values) does not fit "
                        "in rank %d",
                        inner.rank, n, outer.rank);
    }
    if (!slice) return ReadBox(call, grad, 0, like.dims, like.rank,
                               like.dims, begin);
    if (weft_status* s =
            call.AllocateOutput(0, grad.dtype, like.dims, like.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    if (z.element_count != grad.element_count) {
      if (weft_status* s = call.Zeros(z)) return s;
    }
    return WriteBox(call, grad, grad.dims, z, begin);
  });
}

}  // namespace

weft_status* RegisterLayoutKernels(weft_kernel_registrar* registrar) {
  struct Entry {
    const char* op;
    weft_kernel_compute_fn compute;
    void* arg;
  };
  static int slice_grad_tag = 0;
  const Entry entries[] = {
      {"Transpose", TransposeCompute, nullptr},
      {"Slice", SliceCompute, nullptr},
      {"Tile", TileCompute, nullptr},
      {"Pad", PadCompute, nullptr},
      {"Concat", ConcatCompute, nullptr},
      {"Pack", PackCompute, nullptr},
      {"Split", SplitCompute, nullptr},
      {"Unpack", UnpackCompute, nullptr},
      {"Fill", FillCompute, nullptr},
      {"Gather", GatherCompute, nullptr},
      {"OneHot", OneHotCompute, nullptr},
      {"SliceGrad", BoxGradCompute, &slice_grad_tag},
      {"PadGrad", BoxGradCompute, nullptr},
  };
  for (const Entry& entry : entries) {
    // Every dtype: the kernels go by element size and refuse the others.
    if (weft_status* s = RegisterKernel(registrar, entry.op, nullptr, nullptr,
                                        0, entry.compute, entry.arg)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_cuda
