/* weft-acme-gelu: a plugin of ops only (plugin interface 1.4).
 *
 * It defines one op, Acme>Gelu (y = x * Phi(x), Phi the standard normal
 * CDF), its gradient Acme>GeluGrad, kernels for both on the CPU devices,
 * and the gradient function that makes weft_gradients() and weft_minimize()
 * differentiate through Gelu.  It includes only weft/plugin.h and links
 * nothing of libweft; build it with `pkg-config weft` alone (see Makefile).
 *
 * To make your own: rename the namespace (Acme), the plugin name, the ops;
 * keep the shape: schema strings, a shape function, kernels, a gradient
 * built through host->graph. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "weft/plugin.h"

#ifndef ACME_PLUGIN_NAME
#define ACME_PLUGIN_NAME "weft-acme-gelu"
#endif

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

static const weft_host_api* host;

static weft_status* fail(int32_t code, const char* message) {
  return host->status_create(code, message);
}

/* ---- Shape functions: every output has the shape of input 0. ---------- */

static weft_status* same_shape(void* arg, weft_shape_context* ctx) {
  (void)arg;
  const weft_shape_api* s = host->shape;
  int32_t rank = s->shape_input_rank(ctx, 0);
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) dims[i] = s->shape_input_dim(ctx, 0, i);
  /* GeluGrad's inputs (x, dy) must agree where both are known. */
  for (int32_t k = 1; k < s->shape_num_inputs(ctx); ++k) {
    int32_t r = s->shape_input_rank(ctx, k);
    if (r < 0 || rank < 0) continue;
    if (r != rank) return s->shape_error(ctx, "x and dy differ in rank");
    for (int32_t i = 0; i < rank; ++i) {
      int64_t d = s->shape_input_dim(ctx, k, i);
      if (d >= 0 && dims[i] >= 0 && d != dims[i])
        return s->shape_error(ctx, "x and dy differ in shape");
      if (dims[i] < 0) dims[i] = d;
    }
  }
  return s->shape_set_output(ctx, 0, dims, rank);
}

/* ---- Kernels ------------------------------------------------------------ */

/* Phi(x) and the density phi(x), in double for both dtypes. */
static const double kSqrtHalf = 0.70710678118654752440;
static const double kInvSqrt2Pi = 0.39894228040143267794;
static double cdf(double x) { return 0.5 * erfc(-x * kSqrtHalf); }
static double pdf(double x) { return kInvSqrt2Pi * exp(-0.5 * x * x); }

static double gelu(double x, double dy) { (void)dy; return x * cdf(x); }
static double gelu_grad(double x, double dy) {
  return dy * (cdf(x) + x * pdf(x));
}

typedef double (*pointwise_fn)(double x, double dy);

/* Reads inputs (x[, dy]), allocates output 0 like x, applies `f`.  The
 * CPU device's memory is host memory: a handle plus offset is an address. */
static weft_status* run_pointwise(weft_kernel_context* ctx, pointwise_fn f) {
  weft_kernel_tensor in[2], out;
  int32_t n = host->kernel_num_inputs(ctx);
  for (int32_t i = 0; i < n; ++i) {
    in[i].struct_size = sizeof in[i];
    weft_status* st = host->kernel_input(ctx, i, &in[i]);
    if (st) return st;
  }
  if (n == 2 && in[1].element_count != in[0].element_count)
    return fail(WEFT_INVALID_ARGUMENT, "Acme>GeluGrad: x and dy differ");
  out.struct_size = sizeof out;
  weft_status* st = host->kernel_allocate_output(ctx, 0, in[0].dtype,
                                                 in[0].dims, in[0].rank, &out);
  if (st) return st;
  const char* x = (const char*)in[0].data + in[0].offset;
  const char* dy = n == 2 ? (const char*)in[1].data + in[1].offset : NULL;
  char* y = (char*)out.data + out.offset;
  for (int64_t i = 0; i < in[0].element_count; ++i) {
    if (in[0].dtype == WEFT_FLOAT32)
      ((float*)y)[i] = (float)f(((const float*)x)[i],
                                dy ? ((const float*)dy)[i] : 0);
    else
      ((double*)y)[i] = f(((const double*)x)[i],
                          dy ? ((const double*)dy)[i] : 0);
  }
  return NULL;
}

