/* Model files (abi/weft/model.h): bundles saved and loaded through the
 * public API.  A loaded model computes what the saved one computed, bit for
 * bit, trains on from where it was, keeps every attribute, device
 * constraint, trainable flag and control-flow table its gradients need; and
 * every damaged, foreign, future or misplaced file gets its own error. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"
#include "weft/weft.h"

/* A fresh directory for one test's files. */
static char* temp_dir(void) {
  char* dir = strdup("/tmp/weft-model-XXXXXX");
  cr_assert(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
  return dir;
}

static char* path_in(const char* dir, const char* name) {
  char* p = NULL;
  cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

static void remove_tree(const char* dir) {
  char* cmd = NULL;
  cr_assert(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
  cr_assert_eq(system(cmd), 0);
  free(cmd);
}

static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  cr_assert(f != NULL, "open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc((size_t)n + 1);
  cr_assert_eq(fread(data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return data;
}

static void write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  cr_assert(f != NULL, "open %s: %s", path, strerror(errno));
  cr_assert_eq(fwrite(data, 1, size, f), size);
  cr_assert_eq(fclose(f), 0);
}

static weft_session* one_thread_session(weft_graph* g) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = 1;
  o.intra_op_threads = 1;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &o, &s));
  return s;
}

static weft_model* load(const char* path) {
  weft_session_options so;
  weft_session_options_init(&so);
  so.devices = "CPU";
  so.inter_op_threads = 1;
  so.intra_op_threads = 1;
  weft_model_load_options lo;
  weft_model_load_options_init(&lo);
  lo.session_options = &so;
  weft_model* m = NULL;
  WT_OK(weft_model_load(path, &lo, &m));
  return m;
}

/* ---- A trained classifier ------------------------------------------------ */

typedef struct classifier {
  weft_graph* graph;
  weft_session* session;
  weft_output x, labels, probs, loss;
  weft_node* train;
  weft_model* model;
} classifier;

enum { kBatch = 8, kIn = 5, kOut = 3 };

static weft_tensor* batch_x(uint64_t seed) {
  wt_rng rng = {seed};
  float x[kBatch * kIn];
  wt_rng_fill(&rng, x, kBatch * kIn, -1, 1);
  return wt_tensor(WEFT_FLOAT32, WT_SHAPE(kBatch, kIn), x);
}

static weft_tensor* batch_labels(uint64_t seed) {
  float y[kBatch * kOut] = {0};
  for (int i = 0; i < kBatch; ++i) y[i * kOut + (int)((seed + i) % kOut)] = 1;
  return wt_tensor(WEFT_FLOAT32, WT_SHAPE(kBatch, kOut), y);
}

/* x -> dense -> relu -> dense -> softmax, a non-trainable scale, Adam. */
static void build_classifier(classifier* c) {
  memset(c, 0, sizeof *c);
  c->graph = wt_graph_new();
  weft_graph* g = c->graph;
  c->x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(-1, kIn));
  c->labels = wt_placeholder(g, "labels", WEFT_FLOAT32, WT_SHAPE(-1, kOut));
  wt_rng rng = {7};
  float w1[kIn * 6], w2[6 * kOut];
  wt_rng_fill(&rng, w1, kIn * 6, -0.5f, 0.5f);
  wt_rng_fill(&rng, w2, 6 * kOut, -0.5f, 0.5f);
  weft_output w1v, w2v, bv, scalev;
  WT_OK(weft_graph_variable(
      g, "w1", wt_const_f32(g, "w1_init", WT_SHAPE(kIn, 6), w1), &w1v, NULL));
  WT_OK(weft_graph_variable(
      g, "w2", wt_const_f32(g, "w2_init", WT_SHAPE(6, kOut), w2), &w2v,
      NULL));
  float zeros[kOut] = {0.1f, -0.1f, 0.05f};
  WT_OK(weft_graph_variable(
      g, "b", wt_const_f32(g, "b_init", WT_SHAPE(kOut), zeros), &bv, NULL));
  float two = 2.0f;
  WT_OK(weft_graph_variable(g, "scale",
                            wt_const_f32(g, "scale_init", NULL, 0, &two),
                            &scalev, NULL));
  WT_OK(weft_variable_set_trainable(g, scalev.node, 0));
  weft_output h = wt_apply1(g, "Relu", "h",
                            wt_apply2(g, "MatMul", "mm1", c->x, w1v));
  weft_output logits = wt_apply2(
      g, "Add", "logits",
      wt_apply2(g, "Mul", "scaled",
                wt_apply2(g, "MatMul", "mm2", h, w2v), scalev),
      bv);
  c->probs = wt_apply1(g, "Softmax", "probs", logits);
  weft_output diff = wt_apply2(g, "Sub", "diff", c->probs, c->labels);
  c->loss = wt_apply2(g, "Mul", "sq", diff, diff);
  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, WEFT_OPTIMIZER_ADAM);
  opt.learning_rate = 0.05;
  WT_OK(weft_minimize(g, c->loss, &opt, "train", &c->train));
  c->session = one_thread_session(g);
  weft_node* init = NULL;
  WT_OK(weft_graph_initialize_all(g, NULL, &init));
  wt_run_targets(c->session, &init, 1);
  for (uint64_t step = 0; step < 3; ++step) {
    weft_output feeds[2] = {c->x, c->labels};
    weft_tensor* values[2] = {batch_x(step), batch_labels(step)};
    WT_OK(weft_session_run(c->session, feeds, values, 2, NULL, 0, &c->train,
                           1, NULL));
    weft_tensor_destroy(values[0]);
    weft_tensor_destroy(values[1]);
  }
  const char* in_keys[] = {"x"};
  const char* out_keys[] = {"probs"};
  weft_signature_def sig = {sizeof(weft_signature_def), "serving_default",
                            1, in_keys, &c->x, 1, out_keys, &c->probs};
  WT_OK(weft_model_create(g, c->session, &sig, 1, &c->model));
}

