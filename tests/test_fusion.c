/* The planner's fusions (runtime/session/fuse.cc), Conv2D + BiasAdd + Relu
 * and MaxPoolGrad + ReluGrad: the fused plan gives the unfused result,
 * forward and through the gradients; run metadata lists the fusion; chains whose intermediate
 * values are read elsewhere are left alone; FusedConv2D used directly has a
 * gradient that agrees with central differences. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "grad_check.h"
#include "test_support.h"

static weft_output conv_bias_relu(weft_graph* g, weft_output x,
                                  weft_output f, weft_output b,
                                  const char* prefix, int64_t stride,
                                  const char* padding) {
  char name[64];
  snprintf(name, sizeof name, "%s_conv", prefix);
  weft_op_builder* c = weft_op_begin(g, "Conv2D", name);
  weft_op_add_input(c, x);
  weft_op_add_input(c, f);
  const int64_t strides[4] = {1, stride, stride, 1};
  weft_op_set_attr_int_list(c, "strides", strides, 4);
  weft_op_set_attr_string(c, "padding", padding);
  weft_node* conv = NULL;
  WT_OK(weft_op_finish(c, &conv));
  snprintf(name, sizeof name, "%s_bias", prefix);
  weft_output biased = wt_apply2(g, "BiasAdd", name, (weft_output){conv, 0}, b);
  snprintf(name, sizeof name, "%s_relu", prefix);
  return wt_apply1(g, "Relu", name, biased);
}

static weft_session* session_with(weft_graph* g, uint32_t optimizations) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.optimizations = optimizations;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &o, &s));
  return s;
}

static weft_tensor* random_tensor(weft_dtype dtype, const int64_t* dims,
                                  int32_t rank, uint64_t seed) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  wt_rng rng = {seed};
  double* v = malloc((size_t)n * sizeof *v);
  float* f = malloc((size_t)n * sizeof *f);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = wt_rng_uniform(&rng, -1, 1);
    f[i] = (float)v[i];
  }
  weft_tensor* t = wt_tensor(dtype, dims, rank, dtype == WEFT_FLOAT64
                                                    ? (void*)v : (void*)f);
  free(v);
  free(f);
  return t;
}

/* Runs fetches with and without fusion; expects `fusions` fusions with it
 * and equal outputs (within tol). */
static void compare(weft_graph* g, weft_output x, weft_tensor* xv,
                    const weft_output* fetches, int32_t n, int32_t fusions,
                    double tol) {
  weft_tensor* got[2][4];
  for (int k = 0; k < 2; ++k) {
    weft_session* s = session_with(
        g, k ? WEFT_OPTIMIZE_ALL : WEFT_OPTIMIZE_ALL & ~WEFT_OPTIMIZE_FUSION);
    weft_run_metadata* m = weft_run_metadata_create();
    WT_OK(weft_session_run_with_metadata(s, &x, &xv, 1, fetches, n, NULL, 0,
                                         got[k], m));
    cr_expect_eq(weft_run_metadata_num_fused(m), k ? fusions : 0,
                 "fusions with fusion %s: %d",
                 k ? "on" : "off", weft_run_metadata_num_fused(m));
    if (k && fusions > 0) {
      const char *node = NULL, *what = NULL;
      WT_OK(weft_run_metadata_fused(m, 0, &node, &what));
      cr_expect(strstr(what, "Conv2D") && strstr(what, "BiasAdd") &&
                    strstr(what, "Relu"),
                "fusion described as '%s'", what);
      for (int32_t i = 0; i < weft_run_metadata_num_nodes(m); ++i)
        if (strcmp(weft_run_metadata_node_name(m, i), node) == 0)
          cr_expect_str_eq(weft_run_metadata_node_op(m, i), "FusedConv2D");
    }
    weft_run_metadata_destroy(m);
    weft_session_destroy(s);
  }
  for (int32_t i = 0; i < n; ++i) {
    const int64_t count = weft_tensor_element_count(got[0][i]);
    cr_assert_eq(weft_tensor_element_count(got[1][i]), count);
    const int f64 = weft_tensor_dtype(got[0][i]) == WEFT_FLOAT64;
    for (int64_t e = 0; e < count; ++e) {
      double a = f64 ? ((const double*)weft_tensor_data(got[0][i]))[e]
                     : ((const float*)weft_tensor_data(got[0][i]))[e];
      double b = f64 ? ((const double*)weft_tensor_data(got[1][i]))[e]
                     : ((const float*)weft_tensor_data(got[1][i]))[e];
      /* NaN only where the other is NaN too (Relu passes NaN on), an
       * infinity only where the other has the same one. */
      cr_assert(isnan(a)   ? isnan(b)
                : isinf(a) ? a == b
                           : fabs(a - b) <= tol + tol * fabs(a),
                "fetch %d element %lld: unfused %.9g, fused %.9g", i,
                (long long)e, a, b);
    }
    weft_tensor_destroy(got[0][i]);
    weft_tensor_destroy(got[1][i]);
  }
}

