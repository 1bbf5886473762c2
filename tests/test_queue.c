#define _DEFAULT_SOURCE
/* Queues and asynchronous runtime ops (issue 15): FIFOQueue,
 * RandomShuffleQueue and PaddingFIFOQueue shared across runs of a session;
 * a dequeue that waits parks without holding a thread and is ended by an
 * enqueue from another run, a close, a deadline (run option timeout_ms) or
 * weft_session_cancel; the session stays usable afterwards.  Public API
 * only. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A queue of one float32 component of shape `dims` (rank -1: any shape). */
static weft_output queue_op(weft_graph* g, const char* op, const char* name,
                            const int64_t* dims, int32_t rank,
                            int64_t capacity) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  const int64_t types[1] = {WEFT_FLOAT32};
  weft_op_set_attr_int_list(b, "component_types", types, 1);
  if (rank >= 0) {
    int64_t shapes[1 + WEFT_MAX_RANK];
    shapes[0] = rank;
    for (int32_t i = 0; i < rank; ++i) shapes[1 + i] = dims[i];
    weft_op_set_attr_int_list(b, "shapes", shapes, 1 + rank);
  }
  weft_op_set_attr_int(b, "capacity", capacity);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

static weft_node* queue_node(weft_graph* g, const char* op, const char* name,
                             weft_output handle, const weft_output* inputs,
                             int n) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, handle);
  for (int i = 0; i < n; ++i) weft_op_add_input(b, inputs[i]);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return node;
}

/* The graph every test uses: a queue q of float32 scalars or vectors with
 * enqueue (fed x), dequeue, dequeue_many (fed n), dequeue_up_to, close,
 * close_cancel and size. */
struct qgraph {
  weft_graph* g;
  weft_output handle, x, n;
  weft_node *enqueue, *enqueue_many, *dequeue, *dequeue_many, *up_to, *close,
      *close_cancel, *size;
};

static struct qgraph make_graph(const char* kind, const int64_t* dims,
                                int32_t rank, int64_t capacity) {
  struct qgraph q;
  q.g = wt_graph_new();
  q.handle = queue_op(q.g, kind, "q", dims, rank, capacity);
  q.x = wt_placeholder(q.g, "x", WEFT_FLOAT32, NULL, -1);
  q.n = wt_placeholder(q.g, "n", WEFT_INT32, NULL, 0);
  q.enqueue = queue_node(q.g, "QueueEnqueue", "enqueue", q.handle, &q.x, 1);
  q.enqueue_many =
      queue_node(q.g, "QueueEnqueueMany", "enqueue_many", q.handle, &q.x, 1);
  q.dequeue = queue_node(q.g, "QueueDequeue", "dequeue", q.handle, NULL, 0);
  q.dequeue_many =
      queue_node(q.g, "QueueDequeueMany", "dequeue_many", q.handle, &q.n, 1);
  q.up_to = queue_node(q.g, "QueueDequeueUpTo", "up_to", q.handle, &q.n, 1);
  q.close = queue_node(q.g, "QueueClose", "close", q.handle, NULL, 0);
  weft_op_builder* b = weft_op_begin(q.g, "QueueClose", "close_cancel");
  weft_op_add_input(b, q.handle);
  weft_op_set_attr_bool(b, "cancel_pending_enqueues", 1);
  WT_OK(weft_op_finish(b, &q.close_cancel));
  q.size = queue_node(q.g, "QueueSize", "size", q.handle, NULL, 0);
  return q;
}

static weft_session* session_with(weft_graph* g, int32_t inter_op) {
  return wt_session_threads(g, inter_op, 1);
}

static weft_status* enqueue_f32(weft_session* s, const struct qgraph* q,
                                int many, const float* v, int64_t n) {
  weft_tensor* t = many ? wt_tensor(WEFT_FLOAT32, WT_DIMS(n), 1, v)
                        : wt_tensor(WEFT_FLOAT32, NULL, 0, v);
  weft_node* target = many ? q->enqueue_many : q->enqueue;
  weft_status* st =
      weft_session_run(s, &q->x, &t, 1, NULL, 0, &target, 1, NULL);
  weft_tensor_destroy(t);
  return st;
}

