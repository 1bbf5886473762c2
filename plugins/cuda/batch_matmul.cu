// BatchMatMul (float16, bfloat16, float32, float64, int32, int64) and
// MatMul of the dtypes cuBLAS does not take as the CPU does (int32, int64,
// float16, bfloat16).  float32 and float64 BatchMatMul go to cuBLAS's
// strided-batched gemm (matmul.cc) where each operand is one matrix or one
// per output matrix; everything else is a plain kernel, one thread per
// output element summing its dot product in order (matmul_ops.h,
// host-tested).  Integers wrap as on the CPU; float16 and bfloat16 are
// widened to float32, summed in float32 and rounded back, as the CPU's
// fallback does.  Float sums run in another order than Eigen's or
// oneDNN's, so they may differ from the CPU's in the last bits.  The
// checks and messages are the CPU's (plugins/cpu/linalg_batch_matmul.cc).
#include <cstdint>

#include "grid_loop.h"
#include "kernel_call.h"
#include "layout_attrs.h"
#include "matmul_ops.h"
#include "matmul_plain.h"

namespace weft_cuda {
namespace {

template <typename T>
__global__ void BatchMatMulKernel(const T* x, const T* y, T* out,
                                  MatMulBatch batch, int64_t m, int64_t k,
                                  int64_t n, bool adj_x, bool adj_y,
                                  int64_t count) {
  for (int64_t e = GridStart(); e < count; e += GridStride()) {
    const int64_t matrix = e / (m * n);
    const int64_t within = e - matrix * (m * n);
    int64_t xi = 0, yi = 0;
    batch.Sources(matrix, &xi, &yi);
    out[e] = MatMulElement<T>(x + xi * m * k, y + yi * k * n, m, k, n, adj_x,
                              adj_y, within / n, within % n);
  }
}

template <typename T>
void Launch(const KernelCall& call, const weft_kernel_tensor& x,
            const weft_kernel_tensor& y, const weft_kernel_tensor& out,
            const MatMulBatch& batch, int64_t m, int64_t k, int64_t n,
            bool adj_x, bool adj_y) {
  const int64_t count = out.element_count;
  BatchMatMulKernel<T><<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
      static_cast<const T*>(TensorData(x)), static_cast<const T*>(TensorData(y)),
      static_cast<T*>(TensorData(out)), batch, m, k, n, adj_x, adj_y, count);
}

bool PlainDtype(int32_t dtype) {
  switch (dtype) {
    case WEFT_FLOAT16: case WEFT_BFLOAT16: case WEFT_FLOAT32:
    case WEFT_FLOAT64: case WEFT_INT32: case WEFT_INT64:
      return true;
    default:
      return false;
  }
}

}  // namespace

// out = op(x) · op(y) for every matrix of `batch`.
static weft_status* PlainMatMul(const KernelCall& call,
                                const weft_kernel_tensor& x,
                                const weft_kernel_tensor& y,
                                const weft_kernel_tensor& out,
                                const MatMulBatch& batch, int64_t m, int64_t k,
                                int64_t n, bool adj_x, bool adj_y) {
  if (out.element_count == 0) return nullptr;
  if (k == 0) return call.Zeros(out);  // empty sums
  switch (out.dtype) {
    case WEFT_FLOAT16:
      Launch<__half>(call, x, y, out, batch, m, k, n, adj_x, adj_y);
      break;
    case WEFT_BFLOAT16:
      Launch<__nv_bfloat16>(call, x, y, out, batch, m, k, n, adj_x, adj_y);
      break;
    case WEFT_FLOAT32:
      Launch<float>(call, x, y, out, batch, m, k, n, adj_x, adj_y);
      break;
    case WEFT_FLOAT64:
      Launch<double>(call, x, y, out, batch, m, k, n, adj_x, adj_y);
      break;
    case WEFT_INT32:
      Launch<int32_t>(call, x, y, out, batch, m, k, n, adj_x, adj_y);
      break;
    case WEFT_INT64:
      Launch<int64_t>(call, x, y, out, batch, m, k, n, adj_x, adj_y);
      break;
    default:
      return call.UnsupportedDtype(out.dtype);
  }
  return call.CheckLaunch("matrix product");
}

