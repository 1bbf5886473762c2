/* Optimizers: the update ops (ApplyGradientDescent, ApplyMomentum,
 * ApplyAdam) against the formulas computed here, and weft_minimize() with
 * its trainable flags, slots and initializers. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

/* ---- Typed values: the tests run for float32 and float64 --------------- */

static weft_tensor* typed_tensor(weft_dtype dtype, const int64_t* dims,
                                 int32_t rank, const double* values) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  weft_tensor* t = wt_tensor(dtype, dims, rank, NULL);
  void* data = weft_tensor_data(t);
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == WEFT_FLOAT32) ((float*)data)[i] = (float)values[i];
    else ((double*)data)[i] = values[i];
  }
  return t;
}

static weft_output typed_const(weft_graph* g, const char* name,
                               weft_dtype dtype, const int64_t* dims,
                               int32_t rank, const double* values) {
  return wt_const(g, name, typed_tensor(dtype, dims, rank, values));
}

static weft_output scalar_const(weft_graph* g, const char* name,
                                weft_dtype dtype, double value) {
  return typed_const(g, name, dtype, NULL, 0, &value);
}

/* A variable holding `values` once its initializer (*init) has run. */
static weft_output variable(weft_graph* g, const char* name, weft_dtype dtype,
                            const int64_t* dims, int32_t rank,
                            const double* values, weft_node** init) {
  char init_name[128];
  snprintf(init_name, sizeof init_name, "%s_value", name);
  weft_output v;
  WT_OK(weft_graph_variable(
      g, name, typed_const(g, init_name, dtype, dims, rank, values), &v,
      init));
  return v;
}

static void fetch_values(weft_session* s, weft_output o, double* out,
                         int64_t n) {
  weft_tensor* t = wt_run1(s, NULL, NULL, 0, o);
  cr_assert_eq(weft_tensor_element_count(t), n);
  const void* data = weft_tensor_data(t);
  for (int64_t i = 0; i < n; ++i)
    out[i] = weft_tensor_dtype(t) == WEFT_FLOAT32 ? ((const float*)data)[i]
                                                  : ((const double*)data)[i];
  weft_tensor_destroy(t);
}

/* float32 results are compared with a double reference: a relative 2e-6
 * covers the roundings; float64 ones to 1e-12. */
static void expect_values(weft_session* s, weft_output o, weft_dtype dtype,
                          const double* want, int64_t n, const char* what,
                          int step) {
  double got[16];
  cr_assert(n <= 16);
  fetch_values(s, o, got, n);
  double tol = dtype == WEFT_FLOAT32 ? 2e-6 : 1e-12;
  for (int64_t i = 0; i < n; ++i)
    cr_expect(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
              "%s (%s) element %lld after step %d: %.12g, expected %.12g",
              what, weft_dtype_name(dtype), (long long)i, step, got[i],
              want[i]);
}

static weft_status* build_op(weft_graph* g, const char* op, const char* name,
                             const weft_output* inputs, int32_t n,
                             int32_t nesterov, weft_node** out) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input_list(b, inputs, n);
  if (nesterov >= 0) weft_op_set_attr_bool(b, "use_nesterov", nesterov);
  return weft_op_finish(b, out);
}

static const weft_dtype kDtypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};
#define N 4

/* ---- The update ops ---------------------------------------------------- */

