// The plain matrix-product kernel of batch_matmul.cu, for matmul.cc's
// dtypes that cuBLAS does not take as the CPU does (int32, int64, float16,
// bfloat16).  Host declarations only, so g++ and nvcc both include it.
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

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_MATMUL_PLAIN_H_
