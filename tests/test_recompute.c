/* Recomputation (weft_session_options.recompute, runtime/session/
 * recompute.cc): gradients are bitwise the same with and without it (the
 * same kernels run on the same inputs), run metadata names what was
 * recomputed, the peak memory of a model built for it drops, stateful
 * (random) nodes are never recomputed, and with the option off (the
 * default, or a caller whose struct_size stops before the field) nothing
 * changes. */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_tensor* random_tensor(const int64_t* dims, int32_t rank,
                                  uint64_t seed, float lo, float hi) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  wt_rng rng = {seed};
  float* f = malloc((size_t)n * sizeof *f);
  wt_rng_fill(&rng, f, n, lo, hi);
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, dims, rank, f);
  free(f);
  return t;
}

typedef struct {
  weft_tensor* out[16];
  uint64_t peak;
  int32_t num_recomputed;
  char recomputed[2048];  /* "node <- what\n" per recomputation */
  int32_t nodes_named_recomputed;  /* placement entries ending so */
} outcome;

/* One run of `fetches` in a fresh one-thread CPU session whose options
 * come from `options` (NULL: defaults) with `recompute` set. */
static void run_with(weft_graph* g, const weft_session_options* options,
                     const weft_output* feeds, weft_tensor* const* values,
                     int32_t num_feeds, const weft_output* fetches,
                     int32_t n, outcome* o) {
  cr_assert_leq(n, 16);
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, options, &s));
  weft_run_metadata* m = weft_run_metadata_create();
  WT_OK(weft_session_run_with_metadata(s, feeds, values, num_feeds, fetches,
                                       n, NULL, 0, o->out, m));
  cr_assert_eq(weft_run_metadata_num_devices(m), 1);
  o->peak = weft_run_metadata_peak_bytes(m, 0);
  o->num_recomputed = weft_run_metadata_num_recomputed(m);
  o->recomputed[0] = '\0';
  for (int32_t i = 0; i < o->num_recomputed; ++i) {
    const char *node = NULL, *what = NULL;
    WT_OK(weft_run_metadata_recomputed(m, i, &node, &what));
    size_t len = strlen(o->recomputed);
    snprintf(o->recomputed + len, sizeof o->recomputed - len, "%s <- %s\n",
             node, what);
  }
  const char* dummy = NULL;
  WT_EXPECT_CODE(weft_run_metadata_recomputed(m, o->num_recomputed, &dummy,
                                              &dummy),
                 WEFT_OUT_OF_RANGE);
  o->nodes_named_recomputed = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(m); ++i) {
    const char* name = weft_run_metadata_node_name(m, i);
    size_t len = strlen(name), suffix = strlen("/recomputed");
    if (len > suffix && strcmp(name + len - suffix, "/recomputed") == 0)
      o->nodes_named_recomputed++;
  }
  weft_run_metadata_destroy(m);
  weft_session_destroy(s);
}

/* Defaults but for one CPU thread, and `recompute` unless it is 0 (so
 * options_with(0) leaves the field as weft_session_options_init set it). */
static weft_session_options options_with(int32_t recompute) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = 1;
  o.intra_op_threads = 1;
  if (recompute != 0) o.recompute = recompute;
  return o;
}

static void run(weft_graph* g, int32_t recompute, const weft_output* feeds,
                weft_tensor* const* values, int32_t num_feeds,
                const weft_output* fetches, int32_t n, outcome* o) {
  weft_session_options opts = options_with(recompute);
  run_with(g, &opts, feeds, values, num_feeds, fetches, n, o);
}

static void expect_bitwise_equal(const outcome* a, const outcome* b,
                                 int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    int64_t count = weft_tensor_element_count(a->out[i]);
    cr_assert_eq(weft_tensor_element_count(b->out[i]), count);
    const float* x = weft_tensor_data(a->out[i]);
    const float* y = weft_tensor_data(b->out[i]);
    for (int64_t e = 0; e < count; ++e)
      cr_assert(memcmp(&x[e], &y[e], sizeof x[e]) == 0,
                "fetch %d element %lld: %.9g without recomputation, %.9g "
                "with", i, (long long)e, x[e], y[e]);
  }
}