static void gradient_descent_steps(weft_dtype dtype) {
  weft_graph* g = wt_graph_new();
  double var[N] = {1, -2, 3.5, 0.25};
  const double delta[N] = {0.5, -1, 2, 4}, alpha = 0.1;
  weft_node* init;
  weft_output v = variable(g, "v", dtype, WT_DIMS(N), 1, var, &init);
  weft_output in[] = {v, scalar_const(g, "alpha", dtype, alpha),
                      typed_const(g, "delta", dtype, WT_DIMS(N), 1, delta)};
  weft_node* step;
  WT_OK(build_op(g, "ApplyGradientDescent", "step", in, 3, -1, &step));
  cr_expect_eq(weft_node_num_outputs(step), 1);
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, &init, 1);
  for (int t = 1; t <= 3; ++t) {
    for (int i = 0; i < N; ++i) var[i] -= alpha * delta[i];
    /* Fetching the op's output runs it and gives the new value. */
    expect_values(s, (weft_output){step, 0}, dtype, var, N, "output", t);
    expect_values(s, v, dtype, var, N, "var", t);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(apply_ops, gradient_descent) {
  for (int d = 0; d < 2; ++d) gradient_descent_steps(kDtypes[d]);
}

static void momentum_steps(weft_dtype dtype, int nesterov) {
  weft_graph* g = wt_graph_new();
  double var[N] = {1, -2, 3.5, 0.25}, accum[N] = {0.1, 0.2, -0.3, 0};
  const double grad[N] = {0.5, -1, 2, 4}, lr = 0.05, momentum = 0.9;
  weft_node* inits[2];
  weft_output v = variable(g, "v", dtype, WT_DIMS(N), 1, var, &inits[0]);
  weft_output a = variable(g, "a", dtype, WT_DIMS(N), 1, accum, &inits[1]);
  weft_output in[] = {v, a, scalar_const(g, "lr", dtype, lr),
                      typed_const(g, "grad", dtype, WT_DIMS(N), 1, grad),
                      scalar_const(g, "momentum", dtype, momentum)};
  weft_node* step;
  WT_OK(build_op(g, "ApplyMomentum", "step", in, 5, nesterov, &step));
  cr_expect_eq(weft_node_num_outputs(step), 2);
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, inits, 2);
  for (int t = 1; t <= 3; ++t) {
    for (int i = 0; i < N; ++i) {
      accum[i] = accum[i] * momentum + grad[i];
      var[i] -= nesterov ? lr * (grad[i] + momentum * accum[i])
                         : lr * accum[i];
    }
    wt_run_targets(s, &step, 1);
    expect_values(s, v, dtype, var, N, "var", t);
    expect_values(s, a, dtype, accum, N, "accum", t);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(apply_ops, momentum) {
  for (int d = 0; d < 2; ++d) momentum_steps(kDtypes[d], 0);
}

Test(apply_ops, momentum_nesterov) {
  for (int d = 0; d < 2; ++d) momentum_steps(kDtypes[d], 1);
}

/* Adam as Kingma & Ba write it, in TensorFlow's form (the bias correction
 * folded into the step size), one step at step number t (from 1). */
static void adam_reference(double* var, double* m, double* v,
                           const double* g, int64_t n, int t, double lr,
                           double beta1, double beta2, double epsilon) {
  double lr_t = lr * sqrt(1 - pow(beta2, t)) / (1 - pow(beta1, t));
  for (int64_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * g[i];
    v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
    var[i] -= lr_t * m[i] / (sqrt(v[i]) + epsilon);
  }
}

static void adam_steps(weft_dtype dtype) {
  weft_graph* g = wt_graph_new();
  double var[N] = {1, -2, 3.5, 0.25}, m[N] = {0}, v[N] = {0};
  const double lr = 0.01, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  weft_node* inits[3];
  weft_output var_out =
      variable(g, "var", dtype, WT_DIMS(N), 1, var, &inits[0]);
  weft_output m_out = variable(g, "m", dtype, WT_DIMS(N), 1, m, &inits[1]);
  weft_output v_out = variable(g, "v", dtype, WT_DIMS(N), 1, v, &inits[2]);
  weft_output feeds[3] = {
      wt_placeholder(g, "beta1_power", dtype, NULL, 0),
      wt_placeholder(g, "beta2_power", dtype, NULL, 0),
      wt_placeholder(g, "grad", dtype, WT_DIMS(N), 1)};
  weft_output in[] = {var_out, m_out, v_out, feeds[0], feeds[1],
                      scalar_const(g, "lr", dtype, lr),
                      scalar_const(g, "beta1", dtype, beta1),
                      scalar_const(g, "beta2", dtype, beta2),
                      scalar_const(g, "epsilon", dtype, epsilon), feeds[2]};
  weft_node* step;
  WT_OK(build_op(g, "ApplyAdam", "step", in, 10, -1, &step));
  cr_expect_eq(weft_node_num_outputs(step), 3);
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, inits, 3);
  for (int t = 1; t <= 5; ++t) {
    /* A gradient that changes sign and size from step to step. */
    double grad[N];
    for (int i = 0; i < N; ++i)
      grad[i] = (i + 1) * (t % 2 ? 0.5 : -0.25) * t;
    double p1 = pow(beta1, t), p2 = pow(beta2, t);
    weft_tensor* values[3] = {typed_tensor(dtype, NULL, 0, &p1),
                              typed_tensor(dtype, NULL, 0, &p2),
                              typed_tensor(dtype, WT_DIMS(N), 1, grad)};
    WT_OK(weft_session_run(s, feeds, values, 3, NULL, 0, &step, 1, NULL));
    for (int k = 0; k < 3; ++k) weft_tensor_destroy(values[k]);
    adam_reference(var, m, v, grad, N, t, lr, beta1, beta2, epsilon);
    expect_values(s, var_out, dtype, var, N, "var", t);
    expect_values(s, m_out, dtype, m, N, "m", t);
    expect_values(s, v_out, dtype, v, N, "v", t);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(apply_ops, adam) {
  for (int d = 0; d < 2; ++d) adam_steps(kDtypes[d]);
}

/* The in-place updates the run metadata lists, as (update, variable). */
static int32_t in_place_count(weft_session* s, const weft_output* fetch,
                              weft_tensor** out, weft_node* target,
                              const char* want_update,
                              const char* want_variable) {
  weft_run_metadata* md = weft_run_metadata_create();
  WT_OK(weft_session_run_with_metadata(s, NULL, NULL, 0, fetch, fetch ? 1 : 0,
                                       &target, 1, out, md));
  int32_t n = weft_run_metadata_num_in_place(md);
  for (int32_t i = 0; i < n; ++i) {
    const char *update = NULL, *variable = NULL;
    WT_OK(weft_run_metadata_in_place(md, i, &update, &variable));
    if (want_update) cr_expect_str_eq(update, want_update);
    if (want_variable) cr_expect_str_eq(variable, want_variable);
  }
  weft_status* st = weft_run_metadata_in_place(md, n, NULL, NULL);
  cr_expect_eq(weft_status_code(st), WEFT_OUT_OF_RANGE);
  weft_status_destroy(st);
  weft_run_metadata_destroy(md);
  return n;
}

/* An update writes over its variable when nothing else holds the old value,
 * and never while a value read from it is still held: a read fetched in the
 * same run keeps the old values. */
Test(apply_ops, update_in_place_only_when_unshared) {
  for (int d = 0; d < 2; ++d) {
    weft_dtype dtype = kDtypes[d];
    weft_graph* g = wt_graph_new();
    double var[N] = {1, -2, 3.5, 0.25};
    const double delta[N] = {0.5, -1, 2, 4}, alpha = 0.5;
    weft_node* init;
    weft_output v = variable(g, "v", dtype, WT_DIMS(N), 1, var, &init);
    weft_output in[] = {v, scalar_const(g, "alpha", dtype, alpha),
                        typed_const(g, "delta", dtype, WT_DIMS(N), 1, delta)};
    weft_node* step;
    WT_OK(build_op(g, "ApplyGradientDescent", "step", in, 3, -1, &step));
    /* A read of v that the second update must wait for. */
    weft_node* read;
    weft_op_builder* b = weft_op_begin(g, "Identity", "read");
    weft_op_add_input(b, v);
    WT_OK(weft_op_finish(b, &read));
    weft_node* step_after_read;
    b = weft_op_begin(g, "ApplyGradientDescent", "step_after_read");
    weft_op_add_input_list(b, in, 3);
    weft_op_add_control_input(b, read);
    WT_OK(weft_op_finish(b, &step_after_read));

    weft_session* s = wt_session_new(g, NULL);
    wt_run_targets(s, &init, 1);
    /* Nothing holds v's value between runs: in place. */
    cr_expect_eq(in_place_count(s, NULL, NULL, step, "step", "v"), 1,
                 "%s", weft_dtype_name(dtype));
    for (int i = 0; i < N; ++i) var[i] -= alpha * delta[i];
    expect_values(s, v, dtype, var, N, "var", 1);

    /* The read is fetched, so its value lives to the end of the run: the
     * update must write a new buffer and the fetched read the old values. */
    weft_output fetch = {read, 0};
    weft_tensor* got = NULL;
    cr_expect_eq(in_place_count(s, &fetch, &got, step_after_read,
                                "step_after_read", "v"), 0,
                 "%s", weft_dtype_name(dtype));
    cr_assert_not_null(got);
    for (int i = 0; i < N; ++i) {
      double x = dtype == WEFT_FLOAT32
                     ? ((const float*)weft_tensor_data(got))[i]
                     : ((const double*)weft_tensor_data(got))[i];
      cr_expect(fabs(x - var[i]) <= 1e-6 * (1 + fabs(var[i])),
                "read %d: %g, the value before the update %g", i, x, var[i]);
    }
    weft_tensor_destroy(got);
    for (int i = 0; i < N; ++i) var[i] -= alpha * delta[i];
    expect_values(s, v, dtype, var, N, "var", 2);
    /* And once the read is gone, in place again. */
    cr_expect_eq(in_place_count(s, NULL, NULL, step, "step", "v"), 1);
    for (int i = 0; i < N; ++i) var[i] -= alpha * delta[i];
    expect_values(s, v, dtype, var, N, "var", 3);
    weft_session_destroy(s);
    weft_graph_destroy(g);
  }
}

/* Adam writes all three of its variables in place, with the same values as
 * the reference (adam_steps checks the values step by step). */
Test(apply_ops, adam_in_place) {
  weft_graph* g = wt_graph_new();
  double zeros[N] = {0}, var[N] = {1, -2, 3.5, 0.25};
  weft_node* inits[3];
  weft_output vars[3] = {
      variable(g, "var", WEFT_FLOAT32, WT_DIMS(N), 1, var, &inits[0]),
      variable(g, "m", WEFT_FLOAT32, WT_DIMS(N), 1, zeros, &inits[1]),
      variable(g, "v", WEFT_FLOAT32, WT_DIMS(N), 1, zeros, &inits[2])};
  const double grad[N] = {0.5, -1, 2, 4};
  weft_output in[] = {vars[0], vars[1], vars[2],
                      scalar_const(g, "b1p", WEFT_FLOAT32, 0.9),
                      scalar_const(g, "b2p", WEFT_FLOAT32, 0.999),
                      scalar_const(g, "lr", WEFT_FLOAT32, 0.01),
                      scalar_const(g, "beta1", WEFT_FLOAT32, 0.9),
                      scalar_const(g, "beta2", WEFT_FLOAT32, 0.999),
                      scalar_const(g, "epsilon", WEFT_FLOAT32, 1e-8),
                      typed_const(g, "grad", WEFT_FLOAT32, WT_DIMS(N), 1,
                                  grad)};
  weft_node* step;
  WT_OK(build_op(g, "ApplyAdam", "step", in, 10, -1, &step));
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, inits, 3);
  cr_expect_eq(in_place_count(s, NULL, NULL, step, "step", NULL), 3);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(apply_ops, build_errors) {
  weft_graph* g = wt_graph_new();
  const double ones[N] = {1, 1, 1, 1};
  weft_node* init;
  weft_output v = variable(g, "v", WEFT_FLOAT32, WT_DIMS(N), 1, ones, &init);
  weft_output alpha = scalar_const(g, "alpha", WEFT_FLOAT32, 0.1);
  weft_output delta =
      typed_const(g, "delta", WEFT_FLOAT32, WT_DIMS(N), 1, ones);
  weft_output not_var =
      typed_const(g, "not_var", WEFT_FLOAT32, WT_DIMS(N), 1, ones);
  weft_node* n;
  weft_output ref_const[] = {not_var, alpha, delta};
  WT_EXPECT_ERROR(build_op(g, "ApplyGradientDescent", "a", ref_const, 3, -1,
                           &n),
                  WEFT_INVALID_ARGUMENT, "Variable", "Const");
  weft_output short_delta[] = {
      v, alpha, typed_const(g, "d3", WEFT_FLOAT32, WT_DIMS(3), 1, ones)};
  WT_EXPECT_ERROR(build_op(g, "ApplyGradientDescent", "b", short_delta, 3,
                           -1, &n),
                  WEFT_INVALID_ARGUMENT, "delta", "[3]", "[4]");
  weft_output vector_alpha[] = {v, delta, delta};
  WT_EXPECT_ERROR(build_op(g, "ApplyGradientDescent", "c", vector_alpha, 3,
                           -1, &n),
                  WEFT_INVALID_ARGUMENT, "alpha", "scalar");
  weft_output mixed[] = {v, scalar_const(g, "alpha64", WEFT_FLOAT64, 0.1),
                         delta};
  WT_EXPECT_ERROR(build_op(g, "ApplyGradientDescent", "d", mixed, 3, -1, &n),
                  WEFT_INVALID_ARGUMENT, "float64");
  /* Momentum's accumulator is a reference too. */
  weft_output accum_const[] = {v, not_var, alpha, delta, alpha};
  WT_EXPECT_ERROR(build_op(g, "ApplyMomentum", "e", accum_const, 5, 0, &n),
                  WEFT_INVALID_ARGUMENT, "accum", "Variable");
  /* Integers have no update kernels. */
  int32_t count = 4;
  weft_output iv;
  WT_OK(weft_graph_variable(
      g, "iv", wt_const(g, "iv0", wt_tensor(WEFT_INT32, NULL, 0, &count)),
      &iv, NULL));
  weft_output int_in[] = {iv, iv, iv};
  WT_EXPECT_CODE(build_op(g, "ApplyGradientDescent", "f", int_in, 3, -1, &n),
                 WEFT_INVALID_ARGUMENT);
  weft_graph_destroy(g);
}

Test(apply_ops, run_errors) {
  weft_graph* g = wt_graph_new();
  const double ones[N] = {1, 1, 1, 1};
  weft_node* init;
  weft_output v = variable(g, "v", WEFT_FLOAT32, WT_DIMS(N), 1, ones, &init);
  /* A gradient whose shape is known only when it is fed. */
  weft_output delta = wt_placeholder(g, "delta", WEFT_FLOAT32, NULL, -1);
  weft_output in[] = {v, scalar_const(g, "alpha", WEFT_FLOAT32, 0.5), delta};
  weft_node* step;
  WT_OK(build_op(g, "ApplyGradientDescent", "step", in, 3, -1, &step));
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* good = typed_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, ones);
  WT_EXPECT_ERROR(
      weft_session_run(s, &delta, &good, 1, NULL, 0, &step, 1, NULL),
      WEFT_FAILED_PRECONDITION, "'v'", "not initialized");
  wt_run_targets(s, &init, 1);
  weft_tensor* bad = typed_tensor(WEFT_FLOAT32, WT_DIMS(2, 2), 2, ones);
  WT_EXPECT_ERROR(weft_session_run(s, &delta, &bad, 1, NULL, 0, &step, 1,
                                   NULL),
                  WEFT_INVALID_ARGUMENT, "step", "[2,2]", "[4]");
  /* Nothing was written by the failed step. */
  const double still[N] = {1, 1, 1, 1}, after[N] = {0.5, 0.5, 0.5, 0.5};
  expect_values(s, v, WEFT_FLOAT32, still, N, "var", 0);
  WT_OK(weft_session_run(s, &delta, &good, 1, NULL, 0, &step, 1, NULL));
  expect_values(s, v, WEFT_FLOAT32, after, N, "var", 1);
  weft_tensor_destroy(good);
  weft_tensor_destroy(bad);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- Variables ------------------------------------------------------------ */

Test(trainable, list_order_count_and_flags) {
  weft_graph* g = wt_graph_new();
  const double one = 1;
  weft_output a = variable(g, "a", WEFT_FLOAT32, NULL, 0, &one, NULL);
  weft_output b = variable(g, "b", WEFT_FLOAT64, NULL, 0, &one, NULL);
  weft_output c = variable(g, "c", WEFT_FLOAT32, NULL, 0, &one, NULL);
  weft_node* out[4] = {NULL};
  int32_t count = -1;
  WT_OK(weft_graph_trainable_variables(g, out, 4, &count));
  cr_expect_eq(count, 3);
  cr_expect_eq(out[0], a.node);
  cr_expect_eq(out[1], b.node);
  cr_expect_eq(out[2], c.node);
  WT_OK(weft_variable_set_trainable(g, b.node, 0));
  WT_OK(weft_graph_trainable_variables(g, out, 1, &count));
  cr_expect_eq(count, 2, "the total, beyond the capacity");
  cr_expect_eq(out[0], a.node);
  WT_OK(weft_graph_trainable_variables(g, NULL, 0, &count));
  cr_expect_eq(count, 2);
  WT_OK(weft_variable_set_trainable(g, b.node, 1));
  WT_OK(weft_graph_trainable_variables(g, out, 4, &count));
  cr_expect_eq(count, 3);
  cr_expect_eq(out[1], b.node);
  WT_EXPECT_ERROR(
      weft_variable_set_trainable(g, weft_graph_node_by_name(g, "a_value"), 0),
      WEFT_INVALID_ARGUMENT, "not a Variable");
  WT_EXPECT_CODE(weft_variable_set_trainable(NULL, a.node, 0),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_graph_trainable_variables(g, NULL, 2, &count),
                 WEFT_INVALID_ARGUMENT);
  weft_graph* other = wt_graph_new();
  WT_EXPECT_CODE(weft_variable_set_trainable(other, a.node, 0),
                 WEFT_INVALID_ARGUMENT);
  weft_graph_destroy(other);
  weft_graph_destroy(g);
}

/* ---- weft_minimize --------------------------------------------------------- */

/* loss = sum(w @ c) over w [1,3], c [3,1] (a constant gradient: c^T) and
 * a second factor u [1,1] multiplying it; its gradient is then c^T * u. */
struct linear {
  weft_graph* graph;
  weft_output w, loss;
};

static const double kW0[3] = {1, -2, 0.5};
static const double kC[3] = {0.5, -1, 2};

static struct linear make_linear(weft_dtype dtype) {
  struct linear f;
  f.graph = wt_graph_new();
  f.w = variable(f.graph, "w", dtype, WT_DIMS(1, 3), 2, kW0, NULL);
  weft_output c = typed_const(f.graph, "c", dtype, WT_DIMS(3, 1), 2, kC);
  f.loss = wt_apply2(f.graph, "MatMul", "loss", f.w, c);
  return f;
}

/* The ops whose gradients these losses need.  They are registered apart
 * from the optimizers: a case reports itself skipped while one is missing
 * (test_gradient_coverage fails for that gap). */
static void require_gradients(void) {
  static const char* const ops[] = {"MatMul", "Sub", "Square", "Mean"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i)
    if (weft_op_gradient_status(ops[i]) != 1) {
      char why[96];
      snprintf(why, sizeof why, "op %s has no gradient yet", ops[i]);
      WT_SKIP(why);
    }
}

/* Minimizes `loss` with `kind` at `lr` (train op `name`, NULL for the
 * default) and returns a session in which every variable is initialized. */
static weft_session* start_training(weft_graph* g, weft_output loss,
                                    int32_t kind, double lr,
                                    int32_t nesterov, const char* name,
                                    weft_node** train) {
  require_gradients();
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, kind);
  o.learning_rate = lr;
  o.use_nesterov = nesterov;
  *train = NULL;
  WT_OK(weft_minimize(g, loss, &o, name, train));
  cr_assert_not_null(*train);
  weft_node* init = NULL;
  WT_OK(weft_graph_initialize_all(g, NULL, &init));
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, &init, 1);
  return s;
}

static void minimize_descent(weft_dtype dtype) {
  struct linear f = make_linear(dtype);
  weft_node* train;
  weft_session* s = start_training(
      f.graph, f.loss, WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1, 0, NULL, &train);
  cr_expect_str_eq(weft_node_name(train), "train");
  cr_expect_str_eq(weft_node_op_type(train), "NoOp");
  double w[3];
  memcpy(w, kW0, sizeof w);
  for (int t = 1; t <= 4; ++t) {
    wt_run_targets(s, &train, 1);
    for (int i = 0; i < 3; ++i) w[i] -= 0.1 * kC[i];
    expect_values(s, f.w, dtype, w, 3, "w", t);
  }
  weft_session_destroy(s);
  weft_graph_destroy(f.graph);
}

Test(minimize, gradient_descent_steps) {
  for (int d = 0; d < 2; ++d) minimize_descent(kDtypes[d]);
}

/* A training step from weft_minimize writes the weights in place: the
 * forward pass's reads of w are done with before the update runs. */
Test(minimize, training_step_updates_in_place) {
  struct linear f = make_linear(WEFT_FLOAT32);
  weft_node* train;
  weft_session* s = start_training(
      f.graph, f.loss, WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1, 0, NULL, &train);
  cr_expect_eq(in_place_count(s, NULL, NULL, train, NULL, "w"), 1);
  double w[3];
  for (int i = 0; i < 3; ++i) w[i] = kW0[i] - 0.1 * kC[i];
  expect_values(s, f.w, WEFT_FLOAT32, w, 3, "w", 1);
  weft_session_destroy(s);
  weft_graph_destroy(f.graph);
}

/* Adam through weft_minimize: the slots, the beta powers kept as variables
 * and the bias correction, against the formula over five steps. */
static void minimize_adam(weft_dtype dtype) {
  struct linear f = make_linear(dtype);
  weft_node* train;
  weft_session* s = start_training(f.graph, f.loss, WEFT_OPTIMIZER_ADAM,
                                   0.02, 0, "adam_step", &train);
  cr_expect_str_eq(weft_node_name(train), "adam_step");
  weft_node* m_node = weft_graph_node_by_name(f.graph, "w/Adam");
  weft_node* v_node = weft_graph_node_by_name(f.graph, "w/Adam_1");
  cr_assert_not_null(m_node);
  cr_assert_not_null(v_node);
  cr_expect_str_eq(weft_node_op_type(m_node), "Variable");
  double w[3], m[3] = {0}, v[3] = {0};
  memcpy(w, kW0, sizeof w);
  for (int t = 1; t <= 5; ++t) {
    wt_run_targets(s, &train, 1);
    adam_reference(w, m, v, kC, 3, t, 0.02, 0.9, 0.999, 1e-8);
    expect_values(s, f.w, dtype, w, 3, "w", t);
    expect_values(s, (weft_output){m_node, 0}, dtype, m, 3, "m", t);
    expect_values(s, (weft_output){v_node, 0}, dtype, v, 3, "v", t);
  }
  weft_session_destroy(s);
  weft_graph_destroy(f.graph);
}

Test(minimize, adam_bias_correction) {
  for (int d = 0; d < 2; ++d) minimize_adam(kDtypes[d]);
}

Test(minimize, non_trainable_variable_is_not_updated) {
  weft_graph* g = wt_graph_new();
  const double w0[2] = {1, 2}, u0[2] = {3, -4};
  weft_output w = variable(g, "w", WEFT_FLOAT32, WT_DIMS(1, 2), 2, w0, NULL);
  weft_output u = variable(g, "u", WEFT_FLOAT32, WT_DIMS(2, 1), 2, u0, NULL);
  WT_OK(weft_variable_set_trainable(g, u.node, 0));
  weft_output loss = wt_apply2(g, "MatMul", "loss", w, u);
  weft_node* train;
  weft_session* s = start_training(
      g, loss, WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.5, 0, NULL, &train);
  wt_run_targets(s, &train, 1);
  const double w1[2] = {1 - 0.5 * 3, 2 + 0.5 * 4};
  expect_values(s, w, WEFT_FLOAT32, w1, 2, "w", 1);
  expect_values(s, u, WEFT_FLOAT32, u0, 2, "u", 1);
  /* With w frozen too, nothing is left to train. */
  WT_OK(weft_variable_set_trainable(g, w.node, 0));
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  WT_EXPECT_ERROR(weft_minimize(g, loss, &o, NULL, &train),
                  WEFT_INVALID_ARGUMENT, "trainable");
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(minimize, loss_without_trainable_inputs) {
  weft_graph* g = wt_graph_new();
  const double one = 1, two[2] = {1, 2};
  variable(g, "w", WEFT_FLOAT32, NULL, 0, &one, NULL);
  weft_output c = typed_const(g, "c", WEFT_FLOAT32, WT_DIMS(1, 2), 2, two);
  weft_output loss = wt_apply1(g, "Neg", "loss", c);
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  weft_node* train = (weft_node*)&train;
  WT_EXPECT_ERROR(weft_minimize(g, loss, &o, NULL, &train),
                  WEFT_INVALID_ARGUMENT, "loss", "no trainable variable");
  cr_expect_null(train);
  weft_graph_destroy(g);
}

Test(minimize, initialize_all_covers_slots) {
  require_gradients();
  struct linear f = make_linear(WEFT_FLOAT32);
  weft_node* w_init = weft_graph_node_by_name(f.graph, "w/initializer");
  cr_assert_not_null(w_init);
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_MOMENTUM);
  o.learning_rate = 0.1;
  weft_node* train;
  WT_OK(weft_minimize(f.graph, f.loss, &o, NULL, &train));
  weft_node* accum = weft_graph_node_by_name(f.graph, "w/Momentum");
  cr_assert_not_null(accum);
  cr_expect_str_eq(weft_node_device(accum), weft_node_device(f.w.node));
  /* Slots are not trainable. */
  weft_node* listed[4];
  int32_t count;
  WT_OK(weft_graph_trainable_variables(f.graph, listed, 4, &count));
  cr_expect_eq(count, 1);
  cr_expect_eq(listed[0], f.w.node);

  weft_session* s = wt_session_new(f.graph, NULL);
  /* The variable's own initializer leaves the slot uninitialized. */
  wt_run_targets(s, &w_init, 1);
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, NULL, 0, &train, 1,
                                   NULL),
                  WEFT_FAILED_PRECONDITION, "w/Momentum");
  weft_node* init = NULL;
  WT_OK(weft_graph_initialize_all(f.graph, "everything", &init));
  cr_expect_str_eq(weft_node_name(init), "everything");
  cr_expect_eq(weft_node_num_control_inputs(init), 2);
  weft_node* again = (weft_node*)&again;
  WT_EXPECT_CODE(weft_graph_initialize_all(f.graph, "everything", &again),
                 WEFT_ALREADY_EXISTS);
  cr_expect_null(again);
  wt_run_targets(s, &init, 1);
  const double zeros[3] = {0, 0, 0};
  expect_values(s, (weft_output){accum, 0}, WEFT_FLOAT32, zeros, 3, "accum",
                0);
  wt_run_targets(s, &train, 1);
  expect_values(s, (weft_output){accum, 0}, WEFT_FLOAT32, kC, 3, "accum", 1);
  weft_session_destroy(s);
  weft_graph_destroy(f.graph);
}

