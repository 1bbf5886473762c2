/* The runtime on a device that is nothing like the CPU: the SDK's template
 * plugin, whose memory handles are not host pointers and whose kernels and
 * copies run later, on a worker thread per stream.  Every answer is checked
 * against a plain loop or against the CPU, so a host that assumed host
 * memory, forgot to synchronize, freed or reused memory that queued work
 * still uses, or lost an asynchronous error fails here.
 *
 * meson registers this file twice: as is, and with the template's worker
 * sleeping before each item (WEFT_TEMPLATE_DELAY_US), so that ordering bugs
 * show every time rather than once in a while. */
/* pthread barriers are POSIX, hidden by -std=c11 without this. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

#ifndef WEFT_TEST_TEMPLATE_PLUGIN
#error "meson passes the template plugin's path as WEFT_TEST_TEMPLATE_PLUGIN"
#endif

#define TEMPLATE "/device:TEMPLATE:0"
#define CPU "/device:CPU:0"

static void load_template(void) {
  WT_OK(weft_plugin_load(WEFT_TEST_TEMPLATE_PLUGIN));
}

TestSuite(async_device, .init = load_template);

/* ---- Helpers ------------------------------------------------------------ */

/* op(inputs) constrained to `device` (NULL: anywhere). */
static weft_output apply_on(weft_graph* graph, const char* op,
                            const char* name, const weft_output* inputs,
                            int32_t num_inputs, const char* device) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int32_t i = 0; i < num_inputs; ++i) weft_op_add_input(b, inputs[i]);
  if (device != NULL) weft_op_set_device(b, device);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  cr_assert_not_null(node);
  return (weft_output){node, 0};
}

static weft_output apply2_on(weft_graph* graph, const char* op,
                             const char* name, weft_output x, weft_output y,
                             const char* device) {
  weft_output inputs[2] = {x, y};
  return apply_on(graph, op, name, inputs, 2, device);
}

static weft_output apply1_on(weft_graph* graph, const char* op,
                             const char* name, weft_output x,
                             const char* device) {
  return apply_on(graph, op, name, &x, 1, device);
}

static weft_tensor* f32_tensor(const float* data, int64_t n) {
  return wt_tensor(WEFT_FLOAT32, WT_DIMS(n), 1, data);
}

static weft_tensor* i32_tensor(const int32_t* data, int64_t n) {
  return wt_tensor(WEFT_INT32, WT_DIMS(n), 1, data);
}

/* relu(a*b + c) in float32, one rounding per operation as on the device. */
static void relu_affine_reference(const float* a, const float* b,
                                  const float* c, double* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float product = a[i] * b[i];
    float sum = product + c[i];
    out[i] = sum < 0 ? 0.0f : sum;
  }
}

static void expect_same_f32(const weft_tensor* got, const weft_tensor* want,
                            const char* what) {
  cr_assert_eq(weft_tensor_element_count(got),
               weft_tensor_element_count(want), "%s: element count", what);
  const float* g = weft_tensor_data(got);
  const float* w = weft_tensor_data(want);
  for (int64_t i = 0; i < weft_tensor_element_count(want); ++i)
    cr_assert(memcmp(&g[i], &w[i], sizeof(float)) == 0,
              "%s: element %lld is %.9g, the CPU gives %.9g", what,
              (long long)i, (double)g[i], (double)w[i]);
}

/* ---- The device as the runtime lists it --------------------------------- */

Test(async_device_search_path, template_is_not_on_the_default_path) {
  WT_OK(weft_plugins_discover());
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    cr_expect_str_neq(d.type, "TEMPLATE",
                      "the template plugin was found by discovery (%s); it "
                      "must only load by path", d.name);
  }
}

Test(async_device, device_is_listed_without_host_memory) {
  int found = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.name, TEMPLATE) != 0) continue;
    found = 1;
    cr_expect_str_eq(d.type, "TEMPLATE");
    cr_expect_str_eq(d.plugin, "weft-template");
    cr_expect_eq(d.flags & WEFT_DEVICE_HOST_MEMORY, 0u,
                 "the template's handles are not host pointers");
    cr_expect_gt(d.memory_bytes, 0u);
  }
  cr_assert(found, "no " TEMPLATE " after loading %s",
            WEFT_TEST_TEMPLATE_PLUGIN);
  /* Loading again is a no-op, not a second device. */
  WT_OK(weft_plugin_load(WEFT_TEST_TEMPLATE_PLUGIN));
  int count = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    count += strcmp(d.type, "TEMPLATE") == 0;
  }
  cr_expect_eq(count, 1);
}