static void free_classifier(classifier* c) {
  weft_model_destroy(c->model);
  weft_session_destroy(c->session);
  weft_graph_destroy(c->graph);
}

static weft_tensor* predict(weft_model* m, weft_tensor* x) {
  const char* in_keys[] = {"x"};
  const weft_tensor* ins[] = {x};
  weft_tensor* out = NULL;
  WT_OK(weft_model_run(m, NULL, in_keys, ins, 1, NULL, &out, 1));
  return out;
}

Test(model, bundle_predicts_the_same_bits_and_trains_on) {
  classifier c;
  build_classifier(&c);
  char* dir = temp_dir();
  char* bundle = path_in(dir, "classifier");
  WT_OK(weft_model_save(c.model, bundle));

  weft_model* m = load(bundle);
  cr_assert_eq(weft_model_num_signatures(m), 1);
  cr_assert_str_eq(weft_model_signature_name(m, 0), "serving_default");
  cr_assert_eq(weft_model_signature_size(m, NULL, 0), 1);
  cr_assert_eq(weft_model_signature_size(m, NULL, 1), 1);
  const char* key = NULL;
  weft_output out;
  WT_OK(weft_model_signature_entry(m, NULL, 1, 0, &key, &out));
  cr_assert_str_eq(key, "probs");
  cr_assert_str_eq(weft_node_name(out.node), "probs");

  weft_tensor* x = batch_x(99);
  weft_tensor* want = predict(c.model, x);
  weft_tensor* got = predict(m, x);
  wt_expect_same_bits(want, got, "values differ");
  weft_tensor_destroy(want);
  weft_tensor_destroy(got);

  /* The same trainable variables, the non-trainable scale left out. */
  weft_graph* lg = weft_model_graph(m);
  weft_node* vars_a[16];
  weft_node* vars_b[16];
  int32_t na = 0, nb = 0;
  WT_OK(weft_graph_trainable_variables(c.graph, vars_a, 16, &na));
  WT_OK(weft_graph_trainable_variables(lg, vars_b, 16, &nb));
  cr_assert_eq(na, 3);
  cr_assert_eq(na, nb);
  for (int32_t i = 0; i < na; ++i)
    cr_assert_str_eq(weft_node_name(vars_a[i]), weft_node_name(vars_b[i]));

  /* One more Adam step in each: the same variables afterwards, so the
   * optimizer's slots (moments, step count) came along. */
  weft_node* train_b = weft_graph_node_by_name(lg, "train");
  cr_assert(train_b != NULL);
  weft_output feeds_a[2] = {c.x, c.labels};
  weft_output feeds_b[2] = {
      {weft_graph_node_by_name(lg, "x"), 0},
      {weft_graph_node_by_name(lg, "labels"), 0}};
  weft_tensor* values[2] = {batch_x(5), batch_labels(5)};
  WT_OK(weft_session_run(c.session, feeds_a, values, 2, NULL, 0, &c.train, 1,
                         NULL));
  WT_OK(weft_session_run(weft_model_session(m), feeds_b, values, 2, NULL, 0,
                         &train_b, 1, NULL));
  const char* names[] = {"w1", "w2", "b", "scale"};
  for (int i = 0; i < 4; ++i) {
    weft_output va = {weft_graph_node_by_name(c.graph, names[i]), 0};
    weft_output vb = {weft_graph_node_by_name(lg, names[i]), 0};
    weft_tensor* a = wt_run1(c.session, NULL, NULL, 0, va);
    weft_tensor* b = wt_run1(weft_model_session(m), NULL, NULL, 0, vb);
    wt_expect_same_bits(a, b, "values differ");
    weft_tensor_destroy(a);
    weft_tensor_destroy(b);
  }
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  weft_tensor_destroy(x);
  weft_model_destroy(m);
  free_classifier(&c);
  remove_tree(dir);
  free(bundle);
  free(dir);
}

