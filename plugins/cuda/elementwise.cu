// Element-wise kernels: Add, Sub, Mul, Div, RealDiv, FloorDiv, FloorMod,
// Pow, Maximum, Minimum, the comparisons and LogicalAnd/Or with NumPy
// broadcasting; LogicalNot; Select (three-way broadcast); Neg, Abs, Sign,
// Square, Relu, Exp, Log, Sigmoid, Tanh, Sqrt and Rsqrt; Identity; Cast.
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "elementwise_ops.h"
#include "error_slot.h"
#include "grid_loop.h"
#include "kernel_call.h"

namespace weft_cuda {
namespace {

const int32_t kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};

// ---- Binary ops ----

// In BinaryOp's order.
const char* const kBinaryNames[] = {
    "Add",     "Sub",          "Mul",     "Div",       "RealDiv",
    "FloorDiv", "FloorMod",    "Pow",     "Maximum",   "Minimum",
    "Greater", "GreaterEqual", "Less",    "LessEqual", "Equal",
    "NotEqual", "LogicalAnd",  "LogicalOr"};
static_assert(sizeof(kBinaryNames) / sizeof(kBinaryNames[0]) ==
                  kBinaryOpCount,
              "a name per binary op");

// The dtypes each binary op has a kernel for: the CPU plugin's.
const int32_t kBasicTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                               WEFT_INT64, WEFT_UINT8};
const int32_t kEveryNumericType[] = {
    WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64,  WEFT_UINT8,
    WEFT_INT8,    WEFT_INT16,   WEFT_UINT16, WEFT_UINT32, WEFT_UINT64};
const int32_t kBasicAndBoolTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                      WEFT_INT64,   WEFT_UINT8,   WEFT_BOOL};
const int32_t kBoolType[] = {WEFT_BOOL};

struct TypeList {
  const int32_t* dtypes;
  int32_t count;
};

template <size_t N>
constexpr TypeList List(const int32_t (&dtypes)[N]) {
  return {dtypes, static_cast<int32_t>(N)};
}

TypeList BinaryTypes(int op) {
  switch (op) {
    case kRealDiv: return List(kFloatTypes);
    case kFloorDiv:
    case kFloorMod:
    case kMaximum:
    case kMinimum: return List(kEveryNumericType);
    case kEqual:
    case kNotEqual: return List(kBasicAndBoolTypes);
    case kLogicalAnd:
    case kLogicalOr: return List(kBoolType);
    default: return List(kBasicTypes);
  }
}

bool Registered(int op, int32_t dtype) {
  const TypeList list = BinaryTypes(op);
  for (int32_t i = 0; i < list.count; ++i) {
    if (list.dtypes[i] == dtype) return true;
  }
  return false;
}

// Whether an op has a kernel for T: keeps the other pairs from being
// instantiated at all.
template <int Op, typename T>
constexpr bool kHasKernel =
    std::is_same<T, BoolByte>::value
        ? (Op == kEqual || Op == kNotEqual || Op == kLogicalAnd ||
           Op == kLogicalOr)
        : (Op != kLogicalAnd && Op != kLogicalOr &&
           (Op != kRealDiv || std::is_floating_point<T>::value));

// Same-shape operands, or one of them a single element (step 0).
template <int Op, typename T>
__global__ void BinaryLinearKernel(const T* x, int64_t x_step, const T* y,
                                   int64_t y_step, BinaryResult<Op, T>* out,
                                   int64_t count, DivisionCheck check) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = ApplyBinary<Op>(x[i * x_step], y[i * y_step], check);
  }
}

template <int Op, typename T>
__global__ void BinaryBroadcastKernel(
    const T* x, const T* y, BinaryResult<Op, T>* out, int64_t count,
    // Read in place from parameter space instead of copied per thread.
    const __grid_constant__ BroadcastLayout layout, DivisionCheck check) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    int64_t x_offset, y_offset;
    BroadcastOffsets(layout, i, &x_offset, &y_offset);
    out[i] = ApplyBinary<Op>(x[x_offset], y[y_offset], check);
  }
}

