/* weft train --logdir DIR (train_summary.c): what TensorBoard shows of a
 * training run. */
#ifndef WEFT_TOOLS_TRAIN_SUMMARY_H_
#define WEFT_TOOLS_TRAIN_SUMMARY_H_

#include <stdint.h>

#include "tools/idx.h"
#include "tools/train.h"
#include "weft/weft.h"

typedef struct train_summary {
  weft_summary_writer* writer;  /* NULL without --logdir */
  weft_output weights;          /* the variables' histograms, merged */
  int has_weights;
  int graph_written;
} train_summary;

/* Adds the variables' HistogramSummary ops to the model's graph (before
 * its session is made).  Without --logdir does nothing.  1 on success. */
int train_summary_build(const train_args* a, model* m, train_summary* ts);
/* Opens the event file in a->logdir and writes the run's configuration
 * (text), a few test images and, after a resume, the restart at `step`.
 * 1 on success or without --logdir. */
int train_summary_open(const train_args* a, const idx_dataset* test,
                       int64_t step, train_summary* ts);
/* The graph, with the devices of the first step's placement `md`. */
int train_summary_graph(train_summary* ts, const model* m,
                        const weft_run_metadata* md);
/* The loss of the step numbered `step` (from 0). */
int train_summary_loss(train_summary* ts, int64_t step, double loss);
/* After `steps` steps: the test accuracy, the validation accuracy (NaN:
 * none), the learning rate and the weights' histograms. */
int train_summary_epoch(train_summary* ts, weft_session* s, int64_t steps,
                        double test_accuracy, double validation_accuracy,
                        double learning_rate);
void train_summary_close(train_summary* ts);

#endif /* WEFT_TOOLS_TRAIN_SUMMARY_H_ */