Test(fusion, fused_convolution_gives_the_unfused_result) {
  const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    weft_graph* g = wt_graph_new();
    weft_output x = wt_placeholder(g, "x", types[t], WT_DIMS(2, 9, 9, 3), 4);
    weft_output f = wt_const(g, "f", random_tensor(types[t],
                                                   WT_DIMS(3, 3, 3, 4), 4, 2));
    weft_output b = wt_const(g, "b", random_tensor(types[t], WT_DIMS(4), 1, 3));
    weft_output f2 = wt_const(g, "f2", random_tensor(types[t],
                                                     WT_DIMS(2, 2, 4, 5), 4, 4));
    weft_output b2 = wt_const(g, "b2", random_tensor(types[t], WT_DIMS(5), 1, 5));
    weft_output h = conv_bias_relu(g, x, f, b, "one", 1, "SAME");
    weft_output y = conv_bias_relu(g, h, f2, b2, "two", 2, "VALID");
    weft_tensor* xv = random_tensor(types[t], WT_DIMS(2, 9, 9, 3), 4, 1);
    compare(g, x, xv, &y, 1, 2, types[t] == WEFT_FLOAT64 ? 1e-12 : 1e-5);
    weft_tensor_destroy(xv);
    weft_graph_destroy(g);
  }
}

/* relu(conv(x, f) + b) with finite operands whose sums overflow: x all
 * 3e38, f +2 for output channel 0 (+inf), -2 for channel 1 (-inf, then
 * 0), 0 for channel 2 (the bias, -0.5, then 0); fused (the planner did
 * fuse) and not. */
static void overflow_case(void) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(1, 4, 4, 2), 4);
  float fv[3 * 3 * 2 * 3], bv[3] = {0.5f, 0, -0.5f}, xv[4 * 4 * 2];
  for (int i = 0; i < 3 * 3 * 2 * 3; ++i) {
    fv[i] = i % 3 == 0 ? 2.0f : i % 3 == 1 ? -2.0f : 0.0f;
  }
  for (int i = 0; i < 4 * 4 * 2; ++i) xv[i] = 3e38f;
  weft_output f = wt_const(g, "f", wt_tensor(WEFT_FLOAT32, WT_DIMS(3, 3, 2, 3),
                                             4, fv));
  weft_output b = wt_const(g, "b", wt_tensor(WEFT_FLOAT32, WT_DIMS(3), 1, bv));
  weft_output y = conv_bias_relu(g, x, f, b, "c", 1, "SAME");
  weft_tensor* in = wt_tensor(WEFT_FLOAT32, WT_DIMS(1, 4, 4, 2), 4, xv);
  for (int k = 0; k < 2; ++k) {
    weft_session* s = session_with(
        g, k ? WEFT_OPTIMIZE_ALL : WEFT_OPTIMIZE_ALL & ~WEFT_OPTIMIZE_FUSION);
    weft_run_metadata* m = weft_run_metadata_create();
    weft_tensor* out = NULL;
    WT_OK(weft_session_run_with_metadata(s, &x, &in, 1, &y, 1, NULL, 0, &out,
                                         m));
    cr_expect_eq(weft_run_metadata_num_fused(m), k);
    const float* v = weft_tensor_data(out);
    for (int i = 0; i < 4 * 4 * 3; ++i) {
      if (i % 3 == 0) {
        cr_expect(isinf(v[i]) && v[i] > 0, "fusion %d, %d: %g", k, i, v[i]);
      } else {
        cr_expect(v[i] == 0, "fusion %d, element %d: %g", k, i, v[i]);
      }
    }
    weft_run_metadata_destroy(m);
    weft_tensor_destroy(out);
    weft_session_destroy(s);
  }
  weft_tensor_destroy(in);
  weft_graph_destroy(g);
}

