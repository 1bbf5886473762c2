/* Per-iteration cost of a while loop with a trivial body: i = i + 1 while
 * i < 100000, all inside one session run.  Prints the median wall and CPU
 * time per iteration over repetitions.  Usage: while_loop [threads] [reps]
 * (threads: inter-op threads of the session, 0 = the caller's thread). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "weft/weft.h"

#define ITERATIONS 100000

static weft_output const_i32(weft_graph* g, int32_t v) {
  weft_tensor* t = NULL;
  weft_status* st = weft_tensor_create_copy(WEFT_INT32, NULL, 0, &v, sizeof v,
                                            &t);
  if (st) bench_die("tensor", st);
  weft_output out;
  st = weft_graph_constant(g, NULL, t, &out);
  if (st) bench_die("constant", st);
  weft_tensor_destroy(t);
  return out;
}

static weft_output apply2(weft_graph* g, const char* op, weft_output a,
                          weft_output b) {
  weft_op_builder* ob = weft_op_begin(g, op, NULL);
  weft_op_add_input(ob, a);
  weft_op_add_input(ob, b);
  weft_node* n = NULL;
  weft_status* st = weft_op_finish(ob, &n);
  if (st) bench_die(op, st);
  return (weft_output){n, 0};
}

static weft_status* below(weft_graph* g, void* user, const weft_output* v,
                          int32_t n, weft_output* pred) {
  (void)n;
  *pred = apply2(g, "Less", v[0], *(const weft_output*)user);
  return NULL;
}

static weft_status* step(weft_graph* g, void* user, const weft_output* v,
                         int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  next[0] = apply2(g, "Add", v[0], const_i32(g, 1));
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int reps = argc > 2 ? atoi(argv[2]) : 21;
  weft_status* st = weft_plugins_discover();
  if (st) bench_die("plugins", st);
  weft_graph* g = NULL;
  if ((st = weft_graph_create(&g))) bench_die("graph", st);
  weft_output limit = const_i32(g, ITERATIONS);
  weft_output i0 = const_i32(g, 0);
  weft_output out;
  st = weft_while_loop(g, below, step, &limit, &i0, 1, NULL, &out);
  if (st) bench_die("while_loop", st);
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = threads;
  o.intra_op_threads = threads > 0 ? threads : 1;
  weft_session* s = NULL;
  if ((st = weft_session_create(g, &o, &s))) bench_die("session", st);
  double* wall = malloc(sizeof(double) * (size_t)reps);
  double* cpu = malloc(sizeof(double) * (size_t)reps);
  for (int r = -2; r < reps; ++r) {  /* two warm-up runs */
    double w0 = bench_now_seconds(), c0 = bench_process_cpu_seconds();
    weft_tensor* t = NULL;
    st = weft_session_run(s, NULL, NULL, 0, &out, 1, NULL, 0, &t);
    double w1 = bench_now_seconds(), c1 = bench_process_cpu_seconds();
    if (st) bench_die("run", st);
    if (*(const int32_t*)weft_tensor_data(t) != ITERATIONS) {
      fprintf(stderr, "while_loop: wrong result %d\n",
              *(const int32_t*)weft_tensor_data(t));
      return 1;
    }
    weft_tensor_destroy(t);
    if (r >= 0) {
      wall[r] = (w1 - w0) / ITERATIONS * 1e6;
      cpu[r] = (c1 - c0) / ITERATIONS * 1e6;
    }
  }
  printf("Weft while_loop, %d thread(s): %.3f us/iteration (CPU %.3f us), "
         "median of %d runs of %d iterations\n",
         threads, bench_median(wall, reps), bench_median(cpu, reps), reps,
         ITERATIONS);
  free(wall);
  free(cpu);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 0;
}
