/* The OpenCL plugin's comparisons and data movement against the CPU
 * plugin's (the method is in opencl_support.h): comparisons, Transpose,
 * Concat and Split, Select, Gather, every dtype through them, Slice, Tile,
 * Pad, Pack, Unpack, OneHot, Shape, Size and Rank, the attributes a kernel
 * must refuse, and rank ten. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "opencl_support.h"

TestSuite(opencl, .init = discover, .timeout = 240);

/* ---- Comparisons, Transpose, Concat, Split, Gather ----------------------- */

static const char* const kComparisons[] = {"Less",         "LessEqual",
                                           "Greater",      "GreaterEqual",
                                           "Equal",        "NotEqual"};

Test(opencl, comparisons_broadcasting) {
  REQUIRE_OPENCL();
  wt_rng rng = {31};
  for (size_t o = 0; o < sizeof kComparisons / sizeof *kComparisons; ++o) {
    for (size_t k = 0; k < sizeof kBroadcastShapes / sizeof *kBroadcastShapes;
         ++k) {
      for (int integer = 0; integer < 2; ++integer) {
        const shape_pair* sh = &kBroadcastShapes[k];
        weft_graph* graph = wt_graph_new();
        run_set set = {0};
        /* Small ranges so that equal values occur; floats are halves. */
        weft_tensor* xv = random_i32(&rng, sh->x, sh->x_rank, -3, 3);
        weft_tensor* yv = random_i32(&rng, sh->y, sh->y_rank, -3, 3);
        if (!integer) {
          weft_tensor* ints[2] = {xv, yv};
          for (int t = 0; t < 2; ++t) {
            const int64_t n = weft_tensor_element_count(ints[t]);
            const int32_t rank = weft_tensor_rank(ints[t]);
            int64_t dims[4];
            for (int32_t d = 0; d < rank; ++d) dims[d] = weft_tensor_dim(ints[t], d);
            float* f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
            const int32_t* iv = weft_tensor_data(ints[t]);
            for (int64_t e = 0; e < n; ++e) f[e] = (float)iv[e] / 2;
            weft_tensor_destroy(ints[t]);
            ints[t] = wt_tensor(WEFT_FLOAT32, dims, rank, f);
            free(f);
          }
          xv = ints[0];
          yv = ints[1];
        }
        weft_output x = feed(graph, &set, "x", xv);
        weft_output y = feed(graph, &set, "y", yv);
        set.fetches[0] = wt_apply2(graph, kComparisons[o], "z", x, y);
        set.num_fetches = 1;
        char what[96];
        snprintf(what, sizeof what, "%s %s shapes %zu", kComparisons[o],
                 integer ? "int32" : "float32", k);
        compare(graph, &set, 0, 0, what);
        release(&set);
        weft_graph_destroy(graph);
      }
    }
  }
}

Test(opencl, comparisons_with_nan) {
  REQUIRE_OPENCL();
  for (size_t o = 0; o < sizeof kComparisons / sizeof *kComparisons; ++o) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    const float xs[4] = {NAN, 1, NAN, 2}, ys[4] = {1, NAN, NAN, 2};
    weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_FLOAT32, WT_SHAPE(4), xs));
    weft_output y = feed(graph, &set, "y", wt_tensor(WEFT_FLOAT32, WT_SHAPE(4), ys));
    set.fetches[0] = wt_apply2(graph, kComparisons[o], "z", x, y);
    set.num_fetches = 1;
    compare(graph, &set, 0, 0, kComparisons[o]);
    /* By hand: only NotEqual holds where NaN is involved. */
    weft_tensor* out = NULL;
    WT_OK(run_on(graph, OCL, &set, &out));
    const uint8_t* z = weft_tensor_data(out);
    const int ne = strcmp(kComparisons[o], "NotEqual") == 0;
    for (int k = 0; k < 3; ++k)
      cr_expect_eq(z[k], ne, "%s element %d", kComparisons[o], k);
    weft_tensor_destroy(out);
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* uint8 takes every comparison and bool takes Equal and NotEqual, as on
 * the CPU; a bool byte other than 0 or 1 reads as true. */
