/* The plugin loader refuses what is not a usable plugin, says why, records
 * the refusal, and keeps the good plugins working.  Criterion runs each
 * test in its own process, so every test starts from an unloaded library.
 * The test plugins are built in tests/plugins/, off the search path, and
 * reach the test by path only. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_support.h"
#include "weft/plugin.h" /* WEFT_PLUGIN_ENTRY_NAME */

#ifndef WEFT_TEST_PLUGIN_V2
#error "the build passes the test plugins' paths"
#endif

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* The reason recorded for `path`, or NULL when it was not refused. */
static const char* refusal_reason(const char* path) {
  for (int32_t i = 0; i < weft_plugin_refusal_count(); ++i) {
    const char* refused = NULL;
    const char* reason = NULL;
    WT_OK(weft_plugin_refusal(i, &refused, &reason));
    cr_assert_not_null(refused);
    cr_assert_not_null(reason);
    if (strstr(refused, base_name(path)) != NULL) return reason;
  }
  return NULL;
}

static void expect_refusal_recorded(const char* path, const char* needle) {
  const char* reason = refusal_reason(path);
  cr_assert_not_null(reason, "no refusal recorded for %s", path);
  cr_expect_gt(strlen(reason), 0, "refusal of %s has no reason", path);
  if (needle != NULL)
    cr_expect(strstr(reason, needle) != NULL,
              "refusal of %s does not say \"%s\": %s", path, needle, reason);
}

/* The good CPU plugin still runs a graph. */
static void expect_runtime_still_works(void) {
  weft_graph* graph = wt_graph_new();
  float values[4] = {-2, -1, 1, 2};
  weft_output x = wt_const_f32(graph, "x", WT_SHAPE(4), values);
  weft_output y = wt_apply1(graph, "Relu", "y", x);
  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* out = wt_run1(session, NULL, NULL, 0, y);
  double expected[4] = {0, 0, 1, 2};
  wt_expect_f32(out, expected, 4, 0, 0);
  weft_tensor_destroy(out);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

static int32_t cpu_device_count(void) {
  int32_t count = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    count += strcmp(d.type, "CPU") == 0;
  }
  return count;
}

static void discover(void) {
  WT_OK(weft_plugins_discover());
  cr_assert_gt(cpu_device_count(), 0,
               "no CPU device: is WEFT_PLUGIN_PATH set by the build?");
}

Test(plugin_loader, missing_file_is_not_found) {
  discover();
  int32_t plugins = weft_plugin_count();
  const char* path = "/nonexistent/weft/libweft_no_such_plugin.so";
  WT_EXPECT_ERROR(weft_plugin_load(path), WEFT_NOT_FOUND,
                  "libweft_no_such_plugin.so");
  cr_expect_eq(weft_plugin_count(), plugins);
  expect_runtime_still_works();
}

Test(plugin_loader, text_file_is_refused) {
  discover();
  int32_t plugins = weft_plugin_count();
  int32_t devices = weft_device_count();
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_NOT_A_PLUGIN),
                  WEFT_INVALID_ARGUMENT, "not_a_plugin.txt");
  expect_refusal_recorded(WEFT_TEST_NOT_A_PLUGIN, NULL);
  cr_expect_eq(weft_plugin_count(), plugins);
  cr_expect_eq(weft_device_count(), devices);
  expect_runtime_still_works();
}

Test(plugin_loader, shared_object_without_entry_is_refused) {
  discover();
  int32_t plugins = weft_plugin_count();
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_NO_ENTRY),
                  WEFT_INVALID_ARGUMENT, WEFT_PLUGIN_ENTRY_NAME);
  expect_refusal_recorded(WEFT_TEST_PLUGIN_NO_ENTRY, WEFT_PLUGIN_ENTRY_NAME);
  cr_expect_eq(weft_plugin_count(), plugins);
  expect_runtime_still_works();
}

