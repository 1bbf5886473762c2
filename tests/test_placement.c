/* The placer, partitioning, lossy transfers and memory-aware scheduling,
 * observed through run metadata.
 *
 * The second device is the SDK's template plugin (opaque memory, real
 * streams; Add, Sub, Mul, Div, Relu, Identity only), loaded by path, so
 * these tests run on every machine.  Tests that need an OpenCL device
 * (MatMul placement by compute estimate, lossy transfers, which need Cast
 * kernels on both sides) say "skipped: ..." where none exists. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#ifndef WEFT_TEST_TEMPLATE_PLUGIN
#error "meson passes the template plugin's path as WEFT_TEST_TEMPLATE_PLUGIN"
#endif

#define TEMPLATE "/device:TEMPLATE:0"
#define CPU "/device:CPU:0"
#define OPENCL "/device:OPENCL:0"

static void load_template(void) {
  WT_OK(weft_plugin_load(WEFT_TEST_TEMPLATE_PLUGIN));
}

TestSuite(placement, .init = load_template);

/* ---- Helpers ------------------------------------------------------------ */

static weft_output op_on(weft_graph* graph, const char* op, const char* name,
                         weft_output x, const weft_output* y,
                         const char* device) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_add_input(b, x);
  if (y != NULL) weft_op_add_input(b, *y);
  if (device != NULL) weft_op_set_device(b, device);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

static weft_output bin_on(weft_graph* graph, const char* op, const char* name,
                          weft_output x, weft_output y, const char* device) {
  return op_on(graph, op, name, x, &y, device);
}

static weft_session* session_with(weft_graph* graph, const char* devices,
                                  int32_t placement, int32_t precision,
                                  uint32_t optimizations,
                                  const char* gflops) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = devices;
  o.inter_op_threads = 1;
  o.placement = placement;
  o.transfer_precision = precision;
  o.optimizations = optimizations;
  o.device_gflops = gflops;
  weft_session* s = NULL;
  WT_OK(weft_session_create(graph, &o, &s));
  return s;
}

static weft_tensor* run_md(weft_session* s, const weft_output* feeds,
                           weft_tensor* const* values, int32_t n,
                           weft_output fetch, weft_run_metadata* md) {
  weft_tensor* out = NULL;
  WT_OK(weft_session_run_with_metadata(s, feeds, values, n, &fetch, 1, NULL,
                                       0, &out, md));
  cr_assert_not_null(out);
  return out;
}

static int has_device(const char* name) {
  WT_OK(weft_plugins_discover());
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.name, name) == 0) return 1;
  }
  return 0;
}

static void need_opencl(void) {
  if (!has_device(OPENCL))
    WT_SKIP("no OpenCL device (weft-opencl found no platform, or was not "
            "built): see `weft devices`");
}

static weft_tensor* f32_vec(const float* v, int64_t n) {
  return wt_tensor(WEFT_FLOAT32, WT_DIMS(n), 1, v);
}

static void expect_device(const weft_run_metadata* md, const char* node,
                          const char* device) {
  const char* got = weft_run_metadata_device_of(md, node);
  cr_assert_not_null(got, "node '%s' is not in the run metadata:\n%s", node,
                     weft_run_metadata_to_string(md));
  cr_expect_str_eq(got, device, "node '%s' on %s, expected %s:\n%s", node,
                   got, device, weft_run_metadata_to_string(md));
}

static const char* reason_of(const weft_run_metadata* md, const char* node) {
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(md); ++i)
    if (strcmp(weft_run_metadata_node_name(md, i), node) == 0)
      return weft_run_metadata_node_reason(md, i);
  return "";
}

static void expect_close(const weft_tensor* got, const weft_tensor* want,
                         double rel) {
  int64_t n = weft_tensor_element_count(want);
  cr_assert_eq(weft_tensor_element_count(got), n);
  const float* w = weft_tensor_data(want);
  double* ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; ++i) ref[i] = w[i];
  wt_expect_f32(got, ref, n, 1e-6, rel);
  free(ref);
}

/* ---- Partitioning ------------------------------------------------------- */

/* x (fed) -> a = x*x [CPU] -> b = a+a [TEMPLATE] -> r = relu(b)
 * [TEMPLATE] -> d = r - a [CPU] -> out = d * a [CPU].
 * Crossings: a to TEMPLATE (read twice there: one pair), r to CPU. */
