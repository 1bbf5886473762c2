/* The runtime's threads under ThreadSanitizer, without Criterion (whose
 * runner cannot start under TSan: Snaipe/Criterion#274).  Covers what
 * tests/test_concurrency.c checks, and variables and several sessions:
 * every result is checked against values computed here; TSan itself
 * (halt_on_error=1 in TSAN_OPTIONS) fails the program on any report.
 * Prints TAP; exits non-zero when a case fails.
 *
 * Worker threads record their first problem; the main thread reports. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/control.h"
#include "weft/weft.h"

enum { THREADS = 8, RUNS = 200, ROUNDS = 20, N = 8 };

static char g_problem[1024];
static pthread_mutex_t g_problem_lock = PTHREAD_MUTEX_INITIALIZER;

/* Records the first problem of the current case (any thread). */
static void fail(const char* fmt, ...) {
  pthread_mutex_lock(&g_problem_lock);
  if (g_problem[0] == '\0') {
    va_list args;
    va_start(args, fmt);
    vsnprintf(g_problem, sizeof g_problem, fmt, args);
    va_end(args);
  }
  pthread_mutex_unlock(&g_problem_lock);
}

/* True when status is OK; otherwise records it (naming `what`). */
static int ok(weft_status* status, const char* what) {
  if (status == NULL) return 1;
  fail("%s: %s: %s", what, weft_code_name(weft_status_code(status)),
       weft_status_message(status));
  weft_status_destroy(status);
  return 0;
}

static weft_tensor* f32_tensor(const float* values, int64_t n) {
  weft_tensor* t = NULL;
  int64_t dims[1] = {n};
  if (!ok(weft_tensor_create_copy(WEFT_FLOAT32, n < 0 ? NULL : dims,
                                  n < 0 ? 0 : 1, values,
                                  sizeof(float) * (size_t)(n < 0 ? 1 : n), &t),
          "tensor_create_copy"))
    return NULL;
  return t;
}

static weft_output constant(weft_graph* g, const char* name, float v) {
  weft_output out = {NULL, -1};
  weft_tensor* t = f32_tensor(&v, -1);
  if (t != NULL) ok(weft_graph_constant(g, name, t, &out), name);
  weft_tensor_destroy(t);
  return out;
}

static weft_output apply(weft_graph* g, const char* op, const char* name,
                         weft_output a, weft_output b) {
  weft_output inputs[2] = {a, b};
  weft_output out = {NULL, -1};
  ok(weft_graph_apply(g, op, name, inputs, b.node == NULL ? 1 : 2, &out),
     name);
  return out;
}

static const weft_output NONE = {NULL, -1};

static weft_session* new_session(weft_graph* g, int inter_op_threads) {
  weft_session_options options;
  weft_session_options_init(&options);
  options.inter_op_threads = inter_op_threads;
  weft_session* s = NULL;
  if (!ok(weft_session_create(g, &options, &s), "session_create")) return NULL;
  return s;
}

struct arg {
  void* shared;
  int id;
};

/* Workers wait here so that they all start at once. */
static pthread_barrier_t g_start;

/* Runs `count` threads of `body` (each given shared and its id), released
 * together by g_start, and joins them. */
static void run_threads(void* (*body)(void*), void* shared, int count) {
  pthread_barrier_init(&g_start, NULL, (unsigned)count);
  pthread_t threads[32];
  struct arg args[32];
  for (int t = 0; t < count; ++t) {
    args[t].shared = shared;
    args[t].id = t;
    if (pthread_create(&threads[t], NULL, body, &args[t]) != 0) {
      /* The started ones wait at g_start for the rest: give up. */
      fprintf(stderr, "pthread_create failed\n");
      exit(2);
    }
  }
  for (int t = 0; t < count; ++t) pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&g_start);
}


/* ---- x -> 2x + 3 and -x, fed per (thread, iteration) ------------------- */

struct affine {
  weft_graph* graph;
  weft_session* session;
  weft_output x, affine, negated;
};

