/* Gradients through control flow (weft_cond, weft_while_loop) against
 * central differences (grad_check.h), in float64, and by hand where the
 * formula is short. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "grad_check.h"
#include "gradient_tests.h"
#include "test_support.h"

static weft_output f64(weft_graph* g, double v) {
  return wt_const(g, NULL, wt_tensor(WEFT_FLOAT64, NULL, 0, &v));
}

static weft_output i32(weft_graph* g, int32_t v) {
  return wt_const(g, NULL, wt_tensor(WEFT_INT32, NULL, 0, &v));
}

static weft_output sum_all(weft_graph* g, weft_output x) {
  return wt_apply1(g, "Sum", NULL, x);
}

/* ---- cond: y = (sum(a) > 0 ? a * b : exp(a)) + b ------------------------ */

struct ab {
  weft_output a, b;
};

static weft_status* product(weft_graph* g, void* user, weft_output* out,
                            int32_t n) {
  (void)n;
  struct ab* v = user;
  out[0] = wt_apply2(g, "Mul", NULL, v->a, v->b);
  return NULL;
}

static weft_status* exponential(weft_graph* g, void* user, weft_output* out,
                                int32_t n) {
  (void)n;
  struct ab* v = user;
  out[0] = wt_apply1(g, "Exp", NULL, v->a);
  return NULL;
}

static weft_output build_cond(weft_graph* g, const weft_output* xs,
                              int32_t n, void* arg) {
  (void)n;
  (void)arg;
  struct ab v = {xs[0], xs[1]};
  weft_output p = wt_apply2(g, "Greater", NULL, sum_all(g, xs[0]), f64(g, 0));
  weft_output y;
  WT_OK(weft_cond(g, NULL, p, product, exponential, &v, 1, &y));
  return wt_apply2(g, "Add", "y", y, xs[1]);
}

Test(control_gradients, cond_either_branch) {
  const double pos[6] = {0.5, -0.2, 0.9, 0.3, 0.1, -0.4};
  const double neg[6] = {-0.5, 0.2, -0.9, -0.3, 0.1, -0.4};
  const double b[6] = {1.5, -0.7, 0.2, 0.8, -1.1, 0.6};
  for (int k = 0; k < 2; ++k) {
    gc_input xs[2] = {{WEFT_FLOAT64, WT_DIMS(2, 3), 2, k ? neg : pos, 0},
                      {WEFT_FLOAT64, WT_DIMS(2, 3), 2, b, 0}};
    gc_check_f64(k ? "cond, else branch" : "cond, then branch", build_cond,
                 NULL, xs, 2, 0);
  }
}

/* ---- p = x ** n by a loop: p = p * x, n times (x a loop invariant) ----- */

struct power {
  weft_output x;
  int32_t n;
};

static weft_status* below_n(weft_graph* g, void* user, const weft_output* v,
                            int32_t n, weft_output* pred) {
  (void)n;
  struct power* P = user;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, P->n));
  return NULL;
}

static weft_status* times_x(weft_graph* g, void* user, const weft_output* v,
                            int32_t n, weft_output* next) {
  (void)n;
  struct power* P = user;
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = wt_apply2(g, "Mul", NULL, v[1], P->x);
  return NULL;
}

static weft_output build_power(weft_graph* g, const weft_output* xs,
                               int32_t n, void* arg) {
  (void)n;
  struct power P = {xs[0], *(const int32_t*)arg};
  weft_output init[2] = {i32(g, 0), wt_apply1(g, "OnesLike", NULL, xs[0])};
  weft_output out[2];
  WT_OK(weft_while_loop(g, below_n, times_x, &P, init, 2, NULL, out));
  return out[1];
}

