/* Weft — datasets: input pipelines whose iterator is an op in a graph
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

typedef struct weft_dataset weft_dataset;

WEFT_API void weft_dataset_destroy(weft_dataset* dataset);
WEFT_API int32_t weft_dataset_num_components(const weft_dataset* dataset);
/* WEFT_DTYPE_INVALID for an index out of range. */
WEFT_API weft_dtype weft_dataset_component_dtype(const weft_dataset* dataset,
                                                 int32_t i);
/* "Batch(Map(TFRecord))"; valid until the calling thread's next call. */
WEFT_API const char* weft_dataset_name(const weft_dataset* dataset);

/* ---- Sources ---- */

/* Element i is slice i (along dimension 0) of every component; the
 * tensors are copied. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_from_tensor_slices(
    weft_tensor* const* components, int32_t num_components,
    weft_dataset** out);
/* int64 scalars start, start + step, ... up to (not including) stop. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_range(
    int64_t start, int64_t stop, int64_t step, weft_dataset** out);
/* The records of TFRecord files, in order, as uint8 vectors; compression
 * "" (or NULL), "GZIP" or "ZLIB".  A bad checksum is DATA_LOSS naming the
 * file and the record's offset. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_tfrecord(
    const char* const* paths, int32_t num_paths, const char* compression,
    weft_dataset** out);
/* The lines of text files (without line ends) as uint8 vectors. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_text_lines(
    const char* const* paths, int32_t num_paths, weft_dataset** out);
/* The slices along dimension 0 of an IDX file (gzip-compressed or not),
 * the format of MNIST and Fashion-MNIST; its header is read now. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_idx(const char* path,
                                                     weft_dataset** out);

/* ---- Transformations ---- */

/* Elements of several datasets side by side: element i has the components
 * of every input's element i, in order; it ends with the shortest. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_zip(
    const weft_dataset* const* inputs, int32_t num_inputs,
    weft_dataset** out);

/* Each element through a function graph: `fn_inputs` are Placeholders of
 * `fn` (one per component, of its dtype), `fn_outputs` the new element's
 * components.  Up to num_parallel_calls (1 to 64) elements are mapped at
 * once, in order.  `fn` may be destroyed afterwards. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_map(
    const weft_dataset* input, weft_graph* fn, const weft_output* fn_inputs,
    int32_t num_inputs, const weft_output* fn_outputs, int32_t num_outputs,
    int32_t num_parallel_calls, weft_dataset** out);
/* The elements for which `predicate` (a bool scalar of `fn`) is true. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_filter(
    const weft_dataset* input, weft_graph* fn, const weft_output* fn_inputs,
    int32_t num_inputs, weft_output predicate, weft_dataset** out);
/* Elements drawn at random from a buffer of buffer_size; each pass of the
 * dataset shuffles differently, the same way for the same seed. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_shuffle(
    const weft_dataset* input, int64_t buffer_size, int64_t seed,
    weft_dataset** out);
/* batch_size elements stacked along a new dimension 0; the last batch may
 * be smaller unless drop_remainder.  Elements must agree in shape. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_batch(
    const weft_dataset* input, int64_t batch_size, int32_t drop_remainder,
    weft_dataset** out);
/* As weft_dataset_batch, padding each batch with zeros to its largest
 * element in every dimension. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_padded_batch(
    const weft_dataset* input, int64_t batch_size, int32_t drop_remainder,
    weft_dataset** out);
/* The input `count` times over (-1: forever; an empty input stays empty). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_repeat(
    const weft_dataset* input, int64_t count, weft_dataset** out);
/* The first `count` elements (-1: all). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_take(
    const weft_dataset* input, int64_t count, weft_dataset** out);
/* All but the first `count` elements (-1: none). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_skip(
    const weft_dataset* input, int64_t count, weft_dataset** out);
/* Up to buffer_size elements made ahead on a background thread. */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_prefetch(
    const weft_dataset* input, int64_t buffer_size, weft_dataset** out);

/* ---- Writing records ---- */

/* Writes `records` (uint8 vectors, or any tensor: its bytes) as a TFRecord
 * file at `path` (compression "" or NULL, "GZIP", "ZLIB"), TensorFlow's
 * format: written beside and renamed in, so a reader sees the old file or
 * the whole new one.  A path that is not absent or a regular file is
 * FAILED_PRECONDITION. */
WEFT_API WEFT_MUST_USE weft_status* weft_tfrecord_write(
    const char* path, const char* compression,
    const weft_tensor* const* records, int32_t num_records);

/* ---- Reading it in a graph ---- */

/* Adds node `name` (IteratorGetNext) to `graph`: components[i] (room for
 * weft_dataset_num_components) is component i of the next element.
 * *init (may be NULL) is an IteratorInit node, a target that starts the
 * pass again.  Sessions keep one iterator per name; it starts on first
 * use.  The dataset stays attached to the graph (graph files do not save
 * it). */
WEFT_API WEFT_MUST_USE weft_status* weft_dataset_iterator(
    weft_graph* graph, const char* name, const weft_dataset* dataset,
    weft_output* components, weft_node** init);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DATASET_H_ */