Test(plugin_loader, other_interface_major_is_refused_naming_both) {
  discover();
  int32_t plugins = weft_plugin_count();
  uint32_t min = 0, max = 0;
  weft_plugin_interface_range(&min, &max);
  cr_assert_eq(WEFT_VERSION_MAJOR_OF(max), 1,
               "this test assumes a host of interface 1.x");
  char host[32];
  snprintf(host, sizeof host, "%u.%u", WEFT_VERSION_MAJOR_OF(max),
           WEFT_VERSION_MINOR_OF(max));
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_V2),
                  WEFT_FAILED_PRECONDITION, "2.0", host);
  expect_refusal_recorded(WEFT_TEST_PLUGIN_V2, "2.0");
  cr_expect_eq(weft_plugin_count(), plugins);
  expect_runtime_still_works();
}

Test(plugin_loader, entry_error_is_passed_on) {
  discover();
  int32_t plugins = weft_plugin_count();
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_FAILS), WEFT_UNAVAILABLE,
                  "refuses on purpose");
  expect_refusal_recorded(WEFT_TEST_PLUGIN_FAILS, "refuses on purpose");
  cr_expect_eq(weft_plugin_count(), plugins);
  expect_runtime_still_works();
}

Test(plugin_loader, every_refusal_in_a_row_then_still_working) {
  discover();
  int32_t plugins = weft_plugin_count();
  int32_t devices = weft_device_count();
  int32_t refusals = weft_plugin_refusal_count();
  const char* bad[] = {WEFT_TEST_NOT_A_PLUGIN, WEFT_TEST_PLUGIN_NO_ENTRY,
                       WEFT_TEST_PLUGIN_V2, WEFT_TEST_PLUGIN_FAILS};
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
      weft_status* status = weft_plugin_load(bad[i]);
      cr_expect_not_null(status, "%s loaded on round %d", bad[i], round);
      weft_status_destroy(status);
    }
  }
  cr_expect_geq(weft_plugin_refusal_count(), refusals + 4);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
    expect_refusal_recorded(bad[i], NULL);
  cr_expect_eq(weft_plugin_count(), plugins);
  cr_expect_eq(weft_device_count(), devices);
  expect_runtime_still_works();
}

Test(plugin_loader, refusal_index_out_of_range) {
  discover();
  const char* path = NULL;
  const char* reason = NULL;
  WT_EXPECT_CODE(weft_plugin_refusal(weft_plugin_refusal_count(), &path,
                                     &reason),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_plugin_refusal(-1, &path, &reason),
                 WEFT_INVALID_ARGUMENT);
}

Test(plugin_loader, loading_a_loaded_plugin_again_is_a_no_op) {
  discover();
  int32_t plugins = weft_plugin_count();
  int32_t devices = weft_device_count();
  WT_OK(weft_plugin_load(WEFT_TEST_CPU_PLUGIN));
  WT_OK(weft_plugin_load(WEFT_TEST_CPU_PLUGIN));
  /* The same file under another spelling of its path. */
  char respelled[4096];
  const char* name = base_name(WEFT_TEST_CPU_PLUGIN);
  snprintf(respelled, sizeof respelled, "%.*s/./%s",
           (int)(name - WEFT_TEST_CPU_PLUGIN - 1), WEFT_TEST_CPU_PLUGIN, name);
  WT_OK(weft_plugin_load(respelled));
  cr_expect_eq(weft_plugin_count(), plugins);
  cr_expect_eq(weft_device_count(), devices);
  expect_runtime_still_works();
}

/* Explicit loading before discovery, then discovery finding the same file
 * on the search path, must not give two CPU plugins. */
Test(plugin_loader, explicit_load_then_discovery) {
  WT_OK(weft_plugin_load(WEFT_TEST_CPU_PLUGIN));
  cr_expect_geq(weft_plugin_count(), 1);
  int32_t cpu_devices = cpu_device_count();
  cr_expect_gt(cpu_devices, 0);
  WT_OK(weft_plugins_discover());
  int32_t cpu_plugins = 0;
  for (int32_t i = 0; i < weft_plugin_count(); ++i) {
    weft_plugin_description d = {.struct_size = sizeof d};
    WT_OK(weft_plugin_describe(i, &d));
    cpu_plugins += strcmp(d.device_type, "CPU") == 0 &&
                   strcmp(base_name(d.path), base_name(WEFT_TEST_CPU_PLUGIN)) ==
                       0;
  }
  cr_expect_eq(cpu_plugins, 1, "the CPU plugin is loaded %d times",
               cpu_plugins);
  cr_expect_eq(cpu_device_count(), cpu_devices);
  expect_runtime_still_works();
}