Test(control_gradients, power_by_a_loop) {
  const double x[3] = {1.3, -0.7, 0.9};
  for (int32_t n = 0; n <= 4; ++n) {
    gc_input in = {WEFT_FLOAT64, WT_DIMS(3), 1, x, 0};
    char what[48];
    snprintf(what, sizeof what, "x ** %d by a loop", n);
    gc_check_f64(what, build_power, &n, &in, 1, 0);
  }
  /* By hand: d(x^3)/dx = 3 x^2 at x = 2 is 12. */
  weft_graph* g = wt_graph_new();
  weft_output px = wt_placeholder(g, "x", WEFT_FLOAT64, NULL, 0);
  int32_t three = 3;
  weft_output y = build_power(g, &px, 1, &three);
  weft_output dx;
  WT_OK(weft_gradients(g, &y, 1, &px, 1, NULL, &dx));
  weft_session* s = wt_session_new(g, NULL);
  double two = 2;
  weft_tensor* v = wt_tensor(WEFT_FLOAT64, NULL, 0, &two);
  weft_tensor* t = wt_run1(s, &px, &v, 1, dx);
  cr_expect_float_eq(*(const double*)weft_tensor_data(t), 12.0, 1e-12);
  weft_tensor_destroy(t);
  weft_tensor_destroy(v);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- data-dependent trip count: while sum(s) < 20: s = s * 1.5 + x ----- */

struct grow {
  weft_output x;
};

static weft_status* small_sum(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, sum_all(g, v[0]), f64(g, 20));
  return NULL;
}

static weft_status* grow_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  struct grow* G = user;
  next[0] = wt_apply2(g, "Add", NULL,
                      wt_apply2(g, "Mul", NULL, v[0], f64(g, 1.5)), G->x);
  return NULL;
}

static weft_output build_grow(weft_graph* g, const weft_output* xs, int32_t n,
                              void* arg) {
  (void)n;
  (void)arg;
  struct grow G = {xs[1]};
  weft_output out;
  WT_OK(weft_while_loop(g, small_sum, grow_body, &G, &xs[0], 1, NULL, &out));
  return wt_apply2(g, "Mul", "y", out, out);
}

Test(control_gradients, data_dependent_trip_count) {
  /* From sum 0.6 the loop runs several times before passing 20; the
   * perturbations of central differences do not change the count. */
  const double s0[3] = {0.1, 0.2, 0.3};
  const double x[3] = {0.45, 0.35, 0.25};
  gc_input xs[2] = {{WEFT_FLOAT64, WT_DIMS(3), 1, s0, 0},
                    {WEFT_FLOAT64, WT_DIMS(3), 1, x, 0}};
  gc_check_f64("while sum(s) < 20: s = 1.5 s + x", build_grow, NULL, xs, 2,
               0);
}

/* ---- an RNN: h = tanh(h W + u) for 5 steps, W captured ----------------- */

struct rnn {
  weft_output w, u;
};

static weft_status* five_steps(weft_graph* g, void* user,
                               const weft_output* v, int32_t n,
                               weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, 5));
  return NULL;
}

static weft_status* rnn_step(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* next) {
  (void)n;
  struct rnn* R = user;
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  weft_output hw = wt_apply2(g, "MatMul", NULL, v[1], R->w);
  next[1] = wt_apply1(g, "Tanh", NULL, wt_apply2(g, "Add", NULL, hw, R->u));
  return NULL;
}

static weft_output build_rnn(weft_graph* g, const weft_output* xs, int32_t n,
                             void* arg) {
  (void)n;
  const int32_t* options = arg;
  struct rnn R = {xs[1], xs[2]};
  weft_output init[2] = {i32(g, 0), xs[0]};
  weft_output out[2];
  weft_while_options o = {.struct_size = sizeof o,
                          .parallel_iterations = options[0],
                          .maximum_iterations = options[1]};
  WT_OK(weft_while_loop(g, five_steps, rnn_step, &R, init, 2, &o, out));
  return out[1];
}

Test(control_gradients, rnn_with_a_captured_weight) {
  double h0[6], w[9], u[3];
  gt_fill_distinct(h0, 6, 1);
  gt_fill_distinct(w, 9, 2);
  gt_fill_distinct(u, 3, 3);
  for (int k = 0; k < 9; ++k) w[k] *= 0.5;
  gc_input xs[3] = {{WEFT_FLOAT64, WT_DIMS(2, 3), 2, h0, 0},
                    {WEFT_FLOAT64, WT_DIMS(3, 3), 2, w, 0},
                    {WEFT_FLOAT64, WT_DIMS(3), 1, u, 0}};
  int32_t sequential[2] = {1, 0};
  gc_check_f64("rnn, parallel_iterations 1", build_rnn, sequential, xs, 3, 0);
  int32_t parallel[2] = {10, 0};
  gc_check_f64("rnn, parallel_iterations 10", build_rnn, parallel, xs, 3, 0);
  /* maximum_iterations 3 stops it after 3 of the 5 steps. */
  int32_t capped[2] = {10, 3};
  gc_check_f64("rnn, maximum_iterations 3", build_rnn, capped, xs, 3, 0);
}

