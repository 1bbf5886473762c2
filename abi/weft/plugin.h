/** @file
 * Weft — the plugin interface, version 1.
 *
 * A device plugin is a shared object that exports one symbol,
 * `weft_plugin_entry` (WEFT_PLUGIN_ENTRY_NAME), of type weft_plugin_entry_fn.
 * It includes only the headers in abi/ and links nothing of libweft:
 * everything it needs from the host arrives in the weft_host_api table.  The
 * host opens it with RTLD_LOCAL and never unloads it while a session uses it.
 *
 * Loading, in order:
 *  1. The host fills a weft_plugin_init_args: the range of interface versions
 *     it speaks, its service table, and a registrar handle.
 *  2. weft_plugin_entry() writes `chosen_version` (always, even when it
 *     returns an error), registers its kernels through
 *     host->register_kernel(registrar, ...), points `plugin` at its own
 *     table, and returns NULL — or an error status made with
 *     host->status_create(), which refuses the plugin.
 *  3. The host refuses a chosen major outside its range, naming both
 *     versions, then reads only the fields of the plugin's table that its
 *     struct_size covers.
 * Both sides branch on the negotiated version, never on their compile-time
 * constants.
 *
 * Versioning rules (for both tables and every struct here): fields are only
 * ever appended; each struct starts with struct_size; a receiver reads only
 * what the sender's struct_size covers.  Every slot added after 1.0 is
 * optional, and its comment says what the host does when it is NULL.
 *
 * Changes, one line per minor version:
 *  1.1  weft_host_api: register_gradient and the graph table (gradients).
 *  1.2  weft_kernel_def: type_constraints, so a kernel constrains several
 *       type attributes (Cast's SrcT and DstT) and the host refuses at plan
 *       time what it cannot run.
 *  1.3  weft_host_api: kernel_forward_input_or_allocate, so an update
 *       kernel writes a variable in place when nothing else holds its value
 *       (and an element-wise kernel writes over an input no one else
 *       reads).
 *  1.4  weft_host_api: register_op and the shape table (ops): a plugin
 *       defines ops of its own (weft_op_def in weft/ops.h), with their
 *       shape functions and gradients, and registers kernels for them;
 *       weft_kernel_def.device_type (kernels for another plugin's device
 *       type, for the plugin's own ops); weft_graph_api.node_attr (a
 *       gradient reads its node's attributes); and plugins of ops only: a
 *       plugin choosing 1.4 may leave device_type and every device,
 *       memory, copy and stream slot NULL.
 *  1.5  asynchronous kernels: weft_kernel_def.compute_async, and
 *       weft_host_api.kernel_defer and kernel_done, so a kernel that waits
 *       (for data, a peer, a device) completes later without holding a
 *       thread of the run.
 *  1.7  weft_plugin_api: collective_unique_id, collective_comm_create,
 *       collective_all_reduce, collective_broadcast and
 *       collective_comm_destroy (optional as a group): the device's own
 *       communicator (NCCL for CUDA) runs AllReduce and Broadcast on the
 *       node's stream, the host bootstrapping it over MPI; NULL: MPI in
 *       host memory, as before.
 *  1.8  weft_kernel_def.compute_described and output_overwrites: the host
 *       describes every input and allocates every output before the
 *       call, for nodes whose output shapes are known when the session
 *       plans them (no host call per tensor on the hot path).
 *
 * Memory: device memory is NOT assumed to be host memory.  An allocation is
 * an opaque `void*` handle (a host pointer, a CUdeviceptr, a cl_mem...) that
 * only the plugin interprets; tensors are (handle, byte offset).  A device
 * that sets WEFT_DEVICE_HOST_MEMORY promises its handles are host pointers,
 * which lets the host skip copies.
 *
 * Errors: every fallible slot returns a weft_status* created with
 * host->status_create(); NULL is success.  The host takes ownership of a
 * returned status.  A plugin never aborts the process and never lets a C++
 * exception cross the boundary.
 *
 * Threads: the host may call any slot from any thread, and may run kernels
 * of different nodes concurrently on one device; slots that touch shared
 * state must lock.  One stream is used by one host thread at a time.
 */
#ifndef WEFT_PLUGIN_H_
#define WEFT_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/dtype.h"
#include "weft/graph.h"
#include "weft/ops.h"
#include "weft/status.h"
#include "weft/train.h"
#include "weft/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The plugin interface's major version these headers describe. */
#define WEFT_PLUGIN_INTERFACE_MAJOR 1
/** The plugin interface's minor version these headers describe. */
#define WEFT_PLUGIN_INTERFACE_MINOR 8
/** The one symbol a plugin exports: a weft_plugin_entry_fn. */
#define WEFT_PLUGIN_ENTRY_NAME "weft_plugin_entry"

