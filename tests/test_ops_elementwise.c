/* Element-wise ops (runtime/ops/CONVENTIONS.md) on the CPU, every op on
 * every dtype, against references computed here: C loops over fixed-seed
 * random inputs, and hand-worked cases for the edges (wrapping, signs of
 * zero, NaN, infinities).  Inputs are fed through placeholders so no
 * constant folding stands between the test and the kernel. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

#define CPU "/device:CPU:0"

/* ---- Values: floats as double, everything else as int64 ---------------- */

typedef struct num {
  double f;
  int64_t i;
} num;

static num F(double f) { return (num){f, 0}; }
static num I(int64_t i) { return (num){0, i}; }
static int is_float(weft_dtype t) {
  return t == WEFT_FLOAT32 || t == WEFT_FLOAT64;
}

static num get(weft_dtype t, const void* p, int64_t k) {
  switch (t) {
    case WEFT_FLOAT32: return F(((const float*)p)[k]);
    case WEFT_FLOAT64: return F(((const double*)p)[k]);
    case WEFT_INT32: return I(((const int32_t*)p)[k]);
    case WEFT_INT64: return I(((const int64_t*)p)[k]);
    case WEFT_UINT8: case WEFT_BOOL: return I(((const uint8_t*)p)[k]);
    default: cr_assert_fail("no reader for %s", weft_dtype_name(t));
  }
  return I(0);
}

static void put(weft_dtype t, void* p, int64_t k, num v) {
  switch (t) {
    case WEFT_FLOAT32: ((float*)p)[k] = (float)v.f; break;
    case WEFT_FLOAT64: ((double*)p)[k] = v.f; break;
    case WEFT_INT32: ((int32_t*)p)[k] = (int32_t)v.i; break;
    case WEFT_INT64: ((int64_t*)p)[k] = v.i; break;
    case WEFT_UINT8: case WEFT_BOOL: ((uint8_t*)p)[k] = (uint8_t)v.i; break;
    default: cr_assert_fail("no writer for %s", weft_dtype_name(t));
  }
}

/* An integer result reduced modulo 2^bits of `t`, as the hardware wraps. */
static int64_t wrap(weft_dtype t, uint64_t v) {
  switch (t) {
    case WEFT_INT32: return (int32_t)(uint32_t)v;
    case WEFT_UINT8: return (uint8_t)v;
    default: return (int64_t)v;
  }
}
/* A float32 result rounded as float32 arithmetic rounds it. */
static double rnd(weft_dtype t, double x) {
  return t == WEFT_FLOAT32 ? (double)(float)x : x;
}
#define U(x) ((uint64_t)(x))

/* ---- References -------------------------------------------------------- */

typedef num (*ref2)(weft_dtype, num, num);
typedef num (*ref1)(weft_dtype, num);

static num r_add(weft_dtype t, num a, num b) {
  return is_float(t) ? F(a.f + b.f) : I(wrap(t, U(a.i) + U(b.i)));
}
static num r_sub(weft_dtype t, num a, num b) {
  return is_float(t) ? F(a.f - b.f) : I(wrap(t, U(a.i) - U(b.i)));
}
static num r_mul(weft_dtype t, num a, num b) {
  return is_float(t) ? F(a.f * b.f) : I(wrap(t, U(a.i) * U(b.i)));
}
static num r_div(weft_dtype t, num a, num b) {
  if (is_float(t)) return F(a.f / b.f);
  return b.i == -1 ? I(wrap(t, 0 - U(a.i))) : I(a.i / b.i);
}
static num r_floordiv(weft_dtype t, num a, num b) {
  if (is_float(t)) return F(floor(rnd(t, a.f / b.f)));
  if (b.i == -1) return I(wrap(t, 0 - U(a.i)));
  /* Exact in double for 32-bit operands: a non-integral quotient is at
   * least 1/|b| away from an integer, far more than the rounding error. */
  if (t != WEFT_INT64) return I((int64_t)floor((double)a.i / (double)b.i));
  int64_t q = a.i / b.i;
  return I(q * b.i != a.i && (a.i < 0) != (b.i < 0) ? q - 1 : q);
}
static num r_floormod(weft_dtype t, num a, num b) {
  if (is_float(t)) {
    double r = fmod(a.f, b.f);
    if (r == 0) return F(copysign(0.0, b.f));
    return F((r < 0) != (b.f < 0) ? rnd(t, r + b.f) : r);
  }
  return I(wrap(t, U(a.i) - U(r_floordiv(t, a, b).i) * U(b.i)));
}
static num r_pow(weft_dtype t, num a, num b) {
  if (is_float(t)) return F(pow(a.f, b.f));
  uint64_t r = 1; /* plain repeated multiplication, not squaring */
  for (int64_t e = 0; e < b.i; ++e) r *= U(a.i);
  return I(wrap(t, r));
}
static num r_max(weft_dtype t, num a, num b) {
  if (is_float(t)) return F(isnan(a.f) || isnan(b.f) ? NAN : fmax(a.f, b.f));
  return I(a.i > b.i ? a.i : b.i);
}
static num r_min(weft_dtype t, num a, num b) {
  if (is_float(t)) return F(isnan(a.f) || isnan(b.f) ? NAN : fmin(a.f, b.f));
  return I(a.i < b.i ? a.i : b.i);
}
#define CMP(name, op)                                                  \
  static num name(weft_dtype t, num a, num b) {                        \
    if (t == WEFT_BOOL) return I((a.i != 0) op (b.i != 0));            \
    return I(is_float(t) ? a.f op b.f : a.i op b.i);                   \
  }
CMP(r_greater, >)
CMP(r_greater_equal, >=)
CMP(r_less, <)
CMP(r_less_equal, <=)
CMP(r_equal, ==)
CMP(r_not_equal, !=)
static num r_and(weft_dtype t, num a, num b) {
  (void)t;
  return I(a.i != 0 && b.i != 0);
}
static num r_or(weft_dtype t, num a, num b) {
  (void)t;
  return I(a.i != 0 || b.i != 0);
}

