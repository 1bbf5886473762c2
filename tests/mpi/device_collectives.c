/* Collectives run by a device's own plugin (plugin interface 1.7), under
 * `mpirun -np N` (N as argv[1] too) and alone, without a GPU: the test
 * plugin tests/plugins/plugin_collectives.c runs AllReduce and Broadcast
 * over shared memory and counts its slots' calls.  Each case builds a
 * graph whose collectives take values made on the device under test (by
 * its Neg kernel) and the same values made on the CPU, whose collectives
 * go through MPI, and checks that both give the same bytes, and which
 * path the device's took: the plugin's slots, MPI (a plugin without them,
 * one offering them only at interface 1.6, a device no rank can use), or
 * a clear refusal on every rank (a device only some ranks can use, a rank
 * that fails to join).  Rank 0 prints TAP; another rank prints its
 * failures to stderr and exits 1.
 *
 * `N --device /device:CUDA:0` instead runs the first case's collectives on
 * that device, whatever its plugin, against the CPU's (tests/gpu/run.sh:
 * NCCL on a GPU). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_tap.h"

/* The devices sessions may use. */
static const char* g_devices = "CPU,COLLTEST,COLLNONE,COLLOLD";

/* ---- The plugin's call counts ---- */

struct calls {
  int id, probe, create, reduce, bcast, destroy;
};

/* Where the plugin of device type `type` writes its counts: a file of
 * this process's, named to it by the environment before it loads. */
static void calls_path(const char* type, char* out, size_t n) {
  snprintf(out, n, "/tmp/weft-test-calls-%ld-%s", (long)getpid(), type);
}

static void remove_calls_files(void) {
  const char* types[] = {"COLLTEST", "COLLOLD"};
  for (int k = 0; k < 2; ++k) {
    char path[128];
    calls_path(types[k], path, sizeof path);
    remove(path);
  }
}

static void name_calls_files(void) {
  const char* types[] = {"COLLTEST", "COLLOLD"};
  for (int k = 0; k < 2; ++k) {
    char var[64], path[128];
    snprintf(var, sizeof var, "WEFT_TEST_CALLS_%s", types[k]);
    calls_path(types[k], path, sizeof path);
    setenv(var, path, 1);
  }
  /* Registered before any communicator exists, so it runs after the
   * runtime destroys them at exit (which the plugin counts). */
  atexit(remove_calls_files);
}

/* The counts of device `index` of the plugin whose device type is `type`
 * (all zero before its first call). */
static int calls_of(const char* type, int index, struct calls* out) {
  memset(out, 0, sizeof *out);
  char path[128], text[1024] = {0};
  calls_path(type, path, sizeof path);
  FILE* f = fopen(path, "r");
  if (f == NULL) return 1;
  size_t got = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[got] = '\0';
  char key[16];
  snprintf(key, sizeof key, "d%d ", index);
  const char* at = strstr(text, key);
  if (at == NULL) return fail("%s has no device %d: %s", path, index, text);
  if (sscanf(at + strlen(key),
             "id=%d probe=%d create=%d reduce=%d bcast=%d destroy=%d",
             &out->id, &out->probe, &out->create, &out->reduce, &out->bcast,
             &out->destroy) != 6)
    return fail("%s does not parse: %s", path, text);
  return 1;
}

static int expect_calls(const char* type, int index, struct calls want) {
  struct calls got;
  if (!calls_of(type, index, &got)) return 0;
  if (memcmp(&got, &want, sizeof got) != 0)
    return fail("%s:%d calls: id=%d probe=%d create=%d reduce=%d bcast=%d "
                "destroy=%d, expected id=%d probe=%d create=%d reduce=%d "
                "bcast=%d destroy=%d", type, index, got.id, got.probe,
                got.create, got.reduce, got.bcast, got.destroy, want.id,
                want.probe, want.create, want.reduce, want.bcast,
                want.destroy);
  return 1;
}

/* ---- Graphs ---- */

