/** @file
 * Weft — introspection of the op library and of the kernels plugins offer.
 *
 * Ops are defined by the runtime (schema, shape function), by plugins or by
 * the program (weft_op_register); kernels come from plugins or the program.
 * These calls list both, for tools such as `weft ops` and for bindings that
 * generate typed wrappers, and define new ones.
 *
 * Strings and arrays returned here are borrowed and live until the process
 * exits.  Threads: every function is thread-safe.
 */
#ifndef WEFT_OPS_H_
#define WEFT_OPS_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/dtype.h"
#include "weft/status.h"
#include "weft/tensor.h"
#include "weft/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One op.  The caller sets struct_size; the library fills only the fields
 * that size covers. */
typedef struct weft_op_description {
  size_t struct_size;     /**< sizeof(weft_op_description) as known */
  const char* name;       /**< "MatMul" */
  const char* summary;    /**< one sentence */
  const char* inputs;     /**< "a, b"; a trailing "..." marks a list input */
  const char* outputs;    /**< "output", or how many when an attribute decides */
  /** "transpose_a: bool = false, transpose_b: bool = false"; required
   * attributes have no default.  The type attribute the runtime infers
   * from the inputs ("T") is not listed. */
  const char* attributes;
  int32_t num_inputs;     /**< declared inputs (the last repeats if variadic) */
  int32_t variadic;       /**< 1 when the last input is a list */
  int32_t stateful;       /**< 1 for ops with side effects or randomness */
  /** 1 for ops the runtime runs itself on every device (Const, Variable,
   * Assign, ...): they need no kernel. */
  int32_t runs_in_runtime;
  /* ---- Appended in 1.5 ---- */
  /** Where the op comes from: "runtime", "program" (weft_op_register), or
   * "plugin NAME" for one a plugin defined. */
  const char* origin;
} weft_op_description;

/** A constraint on one type attribute of a node: a kernel runs only nodes
 * whose attribute `attr` holds one of the `num_dtypes` values at `dtypes`
 * (weft_dtype).  Plugins give them when they register a kernel
 * (weft/plugin.h, interface 1.2).  It is laid out in arrays, so unlike the
 * structs around it it has no struct_size and never grows. */
typedef struct weft_kernel_type_constraint {
  const char* attr;          /**< "DstT" */
  const int32_t* dtypes;     /**< the weft_dtype values allowed */
  int32_t num_dtypes;        /**< entries at `dtypes` */
} weft_kernel_type_constraint;

/** A kernel registered by a plugin.  Same rules as weft_op_description. */
typedef struct weft_kernel_description {
  size_t struct_size;       /**< sizeof(weft_kernel_description) as known */
  const char* op;           /**< "MatMul" */
  const char* device_type;  /**< "CPU" */
  const char* plugin;       /**< "weft-cpu" */
  const char* dtype_attr;   /**< "T", or "" when the kernel takes any dtype */
  const int32_t* dtypes;    /**< weft_dtype values accepted for dtype_attr */
  int32_t num_dtypes;       /**< entries at `dtypes` */
  /** Among kernels for one op and device type the highest priority wins;
   * ties go to the plugin loaded first. */
  int32_t priority;
  /* ---- Appended in 1.2 ---- */
  /** Constraints on further type attributes, all of which hold as well as
   * dtype_attr's (Cast: SrcT above, DstT here); NULL with 0 for none. */
  const weft_kernel_type_constraint* type_constraints;
  int32_t num_type_constraints; /**< entries at `type_constraints` */
} weft_kernel_description;

/** Number of ops, and op `index` in registration order.  INVALID_ARGUMENT
 * when out of range. */
WEFT_API int32_t weft_op_count(void);
/** Describes op `index` (0 to weft_op_count() - 1) into `out`, whose
 * struct_size the caller sets.  Strings live until the process exits. */
WEFT_API WEFT_MUST_USE weft_status* weft_op_describe(
    int32_t index, weft_op_description* out);

/** Kernels for op `op` across loaded plugins (loads the search path first),
 * best first.  0 for an unknown op.  INVALID_ARGUMENT when out of range. */
WEFT_API int32_t weft_kernel_count(const char* op);
/** Describes kernel `index` (0 to weft_kernel_count(op) - 1) of `op` into
 * `out`, whose struct_size the caller sets. */
WEFT_API WEFT_MUST_USE weft_status* weft_kernel_describe(
    const char* op, int32_t index, weft_kernel_description* out);

