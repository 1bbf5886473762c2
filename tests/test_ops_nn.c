/* The window ops of runtime/ops/CONVENTIONS.md on the CPU (convolution and
 * pooling, forward and backward), against references written here as
 * plain loops (a direct convolution, explicit pooling windows) on
 * fixed-seed inputs, in float32 and float64; plus hand-worked cases and the
 * errors the contract promises.  Inputs go through placeholders so nothing
 * is folded away.  The ops over the last axis are in
 * test_ops_nn_last_axis.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ops_nn_support.h"
#include "test_support.h"



/* ---- Conv2D ------------------------------------------------------------- */

typedef struct conv_case {
  int64_t n, h, w, c, kh, kw, co, sh, sw, dh, dw;
  int same;
} conv_case;

/* The spec's output size: SAME ceil(in / s); VALID
 * ceil((in - (k - 1) * d) / s). */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d,
                        int same) {
  if (same) return (in + s - 1) / s;
  int64_t fit = in - (k - 1) * d;
  return fit <= 0 ? 0 : (fit + s - 1) / s;
}

/* TensorFlow's SAME split: the smaller half of the padding before. */
static int64_t pad_before(int64_t in, int64_t out, int64_t k, int64_t s,
                          int64_t d, int same) {
  int64_t total = (out - 1) * s + (k - 1) * d + 1 - in;
  return same && total > 0 ? total / 2 : 0;
}

static void conv_reference(const conv_case* k, const double* x,
                           const double* f, int64_t oh, int64_t ow,
                           double* y) {
  int64_t pt = pad_before(k->h, oh, k->kh, k->sh, k->dh, k->same);
  int64_t pl = pad_before(k->w, ow, k->kw, k->sw, k->dw, k->same);
  for (int64_t n = 0; n < k->n; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t co = 0; co < k->co; ++co) {
          double sum = 0;
          for (int64_t ky = 0; ky < k->kh; ++ky)
            for (int64_t kx = 0; kx < k->kw; ++kx)
              for (int64_t ci = 0; ci < k->c; ++ci) {
                int64_t iy = oy * k->sh + ky * k->dh - pt;
                int64_t ix = ox * k->sw + kx * k->dw - pl;
                if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w) continue;
                sum += x[((n * k->h + iy) * k->w + ix) * k->c + ci] *
                       f[((ky * k->kw + kx) * k->c + ci) * k->co + co];
              }
          y[((n * oh + oy) * ow + ox) * k->co + co] = sum;
        }
}

static nn_attrs conv_attrs(const conv_case* k) {
  nn_attrs a = {.strides = L4(1, k->sh, k->sw, 1),
                .dilations = L4(1, k->dh, k->dw, 1),
                .padding = k->same ? "SAME" : "VALID"};
  return a;
}

static void check_conv(const conv_case* k, weft_dtype dtype, uint64_t seed,
                       int threads) {
  int64_t nx = k->n * k->h * k->w * k->c, nf = k->kh * k->kw * k->c * k->co;
  int64_t oh = out_size(k->h, k->kh, k->sh, k->dh, k->same);
  int64_t ow = out_size(k->w, k->kw, k->sw, k->dw, k->same);
  int64_t ny = k->n * oh * ow * k->co;
  double* x = random_values(seed, nx, -1, 1);
  double* f = random_values(seed + 1, nf, -1, 1);
  double* ref = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
  conv_reference(k, x, f, oh, ow, ref);
  void* xd = as_dtype(x, nx, dtype);
  void* fd = as_dtype(f, nf, dtype);
  operand in[2] = {{dtype, 4, {k->n, k->h, k->w, k->c}, xd},
                   {dtype, 4, {k->kh, k->kw, k->c, k->co}, fd}};
  nn_attrs a = conv_attrs(k);
  weft_tensor* out = NULL;
  WT_OK(try_nn("Conv2D", "conv", in, 2, &a, &out, 1, threads));
  wt_expect_shape(out, dtype, WT_DIMS(k->n, oh, ow, k->co), 4);
  /* float32 sums of up to a few hundred products of values below 1. */
  expect_close(out, ref, ny, 1e-4);
  weft_tensor_destroy(out);
  free(x), free(f), free(ref), free(xd), free(fd);
}

