/* The harness of test_ops_elementwise.c: values of every dtype as one type,
 * reference implementations of every element-wise op, the op tables the
 * tests iterate over, and helpers that build one op over placeholders, run
 * it on the CPU and compare.  The references are the tests' own account of
 * what each op does; nothing here reaches the code under test except
 * through the public API.  Included by test_ops_elementwise.c only. */
#ifndef WEFT_TEST_OPS_ELEMENTWISE_SUPPORT_H_
#define WEFT_TEST_OPS_ELEMENTWISE_SUPPORT_H_

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
    char placeholder[24];
    snprintf(placeholder, sizeof placeholder, "input%d", i);
    feeds[i] = wt_placeholder(graph, placeholder, in[i].dtype,
                              ph_dims ? ph_dims : in[i].dims, in[i].rank);
    values[i] = wt_tensor(in[i].dtype, in[i].dims, in[i].rank,
                          count_of(in[i].rank, in[i].dims) ? in[i].data : NULL);
    weft_op_add_input(b, feeds[i]);
  }
  if (dst != WEFT_DTYPE_INVALID) weft_op_set_attr_dtype(b, "DstT", dst);
  weft_status* status =
      wt_finish_and_run(graph, b, feeds, values, n, 0, 1, out);
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
                    : got.f == w ||
                          fabs(got.f - w) <= ulps * eps * (1 + fabs(w));
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

/* ---- Hand-worked cases ---------------------------------------------- */

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

#define L(...) ((const int64_t[]){__VA_ARGS__})
#define D(...) ((const double[]){__VA_ARGS__})
#define I32MIN INT32_MIN
#define I64MIN INT64_MIN

/* ---- Select: a byte mover, checked byte for byte ----------------------- */

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

/* ---- Cast: raw results against hand-worked encodings -------------------- */

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

/* ---- Building a node to see it refused ---------------------------------- */

static weft_status* build(weft_graph* g, const char* op, const char* name,
                          const weft_output* in, int n, weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  for (int i = 0; i < n; ++i) weft_op_add_input(b, in[i]);
  weft_node* node = NULL;
  weft_status* s = weft_op_finish(b, &node);
  if (out && node) *out = (weft_output){node, 0};
  return s;
}

/* Inputs of a node, as a compound literal whose length sizeof can tell. */
#define IN(...) ((weft_output[]){__VA_ARGS__})
/* Expects building `op` over `inputs` in graph `g` to be refused with a
 * message naming the node, the op and every string given. */
#define BUILD_ERROR(op, name, inputs, ...)                                 \
  WT_EXPECT_ERROR(build(g, op, name, inputs,                               \
                        (int)(sizeof(inputs) / sizeof(weft_output)), NULL), \
                  WEFT_INVALID_ARGUMENT, name, op, __VA_ARGS__)

#endif /* WEFT_TEST_OPS_ELEMENTWISE_SUPPORT_H_ */
