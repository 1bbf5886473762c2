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

/* ---- Hostile attributes and shapes --------------------------------------
 * Values chosen to overflow int64 arithmetic or to describe tensors no
 * machine holds.  Each must be refused while the graph is built, as
 * INVALID_ARGUMENT naming the node, the op and the attribute or shape at
 * fault, never reach a kernel or wrap into a wrong shape.  These cases run
 * under ASan and UBSan in CI, which also catches an overflow that happens
 * to give a plausible answer. */

#define BIG INT64_MAX
#define P30 (INT64_C(1) << 30)

typedef struct attr_spec {
  const char* name;
  const int64_t* ints; /* an int list when count >= 0 */
  int32_t count;
  int64_t value;       /* an int when count < 0 and text is NULL */
  const char* text;    /* a string */
} attr_spec;

#define LIST(n, ...) {n, (const int64_t[]){__VA_ARGS__}, WT_RANK(__VA_ARGS__), 0, NULL}
#define INT(n, v) {n, NULL, -1, v, NULL}
#define STR(n, s) {n, NULL, -1, 0, s}

static weft_status* build(const char* op, const char* name,
                          const weft_output* in, int num_inputs,
                          const attr_spec* attrs, int num_attrs) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int i = 0; i < num_inputs; ++i) weft_op_add_input(b, in[i]);
  for (int i = 0; i < num_attrs; ++i) {
    const attr_spec* a = &attrs[i];
    if (a->text != NULL) weft_op_set_attr_string(b, a->name, a->text);
    else if (a->count >= 0)
      weft_op_set_attr_int_list(b, a->name, a->ints, a->count);
    else weft_op_set_attr_int(b, a->name, a->value);
  }
  return weft_op_finish(b, NULL);
}

/* Refused when built, naming node, op and `what`; the graph is unchanged. */
#define EXPECT_REFUSED(op, name, in, n, attrs, what)                      \
  do {                                                                    \
    int32_t before_ = weft_graph_node_count(graph);                       \
    WT_EXPECT_ERROR(build(op, name, in, n, attrs,                         \
                          (int)(sizeof attrs / sizeof attrs[0])),         \
                    WEFT_INVALID_ARGUMENT, "'" name "'", op, what);       \
    cr_expect_eq(weft_graph_node_count(graph), before_);                  \
  } while (0)

static weft_status* placeholder(const char* name, const int64_t* dims,
                                int32_t rank) {
  weft_op_builder* b = weft_op_begin(graph, "Placeholder", name);
  weft_op_set_attr_dtype(b, "dtype", WEFT_FLOAT32);
  weft_op_set_attr_shape(b, "shape", dims, rank);
  return weft_op_finish(b, NULL);
}

