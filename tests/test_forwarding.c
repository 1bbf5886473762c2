/* Buffer forwarding: an element-wise kernel writes its output over an
 * input when the executor lets it (runtime/session/executor.cc,
 * Run::Forwardable): the node is the value's last reader and nothing but
 * the value's slot holds its buffer.  The values are always right, a chain
 * of element-wise ops peaks at one buffer, and what someone else still
 * reads is never written over: a value another node reads later, a fetched
 * value, a feed, a constant, a variable, a view that shares the buffer,
 * and (with two inter-op threads) a value two branches read at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

enum { N = 1 << 16 };  /* 256 KiB a float32 value */

static weft_session* session_with(weft_graph* g, int32_t inter_op) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = inter_op;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &o, &s));
  return s;
}

static float* ramp(void) {
  float* v = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) v[i] = (float)(i % 97) * 0.01f - 0.3f;
  return v;
}

/* Exact, except where Exp took part (the kernel's vector exp and libm's
 * expf differ in the last bits). */
static void expect_values(const weft_tensor* t, const float* want,
                          const char* what) {
  cr_assert_eq(weft_tensor_element_count(t), N, "%s: count", what);
  const float* got = weft_tensor_data(t);
  const double tol = strchr(what, '~') != NULL ? 1e-6 : 0;
  for (int i = 0; i < N; ++i)
    cr_assert(fabs((double)got[i] - want[i]) <= tol * (1 + fabs(want[i])),
              "%s element %d: %.9g, want %.9g", what, i, (double)got[i],
              (double)want[i]);
}

/* x fed; a = Neg(x), b = Exp(a), c = Neg(b): b and c are written over the
 * buffer a took, so one value's worth of memory is live at a time, and the
 * caller's feed is untouched. */
Test(forwarding, chain_runs_in_one_buffer) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(N), 1);
  weft_output c = wt_apply1(
      g, "Neg", "c",
      wt_apply1(g, "Exp", "b", wt_apply1(g, "Neg", "a", x)));
  float* xv = ramp();
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, xv);
  weft_session* s = session_with(g, 0);
  weft_run_metadata* m = weft_run_metadata_create();
  for (int run = 0; run < 3; ++run) {
    weft_tensor* out = NULL;
    WT_OK(weft_session_run_with_metadata(s, &x, &xt, 1, &c, 1, NULL, 0,
                                         &out, m));
    float* want = malloc(sizeof(float) * N);
    for (int i = 0; i < N; ++i) want[i] = -expf(-xv[i]);
    expect_values(out, want, "c ~");
    expect_values(xt, xv, "the feed");
    free(want);
    weft_tensor_destroy(out);
    cr_expect_lt(weft_run_metadata_peak_bytes(m, 0), 2 * N * sizeof(float),
                 "peak %llu bytes: the chain did not run in place",
                 (unsigned long long)weft_run_metadata_peak_bytes(m, 0));
  }
  weft_run_metadata_destroy(m);
  weft_session_destroy(s);
  weft_tensor_destroy(xt);
  free(xv);
  weft_graph_destroy(g);
}

/* a = Neg(x) is read by Exp and, later, by the Add, and fetched on its
 * own; r = Reshape(a) shares a's buffer.  Neither Exp nor Neg(r) may write
 * over it: the fetched a, r and the sum keep their values. */
