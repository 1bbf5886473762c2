// Sum and Mean over a set of axes.
//
// The input's dimensions are first collapsed into alternating kept and
// reduced groups (size-1 dimensions dropped).  The shapes models actually
// use — everything, [kept, reduced], [reduced, kept], [kept, reduced, kept] —
// get contiguous, vectorised loops; other patterns use a generic walk.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "kernel.h"

namespace weft_cpu {
namespace {

enum class ReduceOp { kSum, kMean };

// ---- Accumulation primitives.  In is the input element type, Acc the type
// sums are kept in: the float type itself, or an unsigned integer so that
// overflow wraps instead of being undefined. ----

template <typename In, typename Acc>
Acc SumRun(const In* x, int64_t n) {
  if constexpr (std::is_floating_point_v<In>) {
    return Eigen::Map<const Eigen::Array<In, Eigen::Dynamic, 1>>(x, n).sum();
  } else {
    Acc sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<Acc>(x[i]);
    return sum;
  }
}

template <typename In, typename Acc>
void CopyRun(const In* x, Acc* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<Acc>(x[i]);
}

template <typename In, typename Acc>
void AddRun(const In* x, Acc* acc, int64_t n) {
  if constexpr (std::is_floating_point_v<In>) {
    using Array = Eigen::Array<In, Eigen::Dynamic, 1>;
    Eigen::Map<Array>(acc, n) += Eigen::Map<const Array>(x, n);
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<Acc>(x[i]);
  }
}

// acc[0..kept) = sum over `rows` rows of x[row][0..kept), for the columns
// [begin, end).
template <typename In, typename Acc>
void SumColumns(const In* x, Acc* acc, int64_t rows, int64_t kept,
                int64_t begin, int64_t end) {
  CopyRun(x + begin, acc + begin, end - begin);
  for (int64_t r = 1; r < rows; ++r) {
    AddRun(x + r * kept + begin, acc + begin, end - begin);
  }
}

// The collapsed input: groups[i] elements, reduced or kept.
struct Groups {
  int32_t count = 0;
  int64_t size[WEFT_MAX_RANK];
  bool reduced[WEFT_MAX_RANK];
};

void CollapseGroups(const Tensor& x, const bool* reduced, Groups* groups) {
  for (int32_t i = 0; i < x.rank; ++i) {
    if (x.dims[i] == 1) continue;
    const int32_t n = groups->count;
    if (n > 0 && groups->reduced[n - 1] == reduced[i]) {
      groups->size[n - 1] *= x.dims[i];
    } else {
      groups->size[n] = x.dims[i];
      groups->reduced[n] = reduced[i];
      groups->count = n + 1;
    }
  }
}

// Any pattern: accumulate each input element into its output slot.  Output
// strides are 0 along reduced groups.  Single-threaded; only unusual axis
// sets come here.
template <typename In, typename Acc>
void SumGeneric(const In* x, Acc* acc, int64_t out_count,
                const Groups& groups) {
  int64_t out_strides[WEFT_MAX_RANK];
  int64_t stride = 1;
  for (int32_t g = groups.count - 1; g >= 0; --g) {
    out_strides[g] = groups.reduced[g] ? 0 : stride;
    if (!groups.reduced[g]) stride *= groups.size[g];
  }
  for (int64_t i = 0; i < out_count; ++i) acc[i] = 0;
  const int32_t last = groups.count - 1;
  const int64_t run = groups.size[last];
  const bool run_reduced = groups.reduced[last];
  int64_t index[WEFT_MAX_RANK] = {};
  int64_t out_offset = 0;
  for (const In* row = x;; row += run) {
    if (run_reduced) {
      acc[out_offset] += SumRun<In, Acc>(row, run);
    } else {
      AddRun(row, acc + out_offset, run);
    }
    int32_t g = last - 1;
    for (; g >= 0; --g) {
      out_offset += out_strides[g];
      if (++index[g] < groups.size[g]) break;
      out_offset -= out_strides[g] * groups.size[g];
      index[g] = 0;
    }
    if (g < 0) break;
  }
}

// Sums x (with no zero dimension) into acc[0..out_count).
template <typename In, typename Acc>
void SumInto(const weft_kernel_context* ctx, const In* x, Acc* acc,
             int64_t out_count, const Groups& groups) {
  const int32_t n = groups.count;
  const bool* r = groups.reduced;
  const int64_t* s = groups.size;
  if (n == 0 || (n == 1 && !r[0])) {  // nothing is actually reduced
    CopyRun(x, acc, out_count);
  } else if (n == 1) {  // everything
    acc[0] = SumRun<In, Acc>(x, s[0]);
  } else if (n == 2 && !r[0]) {  // [kept, reduced]: one sum per row
    const int64_t width = s[1];
    ParallelFor(ctx, s[0], width, static_cast<double>(width),
                [&](int64_t begin, int64_t end) {
                  for (int64_t k = begin; k < end; ++k) {
                    acc[k] = SumRun<In, Acc>(x + k * width, width);
                  }
                });
  } else if (n == 2) {  // [reduced, kept]: add rows together
    const int64_t rows = s[0], kept = s[1];
    ParallelFor(ctx, kept, rows, static_cast<double>(rows),
                [&](int64_t begin, int64_t end) {
                  SumColumns(x, acc, rows, kept, begin, end);
                });
  } else if (n == 3 && !r[0]) {  // [kept, reduced, kept]
    const int64_t rows = s[1], kept = s[2];
    ParallelFor(ctx, s[0], rows * kept, static_cast<double>(rows * kept),
                [&](int64_t begin, int64_t end) {
                  for (int64_t k = begin; k < end; ++k) {
                    SumColumns(x + k * rows * kept, acc + k * kept, rows, kept,
                               int64_t{0}, kept);
                  }
                });
  } else {
    SumGeneric(x, acc, out_count, groups);
  }
}

// ---- Kernel ----

struct Reduction {
  bool reduced[WEFT_MAX_RANK] = {};
  int64_t out_dims[WEFT_MAX_RANK];
  int32_t out_rank = 0;
  int64_t reduce_count = 1;  // elements summed into each output
};

weft_status* ParseReduction(const weft_kernel_context* ctx, const Tensor& x,
                            Reduction* red) {
  const int64_t* axes = nullptr;
  int32_t num_axes = 0;
  bool have_axes = false;
  if (weft_status* s =
          OptionalIntListAttr(ctx, "axes", &axes, &num_axes, &have_axes)) {
    return s;
  }
  bool keep_dims = false;
  if (weft_status* s = OptionalBoolAttr(ctx, "keep_dims", false, &keep_dims)) {
    return s;
  }
  if (!have_axes) {
    for (int32_t i = 0; i < x.rank; ++i) red->reduced[i] = true;
  }
  for (int32_t i = 0; i < num_axes; ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + x.rank : axes[i];
    if (axis < 0 || axis >= x.rank) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "axis %lld is out of range for an input of rank %d",
                       static_cast<long long>(axes[i]), x.rank);
    }
    if (red->reduced[axis]) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "axis %lld is listed twice in 'axes'",
                       static_cast<long long>(axis));
    }
    red->reduced[axis] = true;
  }
  for (int32_t i = 0; i < x.rank; ++i) {
    if (red->reduced[i]) {
      red->reduce_count *= x.dims[i];
      if (keep_dims) red->out_dims[red->out_rank++] = 1;
    } else {
      red->out_dims[red->out_rank++] = x.dims[i];
    }
  }
  return nullptr;
}

