/* The array ops of runtime/ops/CONVENTIONS.md on the CPU plugin.
 *
 * Data movement ops only move bytes, so each case is checked the same way
 * for every dtype: the test gives every input element a distinct value and
 * works out, with its own index arithmetic, which input element (or which
 * constant) each output element must be.  float16 runs through Cast nodes
 * (float32 in, float32 out) with values float16 holds exactly.  Inputs are
 * fed through placeholders so no constant folding hides the kernel. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_ops_array_support.h"
#include "test_support.h"

/* ---- Rank, Shape, Size --------------------------------------------------- */

Test(ops_array, rank_shape_size) {
  const weft_dtype types[] = {WEFT_FLOAT32, WEFT_BOOL, WEFT_INT64};
  for (int t = 0; t < 3; ++t) {
    weft_tensor* out[1];
    spec_t rank = {.op = "Rank", .num_inputs = 1, .shape = {SHAPE(2, 0, 5)}};
    WT_OK(try_run(&rank, types[t], out));
    wt_expect_shape(out[0], WEFT_INT32, NULL, 0);
    cr_expect_eq(*(const int32_t*)weft_tensor_data(out[0]), 3);
    weft_tensor_destroy(out[0]);

    spec_t shape = {.op = "Shape", .num_inputs = 1, .shape = {SHAPE(2, 0, 5)}};
    WT_OK(try_run(&shape, types[t], out));
    wt_expect_shape(out[0], WEFT_INT32, WT_SHAPE(3));
    const int32_t* dims = weft_tensor_data(out[0]);
    cr_expect(dims[0] == 2 && dims[1] == 0 && dims[2] == 5);
    weft_tensor_destroy(out[0]);

    spec_t shape64 = {.op = "Shape", .num_inputs = 1, .shape = {SHAPE(7, 3)},
                      .attrs = {DTYPE("out_type", WEFT_INT64)}};
    WT_OK(try_run(&shape64, types[t], out));
    wt_expect_shape(out[0], WEFT_INT64, WT_SHAPE(2));
    const int64_t* dims64 = weft_tensor_data(out[0]);
    cr_expect(dims64[0] == 7 && dims64[1] == 3);
    weft_tensor_destroy(out[0]);

    spec_t size = {.op = "Size", .num_inputs = 1, .shape = {SHAPE(4, 6)},
                   .attrs = {DTYPE("out_type", WEFT_INT64)}};
    WT_OK(try_run(&size, types[t], out));
    wt_expect_shape(out[0], WEFT_INT64, NULL, 0);
    cr_expect_eq(*(const int64_t*)weft_tensor_data(out[0]), 24);
    weft_tensor_destroy(out[0]);
  }
  /* A scalar: rank 0, an empty shape, one element. */
  weft_tensor* out[1];
  spec_t shape = {.op = "Shape", .num_inputs = 1, .shape = {SCALAR}};
  WT_OK(try_run(&shape, WEFT_FLOAT64, out));
  wt_expect_shape(out[0], WEFT_INT32, WT_SHAPE(0));
  weft_tensor_destroy(out[0]);
  spec_t size = {.op = "Size", .num_inputs = 1, .shape = {SCALAR},
                 .placeholders = RANK_UNKNOWN};
  WT_OK(try_run(&size, WEFT_UINT8, out));
  cr_expect_eq(*(const int32_t*)weft_tensor_data(out[0]), 1);
  weft_tensor_destroy(out[0]);
  spec_t bad = {.op = "Shape", .name = "shape_bad_type", .num_inputs = 1,
                .shape = {SHAPE(2)}, .attrs = {DTYPE("out_type", WEFT_UINT8)}};
  EXPECT_REFUSED(bad, "out_type");
  expect_inferred(&(spec_t){.op = "Shape", .num_inputs = 1,
                            .shape = {SHAPE(2)}, .placeholders = RANK_UNKNOWN},
                  0, WT_SHAPE(-1));
}

/* ---- views: Reshape, ExpandDims, Squeeze --------------------------------- */

