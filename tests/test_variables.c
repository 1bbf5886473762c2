/* Variables: state that lives in a session across runs. */
#include <criterion/criterion.h>

#include "test_support.h"

static const float initial[4] = {1, 2, 3, 4};

struct fixture {
  weft_graph* graph;
  weft_output weights;
  weft_node* init;
};

static struct fixture make_fixture(void) {
  struct fixture f;
  f.graph = wt_graph_new();
  weft_output init_value =
      wt_const_f32(f.graph, "weights_init", WT_SHAPE(2, 2), initial);
  WT_OK(weft_graph_variable(f.graph, "weights", init_value, &f.weights,
                            &f.init));
  cr_assert_not_null(f.init);
  return f;
}

static void expect_read(weft_session* session, weft_output v,
                        const double* expected) {
  weft_tensor* t = wt_run1(session, NULL, NULL, 0, v);
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(2, 2));
  wt_expect_f32(t, expected, 4, 0, 0);
  weft_tensor_destroy(t);
}

static const double initial_d[4] = {1, 2, 3, 4};

Test(variables, graph_shape_and_names) {
  struct fixture f = make_fixture();
  cr_expect_str_eq(weft_node_name(f.weights.node), "weights");
  cr_expect_str_eq(weft_node_op_type(f.weights.node), "Variable");
  cr_expect_str_eq(weft_node_name(f.init), "weights/initializer");
  cr_expect_str_eq(weft_node_op_type(f.init), "Assign");
  cr_expect_eq(weft_output_dtype(f.weights), WEFT_FLOAT32);
  int64_t dims[2];
  int32_t rank;
  WT_OK(weft_output_shape(f.weights, dims, 2, &rank));
  cr_expect_eq(rank, 2);
  cr_expect_eq(dims[0], 2);
  cr_expect_eq(dims[1], 2);
  weft_graph_destroy(f.graph);
}

Test(variables, initialize_then_read) {
  struct fixture f = make_fixture();
  weft_session* session = wt_session_new(f.graph, NULL);
  wt_run_targets(session, &f.init, 1);
  expect_read(session, f.weights, initial_d);
  expect_read(session, f.weights, initial_d);
  weft_session_destroy(session);
  weft_graph_destroy(f.graph);
}

Test(variables, read_before_initialization_fails) {
  struct fixture f = make_fixture();
  weft_output doubled = wt_apply2(f.graph, "Add", "doubled", f.weights,
                                  f.weights);
  weft_session* session = wt_session_new(f.graph, NULL);
  weft_tensor* out = (weft_tensor*)&out;
  WT_EXPECT_ERROR(weft_session_run(session, NULL, NULL, 0, &f.weights, 1,
                                   NULL, 0, &out),
                  WEFT_FAILED_PRECONDITION, "weights");
  cr_expect_null(out);
  WT_EXPECT_ERROR(weft_session_run(session, NULL, NULL, 0, &doubled, 1, NULL,
                                   0, &out),
                  WEFT_FAILED_PRECONDITION, "weights");
  /* The failure is not sticky. */
  wt_run_targets(session, &f.init, 1);
  expect_read(session, f.weights, initial_d);
  weft_session_destroy(session);
  weft_graph_destroy(f.graph);
}

Test(variables, assign_replaces_and_outputs_the_new_value) {
  struct fixture f = make_fixture();
  float replacement[4] = {9, 8, 7, 6};
  weft_output value =
      wt_const_f32(f.graph, "replacement", WT_SHAPE(2, 2), replacement);
  weft_output assign =
      wt_apply2(f.graph, "Assign", "overwrite", f.weights, value);
  weft_session* session = wt_session_new(f.graph, NULL);
  wt_run_targets(session, &f.init, 1);
  const double expected[4] = {9, 8, 7, 6};
  weft_tensor* out = wt_run1(session, NULL, NULL, 0, assign);
  wt_expect_f32(out, expected, 4, 0, 0);
  weft_tensor_destroy(out);
  expect_read(session, f.weights, expected);

  /* Running the initializer again puts the initial value back. */
  wt_run_targets(session, &f.init, 1);
  expect_read(session, f.weights, initial_d);
  weft_session_destroy(session);
  weft_graph_destroy(f.graph);
}

Test(variables, assign_add_accumulates_across_runs) {
  struct fixture f = make_fixture();
  float step_values[4] = {0.5f, -1, 2, 0};
  weft_output step = wt_const_f32(f.graph, "step", WT_SHAPE(2, 2), step_values);
  weft_output bump = wt_apply2(f.graph, "AssignAdd", "bump", f.weights, step);
  weft_session* session = wt_session_new(f.graph, NULL);
  wt_run_targets(session, &f.init, 1);
  for (int run = 1; run <= 3; ++run) {
    double expected[4];
    for (int i = 0; i < 4; ++i) expected[i] = initial[i] + run * step_values[i];
    weft_tensor* out = wt_run1(session, NULL, NULL, 0, bump);
    wt_expect_f32(out, expected, 4, 0, 0);
    weft_tensor_destroy(out);
    expect_read(session, f.weights, expected);
  }
  weft_session_destroy(session);
  weft_graph_destroy(f.graph);
}

