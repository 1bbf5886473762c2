/** @file
 * Weft — models in files: a graph with its variables and named signatures,
 * saved by one program and loaded by another (another process, another
 * language), and models from ONNX and TensorFlow run as Weft graphs.
 *
 * A weft_model is a graph, a session holding its variables, and signatures:
 * named sets of inputs and outputs ("serving_default": x -> probabilities)
 * that say how to call it without knowing its node names.
 *
 * Files (user API 1.6):
 *  - a model bundle: a directory holding `graph.weft` (the graph and its
 *    signatures, runtime/model/FORMAT.md) and `variables.ckpt` (the
 *    variables' values, runtime/checkpoint/FORMAT.md);
 *  - a graph file alone (`.weft`): variables start uninitialized;
 *  - ONNX models (`.onnx`): initializers become constants;
 *  - TensorFlow frozen GraphDefs (`.pb`, as TensorFlow 1.x's
 *    convert_variables_to_constants wrote them).
 *
 * Threads: a model may be used from several threads at once as its session
 * may (weft_model_run is weft_session_run); creating, saving and destroying
 * one are not concurrent with other calls on it.
 */
#ifndef WEFT_MODEL_H_
#define WEFT_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/graph.h"
#include "weft/session.h"
#include "weft/status.h"
#include "weft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A graph with its variables and named signatures, saved or loaded.
 * Opaque. */
typedef struct weft_model weft_model;

/** The signature a model's callers get when they name none. */
#define WEFT_DEFAULT_SIGNATURE "serving_default"

/** A signature: `num_inputs` keys with the outputs they feed (Placeholders,
 * usually) and `num_outputs` keys with the outputs they fetch.  Keys are
 * unique within a signature's inputs and within its outputs: letters,
 * digits and `_ . / -`, 1 to 256 bytes.  Everything is borrowed for the
 * call it is passed to.  Set struct_size to sizeof(weft_signature_def);
 * fields may be appended in later minor versions. */
typedef struct weft_signature_def {
  size_t struct_size;             /**< sizeof(weft_signature_def) */
  const char* name;               /**< "serving_default", say */
  int32_t num_inputs;             /**< entries of input_keys and inputs */
  const char* const* input_keys;  /**< the callers' names of the inputs */
  const weft_output* inputs;      /**< what each input key feeds */
  int32_t num_outputs;            /**< entries of output_keys and outputs */
  const char* const* output_keys; /**< the callers' names of the outputs */
  const weft_output* outputs;     /**< what each output key fetches */
} weft_signature_def;

/** Makes a model of a graph being built in this process: `graph` and
 * `session` (a session on `graph`, or NULL when the model has no variables
 * to save) are borrowed and must outlive the model; `signatures` are
 * checked (each output belongs to `graph`, keys are valid and unique,
 * signature names unique) and copied.  Errors: INVALID_ARGUMENT naming the
 * signature and key. */
WEFT_API WEFT_MUST_USE weft_status* weft_model_create(
    weft_graph* graph, weft_session* session,
    const weft_signature_def* signatures, int32_t num_signatures,
    weft_model** out_model);

/** Writes the model as a bundle in directory `dir`: the whole graph
 * (training nodes included, so training can go on elsewhere), its
 * signatures, which variables are trainable, and the values the session
 * holds for every initialized variable.  The bundle is written beside
 * `dir` and renamed into place: a crash leaves either the previous bundle
 * or the new one.  An existing `dir` must be a bundle (it is replaced) or
 * an empty directory.  Custom ops are recorded by name with the plugin or
 * program that defined them.  Errors: FAILED_PRECONDITION when `dir`
 * exists and is neither, or the model has a variable the session has not
 * initialized; then the OS error. */
WEFT_API WEFT_MUST_USE weft_status* weft_model_save(weft_model* model,
                                                    const char* dir);

/** Options for weft_model_load().  Set struct_size to
 * sizeof(weft_model_load_options) (weft_model_load_options_init does). */