Test(model, saving_over_a_bundle_replaces_it) {
  classifier c;
  build_classifier(&c);
  char* dir = temp_dir();
  char* bundle = path_in(dir, "m");
  WT_OK(weft_model_save(c.model, bundle));
  /* Train on, save again: the new values are what loads. */
  weft_output feeds[2] = {c.x, c.labels};
  weft_tensor* values[2] = {batch_x(11), batch_labels(11)};
  WT_OK(weft_session_run(c.session, feeds, values, 2, NULL, 0, &c.train, 1,
                         NULL));
  WT_OK(weft_model_save(c.model, bundle));
  weft_model* m = load(bundle);
  weft_tensor* want = predict(c.model, values[0]);
  weft_tensor* got = predict(m, values[0]);
  wt_expect_same_bits(want, got, "values differ");
  /* Nothing but the bundle is left beside it. */
  DIR* d = opendir(dir);
  int entries = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') {
      ++entries;
      cr_assert_str_eq(e->d_name, "m");
    }
  closedir(d);
  cr_assert_eq(entries, 1);
  weft_tensor_destroy(want);
  weft_tensor_destroy(got);
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  weft_model_destroy(m);
  free_classifier(&c);
  remove_tree(dir);
  free(bundle);
  free(dir);
}

/* ---- Attributes of every kind, devices, control inputs ------------------- */

static weft_status* attrs_shape(void* arg, weft_shape_context* ctx) {
  (void)arg;
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = weft_shape_input_rank(ctx, 0);
  for (int32_t i = 0; i < rank; ++i) dims[i] = weft_shape_input_dim(ctx, 0, i);
  return weft_shape_set_output(ctx, 0, dims, rank);
}

static void register_attrs_op(void) {
  static const char* inputs[] = {"x: T"};
  static const char* outputs[] = {"y: T"};
  static const char* attrs[] = {
      "T: {float32, float64}", "i: int = 3",  "f: float",
      "b: bool",               "s: string",   "li: list(int)",
      "lf: list(float)",       "sh: shape",   "d: dtype"};
  weft_op_def def = {0};
  def.struct_size = sizeof def;
  def.name = "ModelTest>Attrs";
  def.inputs = inputs;
  def.num_inputs = 1;
  def.outputs = outputs;
  def.num_outputs = 1;
  def.attrs = attrs;
  def.num_attrs = 9;
  def.shape_fn = attrs_shape;
  WT_OK(weft_op_register(&def));
}

static void expect_same_attr(weft_node* a, weft_node* b, const char* name) {
  weft_attr_value va = {.struct_size = sizeof va};
  weft_attr_value vb = {.struct_size = sizeof vb};
  WT_OK(weft_node_attr(a, name, &va));
  WT_OK(weft_node_attr(b, name, &vb));
  cr_assert_eq(va.type, vb.type, "attr %s", name);
  cr_assert_eq(va.count, vb.count, "attr %s", name);
  cr_assert_eq(va.i, vb.i, "attr %s", name);
  cr_assert(memcmp(&va.f, &vb.f, sizeof va.f) == 0, "attr %s", name);
  if (va.s != NULL || vb.s != NULL) cr_assert_str_eq(va.s, vb.s);
  for (int32_t k = 0; k < va.count; ++k) {
    if (va.ints != NULL) cr_assert_eq(va.ints[k], vb.ints[k], "attr %s", name);
    if (va.floats != NULL)
      cr_assert(memcmp(&va.floats[k], &vb.floats[k], sizeof(double)) == 0);
  }
}

