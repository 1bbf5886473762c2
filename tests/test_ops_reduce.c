/* The reduction ops of runtime/ops/CONVENTIONS.md on the CPU plugin: Sum,
 * Mean, Prod, Max, Min over axes, and ArgMax, ArgMin along one axis.
 *
 * Expected values come from loops written here over the same input values
 * (held as doubles that every dtype represents exactly): floats accumulate
 * in double, integers in 64-bit unsigned arithmetic reduced to the dtype's
 * width at the end (wrapping is a ring homomorphism, so this is what a
 * wrapping kernel must produce).  Inputs are fed through placeholders, so no
 * constant folding stands between the test and the kernel; "unknown shape"
 * placeholders defer the shape checks to the kernel. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

#define CPU "/device:CPU:0"

typedef struct {
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[6];
  const double* values; /* exact in dtype */
} input_t;

typedef struct {
  const int64_t* axes; /* Sum..Min: used when has_axes */
  int32_t num_axes;
  int has_axes;
  int keep_dims;
  int has_axis; /* ArgMax, ArgMin */
  int64_t axis;
  weft_dtype output_type; /* 0: the default */
} attrs_t;

static const weft_dtype kTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                    WEFT_INT64, WEFT_UINT8};
#define NUM_TYPES 5

static int is_float(weft_dtype t) {
  return t == WEFT_FLOAT32 || t == WEFT_FLOAT64;
}

static int64_t count_of(const input_t* x) {
  int64_t n = 1;
  for (int32_t i = 0; i < x->rank; ++i) n *= x->dims[i];
  return n;
}

static void* typed(weft_dtype dtype, const double* v, int64_t n) {
  void* p = malloc((size_t)(n + 1) * 8);
  cr_assert_not_null(p);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case WEFT_FLOAT32: ((float*)p)[i] = (float)v[i]; break;
      case WEFT_FLOAT64: ((double*)p)[i] = v[i]; break;
      case WEFT_INT32: ((int32_t*)p)[i] = (int32_t)v[i]; break;
      case WEFT_INT64: ((int64_t*)p)[i] = (int64_t)v[i]; break;
      case WEFT_UINT8: ((uint8_t*)p)[i] = (uint8_t)v[i]; break;
      default: cr_assert_fail("no writer for %s", weft_dtype_name(dtype));
    }
  }
  return p;
}

static double get_f(const weft_tensor* t, int64_t i) {
  const void* d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT32: return ((const float*)d)[i];
    case WEFT_FLOAT64: return ((const double*)d)[i];
    default: cr_assert_fail("not a float tensor");
  }
  return 0;
}

static int64_t get_i(const weft_tensor* t, int64_t i) {
  const void* d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_INT32: return ((const int32_t*)d)[i];
    case WEFT_INT64: return ((const int64_t*)d)[i];
    case WEFT_UINT8: return ((const uint8_t*)d)[i];
    default: cr_assert_fail("not an integer tensor");
  }
  return 0;
}

/* The value a dtype of that width gives to the 64-bit pattern `u`. */
static int64_t wrap(weft_dtype dtype, uint64_t u) {
  switch (dtype) {
    case WEFT_INT32: return (int32_t)(uint32_t)u;
    case WEFT_UINT8: return (uint8_t)u;
    default: return (int64_t)u;
  }
}

/* Builds `op` over one placeholder (of unknown rank when `unknown_shape`)
 * and runs it on the CPU with 3 intra-op threads, so that parallel paths
 * run whatever the core count.  Build and run errors both come back. */
