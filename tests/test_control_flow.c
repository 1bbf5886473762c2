/* Control flow inside the graph: weft_cond and weft_while_loop (and the
 * primitives they are made of) running in one session run.  Expected
 * values are worked out by hand in the comments. */
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_output const_i32(weft_graph* g, const char* name, int32_t v) {
  weft_tensor* t = wt_tensor(WEFT_INT32, NULL, 0, &v);
  return wt_const(g, name, t);
}

static weft_output const_f32(weft_graph* g, const char* name, float v) {
  return wt_const(g, name, wt_scalar_f32(v));
}

static int32_t fetch_i32(weft_session* s, const weft_output* feeds,
                         weft_tensor* const* values, int32_t n,
                         weft_output out) {
  weft_tensor* t = wt_run1(s, feeds, values, n, out);
  cr_assert_eq(weft_tensor_dtype(t), WEFT_INT32);
  int32_t v = *(const int32_t*)weft_tensor_data(t);
  weft_tensor_destroy(t);
  return v;
}

static float fetch_f32(weft_session* s, const weft_output* feeds,
                       weft_tensor* const* values, int32_t n,
                       weft_output out) {
  weft_tensor* t = wt_run1(s, feeds, values, n, out);
  cr_assert_eq(weft_tensor_dtype(t), WEFT_FLOAT32);
  float v = *(const float*)weft_tensor_data(t);
  weft_tensor_destroy(t);
  return v;
}

static weft_tensor* bool_tensor(int value) {
  uint8_t b = (uint8_t)value;
  return wt_tensor(WEFT_BOOL, NULL, 0, &b);
}

static weft_tensor* i32_tensor(int32_t value) {
  return wt_tensor(WEFT_INT32, NULL, 0, &value);
}

/* ---- while: i < limit; (i, s) = (i + 1, s + i) --------------------------- */

struct sum_loop {
  weft_output limit;
};

static weft_status* sum_cond(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* pred) {
  (void)n;
  struct sum_loop* L = user;
  *pred = wt_apply2(g, "Less", NULL, v[0], L->limit);
  return NULL;
}

static weft_status* sum_body(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  /* A constant made inside the body belongs to the loop. */
  weft_output one = const_i32(g, NULL, 1);
  next[0] = wt_apply2(g, "Add", NULL, v[0], one);
  next[1] = wt_apply2(g, "Add", NULL, v[1], v[0]);
  return NULL;
}

static void build_sum(weft_graph* g, weft_output limit, weft_output* out) {
  struct sum_loop L = {limit};
  weft_output init[2] = {const_i32(g, "i0", 0), const_i32(g, "s0", 0)};
  WT_OK(weft_while_loop(g, sum_cond, sum_body, &L, init, 2, NULL, out));
}

