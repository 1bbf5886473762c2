/** @file
 * Weft — control flow inside the graph: conditionals and loops.
 *
 * weft_cond() and weft_while_loop() build TensorFlow-style control flow
 * (Switch, Merge, Enter, Exit, NextIteration, LoopCond) from C callbacks
 * that build the branches, the loop condition and the loop body.  The
 * result runs inside one Session run: loops never return to the caller
 * between iterations, and iterations of a loop may overlap
 * (parallel_iterations).
 *
 * Callbacks receive the graph, the caller's `user` pointer and the values
 * to build from, and build ordinary nodes with the usual functions.  While
 * a callback runs, nodes it adds on the calling thread are rewritten so the
 * structure is well formed:
 *   - a value from outside the branch or loop that a node reads is brought
 *     in automatically (through a Switch on the predicate for a branch, so
 *     an untaken branch's nodes never run; through a loop-invariant Enter
 *     for a loop, shared by every iteration without copies);
 *   - a node with no inputs (a constant, a random op) gets a control input
 *     from the branch or loop, so it belongs to it and runs once per taken
 *     branch or per iteration;
 *   - inputs that name a variable by reference (Assign, AssignAdd,
 *     optimizers) are left alone: there is one variable whatever reads it.
 *     An AssignAdd in a loop body runs once per iteration.
 * A callback must not give a node a control input from outside the branch
 * or loop (INVALID_ARGUMENT): make it depend on a value that comes in.
 *
 * Errors: a callback's error is returned by the builder with its code
 * unchanged and the branch or loop named in the message.  The graph is
 * append-only, so nodes already added when a build fails stay in the graph;
 * they are unreachable from the builder's outputs and never run unless
 * fetched.
 *
 * Threads: a builder and its callbacks run on the calling thread; other
 * threads may add nodes to the same graph meanwhile (those are not
 * rewritten).
 */
#ifndef WEFT_CONTROL_H_
#define WEFT_CONTROL_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/graph.h"
#include "weft/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Builds one branch of a conditional: writes `num_outputs` outputs. */
typedef weft_status* (*weft_branch_fn)(weft_graph* graph, void* user,
                                       weft_output* outputs,
                                       int32_t num_outputs);

/** outputs[i] = pred ? then's output i : else's output i.  `pred` is a bool
 * scalar; only the taken branch runs.  The two branches' outputs must agree
 * in dtype; where their shapes differ the result's static shape has -1 (or
 * an unknown rank).  `name` prefixes the nodes made (NULL: "cond"). */
WEFT_API WEFT_MUST_USE weft_status* weft_cond(
    weft_graph* graph, const char* name, weft_output pred,
    weft_branch_fn then_fn, weft_branch_fn else_fn, void* user,
    int32_t num_outputs, weft_output* outputs);

/** Builds branch `branch` of an n-way case: writes `num_outputs` outputs. */
typedef weft_status* (*weft_case_branch_fn)(weft_graph* graph, void* user,
                                            int32_t branch,
                                            weft_output* outputs,
                                            int32_t num_outputs);

/** outputs[i] = branch `index`'s output i, for an int32 scalar `index`
 * selecting one of `num_branches` (>= 1) branches; an index outside
 * [0, num_branches) selects the last one (the default, as TensorFlow's
 * switch_case does).  Only the selected branch runs.  Built as nested
 * weft_cond()s (so the same rules apply); `name` prefixes the nodes made
 * (NULL: "case"). */
WEFT_API WEFT_MUST_USE weft_status* weft_case(
    weft_graph* graph, const char* name, weft_output index,
    int32_t num_branches, weft_case_branch_fn branch_fn, void* user,
    int32_t num_outputs, weft_output* outputs);

/** Builds the loop condition from the current loop variables: writes a bool
 * scalar to *out_pred. */
typedef weft_status* (*weft_loop_cond_fn)(weft_graph* graph, void* user,
                                          const weft_output* vars,
                                          int32_t num_vars,
                                          weft_output* out_pred);
