/* The matrix ops of runtime/ops/CONVENTIONS.md on the CPU plugin: MatMul,
 * BatchMatMul, MatrixInverse, MatrixDeterminant.
 *
 * Expected values are computed here, independently of the plugin: naive
 * triple loops in double (or in 64-bit unsigned arithmetic for integers,
 * reduced to the dtype's width: wrapping is a ring homomorphism),
 * Gauss–Jordan elimination for inverses, cofactor expansion and Gaussian
 * elimination for determinants.  float16 and bfloat16 are encoded and
 * decoded by the test itself from values they hold exactly.  Inputs are fed
 * through placeholders; "unknown shape" placeholders defer the shape checks
 * to the kernel. */
#define _POSIX_C_SOURCE 200809L  /* setenv */
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

/* transpose_a/b for MatMul, adj_x/y for BatchMatMul; adjoint. */
typedef struct {
  int ta, tb, adjoint;
} attrs_t;

static int64_t count_of(const input_t* x) {
  int64_t n = 1;
  for (int32_t i = 0; i < x->rank; ++i) n *= x->dims[i];
  return n;
}

/* ---- float16 and bfloat16, by hand, for values they hold exactly ---- */

static uint32_t float_bits(double v) {
  float f = (float)v;
  uint32_t u;
  cr_assert((double)f == v, "%g is not exact in float32", v);
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint16_t to_bf16(double v) {
  uint32_t u = float_bits(v);
  cr_assert((u & 0xffff) == 0, "%g is not exact in bfloat16", v);
  return (uint16_t)(u >> 16);
}

static uint16_t to_f16(double v) {
  uint32_t u = float_bits(v);
  int32_t e = (int32_t)(u >> 23 & 0xff) - 127 + 15;
  if (v == 0) return 0;
  cr_assert(e > 0 && e < 31 && (u & 0x1fff) == 0, "%g is not exact in float16",
            v);
  return (uint16_t)((u >> 16 & 0x8000) | (uint32_t)e << 10 |
                    (u & 0x7fffff) >> 13);
}

static double from_16(weft_dtype dtype, uint16_t h) {
  if (dtype == WEFT_BFLOAT16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  int e = h >> 10 & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24)
                    : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

/* ---- running ops ---------------------------------------------------------- */

/* A tensor holding x's values in x's dtype. */
static weft_tensor* make_tensor(const input_t* x) {
  const int64_t n = count_of(x);
  char* p = malloc((size_t)(n + 1) * 8);
  cr_assert_not_null(p);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x->values[i];
    switch (x->dtype) {
      case WEFT_FLOAT32: ((float*)p)[i] = (float)v; break;
      case WEFT_FLOAT64: ((double*)p)[i] = v; break;
      case WEFT_INT32: ((int32_t*)p)[i] = (int32_t)v; break;
      case WEFT_INT64: ((int64_t*)p)[i] = (int64_t)v; break;
      case WEFT_FLOAT16: ((uint16_t*)p)[i] = to_f16(v); break;
      case WEFT_BFLOAT16: ((uint16_t*)p)[i] = to_bf16(v); break;
      default: cr_assert_fail("no writer for %s", weft_dtype_name(x->dtype));
    }
  }
  weft_tensor* t = wt_tensor(x->dtype, x->dims, x->rank, n ? p : NULL);
  free(p);
  return t;
}

static double get(const weft_tensor* t, int64_t i) {
  const void* d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT32: return ((const float*)d)[i];
    case WEFT_FLOAT64: return ((const double*)d)[i];
    case WEFT_INT32: return ((const int32_t*)d)[i];
    case WEFT_INT64: return (double)((const int64_t*)d)[i];
    case WEFT_FLOAT16: case WEFT_BFLOAT16:
      return from_16(weft_tensor_dtype(t), ((const uint16_t*)d)[i]);
    default: cr_assert_fail("no reader");
  }
  return 0;
}

/* Builds `op` over placeholders for `in` and runs it on the CPU with 3
 * intra-op threads, so that parallel paths run whatever the core count. */