Test(control_flow, while_loop_sums_below_a_fed_limit) {
  weft_graph* g = wt_graph_new();
  weft_output limit = wt_placeholder(g, "limit", WEFT_INT32, NULL, 0);
  weft_output out[2];
  build_sum(g, limit, out);
  weft_session* s = wt_session_new(g, NULL);
  /* sum of 0..9 = 45; of 0..99 = 4950; no iteration at all: 0. */
  const int32_t limits[] = {10, 100, 0, 1};
  const int32_t sums[] = {45, 4950, 0, 0};
  for (int k = 0; k < 4; ++k) {
    weft_tensor* v = i32_tensor(limits[k]);
    cr_expect_eq(fetch_i32(s, &limit, &v, 1, out[1]), sums[k],
                 "limit %d", limits[k]);
    cr_expect_eq(fetch_i32(s, &limit, &v, 1, out[0]), limits[k]);
    weft_tensor_destroy(v);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(control_flow, parallel_iterations_one_and_many_agree) {
  weft_graph* g = wt_graph_new();
  weft_output limit = const_i32(g, "limit", 300);
  struct sum_loop L = {limit};
  weft_output init[2] = {const_i32(g, "i0", 0), const_i32(g, "s0", 0)};
  weft_output a[2], b[2];
  weft_while_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.parallel_iterations = 1;
  WT_OK(weft_while_loop(g, sum_cond, sum_body, &L, init, 2, &o, a));
  o.parallel_iterations = 32;
  WT_OK(weft_while_loop(g, sum_cond, sum_body, &L, init, 2, &o, b));
  weft_session_options so;
  weft_session_options_init(&so);
  so.inter_op_threads = 2;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &so, &s));
  /* 0 + 1 + ... + 299 = 44850 */
  for (int rep = 0; rep < 20; ++rep) {
    cr_expect_eq(fetch_i32(s, NULL, NULL, 0, a[1]), 44850);
    cr_expect_eq(fetch_i32(s, NULL, NULL, 0, b[1]), 44850);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- cond ------------------------------------------------------------------ */

struct branch_args {
  weft_output x;
};

static weft_status* times_two(weft_graph* g, void* user, weft_output* out,
                              int32_t n) {
  (void)n;
  struct branch_args* a = user;
  out[0] = wt_apply2(g, "Mul", NULL, a->x, const_f32(g, NULL, 2));
  return NULL;
}

static weft_status* plus_hundred(weft_graph* g, void* user, weft_output* out,
                                 int32_t n) {
  (void)n;
  struct branch_args* a = user;
  out[0] = wt_apply2(g, "Add", NULL, a->x, const_f32(g, NULL, 100));
  return NULL;
}

Test(control_flow, cond_takes_one_branch_each_way) {
  weft_graph* g = wt_graph_new();
  weft_output p = wt_placeholder(g, "p", WEFT_BOOL, NULL, 0);
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, NULL, 0);
  struct branch_args a = {x};
  weft_output y;
  WT_OK(weft_cond(g, "c", p, times_two, plus_hundred, &a, 1, &y));
  weft_session* s = wt_session_new(g, NULL);
  weft_output feeds[2] = {p, x};
  weft_tensor* v[2] = {bool_tensor(1), wt_scalar_f32(3)};
  cr_expect_eq(fetch_f32(s, feeds, v, 2, y), 6.0f);
  weft_tensor_destroy(v[0]);
  v[0] = bool_tensor(0);
  cr_expect_eq(fetch_f32(s, feeds, v, 2, y), 103.0f);
  weft_tensor_destroy(v[0]);
  weft_tensor_destroy(v[1]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* The untaken branch's side effect never happens. */
struct bump_args {
  weft_output var;
  weft_output x;
};

static weft_status* bump_branch(weft_graph* g, void* user, weft_output* out,
                                int32_t n) {
  (void)n;
  struct bump_args* a = user;
  out[0] = wt_apply2(g, "AssignAdd", NULL, a->var, const_f32(g, NULL, 1));
  return NULL;
}

static weft_status* read_branch(weft_graph* g, void* user, weft_output* out,
                                int32_t n) {
  (void)g;
  (void)n;
  struct bump_args* a = user;
  out[0] = a->x;
  return NULL;
}

Test(control_flow, untaken_branch_side_effects_do_not_run) {
  weft_graph* g = wt_graph_new();
  weft_output var;
  weft_node* init;
  WT_OK(weft_graph_variable(g, "v", const_f32(g, "zero", 0), &var, &init));
  weft_output p = wt_placeholder(g, "p", WEFT_BOOL, NULL, 0);
  weft_output x = const_f32(g, "x", -5);
  struct bump_args a = {var, x};
  weft_output y;
  WT_OK(weft_cond(g, NULL, p, bump_branch, read_branch, &a, 1, &y));
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, &init, 1);
  weft_tensor* no = bool_tensor(0);
  weft_tensor* yes = bool_tensor(1);
  for (int k = 0; k < 3; ++k)
    cr_expect_eq(fetch_f32(s, &p, &no, 1, y), -5.0f);
  cr_expect_eq(fetch_f32(s, NULL, NULL, 0, var), 0.0f,
               "the else branch ran the then branch's AssignAdd");
  cr_expect_eq(fetch_f32(s, &p, &yes, 1, y), 1.0f);
  cr_expect_eq(fetch_f32(s, &p, &yes, 1, y), 2.0f);
  cr_expect_eq(fetch_f32(s, NULL, NULL, 0, var), 2.0f);
  weft_tensor_destroy(no);
  weft_tensor_destroy(yes);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- nesting ----------------------------------------------------------------- */

/* for i in 0..n-1: for j in 0..i-1: total += 1   =>  total = n(n-1)/2 */
struct nested {
  weft_output n;
};

static weft_status* inner_cond(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  /* v = (j, total, i): j < i */
  *pred = wt_apply2(g, "Less", NULL, v[0], v[2]);
  return NULL;
}

static weft_status* inner_body(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  weft_output one = const_i32(g, NULL, 1);
  next[0] = wt_apply2(g, "Add", NULL, v[0], one);
  next[1] = wt_apply2(g, "Add", NULL, v[1], one);
  next[2] = v[2];
  return NULL;
}

static weft_status* outer_cond(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* pred) {
  (void)n;
  struct nested* N = user;
  *pred = wt_apply2(g, "Less", NULL, v[0], N->n);
  return NULL;
}

static weft_status* outer_body(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  /* The inner loop starts j at 0 (a constant from inside the outer body)
   * and reads i, the outer loop's variable. */
  weft_output init[3] = {const_i32(g, NULL, 0), v[1], v[0]};
  weft_output out[3];
  weft_status* st =
      weft_while_loop(g, inner_cond, inner_body, NULL, init, 3, NULL, out);
  if (st) return st;
  next[0] = wt_apply2(g, "Add", NULL, v[0], const_i32(g, NULL, 1));
  next[1] = out[1];
  return NULL;
}

Test(control_flow, nested_loops_inner_trip_count_from_outer) {
  weft_graph* g = wt_graph_new();
  weft_output n = wt_placeholder(g, "n", WEFT_INT32, NULL, 0);
  struct nested N = {n};
  weft_output init[2] = {const_i32(g, "i0", 0), const_i32(g, "t0", 0)};
  weft_output out[2];
  WT_OK(weft_while_loop(g, outer_cond, outer_body, &N, init, 2, NULL, out));
  weft_session* s = wt_session_new(g, NULL);
  const int32_t ns[] = {0, 1, 4, 10, 30};
  for (int k = 0; k < 5; ++k) {
    weft_tensor* v = i32_tensor(ns[k]);
    cr_expect_eq(fetch_i32(s, &n, &v, 1, out[1]), ns[k] * (ns[k] - 1) / 2,
                 "n = %d", ns[k]);
    weft_tensor_destroy(v);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* for i in 0..5: s += (i < 3 ? i : 10)   =>  0+1+2+10+10+10 = 33 */
struct small_or_ten {
  weft_output i;
};

static weft_status* take_i(weft_graph* g, void* user, weft_output* out,
                           int32_t n) {
  (void)g;
  (void)n;
  out[0] = ((struct small_or_ten*)user)->i;
  return NULL;
}

static weft_status* take_ten(weft_graph* g, void* user, weft_output* out,
                             int32_t n) {
  (void)user;
  (void)n;
  out[0] = const_i32(g, NULL, 10);
  return NULL;
}

static weft_status* six_cond(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, v[0], const_i32(g, NULL, 6));
  return NULL;
}

static weft_status* cond_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  struct small_or_ten a = {v[0]};
  weft_output small = wt_apply2(g, "Less", NULL, v[0], const_i32(g, NULL, 3));
  weft_output term;
  weft_status* st = weft_cond(g, NULL, small, take_i, take_ten, &a, 1, &term);
  if (st) return st;
  next[0] = wt_apply2(g, "Add", NULL, v[0], const_i32(g, NULL, 1));
  next[1] = wt_apply2(g, "Add", NULL, v[1], term);
  return NULL;
}

Test(control_flow, cond_inside_while) {
  weft_graph* g = wt_graph_new();
  weft_output init[2] = {const_i32(g, "i0", 0), const_i32(g, "s0", 0)};
  weft_output out[2];
  WT_OK(weft_while_loop(g, six_cond, cond_body, NULL, init, 2, NULL, out));
  weft_session* s = wt_session_new(g, NULL);
  cr_expect_eq(fetch_i32(s, NULL, NULL, 0, out[1]), 33);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* cond(p, sum of 0..limit-1 by a loop, -1): the loop in the untaken branch
 * is dead through its whole frame. */
struct loop_branch {
  weft_output limit;
};

static weft_status* loop_branch(weft_graph* g, void* user, weft_output* out,
                                int32_t n) {
  (void)n;
  struct loop_branch* a = user;
  weft_output r[2];
  struct sum_loop L = {a->limit};
  weft_output init[2] = {const_i32(g, NULL, 0), const_i32(g, NULL, 0)};
  weft_status* st = weft_while_loop(g, sum_cond, sum_body, &L, init, 2, NULL,
                                    r);
  out[0] = r[1];
  return st;
}

static weft_status* minus_one(weft_graph* g, void* user, weft_output* out,
                              int32_t n) {
  (void)user;
  (void)n;
  out[0] = const_i32(g, NULL, -1);
  return NULL;
}

Test(control_flow, while_inside_cond_either_way) {
  weft_graph* g = wt_graph_new();
  weft_output p = wt_placeholder(g, "p", WEFT_BOOL, NULL, 0);
  struct loop_branch a = {const_i32(g, "limit", 5)};
  weft_output y;
  WT_OK(weft_cond(g, NULL, p, loop_branch, minus_one, &a, 1, &y));
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* yes = bool_tensor(1);
  weft_tensor* no = bool_tensor(0);
  cr_expect_eq(fetch_i32(s, &p, &yes, 1, y), 10); /* 0+1+2+3+4 */
  cr_expect_eq(fetch_i32(s, &p, &no, 1, y), -1);
  cr_expect_eq(fetch_i32(s, &p, &yes, 1, y), 10);
  weft_tensor_destroy(yes);
  weft_tensor_destroy(no);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- options ------------------------------------------------------------------ */

static weft_status* always(weft_graph* g, void* user, const weft_output* v,
                           int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  (void)v;
  weft_tensor* t = bool_tensor(1);
  *pred = wt_const(g, NULL, t);
  return NULL;
}

static weft_status* count_up(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  next[0] = wt_apply2(g, "Add", NULL, v[0], const_i32(g, NULL, 1));
  return NULL;
}

Test(control_flow, maximum_iterations_stops_an_endless_loop) {
  weft_graph* g = wt_graph_new();
  weft_output i0 = const_i32(g, "i0", 100);
  weft_while_options o = {.struct_size = sizeof o, .maximum_iterations = 7};
  weft_output out;
  WT_OK(weft_while_loop(g, always, count_up, NULL, &i0, 1, &o, &out));
  weft_session* s = wt_session_new(g, NULL);
  cr_expect_eq(fetch_i32(s, NULL, NULL, 0, out), 107);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* x doubles in length (Concat with itself) until it has 8 elements: its
 * shape changes between iterations, so it needs an invariant. */
static weft_status* shorter_than_8(weft_graph* g, void* user,
                                   const weft_output* v, int32_t n,
                                   weft_output* pred) {
  (void)user;
  (void)n;
  weft_output size = wt_apply1(g, "Size", NULL, v[0]);
  *pred = wt_apply2(g, "Less", NULL, size, const_i32(g, NULL, 8));
  return NULL;
}

static weft_status* doubled(weft_graph* g, void* user, const weft_output* v,
                            int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  weft_op_builder* b = weft_op_begin(g, "Concat", NULL);
  weft_output parts[2] = {v[0], v[0]};
  weft_op_add_input_list(b, parts, 2);
  weft_op_set_attr_int(b, "axis", 0);
  weft_node* c = NULL;
  weft_status* st = weft_op_finish(b, &c);
  next[0] = (weft_output){c, 0};
  return st;
}

Test(control_flow, shape_invariants_let_a_variable_grow) {
  weft_graph* g = wt_graph_new();
  float one[1] = {1.5f};
  weft_output start = wt_const_f32(g, "start", WT_SHAPE(1), one);
  weft_output out;
  /* Without an invariant the body's [2] cannot go round as a [1]. */
  WT_EXPECT_ERROR(weft_while_loop(g, shorter_than_8, doubled, NULL, &start, 1,
                                  NULL, &out),
                  WEFT_INVALID_ARGUMENT, "shape invariant", "body");
  int64_t any[1] = {-1};
  weft_shape inv = {1, any};
  weft_while_options o = {.struct_size = sizeof o, .shape_invariants = &inv};
  WT_OK(weft_while_loop(g, shorter_than_8, doubled, NULL, &start, 1, &o,
                        &out));
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* t = wt_run1(s, NULL, NULL, 0, out);
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(8));
  for (int k = 0; k < 8; ++k)
    cr_expect_eq(((const float*)weft_tensor_data(t))[k], 1.5f);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- errors ------------------------------------------------------------------- */

static weft_status* failing_body(weft_graph* g, void* user,
                                 const weft_output* v, int32_t n,
                                 weft_output* next) {
  (void)g;
  (void)user;
  (void)v;
  (void)n;
  (void)next;
  return weft_status_create(WEFT_NOT_FOUND, "boom: no such table");
}

static weft_status* wrong_dtype_body(weft_graph* g, void* user,
                                     const weft_output* v, int32_t n,
                                     weft_output* next) {
  (void)user;
  (void)n;
  next[0] = const_f32(g, NULL, 1.0f);  /* the variable is int32 */
  (void)v;
  return NULL;
}

static weft_status* no_output_body(weft_graph* g, void* user,
                                   const weft_output* v, int32_t n,
                                   weft_output* next) {
  (void)g;
  (void)user;
  (void)v;
  (void)n;
  (void)next;
  return NULL;
}

static weft_status* float_pred(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  (void)v;
  *pred = const_f32(g, NULL, 1.0f);
  return NULL;
}

Test(control_flow, callback_errors_come_back_from_the_builder) {
  weft_graph* g = wt_graph_new();
  weft_output i0 = const_i32(g, "i0", 0);
  weft_output out;
  weft_while_options o = {.struct_size = sizeof o, .name = "scan"};
  WT_EXPECT_ERROR(
      weft_while_loop(g, six_cond, failing_body, NULL, &i0, 1, &o, &out),
      WEFT_NOT_FOUND, "boom: no such table", "while loop 'scan'", "body");
  WT_EXPECT_ERROR(
      weft_while_loop(g, six_cond, wrong_dtype_body, NULL, &i0, 1, NULL, &out),
      WEFT_INVALID_ARGUMENT, "loop variable 0", "float32", "int32");
  WT_EXPECT_ERROR(
      weft_while_loop(g, six_cond, no_output_body, NULL, &i0, 1, NULL, &out),
      WEFT_INVALID_ARGUMENT, "did not set loop variable 0");
  WT_EXPECT_ERROR(
      weft_while_loop(g, float_pred, count_up, NULL, &i0, 1, NULL, &out),
      WEFT_INVALID_ARGUMENT, "predicate must be bool", "condition");
  WT_EXPECT_ERROR(weft_while_loop(g, six_cond, count_up, NULL, &i0, 0, NULL,
                                  &out),
                  WEFT_INVALID_ARGUMENT, "at least one loop variable");
  weft_output p = const_i32(g, "not_bool", 1);
  struct branch_args a = {const_f32(g, "x", 1)};
  weft_output y;
  WT_EXPECT_ERROR(weft_cond(g, NULL, p, times_two, plus_hundred, &a, 1, &y),
                  WEFT_INVALID_ARGUMENT, "predicate must be bool");
  /* The graph is still usable: a good loop after the failed ones runs. */
  weft_output good;
  WT_OK(weft_while_loop(g, six_cond, count_up, NULL, &i0, 1, NULL, &good));
  weft_session* s = wt_session_new(g, NULL);
  cr_expect_eq(fetch_i32(s, NULL, NULL, 0, good), 6);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* s = 12 / (3 - i): iteration 3 divides by zero. */
static weft_status* divide_body(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* next) {
  (void)user;
  (void)n;
  weft_output d = wt_apply2(g, "Sub", NULL, const_i32(g, NULL, 3), v[0]);
  weft_op_builder* b = weft_op_begin(g, "Div", "divide");
  weft_op_add_input(b, const_i32(g, NULL, 12));
  weft_op_add_input(b, d);
  weft_node* q = NULL;
  weft_status* st = weft_op_finish(b, &q);
  if (st) return st;
  next[0] = wt_apply2(g, "Add", NULL, v[0], const_i32(g, NULL, 1));
  next[1] = wt_apply2(g, "Add", NULL, v[1], (weft_output){q, 0});
  return NULL;
}

Test(control_flow, an_error_inside_a_loop_names_node_frame_and_iteration) {
  weft_graph* g = wt_graph_new();
  weft_output init[2] = {const_i32(g, "i0", 0), const_i32(g, "s0", 0)};
  weft_output out[2];
  weft_while_options o = {.struct_size = sizeof o, .name = "divider",
                          .parallel_iterations = 1};
  WT_OK(weft_while_loop(g, six_cond, divide_body, NULL, init, 2, &o, out));
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* t = NULL;
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &out[1], 1, NULL, 0, &t),
                  WEFT_INVALID_ARGUMENT, "divide", "frame 'divider'",
                  "iteration 3");
  /* The session is fine afterwards: a loop that stops before the zero. */
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

struct bump_loop {
  weft_output var;
};

static weft_status* bump_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  struct bump_loop* L = user;
  weft_output bumped =
      wt_apply2(g, "AssignAdd", NULL, L->var, const_f32(g, NULL, 1));
  weft_op_builder* b = weft_op_begin(g, "Add", NULL);
  weft_op_add_input(b, v[0]);
  weft_op_add_input(b, const_i32(g, NULL, 1));
  weft_op_add_control_input(b, bumped.node);
  weft_node* next_i = NULL;
  weft_status* st = weft_op_finish(b, &next_i);
  next[0] = (weft_output){next_i, 0};
  return st;
}

Test(control_flow, assign_add_in_a_body_runs_once_per_iteration) {
  weft_graph* g = wt_graph_new();
  weft_output var;
  weft_node* init;
  WT_OK(weft_graph_variable(g, "v", const_f32(g, "zero", 0), &var, &init));
  struct bump_loop L = {var};
  weft_output i0 = const_i32(g, "i0", 0);
  weft_output out;
  WT_OK(weft_while_loop(g, six_cond, bump_body, &L, &i0, 1, NULL, &out));
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, &init, 1);
  cr_expect_eq(fetch_i32(s, NULL, NULL, 0, out), 6);
  cr_expect_eq(fetch_f32(s, NULL, NULL, 0, var), 6.0f);
  cr_expect_eq(fetch_i32(s, NULL, NULL, 0, out), 6);
  cr_expect_eq(fetch_f32(s, NULL, NULL, 0, var), 12.0f);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- the primitives by hand, and graphs the planner refuses -------------- */

static weft_node* op1(weft_graph* g, const char* op, const char* name,
                      weft_output x, const char* frame, int constant) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, x);
  if (frame != NULL) {
    weft_op_set_attr_string(b, "frame_name", frame);
    weft_op_set_attr_bool(b, "is_constant", constant);
  }
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  return n;
}

Test(control_flow, ill_formed_graphs_are_refused_when_planned) {
  weft_graph* g = wt_graph_new();
  weft_output c = const_f32(g, "c", 2);
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* t = NULL;
  /* An Exit with no loop around it. */
  weft_node* stray = op1(g, "Exit", "stray_exit", c, NULL, 0);
  weft_output o = {stray, 0};
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &o, 1, NULL, 0, &t),
                  WEFT_INVALID_ARGUMENT, "stray_exit", "not inside a loop");
  /* A loop variable's Enter read by anything but its Merge. */
  weft_node* e = op1(g, "Enter", "var_enter", c, "f", 0);
  weft_output twice = wt_apply2(g, "Add", "twice", (weft_output){e, 0},
                                (weft_output){e, 0});
  weft_node* x = op1(g, "Exit", "x", twice, NULL, 0);
  o = (weft_output){x, 0};
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &o, 1, NULL, 0, &t),
                  WEFT_INVALID_ARGUMENT, "twice", "var_enter", "is_constant");
  /* A value of a frame read from outside it without an Exit. */
  weft_node* ce = op1(g, "Enter", "inv_enter", c, "h", 1);
  weft_output inside = wt_apply2(g, "Mul", "inside", (weft_output){ce, 0},
                                 (weft_output){ce, 0});
  weft_output mixed = wt_apply2(g, "Add", "mixed", inside, c);
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &mixed, 1, NULL, 0, &t),
                  WEFT_INVALID_ARGUMENT, "mixed", "frame 'h'", "Enter");
  /* Fetching a value that exists once per iteration. */
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &inside, 1, NULL, 0, &t),
                  WEFT_INVALID_ARGUMENT, "inside", "Exit");
  /* A frame entered with a value computed from its own Exit: the frame
   * cannot finish before all its Enters have run, so this could never
   * run. */
  weft_node* k1 = op1(g, "Enter", "k_first", c, "k", 1);
  weft_output ky = wt_apply2(g, "Mul", "k_square", (weft_output){k1, 0},
                             (weft_output){k1, 0});
  weft_node* kx = op1(g, "Exit", "k_exit", ky, NULL, 0);
  weft_node* k2 = op1(g, "Enter", "k_again", (weft_output){kx, 0}, "k", 1);
  weft_output kz = wt_apply2(g, "Add", "k_sum", (weft_output){k2, 0}, ky);
  weft_node* kout = op1(g, "Exit", "k_out", kz, NULL, 0);
  o = (weft_output){kout, 0};
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &o, 1, NULL, 0, &t),
                  WEFT_INVALID_ARGUMENT, "k_again", "frame 'k'", "k_exit");
  /* A back edge naming something that is not a Merge. */
  weft_op_builder* b = weft_op_begin(g, "NextIteration", "bad_next");
  weft_op_add_input(b, c);
  weft_op_set_attr_string(b, "merge", "c");
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT, "bad_next",
                  "not a Merge");
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(control_flow, fetching_a_dead_value_is_an_error) {
  weft_graph* g = wt_graph_new();
  weft_output c = const_f32(g, "c", 2);
  weft_output p = wt_placeholder(g, "p", WEFT_BOOL, NULL, 0);
  weft_output sw = wt_apply2(g, "Switch", "sw", c, p);
  weft_output when_false = {sw.node, 0};
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* yes = bool_tensor(1);
  weft_tensor* t = NULL;
  WT_EXPECT_ERROR(weft_session_run(s, &p, &yes, 1, &when_false, 1, NULL, 0,
                                   &t),
                  WEFT_INVALID_ARGUMENT, "dead", "not taken");
  weft_tensor* no = bool_tensor(0);
  cr_expect_eq(fetch_f32(s, &p, &no, 1, when_false), 2.0f);
  weft_tensor_destroy(yes);
  weft_tensor_destroy(no);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- a long loop -------------------------------------------------------------- */

static long resident_kib(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return -1;
  long pages = 0, resident = 0;
  int ok = fscanf(f, "%ld %ld", &pages, &resident) == 2;
  fclose(f);
  return ok ? resident * 4 : -1;
}

Test(control_flow, a_million_iterations_without_memory_growth,
     .timeout = 120) {
  weft_graph* g = wt_graph_new();
  weft_output limit = wt_placeholder(g, "limit", WEFT_INT32, NULL, 0);
  struct sum_loop L = {limit};
  weft_output i0 = const_i32(g, "i0", 0);
  weft_output out;
  WT_OK(weft_while_loop(g, sum_cond, count_up, &L, &i0, 1, NULL, &out));
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* small = i32_tensor(100000);
  weft_tensor* large = i32_tensor(1000000);
  cr_expect_eq(fetch_i32(s, &limit, &small, 1, out), 100000);
  long before = resident_kib();
  cr_expect_eq(fetch_i32(s, &limit, &large, 1, out), 1000000);
  long after = resident_kib();
  if (before > 0 && after > 0)
    cr_expect_lt(after - before, 4096,
                 "resident memory grew by %ld KiB over 10^6 iterations",
                 after - before);
  weft_tensor_destroy(small);
  weft_tensor_destroy(large);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- a loop across devices -------------------------------------------------- */

static weft_output on(weft_graph* g, const char* op, const char* device,
                      weft_output a, weft_output b) {
  weft_op_builder* bl = weft_op_begin(g, op, NULL);
  weft_op_add_input(bl, a);
  weft_op_add_input(bl, b);
  weft_op_set_device(bl, device);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(bl, &n));
  return (weft_output){n, 0};
}

static weft_status* below_ten(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  *pred = on(g, "Less", "CPU", v[0], const_f32(g, NULL, 10));
  return NULL;
}

/* s += i * i on OpenCL, i += 1 on the CPU: every iteration sends i to
 * OpenCL and the square back. */
static weft_status* squares(weft_graph* g, void* user, const weft_output* v,
                            int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  weft_output sq = on(g, "Mul", "OPENCL", v[0], v[0]);
  next[0] = on(g, "Add", "CPU", v[0], const_f32(g, NULL, 1));
  next[1] = on(g, "Add", "CPU", v[1], sq);
  return NULL;
}

Test(control_flow, a_loop_split_between_opencl_and_the_cpu) {
  WT_OK(weft_plugins_discover());
  const char* why = wt_no_opencl();
  if (why != NULL) WT_SKIP(why);
  weft_graph* g = wt_graph_new();
  weft_output init[2] = {const_f32(g, "i0", 0), const_f32(g, "s0", 0)};
  weft_output out[2];
  weft_while_options o = {.struct_size = sizeof o, .parallel_iterations = 4};
  WT_OK(weft_while_loop(g, below_ten, squares, NULL, init, 2, &o, out));
  weft_session* s = wt_session_new(g, "OPENCL,CPU");
  /* 0 + 1 + 4 + ... + 81 = 285 */
  for (int rep = 0; rep < 3; ++rep)
    cr_expect_eq(fetch_f32(s, NULL, NULL, 0, out[1]), 285.0f);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- run metadata: frames, iterations, parallel_iterations observed ---- */

/* `parent` receives a copy of the parent frame's name: the metadata's
 * strings are borrowed and go with it. */
static void frame_stats(weft_session* s, weft_output fetch, const char* want,
                        int32_t* parallel, int64_t* iterations,
                        int32_t* in_flight, char parent[64]) {
  weft_run_metadata* md = weft_run_metadata_create();
  cr_assert_not_null(md);
  weft_tensor* t = NULL;
  WT_OK(weft_session_run_with_metadata(s, NULL, NULL, 0, &fetch, 1, NULL, 0,
                                       &t, md));
  weft_tensor_destroy(t);
  int found = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_frames(md); ++i) {
    const char* name = NULL;
    const char* up = NULL;
    WT_OK(weft_run_metadata_frame(md, i, &name, &up, parallel, iterations,
                                  in_flight));
    if (strcmp(name, want) == 0) {
      snprintf(parent, 64, "%s", up);
      found = 1;
      break;
    }
  }
  cr_assert(found, "no frame '%s' in:\n%s", want,
            weft_run_metadata_to_string(md));
  /* The loop's nodes say which frame they ran in. */
  int in_frame = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(md); ++i)
    in_frame += strcmp(weft_run_metadata_node_frame(md, i), want) == 0;
  cr_expect_gt(in_frame, 3, "%s", weft_run_metadata_to_string(md));
  cr_expect_not_null(strstr(weft_run_metadata_to_string(md), "loop frames"));
  WT_EXPECT_CODE(weft_run_metadata_frame(md, 99, NULL, NULL, NULL, NULL, NULL),
                 WEFT_OUT_OF_RANGE);
  weft_run_metadata_destroy(md);
}

