/* run() on one session from many threads at once, sessions created and
 * destroyed concurrently, and a graph growing while it runs.  Worker
 * threads never assert (Criterion can only abort the test's own thread):
 * they record their first problem and the test thread reports it. */
/* pthread barriers are POSIX, hidden by -std=c11 without this. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

enum { THREADS = 4, RUNS = 150, SESSION_ROUNDS = 15, N = 8 };

struct shared {
  weft_graph* graph;
  weft_session* session;
  weft_output x;      /* placeholder float32 [N] */
  weft_output affine; /* 2x + 3 */
  weft_output negated;
  pthread_barrier_t start;
};

struct worker {
  struct shared* shared;
  int id;
  int done;            /* runs that completed and checked out */
  char problem[512];   /* first problem seen, "" when none */
};

static void note(struct worker* w, const char* fmt, const char* detail,
                 int iteration) {
  if (w->problem[0] == '\0')
    snprintf(w->problem, sizeof w->problem, "thread %d, iteration %d: %s%s",
             w->id, iteration, fmt, detail);
}

static void note_status(struct worker* w, const char* what,
                        weft_status* status, int iteration) {
  char detail[400];
  snprintf(detail, sizeof detail, " (%s: %s)",
           weft_code_name(weft_status_code(status)),
           weft_status_message(status));
  note(w, what, detail, iteration);
  weft_status_destroy(status);
}

static void build_shared(struct shared* s) {
  s->graph = wt_graph_new();
  s->x = wt_placeholder(s->graph, "x", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output two = wt_const(s->graph, "two", wt_scalar_f32(2));
  weft_output three = wt_const(s->graph, "three", wt_scalar_f32(3));
  s->affine = wt_apply2(s->graph, "Add", "affine",
                        wt_apply2(s->graph, "Mul", "scaled", s->x, two), three);
  s->negated = wt_apply1(s->graph, "Neg", "negated", s->x);
  s->session = NULL;
}

/* Feeds values unique to (thread, iteration) so a result that leaked from
 * another thread's run is caught; fetches one or both outputs so several
 * plans are in use at once. */
static int run_and_check(struct worker* w, weft_session* session, int i) {
  struct shared* s = w->shared;
  float values[N];
  for (int k = 0; k < N; ++k) values[k] = (float)(w->id * 100000 + i * 10 + k);
  weft_tensor* fed = NULL;
  weft_status* status = weft_tensor_create_copy(
      WEFT_FLOAT32, WT_SHAPE(N), values, sizeof values, &fed);
  if (status != NULL) {
    note_status(w, "tensor_create_copy failed", status, i);
    return 0;
  }
  weft_output fetches[2] = {s->affine, s->negated};
  int num_fetches = (i % 3 == 0) ? 1 : 2;
  if (i % 3 == 1) fetches[0] = s->negated, fetches[1] = s->affine;
  weft_tensor* out[2] = {NULL, NULL};
  status = weft_session_run(session, &s->x, &fed, 1, fetches, num_fetches,
                            NULL, 0, out);
  weft_tensor_destroy(fed);
  if (status != NULL) {
    note_status(w, "run failed", status, i);
    return 0;
  }
  int ok = 1;
  for (int f = 0; f < num_fetches; ++f) {
    const float* got = weft_tensor_data(out[f]);
    int is_affine = fetches[f].node == s->affine.node;
    for (int k = 0; ok && k < N; ++k) {
      float expected = is_affine ? 2 * values[k] + 3 : -values[k];
      if (weft_tensor_element_count(out[f]) != N || got[k] != expected) {
        char detail[128];
        snprintf(detail, sizeof detail, " element %d is %g, expected %g", k,
                 (double)got[k], (double)expected);
        note(w, "wrong result:", detail, i);
        ok = 0;
      }
    }
    weft_tensor_destroy(out[f]);
  }
  return ok;
}

static void* run_many(void* arg) {
  struct worker* w = arg;
  pthread_barrier_wait(&w->shared->start);
  for (int i = 0; i < RUNS; ++i)
    if (run_and_check(w, w->shared->session, i)) w->done++;
  return NULL;
}

static void start_workers(struct shared* s, struct worker* workers,
                          pthread_t* threads, int count,
                          void* (*body)(void*)) {
  for (int t = 0; t < count; ++t) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].shared = s;
    workers[t].id = t;
    cr_assert_eq(pthread_create(&threads[t], NULL, body, &workers[t]), 0);
  }
}