Test(ops_array, reshape_expand_squeeze_every_dtype) {
  spec_t reshape = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(2, 3, 4)},
                    .attrs = {LIST("shape", 4, -1, 3)}};
  check_op(&reshape, &SHAPE(4, 2, 3), same_index, 0);
  spec_t flat = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(2, 3)},
                 .placeholders = RANK_UNKNOWN, .attrs = {LIST("shape", -1)}};
  check_op(&flat, &SHAPE(6), same_index, 0);
  spec_t scalar = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(1, 1)},
                   .attrs = {EMPTY_LIST("shape")}};
  check_op(&scalar, &SCALAR, same_index, 0);
  spec_t empty = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(3, 0)},
                  .attrs = {LIST("shape", 0, 5)}};
  check_op(&empty, &SHAPE(0, 5), same_index, 0);

  spec_t expand = {.op = "ExpandDims", .num_inputs = 1, .shape = {SHAPE(2, 3)},
                   .attrs = {INT("axis", -1)}};
  check_op(&expand, &SHAPE(2, 3, 1), same_index, 0);
  expand.attrs[0].i = 0;
  check_op(&expand, &SHAPE(1, 2, 3), same_index, 0);
  expand.attrs[0].i = -3;
  check_op(&expand, &SHAPE(1, 2, 3), same_index, 0);

  spec_t squeeze = {.op = "Squeeze", .num_inputs = 1,
                    .shape = {SHAPE(1, 2, 1, 3, 1)}};
  check_op(&squeeze, &SHAPE(2, 3), same_index, 0);
  squeeze.attrs[0] = (attr_t)LIST("squeeze_dims", 0, -1);
  check_op(&squeeze, &SHAPE(2, 1, 3), same_index, 0);
  squeeze.attrs[0] = (attr_t)EMPTY_LIST("squeeze_dims");
  check_op(&squeeze, &SHAPE(1, 2, 1, 3, 1), same_index, 0);
}

Test(ops_array, views_infer_partly_known_shapes) {
  spec_t reshape = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(2, 6)},
                    .placeholders = DIMS_UNKNOWN,
                    .attrs = {LIST("shape", 3, -1)}};
  expect_inferred(&reshape, 0, WT_SHAPE(3, -1));
  reshape.placeholders = EXACT;
  expect_inferred(&reshape, 0, WT_SHAPE(3, 4));
  spec_t expand = {.op = "ExpandDims", .num_inputs = 1, .shape = {SHAPE(2, 6)},
                   .placeholders = DIMS_UNKNOWN, .attrs = {INT("axis", 1)}};
  expect_inferred(&expand, 0, WT_SHAPE(-1, 1, -1));
  spec_t squeeze = {.op = "Squeeze", .num_inputs = 1, .shape = {SHAPE(1, 6)},
                    .placeholders = DIMS_UNKNOWN,
                    .attrs = {LIST("squeeze_dims", 0)}};
  expect_inferred(&squeeze, 0, WT_SHAPE(-1));
  squeeze.attrs[0].name = NULL; /* every 1: unknown dims might be 1 */
  expect_inferred(&squeeze, 0, NULL, -1);
}

Test(ops_array, views_do_not_copy) {
  weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 6), NULL);
  weft_tensor* out = NULL;
  if (fetched_data("Identity", NULL, fed, &out) != weft_tensor_data(fed)) {
    weft_tensor_destroy(out);
    weft_tensor_destroy(fed);
    WT_SKIP("fetches are copies here, so sharing cannot be observed");
  }
  weft_tensor_destroy(out);
  const attr_t reshape = LIST("shape", 3, 2), expand = INT("axis", 0),
               squeeze = LIST("squeeze_dims", 0);
  const char* ops[] = {"Reshape", "ExpandDims", "Squeeze", "Transpose"};
  const attr_t perm = LIST("perm", 1, 0); /* moves only a size-1 axis */
  const attr_t* attrs[] = {&reshape, &expand, &squeeze, &perm};
  for (int i = 0; i < 4; ++i) {
    cr_expect_eq(fetched_data(ops[i], attrs[i], fed, &out),
                 weft_tensor_data(fed), "%s copied its input", ops[i]);
    weft_tensor_destroy(out);
  }
  weft_tensor_destroy(fed);
}

