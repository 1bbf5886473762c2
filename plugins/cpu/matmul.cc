// MatMul: validation and dtype dispatch around oneDNN (matmul_onednn.h) and
// Eigen (matmul_eigen.h), and the product helpers BatchMatMul shares
// (matmul_product.h).
//
// float32 goes to oneDNN's matmul primitive whenever oneDNN is present and
// the product is not tiny.  The plugin is compiled for baseline x86-64, so
// Eigen's GEMM runs SSE2 code, while oneDNN dispatches AVX2/AVX-512 kernels
// at run time.  Measured on the development machine (2 cores of an AVX-512
// AMD EPYC, shared with other jobs, so per second of CPU time; 1024^3
// float32, MatMulEigen vs MatMulOnednn): Eigen 33-37 GFLOP/s, oneDNN
// 82-100 GFLOP/s, on 1 and 2 threads.  Below about 32^3 Eigen wins: setting
// up oneDNN's call costs some microseconds, more than the whole product.
//
// float64 and the integers stay with Eigen (oneDNN has no such GEMM);
// integers multiply as their unsigned counterparts, so overflow wraps as
// two's complement instead of being undefined.  float16 and bfloat16 run
// natively in oneDNN where the CPU has an implementation (bfloat16 on
// AVX512-BF16 or AMX: float32 accumulation, inputs' subnormals flushed);
// otherwise they are widened to float32, multiplied and rounded back.
#include <cstdint>
#include <cstring>
#include <memory>

#include <Eigen/Core>

#include "kernel.h"
#include "matmul_eigen.h"
#include "matmul_product.h"
#if WEFT_CPU_HAVE_ONEDNN
#include "matmul_onednn.h"
#endif

namespace weft_cpu {

bool MatMulPrefersOnednn(int64_t m, int64_t k, int64_t n) {
#if WEFT_CPU_HAVE_ONEDNN
  // In double: the product of three dims may overflow int64.
  return static_cast<double>(m) * static_cast<double>(k) *
             static_cast<double>(n) >=
         32768.0;  // 32^3
#else
  (void)m, (void)k, (void)n;
  return false;
#endif
}

void MatMulTyped(int32_t dtype, const void* a, const void* b, void* c,
                 int64_t m, int64_t k, int64_t n, bool transpose_a,
                 bool transpose_b, int threads) {
  switch (dtype) {
    case WEFT_FLOAT32: {
      const float* fa = static_cast<const float*>(a);
      const float* fb = static_cast<const float*>(b);
      float* fc = static_cast<float*>(c);
#if WEFT_CPU_HAVE_ONEDNN
      if (MatMulPrefersOnednn(m, k, n) &&
          MatMulOnednn(fa, fb, fc, m, k, n, transpose_a, transpose_b,
                       threads)) {
        return;
      }
#endif
      MatMulEigen(fa, fb, fc, m, k, n, transpose_a, transpose_b, threads);
      return;
    }
    case WEFT_FLOAT64:
      MatMulEigen(static_cast<const double*>(a), static_cast<const double*>(b),
                  static_cast<double*>(c), m, k, n, transpose_a, transpose_b,
                  threads);
      return;
    case WEFT_INT32:
      MatMulEigen(static_cast<const uint32_t*>(a),
                  static_cast<const uint32_t*>(b), static_cast<uint32_t*>(c),
                  m, k, n, transpose_a, transpose_b, threads);
      return;
    case WEFT_INT64:
      MatMulEigen(static_cast<const uint64_t*>(a),
                  static_cast<const uint64_t*>(b), static_cast<uint64_t*>(c),
                  m, k, n, transpose_a, transpose_b, threads);
      return;
    default:
      return;
  }
}

namespace {

template <typename Half>
void Widen(const weft_kernel_context* ctx, const void* src, float* dst,
           int64_t count) {
  const Half* in = static_cast<const Half*>(src);
  ParallelFor(ctx, count, 1, 4.0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = static_cast<float>(in[i]);
  });
}

template <typename Half>
void Narrow(const weft_kernel_context* ctx, const float* src, void* dst,
            int64_t count) {
  Half* out = static_cast<Half*>(dst);
  ParallelFor(ctx, count, 1, 8.0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = Half(src[i]);
  });
}

}  // namespace

void HalfToFloat(const weft_kernel_context* ctx, int32_t dtype,
                 const void* src, float* dst, int64_t count) {
  if (dtype == WEFT_FLOAT16) {
    Widen<Eigen::half>(ctx, src, dst, count);
  } else {
    Widen<Eigen::bfloat16>(ctx, src, dst, count);
  }
}

void FloatToHalf(const weft_kernel_context* ctx, int32_t dtype,
                 const float* src, void* dst, int64_t count) {
  if (dtype == WEFT_FLOAT16) {
    Narrow<Eigen::half>(ctx, src, dst, count);
  } else {
    Narrow<Eigen::bfloat16>(ctx, src, dst, count);
  }
}