static weft_status* try_op(const char* op, const char* name,
                           const input_t* x, const attrs_t* a,
                           int unknown_shape, weft_tensor** out) {
  *out = NULL;
  weft_graph* graph = wt_graph_new();
  weft_output feed = wt_placeholder(graph, "x", x->dtype, x->dims,
                                    unknown_shape ? -1 : x->rank);
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_add_input(b, feed);
  if (a != NULL) {
    if (a->has_axes) weft_op_set_attr_int_list(b, "axes", a->axes, a->num_axes);
    if (a->keep_dims) weft_op_set_attr_bool(b, "keep_dims", 1);
    if (a->has_axis) weft_op_set_attr_int(b, "axis", a->axis);
    if (a->output_type) weft_op_set_attr_dtype(b, "output_type", a->output_type);
  }
  int64_t n = count_of(x);
  void* data = typed(x->dtype, x->values, n);
  weft_tensor* value = wt_tensor(x->dtype, x->dims, x->rank, n ? data : NULL);
  weft_status* status =
      wt_finish_and_run(graph, b, &feed, &value, 1, 3, 1, out);
  weft_tensor_destroy(value);
  free(data);
  weft_graph_destroy(graph);
  return status;
}

static weft_tensor* run_op(const char* op, const input_t* x, const attrs_t* a) {
  weft_tensor* out = NULL;
  WT_OK(try_op(op, NULL, x, a, 0, &out));
  cr_assert_not_null(out);
  return out;
}

/* ---- Reference reductions ------------------------------------------------ */

/* Reduces x over the axes whose bit is set in `mask`; *out_count gets the
 * number of outputs.  Floats in ref_f, integers (as 64-bit patterns) in
 * ref_u. */
static void reduce_reference(const char* op, const input_t* x, unsigned mask,
                             double* ref_f, uint64_t* ref_u,
                             int64_t* out_count) {
  int64_t kept = 1, reduced = 1;
  for (int32_t a = 0; a < x->rank; ++a) {
    if (mask >> a & 1) reduced *= x->dims[a];
    else kept *= x->dims[a];
  }
  const int sum = !strcmp(op, "Sum") || !strcmp(op, "Mean");
  const int prod = !strcmp(op, "Prod"), max = !strcmp(op, "Max");
  char* seen = calloc((size_t)kept + 1, 1);
  int64_t* isum = calloc((size_t)kept + 1, sizeof(int64_t));
  for (int64_t o = 0; o < kept; ++o) {
    ref_f[o] = sum ? 0 : 1;
    ref_u[o] = sum ? 0 : 1;
  }
  const int64_t n = count_of(x);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, o = 0, scale = 1;
    for (int32_t a = x->rank - 1; a >= 0; --a) {
      int64_t c = rest % x->dims[a];
      rest /= x->dims[a];
      if (!(mask >> a & 1)) {
        o += c * scale;
        scale *= x->dims[a];
      }
    }
    const double v = x->values[i];
    const uint64_t u = (uint64_t)(int64_t)v;
    if (sum) {
      ref_f[o] += v;
      ref_u[o] += u;
      isum[o] += (int64_t)v;
    } else if (prod) {
      ref_f[o] *= v;
      ref_u[o] *= u;
    } else {
      const double best = ref_f[o];
      if (!seen[o] || isnan(v) ||
          (!isnan(best) && (max ? v > best : v < best)))
        ref_f[o] = v;
      seen[o] = 1;
      if (!isnan(ref_f[o])) ref_u[o] = (uint64_t)(int64_t)ref_f[o];
    }
  }
  if (!strcmp(op, "Mean"))
    for (int64_t o = 0; o < kept; ++o) {
      ref_f[o] /= (double)reduced;
      ref_u[o] = (uint64_t)(isum[o] / reduced);  /* C truncates toward 0 */
    }
  free(seen);
  free(isum);
  *out_count = kept;
}

