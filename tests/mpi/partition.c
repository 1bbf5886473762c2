/* Graphs split across the tasks of a cluster session (issue 16): run under
 * `mpirun -np N` (N as argv[1] too) and alone (N = 1, cluster "worker": one
 * task, nothing crosses).  Each case builds one graph twice, runs it in a
 * cluster session whose constraints put nodes on different tasks and in an
 * ordinary session of this process alone, and compares: a model split over
 * ranks must compute what one process computes.  Rank 0 prints TAP;
 * another rank prints its failures to stderr and exits 1. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_tap.h"

static weft_session* make_session(weft_graph* g, const char* cluster,
                                  int32_t precision) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = 2;
  o.cluster = cluster;
  o.transfer_precision = precision;
  weft_session* s = NULL;
  weft_status* st = weft_session_create(g, &o, &s);
  if (st != NULL) {
    fail("session (cluster '%s'): %s", cluster ? cluster : "",
         weft_status_message(st));
    weft_status_destroy(st);
    return NULL;
  }
  return s;
}

static weft_output on(weft_graph* g, const char* device, const char* op,
                      weft_output a, weft_output b, int two,
                      weft_status** st) {
  weft_op_builder* bl = weft_op_begin(g, op, NULL);
  weft_op_add_input(bl, a);
  if (two) weft_op_add_input(bl, b);
  if (device != NULL) weft_op_set_device(bl, device);
  weft_node* n = NULL;
  *st = weft_op_finish(bl, &n);
  return (weft_output){n, 0};
}

static char g_task[64];
static const char* task(int t) {
  snprintf(g_task, sizeof g_task, "/job:worker/task:%d", t % g_size);
  return g_task;
}

static float pseudo(int i) { return (float)((i * 7919) % 1000) / 500.0f - 1.0f; }

/* ---- Cluster specs and names ---------------------------------------------- */

static int check_specs(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  weft_session* s = NULL;
  char spec[64], want[96];
  snprintf(spec, sizeof spec, "worker:%d", g_size + 1);
  snprintf(want, sizeof want, "has %d task(s) but this job has %d", g_size + 1,
           g_size);
  o.cluster = spec;
  if (!expect_error(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                    want, "one task too many"))
    return 0;
  o.cluster = "ps:1,ps";
  if (!expect_error(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                    "job 'ps' twice", "a job twice"))
    return 0;
  o.cluster = "ps:x";
  if (!expect_error(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                    "task count", "a count that is not a number"))
    return 0;
  o.cluster = "a b";
  if (!expect_error(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                    "job name 'a b'", "a bad job name"))
    return 0;
  /* A constraint naming a job the cluster lacks, and a task past its end. */
  const float one = 1;
  weft_output c = constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one);
  weft_status* st = NULL;
  weft_output y = on(g, "/job:ps/task:0", "Neg", c, c, 0, &st);
  TRY(st);
  s = make_session(g, "worker", 0);
  if (s == NULL) return 0;
  weft_tensor* out = NULL;
  if (!expect_error(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &out),
                    WEFT_INVALID_ARGUMENT, "job 'ps', which cluster 'worker'",
                    "an unknown job"))
    return 0;
  snprintf(spec, sizeof spec, "/job:worker/task:%d", g_size);
  weft_output z = on(g, spec, "Neg", c, c, 0, &st);
  TRY(st);
  if (!expect_error(weft_session_run(s, NULL, NULL, 0, &z, 1, NULL, 0, &out),
                    WEFT_INVALID_ARGUMENT, "a task that cluster 'worker'",
                    "a task past the end"))
    return 0;
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

/* ---- A chain of layers, one per task -------------------------------------- */

#define ROWS 64
#define COLS 32

/* x [ROWS, COLS] fed -> per task t: h = Tanh(h W_t), W_t a constant on
 * task t -> sum; fetches h and the sum, on every rank. */
static int build_chain(weft_graph* g, weft_output* x, weft_output fetch[2]) {
  const int64_t xd[2] = {ROWS, COLS}, wd[2] = {COLS, COLS};
  TRY(weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 2, x));
  weft_output h = *x;
  weft_status* st = NULL;
  for (int t = 0; t < g_size + 1; ++t) {  /* ends where it started */
    float w[COLS * COLS];
    for (int i = 0; i < COLS * COLS; ++i) w[i] = pseudo(i + 31 * t) * 0.3f;
    weft_graph_set_device(g, task(t));
    weft_output wc = constant(g, WEFT_FLOAT32, wd, 2, w, sizeof w);
    weft_graph_set_device(g, NULL);
    h = on(g, task(t), "MatMul", h, wc, 1, &st);
    TRY(st);
    h = on(g, task(t), "Tanh", h, h, 0, &st);
    TRY(st);
  }
  fetch[0] = h;
  fetch[1] = on(g, task(g_size - 1), "Sum", h, h, 0, &st);
  TRY(st);
  return 1;
}