Test(placement, one_send_recv_pair_per_value_and_device) {
  enum { N = 1000 };
  float xv[N];
  wt_rng rng = {3};
  wt_rng_fill(&rng, xv, N, -2, 2);
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output a = bin_on(g, "Mul", "a", x, x, CPU);
  weft_output b = bin_on(g, "Add", "b", a, a, TEMPLATE);
  weft_output r = op_on(g, "Relu", "r", b, NULL, TEMPLATE);
  weft_output d = bin_on(g, "Sub", "d", r, a, CPU);
  weft_output out = bin_on(g, "Mul", "out", d, a, CPU);

  weft_tensor* xt = f32_vec(xv, N);
  weft_run_metadata* md = weft_run_metadata_create();
  weft_session* split = session_with(g, "CPU,TEMPLATE", 0, 0,
                                     WEFT_OPTIMIZE_ALL, NULL);
  weft_tensor* got = run_md(split, &x, &xt, 1, out, md);

  cr_expect_eq(weft_run_metadata_num_transfers(md), 2, "%s",
               weft_run_metadata_to_string(md));
  int saw_a = 0, saw_r = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_transfers(md); ++i) {
    const char *value, *src, *dst;
    int32_t wire;
    uint64_t bytes;
    WT_OK(weft_run_metadata_transfer(md, i, &value, &src, &dst, &wire,
                                     &bytes));
    cr_expect_eq(wire, WEFT_FLOAT32);
    cr_expect_eq(bytes, (uint64_t)N * 4);
    if (strcmp(value, "a:0") == 0) {
      saw_a++;
      cr_expect_str_eq(src, CPU);
      cr_expect_str_eq(dst, TEMPLATE);
    } else if (strcmp(value, "r:0") == 0) {
      saw_r++;
      cr_expect_str_eq(src, TEMPLATE);
      cr_expect_str_eq(dst, CPU);
    }
  }
  cr_expect_eq(saw_a, 1);
  cr_expect_eq(saw_r, 1);
  expect_device(md, "b", TEMPLATE);
  expect_device(md, "d", CPU);
  cr_expect(strstr(reason_of(md, "b"), "constraint") != NULL);

  /* The same on the CPU alone, with no transfers at all. */
  weft_session* cpu = session_with(g, "CPU", 0, 0, WEFT_OPTIMIZE_ALL, NULL);
  weft_tensor* want = run_md(cpu, &x, &xt, 1, out, md);
  cr_expect_eq(weft_run_metadata_num_transfers(md), 0);
  expect_close(got, want, 1e-6);

  weft_tensor_destroy(got);
  weft_tensor_destroy(want);
  weft_tensor_destroy(xt);
  weft_run_metadata_destroy(md);
  weft_session_destroy(split);
  weft_session_destroy(cpu);
  weft_graph_destroy(g);
}

/* A feed read on the device crosses from host memory: a transfer from the
 * host, and the CPU reading the same feed needs none. */
Test(placement, feeds_cross_once_to_a_device) {
  enum { N = 64 };
  float xv[N];
  for (int i = 0; i < N; ++i) xv[i] = (float)i - 20;
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output r1 = op_on(g, "Relu", "r1", x, NULL, TEMPLATE);
  weft_output r2 = bin_on(g, "Add", "r2", r1, x, TEMPLATE);
  weft_output c = bin_on(g, "Sub", "c", r2, x, CPU);
  weft_tensor* xt = f32_vec(xv, N);
  weft_run_metadata* md = weft_run_metadata_create();
  weft_session* s = session_with(g, "CPU,TEMPLATE", 0, 0, WEFT_OPTIMIZE_ALL,
                                 NULL);
  weft_tensor* got = run_md(s, &x, &xt, 1, c, md);
  cr_expect_eq(weft_run_metadata_num_transfers(md), 2, "%s",
               weft_run_metadata_to_string(md));
  const char *value, *src, *dst;
  WT_OK(weft_run_metadata_transfer(md, 0, &value, &src, &dst, NULL, NULL));
  const float* o = weft_tensor_data(got);
  for (int i = 0; i < N; ++i) {
    float want = (xv[i] > 0 ? xv[i] : 0) + xv[i] - xv[i];
    cr_expect_float_eq(o[i], want, 1e-6, "element %d", i);
  }
  weft_tensor_destroy(got);
  weft_tensor_destroy(xt);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- Missing kernels: soft fallback or a clear error -------------------- */

Test(placement, strict_placement_names_op_and_device) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(4));
  /* The template has no Exp kernel. */
  weft_output e = op_on(g, "Exp", "needs_exp", x, NULL, TEMPLATE);
  float xv[4] = {0, 1, -1, 2};
  weft_tensor* xt = f32_vec(xv, 4);

  weft_session* strict = session_with(g, "CPU,TEMPLATE",
                                      WEFT_PLACEMENT_STRICT, 0,
                                      WEFT_OPTIMIZE_ALL, NULL);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(strict, &x, &xt, 1, &e, 1, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "needs_exp", "Exp", TEMPLATE,
                  "strict");
  cr_expect_null(out);

  weft_session* soft = session_with(g, "CPU,TEMPLATE", WEFT_PLACEMENT_SOFT, 0,
                                    WEFT_OPTIMIZE_ALL, NULL);
  weft_run_metadata* md = weft_run_metadata_create();
  out = run_md(soft, &x, &xt, 1, e, md);
  expect_device(md, "needs_exp", CPU);
  cr_expect(strstr(reason_of(md, "needs_exp"), "soft fallback") != NULL,
            "reason: %s", reason_of(md, "needs_exp"));
  const float* o = weft_tensor_data(out);
  for (int i = 0; i < 4; ++i) cr_expect_float_eq(o[i], expf(xv[i]), 1e-6);

  weft_tensor_destroy(out);
  weft_tensor_destroy(xt);
  weft_run_metadata_destroy(md);
  weft_session_destroy(strict);
  weft_session_destroy(soft);
  weft_graph_destroy(g);
}

