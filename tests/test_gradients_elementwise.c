/* Gradients of the element-wise ops against central differences
 * (grad_check.h), with broadcasting (scalar with matrix, [3,1] with [1,4],
 * a batch dim unknown when the graph is built), and the walk's rules: paths
 * summed, StopGradient, unconnected and integer paths, ops without a
 * gradient, Dropout's mask. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "grad_check.h"
#include "test_support.h"

/* n values in [lo, hi), with a random sign when `signed_` (so that none is
 * within lo of zero, where Abs, Relu and Sign have no derivative). */
static void fill(double* out, int n, double lo, double hi, int signed_,
                 uint64_t seed) {
  wt_rng rng = {seed};
  for (int i = 0; i < n; ++i) {
    double v = wt_rng_uniform(&rng, (float)lo, (float)hi);
    out[i] = signed_ && (wt_rng_next(&rng) & 1) ? -v : v;
  }
}

/* The op named by `arg` over every input. */
static weft_output apply_op(weft_graph* graph, const weft_output* xs, int32_t n,
                            void* arg) {
  weft_output out = {NULL, 0};
  WT_OK(weft_graph_apply(graph, (const char*)arg, "op", xs, n, &out));
  return out;
}

#define F64(dims_, vals_) \
  { WEFT_FLOAT64, dims_, (int32_t)(sizeof dims_ / sizeof dims_[0]), vals_, 0 }

/* ---- unary ----------------------------------------------------------------
 */

static void check_unary(const char* op, double lo, double hi, int signed_) {
  static const int64_t dims[] = {2, 3};
  double v[6];
  fill(v, 6, lo, hi, signed_, 7);
  gc_input x = F64(dims, v);
  gc_check_f64(op, apply_op, (void*)op, &x, 1, 0);
}

Test(gradients_elementwise, unary) {
  check_unary("Neg", 0.1, 2, 1);
  check_unary("Abs", 0.2, 2, 1);
  check_unary("Sign", 0.2, 2, 1);
  check_unary("Square", 0.1, 2, 1);
  check_unary("Sqrt", 0.5, 3, 0);
  check_unary("Rsqrt", 0.5, 3, 0);
  check_unary("Exp", 0.1, 2, 1);
  check_unary("Log", 0.5, 3, 0);
  check_unary("Relu", 0.2, 2, 1);
  check_unary("Sigmoid", 0.1, 3, 1);
  check_unary("Tanh", 0.1, 2, 1);
  check_unary("Identity", 0.1, 2, 1);
}

/* ---- binary, with broadcasting --------------------------------------------
 */

static void check_binary_shapes(const char* op, double lo, double hi,
                                int signed_y) {
  static const int64_t m23[] = {2, 3}, s0[1] = {0}, c31[] = {3, 1},
                       r14[] = {1, 4}, b53[] = {5, 3}, v3[] = {3};
  double a[15], b[15];
  char what[64];
  fill(a, 15, lo, hi, 0, 1);
  fill(b, 15, lo, hi, signed_y, 2);
  /* Same shape. */
  gc_input same[2] = {F64(m23, a), F64(m23, b)};
  snprintf(what, sizeof what, "%s [2,3] [2,3]", op);
  gc_check_f64(what, apply_op, (void*)op, same, 2, 0);
  /* Scalar with matrix, both ways. */
  gc_input scalar_first[2] = {{WEFT_FLOAT64, s0, 0, a, 0}, F64(m23, b)};
  snprintf(what, sizeof what, "%s [] [2,3]", op);
  gc_check_f64(what, apply_op, (void*)op, scalar_first, 2, 0);
  gc_input scalar_second[2] = {F64(m23, a), {WEFT_FLOAT64, s0, 0, b, 0}};
  snprintf(what, sizeof what, "%s [2,3] []", op);
  gc_check_f64(what, apply_op, (void*)op, scalar_second, 2, 0);
  /* Both broadcast. */
  gc_input outer[2] = {F64(c31, a), F64(r14, b)};
  snprintf(what, sizeof what, "%s [3,1] [1,4]", op);
  gc_check_f64(what, apply_op, (void*)op, outer, 2, 0);
  /* A batch unknown at build time, fed as 5, against a vector. */
  gc_input batch[2] = {F64(b53, a), F64(v3, b)};
  batch[0].unknown_dims = 1u;
  snprintf(what, sizeof what, "%s [-1,3] [3]", op);
  gc_check_f64(what, apply_op, (void*)op, batch, 2, 0);
  /* ... and the vector first, with the batch's unknown dim fed as 1 so
   * that the vector is not the only one broadcast. */
  static const int64_t b13[] = {1, 3};
  gc_input batch1[2] = {F64(v3, a), F64(b13, b)};
  batch1[1].unknown_dims = 1u;
  snprintf(what, sizeof what, "%s [3] [-1,3] fed [1,3]", op);
  gc_check_f64(what, apply_op, (void*)op, batch1, 2, 0);
}

