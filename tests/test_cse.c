/* Common-subexpression elimination, seen from the public API: the run
 * metadata says which nodes were merged into which, a merged node is gone
 * from the run's node list, and the values fetched are what they would be
 * without the pass.  Stateful ops, placeholders and NoOps never merge, and a
 * fed output is a value of its own. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_session* session_with_cse(weft_graph* graph, int cse) {
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "CPU";
  if (!cse) options.optimizations = WEFT_OPTIMIZE_ALL & ~WEFT_OPTIMIZE_CSE;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  cr_assert_not_null(session);
  return session;
}

/* One run with metadata; fetched values go to outs.  The caller destroys
 * the metadata. */
static weft_run_metadata* run_with_metadata(
    weft_session* session, const weft_output* feeds,
    weft_tensor* const* values, int32_t num_feeds, const weft_output* fetches,
    int32_t num_fetches, weft_node* const* targets, int32_t num_targets,
    weft_tensor** outs) {
  weft_run_metadata* metadata = weft_run_metadata_create();
  cr_assert_not_null(metadata);
  WT_OK(weft_session_run_with_metadata(session, feeds, values, num_feeds,
                                       fetches, num_fetches, targets,
                                       num_targets, outs, metadata));
  return metadata;
}

/* A session with CSE on, and one run of it feeding `value` to `input`. */
static weft_run_metadata* run_feeding(weft_graph* graph, weft_output input,
                                      weft_tensor* value,
                                      const weft_output* fetches,
                                      int32_t num_fetches, weft_tensor** outs,
                                      weft_session** out_session) {
  *out_session = session_with_cse(graph, 1);
  return run_with_metadata(*out_session, &input, &value, 1, fetches,
                           num_fetches, NULL, 0, outs);
}

static int ran_node(const weft_run_metadata* m, const char* name) {
  for (int32_t i = 0; i < weft_run_metadata_num_nodes(m); ++i)
    if (strcmp(weft_run_metadata_node_name(m, i), name) == 0) return 1;
  return 0;
}

static void expect_merge(const weft_run_metadata* m, int32_t i,
                         const char* removed, const char* kept) {
  const char* got_removed = NULL;
  const char* got_kept = NULL;
  WT_OK(weft_run_metadata_merged(m, i, &got_removed, &got_kept));
  cr_assert_not_null(got_removed);
  cr_assert_not_null(got_kept);
  cr_expect_str_eq(got_removed, removed, "merge %d removed %s, expected %s",
                   i, got_removed, removed);
  cr_expect_str_eq(got_kept, kept, "merge %d kept %s, expected %s", i,
                   got_kept, kept);
  cr_expect(!ran_node(m, removed), "merged node %s is in the node list",
            removed);
  cr_expect(ran_node(m, kept), "representative %s is not in the node list",
            kept);
}

/* Output 0 of the node `b` builds. */
static weft_output finish(weft_op_builder* b) {
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

static void expect_same_bytes(const weft_tensor* a, const weft_tensor* b) {
  cr_assert_eq(weft_tensor_dtype(a), weft_tensor_dtype(b));
  cr_assert_eq(weft_tensor_byte_size(a), weft_tensor_byte_size(b));
  cr_assert_eq(memcmp(weft_tensor_data(a), weft_tensor_data(b),
                      weft_tensor_byte_size(a)), 0);
}

static void destroy_all(weft_tensor** tensors, int n) {
  for (int i = 0; i < n; ++i) weft_tensor_destroy(tensors[i]);
}

/* The end of a test: what its run gave, and what it ran on. */
static void release(weft_tensor** outs, int num_outs, weft_run_metadata* m,
                    weft_session* session, weft_graph* graph) {
  destroy_all(outs, num_outs);
  weft_run_metadata_destroy(m);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* m1 = A x B and m2 = A x B over placeholders; sum = m1 + m2. */
struct twin_matmuls {
  weft_graph* graph;
  weft_output a, b, m1, m2, sum;
  weft_tensor* values[2];
};

static struct twin_matmuls make_twin_matmuls(void) {
  struct twin_matmuls t;
  t.graph = wt_graph_new();
  t.a = wt_placeholder(t.graph, "a", WEFT_FLOAT32, WT_SHAPE(2, 2));
  t.b = wt_placeholder(t.graph, "b", WEFT_FLOAT32, WT_SHAPE(2, 2));
  t.m1 = wt_apply2(t.graph, "MatMul", "m1", t.a, t.b);
  t.m2 = wt_apply2(t.graph, "MatMul", "m2", t.a, t.b);
  t.sum = wt_apply2(t.graph, "Add", "sum", t.m1, t.m2);
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  t.values[0] = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 2), a);
  t.values[1] = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 2), b);
  return t;
}

