/** @file
 * Weft — building graphs.
 *
 * A graph holds nodes (operations) whose inputs are outputs of other nodes;
 * control inputs order nodes without passing data.  Nodes are only ever
 * added, so a session running a graph keeps working while the graph grows
 * (TensorFlow's `extend`).
 *
 * Building a node: weft_op_begin() → add inputs and attributes →
 * weft_op_finish().  Setters never fail on their own: every problem (unknown
 * op, wrong arity, dtype or shape mismatch, missing or mistyped attribute) is
 * reported by weft_op_finish(), with a message naming the node, the op and the
 * offending dtype or shape.  A graph that cannot run is refused while it is
 * built, never when it runs.
 *
 * Threads: every function here may be called from any thread; calls on one
 * graph are serialized internally.  A weft_op_builder belongs to one thread
 * at a time.
 */
#ifndef WEFT_GRAPH_H_
#define WEFT_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/dtype.h"
#include "weft/status.h"
#include "weft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A graph of operations: built, then run by sessions.  Opaque. */
typedef struct weft_graph weft_graph;
/** A node of a graph.  Borrowed: it lives as long as its graph. */
typedef struct weft_node weft_node;
/** A node under construction: from weft_op_begin() to weft_op_finish(). */
typedef struct weft_op_builder weft_op_builder;

/** One output of a node.  A plain value pair, deliberately frozen: it is
 * passed in arrays (feeds, fetches, input lists) where a struct_size prefix
 * would cost every caller a field for no gain, so it is never extended; a
 * future need gets a new type. */
typedef struct weft_output {
  weft_node* node; /**< the node, borrowed from its graph */
  int32_t index;   /**< which of its outputs, from 0 */
} weft_output;

/** Creates an empty graph, owned by the caller (weft_graph_destroy).
 * Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_graph_create(weft_graph** out_graph);

/** Releases the caller's handle.  Sessions created on the graph keep what
 * they need and stay usable; nodes must no longer be used by the caller.
 * NULL is a no-op. */
WEFT_API void weft_graph_destroy(weft_graph* graph);

/* ---- Generic node building ---------------------------------------------- */

/** Starts a node of operation `op_type` ("MatMul").  `name` may be NULL or ""
 * for a fresh unique name derived from the op type.  Returns a builder owned
 * by the caller until it is handed to weft_op_finish() or weft_op_abandon().
 * Problems, even an unknown op, are reported by weft_op_finish().  Returns
 * NULL only when memory runs out; every setter accepts NULL and does
 * nothing, and weft_op_finish(NULL) returns RESOURCE_EXHAUSTED, so callers
 * need no check here. */
WEFT_API weft_op_builder* weft_op_begin(weft_graph* graph, const char* op_type,
                                        const char* name);

/** Appends one data input. */
WEFT_API void weft_op_add_input(weft_op_builder* builder, weft_output input);
/** Appends a list input (for ops whose schema takes a list, such as Concat).
 * `inputs` is copied. */
WEFT_API void weft_op_add_input_list(weft_op_builder* builder,
                                     const weft_output* inputs, int32_t count);
/** Makes the node wait for `node` without taking data from it. */
WEFT_API void weft_op_add_control_input(weft_op_builder* builder,
                                        weft_node* node);
/** Constrains placement: "/device:CPU:0", "/device:OPENCL:*", "CPU"; in a
 * cluster session also a task ("/job:ps/task:0",
 * "/job:worker/task:1/device:CPU:0"; see weft_session_options.cluster). */
WEFT_API void weft_op_set_device(weft_op_builder* builder, const char* device);

/** The constraint of every node made from now on (by any call, the
 * gradients' and optimizers' included) that sets none of its own, as
 * TensorFlow's `with tf.device(...)`: e.g. weft_graph_set_device(g,
 * "/job:ps/task:0") before weft_graph_variable() puts that variable on the
 * ps task.  NULL or "" ends it.  User API 1.11. */
WEFT_API void weft_graph_set_device(weft_graph* graph, const char* device);

/** Attributes.  Names and string values are copied; a later set of the same
 * name replaces the earlier one.  Booleans are 0 or non-zero. */
WEFT_API void weft_op_set_attr_int(weft_op_builder* builder, const char* name,
                                   int64_t value);
/** Sets float attribute `name` (stored as a double). */
WEFT_API void weft_op_set_attr_float(weft_op_builder* builder,
                                     const char* name, double value);
/** Sets bool attribute `name`: 0 is false, anything else true. */
WEFT_API void weft_op_set_attr_bool(weft_op_builder* builder, const char* name,
                                    int32_t value);
/** Sets dtype attribute `name`. */
WEFT_API void weft_op_set_attr_dtype(weft_op_builder* builder,
                                     const char* name, weft_dtype value);
/** Sets string attribute `name` to a copy of `value`. */
WEFT_API void weft_op_set_attr_string(weft_op_builder* builder,
                                      const char* name, const char* value);
/** Sets list(int) attribute `name` to a copy of `values[0..count)`. */
WEFT_API void weft_op_set_attr_int_list(weft_op_builder* builder,
                                        const char* name, const int64_t* values,
                                        int32_t count);