static void expect_reduction(const char* op, const input_t* x,
                             const weft_tensor* out, unsigned mask) {
  double* ref_f = malloc(sizeof(double) * (size_t)(count_of(x) + 1));
  uint64_t* ref_u = malloc(sizeof(uint64_t) * (size_t)(count_of(x) + 1));
  int64_t count;
  reduce_reference(op, x, mask, ref_f, ref_u, &count);
  cr_assert_eq(weft_tensor_element_count(out), count);
  int64_t reduced = count ? count_of(x) / count : 0;
  for (int64_t i = 0; i < count; ++i) {
    if (is_float(x->dtype)) {
      double g = get_f(out, i), r = ref_f[i];
      /* Sums of the quarters fill() makes are exact in any order, so Sum,
       * Max and Min must match exactly, Mean to its one division, and Prod
       * to one rounding per factor. */
      const double eps = x->dtype == WEFT_FLOAT32 ? 0x1p-24 : 0x1p-53;
      double tol = 0;
      if (!strcmp(op, "Mean")) tol = 2 * eps * fabs(r);
      if (!strcmp(op, "Prod")) tol = 2 * eps * (double)reduced * fabs(r);
      if (isnan(r))
        cr_expect(isnan(g), "%s %s mask %u: element %lld is %g, expected NaN",
                  op, weft_dtype_name(x->dtype), mask, (long long)i, g);
      else
        cr_expect(fabs(g - r) <= tol,
                  "%s %s mask %u: element %lld is %.10g, expected %.10g", op,
                  weft_dtype_name(x->dtype), mask, (long long)i, g, r);
    } else {
      int64_t g = get_i(out, i), r = wrap(x->dtype, ref_u[i]);
      cr_expect_eq(g, r, "%s %s mask %u: element %lld is %lld, expected %lld",
                   op, weft_dtype_name(x->dtype), mask, (long long)i,
                   (long long)g, (long long)r);
    }
  }
  free(ref_f);
  free(ref_u);
}

/* Values exact in every dtype: small integers for the integer types (and
 * non-negative for uint8), quarters for the floats.  Prod keeps float
 * values near 1 so that long products stay well inside the range. */
static void fill(wt_rng* rng, weft_dtype dtype, const char* op, double* v,
                 int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = wt_rng_next(rng);
    if (dtype == WEFT_UINT8) {
      v[i] = (double)(r % 256);
    } else if (!is_float(dtype)) {
      v[i] = (double)((int64_t)(r % 2001) - 1000);
    } else if (!strcmp(op, "Prod")) {
      v[i] = 0.75 + (double)(r % 3) * 0.25;
    } else {
      v[i] = (double)((int64_t)(r % 801) - 400) * 0.25;
    }
  }
}

static const char* const kReductions[] = {"Sum", "Mean", "Prod", "Max", "Min"};
#define NUM_REDUCTIONS 5

/* Every reduction × dtype × axis set that reaches a distinct code path:
 * everything, [kept, reduced], [reduced, kept], [kept, reduced, kept] and
 * a generic walk, on a [3, 4, 5, 2] input. */
Test(ops_reduce, every_op_dtype_and_axis_pattern) {
  static const struct {
    int64_t axes[4];
    int32_t count;
    unsigned mask;
  } patterns[] = {
      {{0}, 0, 15},       /* absent: all */
      {{2, 3}, 2, 12},    /* [kept, reduced] */
      {{0, 1}, 2, 3},     /* [reduced, kept] */
      {{1, 2}, 2, 6},     /* [kept, reduced, kept] */
      {{0, 2}, 2, 5},     /* generic */
      {{-1, 1}, 2, 10},   /* generic, negative axis */
      {{-4, 3, 1}, 3, 11},
  };
  double v[120];
  wt_rng rng = {41};
  for (int o = 0; o < NUM_REDUCTIONS; ++o)
    for (int t = 0; t < NUM_TYPES; ++t) {
      fill(&rng, kTypes[t], kReductions[o], v, 120);
      input_t x = {kTypes[t], 4, {3, 4, 5, 2}, v};
      for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; ++p) {
        attrs_t a = {.axes = patterns[p].axes, .num_axes = patterns[p].count,
                     .has_axes = p != 0};
        weft_tensor* out = run_op(kReductions[o], &x, &a);
        cr_assert_eq(weft_tensor_dtype(out), kTypes[t]);
        expect_reduction(kReductions[o], &x, out, patterns[p].mask);
        weft_tensor_destroy(out);
      }
    }
}