struct BinaryArgs {
  const void* x;
  const void* y;
  void* out;
  int64_t count;
  BroadcastLayout layout;
  DivisionCheck check;
};

template <int Op, typename T>
weft_status* LaunchBinary(const KernelCall& call, const BinaryArgs& args) {
  const T* tx = static_cast<const T*>(args.x);
  const T* ty = static_cast<const T*>(args.y);
  auto* tout = static_cast<BinaryResult<Op, T>*>(args.out);
  const BroadcastLayout& layout = args.layout;
  const int64_t count = args.count;
  if (layout.rank <= 1) {
    const int64_t x_step = layout.rank == 1 ? layout.x_strides[0] : 0;
    const int64_t y_step = layout.rank == 1 ? layout.y_strides[0] : 0;
    BinaryLinearKernel<Op, T>
        <<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
            tx, x_step, ty, y_step, tout, count, args.check);
  } else {
    BinaryBroadcastKernel<Op, T>
        <<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
            tx, ty, tout, count, layout, args.check);
  }
  return call.CheckLaunch(kBinaryNames[Op]);
}

template <int Op, typename T>
weft_status* LaunchIfKernel(const KernelCall& call, int32_t dtype,
                            const BinaryArgs& args) {
  if constexpr (kHasKernel<Op, T>) {
    return LaunchBinary<Op, T>(call, args);
  } else {
    return call.UnsupportedDtype(dtype);
  }
}

template <int Op>
weft_status* LaunchBinaryForDtype(const KernelCall& call, int32_t dtype,
                                  const BinaryArgs& args) {
  switch (dtype) {
    case WEFT_FLOAT32: return LaunchIfKernel<Op, float>(call, dtype, args);
    case WEFT_FLOAT64: return LaunchIfKernel<Op, double>(call, dtype, args);
    case WEFT_INT32: return LaunchIfKernel<Op, int32_t>(call, dtype, args);
    case WEFT_INT64: return LaunchIfKernel<Op, int64_t>(call, dtype, args);
    case WEFT_UINT8: return LaunchIfKernel<Op, uint8_t>(call, dtype, args);
    case WEFT_INT8: return LaunchIfKernel<Op, int8_t>(call, dtype, args);
    case WEFT_INT16: return LaunchIfKernel<Op, int16_t>(call, dtype, args);
    case WEFT_UINT16: return LaunchIfKernel<Op, uint16_t>(call, dtype, args);
    case WEFT_UINT32: return LaunchIfKernel<Op, uint32_t>(call, dtype, args);
    case WEFT_UINT64: return LaunchIfKernel<Op, uint64_t>(call, dtype, args);
    case WEFT_BOOL: return LaunchIfKernel<Op, BoolByte>(call, dtype, args);
    default: return call.UnsupportedDtype(dtype);
  }
}

// The launch for runtime `op`: one instantiation per BinaryOp.
template <int Op = 0>
weft_status* LaunchBinaryOp(int op, const KernelCall& call, int32_t dtype,
                            const BinaryArgs& args) {
  if (op == Op) return LaunchBinaryForDtype<Op>(call, dtype, args);
  if constexpr (Op + 1 < kBinaryOpCount) {
    return LaunchBinaryOp<Op + 1>(op, call, dtype, args);
  } else {
    return call.UnsupportedDtype(dtype);
  }
}

// "[2, 3, 1]", for messages.
void FormatShape(const weft_kernel_tensor& tensor, char* text, size_t size) {
  size_t used = 0;
  used += std::snprintf(text + used, size - used, "[");
  for (int32_t i = 0; i < tensor.rank && used < size; ++i) {
    used += std::snprintf(text + used, size - used, i ? ", %lld" : "%lld",
                          static_cast<long long>(tensor.dims[i]));
  }
  if (used < size) std::snprintf(text + used, size - used, "]");
}