static weft_status* try_op(const char* op, const char* name,
                           const input_t* in, int n, const attrs_t* a,
                           int unknown_shape, weft_tensor** out) {
  *out = NULL;
  weft_graph* graph = wt_graph_new();
  weft_output feeds[2];
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int i = 0; i < n; ++i) {
    feeds[i] = wt_placeholder(graph, i ? "y" : "x", in[i].dtype, in[i].dims,
                              unknown_shape ? -1 : in[i].rank);
    weft_op_add_input(b, feeds[i]);
  }
  if (a != NULL) {
    int batch = !strcmp(op, "BatchMatMul");
    if (a->ta) weft_op_set_attr_bool(b, batch ? "adj_x" : "transpose_a", 1);
    if (a->tb) weft_op_set_attr_bool(b, batch ? "adj_y" : "transpose_b", 1);
    if (a->adjoint) weft_op_set_attr_bool(b, "adjoint", 1);
  }
  weft_node* node = NULL;
  weft_status* status = weft_op_finish(b, &node);
  if (status == NULL) {
    weft_tensor* values[2];
    for (int i = 0; i < n; ++i) values[i] = make_tensor(&in[i]);
    weft_session_options options;
    weft_session_options_init(&options);
    options.devices = CPU;
    options.intra_op_threads = 3;
    weft_session* session = NULL;
    WT_OK(weft_session_create(graph, &options, &session));
    weft_output fetch = {node, 0};
    status = weft_session_run(session, feeds, values, n, &fetch, 1, NULL, 0,
                              out);
    weft_session_destroy(session);
    for (int i = 0; i < n; ++i) weft_tensor_destroy(values[i]);
  }
  weft_graph_destroy(graph);
  return status;
}

static weft_tensor* run_op(const char* op, const input_t* in, int n,
                           const attrs_t* a) {
  weft_tensor* out = NULL;
  WT_OK(try_op(op, NULL, in, n, a, 0, &out));
  cr_assert_not_null(out);
  return out;
}

/* ---- products --------------------------------------------------------------- */

/* Values each dtype holds exactly: eighths in [-2, 2] for the 16-bit floats
 * (so that their products and sums are exact in float32 and only the final
 * rounding differs), [-1, 1) floats otherwise, small integers for int32 and
 * integers beyond 32 bits for int64. */
static void fill(wt_rng* rng, weft_dtype dtype, double* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = wt_rng_next(rng);
    switch (dtype) {
      case WEFT_FLOAT16: case WEFT_BFLOAT16:
        v[i] = (double)((int64_t)(r % 33) - 16) / 8; break;
      case WEFT_FLOAT32: v[i] = (double)wt_rng_uniform(rng, -1, 1); break;
      case WEFT_FLOAT64: v[i] = (double)(int64_t)(r >> 11) * 0x1p-52 - 1; break;
      case WEFT_INT32: v[i] = (double)((int64_t)(r % 201) - 100); break;
      default: v[i] = (double)((int64_t)(r % 2000001) - 1000000) * 4099; break;
    }
  }
}

/* Checks `out` = x · y over broadcast batch dims (adj transposes the last
 * two dims of an operand); MatMul is the case of no batch dims. */