Test(forwarding, values_read_later_are_never_written_over) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(N), 1);
  weft_output a = wt_apply1(g, "Neg", "a", x);
  weft_output e = wt_apply1(g, "Exp", "e", a);
  weft_op_builder* b = weft_op_begin(g, "Reshape", "r");
  weft_op_add_input(b, a);
  const int64_t shape[2] = {N / 2, 2};
  weft_op_set_attr_int_list(b, "shape", shape, 2);
  weft_node* rn = NULL;
  WT_OK(weft_op_finish(b, &rn));
  weft_output r = {rn, 0};
  weft_output nr = wt_apply1(g, "Neg", "nr", r);
  weft_output sum = wt_apply2(g, "Add", "sum", e, a);
  float* xv = ramp();
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, xv);
  for (int threads = 0; threads <= 2; threads += 2) {
    weft_session* s = session_with(g, threads);
    for (int run = 0; run < 20; ++run) {
      weft_output fetches[4] = {a, sum, nr, r};
      weft_tensor* out[4] = {NULL};
      WT_OK(weft_session_run(s, &x, &xt, 1, fetches, 4, NULL, 0, out));
      float* want = malloc(sizeof(float) * N);
      for (int i = 0; i < N; ++i) want[i] = -xv[i];
      expect_values(out[0], want, "a");
      expect_values(out[3], want, "r");
      for (int i = 0; i < N; ++i) want[i] = xv[i];
      expect_values(out[2], want, "Neg(r)");
      for (int i = 0; i < N; ++i) want[i] = expf(-xv[i]) + -xv[i];
      expect_values(out[1], want, "sum ~");
      free(want);
      for (int k = 0; k < 4; ++k) weft_tensor_destroy(out[k]);
    }
    weft_session_destroy(s);
  }
  expect_values(xt, xv, "the feed");
  weft_tensor_destroy(xt);
  free(xv);
  weft_graph_destroy(g);
}

/* Each rule alone.  a = Neg(x) is read by Exp and then by the Add, and
 * by nothing else: only the count of its readers keeps Exp off it. */
Test(forwarding, a_value_another_node_reads_later_is_kept) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(N), 1);
  weft_output a = wt_apply1(g, "Neg", "a", x);
  weft_output sum = wt_apply2(g, "Add", "sum", wt_apply1(g, "Exp", "e", a), a);
  float* xv = ramp();
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, xv);
  weft_session* s = session_with(g, 0);
  weft_tensor* out = wt_run1(s, &x, &xt, 1, sum);
  float* want = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) want[i] = expf(-xv[i]) + -xv[i];
  expect_values(out, want, "sum ~");
  free(want);
  weft_tensor_destroy(out);
  weft_session_destroy(s);
  weft_tensor_destroy(xt);
  free(xv);
  weft_graph_destroy(g);
}

/* r = Reshape(a) shares a's buffer; Neg(a) is a's last reader, but only
 * the buffer's other holder (r's slot) keeps Neg off it. */
Test(forwarding, a_buffer_a_view_shares_is_kept) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(N), 1);
  weft_output a = wt_apply1(g, "Neg", "a", x);
  weft_op_builder* b = weft_op_begin(g, "Reshape", "r");
  weft_op_add_input(b, a);
  const int64_t shape[2] = {N / 2, 2};
  weft_op_set_attr_int_list(b, "shape", shape, 2);
  weft_node* rn = NULL;
  WT_OK(weft_op_finish(b, &rn));
  weft_output fetches[2] = {{rn, 0}, wt_apply1(g, "Neg", "na", a)};
  float* xv = ramp();
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(N), 1, xv);
  weft_session* s = session_with(g, 0);
  weft_tensor* out[2] = {NULL, NULL};
  WT_OK(weft_session_run(s, &x, &xt, 1, fetches, 2, NULL, 0, out));
  float* want = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) want[i] = -xv[i];
  expect_values(out[0], want, "r");
  expect_values(out[1], xv, "Neg(a)");
  free(want);
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(out[1]);
  weft_session_destroy(s);
  weft_tensor_destroy(xt);
  free(xv);
  weft_graph_destroy(g);
}

/* Neg of a constant and of a variable, run again and again: the constant
 * and the variable keep their values. */