/* ---- nested loops: for i < 2: (for j < 2: p = p * x): p0 * x ** 4 ----- */

static weft_status* nested_body(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* next) {
  (void)n;
  struct power P = {((struct power*)user)->x, 2};
  weft_output init[2] = {i32(g, 0), v[1]};
  weft_output out[2];
  weft_status* st =
      weft_while_loop(g, below_n, times_x, &P, init, 2, NULL, out);
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = out[1];
  return st;
}

static weft_output build_nested(weft_graph* g, const weft_output* xs,
                                int32_t n, void* arg) {
  (void)n;
  (void)arg;
  struct power outer = {xs[0], 2};
  weft_output init[2] = {i32(g, 0), xs[1]};
  weft_output out[2];
  WT_OK(weft_while_loop(g, below_n, nested_body, &outer, init, 2, NULL, out));
  return out[1];
}

Test(control_gradients, nested_loops) {
  const double x[3] = {1.3, -0.7, 0.9};
  const double p0[3] = {0.5, 1.5, -2.0};
  gc_input xs[2] = {{WEFT_FLOAT64, WT_DIMS(3), 1, x, 0},
                    {WEFT_FLOAT64, WT_DIMS(3), 1, p0, 0}};
  gc_check_f64("p * x ** 4 by nested loops", build_nested, NULL, xs, 2, 0);
}

/* ---- inner trip count from the outer counter: p0 * x ** (1 + 2 + 3) ---- */

struct triangle {
  weft_output x;
};

static weft_status* inner_le(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  /* v = (j, p, i): j <= i */
  *pred = wt_apply2(g, "LessEqual", NULL, v[0], v[2]);
  return NULL;
}

static weft_status* inner_times(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* next) {
  (void)n;
  struct triangle* T = user;
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = wt_apply2(g, "Mul", NULL, v[1], T->x);
  next[2] = v[2];
  return NULL;
}

static weft_status* below_3(weft_graph* g, void* user, const weft_output* v,
                            int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, 3));
  return NULL;
}

static weft_status* triangle_body(weft_graph* g, void* user,
                                  const weft_output* v, int32_t n,
                                  weft_output* next) {
  (void)n;
  weft_output init[3] = {i32(g, 0), v[1], v[0]};
  weft_output out[3];
  weft_status* st =
      weft_while_loop(g, inner_le, inner_times, user, init, 3, NULL, out);
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = out[1];
  return st;
}

static weft_output build_triangle(weft_graph* g, const weft_output* xs,
                                  int32_t n, void* arg) {
  (void)n;
  (void)arg;
  struct triangle T = {xs[0]};
  weft_output init[2] = {i32(g, 0), xs[1]};
  weft_output out[2];
  WT_OK(weft_while_loop(g, below_3, triangle_body, &T, init, 2, NULL, out));
  return out[1];
}

Test(control_gradients, nested_loops_inner_count_from_outer) {
  const double x[2] = {1.1, -0.9};
  const double p0[2] = {0.5, 1.5};
  gc_input xs[2] = {{WEFT_FLOAT64, WT_DIMS(2), 1, x, 0},
                    {WEFT_FLOAT64, WT_DIMS(2), 1, p0, 0}};
  gc_check_f64("p0 * x ** 6 by a triangle of loops", build_triangle, NULL,
               xs, 2, 0);
}

/* ---- cond inside while: h = (i even ? h * x : h + x), 4 times ---------- */

struct hx {
  weft_output h, x;
};

static weft_status* h_times_x(weft_graph* g, void* user, weft_output* out,
                              int32_t n) {
  (void)n;
  struct hx* a = user;
  out[0] = wt_apply2(g, "Mul", NULL, a->h, a->x);
  return NULL;
}

static weft_status* h_plus_x(weft_graph* g, void* user, weft_output* out,
                             int32_t n) {
  (void)n;
  struct hx* a = user;
  out[0] = wt_apply2(g, "Add", NULL, a->h, a->x);
  return NULL;
}

static weft_status* below_4(weft_graph* g, void* user, const weft_output* v,
                            int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, 4));
  return NULL;
}