/* A x B = [[19, 22], [43, 50]]. */
static const double kProduct[4] = {19, 22, 43, 50};
static const double kTwiceProduct[4] = {38, 44, 86, 100};

Test(cse, identical_matmuls_merge) {
  struct twin_matmuls t = make_twin_matmuls();
  weft_session* session = session_with_cse(t.graph, 1);
  weft_output feeds[2] = {t.a, t.b};
  weft_tensor* out = NULL;
  weft_run_metadata* m = run_with_metadata(session, feeds, t.values, 2,
                                           &t.sum, 1, NULL, 0, &out);
  cr_assert_eq(weft_run_metadata_num_merged(m), 1);
  expect_merge(m, 0, "m2", "m1");
  cr_expect_null(weft_run_metadata_device_of(m, "m2"));
  wt_expect_f32(out, kTwiceProduct, 4, 0, 0);
  destroy_all(t.values, 2);
  release(&out, 1, m, session, t.graph);
}

Test(cse, fetching_both_duplicates_gives_equal_values) {
  struct twin_matmuls t = make_twin_matmuls();
  weft_session* session = session_with_cse(t.graph, 1);
  weft_output feeds[2] = {t.a, t.b};
  weft_output fetches[2] = {t.m1, t.m2};
  weft_tensor* outs[2] = {NULL, NULL};
  weft_run_metadata* m = run_with_metadata(session, feeds, t.values, 2,
                                           fetches, 2, NULL, 0, outs);
  cr_assert_eq(weft_run_metadata_num_merged(m), 1);
  expect_merge(m, 0, "m2", "m1");
  wt_expect_f32(outs[0], kProduct, 4, 0, 0);
  expect_same_bytes(outs[0], outs[1]);
  /* Each fetch is a tensor of its own even when both name one value. */
  cr_expect_neq(outs[0], outs[1]);
  destroy_all(t.values, 2);
  release(outs, 2, m, session, t.graph);
}

Test(cse, optimizations_without_cse_merge_nothing) {
  struct twin_matmuls t = make_twin_matmuls();
  weft_session* session = session_with_cse(t.graph, 0);
  weft_output feeds[2] = {t.a, t.b};
  weft_output fetches[3] = {t.sum, t.m1, t.m2};
  weft_tensor* outs[3] = {NULL, NULL, NULL};
  weft_run_metadata* m = run_with_metadata(session, feeds, t.values, 2,
                                           fetches, 3, NULL, 0, outs);
  cr_expect_eq(weft_run_metadata_num_merged(m), 0);
  cr_expect(ran_node(m, "m1") && ran_node(m, "m2"));
  wt_expect_f32(outs[0], kTwiceProduct, 4, 0, 0);
  wt_expect_f32(outs[1], kProduct, 4, 0, 0);
  wt_expect_f32(outs[2], kProduct, 4, 0, 0);
  destroy_all(t.values, 2);
  release(outs, 3, m, session, t.graph);
}

