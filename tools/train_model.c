/* weft train's models (train.h): softmax regression, the MLP, the CNN and
 * the LSTM over image rows, with their losses, optimizers and the
 * variables a resume checks. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tools/random.h"
#include "tools/train.h"

/* Where every variable lives (--parameter-server), for the whole of one
 * train_build_model call; NULL otherwise. */
static const char* variables_device;

/* ---- The model -------------------------------------------------------------- */

const char* train_optimizer_name(const train_args* a) {
  if (a->optimizer) return a->optimizer;
  return strcmp(a->model, "softmax") == 0 ? "sgd" : "adam";
}

static int model_index(const char* model) {
  return strcmp(model, "cnn") == 0    ? 3
         : strcmp(model, "lstm") == 0 ? 2
                                      : strcmp(model, "mlp") == 0;
}

void train_run_config(const train_args* a, int64_t config[CONFIG_SIZE]) {
  const char* optimizer = train_optimizer_name(a);
  config[CONFIG_MODEL] = model_index(a->model);
  config[CONFIG_OPTIMIZER] = strcmp(optimizer, "adam") == 0       ? 2
                             : strcmp(optimizer, "momentum") == 0 ? 1
                                                                  : 0;
  config[CONFIG_BATCH] = a->batch;
  config[CONFIG_SEED] = (int64_t)a->seed;
  config[CONFIG_VALIDATION] = a->validation;
}

/* A float32 variable of shape `dims`, uniform in [-limit, limit) from
 * `seed` (limit 0: zeros), on variables_device. */
static int variable_of(weft_graph* g, const char* name, const int64_t* dims,
                       int32_t rank, double limit, uint64_t* seed,
                       weft_output* out) {
  weft_tensor* t = NULL;
  if (!train_check(weft_tensor_create(WEFT_FLOAT32, dims, rank, &t), name))
    return 0;
  float* p = weft_tensor_data(t);
  int64_t n = weft_tensor_element_count(t);
  for (int64_t i = 0; i < n; ++i)
    p[i] = limit > 0 ? (float)((weft_tool_uniform(seed) * 2 - 1) * limit)
                     : 0.0f;
  char init_name[128];
  snprintf(init_name, sizeof init_name, "%s/initial_value", name);
  weft_output init;
  int ok = train_check(weft_graph_constant(g, init_name, t, &init), name);
  weft_graph_set_device(g, variables_device);
  ok = ok && train_check(weft_graph_variable(g, name, init, out, NULL), name);
  weft_graph_set_device(g, NULL);
  weft_tensor_destroy(t);
  return ok;
}

/* A float32 variable of `rows` x `cols` (cols 0: a vector), Glorot-uniform
 * from `seed` when `glorot` is set, else zeros. */
static int variable(weft_graph* g, const char* name, int64_t rows,
                    int64_t cols, int glorot, uint64_t* seed,
                    weft_output* out) {
  const int64_t dims[2] = {rows, cols};
  return variable_of(g, name, dims, cols > 0 ? 2 : 1,
                     glorot ? sqrt(6.0 / (double)(rows + cols)) : 0, seed,
                     out);
}

static int apply(weft_graph* g, const char* op, const char* name,
                 weft_output a, const weft_output* b, weft_output* out) {
  weft_op_builder* bl = weft_op_begin(g, op, name);
  weft_op_add_input(bl, a);
  if (b) weft_op_add_input(bl, *b);
  weft_node* n = NULL;
  if (!train_check(weft_op_finish(bl, &n), name)) return 0;
  *out = (weft_output){n, 0};
  return 1;
}

static int apply_attr_ints(weft_graph* g, const char* op, const char* name,
                           weft_output x, const char* attr,
                           const int64_t* v, int32_t n, weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, x);
  weft_op_set_attr_int_list(b, attr, v, n);
  weft_node* node = NULL;
  if (!train_check(weft_op_finish(b, &node), name)) return 0;
  *out = (weft_output){node, 0};
  return 1;
}

/* ---- The CNN ------------------------------------------------------------------ */

/* The classic "deep MNIST" convolutional layer: 5 x 5 filters (Glorot
 * uniform over the window), SAME padding, a bias, ReLU, then 2 x 2 max
 * pooling: [batch, n, n, in] -> [batch, n / 2, n / 2, out]. */