/* A NaN in the input reaches the outputs it feeds as NaN, fused or not:
 * Weft's Relu passes NaN on (a max instruction would return 0 for it, as
 * oneDNN's ReLU post-op does).  Infinities too, and finite inputs whose
 * sums overflow (overflow_case). */
Test(fusion, fused_convolution_keeps_nan_and_infinity) {
  const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    weft_graph* g = wt_graph_new();
    weft_output x = wt_placeholder(g, "x", types[t], WT_DIMS(1, 6, 6, 2), 4);
    weft_output f = wt_const(g, "f", random_tensor(types[t],
                                                   WT_DIMS(3, 3, 2, 3), 4, 21));
    weft_output b = wt_const(g, "b", random_tensor(types[t], WT_DIMS(3), 1, 22));
    weft_output y = conv_bias_relu(g, x, f, b, "c", 1, "SAME");
    weft_tensor* xv = random_tensor(types[t], WT_DIMS(1, 6, 6, 2), 4, 23);
    const int64_t nan_at = (1 * 6 + 1) * 2, inf_at = (4 * 6 + 4) * 2 + 1;
    if (types[t] == WEFT_FLOAT64) {
      ((double*)weft_tensor_data(xv))[nan_at] = NAN;
      ((double*)weft_tensor_data(xv))[inf_at] = INFINITY;
    } else {
      ((float*)weft_tensor_data(xv))[nan_at] = NAN;
      ((float*)weft_tensor_data(xv))[inf_at] = INFINITY;
    }
    compare(g, x, xv, &y, 1, 1, types[t] == WEFT_FLOAT64 ? 1e-12 : 1e-5);
    if (types[t] == WEFT_FLOAT32) overflow_case();
    /* The fused result has NaN around (1, 1), as the unfused one (compared
     * above): the comparison is not vacuous. */
    weft_session* s = session_with(g, WEFT_OPTIMIZE_ALL);
    weft_tensor* out = NULL;
    WT_OK(weft_session_run(s, &x, &xv, 1, &y, 1, NULL, 0, &out));
    const double first = types[t] == WEFT_FLOAT64
                             ? ((const double*)weft_tensor_data(out))[0]
                             : ((const float*)weft_tensor_data(out))[0];
    cr_expect(isnan(first), "output (0, 0, 0) is %g, not NaN", first);
    weft_tensor_destroy(out);
    weft_session_destroy(s);
    weft_tensor_destroy(xv);
    weft_graph_destroy(g);
  }
}

Test(fusion, values_read_elsewhere_stay_unfused) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(1, 5, 5, 2), 4);
  weft_output f = wt_const(g, "f", random_tensor(WEFT_FLOAT32,
                                                 WT_DIMS(3, 3, 2, 3), 4, 7));
  weft_output b = wt_const(g, "b", random_tensor(WEFT_FLOAT32, WT_DIMS(3), 1, 8));
  weft_output y = conv_bias_relu(g, x, f, b, "c", 1, "SAME");
  weft_tensor* xv = random_tensor(WEFT_FLOAT32, WT_DIMS(1, 5, 5, 2), 4, 9);
  /* The BiasAdd's output is fetched too: nothing is fused. */
  weft_output biased = {weft_graph_node_by_name(g, "c_bias"), 0};
  weft_output both[2] = {y, biased};
  compare(g, x, xv, both, 2, 0, 1e-6);
  /* The Conv2D's output read by another op: nothing is fused. */
  weft_output conv = {weft_graph_node_by_name(g, "c_conv"), 0};
  weft_output other = wt_apply2(g, "Add", "other", y, wt_apply1(g, "Neg", NULL, conv));
  compare(g, x, xv, &other, 1, 0, 1e-6);
  weft_tensor_destroy(xv);
  weft_graph_destroy(g);
}

/* A training step's gradients with and without fusion: the backward pass
 * reads the Relu's output and the Conv2D's inputs, never the fused
 * values. */