Test(opencl, comparisons_uint8_and_bool) {
  REQUIRE_OPENCL();
  wt_rng rng = {37};
  /* Ties, and bytes above 127 that a signed compare would get wrong. */
  static const uint8_t u8_values[] = {0, 1, 2, 127, 128, 200, 255};
  static const uint8_t bool_values[] = {0, 1, 2};
  for (size_t o = 0; o < sizeof kComparisons / sizeof *kComparisons; ++o) {
    const int equality = strcmp(kComparisons[o], "Equal") == 0 ||
                         strcmp(kComparisons[o], "NotEqual") == 0;
    for (size_t k = 0; k < sizeof kBroadcastShapes / sizeof *kBroadcastShapes;
         ++k) {
      for (int is_bool = 0; is_bool <= equality; ++is_bool) {
        const shape_pair* sh = &kBroadcastShapes[k];
        const weft_dtype dtype = is_bool ? WEFT_BOOL : WEFT_UINT8;
        const uint8_t* values = is_bool ? bool_values : u8_values;
        const int count = is_bool ? 3 : 7;
        weft_graph* graph = wt_graph_new();
        run_set set = {0};
        weft_output x = feed(graph, &set, "x", random_bytes(&rng, dtype, sh->x, sh->x_rank, values, count));
        weft_output y = feed(graph, &set, "y", random_bytes(&rng, dtype, sh->y, sh->y_rank, values, count));
        set.fetches[0] = wt_apply2(graph, kComparisons[o], "z", x, y);
        set.num_fetches = 1;
        char what[96];
        snprintf(what, sizeof what, "%s %s shapes %zu", kComparisons[o],
                 weft_dtype_name(dtype), k);
        compare(graph, &set, 0, 0, what);
        release(&set);
        weft_graph_destroy(graph);
      }
    }
  }
  /* By hand: 2 is true, so it equals 1. */
  for (int ne = 0; ne < 2; ++ne) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    const uint8_t xs[4] = {2, 1, 0, 2}, ys[4] = {1, 2, 0, 0};
    weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_BOOL, WT_SHAPE(4), xs));
    weft_output y = feed(graph, &set, "y", wt_tensor(WEFT_BOOL, WT_SHAPE(4), ys));
    set.fetches[0] = wt_apply2(graph, ne ? "NotEqual" : "Equal", "z", x, y);
    set.num_fetches = 1;
    weft_tensor* out = NULL;
    WT_OK(run_on(graph, OCL, &set, &out));
    const uint8_t* z = weft_tensor_data(out);
    const uint8_t equal[4] = {1, 1, 1, 0};
    for (int k = 0; k < 4; ++k)
      cr_expect_eq(z[k], equal[k] ^ ne, "%s element %d is %d",
                   ne ? "NotEqual" : "Equal", k, z[k]);
    weft_tensor_destroy(out);
    release(&set);
    weft_graph_destroy(graph);
  }
}

static weft_output transpose(weft_graph* graph, weft_output x,
                             const int64_t* perm, int32_t n) {
  weft_op_builder* b = weft_op_begin(graph, "Transpose", "t");
  weft_op_add_input(b, x);
  weft_op_set_attr_int_list(b, "perm", perm, n);
  return finish(b, 0);
}

Test(opencl, transpose) {
  REQUIRE_OPENCL();
  wt_rng rng = {32};
  /* Negative entries count from the end, as on the CPU. */
  static const int64_t perms[][4] = {{2, 0, 1}, {1, 0, 2},   {0, 1, 2},
                                     {2, 1, 0}, {-1, 0, -2}, {1, -1, 0}};
  for (size_t k = 0; k < sizeof perms / sizeof *perms; ++k) {
    for (int integer = 0; integer < 2; ++integer) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(graph, &set, "x",
                           integer ? random_i32(&rng, WT_SHAPE(3, 4, 5), -99, 99)
                                   : random_f32(&rng, WT_SHAPE(3, 4, 5), -1, 1));
      set.fetches[0] = transpose(graph, x, perms[k], 3);
      set.num_fetches = 1;
      compare(graph, &set, 0, 0, "Transpose [3,4,5]");
      release(&set);
      weft_graph_destroy(graph);
    }
  }
  /* Size-1 dims, rank 4, and by hand: [1,2,1,3] -> perm (3,1,0,2). */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const float v[6] = {0, 1, 2, 3, 4, 5};
  weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 2, 1, 3), v));
  set.fetches[0] = transpose(graph, x, (int64_t[]){3, 1, 0, 2}, 4);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_OK(run_on(graph, OCL, &set, &out));
  wt_expect_shape(out, WEFT_FLOAT32, WT_DIMS(3, 2, 1, 1), 4);
  const double want[6] = {0, 3, 1, 4, 2, 5};
  wt_expect_f32(out, want, 6, 0, 0);
  weft_tensor_destroy(out);
  release(&set);
  weft_graph_destroy(graph);
}