static int run_chain(const char* cluster, int32_t precision,
                     const float* xv, float* h_out, float* sum_out) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  weft_output x, f[2];
  if (!build_chain(g, &x, f)) return 0;
  weft_session* s = make_session(g, cluster, precision);
  if (s == NULL) return 0;
  const int64_t xd[2] = {ROWS, COLS};
  weft_tensor* xt = NULL;
  TRY(weft_tensor_create_copy(WEFT_FLOAT32, xd, 2, xv,
                              sizeof(float) * ROWS * COLS, &xt));
  weft_tensor* out[2] = {NULL, NULL};
  for (int run = 0; run < 3; ++run) {  /* later runs reuse the plan */
    TRY(weft_session_run(s, &x, &xt, 1, f, 2, NULL, 0, out));
    memcpy(h_out, weft_tensor_data(out[0]), sizeof(float) * ROWS * COLS);
    *sum_out = *(const float*)weft_tensor_data(out[1]);
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
  weft_tensor_destroy(xt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

static float g_x[ROWS * COLS];

static int check_chain(void) {
  for (int i = 0; i < ROWS * COLS; ++i) g_x[i] = pseudo(i);
  static float h_split[ROWS * COLS], h_one[ROWS * COLS];
  float sum_split = 0, sum_one = 0;
  if (!run_chain("worker", WEFT_TRANSFER_EXACT, g_x, h_split, &sum_split))
    return 0;
  if (!run_chain(NULL, WEFT_TRANSFER_EXACT, g_x, h_one, &sum_one)) return 0;
  for (int i = 0; i < ROWS * COLS; ++i)
    if (h_split[i] != h_one[i])
      return fail("h[%d]: %.9g split over %d tasks, %.9g in one process", i,
                  h_split[i], g_size, h_one[i]);
  if (sum_split != sum_one)
    return fail("sum %.9g split, %.9g in one process", sum_split, sum_one);
  return 1;
}

/* bfloat16 on the wire: with several tasks the values cross (narrowed and
 * widened back), so the chain's result moves by about bfloat16's precision
 * but no more; alone nothing crosses and it is exact. */
static int check_lossy(void) {
  static float h_lossy[ROWS * COLS], h_one[ROWS * COLS];
  float sum_lossy = 0, sum_one = 0;
  if (!run_chain("worker", WEFT_TRANSFER_BFLOAT16, g_x, h_lossy, &sum_lossy))
    return 0;
  if (!run_chain(NULL, WEFT_TRANSFER_EXACT, g_x, h_one, &sum_one)) return 0;
  double worst = 0;
  for (int i = 0; i < ROWS * COLS; ++i) {
    double d = fabs((double)h_lossy[i] - h_one[i]);
    if (d > worst) worst = d;
  }
  if (g_size == 1 && worst != 0)
    return fail("alone the values moved by %g", worst);
  if (g_size > 1 && (worst == 0 || worst > 0.1))
    return fail("bfloat16 transfers moved the values by %g (want > 0, "
                "<= 0.1)", worst);
  return 1;
}

/* ---- Training with variables on different tasks --------------------------- */

#define IN 8
#define HID 16
#define BATCH 32

static int train(const char* cluster, float losses[20], float* w1_out) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t xd[2] = {BATCH, IN}, td[2] = {BATCH, 1};
  const int64_t w1d[2] = {IN, HID}, w2d[2] = {HID, 1};
  float w1[IN * HID], w2[HID];
  for (int i = 0; i < IN * HID; ++i) w1[i] = pseudo(3 * i + 1) * 0.5f;
  for (int i = 0; i < HID; ++i) w2[i] = pseudo(5 * i + 2) * 0.5f;
  const char* ps = g_size > 1 ? "/job:ps/task:0" : "/job:worker/task:0";
  char last[64];
  snprintf(last, sizeof last, "/job:worker/task:%d", g_size > 1 ? g_size - 2 : 0);
  /* w1 on the ps task, w2 and the second layer on the last worker. */
  weft_graph_set_device(g, ps);
  weft_output w1v, w2v;
  weft_node* init[2];
  TRY(weft_graph_variable(g, "w1",
                          constant(g, WEFT_FLOAT32, w1d, 2, w1, sizeof w1),
                          &w1v, &init[0]));
  weft_graph_set_device(g, last);
  TRY(weft_graph_variable(g, "w2",
                          constant(g, WEFT_FLOAT32, w2d, 2, w2, sizeof w2),
                          &w2v, &init[1]));
  weft_graph_set_device(g, NULL);
  weft_output x, t, h, pred, diff, sq, loss;
  TRY(weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 2, &x));
  TRY(weft_graph_placeholder(g, "t", WEFT_FLOAT32, td, 2, &t));
  weft_status* st = NULL;
  h = on(g, ps, "MatMul", x, w1v, 1, &st);
  TRY(st);
  h = on(g, NULL, "Relu", h, h, 0, &st);
  TRY(st);
  pred = on(g, last, "MatMul", h, w2v, 1, &st);
  TRY(st);
  diff = on(g, NULL, "Sub", pred, t, 1, &st);
  TRY(st);
  sq = on(g, NULL, "Square", diff, diff, 0, &st);
  TRY(st);
  loss = on(g, NULL, "Mean", sq, sq, 0, &st);
  TRY(st);
  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, WEFT_OPTIMIZER_MOMENTUM);
  opt.learning_rate = 0.05f;
  opt.momentum = 0.9f;
  weft_node* step = NULL;
  TRY(weft_minimize(g, loss, &opt, "train", &step));
  weft_node* init_all = NULL;
  TRY(weft_graph_initialize_all(g, "init", &init_all));
  weft_session* s = make_session(g, cluster, WEFT_TRANSFER_EXACT);
  if (s == NULL) return 0;
  TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init_all, 1, NULL));
  float xv[BATCH * IN], tv[BATCH];
  weft_tensor *xt = NULL, *tt = NULL;
  weft_output feeds[2] = {x, t};
  for (int k = 0; k < 20; ++k) {
    for (int i = 0; i < BATCH * IN; ++i) xv[i] = pseudo(i + 17 * k);
    for (int r = 0; r < BATCH; ++r) {
      float sum = 0.25f;
      for (int c = 0; c < IN; ++c) sum += (c % 3 - 1) * xv[r * IN + c];
      tv[r] = sum;
    }
    TRY(weft_tensor_create_copy(WEFT_FLOAT32, xd, 2, xv, sizeof xv, &xt));
    TRY(weft_tensor_create_copy(WEFT_FLOAT32, td, 2, tv, sizeof tv, &tt));
    weft_tensor* fv[2] = {xt, tt};
    weft_tensor* lt = NULL;
    TRY(weft_session_run(s, feeds, fv, 2, &loss, 1, &step, 1, &lt));
    losses[k] = *(const float*)weft_tensor_data(lt);
    weft_tensor_destroy(lt);
    weft_tensor_destroy(xt);
    weft_tensor_destroy(tt);
  }
  weft_tensor* w = NULL;
  TRY(weft_session_run(s, NULL, NULL, 0, &w1v, 1, NULL, 0, &w));
  memcpy(w1_out, weft_tensor_data(w), sizeof(float) * IN * HID);
  weft_tensor_destroy(w);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

