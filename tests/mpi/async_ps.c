/* Asynchronous parameter servers (issue 16): cluster "ps:P,worker" with
 * serving job "ps", under `mpirun -np N` (N as argv[1] too; N >= 2; P is 2
 * from N = 4 on, else 1) and alone (N = 1: only the option checks, which
 * need no other task).  The parameter servers initialize the variables
 * they hold with runs of their own, serve the workers' runs until every
 * worker has ended its session, then read the result with runs of their
 * own; rank 0 prints TAP.
 * The workers train a linear regression on their own shards, each at its
 * own pace; a worker prints its failures to stderr and exits 1. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "mpi_tap.h"

#define DIM 4
#define ROWS 8
#define STEPS 300

static const float kTrue[DIM] = {0.5f, -1.0f, 2.0f, 0.25f};

/* Parameter servers in the training case: w on the first, the step
 * counter on the last. */
static int g_ps = 1;
static const char* g_cluster = "ps:1,worker";
static int g_mpmd = 0;

static float pseudo(int i) { return (float)((i * 7919) % 1000) / 500.0f - 1.0f; }

static weft_status* async_session(weft_graph* g, const char* cluster,
                                  const char* serving, weft_session** s) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = 2;
  o.cluster = cluster;
  o.serving_jobs = serving;
  return weft_session_create(g, &o, s);
}

/* ---- Options ------------------------------------------------------------- */

static int check_options(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  weft_session* s = NULL;
  int ok = expect_error(async_session(g, NULL, "ps", &s),
                        WEFT_INVALID_ARGUMENT, "needs a cluster",
                        "serving_jobs without a cluster");
  ok = ok && expect_error(async_session(g, "worker", "ps", &s),
                          WEFT_INVALID_ARGUMENT, "does not have",
                          "serving an unknown job");
  ok = ok && expect_error(async_session(g, "worker", "worker", &s),
                          WEFT_INVALID_ARGUMENT, "covers every task",
                          "every task serving");
  /* Jobs' counts from mpirun's app contexts need as many as there are
   * jobs. */
  if (!g_mpmd)
    ok = ok && expect_error(async_session(g, "ps,worker", "ps", &s),
                            WEFT_INVALID_ARGUMENT, "app context(s)",
                            "counts from one app context for two jobs");
  /* Under mpirun it would end the job (tests/mpi/test_train_parameter_
   * server.py sees it do so). */
  if (g_size == 1)
    ok = ok && expect_error(weft_cluster_abort(3), WEFT_FAILED_PRECONDITION,
                            "not started by an MPI launcher",
                            "aborting a process alone");
  if (ok) {
    weft_session_options o;
    weft_session_options_init(&o);
    o.devices = "CPU";
    TRY(weft_session_create(g, &o, &s));
    ok = expect_error(weft_session_serve(s), WEFT_FAILED_PRECONDITION,
                      "not an asynchronous cluster session",
                      "serving an ordinary session");
    weft_session_destroy(s);
  }
  if (ok && g_size > 1) {
    /* A worker may not serve; the server's serve is the next case's. */
    if (g_rank > 0) {
      TRY(async_session(g, "ps:1,worker", "ps", &s));
      ok = expect_error(weft_session_serve(s), WEFT_FAILED_PRECONDITION,
                        "does not serve", "serving on a worker");
      weft_session_destroy(s);
    } else {
      /* The workers' sessions end at once: serving them ends too. */
      TRY(async_session(g, "ps:1,worker", "ps", &s));
      weft_status* st = weft_session_serve(s);
      if (st != NULL) {
        ok = fail("serving workers that run nothing: %s",
                  weft_status_message(st));
        weft_status_destroy(st);
      }
      ok = ok && expect_error(weft_session_serve(NULL), WEFT_INVALID_ARGUMENT,
                              "NULL", "serving NULL");
      weft_session_destroy(s);
    }
  }
  weft_graph_destroy(g);
  return ok;
}

/* ---- Asynchronous training -------------------------------------------------- */

struct model {
  weft_graph* g;
  weft_output x, y, shape, w, count, never, loss, on_ps_fed, elsewhere;
  weft_node *init_w, *init_count, *train, *bump, *bad;
};

static weft_output apply(weft_graph* g, const char* op, weft_output a,
                         weft_output b, int two, const char* device,
                         weft_status** st) {
  weft_op_builder* bl = weft_op_begin(g, op, NULL);
  weft_op_add_input(bl, a);
  if (two) weft_op_add_input(bl, b);
  if (device != NULL) weft_op_set_device(bl, device);
  weft_node* n = NULL;
  *st = weft_op_finish(bl, &n);
  return (weft_output){n, 0};
}

