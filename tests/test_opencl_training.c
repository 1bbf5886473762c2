/* The OpenCL plugin's training kernels against the CPU plugin's (the
 * method is in opencl_support.h): gradient ops, pooling and its gradients,
 * views, Fill, the optimizers' update ops, and weft_minimize training a
 * tiny MLP to the same losses on both devices. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "opencl_support.h"

TestSuite(opencl, .init = discover, .timeout = 240);

/* ---- Training: gradient ops, views, Fill, optimizers -------------------- */

/* One op over two fed float32 inputs of shapes a_dims and b_dims, values in
 * [lo, hi), compared within the tolerances. */
static void two_input_case(const char* op, const int64_t* a_dims,
                           int32_t a_rank, const int64_t* b_dims,
                           int32_t b_rank, float lo, float hi, double tol,
                           wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output a = feed(graph, &set, "a", random_f32(rng, a_dims, a_rank, lo, hi));
  weft_output b = feed(graph, &set, "b", random_f32(rng, b_dims, b_rank, lo, hi));
  set.fetches[0] = wt_apply2(graph, op, "z", a, b);
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "%s rank %d / %d", op, a_rank, b_rank);
  compare(graph, &set, tol, tol, what);
  release(&set);
  weft_graph_destroy(graph);
}

/* ---- Convolution and pooling --------------------------------------------- */

/* A pooling op over `x` with ksize = strides = 2 or 3x3 windows at stride
 * 2, SAME padding (clipped windows at the edges). */
static weft_output pool(weft_graph* graph, const char* op, const char* name,
                        const weft_output* inputs, int num_inputs,
                        int overlapping, int32_t output) {
  const int64_t k = overlapping ? 3 : 2;
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int i = 0; i < num_inputs; ++i) weft_op_add_input(b, inputs[i]);
  weft_op_set_attr_int_list(b, "ksize", (const int64_t[]){1, k, k, 1}, 4);
  weft_op_set_attr_int_list(b, "strides", (const int64_t[]){1, 2, 2, 1}, 4);
  weft_op_set_attr_string(b, "padding", "SAME");
  return finish(b, output);
}

/* Ties, NaN (first in a window, later in a window, two in one) and
 * infinities: which element is a window's maximum decides where its
 * gradient goes, and both devices must pick the same one
 * (runtime/ops/CONVENTIONS.md: the first maximum, the first NaN). */
Test(opencl, pooling_ties_and_nan_agree_with_the_cpu) {
  REQUIRE_OPENCL();
  for (int overlapping = 0; overlapping < 2; ++overlapping) {
    float v[2 * 5 * 5 * 3];
    for (int k = 0; k < 75 * 2; ++k) v[k] = (float)((k * 7) % 5) - 2;
    v[0] = NAN;       /* first of its window */
    v[3 * 4] = NAN;   /* later in a window */
    v[3 * 6] = NAN;   /* a second NaN nearby */
    v[3 * 20 + 1] = INFINITY;
    v[75 + 7] = -INFINITY;
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x",
                         wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 5, 5, 3), v));
    const int64_t out = 3;
    float g[2 * 3 * 3 * 3];
    for (int k = 0; k < 54; ++k) g[k] = (float)(k % 7) - 3;
    weft_output dy = feed(graph, &set, "dy",
                          wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, out, out, 3), g));
    weft_output max_in[1] = {x};
    set.fetches[0] = pool(graph, "MaxPool", "max", max_in, 1, overlapping, 0);
    weft_output grad_in[2] = {x, dy};
    set.fetches[1] =
        pool(graph, "MaxPoolGrad", "max_grad", grad_in, 2, overlapping, 0);
    set.fetches[2] = pool(graph, "MaxPoolReluGrad", "max_relu_grad", grad_in,
                          2, overlapping, 0);
    /* Its window index (output 1); its maximum is MaxPool's. */
    set.fetches[3] = pool(graph, "MaxPoolWithWindowIndex", "with_index",
                          max_in, 1, overlapping, 1);
    set.num_fetches = 4;
    compare(graph, &set, 0, 0, overlapping ? "3x3 windows" : "2x2 windows");
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* An index naming a position outside its (clipped) window cannot have
 * come from MaxPoolWithWindowIndex: INVALID_ARGUMENT naming the node and
 * the element, as on the CPU, never a write outside the gradient. */
