/* What two threads can gain on this machine at best: a loop of
 * register-only fused multiply-adds (no memory traffic, no sharing, no
 * synchronisation inside a window) timed on one thread, then on two
 * threads doing that work each, in many short windows; the ratio of
 * throughputs, 2 * t1 / t2, is 2.0 on two free cores.  On a virtual machine
 * whose host shares its cores it is less, and it moves from window to
 * window: a 2-thread training step, which also moves data between cores and
 * waits at every kernel's join, cannot scale better than this.
 * scripts/bench.sh prints it beside the paired 2-against-1 figures.
 *
 *   cpu_ceiling [WINDOWS [MILLISECONDS]]   (41 windows of ~10 ms)
 *
 * Prints one line: the median ratio and its quartiles, and the 1-thread
 * rate in GFLOP/s with the vector width used (AVX-512, AVX2 + FMA, or SSE2
 * multiply and add), chosen at run time: the program is built for
 * baseline x86-64 like everything Weft ships. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Ten independent chains per iteration: more than the FMA latency times
 * the ports, so the loop runs at the units' throughput. */
#define CHAINS 10
/* Each thread's own: the two run the kernel at once. */
static _Thread_local volatile float sink;

#if defined(__x86_64__)
/* The chains as ten named variables: an array of them was kept partly in
 * memory (157 against 250 GFLOP/s on AVX-512). */
#define STEP10(F)                                                      \
  a0 = F(a0, m, b); a1 = F(a1, m, b); a2 = F(a2, m, b);                \
  a3 = F(a3, m, b); a4 = F(a4, m, b); a5 = F(a5, m, b);                \
  a6 = F(a6, m, b); a7 = F(a7, m, b); a8 = F(a8, m, b); a9 = F(a9, m, b)
#define SUM10(ADD)                                                     \
  ADD(ADD(ADD(a0, a1), ADD(a2, a3)),                                   \
      ADD(ADD(ADD(a4, a5), ADD(a6, a7)), ADD(a8, a9)))

__attribute__((target("avx512f"))) static void fma512(int64_t n) {
  const __m512 m = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  __m512 a0 = _mm512_set1_ps(0.1f), a1 = a0, a2 = a0, a3 = a0, a4 = a0,
         a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  for (int64_t i = 0; i < n; ++i) {
    STEP10(_mm512_fmadd_ps);
  }
  sink = _mm512_reduce_add_ps(SUM10(_mm512_add_ps));
}

__attribute__((target("avx2,fma"))) static void fma256(int64_t n) {
  const __m256 m = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  __m256 a0 = _mm256_set1_ps(0.1f), a1 = a0, a2 = a0, a3 = a0, a4 = a0,
         a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  for (int64_t i = 0; i < n; ++i) {
    STEP10(_mm256_fmadd_ps);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, SUM10(_mm256_add_ps));
  sink = lanes[0] + lanes[7];
}
#endif

/* Baseline: a multiply and an add per element (SSE2 on x86-64). */
static void muladd128(int64_t n) {
  float a[CHAINS][4];
  for (int c = 0; c < CHAINS; ++c)
    for (int l = 0; l < 4; ++l) a[c][l] = 0.1f * (float)(c + l);
  for (int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < CHAINS; ++c)
      for (int l = 0; l < 4; ++l) a[c][l] = a[c][l] * 0.999999f + 1e-7f;
  }
  float s = 0;
  for (int c = 0; c < CHAINS; ++c) s += a[c][0] + a[c][3];
  sink = s;
}

static void (*kernel)(int64_t);
static int flops_per_iteration; /* per chain step, all chains */

/* The second thread: waits at the barrier with the first, so that its
 * start-up is not timed, then runs the window. */
struct window {
  int64_t n;
  pthread_barrier_t start;
};

static void* run(void* arg) {
  struct window* w = arg;
  pthread_barrier_wait(&w->start);
  kernel(w->n);
  return NULL;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const int windows = argc > 1 ? atoi(argv[1]) : 41;
  const double window_ms = argc > 2 ? atof(argv[2]) : 10.0;
  if (windows < 3 || windows > 100000 || !(window_ms >= 0.1) ||
      window_ms > 10000) {
    fprintf(stderr, "usage: cpu_ceiling [WINDOWS (3..100000) "
                    "[MILLISECONDS (0.1..10000)]]\n");
    return 2;
  }
  const char* isa = "SSE2 multiply + add";
  kernel = muladd128;
  flops_per_iteration = CHAINS * 4 * 2;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    isa = "AVX-512 FMA";
    kernel = fma512;
    flops_per_iteration = CHAINS * 16 * 2;
  } else if (__builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma")) {
    isa = "AVX2 FMA";
    kernel = fma256;
    flops_per_iteration = CHAINS * 8 * 2;
  }
#endif
  /* Iterations for one window on one thread, from a short calibration. */
  int64_t n = 1 << 16;
  for (;;) {
    const double t0 = now_s();
    kernel(n);
    const double t = now_s() - t0;
    if (t > 2e-3 || n > ((int64_t)1 << 40)) {
      n = (int64_t)((double)n * window_ms * 1e-3 / t) + 1;
      break;
    }
    n *= 4;
  }
  double* ratio = malloc(sizeof(double) * (size_t)windows);
  double* rate = malloc(sizeof(double) * (size_t)windows);
  if (ratio == NULL || rate == NULL) {
    fprintf(stderr, "cpu_ceiling: out of memory\n");
    return 1;
  }
  for (int w = 0; w < windows; ++w) {
    double t0 = now_s();
    kernel(n);
    const double one = now_s() - t0;
    struct window both = {.n = n};
    pthread_t other;
    if (pthread_barrier_init(&both.start, NULL, 2) != 0 ||
        pthread_create(&other, NULL, run, &both) != 0) {
      fprintf(stderr, "cpu_ceiling: cannot start a thread\n");
      return 1;
    }
    pthread_barrier_wait(&both.start);
    t0 = now_s();
    kernel(n);
    pthread_join(other, NULL);
    const double two = now_s() - t0;
    pthread_barrier_destroy(&both.start);
    ratio[w] = 2 * one / two;
    rate[w] = (double)n * flops_per_iteration / one * 1e-9;
  }
  qsort(ratio, (size_t)windows, sizeof *ratio, by_value);
  qsort(rate, (size_t)windows, sizeof *rate, by_value);
  printf("CPU ceiling (%s, registers only): 2 threads %.2fx one "
         "(quartiles %.2f - %.2f, %d windows of ~%.3g ms); 1 thread %.0f "
         "GFLOP/s\n",
         isa, ratio[windows / 2], ratio[windows / 4],
         ratio[windows - 1 - windows / 4], windows, window_ms,
         rate[windows / 2]);
  free(ratio);
  free(rate);
  return 0;
}
