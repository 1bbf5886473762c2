/** @file
 * Weft — sessions: running (parts of) a graph.
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

/** A graph opened for running on a set of devices.  Opaque; thread-safe. */
typedef struct weft_session weft_session;

/** The largest inter_op_threads and intra_op_threads a session accepts.
 * Larger counts are refused with INVALID_ARGUMENT: they exceed any machine
 * and would exhaust the process's threads or address space.  A plugin may
 * use fewer threads for one kernel than intra_op_threads allows. */
#define WEFT_SESSION_MAX_THREADS 1024

/** Options for weft_session_create().  Set struct_size to
 * sizeof(weft_session_options) (weft_session_options_init does); fields may
 * be appended in later minor versions, and the library reads only what
 * struct_size covers. */
typedef struct weft_session_options {
  size_t struct_size; /**< sizeof(weft_session_options) as known */
  /** Devices the session may use: a comma-separated list of names or
   * patterns ("/device:CPU:0", "/device:OPENCL:*", "CPU").  NULL or "" means
   * the WEFT_DEVICES environment variable if set, else every device.
   * Borrowed for the duration of weft_session_create(). */
  const char* devices;
  /** Threads running independent nodes at once, the calling thread
   * included: 0 .. WEFT_SESSION_MAX_THREADS.  0 picks the core count when
   * kernels run on one thread (intra_op_threads 1), and 1 when they may
   * use several: each inter-op thread would start a team of kernel
   * threads of its own, more threads than cores.  The
   * session starts inter_op_threads - 1 threads when it is created; when
   * the system cannot start them, weft_session_create() returns
   * RESOURCE_EXHAUSTED (having stopped those it started). */
  int32_t inter_op_threads;
  /** Threads a single kernel may use: 0 .. WEFT_SESSION_MAX_THREADS.  0
   * (the default) lets the runtime choose, up to the core count, for each
   * set of feeds, fetches and targets by timing its runs, and choose again
   * as the machine's load changes (run metadata says what a run used); a
   * count set here is used as it is, so results never depend on a choice
   * made while running. */
  int32_t intra_op_threads;

  /* ---- Appended in 1.1.  A caller whose struct_size stops before a field
   * gets the default written beside it. ---- */

  /** What happens to a node constrained to a device that has no kernel for
   * it (weft_placement_policy).  Default WEFT_PLACEMENT_SOFT. */
  int32_t placement;
  /** How float32 values cross from one device to another
   * (weft_transfer_precision).  Default WEFT_TRANSFER_EXACT. */
  int32_t transfer_precision;
  /** Graph optimizations to apply (WEFT_OPTIMIZE_* bits).  Default
   * WEFT_OPTIMIZE_ALL. */
  uint32_t optimizations;
  /** Overrides of the compute estimate the cost model uses for devices, in
   * GFLOP/s: "OPENCL=500,/device:CPU:0=20" (a device pattern as in
   * `devices`, '=', a positive number; later terms win).  NULL or "" means
   * the WEFT_DEVICE_GFLOPS environment variable if set, else the estimate
   * each plugin gives, else one measured once per device.  Borrowed for the
   * duration of weft_session_create(). */
  const char* device_gflops;

  /* ---- Appended in 1.3. ---- */

  /** Memory by recomputation (weft_recompute_policy): values the gradient
   * reads are dropped after the forward pass and computed again in the
   * backward pass, trading compute for peak memory.  Default
   * WEFT_RECOMPUTE_OFF, or the WEFT_RECOMPUTE environment variable ("off",
   * "cheap") when this is left at 0. */
  int32_t recompute;

  /* ---- Appended in 1.11. ---- */

  /** A cluster session: the jobs of an MPI job, one task per rank in this
   * order, e.g. "ps:1,worker:3" (ps:0 is rank 0, worker:0..2 ranks 1..3); a
   * job without a count takes the ranks left ("worker" alone: every rank);
   * when every job leaves its count out ("ps,worker"), the counts are
   * those of the launcher's app contexts, one job each (mpirun -np 1 A :
   * -np 3 B; Open MPI).
   * Device constraints may then name tasks ("/job:ps/task:0",
   * "/job:worker/task:1/device:CPU:0", wildcards "/job:worker",
   * "/task:*"): every rank builds the same graph and makes the same runs
   * in the same order; each runs its task's nodes, values crossing tasks go
   * over MPI, and every rank's run returns the fetches.  Feeds are read
   * where they are needed, so pass the same feeds on every rank.  The task
   * counts must add up to the job's ranks (INVALID_ARGUMENT otherwise).
   * NULL or "" (the default): an ordinary session of this process alone.
   * Borrowed for the duration of weft_session_create(). */
  const char* cluster;

  /* ---- Appended in 1.12. ---- */

  /** With `cluster`: an asynchronous cluster of parameter servers.  The
   * tasks of the jobs named here (comma-separated, e.g. "ps") serve: they
   * call weft_session_serve() (after initializing or restoring what they
   * hold, with runs of their own) and execute their part of the other
   * tasks' runs.  Every other task runs on its own, in its own order and
   * at its own pace, as the whitepaper's asynchronous replicas do: a run
   * involves the task that makes it and the serving tasks its nodes need.
   * Nodes constrained to a serving job run there; every other node runs
   * on the task that makes the run (a node constrained to another
   * non-serving task is INVALID_ARGUMENT); constants go with their first
   * consumer.  Feeds are the running task's (a serving task's node that
   * reads a feed is INVALID_ARGUMENT), and fetches come back to it alone.
   * Nothing orders one task's runs against another's: two tasks' updates
   * of one variable on a server apply in whatever order they arrive.
   * NULL or "" (the default): a synchronous cluster.  Borrowed for the
   * duration of weft_session_create(). */
  const char* serving_jobs;
} weft_session_options;

