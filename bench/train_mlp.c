/* The Fashion-MNIST MLP (784 -> 256 -> 10, ReLU, sparse softmax
 * cross-entropy) in a Weft session, with the inter- and intra-op thread
 * counts given (default 1), in one of three modes:
 *   sgd    training steps/s, plain SGD at 0.1, batches of 100 (weft_minimize)
 *   adam   training steps/s, Adam at 0.001 (beta 0.9 / 0.999, epsilon 1e-8:
 *          one ApplyAdam per variable, bias-corrected), batches of 100
 *   infer  inference steps/s: one run fetching the logits of a batch of
 *          BATCH (default 256) rows
 * The batch is fixed random data: the benchmark measures the step, not
 * input handling.  Its twins train_mlp_tf.py, train_mlp_jax.py and
 * train_mlp_torch.cc run the same math; scripts/bench_peers.sh runs them all.
 *
 *   train_mlp [THREADS [STEPS [sgd|adam|infer [BATCH]]]]
 * prints "Weft <what>, T thread(s): S steps/s (CPU C ms/step), ..." (see
 * bench_steps), then, when training, the peak run memory of one step
 * (WEFT_RECOMPUTE=cheap turns recomputation on), the peak RSS and the final
 * loss (WEFT_BENCH_DEVICE=CUDA or OPENCL runs on that device).  THREADS 0: the session's defaults (the runtime chooses).
 * WEFT_BENCH_PAIRED=N with THREADS >= 1: N pairs of blocks against a
 * 1-thread session instead (bench_paired; THREADS 1 is the method's A/A
 * control), or against a session of THREADS without some optimizations
 * with WEFT_BENCH_PAIRED_OPTIMIZATIONS=MASK (0xfffffffb: all but fusion). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <sys/resource.h>

#include "bench_util.h"

enum { TRAIN_BATCH = 100, PIXELS = 784, HIDDEN = 256, CLASSES = 10 };
enum { WARMUP = 20 };

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

/* One inference step: run the graph fetching the logits. */
typedef struct infer_step {
  weft_session* session;
  weft_output feed, logits;
  weft_tensor* value;
} infer_step;

static void run_infer_step(void* arg) {
  const infer_step* s = arg;
  weft_tensor* out = NULL;
  BENCH_CHECK(weft_session_run(s->session, &s->feed, &s->value, 1,
                               &s->logits, 1, NULL, 0, &out));
  weft_tensor_destroy(out);
}

int main(int argc, char** argv) {
  /* 0: the session's defaults (the runtime chooses the kernels' threads). */
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 0) threads = 1;
  const char* mode = argc > 3 ? argv[3] : "sgd";
  const int infer = strcmp(mode, "infer") == 0;
  const int adam = strcmp(mode, "adam") == 0;
  if (!infer && !adam && strcmp(mode, "sgd") != 0) {
    fprintf(stderr, "usage: train_mlp [THREADS [STEPS [sgd|adam|infer "
                    "[BATCH]]]]\n");
    return 2;
  }
  const int batch = infer ? (argc > 4 ? atoi(argv[4]) : 256) : TRAIN_BATCH;
  int steps = argc > 2 ? atoi(argv[2]) : (infer ? 2000 : 700);
  weft_graph* g;
  weft_status* st = weft_graph_create(&g);
  if (st) bench_die("graph", st);
  int64_t xd[2] = {batch, PIXELS}, yd[1] = {batch};
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
  weft_node *train = NULL, *init;
  if (!infer) {
    weft_output xent = op2(g, "SparseSoftmaxCrossEntropyWithLogits", logits,
                           y);
    if ((st = weft_graph_apply(g, "Mean", "loss", &xent, 1, &loss)))
      bench_die("loss", st);
    weft_optimizer_options opt;
    weft_optimizer_options_init(
        &opt, adam ? WEFT_OPTIMIZER_ADAM : WEFT_OPTIMIZER_GRADIENT_DESCENT);
    opt.learning_rate = adam ? 0.001 : 0.1;  /* Adam: defaults otherwise */
    if ((st = weft_minimize(g, loss, &opt, "train", &train)))
      bench_die("minimize", st);
  }
  if ((st = weft_graph_initialize_all(g, "init", &init)))
    bench_die("initialize", st);

  weft_session* s = bench_open_session(g, threads, init);

  weft_tensor *xt, *yt;
  if ((st = weft_tensor_create(WEFT_FLOAT32, xd, 2, &xt)) ||
      (st = weft_tensor_create(WEFT_INT32, yd, 1, &yt)))
    bench_die("batch", st);
  float* xp = weft_tensor_data(xt);
  int32_t* yp = weft_tensor_data(yt);
  for (int i = 0; i < batch * PIXELS; ++i) xp[i] = next_uniform();
  for (int i = 0; i < batch; ++i) yp[i] = i % CLASSES;
  weft_output feeds[2] = {x, y};
  weft_tensor* values[2] = {xt, yt};

  char label[64];
  if (infer) {
    snprintf(label, sizeof label, "Weft MLP inference batch %d", batch);
    infer_step step = {s, x, logits, xt};
    bench_steps(label, threads, steps, WARMUP, run_infer_step, &step);
  } else {
    snprintf(label, sizeof label, "Weft MLP %s training",
             adam ? "Adam" : "SGD");
    bench_session_step step = {s, feeds, values, 2, train};
    /* WEFT_BENCH_PAIRED: against a 1-thread session (or one without
     * WEFT_BENCH_PAIRED_OPTIMIZATIONS), block by block. */
    weft_session* s1 = bench_open_control_session(g, threads, init);
    bench_session_step step1 = {s1, feeds, values, 2, train};
    if (s1 == NULL || !bench_paired(label, threads, steps / 10, WARMUP,
                                    bench_run_session_step, &step1, &step))
      bench_steps(label, threads, steps, WARMUP, bench_run_session_step,
                  &step);
    bench_report_memory("weft mlp training", &step);
    bench_report_trace("weft mlp training", &step, s1 != NULL ? &step1 : NULL);
    if (s1 != NULL) weft_session_destroy(s1);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("  peak RSS %.1f MiB", ru.ru_maxrss / 1024.0);
  if (!infer) {
    weft_tensor* lt;
    if ((st = weft_session_run(s, feeds, values, 2, &loss, 1, NULL, 0, &lt)))
      bench_die("loss", st);
    printf(", final loss %.4f", *(float*)weft_tensor_data(lt));
    weft_tensor_destroy(lt);
  }
  printf("\n");
  weft_tensor_destroy(xt);
  weft_tensor_destroy(yt);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 0;
}