Test(ops_array, view_refusals) {
  spec_t s = {.op = "Reshape", .name = "reshape_mismatch", .num_inputs = 1,
              .shape = {SHAPE(2, 3)}, .attrs = {LIST("shape", 4, 2)}};
  EXPECT_REFUSED(s, "[2,3]", "[4,2]");
  s.name = "reshape_two_unknown";
  s.attrs[0] = (attr_t)LIST("shape", -1, -1);
  EXPECT_REFUSED(s, "more than one -1");
  s.name = "reshape_not_divisible";
  s.attrs[0] = (attr_t)LIST("shape", 4, -1);
  EXPECT_REFUSED(s, "[4,?]");
  s.name = "reshape_negative";
  s.attrs[0] = (attr_t)LIST("shape", 3, -2);
  EXPECT_REFUSED(s, "negative");
  s.name = "reshape_zero_and_unknown";
  s.attrs[0] = (attr_t)LIST("shape", 0, -1);
  EXPECT_REFUSED(s, "-1");
  s.name = "reshape_no_shape";
  s.attrs[0].name = NULL;
  EXPECT_REFUSED(s, "shape");

  spec_t e = {.op = "ExpandDims", .name = "expand_far", .num_inputs = 1,
              .shape = {SHAPE(2, 3)}, .attrs = {INT("axis", 3)}};
  EXPECT_REFUSED(e, "axis", "[2,3]");
  e.attrs[0].i = -4;
  EXPECT_REFUSED(e, "axis");

  spec_t q = {.op = "Squeeze", .name = "squeeze_not_one", .num_inputs = 1,
              .shape = {SHAPE(1, 2)}, .attrs = {LIST("squeeze_dims", 1)}};
  EXPECT_REFUSED(q, "[1,2]", "not 1");
  q.name = "squeeze_twice";
  q.attrs[0] = (attr_t)LIST("squeeze_dims", 0, -2);
  EXPECT_REFUSED(q, "twice");
  q.name = "squeeze_out_of_range";
  q.attrs[0] = (attr_t)LIST("squeeze_dims", 2);
  EXPECT_REFUSED(q, "squeeze_dims");

  /* What the graph could not know, the kernel refuses at run time. */
  weft_tensor* out[1];
  s = (spec_t){.op = "Reshape", .name = "reshape_late", .num_inputs = 1,
               .shape = {SHAPE(2, 3)}, .placeholders = DIMS_UNKNOWN,
               .attrs = {LIST("shape", 4, -1)}};
  WT_EXPECT_ERROR(try_run(&s, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "reshape_late", "[2,3]");
  q.name = "squeeze_late";
  q.placeholders = DIMS_UNKNOWN;
  q.attrs[0] = (attr_t)LIST("squeeze_dims", 1);
  WT_EXPECT_ERROR(try_run(&q, WEFT_INT32, out), WEFT_INVALID_ARGUMENT,
                  "squeeze_late", "not 1");
}

/* ---- Transpose, Slice, Tile, Pad ----------------------------------------- */

Test(ops_array, transpose_hand_worked) {
  const float x[6] = {1, 2, 3, 4, 5, 6};
  weft_graph* g = wt_graph_new();
  weft_output in = wt_const_f32(g, "x", WT_SHAPE(2, 3), x);
  weft_op_builder* b = weft_op_begin(g, "Transpose", NULL);
  weft_op_add_input(b, in);
  weft_op_set_attr_int_list(b, "perm", WT_DIMS(1, 0), 2);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  weft_session* session = wt_session_new(g, CPU);
  weft_tensor* out = wt_run1(session, NULL, NULL, 0, (weft_output){node, 0});
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(3, 2));
  const double want[6] = {1, 4, 2, 5, 3, 6};
  wt_expect_f32(out, want, 6, 0, 0);
  weft_tensor_destroy(out);
  weft_session_destroy(session);
  weft_graph_destroy(g);
}

Test(ops_array, transpose_every_dtype) {
  spec_t s = {.op = "Transpose", .num_inputs = 1, .shape = {SHAPE(2, 3, 4)},
              .attrs = {LIST("perm", 2, 0, 1)}};
  check_op(&s, &SHAPE(4, 2, 3), transpose_ref, 0);
  s.attrs[0] = (attr_t)LIST("perm", -1, 1, 0);
  check_op(&s, &SHAPE(4, 3, 2), transpose_ref, 0);
  s = (spec_t){.op = "Transpose", .num_inputs = 1, .shape = {SHAPE(3, 1, 0)},
               .attrs = {LIST("perm", 2, 0, 1)}};
  check_op(&s, &SHAPE(0, 3, 1), transpose_ref, 0);
  s = (spec_t){.op = "Transpose", .num_inputs = 1, .shape = {SCALAR},
               .attrs = {EMPTY_LIST("perm")}};
  check_op(&s, &SCALAR, transpose_ref, 0);
  /* Past the parallel threshold, with tiled planes and odd edges. */
  s = (spec_t){.op = "Transpose", .num_inputs = 1, .shape = {SHAPE(3, 97, 130)},
               .attrs = {LIST("perm", 0, 2, 1)}, .threads = 2};
  check_op(&s, &SHAPE(3, 130, 97), transpose_ref, 0);
  s.attrs[0] = (attr_t)LIST("perm", 2, 1, 0);
  check_op_dtype(&s, WEFT_INT64, &SHAPE(130, 97, 3), transpose_ref, 0);
}