/** What the placer does with a node its device constraint cannot hold
 * (weft_session_options.placement). */
typedef enum weft_placement_policy WEFT_ENUM_BASE {
  /** A node whose constraint names only devices without a kernel for it
   * goes to another allowed device that has one; the run metadata says so. */
  WEFT_PLACEMENT_SOFT = 0,
  /** ... is an error that names the node, its op and the device. */
  WEFT_PLACEMENT_STRICT = 1
} weft_placement_policy;

/** How float32 values travel between devices
 * (weft_session_options.transfer_precision). */
typedef enum weft_transfer_precision WEFT_ENUM_BASE {
  WEFT_TRANSFER_EXACT = 0, /**< as they are */
  /** float32 values crossing devices travel as bfloat16 (half the bytes,
   * about 3 significant digits) and are widened back on arrival. */
  WEFT_TRANSFER_BFLOAT16 = 1,
  /** ... as IEEE float16 (range +-65504: larger values become infinite). */
  WEFT_TRANSFER_FLOAT16 = 2
} weft_transfer_precision;

/** Which forward values the backward pass recomputes instead of keeping
 * (weft_session_options.recompute). */
typedef enum weft_recompute_policy WEFT_ENUM_BASE {
  WEFT_RECOMPUTE_OFF = 0, /**< none: every value is kept */
  /** Cheap ops only, chosen by the cost model (a few operations per output
   * element: element-wise ops, BiasAdd, pooling, ...), whose output is
   * large, is read by the forward pass and again by a gradient node that
   * cannot run until much later, and whose inputs the backward pass keeps
   * anyway (or are constants).  The copy runs just before the first such
   * gradient node; the forward value dies after its forward readers.
   * Never stateful (random) ops, nodes with control inputs, or graphs with
   * control flow.  Run metadata lists what was recomputed. */
  WEFT_RECOMPUTE_CHEAP = 1
} weft_recompute_policy;

/* Graph optimizations (bits of weft_session_options.optimizations). */
/** Merge identical ops over identical inputs and attributes. */
#define WEFT_OPTIMIZE_CSE 1u
/** Order work so that values live briefly: nodes run as late as their
 * consumers allow. */
#define WEFT_OPTIMIZE_MEMORY_SCHEDULE 2u
/** Fuse chains of ops into one where nothing else reads the values fused
 * away: Conv2D -> BiasAdd -> Relu into FusedConv2D, a max-pool gradient
 * and its ReluGrad, a MatMul and the ApplyGradientDescent that alone reads
 * it (run metadata lists each fusion). */
#define WEFT_OPTIMIZE_FUSION 4u
/** Every optimization, those of later versions included. */
#define WEFT_OPTIMIZE_ALL 0xffffffffu

/** Fills the first `size` bytes of `options` (at most this library's
 * sizeof(weft_session_options)) with defaults and sets struct_size to what
 * it filled.  Pass sizeof(*options): the struct a caller compiled against
 * older headers is smaller than this library's (user API 1.4). */
