/* make_cnn_model DIR — saves a small convolutional model bundle for
 * tests/test_onnx_export.py:
 *
 *   images: float32 [-1, 8, 8, 1]
 *   h = relu(conv2d(images, F, SAME) + bias)        F: Variable [3, 3, 1, 4]
 *   p = max_pool(h, 2x2, VALID)                       [-1, 4, 4, 4]
 *   probabilities = softmax(reshape(p, [-1, 64]) W^T) W: Variable [3, 64]
 *   classes = argmax(probabilities, 1) as int32
 *   pooled = mean(avg_pool(h, 3x3, SAME), axes 1, 2)  [-1, 4]
 *
 * Signatures: serving_default (images -> probabilities, classes, pooled),
 * and "noisy" (probabilities plus RandomUniform noise), which has no ONNX
 * form.  Weights are sin() of their index, so runs agree everywhere. */
#include <math.h>
#include <stdio.h>

#include "weft/weft.h"

static int check(weft_status* status, const char* what) {
  if (status == NULL) return 1;
  fprintf(stderr, "make_cnn_model: %s: %s\n", what,
          weft_status_message(status));
  weft_status_destroy(status);
  return 0;
}

static int constant(weft_graph* g, const char* name, const int64_t* dims,
                    int32_t rank, float scale, weft_output* out) {
  weft_tensor* t = NULL;
  if (!check(weft_tensor_create(WEFT_FLOAT32, dims, rank, &t), name))
    return 0;
  float* p = weft_tensor_data(t);
  for (int64_t i = 0; i < weft_tensor_element_count(t); ++i)
    p[i] = scale * sinf((float)(i + 1) * 0.7f);
  int ok = check(weft_graph_constant(g, name, t, out), name);
  weft_tensor_destroy(t);
  return ok;
}

