// Softmax cross-entropy losses, dense and sparse labels: loss [B] and the
// gradient with respect to the logits, backprop [B, C].
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <Eigen/Core>

#include "exact_math.h"
#include "kernel.h"
#include "nn_kernels.h"

namespace weft_cpu {
namespace {

// Rows are taken in groups of GroupRows(c): up to kGroupRows rows of up to
// kGroupElements elements in all, one row when it has more.  Groups start
// at multiples of that whatever the thread count (ParallelFor hands out
// groups), so a row's bits never depend on how the batch was split.
constexpr int64_t kGroupRows = 16;
constexpr int64_t kGroupElements = 1024;
inline int64_t GroupRows(int64_t c) {
  const int64_t rows = kGroupElements / c;
  return rows < 1 ? 1 : rows > kGroupRows ? kGroupRows : rows;
}
// Rows this long take Eigen's vectorised max and sum; shorter ones loops,
// which cost less than its setup.
constexpr int64_t kVectorRow = 64;

// softmax over each of `rows` (<= GroupRows(c)) rows of `c` (> 0) classes of
// x into `prob`, and per row the max and log(sum(exp(x - max))).  The loss
// is then lse - (x - max) per class, computed from x itself rather than
// from log(prob), which would turn an underflowed probability into an
// infinite loss.  The exp runs once over the group's rows (x - max written
// into prob first): per row, Eigen's exp of 10 classes took its unaligned
// head and tail through the C library's scalar expf, and the MLP's loss
// (100 rows of 10) cost 7.8 us against 4.3 grouped (microbenchmark, one
// thread, Ice Lake Xeon); traced in the step, 7.9 - 8.9 against 5.5 - 6.3.
template <typename T>
void GroupSoftmax(const T* x, int64_t rows, int64_t c, T* prob, T* max,
                  T* lse) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x + r * c;
    T* out = prob + r * c;
    T m = in[0];
    if (c >= kVectorRow) {
      m = Eigen::Map<const Array>(in, c).maxCoeff();
    } else {
      for (int64_t k = 1; k < c; ++k) m = in[k] > m ? in[k] : m;
    }
    for (int64_t k = 0; k < c; ++k) out[k] = in[k] - m;
    max[r] = m;
  }
  ExactExp(prob, prob, rows * c);
  for (int64_t r = 0; r < rows; ++r) {
    T* out = prob + r * c;
    T sum = 0;
    if (c >= kVectorRow) {
      sum = Eigen::Map<const Array>(out, c).sum();
    } else {
      for (int64_t k = 0; k < c; ++k) sum += out[k];
    }
    const T inverse = T(1) / sum;
    for (int64_t k = 0; k < c; ++k) out[k] *= inverse;
    lse[r] = std::log(sum);
  }
}

// fn(first_row, rows, max, lse) for each group of rows of a [batch, c]
// problem, groups spread over the intra-op threads.
template <typename T, typename Fn>
void ForEachGroup(const weft_kernel_context* ctx, int64_t batch, int64_t c,
                  double cycles_per_row, Fn&& fn) {
  const int64_t per_group = GroupRows(c);
  const int64_t groups = (batch + per_group - 1) / per_group;
  ParallelFor(ctx, groups, per_group * c,
              cycles_per_row * static_cast<double>(per_group),
              [&](int64_t begin, int64_t end) {
                T max[kGroupRows], lse[kGroupRows];
                for (int64_t g = begin; g < end; ++g) {
                  const int64_t first = g * per_group;
                  const int64_t rows = batch - first < per_group
                                           ? batch - first
                                           : per_group;
                  fn(first, rows, max, lse);
                }
              });
}

struct LossOutputs {
  Tensor loss, backprop;
};

// Validates features [B, C] and allocates loss [B] and backprop [B, C].
weft_status* PrepareLoss(weft_kernel_context* ctx, const Tensor& features,
                         LossOutputs* out) {
  if (features.rank != 2) {
    char buf[96];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "features must be [batch, classes], got %s",
                     FormatShape(features.dims, features.rank, buf,
                                 sizeof buf));
  }
  if (weft_status* s = AllocateOutput(ctx, 0, features.dtype, features.dims,
                                      1, &out->loss)) {
    return s;
  }
  return AllocateOutput(ctx, 1, features.dtype, features.dims, 2,
                        &out->backprop);
}

template <typename T>
void DenseXent(const weft_kernel_context* ctx, const Tensor& features,
               const Tensor& labels, const LossOutputs& out) {
  const int64_t c = features.dims[1];
  const T* x = features.data<T>();
  const T* l = labels.data<T>();
  T* loss = out.loss.data<T>();
  T* grad = out.backprop.data<T>();
  if (c == 0) {  // no classes: every loss is an empty sum
    std::fill_n(loss, features.dims[0], T(0));
    return;
  }
  ForEachGroup<T>(ctx, features.dims[0], c, 40.0 * static_cast<double>(c),
                  [&](int64_t first, int64_t rows, T* max, T* lse) {
                    GroupSoftmax(x + first * c, rows, c, grad + first * c,
                                 max, lse);
                    for (int64_t r = 0; r < rows; ++r) {
                      const int64_t b = first + r;
                      const T* xr = x + b * c;
                      const T* lr = l + b * c;
                      T* gr = grad + b * c;
                      T sum = 0;
                      for (int64_t k = 0; k < c; ++k) {
                        sum += lr[k] * (lse[r] - (xr[k] - max[r]));
                        gr[k] -= lr[k];
                      }
                      loss[b] = sum;
                    }
                  });
}