Test(ops_array, slice_every_dtype) {
  spec_t s = {.op = "Slice", .num_inputs = 1, .shape = {SHAPE(3, 4, 5)},
              .attrs = {LIST("begin", 1, 0, 2), LIST("size", 2, -1, 2)}};
  check_op(&s, &SHAPE(2, 4, 2), slice_ref, 0);
  s.attrs[0] = (attr_t)LIST("begin", 0, 4, 5);
  s.attrs[1] = (attr_t)LIST("size", 3, 0, -1);
  check_op(&s, &SHAPE(3, 0, 0), slice_ref, 0);
  s.attrs[0] = (attr_t)LIST("begin", 0, 0, 0);
  s.attrs[1] = (attr_t)LIST("size", -1, -1, -1);
  check_op(&s, &SHAPE(3, 4, 5), slice_ref, 0);
  s = (spec_t){.op = "Slice", .num_inputs = 1, .shape = {SHAPE(300, 260)},
               .attrs = {LIST("begin", 7, 3), LIST("size", 290, 250)},
               .threads = 2};
  check_op_dtype(&s, WEFT_INT32, &SHAPE(290, 250), slice_ref, 0);
  s.placeholders = DIMS_UNKNOWN;
  expect_inferred(&s, 0, WT_SHAPE(290, 250));
  s.attrs[1] = (attr_t)LIST("size", -1, 2);
  expect_inferred(&s, 0, WT_SHAPE(-1, 2));
}

Test(ops_array, tile_every_dtype) {
  spec_t s = {.op = "Tile", .num_inputs = 1, .shape = {SHAPE(2, 3)},
              .attrs = {LIST("multiples", 3, 2)}};
  check_op(&s, &SHAPE(6, 6), tile_ref, 0);
  s.attrs[0] = (attr_t)LIST("multiples", 1, 0);
  check_op(&s, &SHAPE(2, 0), tile_ref, 0);
  s = (spec_t){.op = "Tile", .num_inputs = 1, .shape = {SHAPE(2, 1, 3)},
               .attrs = {LIST("multiples", 2, 4, 1)}};
  check_op(&s, &SHAPE(4, 4, 3), tile_ref, 0);
  s = (spec_t){.op = "Tile", .num_inputs = 1, .shape = {SHAPE(5, 7)},
               .attrs = {LIST("multiples", 90, 60)}, .threads = 2};
  check_op_dtype(&s, WEFT_FLOAT64, &SHAPE(450, 420), tile_ref, 0);
  s.placeholders = DIMS_UNKNOWN;
  s.attrs[0] = (attr_t)LIST("multiples", 2, 0);
  expect_inferred(&s, 0, WT_SHAPE(-1, 0));
}

Test(ops_array, pad_every_dtype) {
  spec_t s = {.op = "Pad", .num_inputs = 1, .shape = {SHAPE(2, 3)},
              .attrs = {LIST("paddings", 1, 0, 2, 1)}};
  check_op(&s, &SHAPE(3, 6), pad_ref, 0);
  s.attrs[1] = (attr_t)FLOAT("constant_value", 1);
  check_op(&s, &SHAPE(3, 6), pad_ref, 1);
  s = (spec_t){.op = "Pad", .num_inputs = 1, .shape = {SHAPE(0, 2)},
               .attrs = {LIST("paddings", 1, 1, 0, 0),
                         FLOAT("constant_value", 1)}};
  check_op(&s, &SHAPE(2, 2), pad_ref, 1);
  s = (spec_t){.op = "Pad", .num_inputs = 1, .shape = {SHAPE(180, 190)},
               .attrs = {LIST("paddings", 3, 4, 0, 9),
                         FLOAT("constant_value", -2.5)}, .threads = 2};
  check_op_dtype(&s, WEFT_FLOAT32, &SHAPE(187, 199), pad_ref, -2.5);
}