// The NumPy broadcast of `count` operands' shapes into `out_dims` (rank
// `rank`, the largest of theirs); INVALID_ARGUMENT naming the first pair
// that does not broadcast.
weft_status* BroadcastShapes(const KernelCall& call,
                             const weft_kernel_tensor* const* operands,
                             int count, int32_t rank, int64_t* out_dims) {
  for (int32_t d = 0; d < rank; ++d) out_dims[d] = 1;
  for (int k = 0; k < count; ++k) {
    for (int32_t d = 0; d < rank; ++d) {
      const int64_t size = AlignedDim(*operands[k], rank, d);
      if (size == 1) continue;
      if (out_dims[d] != 1 && out_dims[d] != size) {
        char a_text[256], b_text[256];
        // The earlier operand that set this dimension.
        int j = 0;
        while (AlignedDim(*operands[j], rank, d) != out_dims[d]) ++j;
        FormatShape(*operands[j], a_text, sizeof(a_text));
        FormatShape(*operands[k], b_text, sizeof(b_text));
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "shapes %s and %s do not broadcast", a_text,
                          b_text);
      }
      out_dims[d] = size;
    }
  }
  return nullptr;
}

weft_status* TooManyGroups(const KernelCall& call) {
  return call.Error(WEFT_UNIMPLEMENTED,
                    "broadcasting needs more than %d alternating dimension "
                    "groups",
                    kMaxBroadcastRank);
}

bool IsSignedInteger(int32_t dtype) {
  return dtype == WEFT_INT32 || dtype == WEFT_INT64 || dtype == WEFT_INT8 ||
         dtype == WEFT_INT16;
}

// What the device reports for an input the op has no value for: integer
// division by zero, an integer Pow's negative exponent.  {NULL, 0} when
// the op cannot fail on this dtype.
DivisionCheck FailureCheck(const KernelCall& call, int op, int32_t dtype) {
  const bool integer = !IsFloat(dtype) && dtype != WEFT_BOOL;
  ErrorSlot* errors = call.plugin_stream()->errors.get();
  if (integer && (op == kDiv || op == kFloorDiv || op == kFloorMod)) {
    return {errors->device_word(),
            errors->RegisterLaunch(call.DivisionByZeroDescription())};
  }
  if (op == kPow && IsSignedInteger(dtype)) {
    return {errors->device_word(),
            errors->RegisterLaunch(call.NodeDescription(
                "integer Pow with a negative exponent"))};
  }
  return {nullptr, 0};
}

weft_status* BinaryCompute(void* kernel_arg, weft_kernel_context* ctx) {
  const int op = static_cast<int>(reinterpret_cast<intptr_t>(kernel_arg));
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor x, y;
    if ((status = call.Input(0, &x)) != nullptr) return status;
    if ((status = call.Input(1, &y)) != nullptr) return status;
    if (x.dtype != y.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "x is %s but y is %s",
                        DtypeName(x.dtype), DtypeName(y.dtype));
    }
    // A host older than 1.2 ignores the T constraint.
    if (!Registered(op, x.dtype)) return call.UnsupportedDtype(x.dtype);
    const int32_t rank = x.rank > y.rank ? x.rank : y.rank;
    DimBuffer out_dims(rank);
    const weft_kernel_tensor* operands[2] = {&x, &y};
    status = BroadcastShapes(call, operands, 2, rank, out_dims.data());
    if (status != nullptr) return status;
    weft_kernel_tensor out;
    const int32_t out_dtype = IsBoolResult(op) ? WEFT_BOOL : x.dtype;
    if ((status = call.AllocateOutput(0, out_dtype, out_dims.data(), rank,
                                      &out)) != nullptr) {
      return status;
    }
    if (out.element_count == 0) return nullptr;
    BinaryArgs args{TensorData(x), TensorData(y), TensorData(out),
                    out.element_count, BroadcastLayout{}, {nullptr, 0}};
    if (!CoalesceBroadcast(x, y, out_dims.data(), rank, &args.layout)) {
      return TooManyGroups(call);
    }
    args.check = FailureCheck(call, op, x.dtype);
    return LaunchBinaryOp(op, call, x.dtype, args);
  });
}

// ---- LogicalNot and Select ----

__global__ void LogicalNotKernel(const uint8_t* x, uint8_t* out,
                                 int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = x[i] == 0;
  }
}

