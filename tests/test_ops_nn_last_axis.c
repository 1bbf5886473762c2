/* The NN ops of runtime/ops/CONVENTIONS.md that work along the last axis,
 * on the CPU: Softmax and LogSoftmax, softmax cross-entropy (dense and
 * sparse labels), BiasAdd and BatchNormWithGlobalNormalization, against
 * references written here from their definitions on fixed-seed inputs, in
 * float32 and float64; plus hand-worked cases and the errors the contract
 * promises.  Inputs go through placeholders so nothing is folded away. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ops_nn_support.h"
#include "test_support.h"

/* ---- Softmax, LogSoftmax ------------------------------------------------ */

static void softmax_reference(const double* x, int64_t rows, int64_t cols,
                              int log_of, double* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * cols;
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
    for (int64_t c = 0; c < cols; ++c) sum += exp(xr[c] - max);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = log_of ? xr[c] - max - log(sum)
                               : exp(xr[c] - max) / sum;
  }
}

static void check_softmax(const char* op, const double* x, int64_t rows,
                          int64_t cols, weft_dtype dtype) {
  double ref[64];
  softmax_reference(x, rows, cols, strcmp(op, "LogSoftmax") == 0, ref);
  void* xd = as_dtype(x, rows * cols, dtype);
  operand in = {dtype, 2, {rows, cols}, xd};
  weft_tensor* out = run_nn(op, &in, 1, NULL);
  wt_expect_shape(out, dtype, WT_SHAPE(rows, cols));
  expect_close(out, ref, rows * cols, 1e-5);
  weft_tensor_destroy(out);
  free(xd);
}

