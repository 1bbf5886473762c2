// Add, Sub, Mul, Div with NumPy broadcasting.
//
// Every layout reduces to runs of contiguous output elements whose inputs are
// either contiguous or one repeated value; the run kernels below are the only
// arithmetic.  Same-shape and scalar operands are one run; anything else goes
// through a collapsed-stride walk that calls the run kernel per row.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "broadcast.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

template <BinaryOp op, typename A, typename B>
auto ApplyFloat(const A& a, const B& b) {
  if constexpr (op == BinaryOp::kAdd) return a + b;
  if constexpr (op == BinaryOp::kSub) return a - b;
  if constexpr (op == BinaryOp::kMul) return a * b;
  if constexpr (op == BinaryOp::kDiv) return a / b;
}

// Integers wrap (two's complement) instead of overflowing, which is
// undefined for signed types: compute in the unsigned type of the same width.
// Division is the exception; its zero divisors are refused beforehand.
template <BinaryOp op, typename T>
inline T ApplyScalar(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return ApplyFloat<op>(a, b);
  } else {
    using U = std::make_unsigned_t<T>;
    if constexpr (op == BinaryOp::kAdd) return static_cast<T>(U(a) + U(b));
    if constexpr (op == BinaryOp::kSub) return static_cast<T>(U(a) - U(b));
    if constexpr (op == BinaryOp::kMul) return static_cast<T>(U(a) * U(b));
    // MIN / -1 overflows; negating in unsigned arithmetic wraps it to MIN.
    if constexpr (op == BinaryOp::kDiv) {
      return b == -1 ? static_cast<T>(U(0) - U(a)) : static_cast<T>(a / b);
    }
  }
}

// z[0..n) = x op y over one run; `layout` says which operand repeats.
template <BinaryOp op, typename T>
void RunKernel(const T* x, const T* y, T* z, int64_t n, RunLayout layout) {
  if constexpr (std::is_floating_point_v<T>) {
    // Below this, Eigen's alignment prologue and epilogue cost more than
    // the scalar loop; graphs of scalars live here.
    constexpr int64_t kTinyRun = 8;
    if (n > kTinyRun) {
      using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
      Eigen::Map<Array> out(z, n);
      switch (layout) {
        case RunLayout::kBoth:
          out = ApplyFloat<op>(Eigen::Map<const Array>(x, n),
                               Eigen::Map<const Array>(y, n));
          return;
        case RunLayout::kRepeatX:
          out = ApplyFloat<op>(*x, Eigen::Map<const Array>(y, n));
          return;
        case RunLayout::kRepeatY:
          out = ApplyFloat<op>(Eigen::Map<const Array>(x, n), *y);
          return;
      }
    }
  }
  switch (layout) {
    case RunLayout::kBoth:
      for (int64_t i = 0; i < n; ++i) z[i] = ApplyScalar<op>(x[i], y[i]);
      return;
    case RunLayout::kRepeatX: {
      const T a = *x;
      for (int64_t i = 0; i < n; ++i) z[i] = ApplyScalar<op>(a, y[i]);
      return;
    }
    case RunLayout::kRepeatY: {
      const T b = *y;
      for (int64_t i = 0; i < n; ++i) z[i] = ApplyScalar<op>(x[i], b);
      return;
    }
  }
}

// Rough cycles per element, for Eigen's block sizing.
template <BinaryOp op, typename T>
constexpr double CostPerElement() {
  if constexpr (op == BinaryOp::kDiv) return std::is_integral_v<T> ? 20 : 8;
  return 1;
}

template <BinaryOp op, typename T>
weft_status* Compute(weft_kernel_context* ctx, const Tensor& x,
                     const Tensor& y, const Tensor& z) {
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  T* zp = z.data<T>();
  if constexpr (op == BinaryOp::kDiv && std::is_integral_v<T>) {
    // Checked before writing anything, so a failed node leaves no partial
    // output behind.
    if (std::find(yp, yp + y.count, T(0)) != yp + y.count) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "integer division by zero (%s)", DtypeName(y.dtype));
    }
  }
  constexpr double kCost = CostPerElement<op, T>();

  RunLayout flat;
  if (x.count == z.count && y.count == z.count) {
    flat = RunLayout::kBoth;
  } else if (y.count == 1 && x.count == z.count) {
    flat = RunLayout::kRepeatY;
  } else if (x.count == 1 && y.count == z.count) {
    flat = RunLayout::kRepeatX;
  } else {
    BroadcastPlan plan;
    MakeBroadcastPlan(x, y, z, &plan);
    ParallelFor(ctx, z.count, 1, kCost, [&](int64_t begin, int64_t end) {
      WalkBroadcast(plan, begin, end,
                    [&](int64_t x_offset, int64_t y_offset, int64_t z_offset,
                        int64_t n) {
                      RunKernel<op, T>(xp + x_offset, yp + y_offset,
                                       zp + z_offset, n, plan.layout);
                    });
    });
    return nullptr;
  }
  // Tiny tensors (the common case) stay on this thread in one run: no pool,
  // no allocation.
  ParallelFor(ctx, z.count, 1, kCost, [&](int64_t begin, int64_t end) {
    RunKernel<op, T>(flat == RunLayout::kRepeatX ? xp : xp + begin,
                     flat == RunLayout::kRepeatY ? yp : yp + begin, zp + begin,
                     end - begin, flat);
  });
  return nullptr;
}

template <BinaryOp op>
weft_status* BinaryKernel(weft_kernel_context* ctx) {
  Tensor x, y;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &y)) return s;
  if (x.dtype != y.dtype) return DtypeMismatch(ctx, "input y", y.dtype, x.dtype);

  int64_t dims[WEFT_MAX_RANK];
  const int64_t* out_dims = x.dims;
  int32_t rank = x.rank;
  if (!SameShape(x, y)) {
    if (weft_status* s = BroadcastShape(ctx, x, y, dims, &rank)) return s;
    out_dims = dims;
  }
  Tensor z;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, out_dims, rank, &z)) {
    return s;
  }
  if (z.count == 0) return nullptr;
  switch (x.dtype) {
    case WEFT_FLOAT32: return Compute<op, float>(ctx, x, y, z);
    case WEFT_FLOAT64: return Compute<op, double>(ctx, x, y, z);
    case WEFT_INT32: return Compute<op, int32_t>(ctx, x, y, z);
    case WEFT_INT64: return Compute<op, int64_t>(ctx, x, y, z);
    default: return UnsupportedDtype(ctx, x.dtype);
  }
}

}  // namespace

weft_status* RegisterBinaryKernels(const Registrar& registrar) {
  const auto types = {int32_t{WEFT_FLOAT32}, int32_t{WEFT_FLOAT64},
                      int32_t{WEFT_INT32}, int32_t{WEFT_INT64}};
  struct Entry {
    const char* op;
    weft_kernel_compute_fn compute;
  };
  static constexpr Entry kEntries[] = {
      {"Add", Guarded<BinaryKernel<BinaryOp::kAdd>>},
      {"Sub", Guarded<BinaryKernel<BinaryOp::kSub>>},
      {"Mul", Guarded<BinaryKernel<BinaryOp::kMul>>},
      {"Div", Guarded<BinaryKernel<BinaryOp::kDiv>>},
  };
  for (const Entry& e : kEntries) {
    if (weft_status* s = registrar.Add(e.op, types, e.compute)) return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