static void concat_split_case(const int64_t (*dims)[3], int32_t count,
                              int64_t axis, int64_t pieces, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output parts[4];
  for (int32_t k = 0; k < count; ++k) {
    char name[8];
    snprintf(name, sizeof name, "v%d", k);
    parts[k] = feed(graph, &set, name, random_f32(rng, dims[k], 3, -1, 1));
  }
  weft_op_builder* b = weft_op_begin(graph, "Concat", "joined");
  weft_op_add_input_list(b, parts, count);
  weft_op_set_attr_int(b, "axis", axis);
  weft_output joined = finish(b, 0);
  b = weft_op_begin(graph, "Split", "cut");
  weft_op_add_input(b, joined);
  weft_op_set_attr_int(b, "axis", axis);
  weft_op_set_attr_int(b, "num_split", pieces);
  weft_node* cut = NULL;
  WT_OK(weft_op_finish(b, &cut));
  set.fetches[0] = joined;
  for (int64_t k = 0; k < pieces; ++k)
    set.fetches[1 + k] = (weft_output){cut, (int32_t)k};
  set.num_fetches = 1 + (int32_t)pieces;
  char what[64];
  snprintf(what, sizeof what, "Concat/Split axis %lld", (long long)axis);
  compare(graph, &set, 0, 0, what);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, concat_and_split) {
  REQUIRE_OPENCL();
  wt_rng rng = {33};
  const int64_t middle[3][3] = {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}};
  concat_split_case(middle, 3, 1, 3, &rng);   /* [2,6,4] in 3 */
  concat_split_case(middle, 3, -2, 2, &rng);  /* negative axis */
  const int64_t first[2][3] = {{1, 3, 2}, {3, 3, 2}};
  concat_split_case(first, 2, 0, 2, &rng);
  const int64_t last[2][3] = {{2, 3, 1}, {2, 3, 5}};
  concat_split_case(last, 2, 2, 3, &rng);
  const int64_t empty[2][3] = {{2, 0, 3}, {2, 4, 3}};
  concat_split_case(empty, 2, 1, 2, &rng);
}

Test(opencl, select_broadcasting) {
  REQUIRE_OPENCL();
  wt_rng rng = {36};
  /* condition, t and e shapes: equal; all three broadcast; scalars. */
  static const int64_t shapes[3][3][3] = {
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
      {{3, 1, 5}, {1, 4, 1}, {1, 1, 5}},
      {{1, 1, 1}, {2, 1, 3}, {1, 1, 1}}};
  for (int k = 0; k < 3; ++k) {
    for (int integer = 0; integer < 2; ++integer) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      const int64_t n = count_of(shapes[k][0], 3);
      uint8_t* bits = malloc((size_t)n);
      for (int64_t e = 0; e < n; ++e) bits[e] = (uint8_t)(wt_rng_next(&rng) % 2);
      weft_output c = feed(graph, &set, "c",
                           wt_tensor(WEFT_BOOL, shapes[k][0], 3, bits));
      free(bits);
      weft_output t = feed(graph, &set, "t",
                           integer ? random_i32(&rng, shapes[k][1], 3, -9, 9)
                                   : random_f32(&rng, shapes[k][1], 3, -1, 1));
      weft_output e = feed(graph, &set, "e",
                           integer ? random_i32(&rng, shapes[k][2], 3, -9, 9)
                                   : random_f32(&rng, shapes[k][2], 3, -1, 1));
      weft_op_builder* b = weft_op_begin(graph, "Select", "picked");
      weft_op_add_input(b, c);
      weft_op_add_input(b, t);
      weft_op_add_input(b, e);
      set.fetches[0] = finish(b, 0);
      set.num_fetches = 1;
      compare(graph, &set, 0, 0, "Select");
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}

static void gather_case(const int64_t* idx_dims, int32_t idx_rank,
                        weft_dtype index_type, int64_t axis, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t params_dims[3] = {5, 4, 3};
  const int64_t limit = params_dims[axis];
  const int64_t n = count_of(idx_dims, idx_rank);
  int64_t i64[16];
  int32_t i32[16];
  for (int64_t j = 0; j < n; ++j) {
    i64[j] = (int64_t)(wt_rng_next(rng) % (uint64_t)limit);
    i32[j] = (int32_t)i64[j];
  }
  weft_output params = feed(graph, &set, "params",
                            random_f32(rng, params_dims, 3, -1, 1));
  weft_output idx = feed(graph, &set, "indices",
                         wt_tensor(index_type, idx_dims, idx_rank,
                                   index_type == WEFT_INT64 ? (void*)i64
                                                            : (void*)i32));
  weft_op_builder* b = weft_op_begin(graph, "Gather", "gathered");
  weft_op_add_input(b, params);
  weft_op_add_input(b, idx);
  weft_op_set_attr_int(b, "axis", axis);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  compare(graph, &set, 0, 0, "Gather");
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, gather) {
  REQUIRE_OPENCL();
  wt_rng rng = {34};
  for (int64_t axis = 0; axis < 3; ++axis) {
    gather_case(WT_SHAPE(7), WEFT_INT32, axis, &rng);
    gather_case(WT_SHAPE(2, 3), WEFT_INT64, axis, &rng);
    gather_case(NULL, 0, WEFT_INT32, axis, &rng); /* a scalar index */
  }
}

Test(opencl, gather_index_out_of_range_is_an_error) {
  REQUIRE_OPENCL();
  wt_rng rng = {35};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t bad[3] = {0, 9, 1};
  weft_output params = feed(graph, &set, "params",
                            random_f32(&rng, WT_SHAPE(4, 2), -1, 1));
  weft_output idx = feed(graph, &set, "indices",
                         wt_tensor(WEFT_INT32, WT_SHAPE(3), bad));
  set.fetches[0] = wt_apply2(graph, "Gather", "gathered", params, idx);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                  "gathered", "indices[1] = 9", "[0, 4)");
  release(&set);
  weft_graph_destroy(graph);
}

