/* Execution traces (run option trace_level, user API 1.13): a traced run
 * records every node it executed with its device, lane (thread, stream or
 * async slot), start and end and the bytes it allocated, and each
 * transfer with the bytes it moved; the Chrome trace JSON it writes reads
 * back with Python's json module in the trace-event format
 * (tests/chrome_trace_check.py); an untraced run records nothing.  Graphs
 * over two devices (the CPU and the SDK's template plugin, whose kernels
 * run on a stream), a while loop, and a dequeue that waits. */
#define _DEFAULT_SOURCE /* usleep, mkstemp */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_support.h"

#ifndef WEFT_TEST_TEMPLATE_PLUGIN
#error "meson passes the template plugin's path as WEFT_TEST_TEMPLATE_PLUGIN"
#endif
#ifndef WEFT_TEST_CHROME_TRACE_CHECK
#error "meson passes tests/chrome_trace_check.py as WEFT_TEST_CHROME_TRACE_CHECK"
#endif

#define TEMPLATE "/device:TEMPLATE:0"
#define CPU "/device:CPU:0"
#define N 64

static void load_template(void) {
  WT_OK(weft_plugin_load(WEFT_TEST_TEMPLATE_PLUGIN));
}

TestSuite(trace, .init = load_template);

static weft_output on(weft_graph* g, const char* op, const char* name,
                      weft_output x, weft_output y, const char* device) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, x);
  if (y.node != NULL) weft_op_add_input(b, y);
  weft_op_set_device(b, device);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

static const weft_output kNone = {NULL, 0};

static weft_output f32(weft_graph* g, const char* name, float v) {
  return wt_const(g, name, wt_scalar_f32(v));
}

/* A session over the CPU and the template device, two inter-op threads. */
static weft_session* two_devices(weft_graph* g) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU:0,TEMPLATE:0";  /* not OpenCL or CUDA where present */
  o.inter_op_threads = 2;
  o.intra_op_threads = 1;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &o, &s));
  return s;
}

/* Runs with trace_level `level` into `md`. */
static weft_status* run_traced(weft_session* s, int32_t level,
                               const weft_output* feeds,
                               weft_tensor* const* values, int32_t num_feeds,
                               const weft_output* fetches, int32_t num_fetches,
                               weft_tensor** out, weft_run_metadata* md) {
  weft_run_options o;
  weft_run_options_init(&o);
  o.trace_level = level;
  return weft_session_run_with_options(s, &o, feeds, values, num_feeds,
                                       fetches, num_fetches, NULL, 0, out,
                                       md);
}

static int event_named(const weft_run_metadata* md, const char* name) {
  for (int32_t i = 0; i < weft_run_metadata_num_trace_events(md); ++i) {
    const char* n = NULL;
    WT_OK(weft_run_metadata_trace_event(md, i, NULL, &n, NULL, NULL, NULL,
                                        NULL, NULL, NULL));
    if (strcmp(n, name) == 0) return 1;
  }
  return 0;
}

/* What every trace must be: events in order of start, times ordered and
 * nonnegative, known lanes, every node of the run's placement executed at
 * least once, and Chrome JSON that tests/chrome_trace_check.py accepts. */
static void check_trace(const weft_run_metadata* md) {
  const int32_t n = weft_run_metadata_num_trace_events(md);
  cr_assert_gt(n, 0);
  int64_t last_start = 0;
  for (int32_t i = 0; i < n; ++i) {
    int32_t kind = -1;
    const char *name = NULL, *op = NULL, *device = NULL, *lane = NULL;
    int64_t start = -1, end = -1;
    uint64_t bytes = 0;
    WT_OK(weft_run_metadata_trace_event(md, i, &kind, &name, &op, &device,
                                        &lane, &start, &end, &bytes));
    cr_expect(kind == WEFT_TRACE_EVENT_NODE ||
              kind == WEFT_TRACE_EVENT_TRANSFER);
    cr_expect(name[0] != '\0' && op[0] != '\0' && device[0] != '\0');
    cr_expect(strncmp(lane, "thread ", 7) == 0 ||
                  strcmp(lane, "stream") == 0 ||
                  strncmp(lane, "async ", 6) == 0,
              "lane '%s'", lane);
    cr_expect_geq(start, 0, "%s", name);
    cr_expect_geq(end, start, "%s", name);
    cr_expect_geq(start, last_start, "event %d (%s) out of order", i, name);
    last_start = start;
  }
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(md); ++i) {
    const char* node = weft_run_metadata_node_name(md, i);
    cr_expect(event_named(md, node), "node '%s' is not in the trace", node);
  }
  int64_t iteration = -1;
  WT_EXPECT_CODE(weft_run_metadata_trace_event(md, n, NULL, NULL, NULL, NULL,
                                               NULL, NULL, NULL, NULL),
                 WEFT_OUT_OF_RANGE);
  WT_EXPECT_CODE(weft_run_metadata_trace_event_frame(md, -1, NULL,
                                                     &iteration),
                 WEFT_OUT_OF_RANGE);

  char path[] = "/tmp/weft-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  WT_OK(weft_run_metadata_write_chrome_trace(md, path));
  char cmd[512];
  snprintf(cmd, sizeof cmd, "python3 %s %s %d", WEFT_TEST_CHROME_TRACE_CHECK,
           path, n);
  cr_expect_eq(system(cmd), 0, "%s", cmd);
  /* The same text as the accessor gives. */
  FILE* f = fopen(path, "rb");
  cr_assert_not_null(f);
  const char* text = weft_run_metadata_chrome_trace(md);
  size_t len = strlen(text);
  char* back = malloc(len + 1);
  cr_expect_eq(fread(back, 1, len + 1, f), len);
  fclose(f);
  cr_expect(memcmp(back, text, len) == 0);
  free(back);
  unlink(path);
}