static num r_neg(weft_dtype t, num a) {
  return is_float(t) ? F(-a.f) : I(wrap(t, 0 - U(a.i)));
}
static num r_abs(weft_dtype t, num a) {
  if (is_float(t)) return F(fabs(a.f));
  return a.i < 0 ? I(wrap(t, 0 - U(a.i))) : a;
}
static num r_sign(weft_dtype t, num a) {
  if (is_float(t)) return F(a.f > 0 ? 1 : a.f < 0 ? -1 : a.f);
  return I((a.i > 0) - (a.i < 0));
}
static num r_square(weft_dtype t, num a) { return r_mul(t, a, a); }
static num r_relu(weft_dtype t, num a) {
  return is_float(t) ? F(a.f < 0 ? 0 : a.f) : I(a.i > 0 ? a.i : 0);
}
#define FLOAT_REF(name, expr) \
  static num name(weft_dtype t, num a) { (void)t; return F(expr); }
FLOAT_REF(r_sqrt, sqrt(a.f))
FLOAT_REF(r_rsqrt, 1 / sqrt(a.f))
FLOAT_REF(r_exp, exp(a.f))
FLOAT_REF(r_log, log(a.f))
FLOAT_REF(r_tanh, tanh(a.f))
FLOAT_REF(r_sigmoid, 1 / (1 + exp(-a.f)))
static num r_not(weft_dtype t, num a) { (void)t; return I(a.i == 0); }

/* ---- Op tables --------------------------------------------------------- */

enum { D_F32 = 1, D_F64 = 2, D_I32 = 4, D_I64 = 8, D_U8 = 16, D_BOOL = 32 };
enum { FLOATS = D_F32 | D_F64, NUMERIC = FLOATS | D_I32 | D_I64 | D_U8 };
static const weft_dtype kDtypes[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                     WEFT_INT64, WEFT_UINT8, WEFT_BOOL};

/* `ulps`: allowed error in units of the dtype's epsilon (0: exact).  The
 * ranges are where random x and y are drawn; `nonzero_y` keeps integer
 * divisors away from 0. */
struct op {
  const char* name;
  void* ref; /* ref1 or ref2 */
  unsigned dtypes;
  int bool_out, ulps, nonzero_y;
  double lo, hi, ylo, yhi;
};

static const struct op kBinary[] = {
    {"Add", r_add, NUMERIC, 0, 0, 0, -100, 100, -100, 100},
    {"Sub", r_sub, NUMERIC, 0, 0, 0, -100, 100, -100, 100},
    {"Mul", r_mul, NUMERIC, 0, 0, 0, -100, 100, -100, 100},
    {"Div", r_div, NUMERIC, 0, 0, 1, -50, 50, -7, 7},
    {"RealDiv", r_div, FLOATS, 0, 0, 1, -50, 50, -7, 7},
    {"FloorDiv", r_floordiv, NUMERIC, 0, 0, 1, -50, 50, -7, 7},
    {"FloorMod", r_floormod, NUMERIC, 0, 0, 1, -50, 50, -7, 7},
    {"Pow", r_pow, NUMERIC, 0, 4, 0, -3, 3, 0, 7},
    {"Maximum", r_max, NUMERIC, 0, 0, 0, -3, 3, -3, 3},
    {"Minimum", r_min, NUMERIC, 0, 0, 0, -3, 3, -3, 3},
    {"Greater", r_greater, NUMERIC, 1, 0, 0, -3, 3, -3, 3},
    {"GreaterEqual", r_greater_equal, NUMERIC, 1, 0, 0, -3, 3, -3, 3},
    {"Less", r_less, NUMERIC, 1, 0, 0, -3, 3, -3, 3},
    {"LessEqual", r_less_equal, NUMERIC, 1, 0, 0, -3, 3, -3, 3},
    {"Equal", r_equal, NUMERIC | D_BOOL, 1, 0, 0, -3, 3, -3, 3},
    {"NotEqual", r_not_equal, NUMERIC | D_BOOL, 1, 0, 0, -3, 3, -3, 3},
    {"LogicalAnd", r_and, D_BOOL, 1, 0, 0, 0, 1, 0, 1},
    {"LogicalOr", r_or, D_BOOL, 1, 0, 0, 0, 1, 0, 1},
};

static const struct op kUnary[] = {
    {"Neg", r_neg, NUMERIC, 0, 0, 0, -100, 100, 0, 0},
    {"Abs", r_abs, NUMERIC, 0, 0, 0, -100, 100, 0, 0},
    {"Sign", r_sign, NUMERIC, 0, 0, 0, -3, 3, 0, 0},
    {"Square", r_square, NUMERIC, 0, 0, 0, -100, 100, 0, 0},
    {"Relu", r_relu, NUMERIC, 0, 0, 0, -100, 100, 0, 0},
    {"Sqrt", r_sqrt, FLOATS, 0, 0, 0, -1, 10, 0, 0},
    {"Rsqrt", r_rsqrt, FLOATS, 0, 2, 0, -1, 10, 0, 0},
    {"Exp", r_exp, FLOATS, 0, 8, 0, -10, 10, 0, 0},
    {"Log", r_log, FLOATS, 0, 4, 0, -1, 10, 0, 0},
    {"Sigmoid", r_sigmoid, FLOATS, 0, 8, 0, -10, 10, 0, 0},
    {"Tanh", r_tanh, FLOATS, 0, 8, 0, -5, 5, 0, 0},
    {"LogicalNot", r_not, D_BOOL, 1, 0, 0, 0, 1, 0, 0},
};

/* ---- Running ops ------------------------------------------------------- */

struct operand {
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[4];
  const void* data;
};