static const conv_case kConvCases[] = {
    /* n  h   w   c  kh kw co sh sw dh dw same */
    {2, 7, 9, 3, 3, 3, 4, 1, 1, 1, 1, 1},
    {2, 7, 9, 3, 3, 3, 4, 1, 1, 1, 1, 0},
    {2, 8, 7, 5, 3, 2, 3, 2, 2, 1, 1, 1},   /* stride 2, even window */
    {1, 9, 9, 4, 3, 3, 5, 2, 2, 1, 1, 0},
    {1, 9, 8, 3, 3, 3, 2, 2, 1, 1, 1, 1},   /* unequal strides */
    {1, 10, 9, 3, 4, 2, 2, 3, 2, 1, 1, 1},  /* odd padding split */
    {3, 6, 5, 2, 1, 1, 7, 1, 1, 1, 1, 0},   /* pointwise */
    {2, 7, 7, 3, 1, 1, 4, 2, 2, 1, 1, 1},   /* 1x1, stride 2 */
    {1, 11, 10, 3, 3, 3, 2, 1, 1, 2, 2, 1}, /* dilation 2 */
    {2, 11, 9, 2, 3, 2, 3, 1, 1, 2, 2, 0},
    {1, 12, 12, 4, 3, 3, 4, 2, 2, 2, 2, 1}, /* stride and dilation 2 */
    {1, 5, 5, 16, 5, 5, 8, 1, 1, 1, 1, 1},  /* window wider than half */
    {2, 14, 14, 32, 3, 3, 64, 1, 1, 1, 1, 1}, /* blocked-layout sizes */
    {2, 13, 15, 16, 3, 3, 32, 2, 2, 1, 1, 0},
    /* Stride 1 with channels for blocked kernels: where oneDNN runs the
     * forward convolution in brgemm (AVX-512), the input gradient is that
     * forward convolution over dy with the filter turned (DataAsForward in
     * onednn_nn_backward.h): SAME with an even window (padding 1 before,
     * 2 after), and VALID (padding K - 1 on both sides). */
    {2, 9, 10, 16, 4, 2, 32, 1, 1, 1, 1, 1},
    {2, 10, 9, 32, 3, 5, 16, 1, 1, 1, 1, 0},
};

Test(ops_nn, conv2d_matches_direct_convolution) {
  for (size_t i = 0; i < sizeof kConvCases / sizeof kConvCases[0]; ++i)
    for (int t = 0; t < 2; ++t)
      check_conv(&kConvCases[i], kFloatTypes[t], 10 + i, 0);
}

/* The window gradients in float32 (oneDNN's backward primitives where the
 * plugin has them) against the same ops in float64 (im2col and loops), on
 * every conv and pool case: they must agree to float32 rounding.  Pool
 * inputs are quarter steps in [-1, 1], so windows hold ties, which both go
 * to the first maximum. */
static void both_dtypes_on(const char* op, const operand* in64, int n,
                           const nn_attrs* a, double tol, const char* what,
                           int threads) {
  operand in32[2];
  void* held[2] = {NULL, NULL};
  for (int i = 0; i < n; ++i) {
    in32[i] = in64[i];
    in32[i].dtype = WEFT_FLOAT32;
    held[i] = as_dtype(in64[i].data, count_of(&in64[i]), WEFT_FLOAT32);
    in32[i].data = held[i];
  }
  weft_tensor* ref = run_nn(op, in64, n, a);
  weft_tensor* got = NULL;
  wt_check_ok(try_nn(op, "under_test", in32, n, a, &got, 1, threads), op,
              __FILE__, __LINE__);
  const int64_t count = weft_tensor_element_count(ref);
  cr_assert_eq(weft_tensor_element_count(got), count, "%s", what);
  const double* r = weft_tensor_data(ref);
  const float* g = weft_tensor_data(got);
  for (int64_t i = 0; i < count; ++i)
    cr_assert(fabs(g[i] - r[i]) <= tol + tol * fabs(r[i]),
              "%s: element %lld is %.8g in float32, %.10g in float64", what,
              (long long)i, (double)g[i], r[i]);
  weft_tensor_destroy(ref);
  weft_tensor_destroy(got);
  free(held[0]), free(held[1]);
}

static void both_dtypes(const char* op, const operand* in64, int n,
                        const nn_attrs* a, double tol, const char* what) {
  both_dtypes_on(op, in64, n, a, tol, what, 0);
}

/* Both convolution gradients of case k (number i) in float32, on `threads`
 * intra-op threads (0: the session's choice), against float64. */
