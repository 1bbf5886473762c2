/* Bad graphs and bad runs: each is refused with a clear code and a message
 * naming what is at fault, leaves the graph as it was, and never crashes.
 * Node names are distinctive so that finding them in a message means the
 * message really names the node. */
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_graph* graph;
static weft_output f23; /* float32 [2,3] */
static weft_output f45; /* float32 [4,5] */
static weft_output f32_23; /* another float32 [2,3] */
static weft_output i23; /* int32 [2,3] */

static void make_graph(void) {
  graph = wt_graph_new();
  f23 = wt_placeholder(graph, "quill_f23", WEFT_FLOAT32, WT_SHAPE(2, 3));
  f45 = wt_placeholder(graph, "quill_f45", WEFT_FLOAT32, WT_SHAPE(4, 5));
  f32_23 = wt_placeholder(graph, "quill_g23", WEFT_FLOAT32, WT_SHAPE(2, 3));
  i23 = wt_placeholder(graph, "quill_i23", WEFT_INT32, WT_SHAPE(2, 3));
}

static void free_graph(void) { weft_graph_destroy(graph); }

TestSuite(graph_errors, .init = make_graph, .fini = free_graph);

/* Checks that a refused node left no trace, and that the graph still builds
 * and runs correct nodes. */
static void expect_graph_still_usable(int32_t count_before) {
  cr_expect_eq(weft_graph_node_count(graph), count_before,
               "a refused node changed the graph");
  weft_output sum = wt_apply2(graph, "Add", "after_errors_sum", f23, f32_23);
  weft_session* session = wt_session_new(graph, NULL);
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
  weft_tensor* values[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), a),
                            wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), b)};
  weft_output feeds[2] = {f23, f32_23};
  weft_tensor* out = wt_run1(session, feeds, values, 2, sum);
  double expected[6] = {11, 22, 33, 44, 55, 66};
  wt_expect_f32(out, expected, 6, 0, 0);
  weft_tensor_destroy(out);
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  weft_session_destroy(session);
}

/* ---- build-time errors --------------------------------------------------- */

Test(graph_errors, unknown_op) {
  int32_t before = weft_graph_node_count(graph);
  weft_op_builder* b = weft_op_begin(graph, "FrobnicateTensor", "frob_node");
  cr_assert_not_null(b, "an unknown op is reported by weft_op_finish");
  weft_op_add_input(b, f23);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_NOT_FOUND,
                  "FrobnicateTensor");
  cr_expect_null(weft_graph_node_by_name(graph, "frob_node"));

  weft_output out;
  WT_EXPECT_ERROR(weft_graph_apply(graph, "NoSuchOpAnywhere", "frob2", &f23, 1,
                                   &out),
                  WEFT_NOT_FOUND, "NoSuchOpAnywhere");
  expect_graph_still_usable(before);
}

Test(graph_errors, wrong_arity) {
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Add", "lonely_add", &f23, 1, &out),
                  WEFT_INVALID_ARGUMENT, "lonely_add", "Add");
  weft_output three[3] = {f23, f23, f23};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Relu", "crowded_relu", three, 2,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "crowded_relu", "Relu");
  WT_EXPECT_ERROR(weft_graph_apply(graph, "MatMul", "crowded_matmul", three, 3,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "crowded_matmul", "MatMul");
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Neg", "starved_neg", NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "starved_neg", "Neg");
  expect_graph_still_usable(before);
}

Test(graph_errors, dtype_mismatch) {
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  weft_output mixed[2] = {f23, i23};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Add", "mixed_add", mixed, 2, &out),
                  WEFT_INVALID_ARGUMENT, "mixed_add", "Add",
                  weft_dtype_name(WEFT_FLOAT32), weft_dtype_name(WEFT_INT32));
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Mul", "mixed_mul", mixed, 2, &out),
                  WEFT_INVALID_ARGUMENT, "mixed_mul");
  expect_graph_still_usable(before);
}

Test(graph_errors, matmul_shape_mismatch) {
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  weft_output ab[2] = {f23, f45};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "MatMul", "mismatched_mm", ab, 2,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "mismatched_mm", "MatMul");

  /* The transposes change which dimensions must agree. */
  weft_op_builder* b = weft_op_begin(graph, "MatMul", "mismatched_mm_t");
  weft_op_add_input(b, f23);
  weft_op_add_input(b, f32_23);
  weft_op_set_attr_bool(b, "transpose_a", 1);
  weft_op_set_attr_bool(b, "transpose_b", 1);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
                  "mismatched_mm_t");

  weft_output rank3 =
      wt_placeholder(graph, "quill_rank3", WEFT_FLOAT32, WT_SHAPE(2, 3, 3));
  before = weft_graph_node_count(graph);
  weft_output r3[2] = {rank3, rank3};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "MatMul", "rank3_mm", r3, 2, &out),
                  WEFT_INVALID_ARGUMENT, "rank3_mm");
  expect_graph_still_usable(before);
}

