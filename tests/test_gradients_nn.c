/* Gradients of the neural-network ops (BiasAdd, Softmax, LogSoftmax, both
 * softmax cross-entropies, Conv2D, MaxPool, AvgPool,
 * BatchNormWithGlobalNormalization) and of the gradient ops with gradients
 * of their own (Conv2DBackpropInput/Filter, AvgPoolGrad), against central
 * differences (grad_check.h), in float64; and a two-layer perceptron's loss
 * end to end. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "grad_check.h"
#include "gradient_tests.h"
#include "test_support.h"

static weft_output apply(weft_graph* g, const char* op, const char* name,
                         const weft_output* in, int n) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  for (int i = 0; i < n; ++i) weft_op_add_input(b, in[i]);
  return gt_finish(b);
}

static weft_output mean_all(weft_graph* g, const char* name, weft_output x) {
  return apply(g, "Mean", name, &x, 1);
}

/* ---- Single ops ------------------------------------------------------- */

static weft_output build_op(weft_graph* g, const weft_output* xs, int32_t n,
                            void* arg) {
  return apply(g, (const char*)arg, "y", xs, n);
}

Test(nn_gradients, bias_add) {
  double v[72], b[3];
  gt_fill_distinct(v, 72, 1);
  gt_fill_distinct(b, 3, 2);
  gc_input two[2] = {{WEFT_FLOAT64, WT_DIMS(5, 3), 2, v, 1u},
                     {WEFT_FLOAT64, WT_DIMS(3), 1, b, 0}};
  gc_check_f64("BiasAdd [5,3] (unknown batch)", build_op, "BiasAdd", two, 2,
               0);
  gc_input four[2] = {{WEFT_FLOAT64, WT_DIMS(2, 3, 4, 3), 4, v, 0},
                      {WEFT_FLOAT64, WT_DIMS(3), 1, b, 0}};
  gc_check_f64("BiasAdd [2,3,4,3]", build_op, "BiasAdd", four, 2, 0);
}

Test(nn_gradients, softmax_and_log_softmax) {
  double v[24];
  gt_fill_distinct(v, 24, 3);
  const char* ops[] = {"Softmax", "LogSoftmax"};
  for (int k = 0; k < 2; ++k) {
    gc_input m = {WEFT_FLOAT64, WT_DIMS(4, 6), 2, v, 1u};
    gc_check_f64(ops[k], build_op, (void*)ops[k], &m, 1, 0);
    gc_input r3 = {WEFT_FLOAT64, WT_DIMS(2, 3, 4), 3, v, 0};
    gc_check_f64(ops[k], build_op, (void*)ops[k], &r3, 1, 0);
  }
}

/* Logits in the hundreds: the stable forms keep the gradient finite and
 * exact (exp of them would overflow float32 and lose float64). */
Test(nn_gradients, softmax_large_logits) {
  double v[12];
  gt_fill_distinct(v, 12, 4);
  for (int i = 0; i < 12; ++i) v[i] = 700.0 + 2.0 * v[i] + (i % 3 ? 0 : 50);
  const char* ops[] = {"Softmax", "LogSoftmax"};
  for (int k = 0; k < 2; ++k) {
    gc_input m = {WEFT_FLOAT64, WT_DIMS(3, 4), 2, v, 0};
    gc_check(ops[k], build_op, (void*)ops[k], &m, 1, 0, 1e-5, 1e-7, 1e-5);
  }
}

/* ---- Cross-entropy ---------------------------------------------------- */

/* Mean over the batch of the loss output (output 0). */
static weft_output build_xent_mean(weft_graph* g, const weft_output* xs,
                                   int32_t n, void* arg) {
  weft_output loss = apply(g, (const char*)arg, "xent", xs, n);
  return mean_all(g, "loss", loss);
}

/* Dense labels: both features and labels are differentiated (the loss is
 * linear in the labels, so any label values check it). */
