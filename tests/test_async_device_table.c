/* The template plugin's table, driven directly by a small host written
 * here: negotiation, opaque handles, and the stream and event semantics
 * that the runtime relies on but does not all exercise (events, waits
 * between streams, errors carried by events).  A vendor can point the same
 * checks at their own plugin.
 *
 * The plugin is opened with dlopen, not weft_plugin_load: this file plays
 * the host.  The worker delay (WEFT_TEMPLATE_DELAY_US, read when a device
 * opens) makes "not done yet" observable without races: a queued item
 * cannot have run a few microseconds after it was queued when the worker
 * first sleeps for milliseconds. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"
#include "weft/plugin.h"

#ifndef WEFT_TEST_TEMPLATE_PLUGIN
#error "meson passes the template plugin's path as WEFT_TEST_TEMPLATE_PLUGIN"
#endif

/* ---- A minimal host ----------------------------------------------------- */

enum { MAX_KERNELS = 32, MAX_LOG = 16 };

struct weft_kernel_registrar {
  weft_kernel_def defs[MAX_KERNELS];
  char ops[MAX_KERNELS][32];
  int32_t dtypes[MAX_KERNELS][8];
  int count;
};

/* What a kernel sees: this host's own context type. */
struct weft_kernel_context {
  const char* node;
  const char* op;
  weft_kernel_tensor inputs[2];
  int32_t num_inputs;
  weft_kernel_tensor output;
  int64_t output_dims[WEFT_MAX_RANK];
  int forwarded;
  weft_plugin_device* device;
  weft_plugin_stream* stream;
};

static const weft_plugin_api* api;
static weft_kernel_registrar registrar;
static char log_lines[MAX_LOG][512];
static int log_count;

static weft_status* host_status_create(int32_t code, const char* message) {
  return weft_status_create((weft_code)code, message);
}

static void host_log(int32_t level, const char* message) {
  if (level >= WEFT_LOG_WARNING && log_count < MAX_LOG)
    snprintf(log_lines[log_count++], sizeof log_lines[0], "%s", message);
}

static int logged(const char* needle) {
  for (int i = 0; i < log_count; ++i)
    if (strstr(log_lines[i], needle) != NULL) return 1;
  return 0;
}

static weft_status* host_register(weft_kernel_registrar* r,
                                  const weft_kernel_def* def) {
  if (r->count == MAX_KERNELS)
    return weft_status_create(WEFT_RESOURCE_EXHAUSTED, "too many kernels");
  /* Copied, as the interface promises: the plugin's def is a local. */
  weft_kernel_def* d = &r->defs[r->count];
  *d = *def;
  snprintf(r->ops[r->count], sizeof r->ops[0], "%s", def->op);
  d->op = r->ops[r->count];
  if (def->num_dtypes > 8)
    return weft_status_create(WEFT_INVALID_ARGUMENT, "too many dtypes");
  for (int32_t i = 0; i < def->num_dtypes; ++i)
    r->dtypes[r->count][i] = def->dtypes[i];
  d->dtypes = r->dtypes[r->count];
  r->count++;
  return NULL;
}

static const char* host_node_name(const weft_kernel_context* c) {
  return c->node;
}
static const char* host_op(const weft_kernel_context* c) { return c->op; }
static int32_t host_num_inputs(const weft_kernel_context* c) {
  return c->num_inputs;
}
static int32_t host_num_outputs(const weft_kernel_context* c) {
  (void)c;
  return 1;
}

static weft_status* host_input(const weft_kernel_context* c, int32_t i,
                               weft_kernel_tensor* out) {
  if (i < 0 || i >= c->num_inputs)
    return weft_status_create(WEFT_OUT_OF_RANGE, "no such input");
  *out = c->inputs[i];
  return NULL;
}

