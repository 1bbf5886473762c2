/* Helpers shared by the Weft tests.
 *
 * Everything here speaks the public API only.  Failures are reported with
 * Criterion asserts, so a helper can only be called from the thread running
 * a test (Criterion aborts a test by unwinding that thread); worker threads
 * collect their results and let the test thread assert.
 */
#ifndef WEFT_TEST_SUPPORT_H_
#define WEFT_TEST_SUPPORT_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "weft/plugin.h"
#include "weft/weft.h"

/* Dims as a compound literal, and their count, so a shape is written once. */
#define WT_DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define WT_RANK(...) \
  ((int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define WT_SHAPE(...) WT_DIMS(__VA_ARGS__), WT_RANK(__VA_ARGS__)

/* Fails the test, with the call and the status message, unless `expr`
 * returned OK. */
#define WT_OK(expr) wt_check_ok((expr), #expr, __FILE__, __LINE__)

/* Fails the test unless `expr` returned an error of `code` whose message
 * contains every string given (NULL-terminated internally). */
#define WT_EXPECT_ERROR(expr, code, ...)                                   \
  wt_expect_error((expr), (code), #expr, __FILE__, __LINE__, __VA_ARGS__, \
                  (const char*)NULL)
#define WT_EXPECT_CODE(expr, code)                                  \
  wt_expect_error((expr), (code), #expr, __FILE__, __LINE__,        \
                  (const char*)NULL)

/* Reports a test that cannot run here as skipped, never as passed. */
#define WT_SKIP(reason)                               \
  do {                                                \
    fprintf(stderr, "skipped: %s\n", (reason));       \
    fflush(stderr);                                   \
    cr_skip_test("%s", (reason));                     \
  } while (0)

void wt_check_ok(weft_status* status, const char* expr, const char* file,
                 int line);
void wt_expect_error(weft_status* status, weft_code code, const char* expr,
                     const char* file, int line, ...);

/* Bytes per element, from the tests' own table rather than the library's. */
size_t wt_dtype_bytes(weft_dtype dtype);

/* A tensor holding a copy of `data` (which may be NULL for zeros). */
weft_tensor* wt_tensor(weft_dtype dtype, const int64_t* dims, int32_t rank,
                       const void* data);
weft_tensor* wt_scalar_f32(float value);

weft_graph* wt_graph_new(void);
/* A session over `graph`; `devices` NULL means every device. */
weft_session* wt_session_new(weft_graph* graph, const char* devices);
/* A session on /device:CPU:0 with these thread counts. */
weft_session* wt_session_threads(weft_graph* graph, int32_t inter_op,
                                 int32_t intra_op);

/* The tail every one-op test harness shares: finishes builder `b` of
 * `graph`, runs the node alone on /device:CPU:0 with `intra_op_threads`
 * (0: the default), feeding feeds[i] with values[i], and fetches its first
 * `num_outputs` outputs (at most 8) into outs.  Returns the status of the
 * finish or of the run; destroys neither the graph nor the values. */
weft_status* wt_finish_and_run(weft_graph* graph, weft_op_builder* b,
                               const weft_output* feeds,
                               weft_tensor* const* values, int32_t num_feeds,
                               int32_t intra_op_threads, int32_t num_outputs,
                               weft_tensor** outs);

weft_output wt_placeholder(weft_graph* graph, const char* name,
                           weft_dtype dtype, const int64_t* dims,
                           int32_t rank);
/* A Const node; consumes the caller's handle on `value`. */
weft_output wt_const(weft_graph* graph, const char* name, weft_tensor* value);
weft_output wt_const_f32(weft_graph* graph, const char* name,
                         const int64_t* dims, int32_t rank,
                         const float* data);
weft_output wt_apply1(weft_graph* graph, const char* op, const char* name,
                      weft_output x);
weft_output wt_apply2(weft_graph* graph, const char* op, const char* name,
                      weft_output x, weft_output y);

/* Runs and returns the single fetched tensor (owned by the caller). */
weft_tensor* wt_run1(weft_session* session, const weft_output* feeds,
                     weft_tensor* const* values, int32_t num_feeds,
                     weft_output fetch);
/* Runs `targets` for their effect. */
void wt_run_targets(weft_session* session, weft_node* const* targets,
                    int32_t num_targets);

/* Asserts the tensor's dtype and shape. */
void wt_expect_shape(const weft_tensor* tensor, weft_dtype dtype,
                     const int64_t* dims, int32_t rank);
/* Asserts a and b have the same dtype, shape and bytes ("values differ"
 * naming `what` otherwise). */
void wt_expect_same_bits(const weft_tensor* a, const weft_tensor* b,
                         const char* what);
/* Asserts every float32 element is within abs_tol + rel_tol*|ref| of ref;
 * NaN matches only NaN and infinities match only themselves. */
void wt_expect_f32(const weft_tensor* tensor, const double* ref, int64_t n,
                   double abs_tol, double rel_tol);

/* The threads of this process (entries of /proc/self/task), to show that
 * work leaves none behind. */
int wt_thread_count(void);
/* wt_thread_count once the threads already joined have left the list:
 * pthread_join returns before the kernel drops the task.  _settled reads
 * until the count stops changing (a baseline taken right after joins);
 * _down_to polls for up to 10 s while it is above `expected`. */
int wt_thread_count_settled(void);
int wt_thread_count_down_to(int expected);

/* Ops a test defines with its own kernels (weft_op_register): one float32
 * input x, one float32 output y of x's shape (wt_shape_like_input0), and
 * the attribute "mode: int = 0" the test's kernels read to choose what to
 * do.  Registers the op and `kernel` (its struct_size and entry points set
 * by the caller; `op` is set here) on the CPU. */
weft_status* wt_shape_like_input0(void* arg, weft_shape_context* ctx);
void wt_register_mode_op(const char* name, const char* summary, int stateful,
                         weft_kernel_def* kernel);
/* A node of such an op on `x` with attribute mode = `mode`. */
weft_output wt_apply_mode(weft_graph* graph, const char* op, const char* name,
                          weft_output x, int64_t mode);

/* NULL when /device:OPENCL:0 exists, else why not (for WT_SKIP). */
const char* wt_no_opencl(void);

/* A small deterministic generator (splitmix64) so inputs are the same on
 * every machine and libc. */
typedef struct wt_rng {
  uint64_t state;
} wt_rng;
uint64_t wt_rng_next(wt_rng* rng);
float wt_rng_uniform(wt_rng* rng, float lo, float hi);
void wt_rng_fill(wt_rng* rng, float* out, int64_t n, float lo, float hi);

#endif /* WEFT_TEST_SUPPORT_H_ */