static int64_t count_of(int32_t rank, const int64_t* dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

/* Builds `op` (named `name`, NULL for a fresh name) over placeholders of
 * the operands' shapes (or `placeholder_dims` when given, -1 for unknown),
 * feeds them and runs on the CPU.  Build and run errors both come back. */
static weft_status* try_op(const char* op, const char* name,
                           const struct operand* in, int n, weft_dtype dst,
                           const int64_t* ph_dims, weft_tensor** out) {
  *out = NULL;
  weft_graph* graph = wt_graph_new();
  weft_output feeds[3];
  weft_tensor* values[3];
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int i = 0; i < n; ++i) {
    char placeholder[16];
    snprintf(placeholder, sizeof placeholder, "input%d", i);
    feeds[i] = wt_placeholder(graph, placeholder, in[i].dtype,
                              ph_dims ? ph_dims : in[i].dims, in[i].rank);
    values[i] = wt_tensor(in[i].dtype, in[i].dims, in[i].rank,
                          count_of(in[i].rank, in[i].dims) ? in[i].data : NULL);
    weft_op_add_input(b, feeds[i]);
  }
  if (dst != WEFT_DTYPE_INVALID) weft_op_set_attr_dtype(b, "DstT", dst);
  weft_node* node = NULL;
  weft_status* status = weft_op_finish(b, &node);
  if (status == NULL) {
    weft_session* session = wt_session_new(graph, CPU);
    weft_output fetch = {node, 0};
    status = weft_session_run(session, feeds, values, n, &fetch, 1, NULL, 0,
                              out);
    weft_session_destroy(session);
  }
  for (int i = 0; i < n; ++i) weft_tensor_destroy(values[i]);
  weft_graph_destroy(graph);
  return status;
}

static weft_tensor* run_op(const char* op, const struct operand* in, int n,
                           weft_dtype dst) {
  weft_tensor* out = NULL;
  wt_check_ok(try_op(op, NULL, in, n, dst, NULL, &out), op, __FILE__, __LINE__);
  cr_assert_not_null(out);
  return out;
}

/* Random inputs: integers in [lo, hi] (clamped to the dtype); floats half
 * the time integral so that comparisons meet equal values. */
static void fill(wt_rng* rng, weft_dtype t, void* p, int64_t n, double lo,
                 double hi, int nonzero) {
  if (t == WEFT_UINT8) lo = lo < 0 ? 0 : lo, hi = hi > 255 ? 255 : hi;
  if (t == WEFT_BOOL) lo = 0, hi = 1;
  for (int64_t k = 0; k < n; ++k) {
    double v;
    do {
      v = lo + (double)(wt_rng_next(rng) % (uint64_t)(hi - lo + 1));
      if (is_float(t) && (wt_rng_next(rng) & 1))
        v = wt_rng_uniform(rng, (float)lo, (float)hi);
    } while (nonzero && v == 0);
    put(t, p, k, is_float(t) ? F(v) : I((int64_t)v));
  }
}

/* Compares one element; NaN matches only NaN, exact ops compare exactly
 * after rounding the reference to the dtype. */
static void expect_num(weft_dtype t, num got, num want, int ulps,
                       const char* what, int64_t k) {
  if (!is_float(t)) {
    cr_expect_eq(got.i, want.i, "%s [%s] element %lld: %lld, expected %lld",
                 what, weft_dtype_name(t), (long long)k, (long long)got.i,
                 (long long)want.i);
    return;
  }
  double w = rnd(t, want.f), eps = t == WEFT_FLOAT32 ? 1.2e-7 : 2.3e-16;
  int ok = isnan(w) ? isnan(got.f)
                    : got.f == w || fabs(got.f - w) <= ulps * eps * (1 + fabs(w));
  cr_expect(ok, "%s [%s] element %lld: %.17g, expected %.17g", what,
            weft_dtype_name(t), (long long)k, got.f, w);
}

/* Flat index into an operand of the element output coordinate `coord`
 * (of rank `rank`) reads under broadcasting. */
static int64_t source(const struct operand* x, const int64_t* coord,
                      int32_t rank) {
  int64_t index = 0;
  for (int32_t i = 0; i < x->rank; ++i)
    index = index * x->dims[i] +
            (x->dims[i] == 1 ? 0 : coord[rank - x->rank + i]);
  return index;
}

/* The broadcast shape of n operands, written independently of the code
 * under test (aligned from the right; each dim equal or 1). */
static int32_t broadcast(const struct operand* in, int n, int64_t* dims) {
  int32_t rank = 0;
  for (int k = 0; k < n; ++k) rank = in[k].rank > rank ? in[k].rank : rank;
  for (int32_t i = 0; i < rank; ++i) {
    dims[i] = 1;
    for (int k = 0; k < n; ++k) {
      int32_t j = in[k].rank - rank + i;
      int64_t d = j >= 0 ? in[k].dims[j] : 1;
      if (d != 1) dims[i] = d;
    }
  }
  return rank;
}

static void coord_of(int64_t flat, const int64_t* dims, int32_t rank,
                     int64_t* coord) {
  for (int32_t i = rank - 1; i >= 0; --i) {
    coord[i] = flat % dims[i];
    flat /= dims[i];
  }
}

static void check_binary(const struct op* op, struct operand x,
                         struct operand y) {
  struct operand in[2] = {x, y};
  weft_tensor* out = run_op(op->name, in, 2, WEFT_DTYPE_INVALID);
  int64_t dims[4], coord[4];
  int32_t rank = broadcast(in, 2, dims);
  weft_dtype out_dtype = op->bool_out ? WEFT_BOOL : x.dtype;
  wt_expect_shape(out, out_dtype, dims, rank);
  ref2 fn = (ref2)op->ref;
  for (int64_t k = 0; k < count_of(rank, dims); ++k) {
    coord_of(k, dims, rank, coord);
    num want = fn(x.dtype, get(x.dtype, x.data, source(&x, coord, rank)),
                  get(y.dtype, y.data, source(&y, coord, rank)));
    expect_num(out_dtype, get(out_dtype, weft_tensor_data(out), k), want,
               op->ulps, op->name, k);
  }
  weft_tensor_destroy(out);
}

#define OPERAND(t, p, ...) \
  ((struct operand){(t), WT_RANK(__VA_ARGS__), {__VA_ARGS__}, (p)})
#define SCALAR(t, p) ((struct operand){(t), 0, {0}, (p)})

