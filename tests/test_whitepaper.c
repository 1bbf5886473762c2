/* The whitepaper's first example, relu(W·x + b), as a 784→100 layer, checked
 * against a plain loop computed here in double precision. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "test_support.h"

enum { IN = 784, OUT = 100 };

/* Float32 sums of 784 products of magnitude <= 0.1: rounding stays far
 * below this. */
#define ABS_TOL 1e-4
#define REL_TOL 1e-4

static float* random_floats(wt_rng* rng, int64_t n, float lo, float hi) {
  float* values = malloc((size_t)n * sizeof(float));
  cr_assert_not_null(values);
  wt_rng_fill(rng, values, n, lo, hi);
  return values;
}

/* out[r] = relu(sum_k w[r*w_row + k*w_col] * x[k] + b[r]) for one column x:
 * the strides let one loop serve W [OUT,IN] and its transpose [IN,OUT]. */
static void reference_layer(const float* w, int64_t w_row, int64_t w_col,
                            const float* x, const float* b, double* out) {
  for (int r = 0; r < OUT; ++r) {
    double acc = b[r];
    for (int k = 0; k < IN; ++k) acc += (double)w[r * w_row + k * w_col] * x[k];
    out[r] = acc > 0 ? acc : 0;
  }
}

/* The reference must exercise both sides of the relu, or a kernel that
 * forgot it (or zeroes everything) could pass. */
static void expect_both_signs(const double* ref, int64_t n) {
  int64_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) zeros += ref[i] == 0;
  cr_assert(zeros > 0 && zeros < n, "test data degenerate: %lld of %lld zero",
            (long long)zeros, (long long)n);
}

Test(whitepaper, column_form) {
  wt_rng rng = {2015};
  float* w = random_floats(&rng, OUT * IN, -0.1f, 0.1f);
  float* b = random_floats(&rng, OUT, -0.5f, 0.5f);

  weft_graph* graph = wt_graph_new();
  weft_output W = wt_const_f32(graph, "W", WT_SHAPE(OUT, IN), w);
  weft_output B = wt_const_f32(graph, "b", WT_SHAPE(OUT, 1), b);
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(IN, 1));
  weft_output wx = wt_apply2(graph, "MatMul", "Wx", W, x);
  weft_output sum = wt_apply2(graph, "Add", "Wx_plus_b", wx, B);
  weft_output relu = wt_apply1(graph, "Relu", "relu", sum);
  weft_session* session = wt_session_new(graph, NULL);

  /* Twice with different inputs: the second run reuses the cached plan. */
  for (int run = 0; run < 2; ++run) {
    float* xs = random_floats(&rng, IN, 0.0f, 1.0f);
    weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(IN, 1), xs);
    weft_tensor* out = wt_run1(session, &x, &fed, 1, relu);
    wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(OUT, 1));
    double ref[OUT];
    reference_layer(w, IN, 1, xs, b, ref);
    expect_both_signs(ref, OUT);
    wt_expect_f32(out, ref, OUT, ABS_TOL, REL_TOL);
    weft_tensor_destroy(out);
    weft_tensor_destroy(fed);
    free(xs);
  }

  weft_session_destroy(session);
  weft_graph_destroy(graph);
  free(w);
  free(b);
}

/* x is [batch, 784] with the batch left unknown in the graph; W is stored
 * [784, 100] and b [100] is broadcast over the batch. */
Test(whitepaper, batch_of_unknown_size) {
  wt_rng rng = {1984};
  float* w = random_floats(&rng, IN * OUT, -0.1f, 0.1f);
  float* b = random_floats(&rng, OUT, -0.5f, 0.5f);

  weft_graph* graph = wt_graph_new();
  weft_output W = wt_const_f32(graph, "W", WT_SHAPE(IN, OUT), w);
  weft_output B = wt_const_f32(graph, "b", WT_SHAPE(OUT), b);
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(-1, IN));
  weft_output xw = wt_apply2(graph, "MatMul", "xW", x, W);
  weft_output sum = wt_apply2(graph, "Add", "xW_plus_b", xw, B);
  weft_output relu = wt_apply1(graph, "Relu", "relu", sum);

  int64_t dims[2];
  int32_t rank = 0;
  WT_OK(weft_output_shape(relu, dims, 2, &rank));
  cr_expect_eq(rank, 2);
  cr_expect_eq(dims[0], -1, "the batch must stay unknown in the graph");
  cr_expect_eq(dims[1], OUT);

  weft_session* session = wt_session_new(graph, NULL);
  static const int64_t batches[] = {1, 7, 32, 7};
  for (size_t i = 0; i < sizeof batches / sizeof batches[0]; ++i) {
    int64_t n = batches[i];
    float* xs = random_floats(&rng, n * IN, 0.0f, 1.0f);
    weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(n, IN), xs);
    weft_tensor* out = wt_run1(session, &x, &fed, 1, relu);
    wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(n, OUT));
    double* ref = malloc((size_t)(n * OUT) * sizeof(double));
    for (int64_t row = 0; row < n; ++row)
      reference_layer(w, 1, OUT, xs + row * IN, b, ref + row * OUT);
    expect_both_signs(ref, n * OUT);
    wt_expect_f32(out, ref, n * OUT, ABS_TOL, REL_TOL);
    free(ref);
    weft_tensor_destroy(out);
    weft_tensor_destroy(fed);
    free(xs);
  }
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  free(w);
  free(b);
}

/* As the whitepaper writes it: W and b are Variables, initialized once. */
Test(whitepaper, with_variables) {
  wt_rng rng = {42};
  float* w = random_floats(&rng, OUT * IN, -0.1f, 0.1f);
  float* b = random_floats(&rng, OUT, -0.5f, 0.5f);
  float* xs = random_floats(&rng, IN, 0.0f, 1.0f);

  weft_graph* graph = wt_graph_new();
  weft_output w_init = wt_const_f32(graph, "W_init", WT_SHAPE(OUT, IN), w);
  weft_output b_init = wt_const_f32(graph, "b_init", WT_SHAPE(OUT, 1), b);
  weft_output W, B;
  weft_node* inits[2];
  WT_OK(weft_graph_variable(graph, "W", w_init, &W, &inits[0]));
  WT_OK(weft_graph_variable(graph, "b", b_init, &B, &inits[1]));
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(IN, 1));
  weft_output relu = wt_apply1(
      graph, "Relu", "relu",
      wt_apply2(graph, "Add", "Wx_plus_b",
                wt_apply2(graph, "MatMul", "Wx", W, x), B));

  weft_session* session = wt_session_new(graph, NULL);
  wt_run_targets(session, inits, 2);
  weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(IN, 1), xs);
  double ref[OUT];
  reference_layer(w, IN, 1, xs, b, ref);
  for (int run = 0; run < 2; ++run) {
    weft_tensor* out = wt_run1(session, &x, &fed, 1, relu);
    wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(OUT, 1));
    wt_expect_f32(out, ref, OUT, ABS_TOL, REL_TOL);
    weft_tensor_destroy(out);
  }
  weft_tensor_destroy(fed);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  free(w);
  free(b);
  free(xs);
}
