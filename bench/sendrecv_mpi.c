/* Weft's transfers between the tasks of a cluster session against MPI
 * point-to-point called directly, in one run (issue 16, item 7a).
 *
 *   mpirun -np 2 --oversubscribe build/bench/sendrecv_mpi [ROUNDS]
 *
 * For each size: a run of a two-task graph (x fed, a = Identity(x) on task
 * 0, which forwards x without a copy, Shape(a) on task 1, fetched on every
 * rank), in which `bytes` cross from rank 0 to rank 1 and four bytes come
 * back; against rank 0's
 * MPI_Send of the same bytes and rank 1's four-byte reply (osu_bw's
 * pattern with one message in flight; osu_latency's for the small sizes).
 * Rank 0 prints the medians of its round trips and their ratio.  The
 * buffers are 64-byte aligned, as Weft's own tensors are: the kernel's
 * single copy (CMA) runs ~15-25% slower when source and destination are
 * not aligned alike mod 64, which the "misaligned" column measures for MPI
 * itself (a fed malloc buffer, 16 bytes into a line, forwarded by Weft
 * into its 64-byte aligned landing block pays that too).  The
 * program initializes MPI itself (MPI_THREAD_MULTIPLE); Weft's MPI module
 * then uses that MPI. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_bench.h"

static void die(weft_status* st, const char* what) {
  die_on(st, "sendrecv_mpi", what);
}

static weft_output on_task(weft_graph* g, const char* op, int task,
                           weft_output x) {
  char device[32];
  snprintf(device, sizeof device, "/job:worker/task:%d", task);
  weft_op_builder* b = weft_op_begin(g, op, NULL);
  weft_op_add_input(b, x);
  weft_op_set_device(b, device);
  weft_node* n = NULL;
  die(weft_op_finish(b, &n), op);
  return (weft_output){n, 0};
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "sendrecv_mpi: run with mpirun -np 2\n");
    MPI_Finalize();
    return 2;
  }
  const int rounds = argc > 1 ? atoi(argv[1]) : 15;
  if (rank == 0)
    printf("# 2 ranks, %d rounds, medians of rank 0's round trip (bytes "
           "there, 4 back); bandwidth = bytes / time\n", rounds);
  static const int64_t sizes[] = {8, 1 << 10, 1 << 16, 1 << 20, 16 << 20,
                                  64 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    const int64_t bytes = sizes[k], n = bytes / 4;
    float* data = aligned_alloc(64, (size_t)bytes);
    for (int64_t i = 0; i < n; ++i) data[i] = (float)(i % 97);
    weft_graph* g = NULL;
    die(weft_graph_create(&g), "graph");
    weft_output x;
    die(weft_graph_placeholder(g, "x", WEFT_FLOAT32, &n, 1, &x), "x");
    weft_output a = on_task(g, "Identity", 0, x);
    weft_output y = on_task(g, "Shape", 1, a);
    weft_session_options o;
    weft_session_options_init(&o);
    o.devices = "CPU";
    o.inter_op_threads = 1;
    o.intra_op_threads = 1;
    o.cluster = "worker";
    weft_session* s = NULL;
    die(weft_session_create(g, &o, &s), "session");
    weft_tensor* xt = NULL;
    die(weft_tensor_create_from_data(WEFT_FLOAT32, &n, 1, data, (size_t)bytes,
                                     NULL, NULL, &xt),
        "tensor");
    /* 64 bytes more: the misaligned round lands 16 bytes in. */
    char* buf = aligned_alloc(64, (size_t)bytes + 64);
    int32_t reply = 0;
    double* tw = malloc(sizeof(double) * (size_t)rounds);
    double* tm = malloc(sizeof(double) * (size_t)rounds);
    double* th = malloc(sizeof(double) * (size_t)rounds);
    double* ta = malloc(sizeof(double) * (size_t)rounds);
    for (int r = -2; r < rounds; ++r) {  /* two warm-up rounds */
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now();
      weft_tensor* out = NULL;
      die(weft_session_run(s, &x, &xt, 1, &y, 1, NULL, 0, &out), "run");
      double t1 = now();
      if (*(const int32_t*)weft_tensor_data(out) != (int32_t)n) {
        fprintf(stderr, "sendrecv_mpi: wrong shape back\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      weft_tensor_destroy(out);
      MPI_Barrier(MPI_COMM_WORLD);
      double t2 = now();
      if (rank == 0) {
        MPI_Send(data, (int)bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&reply, 1, MPI_INT32_T, 1, 8, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        reply = (int32_t)n;
        MPI_Send(&reply, 1, MPI_INT32_T, 0, 8, MPI_COMM_WORLD);
      }
      double t3 = now();
      /* Weft's protocol without its threads: a small header first, then
       * the payload, received once the header is in. */
      MPI_Barrier(MPI_COMM_WORLD);
      double t4 = now();
      char head[64] = {0};
      if (rank == 0) {
        MPI_Send(head, sizeof head, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
        MPI_Send(data, (int)bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&reply, 1, MPI_INT32_T, 1, 8, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(head, sizeof head, MPI_BYTE, 0, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        reply = (int32_t)n;
        MPI_Send(&reply, 1, MPI_INT32_T, 0, 8, MPI_COMM_WORLD);
      }
      double t5 = now();
      /* MPI again, into memory 16 bytes off the sender's alignment (mod
       * 64): what a fed buffer from malloc costs when it lands in a
       * 64-byte aligned block (the kernel's copy is slower when source
       * and destination are not aligned alike). */
      MPI_Barrier(MPI_COMM_WORLD);
      double t6 = now();
      if (rank == 0) {
        MPI_Send(data, (int)bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&reply, 1, MPI_INT32_T, 1, 8, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf + 16, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Send(&reply, 1, MPI_INT32_T, 0, 8, MPI_COMM_WORLD);
      }
      double t7 = now();
      if (r >= 0) {
        tw[r] = t1 - t0;
        tm[r] = t3 - t2;
        th[r] = t5 - t4;
        ta[r] = t7 - t6;
      }
    }
    const double w = median(tw, rounds), m = median(tm, rounds),
                 h = median(th, rounds), off = median(ta, rounds);
    if (rank == 0)
      printf("%9lld B: Weft %9.1f us %8.1f MB/s | MPI %9.1f us %8.1f MB/s | "
             "MPI header+payload %9.1f us | MPI misaligned %9.1f us | "
             "Weft/MPI bandwidth %.2f\n",
             (long long)bytes, w * 1e6, bytes / w / 1e6, m * 1e6,
             bytes / m / 1e6, h * 1e6, off * 1e6, m / w);
    free(ta);
    free(tw);
    free(tm);
    free(th);
    free(buf);
    weft_tensor_destroy(xt);
    weft_session_destroy(s);
    weft_graph_destroy(g);
    free(data);
  }
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