/* ---- Whole graphs on the device ----------------------------------------- */

/* An odd size, so no vector width or allocation class divides it. */
enum { N = 4099 };

Test(async_device, relu_of_affine_matches_a_loop) {
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output b = wt_placeholder(graph, "b", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output c = wt_placeholder(graph, "c", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output y = wt_apply1(
      graph, "Relu", "y",
      wt_apply2(graph, "Add", "sum", wt_apply2(graph, "Mul", "product", a, b),
                c));
  weft_session* session = wt_session_new(graph, TEMPLATE);

  static float av[N], bv[N], cv[N];
  static double want[N];
  wt_rng rng = {42};
  /* Several runs: the plan is cached and the stream and memory reused, so
   * state one run leaves behind would show in the next. */
  for (int run = 0; run < 4; ++run) {
    wt_rng_fill(&rng, av, N, -2, 2);
    wt_rng_fill(&rng, bv, N, -2, 2);
    wt_rng_fill(&rng, cv, N, -1, 1);
    relu_affine_reference(av, bv, cv, want, N);
    weft_output feeds[3] = {a, b, c};
    weft_tensor* values[3] = {f32_tensor(av, N), f32_tensor(bv, N),
                              f32_tensor(cv, N)};
    weft_tensor* got = wt_run1(session, feeds, values, 3, y);
    wt_expect_shape(got, WEFT_FLOAT32, WT_SHAPE(N));
    wt_expect_f32(got, want, N, 0, 0);
    weft_tensor_destroy(got);
    for (int i = 0; i < 3; ++i) weft_tensor_destroy(values[i]);
  }
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(async_device, constants_and_single_element_broadcast) {
  enum { LEN = 37 };
  float xv[LEN], bias[LEN];
  for (int i = 0; i < LEN; ++i) {
    xv[i] = (float)(i - 18) * 0.25f;
    bias[i] = (float)(i % 5) - 2.0f;
  }
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(LEN));
  /* Constants go to the device once, when the plan is made. */
  weft_output half = wt_const(graph, "half", wt_scalar_f32(0.5f));
  weft_output three = wt_const(graph, "three", wt_scalar_f32(3));
  weft_output b = wt_const_f32(graph, "bias", WT_SHAPE(LEN), bias);
  /* relu(3 - (x * 0.5 + bias)) / 0.5: scalars on either side. */
  weft_output scaled = wt_apply2(graph, "Mul", "scaled", x, half);
  weft_output shifted = wt_apply2(graph, "Add", "shifted", scaled, b);
  weft_output flipped = wt_apply2(graph, "Sub", "flipped", three, shifted);
  weft_output y = wt_apply2(graph, "Div", "y",
                            wt_apply1(graph, "Relu", "r", flipped), half);
  weft_session* session = wt_session_new(graph, TEMPLATE);
  double want[LEN];
  for (int i = 0; i < LEN; ++i) {
    float s = xv[i] * 0.5f + bias[i];
    float f = 3.0f - s;
    want[i] = (f < 0 ? 0.0f : f) / 0.5f;
  }
  for (int run = 0; run < 3; ++run) {
    weft_tensor* fed = f32_tensor(xv, LEN);
    weft_tensor* got = wt_run1(session, &x, &fed, 1, y);
    wt_expect_f32(got, want, LEN, 0, 0);
    weft_tensor_destroy(got);
    weft_tensor_destroy(fed);
  }
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(async_device, general_broadcasting_is_refused_by_name) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(2, 3));
  weft_output row = wt_placeholder(graph, "row", WEFT_FLOAT32, WT_SHAPE(3));
  weft_output sum = wt_apply2(graph, "Add", "row_sum", x, row);
  weft_session* session = wt_session_new(graph, TEMPLATE);
  weft_output feeds[2] = {x, row};
  weft_tensor* values[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), NULL),
                            wt_tensor(WEFT_FLOAT32, WT_SHAPE(3), NULL)};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(session, feeds, values, 2, &sum, 1, NULL,
                                   0, &out),
                  WEFT_UNIMPLEMENTED, "row_sum", "broadcasting", "[2,3]",
                  "[3]");
  cr_expect_null(out);
  for (int i = 0; i < 2; ++i) weft_tensor_destroy(values[i]);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* ---- Split across the CPU and the device ---------------------------------- */

