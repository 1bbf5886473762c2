/* TAP for programs run under mpirun: rank 0 prints the plan and each
 * case's line; another rank prints only its failures (to stderr) and
 * exits 1, so that mpirun fails too.  Shared by the tests in tests/mpi. */
#ifndef WEFT_TESTS_MPI_TAP_H_
#define WEFT_TESTS_MPI_TAP_H_

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

static int g_rank = 0, g_size = 1, g_case = 0, g_failed = 0;
static char g_why[1024];

static inline void report(const char* name, int ok) {
  ++g_case;
  if (!ok) ++g_failed;
  if (g_rank == 0 && ok && strncmp(g_why, "skipped:", 8) == 0) {
    printf("ok %d - %s # SKIP %s\n", g_case, name, g_why);
    fflush(stdout);
  } else if (g_rank == 0) {
    printf("%s %d - %s\n", ok ? "ok" : "not ok", g_case, name);
    if (!ok) printf("# %s\n", g_why);
    fflush(stdout);
  } else if (!ok) {
    fprintf(stderr, "rank %d: not ok - %s: %s\n", g_rank, name, g_why);
  }
  g_why[0] = '\0';
}

static inline int fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_why, sizeof g_why, fmt, ap);
  va_end(ap);
  return 0;
}

/* Whether `st` is an error of `code` whose message holds `text`; records
 * why not.  Destroys `st`. */
static inline int expect_error(weft_status* st, weft_code code,
                               const char* text, const char* what) {
  if (st == NULL) return fail("%s: succeeded", what);
  int ok = weft_status_code(st) == code &&
           strstr(weft_status_message(st), text) != NULL;
  if (!ok)
    fail("%s: got %s '%s', wanted %s containing '%s'", what,
         weft_code_name(weft_status_code(st)), weft_status_message(st),
         weft_code_name(code), text);
  weft_status_destroy(st);
  return ok;
}

/* Checks a call; on error records the message and returns 0. */
#define TRY(call)                                                          \
  do {                                                                     \
    weft_status* st_ = (call);                                             \
    if (st_ != NULL) {                                                     \
      fail("%s: %s", #call, weft_status_message(st_));                     \
      weft_status_destroy(st_);                                            \
      return 0;                                                            \
    }                                                                      \
  } while (0)

/* In a function returning a status: passes an error on. */
#define WEFT_RETURN_IF_ERROR_IN_TEST(call) \
  do {                                     \
    weft_status* st_ = (call);             \
    if (st_ != NULL) return st_;           \
  } while (0)

static inline weft_output constant(weft_graph* g, weft_dtype dtype,
                            const int64_t* dims, int32_t rank,
                            const void* data, size_t bytes) {
  weft_tensor* t = NULL;
  weft_output out = {NULL, 0};
  if (weft_tensor_create_copy(dtype, dims, rank, data, bytes, &t) != NULL)
    return out;
  if (weft_graph_constant(g, NULL, t, &out) != NULL) out.node = NULL;
  weft_tensor_destroy(t);
  return out;
}

/* The world, and the TAP plan of `cases` cases; 0 (having printed why)
 * when the world is not what mpirun was told to start. */
static inline int tap_start(int expected, int cases) {
  int32_t rank = 0, size = 1;
  weft_status* st = weft_cluster_world(&rank, &size);
  if (st != NULL) {
    printf("1..1\nnot ok 1 - world: %s\n", weft_status_message(st));
    weft_status_destroy(st);
    return 0;
  }
  g_rank = rank;
  g_size = size;
  if (g_rank == 0) printf("1..%d\n# %d rank(s)\n", cases, g_size);
  if (size != expected) {
    if (g_rank == 0) printf("# started with %d rank(s), expected %d\n", size,
                            expected);
  }
  return 1;
}

/* Every rank waits here for the others (an AllReduce in an ordinary
 * session). */
static inline int barrier(void) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float one = 1;
  weft_output c = constant(g, WEFT_FLOAT32, NULL, 0, &one, sizeof one), y;
  TRY(weft_graph_apply(g, "AllReduce", NULL, &c, 1, &y));
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  weft_session* s = NULL;
  TRY(weft_session_create(g, &o, &s));
  weft_tensor* out = NULL;
  TRY(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &out));
  weft_tensor_destroy(out);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return 1;
}

#endif  /* WEFT_TESTS_MPI_TAP_H_ */