WEFT_API void weft_session_options_init_sized(weft_session_options* options,
                                              size_t size);

/** Fills `options` with defaults and sets struct_size.  Compiled against
 * these headers it is the macro below, which passes the caller's
 * sizeof(*options).  The function itself, which programs built against
 * 1.0 to 1.3 headers call, fills only the fields 1.0's struct has (its
 * callers' structs are at least that large, and 1.0's may be no larger),
 * so a field appended since keeps its default unless set afterwards with
 * struct_size covering it. */
WEFT_API void weft_session_options_init(weft_session_options* options);
/** weft_session_options_init_sized() with the size of the caller's
 * struct. */
#define weft_session_options_init(options) \
  weft_session_options_init_sized((options), sizeof *(options))

/** Creates a session over `graph` (which the session keeps alive
 * internally).  `options` may be NULL for defaults.  Loads the plugins on the
 * search path if that has not happened yet.  Errors: INVALID_ARGUMENT for bad
 * options, NOT_FOUND when no allowed device exists.  On success the caller
 * owns *out_session (weft_session_destroy).  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_session_create(
    weft_graph* graph, const weft_session_options* options,
    weft_session** out_session);

/** Releases the session and the variables it holds.  NULL is a no-op. */
WEFT_API void weft_session_destroy(weft_session* session);

/** Runs the graph.
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

/* ---- Run metadata: what a run did, for people and for tests. ---- */

/** Collected by weft_session_run_with_metadata(); reusable (each run
 * replaces the contents).  Strings it returns are borrowed until the next
 * run that fills it or its destruction.  Not thread-safe: one run fills one
 * metadata object at a time. */
typedef struct weft_run_metadata weft_run_metadata;

/** NULL when out of memory. */
WEFT_API weft_run_metadata* weft_run_metadata_create(void);
/** Releases run metadata.  NULL is a no-op. */
WEFT_API void weft_run_metadata_destroy(weft_run_metadata* metadata);

/** weft_session_run(), also filling `metadata` (which may be NULL).  On
 * error the metadata describes what is known (the placement, when planning
 * succeeded). */
WEFT_API WEFT_MUST_USE weft_status* weft_session_run_with_metadata(
    weft_session* session, const weft_output* feeds,
    weft_tensor* const* feed_values, int32_t num_feeds,
    const weft_output* fetches, int32_t num_fetches,
    weft_node* const* targets, int32_t num_targets,
    weft_tensor** out_values, weft_run_metadata* metadata);

/* ---- Run options, deadlines and cancellation (user API 1.7). ---- */

/** Options of one run.  A sized struct, as weft_session_options: fields are
 * only appended; fill it with weft_run_options_init. */
typedef struct weft_run_options {
  size_t struct_size; /**< sizeof(weft_run_options) as known */
  /** A run still going after this many milliseconds ends with
   * DEADLINE_EXCEEDED: ops waiting (a dequeue on an empty queue) are
   * cancelled at once, nodes not yet started are skipped, and a kernel
   * already running finishes first.  0: no deadline. */
  int64_t timeout_ms;
  /** WEFT_TRACE_NONE (0, the default) or WEFT_TRACE_FULL: record when each
   * node ran, where, on which thread or stream, the bytes it allocated,
   * and each transfer, into the run's metadata (which must then not be
   * NULL); read it with weft_run_metadata_trace_event or as a Chrome trace
   * (weft_run_metadata_chrome_trace).  A traced run on a device with
   * streams waits for each node's work on the stream before the next one
   * starts there, so that the times are the device's; untraced runs read
   * no clock per node.  User API 1.13. */
  int32_t trace_level;
} weft_run_options;

/** weft_run_options.trace_level. */
typedef enum weft_trace_level WEFT_ENUM_BASE {
  WEFT_TRACE_NONE = 0,
  WEFT_TRACE_FULL = 1
} weft_trace_level;

/** Fills the first `size` bytes of `options` (at most this library's
 * sizeof(weft_run_options)) with defaults and sets struct_size to what it
 * filled, as weft_session_options_init_sized(). */
WEFT_API void weft_run_options_init_sized(weft_run_options* options,
                                          size_t size);
/** weft_run_options_init_sized() with the size of the caller's struct. */
#define weft_run_options_init(options) \
  weft_run_options_init_sized((options), sizeof *(options))