static int build_affine(struct affine* a) {
  memset(a, 0, sizeof *a);
  if (!ok(weft_graph_create(&a->graph), "graph_create")) return 0;
  int64_t dims[1] = {N};
  ok(weft_graph_placeholder(a->graph, "x", WEFT_FLOAT32, dims, 1, &a->x), "x");
  a->affine = apply(a->graph, "Add", "affine",
                    apply(a->graph, "Mul", "scaled", a->x,
                          constant(a->graph, "two", 2)),
                    constant(a->graph, "three", 3));
  a->negated = apply(a->graph, "Neg", "negated", a->x, NONE);
  return g_problem[0] == '\0';
}

/* One run with values unique to (id, i), so a result leaking from another
 * thread's run is caught; fetches one or both outputs in either order.
 * With `cancellable`, a run that ends CANCELLED counts as good (and
 * *cancelled is set). */
static int run_affine_or_cancelled(struct affine* a, weft_session* s, int id,
                                   int i, int cancellable, int* cancelled) {
  float values[N];
  for (int k = 0; k < N; ++k) values[k] = (float)(id * 100000 + i * 10 + k);
  weft_tensor* fed = f32_tensor(values, N);
  if (fed == NULL) return 0;
  weft_output fetches[2] = {a->affine, a->negated};
  int count = (i % 3 == 0) ? 1 : 2;
  if (i % 3 == 1) fetches[0] = a->negated, fetches[1] = a->affine;
  weft_tensor* out[2] = {NULL, NULL};
  weft_status* st =
      weft_session_run(s, &a->x, &fed, 1, fetches, count, NULL, 0, out);
  weft_tensor_destroy(fed);
  if (cancellable && st != NULL && weft_status_code(st) == WEFT_CANCELLED) {
    weft_status_destroy(st);
    *cancelled = 1;
    return out[0] == NULL && out[1] == NULL;
  }
  int good = ok(st, "run");
  for (int f = 0; good && f < count; ++f) {
    const float* got = weft_tensor_data(out[f]);
    int is_affine = fetches[f].node == a->affine.node;
    if (weft_tensor_element_count(out[f]) != N) {
      fail("thread %d run %d: %lld elements", id, i,
           (long long)weft_tensor_element_count(out[f]));
      good = 0;
    }
    for (int k = 0; good && k < N; ++k) {
      float want = is_affine ? 2 * values[k] + 3 : -values[k];
      if (got[k] != want) {
        fail("thread %d run %d: element %d is %.9g, expected %.9g", id, i, k,
             (double)got[k], (double)want);
        good = 0;
      }
    }
  }
  for (int f = 0; f < count; ++f) weft_tensor_destroy(out[f]);
  return good;
}

static int run_affine(struct affine* a, weft_session* s, int id, int i) {
  return run_affine_or_cancelled(a, s, id, i, 0, NULL);
}

static void* affine_runner(void* p) {
  struct arg* arg = p;
  struct affine* a = arg->shared;
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < RUNS; ++i)
    if (!run_affine(a, a->session, arg->id, i)) break;
  return NULL;
}

static void one_session_many_threads(void) {
  struct affine a;
  if (!build_affine(&a)) return;
  a.session = new_session(a.graph, 1);
  if (a.session != NULL) {
    run_threads(affine_runner, &a, THREADS);
  }
  weft_session_destroy(a.session);
  weft_graph_destroy(a.graph);
}

/* ---- runs cancelled while others start and end ---------------------------- */

/* More runs at once than a session lists without a lock (16 entries), and a
 * thread cancelling all of them the while (weft_session_cancel holds a
 * run's entry while it reaches the run; the run waits for it back before
 * it leaves): every run ends with its own values or CANCELLED. */
enum { CANCEL_RUNNERS = 20 };

struct cancelling {
  struct affine a;
  pthread_mutex_t lock;
  int runners_done, cancelled;
};

