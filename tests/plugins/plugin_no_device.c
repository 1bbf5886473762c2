/* A well-formed v1 plugin for a device type with no hardware present, the
 * way a CUDA plugin behaves on a machine without a GPU: it loads, reports
 * zero devices and says why.  It also registers a kernel for an op no host
 * knows, which the host must ignore rather than refuse the plugin.
 *
 * Built a second time with WEFT_TEST_GRADIENT_PLUGIN (interface 1.1): then
 * it also gives the gradient of Square, built through host->graph, with
 * nodes named "<node>/plugin_grad..." so a test can see it was used. */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/plugin.h"

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

#define NO_DEVICE_REASON "no NULLDEV hardware: this test plugin never has any"

static const weft_host_api* host;

static weft_status* unavailable(void) {
  return host->status_create(WEFT_UNAVAILABLE, NO_DEVICE_REASON);
}

/* How many times the host asked for the devices, in the environment
 * variable WEFT_TEST_NULLDEV_COUNT_CALLS (the plugin exports no symbol but
 * its entry): a test reads it to see that the host asks only when a device
 * of this type is wanted. */
static int device_count_calls;

static weft_status* device_count(int32_t* out_count) {
  char calls[16];
  snprintf(calls, sizeof calls, "%d", ++device_count_calls);
  setenv("WEFT_TEST_NULLDEV_COUNT_CALLS", calls, 1);
  *out_count = 0;
  return unavailable();
}

static weft_status* device_open(int32_t index, weft_plugin_device** out) {
  (void)index;
  *out = NULL;
  return unavailable();
}

static void device_close(weft_plugin_device* device) { (void)device; }

static weft_status* device_properties(weft_plugin_device* device,
                                      weft_device_properties* out) {
  (void)device;
  (void)out;
  return unavailable();
}

static weft_status* memory_allocate(weft_plugin_device* device, uint64_t bytes,
                                    void** out_handle) {
  (void)device;
  (void)bytes;
  *out_handle = NULL;
  return unavailable();
}

static void memory_free(weft_plugin_device* device, void* handle) {
  (void)device;
  (void)handle;
}

static weft_status* copy_host_to_device(weft_plugin_device* device,
                                        weft_plugin_stream* stream,
                                        const void* host_src, void* dst,
                                        uint64_t dst_offset, uint64_t bytes) {
  (void)device, (void)stream, (void)host_src, (void)dst, (void)dst_offset,
      (void)bytes;
  return unavailable();
}

static weft_status* copy_device_to_host(weft_plugin_device* device,
                                        weft_plugin_stream* stream,
                                        const void* src, uint64_t src_offset,
                                        void* host_dst, uint64_t bytes) {
  (void)device, (void)stream, (void)src, (void)src_offset, (void)host_dst,
      (void)bytes;
  return unavailable();
}

static weft_status* copy_device_to_device(weft_plugin_device* device,
                                          weft_plugin_stream* stream,
                                          const void* src, uint64_t src_offset,
                                          void* dst, uint64_t dst_offset,
                                          uint64_t bytes) {
  (void)device, (void)stream, (void)src, (void)src_offset, (void)dst,
      (void)dst_offset, (void)bytes;
  return unavailable();
}

static weft_status* never_runs(void* kernel_arg, weft_kernel_context* ctx) {
  (void)kernel_arg;
  (void)ctx;
  return host->status_create(WEFT_INTERNAL,
                             "a NULLDEV kernel ran without a NULLDEV device");
}

#ifdef WEFT_TEST_GRADIENT_PLUGIN
#define PLUGIN_NAME "weft-test-gradient"
#define DEVICE_TYPE "GRADDEV"
#define CHOSEN_MINOR 1
#else
#define PLUGIN_NAME "weft-test-nodevice"
#define DEVICE_TYPE "NULLDEV"
#define CHOSEN_MINOR 0
#endif