/* out = (identity(relu(a*b + c)) - a) * (a*b), node k on devices[k]
 * (NULL: unconstrained).  Every edge between two nodes on different devices
 * crosses between host and device memory. */
enum { PIPELINE_NODES = 6 };

static weft_output build_pipeline(weft_graph* graph,
                                  const char* const devices[PIPELINE_NODES],
                                  weft_output* a, weft_output* b,
                                  weft_output* c) {
  *a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(N));
  *b = wt_placeholder(graph, "b", WEFT_FLOAT32, WT_SHAPE(N));
  *c = wt_placeholder(graph, "c", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output product = apply2_on(graph, "Mul", "product", *a, *b, devices[0]);
  weft_output sum = apply2_on(graph, "Add", "sum", product, *c, devices[1]);
  weft_output relu = apply1_on(graph, "Relu", "relu", sum, devices[2]);
  weft_output same = apply1_on(graph, "Identity", "same", relu, devices[3]);
  weft_output diff = apply2_on(graph, "Sub", "diff", same, *a, devices[4]);
  return apply2_on(graph, "Mul", "out", diff, product, devices[5]);
}

static weft_tensor* run_pipeline(const char* const devices[PIPELINE_NODES],
                                 const char* session_devices,
                                 weft_tensor* const values[3]) {
  weft_graph* graph = wt_graph_new();
  weft_output feeds[3];
  weft_output out =
      build_pipeline(graph, devices, &feeds[0], &feeds[1], &feeds[2]);
  weft_session* session = wt_session_new(graph, session_devices);
  weft_tensor* got = wt_run1(session, feeds, values, 3, out);
  /* Again, on the cached plan and reused streams. */
  weft_tensor* again = wt_run1(session, feeds, values, 3, out);
  expect_same_f32(again, got, "second run");
  weft_tensor_destroy(again);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  return got;
}

Test(async_device, split_across_cpu_and_template_matches_cpu) {
  static float av[N], bv[N], cv[N];
  wt_rng rng = {7};
  wt_rng_fill(&rng, av, N, -2, 2);
  wt_rng_fill(&rng, bv, N, -2, 2);
  wt_rng_fill(&rng, cv, N, -1, 1);
  weft_tensor* values[3] = {f32_tensor(av, N), f32_tensor(bv, N),
                            f32_tensor(cv, N)};

  const char* const anywhere[PIPELINE_NODES] = {NULL};
  weft_tensor* cpu = run_pipeline(anywhere, "CPU", values);

  static const struct {
    const char* name;
    const char* devices[PIPELINE_NODES];
  } splits[] = {
      {"alternating from the device",
       {TEMPLATE, CPU, TEMPLATE, CPU, TEMPLATE, CPU}},
      {"alternating from the CPU",
       {CPU, TEMPLATE, CPU, TEMPLATE, CPU, TEMPLATE}},
      {"device in the middle", {CPU, TEMPLATE, TEMPLATE, TEMPLATE, CPU, CPU}},
      {"all on the device",
       {TEMPLATE, TEMPLATE, TEMPLATE, TEMPLATE, TEMPLATE, TEMPLATE}},
  };
  for (size_t s = 0; s < sizeof splits / sizeof splits[0]; ++s) {
    weft_tensor* got = run_pipeline(splits[s].devices, "CPU,TEMPLATE", values);
    expect_same_f32(got, cpu, splits[s].name);
    weft_tensor_destroy(got);
  }
  weft_tensor_destroy(cpu);
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(values[i]);
}

/* ---- Asynchronous errors ------------------------------------------------- */

