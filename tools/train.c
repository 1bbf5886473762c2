/* weft train fashion-mnist — the main job: trains a classifier on
 * Fashion-MNIST (Debian's dataset-fashion-mnist) with symbolic gradients
 * and gradient descent, reports test accuracy and saves a checkpoint.
 *
 *   --model softmax   784 -> 10 softmax regression (TensorFlow's classic
 *                     MNIST tutorial: learning rate 0.5, batches of 100)
 *   --model mlp       784 -> 256 -> 10 with ReLU (Adam, learning rate
 *                     0.001)
 *   --model cnn       two 5x5 convolutions (32 and 64 channels, SAME, ReLU,
 *                     2x2 max pooling) -> 3136 -> 10 (the classic "deep
 *                     MNIST" tutorial's shape; Adam, learning rate 0.002,
 *                     batches of 50)
 *   --model lstm      each image as 28 rows of 28 features read by an
 *                     LSTM of 128 units in a weft_while_loop over the
 *                     rows, then 128 -> 10 (Adam, learning rate 0.002;
 *                     the classic "RNN on MNIST" tutorial)
 *   --optimizer sgd|momentum|adam and --learning-rate override these.
 *
 * The trained model is saved as a bundle (--save DIR, default
 * fashion-mnist-MODEL-model): the whole graph with its variables and a
 * serving_default signature, images -> logits, probabilities, classes, that
 * `weft run`, Java's Model.load and Julia's load_model serve.  The last
 * evaluation prints a hash of the predicted classes of the test set, so a
 * program serving the bundle elsewhere can show it predicts the same.
 *
 * Batches are drawn from a permutation of the training set made per epoch
 * from --seed, and the step count is a variable saved in the checkpoint, so
 * --resume continues exactly where a run stopped: with one thread on the
 * CPU the losses after a resume equal, bit for bit, those of a run that
 * never stopped (tests/test_train_main.c checks it).
 *
 * The models are built in train_model.c, checkpoints saved, kept and
 * resumed in train_checkpoint.c, TensorBoard's files written in
 * train_summary.c; this file reads the data, runs the steps (alone,
 * data-parallel or through a parameter server), evaluates and saves.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* TIOCGWINSZ, struct winsize */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tools/commands.h"
#include "tools/random.h"
#include "tools/idx.h"
#include "tools/train.h"
#include "tools/train_input.h"
#include "tools/train_summary.h"
#include "weft/weft.h"

/* ---- Small helpers -------------------------------------------------------- */

