/* The main job, `weft train fashion-mnist`, run as a user runs it: accuracy
 * targets after two epochs, exact resume from a checkpoint, and clear
 * errors for missing or malformed data.  Needs Debian's
 * dataset-fashion-mnist (the README's commands install it); without it the
 * training cases say "skipped: ..." (the bad-data cases still run). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

Test(train_main, softmax_reaches_80_percent_in_two_epochs, .timeout = 600) {
  need_data();
  char dir[64], args[512];
  temp_dir(dir, sizeof dir);
  snprintf(args, sizeof args,
           "train fashion-mnist --model softmax --epochs 2 --device CPU "
           "--checkpoint %s/softmax.ckpt", dir);
  cr_assert_eq(weft(args), 0, "%s", output);
  double acc = accuracy_of(output);
  cr_expect_geq(acc, 80.0, "softmax: %.2f%%\n%s", acc, output);
  char path[128];
  snprintf(path, sizeof path, "%s/softmax.ckpt", dir);
  cr_expect_eq(access(path, R_OK), 0, "no checkpoint at %s", path);
}

Test(train_main, mlp_reaches_85_percent_in_two_epochs, .timeout = 900) {
  need_data();
  char dir[64], args[512];
  temp_dir(dir, sizeof dir);
  snprintf(args, sizeof args,
           "train fashion-mnist --model mlp --epochs 2 --device CPU "
           "--checkpoint %s/mlp.ckpt", dir);
  cr_assert_eq(weft(args), 0, "%s", output);
  double acc = accuracy_of(output);
  cr_expect_geq(acc, 85.0, "mlp: %.2f%%\n%s", acc, output);
}

/* One run of two epochs against one epoch, a save, and a resumed second
 * epoch in a fresh process: on the CPU with one thread, every loss of the
 * second epoch is the same float, bit for bit. */
Test(train_main, resume_continues_exactly, .timeout = 600) {
  need_data();
  char dir[64], args[1024], straight[128], resumed[128];
  temp_dir(dir, sizeof dir);
  snprintf(straight, sizeof straight, "%s/straight.log", dir);
  snprintf(resumed, sizeof resumed, "%s/resumed.log", dir);
  const char* common =
      "train fashion-mnist --model softmax --device CPU --threads 1 --seed 7";
  snprintf(args, sizeof args, "%s --epochs 2 --checkpoint %s/a.ckpt "
           "--loss-log %s", common, dir, straight);
  cr_assert_eq(weft(args), 0, "%s", output);
  snprintf(args, sizeof args, "%s --epochs 1 --checkpoint %s/b.ckpt "
           "--loss-log %s", common, dir, resumed);
  cr_assert_eq(weft(args), 0, "%s", output);
  snprintf(args, sizeof args, "%s --epochs 2 --checkpoint %s/b.ckpt --resume "
           "--loss-log %s", common, dir, resumed);
  cr_assert_eq(weft(args), 0, "%s", output);
  cr_expect_not_null(strstr(output, "resumed from"), "%s", output);
  char* a = slurp(straight);
  char* b = slurp(resumed);
  cr_expect_gt(strlen(a), 1000);
  cr_expect_str_eq(a, b, "the losses after the resume differ");
  free(a);
  free(b);
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
  cr_expect_eq(weft("train fashion-mnist --model cnn"), 2, "%s", output);
  cr_expect_eq(weft("train fashion-mnist --epochs 0"), 2, "%s", output);
  cr_expect_eq(weft("train fashion-mnist --learning-rate -1"), 2, "%s",
               output);
}
