// The one driver behind every broadcasting binary kernel (arithmetic,
// comparisons, logical ops).  An op supplies only its scalar function; the
// driver reads the inputs, broadcasts, allocates, checks and walks.
//
// Every layout reduces to runs of contiguous output elements whose inputs are
// either contiguous or one repeated value; the run loop below is the only
// place the op's function is applied.  Same-shape and scalar operands are one
// run; anything else goes through the collapsed-stride walk of broadcast.h,
// which calls the run loop per row.
//
// An op is a struct deriving from BinaryOpDefaults that declares
//   static constexpr unsigned kDtypes;        // DtypeSet it runs on
//   static R Apply(T a, T b);                 // for every T in kDtypes
// and may override the defaults below.
#ifndef WEFT_PLUGINS_CPU_ELEMENTWISE_BINARY_H_
#define WEFT_PLUGINS_CPU_ELEMENTWISE_BINARY_H_

#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "broadcast.h"
#include "elementwise_types.h"
#include "kernel.h"

namespace weft_cpu {

struct BinaryOpDefaults {
  // Output bool (comparisons, logical ops) instead of the input dtype.
  static constexpr bool kBoolResult = false;
  // Float runs may use Eigen through `static auto Vector(a, b)`, an
  // expression valid on Eigen arrays and scalars alike.
  static constexpr bool kVector = false;
  // Rough cycles per element, for Eigen's block sizing.
  static constexpr double kCost = 1;
  // Refuses inputs the op has no value for (an integer zero divisor),
  // before anything is written.  `y` is non-empty.
  template <typename T>
  static weft_status* Check(const weft_kernel_context* /*ctx*/,
                            const Tensor& /*y*/) {
    return nullptr;
  }
};

// z[0..n) = Apply(x, y) over one run; `layout` says which operand repeats.
// Out of line so that BinaryKernel stays small when flattened.
template <typename Op, typename T, typename R>
__attribute__((noinline)) void BinaryRun(const T* x, const T* y, R* z,
                                         int64_t n, RunLayout layout) {
  if constexpr (Op::kVector && std::is_floating_point_v<T> &&
                std::is_same_v<T, R>) {
    // Below this, Eigen's alignment prologue and epilogue cost more than
    // the scalar loop; graphs of scalars live here.
    constexpr int64_t kTinyRun = 8;
    if (n > kTinyRun) {
      using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
      Eigen::Map<Array> out(z, n);
      switch (layout) {
        case RunLayout::kBoth:
          out = Op::Vector(Eigen::Map<const Array>(x, n),
                           Eigen::Map<const Array>(y, n));
          return;
        case RunLayout::kRepeatX:
          out = Op::Vector(*x, Eigen::Map<const Array>(y, n));
          return;
        case RunLayout::kRepeatY:
          out = Op::Vector(Eigen::Map<const Array>(x, n), *y);
          return;
      }
    }
  }
  switch (layout) {
    case RunLayout::kBoth:
      for (int64_t i = 0; i < n; ++i) z[i] = Op::Apply(x[i], y[i]);
      return;
    case RunLayout::kRepeatX: {
      const T a = *x;
      for (int64_t i = 0; i < n; ++i) z[i] = Op::Apply(a, y[i]);
      return;
    }
    case RunLayout::kRepeatY: {
      const T b = *y;
      for (int64_t i = 0; i < n; ++i) z[i] = Op::Apply(x[i], b);
      return;
    }
  }
}

// Runs spread over the intra-op threads: a flat layout, or the broadcast
// walk when `flat` is null.
template <typename Op, typename T, typename R>
__attribute__((noinline)) void BinaryParallel(
    const weft_kernel_context* ctx, const Tensor& x, const Tensor& y,
    const Tensor& z, const RunLayout* flat) {
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  R* zp = z.data<R>();
  if (flat != nullptr) {
    const RunLayout layout = *flat;
    ParallelFor(ctx, z.count, 1, Op::kCost, [&](int64_t begin, int64_t end) {
      BinaryRun<Op>(layout == RunLayout::kRepeatX ? xp : xp + begin,
                    layout == RunLayout::kRepeatY ? yp : yp + begin,
                    zp + begin, end - begin, layout);
    });
    return;
  }
  BroadcastPlan plan;
  MakeBroadcastPlan(x, y, z, &plan);
  ParallelFor(ctx, z.count, 1, Op::kCost, [&](int64_t begin, int64_t end) {
    WalkBroadcast(plan, begin, end,
                  [&](int64_t x_offset, int64_t y_offset, int64_t z_offset,
                      int64_t n) {
                    BinaryRun<Op>(xp + x_offset, yp + y_offset, zp + z_offset,
                                  n, plan.layout);
                  });
  });
}

template <typename Op, typename T>
weft_status* BinaryCompute(weft_kernel_context* ctx, const Tensor& x,
                           const Tensor& y, const Tensor& z) {
  using R = std::conditional_t<Op::kBoolResult, Bool, T>;
  if (weft_status* s = Op::template Check<T>(ctx, y)) return s;
  RunLayout flat;
  if (x.count == z.count && y.count == z.count) {
    flat = RunLayout::kBoth;
  } else if (y.count == 1 && x.count == z.count) {
    flat = RunLayout::kRepeatY;
  } else if (x.count == 1 && y.count == z.count) {
    flat = RunLayout::kRepeatX;
  } else {
    BinaryParallel<Op, T, R>(ctx, x, y, z, nullptr);
    return nullptr;
  }
  // A scalar (graphs of scalars: every count is 1 here) without a call.
  if (z.count == 1) {
    *z.data<R>() = Op::Apply(*x.data<T>(), *y.data<T>());
    return nullptr;
  }
  // Tiny tensors (the common case) are one run on this thread: what
  // ParallelFor would do below its threshold, without the detour.
  if (z.count < kParallelThreshold) {
    BinaryRun<Op>(x.data<T>(), y.data<T>(), z.data<R>(), z.count, flat);
    return nullptr;
  }
  BinaryParallel<Op, T, R>(ctx, x, y, z, &flat);
  return nullptr;
}

// The output's shape, after checking the inputs' dtypes agree: x's dims
// when x and y have one shape, else the broadcast into `dims`.
inline weft_status* BinaryOutputShape(const weft_kernel_context* ctx,
                                      const Tensor& x, const Tensor& y,
                                      int64_t* dims, const int64_t** out_dims,
                                      int32_t* rank) {
  if (x.dtype != y.dtype) return DtypeMismatch(ctx, "input y", y.dtype, x.dtype);
  *out_dims = x.dims;
  *rank = x.rank;
  if (SameShape(x, y)) return nullptr;
  *out_dims = dims;
  return BroadcastShape(ctx, x, y, dims, rank);
}

// Flattened so that ReadInput and AllocateOutput are inlined whatever the
// compiler's budget for the file: with ten ops times five dtypes it stops
// inlining them, and on a graph of scalars those calls are a large part of
// a kernel's cost (bench/executor_overhead measures it).  What must not be
// inlined here (the runs, the pool, the broadcast walk) is marked noinline.
template <typename Op>
__attribute__((flatten)) weft_status* BinaryKernel(weft_kernel_context* ctx) {
  Tensor x, y;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &y)) return s;
  int64_t dims[WEFT_MAX_RANK];
  const int64_t* out_dims;
  int32_t rank;
  if (weft_status* s = BinaryOutputShape(ctx, x, y, dims, &out_dims, &rank))
    return s;
  Tensor z;
  const int32_t out_dtype = Op::kBoolResult ? WEFT_BOOL : x.dtype;
  // Over an input of the output's shape where the host allows it (its last
  // reader, nothing else holding it): each output element is computed from
  // the same element of that input, and nothing fails once writing starts
  // (Op::Check runs before).
  int32_t over = -1;
  if (!Op::kBoolResult) {
    if (out_dims == x.dims) over = 0;
    else if (y.rank == rank && std::equal(out_dims, out_dims + rank, y.dims))
      over = 1;
  }
  if (weft_status* s =
          over >= 0
              ? AllocateOutputOver(ctx, over, 0, out_dtype, out_dims, rank, &z)
              : AllocateOutput(ctx, 0, out_dtype, out_dims, rank, &z)) {
    return s;
  }
  if (z.count == 0) return nullptr;
  return DispatchDtype<Op::kDtypes>(ctx, x.dtype, [&](auto tag) {
    return BinaryCompute<Op, decltype(tag)>(ctx, x, y, z);
  });
}

