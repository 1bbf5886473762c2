// Element-wise kernels: Add, Sub, Mul and Div with NumPy broadcasting; Neg,
// Exp, Log, Relu, Sigmoid and Tanh; Identity; Cast.
#include <cstdint>
#include <cstdio>

#include "elementwise_ops.h"
#include "error_slot.h"
#include "kernel_call.h"

namespace weft_cuda {
namespace {

const int32_t kNumericTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                 WEFT_INT64};
const int32_t kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};

__device__ __forceinline__ int64_t GridStart() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

// ---- Binary ops ----

const char* const kBinaryNames[] = {"Add", "Sub", "Mul", "Div"};

// Same-shape operands, or one of them a single element (step 0).
template <int Op, typename T>
__global__ void BinaryLinearKernel(const T* x, int64_t x_step, const T* y,
                                   int64_t y_step, T* out, int64_t count,
                                   DivisionCheck check) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    out[i] = ApplyBinary<Op>(x[i * x_step], y[i * y_step], check);
  }
}

template <int Op, typename T>
__global__ void BinaryBroadcastKernel(
    const T* x, const T* y, T* out, int64_t count,
    // Read in place from parameter space instead of copied per thread.
    const __grid_constant__ BroadcastLayout layout, DivisionCheck check) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    int64_t x_offset, y_offset;
    BroadcastOffsets(layout, i, &x_offset, &y_offset);
    out[i] = ApplyBinary<Op>(x[x_offset], y[y_offset], check);
  }
}

template <int Op, typename T>
weft_status* LaunchBinary(const KernelCall& call, const void* x,
                          const void* y, void* out, int64_t count,
                          const BroadcastLayout& layout, DivisionCheck check) {
  const T* tx = static_cast<const T*>(x);
  const T* ty = static_cast<const T*>(y);
  T* tout = static_cast<T*>(out);
  if (layout.rank <= 1) {
    const int64_t x_step = layout.rank == 1 ? layout.x_strides[0] : 0;
    const int64_t y_step = layout.rank == 1 ? layout.y_strides[0] : 0;
    BinaryLinearKernel<Op, T>
        <<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
            tx, x_step, ty, y_step, tout, count, check);
  } else {
    BinaryBroadcastKernel<Op, T>
        <<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
            tx, ty, tout, count, layout, check);
  }
  return call.CheckLaunch(kBinaryNames[Op]);
}

template <typename T>
weft_status* LaunchBinaryTyped(int op, const KernelCall& call, const void* x,
                               const void* y, void* out, int64_t count,
                               const BroadcastLayout& layout,
                               DivisionCheck check) {
  switch (op) {
    case kAdd:
      return LaunchBinary<kAdd, T>(call, x, y, out, count, layout, check);
    case kSub:
      return LaunchBinary<kSub, T>(call, x, y, out, count, layout, check);
    case kMul:
      return LaunchBinary<kMul, T>(call, x, y, out, count, layout, check);
    default:
      return LaunchBinary<kDiv, T>(call, x, y, out, count, layout, check);
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
    const int32_t rank = x.rank > y.rank ? x.rank : y.rank;
    DimBuffer out_dims(rank);
    for (int32_t d = 0; d < rank; ++d) {
      const int64_t xd = AlignedDim(x, rank, d), yd = AlignedDim(y, rank, d);
      if (xd != yd && xd != 1 && yd != 1) {
        char x_text[256], y_text[256];
        FormatShape(x, x_text, sizeof(x_text));
        FormatShape(y, y_text, sizeof(y_text));
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "shapes %s and %s do not broadcast", x_text,
                          y_text);
      }
      out_dims[d] = xd == 1 ? yd : xd;
    }
    weft_kernel_tensor out;
    if ((status = call.AllocateOutput(0, x.dtype, out_dims.data(), rank,
                                      &out)) != nullptr) {
      return status;
    }
    if (out.element_count == 0) return nullptr;
    BroadcastLayout layout{};
    if (!CoalesceBroadcast(x, y, out_dims.data(), rank, &layout)) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "broadcasting needs more than %d alternating "
                        "dimension groups",
                        kMaxBroadcastRank);
    }
    DivisionCheck check{nullptr, 0};
    const bool integer = x.dtype == WEFT_INT32 || x.dtype == WEFT_INT64;
    if (op == kDiv && integer) {
      check.word = call.plugin_stream()->errors->device_word();
      check.launch_id = call.plugin_stream()->errors->RegisterLaunch(
          call.DivisionByZeroDescription());
    }
    const void* xp = TensorData(x);
    const void* yp = TensorData(y);
    void* outp = TensorData(out);
    const int64_t n = out.element_count;
    switch (x.dtype) {
      case WEFT_FLOAT32:
        return LaunchBinaryTyped<float>(op, call, xp, yp, outp, n, layout,
                                        check);
      case WEFT_FLOAT64:
        return LaunchBinaryTyped<double>(op, call, xp, yp, outp, n, layout,
                                         check);
      case WEFT_INT32:
        return LaunchBinaryTyped<int32_t>(op, call, xp, yp, outp, n, layout,
                                          check);
      case WEFT_INT64:
        return LaunchBinaryTyped<int64_t>(op, call, xp, yp, outp, n, layout,
                                          check);
      default:
        return call.Error(WEFT_UNIMPLEMENTED, "no CUDA kernel for %s",
                          DtypeName(x.dtype));
    }
  });
}