Test(fusion, gradients_are_the_same_fused_or_not) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(2, 8, 8, 3), 4);
  weft_output f = wt_const(g, "f", random_tensor(WEFT_FLOAT32,
                                                 WT_DIMS(3, 3, 3, 4), 4, 11));
  weft_output b = wt_const(g, "b", random_tensor(WEFT_FLOAT32, WT_DIMS(4), 1, 12));
  weft_output y = conv_bias_relu(g, x, f, b, "c", 1, "SAME");
  weft_output r = wt_const(g, "r", random_tensor(WEFT_FLOAT32,
                                                 WT_DIMS(2, 8, 8, 4), 4, 13));
  weft_output loss = wt_apply1(g, "Sum", "loss", wt_apply2(g, "Mul", NULL, y, r));
  weft_output wrt[3] = {x, f, b}, grads[3];
  WT_OK(weft_gradients(g, &loss, 1, wrt, 3, NULL, grads));
  weft_tensor* xv = random_tensor(WEFT_FLOAT32, WT_DIMS(2, 8, 8, 3), 4, 14);
  compare(g, x, xv, grads, 3, 1, 1e-5);
  weft_tensor_destroy(xv);
  weft_graph_destroy(g);
}

/* FusedConv2D as an op of its own: its gradient against central
 * differences (float64). */
static weft_output build_fused(weft_graph* g, const weft_output* xs,
                               int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_op_builder* c = weft_op_begin(g, "FusedConv2D", "y");
  for (int i = 0; i < 3; ++i) weft_op_add_input(c, xs[i]);
  const int64_t strides[4] = {1, 2, 1, 1};
  weft_op_set_attr_int_list(c, "strides", strides, 4);
  weft_op_set_attr_string(c, "padding", "SAME");
  weft_node* node = NULL;
  WT_OK(weft_op_finish(c, &node));
  return (weft_output){node, 0};
}

Test(fusion, fused_conv2d_gradient_matches_central_differences) {
  double x[2 * 5 * 4 * 2], f[3 * 2 * 2 * 3], b[3] = {0.3, -0.2, 0.05};
  wt_rng rng = {21};
  for (size_t i = 0; i < sizeof x / sizeof x[0]; ++i)
    x[i] = wt_rng_uniform(&rng, -1, 1);
  for (size_t i = 0; i < sizeof f / sizeof f[0]; ++i)
    f[i] = wt_rng_uniform(&rng, -1, 1);
  gc_input in[3] = {{WEFT_FLOAT64, WT_DIMS(2, 5, 4, 2), 4, x, 0},
                    {WEFT_FLOAT64, WT_DIMS(3, 2, 2, 3), 4, f, 0},
                    {WEFT_FLOAT64, WT_DIMS(3), 1, b, 0}};
  gc_check_f64("FusedConv2D", build_fused, NULL, in, 3, 0);
}

/* The max-pool gradients: ReluGrad(MaxPoolGrad(h, g), h) from Relu ->
 * MaxPool becomes one MaxPoolReluGrad, and a max-pool gradient whose
 * forward MaxPool is in the plan reads the pool's window index
 * (MaxPoolWithWindowIndex) instead of its input.  The pool's output and
 * the gradient with respect to the Relu's input (or the pool's, without
 * the Relu) are the same, element for element (NaN where it was NaN), with
 * the fusions on and off.  Inputs with ties (repeated values, the zeros
 * Relu makes of negatives) and NaN; windows that tile the input (2x2
 * stride 2, with a VALID remainder row and column), that overlap (3x3
 * stride 2 SAME, 3x3 stride 1) and that leave gaps (2x2 stride 3). */
