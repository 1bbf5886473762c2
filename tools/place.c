/* weft place — how a session would place a model on this machine's devices.
 *
 * Given a model file (`weft place MODEL`), loads it in a session with the
 * options given and feeds every input of its signature a zero tensor
 * (unknown dimensions become --batch, default 1).  Without one, builds a
 * two-layer perceptron (the whitepaper's relu(W x + b), then a softmax
 * classifier); with --train, its training step instead (the weights as
 * variables, cross-entropy against fed labels, Adam), which shows where the
 * variables, their updates and the gradient go.  Either way it runs once
 * and prints the run metadata: the
 * device of every node and why, the Send/Recv pairs, the common
 * subexpressions merged, and the peak memory per device.  Session options
 * left unset fall back to the environment (WEFT_DEVICES,
 * WEFT_DEVICE_GFLOPS, WEFT_PLACEMENT, WEFT_TRANSFER_PRECISION), so `weft
 * place` shows what a program run with the same environment gets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/json.h"
#include "tools/model_open.h"
#include "weft/weft.h"

typedef struct place_args {
  weft_session_options options;
  int64_t batch, inputs, hidden, classes;
  const char* constrain;  /* device for the first MatMul, or NULL */
  int batch_given, hidden_given;
  int train;              /* --train: the perceptron's Adam training step */
  int json;               /* --json: the run metadata as one JSON document */
  model_open model;       /* model.path NULL: the built-in perceptron */
} place_args;

static int parse_size(const char* flag, const char* text, int64_t* out) {
  char* end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > (1LL << 24)) {
    fprintf(stderr, "weft place: %s wants a positive integer, got '%s'\n",
            flag, text);
    return 0;
  }
  *out = v;
  return 1;
}

static int parse_args(int argc, char** argv, place_args* a) {
  weft_session_options_init(&a->options);
  a->batch = 64;
  a->inputs = 784;
  a->hidden = 256;
  a->classes = 10;
  a->constrain = NULL;
  a->batch_given = a->hidden_given = a->train = a->json = 0;
  memset(&a->model, 0, sizeof a->model);
  for (int i = 1; i < argc; ++i) {
    int taken = model_open_option(&a->model, "place", argc, argv, &i);
    if (taken < 0) return 0;
    if (taken) continue;
    const char* arg = argv[i];
    if (arg[0] != '-') {
      if (a->model.path != NULL) {
        fprintf(stderr, "weft place: one model at a time ('%s', then "
                "'%s')\n", a->model.path, arg);
        return 0;
      }
      a->model.path = arg;
      continue;
    }
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    int takes_value = 1;
    if (strcmp(arg, "--train") == 0) {
      a->train = 1;
      continue;
    }
    if (strcmp(arg, "--json") == 0) {
      a->json = 1;
      continue;
    }
    if (strcmp(arg, "--strict") == 0) {
      a->options.placement = WEFT_PLACEMENT_STRICT;
      takes_value = 0;
    } else if (strcmp(arg, "--no-optimize") == 0) {
      a->options.optimizations = 0;
      takes_value = 0;
    } else if (value == NULL) {
      fprintf(stderr, "weft place: unknown or incomplete argument '%s'\n",
              arg);
      return 0;
    } else if (strcmp(arg, "--devices") == 0) {
      a->options.devices = value;
    } else if (strcmp(arg, "--gflops") == 0) {
      a->options.device_gflops = value;
    } else if (strcmp(arg, "--constrain") == 0) {
      a->constrain = value;
    } else if (strcmp(arg, "--precision") == 0) {
      if (strcmp(value, "exact") == 0) {
        a->options.transfer_precision = WEFT_TRANSFER_EXACT;
      } else if (strcmp(value, "bfloat16") == 0) {
        a->options.transfer_precision = WEFT_TRANSFER_BFLOAT16;
      } else if (strcmp(value, "float16") == 0) {
        a->options.transfer_precision = WEFT_TRANSFER_FLOAT16;
      } else {
        fprintf(stderr,
                "weft place: --precision is exact, bfloat16 or float16, "
                "not '%s'\n", value);
        return 0;
      }
    } else if (strcmp(arg, "--batch") == 0) {
      if (!parse_size(arg, value, &a->batch)) return 0;
      a->batch_given = 1;
    } else if (strcmp(arg, "--hidden") == 0) {
      if (!parse_size(arg, value, &a->hidden)) return 0;
      a->hidden_given = 1;
    } else {
      fprintf(stderr, "weft place: unknown argument '%s'\n", arg);
      return 0;
    }
    i += takes_value;
  }
  if (a->model.path == NULL) {
    if (a->model.signature || a->model.format ||
        a->model.num_graphdef_outputs) {
      fprintf(stderr, "weft place: --signature, --format and "
              "--graphdef-output need a MODEL\n");
      return 0;
    }
    return 1;
  }
  if (a->hidden_given || a->constrain || a->train) {
    fprintf(stderr, "weft place: --hidden, --constrain and --train shape "
            "the built-in model, not '%s'\n", a->model.path);
    return 0;
  }
  if (!a->batch_given) a->batch = 1;
  return 1;
}