Test(async_device, integer_division_by_zero_surfaces_from_run) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_INT32, WT_SHAPE(5));
  weft_output y = wt_placeholder(graph, "y", WEFT_INT32, WT_SHAPE(5));
  /* The failing node is not the fetched one: its error must still win over
   * the (skipped) work queued after it. */
  weft_output quotient = wt_apply2(graph, "Div", "quotient", x, y);
  weft_output doubled = wt_apply2(graph, "Add", "doubled", quotient, quotient);
  weft_session* session = wt_session_new(graph, TEMPLATE);

  const int32_t xv[5] = {22, 22, -7, INT32_MIN, 9};
  const int32_t good[5] = {7, -7, 2, -1, 3};
  const int32_t bad[5] = {7, -7, 2, 0, 3};
  /* Truncation toward zero; INT32_MIN / -1 and INT32_MIN + INT32_MIN wrap. */
  const int32_t want[5] = {6, -6, -6, 0, 6};
  weft_output feeds[2] = {x, y};
  for (int round = 0; round < 3; ++round) {
    weft_tensor* values[2] = {i32_tensor(xv, 5), i32_tensor(bad, 5)};
    weft_tensor* out = (weft_tensor*)&out;
    WT_EXPECT_ERROR(weft_session_run(session, feeds, values, 2, &doubled, 1,
                                     NULL, 0, &out),
                    WEFT_INVALID_ARGUMENT, "quotient", "division by zero");
    cr_expect_null(out);
    weft_tensor_destroy(values[1]);

    /* The same session, the same pooled stream: the error was reported
     * once and is gone. */
    values[1] = i32_tensor(good, 5);
    weft_tensor* got = wt_run1(session, feeds, values, 2, doubled);
    wt_expect_shape(got, WEFT_INT32, WT_SHAPE(5));
    const int32_t* g = weft_tensor_data(got);
    for (int i = 0; i < 5; ++i)
      cr_expect_eq(g[i], want[i], "round %d, element %d: %d, expected %d",
                   round, i, g[i], want[i]);
    weft_tensor_destroy(got);
    for (int i = 0; i < 2; ++i) weft_tensor_destroy(values[i]);
  }
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(async_device, division_error_reaches_a_cpu_consumer) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_INT32, WT_SHAPE(4));
  weft_output y = wt_placeholder(graph, "y", WEFT_INT32, WT_SHAPE(4));
  weft_output quotient = apply2_on(graph, "Div", "quotient", x, y, TEMPLATE);
  weft_output on_cpu = apply2_on(graph, "Add", "on_cpu", quotient, x, CPU);
  weft_session* session = wt_session_new(graph, "CPU,TEMPLATE");
  const int32_t xv[4] = {8, 9, 10, 11};
  const int32_t bad[4] = {1, 0, 1, 1};
  const int32_t good[4] = {2, 3, 5, -11};
  weft_output feeds[2] = {x, y};
  weft_tensor* values[2] = {i32_tensor(xv, 4), i32_tensor(bad, 4)};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(session, feeds, values, 2, &on_cpu, 1,
                                   NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "quotient", "division by zero");
  cr_expect_null(out);
  weft_tensor_destroy(values[1]);
  values[1] = i32_tensor(good, 4);
  weft_tensor* got = wt_run1(session, feeds, values, 2, on_cpu);
  const int32_t want[4] = {12, 12, 12, 10};
  const int32_t* g = weft_tensor_data(got);
  for (int i = 0; i < 4; ++i) cr_expect_eq(g[i], want[i]);
  weft_tensor_destroy(got);
  for (int i = 0; i < 2; ++i) weft_tensor_destroy(values[i]);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* ---- Fetches ------------------------------------------------------------- */

