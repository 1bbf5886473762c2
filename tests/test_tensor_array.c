/* TensorArrays (weft_tensor_array_*): round trips, loops that read and
 * write them, arrays made inside loops, growing arrays, the errors of the
 * rules in abi/weft/control.h, and gradients against central differences
 * (grad_check.h).  Expected values are computed here in plain C. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "grad_check.h"
#include "test_support.h"

static weft_output i32(weft_graph* g, int32_t v) {
  return wt_const(g, NULL, wt_tensor(WEFT_INT32, NULL, 0, &v));
}

static weft_output f64(weft_graph* g, double v) {
  return wt_const(g, NULL, wt_tensor(WEFT_FLOAT64, NULL, 0, &v));
}

static weft_tensor* run_fetch(weft_graph* g, weft_output feed,
                              weft_tensor* value, weft_output fetch) {
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* t = wt_run1(s, value ? &feed : NULL, value ? &value : NULL,
                           value ? 1 : 0, fetch);
  weft_session_destroy(s);
  return t;
}

/* The status of running `fetch` (nothing fed). */
static weft_status* try_run(weft_graph* g, weft_output fetch) {
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* out = NULL;
  weft_status* st = weft_session_run(s, NULL, NULL, 0, &fetch, 1, NULL, 0,
                                     &out);
  if (st == NULL) weft_tensor_destroy(out);
  weft_session_destroy(s);
  return st;
}

static void expect_run_error(weft_graph* g, weft_output fetch,
                             weft_code code, const char* words) {
  weft_status* st = try_run(g, fetch);
  cr_assert(st != NULL, "the run should fail with '%s'", words);
  cr_expect_eq(weft_status_code(st), code, "code %d: %s",
               weft_status_code(st), weft_status_message(st));
  cr_expect(strstr(weft_status_message(st), words) != NULL,
            "message '%s' should say '%s'", weft_status_message(st), words);
  weft_status_destroy(st);
}

/* ---- round trip without loops ------------------------------------------ */

Test(tensor_array, unstack_read_and_stack_round_trip) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(4, 3), 2);
  weft_tensor_array ta;
  int64_t row[1] = {3};
  weft_shape elem = {1, row};
  WT_OK(weft_tensor_array_create(g, "rows", WEFT_FLOAT32, i32(g, 4), &elem,
                                 0, &ta));
  WT_OK(weft_tensor_array_unstack(g, &ta, x));
  weft_output second, stacked, size;
  WT_OK(weft_tensor_array_read(g, ta, i32(g, 2), &second));
  WT_OK(weft_tensor_array_stack(g, ta, &stacked));
  WT_OK(weft_tensor_array_size(g, ta, &size));
  /* Static shapes come from the element shape. */
  int64_t dims[4];
  int32_t rank = 0;
  WT_OK(weft_output_shape(second, dims, 4, &rank));
  cr_expect_eq(rank, 1);
  cr_expect_eq(dims[0], 3);
  WT_OK(weft_output_shape(stacked, dims, 4, &rank));
  cr_expect_eq(rank, 2);
  cr_expect_eq(dims[1], 3);

  float xv[12];
  for (int i = 0; i < 12; ++i) xv[i] = (float)(i * 0.5 - 2);
  weft_tensor* v = wt_tensor(WEFT_FLOAT32, WT_DIMS(4, 3), 2, xv);
  weft_session* s = wt_session_new(g, NULL);
  weft_output fetch[3] = {second, stacked, size};
  weft_tensor* out[3];
  WT_OK(weft_session_run(s, &x, &v, 1, fetch, 3, NULL, 0, out));
  double want_row[3], want_all[12];
  for (int i = 0; i < 3; ++i) want_row[i] = xv[6 + i];
  for (int i = 0; i < 12; ++i) want_all[i] = xv[i];
  wt_expect_shape(out[0], WEFT_FLOAT32, WT_DIMS(3), 1);
  wt_expect_f32(out[0], want_row, 3, 0, 0);
  wt_expect_shape(out[1], WEFT_FLOAT32, WT_DIMS(4, 3), 2);
  wt_expect_f32(out[1], want_all, 12, 0, 0);
  cr_expect_eq(*(const int32_t*)weft_tensor_data(out[2]), 4);
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(out[i]);
  weft_tensor_destroy(v);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- a loop: out[t] = in[t] * in[t] + t --------------------------------- */

