/* Every CPU op of runtime/ops/CONVENTIONS.md against a loop reference
 * written here.  Sessions are pinned to /device:CPU:0 so the CPU plugin's
 * kernels are the ones under test, and inputs are fed through placeholders
 * so no constant folding stands between the test and the kernel. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

#define CPU "/device:CPU:0"

struct operand {
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[4];
  const void* data;
};

#define F32(ptr, ...) \
  ((struct operand){WEFT_FLOAT32, WT_RANK(__VA_ARGS__), {__VA_ARGS__}, (ptr)})
#define F64(ptr, ...) \
  ((struct operand){WEFT_FLOAT64, WT_RANK(__VA_ARGS__), {__VA_ARGS__}, (ptr)})
#define I32(ptr, ...) \
  ((struct operand){WEFT_INT32, WT_RANK(__VA_ARGS__), {__VA_ARGS__}, (ptr)})
#define I64(ptr, ...) \
  ((struct operand){WEFT_INT64, WT_RANK(__VA_ARGS__), {__VA_ARGS__}, (ptr)})
#define SCALAR(dtype, ptr) ((struct operand){(dtype), 0, {0}, (ptr)})

/* Attributes for an op under test, set between begin and finish. */
struct attrs {
  int transpose_a, transpose_b;
  const int64_t* axes; /* used when has_axes */
  int32_t num_axes;
  int has_axes;
  int keep_dims;
  weft_dtype dst; /* Cast's DstT when non-zero */
};

static int64_t element_count(const struct operand* x) {
  int64_t n = 1;
  for (int32_t i = 0; i < x->rank; ++i) n *= x->dims[i];
  return n;
}

/* Builds `op` over placeholders for `inputs`, runs it on the CPU and
 * returns the status; *out gets the result on success.  Build errors and
 * run errors both come back as the status. */
static weft_status* try_op(const char* op, const char* name,
                           const struct operand* inputs, int n,
                           const struct attrs* attrs, weft_tensor** out) {
  *out = NULL;
  weft_graph* graph = wt_graph_new();
  weft_output feeds[4];
  weft_tensor* values[4];
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int i = 0; i < n; ++i) {
    char placeholder[16];
    snprintf(placeholder, sizeof placeholder, "input%d", i);
    feeds[i] = wt_placeholder(graph, placeholder, inputs[i].dtype,
                              inputs[i].dims, inputs[i].rank);
    values[i] = wt_tensor(inputs[i].dtype, inputs[i].dims, inputs[i].rank,
                          element_count(&inputs[i]) ? inputs[i].data : NULL);
    weft_op_add_input(b, feeds[i]);
  }
  if (attrs != NULL) {
    if (attrs->transpose_a) weft_op_set_attr_bool(b, "transpose_a", 1);
    if (attrs->transpose_b) weft_op_set_attr_bool(b, "transpose_b", 1);
    if (attrs->has_axes)
      weft_op_set_attr_int_list(b, "axes", attrs->axes, attrs->num_axes);
    if (attrs->keep_dims) weft_op_set_attr_bool(b, "keep_dims", 1);
    if (attrs->dst) weft_op_set_attr_dtype(b, "DstT", attrs->dst);
  }
  weft_status* status =
      wt_finish_and_run(graph, b, feeds, values, n, 0, 1, out);
  for (int i = 0; i < n; ++i) weft_tensor_destroy(values[i]);
  weft_graph_destroy(graph);
  return status;
}

static weft_tensor* run_op(const char* op, const struct operand* inputs, int n,
                           const struct attrs* attrs) {
  weft_tensor* out = NULL;
  wt_check_ok(try_op(op, NULL, inputs, n, attrs, &out), op, __FILE__,
              __LINE__);
  cr_assert_not_null(out);
  return out;
}

static double as_double(weft_dtype dtype, const void* data, int64_t i) {
  switch (dtype) {
    case WEFT_FLOAT32: return ((const float*)data)[i];
    case WEFT_FLOAT64: return ((const double*)data)[i];
    case WEFT_INT32: return ((const int32_t*)data)[i];
    case WEFT_INT64: return (double)((const int64_t*)data)[i];
    default: cr_assert_fail("no reader for %s", weft_dtype_name(dtype));
  }
  return 0;
}

/* Compares any float32/float64 result with a double reference; float64
 * results are held to a much tighter tolerance. */
