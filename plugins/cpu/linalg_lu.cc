// MatrixInverse and MatrixDeterminant: one LU factorisation with partial
// pivoting (Eigen's PartialPivLU, blocked) per [M, M] matrix of the batch.
//
// Singular, for MatrixInverse, means singular to working precision: some
// pivot is at most M·ε times the largest one in magnitude (ε of the dtype),
// which covers exactly singular matrices and those whose inverse would be
// rounding noise; a NaN or infinite entry is refused the same way.  This is
// the rank threshold Eigen's FullPivLU uses, applied to PartialPivLU's
// pivots, so that the common case keeps the faster factorisation.
//
// Determinants are the pivots' product, kept as a mantissa and a binary
// exponent so that a product whose partial results leave the dtype's range
// still comes out right when the final value fits.  A 0x0 matrix has
// determinant 1 (the empty product).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include <Eigen/Core>
#include <Eigen/LU>

#include "kernel.h"

namespace weft_cpu {
namespace {

template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Reads the [..., M, M] input; *size is M, *count the number of matrices.
weft_status* ReadSquare(weft_kernel_context* ctx, Tensor* x, int64_t* size,
                        int64_t* count) {
  if (weft_status* s = ReadInput(ctx, 0, x)) return s;
  char shape[128];
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "input must be square matrices [..., M, M], got %s",
                     FormatShape(x->dims, x->rank, shape, sizeof shape));
  }
  if (x->dtype != WEFT_FLOAT32 && x->dtype != WEFT_FLOAT64) {
    return UnsupportedDtype(ctx, x->dtype);
  }
  *size = x->dims[x->rank - 1];
  *count = 1;
  for (int32_t i = 0; i < x->rank - 2; ++i) *count *= x->dims[i];
  return nullptr;
}

template <typename T>
bool SingularToWorkingPrecision(const Matrix<T>& lu) {
  const auto pivots = lu.diagonal().cwiseAbs();
  const T largest = pivots.template maxCoeff<Eigen::PropagateNaN>();
  const T smallest = pivots.template minCoeff<Eigen::PropagateNaN>();
  const T threshold = static_cast<T>(lu.rows()) *
                      std::numeric_limits<T>::epsilon() * largest;
  // Written so that NaN (and an infinite largest pivot) count as singular.
  return !(smallest > threshold) || !std::isfinite(largest);
}

// Splits the batch over the kernel's threads; each chunk reuses one
// factorisation's storage.  *first_bad gets the smallest index for which
// `body` returned false.
template <typename T, typename Body>
void ForEachMatrix(const weft_kernel_context* ctx, int64_t count,
                   int64_t size, std::atomic<int64_t>* first_bad,
                   Body&& body) {
  const double cost = static_cast<double>(size) * static_cast<double>(size) *
                      static_cast<double>(size);
  ParallelFor(ctx, count, size * size * size, cost,
              [&](int64_t begin, int64_t end) {
                Eigen::PartialPivLU<Matrix<T>> lu(size);
                for (int64_t i = begin; i < end; ++i) {
                  if (body(i, &lu)) continue;
                  int64_t seen = first_bad->load();
                  while (i < seen && !first_bad->compare_exchange_weak(seen, i)) {
                  }
                }
              });
}

