/* LSTM training steps per second: 128 units over 28 steps of 28 inputs
 * (batch 64) in a weft_while_loop, dense to 10, softmax cross-entropy,
 * plain SGD (bench/train_lstm_tf.py and train_lstm_torch.cc are the same
 * model in TensorFlow and LibTorch).  Prints the median steps/s of timed
 * blocks and the CPU time per step.  Usage: train_lstm [threads] [steps] */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "weft/weft.h"

enum { B = 64, T = 28, D = 28, H = 128, C = 10 };

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

static weft_output node(weft_graph* g, const char* op, int n,
                        const weft_output* in) {
  weft_op_builder* b = weft_op_begin(g, op, NULL);
  for (int i = 0; i < n; ++i) weft_op_add_input(b, in[i]);
  weft_node* out = NULL;
  ok(weft_op_finish(b, &out), op);
  return (weft_output){out, 0};
}
static weft_output op1(weft_graph* g, const char* op, weft_output a) {
  return node(g, op, 1, &a);
}
static weft_output op2(weft_graph* g, const char* op, weft_output a,
                       weft_output b) {
  weft_output in[2] = {a, b};
  return node(g, op, 2, in);
}

static weft_output constant(weft_graph* g, weft_dtype t, const int64_t* dims,
                            int32_t rank, const void* data, size_t bytes) {
  weft_tensor* v = NULL;
  ok(weft_tensor_create_copy(t, dims, rank, data, bytes, &v), "constant");
  weft_output out;
  ok(weft_graph_constant(g, NULL, v, &out), "constant");
  weft_tensor_destroy(v);
  return out;
}

static weft_output scalar_i32(weft_graph* g, int32_t v) {
  return constant(g, WEFT_INT32, NULL, 0, &v, sizeof v);
}

static weft_output variable(weft_graph* g, int64_t rows, int64_t cols,
                            float limit) {
  int64_t dims[2] = {rows, cols};
  int32_t rank = cols ? 2 : 1;
  size_t n = (size_t)(rows * (cols ? cols : 1));
  float* v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; ++i) v[i] = (uniform() * 2 - 1) * limit;
  weft_output init = constant(g, WEFT_FLOAT32, dims, rank, v, n * sizeof *v);
  free(v);
  weft_output out;
  ok(weft_graph_variable(g, NULL, init, &out, NULL), "variable");
  return out;
}

typedef struct cell {
  weft_output x, w, b, one;
} cell;

static weft_status* below_t(weft_graph* g, void* user, const weft_output* v,
                            int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  *pred = op2(g, "Less", v[0], scalar_i32(g, T));
  return NULL;
}

static weft_status* step(weft_graph* g, void* user, const weft_output* v,
                         int32_t n, weft_output* next) {
  (void)n;
  const cell* L = user;
  weft_output pair[2] = {op2(g, "Gather", L->x, v[0]), v[1]};
  weft_op_builder* b = weft_op_begin(g, "Concat", NULL);
  weft_op_add_input_list(b, pair, 2);
  weft_op_set_attr_int(b, "axis", 1);
  weft_node* cat = NULL;
  ok(weft_op_finish(b, &cat), "Concat");
  weft_output gates =
      op2(g, "BiasAdd", op2(g, "MatMul", (weft_output){cat, 0}, L->w), L->b);
  b = weft_op_begin(g, "Split", NULL);
  weft_op_add_input(b, gates);
  weft_op_set_attr_int(b, "axis", 1);
  weft_op_set_attr_int(b, "num_split", 4);
  weft_node* s = NULL;
  ok(weft_op_finish(b, &s), "Split");
  weft_output i = op1(g, "Sigmoid", (weft_output){s, 0});
  weft_output f = op1(g, "Sigmoid", op2(g, "Add", (weft_output){s, 1}, L->one));
  weft_output u = op1(g, "Tanh", (weft_output){s, 2});
  weft_output o = op1(g, "Sigmoid", (weft_output){s, 3});
  next[2] = op2(g, "Add", op2(g, "Mul", f, v[2]), op2(g, "Mul", i, u));
  next[1] = op2(g, "Mul", o, op1(g, "Tanh", next[2]));
  next[0] = op2(g, "Add", v[0], scalar_i32(g, 1));
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int steps = argc > 2 ? atoi(argv[2]) : 200;
  ok(weft_plugins_discover(), "plugins");
  weft_graph* g = NULL;
  ok(weft_graph_create(&g), "graph");
  int64_t xd[3] = {T, B, D}, ld[1] = {B};
  weft_output x, labels;
  ok(weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 3, &x), "x");
  ok(weft_graph_placeholder(g, "labels", WEFT_INT32, ld, 1, &labels), "y");
  float lim = sqrtf(6.0f / (D + H + 4 * H));
  float one = 1;
  cell L = {x, variable(g, D + H, 4 * H, lim), variable(g, 4 * H, 0, 0),
            constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one)};
  weft_output wo = variable(g, H, C, 0.2f), bo = variable(g, C, 0, 0);
  int64_t hd[2] = {B, H};
  float* z = calloc(B * H, sizeof *z);
  weft_output zeros = constant(g, WEFT_FLOAT32, hd, 2, z, B * H * sizeof *z);
  free(z);
  weft_output init[3] = {scalar_i32(g, 0), zeros, zeros}, out[3];
  ok(weft_while_loop(g, below_t, step, &L, init, 3, NULL, out), "loop");
  weft_output logits = op2(g, "BiasAdd", op2(g, "MatMul", out[1], wo), bo);
  weft_output xent =
      op2(g, "SparseSoftmaxCrossEntropyWithLogits", logits, labels);
  weft_output loss = op1(g, "Mean", xent);
  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  opt.learning_rate = 0.1;
  weft_node *train = NULL, *init_all = NULL;
  ok(weft_minimize(g, loss, &opt, "train", &train), "minimize");
  ok(weft_graph_initialize_all(g, "init", &init_all), "init");

  weft_session_options so;
  weft_session_options_init(&so);
  so.devices = "CPU";
  so.inter_op_threads = threads;
  so.intra_op_threads = threads;
  weft_session* s = NULL;
  ok(weft_session_create(g, &so, &s), "session");
  ok(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init_all, 1, NULL), "init");
  weft_tensor *xv = NULL, *lv = NULL;
  ok(weft_tensor_create(WEFT_FLOAT32, xd, 3, &xv), "x");
  ok(weft_tensor_create(WEFT_INT32, ld, 1, &lv), "labels");
  float* xp = weft_tensor_data(xv);
  for (int i = 0; i < T * B * D; ++i) xp[i] = uniform();
  int32_t* lp = weft_tensor_data(lv);
  for (int i = 0; i < B; ++i) lp[i] = (int32_t)(uniform() * C) % C;
  weft_output feeds[2] = {x, labels};
  weft_tensor* values[2] = {xv, lv};
  bench_session_step step = {s, feeds, values, 2, train};
  bench_steps("Weft LSTM training", threads, steps, 10,
              bench_run_session_step, &step);
  weft_tensor_destroy(xv);
  weft_tensor_destroy(lv);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 0;
}
