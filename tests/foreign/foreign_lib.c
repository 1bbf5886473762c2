/* Plain C functions for tests/test_foreign.c to call through ForeignCall:
 * nothing here knows Weft. */
#include <stdint.h>

/* out[i] = k * x[i] + 1 (a "vendor filter": tensors as pointer + count). */
void weft_test_scale(const float* x, int64_t n, float k, float* out,
                     int64_t out_n) {
  for (int64_t i = 0; i < n && i < out_n; ++i) out[i] = k * x[i] + 1.0f;
}

/* 0 when every x[i] >= 0, else 1 + the index of the first negative: an
 * error code. */
int32_t weft_test_all_nonnegative(const double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] < 0) return (int32_t)(i + 1);
  return 0;
}

/* An int64 scalar function, element-wise. */
int64_t weft_test_twice(int64_t v) { return 2 * v; }