static int check_training(void) {
  float l_split[20], l_one[20], w_split[IN * HID], w_one[IN * HID];
  if (!train(g_size > 1 ? "ps:1,worker" : "worker", l_split, w_split))
    return 0;
  if (!train(NULL, l_one, w_one)) return 0;
  for (int k = 0; k < 20; ++k)
    if (fabsf(l_split[k] - l_one[k]) > 1e-6f * (1 + fabsf(l_one[k])))
      return fail("loss %d: %.9g split, %.9g in one process", k, l_split[k],
                  l_one[k]);
  for (int i = 0; i < IN * HID; ++i)
    if (fabsf(w_split[i] - w_one[i]) > 1e-6f * (1 + fabsf(w_one[i])))
      return fail("w1[%d]: %.9g split, %.9g in one process", i, w_split[i],
                  w_one[i]);
  if (!(l_one[19] < 0.5f * l_one[0]))
    return fail("training did not learn (loss %g -> %g)", l_one[0], l_one[19]);
  return 1;
}

/* ---- A control edge across tasks ------------------------------------------- */

/* Only the last task's AssignAdd is a target; its control input, an
 * AssignAdd on task 0, runs because the edge crosses tasks. */
static int check_control_edge(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float zero = 0, one = 1;
  weft_output u, v;
  weft_node *iu = NULL, *iv = NULL;
  weft_graph_set_device(g, task(0));
  TRY(weft_graph_variable(g, "u", constant(g, WEFT_FLOAT32, NULL, 0, &zero,
                                           sizeof zero), &u, &iu));
  weft_op_builder* b = weft_op_begin(g, "AssignAdd", "bump_u");
  weft_op_add_input(b, u);
  weft_op_add_input(b, constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one));
  weft_node* bump_u = NULL;
  TRY(weft_op_finish(b, &bump_u));
  weft_graph_set_device(g, task(g_size - 1));
  TRY(weft_graph_variable(g, "v", constant(g, WEFT_FLOAT32, NULL, 0, &zero,
                                           sizeof zero), &v, &iv));
  b = weft_op_begin(g, "AssignAdd", "bump_v");
  weft_op_add_input(b, v);
  weft_op_add_input(b, constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one));
  weft_op_add_control_input(b, bump_u);
  weft_node* bump_v = NULL;
  TRY(weft_op_finish(b, &bump_v));
  weft_graph_set_device(g, NULL);
  weft_session* s = make_session(g, "worker", 0);
  if (s == NULL) return 0;
  weft_node* inits[2] = {iu, iv};
  TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, inits, 2, NULL));
  for (int i = 0; i < 3; ++i)
    TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, &bump_v, 1, NULL));
  weft_output both[2] = {u, v};
  weft_tensor* out[2] = {NULL, NULL};
  TRY(weft_session_run(s, NULL, NULL, 0, both, 2, NULL, 0, out));
  float gu = *(const float*)weft_tensor_data(out[0]);
  float gv = *(const float*)weft_tensor_data(out[1]);
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(out[1]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  if (gu != 3 || gv != 3) return fail("u = %g, v = %g; want 3 and 3", gu, gv);
  return 1;
}

/* ---- A large value ----------------------------------------------------------- */

