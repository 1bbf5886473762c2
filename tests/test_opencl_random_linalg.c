/* The OpenCL plugin's random ops and linear algebra against the CPU
 * plugin's (the method is in opencl_support.h): RandomUniform,
 * RandomNormal and TruncatedNormal, Dropout, RandomShuffle, BatchMatMul,
 * MatrixInverse and MatrixDeterminant. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "opencl_support.h"

TestSuite(opencl, .init = discover, .timeout = 240);

/* ---- Random ops and linear algebra -------------------------------------- */

static const weft_dtype kRandomTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64,
                                          WEFT_FLOAT16, WEFT_BFLOAT16};

/* A RandomUniform, RandomNormal or TruncatedNormal node of `dtype` and
 * shape [count], seeded; the normal ones with mean 1.5 and stddev 2. */
static weft_output generator(weft_graph* graph, const char* op,
                             const char* name, weft_dtype dtype,
                             int64_t count, int64_t seed, int64_t seed2) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_set_attr_int_list(b, "shape", &count, 1);
  weft_op_set_attr_dtype(b, "dtype", dtype);
  weft_op_set_attr_int(b, "seed", seed);
  weft_op_set_attr_int(b, "seed2", seed2);
  if (strcmp(op, "RandomUniform") != 0) {
    weft_op_set_attr_float(b, "mean", 1.5);
    weft_op_set_attr_float(b, "stddev", 2.0);
  }
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

/* The generators' values on OpenCL against the CPU's for the same seeds:
 * uniforms bit for bit (only exact operations make them), normals within a
 * few ulps (the devices' log, sin and cos may round differently), every
 * dtype, with a count that leaves a partial last group of lanes.  The
 * 16-bit types are compared through an exact Cast to float32. */
Test(opencl, random_generators_match_the_cpu) {
  REQUIRE_OPENCL();
  const char* const ops[] = {"RandomUniform", "RandomNormal",
                             "TruncatedNormal"};
  for (int o = 0; o < 3; ++o) {
    for (int t = 0; t < 4; ++t) {
      const weft_dtype dtype = kRandomTypes[t];
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output y = generator(graph, ops[o], "y", dtype, 1027, 17, 5);
      const int narrow = dtype == WEFT_FLOAT16 || dtype == WEFT_BFLOAT16;
      set.fetches[0] = narrow ? cast(graph, "wide", y, WEFT_FLOAT32) : y;
      set.num_fetches = 1;
      char what[96];
      snprintf(what, sizeof what, "%s %s", ops[o], weft_dtype_name(dtype));
      if (o == 0) {
        compare(graph, &set, 0, 0, what);
      } else {
        /* One ulp of the 16-bit types where float32 values near a
         * rounding boundary differ in their last bits. */
        const double rel = dtype == WEFT_FLOAT64   ? 1e-13
                           : dtype == WEFT_FLOAT32 ? 1e-6
                           : dtype == WEFT_FLOAT16 ? 1e-3
                                                   : 8e-3;
        compare(graph, &set, rel, rel, what);
      }
      weft_graph_destroy(graph);
    }
  }
}

/* Statistics of the OpenCL draws themselves: uniforms in [0, 1) with mean
 * 1/2, normals with the asked mean and stddev, truncated ones within two
 * standard deviations. */
