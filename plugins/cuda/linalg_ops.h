// The per-matrix code of MatrixInverse and MatrixDeterminant (linalg.cu):
// an LU factorisation with partial pivoting, in place, one matrix per
// thread, and the CPU plugin's rules on top of it (plugins/cpu/
// linalg_lu.cc): a matrix is singular to working precision when its
// smallest pivot is at most M·ε times its largest (NaN and an infinite
// pivot included), an input with a NaN or infinity is not invertible, and
// a determinant is the pivots' product kept as a mantissa and a binary
// exponent, so partial products never over- or underflow.  The CPU
// factors with Eigen's blocked PartialPivLU, whose rounding differs:
// results agree to rounding, not bit for bit.  __host__ __device__ so
// that test_index_math.cu checks it on the host.  Included by
// nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_LINALG_OPS_H_
#define WEFT_PLUGINS_CUDA_LINALG_OPS_H_

#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstdint>

#define WEFT_CUDA_LINALG_HD __host__ __device__ inline

namespace weft_cuda {

template <typename T>
WEFT_CUDA_LINALG_HD T LinalgAbs(T v) {
  return v < T(0) ? -v : v;
}

// Neither NaN nor infinite (inf - inf and NaN - NaN are NaN).
template <typename T>
WEFT_CUDA_LINALG_HD bool LinalgFinite(T v) {
  return v - v == T(0);
}

// Factors the row-major [n, n] matrix `a` in place into L (unit lower,
// below the diagonal) and U, choosing as pivot the first entry of largest
// magnitude in the column, as Eigen does, and skipping the elimination
// below a zero pivot.  perm[i] is the input row now at row i; *sign is the
// permutation's determinant (+1 or -1).
template <typename T>
WEFT_CUDA_LINALG_HD void LuFactor(T* a, int64_t n, int64_t* perm, int* sign) {
  *sign = 1;
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    T best = LinalgAbs(a[c * n + c]);
    for (int64_t r = c + 1; r < n; ++r) {
      const T v = LinalgAbs(a[r * n + c]);
      if (v > best) {
        best = v;
        pivot = r;
      }
    }
    if (pivot != c) {
      for (int64_t j = 0; j < n; ++j) {
        const T t = a[c * n + j];
        a[c * n + j] = a[pivot * n + j];
        a[pivot * n + j] = t;
      }
      const int64_t t = perm[c];
      perm[c] = perm[pivot];
      perm[pivot] = t;
      *sign = -*sign;
    }
    const T d = a[c * n + c];
    if (d == T(0)) continue;
    for (int64_t r = c + 1; r < n; ++r) {
      const T f = a[r * n + c] / d;
      a[r * n + c] = f;
      for (int64_t j = c + 1; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
    }
  }
}

template <typename T>
WEFT_CUDA_LINALG_HD T LinalgEpsilon() {
  return sizeof(T) == sizeof(float) ? static_cast<T>(FLT_EPSILON)
                                    : static_cast<T>(DBL_EPSILON);
}

// The CPU's rule: the smallest pivot's magnitude at most n·ε times the
// largest's, or any pivot NaN, or the largest infinite.  n >= 1.
template <typename T>
WEFT_CUDA_LINALG_HD bool LuSingular(const T* lu, int64_t n) {
  T largest = LinalgAbs(lu[0]), smallest = largest;
  bool nan = largest != largest;
  for (int64_t d = 1; d < n; ++d) {
    const T v = LinalgAbs(lu[d * n + d]);
    nan = nan || v != v;
    if (v > largest) largest = v;
    if (v < smallest) smallest = v;
  }
  const T threshold = static_cast<T>(n) * LinalgEpsilon<T>() * largest;
  return nan || !(smallest > threshold) || !LinalgFinite(largest);
}

// Column `col` of the inverse from the factors: solves L U x = P e_col and
// writes x[i] to out[i * stride] (stride n for the inverse, 1 for its
// transpose, the adjoint, written as row `col`).
template <typename T>
WEFT_CUDA_LINALG_HD void LuSolveUnit(const T* lu, const int64_t* perm,
                                     int64_t n, int64_t col, T* out,
                                     int64_t stride) {
  // Forward substitution with the unit lower factor.
  for (int64_t i = 0; i < n; ++i) {
    T v = perm[i] == col ? T(1) : T(0);
    for (int64_t j = 0; j < i; ++j) v -= lu[i * n + j] * out[j * stride];
    out[i * stride] = v;
  }
  // Back substitution with the upper factor.
  for (int64_t i = n; i-- > 0;) {
    T v = out[i * stride];
    for (int64_t j = i + 1; j < n; ++j) v -= lu[i * n + j] * out[j * stride];
    out[i * stride] = v / lu[i * n + i];
  }
}

// MatrixInverse of one [n, n] matrix: `work` (n * n) and `perm` (n) are
// its scratch.  False, with `out` zeroed, when the input is not finite or
// is singular to working precision (the CPU's refusal).
template <typename T>
WEFT_CUDA_LINALG_HD bool InvertMatrix(const T* in, T* out, T* work,
                                      int64_t* perm, int64_t n,
                                      bool adjoint) {
  bool finite = true;
  for (int64_t i = 0; i < n * n; ++i) {
    finite = finite && LinalgFinite(in[i]);
    work[i] = in[i];
  }
  int sign = 1;
  if (finite) LuFactor(work, n, perm, &sign);
  if (!finite || LuSingular(work, n)) {
    for (int64_t i = 0; i < n * n; ++i) out[i] = T(0);
    return false;
  }
  for (int64_t col = 0; col < n; ++col) {
    if (adjoint) {
      LuSolveUnit(work, perm, n, col, out + col * n, 1);
    } else {
      LuSolveUnit(work, perm, n, col, out + col, n);
    }
  }
  return true;
}

// double to T, out-of-range values becoming infinities (the CPU's Narrow).
template <typename T>
WEFT_CUDA_LINALG_HD T NarrowDeterminant(double v) {
  const double max = sizeof(T) == sizeof(float) ? static_cast<double>(FLT_MAX)
                                                : DBL_MAX;
  if (v > max) return static_cast<T>(HUGE_VAL);
  if (v < -max) return static_cast<T>(-HUGE_VAL);
  return static_cast<T>(v);
}

// MatrixDeterminant of one [n, n] matrix (1 for n = 0), factored in
// `work` (n * n) with `perm` (n): the pivots' product, each step
// renormalised by frexp as the CPU does.
template <typename T>
WEFT_CUDA_LINALG_HD T MatrixDeterminantOf(const T* in, T* work,
                                          int64_t* perm, int64_t n) {
  if (n == 0) return T(1);
  for (int64_t i = 0; i < n * n; ++i) work[i] = in[i];
  int sign = 1;
  LuFactor(work, n, perm, &sign);
  double mantissa = sign;
  int exponent = 0;
  for (int64_t d = 0; d < n; ++d) {
    int e = 0;
    mantissa = frexp(mantissa * static_cast<double>(work[d * n + d]), &e);
    exponent += e;
  }
  return NarrowDeterminant<T>(ldexp(mantissa, exponent));
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_LINALG_OPS_H_
