// The arithmetic and index math of training.cu and of the training ops in
// reduction.cu: the element-wise gradients, the optimizer updates, the
// spread of a reduction's gradient over its input (SumGrad, MeanGrad), the
// reduction SumToShapeOf is, and the views' shapes.  __host__ __device__
// or plain host code, so that test_index_math.cu checks it without a GPU.
// Formulas are the CPU plugin's (plugins/cpu/train.cc,
// gradient_helpers_elementwise_array.cc, gradient_helpers_reduce_nn.cc),
// operation for operation.  Included by nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_TRAIN_OPS_H_
#define WEFT_PLUGINS_CUDA_TRAIN_OPS_H_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "reduce_ops.h"
#include "weft/plugin.h"

#define WEFT_CUDA_TRAIN_HD __host__ __device__ __forceinline__

namespace weft_cuda {

// ---- Element-wise gradients ----

enum GradOp : int { kReluGrad, kSigmoidGrad, kTanhGrad, kSqrtGrad, kRsqrtGrad };

template <typename T>
WEFT_CUDA_TRAIN_HD T SquareRoot(T x) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == sizeof(float)) return sqrtf(x);
  else return sqrt(x);
#else
  return std::sqrt(x);
#endif
}

// ReluGrad(grad, x) takes (a, b) = (grad, x); the others (y, grad).
template <int Op, typename T>
WEFT_CUDA_TRAIN_HD T ApplyGrad(T a, T b) {
  if constexpr (Op == kReluGrad) return b > T(0) ? a : T(0);
  if constexpr (Op == kSigmoidGrad) return b * a * (T(1) - a);
  if constexpr (Op == kTanhGrad) return b * (T(1) - a * a);
  if constexpr (Op == kSqrtGrad) return b * T(0.5) / a;
  if constexpr (Op == kRsqrtGrad) return b * T(-0.5) * a * a * a;
  return T(0);
}

// ---- Optimizer updates, one element each ----

// ApplyGradientDescent: var - alpha * delta.
template <typename T>
WEFT_CUDA_TRAIN_HD T DescentStep(T var, T alpha, T delta) {
  return var - alpha * delta;
}

// ApplyMomentum: accum' = accum * momentum + grad; var' = var - lr * accum'
// (Nesterov: var - (grad * lr + accum' * momentum * lr)).
template <typename T>
WEFT_CUDA_TRAIN_HD void MomentumStep(T var, T accum, T lr, T grad, T momentum,
                                     bool nesterov, T* var_out,
                                     T* accum_out) {
  const T a = accum * momentum + grad;
  *accum_out = a;
  *var_out = nesterov ? var - (grad * lr + a * momentum * lr) : var - lr * a;
}

// ApplyAdam's step size: lr * sqrt(1 - beta2_power) / (1 - beta1_power).
template <typename T>
WEFT_CUDA_TRAIN_HD T AdamAlpha(T lr, T beta1_power, T beta2_power) {
  return lr * SquareRoot(T(1) - beta2_power) / (T(1) - beta1_power);
}

// ApplyAdam: m' = m + (g - m)(1 - beta1); v' = v + (g^2 - v)(1 - beta2);
// var' = var - alpha * m' / (sqrt(v') + epsilon).
template <typename T>
WEFT_CUDA_TRAIN_HD void AdamStep(T var, T m, T v, T grad, T alpha, T beta1,
                                 T beta2, T epsilon, T* var_out, T* m_out,
                                 T* v_out) {
  const T m1 = m + (grad - m) * (T(1) - beta1);
  const T v1 = v + (grad * grad - v) * (T(1) - beta2);
  *m_out = m1;
  *v_out = v1;
  *var_out = var - alpha * m1 / (SquareRoot(v1) + epsilon);
}

// ---- OnesLike ----

// The bits of a 1 of `dtype` in the low bytes of *bits, and the element
// size (0 for a dtype with no fixed size).
inline size_t OnePattern(int32_t dtype, uint64_t* bits) {
  *bits = 0;
  switch (dtype) {
    case WEFT_FLOAT32: {
      const float one = 1.0f;
      uint32_t b = 0;
      std::memcpy(&b, &one, sizeof b);
      *bits = b;
      return 4;
    }
    case WEFT_FLOAT64: {
      const double one = 1.0;
      std::memcpy(bits, &one, sizeof one);
      return 8;
    }
    case WEFT_FLOAT16: *bits = 0x3C00; return 2;
    case WEFT_BFLOAT16: *bits = 0x3F80; return 2;
    default:
      *bits = 1;  // integers and bool
      return weft_dtype_size_of(dtype);
  }
}

// ---- SumGrad, MeanGrad: a reduction's gradient spread over x ----

// x's dims, outermost first, each with its stride in the index of the
// reduction it belongs to (0 on reduced axes), size-1 dims dropped and
// neighbours that run on merged: element i of x takes grad at
// SpaceOffset(i, rank, dims, strides).  `size` is the elements per
// reduction, `groups` the reductions (grad's element count).
struct SpreadLayout {
  int32_t rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t strides[WEFT_MAX_RANK];
  int64_t size;
  int64_t groups;
};