/* A constant of the given shape with small deterministic values. */
static weft_status* constant(weft_graph* g, const char* name, int64_t rows,
                             int64_t cols, weft_output* out) {
  int64_t dims[2] = {rows, cols};
  int32_t rank = cols > 0 ? 2 : 1;
  weft_tensor* t = NULL;
  weft_status* st = weft_tensor_create(WEFT_FLOAT32, dims, rank, &t);
  if (st) return st;
  float* p = weft_tensor_data(t);
  int64_t n = weft_tensor_element_count(t);
  for (int64_t i = 0; i < n; ++i) p[i] = (float)((i * 7919) % 101) * 1e-3f;
  st = weft_graph_constant(g, name, t, out);
  weft_tensor_destroy(t);
  return st;
}

static weft_status* apply(weft_graph* g, const char* op, const char* name,
                          weft_output x, const weft_output* y,
                          const char* device, weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, x);
  if (y) weft_op_add_input(b, *y);
  if (device) weft_op_set_device(b, device);
  weft_node* node = NULL;
  weft_status* st = weft_op_finish(b, &node);
  *out = (weft_output){node, 0};
  return st;
}

/* A parameter: a constant, or (--train) a variable initialized to it. */
static weft_status* parameter(weft_graph* g, const place_args* a,
                              const char* name, int64_t rows, int64_t cols,
                              weft_output* out) {
  if (!a->train) return constant(g, name, rows, cols, out);
  char init_name[64];
  snprintf(init_name, sizeof init_name, "%s/initial_value", name);
  weft_output init;
  weft_status* st = constant(g, init_name, rows, cols, &init);
  return st ? st : weft_graph_variable(g, name, init, out, NULL);
}

/* probabilities = softmax(relu(x W1 + b1) W2 + b2); the logits too. */
static weft_status* build(weft_graph* g, const place_args* a,
                          weft_output* x, weft_output* probs,
                          weft_output* logits) {
  weft_output w1, b1, w2, b2, h, hb, r, l, lb;
  int64_t xd[2] = {a->batch, a->inputs};
  weft_status* st = weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 2, x);
  if (!st) st = parameter(g, a, "w1", a->inputs, a->hidden, &w1);
  if (!st) st = parameter(g, a, "b1", a->hidden, 0, &b1);
  if (!st) st = parameter(g, a, "w2", a->hidden, a->classes, &w2);
  if (!st) st = parameter(g, a, "b2", a->classes, 0, &b2);
  if (!st) st = apply(g, "MatMul", "layer1/matmul", *x, &w1, a->constrain, &h);
  if (!st) st = apply(g, "BiasAdd", "layer1/bias", h, &b1, NULL, &hb);
  if (!st) st = apply(g, "Relu", "layer1/relu", hb, NULL, NULL, &r);
  if (!st) st = apply(g, "MatMul", "layer2/matmul", r, &w2, NULL, &l);
  if (!st) st = apply(g, "BiasAdd", "layer2/bias", l, &b2, NULL, &lb);
  if (!st) st = apply(g, "Softmax", "probabilities", lb, NULL, NULL, probs);
  *logits = lb;
  return st;
}

/* --train: the mean cross-entropy against labels (fed zeros) minimized by
 * Adam; `step` is the training op, `loss` what a run fetches. */