/* A plugin with no hardware loads, reports zero devices and why, and
 * changes nothing for the rest (its Relu kernel has no device to run on). */
Test(plugin_loader, plugin_without_devices_loads_and_says_why) {
  discover();
  int32_t plugins = weft_plugin_count();
  int32_t devices = weft_device_count();
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_NO_DEVICE));
  cr_assert_eq(weft_plugin_count(), plugins + 1);
  cr_expect_eq(weft_device_count(), devices);

  int found = 0;
  for (int32_t i = 0; i < weft_plugin_count(); ++i) {
    weft_plugin_description d = {.struct_size = sizeof d};
    WT_OK(weft_plugin_describe(i, &d));
    if (strcmp(d.name, "weft-test-nodevice") != 0) continue;
    found = 1;
    cr_expect_str_eq(d.version, "0.0.1");
    cr_expect_str_eq(d.device_type, "NULLDEV");
    cr_expect_eq(d.device_count, 0);
    cr_expect_eq(d.interface_version, WEFT_VERSION_PACK(1, 0));
    cr_expect(strstr(d.path, base_name(WEFT_TEST_PLUGIN_NO_DEVICE)) != NULL,
              "path %s", d.path);
    cr_expect(strstr(d.no_device_reason, "no NULLDEV hardware") != NULL,
              "no_device_reason: \"%s\"", d.no_device_reason);
  }
  cr_expect(found, "the loaded plugin is not described");

  weft_graph* graph = wt_graph_new();
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "/device:NULLDEV:0";
  weft_session* session = NULL;
  /* The error says why there is no such device: what its plugin said, or
   * that no plugin provides the type. */
  const struct {
    const char* devices;
    const char* why;
  } cases[] = {
      {"/device:NULLDEV:0", "weft-test-nodevice"},
      {"NULLDEV:*", "no NULLDEV hardware: this test plugin never has any"},
      {"nulldev", "found no device: no NULLDEV hardware"},
      {"FPGA", "no plugin loaded provides device type 'FPGA'"},
      {"CPU,/device:FPGA:1", "no plugin loaded provides device type 'FPGA'"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    options.devices = cases[c].devices;
    weft_status* st = weft_session_create(graph, &options, &session);
    cr_assert_not_null(st, "%s", cases[c].devices);
    cr_expect_eq(weft_status_code(st), WEFT_NOT_FOUND);
    cr_expect(strstr(weft_status_message(st), cases[c].why) != NULL,
              "%s: \"%s\" does not say \"%s\"", cases[c].devices,
              weft_status_message(st), cases[c].why);
    weft_status_destroy(st);
  }
  /* A device type that has devices, asked for by an index it lacks, says
   * which devices there are and no more. */
  options.devices = "/device:CPU:7";
  weft_status* st = weft_session_create(graph, &options, &session);
  cr_assert_not_null(st);
  cr_expect(strstr(weft_status_message(st), "/device:CPU:0") != NULL &&
                strstr(weft_status_message(st), "plugin") == NULL,
            "%s", weft_status_message(st));
  weft_status_destroy(st);
  weft_graph_destroy(graph);
  expect_runtime_still_works();
}

/* A plugin (interface 1.1) gives the gradient of Square through the host's
 * graph table: weft_gradients() then builds the plugin's nodes, and they
 * compute 2 x dy. */
