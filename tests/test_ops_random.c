/* The random ops of runtime/ops/CONVENTIONS.md on the CPU plugin:
 * reproducibility (same seeds, same values, in any session and for any
 * thread count; fresh values on every run), distributions checked against
 * their known moments with bounds of several standard errors, and the
 * build-time refusals.  No expected value here comes from the code under
 * test: only equality between runs, and statistics. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

#define CPU "/device:CPU:0"

/* Attributes of a random node; zero fields are left unset. */
typedef struct {
  const char* name;
  int64_t seed, seed2;
  weft_dtype dtype;
  const int64_t* shape;
  int32_t rank;
  int has_normal;
  double mean, stddev;
  int has_rate;
  double rate;
} random_attrs;

static weft_status* add_random(weft_graph* g, const char* op,
                               const random_attrs* a, const weft_output* input,
                               weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, op, a->name);
  if (input) weft_op_add_input(b, *input);
  if (a->seed) weft_op_set_attr_int(b, "seed", a->seed);
  if (a->seed2) weft_op_set_attr_int(b, "seed2", a->seed2);
  if (a->dtype) weft_op_set_attr_dtype(b, "dtype", a->dtype);
  if (a->shape) weft_op_set_attr_int_list(b, "shape", a->shape, a->rank);
  if (a->has_normal) {
    weft_op_set_attr_float(b, "mean", a->mean);
    weft_op_set_attr_float(b, "stddev", a->stddev);
  }
  if (a->has_rate) weft_op_set_attr_float(b, "rate", a->rate);
  weft_node* node = NULL;
  weft_status* s = weft_op_finish(b, &node);
  if (out) *out = (weft_output){node, 0};
  return s;
}

static weft_session* session_with_threads(weft_graph* g, int threads) {
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = CPU;
  options.intra_op_threads = threads;
  weft_session* session = NULL;
  WT_OK(weft_session_create(g, &options, &session));
  return session;
}

/* A generator's first `runs` results in a fresh graph and session. */
static void generate(const char* op, const random_attrs* a, int threads,
                     int runs, weft_tensor** out) {
  weft_graph* g = wt_graph_new();
  weft_output x;
  WT_OK(add_random(g, op, a, NULL, &x));
  weft_session* session = session_with_threads(g, threads);
  for (int r = 0; r < runs; ++r) out[r] = wt_run1(session, NULL, NULL, 0, x);
  weft_session_destroy(session);
  weft_graph_destroy(g);
}

/* Runs `op` over a fed float32 `input` (cast to `dtype` and back when dtype
 * is not float32): the first `runs` results. */
static void transform(const char* op, const random_attrs* a, weft_dtype dtype,
                      weft_tensor* input, int threads, int runs,
                      weft_tensor** out) {
  weft_graph* g = wt_graph_new();
  weft_output p = wt_placeholder(g, "x", weft_tensor_dtype(input),
                                 weft_tensor_dims(input),
                                 weft_tensor_rank(input));
  weft_output x = p, y;
  if (dtype != weft_tensor_dtype(input)) {
    weft_op_builder* b = weft_op_begin(g, "Cast", NULL);
    weft_op_add_input(b, p);
    weft_op_set_attr_dtype(b, "DstT", dtype);
    weft_node* node = NULL;
    WT_OK(weft_op_finish(b, &node));
    x = (weft_output){node, 0};
  }
  WT_OK(add_random(g, op, a, &x, &y));
  if (dtype != weft_tensor_dtype(input)) {
    weft_op_builder* b = weft_op_begin(g, "Cast", NULL);
    weft_op_add_input(b, y);
    weft_op_set_attr_dtype(b, "DstT", weft_tensor_dtype(input));
    weft_node* node = NULL;
    WT_OK(weft_op_finish(b, &node));
    y = (weft_output){node, 0};
  }
  weft_session* session = session_with_threads(g, threads);
  for (int r = 0; r < runs; ++r) out[r] = wt_run1(session, &p, &input, 1, y);
  weft_session_destroy(session);
  weft_graph_destroy(g);
}

static int same_bytes(const weft_tensor* a, const weft_tensor* b) {
  size_t n = weft_tensor_byte_size(a);
  if (n != weft_tensor_byte_size(b)) return 0;
  /* Empty tensors may have no data pointer at all.  Tested apart from the
   * memcmp: GCC folds `n == 0 || memcmp(p, q, n) == 0` into one memcmp
   * call, which UBSan then reports for NULL pointers. */
  const void* pa = weft_tensor_data(a);
  const void* pb = weft_tensor_data(b);
  if (n == 0) return 1;
  if (pa == NULL || pb == NULL) return 0;
  return memcmp(pa, pb, n) == 0;
}