template <ReduceOp op, typename T>
weft_status* Compute(const weft_kernel_context* ctx, const Tensor& x,
                     const Tensor& y, const Reduction& red) {
  T* out = y.data<T>();
  const int64_t n = y.count;
  if (red.reduce_count == 0) {
    // Non-empty output over an empty reduction.
    if constexpr (std::is_integral_v<T>) {
      if (op == ReduceOp::kMean) {
        return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                         "Mean over zero elements is undefined for %s",
                         DtypeName(x.dtype));
      }
    }
    const T fill = op == ReduceOp::kMean
                       ? std::numeric_limits<T>::quiet_NaN()
                       : T(0);
    for (int64_t i = 0; i < n; ++i) out[i] = fill;
    return nullptr;
  }
  Groups groups;
  CollapseGroups(x, red.reduced, &groups);
  const T* in = x.data<T>();
  if constexpr (std::is_floating_point_v<T>) {
    SumInto<T, T>(ctx, in, out, n, groups);
    if (op == ReduceOp::kMean) {
      const T count = static_cast<T>(red.reduce_count);
      for (int64_t i = 0; i < n; ++i) out[i] /= count;
    }
  } else if (op == ReduceOp::kSum) {
    // Same-width unsigned: wraps like two's complement, and may alias the
    // signed output.
    using U = std::make_unsigned_t<T>;
    SumInto<T, U>(ctx, in, reinterpret_cast<U*>(out), n, groups);
  } else {
    // Mean sums in 64 bits so that int32 inputs cannot overflow on the way.
    std::vector<uint64_t> sums;
    uint64_t* acc;
    if constexpr (sizeof(T) == sizeof(uint64_t)) {
      acc = reinterpret_cast<uint64_t*>(out);
    } else {
      sums.resize(static_cast<size_t>(n));
      acc = sums.data();
    }
    SumInto<T, uint64_t>(ctx, in, acc, n, groups);
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<T>(static_cast<int64_t>(acc[i]) / red.reduce_count);
    }
  }
  return nullptr;
}

template <ReduceOp op>
weft_status* ReduceKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  Reduction red;
  if (weft_status* s = ParseReduction(ctx, x, &red)) return s;
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, red.out_dims,
                                      red.out_rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  switch (x.dtype) {
    case WEFT_FLOAT32: return Compute<op, float>(ctx, x, y, red);
    case WEFT_FLOAT64: return Compute<op, double>(ctx, x, y, red);
    case WEFT_INT32: return Compute<op, int32_t>(ctx, x, y, red);
    case WEFT_INT64: return Compute<op, int64_t>(ctx, x, y, red);
    default: return UnsupportedDtype(ctx, x.dtype);
  }
}

}  // namespace

weft_status* RegisterReduceKernels(const Registrar& registrar) {
  const auto types = {int32_t{WEFT_FLOAT32}, int32_t{WEFT_FLOAT64},
                      int32_t{WEFT_INT32}, int32_t{WEFT_INT64}};
  if (weft_status* s =
          registrar.Add("Sum", types, Guarded<ReduceKernel<ReduceOp::kSum>>)) {
    return s;
  }
  return registrar.Add("Mean", types, Guarded<ReduceKernel<ReduceOp::kMean>>);
}

}  // namespace weft_cpu
