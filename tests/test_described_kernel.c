/* Kernels called with their tensors described (plugin interface 1.8:
 * weft_kernel_def.compute_described and output_overwrites), written here as
 * a program's kernels for the op Test>Twice (y = 2x).  What is checked: a
 * node whose output shape is known at plan time gets one described call
 * with every input described and its output already made with the inferred
 * shape; a node whose shape is known only when it runs gets `compute`;
 * output 0 is handed an input's memory only where the kernel allows it and
 * nothing else reads the input (not a fetched value, not a feed); the
 * allocating calls are refused inside a described call; a def of the 1.7
 * size is called through `compute`.  And the CPU plugin's binary kernels
 * give the same values and errors on both paths. */
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"
#include "weft/plugin.h"
#include "weft/weft.h"

/* What the kernels saw, call by call. */
#define kMaxCalls 16
static struct call {
  int described;          /* 1: compute_described, 0: compute */
  int num_inputs, num_outputs;
  weft_kernel_tensor in;  /* input 0 as described (or read) */
  weft_kernel_tensor out; /* output 0 as given (or allocated) */
  weft_code refused;      /* mode 1: what kernel_allocate_output said */
} calls[kMaxCalls];
static int num_calls;

static const weft_host_api* host(void) { return weft_kernel_host(); }

static void twice(const weft_kernel_tensor* x, const weft_kernel_tensor* y) {
  const float* in = (const float*)((const char*)x->data + x->offset);
  float* out = (float*)((char*)y->data + y->offset);
  for (int64_t i = 0; i < x->element_count; ++i) out[i] = 2 * in[i];
}

static struct call* record(int described) {
  cr_assert_lt(num_calls, kMaxCalls);
  struct call* c = &calls[num_calls++];
  memset(c, 0, sizeof *c);
  c->described = described;
  return c;
}

static weft_status* twice_compute(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  struct call* c = record(0);
  c->num_inputs = host()->kernel_num_inputs(ctx);
  c->num_outputs = host()->kernel_num_outputs(ctx);
  c->in.struct_size = sizeof c->in;
  c->out.struct_size = sizeof c->out;
  weft_status* st = host()->kernel_input(ctx, 0, &c->in);
  if (st) return st;
  st = host()->kernel_forward_input_or_allocate(
      ctx, 0, 0, c->in.dtype, c->in.dims, c->in.rank, &c->out, NULL);
  if (st) return st;
  twice(&c->in, &c->out);
  return NULL;
}

static weft_status* twice_described(void* arg, weft_kernel_context* ctx,
                                    const weft_kernel_tensor* inputs,
                                    int32_t num_inputs,
                                    const weft_kernel_tensor* outputs,
                                    int32_t num_outputs) {
  (void)arg;
  struct call* c = record(1);
  c->num_inputs = num_inputs;
  c->num_outputs = num_outputs;
  c->in = inputs[0];
  c->out = outputs[0];
  int64_t mode = 0;
  weft_status* st = host()->kernel_attr_int(ctx, "mode", &mode);
  if (st) return st;
  if (mode == 1) {
    /* Misuse: allocating again.  What the host says is recorded. */
    weft_kernel_tensor extra;
    extra.struct_size = sizeof extra;
    weft_status* refused = host()->kernel_allocate_output(
        ctx, 0, inputs[0].dtype, inputs[0].dims, inputs[0].rank, &extra);
    c->refused = (weft_code)host()->status_code(refused);
    return refused;
  }
  twice(&inputs[0], &outputs[0]);
  return NULL;
}

static void register_op(const char* name, uint32_t overwrites, size_t size) {
  weft_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = size;
  k.compute = twice_compute;
  k.compute_described = twice_described;
  k.output_overwrites = overwrites;
  wt_register_mode_op(name, "2x", 0, &k);
}

static void setup(void) {
  static int registered;
  num_calls = 0;
  if (registered) return;
  registered = 1;
  register_op("Test>Twice", 1u, sizeof(weft_kernel_def));
  register_op("Test>TwiceFresh", 0u, sizeof(weft_kernel_def));
  /* A def built against the 1.7 header: no compute_described field. */
  register_op("Test>OldTwice", 1u,
              offsetof(weft_kernel_def, compute_described));
}

TestSuite(described_kernel, .init = setup);

static const float kX[6] = {1, 2, 3, 4, 5, 6};
static const int64_t kDims[2] = {2, 3};