static void pool_grad_case(weft_dtype dtype, int relu, int64_t k,
                           int64_t stride, const char* padding) {
  weft_graph* g = wt_graph_new();
  const int64_t* dims = WT_DIMS(2, 9, 7, 3);
  weft_output x = wt_placeholder(g, "x", dtype, dims, 4);
  weft_output h = relu ? wt_apply1(g, "Relu", "h", x) : x;
  weft_op_builder* b = weft_op_begin(g, "MaxPool", "pool");
  weft_op_add_input(b, h);
  const int64_t ksize[4] = {1, k, k, 1}, strides[4] = {1, stride, stride, 1};
  weft_op_set_attr_int_list(b, "ksize", ksize, 4);
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_string(b, "padding", padding);
  weft_node* pool = NULL;
  WT_OK(weft_op_finish(b, &pool));
  weft_output p = {pool, 0};
  /* Sum(p * (p + 0.75)): the gradient 2p + 0.75 is nonzero where a
   * window's maximum is 0 (the values are multiples of 0.5), which the
   * Relu must then stop. */
  double shift64 = 0.75;
  float shift32 = 0.75f;
  weft_output shift = wt_const(
      g, "shift", wt_tensor(dtype, NULL, 0,
                            dtype == WEFT_FLOAT64 ? (void*)&shift64
                                                  : (void*)&shift32));
  weft_output loss = wt_apply1(
      g, "Sum", "loss",
      wt_apply2(g, "Mul", NULL, p, wt_apply2(g, "Add", NULL, p, shift)));
  weft_output fetches[2] = {p, {0}};
  WT_OK(weft_gradients(g, &loss, 1, &x, 1, NULL, &fetches[1]));

  const int64_t n = 2 * 9 * 7 * 3;
  double v[2 * 9 * 7 * 3];
  wt_rng rng = {31};
  for (int64_t i = 0; i < n; ++i) {
    /* Few distinct values, so windows hold ties; a quarter negative. */
    v[i] = (double)((int64_t)(wt_rng_uniform(&rng, -1, 3))) * 0.5;
    if (i % 37 == 5) v[i] = NAN;
  }
  float f[2 * 9 * 7 * 3];
  for (int64_t i = 0; i < n; ++i) f[i] = (float)v[i];
  weft_tensor* xv =
      wt_tensor(dtype, dims, 4, dtype == WEFT_FLOAT64 ? (void*)v : (void*)f);
  const char* want_ops[2] = {
      "MaxPoolWithWindowIndex",
      relu ? "MaxPoolReluGradFromWindowIndex" : "MaxPoolGradFromWindowIndex"};
  weft_tensor* got[2][2];
  for (int on = 0; on < 2; ++on) {
    weft_session* s = session_with(
        g, on ? WEFT_OPTIMIZE_ALL : WEFT_OPTIMIZE_ALL & ~WEFT_OPTIMIZE_FUSION);
    weft_run_metadata* m = weft_run_metadata_create();
    WT_OK(weft_session_run_with_metadata(s, &x, &xv, 1, fetches, 2, NULL, 0,
                                         got[on], m));
    const int32_t fused = weft_run_metadata_num_fused(m);
    cr_expect_eq(fused, on ? 2 : 0, "fusions: %d", fused);
    for (int32_t e = 0; on && e < fused; ++e) {
      const char *node = NULL, *what = NULL;
      WT_OK(weft_run_metadata_fused(m, e, &node, &what));
      const char* op = NULL;
      for (int32_t i = 0; i < weft_run_metadata_num_nodes(m); ++i)
        if (strcmp(weft_run_metadata_node_name(m, i), node) == 0)
          op = weft_run_metadata_node_op(m, i);
      cr_assert(op != NULL, "fused node '%s' not in the run metadata", node);
      cr_expect(strcmp(op, want_ops[0]) == 0 || strcmp(op, want_ops[1]) == 0,
                "fused node '%s' runs %s", node, op);
      if (strcmp(op, want_ops[1]) == 0)
        cr_expect(strstr(what, "window index") &&
                      (!relu || (strstr(what, "MaxPoolGrad") &&
                                 strstr(what, "ReluGrad"))),
                  "fusion described as '%s'", what);
    }
    weft_run_metadata_destroy(m);
    weft_session_destroy(s);
  }
  int nonzero = 0;
  for (int o = 0; o < 2; ++o) {
    const int64_t count = weft_tensor_element_count(got[0][o]);
    cr_assert_eq(weft_tensor_element_count(got[1][o]), count);
    for (int64_t i = 0; i < count; ++i) {
      double a = dtype == WEFT_FLOAT64
                     ? ((const double*)weft_tensor_data(got[0][o]))[i]
                     : ((const float*)weft_tensor_data(got[0][o]))[i];
      double c = dtype == WEFT_FLOAT64
                     ? ((const double*)weft_tensor_data(got[1][o]))[i]
                     : ((const float*)weft_tensor_data(got[1][o]))[i];
      cr_assert(a == c || (isnan(a) && isnan(c)),
                "%s relu=%d k=%lld s=%lld %s %s element %lld: unfused %g, "
                "fused %g", dtype == WEFT_FLOAT64 ? "float64" : "float32",
                relu, (long long)k, (long long)stride, padding,
                o ? "gradient" : "pool", (long long)i, a, c);
      nonzero += o == 1 && a != 0;
    }
    weft_tensor_destroy(got[0][o]);
    weft_tensor_destroy(got[1][o]);
  }
  cr_expect(nonzero > 10, "only %d nonzero gradients: the case tests little",
            nonzero);
  weft_tensor_destroy(xv);
  weft_graph_destroy(g);
}