/* Fraction of elements that differ between a and b (same shape). */
static double fraction_different(const weft_tensor* a, const weft_tensor* b) {
  size_t es = wt_dtype_bytes(weft_tensor_dtype(a));
  int64_t n = weft_tensor_element_count(a), differ = 0;
  const char* pa = weft_tensor_data(a);
  const char* pb = weft_tensor_data(b);
  for (int64_t i = 0; i < n; ++i)
    differ += memcmp(pa + i * es, pb + i * es, es) != 0;
  return n ? (double)differ / (double)n : 0;
}

static double element(const weft_tensor* t, int64_t i) {
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT32: return ((const float*)weft_tensor_data(t))[i];
    case WEFT_FLOAT64: return ((const double*)weft_tensor_data(t))[i];
    default: cr_assert_fail("unexpected dtype");
  }
  return 0;
}

typedef struct {
  double mean, variance, min, max;
} moments;

static moments moments_of(const weft_tensor* t) {
  int64_t n = weft_tensor_element_count(t);
  moments m = {0, 0, INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; ++i) {
    double v = element(t, i);
    m.mean += v;
    if (v < m.min) m.min = v;
    if (v > m.max) m.max = v;
  }
  m.mean /= (double)n;
  for (int64_t i = 0; i < n; ++i) {
    double d = element(t, i) - m.mean;
    m.variance += d * d;
  }
  m.variance /= (double)(n - 1);
  return m;
}

static void destroy_all(weft_tensor** t, int n) {
  for (int i = 0; i < n; ++i) weft_tensor_destroy(t[i]);
}

#define N_STATS 100000
static const char* const kGenerators[] = {"RandomUniform", "RandomNormal",
                                          "TruncatedNormal"};

/* ---- reproducibility ----------------------------------------------------- */

Test(ops_random, same_seeds_same_values_in_different_sessions) {
  for (int op = 0; op < 3; ++op) {
    random_attrs a = {.seed = 42, .seed2 = 7, .shape = WT_SHAPE(3, 5)};
    weft_tensor* first[2];
    weft_tensor* second[2];
    generate(kGenerators[op], &a, 0, 2, first);
    generate(kGenerators[op], &a, 0, 2, second);
    cr_expect(same_bytes(first[0], second[0]), "%s: run 0 differs",
              kGenerators[op]);
    cr_expect(same_bytes(first[1], second[1]), "%s: run 1 differs",
              kGenerators[op]);
    /* Successive runs of one node give fresh values. */
    cr_expect_gt(fraction_different(first[0], first[1]), 0.99,
                 "%s repeats itself", kGenerators[op]);
    destroy_all(first, 2);
    destroy_all(second, 2);
  }
}

Test(ops_random, different_seeds_differ) {
  const int64_t seeds[4][2] = {{1, 1}, {1, 2}, {2, 1}, {0, 1}};
  weft_tensor* out[4];
  for (int s = 0; s < 4; ++s) {
    random_attrs a = {.seed = seeds[s][0], .seed2 = seeds[s][1],
                      .shape = WT_SHAPE(64)};
    generate("RandomUniform", &a, 0, 1, &out[s]);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j)
      cr_expect_gt(fraction_different(out[i], out[j]), 0.95,
                   "seeds %d and %d agree", i, j);
  destroy_all(out, 4);
  /* Both seeds 0: a fresh seed per graph, so two graphs differ. */
  random_attrs unseeded = {.shape = WT_SHAPE(64)};
  generate("RandomNormal", &unseeded, 0, 1, &out[0]);
  generate("RandomNormal", &unseeded, 0, 1, &out[1]);
  cr_expect_gt(fraction_different(out[0], out[1]), 0.95);
  destroy_all(out, 2);
}

