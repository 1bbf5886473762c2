// Matrix products shared by the MatMul and BatchMatMul kernels: the choice
// between oneDNN and Eigen for one product, and the float16/bfloat16
// conversions around float32 products.  Implemented in matmul.cc.
#ifndef WEFT_PLUGINS_CPU_MATMUL_PRODUCT_H_
#define WEFT_PLUGINS_CPU_MATMUL_PRODUCT_H_

#include <cstdint>

#include "kernel.h"

namespace weft_cpu {

// True when a float32 product of this size goes to oneDNN (where present):
// below it, creating the primitive's arguments costs more than Eigen's
// whole product.
bool MatMulPrefersOnednn(int64_t m, int64_t k, int64_t n);

// c[M,N] = op(a) · op(b) as MatMulEigen (matmul_eigen.h) defines it, for
// dtype float32, float64, int32 or int64 (integers wrap on overflow).  M, K
// and N must be positive.  Runs on up to `threads` threads.
void MatMulTyped(int32_t dtype, const void* a, const void* b, void* c,
                 int64_t m, int64_t k, int64_t n, bool transpose_a,
                 bool transpose_b, int threads);

// A product's operands and dims: M, K and N of op(a)[M,K] · op(b)[K,N].
struct MatMulShape {
  int64_t m = 0, k = 0, n = 0;
  bool transpose_a = false, transpose_b = false;
};

// Reads inputs `first` and `first` + 1 as MatMul's a and b, with its
// transpose_a and transpose_b attributes; fails unless both are matrices
// of one dtype whose inner dimensions agree.
weft_status* ReadMatMulOperands(weft_kernel_context* ctx, int32_t first,
                                Tensor* a, Tensor* b, MatMulShape* shape);

// Widens float16 or bfloat16 elements to float32, and rounds back (to
// nearest, ties to even; NaN stays NaN), split over the kernel's threads.
void HalfToFloat(const weft_kernel_context* ctx, int32_t dtype,
                 const void* src, float* dst, int64_t count);
void FloatToHalf(const weft_kernel_context* ctx, int32_t dtype,
                 const float* src, void* dst, int64_t count);

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_MATMUL_PRODUCT_H_
