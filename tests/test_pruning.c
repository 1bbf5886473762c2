/* A run computes only what its fetches and targets need: nodes outside
 * that set never run (their side effects never happen, their unfed
 * placeholders raise nothing), and a fed output cuts off everything
 * upstream of it. */
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

static float read_scalar(weft_session* session, weft_output output) {
  weft_tensor* t = wt_run1(session, NULL, NULL, 0, output);
  cr_assert_eq(weft_tensor_element_count(t), 1);
  float value = *(const float*)weft_tensor_data(t);
  weft_tensor_destroy(t);
  return value;
}

/* A float32 scalar variable "counter" = 5, initialized in a new session. */
struct counter {
  weft_graph* graph;
  weft_output value;
  weft_output one;
  weft_output two;
  weft_node* init;
};

static struct counter make_counter(void) {
  struct counter c;
  c.graph = wt_graph_new();
  weft_output five = wt_const(c.graph, "five", wt_scalar_f32(5));
  WT_OK(weft_graph_variable(c.graph, "counter", five, &c.value, &c.init));
  c.one = wt_const(c.graph, "one", wt_scalar_f32(1));
  c.two = wt_const(c.graph, "two", wt_scalar_f32(2));
  return c;
}

static weft_session* init_session(struct counter* c) {
  weft_session* session = wt_session_new(c->graph, NULL);
  wt_run_targets(session, &c->init, 1);
  return session;
}

Test(pruning, side_effect_outside_the_fetch_path_never_runs) {
  struct counter c = make_counter();
  weft_output bump = wt_apply2(c.graph, "AssignAdd", "bump", c.value, c.one);
  weft_output doubled = wt_apply2(c.graph, "Mul", "doubled", c.value, c.two);
  weft_session* session = init_session(&c);

  for (int i = 0; i < 3; ++i)
    cr_expect_eq(read_scalar(session, doubled), 10.0f);
  cr_expect_eq(read_scalar(session, c.value), 5.0f,
               "an AssignAdd nobody fetched changed the variable");

  /* The same node does run when asked for, so the check above means
   * something. */
  wt_run_targets(session, &bump.node, 1);
  cr_expect_eq(read_scalar(session, c.value), 6.0f);
  cr_expect_eq(read_scalar(session, bump), 7.0f);

  weft_session_destroy(session);
  weft_graph_destroy(c.graph);
}

Test(pruning, unfed_placeholder_in_an_unneeded_branch_is_fine) {
  weft_graph* graph = wt_graph_new();
  weft_output never_fed =
      wt_placeholder(graph, "never_fed", WEFT_FLOAT32, WT_SHAPE(2));
  weft_output unused = wt_apply1(graph, "Relu", "unused_relu", never_fed);
  float values[2] = {1, -2};
  weft_output c = wt_const_f32(graph, "c", WT_SHAPE(2), values);
  weft_output neg = wt_apply1(graph, "Neg", "neg", c);
  /* Both branches meet only here, which is not fetched. */
  wt_apply2(graph, "Add", "joined", unused, neg);

  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* out = wt_run1(session, NULL, NULL, 0, neg);
  double expected[2] = {-1, 2};
  wt_expect_f32(out, expected, 2, 0, 0);
  weft_tensor_destroy(out);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(pruning, fed_intermediate_cuts_off_its_upstream) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "upstream_unfed", WEFT_FLOAT32,
                                 WT_SHAPE(2));
  weft_output hidden = wt_apply1(graph, "Relu", "hidden", x);
  weft_output y = wt_apply1(graph, "Neg", "y", hidden);
  weft_session* session = wt_session_new(graph, NULL);

  /* A negative feed survives: the Relu that would clamp it never runs. */
  float fed_values[2] = {-1.5f, 2.0f};
  weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2), fed_values);
  weft_tensor* out = wt_run1(session, &hidden, &fed, 1, y);
  double expected[2] = {1.5, -2.0};
  wt_expect_f32(out, expected, 2, 0, 0);
  weft_tensor_destroy(out);

  /* Fetching the fed output itself returns the feed. */
  out = wt_run1(session, &hidden, &fed, 1, hidden);
  double same[2] = {-1.5, 2.0};
  wt_expect_f32(out, same, 2, 0, 0);
  weft_tensor_destroy(out);

  weft_tensor_destroy(fed);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(pruning, fed_intermediate_skips_upstream_side_effects) {
  struct counter c = make_counter();
  weft_output bump = wt_apply2(c.graph, "AssignAdd", "bump", c.value, c.one);
  weft_output doubled = wt_apply2(c.graph, "Mul", "doubled", bump, c.two);
  weft_session* session = init_session(&c);

  weft_tensor* fed = wt_scalar_f32(100);
  weft_tensor* out = wt_run1(session, &bump, &fed, 1, doubled);
  cr_expect_eq(*(const float*)weft_tensor_data(out), 200.0f);
  weft_tensor_destroy(out);
  weft_tensor_destroy(fed);
  cr_expect_eq(read_scalar(session, c.value), 5.0f,
               "the AssignAdd whose output was fed still ran");

  /* Unfed, the same fetch does run it. */
  cr_expect_eq(read_scalar(session, doubled), 12.0f);
  cr_expect_eq(read_scalar(session, c.value), 6.0f);

  weft_session_destroy(session);
  weft_graph_destroy(c.graph);
}

