// cuBLAS calls shared by the kernels that run on it (matmul.cc: MatMul and
// BatchMatMul; conv.cu: the filter gradient as a GEMM).
#ifndef WEFT_PLUGINS_CUDA_BLAS_CALL_H_
#define WEFT_PLUGINS_CUDA_BLAS_CALL_H_

#include <cublas_v2.h>

#include <cstdint>

#include "cublas_loader.h"
#include "kernel_call.h"

namespace weft_cuda {

// A cuBLAS failure as the node's error (RESOURCE_EXHAUSTED when cuBLAS ran
// out of memory); `what` names the call.
weft_status* BlasError(const KernelCall& call, const BlasApi& blas,
                       cublasStatus_t status, const char* what);

// cuBLAS, loaded on first use (cublas_loader.h), and the stream's handle,
// created on first use and bound to the stream.  Call with the stream's
// blas_mutex held.
weft_status* StreamBlasHandle(const KernelCall& call, const BlasApi** blas,
                              cublasHandle_t* out);

// Column-major out = op(first) op(second) + beta out, through cuBLAS's
// 64-bit gemm, in the handle's default math (FMA: no TF32).
cublasStatus_t Gemm(const BlasApi& blas, cublasHandle_t handle,
                    cublasOperation_t op_first, cublasOperation_t op_second,
                    int64_t m, int64_t n, int64_t k, const float* first,
                    int64_t ld_first, const float* second, int64_t ld_second,
                    float* out, int64_t ld_out, float beta = 0.0f);
cublasStatus_t Gemm(const BlasApi& blas, cublasHandle_t handle,
                    cublasOperation_t op_first, cublasOperation_t op_second,
                    int64_t m, int64_t n, int64_t k, const double* first,
                    int64_t ld_first, const double* second, int64_t ld_second,
                    double* out, int64_t ld_out, double beta = 0.0);

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_BLAS_CALL_H_