/* Runs `node` output 0 (feeding n when given) with a timeout (0: none). */
static weft_status* fetch(weft_session* s, const struct qgraph* q,
                          weft_node* node, int32_t n, int64_t timeout_ms,
                          weft_tensor** out) {
  weft_run_options o;
  weft_run_options_init(&o);
  o.timeout_ms = timeout_ms;
  weft_tensor* nv = wt_tensor(WEFT_INT32, NULL, 0, &n);
  weft_output f = {node, 0};
  weft_status* st = weft_session_run_with_options(
      s, &o, &q->n, &nv, node == q->dequeue ? 0 : 1, &f, 1, NULL, 0, out,
      NULL);
  weft_tensor_destroy(nv);
  return st;
}

static float scalar(weft_tensor* t) {
  float v = *(const float*)weft_tensor_data(t);
  weft_tensor_destroy(t);
  return v;
}

static int32_t size_of(weft_session* s, const struct qgraph* q) {
  weft_output f = {q->size, 0};
  weft_tensor* out = NULL;
  WT_OK(weft_session_run(s, NULL, NULL, 0, &f, 1, NULL, 0, &out));
  int32_t v = *(const int32_t*)weft_tensor_data(out);
  weft_tensor_destroy(out);
  return v;
}

static void run_target(weft_session* s, weft_node* node) {
  WT_OK(weft_session_run(s, NULL, NULL, 0, NULL, 0, &node, 1, NULL));
}

Test(queue, fifo_order_and_size_across_runs) {
  for (int32_t inter = 1; inter <= 2; ++inter) {
    struct qgraph q = make_graph("FIFOQueue", NULL, 0, -1);
    weft_session* s = session_with(q.g, inter);
    cr_expect_eq(size_of(s, &q), 0);
    for (int i = 0; i < 5; ++i) {
      float v = (float)(i * 10);
      WT_OK(enqueue_f32(s, &q, 0, &v, 1));
    }
    const float many[3] = {50, 60, 70};
    WT_OK(enqueue_f32(s, &q, 1, many, 3));
    cr_expect_eq(size_of(s, &q), 8);
    for (int i = 0; i < 8; ++i) {
      weft_tensor* out = NULL;
      WT_OK(fetch(s, &q, q.dequeue, 0, 0, &out));
      wt_expect_shape(out, WEFT_FLOAT32, NULL, 0);
      cr_expect_eq(scalar(out), (float)(i * 10), "element %d", i);
    }
    cr_expect_eq(size_of(s, &q), 0);
    weft_session_destroy(s);
    weft_graph_destroy(q.g);
  }
}

/* A fed tensor changed after the run cannot change the queued element. */
Test(queue, elements_are_copies) {
  struct qgraph q = make_graph("FIFOQueue", NULL, 0, -1);
  weft_session* s = session_with(q.g, 2);
  float v = 1.5f;
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, NULL, 0, &v);
  WT_OK(weft_session_run(s, &q.x, &t, 1, NULL, 0, &q.enqueue, 1, NULL));
  *(float*)weft_tensor_data(t) = 99.f;
  weft_tensor* out = NULL;
  WT_OK(fetch(s, &q, q.dequeue, 0, 0, &out));
  cr_expect_eq(scalar(out), 1.5f);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(q.g);
}

/* An empty queue's dequeue waits; its run's deadline ends it promptly with
 * DEADLINE_EXCEEDED, and the queue and session work afterwards. */
Test(queue, deadline_ends_a_waiting_dequeue) {
  for (int32_t inter = 1; inter <= 2; ++inter) {
    struct qgraph q = make_graph("FIFOQueue", NULL, 0, -1);
    weft_session* s = session_with(q.g, inter);
    weft_tensor* out = NULL;
    double t0 = now_s();
    WT_EXPECT_ERROR(fetch(s, &q, q.dequeue, 0, 100, &out),
                    WEFT_DEADLINE_EXCEEDED, "deadline");
    double took = now_s() - t0;
    cr_expect(took >= 0.09 && took < 2.0, "took %.3f s", took);
    cr_expect_null(out);
    float v = 7;
    WT_OK(enqueue_f32(s, &q, 0, &v, 1));
    WT_OK(fetch(s, &q, q.dequeue, 0, 1000, &out));
    cr_expect_eq(scalar(out), 7.f);
    cr_expect_eq(size_of(s, &q), 0, "the cancelled dequeue took nothing");
    weft_session_destroy(s);
    weft_graph_destroy(q.g);
  }
}