static void destroy(outcome* o, int32_t n) {
  for (int32_t i = 0; i < n; ++i) weft_tensor_destroy(o->out[i]);
}

/* ---- A chain of wide "swish" layers: h = z * sigmoid(z), z = h_prev * w.
 * The gradient reads every z (Mul's gradient), every sigmoid and every
 * h_prev; z is cheap to compute again from h_prev and w, which the backward
 * pass keeps anyway, so one wide value per layer need not live from the
 * forward pass to the backward pass. */
enum { ROWS = 64, WIDTH = 1024, LAYERS = 8 };
#define VALUE_BYTES ((uint64_t)ROWS * WIDTH * sizeof(float))

typedef struct {
  weft_graph* g;
  weft_output x;
  weft_tensor* xv;
  weft_output grads[LAYERS + 1];
} swish_chain;

static void build_swish_chain(swish_chain* c) {
  c->g = wt_graph_new();
  c->x = wt_placeholder(c->g, "x", WEFT_FLOAT32, WT_DIMS(ROWS, WIDTH), 2);
  weft_output h = c->x, wrt[LAYERS + 1];
  wrt[0] = c->x;
  for (int i = 0; i < LAYERS; ++i) {
    char name[32];
    snprintf(name, sizeof name, "w%d", i);
    weft_output w =
        wt_const(c->g, name, random_tensor(WT_DIMS(WIDTH), 1, 100 + i,
                                           0.5f, 1.5f));
    wrt[i + 1] = w;
    snprintf(name, sizeof name, "z%d", i);
    weft_output z = wt_apply2(c->g, "Mul", name, h, w);
    snprintf(name, sizeof name, "s%d", i);
    weft_output s = wt_apply1(c->g, "Sigmoid", name, z);
    snprintf(name, sizeof name, "h%d", i);
    h = wt_apply2(c->g, "Mul", name, z, s);
  }
  weft_output loss = wt_apply1(c->g, "Sum", "loss", h);
  WT_OK(weft_gradients(c->g, &loss, 1, wrt, LAYERS + 1, NULL, c->grads));
  c->xv = random_tensor(WT_DIMS(ROWS, WIDTH), 2, 7, -1, 1);
}

static void destroy_swish_chain(swish_chain* c) {
  weft_tensor_destroy(c->xv);
  weft_graph_destroy(c->g);
}