static int check_large(void) {
  const int64_t n = (int64_t)8 << 20;  /* 32 MiB of float32 */
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  weft_output x;
  TRY(weft_graph_placeholder(g, "big", WEFT_FLOAT32, &n, 1, &x));
  weft_status* st = NULL;
  weft_output a = on(g, task(0), "Neg", x, x, 0, &st);
  TRY(st);
  weft_output y = on(g, task(g_size - 1), "Neg", a, a, 0, &st);
  TRY(st);
  weft_session* s = make_session(g, "worker", 0);
  if (s == NULL) return 0;
  weft_tensor* xt = NULL;
  TRY(weft_tensor_create(WEFT_FLOAT32, &n, 1, &xt));
  float* xv = weft_tensor_data(xt);
  for (int64_t i = 0; i < n; ++i) xv[i] = (float)(i % 100003) - 5.0f;
  weft_tensor* out = NULL;
  TRY(weft_session_run(s, &x, &xt, 1, &y, 1, NULL, 0, &out));
  const float* yv = weft_tensor_data(out);
  int ok = 1;
  for (int64_t i = 0; ok && i < n; ++i)
    if (yv[i] != xv[i])
      ok = fail("element %lld: %g, want %g", (long long)i, yv[i], xv[i]);
  weft_tensor_destroy(out);
  weft_tensor_destroy(xt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* ---- A conditional whose branches cross tasks ------------------------------ */

static weft_status* neg_on_last(weft_graph* g, void* user, weft_output* out,
                                int32_t n) {
  (void)n;
  weft_op_builder* b = weft_op_begin(g, "Neg", NULL);
  weft_op_add_input(b, *(weft_output*)user);
  weft_op_set_device(b, task(g_size - 1));
  weft_node* node = NULL;
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_op_finish(b, &node));
  *out = (weft_output){node, 0};
  return NULL;
}

static weft_status* same(weft_graph* g, void* user, weft_output* out,
                         int32_t n) {
  (void)g;
  (void)n;
  *out = *(weft_output*)user;
  return NULL;
}

/* c = 2 on task 0; y = pred ? -c (on the last task) : c; fetched on every
 * rank for both predicates.  The value of the branch not taken crosses
 * tasks dead, and the Merge takes the live one. */
static int check_cond(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float two = 2;
  weft_output p;
  TRY(weft_graph_placeholder(g, "pred", WEFT_BOOL, NULL, 0, &p));
  weft_graph_set_device(g, task(0));
  weft_output c = constant(g, WEFT_FLOAT32, NULL, 0, &two, sizeof two);
  weft_graph_set_device(g, NULL);
  weft_output y;
  TRY(weft_cond(g, "branch", p, neg_on_last, same, &c, 1, &y));
  weft_session* s = make_session(g, "worker", 0);
  if (s == NULL) return 0;
  int ok = 1;
  for (int taken = 0; ok && taken < 2; ++taken) {
    for (int run = 0; ok && run < 2; ++run) {
      weft_tensor* pt = NULL;
      const uint8_t v = (uint8_t)taken;
      TRY(weft_tensor_create_copy(WEFT_BOOL, NULL, 0, &v, 1, &pt));
      weft_tensor* out = NULL;
      weft_run_options ro;  /* a lost dead value would wait forever */
      weft_run_options_init(&ro);
      ro.timeout_ms = 20000;
      TRY(weft_session_run_with_options(s, &ro, &p, &pt, 1, &y, 1, NULL, 0,
                                        &out, NULL));
      const float got = *(const float*)weft_tensor_data(out);
      if (got != (taken ? -2.0f : 2.0f))
        ok = fail("pred %d: %g", taken, got);
      weft_tensor_destroy(out);
      weft_tensor_destroy(pt);
    }
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* ---- A loop body split over tasks ---------------------------------------- */

static weft_status* below(weft_graph* g, const weft_output counter, float n,
                          weft_output* pred) {
  weft_output in[2] = {counter, constant(g, WEFT_FLOAT32, NULL, 0, &n,
                                         sizeof n)};
  return weft_graph_apply(g, "Less", NULL, in, 2, pred);
}

static weft_status* count_up(weft_graph* g, const weft_output counter,
                             weft_output* next) {
  const float one = 1;
  weft_output in[2] = {counter, constant(g, WEFT_FLOAT32, NULL, 0, &one,
                                         sizeof one)};
  return weft_graph_apply(g, "Add", NULL, in, 2, next);
}

static weft_status* below_three(weft_graph* g, void* user,
                                const weft_output* v, int32_t n,
                                weft_output* pred) {
  (void)user;
  (void)n;
  return below(g, v[0], 3, pred);
}

static weft_status* step_on_last(weft_graph* g, void* user,
                                 const weft_output* v, int32_t n,
                                 weft_output* next) {
  (void)user;
  (void)n;
  const float one = 1;
  weft_op_builder* b = weft_op_begin(g, "Add", NULL);
  weft_op_add_input(b, v[0]);
  weft_op_add_input(b, constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one));
  weft_op_set_device(b, task(g_size - 1));
  weft_node* node = NULL;
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_op_finish(b, &node));
  next[0] = (weft_output){node, 0};
  return NULL;
}

/* The counter's Enter, Merge, condition and Switch on task 0 (where its
 * initial value is), the body's Add on the last task: every iteration the
 * counter crosses there and back, and the last task runs the loop's
 * iterations on the predicate task 0 sends it. */
static int check_loop_body_split(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float zero = 0;
  weft_graph_set_device(g, task(0));
  weft_output v = constant(g, WEFT_FLOAT32, NULL, 0, &zero, sizeof zero), y;
  weft_graph_set_device(g, NULL);
  TRY(weft_while_loop(g, below_three, step_on_last, NULL, &v, 1, NULL, &y));
  weft_session* s = make_session(g, "worker", 0);
  if (s == NULL) return 0;
  int ok = 1;
  for (int run = 0; ok && run < 3; ++run) {
    weft_tensor* out = NULL;
    TRY(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &out));
    const float got = *(const float*)weft_tensor_data(out);
    if (got != 3) ok = fail("run %d: the loop gave %g, not 3", run, got);
    weft_tensor_destroy(out);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* ---- A loop on one task, fed from another, read on a third --------------- */

static weft_status* below_five(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  return below(g, v[0], 5, pred);
}

static weft_status* grow(weft_graph* g, void* user, const weft_output* v,
                         int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  const float one = 1;
  weft_output in[2] = {v[0], constant(g, WEFT_FLOAT32, NULL, 0, &one,
                                      sizeof one)};
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_apply(g, "Add", NULL, in, 2, &next[0]));
  weft_output mul[2] = {v[1], v[1]};
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_apply(g, "Tanh", NULL, mul, 1, &next[1]));
  weft_output sc[2] = {next[1], v[1]};
  return weft_graph_apply(g, "Add", NULL, sc, 2, &next[1]);
}