Test(placement, environment_chooses_strict_placement) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(4));
  weft_output e = op_on(g, "Exp", "needs_exp", x, NULL, TEMPLATE);
  (void)e;
  setenv("WEFT_PLACEMENT", "strict", 1);
  weft_session* s = session_with(g, "CPU,TEMPLATE", 0, 0, WEFT_OPTIMIZE_ALL,
                                 NULL);
  float xv[4] = {0};
  weft_tensor* xt = f32_vec(xv, 4);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(s, &x, &xt, 1, &e, 1, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "strict");
  weft_session_destroy(s);

  setenv("WEFT_PLACEMENT", "sometimes", 1);
  weft_session_options o;
  weft_session_options_init(&o);
  weft_session* bad = NULL;
  WT_EXPECT_ERROR(weft_session_create(g, &o, &bad), WEFT_INVALID_ARGUMENT,
                  "WEFT_PLACEMENT", "sometimes");
  unsetenv("WEFT_PLACEMENT");
  weft_tensor_destroy(xt);
  weft_graph_destroy(g);
}

/* ---- The cost model ------------------------------------------------------ */

/* A large element-wise product goes to the device whose compute estimate is
 * far higher, and comes back when the estimates swap. */
Test(placement, large_work_follows_the_compute_estimate) {
  enum { N = 1 << 20 };
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output y = wt_placeholder(g, "y", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output p = bin_on(g, "Mul", "big", x, y, NULL);
  float* v = calloc(N, sizeof(float));
  for (int i = 0; i < N; ++i) v[i] = (float)(i % 13) * 0.5f;
  weft_tensor* vals[2] = {f32_vec(v, N), f32_vec(v, N)};
  weft_output feeds[2] = {x, y};
  weft_run_metadata* md = weft_run_metadata_create();

  weft_session* fast_dev = session_with(g, "CPU,TEMPLATE", 0, 0,
                                        WEFT_OPTIMIZE_ALL,
                                        "TEMPLATE=1e6,CPU=0.001");
  weft_tensor* a = run_md(fast_dev, feeds, vals, 2, p, md);
  expect_device(md, "big", TEMPLATE);
  cr_expect(strstr(reason_of(md, "big"), "cost") != NULL, "%s",
            reason_of(md, "big"));

  weft_session* fast_cpu = session_with(g, "CPU,TEMPLATE", 0, 0,
                                        WEFT_OPTIMIZE_ALL,
                                        "TEMPLATE=0.001,CPU=1e6");
  weft_tensor* b = run_md(fast_cpu, feeds, vals, 2, p, md);
  expect_device(md, "big", CPU);
  expect_close(a, b, 0);

  weft_tensor_destroy(a);
  weft_tensor_destroy(b);
  weft_tensor_destroy(vals[0]);
  weft_tensor_destroy(vals[1]);
  free(v);
  weft_run_metadata_destroy(md);
  weft_session_destroy(fast_dev);
  weft_session_destroy(fast_cpu);
  weft_graph_destroy(g);
}

/* A scalar op whose input is on the device stays there: moving 4 bytes
 * costs more than any difference in compute, even when the CPU's estimate
 * is higher. */
Test(placement, tiny_op_stays_with_its_input) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, NULL, 0);
  weft_output on_dev = op_on(g, "Relu", "on_dev", x, NULL, TEMPLATE);
  weft_output tiny = bin_on(g, "Add", "tiny", on_dev, on_dev, NULL);
  weft_tensor* xt = wt_scalar_f32(2.5f);
  weft_run_metadata* md = weft_run_metadata_create();
  weft_session* s = session_with(g, "CPU,TEMPLATE", 0, 0, WEFT_OPTIMIZE_ALL,
                                 "CPU=100,TEMPLATE=50");
  weft_tensor* out = run_md(s, &x, &xt, 1, tiny, md);
  expect_device(md, "tiny", TEMPLATE);
  cr_expect_float_eq(*(const float*)weft_tensor_data(out), 5.0f, 0);
  /* Only the feed crosses, to the device. */
  cr_expect_eq(weft_run_metadata_num_transfers(md), 1, "%s",
               weft_run_metadata_to_string(md));
  weft_tensor_destroy(out);
  weft_tensor_destroy(xt);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(placement, bad_device_gflops_are_refused) {
  weft_graph* g = wt_graph_new();
  weft_session_options o;
  weft_session_options_init(&o);
  weft_session* s = NULL;
  o.device_gflops = "CPU=fast";
  WT_EXPECT_ERROR(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                  "CPU=fast", "device_gflops");
  o.device_gflops = "NOSUCH=10";
  WT_EXPECT_ERROR(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                  "NOSUCH", "matches no device");
  o.device_gflops = "CPU=-1";
  WT_EXPECT_ERROR(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                  "positive");
  cr_expect_null(s);
  /* WEFT_DEVICE_GFLOPS applies to every session of the process, some with
   * fewer devices (an input pipeline's, on the CPU): a term matching none
   * of a session's devices is ignored there; a malformed one is not. */
  o.device_gflops = NULL;
  o.devices = "CPU";
  setenv("WEFT_DEVICE_GFLOPS", "NOSUCH=1e5,CPU=7", 1);
  WT_OK(weft_session_create(g, &o, &s));
  weft_session_destroy(s);
  s = NULL;
  setenv("WEFT_DEVICE_GFLOPS", "CPU=fast", 1);
  WT_EXPECT_ERROR(weft_session_create(g, &o, &s), WEFT_INVALID_ARGUMENT,
                  "CPU=fast", "WEFT_DEVICE_GFLOPS");
  unsetenv("WEFT_DEVICE_GFLOPS");
  cr_expect_null(s);
  weft_graph_destroy(g);
}