/* Transpose, Concat, Split, Gather and Select move bytes: every dtype runs
 * on OpenCL and matches the CPU bit for bit. */
Test(opencl, data_movement_of_every_dtype) {
  REQUIRE_OPENCL();
  wt_rng rng = {39};
  static const weft_dtype dtypes[] = {
      WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64,    WEFT_UINT8,
      WEFT_BOOL,    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8,   WEFT_INT16,
      WEFT_UINT16,  WEFT_UINT32,  WEFT_UINT64};
  static const uint8_t bool_values[] = {0, 1};
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d) {
    const weft_dtype dtype = dtypes[d];
    /* Any bytes (NaN payloads included) except in bool, which is 0 or 1. */
    const uint8_t* values = dtype == WEFT_BOOL ? bool_values : NULL;
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x", random_bytes(&rng, dtype, WT_SHAPE(3, 4, 5), values, 2));
    weft_output w = feed(graph, &set, "w", random_bytes(&rng, dtype, WT_SHAPE(3, 2, 5), values, 2));
    weft_output e = feed(graph, &set, "e", random_bytes(&rng, dtype, WT_SHAPE(3, 4, 5), values, 2));
    weft_output t = transpose(graph, x, (int64_t[]){2, 0, 1}, 3);
    weft_op_builder* b = weft_op_begin(graph, "Concat", "joined");
    weft_output parts[2] = {w, x};
    weft_op_add_input_list(b, parts, 2);
    weft_op_set_attr_int(b, "axis", 1);
    weft_output joined = finish(b, 0);
    b = weft_op_begin(graph, "Split", "cut");
    weft_op_add_input(b, joined);
    weft_op_set_attr_int(b, "axis", 1);
    weft_op_set_attr_int(b, "num_split", 3);
    weft_output piece = finish(b, 1); /* x's first two columns */
    const int32_t picks[4] = {4, 0, 4, 2};
    weft_output idx = wt_const(graph, "picks", wt_tensor(WEFT_INT32, WT_SHAPE(4), picks));
    b = weft_op_begin(graph, "Gather", "gathered");
    weft_op_add_input(b, x);
    weft_op_add_input(b, idx);
    weft_op_set_attr_int(b, "axis", -1);
    weft_output gathered = finish(b, 0);
    weft_output c = wt_const(graph, "c", random_bytes(&rng, WEFT_BOOL, WT_SHAPE(4, 1), bool_values, 2));
    b = weft_op_begin(graph, "Select", "picked");
    weft_op_add_input(b, c);
    weft_op_add_input(b, x);
    weft_op_add_input(b, e);
    weft_output picked = finish(b, 0);
    const weft_output fetches[2][4] = {{t, joined, piece, gathered},
                                       {picked}};
    for (int f = 0; f < 2; ++f) {
      set.num_fetches = f == 0 ? 4 : 1;
      memcpy(set.fetches, fetches[f], sizeof set.fetches);
      char what[64];
      snprintf(what, sizeof what, "data movement of %s",
               weft_dtype_name(dtype));
      compare(graph, &set, 0, 0, what);
    }
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* A placeholder of unknown rank fed with `value`: the graph cannot check
 * the attributes of what consumes it, so the kernel must. */
static weft_output feed_unknown_rank(weft_graph* graph, run_set* set,
                                     const char* name, weft_tensor* value) {
  weft_output out =
      wt_placeholder(graph, name, weft_tensor_dtype(value), NULL, -1);
  set->feeds[set->num_feeds] = out;
  set->values[set->num_feeds++] = value;
  return out;
}

/* Runs `set` on OpenCL and on the CPU: both must fail with
 * INVALID_ARGUMENT, OpenCL's message naming `node` and `detail`. */
static void expect_both_reject(weft_graph* graph, run_set* set,
                               const char* node, const char* detail) {
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, set, &out), WEFT_INVALID_ARGUMENT, node,
                  detail);
  WT_EXPECT_CODE(run_on(graph, "CPU", set, &out), WEFT_INVALID_ARGUMENT);
  release(set);
  weft_graph_destroy(graph);
}