/** Sets list(float) attribute `name` to a copy of `values[0..count)`. */
WEFT_API void weft_op_set_attr_float_list(weft_op_builder* builder,
                                          const char* name,
                                          const double* values, int32_t count);
/** A shape: `rank` -1 for unknown rank; a dimension -1 for unknown size. */
WEFT_API void weft_op_set_attr_shape(weft_op_builder* builder,
                                     const char* name, const int64_t* dims,
                                     int32_t rank);
/** A tensor value.  The node takes its own reference; the caller keeps
 * ownership of `value`, whose contents must not change afterwards. */
WEFT_API void weft_op_set_attr_tensor(weft_op_builder* builder,
                                      const char* name,
                                      const weft_tensor* value);

/** Validates and adds the node; always consumes `builder`.  On success
 * *out_node (may be NULL if not wanted) is the new node, borrowed from the
 * graph.  Errors: NOT_FOUND for an unknown op; INVALID_ARGUMENT for wrong
 * arity, dtype or shape, or missing or mistyped attributes; ALREADY_EXISTS
 * for a duplicate name.  On error the graph is unchanged. */
WEFT_API WEFT_MUST_USE weft_status* weft_op_finish(weft_op_builder* builder,
                                                   weft_node** out_node);

/** Discards a builder without adding anything.  NULL is a no-op. */
WEFT_API void weft_op_abandon(weft_op_builder* builder);

/* ---- Shortcuts for common nodes ----------------------------------------- */

/** A Const node holding `value` (a new reference is taken; the caller keeps
 * its handle).  *out is its output 0. */
WEFT_API WEFT_MUST_USE weft_status* weft_graph_constant(
    weft_graph* graph, const char* name, const weft_tensor* value,
    weft_output* out);

/** A Placeholder: an input fed at run time.  `rank` -1 means unknown rank;
 * a dimension -1 means unknown size (for instance the batch). */
WEFT_API WEFT_MUST_USE weft_status* weft_graph_placeholder(
    weft_graph* graph, const char* name, weft_dtype dtype,
    const int64_t* dims, int32_t rank, weft_output* out);

/** A node of an op that takes only data inputs and no attributes (Add, Relu,
 * MatMul with its default attributes, ...); *out is its output 0. */
WEFT_API WEFT_MUST_USE weft_status* weft_graph_apply(
    weft_graph* graph, const char* op_type, const char* name,
    const weft_output* inputs, int32_t num_inputs, weft_output* out);

/** A Variable: persistent, mutable state of the dtype and fully known shape
 * of `initial_value`, living in each session that runs it.  Adds the
 * Variable node (`name`), and an Assign node ("<name>/initializer") that
 * writes `initial_value` into it.  *out_value reads the variable;
 * *out_initializer (may be NULL) is the Assign node to run as a target
 * before the variable is read. */
WEFT_API WEFT_MUST_USE weft_status* weft_graph_variable(
    weft_graph* graph, const char* name, weft_output initial_value,
    weft_output* out_value, weft_node** out_initializer);

/* ---- Inspecting a graph -------------------------------------------------- */

/** The node called `name`, or NULL. */
WEFT_API weft_node* weft_graph_node_by_name(weft_graph* graph,
                                            const char* name);
/** How many nodes the graph has. */
WEFT_API int32_t weft_graph_node_count(weft_graph* graph);
/** Node number `index` in creation order, or NULL when out of range. */
WEFT_API weft_node* weft_graph_node_at(weft_graph* graph, int32_t index);

/** Strings returned below are borrowed and live as long as the graph. */
WEFT_API const char* weft_node_name(const weft_node* node);
/** The node's op, "MatMul"; borrowed, lives as long as the graph. */
WEFT_API const char* weft_node_op_type(const weft_node* node);
/** The device constraint given at build time, "" when none. */
WEFT_API const char* weft_node_device(const weft_node* node);
/** How many data inputs the node has (a list input counts each entry). */
WEFT_API int32_t weft_node_num_inputs(const weft_node* node);
/** Input `index`; {NULL, -1} when out of range. */
WEFT_API weft_output weft_node_input(const weft_node* node, int32_t index);
/** How many control inputs (nodes that must run first) the node has. */
WEFT_API int32_t weft_node_num_control_inputs(const weft_node* node);
/** How many outputs the node has. */
WEFT_API int32_t weft_node_num_outputs(const weft_node* node);
/** The dtype of an output; WEFT_DTYPE_INVALID when it does not exist. */
WEFT_API weft_dtype weft_output_dtype(weft_output output);
/** The inferred shape of an output.  Writes up to `capacity` dims (-1 where
 * unknown) and the rank (-1 when unknown) to *out_rank (which may be NULL).
 * `dims` may be NULL when capacity is 0, to ask for the rank alone.  Errors:
 * INVALID_ARGUMENT for a bad output, a negative capacity or NULL dims with a
 * positive capacity; OUT_OF_RANGE when capacity is below the rank
 * (*out_rank is still set). */
WEFT_API WEFT_MUST_USE weft_status* weft_output_shape(weft_output output,
                                                      int64_t* dims,
                                                      int32_t capacity,
                                                      int32_t* out_rank);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_GRAPH_H_ */
