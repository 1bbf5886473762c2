/* What the graph knows before anything runs: each op's output dtype and
 * shape, including unknown dimensions carried through.  A graph that cannot
 * run is refused while it is built, so these shapes are what the refusals
 * rest on. */
#include <criterion/criterion.h>

#include "test_support.h"

static weft_graph* graph;

static void make_graph(void) { graph = wt_graph_new(); }
static void free_graph(void) { weft_graph_destroy(graph); }

TestSuite(shape_inference, .init = make_graph, .fini = free_graph);

static void expect_inferred(weft_output out, weft_dtype dtype,
                            const int64_t* dims, int32_t rank) {
  cr_expect_eq(weft_output_dtype(out), dtype, "%s: dtype %s, expected %s",
               weft_node_name(out.node),
               weft_dtype_name(weft_output_dtype(out)), weft_dtype_name(dtype));
  int64_t got[8];
  int32_t got_rank = -2;
  WT_OK(weft_output_shape(out, got, 8, &got_rank));
  cr_assert_eq(got_rank, rank, "%s: rank %d, expected %d",
               weft_node_name(out.node), got_rank, rank);
  for (int32_t i = 0; i < rank; ++i)
    cr_expect_eq(got[i], dims[i], "%s: dim %d is %lld, expected %lld",
                 weft_node_name(out.node), i, (long long)got[i],
                 (long long)dims[i]);
}

static weft_output ph(const char* name, weft_dtype dtype, const int64_t* dims,
                      int32_t rank) {
  return wt_placeholder(graph, name, dtype, dims, rank);
}

Test(shape_inference, broadcasting) {
  weft_output col = ph("col", WEFT_FLOAT32, WT_SHAPE(3, 1));
  weft_output row = ph("row", WEFT_FLOAT32, WT_SHAPE(1, 4));
  weft_output cube = ph("cube", WEFT_FLOAT32, WT_SHAPE(2, 3, 4));
  weft_output vec = ph("vec", WEFT_FLOAT32, WT_SHAPE(4));
  weft_output scalar = ph("scalar", WEFT_FLOAT32, NULL, 0);
  expect_inferred(wt_apply2(graph, "Add", "a", col, row), WEFT_FLOAT32,
                  WT_SHAPE(3, 4));
  expect_inferred(wt_apply2(graph, "Mul", "b", cube, vec), WEFT_FLOAT32,
                  WT_SHAPE(2, 3, 4));
  expect_inferred(wt_apply2(graph, "Sub", "c", scalar, cube), WEFT_FLOAT32,
                  WT_SHAPE(2, 3, 4));
  expect_inferred(wt_apply2(graph, "Div", "d", scalar, scalar), WEFT_FLOAT32,
                  NULL, 0);
}

Test(shape_inference, unknown_dimensions_carry_through) {
  weft_output batch = ph("batch", WEFT_FLOAT32, WT_SHAPE(-1, 3));
  weft_output bias = ph("bias", WEFT_FLOAT32, WT_SHAPE(3));
  expect_inferred(wt_apply2(graph, "Add", "biased", batch, bias),
                  WEFT_FLOAT32, WT_SHAPE(-1, 3));
  expect_inferred(wt_apply1(graph, "Relu", "relu", batch), WEFT_FLOAT32,
                  WT_SHAPE(-1, 3));
  weft_output w = ph("w", WEFT_FLOAT32, WT_SHAPE(3, 5));
  expect_inferred(wt_apply2(graph, "MatMul", "mm", batch, w), WEFT_FLOAT32,
                  WT_SHAPE(-1, 5));
  expect_inferred(wt_apply1(graph, "Softmax", "sm", batch), WEFT_FLOAT32,
                  WT_SHAPE(-1, 3));

  /* Unknown rank stays unknown. */
  weft_output anything = ph("anything", WEFT_FLOAT32, NULL, -1);
  weft_output neg = wt_apply1(graph, "Neg", "neg_any", anything);
  int64_t dims[4];
  int32_t rank = 0;
  WT_OK(weft_output_shape(neg, dims, 4, &rank));
  cr_expect_eq(rank, -1);
}