struct squares {
  weft_tensor_array in, out;  /* names; flows come from the vars */
  int32_t n;
};

static weft_status* below(weft_graph* g, void* user, const weft_output* v,
                          int32_t n, weft_output* pred) {
  (void)n;
  struct squares* S = user;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, S->n));
  return NULL;
}

static weft_status* square_step(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* next) {
  (void)n;
  struct squares* S = user;
  weft_tensor_array in = {S->in.name, S->in.flow};
  weft_tensor_array out = {S->out.name, v[1]};
  weft_output x;
  WT_OK(weft_tensor_array_read(g, in, v[0], &x));
  weft_op_builder* b = weft_op_begin(g, "Cast", NULL);
  weft_op_add_input(b, v[0]);
  weft_op_set_attr_dtype(b, "DstT", WEFT_FLOAT32);
  weft_node* cast = NULL;
  WT_OK(weft_op_finish(b, &cast));
  weft_output y = wt_apply2(g, "Add", NULL, wt_apply2(g, "Mul", NULL, x, x),
                            (weft_output){cast, 0});
  weft_status* st = weft_tensor_array_write(g, &out, v[0], y);
  if (st != NULL) return st;
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = out.flow;
  return NULL;
}

Test(tensor_array, loop_reads_one_array_and_writes_another) {
  for (int32_t parallel = 1; parallel <= 8; parallel += 7) {
    weft_graph* g = wt_graph_new();
    const int32_t T = 6;
    weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(T, 2), 2);
    struct squares S = {.n = T};
    WT_OK(weft_tensor_array_create(g, "in", WEFT_FLOAT32, i32(g, T), NULL, 0,
                                   &S.in));
    WT_OK(weft_tensor_array_unstack(g, &S.in, x));
    WT_OK(weft_tensor_array_create(g, "out", WEFT_FLOAT32, i32(g, T), NULL,
                                   0, &S.out));
    weft_output init[2] = {i32(g, 0), S.out.flow}, fin[2];
    weft_while_options o = {sizeof o, "squares", parallel, 0, NULL};
    WT_OK(weft_while_loop(g, below, square_step, &S, init, 2, &o, fin));
    weft_tensor_array done = {S.out.name, fin[1]};
    weft_output stacked;
    WT_OK(weft_tensor_array_stack(g, done, &stacked));
    float xv[12];
    double want[12];
    for (int i = 0; i < 12; ++i) {
      xv[i] = (float)(0.25 * i - 1);
      want[i] = (double)xv[i] * xv[i] + i / 2;
    }
    weft_tensor* v = wt_tensor(WEFT_FLOAT32, WT_DIMS(T, 2), 2, xv);
    weft_tensor* t = run_fetch(g, x, v, stacked);
    wt_expect_shape(t, WEFT_FLOAT32, WT_DIMS(T, 2), 2);
    wt_expect_f32(t, want, 12, 1e-6, 1e-6);
    weft_tensor_destroy(t);
    weft_tensor_destroy(v);
    weft_graph_destroy(g);
  }
}

/* ---- a growing array: size 0, dynamic, written t = 0..n-1 ------------- */

struct grow {
  const char* name;
  int32_t n;
};

static weft_status* grow_cond(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)n;
  struct grow* G = user;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, G->n));
  return NULL;
}

static weft_status* grow_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  struct grow* G = user;
  weft_tensor_array ta = {G->name, v[1]};
  weft_output sq = wt_apply2(g, "Mul", NULL, v[0], v[0]);
  weft_status* st = weft_tensor_array_write(g, &ta, v[0], sq);
  if (st != NULL) return st;
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = ta.flow;
  return NULL;
}

