/* Softmax regression on Fashion-MNIST, in the shape of TensorFlow's classic
 * "MNIST for beginners" tutorial, against Weft's C API:
 *
 *   x  = placeholder [batch, 784]          y_ = placeholder [batch] (class)
 *   W  = variable zeros [784, 10]          b  = variable zeros [10]
 *   loss = mean(softmax_cross_entropy(x W + b, y_))
 *   train = gradient descent (0.5) minimizing loss
 *
 * Trains one epoch in batches of 100, printing loss and batch accuracy every
 * 100 steps, then the accuracy on the 10,000 test images.
 *
 *   examples/fashion_softmax [DATA_DIR]   (default
 *   /usr/share/datasets/fashion-mnist, from Debian's dataset-fashion-mnist)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "weft/weft.h"

#define CHECK(call)                                              \
  do {                                                           \
    weft_status* st_ = (call);                                   \
    if (st_) {                                                   \
      fprintf(stderr, "%s: %s\n", #call, weft_status_message(st_)); \
      exit(1);                                                   \
    }                                                            \
  } while (0)

enum { PIXELS = 784, CLASSES = 10, BATCH = 100 };

/* Reads an IDX file (gzip or not) of unsigned bytes: returns its data after
 * the header of `rank` sizes, and the first size in *count. */
static unsigned char* read_idx(const char* dir, const char* name, int rank,
                               int* count) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.gz", dir, name);
  gzFile f = gzopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  unsigned char h[16];
  size_t size = 1;
  if (gzread(f, h, 4 + 4 * rank) != 4 + 4 * rank || h[2] != 8 ||
      h[3] != rank) {
    fprintf(stderr, "%s is not an IDX file of %d dimensions\n", path, rank);
    exit(1);
  }
  for (int i = 0; i < rank; ++i)
    size *= (size_t)h[4 + 4 * i] << 24 | h[5 + 4 * i] << 16 |
            h[6 + 4 * i] << 8 | h[7 + 4 * i];
  *count = h[4] << 24 | h[5] << 16 | h[6] << 8 | h[7];
  unsigned char* data = malloc(size);
  if (!data || gzread(f, data, (unsigned)size) != (int)size) {
    fprintf(stderr, "%s is truncated\n", path);
    exit(1);
  }
  gzclose(f);
  return data;
}

static weft_output zeros(weft_graph* g, const char* name, int64_t rows,
                         int64_t cols) {
  int64_t dims[2] = {rows, cols};
  weft_tensor* t;
  CHECK(weft_tensor_create(WEFT_FLOAT32, dims, cols ? 2 : 1, &t));
  memset(weft_tensor_data(t), 0, weft_tensor_byte_size(t));
  char init[64];
  snprintf(init, sizeof init, "%s/zeros", name);
  weft_output c, v;
  CHECK(weft_graph_constant(g, init, t, &c));
  CHECK(weft_graph_variable(g, name, c, &v, NULL));
  weft_tensor_destroy(t);
  return v;
}

static weft_output op2(weft_graph* g, const char* op, weft_output a,
                       weft_output b) {
  weft_output in[2] = {a, b}, out;
  CHECK(weft_graph_apply(g, op, NULL, in, 2, &out));
  return out;
}

