/* weft train's checkpoints (train.c runs them): saving, periodically and
 * keeping the newest K; resuming from one of this run's configuration;
 * and checking before training that the run can write where it saves.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/train.h"
#include "weft/weft.h"

/* ---- Resuming -------------------------------------------------------------------- */

static const char* const model_names[] = {"softmax", "mlp", "lstm", "cnn"};
static const char* const optimizer_names[] = {"sgd", "momentum", "adam"};

static const char* config_name(const char* const* names, size_t count,
                               int64_t value) {
  return value >= 0 && (uint64_t)value < count ? names[value] : "unknown";
}

/* Restores the checkpoint into `s` and checks that it belongs to this run:
 * written by weft train with the same model, optimizer, batch size and
 * seed, and not already at the end.  Prints what is resumed; returns 0 with
 * a message naming the file when it refuses. */
int train_resume(const train_args* a, const model* m, weft_session* s,
                 int64_t total) {
  const char* path = a->checkpoint;
  if (access(path, F_OK) != 0) {
    fprintf(stderr, "weft train: --resume: no checkpoint at %s (%s); "
            "train without --resume first, or name the file with "
            "--checkpoint\n", path, strerror(errno));
    return 0;
  }
  char what[4200];
  snprintf(what, sizeof what, "--resume: restoring %s", path);
  if (!train_check(weft_checkpoint_restore(s, path, NULL, 0), what)) return 0;
  /* A file that does not hold the configuration leaves it uninitialized,
   * and reading it fails. */
  weft_output fetches[2] = {m->config, m->step};
  weft_tensor* values[2] = {NULL, NULL};
  weft_status* st =
      weft_session_run(s, NULL, NULL, 0, fetches, 2, NULL, 0, values);
  if (st != NULL) {
    fprintf(stderr, "weft train: --resume: %s is not a checkpoint of weft "
            "train fashion-mnist with this model (%s); start without "
            "--resume or pick another --checkpoint\n", path,
            weft_status_message(st));
    weft_status_destroy(st);
    return 0;
  }
  int64_t want[CONFIG_SIZE];
  train_run_config(a, want);
  const int64_t* have = weft_tensor_data(values[0]);
  int64_t step = *(const int64_t*)weft_tensor_data(values[1]);
  int ok = 1;
  if (have[CONFIG_MODEL] != want[CONFIG_MODEL] ||
      have[CONFIG_OPTIMIZER] != want[CONFIG_OPTIMIZER]) {
    fprintf(stderr, "weft train: --resume: %s was written by --model %s "
            "--optimizer %s, not --model %s --optimizer %s\n", path,
            config_name(model_names, 4, have[CONFIG_MODEL]),
            config_name(optimizer_names, 3, have[CONFIG_OPTIMIZER]),
            a->model, train_optimizer_name(a));
    ok = 0;
  } else if (have[CONFIG_BATCH] != want[CONFIG_BATCH] ||
             have[CONFIG_SEED] != want[CONFIG_SEED]) {
    /* Its step count numbers batches of that size in that order. */
    fprintf(stderr, "weft train: --resume: %s was written with --batch "
            "%lld --seed %lld; resume with the same (not --batch %lld "
            "--seed %lld)\n", path, (long long)have[CONFIG_BATCH],
            (long long)have[CONFIG_SEED], (long long)want[CONFIG_BATCH],
            (long long)want[CONFIG_SEED]);
    ok = 0;
  } else if (have[CONFIG_VALIDATION] != want[CONFIG_VALIDATION]) {
    /* It held out other images: its steps saw another training set. */
    fprintf(stderr, "weft train: --resume: %s was written with "
            "--validation %lld; resume with the same (not --validation "
            "%lld)\n", path, (long long)have[CONFIG_VALIDATION],
            (long long)want[CONFIG_VALIDATION]);
    ok = 0;
  } else if (step < 0 || step >= total) {
    fprintf(stderr, "weft train: --resume: %s is at step %lld, %s of the "
            "%lld steps of %lld epoch%s: nothing to resume (pass a larger "
            "--epochs to train further)\n", path, (long long)step,
            step < 0 ? "outside" : "the end", (long long)total,
            (long long)a->epochs, a->epochs == 1 ? "" : "s");
    ok = 0;
  } else {
    int64_t per_epoch = a->train_count / a->batch;
    printf("resuming from %s: step %lld of %lld (epoch %lld/%lld, step "
           "%lld of the epoch)\n", path, (long long)step, (long long)total,
           (long long)(step / per_epoch + 1), (long long)a->epochs,
           (long long)(step % per_epoch));
  }
  weft_tensor_destroy(values[0]);
  weft_tensor_destroy(values[1]);
  return ok;
}