/* f = {y, dy/dx}, y = Sum(Square(v)) on the last task. */
static int loss_and_gradient(weft_graph* g, weft_output v, weft_output x,
                             weft_output f[2]) {
  weft_status* st = NULL;
  weft_output sq = on(g, task(g_size - 1), "Square", v, v, 0, &st);
  TRY(st);
  f[0] = on(g, task(g_size - 1), "Sum", sq, sq, 0, &st);
  TRY(st);
  TRY(weft_gradients(g, &f[0], 1, &x, 1, NULL, &f[1]));
  return 1;
}

/* x (fed) -> Neg on task 0 -> while i < 5: v = tanh(v) + v, on task 1 ->
 * Square on the last task; fetched with its gradient with respect to x,
 * which runs the loop's gradient (a loop of its own) back across. */
static int run_loop(const char* cluster, float* y_out, float* dx_out) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t four = 4;
  weft_output x;
  TRY(weft_graph_placeholder(g, "x", WEFT_FLOAT32, &four, 1, &x));
  weft_status* st = NULL;
  weft_output a = on(g, task(0), "Neg", x, x, 0, &st);
  TRY(st);
  const float zero = 0;
  weft_graph_set_device(g, task(1));
  weft_output vars[2] = {constant(g, WEFT_FLOAT32, NULL, 0, &zero, sizeof zero),
                         a},
              out[2];
  TRY(weft_while_loop(g, below_five, grow, NULL, vars, 2, NULL, out));
  weft_graph_set_device(g, NULL);
  weft_output f[2];
  if (!loss_and_gradient(g, out[1], x, f)) return 0;
  weft_session* s = make_session(g, cluster, WEFT_TRANSFER_EXACT);
  if (s == NULL) return 0;
  const float xv[4] = {0.5f, -1.0f, 2.0f, 0.0f};
  weft_tensor* xt = NULL;
  TRY(weft_tensor_create_copy(WEFT_FLOAT32, &four, 1, xv, sizeof xv, &xt));
  weft_tensor* got[2] = {NULL, NULL};
  TRY(weft_session_run(s, &x, &xt, 1, f, 2, NULL, 0, got));
  *y_out = *(const float*)weft_tensor_data(got[0]);
  memcpy(dx_out, weft_tensor_data(got[1]), sizeof(float) * 4);
  weft_tensor_destroy(got[0]);
  weft_tensor_destroy(got[1]);
  weft_tensor_destroy(xt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

static int check_loop(void) {
  float y_split = 0, y_one = 0, dx_split[4], dx_one[4];
  if (!run_loop("worker", &y_split, dx_split)) return 0;
  if (!run_loop(NULL, &y_one, dx_one)) return 0;
  if (y_split != y_one)
    return fail("y %.9g split, %.9g in one process", y_split, y_one);
  for (int i = 0; i < 4; ++i)
    if (dx_split[i] != dx_one[i])
      return fail("dx[%d] %.9g split, %.9g in one process", i, dx_split[i],
                  dx_one[i]);
  if (dx_one[0] == 0) return fail("the gradient is 0");
  return 1;
}

/* ---- An unconstrained loop stays whole ---------------------------------- */

typedef struct {
  weft_output w;
} whole_loop;

static weft_status* whole_body(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* next) {
  (void)n;
  const whole_loop* l = (const whole_loop*)user;
  WEFT_RETURN_IF_ERROR_IN_TEST(count_up(g, v[0], &next[0]));
  weft_output mm[2] = {v[1], l->w}, prod;
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_apply(g, "MatMul", NULL, mm, 2,
                                                &prod));
  return weft_graph_apply(g, "Tanh", NULL, &prod, 1, &next[1]);
}

/* h = Tanh(h W) five times, W (64 x 64, 16 KiB) made on the last task, h
 * (1 x 64) and the counter on task 0, nothing in the loop constrained: the
 * loop stays on the task of its predicate, so W crosses once instead of h
 * twice per iteration (the MatMul would otherwise go where most of its
 * input bytes are).  Each rank's run metadata shows the MatMul exactly
 * where the LoopCond is; the result equals one process. */