static int node(weft_graph* g, const char* op, const char* name,
                weft_output a, const weft_output* b, const char* ints_name,
                const int64_t* ints, const char* padding, weft_output* out) {
  weft_op_builder* bld = weft_op_begin(g, op, name);
  weft_op_add_input(bld, a);
  if (b) weft_op_add_input(bld, *b);
  if (ints_name) weft_op_set_attr_int_list(bld, ints_name, ints, 4);
  if (padding) {
    static const int64_t unit[4] = {1, 1, 1, 1};
    weft_op_set_attr_string(bld, "padding", padding);
    if (ints_name == NULL) weft_op_set_attr_int_list(bld, "strides", unit, 4);
  }
  weft_node* n = NULL;
  int ok = check(weft_op_finish(bld, &n), name);
  if (ok) *out = (weft_output){n, 0};
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_cnn_model DIR\n");
    return 2;
  }
  const int64_t x_dims[4] = {-1, 8, 8, 1}, f_dims[4] = {3, 3, 1, 4};
  const int64_t b_dims[1] = {4}, w_dims[2] = {3, 64};
  const int64_t pool2[4] = {1, 2, 2, 1}, pool3[4] = {1, 3, 3, 1};
  const int64_t flat[2] = {-1, 64}, axes[2] = {1, 2}, noise_shape[2] = {1, 3};
  weft_graph* g = NULL;
  weft_session* s = NULL;
  weft_model* model = NULL;
  weft_node* init = NULL;
  weft_output x, f0, f, b, w0, w, conv, biased, h, p, avg, r, logits, probs;
  weft_output classes = {0}, pooled = {0}, noise = {0}, noisy = {0};
  int ok =
      check(weft_graph_create(&g), "graph") &&
      check(weft_graph_placeholder(g, "images", WEFT_FLOAT32, x_dims, 4, &x),
            "images") &&
      constant(g, "filter_init", f_dims, 4, 0.5f, &f0) &&
      check(weft_graph_variable(g, "filter", f0, &f, NULL), "filter") &&
      constant(g, "bias", b_dims, 1, 0.1f, &b) &&
      constant(g, "weights_init", w_dims, 2, 0.3f, &w0) &&
      check(weft_graph_variable(g, "weights", w0, &w, NULL), "weights") &&
      node(g, "Conv2D", "conv", x, &f, NULL, NULL, "SAME", &conv) &&
      node(g, "BiasAdd", "biased", conv, &b, NULL, NULL, NULL, &biased) &&
      node(g, "Relu", "relu", biased, NULL, NULL, NULL, NULL, &h);
  if (ok) {
    weft_op_builder* mp = weft_op_begin(g, "MaxPool", "pool");
    weft_op_add_input(mp, h);
    weft_op_set_attr_int_list(mp, "ksize", pool2, 4);
    weft_op_set_attr_int_list(mp, "strides", pool2, 4);
    weft_op_set_attr_string(mp, "padding", "VALID");
    weft_node* n = NULL;
    ok = check(weft_op_finish(mp, &n), "pool");
    p = (weft_output){n, 0};
  }
  if (ok) {
    weft_op_builder* ap = weft_op_begin(g, "AvgPool", "avg");
    weft_op_add_input(ap, h);
    weft_op_set_attr_int_list(ap, "ksize", pool3, 4);
    weft_op_set_attr_int_list(ap, "strides", (const int64_t[]){1, 1, 1, 1},
                              4);
    weft_op_set_attr_string(ap, "padding", "SAME");
    weft_node* n = NULL;
    ok = check(weft_op_finish(ap, &n), "avg");
    avg = (weft_output){n, 0};
  }
  if (ok) {
    weft_op_builder* m = weft_op_begin(g, "Mean", "pooled");
    weft_op_add_input(m, avg);
    weft_op_set_attr_int_list(m, "axes", axes, 2);
    weft_node* n = NULL;
    ok = check(weft_op_finish(m, &n), "pooled");
    pooled = (weft_output){n, 0};
  }
  if (ok) {
    weft_op_builder* rs = weft_op_begin(g, "Reshape", "flat");
    weft_op_add_input(rs, p);
    weft_op_set_attr_int_list(rs, "shape", flat, 2);
    weft_node* n = NULL;
    ok = check(weft_op_finish(rs, &n), "flat");
    r = (weft_output){n, 0};
  }
  if (ok) {
    weft_op_builder* mm = weft_op_begin(g, "MatMul", "logits");
    weft_op_add_input(mm, r);
    weft_op_add_input(mm, w);
    weft_op_set_attr_bool(mm, "transpose_b", 1);
    weft_node* n = NULL;
    ok = check(weft_op_finish(mm, &n), "logits");
    logits = (weft_output){n, 0};
  }
  ok = ok && check(weft_graph_apply(g, "Softmax", "probabilities", &logits, 1,
                                    &probs), "probabilities");
  if (ok) {
    weft_op_builder* am = weft_op_begin(g, "ArgMax", "classes");
    weft_op_add_input(am, probs);
    weft_op_set_attr_int(am, "axis", 1);
    weft_op_set_attr_dtype(am, "output_type", WEFT_INT32);
    weft_node* n = NULL;
    ok = check(weft_op_finish(am, &n), "classes");
    classes = (weft_output){n, 0};
  }
  if (ok) {
    weft_op_builder* ru = weft_op_begin(g, "RandomUniform", "noise");
    weft_op_set_attr_int_list(ru, "shape", noise_shape, 2);
    weft_node* n = NULL;
    ok = check(weft_op_finish(ru, &n), "noise");
    noise = (weft_output){n, 0};
  }
  ok = ok &&
       check(weft_graph_apply(g, "Add", "noisy", (weft_output[]){probs, noise},
                              2, &noisy), "noisy") &&
       check(weft_graph_initialize_all(g, NULL, &init), "init") &&
       check(weft_session_create(g, NULL, &s), "session") &&
       check(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL),
             "initializing");
  if (ok) {
    const char* in_keys[] = {"images"};
    const char* out_keys[] = {"probabilities", "classes", "pooled"};
    weft_output outs[] = {probs, classes, pooled};
    const char* noisy_keys[] = {"noisy"};
    weft_signature_def signatures[2] = {
        {sizeof(weft_signature_def), WEFT_DEFAULT_SIGNATURE, 1, in_keys, &x,
         3, out_keys, outs},
        {sizeof(weft_signature_def), "noisy", 1, in_keys, &x, 1, noisy_keys,
         &noisy},
    };
    ok = check(weft_model_create(g, s, signatures, 2, &model), "model") &&
         check(weft_model_save(model, argv[1]), argv[1]);
  }
  weft_model_destroy(model);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok ? 0 : 1;
}