/** Limits the host enforces on what a plugin hands it.  Every string a
 * plugin gives the host (table strings, device properties, kernel and
 * gradient op names, attribute names, status messages, log lines) is read
 * for at most WEFT_PLUGIN_MAX_STRING bytes, terminating NUL included: a
 * table string without a NUL within that refuses the plugin, a device
 * property string is dropped, a kernel registration or attribute lookup
 * fails, a status message or log line is cut.  The plugin's name and device_type are shorter
 * still: at most WEFT_PLUGIN_MAX_NAME - 1 characters.  device_count may
 * report at most WEFT_PLUGIN_MAX_DEVICES devices; more (or a negative
 * count) refuses the plugin. */
#define WEFT_PLUGIN_MAX_STRING 1024
#define WEFT_PLUGIN_MAX_NAME 64     /**< see WEFT_PLUGIN_MAX_STRING */
#define WEFT_PLUGIN_MAX_DEVICES 1024 /**< see WEFT_PLUGIN_MAX_STRING */

#if defined(__GNUC__)
/** Marks the plugin's entry point as exported from its shared object. */
#define WEFT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define WEFT_PLUGIN_EXPORT
#endif

/** Plugin-defined objects, opaque to the host. */
typedef struct weft_plugin_device weft_plugin_device;
typedef struct weft_plugin_stream weft_plugin_stream; /**< a queue of work */
typedef struct weft_plugin_event weft_plugin_event;   /**< a point in a stream */
/** A communicator among the ranks of an MPI job, one per device (1.7). */
typedef struct weft_plugin_comm weft_plugin_comm;

/** The most bytes a communicator id may have (collective_unique_id, 1.7):
 * NCCL's take 128. */
#define WEFT_PLUGIN_MAX_COMM_ID 1024

/** What collective_all_reduce computes (1.7). */
typedef enum weft_collective_reduction WEFT_ENUM_BASE {
  /** The element-wise sum over the ranks. */
  WEFT_COLLECTIVE_SUM = 0,
  /** The sum, then each element multiplied by 1 / size in double precision
   * and rounded once to the dtype: (T)((double)sum * (1.0 / size)), as the
   * host computes the mean of the MPI path (float32 and float64 only). */
  WEFT_COLLECTIVE_MEAN = 1
} weft_collective_reduction;

/** Host-defined objects, opaque to the plugin. */
typedef struct weft_kernel_context weft_kernel_context;
/** The handle register_kernel takes, valid during the plugin's entry. */
typedef struct weft_kernel_registrar weft_kernel_registrar;

/** Severities of host->log. */
typedef enum weft_log_level WEFT_ENUM_BASE {
  WEFT_LOG_DEBUG = 0,
  WEFT_LOG_INFO = 1,
  WEFT_LOG_WARNING = 2,
  WEFT_LOG_ERROR = 3
} weft_log_level;

/** A tensor as a kernel sees it: valid only during the kernel call. */
typedef struct weft_kernel_tensor {
  size_t struct_size;    /**< sizeof(weft_kernel_tensor) as the host knows */
  int32_t dtype;         /**< weft_dtype */
  int32_t rank;          /**< number of dims, 0 for a scalar */
  const int64_t* dims;   /**< `rank` entries, borrowed for the call */
  int64_t element_count; /**< product of dims */
  uint64_t byte_size;    /**< element_count × dtype size */
  void* data;            /**< allocation handle from memory_allocate */
  uint64_t offset;       /**< byte offset of the first element in `data` */
} weft_kernel_tensor;

/** Runs one node.  `kernel_arg` is the pointer given at registration.  On a
 * device with streams the kernel may only enqueue work on
 * host->kernel_stream(ctx) and return; errors from that work must surface
 * from event_synchronize or stream_synchronize. */
typedef weft_status* (*weft_kernel_compute_fn)(void* kernel_arg,
                                               weft_kernel_context* ctx);

/** Runs one node whose tensors the host describes up front (1.8): see
 * weft_kernel_def.compute_described.  Both arrays are borrowed for the
 * call; their entries have the host's struct_size. */
typedef weft_status* (*weft_kernel_described_fn)(
    void* kernel_arg, weft_kernel_context* ctx,
    const weft_kernel_tensor* inputs, int32_t num_inputs,
    const weft_kernel_tensor* outputs, int32_t num_outputs);

/** A kernel: the implementation of op `op` on the plugin's device type for
 * the dtypes listed.  The host selects a kernel at plan time, so a node is
 * placed only where a kernel accepts every type attribute it constrains:
 * a kernel that cannot run some combination must say so here, not fail
 * when it runs.  The host copies everything during register_kernel. */