Test(fusion, max_pool_gradients_are_the_same_fused_or_not) {
  const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    for (int relu = 0; relu < 2; ++relu) {
      pool_grad_case(types[t], relu, 2, 2, "VALID");
      pool_grad_case(types[t], relu, 2, 2, "SAME");
      pool_grad_case(types[t], relu, 3, 2, "SAME");
      pool_grad_case(types[t], relu, 3, 1, "VALID");
      pool_grad_case(types[t], relu, 2, 3, "VALID");
    }
  }
}

/* The window-index ops used directly: an index that names no element of
 * its window (not made by MaxPoolWithWindowIndex with these attributes) is
 * an error naming the node, never a write outside the output; a window of
 * more than 256 elements, and an index that is not uint8, are refused when
 * the graph is built. */
/* A window-index op over `a` and `b` (b may be absent) with 2x2 windows
 * (or ksize `k`), stride 2, VALID and input_sizes [1, 4, 4, 2]. */
static weft_status* window_index_op(weft_graph* g, const char* op,
                                    const char* name, weft_output a,
                                    const weft_output* b, const int64_t* k,
                                    weft_node** out) {
  const int64_t two[4] = {1, 2, 2, 1}, sizes[4] = {1, 4, 4, 2};
  weft_op_builder* o = weft_op_begin(g, op, name);
  weft_op_add_input(o, a);
  if (b != NULL) {
    weft_op_add_input(o, *b);
    weft_op_set_attr_int_list(o, "input_sizes", sizes, 4);
  }
  weft_op_set_attr_int_list(o, "ksize", k != NULL ? k : two, 4);
  weft_op_set_attr_int_list(o, "strides", two, 4);
  weft_op_set_attr_string(o, "padding", "VALID");
  return weft_op_finish(o, out);
}

Test(fusion, window_index_ops_refuse_what_they_cannot_use) {
  weft_graph* g = wt_graph_new();
  weft_output idx =
      wt_placeholder(g, "idx", WEFT_UINT8, WT_DIMS(1, 2, 2, 2), 4);
  weft_output grad =
      wt_placeholder(g, "grad", WEFT_FLOAT32, WT_DIMS(1, 2, 2, 2), 4);
  const int64_t big[4] = {1, 17, 16, 1};
  weft_node* back = NULL;
  WT_OK(window_index_op(g, "MaxPoolGradFromWindowIndex", "back", idx, &grad,
                        NULL, &back));
  weft_session* s = session_with(g, WEFT_OPTIMIZE_ALL);
  uint8_t good[8] = {0, 1, 2, 3, 3, 2, 1, 0}, bad[8] = {0, 1, 2, 3, 4, 0, 0, 0};
  float gv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  weft_tensor* vals[2] = {wt_tensor(WEFT_UINT8, WT_DIMS(1, 2, 2, 2), 4, good),
                          wt_tensor(WEFT_FLOAT32, WT_DIMS(1, 2, 2, 2), 4, gv)};
  weft_output feeds[2] = {idx, grad};
  weft_output out = {back, 0};
  weft_tensor* r = NULL;
  WT_OK(weft_session_run(s, feeds, vals, 2, &out, 1, NULL, 0, &r));
  /* Window (0,0), channel 0: position 0 = (0,0); channel 1: position 1 =
   * (0,1).  Window (0,1) channel 0: position 2 = (1,2). */
  const float* d = weft_tensor_data(r);
  cr_expect_eq(d[(0 * 4 + 0) * 2 + 0], 1.0f);
  cr_expect_eq(d[(0 * 4 + 1) * 2 + 1], 2.0f);
  cr_expect_eq(d[(1 * 4 + 2) * 2 + 0], 3.0f);
  float total = 0;
  for (int i = 0; i < 32; ++i) total += d[i];
  cr_expect_eq(total, 36.0f, "each gradient delivered once: total %g", total);
  weft_tensor_destroy(r);
  weft_tensor_destroy(vals[0]);
  vals[0] = wt_tensor(WEFT_UINT8, WT_DIMS(1, 2, 2, 2), 4, bad);
  r = NULL;
  weft_status* st = weft_session_run(s, feeds, vals, 2, &out, 1, NULL, 0, &r);
  cr_assert(st != NULL, "an index outside its window was accepted");
  cr_expect_eq(weft_status_code(st), WEFT_INVALID_ARGUMENT);
  cr_expect(strstr(weft_status_message(st), "back") &&
                strstr(weft_status_message(st), "outside its window"),
            "message: %s", weft_status_message(st));
  weft_status_destroy(st);
  weft_tensor_destroy(vals[0]);
  weft_tensor_destroy(vals[1]);
  weft_session_destroy(s);

  weft_node* wide = NULL;
  st = window_index_op(g, "MaxPoolWithWindowIndex", "wide",
                       wt_placeholder(g, "img", WEFT_FLOAT32,
                                      WT_DIMS(1, 20, 20, 1), 4),
                       NULL, big, &wide);
  cr_assert(st != NULL, "a 272-element window was accepted");
  cr_expect(strstr(weft_status_message(st), "256"), "message: %s",
            weft_status_message(st));
  weft_status_destroy(st);

  weft_node* fi = NULL;
  st = window_index_op(g, "MaxPoolGradFromWindowIndex", "float_index", grad,
                       &grad, NULL, &fi);
  cr_assert(st != NULL, "a float window_index was accepted");
  cr_expect(strstr(weft_status_message(st), "uint8"), "message: %s",
            weft_status_message(st));
  weft_status_destroy(st);
  weft_graph_destroy(g);
}

