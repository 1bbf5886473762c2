// What matmul.cc and batch_matmul.cu call in each other: the plain
// matrix-product kernel, for the MatMul dtypes that cuBLAS does not take
// as the CPU does (int32, int64, float16, bfloat16), and cuBLAS's
// strided-batched gemm for float32 and float64 BatchMatMul.  Host
// declarations only, so g++ and nvcc both include it.
#ifndef WEFT_PLUGINS_CUDA_MATMUL_PLAIN_H_
#define WEFT_PLUGINS_CUDA_MATMUL_PLAIN_H_

#include <cstdint>

#include "kernel_call.h"

namespace weft_cuda {

// out[m, n] = op(a) · op(b) for rank-2 a and b of out's dtype (float16,
// bfloat16, float32, float64, int32 or int64), one thread per element.
weft_status* PlainMatMul2D(const KernelCall& call, const weft_kernel_tensor& a,
                           bool transpose_a, const weft_kernel_tensor& b,
                           bool transpose_b, int64_t m, int64_t n, int64_t k,
                           const weft_kernel_tensor& out);

// out = op(x) · op(y) for `count` matrices of float32 or float64 through
// cuBLAS: matrix i of x starts at i * x_stride elements (0: x is one matrix
// for all), the same for y; out's are packed.  k must be positive.
weft_status* BlasBatchMatMul(const KernelCall& call,
                             const weft_kernel_tensor& x, bool adj_x,
                             int64_t x_stride, const weft_kernel_tensor& y,
                             bool adj_y, int64_t y_stride, int64_t m,
                             int64_t n, int64_t k, int64_t count,
                             const weft_kernel_tensor& out);

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_MATMUL_PLAIN_H_