static weft_status* add_training(weft_graph* g, const place_args* a,
                                 weft_output logits, weft_output* labels,
                                 weft_output* loss, weft_node** step,
                                 weft_node** init) {
  int64_t ld[1] = {a->batch};
  weft_output xent;
  weft_status* st =
      weft_graph_placeholder(g, "labels", WEFT_INT32, ld, 1, labels);
  if (!st)
    st = apply(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", logits,
               labels, NULL, &xent);
  if (!st) st = apply(g, "Mean", "loss", xent, NULL, NULL, loss);
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_ADAM);
  if (!st) st = weft_minimize(g, *loss, &o, "train", step);
  if (!st) st = weft_graph_initialize_all(g, "init", init);
  return st;
}

/* Array field `key` of the document: `count` objects, each printed by
 * `element` (which returns a status for accessors that can fail). */
typedef weft_status* (*element_fn)(printer* p, const weft_run_metadata* md,
                                   int32_t i);

static weft_status* print_array(printer* p, const weft_run_metadata* md,
                                const char* key, int32_t count,
                                element_fn element) {
  json_key(p, key);
  printf("[");
  for (int32_t i = 0; i < count; ++i) {
    int outer = json_begin_nested(p, i);
    weft_status* st = element(p, md, i);
    json_end_nested(p, outer);
    if (st != NULL) return st;
  }
  printf("]");
  return NULL;
}

static weft_status* node_json(printer* p, const weft_run_metadata* md,
                              int32_t i) {
  json_text(p, "name", weft_run_metadata_node_name(md, i));
  json_text(p, "op", weft_run_metadata_node_op(md, i));
  json_text(p, "device", weft_run_metadata_node_device(md, i));
  json_text(p, "reason", weft_run_metadata_node_reason(md, i));
  json_text(p, "frame", weft_run_metadata_node_frame(md, i));
  return NULL;
}

static weft_status* frame_json(printer* p, const weft_run_metadata* md,
                               int32_t i) {
  const char *name = NULL, *parent = NULL;
  int32_t parallel = 0, in_flight = 0;
  int64_t iterations = 0;
  weft_status* st = weft_run_metadata_frame(md, i, &name, &parent, &parallel,
                                            &iterations, &in_flight);
  if (st != NULL) return st;
  json_text(p, "name", name);
  json_text(p, "parent", parent);
  json_number(p, "parallel_iterations", parallel);
  json_number(p, "iterations", (double)iterations);
  json_number(p, "max_in_flight", in_flight);
  return NULL;
}

static weft_status* transfer_json(printer* p, const weft_run_metadata* md,
                                  int32_t i) {
  const char *value = NULL, *src = NULL, *dst = NULL;
  int32_t wire = 0;
  uint64_t bytes = 0;
  weft_status* st =
      weft_run_metadata_transfer(md, i, &value, &src, &dst, &wire, &bytes);
  if (st != NULL) return st;
  json_text(p, "value", value);
  json_text(p, "from", src);
  json_text(p, "to", dst);
  json_text(p, "wire_dtype", weft_dtype_name((weft_dtype)wire));
  json_number(p, "bytes", (double)bytes);
  return NULL;
}

/* The pairs of names: merged, fused, recomputed and in-place updates. */
typedef weft_status* (*pair_fn)(const weft_run_metadata* md, int32_t i,
                                const char** first, const char** second);

static weft_status* pair_json(printer* p, const weft_run_metadata* md,
                              int32_t i, pair_fn read, const char* key1,
                              const char* key2) {
  const char *first = NULL, *second = NULL;
  weft_status* st = read(md, i, &first, &second);
  if (st != NULL) return st;
  json_text(p, key1, first);
  json_text(p, key2, second);
  return NULL;
}

static weft_status* merged_json(printer* p, const weft_run_metadata* md,
                                int32_t i) {
  return pair_json(p, md, i, weft_run_metadata_merged, "removed", "kept");
}

static weft_status* fused_json(printer* p, const weft_run_metadata* md,
                               int32_t i) {
  return pair_json(p, md, i, weft_run_metadata_fused, "node", "replaced");
}

static weft_status* recomputed_json(printer* p, const weft_run_metadata* md,
                                    int32_t i) {
  return pair_json(p, md, i, weft_run_metadata_recomputed, "node",
                   "stands_for");
}

static weft_status* in_place_json(printer* p, const weft_run_metadata* md,
                                  int32_t i) {
  return pair_json(p, md, i, weft_run_metadata_in_place, "update",
                   "variable");
}

static weft_status* device_json(printer* p, const weft_run_metadata* md,
                                int32_t i) {
  json_text(p, "name", weft_run_metadata_device_name(md, i));
  json_number(p, "peak_bytes", (double)weft_run_metadata_peak_bytes(md, i));
  return NULL;
}