static void* run_or_cancel(void* p) {
  struct arg* arg = p;
  struct cancelling* c = arg->shared;
  pthread_barrier_wait(&g_start);
  if (arg->id == 0) {
    for (;;) {
      pthread_mutex_lock(&c->lock);
      int done = c->runners_done == CANCEL_RUNNERS;
      pthread_mutex_unlock(&c->lock);
      if (done) break;
      weft_session_cancel(c->a.session);
    }
    return NULL;
  }
  int cancelled = 0;
  for (int i = 0; i < RUNS / 4; ++i) {
    int this_one = 0;
    if (!run_affine_or_cancelled(&c->a, c->a.session, arg->id, i, 1,
                                 &this_one))
      break;
    cancelled += this_one;
  }
  pthread_mutex_lock(&c->lock);
  c->runners_done++;
  c->cancelled += cancelled;
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

static void runs_cancelled_while_they_come_and_go(void) {
  struct cancelling c;
  if (!build_affine(&c.a)) return;
  pthread_mutex_init(&c.lock, NULL);
  c.runners_done = c.cancelled = 0;
  c.a.session = new_session(c.a.graph, 1);
  if (c.a.session != NULL) run_threads(run_or_cancel, &c, CANCEL_RUNNERS + 1);
  /* The session runs on after the cancellations. */
  if (c.a.session != NULL && !run_affine(&c.a, c.a.session, 0, 0))
    fail("a run after the cancellations failed");
  if (c.cancelled == 0)
    fail("no run was cancelled: the case tested nothing");
  weft_session_destroy(c.a.session);
  weft_graph_destroy(c.a.graph);
  pthread_mutex_destroy(&c.lock);
}

/* ---- sessions created and destroyed while others run -------------------- */

static void* session_churn(void* p) {
  struct arg* arg = p;
  struct affine* a = arg->shared;
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < ROUNDS; ++i) {
    weft_session* s = new_session(a->graph, 1 + i % 2);
    if (s == NULL) return NULL;
    int good = run_affine(a, s, arg->id, i) && run_affine(a, s, arg->id, i + 1);
    weft_session_destroy(s);
    if (!good) return NULL;
  }
  return NULL;
}

static void sessions_created_and_destroyed_concurrently(void) {
  struct affine a;
  if (!build_affine(&a)) return;
  run_threads(session_churn, &a, THREADS);
  weft_graph_destroy(a.graph);
}

/* ---- each thread builds and runs its own graphs -------------------------- */

static void* private_graphs(void* p) {
  struct arg* arg = p;
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < ROUNDS; ++i) {
    weft_graph* g = NULL;
    if (!ok(weft_graph_create(&g), "graph_create")) return NULL;
    float v = (float)(arg->id * 1000 + i);
    weft_output c = constant(g, "c", v);
    weft_output y = apply(g, "Add", "y", apply(g, "Neg", "neg", c, NONE),
                          constant(g, "one", 1));
    weft_session* s = g_problem[0] ? NULL : new_session(g, 1);
    weft_tensor* out = NULL;
    if (s != NULL &&
        ok(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &out), "run") &&
        *(const float*)weft_tensor_data(out) != 1 - v)
      fail("thread %d graph %d: %g, expected %g", arg->id, i,
           (double)*(const float*)weft_tensor_data(out), (double)(1 - v));
    weft_tensor_destroy(out);
    weft_session_destroy(s);
    weft_graph_destroy(g);
  }
  return NULL;
}

static void private_graphs_in_parallel(void) {
  run_threads(private_graphs, NULL, THREADS);
}

/* ---- the graph grows (TensorFlow's extend) while a session runs it ------ */

static void* grow_or_run(void* p) {
  struct arg* arg = p;
  struct affine* a = arg->shared;
  if (arg->id != 0) return affine_runner(p);
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < 50; ++i) {
    char name[32];
    snprintf(name, sizeof name, "grown_%d", i);
    weft_output out = apply(a->graph, "Relu", name, a->x, NONE);
    if (out.node == NULL) return NULL;
  }
  return NULL;
}

