/* What the gradient test files of the reduce, linalg and nn families share:
 * finishing a node inside a build function, and inputs that keep every
 * central difference away from ties and kinks. */
#ifndef WEFT_TESTS_GRADIENT_TESTS_H_
#define WEFT_TESTS_GRADIENT_TESTS_H_

#include <stdint.h>

#include "test_support.h"

static inline weft_output gt_finish(weft_op_builder* b) {
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  return (weft_output){n, 0};
}

/* Distinct values in about [-1.5, 1.5], at least 1e-3 apart, so that no
 * central difference crosses a tie (Max, MaxPool) or a kink (Relu). */
static inline void gt_fill_distinct(double* v, int64_t n, int seed) {
  for (int64_t i = 0; i < n; ++i)
    v[i] = ((double)((i * 37 + seed * 11) % 1009) - 504.0) / 336.0 +
           1e-5 * (double)(i % 7);
}

#endif /* WEFT_TESTS_GRADIENT_TESTS_H_ */