/** weft_session_run_with_metadata() under `options` (NULL: defaults).
 * Errors beyond that function's: INVALID_ARGUMENT for bad options,
 * DEADLINE_EXCEEDED when the run passes its deadline, CANCELLED when
 * weft_session_cancel ends it.  A run ended either way leaves the session
 * and its state (variables, queues) usable: the next run starts clean. */
WEFT_API WEFT_MUST_USE weft_status* weft_session_run_with_options(
    weft_session* session, const weft_run_options* options,
    const weft_output* feeds, weft_tensor* const* feed_values,
    int32_t num_feeds, const weft_output* fetches, int32_t num_fetches,
    weft_node* const* targets, int32_t num_targets,
    weft_tensor** out_values, weft_run_metadata* metadata);

/** Ends every run of `session` in flight (on other threads) with CANCELLED,
 * as a deadline would; runs started afterwards are not affected.  Returns
 * how many runs it reached.  NULL is a no-op (0).  Thread-safe. */
WEFT_API int32_t weft_session_cancel(weft_session* session);

/** Serves an asynchronous cluster (weft_session_options.serving_jobs) on a
 * serving task: executes this task's part of the runs the other tasks
 * make, each task's runs in the order it made them and different tasks'
 * at once, until every other task has destroyed its session.  A part that
 * fails here fails the run that made it, with this task named; serving
 * goes on.  Initialize or restore what this task holds first, with runs of
 * its own (a serving task's runs use its own nodes only); requests that
 * arrive meanwhile wait.  Returns NULL when every other task ended its
 * session; UNAVAILABLE naming the tasks that stopped answering liveness
 * checks (dead or stopped processes) without ending theirs, once the rest
 * have; FAILED_PRECONDITION for a session that is not an asynchronous
 * cluster's, a task that does not serve, or a second call while one
 * serves.  Runs of this task's own may go on on other threads meanwhile.
 * User API 1.12. */
WEFT_API WEFT_MUST_USE weft_status* weft_session_serve(weft_session* session);

/** A queue runner: threads that run a queue's enqueue op over and over, so
 * that a graph's input stage fills a queue while training dequeues.  Each
 * of `num_threads` threads (1 to 64) runs target `enqueue` in `session`
 * until a run fails.  A run ending with OUT_OF_RANGE (its input is
 * exhausted) or CANCELLED (the queue was closed) ends that thread quietly;
 * when the last thread ends that way, `close` (a QueueClose node; may be
 * NULL) runs so that consumers drain the queue and then see OUT_OF_RANGE.
 * Any other error is kept (the first one), runs `close` and stops every
 * thread.  The runner borrows `session`, which must outlive it (stop the
 * runner before destroying the session).  (User API 1.7.) */
typedef struct weft_queue_runner weft_queue_runner;
/** Starts the queue runner described above.  On success *out_runner is
 * owned by the caller: end it with weft_queue_runner_stop(). */
WEFT_API WEFT_MUST_USE weft_status* weft_queue_runner_start(
    weft_session* session, weft_node* enqueue, int32_t num_threads,
    weft_node* close, weft_queue_runner** out_runner);
/** The first error a thread met, copied (NULL while there is none); the
 * runner goes on running.  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_queue_runner_error(
    weft_queue_runner* runner);
/** Stops the threads and waits for them: their runs in flight are cancelled
 * (an enqueue waiting for room ends at once), `cancel` (a QueueClose with
 * cancel_pending_enqueues, or NULL) runs first.  Returns the first error a
 * thread met (NULL when none; CANCELLED from the stop itself is not one)
 * and destroys the runner (so no call may use it afterwards).  The threads
 * end as cancelled runs end, so the last one runs `close`: consumers drain
 * the queue and then see OUT_OF_RANGE, as when the input is exhausted.
 * NULL is a no-op. */
WEFT_API WEFT_MUST_USE weft_status* weft_queue_runner_stop(
    weft_queue_runner* runner, weft_node* cancel);

/** Placement: one entry per graph node the run needed, after CSE, in plan
 * order.  `reason` says why the node went where it did, for instance
 * "cost: 41.2 us here, 310.0 us on /device:CPU:0" or "constraint
 * /device:OPENCL:0". Out-of-range indexes give NULL. */
WEFT_API int32_t weft_run_metadata_num_nodes(const weft_run_metadata* m);
/** Placed node i's name. */
WEFT_API const char* weft_run_metadata_node_name(const weft_run_metadata* m,
                                                 int32_t i);