static void expect_products(const input_t* x, const input_t* y, int adj_x,
                            int adj_y, const weft_tensor* out) {
  const int32_t bx = x->rank - 2, by = y->rank - 2;
  const int32_t br = bx > by ? bx : by;
  const int64_t xr = x->dims[bx], xc = x->dims[bx + 1];
  const int64_t yr = y->dims[by], yc = y->dims[by + 1];
  const int64_t m = adj_x ? xc : xr, k = adj_x ? xr : xc, n = adj_y ? yr : yc;
  int64_t dims[8], batch = 1;
  for (int32_t i = 0; i < br; ++i) {
    int64_t dx = i - (br - bx) >= 0 ? x->dims[i - (br - bx)] : 1;
    int64_t dy = i - (br - by) >= 0 ? y->dims[i - (br - by)] : 1;
    dims[i] = dx == 1 ? dy : dx;
    batch *= dims[i];
  }
  dims[br] = m;
  dims[br + 1] = n;
  const weft_dtype t = x->dtype;
  wt_expect_shape(out, t, dims, br + 2);
  for (int64_t b = 0; b < batch; ++b) {
    /* The source matrices: output coordinates, 0 where an operand is 1. */
    int64_t rest = b, xi = 0, yi = 0, xs = 1, ys = 1;
    for (int32_t i = br - 1; i >= 0; rest /= dims[i--]) {
      int32_t ix = i - (br - bx), iy = i - (br - by);
      if (ix >= 0) xi += (x->dims[ix] == 1 ? 0 : rest % dims[i]) * xs;
      if (iy >= 0) yi += (y->dims[iy] == 1 ? 0 : rest % dims[i]) * ys;
      xs *= ix >= 0 ? x->dims[ix] : 1;
      ys *= iy >= 0 ? y->dims[iy] : 1;
    }
    const double* xv = x->values + xi * xr * xc;
    const double* yv = y->values + yi * yr * yc;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, magnitude = 0;
        uint64_t wrapped = 0;
        for (int64_t p = 0; p < k; ++p) {
          double a = adj_x ? xv[p * xc + i] : xv[i * xc + p];
          double c = adj_y ? yv[j * yc + p] : yv[p * yc + j];
          ref += a * c;
          magnitude += fabs(a * c);
          wrapped += (uint64_t)(int64_t)a * (uint64_t)(int64_t)c;
        }
        const int64_t at = (b * m + i) * n + j;
        if (t == WEFT_INT32 || t == WEFT_INT64) {
          const void* d = weft_tensor_data(out);
          int64_t got = t == WEFT_INT32 ? ((const int32_t*)d)[at]
                                        : ((const int64_t*)d)[at];
          int64_t want = t == WEFT_INT32 ? (int32_t)(uint32_t)wrapped
                                         : (int64_t)wrapped;
          cr_expect_eq(got, want, "%s element %lld: %lld, expected %lld",
                       weft_dtype_name(t), (long long)at, (long long)got,
                       (long long)want);
          continue;
        }
        /* float32/64: rounding of each term; 16-bit: the final rounding. */
        double tol = t == WEFT_FLOAT32   ? 2e-7 * (double)(k + 1) * (magnitude + 1)
                     : t == WEFT_FLOAT64 ? 4e-16 * (double)(k + 1) * (magnitude + 1)
                     : t == WEFT_FLOAT16 ? 0x1p-11 * fabs(ref)
                                         : 0x1p-8 * fabs(ref);
        double got = get(out, at);
        cr_expect(fabs(got - ref) <= tol,
                  "%s element %lld: %.10g, expected %.10g", weft_dtype_name(t),
                  (long long)at, got, ref);
      }
  }
}

static const weft_dtype kProductTypes[] = {
    WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32, WEFT_INT64, WEFT_FLOAT16,
    WEFT_BFLOAT16};
#define NUM_PRODUCT_TYPES 6

/* op over random x [xdims] and y [ydims] of each dtype and adj/transpose. */
static void check_product(const char* op, const int64_t* xdims, int32_t xrank,
                          const int64_t* ydims, int32_t yrank, uint64_t seed) {
  input_t x = {0, xrank, {0}, NULL}, y = {0, yrank, {0}, NULL};
  memcpy(x.dims, xdims, sizeof(int64_t) * (size_t)xrank);
  memcpy(y.dims, ydims, sizeof(int64_t) * (size_t)yrank);
  double* xv = malloc(sizeof(double) * (size_t)(count_of(&x) + 1));
  double* yv = malloc(sizeof(double) * (size_t)(count_of(&y) + 1));
  x.values = xv;
  y.values = yv;
  wt_rng rng = {seed};
  for (int t = 0; t < NUM_PRODUCT_TYPES; ++t)
    for (int adj = 0; adj < 4; ++adj) {
      x.dtype = y.dtype = kProductTypes[t];
      fill(&rng, x.dtype, xv, count_of(&x));
      fill(&rng, y.dtype, yv, count_of(&y));
      /* The dims given are the product's: swap the stored ones to adjoin. */
      input_t in[2] = {x, y};
      for (int i = 0; i < 2; ++i)
        if (adj >> i & 1) {
          int64_t* d = in[i].dims + in[i].rank - 2;
          int64_t rows = d[0];
          d[0] = d[1];
          d[1] = rows;
        }
      attrs_t a = {.ta = adj & 1, .tb = adj >> 1};
      weft_tensor* out = run_op(op, in, 2, &a);
      cr_log_info("%s %s adj=%d", op, weft_dtype_name(x.dtype), adj);
      expect_products(&in[0], &in[1], adj & 1, adj >> 1, out);
      weft_tensor_destroy(out);
    }
  free(xv);
  free(yv);
}

