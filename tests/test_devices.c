/* Devices and plugins as the runtime reports them, and the struct_size
 * rule on the description structs. */
#define _XOPEN_SOURCE 700 /* realpath */

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_support.h"

static void discover(void) { WT_OK(weft_plugins_discover()); }

TestSuite(devices, .init = discover);

static int find_device(const char* name, weft_device_description* out) {
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    WT_OK(weft_device_describe(i, out));
    if (out->name != NULL && strcmp(out->name, name) == 0) return i;
  }
  return -1;
}

Test(devices, at_least_one_device) {
  cr_expect_geq(weft_device_count(), 1);
  cr_expect_geq(weft_plugin_count(), 1);
}

Test(devices, cpu_zero) {
  weft_device_description d;
  cr_assert_geq(find_device("/device:CPU:0", &d), 0, "no /device:CPU:0");
  cr_expect_str_eq(d.type, "CPU");
  cr_expect_eq(d.index, 0);
  cr_assert_not_null(d.description);
  cr_expect_gt(strlen(d.description), 0);
  cr_expect_not_null(d.vendor);
  cr_assert_not_null(d.plugin);
  cr_expect_gt(strlen(d.plugin), 0);
  cr_expect(d.flags & WEFT_DEVICE_HOST_MEMORY,
            "the CPU's memory is host memory");
  cr_expect_geq(d.compute_gflops, 0.0);
}

Test(devices, names_follow_type_and_index) {
  int32_t count = weft_device_count();
  for (int32_t i = 0; i < count; ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    char expected[128];
    snprintf(expected, sizeof expected, "/device:%s:%d", d.type, d.index);
    cr_expect_str_eq(d.name, expected);
    for (const char* c = d.type; *c; ++c)
      cr_expect(!(*c >= 'a' && *c <= 'z'), "type %s not upper case", d.type);
    /* Indices of one type run 0..n-1 with no duplicate names. */
    int same_type_below = 0;
    for (int32_t j = 0; j < count; ++j) {
      if (j == i) continue;
      weft_device_description e = {.struct_size = sizeof e};
      WT_OK(weft_device_describe(j, &e));
      cr_expect_str_neq(d.name, e.name, "two devices are called %s", d.name);
      same_type_below += strcmp(e.type, d.type) == 0 && e.index < d.index;
    }
    cr_expect_eq(same_type_below, d.index, "%s: index has gaps", d.name);
  }
}

Test(devices, plugin_descriptions_are_sane) {
  uint32_t min = 0, max = 0;
  weft_plugin_interface_range(&min, &max);
  int32_t total_devices = 0, cpu_plugins = 0;
  for (int32_t i = 0; i < weft_plugin_count(); ++i) {
    weft_plugin_description p = {.struct_size = sizeof p};
    WT_OK(weft_plugin_describe(i, &p));
    cr_assert_not_null(p.name);
    cr_expect_gt(strlen(p.name), 0);
    cr_assert_not_null(p.version);
    cr_expect_gt(strlen(p.version), 0);
    cr_assert_not_null(p.path);
    cr_expect_eq(access(p.path, R_OK), 0, "%s: no file at %s", p.name, p.path);
    cr_expect(p.interface_version >= min && p.interface_version <= max,
              "%s negotiated %#x outside [%#x, %#x]", p.name,
              p.interface_version, min, max);
    cr_assert_not_null(p.device_type);
    cr_expect_gt(strlen(p.device_type), 0);
    cr_expect_geq(p.device_count, 0);
    cr_assert_not_null(p.no_device_reason);
    if (p.device_count > 0) {
      cr_expect_str_eq(p.no_device_reason, "", "%s", p.name);
    } else {
      cr_expect_str_neq(p.no_device_reason, "",
                        "%s has no device and does not say why", p.name);
    }
    total_devices += p.device_count;
    if (strcmp(p.device_type, "CPU") == 0) {
      ++cpu_plugins;
      cr_expect_geq(p.device_count, 1);
      /* The build's own plugin, found through WEFT_PLUGIN_PATH, not an
       * installed copy. */
      char a[PATH_MAX], b[PATH_MAX];
      cr_assert_not_null(realpath(p.path, a));
      cr_assert_not_null(realpath(WEFT_TEST_CPU_PLUGIN, b));
      cr_expect_str_eq(a, b);
    }
  }
  cr_expect_eq(cpu_plugins, 1);
  cr_expect_eq(total_devices, weft_device_count());
}

/* ---- struct_size: fields beyond it are never written ------------------ */

enum { POISON = 0xA5 };

static void expect_untouched(const unsigned char* bytes, size_t from,
                             size_t to, const char* what) {
  for (size_t i = from; i < to; ++i)
    cr_expect_eq(bytes[i], POISON, "%s: byte %zu written beyond struct_size",
                 what, i);
}