typedef struct weft_model_load_options {
  size_t struct_size; /**< sizeof(weft_model_load_options) */
  /** "weft" (a bundle or a graph file), "onnx" or "graphdef"; NULL or ""
   * means by the path: a directory is a bundle, `.onnx` ONNX, `.pb` a
   * GraphDef, anything else a Weft graph file. */
  const char* format;
  /** Options of the session the model runs in; NULL for the defaults. */
  const weft_session_options* session_options;
  /** For a GraphDef, which has no signatures: the node names (or
   * "node:index") its serving_default signature fetches.  NULL with 0:
   * every node whose outputs nothing reads.  Its inputs are always the
   * graph's Placeholders. */
  const char* const* graphdef_outputs;
  int32_t num_graphdef_outputs; /**< entries of graphdef_outputs */
} weft_model_load_options;

/** Fills `options` with the defaults and sets its struct_size. */
WEFT_API void weft_model_load_options_init(weft_model_load_options* options);

/** Loads the model at `path` into a new graph and session (options may be
 * NULL).  A bundle's variables are restored; a graph file's stay
 * uninitialized.  Errors, with the file named: NOT_FOUND for a missing
 * path; FAILED_PRECONDITION for a path that is not a regular file or a
 * bundle directory; UNIMPLEMENTED for a file from a newer Weft (naming its
 * version) or an ONNX or TensorFlow op, attribute or data type Weft cannot
 * run (naming the node and why); DATA_LOSS for a truncated or corrupt
 * file; NOT_FOUND naming the plugin for a custom op that no loaded plugin
 * or program defines; INVALID_ARGUMENT for a graph its ops refuse. */
WEFT_API WEFT_MUST_USE weft_status* weft_model_load(
    const char* path, const weft_model_load_options* options,
    weft_model** out_model);

/** Releases the model and, for a loaded one, its graph and session.  NULL
 * is a no-op. */
WEFT_API void weft_model_destroy(weft_model* model);

/** The model's graph, borrowed from the model. */
WEFT_API weft_graph* weft_model_graph(weft_model* model);
/** The model's session, borrowed from the model. */
WEFT_API weft_session* weft_model_session(weft_model* model);

/** Signatures, in the order they were given or saved. */
WEFT_API int32_t weft_model_num_signatures(const weft_model* model);
/** Name of signature `index`; NULL when out of range.  Borrowed. */
WEFT_API const char* weft_model_signature_name(const weft_model* model,
                                               int32_t index);
/** The inputs (is_output 0) or outputs (1) of signature `signature` (NULL:
 * WEFT_DEFAULT_SIGNATURE, else the only one); -1 when there is no such
 * signature. */
WEFT_API int32_t weft_model_signature_size(const weft_model* model,
                                           const char* signature,
                                           int32_t is_output);
/** Entry `index` of those: its key (borrowed) and the graph output. */
WEFT_API WEFT_MUST_USE weft_status* weft_model_signature_entry(
    const weft_model* model, const char* signature, int32_t is_output,
    int32_t index, const char** out_key, weft_output* out_output);

/** Runs signature `signature` (NULL as above): feeds inputs[i] to the
 * input keyed input_keys[i] and fetches the outputs keyed output_keys[i]
 * into outputs[i], new tensors owned by the caller.  `output_keys` NULL
 * fetches every output in signature order (num_outputs must then be the
 * signature's output count).  Errors: NOT_FOUND naming an unknown
 * signature or key; INVALID_ARGUMENT for an input missing or given twice,
 * or of the wrong dtype or shape; then what weft_session_run returns. */
WEFT_API WEFT_MUST_USE weft_status* weft_model_run(
    weft_model* model, const char* signature, const char* const* input_keys,
    const weft_tensor* const* inputs, int32_t num_inputs,
    const char* const* output_keys, weft_tensor** outputs,
    int32_t num_outputs);

/** Writes signature `signature` (NULL as above) as an ONNX model at `path`:
 * the graph pruned to what the signature's outputs need, the variables'
 * current values as initializers, opset 13.  Errors: UNIMPLEMENTED naming
 * a node whose op has no ONNX form (control flow, stateful ops). */
WEFT_API WEFT_MUST_USE weft_status* weft_model_export_onnx(
    weft_model* model, const char* signature, const char* path);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_MODEL_H_ */