Test(opencl, window_index_outside_its_window_is_an_error) {
  REQUIRE_OPENCL();
  for (int d = 0; d < 2; ++d) {
    const char* device = d == 0 ? OCL : "CPU";
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    /* 2x2 windows at stride 2 over 3x3 (SAME): the last row and column of
     * windows hold one row or column of the input.  Element 3 (window
     * (0, 1), channel 0) names position 1, column 1 of a window clipped
     * to one column. */
    uint8_t index[2 * 2] = {0, 0, 0, 0};
    index[1] = 1;
    float g[4] = {1, 2, 3, 4};
    weft_output ix = feed(graph, &set, "index",
                          wt_tensor(WEFT_UINT8, WT_SHAPE(1, 2, 2, 1), index));
    weft_output dy = feed(graph, &set, "dy",
                          wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 2, 2, 1), g));
    weft_op_builder* b =
        weft_op_begin(graph, "MaxPoolGradFromWindowIndex", "from_index");
    weft_op_add_input(b, ix);
    weft_op_add_input(b, dy);
    weft_op_set_attr_int_list(b, "input_sizes",
                              (const int64_t[]){1, 3, 3, 1}, 4);
    weft_op_set_attr_int_list(b, "ksize", (const int64_t[]){1, 2, 2, 1}, 4);
    weft_op_set_attr_int_list(b, "strides", (const int64_t[]){1, 2, 2, 1},
                              4);
    weft_op_set_attr_string(b, "padding", "SAME");
    set.fetches[0] = finish(b, 0);
    set.num_fetches = 1;
    weft_tensor* out[MAX_FETCHES] = {0};
    WT_EXPECT_ERROR(run_on(graph, device, &set, out), WEFT_INVALID_ARGUMENT,
                    "from_index", "window_index", "MaxPoolWithWindowIndex");
    release(&set);
    weft_graph_destroy(graph);
  }
}

Test(opencl, elementwise_gradients) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"ReluGrad", "SigmoidGrad", "TanhGrad",
                                     "SqrtGrad", "RsqrtGrad"};
  wt_rng rng = {20};
  for (size_t o = 0; o < sizeof kOps / sizeof *kOps; ++o) {
    /* SqrtGrad and RsqrtGrad divide by or cube y: keep it away from 0. */
    const int positive = o >= 3;
    const float lo = positive ? 0.1f : -2.0f;
    two_input_case(kOps[o], WT_SHAPE(37, 19), WT_SHAPE(37, 19), lo, 2.0f,
                   1e-6, &rng);
    two_input_case(kOps[o], WT_SHAPE(0, 4), WT_SHAPE(0, 4), lo, 2.0f, 1e-6,
                   &rng);
    two_input_case(kOps[o], NULL, 0, NULL, 0, lo, 2.0f, 1e-6, &rng);
  }
}

/* `op` (SumGrad or MeanGrad) of x [5, 30, 7] over `axes`, its grad the
 * matching reduction of another x-shaped value (so every shape agrees). */
static void spread_case(const char* op, const axes_case* axes, int keep,
                        wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(rng, WT_SHAPE(5, 30, 7), -1, 1));
  weft_output u = feed(graph, &set, "u", random_f32(rng, WT_SHAPE(5, 30, 7), -1, 1));
  weft_op_builder* b = weft_op_begin(graph, "Sum", "dy");
  weft_op_add_input(b, u);
  if (axes->has_axes) weft_op_set_attr_int_list(b, "axes", axes->axes, axes->count);
  weft_op_set_attr_bool(b, "keep_dims", keep);
  weft_output dy = finish(b, 0);
  b = weft_op_begin(graph, op, "dx");
  weft_op_add_input(b, dy);
  weft_op_add_input(b, x);
  if (axes->has_axes) weft_op_set_attr_int_list(b, "axes", axes->axes, axes->count);
  weft_op_set_attr_bool(b, "keep_dims", keep);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "%s over %d axes (keep_dims %d)", op,
           axes->has_axes ? axes->count : -1, keep);
  compare(graph, &set, 1e-5, 1e-5, what);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, sum_grad_and_mean_grad) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"SumGrad", "MeanGrad"};
  wt_rng rng = {21};
  for (int o = 0; o < 2; ++o) {
    for (size_t a = 0; a < sizeof kAxes / sizeof *kAxes; ++a) {
      for (int keep = 0; keep < 2; ++keep) {
        spread_case(kOps[o], &kAxes[a], keep, &rng);
      }
    }
  }
}

