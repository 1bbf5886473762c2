#include "broadcast.h"

namespace weft_cpu {

weft_status* BroadcastShape(const weft_kernel_context* ctx, const Tensor& x,
                            const Tensor& y, int64_t* dims, int32_t* rank) {
  const int32_t r = x.rank > y.rank ? x.rank : y.rank;
  const int32_t x_lead = r - x.rank, y_lead = r - y.rank;
  for (int32_t i = 0; i < r; ++i) {
    const int64_t a = i < x_lead ? 1 : x.dims[i - x_lead];
    const int64_t b = i < y_lead ? 1 : y.dims[i - y_lead];
    if (a == b || b == 1) {
      dims[i] = a;
    } else if (a == 1) {
      dims[i] = b;
    } else {
      char xs[256], ys[256];
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "shapes %s and %s do not broadcast (dimension %d: %lld "
                       "vs %lld)",
                       FormatShape(x.dims, x.rank, xs, sizeof xs),
                       FormatShape(y.dims, y.rank, ys, sizeof ys), i,
                       static_cast<long long>(a), static_cast<long long>(b));
    }
  }
  *rank = r;
  return nullptr;
}

namespace {

// Row-major element strides of `t` aligned to an output of rank `r`, with 0
// for broadcast (size-1) dimensions.
void AlignedStrides(const Tensor& t, int32_t r, int64_t* strides) {
  const int32_t lead = r - t.rank;
  int64_t stride = 1;
  for (int32_t i = r - 1; i >= 0; --i) {
    const int64_t d = i < lead ? 1 : t.dims[i - lead];
    strides[i] = d == 1 ? 0 : stride;
    stride *= d;
  }
}

}  // namespace

void MakeBroadcastPlan(const Tensor& x, const Tensor& y, const Tensor& z,
                       BroadcastPlan* plan) {
  int64_t xs[WEFT_MAX_RANK], ys[WEFT_MAX_RANK];
  AlignedStrides(x, z.rank, xs);
  AlignedStrides(y, z.rank, ys);
  int32_t n = 0;
  for (int32_t i = 0; i < z.rank; ++i) {
    const int64_t d = z.dims[i];
    if (d == 1) continue;
    // The previous (outer) dimension folds into this one when stepping it
    // once equals stepping this one `d` times, for both inputs.
    if (n > 0 && plan->x_strides[n - 1] == xs[i] * d &&
        plan->y_strides[n - 1] == ys[i] * d) {
      plan->dims[n - 1] *= d;
      plan->x_strides[n - 1] = xs[i];
      plan->y_strides[n - 1] = ys[i];
      continue;
    }
    plan->dims[n] = d;
    plan->x_strides[n] = xs[i];
    plan->y_strides[n] = ys[i];
    ++n;
  }
  if (n == 0) {  // a single element
    plan->dims[0] = 1;
    plan->x_strides[0] = 0;
    plan->y_strides[0] = 0;
    n = 1;
  }
  plan->rank = n;
  // Innermost strides are 1 or 0 (contiguous or broadcast), never both 0:
  // that dimension would have size 1 and have been dropped.
  const int32_t last = n - 1;
  if (plan->x_strides[last] == 0 && plan->y_strides[last] != 0) {
    plan->layout = RunLayout::kRepeatX;
  } else if (plan->y_strides[last] == 0 && plan->x_strides[last] != 0) {
    plan->layout = RunLayout::kRepeatY;
  } else {
    plan->layout = RunLayout::kBoth;
  }
}

}  // namespace weft_cpu