struct waiter {
  weft_session* s;
  const struct qgraph* q;
  weft_node* node;
  int32_t n;
  weft_status* status;
  weft_tensor* out;
};

static void* wait_thread(void* arg) {
  struct waiter* w = arg;
  w->status = fetch(w->s, w->q, w->node, w->n, 0, &w->out);
  return NULL;
}

/* Another run's enqueue completes the parked dequeue. */
Test(queue, enqueue_from_another_run_wakes_a_dequeue) {
  for (int32_t inter = 1; inter <= 2; ++inter) {
    struct qgraph q = make_graph("FIFOQueue", NULL, 0, -1);
    weft_session* s = session_with(q.g, inter);
    struct waiter w = {s, &q, q.dequeue, 0, NULL, NULL};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
    usleep(50000);
    float v = 3.25f;
    WT_OK(enqueue_f32(s, &q, 0, &v, 1));
    pthread_join(t, NULL);
    WT_OK(w.status);
    cr_expect_eq(scalar(w.out), 3.25f);
    weft_session_destroy(s);
    weft_graph_destroy(q.g);
  }
}

Test(queue, session_cancel_ends_a_waiting_dequeue) {
  struct qgraph q = make_graph("FIFOQueue", NULL, 0, -1);
  weft_session* s = session_with(q.g, 2);
  struct waiter w = {s, &q, q.dequeue, 0, NULL, NULL};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
  int32_t reached = 0;
  for (int i = 0; i < 200 && reached == 0; ++i) {
    usleep(10000);
    reached = weft_session_cancel(s);
  }
  pthread_join(t, NULL);
  cr_expect_eq(reached, 1);
  WT_EXPECT_ERROR(w.status, WEFT_CANCELLED, "weft_session_cancel");
  cr_expect_null(w.out);
  cr_expect_eq(weft_session_cancel(NULL), 0);
  float v = 1;
  WT_OK(enqueue_f32(s, &q, 0, &v, 1));
  cr_expect_eq(size_of(s, &q), 1);
  /* The cancelled request runs again from a clean start: its plan's runs
   * share a run object, which the cancellation left failed. */
  weft_tensor* out = NULL;
  WT_OK(fetch(s, &q, q.dequeue, 0, 1000, &out));
  cr_expect_eq(scalar(out), 1.f);
  weft_session_destroy(s);
  weft_graph_destroy(q.g);
}

/* More runs in flight than the session lists without a lock (16): the
 * cancel reaches every one, wherever it is listed, and the session runs on
 * afterwards. */
struct counted_waiter {
  struct waiter w;
  atomic_int* done;
};

static void* counted_wait_thread(void* arg) {
  struct counted_waiter* c = arg;
  wait_thread(&c->w);
  atomic_fetch_add(c->done, 1);
  return NULL;
}

Test(queue, session_cancel_reaches_many_waiting_runs) {
  enum { kWaiters = 24 };
  struct qgraph q = make_graph("FIFOQueue", NULL, 0, -1);
  weft_session* s = session_with(q.g, 2);
  atomic_int done = 0;
  struct counted_waiter c[kWaiters];
  pthread_t t[kWaiters];
  for (int i = 0; i < kWaiters; ++i) {
    c[i].w = (struct waiter){s, &q, q.dequeue, 0, NULL, NULL};
    c[i].done = &done;
    cr_assert_eq(pthread_create(&t[i], NULL, counted_wait_thread, &c[i]), 0);
  }
  /* A run ends only when a cancel reaches it; one that had not started
   * when a cancel came is reached by a later one. */
  int32_t reached = 0;
  for (int i = 0; i < 1000 && atomic_load(&done) < kWaiters; ++i) {
    usleep(10000);
    reached += weft_session_cancel(s);
  }
  for (int i = 0; i < kWaiters; ++i) pthread_join(t[i], NULL);
  cr_expect_geq(reached, kWaiters);
  for (int i = 0; i < kWaiters; ++i) {
    WT_EXPECT_ERROR(c[i].w.status, WEFT_CANCELLED, "weft_session_cancel");
    cr_expect_null(c[i].w.out);
  }
  float v = 2;
  WT_OK(enqueue_f32(s, &q, 0, &v, 1));
  cr_expect_eq(size_of(s, &q), 1);
  weft_session_destroy(s);
  weft_graph_destroy(q.g);
}

/* Close: a waiting dequeue and later ones end with OUT_OF_RANGE once the
 * queue is empty; enqueues are refused with CANCELLED. */