static int conv_layer(weft_graph* g, const char* scope, weft_output x,
                      int64_t in, int64_t out, uint64_t* seed,
                      weft_output* y) {
  char name[64];
  const int64_t dims[4] = {5, 5, in, out};
  weft_output filter, bias, h;
  snprintf(name, sizeof name, "%s/filter", scope);
  if (!variable_of(g, name, dims, 4, sqrt(6.0 / (double)(25 * (in + out))),
                   seed, &filter))
    return 0;
  snprintf(name, sizeof name, "%s/bias", scope);
  if (!variable(g, name, out, 0, 0, seed, &bias)) return 0;
  const int64_t ones[4] = {1, 1, 1, 1}, two[4] = {1, 2, 2, 1};
  snprintf(name, sizeof name, "%s/conv", scope);
  weft_op_builder* b = weft_op_begin(g, "Conv2D", name);
  weft_op_add_input(b, x);
  weft_op_add_input(b, filter);
  weft_op_set_attr_int_list(b, "strides", ones, 4);
  weft_op_set_attr_string(b, "padding", "SAME");
  weft_node* conv = NULL;
  if (!train_check(weft_op_finish(b, &conv), name)) return 0;
  snprintf(name, sizeof name, "%s/preactivation", scope);
  if (!apply(g, "BiasAdd", name, (weft_output){conv, 0}, &bias, &h)) return 0;
  snprintf(name, sizeof name, "%s/relu", scope);
  if (!apply(g, "Relu", name, h, NULL, &h)) return 0;
  snprintf(name, sizeof name, "%s/pool", scope);
  b = weft_op_begin(g, "MaxPool", name);
  weft_op_add_input(b, h);
  weft_op_set_attr_int_list(b, "ksize", two, 4);
  weft_op_set_attr_int_list(b, "strides", two, 4);
  weft_op_set_attr_string(b, "padding", "VALID");
  weft_node* pool = NULL;
  if (!train_check(weft_op_finish(b, &pool), name)) return 0;
  *y = (weft_output){pool, 0};
  return 1;
}

/* Images [batch, 784] -> two convolutional layers (1 -> 32 -> 64
 * channels, 28 -> 14 -> 7 pixels a side) -> [batch, 7 * 7 * 64]. */
static int build_cnn(weft_graph* g, weft_output x, uint64_t* seed,
                     weft_output* features) {
  const int64_t image[4] = {-1, ROWS, ROW, 1}, flat[2] = {-1, CNN_FEATURES};
  weft_output h;
  return apply_attr_ints(g, "Reshape", "cnn/image", x, "shape", image, 4,
                         &h) &&
         conv_layer(g, "conv1", h, 1, 32, seed, &h) &&
         conv_layer(g, "conv2", h, 32, 64, seed, &h) &&
         apply_attr_ints(g, "Reshape", "cnn/features", h, "shape", flat, 2,
                         features);
}

/* ---- The LSTM ----------------------------------------------------------------- */

/* The LSTM's loop: variables (t, h, c); the rows [ROWS, batch, ROW], the
 * gate weights [ROW + UNITS, 4 UNITS] and bias come in from outside. */
typedef struct lstm_loop {
  weft_output rows, weights, bias, forget_bias;
} lstm_loop;

static weft_status* lstm_cond(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  int32_t rows = ROWS;
  weft_tensor* t = NULL;
  weft_status* st = weft_tensor_create_copy(WEFT_INT32, NULL, 0, &rows,
                                            sizeof rows, &t);
  weft_output limit;
  if (st == NULL) st = weft_graph_constant(g, NULL, t, &limit);
  weft_tensor_destroy(t);
  if (st != NULL) return st;
  weft_op_builder* b = weft_op_begin(g, "Less", NULL);
  weft_op_add_input(b, v[0]);
  weft_op_add_input(b, limit);
  weft_node* node = NULL;
  st = weft_op_finish(b, &node);
  *pred = (weft_output){node, 0};
  return st;
}

static weft_status* op2(weft_graph* g, const char* op, weft_output a,
                        weft_output b, weft_output* out) {
  weft_op_builder* bl = weft_op_begin(g, op, NULL);
  weft_op_add_input(bl, a);
  weft_op_add_input(bl, b);
  weft_node* n = NULL;
  weft_status* st = weft_op_finish(bl, &n);
  *out = (weft_output){n, 0};
  return st;
}