Test(gradients_elementwise, add_sub_mul) {
  check_binary_shapes("Add", 0.1, 2, 1);
  check_binary_shapes("Sub", 0.1, 2, 1);
  check_binary_shapes("Mul", 0.1, 2, 1);
}

Test(gradients_elementwise, div_realdiv) {
  check_binary_shapes("Div", 0.5, 2, 1);
  check_binary_shapes("RealDiv", 0.5, 2, 1);
}

Test(gradients_elementwise, pow) {
  /* Positive bases (the exponent's gradient takes log x). */
  check_binary_shapes("Pow", 0.5, 2, 1);
}

Test(gradients_elementwise, pow_nonpositive_base) {
  /* x <= 0 with integer exponents: x's gradient as usual; y's taken as 0. */
  static const int64_t d[] = {3};
  static const double x[] = {-1.5, 0.5, -2.0};
  static const double y[] = {2.0, 3.0, 3.0};
  gc_input in[2] = {F64(d, x), F64(d, y)};
  gc_check_f64("Pow, x's gradient with negative x", apply_op, (void*)"Pow", in,
               2, 2u);
}

Test(gradients_elementwise, maximum_minimum) {
  /* Inputs drawn apart, so no element ties (where neither is smooth). */
  check_binary_shapes("Maximum", 0.1, 2, 1);
  check_binary_shapes("Minimum", 0.1, 2, 1);
}

static weft_output build_select(weft_graph* graph, const weft_output* xs,
                                int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_output c = wt_apply2(
      graph, "Greater", "cond", xs[0],
      wt_const(graph, "zero", wt_tensor(WEFT_FLOAT64, NULL, 0, &(double){0})));
  weft_output in[3] = {c, xs[1], xs[2]};
  weft_output out = {NULL, 0};
  WT_OK(weft_graph_apply(graph, "Select", "select", in, 3, &out));
  return out;
}

Test(gradients_elementwise, select) {
  static const int64_t c23[] = {2, 3}, t31[] = {2, 1}, e3[] = {3};
  double c[6], t[2], e[3];
  fill(c, 6, 0.2, 1, 1, 3);
  fill(t, 2, 0.2, 1, 1, 4);
  fill(e, 3, 0.2, 1, 1, 5);
  gc_input in[3] = {F64(c23, c), F64(t31, t), F64(e3, e)};
  gc_check_f64("Select(cond [2,3], t [2,1], e [3])", build_select, NULL, in, 3,
               1u);
  gc_input batch[3] = {F64(c23, c), F64(t31, t), F64(e3, e)};
  batch[0].unknown_dims = 1u;
  batch[1].unknown_dims = 1u;
  gc_check_f64("Select with an unknown batch", build_select, NULL, batch, 3,
               1u);
}

/* ---- Cast ------------------------------------------------------------------
 */

static weft_output cast_to(weft_graph* graph, weft_output x, weft_dtype t,
                           const char* name) {
  weft_op_builder* b = weft_op_begin(graph, "Cast", name);
  weft_op_add_input(b, x);
  weft_op_set_attr_dtype(b, "DstT", t);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  return (weft_output){n, 0};
}

static weft_output build_cast_f32(weft_graph* graph, const weft_output* xs,
                                  int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_output f = cast_to(graph, xs[0], WEFT_FLOAT32, "to_f32");
  return wt_apply2(graph, "Mul", "square", f, f);
}

Test(gradients_elementwise, cast_between_floats) {
  static const int64_t d[] = {4};
  static const double x[] = {0.5, -1.25, 2.0, 0.75};
  gc_input in = F64(d, x);
  /* float32 in the middle: a step and tolerances for its rounding. */
  gc_check("Cast float64 -> float32", build_cast_f32, NULL, &in, 1, 0, 1e-3,
           1e-3, 1e-3);
}

/* y = x + float(int(x)): the integer path carries nothing. */
static weft_output build_int_path(weft_graph* graph, const weft_output* xs,
                                  int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_output i = cast_to(graph, xs[0], WEFT_INT32, "to_int");
  weft_output back = cast_to(graph, i, WEFT_FLOAT64, "back");
  return wt_apply2(graph, "Add", "sum", xs[0], back);
}