/* The run metadata as one JSON document, with `model` saying what ran. */
static weft_status* print_json(const weft_run_metadata* md,
                               const char* model) {
  printer p = {1, 0};
  printf("{");
  json_text(&p, "model", model);
  weft_status* st = print_array(&p, md, "nodes",
                                weft_run_metadata_num_nodes(md), node_json);
  if (!st)
    st = print_array(&p, md, "frames", weft_run_metadata_num_frames(md),
                     frame_json);
  if (!st)
    st = print_array(&p, md, "transfers",
                     weft_run_metadata_num_transfers(md), transfer_json);
  if (!st)
    st = print_array(&p, md, "merged", weft_run_metadata_num_merged(md),
                     merged_json);
  if (!st)
    st = print_array(&p, md, "fused", weft_run_metadata_num_fused(md),
                     fused_json);
  if (!st)
    st = print_array(&p, md, "recomputed",
                     weft_run_metadata_num_recomputed(md), recomputed_json);
  if (!st)
    st = print_array(&p, md, "in_place", weft_run_metadata_num_in_place(md),
                     in_place_json);
  if (!st)
    st = print_array(&p, md, "devices", weft_run_metadata_num_devices(md),
                     device_json);
  if (!st)
    json_number(&p, "intra_op_threads",
                weft_run_metadata_intra_op_threads(md));
  printf("}\n");
  return st;
}

/* Prints the metadata of a run that succeeded (text after the line saying
 * what ran, or JSON), or reports that it failed with `st` (the nodes placed
 * before the failure go to stderr).  Returns the exit code and releases
 * `st`. */
static int report(weft_status* st, weft_run_metadata* md,
                  const place_args* a, const char* model) {
  if (st == NULL && a->json) st = print_json(md, model);
  if (st == NULL) {
    if (!a->json) printf("model: %s\n%s", model,
                         weft_run_metadata_to_string(md));
    return 0;
  }
  fprintf(stderr, "weft place: %s\n", weft_status_message(st));
  if (weft_run_metadata_num_nodes(md) > 0)
    fputs(weft_run_metadata_to_string(md), stderr);
  weft_status_destroy(st);
  return 1;
}

/* A zero tensor for `input`; unknown dimensions become `batch`. */
static weft_status* zeros_for(const char* key, weft_output input,
                              int64_t batch, weft_tensor** out) {
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  weft_status* st = weft_output_shape(input, dims, WEFT_MAX_RANK, &rank);
  if (st != NULL) return st;
  if (rank < 0) {
    char message[512];
    snprintf(message, sizeof message, "input '%s' (%s:%d) has unknown rank: "
             "no zero tensor can stand in for it", key,
             weft_node_name(input.node), input.index);
    return weft_status_create(WEFT_INVALID_ARGUMENT, message);
  }
  for (int32_t i = 0; i < rank; ++i)
    if (dims[i] < 0) dims[i] = batch;
  return weft_tensor_create(weft_output_dtype(input), dims, rank, out);
}

/* The fetches and feeds of one signature, as graph outputs for
 * weft_session_run_with_metadata. */
typedef struct signature_run {
  int32_t num_inputs, num_outputs;
  weft_output* feeds;
  weft_tensor** values;
  weft_output* fetches;
  weft_tensor** results;
} signature_run;