static int run_whole(const char* cluster, float* out, int* here) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  float wv[64 * 64], hv[64];
  for (int i = 0; i < 64 * 64; ++i) wv[i] = 0.1f * pseudo(i);
  for (int i = 0; i < 64; ++i) hv[i] = pseudo(i + 5);
  const int64_t wd[2] = {64, 64}, hd[2] = {1, 64};
  weft_status* st = NULL;
  weft_output wc = constant(g, WEFT_FLOAT32, wd, 2, wv, sizeof wv);
  whole_loop l = {on(g, task(g_size - 1), "Identity", wc, wc, 0, &st)};
  TRY(st);
  const float zero = 0;
  weft_graph_set_device(g, task(0));
  weft_output vars[2] = {constant(g, WEFT_FLOAT32, NULL, 0, &zero,
                                  sizeof zero),
                         constant(g, WEFT_FLOAT32, hd, 2, hv, sizeof hv)},
              y[2];
  weft_graph_set_device(g, NULL);
  weft_while_options o = {sizeof o, "whole", 0, 0, NULL};
  TRY(weft_while_loop(g, below_five, whole_body, &l, vars, 2, &o, y));
  weft_session* s = make_session(g, cluster, WEFT_TRANSFER_EXACT);
  if (s == NULL) return 0;
  weft_run_metadata* md = weft_run_metadata_create();
  weft_tensor* got = NULL;
  TRY(weft_session_run_with_options(s, NULL, NULL, NULL, 0, &y[1], 1, NULL,
                                    0, &got, md));
  memcpy(out, weft_tensor_data(got), sizeof(float) * 64);
  int matmul = 0, cond = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(md); ++i) {
    const char* name = weft_run_metadata_node_name(md, i);
    if (strcmp(weft_run_metadata_node_op(md, i), "MatMul") == 0) matmul = 1;
    if (strcmp(name, "whole/loop_cond") == 0) cond = 1;
  }
  *here = matmul * 2 + cond;
  weft_run_metadata_destroy(md);
  weft_tensor_destroy(got);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

static int check_whole_loop(void) {
  float split[64], one[64];
  int here = 0, alone = 0;
  if (!run_whole("worker", split, &here)) return 0;
  if (!run_whole(NULL, one, &alone)) return 0;
  if (here != 0 && here != 3)
    return fail("rank %d has the %s but not the %s", g_rank,
                here == 2 ? "MatMul" : "LoopCond",
                here == 2 ? "LoopCond" : "MatMul");
  if (alone != 3) return fail("one process: no MatMul or LoopCond seen");
  for (int i = 0; i < 64; ++i)
    if (split[i] != one[i])
      return fail("h[%d] %.9g split, %.9g in one process", i, split[i],
                  one[i]);
  return 1;
}

/* ---- A hand-built loop without a LoopCond, split: refused ---------------- */

static weft_node* raw(weft_graph* g, const char* op, const char* name,
                      const weft_output* in, int n, const char* device,
                      const char* frame, int constant, weft_status** st) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  for (int i = 0; i < n; ++i) weft_op_add_input(b, in[i]);
  if (frame != NULL) {
    weft_op_set_attr_string(b, "frame_name", frame);
    weft_op_set_attr_bool(b, "is_constant", constant);
  }
  if (strcmp(op, "NextIteration") == 0)
    weft_op_set_attr_string(b, "merge", "raw/merge");
  if (device != NULL) weft_op_set_device(b, device);
  weft_node* node = NULL;
  if (*st == NULL) *st = weft_op_finish(b, &node);
  else weft_op_abandon(b);
  return node;
}

/* i = 0; while (i < 3) i = i + 1, from Enter, Merge, Switch, NextIteration
 * and Exit alone: nothing marks the predicate, so no other task could be
 * told it.  Alone it counts to 3; with the Add on another task than the
 * Switch the session refuses it, naming the frame. */
