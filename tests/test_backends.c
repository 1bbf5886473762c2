/* One compiled program, several backends: tests/meson.build runs this binary
 * under several environments (WEFT_DEVICES=CPU, =OPENCL, =CPU,OPENCL with
 * compute estimates that send the MatMuls to OpenCL), and nothing here
 * names a device except one soft constraint in the graph.  Each run checks
 * the model's results against a reference computed here in double
 * precision, and checks from the run metadata that the nodes went where the
 * environment says: all on the one device, or split with transfers between.
 *
 * Model: loss = mean(xent(relu(x w1 + b1) w2 + b2, labels)), with the
 * cross-entropy constrained to /device:CPU:0 (soft: under WEFT_DEVICES=OPENCL
 * it falls back to OpenCL). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

enum { B = 16, IN = 48, HID = 40, OUT = 10 };

typedef struct model {
  weft_graph* graph;
  weft_output x, labels, probs_loss, mean;
  float xv[B * IN], w1[IN * HID], b1[HID], w2[HID * OUT], b2[OUT];
  float lv[B * OUT];
} model;

static weft_output apply_dev(weft_graph* g, const char* op, const char* name,
                             weft_output x, weft_output y, const char* dev) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, x);
  weft_op_add_input(b, y);
  if (dev) weft_op_set_device(b, dev);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  return (weft_output){n, 0};
}

static void build(model* m) {
  wt_rng rng = {2024};
  wt_rng_fill(&rng, m->xv, B * IN, -1, 1);
  wt_rng_fill(&rng, m->w1, IN * HID, -0.3f, 0.3f);
  wt_rng_fill(&rng, m->b1, HID, -0.1f, 0.1f);
  wt_rng_fill(&rng, m->w2, HID * OUT, -0.3f, 0.3f);
  wt_rng_fill(&rng, m->b2, OUT, -0.1f, 0.1f);
  memset(m->lv, 0, sizeof m->lv);
  for (int i = 0; i < B; ++i) m->lv[i * OUT + (i * 7) % OUT] = 1;

  weft_graph* g = m->graph = wt_graph_new();
  m->x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(B, IN));
  m->labels = wt_placeholder(g, "labels", WEFT_FLOAT32, WT_SHAPE(B, OUT));
  weft_output w1 = wt_const_f32(g, "w1", WT_SHAPE(IN, HID), m->w1);
  weft_output b1 = wt_const_f32(g, "b1", WT_SHAPE(HID), m->b1);
  weft_output w2 = wt_const_f32(g, "w2", WT_SHAPE(HID, OUT), m->w2);
  weft_output b2 = wt_const_f32(g, "b2", WT_SHAPE(OUT), m->b2);
  weft_output h = wt_apply2(g, "MatMul", "mm1", m->x, w1);
  weft_output hb = wt_apply2(g, "BiasAdd", "bias1", h, b1);
  weft_output r = wt_apply1(g, "Relu", "relu", hb);
  weft_output l = wt_apply2(g, "MatMul", "mm2", r, w2);
  weft_output lb = wt_apply2(g, "BiasAdd", "logits", l, b2);
  m->probs_loss =
      apply_dev(g, "SoftmaxCrossEntropyWithLogits", "xent", lb, m->labels,
                "/device:CPU:0");
  weft_op_builder* mb = weft_op_begin(g, "Mean", "loss");
  weft_op_add_input(mb, m->probs_loss);
  weft_node* mean = NULL;
  WT_OK(weft_op_finish(mb, &mean));
  m->mean = (weft_output){mean, 0};
}

/* The loss per example, in double precision. */
static void reference(const model* m, double loss[B]) {
  for (int i = 0; i < B; ++i) {
    double hid[HID], logit[OUT], mx = -INFINITY, z = 0;
    for (int j = 0; j < HID; ++j) {
      double s = m->b1[j];
      for (int k = 0; k < IN; ++k) s += (double)m->xv[i * IN + k] * m->w1[k * HID + j];
      hid[j] = s > 0 ? s : 0;
    }
    for (int j = 0; j < OUT; ++j) {
      double s = m->b2[j];
      for (int k = 0; k < HID; ++k) s += hid[k] * m->w2[k * OUT + j];
      logit[j] = s;
      if (s > mx) mx = s;
    }
    for (int j = 0; j < OUT; ++j) z += exp(logit[j] - mx);
    loss[i] = 0;
    for (int j = 0; j < OUT; ++j)
      loss[i] -= m->lv[i * OUT + j] * (logit[j] - mx - log(z));
  }
}