Test(opencl, random_generators_have_their_distributions) {
  REQUIRE_OPENCL();
  const int64_t n = 100000;
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  set.fetches[0] = generator(graph, "RandomUniform", "u", WEFT_FLOAT32, n, 3, 0);
  set.fetches[1] = generator(graph, "RandomNormal", "z", WEFT_FLOAT32, n, 3, 0);
  set.fetches[2] =
      generator(graph, "TruncatedNormal", "t", WEFT_FLOAT32, n, 3, 0);
  set.num_fetches = 3;
  weft_tensor* out[3] = {0};
  WT_OK(run_on(graph, OCL, &set, out));
  for (int f = 0; f < 3; ++f) {
    const float* v = weft_tensor_data(out[f]);
    double sum = 0, squares = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t k = 0; k < n; ++k) {
      sum += v[k];
      squares += (double)v[k] * v[k];
      lo = fmin(lo, v[k]);
      hi = fmax(hi, v[k]);
    }
    const double mean = sum / (double)n;
    const double sd = sqrt(squares / (double)n - mean * mean);
    if (f == 0) {
      cr_expect(lo >= 0 && hi < 1, "uniform outside [0, 1): %g .. %g", lo, hi);
      cr_expect(fabs(mean - 0.5) < 0.01, "uniform mean %g", mean);
    } else {
      cr_expect(fabs(mean - 1.5) < 0.03, "normal mean %g", mean);
      /* A normal truncated at 2 sd has sd 0.880 of the full one's. */
      const double want = f == 1 ? 2.0 : 2.0 * 0.8796;
      cr_expect(fabs(sd - want) < 0.03, "stddev %g, want %g", sd, want);
      if (f == 2) {
        cr_expect(lo >= 1.5 - 4.0 && hi <= 1.5 + 4.0,
                  "truncated normal outside mean +- 2 sd: %g .. %g", lo, hi);
      }
    }
    weft_tensor_destroy(out[f]);
  }
  weft_graph_destroy(graph);
}

/* Each run of a node draws afresh (the run counter is part of the
 * counter), the same way on both devices: run r on OpenCL equals run r on
 * the CPU, and runs differ from each other; other seeds give other
 * values. */
Test(opencl, random_values_change_with_runs_and_seeds_as_on_the_cpu) {
  REQUIRE_OPENCL();
  weft_graph* graph = wt_graph_new();
  weft_output a = generator(graph, "RandomUniform", "a", WEFT_FLOAT32, 64, 9, 1);
  weft_output b = generator(graph, "RandomUniform", "b", WEFT_FLOAT32, 64, 9, 2);
  weft_output c = generator(graph, "RandomUniform", "c", WEFT_FLOAT32, 64, 10, 1);
  weft_session* ocl = session_on(graph, OCL);
  weft_session* cpu = session_on(graph, "CPU");
  const weft_output fetches[3] = {a, b, c};
  weft_tensor* first[3] = {0};
  for (int run = 0; run < 3; ++run) {
    weft_tensor* o[3] = {0};
    weft_tensor* r[3] = {0};
    WT_OK(weft_session_run(ocl, NULL, NULL, 0, fetches, 3, NULL, 0, o));
    WT_OK(weft_session_run(cpu, NULL, NULL, 0, fetches, 3, NULL, 0, r));
    for (int i = 0; i < 3; ++i) {
      char what[64];
      snprintf(what, sizeof what, "run %d, node %d", run, i);
      expect_match(o[i], r[i], 0, 0, what);
      weft_tensor_destroy(r[i]);
    }
    cr_expect(memcmp(weft_tensor_data(o[0]), weft_tensor_data(o[1]),
                     64 * sizeof(float)) != 0, "seed2 changes nothing");
    cr_expect(memcmp(weft_tensor_data(o[0]), weft_tensor_data(o[2]),
                     64 * sizeof(float)) != 0, "seed changes nothing");
    if (run == 0) {
      for (int i = 0; i < 3; ++i) first[i] = o[i];
    } else {
      cr_expect(memcmp(weft_tensor_data(o[0]), weft_tensor_data(first[0]),
                       64 * sizeof(float)) != 0,
                "run %d repeats run 0", run);
      for (int i = 0; i < 3; ++i) weft_tensor_destroy(o[i]);
    }
  }
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(first[i]);
  weft_session_destroy(ocl);
  weft_session_destroy(cpu);
  weft_graph_destroy(graph);
}