/** Builds one iteration: writes the next value of each variable (num_vars
 * outputs, each of its variable's dtype and fitting its shape invariant). */
typedef weft_status* (*weft_loop_body_fn)(weft_graph* graph, void* user,
                                          const weft_output* vars,
                                          int32_t num_vars,
                                          weft_output* out_next);

/** A static shape: rank -1 for any rank; dims of -1 for any size. */
typedef struct weft_shape {
  int32_t rank;        /**< -1: any rank */
  const int64_t* dims; /**< `rank` sizes, -1 for any; borrowed */
} weft_shape;

/** Options of a while loop.  Set struct_size to sizeof(weft_while_options);
 * zero-filled fields take the defaults below. */
typedef struct weft_while_options {
  size_t struct_size; /**< sizeof(weft_while_options) */
  /** Frame and node name prefix (NULL: "while"); made unique in the graph. */
  const char* name;
  /** Iterations that may run at once (0: 10). */
  int32_t parallel_iterations;
  /** When > 0, the loop stops after this many iterations even if the
   * condition still holds. */
  int64_t maximum_iterations;
  /** NULL, or num_vars entries: the shape each variable keeps across
   * iterations.  Without one a variable must keep its initial static
   * shape. */
  const weft_shape* shape_invariants;
} weft_while_options;

/** while (cond(vars)) vars = body(vars); out_vars[i] = the final vars.
 * `options` may be NULL for the defaults. */
WEFT_API WEFT_MUST_USE weft_status* weft_while_loop(
    weft_graph* graph, weft_loop_cond_fn cond, weft_loop_body_fn body,
    void* user, const weft_output* loop_vars, int32_t num_vars,
    const weft_while_options* options, weft_output* out_vars);

/** TensorArrays: lists of tensors of one dtype, written and read by index
 * inside one Session run — the sequences a loop consumes and produces
 * (TensorFlow's TensorArray).  An array exists once per run, and once per
 * iteration of the loops around the node that made it.  Its `flow` orders
 * its operations: each write returns a new flow (the functions below update
 * `array->flow`), reads and stacks see the writes before the flow they are
 * given.  Inside a loop body, carry the flow as a loop variable and rebuild
 * the array there: {array.name, vars[k]}.
 *
 * Rules: each element is written once (a second write fails the run);
 * reading an element never written fails the run; an index outside the
 * size fails the run unless the array is dynamic_size, which grows; a stack
 * needs every element written, all of one shape.  weft_gradients works
 * through every operation (each array gets a gradient array: an element
 * read twice gets the sum of both gradients; an element no gradient
 * reached gets zeros).  Elements stay referenced, not copied, until the
 * run ends; unstack makes views of its value. */
typedef struct weft_tensor_array {
  const char* name;  /**< the TensorArray node's name, owned by the graph */
  weft_output flow;  /**< a float32 scalar that carries the order */
} weft_tensor_array;

/** A new array of `size` (an int32 scalar) elements of `dtype`.
 * `element_shape` (NULL: any) is checked on every write and gives reads
 * their static shape.  `name` (NULL: "TensorArray") is made unique. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_array_create(
    weft_graph* graph, const char* name, weft_dtype dtype, weft_output size,
    const weft_shape* element_shape, int32_t dynamic_size,
    weft_tensor_array* out);
/** Element `index` (an int32 scalar) := value; updates array->flow. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_array_write(
    weft_graph* graph, weft_tensor_array* array, weft_output index,
    weft_output value);
/** Element `index` (no copy). */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_array_read(
    weft_graph* graph, weft_tensor_array array, weft_output index,
    weft_output* out);
/** Every element stacked along a new first dimension. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_array_stack(
    weft_graph* graph, weft_tensor_array array, weft_output* out);
/** Element i := value[i] for every i along value's first dimension (views,
 * no copies); updates array->flow. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_array_unstack(
    weft_graph* graph, weft_tensor_array* array, weft_output value);
/** The array's size, an int32 scalar. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_array_size(
    weft_graph* graph, weft_tensor_array array, weft_output* out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CONTROL_H_ */
