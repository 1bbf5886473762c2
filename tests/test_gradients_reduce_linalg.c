/* Gradients of the reductions (Sum, Mean, Prod, Max, Min) and of the matrix
 * ops (MatMul, BatchMatMul, MatrixInverse, MatrixDeterminant), and of the
 * reduction-gradient ops they build (SumGrad, MeanGrad), against central
 * differences (grad_check.h), in float64. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "grad_check.h"
#include "gradient_tests.h"
#include "test_support.h"

/* ---- Reductions ------------------------------------------------------- */

typedef struct reduction {
  const char* op;
  int has_axes;
  int64_t axes[3];
  int32_t num_axes;
  int keep_dims;
} reduction;

static weft_output build_reduction(weft_graph* g, const weft_output* xs,
                                   int32_t n, void* arg) {
  (void)n;
  const reduction* r = arg;
  weft_op_builder* b = weft_op_begin(g, r->op, "y");
  weft_op_add_input(b, xs[0]);
  if (r->has_axes) weft_op_set_attr_int_list(b, "axes", r->axes, r->num_axes);
  weft_op_set_attr_bool(b, "keep_dims", r->keep_dims);
  return gt_finish(b);
}

/* Each reduction over all axes (absent attribute), some, none (an empty
 * list), negative axes, keep_dims both ways, on [5, 3, 4] with the batch
 * declared unknown (fed as 5) and with every dim known. */