Test(variables, assign_add_of_a_fed_value) {
  weft_graph* graph = wt_graph_new();
  int32_t zero[3] = {0, 0, 0};
  weft_output start = wt_const(graph, "start",
                               wt_tensor(WEFT_INT32, WT_SHAPE(3), zero));
  weft_output total;
  weft_node* init;
  WT_OK(weft_graph_variable(graph, "total", start, &total, &init));
  weft_output amount =
      wt_placeholder(graph, "amount", WEFT_INT32, WT_SHAPE(3));
  weft_output add = wt_apply2(graph, "AssignAdd", "accumulate", total, amount);
  weft_session* session = wt_session_new(graph, NULL);
  wt_run_targets(session, &init, 1);
  int32_t sums[3] = {0, 0, 0};
  for (int32_t run = 1; run <= 4; ++run) {
    int32_t fed_values[3] = {run, -run * 10, 1000000};
    weft_tensor* fed = wt_tensor(WEFT_INT32, WT_SHAPE(3), fed_values);
    WT_OK(weft_session_run(session, &amount, &fed, 1, NULL, 0, &add.node, 1,
                           NULL));
    weft_tensor_destroy(fed);
    for (int i = 0; i < 3; ++i) sums[i] += fed_values[i];
  }
  weft_tensor* out = wt_run1(session, NULL, NULL, 0, total);
  wt_expect_shape(out, WEFT_INT32, WT_SHAPE(3));
  for (int i = 0; i < 3; ++i)
    cr_expect_eq(((const int32_t*)weft_tensor_data(out))[i], sums[i]);
  weft_tensor_destroy(out);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(variables, each_session_has_its_own_state) {
  struct fixture f = make_fixture();
  float ones[4] = {1, 1, 1, 1};
  weft_output step = wt_const_f32(f.graph, "ones", WT_SHAPE(2, 2), ones);
  weft_output bump = wt_apply2(f.graph, "AssignAdd", "bump", f.weights, step);
  weft_session* a = wt_session_new(f.graph, NULL);
  weft_session* b = wt_session_new(f.graph, NULL);
  wt_run_targets(a, &f.init, 1);
  wt_run_targets(a, &bump.node, 1);

  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(b, NULL, NULL, 0, &f.weights, 1, NULL, 0,
                                   &out),
                  WEFT_FAILED_PRECONDITION, "weights");
  wt_run_targets(b, &f.init, 1);
  expect_read(b, f.weights, initial_d);
  const double bumped[4] = {2, 3, 4, 5};
  expect_read(a, f.weights, bumped);
  weft_session_destroy(a);
  weft_session_destroy(b);
  weft_graph_destroy(f.graph);
}

Test(variables, state_outlives_the_graph_handle) {
  struct fixture f = make_fixture();
  weft_session* session = wt_session_new(f.graph, NULL);
  wt_run_targets(session, &f.init, 1);
  weft_output weights = f.weights;
  weft_graph_destroy(f.graph);
  expect_read(session, weights, initial_d);
  weft_session_destroy(session);
}

Test(variables, bad_assignments_are_refused_at_build_time) {
  struct fixture f = make_fixture();
  int32_t before = weft_graph_node_count(f.graph);
  float three[3] = {1, 2, 3};
  weft_output wrong_shape =
      wt_const_f32(f.graph, "wrong_shape", WT_SHAPE(3), three);
  int32_t ints[4] = {1, 2, 3, 4};
  weft_output wrong_dtype = wt_const(
      f.graph, "wrong_dtype", wt_tensor(WEFT_INT32, WT_SHAPE(2, 2), ints));
  before += 2;
  weft_output out;
  weft_output shape_inputs[2] = {f.weights, wrong_shape};
  WT_EXPECT_ERROR(weft_graph_apply(f.graph, "Assign", "misfit_assign",
                                   shape_inputs, 2, &out),
                  WEFT_INVALID_ARGUMENT, "misfit_assign");
  weft_output dtype_inputs[2] = {f.weights, wrong_dtype};
  WT_EXPECT_ERROR(weft_graph_apply(f.graph, "AssignAdd", "misfit_add",
                                   dtype_inputs, 2, &out),
                  WEFT_INVALID_ARGUMENT, "misfit_add");
  /* Only a variable can be assigned to. */
  float four[4] = {0};
  weft_output constant =
      wt_const_f32(f.graph, "not_a_variable", WT_SHAPE(2, 2), four);
  before += 1;
  weft_output const_inputs[2] = {constant, constant};
  WT_EXPECT_ERROR(weft_graph_apply(f.graph, "Assign", "const_assign",
                                   const_inputs, 2, &out),
                  WEFT_INVALID_ARGUMENT, "const_assign");
  cr_expect_eq(weft_graph_node_count(f.graph), before);
  weft_graph_destroy(f.graph);
}

Test(variables, initial_value_needs_a_known_shape) {
  weft_graph* graph = wt_graph_new();
  weft_output partial =
      wt_placeholder(graph, "partial", WEFT_FLOAT32, WT_SHAPE(-1, 3));
  weft_output v;
  WT_EXPECT_ERROR(weft_graph_variable(graph, "shapeless_var", partial, &v,
                                      NULL),
                  WEFT_INVALID_ARGUMENT, "shapeless_var");
  cr_expect_null(weft_graph_node_by_name(graph, "shapeless_var"));
  weft_graph_destroy(graph);
}
