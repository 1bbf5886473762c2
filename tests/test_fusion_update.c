/* The planner's fusion of a MatMul into the ApplyGradientDescent that alone
 * reads it (runtime/session/fuse.cc): MatMulApplyGradientDescent.  Training
 * with it gives the variables the bits training without it does (the
 * product's scaling and subtraction round as the two kernels' do), at one
 * and two intra-op threads; run metadata lists the fusion; a product read
 * elsewhere, or whose variable lives on another device than the one the
 * product belongs on, stays unfused; the op used directly agrees with a float64
 * reference, also where the variable is an operand of its own product, and
 * refuses operands that cannot multiply into the variable. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_output variable(weft_graph* g, const char* name,
                            const int64_t* dims, int32_t rank,
                            uint64_t seed, weft_node** init) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  float* v = malloc((size_t)n * sizeof *v);
  wt_rng rng = {seed};
  wt_rng_fill(&rng, v, n, -0.1f, 0.1f);
  char cname[64];
  snprintf(cname, sizeof cname, "%s_init", name);
  weft_output c = wt_const(g, cname, wt_tensor(WEFT_FLOAT32, dims, rank, v));
  free(v);
  weft_output out;
  WT_OK(weft_graph_variable(g, name, c, &out, init));
  return out;
}

/* The fashion-MNIST MLP's shapes (bench/train_mlp.c): x[100,784] -> 256
 * ReLU -> 10, a squared-error loss, plain SGD. */
typedef struct mlp {
  weft_graph* g;
  weft_output x, y, w1, b1, w2;
  weft_node* init[3];
  weft_node* train;
} mlp;

static mlp build_mlp(int64_t batch) {
  mlp m;
  m.g = wt_graph_new();
  m.x = wt_placeholder(m.g, "x", WEFT_FLOAT32, WT_DIMS(batch, 784), 2);
  m.y = wt_placeholder(m.g, "y", WEFT_FLOAT32, WT_DIMS(batch, 10), 2);
  m.w1 = variable(m.g, "w1", WT_DIMS(784, 256), 2, 1, &m.init[0]);
  m.b1 = variable(m.g, "b1", WT_DIMS(256), 1, 2, &m.init[1]);
  m.w2 = variable(m.g, "w2", WT_DIMS(256, 10), 2, 3, &m.init[2]);
  weft_output h = wt_apply1(
      m.g, "Relu", "h",
      wt_apply2(m.g, "BiasAdd", NULL, wt_apply2(m.g, "MatMul", NULL, m.x,
                                                m.w1),
                m.b1));
  weft_output err = wt_apply2(m.g, "Sub", NULL,
                              wt_apply2(m.g, "MatMul", NULL, h, m.w2), m.y);
  weft_output loss =
      wt_apply1(m.g, "Mean", "loss", wt_apply2(m.g, "Mul", NULL, err, err));
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  o.learning_rate = 0.1;
  WT_OK(weft_minimize(m.g, loss, &o, "train", &m.train));
  return m;
}

static weft_tensor* random_f32(const int64_t* dims, int32_t rank,
                               uint64_t seed) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  float* v = malloc((size_t)n * sizeof *v);
  wt_rng rng = {seed};
  wt_rng_fill(&rng, v, n, -1, 1);
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, dims, rank, v);
  free(v);
  return t;
}

static weft_session* session_on(weft_graph* g, const char* devices,
                                int fused, int32_t intra) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = devices;
  o.intra_op_threads = intra;
  o.optimizations =
      fused ? WEFT_OPTIMIZE_ALL : WEFT_OPTIMIZE_ALL & ~WEFT_OPTIMIZE_FUSION;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &o, &s));
  return s;
}

static weft_session* session(weft_graph* g, int fused, int32_t intra) {
  return session_on(g, "CPU", fused, intra);
}

/* Three steps on the same batches; the variables' values after them in
 * out[0..2] (w1, b1, w2); the number of fusions of the last step. */
