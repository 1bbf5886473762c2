// MatMul through cuBLAS (float32, float64; int32, int64, float16 and
// bfloat16 go to the plain kernel of batch_matmul.cu), and float32 and
// float64 BatchMatMul through its strided-batched gemm where each operand
// is either one matrix or one per output matrix.  cuBLAS is column-major and Weft row-major; a
// row-major [R, C] buffer read column-major is the transpose [C, R].  So
// instead of C = op(A) op(B) the call computes C^T = op(B)^T op(A)^T, which
// needs no copies: B goes first, and each operand's cuBLAS op is the Weft
// transpose flag itself.
#include <cublas_v2.h>

#include <mutex>
#include <string>

#include "blas_call.h"
#include "cublas_loader.h"
#include "kernel_call.h"
#include "matmul_plain.h"

namespace weft_cuda {

void DestroyBlasHandle(weft_plugin_stream* stream) {
  std::lock_guard<std::mutex> lock(stream->blas_mutex);
  if (stream->blas != nullptr) {
    // A handle exists only once cuBLAS was loaded.
    Blas(nullptr)->destroy(stream->blas);
    stream->blas = nullptr;
  }
}

weft_status* BlasError(const KernelCall& call, const BlasApi& blas,
                       cublasStatus_t status, const char* what) {
  return call.Error(status == CUBLAS_STATUS_ALLOC_FAILED
                        ? WEFT_RESOURCE_EXHAUSTED
                        : WEFT_INTERNAL,
                    "%s failed: %s", what, blas.status_string(status));
}

// cuBLAS, loaded on first use (cublas_loader.h), and the stream's handle,
// created on first use.  Called with blas_mutex held.
weft_status* StreamBlasHandle(const KernelCall& call, const BlasApi** blas,
                              cublasHandle_t* out) {
  std::string why;
  const BlasApi* api = Blas(&why);
  if (api == nullptr) {
    return call.Error(WEFT_UNAVAILABLE, "needs cuBLAS: %s", why.c_str());
  }
  *blas = api;
  weft_plugin_stream* stream = call.plugin_stream();
  if (stream->blas == nullptr) {
    cublasHandle_t handle = nullptr;
    cublasStatus_t status = api->create(&handle);
    if (status != CUBLAS_STATUS_SUCCESS) {
      return BlasError(call, *api, status, "cublasCreate");
    }
    status = api->set_stream(handle, stream->stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
      api->destroy(handle);
      return BlasError(call, *api, status, "cublasSetStream");
    }
    stream->blas = handle;
  }
  *out = stream->blas;
  return nullptr;
}

cublasStatus_t Gemm(const BlasApi& blas, cublasHandle_t handle,
                    cublasOperation_t op_first, cublasOperation_t op_second,
                    int64_t m, int64_t n, int64_t k, const float* first,
                    int64_t ld_first, const float* second, int64_t ld_second,
                    float* out, int64_t ld_out, float beta) {
  const float one = 1.0f;
  // The 64-bit API: row counts past 2^31 are legal tensors.
  return blas.sgemm(handle, op_first, op_second, m, n, k, &one, first,
                    ld_first, second, ld_second, &beta, out, ld_out);
}

cublasStatus_t Gemm(const BlasApi& blas, cublasHandle_t handle,
                    cublasOperation_t op_first, cublasOperation_t op_second,
                    int64_t m, int64_t n, int64_t k, const double* first,
                    int64_t ld_first, const double* second, int64_t ld_second,
                    double* out, int64_t ld_out, double beta) {
  const double one = 1.0;
  return blas.dgemm(handle, op_first, op_second, m, n, k, &one, first,
                    ld_first, second, ld_second, &beta, out, ld_out);
}

namespace {

cublasStatus_t GemmBatched(const BlasApi& blas, cublasHandle_t handle,
                           cublasOperation_t op_first,
                           cublasOperation_t op_second, int64_t m, int64_t n,
                           int64_t k, const float* first, int64_t ld_first,
                           int64_t stride_first, const float* second,
                           int64_t ld_second, int64_t stride_second,
                           float* out, int64_t ld_out, int64_t stride_out,
                           int64_t count) {
  const float one = 1.0f, zero = 0.0f;
  return blas.sgemm_batched(handle, op_first, op_second, m, n, k, &one, first,
                            ld_first, stride_first, second, ld_second,
                            stride_second, &zero, out, ld_out, stride_out,
                            count);
}

cublasStatus_t GemmBatched(const BlasApi& blas, cublasHandle_t handle,
                           cublasOperation_t op_first,
                           cublasOperation_t op_second, int64_t m, int64_t n,
                           int64_t k, const double* first, int64_t ld_first,
                           int64_t stride_first, const double* second,
                           int64_t ld_second, int64_t stride_second,
                           double* out, int64_t ld_out, int64_t stride_out,
                           int64_t count) {
  const double one = 1.0, zero = 0.0;
  return blas.dgemm_batched(handle, op_first, op_second, m, n, k, &one, first,
                            ld_first, stride_first, second, ld_second,
                            stride_second, &zero, out, ld_out, stride_out,
                            count);
}

template <typename T>
weft_status* BatchedTyped(const KernelCall& call, const weft_kernel_tensor& x,
                          bool adj_x, int64_t x_stride,
                          const weft_kernel_tensor& y, bool adj_y,
                          int64_t y_stride, int64_t m, int64_t n, int64_t k,
                          int64_t count, const weft_kernel_tensor& out) {
  std::lock_guard<std::mutex> lock(call.plugin_stream()->blas_mutex);
  cublasHandle_t handle = nullptr;
  const BlasApi* api = nullptr;
  weft_status* status = StreamBlasHandle(call, &api, &handle);
  if (status != nullptr) return status;
  // As in MatMulTyped: C^T = op(y)^T op(x)^T, matrix by matrix.
  const cublasStatus_t blas = GemmBatched(
      *api, handle, adj_y ? CUBLAS_OP_T : CUBLAS_OP_N,
      adj_x ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
      static_cast<const T*>(TensorData(y)), y.dims[y.rank - 1], y_stride,
      static_cast<const T*>(TensorData(x)), x.dims[x.rank - 1], x_stride,
      static_cast<T*>(TensorData(out)), n, m * n, count);
  return blas == CUBLAS_STATUS_SUCCESS
             ? nullptr
             : BlasError(call, *api, blas, "cuBLAS strided-batched gemm");
}

template <typename T>
weft_status* MatMulTyped(const KernelCall& call, const weft_kernel_tensor& a,
                         bool transpose_a, const weft_kernel_tensor& b,
                         bool transpose_b, int64_t m, int64_t n, int64_t k,
                         const weft_kernel_tensor& out) {
  T* c = static_cast<T*>(TensorData(out));
  if (k == 0) {
    // An empty sum is 0, and cuBLAS may leave C untouched when k is 0.
    return call.CheckCuda(
        cudaMemsetAsync(c, 0, out.byte_size, call.stream()), "cudaMemsetAsync");
  }
  std::lock_guard<std::mutex> lock(call.plugin_stream()->blas_mutex);
  cublasHandle_t handle = nullptr;
  const BlasApi* api = nullptr;
  weft_status* status = StreamBlasHandle(call, &api, &handle);
  if (status != nullptr) return status;
  cublasStatus_t blas = Gemm(
      *api, handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
      static_cast<const T*>(TensorData(b)), b.dims[1],
      static_cast<const T*>(TensorData(a)), a.dims[1], c, n);
  return blas == CUBLAS_STATUS_SUCCESS
             ? nullptr
             : BlasError(call, *api, blas, "cuBLAS gemm");
}

weft_status* MatMulCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    weft_status* status = call.Begin();
    if (status != nullptr) return status;
    weft_kernel_tensor a, b;
    if ((status = call.Input(0, &a)) != nullptr) return status;
    if ((status = call.Input(1, &b)) != nullptr) return status;
    if (a.rank != 2 || b.rank != 2) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "MatMul takes rank-2 inputs; a has rank %d and b "
                        "rank %d",
                        a.rank, b.rank);
    }
    if (a.dtype != b.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "a is %s but b is %s", DtypeName(a.dtype),
                        DtypeName(b.dtype));
    }
    bool transpose_a = false, transpose_b = false;
    if ((status = call.AttrBool("transpose_a", false, &transpose_a)) != nullptr)
      return status;
    if ((status = call.AttrBool("transpose_b", false, &transpose_b)) != nullptr)
      return status;
    const int64_t m = transpose_a ? a.dims[1] : a.dims[0];
    const int64_t k = transpose_a ? a.dims[0] : a.dims[1];
    const int64_t k_b = transpose_b ? b.dims[1] : b.dims[0];
    const int64_t n = transpose_b ? b.dims[0] : b.dims[1];
    if (k != k_b) {
      return call.Error(
          WEFT_INVALID_ARGUMENT,
          "inner dimensions differ: a is [%lld, %lld]%s, b is [%lld, "
          "%lld]%s",
          static_cast<long long>(a.dims[0]), static_cast<long long>(a.dims[1]),
          transpose_a ? " (transposed)" : "",
          static_cast<long long>(b.dims[0]), static_cast<long long>(b.dims[1]),
          transpose_b ? " (transposed)" : "");
    }
    const int64_t dims[2] = {m, n};
    weft_kernel_tensor out;
    if ((status = call.AllocateOutput(0, a.dtype, dims, 2, &out)) != nullptr)
      return status;
    if (m == 0 || n == 0) return nullptr;
    switch (a.dtype) {
      case WEFT_FLOAT32:
        return MatMulTyped<float>(call, a, transpose_a, b, transpose_b, m, n,
                                  k, out);
      case WEFT_FLOAT64:
        return MatMulTyped<double>(call, a, transpose_a, b, transpose_b, m, n,
                                   k, out);
      case WEFT_INT32:
      case WEFT_INT64:
      case WEFT_FLOAT16:
      case WEFT_BFLOAT16:
        // Integers wrap and 16-bit floats sum in float32, as on the CPU:
        // the plain kernel (batch_matmul.cu), not cuBLAS.
        return PlainMatMul2D(call, a, transpose_a, b, transpose_b, m, n, k,
                             out);
      default:
        return call.Error(WEFT_UNIMPLEMENTED, "no CUDA MatMul for %s",
                          DtypeName(a.dtype));
    }
  });
}

}  // namespace

weft_status* BlasBatchMatMul(const KernelCall& call,
                             const weft_kernel_tensor& x, bool adj_x,
                             int64_t x_stride, const weft_kernel_tensor& y,
                             bool adj_y, int64_t y_stride, int64_t m,
                             int64_t n, int64_t k, int64_t count,
                             const weft_kernel_tensor& out) {
  if (out.dtype == WEFT_FLOAT64) {
    return BatchedTyped<double>(call, x, adj_x, x_stride, y, adj_y, y_stride,
                                m, n, k, count, out);
  }
  return BatchedTyped<float>(call, x, adj_x, x_stride, y, adj_y, y_stride, m,
                             n, k, count, out);
}

weft_status* RegisterMatMulKernels(weft_kernel_registrar* registrar) {
  static const int32_t kTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                   WEFT_INT64,   WEFT_FLOAT16, WEFT_BFLOAT16};
  return RegisterKernel(registrar, "MatMul", "T", kTypes, 6, MatMulCompute,
                        nullptr);
}

}  // namespace weft_cuda
