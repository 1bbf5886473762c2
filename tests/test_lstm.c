/* An LSTM over sequences of different lengths: one weft_while_loop over the
 * padded time axis, with a `lengths` feed (int32 [B]) masking the steps past
 * each sequence's end so its h and c stay as they were.  Checked against a
 * plain C LSTM in double that runs each sequence for its own length only,
 * and against central differences of that reference for the gradient. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

enum { T = 4, B = 2, IN = 2, U = 3, G = 4 * U };

/* Weights [IN + U, 4U] (gate order i, f, g, o), bias [4U]. */
static float weights[(IN + U) * G], bias[G];

static void init_weights(void) {
  wt_rng rng = {7};
  wt_rng_fill(&rng, weights, (IN + U) * G, -0.6f, 0.6f);
  wt_rng_fill(&rng, bias, G, -0.3f, 0.3f);
}

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* The reference: sequence b's final h after its first `len` steps. */
static void reference(const double* x /* [T][B][IN] */, int b, int len,
                      double* h_out) {
  double h[U] = {0}, c[U] = {0};
  for (int t = 0; t < len; ++t) {
    double xh[IN + U], z[G];
    for (int k = 0; k < IN; ++k) xh[k] = x[(t * B + b) * IN + k];
    for (int k = 0; k < U; ++k) xh[IN + k] = h[k];
    for (int j = 0; j < G; ++j) {
      z[j] = bias[j];
      for (int k = 0; k < IN + U; ++k) z[j] += xh[k] * weights[k * G + j];
    }
    for (int u = 0; u < U; ++u) {
      c[u] = sigmoid(z[U + u]) * c[u] + sigmoid(z[u]) * tanh(z[2 * U + u]);
      h[u] = sigmoid(z[3 * U + u]) * tanh(c[u]);
    }
  }
  memcpy(h_out, h, sizeof h);
}

typedef struct lstm {
  weft_output x, lengths, column, w, b;
} lstm;

static weft_output i32(weft_graph* g, int32_t v) {
  return wt_const(g, NULL, wt_tensor(WEFT_INT32, NULL, 0, &v));
}

static weft_status* more_steps(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  *pred = wt_apply2(g, "Less", NULL, v[0], i32(g, T));
  return NULL;
}

static weft_status* step(weft_graph* g, void* user, const weft_output* v,
                         int32_t n, weft_output* next) {
  (void)n;
  const lstm* L = user;
  weft_output x_t = wt_apply2(g, "Gather", NULL, L->x, v[0]);
  weft_op_builder* cb = weft_op_begin(g, "Concat", NULL);
  weft_output pair[2] = {x_t, v[1]};
  weft_op_add_input_list(cb, pair, 2);
  weft_op_set_attr_int(cb, "axis", 1);
  weft_node* concat = NULL;
  weft_status* st = weft_op_finish(cb, &concat);
  if (st) return st;
  weft_output z = wt_apply2(g, "BiasAdd", NULL,
                            wt_apply2(g, "MatMul", NULL,
                                      (weft_output){concat, 0}, L->w),
                            L->b);
  weft_op_builder* sb = weft_op_begin(g, "Split", NULL);
  weft_op_add_input(sb, z);
  weft_op_set_attr_int(sb, "axis", 1);
  weft_op_set_attr_int(sb, "num_split", 4);
  weft_node* split = NULL;
  if ((st = weft_op_finish(sb, &split))) return st;
  weft_output i = wt_apply1(g, "Sigmoid", NULL, (weft_output){split, 0});
  weft_output f = wt_apply1(g, "Sigmoid", NULL, (weft_output){split, 1});
  weft_output u = wt_apply1(g, "Tanh", NULL, (weft_output){split, 2});
  weft_output o = wt_apply1(g, "Sigmoid", NULL, (weft_output){split, 3});
  weft_output c = wt_apply2(g, "Add", NULL, wt_apply2(g, "Mul", NULL, f, v[2]),
                            wt_apply2(g, "Mul", NULL, i, u));
  weft_output h = wt_apply2(g, "Mul", NULL, o, wt_apply1(g, "Tanh", NULL, c));
  /* [B, 1] bool: which sequences are still running at step t. */
  weft_output live = wt_apply2(g, "Less", NULL, v[0], L->column);
  weft_output pick[2][3] = {{live, h, v[1]}, {live, c, v[2]}};
  for (int k = 0; k < 2; ++k) {
    weft_op_builder* b = weft_op_begin(g, "Select", NULL);
    for (int a = 0; a < 3; ++a) weft_op_add_input(b, pick[k][a]);
    weft_node* sel = NULL;
    if ((st = weft_op_finish(b, &sel))) return st;
    next[1 + k] = (weft_output){sel, 0};
  }
  next[0] = wt_apply2(g, "Add", NULL, v[0], i32(g, 1));
  return NULL;
}

