// MatMul: validation around MatMulEigen().
#include <cstdint>

#include "kernel.h"
#include "matmul_eigen.h"

namespace weft_cpu {
namespace {

weft_status* MatMulKernel(weft_kernel_context* ctx) {
  Tensor a, b;
  if (weft_status* s = ReadInput(ctx, 0, &a)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &b)) return s;
  bool transpose_a = false, transpose_b = false;
  if (weft_status* s =
          OptionalBoolAttr(ctx, "transpose_a", false, &transpose_a)) {
    return s;
  }
  if (weft_status* s =
          OptionalBoolAttr(ctx, "transpose_b", false, &transpose_b)) {
    return s;
  }
  if (a.dtype != b.dtype) return DtypeMismatch(ctx, "input b", b.dtype, a.dtype);
  if (a.rank != 2 || b.rank != 2) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "inputs must be matrices (rank 2), got ranks %d and %d",
                     a.rank, b.rank);
  }
  const int64_t m = transpose_a ? a.dims[1] : a.dims[0];
  const int64_t k = transpose_a ? a.dims[0] : a.dims[1];
  const int64_t k_b = transpose_b ? b.dims[1] : b.dims[0];
  const int64_t n = transpose_b ? b.dims[0] : b.dims[1];
  if (k != k_b) {
    char as[64], bs[64];
    return NodeError(
        ctx, WEFT_INVALID_ARGUMENT,
        "inner dimensions differ: a%s%s and b%s%s give K = %lld vs %lld",
        FormatShape(a.dims, 2, as, sizeof as), transpose_a ? "^T" : "",
        FormatShape(b.dims, 2, bs, sizeof bs), transpose_b ? "^T" : "",
        static_cast<long long>(k), static_cast<long long>(k_b));
  }
  const int64_t dims[2] = {m, n};
  Tensor c;
  if (weft_status* s = AllocateOutput(ctx, 0, a.dtype, dims, 2, &c)) return s;
  if (c.count == 0) return nullptr;
  // Only products big enough to go parallel ask for the thread count.
  const int threads =
      MatMulWorthThreads(m, k, n) ? g_host->kernel_intra_op_threads(ctx) : 1;
  switch (a.dtype) {
    case WEFT_FLOAT32:
      MatMulEigen(a.data<float>(), b.data<float>(), c.data<float>(), m, k, n,
                  transpose_a, transpose_b, threads);
      return nullptr;
    case WEFT_FLOAT64:
      MatMulEigen(a.data<double>(), b.data<double>(), c.data<double>(), m, k,
                  n, transpose_a, transpose_b, threads);
      return nullptr;
    default:
      return UnsupportedDtype(ctx, a.dtype);
  }
}

}  // namespace

weft_status* RegisterMatMulKernels(const Registrar& registrar) {
  return registrar.Add("MatMul", {WEFT_FLOAT32, WEFT_FLOAT64},
                       Guarded<MatMulKernel>);
}

}  // namespace weft_cpu