Test(minimize, names) {
  require_gradients();
  struct linear f = make_linear(WEFT_FLOAT32);
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_MOMENTUM);
  weft_node* first;
  weft_node* second;
  WT_OK(weft_minimize(f.graph, f.loss, &o, NULL, &first));
  WT_OK(weft_minimize(f.graph, f.loss, &o, NULL, &second));
  cr_expect_str_eq(weft_node_name(first), "train");
  cr_expect_str_eq(weft_node_name(second), "train_1");
  cr_expect_not_null(weft_graph_node_by_name(f.graph, "w/Momentum_1"));
  WT_EXPECT_ERROR(weft_minimize(f.graph, f.loss, &o, "train", &second),
                  WEFT_ALREADY_EXISTS, "train");
  weft_graph_destroy(f.graph);
}

/* weft_minimize() refuses `o` with INVALID_ARGUMENT naming `what`. */
static void expect_refused(const struct linear* f,
                           const weft_optimizer_options* o, const char* what) {
  weft_node* train = (weft_node*)&train;
  WT_EXPECT_ERROR(weft_minimize(f->graph, f->loss, o, NULL, &train),
                  WEFT_INVALID_ARGUMENT, what);
  cr_expect_null(train);
}

Test(minimize, options) {
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_ADAM);
  cr_expect_eq(o.struct_size, sizeof o);
  cr_expect_eq(o.kind, WEFT_OPTIMIZER_ADAM);
  cr_expect_eq(o.learning_rate, 0.01);
  cr_expect_eq(o.momentum, 0.9);
  cr_expect_eq(o.use_nesterov, 0);
  cr_expect_eq(o.beta1, 0.9);
  cr_expect_eq(o.beta2, 0.999);
  cr_expect_eq(o.epsilon, 1e-8);

  struct linear f = make_linear(WEFT_FLOAT32);
  expect_refused(&f, NULL, "options");
  const double bad_rates[] = {0, -0.1, NAN, INFINITY};
  for (int i = 0; i < 4; ++i) {
    weft_optimizer_options_init(&o, WEFT_OPTIMIZER_GRADIENT_DESCENT);
    o.learning_rate = bad_rates[i];
    expect_refused(&f, &o, "learning rate");
  }
  const double bad_momenta[] = {1, -0.1, 1.5, NAN};
  for (int i = 0; i < 4; ++i) {
    weft_optimizer_options_init(&o, WEFT_OPTIMIZER_MOMENTUM);
    o.momentum = bad_momenta[i];
    expect_refused(&f, &o, "momentum");
  }
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_ADAM);
  o.beta2 = 1;
  expect_refused(&f, &o, "beta2");
  weft_optimizer_options_init(&o, 7);
  expect_refused(&f, &o, "kind");
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  o.struct_size = 0;
  expect_refused(&f, &o, "struct_size");
  /* Nothing was added by the refused calls. */
  cr_expect_null(weft_graph_node_by_name(f.graph, "train"));
  weft_graph_destroy(f.graph);
}