Test(tensor_array, dynamic_size_grows) {
  weft_graph* g = wt_graph_new();
  weft_tensor_array ta;
  WT_OK(weft_tensor_array_create(g, "grow", WEFT_INT32, i32(g, 0), NULL, 1,
                                 &ta));
  struct grow G = {ta.name, 7};
  weft_output init[2] = {i32(g, 0), ta.flow}, fin[2];
  WT_OK(weft_while_loop(g, grow_cond, grow_body, &G, init, 2, NULL, fin));
  weft_tensor_array done = {ta.name, fin[1]};
  weft_output size, stacked;
  WT_OK(weft_tensor_array_size(g, done, &size));
  WT_OK(weft_tensor_array_stack(g, done, &stacked));
  weft_session* s = wt_session_new(g, NULL);
  weft_output fetch[2] = {size, stacked};
  weft_tensor* out[2];
  WT_OK(weft_session_run(s, NULL, NULL, 0, fetch, 2, NULL, 0, out));
  cr_expect_eq(*(const int32_t*)weft_tensor_data(out[0]), 7);
  wt_expect_shape(out[1], WEFT_INT32, WT_DIMS(7), 1);
  const int32_t* got = weft_tensor_data(out[1]);
  for (int32_t i = 0; i < 7; ++i) cr_expect_eq(got[i], i * i);
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(out[1]);
  /* Again: every run has its own arrays. */
  WT_OK(weft_session_run(s, NULL, NULL, 0, fetch, 2, NULL, 0, out));
  cr_expect_eq(*(const int32_t*)weft_tensor_data(out[0]), 7);
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(out[1]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- an array made inside a loop: one per outer iteration -------------- */
/* for i in 0..3: a = TensorArray(i + 1); for j in 0..i: a[j] = i * 10 + j;
 *                total += sum(stack(a))                                     */

struct outer {
  int32_t rounds;
};
struct inner {
  const char* name;
  weft_output i;
};

static weft_status* inner_cond(weft_graph* g, void* user,
                               const weft_output* v, int32_t n,
                               weft_output* pred) {
  (void)n;
  struct inner* I = user;
  *pred = wt_apply2(g, "LessEqual", NULL, v[0], I->i);
  return NULL;
}

static weft_status* inner_body(weft_graph* g, void* user,
                               const weft_output* v, int32_t n,
                               weft_output* next) {
  (void)n;
  struct inner* I = user;
  weft_tensor_array a = {I->name, v[1]};
  weft_output value = wt_apply2(
      g, "Add", NULL, wt_apply2(g, "Mul", NULL, I->i, i32(g, 10)), v[0]);
  weft_status* st = weft_tensor_array_write(g, &a, v[0], value);
  if (st != NULL) return st;
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = a.flow;
  return NULL;
}

static weft_status* outer_cond(weft_graph* g, void* user,
                               const weft_output* v, int32_t n,
                               weft_output* pred) {
  (void)n;
  struct outer* O = user;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, O->rounds));
  return NULL;
}

static weft_status* outer_body(weft_graph* g, void* user,
                               const weft_output* v, int32_t n,
                               weft_output* next) {
  (void)n;
  (void)user;
  weft_tensor_array a;
  weft_output size = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  weft_status* st =
      weft_tensor_array_create(g, "per_round", WEFT_INT32, size, NULL, 0, &a);
  if (st != NULL) return st;
  struct inner I = {a.name, v[0]};
  weft_output init[2] = {i32(g, 0), a.flow}, fin[2];
  st = weft_while_loop(g, inner_cond, inner_body, &I, init, 2, NULL, fin);
  if (st != NULL) return st;
  weft_tensor_array done = {a.name, fin[1]};
  weft_output stacked;
  st = weft_tensor_array_stack(g, done, &stacked);
  if (st != NULL) return st;
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = wt_apply2(g, "Add", NULL, v[1], wt_apply1(g, "Sum", NULL, stacked));
  return NULL;
}

