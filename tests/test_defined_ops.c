/* Ops defined outside the runtime (weft/ops.h "Defining ops"; plugin
 * interface 1.4): a program defines Test>Swish with a C kernel and a
 * gradient, and the SDK's op template (sdk/custom_op, a plugin of ops only)
 * defines Acme>Gelu.  Both are checked against values computed here, their
 * gradients against central differences, and both train through
 * weft_minimize.  Then the refusals: schemas that do not parse, names that
 * could shadow the runtime's, conflicting definitions (two plugins, or a
 * program redefining its op), kernels for unknown ops, shape functions and
 * gradient functions that fail. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "grad_check.h"
#include "test_support.h"
#include "weft/plugin.h"

/* ---- Test>Swish: y = x * sigmoid(beta * x), beta an attribute. --------- */

static double sigmoid(double z) { return 1 / (1 + exp(-z)); }
static double swish_ref(double x, double beta) { return x * sigmoid(beta * x); }
static double swish_grad_ref(double x, double beta) {
  double s = sigmoid(beta * x);
  return s + beta * x * s * (1 - s);
}

/* Reads input i as doubles into `v` (at most 64 elements). */
static weft_status* read_input(weft_kernel_context* ctx, int32_t i,
                               weft_kernel_tensor* t) {
  t->struct_size = sizeof *t;
  return weft_kernel_host()->kernel_input(ctx, i, t);
}

static double element(const weft_kernel_tensor* t, int64_t i) {
  const char* p = (const char*)t->data + t->offset;
  return t->dtype == WEFT_FLOAT32 ? ((const float*)p)[i]
                                  : ((const double*)p)[i];
}

static void set_element(weft_kernel_tensor* t, int64_t i, double v) {
  char* p = (char*)t->data + t->offset;
  if (t->dtype == WEFT_FLOAT32) ((float*)p)[i] = (float)v;
  else ((double*)p)[i] = v;
}

/* Swish (one input) or SwishGrad (x, dy): dx = dy * swish'(x). */
static weft_status* swish_kernel(void* arg, weft_kernel_context* ctx) {
  const weft_host_api* h = weft_kernel_host();
  const int grad = arg != NULL;
  weft_kernel_tensor x, dy, y;
  weft_status* st = read_input(ctx, 0, &x);
  if (st == NULL && grad) st = read_input(ctx, 1, &dy);
  if (st) return st;
  double beta = 0;
  st = h->kernel_attr_float(ctx, "beta", &beta);
  if (st) return st;
  y.struct_size = sizeof y;
  st = h->kernel_allocate_output(ctx, 0, x.dtype, x.dims, x.rank, &y);
  if (st) return st;
  for (int64_t i = 0; i < x.element_count; ++i)
    set_element(&y, i,
                grad ? element(&dy, i) * swish_grad_ref(element(&x, i), beta)
                     : swish_ref(element(&x, i), beta));
  return NULL;
}

static weft_status* like_input0(void* arg, weft_shape_context* ctx) {
  (void)arg;
  int32_t rank = weft_shape_input_rank(ctx, 0);
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) dims[i] = weft_shape_input_dim(ctx, 0, i);
  weft_attr_value beta;
  memset(&beta, 0, sizeof beta);
  beta.struct_size = sizeof beta;
  weft_status* st = weft_shape_attr(ctx, "beta", &beta);
  if (st) return st;
  if (beta.type != WEFT_ATTR_FLOAT || !(beta.f > 0))
    return weft_shape_error(ctx, "beta must be a positive float");
  return weft_shape_set_output(ctx, 0, dims, rank);
}

static weft_status* swish_gradient(void* arg, weft_gradient_context* ctx) {
  (void)arg;
  weft_output dy = weft_gradient_output_grad(ctx, 0);
  if (dy.node == NULL) return NULL;
  weft_node* node = weft_gradient_node(ctx);
  char name[256];
  snprintf(name, sizeof name, "%s/swish_grad", weft_node_name(node));
  weft_op_builder* b =
      weft_op_begin(weft_gradient_graph(ctx), "Test>SwishGrad", name);
  weft_op_add_input(b, weft_node_input(node, 0));
  weft_op_add_input(b, dy);
  /* The node's own beta (its default filled when the node was built). */
  weft_attr_value beta;
  memset(&beta, 0, sizeof beta);
  beta.struct_size = sizeof beta;
  weft_status* read = weft_node_attr(node, "beta", &beta);
  if (read) {
    weft_op_abandon(b);
    return read;
  }
  weft_op_set_attr_float(b, "beta", beta.f);
  weft_node* dx = NULL;
  weft_status* st = weft_op_finish(b, &dx);
  if (st) return st;
  return weft_gradient_set_input_grad(ctx, 0, (weft_output){dx, 0});
}