Test(queue, close_drains_then_out_of_range) {
  struct qgraph q = make_graph("FIFOQueue", NULL, 0, -1);
  weft_session* s = session_with(q.g, 2);
  struct waiter w = {s, &q, q.dequeue, 0, NULL, NULL};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
  usleep(50000);
  run_target(s, q.close);
  pthread_join(t, NULL);
  WT_EXPECT_ERROR(w.status, WEFT_OUT_OF_RANGE, "'q'", "closed");
  float v = 2;
  WT_EXPECT_ERROR(enqueue_f32(s, &q, 0, &v, 1), WEFT_CANCELLED, "'q'",
                  "closed", "enqueue");
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(fetch(s, &q, q.dequeue, 0, 0, &out), WEFT_OUT_OF_RANGE,
                  "dequeue");
  weft_session_destroy(s);
  weft_graph_destroy(q.g);
}

/* DequeueMany of more than the capacity fills as elements come; UpTo takes
 * the remainder once closed; Many refuses a short remainder and leaves it. */
Test(queue, dequeue_many_and_up_to) {
  struct qgraph q = make_graph("FIFOQueue", WT_DIMS(2), 1, 2);
  weft_session* s = session_with(q.g, 2);
  struct waiter w = {s, &q, q.dequeue_many, 5, NULL, NULL};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
  float rows[14];
  for (int i = 0; i < 14; ++i) rows[i] = (float)i;
  weft_tensor* x = wt_tensor(WEFT_FLOAT32, WT_SHAPE(7, 2), rows);
  /* 7 elements through a queue of capacity 2: the enqueue waits for room
   * while the dequeue of 5 takes them. */
  WT_OK(weft_session_run(s, &q.x, &x, 1, NULL, 0, &q.enqueue_many, 1, NULL));
  weft_tensor_destroy(x);
  pthread_join(t, NULL);
  WT_OK(w.status);
  wt_expect_shape(w.out, WEFT_FLOAT32, WT_SHAPE(5, 2));
  cr_expect(memcmp(weft_tensor_data(w.out), rows, 10 * sizeof(float)) == 0);
  weft_tensor_destroy(w.out);
  cr_expect_eq(size_of(s, &q), 2);
  run_target(s, q.close);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(fetch(s, &q, q.dequeue_many, 3, 0, &out), WEFT_OUT_OF_RANGE,
                  "fewer than the 3");
  cr_expect_eq(size_of(s, &q), 2, "a refused DequeueMany leaves elements");
  WT_OK(fetch(s, &q, q.up_to, 3, 0, &out));
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 2));
  cr_expect(memcmp(weft_tensor_data(out), rows + 10, 4 * sizeof(float)) == 0);
  weft_tensor_destroy(out);
  WT_EXPECT_ERROR(fetch(s, &q, q.up_to, 3, 0, &out), WEFT_OUT_OF_RANGE, "");
  weft_session_destroy(s);
  weft_graph_destroy(q.g);
}

/* A full queue's enqueue waits; close with cancel_pending_enqueues ends it
 * with CANCELLED, and the element already queued still comes out. */
Test(queue, full_queue_enqueue_waits_and_is_cancelled_by_close) {
  struct qgraph q = make_graph("FIFOQueue", NULL, 0, 1);
  weft_session* s = session_with(q.g, 2);
  float v = 1;
  WT_OK(enqueue_f32(s, &q, 0, &v, 1));
  weft_run_options o;
  weft_run_options_init(&o);
  o.timeout_ms = 50;
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, NULL, 0, &v);
  WT_EXPECT_ERROR(weft_session_run_with_options(s, &o, &q.x, &t, 1, NULL, 0,
                                                &q.enqueue, 1, NULL, NULL),
                  WEFT_DEADLINE_EXCEEDED, "deadline");
  weft_tensor_destroy(t);
  cr_expect_eq(size_of(s, &q), 1);
  run_target(s, q.close_cancel);
  weft_tensor* out = NULL;
  WT_OK(fetch(s, &q, q.dequeue, 0, 0, &out));
  cr_expect_eq(scalar(out), 1.f);
  weft_session_destroy(s);
  weft_graph_destroy(q.g);
}