/* Inputs big enough to be split across threads, in each fast layout. */
Test(ops_reduce, large_inputs_split_across_threads) {
  const int64_t rows = 96, cols = 1030;
  double* v = malloc(sizeof(double) * (size_t)(rows * cols * 2));
  wt_rng rng = {42};
  static const int64_t axis0[] = {0}, axis1[] = {1}, axis2[] = {1};
  for (int o = 0; o < NUM_REDUCTIONS; ++o)
    for (int t = 0; t < NUM_TYPES; ++t) {
      fill(&rng, kTypes[t], kReductions[o], v, rows * cols * 2);
      input_t x = {kTypes[t], 2, {rows, cols}, v};
      attrs_t a0 = {.axes = axis0, .num_axes = 1, .has_axes = 1};
      attrs_t a1 = {.axes = axis1, .num_axes = 1, .has_axes = 1};
      weft_tensor* out = run_op(kReductions[o], &x, &a0);
      expect_reduction(kReductions[o], &x, out, 1);
      weft_tensor_destroy(out);
      out = run_op(kReductions[o], &x, &a1);
      expect_reduction(kReductions[o], &x, out, 2);
      weft_tensor_destroy(out);
      input_t x3 = {kTypes[t], 3, {4, rows / 2, cols}, v};
      attrs_t a2 = {.axes = axis2, .num_axes = 1, .has_axes = 1};
      out = run_op(kReductions[o], &x3, &a2);
      expect_reduction(kReductions[o], &x3, out, 2);
      weft_tensor_destroy(out);
    }
  free(v);
}

/* Worked by hand: x = [[1, 5, 3], [4, 2, 6]]. */
Test(ops_reduce, hand_worked_values_and_shapes) {
  const double v[6] = {1, 5, 3, 4, 2, 6};
  input_t x = {WEFT_FLOAT32, 2, {2, 3}, v};
  static const int64_t axis0[] = {0}, axis1[] = {-1};
  attrs_t rows = {.axes = axis0, .num_axes = 1, .has_axes = 1};
  attrs_t cols = {.axes = axis1, .num_axes = 1, .has_axes = 1, .keep_dims = 1};
  static const struct {
    const char* op;
    int by_rows;
    double expected[3];
  } cases[] = {
      {"Sum", 1, {5, 7, 9}},     {"Sum", 0, {9, 12}},
      {"Mean", 1, {2.5, 3.5, 4.5}}, {"Mean", 0, {3, 4}},
      {"Prod", 1, {4, 10, 18}},  {"Prod", 0, {15, 48}},
      {"Max", 1, {4, 5, 6}},     {"Max", 0, {5, 6}},
      {"Min", 1, {1, 2, 3}},     {"Min", 0, {1, 2}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    weft_tensor* out =
        run_op(cases[c].op, &x, cases[c].by_rows ? &rows : &cols);
    if (cases[c].by_rows)
      wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(3));
    else
      wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 1));
    wt_expect_f32(out, cases[c].expected, cases[c].by_rows ? 3 : 2, 0, 1e-7);
    weft_tensor_destroy(out);
  }
  /* Everything, keeping dims; and an empty list, which reduces nothing. */
  attrs_t all_keep = {.keep_dims = 1};
  weft_tensor* out = run_op("Prod", &x, &all_keep);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(1, 1));
  const double prod_all[1] = {720};
  wt_expect_f32(out, prod_all, 1, 0, 0);
  weft_tensor_destroy(out);
  attrs_t none = {.axes = axis0, .num_axes = 0, .has_axes = 1};
  out = run_op("Max", &x, &none);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 3));
  wt_expect_f32(out, v, 6, 0, 0);
  weft_tensor_destroy(out);
}