static const char* const kSwishIn[] = {"x: T"};
static const char* const kSwishGradIn[] = {"x: T", "dy: T"};
static const char* const kOut[] = {"y: T"};
static const char* const kSwishAttrs[] = {"T: {float32, float64}",
                                          "beta: float = 1.5"};

static weft_op_def swish_def(const char* name, const char* const* inputs,
                             int32_t num_inputs, weft_gradient_fn gradient) {
  weft_op_def d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = name;
  d.summary = "x * sigmoid(beta * x)";
  d.inputs = inputs;
  d.num_inputs = num_inputs;
  d.outputs = kOut;
  d.num_outputs = 1;
  d.attrs = kSwishAttrs;
  d.num_attrs = 2;
  d.shape_fn = like_input0;
  d.gradient = gradient;
  return d;
}

static void register_swish(void) {
  weft_op_def swish = swish_def("Test>Swish", kSwishIn, 1, swish_gradient);
  weft_op_def grad = swish_def("Test>SwishGrad", kSwishGradIn, 2, NULL);
  WT_OK(weft_op_register(&swish));
  WT_OK(weft_op_register(&grad));
  static const int32_t dtypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  static int grad_tag;
  weft_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = "Test>Swish";
  k.dtype_attr = "T";
  k.dtypes = dtypes;
  k.num_dtypes = 2;
  k.compute = swish_kernel;
  WT_OK(weft_kernel_register("CPU", &k));
  k.op = "Test>SwishGrad";
  k.kernel_arg = &grad_tag;
  WT_OK(weft_kernel_register("CPU", &k));
}

static weft_output apply_op(weft_graph* g, const char* op, const char* name,
                            weft_output x) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, x);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  return (weft_output){n, 0};
}

static int32_t op_index(const char* name) {
  for (int32_t i = 0; i < weft_op_count(); ++i) {
    weft_op_description d = {.struct_size = sizeof d};
    WT_OK(weft_op_describe(i, &d));
    if (strcmp(d.name, name) == 0) return i;
  }
  return -1;
}

Test(defined_ops, program_op_runs_its_kernel_and_says_where_it_came_from) {
  register_swish();
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(2, 3), 2);
  weft_output y = apply_op(g, "Test>Swish", "swish", x);
  /* The shape function ran: the output's static shape is the input's. */
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -2;
  WT_OK(weft_output_shape(y, dims, WEFT_MAX_RANK, &rank));
  cr_expect_eq(rank, 2);
  cr_expect(dims[0] == 2 && dims[1] == 3);
  weft_session* s = wt_session_new(g, "CPU");
  const float in[6] = {-3, -1, -0.25f, 0, 0.5f, 2};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(2, 3), 2, in);
  weft_tensor* out = wt_run1(s, &x, &t, 1, y);
  double ref[6];
  for (int i = 0; i < 6; ++i) ref[i] = swish_ref(in[i], 1.5);
  wt_expect_f32(out, ref, 6, 1e-7, 1e-6);
  weft_tensor_destroy(out);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);

  int32_t index = op_index("Test>Swish");
  cr_assert_geq(index, 0, "weft_op_describe does not list Test>Swish");
  weft_op_description d = {.struct_size = sizeof d};
  WT_OK(weft_op_describe(index, &d));
  cr_expect_str_eq(d.origin, "program");
  cr_expect_str_eq(d.inputs, "x: T");
  cr_expect_str_eq(d.outputs, "y: T");
  cr_expect(strstr(d.attributes, "beta: float = 1.5") != NULL, "%s",
            d.attributes);
  WT_OK(weft_op_describe(op_index("MatMul"), &d));
  cr_expect_str_eq(d.origin, "runtime");
  cr_expect_eq(weft_op_gradient_status("Test>Swish"), 1);
  cr_expect_eq(weft_op_gradient_status("Test>SwishGrad"), -1);
}