/* v = v * 0.5 + 1 over 1 MiB vectors, 400 times on OpenCL: each
 * iteration's values are freed once the device's stream has passed them
 * (the run used to keep every one until it ended: 800 MiB here).  The
 * loop condition runs on OpenCL, or on the CPU with the predicate sent to
 * OpenCL for the value's Switch; either way the predicate is read back
 * each iteration, a sync after which what the stream passed is freed. */
static weft_status* below_400(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)n;
  const char* counter_device = user;
  weft_output limit = const_i32(g, NULL, 400);
  *pred = counter_device ? on(g, "Less", counter_device, v[0], limit)
                         : wt_apply2(g, "Less", NULL, v[0], limit);
  return NULL;
}

static weft_status* halve_and_add(weft_graph* g, void* user,
                                  const weft_output* v, int32_t n,
                                  weft_output* next) {
  (void)n;
  const char* counter_device = user;
  weft_output one = const_i32(g, NULL, 1);
  next[0] = counter_device ? on(g, "Add", counter_device, v[0], one)
                           : wt_apply2(g, "Add", NULL, v[0], one);
  next[1] = on(g, "Add", "OPENCL",
               on(g, "Mul", "OPENCL", v[1], const_f32(g, NULL, 0.5f)),
               const_f32(g, NULL, 1));
  return NULL;
}

