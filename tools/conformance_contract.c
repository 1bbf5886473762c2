/* weft conformance: the memory, stream and event contract, through
 * sessions and through the plugin's own table in a child process.  See
 * tools/conformance.c. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/conformance.h"
#include "tools/random.h"

/* ---- The contract through sessions -------------------------------------- */

typedef struct identity_graph {
  weft_graph* graph;
  weft_output x, y;
  weft_session* session;
} identity_graph;

/* x (a placeholder of `dtype` and unknown shape) -> Identity on each device
 * of `devices` in turn -> y. */
static weft_status* build_identity_chain(const target* t, weft_dtype dtype,
                                         const char* const* devices, int n,
                                         identity_graph* ig) {
  memset(ig, 0, sizeof *ig);
  weft_status* status = weft_graph_create(&ig->graph);
  if (status == NULL)
    status = weft_graph_placeholder(ig->graph, "x", dtype, NULL, -1, &ig->x);
  ig->y = ig->x;
  for (int i = 0; status == NULL && i < n; ++i) {
    char name[32];
    snprintf(name, sizeof name, "copy%d", i);
    weft_op_builder* b = weft_op_begin(ig->graph, "Identity", name);
    weft_op_add_input(b, ig->y);
    weft_op_set_device(b, devices[i]);
    weft_node* node = NULL;
    status = weft_op_finish(b, &node);
    ig->y = (weft_output){node, 0};
  }
  if (status == NULL) status = open_session(ig->graph, t, &ig->session);
  return status;
}

static void release_identity(identity_graph* ig) {
  weft_session_destroy(ig->session);
  weft_graph_destroy(ig->graph);
}

static weft_tensor* random_bytes(weft_dtype dtype, const int64_t* dims,
                                 int32_t rank, uint64_t seed) {
  weft_tensor* x = NULL;
  weft_status* status = weft_tensor_create(dtype, dims, rank, &x);
  if (status != NULL) {
    weft_status_destroy(status);
    return NULL;
  }
  unsigned char* data = weft_tensor_data(x);
  size_t bytes = weft_tensor_byte_size(x);
  for (size_t i = 0; i < bytes; ++i)
    data[i] = (unsigned char)(weft_tool_random(&seed) >> 56);
  if (dtype == WEFT_BOOL)
    for (size_t i = 0; i < bytes; ++i) data[i] &= 1;
  return x;
}

/* Runs x through the chain and compares bytes; 1 when exact. */
static int round_trip(identity_graph* ig, weft_tensor* x, char* why,
                      size_t size) {
  weft_tensor* y = NULL;
  weft_status* status =
      weft_session_run(ig->session, &ig->x, &x, 1, &ig->y, 1, NULL, 0, &y);
  if (status != NULL) {
    status_text(status, why, size);
    return 0;
  }
  int ok = weft_tensor_byte_size(y) == weft_tensor_byte_size(x) &&
           weft_tensor_rank(y) == weft_tensor_rank(x) &&
           (weft_tensor_byte_size(x) == 0 ||
            memcmp(weft_tensor_data(x), weft_tensor_data(y),
                   weft_tensor_byte_size(x)) == 0);
  if (!ok) {
    char xs[96], ys[96];
    format_dims(x, xs, sizeof xs);
    format_dims(y, ys, sizeof ys);
    snprintf(why, size, "%s%s came back as %s%s with different bytes",
             weft_dtype_name(weft_tensor_dtype(x)), xs,
             weft_dtype_name(weft_tensor_dtype(y)), ys);
  }
  weft_tensor_destroy(y);
  return ok;
}

static int plugin_has_kernel(const target* t, const char* op, weft_dtype dt) {
  op_kernels k;
  collect_kernels(op, t->plugin.name, &k);
  for (int i = 0; i < k.num_tested; ++i) {
    const char* attr = k.tested[i].dtype_attr;
    if (attr == NULL || attr[0] == '\0' || kernel_accepts(&k.tested[i], attr, dt))
      return 1;
  }
  return 0;
}