Test(defined_ops, schema_dtypes_and_shape_function_refuse_bad_nodes) {
  register_swish();
  weft_graph* g = wt_graph_new();
  weft_output xi = wt_placeholder(g, "xi", WEFT_INT32, WT_DIMS(2), 1);
  weft_op_builder* b = weft_op_begin(g, "Test>Swish", "int_swish");
  weft_op_add_input(b, xi);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
         "T = int32 is not one of {float32, float64}");
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_DIMS(2), 1);
  b = weft_op_begin(g, "Test>Swish", "neg_beta");
  weft_op_add_input(b, x);
  weft_op_set_attr_float(b, "beta", -1);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
         "node 'neg_beta' (Test>Swish): beta must be a positive float");
  b = weft_op_begin(g, "Test>Swish", "int_beta");
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "beta", 2);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
         "attribute 'beta' must be a float");
  /* SwishGrad's two inputs share T. */
  weft_output f = wt_placeholder(g, "f", WEFT_FLOAT32, WT_DIMS(2), 1);
  b = weft_op_begin(g, "Test>SwishGrad", "mixed");
  weft_op_add_input(b, x);
  weft_op_add_input(b, f);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
         "input 1 (dy) has dtype float32 but T is float64");
  weft_graph_destroy(g);
}

static weft_output swish_of(weft_graph* g, const weft_output* xs, int32_t n,
                            void* arg) {
  (void)n;
  return apply_op(g, (const char*)arg, "f", xs[0]);
}

/* Swish with beta 0.7 set on the node: the gradient must read it. */
static weft_output swish07_of(weft_graph* g, const weft_output* xs, int32_t n,
                              void* arg) {
  (void)n;
  (void)arg;
  weft_op_builder* b = weft_op_begin(g, "Test>Swish", "f07");
  weft_op_add_input(b, xs[0]);
  weft_op_set_attr_float(b, "beta", 0.7);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

Test(defined_ops, program_op_gradient_matches_central_differences) {
  register_swish();
  const double v[7] = {-4, -1.5, -0.3, 0, 0.2, 1, 3.5};
  gc_input in = {WEFT_FLOAT64, WT_DIMS(7), 1, v, 0};
  gc_check_f64("Test>Swish", swish_of, "Test>Swish", &in, 1, 0);
  gc_check_f64("Test>Swish beta 0.7", swish07_of, NULL, &in, 1, 0);
  /* weft_node_attr's refusals. */
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(2), 1);
  weft_attr_value v2;
  memset(&v2, 0, sizeof v2);
  v2.struct_size = sizeof v2;
  WT_EXPECT_ERROR(weft_node_attr(x.node, "beta", &v2), WEFT_NOT_FOUND,
                  "node 'x' (Placeholder) has no attribute 'beta'");
  WT_OK(weft_node_attr(x.node, "dtype", &v2));
  cr_expect_eq(v2.type, WEFT_ATTR_DTYPE);
  cr_expect_eq(v2.i, WEFT_FLOAT32);
  WT_EXPECT_ERROR(weft_node_attr(NULL, "dtype", &v2), WEFT_INVALID_ARGUMENT,
                  "NULL node");
  weft_graph_destroy(g);
}

/* w <- w - lr * d/dw sum((f(w * x) - t)^2), computed here in double. */
static void train_step_ref(double (*f)(double), double (*df)(double),
                           double* w, const float* x, const float* t, int n,
                           double lr) {
  double grad[8] = {0};
  for (int i = 0; i < n; ++i) {
    double z = w[i] * x[i];
    grad[i] = 2 * (f(z) - t[i]) * df(z) * x[i];
  }
  for (int i = 0; i < n; ++i) w[i] -= lr * grad[i];
}

static double swish15(double z) { return swish_ref(z, 1.5); }
static double dswish15(double z) { return swish_grad_ref(z, 1.5); }
static double gelu_ref(double z) { return z * 0.5 * erfc(-z / sqrt(2)); }
static double dgelu_ref(double z) {
  return 0.5 * erfc(-z / sqrt(2)) + z * exp(-0.5 * z * z) * 0.39894228040143267794;
}