static weft_status* prepare(weft_model* model, const char* signature,
                            int64_t batch, signature_run* r) {
  r->num_inputs = weft_model_signature_size(model, signature, 0);
  r->num_outputs = weft_model_signature_size(model, signature, 1);
  size_t ni = (size_t)r->num_inputs + 1, no = (size_t)r->num_outputs + 1;
  r->feeds = calloc(ni, sizeof *r->feeds);
  r->values = calloc(ni, sizeof *r->values);
  r->fetches = calloc(no, sizeof *r->fetches);
  r->results = calloc(no, sizeof *r->results);
  if (!r->feeds || !r->values || !r->fetches || !r->results)
    return weft_status_create(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  weft_status* st = NULL;
  for (int32_t i = 0; st == NULL && i < r->num_inputs; ++i) {
    const char* key = NULL;
    st = weft_model_signature_entry(model, signature, 0, i, &key,
                                    &r->feeds[i]);
    if (st == NULL) st = zeros_for(key, r->feeds[i], batch, &r->values[i]);
  }
  for (int32_t i = 0; st == NULL && i < r->num_outputs; ++i) {
    const char* key = NULL;
    st = weft_model_signature_entry(model, signature, 1, i, &key,
                                    &r->fetches[i]);
  }
  return st;
}

static void release(signature_run* r) {
  for (int32_t i = 0; r->values && i < r->num_inputs; ++i)
    weft_tensor_destroy(r->values[i]);
  for (int32_t i = 0; r->results && i < r->num_outputs; ++i)
    weft_tensor_destroy(r->results[i]);
  free(r->feeds);
  free(r->values);
  free(r->fetches);
  free(r->results);
}

static int place_model(place_args* a) {
  weft_run_metadata* md = weft_run_metadata_create();
  if (md == NULL) {
    fprintf(stderr, "weft place: out of memory\n");
    return 1;
  }
  weft_model* model = NULL;
  signature_run r;
  memset(&r, 0, sizeof r);
  weft_status* st = model_open_load(&a->model, &a->options, &model);
  const char* signature = NULL;
  if (st == NULL) {
    signature = model_open_signature(&a->model, "place", model);
    if (signature == NULL) {
      weft_model_destroy(model);
      weft_run_metadata_destroy(md);
      return 1;
    }
    st = prepare(model, signature, a->batch, &r);
  }
  if (st == NULL) {
    st = weft_session_run_with_metadata(
        weft_model_session(model), r.feeds, r.values, r.num_inputs,
        r.fetches, r.num_outputs, NULL, 0, r.results, md);
  }
  char what[1024] = "";
  if (st == NULL)
    snprintf(what, sizeof what,
             "%s (%s), signature '%s', unknown dimensions %lld",
             a->model.path, model_open_format(&a->model), signature,
             (long long)a->batch);
  int rc = report(st, md, a, what);
  release(&r);
  weft_model_destroy(model);
  weft_run_metadata_destroy(md);
  return rc;
}

int weft_command_place(int argc, char** argv) {
  place_args a;
  if (!parse_args(argc, argv, &a)) return 2;
  if (a.model.path != NULL) return place_model(&a);
  weft_graph* g = NULL;
  weft_session* s = NULL;
  weft_tensor* xt = NULL;
  weft_tensor* out = NULL;
  weft_run_metadata* md = weft_run_metadata_create();
  weft_output x, probs, logits, labels, loss;
  weft_node *step = NULL, *init = NULL;
  weft_tensor* lt = NULL;
  int64_t xd[2] = {a.batch, a.inputs}, ld[1] = {a.batch};
  weft_status* st = md ? weft_graph_create(&g)
                       : weft_status_create(WEFT_RESOURCE_EXHAUSTED,
                                            "out of memory");
  if (!st) st = build(g, &a, &x, &probs, &logits);
  if (!st && a.train)
    st = add_training(g, &a, logits, &labels, &loss, &step, &init);
  if (!st) st = weft_session_create(g, &a.options, &s);
  if (!st) st = weft_tensor_create(WEFT_FLOAT32, xd, 2, &xt);
  if (!st && a.train) st = weft_tensor_create(WEFT_INT32, ld, 1, &lt);
  if (!st) {
    memset(weft_tensor_data(xt), 0, weft_tensor_byte_size(xt));
    if (!a.train) {
      st = weft_session_run_with_metadata(s, &x, &xt, 1, &probs, 1, NULL, 0,
                                          &out, md);
    } else {
      memset(weft_tensor_data(lt), 0, weft_tensor_byte_size(lt));
      weft_output feeds[2] = {x, labels};
      weft_tensor* values[2] = {xt, lt};
      st = weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL);
      if (!st)
        st = weft_session_run_with_metadata(s, feeds, values, 2, &loss, 1,
                                            &step, 1, &out, md);
    }
  }
  char what[256] = "";
  if (!st)
    snprintf(what, sizeof what,
             "softmax(relu(x[%lld,%lld] w1 + b1) w2 + b2), hidden %lld%s",
             (long long)a.batch, (long long)a.inputs, (long long)a.hidden,
             a.train ? "; its training step (cross-entropy, Adam)" : "");
  int rc = report(st, md, &a, what);
  weft_tensor_destroy(out);
  weft_tensor_destroy(xt);
  weft_tensor_destroy(lt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  weft_run_metadata_destroy(md);
  return rc;
}
