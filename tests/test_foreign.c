/* ForeignCall (runtime/ops/foreign.cc): a graph calls plain C functions
 * through libffi.  libm's erf mapped over a tensor; a tensor "filter"
 * (pointer + count in, an output the runtime allocates); an int64 scalar
 * function; a status result that fails the run with the function's code;
 * and the errors at build time: a library that does not exist, a missing
 * symbol, signatures that do not parse or do not match the inputs. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_status* foreign(weft_graph* g, const char* name,
                            const char* library, const char* symbol,
                            const char* signature, const weft_output* args,
                            int32_t n, weft_node** out) {
  weft_op_builder* b = weft_op_begin(g, "ForeignCall", name);
  for (int32_t i = 0; i < n; ++i) weft_op_add_input(b, args[i]);
  weft_op_set_attr_string(b, "library", library);
  weft_op_set_attr_string(b, "symbol", symbol);
  weft_op_set_attr_string(b, "signature", signature);
  return weft_op_finish(b, out);
}

Test(foreign, libm_erf_maps_over_a_tensor) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_DIMS(5), 1);
  weft_node* n = NULL;
  WT_OK(foreign(g, "erf", "libm.so.6", "erf", "float64(float64)", &x, 1, &n));
  /* And in a graph with other ops after it. */
  weft_output y = wt_apply1(g, "Neg", "neg", (weft_output){n, 0});
  weft_session* s = wt_session_new(g, "CPU");
  const double in[5] = {-2, -0.5, 0, 0.3, 1.7};
  weft_tensor* t = wt_tensor(WEFT_FLOAT64, WT_DIMS(5), 1, in);
  weft_tensor* out = wt_run1(s, &x, &t, 1, y);
  wt_expect_shape(out, WEFT_FLOAT64, WT_DIMS(5), 1);
  const double* v = weft_tensor_data(out);
  for (int i = 0; i < 5; ++i)
    cr_expect_eq(v[i], -erf(in[i]), "element %d: %.17g, want %.17g", i, v[i],
                 -erf(in[i]));
  weft_tensor_destroy(out);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(foreign, tensor_filter_and_scalar_functions_from_a_library) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(2, 3), 2);
  weft_output k = wt_placeholder(g, "k", WEFT_FLOAT32, NULL, 0);
  weft_output args[2] = {x, k};
  weft_node* scale = NULL;
  WT_OK(foreign(g, "scale", WEFT_TEST_FOREIGN_LIB, "weft_test_scale",
                "void(const float32*, float32, float32*)", args, 2, &scale));
  weft_output v = wt_placeholder(g, "v", WEFT_INT64, WT_DIMS(3), 1);
  weft_node* twice = NULL;
  WT_OK(foreign(g, "twice", WEFT_TEST_FOREIGN_LIB, "weft_test_twice",
                "int64(int64)", &v, 1, &twice));
  weft_session* s = wt_session_new(g, "CPU");
  const float xv[6] = {1, 2, 3, -1, 0, 0.5f};
  const float kv = 2;
  const int64_t vv[3] = {-4, 0, 21};
  weft_tensor* vals[3] = {wt_tensor(WEFT_FLOAT32, WT_DIMS(2, 3), 2, xv),
                          wt_tensor(WEFT_FLOAT32, NULL, 0, &kv),
                          wt_tensor(WEFT_INT64, WT_DIMS(3), 1, vv)};
  weft_output feeds[3] = {x, k, v};
  weft_output fetches[2] = {{scale, 0}, {twice, 0}};
  weft_tensor* out[2] = {NULL, NULL};
  WT_OK(weft_session_run(s, feeds, vals, 3, fetches, 2, NULL, 0, out));
  wt_expect_shape(out[0], WEFT_FLOAT32, WT_DIMS(2, 3), 2);
  const float* o = weft_tensor_data(out[0]);
  for (int i = 0; i < 6; ++i) cr_expect_eq(o[i], 2 * xv[i] + 1);
  const int64_t* t = weft_tensor_data(out[1]);
  for (int i = 0; i < 3; ++i) cr_expect_eq(t[i], 2 * vv[i]);
  for (int i = 0; i < 2; ++i) weft_tensor_destroy(out[i]);
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(vals[i]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(foreign, a_status_result_fails_the_run_with_the_code) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_DIMS(4), 1);
  weft_node* check = NULL;
  WT_OK(foreign(g, "check", WEFT_TEST_FOREIGN_LIB,
                "weft_test_all_nonnegative", "status(const float64*)", &x, 1,
                &check));
  weft_session* s = wt_session_new(g, "CPU");
  const double good[4] = {0, 1, 2, 3}, bad[4] = {0, 1, -2, 3};
  weft_tensor* t = wt_tensor(WEFT_FLOAT64, WT_DIMS(4), 1, good);
  WT_OK(weft_session_run(s, &x, &t, 1, NULL, 0, &check, 1, NULL));
  weft_tensor_destroy(t);
  t = wt_tensor(WEFT_FLOAT64, WT_DIMS(4), 1, bad);
  weft_status* st = weft_session_run(s, &x, &t, 1, NULL, 0, &check, 1, NULL);
  cr_assert(st != NULL, "a nonzero status was not reported");
  cr_expect(strstr(weft_status_message(st), "check") &&
                strstr(weft_status_message(st), "weft_test_all_nonnegative") &&
                strstr(weft_status_message(st), "returned 3"),
            "message: %s", weft_status_message(st));
  weft_status_destroy(st);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

static void expect_refused(const char* library, const char* symbol,
                           const char* signature, weft_dtype dtype,
                           int32_t inputs, weft_code code,
                           const char* mentions) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", dtype, WT_DIMS(3), 1);
  weft_output args[2] = {x, x};
  weft_node* n = NULL;
  weft_status* st = foreign(g, "f", library, symbol, signature, args, inputs,
                            &n);
  cr_assert(st != NULL, "%s %s '%s' was accepted", library, symbol,
            signature);
  cr_expect_eq(weft_status_code(st), code, "%s: code %d", signature,
               weft_status_code(st));
  cr_expect(strstr(weft_status_message(st), mentions) != NULL,
            "message for '%s': %s (expected to mention '%s')", signature,
            weft_status_message(st), mentions);
  weft_status_destroy(st);
  weft_graph_destroy(g);
}

Test(foreign, bad_calls_are_refused_when_the_graph_is_built) {
  expect_refused("libweft-no-such-library.so.9", "f", "float64(float64)",
                 WEFT_FLOAT64, 1, WEFT_NOT_FOUND, "libweft-no-such-library");
  expect_refused("libm.so.6", "no_such_function_anywhere", "float64(float64)",
                 WEFT_FLOAT64, 1, WEFT_NOT_FOUND, "no_such_function_anywhere");
  expect_refused("libm.so.6", "erf", "float65(float64)", WEFT_FLOAT64, 1,
                 WEFT_INVALID_ARGUMENT, "float65");
  expect_refused("libm.so.6", "erf", "float64 float64", WEFT_FLOAT64, 1,
                 WEFT_INVALID_ARGUMENT, "RESULT(ARG");
  expect_refused("libm.so.6", "erf", "float64(const float64)", WEFT_FLOAT64,
                 1, WEFT_INVALID_ARGUMENT, "not a pointer");
  expect_refused("libm.so.6", "erf", "float64(float64)", WEFT_FLOAT32, 1,
                 WEFT_INVALID_ARGUMENT, "float32");
  expect_refused("libm.so.6", "erf", "float64(float64)", WEFT_FLOAT64, 2,
                 WEFT_INVALID_ARGUMENT, "takes 1 inputs");
}