Test(ops_random, values_do_not_depend_on_thread_count) {
  for (int op = 0; op < 3; ++op) {
    const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
    for (int t = 0; t < 2; ++t) {
      random_attrs a = {.seed = 5, .seed2 = 6, .dtype = types[t],
                        .shape = WT_SHAPE(300, 301)};
      weft_tensor* one[2];
      weft_tensor* two[2];
      generate(kGenerators[op], &a, 1, 2, one);
      generate(kGenerators[op], &a, 2, 2, two);
      cr_expect(same_bytes(one[0], two[0]) && same_bytes(one[1], two[1]),
                "%s %s depends on the thread count", kGenerators[op],
                weft_dtype_name(types[t]));
      destroy_all(one, 2);
      destroy_all(two, 2);
    }
  }
  weft_tensor* x = wt_tensor(WEFT_FLOAT32, WT_SHAPE(70000), NULL);
  float* v = weft_tensor_data(x);
  for (int i = 0; i < 70000; ++i) v[i] = (float)i;
  const char* ops[2] = {"Dropout", "RandomShuffle"};
  for (int op = 0; op < 2; ++op) {
    random_attrs a = {.seed = 9, .has_rate = op == 0, .rate = 0.4};
    weft_tensor* one[1];
    weft_tensor* two[1];
    transform(ops[op], &a, WEFT_FLOAT32, x, 1, 1, one);
    transform(ops[op], &a, WEFT_FLOAT32, x, 2, 1, two);
    cr_expect(same_bytes(one[0], two[0]), "%s depends on the thread count",
              ops[op]);
    destroy_all(one, 1);
    destroy_all(two, 1);
  }
  weft_tensor_destroy(x);
}

/* ---- distributions ------------------------------------------------------- */

Test(ops_random, uniform_moments) {
  const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    random_attrs a = {.seed = 11, .seed2 = 3, .dtype = types[t],
                      .shape = WT_SHAPE(N_STATS)};
    weft_tensor* out[1];
    generate("RandomUniform", &a, 0, 1, out);
    wt_expect_shape(out[0], types[t], WT_SHAPE(N_STATS));
    moments m = moments_of(out[0]);
    /* Standard errors: mean sqrt(1/12/n) = 0.0009; variance about 0.0003. */
    cr_expect(m.min >= 0 && m.max < 1, "range [%g, %g]", m.min, m.max);
    cr_expect(fabs(m.mean - 0.5) < 0.005, "mean %g", m.mean);
    cr_expect(fabs(m.variance - 1.0 / 12) < 0.0015, "variance %g", m.variance);
    /* Ten equal bins each hold about a tenth (sd 0.001). */
    int64_t bins[10] = {0};
    for (int64_t i = 0; i < N_STATS; ++i)
      bins[(int)(element(out[0], i) * 10)]++;
    for (int b = 0; b < 10; ++b)
      cr_expect(fabs(bins[b] / (double)N_STATS - 0.1) < 0.005, "bin %d: %lld",
                b, (long long)bins[b]);
    weft_tensor_destroy(out[0]);
  }
}

Test(ops_random, normal_moments) {
  const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    random_attrs a = {.seed = 12, .dtype = types[t], .shape = WT_SHAPE(N_STATS),
                      .has_normal = 1, .mean = 2, .stddev = 3};
    weft_tensor* out[1];
    generate("RandomNormal", &a, 0, 1, out);
    moments m = moments_of(out[0]);
    /* Standard errors: mean 3/sqrt(n) = 0.0095; variance 9*sqrt(2/n) = 0.04. */
    cr_expect(fabs(m.mean - 2) < 0.05, "mean %g", m.mean);
    cr_expect(fabs(m.variance - 9) < 0.2, "variance %g", m.variance);
    int64_t within = 0;
    for (int64_t i = 0; i < N_STATS; ++i)
      within += fabs(element(out[0], i) - 2) <= 3;
    /* P(|z| <= 1) = 0.682689; standard error 0.0015. */
    cr_expect(fabs(within / (double)N_STATS - 0.682689) < 0.008, "%lld within",
              (long long)within);
    weft_tensor_destroy(out[0]);
  }
}

Test(ops_random, truncated_normal_stays_within_two_stddev) {
  const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    random_attrs a = {.seed = 13, .dtype = types[t], .shape = WT_SHAPE(N_STATS),
                      .has_normal = 1, .mean = -1, .stddev = 0.5};
    weft_tensor* out[2];
    generate("TruncatedNormal", &a, 0, 2, out);
    for (int r = 0; r < 2; ++r) {
      moments m = moments_of(out[r]);
      cr_expect(m.min >= -2 && m.max <= 0, "range [%g, %g]", m.min, m.max);
      /* Variance of a standard normal cut at +-2: 1 - 4 phi(2) / (2 Phi(2)
       * - 1) = 0.77374; scaled by 0.25 here. */
      cr_expect(fabs(m.mean + 1) < 0.01, "mean %g", m.mean);
      cr_expect(fabs(m.variance - 0.25 * 0.77374) < 0.005, "variance %g",
                m.variance);
      /* Values reach towards the bounds: the draw is not clamped or narrow. */
      cr_expect(m.min < -1.95 && m.max > -0.05, "range [%g, %g]", m.min, m.max);
    }
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
}