static int32_t train(mlp* m, int fused, int32_t intra, int64_t batch,
                     weft_tensor** out) {
  weft_session* s = session(m->g, fused, intra);
  wt_run_targets(s, m->init, 3);
  int32_t fusions = -1;
  for (int step = 0; step < 3; ++step) {
    weft_tensor* values[2] = {random_f32(WT_DIMS(batch, 784), 2, 10 + step),
                              random_f32(WT_DIMS(batch, 10), 2, 20 + step)};
    weft_output feeds[2] = {m->x, m->y};
    weft_run_metadata* md = weft_run_metadata_create();
    WT_OK(weft_session_run_with_metadata(s, feeds, values, 2, NULL, 0,
                                         &m->train, 1, NULL, md));
    fusions = weft_run_metadata_num_fused(md);
    if (fused && step == 2) {
      for (int32_t i = 0; i < fusions; ++i) {
        const char *node = NULL, *what = NULL;
        WT_OK(weft_run_metadata_fused(md, i, &node, &what));
        cr_expect(strstr(what, "MatMul '") &&
                      strstr(what, "ApplyGradientDescent '"),
                  "fusion %d described as '%s'", i, what);
      }
    }
    weft_run_metadata_destroy(md);
    weft_tensor_destroy(values[0]);
    weft_tensor_destroy(values[1]);
  }
  const weft_output vars[3] = {m->w1, m->b1, m->w2};
  WT_OK(weft_session_run(s, NULL, NULL, 0, vars, 3, NULL, 0, out));
  weft_session_destroy(s);
  return fusions;
}

static void expect_same_bits(weft_tensor* a, weft_tensor* b,
                             const char* what) {
  const int64_t n = weft_tensor_element_count(a);
  cr_assert_eq(weft_tensor_element_count(b), n);
  const float* x = weft_tensor_data(a);
  const float* y = weft_tensor_data(b);
  int64_t differ = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (memcmp(&x[i], &y[i], sizeof(float)) != 0) {
      if (first < 0) first = i;
      ++differ;
    }
  cr_expect_eq(differ, 0,
               "%s: %lld of %lld elements differ (first %lld: %.9g vs "
               "%.9g)", what, (long long)differ, (long long)n,
               (long long)first, first < 0 ? 0.0 : (double)x[first],
               first < 0 ? 0.0 : (double)y[first]);
}

Test(fusion_update, training_gives_the_unfused_bits) {
  const int64_t batch = 100;
  mlp m = build_mlp(batch);
  const char* names[3] = {"w1", "b1", "w2"};
  for (int32_t intra = 1; intra <= 2; ++intra) {
    weft_tensor* plain[3];
    weft_tensor* fused[3];
    cr_expect_eq(train(&m, 0, intra, batch, plain), 0);
    /* w1's and w2's updates; b1's gradient is a reduction, not a MatMul. */
    cr_expect_eq(train(&m, 1, intra, batch, fused), 2,
                 "two fusions at %d thread(s)", intra);
    for (int i = 0; i < 3; ++i) {
      char what[64];
      snprintf(what, sizeof what, "%s at %d thread(s)", names[i], intra);
      expect_same_bits(plain[i], fused[i], what);
      weft_tensor_destroy(plain[i]);
      weft_tensor_destroy(fused[i]);
    }
  }
  weft_graph_destroy(m.g);
}

