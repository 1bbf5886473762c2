/* The main job, `weft train fashion-mnist`, run as a user runs it: accuracy
 * targets after two epochs, exact resume from a checkpoint, and clear
 * errors for missing or malformed data.  Needs Debian's
 * dataset-fashion-mnist (the README's commands install it); without it the
 * training cases say "skipped: ..." (the bad-data cases still run). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "test_support.h"

#ifndef WEFT_TEST_WEFT_TOOL
#error "meson passes the weft tool's path as WEFT_TEST_WEFT_TOOL"
#endif

#define DATA "/usr/share/datasets/fashion-mnist"

static char output[1 << 20];

/* Runs `weft ARGS` (stderr folded in), returns the exit status; the output
 * is in `output`. */
static int weft(const char* args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", WEFT_TEST_WEFT_TOOL, args);
  FILE* p = popen(cmd, "r");
  cr_assert_not_null(p, "cannot run %s", cmd);
  size_t used = fread(output, 1, sizeof output - 1, p);
  output[used] = '\0';
  int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static long long line_count(const char* text);

static void need_data(void) {
  if (access(DATA "/train-images-idx3-ubyte.gz", R_OK) != 0)
    WT_SKIP("Fashion-MNIST is not installed (Debian package "
            "dataset-fashion-mnist; ./scripts/setup.sh installs it)");
}

static double accuracy_of(const char* out) {
  const char* a = strstr(out, "test accuracy: ");
  cr_assert_not_null(a, "no accuracy in:\n%s", out);
  return strtod(a + strlen("test accuracy: "), NULL);
}

static char* slurp(const char* path) {
  FILE* f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot read %s", path);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  char* copy = malloc(n + 1);
  memcpy(copy, buf, n + 1);
  return copy;
}

static void temp_dir(char* out, size_t n) {
  snprintf(out, n, "/tmp/weft-train-test-XXXXXX");
  cr_assert_not_null(mkdtemp(out));
}

static void expect_checkpoint(const char* dir, const char* name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  cr_expect_eq(access(path, R_OK), 0, "no checkpoint at %s", path);
}

/* `weft train fashion-mnist --model MODEL` for two epochs on the CPU, with
 * a checkpoint and a bundle in a fresh directory: its test accuracy must
 * reach `target` percent. */
static void reaches(const char* model, double target) {
  need_data();
  char dir[64], args[512];
  temp_dir(dir, sizeof dir);
  snprintf(args, sizeof args,
           "train fashion-mnist --model %s --epochs 2 --device CPU "
           "--checkpoint %s/%s.ckpt --save %s/model", model, dir, model, dir);
  cr_assert_eq(weft(args), 0, "%s", output);
  double acc = accuracy_of(output);
  cr_expect_geq(acc, target, "%s: %.2f%%\n%s", model, acc, output);
  char ckpt[64];
  snprintf(ckpt, sizeof ckpt, "%s.ckpt", model);
  expect_checkpoint(dir, ckpt);
  expect_checkpoint(dir, "model");
}

Test(train_main, softmax_reaches_80_percent_in_two_epochs, .timeout = 600) {
  reaches("softmax", 80.0);
}

/* The same training with batches fed by the client (--input feed) instead
 * of read by the dataset pipeline inside the graph (the default). */
Test(train_main, softmax_fed_by_the_client, .timeout = 600) {
  need_data();
  char dir[64], args[512];
  temp_dir(dir, sizeof dir);
  snprintf(args, sizeof args,
           "train fashion-mnist --model softmax --epochs 2 --device CPU "
           "--input feed --checkpoint %s/softmax.ckpt --save %s/model",
           dir, dir);
  cr_assert_eq(weft(args), 0, "%s", output);
  double acc = accuracy_of(output);
  cr_expect_geq(acc, 80.0, "softmax: %.2f%%\n%s", acc, output);
  cr_expect(strstr(output, "step 1200/1200") != NULL,
            "not every batch was trained on:\n%s", output);
  expect_checkpoint(dir, "softmax.ckpt");
}

/* `weft tfrecord` writes the training set as tf.train.Example records
 * (GZIP); training from them (--data tfrecord:) reads the same examples in
 * the same order as training from the IDX files, so with one thread every
 * loss is the same float.  Bad uses are refused, naming what is wrong. */
Test(train_main, tfrecord_files_train_like_the_idx_files, .timeout = 600) {
  need_data();
  char dir[64], args[1024], from_idx[128], from_tfrecord[128];
  temp_dir(dir, sizeof dir);
  snprintf(from_idx, sizeof from_idx, "%s/idx.log", dir);
  snprintf(from_tfrecord, sizeof from_tfrecord, "%s/tfrecord.log", dir);
  snprintf(args, sizeof args, "tfrecord fashion-mnist %s/train.tfrecord.gz",
           dir);
  cr_assert_eq(weft(args), 0, "%s", output);
  cr_expect_not_null(strstr(output, "60000 records"), "%s", output);
  const char* common = "train fashion-mnist --model softmax --device CPU "
                       "--threads 1 --seed 5 --epochs 1";
  snprintf(args, sizeof args, "%s --checkpoint %s/a.ckpt --save %s/a "
           "--loss-log %s", common, dir, dir, from_idx);
  cr_assert_eq(weft(args), 0, "%s", output);
  snprintf(args, sizeof args, "%s --data tfrecord:%s/train.tfrecord.gz "
           "--checkpoint %s/b.ckpt --save %s/b --loss-log %s", common, dir,
           dir, dir, from_tfrecord);
  cr_assert_eq(weft(args), 0, "%s", output);
  cr_expect_not_null(strstr(output, "60000 training records"), "%s", output);
  char* a = slurp(from_idx);
  char* b = slurp(from_tfrecord);
  cr_expect_eq(line_count(a), 600);
  cr_expect_str_eq(a, b, "training from TFRecord files saw other batches");
  free(a);
  free(b);

  snprintf(args, sizeof args, "train fashion-mnist --input feed --data "
           "tfrecord:%s/train.tfrecord.gz", dir);
  cr_expect_eq(weft(args), 2, "%s", output);
  cr_expect_not_null(strstr(output, "drop --input feed"), "%s", output);
  snprintf(args, sizeof args, "train fashion-mnist --data "
           "tfrecord:%s/absent.tfrecord --checkpoint %s/c.ckpt", dir, dir);
  cr_expect_eq(weft(args), 1, "%s", output);
  cr_expect_not_null(strstr(output, "absent.tfrecord"), "%s", output);
}

Test(train_main, mlp_reaches_85_percent_in_two_epochs, .timeout = 900) {
  reaches("mlp", 85.0);
}

/* The classic "deep MNIST" convolutional network: two 5x5 convolution +
 * max-pool layers and a dense layer, Adam at 0.002, batches of 50 (issue
 * 17's target: 89% in two epochs; seeds 1-3 gave 89.2-89.9% here). */
Test(train_main, cnn_reaches_89_percent_in_two_epochs, .timeout = 900) {
  reaches("cnn", 89.0);
}

/* Every step's loss from a --loss-log file ("STEP HEXFLOAT" lines). */
static int read_losses(const char* path, double* losses, int max) {
  FILE* f = fopen(path, "r");
  cr_assert_not_null(f, "no loss log at %s", path);
  int n = 0;
  long long step;
  char value[64];
  while (n < max && fscanf(f, "%lld %63s", &step, value) == 2) {
    cr_assert_eq(step, n, "%s: line %d is step %lld", path, n + 1, step);
    losses[n++] = strtod(value, NULL);
  }
  fclose(f);
  return n;
}

/* Issue 17: the CNN trains on OpenCL as on the CPU.  With one thread, the
 * same seed and the same batches, the first 100 steps' losses agree: the
 * first ten within 1e-5 (relative), where only rounding differs (each
 * device sums convolutions in its own order), and all 100 within 3%, the
 * spread that rounding differences grow to as Adam amplifies them (seed 1
 * here: 1e-7 at step 1, 2e-4 at step 20, 0.7% at step 99, 1.6% at most).
 * A wrong gradient of any layer parts from the CPU's run within a few
 * steps, by far more. */
Test(train_main, cnn_on_opencl_matches_the_cpu, .timeout = 600) {
  need_data();
  if (weft("devices") != 0 || strstr(output, "/device:OPENCL:0") == NULL)
    WT_SKIP("no OpenCL device here (weft devices lists none)");
  char dir[64], args[768], logs[2][128];
  temp_dir(dir, sizeof dir);
  static const char* const kDevices[2] = {"CPU", "OPENCL"};
  double losses[2][128];
  for (int d = 0; d < 2; ++d) {
    snprintf(logs[d], sizeof logs[d], "%s/%s.log", dir, kDevices[d]);
    snprintf(args, sizeof args,
             "train fashion-mnist --model cnn --steps 100 --threads 1 "
             "--seed 1 --device %s --explain --loss-log %s --checkpoint "
             "%s/%s.ckpt --save %s/%s", kDevices[d], logs[d], dir,
             kDevices[d], dir, kDevices[d]);
    cr_assert_eq(weft(args), 0, "%s", output);
    cr_assert_not_null(strstr(output, "(stopped by --steps)"), "%s", output);
    if (d == 1) {
      /* The convolutions and their gradients ran on OpenCL. */
      cr_expect_not_null(strstr(output, "(Conv2DBackpropFilter) -> "
                                        "/device:OPENCL:0"), "%s", output);
      cr_expect_null(strstr(output, "-> /device:CPU:0"), "%s", output);
    }
    cr_assert_eq(read_losses(logs[d], losses[d], 128), 100,
                 "%s: not 100 steps", kDevices[d]);
  }
  double worst = 0;
  for (int k = 0; k < 100; ++k) {
    const double rel =
        fabs(losses[1][k] - losses[0][k]) / fabs(losses[0][k]);
    if (k < 10)
      cr_expect_leq(rel, 1e-5, "step %d: OpenCL %.9g, CPU %.9g", k,
                    losses[1][k], losses[0][k]);
    cr_expect_leq(rel, 0.03, "step %d: OpenCL %.9g, CPU %.9g", k,
                  losses[1][k], losses[0][k]);
    if (rel > worst) worst = rel;
  }
  cr_log_info("largest relative difference over 100 steps: %.3g", worst);
}

/* One run of two epochs against one epoch, a save, and a resumed second
 * epoch in a fresh process: on the CPU with one thread, every loss of the
 * second epoch is the same float, bit for bit — for batches from the input
 * pipeline (which skips the steps done) and for fed ones. */
static void resume_continues_exactly_with(const char* input) {
  need_data();
  char dir[64], args[1024], straight[128], resumed[128], common[256];
  temp_dir(dir, sizeof dir);
  snprintf(straight, sizeof straight, "%s/straight.log", dir);
  snprintf(resumed, sizeof resumed, "%s/resumed.log", dir);
  snprintf(common, sizeof common, "train fashion-mnist --model softmax "
           "--device CPU --threads 1 --seed 7 --input %s", input);
  snprintf(args, sizeof args, "%s --epochs 2 --checkpoint %s/a.ckpt "
           "--save %s/a --loss-log %s", common, dir, dir, straight);
  cr_assert_eq(weft(args), 0, "%s", output);
  snprintf(args, sizeof args, "%s --epochs 1 --checkpoint %s/b.ckpt "
           "--save %s/b --loss-log %s", common, dir, dir, resumed);
  cr_assert_eq(weft(args), 0, "%s", output);
  snprintf(args, sizeof args, "%s --epochs 2 --checkpoint %s/b.ckpt --resume "
           "--save %s/b --loss-log %s", common, dir, dir, resumed);
  cr_assert_eq(weft(args), 0, "%s", output);
  cr_expect_not_null(strstr(output, "resuming from"), "%s", output);
  char* a = slurp(straight);
  char* b = slurp(resumed);
  cr_expect_gt(strlen(a), 1000);
  cr_expect_str_eq(a, b, "the losses after the resume differ");
  free(a);
  free(b);
}

Test(train_main, resume_continues_exactly, .timeout = 600) {
  resume_continues_exactly_with("pipeline");
}

Test(train_main, resume_continues_exactly_when_fed, .timeout = 600) {
  resume_continues_exactly_with("feed");
}

/* ---- Interrupted runs ------------------------------------------------------ */

/* Runs `weft ARGS` with its output on a pipe, as `weft train ... | tee log`
 * would, and sends `signal_number` as soon as a progress line for step 100
 * arrives: that line arriving at all while the run goes on shows progress
 * is flushed line by line.  Returns the exit status (128 + the signal for a
 * process the signal killed); the output is in `output`. */
static int weft_interrupted(const char* args, int signal_number) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "exec %s %s 2>&1", WEFT_TEST_WEFT_TOOL, args);
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", cmd, (char*)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE* from = fdopen(fds[0], "r");
  cr_assert_not_null(from);
  size_t used = 0;
  int signalled = 0;
  char line[4096];
  while (fgets(line, sizeof line, from) != NULL) {
    size_t n = strlen(line);
    if (used + n < sizeof output) {
      memcpy(output + used, line, n);
      used += n;
    }
    if (!signalled && strstr(line, " step 100/") != NULL) {
      kill(pid, signal_number);
      signalled = 1;
    }
  }
  output[used] = '\0';
  fclose(from);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(signalled, "no progress line for step 100 arrived while the run "
            "went on (is progress flushed when piped?):\n%s", output);
  return WIFEXITED(status) ? WEXITSTATUS(status)
                           : 128 + WTERMSIG(status);
}