/* A Dropout of `x` at `rate`, seeded. */
static weft_output dropout(weft_graph* graph, weft_output x, double rate,
                           int64_t seed) {
  weft_op_builder* b = weft_op_begin(graph, "Dropout", "drop");
  weft_op_add_input(b, x);
  weft_op_set_attr_float(b, "rate", rate);
  weft_op_set_attr_int(b, "seed", seed);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

/* Dropout keeps the same elements as on the CPU, scales them by
 * 1 / (1 - rate) and zeroes the rest (bit for bit, every dtype); about
 * 1 - rate of them survive; rate 0 is the identity. */
Test(opencl, dropout_mask_matches_the_cpu) {
  REQUIRE_OPENCL();
  wt_rng rng = {41};
  const int64_t n = 4099;
  for (int t = 0; t < 4; ++t) {
    const weft_dtype dtype = kRandomTypes[t];
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x32 =
        feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(n), 0.5f, 2.0f));
    weft_output x = dtype == WEFT_FLOAT32 ? x32 : cast(graph, "x_t", x32, dtype);
    set.fetches[0] = dropout(graph, x, 0.3, 12);
    set.num_fetches = 1;
    char what[64];
    snprintf(what, sizeof what, "Dropout %s", weft_dtype_name(dtype));
    compare(graph, &set, 0, 0, what);
    if (dtype == WEFT_FLOAT32) {
      weft_tensor* out = NULL;
      WT_OK(run_on(graph, OCL, &set, &out));
      const float* xs = weft_tensor_data(set.values[0]);
      const float* ys = weft_tensor_data(out);
      int64_t kept = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (ys[k] == 0.0f) {
          cr_assert(!signbit(ys[k]), "element %lld dropped to -0", (long long)k);
          continue;
        }
        ++kept;
        cr_assert_float_eq(ys[k], xs[k] * (float)(1.0 / 0.7), 0,
                           "element %lld kept but not scaled by 1/0.7",
                           (long long)k);
      }
      const double share = (double)kept / (double)n;
      cr_expect(fabs(share - 0.7) < 0.03, "kept %.3f of the elements", share);
      weft_tensor_destroy(out);
    }
    release(&set);
    weft_graph_destroy(graph);
  }
  /* rate 0: the input as it is. */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(7), -1, 1));
  set.fetches[0] = dropout(graph, x, 0.0, 3);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_OK(run_on(graph, OCL, &set, &out));
  expect_match(out, set.values[0], 0, 0, "Dropout rate 0");
  weft_tensor_destroy(out);
  release(&set);
  weft_graph_destroy(graph);
}

/* RandomShuffle permutes the rows as the CPU does (the same Fisher-Yates
 * on the same stream), for rows of every element size, and the result is
 * a permutation that moved something. */
Test(opencl, random_shuffle_matches_the_cpu) {
  REQUIRE_OPENCL();
  wt_rng rng = {43};
  const weft_dtype types[] = {WEFT_INT32, WEFT_UINT8, WEFT_FLOAT16,
                              WEFT_INT64};
  for (int t = 0; t < 4; ++t) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x",
                         random_bytes(&rng, types[t], WT_SHAPE(257, 3), NULL, 0));
    weft_op_builder* b = weft_op_begin(graph, "RandomShuffle", "shuffled");
    weft_op_add_input(b, x);
    weft_op_set_attr_int(b, "seed", 23);
    weft_node* node = NULL;
    WT_OK(weft_op_finish(b, &node));
    set.fetches[0] = (weft_output){node, 0};
    set.num_fetches = 1;
    compare(graph, &set, 0, 0, weft_dtype_name(types[t]));
    release(&set);
    weft_graph_destroy(graph);
  }
  /* Rows holding their own index: a permutation of them, not the identity. */
  int32_t rows[500];
  for (int i = 0; i < 500; ++i) rows[i] = i;
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x =
      feed(graph, &set, "x", wt_tensor(WEFT_INT32, WT_SHAPE(500), rows));
  weft_op_builder* b = weft_op_begin(graph, "RandomShuffle", "shuffled");
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "seed", 4);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  set.fetches[0] = (weft_output){node, 0};
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_OK(run_on(graph, OCL, &set, &out));
  const int32_t* got = weft_tensor_data(out);
  int seen[500] = {0}, moved = 0;
  for (int i = 0; i < 500; ++i) {
    cr_assert(got[i] >= 0 && got[i] < 500 && !seen[got[i]],
              "element %d (%d) repeats or is out of range", i, got[i]);
    seen[got[i]] = 1;
    moved += got[i] != i;
  }
  cr_expect(moved > 400, "only %d of 500 rows moved", moved);
  weft_tensor_destroy(out);
  release(&set);
  weft_graph_destroy(graph);
}