Test(shape_inference, hostile_static_shapes_are_refused) {
  WT_EXPECT_ERROR(placeholder("ph_huge", WT_SHAPE(BIG, BIG)),
                  WEFT_INVALID_ARGUMENT, "'ph_huge'", "Placeholder",
                  "elements");
  WT_EXPECT_ERROR(placeholder("ph_wide", WT_SHAPE(-1, P30, P30, P30)),
                  WEFT_INVALID_ARGUMENT, "'ph_wide'", "elements");
  /* An empty shape holds nothing, but the product of its other dims must
   * still fit in int64: kernels and shape functions take partial products
   * (the fuzzer found ReshapeLike overflowing on [2^63 - 1, 3, 0]). */
  WT_OK(placeholder("ph_empty", WT_SHAPE(0, BIG)));
  WT_EXPECT_ERROR(placeholder("ph_empty_wide", WT_SHAPE(BIG, 3, 0)),
                  WEFT_INVALID_ARGUMENT, "'ph_empty_wide'", "overflows");

  weft_output x = ph("x23", WEFT_FLOAT32, WT_SHAPE(2, 3));
  weft_output col = ph("col", WEFT_FLOAT32, WT_SHAPE(P30, 1));
  weft_output row = ph("row", WEFT_FLOAT32, WT_SHAPE(1, P30));
  weft_output both[2] = {col, row};
  const attr_spec none[1] = {INT("unused_attr_never_read", 0)};
  WT_EXPECT_ERROR(build("Add", "outer_sum", both, 2, none, 0),
                  WEFT_INVALID_ARGUMENT, "'outer_sum'", "Add", "elements");
  WT_EXPECT_ERROR(build("MatMul", "outer_product", both, 2, none, 0),
                  WEFT_INVALID_ARGUMENT, "'outer_product'", "MatMul",
                  "elements");

  const attr_spec reshape[] = {LIST("shape", BIG, BIG)};
  EXPECT_REFUSED("Reshape", "reshape_big", &x, 1, reshape, "shape");
  const attr_spec reshape_infer[] = {LIST("shape", -1, BIG)};
  EXPECT_REFUSED("Reshape", "reshape_infer", &x, 1, reshape_infer, "shape");
  const attr_spec tile[] = {LIST("multiples", BIG, 2)};
  EXPECT_REFUSED("Tile", "tile_big", &x, 1, tile, "multiples");
  const attr_spec tile_count[] = {LIST("multiples", P30, P30)};
  EXPECT_REFUSED("Tile", "tile_count", &x, 1, tile_count, "elements");
  const attr_spec pad[] = {LIST("paddings", BIG, BIG, 0, 0)};
  EXPECT_REFUSED("Pad", "pad_big", &x, 1, pad, "padding");
  const attr_spec pad_negative[] = {LIST("paddings", -BIG, 0, 0, 0)};
  EXPECT_REFUSED("Pad", "pad_negative", &x, 1, pad_negative, "paddings");
  const attr_spec fill[] = {LIST("shape", BIG, 2)};
  weft_output scalar = ph("scalar", WEFT_FLOAT32, NULL, 0);
  EXPECT_REFUSED("Fill", "fill_big", &scalar, 1, fill, "shape");
  const attr_spec random[] = {LIST("shape", P30, P30, P30)};
  EXPECT_REFUSED("RandomUniform", "random_big", NULL, 0, random, "shape");

  weft_output idx = ph("idx", WEFT_INT32, WT_SHAPE(P30));
  const attr_spec one_hot[] = {INT("depth", P30 * P30)};
  EXPECT_REFUSED("OneHot", "one_hot_big", &idx, 1, one_hot, "elements");

  weft_output slab = ph("slab", WEFT_FLOAT32, WT_SHAPE(INT64_C(1) << 47));
  weft_output three[3] = {slab, slab, slab};
  const attr_spec concat[] = {INT("axis", 0)};
  EXPECT_REFUSED("Concat", "concat_big", three, 3, concat, "elements");

  const attr_spec slice[] = {LIST("begin", BIG, 0), LIST("size", 1, 3)};
  EXPECT_REFUSED("Slice", "slice_far", &x, 1, slice, "begin");
  const attr_spec split[] = {INT("axis", 0), INT("num_split", BIG)};
  EXPECT_REFUSED("Split", "split_many", &x, 1, split, "num_split");
  const attr_spec unpack[] = {INT("num", BIG)};
  EXPECT_REFUSED("Unpack", "unpack_many", &x, 1, unpack, "num");
  const attr_spec expand[] = {INT("axis", BIG)};
  EXPECT_REFUSED("ExpandDims", "expand_far", &x, 1, expand, "axis");
  const attr_spec transpose[] = {LIST("perm", BIG, 0)};
  EXPECT_REFUSED("Transpose", "transpose_far", &x, 1, transpose, "perm");
  /* begin + the box's size overflowed before it was compared. */
  weft_output box[2] = {x, ph("like45", WEFT_FLOAT32, WT_SHAPE(4, 5))};
  const attr_spec slice_grad[] = {LIST("begin", BIG, 0)};
  EXPECT_REFUSED("SliceGrad", "slice_grad_far", box, 2, slice_grad, "begin");
}