weft_status* LogicalNotCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor x, out;
    if ((status = call.Input(0, &x)) != nullptr) return status;
    if (x.dtype != WEFT_BOOL) return call.UnsupportedDtype(x.dtype);
    if ((status = call.AllocateOutput(0, WEFT_BOOL, x.dims, x.rank, &out)) !=
        nullptr) {
      return status;
    }
    if (x.element_count == 0) return nullptr;
    LogicalNotKernel<<<BlocksFor(x.element_count), kBlockThreads, 0,
                       call.stream()>>>(
        static_cast<const uint8_t*>(TensorData(x)),
        static_cast<uint8_t*>(TensorData(out)), x.element_count);
    return call.CheckLaunch("LogicalNot");
  });
}

// Select moves elements without looking at them: one kernel per element
// size serves every dtype.
template <typename Word>
__global__ void SelectKernel(const uint8_t* condition, const Word* t,
                             const Word* e, Word* out, int64_t count,
                             const __grid_constant__ OperandsLayout<3> layout) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    int64_t offsets[3];
    OperandOffsets(layout, i, offsets);
    out[i] = condition[offsets[0]] != 0 ? t[offsets[1]] : e[offsets[2]];
  }
}

template <typename Word>
weft_status* LaunchSelect(const KernelCall& call,
                          const weft_kernel_tensor* const* operands,
                          const weft_kernel_tensor& out,
                          const OperandsLayout<3>& layout) {
  const int64_t n = out.element_count;
  SelectKernel<Word><<<BlocksFor(n), kBlockThreads, 0, call.stream()>>>(
      static_cast<const uint8_t*>(TensorData(*operands[0])),
      static_cast<const Word*>(TensorData(*operands[1])),
      static_cast<const Word*>(TensorData(*operands[2])),
      static_cast<Word*>(TensorData(out)), n, layout);
  return call.CheckLaunch("Select");
}

const int32_t kSelectTypes[] = {
    WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32, WEFT_INT64,  WEFT_UINT8,
    WEFT_BOOL,    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8, WEFT_INT16,
    WEFT_UINT16,  WEFT_UINT32,  WEFT_UINT64};

weft_status* SelectCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor condition, t, e;
    if ((status = call.Input(0, &condition)) != nullptr) return status;
    if ((status = call.Input(1, &t)) != nullptr) return status;
    if ((status = call.Input(2, &e)) != nullptr) return status;
    if (condition.dtype != WEFT_BOOL) {
      return call.Error(WEFT_INVALID_ARGUMENT, "condition is %s, not bool",
                        DtypeName(condition.dtype));
    }
    if (e.dtype != t.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "t is %s but e is %s",
                        DtypeName(t.dtype), DtypeName(e.dtype));
    }
    int32_t rank = condition.rank;
    if (t.rank > rank) rank = t.rank;
    if (e.rank > rank) rank = e.rank;
    DimBuffer out_dims(rank);
    const weft_kernel_tensor* operands[3] = {&condition, &t, &e};
    status = BroadcastShapes(call, operands, 3, rank, out_dims.data());
    if (status != nullptr) return status;
    weft_kernel_tensor out;
    if ((status = call.AllocateOutput(0, t.dtype, out_dims.data(), rank,
                                      &out)) != nullptr) {
      return status;
    }
    if (out.element_count == 0) return nullptr;
    OperandsLayout<3> layout{};
    if (!CoalesceOperands<3>(operands, out_dims.data(), rank, &layout)) {
      return TooManyGroups(call);
    }
    switch (weft_dtype_size_of(t.dtype)) {
      case 1: return LaunchSelect<uint8_t>(call, operands, out, layout);
      case 2: return LaunchSelect<uint16_t>(call, operands, out, layout);
      case 4: return LaunchSelect<uint32_t>(call, operands, out, layout);
      case 8: return LaunchSelect<uint64_t>(call, operands, out, layout);
      default: return call.UnsupportedDtype(t.dtype);
    }
  });
}

// ---- Unary ops ----

// In UnaryOp's order.
const char* const kUnaryNames[] = {"Neg",  "Exp",  "Log",    "Relu",
                                   "Sigmoid", "Tanh", "Abs", "Sign",
                                   "Square", "Sqrt", "Rsqrt"};