/* Shape pairs: NumPy's cases, scalars and an empty broadcast. */
static const struct {
  int32_t xr;
  int64_t xd[3];
  int32_t yr;
  int64_t yd[3];
} kShapes[] = {
    {2, {2, 3}, 2, {2, 3}},    {2, {3, 1}, 2, {1, 4}},
    {3, {2, 3, 4}, 1, {4}},    {1, {4}, 3, {2, 3, 4}},
    {0, {0}, 2, {2, 2}},       {2, {2, 2}, 0, {0}},
    {3, {2, 1, 4}, 2, {3, 1}}, {0, {0}, 0, {0}},
    {2, {0, 3}, 2, {1, 3}},    {1, {1}, 2, {0, 3}},
};

static void check_binary_table(int first, int last) {
  wt_rng rng = {42};
  static char xs[24 * 8], ys[24 * 8];
  for (int o = first; o <= last; ++o)
    for (size_t d = 0; d < sizeof kDtypes / sizeof kDtypes[0]; ++d) {
      if (!(kBinary[o].dtypes & (1u << d))) continue;
      weft_dtype t = kDtypes[d];
      for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; ++s) {
        struct operand x = {t, kShapes[s].xr, {0}, xs};
        struct operand y = {t, kShapes[s].yr, {0}, ys};
        memcpy(x.dims, kShapes[s].xd, sizeof kShapes[s].xd);
        memcpy(y.dims, kShapes[s].yd, sizeof kShapes[s].yd);
        const struct op* op = &kBinary[o];
        fill(&rng, t, xs, count_of(x.rank, x.dims), op->lo, op->hi, 0);
        fill(&rng, t, ys, count_of(y.rank, y.dims), op->ylo, op->yhi,
             op->nonzero_y && !is_float(t));
        cr_log_info("%s %s shapes #%zu", op->name, weft_dtype_name(t), s);
        check_binary(op, x, y);
      }
    }
}

Test(ops_elementwise, arithmetic_every_dtype_and_broadcast) {
  check_binary_table(0, 9);
}
Test(ops_elementwise, comparisons_and_logic_every_dtype_and_broadcast) {
  check_binary_table(10, 17);
}

Test(ops_elementwise, unary_every_dtype) {
  wt_rng rng = {7};
  double buffer[24];
  static const struct { int32_t rank; int64_t dims[2]; } shapes[] = {
      {2, {4, 6}}, {0, {0}}, {2, {0, 3}}};
  for (size_t o = 0; o < sizeof kUnary / sizeof kUnary[0]; ++o)
    for (size_t d = 0; d < sizeof kDtypes / sizeof kDtypes[0]; ++d) {
      if (!(kUnary[o].dtypes & (1u << d))) continue;
      for (size_t s = 0; s < 3; ++s) {
        struct operand x = {kDtypes[d], shapes[s].rank,
                            {shapes[s].dims[0], shapes[s].dims[1]}, buffer};
        int64_t n = count_of(x.rank, x.dims);
        fill(&rng, x.dtype, buffer, n, kUnary[o].lo, kUnary[o].hi, 0);
        weft_tensor* out = run_op(kUnary[o].name, &x, 1, WEFT_DTYPE_INVALID);
        wt_expect_shape(out, x.dtype, x.dims, x.rank);
        for (int64_t k = 0; k < n; ++k)
          expect_num(x.dtype, get(x.dtype, weft_tensor_data(out), k),
                     ((ref1)kUnary[o].ref)(x.dtype, get(x.dtype, buffer, k)),
                     kUnary[o].ulps, kUnary[o].name, k);
        weft_tensor_destroy(out);
      }
    }
}

/* ---- Hand-worked edges ------------------------------------------------- */

/* Runs op on int64 literals converted to `t` and compares with `want`. */
static void expect_ints(const char* op, weft_dtype t, int n, const int64_t* x,
                        const int64_t* y, const int64_t* want) {
  int64_t xb[16], yb[16];
  for (int k = 0; k < n; ++k) put(t, xb, k, I(x[k]));
  for (int k = 0; y && k < n; ++k) put(t, yb, k, I(y[k]));
  struct operand in[2] = {OPERAND(t, xb, n), OPERAND(t, yb, n)};
  weft_tensor* out = run_op(op, in, y ? 2 : 1, WEFT_DTYPE_INVALID);
  weft_dtype out_dtype = weft_tensor_dtype(out);
  for (int k = 0; k < n; ++k)
    expect_num(out_dtype, get(out_dtype, weft_tensor_data(out), k),
               I(want[k]), 0, op, k);
  weft_tensor_destroy(out);
}

/* The same for float64 and float32, exact, with signed zeros told apart. */
static void expect_floats(const char* op, int n, const double* x,
                          const double* y, const double* want) {
  for (int f32 = 0; f32 < 2; ++f32) {
    weft_dtype t = f32 ? WEFT_FLOAT32 : WEFT_FLOAT64;
    double xb[16], yb[16];
    for (int k = 0; k < n; ++k) put(t, xb, k, F(x[k]));
    for (int k = 0; y && k < n; ++k) put(t, yb, k, F(y[k]));
    struct operand in[2] = {OPERAND(t, xb, n), OPERAND(t, yb, n)};
    weft_tensor* out = run_op(op, in, y ? 2 : 1, WEFT_DTYPE_INVALID);
    for (int k = 0; k < n; ++k) {
      num g = get(t, weft_tensor_data(out), k);
      expect_num(t, g, F(want[k]), 0, op, k);
      cr_expect(isnan(want[k]) || signbit(g.f) == signbit(want[k]),
                "%s [%s] element %d: sign of %g", op, weft_dtype_name(t), k,
                g.f);
    }
    weft_tensor_destroy(out);
  }
}

#define N(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define L(...) ((const int64_t[]){__VA_ARGS__})
#define D(...) ((const double[]){__VA_ARGS__})
#define I32MIN INT32_MIN
#define I64MIN INT64_MIN