static void graph_grows_while_running(void) {
  struct affine a;
  if (!build_affine(&a)) return;
  a.session = new_session(a.graph, 2);
  if (a.session != NULL) {
    run_threads(grow_or_run, &a, 4);
    /* A node added after the session was created runs in it. */
    weft_node* last = weft_graph_node_by_name(a.graph, "grown_49");
    float values[N] = {-1, 2, -3, 4, -5, 6, -7, 8};
    weft_tensor* fed = f32_tensor(values, N);
    weft_tensor* out = NULL;
    weft_output fetch = {last, 0};
    if (last == NULL) {
      fail("grown_49 is missing");
    } else if (fed != NULL &&
               ok(weft_session_run(a.session, &a.x, &fed, 1, &fetch, 1, NULL,
                                   0, &out), "run grown_49")) {
      const float* got = weft_tensor_data(out);
      for (int k = 0; k < N; ++k)
        if (got[k] != (values[k] > 0 ? values[k] : 0)) {
          fail("grown_49 element %d is %g", k, (double)got[k]);
          break;
        }
    }
    weft_tensor_destroy(out);
    weft_tensor_destroy(fed);
  }
  weft_session_destroy(a.session);
  weft_graph_destroy(a.graph);
}

/* ---- a variable read while AssignAdd runs from several threads ---------- */

enum { ADDERS = 4, READERS = 2, ADDS = 200, SESSIONS = 3 };

struct counter {
  weft_graph* graph;
  weft_output total, bump;
  weft_node* init;
  weft_session* sessions[SESSIONS];
  int num_sessions;
};

static int build_counter(struct counter* c) {
  memset(c, 0, sizeof *c);
  if (!ok(weft_graph_create(&c->graph), "graph_create")) return 0;
  if (!ok(weft_graph_variable(c->graph, "total", constant(c->graph, "zero", 0),
                              &c->total, &c->init), "variable"))
    return 0;
  c->bump = apply(c->graph, "AssignAdd", "bump", c->total,
                  constant(c->graph, "one", 1));
  return g_problem[0] == '\0';
}

static void* add_or_read(void* p) {
  struct arg* arg = p;
  struct counter* c = arg->shared;
  weft_session* s = c->sessions[arg->id % c->num_sessions];
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < ADDS; ++i) {
    if (arg->id < ADDERS * c->num_sessions) {
      if (!ok(weft_session_run(s, NULL, NULL, 0, NULL, 0, &c->bump.node, 1,
                               NULL), "AssignAdd run"))
        return NULL;
    } else {
      weft_tensor* out = NULL;
      if (!ok(weft_session_run(s, NULL, NULL, 0, &c->total, 1, NULL, 0, &out),
              "read run"))
        return NULL;
      float v = *(const float*)weft_tensor_data(out);
      weft_tensor_destroy(out);
      /* Counts up by whole steps from 0 to the final sum. */
      if (v < 0 || v > ADDERS * ADDS || v != (float)(int)v) {
        fail("read %g while adding", (double)v);
        return NULL;
      }
    }
  }
  return NULL;
}

/* `sessions` sessions over one graph, each with ADDERS adders and READERS
 * readers; each session's variable must end at ADDERS * ADDS. */
static void counted(int sessions) {
  struct counter c;
  if (!build_counter(&c)) return;
  c.num_sessions = sessions;
  for (int k = 0; k < sessions; ++k) {
    c.sessions[k] = new_session(c.graph, 1);
    if (c.sessions[k] == NULL ||
        !ok(weft_session_run(c.sessions[k], NULL, NULL, 0, NULL, 0, &c.init, 1,
                             NULL), "initializer"))
      goto done;
  }
  int threads = (ADDERS + READERS) * sessions;
  /* adders first (ids below ADDERS * sessions), then readers */
  run_threads(add_or_read, &c, threads);
  for (int k = 0; k < sessions && g_problem[0] == '\0'; ++k) {
    weft_tensor* out = NULL;
    if (!ok(weft_session_run(c.sessions[k], NULL, NULL, 0, &c.total, 1, NULL,
                             0, &out), "final read"))
      break;
    float v = *(const float*)weft_tensor_data(out);
    weft_tensor_destroy(out);
    if (v != (float)(ADDERS * ADDS))
      fail("session %d: total %g, expected %d", k, (double)v, ADDERS * ADDS);
  }
done:
  for (int k = 0; k < sessions; ++k) weft_session_destroy(c.sessions[k]);
  weft_graph_destroy(c.graph);
}