weft_status* DenseXentKernel(weft_kernel_context* ctx) {
  Tensor features, labels;
  if (weft_status* s = ReadInput(ctx, 0, &features)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &labels)) return s;
  if (labels.dtype != features.dtype) {
    return DtypeMismatch(ctx, "labels", labels.dtype, features.dtype);
  }
  if (labels.rank != 2 || features.rank != 2 ||
      labels.dims[0] != features.dims[0] ||
      labels.dims[1] != features.dims[1]) {
    char a[96], b[96];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "features %s and labels %s must both be [batch, "
                     "classes]",
                     FormatShape(features.dims, features.rank, a, sizeof a),
                     FormatShape(labels.dims, labels.rank, b, sizeof b));
  }
  LossOutputs out;
  if (weft_status* s = PrepareLoss(ctx, features, &out)) return s;
  if (out.loss.count == 0) return nullptr;
  switch (features.dtype) {
    case WEFT_FLOAT32:
      DenseXent<float>(ctx, features, labels, out);
      return nullptr;
    case WEFT_FLOAT64:
      DenseXent<double>(ctx, features, labels, out);
      return nullptr;
    default:
      return UnsupportedDtype(ctx, features.dtype);
  }
}

// Checked before any arithmetic so that a bad label fails the whole node
// cleanly, naming the first offending row.
template <typename L>
weft_status* CheckLabels(const weft_kernel_context* ctx, const L* labels,
                         int64_t batch, int64_t classes) {
  for (int64_t b = 0; b < batch; ++b) {
    if (labels[b] < 0 || static_cast<int64_t>(labels[b]) >= classes) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "label %lld in batch row %lld is outside the valid "
                       "range [0, %lld)",
                       static_cast<long long>(labels[b]),
                       static_cast<long long>(b),
                       static_cast<long long>(classes));
    }
  }
  return nullptr;
}

template <typename T, typename L>
weft_status* SparseXent(const weft_kernel_context* ctx, const Tensor& features,
                        const Tensor& labels, const LossOutputs& out) {
  const int64_t batch = features.dims[0];
  const int64_t c = features.dims[1];
  const L* l = labels.data<L>();
  if (weft_status* s = CheckLabels(ctx, l, batch, c)) return s;
  const T* x = features.data<T>();
  T* loss = out.loss.data<T>();
  T* grad = out.backprop.data<T>();
  ForEachGroup<T>(ctx, batch, c, 30.0 * static_cast<double>(c),
                  [&](int64_t first, int64_t rows, T* max, T* lse) {
                    GroupSoftmax(x + first * c, rows, c, grad + first * c,
                                 max, lse);
                    for (int64_t r = 0; r < rows; ++r) {
                      const int64_t b = first + r;
                      const int64_t label = static_cast<int64_t>(l[b]);
                      loss[b] = lse[r] - (x[b * c + label] - max[r]);
                      grad[b * c + label] -= T(1);
                    }
                  });
  return nullptr;
}

template <typename T>
weft_status* SparseXentFor(const weft_kernel_context* ctx,
                           const Tensor& features, const Tensor& labels,
                           const LossOutputs& out) {
  switch (labels.dtype) {
    case WEFT_INT32: return SparseXent<T, int32_t>(ctx, features, labels, out);
    case WEFT_INT64: return SparseXent<T, int64_t>(ctx, features, labels, out);
    default:
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "labels must be int32 or int64, got %s",
                       DtypeName(labels.dtype));
  }
}

weft_status* SparseXentKernel(weft_kernel_context* ctx) {
  Tensor features, labels;
  if (weft_status* s = ReadInput(ctx, 0, &features)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &labels)) return s;
  if (labels.rank != 1 || features.rank != 2 ||
      labels.dims[0] != features.dims[0]) {
    char a[96], b[96];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "features %s must be [batch, classes] and labels %s "
                     "[batch]",
                     FormatShape(features.dims, features.rank, a, sizeof a),
                     FormatShape(labels.dims, labels.rank, b, sizeof b));
  }
  LossOutputs out;
  if (weft_status* s = PrepareLoss(ctx, features, &out)) return s;
  if (out.loss.count == 0) return nullptr;
  switch (features.dtype) {
    case WEFT_FLOAT32: return SparseXentFor<float>(ctx, features, labels, out);
    case WEFT_FLOAT64: return SparseXentFor<double>(ctx, features, labels, out);
    default: return UnsupportedDtype(ctx, features.dtype);
  }
}

}  // namespace

weft_status* RegisterXentKernels(const Registrar& registrar) {
  if (weft_status* s = registrar.Add("SoftmaxCrossEntropyWithLogits",
                                     {WEFT_FLOAT32, WEFT_FLOAT64},
                                     Guarded<DenseXentKernel>)) {
    return s;
  }
  return registrar.Add("SparseSoftmaxCrossEntropyWithLogits",
                       {WEFT_FLOAT32, WEFT_FLOAT64},
                       Guarded<SparseXentKernel>);
}

}  // namespace weft_cpu