Test(opencl, sum_to_shape_of) {
  REQUIRE_OPENCL();
  wt_rng rng = {22};
  static const int64_t likes[][3] = {{6, 5},    {1, 5}, {6, 1}, {3, 5},
                                     {4, 1, 1}, {2, 5}, {4, 6, 5}};
  static const int32_t ranks[] = {2, 2, 2, 2, 3, 2, 3};
  for (size_t k = 0; k < sizeof ranks / sizeof *ranks; ++k) {
    two_input_case("SumToShapeOf", WT_SHAPE(4, 6, 5), likes[k], ranks[k], -1,
                   1, 1e-5, &rng);
  }
  two_input_case("SumToShapeOf", WT_SHAPE(4, 6, 5), NULL, 0, -1, 1, 1e-5,
                 &rng);
  two_input_case("SumToShapeOf", WT_SHAPE(300, 70), WT_SHAPE(70), -1, 1, 1e-4,
                 &rng);
  two_input_case("SumToShapeOf", WT_SHAPE(0, 3), WT_SHAPE(3), -1, 1, 0, &rng);
}

/* Views after a device op: same bytes, the new shape. */
Test(opencl, shape_views) {
  REQUIRE_OPENCL();
  wt_rng rng = {23};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(4, 1, 6), -1, 1));
  weft_output like = feed(graph, &set, "like", random_f32(&rng, WT_SHAPE(8, 3), -1, 1));
  weft_output neg = wt_apply1(graph, "Neg", "neg", x);
  weft_op_builder* b = weft_op_begin(graph, "Reshape", "reshaped");
  weft_op_add_input(b, neg);
  const int64_t shape[] = {-1, 12};
  weft_op_set_attr_int_list(b, "shape", shape, 2);
  set.fetches[0] = finish(b, 0);
  b = weft_op_begin(graph, "ExpandDims", "expanded");
  weft_op_add_input(b, neg);
  weft_op_set_attr_int(b, "axis", -1);
  set.fetches[1] = finish(b, 0);
  b = weft_op_begin(graph, "Squeeze", "squeezed");
  weft_op_add_input(b, neg);
  set.fetches[2] = finish(b, 0);
  set.fetches[3] = wt_apply2(graph, "ReshapeLike", "reshaped_like", neg, like);
  set.num_fetches = 4;
  compare(graph, &set, 0, 0, "views");
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, fill) {
  REQUIRE_OPENCL();
  for (int int_type = 0; int_type < 2; ++int_type) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    const float f = 2.5f;
    const int32_t i = -7;
    weft_output v = feed(graph, &set, "v",
                         int_type ? wt_tensor(WEFT_INT32, NULL, 0, &i)
                                  : wt_tensor(WEFT_FLOAT32, NULL, 0, &f));
    /* A device op first, so Fill reads a device value. */
    weft_output n = wt_apply1(graph, "Neg", "neg", v);
    weft_op_builder* b = weft_op_begin(graph, "Fill", "filled");
    weft_op_add_input(b, n);
    const int64_t shape[] = {3, 17};
    weft_op_set_attr_int_list(b, "shape", shape, 2);
    set.fetches[0] = finish(b, 0);
    set.num_fetches = 1;
    compare(graph, &set, 0, 0, "Fill");
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* SliceGrad (grad the box) or PadGrad (like the box) at `begin`. */
static void box_case(const char* op, const int64_t* grad_dims,
                     const int64_t* like_dims, int32_t rank,
                     const int64_t* begin, int int_type, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output g = feed(graph, &set, "grad",
                       int_type ? random_i32(rng, grad_dims, rank, -99, 99)
                                : random_f32(rng, grad_dims, rank, -1, 1));
  weft_output like = feed(graph, &set, "like",
                          random_f32(rng, like_dims, rank, -1, 1));
  weft_op_builder* b = weft_op_begin(graph, op, "box");
  weft_op_add_input(b, g);
  weft_op_add_input(b, like);
  weft_op_set_attr_int_list(b, "begin", begin, rank);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  compare(graph, &set, 0, 0, op); /* moves bytes: bit for bit */
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, slice_grad_and_pad_grad) {
  REQUIRE_OPENCL();
  wt_rng rng = {24};
  const int64_t small[3] = {2, 3, 4}, big[3] = {5, 3, 9};
  const int64_t begin[3] = {1, 0, 4}, origin[3] = {0, 0, 0};
  for (int int_type = 0; int_type < 2; ++int_type) {
    box_case("SliceGrad", small, big, 3, begin, int_type, &rng);
    box_case("PadGrad", big, small, 3, begin, int_type, &rng);
    box_case("SliceGrad", small, small, 3, origin, int_type, &rng);
  }
  const int64_t empty[2] = {0, 3}, outer[2] = {4, 3}, at[2] = {2, 0};
  box_case("SliceGrad", empty, outer, 2, at, 0, &rng); /* all zeros */
  box_case("PadGrad", outer, empty, 2, at, 0, &rng);
}

static weft_output gather_grad(weft_graph* graph, weft_output grad,
                               weft_output indices, weft_output params,
                               int64_t axis) {
  weft_op_builder* b = weft_op_begin(graph, "GatherGrad", "dparams");
  weft_op_add_input(b, grad);
  weft_op_add_input(b, indices);
  weft_op_add_input(b, params);
  weft_op_set_attr_int(b, "axis", axis);
  return finish(b, 0);
}

static void gather_grad_case(weft_dtype index_type, int64_t axis,
                             wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  /* params [6, 5, 3]; 7 indices (with repeats) along `axis`. */
  int64_t params_dims[3] = {6, 5, 3}, grad_dims[3] = {6, 5, 3};
  grad_dims[axis] = 7;
  const int64_t limit = params_dims[axis];
  int64_t i64[7];
  int32_t i32[7];
  for (int j = 0; j < 7; ++j) {
    i64[j] = (int64_t)(wt_rng_next(rng) % (uint64_t)limit);
    i32[j] = (int32_t)i64[j];
  }
  i64[6] = i64[0]; /* a repeat adds twice */
  i32[6] = i32[0];
  weft_output g = feed(graph, &set, "grad", random_f32(rng, grad_dims, 3, -1, 1));
  weft_output idx = feed(graph, &set, "indices",
                         wt_tensor(index_type, WT_SHAPE(7),
                                   index_type == WEFT_INT64 ? (void*)i64
                                                            : (void*)i32));
  weft_output params = feed(graph, &set, "params",
                            random_f32(rng, params_dims, 3, -1, 1));
  set.fetches[0] = gather_grad(graph, g, idx, params, axis);
  set.num_fetches = 1;
  /* Sums in the indices' order on both: the same roundings. */
  compare(graph, &set, 0, 0, "GatherGrad");
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, gather_grad) {
  REQUIRE_OPENCL();
  wt_rng rng = {25};
  for (int64_t axis = 0; axis < 3; ++axis) {
    gather_grad_case(WEFT_INT32, axis, &rng);
    gather_grad_case(WEFT_INT64, axis, &rng);
  }
}

Test(opencl, gather_grad_index_out_of_range_is_an_error) {
  REQUIRE_OPENCL();
  wt_rng rng = {26};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t bad[3] = {0, 4, 1};
  weft_output g = feed(graph, &set, "grad", random_f32(&rng, WT_SHAPE(3, 2), -1, 1));
  weft_output idx = feed(graph, &set, "indices", wt_tensor(WEFT_INT32, WT_SHAPE(3), bad));
  weft_output params = feed(graph, &set, "params", random_f32(&rng, WT_SHAPE(4, 2), -1, 1));
  set.fetches[0] = gather_grad(graph, g, idx, params, 0);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                  "dparams", "indices[1] = 4", "[0, 4)");
  release(&set);
  weft_graph_destroy(graph);
}