static weft_output neg_on(weft_graph* g, weft_output x, const char* device,
                          weft_status** st) {
  weft_op_builder* b = weft_op_begin(g, "Neg", NULL);
  weft_op_add_input(b, x);
  weft_op_set_device(b, device);
  weft_node* n = NULL;
  *st = weft_op_finish(b, &n);
  return (weft_output){n, 0};
}

/* AllReduce (`reduction` non-NULL) or Broadcast (from `root`) of x, placed
 * where x is. */
static weft_output collective(weft_graph* g, weft_output x,
                              const char* reduction, int root,
                              weft_status** st) {
  weft_op_builder* b =
      weft_op_begin(g, reduction != NULL ? "AllReduce" : "Broadcast", NULL);
  weft_op_add_input(b, x);
  if (reduction != NULL) weft_op_set_attr_string(b, "reduction", reduction);
  else weft_op_set_attr_int(b, "root", root);
  weft_node* n = NULL;
  *st = weft_op_finish(b, &n);
  return (weft_output){n, 0};
}

enum { MAX_PAIRS = 16 };

/* Pairs of outputs, [2k] on the device under test and [2k+1] on the CPU,
 * of the same collective of the same values, created interleaved (the
 * device's and MPI's collectives start in one order); how many of them
 * are AllReduces and Broadcasts. */
struct pairs {
  weft_output out[2 * MAX_PAIRS];
  int n, reduces, bcasts;
};

static int add_pair(weft_graph* g, struct pairs* p, const char* device,
                    weft_output x, const char* reduction, int root) {
  weft_status* st = NULL;
  weft_output on_device = neg_on(g, x, device, &st);
  TRY(st);
  weft_output on_cpu = neg_on(g, x, "/device:CPU:0", &st);
  TRY(st);
  p->out[2 * p->n] = collective(g, on_device, reduction, root, &st);
  TRY(st);
  p->out[2 * p->n + 1] = collective(g, on_cpu, reduction, root, &st);
  TRY(st);
  ++p->n;
  if (reduction != NULL) ++p->reduces;
  else ++p->bcasts;
  return 1;
}

/* Sums and means of every dtype AllReduce takes (a float64 vector of
 * 160 KB, more than one of the plugin's 64 KiB steps), Broadcasts from
 * the first and the last rank.  Values are exact in their dtype, so every
 * order of summing gives the same bytes. */
static int build(weft_graph* g, const char* device, struct pairs* p) {
  memset(p, 0, sizeof *p);
  enum { NF = 5, ND = 20000, NI = 7, NL = 3 };
  float xf[NF];
  static double xd[ND];
  int32_t xi[NI];
  int64_t xl[NL];
  for (int i = 0; i < NF; ++i) xf[i] = 0.5f * (float)((g_rank + 1) * (i + 1));
  for (int i = 0; i < ND; ++i) xd[i] = 0.25 * (g_rank * 1000 + i + 1);
  for (int i = 0; i < NI; ++i) xi[i] = g_rank * 100 - i;
  for (int i = 0; i < NL; ++i) xl[i] = ((int64_t)1 << 40) + g_rank * 7 + i;
  const int64_t nf = NF, nd = ND, ni = NI, nl = NL;
  weft_output f = constant(g, WEFT_FLOAT32, &nf, 1, xf, sizeof xf);
  weft_output d = constant(g, WEFT_FLOAT64, &nd, 1, xd, sizeof xd);
  weft_output i = constant(g, WEFT_INT32, &ni, 1, xi, sizeof xi);
  weft_output l = constant(g, WEFT_INT64, &nl, 1, xl, sizeof xl);
  if (!f.node || !d.node || !i.node || !l.node) return fail("constants");
  return add_pair(g, p, device, f, "sum", 0) &&
         add_pair(g, p, device, d, "sum", 0) &&
         add_pair(g, p, device, i, "sum", 0) &&
         add_pair(g, p, device, l, "sum", 0) &&
         add_pair(g, p, device, f, "mean", 0) &&
         add_pair(g, p, device, d, "mean", 0) &&
         add_pair(g, p, device, f, NULL, g_size - 1) &&
         add_pair(g, p, device, i, NULL, 0) &&
         add_pair(g, p, device, l, NULL, g_size - 1);
}

