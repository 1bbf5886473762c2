/* Timing helpers shared by the benchmarks (C and C++). */
#ifndef WEFT_BENCH_UTIL_H_
#define WEFT_BENCH_UTIL_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft/weft.h"

/* Monotonic, so a clock adjustment mid-run cannot produce a negative or
 * inflated sample. */
static inline double bench_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of every thread of the process.  On a loaded machine wall time
 * includes the time other processes held the cores; CPU time mostly does
 * not, so it shows the work done even when wall-clock figures swing. */
static inline double bench_process_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a;
  double y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The median rather than the mean: on a shared machine a few repetitions are
 * always slowed by other processes, and the median ignores them.  Sorts
 * `samples` in place. */
static inline double bench_median(double* samples, int count) {
  qsort(samples, (size_t)count, sizeof samples[0], bench_compare_doubles);
  return count % 2 ? samples[count / 2]
                   : 0.5 * (samples[count / 2 - 1] + samples[count / 2]);
}

static inline void bench_die(const char* what, weft_status* status) {
  fprintf(stderr, "bench: %s: %s: %s\n", what,
          weft_code_name(weft_status_code(status)),
          weft_status_message(status));
  weft_status_destroy(status);
  exit(1);
}

#define BENCH_CHECK(call)                        \
  do {                                           \
    weft_status* bench_status_ = (call);         \
    if (bench_status_ != NULL) {                 \
      bench_die(#call, bench_status_);           \
    }                                            \
  } while (0)

/* Runs `step(arg)` `warmup` times, then 10 timed blocks of `block` calls,
 * and writes each block's wall-clock and process CPU seconds per call. */
static inline void bench_time_blocks(void (*step)(void*), void* arg,
                                     int warmup, int block, double wall[10],
                                     double cpu[10]) {
  for (int i = 0; i < warmup; ++i) step(arg);
  for (int r = 0; r < 10; ++r) {
    double w0 = bench_now_seconds(), c0 = bench_process_cpu_seconds();
    for (int i = 0; i < block; ++i) step(arg);
    double w1 = bench_now_seconds(), c1 = bench_process_cpu_seconds();
    wall[r] = (w1 - w0) / block;
    cpu[r] = (c1 - c0) / block;
  }
}

/* Runs `step(arg)` `warmup` times, then 10 timed blocks of steps / 10, and
 * prints "<label>, N thread(s): X steps/s (CPU Y ms/step), median of 10
 * blocks of B steps" (the line scripts/bench_peers.sh reads). */
static inline void bench_steps(const char* label, int threads, int steps,
                               int warmup, void (*step)(void*), void* arg) {
  int block = steps / 10 > 0 ? steps / 10 : 1;
  double wall[10], cpu[10];
  bench_time_blocks(step, arg, warmup, block, wall, cpu);
  printf("%s, %d thread(s): %.1f steps/s (CPU %.3f ms/step), median of 10 "
         "blocks of %d steps\n", label, threads, 1.0 / bench_median(wall, 10),
         bench_median(cpu, 10) * 1e3, block);
}

/* A session for a training benchmark: on WEFT_BENCH_DEVICE (CPU unless
 * set: CUDA, OPENCL) with `threads` intra-op threads and one inter-op
 * thread (what a session left to choose does with `threads` intra-op
 * threads, runtime/session/session.cc), its variables initialized by
 * running `init`. */
static inline weft_session* bench_open_session_with(weft_graph* g,
                                                    int threads,
                                                    uint32_t optimizations,
                                                    weft_node* init) {
  weft_session_options o;
  weft_session_options_init(&o);
  const char* device = getenv("WEFT_BENCH_DEVICE");
  o.devices = device != NULL ? device : "CPU";
  o.inter_op_threads = 1;
  o.intra_op_threads = threads;
  o.optimizations = optimizations;
  weft_session* s = NULL;
  BENCH_CHECK(weft_session_create(g, &o, &s));
  BENCH_CHECK(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL));
  return s;
}

static inline weft_session* bench_open_session(weft_graph* g, int threads,
                                               weft_node* init) {
  return bench_open_session_with(g, threads, WEFT_OPTIMIZE_ALL, init);
}