Test(recompute, swish_chain_gradients_are_bitwise_equal_and_peak_drops) {
  unsetenv("WEFT_RECOMPUTE");
  swish_chain c;
  build_swish_chain(&c);
  outcome off, on;
  run(c.g, WEFT_RECOMPUTE_OFF, &c.x, &c.xv, 1, c.grads, LAYERS + 1, &off);
  run(c.g, WEFT_RECOMPUTE_CHEAP, &c.x, &c.xv, 1, c.grads, LAYERS + 1, &on);
  expect_bitwise_equal(&off, &on, LAYERS + 1);
  cr_expect_eq(off.num_recomputed, 0);
  cr_expect_eq(off.nodes_named_recomputed, 0);
  /* Every layer has a value to recompute (z or its sigmoid), and each
   * recomputing node ran. */
  cr_expect_geq(on.num_recomputed, LAYERS, "recomputed:\n%s", on.recomputed);
  cr_expect_eq(on.nodes_named_recomputed, on.num_recomputed);
  for (int i = 0; i < LAYERS; ++i) {
    char z[16], s[16];
    snprintf(z, sizeof z, "'z%d'", i);
    snprintf(s, sizeof s, "'s%d'", i);
    cr_expect(strstr(on.recomputed, z) || strstr(on.recomputed, s),
              "layer %d: nothing recomputed:\n%s", i, on.recomputed);
  }
  cr_expect(strstr(on.recomputed, "gradients") != NULL,
            "the metadata names the gradient readers:\n%s", on.recomputed);
  /* Without recomputation the end of the forward pass holds z, sigmoid(z)
   * and h_prev of every layer; with it, one value per layer less (give or
   * take the last layers').  Ask for half of that. */
  cr_expect_leq(on.peak + VALUE_BYTES * LAYERS / 2, off.peak,
                "peak %llu bytes with recomputation, %llu without",
                (unsigned long long)on.peak, (unsigned long long)off.peak);
  destroy(&off, LAYERS + 1);
  destroy(&on, LAYERS + 1);
  /* The same without the memory scheduler (which would also delay the
   * recomputing nodes, their outputs being large).  On one thread the
   * executor's depth-first order delays them too, so this does not tell
   * whether their gates work; it tells that nothing else is needed. */
  for (int k = 0; k < 2; ++k) {
    weft_session_options o = options_with(k ? WEFT_RECOMPUTE_CHEAP : 0);
    o.optimizations = WEFT_OPTIMIZE_ALL & ~WEFT_OPTIMIZE_MEMORY_SCHEDULE;
    run_with(c.g, &o, &c.x, &c.xv, 1, c.grads, LAYERS + 1, k ? &on : &off);
  }
  expect_bitwise_equal(&off, &on, LAYERS + 1);
  cr_expect_leq(on.peak + VALUE_BYTES * LAYERS / 2, off.peak,
                "unscheduled: peak %llu bytes with recomputation, %llu "
                "without", (unsigned long long)on.peak,
                (unsigned long long)off.peak);
  destroy(&off, LAYERS + 1);
  destroy(&on, LAYERS + 1);
  destroy_swish_chain(&c);
}

/* The default options, and a caller built against a header without the
 * field (its struct_size stops before it, whatever lies beyond), leave the
 * plan alone: the same nodes, the same peak. */
Test(recompute, off_by_default_and_for_older_callers) {
  unsetenv("WEFT_RECOMPUTE");
  swish_chain c;
  build_swish_chain(&c);
  outcome plain, old, off;
  weft_session_options o = options_with(0);  /* recompute as init left it */
  run_with(c.g, &o, &c.x, &c.xv, 1, c.grads, LAYERS + 1, &plain);
  o.struct_size = offsetof(weft_session_options, recompute);
  o.recompute = WEFT_RECOMPUTE_CHEAP;
  run_with(c.g, &o, &c.x, &c.xv, 1, c.grads, LAYERS + 1, &old);
  run(c.g, WEFT_RECOMPUTE_OFF, &c.x, &c.xv, 1, c.grads, LAYERS + 1, &off);
  const outcome* all[3] = {&plain, &old, &off};
  for (int k = 0; k < 3; ++k) {
    cr_expect_eq(all[k]->num_recomputed, 0, "case %d:\n%s", k,
                 all[k]->recomputed);
    cr_expect_eq(all[k]->nodes_named_recomputed, 0);
    cr_expect_eq(all[k]->peak, plain.peak);
  }
  expect_bitwise_equal(&plain, &old, LAYERS + 1);
  destroy(&plain, LAYERS + 1);
  destroy(&old, LAYERS + 1);
  destroy(&off, LAYERS + 1);
  destroy_swish_chain(&c);
}

Test(recompute, environment_variable_and_bad_values) {
  swish_chain c;
  build_swish_chain(&c);
  outcome env;
  setenv("WEFT_RECOMPUTE", "cheap", 1);
  run(c.g, 0, &c.x, &c.xv, 1, c.grads, LAYERS + 1, &env);
  cr_expect_gt(env.num_recomputed, 0);
  destroy(&env, LAYERS + 1);
  setenv("WEFT_RECOMPUTE", "sometimes", 1);
  weft_session_options o = options_with(0);
  weft_session* s = NULL;
  WT_EXPECT_ERROR(weft_session_create(c.g, &o, &s), WEFT_INVALID_ARGUMENT,
                  "WEFT_RECOMPUTE");
  unsetenv("WEFT_RECOMPUTE");
  o.recompute = 2;
  WT_EXPECT_ERROR(weft_session_create(c.g, &o, &s), WEFT_INVALID_ARGUMENT,
                  "recompute");
  destroy_swish_chain(&c);
}