static const char* env_or(const char* name, const char* fallback) {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}

Test(backends, one_binary_runs_where_the_environment_says) {
  const char* devices = env_or("WEFT_DEVICES", "(every device)");
  model m;
  build(&m);
  weft_session_options o;
  weft_session_options_init(&o); /* devices NULL: the environment decides */
  weft_session* s = NULL;
  weft_status* st = weft_session_create(m.graph, &o, &s);
  if (st != NULL && weft_status_code(st) == WEFT_NOT_FOUND &&
      strstr(devices, "OPENCL") != NULL) {
    fprintf(stderr, "skipped: WEFT_DEVICES=%s names OpenCL, which this "
            "machine lacks: %s\n", devices, weft_status_message(st));
    weft_status_destroy(st);
    weft_graph_destroy(m.graph);
    cr_skip_test("no OpenCL device");
  }
  WT_OK(st);

  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_DIMS(B, IN), 2, m.xv);
  weft_tensor* lt = wt_tensor(WEFT_FLOAT32, WT_DIMS(B, OUT), 2, m.lv);
  weft_output feeds[2] = {m.x, m.labels};
  weft_tensor* values[2] = {xt, lt};
  weft_output fetches[2] = {m.probs_loss, m.mean};
  weft_tensor* outs[2] = {NULL, NULL};
  weft_run_metadata* md = weft_run_metadata_create();
  WT_OK(weft_session_run_with_metadata(s, feeds, values, 2, fetches, 2, NULL,
                                       0, outs, md));
  fprintf(stderr, "WEFT_DEVICES=%s WEFT_DEVICE_GFLOPS=%s\n%s", devices,
          env_or("WEFT_DEVICE_GFLOPS", "(unset)"),
          weft_run_metadata_to_string(md));

  double want[B], mean = 0;
  reference(&m, want);
  for (int i = 0; i < B; ++i) mean += want[i] / B;
  wt_expect_f32(outs[0], want, B, 1e-5, 1e-4);
  wt_expect_f32(outs[1], &mean, 1, 1e-5, 1e-4);

  /* Where the nodes went. */
  int on_cpu = 0, on_opencl = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(md); ++i) {
    const char* d = weft_run_metadata_node_device(md, i);
    on_cpu += strstr(d, "CPU") != NULL;
    on_opencl += strstr(d, "OPENCL") != NULL;
  }
  const char* expect = env_or("WEFT_TEST_EXPECT", "");
  if (strcmp(expect, "cpu") == 0) {
    cr_expect_eq(on_opencl, 0);
    cr_expect_eq(weft_run_metadata_num_transfers(md), 0);
  } else if (strcmp(expect, "opencl") == 0) {
    cr_expect_eq(on_cpu, 0);
    /* Only the two feeds cross, from host memory. */
    cr_expect_eq(weft_run_metadata_num_transfers(md), 2);
    const char* xent = weft_run_metadata_device_of(md, "xent");
    cr_expect(xent && strstr(xent, "OPENCL"), "xent on %s", xent);
  } else if (strcmp(expect, "split") == 0) {
    cr_expect_gt(on_cpu, 0);
    cr_expect_gt(on_opencl, 0);
    cr_expect_str_eq(weft_run_metadata_device_of(md, "mm1"),
                     "/device:OPENCL:0");
    cr_expect_str_eq(weft_run_metadata_device_of(md, "xent"),
                     "/device:CPU:0");
    cr_expect_geq(weft_run_metadata_num_transfers(md), 2);
  }

  weft_tensor_destroy(outs[0]);
  weft_tensor_destroy(outs[1]);
  weft_tensor_destroy(xt);
  weft_tensor_destroy(lt);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(m.graph);
}