Test(tensor_array, one_array_per_outer_iteration) {
  weft_graph* g = wt_graph_new();
  struct outer O = {4};
  weft_output init[2] = {i32(g, 0), i32(g, 0)}, fin[2];
  weft_while_options o = {sizeof o, "rounds", 4, 0, NULL};
  WT_OK(weft_while_loop(g, outer_cond, outer_body, &O, init, 2, &o, fin));
  int32_t want = 0;
  for (int32_t i = 0; i < 4; ++i)
    for (int32_t j = 0; j <= i; ++j) want += i * 10 + j;
  weft_tensor* t = run_fetch(g, init[0], NULL, fin[1]);
  cr_expect_eq(*(const int32_t*)weft_tensor_data(t), want);
  weft_tensor_destroy(t);
  weft_graph_destroy(g);
}

/* ---- the rules, refused with messages ---------------------------------- */

Test(tensor_array, errors_name_the_array_and_the_element) {
  weft_graph* g = wt_graph_new();
  weft_tensor_array ta;
  WT_OK(weft_tensor_array_create(g, "three", WEFT_FLOAT32, i32(g, 3), NULL,
                                 0, &ta));
  weft_tensor_array once = ta;
  WT_OK(weft_tensor_array_write(g, &once, i32(g, 0), wt_const_f32(
                                    g, NULL, NULL, 0, (float[]){1})));
  weft_output r;
  /* Element 1 was never written. */
  WT_OK(weft_tensor_array_read(g, once, i32(g, 1), &r));
  expect_run_error(g, r, WEFT_FAILED_PRECONDITION, "never written");
  /* Element 0 written twice. */
  weft_tensor_array twice = once;
  WT_OK(weft_tensor_array_write(g, &twice, i32(g, 0), wt_const_f32(
                                    g, NULL, NULL, 0, (float[]){2})));
  expect_run_error(g, twice.flow, WEFT_FAILED_PRECONDITION,
                   "already written");
  /* Past the size of a fixed array. */
  weft_tensor_array past = ta;
  WT_OK(weft_tensor_array_write(g, &past, i32(g, 3), wt_const_f32(
                                    g, NULL, NULL, 0, (float[]){2})));
  expect_run_error(g, past.flow, WEFT_OUT_OF_RANGE, "outside TensorArray "
                   "'three'");
  /* Stacking with a hole. */
  weft_output st;
  WT_OK(weft_tensor_array_stack(g, once, &st));
  expect_run_error(g, st, WEFT_FAILED_PRECONDITION, "element 1");
  /* Elements of two shapes cannot stack. */
  weft_tensor_array mixed = ta;
  WT_OK(weft_tensor_array_write(g, &mixed, i32(g, 0), wt_const_f32(
                                    g, NULL, WT_DIMS(2), 1, (float[]){1, 2})));
  WT_OK(weft_tensor_array_write(g, &mixed, i32(g, 1), wt_const_f32(
                                    g, NULL, NULL, 0, (float[]){3})));
  WT_OK(weft_tensor_array_write(g, &mixed, i32(g, 2), wt_const_f32(
                                    g, NULL, NULL, 0, (float[]){4})));
  WT_OK(weft_tensor_array_stack(g, mixed, &st));
  expect_run_error(g, st, WEFT_INVALID_ARGUMENT, "one shape");
  /* A negative size. */
  weft_tensor_array neg;
  WT_OK(weft_tensor_array_create(g, "negative", WEFT_FLOAT32, i32(g, -2),
                                 NULL, 0, &neg));
  expect_run_error(g, neg.flow, WEFT_INVALID_ARGUMENT, "negative");

  /* Build-time refusals: wrong dtype, wrong element shape, not an array,
   * an index that is not an int32 scalar. */
  int64_t two[1] = {2};
  weft_shape pair = {1, two};
  weft_tensor_array shaped;
  WT_OK(weft_tensor_array_create(g, "pairs", WEFT_FLOAT32, i32(g, 2), &pair,
                                 0, &shaped));
  weft_tensor_array copy = shaped;
  WT_EXPECT_ERROR(weft_tensor_array_write(g, &copy, i32(g, 0), i32(g, 1)),
                  WEFT_INVALID_ARGUMENT, "holds float32");
  WT_EXPECT_ERROR(
      weft_tensor_array_write(g, &copy, i32(g, 0),
                              wt_const_f32(g, NULL, WT_DIMS(3), 1,
                                           (float[]){1, 2, 3})),
      WEFT_INVALID_ARGUMENT, "shape [2]");
  WT_EXPECT_ERROR(
      weft_tensor_array_unstack(g, &copy, wt_const_f32(g, NULL, WT_DIMS(2, 3),
                                                       2, (float[6]){0})),
      WEFT_INVALID_ARGUMENT, "rows of it");
  cr_expect(copy.flow.node == shaped.flow.node, "a refused write keeps the "
            "flow");
  weft_tensor_array bogus = {"x_not_there", shaped.flow};
  weft_output out;
  WT_EXPECT_ERROR(weft_tensor_array_read(g, bogus, i32(g, 0), &out),
                  WEFT_INVALID_ARGUMENT, "not a TensorArray");
  WT_EXPECT_ERROR(weft_tensor_array_read(g, shaped, f64(g, 0), &out),
                  WEFT_INVALID_ARGUMENT, "int32");
  weft_shape bad = {WEFT_MAX_RANK + 1, two};
  WT_EXPECT_ERROR(weft_tensor_array_create(g, NULL, WEFT_FLOAT32, i32(g, 1),
                                           &bad, 0, &copy),
                  WEFT_INVALID_ARGUMENT, "rank");
  weft_graph_destroy(g);
}