typedef struct weft_kernel_def {
  size_t struct_size;        /**< sizeof(weft_kernel_def) */
  const char* op;            /**< op type name, e.g. "MatMul" */
  /** Name of the type attribute the constraint applies to ("T"), or NULL
   * when the kernel accepts every dtype the op allows.  A node without an
   * attribute of this name does not match. */
  const char* dtype_attr;
  const int32_t* dtypes;     /**< allowed values of dtype_attr (weft_dtype) */
  int32_t num_dtypes;        /**< entries at `dtypes` */
  /** When two kernels match the same node on one device type, the higher
   * priority wins; ties go to the plugin loaded first. */
  int32_t priority;
  weft_kernel_compute_fn compute; /**< runs one node */
  void* kernel_arg;               /**< passed to compute */

  /* ---- Appended in 1.2.  A def whose struct_size stops before these has
   * no further constraint.  A host older than 1.2 ignores them, so a kernel
   * should still check the attributes they constrain when it runs. ---- */

  /** Constraints on further type attributes (weft_kernel_type_constraint,
   * in weft/ops.h), all of which must hold as well as dtype_attr's (Cast:
   * SrcT as dtype_attr, DstT here).  A combination
   * that is not a product of sets is registered as several kernels.  NULL
   * with 0 for none. */
  const weft_kernel_type_constraint* type_constraints;
  int32_t num_type_constraints; /**< entries at `type_constraints` */

  /* ---- Appended in 1.4 ---- */

  /** The device type the kernel runs on: NULL for the plugin's own; another
   * type ("CPU") gives that type's devices a kernel for an op this plugin
   * defines, so graphs using the op run wherever the plugin is loaded.  A
   * kernel for another plugin's device gets that plugin's device and
   * memory handles: only a type whose devices use host memory (CPU) can be
   * served without knowing its plugin.  Kernels for runtime ops on another
   * plugin's device type are refused. */
  const char* device_type;

  /* ---- Appended in 1.5: asynchronous kernels.  A host older than 1.5
   * ignores it and calls `compute`, which must therefore still be set and
   * do the whole work before it returns. ---- */

  /** When non-NULL, a 1.5 host calls this instead of `compute`.  It may
   * start work that finishes later and return at once after calling
   * host->kernel_defer(ctx, ...): the node then completes when the kernel
   * calls host->kernel_done(ctx, status), from any thread, and no thread
   * of the run waits for it meanwhile.  Returning without deferring
   * completes the node as `compute` would. */
  weft_kernel_compute_fn compute_async;

  /* ---- Appended in 1.8: calls with every tensor described by the host.
   * A host older than 1.8 ignores them and calls `compute`, which must
   * therefore still be set. ---- */

  /** When non-NULL, a 1.8 host calls this instead of `compute` for a node
   * whose every output has a dtype and shape fully known when the session
   * plans it (the op's shape function gave every dimension), on a kernel
   * without compute_async.  `inputs` describes every input as kernel_input
   * would; `outputs` describes every output, already allocated on the
   * kernel's device with the inferred dtype and shape as
   * kernel_allocate_output would, except that output 0 may be the memory
   * of an input named in output_overwrites (below).  The kernel checks its
   * inputs as `compute` would, writes every output and returns: it must
   * not call kernel_allocate_output, kernel_forward_input or
   * kernel_forward_input_or_allocate (they fail with FAILED_PRECONDITION
   * here); every other host call stays valid.  An output shape the kernel
   * would not have produced from these inputs is a bug in the op's shape
   * function: the kernel should fail with WEFT_INTERNAL, not write.
   * Other nodes (an output shape known only when the node runs) get
   * `compute`.  What it saves: a kernel_input call per input and an
   * allocation call per output, and the host's check of the outputs. */
  weft_kernel_described_fn compute_described;
  /** For compute_described: bit i set when output 0 may be input i's
   * memory, that is when the kernel computes each element of output 0 only
   * from the same element of the inputs, reads it before writing it, and
   * cannot fail once it starts writing.  The host then hands over input i
   * (at most one input; the same conditions as
   * kernel_forward_input_or_allocate: the node is its last reader, nothing
   * else holds its buffer, and it has output 0's dtype and shape) instead
   * of allocating.  0: output 0 is always fresh memory. */
  uint32_t output_overwrites;
} weft_kernel_def;

