/* Weft — introspection of the op library and of the kernels plugins offer.
 *
 * Ops are defined by the runtime (schema, shape function); kernels come from
 * plugins.  These calls list both, for tools such as `weft ops` and for
 * bindings that generate typed wrappers.
 *
 * Strings and arrays returned here are borrowed and live until the process
 * exits.  Threads: every function is thread-safe.
 */
#ifndef WEFT_OPS_H_
#define WEFT_OPS_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One op.  The caller sets struct_size; the library fills only the fields
 * that size covers. */
typedef struct weft_op_description {
  size_t struct_size;
  const char* name;       /* "MatMul" */
  const char* summary;    /* one sentence */
  const char* inputs;     /* "a, b"; a trailing "..." marks a list input */
  const char* outputs;    /* "output", or how many when an attribute decides */
  /* "transpose_a: bool = false, transpose_b: bool = false"; required
   * attributes have no default.  The type attribute the runtime infers
   * from the inputs ("T") is not listed. */
  const char* attributes;
  int32_t num_inputs;     /* declared inputs (the last repeats if variadic) */
  int32_t variadic;       /* 1 when the last input is a list */
  int32_t stateful;       /* 1 for ops with side effects or randomness */
  /* 1 for ops the runtime runs itself on every device (Const, Variable,
   * Assign, ...): they need no kernel. */
  int32_t runs_in_runtime;
} weft_op_description;

/* A kernel registered by a plugin.  Same rules as weft_op_description. */
typedef struct weft_kernel_description {
  size_t struct_size;
  const char* op;
  const char* device_type;  /* "CPU" */
  const char* plugin;       /* "weft-cpu" */
  const char* dtype_attr;   /* "T", or "" when the kernel takes any dtype */
  const int32_t* dtypes;    /* weft_dtype values accepted for dtype_attr */
  int32_t num_dtypes;
  int32_t priority;
} weft_kernel_description;

/* Number of ops, and op `index` in registration order.  INVALID_ARGUMENT
 * when out of range. */
WEFT_API int32_t weft_op_count(void);
WEFT_API WEFT_MUST_USE weft_status* weft_op_describe(
    int32_t index, weft_op_description* out);

/* Kernels for op `op` across loaded plugins (loads the search path first),
 * best first.  0 for an unknown op.  INVALID_ARGUMENT when out of range. */
WEFT_API int32_t weft_kernel_count(const char* op);
WEFT_API WEFT_MUST_USE weft_status* weft_kernel_describe(
    const char* op, int32_t index, weft_kernel_description* out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_OPS_H_ */