/** Placed node i's op type. */
WEFT_API const char* weft_run_metadata_node_op(const weft_run_metadata* m,
                                               int32_t i);
/** The device placed node i ran on. */
WEFT_API const char* weft_run_metadata_node_device(
    const weft_run_metadata* m, int32_t i);
/** Why placed node i went to its device. */
WEFT_API const char* weft_run_metadata_node_reason(
    const weft_run_metadata* m, int32_t i);
/** The device a node named `node_name` ran on; NULL if the run had no such
 * node (never needed, fed, or merged into another by CSE). */
WEFT_API const char* weft_run_metadata_device_of(const weft_run_metadata* m,
                                                 const char* node_name);

/** Control flow: the loop frame node i ran in ("" outside every loop). */
WEFT_API const char* weft_run_metadata_node_frame(const weft_run_metadata* m,
                                                  int32_t i);
/** The run's loop frames (one per while loop, by frame name): the frame it
 * is nested in ("" for none), its parallel_iterations, the iterations it
 * started in this run (over every time it was entered) and the most that
 * were alive at once, which parallel_iterations bounds.  Out-of-range i:
 * OUT_OF_RANGE.  Pointers may be NULL for values not wanted. */
WEFT_API int32_t weft_run_metadata_num_frames(const weft_run_metadata* m);
/** Loop frame i: its name, and the values described above. */
WEFT_API WEFT_MUST_USE weft_status* weft_run_metadata_frame(
    const weft_run_metadata* m, int32_t i, const char** name,
    const char** parent, int32_t* parallel_iterations, int64_t* iterations,
    int32_t* max_in_flight);

/** Transfers: one Send/Recv pair per (value, destination device). */
WEFT_API int32_t weft_run_metadata_num_transfers(const weft_run_metadata* m);
/** Transfer i: the value ("node:index"), where it goes from and to, the
 * dtype on the wire (bfloat16 or float16 for lossy transfers) and the bytes
 * moved per run (0 when the size is known only at run time). */
WEFT_API weft_status* weft_run_metadata_transfer(
    const weft_run_metadata* m, int32_t i, const char** value,
    const char** src_device, const char** dst_device, int32_t* wire_dtype,
    uint64_t* bytes);

/** CSE: nodes merged into another (removed), and what they were merged
 * into. */
WEFT_API int32_t weft_run_metadata_num_merged(const weft_run_metadata* m);
/** Merge i: the node removed and the node it was merged into. */
WEFT_API weft_status* weft_run_metadata_merged(const weft_run_metadata* m,
                                               int32_t i,
                                               const char** removed,
                                               const char** kept);

/** Fusions (WEFT_OPTIMIZE_FUSION): the fused node (named as the Relu it
 * ends with) and what it replaced ("Conv2D 'c' + BiasAdd 'b' + Relu
 * 'r'"). */
WEFT_API int32_t weft_run_metadata_num_fused(const weft_run_metadata* m);
/** Fusion i: the fused node and what it replaced. */
WEFT_API weft_status* weft_run_metadata_fused(const weft_run_metadata* m,
                                              int32_t i, const char** node,
                                              const char** what);

/** Recomputation (weft_session_options.recompute): the node that
 * recomputes a value in the backward pass (named after the original, plus
 * "/recomputed"), and what it stands for ("Sigmoid 's1', read by
 * 'gradients/...'").  Out-of-range i: OUT_OF_RANGE. */
WEFT_API int32_t weft_run_metadata_num_recomputed(const weft_run_metadata* m);
/** Recomputation i: the recomputing node and what it stands for. */
WEFT_API weft_status* weft_run_metadata_recomputed(const weft_run_metadata* m,
                                                   int32_t i,
                                                   const char** node,
                                                   const char** what);

/** The threads a kernel of the run could use: the session's
 * intra_op_threads where it set one, else what the runtime chose for this
 * run by timing earlier runs of the same feeds, fetches and targets. */
WEFT_API int32_t weft_run_metadata_intra_op_threads(
    const weft_run_metadata* m);

/** Update ops (optimizers) that wrote a variable's new value over its old
 * buffer instead of a new one, which they do when nothing else holds the
 * old value: the update node and the variable, in the order they ran. */