/* Variables stay on one device across every plan of a session, and their
 * Assign goes with them. */
Test(placement, state_stays_with_its_variable) {
  weft_graph* g = wt_graph_new();
  float init[3] = {1, 2, 3};
  weft_output iv = wt_const_f32(g, "init", WT_SHAPE(3), init);
  weft_op_builder* b = weft_op_begin(g, "Variable", "v");
  weft_op_set_attr_dtype(b, "dtype", WEFT_FLOAT32);
  weft_op_set_attr_shape(b, "shape", WT_SHAPE(3));
  weft_op_set_device(b, TEMPLATE);
  weft_node* vnode = NULL;
  WT_OK(weft_op_finish(b, &vnode));
  weft_output v = {vnode, 0};
  weft_output assign = bin_on(g, "Assign", "v_init", v, iv, NULL);
  weft_output twice = bin_on(g, "Add", "twice", v, v, NULL);
  weft_session* s = session_with(g, "CPU,TEMPLATE", 0, 0, WEFT_OPTIMIZE_ALL,
                                 NULL);
  weft_run_metadata* md = weft_run_metadata_create();
  weft_tensor* out = NULL;
  WT_OK(weft_session_run_with_metadata(s, NULL, NULL, 0, NULL, 0,
                                       &assign.node, 1, &out, md));
  expect_device(md, "v_init", TEMPLATE);
  cr_expect(strstr(reason_of(md, "v_init"), "variable 'v'") != NULL);
  out = run_md(s, NULL, NULL, 0, twice, md);
  expect_device(md, "v", TEMPLATE);
  const float* o = weft_tensor_data(out);
  for (int i = 0; i < 3; ++i) cr_expect_float_eq(o[i], 2 * init[i], 0);
  weft_tensor_destroy(out);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- Memory-aware scheduling ------------------------------------------- */

/* big = x*x is ready at once but read only by the last node; a chain runs
 * in between, each step c = op(c) + c holding two values (op(c) cannot be
 * written over c, which the Add still reads; the Add then writes over
 * op(c)).  Run early, big is held through the chain (three values at
 * once); delayed until the chain's end, at most two are live at any
 * time. */
Test(placement, delayed_nodes_lower_peak_memory) {
  enum { N = 1 << 18, STEPS = 6 };  /* 1 MiB per value */
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(1, N));
  weft_output big = wt_apply2(g, "Mul", "big", x, x);
  weft_output c = x;
  for (int i = 0; i < STEPS; ++i) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    c = wt_apply2(g, "Add", NULL, wt_apply1(g, i % 2 ? "Exp" : "Neg", name, c),
                  c);
  }
  weft_op_builder* b = weft_op_begin(g, "MatMul", "dot");
  weft_op_add_input(b, c);
  weft_op_add_input(b, big);
  weft_op_set_attr_bool(b, "transpose_b", 1);
  weft_node* dot = NULL;
  WT_OK(weft_op_finish(b, &dot));
  weft_output out = {dot, 0};

  float* xv = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) xv[i] = (float)(i % 100) * 1e-3f;
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(1, N), 2, xv);
  weft_run_metadata* md = weft_run_metadata_create();
  uint64_t peak[2];
  weft_tensor* res[2];
  for (int on = 0; on < 2; ++on) {
    weft_session* s = session_with(
        g, "CPU", 0, 0, on ? WEFT_OPTIMIZE_ALL : WEFT_OPTIMIZE_CSE, NULL);
    res[on] = run_md(s, &x, &xt, 1, out, md);
    cr_assert_eq(weft_run_metadata_num_devices(md), 1);
    peak[on] = weft_run_metadata_peak_bytes(md, 0);
    weft_session_destroy(s);
  }
  const uint64_t value = (uint64_t)N * 4;
  cr_expect_geq(peak[0], 3 * value, "unscheduled peak %llu:\n%s",
                (unsigned long long)peak[0], weft_run_metadata_to_string(md));
  cr_expect_lt(peak[1], 3 * value, "scheduled peak %llu (unscheduled %llu)",
               (unsigned long long)peak[1], (unsigned long long)peak[0]);
  cr_expect_geq(peak[1], 2 * value);
  expect_close(res[1], res[0], 1e-6);
  weft_tensor_destroy(res[0]);
  weft_tensor_destroy(res[1]);
  weft_tensor_destroy(xt);
  free(xv);
  weft_run_metadata_destroy(md);
  weft_graph_destroy(g);
}