// ---- Unary ops ----

const char* const kUnaryNames[] = {"Neg", "Exp", "Log", "Relu", "Sigmoid",
                                   "Tanh"};

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
  constexpr bool kIntegersToo = Op == kNeg || Op == kRelu;
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
    default:
      break;
  }
  return call.Error(WEFT_UNIMPLEMENTED, "no CUDA kernel for %s",
                    DtypeName(dtype));
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
    switch (op) {
      case kNeg: return LaunchUnaryTyped<kNeg>(call, t, xp, outp, n);
      case kExp: return LaunchUnaryTyped<kExp>(call, t, xp, outp, n);
      case kLog: return LaunchUnaryTyped<kLog>(call, t, xp, outp, n);
      case kRelu: return LaunchUnaryTyped<kRelu>(call, t, xp, outp, n);
      case kSigmoid: return LaunchUnaryTyped<kSigmoid>(call, t, xp, outp, n);
      default: return LaunchUnaryTyped<kTanh>(call, t, xp, outp, n);
    }
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

template <typename From>
weft_status* LaunchCastFrom(const KernelCall& call, int32_t to,
                            const void* x, void* out, int64_t count) {
  switch (to) {
    case WEFT_FLOAT32: return LaunchCast<From, float>(call, x, out, count);
    case WEFT_FLOAT64: return LaunchCast<From, double>(call, x, out, count);
    case WEFT_INT32: return LaunchCast<From, int32_t>(call, x, out, count);
    default: return LaunchCast<From, int64_t>(call, x, out, count);
  }
}

bool IsNumericType(int32_t dtype) {
  return dtype == WEFT_FLOAT32 || dtype == WEFT_FLOAT64 ||
         dtype == WEFT_INT32 || dtype == WEFT_INT64;
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
    if (!IsNumericType(x.dtype) || !IsNumericType(to)) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "no CUDA Cast from %s to %s (CUDA casts among "
                        "float32, float64, int32 and int64)",
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
    switch (x.dtype) {
      case WEFT_FLOAT32: return LaunchCastFrom<float>(call, to, xp, outp, n);
      case WEFT_FLOAT64: return LaunchCastFrom<double>(call, to, xp, outp, n);
      case WEFT_INT32: return LaunchCastFrom<int32_t>(call, to, xp, outp, n);
      default: return LaunchCastFrom<int64_t>(call, to, xp, outp, n);
    }
  });
}

void* OpArg(int op) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(op));
}

}  // namespace

weft_status* RegisterElementwiseKernels(weft_kernel_registrar* registrar) {
  weft_status* status = nullptr;
  for (int op = kAdd; op <= kDiv && status == nullptr; ++op) {
    status = RegisterKernel(registrar, kBinaryNames[op], "T", kNumericTypes,
                            4, BinaryCompute, OpArg(op));
  }
  for (int op = kNeg; op <= kTanh && status == nullptr; ++op) {
    const bool integers_too = op == kNeg || op == kRelu;
    status = RegisterKernel(registrar, kUnaryNames[op], "T",
                            integers_too ? kNumericTypes : kFloatTypes,
                            integers_too ? 4 : 2, UnaryCompute, OpArg(op));
  }
  if (status == nullptr) {
    status = RegisterKernel(registrar, "Identity", nullptr, nullptr, 0,
                            IdentityCompute, nullptr);
  }
  if (status == nullptr) {
    // Both ends are constrained, so a Cast to a dtype outside them finds
    // no CUDA kernel at plan time.
    const weft_kernel_type_constraint to = {"DstT", kNumericTypes, 4};
    status = RegisterKernel(registrar, "Cast", "SrcT", kNumericTypes, 4,
                            CastCompute, nullptr, &to, 1);
  }
  return status;
}

}  // namespace weft_cuda
