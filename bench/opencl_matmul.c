/* MatMul n x n x n on one device: the float32 product of two variables
 * (kept on the device, so no transfer is timed), its Sum fetched.  Prints
 * the median GFLOP/s and CPU time per product.  Usage: opencl_matmul
 * [DEVICE] [n] [products]; DEVICE "OPENCL" (default) or "CPU".  On OpenCL
 * WEFT_OPENCL_GEMM=clblast or builtin picks CLBlast's GEMM or the
 * plugin's kernel (bench/opencl.sh runs both and the CPU). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "weft/weft.h"

static weft_output square(weft_graph* g, int64_t n, float scale) {
  const int64_t dims[2] = {n, n};
  weft_tensor* t = NULL;
  BENCH_CHECK(weft_tensor_create(WEFT_FLOAT32, dims, 2, &t));
  float* v = weft_tensor_data(t);
  uint64_t r = 88172645463325252ull;
  for (int64_t i = 0; i < n * n; ++i) {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    v[i] = scale * (float)((double)(r >> 11) / 9007199254740992.0 - 0.5);
  }
  weft_output init, out;
  BENCH_CHECK(weft_graph_constant(g, NULL, t, &init));
  weft_tensor_destroy(t);
  BENCH_CHECK(weft_graph_variable(g, NULL, init, &out, NULL));
  return out;
}

typedef struct product {
  weft_session* session;
  weft_output sum;
} product;

static void run_product(void* arg) {
  product* p = arg;
  weft_tensor* out = NULL;
  BENCH_CHECK(
      weft_session_run(p->session, NULL, NULL, 0, &p->sum, 1, NULL, 0, &out));
  weft_tensor_destroy(out);
}

int main(int argc, char** argv) {
  const char* device = argc > 1 ? argv[1] : "OPENCL";
  const int64_t n = argc > 2 ? atoll(argv[2]) : 1024;
  const int products = argc > 3 ? atoi(argv[3]) : 20;
  BENCH_CHECK(weft_plugins_discover());
  weft_graph* g = NULL;
  BENCH_CHECK(weft_graph_create(&g));
  weft_output a = square(g, n, 1), b = square(g, n, 1);
  weft_op_builder* mb = weft_op_begin(g, "MatMul", "product");
  weft_op_add_input(mb, a);
  weft_op_add_input(mb, b);
  weft_node* mm = NULL;
  BENCH_CHECK(weft_op_finish(mb, &mm));
  weft_op_builder* sb = weft_op_begin(g, "Sum", "sum");
  weft_op_add_input(sb, (weft_output){mm, 0});
  weft_node* sum = NULL;
  BENCH_CHECK(weft_op_finish(sb, &sum));
  weft_node* init = NULL;
  BENCH_CHECK(weft_graph_initialize_all(g, "init", &init));
  weft_session_options so;
  weft_session_options_init(&so);
  so.devices = device;
  so.placement = WEFT_PLACEMENT_STRICT;
  weft_session* s = NULL;
  BENCH_CHECK(weft_session_create(g, &so, &s));
  BENCH_CHECK(weft_session_run(s, NULL, NULL, 0, NULL, 0, &init, 1, NULL));
  product p = {s, {sum, 0}};
  int block = products / 10 > 0 ? products / 10 : 1;
  double wall[10], cpu[10];
  bench_time_blocks(run_product, &p, 2, block, wall, cpu);
  const double w = bench_median(wall, 10), c = bench_median(cpu, 10);
  const char* gemm = getenv("WEFT_OPENCL_GEMM");
  printf("MatMul %lld^3 float32 on %s%s%s: %.1f GFLOP/s, %.2f ms/product "
         "(CPU %.2f ms), median of 10 blocks of %d\n", (long long)n, device,
         gemm ? " WEFT_OPENCL_GEMM=" : "", gemm ? gemm : "",
         2.0 * (double)n * (double)n * (double)n / w * 1e-9, w * 1e3, c * 1e3,
         block);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 0;
}