#define APPLY(out, ...)                     \
  do {                                      \
    weft_status* made_ = NULL;              \
    (out) = apply(__VA_ARGS__, &made_);     \
    if (made_ != NULL) return made_;        \
  } while (0)

/* w (the model) and two counters on the ps; everything else unconstrained
 * (so on the worker whose run it is). */
static weft_status* build(struct model* m, float lr) {
  memset(m, 0, sizeof *m);
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_create(&m->g));
  weft_graph* g = m->g;
  const int64_t wd[2] = {DIM, 1}, xd[2] = {ROWS, DIM}, yd[2] = {ROWS, 1},
                sd[2] = {-1, -1};
  const float zeros[DIM] = {0}, zero = 0, one = 1;
  weft_graph_set_device(g, "/job:ps/task:0");
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_variable(
      g, "w", constant(g, WEFT_FLOAT32, wd, 2, zeros, sizeof zeros), &m->w,
      &m->init_w));
  char last[32];
  snprintf(last, sizeof last, "/job:ps/task:%d", g_ps - 1);
  weft_graph_set_device(g, last);
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_variable(
      g, "count", constant(g, WEFT_FLOAT32, NULL, 0, &zero, sizeof zero),
      &m->count, &m->init_count));
  weft_graph_set_device(g, "/job:ps");
  weft_node* never_init = NULL;
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_variable(
      g, "never", constant(g, WEFT_FLOAT32, NULL, 0, &zero, sizeof zero),
      &m->never, &never_init));
  weft_graph_set_device(g, NULL);
  WEFT_RETURN_IF_ERROR_IN_TEST(
      weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 2, &m->x));
  WEFT_RETURN_IF_ERROR_IN_TEST(
      weft_graph_placeholder(g, "y", WEFT_FLOAT32, yd, 2, &m->y));
  WEFT_RETURN_IF_ERROR_IN_TEST(
      weft_graph_placeholder(g, "matrix", WEFT_FLOAT32, sd, 2, &m->shape));
  weft_output pred, diff, sq;
  APPLY(pred, g, "MatMul", m->x, m->w, 1, NULL);
  APPLY(diff, g, "Sub", pred, m->y, 1, NULL);
  APPLY(sq, g, "Square", diff, diff, 0, NULL);
  APPLY(m->loss, g, "Mean", sq, sq, 0, NULL);
  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  opt.learning_rate = lr;
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_minimize(g, m->loss, &opt, "train",
                                             &m->train));
  /* One bump of `count` per step: no update may be lost. */
  weft_op_builder* b = weft_op_begin(g, "AssignAdd", "bump");
  weft_op_add_input(b, m->count);
  weft_op_add_input(b, constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one));
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_op_finish(b, &m->bump));
  /* A step whose worker part fails at run time (a fed matrix whose
   * product with itself does not exist) while its ps part waits for the
   * worker's value. */
  weft_output product, total;
  APPLY(product, g, "MatMul", m->shape, m->shape, 1, NULL);
  APPLY(total, g, "Mean", product, product, 0, NULL);
  b = weft_op_begin(g, "AssignAdd", "bad");
  weft_op_add_input(b, m->count);
  weft_op_add_input(b, total);
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_op_finish(b, &m->bad));
  /* A ps node reading a feed; a node on a worker other than the runner. */
  APPLY(m->on_ps_fed, g, "Neg", m->x, m->x, 0, "/job:ps");
  const int workers = g_size - g_ps, worker = g_rank - g_ps;
  char other[64];
  snprintf(other, sizeof other, "/job:worker/task:%d",
           worker >= 0 && workers > 1 ? (worker + 1) % workers : 0);
  APPLY(m->elsewhere, g, "Neg", m->count, m->count, 0, other);
  return NULL;
}

/* Worker `worker`'s batch of step k: rows of a shard of its own. */
static void batch(int worker, int k, float* xv, float* yv) {
  for (int i = 0; i < ROWS * DIM; ++i)
    xv[i] = pseudo(i + 31 * k + 100003 * worker);
  for (int r = 0; r < ROWS; ++r) {
    float sum = 0;
    for (int c = 0; c < DIM; ++c) sum += kTrue[c] * xv[r * DIM + c];
    yv[r] = sum;
  }
}