/** Services the host offers to plugins.  Every slot of 1.0 is non-NULL. */
typedef struct weft_host_api {
  size_t struct_size; /**< sizeof(weft_host_api) as the host knows it */

  /** A new status; the message is copied.  NULL for WEFT_OK. */
  weft_status* (*status_create)(int32_t code, const char* message);
  /** Logs a line, attributed to the plugin. */
  void (*log)(int32_t level, const char* message);

  /** Registers a kernel.  Valid only during weft_plugin_entry(): a call
   * after the entry returned fails with WEFT_FAILED_PRECONDITION and
   * changes nothing.  `def` and the strings and arrays it points to are
   * copied.  A kernel for an op the
   * host does not know is ignored with a warning (it may come from a newer
   * op library), not an error. */
  weft_status* (*register_kernel)(weft_kernel_registrar* registrar,
                                  const weft_kernel_def* def);

  /* ---- Kernel context: valid only during a compute call. ---- */
  /** Strings borrowed for the call. */
  const char* (*kernel_node_name)(const weft_kernel_context* ctx);
  /** The node's op type, "MatMul". */
  const char* (*kernel_op)(const weft_kernel_context* ctx);
  /** How many inputs the node has. */
  int32_t (*kernel_num_inputs)(const weft_kernel_context* ctx);
  /** How many outputs the node has. */
  int32_t (*kernel_num_outputs)(const weft_kernel_context* ctx);
  /** Describes input `index` (out->struct_size must be set by the caller). */
  weft_status* (*kernel_input)(const weft_kernel_context* ctx, int32_t index,
                               weft_kernel_tensor* out);
  /** Allocates output `index` on the kernel's device. */
  weft_status* (*kernel_allocate_output)(weft_kernel_context* ctx,
                                         int32_t index, int32_t dtype,
                                         const int64_t* dims, int32_t rank,
                                         weft_kernel_tensor* out);
  /** Makes output `output_index` share input `input_index`'s memory, with a
   * new shape of the same element count (Identity, Reshape): no copy. */
  weft_status* (*kernel_forward_input)(weft_kernel_context* ctx,
                                       int32_t input_index,
                                       int32_t output_index,
                                       const int64_t* dims, int32_t rank);
  /** Attribute readers: NOT_FOUND when absent, INVALID_ARGUMENT when of
   * another type.  Pointers returned are borrowed for the call. */
  weft_status* (*kernel_attr_int)(const weft_kernel_context* ctx,
                                  const char* name, int64_t* out);
  /** Reads float attribute `name`. */
  weft_status* (*kernel_attr_float)(const weft_kernel_context* ctx,
                                    const char* name, double* out);
  /** Reads bool attribute `name` as 0 or 1. */
  weft_status* (*kernel_attr_bool)(const weft_kernel_context* ctx,
                                   const char* name, int32_t* out);
  /** Reads dtype attribute `name` (a weft_dtype). */
  weft_status* (*kernel_attr_dtype)(const weft_kernel_context* ctx,
                                    const char* name, int32_t* out);
  /** Reads string attribute `name`. */
  weft_status* (*kernel_attr_string)(const weft_kernel_context* ctx,
                                     const char* name, const char** out);
  /** Reads list(int) attribute `name`: *out_count entries at *out. */
  weft_status* (*kernel_attr_int_list)(const weft_kernel_context* ctx,
                                       const char* name, const int64_t** out,
                                       int32_t* out_count);
  /** Reads list(float) attribute `name`: *out_count entries at *out. */
  weft_status* (*kernel_attr_float_list)(const weft_kernel_context* ctx,
                                         const char* name,
                                         const double** out,
                                         int32_t* out_count);
  /** The device the kernel runs on, and the stream to enqueue on (NULL on a
   * device without streams, where work must be complete on return). */
  weft_plugin_device* (*kernel_device)(const weft_kernel_context* ctx);
  /** The stream to enqueue on, NULL on a device without streams. */
  weft_plugin_stream* (*kernel_stream)(const weft_kernel_context* ctx);
  /** How many threads the kernel may use (the session's intra-op setting). */
  int32_t (*kernel_intra_op_threads)(const weft_kernel_context* ctx);

  /** Releases a status the host returned to the plugin (for instance
   * NOT_FOUND from an optional attribute).  NULL is a no-op. */
  void (*status_destroy)(weft_status* status);
  /** The code of a status; WEFT_OK for NULL. */
  int32_t (*status_code)(const weft_status* status);

  /** How many times this node ran before in this session (0 the first
   * time), counted atomically per node and session, for stateful ops only
   * (0 for others).  Random ops combine it with their seed attributes: a
   * fixed seed then gives the same sequence in every process, and each run
   * gives fresh values. */
  uint64_t (*kernel_run_counter)(const weft_kernel_context* ctx);

  /* ---- Appended in 1.1: gradients.  A plugin links nothing of libweft, so
   * a gradient function it registers builds nodes through `graph`. ---- */

  /** Registers `fn` as the gradient of op `op`, replacing the library's
   * (weft_gradient_register() semantics).  Valid only during
   * weft_plugin_entry(); takes effect when the plugin is accepted.  The
   * gradient applies to every graph differentiated afterwards, whatever
   * device runs it: it should build ops every device has kernels for.  An
   * unknown op is ignored with a warning, as for kernels. */
  weft_status* (*register_gradient)(weft_kernel_registrar* registrar,
                                    const char* op, weft_gradient_fn fn,
                                    void* arg);
  /** The graph-building and gradient-context functions of the user API
   * (abi/weft/graph.h, abi/weft/train.h), for gradient functions. */
  const struct weft_graph_api* graph;

  /* ---- Appended in 1.3: writing over an input.  NULL (an older host):
   * the plugin allocates with kernel_allocate_output. ---- */

  /** Output `output_index` takes over input `input_index`'s memory when the
   * host lets the kernel write over that input, else is allocated as by
   * kernel_allocate_output; *forwarded (may be NULL) says which.  The host
   * lets it only where no one else can see the input's bytes (an update
   * op's variable whose value nothing else holds, while the update holds
   * the variable's lock; a value whose last reader this node is and whose
   * buffer nothing else holds), and only with the input's dtype and
   * shape.
   * A kernel that writes over an input must not fail after it starts
   * writing: the input is then lost.  Each input is handed over at most
   * once. */
  weft_status* (*kernel_forward_input_or_allocate)(
      weft_kernel_context* ctx, int32_t input_index, int32_t output_index,
      int32_t dtype, const int64_t* dims, int32_t rank,
      weft_kernel_tensor* out, int32_t* forwarded);

  /* ---- Appended in 1.4: ops defined by the plugin.  A host older than
   * 1.4 has no such slots (check struct_size): a plugin that needs its ops
   * should then refuse to load, saying why. ---- */

  /** Defines an op (weft_op_register() semantics; the schema and every
   * string are copied).  Valid only during weft_plugin_entry(); the op
   * joins the library when the plugin is accepted, with its gradient, and
   * kernels and gradients the plugin registers for it in the same entry
   * call are accepted.  A name another plugin or the program defined, or a
   * schema that does not parse, refuses the whole plugin, naming both. */
  weft_status* (*register_op)(weft_kernel_registrar* registrar,
                              const weft_op_def* def);
  /** The shape-function calls of weft/ops.h, for the plugin's shape
   * functions. */
  const struct weft_shape_api* shape;

  /* ---- Appended in 1.5: asynchronous kernels (weft_kernel_def.
   * compute_async).  NULL from an older host, which never calls
   * compute_async. ---- */

  /** Called by compute_async, at most once and before it returns: the
   * node completes when the kernel calls kernel_done.  From here until
   * kernel_done, `ctx` stays valid on any thread (inputs, attributes,
   * output allocation) except that kernel_stream returns NULL: work the
   * kernel queued on the stream before deferring must be complete when it
   * calls kernel_done.  Whatever compute_async returns after deferring is
   * destroyed unread: failures go to kernel_done.
   * `cancel` (may be NULL) is called with `cancel_arg` at most once, on
   * any thread, when the run is cancelled, passes its deadline or fails
   * elsewhere while the kernel waits; never after kernel_done has
   * returned, and kernel_done waits for a cancel call in progress.  It
   * must make the kernel call kernel_done soon (with WEFT_CANCELLED or
   * whatever it produced) without calling kernel_done itself, waiting for
   * it, or taking a lock held around a kernel_done call.
   * FAILED_PRECONDITION outside compute_async or a second time. */
  weft_status* (*kernel_defer)(weft_kernel_context* ctx,
                               void (*cancel)(void* cancel_arg),
                               void* cancel_arg);
  /** Completes a deferred kernel, exactly once, from any thread: `status`
   * (taken over) NULL for success, when every output must have been
   * allocated (and set), or the error that fails the run.  `ctx` is
   * invalid once it returns. */
  void (*kernel_done)(weft_kernel_context* ctx, weft_status* status);
} weft_host_api;