Test(graph_errors, broadcast_incompatible) {
  weft_output f32 =
      wt_placeholder(graph, "quill_f32", WEFT_FLOAT32, WT_SHAPE(3, 2));
  weft_output f2 = wt_placeholder(graph, "quill_f2", WEFT_FLOAT32, WT_SHAPE(2));
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  weft_output transposed[2] = {f23, f32};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Add", "clashing_add", transposed, 2,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "clashing_add");
  /* Dimensions align from the right: 3 against 2. */
  weft_output trailing[2] = {f23, f2};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Sub", "clashing_sub", trailing, 2,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "clashing_sub");
  expect_graph_still_usable(before);
}

Test(graph_errors, missing_required_attr) {
  int32_t before = weft_graph_node_count(graph);
  weft_op_builder* b = weft_op_begin(graph, "Cast", "aimless_cast");
  weft_op_add_input(b, f23);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
                  "aimless_cast", "DstT");
  expect_graph_still_usable(before);
}

Test(graph_errors, mistyped_attr) {
  int32_t before = weft_graph_node_count(graph);
  weft_op_builder* b = weft_op_begin(graph, "MatMul", "stringly_mm");
  weft_op_add_input(b, f23);
  weft_op_add_input(b, f32_23);
  weft_op_set_attr_string(b, "transpose_b", "yes please");
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
                  "stringly_mm", "transpose_b");

  b = weft_op_begin(graph, "Sum", "floaty_sum");
  weft_op_add_input(b, f23);
  weft_op_set_attr_float(b, "axes", 1.0);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT, "floaty_sum",
                  "axes");
  expect_graph_still_usable(before);
}

Test(graph_errors, bad_reduction_axes) {
  int32_t before = weft_graph_node_count(graph);
  weft_op_builder* b = weft_op_begin(graph, "Sum", "twice_sum");
  weft_op_add_input(b, f23);
  weft_op_set_attr_int_list(b, "axes", WT_DIMS(1, -1), 2);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT, "twice_sum");

  b = weft_op_begin(graph, "Mean", "faraway_mean");
  weft_op_add_input(b, f23);
  weft_op_set_attr_int_list(b, "axes", WT_DIMS(2), 1);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
                  "faraway_mean");

  b = weft_op_begin(graph, "Sum", "negfar_sum");
  weft_op_add_input(b, f23);
  weft_op_set_attr_int_list(b, "axes", WT_DIMS(-3), 1);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
                  "negfar_sum");
  expect_graph_still_usable(before);
}

Test(graph_errors, duplicate_node_name) {
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  WT_EXPECT_ERROR(weft_graph_placeholder(graph, "quill_f23", WEFT_FLOAT32,
                                         WT_SHAPE(1), &out),
                  WEFT_ALREADY_EXISTS, "quill_f23");
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Relu", "quill_f45", &f23, 1, &out),
                  WEFT_ALREADY_EXISTS, "quill_f45");
  /* The original node is the one the name still finds. */
  cr_expect_eq(weft_graph_node_by_name(graph, "quill_f45"), f45.node);
  cr_expect_str_eq(weft_node_op_type(f45.node), "Placeholder");
  expect_graph_still_usable(before);
}

Test(graph_errors, bad_input_output_index) {
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  weft_output missing = {f23.node, 7};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Relu", "dangling_relu", &missing, 1,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "dangling_relu");
  weft_output negative = {f23.node, -1};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Relu", "negative_relu", &negative,
                                   1, &out),
                  WEFT_INVALID_ARGUMENT, "negative_relu");
  weft_output nothing = {NULL, 0};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Relu", "null_relu", &nothing, 1,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "null_relu");
  expect_graph_still_usable(before);
}

Test(graph_errors, input_from_another_graph) {
  weft_graph* other = wt_graph_new();
  weft_output alien =
      wt_placeholder(other, "alien_input", WEFT_FLOAT32, WT_SHAPE(2, 3));
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  weft_output inputs[2] = {f23, alien};
  WT_EXPECT_ERROR(weft_graph_apply(graph, "Add", "crossing_add", inputs, 2,
                                   &out),
                  WEFT_INVALID_ARGUMENT, "crossing_add");
  weft_graph_destroy(other);
  expect_graph_still_usable(before);
}