static void join_and_report(struct worker* workers, pthread_t* threads,
                            int count, int expected_done) {
  for (int t = 0; t < count; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < count; ++t) {
    cr_expect_str_eq(workers[t].problem, "", "%s", workers[t].problem);
    cr_expect_eq(workers[t].done, expected_done, "thread %d finished %d of %d",
                 t, workers[t].done, expected_done);
  }
}

Test(concurrency, one_session_many_threads, .timeout = 60) {
  struct shared s;
  build_shared(&s);
  s.session = wt_session_new(s.graph, NULL);
  pthread_barrier_init(&s.start, NULL, THREADS);
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  start_workers(&s, workers, threads, THREADS, run_many);
  join_and_report(workers, threads, THREADS, RUNS);
  pthread_barrier_destroy(&s.start);
  weft_session_destroy(s.session);
  weft_graph_destroy(s.graph);
}

static void* session_churn(void* arg) {
  struct worker* w = arg;
  pthread_barrier_wait(&w->shared->start);
  for (int i = 0; i < SESSION_ROUNDS; ++i) {
    weft_session* session = NULL;
    weft_status* status =
        weft_session_create(w->shared->graph, NULL, &session);
    if (status != NULL) {
      note_status(w, "session_create failed", status, i);
      continue;
    }
    if (run_and_check(w, session, i) && run_and_check(w, session, i + 1))
      w->done++;
    weft_session_destroy(session);
  }
  return NULL;
}

Test(concurrency, sessions_created_and_destroyed_concurrently,
     .timeout = 60) {
  struct shared s;
  build_shared(&s);
  pthread_barrier_init(&s.start, NULL, THREADS);
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  start_workers(&s, workers, threads, THREADS, session_churn);
  join_and_report(workers, threads, THREADS, SESSION_ROUNDS);
  pthread_barrier_destroy(&s.start);
  weft_graph_destroy(s.graph);
}

/* Each thread owns a whole graph and its sessions: nothing is shared but
 * the library's global state (plugins, registries). */
static void* private_graphs(void* arg) {
  struct worker* w = arg;
  pthread_barrier_wait(&w->shared->start);
  for (int i = 0; i < SESSION_ROUNDS; ++i) {
    weft_graph* graph = NULL;
    weft_status* status = weft_graph_create(&graph);
    if (status != NULL) {
      note_status(w, "graph_create failed", status, i);
      continue;
    }
    weft_tensor* value = NULL;
    float v = (float)(w->id * 1000 + i);
    weft_output c, neg;
    weft_session* session = NULL;
    weft_tensor* out = NULL;
    status = weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &v, sizeof v,
                                     &value);
    if (status == NULL) status = weft_graph_constant(graph, "c", value, &c);
    if (status == NULL)
      status = weft_graph_apply(graph, "Neg", "neg", &c, 1, &neg);
    if (status == NULL) status = weft_session_create(graph, NULL, &session);
    if (status == NULL)
      status = weft_session_run(session, NULL, NULL, 0, &neg, 1, NULL, 0,
                                &out);
    if (status != NULL) {
      note_status(w, "private graph failed", status, i);
    } else if (*(const float*)weft_tensor_data(out) != -v) {
      note(w, "private graph gave a wrong result", "", i);
    } else {
      w->done++;
    }
    weft_tensor_destroy(out);
    weft_tensor_destroy(value);
    weft_session_destroy(session);
    weft_graph_destroy(graph);
  }
  return NULL;
}

Test(concurrency, private_graphs_in_parallel, .timeout = 60) {
  struct shared s;
  memset(&s, 0, sizeof s);
  pthread_barrier_init(&s.start, NULL, THREADS);
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  start_workers(&s, workers, threads, THREADS, private_graphs);
  join_and_report(workers, threads, THREADS, SESSION_ROUNDS);
  pthread_barrier_destroy(&s.start);
}

/* The graph grows (TensorFlow's extend) while a session runs it. */
struct grower {
  struct shared* shared;
  int added;
  char problem[512];
};