Test(async_device, fetches_from_the_device_are_host_tensors) {
  const float kv[3] = {1, 2, 3};
  const float av[3] = {10, -20, 30};
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(3));
  weft_output k = wt_const_f32(graph, "k", WT_SHAPE(3), kv);
  weft_output sum = wt_apply2(graph, "Add", "sum", a, k);
  weft_output same = wt_apply1(graph, "Identity", "same", sum);
  weft_output squared = wt_apply2(graph, "Mul", "squared", same, same);
  weft_session* session = wt_session_new(graph, TEMPLATE);

  const double want_k[3] = {1, 2, 3};
  const double want_sum[3] = {11, -18, 33};
  const double want_sq[3] = {121, 324, 1089};
  const double want_a[3] = {10, -20, 30};
  weft_output fetches[5] = {sum, same, k, squared, a};
  for (int run = 0; run < 2; ++run) {
    weft_tensor* fed = f32_tensor(av, 3);
    weft_tensor* out[5] = {NULL};
    WT_OK(weft_session_run(session, &a, &fed, 1, fetches, 5, NULL, 0, out));
    for (int f = 0; f < 5; ++f) {
      wt_expect_shape(out[f], WEFT_FLOAT32, WT_SHAPE(3));
      cr_assert_not_null(weft_tensor_data(out[f]), "fetch %d has no data", f);
    }
    wt_expect_f32(out[0], want_sum, 3, 0, 0);
    wt_expect_f32(out[1], want_sum, 3, 0, 0);
    wt_expect_f32(out[2], want_k, 3, 0, 0);
    wt_expect_f32(out[3], want_sq, 3, 0, 0);
    wt_expect_f32(out[4], want_a, 3, 0, 0);
    /* Host tensors the caller owns: writing them changes nothing the next
     * run sees, the device-resident constant least of all. */
    for (int f = 0; f < 5; ++f) {
      float* data = weft_tensor_data(out[f]);
      for (int i = 0; i < 3; ++i) data[i] = -12345.0f;
      weft_tensor_destroy(out[f]);
    }
    weft_tensor_destroy(fed);
  }
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* ---- Many threads, one session ------------------------------------------ */

enum { THREADS = 4, RUNS = 40, M = 515 };

struct shared {
  weft_session* session;
  weft_output a, b, c, y;        /* y = relu(a*b + c) */
  weft_output num, den, quotient; /* int32 Div */
  pthread_barrier_t start;
};

struct worker {
  struct shared* shared;
  int id;
  int done;
  char problem[512];
};

static void note(struct worker* w, int iteration, const char* what,
                 weft_status* status) {
  if (w->problem[0] == '\0')
    snprintf(w->problem, sizeof w->problem, "thread %d, iteration %d: %s%s%s",
             w->id, iteration, what, status ? ": " : "",
             status ? weft_status_message(status) : "");
  weft_status_destroy(status);
}

/* Values unique to (thread, iteration): a result from another thread's run
 * would not match. */
static int check_affine(struct worker* w, int i) {
  struct shared* s = w->shared;
  float av[M], bv[M], cv[M];
  double want[M];
  for (int k = 0; k < M; ++k) {
    av[k] = (float)(w->id + 1) * 0.5f;
    bv[k] = (float)(k % 17 - 8);
    cv[k] = (float)(i * 3 - 60);
  }
  relu_affine_reference(av, bv, cv, want, M);
  weft_tensor* values[3] = {NULL, NULL, NULL};
  weft_status* status = NULL;
  const float* sources[3] = {av, bv, cv};
  for (int t = 0; t < 3 && status == NULL; ++t)
    status = weft_tensor_create_copy(WEFT_FLOAT32, WT_DIMS(M), 1, sources[t],
                                     sizeof av, &values[t]);
  weft_tensor* out = NULL;
  weft_output feeds[3] = {s->a, s->b, s->c};
  if (status == NULL)
    status = weft_session_run(s->session, feeds, values, 3, &s->y, 1, NULL, 0,
                              &out);
  for (int t = 0; t < 3; ++t) weft_tensor_destroy(values[t]);
  if (status != NULL) {
    note(w, i, "relu(a*b + c) failed", status);
    return 0;
  }
  int ok = weft_tensor_element_count(out) == M;
  const float* got = weft_tensor_data(out);
  for (int k = 0; ok && k < M; ++k) {
    if (got[k] != (float)want[k]) {
      char what[128];
      snprintf(what, sizeof what, "element %d is %g, expected %g", k,
               (double)got[k], want[k]);
      note(w, i, what, NULL);
      ok = 0;
    }
  }
  weft_tensor_destroy(out);
  return ok;
}