/* A gradient that is also fetched is read elsewhere: nothing fuses. */
Test(fusion_update, a_product_read_elsewhere_stays_unfused) {
  weft_graph* g = wt_graph_new();
  weft_node* init = NULL;
  weft_output w = variable(g, "w", WT_DIMS(40, 30), 2, 5, &init);
  weft_output a = wt_const(g, "a", random_f32(WT_DIMS(50, 40), 2, 6));
  weft_output b = wt_const(g, "b", random_f32(WT_DIMS(50, 30), 2, 7));
  weft_op_builder* p = weft_op_begin(g, "MatMul", "delta");
  weft_op_add_input(p, a);
  weft_op_add_input(p, b);
  weft_op_set_attr_bool(p, "transpose_a", 1);
  weft_node* delta = NULL;
  WT_OK(weft_op_finish(p, &delta));
  weft_output lr = wt_const(g, "lr", wt_scalar_f32(0.25f));
  weft_op_builder* u = weft_op_begin(g, "ApplyGradientDescent", "update");
  weft_op_add_input(u, w);
  weft_op_add_input(u, lr);
  weft_op_add_input(u, (weft_output){delta, 0});
  weft_node* update = NULL;
  WT_OK(weft_op_finish(u, &update));
  for (int also_fetch = 0; also_fetch < 2; ++also_fetch) {
    weft_session* s = session(g, 1, 1);
    wt_run_targets(s, &init, 1);
    weft_run_metadata* md = weft_run_metadata_create();
    weft_output fetches[2] = {{update, 0}, {delta, 0}};
    weft_tensor* out[2] = {NULL, NULL};
    WT_OK(weft_session_run_with_metadata(s, NULL, NULL, 0, fetches,
                                         1 + also_fetch, NULL, 0, out, md));
    cr_expect_eq(weft_run_metadata_num_fused(md), also_fetch ? 0 : 1,
                 "fusions with the product %sfetched: %d",
                 also_fetch ? "" : "not ", weft_run_metadata_num_fused(md));
    weft_run_metadata_destroy(md);
    for (int i = 0; i <= also_fetch; ++i) weft_tensor_destroy(out[i]);
    weft_session_destroy(s);
  }
  weft_graph_destroy(g);
}

/* The update runs beside its variable, so the fused node takes the product
 * there: with several devices allowed, only where the cost model finds the
 * product cheapest on the variable's device.  With the CPU and OpenCL
 * allowed and the variable put on each in turn, the product (its operands
 * constants, which cost nothing to move) belongs on one of them whatever
 * the variable: exactly one of the two fuses, and where it does not, the
 * product runs on the other device.  (In a cluster nothing fuses:
 * tests/mpi/async_ps.c trains with the variables on a parameter server and
 * the products on the workers.)  Returns whether it fused. */
static int several_devices_case(const char* variable_device) {
  weft_graph* g = wt_graph_new();
  weft_node* init = NULL;
  weft_graph_set_device(g, variable_device);
  weft_output w = variable(g, "w", WT_DIMS(400, 300), 2, 5, &init);
  weft_graph_set_device(g, NULL);
  weft_op_builder* p = weft_op_begin(g, "MatMul", "delta");
  weft_op_add_input(p, wt_const(g, "a", random_f32(WT_DIMS(500, 400), 2, 6)));
  weft_op_add_input(p, wt_const(g, "b", random_f32(WT_DIMS(500, 300), 2, 7)));
  weft_op_set_attr_bool(p, "transpose_a", 1);
  weft_node* delta = NULL;
  WT_OK(weft_op_finish(p, &delta));
  weft_op_builder* u = weft_op_begin(g, "ApplyGradientDescent", "update");
  weft_op_add_input(u, w);
  weft_op_add_input(u, wt_const(g, "lr", wt_scalar_f32(0.25f)));
  weft_op_add_input(u, (weft_output){delta, 0});
  weft_node* update = NULL;
  WT_OK(weft_op_finish(u, &update));
  weft_session* s = session_on(g, "CPU,OPENCL", 1, 1);
  wt_run_targets(s, &init, 1);
  weft_run_metadata* md = weft_run_metadata_create();
  WT_OK(weft_session_run_with_metadata(s, NULL, NULL, 0, NULL, 0, &update,
                                       1, NULL, md));
  const int fused = weft_run_metadata_num_fused(md);
  const char* update_device = NULL;
  const char* product_device = NULL;
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(md); ++i) {
    const char* name = weft_run_metadata_node_name(md, i);
    if (strcmp(name, "update") == 0)
      update_device = weft_run_metadata_node_device(md, i);
    if (strcmp(name, "delta") == 0)
      product_device = weft_run_metadata_node_device(md, i);
  }
  cr_assert(update_device != NULL);
  cr_expect_str_eq(update_device, variable_device,
                   "the update runs beside its variable");
  if (fused) {
    cr_expect(product_device == NULL, "a fused product has no node");
  } else {
    cr_assert(product_device != NULL);
    cr_expect_str_neq(product_device, variable_device,
                      "unfused, the product belongs elsewhere");
  }
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return fused;
}