Test(ops_random, half_precision_generators) {
  for (int op = 0; op < 3; ++op) {
    weft_graph* g = wt_graph_new();
    random_attrs a = {.seed = 21,
                      .dtype = op == 0 ? WEFT_FLOAT16 : WEFT_BFLOAT16,
                      .shape = WT_SHAPE(N_STATS)};
    weft_output x;
    WT_OK(add_random(g, kGenerators[op], &a, NULL, &x));
    weft_op_builder* b = weft_op_begin(g, "Cast", NULL);
    weft_op_add_input(b, x);
    weft_op_set_attr_dtype(b, "DstT", WEFT_FLOAT32);
    weft_node* cast = NULL;
    WT_OK(weft_op_finish(b, &cast));
    weft_session* session = wt_session_new(g, CPU);
    weft_tensor* out = wt_run1(session, NULL, NULL, 0, (weft_output){cast, 0});
    moments m = moments_of(out);
    double want_mean = op == 0 ? 0.5 : 0, want_var = op == 0 ? 1.0 / 12 : 1;
    if (op == 2) want_var = 0.77374;
    cr_expect(fabs(m.mean - want_mean) < 0.02, "%s mean %g", kGenerators[op],
              m.mean);
    cr_expect(fabs(m.variance - want_var) < 0.03, "%s variance %g",
              kGenerators[op], m.variance);
    if (op == 0) cr_expect(m.min >= 0 && m.max < 1);
    if (op == 2) cr_expect(m.min >= -2 && m.max <= 2);
    weft_tensor_destroy(out);
    weft_session_destroy(session);
    weft_graph_destroy(g);
  }
}

/* ---- RandomShuffle ------------------------------------------------------- */

/* Rows of x hold (row, column) codes; a shuffle must keep every row whole and
 * use each exactly once. */
static int64_t* check_permutation(const weft_tensor* t, int64_t rows,
                                  int64_t cols) {
  const float* v = weft_tensor_data(t);
  int64_t* order = calloc((size_t)rows, sizeof *order);
  char* seen = calloc((size_t)rows, 1);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t src = (int64_t)v[r * cols] / 8;
    cr_assert(src >= 0 && src < rows && !seen[src], "row %lld: source %lld",
              (long long)r, (long long)src);
    seen[src] = 1;
    order[r] = src;
    for (int64_t c = 0; c < cols; ++c)
      cr_assert_eq(v[r * cols + c], (float)(src * 8 + c), "row %lld torn",
                   (long long)r);
  }
  free(seen);
  return order;
}

Test(ops_random, shuffle_is_a_permutation) {
  const weft_dtype types[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                              WEFT_INT64, WEFT_FLOAT16, WEFT_UINT8};
  const int64_t rows = 500, cols = 3;
  weft_tensor* x = wt_tensor(WEFT_FLOAT32, WT_SHAPE(rows, cols), NULL);
  float* v = weft_tensor_data(x);
  for (int64_t i = 0; i < rows * cols; ++i)
    v[i] = (float)(i / cols * 8 + i % cols);
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    /* uint8 and float16 hold only small codes exactly: 30 rows for them. */
    weft_tensor* in = x;
    if (types[t] == WEFT_UINT8 || types[t] == WEFT_FLOAT16)
      in = wt_tensor(WEFT_FLOAT32, WT_SHAPE(30, cols), v);
    int64_t n = weft_tensor_dim(in, 0);
    random_attrs a = {.seed = 3, .seed2 = 4};
    weft_tensor* out[2];
    transform("RandomShuffle", &a, types[t], in, 0, 2, out);
    int64_t* first = check_permutation(out[0], n, cols);
    int64_t* second = check_permutation(out[1], n, cols);
    int64_t moved = 0, same_order = 0;
    for (int64_t r = 0; r < n; ++r) {
      moved += first[r] != r;
      same_order += first[r] == second[r];
    }
    cr_expect_gt(moved, n / 2, "%s: %lld of %lld rows moved",
                 weft_dtype_name(types[t]), (long long)moved, (long long)n);
    cr_expect_lt(same_order, n / 2, "successive runs shuffle alike");
    free(first);
    free(second);
    destroy_all(out, 2);
    if (in != x) weft_tensor_destroy(in);
  }
  weft_tensor_destroy(x);
}