Test(ops_linalg, matmul_hand_worked) {
  const double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  input_t in[2] = {{WEFT_FLOAT32, 2, {2, 2}, a}, {WEFT_FLOAT32, 2, {2, 2}, b}};
  weft_tensor* out = run_op("MatMul", in, 2, NULL);
  const double expected[4] = {19, 22, 43, 50};
  wt_expect_f32(out, expected, 4, 0, 0);
  weft_tensor_destroy(out);
  attrs_t both = {.ta = 1, .tb = 1}; /* aᵀbᵀ = (ba)ᵀ = [[23, 31], [34, 46]] */
  out = run_op("MatMul", in, 2, &both);
  const double transposed[4] = {23, 31, 34, 46};
  wt_expect_f32(out, transposed, 4, 0, 0);
  weft_tensor_destroy(out);
  /* int32 wraps: 65536² to 0, (2^31 - 1) * 2 to -2. */
  const double c[2] = {65536, 2147483647}, d[2] = {65536, 2};
  input_t ints[2] = {{WEFT_INT32, 2, {2, 1}, c}, {WEFT_INT32, 2, {1, 2}, d}};
  out = run_op("MatMul", ints, 2, NULL);
  const int32_t* got = weft_tensor_data(out);
  cr_expect(got[0] == 0 && got[1] == 131072 && got[3] == -2);
  weft_tensor_destroy(out);
}

/* Sizes on both sides of the oneDNN and threading thresholds, odd sizes
 * for the edges of blocked kernels, and vectors.  The last two are split
 * on the CPU plugin's 3 threads (matmul_onednn.h: blocks of at least 2^21
 * multiply-adds): 300 rows in blocks of 155 and 145, and, with 40 rows (too
 * few for row blocks), 300 columns in blocks of 144, 144 and 12. */