/* Split of a [5, 3] matrix fed with unknown rank along `axis` in `pieces`,
 * which its shape does not allow. */
static void split_rejected(wt_rng* rng, int64_t axis, int64_t pieces,
                           const char* detail) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(rng, WT_SHAPE(5, 3), -1, 1));
  weft_op_builder* b = weft_op_begin(graph, "Split", "cut");
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "axis", axis);
  weft_op_set_attr_int(b, "num_split", pieces);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "cut", detail);
}

Test(opencl, array_attributes_that_do_not_fit_the_input_are_errors) {
  REQUIRE_OPENCL();
  wt_rng rng = {40};
  /* perm has 2 entries, x 3 axes. */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(&rng, WT_SHAPE(2, 3, 4), -1, 1));
  set.fetches[0] = transpose(graph, x, (int64_t[]){1, 0}, 2);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "t", "perm");

  /* Concat along axis 2 of matrices. */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  weft_output parts[2] = {
      feed_unknown_rank(graph, &set, "a", random_f32(&rng, WT_SHAPE(2, 3), -1, 1)),
      feed_unknown_rank(graph, &set, "b", random_f32(&rng, WT_SHAPE(2, 3), -1, 1))};
  weft_op_builder* b = weft_op_begin(graph, "Concat", "joined");
  weft_op_add_input_list(b, parts, 2);
  weft_op_set_attr_int(b, "axis", 2);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "joined", "axis");

  split_rejected(&rng, -3, 2, "axis");  /* axis -3 of a matrix */
  split_rejected(&rng, 0, 2, "split");  /* 5 rows in 2 */

  /* Gather along axis 2 of a matrix. */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  const int32_t zero[1] = {0};
  weft_output params = feed_unknown_rank(graph, &set, "params", random_f32(&rng, WT_SHAPE(4, 2), -1, 1));
  weft_output idx = feed(graph, &set, "indices", wt_tensor(WEFT_INT32, WT_SHAPE(1), zero));
  b = weft_op_begin(graph, "Gather", "gathered");
  weft_op_add_input(b, params);
  weft_op_add_input(b, idx);
  weft_op_set_attr_int(b, "axis", 2);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "gathered", "axis");
}

Test(opencl, gather_negative_index_is_an_error) {
  REQUIRE_OPENCL();
  wt_rng rng = {41};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t bad[4] = {1, 0, 2, -1};
  weft_output params = feed(graph, &set, "params", random_f32(&rng, WT_SHAPE(2, 3), -1, 1));
  weft_output idx = feed(graph, &set, "indices", wt_tensor(WEFT_INT64, WT_SHAPE(2, 2), bad));
  weft_op_builder* b = weft_op_begin(graph, "Gather", "gathered");
  weft_op_add_input(b, params);
  weft_op_add_input(b, idx);
  weft_op_set_attr_int(b, "axis", 1);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "gathered", "indices[3] = -1");
}

/* ---- Slice, Tile, Pad, Pack, Unpack, OneHot, Shape, Size, Rank ----------- *
 * The conformance kit (`weft conformance`) runs these against the CPU for
 * every dtype on ordinary shapes; here: the errors, the edges (scalars,
 * empty tensors, negative axes, indices outside OneHot's depth) and ranks
 * past the eight dims a kernel walks. */

static weft_output pack(weft_graph* graph, const char* name,
                        const weft_output* values, int32_t n, int64_t axis) {
  weft_op_builder* b = weft_op_begin(graph, "Pack", name);
  weft_op_add_input_list(b, values, n);
  weft_op_set_attr_int(b, "axis", axis);
  return finish(b, 0);
}

/* Unpack's node; `num` < 0 leaves the attribute to the shape function. */
static weft_node* unpack(weft_graph* graph, const char* name, weft_output x,
                         int64_t axis, int64_t num) {
  weft_op_builder* b = weft_op_begin(graph, "Unpack", name);
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "axis", axis);
  if (num >= 0) weft_op_set_attr_int(b, "num", num);
  return finish(b, 0).node;
}