Test(graph_errors, bad_placeholders) {
  int32_t before = weft_graph_node_count(graph);
  weft_output out;
  WT_EXPECT_ERROR(weft_graph_placeholder(graph, "typeless_ph",
                                         WEFT_DTYPE_INVALID, WT_SHAPE(2), &out),
                  WEFT_INVALID_ARGUMENT, "typeless_ph");
  WT_EXPECT_ERROR(weft_graph_placeholder(graph, "minus_two_ph", WEFT_FLOAT32,
                                         WT_SHAPE(2, -2), &out),
                  WEFT_INVALID_ARGUMENT, "minus_two_ph");
  int64_t dims[WEFT_MAX_RANK + 1];
  for (int i = 0; i <= WEFT_MAX_RANK; ++i) dims[i] = 1;
  WT_EXPECT_ERROR(weft_graph_placeholder(graph, "towering_ph", WEFT_FLOAT32,
                                         dims, WEFT_MAX_RANK + 1, &out),
                  WEFT_INVALID_ARGUMENT, "towering_ph");
  expect_graph_still_usable(before);
}

Test(graph_errors, refused_name_can_be_reused) {
  weft_output out;
  weft_output mixed[2] = {f23, i23};
  WT_EXPECT_CODE(weft_graph_apply(graph, "Add", "second_chance", mixed, 2,
                                  &out),
                 WEFT_INVALID_ARGUMENT);
  WT_OK(weft_graph_apply(graph, "Relu", "second_chance", &f23, 1, &out));
  cr_expect_eq(weft_graph_node_by_name(graph, "second_chance"), out.node);
}

Test(graph_errors, abandoned_builder_adds_nothing) {
  int32_t before = weft_graph_node_count(graph);
  weft_op_builder* b = weft_op_begin(graph, "Relu", "abandoned_relu");
  weft_op_add_input(b, f23);
  weft_op_abandon(b);
  weft_op_abandon(NULL);
  cr_expect_null(weft_graph_node_by_name(graph, "abandoned_relu"));
  expect_graph_still_usable(before);
}

Test(graph_errors, inspecting_bad_outputs) {
  weft_output missing = {f23.node, 3};
  cr_expect_eq(weft_output_dtype(missing), WEFT_DTYPE_INVALID);
  weft_output nothing = {NULL, 0};
  cr_expect_eq(weft_output_dtype(nothing), WEFT_DTYPE_INVALID);
  int64_t dims[4];
  int32_t rank = 99;
  WT_EXPECT_CODE(weft_output_shape(missing, dims, 4, &rank),
                 WEFT_INVALID_ARGUMENT);

  /* Too little room: OUT_OF_RANGE, yet the rank is reported. */
  rank = 99;
  WT_EXPECT_CODE(weft_output_shape(f23, dims, 1, &rank), WEFT_OUT_OF_RANGE);
  cr_expect_eq(rank, 2);
  WT_OK(weft_output_shape(f23, dims, 4, &rank));
  cr_expect_eq(rank, 2);
  cr_expect_eq(dims[0], 2);
  cr_expect_eq(dims[1], 3);

  cr_expect_eq(weft_node_input(f23.node, 0).node, NULL);
  cr_expect_eq(weft_node_input(f23.node, 0).index, -1);
  cr_expect_null(weft_graph_node_at(graph, -1));
  cr_expect_null(weft_graph_node_at(graph, weft_graph_node_count(graph)));
  cr_expect_null(weft_graph_node_by_name(graph, "no_node_has_this_name"));
}

/* Found by the C API fuzzer: NULL dims with room claimed for them were
 * written through.  NULL with capacity 0 asks for the rank alone. */
Test(graph_errors, output_shape_with_null_or_negative_room) {
  int32_t rank = 99;
  WT_EXPECT_ERROR(weft_output_shape(f23, NULL, 4, &rank),
                  WEFT_INVALID_ARGUMENT, "dims", "NULL");
  WT_EXPECT_ERROR(weft_output_shape(f23, NULL, -1, &rank),
                  WEFT_INVALID_ARGUMENT, "capacity", "-1");
  rank = 99;
  WT_EXPECT_CODE(weft_output_shape(f23, NULL, 0, &rank), WEFT_OUT_OF_RANGE);
  cr_expect_eq(rank, 2);
  weft_output missing = {f23.node, 3};
  WT_EXPECT_ERROR(weft_output_shape(missing, NULL, 0, &rank),
                  WEFT_INVALID_ARGUMENT, "quill_f23", "3");
}

/* ---- run-time errors ----------------------------------------------------- */

struct run_fixture {
  weft_session* session;
  weft_output sum; /* quill_f23 + quill_g23 */
};

static struct run_fixture make_run_fixture(void) {
  struct run_fixture fx;
  fx.sum = wt_apply2(graph, "Add", "fixture_sum", f23, f32_23);
  fx.session = wt_session_new(graph, NULL);
  return fx;
}