static weft_status* step(weft_session* s, const struct model* m, int worker,
                         int k, float* loss) {
  float xv[ROWS * DIM], yv[ROWS];
  batch(worker, k, xv, yv);
  const int64_t xd[2] = {ROWS, DIM}, yd[2] = {ROWS, 1};
  weft_tensor *xt = NULL, *yt = NULL, *lt = NULL;
  WEFT_RETURN_IF_ERROR_IN_TEST(
      weft_tensor_create_copy(WEFT_FLOAT32, xd, 2, xv, sizeof xv, &xt));
  weft_status* st =
      weft_tensor_create_copy(WEFT_FLOAT32, yd, 2, yv, sizeof yv, &yt);
  if (st == NULL) {
    weft_output feeds[2] = {m->x, m->y};
    weft_tensor* fv[2] = {xt, yt};
    weft_node* targets[2] = {m->train, m->bump};
    weft_run_options ro;
    weft_run_options_init(&ro);
    ro.timeout_ms = 30000; /* a lost transfer fails the test, naming it */
    st = weft_session_run_with_options(s, &ro, feeds, fv, 2, &m->loss, 1,
                                       targets, 2, &lt, NULL);
  }
  if (st == NULL) *loss = *(const float*)weft_tensor_data(lt);
  weft_tensor_destroy(lt);
  weft_tensor_destroy(xt);
  weft_tensor_destroy(yt);
  return st;
}

/* The worker's side: the refusals, a failing step, then STEPS steps. */
static int work(const struct model* m, weft_session* s) {
  const int worker = g_rank - g_ps;
  weft_tensor* out = NULL;
  if (!expect_error(weft_session_run(s, NULL, NULL, 0, &m->never, 1, NULL,
                                     0, &out),
                    WEFT_FAILED_PRECONDITION, "serving task /job:ps/task:0",
                    "fetching a variable the ps never initialized"))
    return 0;
  {
    const int64_t xd[2] = {ROWS, DIM};
    const float xv[ROWS * DIM] = {0};
    weft_tensor* xt = NULL;
    TRY(weft_tensor_create_copy(WEFT_FLOAT32, xd, 2, xv, sizeof xv, &xt));
    int ok = expect_error(weft_session_run(s, &m->x, &xt, 1, &m->on_ps_fed,
                                           1, NULL, 0, &out),
                          WEFT_INVALID_ARGUMENT,
                          "feeds are the running task's",
                          "a ps node reading a feed");
    weft_tensor_destroy(xt);
    if (!ok) return 0;
  }
  if (g_size - g_ps > 1 &&
      !expect_error(weft_session_run(s, NULL, NULL, 0, &m->elsewhere, 1,
                                     NULL, 0, &out),
                    WEFT_INVALID_ARGUMENT, "cannot use",
                    "a node on another worker"))
    return 0;
  {
    const int64_t md[2] = {2, 3};
    const float mv[6] = {1, 2, 3, 4, 5, 6};
    weft_tensor* mt = NULL;
    TRY(weft_tensor_create_copy(WEFT_FLOAT32, md, 2, mv, sizeof mv, &mt));
    int ok = expect_error(
        weft_session_run(s, &m->shape, &mt, 1, NULL, 0,
                         (weft_node* const*)&m->bad, 1, NULL),
        WEFT_INVALID_ARGUMENT, "MatMul", "a step whose worker part fails");
    weft_tensor_destroy(mt);
    if (!ok) return 0;
  }
  float first = 0, last = 0;
  for (int k = 0; k < STEPS; ++k) {
    TRY(step(s, m, worker, k, &last));
    if (k == 0) first = last;
  }
  if (!(last < 0.01f * first))
    return fail("worker %d: loss %g -> %g in %d steps", worker, first, last,
                STEPS);
  return 1;
}

