// MatrixInverse and MatrixDeterminant (float32, float64): one thread per
// [M, M] matrix of the batch factors it with partial pivoting in scratch
// memory (linalg_ops.h, host-tested) and applies the CPU plugin's rules
// (plugins/cpu/linalg_lu.cc): singular to working precision or not finite
// is not invertible, and determinants never over- or underflow in their
// partial products.  A matrix that is not invertible fails the run at
// synchronization, through the stream's error word (error_slot.h); the
// device does not say which matrix.  One thread a matrix is slow for big
// matrices: meant for the small ones models invert.
#include <cstdint>
#include <cstdio>

#include "elementwise_ops.h"
#include "error_slot.h"
#include "grid_loop.h"
#include "kernel_call.h"
#include "layout_attrs.h"
#include "linalg_ops.h"

namespace weft_cuda {
namespace {

// Threads per block for one-matrix-per-thread kernels: few matrices are
// common, so small blocks spread them over more SMs.
constexpr int kMatrixThreads = 64;

unsigned int MatrixBlocks(int64_t count) {
  int64_t blocks = (count + kMatrixThreads - 1) / kMatrixThreads;
  if (blocks > 65535) blocks = 65535;
  return static_cast<unsigned int>(blocks < 1 ? 1 : blocks);
}

template <typename T>
__global__ void InverseKernel(const T* x, T* y, T* work, int64_t* perm,
                              int64_t n, int64_t count, bool adjoint,
                              DivisionCheck check) {
  const int64_t step = n * n;
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    if (!InvertMatrix<T>(x + i * step, y + i * step, work + i * step,
                         perm + i * n, n, adjoint)) {
      ReportFailure(check);
    }
  }
}

template <typename T>
__global__ void DeterminantKernel(const T* x, T* y, T* work, int64_t* perm,
                                  int64_t n, int64_t count) {
  const int64_t step = n * n;
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    y[i] = MatrixDeterminantOf<T>(x + i * step, work + i * step, perm + i * n,
                                  n);
  }
}

// The [..., M, M] input, with the CPU's message; *size is M, *count the
// number of matrices.
weft_status* ReadSquare(const KernelCall& call, weft_kernel_tensor* x,
                        int64_t* size, int64_t* count) {
  if (weft_status* s = call.Input(0, x)) return s;
  char shape[128];
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "input must be square matrices [..., M, M], got %s",
                      weft_plugin_kit::FormatShape(x->dims, x->rank, shape,
                                                   sizeof shape));
  }
  if (!IsFloat(x->dtype)) return call.UnsupportedDtype(x->dtype);
  *size = x->dims[x->rank - 1];
  *count = 1;
  for (int32_t i = 0; i < x->rank - 2; ++i) *count *= x->dims[i];
  return nullptr;
}

template <typename T>
weft_status* LaunchInverse(const KernelCall& call, const weft_kernel_tensor& x,
                           const weft_kernel_tensor& y, int64_t n,
                           int64_t count, bool adjoint) {
  Scratch scratch(call);
  T* work = nullptr;
  int64_t* perm = nullptr;
  if (weft_status* s = scratch.Get(count * n * n, &work)) return s;
  if (weft_status* s = scratch.Get(count * n, &perm)) return s;
  char shape[128], what[256];
  std::snprintf(what, sizeof what,
                "a matrix of the batch (input %s) is not invertible: it is "
                "singular to working precision or not finite",
                weft_plugin_kit::FormatShape(x.dims, x.rank, shape,
                                             sizeof shape));
  ErrorSlot& errors = *call.plugin_stream()->errors;
  const DivisionCheck check{errors.device_word(),
                            errors.RegisterLaunch(call.NodeDescription(what))};
  InverseKernel<T><<<MatrixBlocks(count), kMatrixThreads, 0, call.stream()>>>(
      static_cast<const T*>(TensorData(x)), static_cast<T*>(TensorData(y)),
      work, perm, n, count, adjoint, check);
  return call.CheckLaunch("MatrixInverse");
}

template <typename T>
weft_status* LaunchDeterminant(const KernelCall& call,
                               const weft_kernel_tensor& x,
                               const weft_kernel_tensor& y, int64_t n,
                               int64_t count) {
  Scratch scratch(call);
  T* work = nullptr;
  int64_t* perm = nullptr;
  if (weft_status* s = scratch.Get(count * n * n, &work)) return s;
  if (weft_status* s = scratch.Get(count * n, &perm)) return s;
  DeterminantKernel<T><<<MatrixBlocks(count), kMatrixThreads, 0,
                         call.stream()>>>(
      static_cast<const T*>(TensorData(x)), static_cast<T*>(TensorData(y)),
      work, perm, n, count);
  return call.CheckLaunch("MatrixDeterminant");
}

weft_status* InverseCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    int64_t n = 0, count = 0;
    if (weft_status* s = ReadSquare(call, &x, &n, &count)) return s;
    bool adjoint = false;
    if (weft_status* s = call.AttrBool("adjoint", false, &adjoint)) return s;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    if (x.dtype == WEFT_FLOAT64) {
      return LaunchInverse<double>(call, x, y, n, count, adjoint);
    }
    return LaunchInverse<float>(call, x, y, n, count, adjoint);
  });
}

weft_status* DeterminantCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    int64_t n = 0, count = 0;
    if (weft_status* s = ReadSquare(call, &x, &n, &count)) return s;
    if (weft_status* s =
            call.AllocateOutput(0, x.dtype, x.dims, x.rank - 2, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    if (x.dtype == WEFT_FLOAT64) {
      return LaunchDeterminant<double>(call, x, y, n, count);
    }
    return LaunchDeterminant<float>(call, x, y, n, count);
  });
}

}  // namespace

weft_status* RegisterLinalgKernels(weft_kernel_registrar* registrar) {
  static const int32_t kTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  if (weft_status* s = RegisterKernel(registrar, "MatrixInverse", "T", kTypes,
                                      2, InverseCompute, nullptr)) {
    return s;
  }
  return RegisterKernel(registrar, "MatrixDeterminant", "T", kTypes, 2,
                        DeterminantCompute, nullptr);
}

}  // namespace weft_cuda
