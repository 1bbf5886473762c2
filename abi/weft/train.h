/** @file
 * Weft — training: gradients, variables, optimizers and checkpoints.
 *
 * Gradients are symbolic (symbol-to-symbol, as in TensorFlow's 2015 design):
 * weft_gradients() adds nodes to the graph that compute the gradients, and
 * they run like any other node, on any device that has their kernels.
 * Each op's gradient is a function in one registry; the gradient ops it adds
 * are ordinary ops (ReluGrad, Conv2DBackpropInput, ...).
 *
 * Optimizers are ops too (ApplyGradientDescent, ApplyMomentum, ApplyAdam):
 * each takes its variables by reference (inputs that name a Variable, like
 * Assign's input 0) and replaces their values when it runs.
 * weft_minimize() builds the gradients and the update ops for every
 * trainable variable a loss depends on.
 *
 * Threads: like graph building, every function here may be called from any
 * thread; calls on one graph are serialized internally.
 */
#ifndef WEFT_TRAIN_H_
#define WEFT_TRAIN_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/graph.h"
#include "weft/session.h"
#include "weft/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Gradients ----------------------------------------------------------- */

/** Adds nodes computing d(sum of ys)/d(xs[i]) for each i and writes them to
 * out_grads[i] (num_xs entries).
 *
 * grad_ys: NULL, or num_ys outputs holding the gradient flowing into each y
 * (same dtype and shape as that y); NULL means ones for each y.  Gradients
 * arriving at one value over several paths are summed.  A StopGradient node
 * passes none.  An x that no y depends on (or only through StopGradient or
 * integer-valued paths) gets {NULL, 0}: "no gradient", which callers treat
 * as zeros (weft_minimize() skips such variables).  Only the gradients the
 * xs need are built: nothing is added for inputs no x depends on.
 *
 * Errors: INVALID_ARGUMENT for outputs of another graph, a non-float y or x,
 * a grad_ys entry of the wrong dtype or shape, a gradient function that set
 * a gradient of the wrong dtype or shape; UNIMPLEMENTED naming the op
 * when a path from an x to a y crosses an op without a gradient function.
 * On error the graph may have gained nodes nothing uses, which never run. */
WEFT_API WEFT_MUST_USE weft_status* weft_gradients(
    weft_graph* graph, const weft_output* ys, int32_t num_ys,
    const weft_output* xs, int32_t num_xs, const weft_output* grad_ys,
    weft_output* out_grads);

/** Whether an op has a gradient function (1), is declared not differentiable
 * (0: integer, comparison, random and state ops), or has neither (-1: a
 * gap, which the test suite refuses for every op of the library). */
WEFT_API int32_t weft_op_gradient_status(const char* op_type);

/** A gradient function for an op, for ops whose gradient the library lacks
 * or that a program wants to differentiate its own way.  While it runs it
 * reads the node and the gradients of its outputs, and sets the gradients
 * of its inputs (leaving an input unset means no gradient), building nodes
 * with the ordinary graph API on weft_gradient_graph(). */
typedef struct weft_gradient_context weft_gradient_context;
/** A gradient function: called with its registration's `arg` while
 * gradients are built; returns NULL or an error that ends the build. */
typedef weft_status* (*weft_gradient_fn)(void* arg, weft_gradient_context* ctx);

/** The graph to build the gradient's nodes in; borrowed. */
WEFT_API weft_graph* weft_gradient_graph(weft_gradient_context* ctx);
/** The node being differentiated; borrowed. */
WEFT_API weft_node* weft_gradient_node(weft_gradient_context* ctx);
/** The gradient arriving at output `index` of the node; {NULL, 0} when none
 * arrives there (treat as zeros). */
WEFT_API weft_output weft_gradient_output_grad(weft_gradient_context* ctx,
                                               int32_t index);
/** Whether input `index`'s gradient is wanted at all: a function may skip
 * building the others. */
WEFT_API int32_t weft_gradient_input_wanted(weft_gradient_context* ctx,
                                            int32_t index);