Test(pruning, control_inputs_are_part_of_what_is_needed) {
  struct counter c = make_counter();
  weft_node* bump = NULL;
  {
    weft_output out =
        wt_apply2(c.graph, "AssignAdd", "bump", c.value, c.one);
    bump = out.node;
  }
  /* Fetching a node with a control input on bump runs bump first. */
  weft_op_builder* b = weft_op_begin(c.graph, "Identity", "after_bump");
  weft_op_add_input(b, c.two);
  weft_op_add_control_input(b, bump);
  weft_node* after = NULL;
  WT_OK(weft_op_finish(b, &after));
  cr_expect_eq(weft_node_num_control_inputs(after), 1);

  /* A NoOp grouping it does the same as a target. */
  b = weft_op_begin(c.graph, "NoOp", "group");
  weft_op_add_control_input(b, bump);
  weft_node* group = NULL;
  WT_OK(weft_op_finish(b, &group));

  weft_session* session = init_session(&c);
  weft_output plain_two = c.two;
  cr_expect_eq(read_scalar(session, plain_two), 2.0f);
  cr_expect_eq(read_scalar(session, c.value), 5.0f,
               "fetching the Identity's input ran its control dependency");
  weft_output after_out = {after, 0};
  cr_expect_eq(read_scalar(session, after_out), 2.0f);
  cr_expect_eq(read_scalar(session, c.value), 6.0f,
               "a control input of a fetched node did not run");
  wt_run_targets(session, &group, 1);
  cr_expect_eq(read_scalar(session, c.value), 7.0f);

  weft_session_destroy(session);
  weft_graph_destroy(c.graph);
}

Test(pruning, unused_feed_is_harmless) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "spare", WEFT_FLOAT32, WT_SHAPE(1));
  weft_output c = wt_const(graph, "c", wt_scalar_f32(3));
  weft_output y = wt_apply1(graph, "Neg", "y", c);
  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(1), NULL);
  weft_tensor* out = wt_run1(session, &x, &fed, 1, y);
  cr_expect_eq(*(const float*)weft_tensor_data(out), -3.0f);
  weft_tensor_destroy(out);
  weft_tensor_destroy(fed);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* Each request (feeds, fetches, targets, in order) has its own plan, and a
 * session switching between requests, long and short, finds the right one
 * every time: the plan cache keys on the whole request, and one of more
 * than 32 outputs has a key too long for the lookup's stack buffer. */
