/* relu(W·x + b): the first graph of the TensorFlow whitepaper, through Weft's
 * C API.
 *
 * A 784 → 100 layer: x is a placeholder of shape [784, 1] (one 28×28 image
 * as a column), W [100, 784] and b [100, 1] are constants filled from a
 * fixed-seed generator, so every run prints the same numbers.  The graph
 * runs on the CPU plugin; the result is then recomputed with a plain C loop
 * and compared.
 *
 * Run it from the build directory with `meson devenv -C build
 * examples/relu_layer` so the runtime finds the plugins built there.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft/weft.h"

enum { INPUTS = 784, UNITS = 100 };

static void die(const char* what, weft_status* status) {
  fprintf(stderr, "relu_layer: %s: %s: %s\n", what,
          weft_code_name(weft_status_code(status)),
          weft_status_message(status));
  weft_status_destroy(status);
  exit(1);
}

/* Every call below either succeeds or ends the program: an example should
 * read like the happy path, and still say exactly what went wrong. */
#define CHECK(call)                         \
  do {                                      \
    weft_status* check_status_ = (call);    \
    if (check_status_ != NULL) {            \
      die(#call, check_status_);            \
    }                                       \
  } while (0)

/* xorshift32: tiny and deterministic on every platform, unlike rand(). */
static uint32_t rng_state = 20151109u;
static float uniform(float low, float high) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return low + (high - low) * (float)(rng_state >> 8) / (float)(1u << 24);
}

static weft_tensor* random_tensor(int64_t rows, int64_t cols, float low,
                                  float high) {
  const int64_t dims[2] = {rows, cols};
  weft_tensor* tensor = NULL;
  CHECK(weft_tensor_create(WEFT_FLOAT32, dims, 2, &tensor));
  float* data = weft_tensor_data(tensor);
  for (int64_t i = 0; i < rows * cols; ++i) data[i] = uniform(low, high);
  return tensor;
}

int main(void) {
  /* Scaled like a Glorot-initialised layer so that roughly half of the
   * units end up active and Relu has something to do. */
  const float w_scale = 1.0f / sqrtf((float)INPUTS);
  weft_tensor* w_value = random_tensor(UNITS, INPUTS, -w_scale, w_scale);
  weft_tensor* b_value = random_tensor(UNITS, 1, -0.1f, 0.1f);
  weft_tensor* x_value = random_tensor(INPUTS, 1, 0.0f, 1.0f);

  weft_graph* graph = NULL;
  CHECK(weft_graph_create(&graph));

  weft_output w, b, x, wx, wx_plus_b, relu;
  CHECK(weft_graph_constant(graph, "W", w_value, &w));
  CHECK(weft_graph_constant(graph, "b", b_value, &b));
  const int64_t x_dims[2] = {INPUTS, 1};
  CHECK(weft_graph_placeholder(graph, "x", WEFT_FLOAT32, x_dims, 2, &x));
  const weft_output matmul_inputs[2] = {w, x};
  CHECK(weft_graph_apply(graph, "MatMul", "Wx", matmul_inputs, 2, &wx));
  const weft_output add_inputs[2] = {wx, b};
  CHECK(weft_graph_apply(graph, "Add", "Wx_plus_b", add_inputs, 2,
                         &wx_plus_b));
  CHECK(weft_graph_apply(graph, "Relu", "relu", &wx_plus_b, 1, &relu));

  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "/device:CPU:0";
  weft_session* session = NULL;
  CHECK(weft_session_create(graph, &options, &session));

  weft_tensor* result = NULL;
  CHECK(weft_session_run(session, &x, &x_value, 1, &relu, 1, NULL, 0,
                         &result));

  if (weft_tensor_dtype(result) != WEFT_FLOAT32 ||
      weft_tensor_rank(result) != 2 || weft_tensor_dim(result, 0) != UNITS ||
      weft_tensor_dim(result, 1) != 1) {
    fprintf(stderr, "relu_layer: unexpected result: %s, rank %d\n",
            weft_dtype_name(weft_tensor_dtype(result)),
            weft_tensor_rank(result));
    return 1;
  }
  const float* y = weft_tensor_data(result);

  printf("relu(W·x + b) with W [%d, %d], x [%d, 1], b [%d, 1] on %s\n", UNITS,
         INPUTS, INPUTS, UNITS, options.devices);
  printf("first outputs:");
  for (int i = 0; i < 8; ++i) printf(" %.6f", y[i]);
  printf("\n");

  /* The same layer, the obvious way, in double precision as the reference. */
  const float* w_data = weft_tensor_data(w_value);
  const float* b_data = weft_tensor_data(b_value);
  const float* x_data = weft_tensor_data(x_value);
  double checksum = 0.0;
  double max_error = 0.0;
  int active = 0;
  for (int row = 0; row < UNITS; ++row) {
    double sum = b_data[row];
    for (int k = 0; k < INPUTS; ++k) {
      sum += (double)w_data[row * INPUTS + k] * x_data[k];
    }
    double expected = sum > 0.0 ? sum : 0.0;
    double error = fabs((double)y[row] - expected);
    if (error > max_error) max_error = error;
    checksum += y[row];
    active += y[row] > 0.0f;
  }
  printf("active units: %d of %d\n", active, UNITS);
  printf("checksum (sum of outputs): %.6f\n", checksum);

  /* float32 sums of 784 products carry a few ulps of rounding; 1e-4 is far
   * above that and far below any real mistake. */
  const double tolerance = 1e-4;
  int ok = max_error <= tolerance;
  printf("plain C loop: %s (largest difference %.2e, tolerance %.0e)\n",
         ok ? "agrees" : "DISAGREES", max_error, tolerance);

  weft_tensor_destroy(result);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  weft_tensor_destroy(x_value);
  weft_tensor_destroy(b_value);
  weft_tensor_destroy(w_value);
  return ok ? 0 : 1;
}
