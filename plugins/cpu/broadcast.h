// NumPy broadcasting for two operands: the output shape, and a walk over the
// output in runs of contiguous elements.
#ifndef WEFT_PLUGINS_CPU_BROADCAST_H_
#define WEFT_PLUGINS_CPU_BROADCAST_H_

#include <cstdint>

#include "kernel.h"

namespace weft_cpu {

// How the two inputs line up with a run of contiguous output elements.
enum class RunLayout {
  kBoth,     // both inputs advance with the output
  kRepeatX,  // x holds one value for the whole run
  kRepeatY,  // y holds one value for the whole run
};

inline bool SameShape(const Tensor& x, const Tensor& y) {
  if (x.rank != y.rank) return false;
  for (int32_t i = 0; i < x.rank; ++i) {
    if (x.dims[i] != y.dims[i]) return false;
  }
  return true;
}

// The output shape of x op y; INVALID_ARGUMENT naming both shapes when they
// do not broadcast.  `dims` has room for WEFT_MAX_RANK entries.
weft_status* BroadcastShape(const weft_kernel_context* ctx, const Tensor& x,
                            const Tensor& y, int64_t* dims, int32_t* rank);

// The output's dimensions after dropping 1s and merging neighbours that are
// contiguous in both inputs, with each input's element stride per dimension
// (0 where it is broadcast).  The innermost dimension is the run.
struct BroadcastPlan {
  int32_t rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t x_strides[WEFT_MAX_RANK];
  int64_t y_strides[WEFT_MAX_RANK];
  RunLayout layout;
};

// `z` is the non-empty output of BroadcastShape(x, y).
void MakeBroadcastPlan(const Tensor& x, const Tensor& y, const Tensor& z,
                       BroadcastPlan* plan);

// Calls run(x_offset, y_offset, z_offset, n) for the runs covering output
// elements [begin, end), in order; offsets are in elements.
template <typename Run>
void WalkBroadcast(const BroadcastPlan& plan, int64_t begin, int64_t end,
                   Run&& run) {
  const int32_t last = plan.rank - 1;
  const int64_t run_length = plan.dims[last];
  // Position of `begin` in the collapsed shape, and the input offsets there.
  int64_t index[WEFT_MAX_RANK];
  int64_t x_offset = 0, y_offset = 0;
  int64_t rest = begin;
  for (int32_t d = last; d >= 0; --d) {
    index[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    x_offset += index[d] * plan.x_strides[d];
    y_offset += index[d] * plan.y_strides[d];
  }
  int64_t position = begin;
  while (position < end) {
    const int64_t start = index[last];
    const int64_t n = run_length - start < end - position
                          ? run_length - start
                          : end - position;
    run(x_offset, y_offset, position, n);
    position += n;
    if (position >= end) break;
    // Back to the start of the row, then one step of the outer odometer.
    x_offset -= start * plan.x_strides[last];
    y_offset -= start * plan.y_strides[last];
    index[last] = 0;
    for (int32_t d = last - 1; d >= 0; --d) {
      x_offset += plan.x_strides[d];
      y_offset += plan.y_strides[d];
      if (++index[d] < plan.dims[d]) break;
      x_offset -= plan.x_strides[d] * plan.dims[d];
      y_offset -= plan.y_strides[d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_BROADCAST_H_