static weft_output one_hot(weft_graph* graph, const char* name,
                           weft_output indices, int64_t depth, int64_t axis,
                           double on, double off, weft_dtype dtype) {
  weft_op_builder* b = weft_op_begin(graph, "OneHot", name);
  weft_op_add_input(b, indices);
  weft_op_set_attr_int(b, "depth", depth);
  weft_op_set_attr_int(b, "axis", axis);
  weft_op_set_attr_float(b, "on_value", on);
  weft_op_set_attr_float(b, "off_value", off);
  weft_op_set_attr_dtype(b, "dtype", dtype);
  return finish(b, 0);
}

/* `op` (Slice, Tile or Pad) over x with int-list attributes: `first`
 * (begin, multiples or paddings) and, for Slice, `size`. */
static weft_output boxed(weft_graph* graph, const char* op, const char* name,
                         weft_output x, const char* first,
                         const int64_t* values, int32_t n,
                         const int64_t* size) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_add_input(b, x);
  weft_op_set_attr_int_list(b, first, values, n);
  if (size != NULL) weft_op_set_attr_int_list(b, "size", size, n);
  return finish(b, 0);
}

Test(opencl, pack_and_unpack_of_scalars_empty_tensors_and_negative_axes) {
  REQUIRE_OPENCL();
  wt_rng rng = {60};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output scalars[3];
  for (int i = 0; i < 3; ++i) {
    char name[8];
    snprintf(name, sizeof name, "s%d", i);
    scalars[i] = feed(graph, &set, name, random_f32(&rng, NULL, 0, -1, 1));
  }
  /* Scalars stack into a vector whichever way axis counts, and back. */
  weft_output back = pack(graph, "back", scalars, 3, -1);
  weft_node* items = unpack(graph, "items", back, -1, -1);
  set.num_fetches = 4;
  set.fetches[0] = pack(graph, "front", scalars, 3, 0);
  set.fetches[1] = pack(graph, "one", scalars, 1, -1);
  set.fetches[2] = (weft_output){items, 0};
  set.fetches[3] = (weft_output){items, 2};
  compare(graph, &set, 0, 0, "Pack of scalars, Unpack into scalars");
  weft_tensor* got[MAX_FETCHES] = {0};
  WT_OK(run_on(graph, OCL, &set, got));
  cr_expect_eq(weft_tensor_rank(got[3]), 0);
  cr_expect_eq(((const float*)weft_tensor_data(got[3]))[0],
               ((const float*)weft_tensor_data(set.values[2]))[0],
               "Unpack(Pack(s))[2] is s2");
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  release(&set);
  weft_graph_destroy(graph);

  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  weft_output empties[2] = {
      feed(graph, &set, "e0", random_f32(&rng, WT_SHAPE(0, 3), -1, 1)),
      feed(graph, &set, "e1", random_f32(&rng, WT_SHAPE(0, 3), -1, 1))};
  /* [0, 3] twice at axis -2 (of the output's three): [0, 2, 3], and back
   * into two [0, 3]. */
  weft_output empty = pack(graph, "empty", empties, 2, -2);
  weft_node* halves = unpack(graph, "halves", empty, -2, -1);
  set.num_fetches = 3;
  set.fetches[0] = empty;
  set.fetches[1] = (weft_output){halves, 0};
  set.fetches[2] = (weft_output){halves, 1};
  compare(graph, &set, 0, 0, "Pack and Unpack of empty tensors");
  WT_OK(run_on(graph, OCL, &set, got));
  cr_expect(weft_tensor_rank(got[0]) == 3 && weft_tensor_dim(got[0], 1) == 2);
  cr_expect(weft_tensor_rank(got[2]) == 2 && weft_tensor_dim(got[2], 0) == 0);
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(got[i]);
  /* A [2, 3, 4] cut along -1 (four [2, 3]) and -3 (two [3, 4]), and the
   * four stacked again along -1. */
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(2, 3, 4), -1, 1));
  weft_node* last = unpack(graph, "last", x, -1, -1);
  weft_node* first = unpack(graph, "first", x, -3, -1);
  const weft_output pieces[4] = {{last, 0}, {last, 1}, {last, 2}, {last, 3}};
  set.num_fetches = 4;
  set.fetches[0] = pieces[0];
  set.fetches[1] = pieces[3];
  set.fetches[2] = (weft_output){first, 1};
  set.fetches[3] = pack(graph, "again", pieces, 4, -1);
  compare(graph, &set, 0, 0, "Unpack along negative axes");
  WT_OK(run_on(graph, OCL, &set, got));
  expect_match(got[3], set.values[2], 0, 0, "Pack(Unpack(x, -1), -1) is x");
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  release(&set);
  weft_graph_destroy(graph);
}