/* A failed run returns no tensors, and the session runs correctly after. */
static void expect_run_error_then_recovery(struct run_fixture* fx,
                                           const weft_output* feeds,
                                           weft_tensor* const* values,
                                           int32_t num_feeds,
                                           weft_output fetch,
                                           const char* named) {
  weft_tensor* out[1] = {(weft_tensor*)&out};
  WT_EXPECT_ERROR(weft_session_run(fx->session, feeds, values, num_feeds,
                                   &fetch, 1, NULL, 0, out),
                  WEFT_INVALID_ARGUMENT, named);
  cr_expect_null(out[0], "a failed run left a value in out_values");

  float a[6] = {1, 1, 1, 1, 1, 1}, b[6] = {2, 2, 2, 2, 2, 2};
  weft_tensor* good[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), a),
                          wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), b)};
  weft_output good_feeds[2] = {f23, f32_23};
  weft_tensor* result = wt_run1(fx->session, good_feeds, good, 2, fx->sum);
  double expected[6] = {3, 3, 3, 3, 3, 3};
  wt_expect_f32(result, expected, 6, 0, 0);
  weft_tensor_destroy(result);
  weft_tensor_destroy(good[0]);
  weft_tensor_destroy(good[1]);
}

Test(graph_errors, feed_of_wrong_dtype) {
  struct run_fixture fx = make_run_fixture();
  weft_tensor* values[2] = {wt_tensor(WEFT_INT32, WT_SHAPE(2, 3), NULL),
                            wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), NULL)};
  weft_output feeds[2] = {f23, f32_23};
  expect_run_error_then_recovery(&fx, feeds, values, 2, fx.sum, "quill_f23");
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  weft_session_destroy(fx.session);
}

Test(graph_errors, feed_of_wrong_shape) {
  struct run_fixture fx = make_run_fixture();
  weft_tensor* values[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), NULL),
                            wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 2), NULL)};
  weft_output feeds[2] = {f23, f32_23};
  expect_run_error_then_recovery(&fx, feeds, values, 2, fx.sum, "quill_g23");
  weft_tensor_destroy(values[1]);
  values[1] = wt_tensor(WEFT_FLOAT32, WT_SHAPE(6), NULL);
  expect_run_error_then_recovery(&fx, feeds, values, 2, fx.sum, "quill_g23");
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  weft_session_destroy(fx.session);
}

Test(graph_errors, feed_checked_against_partial_shape) {
  weft_output batch =
      wt_placeholder(graph, "quill_batch", WEFT_FLOAT32, WT_SHAPE(-1, 2));
  weft_output relu = wt_apply1(graph, "Relu", "batch_relu", batch);
  struct run_fixture fx = make_run_fixture();
  weft_tensor* five = wt_tensor(WEFT_FLOAT32, WT_SHAPE(5, 2), NULL);
  weft_tensor* out = wt_run1(fx.session, &batch, &five, 1, relu);
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(5, 2));
  weft_tensor_destroy(out);
  weft_tensor* wrong = wt_tensor(WEFT_FLOAT32, WT_SHAPE(5, 3), NULL);
  expect_run_error_then_recovery(&fx, &batch, &wrong, 1, relu, "quill_batch");
  weft_tensor_destroy(five);
  weft_tensor_destroy(wrong);
  weft_session_destroy(fx.session);
}

Test(graph_errors, needed_placeholder_not_fed) {
  struct run_fixture fx = make_run_fixture();
  weft_tensor* value = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), NULL);
  expect_run_error_then_recovery(&fx, &f23, &value, 1, fx.sum, "quill_g23");
  expect_run_error_then_recovery(&fx, NULL, NULL, 0, fx.sum, "quill_");
  weft_tensor_destroy(value);
  weft_session_destroy(fx.session);
}

Test(graph_errors, fetch_or_feed_of_missing_output) {
  struct run_fixture fx = make_run_fixture();
  weft_tensor* values[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), NULL),
                            wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), NULL)};
  weft_output feeds[2] = {f23, f32_23};
  weft_output missing = {fx.sum.node, 4};
  expect_run_error_then_recovery(&fx, feeds, values, 2, missing,
                                 "fixture_sum");
  weft_output bad_feeds[2] = {f23, {f32_23.node, 2}};
  expect_run_error_then_recovery(&fx, bad_feeds, values, 2, fx.sum,
                                 "quill_g23");
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  weft_session_destroy(fx.session);
}

Test(graph_errors, session_on_unknown_device) {
  weft_session_options options;
  weft_session_options_init(&options);
  cr_expect_eq(options.struct_size, sizeof options);
  options.devices = "/device:NOSUCHDEVICE:0";
  weft_session* session = NULL;
  WT_EXPECT_CODE(weft_session_create(graph, &options, &session),
                 WEFT_NOT_FOUND);
}
