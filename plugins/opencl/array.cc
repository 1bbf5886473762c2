// Array kernels that move elements without arithmetic: Transpose, Concat,
// Split, Gather and Select, for every dtype of 1, 2, 4 or 8 bytes (the kernels go
// by element size).  Semantics follow the CPU plugin: axes may be negative,
// Gather's indices are int32 or int64 and an index outside the axis is an
// error found on the device.
#include <cstdint>
#include <cstdio>

#include "kernel_call.h"
#include "layout_common.h"

namespace weft_opencl {
namespace {

weft_status* TransposeKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, z;
    if (weft_status* s = call.Input(0, &x)) return s;
    int64_t axes[WEFT_MAX_RANK], dims[WEFT_MAX_RANK];
    if (weft_status* s = TransposeArgs(call, x, axes, dims)) return s;
    const int32_t n = x.rank;
    char name[32];
    if (weft_status* s = MoveKernel(call, "permute", x.dtype, name,
                                    sizeof name)) {
      return s;
    }
    int64_t strides[WEFT_MAX_RANK];
    int64_t stride = 1;
    for (int32_t i = x.rank - 1; i >= 0; --i) {
      strides[i] = stride;
      stride *= x.dims[i];
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, n, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    // z's dims with x's strides along them; size-1 dims say nothing.
    cl_long kd[kMaxKernelRank] = {}, ks[kMaxKernelRank] = {};
    int rank = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (dims[i] == 1) continue;
      if (rank == kMaxKernelRank) {
        return call.Error(WEFT_UNIMPLEMENTED, "more than %d dims larger "
                          "than 1", kMaxKernelRank);
      }
      kd[rank] = dims[i];
      ks[rank] = strides[axes[i]];
      ++rank;
    }
    if (rank == 0) {
      kd[0] = 1;
      rank = 1;
    }
    return call.Launch(Program::kArray, name, Linear(z.element_count),
                       Buffer(x), Buffer(z),
                       static_cast<cl_long>(z.element_count),
                       static_cast<cl_int>(rank), Long8(kd), Long8(ks));
  });
}

weft_status* ConcatKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor first;
    if (weft_status* s = call.Input(0, &first)) return s;
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = ConcatArgs(call, first, &axis, dims)) return s;
    return JoinInputs(call, axis, first.dtype, dims, first.rank);
  });
}

weft_status* SplitKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    int64_t axis = 0, pieces = 0, dims[WEFT_MAX_RANK];
    if (weft_status* s = SplitArgs(call, x, &axis, &pieces, dims)) return s;
    return CutInto(call, x, axis, pieces, dims, x.rank);
  });
}

weft_status* GatherKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor params, idx, z;
    if (weft_status* s = call.Input(0, &params)) return s;
    if (weft_status* s = call.Input(1, &idx)) return s;
    if (idx.dtype != WEFT_INT32 && idx.dtype != WEFT_INT64) {
      return call.UnsupportedDtype(idx.dtype);
    }
    int64_t axis = 0, dims[WEFT_MAX_RANK];
    int32_t rank = 0;
    if (weft_status* s = GatherArgs(call, params, idx, &axis, dims, &rank)) {
      return s;
    }
    char size[32];
    if (weft_status* s = MoveKernel(call, "gather", params.dtype, size,
                                    sizeof size)) {
      return s;
    }
    if (weft_status* s = call.AllocateOutput(0, params.dtype, dims, rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    const int64_t inner = DimProduct(params.dims, axis + 1, params.rank);
    const int64_t limit = params.dims[axis];
    char name[48];
    std::snprintf(name, sizeof name, "%s_%s", size, KernelSuffix(idx.dtype));
    const ErrorArg errors =
        call.Checked(DeviceError::kIndexOutOfRange, idx.dtype, limit);
    return call.Launch(Program::kArray, name, Linear(z.element_count),
                       Buffer(params), Buffer(idx), Buffer(z),
                       static_cast<cl_long>(z.element_count),
                       static_cast<cl_long>(idx.element_count),
                       static_cast<cl_long>(limit),
                       static_cast<cl_long>(inner), errors);
  });
}

