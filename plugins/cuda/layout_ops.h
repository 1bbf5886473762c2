// The index math of layout.cu.  Transpose, Slice, Tile, Pad, Concat, Split,
// Pack, Unpack, SliceGrad and PadGrad move elements between a tensor
// walked in row-major order and one read or written at strides, so one
// walk serves them all; Gather and OneHot have their own.  Plain C++ with __host__
// __device__ functions, so that test_index_math.cu checks it on a machine
// without a GPU.  Included by nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_LAYOUT_OPS_H_
#define WEFT_PLUGINS_CUDA_LAYOUT_OPS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "weft/plugin.h"

namespace weft_cuda {

// Separate dims a walk may keep after merging; a copy needing more is
// refused with UNIMPLEMENTED (Tile of a rank-5 tensor with every multiple
// and dim above 1 is the first to hit it).
constexpr int kMaxWalkRank = 10;

// `rank` dims, outermost first, and the stride (in elements) of the strided
// operand along each: the i-th element in row-major order of dims lies at
// WalkOffset(walk, i).  Passed to kernels by value.
struct StridedWalk {
  int32_t rank;
  int64_t dims[kMaxWalkRank];
  int64_t strides[kMaxWalkRank];
};

// Plans the walk of `count` dims with `strides`: dims of 1 are dropped, and
// a dim merges into the one before it where the strides run on.  False when
// more than kMaxWalkRank dims remain.
inline bool PlanWalk(const int64_t* dims, const int64_t* strides,
                     int32_t count, StridedWalk* walk) {
  walk->rank = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (dims[i] == 1) continue;
    const int32_t r = walk->rank;
    if (r > 0 && walk->strides[r - 1] == dims[i] * strides[i]) {
      walk->dims[r - 1] *= dims[i];
      walk->strides[r - 1] = strides[i];
      continue;
    }
    if (r == kMaxWalkRank) return false;
    walk->dims[r] = dims[i];
    walk->strides[r] = strides[i];
    walk->rank = r + 1;
  }
  return true;
}

__host__ __device__ __forceinline__ int64_t WalkOffset(
    const StridedWalk& walk, int64_t i) {
  int64_t offset = 0;
  for (int32_t d = walk.rank - 1; d >= 0; --d) {
    offset += (i % walk.dims[d]) * walk.strides[d];
    i /= walk.dims[d];
  }
  return offset;
}

inline void RowMajorStrides(const int64_t* dims, int32_t rank,
                            int64_t* strides) {
  int64_t stride = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
}

// Transpose: z's dims are x's in `perm` order (each entry in [0, rank)),
// read at x's strides.
inline bool PlanTranspose(const int64_t* x_dims, int32_t rank,
                          const int64_t* perm, int64_t* z_dims,
                          StridedWalk* walk) {
  int64_t x_strides[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
  RowMajorStrides(x_dims, rank, x_strides);
  for (int32_t i = 0; i < rank; ++i) {
    z_dims[i] = x_dims[perm[i]];
    strides[i] = x_strides[perm[i]];
  }
  return PlanWalk(z_dims, strides, rank, walk);
}

// Tile: along axis i z's coordinate is (copy, position in x), two dims, the
// copy's with stride 0.
inline bool PlanTile(const int64_t* x_dims, int32_t rank,
                     const int64_t* multiples, StridedWalk* walk) {
  int64_t x_strides[WEFT_MAX_RANK];
  RowMajorStrides(x_dims, rank, x_strides);
  int64_t view[2 * WEFT_MAX_RANK], strides[2 * WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) {
    view[2 * i] = multiples[i];
    strides[2 * i] = 0;
    view[2 * i + 1] = x_dims[i];
    strides[2 * i + 1] = x_strides[i];
  }
  return PlanWalk(view, strides, 2 * rank, walk);
}

// A box of dims `box` at `begin` inside a tensor of dims `outer` (Slice,
// Split, Unpack and PadGrad read one, Pad, Concat, Pack and SliceGrad write
// one): the walk over the box at the outer tensor's strides, and the box's
// first element's offset there.
inline bool PlanBox(const int64_t* outer, int32_t rank, const int64_t* box,
                    const int64_t* begin, StridedWalk* walk,
                    int64_t* corner) {
  int64_t strides[WEFT_MAX_RANK];
  RowMajorStrides(outer, rank, strides);
  *corner = 0;
  for (int32_t i = 0; i < rank; ++i) *corner += begin[i] * strides[i];
  return PlanWalk(box, strides, rank, walk);
}

// ---- Gather, OneHot ----

// Gather: params seen as [outer, limit, inner], indices as [n], the output
// as [outer, n, inner].  Output element e takes params' element at
// GatherSource(...) of index value v; false when v is outside [0, limit).
struct GatherShape {
  int64_t n;
  int64_t limit;
  int64_t inner;
};

__host__ __device__ __forceinline__ int64_t GatherIndexSlot(
    const GatherShape& g, int64_t e) {
  return (e / g.inner) % g.n;
}

__host__ __device__ __forceinline__ bool GatherSource(const GatherShape& g,
                                                      int64_t e, int64_t v,
                                                      int64_t* source) {
  if (v < 0 || v >= g.limit) return false;
  const int64_t outer = e / (g.inner * g.n);
  *source = (outer * g.limit + v) * g.inner + e % g.inner;
  return true;
}

// GatherGrad: params' element e (seen as [outer, limit, inner], with the
// GatherShape of the forward Gather) sums the gradient of every output
// slice that gathered it, in the indices' order: the CPU's sums exactly,
// without atomics.  Indices out of range add nothing (the kernel reports
// them).
template <typename T, typename Index>
__host__ __device__ __forceinline__ T GatherGradElement(
    const T* grad, const Index* indices, const GatherShape& g, int64_t e) {
  const int64_t i = e % g.inner;
  const int64_t l = (e / g.inner) % g.limit;
  const int64_t o = e / (g.inner * g.limit);
  const T* column = grad + o * g.n * g.inner + i;
  T sum = T(0);
  for (int64_t j = 0; j < g.n; ++j) {
    if (static_cast<int64_t>(indices[j]) == l) sum += column[j * g.inner];
  }
  return sum;
}

// OneHot: indices seen as [outer, inner] (inner: the dims from `axis` on),
// the output as [outer, depth, inner].  Index element j with value v puts
// on_value at the returned offset, or nowhere (-1) when v is outside
// [0, depth): its row stays off_value, as in TensorFlow.
__host__ __device__ __forceinline__ int64_t OneHotTarget(int64_t j,
                                                         int64_t depth,
                                                         int64_t inner,
                                                         int64_t v) {
  if (v < 0 || v >= depth) return -1;
  return ((j / inner) * depth + v) * inner + j % inner;
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_LAYOUT_OPS_H_