/* ---- Checkpoints ---------------------------------------------------------------- */

/* Whether a periodic checkpoint is due after `steps` steps: every N steps
 * or every N seconds since the last (--checkpoint-every); updates the
 * marks when it is. */
int train_checkpoint_due(const train_args* a, int64_t steps, double now,
                         int64_t* last_steps, double* last_time) {
  const int due =
      a->checkpoint_every > 0
          ? steps / a->checkpoint_every > *last_steps / a->checkpoint_every
          : a->checkpoint_seconds > 0 &&
                now - *last_time >= (double)a->checkpoint_seconds;
  if (due) {
    *last_steps = steps;
    *last_time = now;
  }
  return due;
}

/* The step-stamped checkpoints beside a->checkpoint ("PATH-STEP"), oldest
 * removed until `keep` remain. */
static void prune_checkpoints(const char* path, int64_t keep) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char* slash = strrchr(dir, '/');
  const char* base = slash ? slash + 1 : path;
  if (slash) *slash = '\0';
  const char* where = slash ? (dir[0] ? dir : "/") : ".";
  DIR* d = opendir(where);
  if (d == NULL) return;
  enum { kMax = 4096 };
  int64_t* steps = malloc(sizeof(int64_t) * kMax);
  size_t n = 0, base_len = strlen(base);
  for (struct dirent* e; steps && (e = readdir(d)) != NULL && n < kMax;) {
    const char* name = e->d_name;
    if (strncmp(name, base, base_len) != 0 || name[base_len] != '-') continue;
    char* end = NULL;
    long long v = strtoll(name + base_len + 1, &end, 10);
    if (end == name + base_len + 1 || *end != '\0' || v < 0) continue;
    steps[n++] = v;
  }
  closedir(d);
  /* Newest first (few files: insertion sort). */
  for (size_t i = 1; i < n; ++i)
    for (size_t j = i; j > 0 && steps[j] > steps[j - 1]; --j) {
      int64_t t = steps[j];
      steps[j] = steps[j - 1];
      steps[j - 1] = t;
    }
  for (size_t i = (size_t)keep; i < n; ++i) {
    char old[4200];
    snprintf(old, sizeof old, "%s-%lld", path, (long long)steps[i]);
    unlink(old);
  }
  free(steps);
}

/* Saves the checkpoint after `steps` steps at a->checkpoint, which --resume
 * reads.  With --keep K > 1 the file is "PATH-STEPS", a->checkpoint a hard
 * link to the newest (replaced atomically), and only the newest K stay. */
int train_save_checkpoint(const train_args* a, weft_session* s,
                          int64_t steps, const char* what) {
  if (a->keep <= 1 || steps < 0)  /* steps < 0: not known */
    return train_check(weft_checkpoint_save(s, a->checkpoint, NULL, 0), what);
  char stamped[4200], temp[4200];
  snprintf(stamped, sizeof stamped, "%s-%lld", a->checkpoint,
           (long long)steps);
  snprintf(temp, sizeof temp, "%s.latest.tmp", a->checkpoint);
  if (!train_check(weft_checkpoint_save(s, stamped, NULL, 0), what))
    return 0;
  unlink(temp);
  if (link(stamped, temp) != 0 || rename(temp, a->checkpoint) != 0) {
    /* No hard links here: a second copy. */
    unlink(temp);
    if (!train_check(weft_checkpoint_save(s, a->checkpoint, NULL, 0), what))
      return 0;
  }
  prune_checkpoints(a->checkpoint, a->keep);
  return 1;
}