static_assert(sizeof(kUnaryNames) / sizeof(kUnaryNames[0]) == kUnaryOpCount,
              "a name per unary op");

template <int Op, typename T>
__global__ void UnaryKernel(const T* x, T* out, int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = ApplyUnary<Op>(x[i]);
  }
}

template <int Op, typename T>
weft_status* LaunchUnary(const KernelCall& call, const void* x, void* out,
                         int64_t count) {
  UnaryKernel<Op, T><<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
      static_cast<const T*>(x), static_cast<T*>(out), count);
  return call.CheckLaunch(kUnaryNames[Op]);
}

// Float-only ops are never instantiated for integers.
template <int Op>
weft_status* LaunchUnaryTyped(const KernelCall& call, int32_t dtype,
                              const void* x, void* out, int64_t count) {
  constexpr bool kIntegersToo = UnaryTakesIntegers(Op);
  switch (dtype) {
    case WEFT_FLOAT32: return LaunchUnary<Op, float>(call, x, out, count);
    case WEFT_FLOAT64: return LaunchUnary<Op, double>(call, x, out, count);
    case WEFT_INT32:
      if constexpr (kIntegersToo) {
        return LaunchUnary<Op, int32_t>(call, x, out, count);
      }
      break;
    case WEFT_INT64:
      if constexpr (kIntegersToo) {
        return LaunchUnary<Op, int64_t>(call, x, out, count);
      }
      break;
    case WEFT_UINT8:
      if constexpr (kIntegersToo) {
        return LaunchUnary<Op, uint8_t>(call, x, out, count);
      }
      break;
    default:
      break;
  }
  return call.Error(WEFT_UNIMPLEMENTED, "no CUDA kernel for %s",
                    DtypeName(dtype));
}

// The launch for runtime `op`: one instantiation per UnaryOp.
template <int Op = 0>
weft_status* LaunchUnaryOp(int op, const KernelCall& call, int32_t dtype,
                           const void* x, void* out, int64_t count) {
  if (op == Op) return LaunchUnaryTyped<Op>(call, dtype, x, out, count);
  if constexpr (Op + 1 < kUnaryOpCount) {
    return LaunchUnaryOp<Op + 1>(op, call, dtype, x, out, count);
  } else {
    return call.UnsupportedDtype(dtype);
  }
}

weft_status* UnaryCompute(void* kernel_arg, weft_kernel_context* ctx) {
  const int op = static_cast<int>(reinterpret_cast<intptr_t>(kernel_arg));
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor x, out;
    if ((status = call.Input(0, &x)) != nullptr) return status;
    if ((status = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &out)) !=
        nullptr) {
      return status;
    }
    if (x.element_count == 0) return nullptr;
    const void* xp = TensorData(x);
    void* outp = TensorData(out);
    const int64_t n = x.element_count;
    const int32_t t = x.dtype;
    return LaunchUnaryOp(op, call, t, xp, outp, n);
  });
}

// Identity shares its input's memory: no kernel, no copy.
weft_status* IdentityCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_kernel_tensor x;
    weft_status* status = call.Input(0, &x);
    if (status != nullptr) return status;
    return call.ForwardInput(0, 0, x.dims, x.rank);
  });
}

// ---- Cast ----

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* out, int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = Convert<From, To>(x[i]);
  }
}

template <typename From, typename To>
weft_status* LaunchCast(const KernelCall& call, const void* x, void* out,
                        int64_t count) {
  CastKernel<From, To><<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
      static_cast<const From*>(x), static_cast<To*>(out), count);
  return call.CheckLaunch("Cast");
}

// The Cast dtypes: every dtype Weft has, as the CPU.
const int32_t kCastTypes[] = {
    WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64,    WEFT_UINT8,
    WEFT_BOOL,    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8,   WEFT_INT16,
    WEFT_UINT16,  WEFT_UINT32,  WEFT_UINT64};
constexpr int32_t kCastTypeCount =
    static_cast<int32_t>(sizeof(kCastTypes) / sizeof(kCastTypes[0]));