static void expect_values(weft_tensor* t, float scale) {
  double want[6];
  for (int i = 0; i < 6; ++i) want[i] = scale * kX[i];
  wt_expect_shape(t, WEFT_FLOAT32, kDims, 2);
  wt_expect_f32(t, want, 6, 0, 0);
}

/* Runs op on a placeholder of shape `dims`/`rank` fed kX as [2,3]. */
static void run_one(const char* op, const int64_t* dims, int32_t rank) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, dims, rank);
  weft_output y = wt_apply_mode(g, op, "y", x, 0);
  weft_session* s = wt_session_threads(g, 0, 1);
  weft_tensor* feed = wt_tensor(WEFT_FLOAT32, kDims, 2, kX);
  weft_tensor* out = wt_run1(s, &x, &feed, 1, y);
  expect_values(out, 2);
  weft_tensor_destroy(out);
  weft_tensor_destroy(feed);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(described_kernel, a_known_shape_gets_one_call_with_every_tensor_made) {
  run_one("Test>Twice", kDims, 2);
  cr_assert_eq(num_calls, 1);
  const struct call* c = &calls[0];
  cr_assert_eq(c->described, 1, "compute, not compute_described, was called");
  cr_assert_eq(c->num_inputs, 1);
  cr_assert_eq(c->num_outputs, 1);
  cr_assert_eq(c->in.dtype, WEFT_FLOAT32);
  cr_assert_eq(c->in.rank, 2);
  cr_assert_eq(c->in.element_count, 6);
  cr_assert_eq(c->in.byte_size, 24);
  cr_assert_eq(c->out.dtype, WEFT_FLOAT32);
  cr_assert_eq(c->out.rank, 2);
  cr_assert_eq(c->out.element_count, 6);
  cr_assert_eq(c->out.byte_size, 24);
  cr_assert_not_null(c->out.data);
  /* A feed is the caller's: never handed to the output. */
  cr_assert_neq((const char*)c->out.data + c->out.offset,
                (const char*)c->in.data + c->in.offset);
}

Test(described_kernel, a_shape_known_only_when_running_gets_compute) {
  const int64_t batch_unknown[2] = {-1, 3};
  run_one("Test>Twice", batch_unknown, 2);
  run_one("Test>Twice", NULL, -1);
  cr_assert_eq(num_calls, 2);
  cr_assert_eq(calls[0].described, 0);
  cr_assert_eq(calls[1].described, 0);
}

Test(described_kernel, a_def_of_the_old_size_gets_compute) {
  run_one("Test>OldTwice", kDims, 2);
  cr_assert_eq(num_calls, 1);
  cr_assert_eq(calls[0].described, 0);
}

/* x -> a -> b, fetching b (and a too when `fetch_a`): returns whether b's
 * output was a's memory. */
static int chain_handed_over(const char* op, int fetch_a) {
  num_calls = 0;
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, kDims, 2);
  weft_output a = wt_apply_mode(g, op, "a", x, 0);
  weft_output b = wt_apply_mode(g, op, "b", a, 0);
  weft_session* s = wt_session_threads(g, 0, 1);
  weft_tensor* feed = wt_tensor(WEFT_FLOAT32, kDims, 2, kX);
  weft_output fetches[2] = {b, a};
  weft_tensor* out[2] = {NULL, NULL};
  WT_OK(weft_session_run(s, &x, &feed, 1, fetches, fetch_a ? 2 : 1, NULL, 0,
                         out));
  expect_values(out[0], 4);
  if (fetch_a) expect_values(out[1], 2);  /* intact: not written over */
  cr_assert_eq(num_calls, 2);
  cr_assert(calls[0].described && calls[1].described);
  const char* a_out = (const char*)calls[0].out.data + calls[0].out.offset;
  const char* b_in = (const char*)calls[1].in.data + calls[1].in.offset;
  const char* b_out = (const char*)calls[1].out.data + calls[1].out.offset;
  cr_assert_eq(b_in, a_out);
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(out[1]);
  weft_tensor_destroy(feed);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return b_out == a_out;
}

Test(described_kernel, output_zero_takes_an_input_only_where_allowed) {
  cr_assert(chain_handed_over("Test>Twice", 0),
            "b's output should be a's memory: b is its last reader");
  cr_assert(!chain_handed_over("Test>Twice", 1),
            "a is fetched: b must not write over it");
  cr_assert(!chain_handed_over("Test>TwiceFresh", 0),
            "the kernel's output_overwrites is 0");
}