static void shuffled(int64_t seed, float* got, int n) {
  weft_graph* g = wt_graph_new();
  weft_op_builder* b = weft_op_begin(g, "RandomShuffleQueue", "q");
  const int64_t types[1] = {WEFT_FLOAT32};
  weft_op_set_attr_int_list(b, "component_types", types, 1);
  weft_op_set_attr_int(b, "min_after_dequeue", 4);
  weft_op_set_attr_int(b, "seed", seed);
  weft_node* qn = NULL;
  WT_OK(weft_op_finish(b, &qn));
  struct qgraph q = {0};
  q.g = g;
  q.handle = (weft_output){qn, 0};
  q.x = wt_placeholder(g, "x", WEFT_FLOAT32, NULL, -1);
  q.n = wt_placeholder(g, "n", WEFT_INT32, NULL, 0);
  q.enqueue_many = queue_node(g, "QueueEnqueueMany", "em", q.handle, &q.x, 1);
  q.dequeue = queue_node(g, "QueueDequeue", "dequeue", q.handle, NULL, 0);
  q.close = queue_node(g, "QueueClose", "close", q.handle, NULL, 0);
  weft_session* s = session_with(g, 2);
  float all[64];
  for (int i = 0; i < n; ++i) all[i] = (float)i;
  WT_OK(enqueue_f32(s, &q, 1, all, n));
  weft_tensor* out = NULL;
  /* min_after_dequeue = 4: only n - 4 come out before the close. */
  for (int i = 0; i < n - 4; ++i) {
    WT_OK(fetch(s, &q, q.dequeue, 0, 0, &out));
    got[i] = scalar(out);
  }
  WT_EXPECT_ERROR(fetch(s, &q, q.dequeue, 0, 50, &out),
                  WEFT_DEADLINE_EXCEEDED, "");
  run_target(s, q.close);
  for (int i = n - 4; i < n; ++i) {
    WT_OK(fetch(s, &q, q.dequeue, 0, 0, &out));
    got[i] = scalar(out);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(queue, random_shuffle_is_a_seeded_permutation) {
  float a[32], b[32], c[32];
  shuffled(7, a, 32);
  shuffled(7, b, 32);
  shuffled(8, c, 32);
  cr_expect(memcmp(a, b, sizeof a) == 0, "same seed, same order");
  cr_expect(memcmp(a, c, sizeof a) != 0, "another seed, another order");
  int seen[32] = {0}, in_order = 1;
  for (int i = 0; i < 32; ++i) {
    int k = (int)a[i];
    cr_assert(k >= 0 && k < 32);
    seen[k]++;
    in_order &= k == i;
  }
  for (int i = 0; i < 32; ++i) cr_expect_eq(seen[i], 1, "element %d", i);
  cr_expect(!in_order, "shuffled");
}

/* PaddingFIFOQueue pads each batch to its longest element with zeros. */
Test(queue, padding_queue_pads_batches) {
  struct qgraph q = make_graph("PaddingFIFOQueue", WT_DIMS(-1), 1, -1);
  weft_session* s = session_with(q.g, 2);
  const float a[1] = {1}, b[3] = {2, 3, 4}, c[2] = {5, 6};
  const float* rows[3] = {a, b, c};
  const int64_t lens[3] = {1, 3, 2};
  for (int i = 0; i < 3; ++i) {
    weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(lens[i]), 1, rows[i]);
    WT_OK(weft_session_run(s, &q.x, &t, 1, NULL, 0, &q.enqueue, 1, NULL));
    weft_tensor_destroy(t);
  }
  weft_tensor* out = NULL;
  WT_OK(fetch(s, &q, q.dequeue_many, 3, 0, &out));
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(3, 3));
  const double want[9] = {1, 0, 0, 2, 3, 4, 5, 6, 0};
  wt_expect_f32(out, want, 9, 0, 0);
  weft_tensor_destroy(out);
  weft_session_destroy(s);
  weft_graph_destroy(q.g);
}