/* ---- Optimizer updates: three steps of one update op on each device ----- */

#define UPDATE_STEPS 3

/* Runs `op` (variables first, then data inputs) UPDATE_STEPS times on
 * `devices`, fetching every output each step into outs[step][output]. */
static void update_steps(const char* op, int nesterov, const char* devices,
                         weft_tensor* outs[UPDATE_STEPS][3],
                         int32_t* num_outputs) {
  static const char* const kNames[] = {
      "var", "s1", "s2", "beta1_power", "beta2_power", "lr", "beta1",
      "beta2", "epsilon", "grad"};
  const int adam = strcmp(op, "ApplyAdam") == 0;
  const int momentum = strcmp(op, "ApplyMomentum") == 0;
  const int32_t refs = adam ? 3 : momentum ? 2 : 1;
  wt_rng rng = {27};
  weft_graph* graph = wt_graph_new();
  weft_output inputs[10];
  int32_t n = 0;
  weft_node* inits[3];
  for (int32_t r = 0; r < refs; ++r) {
    char name[32];
    snprintf(name, sizeof name, "%s_value", kNames[r]);
    /* Adam's second moment is non-negative. */
    weft_tensor* v = random_f32(&rng, WT_SHAPE(9, 7), r == 2 ? 0.0f : -1.0f, 1.0f);
    WT_OK(weft_graph_variable(graph, kNames[r], wt_const(graph, name, v),
                              &inputs[n++], &inits[r]));
  }
  run_set set = {0};
  weft_output grad = feed(graph, &set, "grad",
                          random_f32(&rng, WT_SHAPE(9, 7), -1, 1));
  if (adam) {
    const float scalars[6] = {0.9f, 0.999f, 0.01f, 0.9f, 0.999f, 1e-7f};
    for (int k = 0; k < 6; ++k)
      inputs[n++] = wt_const(graph, kNames[3 + k], wt_scalar_f32(scalars[k]));
    inputs[n++] = grad;
  } else if (momentum) {
    inputs[n++] = wt_const(graph, "lr", wt_scalar_f32(0.05f));
    inputs[n++] = grad;
    inputs[n++] = wt_const(graph, "momentum", wt_scalar_f32(0.9f));
  } else {
    inputs[n++] = wt_const(graph, "alpha", wt_scalar_f32(0.1f));
    inputs[n++] = grad;
  }
  weft_op_builder* b = weft_op_begin(graph, op, "update");
  weft_op_add_input_list(b, inputs, n);
  if (momentum) weft_op_set_attr_bool(b, "use_nesterov", nesterov);
  weft_node* update = NULL;
  WT_OK(weft_op_finish(b, &update));
  for (int32_t r = 0; r < refs; ++r) set.fetches[r] = (weft_output){update, r};
  set.num_fetches = refs;
  weft_session* session = session_on(graph, devices);
  wt_run_targets(session, inits, refs);
  for (int step = 0; step < UPDATE_STEPS; ++step) {
    WT_OK(weft_session_run(session, set.feeds, set.values, set.num_feeds,
                           set.fetches, set.num_fetches, NULL, 0,
                           outs[step]));
  }
  *num_outputs = refs;
  weft_session_destroy(session);
  release(&set);
  weft_graph_destroy(graph);
}