int train_check(weft_status* st, const char* what) {
  if (st == NULL) return 1;
  fprintf(stderr, "weft train: %s: %s\n", what, weft_status_message(st));
  weft_status_destroy(st);
  return 0;
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- Data --------------------------------------------------------------------- */

static void fill_batch(const idx_dataset* d, const int32_t* order,
                       int64_t first, int64_t count, float* x,
                       int32_t* labels) {
  for (int64_t i = 0; i < count; ++i) {
    int64_t e = order ? order[first + i] : first + i;
    const uint8_t* img = d->images.data + (size_t)e * PIXELS;
    for (int p = 0; p < PIXELS; ++p) x[i * PIXELS + p] = img[p] / 255.0f;
    labels[i] = d->labels.data[e];
  }
}

/* The order of the training set in `epoch`: a Fisher-Yates shuffle seeded
 * by (seed, epoch), so any step's batch can be recomputed. */
static void epoch_order(uint64_t seed, int64_t epoch, int32_t* order,
                        int64_t n) {
  uint64_t s = seed * 1000003u + (uint64_t)epoch;
  for (int64_t i = 0; i < n; ++i) order[i] = (int32_t)i;
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = (int64_t)(weft_tool_random(&s) % (uint64_t)(i + 1));
    int32_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

/* Splits "a,b,c" into at most `max` paths (copied into `buf`). */
static int32_t split_paths(const char* list, char* buf, size_t size,
                           const char** out, int32_t max) {
  snprintf(buf, size, "%s", list);
  int32_t n = 0;
  for (char* save = NULL, *p = strtok_r(buf, ",", &save); p && n < max;
       p = strtok_r(NULL, ",", &save))
    out[n++] = p;
  return n;
}

/* --parameter-server: whether global step `step` is this worker's: the
 * batches of each epoch are dealt to the workers (ranks 1..) in turn. */
static int worker_takes(const train_args* a, int64_t step) {
  const int64_t per_epoch = a->train_count / a->batch;
  return per_epoch > 0 && (step % per_epoch) % (a->ranks - 1) == a->rank - 1;
}

/* How many of the steps before `step` are this worker's. */
static int64_t worker_steps_before(const train_args* a, int64_t step) {
  int64_t n = 0;
  for (int64_t k = 0; k < step; ++k) n += worker_takes(a, k);
  return n;
}

/* The training set as a dataset (--input pipeline, train_input.c): the
 * IDX pixels or the --data tfrecord: files, shuffled over the whole set
 * (seeded; each epoch differently), batched (a short last batch dropped,
 * as the feeding loop does), repeated for the epochs, past the steps a
 * resumed run has done, cast and scaled, and prefetched on a background
 * thread while the step runs. */
int train_input_pipeline(const train_args* a, const idx_dataset* train,
                         weft_graph* g, weft_output* batch) {
  enum { kMaxFiles = 64 };
  char files[4096];
  const char* paths[kMaxFiles];
  int32_t num_paths = 0;
  train_input in;
  memset(&in, 0, sizeof in);
  if (a->tfrecord) {
    num_paths = split_paths(a->tfrecord, files, sizeof files, paths,
                            kMaxFiles);
    in.tfrecords = paths;
    in.num_tfrecords = num_paths;
    in.compression = train_input_compression(paths[0]);
    in.shuffle_buffer = a->train_count;
    in.parallel = a->threads > 0 ? a->threads : 2;
  } else {
    in.images = train->images.data;
    in.labels = train->labels.data;
    in.n = a->train_count;  /* without the --validation images */
  }
  in.batch = a->batch;
  in.epochs = a->epochs;
  in.seed = a->seed;
  in.skip = a->resume_step;
  in.shard = a->data_parallel ? a->rank : 0;
  in.num_shards = a->data_parallel ? a->ranks : 1;
  if (a->parameter_server && a->rank > 0) {
    /* A worker: whole batches, every (ranks - 1)-th of each epoch. */
    in.shard = a->rank - 1;
    in.num_shards = a->ranks - 1;
    in.whole_batches = 1;
    in.skip = worker_steps_before(a, a->resume_step);
  }
  in.epoch_elements = a->train_count;
  return train_input_build(&in, g, "train_input", batch);
}

/* ---- Running ------------------------------------------------------------------- */

static void progress(int tty, int64_t step, int64_t total, int64_t epoch,
                     int64_t epochs, double loss, double rate) {
  if (tty) {
    /* One line that fits the terminal: the bar takes what the numbers
     * leave (up to 40 columns; none on a very narrow terminal, where the
     * numbers are cut rather than wrapped onto a new line each time). */
    char text[160];
    snprintf(text, sizeof text,
             " epoch %lld/%lld  step %lld/%lld  loss %.4f  %.0f steps/s ",
             (long long)epoch + 1, (long long)epochs, (long long)step,
             (long long)total, loss, rate);
    struct winsize ws;
    int columns = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0
                      ? ws.ws_col
                      : 80;
    int width = columns - 1 - (int)strlen(text) - 2;
    if (width > 40) width = 40;
    char bar[48] = "";
    if (width >= 5) {
      int filled = (int)(width * (double)step / (double)total);
      bar[0] = '[';
      for (int i = 0; i < width; ++i) bar[1 + i] = i < filled ? '=' : ' ';
      bar[width + 1] = ']';
      bar[width + 2] = '\0';
    }
    int room = columns - 1 - (int)strlen(bar);
    if (room < 0) room = 0;
    if ((int)strlen(text) > room) text[room] = '\0';
    /* \r then erase to the end of the line: a shorter line leaves nothing
     * of the longer one before it. */
    printf("\r%s%s\033[K", bar, text);
    fflush(stdout);
  } else {
    printf("epoch %lld/%lld step %lld/%lld loss %.4f %.0f steps/s\n",
           (long long)epoch + 1, (long long)epochs, (long long)step,
           (long long)total, loss, rate);
  }
}

/* FNV-1a over the predicted classes, one byte each, in test-set order: what
 * a program serving the saved bundle prints to show it predicts the same. */
static uint64_t fnv1a(uint64_t h, uint8_t byte) {
  return (h ^ byte) * 0x100000001b3ull;
}

static double accuracy(weft_session* s, const model* m, const idx_dataset* d,
                       int* ok, uint64_t* predictions_hash) {
  int64_t n = d->images.dims[0], right = 0;
  uint64_t hash = 0xcbf29ce484222325ull;
  float* x = malloc(sizeof(float) * EVAL_BATCH * PIXELS);
  int32_t* labels = malloc(sizeof(int32_t) * EVAL_BATCH);
  *ok = x != NULL && labels != NULL;
  for (int64_t first = 0; *ok && first < n; first += EVAL_BATCH) {
    int64_t count = n - first < EVAL_BATCH ? n - first : EVAL_BATCH;
    fill_batch(d, NULL, first, count, x, labels);
    int64_t dims[2] = {count, PIXELS};
    weft_tensor* xt = NULL;
    weft_tensor* logits = NULL;
    *ok = train_check(weft_tensor_create_from_data(
                    WEFT_FLOAT32, dims, 2, x,
                    sizeof(float) * (size_t)(count * PIXELS), NULL, NULL,
                    &xt), "test batch") &&
          train_check(weft_session_run(s, &m->x, &xt, 1, &m->logits, 1, NULL, 0,
                                 &logits), "evaluating");
    if (*ok) {
      const float* l = weft_tensor_data(logits);
      for (int64_t i = 0; i < count; ++i) {
        int best = 0;
        for (int c = 1; c < CLASSES; ++c)
          if (l[i * CLASSES + c] > l[i * CLASSES + best]) best = c;
        right += best == labels[i];
        hash = fnv1a(hash, (uint8_t)best);
      }
    }
    weft_tensor_destroy(logits);
    weft_tensor_destroy(xt);
  }
  free(x);
  free(labels);
  if (predictions_hash) *predictions_hash = hash;
  return n ? (double)right / (double)n : 0;
}

/* ---- Interruption -------------------------------------------------------------- */

/* SIGINT or SIGTERM asks the training loop to stop after the step in
 * flight; the loop then saves a checkpoint and exits 128 + the signal, the
 * shell's convention.  The signals are blocked while training and taken
 * between steps (sigtimedwait), never delivered asynchronously: a handler
 * interrupting the JIT-compiled kernels of oneDNN in the middle of a step
 * corrupted the heap now and then (tests/test_train_main.c's SIGINT case
 * crashed in a MatMul about one run in six), and threads the step starts
 * inherit the blocked mask, so none of them takes the signal either.  Once
 * one arrives the signals are unblocked with their default action: a
 * second one kills the process at once, and the save (temporary file, then
 * rename) leaves the previous checkpoint intact if that happens mid-write. */
static sigset_t stop_signals;

static void block_stop_signals(void) {
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
}

/* The stop signal waiting to be taken, or 0. */
static int take_stop_signal(void) {
  const struct timespec now = {0, 0};
  int signal_number = sigtimedwait(&stop_signals, NULL, &now);
  if (signal_number <= 0) return 0;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
  return signal_number;
}

/* The model as a bundle: the whole graph (training included, so it can go
 * on elsewhere), the session's variables, and the signature servers call. */
static int save_bundle(const train_args* a, const model* m, weft_session* s) {
  const char* in_keys[] = {"images"};
  const char* out_keys[] = {"logits", "probabilities", "classes"};
  weft_output outs[] = {m->logits, m->probabilities, m->classes};
  weft_signature_def sig = {sizeof sig, WEFT_DEFAULT_SIGNATURE, 1, in_keys,
                            &m->x, 3, out_keys, outs};
  weft_model* model = NULL;
  if (!train_check(weft_model_create(m->graph, s, &sig, 1, &model),
             "describing the model"))
    return 0;
  int ok = train_check(weft_model_save(model, a->save), "saving the model");
  weft_model_destroy(model);
  if (ok)
    printf("model: %s (serving_default: images -> logits, probabilities, "
           "classes)\n", a->save);
  return ok;
}

/* ---- Serving the variables (--parameter-server) ---------------------------- */

typedef struct ps_monitor {
  const train_args* a;
  const model* m;
  weft_session* s;
  int64_t total, per_epoch;
  int stop;    /* under mu */
  int failed;  /* reading the step or a periodic checkpoint failed */
  pthread_mutex_t mu;
  pthread_cond_t cv;
} ps_monitor;

/* While the workers train: the global step's progress and the periodic
 * checkpoints (--checkpoint-every), from runs of the server's own beside
 * its serving. */
static void* monitor_main(void* arg) {
  ps_monitor* mo = arg;
  const train_args* a = mo->a;
  const int tty = isatty(STDOUT_FILENO);
  int64_t first = -1, last_saved = 0;
  double t0 = now_seconds(), last_report = 0, last_time = t0;
  pthread_mutex_lock(&mo->mu);
  while (!mo->stop && !mo->failed) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec += 1;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&mo->cv, &mo->mu, &until);
    if (mo->stop) break;
    pthread_mutex_unlock(&mo->mu);
    weft_tensor* t = NULL;
    int ok = train_check(weft_session_run(mo->s, NULL, NULL, 0, &mo->m->step, 1,
                                    NULL, 0, &t), "reading the step");
    const int64_t step = ok ? *(const int64_t*)weft_tensor_data(t) : 0;
    weft_tensor_destroy(t);
    const double now = now_seconds();
    if (ok && first < 0) {
      first = last_saved = step;
      t0 = last_time = now;
    }
    if (ok && ((tty && now - last_report > 0.1) ||
               (!tty && now - last_report >= 5))) {
      const double rate = (double)(step - first) / (now - t0 > 0 ? now - t0
                                                                  : 1e-9);
      if (tty)
        printf("\r[serving %d worker(s)] epoch %lld/%lld  step %lld/%lld  "
               "%.0f steps/s ", a->ranks - 1,
               (long long)(step / mo->per_epoch + (step < mo->total)),
               (long long)a->epochs, (long long)step, (long long)mo->total,
               rate);
      else
        printf("serving %d worker(s): step %lld/%lld %.0f steps/s\n",
               a->ranks - 1, (long long)step, (long long)mo->total, rate);
      fflush(stdout);
      last_report = now;
    }
    if (ok && step < mo->total &&
        train_checkpoint_due(a, step, now, &last_saved, &last_time))
      ok = train_save_checkpoint(a, mo->s, step,
                                 "saving a periodic checkpoint");
    pthread_mutex_lock(&mo->mu);
    if (!ok) mo->failed = 1;
  }
  pthread_mutex_unlock(&mo->mu);
  return NULL;
}

