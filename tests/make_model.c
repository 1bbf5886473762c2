/* make_model DIR — saves a small model bundle for tests/test_cli.py:
 *
 *   x: float32 [-1, 4]
 *   logits = MatMul(x, W) + b    W: Variable [4, 3], b: Const [3]
 *   y = Softmax(logits)
 *
 * with signatures serving_default (x -> y) and "logits" (x -> logits).
 * W[i][j] = 0.1 * (3 i + j + 1) - 0.6 and b = (0.1, -0.2, 0.3): the test
 * computes the expected outputs from the same formulas in Python. */
#include <stdio.h>
#include <stdlib.h>

#include "weft/weft.h"

enum { kIn = 4, kOut = 3 };

static int check(weft_status* status, const char* what) {
  if (status == NULL) return 1;
  fprintf(stderr, "make_model: %s: %s\n", what, weft_status_message(status));
  weft_status_destroy(status);
  return 0;
}

static int constant(weft_graph* g, const char* name, const int64_t* dims,
                    int32_t rank, const float* values, weft_output* out) {
  weft_tensor* t = NULL;
  if (!check(weft_tensor_create(WEFT_FLOAT32, dims, rank, &t), name))
    return 0;
  float* p = weft_tensor_data(t);
  for (int64_t i = 0; i < weft_tensor_element_count(t); ++i) p[i] = values[i];
  int ok = check(weft_graph_constant(g, name, t, out), name);
  weft_tensor_destroy(t);
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_model DIR\n");
    return 2;
  }
  float w[kIn * kOut];
  for (int i = 0; i < kIn; ++i)
    for (int j = 0; j < kOut; ++j)
      w[i * kOut + j] = 0.1f * (float)(3 * i + j + 1) - 0.6f;
  const float b[kOut] = {0.1f, -0.2f, 0.3f};
  const int64_t x_dims[2] = {-1, kIn};
  const int64_t w_dims[2] = {kIn, kOut};
  const int64_t b_dims[1] = {kOut};

  weft_graph* g = NULL;
  weft_session* s = NULL;
  weft_model* model = NULL;
  weft_node* init = NULL;
  weft_output x, w_init, w_value, b_value, product, logits, y;
  int ok =
      check(weft_graph_create(&g), "graph") &&
      check(weft_graph_placeholder(g, "x", WEFT_FLOAT32, x_dims, 2, &x),
            "x") &&
      constant(g, "W_init", w_dims, 2, w, &w_init) &&
      check(weft_graph_variable(g, "W", w_init, &w_value, NULL), "W") &&
      constant(g, "b", b_dims, 1, b, &b_value) &&
      check(weft_graph_apply(g, "MatMul", "matmul",
                             (weft_output[]){x, w_value}, 2, &product),
            "matmul") &&
      check(weft_graph_apply(g, "BiasAdd", "logits",
                             (weft_output[]){product, b_value}, 2, &logits),
            "logits") &&
      check(weft_graph_apply(g, "Softmax", "probabilities", &logits, 1, &y),
            "softmax") &&
      check(weft_graph_initialize_all(g, NULL, &init), "init") &&
      check(weft_session_create(g, NULL, &s), "session") &&
      check(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL),
            "initializing");
  if (ok) {
    const char* in_keys[] = {"x"};
    const char* y_keys[] = {"y"};
    const char* logit_keys[] = {"logits"};
    weft_signature_def signatures[2] = {
        {sizeof(weft_signature_def), WEFT_DEFAULT_SIGNATURE, 1, in_keys, &x,
         1, y_keys, &y},
        {sizeof(weft_signature_def), "logits", 1, in_keys, &x, 1,
         logit_keys, &logits},
    };
    ok = check(weft_model_create(g, s, signatures, 2, &model), "model") &&
         check(weft_model_save(model, argv[1]), argv[1]);
  }
  weft_model_destroy(model);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok ? 0 : 1;
}