static void conv_gradients_agree(const conv_case* k, size_t i, int threads) {
  {
    const int64_t oh = out_size(k->h, k->kh, k->sh, k->dh, k->same);
    const int64_t ow = out_size(k->w, k->kw, k->sw, k->dw, k->same);
    const int64_t nx = k->n * k->h * k->w * k->c;
    const int64_t nf = k->kh * k->kw * k->c * k->co;
    const int64_t ny = k->n * oh * ow * k->co;
    if (ny == 0) return;
    double* x = random_values(300 + i, nx, -1, 1);
    double* f = random_values(400 + i, nf, -1, 1);
    double* dy = random_values(500 + i, ny, -1, 1);
    nn_attrs a = conv_attrs(k);
    char what[64];
    a.sizes_name = "input_sizes";
    a.sizes = L4(k->n, k->h, k->w, k->c);
    operand data[2] = {{WEFT_FLOAT64, 4, {k->kh, k->kw, k->c, k->co}, f},
                       {WEFT_FLOAT64, 4, {k->n, oh, ow, k->co}, dy}};
    snprintf(what, sizeof what, "Conv2DBackpropInput, conv case %zu", i);
    both_dtypes_on("Conv2DBackpropInput", data, 2, &a, 1e-4, what, threads);
    a.sizes_name = "filter_sizes";
    a.sizes = L4(k->kh, k->kw, k->c, k->co);
    operand filter[2] = {{WEFT_FLOAT64, 4, {k->n, k->h, k->w, k->c}, x},
                         {WEFT_FLOAT64, 4, {k->n, oh, ow, k->co}, dy}};
    snprintf(what, sizeof what, "Conv2DBackpropFilter, conv case %zu", i);
    /* Sums over every output pixel of a batch: a looser bound. */
    both_dtypes_on("Conv2DBackpropFilter", filter, 2, &a, 5e-4, what,
                   threads);
    free(x), free(f), free(dy);
  }
}

Test(ops_nn, window_gradients_float32_agree_with_float64) {
  for (size_t i = 0; i < sizeof kConvCases / sizeof kConvCases[0]; ++i)
    conv_gradients_agree(&kConvCases[i], i, 0);
}

/* Convolutions with enough work are split over the session's intra-op
 * threads in blocks of whole images (the CPU plugin's BatchSplit, from
 * 2^22 multiply-adds), the last block shorter when the threads do not
 * divide the batch (5 images: 3 + 2 on 2 threads, 2 + 2 + 1 on 3), and
 * the filter gradient sums the blocks' gradients.  Each thread count must
 * agree with the reference. */
Test(ops_nn, convolutions_split_over_threads) {
  const conv_case k = {5, 16, 16, 16, 3, 3, 32, 1, 1, 1, 1, 1};
  for (int threads = 1; threads <= 3; ++threads) {
    for (int t = 0; t < 2; ++t)
      check_conv(&k, kFloatTypes[t], 40 + threads, threads);
    conv_gradients_agree(&k, 100 + (size_t)threads, threads);
  }
}

/* A stride-1 filter gradient runs as a forward convolution over blocks of
 * up to 8 images (fewer where 8 images' input and output gradient pass
 * 4 MiB), each block's sum added to the last, and on several threads over
 * chunks of whole blocks, the chunks' gradients summed in order.  19
 * images: blocks of 8, 8 and a shorter 3, in chunks of 16 + 3 on 2
 * threads and 8 + 8 + 3 on 3; 48 x 48 x 40 images (516 KB with their
 * gradient): blocks of 4 + 2. */