// BinaryKernel through compute_described (host 1.8): the host described x
// and y and made z (over x or y where it could); what is left is to check
// that z is the output BinaryKernel would have made, and compute.
template <typename Op>
__attribute__((flatten)) weft_status* BinaryDescribed(
    weft_kernel_context* ctx, const weft_kernel_tensor* inputs,
    int32_t num_inputs, const weft_kernel_tensor* outputs,
    int32_t num_outputs) {
  Tensor in[2], z;
  if (weft_status* s = ReadDescribed(ctx, inputs, num_inputs, outputs,
                                     num_outputs, in, 2, &z, 1))
    return s;
  const Tensor& x = in[0];
  const Tensor& y = in[1];
  int64_t dims[WEFT_MAX_RANK];
  const int64_t* out_dims;
  int32_t rank;
  if (weft_status* s = BinaryOutputShape(ctx, x, y, dims, &out_dims, &rank))
    return s;
  const int32_t out_dtype = Op::kBoolResult ? WEFT_BOOL : x.dtype;
  if (!IsOutput(z, out_dtype, out_dims, rank))
    return DescribedOutputMismatch(ctx, z, out_dtype, out_dims, rank);
  if (z.count == 0) return nullptr;
  return DispatchDtype<Op::kDtypes>(ctx, x.dtype, [&](auto tag) {
    return BinaryCompute<Op, decltype(tag)>(ctx, x, y, z);
  });
}

// What output 0 of a binary op may overwrite: either input (the host
// offers only one of the output's dtype and shape), unless the output is
// bool (a comparison's inputs are not bool).
template <typename Op>
constexpr uint32_t kBinaryOverwrites = Op::kBoolResult ? 0u : 3u;

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ELEMENTWISE_BINARY_H_
