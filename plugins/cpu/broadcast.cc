#include "broadcast.h"

#include <cstring>

namespace weft_cpu {

namespace {

// Size of `t` along output dimension i of an output of rank r (1 where t has
// no such dimension).
inline int64_t AlignedDim(const Tensor& t, int32_t r, int32_t i) {
  const int32_t lead = r - t.rank;
  return i < lead ? 1 : t.dims[i - lead];
}

WEFT_CPU_COLD weft_status* NotBroadcastable(const weft_kernel_context* ctx,
                                            const Tensor* const* operands,
                                            int32_t count, int32_t dimension,
                                            int64_t a, int64_t b) {
  // "[2,3] and [4]" or "[2,3], [4] and [1]".
  char shapes[3 * 256] = "";
  for (int32_t k = 0; k < count; ++k) {
    char one[256];
    FormatShape(operands[k]->dims, operands[k]->rank, one, sizeof one);
    const char* separator = k == 0 ? "" : k == count - 1 ? " and " : ", ";
    strncat(shapes, separator, sizeof shapes - strlen(shapes) - 1);
    strncat(shapes, one, sizeof shapes - strlen(shapes) - 1);
  }
  return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                   "shapes %s do not broadcast (dimension %d: %lld vs %lld)",
                   shapes, dimension, static_cast<long long>(a),
                   static_cast<long long>(b));
}

// Row-major element strides of `t` aligned to an output of rank `r`, with 0
// for broadcast (size-1) dimensions.
void AlignedStrides(const Tensor& t, int32_t r, int64_t* strides) {
  int64_t stride = 1;
  for (int32_t i = r - 1; i >= 0; --i) {
    const int64_t d = AlignedDim(t, r, i);
    strides[i] = d == 1 ? 0 : stride;
    stride *= d;
  }
}

}  // namespace

weft_status* BroadcastShape(const weft_kernel_context* ctx,
                            const Tensor* const* operands, int32_t count,
                            int64_t* dims, int32_t* rank) {
  int32_t r = 0;
  for (int32_t k = 0; k < count; ++k) {
    if (operands[k]->rank > r) r = operands[k]->rank;
  }
  for (int32_t i = 0; i < r; ++i) {
    int64_t size = 1;
    for (int32_t k = 0; k < count; ++k) {
      const int64_t d = AlignedDim(*operands[k], r, i);
      if (d == 1 || d == size) continue;
      if (size != 1) {
        return NotBroadcastable(ctx, operands, count, i, size, d);
      }
      size = d;
    }
    dims[i] = size;
  }
  *rank = r;
  return nullptr;
}

void MakeBroadcastPlan(const Tensor* const* operands, int32_t count,
                       const Tensor& z, BroadcastPlan* plan) {
  int64_t strides[kMaxBroadcastOperands][WEFT_MAX_RANK];
  for (int32_t k = 0; k < count; ++k) {
    AlignedStrides(*operands[k], z.rank, strides[k]);
  }
  plan->operands = count;
  int32_t n = 0;
  for (int32_t i = 0; i < z.rank; ++i) {
    const int64_t d = z.dims[i];
    if (d == 1) continue;
    // The previous (outer) dimension folds into this one when stepping it
    // once equals stepping this one `d` times, for every operand.
    bool folds = n > 0;
    for (int32_t k = 0; folds && k < count; ++k) {
      folds = plan->strides[k][n - 1] == strides[k][i] * d;
    }
    if (folds) {
      plan->dims[n - 1] *= d;
      for (int32_t k = 0; k < count; ++k) {
        plan->strides[k][n - 1] = strides[k][i];
      }
      continue;
    }
    plan->dims[n] = d;
    for (int32_t k = 0; k < count; ++k) plan->strides[k][n] = strides[k][i];
    ++n;
  }
  if (n == 0) {  // a single element
    plan->dims[0] = 1;
    for (int32_t k = 0; k < count; ++k) plan->strides[k][0] = 0;
    n = 1;
  }
  plan->rank = n;
  // Innermost strides are 1 or 0 (contiguous or broadcast).  With two
  // operands both are 0 only for a single element, where kBoth reads the
  // right values; three-operand walks read the strides instead.
  const int32_t last = n - 1;
  const bool x_repeats = plan->strides[0][last] == 0;
  const bool y_repeats = count < 2 || plan->strides[1][last] == 0;
  if (x_repeats && !y_repeats) {
    plan->layout = RunLayout::kRepeatX;
  } else if (y_repeats && !x_repeats) {
    plan->layout = RunLayout::kRepeatY;
  } else {
    plan->layout = RunLayout::kBoth;
  }
}

}  // namespace weft_cpu
