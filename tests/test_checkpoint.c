/* Checkpoints: weft_checkpoint_save and weft_checkpoint_restore, through
 * the public API.  The format itself (runtime/checkpoint/FORMAT.md) is
 * checked only where a test must forge a file (a future version). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"
#include "weft/train.h"

/* ---- A model: variables of several dtypes and shapes --------------------- */

typedef struct var_spec {
  const char* name;
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[3];
} var_spec;

enum { kNumVars = 7, kW = 0, kStep = 2 };

static const var_spec kSpecs[kNumVars] = {
    {"w", WEFT_FLOAT32, 2, {3, 4}},
    {"bias", WEFT_FLOAT64, 1, {4}},
    {"step", WEFT_INT64, 0, {0}}, /* a scalar */
    {"mask", WEFT_BOOL, 2, {2, 3}},
    {"empty", WEFT_FLOAT32, 2, {0, 5}},
    {"codes", WEFT_INT8, 3, {2, 2, 2}},
    {"half", WEFT_FLOAT16, 1, {5}},
};

typedef struct model {
  weft_graph* graph;
  var_spec specs[kNumVars];
  weft_output vars[kNumVars];
  weft_node* inits[kNumVars];
  weft_node* train; /* w += 0.1 and step += 1: something to continue */
} model;

static size_t spec_bytes(const var_spec* s) {
  size_t n = wt_dtype_bytes(s->dtype);
  for (int32_t i = 0; i < s->rank; ++i) n *= (size_t)s->dims[i];
  return n;
}

/* The initial bytes of variable `i` for `seed`; `out` holds spec_bytes. */
static void initial_bytes(const var_spec* s, uint64_t seed, int i,
                          void* out) {
  wt_rng rng = {seed * 1000 + (uint64_t)i};
  size_t n = spec_bytes(s);
  size_t count = n / (wt_dtype_bytes(s->dtype) ? wt_dtype_bytes(s->dtype) : 1);
  for (size_t k = 0; k < count; ++k) {
    uint64_t r = wt_rng_next(&rng);
    switch (s->dtype) {
      case WEFT_FLOAT32: ((float*)out)[k] = wt_rng_uniform(&rng, -2, 2); break;
      case WEFT_FLOAT64:
        ((double*)out)[k] = (double)(r >> 11) / 9007199254740992.0 - 0.5;
        break;
      case WEFT_BOOL: ((uint8_t*)out)[k] = (uint8_t)(r & 1); break;
      default: memcpy((char*)out + k * wt_dtype_bytes(s->dtype), &r,
                      wt_dtype_bytes(s->dtype));
    }
  }
}

/* A Const node holding a copy of `data`. */
static weft_status* try_const(weft_graph* graph, const char* name,
                              weft_dtype dtype, const int64_t* dims,
                              int32_t rank, const void* data, size_t bytes,
                              weft_output* out) {
  weft_tensor* t = NULL;
  weft_status* st = weft_tensor_create_copy(dtype, dims, rank, data, bytes, &t);
  if (st == NULL) st = weft_graph_constant(graph, name, t, out);
  weft_tensor_destroy(t);
  return st;
}

/* Builds the model, replacing the spec of variable `changed` (-1: none) by
 * *change, with initial values from `seed`.  It returns a status instead
 * of asserting, so that a forked child can use it: Criterion's asserts
 * talk to the test runner, which a child must not do. */
