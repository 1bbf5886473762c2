/* The runtime's device buffer cache (runtime/device/registry.cc): freed
 * buffers are kept by size class (powers of two up to 1 MiB, whole MiB
 * above) and reused, and where a request's class has none, a cached buffer
 * of up to twice the request serves it instead of a fresh allocation.  The
 * test plugin tests/plugins/plugin_collectives.c counts its
 * memory_allocate calls per device (the file WEFT_TEST_CALLS_COLLTEST
 * names), and its Neg kernel gives outputs of the sizes fed. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_support.h"

static char calls_path[128];

static void remove_calls(void) { remove(calls_path); }

static void load_plugin(void) {
  snprintf(calls_path, sizeof calls_path, "/tmp/weft-test-buffer-cache-%ld",
           (long)getpid());
  setenv("WEFT_TEST_CALLS_COLLTEST", calls_path, 1);
  atexit(remove_calls);
  WT_OK(weft_plugins_discover());
  WT_OK(weft_plugin_load(WEFT_TEST_PLUGIN_COLLECTIVES));
}

TestSuite(buffer_cache, .init = load_plugin);

/* memory_allocate calls on /device:COLLTEST:0 so far. */
static int allocations(void) {
  char text[1024] = {0};
  FILE* f = fopen(calls_path, "r");
  if (f == NULL) return 0; /* nothing counted yet */
  size_t got = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[got] = '\0';
  const char* at = strstr(text, "d0 ");
  cr_assert_not_null(at, "%s has no device 0: %s", calls_path, text);
  const char* alloc = strstr(at, "alloc=");
  cr_assert_not_null(alloc, "%s has no alloc count: %s", calls_path, text);
  return atoi(alloc + strlen("alloc="));
}

/* Neg of `count` floats fed from the host, run on the test device; checks
 * the result and frees it (its buffer goes back to the cache). */
static void neg_of(weft_session* s, weft_output x, weft_output y,
                   int64_t count) {
  float* values = malloc(sizeof(float) * (size_t)count);
  cr_assert_not_null(values);
  for (int64_t i = 0; i < count; ++i) values[i] = (float)(i % 1000) * 0.5f;
  weft_tensor* in = wt_tensor(WEFT_FLOAT32, (int64_t[]){count}, 1, values);
  weft_tensor* out = wt_run1(s, &x, &in, 1, y);
  wt_expect_shape(out, WEFT_FLOAT32, (int64_t[]){count}, 1);
  const float* got = weft_tensor_data(out);
  for (int64_t i = 0; i < count; i += 997)
    cr_assert_eq(got[i], -values[i], "element %lld", (long long)i);
  cr_assert_eq(got[count - 1], -values[count - 1]);
  weft_tensor_destroy(out);
  weft_tensor_destroy(in);
  free(values);
}

Test(buffer_cache, a_larger_cached_buffer_serves_a_smaller_request) {
  /* 6.8 MB (class 7 MiB), 3.6 MB (class 4 MiB), 1.6 MB (class 2 MiB). */
  const int64_t big = 1700000, mid = 900000, small = 400000;
  weft_graph* g = wt_graph_new();
  weft_output x[3], y[3];
  const int64_t sizes[3] = {big, mid, small};
  for (int k = 0; k < 3; ++k) {
    char name[16];
    snprintf(name, sizeof name, "x%d", k);
    x[k] = wt_placeholder(g, name, WEFT_FLOAT32, (int64_t[]){sizes[k]}, 1);
    weft_op_builder* b = weft_op_begin(g, "Neg", NULL);
    weft_op_add_input(b, x[k]);
    weft_op_set_device(b, "/device:COLLTEST:0");
    weft_node* n = NULL;
    WT_OK(weft_op_finish(b, &n));
    y[k] = (weft_output){n, 0};
  }
  weft_session* s = wt_session_new(g, NULL);

  neg_of(s, x[0], y[0], big);
  const int after_big = allocations();
  cr_assert_gt(after_big, 0, "Neg's output was not allocated on the device");
  /* Everything of the first run is back in the cache: the 4 MiB-class
   * buffers come from the 7 MiB ones (at most twice their size). */
  neg_of(s, x[1], y[1], mid);
  cr_expect_eq(allocations(), after_big,
               "3.6 MB after a freed 6.8 MB buffer: %d allocations, "
               "expected none since the first run's %d",
               allocations() - after_big, after_big);
  /* 2 MiB-class requests: the cached 7 MiB buffers are more than twice
   * that, so fresh buffers. */
  neg_of(s, x[2], y[2], small);
  const int after_small = allocations();
  cr_expect_gt(after_small, after_big,
               "a 1.6 MB output took a 7 MiB buffer");
  /* Again, every size: all from the cache now. */
  neg_of(s, x[0], y[0], big);
  neg_of(s, x[1], y[1], mid);
  neg_of(s, x[2], y[2], small);
  cr_expect_eq(allocations(), after_small,
               "a second round allocated %d buffers",
               allocations() - after_small);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}
