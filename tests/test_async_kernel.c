/* Asynchronous kernels (plugin interface 1.5: weft_kernel_def.compute_async,
 * weft_host_api.kernel_defer and kernel_done), written here as a program's
 * kernel for the op Test>Later (y = x + 1, completed later by a thread of
 * the test).  What is checked: kernels that wait hold no thread of the run
 * (eight of them wait for each other on one and on two inter-op threads,
 * which would deadlock if any held its thread), in a plain graph and in a
 * while loop; a deadline and weft_session_cancel reach a waiting kernel
 * through its cancel function, once, and leave the session usable; a
 * kernel's error, a done without outputs, a kernel that does not defer,
 * misuse of defer (twice, outside compute_async, done without defer); and
 * a def of the 1.4 size, whose compute_async the host does not see. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "test_support.h"
#include "weft/plugin.h"
#include "weft/weft.h"

enum mode {
  kBarrier = 0,     /* defer; all complete once `barrier` calls have deferred */
  kNever = 1,       /* defer; complete (CANCELLED) only when cancelled */
  kFail = 2,        /* defer; complete with an error */
  kSync = 3,        /* no defer: complete before returning */
  kNoOutput = 4,    /* defer; complete with success but no output */
  kDeferTwice = 5,  /* defer twice (the second is refused), then complete */
  kDoneEarly = 6    /* kernel_done without kernel_defer */
};

/* ---- The test's side of the kernels: waiting calls and who ends them ---- */

#define kMaxWaiting 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct waiting {
  weft_kernel_context* ctx;
  int mode;
  int cancelled;
} waiting[kMaxWaiting];
static int num_waiting;    /* deferred calls not yet completed */
static int64_t barrier = 1;
static int cancel_calls;   /* cancel functions the host called */
static int compute_calls;  /* plain `compute` calls (the 1.4-size def) */
static weft_code second_defer_code = WEFT_OK;
static int stop_completer;
static pthread_t completer;

static const weft_host_api* host(void) { return weft_kernel_host(); }

/* y = x + 1 into output 0. */
static weft_status* write_output(weft_kernel_context* ctx) {
  weft_kernel_tensor x, y;
  x.struct_size = sizeof x;
  y.struct_size = sizeof y;
  weft_status* st = host()->kernel_input(ctx, 0, &x);
  if (st) return st;
  st = host()->kernel_allocate_output(ctx, 0, x.dtype, x.dims, x.rank, &y);
  if (st) return st;
  const float* in = (const float*)((const char*)x.data + x.offset);
  float* out = (float*)((char*)y.data + y.offset);
  for (int64_t i = 0; i < x.element_count; ++i) out[i] = in[i] + 1;
  return NULL;
}

static void complete(const struct waiting* w) {
  weft_status* st = NULL;
  if (w->cancelled)
    st = host()->status_create(WEFT_CANCELLED, "Test>Later: cancelled");
  else if (w->mode == kFail)
    st = host()->status_create(WEFT_INVALID_ARGUMENT,
                               "Test>Later: the disk is on fire");
  else if (w->mode != kNoOutput)
    st = write_output(w->ctx);
  host()->kernel_done(w->ctx, st);
}

/* A thread of the test (not of the run): completes the waiting calls that
 * may complete now, outside the lock, as a device's or peer's callback
 * would. */