/* Trains w (4 elements, from 0.5) so that op(w * x) meets t, first one step
 * compared with train_step_ref, then until the loss is small. */
static void train_through(const char* op, double (*f)(double),
                          double (*df)(double)) {
  weft_graph* g = wt_graph_new();
  const float x[4] = {1, -1, 0.5f, 2};
  const float wt[4] = {1.2f, 0.3f, -0.4f, 0.7f};  /* the weights to find */
  float t[4];
  for (int i = 0; i < 4; ++i) t[i] = (float)f(wt[i] * x[i]);
  const float w0[4] = {0.5f, 0.5f, 0.5f, 0.5f};
  weft_output var = {NULL, 0};
  weft_node* var_init = NULL;
  WT_OK(weft_graph_variable(g, "w", wt_const_f32(g, "w0", WT_DIMS(4), 1, w0),
                            &var, &var_init));
  weft_output wx = wt_apply2(g, "Mul", "wx", var,
                             wt_const_f32(g, "x", WT_DIMS(4), 1, x));
  weft_output y = apply_op(g, op, "act", wx);
  weft_output d = wt_apply2(g, "Sub", "d", y,
                            wt_const_f32(g, "t", WT_DIMS(4), 1, t));
  weft_output loss = wt_apply1(g, "Sum", "loss", wt_apply1(g, "Square",
                                                           "sq", d));
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  o.learning_rate = 0.05;
  weft_node* train = NULL;
  WT_OK(weft_minimize(g, loss, &o, "train", &train));
  weft_node* init = NULL;
  WT_OK(weft_graph_initialize_all(g, "init", &init));
  weft_session* s = wt_session_new(g, "CPU");
  wt_run_targets(s, &init, 1);
  wt_run_targets(s, &train, 1);
  double w[4] = {0.5, 0.5, 0.5, 0.5};
  train_step_ref(f, df, w, x, t, 4, 0.05);
  weft_tensor* got = wt_run1(s, NULL, NULL, 0, var);
  wt_expect_f32(got, w, 4, 1e-6, 1e-5);
  weft_tensor_destroy(got);
  for (int step = 0; step < 2000; ++step) wt_run_targets(s, &train, 1);
  weft_tensor* l = wt_run1(s, NULL, NULL, 0, loss);
  float final_loss = *(const float*)weft_tensor_data(l);
  cr_expect_lt(final_loss, 1e-4, "%s: loss %g after 2001 steps", op,
               final_loss);
  weft_tensor_destroy(l);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(defined_ops, program_op_trains_through_weft_minimize) {
  register_swish();
  train_through("Test>Swish", swish15, dswish15);
}

/* ---- The SDK's op template: a plugin of ops only. ------------------------ */

Test(defined_ops, plugin_op_runs_on_cpu_and_names_its_plugin) {
  WT_OK(weft_plugin_load(WEFT_TEST_ACME_PLUGIN));
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_DIMS(5), 1);
  weft_output y = apply_op(g, "Acme>Gelu", "gelu", x);
  weft_session* s = wt_session_new(g, "CPU");
  const double in[5] = {-3, -0.7, 0, 0.4, 2.5};
  weft_tensor* t = wt_tensor(WEFT_FLOAT64, WT_DIMS(5), 1, in);
  weft_tensor* out = wt_run1(s, &x, &t, 1, y);
  const double* v = weft_tensor_data(out);
  for (int i = 0; i < 5; ++i)
    cr_expect(fabs(v[i] - gelu_ref(in[i])) <= 1e-15 + 1e-14 * fabs(v[i]),
              "gelu(%g) = %.17g, want %.17g", in[i], v[i], gelu_ref(in[i]));
  weft_tensor_destroy(out);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);

  weft_op_description d = {.struct_size = sizeof d};
  WT_OK(weft_op_describe(op_index("Acme>Gelu"), &d));
  cr_expect_str_eq(d.origin, "plugin weft-acme-gelu");
  cr_expect_eq(weft_kernel_count("Acme>Gelu"), 1);
  weft_kernel_description k = {.struct_size = sizeof k};
  WT_OK(weft_kernel_describe("Acme>Gelu", 0, &k));
  cr_expect_str_eq(k.device_type, "CPU");
  cr_expect_str_eq(k.plugin, "weft-acme-gelu");
}