/* ---- gradients --------------------------------------------------------- */

/* y = stack(unstack(x)) * x: through a round trip. */
static weft_output build_round_trip(weft_graph* g, const weft_output* xs,
                                    int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_tensor_array ta;
  WT_OK(weft_tensor_array_create(g, NULL, WEFT_FLOAT64, i32(g, 3), NULL, 0,
                                 &ta));
  WT_OK(weft_tensor_array_unstack(g, &ta, xs[0]));
  weft_output s, r;
  WT_OK(weft_tensor_array_stack(g, ta, &s));
  WT_OK(weft_tensor_array_read(g, ta, i32(g, 1), &r));
  /* Element 1 is read as well as stacked: its gradient adds both. */
  return wt_apply2(g, "Add", "y", wt_apply2(g, "Mul", NULL, s, xs[0]),
                   wt_apply2(g, "Mul", NULL, r, r));
}

Test(tensor_array, gradient_of_a_round_trip_sums_two_reads) {
  const double x[6] = {0.3, -1.2, 0.8, 0.5, -0.4, 1.1};
  gc_input in = {WEFT_FLOAT64, WT_DIMS(3, 2), 2, x, 0};
  gc_check_f64("stack(unstack(x)) * x + x[1]^2", build_round_trip, NULL, &in,
               1, 0);
}

/* An RNN over a sequence in a TensorArray: h = tanh(h W + x_t), every h
 * written to an output array; y = stack(hs).  Element 0 of the input is
 * also read in every step (its gradient sums T reads), and x's last step is
 * never read when `skip_last` (its gradient is zero). */
struct seq {
  weft_tensor_array xs;
  const char* out;
  weft_output w;
  int32_t steps;
};

static weft_status* seq_cond(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* pred) {
  (void)n;
  struct seq* S = user;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, S->steps));
  return NULL;
}