WEFT_API int32_t weft_run_metadata_num_in_place(const weft_run_metadata* m);
/** In-place update i: the update node and the variable it wrote. */
WEFT_API weft_status* weft_run_metadata_in_place(const weft_run_metadata* m,
                                                 int32_t i,
                                                 const char** update,
                                                 const char** variable);

/** Memory: the devices the run used, and the peak bytes of values the run
 * held on each at once (outputs and transfer buffers; variables and
 * constants, which outlive runs, are not counted). */
WEFT_API int32_t weft_run_metadata_num_devices(const weft_run_metadata* m);
/** Device i's name. */
WEFT_API const char* weft_run_metadata_device_name(const weft_run_metadata* m,
                                                   int32_t i);
/** The peak bytes the run held on device i at once. */
WEFT_API uint64_t weft_run_metadata_peak_bytes(const weft_run_metadata* m,
                                               int32_t i);

/** Everything above as text, one line per fact, for people (`weft place`
 * prints it). */
WEFT_API const char* weft_run_metadata_to_string(const weft_run_metadata* m);

/* ---- Traces (weft_run_options.trace_level; user API 1.13) ---- */

/** What a trace event is: a node that ran (a kernel, a variable read, a
 * control-flow op, a runtime op such as a queue's dequeue), or one half
 * of a transfer between devices or tasks (Send, Recv, _TaskSend,
 * _TaskRecv). */
typedef enum weft_trace_event_kind WEFT_ENUM_BASE {
  WEFT_TRACE_EVENT_NODE = 0,
  WEFT_TRACE_EVENT_TRANSFER = 1
} weft_trace_event_kind;

/** The events of the last traced run that filled `m`, in order of their
 * start: one per execution of a node (a node in a loop, once per
 * iteration; a node not taken by a cond or not needed, never).  0 for a
 * run that was not traced. */
WEFT_API int32_t weft_run_metadata_num_trace_events(
    const weft_run_metadata* m);
/** Trace event i: its kind (a weft_trace_event_kind); `name`: the node, or
 * for a transfer the value it moves ("node:index"); `op`: its op type
 * ("Send", "Recv" for transfers); `device` it ran on; `lane`, what ran it
 * there: "thread N" (a host thread of the run; "thread 0" is the thread
 * that called run), "stream" (the device's stream, for devices with
 * streams) or "async N" (an operation that waited without holding a
 * thread: an asynchronous kernel, a dequeue, a receive from another task;
 * it ends when it completes); start and end in nanoseconds since the run
 * began (0 <= start <= end); `bytes`: for a node, what its outputs newly
 * allocated on its device (values it forwarded or read from a variable
 * or constant count 0); for a transfer, the bytes moved.  Pointers may be
 * NULL for values not wanted; strings are borrowed as the metadata's.
 * Out-of-range i: OUT_OF_RANGE. */
WEFT_API WEFT_MUST_USE weft_status* weft_run_metadata_trace_event(
    const weft_run_metadata* m, int32_t i, int32_t* kind, const char** name,
    const char** op, const char** device, const char** lane,
    int64_t* start_ns, int64_t* end_ns, uint64_t* bytes);
/** Trace event i's loop frame ("" outside every loop) and iteration there
 * (0 outside loops).  Out-of-range i: OUT_OF_RANGE. */
WEFT_API WEFT_MUST_USE weft_status* weft_run_metadata_trace_event_frame(
    const weft_run_metadata* m, int32_t i, const char** frame,
    int64_t* iteration);
/** The trace as Chrome trace-event JSON (the format chrome://tracing and
 * https://ui.perfetto.dev open): a "traceEvents" array of complete ("X")
 * events, one per trace event (ts and dur in microseconds, args with the
 * op, bytes, frame and iteration), and metadata ("M") events naming each
 * process after a device and each thread after a lane.  Borrowed as the
 * metadata's strings; an empty trace for an untraced run; NULL for a NULL
 * `m` or when out of memory. */
WEFT_API const char* weft_run_metadata_chrome_trace(
    const weft_run_metadata* m);
/** Writes weft_run_metadata_chrome_trace's text to `path`, whole or not at
 * all (a temporary file renamed over `path`).  Errors: INVALID_ARGUMENT
 * for a NULL argument, FAILED_PRECONDITION for metadata of an untraced
 * run, and the system's error, naming the path, when the file cannot be
 * written. */
WEFT_API WEFT_MUST_USE weft_status* weft_run_metadata_write_chrome_trace(
    const weft_run_metadata* m, const char* path);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SESSION_H_ */