Test(ops_nn_last_axis, softmax_and_log_softmax) {
  double* x = random_values(3, 60, -6, 6);
  /* Far apart logits: exp of the shifted values neither overflows nor
   * loses the small terms' logs. */
  const double far[6] = {1000, 1001, 1002, -1000, -1001, -1002};
  for (int t = 0; t < 2; ++t) {
    check_softmax("Softmax", x, 6, 10, kFloatTypes[t]);
    check_softmax("LogSoftmax", x, 6, 10, kFloatTypes[t]);
    check_softmax("LogSoftmax", x, 1, 1, kFloatTypes[t]);
    check_softmax("LogSoftmax", far, 2, 3, kFloatTypes[t]);
    check_softmax("LogSoftmax", far, 1, 6, kFloatTypes[t]);
  }
  free(x);
  operand empty = {WEFT_FLOAT64, 2, {0, 4}, NULL};
  weft_tensor* out = run_nn("LogSoftmax", &empty, 1, NULL);
  wt_expect_shape(out, WEFT_FLOAT64, WT_SHAPE(0, 4));
  weft_tensor_destroy(out);
  operand scalar = {WEFT_FLOAT32, 0, {0}, (const float[]){1}};
  WT_EXPECT_ERROR(try_nn("LogSoftmax", "lsm", &scalar, 1, NULL, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "lsm", "scalar");
}

/* ---- Softmax cross-entropy ---------------------------------------------- */

/* loss = -sum(labels * log softmax(x)); backprop = softmax(x) - labels. */
static void xent_reference(const double* x, const double* labels, int64_t b,
                           int64_t c, double* loss, double* grad) {
  softmax_reference(x, b, c, 1, grad);
  for (int64_t r = 0; r < b; ++r) {
    loss[r] = 0;
    for (int64_t k = 0; k < c; ++k) {
      loss[r] -= labels[r * c + k] * grad[r * c + k];
      grad[r * c + k] = exp(grad[r * c + k]) - labels[r * c + k];
    }
  }
}

static void check_xent(const double* x, const double* dense,
                       const int64_t* sparse, weft_dtype label_type,
                       int64_t b, int64_t c, weft_dtype dtype) {
  double* loss = malloc(sizeof(double) * (size_t)b);
  double* grad = malloc(sizeof(double) * (size_t)(b * c));
  double* indices = malloc(sizeof(double) * (size_t)b);
  xent_reference(x, dense, b, c, loss, grad);
  for (int64_t r = 0; sparse && r < b; ++r) indices[r] = (double)sparse[r];
  void* xd = as_dtype(x, b * c, dtype);
  void* ld = sparse ? as_dtype(indices, b, label_type)
                    : as_dtype(dense, b * c, dtype);
  operand in[2] = {{dtype, 2, {b, c}, xd},
                   sparse ? (operand){label_type, 1, {b}, ld}
                          : (operand){dtype, 2, {b, c}, ld}};
  weft_tensor* out[2] = {NULL, NULL};
  WT_OK(try_nn(sparse ? "SparseSoftmaxCrossEntropyWithLogits"
                      : "SoftmaxCrossEntropyWithLogits",
               "loss", in, 2, NULL, out, 2, 0));
  wt_expect_shape(out[0], dtype, WT_DIMS(b), 1);
  wt_expect_shape(out[1], dtype, WT_DIMS(b, c), 2);
  expect_close(out[0], loss, b, 1e-5);
  expect_close(out[1], grad, b * c, 1e-5);
  weft_tensor_destroy(out[0]), weft_tensor_destroy(out[1]);
  free(xd), free(ld), free(loss), free(grad), free(indices);
}

Test(ops_nn_last_axis, softmax_cross_entropy) {
  double* x = random_values(21, 40, -5, 5);
  double* labels = random_values(22, 40, 0, 1);
  for (int r = 0; r < 5; ++r) { /* rows of a distribution */
    double sum = 0;
    for (int k = 0; k < 8; ++k) sum += labels[r * 8 + k];
    for (int k = 0; k < 8; ++k) labels[r * 8 + k] /= sum;
  }
  const double far[6] = {1000, 0, -1000, 50, 40, -30};
  const double far_labels[6] = {0.25, 0.5, 0.25, 0, 1, 0};
  for (int t = 0; t < 2; ++t) {
    check_xent(x, labels, NULL, 0, 5, 8, kFloatTypes[t]);
    check_xent(far, far_labels, NULL, 0, 2, 3, kFloatTypes[t]);
  }
  free(x), free(labels);
}

Test(ops_nn_last_axis, sparse_softmax_cross_entropy) {
  double* x = random_values(31, 42, -4, 4);
  const int64_t classes[6] = {0, 6, 3, 3, 1, 5};
  double onehot[42] = {0};
  for (int r = 0; r < 6; ++r) onehot[r * 7 + classes[r]] = 1;
  for (int t = 0; t < 2; ++t) {
    check_xent(x, onehot, classes, WEFT_INT32, 6, 7, kFloatTypes[t]);
    check_xent(x, onehot, classes, WEFT_INT64, 6, 7, kFloatTypes[t]);
  }
  free(x);
}

/* Batches of several groups of rows (the kernel's unit of work: up to 16
 * rows of up to 1,024 classes in all) with a short last one, 10 classes as
 * the MLP's and 33, one class, and rows of 2,000 (a group each, Eigen's
 * vectorised max and sum). */
Test(ops_nn_last_axis, cross_entropy_over_groups_of_rows) {
  const int64_t shapes[4][2] = {{37, 10}, {21, 33}, {17, 1}, {5, 2000}};
  for (int s = 0; s < 4; ++s) {
    const int64_t b = shapes[s][0], c = shapes[s][1];
    double* x = random_values(41 + (uint64_t)s, b * c, -6, 6);
    double* onehot = calloc((size_t)(b * c), sizeof(double));
    int64_t* classes = malloc(sizeof(int64_t) * (size_t)b);
    for (int64_t r = 0; r < b; ++r) {
      classes[r] = (r * 7 + s) % c;
      onehot[r * c + classes[r]] = 1;
    }
    for (int t = 0; t < 2; ++t) {
      check_xent(x, onehot, classes, WEFT_INT32, b, c, kFloatTypes[t]);
      check_xent(x, onehot, NULL, 0, b, c, kFloatTypes[t]);
    }
    free(x), free(onehot), free(classes);
  }
}

/* Batches large enough to be split over the intra-op threads give the
 * same bytes on 1 and 2 threads (the groups do not move with the split).
 * Odd batches of 7 and 10 classes: a group that began where a thread's
 * rows do would start off a vector's alignment and take some of its exps
 * through the scalar path, whose last bits differ. */
Test(ops_nn_last_axis, cross_entropy_bits_do_not_depend_on_threads) {
  const int64_t shapes[3][2] = {{18731, 7}, {13109, 10}, {70, 2000}};
  for (int s = 0; s < 3; ++s) {
    const int64_t b = shapes[s][0], c = shapes[s][1];
    double* x = random_values(61 + (uint64_t)s, b * c, -8, 8);
    double* labels = malloc(sizeof(double) * (size_t)b);
    for (int64_t r = 0; r < b; ++r) labels[r] = (double)((r * 13) % c);
    void* xd = as_dtype(x, b * c, WEFT_FLOAT32);
    void* ld = as_dtype(labels, b, WEFT_INT64);
    operand in[2] = {{WEFT_FLOAT32, 2, {b, c}, xd},
                     {WEFT_INT64, 1, {b}, ld}};
    weft_tensor* one[2] = {NULL, NULL};
    weft_tensor* two[2] = {NULL, NULL};
    WT_OK(try_nn("SparseSoftmaxCrossEntropyWithLogits", "loss", in, 2, NULL,
                 one, 2, 1));
    WT_OK(try_nn("SparseSoftmaxCrossEntropyWithLogits", "loss", in, 2, NULL,
                 two, 2, 2));
    for (int k = 0; k < 2; ++k) {
      const size_t bytes =
          (size_t)weft_tensor_element_count(one[k]) * sizeof(float);
      cr_assert_eq(weft_tensor_element_count(one[k]),
                   weft_tensor_element_count(two[k]));
      cr_assert_eq(memcmp(weft_tensor_data(one[k]), weft_tensor_data(two[k]),
                          bytes),
                   0, "[%lld, %lld]: output %d differs between 1 and 2 "
                      "threads",
                   (long long)b, (long long)c, k);
      weft_tensor_destroy(one[k]), weft_tensor_destroy(two[k]);
    }
    free(x), free(labels), free(xd), free(ld);
  }
}

Test(ops_nn_last_axis, cross_entropy_errors_and_empty_batch) {
  const float x[12] = {0};
  weft_tensor* out[2] = {NULL, NULL};
  operand bad[2] = {{WEFT_FLOAT32, 2, {4, 3}, x},
                    {WEFT_INT32, 1, {4}, (const int32_t[]){0, 2, 3, 1}}};
  WT_EXPECT_ERROR(try_nn("SparseSoftmaxCrossEntropyWithLogits", "loss", bad,
                         2, NULL, out, 2, 0),
                  WEFT_INVALID_ARGUMENT, "loss", "row 2", "label 3");
  bad[1] = (operand){WEFT_INT64, 1, {4}, (const int64_t[]){0, -1, 0, 0}};
  WT_EXPECT_ERROR(try_nn("SparseSoftmaxCrossEntropyWithLogits", "loss", bad,
                         2, NULL, out, 2, 0),
                  WEFT_INVALID_ARGUMENT, "loss", "row 1", "label -1");
  bad[1] = (operand){WEFT_FLOAT32, 1, {4}, x};
  WT_EXPECT_ERROR(try_nn("SparseSoftmaxCrossEntropyWithLogits", "loss", bad,
                         2, NULL, out, 2, 0),
                  WEFT_INVALID_ARGUMENT, "loss", "int32 or int64");
  bad[1] = (operand){WEFT_FLOAT32, 2, {4, 2}, x};
  WT_EXPECT_ERROR(try_nn("SoftmaxCrossEntropyWithLogits", "loss", bad, 2,
                         NULL, out, 2, 0),
                  WEFT_INVALID_ARGUMENT, "loss", "[4,3]", "[4,2]");
  cr_assert(out[0] == NULL && out[1] == NULL);
  operand empty[2] = {{WEFT_FLOAT64, 2, {0, 5}, NULL},
                      {WEFT_INT64, 1, {0}, NULL}};
  WT_OK(try_nn("SparseSoftmaxCrossEntropyWithLogits", "loss", empty, 2, NULL,
               out, 2, 0));
  wt_expect_shape(out[0], WEFT_FLOAT64, WT_SHAPE(0));
  wt_expect_shape(out[1], WEFT_FLOAT64, WT_SHAPE(0, 5));
  weft_tensor_destroy(out[0]), weft_tensor_destroy(out[1]);
}

/* ---- BiasAdd, BatchNormWithGlobalNormalization -------------------------- */

Test(ops_nn_last_axis, bias_add) {
  double* x = random_values(61, 24, -10, 10);
  double* bias = random_values(62, 4, -10, 10);
  const weft_dtype types[3] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32};
  for (int t = 0; t < 3; ++t) {
    double ref[24];
    for (int i = 0; i < 24; ++i)
      ref[i] = types[t] == WEFT_INT32 ? (int32_t)x[i] + (int32_t)bias[i % 4]
                                      : x[i] + bias[i % 4];
    void* xd = as_dtype(x, 24, types[t]);
    void* bd = as_dtype(bias, 4, types[t]);
    operand in[2] = {{types[t], 3, {2, 3, 4}, xd}, {types[t], 1, {4}, bd}};
    weft_tensor* out = run_nn("BiasAdd", in, 2, NULL);
    wt_expect_shape(out, types[t], WT_SHAPE(2, 3, 4));
    expect_close(out, ref, 24, 1e-6);
    weft_tensor_destroy(out);
    free(xd), free(bd);
  }
  operand bad[2] = {{WEFT_FLOAT32, 3, {2, 3, 4}, NULL},
                    {WEFT_FLOAT32, 1, {3}, NULL}};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(try_nn("BiasAdd", "bias", bad, 2, NULL, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "bias", "[2,3,4]", "[3]");
  bad[1].dims[0] = 4;
  nn_attrs nchw = {.data_format = "NCHW"};
  WT_EXPECT_ERROR(try_nn("BiasAdd", "bias", bad, 2, &nchw, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "bias", "NCHW");
  free(x), free(bias);
}

Test(ops_nn_last_axis, batch_norm_with_global_normalization) {
  double* p[5] = {random_values(91, 40, -3, 3), random_values(92, 5, -1, 1),
                  random_values(93, 5, 0.1, 2), random_values(94, 5, -1, 1),
                  random_values(95, 5, 0.5, 2)};
  for (int scale = 0; scale < 2; ++scale)
    for (int t = 0; t < 2; ++t) {
      double ref[40];
      for (int i = 0; i < 40; ++i) {
        int c = i % 5;
        ref[i] = (p[0][i] - p[1][c]) / sqrt(p[2][c] + 0.001) *
                     (scale ? p[4][c] : 1) + p[3][c];
      }
      operand in[5];
      void* d[5];
      for (int i = 0; i < 5; ++i) {
        d[i] = as_dtype(p[i], i == 0 ? 40 : 5, kFloatTypes[t]);
        in[i] = i == 0 ? (operand){kFloatTypes[t], 3, {2, 4, 5}, d[i]}
                       : (operand){kFloatTypes[t], 1, {5}, d[i]};
      }
      nn_attrs a = {.has_eps = 1, .eps = 0.001, .scale = scale};
      weft_tensor* out = run_nn("BatchNormWithGlobalNormalization", in, 5, &a);
      wt_expect_shape(out, kFloatTypes[t], WT_SHAPE(2, 4, 5));
      expect_close(out, ref, 40, 1e-5);
      weft_tensor_destroy(out);
      in[4].dims[0] = 4;
      WT_EXPECT_ERROR(try_nn("BatchNormWithGlobalNormalization", "bn", in, 5,
                             &a, &out, 1, 0),
                      WEFT_INVALID_ARGUMENT, "bn", "gamma", "[4]");
      in[4].dims[0] = 5;
      WT_EXPECT_ERROR(try_nn("BatchNormWithGlobalNormalization", "bn", in, 5,
                             NULL, &out, 1, 0),
                      WEFT_INVALID_ARGUMENT, "bn", "variance_epsilon");
      for (int i = 0; i < 5; ++i) free(d[i]);
    }
  for (int i = 0; i < 5; ++i) free(p[i]);
}