/* A BatchMatMul of fed x and y (float32 values in [-1, 1), or int32 in
 * [-3, 3]) compared with the CPU: within float tolerance, integers
 * exactly; float16 through an exact Cast to float32. */
static void batch_matmul_case(weft_dtype dtype, const int64_t* x_dims,
                              int32_t x_rank, const int64_t* y_dims,
                              int32_t y_rank, int adj_x, int adj_y,
                              wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x, y;
  if (dtype == WEFT_INT32) {
    x = feed(graph, &set, "x", random_i32(rng, x_dims, x_rank, -3, 3));
    y = feed(graph, &set, "y", random_i32(rng, y_dims, y_rank, -3, 3));
  } else {
    x = feed(graph, &set, "x", random_f32(rng, x_dims, x_rank, -1, 1));
    y = feed(graph, &set, "y", random_f32(rng, y_dims, y_rank, -1, 1));
    if (dtype != WEFT_FLOAT32) {
      x = cast(graph, "x_t", x, dtype);
      y = cast(graph, "y_t", y, dtype);
    }
  }
  weft_op_builder* b = weft_op_begin(graph, "BatchMatMul", "z");
  weft_op_add_input(b, x);
  weft_op_add_input(b, y);
  weft_op_set_attr_bool(b, "adj_x", adj_x);
  weft_op_set_attr_bool(b, "adj_y", adj_y);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  const weft_output z = {node, 0};
  const int wide = dtype == WEFT_FLOAT16 || dtype == WEFT_FLOAT64;
  set.fetches[0] = wide ? cast(graph, "z32", z, WEFT_FLOAT32) : z;
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "BatchMatMul %s rank %d x rank %d adj %d%d",
           weft_dtype_name(dtype), x_rank, y_rank, adj_x, adj_y);
  const double k = (double)x_dims[x_rank - (adj_x ? 2 : 1)];
  if (dtype == WEFT_FLOAT16) {
    compare(graph, &set, 2e-3, 2e-3, what); /* a float16 ulp */
  } else {
    compare(graph, &set, 1e-5 * k, 1e-5, what);
  }
  release(&set);
  weft_graph_destroy(graph);
}

/* Batch dims broadcast as NumPy's (a missing or size-1 dim repeats the
 * other operand's matrices), with adjoints, odd sizes, rank 2 against
 * rank 4, and empty batches. */
Test(opencl, batch_matmul_broadcasting) {
  REQUIRE_OPENCL();
  wt_rng rng = {47};
  const weft_dtype types[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_FLOAT16,
                              WEFT_FLOAT64};
  for (int t = 0; t < 4; ++t) {
    const weft_dtype d = types[t];
    batch_matmul_case(d, WT_SHAPE(2, 1, 5, 7), WT_SHAPE(3, 7, 19), 0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(3, 7, 5), WT_SHAPE(1, 19, 7), 1, 1, &rng);
    batch_matmul_case(d, WT_SHAPE(9, 17), WT_SHAPE(2, 2, 17, 33), 0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(4, 1, 3, 2, 6), WT_SHAPE(1, 5, 1, 6, 4),
                      0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(0, 3, 4), WT_SHAPE(1, 4, 2), 0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(2, 3, 0), WT_SHAPE(2, 0, 2), 0, 0, &rng);
  }
}

/* One op on fed float matrices `x`. */
static void solver_case(const char* op, weft_dtype dtype, weft_tensor* value,
                        int adjoint, double tol) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", value);
  if (dtype == WEFT_FLOAT64) x = cast(graph, "x64", x, WEFT_FLOAT64);
  weft_op_builder* b = weft_op_begin(graph, op, "solved");
  weft_op_add_input(b, x);
  if (adjoint) weft_op_set_attr_bool(b, "adjoint", 1);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  set.fetches[0] = (weft_output){node, 0};
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "%s %s adjoint %d", op, weft_dtype_name(dtype),
           adjoint);
  compare(graph, &set, tol, tol, what);
  release(&set);
  weft_graph_destroy(graph);
}