static weft_status* alternate(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  struct hx a = {v[1], *(weft_output*)user};
  weft_output even = wt_apply2(
      g, "Equal", NULL, wt_apply2(g, "FloorMod", NULL, v[0], i32(g, 2)),
      i32(g, 0));
  weft_output h;
  weft_status* st = weft_cond(g, NULL, even, h_times_x, h_plus_x, &a, 1, &h);
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = h;
  return st;
}

static weft_output build_alternate(weft_graph* g, const weft_output* xs,
                                   int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_output x = xs[0];
  weft_output init[2] = {i32(g, 0), xs[1]};
  weft_output out[2];
  WT_OK(weft_while_loop(g, below_4, alternate, &x, init, 2, NULL, out));
  return out[1];
}

Test(control_gradients, cond_inside_while) {
  const double x[3] = {1.2, -0.6, 0.3};
  const double h0[3] = {0.7, 0.4, -1.3};
  gc_input xs[2] = {{WEFT_FLOAT64, WT_DIMS(3), 1, x, 0},
                    {WEFT_FLOAT64, WT_DIMS(3), 1, h0, 0}};
  gc_check_f64("cond inside while", build_alternate, NULL, xs, 2, 0);
}

/* ---- an LSTM cell over 3 steps (as `weft train --model lstm` builds it):
 * gates = [x_t, h] W + b via Gather, Concat, MatMul, BiasAdd, Split --- */

struct lstm {
  weft_output rows, w, b;
};

static weft_status* three_steps(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, 3));
  return NULL;
}

static weft_status* lstm_step(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  struct lstm* L = user;
  weft_output x_t = wt_apply2(g, "Gather", NULL, L->rows, v[0]);
  weft_op_builder* b = weft_op_begin(g, "Concat", NULL);
  weft_output pair[2] = {x_t, v[1]};
  weft_op_add_input_list(b, pair, 2);
  weft_op_set_attr_int(b, "axis", 1);
  weft_output xh = gt_finish(b);
  weft_output gates = wt_apply2(g, "BiasAdd", NULL,
                                wt_apply2(g, "MatMul", NULL, xh, L->w), L->b);
  b = weft_op_begin(g, "Split", NULL);
  weft_op_add_input(b, gates);
  weft_op_set_attr_int(b, "axis", 1);
  weft_op_set_attr_int(b, "num_split", 4);
  weft_output s = gt_finish(b);
  weft_output i = wt_apply1(g, "Sigmoid", NULL, (weft_output){s.node, 0});
  weft_output f = wt_apply1(g, "Sigmoid", NULL, (weft_output){s.node, 1});
  weft_output u = wt_apply1(g, "Tanh", NULL, (weft_output){s.node, 2});
  weft_output o = wt_apply1(g, "Sigmoid", NULL, (weft_output){s.node, 3});
  next[2] = wt_apply2(g, "Add", NULL, wt_apply2(g, "Mul", NULL, f, v[2]),
                      wt_apply2(g, "Mul", NULL, i, u));
  next[1] = wt_apply2(g, "Mul", NULL, o, wt_apply1(g, "Tanh", NULL, next[2]));
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  return NULL;
}

static weft_output build_lstm(weft_graph* g, const weft_output* xs,
                              int32_t n, void* arg) {
  (void)n;
  (void)arg;
  struct lstm L = {xs[0], xs[1], xs[2]};
  weft_output init[3] = {i32(g, 0), xs[3], xs[4]};
  weft_output out[3];
  WT_OK(weft_while_loop(g, three_steps, lstm_step, &L, init, 3, NULL, out));
  return out[1];
}

Test(control_gradients, lstm_cell_over_a_sequence) {
  double rows[12], w[60], b[12], h0[6], c0[6];
  gt_fill_distinct(rows, 12, 4);
  gt_fill_distinct(w, 60, 5);
  gt_fill_distinct(b, 12, 6);
  gt_fill_distinct(h0, 6, 7);
  gt_fill_distinct(c0, 6, 8);
  gc_input xs[5] = {{WEFT_FLOAT64, WT_DIMS(3, 2, 2), 3, rows, 0},
                    {WEFT_FLOAT64, WT_DIMS(5, 12), 2, w, 0},
                    {WEFT_FLOAT64, WT_DIMS(12), 1, b, 0},
                    {WEFT_FLOAT64, WT_DIMS(2, 3), 2, h0, 0},
                    {WEFT_FLOAT64, WT_DIMS(2, 3), 2, c0, 0}};
  gc_check_f64("lstm over 3 steps", build_lstm, NULL, xs, 5, 0);
}