Test(cse, commutative_inputs_in_either_order_merge) {
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(2));
  weft_output b = wt_placeholder(graph, "b", WEFT_FLOAT32, WT_SHAPE(2));
  weft_output fetches[6] = {
      wt_apply2(graph, "Add", "add_ab", a, b),
      wt_apply2(graph, "Add", "add_ba", b, a),
      wt_apply2(graph, "Sub", "sub_ab", a, b),
      wt_apply2(graph, "Sub", "sub_ba", b, a),
      wt_apply2(graph, "Maximum", "max_ab", a, b),
      wt_apply2(graph, "Maximum", "max_ba", b, a),
  };
  float av[2] = {1, 5}, bv[2] = {3, 2};
  weft_tensor* values[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(2), av),
                            wt_tensor(WEFT_FLOAT32, WT_SHAPE(2), bv)};
  weft_output feeds[2] = {a, b};
  weft_session* session = session_with_cse(graph, 1);
  weft_tensor* outs[6] = {NULL};
  weft_run_metadata* m = run_with_metadata(session, feeds, values, 2,
                                           fetches, 6, NULL, 0, outs);
  cr_assert_eq(weft_run_metadata_num_merged(m), 2);
  expect_merge(m, 0, "add_ba", "add_ab");
  expect_merge(m, 1, "max_ba", "max_ab");
  cr_expect(ran_node(m, "sub_ab") && ran_node(m, "sub_ba"));
  const double sum[2] = {4, 7}, ab[2] = {-2, 3}, ba[2] = {2, -3},
               max[2] = {3, 5};
  wt_expect_f32(outs[0], sum, 2, 0, 0);
  wt_expect_f32(outs[1], sum, 2, 0, 0);
  wt_expect_f32(outs[2], ab, 2, 0, 0);
  wt_expect_f32(outs[3], ba, 2, 0, 0);
  wt_expect_f32(outs[4], max, 2, 0, 0);
  wt_expect_f32(outs[5], max, 2, 0, 0);
  destroy_all(values, 2);
  release(outs, 6, m, session, graph);
}

Test(cse, chains_of_duplicates_collapse) {
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(3));
  weft_output x1 = wt_apply1(graph, "Exp", "x1", a);
  weft_output x2 = wt_apply1(graph, "Exp", "x2", a);
  weft_output fetches[2] = {wt_apply1(graph, "Log", "y1", x1),
                            wt_apply1(graph, "Log", "y2", x2)};
  float av[3] = {-1, 0, 2};
  weft_tensor* value = wt_tensor(WEFT_FLOAT32, WT_SHAPE(3), av);
  weft_session* session = NULL;
  weft_tensor* outs[2] = {NULL};
  weft_run_metadata* m =
      run_feeding(graph, a, value, fetches, 2, outs, &session);
  cr_assert_eq(weft_run_metadata_num_merged(m), 2);
  expect_merge(m, 0, "x2", "x1");
  expect_merge(m, 1, "y2", "y1");
  const double expected[3] = {-1, 0, 2};
  wt_expect_f32(outs[0], expected, 3, 1e-6, 1e-6);
  expect_same_bytes(outs[0], outs[1]);
  weft_tensor_destroy(value);
  release(outs, 2, m, session, graph);
}

static weft_output matmul(weft_graph* graph, const char* name, weft_output x,
                          int transpose_a) {
  weft_op_builder* b = weft_op_begin(graph, "MatMul", name);
  weft_op_add_input(b, x);
  weft_op_add_input(b, x);
  if (transpose_a >= 0) weft_op_set_attr_bool(b, "transpose_a", transpose_a);
  return finish(b);
}

Test(cse, attributes_and_device_constraints_must_agree) {
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(2, 2));
  weft_output neg_anywhere = wt_apply1(graph, "Neg", "neg_anywhere", a);
  weft_op_builder* b = weft_op_begin(graph, "Neg", "neg_on_cpu");
  weft_op_add_input(b, a);
  weft_op_set_device(b, "CPU");
  weft_node* neg_on_cpu = NULL;
  WT_OK(weft_op_finish(b, &neg_on_cpu));
  weft_output fetches[5] = {
      matmul(graph, "plain", a, -1),
      /* Spelling out the default is the same node. */
      matmul(graph, "explicit_false", a, 0),
      matmul(graph, "transposed", a, 1),
      neg_anywhere,
      {neg_on_cpu, 0},
  };
  float av[4] = {1, 2, 3, 4};
  weft_tensor* value = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 2), av);
  weft_session* session = NULL;
  weft_tensor* outs[5] = {NULL};
  weft_run_metadata* m =
      run_feeding(graph, a, value, fetches, 5, outs, &session);
  cr_assert_eq(weft_run_metadata_num_merged(m), 1);
  expect_merge(m, 0, "explicit_false", "plain");
  cr_expect(ran_node(m, "transposed"));
  cr_expect(ran_node(m, "neg_anywhere") && ran_node(m, "neg_on_cpu"));
  const double plain[4] = {7, 10, 15, 22}, transposed[4] = {10, 14, 14, 20};
  wt_expect_f32(outs[0], plain, 4, 0, 0);
  wt_expect_f32(outs[1], plain, 4, 0, 0);
  wt_expect_f32(outs[2], transposed, 4, 0, 0);
  weft_tensor_destroy(value);
  release(outs, 5, m, session, graph);
}