Test(devices, device_description_honours_a_smaller_struct_size) {
  weft_device_description d;
  memset(&d, POISON, sizeof d);
  d.struct_size = offsetof(weft_device_description, type);
  WT_OK(weft_device_describe(0, &d));
  cr_assert_neq((uintptr_t)d.name, (uintptr_t)0xA5A5A5A5A5A5A5A5ull,
                "name, inside struct_size, was not filled");
  cr_expect(strncmp(d.name, "/device:", 8) == 0, "name %s", d.name);
  expect_untouched((const unsigned char*)&d,
                   offsetof(weft_device_description, type), sizeof d,
                   "weft_device_description");
}

Test(devices, plugin_description_honours_a_smaller_struct_size) {
  weft_plugin_description p;
  memset(&p, POISON, sizeof p);
  p.struct_size = offsetof(weft_plugin_description, version);
  WT_OK(weft_plugin_describe(0, &p));
  cr_assert_neq((uintptr_t)p.name, (uintptr_t)0xA5A5A5A5A5A5A5A5ull);
  cr_expect_gt(strlen(p.name), 0);
  expect_untouched((const unsigned char*)&p,
                   offsetof(weft_plugin_description, version), sizeof p,
                   "weft_plugin_description");
}

/* A caller compiled against a newer header passes a bigger struct: the
 * library fills what it knows and leaves the rest alone. */
Test(devices, larger_struct_size_leaves_the_tail_alone) {
  union {
    weft_device_description d;
    unsigned char bytes[sizeof(weft_device_description) + 32];
  } future;
  memset(&future, POISON, sizeof future);
  future.d.struct_size = sizeof future;
  WT_OK(weft_device_describe(0, &future.d));
  cr_expect(strncmp(future.d.name, "/device:", 8) == 0);
  expect_untouched(future.bytes, sizeof(weft_device_description),
                   sizeof future, "a future weft_device_description");

  union {
    weft_plugin_description p;
    unsigned char bytes[sizeof(weft_plugin_description) + 32];
  } future_plugin;
  memset(&future_plugin, POISON, sizeof future_plugin);
  future_plugin.p.struct_size = sizeof future_plugin;
  WT_OK(weft_plugin_describe(0, &future_plugin.p));
  cr_expect_gt(strlen(future_plugin.p.name), 0);
  expect_untouched(future_plugin.bytes, sizeof(weft_plugin_description),
                   sizeof future_plugin, "a future weft_plugin_description");
}

Test(devices, indices_out_of_range) {
  weft_device_description d = {.struct_size = sizeof d};
  WT_EXPECT_CODE(weft_device_describe(-1, &d), WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_device_describe(weft_device_count(), &d),
                 WEFT_INVALID_ARGUMENT);
  weft_plugin_description p = {.struct_size = sizeof p};
  WT_EXPECT_CODE(weft_plugin_describe(-1, &p), WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_plugin_describe(weft_plugin_count(), &p),
                 WEFT_INVALID_ARGUMENT);
}

Test(devices, discovery_twice_changes_nothing) {
  int32_t plugins = weft_plugin_count(), devices = weft_device_count();
  WT_OK(weft_plugins_discover());
  cr_expect_eq(weft_plugin_count(), plugins);
  cr_expect_eq(weft_device_count(), devices);
}

/* Every device that is not the CPU runs a small graph pinned to it.  On a
 * machine with only a CPU this has nothing to check and says so. */
Test(devices, every_accelerator_runs_a_graph) {
  int checked = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.type, "CPU") == 0) continue;
    cr_log_info("checking %s (%s)", d.name, d.description);
    weft_graph* graph = wt_graph_new();
    weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(3));
    weft_op_builder* b = weft_op_begin(graph, "Add", "on_device");
    weft_op_add_input(b, x);
    weft_op_add_input(b, x);
    weft_op_set_device(b, d.name);
    weft_node* node = NULL;
    WT_OK(weft_op_finish(b, &node));
    cr_expect_str_eq(weft_node_device(node), d.name);
    weft_session* session = wt_session_new(graph, NULL);
    float values[3] = {1.5f, -2, 4};
    weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(3), values);
    weft_output fetch = {node, 0};
    weft_tensor* out = wt_run1(session, &x, &fed, 1, fetch);
    double expected[3] = {3, -4, 8};
    wt_expect_f32(out, expected, 3, 0, 0);
    weft_tensor_destroy(out);
    weft_tensor_destroy(fed);
    weft_session_destroy(session);
    weft_graph_destroy(graph);
    ++checked;
  }
  if (checked == 0) {
    char reason[512] = "no device other than the CPU is present";
    for (int32_t i = 0; i < weft_plugin_count(); ++i) {
      weft_plugin_description p = {.struct_size = sizeof p};
      WT_OK(weft_plugin_describe(i, &p));
      if (p.device_count == 0) {
        size_t used = strlen(reason);
        snprintf(reason + used, sizeof reason - used, "; %s: %s", p.name,
                 p.no_device_reason);
      }
    }
    WT_SKIP(reason);
  }
}