Test(defined_ops, plugin_op_gradient_matches_central_differences) {
  WT_OK(weft_plugin_load(WEFT_TEST_ACME_PLUGIN));
  const double v[6] = {-3, -1, -0.1, 0.3, 1.1, 2.7};
  gc_input in = {WEFT_FLOAT64, WT_DIMS(2, 3), 2, v, 0};
  gc_check_f64("Acme>Gelu", swish_of, "Acme>Gelu", &in, 1, 0);
}

Test(defined_ops, plugin_op_trains_through_weft_minimize) {
  WT_OK(weft_plugin_load(WEFT_TEST_ACME_PLUGIN));
  train_through("Acme>Gelu", gelu_ref, dgelu_ref);
}

Test(defined_ops, a_second_plugin_defining_the_same_op_is_refused) {
  WT_OK(weft_plugin_load(WEFT_TEST_ACME_PLUGIN));
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_ACME_RIVAL), WEFT_ALREADY_EXISTS,
         "op 'Acme>Gelu' defined by plugin weft-acme-gelu-rival is already "
         "defined by plugin weft-acme-gelu");
  /* The refused plugin left nothing behind: one kernel, the first's. */
  cr_expect_eq(weft_kernel_count("Acme>Gelu"), 1);
  /* Nor may the program take a plugin's name. */
  weft_op_def d = swish_def("Acme>Gelu", kSwishIn, 1, NULL);
  WT_EXPECT_ERROR(weft_op_register(&d), WEFT_ALREADY_EXISTS,
         "op 'Acme>Gelu' defined by program is already defined by plugin "
         "weft-acme-gelu");
}

/* ---- Refusals ------------------------------------------------------------- */

static weft_op_def plain_def(const char* name) {
  return swish_def(name, kSwishIn, 1, NULL);
}