static void variable_read_while_assign_add_runs(void) { counted(1); }
static void several_sessions_over_one_graph(void) { counted(SESSIONS); }

/* ---- a graph of independent branches, inter_op_threads 4 ---------------- */

struct wide {
  weft_graph* graph;
  weft_session* session;
  weft_output x, y;
};

enum { BRANCHES = 6, DEPTH = 5 };

/* y = sum over b of chain_b(x), chain_b: DEPTH steps of v + b and v * 2, then Relu;
 * alternating Add and Mul so each branch is a chain of nodes the
 * scheduler can run beside the others. */
static float wide_expected(float x) {
  float sum = 0;
  for (int b = 0; b < BRANCHES; ++b) {
    float v = x;
    for (int d = 0; d < DEPTH; ++d) v = (d % 2 == 0) ? v + (float)b : v * 2;
    sum += v > 0 ? v : 0;
  }
  return sum;
}

static int build_wide(struct wide* w) {
  memset(w, 0, sizeof *w);
  if (!ok(weft_graph_create(&w->graph), "graph_create")) return 0;
  int64_t dims[1] = {N};
  ok(weft_graph_placeholder(w->graph, "x", WEFT_FLOAT32, dims, 1, &w->x), "x");
  weft_output two = constant(w->graph, "two", 2);
  weft_output sum = NONE;
  for (int b = 0; b < BRANCHES && g_problem[0] == '\0'; ++b) {
    char name[32];
    snprintf(name, sizeof name, "b%d", b);
    weft_output offset = constant(w->graph, name, (float)b);
    weft_output v = w->x;
    for (int d = 0; d < DEPTH; ++d) {
      snprintf(name, sizeof name, "b%d_%d", b, d);
      v = apply(w->graph, d % 2 == 0 ? "Add" : "Mul", name, v,
                d % 2 == 0 ? offset : two);
    }
    snprintf(name, sizeof name, "b%d_relu", b);
    v = apply(w->graph, "Relu", name, v, NONE);
    snprintf(name, sizeof name, "sum%d", b);
    sum = b == 0 ? v : apply(w->graph, "Add", name, sum, v);
  }
  w->y = sum;
  return g_problem[0] == '\0';
}

static void* wide_runner(void* p) {
  struct arg* arg = p;
  struct wide* w = arg->shared;
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < RUNS / 2; ++i) {
    float values[N];
    for (int k = 0; k < N; ++k)
      values[k] = (float)((arg->id * 37 + i * 11 + k) % 64) - 20;
    weft_tensor* fed = f32_tensor(values, N);
    weft_tensor* out = NULL;
    int good = fed != NULL && ok(weft_session_run(w->session, &w->x, &fed, 1,
                                                  &w->y, 1, NULL, 0, &out),
                                 "run");
    weft_tensor_destroy(fed);
    for (int k = 0; good && k < N; ++k) {
      float got = ((const float*)weft_tensor_data(out))[k];
      if (got != wide_expected(values[k])) {
        fail("thread %d run %d: element %d is %.9g, expected %.9g", arg->id, i, k,
             (double)got, (double)wide_expected(values[k]));
        good = 0;
      }
    }
    weft_tensor_destroy(out);
    if (!good) return NULL;
  }
  return NULL;
}

static void branches_with_inter_op_threads(void) {
  struct wide w;
  if (!build_wide(&w)) return;
  w.session = new_session(w.graph, 4);
  if (w.session != NULL) {
    run_threads(wide_runner, &w, 4);
  }
  weft_session_destroy(w.session);
  weft_graph_destroy(w.graph);
}