Test(cse, constants_merge_when_dtype_shape_and_bytes_agree) {
  weft_graph* graph = wt_graph_new();
  float one_two[2] = {1, 2}, one_three[2] = {1, 3};
  float zeros[2] = {0, 0}, negative_zero[2] = {-0.0f, 0};
  float nans[2] = {NAN, 1};
  int32_t one_two_bits[2];
  memcpy(one_two_bits, one_two, sizeof one_two_bits);
  weft_output fetches[9] = {
      wt_const_f32(graph, "c", WT_SHAPE(2), one_two),
      wt_const_f32(graph, "same_as_c", WT_SHAPE(2), one_two),
      wt_const_f32(graph, "other_values", WT_SHAPE(2), one_three),
      wt_const_f32(graph, "other_shape", WT_SHAPE(1, 2), one_two),
      wt_const(graph, "other_dtype",
               wt_tensor(WEFT_INT32, WT_SHAPE(2), one_two_bits)),
      wt_const_f32(graph, "zeros", WT_SHAPE(2), zeros),
      wt_const_f32(graph, "negative_zero", WT_SHAPE(2), negative_zero),
      wt_const_f32(graph, "nan", WT_SHAPE(2), nans),
      wt_const_f32(graph, "same_nan", WT_SHAPE(2), nans),
  };
  weft_session* session = session_with_cse(graph, 1);
  weft_tensor* outs[9] = {NULL};
  weft_run_metadata* m = run_with_metadata(session, NULL, NULL, 0, fetches,
                                           9, NULL, 0, outs);
  cr_assert_eq(weft_run_metadata_num_merged(m), 2);
  expect_merge(m, 0, "same_as_c", "c");
  expect_merge(m, 1, "same_nan", "nan");
  const char* kept[] = {"other_values", "other_shape", "other_dtype",
                        "zeros", "negative_zero"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; ++i)
    cr_expect(ran_node(m, kept[i]), "%s was merged", kept[i]);
  expect_same_bytes(outs[0], outs[1]);
  const double expected[2] = {1, 2};
  wt_expect_f32(outs[1], expected, 2, 0, 0);
  cr_expect(signbit(((const float*)weft_tensor_data(outs[6]))[0]));
  release(outs, 9, m, session, graph);
}

static weft_output seeded_uniform(weft_graph* graph, const char* name) {
  weft_op_builder* b = weft_op_begin(graph, "RandomUniform", name);
  weft_op_set_attr_int(b, "seed", 7);
  weft_op_set_attr_int(b, "seed2", 3);
  weft_op_set_attr_int_list(b, "shape", WT_SHAPE(16));
  return finish(b);
}

/* Random values depend only on the seeds, the node's run count and the
 * element index, so two nodes with one seed pair give equal values on the
 * same run count: equal values prove nothing.  What shows the nodes apart
 * is that each keeps its own run count. */
Test(cse, random_ops_never_merge) {
  weft_graph* graph = wt_graph_new();
  weft_output r1 = seeded_uniform(graph, "r1");
  weft_output r2 = seeded_uniform(graph, "r2");
  weft_session* session = session_with_cse(graph, 1);

  weft_tensor* first = wt_run1(session, NULL, NULL, 0, r1);
  weft_output both[2] = {r1, r2};
  weft_tensor* outs[2] = {NULL, NULL};
  weft_run_metadata* m = run_with_metadata(session, NULL, NULL, 0, both, 2,
                                           NULL, 0, outs);
  cr_expect_eq(weft_run_metadata_num_merged(m), 0);
  cr_expect(ran_node(m, "r1") && ran_node(m, "r2"));
  /* r2's first run repeats r1's first run; r1's second run differs. */
  expect_same_bytes(first, outs[1]);
  cr_expect_neq(memcmp(weft_tensor_data(outs[0]), weft_tensor_data(outs[1]),
                       weft_tensor_byte_size(outs[0])), 0,
                "r1 and r2 gave the same values: they share a run count");
  weft_tensor_destroy(first);
  release(outs, 2, m, session, graph);
}

