/* weft train --logdir DIR: TensorBoard's view of a training run, written
 * through the summary writer (weft/summary.h) into DIR:
 *   loss                  every step (what --loss-log has, as float32)
 *   accuracy/test         after each epoch (and at the end)
 *   accuracy/validation   after each epoch, with --validation N
 *   learning_rate         after each epoch
 *   weights/VARIABLE      each trainable variable's histogram after each
 *                         epoch, made by HistogramSummary ops in the graph
 *   run                   the command's configuration (text)
 *   test_images           the first three test images
 *   the graph             with the devices the first step ran on
 * A resumed run writes a new file in the same directory, starting with a
 * restart at its step: TensorBoard then drops what the interrupted run
 * recorded after its checkpoint. */
#include "tools/train_summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxVariables = 64, kImages = 3 };

int train_summary_build(const train_args* a, model* m, train_summary* ts) {
  memset(ts, 0, sizeof *ts);
  if (a->logdir == NULL) return 1;
  weft_node* vars[kMaxVariables];
  int32_t n = 0;
  if (!train_check(weft_graph_trainable_variables(m->graph, vars,
                                                  kMaxVariables, &n),
                   "--logdir: listing the variables"))
    return 0;
  if (n > kMaxVariables) n = kMaxVariables;
  weft_output histograms[kMaxVariables];
  for (int32_t i = 0; i < n; ++i) {
    char tag[512], name[512];
    snprintf(tag, sizeof tag, "weights/%s", weft_node_name(vars[i]));
    snprintf(name, sizeof name, "summaries/weights/%s",
             weft_node_name(vars[i]));
    weft_op_builder* b = weft_op_begin(m->graph, "HistogramSummary", name);
    weft_op_add_input(b, (weft_output){vars[i], 0});
    weft_op_set_attr_string(b, "tag", tag);
    weft_node* node = NULL;
    if (!train_check(weft_op_finish(b, &node), "--logdir: a histogram"))
      return 0;
    histograms[i] = (weft_output){node, 0};
  }
  if (n == 0) return 1;
  weft_op_builder* b =
      weft_op_begin(m->graph, "MergeSummary", "summaries/weights");
  weft_op_add_input_list(b, histograms, n);
  weft_node* merged = NULL;
  if (!train_check(weft_op_finish(b, &merged), "--logdir: the histograms"))
    return 0;
  ts->weights = (weft_output){merged, 0};
  ts->has_weights = 1;
  return 1;
}

int train_summary_open(const train_args* a, const idx_dataset* test,
                       int64_t step, train_summary* ts) {
  if (a->logdir == NULL) return 1;
  if (!train_check(weft_summary_writer_create(a->logdir, NULL, &ts->writer),
                   "--logdir"))
    return 0;
  char text[1024];
  snprintf(text, sizeof text,
           "weft train fashion-mnist --model %s --optimizer %s --batch %lld "
           "--epochs %lld --seed %llu --device %s --threads %d%s",
           a->model, train_optimizer_name(a), (long long)a->batch,
           (long long)a->epochs, (unsigned long long)a->seed,
           a->devices ? a->devices : "(any)", a->threads,
           a->resume ? " --resume" : "");
  if (a->resume &&
      !train_check(weft_summary_writer_add_restart(ts->writer, step,
                                                   a->checkpoint),
                   "--logdir: the restart"))
    return 0;
  if (!train_check(weft_summary_writer_add_text(ts->writer, "run", step, text),
                   "--logdir: the configuration"))
    return 0;
  int64_t count = test->images.dims[0] < kImages ? test->images.dims[0]
                                                 : kImages;
  int64_t dims[4] = {count, 28, 28, 1};
  weft_tensor* images = NULL;
  int ok = train_check(
      weft_tensor_create_copy(WEFT_UINT8, dims, 4, test->images.data,
                              (size_t)(count * PIXELS), &images),
      "--logdir: test images");
  ok = ok && train_check(weft_summary_writer_add_image(
                             ts->writer, "test_images", step, images, kImages),
                         "--logdir: test images");
  weft_tensor_destroy(images);
  return ok;
}

int train_summary_graph(train_summary* ts, const model* m,
                        const weft_run_metadata* md) {
  if (ts->writer == NULL || ts->graph_written) return 1;
  ts->graph_written = 1;
  return train_check(weft_summary_writer_add_graph(ts->writer, m->graph, md),
                     "--logdir: the graph");
}

int train_summary_loss(train_summary* ts, int64_t step, double loss) {
  if (ts->writer == NULL) return 1;
  return train_check(weft_summary_writer_add_scalar(ts->writer, "loss", step,
                                                    loss),
                     "--logdir: the loss");
}

int train_summary_epoch(train_summary* ts, weft_session* s, int64_t steps,
                        double test_accuracy, double validation_accuracy,
                        double learning_rate) {
  if (ts->writer == NULL) return 1;
  weft_summary_writer* w = ts->writer;
  if (!train_check(weft_summary_writer_add_scalar(w, "accuracy/test", steps,
                                                  test_accuracy),
                   "--logdir: the accuracy") ||
      (!isnan(validation_accuracy) &&
       !train_check(weft_summary_writer_add_scalar(
                        w, "accuracy/validation", steps, validation_accuracy),
                    "--logdir: the accuracy")) ||
      !train_check(weft_summary_writer_add_scalar(w, "learning_rate", steps,
                                                  learning_rate),
                   "--logdir: the learning rate"))
    return 0;
  if (!ts->has_weights) return 1;
  weft_tensor* merged = NULL;
  int ok = train_check(weft_session_run(s, NULL, NULL, 0, &ts->weights, 1,
                                        NULL, 0, &merged),
                       "--logdir: the weights' histograms") &&
           train_check(weft_summary_writer_add_summary(w, steps, merged),
                       "--logdir: the weights' histograms");
  weft_tensor_destroy(merged);
  return ok;
}

void train_summary_close(train_summary* ts) {
  if (ts->writer == NULL) return;
  train_check(weft_summary_writer_close(ts->writer), "--logdir: closing");
  weft_summary_writer_destroy(ts->writer);
  ts->writer = NULL;
}