static void* completer_main(void* arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    struct waiting ready[kMaxWaiting];
    int n = 0;
    for (int i = 0; i < num_waiting;) {
      struct waiting* w = &waiting[i];
      int go = w->cancelled || w->mode == kFail || w->mode == kNoOutput ||
               w->mode == kDeferTwice ||
               (w->mode == kBarrier && num_waiting >= barrier);
      if (go) {
        ready[n++] = *w;
        waiting[i] = waiting[--num_waiting];
      } else {
        ++i;
      }
    }
    if (n == 0) {
      if (stop_completer) break;
      pthread_cond_wait(&cv, &mu);
      continue;
    }
    /* A barrier, once reached, lets every call of its round go. */
    if (ready[0].mode == kBarrier) barrier = 1;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; ++i) complete(&ready[i]);
    pthread_mutex_lock(&mu);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void on_cancel(void* arg) {
  weft_kernel_context* ctx = arg;
  pthread_mutex_lock(&mu);
  cancel_calls++;
  for (int i = 0; i < num_waiting; ++i)
    if (waiting[i].ctx == ctx) waiting[i].cancelled = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static weft_status* later_async(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  int64_t mode = 0;
  weft_status* st = host()->kernel_attr_int(ctx, "mode", &mode);
  if (st) return st;
  if (mode == kSync) return write_output(ctx);
  if (mode == kDoneEarly) {
    host()->kernel_done(ctx, NULL);
    return NULL;
  }
  st = host()->kernel_defer(ctx, on_cancel, ctx);
  if (st) return st;
  if (mode == kDeferTwice) {
    weft_status* again = host()->kernel_defer(ctx, on_cancel, ctx);
    second_defer_code = (weft_code)host()->status_code(again);
    host()->status_destroy(again);
  }
  pthread_mutex_lock(&mu);
  if (num_waiting < kMaxWaiting)
    waiting[num_waiting++] = (struct waiting){ctx, (int)mode, 0};
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  /* Returned after deferring: the host destroys this unread. */
  return host()->status_create(WEFT_INTERNAL, "ignored after kernel_defer");
}

/* The blocking entry point a host older than 1.5 would call. */
static weft_status* later_sync(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  pthread_mutex_lock(&mu);
  compute_calls++;
  pthread_mutex_unlock(&mu);
  return write_output(ctx);
}

/* A synchronous kernel that tries to defer: refused. */
static weft_status* plain_defers(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  return host()->kernel_defer(ctx, NULL, NULL);
}

static void register_op(const char* name, weft_kernel_compute_fn compute,
                        weft_kernel_compute_fn compute_async, size_t size) {
  weft_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = size;
  k.compute = compute;
  k.compute_async = compute_async;
  wt_register_mode_op(name, "x + 1, later", 1, &k);
}

static void setup(void) {
  register_op("Test>Later", later_sync, later_async, sizeof(weft_kernel_def));
  register_op("Test>PlainDefers", plain_defers, NULL,
              sizeof(weft_kernel_def));
  /* A def built against the 1.4 header: no compute_async field. */
  register_op("Test>OldLater", later_sync, later_async,
              offsetof(weft_kernel_def, compute_async));
  cr_assert_eq(pthread_create(&completer, NULL, completer_main, NULL), 0);
}

static void teardown(void) {
  pthread_mutex_lock(&mu);
  stop_completer = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(completer, NULL);
}

TestSuite(async_kernel, .init = setup, .fini = teardown);

static weft_session* session_with(weft_graph* g, int32_t inter_op) {
  return wt_session_threads(g, inter_op, 1);
}

static weft_status* run_with_timeout(weft_session* s, const weft_output* f,
                                     int32_t n, int64_t timeout_ms,
                                     weft_tensor** out) {
  weft_run_options o;
  weft_run_options_init(&o);
  o.timeout_ms = timeout_ms;
  return weft_session_run_with_options(s, &o, NULL, NULL, 0, f, n, NULL, 0,
                                       out, NULL);
}

static float value_of(weft_tensor* t) {
  float v = *(const float*)weft_tensor_data(t);
  weft_tensor_destroy(t);
  return v;
}

/* Eight kernels that complete only when all eight have deferred: with one
 * or two inter-op threads, a kernel that held its thread while waiting
 * would stop the others from starting (the run would then reach its
 * deadline). */
static void eight_wait_for_each_other(int32_t inter_op) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_const_f32(g, "x", NULL, 0, (float[]){10});
  weft_output y[8];
  for (int i = 0; i < 8; ++i) {
    char name[16];
    snprintf(name, sizeof name, "wait%d", i);
    y[i] = wt_apply_mode(g, "Test>Later", name, x, kBarrier);
  }
  weft_session* s = session_with(g, inter_op);
  for (int round = 0; round < 3; ++round) {
    pthread_mutex_lock(&mu);
    barrier = 8;
    pthread_mutex_unlock(&mu);
    weft_tensor* out[8] = {NULL};
    WT_OK(run_with_timeout(s, y, 8, 20000, out));
    for (int i = 0; i < 8; ++i) {
      float v = value_of(out[i]);
      cr_expect_float_eq(v, 11, 0);
    }
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(async_kernel, waiting_kernels_hold_no_thread_one_inter_op_thread) {
  eight_wait_for_each_other(1);
}

Test(async_kernel, waiting_kernels_hold_no_thread_two_inter_op_threads) {
  eight_wait_for_each_other(2);
}

/* ---- In a while loop: i < 5; (i, x) = (i + 1, Later(x)) ----------------- */

static weft_status* five_cond(weft_graph* g, void* user, const weft_output* v,
                              int32_t n, weft_output* pred) {
  (void)user;
  (void)n;
  int32_t five = 5;
  weft_tensor* t = wt_tensor(WEFT_INT32, NULL, 0, &five);
  weft_output limit = wt_const(g, NULL, t);
  *pred = wt_apply2(g, "Less", NULL, v[0], limit);
  return NULL;
}

static weft_status* later_body(weft_graph* g, void* user, const weft_output* v,
                               int32_t n, weft_output* next) {
  (void)user;
  (void)n;
  int32_t one = 1;
  weft_tensor* t = wt_tensor(WEFT_INT32, NULL, 0, &one);
  weft_output c = wt_const(g, NULL, t);
  next[0] = wt_apply2(g, "Add", NULL, v[0], c);
  next[1] = wt_apply_mode(g, "Test>Later", NULL, v[1], kBarrier);
  return NULL;
}

Test(async_kernel, in_a_while_loop) {
  weft_graph* g = wt_graph_new();
  int32_t zero = 0;
  weft_tensor* t = wt_tensor(WEFT_INT32, NULL, 0, &zero);
  weft_output init[2] = {wt_const(g, "i0", t),
                         wt_const_f32(g, "x0", NULL, 0, (float[]){2})};
  weft_output out[2];
  WT_OK(weft_while_loop(g, five_cond, later_body, NULL, init, 2, NULL, out));
  for (int32_t inter_op = 1; inter_op <= 2; ++inter_op) {
    weft_session* s = session_with(g, inter_op);
    weft_tensor* r = NULL;
    WT_OK(run_with_timeout(s, &out[1], 1, 20000, &r));
    {
      float v = value_of(r);
      cr_expect_float_eq(v, 7, 0);
    }
    weft_session_destroy(s);
  }
  weft_graph_destroy(g);
}

/* ---- Cancellation ------------------------------------------------------- */

Test(async_kernel, deadline_reaches_a_waiting_kernel_once) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_const_f32(g, "x", NULL, 0, (float[]){1});
  weft_output never = wt_apply_mode(g, "Test>Later", "never", x, kNever);
  weft_output soon = wt_apply_mode(g, "Test>Later", "soon", x, kSync);
  for (int32_t inter_op = 1; inter_op <= 2; ++inter_op) {
    weft_session* s = session_with(g, inter_op);
    pthread_mutex_lock(&mu);
    cancel_calls = 0;
    pthread_mutex_unlock(&mu);
    weft_tensor* out = NULL;
    WT_EXPECT_ERROR(run_with_timeout(s, &never, 1, 150, &out),
                    WEFT_DEADLINE_EXCEEDED, "deadline");
    cr_expect_null(out);
    pthread_mutex_lock(&mu);
    cr_expect_eq(cancel_calls, 1, "cancel called %d times", cancel_calls);
    cr_expect_eq(num_waiting, 0, "the cancelled call is still waiting");
    pthread_mutex_unlock(&mu);
    /* The session goes on. */
    WT_OK(run_with_timeout(s, &soon, 1, 0, &out));
    {
      float v = value_of(out);
      cr_expect_float_eq(v, 2, 0);
    }
    weft_session_destroy(s);
  }
  weft_graph_destroy(g);
}

struct canceller {
  weft_session* session;
  int32_t reached;
};

static void* cancel_when_waiting(void* arg) {
  struct canceller* c = arg;
  for (;;) {
    pthread_mutex_lock(&mu);
    int n = num_waiting;
    pthread_mutex_unlock(&mu);
    if (n > 0) break;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  c->reached = weft_session_cancel(c->session);
  return NULL;
}

Test(async_kernel, session_cancel_reaches_a_waiting_kernel) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_const_f32(g, "x", NULL, 0, (float[]){1});
  weft_output never = wt_apply_mode(g, "Test>Later", "never", x, kNever);
  weft_session* s = session_with(g, 2);
  struct canceller c = {s, 0};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, cancel_when_waiting, &c), 0);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &never, 1, NULL, 0, &out),
                  WEFT_CANCELLED, "cancel");
  pthread_join(t, NULL);
  cr_expect_eq(c.reached, 1);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