Test(defined_ops, bad_schemas_are_refused_naming_the_part) {
  struct {
    const char* name;
    const char* input;
    const char* attr;
    const char* why;
  } cases[] = {
      {"Swish", "x: T", "T: {float32}", "is not NAMESPACE>NAME"},
      {"Test>", "x: T", "T: {float32}", "is not NAMESPACE>NAME"},
      {">Swish", "x: T", "T: {float32}", "is not NAMESPACE>NAME"},
      {"Test>Sw ish", "x: T", "T: {float32}", "is not NAMESPACE>NAME"},
      {"Test>A>B", "x: T", "T: {float32}", "is not NAMESPACE>NAME"},
      {"Test>Bad", "x: U", "T: {float32}",
       "input \"x: U\": 'U' is neither a dtype name nor a dtype attribute"},
      {"Test>Bad", "x T", "T: {float32}", "input \"x T\": not NAME: TYPE"},
      {"Test>Bad", "1x: T", "T: {float32}", "the name must be a letter"},
      {"Test>Bad", "x: T", "T: complex", "unknown kind 'complex'"},
      {"Test>Bad", "x: T", "T: {float32, quad}", "'quad' is not a dtype name"},
      {"Test>Bad", "x: T", "T: {float32", "the dtype set lacks '}'"},
      {"Test>Bad", "x: T", "T: {float32} = int32",
       "the default is not in the dtype set"},
      {"Test>Bad", "x: T", "T: {float32} = float32",
       "types an input, so it takes the input's dtype and cannot have a "
       "default"},
      {"Test>Bad", "x: float32", "k: int = 1.5", "the default '1.5' is not a int"},
      {"Test>Bad", "x: float32", "k: float = abc", "is not a float"},
      {"Test>Bad", "x: float32", "k: bool = yes", "is not a bool"},
      {"Test>Bad", "x: float32", "k: list(int) = [1,,2]", "is not a list(int)"},
      {"Test>Bad", "x: float32", "k: shape = [2, -3]", "is not a shape"},
      {"Test>Bad", "x: float32", "k: string = \"a\"b\"", "is not a string"},
      {"Test>Bad", "x: float32", "k: int = 99999999999999999999",
       "is not a int"},
      {"Test>Bad", "x: float32", "k: tensor", "unknown kind 'tensor'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const char* inputs[] = {cases[i].input};
    const char* attrs[] = {cases[i].attr};
    weft_op_def d = plain_def(cases[i].name);
    d.inputs = inputs;
    d.outputs = inputs;
    d.attrs = attrs;
    d.num_attrs = 1;
    d.shape_fn = NULL;
    weft_status* st = weft_op_register(&d);
    cr_expect_neq(st, NULL, "case %zu (%s / %s / %s) was accepted", i,
                  cases[i].name, cases[i].input, cases[i].attr);
    if (st == NULL) continue;
    cr_expect_eq(weft_status_code(st), WEFT_INVALID_ARGUMENT, "case %zu", i);
    cr_expect(strstr(weft_status_message(st), cases[i].why) != NULL,
              "case %zu: '%s' lacks '%s'", i, weft_status_message(st),
              cases[i].why);
    weft_status_destroy(st);
  }
  /* Structure: no outputs, duplicates, counts, a truncated struct, NULL. */
  weft_op_def d = plain_def("Test>Bad");
  d.num_outputs = 0;
  WT_EXPECT_ERROR(weft_op_register(&d), WEFT_INVALID_ARGUMENT, "has no outputs");
  d = plain_def("Test>Bad");
  const char* twice[] = {"x: T", "x: T"};
  d.inputs = twice;
  d.num_inputs = 2;
  WT_EXPECT_ERROR(weft_op_register(&d), WEFT_INVALID_ARGUMENT,
         "input 'x' is declared twice");
  d = plain_def("Test>Bad");
  const char* attrs_twice[] = {"T: {float32}", "T: dtype"};
  d.attrs = attrs_twice;
  WT_EXPECT_ERROR(weft_op_register(&d), WEFT_INVALID_ARGUMENT,
         "attribute 'T' is declared twice");
  d = plain_def("Test>Bad");
  d.num_inputs = 33;
  WT_EXPECT_ERROR(weft_op_register(&d), WEFT_INVALID_ARGUMENT, "33 inputs");
  d = plain_def("Test>Bad");
  d.inputs = NULL;
  WT_EXPECT_ERROR(weft_op_register(&d), WEFT_INVALID_ARGUMENT, "and a list when any");
  d = plain_def("Test>Bad");
  d.struct_size = offsetof(weft_op_def, gradient);
  WT_EXPECT_ERROR(weft_op_register(&d), WEFT_INVALID_ARGUMENT, "op def is truncated");
  WT_EXPECT_ERROR(weft_op_register(NULL), WEFT_INVALID_ARGUMENT, "op def is NULL");
  /* None of them became an op. */
  cr_expect_eq(op_index("Test>Bad"), -1);
  cr_expect_eq(op_index("Swish"), -1);
}

Test(defined_ops, redefining_is_idempotent_but_a_different_schema_conflicts) {
  register_swish();
  int32_t count = weft_op_count();
  weft_op_def same = swish_def("Test>Swish", kSwishIn, 1, swish_gradient);
  WT_OK(weft_op_register(&same));
  cr_expect_eq(weft_op_count(), count);
  weft_op_def other = swish_def("Test>Swish", kSwishGradIn, 2,
                                swish_gradient);
  WT_EXPECT_ERROR(weft_op_register(&other), WEFT_ALREADY_EXISTS,
         "op 'Test>Swish' is already defined by program with another schema");
  weft_op_def no_grad = swish_def("Test>Swish", kSwishIn, 1, NULL);
  WT_EXPECT_ERROR(weft_op_register(&no_grad), WEFT_ALREADY_EXISTS,
         "with another schema or functions");
  cr_expect_eq(weft_op_count(), count);
}

static weft_status* never_called(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  (void)ctx;
  return NULL;
}

Test(defined_ops, kernels_for_unknown_ops_and_malformed_defs_are_refused) {
  weft_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = "Test>Nowhere";
  k.compute = never_called;
  WT_EXPECT_ERROR(weft_kernel_register("CPU", &k), WEFT_NOT_FOUND,
         "unknown op 'Test>Nowhere' (register the op first)");
  k.op = "Relu";
  k.compute = NULL;
  WT_EXPECT_ERROR(weft_kernel_register("CPU", &k), WEFT_INVALID_ARGUMENT,
         "lacks an op name");
  k.compute = never_called;
  WT_EXPECT_ERROR(weft_kernel_register(NULL, &k), WEFT_INVALID_ARGUMENT,
         "no device type");
  WT_EXPECT_ERROR(weft_kernel_register("CPU", NULL), WEFT_INVALID_ARGUMENT,
         "missing or truncated");
  k.device_type = "OPENCL";
  WT_EXPECT_ERROR(weft_kernel_register("CPU", &k), WEFT_INVALID_ARGUMENT,
         "the def names device type OPENCL, the call CPU");
}

static weft_status* failing_gradient(void* arg, weft_gradient_context* ctx) {
  (void)arg;
  (void)ctx;
  return weft_status_create(WEFT_UNIMPLEMENTED, "planted gradient failure");
}

Test(defined_ops, failing_and_missing_gradients_fail_weft_gradients) {
  register_swish();
  weft_op_def bad = swish_def("Test>BadGrad", kSwishIn, 1, failing_gradient);
  WT_OK(weft_op_register(&bad));
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(3), 1);
  weft_output y = apply_op(g, "Test>BadGrad", "bad", x);
  weft_output dx = {NULL, 0};
  weft_status* st = weft_gradients(g, &y, 1, &x, 1, NULL, &dx);
  cr_assert_neq(st, NULL);
  cr_expect(strstr(weft_status_message(st), "planted gradient failure"),
            "%s", weft_status_message(st));
  weft_status_destroy(st);
  /* SwishGrad has no gradient: second order through it is an error. */
  weft_output z = apply_op(g, "Test>Swish", "z", x);
  weft_output dz = {NULL, 0};
  WT_OK(weft_gradients(g, &z, 1, &x, 1, NULL, &dz));
  WT_EXPECT_ERROR(weft_gradients(g, &dz, 1, &x, 1, NULL, &dx), WEFT_UNIMPLEMENTED,
         "no gradient is defined for op Test>SwishGrad");
  weft_graph_destroy(g);
}