Test(ops_nn, filter_gradient_in_blocks_of_images) {
  const conv_case cases[] = {
      {19, 9, 10, 16, 5, 5, 24, 1, 1, 1, 1, 1},
      {19, 9, 10, 16, 3, 2, 24, 1, 1, 1, 1, 0},
      {6, 48, 48, 40, 3, 3, 16, 1, 1, 1, 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    for (int threads = 1; threads <= 3; ++threads)
      conv_gradients_agree(&cases[i], 200 + 10 * i + (size_t)threads,
                           threads);
}

/* The thread count is the session's; results must not depend on it. */
Test(ops_nn, conv2d_any_thread_count) {
  const conv_case k = {4, 12, 12, 16, 3, 3, 16, 1, 1, 1, 1, 1};
  for (int threads = 1; threads <= 3; ++threads)
    for (int t = 0; t < 2; ++t) check_conv(&k, kFloatTypes[t], 5, threads);
}

/* Worked by hand: 1..9 in a 3x3 image, filter [[1,2],[3,4]]. */
Test(ops_nn, conv2d_hand_worked) {
  const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, f[4] = {1, 2, 3, 4};
  operand in[2] = {{WEFT_FLOAT32, 4, {1, 3, 3, 1}, x},
                   {WEFT_FLOAT32, 4, {2, 2, 1, 1}, f}};
  nn_attrs a = {.strides = L4(1, 1, 1, 1), .padding = "VALID"};
  weft_tensor* out = run_nn("Conv2D", in, 2, &a);
  expect_close(out, (const double[]){37, 47, 67, 77}, 4, 1e-6);
  weft_tensor_destroy(out);
  /* SAME pads one row and column, after the data. */
  a.padding = "SAME";
  out = run_nn("Conv2D", in, 2, &a);
  expect_close(out, (const double[]){37, 47, 21, 67, 77, 33, 23, 26, 9}, 9,
               1e-6);
  weft_tensor_destroy(out);
  a.strides = L4(1, 2, 2, 1);
  out = run_nn("Conv2D", in, 2, &a);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(1, 2, 2, 1));
  expect_close(out, (const double[]){37, 21, 23, 9}, 4, 1e-6);
  weft_tensor_destroy(out);
}

Test(ops_nn, conv2d_empty_batch_and_channels) {
  nn_attrs a = {.strides = L4(1, 2, 2, 1), .padding = "SAME"};
  operand in[2] = {{WEFT_FLOAT32, 4, {0, 5, 5, 3}, NULL},
                   {WEFT_FLOAT32, 4, {3, 3, 3, 4}, NULL}};
  weft_tensor* out = run_nn("Conv2D", in, 2, &a);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(0, 3, 3, 4));
  weft_tensor_destroy(out);
  /* No input channels: every output is an empty sum. */
  operand none[2] = {{WEFT_FLOAT64, 4, {1, 4, 4, 0}, NULL},
                     {WEFT_FLOAT64, 4, {3, 3, 0, 2}, NULL}};
  out = run_nn("Conv2D", none, 2, &a);
  wt_expect_shape(out, WEFT_FLOAT64, WT_SHAPE(1, 2, 2, 2));
  expect_close(out, (const double[8]){0}, 8, 0);
  weft_tensor_destroy(out);
}

/* One session, fed inputs of two sizes (one primitive each) while its
 * filter, a variable, is updated in place between runs: neither a stale
 * primitive nor a stale packed copy of the filter may be reused. */
Test(ops_nn, conv2d_reruns_follow_shapes_and_filter_updates) {
  double* fv = random_values(8, 2304, -1, 1);
  double* delta = random_values(9, 2304, -1, 1);
  float* f32[2] = {as_dtype(fv, 2304, WEFT_FLOAT32),
                   as_dtype(delta, 2304, WEFT_FLOAT32)};
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(-1, -1, 5, 16));
  weft_output f, step = wt_const_f32(g, "delta", WT_SHAPE(3, 3, 16, 16),
                                     f32[1]);
  weft_node* init = NULL;
  WT_OK(weft_graph_variable(
      g, "f", wt_const_f32(g, "f0", WT_SHAPE(3, 3, 16, 16), f32[0]), &f,
      &init));
  weft_node* bump = wt_apply2(g, "AssignAdd", "bump", f, step).node;
  weft_op_builder* b = weft_op_begin(g, "Conv2D", "conv");
  weft_op_add_input(b, x);
  weft_op_add_input(b, f);
  weft_op_set_attr_int_list(b, "strides", WT_DIMS(1, 1, 1, 1), 4);
  weft_op_set_attr_string(b, "padding", "SAME");
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  int64_t dims[4];
  int32_t rank = 0;
  WT_OK(weft_output_shape((weft_output){node, 0}, dims, 4, &rank));
  cr_assert(rank == 4 && dims[0] == -1 && dims[1] == -1 && dims[2] == 5 &&
            dims[3] == 16);
  weft_session* s = wt_session_new(g, CPU);
  wt_run_targets(s, &init, 1);
  for (int run = 0; run < 6; ++run) {
    conv_case k = {1 + run % 2, 6 + 3 * (run % 2), 5, 16, 3, 3, 16,
                   1, 1, 1, 1, 1};
    int64_t nx = k.n * k.h * k.w * 16;
    double* xv = random_values(40 + run, nx, -1, 1);
    double ref[2 * 9 * 5 * 16];
    conv_reference(&k, xv, fv, k.h, k.w, ref);
    void* xd = as_dtype(xv, nx, WEFT_FLOAT32);
    weft_tensor* feed = wt_tensor(WEFT_FLOAT32, WT_DIMS(k.n, k.h, 5, 16), 4,
                                  xd);
    for (int repeat = 0; repeat < 2; ++repeat) {
      weft_tensor* out = wt_run1(s, &x, &feed, 1, (weft_output){node, 0});
      expect_close(out, ref, nx, 1e-4);
      weft_tensor_destroy(out);
    }
    weft_tensor_destroy(feed);
    free(xv), free(xd);
    if (run % 3 == 2) continue; /* sometimes the same filter again */
    wt_run_targets(s, &bump, 1);
    for (int i = 0; i < 2304; ++i) fv[i] = (float)(fv[i] + (float)delta[i]);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  free(fv), free(delta), free(f32[0]), free(f32[1]);
}

