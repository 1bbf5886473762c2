// Kernels that move elements without arithmetic: Transpose, Slice, Tile,
// Pad, Concat, Split, Pack, Unpack, Fill, Gather, OneHot, SliceGrad and
// PadGrad, for every dtype of 1, 2, 4 or 8 bytes (the kernels go by element
// size), GatherGrad (float32, float64), and Rank, Shape and Size.  Most are a walk in row-major order over one operand with the
// other read or written at strides (layout_ops.h); the argument checks and
// messages are the OpenCL plugin's, which follow the CPU's.  A Gather index
// out of range fails the run at synchronization, through the stream's
// error word.
#include <cstdint>
#include <cstdio>

#include "elementwise_ops.h"
#include "error_slot.h"
#include "grid_loop.h"
#include "kernel_call.h"
#include "layout_attrs.h"
#include "layout_ops.h"

namespace weft_cuda {
namespace {

using weft_plugin_kit::BoxGradArgs;
using weft_plugin_kit::ConcatArgs;
using weft_plugin_kit::EncodeElement;
using weft_plugin_kit::GatherArgs;
using weft_plugin_kit::GatherGradArgs;
using weft_plugin_kit::OneHotArgs;
using weft_plugin_kit::OneHotAttrs;
using weft_plugin_kit::PackArgs;
using weft_plugin_kit::PadArgs;
using weft_plugin_kit::ShapeArgs;
using weft_plugin_kit::ShapeOp;
using weft_plugin_kit::ShapeValues;
using weft_plugin_kit::SliceArgs;
using weft_plugin_kit::SplitArgs;
using weft_plugin_kit::TileArgs;
using weft_plugin_kit::TransposeArgs;
using weft_plugin_kit::UnpackArgs;

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
    int64_t axes[WEFT_MAX_RANK], dims[WEFT_MAX_RANK];
    if (weft_status* s = TransposeArgs(call, x, axes, dims)) return s;
    StridedWalk walk;
    const bool planned = PlanTranspose(x.dims, x.rank, axes, dims, &walk);
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, x.rank, &z)) {
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
    int64_t box[WEFT_MAX_RANK];
    bool whole = false;
    if (weft_status* s = SliceArgs(call, x, &begin, box, &whole)) return s;
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
    int64_t dims[WEFT_MAX_RANK];
    if (weft_status* s = TileArgs(call, x, &multiples, dims)) return s;
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
    int64_t dims[WEFT_MAX_RANK], begin[WEFT_MAX_RANK];
    double constant = 0;
    if (weft_status* s = PadArgs(call, x, begin, dims, &constant)) return s;
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
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = ConcatArgs(call, first, &axis, dims)) return s;
    return JoinInputs(call, axis, first.dtype, dims, first.rank, false);
  });
}

weft_status* PackCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor first;
    if (weft_status* s = FirstInput(call, &first)) return s;
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = PackArgs(call, first, &axis, dims)) return s;
    return JoinInputs(call, axis, first.dtype, dims, first.rank + 1, true);
  });
}

weft_status* SplitCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x;
    if (weft_status* s = FirstInput(call, &x)) return s;
    int64_t axis = 0, pieces = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = SplitArgs(call, x, &axis, &pieces, dims)) return s;
    return CutInto(call, x, axis, pieces, dims, x.rank);
  });
}

weft_status* UnpackCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x;
    if (weft_status* s = FirstInput(call, &x)) return s;
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = UnpackArgs(call, x, &axis, dims)) return s;
    return CutInto(call, x, axis, x.dims[axis], dims, x.rank - 1);
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

// Where a kernel reports an index outside [0, limit): the stream's error
// word, with this launch's description (error_slot.h).
DivisionCheck IndexCheck(const KernelCall& call, int64_t limit) {
  char what[96];
  std::snprintf(what, sizeof what, "an index is out of range [0, %lld)",
                static_cast<long long>(limit));
  ErrorSlot& errors = *call.plugin_stream()->errors;
  return {errors.device_word(),
          errors.RegisterLaunch(call.NodeDescription(what))};
}