/** Sets the gradient of input `index` to `grad`, an output of the graph
 * with the input's dtype and a static shape compatible with the input's
 * (unknown ranks and dims match any).  Errors: OUT_OF_RANGE for an index
 * the node does not have; INVALID_ARGUMENT naming the op, the node, the
 * input index and both dtypes and shapes otherwise.  A refused gradient
 * fails weft_gradients() even when the function returns OK. */
WEFT_API WEFT_MUST_USE weft_status* weft_gradient_set_input_grad(
    weft_gradient_context* ctx, int32_t index, weft_output grad);

/** Registers `fn` as the gradient of `op_type`, replacing any earlier one
 * (the library's included).  Process-wide.  INVALID_ARGUMENT for an unknown
 * op. */
WEFT_API WEFT_MUST_USE weft_status* weft_gradient_register(
    const char* op_type, weft_gradient_fn fn, void* arg);

/* ---- Variables ------------------------------------------------------------ */

/** Whether weft_minimize() updates a variable.  Variables made by
 * weft_graph_variable() are trainable; optimizer slots are not. */
WEFT_API WEFT_MUST_USE weft_status* weft_variable_set_trainable(
    weft_graph* graph, weft_node* variable, int32_t trainable);

/** The graph's trainable Variable nodes, in creation order: writes up to
 * `capacity` to `out` and the total to *out_count. */
WEFT_API WEFT_MUST_USE weft_status* weft_graph_trainable_variables(
    weft_graph* graph, weft_node** out, int32_t capacity,
    int32_t* out_count);

/** A NoOp (named `name`, or "init_all") that runs every initializer of every
 * variable the graph has now (weft_graph_variable()'s and the optimizers'
 * slots): make it after weft_minimize(). */
WEFT_API WEFT_MUST_USE weft_status* weft_graph_initialize_all(
    weft_graph* graph, const char* name, weft_node** out_node);

/* ---- Optimizers ------------------------------------------------------------ */

/** The optimizers weft_minimize() builds. */
typedef enum weft_optimizer WEFT_ENUM_BASE {
  WEFT_OPTIMIZER_GRADIENT_DESCENT = 0, /**< var -= lr * g */
  WEFT_OPTIMIZER_MOMENTUM = 1,         /**< a = m * a + g; var -= lr * a */
  WEFT_OPTIMIZER_ADAM = 2              /**< Kingma & Ba, with bias correction */
} weft_optimizer;

/** Options of weft_minimize(): the optimizer and its hyperparameters.
 * Initialize with weft_optimizer_options_init(), then change fields. */
typedef struct weft_optimizer_options {
  size_t struct_size;    /**< sizeof(weft_optimizer_options) */
  int32_t kind;          /**< weft_optimizer */
  double learning_rate;  /**< > 0 */
  double momentum;       /**< MOMENTUM: in [0, 1); default 0.9 */
  int32_t use_nesterov;  /**< MOMENTUM: Nesterov's variant */
  double beta1;          /**< ADAM: default 0.9 */
  double beta2;          /**< ADAM: default 0.999 */
  double epsilon;        /**< ADAM: default 1e-8 */
  /** 1.10: 1 = synchronous data parallelism over the program's MPI job
   * (weft_cluster_world): each variable's gradient is averaged over the
   * ranks (an AllReduce "mean") before its update, so every rank applies
   * the same update.  Each rank feeds its own shard of the batch; start
   * from the same values on every rank (weft_broadcast_variables).  0
   * (default): this process's gradient only. */
  int32_t data_parallel;
  /** 1.11, with data_parallel: 0 (default) averages each gradient with an
   * AllReduce of its own, started as soon as that gradient exists; > 0
   * packs the gradients into buckets of at most this many bytes (one
   * larger gradient makes a bucket alone), the last variables' first (the
   * backward pass makes them first), and averages each bucket with one
   * AllReduce: fewer, larger reductions (the latency term of each is paid
   * once per bucket) at the cost of waiting for a bucket's last gradient. */
  int64_t bucket_bytes;
} weft_optimizer_options;