Test(described_kernel, allocating_inside_a_described_call_is_refused) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, kDims, 2);
  weft_output y = wt_apply_mode(g, "Test>Twice", "y", x, 1);
  weft_session* s = wt_session_threads(g, 0, 1);
  weft_tensor* feed = wt_tensor(WEFT_FLOAT32, kDims, 2, kX);
  weft_tensor* out = NULL;
  weft_status* st = weft_session_run(s, &x, &feed, 1, &y, 1, NULL, 0, &out);
  cr_assert_not_null(st);
  cr_assert_eq(weft_status_code(st), WEFT_FAILED_PRECONDITION,
               "%s", weft_status_message(st));
  cr_assert(strstr(weft_status_message(st), "compute_described") != NULL,
            "%s", weft_status_message(st));
  cr_assert_null(out);
  cr_assert_eq(num_calls, 1);
  cr_assert_eq(calls[0].refused, WEFT_FAILED_PRECONDITION);
  weft_status_destroy(st);
  weft_tensor_destroy(feed);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- The CPU plugin's binary kernels on both paths ---- */

/* op(x, y) with placeholders of known shapes (described) and of unknown
 * rank (compute); `xd`/`yd` are the fed shapes.  Returns the status of the
 * known-shape run; both runs must agree on it and on the values. */
static weft_code both_paths(const char* op, weft_dtype dtype,
                            const int64_t* xd, int32_t xr, const void* xv,
                            const int64_t* yd, int32_t yr, const void* yv) {
  weft_code codes[2];
  weft_tensor* results[2] = {NULL, NULL};
  for (int known = 0; known < 2; ++known) {
    weft_graph* g = wt_graph_new();
    weft_output x = wt_placeholder(g, "x", dtype, known ? xd : NULL,
                                   known ? xr : -1);
    weft_output y = wt_placeholder(g, "y", dtype, known ? yd : NULL,
                                   known ? yr : -1);
    weft_output z = wt_apply2(g, op, "z", x, y);
    weft_session* s = wt_session_threads(g, 0, 1);
    weft_tensor* feeds[2] = {wt_tensor(dtype, xd, xr, xv),
                             wt_tensor(dtype, yd, yr, yv)};
    const weft_output in[2] = {x, y};
    weft_status* st =
        weft_session_run(s, in, feeds, 2, &z, 1, NULL, 0, &results[known]);
    codes[known] = weft_status_code(st);
    weft_status_destroy(st);
    weft_tensor_destroy(feeds[0]);
    weft_tensor_destroy(feeds[1]);
    weft_session_destroy(s);
    weft_graph_destroy(g);
  }
  cr_assert_eq(codes[0], codes[1], "%s: the paths disagree", op);
  if (codes[1] == WEFT_OK) {
    char what[64];
    snprintf(what, sizeof what, "%s: the paths give different values", op);
    wt_expect_same_bits(results[0], results[1], what);
  }
  weft_tensor_destroy(results[0]);
  weft_tensor_destroy(results[1]);
  return codes[1];
}

Test(described_kernel, cpu_binary_kernels_agree_on_both_paths) {
  const int64_t d23[2] = {2, 3}, d3[1] = {3}, d21[2] = {2, 1};
  const float x[6] = {1, -2, 3.5f, 4, -5, 6}, y3[3] = {2, 0.5f, -1};
  const float y21[2] = {10, -10}, y6[6] = {6, 5, 4, 3, 2, 1};
  const char* ops[] = {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Less",
                       "Equal"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
    cr_assert_eq(both_paths(ops[i], WEFT_FLOAT32, d23, 2, x, d23, 2, y6),
                 WEFT_OK);
    cr_assert_eq(both_paths(ops[i], WEFT_FLOAT32, d23, 2, x, d3, 1, y3),
                 WEFT_OK);
    cr_assert_eq(both_paths(ops[i], WEFT_FLOAT32, d3, 1, y3, d21, 2, y21),
                 WEFT_OK);
  }
  /* An integer zero divisor fails on both, before anything is written. */
  const int32_t n[3] = {7, 8, 9}, zero[3] = {1, 0, 2};
  cr_assert_eq(both_paths("FloorDiv", WEFT_INT32, d3, 1, n, d3, 1, zero),
               WEFT_INVALID_ARGUMENT);
}