Test(ops_linalg, matmul_every_dtype_and_transpose) {
  static const int64_t sizes[][3] = {{2, 3, 4},     {33, 70, 17},
                                     {64, 64, 64},  {1, 129, 1},
                                     {65, 1, 63},   {100, 150, 90},
                                     {300, 150, 90}, {40, 400, 300}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
    check_product("MatMul", WT_DIMS(sizes[s][0], sizes[s][1]), 2,
                  WT_DIMS(sizes[s][1], sizes[s][2]), 2, 100 + s);
}

/* OMP_THREAD_LIMIT caps OpenMP's parallel regions below the session's
 * intra_op_threads (3 here).  oneDNN splits a product for the thread count
 * it is created with; given fewer threads when it runs, it left part of the
 * output unwritten.  OpenMP reads the variable when the CPU plugin (and so
 * libgomp) is loaded, which happens in this test's own process, after the
 * setenv. */
Test(ops_linalg, matmul_under_an_openmp_thread_limit) {
  setenv("OMP_THREAD_LIMIT", "1", 1);
  check_product("MatMul", WT_DIMS(96, 200), 2, WT_DIMS(200, 80), 2, 29);
}

Test(ops_linalg, matmul_empty) {
  static const weft_dtype types[] = {WEFT_FLOAT32, WEFT_INT64, WEFT_BFLOAT16};
  const double b[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  for (int t = 0; t < 3; ++t) {
    input_t no_rows[2] = {{types[t], 2, {0, 3}, NULL}, {types[t], 2, {3, 4}, b}};
    weft_tensor* out = run_op("MatMul", no_rows, 2, NULL);
    wt_expect_shape(out, types[t], WT_SHAPE(0, 4));
    weft_tensor_destroy(out);
    /* K = 0: empty sums, so zeros rather than leftover memory. */
    input_t no_inner[2] = {{types[t], 2, {2, 0}, NULL},
                           {types[t], 2, {0, 3}, NULL}};
    out = run_op("MatMul", no_inner, 2, NULL);
    wt_expect_shape(out, types[t], WT_SHAPE(2, 3));
    for (int i = 0; i < 6; ++i) cr_expect_eq(get(out, i), 0);
    weft_tensor_destroy(out);
  }
}

Test(ops_linalg, matmul_refusals) {
  const double v[24] = {0};
  weft_tensor* out = NULL;
  input_t inner[2] = {{WEFT_FLOAT32, 2, {2, 3}, v}, {WEFT_FLOAT32, 2, {4, 5}, v}};
  WT_EXPECT_ERROR(try_op("MatMul", "mm_inner", inner, 2, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "mm_inner", "inner dimensions",
                  "[2,3]", "[4,5]");
  WT_EXPECT_ERROR(try_op("MatMul", "mm_late", inner, 2, NULL, 1, &out),
                  WEFT_INVALID_ARGUMENT, "mm_late", "inner dimensions");
  attrs_t tb = {.tb = 1}; /* b transposed is [5, 4]: still K 3 vs 5 */
  WT_EXPECT_ERROR(try_op("MatMul", "mm_tb", inner, 2, &tb, 0, &out),
                  WEFT_INVALID_ARGUMENT, "mm_tb", "transposed");
  input_t rank3[2] = {{WEFT_FLOAT32, 3, {2, 2, 3}, v},
                      {WEFT_FLOAT32, 2, {3, 2}, v}};
  WT_EXPECT_ERROR(try_op("MatMul", "mm_rank", rank3, 2, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "mm_rank", "rank-2");
  input_t bytes[2] = {{WEFT_UINT8, 2, {2, 2}, v}, {WEFT_UINT8, 2, {2, 2}, v}};
  WT_EXPECT_ERROR(try_op("MatMul", "mm_uint8", bytes, 2, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "mm_uint8", "uint8");
  cr_expect_null(out);
}

/* ---- BatchMatMul ------------------------------------------------------------ */

Test(ops_linalg, batch_matmul_hand_worked) {
  const double x[8] = {1, 2, 3, 4, 1, 0, 0, 1};
  const double y[8] = {5, 6, 7, 8, 2, 3, 4, 5};
  input_t in[2] = {{WEFT_FLOAT32, 3, {2, 2, 2}, x},
                   {WEFT_FLOAT32, 3, {2, 2, 2}, y}};
  weft_tensor* out = run_op("BatchMatMul", in, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 2, 2));
  const double expected[8] = {19, 22, 43, 50, 2, 3, 4, 5};
  wt_expect_f32(out, expected, 8, 0, 0);
  weft_tensor_destroy(out);
}

/* Broadcasting of every kind (and ranks that differ); matrices big enough
 * for oneDNN's batched call; many small ones (split across threads) and a
 * few big ones (every thread on each product). */
Test(ops_linalg, batch_matmul_broadcasting_every_dtype) {
  static const struct {
    int32_t xr, yr;
    int64_t x[4], y[4];
  } cases[] = {
      {3, 3, {3, 4, 5}, {3, 5, 2}},        {4, 3, {2, 1, 4, 5}, {3, 5, 6}},
      {2, 4, {4, 5}, {2, 3, 5, 6}},        {4, 4, {1, 3, 4, 5}, {2, 1, 5, 3}},
      {4, 3, {2, 1, 40, 30}, {3, 30, 50}}, {3, 3, {300, 4, 4}, {300, 4, 3}},
      {3, 3, {1000, 4, 4}, {1, 4, 4}},     {3, 3, {2, 70, 90}, {2, 90, 60}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
    check_product("BatchMatMul", cases[c].x, cases[c].xr, cases[c].y,
                  cases[c].yr, 200 + c);
}

Test(ops_linalg, batch_matmul_empty_and_refusals) {
  const double v[64] = {0};
  input_t no_batch[2] = {{WEFT_FLOAT64, 3, {0, 3, 4}, NULL},
                         {WEFT_FLOAT64, 3, {0, 4, 5}, NULL}};
  weft_tensor* out = run_op("BatchMatMul", no_batch, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT64, WT_SHAPE(0, 3, 5));
  weft_tensor_destroy(out);
  input_t no_inner[2] = {{WEFT_FLOAT32, 3, {2, 3, 0}, NULL},
                         {WEFT_FLOAT32, 3, {2, 0, 4}, NULL}};
  out = run_op("BatchMatMul", no_inner, 2, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 3, 4));
  for (int i = 0; i < 24; ++i) cr_expect_eq(get(out, i), 0);
  weft_tensor_destroy(out);

  input_t batch[2] = {{WEFT_FLOAT32, 3, {2, 3, 4}, v},
                      {WEFT_FLOAT32, 3, {3, 4, 5}, v}};
  for (int unknown = 0; unknown < 2; ++unknown)
    WT_EXPECT_ERROR(try_op("BatchMatMul", "bmm_batch", batch, 2, NULL, unknown,
                           &out),
                    WEFT_INVALID_ARGUMENT, "bmm_batch", "batch", "broadcast",
                    "[2,3,4]", "[3,4,5]");
  input_t inner[2] = {{WEFT_FLOAT32, 3, {2, 3, 4}, v},
                      {WEFT_FLOAT32, 3, {2, 3, 4}, v}};
  for (int unknown = 0; unknown < 2; ++unknown)
    WT_EXPECT_ERROR(try_op("BatchMatMul", "bmm_inner", inner, 2, NULL, unknown,
                           &out),
                    WEFT_INVALID_ARGUMENT, "bmm_inner", "inner dimensions");
  attrs_t adj_x = {.ta = 1}; /* x adjoint is [2, 4, 3]: K 3 vs 3, fine */
  out = run_op("BatchMatMul", inner, 2, &adj_x);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(2, 4, 4));
  weft_tensor_destroy(out);
  input_t vector[2] = {{WEFT_FLOAT32, 1, {4}, v}, {WEFT_FLOAT32, 2, {4, 2}, v}};
  WT_EXPECT_ERROR(try_op("BatchMatMul", "bmm_rank", vector, 2, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "bmm_rank", "rank >= 2");
  cr_expect_null(out);
}

/* ---- MatrixInverse ---------------------------------------------------------- */

/* Inverts the n×n matrix a (row-major) into `inverse` (unless NULL) by
 * Gauss–Jordan elimination with partial pivoting, in double, and returns
 * the determinant: the pivots' product, negated per row swap. */
static double gauss_jordan(const double* a, int64_t n, double* inverse) {
  const int64_t w2 = 2 * n;
  double* w = malloc(sizeof(double) * (size_t)(n * w2 + 1));
  double det = 1;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < w2; ++j)
      w[i * w2 + j] = j < n ? a[i * n + j] : (j - n == i);
  for (int64_t c = 0; c < n && det != 0; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (fabs(w[r * w2 + c]) > fabs(w[p * w2 + c])) p = r;
    for (int64_t j = 0; p != c && j < w2; ++j) {
      double t = w[c * w2 + j];
      w[c * w2 + j] = w[p * w2 + j];
      w[p * w2 + j] = t;
    }
    const double pivot = w[c * w2 + c];
    det *= p != c ? -pivot : pivot;
    if (pivot == 0) break;
    for (int64_t j = 0; j < w2; ++j) w[c * w2 + j] /= pivot;
    for (int64_t r = 0; r < n; ++r) {
      const double f = r == c ? 0 : w[r * w2 + c];
      for (int64_t j = 0; j < w2; ++j) w[r * w2 + j] -= f * w[c * w2 + j];
    }
  }
  for (int64_t i = 0; inverse != NULL && i < n * n; ++i)
    inverse[i] = w[i / n * w2 + n + i % n];
  free(w);
  return det;
}

/* Random matrices with a dominant diagonal: well conditioned. */
static void fill_invertible(wt_rng* rng, double* v, int64_t batch, int64_t n) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        v[(b * n + i) * n + j] = (double)wt_rng_uniform(rng, -1, 1) +
                                 (i == j ? (double)n * 0.75 : 0);
}

static void check_inverse(weft_dtype dtype, int64_t batch, int64_t n,
                          int adjoint, uint64_t seed) {
  double* v = malloc(sizeof(double) * (size_t)(batch * n * n));
  double* ref = malloc(sizeof(double) * (size_t)(n * n));
  double* at = malloc(sizeof(double) * (size_t)(n * n));
  wt_rng rng = {seed};
  fill_invertible(&rng, v, batch, n);
  input_t x = {dtype, 3, {batch, n, n}, v};
  attrs_t a = {.adjoint = adjoint};
  weft_tensor* out = run_op("MatrixInverse", &x, 1, &a);
  wt_expect_shape(out, dtype, WT_SHAPE(batch, n, n));
  const double tol = dtype == WEFT_FLOAT32 ? 2e-5 : 1e-12;
  for (int64_t b = 0; b < batch; ++b) {
    const double* m = v + b * n * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) at[i * n + j] = adjoint ? m[j * n + i] : m[i * n + j];
    cr_assert(gauss_jordan(at, n, ref) != 0, "test matrix is singular");
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double got = get(out, (b * n + i) * n + j);
        cr_expect(fabs(got - ref[i * n + j]) <= tol * (1 + fabs(ref[i * n + j])),
                  "matrix %lld (%lld, %lld): %.10g, expected %.10g",
                  (long long)b, (long long)i, (long long)j, got, ref[i * n + j]);
        /* And the defining property: op(A) · result = I. */
        double dot = 0;
        for (int64_t p = 0; p < n; ++p) dot += at[i * n + p] * get(out, (b * n + p) * n + j);
        cr_expect(fabs(dot - (i == j)) <= tol * 10,
                  "(op(A)·inverse)[%lld][%lld] = %.10g in matrix %lld",
                  (long long)i, (long long)j, dot, (long long)b);
      }
  }
  weft_tensor_destroy(out);
  free(v);
  free(ref);
  free(at);
}

Test(ops_linalg, inverse_hand_worked) {
  const double a[4] = {4, 7, 2, 6};
  input_t x = {WEFT_FLOAT64, 2, {2, 2}, a};
  weft_tensor* out = run_op("MatrixInverse", &x, 1, NULL);
  wt_expect_shape(out, WEFT_FLOAT64, WT_SHAPE(2, 2));
  const double expected[4] = {0.6, -0.7, -0.2, 0.4};
  for (int i = 0; i < 4; ++i) cr_expect(fabs(get(out, i) - expected[i]) < 1e-15);
  weft_tensor_destroy(out);
  attrs_t adjoint = {.adjoint = 1};
  out = run_op("MatrixInverse", &x, 1, &adjoint);
  const double transposed[4] = {0.6, -0.2, -0.7, 0.4};
  for (int i = 0; i < 4; ++i) cr_expect(fabs(get(out, i) - transposed[i]) < 1e-15);
  weft_tensor_destroy(out);
}

Test(ops_linalg, inverse_random_batches) {
  for (int adjoint = 0; adjoint < 2; ++adjoint) {
    check_inverse(WEFT_FLOAT32, 3, 6, adjoint, 300 + adjoint);
    check_inverse(WEFT_FLOAT64, 3, 6, adjoint, 302 + adjoint);
    check_inverse(WEFT_FLOAT64, 4, 40, adjoint, 304 + adjoint);
    check_inverse(WEFT_FLOAT32, 200, 3, adjoint, 306 + adjoint);
  }
  check_inverse(WEFT_FLOAT64, 1, 1, 0, 308);
}

Test(ops_linalg, inverse_of_singular_matrix_names_node_and_index) {
  /* Matrix 1 is exactly singular (row 2 = 2 × row 1). */
  const double v[12] = {1, 0, 0, 1, 1, 2, 2, 4, 3, 1, 1, 2};
  weft_tensor* out = NULL;
  for (int t = 0; t < 2; ++t) {
    input_t x = {t ? WEFT_FLOAT64 : WEFT_FLOAT32, 3, {3, 2, 2}, v};
    WT_EXPECT_ERROR(try_op("MatrixInverse", "singular_inv", &x, 1, NULL, 0, &out),
                    WEFT_INVALID_ARGUMENT, "singular_inv", "matrix 1",
                    "not invertible");
  }
  /* Singular in exact arithmetic, and to working precision in double. */
  const double n3[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  input_t x = {WEFT_FLOAT64, 2, {3, 3}, n3};
  WT_EXPECT_ERROR(try_op("MatrixInverse", "singular_3x3", &x, 1, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "singular_3x3", "matrix 0");
  const double zeros[4] = {0, 0, 0, 0}, nan[4] = {1, NAN, 0, 1};
  input_t z = {WEFT_FLOAT32, 2, {2, 2}, zeros}, q = {WEFT_FLOAT32, 2, {2, 2}, nan};
  WT_EXPECT_ERROR(try_op("MatrixInverse", "zero_inv", &z, 1, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "zero_inv");
  WT_EXPECT_ERROR(try_op("MatrixInverse", "nan_inv", &q, 1, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "nan_inv");
  cr_expect_null(out);
}

/* ---- MatrixDeterminant ------------------------------------------------------- */

/* Laplace expansion along the first row. */
static double cofactor_det(const double* a, int64_t n) {
  if (n == 0) return 1;
  if (n == 1) return a[0];
  double det = 0, minor[64];
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = 1; i < n; ++i)
      for (int64_t j = 0, k = 0; j < n; ++j)
        if (j != c) minor[(i - 1) * (n - 1) + k++] = a[i * n + j];
    det += (c % 2 ? -1 : 1) * a[c] * cofactor_det(minor, n - 1);
  }
  return det;
}

Test(ops_linalg, determinant_hand_worked) {
  /* 10; -306; a swap: -1; an even permutation with weights: 24. */
  const double v[4 + 9 + 4 + 9] = {4, 7, 2, 6, 6, 1, 1, 4, -2, 5, 2, 8, 7,
                                   0, 1, 1, 0, 0, 2, 0, 0, 0, 3, 4, 0, 0};
  const struct { int64_t n, offset; double det; } cases[] = {
      {2, 0, 10}, {3, 4, -306}, {2, 13, -1}, {3, 17, 24}};
  for (int t = 0; t < 2; ++t)
    for (int c = 0; c < 4; ++c) {
      input_t x = {t ? WEFT_FLOAT64 : WEFT_FLOAT32, 2,
                   {cases[c].n, cases[c].n}, v + cases[c].offset};
      weft_tensor* out = run_op("MatrixDeterminant", &x, 1, NULL);
      wt_expect_shape(out, x.dtype, NULL, 0);
      cr_expect(fabs(get(out, 0) - cases[c].det) <= 1e-5 * fabs(cases[c].det),
                "det = %.10g, expected %g", get(out, 0), cases[c].det);
      weft_tensor_destroy(out);
    }
}

/* [2, 2, 5, 5] against cofactor expansion, [2, 3, 8, 8] against elimination. */
Test(ops_linalg, determinant_random_batches) {
  double v[6 * 64];
  wt_rng rng = {400};
  for (int t = 0; t < 4; ++t) {
    const weft_dtype dtype = t & 1 ? WEFT_FLOAT64 : WEFT_FLOAT32;
    const int64_t n = t < 2 ? 5 : 8, batch = t < 2 ? 4 : 6;
    for (int64_t i = 0; i < batch * n * n; ++i)
      v[i] = (double)wt_rng_uniform(&rng, -2, 2);
    input_t x = {dtype, 4, {2, batch / 2, n, n}, v};
    weft_tensor* out = run_op("MatrixDeterminant", &x, 1, NULL);
    wt_expect_shape(out, dtype, WT_SHAPE(2, batch / 2));
    for (int64_t b = 0; b < batch; ++b) {
      const double* m = v + b * n * n;
      double ref = n == 5 ? cofactor_det(m, n) : gauss_jordan(m, n, NULL);
      cr_expect(fabs(get(out, b) - ref) <=
                    (t & 1 ? 1e-12 : 1e-5) * (double)n * (1 + fabs(ref)),
                "det %lld = %.10g, expected %.10g", (long long)b, get(out, b),
                ref);
    }
    weft_tensor_destroy(out);
  }
}

Test(ops_linalg, determinant_edge_cases) {
  /* Partial products beyond float32's range; a singular matrix; 0×0. */
  const double wide[16] = {1e30, 0, 0, 0, 0, 1e30, 0, 0,
                           0, 0, 1e-30, 0, 0, 0, 0, 1e-30};
  input_t x = {WEFT_FLOAT32, 2, {4, 4}, wide};
  weft_tensor* out = run_op("MatrixDeterminant", &x, 1, NULL);
  cr_expect(fabs(get(out, 0) - 1) < 1e-5, "det = %g, expected 1", get(out, 0));
  weft_tensor_destroy(out);
  const double singular[4] = {1, 2, 2, 4};
  input_t s = {WEFT_FLOAT64, 2, {2, 2}, singular};
  out = run_op("MatrixDeterminant", &s, 1, NULL);
  cr_expect_eq(get(out, 0), 0);
  weft_tensor_destroy(out);
  input_t empty = {WEFT_FLOAT64, 3, {3, 0, 0}, NULL};
  out = run_op("MatrixDeterminant", &empty, 1, NULL);
  wt_expect_shape(out, WEFT_FLOAT64, WT_SHAPE(3));
  for (int i = 0; i < 3; ++i) cr_expect_eq(get(out, i), 1);
  weft_tensor_destroy(out);
  input_t none = {WEFT_FLOAT32, 3, {0, 2, 2}, NULL};
  out = run_op("MatrixInverse", &none, 1, NULL);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(0, 2, 2));
  weft_tensor_destroy(out);
}

Test(ops_linalg, solver_refusals) {
  const double v[12] = {0};
  weft_tensor* out = NULL;
  static const char* const ops[] = {"MatrixInverse", "MatrixDeterminant"};
  for (int o = 0; o < 2; ++o) {
    input_t wide = {WEFT_FLOAT32, 3, {2, 2, 3}, v};
    for (int unknown = 0; unknown < 2; ++unknown)
      WT_EXPECT_ERROR(try_op(ops[o], "not_square", &wide, 1, NULL, unknown, &out),
                      WEFT_INVALID_ARGUMENT, "not_square", "square", "[2,2,3]");
    input_t vector = {WEFT_FLOAT64, 1, {4}, v};
    WT_EXPECT_ERROR(try_op(ops[o], "vector", &vector, 1, NULL, 0, &out),
                    WEFT_INVALID_ARGUMENT, "vector", "rank >= 2");
    input_t ints = {WEFT_INT32, 2, {2, 2}, v};
    WT_EXPECT_ERROR(try_op(ops[o], "int_solver", &ints, 1, NULL, 0, &out),
                    WEFT_INVALID_ARGUMENT, "int_solver", "int32");
  }
  cr_expect_null(out);
}