#ifdef WEFT_TEST_GRADIENT_PLUGIN
/* d(x*x)/dx * dy = x*dy + x*dy, as the plugin's own nodes. */
static weft_status* square_gradient(void* arg, weft_gradient_context* ctx) {
  (void)arg;
  const weft_graph_api* g = host->graph;
  weft_graph* graph = g->gradient_graph(ctx);
  weft_node* node = g->gradient_node(ctx);
  weft_output dy = g->gradient_output_grad(ctx, 0);
  weft_output x = g->node_input(node, 0);
  char name[256];
  const char* suffixes[2] = {"/plugin_grad_product", "/plugin_grad_sum"};
  weft_output parts[2] = {x, dy};
  weft_node* made[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i) {
    snprintf(name, sizeof name, "%s%s", g->node_name(node), suffixes[i]);
    weft_op_builder* b = g->op_begin(graph, i == 0 ? "Mul" : "Add", name);
    if (i == 0) {
      g->op_add_input(b, parts[0]);
      g->op_add_input(b, parts[1]);
    } else {
      weft_output product = {made[0], 0};
      g->op_add_input(b, product);
      g->op_add_input(b, product);
    }
    weft_status* st = g->op_finish(b, &made[i]);
    if (st != NULL) return st;
  }
  return g->gradient_set_input_grad(ctx, 0, (weft_output){made[1], 0});
}
#endif

/* Streams are left NULL: the optional group is absent, which is legal. */
static const weft_plugin_api table = {
    .struct_size = sizeof(weft_plugin_api),
    .name = PLUGIN_NAME,
    .version = "0.0.1",
    .device_type = DEVICE_TYPE,
    .device_count = device_count,
    .device_open = device_open,
    .device_close = device_close,
    .device_properties = device_properties,
    .memory_allocate = memory_allocate,
    .memory_free = memory_free,
    .copy_host_to_device = copy_host_to_device,
    .copy_device_to_host = copy_device_to_host,
    .copy_device_to_device = copy_device_to_device,
};

weft_status* weft_plugin_entry(weft_plugin_init_args* args) {
  args->chosen_version = WEFT_VERSION_PACK(1, CHOSEN_MINOR);
  host = args->host;
  if (WEFT_VERSION_MAJOR_OF(args->host_min_version) > 1 ||
      WEFT_VERSION_MAJOR_OF(args->host_max_version) < 1) {
    return host->status_create(WEFT_FAILED_PRECONDITION,
                               "weft-test-nodevice speaks only 1.0");
  }

  static const int32_t float32_only[] = {WEFT_FLOAT32};
  weft_kernel_def relu = {
      .struct_size = sizeof(weft_kernel_def),
      .op = "Relu",
      .dtype_attr = "T",
      .dtypes = float32_only,
      .num_dtypes = 1,
      .priority = 0,
      .compute = never_runs,
      .kernel_arg = NULL,
  };
  /* Relu goes as a plugin built against interface 1.1 sends it: in a
   * buffer that ends before type_constraints, which the host must neither
   * need nor read (ASan builds catch a read past the end). */
  const size_t v1_1_size = offsetof(weft_kernel_def, type_constraints);
  void* relu_v1_1 = malloc(v1_1_size);
  if (relu_v1_1 == NULL)
    return host->status_create(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  relu.struct_size = v1_1_size;
  memcpy(relu_v1_1, &relu, v1_1_size);
  relu.struct_size = sizeof relu;
  weft_status* status = host->register_kernel(args->registrar, relu_v1_1);
  free(relu_v1_1);
  if (status != NULL) return status;

  weft_kernel_def unknown = relu;
  unknown.op = "WeftTestOpNoHostKnows";
  status = host->register_kernel(args->registrar, &unknown);
  if (status != NULL) return status;

#ifdef WEFT_TEST_GRADIENT_PLUGIN
  if (host->struct_size < offsetof(weft_host_api, graph) + sizeof(host->graph))
    return host->status_create(WEFT_FAILED_PRECONDITION,
                               "weft-test-gradient needs host interface 1.1");
  status = host->register_gradient(args->registrar, "Square",
                                   square_gradient, NULL);
  if (status != NULL) return status;
  status = host->register_gradient(args->registrar, "WeftTestOpNoHostKnows",
                                   square_gradient, NULL);
  if (status != NULL) return status;
#endif

  args->plugin = &table;
  return NULL;
}
