#define _DEFAULT_SOURCE /* nanosleep */
#include "test_support.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void wt_check_ok(weft_status* status, const char* expr, const char* file,
                 int line) {
  if (status == NULL) return;
  char message[1024];
  snprintf(message, sizeof message, "%s:%d: %s returned %s: %s", file, line,
           expr, weft_code_name(weft_status_code(status)),
           weft_status_message(status));
  weft_status_destroy(status);
  cr_assert_fail("%s", message);
}

void wt_expect_error(weft_status* status, weft_code code, const char* expr,
                     const char* file, int line, ...) {
  cr_assert_not_null(status, "%s:%d: %s succeeded; expected %s", file, line,
                     expr, weft_code_name(code));
  weft_code got = weft_status_code(status);
  char message[1024];
  snprintf(message, sizeof message, "%s", weft_status_message(status));
  weft_status_destroy(status);
  cr_assert_eq(got, code, "%s:%d: %s returned %s, expected %s: \"%s\"", file,
               line, expr, weft_code_name(got), weft_code_name(code), message);
  va_list needles;
  va_start(needles, line);
  for (const char* needle = va_arg(needles, const char*); needle != NULL;
       needle = va_arg(needles, const char*)) {
    if (strstr(message, needle) == NULL) {
      va_end(needles);
      cr_assert_fail("%s:%d: the message of %s does not name \"%s\": \"%s\"",
                     file, line, expr, needle, message);
    }
  }
  va_end(needles);
}

size_t wt_dtype_bytes(weft_dtype dtype) {
  switch (dtype) {
    case WEFT_FLOAT64:
    case WEFT_INT64:
    case WEFT_UINT64:
      return 8;
    case WEFT_FLOAT32:
    case WEFT_INT32:
    case WEFT_UINT32:
      return 4;
    case WEFT_FLOAT16:
    case WEFT_BFLOAT16:
    case WEFT_INT16:
    case WEFT_UINT16:
      return 2;
    case WEFT_UINT8:
    case WEFT_INT8:
    case WEFT_BOOL:
      return 1;
    default:
      return 0;
  }
}

weft_tensor* wt_tensor(weft_dtype dtype, const int64_t* dims, int32_t rank,
                       const void* data) {
  weft_tensor* tensor = NULL;
  if (data == NULL) {
    WT_OK(weft_tensor_create(dtype, dims, rank, &tensor));
  } else {
    size_t bytes = wt_dtype_bytes(dtype);
    for (int32_t i = 0; i < rank; ++i) bytes *= (size_t)dims[i];
    WT_OK(weft_tensor_create_copy(dtype, dims, rank, data, bytes, &tensor));
  }
  cr_assert_not_null(tensor);
  return tensor;
}

weft_tensor* wt_scalar_f32(float value) {
  return wt_tensor(WEFT_FLOAT32, NULL, 0, &value);
}

weft_graph* wt_graph_new(void) {
  weft_graph* graph = NULL;
  WT_OK(weft_graph_create(&graph));
  cr_assert_not_null(graph);
  return graph;
}

weft_session* wt_session_new(weft_graph* graph, const char* devices) {
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = devices;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  cr_assert_not_null(session);
  return session;
}

weft_session* wt_session_threads(weft_graph* graph, int32_t inter_op,
                                 int32_t intra_op) {
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "/device:CPU:0";
  options.inter_op_threads = inter_op;
  options.intra_op_threads = intra_op;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  cr_assert_not_null(session);
  return session;
}

weft_status* wt_finish_and_run(weft_graph* graph, weft_op_builder* b,
                               const weft_output* feeds,
                               weft_tensor* const* values, int32_t num_feeds,
                               int32_t intra_op_threads, int32_t num_outputs,
                               weft_tensor** outs) {
  weft_node* node = NULL;
  weft_status* status = weft_op_finish(b, &node);
  if (status != NULL) return status;
  cr_assert(num_outputs >= 0 && num_outputs <= 8);
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "/device:CPU:0";
  options.intra_op_threads = intra_op_threads;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  weft_output fetches[8];
  for (int32_t i = 0; i < num_outputs; ++i) fetches[i] = (weft_output){node, i};
  status = weft_session_run(session, feeds, values, num_feeds, fetches,
                            num_outputs, NULL, 0, outs);
  weft_session_destroy(session);
  return status;
}

