/** @file
 * Weft — TensorBoard output: summaries and event files (user API 1.13).
 *
 * A summary writer appends TensorBoard's event records to one file,
 * `events.out.tfevents.<seconds>.<host>[suffix]`, in a log directory:
 * scalars, histograms, images, text and the graph, each at a step.
 * TensorBoard (`tensorboard --logdir DIR`) shows them while the program
 * still writes: every call writes whole records and flushes them.
 *
 * Summaries can also be made inside a graph, by the summary ops:
 *  - `ScalarSummary(value)`: one number of any real dtype;
 *  - `HistogramSummary(values)`: the distribution of a tensor's values;
 *  - `ImageSummary(images)`: [N, H, W, C] uint8, or float32 in [0, 1];
 *    C is 1, 2, 3 or 4; attribute `max_images` (default 3);
 *  - `TextSummary(text)`: a uint8 vector of UTF-8 text (Markdown);
 *  - `MergeSummary(summaries...)`: several summaries as one.
 * Each takes a string attribute `tag` (MergeSummary excepted) and outputs
 * the serialized `Summary` as a uint8 vector in host memory: fetch it and
 * pass it to weft_summary_writer_add_summary().
 *
 * The file format is TensorFlow's: records framed as TFRecord's (length,
 * masked CRC-32C of the length, data, masked CRC-32C of the data), each an
 * `Event` protocol buffer; the first holds `file_version` "brain.Event:2".
 *
 * Threads: a writer may be used from several threads; each call writes
 * its records whole.
 */
#ifndef WEFT_SUMMARY_H_
#define WEFT_SUMMARY_H_

#include <stdint.h>

#include "weft/graph.h"
#include "weft/session.h"
#include "weft/status.h"
#include "weft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An open event file.  Opaque. */
typedef struct weft_summary_writer weft_summary_writer;

/** Creates `logdir` (and its parents) when missing, and a new event file
 * in it.  The file is named `events.out.tfevents.<seconds>.<host>`
 * followed by `filename_suffix` (NULL or "" for none; no '/'), and its
 * first record is the file-version event.  An existing file is never
 * written over.  INVALID_ARGUMENT for an empty path or a bad suffix;
 * FAILED_PRECONDITION when `logdir` or a parent is not a directory; the
 * system's reason when it cannot be created or written. */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_create(
    const char* logdir, const char* filename_suffix,
    weft_summary_writer** out);

/** Flushes and closes the file; NULL is ignored.  Errors on the way are
 * lost: call weft_summary_writer_close() first to see them. */
WEFT_API void weft_summary_writer_destroy(weft_summary_writer* writer);

/** Flushes and closes the file, reporting the system's error if that
 * fails; later additions fail with FAILED_PRECONDITION.  The writer must
 * still be destroyed. */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_close(
    weft_summary_writer* writer);

/** The event file's path, owned by the writer. */
WEFT_API const char* weft_summary_writer_path(
    const weft_summary_writer* writer);

/** Appends a scalar `value` under `tag` at `step` (TensorBoard's scalar
 * dashboard; stored as float32, as TensorFlow does).  The tag must be
 * non-empty UTF-8 without control characters, at most 1024 bytes. */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_add_scalar(
    weft_summary_writer* writer, const char* tag, int64_t step,
    double value);

/** Appends the histogram of `values` (any real dtype or bool, any shape)
 * under `tag` at `step`: buckets growing by 10% from 1e-12 to 1e20,
 * mirrored below zero, runs of empty ones merged.  A NaN or infinite
 * value is INVALID_ARGUMENT. */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_add_histogram(
    weft_summary_writer* writer, const char* tag, int64_t step,
    const weft_tensor* values);

/** Appends images ([N, H, W, C] or [H, W, C]; uint8, or float32 in
 * [0, 1] scaled by 255 and clamped; C 1, 2, 3 or 4), the first
 * `max_images` of them, PNG-encoded.  One image is tagged `tag`, several
 * "tag/0", "tag/1", ... */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_add_image(
    weft_summary_writer* writer, const char* tag, int64_t step,
    const weft_tensor* images, int64_t max_images);

/** Appends `text` (UTF-8, Markdown) under `tag` (TensorBoard's text
 * dashboard). */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_add_text(
    weft_summary_writer* writer, const char* tag, int64_t step,
    const char* text);

/** Appends a summary op's output (a uint8 vector holding a serialized
 * `Summary`) at `step`.  Bytes that are not one, or that hold a value
 * without a valid tag, are INVALID_ARGUMENT and nothing is written. */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_add_summary(
    weft_summary_writer* writer, int64_t step, const weft_tensor* summary);

/** Appends `graph` for TensorBoard's graph dashboard, as a TensorFlow
 * GraphDef: every node with its op, inputs, attributes, output shapes and
 * device.  With `placement` (metadata of a run, or NULL) each node that
 * run placed shows the device it ran on; other nodes show their device
 * constraint. */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_add_graph(
    weft_summary_writer* writer, const weft_graph* graph,
    const weft_run_metadata* placement);

/** Records that the program restarted at `step` (from the checkpoint at
 * `checkpoint_path`, which may be NULL): TensorBoard then drops what this
 * log directory's earlier files recorded at or after `step`, the steps a
 * crashed run did after its last checkpoint and the resumed run does
 * again. */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_add_restart(
    weft_summary_writer* writer, int64_t step, const char* checkpoint_path);

/** Writes what is buffered to the file (each addition already does). */
WEFT_API WEFT_MUST_USE weft_status* weft_summary_writer_flush(
    weft_summary_writer* writer);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SUMMARY_H_ */