/* Builds the model; returns the final h [B, U]. */
static weft_output build(weft_graph* g, lstm* L) {
  L->x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(T, -1, IN), 3);
  L->lengths = wt_placeholder(g, "lengths", WEFT_INT32, WT_DIMS(-1), 1);
  weft_op_builder* rb = weft_op_begin(g, "Reshape", "lengths/column");
  weft_op_add_input(rb, L->lengths);
  weft_op_set_attr_int_list(rb, "shape", WT_DIMS(-1, 1), 2);
  weft_node* col = NULL;
  WT_OK(weft_op_finish(rb, &col));
  L->column = (weft_output){col, 0};
  L->w = wt_const_f32(g, "w", WT_DIMS(IN + U, G), 2, weights);
  L->b = wt_const_f32(g, "b", WT_DIMS(G), 1, bias);
  /* Zero states shaped like the batch: x_0 [B, IN] times a zero [IN, U]. */
  static const float zeros[IN * U];
  weft_output x0 = wt_apply2(g, "Gather", NULL, L->x, i32(g, 0));
  weft_output h0 = wt_apply2(g, "MatMul", "h0", x0,
                             wt_const_f32(g, NULL, WT_DIMS(IN, U), 2, zeros));
  weft_output init[3] = {i32(g, 0), h0, h0}, out[3];
  WT_OK(weft_while_loop(g, more_steps, step, L, init, 3, NULL, out));
  return out[1];
}

static const int32_t lens[B] = {2, 4};

/* x in [-1, 1], and sequence 0's steps past its length set to `pad`. */
static void make_input(double* xd, float* xf, float pad) {
  wt_rng rng = {11};
  for (int k = 0; k < T * B * IN; ++k) {
    int t = k / (B * IN), b = (k / IN) % B;
    xf[k] = t >= lens[b] ? pad : wt_rng_uniform(&rng, -1.0f, 1.0f);
    if (xd) xd[k] = xf[k];
  }
}

static weft_tensor* run_h(weft_session* s, const lstm* L, weft_output fetch,
                          const float* x) {
  weft_tensor* v[2] = {wt_tensor(WEFT_FLOAT32, WT_DIMS(T, B, IN), 3, x),
                       wt_tensor(WEFT_INT32, WT_DIMS(B), 1, lens)};
  weft_output feeds[2] = {L->x, L->lengths};
  weft_tensor* out = wt_run1(s, feeds, v, 2, fetch);
  weft_tensor_destroy(v[0]);
  weft_tensor_destroy(v[1]);
  return out;
}