/* The optimizations of WEFT_BENCH_PAIRED's control session when
 * WEFT_BENCH_PAIRED_OPTIMIZATIONS (a mask of WEFT_OPTIMIZE_* bits, e.g.
 * 0xfffffffb: all but fusion) is set: *mask, and 1.  The control then has
 * the measured session's thread count, so the paired ratio is what those
 * optimizations' absence costs (an A/B of a graph optimization). */
static inline int bench_paired_optimizations(uint32_t* mask) {
  const char* env = getenv("WEFT_BENCH_PAIRED_OPTIMIZATIONS");
  if (env == NULL || *env == 0) return 0;
  *mask = (uint32_t)strtoul(env, NULL, 0);
  return 1;
}

/* WEFT_BENCH_PAIRED's control session: 1 intra-op thread, or `threads`
 * and WEFT_BENCH_PAIRED_OPTIMIZATIONS where that is set.  NULL when
 * WEFT_BENCH_PAIRED is unset or `threads` < 1. */
static inline weft_session* bench_open_control_session(weft_graph* g,
                                                       int threads,
                                                       weft_node* init) {
  if (threads < 1 || getenv("WEFT_BENCH_PAIRED") == NULL) return NULL;
  uint32_t mask;
  if (bench_paired_optimizations(&mask))
    return bench_open_session_with(g, threads, mask, init);
  return bench_open_session(g, 1, init);
}

/* With WEFT_BENCH_PAIRED=N (N > 0) in the environment: N pairs of timed
 * blocks of `block` steps, one on `one` (a session of 1 intra-op thread)
 * and one on `many` (`threads` threads), in alternating order (ABBA...),
 * after `warmup` steps of each; prints each side's median steps/s and the
 * median and quartiles of the per-pair ratio many/one, and how many pairs
 * had `many` slower.  Both sides live in one process and alternate every
 * few tens of milliseconds, so a change in the machine's load (another
 * process, a noisy neighbour of the VM) falls on both: issue 12's "never
 * slower than one thread under load" is measured this way
 * (README, "Performance").  With `threads` 1 both sides are alike: the
 * ratio then shows the method's own bias (an A/A control).  With
 * WEFT_BENCH_PAIRED_OPTIMIZATIONS `one` is instead a session of `threads`
 * threads without some optimizations (bench_open_control_session).  Returns 1 when
 * it ran, 0 otherwise. */
static inline int bench_paired(const char* label, int threads, int block,
                               int warmup, void (*step)(void*), void* one,
                               void* many) {
  const char* env = getenv("WEFT_BENCH_PAIRED");
  const int pairs = env ? atoi(env) : 0;
  if (pairs <= 0) return 0;
  double* rate_one = (double*)malloc(3 * (size_t)pairs * sizeof(double));
  if (rate_one == NULL) return 0;
  double* rate_many = rate_one + pairs;
  double* ratio = rate_many + pairs;
  for (int i = 0; i < warmup; ++i) {
    step(one);
    step(many);
  }
  int slower = 0;
  for (int p = 0; p < pairs; ++p) {
    for (int side = 0; side < 2; ++side) {
      /* Even pairs run `one` first, odd ones `many` first. */
      const int is_many = (side == 0) == (p % 2 == 1);
      double t0 = bench_now_seconds();
      for (int i = 0; i < block; ++i) step(is_many ? many : one);
      double rate = block / (bench_now_seconds() - t0);
      if (is_many) rate_many[p] = rate;
      else rate_one[p] = rate;
    }
    ratio[p] = rate_many[p] / rate_one[p];
    slower += ratio[p] < 1;
  }
  double q1, q3;
  qsort(ratio, (size_t)pairs, sizeof ratio[0], bench_compare_doubles);
  q1 = ratio[pairs / 4];
  q3 = ratio[(3 * pairs) / 4 < pairs ? (3 * pairs) / 4 : pairs - 1];
  uint32_t mask;
  char against[64];
  if (bench_paired_optimizations(&mask))
    snprintf(against, sizeof against, "%d thread(s) with optimizations 0x%x",
             threads, (unsigned)mask);
  else
    snprintf(against, sizeof against, "1 thread(s)");
  printf("%s, %d vs %s, paired: ratio %.3f (quartiles %.3f - "
         "%.3f), %d of %d pairs slower; %.1f vs %.1f steps/s; medians of "
         "%d pairs of blocks of %d steps\n", label, threads, against,
         bench_median(ratio, pairs), q1, q3, slower, pairs,
         bench_median(rate_many, pairs), bench_median(rate_one, pairs),
         pairs, block);
  free(rate_one);
  return 1;
}

