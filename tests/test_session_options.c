/* Session options: defaults, validation and the struct_size rule on an
 * input struct (the library reads only what the caller's size covers). */
#define _DEFAULT_SOURCE /* usleep */

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_support.h"

static weft_output build(weft_graph* graph) {
  weft_output c = wt_const(graph, "c", wt_scalar_f32(4));
  return wt_apply1(graph, "Neg", "neg", c);
}

/* A "Name:  123 kB" line of /proc/self/status as a number; -1 if absent. */
static long proc_status_field(const char* name) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long value = -1;
  size_t n = strlen(name);
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, name, n) == 0) {
      value = strtol(line + n, NULL, 10);
      break;
    }
  fclose(f);
  return value;
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

/* The sized form fills exactly what the caller's struct holds: a caller
 * built against older (smaller) headers gets no write past its struct;
 * one with a larger struct than the library's gets the library's size in
 * struct_size; a size too small for struct_size writes nothing.  The
 * unsized symbol (what binaries built against 1.0 - 1.3 headers call)
 * fills 1.0's fields only. */
Test(session_options, init_sized_writes_only_the_callers_struct) {
  unsigned char bytes[sizeof(weft_session_options) + 32];
  weft_session_options* o = (weft_session_options*)bytes;
  const size_t v1_0 = offsetof(weft_session_options, intra_op_threads) +
                      sizeof o->intra_op_threads;
  memset(bytes, 0xA5, sizeof bytes);
  weft_session_options_init_sized(o, v1_0);
  cr_expect_eq(o->struct_size, v1_0);
  cr_expect(o->devices == NULL);
  for (size_t i = v1_0; i < sizeof bytes; ++i)
    cr_assert_eq(bytes[i], 0xA5, "byte %zu written past the %zu asked", i,
                 v1_0);

  memset(bytes, 0xA5, sizeof bytes);
  weft_session_options_init_sized(o, sizeof bytes);
  cr_expect_eq(o->struct_size, sizeof(weft_session_options));
  cr_expect_eq(o->optimizations, WEFT_OPTIMIZE_ALL);
  for (size_t i = sizeof(weft_session_options); i < sizeof bytes; ++i)
    cr_assert_eq(bytes[i], 0xA5, "byte %zu written past the library's struct",
                 i);

  memset(bytes, 0xA5, sizeof bytes);
  weft_session_options_init_sized(o, sizeof o->struct_size - 1);
  for (size_t i = 0; i < sizeof bytes; ++i) cr_assert_eq(bytes[i], 0xA5);

  /* The exported function itself (the parentheses keep the macro out). */
  memset(bytes, 0xA5, sizeof bytes);
  (weft_session_options_init)(o);
  cr_expect_eq(o->struct_size, v1_0);
  for (size_t i = v1_0; i < sizeof bytes; ++i)
    cr_assert_eq(bytes[i], 0xA5, "byte %zu written past 1.0's struct", i);

  /* A session accepts 1.0-sized options, the rest at their defaults. */
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(2), 1);
  wt_apply1(g, "Neg", "y", x);
  o->devices = "CPU";
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, o, &s));
  weft_session_destroy(s);
  weft_graph_destroy(g);
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
  /* "CPU:0" is short for "/device:CPU:0" (and "cpu:*" for any CPU). */
  static const char* const patterns[] = {"/device:CPU:0", "/device:CPU:*",
                                         "CPU", "/device:CPU:0,CPU",
                                         "CPU:0", "cpu:*"};
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
  options.devices = "CPU:99";
  WT_EXPECT_CODE(weft_session_create(graph, &options, &session),
                 WEFT_NOT_FOUND);
  weft_graph_destroy(graph);
}

/* Thread counts far beyond any machine used to reach std::thread and abort
 * the process; they are refused, naming the option and the bound. */