static void expect_values(const weft_tensor* t, const double* ref, int64_t n,
                          double abs_tol, double rel_tol) {
  weft_dtype dtype = weft_tensor_dtype(t);
  cr_assert_eq(weft_tensor_element_count(t), n);
  for (int64_t i = 0; i < n; ++i) {
    double g = as_double(dtype, weft_tensor_data(t), i), r = ref[i];
    if (isnan(r)) {
      cr_expect(isnan(g), "element %lld: %g, expected NaN", (long long)i, g);
    } else if (isinf(r)) {
      cr_expect(g == r, "element %lld: %g, expected %g", (long long)i, g, r);
    } else {
      cr_expect(fabs(g - r) <= abs_tol + rel_tol * fabs(r),
                "element %lld: %.10g, expected %.10g", (long long)i, g, r);
    }
  }
}

/* ---- element-wise binary ops, with NumPy broadcasting ------------------- */

typedef double (*binary_fn)(double, double);
static double add(double a, double b) { return a + b; }
static double sub(double a, double b) { return a - b; }
static double mul(double a, double b) { return a * b; }
static double divide(double a, double b) { return a / b; }

/* The broadcast shape of x and y (aligned from the right), or -1. */
static int32_t broadcast_shape(const struct operand* x, const struct operand* y,
                               int64_t* dims) {
  int32_t rank = x->rank > y->rank ? x->rank : y->rank;
  for (int32_t i = 0; i < rank; ++i) {
    int32_t xi = x->rank - rank + i, yi = y->rank - rank + i;
    int64_t xd = xi >= 0 ? x->dims[xi] : 1, yd = yi >= 0 ? y->dims[yi] : 1;
    if (xd != yd && xd != 1 && yd != 1) return -1;
    dims[i] = xd == 1 ? yd : xd;
  }
  return rank;
}

/* Flat index into `x` of the element that output coordinate `coord` (of
 * rank `rank`) reads under broadcasting. */
static int64_t source_index(const struct operand* x, const int64_t* coord,
                            int32_t rank) {
  int64_t index = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    int64_t c = coord[rank - x->rank + i];
    index = index * x->dims[i] + (x->dims[i] == 1 ? 0 : c);
  }
  return index;
}

static void broadcast_reference(binary_fn fn, const struct operand* x,
                                const struct operand* y, double* out,
                                int64_t* out_dims, int32_t* out_rank) {
  int32_t rank = broadcast_shape(x, y, out_dims);
  cr_assert_geq(rank, 0, "test shapes do not broadcast");
  *out_rank = rank;
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) count *= out_dims[i];
  int64_t coord[8] = {0};
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat;
    for (int32_t i = rank - 1; i >= 0; --i) {
      coord[i] = rest % out_dims[i];
      rest /= out_dims[i];
    }
    out[flat] = fn(as_double(x->dtype, x->data, source_index(x, coord, rank)),
                   as_double(y->dtype, y->data, source_index(y, coord, rank)));
  }
}

static void check_binary(const char* op, binary_fn fn, struct operand x,
                         struct operand y) {
  struct operand in[2] = {x, y};
  weft_tensor* out = run_op(op, in, 2, NULL);
  int64_t dims[8];
  int32_t rank;
  double ref[256];
  broadcast_reference(fn, &x, &y, ref, dims, &rank);
  wt_expect_shape(out, x.dtype, dims, rank);
  int64_t n = weft_tensor_element_count(out);
  if (x.dtype == WEFT_FLOAT32) {
    expect_values(out, ref, n, 1e-6, 1e-6);
  } else if (x.dtype == WEFT_FLOAT64) {
    expect_values(out, ref, n, 1e-12, 1e-12);
  } else {
    expect_values(out, ref, n, 0, 0);
  }
  weft_tensor_destroy(out);
}

static const char* const binary_ops[] = {"Add", "Sub", "Mul", "Div"};
static const binary_fn binary_fns[] = {add, sub, mul, divide};

/* Divisors kept away from zero so Div compares well. */
static void fill_nonzero(wt_rng* rng, float* out, int n) {
  for (int i = 0; i < n; ++i) {
    float v = wt_rng_uniform(rng, 0.5f, 2.0f);
    out[i] = (wt_rng_next(rng) & 1) ? v : -v;
  }
}

