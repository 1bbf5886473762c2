/* Helpers shared by the OpenCL op tests (tests/test_opencl_*.c, one
 * executable each).  The OpenCL plugin's kernels against the CPU plugin's:
 * every graph runs in a session restricted to /device:OPENCL:0 with strict
 * placement (so every node must have an OpenCL kernel) and in a session on
 * the CPU, and the results must agree: within float tolerance for
 * arithmetic, bit for bit for Cast and for integers.  Where no OpenCL
 * device exists (no ICD loader, no platform), every case reports itself
 * skipped with the plugin's reason.  On this project's machines the device
 * is PoCL's CPU device. */
#ifndef WEFT_TEST_OPENCL_SUPPORT_H_
#define WEFT_TEST_OPENCL_SUPPORT_H_

#include <stdint.h>

#include "test_support.h"

#define OCL "/device:OPENCL:0"

/* The suite's init: every file says
 * TestSuite(opencl, .init = discover, .timeout = 240). */
void discover(void);

/* NULL when /device:OPENCL:0 exists; else why not, for the skip line. */
const char* opencl_missing(void);

#define REQUIRE_OPENCL()                        \
  do {                                          \
    const char* why_ = opencl_missing();        \
    if (why_ != NULL) WT_SKIP(why_);            \
  } while (0)

/* ---- Running a graph on both devices ----------------------------------- */

#define MAX_FETCHES 4

typedef struct run_set {
  weft_output feeds[4];
  weft_tensor* values[4];
  int32_t num_feeds;
  weft_output fetches[MAX_FETCHES];
  int32_t num_fetches;
} run_set;

weft_session* session_on(weft_graph* graph, const char* devices);

/* Runs `set` on `devices`; returns the run's status, outputs into outs. */
weft_status* run_on(weft_graph* graph, const char* devices,
                    const run_set* set, weft_tensor** outs);

double element(const weft_tensor* t, int64_t k);

/* Same dtype and shape, then elements within abs_tol + rel_tol * |cpu|
 * (NaN only against NaN); tolerances 0 compare the bytes. */
void expect_match(const weft_tensor* ocl, const weft_tensor* cpu,
                  double abs_tol, double rel_tol, const char* what);

/* Runs `set` on both devices and compares every fetch. */
void compare(weft_graph* graph, run_set* set, double abs_tol,
             double rel_tol, const char* what);

void release(run_set* set);

/* A placeholder fed with `value` (the set takes the tensor). */
weft_output feed(weft_graph* graph, run_set* set, const char* name,
                 weft_tensor* value);

int64_t count_of(const int64_t* dims, int32_t rank);

/* float32 values uniform in [lo, hi). */
weft_tensor* random_f32(wt_rng* rng, const int64_t* dims, int32_t rank,
                        float lo, float hi);

/* int32 values in [lo, hi]. */
weft_tensor* random_i32(wt_rng* rng, const int64_t* dims, int32_t rank,
                        int32_t lo, int32_t hi);

/* A tensor of `dtype` whose every byte is drawn from `alphabet` (any byte
 * when it is NULL): inputs for kernels that compare or move bytes. */
weft_tensor* random_bytes(wt_rng* rng, weft_dtype dtype, const int64_t* dims,
                          int32_t rank, const uint8_t* alphabet,
                          int alphabet_size);

/* ---- Building nodes ----------------------------------------------------- */

/* A Cast of `x` to `to`. */
weft_output cast(weft_graph* graph, const char* name, weft_output x,
                 weft_dtype to);

/* Finishes builder `b` and returns its output `index`. */
weft_output finish(weft_op_builder* b, int32_t index);

/* ---- Shapes and axes that several families run over -------------------- */

/* Pairs of operand shapes that broadcast: element-wise ops, comparisons. */
typedef struct shape_pair {
  int64_t x[4];
  int32_t x_rank;
  int64_t y[4];
  int32_t y_rank;
} shape_pair;

extern const shape_pair kBroadcastShapes[7];

/* Axes of a rank-3 value to reduce over: reductions and their gradients. */
typedef struct axes_case {
  int64_t axes[3];
  int32_t count;
  int has_axes;
} axes_case;

extern const axes_case kAxes[8];

#endif /* WEFT_TEST_OPENCL_SUPPORT_H_ */