static long peak_kib(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss : -1;
}

static void long_opencl_loop(const char* counter_device) {
  enum { N = 1 << 18 };
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(N), 1);
  weft_output init[2] = {const_i32(g, "i0", 0), x}, out[2];
  WT_OK(weft_while_loop(g, below_400, halve_and_add, (void*)counter_device,
                        init, 2, NULL, out));
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = counter_device ? "OPENCL,CPU" : "OPENCL";
  o.placement = WEFT_PLACEMENT_STRICT;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &o, &s));
  float* xv = malloc(N * sizeof *xv);
  for (int k = 0; k < N; ++k) xv[k] = (float)(k % 7);
  weft_tensor* v = wt_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, xv);
  long before = peak_kib();
  weft_tensor* t = wt_run1(s, &x, &v, 1, out[1]);
  long after = peak_kib();
  /* v converges to 2: after 400 halvings only rounding is left. */
  const float* r = weft_tensor_data(t);
  cr_expect_float_eq(r[0], 2.0f, 1e-6);
  cr_expect_float_eq(r[N - 1], 2.0f, 1e-6);
#if defined(__SANITIZE_ADDRESS__)
  /* ASan keeps freed memory in quarantine (256 MiB): resident memory says
   * nothing about what the run freed.  The ordinary build checks it. */
  (void)before;
  (void)after;
