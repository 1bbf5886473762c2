/* CNN training steps per second (issue 12's model): conv 5x5 1->32 SAME,
 * ReLU, max-pool 2, conv 5x5 32->64 SAME, ReLU, max-pool 2, dense
 * 3136->10, softmax cross-entropy, plain SGD, batch 64, NHWC.
 * bench/train_cnn_tf.py and train_cnn_torch.cc are the same model in
 * TensorFlow and LibTorch.  Prints the median steps/s of timed blocks and
 * the CPU time per step, then the peak run memory of one step
 * (WEFT_RECOMPUTE=cheap turns recomputation on; WEFT_BENCH_DEVICE=OPENCL
 * trains on OpenCL; WEFT_BENCH_PAIRED=N with threads >= 1: N pairs of
 * blocks against a 1-thread session instead, see bench_paired; threads
 * 1 is the method's A/A control; WEFT_BENCH_PAIRED_OPTIMIZATIONS=MASK: against
 * a session of as many threads without some optimizations).  Usage:
 * train_cnn [threads] [steps] */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "weft/weft.h"

enum { B = 64, S = 28, C = 10 };

static uint64_t rng = 88172645463325252ull;
static float uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0));
}

static void ok(weft_status* st, const char* what) {
  if (st) bench_die(what, st);
}

static weft_output finish(weft_op_builder* b, const char* what) {
  weft_node* n = NULL;
  ok(weft_op_finish(b, &n), what);
  return (weft_output){n, 0};
}

static weft_output op2(weft_graph* g, const char* op, weft_output a,
                       weft_output b) {
  weft_op_builder* bl = weft_op_begin(g, op, NULL);
  weft_op_add_input(bl, a);
  weft_op_add_input(bl, b);
  return finish(bl, op);
}

static weft_output op1(weft_graph* g, const char* op, weft_output a) {
  weft_op_builder* bl = weft_op_begin(g, op, NULL);
  weft_op_add_input(bl, a);
  return finish(bl, op);
}

static weft_output variable(weft_graph* g, const int64_t* dims, int32_t rank,
                            float limit) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  float* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; ++i) v[i] = (uniform() * 2 - 1) * limit;
  weft_tensor* t = NULL;
  ok(weft_tensor_create_copy(WEFT_FLOAT32, dims, rank, v,
                             (size_t)n * sizeof *v, &t), "init");
  free(v);
  weft_output init, out;
  ok(weft_graph_constant(g, NULL, t, &init), "init");
  weft_tensor_destroy(t);
  ok(weft_graph_variable(g, NULL, init, &out, NULL), "variable");
  return out;
}

static weft_output conv_relu_pool(weft_graph* g, weft_output x,
                                  weft_output filter, weft_output bias) {
  weft_op_builder* b = weft_op_begin(g, "Conv2D", NULL);
  weft_op_add_input(b, x);
  weft_op_add_input(b, filter);
  const int64_t ones[4] = {1, 1, 1, 1}, two[4] = {1, 2, 2, 1};
  weft_op_set_attr_int_list(b, "strides", ones, 4);
  weft_op_set_attr_string(b, "padding", "SAME");
  weft_output conv = finish(b, "Conv2D");
  weft_output act = op1(g, "Relu", op2(g, "BiasAdd", conv, bias));
  b = weft_op_begin(g, "MaxPool", NULL);
  weft_op_add_input(b, act);
  weft_op_set_attr_int_list(b, "ksize", two, 4);
  weft_op_set_attr_int_list(b, "strides", two, 4);
  weft_op_set_attr_string(b, "padding", "VALID");
  return finish(b, "MaxPool");
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int steps = argc > 2 ? atoi(argv[2]) : 100;
  ok(weft_plugins_discover(), "plugins");
  weft_graph* g = NULL;
  ok(weft_graph_create(&g), "graph");
  int64_t xd[4] = {B, S, S, 1}, ld[1] = {B};
  weft_output x, labels;
  ok(weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 4, &x), "x");
  ok(weft_graph_placeholder(g, "labels", WEFT_INT32, ld, 1, &labels), "y");
  const int64_t f1[4] = {5, 5, 1, 32}, b1[1] = {32}, f2[4] = {5, 5, 32, 64},
                b2[1] = {64}, wd[2] = {7 * 7 * 64, C}, bd[1] = {C};
  weft_output h = conv_relu_pool(g, x, variable(g, f1, 4, 0.2f),
                                 variable(g, b1, 1, 0));
  h = conv_relu_pool(g, h, variable(g, f2, 4, 0.05f), variable(g, b2, 1, 0));
  weft_op_builder* b = weft_op_begin(g, "Reshape", NULL);
  weft_op_add_input(b, h);
  const int64_t flat[2] = {B, 7 * 7 * 64};
  weft_op_set_attr_int_list(b, "shape", flat, 2);
  h = finish(b, "Reshape");
  weft_output logits = op2(g, "BiasAdd",
                           op2(g, "MatMul", h, variable(g, wd, 2, 0.03f)),
                           variable(g, bd, 1, 0));
  weft_output loss = op1(
      g, "Mean", op2(g, "SparseSoftmaxCrossEntropyWithLogits", logits, labels));
  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  opt.learning_rate = 0.01;
  weft_node *train = NULL, *init_all = NULL;
  ok(weft_minimize(g, loss, &opt, "train", &train), "minimize");
  ok(weft_graph_initialize_all(g, "init", &init_all), "init");

  weft_session* s = bench_open_session(g, threads, init_all);
  weft_tensor *xv = NULL, *lv = NULL;
  ok(weft_tensor_create(WEFT_FLOAT32, xd, 4, &xv), "x");
  ok(weft_tensor_create(WEFT_INT32, ld, 1, &lv), "labels");
  float* xp = weft_tensor_data(xv);
  for (int i = 0; i < B * S * S; ++i) xp[i] = uniform();
  int32_t* lp = weft_tensor_data(lv);
  for (int i = 0; i < B; ++i) lp[i] = (int32_t)(uniform() * C) % C;
  weft_output feeds[2] = {x, labels};
  weft_tensor* values[2] = {xv, lv};
  bench_session_step step = {s, feeds, values, 2, train};
  /* WEFT_BENCH_PAIRED: against a 1-thread session (or one without
   * WEFT_BENCH_PAIRED_OPTIMIZATIONS), block by block. */
  weft_session* s1 = bench_open_control_session(g, threads, init_all);
  bench_session_step step1 = {s1, feeds, values, 2, train};
  if (s1 == NULL || !bench_paired("Weft CNN training", threads, steps / 10, 5,
                                  bench_run_session_step, &step1, &step))
    bench_steps("Weft CNN training", threads, steps, 5,
                bench_run_session_step, &step);
  bench_report_memory("Weft CNN training", &step);
  bench_report_trace("Weft CNN training", &step, s1 != NULL ? &step1 : NULL);
  if (s1 != NULL) weft_session_destroy(s1);
  weft_tensor_destroy(xv);
  weft_tensor_destroy(lv);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 0;
}