Test(plugin_loader, plugin_gradient_replaces_the_library_one) {
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_GRADIENT));
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(3));
  weft_output y = wt_apply1(g, "Square", "sq", x);
  weft_output dx = {NULL, 0};
  WT_OK(weft_gradients(g, &y, 1, &x, 1, NULL, &dx));
  cr_assert_not_null(dx.node);
  cr_expect_not_null(strstr(weft_node_name(dx.node), "sq/plugin_grad_sum"),
                     "the gradient is %s, not the plugin's",
                     weft_node_name(dx.node));
  weft_session* s = wt_session_new(g, "CPU");
  float xv[3] = {1.5f, -2.0f, 0.25f};
  weft_tensor* xt = wt_tensor(WEFT_FLOAT32, WT_SHAPE(3), xv);
  weft_tensor* got = wt_run1(s, &x, &xt, 1, dx);
  const float* v = weft_tensor_data(got);
  for (int i = 0; i < 3; ++i) cr_expect_float_eq(v[i], 2 * xv[i], 1e-6);
  for (int32_t i = 0; i < weft_plugin_count(); ++i) {
    weft_plugin_description d = {.struct_size = sizeof d};
    WT_OK(weft_plugin_describe(i, &d));
    if (strcmp(d.name, "weft-test-gradient") == 0)
      cr_expect_eq(d.interface_version, WEFT_VERSION_PACK(1, 1));
  }
  weft_tensor_destroy(got);
  weft_tensor_destroy(xt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* A kernel definition sized as interface 1.1 sent it (weft-test-nodevice's
 * Relu stops before type_constraints) registers with its one constraint,
 * and nothing the host might read past its end. */
Test(plugin_loader, kernel_def_of_an_older_plugin_registers_unchanged) {
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_NO_DEVICE));
  int found = 0;
  for (int32_t i = 0; i < weft_kernel_count("Relu"); ++i) {
    weft_kernel_description k = {.struct_size = sizeof k};
    WT_OK(weft_kernel_describe("Relu", i, &k));
    if (strcmp(k.plugin, "weft-test-nodevice") != 0) continue;
    found = 1;
    cr_expect_str_eq(k.dtype_attr, "T");
    cr_assert_eq(k.num_dtypes, 1);
    cr_expect_eq(k.dtypes[0], WEFT_FLOAT32);
  }
  cr_expect(found, "weft-test-nodevice's Relu kernel is not registered");
}

/* ---- Hostile plugins (tests/plugins/plugin_hostile.c): each misbehaviour
 * must end in a refusal or an error naming the plugin, never in a crash, a
 * hang or a wrong answer. ---- */

static void load_hostile(const char* mode) {
  setenv("WEFT_TEST_HOSTILE", mode, 1);
}

/* Runs Relu of {-1, 2} with the Relu placed on `device`; returns the status
 * of the run and, on success, the output in out[2]. */
static weft_status* run_relu_on(const char* device, float out[2]) {
  weft_graph* graph = wt_graph_new();
  float values[2] = {-1, 2};
  weft_output x = wt_const_f32(graph, "x", WT_SHAPE(2), values);
  weft_op_builder* b = weft_op_begin(graph, "Relu", "y");
  weft_op_add_input(b, x);
  weft_op_set_device(b, device);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  weft_output y = {node, 0};
  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* result = NULL;
  weft_status* st = weft_session_run(session, NULL, NULL, 0, &y, 1, NULL, 0,
                                     &result);
  if (st == NULL) {
    cr_assert_not_null(result);
    memcpy(out, weft_tensor_data(result), 2 * sizeof(float));
    weft_tensor_destroy(result);
  }
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  return st;
}

Test(plugin_loader, second_plugin_of_a_device_type_is_refused_naming_both) {
  discover();
  int32_t cpus = cpu_device_count();
  load_hostile("cpu_impostor");
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE),
                  WEFT_ALREADY_EXISTS, "weft-test-impostor", "weft-cpu",
                  "CPU", "weft_test_hostile");
  expect_refusal_recorded(WEFT_TEST_PLUGIN_HOSTILE, "belongs to plugin");
  cr_expect_eq(cpu_device_count(), cpus);
  /* The impostor's Relu writes 42: /device:CPU:0 must still run weft-cpu's. */
  float out[2] = {0, 0};
  WT_OK(run_relu_on("/device:CPU:0", out));
  cr_expect(out[0] == 0 && out[1] == 2, "Relu gave %g %g", out[0], out[1]);
}