/* Refused while the graph is built, naming the node and the culprit. */
static void expect_conv_refused(const int64_t* xdims, const int64_t* fdims,
                                nn_attrs a, const char* what) {
  operand in[2] = {
      {WEFT_FLOAT32, 4, {xdims[0], xdims[1], xdims[2], xdims[3]}, NULL},
      {WEFT_FLOAT32, 4, {fdims[0], fdims[1], fdims[2], fdims[3]}, NULL}};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(try_nn("Conv2D", "bad_conv", in, 2, &a, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "bad_conv", "Conv2D", what);
  cr_assert_null(out);
}

Test(ops_nn, conv2d_build_time_refusals) {
  const int64_t* x = WT_DIMS(1, 5, 5, 3);
  const int64_t* f = WT_DIMS(3, 3, 3, 2);
  nn_attrs ok = {.strides = L4(1, 1, 1, 1), .padding = "SAME"};
  nn_attrs a = ok;
  a.strides = (list){{1, 1, 1}, 3};
  expect_conv_refused(x, f, a, "[1,1,1]");
  a.strides = L4(2, 1, 1, 1);
  expect_conv_refused(x, f, a, "strides");
  a.strides = L4(1, 0, 1, 1);
  expect_conv_refused(x, f, a, "[1,0,1,1]");
  a = ok;
  a.dilations = L4(1, 1, 1, 2);
  expect_conv_refused(x, f, a, "dilations");
  a = ok;
  a.padding = "FULL";
  expect_conv_refused(x, f, a, "FULL");
  a = ok;
  a.data_format = "NCHW";
  expect_conv_refused(x, f, a, "NCHW");
  expect_conv_refused(x, WT_DIMS(3, 3, 4, 2), ok, "[3,3,4,2]");
  a = ok;
  a.padding = "VALID";
  expect_conv_refused(WT_DIMS(1, 2, 9, 3), WT_DIMS(5, 3, 3, 2), a, "height");
  a = ok;
  a.padding = NULL;
  expect_conv_refused(x, f, a, "padding");
  /* Wrong rank. */
  operand in[2] = {{WEFT_FLOAT32, 3, {5, 5, 3}, NULL},
                   {WEFT_FLOAT32, 4, {3, 3, 3, 2}, NULL}};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(try_nn("Conv2D", "flat", in, 2, &ok, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "flat", "rank 4", "[5,5,3]");
}

/* A filter whose size is known only when it is fed leaves the dilated
 * window's extent to the kernel: one past 2^31 - 1 is refused there as
 * INVALID_ARGUMENT naming the node and the dilations, not handed to oneDNN
 * (which answered INTERNAL with its own text). */
Test(ops_nn, conv2d_dilated_window_too_wide_at_run_time) {
  const int64_t dilations[][4] = {{1, INT64_C(1) << 30, 1, 1},
                                  {1, 1, INT32_MAX, 1}};
  const char* const paddings[] = {"SAME", "VALID"};
  for (int d = 0; d < 2; ++d)
    for (int p = 0; p < 2; ++p) {
      weft_graph* graph = wt_graph_new();
      weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32,
                                     WT_SHAPE(1, 5, 5, 2));
      weft_output f = wt_placeholder(graph, "f", WEFT_FLOAT32,
                                     WT_SHAPE(-1, -1, 2, 3));
      weft_op_builder* b = weft_op_begin(graph, "Conv2D", "wide_conv");
      weft_op_add_input(b, x);
      weft_op_add_input(b, f);
      weft_op_set_attr_int_list(b, "strides", WT_DIMS(1, 1, 1, 1), 4);
      weft_op_set_attr_int_list(b, "dilations", dilations[d], 4);
      weft_op_set_attr_string(b, "padding", paddings[p]);
      float xv[50] = {0}, fv[54] = {0};
      weft_tensor* values[2] = {
          wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 5, 5, 2), xv),
          wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 3, 2, 3), fv)};
      weft_output feeds[2] = {x, f};
      weft_tensor* out = NULL;
      WT_EXPECT_ERROR(
          wt_finish_and_run(graph, b, feeds, values, 2, 0, 1, &out),
          WEFT_INVALID_ARGUMENT, "wide_conv", "Conv2D", "dilations");
      cr_expect_null(out);
      weft_tensor_destroy(values[0]);
      weft_tensor_destroy(values[1]);
      weft_graph_destroy(graph);
    }
}