/* ---- Linear regression: y = 3x + 2 --------------------------------------- */

#define POINTS 8

/* loss = mean((x @ [w; b] - y)^2) over x = [x_i, 1]; returns [w; b]. */
static weft_output regression(weft_graph* g, weft_dtype dtype,
                              weft_output* loss) {
  double x[POINTS * 2], y[POINTS];
  for (int i = 0; i < POINTS; ++i) {
    x[2 * i] = -1 + 0.5 * i;
    x[2 * i + 1] = 1;
    y[i] = 3 * x[2 * i] + 2;
  }
  const double zeros[2] = {0, 0};
  weft_output wb = variable(g, "wb", dtype, WT_DIMS(2, 1), 2, zeros, NULL);
  weft_output pred = wt_apply2(
      g, "MatMul", "pred",
      typed_const(g, "x", dtype, WT_DIMS(POINTS, 2), 2, x), wb);
  weft_output err = wt_apply2(
      g, "Sub", "err", pred,
      typed_const(g, "y", dtype, WT_DIMS(POINTS, 1), 2, y));
  *loss = wt_apply1(g, "Mean", "loss", wt_apply1(g, "Square", "sq", err));
  return wb;
}

static void fit(int32_t kind, int32_t nesterov, double lr, int steps, double tol,
                weft_dtype dtype) {
  weft_graph* g = wt_graph_new();
  weft_output loss;
  weft_output wb = regression(g, dtype, &loss);
  weft_node* train;
  weft_session* s =
      start_training(g, loss, kind, lr, nesterov, NULL, &train);
  for (int t = 0; t < steps; ++t) wt_run_targets(s, &train, 1);
  double got[2];
  fetch_values(s, wb, got, 2);
  cr_expect(fabs(got[0] - 3) < tol && fabs(got[1] - 2) < tol,
            "optimizer %d (nesterov %d, %s): w = %.6f, b = %.6f after %d "
            "steps", kind, nesterov, weft_dtype_name(dtype), got[0], got[1],
            steps);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(regression, gradient_descent) {
  fit(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0, 0.1, 300, 1e-3, WEFT_FLOAT32);
  fit(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0, 0.1, 300, 1e-3, WEFT_FLOAT64);
}

Test(regression, momentum) {
  fit(WEFT_OPTIMIZER_MOMENTUM, 0, 0.02, 400, 1e-3, WEFT_FLOAT32);
  fit(WEFT_OPTIMIZER_MOMENTUM, 1, 0.02, 400, 1e-3, WEFT_FLOAT32);
}

Test(regression, adam) {
  fit(WEFT_OPTIMIZER_ADAM, 0, 0.05, 1500, 1e-2, WEFT_FLOAT32);
}

/* User API 1.10 appended data_parallel: the sized init writes no more than
 * the caller's struct, the exported function (what binaries built against
 * older headers call) no more than the struct they had (through epsilon),
 * and a value other than 0 or 1 is refused. */
Test(minimize, options_init_writes_only_the_callers_struct) {
  unsigned char bytes[sizeof(weft_optimizer_options) + 32];
  weft_optimizer_options* o = (weft_optimizer_options*)bytes;
  const size_t before = offsetof(weft_optimizer_options, epsilon) +
                        sizeof o->epsilon;
  memset(bytes, 0xA5, sizeof bytes);
  (weft_optimizer_options_init)(o, WEFT_OPTIMIZER_ADAM);
  cr_expect_eq(o->struct_size, before);
  cr_expect_eq(o->epsilon, 1e-8);
  for (size_t i = before; i < sizeof bytes; ++i)
    cr_assert_eq(bytes[i], 0xA5, "byte %zu written past 1.9's struct", i);

  memset(bytes, 0xA5, sizeof bytes);
  weft_optimizer_options_init_sized(o, sizeof bytes, WEFT_OPTIMIZER_MOMENTUM);
  cr_expect_eq(o->struct_size, sizeof(weft_optimizer_options));
  cr_expect_eq(o->momentum, 0.9);
  cr_expect_eq(o->data_parallel, 0);
  for (size_t i = sizeof(weft_optimizer_options); i < sizeof bytes; ++i)
    cr_assert_eq(bytes[i], 0xA5, "byte %zu written past the library's", i);

  /* An older caller's struct (no data_parallel) still builds a step. */
  weft_graph* g = wt_graph_new();
  const float init = 1.0f;
  weft_output w;
  WT_OK(weft_graph_variable(g, "w", wt_const_f32(g, "w0", NULL, 0, &init),
                            &w, NULL));
  weft_output loss = wt_apply1(g, "Square", "loss", w);
  weft_node* step = NULL;
  memset(bytes, 0xA5, sizeof bytes);
  (weft_optimizer_options_init)(o, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  WT_OK(weft_minimize(g, loss, o, "old", &step));

  weft_optimizer_options opts;
  weft_optimizer_options_init(&opts, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  opts.data_parallel = 2;
  WT_EXPECT_ERROR(weft_minimize(g, loss, &opts, "bad", &step),
                  WEFT_INVALID_ARGUMENT, "data_parallel 2");
  weft_graph_destroy(g);
}