static void* grow_graph(void* arg) {
  struct grower* g = arg;
  pthread_barrier_wait(&g->shared->start);
  for (int i = 0; i < 100; ++i) {
    char name[32];
    snprintf(name, sizeof name, "grown_%d", i);
    weft_output out;
    weft_status* status =
        weft_graph_apply(g->shared->graph, "Relu", name, &g->shared->x, 1,
                         &out);
    if (status != NULL) {
      snprintf(g->problem, sizeof g->problem, "adding %s: %s", name,
               weft_status_message(status));
      weft_status_destroy(status);
      return NULL;
    }
    g->added++;
  }
  return NULL;
}

Test(concurrency, graph_grows_while_running, .timeout = 60) {
  struct shared s;
  build_shared(&s);
  s.session = wt_session_new(s.graph, NULL);
  enum { RUNNERS = THREADS - 1 };
  pthread_barrier_init(&s.start, NULL, RUNNERS + 1);
  struct worker workers[RUNNERS];
  pthread_t threads[RUNNERS];
  start_workers(&s, workers, threads, RUNNERS, run_many);
  struct grower grower = {&s, 0, ""};
  pthread_t grower_thread;
  cr_assert_eq(pthread_create(&grower_thread, NULL, grow_graph, &grower), 0);
  pthread_join(grower_thread, NULL);
  join_and_report(workers, threads, RUNNERS, RUNS);
  cr_expect_str_eq(grower.problem, "");
  cr_expect_eq(grower.added, 100);

  /* A node added after the session was created runs in it. */
  weft_node* last = weft_graph_node_by_name(s.graph, "grown_99");
  cr_assert_not_null(last);
  float values[N] = {-1, 2, -3, 4, -5, 6, -7, 8};
  weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(N), values);
  weft_output fetch = {last, 0};
  weft_tensor* out = wt_run1(s.session, &s.x, &fed, 1, fetch);
  double expected[N] = {0, 2, 0, 4, 0, 6, 0, 8};
  wt_expect_f32(out, expected, N, 0, 0);
  weft_tensor_destroy(out);
  weft_tensor_destroy(fed);

  pthread_barrier_destroy(&s.start);
  weft_session_destroy(s.session);
  weft_graph_destroy(s.graph);
}

/* A run counts plainly while its caller's thread runs it alone and
 * atomically once it hands nodes to the pool (Run::CountDown): a chain
 * that fans out into branches halfway, beside branches that start at the
 * roots, joined again; 1, 2 and 4 inter-op threads, every result exact. */
static weft_output add_chain(weft_graph* g, weft_output v, weft_output c,
                             int n) {
  for (int i = 0; i < n; ++i) v = wt_apply2(g, "Add", NULL, v, c);
  return v;
}

Test(concurrency, runs_that_go_to_the_pool_halfway, .timeout = 60) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, NULL, 0);
  weft_output one = wt_const_f32(g, "one", NULL, 0, (float[]){1});
  weft_output two = wt_const_f32(g, "two", NULL, 0, (float[]){2});
  weft_output trunk = add_chain(g, x, one, 20); /* x + 20 */
  weft_output sum = {NULL, 0};
  for (int b = 0; b < 4; ++b) {
    /* (x + 20 + (10 + b) c_b) (x + 2 (3 + b)), c_b = 2, 1, 2, 1 */
    weft_output late = add_chain(g, trunk, b % 2 ? one : two, 10 + b);
    weft_output early = add_chain(g, x, two, 3 + b);
    weft_output both = wt_apply2(g, "Mul", NULL, late, early);
    sum = b == 0 ? both : wt_apply2(g, "Add", NULL, sum, both);
  }
  const int32_t inter_op[3] = {1, 2, 4};
  for (int t = 0; t < 3; ++t) {
    weft_session* s = wt_session_threads(g, inter_op[t], 1);
    for (int r = 0; r < 200; ++r) {
      const float xv = (float)(r % 7 - 3);
      double want = 0;
      for (int b = 0; b < 4; ++b)
        want += (xv + 20 + (10 + b) * (b % 2 ? 1 : 2)) * (xv + 2 * (3 + b));
      weft_tensor* feed = wt_scalar_f32(xv);
      weft_tensor* got = wt_run1(s, &x, &feed, 1, sum);
      const float v = *(const float*)weft_tensor_data(got);
      cr_assert_eq(v, (float)want, "%d inter-op threads, run %d, x = %g: %g, "
                   "expected %g", inter_op[t], r, xv, v, want);
      weft_tensor_destroy(got);
      weft_tensor_destroy(feed);
    }
    weft_session_destroy(s);
  }
  weft_graph_destroy(g);
}