static weft_status* op1(weft_graph* g, const char* op, weft_output a,
                        weft_output* out) {
  weft_op_builder* bl = weft_op_begin(g, op, NULL);
  weft_op_add_input(bl, a);
  weft_node* n = NULL;
  weft_status* st = weft_op_finish(bl, &n);
  *out = (weft_output){n, 0};
  return st;
}

/* One step: gates = [x_t, h] W + b; c' = sigmoid(f + 1) c + sigmoid(i)
 * tanh(g); h' = sigmoid(o) tanh(c'). */
static weft_status* lstm_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  const lstm_loop* L = user;
  weft_status* st = NULL;
  weft_output x_t, xh, gates, parts[4], one, i, f, u, o, c1, c2, tc;
  int32_t step = 1;
  weft_tensor* t = NULL;
#define TRY(call) \
  do {            \
    st = (call);  \
    if (st) return st; \
  } while (0)
  TRY(op2(g, "Gather", L->rows, v[0], &x_t));
  weft_op_builder* b = weft_op_begin(g, "Concat", NULL);
  weft_output pair[2] = {x_t, v[1]};
  weft_op_add_input_list(b, pair, 2);
  weft_op_set_attr_int(b, "axis", 1);
  weft_node* node = NULL;
  TRY(weft_op_finish(b, &node));
  xh = (weft_output){node, 0};
  TRY(op2(g, "MatMul", xh, L->weights, &gates));
  TRY(op2(g, "BiasAdd", gates, L->bias, &gates));
  b = weft_op_begin(g, "Split", NULL);
  weft_op_add_input(b, gates);
  weft_op_set_attr_int(b, "axis", 1);
  weft_op_set_attr_int(b, "num_split", 4);
  TRY(weft_op_finish(b, &node));
  for (int k = 0; k < 4; ++k) parts[k] = (weft_output){node, k};
  TRY(op1(g, "Sigmoid", parts[0], &i));
  TRY(op2(g, "Add", parts[1], L->forget_bias, &f));
  TRY(op1(g, "Sigmoid", f, &f));
  TRY(op1(g, "Tanh", parts[2], &u));
  TRY(op1(g, "Sigmoid", parts[3], &o));
  TRY(op2(g, "Mul", f, v[2], &c1));
  TRY(op2(g, "Mul", i, u, &c2));
  TRY(op2(g, "Add", c1, c2, &next[2]));
  TRY(op1(g, "Tanh", next[2], &tc));
  TRY(op2(g, "Mul", o, tc, &next[1]));
  TRY(weft_tensor_create_copy(WEFT_INT32, NULL, 0, &step, sizeof step, &t));
  st = weft_graph_constant(g, NULL, t, &one);
  weft_tensor_destroy(t);
  if (st) return st;
  TRY(op2(g, "Add", v[0], one, &next[0]));
#undef TRY
  return NULL;
}

/* The last hidden state of an LSTM over the image's rows. */
static int build_lstm(weft_graph* g, weft_output x, uint64_t* seed,
                      weft_output* h_out) {
  const int64_t image[3] = {-1, ROWS, ROW}, time_major[3] = {1, 0, 2};
  weft_output img, rows, w, bias, zeros_w, h0, c0, zero_t, forget;
  lstm_loop L;
  float one = 1.0f;
  int32_t start = 0;
  weft_tensor* t = NULL;
  if (!apply_attr_ints(g, "Reshape", "lstm/image", x, "shape", image, 3,
                       &img) ||
      !apply_attr_ints(g, "Transpose", "lstm/rows", img, "perm", time_major,
                       3, &rows) ||
      !variable(g, "lstm/weights", ROW + UNITS, 4 * UNITS, 1, seed, &w) ||
      !variable(g, "lstm/bias", 4 * UNITS, 0, 0, seed, &bias))
    return 0;
  /* Zero states with the batch's size: x times a zero matrix. */
  int64_t zd[2] = {PIXELS, UNITS};
  if (!train_check(weft_tensor_create(WEFT_FLOAT32, zd, 2, &t), "lstm/zeros"))
    return 0;
  memset(weft_tensor_data(t), 0, sizeof(float) * PIXELS * UNITS);
  int ok = train_check(weft_graph_constant(g, "lstm/zeros", t, &zeros_w),
                 "lstm/zeros");
  weft_tensor_destroy(t);
  if (!ok || !apply(g, "MatMul", "lstm/h0", x, &zeros_w, &h0) ||
      !apply(g, "Identity", "lstm/c0", h0, NULL, &c0))
    return 0;
  if (!train_check(weft_tensor_create_copy(WEFT_INT32, NULL, 0, &start,
                                     sizeof start, &t), "lstm/t0"))
    return 0;
  ok = train_check(weft_graph_constant(g, "lstm/t0", t, &zero_t), "lstm/t0");
  weft_tensor_destroy(t);
  if (!ok || !train_check(weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &one,
                                            sizeof one, &t), "lstm/forget"))
    return 0;
  ok = train_check(weft_graph_constant(g, "lstm/forget_bias", t, &forget),
             "lstm/forget_bias");
  weft_tensor_destroy(t);
  if (!ok) return 0;
  L.rows = rows;
  L.weights = w;
  L.bias = bias;
  L.forget_bias = forget;
  weft_output init[3] = {zero_t, h0, c0}, out[3];
  weft_while_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.name = "lstm/loop";
  if (!train_check(weft_while_loop(g, lstm_cond, lstm_body, &L, init, 3, &o, out),
             "lstm/loop"))
    return 0;
  *h_out = out[1];
  return 1;
}