static weft_session* session(weft_graph* g) {
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = g_devices;
  o.inter_op_threads = 4;
  weft_session* s = NULL;
  weft_status* st = weft_session_create(g, &o, &s);
  if (st != NULL) {
    fail("session: %s", weft_status_message(st));
    weft_status_destroy(st);
    return NULL;
  }
  return s;
}

/* Runs the pairs `runs` times; every device output must equal its CPU
 * twin byte for byte, and the float32 sum its expected value. */
static int run_pairs(weft_graph* g, struct pairs* p, int runs) {
  weft_session* s = session(g);
  if (s == NULL) return 0;
  int ok = 1;
  for (int run = 0; run < runs && ok; ++run) {
    weft_tensor* got[2 * MAX_PAIRS] = {NULL};
    weft_status* st =
        weft_session_run(s, NULL, NULL, 0, p->out, 2 * p->n, NULL, 0, got);
    if (st != NULL) {
      ok = fail("run %d: %s", run, weft_status_message(st));
      weft_status_destroy(st);
      break;
    }
    for (int k = 0; k < p->n && ok; ++k) {
      size_t a = weft_tensor_byte_size(got[2 * k]);
      size_t b = weft_tensor_byte_size(got[2 * k + 1]);
      if (a != b || memcmp(weft_tensor_data(got[2 * k]),
                           weft_tensor_data(got[2 * k + 1]), a) != 0)
        ok = fail("run %d, pair %d: the device's collective differs from "
                  "MPI's on the CPU (%zu and %zu bytes)", run, k, a, b);
    }
    /* -sum over the ranks of 0.5 * (r + 1): the float32 sum's element 0. */
    const float* f = weft_tensor_data(got[0]);
    const float want = -0.25f * (float)(g_size * (g_size + 1));
    if (ok && f[0] != want)
      ok = fail("run %d: float32 sum %g, expected %g", run, f[0], want);
    for (int k = 0; k < 2 * p->n; ++k) weft_tensor_destroy(got[k]);
  }
  weft_session_destroy(s);
  return ok;
}

/* The collectives of build() on `device`, `runs` times. */
static int check_device(const char* device, int runs, struct pairs* p) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  int ok = build(g, device, p) && run_pairs(g, p, runs);
  weft_graph_destroy(g);
  return ok;
}

/* One AllReduce on `device`, which must fail on every rank with
 * FAILED_PRECONDITION containing `text`, twice (the device's path is kept). */
static int check_refused(const char* device, const char* text) {
  weft_graph* g = NULL;
  TRY(weft_graph_create(&g));
  const float one[2] = {1, 2};
  const int64_t two = 2;
  weft_status* st = NULL;
  weft_output x = neg_on(
      g, constant(g, WEFT_FLOAT32, &two, 1, one, sizeof one), device, &st);
  TRY(st);
  weft_output y = collective(g, x, "sum", 0, &st);
  TRY(st);
  weft_session* s = session(g);
  if (s == NULL) return 0;
  int ok = 1;
  for (int run = 0; run < 2 && ok; ++run) {
    weft_tensor* out = NULL;
    ok = expect_error(weft_session_run(s, NULL, NULL, 0, &y, 1, NULL, 0, &out),
                      WEFT_FAILED_PRECONDITION, text, device);
    weft_tensor_destroy(out);
  }
  weft_session_destroy(s);
  weft_graph_destroy(g);
  /* Nothing was left half done: the ranks are still in step. */
  return ok && barrier();
}

static struct calls bootstrap_only(void) {
  struct calls c = {0};
  if (g_size > 1) {
    c.id = g_rank == 0;
    c.probe = g_rank != 0;
  }
  return c;
}

/* `--device DEV`: the pairs of build() on DEV, whose plugin comes from
 * the plugin path. */
