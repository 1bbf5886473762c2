// Element types as the element-wise kernels see them: the bool storage type,
// wrapping integer arithmetic, and the switch from a runtime dtype to a C++
// type.
#ifndef WEFT_PLUGINS_CPU_ELEMENTWISE_TYPES_H_
#define WEFT_PLUGINS_CPU_ELEMENTWISE_TYPES_H_

#include <cstdint>
#include <type_traits>

#include "kernel.h"

namespace weft_cpu {

// Storage of a bool tensor: one byte, read as "non-zero" so that a stray
// byte value can never be undefined behaviour as a C++ bool would.  A type
// of its own (not uint8_t) so that kernels can tell the two dtypes apart at
// compile time.
struct Bool {
  uint8_t value;
};
static_assert(sizeof(Bool) == 1 && alignof(Bool) == 1, "bool is one byte");

inline bool Truth(Bool b) { return b.value != 0; }
inline Bool MakeBool(bool b) { return Bool{static_cast<uint8_t>(b ? 1 : 0)}; }

// The unsigned type integer arithmetic wraps in.  Never narrower than
// unsigned int: uint8_t or uint16_t operands would be promoted to (signed)
// int, where a product such as 65535 * 65535 overflows.
template <typename T>
using WrapType = decltype(std::make_unsigned_t<T>{} + 0u);

// a + b, a - b, a * b and -a modulo 2^bits, as two's complement hardware
// does, without the undefined behaviour of signed overflow.
template <typename T>
inline T WrappingAdd(T a, T b) {
  return static_cast<T>(WrapType<T>(a) + WrapType<T>(b));
}
template <typename T>
inline T WrappingSub(T a, T b) {
  return static_cast<T>(WrapType<T>(a) - WrapType<T>(b));
}
template <typename T>
inline T WrappingMul(T a, T b) {
  return static_cast<T>(WrapType<T>(a) * WrapType<T>(b));
}
template <typename T>
inline T WrappingNeg(T a) {
  return static_cast<T>(WrapType<T>(0) - WrapType<T>(a));
}

// Which dtypes a kernel template is instantiated for.
enum DtypeSet : unsigned {
  kFloatDtypes = 1u,    // float32, float64
  kIntegerDtypes = 2u,  // int32, int64, uint8
  kBoolDtype = 4u,
  kNumericDtypes = kFloatDtypes | kIntegerDtypes,
  // The other integers (int8, int16, uint16, uint32, uint64), for the ops
  // whose integer forms interchange formats use (ONNX's Max, Min, Mod):
  // a set of its own so that the common ops are not compiled for them.
  kOtherIntegerDtypes = 8u,
  kEveryNumericDtype = kNumericDtypes | kOtherIntegerDtypes,
};

// Calls fn(T{}) with the C++ type of `dtype` when it is in kSet, else
// returns UNIMPLEMENTED.  Only the types in kSet are instantiated, so a
// kernel body never has to compile for types it cannot handle.
template <unsigned kSet, typename Fn>
weft_status* DispatchDtype(const weft_kernel_context* ctx, int32_t dtype,
                           Fn&& fn) {
  switch (dtype) {
    case WEFT_FLOAT32:
      if constexpr ((kSet & kFloatDtypes) != 0) return fn(float{});
      break;
    case WEFT_FLOAT64:
      if constexpr ((kSet & kFloatDtypes) != 0) return fn(double{});
      break;
    case WEFT_INT32:
      if constexpr ((kSet & kIntegerDtypes) != 0) return fn(int32_t{});
      break;
    case WEFT_INT64:
      if constexpr ((kSet & kIntegerDtypes) != 0) return fn(int64_t{});
      break;
    case WEFT_UINT8:
      if constexpr ((kSet & kIntegerDtypes) != 0) return fn(uint8_t{});
      break;
    case WEFT_BOOL:
      if constexpr ((kSet & kBoolDtype) != 0) return fn(Bool{});
      break;
    case WEFT_INT8:
      if constexpr ((kSet & kOtherIntegerDtypes) != 0) return fn(int8_t{});
      break;
    case WEFT_INT16:
      if constexpr ((kSet & kOtherIntegerDtypes) != 0) return fn(int16_t{});
      break;
    case WEFT_UINT16:
      if constexpr ((kSet & kOtherIntegerDtypes) != 0) return fn(uint16_t{});
      break;
    case WEFT_UINT32:
      if constexpr ((kSet & kOtherIntegerDtypes) != 0) return fn(uint32_t{});
      break;
    case WEFT_UINT64:
      if constexpr ((kSet & kOtherIntegerDtypes) != 0) return fn(uint64_t{});
      break;
    default:
      break;
  }
  return UnsupportedDtype(ctx, dtype);
}

// Registers `compute` for `op` on exactly the dtypes of `set`, so that the
// host's placement and DispatchDtype agree.
inline weft_status* RegisterForDtypes(const Registrar& registrar,
                                      const char* op, unsigned set,
                                      weft_kernel_compute_fn compute,
                                      weft_kernel_described_fn described =
                                          nullptr,
                                      uint32_t output_overwrites = 0) {
  static constexpr struct {
    unsigned set;
    int32_t dtype;
  } kMembers[] = {
      {kFloatDtypes, WEFT_FLOAT32},         {kFloatDtypes, WEFT_FLOAT64},
      {kIntegerDtypes, WEFT_INT32},         {kIntegerDtypes, WEFT_INT64},
      {kIntegerDtypes, WEFT_UINT8},         {kBoolDtype, WEFT_BOOL},
      {kOtherIntegerDtypes, WEFT_INT8},     {kOtherIntegerDtypes, WEFT_INT16},
      {kOtherIntegerDtypes, WEFT_UINT16},   {kOtherIntegerDtypes, WEFT_UINT32},
      {kOtherIntegerDtypes, WEFT_UINT64},
  };
  int32_t dtypes[sizeof kMembers / sizeof kMembers[0]];
  int32_t n = 0;
  for (const auto& m : kMembers) {
    if ((set & m.set) != 0) dtypes[n++] = m.dtype;
  }
  if (n == 0) {
    return MakeStatus(WEFT_INTERNAL, "weft-cpu: no dtypes in set %u", set);
  }
  if (described != nullptr)
    return registrar.Add(op, dtypes, n, compute, described, output_overwrites);
  return registrar.Add(op, dtypes, n, compute);
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ELEMENTWISE_TYPES_H_