Test(shape_inference, hostile_windows_are_refused) {
  weft_output image = ph("image", WEFT_FLOAT32, WT_SHAPE(1, 5, 5, 2));
  weft_output filter = ph("filter", WEFT_FLOAT32, WT_SHAPE(3, 3, 2, 4));
  weft_output conv_in[2] = {image, filter};
  const attr_spec zero_stride[] = {LIST("ksize", 1, 2, 2, 1),
                                   LIST("strides", 1, 0, 1, 1),
                                   STR("padding", "SAME")};
  EXPECT_REFUSED("MaxPool", "pool_zero_stride", &image, 1, zero_stride,
                 "strides");
  const attr_spec negative_window[] = {LIST("ksize", 1, -2, 2, 1),
                                       LIST("strides", 1, 1, 1, 1),
                                       STR("padding", "VALID")};
  EXPECT_REFUSED("AvgPool", "pool_negative", &image, 1, negative_window,
                 "ksize");
  /* SAME's ceil(5 / stride) overflowed into an empty output. */
  const attr_spec huge_stride[] = {LIST("ksize", 1, 3, 3, 1),
                                   LIST("strides", 1, BIG, BIG, 1),
                                   STR("padding", "SAME")};
  EXPECT_REFUSED("MaxPool", "pool_huge_stride", &image, 1, huge_stride,
                 "strides");
  const attr_spec huge_window[] = {LIST("ksize", 1, BIG, 3, 1),
                                   LIST("strides", 1, 1, 1, 1),
                                   STR("padding", "SAME")};
  EXPECT_REFUSED("MaxPool", "pool_huge_window", &image, 1, huge_window,
                 "ksize");
  const attr_spec big_stride[] = {LIST("ksize", 1, 3, 3, 1),
                                  LIST("strides", 1, INT64_C(1) << 40, 3, 1),
                                  STR("padding", "SAME")};
  EXPECT_REFUSED("AvgPool", "pool_big_stride", &image, 1, big_stride,
                 "strides");
  const attr_spec huge_dilation[] = {LIST("strides", 1, 1, 1, 1),
                                     LIST("dilations", 1, BIG, 1, 1),
                                     STR("padding", "SAME")};
  EXPECT_REFUSED("Conv2D", "conv_huge_dilation", conv_in, 2, huge_dilation,
                 "dilations");
  /* Each value fits, but the dilated 3-tap window spans 2^31 + 1. */
  const attr_spec wide_dilation[] = {LIST("strides", 1, 1, 1, 1),
                                     LIST("dilations", 1, P30, 1, 1),
                                     STR("padding", "VALID")};
  EXPECT_REFUSED("Conv2D", "conv_wide_dilation", conv_in, 2, wide_dilation,
                 "dilations");
  const attr_spec conv_stride[] = {LIST("strides", 1, BIG, 1, 1),
                                   STR("padding", "SAME")};
  EXPECT_REFUSED("Conv2D", "conv_huge_stride", conv_in, 2, conv_stride,
                 "strides");

  /* Gradients take their output sizes as attributes. */
  weft_output grad = ph("pool_grad_in", WEFT_FLOAT32, WT_SHAPE(1, 3, 3, 2));
  const attr_spec avg_grad[] = {LIST("input_sizes", BIG, BIG, BIG, 2),
                                LIST("ksize", 1, 2, 2, 1),
                                LIST("strides", 1, 2, 2, 1),
                                STR("padding", "SAME")};
  EXPECT_REFUSED("AvgPoolGrad", "avg_grad_big", &grad, 1, avg_grad,
                 "input_sizes");
  weft_output backprop_in[2] = {filter, grad};
  const attr_spec conv_grad[] = {LIST("input_sizes", 1, BIG, BIG, 2),
                                 LIST("strides", 1, 2, 2, 1),
                                 STR("padding", "SAME")};
  EXPECT_REFUSED("Conv2DBackpropInput", "conv_grad_big", backprop_in, 2,
                 conv_grad, "input_sizes");
}

/* Limits are not refusals of ordinary graphs: a stride or window at the
 * documented largest extent (2^31 - 1) still gives TensorFlow's sizes. */
Test(shape_inference, largest_windows_still_infer) {
  weft_output image = ph("image", WEFT_FLOAT32, WT_SHAPE(1, 5, 5, 2));
  const attr_spec wide[] = {LIST("ksize", 1, INT32_MAX, 1, 1),
                            LIST("strides", 1, INT32_MAX, 1, 1),
                            STR("padding", "SAME")};
  WT_OK(build("MaxPool", "pool_widest", &image, 1, wide, 3));
  weft_node* node = weft_graph_node_by_name(graph, "pool_widest");
  cr_assert_not_null(node);
  expect_inferred((weft_output){node, 0}, WEFT_FLOAT32,
                  WT_SHAPE(1, 1, 5, 2));
}
