/* Element-wise ops (runtime/ops/CONVENTIONS.md) on the CPU, every op on
 * every dtype, against references computed here: C loops over fixed-seed
 * random inputs, and hand-worked cases for the edges (wrapping, signs of
 * zero, NaN, infinities).  Inputs are fed through placeholders so no
 * constant folding stands between the test and the kernel. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_ops_elementwise_support.h"

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

/* Every binary op of kBinary with (or without) a bool result, on every
 * dtype it takes, over every shape pair. */
static void check_binary_table(int bool_out) {
  wt_rng rng = {42};
  int64_t xs[24], ys[24];
  for (size_t o = 0; o < sizeof kBinary / sizeof kBinary[0]; ++o)
    for (size_t d = 0; d < sizeof kDtypes / sizeof kDtypes[0]; ++d) {
      if (kBinary[o].bool_out != bool_out) continue;
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
  check_binary_table(0);
}
Test(ops_elementwise, comparisons_and_logic_every_dtype_and_broadcast) {
  check_binary_table(1);
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

Test(ops_elementwise, integer_division_floors_and_wraps) {
  const int64_t* x = L(7, -7, 7, -7, 0, I32MIN, I32MIN, 5);
  const int64_t* y = L(2, 2, -2, -2, 3, -1, 1, 7);
  expect_ints("Div", WEFT_INT32, 8, x, y,
              L(3, -3, -3, 3, 0, I32MIN, I32MIN, 0));
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
  expect_floats("FloorMod", 10,
                D(7.5, -7.5, 7.5, -7.5, 4, -4, 4, 5, INFINITY, -5),
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

/* Log of subnormal inputs: a vectorised log that clamps its argument to
 * the smallest normal returns log(FLT_MIN) for all of them.  Runs of 64
 * keep the vector path busy; the reference is logl, rounded once. */
Test(ops_elementwise, log_of_subnormals) {
  enum { n = 64 };
  float xf[n];
  double xd[n];
  const uint32_t bits_f[] = {0x00000001u, 0x00000100u, 0x00400000u,
                             0x007fffffu, 0x00800000u, 0x3f800000u};
  const uint64_t bits_d[] = {0x1ull, 0x0000000100000000ull,
                             0x0008000000000000ull, 0x000fffffffffffffull,
                             0x0010000000000000ull, 0x3ff0000000000000ull};
  for (int k = 0; k < n; ++k) {
    memcpy(&xf[k], &bits_f[k % 6], sizeof xf[k]);
    memcpy(&xd[k], &bits_d[k % 6], sizeof xd[k]);
  }
  struct operand in_f = OPERAND(WEFT_FLOAT32, xf, n);
  struct operand in_d = OPERAND(WEFT_FLOAT64, xd, n);
  weft_tensor* out_f = run_op("Log", &in_f, 1, WEFT_DTYPE_INVALID);
  weft_tensor* out_d = run_op("Log", &in_d, 1, WEFT_DTYPE_INVALID);
  const float* yf = weft_tensor_data(out_f);
  const double* yd = weft_tensor_data(out_d);
  for (int k = 0; k < n; ++k) {
    const float want_f = (float)logl((long double)xf[k]);
    const double want_d = (double)logl((long double)xd[k]);
    cr_expect(fabsf(yf[k] - want_f) <= 2 * FLT_EPSILON * fabsf(want_f),
              "float32 log(%a) = %a, want %a", (double)xf[k], (double)yf[k],
              (double)want_f);
    cr_expect(fabs(yd[k] - want_d) <= 2 * DBL_EPSILON * fabs(want_d),
              "float64 log(%a) = %a, want %a", xd[k], yd[k], want_d);
  }
  weft_tensor_destroy(out_f);
  weft_tensor_destroy(out_d);
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
  expect_cast(WEFT_BOOL, WEFT_INT32, 3, B(0, 1, 2),
              ((const int32_t[]){0, 1, 1}));
  expect_cast(WEFT_BOOL, WEFT_FLOAT16, 3, B(0, 1, 2), H(0, 0x3C00, 0x3C00));
  expect_cast(WEFT_UINT8, WEFT_BOOL, 3, B(0, 2, 255), B(0, 1, 1));
  expect_cast(WEFT_UINT8, WEFT_INT32, 2, B(200, 255),
              ((const int32_t[]){200, 255}));
  expect_cast(WEFT_INT32, WEFT_UINT8, 3, ((const int32_t[]){300, -1, 256}),
              B(44, 255, 0));
  expect_cast(WEFT_FLOAT64, WEFT_UINT8, 3, D(-1.5, 255.9, 256), B(0, 255, 0));
}

/* The narrow and unsigned integers (int8, int16, uint16, uint32, uint64)
 * at both ends of a Cast, against values worked by hand: integer to
 * narrower integer wraps modulo 2^bits; float to integer truncates toward
 * zero and is 0 when out of range or NaN (runtime/ops/CONVENTIONS.md). */
#define I8(...) ((const int8_t[]){__VA_ARGS__})
#define I16(...) ((const int16_t[]){__VA_ARGS__})
#define U32(...) ((const uint32_t[]){__VA_ARGS__})
#define U64(...) ((const uint64_t[]){__VA_ARGS__})
#define I32(...) ((const int32_t[]){__VA_ARGS__})
#define F32(...) ((const float[]){__VA_ARGS__})
Test(ops_elementwise, cast_narrow_and_unsigned_integers) {
  expect_cast(WEFT_INT32, WEFT_INT8, 4, I32(300, -129, 127, -1),
              I8(44, 127, 127, -1));
  expect_cast(WEFT_INT32, WEFT_INT16, 3, I32(70000, -32769, 5),
              I16(4464, 32767, 5));
  expect_cast(WEFT_INT32, WEFT_UINT16, 3, I32(-1, 65536, 65535),
              H(65535, 0, 65535));
  expect_cast(WEFT_INT64, WEFT_UINT32, 3, L(-1, 4294967296LL, 7),
              U32(4294967295u, 0, 7));
  expect_cast(WEFT_INT64, WEFT_UINT64, 2, L(-1, 9),
              U64(18446744073709551615ull, 9));
  expect_cast(WEFT_FLOAT32, WEFT_INT8, 5, F32(-1.9f, 127.5f, 128.f, -128.9f, NAN),
              I8(-1, 127, 0, -128, 0));
  expect_cast(WEFT_FLOAT64, WEFT_UINT64, 4,
              D(-0.5, 1e19, 1.8446744073709552e19, 3.99),
              U64(0, 10000000000000000000ull, 0, 3));
  expect_cast(WEFT_UINT64, WEFT_FLOAT64, 2, U64(18446744073709551615ull, 3),
              D(1.8446744073709552e19, 3));
  expect_cast(WEFT_INT8, WEFT_INT32, 3, I8(-128, -1, 127),
              I32(-128, -1, 127));
  expect_cast(WEFT_UINT16, WEFT_FLOAT32, 2, H(65535, 1), F32(65535.f, 1.f));
  expect_cast(WEFT_UINT32, WEFT_BOOL, 3, U32(0, 1, 4294967295u), B(0, 1, 1));
  expect_cast(WEFT_INT16, WEFT_FLOAT16, 2, I16(-2, 1), H(0xC000, 0x3C00));
}

/* An op the CPU plugin has no kernel for at a dtype is refused when the
 * session plans, naming the node, the dtype and the device, instead of a
 * kernel failing when it runs: Add is not compiled for the narrow and
 * unsigned integers (Maximum, Minimum and FloorMod are). */
Test(ops_elementwise, op_at_a_dtype_without_kernel_is_refused_at_plan) {
  const weft_dtype types[] = {WEFT_INT8, WEFT_INT16, WEFT_UINT16,
                              WEFT_UINT32, WEFT_UINT64};
  const uint64_t x[2] = {1, 2};
  for (size_t i = 0; i < sizeof types / sizeof *types; ++i) {
    struct operand in[2] = {OPERAND(types[i], x, 2), OPERAND(types[i], x, 2)};
    weft_tensor* out = NULL;
    char want[64];
    snprintf(want, sizeof want, "T=%s", weft_dtype_name(types[i]));
    WT_EXPECT_ERROR(try_op("Add", "sum", in, 2, WEFT_DTYPE_INVALID, NULL,
                           &out),
                    WEFT_INVALID_ARGUMENT, "'sum'", "no kernel for op Add",
                    want, "/device:CPU:0");
    cr_expect_null(out);
    weft_tensor* m = run_op("Maximum", in, 2, WEFT_DTYPE_INVALID);
    wt_expect_shape(m, types[i], WT_SHAPE(2));
    weft_tensor_destroy(m);
  }
}

/* The CPU Cast kernel says what it converts at both ends, so placement and
 * `weft ops` see the same coverage the kernel has. */
Test(ops_elementwise, cast_kernel_describes_both_ends) {
  WT_OK(weft_plugins_discover());
  int found = 0;
  for (int32_t i = 0; i < weft_kernel_count("Cast"); ++i) {
    weft_kernel_description k = {.struct_size = sizeof k};
    WT_OK(weft_kernel_describe("Cast", i, &k));
    if (strcmp(k.device_type, "CPU") != 0) continue;
    found = 1;
    cr_expect_str_eq(k.dtype_attr, "SrcT");
    cr_assert_eq(k.num_type_constraints, 1);
    cr_expect_str_eq(k.type_constraints[0].attr, "DstT");
    cr_assert_eq(k.type_constraints[0].num_dtypes, k.num_dtypes);
    for (int32_t d = 0; d < k.num_dtypes; ++d) {
      cr_expect_eq(k.type_constraints[0].dtypes[d], k.dtypes[d]);
    }
  }
  cr_expect(found, "no CPU Cast kernel");
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
  float two = 2; /* and a flat layout split across threads */
  struct operand flat[2] = {
      OPERAND(WEFT_FLOAT32, weft_tensor_data(sum), A, M, C),
      SCALAR(WEFT_FLOAT32, &two)};
  weft_tensor* twice = run_op("Mul", flat, 2, WEFT_DTYPE_INVALID);
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
        wrong += ((const float*)weft_tensor_data(twice))[k] != 2 * (xv + yv);
      }
  cr_expect_eq(wrong, 0, "%lld wrong elements", (long long)wrong);
  weft_tensor_destroy(sum);
  weft_tensor_destroy(greater);
  weft_tensor_destroy(select);
  weft_tensor_destroy(twice);
  free(x), free(y), free(cond);
}

/* ---- Errors: clear statuses naming the node, never a crash ------------- */

Test(ops_elementwise, build_errors_name_node_op_dtypes_and_shapes) {
  weft_graph* g = wt_graph_new();
  weft_output f = wt_placeholder(g, "f", WEFT_FLOAT32, WT_SHAPE(2, 3));
  weft_output d = wt_placeholder(g, "d", WEFT_FLOAT64, WT_SHAPE(2, 3));
  weft_output i = wt_placeholder(g, "i", WEFT_INT32, WT_SHAPE(2, 3));
  weft_output b = wt_placeholder(g, "b", WEFT_BOOL, WT_SHAPE(2, 3));
  weft_output v = wt_placeholder(g, "v", WEFT_FLOAT32, WT_SHAPE(4));
  weft_output u = wt_placeholder(g, "u", WEFT_FLOAT32, WT_SHAPE(-1, 3));
  BUILD_ERROR("Add", "mixed", IN(f, i), "int32", "float32");
  BUILD_ERROR("Add", "bool_add", IN(b, b), "bool");
  BUILD_ERROR("Neg", "bool_neg", IN(b), "bool");
  BUILD_ERROR("Sqrt", "int_sqrt", IN(i), "int32");
  BUILD_ERROR("RealDiv", "int_realdiv", IN(i, i), "int32");
  BUILD_ERROR("Greater", "bool_greater", IN(b, b), "bool");
  BUILD_ERROR("LogicalAnd", "float_and", IN(f, f), "float32");
  BUILD_ERROR("LogicalNot", "float_not", IN(f), "float32");
  BUILD_ERROR("Mul", "bad_shapes", IN(f, v), "[2,3]", "[4]");
  BUILD_ERROR("Equal", "bad_shapes_eq", IN(v, f), "[4]", "[2,3]");
  BUILD_ERROR("Select", "float_cond", IN(f, f, f), "condition", "float32");
  BUILD_ERROR("Select", "mixed_select", IN(b, f, d), "float32", "float64");
  BUILD_ERROR("Select", "bad_select", IN(b, v, f), "[2,3]", "[4]");

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
