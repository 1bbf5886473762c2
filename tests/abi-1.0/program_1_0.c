/* A program written for the 1.0 user API, compiled against the frozen 1.0
 * headers (tests/abi-1.0/weft) and run against the current library: its
 * structs are 1.0's size, so the library must read and write no more of
 * them than 1.0 defined (weft_session_options_init fills 1.0's fields
 * only; under ASan a write past them is a stack-buffer-overflow).  It
 * builds y = relu(x . w + b), runs it in a session with 1.0's options, and
 * checks the values.  Prints TAP. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

static int failures = 0, number = 0;

static void check(int ok, const char* what) {
  ++number;
  printf("%s %d - %s\n", ok ? "ok" : "not ok", number, what);
  if (!ok) ++failures;
}

static int ok(weft_status* st, const char* what) {
  if (st == NULL) return 1;
  printf("# %s: %s\n", what, weft_status_message(st));
  weft_status_destroy(st);
  return 0;
}

int main(void) {
  printf("1..5\n");
  weft_graph* g = NULL;
  check(ok(weft_graph_create(&g), "graph"), "a graph is created");
  const int64_t xd[2] = {2, 3}, wd[2] = {3, 2}, bd[1] = {2};
  const float w[6] = {1, -1, 2, 0.5f, -1, 1}, b[2] = {0.5f, -4};
  weft_tensor *wt = NULL, *bt = NULL;
  weft_output x, wc, bc, xw, y;
  int built =
      ok(weft_graph_placeholder(g, "x", WEFT_FLOAT32, xd, 2, &x), "x") &&
      ok(weft_tensor_create_copy(WEFT_FLOAT32, wd, 2, w, sizeof w, &wt),
         "w") &&
      ok(weft_tensor_create_copy(WEFT_FLOAT32, bd, 1, b, sizeof b, &bt),
         "b") &&
      ok(weft_graph_constant(g, "w", wt, &wc), "w const") &&
      ok(weft_graph_constant(g, "b", bt, &bc), "b const");
  weft_tensor_destroy(wt);
  weft_tensor_destroy(bt);
  if (built) {
    const weft_output mm[2] = {x, wc};
    built = ok(weft_graph_apply(g, "MatMul", "xw", mm, 2, &xw), "MatMul");
  }
  if (built) {
    const weft_output add[2] = {xw, bc};
    weft_output sum;
    built = ok(weft_graph_apply(g, "BiasAdd", "sum", add, 2, &sum),
               "BiasAdd") &&
            ok(weft_graph_apply(g, "Relu", "y", &sum, 1, &y), "Relu");
  }
  check(built, "the graph is built with 1.0's calls");

  /* 1.0's struct: struct_size, devices, inter_op_threads,
   * intra_op_threads.  Canaries on both sides. */
  struct {
    unsigned char before[32];
    weft_session_options options;
    unsigned char after[64];
  } frame;
  memset(&frame, 0xA5, sizeof frame);
  weft_session_options_init(&frame.options);
  int intact = 1;
  for (size_t i = 0; i < sizeof frame.before; ++i)
    intact &= frame.before[i] == 0xA5;
  for (size_t i = 0; i < sizeof frame.after; ++i)
    intact &= frame.after[i] == 0xA5;
  check(intact && frame.options.struct_size == sizeof frame.options,
        "weft_session_options_init writes 1.0's struct and nothing past it");

  frame.options.devices = "CPU";
  frame.options.intra_op_threads = 1;
  weft_session* s = NULL;
  int created = built && ok(weft_session_create(g, &frame.options, &s),
                            "session");
  check(created, "a session is created from 1.0's options");

  int right = 0;
  if (created) {
    const float xv[6] = {1, 2, 3, -1, 0, 2};
    weft_tensor* xt = NULL;
    weft_tensor* out = NULL;
    if (ok(weft_tensor_create_copy(WEFT_FLOAT32, xd, 2, xv, sizeof xv, &xt),
           "x value") &&
        ok(weft_session_run(s, &x, &xt, 1, &y, 1, NULL, 0, &out), "run")) {
      /* x . w: [1*1+2*2+3*-1, 1*-1+2*.5+3*1] = [2, 3];
       *        [-1*1+0+2*-1, -1*-1+0+2*1] = [-3, 3]; + b, relu. */
      const float want[4] = {2.5f, 0, 0, 0};
      const float* got = weft_tensor_data(out);
      right = weft_tensor_element_count(out) == 4;
      for (int i = 0; right && i < 4; ++i) right = fabsf(got[i] - want[i]) < 1e-6f;
      weft_tensor_destroy(out);
    }
    weft_tensor_destroy(xt);
    weft_session_destroy(s);
  }
  check(right, "it computes relu(x . w + b)");
  weft_graph_destroy(g);
  return failures == 0 ? 0 : 1;
}