static weft_status* seq_body(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* next) {
  (void)n;
  struct seq* S = user;
  weft_output x, x0;
  WT_OK(weft_tensor_array_read(g, S->xs, v[0], &x));
  WT_OK(weft_tensor_array_read(g, S->xs, i32(g, 0), &x0));
  weft_output hw = wt_apply2(g, "MatMul", NULL, v[1], S->w);
  weft_output pre = wt_apply2(g, "Add", NULL, wt_apply2(g, "Add", NULL, hw, x),
                              wt_apply2(g, "Mul", NULL, x0, f64(g, 0.3)));
  weft_output h = wt_apply1(g, "Tanh", NULL, pre);
  weft_tensor_array out = {S->out, v[2]};
  WT_OK(weft_tensor_array_write(g, &out, v[0], h));
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = h;
  next[2] = out.flow;
  return NULL;
}

struct seq_arg {
  int32_t steps, parallel;
};

static weft_output build_seq(weft_graph* g, const weft_output* xs, int32_t n,
                             void* arg) {
  (void)n;
  const struct seq_arg* A = arg;
  /* xs[0]: x [T, 1, 2]; xs[1]: W [2, 2]; xs[2]: h0 [1, 2]. */
  struct seq S = {.w = xs[1], .steps = A->steps};
  WT_OK(weft_tensor_array_create(g, "xs", WEFT_FLOAT64, i32(g, 4), NULL, 0,
                                 &S.xs));
  WT_OK(weft_tensor_array_unstack(g, &S.xs, xs[0]));
  weft_tensor_array hs;
  WT_OK(weft_tensor_array_create(g, "hs", WEFT_FLOAT64, i32(g, A->steps),
                                 NULL, 0, &hs));
  S.out = hs.name;
  weft_output init[3] = {i32(g, 0), xs[2], hs.flow}, fin[3];
  weft_while_options o = {sizeof o, "seq", A->parallel, 0, NULL};
  WT_OK(weft_while_loop(g, seq_cond, seq_body, &S, init, 3, &o, fin));
  weft_tensor_array done = {hs.name, fin[2]};
  weft_output y;
  WT_OK(weft_tensor_array_stack(g, done, &y));
  return y;
}

Test(tensor_array, gradient_of_an_rnn_over_arrays) {
  const double x[8] = {0.5, -0.3, 0.2, 0.9, -0.7, 0.4, 0.1, -0.2};
  const double w[4] = {0.6, -0.4, 0.3, 0.8};
  const double h0[2] = {0.1, -0.5};
  gc_input in[3] = {{WEFT_FLOAT64, WT_DIMS(4, 1, 2), 3, x, 0},
                    {WEFT_FLOAT64, WT_DIMS(2, 2), 2, w, 0},
                    {WEFT_FLOAT64, WT_DIMS(1, 2), 2, h0, 0}};
  struct seq_arg all = {4, 1}, overlapped = {4, 8}, shorter = {3, 4};
  gc_check_f64("RNN over a TensorArray, 4 steps", build_seq, &all, in, 3, 0);
  gc_check_f64("RNN over a TensorArray, parallel_iterations 8", build_seq,
               &overlapped, in, 3, 0);
  /* 3 steps: x's last element is never read; its gradient must be zero
   * (central differences agree, and the check below says so exactly). */
  gc_check_f64("RNN over a TensorArray, last input unread", build_seq,
               &shorter, in, 3, 0);
  weft_graph* g = wt_graph_new();
  weft_output ph[3] = {
      wt_placeholder(g, "x", WEFT_FLOAT64, WT_DIMS(4, 1, 2), 3),
      wt_placeholder(g, "w", WEFT_FLOAT64, WT_DIMS(2, 2), 2),
      wt_placeholder(g, "h0", WEFT_FLOAT64, WT_DIMS(1, 2), 2)};
  weft_output y = wt_apply1(g, "Sum", NULL, build_seq(g, ph, 3, &shorter));
  weft_output dx;
  WT_OK(weft_gradients(g, &y, 1, ph, 1, NULL, &dx));
  weft_tensor* vals[3] = {wt_tensor(WEFT_FLOAT64, WT_DIMS(4, 1, 2), 3, x),
                          wt_tensor(WEFT_FLOAT64, WT_DIMS(2, 2), 2, w),
                          wt_tensor(WEFT_FLOAT64, WT_DIMS(1, 2), 2, h0)};
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* t = wt_run1(s, ph, vals, 3, dx);
  const double* d = weft_tensor_data(t);
  cr_expect(d[6] == 0 && d[7] == 0, "unread step has gradient %g %g", d[6],
            d[7]);
  cr_expect(d[0] != 0, "step 0 is read");
  weft_tensor_destroy(t);
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(vals[i]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* Gradient through an array made inside the loop body (depth 1): each outer
 * iteration i makes a = [x * i, x * x], y += sum(stack(a) * c). */
struct made_inside {
  weft_output x, c;
};

static weft_status* three_rounds(weft_graph* g, void* user,
                                 const weft_output* v, int32_t n,
                                 weft_output* pred) {
  (void)n;
  (void)user;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, 3));
  return NULL;
}