// Calls fn(T{}) with the element type of `dtype`; false for none.
template <typename Fn>
bool WithCastType(int32_t dtype, Fn fn) {
  switch (dtype) {
    case WEFT_FLOAT32: fn(float{}); return true;
    case WEFT_FLOAT64: fn(double{}); return true;
    case WEFT_INT32: fn(int32_t{}); return true;
    case WEFT_INT64: fn(int64_t{}); return true;
    case WEFT_UINT8: fn(uint8_t{}); return true;
    case WEFT_BOOL: fn(BoolByte{}); return true;
    case WEFT_FLOAT16: fn(__half{}); return true;
    case WEFT_BFLOAT16: fn(__nv_bfloat16{}); return true;
    case WEFT_INT8: fn(int8_t{}); return true;
    case WEFT_INT16: fn(int16_t{}); return true;
    case WEFT_UINT16: fn(uint16_t{}); return true;
    case WEFT_UINT32: fn(uint32_t{}); return true;
    case WEFT_UINT64: fn(uint64_t{}); return true;
    default: return false;
  }
}

bool IsCastType(int32_t dtype) {
  for (int32_t t : kCastTypes) {
    if (t == dtype) return true;
  }
  return false;
}

weft_status* CastCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor x;
    if ((status = call.Input(0, &x)) != nullptr) return status;
    int32_t to = WEFT_DTYPE_INVALID;
    if ((status = call.AttrDtype("DstT", &to)) != nullptr) return status;
    if (to == x.dtype) return call.ForwardInput(0, 0, x.dims, x.rank);
    // A host older than 1.2 ignores the DstT constraint.
    if (!IsCastType(x.dtype) || !IsCastType(to)) {
      return call.Error(WEFT_UNIMPLEMENTED, "no CUDA Cast from %s to %s",
                        DtypeName(x.dtype), DtypeName(to));
    }
    weft_kernel_tensor out;
    if ((status = call.AllocateOutput(0, to, x.dims, x.rank, &out)) !=
        nullptr) {
      return status;
    }
    if (x.element_count == 0) return nullptr;
    const void* xp = TensorData(x);
    void* outp = TensorData(out);
    const int64_t n = x.element_count;
    WithCastType(x.dtype, [&](auto from) {
      WithCastType(to, [&](auto dst) {
        status = LaunchCast<decltype(from), decltype(dst)>(call, xp, outp, n);
      });
    });
    return status;
  });
}

void* OpArg(int op) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(op));
}

}  // namespace

weft_status* RegisterElementwiseKernels(weft_kernel_registrar* registrar) {
  weft_status* status = nullptr;
  for (int op = 0; op < kBinaryOpCount && status == nullptr; ++op) {
    const TypeList types = BinaryTypes(op);
    status = RegisterKernel(registrar, kBinaryNames[op], "T", types.dtypes,
                            types.count, BinaryCompute, OpArg(op));
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "LogicalNot", "T", kBoolType, 1,
                            LogicalNotCompute, nullptr);
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "Select", "T", kSelectTypes,
                            static_cast<int32_t>(sizeof(kSelectTypes) /
                                                 sizeof(kSelectTypes[0])),
                            SelectCompute, nullptr);
  }
  for (int op = 0; op < kUnaryOpCount && status == nullptr; ++op) {
    const TypeList types =
        UnaryTakesIntegers(op) ? List(kBasicTypes) : List(kFloatTypes);
    status = RegisterKernel(registrar, kUnaryNames[op], "T", types.dtypes,
                            types.count, UnaryCompute, OpArg(op));
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "Identity", nullptr, nullptr, 0,
                            IdentityCompute, nullptr);
  }
  if (status == nullptr) {
    // Both ends are constrained, so a Cast to a dtype outside them finds
    // no CUDA kernel at plan time.
    const weft_kernel_type_constraint to = {"DstT", kCastTypes,
                                             kCastTypeCount};
    status = RegisterKernel(registrar, "Cast", "SrcT", kCastTypes,
                            kCastTypeCount, CastCompute, nullptr, &to, 1);
  }
  return status;
}

}  // namespace weft_cuda