weft_status* SelectKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in[3], z;
    for (int32_t k = 0; k < 3; ++k) {
      if (weft_status* s = call.Input(k, &in[k])) return s;
    }
    if (in[0].dtype != WEFT_BOOL || in[1].dtype != in[2].dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "condition must be bool and t and e of one dtype, "
                        "got %s, %s, %s", weft_dtype_name_of(in[0].dtype),
                        weft_dtype_name_of(in[1].dtype),
                        weft_dtype_name_of(in[2].dtype));
    }
    char name[32];
    if (weft_status* s = MoveKernel(call, "select", in[1].dtype, name,
                                    sizeof name)) {
      return s;
    }
    // The broadcast shape of all three.
    int32_t rank = 0;
    for (const weft_kernel_tensor& t : in) rank = t.rank > rank ? t.rank : rank;
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t i = 0; i < rank; ++i) {
      dims[i] = 1;
      for (const weft_kernel_tensor& t : in) {
        const int32_t ti = i - (rank - t.rank);
        const int64_t d = ti >= 0 ? t.dims[ti] : 1;
        if (d != 1 && dims[i] != 1 && d != dims[i]) {
          return call.Error(WEFT_INVALID_ARGUMENT,
                            "condition, t and e cannot be broadcast: dim %d "
                            "is %lld against %lld", i,
                            static_cast<long long>(d),
                            static_cast<long long>(dims[i]));
        }
        if (d != 1) dims[i] = d;
      }
    }
    if (weft_status* s = call.AllocateOutput(0, in[1].dtype, dims, rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    // z's dims larger than 1, with each operand's stride there.
    cl_long kd[kMaxKernelRank] = {1}, ks[3][kMaxKernelRank] = {};
    int kr = 0;
    int64_t stride[3] = {1, 1, 1};
    cl_long rev_d[WEFT_MAX_RANK], rev_s[3][WEFT_MAX_RANK];
    for (int32_t i = rank - 1; i >= 0; --i) {
      if (dims[i] == 1) continue;
      rev_d[kr] = dims[i];
      for (int k = 0; k < 3; ++k) {
        const int32_t ti = i - (rank - in[k].rank);
        const int64_t d = ti >= 0 ? in[k].dims[ti] : 1;
        rev_s[k][kr] = d == 1 ? 0 : stride[k];
        stride[k] *= d;
      }
      ++kr;
    }
    if (kr > kMaxKernelRank) {
      return call.Error(WEFT_UNIMPLEMENTED, "more than %d dims larger than 1",
                        kMaxKernelRank);
    }
    for (int i = 0; i < kr; ++i) {
      kd[i] = rev_d[kr - 1 - i];
      for (int k = 0; k < 3; ++k) ks[k][i] = rev_s[k][kr - 1 - i];
    }
    return call.Launch(Program::kArray, name, Linear(z.element_count),
                       Buffer(in[0]), Buffer(in[1]), Buffer(in[2]), Buffer(z),
                       static_cast<cl_long>(z.element_count),
                       static_cast<cl_int>(kr > 0 ? kr : 1), Long8(kd),
                       Long8(ks[0]), Long8(ks[1]), Long8(ks[2]));
  });
}

}  // namespace

weft_status* RegisterArrayKernels(weft_kernel_registrar* registrar) {
  // Every dtype (all are 1, 2, 4 or 8 bytes), as on the CPU.
  const int32_t movable[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                             WEFT_INT64,   WEFT_UINT8,   WEFT_BOOL,
                             WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8,
                             WEFT_INT16,   WEFT_UINT16,  WEFT_UINT32,
                             WEFT_UINT64};
  const int32_t count = sizeof movable / sizeof *movable;
  weft_status* s = nullptr;
  if ((s = RegisterKernel(registrar, "Transpose", "T", movable, count,
                          TransposeKernel, nullptr)) ||
      (s = RegisterKernel(registrar, "Concat", "T", movable, count,
                          ConcatKernel, nullptr)) ||
      (s = RegisterKernel(registrar, "Split", "T", movable, count,
                          SplitKernel, nullptr)) ||
      (s = RegisterKernel(registrar, "Gather", "T", movable, count,
                          GatherKernel, nullptr)) ||
      (s = RegisterKernel(registrar, "Select", "T", movable, count,
                          SelectKernel, nullptr))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_opencl