/* The line for a call that does `per_call` units of work (nodes of a
 * chain, ops), given the median wall-clock and CPU seconds per call over
 * 10 blocks of `block` calls: "<label>, N thread(s): X us/<unit> (CPU Y
 * us/<unit>), median of 10 blocks of B calls of P" (bench_peers.sh reads
 * it; tf_timing.py's time_per_unit prints the same). */
static inline void bench_print_per_unit(const char* label, int threads,
                                        double wall, double cpu, int block,
                                        int per_call, const char* unit) {
  printf("%s, %d thread(s): %.4f us/%s (CPU %.4f us/%s), median of 10 "
         "blocks of %d calls of %d\n", label, threads, wall * 1e6 / per_call,
         unit, cpu * 1e6 / per_call, unit, block, per_call);
}

/* One training step of a Weft session: feeds and the training target. */
typedef struct bench_session_step {
  weft_session* session;
  const weft_output* feeds;
  weft_tensor* const* values;
  int32_t num_feeds;
  weft_node* target;
} bench_session_step;

static inline void bench_run_session_step(void* arg) {
  const bench_session_step* s = (const bench_session_step*)arg;
  BENCH_CHECK(weft_session_run(s->session, s->feeds, s->values, s->num_feeds,
                               NULL, 0, &s->target, 1, NULL));
}

/* Runs one more step with run metadata and prints "<label>: peak run
 * memory X MiB, N values recomputed (WEFT_RECOMPUTE=...)": the bytes of
 * values the step held at once on its device (variables and constants
 * aside), and what recomputation (weft_session_options.recompute, here
 * from the environment) did. */
static inline void bench_report_memory(const char* label,
                                       const bench_session_step* s) {
  weft_run_metadata* m = weft_run_metadata_create();
  if (m == NULL) return;
  BENCH_CHECK(weft_session_run_with_metadata(s->session, s->feeds, s->values,
                                             s->num_feeds, NULL, 0,
                                             &s->target, 1, NULL, m));
  uint64_t peak = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_devices(m); ++i)
    peak += weft_run_metadata_peak_bytes(m, i);
  const char* env = getenv("WEFT_RECOMPUTE");
  printf("%s: peak run memory %.2f MiB, %d values recomputed "
         "(WEFT_RECOMPUTE=%s)\n", label, (double)peak / (1 << 20),
         weft_run_metadata_num_recomputed(m), env ? env : "");
  weft_run_metadata_destroy(m);
}

/* Per op type (or node) totals of traced steps, for bench_report_trace. */
enum { kBenchTraceMaxOps = 64 };
typedef struct {
  int num_ops;
  const char* ops[kBenchTraceMaxOps];
  double total_ns[2][kBenchTraceMaxOps];
  int count[kBenchTraceMaxOps];
  double span_ns[2];
} bench_trace_totals;

/* Runs one traced step of `s` into `into` and adds its events to side
 * `side` of `t`; names are taken from `into` when `keep_names` (the first
 * run: op names are borrowed from the metadata until its next run, and
 * every run has the same nodes). */
static inline void bench_trace_one(const bench_session_step* s,
                                   weft_run_metadata* into, int keep_names,
                                   int by_node, int side,
                                   bench_trace_totals* t) {
  weft_run_options options;
  weft_run_options_init(&options);
  options.trace_level = WEFT_TRACE_FULL;
  BENCH_CHECK(weft_session_run_with_options(
      s->session, &options, s->feeds, s->values, s->num_feeds, NULL, 0,
      &s->target, 1, NULL, into));
  int64_t first = INT64_MAX, last = 0;
  for (int32_t i = 0; i < weft_run_metadata_num_trace_events(into); ++i) {
    const char *op, *name;
    int64_t start, end;
    BENCH_CHECK(weft_run_metadata_trace_event(into, i, NULL, &name, &op, NULL,
                                              NULL, &start, &end, NULL));
    if (by_node) op = name;
    if (start < first) first = start;
    if (end > last) last = end;
    int k = 0;
    while (k < t->num_ops && strcmp(t->ops[k], op) != 0) ++k;
    if (k == t->num_ops) {
      if (k == kBenchTraceMaxOps || !keep_names) continue;
      t->ops[k] = op;
      t->total_ns[0][k] = t->total_ns[1][k] = 0;
      t->count[k] = 0;
      ++t->num_ops;
    }
    t->total_ns[side][k] += (double)(end - start);
    if (side == 0) ++t->count[k];
  }
  if (last > first) t->span_ns[side] += (double)(last - first);
}