Test(ops_cpu, binary_same_shape) {
  wt_rng rng = {1};
  float x[6], y[6];
  wt_rng_fill(&rng, x, 6, -3, 3);
  fill_nonzero(&rng, y, 6);
  for (int op = 0; op < 4; ++op)
    check_binary(binary_ops[op], binary_fns[op], F32(x, 2, 3), F32(y, 2, 3));
}

Test(ops_cpu, binary_broadcast_column_by_row) {
  wt_rng rng = {2};
  float x[3], y[4];
  wt_rng_fill(&rng, x, 3, -3, 3);
  fill_nonzero(&rng, y, 4);
  for (int op = 0; op < 4; ++op) {
    check_binary(binary_ops[op], binary_fns[op], F32(x, 3, 1), F32(y, 1, 4));
    check_binary(binary_ops[op], binary_fns[op], F32(y, 1, 4), F32(x, 3, 1));
  }
}

Test(ops_cpu, binary_broadcast_trailing_vector) {
  wt_rng rng = {3};
  float x[24], y[4];
  wt_rng_fill(&rng, x, 24, -3, 3);
  fill_nonzero(&rng, y, 4);
  for (int op = 0; op < 4; ++op) {
    check_binary(binary_ops[op], binary_fns[op], F32(x, 2, 3, 4), F32(y, 4));
    check_binary(binary_ops[op], binary_fns[op], F32(y, 4), F32(x, 2, 3, 4));
  }
}

Test(ops_cpu, binary_broadcast_middle_axes) {
  wt_rng rng = {4};
  float x[8], y[3];
  wt_rng_fill(&rng, x, 8, -3, 3);
  fill_nonzero(&rng, y, 3);
  for (int op = 0; op < 4; ++op)
    check_binary(binary_ops[op], binary_fns[op], F32(x, 2, 1, 4),
                 F32(y, 3, 1));
}

Test(ops_cpu, binary_scalar_and_tensor) {
  float s = 1.5f, t[4] = {1, -2, 3, -4};
  for (int op = 0; op < 4; ++op) {
    check_binary(binary_ops[op], binary_fns[op], SCALAR(WEFT_FLOAT32, &s),
                 F32(t, 2, 2));
    check_binary(binary_ops[op], binary_fns[op], F32(t, 2, 2),
                 SCALAR(WEFT_FLOAT32, &s));
  }
  float u = -0.25f;
  check_binary("Mul", mul, SCALAR(WEFT_FLOAT32, &s), SCALAR(WEFT_FLOAT32, &u));
}

Test(ops_cpu, binary_float64) {
  double x[6] = {1e-3, 2, 3.25, -4, 5e10, -6}, y[3] = {3, -7, 0.125};
  for (int op = 0; op < 4; ++op)
    check_binary(binary_ops[op], binary_fns[op], F64(x, 2, 3), F64(y, 3));
}

Test(ops_cpu, binary_integers) {
  int32_t x[6] = {1, -2, 3, 40000, -5, 6}, y[3] = {7, -8, 9};
  check_binary("Add", add, I32(x, 2, 3), I32(y, 3));
  check_binary("Sub", sub, I32(x, 2, 3), I32(y, 3));
  check_binary("Mul", mul, I32(x, 2, 3), I32(y, 3));
  int64_t a[2] = {3000000000ll, -2}, b[3] = {2, 5, -7};
  check_binary("Mul", mul, I64(a, 2, 1), I64(b, 1, 3));
  check_binary("Add", add, I64(a, 2, 1), I64(b, 1, 3));
}

Test(ops_cpu, float_division_by_zero_is_ieee) {
  float x[3] = {1, -1, 0}, y[3] = {0, 0, 0};
  struct operand in[2] = {F32(x, 3), F32(y, 3)};
  weft_tensor* out = run_op("Div", in, 2, NULL);
  double ref[3] = {INFINITY, -INFINITY, NAN};
  expect_values(out, ref, 3, 0, 0);
  weft_tensor_destroy(out);
}