static float read_scalar(weft_session* session, weft_output output) {
  weft_tensor* t = wt_run1(session, NULL, NULL, 0, output);
  float value = *(const float*)weft_tensor_data(t);
  weft_tensor_destroy(t);
  return value;
}

Test(cse, variables_and_assignments_never_merge) {
  weft_graph* graph = wt_graph_new();
  weft_output five = wt_const(graph, "five", wt_scalar_f32(5));
  weft_output one = wt_const(graph, "one", wt_scalar_f32(1));
  weft_output v1, v2;
  weft_node* inits[2] = {NULL, NULL};
  WT_OK(weft_graph_variable(graph, "v1", five, &v1, &inits[0]));
  WT_OK(weft_graph_variable(graph, "v2", five, &v2, &inits[1]));
  weft_node* bumps[2] = {
      wt_apply2(graph, "AssignAdd", "bump1", v1, one).node,
      wt_apply2(graph, "AssignAdd", "bump2", v1, one).node,
  };
  weft_session* session = session_with_cse(graph, 1);
  weft_run_metadata* m =
      run_with_metadata(session, NULL, NULL, 0, NULL, 0, inits, 2, NULL);
  cr_expect_eq(weft_run_metadata_num_merged(m), 0);
  weft_run_metadata_destroy(m);

  m = run_with_metadata(session, NULL, NULL, 0, NULL, 0, bumps, 2, NULL);
  cr_expect_eq(weft_run_metadata_num_merged(m), 0);
  cr_expect(ran_node(m, "bump1") && ran_node(m, "bump2"));
  weft_run_metadata_destroy(m);
  cr_expect_eq(read_scalar(session, v1), 7.0f, "both AssignAdds must run");
  cr_expect_eq(read_scalar(session, v2), 5.0f, "v2 shares v1's state");

  weft_output reads[2] = {v1, v2};
  weft_tensor* outs[2] = {NULL, NULL};
  m = run_with_metadata(session, NULL, NULL, 0, reads, 2, NULL, 0, outs);
  cr_expect_eq(weft_run_metadata_num_merged(m), 0);
  release(outs, 2, m, session, graph);
}

Test(cse, noops_never_merge) {
  weft_graph* graph = wt_graph_new();
  weft_node* noops[2] = {NULL, NULL};
  WT_OK(weft_op_finish(weft_op_begin(graph, "NoOp", "group1"), &noops[0]));
  WT_OK(weft_op_finish(weft_op_begin(graph, "NoOp", "group2"), &noops[1]));
  weft_session* session = session_with_cse(graph, 1);
  weft_run_metadata* m =
      run_with_metadata(session, NULL, NULL, 0, NULL, 0, noops, 2, NULL);
  cr_expect_eq(weft_run_metadata_num_merged(m), 0);
  cr_expect(ran_node(m, "group1") && ran_node(m, "group2"));
  release(NULL, 0, m, session, graph);
}

/* x1 = Exp(a) and x2 = Exp(a) are twins; y1 = Neg(x1), y2 = Neg(x2) and
 * y3 = Neg(x2).  Feeding either twin makes it a value of its own. */
struct fed_twins {
  weft_graph* graph;
  weft_output a, x1, x2;
  weft_output fetches[3];
  weft_tensor* values[2];
};

static struct fed_twins make_fed_twins(void) {
  struct fed_twins t;
  t.graph = wt_graph_new();
  t.a = wt_placeholder(t.graph, "a", WEFT_FLOAT32, WT_SHAPE(2));
  t.x1 = wt_apply1(t.graph, "Exp", "x1", t.a);
  t.x2 = wt_apply1(t.graph, "Exp", "x2", t.a);
  t.fetches[0] = wt_apply1(t.graph, "Neg", "y1", t.x1);
  t.fetches[1] = wt_apply1(t.graph, "Neg", "y2", t.x2);
  t.fetches[2] = wt_apply1(t.graph, "Neg", "y3", t.x2);
  float a[2] = {0, 1}, fed[2] = {10, 20};
  t.values[0] = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2), a);
  t.values[1] = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2), fed);
  return t;
}