/* logits = x W + b, with a hidden ReLU layer first for the MLP, the
 * LSTM's last state as x for the LSTM, the convolutional layers' features
 * for the CNN. */
int train_build_model(const train_args* a, model* m,
                      const idx_dataset* train) {
  variables_device = a->variables_device;
  uint64_t seed = a->seed;
  weft_graph* g = NULL;
  if (!train_check(weft_graph_create(&g), "creating the graph")) return 0;
  m->graph = g;
  int64_t xd[2] = {-1, PIXELS}, ld[1] = {-1};
  if (a->pipeline) {
    /* The model reads the dataset's batches; evaluation and serving feed
     * "images" and "labels" (any output can be fed), which cuts the
     * iterator out of their runs. */
    weft_output batch[2];
    if (!train_input_pipeline(a, train, g, batch) ||
        !apply(g, "Identity", "images", batch[0], NULL, &m->x) ||
        !apply(g, "Identity", "labels", batch[1], NULL, &m->labels))
      return 0;
  } else if (!train_check(weft_graph_placeholder(g, "images", WEFT_FLOAT32, xd, 2,
                                           &m->x), "images") ||
             !train_check(weft_graph_placeholder(g, "labels", WEFT_INT32, ld, 1,
                                           &m->labels), "labels")) {
    return 0;
  }
  weft_output h = m->x, w, b, t;
  int64_t in = PIXELS;
  int mlp = strcmp(a->model, "mlp") == 0;
  int lstm = strcmp(a->model, "lstm") == 0;
  int cnn = strcmp(a->model, "cnn") == 0;
  if (lstm) {
    if (!build_lstm(g, m->x, &seed, &h)) return 0;
    in = UNITS;
  }
  if (cnn) {
    if (!build_cnn(g, m->x, &seed, &h)) return 0;
    in = CNN_FEATURES;
  }
  if (mlp) {
    if (!variable(g, "hidden/weights", PIXELS, HIDDEN, 1, &seed, &w) ||
        !variable(g, "hidden/bias", HIDDEN, 0, 0, &seed, &b) ||
        !apply(g, "MatMul", "hidden/matmul", h, &w, &t) ||
        !apply(g, "BiasAdd", "hidden/preactivation", t, &b, &t) ||
        !apply(g, "Relu", "hidden/relu", t, NULL, &h))
      return 0;
    in = HIDDEN;
  }
  if (!variable(g, "softmax/weights", in, CLASSES, mlp || lstm || cnn, &seed,
                &w) ||
      !variable(g, "softmax/bias", CLASSES, 0, 0, &seed, &b) ||
      !apply(g, "MatMul", "softmax/matmul", h, &w, &t) ||
      !apply(g, "BiasAdd", "logits", t, &b, &m->logits) ||
      !apply(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", m->logits,
             &m->labels, &t) ||
      !apply(g, "Mean", "loss", t, NULL, &m->loss) ||
      !apply(g, "Softmax", "probabilities", m->logits, NULL,
             &m->probabilities))
    return 0;
  {
    weft_op_builder* am = weft_op_begin(g, "ArgMax", "classes");
    weft_op_add_input(am, m->logits);
    weft_op_set_attr_int(am, "axis", 1);
    weft_op_set_attr_dtype(am, "output_type", WEFT_INT32);
    weft_node* classes = NULL;
    if (!train_check(weft_op_finish(am, &classes), "classes")) return 0;
    m->classes = (weft_output){classes, 0};
  }

  /* The tutorial's plain gradient descent at 0.5 for softmax regression;
   * Adam for the MLP: after two epochs plain SGD leaves it at 83-85% over
   * seeds (learning rates 0.1-0.3), momentum at 84.9-85.7%, Adam at
   * 85.4-86.4% (seeds 1-5, this machine). */
  const char* optimizer = train_optimizer_name(a);
  int kind = strcmp(optimizer, "adam") == 0       ? WEFT_OPTIMIZER_ADAM
             : strcmp(optimizer, "momentum") == 0 ? WEFT_OPTIMIZER_MOMENTUM
                                                  : WEFT_OPTIMIZER_GRADIENT_DESCENT;
  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, kind);
  double default_lr = kind == WEFT_OPTIMIZER_ADAM       ? (lstm || cnn ? 0.002
                                                                       : 0.001)
                      : kind == WEFT_OPTIMIZER_MOMENTUM ? 0.05
                      : mlp                             ? 0.1
                                                        : 0.5;
  opt.learning_rate = a->learning_rate > 0 ? a->learning_rate : default_lr;
  m->learning_rate = opt.learning_rate;
  /* Data-parallel: each rank's gradient of its shard, averaged over the
   * ranks before the update, equals the whole batch's. */
  opt.data_parallel = a->data_parallel;
  opt.bucket_bytes = a->bucket_bytes;
  if (!train_check(weft_minimize(g, m->loss, &opt, "train", &m->train),
             "building the training step"))
    return 0;
  m->loss_report = m->loss;
  if (a->data_parallel) {
    weft_op_builder* mean = weft_op_begin(g, "AllReduce", "loss/all_ranks");
    weft_op_add_input(mean, m->loss);
    weft_op_set_attr_string(mean, "reduction", "mean");
    weft_node* n = NULL;
    if (!train_check(weft_op_finish(mean, &n), "the loss over the ranks")) return 0;
    m->loss_report = (weft_output){n, 0};
  }

  /* The step count, saved with the weights so a resume knows where it is. */
  weft_tensor* zero = NULL;
  weft_output zero_out, one_out, inc = {NULL, 0};
  int64_t one_v = 1;
  weft_tensor* one = NULL;
  int64_t config_v[CONFIG_SIZE];
  train_run_config(a, config_v);
  const int64_t config_dims[1] = {CONFIG_SIZE};
  weft_tensor* config = NULL;
  weft_output config_out;
  if (!train_check(weft_tensor_create_copy(WEFT_INT64, config_dims, 1, config_v,
                                     sizeof config_v, &config), "config"))
    return 0;
  weft_graph_set_device(g, a->variables_device);
  int config_ok =
      train_check(weft_graph_constant(g, "train/config/value", config,
                                &config_out), "config") &&
      train_check(weft_graph_variable(g, "train/config", config_out, &m->config,
                                NULL), "config") &&
      train_check(weft_variable_set_trainable(g, m->config.node, 0), "config");
  weft_tensor_destroy(config);
  if (!config_ok ||
      !train_check(weft_tensor_create(WEFT_INT64, NULL, 0, &zero), "step") ||
      !train_check(weft_tensor_create_copy(WEFT_INT64, NULL, 0, &one_v,
                                     sizeof one_v, &one), "step"))
    return 0;
  *(int64_t*)weft_tensor_data(zero) = 0;
  int ok = train_check(weft_graph_constant(g, "global_step/zero", zero, &zero_out),
                 "step") &&
           train_check(weft_graph_variable(g, "global_step", zero_out, &m->step,
                                     NULL), "step") &&
           train_check(weft_variable_set_trainable(g, m->step.node, 0), "step") &&
           train_check(weft_graph_constant(g, "global_step/one", one, &one_out),
                 "step") &&
           apply(g, "AssignAdd", "global_step/increment", m->step, &one_out,
                 &inc) &&
           train_check(weft_graph_initialize_all(g, "init", &m->init), "init") &&
           (!a->data_parallel ||
            train_check(weft_broadcast_variables(g, 0, "sync", &m->broadcast),
                  "sharing rank 0's variables"));
  weft_graph_set_device(g, NULL);
  m->step_inc = inc.node;
  weft_tensor_destroy(zero);
  weft_tensor_destroy(one);
  return ok;
}