Test(model, attributes_devices_and_control_inputs_survive) {
  register_attrs_op();
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_SHAPE(2, -1));
  weft_op_builder* b = weft_op_begin(g, "ModelTest>Attrs", "attrs");
  weft_op_add_input(b, x);
  weft_op_set_attr_float(b, "f", 0.1);  /* not exact in binary */
  weft_op_set_attr_bool(b, "b", 1);
  weft_op_set_attr_string(b, "s", "quote \" and \xc3\xa9");
  int64_t li[] = {-1, 0, INT64_MAX};
  weft_op_set_attr_int_list(b, "li", li, 3);
  double lf[] = {-0.0, 1e-300, 3.25};
  weft_op_set_attr_float_list(b, "lf", lf, 3);
  int64_t sh[] = {-1, 7};
  weft_op_set_attr_shape(b, "sh", sh, 2);
  weft_op_set_attr_dtype(b, "d", WEFT_INT16);
  weft_op_set_device(b, "/device:CPU:0");
  weft_node* attrs = NULL;
  WT_OK(weft_op_finish(b, &attrs));
  /* An empty list and an unknown-rank shape are values too. */
  weft_op_builder* b2 = weft_op_begin(g, "ModelTest>Attrs", "attrs2");
  weft_op_add_input(b2, x);
  weft_op_set_attr_int(b2, "i", -5);
  weft_op_set_attr_float(b2, "f", -1e308);
  weft_op_set_attr_bool(b2, "b", 0);
  weft_op_set_attr_string(b2, "s", "");
  weft_op_set_attr_int_list(b2, "li", NULL, 0);
  weft_op_set_attr_float_list(b2, "lf", NULL, 0);
  weft_op_set_attr_shape(b2, "sh", NULL, -1);
  weft_op_set_attr_dtype(b2, "d", WEFT_BOOL);
  weft_op_add_control_input(b2, attrs);
  weft_node* attrs2 = NULL;
  WT_OK(weft_op_finish(b2, &attrs2));
  /* A constant of another dtype, with its bytes. */
  int16_t codes[] = {-3, 0, 32767, -32768, 5, 6};
  weft_output k = wt_const(
      g, "codes", wt_tensor(WEFT_INT16, WT_SHAPE(2, 3), codes));

  const char* in_keys[] = {"x"};
  const char* out_keys[] = {"a", "a2", "codes"};
  weft_output outs[] = {{attrs, 0}, {attrs2, 0}, k};
  weft_signature_def sig = {sizeof sig, "all", 1, in_keys, &x, 3, out_keys,
                            outs};
  weft_model* model = NULL;
  WT_OK(weft_model_create(g, NULL, &sig, 1, &model));
  char* dir = temp_dir();
  char* bundle = path_in(dir, "attrs");
  WT_OK(weft_model_save(model, bundle));
  weft_model* m = load(bundle);
  weft_graph* lg = weft_model_graph(m);
  cr_assert_eq(weft_graph_node_count(lg), weft_graph_node_count(g));
  for (int32_t i = 0; i < weft_graph_node_count(g); ++i) {
    weft_node* na = weft_graph_node_at(g, i);
    weft_node* nb = weft_graph_node_at(lg, i);
    cr_assert_str_eq(weft_node_name(na), weft_node_name(nb));
    cr_assert_str_eq(weft_node_op_type(na), weft_node_op_type(nb));
    cr_assert_str_eq(weft_node_device(na), weft_node_device(nb));
    cr_assert_eq(weft_node_num_inputs(na), weft_node_num_inputs(nb));
    cr_assert_eq(weft_node_num_control_inputs(na),
                 weft_node_num_control_inputs(nb));
    for (int32_t k2 = 0; k2 < weft_node_num_inputs(na); ++k2) {
      weft_output ia = weft_node_input(na, k2), ib = weft_node_input(nb, k2);
      cr_assert_str_eq(weft_node_name(ia.node), weft_node_name(ib.node));
      cr_assert_eq(ia.index, ib.index);
    }
  }
  weft_node* la = weft_graph_node_by_name(lg, "attrs");
  weft_node* la2 = weft_graph_node_by_name(lg, "attrs2");
  const char* names[] = {"T", "i", "f", "b", "s", "li", "lf", "sh", "d"};
  for (int i = 0; i < 9; ++i) {
    expect_same_attr(attrs, la, names[i]);
    expect_same_attr(attrs2, la2, names[i]);
  }
  weft_attr_value v = {.struct_size = sizeof v};
  WT_OK(weft_node_attr(la, "s", &v));
  cr_assert_str_eq(v.s, "quote \" and \xc3\xa9");
  WT_OK(weft_node_attr(la2, "sh", &v));
  cr_assert_eq(v.i, -1);
  cr_assert_str_eq(weft_node_device(la), "/device:CPU:0");
  cr_assert_eq(weft_node_num_control_inputs(la2), 1);
  /* The shape function ran again on load: [2, ?]. */
  int64_t dims[2];
  int32_t rank = 0;
  WT_OK(weft_output_shape((weft_output){la, 0}, dims, 2, &rank));
  cr_assert_eq(rank, 2);
  cr_assert_eq(dims[0], 2);
  cr_assert_eq(dims[1], -1);
  /* The constant's bytes. */
  const char* kkey[] = {"codes"};
  weft_tensor* got = NULL;
  WT_OK(weft_model_run(m, "all", NULL, NULL, 0, kkey, &got, 1));
  cr_assert(memcmp(weft_tensor_data(got), codes, sizeof codes) == 0);
  weft_tensor_destroy(got);
  weft_model_destroy(m);
  weft_model_destroy(model);
  weft_graph_destroy(g);
  remove_tree(dir);
  free(bundle);
  free(dir);
}

/* ---- Control flow: gradients built after loading ------------------------- */

static weft_status* loop_cond(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  weft_output limit = wt_const(g, NULL, wt_scalar_f32(50.0f));
  *pred = wt_apply2(g, "Less", NULL, v[0], limit);
  return NULL;
}

static weft_status* loop_body(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* next) {
  (void)n;
  const weft_output* w = user;
  next[0] = wt_apply2(g, "Mul", NULL, v[0], *w);
  return NULL;
}

static weft_status* then_fn(weft_graph* g, void* user, weft_output* out,
                            int32_t n) {
  (void)n;
  const weft_output* w = user;
  out[0] = wt_apply2(g, "Mul", NULL, *w, *w);
  return NULL;
}

static weft_status* else_fn(weft_graph* g, void* user, weft_output* out,
                            int32_t n) {
  (void)n;
  const weft_output* w = user;
  out[0] = wt_apply1(g, "Neg", NULL, *w);
  return NULL;
}

/* y = (w^k for the first power >= 50, starting from x) + cond(p, w*w, -w) */
static weft_output loop_and_cond(weft_graph* g, weft_output* w_out,
                                 weft_output* p_out) {
  weft_output x = wt_const(g, "x0", wt_scalar_f32(1.5f));
  weft_output w = wt_placeholder(g, "w", WEFT_FLOAT32, NULL, 0);
  weft_output p = wt_placeholder(g, "p", WEFT_BOOL, NULL, 0);
  weft_output looped;
  WT_OK(weft_while_loop(g, loop_cond, loop_body, &w, &x, 1, NULL, &looped));
  weft_output branch;
  WT_OK(weft_cond(g, "choose", p, then_fn, else_fn, &w, 1, &branch));
  *w_out = w;
  *p_out = p;
  return wt_apply2(g, "Add", "y", looped, branch);
}