Test(ops_reduce, integers_wrap_and_mean_truncates) {
  /* 65536 * 65536 wraps to 0 in int32; 2^31 - 1 + 1 wraps to INT32_MIN. */
  const double big[4] = {65536, 65536, 2147483647, 1};
  static const int64_t axis1[] = {1};
  attrs_t a = {.axes = axis1, .num_axes = 1, .has_axes = 1};
  input_t x = {WEFT_INT32, 2, {2, 2}, big};
  weft_tensor* out = run_op("Prod", &x, &a);
  cr_expect_eq(get_i(out, 0), 0);
  cr_expect_eq(get_i(out, 1), 2147483647);
  weft_tensor_destroy(out);
  out = run_op("Sum", &x, &a);
  cr_expect_eq(get_i(out, 0), 131072);
  cr_expect_eq(get_i(out, 1), INT32_MIN);
  weft_tensor_destroy(out);
  /* uint8 sums wrap modulo 256; its mean does not (it sums wide). */
  const double bytes[3] = {200, 100, 10};
  input_t u = {WEFT_UINT8, 1, {3}, bytes};
  out = run_op("Sum", &u, NULL);
  cr_expect_eq(get_i(out, 0), 54);
  weft_tensor_destroy(out);
  out = run_op("Mean", &u, NULL);
  cr_expect_eq(get_i(out, 0), 103);
  weft_tensor_destroy(out);
  /* -7 / 2 truncates toward zero. */
  const double negative[2] = {-3, -4};
  input_t n = {WEFT_INT64, 1, {2}, negative};
  out = run_op("Mean", &n, NULL);
  cr_expect_eq(get_i(out, 0), -3);
  weft_tensor_destroy(out);
}

/* Max and Min return NaN when any reduced element is NaN, wherever it is:
 * first, last, or inside a vectorised stretch. */
Test(ops_reduce, nan_propagates_through_max_and_min) {
  double v[2 * 37];
  for (int i = 0; i < 74; ++i) v[i] = (double)(i % 11) - 5;
  static const int positions[] = {0, 1, 5, 17, 35, 36};
  static const int64_t axis1[] = {1}, axis0[] = {0};
  for (int t = 0; t < 2; ++t)
    for (size_t p = 0; p < sizeof positions / sizeof positions[0]; ++p) {
      double w[74];
      memcpy(w, v, sizeof w);
      w[positions[p]] = NAN;           /* row 0 */
      w[37 + 36 - positions[p]] = NAN; /* row 1, mirrored */
      input_t x = {kTypes[t], 2, {2, 37}, w};
      attrs_t by_row = {.axes = axis1, .num_axes = 1, .has_axes = 1};
      attrs_t by_col = {.axes = axis0, .num_axes = 1, .has_axes = 1};
      for (int o = 3; o < 5; ++o) {
        weft_tensor* out = run_op(kReductions[o], &x, &by_row);
        expect_reduction(kReductions[o], &x, out, 2);
        cr_expect(isnan(get_f(out, 0)) && isnan(get_f(out, 1)));
        weft_tensor_destroy(out);
        out = run_op(kReductions[o], &x, &by_col);
        expect_reduction(kReductions[o], &x, out, 1);
        weft_tensor_destroy(out);
        out = run_op(kReductions[o], &x, NULL);
        cr_expect(isnan(get_f(out, 0)), "%s of everything", kReductions[o]);
        weft_tensor_destroy(out);
      }
    }
}