Test(pruning, each_request_finds_its_own_plan) {
  enum { kMany = 40 };
  weft_graph* graph = wt_graph_new();
  weft_output values[kMany], reversed[kMany];
  char name[16];
  for (int i = 0; i < kMany; ++i) {
    snprintf(name, sizeof name, "c%d", i);
    values[i] = wt_const(graph, name, wt_scalar_f32((float)i));
  }
  for (int i = 0; i < kMany; ++i) reversed[i] = values[kMany - 1 - i];
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, NULL, 0);
  weft_output sum = wt_apply2(graph, "Add", "sum", x, values[3]);
  weft_output product = wt_apply2(graph, "Mul", "product", x, values[5]);
  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* seven = wt_scalar_f32(7);
  weft_tensor* out[kMany];
  for (int round = 0; round < 3; ++round) {
    WT_OK(weft_session_run(session, NULL, NULL, 0, values, kMany, NULL, 0,
                           out));
    for (int i = 0; i < kMany; ++i) {
      cr_expect_eq(*(const float*)weft_tensor_data(out[i]), (float)i);
      weft_tensor_destroy(out[i]);
    }
    weft_tensor* t = wt_run1(session, &x, &seven, 1, sum);
    cr_expect_eq(*(const float*)weft_tensor_data(t), 10.0f, "round %d", round);
    weft_tensor_destroy(t);
    t = wt_run1(session, &x, &seven, 1, product);
    cr_expect_eq(*(const float*)weft_tensor_data(t), 35.0f, "round %d", round);
    weft_tensor_destroy(t);
    /* The same outputs in the other order are another request. */
    WT_OK(weft_session_run(session, NULL, NULL, 0, reversed, kMany, NULL, 0,
                           out));
    for (int i = 0; i < kMany; ++i) {
      cr_expect_eq(*(const float*)weft_tensor_data(out[i]),
                   (float)(kMany - 1 - i));
      weft_tensor_destroy(out[i]);
    }
    /* Feeding a constant replaces it: the plan without the feed must not
     * be taken for this one. */
    weft_output fed[2] = {x, values[3]};
    weft_tensor* fed_values[2] = {seven, seven};
    WT_OK(weft_session_run(session, fed, fed_values, 2, &sum, 1, NULL, 0,
                           out));
    cr_expect_eq(*(const float*)weft_tensor_data(out[0]), 14.0f);
    weft_tensor_destroy(out[0]);
  }
  weft_tensor_destroy(seven);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* An output fetched twice (and a fed one fetched back) comes back whole
 * each time: the run's end moves a fetched value out of its slot only at
 * the slot's last fetch. */
Test(pruning, the_same_output_fetched_twice) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, NULL, 0);
  weft_output c = wt_const(graph, "c", wt_scalar_f32(3));
  weft_output sum = wt_apply2(graph, "Add", "sum", x, c);
  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* four = wt_scalar_f32(4);
  const weft_output fetches[5] = {sum, x, sum, c, x};
  const float want[5] = {7, 4, 7, 3, 4};
  for (int round = 0; round < 2; ++round) {
    weft_tensor* out[5] = {NULL};
    WT_OK(weft_session_run(session, &x, &four, 1, fetches, 5, NULL, 0, out));
    for (int i = 0; i < 5; ++i) {
      cr_expect_eq(weft_tensor_element_count(out[i]), 1, "fetch %d", i);
      cr_expect_eq(*(const float*)weft_tensor_data(out[i]), want[i],
                   "fetch %d", i);
      weft_tensor_destroy(out[i]);
    }
  }
  weft_tensor_destroy(four);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* A failed run hands back no values, whatever the caller's array held
 * before: refused before it starts (a feed of the wrong dtype) or failing
 * while it runs (a kernel refusing its shapes).  A run that succeeds
 * fills every entry. */