static float grad_at(weft_graph* g, weft_session* s, weft_output y,
                     weft_output w, weft_output p, float wv, int pv) {
  weft_output grad;
  WT_OK(weft_gradients(g, &y, 1, &w, 1, NULL, &grad));
  weft_output feeds[2] = {w, p};
  uint8_t pb = (uint8_t)pv;
  weft_tensor* values[2] = {wt_scalar_f32(wv),
                            wt_tensor(WEFT_BOOL, NULL, 0, &pb)};
  weft_tensor* out = wt_run1(s, feeds, values, 2, grad);
  float r = *(float*)weft_tensor_data(out);
  weft_tensor_destroy(out);
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  return r;
}

Test(model, loop_and_cond_gradients_built_after_loading) {
  weft_graph* g = wt_graph_new();
  weft_output w, p;
  weft_output y = loop_and_cond(g, &w, &p);
  /* One gradient built before saving: its stack pops keep the loop's
   * pushes alive through edges the file must carry. */
  weft_output dy_dw;
  WT_OK(weft_gradients(g, &y, 1, &w, 1, NULL, &dy_dw));
  const char* in_keys[] = {"w", "p"};
  weft_output ins[] = {w, p};
  const char* out_keys[] = {"y", "dy_dw"};
  weft_output outs[] = {y, dy_dw};
  weft_signature_def sig = {sizeof sig, "serving_default", 2, in_keys, ins,
                            2, out_keys, outs};
  weft_model* model = NULL;
  WT_OK(weft_model_create(g, NULL, &sig, 1, &model));
  char* dir = temp_dir();
  char* bundle = path_in(dir, "loop");
  WT_OK(weft_model_save(model, bundle));
  weft_model* m = load(bundle);
  weft_graph* lg = weft_model_graph(m);
  weft_output lw, lp, ly;
  WT_OK(weft_model_signature_entry(m, NULL, 0, 0, NULL, &lw));
  WT_OK(weft_model_signature_entry(m, NULL, 0, 1, NULL, &lp));
  WT_OK(weft_model_signature_entry(m, NULL, 1, 0, NULL, &ly));
  cr_assert_eq(weft_model_signature_size(m, NULL, 1), 2);
  weft_session* s = one_thread_session(g);
  for (int pv = 0; pv < 2; ++pv) {
    float want = grad_at(g, s, y, w, p, 1.7f, pv);
    float got = grad_at(lg, weft_model_session(m), ly, lw, lp, 1.7f, pv);
    /* d/dw of 1.5 w^7 (1.5 * 1.7^k reaches 50 first at k = 7) plus 2w
     * or -1. */
    float w6 = 1.7f * 1.7f * 1.7f * 1.7f * 1.7f * 1.7f;
    float expect = 1.5f * 7 * w6 + (pv ? 2 * 1.7f : -1);
    cr_assert_float_eq(want, expect, 1e-3, "%g vs %g", want, expect);
    cr_assert_eq(want, got, "pv %d: %g vs %g", pv, want, got);
    /* The gradient saved with the model. */
    uint8_t pb = (uint8_t)pv;
    weft_tensor* wv = wt_scalar_f32(1.7f);
    weft_tensor* pt = wt_tensor(WEFT_BOOL, NULL, 0, &pb);
    const char* ik[] = {"w", "p"};
    const weft_tensor* iv[] = {wv, pt};
    const char* ok[] = {"dy_dw"};
    weft_tensor* saved = NULL;
    WT_OK(weft_model_run(m, NULL, ik, iv, 2, ok, &saved, 1));
    cr_assert_eq(*(float*)weft_tensor_data(saved), want);
    weft_tensor_destroy(saved);
    weft_tensor_destroy(wv);
    weft_tensor_destroy(pt);
  }
  weft_session_destroy(s);
  weft_model_destroy(m);
  weft_model_destroy(model);
  weft_graph_destroy(g);
  remove_tree(dir);
  free(bundle);
  free(dir);
}

/* ---- Ops from plugins ---------------------------------------------------- */