Test(session_options, thread_counts_above_the_bound_are_refused) {
  weft_graph* graph = wt_graph_new();
  char bound[32];
  snprintf(bound, sizeof bound, "%d", WEFT_SESSION_MAX_THREADS);
  static const int32_t counts[] = {WEFT_SESSION_MAX_THREADS + 1, INT32_MAX};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
    weft_session_options options;
    weft_session_options_init(&options);
    options.inter_op_threads = counts[i];
    weft_session* session = NULL;
    WT_EXPECT_ERROR(weft_session_create(graph, &options, &session),
                    WEFT_INVALID_ARGUMENT, "inter_op_threads", bound);
    cr_expect_null(session);
    weft_session_options_init(&options);
    options.intra_op_threads = counts[i];
    WT_EXPECT_ERROR(weft_session_create(graph, &options, &session),
                    WEFT_INVALID_ARGUMENT, "intra_op_threads", bound);
    cr_expect_null(session);
  }
  weft_graph_destroy(graph);
}

/* The number of threads of this process, from /proc; -1 if unreadable. */
static long thread_count(void) {
  return proc_status_field("Threads:");
}

/* Runs in a child: with the address space capped just above what the
 * process maps already, thread stacks cannot be mapped, so starting the
 * inter-op pool fails part-way.  Returns 0 when the library reported it as
 * RESOURCE_EXHAUSTED and joined the threads it had started. */
static int thread_creation_failure_child(void) {
  weft_graph* graph = wt_graph_new();
  build(graph);
  weft_session* session = NULL;
  /* Plugins are loaded on the first session, before the cap. */
  weft_status* st = weft_session_create(graph, NULL, &session);
  if (st != NULL) {
    fprintf(stderr, "child: first session: %s\n", weft_status_message(st));
    return 10;
  }
  weft_session_destroy(session);
  session = NULL;
  /* The first session's threads were just joined: read until the count
   * stops changing (a joined thread is listed until the kernel releases
   * it, a moment after pthread_join returns). */
  long threads_before = thread_count();
  for (int ms = 0; ms < 2000; ms += 20) {
    usleep(20000);
    const long again = thread_count();
    if (again == threads_before) break;
    threads_before = again;
  }
  long mapped_kib = proc_status_field("VmSize:");
  if (threads_before < 1 || mapped_kib < 1) return 11;
  struct rlimit old_limit;
  if (getrlimit(RLIMIT_AS, &old_limit) != 0) return 12;
  /* Room for the library's own allocations, not for 1023 thread stacks. */
  struct rlimit cap = old_limit;
  cap.rlim_cur = (rlim_t)mapped_kib * 1024 + ((rlim_t)48 << 20);
  if (setrlimit(RLIMIT_AS, &cap) != 0) return 13;
  weft_session_options options;
  weft_session_options_init(&options);
  options.inter_op_threads = WEFT_SESSION_MAX_THREADS;
  st = weft_session_create(graph, &options, &session);
  setrlimit(RLIMIT_AS, &old_limit);
  if (st == NULL) {
    fprintf(stderr, "child: %d threads started under a %ld KiB cap\n",
            WEFT_SESSION_MAX_THREADS, (long)(cap.rlim_cur >> 10));
    weft_session_destroy(session);
    return 14;
  }
  int rc = 0;
  if (weft_status_code(st) != WEFT_RESOURCE_EXHAUSTED ||
      strstr(weft_status_message(st), "inter_op_threads") == NULL) {
    fprintf(stderr, "child: refused with %s: %s\n",
            weft_code_name(weft_status_code(st)), weft_status_message(st));
    rc = 15;
  }
  weft_status_destroy(st);
  /* A joined thread is counted until the kernel releases it, a moment
   * after pthread_join returns: wait for that, up to 10 s. */
  long threads_after = thread_count();
  for (int ms = 0; threads_after > threads_before && ms < 10000; ms += 5) {
    usleep(5000);
    threads_after = thread_count();
  }
  if (threads_after != threads_before) {
    fprintf(stderr, "child: %ld threads before, %ld after the failure\n",
            threads_before, threads_after);
    rc = 16;
  }
  if (session != NULL) rc = 17;
  weft_graph_destroy(graph);
  return rc;
}