/* With WEFT_BENCH_TRACE=N (N > 0) in the environment: runs N more steps
 * traced (weft_run_options.trace_level) and prints each op type's mean
 * time per step, the busiest first, and the step's wall time from the
 * first start to the last end: where the time of a step goes, at the
 * thread count the benchmark ran with.  WEFT_BENCH_TRACE_NODES=1 lists
 * nodes instead of op types.  With `one` (a 1-thread session of the same
 * graph, as bench_paired takes it) the N steps alternate between the two
 * (ABBA...), and each line gives both sides' times and their ratio: where
 * a paired difference between thread counts comes from. */
static inline void bench_report_trace(const char* label,
                                      const bench_session_step* s,
                                      const bench_session_step* one) {
  const char* env = getenv("WEFT_BENCH_TRACE");
  const int runs = env ? atoi(env) : 0;
  if (runs <= 0) return;
  const char* by_node_env = getenv("WEFT_BENCH_TRACE_NODES");
  const int by_node = by_node_env != NULL && strcmp(by_node_env, "1") == 0;
  bench_trace_totals* t = (bench_trace_totals*)calloc(1, sizeof *t);
  weft_run_metadata* m = weft_run_metadata_create();
  weft_run_metadata* names = weft_run_metadata_create();
  if (t == NULL || m == NULL || names == NULL) {
    free(t);
    if (m != NULL) weft_run_metadata_destroy(m);
    if (names != NULL) weft_run_metadata_destroy(names);
    return;
  }
  for (int r = 0; r < runs; ++r) {
    /* ABBA...: odd steps run the 1-thread session first. */
    if (one != NULL && r % 2 == 1) bench_trace_one(one, m, 0, by_node, 1, t);
    bench_trace_one(s, r == 0 ? names : m, r == 0, by_node, 0, t);
    if (one != NULL && r % 2 == 0) bench_trace_one(one, m, 0, by_node, 1, t);
  }
  printf("%s: traced %d steps%s, %.1f us per step from first start to last "
         "end", label, runs, one ? " a side, alternating with 1 thread" : "",
         t->span_ns[0] / runs / 1e3);
  if (one != NULL)
    printf(" (1 thread %.1f, ratio %.4f)", t->span_ns[1] / runs / 1e3,
           t->span_ns[0] / t->span_ns[1]);
  printf("; per %s, us per step (executions per step)%s:\n",
         by_node ? "node" : "op type", one ? ", 1 thread's, ratio" : "");
  for (int shown = 0; shown < t->num_ops; ++shown) {
    int best = -1;
    for (int k = 0; k < t->num_ops; ++k)
      if (t->count[k] >= 0 &&
          (best < 0 || t->total_ns[0][k] > t->total_ns[0][best]))
        best = k;
    printf("  %-40s %9.2f (%d)", t->ops[best],
           t->total_ns[0][best] / runs / 1e3, t->count[best] / runs);
    if (one != NULL)
      printf(" %9.2f %7.4f", t->total_ns[1][best] / runs / 1e3,
             t->total_ns[0][best] / t->total_ns[1][best]);
    printf("\n");
    t->count[best] = -1;
  }
  weft_run_metadata_destroy(names);
  weft_run_metadata_destroy(m);
  free(t);
}

/* Parses "--name=value" style integer flags; returns 1 when `arg` was one. */
static inline int bench_int_flag(const char* arg, const char* name,
                                 int* out) {
  size_t length = strlen(name);
  if (strncmp(arg, name, length) != 0 || arg[length] != '=') return 0;
  *out = atoi(arg + length + 1);
  return 1;
}

#endif /* WEFT_BENCH_UTIL_H_ */