/* Rank 0 of --parameter-server: serves the workers' steps until each has
 * ended; a worker that died leaves a checkpoint to resume from. */
static int serve_workers(const train_args* a, const model* m,
                         weft_session* s, int64_t total, int64_t per_epoch) {
  printf("serving the variables to %d worker(s) (ranks 1-%d), each training "
         "on its own\n", a->ranks - 1, a->ranks - 1);
  ps_monitor mo;
  memset(&mo, 0, sizeof mo);
  mo.a = a;
  mo.m = m;
  mo.s = s;
  mo.total = total;
  mo.per_epoch = per_epoch;
  pthread_mutex_init(&mo.mu, NULL);
  pthread_cond_init(&mo.cv, NULL);
  pthread_t thread;
  const int started = pthread_create(&thread, NULL, monitor_main, &mo) == 0;
  const double t0 = now_seconds();
  weft_status* st = weft_session_serve(s);
  pthread_mutex_lock(&mo.mu);
  mo.stop = 1;
  pthread_cond_signal(&mo.cv);
  pthread_mutex_unlock(&mo.mu);
  if (started) pthread_join(thread, NULL);
  pthread_cond_destroy(&mo.cv);
  pthread_mutex_destroy(&mo.mu);
  if (isatty(STDOUT_FILENO)) printf("\n");
  if (st != NULL) {
    fprintf(stderr, "weft train: serving the workers: %s\n",
            weft_status_message(st));
    weft_status_destroy(st);
    if (train_save_checkpoint(a, s, -1, "saving the checkpoint"))
      fprintf(stderr, "weft train: saved %s; relaunch with --resume to "
              "continue\n", a->checkpoint);
    /* A rank is gone: finishing MPI would wait for it forever. */
    fprintf(stderr, "weft train: ending the MPI job\n");
    train_check(weft_cluster_abort(1), "ending the MPI job");
    return 0;
  }
  if (mo.failed) return 0;
  printf("epoch %lld/%lld: %.2f s training, %d worker(s)\n",
         (long long)a->epochs, (long long)a->epochs, now_seconds() - t0,
         a->ranks - 1);
  return 1;
}