/* Some runs divide by zero on purpose: the error must stay with its own run
 * and never leak into another thread's. */
static int check_division(struct worker* w, int i, int by_zero) {
  struct shared* s = w->shared;
  int32_t num[4], den[4];
  for (int k = 0; k < 4; ++k) {
    num[k] = w->id * 1000 + i * 10 + k;
    den[k] = by_zero && k == 2 ? 0 : k + 1;
  }
  weft_tensor* values[2] = {NULL, NULL};
  weft_status* status = weft_tensor_create_copy(WEFT_INT32, WT_DIMS(4), 1,
                                                num, sizeof num, &values[0]);
  if (status == NULL)
    status = weft_tensor_create_copy(WEFT_INT32, WT_DIMS(4), 1, den,
                                     sizeof den, &values[1]);
  weft_tensor* out = NULL;
  weft_output feeds[2] = {s->num, s->den};
  if (status == NULL)
    status = weft_session_run(s->session, feeds, values, 2, &s->quotient, 1,
                              NULL, 0, &out);
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  if (by_zero) {
    int ok = status != NULL &&
             weft_status_code(status) == WEFT_INVALID_ARGUMENT &&
             strstr(weft_status_message(status), "quotient") != NULL;
    if (!ok) {
      note(w, i, "expected INVALID_ARGUMENT naming 'quotient'", status);
      weft_tensor_destroy(out);
      return 0;
    }
    weft_status_destroy(status);
    return 1;
  }
  if (status != NULL) {
    note(w, i, "division failed", status);
    return 0;
  }
  const int32_t* got = weft_tensor_data(out);
  int ok = 1;
  for (int k = 0; ok && k < 4; ++k)
    if (got[k] != num[k] / den[k]) {
      note(w, i, "wrong quotient", NULL);
      ok = 0;
    }
  weft_tensor_destroy(out);
  return ok;
}

static void* worker_main(void* arg) {
  struct worker* w = arg;
  pthread_barrier_wait(&w->shared->start);
  for (int i = 0; i < RUNS; ++i) {
    int ok = check_affine(w, i);
    ok &= check_division(w, i, (w->id % 2 == 1) && (i % 4 == 0));
    w->done += ok;
  }
  return NULL;
}

Test(async_device, four_threads_share_one_session, .timeout = 120) {
  weft_graph* graph = wt_graph_new();
  struct shared s;
  s.a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(M));
  s.b = wt_placeholder(graph, "b", WEFT_FLOAT32, WT_SHAPE(M));
  s.c = wt_placeholder(graph, "c", WEFT_FLOAT32, WT_SHAPE(M));
  s.y = wt_apply1(graph, "Relu", "y",
                  wt_apply2(graph, "Add", "sum",
                            wt_apply2(graph, "Mul", "product", s.a, s.b), s.c));
  s.num = wt_placeholder(graph, "num", WEFT_INT32, WT_SHAPE(4));
  s.den = wt_placeholder(graph, "den", WEFT_INT32, WT_SHAPE(4));
  s.quotient = wt_apply2(graph, "Div", "quotient", s.num, s.den);
  s.session = wt_session_new(graph, TEMPLATE);
  pthread_barrier_init(&s.start, NULL, THREADS);

  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].shared = &s;
    workers[t].id = t;
    cr_assert_eq(pthread_create(&threads[t], NULL, worker_main, &workers[t]),
                 0);
  }
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < THREADS; ++t) {
    cr_expect_str_eq(workers[t].problem, "", "%s", workers[t].problem);
    cr_expect_eq(workers[t].done, RUNS, "thread %d finished %d of %d runs", t,
                 workers[t].done, RUNS);
  }
  pthread_barrier_destroy(&s.start);
  weft_session_destroy(s.session);
  weft_graph_destroy(graph);
}

/* ---- Variables ----------------------------------------------------------- */

/* A float32 [2,2] variable constrained to `device`, and its initializer
 * assigning `initial`. */