/* The number after `label` in `output`, which must be there. */
static long long number_after(const char* label) {
  const char* at = strstr(output, label);
  cr_assert_not_null(at, "no '%s' in:\n%s", label, output);
  return strtoll(at + strlen(label), NULL, 10);
}

static long long line_count(const char* text) {
  long long lines = 0;
  for (; *text; ++text) lines += *text == '\n';
  return lines;
}

/* `weft COMMON --checkpoint DIR/b.ckpt --resume --loss-log LOG`: it must
 * say it resumes b.ckpt at `step` of 6000, and LOG must then hold, bit for
 * bit, the losses of the uninterrupted run's log `straight`. */
static void resume_matches(const char* common, const char* dir,
                           const char* log, const char* straight,
                           long long step) {
  char args[1024], expected[128];
  snprintf(args, sizeof args, "%s --checkpoint %s/b.ckpt --resume "
           "--loss-log %s", common, dir, log);
  cr_assert_eq(weft(args), 0, "%s", output);
  cr_expect_eq(number_after("resuming from "), 0, "%s", output);
  snprintf(expected, sizeof expected, "b.ckpt: step %lld of 6000", step);
  cr_expect_not_null(strstr(output, expected), "no '%s' in:\n%s", expected,
                     output);
  char* a = slurp(straight);
  char* b = slurp(log);
  cr_expect_eq(line_count(a), 6000);
  cr_expect_str_eq(a, b, "the losses after the interruption differ");
  free(a);
  free(b);
}