/* ---- An MLP training step: 784 -> 256 (swish) -> 10, softmax
 * cross-entropy, gradients for every weight. */
Test(recompute, mlp_gradients_are_bitwise_equal) {
  enum { B = 100, IN = 784, HID = 256, OUT = 10 };
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(B, IN), 2);
  weft_output y = wt_placeholder(g, "y", WEFT_INT32, WT_DIMS(B), 1);
  weft_output w1 = wt_const(g, "w1", random_tensor(WT_DIMS(IN, HID), 2, 1,
                                                   -0.05f, 0.05f));
  weft_output b1 = wt_const(g, "b1", random_tensor(WT_DIMS(HID), 1, 2,
                                                   -0.1f, 0.1f));
  weft_output w2 = wt_const(g, "w2", random_tensor(WT_DIMS(HID, OUT), 2, 3,
                                                   -0.1f, 0.1f));
  weft_output b2 = wt_const(g, "b2", random_tensor(WT_DIMS(OUT), 1, 4,
                                                   -0.1f, 0.1f));
  weft_output z = wt_apply2(g, "BiasAdd", "z",
                            wt_apply2(g, "MatMul", NULL, x, w1), b1);
  weft_output a = wt_apply2(g, "Mul", "a", z, wt_apply1(g, "Sigmoid", "s", z));
  weft_output logits = wt_apply2(g, "BiasAdd", "logits",
                                 wt_apply2(g, "MatMul", NULL, a, w2), b2);
  weft_output loss = wt_apply1(
      g, "Mean", "loss",
      wt_apply2(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", logits, y));
  weft_output wrt[4] = {w1, b1, w2, b2}, grads[4];
  WT_OK(weft_gradients(g, &loss, 1, wrt, 4, NULL, grads));
  weft_tensor* xv = random_tensor(WT_DIMS(B, IN), 2, 5, 0, 1);
  int32_t labels[B];
  for (int i = 0; i < B; ++i) labels[i] = (i * 7) % OUT;
  weft_tensor* yv = wt_tensor(WEFT_INT32, WT_DIMS(B), 1, labels);
  weft_output feeds[2] = {x, y};
  weft_tensor* values[2] = {xv, yv};
  outcome off, on;
  run(g, WEFT_RECOMPUTE_OFF, feeds, values, 2, grads, 4, &off);
  run(g, WEFT_RECOMPUTE_CHEAP, feeds, values, 2, grads, 4, &on);
  expect_bitwise_equal(&off, &on, 4);
  /* The sigmoid is recomputed from z, which Mul's gradient keeps. */
  cr_expect(strstr(on.recomputed, "Sigmoid 's'") != NULL, "recomputed:\n%s",
            on.recomputed);
  destroy(&off, 4);
  destroy(&on, 4);
  weft_tensor_destroy(xv);
  weft_tensor_destroy(yv);
  weft_graph_destroy(g);
}

/* ---- A small conv net: two conv 5x5 + bias + ReLU + max-pool 2 blocks
 * (fused into FusedConv2D by default), dense, softmax cross-entropy. */
static weft_output conv_relu_pool(weft_graph* g, const char* prefix,
                                  weft_output x, weft_output f,
                                  weft_output b) {
  char name[64];
  snprintf(name, sizeof name, "%s_conv", prefix);
  weft_op_builder* c = weft_op_begin(g, "Conv2D", name);
  weft_op_add_input(c, x);
  weft_op_add_input(c, f);
  const int64_t ones[4] = {1, 1, 1, 1}, two[4] = {1, 2, 2, 1};
  weft_op_set_attr_int_list(c, "strides", ones, 4);
  weft_op_set_attr_string(c, "padding", "SAME");
  weft_node* conv = NULL;
  WT_OK(weft_op_finish(c, &conv));
  snprintf(name, sizeof name, "%s_bias", prefix);
  weft_output biased = wt_apply2(g, "BiasAdd", name, (weft_output){conv, 0}, b);
  snprintf(name, sizeof name, "%s_relu", prefix);
  weft_output act = wt_apply1(g, "Relu", name, biased);
  snprintf(name, sizeof name, "%s_pool", prefix);
  weft_op_builder* p = weft_op_begin(g, "MaxPool", name);
  weft_op_add_input(p, act);
  weft_op_set_attr_int_list(p, "ksize", two, 4);
  weft_op_set_attr_int_list(p, "strides", two, 4);
  weft_op_set_attr_string(p, "padding", "VALID");
  weft_node* pool = NULL;
  WT_OK(weft_op_finish(p, &pool));
  return (weft_output){pool, 0};
}

Test(recompute, conv_net_gradients_are_bitwise_equal) {
  enum { B = 8, S = 28, C1 = 16, C2 = 64, OUT = 10 };
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(B, S, S, 1), 4);
  weft_output y = wt_placeholder(g, "y", WEFT_INT32, WT_DIMS(B), 1);
  weft_output f1 = wt_const(g, "f1", random_tensor(WT_DIMS(5, 5, 1, C1), 4,
                                                   11, -0.2f, 0.2f));
  weft_output b1 = wt_const(g, "b1", random_tensor(WT_DIMS(C1), 1, 12,
                                                   -0.1f, 0.1f));
  weft_output f2 = wt_const(g, "f2", random_tensor(WT_DIMS(5, 5, C1, C2), 4,
                                                   13, -0.05f, 0.05f));
  weft_output b2 = wt_const(g, "b2", random_tensor(WT_DIMS(C2), 1, 14,
                                                   -0.1f, 0.1f));
  weft_output wd = wt_const(g, "wd", random_tensor(WT_DIMS(7 * 7 * C2, OUT),
                                                   2, 15, -0.03f, 0.03f));
  weft_output h = conv_relu_pool(g, "one", x, f1, b1);
  h = conv_relu_pool(g, "two", h, f2, b2);
  weft_op_builder* r = weft_op_begin(g, "Reshape", "flat");
  weft_op_add_input(r, h);
  const int64_t flat[2] = {B, 7 * 7 * C2};
  weft_op_set_attr_int_list(r, "shape", flat, 2);
  weft_node* flat_node = NULL;
  WT_OK(weft_op_finish(r, &flat_node));
  weft_output logits =
      wt_apply2(g, "MatMul", "logits", (weft_output){flat_node, 0}, wd);
  weft_output loss = wt_apply1(
      g, "Mean", "loss",
      wt_apply2(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", logits, y));
  weft_output wrt[5] = {f1, b1, f2, b2, wd}, grads[5];
  WT_OK(weft_gradients(g, &loss, 1, wrt, 5, NULL, grads));
  weft_tensor* xv = random_tensor(WT_DIMS(B, S, S, 1), 4, 16, 0, 1);
  int32_t labels[B];
  for (int i = 0; i < B; ++i) labels[i] = (i * 3) % OUT;
  weft_tensor* yv = wt_tensor(WEFT_INT32, WT_DIMS(B), 1, labels);
  weft_output feeds[2] = {x, y};
  weft_tensor* values[2] = {xv, yv};
  outcome off, on;
  /* Without the planner's fusions, MaxPoolGrad reads the ReLU output the
   * pool read. */
  weft_session_options unfused_off = options_with(WEFT_RECOMPUTE_OFF);
  weft_session_options unfused_on = options_with(WEFT_RECOMPUTE_CHEAP);
  unfused_off.optimizations &= ~WEFT_OPTIMIZE_FUSION;
  unfused_on.optimizations &= ~WEFT_OPTIMIZE_FUSION;
  run_with(g, &unfused_off, feeds, values, 2, grads, 5, &off);
  run_with(g, &unfused_on, feeds, values, 2, grads, 5, &on);
  expect_bitwise_equal(&off, &on, 5);
  /* The first pool's output (100 KiB) feeds the second convolution and its
   * filter gradient; the ReLU output it pools is kept for MaxPoolGrad. */
  cr_expect(strstr(on.recomputed, "MaxPool 'one_pool'") != NULL,
            "recomputed:\n%s", on.recomputed);
  /* The second pool's output (100 KiB) is viewed by the Reshape, which
   * keeps its buffer: recomputing it would save nothing. */
  cr_expect(strstr(on.recomputed, "'two_pool'") == NULL, "recomputed:\n%s",
            on.recomputed);
  destroy(&off, 5);
  destroy(&on, 5);
  /* With them, the pools' gradients read the pools' window indices, not
   * the ReLU outputs, which then die after the forward pass: nothing the
   * backward pass keeps would let a pool be computed again, and the
   * gradients are still the same with recomputation on. */
  run(g, WEFT_RECOMPUTE_OFF, feeds, values, 2, grads, 5, &off);
  run(g, WEFT_RECOMPUTE_CHEAP, feeds, values, 2, grads, 5, &on);
  expect_bitwise_equal(&off, &on, 5);
  cr_expect(strstr(on.recomputed, "_pool'") == NULL, "recomputed:\n%s",
            on.recomputed);
  destroy(&off, 5);
  destroy(&on, 5);
  weft_tensor_destroy(xv);
  weft_tensor_destroy(yv);
  weft_graph_destroy(g);
}

/* ---- Stateful nodes are never recomputed, nor values computed from them:
 * z = x * noise (noise from RandomUniform) would qualify but for its
 * input; its sigmoid, computed from z (which the gradient keeps), does. */
Test(recompute, random_values_are_never_recomputed) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(ROWS, WIDTH), 2);
  weft_op_builder* b = weft_op_begin(g, "RandomUniform", "noise");
  weft_op_set_attr_int_list(b, "shape", WT_DIMS(ROWS, WIDTH), 2);
  weft_op_set_attr_dtype(b, "dtype", WEFT_FLOAT32);
  weft_node* noise = NULL;
  WT_OK(weft_op_finish(b, &noise));
  weft_output z = wt_apply2(g, "Mul", "z", x, (weft_output){noise, 0});
  weft_output s = wt_apply1(g, "Sigmoid", "s", z);
  weft_output e = wt_apply1(g, "Exp", "e", (weft_output){noise, 0});
  weft_output h = wt_apply2(g, "Mul", "h", wt_apply2(g, "Mul", NULL, z, s), e);
  weft_output loss = wt_apply1(g, "Sum", "loss", h);
  weft_output grad;
  WT_OK(weft_gradients(g, &loss, 1, &x, 1, NULL, &grad));
  weft_tensor* xv = random_tensor(WT_DIMS(ROWS, WIDTH), 2, 8, -1, 1);
  outcome on;
  run(g, WEFT_RECOMPUTE_CHEAP, &x, &xv, 1, &grad, 1, &on);
  cr_expect(strstr(on.recomputed, "'noise'") == NULL, "%s", on.recomputed);
  cr_expect(strstr(on.recomputed, "RandomUniform") == NULL, "%s",
            on.recomputed);
  cr_expect(strstr(on.recomputed, "'z'") == NULL, "%s", on.recomputed);
  cr_expect(strstr(on.recomputed, "'e'") == NULL, "%s", on.recomputed);
  cr_expect(strstr(on.recomputed, "Sigmoid 's'") != NULL, "%s",
            on.recomputed);
  destroy(&on, 1);
  weft_tensor_destroy(xv);
  weft_graph_destroy(g);
}
