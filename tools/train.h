/* weft train (train.c): its arguments and model, shared with the models'
 * construction (train_model.c). */
#ifndef WEFT_TOOLS_TRAIN_H_
#define WEFT_TOOLS_TRAIN_H_

#include <stdint.h>

#include "tools/idx.h"
#include "weft/weft.h"

enum { PIXELS = 784, CLASSES = 10, HIDDEN = 256, EVAL_BATCH = 1000 };
/* The LSTM reads an image row by row. */
enum { ROWS = 28, ROW = 28, UNITS = 128 };
/* The CNN's features: 64 channels of 7 x 7 after two 2 x 2 poolings. */
enum { CNN_FEATURES = 7 * 7 * 64 };

typedef struct train_args {
  const char* model;
  int64_t epochs;
  int64_t steps;  /* --steps: stop after this many in all (0: the epochs') */
  int64_t batch;
  double learning_rate;  /* 0: the model's default */
  const char* optimizer; /* NULL: the model's default */
  const char* devices;
  const char* data_dir;
  const char* checkpoint;
  const char* save;  /* the model bundle */
  int resume;
  uint64_t seed;
  int32_t threads;
  const char* loss_log;  /* every step's loss, exactly, for tests */
  int explain;           /* print the first step's placement */
  int pipeline;          /* --input pipeline (the default): batches from a
                          * dataset read inside the graph; 0: fed */
  const char* tfrecord;  /* --data tfrecord:PATH[,PATH...]: the training
                          * set from these files */
  int64_t train_count;   /* training examples */
  int64_t resume_step;   /* with --resume: the checkpoint's step */
  int data_parallel;     /* --data-parallel: one rank of an MPI job */
  int64_t step_timeout;  /* --step-timeout seconds (0: none); with
                          * --data-parallel 300 unless set */
  int64_t checkpoint_every;  /* --checkpoint-every N steps (0: at the end
                              * and on SIGINT/SIGTERM only) */
  int64_t checkpoint_seconds;  /* --checkpoint-every Ns/Nm/Nh */
  int64_t keep;          /* --keep K: the newest K step-stamped checkpoints
                          * (1: the one file only) */
  int64_t bucket_bytes;  /* --bucket-bytes N: gradients averaged in buckets
                          * (0: one AllReduce each) */
  int parameter_server;  /* --parameter-server: rank 0 holds the variables
                          * and serves; the other ranks train on their own
                          * (asynchronous), each its share of the steps */
  int32_t rank, ranks;   /* this process's rank and the job's size */
  /* --parameter-server: where every variable lives (the scope set around
   * each weft_graph_variable call); NULL otherwise. */
  const char* variables_device;
  const char* logdir;    /* --logdir DIR: TensorBoard event files */
  int64_t validation;    /* --validation N: the last N training images held
                          * out and evaluated after each epoch */
  const char* trace;     /* --trace FILE: the first step this process runs,
                          * as a Chrome trace */
} train_args;

typedef struct model {
  weft_graph* graph;
  weft_output x, labels, logits, loss;
  weft_output probabilities, classes;  /* for serving */
  weft_node* train;
  weft_node* step_inc;
  weft_node* init;
  weft_output step;
  /* What a resume must agree with (run_config below), saved with the
   * weights as the non-trainable variable "train/config". */
  weft_output config;
  /* --data-parallel: the loss averaged over the ranks (what a single
   * process with the whole batch reports), and the op that sets every
   * variable to rank 0's values. */
  weft_output loss_report;
  weft_node* broadcast;
  double learning_rate;  /* the optimizer's */
} model;

/* The settings a checkpoint's step count only makes sense with: the model
 * and optimizer decide which variables exist, the batch size and seed which
 * examples each step saw. */
enum { CONFIG_MODEL, CONFIG_OPTIMIZER, CONFIG_BATCH, CONFIG_SEED,
       CONFIG_VALIDATION, CONFIG_SIZE };

/* Prints "weft train: WHAT: message" and destroys `st`; 1 when st is NULL. */
int train_check(weft_status* st, const char* what);
const char* train_optimizer_name(const train_args* a);
void train_run_config(const train_args* a, int64_t config[CONFIG_SIZE]);
/* The graph of `a->model` with its loss, optimizer, step counter and
 * configuration variable; its input from the pipeline (a->pipeline) or
 * placeholders. */
int train_build_model(const train_args* a, model* m, const idx_dataset* train);
/* Checkpoints (train_checkpoint.c).  Each prints what went wrong and
 * returns 0, or returns 1. */
/* Restores a->checkpoint into `s` and checks that it belongs to this run
 * (same model, optimizer, batch, seed and validation split; not at the
 * end of the `total` steps). */
int train_resume(const train_args* a, const model* m, weft_session* s,
                 int64_t total);
/* Whether a periodic checkpoint is due after `steps` steps at time `now`
 * (seconds); updates the marks when it is. */
int train_checkpoint_due(const train_args* a, int64_t steps, double now,
                         int64_t* last_steps, double* last_time);
/* Saves after `steps` steps (< 0: unknown), step-stamped with --keep. */
int train_save_checkpoint(const train_args* a, weft_session* s,
                          int64_t steps, const char* what);
/* --resume: the loss log keeps the steps before `step`. */
int train_truncate_loss_log(const char* path, int64_t step);
/* --resume: a->resume_step from the checkpoint, before the graph is built. */
int train_peek_step(train_args* a);
/* Whether the run can write `path` (a file, or a bundle's directory). */
int train_check_output_path(const char* flag, const char* path,
                            int directory);
/* A batch of (images, labels) read inside the graph (train.c). */
int train_input_pipeline(const train_args* a, const idx_dataset* train,
                         weft_graph* g, weft_output* batch);

#endif /* WEFT_TOOLS_TRAIN_H_ */
