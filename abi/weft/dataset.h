/** @file
 * Weft — datasets: input pipelines whose iterator is an op in a graph
 * (user API 1.7).
 *
 * A dataset is an immutable description of a stream of elements (each a
 * tuple of tensors, its components): a source (tensor slices, a range,
 * TFRecord, IDX or text files) followed by transformations (map, filter,
 * shuffle, batch, padded batch, repeat, take, skip, prefetch).  Each
 * function returns a new dataset and leaves its input usable; destroy
 * every handle with weft_dataset_destroy (graphs that read a dataset keep
 * what they need).  weft_dataset_iterator adds the node whose outputs are
 * the next element: each session running it keeps one iterator per name,
 * which a run advances; the end of the data is OUT_OF_RANGE.  Errors name
 * the dataset ("Batch(Map(TFRecord))") and, for files, the file and
 * record.  Deterministic for a seed.  Thread-safe. */
#ifndef WEFT_DATASET_H_
#define WEFT_DATASET_H_

#include <stdint.h>

#include "weft/graph.h"
#include "weft/status.h"
#include "weft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An input pipeline's description: immutable, opaque. */
typedef struct weft_dataset weft_dataset;

/** Releases a dataset handle; datasets and graphs built from it keep what
 * they need.  NULL is a no-op. */
WEFT_API void weft_dataset_destroy(weft_dataset* dataset);
/** How many tensors (components) each element has. */
WEFT_API int32_t weft_dataset_num_components(const weft_dataset* dataset);
/** WEFT_DTYPE_INVALID for an index out of range. */
WEFT_API weft_dtype weft_dataset_component_dtype(const weft_dataset* dataset,
                                                 int32_t i);
/** "Batch(Map(TFRecord))"; valid until the calling thread's next call. */
WEFT_API const char* weft_dataset_name(const weft_dataset* dataset);

/* ---- Sources ---- */

/** Element i is slice i (along dimension 0) of every component; the
 * tensors are copied. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_from_tensor_slices(
    weft_tensor* const* components, int32_t num_components,
    weft_dataset** out);
/** int64 scalars start, start + step, ... up to (not including) stop. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_range(
    int64_t start, int64_t stop, int64_t step, weft_dataset** out);
/** The records of TFRecord files, in order, as uint8 vectors; compression
 * "" (or NULL), "GZIP" or "ZLIB".  A bad checksum is DATA_LOSS naming the
 * file and the record's offset. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_tfrecord(
    const char* const* paths, int32_t num_paths, const char* compression,
    weft_dataset** out);
/** The lines of text files (without line ends) as uint8 vectors. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_text_lines(
    const char* const* paths, int32_t num_paths, weft_dataset** out);
/** The slices along dimension 0 of an IDX file (gzip-compressed or not),
 * the format of MNIST and Fashion-MNIST; its header is read now. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_idx(const char* path,
                                                     weft_dataset** out);

/* ---- Transformations ---- */

/** Elements of several datasets side by side: element i has the components
 * of every input's element i, in order; it ends with the shortest. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_zip(
    const weft_dataset* const* inputs, int32_t num_inputs,
    weft_dataset** out);

/** Each element through a function graph: `fn_inputs` are Placeholders of
 * `fn` (one per component, of its dtype), `fn_outputs` the new element's
 * components.  Up to num_parallel_calls (1 to 64) elements are mapped at
 * once, in order.  `fn` may be destroyed afterwards. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_map(
    const weft_dataset* input, weft_graph* fn, const weft_output* fn_inputs,
    int32_t num_inputs, const weft_output* fn_outputs, int32_t num_outputs,
    int32_t num_parallel_calls, weft_dataset** out);
/** The elements for which `predicate` (a bool scalar of `fn`) is true. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_filter(
    const weft_dataset* input, weft_graph* fn, const weft_output* fn_inputs,
    int32_t num_inputs, weft_output predicate, weft_dataset** out);
/** Elements drawn at random from a buffer of buffer_size; each pass of the
 * dataset shuffles differently, the same way for the same seed. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_shuffle(
    const weft_dataset* input, int64_t buffer_size, int64_t seed,
    weft_dataset** out);
/** batch_size elements stacked along a new dimension 0; the last batch may
 * be smaller unless drop_remainder.  Elements must agree in shape. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_batch(
    const weft_dataset* input, int64_t batch_size, int32_t drop_remainder,
    weft_dataset** out);
/** As weft_dataset_batch, padding each batch with zeros to its largest
 * element in every dimension. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_padded_batch(
    const weft_dataset* input, int64_t batch_size, int32_t drop_remainder,
    weft_dataset** out);
/** The input `count` times over (-1: forever; an empty input stays empty). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_repeat(
    const weft_dataset* input, int64_t count, weft_dataset** out);
/** The first `count` elements (-1: all). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_take(
    const weft_dataset* input, int64_t count, weft_dataset** out);
/** All but the first `count` elements (-1: none). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_skip(
    const weft_dataset* input, int64_t count, weft_dataset** out);
/** Up to buffer_size elements made ahead on a background thread. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_prefetch(
    const weft_dataset* input, int64_t buffer_size, weft_dataset** out);

/* ---- Writing records ---- */