/* Ctrl-C mid-run: the step in flight finishes, the checkpoint is saved,
 * the tool says which step it holds and exits 130; --resume says it
 * continues from that step and then gives, bit for bit, the losses of a
 * run that was never interrupted (one thread on the CPU). */
Test(train_main, sigint_saves_and_resume_continues_exactly, .timeout = 600) {
  need_data();
  char dir[64], args[1024], straight[128], interrupted[128];
  temp_dir(dir, sizeof dir);
  snprintf(straight, sizeof straight, "%s/straight.log", dir);
  snprintf(interrupted, sizeof interrupted, "%s/interrupted.log", dir);
  /* Ten epochs: thousands of steps after the signal is sent, so the run
   * cannot finish before it arrives even on a slow machine. */
  const char* common = "train fashion-mnist --model softmax --device CPU "
                       "--threads 1 --seed 3 --epochs 10";
  snprintf(args, sizeof args, "%s --checkpoint %s/a.ckpt --loss-log %s",
           common, dir, straight);
  cr_assert_eq(weft(args), 0, "%s", output);

  snprintf(args, sizeof args, "%s --checkpoint %s/b.ckpt --loss-log %s",
           common, dir, interrupted);
  int status = weft_interrupted(args, SIGINT);
  cr_assert_eq(status, 130, "exit status %d:\n%s", status, output);
  long long saved = number_after("interrupted by SIGINT after step ");
  cr_expect_not_null(strstr(output, "b.ckpt"), "%s", output);
  cr_assert_geq(saved, 100, "%s", output);
  cr_assert_lt(saved, 6000, "%s", output);
  /* The log holds exactly the steps the checkpoint holds. */
  char* log = slurp(interrupted);
  cr_expect_eq(line_count(log), saved, "%s", output);
  free(log);

  resume_matches(common, dir, interrupted, straight, saved);
}

