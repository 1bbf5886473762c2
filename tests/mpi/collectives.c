/* Collective ops across the ranks of an MPI job: run under
 * `mpirun -np N` (N given as argv[1] too, so the test knows what to
 * expect) and alone (N = 1: every collective is the identity).  Every rank
 * checks every value against what it computes from the ranks' inputs,
 * which are functions of the rank; rank 0 prints TAP, another rank prints
 * its failures to stderr and exits 1 (mpirun then fails too). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_tap.h"

static weft_output apply1(weft_graph* g, const char* op, weft_output x,
                          const char* str_attr, const char* str_value,
                          const char* int_attr, int64_t int_value,
                          weft_status** st) {
  weft_op_builder* b = weft_op_begin(g, op, NULL);
  weft_op_add_input(b, x);
  if (str_attr != NULL) weft_op_set_attr_string(b, str_attr, str_value);
  if (int_attr != NULL) weft_op_set_attr_int(b, int_attr, int_value);
  weft_node* n = NULL;
  *st = weft_op_finish(b, &n);
  return (weft_output){n, 0};
}

static weft_session* session(weft_graph* g, int inter_op) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = inter_op;
  weft_session* s = NULL;
  weft_status* st = weft_session_create(g, &o, &s);
  if (st != NULL) {
    fail("session: %s", weft_status_message(st));
    weft_status_destroy(st);
    return NULL;
  }
  return s;
}

static int check_world(int expected) {
  int32_t rank = -1, size = -1;
  TRY(weft_cluster_world(&rank, &size));
  if (size != expected) return fail("size %d, expected %d", size, expected);
  if (rank < 0 || rank >= size) return fail("rank %d of %d", rank, size);
  return 1;
}

/* AllGather of the rank: every rank once, in order. */
static int check_allgather_ranks(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  int32_t r = g_rank;
  int64_t one = 1;
  weft_output x = constant(g, WEFT_INT32, &one, 1, &r, sizeof r);
  weft_status* st = NULL;
  weft_output y = apply1(g, "AllGather", x, NULL, NULL, NULL, 0, &st);
  TRY(st);
  weft_session* s = session(g, 1);
  if (s == NULL) return 0;
  weft_tensor* out = NULL;
  TRY(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &out));
  int ok = weft_tensor_dim(out, 0) == g_size;
  const int32_t* v = weft_tensor_data(out);
  for (int i = 0; ok && i < g_size; ++i)
    if (v[i] != i) ok = fail("element %d is %d", i, v[i]);
  if (weft_tensor_dim(out, 0) != g_size)
    fail("%lld elements, expected %d", (long long)weft_tensor_dim(out, 0),
         g_size);
  weft_tensor_destroy(out);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* Sums and means of every dtype, scalars and vectors. */