Test(nn_gradients, softmax_cross_entropy) {
  double f[20], l[20];
  gt_fill_distinct(f, 20, 5);
  for (int i = 0; i < 20; ++i) l[i] = (i % 4 == i / 4 % 4) ? 0.7 : 0.1;
  gc_input in[2] = {{WEFT_FLOAT64, WT_DIMS(5, 4), 2, f, 1u},
                    {WEFT_FLOAT64, WT_DIMS(5, 4), 2, l, 1u}};
  gc_check_f64("SoftmaxCrossEntropyWithLogits through Mean",
               build_xent_mean, "SoftmaxCrossEntropyWithLogits", in, 2, 0);
  /* The loss vector itself, weighted per row by the checker. */
  gc_check_f64("SoftmaxCrossEntropyWithLogits", build_op,
               "SoftmaxCrossEntropyWithLogits", in, 2, 0);
}

Test(nn_gradients, sparse_softmax_cross_entropy) {
  double f[20];
  gt_fill_distinct(f, 20, 6);
  const double labels[5] = {0, 3, 1, 1, 2};
  for (int t = 0; t < 2; ++t) {
    gc_input in[2] = {{WEFT_FLOAT64, WT_DIMS(5, 4), 2, f, 1u},
                      {t ? WEFT_INT64 : WEFT_INT32, WT_DIMS(5), 1, labels,
                       1u}};
    gc_check_f64("SparseSoftmaxCrossEntropyWithLogits through Mean",
                 build_xent_mean, "SparseSoftmaxCrossEntropyWithLogits", in, 2,
                 0x2u);
  }
}

/* Large logits: the loss's gradient (softmax - labels) stays exact. */
Test(nn_gradients, cross_entropy_large_logits) {
  double f[12];
  gt_fill_distinct(f, 12, 7);
  for (int i = 0; i < 12; ++i) f[i] = 500.0 * (i % 2 ? 1 : -1) + f[i];
  const double labels[3] = {1, 0, 3};
  gc_input in[2] = {{WEFT_FLOAT64, WT_DIMS(3, 4), 2, f, 0},
                    {WEFT_INT32, WT_DIMS(3), 1, labels, 0}};
  gc_check(
      "SparseSoftmaxCrossEntropyWithLogits, large logits", build_xent_mean,
      "SparseSoftmaxCrossEntropyWithLogits", in, 2, 0x2u, 1e-5, 1e-7, 1e-5);
}

/* The second output is the gradient itself: differentiating through it is
 * refused by name rather than answered wrongly. */
Test(nn_gradients, cross_entropy_backprop_output_refused) {
  weft_graph* g = wt_graph_new();
  weft_output in[2] = {
      wt_placeholder(g, "f", WEFT_FLOAT64, WT_SHAPE(2, 3)),
      wt_placeholder(g, "l", WEFT_FLOAT64, WT_SHAPE(2, 3))};
  weft_output xent = apply(g, "SoftmaxCrossEntropyWithLogits", "xent", in, 2);
  weft_output backprop = {xent.node, 1};
  weft_output grads[1];
  WT_EXPECT_ERROR(weft_gradients(g, &backprop, 1, in, 1, NULL, grads),
                  WEFT_UNIMPLEMENTED, "backprop");
  weft_graph_destroy(g);
}

/* ---- Convolution ------------------------------------------------------ */

typedef struct window {
  const char* op;
  int64_t kh, kw;   /* ksize for pools */
  int64_t sh, sw;
  int64_t dh, dw;   /* dilations for Conv2D; 0: not set */
  const char* padding;
} window;

static void set_window(weft_op_builder* b, const window* w) {
  weft_op_set_attr_int_list(b, "strides", WT_DIMS(1, w->sh, w->sw, 1), 4);
  weft_op_set_attr_string(b, "padding", w->padding);
  if (w->dh > 0)
    weft_op_set_attr_int_list(b, "dilations", WT_DIMS(1, w->dh, w->dw, 1), 4);
  if (w->kh > 0)
    weft_op_set_attr_int_list(b, "ksize", WT_DIMS(1, w->kh, w->kw, 1), 4);
}

static weft_output build_window_op(weft_graph* g, const weft_output* xs,
                                   int32_t n, void* arg) {
  const window* w = arg;
  weft_op_builder* b = weft_op_begin(g, w->op, "y");
  for (int32_t i = 0; i < n; ++i) weft_op_add_input(b, xs[i]);
  set_window(b, w);
  return gt_finish(b);
}

/* Odd sizes, stride 2 with SAME (uneven padding) and VALID (a dropped
 * last column), stride 1 with dilation 2, and a 1x1 filter. */