Test(plugin_loader, bad_device_types_are_refused) {
  discover();
  const char* bad[] = {
      "", "CPU:1", "A/B", "A,B", "with space", "TAB\t",
      "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"};
  load_hostile("device_type");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    setenv("WEFT_TEST_HOSTILE_ARG", bad[i], 1);
    WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE),
                    WEFT_INVALID_ARGUMENT, "weft-test-hostile",
                    "bad device_type");
  }
  /* A good one still loads, under its own numbering. */
  setenv("WEFT_TEST_HOSTILE_ARG", "HOSTILE_2", 1);
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE));
  float out[2] = {0, 0};
  WT_OK(run_relu_on("/device:HOSTILE_2:0", out));
  cr_expect(out[0] == 0 && out[1] == 2, "Relu gave %g %g", out[0], out[1]);
}

/* A kernel whose output disagrees with the graph's dtype or inferred shape
 * is an error naming node, plugin and both sides, not a value passed on. */
Test(plugin_loader, kernel_output_of_the_wrong_dtype_is_refused) {
  discover();
  load_hostile("wrong_output_dtype");
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE));
  float out[2];
  WT_EXPECT_ERROR(run_relu_on("/device:HOSTILE:0", out), WEFT_INTERNAL,
                  "weft-test-hostile", "produced output 0 as int32, expected "
                  "float32");
  expect_runtime_still_works();
}

Test(plugin_loader, kernel_output_of_the_wrong_shape_is_refused) {
  discover();
  load_hostile("wrong_output_shape");
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE));
  float out[2];
  WT_EXPECT_ERROR(run_relu_on("/device:HOSTILE:0", out), WEFT_INTERNAL,
                  "node 'y' (Relu)", "of shape [3] where [2] was inferred");
  expect_runtime_still_works();
}

Test(plugin_loader, null_allocation_handle_is_the_plugins_error) {
  discover();
  load_hostile("null_alloc");
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE));
  float out[2];
  WT_EXPECT_ERROR(run_relu_on("/device:HOSTILE:0", out), WEFT_INTERNAL,
                  "weft-test-hostile", "no memory handle");
  expect_runtime_still_works();
}

Test(plugin_loader, absurd_device_count_is_refused_at_once, .timeout = 20) {
  discover();
  load_hostile("huge_count");
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE),
                  WEFT_INVALID_ARGUMENT, "weft-test-hostile", "2147483647");
  expect_runtime_still_works();
}

Test(plugin_loader, some_but_not_all_collective_slots_are_refused) {
  discover();
  load_hostile("some_collectives");
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE),
                  WEFT_INVALID_ARGUMENT, "weft_test_hostile",
                  "collective_comm_create");
  expect_runtime_still_works();
}

Test(plugin_loader, unterminated_plugin_name_is_refused) {
  discover();
  load_hostile("unterminated_name");
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE),
                  WEFT_INVALID_ARGUMENT, "weft_test_hostile", "bad name");
}

Test(plugin_loader, unterminated_status_message_is_cut) {
  discover();
  load_hostile("unterminated_status");
  WT_EXPECT_ERROR(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE),
                  WEFT_UNAVAILABLE, "weft_test_hostile", "xxxxxxxx");
}

Test(plugin_loader, unterminated_device_description_is_dropped) {
  discover();
  load_hostile("unterminated_description");
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE));
  int found = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.type, "HOSTILE") != 0) continue;
    found = 1;
    cr_expect_str_empty(d.description);
    cr_expect_str_eq(d.vendor, "weft tests");
  }
  cr_expect(found, "the hostile device is missing");
}

Test(plugin_loader, registering_after_the_entry_returned_is_refused) {
  discover();
  load_hostile("late_register");
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE));
  /* The kernel tries a late registration and outputs the status code. */
  float out[2] = {0, 0};
  WT_OK(run_relu_on("/device:HOSTILE:0", out));
  cr_expect(out[0] == WEFT_FAILED_PRECONDITION &&
                out[1] == WEFT_FAILED_PRECONDITION,
            "late register_kernel gave code %g", out[0]);
  expect_runtime_still_works();
}