weft_output wt_placeholder(weft_graph* graph, const char* name,
                           weft_dtype dtype, const int64_t* dims,
                           int32_t rank) {
  weft_output out = {NULL, -1};
  WT_OK(weft_graph_placeholder(graph, name, dtype, dims, rank, &out));
  cr_assert_not_null(out.node);
  return out;
}

weft_output wt_const(weft_graph* graph, const char* name, weft_tensor* value) {
  weft_output out = {NULL, -1};
  WT_OK(weft_graph_constant(graph, name, value, &out));
  weft_tensor_destroy(value);
  cr_assert_not_null(out.node);
  return out;
}

weft_output wt_const_f32(weft_graph* graph, const char* name,
                         const int64_t* dims, int32_t rank,
                         const float* data) {
  return wt_const(graph, name, wt_tensor(WEFT_FLOAT32, dims, rank, data));
}

weft_output wt_apply1(weft_graph* graph, const char* op, const char* name,
                      weft_output x) {
  weft_output out = {NULL, -1};
  WT_OK(weft_graph_apply(graph, op, name, &x, 1, &out));
  cr_assert_not_null(out.node);
  return out;
}

weft_output wt_apply2(weft_graph* graph, const char* op, const char* name,
                      weft_output x, weft_output y) {
  weft_output inputs[2] = {x, y};
  weft_output out = {NULL, -1};
  WT_OK(weft_graph_apply(graph, op, name, inputs, 2, &out));
  cr_assert_not_null(out.node);
  return out;
}

weft_tensor* wt_run1(weft_session* session, const weft_output* feeds,
                     weft_tensor* const* values, int32_t num_feeds,
                     weft_output fetch) {
  weft_tensor* result = NULL;
  WT_OK(weft_session_run(session, feeds, values, num_feeds, &fetch, 1, NULL,
                         0, &result));
  cr_assert_not_null(result);
  return result;
}

void wt_run_targets(weft_session* session, weft_node* const* targets,
                    int32_t num_targets) {
  WT_OK(weft_session_run(session, NULL, NULL, 0, NULL, 0, targets,
                         num_targets, NULL));
}

void wt_expect_shape(const weft_tensor* tensor, weft_dtype dtype,
                     const int64_t* dims, int32_t rank) {
  cr_assert_not_null(tensor);
  cr_assert_eq(weft_tensor_dtype(tensor), dtype, "dtype %s, expected %s",
               weft_dtype_name(weft_tensor_dtype(tensor)),
               weft_dtype_name(dtype));
  cr_assert_eq(weft_tensor_rank(tensor), rank, "rank %d, expected %d",
               weft_tensor_rank(tensor), rank);
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    cr_assert_eq(weft_tensor_dim(tensor, i), dims[i],
                 "dim %d is %lld, expected %lld", i,
                 (long long)weft_tensor_dim(tensor, i), (long long)dims[i]);
    count *= dims[i];
  }
  cr_assert_eq(weft_tensor_element_count(tensor), count);
  cr_assert_eq(weft_tensor_byte_size(tensor),
               (size_t)count * wt_dtype_bytes(dtype));
}

void wt_expect_f32(const weft_tensor* tensor, const double* ref, int64_t n,
                   double abs_tol, double rel_tol) {
  cr_assert_eq(weft_tensor_dtype(tensor), WEFT_FLOAT32);
  cr_assert_eq(weft_tensor_element_count(tensor), n);
  const float* got = weft_tensor_data(tensor);
  for (int64_t i = 0; i < n; ++i) {
    double g = got[i], r = ref[i];
    if (isnan(r)) {
      cr_assert(isnan(g), "element %lld is %g, expected NaN", (long long)i, g);
    } else if (isinf(r)) {
      cr_assert(g == r, "element %lld is %g, expected %g", (long long)i, g, r);
    } else {
      cr_assert(fabs(g - r) <= abs_tol + rel_tol * fabs(r),
                "element %lld is %.9g, expected %.9g", (long long)i, g, r);
    }
  }
}