/* Feeds one twin (x1 when feed_first, else x2) and fetches y1, y2, y3. */
static void check_fed_twin(int feed_first) {
  struct fed_twins t = make_fed_twins();
  weft_session* session = session_with_cse(t.graph, 1);
  weft_output feeds[2] = {t.a, feed_first ? t.x1 : t.x2};
  weft_tensor* outs[3] = {NULL};
  weft_run_metadata* m = run_with_metadata(session, feeds, t.values, 2,
                                           t.fetches, 3, NULL, 0, outs);
  /* The fed twin does not run; the other one does, unmerged. */
  cr_expect(!ran_node(m, feed_first ? "x1" : "x2"));
  cr_expect(ran_node(m, feed_first ? "x2" : "x1"));
  /* y2 and y3 read the same value, whichever twin is fed; y1 reads the
   * other. */
  cr_assert_eq(weft_run_metadata_num_merged(m), 1);
  expect_merge(m, 0, "y3", "y2");
  cr_expect(ran_node(m, "y1"));

  const double from_feed[2] = {-10, -20};
  const double computed[2] = {-1, -exp(1.0)};
  wt_expect_f32(outs[0], feed_first ? from_feed : computed, 2, 0, 1e-6);
  wt_expect_f32(outs[1], feed_first ? computed : from_feed, 2, 0, 1e-6);
  wt_expect_f32(outs[2], feed_first ? computed : from_feed, 2, 0, 1e-6);
  destroy_all(t.values, 2);
  release(outs, 3, m, session, t.graph);
}

Test(cse, a_fed_node_never_merges_and_its_consumers_see_the_feed) {
  check_fed_twin(0);
}

Test(cse, feeding_the_would_be_representative_keeps_its_twin) {
  check_fed_twin(1);
}

static weft_node* unpack(weft_graph* graph, const char* name, weft_output x) {
  weft_op_builder* b = weft_op_begin(graph, "Unpack", name);
  weft_op_add_input(b, x);
  return finish(b).node;
}

/* A node still runs when only some of its outputs are fed; it must not
 * merge even then, or the consumers of the fed output would be taken for
 * consumers of its twin's output. */
Test(cse, a_node_with_one_output_fed_never_merges) {
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(2));
  weft_node* s1 = unpack(graph, "s1", a);
  weft_node* s2 = unpack(graph, "s2", a);
  weft_output fetches[3] = {
      wt_apply1(graph, "Neg", "from_s1", (weft_output){s1, 0}),
      wt_apply1(graph, "Neg", "from_fed_s2", (weft_output){s2, 0}),
      wt_apply1(graph, "Neg", "from_unfed_s2", (weft_output){s2, 1}),
  };
  float av[2] = {1, 2}, fed[1] = {100};
  weft_tensor* values[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(2), av),
                            wt_tensor(WEFT_FLOAT32, NULL, 0, fed)};
  weft_output feeds[2] = {a, {s2, 0}};
  weft_session* session = session_with_cse(graph, 1);
  weft_tensor* outs[3] = {NULL};
  weft_run_metadata* m = run_with_metadata(session, feeds, values, 2,
                                           fetches, 3, NULL, 0, outs);
  cr_expect_eq(weft_run_metadata_num_merged(m), 0);
  cr_expect(ran_node(m, "s1") && ran_node(m, "s2"));
  const double minus_a0[1] = {-1}, minus_fed[1] = {-100},
               minus_a1[1] = {-2};
  wt_expect_f32(outs[0], minus_a0, 1, 0, 0);
  wt_expect_f32(outs[1], minus_fed, 1, 0, 0);
  wt_expect_f32(outs[2], minus_a1, 1, 0, 0);
  destroy_all(values, 2);
  release(outs, 3, m, session, graph);
}

static weft_output neg_after(weft_graph* graph, const char* name,
                             weft_output x, weft_node* const* controls,
                             int n) {
  weft_op_builder* b = weft_op_begin(graph, "Neg", name);
  weft_op_add_input(b, x);
  for (int i = 0; i < n; ++i) weft_op_add_control_input(b, controls[i]);
  return finish(b);
}