Test(shape_inference, matmul_transposes) {
  weft_output a = ph("a", WEFT_FLOAT32, WT_SHAPE(3, 2));
  weft_output b = ph("b", WEFT_FLOAT32, WT_SHAPE(4, 3));
  weft_op_builder* builder = weft_op_begin(graph, "MatMul", "ta_tb");
  weft_op_add_input(builder, a);
  weft_op_add_input(builder, b);
  weft_op_set_attr_bool(builder, "transpose_a", 1);
  weft_op_set_attr_bool(builder, "transpose_b", 1);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(builder, &node));
  weft_output out = {node, 0};
  expect_inferred(out, WEFT_FLOAT32, WT_SHAPE(2, 4));
}

static weft_output reduce(const char* op, const char* name, weft_output x,
                          const int64_t* axes, int32_t num_axes,
                          int keep_dims) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_add_input(b, x);
  if (axes != NULL) weft_op_set_attr_int_list(b, "axes", axes, num_axes);
  if (keep_dims) weft_op_set_attr_bool(b, "keep_dims", 1);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

Test(shape_inference, reductions) {
  weft_output x = ph("x", WEFT_FLOAT32, WT_SHAPE(2, 3, 4));
  expect_inferred(reduce("Sum", "all", x, NULL, 0, 0), WEFT_FLOAT32, NULL, 0);
  expect_inferred(reduce("Sum", "all_kept", x, NULL, 0, 1), WEFT_FLOAT32,
                  WT_SHAPE(1, 1, 1));
  expect_inferred(reduce("Mean", "mid", x, WT_DIMS(1), 1, 0), WEFT_FLOAT32,
                  WT_SHAPE(2, 4));
  expect_inferred(reduce("Mean", "last_kept", x, WT_DIMS(-1), 1, 1),
                  WEFT_FLOAT32, WT_SHAPE(2, 3, 1));
  expect_inferred(reduce("Sum", "none", x, WT_DIMS(0), 0, 0), WEFT_FLOAT32,
                  WT_SHAPE(2, 3, 4));
}

Test(shape_inference, cast_and_dtypes) {
  weft_output x = ph("x", WEFT_FLOAT32, WT_SHAPE(5));
  weft_op_builder* b = weft_op_begin(graph, "Cast", "to_int");
  weft_op_add_input(b, x);
  weft_op_set_attr_dtype(b, "DstT", WEFT_INT32);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  expect_inferred((weft_output){node, 0}, WEFT_INT32, WT_SHAPE(5));

  weft_output i = ph("i", WEFT_INT64, WT_SHAPE(2, 2));
  expect_inferred(wt_apply2(graph, "Add", "int_add", i, i), WEFT_INT64,
                  WT_SHAPE(2, 2));
  expect_inferred(wt_apply1(graph, "Identity", "id", i), WEFT_INT64,
                  WT_SHAPE(2, 2));
}

Test(shape_inference, node_introspection) {
  weft_output x = ph("x", WEFT_FLOAT32, WT_SHAPE(2));
  weft_output y = ph("y", WEFT_FLOAT32, WT_SHAPE(2));
  weft_output sum = wt_apply2(graph, "Add", "sum", x, y);
  cr_expect_str_eq(weft_node_name(sum.node), "sum");
  cr_expect_str_eq(weft_node_op_type(sum.node), "Add");
  cr_expect_str_eq(weft_node_device(sum.node), "");
  cr_expect_eq(weft_node_num_inputs(sum.node), 2);
  cr_expect_eq(weft_node_input(sum.node, 0).node, x.node);
  cr_expect_eq(weft_node_input(sum.node, 1).node, y.node);
  cr_expect_eq(weft_node_input(sum.node, 1).index, 0);
  cr_expect_eq(weft_node_num_outputs(sum.node), 1);
  cr_expect_eq(weft_node_num_control_inputs(sum.node), 0);
  cr_expect_eq(weft_graph_node_count(graph), 3);
  cr_expect_eq(weft_graph_node_at(graph, 2), sum.node);
  cr_expect_eq(weft_graph_node_by_name(graph, "x"), x.node);

  /* Unnamed nodes get fresh, distinct names. */
  weft_output n1 = wt_apply1(graph, "Neg", NULL, x);
  weft_output n2 = wt_apply1(graph, "Neg", "", x);
  cr_expect_str_neq(weft_node_name(n1.node), "");
  cr_expect_str_neq(weft_node_name(n1.node), weft_node_name(n2.node));
  cr_expect_eq(weft_graph_node_by_name(graph, weft_node_name(n2.node)),
               n2.node);
}