static weft_status* host_allocate_output(weft_kernel_context* c, int32_t i,
                                         int32_t dtype, const int64_t* dims,
                                         int32_t rank,
                                         weft_kernel_tensor* out) {
  if (i != 0) return weft_status_create(WEFT_OUT_OF_RANGE, "no such output");
  int64_t count = 1;
  for (int32_t k = 0; k < rank; ++k) {
    c->output_dims[k] = dims[k];
    count *= dims[k];
  }
  weft_kernel_tensor* t = &c->output;
  memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->dtype = dtype;
  t->rank = rank;
  t->dims = c->output_dims;
  t->element_count = count;
  t->byte_size = (uint64_t)count * wt_dtype_bytes((weft_dtype)dtype);
  if (t->byte_size > 0) {
    weft_status* s = api->memory_allocate(c->device, t->byte_size, &t->data);
    if (s != NULL) return s;
  }
  *out = *t;
  return NULL;
}

static weft_status* host_forward_input(weft_kernel_context* c, int32_t in,
                                       int32_t o, const int64_t* dims,
                                       int32_t rank) {
  (void)dims;
  (void)rank;
  if (in != 0 || o != 0)
    return weft_status_create(WEFT_OUT_OF_RANGE, "bad forward");
  c->output = c->inputs[0];
  c->forwarded = 1;
  return NULL;
}

static weft_status* host_attr_absent(const weft_kernel_context* c,
                                     const char* name) {
  (void)c;
  return weft_status_create(WEFT_NOT_FOUND, name);
}
static weft_status* host_attr_int(const weft_kernel_context* c,
                                  const char* n, int64_t* o) {
  (void)o;
  return host_attr_absent(c, n);
}
static weft_status* host_attr_float(const weft_kernel_context* c,
                                    const char* n, double* o) {
  (void)o;
  return host_attr_absent(c, n);
}
static weft_status* host_attr_bool(const weft_kernel_context* c,
                                   const char* n, int32_t* o) {
  (void)o;
  return host_attr_absent(c, n);
}
static weft_status* host_attr_dtype(const weft_kernel_context* c,
                                    const char* n, int32_t* o) {
  (void)o;
  return host_attr_absent(c, n);
}
static weft_status* host_attr_string(const weft_kernel_context* c,
                                     const char* n, const char** o) {
  (void)o;
  return host_attr_absent(c, n);
}
static weft_status* host_attr_int_list(const weft_kernel_context* c,
                                       const char* n, const int64_t** o,
                                       int32_t* k) {
  (void)o;
  (void)k;
  return host_attr_absent(c, n);
}
static weft_status* host_attr_float_list(const weft_kernel_context* c,
                                         const char* n, const double** o,
                                         int32_t* k) {
  (void)o;
  (void)k;
  return host_attr_absent(c, n);
}
static weft_plugin_device* host_device(const weft_kernel_context* c) {
  return c->device;
}
static weft_plugin_stream* host_stream(const weft_kernel_context* c) {
  return c->stream;
}
static int32_t host_intra_op_threads(const weft_kernel_context* c) {
  (void)c;
  return 1;
}
static void host_status_destroy(weft_status* s) { weft_status_destroy(s); }
static int32_t host_status_code(const weft_status* s) {
  return weft_status_code(s);
}

static const weft_host_api host_api = {
    .struct_size = sizeof(weft_host_api),
    .status_create = host_status_create,
    .log = host_log,
    .register_kernel = host_register,
    .kernel_node_name = host_node_name,
    .kernel_op = host_op,
    .kernel_num_inputs = host_num_inputs,
    .kernel_num_outputs = host_num_outputs,
    .kernel_input = host_input,
    .kernel_allocate_output = host_allocate_output,
    .kernel_forward_input = host_forward_input,
    .kernel_attr_int = host_attr_int,
    .kernel_attr_float = host_attr_float,
    .kernel_attr_bool = host_attr_bool,
    .kernel_attr_dtype = host_attr_dtype,
    .kernel_attr_string = host_attr_string,
    .kernel_attr_int_list = host_attr_int_list,
    .kernel_attr_float_list = host_attr_float_list,
    .kernel_device = host_device,
    .kernel_stream = host_stream,
    .kernel_intra_op_threads = host_intra_op_threads,
    .status_destroy = host_status_destroy,
    .status_code = host_status_code,
};