static weft_status* try_build(uint64_t seed, int changed,
                              const var_spec* change, model* m) {
  memcpy(m->specs, kSpecs, sizeof kSpecs);
  if (changed >= 0) m->specs[changed] = *change;
  m->train = NULL;
  weft_status* st = weft_graph_create(&m->graph);
  for (int i = 0; st == NULL && i < kNumVars; ++i) {
    const var_spec* s = &m->specs[i];
    char* data = malloc(spec_bytes(s) + 1);
    initial_bytes(s, seed, i, data);
    char name[64];
    snprintf(name, sizeof name, "%s_init", s->name);
    weft_output init = {NULL, 0};
    st = try_const(m->graph, name, s->dtype, s->dims, s->rank, data,
                   spec_bytes(s), &init);
    free(data);
    if (st == NULL)
      st = weft_graph_variable(m->graph, s->name, init, &m->vars[i],
                               &m->inits[i]);
  }
  if (st != NULL || changed >= 0) return st;
  const float tenth[12] = {0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f,
                           0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
  const int64_t one = 1;
  weft_output dw, ds, next[2];
  st = try_const(m->graph, "dw", WEFT_FLOAT32, WT_SHAPE(3, 4), tenth,
                 sizeof tenth, &dw);
  if (st == NULL)
    st = try_const(m->graph, "ds", WEFT_INT64, NULL, 0, &one, sizeof one,
                   &ds);
  weft_output w_in[2] = {m->vars[kW], dw}, s_in[2] = {m->vars[kStep], ds};
  if (st == NULL)
    st = weft_graph_apply(m->graph, "AssignAdd", "w_next", w_in, 2, &next[0]);
  if (st == NULL)
    st = weft_graph_apply(m->graph, "AssignAdd", "step_next", s_in, 2,
                          &next[1]);
  if (st != NULL) return st;
  weft_op_builder* b = weft_op_begin(m->graph, "NoOp", "train");
  weft_op_add_control_input(b, next[0].node);
  weft_op_add_control_input(b, next[1].node);
  return weft_op_finish(b, &m->train);
}

static model build_changed(uint64_t seed, int changed,
                           const var_spec* change) {
  model m;
  WT_OK(try_build(seed, changed, change, &m));
  return m;
}

static model build(uint64_t seed) { return build_changed(seed, -1, NULL); }

static void initialize(weft_session* session, const model* m) {
  wt_run_targets(session, m->inits, kNumVars);
}

/* The current bytes of variable `i` (caller frees). */
static void* read_var(weft_session* session, const model* m, int i) {
  weft_tensor* t = wt_run1(session, NULL, NULL, 0, m->vars[i]);
  size_t n = weft_tensor_byte_size(t);
  cr_assert_eq(n, spec_bytes(&m->specs[i]), "variable '%s'",
               m->specs[i].name);
  void* copy = malloc(n + 1);
  if (n > 0) memcpy(copy, weft_tensor_data(t), n);
  weft_tensor_destroy(t);
  return copy;
}

/* Variable `i` holds exactly its initial value for `seed`. */
static void expect_var_seed(weft_session* session, const model* m, int i,
                            uint64_t seed) {
  const var_spec* s = &m->specs[i];
  void* want = malloc(spec_bytes(s) + 1);
  initial_bytes(s, seed, i, want);
  void* have = read_var(session, m, i);
  cr_expect(memcmp(want, have, spec_bytes(s)) == 0,
            "variable '%s' does not hold seed %llu's value", s->name,
            (unsigned long long)seed);
  free(want);
  free(have);
}

static void expect_seed(weft_session* session, const model* m,
                        uint64_t seed) {
  for (int i = 0; i < kNumVars; ++i) expect_var_seed(session, m, i, seed);
}

/* Two sessions hold the same bytes in every variable. */
static void expect_same(weft_session* x, const model* mx, weft_session* y,
                        const model* my) {
  for (int i = 0; i < kNumVars; ++i) {
    void* vx = read_var(x, mx, i);
    void* vy = read_var(y, my, i);
    cr_expect(memcmp(vx, vy, spec_bytes(&kSpecs[i])) == 0,
              "variable '%s' differs", kSpecs[i].name);
    free(vx);
    free(vy);
  }
}

/* A model built from `seed` and initialized in a new session on `devices`
 * (NULL: every device), written to *out_session. */
static model open_model(uint64_t seed, const char* devices,
                        weft_session** out_session) {
  model m = build(seed);
  *out_session = wt_session_new(m.graph, devices);
  initialize(*out_session, &m);
  return m;
}

/* Destroys a session and its model's graph. */
static void destroy(weft_session* session, model* m) {
  weft_session_destroy(session);
  weft_graph_destroy(m->graph);
}

/* ---- Files ---------------------------------------------------------------- */

static char dir[64];
static char path[128];

static void make_dir(void) {
  strcpy(dir, "/tmp/weft-checkpoint-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/model.ckpt", dir);
}

static void remove_dir(void) {
  DIR* d = opendir(dir);
  if (d == NULL) return;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

TestSuite(checkpoint, .init = make_dir, .fini = remove_dir);

static int count_files(void) {
  DIR* d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

static unsigned char* read_file(const char* p, size_t* size) {
  FILE* f = fopen(p, "rb");
  cr_assert_not_null(f, "cannot open %s", p);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* b = malloc(*size + 1);
  cr_assert_eq(fread(b, 1, *size, f), *size);
  fclose(f);
  return b;
}

static void write_file(const char* p, const void* data, size_t size) {
  FILE* f = fopen(p, "wb");
  cr_assert_not_null(f, "cannot create %s", p);
  cr_assert_eq(fwrite(data, 1, size, f), size);
  fclose(f);
}

/* Fails unless `st` is an error of `code` whose message names `p` and
 * contains one of the (NULL-terminated) alternatives. */
static void expect_file_error(weft_status* st, weft_code code, const char* p,
                              const char* const* any_of, const char* what) {
  cr_assert_not_null(st, "%s: restore succeeded", what);
  const char* msg = weft_status_message(st);
  cr_expect_eq(weft_status_code(st), code, "%s: code %d, message: %s", what,
               weft_status_code(st), msg);
  cr_expect(strstr(msg, p) != NULL, "%s: the message does not name %s: %s",
            what, p, msg);
  int found = any_of == NULL;
  for (; !found && *any_of; ++any_of) found = strstr(msg, *any_of) != NULL;
  cr_expect(found, "%s: unexpected message: %s", what, msg);
  weft_status_destroy(st);
}

/* ---- Round trips ------------------------------------------------------------ */

Test(checkpoint, round_trip_every_dtype_and_shape) {
  weft_session* sa = NULL;
  model a = open_model(1, NULL, &sa);
  WT_OK(weft_checkpoint_save(sa, path, NULL, 0));
  cr_expect_eq(count_files(), 1, "a temporary file was left behind");

  weft_session* sb = NULL;
  model b = open_model(2, NULL, &sb);
  expect_seed(sb, &b, 2);
  WT_OK(weft_checkpoint_restore(sb, path, NULL, 0));
  expect_seed(sb, &b, 1);

  /* Saving again over the file replaces it. */
  wt_run_targets(sb, &b.train, 1);
  WT_OK(weft_checkpoint_save(sb, path, NULL, 0));
  cr_expect_eq(count_files(), 1);
  WT_OK(weft_checkpoint_restore(sa, path, NULL, 0));
  expect_same(sa, &a, sb, &b);
  destroy(sa, &a);
  destroy(sb, &b);
}

Test(checkpoint, restore_initializes_a_fresh_session) {
  weft_session* sa = NULL;
  model a = open_model(1, NULL, &sa);
  WT_OK(weft_checkpoint_save(sa, path, NULL, 0));

  /* The same graph built again, never initialized. */
  model b = build(3);
  weft_session* sb = wt_session_new(b.graph, NULL);
  WT_OK(weft_checkpoint_restore(sb, path, NULL, 0));
  expect_seed(sb, &b, 1);
  destroy(sa, &a);
  destroy(sb, &b);
}

/* Training continues bit for bit in another process after a restore.  The
 * child is forked before this process runs anything (a fork must not
 * inherit a plugin's worker threads half-way), waits for the checkpoint,
 * restores it into a graph built again, trains on and saves its result. */
Test(checkpoint, continues_exactly_in_a_fresh_process) {
  char continued[192];
  snprintf(continued, sizeof continued, "%s/continued.ckpt", dir);
  int go[2];
  cr_assert_eq(pipe(go), 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    /* No Criterion asserts here: the exit status is the verdict. */
    char byte;
    close(go[1]);
    if (read(go[0], &byte, 1) != 1) _exit(4);
    model b;
    weft_session_options options;
    weft_session_options_init(&options);
    weft_session* sb = NULL;
    weft_status* st = try_build(7, -1, NULL, &b);
    if (st == NULL) st = weft_session_create(b.graph, &options, &sb);
    if (st == NULL) st = weft_checkpoint_restore(sb, path, NULL, 0);
    for (int k = 0; st == NULL && k < 5; ++k)
      st = weft_session_run(sb, NULL, NULL, 0, NULL, 0, &b.train, 1, NULL);
    if (st == NULL) st = weft_checkpoint_save(sb, continued, NULL, 0);
    if (st != NULL) {
      fprintf(stderr, "child: %s\n", weft_status_message(st));
      _exit(2);
    }
    _exit(0);
  }
  cr_assert_neq(pid, -1);
  close(go[0]);

  weft_session* sa = NULL;
  model a = open_model(1, NULL, &sa);
  for (int k = 0; k < 3; ++k) wt_run_targets(sa, &a.train, 1);
  WT_OK(weft_checkpoint_save(sa, path, NULL, 0));
  cr_assert_eq(write(go[1], "x", 1), 1);
  close(go[1]);
  for (int k = 0; k < 5; ++k) wt_run_targets(sa, &a.train, 1);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "the restoring process failed (status %d)", status);

  model c = build(8);
  weft_session* sc = wt_session_new(c.graph, NULL);
  WT_OK(weft_checkpoint_restore(sc, continued, NULL, 0));
  expect_same(sa, &a, sc, &c);
  destroy(sa, &a);
  destroy(sc, &c);
}

Test(checkpoint, named_subsets) {
  weft_session* sa = NULL;
  model a = open_model(1, NULL, &sa);
  weft_node* subset[2] = {a.vars[kW].node, a.vars[kStep].node};
  WT_OK(weft_checkpoint_save(sa, path, subset, 2));

  weft_session* sb = NULL;
  model b = open_model(2, NULL, &sb);
  /* NULL restores what the file holds and leaves the rest. */
  WT_OK(weft_checkpoint_restore(sb, path, NULL, 0));
  for (int i = 0; i < kNumVars; ++i)
    expect_var_seed(sb, &b, i, i == kW || i == kStep ? 1 : 2);

  /* A named variable the file lacks fails the whole restore. */
  weft_session* sc = NULL;
  model c = open_model(3, NULL, &sc);
  weft_node* wanted[2] = {c.vars[kW].node, c.vars[1].node};
  WT_EXPECT_ERROR(weft_checkpoint_restore(sc, path, wanted, 2),
                  WEFT_NOT_FOUND, "bias", path);
  expect_seed(sc, &c, 3);
  WT_OK(weft_checkpoint_restore(sc, path, wanted, 1));
  expect_var_seed(sc, &c, kW, 1);

  destroy(sa, &a);
  destroy(sb, &b);
  destroy(sc, &c);
}

/* ---- Errors ------------------------------------------------------------------ */

Test(checkpoint, save_needs_initialized_variables) {
  model a = build(1);
  weft_session* sa = wt_session_new(a.graph, NULL);
  wt_run_targets(sa, &a.inits[kW], 1);
  weft_node* both[2] = {a.vars[kW].node, a.vars[kStep].node};
  WT_EXPECT_ERROR(weft_checkpoint_save(sa, path, both, 2),
                  WEFT_FAILED_PRECONDITION, "step", "not initialized");
  cr_expect_eq(count_files(), 0);
  /* All variables: the initialized ones. */
  WT_OK(weft_checkpoint_save(sa, path, NULL, 0));
  model b = build(2);
  weft_session* sb = wt_session_new(b.graph, NULL);
  WT_OK(weft_checkpoint_restore(sb, path, NULL, 0));
  weft_output* step = &b.vars[kStep];
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(sb, NULL, NULL, 0, step, 1, NULL, 0, &out),
                  WEFT_FAILED_PRECONDITION, "step");
  expect_var_seed(sb, &b, kW, 1);
  destroy(sa, &a);
  destroy(sb, &b);
}

Test(checkpoint, bad_arguments_and_paths) {
  weft_session* sa = NULL;
  model a = open_model(1, NULL, &sa);
  char missing[192];
  snprintf(missing, sizeof missing, "%s/no/such/dir/model.ckpt", dir);
  WT_EXPECT_ERROR(weft_checkpoint_save(sa, missing, NULL, 0), WEFT_NOT_FOUND,
                  missing, "No such file");
  WT_EXPECT_ERROR(weft_checkpoint_restore(sa, missing, NULL, 0),
                  WEFT_NOT_FOUND, missing);
  WT_EXPECT_CODE(weft_checkpoint_save(sa, NULL, NULL, 0),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_checkpoint_save(NULL, path, NULL, 0),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_ERROR(weft_checkpoint_save(sa, path, &a.inits[0], 1),
                  WEFT_INVALID_ARGUMENT, "w/initializer", "not a Variable");
  model other = build(1);
  WT_EXPECT_ERROR(weft_checkpoint_save(sa, path, &other.vars[0].node, 1),
                  WEFT_INVALID_ARGUMENT, "graph");
  /* A directory where the file should be. */
  WT_EXPECT_CODE(weft_checkpoint_restore(sa, dir, NULL, 0),
                 WEFT_FAILED_PRECONDITION);
  cr_expect_eq(count_files(), 0);
  weft_session_destroy(sa);
  weft_graph_destroy(a.graph);
  weft_graph_destroy(other.graph);
}

Test(checkpoint, dtype_and_shape_mismatches) {
  weft_session* sa = NULL;
  model a = open_model(1, NULL, &sa);
  WT_OK(weft_checkpoint_save(sa, path, NULL, 0));

  var_spec as_double = {"w", WEFT_FLOAT64, 2, {3, 4}};
  model b = build_changed(2, kW, &as_double);
  weft_session* sb = wt_session_new(b.graph, NULL);
  initialize(sb, &b);
  WT_EXPECT_ERROR(weft_checkpoint_restore(sb, path, NULL, 0),
                  WEFT_INVALID_ARGUMENT, path, "'w'", "float32", "float64");
  expect_seed(sb, &b, 2);

  var_spec reshaped = {"bias", WEFT_FLOAT64, 2, {2, 2}};
  model c = build_changed(2, 1, &reshaped);
  weft_session* sc = wt_session_new(c.graph, NULL);
  initialize(sc, &c);
  WT_EXPECT_ERROR(weft_checkpoint_restore(sc, path, NULL, 0),
                  WEFT_INVALID_ARGUMENT, path, "'bias'", "[4]", "[2,2]");
  expect_seed(sc, &c, 2);

  var_spec scalar = {"empty", WEFT_FLOAT32, 0, {0}};
  model d = build_changed(2, 4, &scalar);
  weft_session* sd = wt_session_new(d.graph, NULL);
  WT_EXPECT_ERROR(weft_checkpoint_restore(sd, path, NULL, 0),
                  WEFT_INVALID_ARGUMENT, "'empty'", "shape");
  weft_tensor* out = NULL;
  WT_EXPECT_CODE(weft_session_run(sd, NULL, NULL, 0, &d.vars[kW], 1, NULL, 0,
                                  &out),
                 WEFT_FAILED_PRECONDITION);

  destroy(sa, &a);
  destroy(sb, &b);
  destroy(sc, &c);
  destroy(sd, &d);
}

/* A saved checkpoint of seed 1, and a session holding seed 2's values. */
typedef struct damaged {
  model a, b;
  weft_session* sa;
  weft_session* sb;
  unsigned char* good;
  size_t size;
  char bad_path[192];
} damaged;

static void damaged_setup(damaged* d) {
  d->a = open_model(1, NULL, &d->sa);
  WT_OK(weft_checkpoint_save(d->sa, path, NULL, 0));
  d->good = read_file(path, &d->size);
  d->b = open_model(2, NULL, &d->sb);
  snprintf(d->bad_path, sizeof d->bad_path, "%s/bad.ckpt", dir);
}

static void damaged_teardown(damaged* d) {
  /* Nothing was installed by any failed restore; the good file still
   * restores. */
  expect_seed(d->sb, &d->b, 2);
  WT_OK(weft_checkpoint_restore(d->sb, path, NULL, 0));
  expect_seed(d->sb, &d->b, 1);
  free(d->good);
  destroy(d->sa, &d->a);
  destroy(d->sb, &d->b);
}

static const char* const kDamage[] = {"truncated", "corrupt",
                                      "not a Weft checkpoint", NULL};

Test(checkpoint, every_truncation_is_data_loss) {
  damaged d;
  damaged_setup(&d);
  for (size_t len = 0; len < d.size; ++len) {
    write_file(d.bad_path, d.good, len);
    char what[64];
    snprintf(what, sizeof what, "cut at %zu of %zu bytes", len, d.size);
    expect_file_error(weft_checkpoint_restore(d.sb, d.bad_path, NULL, 0),
                      WEFT_DATA_LOSS, d.bad_path, kDamage, what);
  }
  /* Bytes after the end marker are damage too. */
  unsigned char* longer = malloc(d.size + 1);
  memcpy(longer, d.good, d.size);
  longer[d.size] = 0;
  write_file(d.bad_path, longer, d.size + 1);
  expect_file_error(weft_checkpoint_restore(d.sb, d.bad_path, NULL, 0),
                    WEFT_DATA_LOSS, d.bad_path, kDamage, "one byte more");
  free(longer);
  damaged_teardown(&d);
}

Test(checkpoint, every_flipped_byte_is_data_loss) {
  damaged d;
  damaged_setup(&d);
  unsigned char* copy = malloc(d.size);
  const unsigned char masks[3] = {0x01, 0x80, 0xFF};
  for (size_t pos = 0; pos < d.size; ++pos) {
    for (int m = 0; m < 3; ++m) {
      memcpy(copy, d.good, d.size);
      copy[pos] ^= masks[m];
      write_file(d.bad_path, copy, d.size);
      char what[64];
      snprintf(what, sizeof what, "byte %zu ^ 0x%02x", pos, masks[m]);
      expect_file_error(weft_checkpoint_restore(d.sb, d.bad_path, NULL, 0),
                        WEFT_DATA_LOSS, d.bad_path, kDamage, what);
    }
  }
  /* Damage in a record the restore skips is still reported: the last
   * byte of the data is that of the last variable. */
  weft_node* only_w = d.b.vars[kW].node;
  memcpy(copy, d.good, d.size);
  copy[d.size - 24 - 4 - 1] ^= 0x10;
  write_file(d.bad_path, copy, d.size);
  expect_file_error(weft_checkpoint_restore(d.sb, d.bad_path, &only_w, 1),
                    WEFT_DATA_LOSS, d.bad_path, kDamage, "skipped record");
  free(copy);
  damaged_teardown(&d);
}

Test(checkpoint, wrong_magic) {
  damaged d;
  damaged_setup(&d);
  write_file(d.bad_path, "PK\x03\x04 this is a zip file, not a checkpoint",
             40);
  const char* const magic[] = {"not a Weft checkpoint", NULL};
  expect_file_error(weft_checkpoint_restore(d.sb, d.bad_path, NULL, 0),
                    WEFT_DATA_LOSS, d.bad_path, magic, "zip file");
  write_file(d.bad_path, "", 0);
  expect_file_error(weft_checkpoint_restore(d.sb, d.bad_path, NULL, 0),
                    WEFT_DATA_LOSS, d.bad_path, kDamage, "empty file");
  damaged_teardown(&d);
}

/* CRC-32C as FORMAT.md defines it, written from the definition (bitwise)
 * rather than copied from the library. */
static uint32_t crc32c(const unsigned char* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
  }
  return ~c;
}

Test(checkpoint, future_version_is_refused) {
  cr_assert_eq(crc32c((const unsigned char*)"123456789", 9), 0xE3069283u);
  damaged d;
  damaged_setup(&d);
  /* Bytes 8..11: the version; 12..15: CRC-32C of bytes 0..11. */
  unsigned char* copy = malloc(d.size);
  memcpy(copy, d.good, d.size);
  uint32_t crc;
  memcpy(&crc, copy + 12, 4);
  cr_expect_eq(crc, crc32c(copy, 12), "the preamble checksum is as documented");
  const uint32_t version = 2;
  memcpy(copy + 8, &version, 4);
  crc = crc32c(copy, 12);
  memcpy(copy + 12, &crc, 4);
  write_file(d.bad_path, copy, d.size);
  WT_EXPECT_ERROR(weft_checkpoint_restore(d.sb, d.bad_path, NULL, 0),
                  WEFT_UNIMPLEMENTED, d.bad_path, "version 2");
  free(copy);
  damaged_teardown(&d);
}

/* ---- What the writer and the reader agree on --------------------------------- */

/* A graph holding one initialized float32 scalar variable named `name`. */
static weft_session* one_variable(const char* name, weft_graph** graph) {
  *graph = wt_graph_new();
  const float value = 7.0f;
  weft_output init, var;
  weft_node* init_op = NULL;
  WT_OK(try_const(*graph, "init", WEFT_FLOAT32, NULL, 0, &value, sizeof value,
                  &init));
  WT_OK(weft_graph_variable(*graph, name, init, &var, &init_op));
  weft_session* session = wt_session_new(*graph, NULL);
  wt_run_targets(session, &init_op, 1);
  return session;
}

/* A name longer than the reader accepts would make a file that can never
 * be restored: the save is refused, and the checkpoint already at the path
 * is left as it was. */
Test(checkpoint, save_refuses_what_the_reader_refuses) {
  damaged d;
  damaged_setup(&d);
  enum { kLong = 65536 };
  char* name = malloc(kLong + 1);
  memset(name, 'n', kLong);
  name[kLong] = '\0';
  weft_graph* graph = NULL;
  weft_session* session = one_variable(name, &graph);
  WT_EXPECT_ERROR(weft_checkpoint_save(session, path, NULL, 0),
                  WEFT_INVALID_ARGUMENT, path, "65536 bytes", "65535");
  cr_expect_eq(count_files(), 1, "the refused save left a file behind");
  size_t size = 0;
  unsigned char* now = read_file(path, &size);
  cr_expect(size == d.size && memcmp(now, d.good, size) == 0,
            "the refused save changed the previous checkpoint");
  free(now);
  /* The longest name the reader accepts round-trips. */
  name[kLong - 1] = '\0';
  weft_graph* longest = NULL;
  weft_session* s2 = one_variable(name, &longest);
  WT_OK(weft_checkpoint_save(s2, d.bad_path, NULL, 0));
  WT_OK(weft_checkpoint_restore(s2, d.bad_path, NULL, 0));
  weft_session_destroy(s2);
  weft_graph_destroy(longest);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  free(name);
  damaged_teardown(&d);
}

/* Appends `n` bytes to a byte string under construction. */
static void put(unsigned char** at, const void* p, size_t n) {
  memcpy(*at, p, n);
  *at += n;
}

/* A well-formed, correctly checksummed file (FORMAT.md) with one float32
 * record named "x" of rank `rank`, every dim 1; returns its size. */
static size_t craft_rank_file(unsigned char* f, uint32_t rank) {
  unsigned char* at = f;
  const uint32_t version = 1, zero = 0, tag = 0x43455256, name_len = 1;
  const uint32_t dtype = WEFT_FLOAT32;
  const uint64_t one_record = 1, data_bytes = 4;
  put(&at, "WEFTCKPT", 8);
  put(&at, &version, 4);
  uint32_t crc = crc32c(f, 12);
  put(&at, &crc, 4);
  unsigned char* header = at;
  put(&at, &one_record, 8);
  put(&at, &zero, 4);
  crc = crc32c(header, 12);
  put(&at, &crc, 4);
  unsigned char* record = at;
  put(&at, &tag, 4);
  put(&at, &name_len, 4);
  put(&at, "x", 1);
  put(&at, &dtype, 4);
  put(&at, &rank, 4);
  for (uint32_t i = 0; i < rank; ++i) {
    const int64_t dim = 1;
    put(&at, &dim, 8);
  }
  put(&at, &data_bytes, 8);
  uint32_t crcs[2];
  crcs[0] = crc32c(record, (size_t)(at - record));
  put(&at, &crcs[0], 4);
  const float value = 3.0f;
  put(&at, &value, 4);
  crcs[1] = crc32c((const unsigned char*)&value, 4);
  put(&at, &crcs[1], 4);
  unsigned char* end = at;
  put(&at, "WEFTEND\0", 8);
  put(&at, &one_record, 8);
  crc = crc32c((const unsigned char*)crcs, sizeof crcs);
  put(&at, &crc, 4);
  crc = crc32c(end, 20);
  put(&at, &crc, 4);
  return (size_t)(at - f);
}

/* FORMAT.md's rank bound is the library's tensor rank bound: a record of
 * rank WEFT_MAX_RANK restores, one above it is corrupt. */
Test(checkpoint, rank_bound_is_weft_max_rank) {
  damaged d;
  damaged_setup(&d);
  unsigned char file[512];
  weft_graph* graph = wt_graph_new();
  int64_t dims[WEFT_MAX_RANK];
  for (int i = 0; i < WEFT_MAX_RANK; ++i) dims[i] = 1;
  const float zero = 0.0f;
  weft_output init, var;
  weft_node* init_op = NULL;
  WT_OK(try_const(graph, "init", WEFT_FLOAT32, dims, WEFT_MAX_RANK, &zero,
                  sizeof zero, &init));
  WT_OK(weft_graph_variable(graph, "x", init, &var, &init_op));
  weft_session* session = wt_session_new(graph, NULL);
  write_file(d.bad_path, file, craft_rank_file(file, WEFT_MAX_RANK));
  WT_OK(weft_checkpoint_restore(session, d.bad_path, NULL, 0));
  weft_tensor* x = wt_run1(session, NULL, NULL, 0, var);
  cr_expect_eq(*(const float*)weft_tensor_data(x), 3.0f);
  weft_tensor_destroy(x);

  write_file(d.bad_path, file, craft_rank_file(file, WEFT_MAX_RANK + 1));
  char rank[32];
  snprintf(rank, sizeof rank, "rank %d", WEFT_MAX_RANK + 1);
  WT_EXPECT_ERROR(weft_checkpoint_restore(session, d.bad_path, NULL, 0),
                  WEFT_DATA_LOSS, d.bad_path, rank);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  damaged_teardown(&d);
}

/* Opening a FIFO for reading waits for a writer; a restore must refuse it
 * at once (FORMAT.md), as it refuses directories and devices.  The alarm
 * turns a hang into a failure. */
Test(checkpoint, restore_refuses_non_regular_files) {
  damaged d;
  damaged_setup(&d);
  char fifo[192];
  snprintf(fifo, sizeof fifo, "%s/fifo.ckpt", dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
  const char* const not_regular[] = {"not a regular file", NULL};
  alarm(20);
  expect_file_error(weft_checkpoint_restore(d.sb, fifo, NULL, 0),
                    WEFT_FAILED_PRECONDITION, fifo, not_regular, "a FIFO");
  alarm(0);
  expect_file_error(weft_checkpoint_restore(d.sb, "/dev/null", NULL, 0),
                    WEFT_FAILED_PRECONDITION, "/dev/null", not_regular,
                    "a device");
  expect_file_error(weft_checkpoint_restore(d.sb, dir, NULL, 0),
                    WEFT_FAILED_PRECONDITION, dir, not_regular,
                    "a directory");
  unlink(fifo);
  damaged_teardown(&d);
}

/* A save over a FIFO or a directory would replace it (or fail after
 * writing everything): it is refused before anything is written. */
Test(checkpoint, save_refuses_non_regular_targets) {
  weft_session* sa = NULL;
  model a = open_model(1, NULL, &sa);
  char fifo[192], sub[192];
  snprintf(fifo, sizeof fifo, "%s/fifo.ckpt", dir);
  snprintf(sub, sizeof sub, "%s/sub.ckpt", dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
  cr_assert_eq(mkdir(sub, 0700), 0, "mkdir: %s", strerror(errno));
  WT_EXPECT_ERROR(weft_checkpoint_save(sa, fifo, NULL, 0),
                  WEFT_FAILED_PRECONDITION, fifo, "not a regular file");
  WT_EXPECT_ERROR(weft_checkpoint_save(sa, sub, NULL, 0),
                  WEFT_FAILED_PRECONDITION, sub, "not a regular file");
  struct stat st;
  cr_expect(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode),
            "the FIFO was replaced");
  cr_expect(stat(sub, &st) == 0 && S_ISDIR(st.st_mode),
            "the directory was replaced");
  cr_expect_eq(count_files(), 2, "a temporary file was left behind");
  unlink(fifo);
  rmdir(sub);
  destroy(sa, &a);
}

/* ---- Crashes during a save ---------------------------------------------------- */

enum { kBig = 1 << 22 }; /* floats: a 16 MiB variable */

typedef struct big_model {
  weft_graph* graph;
  weft_output var;
  weft_node* init_a;
  weft_node* init_b;
} big_model;

static big_model build_big(void) {
  big_model m;
  m.graph = wt_graph_new();
  float* values = malloc(sizeof(float) * kBig);
  for (int k = 0; k < kBig; ++k) values[k] = (float)k;
  weft_output a = wt_const_f32(m.graph, "a", WT_SHAPE(kBig), values);
  for (int k = 0; k < kBig; ++k) values[k] = -(float)k;
  weft_output b = wt_const_f32(m.graph, "b", WT_SHAPE(kBig), values);
  free(values);
  WT_OK(weft_graph_variable(m.graph, "big", a, &m.var, &m.init_a));
  weft_op_builder* builder = weft_op_begin(m.graph, "Assign", "set_b");
  weft_op_add_input(builder, m.var);
  weft_op_add_input(builder, b);
  WT_OK(weft_op_finish(builder, &m.init_b));
  return m;
}

static void expect_big(weft_session* session, const big_model* m, float sign) {
  weft_tensor* t = wt_run1(session, NULL, NULL, 0, m->var);
  const float* v = weft_tensor_data(t);
  int bad = 0;
  for (int k = 0; k < kBig && !bad; ++k) bad = v[k] != sign * (float)k;
  cr_expect(!bad, "the variable does not hold the %s values",
            sign > 0 ? "first" : "second");
  weft_tensor_destroy(t);
}

/* The size of the largest temporary file in the directory, -1 if none. */
static long long largest_temporary(void) {
  DIR* d = opendir(dir);
  long long best = -1;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strstr(e->d_name, "model.ckpt.") != e->d_name) continue;
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &st) == 0 && st.st_size > best) best = st.st_size;
  }
  closedir(d);
  return best;
}