static weft_status* bad_output_index(void* arg, weft_shape_context* ctx) {
  (void)arg;
  const int64_t dims[1] = {3};
  return weft_shape_set_output(ctx, 5, dims, 1);
}

Test(defined_ops, a_failing_shape_function_refuses_the_node) {
  weft_op_def d = plain_def("Test>BadShape");
  d.shape_fn = bad_output_index;
  WT_OK(weft_op_register(&d));
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(3), 1);
  weft_op_builder* b = weft_op_begin(g, "Test>BadShape", "bs");
  weft_op_add_input(b, x);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_OUT_OF_RANGE,
         "node 'bs' (Test>BadShape) has 1 outputs; no output 5");
  cr_expect_eq(weft_graph_node_by_name(g, "bs"), NULL);
  weft_graph_destroy(g);
}

Test(defined_ops, a_node_without_a_kernel_is_refused_at_plan_time) {
  weft_op_def d = plain_def("Test>NoKernel");
  WT_OK(weft_op_register(&d));
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(3), 1);
  weft_output y = apply_op(g, "Test>NoKernel", "nk", x);
  weft_session* s = wt_session_new(g, "CPU");
  const float v[3] = {1, 2, 3};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(3), 1, v);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(s, &x, &t, 1, &y, 1, NULL, 0, &out),
         WEFT_INVALID_ARGUMENT, "Test>NoKernel");
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- Host-language kernels (weft_kernel_register_host). ----------------- */

/* y = x + offset, offset an int attribute; `arg` non-NULL: sets no output;
 * an offset of 13 fails. */
static weft_status* host_add(void* arg, const weft_kernel_call* call,
                             weft_tensor* const* inputs, int32_t num_inputs,
                             weft_tensor** outputs, int32_t num_outputs) {
  cr_assert_eq(num_inputs, 1);
  cr_assert_eq(num_outputs, 1);
  if (arg != NULL) return NULL;
  weft_attr_value offset;
  memset(&offset, 0, sizeof offset);
  offset.struct_size = sizeof offset;
  weft_status* st = weft_kernel_attr(call, "offset", &offset);
  if (st) return st;
  if (offset.i == 13)
    return weft_status_create(WEFT_OUT_OF_RANGE, "planted: unlucky offset");
  const weft_tensor* x = inputs[0];
  weft_tensor* y = NULL;
  st = weft_tensor_create(weft_tensor_dtype(x), weft_tensor_dims(x),
                          weft_tensor_rank(x), &y);
  if (st) return st;
  const float* xv = weft_tensor_data(x);
  float* yv = weft_tensor_data(y);
  for (int64_t i = 0; i < weft_tensor_element_count(x); ++i)
    yv[i] = xv[i] + (float)offset.i;
  outputs[0] = y;
  return NULL;
}

