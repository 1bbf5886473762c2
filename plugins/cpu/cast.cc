// Cast between every dtype Weft has: float32, float64, float16, bfloat16,
// the signed and unsigned integers of 8 to 64 bits, and bool.
//
// Semantics (runtime/ops/CONVENTIONS.md): float to integer truncates toward
// zero, with NaN and out-of-range values becoming 0 (a plain C++ conversion
// would be undefined); anything to bool is x != 0; integer to narrower
// integer wraps modulo 2^bits, as two's complement hardware does.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include <Eigen/Core>

#include "elementwise_types.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

// Converts through a few value types: float for the 16-bit floats (every
// half and bfloat16 is exactly a float), bool for Bool, the type itself
// otherwise.
inline float Widen(Eigen::half v) { return static_cast<float>(v); }
inline float Widen(Eigen::bfloat16 v) { return static_cast<float>(v); }
inline bool Widen(Bool v) { return Truth(v); }
template <typename T>
inline T Widen(T v) {
  return v;
}

template <typename T>
constexpr bool kIs16BitFloat = std::is_same_v<T, Eigen::half> ||
                               std::is_same_v<T, Eigen::bfloat16>;

template <typename Dst, typename V>
inline Dst Narrow(V v) {
  if constexpr (std::is_same_v<Dst, Bool>) {
    return MakeBool(v != V(0));
  } else if constexpr (kIs16BitFloat<Dst>) {
    return Dst(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<Dst> && std::is_floating_point_v<V>) {
    // Bounds are exact in double for every target here: min is 0 or -2^k,
    // max + 1 is 2^k.
    const double t = std::trunc(static_cast<double>(v));
    constexpr double kLow = static_cast<double>(std::numeric_limits<Dst>::min());
    constexpr double kHighExclusive =
        static_cast<double>(std::numeric_limits<Dst>::max()) + 1.0;
    // NaN fails both comparisons.
    return t >= kLow && t < kHighExclusive ? static_cast<Dst>(t) : Dst(0);
  } else {
    return static_cast<Dst>(v);
  }
}

template <typename Src, typename Dst>
void CastRun(const Src* x, Dst* y, int64_t n) {
  if constexpr (std::is_arithmetic_v<Src> && std::is_arithmetic_v<Dst> &&
                std::is_floating_point_v<Src> == std::is_floating_point_v<Dst>) {
    // Float to float, integer to integer: plain conversions that vectorise.
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Dst>(x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = Narrow<Dst>(Widen(x[i]));
  }
}

template <typename Src, typename Dst>
weft_status* CastTo(const weft_kernel_context* ctx, const Tensor& x,
                    const Tensor& y) {
  const Src* xp = x.data<Src>();
  Dst* yp = y.data<Dst>();
  ParallelFor(ctx, y.count, 1, 4, [&](int64_t begin, int64_t end) {
    CastRun(xp + begin, yp + begin, end - begin);
  });
  return nullptr;
}

template <typename Src>
weft_status* CastFrom(const weft_kernel_context* ctx, const Tensor& x,
                      const Tensor& y) {
  switch (y.dtype) {
    case WEFT_FLOAT32: return CastTo<Src, float>(ctx, x, y);
    case WEFT_FLOAT64: return CastTo<Src, double>(ctx, x, y);
    case WEFT_INT32: return CastTo<Src, int32_t>(ctx, x, y);
    case WEFT_INT64: return CastTo<Src, int64_t>(ctx, x, y);
    case WEFT_UINT8: return CastTo<Src, uint8_t>(ctx, x, y);
    case WEFT_INT8: return CastTo<Src, int8_t>(ctx, x, y);
    case WEFT_INT16: return CastTo<Src, int16_t>(ctx, x, y);
    case WEFT_UINT16: return CastTo<Src, uint16_t>(ctx, x, y);
    case WEFT_UINT32: return CastTo<Src, uint32_t>(ctx, x, y);
    case WEFT_UINT64: return CastTo<Src, uint64_t>(ctx, x, y);
    case WEFT_BOOL: return CastTo<Src, Bool>(ctx, x, y);
    case WEFT_FLOAT16: return CastTo<Src, Eigen::half>(ctx, x, y);
    case WEFT_BFLOAT16: return CastTo<Src, Eigen::bfloat16>(ctx, x, y);
    default: return UnsupportedDtype(ctx, y.dtype);
  }
}

// Either end of a Cast: what CastFrom and CastTo's switches cover.
constexpr std::initializer_list<int32_t> kCastable = {
    WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64,
    WEFT_UINT8,   WEFT_BOOL,    WEFT_FLOAT16, WEFT_BFLOAT16,
    WEFT_INT8,    WEFT_INT16,   WEFT_UINT16,  WEFT_UINT32, WEFT_UINT64};

bool Supported(int32_t dtype) {
  return std::find(kCastable.begin(), kCastable.end(), dtype) !=
         kCastable.end();
}

weft_status* CastKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  int32_t dst = WEFT_DTYPE_INVALID;
  if (weft_status* s = g_host->kernel_attr_dtype(ctx, "DstT", &dst)) return s;
  int32_t src = x.dtype;
  int32_t src_attr = WEFT_DTYPE_INVALID;
  weft_status* s = g_host->kernel_attr_dtype(ctx, "SrcT", &src_attr);
  if (s != nullptr) {
    if (StatusCode(s) != WEFT_NOT_FOUND) return s;
    DiscardStatus(s);  // the input's own dtype is authoritative
  } else if (src_attr != src) {
    return DtypeMismatch(ctx, "input x", src, src_attr);
  }
  if (!Supported(src)) return UnsupportedDtype(ctx, src);
  if (!Supported(dst)) return UnsupportedDtype(ctx, dst);
  if (src == dst) return g_host->kernel_forward_input(ctx, 0, 0, x.dims, x.rank);

  Tensor y;
  if (weft_status* st = AllocateOutput(ctx, 0, dst, x.dims, x.rank, &y)) {
    return st;
  }
  if (y.count == 0) return nullptr;
  switch (src) {
    case WEFT_FLOAT32: return CastFrom<float>(ctx, x, y);
    case WEFT_FLOAT64: return CastFrom<double>(ctx, x, y);
    case WEFT_INT32: return CastFrom<int32_t>(ctx, x, y);
    case WEFT_INT64: return CastFrom<int64_t>(ctx, x, y);
    case WEFT_UINT8: return CastFrom<uint8_t>(ctx, x, y);
    case WEFT_INT8: return CastFrom<int8_t>(ctx, x, y);
    case WEFT_INT16: return CastFrom<int16_t>(ctx, x, y);
    case WEFT_UINT16: return CastFrom<uint16_t>(ctx, x, y);
    case WEFT_UINT32: return CastFrom<uint32_t>(ctx, x, y);
    case WEFT_UINT64: return CastFrom<uint64_t>(ctx, x, y);
    case WEFT_BOOL: return CastFrom<Bool>(ctx, x, y);
    case WEFT_FLOAT16: return CastFrom<Eigen::half>(ctx, x, y);
    case WEFT_BFLOAT16: return CastFrom<Eigen::bfloat16>(ctx, x, y);
    default: return UnsupportedDtype(ctx, src);
  }
}

}  // namespace

weft_status* RegisterCastKernels(const Registrar& registrar) {
  // Both ends are constrained, so a Cast to a dtype outside the list finds
  // no kernel here at plan time instead of failing when it runs.
  return registrar.Add("Cast", "SrcT", kCastable, "DstT", kCastable,
                       Guarded<CastKernel>);
}

}  // namespace weft_cpu