static void update_case(const char* op, int nesterov) {
  weft_tensor* ocl[UPDATE_STEPS][3] = {{0}};
  weft_tensor* cpu[UPDATE_STEPS][3] = {{0}};
  int32_t n = 0;
  update_steps(op, nesterov, OCL, ocl, &n);
  update_steps(op, nesterov, "CPU", cpu, &n);
  for (int step = 0; step < UPDATE_STEPS; ++step) {
    for (int32_t r = 0; r < n; ++r) {
      char what[96];
      snprintf(what, sizeof what, "%s%s step %d output %d", op,
               nesterov ? " (Nesterov)" : "", step + 1, r);
      expect_match(ocl[step][r], cpu[step][r], 1e-6, 1e-5, what);
      weft_tensor_destroy(ocl[step][r]);
      weft_tensor_destroy(cpu[step][r]);
    }
  }
}

Test(opencl, apply_gradient_descent) {
  REQUIRE_OPENCL();
  update_case("ApplyGradientDescent", 0);
}

Test(opencl, apply_momentum) {
  REQUIRE_OPENCL();
  update_case("ApplyMomentum", 0);
  update_case("ApplyMomentum", 1);
}

Test(opencl, apply_adam) {
  REQUIRE_OPENCL();
  update_case("ApplyAdam", 0);
}

/* ---- End to end: weft_minimize on a tiny MLP, 20 steps ------------------ */

#define TRAIN_STEPS 20