/* Control inputs compare as sets, after earlier merges. */
Test(cse, control_inputs_must_agree_as_sets) {
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(1));
  weft_node* g1 = NULL;
  weft_node* g2 = NULL;
  WT_OK(weft_op_finish(weft_op_begin(graph, "NoOp", "g1"), &g1));
  WT_OK(weft_op_finish(weft_op_begin(graph, "NoOp", "g2"), &g2));
  weft_node* x1 = wt_apply1(graph, "Exp", "x1", a).node;
  weft_node* x2 = wt_apply1(graph, "Exp", "x2", a).node;
  weft_node* both[2] = {g1, g2};
  weft_node* both_reversed_twice[3] = {g2, g1, g2};
  weft_output fetches[5] = {
      neg_after(graph, "after_both", a, both, 2),
      neg_after(graph, "after_both_again", a, both_reversed_twice, 3),
      neg_after(graph, "after_g1", a, &g1, 1),
      neg_after(graph, "after_x1", a, &x1, 1),
      neg_after(graph, "after_x2", a, &x2, 1),
  };
  float av[1] = {3};
  weft_tensor* value = wt_tensor(WEFT_FLOAT32, WT_SHAPE(1), av);
  weft_session* session = NULL;
  weft_tensor* outs[5] = {NULL};
  weft_run_metadata* m =
      run_feeding(graph, a, value, fetches, 5, outs, &session);
  cr_assert_eq(weft_run_metadata_num_merged(m), 3);
  expect_merge(m, 0, "x2", "x1");
  expect_merge(m, 1, "after_both_again", "after_both");
  expect_merge(m, 2, "after_x2", "after_x1");
  cr_expect(ran_node(m, "after_g1"));
  const double minus_a[1] = {-3};
  for (int i = 0; i < 5; ++i) wt_expect_f32(outs[i], minus_a, 1, 0, 0);
  weft_tensor_destroy(value);
  release(outs, 5, m, session, graph);
}

static weft_output pad_with(weft_graph* graph, const char* name,
                            weft_output x, int set, double value) {
  weft_op_builder* b = weft_op_begin(graph, "Pad", name);
  weft_op_add_input(b, x);
  weft_op_set_attr_int_list(b, "paddings", WT_SHAPE(1, 0));
  if (set) weft_op_set_attr_float(b, "constant_value", value);
  return finish(b);
}

/* Float attributes compare by bit pattern: a NaN equals itself, and -0.0
 * is not 0.0 (it pads with a different value). */
Test(cse, float_attributes_compare_by_bits) {
  weft_graph* graph = wt_graph_new();
  weft_output a = wt_placeholder(graph, "a", WEFT_FLOAT32, WT_SHAPE(1));
  weft_output fetches[5] = {
      pad_with(graph, "zero", a, 1, 0.0),
      pad_with(graph, "default", a, 0, 0),
      pad_with(graph, "negative_zero", a, 1, -0.0),
      pad_with(graph, "nan", a, 1, NAN),
      pad_with(graph, "nan_again", a, 1, NAN),
  };
  float av[1] = {4};
  weft_tensor* value = wt_tensor(WEFT_FLOAT32, WT_SHAPE(1), av);
  weft_session* session = NULL;
  weft_tensor* outs[5] = {NULL};
  weft_run_metadata* m =
      run_feeding(graph, a, value, fetches, 5, outs, &session);
  cr_assert_eq(weft_run_metadata_num_merged(m), 2);
  expect_merge(m, 0, "default", "zero");
  expect_merge(m, 1, "nan_again", "nan");
  cr_expect(ran_node(m, "negative_zero"));
  const float* zero = weft_tensor_data(outs[0]);
  const float* negative_zero = weft_tensor_data(outs[2]);
  cr_expect(!signbit(zero[0]) && signbit(negative_zero[0]));
  const double padded_nan[2] = {NAN, 4};
  wt_expect_f32(outs[4], padded_nan, 2, 0, 0);
  weft_tensor_destroy(value);
  release(outs, 5, m, session, graph);
}