/* Bad graphs and values are refused with the node and the reason. */
Test(queue, bad_input_is_refused) {
  weft_graph* g = wt_graph_new();
  weft_op_builder* b = weft_op_begin(g, "FIFOQueue", "bad_types");
  const int64_t bogus[1] = {999};
  weft_op_set_attr_int_list(b, "component_types", bogus, 1);
  weft_node* node = NULL;
  WT_EXPECT_ERROR(weft_op_finish(b, &node), WEFT_INVALID_ARGUMENT,
                  "'bad_types'", "999", "not a dtype");
  b = weft_op_begin(g, "FIFOQueue", "bad_shapes");
  const int64_t types[2] = {WEFT_FLOAT32, WEFT_INT32};
  const int64_t shapes[2] = {3, 1};  /* rank 3, one dim given */
  weft_op_set_attr_int_list(b, "component_types", types, 2);
  weft_op_set_attr_int_list(b, "shapes", shapes, 2);
  WT_EXPECT_ERROR(weft_op_finish(b, &node), WEFT_INVALID_ARGUMENT,
                  "'bad_shapes'", "rank 3");
  b = weft_op_begin(g, "RandomShuffleQueue", "bad_min");
  weft_op_set_attr_int_list(b, "component_types", types, 1);
  weft_op_set_attr_int(b, "capacity", 4);
  weft_op_set_attr_int(b, "min_after_dequeue", 4);
  WT_EXPECT_ERROR(weft_op_finish(b, &node), WEFT_INVALID_ARGUMENT,
                  "'bad_min'", "min_after_dequeue");
  weft_output h = queue_op(g, "FIFOQueue", "q", WT_DIMS(2), 1, -1);
  weft_output i32 = wt_placeholder(g, "i", WEFT_INT32, NULL, -1);
  b = weft_op_begin(g, "QueueEnqueue", "wrong_dtype");
  weft_op_add_input(b, h);
  weft_op_add_input(b, i32);
  WT_EXPECT_ERROR(weft_op_finish(b, &node), WEFT_INVALID_ARGUMENT,
                  "'wrong_dtype'", "int32", "float32");
  weft_output f = wt_placeholder(g, "f", WEFT_FLOAT32, NULL, -1);
  b = weft_op_begin(g, "QueueDequeue", "not_a_queue");
  weft_op_add_input(b, f);
  WT_EXPECT_ERROR(weft_op_finish(b, &node), WEFT_INVALID_ARGUMENT,
                  "'not_a_queue'", "handle");
  weft_node* enq = queue_node(g, "QueueEnqueue", "enqueue", h, &f, 1);
  weft_session* s = session_with(g, 2);
  const float v[3] = {1, 2, 3};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(3), 1, v);
  WT_EXPECT_ERROR(weft_session_run(s, &f, &t, 1, NULL, 0, &enq, 1, NULL),
                  WEFT_INVALID_ARGUMENT, "'enqueue'", "[3]", "[2]");
  weft_tensor_destroy(t);
  weft_run_options o;
  weft_run_options_init(&o);
  o.timeout_ms = -5;
  WT_EXPECT_ERROR(weft_session_run_with_options(s, &o, NULL, NULL, 0, NULL, 0,
                                                &enq, 1, NULL, NULL),
                  WEFT_INVALID_ARGUMENT, "timeout_ms");
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* Deadlines apply to plans without runtime ops too: a run whose deadline
 * has passed skips what has not started.  A chain of element-wise ops
 * (not MatMul: oneDNN's threads trip LeakSanitizer's exit scan). */
Test(queue, deadline_on_a_plain_graph) {
  enum { N = 1 << 18 };
  static float zeros[N];
  weft_graph* g = wt_graph_new();
  /* Fed, so that constant folding cannot run it while planning. */
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(N), 1);
  weft_tensor* xv = wt_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, zeros);
  weft_output y = x;
  for (int i = 0; i < 200; ++i) y = wt_apply1(g, "Tanh", NULL, y);
  weft_session* s = session_with(g, 1);
  weft_run_options o;
  weft_run_options_init(&o);
  o.timeout_ms = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run_with_options(s, &o, &x, &xv, 1, &y, 1,
                                                NULL, 0, &out, NULL),
                  WEFT_DEADLINE_EXCEEDED, "deadline");
  cr_expect_null(out);
  o.timeout_ms = 0;
  WT_OK(weft_session_run_with_options(s, &o, &x, &xv, 1, &y, 1, NULL, 0,
                                      &out, NULL));
  wt_expect_shape(out, WEFT_FLOAT32, WT_DIMS(N), 1);
  weft_tensor_destroy(out);
  weft_tensor_destroy(xv);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- Queue runners -------------------------------------------------------- */


/* A source queue holding 0..9 and closed feeds, through a runner of two
 * threads, a second queue: the runner's threads end when the source is
 * exhausted, close the second queue, and the consumer sees every element
 * and then OUT_OF_RANGE.  No thread outlives the runner. */