Test(ops_random, shuffle_is_unbiased) {
  /* 2000 shuffles of 4 rows: each value lands at each position with
   * probability 1/4 (sd 19.4 of 500).  A shuffle that never leaves a value in
   * place (Sattolo's) or favours the ends fails here. */
  weft_tensor* x = wt_tensor(WEFT_FLOAT32, WT_SHAPE(4, 1),
                             (const float[]){0, 8, 16, 24});
  weft_tensor* out[2000];
  random_attrs a = {.seed = 77};
  transform("RandomShuffle", &a, WEFT_FLOAT32, x, 0, 2000, out);
  int counts[4][4] = {{0}};
  for (int r = 0; r < 2000; ++r) {
    const float* v = weft_tensor_data(out[r]);
    for (int p = 0; p < 4; ++p) counts[p][(int)v[p] / 8]++;
  }
  for (int p = 0; p < 4; ++p)
    for (int value = 0; value < 4; ++value)
      cr_expect(abs(counts[p][value] - 500) < 100, "value %d at %d: %d times",
                value, p, counts[p][value]);
  destroy_all(out, 2000);
  weft_tensor_destroy(x);
}

Test(ops_random, shuffle_edge_shapes) {
  const int64_t shapes[4][3] = {{0}, {1, 1}, {1, 0}, {2, 5, 0}};
  for (int s = 0; s < 4; ++s) {
    int32_t rank = (int32_t)shapes[s][0];
    weft_tensor* x = wt_tensor(WEFT_FLOAT32, shapes[s] + 1, rank, NULL);
    if (weft_tensor_element_count(x)) *(float*)weft_tensor_data(x) = 5;
    random_attrs a = {.seed = 1};
    weft_tensor* out[1];
    transform("RandomShuffle", &a, WEFT_FLOAT32, x, 0, 1, out);
    wt_expect_shape(out[0], WEFT_FLOAT32, shapes[s] + 1, rank);
    cr_expect(same_bytes(out[0], x));
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(x);
  }
}

/* ---- Dropout ------------------------------------------------------------- */

Test(ops_random, dropout_keeps_and_scales) {
  const double rates[3] = {0.3, 0.5, 0.9};
  const weft_dtype types[2] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    weft_tensor* x = wt_tensor(types[t], WT_SHAPE(N_STATS), NULL);
    for (int64_t i = 0; i < N_STATS; ++i) {
      if (types[t] == WEFT_FLOAT32)
        ((float*)weft_tensor_data(x))[i] = (float)(i + 1);
      else
        ((double*)weft_tensor_data(x))[i] = (double)(i + 1) / 3;
    }
    for (int r = 0; r < 3; ++r) {
      random_attrs a = {.seed = 31, .seed2 = r, .has_rate = 1,
                        .rate = rates[r]};
      weft_tensor* out[2];
      transform("Dropout", &a, types[t], x, 0, 2, out);
      int64_t kept = 0, kept_both = 0;
      double scale = 1.0 / (1.0 - rates[r]);
      for (int64_t i = 0; i < N_STATS; ++i) {
        double in = element(x, i), y = element(out[0], i);
        if (y == 0) continue;
        ++kept;
        kept_both += element(out[1], i) != 0;
        /* float32 scales by the float nearest 1/(1-rate): 2 ulps. */
        double tol = types[t] == WEFT_FLOAT32 ? 2.5e-7 : 1e-15;
        cr_assert(fabs(y - in * scale) <= tol * fabs(in * scale),
                  "element %lld: %.17g, expected %.17g", (long long)i, y,
                  in * scale);
      }
      /* Kept fraction 1 - rate, standard error at most 0.0016. */
      double keep = 1 - rates[r], frac = kept / (double)N_STATS;
      cr_expect(fabs(frac - keep) < 0.008, "rate %g kept %g", rates[r], frac);
      /* Runs draw fresh masks: kept twice about (1 - rate)^2. */
      cr_expect(fabs(kept_both / (double)N_STATS - keep * keep) < 0.008,
                "rate %g: masks of two runs overlap %lld", rates[r],
                (long long)kept_both);
      destroy_all(out, 2);
    }
    weft_tensor_destroy(x);
  }
}