static const window kConvs[] = {
    {"Conv2D", 0, 0, 2, 2, 0, 0, "SAME"},
    {"Conv2D", 0, 0, 2, 2, 0, 0, "VALID"},
    {"Conv2D", 0, 0, 1, 2, 1, 1, "SAME"},
    {"Conv2D", 0, 0, 1, 1, 2, 2, "VALID"},
    {"Conv2D", 0, 0, 1, 1, 2, 1, "SAME"},
};

Test(nn_gradients, conv2d) {
  double in[150], filter[108];
  gt_fill_distinct(in, 150, 8);
  gt_fill_distinct(filter, 108, 9);
  for (size_t c = 0; c < sizeof kConvs / sizeof kConvs[0]; ++c) {
    for (int unknown = 0; unknown < 2; ++unknown) {
      gc_input x[2] = {
          {WEFT_FLOAT64, WT_DIMS(2, 5, 5, 3), 4, in, unknown ? 1u : 0u},
          {WEFT_FLOAT64, WT_DIMS(3, 3, 3, 4), 4, filter, 0}};
      char what[96];
      snprintf(what, sizeof what, "Conv2D %s stride %lld,%lld dil %lld%s",
               kConvs[c].padding, (long long)kConvs[c].sh,
               (long long)kConvs[c].sw, (long long)kConvs[c].dh,
               unknown ? " (unknown batch)" : "");
      gc_check_f64(what, build_window_op, (void*)&kConvs[c], x, 2, 0);
    }
  }
  /* A 1x1 filter, whose forward takes the GEMM-only path. */
  gc_input x[2] = {{WEFT_FLOAT64, WT_DIMS(2, 5, 5, 3), 4, in, 0},
                   {WEFT_FLOAT64, WT_DIMS(1, 1, 3, 2), 4, filter, 0}};
  const window one = {"Conv2D", 0, 0, 1, 1, 0, 0, "SAME"};
  gc_check_f64("Conv2D 1x1", build_window_op, (void*)&one, x, 2, 0);
}

/* The backprop ops directly: their gradients (second derivatives of
 * Conv2D) are Conv2D and the other backprop op. */
typedef struct backprop_case {
  window w;
  int64_t sizes[4];
} backprop_case;

static weft_output build_backprop(weft_graph* g, const weft_output* xs,
                                  int32_t n, void* arg) {
  const backprop_case* c = arg;
  weft_op_builder* b = weft_op_begin(g, c->w.op, "y");
  for (int32_t i = 0; i < n; ++i) weft_op_add_input(b, xs[i]);
  set_window(b, &c->w);
  weft_op_set_attr_int_list(
      b, strcmp(c->w.op, "Conv2DBackpropFilter") == 0 ? "filter_sizes"
                                                       : "input_sizes",
      c->sizes, 4);
  return gt_finish(b);
}

Test(nn_gradients, conv2d_backprop_ops) {
  double a[150], b[108];
  gt_fill_distinct(a, 150, 10);
  gt_fill_distinct(b, 108, 11);
  /* input [2,5,5,3], filter [3,3,3,4], SAME stride 2: out [2,3,3,4]. */
  const backprop_case bi = {{"Conv2DBackpropInput", 0, 0, 2, 2, 0, 0, "SAME"},
                            {-1, 5, 5, -1}};
  gc_input in_bi[2] = {{WEFT_FLOAT64, WT_DIMS(3, 3, 3, 4), 4, b, 0},
                       {WEFT_FLOAT64, WT_DIMS(2, 3, 3, 4), 4, a, 1u}};
  gc_check_f64("Conv2DBackpropInput", build_backprop, (void*)&bi, in_bi, 2, 0);
  const backprop_case bf = {{"Conv2DBackpropFilter", 0, 0, 2, 2, 0, 0,
                             "VALID"},
                            {3, 3, 3, 4}};
  /* input [2,5,5,3] VALID stride 2: out [2,2,2,4]. */
  gc_input in_bf[2] = {{WEFT_FLOAT64, WT_DIMS(2, 5, 5, 3), 4, a, 0},
                       {WEFT_FLOAT64, WT_DIMS(2, 2, 2, 4), 4, b, 0}};
  gc_check_f64("Conv2DBackpropFilter", build_backprop, (void*)&bf, in_bf, 2,
               0);
}