static weft_status* inside_body(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* next) {
  (void)n;
  struct made_inside* M = user;
  weft_tensor_array a;
  WT_OK(weft_tensor_array_create(g, "inside", WEFT_FLOAT64, i32(g, 2), NULL,
                                 0, &a));
  weft_op_builder* b = weft_op_begin(g, "Cast", NULL);
  weft_op_add_input(b, v[0]);
  weft_op_set_attr_dtype(b, "DstT", WEFT_FLOAT64);
  weft_node* fi = NULL;
  WT_OK(weft_op_finish(b, &fi));
  WT_OK(weft_tensor_array_write(
      g, &a, i32(g, 0), wt_apply2(g, "Mul", NULL, M->x, (weft_output){fi, 0})));
  WT_OK(weft_tensor_array_write(g, &a, i32(g, 1),
                                wt_apply2(g, "Mul", NULL, M->x, M->x)));
  weft_output s;
  WT_OK(weft_tensor_array_stack(g, a, &s));
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  next[1] = wt_apply2(g, "Add", NULL, v[1],
                      wt_apply1(g, "Sum", NULL,
                                wt_apply2(g, "Mul", NULL, s, M->c)));
  return NULL;
}

static weft_output build_inside(weft_graph* g, const weft_output* xs,
                                int32_t n, void* arg) {
  (void)n;
  (void)arg;
  struct made_inside M = {xs[0], xs[1]};
  weft_output init[2] = {i32(g, 0), f64(g, 0)}, fin[2];
  WT_OK(weft_while_loop(g, three_rounds, inside_body, &M, init, 2, NULL, fin));
  return fin[1];
}

Test(tensor_array, gradient_through_an_array_made_in_a_loop) {
  const double x[2] = {0.7, -1.3};
  const double c[4] = {0.5, 1.5, -0.8, 0.2};
  gc_input in[2] = {{WEFT_FLOAT64, WT_DIMS(2), 1, x, 0},
                    {WEFT_FLOAT64, WT_DIMS(2, 2), 2, c, 0}};
  gc_check_f64("array made in each iteration", build_inside, NULL, in, 2, 0);
}

/* Many runs of a loop over arrays hold no memory between runs (ASan would
 * report a leak; the arrays are destroyed with each run). */
Test(tensor_array, arrays_live_for_one_run) {
  weft_graph* g = wt_graph_new();
  weft_tensor_array ta;
  WT_OK(weft_tensor_array_create(g, "grow", WEFT_INT32, i32(g, 0), NULL, 1,
                                 &ta));
  struct grow G = {ta.name, 50};
  weft_output init[2] = {i32(g, 0), ta.flow}, fin[2];
  WT_OK(weft_while_loop(g, grow_cond, grow_body, &G, init, 2, NULL, fin));
  weft_tensor_array done = {ta.name, fin[1]};
  weft_output size;
  WT_OK(weft_tensor_array_size(g, done, &size));
  weft_session* s = wt_session_new(g, NULL);
  for (int r = 0; r < 200; ++r) {
    weft_tensor* t = wt_run1(s, NULL, NULL, 0, size);
    cr_assert_eq(*(const int32_t*)weft_tensor_data(t), 50);
    weft_tensor_destroy(t);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}