/* ---- With OpenCL: MatMul by compute estimate, lossy transfers ---------- */

static weft_tensor* random_matrix(int64_t r, int64_t c, uint64_t seed) {
  float* v = malloc(sizeof(float) * (size_t)(r * c));
  wt_rng rng = {seed};
  wt_rng_fill(&rng, v, r * c, -1, 1);
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(r, c), 2, v);
  free(v);
  return t;
}

/* Five Adam steps on loss = mean((x W)^2), W 128 x 128 unconstrained, in
 * a "CPU,OPENCL" session with the given estimates; the losses, and where
 * W, its slots and its update ran (last step's metadata). */
static void train_where(const char* gflops, double losses[5],
                        weft_run_metadata* md) {
  enum { M = 128 };
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(M, M));
  weft_tensor* w0 = random_matrix(M, M, 3);
  weft_output init_w;
  WT_OK(weft_graph_constant(g, "W_value", w0, &init_w));
  weft_output w;
  WT_OK(weft_graph_variable(g, "W", init_w, &w, NULL));
  weft_output y = wt_apply2(g, "MatMul", "y", x, w);
  weft_output sq = wt_apply1(g, "Square", "sq", y);
  weft_output loss = wt_apply1(g, "Mean", "loss", sq);
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_ADAM);
  o.learning_rate = 0.01;
  weft_node* train = NULL;
  WT_OK(weft_minimize(g, loss, &o, "train", &train));
  weft_node* init = NULL;
  WT_OK(weft_graph_initialize_all(g, NULL, &init));
  weft_session* s = session_with(g, "CPU,OPENCL", 0, 0, WEFT_OPTIMIZE_ALL,
                                 gflops);
  wt_run_targets(s, &init, 1);
  weft_tensor* xv = random_matrix(M, M, 4);
  for (int step = 0; step < 5; ++step) {
    weft_tensor* out = NULL;
    WT_OK(weft_session_run_with_metadata(s, &x, &xv, 1, &loss, 1, &train, 1,
                                         &out, step == 4 ? md : NULL));
    losses[step] = *(const float*)weft_tensor_data(out);
    weft_tensor_destroy(out);
  }
  weft_tensor_destroy(xv);
  weft_tensor_destroy(w0);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* Variables are placed by the cost model too: W goes with its heaviest
 * reader (the MatMul), where that costs least, and its Adam slots and its
 * update go beside it; with the estimates reversed it stays on the CPU.
 * The split and the single-device training agree. */