static void check_reduction(const char* op, const double* values) {
  const reduction cases[] = {
      {op, 0, {0}, 0, 0},        {op, 0, {0}, 0, 1},
      {op, 1, {1}, 1, 0},        {op, 1, {1}, 1, 1},
      {op, 1, {0, 2}, 2, 0},     {op, 1, {0, 2}, 2, 1},
      {op, 1, {0}, 0, 0},        {op, 1, {-1, 0}, 2, 1},
      {op, 1, {0, 1, 2}, 3, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    for (int unknown = 0; unknown < 2; ++unknown) {
      gc_input x = {WEFT_FLOAT64, WT_DIMS(5, 3, 4), 3, values,
                    unknown ? 1u : 0u};
      char what[96];
      snprintf(what, sizeof what, "%s case %zu%s", op, c,
               unknown ? " (unknown batch)" : "");
      gc_check_f64(what, build_reduction, (void*)&cases[c], &x, 1, 0);
    }
  }
}

Test(reduce_gradients, sum) {
  double v[60];
  gt_fill_distinct(v, 60, 1);
  check_reduction("Sum", v);
}

Test(reduce_gradients, mean) {
  double v[60];
  gt_fill_distinct(v, 60, 2);
  check_reduction("Mean", v);
}

Test(reduce_gradients, max) {
  double v[60];
  gt_fill_distinct(v, 60, 3);
  check_reduction("Max", v);
}

Test(reduce_gradients, min) {
  double v[60];
  gt_fill_distinct(v, 60, 4);
  check_reduction("Min", v);
}

/* Away from zero: the product of 60 values stays moderate. */
Test(reduce_gradients, prod) {
  double v[60];
  for (int i = 0; i < 60; ++i) v[i] = 0.7 + 0.6 * ((i * 37) % 29) / 29.0;
  check_reduction("Prod", v);
}

/* Groups holding one zero (whose gradient is the product of the others)
 * and two zeros (every gradient zero); checked exactly, the function being
 * a polynomial. */
Test(reduce_gradients, prod_with_zeros) {
  const double v[12] = {0.5, 0.0, 2.0, -1.5,   /* one zero */
                        0.0, 3.0, 0.0, 1.25,   /* two zeros */
                        1.5, -0.5, 2.5, 0.75}; /* none */
  const reduction r = {"Prod", 1, {1}, 1, 0};
  gc_input x = {WEFT_FLOAT64, WT_DIMS(3, 4), 2, v, 0};
  gc_check_f64("Prod with zeros", build_reduction, (void*)&r, &x, 1, 0);
}

/* Two equal maxima share the gradient: half each, which is also what the
 * central difference sees (one side moves the max, the other does not). */
Test(reduce_gradients, max_ties_split) {
  const double v[8] = {1.0, 3.0, 3.0, -2.0, 0.5, -1.0, 0.5, -4.0};
  const reduction maxr = {"Max", 1, {1}, 1, 0};
  const reduction minr = {"Min", 1, {1}, 1, 1};
  gc_input x = {WEFT_FLOAT64, WT_DIMS(2, 4), 2, v, 0};
  gc_check_f64("Max with a tie", build_reduction, (void*)&maxr, &x, 1, 0);
  const double w[8] = {1.0, -3.0, -3.0, 2.0, 0.5, 1.0, 0.5, 4.0};
  x.values = w;
  gc_check_f64("Min with a tie", build_reduction, (void*)&minr, &x, 1, 0);
}

/* The gradient ops are linear in their gradient input; their own gradients
 * reduce back. */
static weft_output build_spread(weft_graph* g, const weft_output* xs,
                                int32_t n, void* arg) {
  (void)n;
  const reduction* r = arg;
  weft_op_builder* b = weft_op_begin(g, r->op, "y");
  weft_op_add_input(b, xs[0]);
  weft_op_add_input(b, xs[1]);
  if (r->has_axes) weft_op_set_attr_int_list(b, "axes", r->axes, r->num_axes);
  weft_op_set_attr_bool(b, "keep_dims", r->keep_dims);
  return gt_finish(b);
}

Test(reduce_gradients, sum_grad_and_mean_grad) {
  double dy[15], x[60];
  gt_fill_distinct(dy, 15, 5);
  gt_fill_distinct(x, 60, 6);
  const char* ops[] = {"SumGrad", "MeanGrad"};
  for (int k = 0; k < 2; ++k) {
    const reduction r = {ops[k], 1, {2}, 1, 0};
    gc_input in[2] = {{WEFT_FLOAT64, WT_DIMS(5, 3), 2, dy, 1u},
                      {WEFT_FLOAT64, WT_DIMS(5, 3, 4), 3, x, 1u}};
    gc_check_f64(ops[k], build_spread, (void*)&r, in, 2, 0x2u);
  }
}

/* ---- Matrix products -------------------------------------------------- */

typedef struct product {
  const char* op;
  const char* ta_name;
  const char* tb_name;
  int ta, tb;
} product;

static weft_output build_product(weft_graph* g, const weft_output* xs,
                                 int32_t n, void* arg) {
  (void)n;
  const product* p = arg;
  weft_op_builder* b = weft_op_begin(g, p->op, "y");
  weft_op_add_input(b, xs[0]);
  weft_op_add_input(b, xs[1]);
  weft_op_set_attr_bool(b, p->ta_name, p->ta);
  weft_op_set_attr_bool(b, p->tb_name, p->tb);
  return gt_finish(b);
}

/* [3, 4] x [4, 2] stored either way, the rows of a unknown in one pass. */
Test(linalg_gradients, matmul_all_transposes) {
  double a[12], b[8];
  gt_fill_distinct(a, 12, 7);
  gt_fill_distinct(b, 8, 8);
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      for (int unknown = 0; unknown < 2; ++unknown) {
        const product p = {"MatMul", "transpose_a", "transpose_b", ta, tb};
        const int64_t a_dims[2] = {ta ? 4 : 3, ta ? 3 : 4};
        const int64_t b_dims[2] = {tb ? 2 : 4, tb ? 4 : 2};
        gc_input in[2] = {
            {WEFT_FLOAT64, a_dims, 2, a, unknown ? (ta ? 2u : 1u) : 0u},
            {WEFT_FLOAT64, b_dims, 2, b, 0}};
        char what[64];
        snprintf(what, sizeof what, "MatMul ta=%d tb=%d%s", ta, tb,
                 unknown ? " (M unknown)" : "");
        gc_check_f64(what, build_product, (void*)&p, in, 2, 0);
      }
    }
  }
}

/* Stacks with broadcast batch dims: x [2, 3, 4] against one y [4, 5];
 * x [2, 1, 3, 4] against y [3, 4, 2] (both broadcast); every adjoint
 * combination. */