Test(ops_cpu, integer_division_truncates_and_wraps) {
  int32_t x[7] = {7, -7, 7, -7, 0, INT32_MIN, 1};
  int32_t y[7] = {2, 2, -2, -2, 5, -1, 3};
  struct operand in[2] = {I32(x, 7), I32(y, 7)};
  weft_tensor* out = run_op("Div", in, 2, NULL);
  wt_expect_shape(out, WEFT_INT32, WT_SHAPE(7));
  const int32_t expected[7] = {3, -3, -3, 3, 0, INT32_MIN, 0};
  const int32_t* got = weft_tensor_data(out);
  for (int i = 0; i < 7; ++i)
    cr_expect_eq(got[i], expected[i], "%d / %d = %d, expected %d", x[i], y[i],
                 got[i], expected[i]);
  weft_tensor_destroy(out);

  int64_t a[2] = {INT64_MIN, -9}, b[2] = {-1, 4};
  struct operand in64[2] = {I64(a, 2), I64(b, 2)};
  out = run_op("Div", in64, 2, NULL);
  cr_expect_eq(((const int64_t*)weft_tensor_data(out))[0], INT64_MIN);
  cr_expect_eq(((const int64_t*)weft_tensor_data(out))[1], -2);
  weft_tensor_destroy(out);
}

Test(ops_cpu, integer_division_by_zero_is_an_error) {
  int32_t x[4] = {1, 2, 3, 4}, y[4] = {1, 1, 0, 1};
  struct operand in[2] = {I32(x, 4), I32(y, 4)};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(try_op("Div", "zero_divisor_div", in, 2, NULL, &out),
                  WEFT_INVALID_ARGUMENT, "zero_divisor_div");
  cr_expect_null(out);

  int64_t a[1] = {5}, zero = 0;
  struct operand in64[2] = {I64(a, 1), SCALAR(WEFT_INT64, &zero)};
  WT_EXPECT_ERROR(try_op("Div", "zero_divisor_div64", in64, 2, NULL, &out),
                  WEFT_INVALID_ARGUMENT, "zero_divisor_div64");
  cr_expect_null(out);
}

/* ---- element-wise unary ops -------------------------------------------- */

typedef double (*unary_fn)(double);
static double neg(double x) { return -x; }
static double relu(double x) { return x > 0 ? x : 0; }
static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double identity(double x) { return x; }

static void check_unary(const char* op, unary_fn fn, struct operand x,
                        double abs_tol, double rel_tol) {
  weft_tensor* out = run_op(op, &x, 1, NULL);
  wt_expect_shape(out, x.dtype, x.dims, x.rank);
  int64_t n = element_count(&x);
  double ref[64];
  for (int64_t i = 0; i < n; ++i) ref[i] = fn(as_double(x.dtype, x.data, i));
  expect_values(out, ref, n, abs_tol, rel_tol);
  weft_tensor_destroy(out);
}

Test(ops_cpu, unary_float32) {
  wt_rng rng = {5};
  float x[2 * 3 * 5];
  wt_rng_fill(&rng, x, 30, -3, 3);
  x[0] = 0.0f;
  check_unary("Neg", neg, F32(x, 2, 3, 5), 0, 0);
  check_unary("Relu", relu, F32(x, 2, 3, 5), 0, 0);
  check_unary("Identity", identity, F32(x, 2, 3, 5), 0, 0);
  check_unary("Exp", exp, F32(x, 2, 3, 5), 1e-6, 1e-6);
  check_unary("Sigmoid", sigmoid, F32(x, 2, 3, 5), 1e-6, 1e-5);
  check_unary("Tanh", tanh, F32(x, 2, 3, 5), 1e-6, 1e-5);
  float positive[30];
  wt_rng_fill(&rng, positive, 30, 0.01f, 10.0f);
  check_unary("Log", log, F32(positive, 30), 1e-6, 1e-6);
}

Test(ops_cpu, unary_extremes) {
  float big[4] = {-100, 100, -1e30f, 1e30f};
  check_unary("Sigmoid", sigmoid, F32(big, 4), 1e-6, 0);
  check_unary("Tanh", tanh, F32(big, 4), 1e-6, 0);
  float logs[3] = {0.0f, 1.0f, -1.0f};
  double log_ref[3] = {-INFINITY, 0.0, NAN};
  struct operand in = F32(logs, 3);
  weft_tensor* out = run_op("Log", &in, 1, NULL);
  expect_values(out, log_ref, 3, 0, 0);
  weft_tensor_destroy(out);
  float exps[2] = {-200.0f, 200.0f};
  double exp_ref[2] = {0.0, INFINITY};
  in = F32(exps, 2);
  out = run_op("Exp", &in, 1, NULL);
  expect_values(out, exp_ref, 2, 0, 0);
  weft_tensor_destroy(out);
}