Test(model, a_missing_plugin_op_names_the_plugin) {
  char* dir = temp_dir();
  char* bundle = path_in(dir, "gelu");
  /* Saved by a child that loaded the op's plugin; this process has not. */
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    weft_status* st = weft_plugin_load(WEFT_TEST_ACME_PLUGIN);
    weft_graph* g = NULL;
    if (st == NULL) st = weft_graph_create(&g);
    weft_output x = {0};
    if (st == NULL)
      st = weft_graph_placeholder(g, "x", WEFT_FLOAT32, NULL, -1, &x);
    weft_output y = {0};
    if (st == NULL) st = weft_graph_apply(g, "Acme>Gelu", "gelu", &x, 1, &y);
    weft_model* m = NULL;
    const char* ik[] = {"x"};
    const char* ok[] = {"y"};
    weft_signature_def sig = {sizeof sig, "serving_default", 1, ik, &x, 1,
                              ok, &y};
    if (st == NULL) st = weft_model_create(g, NULL, &sig, 1, &m);
    if (st == NULL) st = weft_model_save(m, bundle);
    if (st != NULL) fprintf(stderr, "child: %s\n", weft_status_message(st));
    _exit(st == NULL ? 0 : 1);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  weft_model* m = NULL;
  WT_EXPECT_ERROR(weft_model_load(bundle, NULL, &m), WEFT_NOT_FOUND,
                  "Acme>Gelu", "plugin weft-acme-gelu", "load that first");
  cr_assert_null(m);
  WT_OK(weft_plugin_load(WEFT_TEST_ACME_PLUGIN));
  weft_model* loaded = load(bundle);
  float xs[] = {-1, 0, 2};
  weft_tensor* x = wt_tensor(WEFT_FLOAT32, WT_SHAPE(3), xs);
  const char* ik[] = {"x"};
  const weft_tensor* ins[] = {x};
  weft_tensor* y = NULL;
  WT_OK(weft_model_run(loaded, NULL, ik, ins, 1, NULL, &y, 1));
  const float* yv = weft_tensor_data(y);
  cr_assert_float_eq(yv[1], 0.0f, 1e-6);
  cr_assert(yv[2] > 1.9f && yv[0] < 0 && yv[0] > -0.2f);
  weft_tensor_destroy(x);
  weft_tensor_destroy(y);
  weft_model_destroy(loaded);
  remove_tree(dir);
  free(bundle);
  free(dir);
}

/* ---- Damaged, future and foreign files ------------------------------------ */

/* Saves a small model and returns its bundle path. */
static char* small_bundle(const char* dir) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(-1));
  float two[] = {2, 3};
  weft_output y = wt_apply2(
      g, "Mul", "y", x, wt_const_f32(g, "k", WT_SHAPE(2), two));
  const char* ik[] = {"x"};
  const char* ok[] = {"y"};
  weft_signature_def sig = {sizeof sig, "serving_default", 1, ik, &x, 1, ok,
                            &y};
  weft_model* model = NULL;
  WT_OK(weft_model_create(g, NULL, &sig, 1, &model));
  char* bundle = path_in(dir, "small");
  WT_OK(weft_model_save(model, bundle));
  weft_model_destroy(model);
  weft_graph_destroy(g);
  return bundle;
}

Test(model, every_truncation_and_byte_flip_is_data_loss) {
  char* dir = temp_dir();
  char* bundle = small_bundle(dir);
  char* graph_file = path_in(bundle, "graph.weft");
  size_t size = 0;
  char* bytes = read_file(graph_file, &size);
  cr_assert(size > 40);
  char* damaged = path_in(dir, "damaged.weft");
  for (size_t n = 0; n < size; ++n) {
    write_file(damaged, bytes, n);
    weft_model* m = NULL;
    WT_EXPECT_ERROR(weft_model_load(damaged, NULL, &m), WEFT_DATA_LOSS,
                    "damaged.weft");
    cr_assert_null(m);
  }
  for (size_t i = 0; i < size; ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      bytes[i] ^= (char)(1 << bit);
      write_file(damaged, bytes, size);
      bytes[i] ^= (char)(1 << bit);
      weft_model* m = NULL;
      WT_EXPECT_ERROR(weft_model_load(damaged, NULL, &m), WEFT_DATA_LOSS,
                      "damaged.weft");
    }
  }
  /* Bytes after the end are damage too. */
  char* longer = malloc(size + 1);
  memcpy(longer, bytes, size);
  longer[size] = 0;
  write_file(damaged, longer, size + 1);
  weft_model* m = NULL;
  WT_EXPECT_ERROR(weft_model_load(damaged, NULL, &m), WEFT_DATA_LOSS,
                  "after its end");
  /* The undamaged file loads as a graph file alone. */
  write_file(damaged, bytes, size);
  m = load(damaged);
  weft_model_destroy(m);
  free(longer);
  free(bytes);
  free(damaged);
  free(graph_file);
  remove_tree(dir);
  free(bundle);
  free(dir);
}

/* CRC-32C, written out here so the test forges a file without the
 * library's own checksum. */