static const char* const kHostIn[] = {"x: float32"};
static const char* const kHostOut[] = {"y: float32"};
static const char* const kHostAttrs[] = {"offset: int = 2"};

static void register_host_op(const char* name, void* arg) {
  weft_op_def d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = name;
  d.inputs = kHostIn;
  d.num_inputs = 1;
  d.outputs = kHostOut;
  d.num_outputs = 1;
  d.attrs = kHostAttrs;
  d.num_attrs = 1;
  WT_OK(weft_op_register(&d));
  WT_OK(weft_kernel_register_host(name, host_add, arg));
}

static weft_status* run_host_op(const char* op, int64_t offset, float* out3) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(3), 1);
  weft_op_builder* b = weft_op_begin(g, op, "h");
  weft_op_add_input(b, x);
  if (offset != 2) weft_op_set_attr_int(b, "offset", offset);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  weft_session* s = wt_session_new(g, "CPU");
  const float v[3] = {1, -2, 0.5f};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(3), 1, v);
  weft_output y = {n, 0};
  weft_tensor* out = NULL;
  weft_status* st = weft_session_run(s, &x, &t, 1, &y, 1, NULL, 0, &out);
  if (st == NULL) {
    memcpy(out3, weft_tensor_data(out), 3 * sizeof(float));
    weft_tensor_destroy(out);
  }
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return st;
}

Test(defined_ops, host_kernels_get_tensors_and_attributes) {
  register_host_op("Test>HostAdd", NULL);
  float y[3];
  WT_OK(run_host_op("Test>HostAdd", 2, y));
  cr_expect(y[0] == 3 && y[1] == 0 && y[2] == 2.5f, "%g %g %g", y[0], y[1],
            y[2]);
  WT_OK(run_host_op("Test>HostAdd", -5, y));
  cr_expect(y[0] == -4 && y[1] == -7 && y[2] == -4.5f);
  WT_EXPECT_ERROR(run_host_op("Test>HostAdd", 13, y), WEFT_OUT_OF_RANGE,
                  "planted: unlucky offset");
  static int no_output;
  register_host_op("Test>HostNothing", &no_output);
  WT_EXPECT_ERROR(run_host_op("Test>HostNothing", 2, y), WEFT_INTERNAL,
                  "the kernel set no output 0");
  WT_EXPECT_ERROR(weft_kernel_register_host("Test>HostAdd", NULL, NULL),
                  WEFT_INVALID_ARGUMENT, "fn is NULL");
  WT_EXPECT_ERROR(weft_kernel_register_host("Test>Absent", host_add, NULL),
                  WEFT_NOT_FOUND, "unknown op 'Test>Absent'");
}

/* ---- Plugins breaking the rules of interface 1.4 are refused whole. ------ */

Test(defined_ops, plugins_breaking_the_op_rules_are_refused_whole) {
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_BAD_OPS_SCHEMA),
                  WEFT_INVALID_ARGUMENT,
                  "'U' is neither a dtype name nor a dtype attribute");
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_BAD_OPS_HIJACK),
                  WEFT_INVALID_ARGUMENT,
                  "its kernel for Relu on CPU serves a device type not its "
                  "own: a plugin may do so only for ops it defines");
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_BAD_OPS_NO_TYPE),
                  WEFT_INVALID_ARGUMENT,
                  "defines ops only, so each kernel must name a device type");
  /* None of them left an op or a kernel behind. */
  cr_expect_eq(op_index("BadOps>Op"), -1);
  for (int32_t i = 0; i < weft_kernel_count("Relu"); ++i) {
    weft_kernel_description k = {.struct_size = sizeof k};
    WT_OK(weft_kernel_describe("Relu", i, &k));
    cr_expect_str_neq(k.plugin, "weft-test-bad-ops");
  }
}