/* The fraction of rows of `logits` whose largest entry is the label. */
static double accuracy(const float* logits, const int32_t* labels, int n) {
  int right = 0;
  for (int i = 0; i < n; ++i) {
    int best = 0;
    for (int c = 1; c < CLASSES; ++c)
      if (logits[i * CLASSES + c] > logits[i * CLASSES + best]) best = c;
    right += best == labels[i];
  }
  return (double)right / n;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  int n_train, n_test, n;
  unsigned char* train_x = read_idx(dir, "train-images-idx3-ubyte", 3, &n_train);
  unsigned char* train_y = read_idx(dir, "train-labels-idx1-ubyte", 1, &n);
  unsigned char* test_x = read_idx(dir, "t10k-images-idx3-ubyte", 3, &n_test);
  unsigned char* test_y = read_idx(dir, "t10k-labels-idx1-ubyte", 1, &n);

  /* The model. */
  weft_graph* g;
  CHECK(weft_graph_create(&g));
  int64_t xdims[2] = {-1, PIXELS}, ydims[1] = {-1};
  weft_output x, y_;
  CHECK(weft_graph_placeholder(g, "x", WEFT_FLOAT32, xdims, 2, &x));
  CHECK(weft_graph_placeholder(g, "y_", WEFT_INT32, ydims, 1, &y_));
  weft_output W = zeros(g, "W", PIXELS, CLASSES);
  weft_output b = zeros(g, "b", CLASSES, 0);
  weft_output logits = op2(g, "BiasAdd", op2(g, "MatMul", x, W), b);
  weft_output xent = op2(g, "SparseSoftmaxCrossEntropyWithLogits", logits, y_);
  weft_output loss;
  CHECK(weft_graph_apply(g, "Mean", "loss", &xent, 1, &loss));

  weft_optimizer_options opt;
  weft_optimizer_options_init(&opt, WEFT_OPTIMIZER_GRADIENT_DESCENT);
  opt.learning_rate = 0.5;
  weft_node *train, *init;
  CHECK(weft_minimize(g, loss, &opt, "train", &train));
  CHECK(weft_graph_initialize_all(g, "init", &init));

  /* Training: one epoch of batches of 100. */
  weft_session* s;
  CHECK(weft_session_create(g, NULL, &s));
  CHECK(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL));
  static float xb[10000 * PIXELS];
  static int32_t yb[10000];
  weft_output feeds[2] = {x, y_};
  weft_output fetches[2] = {loss, logits};
  for (int step = 0; step < n_train / BATCH; ++step) {
    for (int i = 0; i < BATCH * PIXELS; ++i)
      xb[i] = train_x[(size_t)step * BATCH * PIXELS + i] / 255.0f;
    for (int i = 0; i < BATCH; ++i) yb[i] = train_y[step * BATCH + i];
    int64_t bx[2] = {BATCH, PIXELS}, by[1] = {BATCH};
    weft_tensor *tx, *ty, *out[2];
    CHECK(weft_tensor_create_from_data(WEFT_FLOAT32, bx, 2, xb,
                                       sizeof(float) * BATCH * PIXELS, NULL,
                                       NULL, &tx));
    CHECK(weft_tensor_create_from_data(WEFT_INT32, by, 1, yb,
                                       sizeof(int32_t) * BATCH, NULL, NULL,
                                       &ty));
    weft_tensor* values[2] = {tx, ty};
    CHECK(weft_session_run(s, feeds, values, 2, fetches, 2, &train, 1, out));
    if (step % 100 == 0)
      printf("step %3d  loss %.4f  batch accuracy %.2f\n", step,
             *(float*)weft_tensor_data(out[0]),
             accuracy(weft_tensor_data(out[1]), yb, BATCH));
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
    weft_tensor_destroy(tx);
    weft_tensor_destroy(ty);
  }

  /* Test accuracy, all 10,000 images in one run. */
  for (int i = 0; i < n_test * PIXELS; ++i) xb[i] = test_x[i] / 255.0f;
  for (int i = 0; i < n_test; ++i) yb[i] = test_y[i];
  int64_t tdims[2] = {n_test, PIXELS};
  weft_tensor *tx, *tl;
  CHECK(weft_tensor_create_from_data(WEFT_FLOAT32, tdims, 2, xb,
                                     sizeof(float) * (size_t)n_test * PIXELS,
                                     NULL, NULL, &tx));
  CHECK(weft_session_run(s, &x, &tx, 1, &logits, 1, NULL, 0, &tl));
  printf("test accuracy: %.2f%%\n",
         100 * accuracy(weft_tensor_data(tl), yb, n_test));

  weft_tensor_destroy(tl);
  weft_tensor_destroy(tx);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  free(train_x);
  free(train_y);
  free(test_x);
  free(test_y);
  return 0;
}