namespace {

weft_status* HalfMatMul(const weft_kernel_context* ctx, const Tensor& a,
                        const Tensor& b, const Tensor& c, int64_t m,
                        int64_t k, int64_t n, bool transpose_a,
                        bool transpose_b, int threads) {
#if WEFT_CPU_HAVE_ONEDNN
  if (MatMulPrefersOnednn(m, k, n)) {
    const MatMulGeometry g =
        MatMul2D(m, k, n, transpose_a, transpose_b,
                 a.dtype == WEFT_FLOAT16 ? dnnl_f16 : dnnl_bf16, threads);
    if (OnednnMatMul(g, a.base, b.base, c.base)) return nullptr;
  }
#endif
  // Uninitialised: every element is written before it is read.
  std::unique_ptr<float[]> wide(
      new float[static_cast<size_t>(a.count + b.count + c.count)]);
  float* fa = wide.get();
  float* fb = fa + a.count;
  float* fc = fb + b.count;
  HalfToFloat(ctx, a.dtype, a.base, fa, a.count);
  HalfToFloat(ctx, b.dtype, b.base, fb, b.count);
  MatMulTyped(WEFT_FLOAT32, fa, fb, fc, m, k, n, transpose_a, transpose_b,
              threads);
  FloatToHalf(ctx, c.dtype, fc, c.base, c.count);
  return nullptr;
}

}  // namespace

weft_status* ReadMatMulOperands(weft_kernel_context* ctx, int32_t first,
                                Tensor* a, Tensor* b, MatMulShape* shape) {
  if (weft_status* s = ReadInput(ctx, first, a)) return s;
  if (weft_status* s = ReadInput(ctx, first + 1, b)) return s;
  bool transpose_a = false, transpose_b = false;
  if (weft_status* s =
          OptionalBoolAttr(ctx, "transpose_a", false, &transpose_a)) {
    return s;
  }
  if (weft_status* s =
          OptionalBoolAttr(ctx, "transpose_b", false, &transpose_b)) {
    return s;
  }
  if (a->dtype != b->dtype)
    return DtypeMismatch(ctx, "input b", b->dtype, a->dtype);
  if (a->rank != 2 || b->rank != 2) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "inputs must be matrices (rank 2), got ranks %d and %d",
                     a->rank, b->rank);
  }
  shape->transpose_a = transpose_a;
  shape->transpose_b = transpose_b;
  shape->m = transpose_a ? a->dims[1] : a->dims[0];
  shape->k = transpose_a ? a->dims[0] : a->dims[1];
  const int64_t k_b = transpose_b ? b->dims[1] : b->dims[0];
  shape->n = transpose_b ? b->dims[0] : b->dims[1];
  if (shape->k != k_b) {
    char as[64], bs[64];
    return NodeError(
        ctx, WEFT_INVALID_ARGUMENT,
        "inner dimensions differ: a%s%s and b%s%s give K = %lld vs %lld",
        FormatShape(a->dims, 2, as, sizeof as), transpose_a ? "^T" : "",
        FormatShape(b->dims, 2, bs, sizeof bs), transpose_b ? "^T" : "",
        static_cast<long long>(shape->k), static_cast<long long>(k_b));
  }
  return nullptr;
}

namespace {

weft_status* MatMulKernel(weft_kernel_context* ctx) {
  Tensor a, b;
  MatMulShape shape;
  if (weft_status* s = ReadMatMulOperands(ctx, 0, &a, &b, &shape)) return s;
  const int64_t m = shape.m, k = shape.k, n = shape.n;
  const bool transpose_a = shape.transpose_a, transpose_b = shape.transpose_b;
  switch (a.dtype) {
    case WEFT_FLOAT16: case WEFT_BFLOAT16: case WEFT_FLOAT32:
    case WEFT_FLOAT64: case WEFT_INT32: case WEFT_INT64:
      break;
    default:
      return UnsupportedDtype(ctx, a.dtype);
  }
  const int64_t dims[2] = {m, n};
  Tensor c;
  if (weft_status* s = AllocateOutput(ctx, 0, a.dtype, dims, 2, &c)) return s;
  if (c.count == 0) return nullptr;
  if (k == 0) {  // every element is an empty sum; zero bits are 0 in all types
    std::memset(c.base, 0, static_cast<size_t>(c.count) *
                               weft_dtype_size_of(c.dtype));
    return nullptr;
  }
  // Only products big enough to go parallel ask for the thread count.
  const int threads =
      MatMulWorthThreads(m, k, n) ? g_host->kernel_intra_op_threads(ctx) : 1;
  if (a.dtype == WEFT_FLOAT16 || a.dtype == WEFT_BFLOAT16) {
    return HalfMatMul(ctx, a, b, c, m, k, n, transpose_a, transpose_b,
                      threads);
  }
  MatMulTyped(a.dtype, a.base, b.base, c.base, m, k, n, transpose_a,
              transpose_b, threads);
  return nullptr;
}

}  // namespace

weft_status* RegisterMatMulKernels(const Registrar& registrar) {
  return registrar.Add("MatMul",
                       {WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32,
                        WEFT_FLOAT64, WEFT_INT32, WEFT_INT64},
                       Guarded<MatMulKernel>);
}

}  // namespace weft_cpu