Test(checkpoint, killed_save_leaves_the_previous_checkpoint, .timeout = 120) {
  big_model m = build_big();
  weft_session* s = wt_session_new(m.graph, NULL);
  wt_run_targets(s, &m.init_a, 1);
  WT_OK(weft_checkpoint_save(s, path, NULL, 0));
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  const long long total = st.st_size;
  wt_run_targets(s, &m.init_b, 1);

  /* Stops after the preamble, in the header, in a record header, in the
   * data, and with everything written but not yet renamed. */
  const long long stops[] = {0, 20, 40, 1000, total / 2, total - 3, total};
  for (size_t i = 0; i < sizeof stops / sizeof stops[0]; ++i) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      char n[32];
      snprintf(n, sizeof n, "%lld", stops[i]);
      setenv("WEFT_CHECKPOINT_TEST_PAUSE_AFTER_BYTES", n, 1);
      weft_status* st2 = weft_checkpoint_save(s, path, NULL, 0);
      fprintf(stderr, "child: the save returned: %s\n",
              st2 ? weft_status_message(st2) : "OK");
      _exit(1);
    }
    cr_assert_neq(pid, -1);
    /* Wait until the child has written what it will write, then kill. */
    struct timespec nap = {0, 2000000};
    for (int tries = 0; tries < 10000 && largest_temporary() < stops[i];
         ++tries)
      nanosleep(&nap, NULL);
    nanosleep(&nap, NULL);
    kill(pid, SIGKILL);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
              "the saving child was not killed mid-save (stop %lld)",
              stops[i]);
    cr_expect_eq(largest_temporary(), stops[i],
                 "the child did not stop where it was told");

    big_model fresh = build_big();
    weft_session* r = wt_session_new(fresh.graph, NULL);
    WT_OK(weft_checkpoint_restore(r, path, NULL, 0));
    expect_big(r, &fresh, 1);
    weft_session_destroy(r);
    weft_graph_destroy(fresh.graph);
  }

  /* The leftovers spoil nothing: the next save and restore work. */
  WT_OK(weft_checkpoint_save(s, path, NULL, 0));
  big_model fresh = build_big();
  weft_session* r = wt_session_new(fresh.graph, NULL);
  WT_OK(weft_checkpoint_restore(r, path, NULL, 0));
  expect_big(r, &fresh, -1);
  weft_session_destroy(r);
  weft_graph_destroy(fresh.graph);
  weft_session_destroy(s);
  weft_graph_destroy(m.graph);
}