Test(ops_array, layout_refusals) {
  spec_t t = {.op = "Transpose", .name = "bad_perm", .num_inputs = 1,
              .shape = {SHAPE(2, 3, 4)}, .attrs = {LIST("perm", 0, 0, 1)}};
  EXPECT_REFUSED(t, "perm", "[0,0,1]");
  t.attrs[0] = (attr_t)LIST("perm", 1, 0);
  EXPECT_REFUSED(t, "perm", "[2,3,4]");
  t.attrs[0] = (attr_t)LIST("perm", 0, 1, 3);
  EXPECT_REFUSED(t, "permutation");

  spec_t s = {.op = "Slice", .name = "slice_oob", .num_inputs = 1,
              .shape = {SHAPE(3, 4)},
              .attrs = {LIST("begin", 1, 2), LIST("size", 2, 3)}};
  EXPECT_REFUSED(s, "[3,4]", "out of bounds");
  s.attrs[0] = (attr_t)LIST("begin", -1, 0);
  s.attrs[1] = (attr_t)LIST("size", 1, 1);
  EXPECT_REFUSED(s, "out of bounds");
  s.attrs[0] = (attr_t)LIST("begin", 4, 0);
  s.attrs[1] = (attr_t)LIST("size", -1, 1);
  EXPECT_REFUSED(s, "out of bounds");
  s.attrs[0] = (attr_t)LIST("begin", 0);
  EXPECT_REFUSED(s, "begin");
  /* Run time: the bounds were unknown when the graph was built. */
  weft_tensor* out[1];
  s.attrs[0] = (attr_t)LIST("begin", 1, 2);
  s.attrs[1] = (attr_t)LIST("size", 2, 3);
  s.placeholders = DIMS_UNKNOWN;
  WT_EXPECT_ERROR(try_run(&s, WEFT_BOOL, out), WEFT_INVALID_ARGUMENT,
                  "slice_oob", "out of bounds");

  spec_t m = {.op = "Tile", .name = "tile_bad", .num_inputs = 1,
              .shape = {SHAPE(3, 4)}, .attrs = {LIST("multiples", 2)}};
  EXPECT_REFUSED(m, "multiples");
  m.attrs[0] = (attr_t)LIST("multiples", 2, -1);
  EXPECT_REFUSED(m, "negative");

  spec_t p = {.op = "Pad", .name = "pad_bad", .num_inputs = 1,
              .shape = {SHAPE(3, 4)}, .attrs = {LIST("paddings", 1, 1, 1)}};
  EXPECT_REFUSED(p, "paddings", "[3,4]");
  p.attrs[0] = (attr_t)LIST("paddings", 1, 1, -1, 0);
  EXPECT_REFUSED(p, "negative");
  p.attrs[0] = (attr_t)LIST("paddings", 1, 1, 1, 0);
  p.attrs[1] = (attr_t)FLOAT("constant_value", 0.5);
  WT_EXPECT_ERROR(try_build(&p, WEFT_INT32), WEFT_INVALID_ARGUMENT, "pad_bad",
                  "constant_value", "int32");
}

/* ---- Concat, Split, Pack, Unpack ----------------------------------------- */

Test(ops_array, concat_every_dtype) {
  spec_t s = {.op = "Concat", .num_inputs = 3,
              .shape = {SHAPE(2, 3), SHAPE(2, 1), SHAPE(2, 0)},
              .attrs = {INT("axis", -1)}};
  check_op(&s, &SHAPE(2, 4), concat_ref, 0);
  s = (spec_t){.op = "Concat", .num_inputs = 2,
               .shape = {SHAPE(1, 2, 2), SHAPE(3, 2, 2)},
               .attrs = {INT("axis", 0)}};
  check_op(&s, &SHAPE(4, 2, 2), concat_ref, 0);
  s = (spec_t){.op = "Concat", .num_inputs = 1, .shape = {SHAPE(3)},
               .attrs = {INT("axis", 0)}};
  check_op(&s, &SHAPE(3), concat_ref, 0);
  s = (spec_t){.op = "Concat", .num_inputs = 2,
               .shape = {SHAPE(400, 50), SHAPE(400, 70)},
               .attrs = {INT("axis", 1)}, .threads = 2};
  check_op_dtype(&s, WEFT_INT64, &SHAPE(400, 120), concat_ref, 0);
  s.placeholders = DIMS_UNKNOWN;
  expect_inferred(&s, 0, WT_SHAPE(-1, -1));
}