/* ---- Defining ops (user API 1.5; plugin interface 1.4) ------------------
 *
 * A program or a plugin adds an op to the library: its schema (inputs,
 * outputs, attributes, dtype constraints), a shape function and a gradient.
 * Kernels for it are registered like any other (weft_kernel_register below
 * for a program; host->register_kernel for a plugin).  Ops added this way
 * are named NAMESPACE>NAME ("Acme>Gelu"), letters, digits and '_' on both
 * sides, so they can never shadow an op of the runtime (whose names have no
 * '>') nor one added later to it. */

/** Attribute kinds, as weft_shape_attr() reports them. */
typedef enum weft_attr_type WEFT_ENUM_BASE {
  WEFT_ATTR_INT = 0,
  WEFT_ATTR_FLOAT = 1,
  WEFT_ATTR_BOOL = 2,
  WEFT_ATTR_DTYPE = 3,
  WEFT_ATTR_STRING = 4,
  WEFT_ATTR_INT_LIST = 5,
  WEFT_ATTR_FLOAT_LIST = 6,
  WEFT_ATTR_SHAPE = 7,
  WEFT_ATTR_TENSOR = 8
} weft_attr_type;

/** An attribute's value, borrowed for the call that filled it.  The caller
 * sets struct_size; the library fills the fields that size covers. */
typedef struct weft_attr_value {
  size_t struct_size;     /**< sizeof(weft_attr_value) as known */
  int32_t type;           /**< weft_attr_type */
  int32_t count;          /**< entries at `ints` or `floats` */
  int64_t i;              /**< int, bool (0/1), dtype; a shape's rank (-1
                           * unknown) */
  double f;               /**< float */
  const char* s;          /**< string */
  const int64_t* ints;    /**< list(int); a shape's dims */
  const double* floats;   /**< list(float) */
} weft_attr_value;

/** What a shape function sees: the node's input dtypes and static shapes
 * (rank -1 when unknown, a dim -1 when unknown) and its attributes, and
 * where it writes its outputs' static shapes.  Valid only during the call. */
typedef struct weft_shape_context weft_shape_context;
/** A shape function: called with the op's `shape_arg` when a node is
 * built; an error status refuses the node. */
typedef weft_status* (*weft_shape_fn)(void* arg, weft_shape_context* ctx);

/** How many inputs the node has. */
WEFT_API int32_t weft_shape_num_inputs(const weft_shape_context* ctx);
/** WEFT_DTYPE_INVALID, rank -1 and dim -1 for an index out of range. */
WEFT_API weft_dtype weft_shape_input_dtype(const weft_shape_context* ctx,
                                           int32_t index);
/** The static rank of input `index`, -1 when unknown. */
WEFT_API int32_t weft_shape_input_rank(const weft_shape_context* ctx,
                                       int32_t index);
/** The static size of dimension `axis` of input `index`, -1 when
 * unknown. */
WEFT_API int64_t weft_shape_input_dim(const weft_shape_context* ctx,
                                      int32_t index, int32_t axis);
/** The node's attribute `name` (defaults filled): NOT_FOUND when absent. */
WEFT_API WEFT_MUST_USE weft_status* weft_shape_attr(
    const weft_shape_context* ctx, const char* name, weft_attr_value* out);
/** Sets output `index`'s static shape (rank -1: unknown; dims -1: unknown
 * there).  Outputs not set have an unknown shape.  OUT_OF_RANGE for an
 * index the op does not have, INVALID_ARGUMENT for a rank above
 * WEFT_MAX_RANK or a dim below -1. */
WEFT_API WEFT_MUST_USE weft_status* weft_shape_set_output(
    weft_shape_context* ctx, int32_t index, const int64_t* dims, int32_t rank);
/** An INVALID_ARGUMENT status naming the node and op, for a shape function
 * to return when its inputs do not fit: "node 'g' (Acme>Gelu): MESSAGE". */
WEFT_API weft_status* weft_shape_error(const weft_shape_context* ctx,
                                       const char* message);

/** An op's schema.  Every string and array is copied during registration.
 *
 * inputs / outputs: "name: TYPE", TYPE a dtype name ("float32") or the
 * name of a dtype attribute declared in `attrs` ("T").  A dtype attribute
 * that types an input takes the input's dtype (all inputs it types must
 * agree); one typing only outputs must be set on the node or defaulted.
 *
 * attrs: "name: KIND" or "name: KIND = DEFAULT", KIND one of int, float,
 * bool, string, list(int), list(float), shape, dtype, or a set of dtypes
 * "{float32, float64}" (a dtype attribute limited to those).  Defaults are
 * written as in C: 3, 0.5, true, "text", [1, 2], [2, -1] for a shape,
 * float32.  An attribute without a default is required (a dtype attribute
 * typing an input is inferred instead).
 *
 * Names are letters, digits and '_', starting with a letter; at most 32
 * inputs, 32 outputs, 32 attributes. */