// `reduced[a]` non-zero: axis a of x (rank <= WEFT_MAX_RANK) is reduced.
inline SpreadLayout BuildSpread(const int64_t* x_dims, int32_t x_rank,
                                const bool* reduced) {
  SpreadLayout l{};
  l.size = 1;
  int64_t dims[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
  int32_t rank = 0;
  int64_t stride = 1;
  for (int32_t a = x_rank - 1; a >= 0; --a) {  // innermost first
    const int64_t d = x_dims[a];
    const int64_t s = reduced[a] ? 0 : stride;
    if (reduced[a]) {
      l.size *= d;
    } else {
      stride *= d;
    }
    if (d == 1) continue;
    if (rank > 0 && strides[rank - 1] * dims[rank - 1] == s) {
      dims[rank - 1] *= d;  // 0 * n == 0: reduced dims merge too
      continue;
    }
    dims[rank] = d;
    strides[rank] = s;
    ++rank;
  }
  l.groups = stride;
  l.rank = rank;
  for (int32_t i = 0; i < rank; ++i) {  // outermost first
    l.dims[i] = dims[rank - 1 - i];
    l.strides[i] = strides[rank - 1 - i];
  }
  return l;
}

// ---- ProdGrad ----

// The product of a group's nonzero elements and how many are zero, its
// elements taken in x's row-major order (the CPU's order): group `group` of
// the reduction `layout` (CoalesceReduce; x without dims of 0).
template <typename T>
__host__ __device__ __forceinline__ void ProdGroup(const T* x,
                                                   const ReduceLayout& layout,
                                                   int64_t group, T* nonzero,
                                                   int64_t* zeros) {
  const T* base = x + SpaceOffset(group, layout.kept_rank, layout.kept_dims,
                                  layout.kept_strides);
  T product = T(1);
  int64_t count = 0;
  for (int64_t r = 0; r < layout.reduced_count; ++r) {
    const T v = base[SpaceOffset(r, layout.reduced_rank, layout.reduced_dims,
                                 layout.reduced_strides)];
    if (v == T(0)) {
      ++count;
    } else {
      product *= v;
    }
  }
  *nonzero = product;
  *zeros = count;
}

// The product of the other elements of x's group: the nonzero product
// divided by x when the group has no zero; with one zero, that element's
// is the nonzero product and the others' 0; with more, 0.
template <typename T>
__host__ __device__ __forceinline__ T ProdOthers(T nonzero, int64_t zeros,
                                                 T x) {
  if (zeros == 0) return nonzero / x;
  if (zeros == 1 && x == T(0)) return nonzero;
  return T(0);
}

// ---- SumToShapeOf: a reduction over split dims ----

// Whether x sums into like's shape: like's rank at most x's and, aligned
// from the right, each dim of x a multiple of like's (0 only where like's
// is 0).
inline bool SumToShapeFits(const int64_t* x_dims, int32_t x_rank,
                           const int64_t* like_dims, int32_t like_rank) {
  const int32_t lead = x_rank - like_rank;
  if (lead < 0) return false;
  for (int32_t i = 0; i < like_rank; ++i) {
    const int64_t l = like_dims[i], d = x_dims[i + lead];
    if (l == 0 ? d != 0 : d % l != 0) return false;
  }
  return true;
}

// x summed into like's shape (SumToShapeFits must hold, and every dim of x
// be non-zero): x's extra leading dims are summed away and each aligned dim
// of x, q * l long where like's is l, splits into a reduced [q] and a kept
// [l] (x's element i adds into i mod l).  Fills the reduction layout of
// reduce_ops.h; false when it needs more than kMaxReduceGroups groups.
inline bool SumToShapeLayout(const int64_t* x_dims, int32_t x_rank,
                             const int64_t* like_dims, int32_t like_rank,
                             ReduceLayout* layout, bool* innermost_reduced) {
  const int32_t lead = x_rank - like_rank;
  // The split shape: lead dims reduced, then [q, l] per aligned dim.
  int64_t dims[3 * WEFT_MAX_RANK], reduced[3 * WEFT_MAX_RANK];
  int32_t rank = 0;
  for (int32_t i = 0; i < lead; ++i) {
    dims[rank] = x_dims[i];
    reduced[rank++] = 1;
  }
  for (int32_t i = 0; i < like_rank; ++i) {
    const int64_t l = like_dims[i];
    dims[rank] = x_dims[i + lead] / l;
    reduced[rank++] = 1;
    dims[rank] = l;
    reduced[rank++] = 0;
  }
  weft_kernel_tensor split{};
  split.struct_size = sizeof(split);
  split.rank = rank;
  split.dims = dims;
  return CoalesceReduce(split, reduced, layout, innermost_reduced);
}

// ---- BatchNormWithGlobalNormalization ----

// The CPU's per-channel factor (plugins/cpu/nn_channel.cc): 1 / sqrt(v +
// eps) in T, times gamma when scaling.
template <typename T>
WEFT_CUDA_TRAIN_HD T BatchNormFactor(T var, T eps, T gamma, bool scale) {
  T factor = T(1) / SquareRoot(var + eps);
  if (scale) factor *= gamma;
  return factor;
}

// (x - mean) * factor + beta, rounded after each operation as the CPU's
// loop is (built with -ffp-contract=off): on the device the multiply and
// add are the _rn intrinsics, which nvcc never fuses into an FMA.
template <typename T>
WEFT_CUDA_TRAIN_HD T BatchNormElement(T x, T mean, T factor, T beta) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == sizeof(float)) {
    return __fadd_rn(__fmul_rn(__fsub_rn(x, mean), factor), beta);
  } else {
    return __dadd_rn(__dmul_rn(__dsub_rn(x, mean), factor), beta);
  }
#else
  return (x - mean) * factor + beta;
#endif
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_TRAIN_OPS_H_