/* A whole conv -> bias -> ReLU -> max-pool layer, trained: the planner
 * fuses the forward (FusedConv2D, MaxPoolWithWindowIndex) and the backward
 * (MaxPoolReluGradFromWindowIndex, whose per-channel sums replace the bias
 * gradient's SumToShapeOf).  The gradients of the input, the filter and
 * the bias agree with the unfused plan's (the bias gradient's sum runs in
 * another order: within float rounding). */
Test(fusion, conv_relu_pool_layer_gradients_are_the_same_fused_or_not) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(3, 8, 8, 2), 4);
  weft_output f = wt_const(g, "f", random_tensor(WEFT_FLOAT32,
                                                 WT_DIMS(3, 3, 2, 5), 4, 41));
  weft_output b = wt_const(g, "b", random_tensor(WEFT_FLOAT32, WT_DIMS(5), 1, 42));
  weft_output h = conv_bias_relu(g, x, f, b, "c", 1, "SAME");
  weft_op_builder* p = weft_op_begin(g, "MaxPool", "pool");
  weft_op_add_input(p, h);
  const int64_t two[4] = {1, 2, 2, 1};
  weft_op_set_attr_int_list(p, "ksize", two, 4);
  weft_op_set_attr_int_list(p, "strides", two, 4);
  weft_op_set_attr_string(p, "padding", "VALID");
  weft_node* pool = NULL;
  WT_OK(weft_op_finish(p, &pool));
  weft_output r = wt_const(g, "r", random_tensor(WEFT_FLOAT32,
                                                 WT_DIMS(3, 4, 4, 5), 4, 43));
  weft_output loss = wt_apply1(
      g, "Sum", "loss", wt_apply2(g, "Mul", NULL, (weft_output){pool, 0}, r));
  weft_output wrt[3] = {x, f, b}, grads[3];
  WT_OK(weft_gradients(g, &loss, 1, wrt, 3, NULL, grads));
  weft_tensor* xv = random_tensor(WEFT_FLOAT32, WT_DIMS(3, 8, 8, 2), 4, 44);
  /* FusedConv2D, MaxPoolWithWindowIndex, MaxPoolReluGradFromWindowIndex
   * (MaxPoolGrad + ReluGrad) and the bias gradient's Identity. */
  compare(g, x, xv, grads, 3, 4, 1e-5);
  weft_session* s = session_with(g, WEFT_OPTIMIZE_ALL);
  weft_run_metadata* m = weft_run_metadata_create();
  weft_tensor* out[3] = {NULL};
  WT_OK(weft_session_run_with_metadata(s, &x, &xv, 1, grads, 3, NULL, 0, out,
                                       m));
  int bias_fused = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_fused(m); ++i) {
    const char *node = NULL, *what = NULL;
    WT_OK(weft_run_metadata_fused(m, i, &node, &what));
    bias_fused |= strstr(what, "SumToShapeOf") != NULL;
  }
  cr_expect(bias_fused, "the bias gradient's SumToShapeOf was not fused");
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(out[i]);
  weft_run_metadata_destroy(m);
  weft_session_destroy(s);
  weft_tensor_destroy(xv);
  weft_graph_destroy(g);
}