/** Fills the first `size` bytes of `options` (at most
 * sizeof(weft_optimizer_options)) with the defaults for `kind` (learning
 * rate 0.01) and sets struct_size to what it filled (user API 1.10: the
 * struct grew). */
WEFT_API void weft_optimizer_options_init_sized(
    weft_optimizer_options* options, size_t size, int32_t kind);

/** The same for the caller's struct: compiled against these headers it is
 * the macro below.  The function itself, which programs built against
 * earlier headers call, fills only the fields their struct has (through
 * epsilon). */
WEFT_API void weft_optimizer_options_init(weft_optimizer_options* options,
                                          int32_t kind);
/** weft_optimizer_options_init_sized() with the size of the caller's
 * struct. */
#define weft_optimizer_options_init(options, kind) \
  weft_optimizer_options_init_sized((options), sizeof *(options), (kind))

/** An op (a NoOp named `name`, or "broadcast_variables") that sets every
 * variable of the graph (trainable or not: optimizer slots, step counters)
 * to rank `root`'s value, through the collective op Broadcast: run it once
 * after the variables are initialized (or restored on the root) so that
 * every rank of a data-parallel job starts from the same values.  Alone
 * (no MPI launcher) it changes nothing.  Errors: INVALID_ARGUMENT for a
 * NULL graph, a negative root, or a graph without variables.  User API
 * 1.10. */
WEFT_API WEFT_MUST_USE weft_status* weft_broadcast_variables(
    weft_graph* graph, int32_t root, const char* name, weft_node** out_op);

/** Builds the gradients of `loss` (a float scalar, or a tensor whose sum is
 * minimized) with respect to every trainable variable it depends on, one
 * update op per variable, and a NoOp `name` (or "train") depending on them
 * all, written to *out_train_op: run it as a target once per step.  Slot
 * variables (momentum accumulators, Adam's moments and step count) are
 * created as non-trainable variables whose initializers
 * weft_graph_initialize_all() includes.  Errors as weft_gradients(), and
 * INVALID_ARGUMENT for bad options or a loss no trainable variable
 * affects. */
WEFT_API WEFT_MUST_USE weft_status* weft_minimize(
    weft_graph* graph, weft_output loss,
    const weft_optimizer_options* options, const char* name,
    weft_node** out_train_op);

/* ---- Checkpoints ------------------------------------------------------------ */

/** Saves the values the session holds for `variables` (NULL with count 0:
 * every initialized variable of the graph) to `path`.  The file is written
 * to a temporary beside it, flushed to disk and renamed over `path`, so a
 * crash during a save leaves the previous checkpoint intact.  The format is
 * documented in runtime/checkpoint/FORMAT.md: versioned, self-describing
 * (names, dtypes, shapes), every record checksummed.  Errors, all before
 * anything is written: INVALID_ARGUMENT for a variable the file cannot
 * hold (a name over 65535 bytes); FAILED_PRECONDITION for an uninitialized
 * variable, or a `path` that exists and is not a regular file (a
 * directory, FIFO or device); then the OS error for I/O. */
WEFT_API WEFT_MUST_USE weft_status* weft_checkpoint_save(
    weft_session* session, const char* path, weft_node* const* variables,
    int32_t num_variables);

/** Restores `variables` (NULL with count 0: every variable of the graph
 * that the file holds) by name from `path` into the session, initializing
 * them.  Nothing is changed unless every variable restores: a missing,
 * truncated or corrupted file, an unknown version, a variable absent from
 * the file, or a dtype or shape mismatch give an error naming the file and
 * the variable; a `path` that is not a regular file (a directory, FIFO or
 * device) is FAILED_PRECONDITION, at once. */
WEFT_API WEFT_MUST_USE weft_status* weft_checkpoint_restore(
    weft_session* session, const char* path, weft_node* const* variables,
    int32_t num_variables);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TRAIN_H_ */