typedef struct weft_op_def {
  size_t struct_size;            /**< sizeof(weft_op_def) */
  const char* name;              /**< "Acme>Gelu" */
  const char* summary;           /**< one sentence, for weft ops; may be NULL */
  const char* const* inputs;     /**< "x: T", one per input */
  int32_t num_inputs;            /**< entries at `inputs` */
  const char* const* outputs;    /**< "y: T", one per output */
  int32_t num_outputs;           /**< at least 1 */
  const char* const* attrs;      /**< "T: {float32, float64}", one each */
  int32_t num_attrs;             /**< entries at `attrs` */
  int32_t stateful;              /**< 1: side effects or randomness: never
                                  * merged or folded, always run */
  /** Static output shapes (NULL: every output's shape is unknown until it
   * runs).  Called when a node is built; an error refuses the node. */
  weft_shape_fn shape_fn;
  void* shape_arg;               /**< passed to shape_fn */
  /** The gradient (NULL: none; weft_gradients then fails on a path through
   * the op, and weft_gradient_register may add one later). */
  weft_gradient_fn gradient;
  void* gradient_arg;            /**< passed to gradient */
} weft_op_def;

/** Adds an op to the library for the life of the process.  Registering an
 * op of the same name again is accepted when it comes from the same place
 * (this program, or one plugin) with the same schema and functions, and
 * refused otherwise (ALREADY_EXISTS, naming where both came from);
 * INVALID_ARGUMENT for a schema that does not parse, naming the part.
 * Thread-safe; nodes built before it never see it. */
WEFT_API WEFT_MUST_USE weft_status* weft_op_register(const weft_op_def* def);

struct weft_kernel_def;
struct weft_host_api;
/** A kernel written by the program, for the devices of `device_type`
 * ("CPU"), whose plugin must be loaded before the kernel can run.  The
 * kernel is a weft_kernel_def of weft/plugin.h: it reads its inputs and
 * allocates its outputs through the table weft_kernel_host() returns, as a
 * plugin's kernels do through theirs.  The op must be known (the library's,
 * or one registered above).  NOT_FOUND for an unknown op,
 * INVALID_ARGUMENT for a malformed def.  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_kernel_register(
    const char* device_type, const struct weft_kernel_def* def);
/** The host table kernels use (the one plugins receive).  Lives as long as
 * the process. */
WEFT_API const struct weft_host_api* weft_kernel_host(void);

/** The node a host-language kernel runs, for weft_kernel_attr(). */
typedef struct weft_kernel_context weft_kernel_call;
/** A kernel written in a host language (Java, Julia, Python's ctypes), for
 * the CPU devices, with no table to call through: it gets the node's
 * inputs as tensors (copies, which it must not destroy and which die when
 * it returns) and sets each outputs[i] to a tensor of its own making
 * (weft_tensor_create...), which the runtime takes over and destroys.
 * `call` reads the node's attributes (weft_kernel_attr).  An error status
 * fails the run, naming the node. */
typedef weft_status* (*weft_host_kernel_fn)(void* arg,
                                            const weft_kernel_call* call,
                                            weft_tensor* const* inputs,
                                            int32_t num_inputs,
                                            weft_tensor** outputs,
                                            int32_t num_outputs);
/** Registers `fn`, called with `arg`, as a CPU kernel of op `op`, which
 * must be known. */
WEFT_API WEFT_MUST_USE weft_status* weft_kernel_register_host(
    const char* op, weft_host_kernel_fn fn, void* arg);
/** Attribute `name` of the node a kernel runs (defaults filled), as
 * weft_shape_attr: NOT_FOUND when absent.  Valid during the call. */
WEFT_API WEFT_MUST_USE weft_status* weft_kernel_attr(
    const weft_kernel_call* call, const char* name, weft_attr_value* out);

/** Attribute `name` of a node of a graph (defaults filled), as
 * weft_shape_attr: NOT_FOUND when absent.  Strings and lists point into
 * the node and live as long as its graph.  For gradient functions, which
 * read the attributes of the node they differentiate. */
WEFT_API WEFT_MUST_USE weft_status* weft_node_attr(
    const weft_node* node, const char* name, weft_attr_value* out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_OPS_H_ */
