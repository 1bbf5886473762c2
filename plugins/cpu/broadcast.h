// NumPy broadcasting for two or three operands (Select has three): the
// output shape, and a walk over the output in runs of contiguous elements.
#ifndef WEFT_PLUGINS_CPU_BROADCAST_H_
#define WEFT_PLUGINS_CPU_BROADCAST_H_

#include <cstdint>

#include "kernel.h"

namespace weft_cpu {

// Enough for every op in the library; a fixed bound keeps the plan on the
// stack.
constexpr int32_t kMaxBroadcastOperands = 3;

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

// The output shape of an element-wise op over `count` operands;
// INVALID_ARGUMENT naming every shape when they do not broadcast.  `dims`
// has room for WEFT_MAX_RANK entries.
weft_status* BroadcastShape(const weft_kernel_context* ctx,
                            const Tensor* const* operands, int32_t count,
                            int64_t* dims, int32_t* rank);

inline weft_status* BroadcastShape(const weft_kernel_context* ctx,
                                   const Tensor& x, const Tensor& y,
                                   int64_t* dims, int32_t* rank) {
  const Tensor* operands[2] = {&x, &y};
  return BroadcastShape(ctx, operands, 2, dims, rank);
}

// The output's dimensions after dropping 1s and merging neighbours that are
// contiguous in every operand, with each operand's element stride per
// dimension (0 where it is broadcast).  The innermost dimension is the run;
// there every stride is 0 or 1.
struct BroadcastPlan {
  int32_t rank;
  int32_t operands;
  int64_t dims[WEFT_MAX_RANK];
  int64_t strides[kMaxBroadcastOperands][WEFT_MAX_RANK];
  RunLayout layout;  // of operands 0 and 1
};

// `z` is the non-empty output of BroadcastShape over `operands`.
void MakeBroadcastPlan(const Tensor* const* operands, int32_t count,
                       const Tensor& z, BroadcastPlan* plan);

inline void MakeBroadcastPlan(const Tensor& x, const Tensor& y,
                              const Tensor& z, BroadcastPlan* plan) {
  const Tensor* operands[2] = {&x, &y};
  MakeBroadcastPlan(operands, 2, z, plan);
}

// Calls run(offsets, z_offset, n) for the runs covering output elements
// [begin, end), in order; offsets[k] is operand k's, all in elements.  N is
// the plan's operand count, fixed at compile time so the odometer unrolls.
template <int32_t N, typename Run>
void WalkBroadcastOperands(const BroadcastPlan& plan, int64_t begin,
                           int64_t end, Run&& run) {
  static_assert(N >= 1 && N <= kMaxBroadcastOperands, "operand count");
  const int32_t last = plan.rank - 1;
  const int64_t run_length = plan.dims[last];
  // Position of `begin` in the collapsed shape, and the offsets there.
  int64_t index[WEFT_MAX_RANK];
  int64_t offsets[N] = {};
  int64_t rest = begin;
  for (int32_t d = last; d >= 0; --d) {
    index[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    for (int32_t k = 0; k < N; ++k) offsets[k] += index[d] * plan.strides[k][d];
  }
  int64_t position = begin;
  while (position < end) {
    const int64_t start = index[last];
    const int64_t n = run_length - start < end - position
                          ? run_length - start
                          : end - position;
    run(static_cast<const int64_t*>(offsets), position, n);
    position += n;
    if (position >= end) break;
    // Back to the start of the row, then one step of the outer odometer.
    for (int32_t k = 0; k < N; ++k) offsets[k] -= start * plan.strides[k][last];
    index[last] = 0;
    for (int32_t d = last - 1; d >= 0; --d) {
      for (int32_t k = 0; k < N; ++k) offsets[k] += plan.strides[k][d];
      if (++index[d] < plan.dims[d]) break;
      for (int32_t k = 0; k < N; ++k) {
        offsets[k] -= plan.strides[k][d] * plan.dims[d];
      }
      index[d] = 0;
    }
  }
}

// The two-operand walk: run(x_offset, y_offset, z_offset, n).
template <typename Run>
void WalkBroadcast(const BroadcastPlan& plan, int64_t begin, int64_t end,
                   Run&& run) {
  WalkBroadcastOperands<2>(
      plan, begin, end,
      [&run](const int64_t* offsets, int64_t z_offset, int64_t n) {
        run(offsets[0], offsets[1], z_offset, n);
      });
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_BROADCAST_H_