template <typename T>
weft_status* Invert(const weft_kernel_context* ctx, const Tensor& x,
                    const Tensor& y, int64_t size, int64_t count,
                    bool adjoint) {
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const int64_t step = size * size;
  std::atomic<int64_t> first_bad{count};
  ForEachMatrix<T>(
      ctx, count, size, &first_bad,
      [&](int64_t i, Eigen::PartialPivLU<Matrix<T>>* lu) {
        Eigen::Map<const Matrix<T>> a(in + i * step, size, size);
        Eigen::Map<Matrix<T>> inverse(out + i * step, size, size);
        // A NaN or infinity need not reach a pivot (it can sit above one),
        // so the input itself is checked.
        if (!a.allFinite()) return false;
        // inverse(Aᵀ) = inverse(A)ᵀ: factor the matrix as stored either way.
        lu->compute(a);
        if (SingularToWorkingPrecision<T>(lu->matrixLU())) return false;
        inverse.noalias() = lu->inverse();
        if (adjoint) inverse.transposeInPlace();
        return true;
      });
  const int64_t bad = first_bad.load();
  if (bad < count) {
    char shape[128];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "matrix %lld of the batch (input %s) is not invertible: "
                     "it is singular to working precision or not finite",
                     static_cast<long long>(bad),
                     FormatShape(x.dims, x.rank, shape, sizeof shape));
  }
  return nullptr;
}

// double to T, out-of-range values becoming infinities (a conversion that
// C++ leaves undefined).
template <typename T>
T Narrow(double v) {
  constexpr double kMax = static_cast<double>(std::numeric_limits<T>::max());
  if (v > kMax) return std::numeric_limits<T>::infinity();
  if (v < -kMax) return -std::numeric_limits<T>::infinity();
  return static_cast<T>(v);
}

template <typename T>
void Determinants(const weft_kernel_context* ctx, const Tensor& x,
                  const Tensor& y, int64_t size, int64_t count) {
  const T* in = x.data<T>();
  T* out = y.data<T>();
  if (size == 0) {
    std::fill(out, out + count, T(1));
    return;
  }
  const int64_t step = size * size;
  std::atomic<int64_t> unused{count};
  ForEachMatrix<T>(
      ctx, count, size, &unused,
      [&](int64_t i, Eigen::PartialPivLU<Matrix<T>>* lu) {
        lu->compute(Eigen::Map<const Matrix<T>>(in + i * step, size, size));
        const Matrix<T>& factors = lu->matrixLU();
        // Each factor renormalised into [0.5, 1) with its exponent moved to
        // `exponent`, so no partial product over- or underflows.
        double mantissa = lu->permutationP().determinant();
        int exponent = 0;
        for (int64_t d = 0; d < size; ++d) {
          int e = 0;
          mantissa = std::frexp(mantissa * static_cast<double>(factors(d, d)), &e);
          exponent += e;
        }
        out[i] = Narrow<T>(std::ldexp(mantissa, exponent));
        return true;
      });
}

weft_status* InverseKernel(weft_kernel_context* ctx) {
  Tensor x;
  int64_t size = 0, count = 0;
  if (weft_status* s = ReadSquare(ctx, &x, &size, &count)) return s;
  bool adjoint = false;
  if (weft_status* s = OptionalBoolAttr(ctx, "adjoint", false, &adjoint)) {
    return s;
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  if (x.dtype == WEFT_FLOAT32) {
    return Invert<float>(ctx, x, y, size, count, adjoint);
  }
  return Invert<double>(ctx, x, y, size, count, adjoint);
}

weft_status* DeterminantKernel(weft_kernel_context* ctx) {
  Tensor x;
  int64_t size = 0, count = 0;
  if (weft_status* s = ReadSquare(ctx, &x, &size, &count)) return s;
  Tensor y;
  if (weft_status* s =
          AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank - 2, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  if (x.dtype == WEFT_FLOAT32) {
    Determinants<float>(ctx, x, y, size, count);
  } else {
    Determinants<double>(ctx, x, y, size, count);
  }
  return nullptr;
}

}  // namespace

weft_status* RegisterMatrixLuKernels(const Registrar& registrar) {
  const auto types = {int32_t{WEFT_FLOAT32}, int32_t{WEFT_FLOAT64}};
  if (weft_status* s =
          registrar.Add("MatrixInverse", types, Guarded<InverseKernel>)) {
    return s;
  }
  return registrar.Add("MatrixDeterminant", types,
                       Guarded<DeterminantKernel>);
}

}  // namespace weft_cpu