Test(placement, variables_go_with_their_heaviest_reader) {
  need_opencl();
  weft_run_metadata* md = weft_run_metadata_create();
  double fast[5], slow[5];
  train_where("OPENCL=1e5,CPU=1", fast, md);
  expect_device(md, "W", OPENCL);
  cr_expect(strstr(reason_of(md, "W"), "heaviest reader") != NULL,
            "W's reason: %s", reason_of(md, "W"));
  /* The update writes W and both slots (a plan reads slots only by
   * reference, so they are not plan nodes): it runs only if all three
   * share its device. */
  expect_device(md, "train/update_W", OPENCL);
  train_where("OPENCL=1,CPU=1e5", slow, md);
  expect_device(md, "W", CPU);
  expect_device(md, "train/update_W", CPU);
  for (int i = 0; i < 5; ++i)
    cr_expect(fabs(fast[i] - slow[i]) <= 1e-4 * fabs(slow[i]),
              "step %d: loss %.9g with W on OpenCL, %.9g on the CPU", i,
              fast[i], slow[i]);
  cr_expect(slow[4] < slow[0], "Adam did not lower the loss: %g -> %g",
            slow[0], slow[4]);
  weft_run_metadata_destroy(md);
}

Test(placement, large_matmul_goes_where_compute_is_faster) {
  need_opencl();
  enum { M = 256 };
  weft_graph* g = wt_graph_new();
  weft_output a = wt_placeholder(g, "a", WEFT_FLOAT32, WT_SHAPE(M, M));
  weft_output bm = wt_placeholder(g, "b", WEFT_FLOAT32, WT_SHAPE(M, M));
  weft_output mm = wt_apply2(g, "MatMul", "mm", a, bm);
  weft_output small = wt_apply2(g, "Add", "after", mm, mm);
  weft_tensor* vals[2] = {random_matrix(M, M, 1), random_matrix(M, M, 2)};
  weft_output feeds[2] = {a, bm};
  weft_run_metadata* md = weft_run_metadata_create();

  weft_session* s1 = session_with(g, "CPU,OPENCL", 0, 0, WEFT_OPTIMIZE_ALL,
                                  "OPENCL=1e5,CPU=1");
  weft_tensor* r1 = run_md(s1, feeds, vals, 2, small, md);
  expect_device(md, "mm", OPENCL);
  expect_device(md, "after", OPENCL); /* the small op follows its input */
  weft_session* s2 = session_with(g, "CPU,OPENCL", 0, 0, WEFT_OPTIMIZE_ALL,
                                  "OPENCL=1,CPU=1e5");
  weft_tensor* r2 = run_md(s2, feeds, vals, 2, small, md);
  expect_device(md, "mm", CPU);
  expect_close(r1, r2, 1e-4);

  weft_tensor_destroy(r1);
  weft_tensor_destroy(r2);
  weft_tensor_destroy(vals[0]);
  weft_tensor_destroy(vals[1]);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s1);
  weft_session_destroy(s2);
  weft_graph_destroy(g);
}

/* Without estimates given, on a machine whose OpenCL device is PoCL (it
 * runs on the same cores as the CPU plugin, whose oneDNN product is the
 * faster there: README, "OpenCL against the CPU plugin"), the MLP's
 * 64x784 by 784x256 product stays on the CPU.  With the CPU plugin's old
 * estimate (16 flops per cycle per core) the cost model put it on PoCL,
 * 319 against 416 us. */
Test(placement, products_stay_on_the_cpu_beside_pocl) {
  need_opencl();
  int pocl = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.name, OPENCL) == 0 && d.description != NULL &&
        strncmp(d.description, "pthread", 7) == 0)
      pocl = 1;
  }
  if (!pocl)
    WT_SKIP("the OpenCL device is not PoCL's CPU device: which of two "
            "different processors is faster is the estimates' call");
  if (getenv("WEFT_DEVICE_GFLOPS") != NULL)
    WT_SKIP("WEFT_DEVICE_GFLOPS is set: the estimates are not the plugins'");
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(64, 784));
  weft_output w = wt_placeholder(g, "w", WEFT_FLOAT32, WT_SHAPE(784, 256));
  weft_output mm = wt_apply2(g, "MatMul", "mm", x, w);
  weft_tensor* vals[2] = {random_matrix(64, 784, 5),
                          random_matrix(784, 256, 6)};
  weft_output feeds[2] = {x, w};
  weft_run_metadata* md = weft_run_metadata_create();
  weft_session* s = session_with(g, "CPU,OPENCL", 0, 0, WEFT_OPTIMIZE_ALL,
                                 NULL);
  weft_tensor* r = run_md(s, feeds, vals, 2, mm, md);
  expect_device(md, "mm", CPU);
  weft_tensor_destroy(r);
  weft_tensor_destroy(vals[0]);
  weft_tensor_destroy(vals[1]);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* CPU -> OpenCL -> CPU with values sent as bfloat16 (or float16): the wire
 * dtype says so, the result differs from the exact one (it really was
 * narrowed) but by no more than two roundings of 2^-9 relative each. */