/* The accuracy on the held-out images (--validation), NaN without them;
 * 0 with *ok cleared when evaluating fails. */
static double validation_accuracy(weft_session* s, const model* m,
                                  const idx_dataset* validation, int* ok) {
  return validation->images.dims[0] > 0
             ? accuracy(s, m, validation, ok, NULL)
             : NAN;
}

static int run_training(const train_args* a, model* m,
                        const idx_dataset* train, const idx_dataset* test,
                        const idx_dataset* validation) {
  train_summary ts;
  if (!train_summary_build(a, m, &ts)) return 1;
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = a->devices;
  o.inter_op_threads = a->threads;
  o.intra_op_threads = a->threads;
  if (a->parameter_server) {
    o.cluster = "ps:1,worker";
    o.serving_jobs = "ps";
  }
  weft_session* s = NULL;
  if (!train_check(weft_session_create(m->graph, &o, &s), "creating the session"))
    return 1;
  int rc = 1;
  /* Each rank of a data-parallel job takes its shard of every batch; a
   * worker of a parameter server whole batches. */
  const int64_t shard = a->data_parallel ? a->batch / a->ranks : a->batch;
  const int chief = a->rank == 0;
  /* --parameter-server: rank 0 holds the variables (initializes or
   * restores them, serves, evaluates and saves); the others train. */
  const int worker = a->parameter_server && a->rank > 0;
  float* x = malloc(sizeof(float) * (size_t)(shard * PIXELS));
  int32_t* labels = malloc(sizeof(int32_t) * (size_t)shard);
  int64_t n = a->train_count;
  int32_t* order = malloc(sizeof(int32_t) * (size_t)n);
  FILE* log = NULL;
  weft_tensor *xt = NULL, *lt = NULL, *step_t = NULL;
  int64_t xd[2] = {shard, PIXELS}, ld[1] = {shard};
  if (!x || !labels || !order) {
    fprintf(stderr, "weft train: out of memory\n");
    goto done;
  }
  const int64_t per_epoch = n / a->batch;
  /* --steps cuts the schedule short (a quick check, or a comparison of
   * the first steps on two devices). */
  const int64_t total = a->steps > 0 && a->steps < per_epoch * a->epochs
                            ? a->steps
                            : per_epoch * a->epochs;
  if (per_epoch == 0) {
    fprintf(stderr, "weft train: --batch %lld is larger than the %lld "
            "training images\n", (long long)a->batch, (long long)n);
    goto done;
  }
  if (worker) {
    /* The variables are the server's. */
  } else if (a->resume) {
    if (!train_resume(a, m, s, total)) goto done;
  } else if (!train_check(weft_session_run(s, NULL, NULL, 0, NULL, 0, &m->init, 1,
                                     NULL), "initializing")) {
    goto done;
  }
  /* Every rank from rank 0's values (the same seed gives the same ones
   * anyway; a resume reads one file; this makes it so whatever happened). */
  if (m->broadcast &&
      !train_check(weft_session_run(s, NULL, NULL, 0, NULL, 0, &m->broadcast, 1,
                              NULL), "sharing rank 0's variables"))
    goto done;
  if (!train_check(weft_session_run(s, NULL, NULL, 0, &m->step, 1, NULL, 0,
                              &step_t), "reading the step"))
    goto done;
  int64_t step = *(const int64_t*)weft_tensor_data(step_t);
  if (chief && !train_summary_open(a, test, step, &ts)) goto done;
  if (a->parameter_server && !worker) {
    if (!serve_workers(a, m, s, total, per_epoch)) goto done;
    goto evaluate;
  }
  /* A worker's steps are its share of the schedule from where the run
   * (or the checkpoint resumed) began, whatever the others did since. */
  if (worker) step = a->resume ? a->resume_step : 0;
  if (!train_check(weft_tensor_create_from_data(
                 WEFT_FLOAT32, xd, 2, x,
                 sizeof(float) * (size_t)(shard * PIXELS), NULL, NULL,
                 &xt), "batch") ||
      !train_check(weft_tensor_create_from_data(
                 WEFT_INT32, ld, 1, labels,
                 sizeof(int32_t) * (size_t)shard, NULL, NULL, &lt),
             "batch"))
    goto done;
  if (chief && a->loss_log && a->resume && !train_truncate_loss_log(a->loss_log, step))
    goto done;
  if (chief && a->loss_log &&
      !(log = fopen(a->loss_log, a->resume ? "a" : "w"))) {
    fprintf(stderr, "weft train: %s: %s\n", a->loss_log, strerror(errno));
    goto done;
  }
  const int tty = isatty(STDOUT_FILENO);
  int64_t epoch = -1;
  double t0 = now_seconds(), last_report = t0, epoch_start = t0;
  int64_t steps_done = 0;
  weft_output feeds[2] = {m->x, m->labels};
  weft_tensor* values[2] = {xt, lt};
  weft_node* targets[2] = {m->train, m->step_inc};
  int stop_signal = 0;
  int64_t last_saved = step;
  double last_save_time = now_seconds();
  for (; step < total && !(stop_signal = take_stop_signal()); ++step) {
    if (step / per_epoch != epoch) {
      epoch = step / per_epoch;
      epoch_order(a->seed, epoch, order, n);
    }
    if (worker && !worker_takes(a, step)) continue;
    if (!a->pipeline)
      fill_batch(train, order,
                 (step % per_epoch) * a->batch +
                     (a->data_parallel ? a->rank * shard : 0),
                 shard, x, labels);
    weft_tensor* loss_t = NULL;
    /* --trace: the first step this process runs (after --resume, the
     * first after the checkpoint's). */
    const int traced = a->trace != NULL && steps_done == 0;
    weft_run_metadata* md =
        (a->explain || traced || (ts.writer && !ts.graph_written)) &&
                steps_done == 0
            ? weft_run_metadata_create()
            : NULL;
    /* A step that cannot finish (a rank of a data-parallel job died or
     * hung) ends at its deadline with UNAVAILABLE instead of hanging. */
    weft_run_options run_options;
    weft_run_options_init(&run_options);
    run_options.timeout_ms = a->step_timeout * 1000;
    run_options.trace_level = traced && md ? WEFT_TRACE_FULL : WEFT_TRACE_NONE;
    weft_status* st = weft_session_run_with_options(
        s, &run_options, feeds, values, a->pipeline ? 0 : 2, &m->loss_report,
        1, targets, 2, &loss_t, md);
    if (md && a->explain) fputs(weft_run_metadata_to_string(md), stdout);
    const int graph_ok = st != NULL || train_summary_graph(&ts, m, md);
    /* Under mpirun every rank traces its own step: FILE.rankN beside rank
     * 0's FILE. */
    char trace_path[4200];
    if (traced && a->rank > 0)
      snprintf(trace_path, sizeof trace_path, "%s.rank%d", a->trace, a->rank);
    else if (traced)
      snprintf(trace_path, sizeof trace_path, "%s", a->trace);
    const int trace_ok =
        st != NULL || !traced || !md ||
        train_check(weft_run_metadata_write_chrome_trace(md, trace_path),
                    "--trace");
    weft_run_metadata_destroy(md);
    if (!train_check(st, "training step") || !graph_ok || !trace_ok)
      goto done;
    float loss = *(const float*)weft_tensor_data(loss_t);
    weft_tensor_destroy(loss_t);
    if (!isfinite(loss)) {
      fprintf(stderr, "\nweft train: the loss diverged (%g) at step %lld: "
              "lower --learning-rate\n", loss, (long long)step);
      goto done;
    }
    if (log) fprintf(log, "%lld %a\n", (long long)step, loss);
    if (!train_summary_loss(&ts, step, loss)) goto done;
    ++steps_done;
    /* Periodic checkpoints (the chief's): what a relaunch with --resume
     * continues from after a failure that no signal announced. */
    if (chief && step + 1 < total &&
        train_checkpoint_due(a, step + 1, now_seconds(), &last_saved,
                             &last_save_time)) {
      if (log) fflush(log);
      if (!train_save_checkpoint(a, s, step + 1, "saving a periodic checkpoint"))
        goto done;
    }
    double t = now_seconds();
    if ((tty && t - last_report > 0.1) || (!tty && (step + 1) % 100 == 0) ||
        step + 1 == total) {
      progress(tty, step + 1, total, epoch, a->epochs, loss,
               steps_done / (t - t0 > 0 ? t - t0 : 1e-9));
      last_report = t;
    }
    /* Accuracy after each epoch but the last (reported below), with the
     * epoch's training time; evaluation time is kept out of steps/s. */
    if (chief && (step + 1) % per_epoch == 0 && step + 1 < total) {
      int ok = 1;
      double e0 = now_seconds(), acc = accuracy(s, m, test, &ok, NULL);
      double val = ok ? validation_accuracy(s, m, validation, &ok) : NAN;
      if (!ok ||
          !train_summary_epoch(&ts, s, step + 1, acc, val, m->learning_rate))
        goto done;
      double e1 = now_seconds();
      printf("%sepoch %lld/%lld: %.2f%% test accuracy, %.1f s training\n",
             tty ? "\n" : "", (long long)(epoch + 1), (long long)a->epochs,
             100 * acc, e0 - epoch_start);
      if (!isnan(val))
        printf("epoch %lld/%lld: %.2f%% validation accuracy (%lld held-out "
               "training images)\n", (long long)(epoch + 1),
               (long long)a->epochs, 100 * val,
               (long long)validation->images.dims[0]);
      t0 += e1 - e0;
      epoch_start = e1;
    }
  }
  if (tty) printf("\n");
  if (!stop_signal && steps_done > 0)
    printf("epoch %lld/%lld: %.2f s training%s\n",
           (long long)((total - 1) / per_epoch + 1), (long long)a->epochs,
           now_seconds() - epoch_start,
           total < per_epoch * a->epochs ? " (stopped by --steps)" : "");
  if (stop_signal) {
    /* `step` steps are done; the variables hold their result. */
    int signal_number = stop_signal;
    if (chief && !train_save_checkpoint(a, s, step,
                                  "saving the checkpoint after the "
                                  "interruption"))
      goto done;
    printf("interrupted by %s after step %lld of %lld (epoch %lld/%lld): "
           "saved %s; continue with --resume\n",
           signal_number == SIGINT ? "SIGINT" : "SIGTERM", (long long)step,
           (long long)total,
           (long long)(step > 0 ? (step - 1) / per_epoch + 1 : 1),
           (long long)a->epochs, a->checkpoint);
    rc = 128 + signal_number;
    goto done;
  }
  if (!chief) {
    /* The chief evaluates and writes the files; the other ranks are done. */
    rc = 0;
    goto done;
  }
evaluate:;
  int ok = 1;
  uint64_t predictions = 0;
  double acc = accuracy(s, m, test, &ok, &predictions);
  double val = ok ? validation_accuracy(s, m, validation, &ok) : NAN;
  if (!ok || !train_summary_epoch(&ts, s, total, acc, val, m->learning_rate))
    goto done;
  printf("test accuracy: %.2f%% (%lld examples, model %s, %lld epochs)\n",
         100 * acc, (long long)test->images.dims[0], a->model,
         (long long)a->epochs);
  if (!isnan(val))
    printf("validation accuracy: %.2f%% (%lld held-out training images)\n",
           100 * val, (long long)validation->images.dims[0]);
  printf("test predictions: %lld classes, fnv1a %016llx\n",
         (long long)test->images.dims[0], (unsigned long long)predictions);
  if (!train_save_checkpoint(a, s, total, "saving the checkpoint")) goto done;
  printf("checkpoint: %s\n", a->checkpoint);
  if (!save_bundle(a, m, s)) goto done;
  rc = 0;
done:
  train_summary_close(&ts);
  if (log) fclose(log);
  weft_tensor_destroy(step_t);
  weft_tensor_destroy(xt);
  weft_tensor_destroy(lt);
  weft_session_destroy(s);
  free(x);
  free(labels);
  free(order);
  return rc;
}