/* ---- Results and misuse ------------------------------------------------- */

Test(async_kernel, errors_and_misuse_fail_the_run_naming_the_node) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_const_f32(g, "x", WT_DIMS(3), 1, (float[]){1, 2, 3});
  weft_output fail = wt_apply_mode(g, "Test>Later", "fails", x, kFail);
  weft_output none = wt_apply_mode(g, "Test>Later", "no_output", x, kNoOutput);
  weft_output sync = wt_apply_mode(g, "Test>Later", "sync", x, kSync);
  weft_output twice = wt_apply_mode(g, "Test>Later", "twice", x, kDeferTwice);
  weft_output early = wt_apply_mode(g, "Test>Later", "early", x, kDoneEarly);
  weft_output plain = wt_apply_mode(g, "Test>PlainDefers", "plain", x, 0);
  weft_session* s = session_with(g, 2);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_with_timeout(s, &fail, 1, 20000, &out),
                  WEFT_INVALID_ARGUMENT, "the disk is on fire");
  WT_EXPECT_ERROR(run_with_timeout(s, &fail, 1, 20000, &out),
                  WEFT_INVALID_ARGUMENT, "fails");
  WT_EXPECT_ERROR(run_with_timeout(s, &none, 1, 20000, &out),
                  WEFT_INTERNAL, "no_output");
  WT_EXPECT_ERROR(run_with_timeout(s, &early, 1, 20000, &out),
                  WEFT_INTERNAL, "kernel_done without kernel_defer");
  WT_EXPECT_ERROR(run_with_timeout(s, &plain, 1, 20000, &out),
                  WEFT_FAILED_PRECONDITION, "outside compute_async");
  cr_expect_null(out);
  /* A kernel that completes before returning, and one whose second defer
   * was refused, give their values. */
  WT_OK(run_with_timeout(s, &sync, 1, 20000, &out));
  const double want[] = {2, 3, 4};
  wt_expect_f32(out, want, 3, 0, 0);
  weft_tensor_destroy(out);
  WT_OK(run_with_timeout(s, &twice, 1, 20000, &out));
  wt_expect_f32(out, want, 3, 0, 0);
  weft_tensor_destroy(out);
  cr_expect_eq(second_defer_code, WEFT_FAILED_PRECONDITION);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}

Test(async_kernel, a_def_of_the_old_size_runs_compute) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_const_f32(g, "x", NULL, 0, (float[]){4});
  /* kNever would wait forever if the host called compute_async. */
  weft_output y = wt_apply_mode(g, "Test>OldLater", "old", x, kNever);
  weft_session* s = session_with(g, 1);
  weft_tensor* out = NULL;
  WT_OK(run_with_timeout(s, &y, 1, 20000, &out));
  {
      float v = value_of(out);
      cr_expect_float_eq(v, 5, 0);
    }
  cr_expect_eq(compute_calls, 1);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}