Test(ops_array, split_and_unpack_every_dtype) {
  spec_t s = {.op = "Split", .num_inputs = 1, .shape = {SHAPE(2, 6)},
              .attrs = {INT("axis", -1), INT("num_split", 3)},
              .num_outputs = 3};
  shape_t pieces[3] = {SHAPE(2, 2), SHAPE(2, 2), SHAPE(2, 2)};
  check_op(&s, pieces, split_ref, 0);
  s.attrs[0].i = 0;
  s.attrs[1].i = 2;
  s.num_outputs = 2;
  pieces[0] = pieces[1] = SHAPE(1, 6);
  check_op(&s, pieces, split_ref, 0);
  s = (spec_t){.op = "Split", .num_inputs = 1, .shape = {SHAPE(0, 4)},
               .attrs = {INT("axis", 1), INT("num_split", 2)},
               .num_outputs = 2};
  pieces[0] = pieces[1] = SHAPE(0, 2);
  check_op(&s, pieces, split_ref, 0);

  spec_t u = {.op = "Unpack", .num_inputs = 1, .shape = {SHAPE(2, 3, 2)},
              .attrs = {INT("axis", 1)}, .num_outputs = 3};
  pieces[0] = pieces[1] = pieces[2] = SHAPE(2, 2);
  check_op(&u, pieces, unpack_ref, 0);
  u.attrs[0].i = -1;
  u.attrs[1] = (attr_t)INT("num", 2);
  u.num_outputs = 2;
  pieces[0] = pieces[1] = SHAPE(2, 3);
  check_op(&u, pieces, unpack_ref, 0);
  u = (spec_t){.op = "Unpack", .num_inputs = 1, .shape = {SHAPE(2, 0)},
               .num_outputs = 2};
  pieces[0] = pieces[1] = SHAPE(0);
  check_op(&u, pieces, unpack_ref, 0);
  /* An empty axis unpacks into no outputs at all; the node still runs. */
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_INT32, WT_SHAPE(0, 3));
  weft_node* node = NULL;
  WT_OK(weft_graph_apply(g, "Unpack", NULL, &x, 1, NULL));
  node = weft_graph_node_at(g, 1);
  cr_expect_eq(weft_node_num_outputs(node), 0);
  weft_session* session = wt_session_new(g, CPU);
  weft_tensor* v = wt_tensor(WEFT_INT32, WT_SHAPE(0, 3), NULL);
  WT_OK(weft_session_run(session, &x, &v, 1, NULL, 0, &node, 1, NULL));
  weft_tensor_destroy(v);
  weft_session_destroy(session);
  weft_graph_destroy(g);
}

Test(ops_array, pack_every_dtype) {
  spec_t s = {.op = "Pack", .num_inputs = 3,
              .shape = {SHAPE(2, 3), SHAPE(2, 3), SHAPE(2, 3)}};
  check_op(&s, &SHAPE(3, 2, 3), pack_ref, 0);
  s.attrs[0] = (attr_t)INT("axis", 1);
  check_op(&s, &SHAPE(2, 3, 3), pack_ref, 0);
  s.attrs[0] = (attr_t)INT("axis", -1);
  check_op(&s, &SHAPE(2, 3, 3), pack_ref, 0);
  s = (spec_t){.op = "Pack", .num_inputs = 2, .shape = {SCALAR, SCALAR}};
  check_op(&s, &SHAPE(2), pack_ref, 0);
  s = (spec_t){.op = "Pack", .num_inputs = 2, .shape = {SHAPE(0), SHAPE(0)},
               .attrs = {INT("axis", 1)}};
  check_op(&s, &SHAPE(0, 2), pack_ref, 0);
}