/** Writes `records` (uint8 vectors, or any tensor: its bytes) as a TFRecord
 * file at `path` (compression "" or NULL, "GZIP", "ZLIB"), TensorFlow's
 * format: written beside and renamed in, so a reader sees the old file or
 * the whole new one.  A path that is not absent or a regular file is
 * FAILED_PRECONDITION. */
WEFT_API WEFT_MUST_USE weft_status* weft_tfrecord_write(
    const char* path, const char* compression,
    const weft_tensor* const* records, int32_t num_records);

/* ---- Reading it in a graph ---- */

/** Adds node `name` (IteratorGetNext) to `graph`: components[i] (room for
 * weft_dataset_num_components) is component i of the next element.
 * *init (may be NULL) is an IteratorInit node, a target that starts the
 * pass again.  Sessions keep one iterator per name; it starts on first
 * use.  The dataset stays attached to the graph (graph files do not save
 * it). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_iterator(
    weft_graph* graph, const char* name, const weft_dataset* dataset,
    weft_output* components, weft_node** init);

/* ---- Fixed-length records and interleave (user API 1.8) ---- */

/** The records of files of fixed-size records (CIFAR-10's files, raw
 * arrays), in order, as uint8 vectors of record_bytes (1 to 2^30): each
 * file is header_bytes, its records, then footer_bytes (each 0 to 2^30),
 * as tf.data's FixedLengthRecordDataset reads them; compression "" (or
 * NULL), "GZIP" or "ZLIB" compresses the whole file, header and footer
 * included.  Other sizes or compressions are INVALID_ARGUMENT.  A file
 * whose records do not fill it (a truncated last record, a file shorter
 * than its header) is DATA_LOSS naming the file and the offset of the
 * partial record. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_fixed_length_records(
    const char* const* paths, int32_t num_paths, int64_t header_bytes,
    int64_t record_bytes, int64_t footer_bytes, const char* compression,
    weft_dataset** out);

/** Makes the dataset of one input element of weft_dataset_interleave (a
 * file's records, for an input of file names).  `element` holds the
 * element's num_components tensors, borrowed for the call (a path is a
 * uint8 vector of its bytes, with no terminating NUL).  Returns NULL and a
 * new dataset in *out, which the interleave takes over and destroys, or an
 * error, which ends the pass naming the input element.  Called on Weft's
 * pipeline threads (a session's iterator thread, a prefetch's), and at the
 * same time from different passes over the dataset (two sessions, an
 * interleave inside a map): it must be thread-safe.  It may call the
 * weft_dataset_ functions; it must not run a session that reads this
 * pipeline (that run would wait for itself). */
typedef weft_status* (*weft_dataset_make_fn)(void* arg,
                                             const weft_tensor* const* element,
                                             int32_t num_components,
                                             weft_dataset** out);

/** tf.data's interleave (deterministic): make(arg, element) turns each
 * element of `input` into a dataset; cycle_length of those (1 to 1024)
 * are open at once and read block_length elements (1 to 2^30) each in
 * turn; one that ends is replaced, at its next turn, by the dataset of
 * the next input element, until input and open datasets are exhausted.
 * `make` runs as a slot frees, ahead of its turn (for the first
 * cycle_length elements, at the first read).  The order depends on the
 * data only: num_parallel_calls 1 reads on the pipeline's thread; 2 to 64
 * start that many threads per pass (at most cycle_length) that read ahead
 * from the open datasets, up to min(block_length, 16) elements each, and
 * the elements still come in that order.  The elements' components have
 * `component_dtypes` (num_components of them, 1 to 1024) and shapes that
 * may vary; a made dataset of other dtypes is INVALID_ARGUMENT.  An error
 * (making a dataset, reading one) names the input element's index (0 for
 * the first) and ends the pass: later reads return it again until the
 * iterator's init.  `release` (may be NULL) is called with `arg` once
 * nothing will call `make` again: when the dataset and every graph and
 * iterator holding it are gone, or before this function returns an
 * error, on whichever thread lets go last.  Returns a new dataset in *out
 * (NULL on error). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_interleave(
    const weft_dataset* input, weft_dataset_make_fn make, void* arg,
    void (*release)(void* arg), const weft_dtype* component_dtypes,
    int32_t num_components, int64_t cycle_length, int64_t block_length,
    int32_t num_parallel_calls, weft_dataset** out);

/** The shape of component i of every element: returns its rank and writes
 * its dims (room for WEFT_MAX_RANK; NULL to ask only the rank) with -1
 * where elements differ; -1 when even the rank varies or is unknown (a
 * map function's output of unknown shape), -2 for an index out of range
 * or a NULL dataset.  (User API 1.8.) */
WEFT_API int32_t weft_dataset_component_shape(const weft_dataset* dataset,
                                              int32_t i, int64_t* dims);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DATASET_H_ */