/* x -> a = x*x (CPU) -> b = a+a, c = relu(b) (template, on its stream)
 * -> d = c + x (CPU): two transfers, each a Send and a Recv. */
Test(trace, two_devices_and_transfers) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output a = on(g, "Mul", "a", x, x, CPU);
  weft_output b = on(g, "Add", "b", a, a, TEMPLATE);
  weft_output c = on(g, "Relu", "c", b, kNone, TEMPLATE);
  weft_output d = on(g, "Add", "d", c, x, CPU);
  weft_session* s = two_devices(g);
  float xs[N];
  for (int i = 0; i < N; ++i) xs[i] = (float)i - 20;
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, xs);
  weft_run_metadata* md = weft_run_metadata_create();
  weft_tensor* out = NULL;
  for (int rep = 0; rep < 3; ++rep) {  /* the first run plans */
    WT_OK(run_traced(s, WEFT_TRACE_FULL, &x, &xt, 1, &d, 1, &out, md));
    double want[N];
    for (int i = 0; i < N; ++i) want[i] = 2.0 * xs[i] * xs[i] + xs[i];
    wt_expect_f32(out, want, N, 1e-6, 1e-6);
    weft_tensor_destroy(out);
    check_trace(md);
  }
  /* The template's kernels on its stream, the CPU's on threads; the
   * transfers moved the N floats; the Mul allocated its output. */
  int sends = 0, recvs = 0, stream_adds = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_trace_events(md); ++i) {
    int32_t kind;
    const char *name, *op, *device, *lane;
    uint64_t bytes;
    WT_OK(weft_run_metadata_trace_event(md, i, &kind, &name, &op, &device,
                                        &lane, NULL, NULL, &bytes));
    if (kind == WEFT_TRACE_EVENT_TRANSFER) {
      cr_expect_eq(bytes, N * sizeof(float), "%s %s", op, name);
      sends += strcmp(op, "Send") == 0;
      recvs += strcmp(op, "Recv") == 0;
      cr_expect(strcmp(name, "a:0") == 0 || strcmp(name, "c:0") == 0 ||
                    strcmp(name, "x:0") == 0,
                "%s", name);
    }
    if (strcmp(name, "b") == 0 || strcmp(name, "c") == 0) {
      cr_expect_str_eq(device, TEMPLATE);
      cr_expect_str_eq(lane, "stream");
      stream_adds++;
    }
    if (strcmp(name, "a") == 0) {
      cr_expect_str_eq(device, CPU);
      cr_expect_str_eq(lane, "thread 0", "the caller's thread runs roots");
      cr_expect_eq(bytes, N * sizeof(float));
    }
  }
  cr_expect_geq(sends, 2);
  cr_expect_geq(recvs, 2);
  cr_expect_eq(stream_adds, 2);

  /* Untraced: nothing recorded, nothing to write. */
  WT_OK(run_traced(s, WEFT_TRACE_NONE, &x, &xt, 1, &d, 1, &out, md));
  weft_tensor_destroy(out);
  cr_expect_eq(weft_run_metadata_num_trace_events(md), 0);
  cr_expect_gt(weft_run_metadata_num_nodes(md), 0);
  WT_EXPECT_CODE(weft_run_metadata_write_chrome_trace(md, "/tmp/x.json"),
                 WEFT_FAILED_PRECONDITION);
  WT_OK(weft_session_run_with_metadata(s, &x, &xt, 1, &d, 1, NULL, 0, &out,
                                       md));
  weft_tensor_destroy(out);
  cr_expect_eq(weft_run_metadata_num_trace_events(md), 0);

  weft_run_metadata_destroy(md);
  weft_tensor_destroy(xt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- A while loop: i < 5; (i, v) = (i + 1, v + 1.5); w = v*v after --- */

static weft_node* body_add;

static weft_status* loop_cond(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  int32_t five = 5;
  weft_output limit = wt_const(g, NULL, wt_tensor(WEFT_INT32, NULL, 0, &five));
  *pred = wt_apply2(g, "Less", NULL, v[0], limit);
  return NULL;
}

static weft_status* loop_body(weft_graph* g, void* user,
                              const weft_output* v, int32_t n,
                              weft_output* next) {
  (void)user;
  (void)n;
  int32_t one = 1;
  next[0] = wt_apply2(g, "Add", NULL, v[0],
                      wt_const(g, NULL, wt_tensor(WEFT_INT32, NULL, 0, &one)));
  next[1] = wt_apply2(g, "Add", "step", v[1], f32(g, NULL, 1.5f));
  body_add = next[1].node;
  return NULL;
}

Test(trace, while_loop_iterations_and_a_transfer) {
  weft_graph* g = wt_graph_new();
  int32_t zero = 0;
  weft_output init[2] = {
      wt_const(g, "i0", wt_tensor(WEFT_INT32, NULL, 0, &zero)),
      f32(g, "v0", 0.0f)};
  weft_output out[2];
  WT_OK(weft_while_loop(g, loop_cond, loop_body, NULL, init, 2, NULL, out));
  weft_output w = on(g, "Mul", "w", out[1], out[1], TEMPLATE);
  weft_session* s = two_devices(g);
  weft_run_metadata* md = weft_run_metadata_create();
  weft_tensor* result = NULL;
  WT_OK(run_traced(s, WEFT_TRACE_FULL, NULL, NULL, 0, &w, 1, &result, md));
  cr_expect_float_eq(*(const float*)weft_tensor_data(result), 56.25f, 1e-6);
  weft_tensor_destroy(result);
  check_trace(md);

  const char* frame = NULL;
  WT_OK(weft_run_metadata_frame(md, 0, &frame, NULL, NULL, NULL, NULL));
  const char* step = weft_node_name(body_add);
  int seen[5] = {0};
  int merges = 0, exits = 0, on_template = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_trace_events(md); ++i) {
    const char *name, *op, *device, *lane, *event_frame;
    int64_t iteration;
    WT_OK(weft_run_metadata_trace_event(md, i, NULL, &name, &op, &device,
                                        &lane, NULL, NULL, NULL));
    WT_OK(weft_run_metadata_trace_event_frame(md, i, &event_frame,
                                              &iteration));
    merges += strcmp(op, "Merge") == 0;
    exits += strcmp(op, "Exit") == 0;
    on_template += strcmp(device, TEMPLATE) == 0;
    if (strcmp(name, step) == 0) {
      cr_expect_str_eq(event_frame, frame);
      cr_assert(iteration >= 0 && iteration < 5, "iteration %lld",
                (long long)iteration);
      seen[iteration]++;
    }
    if (strcmp(name, "w") == 0) {
      cr_expect_str_eq(event_frame, "");
      cr_expect_eq(iteration, 0);
      cr_expect_str_eq(lane, "stream");
    }
  }
  for (int k = 0; k < 5; ++k)
    cr_expect_eq(seen[k], 1, "iteration %d of '%s' seen %d times", k, step,
                 seen[k]);
  cr_expect_geq(merges, 2 * 6, "each Merge fires once per iteration + 1");
  cr_expect_geq(exits, 1, "the Exit of v, which w reads");
  cr_expect_geq(on_template, 2, "the Mul and the Recv of its input");
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- A dequeue that waits: an async lane, ending when it completes ---- */

struct waiter {
  weft_session* s;
  weft_output dequeue;
  weft_run_metadata* md;
  weft_status* status;
};

static void* traced_dequeue(void* arg) {
  struct waiter* w = arg;
  weft_tensor* out = NULL;
  w->status = run_traced(w->s, WEFT_TRACE_FULL, NULL, NULL, 0, &w->dequeue,
                         1, &out, w->md);
  weft_tensor_destroy(out);
  return NULL;
}

Test(trace, a_waiting_dequeue_ends_when_it_completes) {
  weft_graph* g = wt_graph_new();
  weft_op_builder* b = weft_op_begin(g, "FIFOQueue", "q");
  const int64_t types[1] = {WEFT_FLOAT32};
  weft_op_set_attr_int_list(b, "component_types", types, 1);
  weft_node* q = NULL;
  WT_OK(weft_op_finish(b, &q));
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, NULL, 0);
  b = weft_op_begin(g, "QueueEnqueue", "enqueue");
  weft_op_add_input(b, (weft_output){q, 0});
  weft_op_add_input(b, x);
  weft_node* enqueue = NULL;
  WT_OK(weft_op_finish(b, &enqueue));
  b = weft_op_begin(g, "QueueDequeue", "dequeue");
  weft_op_add_input(b, (weft_output){q, 0});
  weft_node* dequeue = NULL;
  WT_OK(weft_op_finish(b, &dequeue));
  weft_session* s = wt_session_threads(g, 1, 1);
  /* The dequeue waits only if its run starts before the enqueue: on a
   * loaded machine the thread may start late and find the element there
   * already.  Each attempt waits longer before enqueueing; one that
   * waited must show the dequeue in an async lane, lasting the wait. */
  int waited = 0;
  for (int attempt = 0; attempt < 4 && !waited; ++attempt) {
    struct waiter w = {s, {dequeue, 0}, weft_run_metadata_create(), NULL};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, traced_dequeue, &w), 0);
    const int delay_ms = 50 << (2 * attempt);  /* 50, 200, 800, 3200 */
    usleep((useconds_t)delay_ms * 1000);
    weft_tensor* v = wt_scalar_f32(2.5f);
    WT_OK(weft_session_run(s, &x, &v, 1, NULL, 0, &enqueue, 1, NULL));
    weft_tensor_destroy(v);
    pthread_join(t, NULL);
    WT_OK(w.status);
    check_trace(w.md);
    int found = 0;
    for (int32_t i = 0; i < weft_run_metadata_num_trace_events(w.md); ++i) {
      const char *name, *lane;
      int64_t start, end;
      WT_OK(weft_run_metadata_trace_event(w.md, i, NULL, &name, NULL, NULL,
                                          &lane, &start, &end, NULL));
      if (strcmp(name, "dequeue") != 0) continue;
      found = 1;
      /* Waiting at least half the delay: it was parked for the enqueue. */
      if (end - start >= (int64_t)delay_ms * 1000 * 1000 / 2) {
        waited = 1;
        cr_expect_str_eq(lane, "async 0", "a dequeue that waited %lld ns",
                         (long long)(end - start));
      }
    }
    cr_expect(found);
    weft_run_metadata_destroy(w.md);
  }
  cr_expect(waited, "in no attempt did the dequeue wait for the enqueue");
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- Errors --------------------------------------------------------------- */

