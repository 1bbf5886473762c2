/* The numeric gradient checker shared by the gradient tests.
 *
 * gc_check() builds y = build(graph, xs) over placeholders for the inputs,
 * asks weft_gradients() for d(sum(w * y))/d(x_i) with a fixed random weight
 * w per element of y (so every output element counts, each differently),
 * and compares every element with central differences
 * (f(x + h) - f(x - h)) / 2h computed by running y in a session.  Inputs
 * and arithmetic are float64 unless the input's dtype says otherwise, so
 * the comparison measures the gradient, not rounding.  A mismatch fails the
 * test naming `what`, the input, the element and both values.
 *
 * Implemented in grad_check.c (part of the test support library). */
#ifndef WEFT_TESTS_GRAD_CHECK_H_
#define WEFT_TESTS_GRAD_CHECK_H_

#include <stdint.h>

#include "weft/weft.h"

typedef struct gc_input {
  weft_dtype dtype;       /* WEFT_FLOAT64 normally */
  const int64_t* dims;
  int32_t rank;
  const double* values;   /* element-count values, converted to dtype */
  /* Bit d set: the placeholder declares dim d unknown (-1, as a batch is),
   * so the gradients are built without knowing it; `dims` is still what is
   * fed.  Appended: initializers that stop at `values` leave it 0. */
  uint32_t unknown_dims;
} gc_input;

/* Builds the function under test from placeholders `xs` (one per input, in
 * order) and returns its output.  Use the Criterion asserts on failure. */
typedef weft_output (*gc_build_fn)(weft_graph* graph, const weft_output* xs,
                                   int32_t num_xs, void* arg);

/* Compares symbolic and numeric gradients for every input; `h` is the step
 * of the central differences; an element passes when
 * |symbolic - numeric| <= atol + rtol * |numeric|.  Inputs listed in
 * `constant_inputs` (a bit per input; bit i set: input i is not
 * differentiated, e.g. integer labels or indices) are fed but not checked. */
void gc_check(const char* what, gc_build_fn build, void* arg,
              const gc_input* xs, int32_t num_xs, uint32_t constant_inputs,
              double h, double atol, double rtol);

/* The same with the usual settings for float64: h 1e-6, atol 1e-7, rtol
 * 1e-5. */
void gc_check_f64(const char* what, gc_build_fn build, void* arg,
                  const gc_input* xs, int32_t num_xs,
                  uint32_t constant_inputs);

#endif /* WEFT_TESTS_GRAD_CHECK_H_ */