static int check_loop_without_loop_cond(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float zero = 0, one = 1, three = 3;
  weft_status* st = NULL;
  char add_task[64];
  snprintf(add_task, sizeof add_task, "%s", task(g_size - 1));
  weft_output c[3] = {constant(g, WEFT_FLOAT32, NULL, 0, &zero, sizeof zero),
                      constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one),
                      constant(g, WEFT_FLOAT32, NULL, 0, &three,
                               sizeof three)};
  weft_output e = {raw(g, "Enter", "raw/enter", &c[0], 1, task(0), "raw", 0,
                       &st), 0};
  weft_output inc = {raw(g, "Enter", "raw/one", &c[1], 1, NULL, "raw", 1,
                         &st), 0};
  weft_output lim = {raw(g, "Enter", "raw/three", &c[2], 1, NULL, "raw", 1,
                         &st), 0};
  weft_output m = {raw(g, "Merge", "raw/merge", &e, 1, NULL, NULL, 0, &st),
                   0};
  weft_output ml[2] = {m, lim};
  weft_output less = {raw(g, "Less", "raw/less", ml, 2, NULL, NULL, 0, &st),
                      0};
  weft_output sl[2] = {m, less};
  weft_node* sw = raw(g, "Switch", "raw/switch", sl, 2, NULL, NULL, 0, &st);
  weft_output ai[2] = {{sw, 1}, inc};
  weft_output add = {raw(g, "Add", "raw/add", ai, 2, add_task, NULL, 0, &st),
                     0};
  raw(g, "NextIteration", "raw/next", &add, 1, NULL, NULL, 0, &st);
  weft_output x = {raw(g, "Exit", "raw/exit", &(weft_output){sw, 0}, 1, NULL,
                       NULL, 0, &st), 0};
  TRY(st);
  weft_session* s = make_session(g, "worker", 0);
  if (s == NULL) return 0;
  weft_tensor* out = NULL;
  int ok = 1;
  if (g_size == 1) {
    TRY(weft_session_run(s, NULL, NULL, 0, &x, 1, NULL, 0, &out));
    if (*(const float*)weft_tensor_data(out) != 3)
      ok = fail("the loop gave %g, not 3", *(const float*)weft_tensor_data(out));
    weft_tensor_destroy(out);
  } else {
    ok = expect_error(weft_session_run(s, NULL, NULL, 0, &x, 1, NULL, 0, &out),
                      WEFT_UNIMPLEMENTED,
                      "frame 'raw' has nodes on /job:worker/task:0",
                      "a split loop without a LoopCond");
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* ---- A recurrent loop spread over every task, with its gradient ---------- */

/* x [4] fed; w = Neg(x) on task 0, outside the loop, read inside on task 1
 * (a loop invariant: entered there by a copy of its Enter, it crosses once
 * per entry, not per iteration).  while i < 6: v = Tanh(v * w) + v with the
 * Mul on task 1, the Tanh on task 2 and the Add on task 0; the counter
 * where its initial value is (task 0).  Nested: the body runs an inner loop
 * (k < 2: u = Tanh(u * w), its Mul on task 2, its Tanh on task 3) and adds
 * u to v, so both frames span tasks and the inner one's iterations are
 * numbered within the outer's.  Then y = Sum(Square(v)) on the last task
 * and dy/dx, which runs the loops' gradients (loops of their own, reading
 * what the forward loops saved) back across. */
typedef struct {
  weft_output w;
  int nested;
} rnn_loop;

static weft_status* below_two(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  return below(g, v[0], 2, pred);
}

static weft_status* inner_body(weft_graph* g, void* user,
                               const weft_output* v, int32_t n,
                               weft_output* next) {
  (void)n;
  const rnn_loop* l = (const rnn_loop*)user;
  WEFT_RETURN_IF_ERROR_IN_TEST(count_up(g, v[0], &next[0]));
  weft_status* st = NULL;
  weft_output m = on(g, task(2), "Mul", v[1], l->w, 1, &st);
  if (st == NULL) next[1] = on(g, task(3), "Tanh", m, m, 0, &st);
  return st;
}

static weft_status* below_six(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  return below(g, v[0], 6, pred);
}

static weft_status* rnn_body(weft_graph* g, void* user, const weft_output* v,
                             int32_t n, weft_output* next) {
  (void)n;
  const rnn_loop* l = (const rnn_loop*)user;
  WEFT_RETURN_IF_ERROR_IN_TEST(count_up(g, v[0], &next[0]));
  weft_status* st = NULL;
  weft_output m = on(g, task(1), "Mul", v[1], l->w, 1, &st);
  weft_output t = st ? m : on(g, task(2), "Tanh", m, m, 0, &st);
  if (st == NULL && l->nested) {
    const float zero = 0;
    weft_output in[2] = {constant(g, WEFT_FLOAT32, NULL, 0, &zero,
                                  sizeof zero), t}, out[2];
    weft_while_options o = {sizeof o, "inner", 0, 0, NULL};
    WEFT_RETURN_IF_ERROR_IN_TEST(weft_while_loop(g, below_two, inner_body,
                                                 user, in, 2, &o, out));
    t = out[1];
  }
  if (st == NULL) next[1] = on(g, task(0), "Add", t, v[1], 1, &st);
  return st;
}

static int run_rnn(const char* cluster, int nested, int parallel,
                   float* y_out, float* dx_out) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t four = 4;
  weft_output x;
  TRY(weft_graph_placeholder(g, "x", WEFT_FLOAT32, &four, 1, &x));
  weft_status* st = NULL;
  rnn_loop l = {on(g, task(0), "Neg", x, x, 0, &st), nested};
  TRY(st);
  const float zero = 0;
  weft_graph_set_device(g, task(0));
  weft_output vars[2] = {constant(g, WEFT_FLOAT32, NULL, 0, &zero,
                                  sizeof zero), x}, out[2];
  weft_graph_set_device(g, NULL);
  weft_while_options o = {sizeof o, "rnn", parallel, 0, NULL};
  TRY(weft_while_loop(g, below_six, rnn_body, &l, vars, 2, &o, out));
  weft_output f[2];
  if (!loss_and_gradient(g, out[1], x, f)) return 0;
  weft_session* s = make_session(g, cluster, WEFT_TRANSFER_EXACT);
  if (s == NULL) return 0;
  const float xv[4] = {0.5f, -1.0f, 0.25f, 0.0f};
  weft_tensor* xt = NULL;
  TRY(weft_tensor_create_copy(WEFT_FLOAT32, &four, 1, xv, sizeof xv, &xt));
  for (int run = 0; run < 2; ++run) {
    weft_tensor* got[2] = {NULL, NULL};
    weft_run_options ro;
    weft_run_options_init(&ro);
    ro.timeout_ms = 20000;
    TRY(weft_session_run_with_options(s, &ro, &x, &xt, 1, f, 2, NULL, 0, got,
                                      NULL));
    y_out[run] = *(const float*)weft_tensor_data(got[0]);
    memcpy(dx_out + 4 * run, weft_tensor_data(got[1]), sizeof(float) * 4);
    weft_tensor_destroy(got[0]);
    weft_tensor_destroy(got[1]);
  }
  weft_tensor_destroy(xt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

static int check_rnn(int nested, int parallel) {
  float y_split[2], y_one[2], dx_split[8], dx_one[8];
  if (!run_rnn("worker", nested, parallel, y_split, dx_split)) return 0;
  if (!run_rnn(NULL, nested, parallel, y_one, dx_one)) return 0;
  for (int run = 0; run < 2; ++run) {
    if (y_split[run] != y_one[run])
      return fail("run %d: y %.9g split, %.9g in one process", run,
                  y_split[run], y_one[run]);
    for (int i = 0; i < 4; ++i)
      if (dx_split[4 * run + i] != dx_one[4 * run + i])
        return fail("run %d: dx[%d] %.9g split, %.9g in one process", run, i,
                    dx_split[4 * run + i], dx_one[4 * run + i]);
  }
  if (dx_one[0] == 0 || !isfinite(y_one[0]))
    return fail("a degenerate reference: y %g, dx[0] %g", y_one[0], dx_one[0]);
  return 1;
}

/* ---- A task that never sends ---------------------------------------------- */

/* Task 1 makes a value task 0 reads (and every rank fetches); rank 1 comes
 * 2.5 s late, so rank 0's run (1 s deadline) ends UNAVAILABLE naming task
 * 1, and rank 1's then ends naming task 0.  Then every rank meets in an
 * AllReduce of an ordinary session. */
static int check_silent_task(void) {
  if (g_size < 2) {
    snprintf(g_why, sizeof g_why, "skipped: one task has no one to wait for");
    return 1;
  }
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float one = 1;
  weft_graph_set_device(g, task(1));
  weft_output c = constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one);
  weft_status* st = NULL;
  weft_output a = on(g, NULL, "Neg", c, c, 0, &st);
  TRY(st);
  weft_graph_set_device(g, task(0));
  weft_output y = on(g, NULL, "Neg", a, a, 0, &st);
  TRY(st);
  weft_graph_set_device(g, NULL);
  weft_session* s = make_session(g, "worker", 0);
  if (s == NULL) return 0;
  int ok = 1;
  weft_tensor* out = NULL;
  if (g_rank == 0) {
    weft_run_options ro;
    weft_run_options_init(&ro);
    ro.timeout_ms = 1000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = weft_session_run_with_options(s, &ro, NULL, NULL, 0, &y, 1, NULL, 0,
                                       &out, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    /* Rank 1 sleeps, but its MPI module's thread answers: alive. */
    char* message = st ? strdup(weft_status_message(st)) : NULL;
    ok = expect_error(st, WEFT_UNAVAILABLE,
                      "waited for task /job:worker/task:1 (rank 1)",
                      "rank 0's run without task 1");
    if (ok && strstr(message, "rank 1 answers a liveness check: it is alive") ==
                  NULL)
      ok = fail("no liveness verdict: %s", message);
    free(message);
    if (ok && secs > 2.4) ok = fail("rank 0 waited %.2f s", secs);
  } else if (g_rank == 1) {
    struct timespec nap = {2, 500000000};
    nanosleep(&nap, NULL);
    /* Its send goes (the message then waits, unclaimed, on rank 0), and
     * the fetch it waits for from task 0 never comes: rank 0 gave up. */
    weft_run_options ro;
    weft_run_options_init(&ro);
    ro.timeout_ms = 500;
    ok = expect_error(weft_session_run_with_options(s, &ro, NULL, NULL, 0, &y,
                                                    1, NULL, 0, &out, NULL),
                      WEFT_UNAVAILABLE,
                      "waited for task /job:worker/task:0 (rank 0) to send",
                      "rank 1's late run");
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return barrier() && ok;
}

int main(int argc, char** argv) {
  const int expected = argc > 1 ? atoi(argv[1]) : 1;
  if (!tap_start(expected, 15)) return 1;
  report("cluster specs and task names are checked", check_specs());
  report("a chain of layers over every task equals one process",
         check_chain());
  report("bfloat16 transfers narrow what crosses tasks, and only that",
         check_lossy());
  report("training with variables on two tasks equals one process",
         check_training());
  report("a control edge across tasks runs its source", check_control_edge());
  report("a 32 MiB value crosses tasks intact", check_large());
  report("a loop on one task, fed from another and read on a third, with "
         "its gradient, equals one process", check_loop());
  report("a conditional whose branches cross tasks takes either branch",
         check_cond());
  report("a loop whose body is on another task than its counter counts "
         "right, run after run", check_loop_body_split());
  report("an unconstrained loop stays on its predicate's task",
         check_whole_loop());
  report("a split loop without a LoopCond is refused, naming its frame",
         check_loop_without_loop_cond());
  report("a recurrent loop spread over every task, with its gradient, "
         "equals one process", check_rnn(0, 1));
  report("... with 8 iterations in flight", check_rnn(0, 8));
  report("... with a loop inside it spread over the tasks too",
         check_rnn(1, 4));
  report("a task that never sends ends the run UNAVAILABLE, naming it",
         check_silent_task());
  return g_failed == 0 ? 0 : 1;
}