Test(ops_elementwise, integer_division_floors_and_wraps) {
  const int64_t* x = L(7, -7, 7, -7, 0, I32MIN, I32MIN, 5);
  const int64_t* y = L(2, 2, -2, -2, 3, -1, 1, 7);
  expect_ints("Div", WEFT_INT32, 8, x, y, L(3, -3, -3, 3, 0, I32MIN, I32MIN, 0));
  expect_ints("FloorDiv", WEFT_INT32, 8, x, y,
              L(3, -4, -4, 3, 0, I32MIN, I32MIN, 0));
  expect_ints("FloorMod", WEFT_INT32, 8, x, y, L(1, 1, -1, -1, 0, 0, 0, 5));
  expect_ints("FloorDiv", WEFT_INT64, 3, L(I64MIN, I64MIN, -1), L(-1, 3, 2),
              L(I64MIN, -3074457345618258603, -1));
  expect_ints("FloorMod", WEFT_INT64, 3, L(I64MIN, I64MIN, -1), L(-1, 3, 2),
              L(0, 1, 1));
  expect_ints("Div", WEFT_UINT8, 2, L(255, 7), L(3, 2), L(85, 3));
  expect_ints("FloorDiv", WEFT_UINT8, 2, L(255, 7), L(2, 9), L(127, 0));
  expect_ints("FloorMod", WEFT_UINT8, 2, L(255, 7), L(7, 9), L(3, 7));
}

Test(ops_elementwise, integer_arithmetic_wraps) {
  expect_ints("Add", WEFT_INT32, 2, L(INT32_MAX, I32MIN), L(1, -1),
              L(I32MIN, INT32_MAX));
  expect_ints("Sub", WEFT_INT64, 2, L(I64MIN, 0), L(1, I64MIN),
              L(INT64_MAX, I64MIN));
  expect_ints("Mul", WEFT_INT32, 2, L(65536, 46341), L(65536, 46341),
              L(0, -2147479015));
  expect_ints("Add", WEFT_UINT8, 2, L(200, 255), L(100, 1), L(44, 0));
  expect_ints("Sub", WEFT_UINT8, 1, L(3), L(5), L(254));
  expect_ints("Mul", WEFT_UINT8, 1, L(16), L(17), L(16));
  expect_ints("Neg", WEFT_INT32, 3, L(I32MIN, 5, 0), NULL, L(I32MIN, -5, 0));
  expect_ints("Abs", WEFT_INT64, 2, L(I64MIN, -9), NULL, L(I64MIN, 9));
  expect_ints("Square", WEFT_INT32, 2, L(65536, -46341), NULL,
              L(0, -2147479015));
  expect_ints("Neg", WEFT_UINT8, 3, L(1, 0, 255), NULL, L(255, 0, 1));
  expect_ints("Square", WEFT_UINT8, 2, L(16, 15), NULL, L(0, 225));
  expect_ints("Sign", WEFT_UINT8, 2, L(0, 200), NULL, L(0, 1));
  expect_ints("Relu", WEFT_UINT8, 2, L(0, 200), NULL, L(0, 200));
  expect_ints("Sign", WEFT_INT64, 3, L(I64MIN, 0, 7), NULL, L(-1, 0, 1));
}

Test(ops_elementwise, integer_pow_squares_and_wraps) {
  expect_ints("Pow", WEFT_INT32, 8, L(2, 2, -3, 0, 7, -1, 3, 1),
              L(31, 32, 3, 0, 0, 1001, 19, 1 << 30),
              L(I32MIN, 0, -27, 1, 1, -1, 1162261467, 1));
  expect_ints("Pow", WEFT_INT64, 2, L(3, -2), L(40, 63),
              L(-6289078614652622815, I64MIN));
  expect_ints("Pow", WEFT_UINT8, 3, L(2, 3, 3), L(8, 5, 6), L(0, 243, 217));
}

Test(ops_elementwise, float_edges) {
  /* floor of the rounded quotient (TensorFlow), not Python's divmod:
   * -0.5 // inf is -0 and 1 // 0.1 is 10 (Python: -1 and 9). */
  expect_floats("FloorDiv", 7, D(7.5, -7.5, 1, -1, 0, -0.5, 1),
                D(2, 2, 0, 0, 0, INFINITY, 0.1),
                D(3, -4, INFINITY, -INFINITY, NAN, -0.0, 10));
  expect_floats("FloorMod", 10, D(7.5, -7.5, 7.5, -7.5, 4, -4, 4, 5, INFINITY, -5),
                D(2, 2, -2, -2, 2, 2, -2, 0, 2, INFINITY),
                D(1.5, 0.5, -0.5, -1.5, 0, 0, -0.0, NAN, NAN, INFINITY));
  expect_floats("RealDiv", 3, D(1, -1, 0), D(0, 0, 0),
                D(INFINITY, -INFINITY, NAN));
  expect_floats("Pow", 5, D(2, -8, 0, -2, 4), D(-1, 1.0 / 3, -1, 3, 0.5),
                D(0.5, NAN, INFINITY, -8, 2));
  expect_floats("Maximum", 4, D(NAN, 1, -INFINITY, -1), D(1, NAN, 3, -2),
                D(NAN, NAN, 3, -1));
  expect_floats("Minimum", 4, D(NAN, 1, -INFINITY, -1), D(1, NAN, 3, -2),
                D(NAN, NAN, -INFINITY, -2));
  expect_floats("Sqrt", 5, D(-1, -0.0, INFINITY, 4, 0), NULL,
                D(NAN, -0.0, INFINITY, 2, 0));
  expect_floats("Rsqrt", 5, D(0, 4, -1, INFINITY, 0.25), NULL,
                D(INFINITY, 0.5, NAN, 0, 2));
  expect_floats("Log", 3, D(-1, 0, 1), NULL, D(NAN, -INFINITY, 0));
  expect_floats("Sign", 5, D(NAN, -0.0, -INFINITY, 0.25, 0), NULL,
                D(NAN, -0.0, -1, 1, 0));
  expect_floats("Abs", 3, D(-0.0, -INFINITY, NAN), NULL, D(0, INFINITY, NAN));
  expect_floats("Relu", 3, D(NAN, -INFINITY, INFINITY), NULL,
                D(NAN, 0, INFINITY));
}

