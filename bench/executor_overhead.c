/* Executor overhead per node.
 *
 * A chain of Add nodes on float32 scalars does almost no arithmetic, so the
 * time a run takes is what the executor spends per node: scheduling,
 * dispatching the kernel, handing the output on.  The chain starts at a fed
 * placeholder so that constant folding cannot collapse it, and every node
 * depends on the previous one, so the figure is latency, not throughput.
 *
 * The plan is built by the first run and cached; the warm-up runs keep
 * that, and first-touch page faults, out of the timings.  THREADS (or
 * --inter-op-threads) is the session's inter-op thread count (0: the
 * caller's thread); timing is bench_util.h's: 10 blocks of RUNS / 10 runs,
 * wall-clock and process CPU time.  --trace runs every run traced (run
 * option trace_level, into run metadata): what a trace costs per node;
 * without it the runs are plain weft_session_run, untraced.
 *
 *   executor_overhead [THREADS [RUNS]] [--nodes=1000] [--runs=2000]
 *                     [--inter-op-threads=0] [--trace]
 */
/* clock_gettime(CLOCK_MONOTONIC) is POSIX, hidden by strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "weft/weft.h"

typedef struct chain {
  weft_graph* graph;
  weft_session* session;
  weft_output input;
  weft_output output;
  weft_tensor* feed;
  weft_run_metadata* trace;  /* --trace: where each run's trace goes */
} chain;

static chain chain_create(int nodes, int inter_op_threads, int trace) {
  chain c;
  c.trace = NULL;
  if (trace && (c.trace = weft_run_metadata_create()) == NULL) exit(1);
  BENCH_CHECK(weft_graph_create(&c.graph));
  BENCH_CHECK(weft_graph_placeholder(c.graph, "x", WEFT_FLOAT32, NULL, 0,
                                     &c.input));
  const float one_value = 1.0f;
  weft_tensor* one_tensor = NULL;
  BENCH_CHECK(weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &one_value,
                                      sizeof one_value, &one_tensor));
  weft_output one;
  BENCH_CHECK(weft_graph_constant(c.graph, "one", one_tensor, &one));
  weft_tensor_destroy(one_tensor);

  weft_output current = c.input;
  for (int i = 0; i < nodes; ++i) {
    const weft_output inputs[2] = {current, one};
    BENCH_CHECK(weft_graph_apply(c.graph, "Add", NULL, inputs, 2, &current));
  }
  c.output = current;

  weft_session_options options;
  weft_session_options_init(&options);
  /* WEFT_DEVICES, when set, lets the same binary measure another device. */
  options.devices = getenv("WEFT_DEVICES") != NULL ? NULL : "/device:CPU:0";
  options.inter_op_threads = inter_op_threads;
  BENCH_CHECK(weft_session_create(c.graph, &options, &c.session));

  const float zero = 0.0f;
  BENCH_CHECK(weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &zero,
                                      sizeof zero, &c.feed));
  return c;
}

static float chain_run(const chain* c) {
  weft_tensor* result = NULL;
  if (c->trace != NULL) {
    weft_run_options options;
    weft_run_options_init(&options);
    options.trace_level = WEFT_TRACE_FULL;
    BENCH_CHECK(weft_session_run_with_options(c->session, &options,
                                              &c->input, &c->feed, 1,
                                              &c->output, 1, NULL, 0, &result,
                                              c->trace));
  } else {
    BENCH_CHECK(weft_session_run(c->session, &c->input, &c->feed, 1,
                                 &c->output, 1, NULL, 0, &result));
  }
  float value = *(const float*)weft_tensor_data(result);
  weft_tensor_destroy(result);
  return value;
}

static void chain_destroy(chain* c) {
  weft_tensor_destroy(c->feed);
  weft_run_metadata_destroy(c->trace);
  weft_session_destroy(c->session);
  weft_graph_destroy(c->graph);
}

static void chain_step(void* arg) { chain_run((const chain*)arg); }

/* Median wall-clock and process CPU microseconds per run, over 10 blocks of
 * `runs` / 10 runs after a warm-up that also checks the result. */
static void median_run_us(const chain* c, int nodes, int runs, double* wall,
                          double* cpu) {
  float value = chain_run(c);
  if (value != (float)nodes) {
    fprintf(stderr, "executor_overhead: chain of %d gave %g\n", nodes,
            (double)value);
    exit(1);
  }
  double walls[10], cpus[10];
  bench_time_blocks(chain_step, (void*)c, runs / 4 + 10,
                    runs / 10 > 0 ? runs / 10 : 1, walls, cpus);
  *wall = bench_median(walls, 10) * 1e6;
  *cpu = bench_median(cpus, 10) * 1e6;
}

int main(int argc, char** argv) {
  int nodes = 1000;
  int runs = 2000;
  int threads = 0;
  int positional = 0;
  int trace = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--trace") == 0) {
      trace = 1;
      continue;
    }
    if (bench_int_flag(argv[i], "--nodes", &nodes) ||
        bench_int_flag(argv[i], "--runs", &runs) ||
        bench_int_flag(argv[i], "--inter-op-threads", &threads)) {
      continue;
    }
    if (argv[i][0] != '-' && positional < 2) {
      *(positional++ == 0 ? &threads : &runs) = atoi(argv[i]);
      continue;
    }
    fprintf(stderr,
            "usage: executor_overhead [THREADS [RUNS]] [--nodes=N] "
            "[--runs=N] [--inter-op-threads=N] [--trace]\n");
    return 2;
  }
  if (nodes < 2 || runs < 1) {
    fprintf(stderr, "executor_overhead: need nodes >= 2, runs >= 1\n");
    return 2;
  }

  chain long_chain = chain_create(nodes, threads, trace);
  chain short_chain = chain_create(1, threads, trace);
  double long_us, long_cpu_us, short_us, short_cpu_us;
  median_run_us(&long_chain, nodes, runs, &long_us, &long_cpu_us);
  median_run_us(&short_chain, 1, runs, &short_us, &short_cpu_us);
  chain_destroy(&short_chain);
  chain_destroy(&long_chain);

  /* The headline divides the whole run by the node count, so it includes
   * the fixed cost of run() itself (feeds, fetches, plan lookup); the
   * marginal figure subtracts a one-node run to isolate the per-node part. */
  double per_node = long_us / nodes;
  double marginal = (long_us - short_us) / (nodes - 1);
  const double target = 0.25;
  /* The line scripts/bench_peers.sh reads. */
  char label[64];
  snprintf(label, sizeof label, "Weft executor per node (chain of %d Add%s)",
           nodes, trace ? ", traced" : "");
  bench_print_per_unit(label, threads > 0 ? threads : 1, long_us * 1e-6,
                       long_cpu_us * 1e-6, runs / 10 > 0 ? runs / 10 : 1,
                       nodes, "node");
  printf("  run of the chain:     %10.2f µs (CPU %.2f µs)\n", long_us,
         long_cpu_us);
  printf("  run of one node:      %10.2f µs (fixed cost of run())\n",
         short_us);
  printf("  per node (run/%d):  %10.3f µs   target ≤ %.2f µs: %s\n", nodes,
         per_node, target, per_node <= target ? "met" : "NOT met");
  printf("  per node (marginal):  %10.3f µs\n", marginal);
  return 0;
}