Test(pruning, a_failed_run_hands_back_no_values) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, NULL, -1);
  weft_output y = wt_placeholder(graph, "y", WEFT_FLOAT32, NULL, -1);
  weft_output sum = wt_apply2(graph, "Add", "sum", x, y);
  weft_session* session = wt_session_new(graph, NULL);
  const float data[3] = {1, 2, 3};
  weft_tensor* two = wt_tensor(WEFT_FLOAT32, (const int64_t[]){2}, 1, data);
  weft_tensor* three = wt_tensor(WEFT_FLOAT32, (const int64_t[]){3}, 1, data);
  const int32_t ints[2] = {1, 2};
  weft_tensor* int_two = wt_tensor(WEFT_INT32, (const int64_t[]){2}, 1, ints);
  const weft_output feeds[2] = {x, y};
  const weft_output fetches[2] = {sum, x};
  int marker;
  weft_tensor* const junk = (weft_tensor*)&marker;
  for (int round = 0; round < 2; ++round) {
    weft_tensor* out[2] = {junk, junk};
    weft_tensor* wrong_dtype[2] = {two, int_two};
    WT_EXPECT_CODE(weft_session_run(session, feeds, wrong_dtype, 2, fetches,
                                    2, NULL, 0, out),
                   WEFT_INVALID_ARGUMENT);
    cr_expect(out[0] == NULL && out[1] == NULL, "round %d: refused run", round);
    out[0] = out[1] = junk;
    weft_tensor* mismatched[2] = {two, three};
    WT_EXPECT_CODE(weft_session_run(session, feeds, mismatched, 2, fetches, 2,
                                    NULL, 0, out),
                   WEFT_INVALID_ARGUMENT);
    cr_expect(out[0] == NULL && out[1] == NULL, "round %d: failed run", round);
    out[0] = out[1] = junk;
    weft_tensor* matched[2] = {two, two};
    WT_OK(weft_session_run(session, feeds, matched, 2, fetches, 2, NULL, 0,
                           out));
    cr_assert(out[0] != junk && out[1] != junk);
    cr_expect_eq(((const float*)weft_tensor_data(out[0]))[1], 4.0f);
    cr_expect_eq(((const float*)weft_tensor_data(out[1]))[1], 2.0f);
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
  weft_tensor_destroy(two);
  weft_tensor_destroy(three);
  weft_tensor_destroy(int_two);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* A chain (one kernel ready at a time: the plan runs as a fixed sequence)
 * that fails in its middle: a = x + 1, b = a // y, c = b + 1.  A zero in y
 * fails the run at b, naming it, and c never runs; the session's next run,
 * with a good y, gives every value (a, read by b, was not written over). */
Test(pruning, a_chain_failing_midway_leaves_the_session_whole) {
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_INT32, WT_DIMS(3), 1);
  weft_output y = wt_placeholder(graph, "y", WEFT_INT32, WT_DIMS(3), 1);
  const int32_t one_value = 1;
  weft_output one =
      wt_const(graph, "one", wt_tensor(WEFT_INT32, NULL, 0, &one_value));
  weft_output a = wt_apply2(graph, "Add", "a", x, one);
  weft_output b = wt_apply2(graph, "FloorDiv", "b", a, y);
  weft_output c = wt_apply2(graph, "Add", "c", b, one);
  weft_session* session = wt_session_threads(graph, 2, 1);
  const int32_t xs[3] = {5, 7, 9}, zero[3] = {1, 0, 2}, twos[3] = {2, 2, 2};
  weft_tensor* xt = wt_tensor(WEFT_INT32, WT_DIMS(3), 1, xs);
  weft_tensor* bad = wt_tensor(WEFT_INT32, WT_DIMS(3), 1, zero);
  weft_tensor* good = wt_tensor(WEFT_INT32, WT_DIMS(3), 1, twos);
  const weft_output feeds[2] = {x, y};
  const weft_output fetches[2] = {c, a};
  for (int round = 0; round < 3; ++round) {
    weft_tensor* out[2] = {NULL, NULL};
    weft_tensor* failing[2] = {xt, bad};
    weft_status* st =
        weft_session_run(session, feeds, failing, 2, fetches, 2, NULL, 0, out);
    cr_assert_eq(weft_status_code(st), WEFT_INVALID_ARGUMENT,
                 "round %d: %s", round, weft_status_message(st));
    cr_expect(strstr(weft_status_message(st), "'b'") != NULL, "%s",
              weft_status_message(st));
    cr_expect(out[0] == NULL && out[1] == NULL);
    weft_status_destroy(st);
    weft_tensor* working[2] = {xt, good};
    WT_OK(weft_session_run(session, feeds, working, 2, fetches, 2, NULL, 0,
                           out));
    const int32_t* cv = weft_tensor_data(out[0]);
    const int32_t* av = weft_tensor_data(out[1]);
    for (int i = 0; i < 3; ++i) {
      cr_expect_eq(av[i], xs[i] + 1, "a[%d]", i);
      cr_expect_eq(cv[i], (xs[i] + 1) / 2 + 1, "c[%d]", i);
    }
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
  weft_tensor_destroy(xt);
  weft_tensor_destroy(bad);
  weft_tensor_destroy(good);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}