static int device_mode(int expected, const char* device) {
  static char devices[256];
  const char* type = strstr(device, "device:");
  snprintf(devices, sizeof devices, "CPU,%.*s", type == NULL ? 0 :
           (int)strcspn(type + 7, ":"), type == NULL ? "" : type + 7);
  g_devices = devices;
  if (!tap_start(expected, 1)) return 1;
  struct pairs p;
  char name[256];
  snprintf(name, sizeof name, "AllReduce and Broadcast on %s equal MPI's on "
           "the CPU over 10 runs", device);
  report(name, check_device(device, 10, &p));
  return g_failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const int expected = argc > 1 ? atoi(argv[1]) : 1;
  if (argc > 3 && strcmp(argv[2], "--device") == 0)
    return device_mode(expected, argv[3]);
  if (!tap_start(expected, 7)) return 1;
  report("the world has the ranks mpirun started",
         g_size == expected || fail("%d ranks", g_size));
  name_calls_files();
  const char* plugins[] = {WEFT_TEST_PLUGIN_COLLECTIVES,
                           WEFT_TEST_PLUGIN_COLLECTIVES_NONE,
                           WEFT_TEST_PLUGIN_COLLECTIVES_OLD};
  int loaded = 1;
  for (int k = 0; k < 3 && loaded; ++k) {
    weft_status* st = weft_plugin_load(plugins[k]);
    if (st != NULL) {
      loaded = fail("%s: %s", plugins[k], weft_status_message(st));
      weft_status_destroy(st);
    }
  }
  if (!loaded) {
    report("the test plugins load", 0);
    return 1;
  }
  const int alone = g_size == 1;  /* no MPI: every collective the identity */
  enum { RUNS = 10 };
  struct pairs p;

  {
    int ok = check_device("/device:COLLTEST:0", RUNS, &p);
    struct calls want = bootstrap_only();
    if (!alone) {
      want.create = 1;
      want.reduce = RUNS * p.reduces;
      want.bcast = RUNS * p.bcasts;
    }
    ok = ok && expect_calls("COLLTEST", 0, want);
    report("AllReduce and Broadcast on a device with the 1.7 slots go "
           "through them, one communicator, equal to MPI's over 10 runs",
           ok);
  }
  report("a 1.7 plugin without the slots: MPI, equal results",
         check_device("/device:COLLNONE:0", 2, &p));
  {
    int ok = check_device("/device:COLLOLD:0", 2, &p);
    struct calls none = {0};
    ok = ok && expect_calls("COLLOLD", 0, none);
    report("a plugin choosing 1.6 with the slots in its table: MPI, the "
           "slots never called", ok);
  }
  {
    int ok = check_device("/device:COLLTEST:2", 2, &p);
    ok = ok && expect_calls("COLLTEST", 2, bootstrap_only());
    report("a device no rank can use: MPI after the bootstrap's questions, "
           "equal results", ok);
  }
  if (alone) {
    snprintf(g_why, sizeof g_why, "skipped: no MPI job, no bootstrap");
    report("a device only rank 0 can use: refused on every rank", 1);
    snprintf(g_why, sizeof g_why, "skipped: no MPI job, no bootstrap");
    report("a rank failing to join: refused on every rank", 1);
  } else {
    int ok = check_refused("/device:COLLTEST:1",
                           "rank 1 (/device:COLLTEST:1 of "
                           "weft-test-collectives: UNAVAILABLE");
    ok = ok && expect_calls("COLLTEST", 1, bootstrap_only());
    report("a device only rank 0 can use: FAILED_PRECONDITION naming rank "
           "1 on every rank, twice, the ranks still in step", ok);
    ok = check_refused("/device:COLLTEST:3", "rank 1 could not join");
    struct calls want = bootstrap_only();
    want.create = 1;
    want.destroy = g_rank == 0;  /* the one communicator made */
    ok = ok && expect_calls("COLLTEST", 3, want);
    report("a rank failing to join: FAILED_PRECONDITION naming rank 1 on "
           "every rank, rank 0's communicator destroyed", ok);
  }
  return g_failed == 0 ? 0 : 1;
}