Test(train_main, sigterm_saves_and_exits_143, .timeout = 600) {
  need_data();
  char dir[64], args[1024];
  temp_dir(dir, sizeof dir);
  snprintf(args, sizeof args, "train fashion-mnist --model softmax "
           "--device CPU --epochs 10 --checkpoint %s/c.ckpt", dir);
  cr_assert_eq(weft_interrupted(args, SIGTERM), 143, "%s", output);
  cr_expect_geq(number_after("interrupted by SIGTERM after step "), 100);
  expect_checkpoint(dir, "c.ckpt");
}

/* --resume refuses, naming the file, what it cannot continue: no file, a
 * file of another model or batch size, a run already finished. */
Test(train_main, resume_refuses_what_it_cannot_continue, .timeout = 600) {
  need_data();
  char dir[64], args[1024];
  temp_dir(dir, sizeof dir);
  snprintf(args, sizeof args, "train fashion-mnist --resume --checkpoint "
           "%s/none.ckpt", dir);
  cr_expect_eq(weft(args), 1, "%s", output);
  cr_expect_not_null(strstr(output, "no checkpoint at"), "%s", output);
  cr_expect_not_null(strstr(output, "none.ckpt"), "%s", output);

  snprintf(args, sizeof args, "train fashion-mnist --epochs 1 --device CPU "
           "--checkpoint %s/done.ckpt", dir);
  cr_assert_eq(weft(args), 0, "%s", output);
  static const struct {
    const char* flags;
    const char* says;
  } cases[] = {
      {"--epochs 1", "nothing to resume"},
      {"--epochs 2 --batch 50", "--batch 100"},
      {"--epochs 2 --seed 9", "--seed 1"},
      {"--epochs 2 --model mlp", "softmax/weights"},
      {"--epochs 2 --optimizer adam", "--optimizer sgd"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    snprintf(args, sizeof args, "train fashion-mnist --device CPU --resume "
             "--checkpoint %s/done.ckpt %s", dir, cases[i].flags);
    cr_expect_eq(weft(args), 1, "%s: %s", cases[i].flags, output);
    cr_expect_not_null(strstr(output, cases[i].says), "%s: no '%s' in:\n%s",
                       cases[i].flags, cases[i].says, output);
    cr_expect_not_null(strstr(output, "done.ckpt"), "%s", output);
  }
}

/* ---- Bad data ------------------------------------------------------------ */

static void write_gz(const char* path, const void* data, size_t n) {
  gzFile f = gzopen(path, "wb");
  cr_assert_not_null(f);
  if (n) cr_assert_eq(gzwrite(f, data, (unsigned)n), (int)n);
  gzclose(f);
}

/* A directory with a well-formed label file and the given image file. */
static void bad_dataset(char* dir, size_t n, const void* images,
                        size_t images_size) {
  temp_dir(dir, n);
  char path[256];
  unsigned char labels[8 + 3] = {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3};
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
  write_gz(path, labels, sizeof labels);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  write_gz(path, images, images_size);
}

Test(train_main, missing_data_is_a_clear_error) {
  cr_assert_eq(weft("train fashion-mnist --data /nonexistent/fm"), 1, "%s",
               output);
  cr_expect_not_null(strstr(output, "/nonexistent/fm/train-images"), "%s",
                     output);
  cr_expect_not_null(strstr(output, "dataset-fashion-mnist"), "%s", output);
}

Test(train_main, malformed_data_is_a_clear_error) {
  char dir[64], args[256];
  static const struct {
    unsigned char bytes[24];
    size_t size;
    const char* says;
  } cases[] = {
      {{0}, 0, "too short"},
      {{1, 2, 8, 3}, 4, "bad magic"},
      {{0, 0, 9, 3}, 4, "element type"},
      {{0, 0, 8, 2}, 4, "dimensions"},
      {{0, 0, 8, 3, 0, 0, 0, 3}, 8, "truncated"},
      {{0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2}, 18,
       "truncated"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    bad_dataset(dir, sizeof dir, cases[i].bytes, cases[i].size);
    snprintf(args, sizeof args, "train fashion-mnist --data %s", dir);
    cr_expect_eq(weft(args), 1, "case %zu: %s", i, output);
    cr_expect_not_null(strstr(output, cases[i].says),
                       "case %zu: no '%s' in:\n%s", i, cases[i].says, output);
    cr_expect_not_null(strstr(output, dir), "case %zu: %s", i, output);
  }
  /* Too many labels for the images. */
  unsigned char images[16 + 4] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2,
                                  0, 0, 0, 2, 1, 2, 3, 4};
  bad_dataset(dir, sizeof dir, images, sizeof images);
  snprintf(args, sizeof args, "train fashion-mnist --data %s", dir);
  cr_expect_eq(weft(args), 1, "%s", output);
  cr_expect_not_null(strstr(output, "labels"), "%s", output);
}

Test(train_main, bad_arguments_are_usage_errors) {
  cr_expect_eq(weft("train mnist"), 2, "%s", output);
  cr_expect_eq(weft("train fashion-mnist --model resnet"), 2, "%s", output);
  cr_expect_not_null(strstr(output, "softmax, mlp, cnn or lstm"), "%s",
                     output);
  cr_expect_eq(weft("train fashion-mnist --epochs 0"), 2, "%s", output);
  cr_expect_eq(weft("train fashion-mnist --learning-rate -1"), 2, "%s",
               output);
  cr_expect_eq(weft("train fashion-mnist --checkpoint-every 5x"), 2, "%s",
               output);
  cr_expect_not_null(strstr(output, "30s, 10m, 1h"), "%s", output);
  cr_expect_eq(weft("train fashion-mnist --checkpoint-every 0"), 2, "%s",
               output);
  cr_expect_eq(weft("train fashion-mnist --keep 0"), 2, "%s", output);
  cr_expect_eq(weft("train fashion-mnist --validation -3"), 2, "%s", output);
  cr_expect_eq(weft("train fashion-mnist --data tfrecord:x.tfrecord "
                    "--validation 10"), 2, "%s", output);
}

/* Where the run will save is checked before it trains: a directory that
 * does not exist, or a checkpoint path that is a directory, fails at once
 * (exit 2) instead of after the whole run. */
Test(train_main, unwritable_outputs_fail_before_training) {
  char dir[64], args[1024];
  temp_dir(dir, sizeof dir);
  snprintf(args, sizeof args, "train fashion-mnist --checkpoint "
           "%s/missing/x.ckpt --save %s/model", dir, dir);
  cr_expect_eq(weft(args), 2, "%s", output);
  cr_expect_not_null(strstr(output, "--checkpoint"), "%s", output);
  cr_expect_not_null(strstr(output, "cannot write in"), "%s", output);
  cr_expect_null(strstr(output, "training and"), "it read the data first:\n%s",
                 output);
  snprintf(args, sizeof args, "train fashion-mnist --checkpoint %s "
           "--save %s/model", dir, dir);
  cr_expect_eq(weft(args), 2, "%s", output);
  cr_expect_not_null(strstr(output, "not a regular file"), "%s", output);
  snprintf(args, sizeof args, "train fashion-mnist --checkpoint %s/x.ckpt "
           "--save %s/x.ckpt.d/no/model", dir, dir);
  cr_expect_eq(weft(args), 2, "%s", output);
  cr_expect_not_null(strstr(output, "--save"), "%s", output);
}

/* The step-stamped checkpoints ("PATH-STEP") in `dir` of `base`, sorted;
 * returns how many. */
static int stamped_checkpoints(const char* dir, const char* base,
                               long long* steps, int max) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls %s | sed -n 's/^%s-\\([0-9]*\\)$/\\1/p' | "
           "sort -n", dir, base);
  FILE* p = popen(cmd, "r");
  cr_assert_not_null(p);
  int n = 0;
  while (n < max && fscanf(p, "%lld", &steps[n]) == 1) ++n;
  pclose(p);
  return n;
}