Test(forwarding, constants_and_variables_are_never_written_over) {
  weft_graph* g = wt_graph_new();
  float* v = ramp();
  weft_output k = wt_const_f32(g, "k", WT_DIMS(N), 1, v);
  weft_output init = wt_const_f32(g, "init", WT_DIMS(N), 1, v);
  weft_output var;
  WT_OK(weft_graph_variable(g, "var", init, &var, NULL));
  weft_node* init_all = NULL;
  WT_OK(weft_graph_initialize_all(g, "init_all", &init_all));
  weft_output nk = wt_apply1(g, "Neg", "nk", k);
  weft_output nv = wt_apply1(g, "Neg", "nv", var);
  weft_session* s = session_with(g, 0);
  wt_run_targets(s, &init_all, 1);
  float* neg = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) neg[i] = -v[i];
  for (int run = 0; run < 3; ++run) {
    weft_tensor* out = wt_run1(s, NULL, NULL, 0, nk);
    expect_values(out, neg, "Neg(k)");
    weft_tensor_destroy(out);
    out = wt_run1(s, NULL, NULL, 0, nv);
    expect_values(out, neg, "Neg(var)");
    weft_tensor_destroy(out);
  }
  weft_tensor* kv = wt_run1(s, NULL, NULL, 0, k);
  expect_values(kv, v, "k");
  weft_tensor_destroy(kv);
  weft_tensor* vv = wt_run1(s, NULL, NULL, 0, var);
  expect_values(vv, v, "var");
  weft_tensor_destroy(vv);
  free(neg);
  free(v);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* BiasAdd writes over the value it adds to when it is that value's last
 * reader (a = Neg(x), then BiasAdd, then Neg: one buffer), and keeps it
 * when the value is fetched too; the bias, a constant, is never written. */
Test(forwarding, bias_add_writes_over_its_value_not_over_a_fetched_one) {
  enum { C = 64 };
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(N / C, C), 2);
  float bias[C];
  for (int k = 0; k < C; ++k) bias[k] = 0.125f * (float)k - 2.0f;
  weft_output b = wt_const_f32(g, "bias", WT_DIMS(C), 1, bias);
  weft_output a = wt_apply1(g, "Neg", "a", x);
  weft_output y = wt_apply1(g, "Neg", "y", wt_apply2(g, "BiasAdd", "ba", a, b));
  float* xv = ramp();
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(N / C, C), 2, xv);
  float* want_y = malloc(sizeof(float) * N);
  float* want_a = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) {
    want_a[i] = -xv[i];
    want_y[i] = -(-xv[i] + bias[i % C]);
  }
  weft_session* s = session_with(g, 0);
  weft_run_metadata* m = weft_run_metadata_create();
  for (int run = 0; run < 3; ++run) {
    weft_tensor* out = NULL;
    WT_OK(weft_session_run_with_metadata(s, &x, &xt, 1, &y, 1, NULL, 0,
                                         &out, m));
    expect_values(out, want_y, "y");
    weft_tensor_destroy(out);
    cr_expect_lt(weft_run_metadata_peak_bytes(m, 0), 2 * N * sizeof(float),
                 "peak %llu bytes: BiasAdd did not write over Neg's value",
                 (unsigned long long)weft_run_metadata_peak_bytes(m, 0));
    weft_output both[2] = {a, y};
    weft_tensor* outs[2] = {NULL, NULL};
    WT_OK(weft_session_run(s, &x, &xt, 1, both, 2, NULL, 0, outs));
    expect_values(outs[0], want_a, "a, fetched beside y");
    expect_values(outs[1], want_y, "y, beside a");
    weft_tensor_destroy(outs[0]);
    weft_tensor_destroy(outs[1]);
  }
  weft_tensor* bv = wt_run1(s, NULL, NULL, 0, b);
  cr_assert_eq(memcmp(weft_tensor_data(bv), bias, sizeof bias), 0,
               "the bias constant was written over");
  weft_tensor_destroy(bv);
  expect_values(xt, xv, "the feed");
  weft_run_metadata_destroy(m);
  weft_session_destroy(s);
  weft_tensor_destroy(xt);
  free(want_a);
  free(want_y);
  free(xv);
  weft_graph_destroy(g);
}