/** The user API's shape-function calls, as a table for plugins (host 1.4).
 * Each slot behaves as the function of the same name with the weft_
 * prefix. */
typedef struct weft_shape_api {
  size_t struct_size; /**< sizeof(weft_shape_api) as the host knows it */
  /** As weft_shape_num_inputs(). */
  int32_t (*shape_num_inputs)(const weft_shape_context* ctx);
  /** As weft_shape_input_dtype(). */
  weft_dtype (*shape_input_dtype)(const weft_shape_context* ctx,
                                  int32_t index);
  /** As weft_shape_input_rank(). */
  int32_t (*shape_input_rank)(const weft_shape_context* ctx, int32_t index);
  /** As weft_shape_input_dim(). */
  int64_t (*shape_input_dim)(const weft_shape_context* ctx, int32_t index,
                             int32_t axis);
  /** As weft_shape_attr(). */
  weft_status* (*shape_attr)(const weft_shape_context* ctx, const char* name,
                             weft_attr_value* out);
  /** As weft_shape_set_output(). */
  weft_status* (*shape_set_output)(weft_shape_context* ctx, int32_t index,
                                   const int64_t* dims, int32_t rank);
  /** As weft_shape_error(). */
  weft_status* (*shape_error)(const weft_shape_context* ctx,
                              const char* message);
} weft_shape_api;

/** The user API's graph building, as a table for plugins (host 1.1).  Each
 * slot behaves as the function of the same name without the weft_ prefix. */