Test(gradients_elementwise, integer_path_carries_nothing) {
  static const int64_t d[] = {3};
  static const double x[] = {0.5, 1.25, -2.5};
  gc_input in = F64(d, x);
  gc_check_f64("x + float(int(x))", build_int_path, NULL, &in, 1, 0);

  /* Only through an integer: no gradient at all. */
  weft_graph* g = wt_graph_new();
  weft_output p = wt_placeholder(g, "x", WEFT_FLOAT64, WT_SHAPE(3));
  weft_output y = cast_to(g, cast_to(g, p, WEFT_INT32, "i"), WEFT_FLOAT64, "f");
  weft_output grad = {(weft_node*)1, 7};
  WT_OK(weft_gradients(g, &y, 1, &p, 1, NULL, &grad));
  cr_expect_null(grad.node, "a path through int32 gave a gradient");
  weft_graph_destroy(g);
}

/* ---- the walk -------------------------------------------------------------
 */

static weft_output build_two_paths(weft_graph* graph, const weft_output* xs,
                                   int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_output sq = wt_apply2(graph, "Mul", "xx", xs[0], xs[0]);
  return wt_apply2(graph, "Add", "y", sq, xs[0]);
}

Test(gradients_elementwise, paths_are_summed) {
  static const int64_t d[] = {2, 2};
  static const double x[] = {0.5, -1.5, 2.0, 0.25};
  gc_input in = F64(d, x);
  gc_check_f64("x * x + x", build_two_paths, NULL, &in, 1, 0);
}

/* Runs `fetch` with x fed and returns its float64 values (n of them). */
static void run_f64(weft_graph* g, weft_output feed, const double* x,
                    const int64_t* dims, int32_t rank, weft_output fetch,
                    double* out, int64_t n) {
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  weft_tensor* v = wt_tensor(WEFT_FLOAT64, dims, rank, x);
  weft_tensor* r = wt_run1(s, &feed, &v, 1, fetch);
  cr_assert_eq(weft_tensor_element_count(r), n);
  memcpy(out, weft_tensor_data(r), (size_t)n * sizeof(double));
  weft_tensor_destroy(r);
  weft_tensor_destroy(v);
  weft_session_destroy(s);
}

Test(gradients_elementwise, stop_gradient_blocks) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_SHAPE(3));
  weft_output stopped = wt_apply1(g, "StopGradient", "stop", x);
  cr_expect_eq(weft_op_gradient_status("StopGradient"), 0);

  /* Only through StopGradient: none. */
  weft_output grad = {(weft_node*)1, 7};
  WT_OK(weft_gradients(g, &stopped, 1, &x, 1, NULL, &grad));
  cr_expect_null(grad.node);

  /* x * stop(x): d/dx is stop(x)'s value, x, not 2x. */
  weft_output y = wt_apply2(g, "Mul", "y", x, stopped);
  WT_OK(weft_gradients(g, &y, 1, &x, 1, NULL, &grad));
  cr_assert_not_null(grad.node);
  static const double xv[] = {0.5, -2.0, 3.0};
  double got[3];
  run_f64(g, x, xv, WT_SHAPE(3), grad, got, 3);
  for (int i = 0; i < 3; ++i)
    cr_expect_float_eq(got[i], xv[i], 1e-12, "element %d: %g, expected %g", i,
                       got[i], xv[i]);
  weft_graph_destroy(g);
}

Test(gradients_elementwise, unconnected_x_gets_none) {
  weft_graph* g = wt_graph_new();
  weft_output a = wt_placeholder(g, "a", WEFT_FLOAT64, WT_SHAPE(2));
  weft_output b = wt_placeholder(g, "b", WEFT_FLOAT64, WT_SHAPE(2));
  weft_output y = wt_apply1(g, "Exp", "y", a);
  weft_output xs[2] = {b, a};
  weft_output grads[2] = {{(weft_node*)1, 7}, {NULL, 0}};
  WT_OK(weft_gradients(g, &y, 1, xs, 2, NULL, grads));
  cr_expect_null(grads[0].node, "b does not reach y but got a gradient");
  cr_expect_eq(grads[0].index, 0);
  cr_expect_not_null(grads[1].node);
  weft_graph_destroy(g);
}