/* ---- MaxPool, AvgPool --------------------------------------------------- */

typedef struct pool_case {
  int64_t n, h, w, c, kh, kw, sh, sw;
  int same;
} pool_case;

/* Explicit windows; padded positions are skipped, so AvgPool divides by
 * the number of real elements.  A NaN in a window makes its maximum NaN
 * (runtime/ops/CONVENTIONS.md). */
static void pool_reference(const pool_case* k, int max, const double* x,
                           int64_t oh, int64_t ow, double* y) {
  int64_t pt = pad_before(k->h, oh, k->kh, k->sh, 1, k->same);
  int64_t pl = pad_before(k->w, ow, k->kw, k->sw, 1, k->same);
  for (int64_t n = 0; n < k->n; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t c = 0; c < k->c; ++c) {
          double acc = max ? -INFINITY : 0;
          int64_t count = 0;
          for (int64_t ky = 0; ky < k->kh; ++ky)
            for (int64_t kx = 0; kx < k->kw; ++kx) {
              int64_t iy = oy * k->sh + ky - pt, ix = ox * k->sw + kx - pl;
              if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w) continue;
              double v = x[((n * k->h + iy) * k->w + ix) * k->c + c];
              if (!max) acc += v;
              else if (!isnan(acc) && (isnan(v) || v > acc)) acc = v;
              ++count;
            }
          y[((n * oh + oy) * ow + ox) * k->c + c] = max ? acc : acc / count;
        }
}

/* With `nan_every` > 0, every nan_every-th input element is NaN. */
/* Pooling case k with op on `threads` intra-op threads (0: the session's
 * choice), a NaN at every nan_every-th element (0: none), against the
 * float64 windows. */
static void check_pool_on(const pool_case* k, const char* op,
                          weft_dtype dtype, uint64_t seed, int64_t nan_every,
                          int threads) {
  int max = strcmp(op, "MaxPool") == 0;
  int64_t nx = k->n * k->h * k->w * k->c;
  int64_t oh = out_size(k->h, k->kh, k->sh, 1, k->same);
  int64_t ow = out_size(k->w, k->kw, k->sw, 1, k->same);
  int64_t ny = k->n * oh * ow * k->c;
  double* x = random_values(seed, nx, -3, 3);
  for (int64_t i = 0; nan_every > 0 && i < nx; ++i)
    if (i % nan_every == nan_every / 2) x[i] = NAN;
  double* ref = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
  pool_reference(k, max, x, oh, ow, ref);
  void* xd = as_dtype(x, nx, dtype);
  operand in = {dtype, 4, {k->n, k->h, k->w, k->c}, xd};
  nn_attrs a = {.ksize = L4(1, k->kh, k->kw, 1),
                .strides = L4(1, k->sh, k->sw, 1),
                .padding = k->same ? "SAME" : "VALID"};
  weft_tensor* out = NULL;
  wt_check_ok(try_nn(op, "under_test", &in, 1, &a, &out, 1, threads), op,
              __FILE__, __LINE__);
  wt_expect_shape(out, dtype, WT_DIMS(k->n, oh, ow, k->c), 4);
  expect_close(out, ref, ny, 1e-6);
  weft_tensor_destroy(out);
  free(x), free(ref), free(xd);
}

static void check_pool(const pool_case* k, const char* op, weft_dtype dtype,
                       uint64_t seed, int64_t nan_every) {
  check_pool_on(k, op, dtype, seed, nan_every, 0);
}

static const pool_case kPoolCases[] = {
    /* n  h  w  c kh kw sh sw same */
    {2, 6, 6, 3, 2, 2, 2, 2, 0},
    {2, 7, 5, 3, 2, 2, 2, 2, 1},  /* odd sizes: padding after */
    {1, 9, 9, 4, 3, 3, 2, 2, 1},  /* overlapping windows */
    {1, 9, 9, 4, 3, 3, 2, 2, 0},
    {3, 5, 8, 2, 3, 2, 1, 1, 1},  /* stride 1 */
    {1, 8, 7, 5, 3, 3, 1, 2, 0},
    {2, 4, 4, 16, 1, 1, 2, 2, 1}, /* 1x1 window subsamples */
    {2, 10, 11, 17, 4, 3, 3, 2, 1},
};