static uint32_t crc32c(const uint8_t* p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

Test(model, a_newer_version_is_unimplemented_naming_it) {
  cr_assert_eq(crc32c((const uint8_t*)"123456789", 9), 0xe3069283u);
  char* dir = temp_dir();
  char* bundle = small_bundle(dir);
  char* graph_file = path_in(bundle, "graph.weft");
  size_t size = 0;
  uint8_t* bytes = (uint8_t*)read_file(graph_file, &size);
  cr_assert(memcmp(bytes, "WEFTGRPH", 8) == 0);
  bytes[8] = 2;  /* version 2, little-endian */
  uint32_t crc = crc32c(bytes, 12);
  for (int i = 0; i < 4; ++i) bytes[12 + i] = (uint8_t)(crc >> (8 * i));
  write_file(graph_file, bytes, size);
  weft_model* m = NULL;
  WT_EXPECT_ERROR(weft_model_load(bundle, NULL, &m), WEFT_UNIMPLEMENTED,
                  "version 2", "newer Weft", "reads version 1");
  free(bytes);
  free(graph_file);
  remove_tree(dir);
  free(bundle);
  free(dir);
}

Test(model, paths_that_are_not_models) {
  char* dir = temp_dir();
  weft_model* m = NULL;
  char* missing = path_in(dir, "missing");
  WT_EXPECT_ERROR(weft_model_load(missing, NULL, &m), WEFT_NOT_FOUND,
                  "missing");
  /* A directory without graph.weft. */
  WT_EXPECT_ERROR(weft_model_load(dir, NULL, &m), WEFT_FAILED_PRECONDITION,
                  "not a model bundle");
  /* A FIFO: refused at once, never opened for a blocking read. */
  char* fifo = path_in(dir, "fifo.weft");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  WT_EXPECT_ERROR(weft_model_load(fifo, NULL, &m), WEFT_FAILED_PRECONDITION,
                  "not a regular file", "FIFO");
  /* Something else entirely. */
  char* text = path_in(dir, "notes.weft");
  write_file(text, "hello, this is not a graph", 26);
  WT_EXPECT_ERROR(weft_model_load(text, NULL, &m), WEFT_DATA_LOSS,
                  "not a Weft graph file");
  weft_model_load_options lo;
  weft_model_load_options_init(&lo);
  lo.format = "tflite";
  WT_EXPECT_ERROR(weft_model_load(text, &lo, &m), WEFT_INVALID_ARGUMENT,
                  "unknown model format 'tflite'");
  cr_assert_null(m);
  free(missing);
  free(fifo);
  free(text);
  remove_tree(dir);
  free(dir);
}

/* Whether the process maps a file whose path contains `name`. */
static bool maps_file(const char* name) {
  FILE* f = fopen("/proc/self/maps", "r");
  cr_assert(f != NULL);
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof line, f) != NULL)
    found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}

/* libonnx and the full libprotobuf (weft-onnx.so's) are loaded by the first
 * ONNX file, not before: training, saving and loading a bundle use
 * protobuf-lite alone (runtime/model/onnx_module.h). */
Test(model, onnx_libraries_load_with_the_first_onnx_file) {
  classifier c;
  build_classifier(&c);
  char* dir = temp_dir();
  char* bundle = path_in(dir, "classifier");
  WT_OK(weft_model_save(c.model, bundle));
  weft_model* loaded = load(bundle);
  cr_assert(maps_file("libprotobuf-lite.so"));
  cr_assert(!maps_file("libprotobuf.so"), "the full libprotobuf is loaded");
  cr_assert(!maps_file("libonnx"), "libonnx is loaded");
  cr_assert(!maps_file("weft-onnx.so"), "the ONNX module is loaded");
  char* onnx = path_in(dir, "classifier.onnx");
  WT_OK(weft_model_export_onnx(c.model, NULL, onnx));
  cr_assert(maps_file("weft-onnx.so"));
  cr_assert(maps_file("libonnx"));
  weft_model* from_onnx = load(onnx);
  weft_tensor* x = batch_x(11);
  weft_tensor* want = predict(c.model, x);
  weft_tensor* got = predict(from_onnx, x);
  cr_assert_eq(weft_tensor_element_count(got), kBatch * kOut);
  const float* w = weft_tensor_data(want);
  const float* g = weft_tensor_data(got);
  for (int i = 0; i < kBatch * kOut; ++i)
    cr_assert_float_eq(g[i], w[i], 1e-6, "probability %d: %g, not %g", i,
                       g[i], w[i]);
  weft_tensor_destroy(x);
  weft_tensor_destroy(want);
  weft_tensor_destroy(got);
  weft_model_destroy(from_onnx);
  weft_model_destroy(loaded);
  free_classifier(&c);
  remove_tree(dir);
  free(onnx);
  free(bundle);
  free(dir);
}

/* ONNX files go through the module weft-onnx.so (runtime/model/
 * onnx_module.h): without it, or with something else in its place, loading
 * one is UNAVAILABLE and says which module and why.  One case per process
 * (the module is looked for once). */
static void expect_onnx_unavailable(const char* module, const char* why) {
  char* dir = temp_dir();
  char* onnx = path_in(dir, "model.onnx");
  write_file(onnx, "\x08\x07", 2);
  cr_assert_eq(setenv("WEFT_ONNX_MODULE", module, 1), 0);
  weft_model* m = NULL;
  WT_EXPECT_ERROR(weft_model_load(onnx, NULL, &m), WEFT_UNAVAILABLE,
                  "model.onnx", "weft-onnx.so", why);
  cr_assert_null(m);
  /* The second time says the same (the failure is kept). */
  WT_EXPECT_ERROR(weft_model_load(onnx, NULL, &m), WEFT_UNAVAILABLE,
                  "weft-onnx.so", why);
  free(onnx);
  remove_tree(dir);
  free(dir);
}

Test(model, onnx_without_its_module_is_unavailable) {
  expect_onnx_unavailable("/nonexistent/weft-onnx.so", "looked for");
}

Test(model, onnx_with_a_broken_module_is_unavailable) {
  char* dir = temp_dir();
  char* fake = path_in(dir, "weft-onnx.so");
  write_file(fake, "not a shared object", 19);
  expect_onnx_unavailable(fake, "does not load");
  free(fake);
  remove_tree(dir);
  free(dir);
}

