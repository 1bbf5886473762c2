// The index math and arithmetic of the plain matrix-product kernel
// (batch_matmul.cu): BatchMatMul's NumPy-broadcast batch dims and one
// output element's dot product, as the CPU plugin computes them
// (plugins/cpu/linalg_batch_matmul.cc, matmul.cc): integers wrap, float16
// and bfloat16 are widened to float32, summed in float32 and rounded back.
// __host__ __device__ so that test_index_math.cu checks it on the host.
// Included by nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_MATMUL_OPS_H_
#define WEFT_PLUGINS_CUDA_MATMUL_OPS_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#define WEFT_CUDA_MATMUL_HD __host__ __device__ __forceinline__

namespace weft_cuda {

// Batch ranks past this are refused with UNIMPLEMENTED (the layout is a
// kernel argument).
constexpr int kMaxMatMulBatchRank = 8;

// The output's batch dims and, per operand, the step (in matrices) along
// each: 0 where the operand broadcasts.
struct MatMulBatch {
  int32_t rank;
  int64_t dims[kMaxMatMulBatchRank];
  int64_t x_step[kMaxMatMulBatchRank], y_step[kMaxMatMulBatchRank];
  int64_t count;

  // The matrix indices of x and y that output matrix `index` multiplies.
  WEFT_CUDA_MATMUL_HD void Sources(int64_t index, int64_t* xi,
                                   int64_t* yi) const {
    *xi = *yi = 0;
    for (int32_t i = rank - 1; i >= 0; --i) {
      const int64_t coord = index % dims[i];
      index /= dims[i];
      *xi += coord * x_step[i];
      *yi += coord * y_step[i];
    }
  }
};

// The batch layout of x's and y's leading dims (all but the last two):
// false when two dims can not broadcast (*axis, *dx and *dy say where).
// Rank <= kMaxMatMulBatchRank is the caller's check.
inline bool BroadcastMatMulBatch(const int64_t* x_dims, int32_t x_rank,
                                 const int64_t* y_dims, int32_t y_rank,
                                 MatMulBatch* batch, int32_t* axis,
                                 int64_t* dx, int64_t* dy) {
  const int32_t bx = x_rank - 2, by = y_rank - 2;
  batch->rank = bx > by ? bx : by;
  batch->count = 1;
  int64_t xd[kMaxMatMulBatchRank], yd[kMaxMatMulBatchRank];
  for (int32_t i = 0; i < batch->rank; ++i) {
    const int32_t ix = bx - batch->rank + i, iy = by - batch->rank + i;
    xd[i] = ix >= 0 ? x_dims[ix] : 1;
    yd[i] = iy >= 0 ? y_dims[iy] : 1;
    if (xd[i] != yd[i] && xd[i] != 1 && yd[i] != 1) {
      *axis = i;
      *dx = xd[i];
      *dy = yd[i];
      return false;
    }
    batch->dims[i] = xd[i] == 1 ? yd[i] : xd[i];
    batch->count *= batch->dims[i];
  }
  int64_t x_stride = 1, y_stride = 1;
  for (int32_t i = batch->rank - 1; i >= 0; --i) {
    batch->x_step[i] = xd[i] == 1 ? 0 : x_stride;
    batch->y_step[i] = yd[i] == 1 ? 0 : y_stride;
    x_stride *= xd[i];
    y_stride *= yd[i];
  }
  return true;
}

// Whether cuBLAS's strided-batched gemm takes this batch: each operand one
// matrix for all (stride 0) or one per output matrix (stride: its matrix
// size in elements), never a partial broadcast.  x_matrix and y_matrix are
// the operands' matrix sizes.
inline bool UniformBatchStrides(const int64_t* x_dims, int32_t x_rank,
                                const int64_t* y_dims, int32_t y_rank,
                                const MatMulBatch& batch, int64_t x_matrix,
                                int64_t y_matrix, int64_t* x_stride,
                                int64_t* y_stride) {
  int64_t x_count = 1, y_count = 1;
  for (int32_t i = 0; i < x_rank - 2; ++i) x_count *= x_dims[i];
  for (int32_t i = 0; i < y_rank - 2; ++i) y_count *= y_dims[i];
  if ((x_count != batch.count && x_count != 1) ||
      (y_count != batch.count && y_count != 1)) {
    return false;
  }
  *x_stride = x_count == 1 ? 0 : x_matrix;
  *y_stride = y_count == 1 ? 0 : y_matrix;
  return true;
}

// The accumulator: float for float16 and bfloat16 (the CPU's widened
// product), unsigned for integers so that the sum wraps without undefined
// behaviour, T otherwise.
template <typename T>
using MatMulAcc = std::conditional_t<
    std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value,
    float,
    std::conditional_t<std::is_same<T, int32_t>::value, uint32_t,
                       std::conditional_t<std::is_same<T, int64_t>::value,
                                          uint64_t, T>>>;

template <typename T>
WEFT_CUDA_MATMUL_HD MatMulAcc<T> MatMulWiden(T v) {
  if constexpr (std::is_same<T, __half>::value) {
    return __half2float(v);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    return __bfloat162float(v);
  } else {
    return static_cast<MatMulAcc<T>>(v);
  }
}

template <typename T>
WEFT_CUDA_MATMUL_HD T MatMulNarrow(MatMulAcc<T> v) {
  if constexpr (std::is_same<T, __half>::value) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    return __float2bfloat16_rn(v);
  } else {
    return static_cast<T>(v);  // integers: modular, two's complement
  }
}

// Element (i, j) of op(x) · op(y) for one pair of matrices: x is [m, k]
// ([k, m] when adj_x), y is [k, n] ([n, k] when adj_y), summed over p in
// order.
template <typename T>
WEFT_CUDA_MATMUL_HD T MatMulElement(const T* x, const T* y, int64_t m,
                                    int64_t k, int64_t n, bool adj_x,
                                    bool adj_y, int64_t i, int64_t j) {
  MatMulAcc<T> sum = 0;
  for (int64_t p = 0; p < k; ++p) {
    const T a = adj_x ? x[p * m + i] : x[i * k + p];
    const T b = adj_y ? y[j * k + p] : y[p * n + j];
    sum += MatMulWiden(a) * MatMulWiden(b);
  }
  return MatMulNarrow<T>(sum);
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_MATMUL_OPS_H_
