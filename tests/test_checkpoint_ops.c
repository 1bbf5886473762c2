/* Save and RestoreTensor as ops (issue 15): a graph writes checkpoints in
 * the format weft_checkpoint_save writes, from a run or from every
 * iteration of a loop, and reads entries back.  Public API only. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

static weft_node* save_node(weft_graph* g, const char* name, const char* path,
                            weft_output step, const weft_output* values,
                            int n) {
  weft_op_builder* b = weft_op_begin(g, "Save", name);
  weft_op_add_input(b, step);
  for (int i = 0; i < n; ++i) weft_op_add_input(b, values[i]);
  weft_op_set_attr_string(b, "path", path);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return node;
}

static weft_output restore_node(weft_graph* g, const char* path,
                                const char* entry, weft_dtype dtype,
                                const int64_t* dims, int32_t rank,
                                weft_status** status) {
  weft_op_builder* b = weft_op_begin(g, "RestoreTensor", NULL);
  weft_op_set_attr_string(b, "path", path);
  weft_op_set_attr_string(b, "name", entry);
  weft_op_set_attr_dtype(b, "dtype", dtype);
  weft_op_set_attr_shape(b, "shape", dims, rank);
  weft_node* node = NULL;
  *status = weft_op_finish(b, &node);
  return (weft_output){node, 0};
}

/* A run's Save writes the variables (path with {step}), which
 * weft_checkpoint_restore reads back into a fresh session; RestoreTensor
 * reads an entry of it, and refuses a wrong dtype or a missing name. */
Test(checkpoint_ops, save_in_a_run_and_restore) {
  char dir[] = "/tmp/weft-ckops-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char pattern[256], path[256];
  snprintf(pattern, sizeof pattern, "%s/model-{step}.ckpt", dir);
  snprintf(path, sizeof path, "%s/model-7.ckpt", dir);
  weft_graph* g = wt_graph_new();
  const float init[3] = {1.5f, -2, 4};
  weft_output v;
  weft_node* v_init = NULL;
  WT_OK(weft_graph_variable(g, "v", wt_const_f32(g, "v0", WT_SHAPE(3), init),
                            &v, &v_init));
  const int64_t seven = 7;
  weft_output step = wt_const(g, "step", wt_tensor(WEFT_INT64, NULL, 0, &seven));
  weft_node* save = save_node(g, "save", pattern, step, &v, 1);
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  wt_run_targets(s, &v_init, 1);
  wt_run_targets(s, &save, 1);
  cr_expect_eq(access(path, R_OK), 0, "no %s", path);
  weft_session_destroy(s);

  s = wt_session_new(g, "/device:CPU:0");
  WT_OK(weft_checkpoint_restore(s, path, NULL, 0));
  weft_tensor* got = wt_run1(s, NULL, NULL, 0, v);
  const double want[3] = {1.5, -2, 4};
  wt_expect_f32(got, want, 3, 0, 0);
  weft_tensor_destroy(got);
  weft_session_destroy(s);

  weft_graph* r = wt_graph_new();
  weft_status* st = NULL;
  weft_output back = restore_node(r, path, "v", WEFT_FLOAT32, WT_SHAPE(3), &st);
  WT_OK(st);
  weft_output wrong = restore_node(r, path, "v", WEFT_INT32, WT_SHAPE(3), &st);
  WT_OK(st);
  weft_output missing =
      restore_node(r, path, "w", WEFT_FLOAT32, WT_SHAPE(3), &st);
  WT_OK(st);
  s = wt_session_new(r, "/device:CPU:0");
  got = wt_run1(s, NULL, NULL, 0, back);
  wt_expect_f32(got, want, 3, 0, 0);
  weft_tensor_destroy(got);
  weft_tensor* none = NULL;
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &wrong, 1, NULL, 0, &none),
                  WEFT_INVALID_ARGUMENT, "'v'", "float32", "int32");
  WT_EXPECT_ERROR(
      weft_session_run(s, NULL, NULL, 0, &missing, 1, NULL, 0, &none),
      WEFT_NOT_FOUND, "'w'", "model-7.ckpt");
  weft_session_destroy(s);
  weft_graph_destroy(r);
  weft_graph_destroy(g);
  unlink(path);
  rmdir(dir);
}