Test(session_options, thread_creation_failure_is_an_error) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WT_SKIP("a capped address space cannot hold the sanitizer's shadow memory");
#endif
  fflush(NULL);
  pid_t child = fork();
  cr_assert_neq(child, -1);
  if (child == 0) _exit(thread_creation_failure_child());
  int wstatus = 0;
  cr_assert_eq(waitpid(child, &wstatus, 0), child);
  cr_assert(WIFEXITED(wstatus), "the child died (signal %d)",
            WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
  cr_expect_eq(WEXITSTATUS(wstatus), 0,
               "the child failed its checks (exit %d, see stderr)",
               WEXITSTATUS(wstatus));
}

/* The threads each of `runs` runs could use, from run metadata, over a
 * MatMul big enough (256^3, a few hundred microseconds) for the runtime to
 * time it.  Returns how many distinct counts were seen (in seen[0..]). */
static int thread_counts_over_runs(int32_t intra_op_threads, int runs,
                                   int32_t* seen, int max_seen) {
  weft_graph* g = wt_graph_new();
  const int64_t dims[2] = {256, 256};
  static float p[256 * 256];
  for (int i = 0; i < 256 * 256; ++i) p[i] = (float)(i % 7) * 0.125f;
  weft_output x = wt_const_f32(g, "a", dims, 2, p);
  weft_output y = wt_apply2(g, "MatMul", "y", x, x);
  weft_session_options o;
  weft_session_options_init(&o);
  o.intra_op_threads = intra_op_threads;
  weft_session* s = NULL;
  WT_OK(weft_session_create(g, &o, &s));
  /* Two products worked out here, for every run to match. */
  double want[2] = {0, 0};
  for (int k = 0; k < 256; ++k) {
    want[0] += (double)p[k] * p[k * 256 + 1];
    want[1] += (double)p[255 * 256 + k] * p[k * 256 + 255];
  }
  int distinct = 0;
  weft_run_metadata* md = weft_run_metadata_create();
  for (int r = 0; r < runs; ++r) {
    weft_tensor* out = NULL;
    WT_OK(weft_session_run_with_metadata(s, NULL, NULL, 0, &y, 1, NULL, 0,
                                         &out, md));
    /* Whatever the count, the product. */
    const float* z = weft_tensor_data(out);
    cr_expect(fabs(z[1] - want[0]) <= 1e-5 * fabs(want[0]) &&
                  fabs(z[256 * 256 - 1] - want[1]) <= 1e-5 * fabs(want[1]),
              "run %d: %g %g, expected %g %g", r, z[1], z[256 * 256 - 1],
              want[0], want[1]);
    weft_tensor_destroy(out);
    int32_t t = weft_run_metadata_intra_op_threads(md);
    int known = 0;
    for (int i = 0; i < distinct; ++i) known |= seen[i] == t;
    if (!known && distinct < max_seen) seen[distinct++] = t;
  }
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return distinct;
}

/* A count the session sets is what every run uses. */
Test(session_options, a_set_intra_op_count_is_used_as_is) {
  for (int32_t n = 1; n <= 2; ++n) {
    int32_t seen[4];
    cr_expect_eq(thread_counts_over_runs(n, 30, seen, 4), 1);
    cr_expect_eq(seen[0], n);
  }
}

/* Left to the runtime (0), the runs of a plan try the core count and half
 * of it (after two warm-up runs, five each, alternating) and keep one. */
Test(session_options, intra_op_threads_chosen_by_timing_runs) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int32_t seen[4];
  int distinct = thread_counts_over_runs(0, 14, seen, 4);
  if (cores < 2) {
    cr_expect_eq(distinct, 1);
    cr_expect_eq(seen[0], 1);
    return;
  }
  cr_expect_eq(distinct, 2, "the probe tried %d count(s)", distinct);
  for (int i = 0; i < distinct; ++i)
    cr_expect(seen[i] >= 1 && seen[i] <= cores, "count %d", seen[i]);
  if (distinct == 2)
    cr_expect(seen[0] == 2 * seen[1] || seen[0] == 2 * seen[1] + 1,
              "probed %d against %d: expected a halving", seen[0], seen[1]);
}
