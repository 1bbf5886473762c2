/* What the NN op tests share (test_ops_nn.c, test_ops_nn_last_axis.c):
 * operands and attributes, one op built over placeholders and run on the
 * CPU, comparison against float64 references, fixed-seed inputs. */
#ifndef WEFT_TESTS_OPS_NN_SUPPORT_H_
#define WEFT_TESTS_OPS_NN_SUPPORT_H_

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "test_support.h"

#define CPU "/device:CPU:0"

typedef struct operand {
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[4];
  const void* data;
} operand;

/* Attributes for the op under test; a list with n == 0 is not set. */
typedef struct list {
  int64_t v[5];
  int32_t n;
} list;
#define L4(a, b, c, d) ((list){{a, b, c, d}, 4})

typedef struct nn_attrs {
  list strides, ksize, dilations;
  const char* padding;
  const char* data_format;
  int has_eps;
  double eps;
  int scale;
  const char* sizes_name;  /* input_sizes, filter_sizes: `sizes` */
  list sizes;
} nn_attrs;

static int64_t count_of(const operand* x) {
  int64_t n = 1;
  for (int32_t i = 0; i < x->rank; ++i) n *= x->dims[i];
  return n;
}

static void set_list(weft_op_builder* b, const char* name, const list* l) {
  if (l->n > 0) weft_op_set_attr_int_list(b, name, l->v, l->n);
}

/* Builds `op` named `name` over placeholders for `in`, runs it on the CPU
 * with `threads` intra-op threads (0: default) and fetches its first
 * `num_outs` outputs.  Build and run errors both come back as the status. */
static weft_status* try_nn(const char* op, const char* name, const operand* in,
                           int n, const nn_attrs* a, weft_tensor** outs,
                           int num_outs, int threads) {
  weft_graph* graph = wt_graph_new();
  weft_output feeds[5];
  weft_tensor* values[5];
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int i = 0; i < n; ++i) {
    char ph[16];
    snprintf(ph, sizeof ph, "in%d", i);
    feeds[i] = wt_placeholder(graph, ph, in[i].dtype, in[i].dims, in[i].rank);
    values[i] = wt_tensor(in[i].dtype, in[i].dims, in[i].rank,
                          count_of(&in[i]) ? in[i].data : NULL);
    weft_op_add_input(b, feeds[i]);
  }
  if (a != NULL) {
    set_list(b, "strides", &a->strides);
    set_list(b, "ksize", &a->ksize);
    set_list(b, "dilations", &a->dilations);
    if (a->padding) weft_op_set_attr_string(b, "padding", a->padding);
    if (a->data_format)
      weft_op_set_attr_string(b, "data_format", a->data_format);
    if (a->has_eps) weft_op_set_attr_float(b, "variance_epsilon", a->eps);
    if (a->scale) weft_op_set_attr_bool(b, "scale_after_normalization", 1);
    if (a->sizes_name) set_list(b, a->sizes_name, &a->sizes);
  }
  weft_status* status =
      wt_finish_and_run(graph, b, feeds, values, n, threads, num_outs, outs);
  for (int i = 0; i < n; ++i) weft_tensor_destroy(values[i]);
  weft_graph_destroy(graph);
  return status;
}

static weft_tensor* run_nn(const char* op, const operand* in, int n,
                           const nn_attrs* a) {
  weft_tensor* out = NULL;
  wt_check_ok(try_nn(op, "under_test", in, n, a, &out, 1, 0), op, __FILE__,
              __LINE__);
  return out;
}

static double value_at(const weft_tensor* t, int64_t i) {
  const void* d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT32: return ((const float*)d)[i];
    case WEFT_FLOAT64: return ((const double*)d)[i];
    case WEFT_INT32: return ((const int32_t*)d)[i];
    default: cr_assert_fail("unexpected dtype"); return 0;
  }
}

/* float32 results get `tol32` (absolute and relative), float64 1e-10. */
static void expect_close(const weft_tensor* t, const double* ref, int64_t n,
                         double tol32) {
  double tol = weft_tensor_dtype(t) == WEFT_FLOAT64 ? 1e-10 : tol32;
  cr_assert_eq(weft_tensor_element_count(t), n);
  for (int64_t i = 0; i < n; ++i) {
    double g = value_at(t, i), r = ref[i];
    if (isnan(r)) {
      cr_assert(isnan(g), "element %lld: %g, expected NaN", (long long)i, g);
    } else if (isinf(r)) {
      cr_assert(g == r, "element %lld: %g, expected %g", (long long)i, g, r);
    } else {
      cr_assert(fabs(g - r) <= tol + tol * fabs(r),
                "element %lld: %.10g, expected %.10g", (long long)i, g, r);
    }
  }
}

/* Fixed-seed inputs in [lo, hi), as double (the reference's view) and in
 * the dtype under test; both hold the same values. */
static double* random_values(uint64_t seed, int64_t n, double lo, double hi) {
  wt_rng rng = {seed};
  double* v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; ++i)
    v[i] = wt_rng_uniform(&rng, (float)lo, (float)hi);
  return v;
}

static void* as_dtype(const double* v, int64_t n, weft_dtype dtype) {
  void* out = malloc(8 * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == WEFT_FLOAT32) ((float*)out)[i] = (float)v[i];
    else if (dtype == WEFT_FLOAT64) ((double*)out)[i] = v[i];
    else if (dtype == WEFT_INT32) ((int32_t*)out)[i] = (int32_t)v[i];
    else ((int64_t*)out)[i] = (int64_t)v[i];
  }
  return out;
}

static const weft_dtype kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};

#endif  /* WEFT_TESTS_OPS_NN_SUPPORT_H_ */