typedef struct weft_graph_api {
  size_t struct_size; /**< sizeof(weft_graph_api) as the host knows it */
  /** As weft_op_begin(). */
  weft_op_builder* (*op_begin)(weft_graph* graph, const char* op_type,
                               const char* name);
  /** As weft_op_add_input(). */
  void (*op_add_input)(weft_op_builder* builder, weft_output input);
  /** As weft_op_add_input_list(). */
  void (*op_add_input_list)(weft_op_builder* builder,
                            const weft_output* inputs, int32_t count);
  /** As weft_op_add_control_input(). */
  void (*op_add_control_input)(weft_op_builder* builder, weft_node* node);
  /** As weft_op_set_device(). */
  void (*op_set_device)(weft_op_builder* builder, const char* device);
  /** As weft_op_set_attr_int(). */
  void (*op_set_attr_int)(weft_op_builder* builder, const char* name,
                          int64_t value);
  /** As weft_op_set_attr_float(). */
  void (*op_set_attr_float)(weft_op_builder* builder, const char* name,
                            double value);
  /** As weft_op_set_attr_bool(). */
  void (*op_set_attr_bool)(weft_op_builder* builder, const char* name,
                           int32_t value);
  /** As weft_op_set_attr_dtype(). */
  void (*op_set_attr_dtype)(weft_op_builder* builder, const char* name,
                            weft_dtype value);
  /** As weft_op_set_attr_int_list(). */
  void (*op_set_attr_int_list)(weft_op_builder* builder, const char* name,
                               const int64_t* values, int32_t count);
  /** As weft_op_set_attr_shape(). */
  void (*op_set_attr_shape)(weft_op_builder* builder, const char* name,
                            const int64_t* dims, int32_t rank);
  /** As weft_op_finish(). */
  weft_status* (*op_finish)(weft_op_builder* builder, weft_node** out_node);
  /** As weft_node_name(). */
  const char* (*node_name)(const weft_node* node);
  /** As weft_node_op_type(). */
  const char* (*node_op_type)(const weft_node* node);
  /** As weft_node_num_inputs(). */
  int32_t (*node_num_inputs)(const weft_node* node);
  /** As weft_node_input(). */
  weft_output (*node_input)(const weft_node* node, int32_t index);
  /** As weft_output_dtype(). */
  weft_dtype (*output_dtype)(weft_output output);
  /** As weft_gradient_graph(). */
  weft_graph* (*gradient_graph)(weft_gradient_context* ctx);
  /** As weft_gradient_node(). */
  weft_node* (*gradient_node)(weft_gradient_context* ctx);
  /** As weft_gradient_output_grad(). */
  weft_output (*gradient_output_grad)(weft_gradient_context* ctx,
                                      int32_t index);
  /** As weft_gradient_input_wanted(). */
  int32_t (*gradient_input_wanted)(weft_gradient_context* ctx, int32_t index);
  /** As weft_gradient_set_input_grad(). */
  weft_status* (*gradient_set_input_grad)(weft_gradient_context* ctx,
                                          int32_t index, weft_output grad);
  /* ---- Appended in 1.4 (NULL from an older host) ---- */
  /** As weft_node_attr(). */
  weft_status* (*node_attr)(const weft_node* node, const char* name,
                            weft_attr_value* out);
} weft_graph_api;

/** Properties of one device, filled by the plugin.  The host sets
 * struct_size; the plugin writes only fields that size covers.  Strings must
 * live until the plugin is unloaded. */
typedef struct weft_device_properties {
  size_t struct_size;      /**< sizeof(weft_device_properties) as known */
  const char* description; /**< hardware name */
  const char* vendor;      /**< hardware vendor, "" when unknown */
  uint64_t memory_bytes;   /**< 0 when unknown */
  double compute_gflops;   /**< peak estimate for the cost model; 0 unknown */
  uint32_t flags;          /**< WEFT_DEVICE_* from weft/device.h */
  /** 1.6: bit (1 << d) set where this device cannot run dtype d (a
   * weft_dtype), whatever kernels its plugin registered for the device
   * type: an OpenCL device without cl_khr_fp64 sets 1 << WEFT_FLOAT64.
   * The placer then treats a node whose type attributes name such a dtype
   * as having no kernel on this device (soft placement moves it; a hard
   * constraint is refused, naming the device and the dtype).  So a plugin
   * registers its kernels without asking its devices first, and need not
   * start its driver to be loaded.  0 (and older plugins): every dtype its
   * kernels take. */
  uint64_t unsupported_dtypes;
} weft_device_properties;

/** The plugin's table.  Lives, unchanged, until the plugin is unloaded.
 * Slots marked "optional" may be NULL. */