static int check_training(void) {
  if (g_size < 2) {
    snprintf(g_why, sizeof g_why, "skipped: needs mpirun -np 2 or more");
    return 1;
  }
  struct model m;
  TRY(build(&m, 0.2f));
  weft_session* s = NULL;
  TRY(async_session(m.g, g_cluster, "ps", &s));
  int ok = 1;
  if (g_rank >= g_ps) {
    ok = work(&m, s);
    weft_session_destroy(s); /* ends this worker's lane */
    weft_graph_destroy(m.g);
    return ok;
  }
  /* A ps: initialize what it holds, serve, then read what the workers
   * made of it. */
  const int first = g_rank == 0, last = g_rank == g_ps - 1;
  if (first) TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, &m.init_w, 1, NULL));
  if (last)
    TRY(weft_session_run(s, NULL, NULL, 0, NULL, 0, &m.init_count, 1, NULL));
  TRY(weft_session_serve(s));
  float w[DIM];
  weft_tensor* out = NULL;
  if (last) {
    TRY(weft_session_run(s, NULL, NULL, 0, &m.count, 1, NULL, 0, &out));
    const float count = *(const float*)weft_tensor_data(out);
    weft_tensor_destroy(out);
    /* The failing steps added nothing; every worker's STEPS bumps
     * arrived. */
    if (count != (float)(STEPS * (g_size - g_ps)))
      ok = fail("count %g, want %d (steps of %d workers)", count,
                STEPS * (g_size - g_ps), g_size - g_ps);
  }
  if (first) {
    TRY(weft_session_run(s, NULL, NULL, 0, &m.w, 1, NULL, 0, &out));
    memcpy(w, weft_tensor_data(out), sizeof w);
    weft_tensor_destroy(out);
  }
  weft_session_destroy(s);
  weft_graph_destroy(m.g);
  if (!ok || !first) return ok;
  for (int c = 0; c < DIM; ++c)
    if (fabsf(w[c] - kTrue[c]) > 1e-2f)
      return fail("w[%d] = %g, want %g", c, w[c], kTrue[c]);
  if (g_size == 2) {
    /* One worker: its steps in its order, as one process makes them. */
    struct model ref;
    TRY(build(&ref, 0.2f));
    weft_session_options o;
    weft_session_options_init(&o);
    o.devices = "CPU";
    weft_session* rs = NULL;
    TRY(weft_session_create(ref.g, &o, &rs));
    weft_node* inits[2] = {ref.init_w, ref.init_count};
    TRY(weft_session_run(rs, NULL, NULL, 0, NULL, 0, inits, 2, NULL));
    float loss = 0;
    for (int k = 0; k < STEPS; ++k) TRY(step(rs, &ref, 0, k, &loss));
    weft_tensor* rw = NULL;
    TRY(weft_session_run(rs, NULL, NULL, 0, &ref.w, 1, NULL, 0, &rw));
    const float* r = weft_tensor_data(rw);
    for (int c = 0; c < DIM && ok; ++c)
      if (fabsf(w[c] - r[c]) > 1e-6f * (1 + fabsf(r[c])))
        ok = fail("w[%d] = %.9g through the ps, %.9g in one process", c,
                  w[c], r[c]);
    weft_tensor_destroy(rw);
    weft_session_destroy(rs);
    weft_graph_destroy(ref.g);
  }
  return ok;
}

/* ---- A loop split between a worker and a ps ------------------------------ */

/* while (i < 4) v = Tanh(v * nx) + v, nx = Neg(x) computed by the worker
 * (a loop invariant the ps reads: it crosses once per run, not per
 * iteration), the Mul on ps task 0, everything else on the worker that
 * runs it: every iteration crosses to the ps and back, and the ps runs the
 * loop's iterations on the predicate the worker sends it.  Each worker's
 * runs equal an ordinary session's. */
static weft_status* loop_cond(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  const float four = 4;
  weft_output in[2] = {v[0], constant(g, WEFT_FLOAT32, NULL, 0, &four,
                                      sizeof four)};
  return weft_graph_apply(g, "Less", NULL, in, 2, pred);
}

static weft_status* loop_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  const weft_output* nx = (const weft_output*)user;
  const float one = 1;
  weft_output in[2] = {v[0], constant(g, WEFT_FLOAT32, NULL, 0, &one,
                                      sizeof one)};
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_graph_apply(g, "Add", NULL, in, 2,
                                                &next[0]));
  weft_op_builder* b = weft_op_begin(g, "Mul", NULL);
  weft_op_add_input(b, v[1]);
  weft_op_add_input(b, *nx);
  weft_op_set_device(b, "/job:ps/task:0");
  weft_node* mul = NULL;
  WEFT_RETURN_IF_ERROR_IN_TEST(weft_op_finish(b, &mul));
  weft_output t;
  WEFT_RETURN_IF_ERROR_IN_TEST(
      weft_graph_apply(g, "Tanh", NULL, &(weft_output){mul, 0}, 1, &t));
  weft_output sum[2] = {t, v[1]};
  return weft_graph_apply(g, "Add", NULL, sum, 2, &next[1]);
}