static weft_status* gelu_kernel(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  return run_pointwise(ctx, gelu);
}

static weft_status* gelu_grad_kernel(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  return run_pointwise(ctx, gelu_grad);
}

/* ---- The gradient: dx = GeluGrad(x, dy), built with the graph table. --- */

static weft_status* gelu_gradient(void* arg, weft_gradient_context* ctx) {
  (void)arg;
  const weft_graph_api* g = host->graph;
  weft_output dy = g->gradient_output_grad(ctx, 0);
  if (dy.node == NULL || !g->gradient_input_wanted(ctx, 0)) return NULL;
  weft_node* node = g->gradient_node(ctx);
  char name[512];
  snprintf(name, sizeof name, "%s/gelu_grad", g->node_name(node));
  weft_op_builder* b = g->op_begin(g->gradient_graph(ctx), "Acme>GeluGrad",
                                   name);
  g->op_add_input(b, g->node_input(node, 0));
  g->op_add_input(b, dy);
  weft_node* dx = NULL;
  weft_status* st = g->op_finish(b, &dx);
  if (st) return st;
  return g->gradient_set_input_grad(ctx, 0, (weft_output){dx, 0});
}

/* ---- Registration --------------------------------------------------------- */

static weft_status* define_op(weft_kernel_registrar* r, const char* name,
                              const char* summary, const char* const* inputs,
                              int32_t num_inputs, weft_gradient_fn gradient,
                              weft_kernel_compute_fn compute) {
  static const char* const outputs[] = {"y: T"};
  static const char* const attrs[] = {"T: {float32, float64}"};
  weft_op_def op;
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.name = name;
  op.summary = summary;
  op.inputs = inputs;
  op.num_inputs = num_inputs;
  op.outputs = outputs;
  op.num_outputs = 1;
  op.attrs = attrs;
  op.num_attrs = 1;
  op.shape_fn = same_shape;
  op.gradient = gradient;
  weft_status* st = host->register_op(r, &op);
  if (st) return st;

  static const int32_t dtypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  weft_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = name;
  k.dtype_attr = "T";
  k.dtypes = dtypes;
  k.num_dtypes = 2;
  k.compute = compute;
  k.device_type = "CPU";  /* an ops-only plugin names the device type */
  return host->register_kernel(r, &k);
}

static const weft_plugin_api plugin_table = {
    .struct_size = sizeof(weft_plugin_api),
    .name = ACME_PLUGIN_NAME,
    .version = "1.0.0",
    .device_type = NULL,  /* ops only: no devices of its own */
};

weft_status* weft_plugin_entry(weft_plugin_init_args* args) {
  const uint32_t wanted = WEFT_VERSION_PACK(1, 4);
  if (args == NULL ||
      args->struct_size < offsetof(weft_plugin_init_args, plugin) +
                              sizeof(args->plugin))
    return NULL; /* cannot even answer: the host refuses a NULL table */
  args->chosen_version = wanted;
  host = args->host;
  if (args->host_max_version < wanted ||
      WEFT_VERSION_MAJOR_OF(args->host_min_version) > 1 ||
      host->struct_size < offsetof(weft_host_api, shape) + sizeof host->shape)
    return host->status_create(WEFT_FAILED_PRECONDITION,
                               ACME_PLUGIN_NAME " defines ops: it needs a "
                               "host speaking plugin interface 1.4");
  static const char* const gelu_in[] = {"x: T"};
  static const char* const grad_in[] = {"x: T", "dy: T"};
  weft_status* st = define_op(
      args->registrar, "Acme>Gelu",
      "x * Phi(x), Phi the standard normal CDF (exact, with erfc)", gelu_in,
      1, gelu_gradient, gelu_kernel);
  if (st == NULL)
    st = define_op(args->registrar, "Acme>GeluGrad",
                   "dy * (Phi(x) + x * phi(x)), the gradient of Acme>Gelu",
                   grad_in, 2, NULL, gelu_grad_kernel);
  if (st) return st;
  args->plugin = &plugin_table;
  return NULL;
}