static char* temp_dir(void) {
  static char dir[] = "/tmp/weft_test_loader_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  return dir;
}

Test(plugin_loader, fifo_and_directory_are_refused_without_blocking,
     .timeout = 20) {
  discover();
  char path[256];
  snprintf(path, sizeof path, "%s/fifo.so", temp_dir());
  cr_assert_eq(mkfifo(path, 0600), 0);
  WT_EXPECT_ERROR(weft_plugin_load(path), WEFT_INVALID_ARGUMENT, "fifo.so",
                  "not a regular file");
  WT_EXPECT_ERROR(weft_plugin_load("/tmp"), WEFT_INVALID_ARGUMENT,
                  "not a regular file");
  unlink(path);
  expect_runtime_still_works();
}

/* The same plugin from a second file (an installed copy behind a build
 * tree's): shadowed, not refused, and the loaded one keeps working. */
Test(plugin_loader, a_copy_of_a_loaded_plugin_is_shadowed_not_refused) {
  discover();
  char copy[256];
  snprintf(copy, sizeof copy, "%s/weft-cpu.so", temp_dir());
  FILE* in = fopen(WEFT_TEST_CPU_PLUGIN, "rb");
  FILE* out = fopen(copy, "wb");
  cr_assert(in != NULL && out != NULL);
  char buffer[1 << 16];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, in)) > 0;)
    cr_assert_eq(fwrite(buffer, 1, n, out), n);
  fclose(in);
  cr_assert_eq(fclose(out), 0);
  int32_t refusals = weft_plugin_refusal_count();
  cr_assert_eq(weft_plugin_shadowed_count(), 0);
  WT_EXPECT_ERROR(weft_plugin_load(copy), WEFT_ALREADY_EXISTS, "weft-cpu",
                  "shadowed by the same plugin", copy);
  cr_expect_eq(weft_plugin_refusal_count(), refusals);
  cr_expect_null(refusal_reason(copy));
  cr_assert_eq(weft_plugin_shadowed_count(), 1);
  const char* path = NULL;
  const char* by = NULL;
  WT_OK(weft_plugin_shadowed(0, &path, &by));
  cr_expect_str_eq(path, copy);
  char loaded[PATH_MAX];
  cr_assert_not_null(realpath(WEFT_TEST_CPU_PLUGIN, loaded));
  cr_expect_str_eq(by, loaded);
  WT_EXPECT_CODE(weft_plugin_shadowed(1, &path, &by), WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_plugin_shadowed(-1, &path, &by),
                 WEFT_INVALID_ARGUMENT);
  unlink(copy);
  expect_runtime_still_works();
}

static void* load_hostile_thread(void* arg) {
  (void)arg;
  return weft_plugin_load(WEFT_TEST_PLUGIN_HOSTILE);
}

Test(plugin_loader, registry_is_usable_while_a_plugin_initialises,
     .timeout = 20) {
  discover();
  char entered[256], release[256];
  const char* dir = temp_dir();
  snprintf(entered, sizeof entered, "%s/entered", dir);
  snprintf(release, sizeof release, "%s/release", dir);
  cr_assert_eq(mkfifo(entered, 0600), 0);
  cr_assert_eq(mkfifo(release, 0600), 0);
  setenv("WEFT_TEST_HOSTILE_ENTERED", entered, 1);
  setenv("WEFT_TEST_HOSTILE_RELEASE", release, 1);
  load_hostile("block_entry");
  int32_t plugins = weft_plugin_count();
  pthread_t loader;
  cr_assert_eq(pthread_create(&loader, NULL, load_hostile_thread, NULL), 0);
  char byte = 0;
  int fd = open(entered, O_RDONLY);
  cr_assert_geq(fd, 0);
  cr_assert_eq(read(fd, &byte, 1), 1);
  close(fd);
  /* The plugin's entry is running now; the registry must still answer. */
  cr_expect_eq(weft_plugin_count(), plugins);
  cr_expect_gt(weft_device_count(), 0);
  fd = open(release, O_WRONLY);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, &byte, 1), 1);
  close(fd);
  void* status = NULL;
  pthread_join(loader, &status);
  WT_OK((weft_status*)status);
  cr_expect_eq(weft_plugin_count(), plugins + 1);
  unlink(entered);
  unlink(release);
}