/* An index outside [0, depth) — negative or past it — leaves its row all
 * off_value on both devices, as TensorFlow does; it is not an error. */
Test(opencl, one_hot_index_outside_depth_gives_a_row_of_off_value) {
  REQUIRE_OPENCL();
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t idx32[6] = {-1, 0, 4, 5, 2, 99};
  const int64_t idx64[4] = {3, -7, 1, 4};
  const int64_t scalar = 3;
  weft_output i32 = feed(graph, &set, "i32", wt_tensor(WEFT_INT32, WT_SHAPE(2, 3), idx32));
  weft_output i64 = feed(graph, &set, "i64", wt_tensor(WEFT_INT64, WT_SHAPE(4), idx64));
  weft_output i0 = feed(graph, &set, "i0", wt_tensor(WEFT_INT64, NULL, 0, &scalar));
  set.num_fetches = 4;
  set.fetches[0] = one_hot(graph, "rows", i32, 5, -1, 7, -2, WEFT_INT32);
  set.fetches[1] = one_hot(graph, "first", i32, 5, 0, 2.5, -0.5, WEFT_FLOAT16);
  set.fetches[2] = one_hot(graph, "middle", i64, 4, -2, 1, 0, WEFT_BOOL);
  set.fetches[3] = one_hot(graph, "scalar", i0, 4, -1, 1, 0, WEFT_UINT64);
  compare(graph, &set, 0, 0, "OneHot with indices outside depth");
  weft_tensor* got[MAX_FETCHES] = {0};
  WT_OK(run_on(graph, OCL, &set, got));
  const int32_t* rows = weft_tensor_data(got[0]);
  for (int r = 0; r < 6; ++r) {
    for (int d = 0; d < 5; ++d) {
      cr_expect_eq(rows[r * 5 + d], idx32[r] == d ? 7 : -2,
                   "row %d (index %d), column %d: %d", r, idx32[r], d,
                   rows[r * 5 + d]);
    }
  }
  const uint64_t* hot = weft_tensor_data(got[3]);
  cr_expect(weft_tensor_rank(got[3]) == 1 && hot[3] == 1 && hot[0] == 0);
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  /* depth 0: nothing to write. */
  set.num_fetches = 1;
  set.fetches[0] = one_hot(graph, "none", i32, 0, -1, 1, 0, WEFT_FLOAT32);
  compare(graph, &set, 0, 0, "OneHot of depth 0");
  release(&set);
  weft_graph_destroy(graph);
}

/* `op` (Slice, Tile or Pad) over a [3, 5] matrix fed with unknown rank,
 * with `attr` = values (and Slice's size [1, 2]) that do not fit it. */
static void box_rejected(wt_rng* rng, const char* op, const char* attr,
                         const int64_t* values, int32_t n,
                         const char* detail) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(rng, WT_SHAPE(3, 5), -1, 1));
  const int64_t size[4] = {1, 2, 1, 1};
  set.fetches[0] = boxed(graph, op, "box", x, attr, values, n,
                         strcmp(op, "Slice") == 0 ? size : NULL);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "box", detail);
}

/* Attributes the graph could not check (the input's rank was unknown):
 * both kernels refuse them, OpenCL's message naming the node and what is
 * wrong, in the CPU's words. */
