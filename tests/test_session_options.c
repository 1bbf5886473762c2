/* Session options: defaults, validation and the struct_size rule on an
 * input struct (the library reads only what the caller's size covers). */
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_output build(weft_graph* graph) {
  weft_output c = wt_const(graph, "c", wt_scalar_f32(4));
  return wt_apply1(graph, "Neg", "neg", c);
}

static void expect_runs(weft_session* session, weft_output fetch) {
  weft_tensor* out = wt_run1(session, NULL, NULL, 0, fetch);
  cr_expect_eq(*(const float*)weft_tensor_data(out), -4.0f);
  weft_tensor_destroy(out);
}

Test(session_options, init_sets_size_and_defaults) {
  weft_session_options options;
  memset(&options, 0x5A, sizeof options);
  weft_session_options_init(&options);
  cr_expect_eq(options.struct_size, sizeof options);
  cr_expect(options.devices == NULL || options.devices[0] == '\0');
  cr_expect_eq(options.inter_op_threads, 0);
  cr_expect_eq(options.intra_op_threads, 0);
}

Test(session_options, null_options_mean_defaults) {
  weft_graph* graph = wt_graph_new();
  weft_output fetch = build(graph);
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, NULL, &session));
  expect_runs(session, fetch);
  weft_session_destroy(session);
  weft_session_destroy(NULL);
  weft_graph_destroy(graph);
}

Test(session_options, explicit_thread_counts) {
  weft_graph* graph = wt_graph_new();
  weft_output fetch = build(graph);
  weft_session_options options;
  weft_session_options_init(&options);
  options.inter_op_threads = 1;
  options.intra_op_threads = 1;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  expect_runs(session, fetch);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

/* A caller built against a header that had only `devices`: the thread
 * fields beyond its struct_size hold garbage the library must not read. */
Test(session_options, fields_beyond_struct_size_are_ignored) {
  weft_graph* graph = wt_graph_new();
  weft_output fetch = build(graph);
  weft_session_options options;
  weft_session_options_init(&options);
  options.struct_size = offsetof(weft_session_options, inter_op_threads);
  options.devices = "CPU";
  options.inter_op_threads = -12345;
  options.intra_op_threads = -12345;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  expect_runs(session, fetch);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

Test(session_options, bad_values_are_refused) {
  weft_graph* graph = wt_graph_new();
  weft_session_options options;
  weft_session_options_init(&options);
  options.inter_op_threads = -1;
  weft_session* session = NULL;
  WT_EXPECT_ERROR(weft_session_create(graph, &options, &session),
                  WEFT_INVALID_ARGUMENT, "inter_op_threads");
  weft_session_options_init(&options);
  options.intra_op_threads = -3;
  WT_EXPECT_ERROR(weft_session_create(graph, &options, &session),
                  WEFT_INVALID_ARGUMENT, "intra_op_threads");
  weft_session_options_init(&options);
  options.struct_size = 0;
  WT_EXPECT_CODE(weft_session_create(graph, &options, &session),
                 WEFT_INVALID_ARGUMENT);
  weft_graph_destroy(graph);
}

Test(session_options, device_patterns) {
  weft_graph* graph = wt_graph_new();
  weft_output fetch = build(graph);
  static const char* const patterns[] = {"/device:CPU:0", "/device:CPU:*",
                                         "CPU", "/device:CPU:0,CPU"};
  for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; ++i) {
    weft_session_options options;
    weft_session_options_init(&options);
    options.devices = patterns[i];
    weft_session* session = NULL;
    WT_OK(weft_session_create(graph, &options, &session));
    expect_runs(session, fetch);
    weft_session_destroy(session);
  }
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "/device:CPU:99";
  weft_session* session = NULL;
  WT_EXPECT_CODE(weft_session_create(graph, &options, &session),
                 WEFT_NOT_FOUND);
  weft_graph_destroy(graph);
}