/* ---- loops: a while loop with a cond and a TensorArray inside, its
 * iterations overlapping (parallel_iterations 8) on 4 inter-op threads,
 * run from 4 threads with different trip counts ---------------------- */

struct looped {
  weft_graph* graph;
  weft_session* session;
  weft_output x, n, y, s;
  const char* array;
};

static weft_output int_const(weft_graph* g, int32_t v) {
  weft_output out = {NULL, -1};
  weft_tensor* t = NULL;
  if (ok(weft_tensor_create_copy(WEFT_INT32, NULL, 0, &v, sizeof v, &t),
         "int tensor"))
    ok(weft_graph_constant(g, NULL, t, &out), "int constant");
  weft_tensor_destroy(t);
  return out;
}

static weft_status* loop_cond(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)n;
  struct looped* L = user;
  *pred = apply(g, "Less", NULL, v[0], L->n);
  return NULL;
}

struct step {
  weft_output s, xi;
};

static weft_status* add_after(weft_graph* g, void* user, weft_output* out,
                              int32_t n) {
  (void)n;
  struct step* S = user;
  out[0] = apply(g, "Add", NULL, S->s, S->xi);
  return NULL;
}

static weft_status* add_before(weft_graph* g, void* user, weft_output* out,
                               int32_t n) {
  (void)n;
  struct step* S = user;
  out[0] = apply(g, "Add", NULL, S->xi, S->s);
  return NULL;
}

static weft_status* loop_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  struct looped* L = user;
  weft_op_builder* b = weft_op_begin(g, "Cast", NULL);
  weft_op_add_input(b, v[0]);
  weft_op_set_attr_dtype(b, "DstT", WEFT_FLOAT32);
  weft_node* cast = NULL;
  weft_status* st = weft_op_finish(b, &cast);
  if (st != NULL) return st;
  /* s += x * i, through one branch or the other of a cond. */
  struct step S = {v[1], apply(g, "Mul", NULL, L->x, (weft_output){cast, 0})};
  weft_output pred = apply(g, "Less", NULL, v[0], int_const(g, 3));
  weft_output s_next;
  st = weft_cond(g, NULL, pred, add_after, add_before, &S, 1, &s_next);
  if (st != NULL) return st;
  weft_tensor_array ta = {L->array, v[2]};
  st = weft_tensor_array_write(g, &ta, v[0], s_next);
  if (st != NULL) return st;
  next[0] = apply(g, "Add", NULL, v[0], int_const(g, 1));
  next[1] = s_next;
  next[2] = ta.flow;
  return NULL;
}

static int build_looped(struct looped* L) {
  memset(L, 0, sizeof *L);
  if (!ok(weft_graph_create(&L->graph), "graph_create")) return 0;
  weft_graph* g = L->graph;
  int64_t dims[1] = {N};
  ok(weft_graph_placeholder(g, "x", WEFT_FLOAT32, dims, 1, &L->x), "x");
  ok(weft_graph_placeholder(g, "n", WEFT_INT32, NULL, 0, &L->n), "n");
  weft_tensor_array ta;
  if (!ok(weft_tensor_array_create(g, "sums", WEFT_FLOAT32, L->n, NULL, 0,
                                   &ta),
          "tensor_array_create"))
    return 0;
  L->array = ta.name;
  weft_output zeros = apply(g, "ZerosLike", NULL, L->x, NONE);
  weft_output init[3] = {int_const(g, 0), zeros, ta.flow}, out[3];
  weft_while_options o = {sizeof o, "sums", 8, 0, NULL};
  if (!ok(weft_while_loop(g, loop_cond, loop_body, L, init, 3, &o, out),
          "while_loop"))
    return 0;
  weft_tensor_array done = {ta.name, out[2]};
  weft_output stacked;
  if (!ok(weft_tensor_array_stack(g, done, &stacked), "stack")) return 0;
  weft_op_builder* b = weft_op_begin(g, "Sum", "y");
  weft_op_add_input(b, stacked);
  int64_t axis = 0;
  weft_op_set_attr_int_list(b, "axes", &axis, 1);
  weft_node* y = NULL;
  if (!ok(weft_op_finish(b, &y), "sum")) return 0;
  L->y = (weft_output){y, 0};
  L->s = out[1];
  return g_problem[0] == '\0';
}