Test(ops_cpu, unary_float64_and_integers) {
  double x[5] = {-2.5, -1e-300, 0, 0.75, 3};
  check_unary("Neg", neg, F64(x, 5), 0, 0);
  check_unary("Exp", exp, F64(x, 5), 1e-14, 1e-14);
  check_unary("Tanh", tanh, F64(x, 5), 1e-14, 1e-14);
  check_unary("Sigmoid", sigmoid, F64(x, 5), 1e-14, 1e-14);
  check_unary("Relu", relu, F64(x, 5), 0, 0);
  int32_t ints[4] = {-3, 0, 7, INT32_MAX};
  check_unary("Neg", neg, I32(ints, 4), 0, 0);
  check_unary("Relu", relu, I32(ints, 4), 0, 0);
  int64_t longs[3] = {-3000000000ll, 0, 5};
  check_unary("Relu", relu, I64(longs, 3), 0, 0);
  check_unary("Identity", identity, I64(longs, 3), 0, 0);
}

Test(ops_cpu, unary_scalar) {
  float s = -0.5f;
  check_unary("Neg", neg, SCALAR(WEFT_FLOAT32, &s), 0, 0);
  check_unary("Exp", exp, SCALAR(WEFT_FLOAT32, &s), 1e-7, 1e-6);
}

/* ---- MatMul -------------------------------------------------------------- */

/* a is [M,K] (stored [K,M] when ta), b is [K,N] (stored [N,K] when tb). */
static void matmul_reference(const float* a, const float* b, int64_t m,
                             int64_t k, int64_t n, int ta, int tb,
                             double* out) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += (double)(ta ? a[p * m + i] : a[i * k + p]) *
               (tb ? b[j * k + p] : b[p * n + j]);
      out[i * n + j] = acc;
    }
}

static void check_matmul(int64_t m, int64_t k, int64_t n, int ta, int tb,
                         uint64_t seed) {
  wt_rng rng = {seed};
  float* a = malloc((size_t)(m * k + 1) * sizeof(float));
  float* b = malloc((size_t)(k * n + 1) * sizeof(float));
  double* ref = malloc((size_t)(m * n + 1) * sizeof(double));
  wt_rng_fill(&rng, a, m * k, -1, 1);
  wt_rng_fill(&rng, b, k * n, -1, 1);
  struct operand in[2] = {
      ta ? F32(a, k, m) : F32(a, m, k),
      tb ? F32(b, n, k) : F32(b, k, n),
  };
  struct attrs attrs = {.transpose_a = ta, .transpose_b = tb};
  weft_tensor* out = run_op("MatMul", in, 2, &attrs);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(m, n));
  matmul_reference(a, b, m, k, n, ta, tb, ref);
  cr_log_info("MatMul [%lld,%lld]x[%lld,%lld] ta=%d tb=%d", (long long)m,
              (long long)k, (long long)k, (long long)n, ta, tb);
  expect_values(out, ref, m * n, 1e-5 * (double)(k + 1), 1e-5);
  weft_tensor_destroy(out);
  free(a);
  free(b);
  free(ref);
}

Test(ops_cpu, matmul_small_all_transposes) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) check_matmul(2, 3, 4, ta, tb, 10 + ta * 2 + tb);
}

/* Odd sizes reach the remainder paths of blocked GEMM kernels. */
Test(ops_cpu, matmul_odd_sizes) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      check_matmul(33, 70, 17, ta, tb, 20 + ta * 2 + tb);
  check_matmul(1, 129, 1, 0, 0, 30);
  check_matmul(65, 1, 63, 0, 1, 31);
}

Test(ops_cpu, matmul_float64) {
  double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0.5, -1, 2, 0.25, -3, 1};
  struct operand in[2] = {F64(a, 2, 3), F64(b, 3, 2)};
  weft_tensor* out = run_op("MatMul", in, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT64, WT_SHAPE(2, 2));
  double ref[4];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      ref[i * 2 + j] = 0;
      for (int p = 0; p < 3; ++p) ref[i * 2 + j] += a[i * 3 + p] * b[p * 2 + j];
    }
  expect_values(out, ref, 4, 1e-12, 1e-12);
  weft_tensor_destroy(out);
}

