/* Training steps per second of the Fashion-MNIST MLP (784 -> 256 -> 10,
 * ReLU, sparse softmax cross-entropy, plain SGD at 0.1, batches of 100) in
 * a Weft session, with the inter- and intra-op thread counts given
 * (default 1).  The batch is fixed random data: the benchmark measures the
 * training step, not input handling.  Its twin train_mlp_torch.cc runs the
 * same model in LibTorch; bench.sh runs both and prints the ratio.
 *
 *   train_mlp [THREADS]
 * prints "weft mlp training: T threads: S steps/s (median of R x N steps),
 * peak RSS M MiB", then the peak run memory of one step (WEFT_RECOMPUTE=cheap
 * turns recomputation on). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <sys/resource.h>

#include "bench_util.h"

enum { BATCH = 100, PIXELS = 784, HIDDEN = 256, CLASSES = 10 };
enum { WARMUP = 20, STEPS = 100, REPEATS = 7 };

static uint64_t rng = 42;

static float next_uniform(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng >> 40) * (1.0 / 16777216.0));
}

static weft_output variable(weft_graph* g, const char* name, int64_t r,
                            int64_t c) {
  int64_t dims[2] = {r, c};
  weft_tensor* t;
  weft_status* st = weft_tensor_create(WEFT_FLOAT32, dims, c ? 2 : 1, &t);
  if (st) bench_die("tensor", st);
  float* p = weft_tensor_data(t);
  float limit = c ? sqrtf(6.0f / (float)(r + c)) : 0.0f;
  for (int64_t i = 0; i < weft_tensor_element_count(t); ++i)
    p[i] = (next_uniform() * 2 - 1) * limit;
  weft_output init, v;
  char cname[64];
  snprintf(cname, sizeof cname, "%s/init", name);
  if ((st = weft_graph_constant(g, cname, t, &init)) ||
      (st = weft_graph_variable(g, name, init, &v, NULL)))
    bench_die(name, st);
  weft_tensor_destroy(t);
  return v;
}

static weft_output op2(weft_graph* g, const char* op, weft_output a,
                       weft_output b) {
  weft_output in[2] = {a, b}, out;
  weft_status* st = weft_graph_apply(g, op, NULL, in, 2, &out);
  if (st) bench_die(op, st);
  return out;
}

int main(int argc, char** argv) {
  /* 0: the session's defaults (the runtime chooses the kernels' threads). */
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 0) threads = 1;
  weft_graph* g;
  weft_status* st = weft_graph_create(&g);
  if (st) bench_die("graph", st);
  int64_t xd[2] = {BATCH, PIXELS}, yd[1] = {BATCH};
  weft_output x, y;
  if ((st = weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 2, &x)) ||
      (st = weft_graph_placeholder(g, "y", WEFT_INT32, yd, 1, &y)))
    bench_die("placeholders", st);
  weft_output w1 = variable(g, "w1", PIXELS, HIDDEN);
  weft_output b1 = variable(g, "b1", HIDDEN, 0);
  weft_output w2 = variable(g, "w2", HIDDEN, CLASSES);
  weft_output b2 = variable(g, "b2", CLASSES, 0);
  weft_output h = op2(g, "BiasAdd", op2(g, "MatMul", x, w1), b1), r, loss;
  if ((st = weft_graph_apply(g, "Relu", NULL, &h, 1, &r))) bench_die("relu", st);
  weft_output logits = op2(g, "BiasAdd", op2(g, "MatMul", r, w2), b2);
  weft_output xent = op2(g, "SparseSoftmaxCrossEntropyWithLogits", logits, y);
  if ((st = weft_graph_apply(g, "Mean", "loss", &xent, 1, &loss)))
    bench_die("loss", st);
  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  opt.learning_rate = 0.1;
  weft_node *train, *init;
  if ((st = weft_minimize(g, loss, &opt, "train", &train)) ||
      (st = weft_graph_initialize_all(g, "init", &init)))
    bench_die("minimize", st);

  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = threads;
  o.intra_op_threads = threads;
  weft_session* s;
  if ((st = weft_session_create(g, &o, &s))) bench_die("session", st);
  if ((st = weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL)))
    bench_die("init", st);

  weft_tensor *xt, *yt;
  if ((st = weft_tensor_create(WEFT_FLOAT32, xd, 2, &xt)) ||
      (st = weft_tensor_create(WEFT_INT32, yd, 1, &yt)))
    bench_die("batch", st);
  float* xp = weft_tensor_data(xt);
  int32_t* yp = weft_tensor_data(yt);
  for (int i = 0; i < BATCH * PIXELS; ++i) xp[i] = next_uniform();
  for (int i = 0; i < BATCH; ++i) yp[i] = i % CLASSES;
  weft_output feeds[2] = {x, y};
  weft_tensor* values[2] = {xt, yt};

  double samples[REPEATS];
  for (int rep = -1; rep < REPEATS; ++rep) {
    int n = rep < 0 ? WARMUP : STEPS;
    double t0 = bench_now_seconds();
    for (int i = 0; i < n; ++i)
      if ((st = weft_session_run(s, feeds, values, 2, NULL, 0, &train, 1,
                                 NULL)))
        bench_die("step", st);
    if (rep >= 0) samples[rep] = n / (bench_now_seconds() - t0);
  }
  bench_session_step step = {s, feeds, values, 2, train};
  bench_report_memory("weft mlp training", &step);
  weft_tensor* lt;
  if ((st = weft_session_run(s, feeds, values, 2, &loss, 1, NULL, 0, &lt)))
    bench_die("loss", st);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("weft mlp training: %d thread%s: %.1f steps/s (median of %d x %d "
         "steps), peak RSS %.1f MiB, final loss %.4f\n", threads,
         threads == 1 ? "" : "s", bench_median(samples, REPEATS), REPEATS,
         STEPS, ru.ru_maxrss / 1024.0, *(float*)weft_tensor_data(lt));
  weft_tensor_destroy(lt);
  weft_tensor_destroy(xt);
  weft_tensor_destroy(yt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 0;
}
