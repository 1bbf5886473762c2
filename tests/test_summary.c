/* TensorBoard output (weft/summary.h): the summary writer's files, framed
 * as TFRecord records with masked CRC-32C (checked here by the test's own
 * CRC), the summary ops, and every way of giving them bad input.  What the
 * records hold is checked by TensorBoard's own reader in
 * tests/test_tensorboard.py. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "weft/weft.h"

/* ---- The test's own reading of the file ---------------------------------- */

static uint32_t crc32c(const unsigned char* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

static uint32_t masked(const unsigned char* p, size_t n) {
  uint32_t c = crc32c(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

typedef struct records {
  int count;
  unsigned char* data;  /* the whole file */
  size_t size;
  size_t first_data, first_size;  /* the first record's payload */
} records;

/* Reads `path`, checking every record's framing and checksums. */
static records read_records(const char* path) {
  records r = {0};
  FILE* f = fopen(path, "rb");
  cr_assert(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  r.size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  r.data = malloc(r.size + 1);
  cr_assert(fread(r.data, 1, r.size, f) == r.size);
  fclose(f);
  size_t at = 0;
  while (at < r.size) {
    cr_assert(at + 12 <= r.size, "a partial header at %zu", at);
    uint64_t len;
    uint32_t len_crc, data_crc;
    memcpy(&len, r.data + at, 8);
    memcpy(&len_crc, r.data + at + 8, 4);
    cr_assert_eq(len_crc, masked(r.data + at, 8), "length CRC at %zu", at);
    cr_assert(at + 12 + len + 4 <= r.size, "a partial record at %zu", at);
    memcpy(&data_crc, r.data + at + 12 + len, 4);
    cr_assert_eq(data_crc, masked(r.data + at + 12, len), "data CRC at %zu",
                 at);
    if (r.count == 0) {
      r.first_data = at + 12;
      r.first_size = len;
    }
    ++r.count;
    at += 12 + len + 4;
  }
  return r;
}

static int record_count(const char* path) {
  records r = read_records(path);
  free(r.data);
  return r.count;
}

static int contains(const unsigned char* p, size_t n, const char* s) {
  size_t k = strlen(s);
  for (size_t i = 0; i + k <= n; ++i)
    if (memcmp(p + i, s, k) == 0) return 1;
  return 0;
}

static char* temp_dir(void) {
  char* dir = strdup("/tmp/weft-summary-XXXXXX");
  cr_assert(mkdtemp(dir) != NULL);
  return dir;
}

static void remove_tree(const char* dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* ---- The writer ------------------------------------------------------------ */

Test(summary, writer_makes_the_directories_and_a_framed_event_file) {
  char* dir = temp_dir();
  char logdir[512];
  snprintf(logdir, sizeof logdir, "%s/runs/first", dir);
  weft_summary_writer* w = NULL;
  WT_OK(weft_summary_writer_create(logdir, ".demo", &w));
  const char* path = weft_summary_writer_path(w);
  char prefix[600];
  snprintf(prefix, sizeof prefix, "%s/events.out.tfevents.", logdir);
  cr_expect_eq(strncmp(path, prefix, strlen(prefix)), 0, "%s", path);
  cr_expect_str_eq(path + strlen(path) - 5, ".demo");
  /* The file-version event is there before anything else is added. */
  records r = read_records(path);
  cr_expect_eq(r.count, 1);
  cr_expect(contains(r.data + r.first_data, r.first_size, "brain.Event:2"));
  free(r.data);
  WT_OK(weft_summary_writer_add_scalar(w, "loss", 1, 0.25));
  WT_OK(weft_summary_writer_add_text(w, "notes", 1, "**bold** text"));
  float values[6] = {-2, -1, 0, 1, 2, 3};
  int64_t dims[2] = {2, 3};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, dims, 2, values);
  WT_OK(weft_summary_writer_add_histogram(w, "h", 2, t));
  weft_tensor_destroy(t);
  WT_OK(weft_summary_writer_add_restart(w, 2, NULL));
  WT_OK(weft_summary_writer_flush(w));
  /* Readable while open: each addition is written whole. */
  cr_expect_eq(record_count(path), 5);
  char kept[600];
  snprintf(kept, sizeof kept, "%s", path);
  WT_OK(weft_summary_writer_close(w));
  WT_EXPECT_CODE(weft_summary_writer_add_scalar(w, "loss", 3, 1.0),
                 WEFT_FAILED_PRECONDITION);
  weft_summary_writer_destroy(w);
  cr_expect_eq(record_count(kept), 5);
  remove_tree(dir);
  free(dir);
}

Test(summary, two_writers_in_one_second_get_two_files) {
  char* dir = temp_dir();
  weft_summary_writer *a = NULL, *b = NULL;
  WT_OK(weft_summary_writer_create(dir, NULL, &a));
  WT_OK(weft_summary_writer_create(dir, NULL, &b));
  cr_expect_str_neq(weft_summary_writer_path(a), weft_summary_writer_path(b));
  WT_OK(weft_summary_writer_add_scalar(a, "x", 0, 1));
  cr_expect_eq(record_count(weft_summary_writer_path(a)), 2);
  cr_expect_eq(record_count(weft_summary_writer_path(b)), 1);
  weft_summary_writer_destroy(a);
  weft_summary_writer_destroy(b);
  remove_tree(dir);
  free(dir);
}

Test(summary, a_directory_that_cannot_be_is_a_clear_error) {
  char* dir = temp_dir();
  char file[512], below[600];
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE* f = fopen(file, "w");
  fclose(f);
  snprintf(below, sizeof below, "%s/logs", file);
  weft_summary_writer* w = NULL;
  WT_EXPECT_ERROR(weft_summary_writer_create(file, NULL, &w),
                  WEFT_FAILED_PRECONDITION, "is not a directory");
  WT_EXPECT_ERROR(weft_summary_writer_create(below, NULL, &w),
                  WEFT_FAILED_PRECONDITION, "is not a directory");
  cr_expect_null(w);
  WT_EXPECT_CODE(weft_summary_writer_create("", NULL, &w),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_summary_writer_create(NULL, NULL, &w),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_ERROR(weft_summary_writer_create(dir, "a/b", &w),
                  WEFT_INVALID_ARGUMENT, "'/'");
  WT_EXPECT_CODE(weft_summary_writer_create(dir, NULL, NULL),
                 WEFT_INVALID_ARGUMENT);
  if (geteuid() != 0) {  /* root writes anywhere */
    char locked[512];
    snprintf(locked, sizeof locked, "%s/locked", dir);
    mkdir(locked, 0500);
    WT_EXPECT_CODE(weft_summary_writer_create(locked, NULL, &w),
                   WEFT_UNAVAILABLE);
  }
  remove_tree(dir);
  free(dir);
}

Test(summary, bad_additions_are_refused_and_write_nothing) {
  char* dir = temp_dir();
  weft_summary_writer* w = NULL;
  WT_OK(weft_summary_writer_create(dir, NULL, &w));
  const char* path = weft_summary_writer_path(w);
  WT_EXPECT_ERROR(weft_summary_writer_add_scalar(w, "", 0, 1),
                  WEFT_INVALID_ARGUMENT, "empty");
  WT_EXPECT_ERROR(weft_summary_writer_add_scalar(w, "bad\xff", 0, 1),
                  WEFT_INVALID_ARGUMENT, "UTF-8");
  WT_EXPECT_ERROR(weft_summary_writer_add_scalar(w, "line\nbreak", 0, 1),
                  WEFT_INVALID_ARGUMENT, "control character");
  WT_EXPECT_CODE(weft_summary_writer_add_scalar(w, NULL, 0, 1),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_summary_writer_add_scalar(NULL, "x", 0, 1),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_summary_writer_add_text(w, "t", 0, NULL),
                 WEFT_INVALID_ARGUMENT);
  char long_tag[1100];
  memset(long_tag, 'a', sizeof long_tag - 1);
  long_tag[sizeof long_tag - 1] = '\0';
  WT_EXPECT_ERROR(weft_summary_writer_add_scalar(w, long_tag, 0, 1),
                  WEFT_INVALID_ARGUMENT, "at most 1024");
  /* A valid multi-byte tag passes. */
  WT_OK(weft_summary_writer_add_scalar(w, "caf\xc3\xa9/\xe2\x9c\x93", 0, 1));

  float with_nan[3] = {1, NAN, 2};
  int64_t three = 3;
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, &three, 1, with_nan);
  WT_EXPECT_ERROR(weft_summary_writer_add_histogram(w, "h", 0, t),
                  WEFT_INVALID_ARGUMENT, "NaN", "element 1");
  WT_EXPECT_CODE(weft_summary_writer_add_histogram(w, "h", 0, NULL),
                 WEFT_INVALID_ARGUMENT);
  /* Not an image: rank 2, five channels, int32. */
  WT_EXPECT_ERROR(weft_summary_writer_add_image(w, "i", 0, t, 1),
                  WEFT_INVALID_ARGUMENT, "[N, H, W, C]");
  weft_tensor_destroy(t);
  int64_t five[3] = {2, 2, 5};
  t = wt_tensor(WEFT_UINT8, five, 3, NULL);
  WT_EXPECT_ERROR(weft_summary_writer_add_image(w, "i", 0, t, 1),
                  WEFT_INVALID_ARGUMENT, "channels");
  weft_tensor_destroy(t);
  int64_t rgb[3] = {2, 2, 3};
  t = wt_tensor(WEFT_INT32, rgb, 3, NULL);
  WT_EXPECT_ERROR(weft_summary_writer_add_image(w, "i", 0, t, 1),
                  WEFT_INVALID_ARGUMENT, "uint8 or float32");
  weft_tensor_destroy(t);
  t = wt_tensor(WEFT_UINT8, rgb, 3, NULL);
  WT_EXPECT_ERROR(weft_summary_writer_add_image(w, "i", 0, t, 0),
                  WEFT_INVALID_ARGUMENT, "max_images");
  weft_tensor_destroy(t);
  /* add_summary takes a summary op's output only. */
  unsigned char junk[4] = {0xff, 0xff, 0xff, 0xff};
  int64_t four = 4;
  t = wt_tensor(WEFT_UINT8, &four, 1, junk);
  WT_EXPECT_ERROR(weft_summary_writer_add_summary(w, 0, t),
                  WEFT_INVALID_ARGUMENT, "not a serialized Summary");
  weft_tensor_destroy(t);
  t = wt_tensor(WEFT_FLOAT32, &three, 1, NULL);
  WT_EXPECT_ERROR(weft_summary_writer_add_summary(w, 0, t),
                  WEFT_INVALID_ARGUMENT, "uint8 vector");
  weft_tensor_destroy(t);
  WT_EXPECT_CODE(weft_summary_writer_add_graph(w, NULL, NULL),
                 WEFT_INVALID_ARGUMENT);
  /* Only the file version and the one good scalar. */
  cr_expect_eq(record_count(path), 2);
  weft_summary_writer_destroy(w);
  weft_summary_writer_destroy(NULL);
  remove_tree(dir);
  free(dir);
}

/* ---- The ops ------------------------------------------------------------- */

static weft_output summary_op(weft_graph* g, const char* op, const char* name,
                              const char* tag, weft_output in) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, in);
  weft_op_set_attr_string(b, "tag", tag);
  weft_node* n = NULL;
  WT_OK(weft_op_finish(b, &n));
  return (weft_output){n, 0};
}

static weft_status* try_summary_op(weft_graph* g, const char* op,
                                   const char* name, const char* tag,
                                   weft_output in) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, in);
  if (tag) weft_op_set_attr_string(b, "tag", tag);
  weft_node* n = NULL;
  return weft_op_finish(b, &n);
}

