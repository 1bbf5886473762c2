// The CPU plugin's Eigen matrix product, callable without the plugin.
//
// MatMul and BatchMatMul run it for float64 and the integer types, and for
// float32 where oneDNN is absent, refuses a product or the product is tiny
// (matmul.cc says why); float32 otherwise goes to MatMulOnednn()
// (matmul_onednn.h).  bench/ includes this header to time the same code
// called directly.  Header-only: it needs Eigen (with EIGEN_USE_THREADS,
// which thread_pool.h sets) and nothing of Weft.
#ifndef WEFT_PLUGINS_CPU_MATMUL_EIGEN_H_
#define WEFT_PLUGINS_CPU_MATMUL_EIGEN_H_

#include <algorithm>
#include <cstdint>

#include "thread_pool.h"

namespace weft_cpu {

// Below this many multiply-adds a product runs on the calling thread: the
// Tensor contraction's setup and pool wake-up cost more than they save.
inline bool MatMulWorthThreads(int64_t m, int64_t k, int64_t n) {
  // In double: the product of three dimensions may overflow int64.
  return static_cast<double>(m) * static_cast<double>(k) *
             static_cast<double>(n) >=
         262144.0;  // 64^3
}

// c[M,N] = op(a) * op(b), all row-major and dense, where op(a) is a [M,K]
// (stored [K,M] when transpose_a) and op(b) is b [K,N] (stored [N,K] when
// transpose_b).  `threads` <= 1 runs on the calling thread; more uses a
// cached Eigen thread pool of that size.  c must not overlap a or b.  Any
// of M, N, K may be 0.  May throw std::bad_alloc (and std::system_error when
// a pool cannot start).
template <typename T>
void MatMulEigen(const T* a, const T* b, T* c, int64_t m, int64_t k,
                 int64_t n, bool transpose_a, bool transpose_b, int threads) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, T(0));
    return;
  }
  const Eigen::Index a_rows = transpose_a ? k : m;
  const Eigen::Index a_cols = transpose_a ? m : k;
  const Eigen::Index b_rows = transpose_b ? n : k;
  const Eigen::Index b_cols = transpose_b ? k : n;

  Eigen::ThreadPoolDevice* device =
      MatMulWorthThreads(m, k, n) ? ThreadPoolFor(threads) : nullptr;
  if (device != nullptr) {
    using Matrix = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>>;
    Matrix ta(a, a_rows, a_cols);
    Matrix tb(b, b_rows, b_cols);
    Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>> tc(c, m, n);
    // Contract a's K axis with b's K axis; the result keeps a's free axis
    // first, then b's: [M, N].
    const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> axes = {
        Eigen::IndexPair<Eigen::Index>(transpose_a ? 0 : 1,
                                       transpose_b ? 1 : 0)};
    tc.device(*device) = ta.contract(tb, axes);
    return;
  }

  // One thread: Eigen's core GEMM, whose transposed views cost no copy.
  using Matrix =
      Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Matrix> ma(a, a_rows, a_cols);
  Eigen::Map<const Matrix> mb(b, b_rows, b_cols);
  Eigen::Map<Matrix> mc(c, m, n);
  if (!transpose_a && !transpose_b) {
    mc.noalias() = ma * mb;
  } else if (transpose_a && !transpose_b) {
    mc.noalias() = ma.transpose() * mb;
  } else if (!transpose_a && transpose_b) {
    mc.noalias() = ma * mb.transpose();
  } else {
    mc.noalias() = ma.transpose() * mb.transpose();
  }
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_MATMUL_EIGEN_H_