Test(ops_nn, pool_gradients_float32_agree_with_float64) {
  for (size_t i = 0; i < sizeof kPoolCases / sizeof kPoolCases[0]; ++i) {
    const pool_case* k = &kPoolCases[i];
    const int64_t oh = out_size(k->h, k->kh, k->sh, 1, k->same);
    const int64_t ow = out_size(k->w, k->kw, k->sw, 1, k->same);
    const int64_t nx = k->n * k->h * k->w * k->c;
    const int64_t ny = k->n * oh * ow * k->c;
    double* x = random_values(600 + i, nx, -1, 1);
    for (int64_t e = 0; e < nx; ++e) x[e] = round(x[e] * 4) / 4;
    double* dy = random_values(700 + i, ny, -1, 1);
    nn_attrs a = {.ksize = L4(1, k->kh, k->kw, 1),
                  .strides = L4(1, k->sh, k->sw, 1),
                  .padding = k->same ? "SAME" : "VALID"};
    char what[64];
    operand max_in[2] = {{WEFT_FLOAT64, 4, {k->n, k->h, k->w, k->c}, x},
                         {WEFT_FLOAT64, 4, {k->n, oh, ow, k->c}, dy}};
    snprintf(what, sizeof what, "MaxPoolGrad, pool case %zu", i);
    both_dtypes("MaxPoolGrad", max_in, 2, &a, 1e-6, what);
    a.sizes_name = "input_sizes";
    a.sizes = L4(k->n, k->h, k->w, k->c);
    operand avg_in = {WEFT_FLOAT64, 4, {k->n, oh, ow, k->c}, dy};
    snprintf(what, sizeof what, "AvgPoolGrad, pool case %zu", i);
    both_dtypes("AvgPoolGrad", &avg_in, 1, &a, 1e-6, what);
    free(x), free(dy);
  }
}

Test(ops_nn, pooling_matches_explicit_windows) {
  for (size_t i = 0; i < sizeof kPoolCases / sizeof kPoolCases[0]; ++i)
    for (int t = 0; t < 2; ++t) {
      check_pool(&kPoolCases[i], "MaxPool", kFloatTypes[t], 70 + i, 0);
      check_pool(&kPoolCases[i], "AvgPool", kFloatTypes[t], 80 + i, 0);
    }
}

/* NaN propagates through MaxPool as through Max and Maximum: a window
 * holding one gives NaN, wherever it sits in the window, on both the
 * oneDNN (float32) and the loop (float64) paths. */
Test(ops_nn, max_pool_propagates_nan) {
  static const int64_t spacing[] = {5, 29, 97};
  for (size_t i = 0; i < sizeof kPoolCases / sizeof kPoolCases[0]; ++i)
    for (int t = 0; t < 2; ++t)
      for (size_t e = 0; e < 3; ++e)
        check_pool(&kPoolCases[i], "MaxPool", kFloatTypes[t], 90 + i,
                   spacing[e]);
  /* Images of a megabyte, a NaN in the middle one only: a kernel that
   * checks the input in parts must get every part right. */
  const pool_case large = {3, 128, 128, 16, 2, 2, 2, 2, 0};
  for (int threads = 1; threads <= 3; ++threads)
    check_pool_on(&large, "MaxPool", WEFT_FLOAT32, 99, 700001, threads);
  /* A batch of 21 images of 144 KiB on 2 and 3 threads: groups of images
   * split over the threads (7 + 7 + 7 on 3, 6 + 6 + 6 + 3 on 2), NaNs in
   * some groups only, and one image alone on oneDNN's threads. */
  const pool_case batch = {21, 48, 48, 16, 3, 3, 2, 2, 1};
  const pool_case one = {1, 96, 96, 16, 3, 3, 2, 2, 1};
  for (int threads = 2; threads <= 3; ++threads) {
    check_pool_on(&batch, "MaxPool", WEFT_FLOAT32, 98, 0, threads);
    check_pool_on(&batch, "MaxPool", WEFT_FLOAT32, 98, 400003, threads);
    check_pool_on(&batch, "AvgPool", WEFT_FLOAT32, 97, 0, threads);
    check_pool_on(&one, "MaxPool", WEFT_FLOAT32, 96, 70001, threads);
    check_pool_on(&one, "AvgPool", WEFT_FLOAT32, 95, 0, threads);
  }
}

/* MaxPoolGrad sends each window's gradient to the element MaxPool chose:
 * the first maximum, or the first NaN when the window holds one. */