Test(ops_array, join_refusals) {
  spec_t c = {.op = "Concat", .name = "concat_ranks", .num_inputs = 2,
              .shape = {SHAPE(2, 3), SHAPE(2, 3, 1)},
              .attrs = {INT("axis", 0)}};
  EXPECT_REFUSED(c, "[2,3]", "[2,3,1]");
  c.name = "concat_dims";
  c.shape[1] = SHAPE(3, 4);
  EXPECT_REFUSED(c, "[2,3]", "[3,4]");
  c.name = "concat_axis";
  c.shape[1] = SHAPE(2, 3);
  c.attrs[0].i = 2;
  EXPECT_REFUSED(c, "axis");
  c.name = "concat_scalars";
  c.shape[0] = c.shape[1] = SCALAR;
  c.attrs[0].i = 0;
  EXPECT_REFUSED(c, "scalar");
  c.name = "concat_no_axis";
  c.shape[0] = c.shape[1] = SHAPE(2);
  c.attrs[0].name = NULL;
  EXPECT_REFUSED(c, "axis");
  /* Mixed dtypes: a Cast stands between the placeholders. */
  weft_graph* g = wt_graph_new();
  weft_output in[2] = {wt_placeholder(g, "a", WEFT_FLOAT32, WT_SHAPE(2)),
                       wt_placeholder(g, "b", WEFT_INT32, WT_SHAPE(2))};
  weft_op_builder* b = weft_op_begin(g, "Concat", "concat_dtypes");
  weft_op_add_input_list(b, in, 2);
  weft_op_set_attr_int(b, "axis", 0);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
                  "concat_dtypes", "Concat", "int32", "float32");
  weft_graph_destroy(g);
  /* Run time: dims unknown to the graph disagree. */
  weft_tensor* out[2];
  c = (spec_t){.op = "Concat", .name = "concat_late", .num_inputs = 2,
               .shape = {SHAPE(2, 3), SHAPE(3, 3)},
               .placeholders = DIMS_UNKNOWN, .attrs = {INT("axis", 1)}};
  WT_EXPECT_ERROR(try_run(&c, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "concat_late", "[3,3]");

  spec_t s = {.op = "Split", .name = "split_uneven", .num_inputs = 1,
              .shape = {SHAPE(2, 5)},
              .attrs = {INT("axis", 1), INT("num_split", 2)}};
  EXPECT_REFUSED(s, "num_split", "[2,5]");
  s.attrs[1].i = 0;
  EXPECT_REFUSED(s, "num_split");
  s.placeholders = RANK_UNKNOWN;
  s.attrs[1].i = 2;
  s.num_outputs = 2;
  WT_EXPECT_ERROR(try_run(&s, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "split_uneven", "[2,5]");

  spec_t p = {.op = "Pack", .name = "pack_shapes", .num_inputs = 2,
              .shape = {SHAPE(2, 3), SHAPE(3, 2)}};
  EXPECT_REFUSED(p, "[2,3]", "[3,2]");
  p.shape[1] = SHAPE(2, 3);
  p.attrs[0] = (attr_t)INT("axis", 3);
  EXPECT_REFUSED(p, "axis");

  spec_t u = {.op = "Unpack", .name = "unpack_num", .num_inputs = 1,
              .shape = {SHAPE(2, 3)}, .attrs = {INT("num", 3)}};
  EXPECT_REFUSED(u, "num", "[2,3]");
  u.shape[0] = SCALAR;
  u.attrs[0].name = NULL;
  EXPECT_REFUSED(u, "scalar");
  u.shape[0] = SHAPE(2, 3);
  u.placeholders = DIMS_UNKNOWN;
  EXPECT_REFUSED(u, "num");
}

/* ---- Fill, ZerosLike, OnesLike ------------------------------------------- */

Test(ops_array, fill_and_constant_likes_every_dtype) {
  spec_t f = {.op = "Fill", .num_inputs = 1, .shape = {SCALAR},
              .attrs = {LIST("shape", 2, 3)}};
  check_op(&f, &SHAPE(2, 3), first_element, 0);
  f.attrs[0] = (attr_t)LIST("shape", 200, 300);
  f.threads = 2;
  check_op_dtype(&f, WEFT_INT64, &SHAPE(200, 300), first_element, 0);
  f.attrs[0] = (attr_t)LIST("shape", 4, 0);
  check_op(&f, &SHAPE(4, 0), first_element, 0);
  f.attrs[0] = (attr_t)EMPTY_LIST("shape");
  check_op(&f, &SCALAR, first_element, 0);

  spec_t z = {.op = "ZerosLike", .num_inputs = 1, .shape = {SHAPE(3, 2)}};
  check_op(&z, &SHAPE(3, 2), constant, 0);
  z.op = "OnesLike";
  check_op(&z, &SHAPE(3, 2), constant, 1);
  z.shape[0] = SHAPE(0, 7);
  check_op(&z, &SHAPE(0, 7), constant, 1);

  spec_t bad = {.op = "Fill", .name = "fill_vector", .num_inputs = 1,
                .shape = {SHAPE(2)}, .attrs = {LIST("shape", 2)}};
  EXPECT_REFUSED(bad, "scalar", "[2]");
  bad.name = "fill_unknown";
  bad.shape[0] = SCALAR;
  bad.attrs[0] = (attr_t)LIST("shape", 2, -1);
  EXPECT_REFUSED(bad, "shape", "[2,?]");
}

/* ---- Gather, OneHot ------------------------------------------------------ */

Test(ops_array, gather_every_dtype) {
  const int32_t idx32[4] = {2, 0, 2, 1};
  const int64_t idx64[6] = {1, 1, 0, 3, 2, 0};
  spec_t s = {.op = "Gather", .num_inputs = 2,
              .shape = {SHAPE(3, 2), SHAPE(4)}, .fixed = {0, WEFT_INT32},
              .data = {NULL, idx32}};
  check_op(&s, &SHAPE(4, 2), gather_ref, 0);
  s = (spec_t){.op = "Gather", .num_inputs = 2,
               .shape = {SHAPE(2, 4, 3), SHAPE(2, 3)},
               .fixed = {0, WEFT_INT64}, .data = {NULL, idx64},
               .attrs = {INT("axis", -2)}};
  check_op(&s, &SHAPE(2, 2, 3, 3), gather_ref, 0);
  s.attrs[0].i = 2;
  s.shape[0] = SHAPE(2, 2, 4);
  check_op(&s, &SHAPE(2, 2, 2, 3), gather_ref, 0);
  s.shape[1] = SHAPE(0);
  check_op(&s, &SHAPE(2, 2, 0), gather_ref, 0);
  /* Scalar indices drop the axis. */
  s = (spec_t){.op = "Gather", .num_inputs = 2, .shape = {SHAPE(3, 2), SCALAR},
               .fixed = {0, WEFT_INT32}, .data = {NULL, idx32}};
  check_op(&s, &SHAPE(2), gather_ref, 0);
  /* Many rows, in parallel. */
  static int32_t many[40000];
  for (int i = 0; i < 40000; ++i) many[i] = (i * 7919) % 50;
  s = (spec_t){.op = "Gather", .num_inputs = 2,
               .shape = {SHAPE(50, 3), SHAPE(40000)},
               .fixed = {0, WEFT_INT32}, .data = {NULL, many}, .threads = 2};
  check_op_dtype(&s, WEFT_FLOAT32, &SHAPE(40000, 3), gather_ref, 0);
  s.shape[0] = SHAPE(50);
  check_op_dtype(&s, WEFT_UINT8, &SHAPE(40000), gather_ref, 0);
}

Test(ops_array, gather_errors) {
  const int32_t bad32[3] = {0, 3, 1};
  const int64_t bad64[2] = {-1, 0};
  weft_tensor* out[1];
  spec_t s = {.op = "Gather", .name = "gather_oob", .num_inputs = 2,
              .shape = {SHAPE(3, 2), SHAPE(3)}, .fixed = {0, WEFT_INT32},
              .data = {NULL, bad32}};
  WT_EXPECT_ERROR(try_run(&s, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "gather_oob", "indices[1] = 3");
  s.fixed[1] = WEFT_INT64;
  s.data[1] = bad64;
  s.shape[1] = SHAPE(2);
  WT_EXPECT_ERROR(try_run(&s, WEFT_BOOL, out), WEFT_INVALID_ARGUMENT,
                  "gather_oob", "indices[0] = -1");
  s.attrs[0] = (attr_t)INT("axis", 2);
  EXPECT_REFUSED(s, "axis", "[3,2]");
  s.attrs[0].name = NULL;
  s.fixed[1] = WEFT_FLOAT32;
  EXPECT_REFUSED(s, "indices", "float32");
  s.fixed[1] = WEFT_INT32;
  s.shape[0] = SCALAR;
  EXPECT_REFUSED(s, "params");
}

Test(ops_array, one_hot) {
  const int64_t idx[6] = {0, 2, -1, 1, 3, 2};
  check_one_hot(idx, SHAPE(6), 3, -1, WEFT_FLOAT32, 1, 0, WEFT_INT32);
  check_one_hot(idx, SHAPE(2, 3), 4, 0, WEFT_FLOAT64, 5, -1, WEFT_INT64);
  check_one_hot(idx, SHAPE(2, 3), 3, 1, WEFT_INT32, 7, -7, WEFT_INT32);
  check_one_hot(idx, SHAPE(3, 2), 3, -1, WEFT_INT64, 1, 0, WEFT_INT64);
  check_one_hot(idx, SHAPE(6), 4, 0, WEFT_UINT8, 255, 3, WEFT_INT32);
  check_one_hot(idx, SHAPE(6), 3, -1, WEFT_BOOL, 1, 0, WEFT_INT64);
  check_one_hot(idx, SHAPE(6), 0, -1, WEFT_FLOAT32, 1, 0, WEFT_INT32);
  check_one_hot(idx, SHAPE(0), 5, -1, WEFT_FLOAT32, 1, 0, WEFT_INT32);
  check_one_hot(idx, SCALAR, 3, -1, WEFT_FLOAT32, 1, 0, WEFT_INT64);

  spec_t s = {.op = "OneHot", .name = "one_hot_bad", .num_inputs = 1,
              .shape = {SHAPE(3)}, .fixed = {WEFT_INT32}, .data = {idx},
              .attrs = {INT("depth", -1)}};
  EXPECT_REFUSED(s, "depth");
  s.attrs[0].i = 3;
  s.attrs[1] = (attr_t)INT("axis", 2);
  EXPECT_REFUSED(s, "axis", "[3]");
  s.attrs[1] = (attr_t)DTYPE("dtype", WEFT_UINT8);
  s.attrs[2] = (attr_t)FLOAT("on_value", 256);
  EXPECT_REFUSED(s, "on_value", "uint8");
  s.attrs[2].name = NULL;
  s.fixed[0] = WEFT_FLOAT32;
  EXPECT_REFUSED(s, "indices", "float32");
  s.attrs[0].name = NULL;
  s.fixed[0] = WEFT_INT32;
  EXPECT_REFUSED(s, "depth");
}