Test(fusion_update, with_several_devices_only_where_the_product_belongs) {
  const char* why = wt_no_opencl();
  if (why) WT_SKIP(why);
  const int on_cpu = several_devices_case("/device:CPU:0");
  const int on_opencl = several_devices_case("/device:OPENCL:0");
  cr_expect_eq(on_cpu + on_opencl, 1,
               "fused with the variable on the CPU: %d, on OpenCL: %d",
               on_cpu, on_opencl);
}

/* A Const of `dtype` holding the [rows, cols] matrix v (row-major), stored
 * transposed ([cols, rows]) when `transposed`. */
static weft_output matrix(weft_graph* g, const char* name, weft_dtype dtype,
                          const double* v, int64_t rows, int64_t cols,
                          int transposed) {
  const size_t es = dtype == WEFT_FLOAT64 ? 8 : 4;
  void* store = malloc((size_t)(rows * cols) * es);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t at = transposed ? c * rows + r : r * cols + c;
      if (es == 8)
        ((double*)store)[at] = v[r * cols + c];
      else
        ((float*)store)[at] = (float)v[r * cols + c];
    }
  const int64_t dims[2] = {transposed ? cols : rows, transposed ? rows : cols};
  weft_output out = wt_const(g, name, wt_tensor(dtype, dims, 2, store));
  free(store);
  return out;
}

/* n values in [-1, 1), each a float32 (exact in both dtypes). */
static double* random_values(wt_rng* rng, int64_t n) {
  double* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; ++i) v[i] = wt_rng_uniform(rng, -1, 1);
  return v;
}

/* MatMulApplyGradientDescent(w, alpha, a, b) on its own, against float64
 * arithmetic: sizes oneDNN runs and sizes it leaves to Eigen, each
 * transpose, float64, and a product of the variable with itself (the
 * kernel must not write the variable while reading it). */
static void direct_case(weft_dtype dtype, int64_t m, int64_t k, int64_t n,
                        int ta, int tb, int self) {
  weft_graph* g = wt_graph_new();
  weft_node* init = NULL;
  const size_t es = dtype == WEFT_FLOAT64 ? 8 : 4;
  wt_rng rng = {(uint64_t)(m * 1000 + k * 10 + n + ta + 2 * tb)};
  double* wv = random_values(&rng, m * n);
  double* av = random_values(&rng, m * k);
  double* bv = random_values(&rng, k * n);
  weft_output w;
  WT_OK(weft_graph_variable(g, "w", matrix(g, "w_init", dtype, wv, m, n, 0),
                            &w, &init));
  weft_output a, b;
  if (self) {  /* op(w) · op(w) (square), the variable on both sides */
    a = b = w;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < m; ++c) {
        av[r * m + c] = ta ? wv[c * m + r] : wv[r * m + c];
        bv[r * m + c] = tb ? wv[c * m + r] : wv[r * m + c];
      }
  } else {
    a = matrix(g, "a", dtype, av, m, k, ta);
    b = matrix(g, "b", dtype, bv, k, n, tb);
  }
  const double alpha = 0.375;
  weft_tensor* alpha_t;
  if (dtype == WEFT_FLOAT64) {
    alpha_t = wt_tensor(WEFT_FLOAT64, NULL, 0, &alpha);
  } else {
    alpha_t = wt_scalar_f32((float)alpha);
  }
  weft_op_builder* op = weft_op_begin(g, "MatMulApplyGradientDescent", "u");
  weft_op_add_input(op, w);
  weft_op_add_input(op, wt_const(g, "alpha", alpha_t));
  weft_op_add_input(op, a);
  weft_op_add_input(op, b);
  weft_op_set_attr_bool(op, "transpose_a", ta);
  weft_op_set_attr_bool(op, "transpose_b", tb);
  weft_node* u = NULL;
  WT_OK(weft_op_finish(op, &u));
  weft_session* s = wt_session_new(g, "CPU");
  wt_run_targets(s, &init, 1);
  weft_tensor* got = wt_run1(s, NULL, NULL, 0, (weft_output){u, 0});
  /* The variable holds the new value too. */
  weft_tensor* held = wt_run1(s, NULL, NULL, 0, w);
  cr_assert_eq(memcmp(weft_tensor_data(got), weft_tensor_data(held),
                      (size_t)(m * n) * es),
               0, "the variable holds the op's output");
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double sum = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        sum += av[r * k + i] * bv[i * n + c];
        mag += fabs(av[r * k + i] * bv[i * n + c]);
      }
      const double want = wv[r * n + c] - alpha * sum;
      const double have = es == 8
                              ? ((const double*)weft_tensor_data(got))[r * n + c]
                              : ((const float*)weft_tensor_data(got))[r * n + c];
      const double tol = (es == 8 ? 1e-14 : 2e-6) * (1 + alpha * mag);
      cr_assert(fabs(have - want) <= tol,
                "%s %lldx%lldx%lld%s%s%s: (%lld, %lld) is %.9g, want %.9g",
                es == 8 ? "float64" : "float32", (long long)m, (long long)k,
                (long long)n, ta ? " ta" : "", tb ? " tb" : "",
                self ? " (w·w)" : "", (long long)r, (long long)c, have, want);
    }
  weft_tensor_destroy(got);
  weft_tensor_destroy(held);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  free(wv);
  free(av);
  free(bv);
}