Test(ops_cpu, matmul_empty) {
  float b[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  struct operand no_rows[2] = {F32(NULL, 0, 3), F32(b, 3, 4)};
  weft_tensor* out = run_op("MatMul", no_rows, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(0, 4));
  weft_tensor_destroy(out);

  /* K = 0: every output is an empty sum, 0 — not uninitialized memory. */
  struct operand no_inner[2] = {F32(NULL, 2, 0), F32(NULL, 0, 3)};
  out = run_op("MatMul", no_inner, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 3));
  double zeros[6] = {0};
  expect_values(out, zeros, 6, 0, 0);
  weft_tensor_destroy(out);
}

/* ---- Softmax ------------------------------------------------------------- */

static void softmax_reference(const float* x, int64_t rows, int64_t cols,
                              double* out) {
  for (int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      if (x[r * cols + c] > max) max = x[r * cols + c];
    for (int64_t c = 0; c < cols; ++c)
      sum += out[r * cols + c] = exp(x[r * cols + c] - max);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] /= sum;
  }
}

static void check_softmax(struct operand x, int64_t rows, int64_t cols) {
  weft_tensor* out = run_op("Softmax", &x, 1, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, x.dims, x.rank);
  double ref[64];
  softmax_reference(x.data, rows, cols, ref);
  expect_values(out, ref, rows * cols, 1e-6, 1e-5);
  weft_tensor_destroy(out);
}

Test(ops_cpu, softmax) {
  wt_rng rng = {6};
  float x[24];
  wt_rng_fill(&rng, x, 24, -5, 5);
  check_softmax(F32(x, 3, 5), 3, 5);
  check_softmax(F32(x, 7), 1, 7);
  check_softmax(F32(x, 2, 3, 4), 6, 4);
}

Test(ops_cpu, softmax_is_numerically_stable) {
  float x[6] = {1000, 1001, 1002, -1000, -1001, -1002};
  check_softmax(F32(x, 2, 3), 2, 3);
}

Test(ops_cpu, softmax_empty_batch) {
  struct operand x = F32(NULL, 0, 5);
  weft_tensor* out = run_op("Softmax", &x, 1, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(0, 5));
  weft_tensor_destroy(out);
}

/* ---- Sum and Mean ----------------------------------------------------------- */

/* Reduces a [2,3,4] tensor over the axes whose bit is set in `mask`. */
static void reduce_reference(const float* x, unsigned mask, int mean,
                             double* out, int64_t* out_count) {
  const int64_t dims[3] = {2, 3, 4};
  int64_t kept = 1, reduced = 1;
  for (int a = 0; a < 3; ++a) {
    if (mask >> a & 1) {
      reduced *= dims[a];
    } else {
      kept *= dims[a];
    }
  }
  for (int64_t i = 0; i < kept; ++i) out[i] = 0;
  for (int64_t i0 = 0; i0 < 2; ++i0)
    for (int64_t i1 = 0; i1 < 3; ++i1)
      for (int64_t i2 = 0; i2 < 4; ++i2) {
        const int64_t c[3] = {i0, i1, i2};
        int64_t o = 0;
        for (int a = 0; a < 3; ++a)
          if (!(mask >> a & 1)) o = o * dims[a] + c[a];
        out[o] += x[(i0 * 3 + i1) * 4 + i2];
      }
  if (mean)
    for (int64_t i = 0; i < kept; ++i) out[i] /= (double)reduced;
  *out_count = kept;
}

static void check_reduce(const char* op, const float* x, const int64_t* axes,
                         int32_t num_axes, int has_axes, int keep_dims,
                         unsigned mask, const int64_t* dims, int32_t rank) {
  struct operand in = F32(x, 2, 3, 4);
  struct attrs attrs = {.axes = axes, .num_axes = num_axes,
                        .has_axes = has_axes, .keep_dims = keep_dims};
  weft_tensor* out = run_op(op, &in, 1, &attrs);
  cr_log_info("%s mask=%u keep_dims=%d", op, mask, keep_dims);
  wt_expect_shape(out, WEFT_FLOAT32, dims, rank);
  double ref[24];
  int64_t count;
  reduce_reference(x, mask, strcmp(op, "Mean") == 0, ref, &count);
  expect_values(out, ref, count, 1e-5, 1e-5);
  weft_tensor_destroy(out);
}

