// Gather and OneHot: data placed by int32 or int64 indices.
#include <cstring>
#include <type_traits>

#include "array_copy.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

template <typename Index>
int64_t At(const Tensor& t, int64_t i) {
  return static_cast<int64_t>(t.data<Index>()[i]);
}

// Finds the first index outside [0, limit): an error, never a stray read.
template <typename Index>
weft_status* CheckIndices(const weft_kernel_context* ctx, const Tensor& idx,
                          int64_t limit) {
  for (int64_t i = 0; i < idx.count; ++i) {
    const int64_t v = At<Index>(idx, i);
    if (v < 0 || v >= limit) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "indices[%lld] = %lld is out of range [0, %lld)",
                       static_cast<long long>(i), static_cast<long long>(v),
                       static_cast<long long>(limit));
    }
  }
  return nullptr;
}

// Copies `item`s [begin, end) of the output, seen as [outer, n] slices of
// `bytes` each; a fixed Bytes lets the compiler turn the memcpy into one move.
template <typename Index, size_t Bytes>
void GatherSlices(const Tensor& params, const Tensor& idx, char* out,
                  int64_t limit, size_t bytes, int64_t begin, int64_t end) {
  const size_t size = Bytes != 0 ? Bytes : bytes;
  const int64_t n = idx.count;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t o = item / n;
    const int64_t row = o * limit + At<Index>(idx, item - o * n);
    std::memcpy(out + item * size, params.base + row * size, size);
  }
}

template <typename Index>
weft_status* Gather(const weft_kernel_context* ctx, const Tensor& params,
                    const Tensor& idx, const Tensor& y, int32_t axis) {
  const int64_t limit = params.dims[axis];
  if (weft_status* s = CheckIndices<Index>(ctx, idx, limit)) return s;
  if (y.count == 0) return nullptr;
  const int64_t inner = Product(params.dims, axis + 1, params.rank);
  const size_t bytes = static_cast<size_t>(inner) *
                       weft_dtype_size_of(params.dtype);
  const int64_t items = Product(params.dims, 0, axis) * idx.count;
  ParallelFor(ctx, items, inner, 2.0 + 0.25 * static_cast<double>(inner),
              [&](int64_t begin, int64_t end) {
    auto run = [&](auto fixed) {
      GatherSlices<Index, decltype(fixed)::value>(params, idx, y.base, limit,
                                                  bytes, begin, end);
    };
    switch (bytes) {
      case 1: return run(std::integral_constant<size_t, 1>());
      case 2: return run(std::integral_constant<size_t, 2>());
      case 4: return run(std::integral_constant<size_t, 4>());
      case 8: return run(std::integral_constant<size_t, 8>());
      default: return run(std::integral_constant<size_t, 0>());
    }
  });
  return nullptr;
}

weft_status* GatherKernel(weft_kernel_context* ctx) {
  Tensor params, idx;
  if (weft_status* s = ReadInput(ctx, 0, &params)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &idx)) return s;
  if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
    return DtypeMismatch(ctx, "indices", idx.dtype, WEFT_INT32);
  }
  if (params.rank == 0) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT, "params must have rank >= 1");
  }
  int64_t axis_attr = 0;
  int32_t axis = 0;
  if (weft_status* s = g_host->kernel_attr_int(ctx, "axis", &axis_attr)) {
    return s;
  }
  if (weft_status* s =
          NormalizeAxis(ctx, "axis", axis_attr, params.rank, &axis)) {
    return s;
  }
  const int32_t rank = params.rank - 1 + idx.rank;
  if (rank > WEFT_MAX_RANK) return RankTooLarge(ctx, "output", rank);
  int64_t dims[WEFT_MAX_RANK];
  int32_t r = 0;
  for (int32_t d = 0; d < axis; ++d) dims[r++] = params.dims[d];
  for (int32_t d = 0; d < idx.rank; ++d) dims[r++] = idx.dims[d];
  for (int32_t d = axis + 1; d < params.rank; ++d) dims[r++] = params.dims[d];
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, params.dtype, dims, rank, &y)) {
    return s;
  }
  return idx.dtype == WEFT_INT32 ? Gather<int32_t>(ctx, params, idx, y, axis)
                                 : Gather<int64_t>(ctx, params, idx, y, axis);
}

// Fills with off_value, then writes on_value where an index lands inside
// [0, depth); an index outside leaves its row all off_value, as TensorFlow.
template <typename Index>
void PlaceOnValues(const weft_kernel_context* ctx, const Tensor& idx,
                   char* out, int64_t depth, int64_t inner,
                   const unsigned char* on, size_t es) {
  ParallelFor(ctx, idx.count, 1, 2.0, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t v = At<Index>(idx, p);
      if (v < 0 || v >= depth) continue;
      const int64_t o = p / inner, i = p - o * inner;
      std::memcpy(out + ((o * depth + v) * inner + i) * es, on, es);
    }
  });
}

weft_status* OneHotKernel(weft_kernel_context* ctx) {
  Tensor idx;
  if (weft_status* s = ReadInput(ctx, 0, &idx)) return s;
  if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
    return DtypeMismatch(ctx, "indices", idx.dtype, WEFT_INT32);
  }
  int64_t depth = 0, axis_attr = 0;
  double on_value = 0, off_value = 0;
  int32_t dtype = 0, axis = 0;
  weft_status* s = nullptr;
  if ((s = g_host->kernel_attr_int(ctx, "depth", &depth)) ||
      (s = g_host->kernel_attr_int(ctx, "axis", &axis_attr)) ||
      (s = g_host->kernel_attr_float(ctx, "on_value", &on_value)) ||
      (s = g_host->kernel_attr_float(ctx, "off_value", &off_value)) ||
      (s = g_host->kernel_attr_dtype(ctx, "dtype", &dtype)) ||
      (s = NormalizeAxis(ctx, "axis", axis_attr, idx.rank + 1, &axis))) {
    return s;
  }
  if (idx.rank >= WEFT_MAX_RANK) {
    return RankTooLarge(ctx, "output", idx.rank + 1);
  }
  unsigned char on[8], off[8];
  if (depth < 0 || !EncodeElement(on_value, dtype, on) ||
      !EncodeElement(off_value, dtype, off)) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "depth %lld or dtype %s is invalid",
                     static_cast<long long>(depth), DtypeName(dtype));
  }
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t d = 0, j = 0; d <= idx.rank; ++d) {
    dims[d] = d == axis ? depth : idx.dims[j++];
  }
  Tensor y;
  if ((s = AllocateOutput(ctx, 0, dtype, dims, idx.rank + 1, &y))) return s;
  if (y.count == 0) return nullptr;
  const size_t es = weft_dtype_size_of(dtype);
  FillElements(ctx, y.base, y.count, off, es);
  const int64_t inner = Product(idx.dims, axis, idx.rank);
  if (idx.dtype == WEFT_INT32) {
    PlaceOnValues<int32_t>(ctx, idx, y.base, depth, inner, on, es);
  } else {
    PlaceOnValues<int64_t>(ctx, idx, y.base, depth, inner, on, es);
  }
  return nullptr;
}

}  // namespace

weft_status* RegisterArrayIndexKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = registrar.Add("Gather", {}, Guarded<GatherKernel>)) ||
      (s = registrar.Add("OneHot", {}, Guarded<OneHotKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