/* The losses of TRAIN_STEPS steps of `kind` on `devices`. */
static void train_losses(int32_t kind, int nesterov, const char* devices,
                         double* losses) {
  wt_rng rng = {28};
  weft_graph* graph = wt_graph_new();
  weft_node* inits[4];
  weft_output w1, b1, w2, b2;
  WT_OK(weft_graph_variable(graph, "w1", wt_const(graph, "w1_value", random_f32(&rng, WT_SHAPE(8, 16), -0.5f, 0.5f)), &w1, &inits[0]));
  WT_OK(weft_graph_variable(graph, "b1", wt_const(graph, "b1_value", random_f32(&rng, WT_SHAPE(16), -0.1f, 0.1f)), &b1, &inits[1]));
  WT_OK(weft_graph_variable(graph, "w2", wt_const(graph, "w2_value", random_f32(&rng, WT_SHAPE(16, 4), -0.5f, 0.5f)), &w2, &inits[2]));
  WT_OK(weft_graph_variable(graph, "b2", wt_const(graph, "b2_value", random_f32(&rng, WT_SHAPE(4), -0.1f, 0.1f)), &b2, &inits[3]));
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(32, 8), -1, 1));
  weft_output labels = feed(graph, &set, "labels",
                            random_i32(&rng, WT_SHAPE(32), 0, 3));
  weft_output h = wt_apply1(
      graph, "Relu", "h",
      wt_apply2(graph, "BiasAdd", "hb", wt_apply2(graph, "MatMul", "hm", x, w1), b1));
  /* A tanh layer as well, so TanhGrad runs. */
  weft_output t = wt_apply1(graph, "Tanh", "t", h);
  weft_output logits = wt_apply2(graph, "BiasAdd", "logits",
                                 wt_apply2(graph, "MatMul", "lm", t, w2), b2);
  weft_output xent = wt_apply2(graph, "SparseSoftmaxCrossEntropyWithLogits",
                               "xent", logits, labels);
  weft_op_builder* b = weft_op_begin(graph, "Mean", "loss");
  weft_op_add_input(b, xent);
  const int64_t axis0[] = {0};
  weft_op_set_attr_int_list(b, "axes", axis0, 1);
  weft_output loss = finish(b, 0);
  weft_optimizer_options options;
  weft_optimizer_options_init(&options, kind);
  options.learning_rate = kind == WEFT_OPTIMIZER_ADAM ? 0.01 : 0.1;
  options.use_nesterov = nesterov;
  weft_node* train = NULL;
  WT_OK(weft_minimize(graph, loss, &options, "train", &train));
  weft_node* init_all = NULL;
  WT_OK(weft_graph_initialize_all(graph, "init_all", &init_all));
  weft_session* session = session_on(graph, devices);
  wt_run_targets(session, &init_all, 1);
  for (int step = 0; step < TRAIN_STEPS; ++step) {
    weft_tensor* value = NULL;
    WT_OK(weft_session_run(session, set.feeds, set.values, set.num_feeds,
                           &loss, 1, &train, 1, &value));
    losses[step] = element(value, 0);
    weft_tensor_destroy(value);
  }
  weft_session_destroy(session);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, training_loop_matches_cpu) {
  REQUIRE_OPENCL();
  static const struct {
    int32_t kind;
    int nesterov;
    const char* name;
  } kOptimizers[] = {{WEFT_OPTIMIZER_GRADIENT_DESCENT, 0, "sgd"},
                     {WEFT_OPTIMIZER_MOMENTUM, 0, "momentum"},
                     {WEFT_OPTIMIZER_MOMENTUM, 1, "nesterov"},
                     {WEFT_OPTIMIZER_ADAM, 0, "adam"}};
  for (size_t o = 0; o < sizeof kOptimizers / sizeof *kOptimizers; ++o) {
    double ocl[TRAIN_STEPS], cpu[TRAIN_STEPS];
    train_losses(kOptimizers[o].kind, kOptimizers[o].nesterov, OCL, ocl);
    train_losses(kOptimizers[o].kind, kOptimizers[o].nesterov, "CPU", cpu);
    for (int s = 0; s < TRAIN_STEPS; ++s) {
      cr_assert(fabs(ocl[s] - cpu[s]) <= 1e-4 * fabs(cpu[s]),
                "%s step %d: loss %.9g on OpenCL, %.9g on CPU",
                kOptimizers[o].name, s + 1, ocl[s], cpu[s]);
    }
    /* And it learns. */
    cr_expect_lt(ocl[TRAIN_STEPS - 1], ocl[0], "%s: loss %g -> %g",
                 kOptimizers[o].name, ocl[0], ocl[TRAIN_STEPS - 1]);
  }
}