Test(linalg_gradients, batch_matmul) {
  double x[24], y[24];
  gt_fill_distinct(x, 24, 9);
  gt_fill_distinct(y, 24, 10);
  for (int ax = 0; ax < 2; ++ax) {
    for (int ay = 0; ay < 2; ++ay) {
      const product p = {"BatchMatMul", "adj_x", "adj_y", ax, ay};
      const int64_t x1[3] = {2, ax ? 4 : 3, ax ? 3 : 4};
      const int64_t y1[2] = {ay ? 5 : 4, ay ? 4 : 5};
      gc_input in1[2] = {{WEFT_FLOAT64, x1, 3, x, 0},
                         {WEFT_FLOAT64, y1, 2, y, 0}};
      char what[64];
      snprintf(what, sizeof what, "BatchMatMul [2,3,4]x[4,5] adj %d %d", ax,
               ay);
      gc_check_f64(what, build_product, (void*)&p, in1, 2, 0);
      const int64_t x2[4] = {2, 1, ax ? 4 : 3, ax ? 3 : 4};
      const int64_t y2[3] = {3, ay ? 2 : 4, ay ? 4 : 2};
      gc_input in2[2] = {{WEFT_FLOAT64, x2, 4, x, 0},
                         {WEFT_FLOAT64, y2, 3, y, 0}};
      snprintf(what, sizeof what, "BatchMatMul [2,1,3,4]x[3,4,2] adj %d %d",
               ax, ay);
      gc_check_f64(what, build_product, (void*)&p, in2, 2, 0);
    }
  }
}

/* ---- Inverse and determinant ------------------------------------------ */

/* Diagonally dominant 3x3 matrices: well conditioned. */
static void fill_matrices(double* v, int count, int seed) {
  gt_fill_distinct(v, 9 * count, seed);
  for (int m = 0; m < count; ++m)
    for (int i = 0; i < 3; ++i) v[m * 9 + i * 4] += (i % 2 ? -4.0 : 4.0);
}

typedef struct unary_op {
  const char* op;
  int adjoint;
} unary_op;

static weft_output build_matrix_op(weft_graph* g, const weft_output* xs,
                                   int32_t n, void* arg) {
  (void)n;
  const unary_op* u = arg;
  weft_op_builder* b = weft_op_begin(g, u->op, "y");
  weft_op_add_input(b, xs[0]);
  if (u->adjoint >= 0) weft_op_set_attr_bool(b, "adjoint", u->adjoint);
  return gt_finish(b);
}

Test(linalg_gradients, matrix_inverse) {
  double v[18];
  fill_matrices(v, 2, 11);
  for (int adjoint = 0; adjoint < 2; ++adjoint) {
    const unary_op u = {"MatrixInverse", adjoint};
    gc_input one = {WEFT_FLOAT64, WT_DIMS(3, 3), 2, v, 0};
    gc_input two = {WEFT_FLOAT64, WT_DIMS(2, 3, 3), 3, v, 0};
    gc_check_f64(adjoint ? "MatrixInverse adjoint" : "MatrixInverse",
                 build_matrix_op, (void*)&u, &one, 1, 0);
    gc_check_f64(adjoint ? "MatrixInverse adjoint, batch"
                         : "MatrixInverse, batch",
                 build_matrix_op, (void*)&u, &two, 1, 0);
  }
}

Test(linalg_gradients, matrix_determinant) {
  double v[18];
  fill_matrices(v, 2, 12);
  const unary_op u = {"MatrixDeterminant", -1};
  gc_input one = {WEFT_FLOAT64, WT_DIMS(3, 3), 2, v, 0};
  gc_input two = {WEFT_FLOAT64, WT_DIMS(2, 3, 3), 3, v, 0};
  gc_check_f64("MatrixDeterminant", build_matrix_op, (void*)&u, &one, 1, 0);
  gc_check_f64("MatrixDeterminant, batch", build_matrix_op, (void*)&u, &two,
               1, 0);
}

/* Every op of these families has a gradient or is declared without one. */
Test(linalg_gradients, declared) {
  const char* with[] = {"Sum", "Mean", "Prod", "Max", "Min", "MatMul",
                        "BatchMatMul", "MatrixInverse", "MatrixDeterminant",
                        "SumGrad", "MeanGrad"};
  for (size_t i = 0; i < sizeof with / sizeof with[0]; ++i)
    cr_expect_eq(weft_op_gradient_status(with[i]), 1, "%s", with[i]);
  cr_expect_eq(weft_op_gradient_status("ProdGrad"), 0);
}