/* ---- A device whose memory the host cannot read --------------------------- */

#ifndef WEFT_TEST_TEMPLATE_PLUGIN
#error "meson passes the template plugin's path as WEFT_TEST_TEMPLATE_PLUGIN"
#endif

Test(checkpoint, variables_in_opaque_device_memory) {
  WT_OK(weft_plugin_load(WEFT_TEST_TEMPLATE_PLUGIN));
  const char* device = "/device:TEMPLATE:0";
  weft_session* sa = NULL;
  model a = open_model(1, device, &sa);
  WT_OK(weft_checkpoint_save(sa, path, NULL, 0));

  /* Into a session on the same device, and one on the CPU. */
  model b = build(2);
  weft_session* sb = wt_session_new(b.graph, device);
  WT_OK(weft_checkpoint_restore(sb, path, NULL, 0));
  expect_seed(sb, &b, 1);
  weft_session* sc = wt_session_new(b.graph, "/device:CPU:0");
  WT_OK(weft_checkpoint_restore(sc, path, NULL, 0));
  expect_seed(sc, &b, 1);

  /* And back: saved from the CPU, restored onto the device. */
  wt_run_targets(sc, &b.train, 1);
  WT_OK(weft_checkpoint_save(sc, path, NULL, 0));
  WT_OK(weft_checkpoint_restore(sb, path, NULL, 0));
  expect_same(sb, &b, sc, &b);
  weft_session_destroy(sc);
  destroy(sa, &a);
  destroy(sb, &b);
}