uint64_t wt_rng_next(wt_rng* rng) {
  uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float wt_rng_uniform(wt_rng* rng, float lo, float hi) {
  /* 24 random bits: exactly representable in a float. */
  float unit = (float)(wt_rng_next(rng) >> 40) / 16777216.0f;
  return lo + (hi - lo) * unit;
}

void wt_rng_fill(wt_rng* rng, float* out, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) out[i] = wt_rng_uniform(rng, lo, hi);
}

const char* wt_no_opencl(void) {
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (d.name != NULL && strcmp(d.name, "/device:OPENCL:0") == 0) return NULL;
  }
  return "no OpenCL device (the weft-opencl plugin found none here)";
}

int wt_thread_count(void) {
  DIR* d = opendir("/proc/self/task");
  cr_assert_not_null(d, "cannot list /proc/self/task");
  int n = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

int wt_thread_count_settled(void) {
  /* Threads joined just before may still be listed (below): read until
   * two readings 20 ms apart agree, up to 2 s. */
  int n = wt_thread_count();
  for (int waited_ms = 0; waited_ms < 2000; waited_ms += 20) {
    struct timespec twenty_ms = {0, 20000000};
    nanosleep(&twenty_ms, NULL);
    const int again = wt_thread_count();
    if (again == n) break;
    n = again;
  }
  return n;
}

int wt_thread_count_down_to(int expected) {
  /* pthread_join returns when the kernel clears the thread's tid (in
   * mm_release, early in its exit); the task leaves /proc/self/task only
   * later, when it is released.  On a loaded machine that gap has been
   * seen to outlast a test's next line, so wait for it, up to 10 s: a
   * thread really left running never goes. */
  int n = wt_thread_count();
  for (int waited_ms = 0; n > expected && waited_ms < 10000; waited_ms += 5) {
    struct timespec five_ms = {0, 5000000};
    nanosleep(&five_ms, NULL);
    n = wt_thread_count();
  }
  return n;
}

weft_status* wt_shape_like_input0(void* arg, weft_shape_context* ctx) {
  (void)arg;
  int32_t rank = weft_shape_input_rank(ctx, 0);
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) dims[i] = weft_shape_input_dim(ctx, 0, i);
  return weft_shape_set_output(ctx, 0, dims, rank);
}

void wt_register_mode_op(const char* name, const char* summary, int stateful,
                         weft_kernel_def* kernel) {
  static const char* const in[] = {"x: float32"};
  static const char* const out[] = {"y: float32"};
  static const char* const attrs[] = {"mode: int = 0"};
  weft_op_def d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = name;
  d.summary = summary;
  d.inputs = in;
  d.num_inputs = 1;
  d.outputs = out;
  d.num_outputs = 1;
  d.attrs = attrs;
  d.num_attrs = 1;
  d.stateful = stateful;
  d.shape_fn = wt_shape_like_input0;
  WT_OK(weft_op_register(&d));
  kernel->op = name;
  WT_OK(weft_kernel_register("CPU", kernel));
}

weft_output wt_apply_mode(weft_graph* graph, const char* op, const char* name,
                          weft_output x, int64_t mode) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "mode", mode);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  return (weft_output){n, 0};
}

void wt_expect_same_bits(const weft_tensor* a, const weft_tensor* b,
                         const char* what) {
  cr_assert_eq(weft_tensor_dtype(a), weft_tensor_dtype(b));
  cr_assert_eq(weft_tensor_rank(a), weft_tensor_rank(b));
  for (int32_t i = 0; i < weft_tensor_rank(a); ++i)
    cr_assert_eq(weft_tensor_dim(a, i), weft_tensor_dim(b, i));
  cr_assert_eq(weft_tensor_byte_size(a), weft_tensor_byte_size(b));
  cr_assert(memcmp(weft_tensor_data(a), weft_tensor_data(b),
                   weft_tensor_byte_size(a)) == 0,
            "%s", what);
}