Test(ops_reduce, empty_reductions) {
  static const int64_t axis0[] = {0}, axis1[] = {1};
  attrs_t a0 = {.axes = axis0, .num_axes = 1, .has_axes = 1};
  attrs_t a1 = {.axes = axis1, .num_axes = 1, .has_axes = 1};
  for (int t = 0; t < NUM_TYPES; ++t) {
    input_t x = {kTypes[t], 2, {0, 3}, NULL};
    /* Sum of nothing is 0, Prod of nothing is 1. */
    weft_tensor* out = run_op("Sum", &x, &a0);
    wt_expect_shape(out, kTypes[t], WT_SHAPE(3));
    for (int i = 0; i < 3; ++i)
      cr_expect(is_float(kTypes[t]) ? get_f(out, i) == 0 : get_i(out, i) == 0);
    weft_tensor_destroy(out);
    out = run_op("Prod", &x, NULL);
    wt_expect_shape(out, kTypes[t], NULL, 0);
    cr_expect(is_float(kTypes[t]) ? get_f(out, 0) == 1 : get_i(out, 0) == 1);
    weft_tensor_destroy(out);
    /* An empty output needs no value, even from Max. */
    out = run_op("Max", &x, &a1);
    wt_expect_shape(out, kTypes[t], WT_SHAPE(0));
    weft_tensor_destroy(out);
    /* Max and Min of nothing have no value: refused when the graph is built,
     * or when the kernel sees the shape. */
    for (int unknown = 0; unknown < 2; ++unknown) {
      WT_EXPECT_ERROR(try_op("Max", "max_of_nothing", &x, &a0, unknown, &out),
                      WEFT_INVALID_ARGUMENT, "max_of_nothing", "zero elements");
      WT_EXPECT_ERROR(try_op("Min", "min_of_nothing", &x, NULL, unknown, &out),
                      WEFT_INVALID_ARGUMENT, "min_of_nothing", "zero elements");
      if (!is_float(kTypes[t]))
        WT_EXPECT_ERROR(try_op("Mean", "int_mean", &x, &a0, unknown, &out),
                        WEFT_INVALID_ARGUMENT, "int_mean", "zero elements");
    }
  }
  input_t f = {WEFT_FLOAT64, 2, {0, 3}, NULL};
  weft_tensor* out = run_op("Mean", &f, &a0);
  for (int i = 0; i < 3; ++i) cr_expect(isnan(get_f(out, i)));
  weft_tensor_destroy(out);
}

Test(ops_reduce, bad_axes_are_refused_when_built) {
  const double v[6] = {1, 2, 3, 4, 5, 6};
  input_t x = {WEFT_FLOAT32, 2, {2, 3}, v};
  weft_tensor* out = NULL;
  static const int64_t out_of_range[] = {2}, negative[] = {-3}, twice[] = {1, -1};
  attrs_t a = {.axes = out_of_range, .num_axes = 1, .has_axes = 1};
  WT_EXPECT_ERROR(try_op("Prod", "prod_axis", &x, &a, 0, &out),
                  WEFT_INVALID_ARGUMENT, "prod_axis", "axis 2", "out of range");
  a.axes = negative;
  WT_EXPECT_ERROR(try_op("Max", "max_axis", &x, &a, 0, &out),
                  WEFT_INVALID_ARGUMENT, "max_axis", "-3");
  a.axes = twice;
  a.num_axes = 2;
  WT_EXPECT_ERROR(try_op("Min", "min_twice", &x, &a, 0, &out),
                  WEFT_INVALID_ARGUMENT, "min_twice", "twice");
  /* The same, found by the kernel when the rank was unknown. */
  a.axes = out_of_range;
  a.num_axes = 1;
  WT_EXPECT_ERROR(try_op("Sum", "late_axis", &x, &a, 1, &out),
                  WEFT_INVALID_ARGUMENT, "late_axis", "out of range");
  cr_expect_null(out);
}

/* ---- ArgMax, ArgMin --------------------------------------------------------- */

/* Index of the first element beyond all others along `axis` (NaN beating
 * everything, the first NaN winning) for every output position. */