/* Inverses and determinants of random batches (diagonally weighted, so
 * well conditioned) agree with the CPU's; so do the determinants of
 * matrices that need row swaps, of a singular one (0) and of an empty one
 * (1), and values beyond float32's range become infinities on both. */
Test(opencl, matrix_inverse_and_determinant) {
  REQUIRE_OPENCL();
  wt_rng rng = {53};
  const int64_t sizes[] = {1, 3, 8, 17};
  for (int s = 0; s < 4; ++s) {
    const int64_t m = sizes[s];
    for (int d = 0; d < 2; ++d) {
      const weft_dtype dtype = d ? WEFT_FLOAT64 : WEFT_FLOAT32;
      weft_tensor* x = random_f32(&rng, WT_SHAPE(5, m, m), -1, 1);
      float* v = weft_tensor_data(x);
      for (int64_t i = 0; i < 5 * m; ++i) v[i * m + i % m] += 2.0f;
      weft_tensor* copy = wt_tensor(WEFT_FLOAT32, WT_SHAPE(5, m, m), v);
      weft_tensor* copy2 = wt_tensor(WEFT_FLOAT32, WT_SHAPE(5, m, m), v);
      const double tol = d ? 1e-12 : 1e-5;
      solver_case("MatrixInverse", dtype, x, 0, tol);
      solver_case("MatrixInverse", dtype, copy, 1, tol);
      solver_case("MatrixDeterminant", dtype, copy2, 0, tol);
    }
  }
  /* Pivoting: zeros on the diagonal; the second matrix is singular; the
   * third has a determinant of 2^150, beyond float32. */
  const float special[3][9] = {
      {0, 2, 1, 3, 0, 4, 1, 5, 0},
      {1, 2, 3, 2, 4, 6, 1, 0, 1},
      {0x1p50f, 0, 0, 0, 0x1p50f, 0, 0, 0, 0x1p50f},
  };
  solver_case("MatrixDeterminant", WEFT_FLOAT32,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 3, 3), special), 0, 1e-6);
  solver_case("MatrixDeterminant", WEFT_FLOAT64,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 3, 3), special), 0, 1e-12);
  solver_case("MatrixInverse", WEFT_FLOAT32,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 3, 3), special[0]), 0, 1e-6);
  solver_case("MatrixDeterminant", WEFT_FLOAT32,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 0, 0), NULL), 0, 0);
}

/* A singular matrix (or one holding NaN) has no inverse: the kernel call
 * fails with the CPU's message, naming the first such matrix of the
 * batch. */
Test(opencl, singular_matrix_inverse_is_an_error) {
  REQUIRE_OPENCL();
  const float batches[2][3][4] = {
      /* matrix 1 is singular (rows proportional) */
      {{2, 1, 1, 3}, {1, 2, 2, 4}, {4, 3, 0, 1}},
      /* matrix 2 holds NaN */
      {{1, 0, 0, 1}, {2, 1, 1, 1}, {NAN, 1, 0, 1}},
  };
  for (int c = 0; c < 2; ++c) {
    for (int d = 0; d < 2; ++d) { /* float32, float64 */
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(graph, &set, "x",
                           wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 2, 2),
                                     batches[c]));
      if (d) x = cast(graph, "x64", x, WEFT_FLOAT64);
      set.fetches[0] = wt_apply1(graph, "MatrixInverse", "inverse", x);
      set.num_fetches = 1;
      const char* which = c == 0 ? "matrix 1 of the batch" : "matrix 2 of the batch";
      weft_tensor* out = NULL;
      WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                      "inverse", which, "not invertible");
      WT_EXPECT_ERROR(run_on(graph, "CPU", &set, &out), WEFT_INVALID_ARGUMENT,
                      "inverse", which, "not invertible");
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}