Test(ops_cpu, sum_and_mean) {
  wt_rng rng = {7};
  float x[24];
  wt_rng_fill(&rng, x, 24, -2, 2);
  static const char* const ops[] = {"Sum", "Mean"};
  for (int o = 0; o < 2; ++o) {
    const char* op = ops[o];
    check_reduce(op, x, NULL, 0, 0, 0, 7, NULL, 0);                /* all */
    check_reduce(op, x, NULL, 0, 0, 1, 7, WT_SHAPE(1, 1, 1));      /* all */
    check_reduce(op, x, WT_DIMS(1), 1, 1, 0, 2, WT_SHAPE(2, 4));
    check_reduce(op, x, WT_DIMS(-1), 1, 1, 0, 4, WT_SHAPE(2, 3));
    check_reduce(op, x, WT_DIMS(0, 2), 2, 1, 0, 5, WT_SHAPE(3));
    check_reduce(op, x, WT_DIMS(2, 0), 2, 1, 1, 5, WT_SHAPE(1, 3, 1));
    check_reduce(op, x, WT_DIMS(-3, -2, -1), 3, 1, 0, 7, NULL, 0);
    /* An empty list reduces nothing. */
    check_reduce(op, x, WT_DIMS(0), 0, 1, 0, 0, WT_SHAPE(2, 3, 4));
  }
}

Test(ops_cpu, sum_and_mean_of_integers) {
  int32_t x[6] = {1, 2, 3, 10, 20, 30};
  struct operand in = I32(x, 2, 3);
  struct attrs attrs = {.axes = WT_DIMS(1), .num_axes = 1, .has_axes = 1};
  weft_tensor* out = run_op("Sum", &in, 1, &attrs);
  wt_expect_shape(out, WEFT_INT32, WT_SHAPE(2));
  cr_expect_eq(((const int32_t*)weft_tensor_data(out))[0], 6);
  cr_expect_eq(((const int32_t*)weft_tensor_data(out))[1], 60);
  weft_tensor_destroy(out);
  out = run_op("Mean", &in, 1, &attrs);
  wt_expect_shape(out, WEFT_INT32, WT_SHAPE(2));
  cr_expect_eq(((const int32_t*)weft_tensor_data(out))[0], 2);
  cr_expect_eq(((const int32_t*)weft_tensor_data(out))[1], 20);
  weft_tensor_destroy(out);
}

Test(ops_cpu, reductions_over_nothing) {
  struct operand empty = F32(NULL, 0, 3);
  struct attrs axis0 = {.axes = WT_DIMS(0), .num_axes = 1, .has_axes = 1};
  weft_tensor* out = run_op("Sum", &empty, 1, &axis0);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(3));
  double zeros[3] = {0, 0, 0};
  expect_values(out, zeros, 3, 0, 0);
  weft_tensor_destroy(out);

  out = run_op("Sum", &empty, 1, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, NULL, 0);
  expect_values(out, zeros, 1, 0, 0);
  weft_tensor_destroy(out);

  out = run_op("Mean", &empty, 1, &axis0);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(3));
  double nans[3] = {NAN, NAN, NAN};
  expect_values(out, nans, 3, 0, 0);
  weft_tensor_destroy(out);

  /* An integer mean of nothing has no value: an error, at build or run. */
  struct operand int_empty = I32(NULL, 0, 3);
  weft_status* status = try_op("Mean", "empty_int_mean", &int_empty, 1,
                               &axis0, &out);
  cr_expect_not_null(status, "integer Mean over zero elements succeeded");
  if (status != NULL) {
    cr_expect_str_neq(weft_status_message(status), "");
    weft_status_destroy(status);
  } else {
    weft_tensor_destroy(out);
  }
}

/* ---- Cast -------------------------------------------------------------------- */

static weft_tensor* cast(struct operand x, weft_dtype dst) {
  struct attrs attrs = {.dst = dst};
  weft_tensor* out = run_op("Cast", &x, 1, &attrs);
  wt_expect_shape(out, dst, x.dims, x.rank);
  return out;
}