Test(ops_nn, max_pool_grad_routes_to_the_first_nan) {
  const pool_case k = {1, 5, 5, 2, 3, 3, 2, 2, 1};
  const int64_t nx = 50, oh = 3, ow = 3, ny = 18;
  double* x = random_values(7, nx, -3, 3);
  for (int64_t i = 0; i < nx; ++i)
    if (i % 7 == 3) x[i] = NAN;
  double dy[18], ref[50] = {0};
  for (int64_t i = 0; i < ny; ++i) dy[i] = (double)(i + 1);
  int64_t pt = pad_before(k.h, oh, k.kh, k.sh, 1, 1);
  int64_t pl = pad_before(k.w, ow, k.kw, k.sw, 1, 1);
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox)
      for (int64_t c = 0; c < k.c; ++c) {
        int64_t best = -1;
        for (int64_t ky = 0; ky < k.kh; ++ky)
          for (int64_t kx = 0; kx < k.kw; ++kx) {
            int64_t iy = oy * k.sh + ky - pt, ix = ox * k.sw + kx - pl;
            if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
            int64_t at = (iy * k.w + ix) * k.c + c;
            if (best < 0 || (!isnan(x[best]) && (isnan(x[at]) ||
                                                 x[at] > x[best])))
              best = at;
          }
        ref[best] += dy[(oy * ow + ox) * k.c + c];
      }
  for (int t = 0; t < 2; ++t) {
    void* xd = as_dtype(x, nx, kFloatTypes[t]);
    void* dyd = as_dtype(dy, ny, kFloatTypes[t]);
    operand in[2] = {{kFloatTypes[t], 4, {1, 5, 5, 2}, xd},
                     {kFloatTypes[t], 4, {1, 3, 3, 2}, dyd}};
    nn_attrs a = {.ksize = L4(1, 3, 3, 1), .strides = L4(1, 2, 2, 1),
                  .padding = "SAME"};
    weft_tensor* out = run_nn("MaxPoolGrad", in, 2, &a);
    expect_close(out, ref, nx, 1e-6);
    weft_tensor_destroy(out);
    free(xd), free(dyd);
  }
  free(x);
}

/* 1..9 in a 3x3 image, 2x2 windows, stride 2, SAME: the last row and
 * column of windows hang over the edge. */
Test(ops_nn, pooling_hand_worked) {
  const double x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int t = 0; t < 2; ++t) {
    void* xd = as_dtype(x, 9, kFloatTypes[t]);
    operand in = {kFloatTypes[t], 4, {1, 3, 3, 1}, xd};
    nn_attrs a = {.ksize = L4(1, 2, 2, 1), .strides = L4(1, 2, 2, 1),
                  .padding = "SAME"};
    weft_tensor* out = run_nn("MaxPool", &in, 1, &a);
    expect_close(out, (const double[]){5, 6, 8, 9}, 4, 1e-6);
    weft_tensor_destroy(out);
    out = run_nn("AvgPool", &in, 1, &a);
    expect_close(out, (const double[]){3, 4.5, 7.5, 9}, 4, 1e-6);
    weft_tensor_destroy(out);
    a.padding = "VALID";
    out = run_nn("AvgPool", &in, 1, &a);
    wt_expect_shape(out, kFloatTypes[t], WT_SHAPE(1, 1, 1, 1));
    expect_close(out, (const double[]){3}, 1, 1e-6);
    weft_tensor_destroy(out);
    free(xd);
  }
}

Test(ops_nn, pooling_empty_batch_and_refusals) {
  operand in = {WEFT_FLOAT32, 4, {0, 6, 6, 2}, NULL};
  nn_attrs a = {.ksize = L4(1, 3, 3, 1), .strides = L4(1, 2, 2, 1),
                .padding = "VALID"};
  weft_tensor* out = run_nn("MaxPool", &in, 1, &a);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(0, 2, 2, 2));
  weft_tensor_destroy(out);
  out = NULL;
  nn_attrs bad = a;
  bad.ksize = L4(1, 2, 2, 2);
  WT_EXPECT_ERROR(try_nn("AvgPool", "pool", &in, 1, &bad, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "pool", "AvgPool", "ksize",
                  "[1,2,2,2]");
  bad = a;
  bad.padding = "same";
  WT_EXPECT_ERROR(try_nn("MaxPool", "pool", &in, 1, &bad, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "pool", "same");
  bad = a;
  bad.data_format = "NCHW";
  WT_EXPECT_ERROR(try_nn("MaxPool", "pool", &in, 1, &bad, &out, 1, 0),
                  WEFT_INVALID_ARGUMENT, "pool", "NCHW");
  cr_assert_null(out);
}