Test(opencl, layout_attributes_that_do_not_fit_the_input_are_errors) {
  REQUIRE_OPENCL();
  wt_rng rng = {61};
  box_rejected(&rng, "Slice", "begin", WT_SHAPE(1),
               "attribute begin has 1 entries; the input needs 2");
  box_rejected(&rng, "Slice", "begin", WT_SHAPE(1, 4),
               "begin 4, size 2 is out of bounds for dimension 1 of [3,5]");
  box_rejected(&rng, "Tile", "multiples", WT_SHAPE(2, 2, 2),
               "attribute multiples has 3 entries");
  box_rejected(&rng, "Pad", "paddings", WT_SHAPE(1, 1),
               "attribute paddings has 2 entries; the input needs 4");

  /* Pack: an axis past the output's rank, and two shapes. */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output parts[2] = {
      feed_unknown_rank(graph, &set, "a", random_f32(&rng, WT_SHAPE(2, 3), -1, 1)),
      feed_unknown_rank(graph, &set, "b", random_f32(&rng, WT_SHAPE(2, 3), -1, 1))};
  set.fetches[0] = pack(graph, "stacked", parts, 2, 3);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "stacked", "attribute axis = 3 is out of range [-3, 3)");
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  parts[0] = feed_unknown_rank(graph, &set, "a", random_f32(&rng, WT_SHAPE(2, 3), -1, 1));
  parts[1] = feed_unknown_rank(graph, &set, "b", random_f32(&rng, WT_SHAPE(3, 2), -1, 1));
  set.fetches[0] = pack(graph, "stacked", parts, 2, -1);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "stacked", "input 1 has shape [3,2] but input 0 has [2,3]; Pack needs one shape");

  /* Unpack: of a scalar (no axis to cut), along -3 of a matrix, and into
   * a count of outputs the dim is not. */
  static const struct {
    int64_t dims[2];
    int32_t rank;
    int64_t axis, num;
    const char* detail;
  } kUnpacks[] = {
      {{0}, 0, 0, 1, "attribute axis = 0 is out of range [0, 0)"},
      {{3, 4}, 2, -3, 3, "attribute axis = -3 is out of range [-2, 2)"},
      {{3, 4}, 2, 0, 2, "the node has 2 outputs but dimension 0 of [3,4] is 3"},
  };
  for (size_t k = 0; k < sizeof kUnpacks / sizeof *kUnpacks; ++k) {
    graph = wt_graph_new();
    memset(&set, 0, sizeof set);
    weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(&rng, kUnpacks[k].dims, kUnpacks[k].rank, -1, 1));
    set.fetches[0] = (weft_output){unpack(graph, "cut", x, kUnpacks[k].axis, kUnpacks[k].num), 0};
    set.num_fetches = 1;
    expect_both_reject(graph, &set, "cut", kUnpacks[k].detail);
  }

  /* OneHot along axis 3 of [2] indices (the output has two axes). */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  const int32_t idx[2] = {0, 1};
  weft_output i = feed_unknown_rank(graph, &set, "i", wt_tensor(WEFT_INT32, WT_SHAPE(2), idx));
  set.fetches[0] = one_hot(graph, "hot", i, 3, 3, 1, 0, WEFT_FLOAT32);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "hot", "attribute axis = 3 is out of range [-2, 2)");

  /* Shape as int32 of a dim past INT32_MAX (an empty tensor, so the dim
   * costs no memory): refused rather than wrapped; int64 holds it. */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  weft_output big = feed_unknown_rank(graph, &set, "big", wt_tensor(WEFT_FLOAT32, WT_SHAPE(3000000000LL, 0), NULL));
  weft_op_builder* b = weft_op_begin(graph, "Shape", "dims");
  weft_op_add_input(b, big);
  weft_op_set_attr_dtype(b, "out_type", WEFT_INT64);
  set.fetches[0] = finish(b, 0);
  set.fetches[1] = wt_apply1(graph, "Size", "count", big);
  set.fetches[2] = wt_apply1(graph, "Rank", "rank", big);
  set.num_fetches = 3;
  compare(graph, &set, 0, 0, "Shape, Size and Rank of [3000000000, 0]");
  set.fetches[0] = wt_apply1(graph, "Shape", "dims32", big);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "dims32", "3000000000 does not fit out_type int32");
}

/* Rank 10, past the eight dims a kernel walks: Slice, Tile and Pad merge
 * the dims that run on, and Shape writes its ten values in two parts. */
Test(opencl, layout_of_rank_ten) {
  REQUIRE_OPENCL();
  wt_rng rng = {62};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t dims[10] = {2, 1, 3, 1, 2, 2, 1, 2, 1, 3};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, dims, 10, -1, 1));
  const int64_t begin[10] = {1, 0, 1, 0, 0, 0, 0, 0, 0, 1};
  const int64_t size[10] = {1, 1, -1, 1, 2, 2, 1, 2, 1, 2};
  const int64_t multiples[10] = {1, 3, 1, 1, 2, 1, 1, 1, 2, 1};
  const int64_t paddings[20] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0,
                                0, 0, 0, 0, 0, 0, 2, 0, 0, 1};
  set.num_fetches = 4;
  set.fetches[0] = boxed(graph, "Slice", "sliced", x, "begin", begin, 10, size);
  set.fetches[1] = boxed(graph, "Tile", "tiled", x, "multiples", multiples, 10, NULL);
  set.fetches[2] = boxed(graph, "Pad", "padded", x, "paddings", paddings, 20, NULL);
  set.fetches[3] = wt_apply1(graph, "Shape", "dims", x);
  compare(graph, &set, 0, 0, "rank 10");
  weft_tensor* got[MAX_FETCHES] = {0};
  WT_OK(run_on(graph, OCL, &set, got));
  const int32_t* shape = weft_tensor_data(got[3]);
  for (int i = 0; i < 10; ++i) {
    cr_expect_eq(shape[i], dims[i], "Shape[%d] = %d", i, shape[i]);
  }
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  release(&set);
  weft_graph_destroy(graph);
}