Test(ops_elementwise, comparisons_with_nan_zero_and_stray_bools) {
  const double* x = D(NAN, NAN, 1, INFINITY, -0.0);
  const double* y = D(1, NAN, NAN, INFINITY, 0);
  for (int f32 = 0; f32 < 2; ++f32) {
    weft_dtype t = f32 ? WEFT_FLOAT32 : WEFT_FLOAT64;
    double xb[5], yb[5];
    for (int k = 0; k < 5; ++k) put(t, xb, k, F(x[k])), put(t, yb, k, F(y[k]));
    struct operand in[2] = {OPERAND(t, xb, 5), OPERAND(t, yb, 5)};
    static const struct { const char* op; int64_t want[5]; } cases[] = {
        {"Greater", {0, 0, 0, 0, 0}},      {"GreaterEqual", {0, 0, 0, 1, 1}},
        {"Less", {0, 0, 0, 0, 0}},         {"LessEqual", {0, 0, 0, 1, 1}},
        {"Equal", {0, 0, 0, 1, 1}},        {"NotEqual", {1, 1, 1, 0, 0}},
    };
    for (int c = 0; c < 6; ++c) {
      weft_tensor* out = run_op(cases[c].op, in, 2, WEFT_DTYPE_INVALID);
      wt_expect_shape(out, WEFT_BOOL, WT_SHAPE(5));
      for (int k = 0; k < 5; ++k)
        expect_num(WEFT_BOOL, get(WEFT_BOOL, weft_tensor_data(out), k),
                   I(cases[c].want[k]), 0, cases[c].op, k);
      weft_tensor_destroy(out);
    }
  }
  /* A bool byte of 2 is true: equal to 1, and its negation is false. */
  expect_ints("Equal", WEFT_BOOL, 3, L(2, 2, 0), L(1, 0, 0), L(1, 0, 1));
  expect_ints("NotEqual", WEFT_BOOL, 2, L(2, 0), L(1, 1), L(0, 1));
  expect_ints("LogicalAnd", WEFT_BOOL, 4, L(0, 0, 1, 2), L(0, 1, 0, 2),
              L(0, 0, 0, 1));
  expect_ints("LogicalOr", WEFT_BOOL, 4, L(0, 0, 1, 2), L(0, 1, 0, 0),
              L(0, 1, 1, 1));
  expect_ints("LogicalNot", WEFT_BOOL, 3, L(0, 1, 2), NULL, L(1, 0, 0));
}

/* ---- Select: a byte mover, so every dtype ------------------------------ */

static void check_select(struct operand c, struct operand a, struct operand b) {
  struct operand in[3] = {c, a, b};
  weft_tensor* out = run_op("Select", in, 3, WEFT_DTYPE_INVALID);
  int64_t dims[4], coord[4];
  int32_t rank = broadcast(in, 3, dims);
  wt_expect_shape(out, a.dtype, dims, rank);
  size_t w = wt_dtype_bytes(a.dtype);
  for (int64_t k = 0; k < count_of(rank, dims); ++k) {
    coord_of(k, dims, rank, coord);
    int pick = ((const uint8_t*)c.data)[source(&c, coord, rank)] != 0;
    const struct operand* from = pick ? &a : &b;
    const char* want = (const char*)from->data + w * source(from, coord, rank);
    cr_expect(memcmp((const char*)weft_tensor_data(out) + w * k, want, w) == 0,
              "Select [%s] element %lld", weft_dtype_name(a.dtype),
              (long long)k);
  }
  weft_tensor_destroy(out);
}

Test(ops_elementwise, select_every_dtype_and_broadcast) {
  wt_rng rng = {9};
  static const struct { int32_t r[3]; int64_t d[3][2]; } shapes[] = {
      {{2, 2, 0}, {{3, 1}, {1, 4}, {0}}}, {{0, 2, 2}, {{0}, {2, 3}, {2, 3}}},
      {{2, 1, 2}, {{2, 3}, {3}, {2, 1}}}, {{2, 2, 2}, {{2, 3}, {2, 3}, {2, 3}}},
      {{2, 2, 1}, {{0, 3}, {1, 3}, {1}}}};
  for (weft_dtype t = WEFT_FLOAT32; t <= WEFT_UINT64; ++t)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
      uint8_t bytes[3][12 * 8];
      for (int k = 0; k < 3; ++k)
        for (size_t i = 0; i < sizeof bytes[k]; ++i)
          bytes[k][i] = (uint8_t)wt_rng_next(&rng);
      for (int i = 0; i < 12; ++i) /* stray true bytes too */
        bytes[0][i] = (uint8_t[]){0, 1, 2, 255}[bytes[0][i] & 3];
      struct operand in[3];
      for (int k = 0; k < 3; ++k) {
        in[k] = (struct operand){k ? t : WEFT_BOOL, shapes[s].r[k],
                                 {shapes[s].d[k][0], shapes[s].d[k][1]},
                                 bytes[k]};
      }
      check_select(in[0], in[1], in[2]);
    }
}

/* ---- Identity and Cast over bool, uint8 and the 16-bit floats ---------- */

Test(ops_elementwise, identity_keeps_every_dtype) {
  uint8_t bytes[6 * 8];
  for (size_t i = 0; i < sizeof bytes; ++i) bytes[i] = (uint8_t)(i * 37 + 1);
  for (weft_dtype t = WEFT_FLOAT32; t <= WEFT_UINT64; ++t) {
    struct operand x = OPERAND(t, bytes, 2, 3);
    weft_tensor* out = run_op("Identity", &x, 1, WEFT_DTYPE_INVALID);
    wt_expect_shape(out, t, WT_SHAPE(2, 3));
    cr_expect(memcmp(weft_tensor_data(out), bytes, 6 * wt_dtype_bytes(t)) == 0,
              "Identity changed %s values", weft_dtype_name(t));
    weft_tensor_destroy(out);
  }
}