static void* looped_runner(void* p) {
  struct arg* arg = p;
  struct looped* L = arg->shared;
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < RUNS / 4; ++i) {
    int32_t n = 1 + (arg->id * 7 + i * 3) % 20;
    float values[N];
    for (int k = 0; k < N; ++k) values[k] = (float)((arg->id + i + k) % 5) - 2;
    weft_tensor* fed[2] = {f32_tensor(values, N), NULL};
    ok(weft_tensor_create_copy(WEFT_INT32, NULL, 0, &n, sizeof n, &fed[1]),
       "n tensor");
    weft_output feeds[2] = {L->x, L->n}, fetches[2] = {L->y, L->s};
    weft_tensor* out[2] = {NULL, NULL};
    int good = fed[0] != NULL && fed[1] != NULL &&
               ok(weft_session_run(L->session, feeds, fed, 2, fetches, 2, NULL,
                                   0, out),
                  "run");
    weft_tensor_destroy(fed[0]);
    weft_tensor_destroy(fed[1]);
    /* After iteration k, s = x * k(k+1)/2; y sums those for k < n. */
    for (int k = 0; good && k < N; ++k) {
      float got_y = ((const float*)weft_tensor_data(out[0]))[k];
      float got_s = ((const float*)weft_tensor_data(out[1]))[k];
      float want_y = values[k] * (float)((n - 1) * n * (n + 1) / 6);
      float want_s = values[k] * (float)(n * (n - 1) / 2);
      if (got_y != want_y || got_s != want_s) {
        fail("thread %d run %d (n %d): element %d is %.9g / %.9g, expected "
             "%.9g / %.9g", arg->id, i, n, k, (double)got_y, (double)got_s,
             (double)want_y, (double)want_s);
        good = 0;
      }
    }
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
    if (!good) return NULL;
  }
  return NULL;
}

static void loops_with_overlapping_iterations(void) {
  struct looped L;
  if (build_looped(&L)) {
    L.session = new_session(L.graph, 4);
    if (L.session != NULL) run_threads(looped_runner, &L, 4);
  }
  weft_session_destroy(L.session);
  weft_graph_destroy(L.graph);
}

/* ------------------------------------------------------------------------ */

static const struct {
  const char* name;
  void (*run)(void);
} cases[] = {
    {"one_session_many_threads", one_session_many_threads},
    {"runs_cancelled_while_they_come_and_go",
     runs_cancelled_while_they_come_and_go},
    {"sessions_created_and_destroyed_concurrently",
     sessions_created_and_destroyed_concurrently},
    {"private_graphs_in_parallel", private_graphs_in_parallel},
    {"graph_grows_while_running", graph_grows_while_running},
    {"variable_read_while_assign_add_runs",
     variable_read_while_assign_add_runs},
    {"several_sessions_over_one_graph", several_sessions_over_one_graph},
    {"branches_with_inter_op_threads", branches_with_inter_op_threads},
    {"loops_with_overlapping_iterations", loops_with_overlapping_iterations},
};

int main(void) {
  int count = (int)(sizeof cases / sizeof cases[0]), failed = 0;
  printf("TAP version 13\n1..%d\n", count);
  fflush(stdout);
  for (int k = 0; k < count; ++k) {
    g_problem[0] = '\0';
    cases[k].run();
    if (g_problem[0] == '\0') {
      printf("ok %d - %s\n", k + 1, cases[k].name);
    } else {
      ++failed;
      printf("not ok %d - %s\n# %s\n", k + 1, cases[k].name, g_problem);
    }
    fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}