/* A run killed outright (SIGKILL: no chance to save) after some periodic
 * checkpoints (--checkpoint-every 50 --keep 3), relaunched with --resume,
 * continues from the newest of them and gives, bit for bit, the losses of
 * a run never interrupted (one thread on the CPU): the loss log drops the
 * steps the killed run did after that checkpoint, which the resumed run
 * does again.  Only the newest three step-stamped files remain. */
Test(train_main, killed_run_resumes_from_periodic_checkpoints_exactly,
     .timeout = 600) {
  need_data();
  char dir[64], args[1024], straight[128], killed[128];
  temp_dir(dir, sizeof dir);
  snprintf(straight, sizeof straight, "%s/straight.log", dir);
  snprintf(killed, sizeof killed, "%s/killed.log", dir);
  const char* common = "train fashion-mnist --model softmax --device CPU "
                       "--threads 1 --seed 5 --epochs 10 "
                       "--checkpoint-every 50 --keep 3";
  snprintf(args, sizeof args, "%s --checkpoint %s/a.ckpt --loss-log %s",
           common, dir, straight);
  cr_assert_eq(weft(args), 0, "%s", output);

  snprintf(args, sizeof args, "%s --checkpoint %s/b.ckpt --loss-log %s",
           common, dir, killed);
  cr_assert_eq(weft_interrupted(args, SIGKILL), 128 + SIGKILL, "%s", output);
  long long steps[16];
  int n = stamped_checkpoints(dir, "b.ckpt", steps, 16);
  cr_assert_geq(n, 2, "periodic checkpoints before step 100: %d", n);
  cr_expect_leq(n, 3, "--keep 3 left %d", n);
  for (int i = 0; i < n; ++i)
    cr_expect_eq(steps[i] % 50, 0, "b.ckpt-%lld", steps[i]);
  expect_checkpoint(dir, "b.ckpt");
  long long newest = steps[n - 1];
  /* The killed run logged steps past its newest checkpoint. */
  char* log = slurp(killed);
  cr_expect_geq(line_count(log), newest, "%s", log);
  free(log);

  resume_matches(common, dir, killed, straight, newest);
  n = stamped_checkpoints(dir, "b.ckpt", steps, 16);
  cr_expect_eq(n, 3);
  cr_expect_eq(steps[0], 5900);
  cr_expect_eq(steps[2], 6000);
}