template <typename Word, typename Index>
__global__ void GatherKernel(const Word* params, const Index* indices,
                             Word* z, int64_t count,
                             const GatherShape shape, DivisionCheck check) {
  for (int64_t e = GridStart(); e < count; e += GridStride()) {
    const int64_t v = indices[GatherIndexSlot(shape, e)];
    int64_t source = 0;
    if (GatherSource(shape, e, v, &source)) {
      z[e] = params[source];
    } else {
      ReportFailure(check);  // and the slice is left zero
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
  const int64_t n = z.element_count;
  GatherKernel<Word, Index><<<BlocksFor(n), kBlockThreads, 0,
                              call.stream()>>>(
      static_cast<const Word*>(TensorData(params)),
      static_cast<const Index*>(TensorData(indices)),
      static_cast<Word*>(TensorData(z)), n, shape,
      IndexCheck(call, shape.limit));
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
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    int32_t rank = 0;
    if (weft_status* s = GatherArgs(call, params, idx, &axis, dims, &rank)) {
      return s;
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
    OneHotAttrs a{};
    int64_t dims[WEFT_MAX_RANK];
    if (weft_status* s = OneHotArgs(call, idx, MovableDtype, &a, dims)) {
      return s;
    }
    if (weft_status* s =
            call.AllocateOutput(0, a.dtype, dims, idx.rank + 1, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    if (weft_status* s = FillElements(call, z, nullptr, a.off)) return s;
    const int64_t inner = DimProduct(idx.dims, a.axis, idx.rank);
    const int64_t depth = a.depth;
    switch (weft_dtype_size_of(a.dtype)) {
      case 1: return LaunchOneHotOf<uint8_t>(call, idx, z, depth, inner, a.on);
      case 2:
        return LaunchOneHotOf<uint16_t>(call, idx, z, depth, inner, a.on);
      case 4:
        return LaunchOneHotOf<uint32_t>(call, idx, z, depth, inner, a.on);
      default:
        return LaunchOneHotOf<uint64_t>(call, idx, z, depth, inner, a.on);
    }
  });
}

// ---- GatherGrad ----

template <typename T, typename Index>
__global__ void GatherGradKernel(const T* grad, const Index* indices, T* z,
                                 int64_t count, const GatherShape shape,
                                 DivisionCheck check) {
  if (GridStart() == 0) {
    for (int64_t j = 0; j < shape.n; ++j) {
      const int64_t v = indices[j];
      if (v < 0 || v >= shape.limit) {
        ReportFailure(check);
        break;
      }
    }
  }
  for (int64_t e = GridStart(); e < count; e += GridStride()) {
    z[e] = GatherGradElement(grad, indices, shape, e);
  }
}

template <typename T, typename Index>
weft_status* LaunchGatherGradOf(const KernelCall& call,
                                const weft_kernel_tensor& grad,
                                const weft_kernel_tensor& idx,
                                const weft_kernel_tensor& z,
                                const GatherShape& shape) {
  const int64_t n = z.element_count;
  GatherGradKernel<T, Index><<<BlocksFor(n), kBlockThreads, 0,
                               call.stream()>>>(
      static_cast<const T*>(TensorData(grad)),
      static_cast<const Index*>(TensorData(idx)),
      static_cast<T*>(TensorData(z)), n, shape,
      IndexCheck(call, shape.limit));
  return call.CheckLaunch("GatherGrad");
}

template <typename T>
weft_status* LaunchGatherGradFor(const KernelCall& call,
                                 const weft_kernel_tensor& grad,
                                 const weft_kernel_tensor& idx,
                                 const weft_kernel_tensor& z,
                                 const GatherShape& shape) {
  if (idx.dtype == WEFT_INT32) {
    return LaunchGatherGradOf<T, int32_t>(call, grad, idx, z, shape);
  }
  return LaunchGatherGradOf<T, int64_t>(call, grad, idx, z, shape);
}

weft_status* GatherGradCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor grad, idx, params, z;
    weft_plugin_kit::GatherGradShape g{};
    if (weft_status* s = GatherGradArgs(call, &grad, &idx, &params, &g)) {
      return s;
    }
    if (!IsFloat(grad.dtype)) return call.UnsupportedDtype(grad.dtype);
    if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
      return call.UnsupportedDtype(idx.dtype);
    }
    if (weft_status* s = call.AllocateOutput(0, grad.dtype, params.dims,
                                             params.rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    const GatherShape shape{g.n, g.limit, g.inner};
    if (grad.dtype == WEFT_FLOAT32) {
      return LaunchGatherGradFor<float>(call, grad, idx, z, shape);
    }
    return LaunchGatherGradFor<double>(call, grad, idx, z, shape);
  });
}

// ---- Rank, Shape, Size ----

// The values, by value in parameter space: no host buffer to keep alive.
struct ShapeChunk {
  int64_t values[WEFT_MAX_RANK];
};

template <typename I>
__global__ void PutValuesKernel(I* out, int32_t count,
                                const __grid_constant__ ShapeChunk chunk) {
  const int i = threadIdx.x;
  if (i < count) out[i] = static_cast<I>(chunk.values[i]);
}

const ShapeOp kShapeOp = ShapeOp::kShape, kSizeOp = ShapeOp::kSize,
              kRankOp = ShapeOp::kRank;

// `arg`: &kShapeOp, &kSizeOp or &kRankOp.
weft_status* ShapeCompute(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const ShapeOp what = *static_cast<const ShapeOp*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, z;
    if (weft_status* s = call.Input(0, &x)) return s;
    ShapeValues v;
    if (weft_status* s = ShapeArgs(call, what, x, &v)) return s;
    int64_t n = v.count;
    if (weft_status* s = call.AllocateOutput(0, v.dtype, &n, v.rank, &z)) {
      return s;
    }
    if (n == 0) return nullptr;
    ShapeChunk chunk{};
    for (int64_t i = 0; i < n; ++i) chunk.values[i] = v.values[i];
    const int32_t count = static_cast<int32_t>(n);
    if (v.dtype == WEFT_INT32) {
      PutValuesKernel<int32_t><<<1, WEFT_MAX_RANK, 0, call.stream()>>>(
          static_cast<int32_t*>(TensorData(z)), count, chunk);
    } else {
      PutValuesKernel<int64_t><<<1, WEFT_MAX_RANK, 0, call.stream()>>>(
          static_cast<int64_t*>(TensorData(z)), count, chunk);
    }
    return call.CheckLaunch("shape values");
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
    const int64_t* begin = nullptr;
    if (weft_status* s = BoxGradArgs(call, slice, &grad, &like, &begin)) {
      return s;
    }
    if (!slice) {
      return ReadBox(call, grad, 0, like.dims, like.rank, like.dims, begin);
    }
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
      {"Rank", ShapeCompute, const_cast<ShapeOp*>(&kRankOp)},
      {"Shape", ShapeCompute, const_cast<ShapeOp*>(&kShapeOp)},
      {"Size", ShapeCompute, const_cast<ShapeOp*>(&kSizeOp)},
  };
  for (const Entry& entry : entries) {
    // Every dtype: the kernels go by element size and refuse the others.
    if (weft_status* s = RegisterKernel(registrar, entry.op, nullptr, nullptr,
                                        0, entry.compute, entry.arg)) {
      return s;
    }
  }
  static const int32_t kFloats[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  return RegisterKernel(registrar, "GatherGrad", "T", kFloats, 2,
                        GatherGradCompute, nullptr);
}

}  // namespace weft_cuda