/* ---- Arguments -------------------------------------------------------------------- */

static int parse_int(const char* flag, const char* v, int64_t lo, int64_t hi,
                     int64_t* out) {
  char* end = NULL;
  long long n = v ? strtoll(v, &end, 10) : 0;
  if (!v || end == v || *end != '\0' || n < lo || n > hi) {
    fprintf(stderr, "weft train: %s wants an integer in [%lld, %lld]\n",
            flag, (long long)lo, (long long)hi);
    return 0;
  }
  *out = n;
  return 1;
}

static int parse_args(int argc, char** argv, train_args* a) {
  memset(a, 0, sizeof *a);
  a->model = "softmax";
  a->epochs = 2;
  a->batch = 0;  /* the model's default, below */
  a->data_dir = "/usr/share/datasets/fashion-mnist";
  a->seed = 1;
  a->pipeline = 1;
  if (argc < 2 || strcmp(argv[1], "fashion-mnist") != 0) {
    fprintf(stderr, "weft train: the dataset is 'fashion-mnist' (the only "
            "one so far)\n");
    return 0;
  }
  static char default_ckpt[64], default_save[64];
  int step_timeout_set = 0;
  for (int i = 2; i < argc; ++i) {
    const char* f = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int64_t n = 0;
    if (strcmp(f, "--resume") == 0) {
      a->resume = 1;
      continue;
    }
    if (strcmp(f, "--explain") == 0) {
      a->explain = 1;
      continue;
    }
    if (strcmp(f, "--data-parallel") == 0) {
      a->data_parallel = 1;
      continue;
    }
    if (strcmp(f, "--parameter-server") == 0) {
      a->parameter_server = 1;
      continue;
    }
    if (strcmp(f, "--input") == 0 && i + 1 < argc &&
        (strcmp(argv[i + 1], "pipeline") == 0 ||
         strcmp(argv[i + 1], "feed") == 0)) {
      a->pipeline = strcmp(argv[++i], "pipeline") == 0;
      continue;
    }
    if (v == NULL) {
      fprintf(stderr, "weft train: unknown or incomplete argument '%s'\n", f);
      return 0;
    }
    ++i;
    if (strcmp(f, "--model") == 0) {
      if (strcmp(v, "softmax") != 0 && strcmp(v, "mlp") != 0 &&
          strcmp(v, "lstm") != 0 && strcmp(v, "cnn") != 0) {
        fprintf(stderr, "weft train: --model is softmax, mlp, cnn or lstm\n");
        return 0;
      }
      a->model = v;
    } else if (strcmp(f, "--epochs") == 0) {
      if (!parse_int(f, v, 1, 1000, &a->epochs)) return 0;
    } else if (strcmp(f, "--steps") == 0) {
      if (!parse_int(f, v, 1, INT64_MAX, &a->steps)) return 0;
    } else if (strcmp(f, "--batch") == 0) {
      if (!parse_int(f, v, 1, 60000, &a->batch)) return 0;
    } else if (strcmp(f, "--step-timeout") == 0) {
      if (!parse_int(f, v, 0, 86400, &a->step_timeout)) return 0;
      step_timeout_set = 1;
    } else if (strcmp(f, "--bucket-bytes") == 0) {
      if (!parse_int(f, v, 0, INT64_MAX, &a->bucket_bytes)) return 0;
    } else if (strcmp(f, "--checkpoint-every") == 0) {
      /* N steps, or Ns / Nm / Nh of time. */
      char* end = NULL;
      long long count = strtoll(v, &end, 10);
      const int unit = end && *end ? (end[1] == '\0' ? *end : '?') : 0;
      const long long scale = unit == 's' ? 1 : unit == 'm' ? 60
                              : unit == 'h' ? 3600 : unit == 0 ? 1 : 0;
      if (end == v || count < 1 || scale == 0 || count > INT64_MAX / 3600) {
        fprintf(stderr, "weft train: --checkpoint-every wants a number of "
                "steps (100) or of seconds, minutes or hours (30s, 10m, "
                "1h)\n");
        return 0;
      }
      if (unit == 0)
        a->checkpoint_every = count;
      else
        a->checkpoint_seconds = count * scale;
    } else if (strcmp(f, "--keep") == 0) {
      if (!parse_int(f, v, 1, 1000, &a->keep)) return 0;
    } else if (strcmp(f, "--threads") == 0) {
      if (!parse_int(f, v, 0, 1024, &n)) return 0;
      a->threads = (int32_t)n;
    } else if (strcmp(f, "--seed") == 0) {
      if (!parse_int(f, v, 0, INT64_MAX, &n)) return 0;
      a->seed = (uint64_t)n;
    } else if (strcmp(f, "--learning-rate") == 0) {
      char* end = NULL;
      a->learning_rate = strtod(v, &end);
      if (end == v || *end != '\0' || !(a->learning_rate > 0)) {
        fprintf(stderr, "weft train: --learning-rate wants a positive "
                "number\n");
        return 0;
      }
    } else if (strcmp(f, "--optimizer") == 0) {
      if (strcmp(v, "sgd") != 0 && strcmp(v, "momentum") != 0 &&
          strcmp(v, "adam") != 0) {
        fprintf(stderr, "weft train: --optimizer is sgd, momentum or adam\n");
        return 0;
      }
      a->optimizer = v;
    } else if (strcmp(f, "--device") == 0) {
      a->devices = v;
    } else if (strcmp(f, "--data") == 0) {
      if (strncmp(v, "tfrecord:", 9) == 0) {
        if (v[9] == '\0') {
          fprintf(stderr, "weft train: --data tfrecord: names no file\n");
          return 0;
        }
        a->tfrecord = v + 9;
      } else {
        a->data_dir = v;
      }
    } else if (strcmp(f, "--checkpoint") == 0) {
      a->checkpoint = v;
    } else if (strcmp(f, "--save") == 0) {
      a->save = v;
    } else if (strcmp(f, "--loss-log") == 0) {
      a->loss_log = v;
    } else if (strcmp(f, "--logdir") == 0) {
      a->logdir = v;
    } else if (strcmp(f, "--trace") == 0) {
      a->trace = v;
    } else if (strcmp(f, "--validation") == 0) {
      if (!parse_int(f, v, 0, 59999, &a->validation)) return 0;
    } else {
      fprintf(stderr, "weft train: unknown argument '%s'\n", f);
      return 0;
    }
  }
  /* Batches of 100 (TensorFlow's MNIST tutorials), 50 for the CNN (the
   * "deep MNIST" tutorial's: over seeds 1-3 two epochs reach 89.2-89.9%
   * with Adam at 0.002, 88.9-89.5% with batches of 100). */
  if (a->batch == 0) a->batch = strcmp(a->model, "cnn") == 0 ? 50 : 100;
  a->rank = 0;
  a->ranks = 1;
  if ((a->data_parallel || a->parameter_server) && !step_timeout_set)
    a->step_timeout = 300;
  if (a->data_parallel && a->parameter_server) {
    fprintf(stderr, "weft train: --data-parallel (synchronous, every rank "
            "holds the variables) and --parameter-server (asynchronous, "
            "rank 0 holds them) exclude each other\n");
    return 0;
  }
  if (a->parameter_server) {
    if (!train_check(weft_cluster_world(&a->rank, &a->ranks), "--parameter-server"))
      return 0;
    if (a->ranks < 2) {
      fprintf(stderr, "weft train: --parameter-server needs mpirun -np 2 or "
              "more: rank 0 serves the variables, the others train\n");
      return 0;
    }
    a->variables_device = "/job:ps/task:0";
    if (a->rank != 0 && freopen("/dev/null", "w", stdout) == NULL) return 0;
  }
  if (a->data_parallel) {
    if (!train_check(weft_cluster_world(&a->rank, &a->ranks), "--data-parallel"))
      return 0;
    if (a->batch % a->ranks != 0) {
      fprintf(stderr, "weft train: --data-parallel: --batch %lld does not "
              "split evenly over %d ranks\n", (long long)a->batch, a->ranks);
      return 0;
    }
    /* One rank speaks; the others' output would repeat it. */
    if (a->rank != 0 && freopen("/dev/null", "w", stdout) == NULL)
      return 0;
  }
  if (a->tfrecord && a->validation > 0) {
    fprintf(stderr, "weft train: --validation holds out the last images of "
            "the IDX training set; with --data tfrecord: keep a file of "
            "records apart instead\n");
    return 0;
  }
  if (a->tfrecord && !a->pipeline) {
    fprintf(stderr, "weft train: --data tfrecord: is read by the input "
            "pipeline; drop --input feed\n");
    return 0;
  }
  if (a->checkpoint == NULL) {
    snprintf(default_ckpt, sizeof default_ckpt, "fashion-mnist-%s.ckpt",
             a->model);
    a->checkpoint = default_ckpt;
  }
  if (a->save == NULL) {
    snprintf(default_save, sizeof default_save, "fashion-mnist-%s-model",
             a->model);
    a->save = default_save;
  }
  return 1;
}