static weft_plugin_entry_fn entry_point(void) {
  void* dl = dlopen(WEFT_TEST_TEMPLATE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(dl, "dlopen: %s", dlerror());
  void* symbol = dlsym(dl, WEFT_PLUGIN_ENTRY_NAME);
  cr_assert_not_null(symbol, "no %s", WEFT_PLUGIN_ENTRY_NAME);
  /* ISO C has no object-to-function pointer conversion; POSIX makes the
   * bytes the same. */
  weft_plugin_entry_fn entry;
  memcpy(&entry, &symbol, sizeof entry);
  return entry;
}

/* Loads the plugin as a 1.0 host would. */
static void load(void) {
  weft_plugin_init_args args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.host_min_version = WEFT_VERSION_PACK(1, 0);
  args.host_max_version = WEFT_VERSION_PACK(1, 0);
  args.host = &host_api;
  args.registrar = &registrar;
  WT_OK(entry_point()(&args));
  cr_assert_eq(args.chosen_version, WEFT_VERSION_PACK(1, 0));
  cr_assert_not_null(args.plugin);
  api = args.plugin;
}

static const weft_kernel_def* kernel_for(const char* op) {
  for (int i = 0; i < registrar.count; ++i)
    if (strcmp(registrar.defs[i].op, op) == 0) return &registrar.defs[i];
  cr_assert_fail("no kernel registered for %s", op);
  return NULL;
}

/* ---- Device fixtures ------------------------------------------------------ */

static weft_plugin_device* open_device(long delay_us) {
  char text[32];
  snprintf(text, sizeof text, "%ld", delay_us);
  setenv("WEFT_TEMPLATE_DELAY_US", text, 1);
  weft_plugin_device* device = NULL;
  WT_OK(api->device_open(0, &device));
  cr_assert_not_null(device);
  return device;
}

static void* device_buffer(weft_plugin_device* device, const void* data,
                           uint64_t bytes) {
  void* handle = NULL;
  WT_OK(api->memory_allocate(device, bytes, &handle));
  if (data != NULL)
    WT_OK(api->copy_host_to_device(device, NULL, data, handle, 0, bytes));
  return handle;
}

static weft_kernel_tensor tensor_1d(int32_t dtype, const int64_t* dims,
                                    void* handle) {
  weft_kernel_tensor t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.dtype = dtype;
  t.rank = 1;
  t.dims = dims;
  t.element_count = dims[0];
  t.byte_size = (uint64_t)dims[0] * wt_dtype_bytes((weft_dtype)dtype);
  t.data = handle;
  return t;
}

/* Calls `op`'s kernel on `stream` with a context that is scribbled over as
 * soon as the call returns, and a node name that is freed then: a kernel
 * that kept either for its queued work reads garbage.  Returns the
 * kernel's status; *out_handle is the output's allocation. */
static weft_status* run_kernel(weft_plugin_device* device,
                               weft_plugin_stream* stream, const char* op,
                               const char* node, weft_kernel_tensor x,
                               const weft_kernel_tensor* y,
                               void** out_handle) {
  const weft_kernel_def* def = kernel_for(op);
  weft_kernel_context* ctx = calloc(1, sizeof *ctx);
  cr_assert_not_null(ctx);
  char* name = strdup(node);
  int64_t* dims = malloc(sizeof(int64_t));
  cr_assert(name != NULL && dims != NULL);
  /* The inputs' dims are borrowed for the call, too. */
  dims[0] = x.dims[0];
  x.dims = dims;
  ctx->node = name;
  ctx->op = op;
  ctx->inputs[0] = x;
  ctx->num_inputs = 1;
  if (y != NULL) {
    ctx->inputs[1] = *y;
    ctx->num_inputs = 2;
  }
  ctx->device = device;
  ctx->stream = stream;
  weft_status* status = def->compute(def->kernel_arg, ctx);
  *out_handle = ctx->forwarded ? NULL : ctx->output.data;
  memset(name, '#', strlen(name));
  free(name);
  memset(dims, 0xab, sizeof(int64_t));
  free(dims);
  memset(ctx, 0xab, sizeof *ctx);
  free(ctx);
  return status;
}

/* ---- Loading ------------------------------------------------------------- */

Test(template_loading, negotiation_and_table) {
  weft_plugin_entry_fn entry = entry_point();
  struct {
    uint32_t lo, hi;
    int accepted;
  } cases[] = {
      {WEFT_VERSION_PACK(1, 0), WEFT_VERSION_PACK(1, 0), 1},
      {WEFT_VERSION_PACK(1, 0), WEFT_VERSION_PACK(1, 7), 1},
      {WEFT_VERSION_PACK(1, 0), WEFT_VERSION_PACK(2, 3), 1},
      {WEFT_VERSION_PACK(2, 0), WEFT_VERSION_PACK(3, 1), 0},
      {WEFT_VERSION_PACK(0, 1), WEFT_VERSION_PACK(0, 9), 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    weft_kernel_registrar r;
    memset(&r, 0, sizeof r);
    weft_plugin_init_args args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.host_min_version = cases[i].lo;
    args.host_max_version = cases[i].hi;
    args.host = &host_api;
    args.registrar = &r;
    args.chosen_version = 0xdeadbeef;
    weft_status* status = entry(&args);
    /* Written in every case, so that a host can name it in a refusal. */
    cr_expect_eq(args.chosen_version, WEFT_VERSION_PACK(1, 0),
                 "case %zu: chose %#x", i, args.chosen_version);
    if (cases[i].accepted) {
      WT_OK(status);
      cr_assert_not_null(args.plugin);
      cr_expect_str_eq(args.plugin->device_type, "TEMPLATE");
      cr_expect_str_eq(args.plugin->name, "weft-template");
      cr_expect_geq(args.plugin->struct_size,
                    offsetof(weft_plugin_api, shutdown) + sizeof(void*));
      cr_expect_not_null(args.plugin->stream_create);
      cr_expect_not_null(args.plugin->stream_wait_event);
      cr_expect_geq(r.count, 6);
    } else {
      WT_EXPECT_ERROR(status, WEFT_FAILED_PRECONDITION, "1.0");
      cr_expect_null(args.plugin);
    }
  }
}

Test(template_loading, refuses_a_host_table_that_is_too_short) {
  weft_host_api short_host = host_api;
  short_host.struct_size = offsetof(weft_host_api, kernel_input);
  weft_kernel_registrar r;
  memset(&r, 0, sizeof r);
  weft_plugin_init_args args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.host_min_version = WEFT_VERSION_PACK(1, 0);
  args.host_max_version = WEFT_VERSION_PACK(1, 0);
  args.host = &short_host;
  args.registrar = &r;
  WT_EXPECT_ERROR(entry_point()(&args), WEFT_FAILED_PRECONDITION,
                  "service table");
  cr_expect_null(args.plugin);
}

TestSuite(template_table, .init = load);

/* ---- Memory --------------------------------------------------------------- */

Test(template_table, handles_are_opaque_and_checked) {
  weft_plugin_device* device = open_device(0);
  weft_device_properties props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  WT_OK(api->device_properties(device, &props));
  cr_expect_eq(props.flags & WEFT_DEVICE_HOST_MEMORY, 0u);

  const float data[4] = {1, 2, 3, 4};
  void* handle = device_buffer(device, data, sizeof data);
  /* The handle is no pointer to the data. */
  cr_expect_neq(memcmp(handle, data, sizeof data), 0);
  float back[4] = {0};
  WT_OK(api->copy_device_to_host(device, NULL, handle, 4, back, 12));
  cr_expect(back[0] == 2 && back[1] == 3 && back[2] == 4);

  /* Host memory where a handle belongs, ranges past the end, NULL. */
  float host[16] = {0};
  WT_EXPECT_ERROR(api->copy_host_to_device(device, NULL, data, host, 0, 16),
                  WEFT_INVALID_ARGUMENT, "not an allocation");
  WT_EXPECT_ERROR(api->copy_device_to_host(device, NULL, handle, 8, back, 16),
                  WEFT_OUT_OF_RANGE, "outside");
  WT_EXPECT_CODE(api->copy_device_to_device(device, NULL, NULL, 0, handle, 0,
                                            4),
                 WEFT_INVALID_ARGUMENT);
  api->memory_free(device, handle);
  api->memory_free(device, NULL);
  api->device_close(device);
}

Test(template_table, memory_runs_out_with_a_status) {
  weft_plugin_device* device = open_device(0);
  void* handle = (void*)&handle;
  WT_EXPECT_CODE(api->memory_allocate(device, UINT64_C(1) << 40, &handle),
                 WEFT_RESOURCE_EXHAUSTED);
  cr_expect_null(handle);
  api->device_close(device);
}

/* ---- Streams --------------------------------------------------------------- */

Test(template_table, stream_work_runs_later_and_in_order) {
  weft_plugin_device* device = open_device(20000);
  weft_plugin_stream* stream = NULL;
  WT_OK(api->stream_create(device, &stream));
  const int32_t data[4] = {5, 6, 7, 8};
  void* a = device_buffer(device, NULL, sizeof data);
  void* b = device_buffer(device, NULL, sizeof data);
  int32_t back[4] = {-1, -1, -1, -1};
  WT_OK(api->copy_host_to_device(device, stream, data, a, 0, sizeof data));
  WT_OK(api->copy_device_to_device(device, stream, a, 0, b, 0, sizeof data));
  WT_OK(api->copy_device_to_host(device, stream, b, 0, back, sizeof back));
  /* Queued, not done: the worker is still asleep before the first item. */
  cr_expect_eq(back[0], -1, "the copy ran before the call returned");
  WT_OK(api->stream_synchronize(device, stream));
  for (int i = 0; i < 4; ++i) cr_expect_eq(back[i], data[i]);
  api->stream_destroy(device, stream);
  api->memory_free(device, a);
  api->memory_free(device, b);
  api->device_close(device);
}

Test(template_table, kernels_keep_nothing_of_the_context) {
  weft_plugin_device* device = open_device(5000);
  weft_plugin_stream* stream = NULL;
  WT_OK(api->stream_create(device, &stream));
  const float xv[5] = {-2, -0.5f, 0, 1.5f, NAN};
  const float yv[5] = {4, 4, 4, 4, 4};
  int64_t dims[1] = {5};
  void* x = device_buffer(device, xv, sizeof xv);
  void* y = device_buffer(device, yv, sizeof yv);
  weft_kernel_tensor tx = tensor_1d(WEFT_FLOAT32, dims, x);
  weft_kernel_tensor ty = tensor_1d(WEFT_FLOAT32, dims, y);
  void* product = NULL;
  void* relu = NULL;
  WT_OK(run_kernel(device, stream, "Mul", "product", tx, &ty, &product));
  weft_kernel_tensor tp = tensor_1d(WEFT_FLOAT32, dims, product);
  WT_OK(run_kernel(device, stream, "Relu", "relu", tp, NULL, &relu));
  float back[5];
  WT_OK(api->copy_device_to_host(device, stream, relu, 0, back, sizeof back));
  WT_OK(api->stream_synchronize(device, stream));
  const float want[4] = {0, 0, 0, 6};
  for (int i = 0; i < 4; ++i) cr_expect_eq(back[i], want[i]);
  cr_expect(isnan(back[4]), "relu(NaN) is %g", (double)back[4]);
  void* same = (void*)&same;
  WT_OK(run_kernel(device, stream, "Identity", "same", tp, NULL, &same));
  cr_expect_null(same, "Identity forwards its input instead of allocating");
  api->stream_destroy(device, stream);
  void* handles[4] = {x, y, product, relu};
  for (int i = 0; i < 4; ++i) api->memory_free(device, handles[i]);
  api->device_close(device);
}

/* Queues x / y (int32, y holding a zero) between two events. */
struct failing_division {
  weft_plugin_device* device;
  weft_plugin_stream* stream;
  weft_plugin_event* before;
  weft_plugin_event* after;
  void* buffers[3];
};

static void queue_failing_division(struct failing_division* f, long delay) {
  static const int32_t xv[3] = {6, 7, 8};
  static const int32_t yv[3] = {2, 0, 4};
  static int64_t dims[1] = {3};
  f->device = open_device(delay);
  WT_OK(api->stream_create(f->device, &f->stream));
  WT_OK(api->event_create(f->device, &f->before));
  WT_OK(api->event_create(f->device, &f->after));
  f->buffers[0] = device_buffer(f->device, xv, sizeof xv);
  f->buffers[1] = device_buffer(f->device, yv, sizeof yv);
  weft_kernel_tensor tx = tensor_1d(WEFT_INT32, dims, f->buffers[0]);
  weft_kernel_tensor ty = tensor_1d(WEFT_INT32, dims, f->buffers[1]);
  WT_OK(api->event_record(f->device, f->before, f->stream));
  /* Queued fine: the zero is found when the work runs. */
  WT_OK(run_kernel(f->device, f->stream, "Div", "ratio", tx, &ty,
                   &f->buffers[2]));
  WT_OK(api->event_record(f->device, f->after, f->stream));
}

static void release_division(struct failing_division* f) {
  api->event_destroy(f->device, f->before);
  api->event_destroy(f->device, f->after);
  api->stream_destroy(f->device, f->stream);
  for (int i = 0; i < 3; ++i) api->memory_free(f->device, f->buffers[i]);
  api->device_close(f->device);
}

Test(template_table, errors_travel_on_events_and_streams) {
  struct failing_division f;
  queue_failing_division(&f, 2000);
  /* Only work before an event counts against it. */
  WT_OK(api->event_synchronize(f.device, f.before));
  WT_EXPECT_ERROR(api->event_synchronize(f.device, f.after),
                  WEFT_INVALID_ARGUMENT, "ratio", "division by zero");
  /* Asked again, the event still knows. */
  WT_EXPECT_CODE(api->event_synchronize(f.device, f.after),
                 WEFT_INVALID_ARGUMENT);
  /* The stream reports it once, then is usable again. */
  WT_EXPECT_ERROR(api->stream_synchronize(f.device, f.stream),
                  WEFT_INVALID_ARGUMENT, "ratio");
  WT_OK(api->stream_synchronize(f.device, f.stream));
  int32_t back[3] = {0};
  const int32_t xv[3] = {9, 9, 9};
  WT_OK(api->copy_host_to_device(f.device, f.stream, xv, f.buffers[2], 0,
                                 sizeof xv));
  WT_OK(api->copy_device_to_host(f.device, f.stream, f.buffers[2], 0, back,
                                 sizeof back));
  WT_OK(api->stream_synchronize(f.device, f.stream));
  cr_expect(back[0] == 9 && back[2] == 9);
  release_division(&f);
}

Test(template_table, work_after_an_error_is_skipped) {
  struct failing_division f;
  queue_failing_division(&f, 0);
  static const int32_t fresh[3] = {1, 2, 3};
  int32_t back[3] = {-7, -7, -7};
  WT_OK(api->copy_host_to_device(f.device, f.stream, fresh, f.buffers[0], 0,
                                 sizeof fresh));
  WT_OK(api->copy_device_to_host(f.device, f.stream, f.buffers[0], 0, back,
                                 sizeof back));
  WT_EXPECT_CODE(api->stream_synchronize(f.device, f.stream),
                 WEFT_INVALID_ARGUMENT);
  cr_expect_eq(back[0], -7, "work queued after the failure ran anyway");
  release_division(&f);
}

Test(template_table, a_stream_waits_for_another_streams_event) {
  weft_plugin_device* device = open_device(3000);
  weft_plugin_stream *producer = NULL, *consumer = NULL;
  WT_OK(api->stream_create(device, &producer));
  WT_OK(api->stream_create(device, &consumer));
  weft_plugin_event* ready = NULL;
  WT_OK(api->event_create(device, &ready));
  static float data[64];
  for (int i = 0; i < 64; ++i) data[i] = (float)i;
  void* handle = device_buffer(device, NULL, sizeof data);
  /* The producer's copy comes after four other items; without the wait the
   * consumer's single item would run long before it. */
  float scratch[4][64];
  for (int i = 0; i < 4; ++i)
    WT_OK(api->copy_device_to_host(device, producer, handle, 0, scratch[i],
                                   sizeof data));
  WT_OK(api->copy_host_to_device(device, producer, data, handle, 0,
                                 sizeof data));
  WT_OK(api->event_record(device, ready, producer));
  /* The host may let go of the event once the wait is queued. */
  WT_OK(api->stream_wait_event(device, consumer, ready));
  api->event_destroy(device, ready);
  float back[64];
  WT_OK(api->copy_device_to_host(device, consumer, handle, 0, back,
                                 sizeof back));
  WT_OK(api->stream_synchronize(device, consumer));
  cr_expect_eq(memcmp(back, data, sizeof data), 0,
               "the consumer read before the producer wrote");
  WT_OK(api->stream_synchronize(device, producer));
  api->stream_destroy(device, producer);
  api->stream_destroy(device, consumer);
  api->memory_free(device, handle);
  api->device_close(device);
}

Test(template_table, a_wait_inherits_the_events_error) {
  struct failing_division f;
  queue_failing_division(&f, 1000);
  weft_plugin_stream* other = NULL;
  WT_OK(api->stream_create(f.device, &other));
  WT_OK(api->stream_wait_event(f.device, other, f.after));
  WT_EXPECT_ERROR(api->stream_synchronize(f.device, other),
                  WEFT_INVALID_ARGUMENT, "ratio");
  weft_status_destroy(api->stream_synchronize(f.device, f.stream));
  api->stream_destroy(f.device, other);
  release_division(&f);
}

Test(template_table, unrecorded_events_are_complete) {
  weft_plugin_device* device = open_device(0);
  weft_plugin_stream* stream = NULL;
  WT_OK(api->stream_create(device, &stream));
  weft_plugin_event* event = NULL;
  WT_OK(api->event_create(device, &event));
  WT_OK(api->event_synchronize(device, event));
  WT_OK(api->stream_wait_event(device, stream, event));
  WT_OK(api->stream_synchronize(device, stream));
  api->event_destroy(device, event);
  api->event_destroy(device, NULL);
  api->stream_destroy(device, stream);
  api->device_close(device);
}

/* ---- The host's side of the bargain -------------------------------------- */

Test(template_table, unordered_copies_into_busy_memory_are_refused) {
  weft_plugin_device* device = open_device(20000);
  weft_plugin_stream* stream = NULL;
  WT_OK(api->stream_create(device, &stream));
  static const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  void* handle = device_buffer(device, data, sizeof data);
  float back[8];
  WT_OK(api->copy_device_to_host(device, stream, handle, 0, back,
                                 sizeof back));
  /* A NULL-stream write while queued work reads the same memory: nothing
   * orders the two. */
  WT_EXPECT_ERROR(api->copy_host_to_device(device, NULL, data, handle, 0,
                                           sizeof data),
                  WEFT_FAILED_PRECONDITION, "host bug");
  /* Reading alongside a queued read is fine. */
  float other[8];
  WT_OK(api->copy_device_to_host(device, NULL, handle, 0, other,
                                 sizeof other));
  WT_OK(api->stream_synchronize(device, stream));
  WT_OK(api->copy_host_to_device(device, NULL, data, handle, 0, sizeof data));
  api->stream_destroy(device, stream);
  api->memory_free(device, handle);
  api->device_close(device);
}

Test(template_table, memory_freed_too_early_outlives_its_work) {
  weft_plugin_device* device = open_device(10000);
  weft_plugin_stream* stream = NULL;
  WT_OK(api->stream_create(device, &stream));
  static const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  void* handle = device_buffer(device, data, sizeof data);
  float back[8] = {0};
  WT_OK(api->copy_device_to_host(device, stream, handle, 0, back,
                                 sizeof back));
  api->memory_free(device, handle);
  cr_expect(logged("host bug"), "an early free was not reported");
  WT_OK(api->stream_synchronize(device, stream));
  cr_expect_eq(memcmp(back, data, sizeof data), 0);
  api->stream_destroy(device, stream);
  api->device_close(device);
}