static void arg_reference(const input_t* x, int32_t axis, int max,
                          int64_t* ref, int64_t* count) {
  int64_t outer = 1, inner = 1, len = x->dims[axis];
  for (int32_t i = 0; i < axis; ++i) outer *= x->dims[i];
  for (int32_t i = axis + 1; i < x->rank; ++i) inner *= x->dims[i];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      int64_t best = 0;
      for (int64_t j = 1; j < len; ++j) {
        double v = x->values[(o * len + j) * inner + c];
        double b = x->values[(o * len + best) * inner + c];
        if (isnan(b)) break;
        if (isnan(v) || (max ? v > b : v < b)) best = j;
      }
      ref[o * inner + c] = best;
    }
  *count = outer * inner;
}

static void check_arg(const char* op, const input_t* x, int64_t axis,
                      weft_dtype output_type) {
  attrs_t a = {.has_axis = 1, .axis = axis, .output_type = output_type};
  weft_tensor* out = run_op(op, x, &a);
  int32_t ax = (int32_t)(axis < 0 ? axis + x->rank : axis);
  int64_t dims[6];
  for (int32_t i = 0, j = 0; i < x->rank; ++i)
    if (i != ax) dims[j++] = x->dims[i];
  wt_expect_shape(out, output_type ? output_type : WEFT_INT64, dims,
                  x->rank - 1);
  int64_t* ref = malloc(sizeof(int64_t) * (size_t)(count_of(x) + 1));
  int64_t count;
  arg_reference(x, ax, !strcmp(op, "ArgMax"), ref, &count);
  for (int64_t i = 0; i < count; ++i)
    cr_expect_eq(get_i(out, i), ref[i],
                 "%s %s axis %lld: element %lld is %lld, expected %lld", op,
                 weft_dtype_name(x->dtype), (long long)axis, (long long)i,
                 (long long)get_i(out, i), (long long)ref[i]);
  free(ref);
  weft_tensor_destroy(out);
}

Test(ops_reduce, argmax_argmin_hand_worked_with_ties) {
  /* Row 0 has its max twice (index 1 and 3), row 1 its min twice. */
  const double v[8] = {1, 7, 3, 7, 2, 0, 9, 0};
  input_t x = {WEFT_FLOAT32, 2, {2, 4}, v};
  attrs_t rows = {.has_axis = 1, .axis = 1};
  weft_tensor* out = run_op("ArgMax", &x, &rows);
  wt_expect_shape(out, WEFT_INT64, WT_SHAPE(2));
  cr_expect_eq(get_i(out, 0), 1);
  cr_expect_eq(get_i(out, 1), 2);
  weft_tensor_destroy(out);
  out = run_op("ArgMin", &x, &rows);
  cr_expect_eq(get_i(out, 0), 0);
  cr_expect_eq(get_i(out, 1), 1);
  weft_tensor_destroy(out);
  /* The default axis is 0; int32 output on request. */
  attrs_t cols = {.output_type = WEFT_INT32};
  out = run_op("ArgMax", &x, &cols);
  wt_expect_shape(out, WEFT_INT32, WT_SHAPE(4));
  const int64_t expected[4] = {1, 0, 1, 0};
  for (int i = 0; i < 4; ++i) cr_expect_eq(get_i(out, i), expected[i]);
  weft_tensor_destroy(out);
  /* All equal: index 0. */
  const double same[5] = {3, 3, 3, 3, 3};
  input_t flat = {WEFT_INT32, 1, {5}, same};
  out = run_op("ArgMin", &flat, NULL);
  wt_expect_shape(out, WEFT_INT64, NULL, 0);
  cr_expect_eq(get_i(out, 0), 0);
  weft_tensor_destroy(out);
}

Test(ops_reduce, argmax_argmin_every_dtype_and_axis) {
  double v[4 * 6 * 5];
  wt_rng rng = {43};
  for (int t = 0; t < NUM_TYPES; ++t) {
    /* Few distinct values, so that ties are common. */
    for (int i = 0; i < 120; ++i)
      v[i] = (double)(wt_rng_next(&rng) % 7) + (kTypes[t] == WEFT_UINT8 ? 0 : -3);
    input_t x = {kTypes[t], 3, {4, 6, 5}, v};
    for (int64_t axis = -3; axis < 3; ++axis) {
      check_arg("ArgMax", &x, axis, axis % 2 ? WEFT_INT32 : 0);
      check_arg("ArgMin", &x, axis, axis % 2 ? 0 : WEFT_INT64);
    }
  }
}