Test(ops_random, dropout_rate_zero_and_small_inputs) {
  float v[5] = {1, -2, 3, 0.5f, -0.25f};
  weft_tensor* x = wt_tensor(WEFT_FLOAT32, WT_SHAPE(5), v);
  random_attrs a = {.seed = 1, .has_rate = 1, .rate = 0};
  weft_tensor* out[1];
  transform("Dropout", &a, WEFT_FLOAT32, x, 0, 1, out);
  cr_expect(same_bytes(out[0], x), "rate 0 changed its input");
  weft_tensor_destroy(out[0]);
  /* rate 0.5 through float16: kept values are exactly doubled. */
  a.rate = 0.5;
  transform("Dropout", &a, WEFT_FLOAT16, x, 0, 1, out);
  const float* y = weft_tensor_data(out[0]);
  for (int i = 0; i < 5; ++i)
    cr_expect(y[i] == 0 || y[i] == 2 * v[i], "element %d: %g", i, y[i]);
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(x);
  x = wt_tensor(WEFT_FLOAT64, WT_SHAPE(3, 0), NULL);
  transform("Dropout", &a, WEFT_FLOAT64, x, 0, 1, out);
  wt_expect_shape(out[0], WEFT_FLOAT64, WT_SHAPE(3, 0));
  weft_tensor_destroy(out[0]);
  weft_tensor_destroy(x);
}

/* ---- build-time refusals ------------------------------------------------- */

static weft_status* try_generator(const char* op, const random_attrs* a) {
  weft_graph* g = wt_graph_new();
  weft_status* s = add_random(g, op, a, NULL, NULL);
  weft_graph_destroy(g);
  return s;
}

Test(ops_random, refusals) {
  random_attrs a = {.name = "rand_bad", .shape = WT_SHAPE(2, -1)};
  WT_EXPECT_ERROR(try_generator("RandomUniform", &a), WEFT_INVALID_ARGUMENT,
                  "rand_bad", "RandomUniform", "shape");
  a = (random_attrs){.name = "rand_bad", .shape = WT_SHAPE(2),
                     .dtype = WEFT_INT32};
  WT_EXPECT_ERROR(try_generator("RandomNormal", &a), WEFT_INVALID_ARGUMENT,
                  "rand_bad", "RandomNormal", "dtype", "int32");
  a = (random_attrs){.name = "rand_bad", .shape = WT_SHAPE(2),
                     .has_normal = 1, .mean = 0, .stddev = -1};
  WT_EXPECT_ERROR(try_generator("TruncatedNormal", &a), WEFT_INVALID_ARGUMENT,
                  "rand_bad", "TruncatedNormal", "stddev");
  a.stddev = 1;
  a.mean = NAN;
  WT_EXPECT_ERROR(try_generator("RandomNormal", &a), WEFT_INVALID_ARGUMENT,
                  "rand_bad", "mean");
  a = (random_attrs){.name = "rand_bad"};
  WT_EXPECT_ERROR(try_generator("RandomUniform", &a), WEFT_INVALID_ARGUMENT,
                  "rand_bad", "shape");

  weft_graph* g = wt_graph_new();
  weft_output f = wt_placeholder(g, "f", WEFT_FLOAT32, WT_SHAPE(4));
  weft_output i = wt_placeholder(g, "i", WEFT_INT32, WT_SHAPE(4));
  const double bad_rates[3] = {1, -0.1, NAN};
  for (int r = 0; r < 3; ++r) {
    a = (random_attrs){.name = "drop_bad", .has_rate = 1, .rate = bad_rates[r]};
    WT_EXPECT_ERROR(add_random(g, "Dropout", &a, &f, NULL),
                    WEFT_INVALID_ARGUMENT, "drop_bad", "Dropout", "rate");
  }
  a.rate = 0.5;
  WT_EXPECT_ERROR(add_random(g, "Dropout", &a, &i, NULL),
                  WEFT_INVALID_ARGUMENT, "drop_bad", "int32");
  a = (random_attrs){.name = "drop_bad"};
  WT_EXPECT_ERROR(add_random(g, "Dropout", &a, &f, NULL),
                  WEFT_INVALID_ARGUMENT, "drop_bad", "rate");
  weft_graph_destroy(g);
}