Test(lstm, padding_leaves_the_output_unchanged) {
  init_weights();
  weft_graph* g = wt_graph_new();
  lstm L;
  weft_output h = build(g, &L);
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  double xd[T * B * IN], ref[B * U];
  float xf[T * B * IN];
  for (int p = 0; p < 3; ++p) {
    const float pads[3] = {0.0f, 1.0f, -57.0f};
    make_input(xd, xf, pads[p]);
    for (int b = 0; b < B; ++b) reference(xd, b, lens[b], ref + b * U);
    weft_tensor* out = run_h(s, &L, h, xf);
    wt_expect_shape(out, WEFT_FLOAT32, WT_DIMS(B, U), 2);
    wt_expect_f32(out, ref, B * U, 1e-5, 1e-5);
    weft_tensor_destroy(out);
  }
  /* The reference's padded run differs from the masked one: the check above
   * would notice a model that ignored `lengths`. */
  make_input(xd, xf, 1.0f);
  double full[U];
  reference(xd, 0, T, full);
  cr_expect(fabs(full[0] - ref[0]) > 1e-3, "padding should matter unmasked");
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

static const float rf[B * U] = {0.7f, -1.2f, 0.4f, 0.9f, 0.3f, -0.5f};

/* sum(h * rf): every output element counts, each differently. */
static weft_output weighted_loss(weft_graph* g, weft_output h) {
  return wt_apply1(
      g, "Sum", "loss",
      wt_apply2(g, "Mul", NULL, h, wt_const_f32(g, "r", WT_DIMS(B, U), 2, rf)));
}

/* loss = sum(h * r): d loss / d x at sequence 0's padded steps is zero, and
 * at its real steps matches central differences of the reference. */
Test(lstm, gradient_ignores_padded_steps) {
  init_weights();
  weft_graph* g = wt_graph_new();
  lstm L;
  weft_output h = build(g, &L);
  weft_output loss = weighted_loss(g, h);
  weft_output dx;
  WT_OK(weft_gradients(g, &loss, 1, &L.x, 1, NULL, &dx));
  cr_assert(dx.node != NULL, "no gradient path from x to the loss");
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  double xd[T * B * IN];
  float xf[T * B * IN];
  make_input(xd, xf, 3.0f);
  weft_tensor* grad = run_h(s, &L, dx, xf);
  wt_expect_shape(grad, WEFT_FLOAT32, WT_DIMS(T, B, IN), 3);
  const float* gv = weft_tensor_data(grad);
  for (int k = 0; k < T * B * IN; ++k) {
    int t = k / (B * IN), b = (k / IN) % B;
    if (t >= lens[b]) {
      cr_expect(gv[k] == 0.0f, "x[%d][%d][%d]: padded step has gradient %g",
                t, b, k % IN, gv[k]);
      continue;
    }
    /* Central difference of the reference loss of sequence b. */
    const double eps = 1e-5;
    double hp[U], hm[U], lp = 0, lm = 0, keep = xd[k];
    xd[k] = keep + eps;
    reference(xd, b, lens[b], hp);
    xd[k] = keep - eps;
    reference(xd, b, lens[b], hm);
    xd[k] = keep;
    for (int u = 0; u < U; ++u) {
      lp += hp[u] * rf[b * U + u];
      lm += hm[u] * rf[b * U + u];
    }
    double want = (lp - lm) / (2 * eps);
    cr_expect(fabs(gv[k] - want) <= 1e-4 + 1e-3 * fabs(want),
              "x[%d][%d][%d]: gradient %g, central difference %g", t, b,
              k % IN, gv[k], want);
  }
  weft_tensor_destroy(grad);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* The whole LSTM, its loop and its gradient's loop on OpenCL alone: the
 * same output and gradient as on the CPU. */
Test(lstm, runs_on_opencl_alone_as_on_the_cpu) {
  WT_OK(weft_plugins_discover());
  const char* why = wt_no_opencl();
  if (why != NULL) WT_SKIP(why);
  init_weights();
  weft_graph* g = wt_graph_new();
  lstm L;
  weft_output h = build(g, &L);
  weft_output loss = weighted_loss(g, h);
  weft_output dx;
  WT_OK(weft_gradients(g, &loss, 1, &L.x, 1, NULL, &dx));
  double xd[T * B * IN];
  float xf[T * B * IN];
  make_input(xd, xf, 2.0f);
  weft_tensor* got[2][2];
  const char* devices[2] = {"OPENCL", "/device:CPU:0"};
  for (int d = 0; d < 2; ++d) {
    weft_session_options o;
    weft_session_options_init(&o);
    o.devices = devices[d];
    o.placement = WEFT_PLACEMENT_STRICT;
    weft_session* s = NULL;
    WT_OK(weft_session_create(g, &o, &s));
    got[d][0] = run_h(s, &L, h, xf);
    got[d][1] = run_h(s, &L, dx, xf);
    weft_session_destroy(s);
  }
  for (int k = 0; k < 2; ++k) {
    const int64_t n = weft_tensor_element_count(got[1][k]);
    const float* cpu = weft_tensor_data(got[1][k]);
    double* ref = malloc((size_t)n * sizeof *ref);
    for (int64_t e = 0; e < n; ++e) ref[e] = cpu[e];
    wt_expect_f32(got[0][k], ref, n, 1e-5, 1e-4);
    free(ref);
    weft_tensor_destroy(got[0][k]);
    weft_tensor_destroy(got[1][k]);
  }
  weft_graph_destroy(g);
}