Test(fusion_update, the_op_agrees_with_float64_arithmetic) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      direct_case(WEFT_FLOAT32, 70, 50, 40, ta, tb, 0);  /* oneDNN */
      direct_case(WEFT_FLOAT32, 5, 3, 4, ta, tb, 0);     /* Eigen */
      direct_case(WEFT_FLOAT64, 30, 20, 10, ta, tb, 0);
    }
  direct_case(WEFT_FLOAT32, 3, 0, 4, 0, 0, 0);  /* empty sums: w stays */
  direct_case(WEFT_FLOAT32, 64, 64, 64, 0, 0, 1);
  direct_case(WEFT_FLOAT32, 64, 64, 64, 1, 1, 1);
}

Test(fusion_update, operands_that_cannot_make_the_variable_are_refused) {
  weft_graph* g = wt_graph_new();
  weft_node* init = NULL;
  weft_output w = variable(g, "w", WT_DIMS(4, 5), 2, 9, &init);
  weft_output lr = wt_const(g, "lr", wt_scalar_f32(0.1f));
  struct {
    const int64_t* a;
    const int64_t* b;
    const char* message;
  } cases[] = {
      {WT_DIMS(4, 3), WT_DIMS(2, 5), "inner dimensions differ"},
      {WT_DIMS(4, 3), WT_DIMS(3, 6), "the variable has shape"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    weft_op_builder* op = weft_op_begin(g, "MatMulApplyGradientDescent", NULL);
    weft_op_add_input(op, w);
    weft_op_add_input(op, lr);
    weft_op_add_input(op, wt_const(g, NULL, random_f32(cases[i].a, 2, 1)));
    weft_op_add_input(op, wt_const(g, NULL, random_f32(cases[i].b, 2, 2)));
    weft_node* node = NULL;
    WT_EXPECT_ERROR(weft_op_finish(op, &node), WEFT_INVALID_ARGUMENT,
                    cases[i].message);
  }
  /* The first input must be a Variable. */
  weft_op_builder* op = weft_op_begin(g, "MatMulApplyGradientDescent", NULL);
  weft_op_add_input(op, wt_const(g, NULL, random_f32(WT_DIMS(4, 5), 2, 3)));
  weft_op_add_input(op, lr);
  weft_op_add_input(op, wt_const(g, NULL, random_f32(WT_DIMS(4, 3), 2, 4)));
  weft_op_add_input(op, wt_const(g, NULL, random_f32(WT_DIMS(3, 5), 2, 5)));
  weft_node* node = NULL;
  WT_EXPECT_ERROR(weft_op_finish(op, &node), WEFT_INVALID_ARGUMENT,
                  "must be a Variable");
  weft_graph_destroy(g);
}