/* Wide inner dims (several column blocks) and long rows, across threads. */
Test(ops_reduce, argmax_argmin_large) {
  const int64_t a = 8, b = 300, c = 601;
  double* v = malloc(sizeof(double) * (size_t)(a * b * c));
  wt_rng rng = {44};
  for (int64_t i = 0; i < a * b * c; ++i)
    v[i] = (double)(wt_rng_next(&rng) % 100000) * 0.5;
  for (int t = 0; t < 2; ++t) {
    input_t x = {kTypes[t], 3, {a, b, c}, v};
    for (int64_t axis = 0; axis < 3; ++axis) {
      check_arg("ArgMax", &x, axis, 0);
      check_arg("ArgMin", &x, axis, 0);
    }
  }
  free(v);
}

Test(ops_reduce, argmax_argmin_nan_picks_the_first_nan) {
  const double v[6] = {1, NAN, 5, NAN, -2, 0};
  for (int t = 0; t < 2; ++t) {
    input_t x = {kTypes[t], 1, {6}, v};
    check_arg("ArgMax", &x, 0, 0);
    check_arg("ArgMin", &x, 0, 0);
    weft_tensor* out = run_op("ArgMin", &x, NULL);
    cr_expect_eq(get_i(out, 0), 1);
    weft_tensor_destroy(out);
  }
}

Test(ops_reduce, argmax_argmin_refusals) {
  const double v[6] = {1, 2, 3, 4, 5, 6};
  input_t x = {WEFT_FLOAT32, 2, {2, 3}, v};
  weft_tensor* out = NULL;
  attrs_t a = {.has_axis = 1, .axis = 2};
  WT_EXPECT_ERROR(try_op("ArgMax", "arg_axis", &x, &a, 0, &out),
                  WEFT_INVALID_ARGUMENT, "arg_axis", "axis 2", "out of range");
  a.axis = -3;
  WT_EXPECT_ERROR(try_op("ArgMin", "arg_negative", &x, &a, 0, &out),
                  WEFT_INVALID_ARGUMENT, "arg_negative", "-3");
  WT_EXPECT_ERROR(try_op("ArgMin", "late_arg_axis", &x, &a, 1, &out),
                  WEFT_INVALID_ARGUMENT, "late_arg_axis", "out of range");
  attrs_t bad_type = {.output_type = WEFT_FLOAT32};
  WT_EXPECT_ERROR(try_op("ArgMax", "arg_type", &x, &bad_type, 0, &out),
                  WEFT_INVALID_ARGUMENT, "arg_type", "output_type");
  /* An empty axis has no index to give, even for an empty output. */
  input_t empty = {WEFT_FLOAT32, 2, {0, 3}, NULL};
  attrs_t axis0 = {.has_axis = 1, .axis = 0};
  for (int unknown = 0; unknown < 2; ++unknown)
    WT_EXPECT_ERROR(try_op("ArgMax", "arg_empty", &empty, &axis0, unknown, &out),
                    WEFT_INVALID_ARGUMENT, "arg_empty", "empty");
  input_t scalar = {WEFT_FLOAT32, 0, {0}, v};
  WT_EXPECT_ERROR(try_op("ArgMax", "arg_scalar", &scalar, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "arg_scalar", "out of range");
  cr_expect_null(out);
  /* Along the non-empty axis of an empty input: an empty result. */
  attrs_t axis1 = {.has_axis = 1, .axis = 1};
  out = run_op("ArgMin", &empty, &axis1);
  wt_expect_shape(out, WEFT_INT64, WT_SHAPE(0));
  weft_tensor_destroy(out);
}