static int check_split_loop(void) {
  if (g_size < 2) {
    snprintf(g_why, sizeof g_why, "skipped: needs mpirun -np 2 or more");
    return 1;
  }
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const int64_t dim = DIM;
  weft_output x, nx, y[2];
  TRY(weft_graph_placeholder(g, "x", WEFT_FLOAT32, &dim, 1, &x));
  TRY(weft_graph_apply(g, "Neg", NULL, &x, 1, &nx));
  const float zero = 0;
  weft_output vars[2] = {constant(g, WEFT_FLOAT32, NULL, 0, &zero,
                                  sizeof zero), x};
  TRY(weft_while_loop(g, loop_cond, loop_body, &nx, vars, 2, NULL, y));
  weft_session* s = NULL;
  TRY(async_session(g, g_cluster, "ps", &s));
  int ok = 1;
  if (g_rank < g_ps) {
    TRY(weft_session_serve(s));
  } else {
    weft_session_options o;
    weft_session_options_init(&o);
    o.devices = "CPU";
    weft_session* local = NULL;
    TRY(weft_session_create(g, &o, &local));
    for (int run = 0; ok && run < 3; ++run) {
      float xv[DIM];
      for (int c = 0; c < DIM; ++c)
        xv[c] = 0.25f * pseudo(g_rank * 31 + run * DIM + c);
      weft_tensor* xt = NULL;
      TRY(weft_tensor_create_copy(WEFT_FLOAT32, &dim, 1, xv, sizeof xv, &xt));
      weft_tensor *got = NULL, *want = NULL;
      TRY(weft_session_run(s, &x, &xt, 1, &y[1], 1, NULL, 0, &got));
      TRY(weft_session_run(local, &x, &xt, 1, &y[1], 1, NULL, 0, &want));
      const float* a = weft_tensor_data(got);
      const float* b = weft_tensor_data(want);
      for (int c = 0; c < DIM && ok; ++c)
        if (a[c] != b[c])
          ok = fail("worker %d run %d: v[%d] = %.9g through the ps, %.9g "
                    "in one process", g_rank - g_ps, run, c, a[c], b[c]);
      weft_tensor_destroy(got);
      weft_tensor_destroy(want);
      weft_tensor_destroy(xt);
    }
    weft_session_destroy(local);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return barrier() && ok;
}

/* ---- A worker that stops ----------------------------------------------------- */

/* The last worker stops (SIGSTOP, continued by a child 9 s later) without
 * ending its session: the ps's serve ends UNAVAILABLE naming it, once the
 * other workers have ended theirs. */
static int check_stopped_worker(void) {
  if (g_size < 2) {
    snprintf(g_why, sizeof g_why, "skipped: needs mpirun -np 2 or more");
    return 1;
  }
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  weft_session* s = NULL;
  TRY(async_session(g, "ps:1,worker", "ps", &s));
  int ok = 1;
  if (g_rank == g_size - 1) {
    const pid_t me = getpid();
    const pid_t child = fork();
    if (child == 0) {
      sleep(9);
      kill(me, SIGCONT);
      _exit(0);
    }
    if (child > 0) raise(SIGSTOP);
  } else if (g_rank == 0) {
    char want[64];
    snprintf(want, sizeof want, "task /job:worker/task:%d", g_size - 2);
    ok = expect_error(weft_session_serve(s), WEFT_UNAVAILABLE, want,
                      "serving a worker that stopped");
    if (!ok) {
      weft_session_destroy(s);
      weft_graph_destroy(g);
      return 0;
    }
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  /* The stopped worker's end of session reaches a ps still running. */
  return barrier() && ok;
}

int main(int argc, char** argv) {
  const int expected = argc > 1 ? atoi(argv[1]) : 1;
  /* "mpmd": started as `mpirun -np 1 PROG N mpmd : -np N-1 PROG N mpmd`,
   * the jobs' counts come from mpirun's app contexts. */
  g_mpmd = argc > 2 && strcmp(argv[2], "mpmd") == 0;
  if (!tap_start(expected, 4)) return 1;
  if (g_mpmd) {
    g_cluster = "ps,worker";
  } else if (g_size >= 4) {
    g_ps = 2;
    g_cluster = "ps:2,worker";
  }
  report("asynchronous cluster options are checked", check_options());
  report(g_ps == 1
             ? "workers train through a parameter server, each at its own "
               "pace"
             : "workers train through two parameter servers, each at its "
               "own pace",
         check_training());
  report("a loop split between each worker and a ps equals one process",
         check_split_loop());
  report("a worker that stops without ending its session ends serving "
         "UNAVAILABLE, naming it",
         check_stopped_worker());
  return g_failed == 0 ? 0 : 1;
}
