/* run() of a tiny graph from C: one scalar Add of a fed placeholder and a
 * constant, fetched.  The time per call is what a binding adds its own
 * overhead to; bench/JavaBindingBench.java runs the same graph from Java.
 *
 *   tiny_run [--runs=20000] [--repetitions=9]
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>

#include "bench_util.h"
#include "weft/weft.h"

int main(int argc, char** argv) {
  int runs = 20000, repetitions = 9;
  for (int i = 1; i < argc; ++i) {
    if (!bench_int_flag(argv[i], "--runs", &runs) &&
        !bench_int_flag(argv[i], "--repetitions", &repetitions)) {
      fprintf(stderr, "usage: tiny_run [--runs=N] [--repetitions=N]\n");
      return 2;
    }
  }
  weft_graph* graph = NULL;
  BENCH_CHECK(weft_graph_create(&graph));
  weft_output x, one, sum;
  BENCH_CHECK(weft_graph_placeholder(graph, "x", WEFT_FLOAT32, NULL, 0, &x));
  const float one_value = 1.0f, x_value = 2.0f;
  weft_tensor* one_tensor = NULL;
  weft_tensor* feed = NULL;
  BENCH_CHECK(weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &one_value,
                                      sizeof one_value, &one_tensor));
  BENCH_CHECK(weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &x_value,
                                      sizeof x_value, &feed));
  BENCH_CHECK(weft_graph_constant(graph, "one", one_tensor, &one));
  const weft_output inputs[2] = {x, one};
  BENCH_CHECK(weft_graph_apply(graph, "Add", "sum", inputs, 2, &sum));
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "/device:CPU:0";
  weft_session* session = NULL;
  BENCH_CHECK(weft_session_create(graph, &options, &session));

  double samples[64];
  if (repetitions > 64) repetitions = 64;
  for (int r = -1; r < repetitions; ++r) { /* r = -1: warm-up */
    double start = bench_now_seconds();
    for (int i = 0; i < runs; ++i) {
      weft_tensor* out = NULL;
      BENCH_CHECK(weft_session_run(session, &x, &feed, 1, &sum, 1, NULL, 0,
                                   &out));
      if (*(const float*)weft_tensor_data(out) != 3.0f) {
        fprintf(stderr, "tiny_run: wrong sum\n");
        return 1;
      }
      weft_tensor_destroy(out);
    }
    if (r >= 0) samples[r] = (bench_now_seconds() - start) / runs * 1e6;
  }
  printf("C run() of one scalar Add: %.3f us per call (median of %d x %d "
         "runs)\n", bench_median(samples, repetitions), repetitions, runs);
  weft_session_destroy(session);
  weft_tensor_destroy(feed);
  weft_tensor_destroy(one_tensor);
  weft_graph_destroy(graph);
  return 0;
}