Test(model, saving_refuses_what_it_would_damage) {
  classifier c;
  build_classifier(&c);
  char* dir = temp_dir();
  /* A regular file at the path. */
  char* file = path_in(dir, "file");
  write_file(file, "keep", 4);
  WT_EXPECT_ERROR(weft_model_save(c.model, file), WEFT_FAILED_PRECONDITION,
                  "not a model bundle");
  /* A directory holding something else. */
  char* other = path_in(dir, "other");
  cr_assert_eq(mkdir(other, 0700), 0);
  char* inside = path_in(other, "precious.txt");
  write_file(inside, "keep", 4);
  WT_EXPECT_ERROR(weft_model_save(c.model, other), WEFT_FAILED_PRECONDITION,
                  "not empty");
  size_t n = 0;
  char* kept = read_file(inside, &n);
  cr_assert(n == 4 && memcmp(kept, "keep", 4) == 0);
  free(kept);
  kept = read_file(file, &n);
  cr_assert(n == 4 && memcmp(kept, "keep", 4) == 0);
  free(kept);
  /* An empty directory is fine. */
  char* empty = path_in(dir, "empty");
  cr_assert_eq(mkdir(empty, 0700), 0);
  WT_OK(weft_model_save(c.model, empty));
  weft_model_destroy(load(empty));
  /* A variable the session never initialized. */
  weft_output late;
  float one = 1;
  WT_OK(weft_graph_variable(c.graph, "late",
                            wt_const_f32(c.graph, "late_init", NULL, 0, &one),
                            &late, NULL));
  char* fresh = path_in(dir, "fresh");
  WT_EXPECT_ERROR(weft_model_save(c.model, fresh), WEFT_FAILED_PRECONDITION,
                  "late");
  struct stat st;
  cr_assert_neq(stat(fresh, &st), 0, "nothing is left at the path");
  free(fresh);
  free(empty);
  free(inside);
  free(other);
  free(file);
  free_classifier(&c);
  remove_tree(dir);
  free(dir);
}

Test(model, signatures_are_checked_where_made_and_where_run) {
  classifier c;
  build_classifier(&c);
  weft_model* m = NULL;
  const char* bad_key[] = {"x y"};
  weft_signature_def sig = {sizeof sig, "s", 1, bad_key, &c.x, 0, NULL, NULL};
  WT_EXPECT_ERROR(weft_model_create(c.graph, c.session, &sig, 1, &m),
                  WEFT_INVALID_ARGUMENT, "key", "x y");
  const char* twice[] = {"x", "x"};
  weft_output ins[] = {c.x, c.labels};
  weft_signature_def sig2 = {sizeof sig, "s", 2, twice, ins, 0, NULL, NULL};
  WT_EXPECT_ERROR(weft_model_create(c.graph, c.session, &sig2, 1, &m),
                  WEFT_INVALID_ARGUMENT, "'x' is given twice");
  weft_graph* other = wt_graph_new();
  weft_output foreign = wt_placeholder(other, "z", WEFT_FLOAT32, NULL, 0);
  const char* one[] = {"z"};
  weft_signature_def sig3 = {sizeof sig, "s", 1, one, &foreign, 0, NULL,
                             NULL};
  WT_EXPECT_ERROR(weft_model_create(c.graph, c.session, &sig3, 1, &m),
                  WEFT_INVALID_ARGUMENT, "not an output of a node");
  weft_graph_destroy(other);

  weft_tensor* x = batch_x(1);
  const weft_tensor* xs[] = {x, x};
  weft_tensor* out[2] = {NULL, NULL};
  const char* xk[] = {"x"};
  WT_EXPECT_ERROR(weft_model_run(c.model, "nope", xk, xs, 1, NULL, out, 1),
                  WEFT_NOT_FOUND, "no signature 'nope'", "serving_default");
  const char* wrong[] = {"images"};
  WT_EXPECT_ERROR(weft_model_run(c.model, NULL, wrong, xs, 1, NULL, out, 1),
                  WEFT_NOT_FOUND, "no input 'images'");
  const char* dup[] = {"x", "x"};
  WT_EXPECT_ERROR(weft_model_run(c.model, NULL, dup, xs, 2, NULL, out, 1),
                  WEFT_INVALID_ARGUMENT, "given twice");
  WT_EXPECT_ERROR(weft_model_run(c.model, NULL, xk, xs, 1, NULL, out, 2),
                  WEFT_INVALID_ARGUMENT, "has 1 outputs");
  const char* no_out[] = {"logits"};
  WT_EXPECT_ERROR(weft_model_run(c.model, NULL, xk, xs, 1, no_out, out, 1),
                  WEFT_NOT_FOUND, "no output 'logits'");
  /* The input missing: the session names the placeholder. */
  WT_EXPECT_ERROR(weft_model_run(c.model, NULL, NULL, NULL, 0, NULL, out, 1),
                  WEFT_INVALID_ARGUMENT, "x");
  cr_assert_null(out[0]);
  weft_tensor_destroy(x);
  free_classifier(&c);
}
