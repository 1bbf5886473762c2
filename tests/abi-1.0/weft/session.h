/* Weft — sessions: running (parts of) a graph.
 *
 * A session runs a graph on a set of devices and owns the state that lives
 * across runs (variables).  weft_session_run() computes only what the
 * fetches and targets need; any output named in the feeds is replaced by the
 * fed tensor and nothing upstream of it runs.  The work to get from a graph
 * to an executable plan is done once per distinct (feeds, fetches, targets)
 * and cached.
 *
 * Threads: weft_session_run() may be called on one session from many threads
 * at once.  weft_session_destroy() must not race with a run.
 */
#ifndef WEFT_SESSION_H_
#define WEFT_SESSION_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/graph.h"
#include "weft/status.h"
#include "weft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_session weft_session;

/* Options for weft_session_create().  Set struct_size to
 * sizeof(weft_session_options) (weft_session_options_init does); fields may
 * be appended in later minor versions, and the library reads only what
 * struct_size covers. */
typedef struct weft_session_options {
  size_t struct_size;
  /* Devices the session may use: a comma-separated list of names or
   * patterns ("/device:CPU:0", "/device:OPENCL:*", "CPU").  NULL or "" means
   * the WEFT_DEVICES environment variable if set, else every device.
   * Borrowed for the duration of weft_session_create(). */
  const char* devices;
  /* Threads running independent nodes at once; 0 picks the core count. */
  int32_t inter_op_threads;
  /* Threads a single kernel may use; 0 picks the core count. */
  int32_t intra_op_threads;
} weft_session_options;

/* Fills `options` with defaults and sets struct_size. */
WEFT_API void weft_session_options_init(weft_session_options* options);

/* Creates a session over `graph` (which the session keeps alive
 * internally).  `options` may be NULL for defaults.  Loads the plugins on the
 * search path if that has not happened yet.  Errors: INVALID_ARGUMENT for bad
 * options, NOT_FOUND when no allowed device exists.  On success the caller
 * owns *out_session (weft_session_destroy).  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_session_create(
    weft_graph* graph, const weft_session_options* options,
    weft_session** out_session);

/* Releases the session and the variables it holds.  NULL is a no-op. */
WEFT_API void weft_session_destroy(weft_session* session);

/* Runs the graph.
 *
 * feeds[i] is replaced by feed_values[i] (borrowed for the duration of the
 * call; it must not be written until the call returns).  The value of each
 * fetches[i] is returned in out_values[i], a new tensor owned by the caller;
 * `out_values` must have room for `num_fetches` pointers and may be NULL when
 * num_fetches is 0.  targets[i] are nodes run for their effect only.
 *
 * Errors: INVALID_ARGUMENT for an output that does not exist, a feed whose
 * dtype or shape disagrees with the graph, or a placeholder needed but not
 * fed (the message names it); FAILED_PRECONDITION for a variable read before
 * it was initialized; any error raised by a kernel, with the node's name.
 * On error every out_values[i] is NULL and nothing is leaked.
 * Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_session_run(
    weft_session* session, const weft_output* feeds,
    weft_tensor* const* feed_values, int32_t num_feeds,
    const weft_output* fetches, int32_t num_fetches,
    weft_node* const* targets, int32_t num_targets,
    weft_tensor** out_values);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SESSION_H_ */