#else
  if (before > 0 && after > 0)
    cr_expect_lt(after - before, 256 * 1024,
                 "counter on %s: peak resident memory grew by %ld KiB over "
                 "400 iterations of 1 MiB values",
                 counter_device ? counter_device : "OPENCL", after - before);
#endif
  free(xv);
  weft_tensor_destroy(t);
  weft_tensor_destroy(v);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(control_flow, a_long_loop_on_opencl_frees_as_it_goes, .timeout = 240) {
  WT_OK(weft_plugins_discover());
  const char* why = wt_no_opencl();
  if (why != NULL) WT_SKIP(why);
  long_opencl_loop(NULL);
}

Test(control_flow, a_long_loop_with_its_condition_on_the_cpu_frees_too,
     .timeout = 240) {
  WT_OK(weft_plugins_discover());
  const char* why = wt_no_opencl();
  if (why != NULL) WT_SKIP(why);
  long_opencl_loop("CPU");
}

Test(control_flow, run_metadata_counts_iterations_within_parallel_iterations) {
  weft_graph* g = wt_graph_new();
  weft_output limit = const_i32(g, "limit", 200);
  struct sum_loop L = {limit};
  weft_output init[2] = {const_i32(g, "i0", 0), const_i32(g, "s0", 0)};
  weft_output one[2], four[2];
  weft_while_options o = {.struct_size = sizeof o, .name = "serial",
                          .parallel_iterations = 1};
  WT_OK(weft_while_loop(g, sum_cond, sum_body, &L, init, 2, &o, one));
  o.name = "four";
  o.parallel_iterations = 4;
  WT_OK(weft_while_loop(g, sum_cond, sum_body, &L, init, 2, &o, four));
  weft_session_options so;
  weft_session_options_init(&so);
  so.inter_op_threads = 2;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &so, &s));
  for (int rep = 0; rep < 5; ++rep) {
    int32_t parallel = 0, in_flight = 0;
    int64_t iterations = 0;
    char parent[64];
    frame_stats(s, one[1], "serial", &parallel, &iterations, &in_flight,
                parent);
    /* 200 iterations run the body; one more finds the condition false. */
    cr_expect_eq(iterations, 201);
    cr_expect_eq(parallel, 1);
    cr_expect_eq(in_flight, 1);
    cr_expect_str_eq(parent, "");
    frame_stats(s, four[1], "four", &parallel, &iterations, &in_flight,
                parent);
    cr_expect_eq(iterations, 201);
    cr_expect_eq(parallel, 4);
    cr_expect(in_flight >= 1 && in_flight <= 4, "%d iterations at once",
              in_flight);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(control_flow, run_metadata_names_the_parent_of_a_nested_frame) {
  weft_graph* g = wt_graph_new();
  weft_output n = const_i32(g, "n", 5);
  struct nested N = {n};
  weft_output init[2] = {const_i32(g, "i0", 0), const_i32(g, "t0", 0)};
  weft_output out[2];
  weft_while_options o = {.struct_size = sizeof o, .name = "outer"};
  WT_OK(weft_while_loop(g, outer_cond, outer_body, &N, init, 2, &o, out));
  weft_session* s = wt_session_new(g, NULL);
  int32_t parallel = 0, in_flight = 0;
  int64_t iterations = 0;
  char parent[64];
  /* The inner loop is entered once per outer iteration (5 times) and runs
   * i iterations plus a final one each time: 0+1+2+3+4 + 5 = 15; the
   * outer loop's last iteration, whose body is dead, enters it once more
   * with dead values (one dead iteration 0): 16. */
  frame_stats(s, out[1], "while", &parallel, &iterations, &in_flight,
              parent);
  cr_expect_str_eq(parent, "outer");
  cr_expect_eq(iterations, 16, "%lld", (long long)iterations);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- case: x * (k + 1) for branch k of 3; other indexes take the last -- */

struct case_args {
  weft_output x, var;
};

static weft_status* scale_branch(weft_graph* g, void* user, int32_t branch,
                                 weft_output* out, int32_t n) {
  (void)n;
  struct case_args* a = user;
  /* Each branch also bumps the variable by 10^branch, so which branches
   * ran is visible afterwards. */
  float bump = branch == 0 ? 1.0f : branch == 1 ? 10.0f : 100.0f;
  weft_output bumped =
      wt_apply2(g, "AssignAdd", NULL, a->var, const_f32(g, NULL, bump));
  weft_op_builder* b = weft_op_begin(g, "Mul", NULL);
  weft_op_add_input(b, a->x);
  weft_op_add_input(b, const_f32(g, NULL, (float)(branch + 1)));
  weft_op_add_control_input(b, bumped.node);
  weft_node* m = NULL;
  weft_status* st = weft_op_finish(b, &m);
  out[0] = (weft_output){m, 0};
  return st;
}

Test(control_flow, case_runs_only_the_selected_branch) {
  weft_graph* g = wt_graph_new();
  weft_output var;
  weft_node* init;
  WT_OK(weft_graph_variable(g, "ran", const_f32(g, "zero", 0), &var, &init));
  weft_output index = wt_placeholder(g, "index", WEFT_INT32, NULL, 0);
  struct case_args a = {const_f32(g, "x", 5), var};
  weft_output y;
  WT_OK(weft_case(g, "pick", index, 3, scale_branch, &a, 1, &y));
  weft_session* s = wt_session_new(g, NULL);
  wt_run_targets(s, &init, 1);
  const int32_t indexes[] = {0, 1, 2, 7, -1};
  const float want[] = {5, 10, 15, 15, 15};
  const float ran[] = {1, 11, 111, 211, 311};
  for (int k = 0; k < 5; ++k) {
    weft_tensor* v = i32_tensor(indexes[k]);
    cr_expect_eq(fetch_f32(s, &index, &v, 1, y), want[k], "index %d",
                 indexes[k]);
    weft_tensor_destroy(v);
    cr_expect_eq(fetch_f32(s, NULL, NULL, 0, var), ran[k],
                 "after index %d", indexes[k]);
  }
  weft_output f = const_f32(g, "not_int", 1);
  WT_EXPECT_ERROR(weft_case(g, NULL, f, 3, scale_branch, &a, 1, &y),
                  WEFT_INVALID_ARGUMENT, "int32");
  WT_EXPECT_ERROR(weft_case(g, NULL, index, 0, scale_branch, &a, 1, &y),
                  WEFT_INVALID_ARGUMENT, "at least one branch");
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* A Merge whose inputs are all fed has no node to wait for: it fires at
 * once with its first input (found by the c_api fuzzer: it used to fire
 * with no input index, reading out of bounds). */
Test(control_flow, merge_of_fed_values_fires_with_the_first) {
  weft_graph* g = wt_graph_new();
  weft_output a = wt_placeholder(g, "a", WEFT_FLOAT32, WT_DIMS(2), 1);
  weft_output b = wt_placeholder(g, "b", WEFT_FLOAT32, WT_DIMS(2), 1);
  weft_output merged = wt_apply2(g, "Merge", "merged", a, b);
  weft_output index = {merged.node, 1};
  weft_session* s = wt_session_new(g, "CPU");
  const float av[2] = {1, 2}, bv[2] = {3, 4};
  weft_tensor* at = wt_tensor(WEFT_FLOAT32, WT_DIMS(2), 1, av);
  weft_tensor* bt = wt_tensor(WEFT_FLOAT32, WT_DIMS(2), 1, bv);
  const weft_output feeds[2] = {a, b};
  weft_tensor* const values[2] = {at, bt};
  const weft_output fetches[2] = {merged, index};
  weft_tensor* out[2] = {NULL, NULL};
  WT_OK(weft_session_run(s, feeds, values, 2, fetches, 2, NULL, 0, out));
  const float* v = weft_tensor_data(out[0]);
  cr_expect(v[0] == 1 && v[1] == 2, "merged [%g %g]", v[0], v[1]);
  cr_expect_eq(*(const int32_t*)weft_tensor_data(out[1]), 0);
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(out[1]);
  weft_tensor_destroy(at);
  weft_tensor_destroy(bt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}