static int check_allreduce(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t three = 3;
  const float xf[3] = {(float)(g_rank + 1), 2.0f * (g_rank + 1), 0.5f};
  const double xd = g_rank;
  const int32_t xi[3] = {g_rank, -g_rank, 7};
  const int64_t xl = (int64_t)1 << 40 | g_rank;
  weft_status* st = NULL;
  weft_output outs[4];
  outs[0] = apply1(g, "AllReduce",
                   constant(g, WEFT_FLOAT32, &three, 1, xf, sizeof xf),
                   NULL, NULL, NULL, 0, &st);
  TRY(st);
  outs[1] = apply1(g, "AllReduce", constant(g, WEFT_FLOAT64, NULL, 0, &xd,
                                            sizeof xd),
                   "reduction", "mean", NULL, 0, &st);
  TRY(st);
  outs[2] = apply1(g, "AllReduce",
                   constant(g, WEFT_INT32, &three, 1, xi, sizeof xi), NULL,
                   NULL, NULL, 0, &st);
  TRY(st);
  outs[3] = apply1(g, "AllReduce",
                   constant(g, WEFT_INT64, NULL, 0, &xl, sizeof xl), NULL,
                   NULL, NULL, 0, &st);
  TRY(st);
  weft_session* s = session(g, 2);
  if (s == NULL) return 0;
  weft_tensor* got[4] = {NULL};
  TRY(weft_session_run(s, NULL, NULL, 0, outs, 4, NULL, 0, got));
  const double n = g_size, tri = n * (n + 1) / 2;
  const float* f = weft_tensor_data(got[0]);
  const double* d = weft_tensor_data(got[1]);
  const int32_t* i = weft_tensor_data(got[2]);
  const int64_t* l = weft_tensor_data(got[3]);
  int64_t want_l = 0;
  for (int r = 0; r < g_size; ++r) want_l += (int64_t)1 << 40 | r;
  int ok = 1;
  if (f[0] != (float)tri || f[1] != (float)(2 * tri) || f[2] != 0.5f * g_size)
    ok = fail("float32 sum [%g %g %g], expected [%g %g %g]", f[0], f[1], f[2],
              tri, 2 * tri, 0.5 * n);
  else if (fabs(*d - (n - 1) / 2) > 1e-12)
    ok = fail("float64 mean %g, expected %g", *d, (n - 1) / 2);
  else if (i[0] != (int32_t)(tri - n) || i[1] != -(int32_t)(tri - n) ||
           i[2] != 7 * g_size)
    ok = fail("int32 sum [%d %d %d]", i[0], i[1], i[2]);
  else if (*l != want_l)
    ok = fail("int64 sum %lld, expected %lld", (long long)*l,
              (long long)want_l);
  for (int k = 0; k < 4; ++k) weft_tensor_destroy(got[k]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* Broadcast from the last rank; AllGather of vectors. */
static int check_broadcast_allgather(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t two = 2;
  const float xb[2] = {10.0f * g_rank, 10.0f * g_rank + 1};
  const float xg[2] = {(float)g_rank, -(float)g_rank};
  weft_status* st = NULL;
  weft_output outs[2];
  outs[0] = apply1(g, "Broadcast",
                   constant(g, WEFT_FLOAT32, &two, 1, xb, sizeof xb), NULL,
                   NULL, "root", g_size - 1, &st);
  TRY(st);
  outs[1] = apply1(g, "AllGather",
                   constant(g, WEFT_FLOAT32, &two, 1, xg, sizeof xg), NULL,
                   NULL, NULL, 0, &st);
  TRY(st);
  weft_session* s = session(g, 2);
  if (s == NULL) return 0;
  weft_tensor* got[2] = {NULL};
  TRY(weft_session_run(s, NULL, NULL, 0, outs, 2, NULL, 0, got));
  const float* b = weft_tensor_data(got[0]);
  const float* a = weft_tensor_data(got[1]);
  int ok = 1;
  if (b[0] != 10.0f * (g_size - 1) || b[1] != 10.0f * (g_size - 1) + 1)
    ok = fail("broadcast [%g %g] from rank %d", b[0], b[1], g_size - 1);
  if (weft_tensor_dim(got[1], 0) != 2 * g_size)
    ok = fail("allgather of %lld elements",
              (long long)weft_tensor_dim(got[1], 0));
  for (int r = 0; ok && r < g_size; ++r)
    if (a[2 * r] != (float)r || a[2 * r + 1] != -(float)r)
      ok = fail("allgather [%d] = %g %g", r, a[2 * r], a[2 * r + 1]);
  weft_tensor_destroy(got[0]);
  weft_tensor_destroy(got[1]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* Twelve independent reductions of one shape, made ready in a different
 * order on each rank, over many runs: each must sum its own values
 * (collectives started in the order their inputs are ready would mix
 * them). */
static int check_order(void) {
  enum { K = 12, RUNS = 40 };
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t four = 4;
  weft_output inputs[K], outs[K];
  weft_status* st = NULL;
  weft_output one;
  TRY(weft_graph_placeholder(g, "one", WEFT_FLOAT32, &four, 1, &one));
  const float ones[4] = {1, 1, 1, 1};
  weft_tensor* one_value = NULL;
  TRY(weft_tensor_create_copy(WEFT_FLOAT32, &four, 1, ones, sizeof ones,
                              &one_value));
  /* Each input goes through a chain of products with a fed 1 (nothing
   * the planner folds or simplifies) whose length depends on the rank, and four inter-op threads run the
   * chains at once: the reductions become ready in a different order on
   * each rank (a long chain on one rank is a short one on another). */
  for (int k = 0; k < K; ++k) {
    float v[4];
    for (int i = 0; i < 4; ++i) v[i] = (float)((k + 1) * 1000 + i) * (g_rank + 1);
    weft_output mul_in[2] = {constant(g, WEFT_FLOAT32, &four, 1, v, sizeof v),
                             one};
    weft_output y;
    TRY(weft_graph_apply(g, "Mul", NULL, mul_in, 2, &y));
    const int chain = 1 + 40 * ((k * 5 + g_rank * 7) % K);
    for (int c = 0; c < chain; ++c) {
      weft_output again[2] = {y, one};
      TRY(weft_graph_apply(g, "Mul", NULL, again, 2, &y));
    }
    inputs[k] = y;
  }
  for (int k = 0; k < K; ++k) {
    outs[k] = apply1(g, "AllReduce", inputs[k], NULL, NULL, NULL, 0, &st);
    TRY(st);
  }
  weft_session* s = session(g, 4);
  if (s == NULL) return 0;
  const double tri = g_size * (g_size + 1) / 2.0;
  int ok = 1;
  for (int run = 0; ok && run < RUNS; ++run) {
    weft_tensor* got[K] = {NULL};
    TRY(weft_session_run(s, &one, &one_value, 1, outs, K, NULL, 0, got));
    for (int k = 0; k < K; ++k) {
      const float* v = weft_tensor_data(got[k]);
      for (int j = 0; ok && j < 4; ++j) {
        const double want = ((k + 1) * 1000.0 + j) * tri;
        if (v[j] != (float)want)
          ok = fail("run %d, reduction %d, element %d: %g, expected %g", run,
                    k, j, v[j], want);
      }
      weft_tensor_destroy(got[k]);
    }
  }
  weft_tensor_destroy(one_value);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* The gradient of sum(AllReduce(x)) on each rank's x: every rank's loss
 * depends on it, so dx = AllReduce(ones) = size. */
static int check_gradient(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t three = 3;
  const float xv[3] = {1, 2, 3};
  weft_output x = constant(g, WEFT_FLOAT32, &three, 1, xv, sizeof xv);
  weft_status* st = NULL;
  weft_output y = apply1(g, "AllReduce", x, NULL, NULL, NULL, 0, &st);
  TRY(st);
  weft_output loss;
  TRY(weft_graph_apply(g, "Sum", NULL, &y, 1, &loss));
  weft_output dx;
  TRY(weft_gradients(g, &loss, 1, &x, 1, NULL, &dx));
  weft_session* s = session(g, 1);
  if (s == NULL) return 0;
  weft_tensor* got = NULL;
  TRY(weft_session_run(s, NULL, NULL, 0, &dx, 1, NULL, 0, &got));
  const float* v = weft_tensor_data(got);
  int ok = 1;
  for (int j = 0; ok && j < 3; ++j)
    if (v[j] != (float)g_size) ok = fail("dx[%d] = %g, expected %d", j, v[j],
                                         g_size);
  weft_tensor_destroy(got);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* Data-parallel training of a linear model, y = x w, squared error: each
 * rank takes its shard of a batch of 12 rows, computes the gradient of its
 * shard's mean loss, averages the gradients over the ranks (AllReduce
 * mean) and steps.  After 20 steps w must equal what one process gets
 * with the whole batch (the mean of equal shards' means is the batch's
 * mean), computed here in a second graph without collectives. */
enum { ROWS = 12, IN = 3 };

static float row_value(int row, int col) {
  return (float)sin(0.7 * row + 1.3 * col) + 0.1f * (float)col;
}

static int train(int rows_from, int rows, int collective, float* w_out) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  float x[ROWS * IN], t[ROWS];
  for (int r = 0; r < rows; ++r) {
    float sum = 0;
    for (int c = 0; c < IN; ++c) {
      x[r * IN + c] = row_value(rows_from + r, c);
      sum += (c + 1) * 0.5f * x[r * IN + c];
    }
    t[r] = sum + 0.25f;
  }
  const int64_t xdims[2] = {rows, IN}, tdims[2] = {rows, 1};
  const int64_t wdims[2] = {IN, 1};
  const float w0[IN] = {0.1f, -0.2f, 0.3f};
  weft_output xc = constant(g, WEFT_FLOAT32, xdims, 2, x, sizeof(float) * rows * IN);
  weft_output tc = constant(g, WEFT_FLOAT32, tdims, 2, t, sizeof(float) * rows);
  weft_output w_init = constant(g, WEFT_FLOAT32, wdims, 2, w0, sizeof w0);
  weft_output w;
  weft_node* init = NULL;
  TRY(weft_graph_variable(g, "w", w_init, &w, &init));
  weft_output xw_in[2] = {xc, w}, pred, diff, sq, loss;
  TRY(weft_graph_apply(g, "MatMul", NULL, xw_in, 2, &pred));
  weft_output d_in[2] = {pred, tc};
  TRY(weft_graph_apply(g, "Sub", NULL, d_in, 2, &diff));
  TRY(weft_graph_apply(g, "Square", NULL, &diff, 1, &sq));
  TRY(weft_graph_apply(g, "Mean", NULL, &sq, 1, &loss));
  weft_output grad;
  TRY(weft_gradients(g, &loss, 1, &w, 1, NULL, &grad));
  weft_status* st = NULL;
  if (collective) {
    grad = apply1(g, "AllReduce", grad, "reduction", "mean", NULL, 0, &st);
    TRY(st);
  }
  const float lr = 0.1f;
  weft_output lr_c = constant(g, WEFT_FLOAT32, NULL, 0, &lr, sizeof lr);
  weft_op_builder* b = weft_op_begin(g, "ApplyGradientDescent", "step");
  weft_op_add_input(b, w);
  weft_op_add_input(b, lr_c);
  weft_op_add_input(b, grad);
  weft_node* step = NULL;
  TRY(weft_op_finish(b, &step));
  weft_session* s = session(g, 2);
  if (s == NULL) return 0;
  TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL));
  for (int i = 0; i < 20; ++i)
    TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, &step, 1, NULL));
  weft_tensor* got = NULL;
  TRY(weft_session_run(s, NULL, NULL, 0, &w, 1, NULL, 0, &got));
  memcpy(w_out, weft_tensor_data(got), sizeof(float) * IN);
  weft_tensor_destroy(got);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

/* A two-layer model trained by weft_minimize in data-parallel mode, its
 * gradients averaged one AllReduce each (bucket_bytes 0) or packed into
 * buckets; returns the 10 losses and how many AllReduce nodes the graph
 * has. */
static int train_minimize(int64_t bucket_bytes, float losses[10],
                          int* reductions) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  enum { HID = 5 };
  const int shard = ROWS / g_size;
  float x[ROWS * IN], t[ROWS], w1[IN * HID], w2[HID];
  for (int r = 0; r < shard; ++r) {
    float sum = 0.25f;
    for (int c = 0; c < IN; ++c) {
      x[r * IN + c] = row_value(g_rank * shard + r, c);
      sum += (c + 1) * 0.5f * x[r * IN + c];
    }
    t[r] = sum;
  }
  for (int i = 0; i < IN * HID; ++i) w1[i] = 0.1f * (float)((i * 7) % 5 - 2);
  for (int i = 0; i < HID; ++i) w2[i] = 0.2f * (float)(i % 3 - 1) + 0.05f;
  const int64_t xd[2] = {shard, IN}, td[2] = {shard, 1};
  const int64_t w1d[2] = {IN, HID}, w2d[2] = {HID, 1};
  weft_output w1v, w2v, h, pred, diff, sq, loss;
  TRY(weft_graph_variable(g, "w1", constant(g, WEFT_FLOAT32, w1d, 2, w1,
                                            sizeof w1), &w1v, NULL));
  TRY(weft_graph_variable(g, "w2", constant(g, WEFT_FLOAT32, w2d, 2, w2,
                                            sizeof w2), &w2v, NULL));
  weft_output in1[2] = {constant(g, WEFT_FLOAT32, xd, 2, x,
                                 sizeof(float) * shard * IN), w1v};
  TRY(weft_graph_apply(g, "MatMul", NULL, in1, 2, &h));
  TRY(weft_graph_apply(g, "Tanh", NULL, &h, 1, &h));
  weft_output in2[2] = {h, w2v};
  TRY(weft_graph_apply(g, "MatMul", NULL, in2, 2, &pred));
  weft_output d_in[2] = {pred, constant(g, WEFT_FLOAT32, td, 2, t,
                                        sizeof(float) * shard)};
  TRY(weft_graph_apply(g, "Sub", NULL, d_in, 2, &diff));
  TRY(weft_graph_apply(g, "Square", NULL, &diff, 1, &sq));
  TRY(weft_graph_apply(g, "Mean", NULL, &sq, 1, &loss));
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_MOMENTUM);
  o.learning_rate = 0.1;
  o.data_parallel = 1;
  o.bucket_bytes = bucket_bytes;
  weft_node* step = NULL;
  TRY(weft_minimize(g, loss, &o, "train", &step));
  weft_node* init = NULL;
  TRY(weft_graph_initialize_all(g, "init", &init));
  *reductions = 0;
  for (int32_t i = 0; i < weft_graph_node_count(g); ++i)
    *reductions += strcmp(weft_node_op_type(weft_graph_node_at(g, i)),
                          "AllReduce") == 0;
  /* The job's loss, the mean of the ranks' (each rank's own may rise). */
  weft_status* st = NULL;
  weft_output job_loss = apply1(g, "AllReduce", loss, "reduction", "mean",
                                NULL, 0, &st);
  TRY(st);
  weft_session* s = session(g, 2);
  if (s == NULL) return 0;
  TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL));
  for (int k = 0; k < 10; ++k) {
    weft_tensor* l = NULL;
    TRY(weft_session_run(s, NULL, NULL, 0, &job_loss, 1, &step, 1, &l));
    losses[k] = *(const float*)weft_tensor_data(l);
    weft_tensor_destroy(l);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

static int check_buckets(void) {
  if (ROWS % g_size != 0) {
    snprintf(g_why, sizeof g_why, "skipped: %d ranks do not divide %d rows",
             g_size, ROWS);
    return 1;
  }
  float each[10], packed[10], split[10];
  int n_each = 0, n_packed = 0, n_split = 0;
  if (!train_minimize(0, each, &n_each)) return 0;
  /* Both gradients in one bucket; then buckets too small for two. */
  if (!train_minimize(1 << 20, packed, &n_packed)) return 0;
  if (!train_minimize(4, split, &n_split)) return 0;
  if (n_each != 2 || n_packed != 1 || n_split != 2)
    return fail("AllReduce nodes: %d per gradient (want 2), %d in one "
                "bucket (want 1), %d in small buckets (want 2)", n_each,
                n_packed, n_split);
  for (int k = 0; k < 10; ++k)
    if (fabsf(packed[k] - each[k]) > 1e-6f * (1 + fabsf(each[k])) ||
        fabsf(split[k] - each[k]) > 1e-6f * (1 + fabsf(each[k])))
      return fail("loss %d: %.9g per gradient, %.9g in one bucket, %.9g in "
                  "small ones", k, each[k], packed[k], split[k]);
  if (!(each[9] < each[0])) return fail("the loss did not fall");
  return 1;
}

/* A rank that is late: rank 0's run of an AllReduce, with a 1 s deadline,
 * ends with UNAVAILABLE (naming the wait for the other ranks) while rank 1
 * sleeps 2.5 s; rank 1 then runs it and gets the full sum (rank 0's
 * operation completes late, its buffer kept alive), and the ranks are still
 * in step: the next run agrees everywhere. */
static int check_late_rank(void) {
  if (g_size < 2) {
    snprintf(g_why, sizeof g_why, "skipped: one rank has no one to wait for");
    return 1;
  }
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float v = (float)(g_rank + 1);
  weft_status* st = NULL;
  weft_output y = apply1(g, "AllReduce",
                         constant(g, WEFT_FLOAT32, NULL, 0, &v, sizeof v),
                         NULL, NULL, NULL, 0, &st);
  TRY(st);
  weft_session* s = session(g, 1);
  if (s == NULL) return 0;
  const float tri = g_size * (g_size + 1) / 2.0f;
  int ok = 1;
  weft_tensor* got = NULL;
  if (g_rank == 0) {
    weft_run_options o;
    weft_run_options_init(&o);
    o.timeout_ms = 1000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = weft_session_run_with_options(s, &o, NULL, NULL, 0, &y, 1, NULL, 0,
                                       &got, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double waited = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    if (st == NULL) {
      ok = fail("the run succeeded without rank 1");
      weft_tensor_destroy(got);
    } else {
      if (weft_status_code(st) != WEFT_UNAVAILABLE ||
          strstr(weft_status_message(st), "other ranks") == NULL ||
          strstr(weft_status_message(st),
                 "every rank answers a liveness check") == NULL)
        ok = fail("code %d: %s", (int)weft_status_code(st),
                  weft_status_message(st));
      else if (waited > 2.0)
        ok = fail("ended after %.2f s, the deadline was 1 s", waited);
      weft_status_destroy(st);
    }
  } else {
    if (g_rank == 1) {
      struct timespec nap = {2, 500000000};
      nanosleep(&nap, NULL);
    }
    TRY(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &got));
    if (*(const float*)weft_tensor_data(got) != tri)
      ok = fail("late sum %g, expected %g",
                *(const float*)weft_tensor_data(got), tri);
    weft_tensor_destroy(got);
  }
  got = NULL;
  TRY(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &got));
  if (ok && *(const float*)weft_tensor_data(got) != tri)
    ok = fail("next sum %g, expected %g", *(const float*)weft_tensor_data(got),
              tri);
  weft_tensor_destroy(got);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

static int check_data_parallel(void) {
  if (ROWS % g_size != 0) {
    snprintf(g_why, sizeof g_why, "skipped: %d ranks do not divide %d rows",
             g_size, ROWS);
    return 1;
  }
  const int shard = ROWS / g_size;
  float w_ranks[IN], w_one[IN];
  if (!train(g_rank * shard, shard, 1, w_ranks)) return 0;
  if (!train(0, ROWS, 0, w_one)) return 0;
  for (int c = 0; c < IN; ++c)
    if (fabsf(w_ranks[c] - w_one[c]) > 1e-5f * (1 + fabsf(w_one[c])))
      return fail("w[%d]: %.8g with %d ranks, %.8g in one process", c,
                  w_ranks[c], g_size, w_one[c]);
  /* And training moved w (a step that did nothing would agree too). */
  if (fabsf(w_one[0] - 0.1f) < 1e-3f) return fail("w did not move");
  return 1;
}

int main(int argc, char** argv) {
  const int expected = argc > 1 ? atoi(argv[1]) : 1;
  if (!tap_start(expected, 9)) return 1;
  report("the world has the ranks mpirun started", check_world(expected));
  report("AllGather of the ranks gives each once, in order",
         check_allgather_ranks());
  report("AllReduce sums and means float32, float64, int32, int64",
         check_allreduce());
  report("Broadcast from the last rank, AllGather of vectors",
         check_broadcast_allgather());
  report("twelve concurrent AllReduces over 40 runs each sum their own values",
         check_order());
  report("the gradient of an AllReduce sum is the sum of the gradients",
         check_gradient());
  report("data-parallel SGD equals one process with the whole batch",
         check_data_parallel());
  report("data-parallel gradients in buckets train as one AllReduce each",
         check_buckets());
  report("a late rank ends the others' run at its deadline, UNAVAILABLE",
         check_late_rank());
  return g_failed == 0 ? 0 : 1;
}