static void expect_cast(weft_dtype from, weft_dtype to, int n, const void* x,
                        const void* want) {
  struct operand in = OPERAND(from, x, n);
  weft_tensor* out = run_op("Cast", &in, 1, to);
  wt_expect_shape(out, to, in.dims, 1);
  size_t w = wt_dtype_bytes(to);
  for (int k = 0; k < n; ++k)
    cr_expect(memcmp((const char*)weft_tensor_data(out) + w * k,
                     (const char*)want + w * k, w) == 0,
              "Cast %s to %s, element %d", weft_dtype_name(from),
              weft_dtype_name(to), k);
  weft_tensor_destroy(out);
}

#define H(...) ((const uint16_t[]){__VA_ARGS__})
#define B(...) ((const uint8_t[]){__VA_ARGS__})

Test(ops_elementwise, cast_16_bit_floats_bools_and_bytes) {
  /* Encodings worked by hand: sign | exponent | mantissa, ties to even. */
  expect_cast(WEFT_FLOAT32, WEFT_FLOAT16, 5,
              ((const float[]){1.5f, -2, 65504, 1e6f, 1.0f / 3}),
              H(0x3E00, 0xC000, 0x7BFF, 0x7C00, 0x3555));
  expect_cast(WEFT_FLOAT16, WEFT_FLOAT32, 4, H(0x3C00, 0xC000, 0x7C00, 0x0001),
              ((const float[]){1, -2, INFINITY, 5.9604644775390625e-8f}));
  expect_cast(WEFT_FLOAT32, WEFT_BFLOAT16, 4,
              ((const float[]){1, -2.5f, 1.00390625f, 1.01171875f}),
              H(0x3F80, 0xC020, 0x3F80, 0x3F82));
  expect_cast(WEFT_BFLOAT16, WEFT_FLOAT64, 1, H(0x4049), D(3.140625));
  expect_cast(WEFT_FLOAT16, WEFT_BFLOAT16, 1, H(0x3C00), H(0x3F80));
  expect_cast(WEFT_FLOAT16, WEFT_UINT8, 1, H(0x5640), B(100));
  expect_cast(WEFT_FLOAT16, WEFT_BOOL, 3, H(0, 0x8000, 0x3C00), B(0, 0, 1));
  expect_cast(WEFT_INT64, WEFT_FLOAT16, 1, L(2049), H(0x6800));
  expect_cast(WEFT_BOOL, WEFT_INT32, 3, B(0, 1, 2), ((const int32_t[]){0, 1, 1}));
  expect_cast(WEFT_BOOL, WEFT_FLOAT16, 3, B(0, 1, 2), H(0, 0x3C00, 0x3C00));
  expect_cast(WEFT_UINT8, WEFT_BOOL, 3, B(0, 2, 255), B(0, 1, 1));
  expect_cast(WEFT_UINT8, WEFT_INT32, 2, B(200, 255),
              ((const int32_t[]){200, 255}));
  expect_cast(WEFT_INT32, WEFT_UINT8, 3, ((const int32_t[]){300, -1, 256}),
              B(44, 255, 0));
  expect_cast(WEFT_FLOAT64, WEFT_UINT8, 3, D(-1.5, 255.9, 256), B(0, 255, 0));
}

/* ---- Large broadcasts: the walk split across intra-op threads ---------- */

Test(ops_elementwise, large_broadcast_splits_rows_correctly) {
  enum { A = 64, M = 500, C = 33 };
  float* x = malloc(A * C * sizeof(float));
  float* y = malloc(M * sizeof(float));
  uint8_t* cond = malloc(A * C);
  wt_rng rng = {11};
  wt_rng_fill(&rng, x, A * C, -1, 1);
  wt_rng_fill(&rng, y, M, -1, 1);
  for (int i = 0; i < A * C; ++i) cond[i] = x[i] > 0;
  float zero = 0;
  struct operand in[3] = {OPERAND(WEFT_FLOAT32, x, A, 1, C),
                          OPERAND(WEFT_FLOAT32, y, 1, M, 1),
                          SCALAR(WEFT_FLOAT32, &zero)};
  weft_tensor* sum = run_op("Add", in, 2, WEFT_DTYPE_INVALID);
  weft_tensor* greater = run_op("Greater", in, 2, WEFT_DTYPE_INVALID);
  in[0] = OPERAND(WEFT_BOOL, cond, A, 1, C);
  weft_tensor* select = run_op("Select", in, 3, WEFT_DTYPE_INVALID);
  wt_expect_shape(select, WEFT_FLOAT32, WT_SHAPE(A, M, C));
  int64_t wrong = 0;
  for (int a = 0; a < A; ++a)
    for (int m = 0; m < M; ++m)
      for (int c = 0; c < C; ++c) {
        int64_t k = ((int64_t)a * M + m) * C + c;
        float xv = x[a * C + c], yv = y[m];
        wrong += ((const float*)weft_tensor_data(sum))[k] != xv + yv;
        wrong += ((const uint8_t*)weft_tensor_data(greater))[k] != (xv > yv);
        wrong += ((const float*)weft_tensor_data(select))[k] !=
                 (cond[a * C + c] ? yv : 0);
      }
  cr_expect_eq(wrong, 0, "%lld wrong elements", (long long)wrong);
  weft_tensor_destroy(sum);
  weft_tensor_destroy(greater);
  weft_tensor_destroy(select);
  free(x), free(y), free(cond);
}

/* ---- Errors: clear statuses naming the node, never a crash ------------- */

static weft_status* build(weft_graph* g, const char* op, const char* name,
                          const weft_output* in, int n, weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  for (int i = 0; i < n; ++i) weft_op_add_input(b, in[i]);
  weft_node* node = NULL;
  weft_status* s = weft_op_finish(b, &node);
  if (out && node) *out = (weft_output){node, 0};
  return s;
}

