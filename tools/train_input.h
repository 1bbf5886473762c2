/* The training set of `weft train` as a dataset pipeline read inside the
 * graph: from the IDX files' pixels (tensor slices) or from TFRecord files
 * of tf.train.Example records ("image": the 784 pixel bytes, "label": an
 * int64), shuffled (seeded; each epoch differently), batched (a short last
 * batch dropped), repeated for the epochs, advanced past the steps a
 * resumed run has done, cast and scaled, and prefetched while the step
 * runs.  Also the writer of such TFRecord files (`weft tfrecord`). */
#ifndef WEFT_TOOLS_TRAIN_INPUT_H_
#define WEFT_TOOLS_TRAIN_INPUT_H_

#include <stdint.h>

#include "weft/weft.h"

typedef struct train_input {
  /* The IDX source, when num_tfrecords is 0: n images of 784 bytes and n
   * labels (copied by the dataset). */
  const uint8_t* images;
  const uint8_t* labels;
  int64_t n;
  /* The TFRecord source. */
  const char* const* tfrecords;
  int32_t num_tfrecords;
  const char* compression; /* "", "GZIP" or "ZLIB" */
  int64_t shuffle_buffer;  /* elements; 0: the whole set */
  int64_t batch;
  int64_t epochs;
  uint64_t seed;
  int64_t skip;      /* batches to pass over: the steps a resume has done */
  int32_t parallel;  /* parallel calls of the per-record parse */
  /* Data parallelism: this process reads rows [shard * b, (shard + 1) * b)
   * of every batch, b = batch / num_shards (num_shards 0 or 1: all), of
   * the epoch_elements elements each epoch has. */
  int32_t shard, num_shards;
  int64_t epoch_elements;
  /* Asynchronous workers (weft train --parameter-server): with
   * num_shards > 1, whole batches instead of rows: shard s reads the
   * batches k of each epoch with k % num_shards == s, each of `batch`
   * rows. */
  int whole_batches;
} train_input;

/* Adds the iterator node `name` to `g`: out[0] the images [batch, 784]
 * float32 in [0, 1], out[1] the labels [batch] int32.  Prints what failed
 * and returns 0 on error. */
int train_input_build(const train_input* in, weft_graph* g, const char* name,
                      weft_output out[2]);

/* How many records the TFRecord files hold (reading them through). */
int train_input_count_records(const char* const* paths, int32_t n,
                              const char* compression, int64_t* out);

/* The compression a TFRecord file's name implies: "GZIP" for .gz, "ZLIB"
 * for .zz, else "" (plain). */
const char* train_input_compression(const char* path);

/* Writes n images (784 bytes each) and their labels as tf.train.Example
 * records to a TFRecord file. */
int train_input_write_tfrecord(const char* path, const char* compression,
                               const uint8_t* images, const uint8_t* labels,
                               int64_t n);

#endif /* WEFT_TOOLS_TRAIN_INPUT_H_ */