/* --data tfrecord:: how many records the files hold. */
static int count_tfrecords(train_args* a) {
  if (!a->tfrecord) return 1;
  enum { kMaxFiles = 64 };
  char files[4096];
  const char* paths[kMaxFiles];
  int32_t n = split_paths(a->tfrecord, files, sizeof files, paths, kMaxFiles);
  return train_input_count_records(paths, n, train_input_compression(paths[0]),
                                   &a->train_count);
}

int weft_command_train(int argc, char** argv) {
  train_args a;
  if (!parse_args(argc, argv, &a)) return 2;
  if (a.rank == 0 &&
      (!train_check_output_path("--checkpoint", a.checkpoint, 0) ||
       !train_check_output_path("--save", a.save, 1) ||
       (a.loss_log && !train_check_output_path("--loss-log", a.loss_log, 0)) ||
       (a.trace && !train_check_output_path("--trace", a.trace, 0))))
    return 2;
  /* Progress must reach a pipe or a log as it happens, not when a 4 KiB
   * buffer fills (or never, if the run is killed). */
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* Before any thread starts: the sessions' and kernels', and those of the
   * input pipeline, whose map functions have sessions of their own made
   * while the graph is built. */
  block_stop_signals();
  char err[4200];
  idx_dataset train, test;
  if (idx_read_dataset(a.data_dir, "train", CLASSES, &train, err,
                       sizeof err) != 0) {
    fprintf(stderr, "weft train: %s\n(install Debian's dataset-fashion-mnist "
            "or pass --data DIR)\n", err);
    return 1;
  }
  if (idx_read_dataset(a.data_dir, "t10k", CLASSES, &test, err,
                       sizeof err) != 0) {
    fprintf(stderr, "weft train: %s\n", err);
    idx_free_dataset(&train);
    return 1;
  }
  int rc = 1;
  /* --validation N: the last N training images, evaluated after each
   * epoch and never trained on (a view into the training set's arrays). */
  idx_dataset validation;
  memset(&validation, 0, sizeof validation);
  if (a.validation >= train.images.dims[0]) {
    fprintf(stderr, "weft train: --validation %lld leaves no training "
            "images (the set has %lld)\n", (long long)a.validation,
            (long long)train.images.dims[0]);
    idx_free_dataset(&train);
    idx_free_dataset(&test);
    return 2;
  }
  a.train_count = train.images.dims[0] - a.validation;
  validation = train;
  validation.images.dims[0] = validation.labels.dims[0] = a.validation;
  validation.images.data += (size_t)a.train_count * PIXELS;
  validation.labels.data += (size_t)a.train_count;
  if (train.images.dims[1] * train.images.dims[2] != PIXELS ||
      test.images.dims[1] * test.images.dims[2] != PIXELS) {
    fprintf(stderr, "weft train: images must be 28x28\n");
  } else if (!count_tfrecords(&a) ||
             (a.resume && (a.pipeline || a.parameter_server) &&
              !train_peek_step(&a))) {
    /* Said why. */
  } else {
    if (a.tfrecord)
      printf("fashion-mnist: %lld training records from %s, %lld test "
             "images; model %s\n", (long long)a.train_count, a.tfrecord,
             (long long)test.images.dims[0], a.model);
    else
      printf("fashion-mnist: %lld training and %lld test images; model "
             "%s\n", (long long)a.train_count,
             (long long)test.images.dims[0], a.model);
    model m;
    memset(&m, 0, sizeof m);
    if (train_build_model(&a, &m, &train))
      rc = run_training(&a, &m, &train, &test, &validation);
    weft_graph_destroy(m.graph);
  }
  idx_free_dataset(&train);
  idx_free_dataset(&test);
  return rc;
}