/* ---- Pooling ------------------------------------------------------------ */

static const window kPools[] = {
    {NULL, 3, 3, 2, 2, 0, 0, "SAME"},  {NULL, 3, 3, 2, 2, 0, 0, "VALID"},
    {NULL, 2, 2, 3, 3, 0, 0, "VALID"}, {NULL, 2, 3, 1, 2, 0, 0, "SAME"},
    {NULL, 1, 1, 2, 2, 0, 0, "SAME"},
};

static void check_pools(const char* op) {
  double in[100];
  gt_fill_distinct(in, 100, 12);
  for (size_t c = 0; c < sizeof kPools / sizeof kPools[0]; ++c) {
    window w = kPools[c];
    w.op = op;
    gc_input x = {WEFT_FLOAT64, WT_DIMS(2, 5, 5, 2), 4, in, c % 2 ? 1u : 0u};
    char what[96];
    snprintf(what, sizeof what, "%s %lldx%lld stride %lld,%lld %s", op,
             (long long)w.kh, (long long)w.kw, (long long)w.sh,
             (long long)w.sw, w.padding);
    gc_check_f64(what, build_window_op, &w, &x, 1, 0);
  }
}

Test(nn_gradients, max_pool) { check_pools("MaxPool"); }
Test(nn_gradients, avg_pool) { check_pools("AvgPool"); }

Test(nn_gradients, avg_pool_grad) {
  double g[18];
  gt_fill_distinct(g, 18, 13);
  /* AvgPool 3x3 stride 2 SAME of [2,5,5,1] gives [2,3,3,1]. */
  const backprop_case c = {{"AvgPoolGrad", 3, 3, 2, 2, 0, 0, "SAME"},
                           {-1, 5, 5, -1}};
  gc_input x = {WEFT_FLOAT64, WT_DIMS(2, 3, 3, 1), 4, g, 1u};
  gc_check_f64("AvgPoolGrad", build_backprop, (void*)&c, &x, 1, 0);
}

/* ---- Batch normalisation ------------------------------------------------ */

static weft_output build_batch_norm(weft_graph* g, const weft_output* xs,
                                    int32_t n, void* arg) {
  weft_op_builder* b =
      weft_op_begin(g, "BatchNormWithGlobalNormalization", "y");
  for (int32_t i = 0; i < n; ++i) weft_op_add_input(b, xs[i]);
  weft_op_set_attr_float(b, "variance_epsilon", 1e-3);
  weft_op_set_attr_bool(b, "scale_after_normalization", *(const int*)arg);
  return gt_finish(b);
}

Test(nn_gradients, batch_norm) {
  double t[24], m[3], v[3], beta[3], gamma[3];
  gt_fill_distinct(t, 24, 14);
  gt_fill_distinct(m, 3, 15);
  gt_fill_distinct(beta, 3, 16);
  gt_fill_distinct(gamma, 3, 17);
  for (int i = 0; i < 3; ++i) v[i] = 0.5 + 0.7 * i;
  for (int scale = 0; scale < 2; ++scale) {
    gc_input in[5] = {{WEFT_FLOAT64, WT_DIMS(2, 2, 2, 3), 4, t, 1u},
                      {WEFT_FLOAT64, WT_DIMS(3), 1, m, 0},
                      {WEFT_FLOAT64, WT_DIMS(3), 1, v, 0},
                      {WEFT_FLOAT64, WT_DIMS(3), 1, beta, 0},
                      {WEFT_FLOAT64, WT_DIMS(3), 1, gamma, 0}};
    gc_check_f64(scale ? "BatchNorm, scaled" : "BatchNorm, unscaled",
                 build_batch_norm, &scale, in, 5, 0);
    gc_input flat[5];
    memcpy(flat, in, sizeof flat);
    flat[0] = (gc_input){WEFT_FLOAT64, WT_DIMS(8, 3), 2, t, 0};
    gc_check_f64("BatchNorm [8,3]", build_batch_norm, &scale, flat, 5, 0);
  }
}

/* ---- A two-layer perceptron, end to end ---------------------------------- */

/* loss = mean(xent(relu(x W1 + b1) W2 + b2, labels)); inputs x, W1, b1,
 * W2, b2, labels. */