#define BUILD_ERROR(op, name, ...)                                        \
  WT_EXPECT_ERROR(build(g, op, name, (weft_output[]){__VA_ARGS__},        \
                        (int)(sizeof((weft_output[]){__VA_ARGS__}) /      \
                              sizeof(weft_output)), NULL),                \
                  WEFT_INVALID_ARGUMENT, name

Test(ops_elementwise, build_errors_name_node_op_dtypes_and_shapes) {
  weft_graph* g = wt_graph_new();
  weft_output f = wt_placeholder(g, "f", WEFT_FLOAT32, WT_SHAPE(2, 3));
  weft_output d = wt_placeholder(g, "d", WEFT_FLOAT64, WT_SHAPE(2, 3));
  weft_output i = wt_placeholder(g, "i", WEFT_INT32, WT_SHAPE(2, 3));
  weft_output b = wt_placeholder(g, "b", WEFT_BOOL, WT_SHAPE(2, 3));
  weft_output v = wt_placeholder(g, "v", WEFT_FLOAT32, WT_SHAPE(4));
  weft_output u = wt_placeholder(g, "u", WEFT_FLOAT32, WT_SHAPE(-1, 3));
  BUILD_ERROR("Add", "mixed", f, i), "Add", "int32", "float32");
  BUILD_ERROR("Add", "bool_add", b, b), "Add", "bool");
  BUILD_ERROR("Neg", "bool_neg", b), "Neg", "bool");
  BUILD_ERROR("Sqrt", "int_sqrt", i), "Sqrt", "int32");
  BUILD_ERROR("RealDiv", "int_realdiv", i, i), "RealDiv", "int32");
  BUILD_ERROR("Greater", "bool_greater", b, b), "Greater", "bool");
  BUILD_ERROR("LogicalAnd", "float_and", f, f), "LogicalAnd", "float32");
  BUILD_ERROR("LogicalNot", "float_not", f), "LogicalNot", "float32");
  BUILD_ERROR("Mul", "bad_shapes", f, v), "Mul", "[2,3]", "[4]");
  BUILD_ERROR("Equal", "bad_shapes_eq", v, f), "Equal", "[4]", "[2,3]");
  BUILD_ERROR("Select", "float_cond", f, f, f), "Select", "condition", "float32");
  BUILD_ERROR("Select", "mixed_select", b, f, d), "Select", "float32", "float64");
  BUILD_ERROR("Select", "bad_select", b, v, f), "Select", "[2,3]", "[4]");

  /* Partly known shapes propagate; comparisons give bool. */
  weft_output out;
  WT_OK(build(g, "GreaterEqual", "ge", (weft_output[]){u, f}, 2, &out));
  cr_expect_eq(weft_output_dtype(out), WEFT_BOOL);
  int64_t dims[4];
  int32_t rank;
  WT_OK(weft_output_shape(out, dims, 4, &rank));
  cr_expect(rank == 2 && dims[0] == 2 && dims[1] == 3);
  WT_OK(build(g, "Select", "sel", (weft_output[]){b, u, f}, 3, &out));
  cr_expect_eq(weft_output_dtype(out), WEFT_FLOAT32);
  WT_OK(build(g, "Sign", "sign", &u, 1, &out));
  WT_OK(weft_output_shape(out, dims, 4, &rank));
  cr_expect(rank == 2 && dims[0] == -1 && dims[1] == 3);
  weft_graph_destroy(g);
}

Test(ops_elementwise, run_errors_name_the_node) {
  static const char* const ops[] = {"Div", "FloorDiv", "FloorMod"};
  static const weft_dtype types[] = {WEFT_INT32, WEFT_INT64, WEFT_UINT8};
  int64_t x[2] = {5, 6}, y[2] = {1, 0};
  for (int o = 0; o < 3; ++o)
    for (int t = 0; t < 3; ++t) {
      int64_t xb[2], yb[2];
      for (int k = 0; k < 2; ++k)
        put(types[t], xb, k, I(x[k])), put(types[t], yb, k, I(y[k]));
      struct operand in[2] = {OPERAND(types[t], xb, 2),
                              OPERAND(types[t], yb, 2)};
      weft_tensor* out = NULL;
      WT_EXPECT_ERROR(try_op(ops[o], "zero_divisor", in, 2, 0, NULL, &out),
                      WEFT_INVALID_ARGUMENT, "zero_divisor", ops[o],
                      "division by zero");
      cr_expect_null(out);
    }
  int32_t base[2] = {2, 2}, exponent[2] = {3, -1};
  struct operand pow_in[2] = {OPERAND(WEFT_INT32, base, 2),
                              OPERAND(WEFT_INT32, exponent, 2)};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(try_op("Pow", "int_pow", pow_in, 2, 0, NULL, &out),
                  WEFT_INVALID_ARGUMENT, "int_pow", "negative exponent");

  /* float16 arithmetic has a schema but no CPU kernel: refused by name. */
  uint16_t halves[2] = {0x3C00, 0x4000};
  struct operand half_in[2] = {OPERAND(WEFT_FLOAT16, halves, 2),
                               OPERAND(WEFT_FLOAT16, halves, 2)};
  WT_EXPECT_ERROR(try_op("Add", "half_add", half_in, 2, 0, NULL, &out),
                  WEFT_INVALID_ARGUMENT, "half_add", "float16");

  /* Shapes unknown at build time are checked by the kernel. */
  float a[3] = {1, 2, 3};
  uint8_t c[2] = {1, 0};
  struct operand bad[3] = {OPERAND(WEFT_BOOL, c, 2),
                           OPERAND(WEFT_FLOAT32, a, 3),
                           OPERAND(WEFT_FLOAT32, a, 2)};
  WT_EXPECT_ERROR(try_op("Add", "late_add", bad + 1, 2, 0, WT_DIMS(-1), &out),
                  WEFT_INVALID_ARGUMENT, "late_add", "[3] and [2]");
  WT_EXPECT_ERROR(try_op("Select", "late_select", bad, 3, 0, WT_DIMS(-1), &out),
                  WEFT_INVALID_ARGUMENT, "late_select", "[2], [3] and [2]");
  cr_expect_null(out);
}