typedef struct weft_plugin_api {
  size_t struct_size;      /**< sizeof(weft_plugin_api) as the plugin knows */
  /** "weft-cpu": A-Z a-z 0-9 _ - . only; unique among loaded plugins. */
  const char* name;
  const char* version;     /**< the plugin's own release */
  /** "CPU", "CUDA", "OPENCL": upper case by convention, A-Z a-z 0-9 _ only
   * (NULL for a plugin of ops only, interface 1.4: it then has no devices,
   * leaves every slot from device_count to stream_wait_event NULL, and
   * registers its kernels for other plugins' device types)
   * (it becomes part of device names, "/device:CPU:0").  A device type
   * belongs to the first plugin loaded that declares it, even one that
   * finds no device: a later plugin declaring the same type is refused
   * with WEFT_ALREADY_EXISTS, naming both plugins.  So the devices of one
   * type all come from one plugin, number from 0, and only run that
   * plugin's kernels. */
  const char* device_type;

  /* ---- Devices ---- */
  /** Number of devices.  An error means zero devices, and its message says
   * why ("no CUDA driver"); the plugin still loads.  At most
   * WEFT_PLUGIN_MAX_DEVICES. */
  weft_status* (*device_count)(int32_t* out_count);
  /** Opens device `index`; the handle stays valid until device_close. */
  weft_status* (*device_open)(int32_t index, weft_plugin_device** out);
  /** Closes a device from device_open. */
  void (*device_close)(weft_plugin_device* device);
  /** Fills `out`, whose struct_size the host sets. */
  weft_status* (*device_properties)(weft_plugin_device* device,
                                    weft_device_properties* out);

  /* ---- Memory ---- */
  /** Allocates `bytes` (> 0) aligned to at least 64 bytes.  The handle is
   * opaque to the host but never NULL on success: a NULL handle with a
   * NULL status is reported to the user as the plugin's error. */
  weft_status* (*memory_allocate)(weft_plugin_device* device, uint64_t bytes,
                                  void** out_handle);
  /** Frees a handle from memory_allocate.  NULL is a no-op.  Work already
   * enqueued that uses the memory must complete first: the host frees only
   * after such work is known complete. */
  void (*memory_free)(weft_plugin_device* device, void* handle);

  /* ---- Copies.  `stream` may be NULL: then the copy is complete on
   * return.  With a stream, host memory must stay valid until the stream
   * passes an event recorded after the copy. ---- */
  /** Copies `bytes` from host memory into `dst` at `dst_offset`. */
  weft_status* (*copy_host_to_device)(weft_plugin_device* device,
                                      weft_plugin_stream* stream,
                                      const void* host_src, void* dst,
                                      uint64_t dst_offset, uint64_t bytes);
  /** Copies `bytes` from `src` at `src_offset` into host memory. */
  weft_status* (*copy_device_to_host)(weft_plugin_device* device,
                                      weft_plugin_stream* stream,
                                      const void* src, uint64_t src_offset,
                                      void* host_dst, uint64_t bytes);
  /** Copies `bytes` between two allocations of the same device. */
  weft_status* (*copy_device_to_device)(weft_plugin_device* device,
                                        weft_plugin_stream* stream,
                                        const void* src, uint64_t src_offset,
                                        void* dst, uint64_t dst_offset,
                                        uint64_t bytes);

  /* ---- Streams and events: optional as a group.  When stream_create is
   * NULL the device is synchronous: kernels and copies complete before they
   * return, and the host passes NULL streams.  When stream_create is set,
   * every slot of the group must be set. ---- */
  /** Creates a stream: work enqueued on it runs in order (optional, see
   * above). */
  weft_status* (*stream_create)(weft_plugin_device* device,
                                weft_plugin_stream** out);
  /** Destroys a stream whose work is complete. */
  void (*stream_destroy)(weft_plugin_device* device,
                         weft_plugin_stream* stream);
  /** Waits for everything enqueued; returns the first error of that work. */
  weft_status* (*stream_synchronize)(weft_plugin_device* device,
                                     weft_plugin_stream* stream);
  /** Creates an event, not yet recorded. */
  weft_status* (*event_create)(weft_plugin_device* device,
                               weft_plugin_event** out);
  /** Destroys an event. */
  void (*event_destroy)(weft_plugin_device* device, weft_plugin_event* event);
  /** Marks the point in `stream` after the work enqueued so far. */
  weft_status* (*event_record)(weft_plugin_device* device,
                               weft_plugin_event* event,
                               weft_plugin_stream* stream);
  /** Blocks until the recorded point is reached; returns the first error of
   * the work before it. */
  weft_status* (*event_synchronize)(weft_plugin_device* device,
                                    weft_plugin_event* event);
  /** Makes later work on `stream` wait for `event` (no host blocking). */
  weft_status* (*stream_wait_event)(weft_plugin_device* device,
                                    weft_plugin_stream* stream,
                                    weft_plugin_event* event);

  /* ---- Lifetime ---- */
  /** Optional: called once before the host unloads the plugin. */
  void (*shutdown)(void);

  /* ---- Appended in 1.7: collectives on the device.  Optional as a group:
   * set all five or none (a plugin that sets some but not all is refused).
   * NULL, and for every plugin choosing a version before 1.7 (whose slots
   * here the host reads as NULL): the AllReduce and Broadcast ops placed
   * on the plugin's devices go through MPI in host memory, as before 1.7
   * (AllGather always does).
   *
   * How the host uses them.  In a process started by an MPI launcher, the
   * first AllReduce or Broadcast that runs on a device of such a plugin
   * bootstraps a communicator for that device: every rank calls
   * collective_unique_id on its device (rank 0 to make the id, the others
   * with `out` NULL, to learn whether they can join), the host gathers the
   * answers on every rank over MPI in host memory, and then, on every
   * rank alike: when every rank can, each calls collective_comm_create
   * with rank 0's id and the host gathers the outcomes again; when none
   * can, that device's collectives go through MPI for the rest of the
   * process; when only some can (or a rank failed to join), every
   * collective on that device fails on every rank with
   * FAILED_PRECONDITION, naming the rank and its reason, instead of
   * leaving the ranks waiting for each other.  Each rank must therefore
   * place the same collectives on devices of the same type, with the same
   * plugins, in the same order (one program run by every rank).  Then the
   * host calls collective_all_reduce and collective_broadcast one at a
   * time, in the same order on every rank (the order collective ops start
   * in, README "Across processes (MPI)"), on the node's stream, from any
   * thread.  It calls collective_comm_destroy at exit (runs' streams are
   * synchronized by then) and after a bootstrap failed on another rank.
   *
   * A rank whose collective_comm_create fails before it reaches the
   * other ranks may leave them waiting in theirs: what a rank can check
   * alone (the library loads, the device is usable) belongs in
   * collective_unique_id's answer.  Work enqueued on a stream is beyond
   * the run's deadline: a peer that never comes holds the stream. ---- */

  /** With `out` NULL (capacity 0): whether this device can make and join
   * communicators, e.g. the library it needs loads (UNAVAILABLE saying why
   * not).  Otherwise the same, and writes a new communicator id of at most
   * `capacity` (WEFT_PLUGIN_MAX_COMM_ID) bytes to `out` and its length to
   * *out_size.  Must not wait for other ranks. */
  weft_status* (*collective_unique_id)(weft_plugin_device* device, void* out,
                                       uint64_t capacity, uint64_t* out_size);
  /** Joins communicator `id` (rank 0's id, `id_size` bytes) as rank `rank`
   * of `size`, on `device`; may wait until every rank has joined. */
  weft_status* (*collective_comm_create)(weft_plugin_device* device,
                                         int32_t rank, int32_t size,
                                         const void* id, uint64_t id_size,
                                         weft_plugin_comm** out);
  /** Enqueues on `stream` the reduction (weft_collective_reduction) over
   * every rank of `count` elements of `dtype` (FLOAT32, FLOAT64, INT32 or
   * INT64) from `src` at byte offset `src_offset` into `dst` at
   * `dst_offset`, on every rank.  `stream` NULL (a device without
   * streams): complete on return. */
  weft_status* (*collective_all_reduce)(weft_plugin_device* device,
                                        weft_plugin_comm* comm,
                                        weft_plugin_stream* stream,
                                        const void* src, uint64_t src_offset,
                                        void* dst, uint64_t dst_offset,
                                        uint64_t count, int32_t dtype,
                                        int32_t reduction);
  /** Enqueues on `stream` the copy of `bytes` bytes from rank `root`'s
   * `src` (read on `root` only) into every rank's `dst`, root's
   * included. */
  weft_status* (*collective_broadcast)(weft_plugin_device* device,
                                       weft_plugin_comm* comm,
                                       weft_plugin_stream* stream,
                                       const void* src, uint64_t src_offset,
                                       void* dst, uint64_t dst_offset,
                                       uint64_t bytes, int32_t root);
  /** Releases a communicator of collective_comm_create.  Must not wait
   * for other ranks (they may be gone). */
  void (*collective_comm_destroy)(weft_plugin_device* device,
                                  weft_plugin_comm* comm);
} weft_plugin_api;

/** What the host passes to the entry point, and what the plugin answers. */
typedef struct weft_plugin_init_args {
  size_t struct_size; /**< sizeof(weft_plugin_init_args) as the host knows */
  /** In: the interface versions the host speaks (WEFT_VERSION_PACK). */
  uint32_t host_min_version;
  uint32_t host_max_version; /**< In: see host_min_version */
  /** In: host services, valid until the plugin is unloaded. */
  const weft_host_api* host;
  /** In: handle for host->register_kernel.  Calls through it are accepted
   * only during the entry call; later ones fail harmlessly. */
  weft_kernel_registrar* registrar;
  /** Out: the version the plugin implements (always written). */
  uint32_t chosen_version;
  /** Out: the plugin's table. */
  const weft_plugin_api* plugin;
} weft_plugin_init_args;

/** The one symbol a plugin exports, under the name WEFT_PLUGIN_ENTRY_NAME. */
typedef weft_status* (*weft_plugin_entry_fn)(weft_plugin_init_args* args);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PLUGIN_H_ */