static void check_copies(const target* t, const char* const* devices, int n,
                         const char* name, row_list* checks) {
  static const weft_dtype dtypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                      WEFT_UINT8, WEFT_BOOL, WEFT_FLOAT16};
  static const int64_t shapes[][3] = {
      {0, 0, 0}, {1, 7, 0}, {1, 0, 0}, {2, 0, 5}, {2, 3, 5}, {2, 1024, 1031}};
  char why[400] = "";
  int tried = 0, ok = 1;
  for (size_t d = 0; ok && d < sizeof dtypes / sizeof dtypes[0]; ++d) {
    if (!plugin_has_kernel(t, "Identity", dtypes[d])) continue;
    identity_graph ig;
    weft_status* status = build_identity_chain(t, dtypes[d], devices, n, &ig);
    if (status != NULL) {
      ok = 0;
      status_text(status, why, sizeof why);
    }
    for (size_t s = 0; ok && s < sizeof shapes / sizeof shapes[0]; ++s) {
      weft_tensor* x = random_bytes(dtypes[d], shapes[s] + 1,
                                    (int32_t)shapes[s][0], d * 16 + s);
      ok = x != NULL && round_trip(&ig, x, why, sizeof why);
      weft_tensor_destroy(x);
      ++tried;
    }
    release_identity(&ig);
  }
  if (tried == 0)
    add_row(checks, name, "", R_NOT_CHECKED,
            "the plugin registers no Identity kernel to move data with");
  else if (ok)
    add_row(checks, name, "", R_PASS,
            "%d tensors byte-exact (scalar, empty, up to 4 MiB; %s)", tried,
            "float32, float64, int32, uint8, bool, float16 where registered");
  else
    add_row(checks, name, "", R_FAIL, "%s", why);
}

typedef struct concurrent_arg {
  identity_graph* ig;
  int index, ok;
  char why[300];
} concurrent_arg;

static void* concurrent_runs(void* p) {
  concurrent_arg* a = p;
  a->ok = 1;
  for (int i = 0; a->ok && i < 6; ++i) {
    int64_t dims[1] = {4096 + a->index * 64 + i};
    weft_tensor* x = random_bytes(WEFT_FLOAT32, dims, 1,
                                  (uint64_t)(a->index * 100 + i));
    a->ok = x != NULL && round_trip(a->ig, x, a->why, sizeof a->why);
    weft_tensor_destroy(x);
  }
  return NULL;
}

static void check_concurrency(const target* t, row_list* checks) {
  const char* name = "concurrent runs (a stream each)";
  if (!plugin_has_kernel(t, "Identity", WEFT_FLOAT32)) {
    add_row(checks, name, "", R_NOT_CHECKED,
            "no float32 Identity kernel to move data with");
    return;
  }
  const char* devices[1] = {t->device};
  identity_graph ig;
  weft_status* status = build_identity_chain(t, WEFT_FLOAT32, devices, 1, &ig);
  char text[300];
  if (status != NULL) {
    add_row(checks, name, "", R_FAIL, "%s", status_text(status, text, sizeof text));
    release_identity(&ig);
    return;
  }
  enum { THREADS = 4 };
  concurrent_arg args[THREADS];
  pthread_t threads[THREADS];
  int started = 0;
  for (int i = 0; i < THREADS; ++i) {
    args[i] = (concurrent_arg){.ig = &ig, .index = i, .ok = 1};
    if (pthread_create(&threads[i], NULL, concurrent_runs, &args[i]) != 0) break;
    ++started;
  }
  int ok = started == THREADS;
  const char* why = ok ? "" : "could not start threads";
  for (int i = 0; i < started; ++i) {
    pthread_join(threads[i], NULL);
    if (!args[i].ok && ok) {
      ok = 0;
      why = args[i].why;
    }
  }
  if (ok)
    add_row(checks, name, "", R_PASS,
            "%d threads x 6 runs of one session, each its own data, "
            "byte-exact", THREADS);
  else
    add_row(checks, name, "", R_FAIL, "%s", why);
  release_identity(&ig);
}

/* Integer division by zero found while the kernel runs must come back from
 * the run (the op contract: INVALID_ARGUMENT naming the node), and the
 * session must work afterwards. */