/* Errors from a gradient function reach the caller, naming the node.  The
 * function replaces Sign's for the whole process, so it behaves as the
 * library's does (zeros) unless `fail_sign_gradient` is set. */
static int fail_sign_gradient;

static weft_status* sign_gradient(void* arg, weft_gradient_context* ctx) {
  (void)arg;
  if (fail_sign_gradient)
    return weft_status_create(WEFT_UNIMPLEMENTED, "this gradient refuses");
  weft_node* n = weft_gradient_node(ctx);
  weft_op_builder* b = weft_op_begin(weft_gradient_graph(ctx), "ZerosLike",
                                     NULL);
  weft_op_add_input(b, weft_node_input(n, 0));
  weft_node* zeros = NULL;
  weft_status* st = weft_op_finish(b, &zeros);
  if (st) return st;
  return weft_gradient_set_input_grad(ctx, 0, (weft_output){zeros, 0});
}

Test(gradients_elementwise, gradient_function_errors_name_the_node) {
  WT_OK(weft_gradient_register("Sign", sign_gradient, NULL));
  WT_EXPECT_CODE(weft_gradient_register("NoSuchOp", sign_gradient, NULL),
                 WEFT_INVALID_ARGUMENT);
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_SHAPE(2, 2));
  weft_output mid = wt_apply1(g, "Sign", "refusing_sign", x);
  weft_output y = wt_apply1(g, "Exp", "y", mid);
  weft_output grad = {(weft_node*)1, 7};
  fail_sign_gradient = 1;
  WT_EXPECT_ERROR(weft_gradients(g, &y, 1, &x, 1, NULL, &grad),
                  WEFT_UNIMPLEMENTED, "refusing_sign", "Sign",
                  "this gradient refuses");
  fail_sign_gradient = 0;
  cr_expect_null(grad.node);
  /* Working again: zeros, as the library's. */
  WT_OK(weft_gradients(g, &y, 1, &x, 1, NULL, &grad));
  cr_expect_not_null(grad.node);
  weft_graph_destroy(g);
}

/* ---- Dropout --------------------------------------------------------------
 */

Test(gradients_elementwise, dropout_uses_the_forward_mask) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_SHAPE(64));
  weft_op_builder* b = weft_op_begin(g, "Dropout", "drop");
  weft_op_add_input(b, x);
  weft_op_set_attr_float(b, "rate", 0.25);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  weft_output y = {n, 0};
  weft_output grad = {NULL, 0};
  WT_OK(weft_gradients(g, &y, 1, &x, 1, NULL, &grad));
  cr_assert_not_null(grad.node);

  double xv[64];
  fill(xv, 64, 0.1, 2, 1, 11);
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  weft_tensor* v = wt_tensor(WEFT_FLOAT64, WT_SHAPE(64), xv);
  /* Two steps, so the mask changes and the gradient follows it. */
  for (int step = 0; step < 2; ++step) {
    weft_output fetches[2] = {y, grad};
    weft_tensor* out[2] = {NULL, NULL};
    WT_OK(weft_session_run(s, &x, &v, 1, fetches, 2, NULL, 0, out));
    const double* yv = weft_tensor_data(out[0]);
    const double* gv = weft_tensor_data(out[1]);
    int kept = 0;
    for (int i = 0; i < 64; ++i) {
      double want = yv[i] != 0 ? 1 / 0.75 : 0;
      kept += yv[i] != 0;
      cr_expect_float_eq(gv[i], want, 1e-12,
                         "step %d element %d: y %g, gradient %g, expected %g",
                         step, i, yv[i], gv[i], want);
    }
    cr_expect(kept > 0 && kept < 64, "step %d kept %d of 64", step, kept);
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
  weft_tensor_destroy(v);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- the gradient ops' own gradients ----------------------------------------
 */

static weft_output build_relu_grad(weft_graph* graph, const weft_output* xs,
                                   int32_t n, void* arg) {
  (void)n;
  (void)arg;
  return wt_apply2(graph, "ReluGrad", "relu_grad", xs[0], xs[1]);
}

Test(gradients_elementwise, relu_grad) {
  static const int64_t d[] = {2, 3};
  double dy[6], x[6];
  fill(dy, 6, 0.1, 2, 1, 21);
  fill(x, 6, 0.2, 2, 1, 22);
  gc_input in[2] = {F64(d, dy), F64(d, x)};
  gc_check_f64("ReluGrad", build_relu_grad, NULL, in, 2, 0);
  cr_expect_eq(weft_op_gradient_status("SigmoidGrad"), 0);
}