static void lossy_round_trip(int32_t precision, weft_dtype wire_want,
                             double rel) {
  enum { N = 4096 };
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(N));
  weft_output a = bin_on(g, "Mul", "a", x, x, CPU);
  weft_output b = bin_on(g, "Add", "b", a, a, OPENCL);
  weft_output c = bin_on(g, "Sub", "c", b, a, CPU);
  float* xv = malloc(sizeof(float) * N);
  wt_rng rng = {11};
  wt_rng_fill(&rng, xv, N, 0.5f, 3.0f);
  weft_tensor* xt = f32_vec(xv, N);
  weft_run_metadata* md = weft_run_metadata_create();

  weft_session* exact = session_with(g, "CPU,OPENCL", 0, WEFT_TRANSFER_EXACT,
                                     WEFT_OPTIMIZE_ALL, NULL);
  weft_tensor* want = run_md(exact, &x, &xt, 1, c, md);
  weft_session* lossy = session_with(g, "CPU,OPENCL", 0, precision,
                                     WEFT_OPTIMIZE_ALL, NULL);
  weft_tensor* got = run_md(lossy, &x, &xt, 1, c, md);
  cr_assert_eq(weft_run_metadata_num_transfers(md), 2, "%s",
               weft_run_metadata_to_string(md));
  for (int32_t i = 0; i < 2; ++i) {
    int32_t wire;
    uint64_t bytes;
    WT_OK(weft_run_metadata_transfer(md, i, NULL, NULL, NULL, &wire,
                                     &bytes));
    cr_expect_eq(wire, wire_want, "transfer %d went as %d", i, wire);
    cr_expect_eq(bytes, (uint64_t)N * 2);
  }
  const float* w = weft_tensor_data(want);
  const float* o = weft_tensor_data(got);
  int differs = 0;
  for (int i = 0; i < N; ++i) {
    /* c = (a + a) - a where a crossed narrowed and b crossed back. */
    double tol = rel * 4 * fabs((double)w[i]) + 1e-6;
    cr_expect_leq(fabs((double)o[i] - w[i]), tol, "element %d: %g vs %g", i,
                  o[i], w[i]);
    differs |= o[i] != w[i];
  }
  cr_expect(differs, "no element changed: the transfer was not lossy");
  weft_tensor_destroy(want);
  weft_tensor_destroy(got);
  weft_tensor_destroy(xt);
  free(xv);
  weft_run_metadata_destroy(md);
  weft_session_destroy(exact);
  weft_session_destroy(lossy);
  weft_graph_destroy(g);
}

Test(placement, bfloat16_transfers_stay_within_bfloat16_bounds) {
  need_opencl();
  lossy_round_trip(WEFT_TRANSFER_BFLOAT16, WEFT_BFLOAT16, 1.0 / 256);
}

Test(placement, float16_transfers_stay_within_float16_bounds) {
  need_opencl();
  lossy_round_trip(WEFT_TRANSFER_FLOAT16, WEFT_FLOAT16, 1.0 / 2048);
}

/* Without Cast kernels on the device, lossy transfers fall back to exact
 * ones rather than failing. */
Test(placement, lossy_transfers_without_cast_kernels_go_exact) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(8));
  weft_output a = bin_on(g, "Mul", "a", x, x, CPU);
  weft_output b = bin_on(g, "Add", "b", a, a, TEMPLATE);
  float xv[8] = {1.1f, 2.2f, 3.3f, 4.4f, 5.5f, 6.6f, 7.7f, 8.8f};
  weft_tensor* xt = f32_vec(xv, 8);
  weft_run_metadata* md = weft_run_metadata_create();
  weft_session* s = session_with(g, "CPU,TEMPLATE", 0, WEFT_TRANSFER_BFLOAT16,
                                 WEFT_OPTIMIZE_ALL, NULL);
  weft_tensor* out = run_md(s, &x, &xt, 1, b, md);
  int32_t wire;
  WT_OK(weft_run_metadata_transfer(md, 0, NULL, NULL, NULL, &wire, NULL));
  cr_expect_eq(wire, WEFT_FLOAT32);
  const float* o = weft_tensor_data(out);
  for (int i = 0; i < 8; ++i)
    cr_expect_eq(o[i], (xv[i] * xv[i]) + (xv[i] * xv[i]));
  weft_tensor_destroy(out);
  weft_tensor_destroy(xt);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(placement, metadata_accessors_refuse_bad_indexes) {
  weft_run_metadata* md = weft_run_metadata_create();
  cr_expect_eq(weft_run_metadata_num_nodes(md), 0);
  cr_expect_null(weft_run_metadata_node_name(md, 0));
  cr_expect_null(weft_run_metadata_node_name(md, -1));
  cr_expect_null(weft_run_metadata_device_of(md, "x"));
  WT_EXPECT_CODE(weft_run_metadata_transfer(md, 0, NULL, NULL, NULL, NULL,
                                            NULL),
                 WEFT_OUT_OF_RANGE);
  WT_EXPECT_CODE(weft_run_metadata_merged(md, 3, NULL, NULL),
                 WEFT_OUT_OF_RANGE);
  cr_expect_eq(weft_run_metadata_peak_bytes(md, 0), 0);
  cr_expect_eq(weft_run_metadata_num_nodes(NULL), 0);
  cr_expect(strstr(weft_run_metadata_to_string(md), "placement") != NULL);
  weft_run_metadata_destroy(md);
  weft_run_metadata_destroy(NULL);
}