static weft_output variable_on(weft_graph* graph, const char* name,
                               const char* device, weft_output initial,
                               weft_node** out_init) {
  weft_op_builder* b = weft_op_begin(graph, "Variable", name);
  weft_op_set_attr_dtype(b, "dtype", WEFT_FLOAT32);
  weft_op_set_attr_shape(b, "shape", WT_SHAPE(2, 2));
  weft_op_set_device(b, device);
  weft_node* var = NULL;
  WT_OK(weft_op_finish(b, &var));
  weft_output v = {var, 0};
  *out_init = apply2_on(graph, "Assign", NULL, v, initial, NULL).node;
  return v;
}

static void expect_values(weft_session* session, weft_output what,
                          const double* want, const char* context) {
  weft_tensor* got = wt_run1(session, NULL, NULL, 0, what);
  wt_expect_shape(got, WEFT_FLOAT32, WT_SHAPE(2, 2));
  const float* g = weft_tensor_data(got);
  for (int i = 0; i < 4; ++i)
    cr_expect_eq(g[i], (float)want[i], "%s: element %d is %g, expected %g",
                 context, i, (double)g[i], want[i]);
  weft_tensor_destroy(got);
}

/* Initialize, AssignAdd a constant and a fed value over several runs,
 * Assign, initialize again; read back after each step.  `compute_device`
 * is where the values added and read are computed. */
static void exercise_variable(const char* session_devices,
                              const char* compute_device) {
  const float initial[4] = {1, 2, 3, 4};
  const float step[4] = {0.5f, -1, 2, 0};
  const float replacement[4] = {9, 8, 7, 6};
  weft_graph* graph = wt_graph_new();
  weft_output init_value =
      apply1_on(graph, "Identity", "init_value",
                wt_const_f32(graph, "initial", WT_SHAPE(2, 2), initial),
                compute_device);
  weft_node* init = NULL;
  weft_output w = variable_on(graph, "w", TEMPLATE, init_value, &init);
  weft_output step_value =
      apply1_on(graph, "Identity", "step_value",
                wt_const_f32(graph, "step", WT_SHAPE(2, 2), step),
                compute_device);
  weft_output bump = wt_apply2(graph, "AssignAdd", "bump", w, step_value);
  weft_output amount =
      wt_placeholder(graph, "amount", WEFT_FLOAT32, WT_SHAPE(2, 2));
  weft_output add_fed = wt_apply2(graph, "AssignAdd", "add_fed", w, amount);
  weft_output overwrite = wt_apply2(
      graph, "Assign", "overwrite", w,
      wt_const_f32(graph, "replacement", WT_SHAPE(2, 2), replacement));
  weft_output squared = apply2_on(graph, "Mul", "squared", w, w,
                                  compute_device);
  weft_op_builder* b = weft_op_begin(graph, "AssignAdd", "bump_again");
  weft_op_add_input(b, w);
  weft_op_add_input(b, step_value);
  weft_op_add_control_input(b, bump.node);
  weft_node* bump_again = NULL;
  WT_OK(weft_op_finish(b, &bump_again));
  weft_session* session = wt_session_new(graph, session_devices);

  wt_run_targets(session, &init, 1);
  double want[4], want_sq[4];
  for (int i = 0; i < 4; ++i) want[i] = initial[i];
  expect_values(session, w, want, "after init");
  for (int run = 1; run <= 3; ++run) {
    for (int i = 0; i < 4; ++i) want[i] += step[i];
    expect_values(session, bump, want, "bump's output");
    expect_values(session, w, want, "after bump");
  }
  float fed_values[4] = {100, 200, 300, 400};
  weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 2), fed_values);
  WT_OK(weft_session_run(session, &amount, &fed, 1, NULL, 0, &add_fed.node, 1,
                         NULL));
  weft_tensor_destroy(fed);
  for (int i = 0; i < 4; ++i) {
    want[i] += fed_values[i];
    want_sq[i] = (float)want[i] * (float)want[i];
  }
  expect_values(session, w, want, "after add_fed");
  expect_values(session, squared, want_sq, "w * w");

  wt_run_targets(session, &overwrite.node, 1);
  for (int i = 0; i < 4; ++i) want[i] = replacement[i];
  expect_values(session, w, want, "after overwrite");
  wt_run_targets(session, &init, 1);
  for (int i = 0; i < 4; ++i) want[i] = initial[i];
  expect_values(session, w, want, "after init again");

  /* Two updates in one run, the second reading what the first wrote
   * while the first may still be queued. */
  wt_run_targets(session, &bump_again, 1);
  for (int i = 0; i < 4; ++i) want[i] = initial[i] + 2 * step[i];
  expect_values(session, w, want, "after two bumps in one run");

  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(async_device, variables_live_on_the_device_across_runs) {
  exercise_variable(TEMPLATE, NULL);
}