Test(ops_cpu, cast_float_to_int_truncates_and_zeroes_the_unrepresentable) {
  float x[10] = {2.7f, -2.7f, 0.5f, -0.5f, NAN, 1e20f, -1e20f, INFINITY,
                 2147483520.0f, -2147483648.0f};
  weft_tensor* out = cast(F32(x, 10), WEFT_INT32);
  const int32_t expected[10] = {2, -2, 0, 0, 0, 0, 0, 0, 2147483520,
                                INT32_MIN};
  const int32_t* got = weft_tensor_data(out);
  for (int i = 0; i < 10; ++i)
    cr_expect_eq(got[i], expected[i], "Cast(%g) = %d, expected %d", x[i],
                 got[i], expected[i]);
  weft_tensor_destroy(out);

  float y[4] = {3.9f, 255.0f, 300.0f, -7.0f};
  out = cast(F32(y, 4), WEFT_UINT8);
  const uint8_t expected_u8[4] = {3, 255, 0, 0};
  for (int i = 0; i < 4; ++i)
    cr_expect_eq(((const uint8_t*)weft_tensor_data(out))[i], expected_u8[i],
                 "Cast(%g) to uint8", y[i]);
  weft_tensor_destroy(out);
}

Test(ops_cpu, cast_to_bool_is_nonzero) {
  float x[5] = {0.0f, -0.0f, 0.5f, -2.0f, NAN};
  weft_tensor* out = cast(F32(x, 5), WEFT_BOOL);
  const uint8_t expected[5] = {0, 0, 1, 1, 1};
  for (int i = 0; i < 5; ++i)
    cr_expect_eq(((const uint8_t*)weft_tensor_data(out))[i], expected[i],
                 "Cast(%g) to bool", x[i]);
  weft_tensor_destroy(out);

  int32_t ints[3] = {0, 5, -1};
  out = cast(I32(ints, 3), WEFT_BOOL);
  const uint8_t expected_int[3] = {0, 1, 1};
  for (int i = 0; i < 3; ++i)
    cr_expect_eq(((const uint8_t*)weft_tensor_data(out))[i], expected_int[i]);
  weft_tensor_destroy(out);
}

Test(ops_cpu, cast_widening_and_to_float) {
  int32_t ints[3] = {-1, INT32_MAX, 123456};
  weft_tensor* out = cast(I32(ints, 3), WEFT_INT64);
  const int64_t* wide = weft_tensor_data(out);
  for (int i = 0; i < 3; ++i) cr_expect_eq(wide[i], (int64_t)ints[i]);
  weft_tensor_destroy(out);

  int32_t small[3] = {1, -5, 123456};
  out = cast(I32(small, 3), WEFT_FLOAT32);
  double ref[3] = {1, -5, 123456};
  expect_values(out, ref, 3, 0, 0);
  weft_tensor_destroy(out);

  double d[2] = {1.5, -0.25};
  out = cast(F64(d, 2), WEFT_FLOAT32);
  double ref_d[2] = {1.5, -0.25};
  expect_values(out, ref_d, 2, 0, 0);
  weft_tensor_destroy(out);

  uint8_t bools[2] = {0, 1};
  struct operand b = {WEFT_BOOL, 1, {2}, bools};
  out = cast(b, WEFT_FLOAT32);
  double ref_b[2] = {0, 1};
  expect_values(out, ref_b, 2, 0, 0);
  weft_tensor_destroy(out);
}

/* ---- empty tensors through element-wise ops --------------------------------- */

Test(ops_cpu, empty_tensors_flow_through) {
  struct operand in[2] = {F32(NULL, 0, 3), F32(NULL, 0, 3)};
  weft_tensor* out = run_op("Add", in, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(0, 3));
  weft_tensor_destroy(out);

  float row[3] = {1, 2, 3};
  struct operand broadcast[2] = {F32(NULL, 0, 3), F32(row, 1, 3)};
  out = run_op("Mul", broadcast, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(0, 3));
  weft_tensor_destroy(out);

  static const char* const unary[] = {"Neg", "Exp", "Log", "Relu",
                                      "Sigmoid", "Tanh", "Identity"};
  struct operand empty = F32(NULL, 2, 0);
  for (size_t i = 0; i < sizeof unary / sizeof unary[0]; ++i) {
    out = run_op(unary[i], &empty, 1, NULL);
    wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 0));
    weft_tensor_destroy(out);
  }
}
