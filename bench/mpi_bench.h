/* What the MPI benchmarks share: a clock, medians, and ending the whole
 * job on an error. */
#ifndef WEFT_BENCH_MPI_BENCH_H_
#define WEFT_BENCH_MPI_BENCH_H_

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "weft/weft.h"

static inline double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static inline int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static inline double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* Ends every rank (MPI_Abort) when `st` is an error. */
static inline void die_on(weft_status* st, const char* program,
                          const char* what) {
  if (st == NULL) return;
  fprintf(stderr, "%s: %s: %s\n", program, what, weft_status_message(st));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

#endif  /* WEFT_BENCH_MPI_BENCH_H_ */