static void* load_no_device_thread(void* arg) {
  (void)arg;
  return weft_plugin_load(WEFT_TEST_PLUGIN_NO_DEVICE);
}

Test(plugin_loader, concurrent_loads_of_one_file_load_it_once) {
  discover();
  int32_t plugins = weft_plugin_count();
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i)
    cr_assert_eq(pthread_create(&threads[i], NULL, load_no_device_thread,
                                NULL), 0);
  for (int i = 0; i < 4; ++i) {
    void* status = NULL;
    pthread_join(threads[i], &status);
    WT_OK((weft_status*)status);
  }
  cr_expect_eq(weft_plugin_count(), plugins + 1);
  cr_expect_null(refusal_reason(WEFT_TEST_PLUGIN_NO_DEVICE));
}

/* Loading plugins sets OMP_WAIT_POLICY=passive for the OpenMP runtime the
 * CPU plugin brings (registry.cc says why), unless the program chose a
 * policy.  Each case runs in a fresh child: the policy is set once, before
 * the first plugin is opened. */
static int policy_after_discovery(const char* preset, const char* want) {
  pid_t pid = fork();
  if (pid == 0) {
    if (preset) setenv("OMP_WAIT_POLICY", preset, 1);
    else unsetenv("OMP_WAIT_POLICY");
    weft_status* st = weft_plugins_discover();
    const char* got = getenv("OMP_WAIT_POLICY");
    _exit(st == NULL && got != NULL && strcmp(got, want) == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

Test(plugin_loader, openmp_waits_passively_unless_the_program_chose) {
  cr_expect_eq(policy_after_discovery(NULL, "passive"), 0,
               "an unset policy should become passive");
  cr_expect_eq(policy_after_discovery("active", "active"), 0,
               "a policy the program set must stay");
}

/* A plugin found on the search path opens its devices only when a device
 * of its type is wanted: a session on "CPU" never asks the NULLDEV test
 * plugin for its devices (for a real plugin: never starts an OpenCL
 * platform or a GPU driver); listing the devices does, once.  In a fresh
 * child: discovery happens once a process. */
static int device_count_calls(void) {
  const char* calls = getenv("WEFT_TEST_NULLDEV_COUNT_CALLS");
  return calls != NULL ? atoi(calls) : 0;
}

static int lazy_devices_child(void) {
  const char* cpu = WEFT_TEST_CPU_PLUGIN;
  char path[4096];
  snprintf(path, sizeof path, "%.*s:%s", (int)(base_name(cpu) - cpu - 1), cpu,
           WEFT_TEST_PLUGIN_NO_DEVICE);
  setenv("WEFT_PLUGIN_PATH", path, 1);
  unsetenv("WEFT_TEST_NULLDEV_COUNT_CALLS");
  if (weft_plugins_discover() != NULL) return 10;
  if (device_count_calls() != 0) {
    fprintf(stderr, "device_count calls after discovery: %d\n",
            device_count_calls());
    return 11;  /* loaded, not yet asked */
  }
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(3), 1);
  weft_output y = wt_apply1(g, "Neg", "y", x);
  weft_session* s = wt_session_new(g, "CPU");
  const float in[3] = {1, 2, 3};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(3), 1, in);
  weft_tensor* out = wt_run1(s, &x, &t, 1, y);
  if (((const float*)weft_tensor_data(out))[2] != -3) return 12;
  weft_tensor_destroy(out);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  if (device_count_calls() != 0) return 13;  /* a CPU session: not asked */
  /* Asking for it by type opens it, and the error still names it all. */
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "NULLDEV";
  weft_session* none = NULL;
  weft_status* st = weft_session_create(g, &o, &none);
  if (st == NULL || weft_status_code(st) != WEFT_NOT_FOUND ||
      strstr(weft_status_message(st), "/device:CPU:0") == NULL)
    return 14;
  weft_status_destroy(st);
  if (device_count_calls() != 1) return 15;
  /* Listing every device asks no plugin twice. */
  if (weft_device_count() < 1 || device_count_calls() != 1) return 16;
  int found = 0;
  for (int32_t i = 0; i < weft_plugin_count(); ++i) {
    weft_plugin_description d = {.struct_size = sizeof d};
    if (weft_plugin_describe(i, &d) != NULL) return 17;
    found |= strcmp(d.device_type, "NULLDEV") == 0 && d.device_count == 0 &&
             strstr(d.no_device_reason, "no NULLDEV hardware") != NULL;
  }
  if (!found) return 18;
  weft_graph_destroy(g);
  return 0;
}

Test(plugin_loader, plugins_found_on_the_path_open_devices_when_wanted) {
  pid_t pid = fork();
  if (pid == 0) _exit(lazy_devices_child());
  int status = 0;
  waitpid(pid, &status, 0);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "child ended with %d (see lazy_devices_child for the step)",
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* The CPU plugin's build for this machine: WEFT_CPU_ISA=baseline keeps the
 * baseline x86-64 code; otherwise a CPU with AVX2, FMA and BMI2 gets the
 * x86-64-v3 build where one was built (WEFT_TEST_CPU_ISA_VARIANTS).  The
 * plugin's version string says which.  In a fresh child: the choice is made
 * once, when the plugin is loaded. */
static int cpu_build_after_discovery(const char* isa, const char* want) {
  pid_t pid = fork();
  if (pid == 0) {
    if (isa) setenv("WEFT_CPU_ISA", isa, 1);
    else unsetenv("WEFT_CPU_ISA");
    if (weft_plugins_discover() != NULL) _exit(3);
    for (int32_t i = 0; i < weft_plugin_count(); ++i) {
      weft_plugin_description d = {.struct_size = sizeof d};
      if (weft_plugin_describe(i, &d) != NULL) _exit(3);
      if (strcmp(d.device_type, "CPU") != 0) continue;
      if (strstr(d.version, want) == NULL) {
        fprintf(stderr, "CPU plugin version '%s', expected '%s'\n", d.version,
                want);
        _exit(1);
      }
      /* And it computes: the runtime works over whichever build loaded. */
      weft_graph* g = wt_graph_new();
      weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(9), 1);
      weft_output y = wt_apply1(g, "Tanh", "y", x);
      weft_session* s = wt_session_new(g, NULL);
      float in[9];
      for (int k = 0; k < 9; ++k) in[k] = (float)(k - 4) * 0.75f;
      weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(9), 1, in);
      weft_tensor* out = wt_run1(s, &x, &t, 1, y);
      const float* v = weft_tensor_data(out);
      for (int k = 0; k < 9; ++k)
        if (fabsf(v[k] - tanhf(in[k])) > 1e-6f) _exit(4);
      weft_tensor_destroy(out);
      weft_tensor_destroy(t);
      weft_session_destroy(s);
      weft_graph_destroy(g);
      _exit(0);
    }
    _exit(2);  /* no CPU plugin */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}

Test(plugin_loader, cpu_plugin_build_chosen_by_cpu_and_environment) {
  cr_expect_eq(cpu_build_after_discovery("baseline", "(baseline)"), 0);
#if defined(__x86_64__) && defined(WEFT_TEST_CPU_ISA_VARIANTS)
  __builtin_cpu_init();
  const char* want = __builtin_cpu_supports("avx2") &&
                             __builtin_cpu_supports("fma") &&
                             __builtin_cpu_supports("bmi2")
                         ? "(x86-64-v3)"
                         : "(baseline)";
#else
  const char* want = "(baseline)";
#endif
  cr_expect_eq(cpu_build_after_discovery(NULL, want), 0, "expected %s", want);
  cr_expect_eq(cpu_build_after_discovery("x86-64-v3", want), 0,
               "asking for x86-64-v3 still depends on the CPU: %s", want);
  /* An unknown value warns and chooses by the CPU. */
  cr_expect_eq(cpu_build_after_discovery("avx9000", want), 0);
}