/* ---- a weight used only inside the loop, initial state independent of
 * every x (the case where only the back edge carries the dependence) --- */

static weft_output build_weight_only(weft_graph* g, const weft_output* xs,
                                     int32_t n, void* arg) {
  (void)n;
  (void)arg;
  struct rnn R = {xs[0], xs[1]};
  double h[6] = {0.3, -0.2, 0.5, 0.1, 0.4, -0.6};
  weft_output init[2] = {i32(g, 0),
                         wt_const(g, NULL, wt_tensor(WEFT_FLOAT64,
                                                     WT_SHAPE(2, 3), h))};
  weft_output out[2];
  WT_OK(weft_while_loop(g, five_steps, rnn_step, &R, init, 2, NULL, out));
  return out[1];
}

Test(control_gradients, weights_reached_only_through_the_back_edge) {
  double w[9], u[3];
  gt_fill_distinct(w, 9, 2);
  gt_fill_distinct(u, 3, 3);
  for (int k = 0; k < 9; ++k) w[k] *= 0.5;
  gc_input xs[2] = {{WEFT_FLOAT64, WT_DIMS(3, 3), 2, w, 0},
                    {WEFT_FLOAT64, WT_DIMS(3), 1, u, 0}};
  gc_check_f64("rnn, weights only inside", build_weight_only, NULL, xs, 2, 0);
}

/* ---- varying sequence lengths: steps at or past a sequence's length keep
 * its h and c (a `lengths` feed, as padded batches need) ---------------- */

struct masked_lstm {
  struct lstm cell;
  weft_output lengths; /* int32 [batch] */
};

static weft_status* masked_step(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* next) {
  struct masked_lstm* M = user;
  weft_status* st = lstm_step(g, &M->cell, v, n, next);
  if (st) return st;
  weft_output live = wt_apply2(g, "Less", NULL, v[0], M->lengths);
  weft_op_builder* b = weft_op_begin(g, "ExpandDims", NULL);
  weft_op_add_input(b, live);
  weft_op_set_attr_int(b, "axis", 1);
  weft_output mask = gt_finish(b);
  weft_output in[3];
  for (int k = 1; k <= 2; ++k) {
    b = weft_op_begin(g, "Select", NULL);
    in[0] = mask;
    in[1] = next[k];
    in[2] = v[k];
    for (int j = 0; j < 3; ++j) weft_op_add_input(b, in[j]);
    next[k] = gt_finish(b);
  }
  return NULL;
}

static weft_status* four_steps(weft_graph* g, void* user,
                               const weft_output* v, int32_t n,
                               weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, 4));
  return NULL;
}

/* rows [4, 2, 2]; lengths {2, 4}: the first sequence ends after 2 steps. */
static weft_output build_masked(weft_graph* g, const weft_output* xs,
                                int32_t n, void* arg) {
  (void)n;
  weft_output lengths = *(const weft_output*)arg;
  struct masked_lstm M = {{xs[0], xs[1], xs[2]}, lengths};
  weft_output init[3] = {i32(g, 0), xs[3], xs[4]};
  weft_output out[3];
  WT_OK(weft_while_loop(g, four_steps, masked_step, &M, init, 3, NULL, out));
  return out[1];
}

static weft_output build_masked_fixed(weft_graph* g, const weft_output* xs,
                                      int32_t n, void* arg) {
  (void)arg;
  const int32_t lengths[2] = {2, 4};
  weft_output len =
      wt_const(g, NULL, wt_tensor(WEFT_INT32, WT_SHAPE(2), lengths));
  return build_masked(g, xs, n, &len);
}