Test(summary, ops_make_summaries_the_writer_takes) {
  weft_graph* g = wt_graph_new();
  float values[6] = {-2, -1, 0, 1, 2, 3};
  int64_t dims[2] = {2, 3};
  weft_output x = wt_const_f32(g, "x", dims, 2, values);
  weft_output m = wt_const_f32(g, "m", NULL, 0, values + 5);
  unsigned char pixels[2 * 4 * 5 * 3];
  for (size_t i = 0; i < sizeof pixels; ++i) pixels[i] = (unsigned char)(i * 7);
  int64_t idims[4] = {2, 4, 5, 3};
  weft_output img = wt_const(g, "img", wt_tensor(WEFT_UINT8, idims, 4, pixels));
  const char* text = "**hello** weft";
  int64_t tlen = (int64_t)strlen(text);
  weft_output txt = wt_const(g, "txt", wt_tensor(WEFT_UINT8, &tlen, 1, text));
  weft_output parts[4] = {
      summary_op(g, "ScalarSummary", "s", "op/scalar", m),
      summary_op(g, "HistogramSummary", "h", "op/hist", x),
      summary_op(g, "ImageSummary", "i", "op/image", img),
      summary_op(g, "TextSummary", "t", "op/text", txt)};
  weft_op_builder* b = weft_op_begin(g, "MergeSummary", "merged");
  weft_op_add_input_list(b, parts, 4);
  weft_node* merged = NULL;
  WT_OK(weft_op_finish(b, &merged));
  weft_session* s = wt_session_new(g, NULL);
  weft_output fetches[5] = {parts[0], parts[1], parts[2], parts[3],
                            {merged, 0}};
  weft_tensor* out[5] = {NULL};
  WT_OK(weft_session_run(s, NULL, NULL, 0, fetches, 5, NULL, 0, out));
  int64_t total = 0;
  for (int i = 0; i < 4; ++i) {
    cr_expect_eq(weft_tensor_dtype(out[i]), WEFT_UINT8);
    cr_expect_eq(weft_tensor_rank(out[i]), 1);
    cr_expect_gt(weft_tensor_dim(out[i], 0), 4);
    total += weft_tensor_dim(out[i], 0);
  }
  /* Merging concatenates: each part's bytes, in order. */
  cr_expect_eq(weft_tensor_dim(out[4], 0), total);
  const unsigned char* all = weft_tensor_data(out[4]);
  int64_t at = 0;
  for (int i = 0; i < 4; ++i) {
    int64_t n = weft_tensor_dim(out[i], 0);
    cr_expect_eq(memcmp(all + at, weft_tensor_data(out[i]), (size_t)n), 0);
    at += n;
  }
  cr_expect(contains(all, (size_t)total, "op/text"));
  cr_expect(contains(all, (size_t)total, "\x89PNG"));
  char* dir = temp_dir();
  weft_summary_writer* w = NULL;
  WT_OK(weft_summary_writer_create(dir, NULL, &w));
  WT_OK(weft_summary_writer_add_summary(w, 7, out[4]));
  weft_run_metadata* md = weft_run_metadata_create();
  weft_tensor* again = NULL;
  WT_OK(weft_session_run_with_metadata(s, NULL, NULL, 0, fetches + 4, 1,
                                          NULL, 0, &again, md));
  WT_OK(weft_summary_writer_add_graph(w, g, md));
  WT_OK(weft_summary_writer_add_graph(w, g, NULL));
  records r = read_records(weft_summary_writer_path(w));
  cr_expect_eq(r.count, 4);
  /* The graph names its nodes and where they ran. */
  cr_expect(contains(r.data, r.size, "MergeSummary"));
  cr_expect(contains(r.data, r.size, "/device:CPU:0"));
  free(r.data);
  weft_summary_writer_destroy(w);
  weft_tensor_destroy(again);
  weft_run_metadata_destroy(md);
  for (int i = 0; i < 5; ++i) weft_tensor_destroy(out[i]);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  remove_tree(dir);
  free(dir);
}