/* --resume with --loss-log: the log keeps the steps before `step` only, so
 * that a run killed after its last checkpoint and resumed leaves each
 * step's loss once, as an uninterrupted run does. */
int train_truncate_loss_log(const char* path, int64_t step) {
  FILE* in = fopen(path, "r");
  if (in == NULL) return 1;  /* nothing logged yet */
  char temp[4200];
  snprintf(temp, sizeof temp, "%s.tmp", path);
  FILE* out = fopen(temp, "w");
  if (out == NULL) {
    fprintf(stderr, "weft train: --loss-log: %s: %s\n", temp,
            strerror(errno));
    fclose(in);
    return 0;
  }
  char line[256];
  while (fgets(line, sizeof line, in) != NULL)
    if (strtoll(line, NULL, 10) < step) fputs(line, out);
  fclose(in);
  if (fclose(out) != 0 || rename(temp, path) != 0) {
    fprintf(stderr, "weft train: --loss-log: %s: %s\n", path,
            strerror(errno));
    unlink(temp);
    return 0;
  }
  return 1;
}

/* With --resume, the pipeline starts past the steps already done: the
 * checkpoint's step, read before the graph is built (resume() checks the
 * rest of the checkpoint later).  A checkpoint without one leaves 0, and
 * resume() then says what is wrong with it. */
int train_peek_step(train_args* a) {
  weft_graph* g = NULL;
  weft_session* s = NULL;
  weft_tensor* zero = NULL;
  weft_tensor* value = NULL;
  weft_output init, step;
  int64_t z = 0;
  a->resume_step = 0;
  if (access(a->checkpoint, F_OK) != 0) return 1;
  int ok =
      train_check(weft_graph_create(&g), "--resume") &&
      train_check(weft_tensor_create_copy(WEFT_INT64, NULL, 0, &z, sizeof z, &zero),
            "--resume") &&
      train_check(weft_graph_constant(g, "global_step/zero", zero, &init),
            "--resume") &&
      train_check(weft_graph_variable(g, "global_step", init, &step, NULL),
            "--resume") &&
      train_check(weft_session_create(g, NULL, &s), "--resume");
  if (ok) {
    weft_status* st = weft_checkpoint_restore(s, a->checkpoint, &step.node, 1);
    if (st == NULL)
      st = weft_session_run(s, NULL, NULL, 0, &step, 1, NULL, 0, &value);
    if (st == NULL)
      a->resume_step = *(const int64_t*)weft_tensor_data(value);
    weft_status_destroy(st);
  }
  weft_tensor_destroy(value);
  weft_tensor_destroy(zero);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return ok;
}

/* Whether the run can write `path` (a file, or with `directory` the
 * model bundle's directory) where it saves: checked before training, so a
 * typo does not cost the whole run.  Prints why not. */
int train_check_output_path(const char* flag, const char* path,
                            int directory) {
  struct stat st;
  if (stat(path, &st) == 0) {
    if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
      fprintf(stderr, "weft train: %s %s: exists and is not a %s\n", flag,
              path, directory ? "directory" : "regular file");
      return 0;
    }
  }
  /* Files are written beside their final name and renamed: the directory
   * holding it must take new files. */
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", path);
  size_t n = strlen(parent);
  while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0';
  char* slash = strrchr(parent, '/');
  const char* dir = slash == NULL ? "." : slash == parent ? "/" : parent;
  if (slash != NULL && slash != parent) *slash = '\0';
  const char* why = stat(dir, &st) != 0        ? strerror(errno)
                    : !S_ISDIR(st.st_mode)        ? "not a directory"
                    : access(dir, W_OK | X_OK) != 0 ? strerror(errno)
                                                  : NULL;
  if (why != NULL) {
    fprintf(stderr, "weft train: %s %s: cannot write in %s (%s)\n", flag,
            path, dir, why);
    return 0;
  }
  return 1;
}