Test(queue, runner_moves_a_closed_source_then_closes) {
  struct qgraph src = make_graph("FIFOQueue", NULL, 0, -1);
  weft_graph* g = src.g;
  const int64_t types[1] = {WEFT_FLOAT32};
  weft_op_builder* b = weft_op_begin(g, "FIFOQueue", "dst");
  weft_op_set_attr_int_list(b, "component_types", types, 1);
  weft_op_set_attr_int(b, "capacity", 2);
  weft_node* dst = NULL;
  WT_OK(weft_op_finish(b, &dst));
  weft_output h = {dst, 0};
  weft_output item = {src.dequeue, 0};
  weft_node* move = queue_node(g, "QueueEnqueue", "move", h, &item, 1);
  weft_node* take = queue_node(g, "QueueDequeue", "take", h, NULL, 0);
  weft_node* close = queue_node(g, "QueueClose", "close_dst", h, NULL, 0);
  weft_session* s = session_with(g, 2);
  float all[10];
  for (int i = 0; i < 10; ++i) all[i] = (float)i;
  WT_OK(enqueue_f32(s, &src, 1, all, 10));
  run_target(s, src.close);
  const int before = wt_thread_count_settled();
  weft_queue_runner* r = NULL;
  WT_OK(weft_queue_runner_start(s, move, 2, close, &r));
  float sum = 0;
  int got = 0;
  for (;;) {
    weft_output f = {take, 0};
    weft_tensor* out = NULL;
    weft_status* st =
        weft_session_run(s, NULL, NULL, 0, &f, 1, NULL, 0, &out);
    if (st != NULL) {
      WT_EXPECT_ERROR(st, WEFT_OUT_OF_RANGE, "'dst'");
      break;
    }
    sum += scalar(out);
    got++;
    cr_assert(got <= 10);
  }
  cr_expect_eq(got, 10);
  cr_expect_eq(sum, 45.f);
  WT_OK(weft_queue_runner_error(r));
  WT_OK(weft_queue_runner_stop(r, NULL));
  cr_expect_eq(wt_thread_count_down_to(before), before, "threads left behind");
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* Stopping a runner whose enqueue waits for room (nobody dequeues) ends it
 * at once; an enqueue that fails is the runner's error. */
Test(queue, runner_stop_and_error) {
  struct qgraph q = make_graph("FIFOQueue", NULL, 0, 3);
  float one = 1;
  weft_output c = wt_const_f32(q.g, "one", NULL, 0, &one);
  weft_node* fill = queue_node(q.g, "QueueEnqueue", "fill", q.handle, &c, 1);
  /* A target that fails every run: it needs placeholder zp, which the
   * runner cannot feed. */
  const int32_t ten = 10;
  weft_output zp = wt_placeholder(q.g, "zp", WEFT_INT32, NULL, 0);
  weft_output tenc = wt_const(q.g, "ten", wt_tensor(WEFT_INT32, NULL, 0, &ten));
  weft_output quotient = wt_apply2(q.g, "Div", "quotient", tenc, zp);
  weft_session* s = session_with(q.g, 2);
  const int before = wt_thread_count_settled();
  weft_queue_runner* r = NULL;
  WT_OK(weft_queue_runner_start(s, fill, 3, NULL, &r));
  for (int i = 0; i < 200 && size_of(s, &q) < 3; ++i) usleep(5000);
  cr_expect_eq(size_of(s, &q), 3, "the runner filled the queue");
  double t0 = now_s();
  WT_OK(weft_queue_runner_stop(r, q.close_cancel));
  cr_expect(now_s() - t0 < 2.0, "stop took %.3f s", now_s() - t0);
  cr_expect_eq(wt_thread_count_down_to(before), before, "threads left behind");
  weft_session_destroy(s);

  /* A runner whose target fails keeps the first error. */
  weft_session* s2 = session_with(q.g, 2);
  weft_op_builder* b = weft_op_begin(q.g, "NoOp", "bad_target");
  weft_op_add_control_input(b, quotient.node);
  weft_node* bad = NULL;
  WT_OK(weft_op_finish(b, &bad));
  WT_EXPECT_ERROR(weft_queue_runner_start(s2, bad, 0, NULL, &r),
                  WEFT_INVALID_ARGUMENT, "num_threads");
  cr_expect_null(r);
  WT_OK(weft_queue_runner_start(s2, bad, 1, q.close, &r));
  weft_status* err = NULL;
  for (int i = 0; i < 400 && err == NULL; ++i) {
    usleep(5000);
    err = weft_queue_runner_error(r);
  }
  cr_assert_not_null(err, "the runner reported no error");
  cr_expect_eq(weft_status_code(err), WEFT_INVALID_ARGUMENT, "%s",
               weft_status_message(err));
  weft_status_destroy(err);
  WT_EXPECT_ERROR(weft_queue_runner_stop(r, NULL), WEFT_INVALID_ARGUMENT,
                  "zp");
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(fetch(s2, &q, q.dequeue, 0, 0, &out), WEFT_OUT_OF_RANGE,
                  "closed");
  weft_session_destroy(s2);
  weft_graph_destroy(q.g);
}

/* ---- Mutexes ----------------------------------------------------------------- */

struct mutex_graph {
  weft_graph* g;
  weft_output lock;
  weft_node *lock_node, *consume;
};

static struct mutex_graph make_mutex_graph(void) {
  struct mutex_graph m;
  m.g = wt_graph_new();
  weft_op_builder* b = weft_op_begin(m.g, "Mutex", "m");
  weft_node* mutex = NULL;
  WT_OK(weft_op_finish(b, &mutex));
  b = weft_op_begin(m.g, "MutexLock", "lock");
  weft_op_add_input(b, (weft_output){mutex, 0});
  WT_OK(weft_op_finish(b, &m.lock_node));
  m.lock = (weft_output){m.lock_node, 0};
  b = weft_op_begin(m.g, "ConsumeMutexLock", "unlock");
  weft_op_add_input(b, m.lock);
  WT_OK(weft_op_finish(b, &m.consume));
  return m;
}

static weft_status* lock_run(weft_session* s, const struct mutex_graph* m,
                             int64_t timeout_ms, weft_tensor** token) {
  weft_run_options o;
  weft_run_options_init(&o);
  o.timeout_ms = timeout_ms;
  return weft_session_run_with_options(s, &o, NULL, NULL, 0, &m->lock, 1,
                                       NULL, 0, token, NULL);
}

struct lock_waiter {
  weft_session* s;
  const struct mutex_graph* m;
  weft_status* status;
  weft_tensor* token;
};

static void* lock_thread(void* arg) {
  struct lock_waiter* w = arg;
  w->status = lock_run(w->s, w->m, 0, &w->token);
  return NULL;
}

/* A held lock (its token fetched and kept) makes the next MutexLock wait:
 * a deadline ends that wait; destroying the token releases the mutex and
 * hands it to a waiting run; ConsumeMutexLock releases it within a run. */
Test(queue, mutex_lock_waits_and_is_released) {
  struct mutex_graph m = make_mutex_graph();
  weft_session* s = session_with(m.g, 2);
  weft_tensor* held = NULL;
  WT_OK(lock_run(s, &m, 0, &held));
  weft_tensor* other = NULL;
  WT_EXPECT_ERROR(lock_run(s, &m, 100, &other), WEFT_DEADLINE_EXCEEDED,
                  "deadline");
  struct lock_waiter w = {s, &m, NULL, NULL};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, lock_thread, &w), 0);
  usleep(50000);
  weft_tensor_destroy(held);  /* releases: the waiting run takes it */
  pthread_join(t, NULL);
  WT_OK(w.status);
  weft_tensor_destroy(w.token);
  /* Lock and release in one run, twice: never waits. */
  for (int i = 0; i < 2; ++i) {
    weft_run_options o;
    weft_run_options_init(&o);
    o.timeout_ms = 2000;
    WT_OK(weft_session_run_with_options(s, &o, NULL, NULL, 0, NULL, 0,
                                        &m.consume, 1, NULL, NULL));
  }
  weft_session_destroy(s);
  weft_op_builder* b = weft_op_begin(m.g, "ConsumeMutexLock", "bad");
  float one = 1;
  weft_op_add_input(b, wt_const_f32(m.g, "one", NULL, 0, &one));
  weft_node* bad = NULL;
  WT_EXPECT_ERROR(weft_op_finish(b, &bad), WEFT_INVALID_ARGUMENT, "'bad'",
                  "MutexLock");
  weft_graph_destroy(m.g);
}