Test(async_device, variables_on_the_device_fed_from_the_cpu) {
  exercise_variable("CPU,TEMPLATE", CPU);
}

/* One thread keeps adding ones to a variable on the device while another
 * keeps reading it, each through its own run: every read must see a value
 * that an AssignAdd finished writing (all elements equal, a whole number,
 * never going down), never memory still being written by queued work. */
struct variable_race {
  weft_session* session;
  weft_output variable;
  weft_node* bump;
  int bumps;
  int failures;
  char first_failure[256];
  volatile int done; /* written by the bumper once, read by the reader */
};

static void* bump_main(void* arg) {
  struct variable_race* r = arg;
  for (int i = 0; i < r->bumps; ++i) {
    weft_status* st =
        weft_session_run(r->session, NULL, NULL, 0, NULL, 0, &r->bump, 1, NULL);
    if (st != NULL) {
      if (r->failures++ == 0)
        snprintf(r->first_failure, sizeof r->first_failure, "bump %d: %s", i,
                 weft_status_message(st));
      weft_status_destroy(st);
    }
  }
  __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

Test(async_device, concurrent_reads_see_only_finished_updates,
     .timeout = 120) {
  const float zeros[4] = {0, 0, 0, 0};
  const float ones[4] = {1, 1, 1, 1};
  weft_graph* graph = wt_graph_new();
  weft_node* init = NULL;
  weft_output v = variable_on(graph, "counter", TEMPLATE,
                              wt_const_f32(graph, "zeros", WT_SHAPE(2, 2),
                                           zeros), &init);
  weft_output one = wt_const_f32(graph, "ones", WT_SHAPE(2, 2), ones);
  weft_output bump = wt_apply2(graph, "AssignAdd", "bump", v, one);
  weft_session* session = wt_session_new(graph, TEMPLATE);
  wt_run_targets(session, &init, 1);

  struct variable_race race = {session, v, bump.node, 40, 0, "", 0};
  pthread_t bumper;
  cr_assert_eq(pthread_create(&bumper, NULL, bump_main, &race), 0);
  float last = 0;
  int bad_reads = 0;
  char first_bad[256] = "";
  int reads = 0;
  for (int i = 0; !__atomic_load_n(&race.done, __ATOMIC_ACQUIRE); ++i) {
    ++reads;
    weft_tensor* got = NULL;
    weft_status* st =
        weft_session_run(session, NULL, NULL, 0, &v, 1, NULL, 0, &got);
    if (st != NULL) {
      if (bad_reads++ == 0)
        snprintf(first_bad, sizeof first_bad, "read %d failed: %s", i,
                 weft_status_message(st));
      weft_status_destroy(st);
      continue;
    }
    const float* g = weft_tensor_data(got);
    int consistent = g[0] == g[1] && g[1] == g[2] && g[2] == g[3] &&
                     g[0] == (float)(int)g[0] && g[0] >= last && g[0] <= 40;
    if (!consistent && bad_reads++ == 0)
      snprintf(first_bad, sizeof first_bad,
               "read %d saw {%g, %g, %g, %g} after %g", i, g[0], g[1], g[2],
               g[3], last);
    last = g[0];
    weft_tensor_destroy(got);
  }
  pthread_join(bumper, NULL);
  cr_log_info("%d reads during 40 bumps", reads);
  cr_expect_eq(race.failures, 0, "%d bump runs failed; first: %s",
               race.failures, race.first_failure);
  cr_expect_eq(bad_reads, 0, "%d bad reads; first: %s", bad_reads, first_bad);
  const double want[4] = {40, 40, 40, 40};
  expect_values(session, v, want, "after 40 concurrent bumps");
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}