static void check_error_at_sync(const target* t, row_list* checks) {
  const char* name = "errors surface when the run synchronizes";
  weft_dtype dt = plugin_has_kernel(t, "Div", WEFT_INT32)   ? WEFT_INT32
                  : plugin_has_kernel(t, "Div", WEFT_INT64) ? WEFT_INT64
                                                            : WEFT_DTYPE_INVALID;
  if (dt == WEFT_DTYPE_INVALID) {
    add_row(checks, name, "", R_NOT_CHECKED,
            "no integer Div kernel to fail with (division by zero)");
    return;
  }
  weft_graph* g = NULL;
  weft_output x, y, z;
  weft_session* s = NULL;
  int64_t dims[1] = {3};
  char text[400] = "";
  weft_status* status = weft_graph_create(&g);
  if (status == NULL) status = weft_graph_placeholder(g, "x", dt, dims, 1, &x);
  if (status == NULL) status = weft_graph_placeholder(g, "y", dt, dims, 1, &y);
  if (status == NULL) {
    weft_op_builder* b = weft_op_begin(g, "Div", "ratio");
    weft_op_add_input(b, x);
    weft_op_add_input(b, y);
    weft_op_set_device(b, t->device);
    weft_node* node = NULL;
    status = weft_op_finish(b, &node);
    z = (weft_output){node, 0};
  }
  if (status == NULL) status = open_session(g, t, &s);
  weft_tensor *xv = NULL, *bad = NULL, *good = NULL, *out = NULL;
  if (status == NULL) status = weft_tensor_create(dt, dims, 1, &xv);
  if (status == NULL) status = weft_tensor_create(dt, dims, 1, &bad);
  if (status == NULL) status = weft_tensor_create(dt, dims, 1, &good);
  result verdict = R_FAIL;
  if (status == NULL) {
    for (int i = 0; i < 3; ++i) {
      store(dt, weft_tensor_data(xv), i, 6 + i);
      store(dt, weft_tensor_data(bad), i, i == 1 ? 0 : 2);
      store(dt, weft_tensor_data(good), i, 2);
    }
    weft_output feeds[2] = {x, y};
    weft_tensor* with_zero[2] = {xv, bad};
    weft_tensor* fine[2] = {xv, good};
    status = weft_session_run(s, feeds, with_zero, 2, &z, 1, NULL, 0, &out);
    if (status == NULL) {
      snprintf(text, sizeof text,
               "%s division by zero returned values without an error",
               weft_dtype_name(dt));
      weft_tensor_destroy(out);
      out = NULL;
    } else if (weft_status_code(status) != WEFT_INVALID_ARGUMENT ||
               strstr(weft_status_message(status), "ratio") == NULL) {
      char got[300];
      snprintf(text, sizeof text,
               "division by zero: want INVALID_ARGUMENT naming node "
               "'ratio', got %s", status_text(status, got, sizeof got));
      status = NULL;
    } else {
      weft_status_destroy(status);
      status = weft_session_run(s, feeds, fine, 2, &z, 1, NULL, 0, &out);
      if (status == NULL &&
          (load(dt, weft_tensor_data(out), 0) != 3 ||
           load(dt, weft_tensor_data(out), 2) != 4)) {
        snprintf(text, sizeof text, "the run after the error computed wrong values");
      } else if (status == NULL) {
        verdict = R_PASS;
        snprintf(text, sizeof text,
                 "%s division by zero: INVALID_ARGUMENT naming the node; "
                 "the next run of the session is correct",
                 weft_dtype_name(dt));
      }
    }
  }
  if (status != NULL) {
    char got[300];
    snprintf(text, sizeof text, "%s", status_text(status, got, sizeof got));
  }
  add_row(checks, name, "", verdict, "%s", text);
  weft_tensor_destroy(out);
  weft_tensor_destroy(xv);
  weft_tensor_destroy(bad);
  weft_tensor_destroy(good);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

static void check_wrong_feed(const target* t, row_list* checks) {
  const char* name = "refusal: a feed of the wrong shape";
  if (!plugin_has_kernel(t, "Identity", WEFT_FLOAT32)) {
    add_row(checks, name, "", R_NOT_CHECKED, "no float32 Identity kernel");
    return;
  }
  weft_graph* g = NULL;
  weft_output x, y;
  weft_session* s = NULL;
  int64_t dims[1] = {3}, fed[1] = {4};
  weft_tensor *v = NULL, *out = NULL;
  weft_status* status = weft_graph_create(&g);
  if (status == NULL)
    status = weft_graph_placeholder(g, "x", WEFT_FLOAT32, dims, 1, &x);
  if (status == NULL) {
    weft_op_builder* b = weft_op_begin(g, "Identity", "copy");
    weft_op_add_input(b, x);
    weft_op_set_device(b, t->device);
    weft_node* node = NULL;
    status = weft_op_finish(b, &node);
    y = (weft_output){node, 0};
  }
  if (status == NULL) status = open_session(g, t, &s);
  if (status == NULL) status = weft_tensor_create(WEFT_FLOAT32, fed, 1, &v);
  char text[300];
  if (status != NULL) {
    add_row(checks, name, "", R_FAIL, "%s", status_text(status, text, sizeof text));
  } else {
    status = weft_session_run(s, &x, &v, 1, &y, 1, NULL, 0, &out);
    if (weft_status_code(status) == WEFT_INVALID_ARGUMENT)
      add_row(checks, name, "", R_PASS, "float32[4] fed for [3]: %s",
              weft_code_name(WEFT_INVALID_ARGUMENT));
    else
      add_row(checks, name, "", R_FAIL,
              "float32[4] fed for [3]: want INVALID_ARGUMENT, got %s",
              weft_code_name(weft_status_code(status)));
    weft_status_destroy(status);
  }
  weft_tensor_destroy(out);
  weft_tensor_destroy(v);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

void check_contract_sessions(const target* t, const row_list* rows,
                             row_list* checks) {
  const char* one[1] = {t->device};
  check_copies(t, one, 1, "copies host -> device -> host", checks);
  if (t->second_device[0]) {
    const char* two[2] = {t->device, t->second_device};
    check_copies(t, two, 2, "copies device -> device", checks);
  } else {
    add_row(checks, "copies device -> device", "", R_NOT_CHECKED,
            "one device");
  }
  check_concurrency(t, checks);
  check_error_at_sync(t, checks);
  check_wrong_feed(t, checks);
  int refused = 0, ran = 0, unchecked = 0;
  for (size_t i = 0; i < rows->count; ++i) {
    if (rows->rows[i].status == R_NOT_PROVIDED) {
      if (strstr(rows->rows[i].detail, "refused")) ++refused;
      else ++unchecked;
    } else if (rows->rows[i].status == R_FAIL &&
               strstr(rows->rows[i].detail, "strict placement")) {
      ++ran;
    }
  }
  const char* name = "refusal: unregistered dtypes when planned";
  if (ran)
    add_row(checks, name, "", R_FAIL, "%d op x dtype pairs ran without a kernel", ran);
  else if (refused)
    add_row(checks, name, "", R_PASS,
            "%d op x dtype pairs not provided, each refused under strict "
            "placement%s", refused, unchecked ? " (others without a recipe)" : "");
  else
    add_row(checks, name, "", R_NOT_CHECKED,
            "the plugin provides every dtype the CPU has for its ops");
}

/* ---- The contract through the plugin's table ----------------------------- *
 *
 * Run in a child process (this program again, with the internal option
 * --table-child) that opens the plugin with dlopen and plays a minimal
 * host of interface 1.0, without kernels: a plugin that crashes or hangs
 * here is reported, not suffered.  The child prints one line per check,
 * "RESULT<TAB>NAME<TAB>DETAIL", after "begin<TAB>NAME" so that a crash can
 * be placed. */

static void say(const char* result_name, const char* name, const char* format,
                ...) __attribute__((format(printf, 3, 4)));
static void say(const char* result_name, const char* name, const char* format,
                ...) {
  char detail[400];
  va_list args;
  va_start(args, format);
  vsnprintf(detail, sizeof detail, format, args);
  va_end(args);
  for (char* c = detail; *c; ++c)
    if (*c == '\n' || *c == '\t') *c = ' ';
  printf("%s\t%s\t%s\n", result_name, name, detail);
  fflush(stdout);
}

static weft_status* stub_status_create(int32_t code, const char* message) {
  return weft_status_create((weft_code)code, message);
}
static void stub_log(int32_t level, const char* message) {
  (void)level;
  (void)message;
}
static weft_status* stub_register(weft_kernel_registrar* r,
                                  const weft_kernel_def* def) {
  (void)r;
  (void)def;
  return NULL; /* kernels are the sessions' business, not this host's */
}
static weft_status* stub_unavailable(void) {
  return weft_status_create(WEFT_UNIMPLEMENTED,
                            "the conformance host runs no kernels");
}
static const char* stub_name(const weft_kernel_context* c) { (void)c; return ""; }
static int32_t stub_count(const weft_kernel_context* c) { (void)c; return 0; }
static weft_status* stub_input(const weft_kernel_context* c, int32_t i,
                               weft_kernel_tensor* o) {
  (void)c; (void)i; (void)o;
  return stub_unavailable();
}
static weft_status* stub_allocate(weft_kernel_context* c, int32_t i, int32_t d,
                                  const int64_t* dims, int32_t r,
                                  weft_kernel_tensor* o) {
  (void)c; (void)i; (void)d; (void)dims; (void)r; (void)o;
  return stub_unavailable();
}
static weft_status* stub_forward(weft_kernel_context* c, int32_t i, int32_t o,
                                 const int64_t* dims, int32_t r) {
  (void)c; (void)i; (void)o; (void)dims; (void)r;
  return stub_unavailable();
}
#define STUB_ATTR(fn, type)                                              \
  static weft_status* fn(const weft_kernel_context* c, const char* n,    \
                         type o) {                                       \
    (void)c; (void)n; (void)o;                                           \
    return stub_unavailable();                                           \
  }
STUB_ATTR(stub_attr_int, int64_t*)
STUB_ATTR(stub_attr_float, double*)
STUB_ATTR(stub_attr_bool, int32_t*)
STUB_ATTR(stub_attr_dtype, int32_t*)
STUB_ATTR(stub_attr_string, const char**)
static weft_status* stub_attr_int_list(const weft_kernel_context* c,
                                       const char* n, const int64_t** o,
                                       int32_t* k) {
  (void)c; (void)n; (void)o; (void)k;
  return stub_unavailable();
}
static weft_status* stub_attr_float_list(const weft_kernel_context* c,
                                         const char* n, const double** o,
                                         int32_t* k) {
  (void)c; (void)n; (void)o; (void)k;
  return stub_unavailable();
}
static weft_plugin_device* stub_device(const weft_kernel_context* c) {
  (void)c;
  return NULL;
}
static weft_plugin_stream* stub_stream(const weft_kernel_context* c) {
  (void)c;
  return NULL;
}
static int32_t stub_threads(const weft_kernel_context* c) { (void)c; return 1; }
static void stub_status_destroy(weft_status* s) { weft_status_destroy(s); }
static int32_t stub_status_code(const weft_status* s) {
  return weft_status_code(s);
}
static uint64_t stub_run_counter(const weft_kernel_context* c) {
  (void)c;
  return 0;
}

static const weft_host_api kStubHost = {
    .struct_size = offsetof(weft_host_api, register_gradient),
    .status_create = stub_status_create,
    .log = stub_log,
    .register_kernel = stub_register,
    .kernel_node_name = stub_name,
    .kernel_op = stub_name,
    .kernel_num_inputs = stub_count,
    .kernel_num_outputs = stub_count,
    .kernel_input = stub_input,
    .kernel_allocate_output = stub_allocate,
    .kernel_forward_input = stub_forward,
    .kernel_attr_int = stub_attr_int,
    .kernel_attr_float = stub_attr_float,
    .kernel_attr_bool = stub_attr_bool,
    .kernel_attr_dtype = stub_attr_dtype,
    .kernel_attr_string = stub_attr_string,
    .kernel_attr_int_list = stub_attr_int_list,
    .kernel_attr_float_list = stub_attr_float_list,
    .kernel_device = stub_device,
    .kernel_stream = stub_stream,
    .kernel_intra_op_threads = stub_threads,
    .status_destroy = stub_status_destroy,
    .status_code = stub_status_code,
    .kernel_run_counter = stub_run_counter,
};

static weft_status* enter_plugin(weft_plugin_entry_fn entry, uint32_t lo,
                                 uint32_t hi, weft_plugin_init_args* args) {
  static int registrar_token;
  memset(args, 0, sizeof *args);
  args->struct_size = sizeof *args;
  args->host_min_version = lo;
  args->host_max_version = hi;
  args->host = &kStubHost;
  args->registrar = (weft_kernel_registrar*)&registrar_token;
  args->chosen_version = 0xdeadbeefu;
  return entry(args);
}

/* Describes a failed slot call and releases the status. */
static const char* failed(weft_status* status, char* out, size_t size) {
  return status_text(status, out, size);
}

#define TABLE_CHECK(name) say("begin", name, "%s", "")

static void table_copies(const weft_plugin_api* api, weft_plugin_device* dev) {
  const char* name = "table: copies at offsets, no stream";
  TABLE_CHECK(name);
  enum { BYTES = 1 << 20 };
  unsigned char *src = malloc(BYTES), *back = malloc(BYTES);
  void *a = NULL, *b = NULL;
  char text[400];
  weft_status* st = NULL;
  if (src == NULL || back == NULL) {
    say("FAIL", name, "out of host memory");
    goto done;
  }
  uint64_t rng = 5;
  for (size_t i = 0; i < BYTES; ++i) src[i] = (unsigned char)(weft_tool_random(&rng) >> 56);
  memset(back, 0, BYTES);
  if ((st = api->memory_allocate(dev, BYTES, &a)) ||
      (st = api->memory_allocate(dev, BYTES, &b)) ||
      (st = api->copy_host_to_device(dev, NULL, src, a, 0, BYTES)) ||
      (st = api->copy_device_to_device(dev, NULL, a, 64, b, 128, 1000)) ||
      (st = api->copy_device_to_host(dev, NULL, b, 128, back, 1000)) ||
      (st = api->copy_device_to_host(dev, NULL, a, 0, back + 1000, BYTES - 1000))) {
    say("FAIL", name, "%s", failed(st, text, sizeof text));
  } else if (memcmp(back, src + 64, 1000) != 0 ||
             memcmp(back + 1000, src, BYTES - 1000) != 0) {
    say("FAIL", name, "bytes differ after host -> device -> device -> host");
  } else {
    say("pass", name, "1 MiB host -> device, 1000 bytes device -> device "
        "(offsets 64 -> 128), back to the host: byte-exact");
  }
done:
  if (a) api->memory_free(dev, a);
  if (b) api->memory_free(dev, b);
  free(src);
  free(back);
}

static void table_exhaustion(const weft_plugin_api* api,
                             weft_plugin_device* dev) {
  const char* name = "table: refusal: an impossible allocation";
  TABLE_CHECK(name);
  void* handle = NULL;
  weft_status* st = api->memory_allocate(dev, UINT64_C(1) << 52, &handle);
  char text[400];
  if (st == NULL) {
    say("FAIL", name, "4 PiB allocated without an error");
    if (handle) api->memory_free(dev, handle);
  } else {
    int code = weft_status_code(st);
    say(code == WEFT_RESOURCE_EXHAUSTED ? "pass" : "FAIL", name,
        "4 PiB: %s%s", failed(st, text, sizeof text),
        code == WEFT_RESOURCE_EXHAUSTED ? "" : " (want RESOURCE_EXHAUSTED)");
  }
}

static void table_streams(const weft_plugin_api* api, weft_plugin_device* dev) {
  const char* names[2] = {"table: copies on a stream",
                          "table: events across streams"};
  if (api->stream_create == NULL) {
    for (int i = 0; i < 2; ++i)
      say("not checked", names[i], "a synchronous device (no streams)");
    return;
  }
  enum { N = 1 << 18 };
  char text[400];
  unsigned char *data = malloc(N), *fresh = malloc(N), *back = malloc(N),
                *scratch = malloc(N);
  weft_plugin_stream *s1 = NULL, *s2 = NULL;
  weft_plugin_event *ready = NULL, *never = NULL;
  void *a = NULL, *b = NULL;
  weft_status* st = NULL;
  TABLE_CHECK(names[0]);
  if (!data || !fresh || !back || !scratch) {
    say("FAIL", names[0], "out of host memory");
    goto done;
  }
  uint64_t rng = 9;
  for (size_t i = 0; i < N; ++i) {
    data[i] = (unsigned char)(weft_tool_random(&rng) >> 56);
    fresh[i] = (unsigned char)~data[i];
  }
  if ((st = api->stream_create(dev, &s1)) || (st = api->stream_create(dev, &s2)) ||
      (st = api->memory_allocate(dev, N, &a)) ||
      (st = api->memory_allocate(dev, N, &b)) ||
      (st = api->copy_host_to_device(dev, s1, data, a, 0, N)) ||
      (st = api->copy_device_to_device(dev, s1, a, 0, b, 0, N)) ||
      (st = api->copy_device_to_host(dev, s1, b, 0, back, N)) ||
      (st = api->stream_synchronize(dev, s1))) {
    say("FAIL", names[0], "%s", failed(st, text, sizeof text));
    goto done;
  }
  if (memcmp(back, data, N) != 0) {
    say("FAIL", names[0], "bytes differ after stream_synchronize");
    goto done;
  }
  say("pass", names[0], "host -> device -> device -> host queued on one "
      "stream, complete and byte-exact after stream_synchronize");
  TABLE_CHECK(names[1]);
  /* The producer's write comes after slow reads; the consumer's read
   * must wait for the event recorded after it. */
  memset(back, 0, N);
  for (int i = 0; i < 4 && st == NULL; ++i)
    st = api->copy_device_to_host(dev, s1, a, 0, scratch, N);
  if (st || (st = api->copy_host_to_device(dev, s1, fresh, a, 0, N)) ||
      (st = api->event_create(dev, &ready)) ||
      (st = api->event_record(dev, ready, s1)) ||
      (st = api->stream_wait_event(dev, s2, ready)) ||
      (st = api->copy_device_to_host(dev, s2, a, 0, back, N)) ||
      (st = api->stream_synchronize(dev, s2)) ||
      (st = api->event_synchronize(dev, ready)) ||
      (st = api->event_create(dev, &never)) ||
      (st = api->event_synchronize(dev, never)) ||
      (st = api->stream_wait_event(dev, s2, never)) ||
      (st = api->stream_synchronize(dev, s2)) ||
      (st = api->stream_synchronize(dev, s1))) {
    say("FAIL", names[1], "%s", failed(st, text, sizeof text));
  } else if (memcmp(back, fresh, N) != 0) {
    say("FAIL", names[1], "a stream waiting on another's event read before "
        "the write the event follows");
  } else {
    say("pass", names[1], "a wait on another stream's event orders a read "
        "after that stream's write; an unrecorded event is complete");
  }
done:
  if (ready) api->event_destroy(dev, ready);
  if (never) api->event_destroy(dev, never);
  if (s1) api->stream_destroy(dev, s1);
  if (s2) api->stream_destroy(dev, s2);
  if (a) api->memory_free(dev, a);
  if (b) api->memory_free(dev, b);
  free(data);
  free(fresh);
  free(back);
  free(scratch);
}

int table_child(const char* path) {
  alarm(120); /* a hang is reported as one */
  const char* name = "table: negotiation";
  TABLE_CHECK(name);
  void* dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    say("FAIL", name, "dlopen: %s", dlerror());
    return 0;
  }
  void* symbol = dlsym(dl, WEFT_PLUGIN_ENTRY_NAME);
  if (symbol == NULL) {
    say("FAIL", name, "no %s symbol", WEFT_PLUGIN_ENTRY_NAME);
    return 0;
  }
  weft_plugin_entry_fn entry;
  memcpy(&entry, &symbol, sizeof entry);
  weft_plugin_init_args args;
  char text[400];
  weft_status* st = enter_plugin(entry, WEFT_VERSION_PACK(9, 0),
                                 WEFT_VERSION_PACK(9, 1), &args);
  if (st == NULL || args.chosen_version == 0xdeadbeefu) {
    say("FAIL", name, "a host speaking only 9.0-9.1 was %s%s",
        st == NULL ? "accepted" : "refused",
        args.chosen_version == 0xdeadbeefu ? " without writing chosen_version" : "");
    weft_status_destroy(st);
    return 0;
  }
  weft_status_destroy(st);
  st = enter_plugin(entry, WEFT_VERSION_PACK(1, 0), WEFT_VERSION_PACK(1, 0),
                    &args);
  if (st != NULL || args.plugin == NULL) {
    say("not checked", name, "the plugin does not speak interface 1.0 to "
        "this minimal host (%s)", st ? failed(st, text, sizeof text) : "no table");
    return 0;
  }
  const weft_plugin_api* api = args.plugin;
  if (api->device_type == NULL || api->device_count == NULL) {
    say("not checked", name, "a plugin of ops only: no device table");
    return 0;
  }
  say("pass", name, "an unknown major refused, 1.0 chosen from 1.0-1.0, "
      "table of %zu bytes", api->struct_size);
  int32_t count = 0;
  st = api->device_count(&count);
  if (st != NULL || count <= 0) {
    say("no device", "table: devices", "%s",
        st ? failed(st, text, sizeof text) : "device_count is 0");
    return 0;
  }
  weft_plugin_device* dev = NULL;
  TABLE_CHECK("table: devices");
  if ((st = api->device_open(0, &dev)) != NULL || dev == NULL) {
    say("FAIL", "table: devices", "device_open(0): %s",
        st ? failed(st, text, sizeof text) : "NULL device");
    return 0;
  }
  say("pass", "table: devices", "%d device%s; device 0 opens", count,
      count == 1 ? "" : "s");
  table_copies(api, dev);
  table_exhaustion(api, dev);
  table_streams(api, dev);
  api->device_close(dev);
  return 0;
}

/* Runs the child and turns its lines into check rows. */
void check_contract_table(const char* path, row_list* checks) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    add_row(checks, "table checks", "", R_NOT_CHECKED, "pipe: %s",
            strerror(errno));
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    char* argv[] = {"weft", "conformance", "--table-child", (char*)path, NULL};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(pipe_fds[1]);
  if (pid < 0) {
    close(pipe_fds[0]);
    add_row(checks, "table checks", "", R_NOT_CHECKED, "fork: %s",
            strerror(errno));
    return;
  }
  FILE* in = fdopen(pipe_fds[0], "r");
  char line[1024], last_begun[128] = "";
  int open_check = 0;
  while (in != NULL && fgets(line, sizeof line, in) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    char* name = strchr(line, '\t');
    if (name == NULL) continue;
    *name++ = '\0';
    char* detail = strchr(name, '\t');
    if (detail == NULL) continue;
    *detail++ = '\0';
    if (strcmp(line, "begin") == 0) {
      snprintf(last_begun, sizeof last_begun, "%s", name);
      open_check = 1;
      continue;
    }
    result r = R_NOT_CHECKED;
    for (int k = 0; k < R_COUNT; ++k)
      if (strcmp(line, kResultNames[k]) == 0) r = (result)k;
    add_row(checks, name, "", r, "%s", detail);
    open_check = strcmp(name, last_begun) != 0 && last_begun[0];
  }
  if (in) fclose(in);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (WIFSIGNALED(wstatus)) {
    add_row(checks, open_check ? last_begun : "table checks", "", R_FAIL,
            "the plugin killed the host process (signal %d%s)",
            WTERMSIG(wstatus),
            WTERMSIG(wstatus) == SIGALRM ? ": hung for 120 s" : "");
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
    add_row(checks, "table checks", "", R_NOT_CHECKED,
            "could not run this program again (/proc/self/exe)");
  }
}

