// Reductions over a set of axes (Sum, Mean, Prod, Max, Min) and along one
// axis (ArgMax, ArgMin).
//
// The input's dimensions are first collapsed into alternating kept and
// reduced groups (size-1 dimensions dropped).  The shapes models actually
// use — everything, [kept, reduced], [reduced, kept], [kept, reduced, kept] —
// get contiguous, vectorised loops; other patterns use a generic walk.
//
// NaN: Max and Min return NaN when any reduced element is NaN (as NumPy
// does), and ArgMax and ArgMin return the index of the first NaN, so that
// x[argmax] is what Max returns.  Integer Sum and Prod wrap (two's
// complement) instead of overflowing into undefined behaviour.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "kernel.h"
#include "nan_order.h"

namespace weft_cpu {
namespace {

enum class ReduceOp { kSum, kMean, kProd, kMax, kMin };

template <typename T>
using ArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// ---- Reducers.  In is the input element type, Acc the type results are
// kept in: the float type itself, or for Sum and Prod an unsigned integer,
// so that overflow wraps instead of being undefined.  Each gives the
// identity, the reduction of a contiguous run (n >= 1), and an element-wise
// fold acc[i] = f(acc[i], x[i]). ----

template <typename Acc>
Acc WrapMul(Acc a, Acc b) {
  // uint8 operands would be promoted to (signed) int; multiply as unsigned.
  using Wide = std::common_type_t<Acc, unsigned>;
  return static_cast<Acc>(static_cast<Wide>(a) * static_cast<Wide>(b));
}

template <ReduceOp op, typename In, typename Acc>
struct Reducer;

template <typename In, typename Acc>
struct Reducer<ReduceOp::kSum, In, Acc> {
  static Acc Identity() { return Acc(0); }
  static Acc Merge(Acc a, Acc b) { return a + b; }
  static Acc Run(const In* x, int64_t n) {
    if constexpr (std::is_floating_point_v<In>) {
      return ArrayMap<In>(x, n).sum();
    } else {
      Acc sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += static_cast<Acc>(x[i]);
      return sum;
    }
  }
  static void Fold(const In* x, Acc* acc, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<Acc>(x[i]);
  }
};

template <typename In, typename Acc>
struct Reducer<ReduceOp::kProd, In, Acc> {
  static Acc Identity() { return Acc(1); }
  static Acc Merge(Acc a, Acc b) { return WrapMul(a, b); }
  static Acc Run(const In* x, int64_t n) {
    if constexpr (std::is_floating_point_v<In>) {
      return ArrayMap<In>(x, n).prod();
    } else {
      Acc prod = 1;
      for (int64_t i = 0; i < n; ++i) prod = WrapMul(prod, static_cast<Acc>(x[i]));
      return prod;
    }
  }
  static void Fold(const In* x, Acc* acc, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = WrapMul(acc[i], static_cast<Acc>(x[i]));
  }
};

// Max (kMax) and Min share everything but the comparison.
template <bool kMax, typename T>
struct Extreme {
  static T Identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return kMax ? -std::numeric_limits<T>::infinity()
                  : std::numeric_limits<T>::infinity();
    } else {
      return kMax ? std::numeric_limits<T>::lowest()
                  : std::numeric_limits<T>::max();
    }
  }
  // b replaces a when it is further out, or NaN (a NaN already held stays,
  // since nothing compares beyond it).
  static T Merge(T a, T b) {
    const bool beyond = kMax ? b > a : b < a;
    return beyond || b != b ? b : a;
  }
  static T Run(const T* x, int64_t n) {
    if constexpr (std::is_floating_point_v<T>) {
      return kMax ? ArrayMap<T>(x, n).template maxCoeff<Eigen::PropagateNaN>()
                  : ArrayMap<T>(x, n).template minCoeff<Eigen::PropagateNaN>();
    } else {
      return kMax ? ArrayMap<T>(x, n).maxCoeff() : ArrayMap<T>(x, n).minCoeff();
    }
  }
  static void Fold(const T* x, T* acc, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = Merge(acc[i], x[i]);
  }
};

template <typename T>
struct Reducer<ReduceOp::kMax, T, T> : Extreme<true, T> {};
template <typename T>
struct Reducer<ReduceOp::kMin, T, T> : Extreme<false, T> {};