static weft_output build_mlp(weft_graph* g, const weft_output* xs, int32_t n,
                             void* arg) {
  (void)n;
  (void)arg;
  weft_output h = apply(g, "MatMul", "mm1", xs, 2);
  weft_output hb[2] = {h, xs[2]};
  h = apply(g, "BiasAdd", "bias1", hb, 2);
  h = apply(g, "Relu", "relu", &h, 1);
  weft_output o[2] = {h, xs[3]};
  weft_output logits = apply(g, "MatMul", "mm2", o, 2);
  weft_output ob[2] = {logits, xs[4]};
  logits = apply(g, "BiasAdd", "bias2", ob, 2);
  weft_output xent[2] = {logits, xs[5]};
  weft_output loss =
      apply(g, "SoftmaxCrossEntropyWithLogits", "xent", xent, 2);
  return mean_all(g, "loss", loss);
}

Test(nn_gradients, two_layer_perceptron) {
  double x[20], w1[24], b1[6], w2[18], b2[3], labels[15];
  gt_fill_distinct(x, 20, 18);
  gt_fill_distinct(w1, 24, 19);
  gt_fill_distinct(b1, 6, 20);
  gt_fill_distinct(w2, 18, 21);
  gt_fill_distinct(b2, 3, 22);
  for (int i = 0; i < 15; ++i) labels[i] = (i % 3 == (i / 3) % 3) ? 1 : 0;
  gc_input in[6] = {{WEFT_FLOAT64, WT_DIMS(5, 4), 2, x, 1u},
                    {WEFT_FLOAT64, WT_DIMS(4, 6), 2, w1, 0},
                    {WEFT_FLOAT64, WT_DIMS(6), 1, b1, 0},
                    {WEFT_FLOAT64, WT_DIMS(6, 3), 2, w2, 0},
                    {WEFT_FLOAT64, WT_DIMS(3), 1, b2, 0},
                    {WEFT_FLOAT64, WT_DIMS(5, 3), 2, labels, 1u}};
  /* Every weight and the input; the labels are fed, not differentiated. */
  gc_check_f64("two-layer perceptron", build_mlp, NULL, in, 6, 1u << 5);
}

/* Every op of the family has a gradient or is declared without one. */
Test(nn_gradients, declared) {
  const char* with[] = {"BiasAdd", "Softmax", "LogSoftmax",
                        "SoftmaxCrossEntropyWithLogits",
                        "SparseSoftmaxCrossEntropyWithLogits", "Conv2D",
                        "MaxPool", "AvgPool",
                        "BatchNormWithGlobalNormalization",
                        "Conv2DBackpropInput", "Conv2DBackpropFilter",
                        "AvgPoolGrad"};
  for (size_t i = 0; i < sizeof with / sizeof with[0]; ++i)
    cr_expect_eq(weft_op_gradient_status(with[i]), 1, "%s", with[i]);
  cr_expect_eq(weft_op_gradient_status("MaxPoolGrad"), 0);
}

/* float32, where the forward Conv2D and pools run on oneDNN (when built
 * with it) and the gradient kernels on Eigen and loops: both must agree on
 * the geometry.  A coarser step and tolerance for single precision. */
Test(nn_gradients, conv_and_pools_float32) {
  double in[150], filter[108];
  gt_fill_distinct(in, 150, 23);
  gt_fill_distinct(filter, 108, 24);
  const window conv = {"Conv2D", 0, 0, 2, 2, 0, 0, "SAME"};
  gc_input x[2] = {{WEFT_FLOAT32, WT_DIMS(2, 5, 5, 3), 4, in, 1u},
                   {WEFT_FLOAT32, WT_DIMS(3, 3, 3, 4), 4, filter, 0}};
  gc_check("Conv2D float32", build_window_op, (void*)&conv, x, 2, 0, 1e-2,
           2e-3, 1e-2);
  for (int k = 0; k < 2; ++k) {
    window pool = kPools[k];
    pool.op = k ? "AvgPool" : "MaxPool";
    gc_input p = {WEFT_FLOAT32, WT_DIMS(2, 5, 5, 3), 4, in, 0};
    gc_check(pool.op, build_window_op, &pool, &p, 1, 0, 1e-3, 2e-3, 1e-2);
  }
}