weft_status* PlainMatMul2D(const KernelCall& call, const weft_kernel_tensor& a,
                           bool transpose_a, const weft_kernel_tensor& b,
                           bool transpose_b, int64_t m, int64_t n, int64_t k,
                           const weft_kernel_tensor& out) {
  MatMulBatch single{};
  single.rank = 0;
  single.count = 1;
  return PlainMatMul(call, a, b, out, single, m, k, n, transpose_a,
                     transpose_b);
}

namespace {

using weft_plugin_kit::FormatShape;

weft_status* BatchMatMulCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y, out;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &y)) return s;
    bool adj_x = false, adj_y = false;
    if (weft_status* s = call.AttrBool("adj_x", false, &adj_x)) return s;
    if (weft_status* s = call.AttrBool("adj_y", false, &adj_y)) return s;
    if (x.dtype != y.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "input y is %s but x is %s",
                        DtypeName(y.dtype), DtypeName(x.dtype));
    }
    if (!PlainDtype(x.dtype)) return call.UnsupportedDtype(x.dtype);
    char xs[128], ys[128];
    if (x.rank < 2 || y.rank < 2) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "inputs must have rank >= 2, got x %s and y %s",
                        FormatShape(x.dims, x.rank, xs, sizeof xs),
                        FormatShape(y.dims, y.rank, ys, sizeof ys));
    }
    const int64_t xr = x.dims[x.rank - 2], xc = x.dims[x.rank - 1];
    const int64_t yr = y.dims[y.rank - 2], yc = y.dims[y.rank - 1];
    const int64_t m = adj_x ? xc : xr, k = adj_x ? xr : xc;
    const int64_t n = adj_y ? yr : yc, k_y = adj_y ? yc : yr;
    if (k != k_y) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "inner dimensions differ: x%s%s and y%s%s give K = "
                        "%lld vs %lld",
                        FormatShape(x.dims, x.rank, xs, sizeof xs),
                        adj_x ? " adjoint" : "",
                        FormatShape(y.dims, y.rank, ys, sizeof ys),
                        adj_y ? " adjoint" : "", static_cast<long long>(k),
                        static_cast<long long>(k_y));
    }
    if (x.rank - 2 > kMaxMatMulBatchRank || y.rank - 2 > kMaxMatMulBatchRank) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "no CUDA BatchMatMul for more than %d batch dims",
                        kMaxMatMulBatchRank);
    }
    MatMulBatch batch{};
    int32_t axis = 0;
    int64_t dx = 0, dy = 0;
    if (!BroadcastMatMulBatch(x.dims, x.rank, y.dims, y.rank, &batch, &axis,
                              &dx, &dy)) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "batch dimensions of x %s and y %s cannot be "
                        "broadcast (batch axis %d: %lld vs %lld)",
                        FormatShape(x.dims, x.rank, xs, sizeof xs),
                        FormatShape(y.dims, y.rank, ys, sizeof ys), axis,
                        static_cast<long long>(dx),
                        static_cast<long long>(dy));
    }
    int64_t dims[kMaxMatMulBatchRank + 2];
    for (int32_t i = 0; i < batch.rank; ++i) dims[i] = batch.dims[i];
    dims[batch.rank] = m;
    dims[batch.rank + 1] = n;
    if (weft_status* s =
            call.AllocateOutput(0, x.dtype, dims, batch.rank + 2, &out)) {
      return s;
    }
    // float32 and float64 go to cuBLAS when each operand is one matrix or
    // one per output matrix (no partial broadcast), as the CPU's go to
    // oneDNN or Eigen.
    int64_t x_stride = 0, y_stride = 0;
    if (IsFloat(x.dtype) && out.element_count > 0 && k > 0 &&
        UniformBatchStrides(x.dims, x.rank, y.dims, y.rank, batch, m * k,
                            k * n, &x_stride, &y_stride)) {
      return BlasBatchMatMul(call, x, adj_x, x_stride, y, adj_y, y_stride, m,
                             n, k, batch.count, out);
    }
    return PlainMatMul(call, x, y, out, batch, m, k, n, adj_x, adj_y);
  });
}

}  // namespace

weft_status* RegisterBatchMatMulKernels(weft_kernel_registrar* registrar) {
  static const int32_t kTypes[] = {WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32,
                                   WEFT_FLOAT64, WEFT_INT32,    WEFT_INT64};
  return RegisterKernel(registrar, "BatchMatMul", "T", kTypes, 6,
                        BatchMatMulCompute, nullptr);
}

}  // namespace weft_cuda