struct loop_ctx {
  const char* pattern;
};

static weft_status* below_three(weft_graph* g, void* user,
                                const weft_output* vars, int32_t n,
                                weft_output* pred) {
  (void)user;
  (void)n;
  const int64_t three = 3;
  *pred = wt_apply2(g, "Less", NULL, vars[0],
                    wt_const(g, NULL, wt_tensor(WEFT_INT64, NULL, 0, &three)));
  return NULL;
}

/* Each iteration saves its counter and running value under the file of
 * its step, then moves on only after the save (a control input). */
static weft_status* save_each(weft_graph* g, void* user,
                              const weft_output* vars, int32_t n,
                              weft_output* next) {
  (void)n;
  struct loop_ctx* c = user;
  weft_node* save = save_node(g, NULL, c->pattern, vars[0], &vars[1], 1);
  const int64_t one = 1;
  const float two = 2;
  weft_op_builder* b = weft_op_begin(g, "Add", NULL);
  weft_op_add_input(b, vars[0]);
  weft_op_add_input(b, wt_const(g, NULL, wt_tensor(WEFT_INT64, NULL, 0, &one)));
  weft_op_add_control_input(b, save);
  weft_node* inc = NULL;
  WT_OK(weft_op_finish(b, &inc));
  next[0] = (weft_output){inc, 0};
  next[1] = wt_apply2(g, "Mul", NULL, vars[1],
                      wt_const(g, NULL, wt_tensor(WEFT_FLOAT32, NULL, 0, &two)));
  return NULL;
}

Test(checkpoint_ops, save_every_iteration_of_a_loop) {
  char dir[] = "/tmp/weft-ckloop-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char pattern[256];
  snprintf(pattern, sizeof pattern, "%s/it-{step}.ckpt", dir);
  weft_graph* g = wt_graph_new();
  const int64_t zero = 0;
  const float one = 1;
  weft_output init[2] = {
      wt_const(g, "i0", wt_tensor(WEFT_INT64, NULL, 0, &zero)),
      wt_const(g, "x0", wt_tensor(WEFT_FLOAT32, NULL, 0, &one))};
  struct loop_ctx c = {pattern};
  weft_output out[2];
  WT_OK(weft_while_loop(g, below_three, save_each, &c, init, 2, NULL, out));
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  weft_tensor* last = wt_run1(s, NULL, NULL, 0, out[1]);
  cr_expect_eq(*(const float*)weft_tensor_data(last), 8.f);
  weft_tensor_destroy(last);
  weft_session_destroy(s);
  /* it-0, it-1, it-2 hold x = 1, 2, 4, each under the name of the node
   * x came from in that iteration's frame. */
  for (int k = 0; k < 3; ++k) {
    char path[300];
    snprintf(path, sizeof path, "%s/it-%d.ckpt", dir, k);
    cr_expect_eq(access(path, R_OK), 0, "no %s", path);
    unlink(path);
  }
  rmdir(dir);
  weft_graph_destroy(g);
}

Test(checkpoint_ops, bad_input_is_refused) {
  weft_graph* g = wt_graph_new();
  const float x = 1;
  weft_output v = wt_const_f32(g, "x", NULL, 0, &x);
  weft_op_builder* b = weft_op_begin(g, "Save", "float_step");
  weft_op_add_input(b, v);  /* the step */
  weft_op_add_input(b, v);
  weft_op_set_attr_string(b, "path", "/tmp/x");
  weft_node* node = NULL;
  WT_EXPECT_ERROR(weft_op_finish(b, &node), WEFT_INVALID_ARGUMENT,
                  "'float_step'", "int64");
  const int64_t step = 1;
  weft_output st = wt_const(g, "step", wt_tensor(WEFT_INT64, NULL, 0, &step));
  /* A path that is a directory is refused, and nothing is left there. */
  char dir[] = "/tmp/weft-ckbad-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  weft_node* save = save_node(g, "save_dir", dir, st, &v, 1);
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, NULL, 0, &save, 1, NULL),
                  WEFT_FAILED_PRECONDITION, "save_dir");
  weft_session_destroy(s);
  cr_expect_eq(rmdir(dir), 0, "the directory was left with files in it");
  weft_graph_destroy(g);
}