Test(summary, ops_refuse_bad_input_when_built_or_run) {
  weft_graph* g = wt_graph_new();
  float two[2] = {1, NAN};
  int64_t n2 = 2;
  weft_output v = wt_const_f32(g, "v", &n2, 1, two);
  WT_EXPECT_ERROR(try_summary_op(g, "ScalarSummary", "s1", "x", v),
                  WEFT_INVALID_ARGUMENT, "one element");
  WT_EXPECT_ERROR(try_summary_op(g, "ScalarSummary", "s2", "", v),
                  WEFT_INVALID_ARGUMENT, "tag");
  WT_EXPECT_CODE(try_summary_op(g, "ScalarSummary", "s3", NULL, v),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_ERROR(try_summary_op(g, "ImageSummary", "i1", "x", v),
                  WEFT_INVALID_ARGUMENT, "[N, H, W, C]");
  WT_EXPECT_ERROR(try_summary_op(g, "TextSummary", "t1", "x", v),
                  WEFT_INVALID_ARGUMENT, "uint8");
  weft_op_builder* b = weft_op_begin(g, "MergeSummary", "m1");
  weft_op_add_input(b, v);
  weft_node* n = NULL;
  WT_EXPECT_ERROR(weft_op_finish(b, &n), WEFT_INVALID_ARGUMENT, "uint8");
  /* A NaN is known only when the op runs. */
  weft_output h = summary_op(g, "HistogramSummary", "h", "x", v);
  weft_session* s = wt_session_new(g, NULL);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &h, 1, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "'h'", "NaN");
  cr_expect_null(out);
  /* Bytes that are no summary fail MergeSummary when it runs. */
  unsigned char junk[3] = {0xff, 0xff, 0xff};
  int64_t n3 = 3;
  weft_output bytes = wt_const(g, "junk", wt_tensor(WEFT_UINT8, &n3, 1, junk));
  b = weft_op_begin(g, "MergeSummary", "m2");
  weft_op_add_input(b, bytes);
  WT_OK(weft_op_finish(b, &n));
  weft_output m2 = {n, 0};
  WT_EXPECT_ERROR(weft_session_run(s, NULL, NULL, 0, &m2, 1, NULL, 0, &out),
                  WEFT_INVALID_ARGUMENT, "not a serialized Summary");
  cr_expect_eq(weft_op_gradient_status("HistogramSummary"), 0);
  weft_session_destroy(s);
  weft_graph_destroy(g);
}