// acc[begin..end) = reduction over `rows` rows of x[row][begin..end).
template <typename R, typename In, typename Acc>
void ReduceColumns(const In* x, Acc* acc, int64_t rows, int64_t kept,
                   int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) acc[i] = static_cast<Acc>(x[i]);
  for (int64_t r = 1; r < rows; ++r) {
    R::Fold(x + r * kept + begin, acc + begin, end - begin);
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

// Any pattern: fold each input run into its output slots.  Output strides
// are 0 along reduced groups.  Single-threaded; only unusual axis sets come
// here.
template <typename R, typename In, typename Acc>
void ReduceGeneric(const In* x, Acc* acc, int64_t out_count,
                   const Groups& groups) {
  int64_t out_strides[WEFT_MAX_RANK];
  int64_t stride = 1;
  for (int32_t g = groups.count - 1; g >= 0; --g) {
    out_strides[g] = groups.reduced[g] ? 0 : stride;
    if (!groups.reduced[g]) stride *= groups.size[g];
  }
  for (int64_t i = 0; i < out_count; ++i) acc[i] = R::Identity();
  const int32_t last = groups.count - 1;
  const int64_t run = groups.size[last];
  const bool run_reduced = groups.reduced[last];
  int64_t index[WEFT_MAX_RANK] = {};
  int64_t out_offset = 0;
  for (const In* row = x;; row += run) {
    if (run_reduced) {
      acc[out_offset] = R::Merge(acc[out_offset], R::Run(row, run));
    } else {
      R::Fold(row, acc + out_offset, run);
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

// Reduces x (with no zero dimension) into acc[0..out_count).
template <typename R, typename In, typename Acc>
void ReduceInto(const weft_kernel_context* ctx, const In* x, Acc* acc,
                int64_t out_count, const Groups& groups) {
  const int32_t n = groups.count;
  const bool* r = groups.reduced;
  const int64_t* s = groups.size;
  if (n == 0 || (n == 1 && !r[0])) {  // nothing is actually reduced
    for (int64_t i = 0; i < out_count; ++i) acc[i] = static_cast<Acc>(x[i]);
  } else if (n == 1) {  // everything
    acc[0] = R::Run(x, s[0]);
  } else if (n == 2 && !r[0]) {  // [kept, reduced]: one run per row
    const int64_t width = s[1];
    ParallelFor(ctx, s[0], width, static_cast<double>(width),
                [&](int64_t begin, int64_t end) {
                  for (int64_t k = begin; k < end; ++k) {
                    acc[k] = R::Run(x + k * width, width);
                  }
                });
  } else if (n == 2) {  // [reduced, kept]: fold rows together
    const int64_t rows = s[0], kept = s[1];
    ParallelFor(ctx, kept, rows, static_cast<double>(rows),
                [&](int64_t begin, int64_t end) {
                  ReduceColumns<R>(x, acc, rows, kept, begin, end);
                });
  } else if (n == 3 && !r[0]) {  // [kept, reduced, kept]
    const int64_t rows = s[1], kept = s[2];
    ParallelFor(ctx, s[0], rows * kept, static_cast<double>(rows * kept),
                [&](int64_t begin, int64_t end) {
                  for (int64_t k = begin; k < end; ++k) {
                    ReduceColumns<R>(x + k * rows * kept, acc + k * kept,
                                     rows, kept, int64_t{0}, kept);
                  }
                });
  } else {
    ReduceGeneric<R>(x, acc, out_count, groups);
  }
}

// ---- Sum, Mean, Prod, Max, Min ----

struct Reduction {
  bool reduced[WEFT_MAX_RANK] = {};
  int64_t out_dims[WEFT_MAX_RANK];
  int32_t out_rank = 0;
  int64_t reduce_count = 1;  // elements reduced into each output
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

// The value of a non-empty output over an empty reduction, or an error.
template <ReduceOp op, typename T>
weft_status* FillEmpty(const weft_kernel_context* ctx, const Tensor& x,
                       T* out, int64_t n) {
  T fill = T(0);
  if (op == ReduceOp::kProd) {
    fill = T(1);
  } else if (op == ReduceOp::kMax || op == ReduceOp::kMin ||
             (op == ReduceOp::kMean && std::is_integral_v<T>)) {
    char shape[128];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "%s over zero elements has no value (input %s %s)",
                     g_host->kernel_op(ctx), DtypeName(x.dtype),
                     FormatShape(x.dims, x.rank, shape, sizeof shape));
  } else if (op == ReduceOp::kMean) {
    fill = std::numeric_limits<T>::quiet_NaN();
  }
  std::fill(out, out + n, fill);
  return nullptr;
}

template <ReduceOp op, typename T>
weft_status* Compute(const weft_kernel_context* ctx, const Tensor& x,
                     const Tensor& y, const Reduction& red) {
  T* out = y.data<T>();
  const int64_t n = y.count;
  if (red.reduce_count == 0) return FillEmpty<op, T>(ctx, x, out, n);
  Groups groups;
  CollapseGroups(x, red.reduced, &groups);
  const T* in = x.data<T>();
  constexpr ReduceOp kernel = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  if constexpr (std::is_floating_point_v<T> || kernel == ReduceOp::kMax ||
                kernel == ReduceOp::kMin) {
    ReduceInto<Reducer<kernel, T, T>>(ctx, in, out, n, groups);
    if (op == ReduceOp::kMean) {
      const T count = static_cast<T>(red.reduce_count);
      for (int64_t i = 0; i < n; ++i) out[i] /= count;
    }
  } else if (op != ReduceOp::kMean) {
    // Same-width unsigned: wraps like two's complement, and may alias the
    // signed output.
    using U = std::make_unsigned_t<T>;
    ReduceInto<Reducer<kernel, T, U>>(ctx, in, reinterpret_cast<U*>(out), n,
                                      groups);
  } else {
    // Integer Mean sums in 64 bits so that narrow inputs cannot overflow on
    // the way, and divides truncating toward zero.
    std::vector<uint64_t> sums;
    uint64_t* acc;
    if constexpr (sizeof(T) == sizeof(uint64_t)) {
      acc = reinterpret_cast<uint64_t*>(out);
    } else {
      sums.resize(static_cast<size_t>(n));
      acc = sums.data();
    }
    ReduceInto<Reducer<ReduceOp::kSum, T, uint64_t>>(ctx, in, acc, n, groups);
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
    case WEFT_UINT8: return Compute<op, uint8_t>(ctx, x, y, red);
    default: return UnsupportedDtype(ctx, x.dtype);
  }
}

// ---- ArgMax, ArgMin ----

// Columns handled together when the axis is not the last: enough to stream
// whole cache lines per row, few enough for the running bests to live on
// the stack.
constexpr int64_t kArgColumns = 256;

// x is [outer, length, inner]; out is [outer, inner].
template <bool kMax, typename T, typename Out>
void ArgReduce(const weft_kernel_context* ctx, const T* x, Out* out,
               int64_t outer, int64_t length, int64_t inner) {
  if (inner == 1) {
    ParallelFor(ctx, outer, length, 2.0 * static_cast<double>(length),
                [&](int64_t begin, int64_t end) {
                  for (int64_t o = begin; o < end; ++o) {
                    const T* row = x + o * length;
                    int64_t best = 0;
                    for (int64_t j = 1; j < length; ++j) {
                      if (Beats<kMax>(row[j], row[best])) best = j;
                    }
                    out[o] = static_cast<Out>(best);
                  }
                });
    return;
  }
  const int64_t blocks = (inner + kArgColumns - 1) / kArgColumns;
  const int64_t per_item = length * std::min(inner, kArgColumns);
  ParallelFor(
      ctx, outer * blocks, per_item, 2.0 * static_cast<double>(per_item),
      [&](int64_t begin, int64_t end) {
        T best[kArgColumns];
        for (int64_t item = begin; item < end; ++item) {
          const int64_t o = item / blocks;
          const int64_t c0 = (item % blocks) * kArgColumns;
          const int64_t width = std::min(kArgColumns, inner - c0);
          const T* base = x + o * length * inner + c0;
          Out* dst = out + o * inner + c0;
          for (int64_t c = 0; c < width; ++c) {
            best[c] = base[c];
            dst[c] = 0;
          }
          for (int64_t j = 1; j < length; ++j) {
            const T* row = base + j * inner;
            for (int64_t c = 0; c < width; ++c) {
              if (Beats<kMax>(row[c], best[c])) {
                best[c] = row[c];
                dst[c] = static_cast<Out>(j);
              }
            }
          }
        }
      });
}

template <bool kMax, typename T>
void ArgDispatch(const weft_kernel_context* ctx, const Tensor& x,
                 const Tensor& y, int64_t outer, int64_t length,
                 int64_t inner) {
  if (y.dtype == WEFT_INT32) {
    ArgReduce<kMax>(ctx, x.data<T>(), y.data<int32_t>(), outer, length, inner);
  } else {
    ArgReduce<kMax>(ctx, x.data<T>(), y.data<int64_t>(), outer, length, inner);
  }
}

template <bool kMax>
weft_status* ArgKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  int64_t axis = 0;
  weft_status* status = g_host->kernel_attr_int(ctx, "axis", &axis);
  if (StatusCode(status) == WEFT_NOT_FOUND) {
    DiscardStatus(status);
  } else if (status != nullptr) {
    return status;
  }
  int32_t out_type = WEFT_INT64;
  status = g_host->kernel_attr_dtype(ctx, "output_type", &out_type);
  if (StatusCode(status) == WEFT_NOT_FOUND) {
    DiscardStatus(status);
  } else if (status != nullptr) {
    return status;
  }
  char shape[128];
  if (out_type != WEFT_INT32 && out_type != WEFT_INT64) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "output_type must be int32 or int64, got %s",
                     DtypeName(out_type));
  }
  const int64_t a = axis < 0 ? axis + x.rank : axis;
  if (a < 0 || a >= x.rank) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "axis %lld is out of range for input shape %s",
                     static_cast<long long>(axis),
                     FormatShape(x.dims, x.rank, shape, sizeof shape));
  }
  const int64_t length = x.dims[a];
  if (length == 0 ||
      (out_type == WEFT_INT32 && length > std::numeric_limits<int32_t>::max())) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "axis %lld of input shape %s %s",
                     static_cast<long long>(axis),
                     FormatShape(x.dims, x.rank, shape, sizeof shape),
                     length == 0 ? "is empty: there is no index to return"
                                 : "is too long for output_type int32");
  }
  int64_t dims[WEFT_MAX_RANK];
  int64_t outer = 1, inner = 1;
  for (int32_t i = 0; i < x.rank; ++i) {
    if (i < a) outer *= x.dims[i];
    if (i > a) inner *= x.dims[i];
    if (i != a) dims[i < a ? i : i - 1] = x.dims[i];
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, out_type, dims, x.rank - 1, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  switch (x.dtype) {
    case WEFT_FLOAT32: ArgDispatch<kMax, float>(ctx, x, y, outer, length, inner); break;
    case WEFT_FLOAT64: ArgDispatch<kMax, double>(ctx, x, y, outer, length, inner); break;
    case WEFT_INT32: ArgDispatch<kMax, int32_t>(ctx, x, y, outer, length, inner); break;
    case WEFT_INT64: ArgDispatch<kMax, int64_t>(ctx, x, y, outer, length, inner); break;
    case WEFT_UINT8: ArgDispatch<kMax, uint8_t>(ctx, x, y, outer, length, inner); break;
    default: return UnsupportedDtype(ctx, x.dtype);
  }
  return nullptr;
}

}  // namespace

weft_status* RegisterReduceKernels(const Registrar& registrar) {
  const auto types = {int32_t{WEFT_FLOAT32}, int32_t{WEFT_FLOAT64},
                      int32_t{WEFT_INT32}, int32_t{WEFT_INT64},
                      int32_t{WEFT_UINT8}};
  struct Entry {
    const char* op;
    weft_kernel_compute_fn compute;
  };
  static constexpr Entry kKernels[] = {
      {"Sum", Guarded<ReduceKernel<ReduceOp::kSum>>},
      {"Mean", Guarded<ReduceKernel<ReduceOp::kMean>>},
      {"Prod", Guarded<ReduceKernel<ReduceOp::kProd>>},
      {"Max", Guarded<ReduceKernel<ReduceOp::kMax>>},
      {"Min", Guarded<ReduceKernel<ReduceOp::kMin>>},
      {"ArgMax", Guarded<ArgKernel<true>>},
      {"ArgMin", Guarded<ArgKernel<false>>},
  };
  for (const Entry& e : kKernels) {
    if (weft_status* s = registrar.Add(e.op, types, e.compute)) return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