Test(trace, bad_requests_are_errors) {
  weft_graph* g = wt_graph_new();
  weft_output x = f32(g, "x", 3.0f);
  weft_output y = wt_apply2(g, "Add", "y", x, x);
  weft_session* s = wt_session_new(g, "CPU");
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_traced(s, WEFT_TRACE_FULL, NULL, NULL, 0, &y, 1, &out,
                             NULL),
                  WEFT_INVALID_ARGUMENT, "weft_run_metadata");
  weft_run_metadata* md = weft_run_metadata_create();
  WT_EXPECT_ERROR(run_traced(s, 7, NULL, NULL, 0, &y, 1, &out, md),
                  WEFT_INVALID_ARGUMENT, "trace_level is 7");
  WT_OK(run_traced(s, WEFT_TRACE_FULL, NULL, NULL, 0, &y, 1, &out, md));
  weft_tensor_destroy(out);
  check_trace(md);
  WT_EXPECT_ERROR(weft_run_metadata_write_chrome_trace(
                      md, "/nonexistent-dir/trace.json"),
                  WEFT_NOT_FOUND, "/nonexistent-dir/trace.json");
  WT_EXPECT_CODE(weft_run_metadata_write_chrome_trace(md, NULL),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_run_metadata_write_chrome_trace(NULL, "/tmp/x.json"),
                 WEFT_INVALID_ARGUMENT);
  cr_expect_null(weft_run_metadata_chrome_trace(NULL));
  cr_expect_eq(weft_run_metadata_num_trace_events(NULL), 0);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}