Test(control_gradients, varying_sequence_lengths) {
  double rows[16], w[60], b[12], h0[6], c0[6];
  gt_fill_distinct(rows, 16, 9);
  gt_fill_distinct(w, 60, 5);
  gt_fill_distinct(b, 12, 6);
  gt_fill_distinct(h0, 6, 7);
  gt_fill_distinct(c0, 6, 8);
  const int32_t lengths[2] = {2, 4};

  /* Built by hand: the output for sequence 0 must not depend on its padded
   * steps 2 and 3, and its gradient there must be exactly zero. */
  weft_graph* g = wt_graph_new();
  weft_output xs[5] = {
      wt_placeholder(g, "rows", WEFT_FLOAT64, WT_SHAPE(4, 2, 2)),
      wt_placeholder(g, "w", WEFT_FLOAT64, WT_SHAPE(5, 12)),
      wt_placeholder(g, "b", WEFT_FLOAT64, WT_SHAPE(12)),
      wt_placeholder(g, "h0", WEFT_FLOAT64, WT_SHAPE(2, 3)),
      wt_placeholder(g, "c0", WEFT_FLOAT64, WT_SHAPE(2, 3))};
  weft_output len = wt_const(g, "lengths",
                             wt_tensor(WEFT_INT32, WT_SHAPE(2), lengths));
  weft_output y = build_masked(g, xs, 5, &len);
  weft_output drows;
  WT_OK(weft_gradients(g, &y, 1, xs, 1, NULL, &drows));
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* v[5] = {wt_tensor(WEFT_FLOAT64, WT_SHAPE(4, 2, 2), rows),
                       wt_tensor(WEFT_FLOAT64, WT_SHAPE(5, 12), w),
                       wt_tensor(WEFT_FLOAT64, WT_SHAPE(12), b),
                       wt_tensor(WEFT_FLOAT64, WT_SHAPE(2, 3), h0),
                       wt_tensor(WEFT_FLOAT64, WT_SHAPE(2, 3), c0)};
  weft_tensor* before = wt_run1(s, xs, v, 5, y);
  weft_tensor* grad = wt_run1(s, xs, v, 5, drows);
  /* Garbage in sequence 0's padding: steps 2 and 3, batch row 0. */
  double* r = weft_tensor_data(v[0]);
  for (int t = 2; t < 4; ++t)
    for (int k = 0; k < 2; ++k) r[(t * 2 + 0) * 2 + k] += 100.0 * (t + k + 1);
  weft_tensor* after = wt_run1(s, xs, v, 5, y);
  const double* hb = weft_tensor_data(before);
  const double* ha = weft_tensor_data(after);
  for (int k = 0; k < 3; ++k)
    cr_expect_eq(ha[k], hb[k], "sequence 0, unit %d: %g became %g", k, hb[k],
                 ha[k]);
  /* Sequence 1 is 4 steps long: its step 3 counts. */
  for (int k = 0; k < 2; ++k) r[(3 * 2 + 1) * 2 + k] += 1.0;
  weft_tensor* moved = wt_run1(s, xs, v, 5, y);
  const double* hm = weft_tensor_data(moved);
  int changed = 0;
  for (int k = 3; k < 6; ++k) changed |= hm[k] != ha[k];
  cr_expect(changed, "sequence 1's last step did not change its output");
  weft_tensor_destroy(moved);
  const double* d = weft_tensor_data(grad);
  for (int t = 0; t < 4; ++t)
    for (int k = 0; k < 2; ++k) {
      double g0 = d[(t * 2 + 0) * 2 + k];
      if (t >= 2)
        cr_expect_eq(g0, 0.0, "d/d rows[%d][0][%d] = %g past the length", t,
                     k, g0);
      else
        cr_expect_neq(g0, 0.0, "d/d rows[%d][0][%d] within the length", t, k);
    }
  for (int i = 0; i < 5; ++i) weft_tensor_destroy(v[i]);
  weft_tensor_destroy(before);
  weft_tensor_destroy(after);
  weft_tensor_destroy(grad);
  weft_session_destroy(s);
  weft_graph_destroy(g);

  /* And the whole masked loop against central differences. */
  gc_input in[5] = {{WEFT_FLOAT64, WT_DIMS(4, 2, 2), 3, rows, 0},
                    {WEFT_FLOAT64, WT_DIMS(5, 12), 2, w, 0},
                    {WEFT_FLOAT64, WT_DIMS(12), 1, b, 0},
                    {WEFT_FLOAT64, WT_DIMS(2, 3), 2, h0, 0},
                    {WEFT_FLOAT64, WT_DIMS(2, 3), 2, c0, 0}};
  gc_check_f64("lstm with lengths {2, 4}", build_masked_fixed, NULL, in, 5,
               0);
}
