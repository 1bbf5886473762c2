/* Weft's collectives against MPI called directly, in one run: for each
 * size, the median time of an AllReduce (sum, float32) and a Broadcast
 * through a Weft session (a fed tensor in, the result fetched) and of
 * MPI_Allreduce / MPI_Bcast on the same sizes, and their bandwidth ratio.
 *
 *   mpirun -np 2 --oversubscribe bench/allreduce_mpi [ROUNDS]
 *
 * The program initializes MPI itself; Weft's MPI module then uses that
 * MPI.  Rank 0 prints one line per size and operation. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_bench.h"

static void die(weft_status* st, const char* what) {
  die_on(st, "allreduce_mpi", what);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 15;
  int32_t wrank = -1, wsize = -1;
  die(weft_cluster_world(&wrank, &wsize), "weft_cluster_world");
  if (wrank != rank || wsize != size) {
    fprintf(stderr, "allreduce_mpi: Weft sees rank %d of %d\n", wrank, wsize);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0)
    printf("# %d ranks, %d rounds, medians; bandwidth = bytes / time\n",
           size, rounds);
  static const int64_t sizes[] = {1 << 10, 1 << 16, 1 << 20, 16 << 20,
                                  64 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    const int64_t bytes = sizes[k], n = bytes / 4;
    float* data = malloc((size_t)bytes);
    float* work = malloc((size_t)bytes);
    for (int64_t i = 0; i < n; ++i) data[i] = (float)(i % 97) + rank;
    for (int op = 0; op < 2; ++op) {
      const char* name = op == 0 ? "AllReduce" : "Broadcast";
      weft_graph* g = NULL;
      die(weft_graph_create(&g), "graph");
      weft_output x, y;
      die(weft_graph_placeholder(g, "x", WEFT_FLOAT32, &n, 1, &x), "x");
      weft_op_builder* b = weft_op_begin(g, name, "y");
      weft_op_add_input(b, x);
      weft_node* node = NULL;
      die(weft_op_finish(b, &node), name);
      y = (weft_output){node, 0};
      weft_session_options o;
      weft_session_options_init(&o);
      o.devices = "CPU";
      o.inter_op_threads = 1;
      o.intra_op_threads = 1;
      weft_session* s = NULL;
      die(weft_session_create(g, &o, &s), "session");
      weft_tensor* xt = NULL;
      die(weft_tensor_create_from_data(WEFT_FLOAT32, &n, 1, data,
                                       (size_t)bytes, NULL, NULL, &xt),
          "tensor");
      double* tw = malloc(sizeof(double) * (size_t)rounds);
      double* tm = malloc(sizeof(double) * (size_t)rounds);
      double* tn = malloc(sizeof(double) * (size_t)rounds);
      for (int r = -2; r < rounds; ++r) {  /* two warm-up rounds */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        weft_tensor* out = NULL;
        die(weft_session_run(s, &x, &xt, 1, &y, 1, NULL, 0, &out), "run");
        double t1 = now();
        weft_tensor_destroy(out);
        MPI_Barrier(MPI_COMM_WORLD);
        memcpy(work, data, (size_t)bytes);
        double t2 = now();
        if (op == 0)
          MPI_Allreduce(MPI_IN_PLACE, work, (int)n, MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        else
          MPI_Bcast(work, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        double t3 = now();
        /* The non-blocking form Weft's module uses, tested until done. */
        MPI_Barrier(MPI_COMM_WORLD);
        memcpy(work, data, (size_t)bytes);
        double t4 = now();
        MPI_Request req;
        if (op == 0)
          MPI_Iallreduce(MPI_IN_PLACE, work, (int)n, MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD, &req);
        else
          MPI_Ibcast(work, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
        int flag = 0;
        while (!flag) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        double t5 = now();
        if (r >= 0) {
          tw[r] = t1 - t0;
          tm[r] = t3 - t2;
          tn[r] = t5 - t4;
        }
      }
      /* The slowest rank's medians: a collective ends when all have. */
      double mw = median(tw, rounds), mm = median(tm, rounds),
             mn = median(tn, rounds), w, m, nb;
      MPI_Allreduce(&mw, &w, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&mm, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&mn, &nb, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0)
        printf("%-9s %9lld B: Weft %9.1f us %7.1f MB/s | MPI blocking %9.1f "
               "us %7.1f MB/s | non-blocking %9.1f us | Weft/MPI %.2f, "
               "Weft/non-blocking %.2f\n", name, (long long)bytes, w * 1e6,
               bytes / w / 1e6, m * 1e6, bytes / m / 1e6, nb * 1e6, m / w,
               nb / w);
      free(tw);
      free(tm);
      free(tn);
      weft_tensor_destroy(xt);
      weft_session_destroy(s);
      weft_graph_destroy(g);
    }
    free(data);
    free(work);
  }
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