/* ---- Dtypes a device cannot run (plugin interface 1.6) ------------------ */

/* The template poses as a device without int32 (its plugin still has the
 * int32 kernels), as an OpenCL device without cl_khr_fp64 does for
 * float64: the variable is read when its devices open, at load. */
static void load_template_without_int32(void) {
  char mask[32];
  snprintf(mask, sizeof mask, "%llu", 1ull << WEFT_INT32);
  setenv("WEFT_TEMPLATE_UNSUPPORTED_DTYPES", mask, 1);
  load_template();
}

TestSuite(placement_dtypes, .init = load_template_without_int32);

Test(placement_dtypes, a_dtype_the_device_cannot_run_stays_off_it) {
  int found = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.name, TEMPLATE) != 0) continue;
    found = 1;
    cr_expect_eq(d.unsupported_dtypes, 1ull << WEFT_INT32);
  }
  cr_assert(found, "no %s", TEMPLATE);

  weft_graph* g = wt_graph_new();
  weft_output xi = wt_placeholder(g, "xi", WEFT_INT32, WT_SHAPE(3));
  weft_output xf = wt_placeholder(g, "xf", WEFT_FLOAT32, WT_SHAPE(3));
  weft_output si = bin_on(g, "Add", "int_sum", xi, xi, TEMPLATE);
  weft_output sf = bin_on(g, "Add", "float_sum", xf, xf, TEMPLATE);
  const int32_t iv[3] = {1, -2, 40};
  const float fv[3] = {0.5f, -1.5f, 3.0f};
  weft_tensor* it = wt_tensor(WEFT_INT32, WT_DIMS(3), 1, iv);
  weft_tensor* ft = f32_vec(fv, 3);
  const weft_output feeds[2] = {xi, xf};
  weft_tensor* const values[2] = {it, ft};

  /* Constrained there and strict: refused, saying why. */
  weft_session* strict = session_with(g, "CPU,TEMPLATE",
                                      WEFT_PLACEMENT_STRICT, 0,
                                      WEFT_OPTIMIZE_ALL, NULL);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(strict, feeds, values, 2, &si, 1, NULL, 0,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "int_sum", TEMPLATE,
                  "cannot run int32");
  cr_expect_null(out);

  /* Soft: the int32 Add runs on the CPU, the float32 one on the template. */
  weft_session* soft = session_with(g, "CPU,TEMPLATE", WEFT_PLACEMENT_SOFT, 0,
                                    WEFT_OPTIMIZE_ALL, NULL);
  weft_run_metadata* md = weft_run_metadata_create();
  const weft_output fetches[2] = {si, sf};
  weft_tensor* outs[2] = {NULL, NULL};
  WT_OK(weft_session_run_with_metadata(soft, feeds, values, 2, fetches, 2,
                                       NULL, 0, outs, md));
  expect_device(md, "int_sum", CPU);
  expect_device(md, "float_sum", TEMPLATE);
  cr_expect(strstr(reason_of(md, "int_sum"), "cannot run int32") != NULL,
            "reason: %s", reason_of(md, "int_sum"));
  const int32_t* io = weft_tensor_data(outs[0]);
  const float* fo = weft_tensor_data(outs[1]);
  for (int i = 0; i < 3; ++i) {
    cr_expect_eq(io[i], 2 * iv[i]);
    cr_expect_float_eq(fo[i], 2 * fv[i], 0);
  }

  weft_tensor_destroy(outs[0]);
  weft_tensor_destroy(outs[1]);
  weft_tensor_destroy(it);
  weft_tensor_destroy(ft);
  weft_run_metadata_destroy(md);
  weft_session_destroy(strict);
  weft_session_destroy(soft);
  weft_graph_destroy(g);
}
