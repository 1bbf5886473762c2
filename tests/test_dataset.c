/* Datasets (issue 15): sources, transformations and the iterator node a
 * graph reads them through.  Expected values are worked out from the
 * inputs the test makes (ranges, slices, files it writes), never from
 * Weft.  Public API only. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

/* Reads every element of `ds` through an iterator node: each component is
 * appended (as raw bytes) to out[c]; returns the element count.  The run
 * after the last must be OUT_OF_RANGE. */
struct reader {
  weft_graph* g;
  weft_session* s;
  weft_output comps[4];
  weft_node* init;
  int32_t n;
};

static struct reader open_reader(const weft_dataset* ds) {
  struct reader r;
  r.g = wt_graph_new();
  r.n = weft_dataset_num_components(ds);
  cr_assert(r.n >= 1 && r.n <= 4);
  WT_OK(weft_dataset_iterator(r.g, "it", ds, r.comps, &r.init));
  r.s = wt_session_new(r.g, "/device:CPU:0");
  return r;
}

static void close_reader(struct reader* r) {
  weft_session_destroy(r->s);
  weft_graph_destroy(r->g);
}

/* The next element's tensors (caller destroys), or the run's status. */
static weft_status* next(struct reader* r, weft_tensor** out) {
  return weft_session_run(r->s, NULL, NULL, 0, r->comps, r->n, NULL, 0, out);
}

static int64_t next_i64(struct reader* r) {
  weft_tensor* t = NULL;
  WT_OK(next(r, &t));
  int64_t v = *(const int64_t*)weft_tensor_data(t);
  weft_tensor_destroy(t);
  return v;
}

static void expect_end(struct reader* r) {
  weft_tensor* t[4] = {0};
  WT_EXPECT_ERROR(next(r, t), WEFT_OUT_OF_RANGE, "end of dataset");
  cr_expect_null(t[0]);
}

Test(dataset, range_take_skip_repeat_and_init) {
  weft_dataset *range = NULL, *skip = NULL, *take = NULL, *rep = NULL;
  WT_OK(weft_dataset_range(0, 10, 3, &range));  /* 0 3 6 9 */
  WT_OK(weft_dataset_skip(range, 1, &skip));    /* 3 6 9 */
  WT_OK(weft_dataset_take(skip, 2, &take));     /* 3 6 */
  WT_OK(weft_dataset_repeat(take, 2, &rep));    /* 3 6 3 6 */
  cr_expect_str_eq(weft_dataset_name(rep), "Repeat(Take(Skip(Range)))");
  cr_expect_eq(weft_dataset_component_dtype(rep, 0), WEFT_INT64);
  struct reader r = open_reader(rep);
  const int64_t want[4] = {3, 6, 3, 6};
  for (int i = 0; i < 4; ++i) cr_expect_eq(next_i64(&r), want[i]);
  expect_end(&r);
  expect_end(&r);  /* and again */
  wt_run_targets(r.s, &r.init, 1);
  cr_expect_eq(next_i64(&r), 3, "init starts the pass again");
  close_reader(&r);
  weft_dataset *down = NULL;
  WT_OK(weft_dataset_range(5, 0, -2, &down));  /* 5 3 1 */
  r = open_reader(down);
  for (int64_t v = 5; v > 0; v -= 2) cr_expect_eq(next_i64(&r), v);
  expect_end(&r);
  close_reader(&r);
  weft_dataset* none = NULL;
  WT_OK(weft_dataset_repeat(take, -1, &none));
  weft_dataset* empty_take = NULL;
  WT_OK(weft_dataset_take(range, 0, &empty_take));
  weft_dataset* forever_empty = NULL;
  WT_OK(weft_dataset_repeat(empty_take, -1, &forever_empty));
  r = open_reader(forever_empty);
  expect_end(&r);  /* not an endless loop */
  close_reader(&r);
  /* Zip: side by side, ending with the shortest. */
  weft_dataset* zipped = NULL;
  const weft_dataset* pair[2] = {down, rep};
  WT_OK(weft_dataset_zip(pair, 2, &zipped));
  cr_expect_str_eq(weft_dataset_name(zipped),
                   "Zip(Range, Repeat(Take(Skip(Range))))");
  r = open_reader(zipped);
  const int64_t left[3] = {5, 3, 1}, right[3] = {3, 6, 3};
  for (int i = 0; i < 3; ++i) {
    weft_tensor* t[2] = {0};
    WT_OK(next(&r, t));
    cr_expect_eq(*(const int64_t*)weft_tensor_data(t[0]), left[i]);
    cr_expect_eq(*(const int64_t*)weft_tensor_data(t[1]), right[i]);
    weft_tensor_destroy(t[0]);
    weft_tensor_destroy(t[1]);
  }
  expect_end(&r);
  close_reader(&r);
  weft_dataset* all[] = {range, skip, take, rep, down, none, empty_take,
                         forever_empty, zipped};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i)
    weft_dataset_destroy(all[i]);
}

Test(dataset, slices_batch_and_drop_remainder) {
  float images[10 * 2];
  int32_t labels[10];
  for (int i = 0; i < 10; ++i) {
    images[2 * i] = (float)i;
    images[2 * i + 1] = (float)(100 + i);
    labels[i] = i % 3;
  }
  weft_tensor* comps[2] = {wt_tensor(WEFT_FLOAT32, WT_SHAPE(10, 2), images),
                           wt_tensor(WEFT_INT32, WT_SHAPE(10), labels)};
  weft_dataset *slices = NULL, *batch = NULL, *dropped = NULL;
  WT_OK(weft_dataset_from_tensor_slices(comps, 2, &slices));
  /* The dataset copied them: changing the tensors changes nothing. */
  memset(weft_tensor_data(comps[0]), 0, sizeof images);
  WT_OK(weft_dataset_batch(slices, 4, 0, &batch));
  WT_OK(weft_dataset_batch(slices, 4, 1, &dropped));
  struct reader r = open_reader(batch);
  for (int b = 0; b < 3; ++b) {
    weft_tensor* out[2] = {0};
    WT_OK(next(&r, out));
    const int64_t rows = b < 2 ? 4 : 2;
    wt_expect_shape(out[0], WEFT_FLOAT32, WT_SHAPE(rows, 2));
    wt_expect_shape(out[1], WEFT_INT32, WT_DIMS(rows), 1);
    cr_expect(memcmp(weft_tensor_data(out[0]), images + 8 * b,
                     (size_t)rows * 2 * sizeof(float)) == 0, "batch %d", b);
    cr_expect(memcmp(weft_tensor_data(out[1]), labels + 4 * b,
                     (size_t)rows * sizeof(int32_t)) == 0, "batch %d", b);
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
  expect_end(&r);
  close_reader(&r);
  r = open_reader(dropped);
  for (int b = 0; b < 2; ++b) {
    weft_tensor* out[2] = {0};
    WT_OK(next(&r, out));
    wt_expect_shape(out[0], WEFT_FLOAT32, WT_SHAPE(4, 2));
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
  expect_end(&r);
  close_reader(&r);
  weft_dataset_destroy(slices);
  weft_dataset_destroy(batch);
  weft_dataset_destroy(dropped);
  weft_tensor_destroy(comps[0]);
  weft_tensor_destroy(comps[1]);
}

/* x -> x * 3 + 1 on int64, with 4 calls at once, in order; then the odd
 * results only. */
Test(dataset, map_in_parallel_keeps_order_and_filter) {
  weft_graph* fn = wt_graph_new();
  weft_output x = wt_placeholder(fn, "x", WEFT_INT64, NULL, 0);
  const int64_t three = 3, one = 1;
  weft_output y = wt_apply2(
      fn, "Add", "y",
      wt_apply2(fn, "Mul", NULL, x,
                wt_const(fn, "three", wt_tensor(WEFT_INT64, NULL, 0, &three))),
      wt_const(fn, "one", wt_tensor(WEFT_INT64, NULL, 0, &one)));
  weft_graph* pg = wt_graph_new();
  weft_output px = wt_placeholder(pg, "x", WEFT_INT64, NULL, 0);
  const int64_t two = 2;
  weft_output odd = wt_apply2(
      pg, "NotEqual", "odd",
      wt_apply2(pg, "FloorMod", NULL, px,
                wt_const(pg, "two", wt_tensor(WEFT_INT64, NULL, 0, &two))),
      wt_const(pg, "zero", wt_tensor(WEFT_INT64, NULL, 0,
                                     &(int64_t){0})));
  weft_dataset *range = NULL, *mapped = NULL, *filtered = NULL;
  WT_OK(weft_dataset_range(0, 50, 1, &range));
  WT_OK(weft_dataset_map(range, fn, &x, 1, &y, 1, 4, &mapped));
  weft_graph_destroy(fn);  /* the dataset keeps what it needs */
  WT_OK(weft_dataset_filter(mapped, pg, &px, 1, odd, &filtered));
  weft_graph_destroy(pg);
  struct reader r = open_reader(mapped);
  for (int64_t i = 0; i < 50; ++i) cr_expect_eq(next_i64(&r), 3 * i + 1);
  expect_end(&r);
  close_reader(&r);
  r = open_reader(filtered);
  for (int64_t i = 0; i < 50; ++i)
    if ((3 * i + 1) % 2 != 0) cr_expect_eq(next_i64(&r), 3 * i + 1);
  expect_end(&r);
  close_reader(&r);
  weft_dataset_destroy(range);
  weft_dataset_destroy(mapped);
  weft_dataset_destroy(filtered);
}

static void shuffled(int64_t seed, int passes, int64_t* got) {
  weft_dataset *range = NULL, *sh = NULL;
  WT_OK(weft_dataset_range(0, 40, 1, &range));
  WT_OK(weft_dataset_shuffle(range, 16, seed, &sh));
  struct reader r = open_reader(sh);
  for (int p = 0; p < passes; ++p) {
    if (p > 0) wt_run_targets(r.s, &r.init, 1);
    for (int i = 0; i < 40; ++i) got[40 * p + i] = next_i64(&r);
    expect_end(&r);
  }
  close_reader(&r);
  weft_dataset_destroy(range);
  weft_dataset_destroy(sh);
}

Test(dataset, shuffle_is_seeded_and_a_permutation_per_pass) {
  int64_t a[80], b[80], c[80];
  shuffled(11, 2, a);
  shuffled(11, 2, b);
  shuffled(12, 2, c);
  cr_expect(memcmp(a, b, sizeof a) == 0, "same seed, same passes");
  cr_expect(memcmp(a, c, sizeof a) != 0, "another seed");
  cr_expect(memcmp(a, a + 40, 40 * sizeof(int64_t)) != 0,
            "each pass shuffles differently");
  for (int p = 0; p < 2; ++p) {
    int seen[40] = {0};
    for (int i = 0; i < 40; ++i) seen[a[40 * p + i]]++;
    for (int i = 0; i < 40; ++i) cr_expect_eq(seen[i], 1);
  }
  /* A buffer of 16 has read at most i + 16 elements when it gives the
   * i-th: nothing comes more than 15 places early. */
  for (int i = 0; i < 40; ++i) cr_expect_leq(a[i], i + 15);
}

static void write_file(const char* path, const void* data, size_t n) {
  FILE* f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* CRC-32C (Castagnoli), bit by bit: an implementation of the test's own. */
static uint32_t crc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
  }
  return ~c;
}
static uint32_t masked(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* TFRecord framing written here; text lines; padded batches of them. */
Test(dataset, tfrecord_text_lines_and_padded_batch) {
  char dir[] = "/tmp/weft-dataset-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char rec[256], txt[256], bad[256];
  snprintf(rec, sizeof rec, "%s/a.tfrecord", dir);
  snprintf(txt, sizeof txt, "%s/lines.txt", dir);
  snprintf(bad, sizeof bad, "%s/bad.tfrecord", dir);
  const char* records[3] = {"x", "hello", ""};
  uint8_t file[256];
  size_t n = 0;
  for (int i = 0; i < 3; ++i) {
    uint64_t len = strlen(records[i]);
    uint8_t head[8];
    for (int k = 0; k < 8; ++k) head[k] = (uint8_t)(len >> (8 * k));
    uint32_t lc = masked(crc32c(head, 8));
    uint32_t dc = masked(crc32c((const uint8_t*)records[i], len));
    memcpy(file + n, head, 8);
    n += 8;
    for (int k = 0; k < 4; ++k) file[n++] = (uint8_t)(lc >> (8 * k));
    memcpy(file + n, records[i], len);
    n += len;
    for (int k = 0; k < 4; ++k) file[n++] = (uint8_t)(dc >> (8 * k));
  }
  write_file(rec, file, n);
  file[8 + 4 + 1 + 4 + 8 + 4 + 2] ^= 0x20;  /* a byte of "hello" */
  write_file(bad, file, n);
  const char text[] = "ab\r\nabcd\n\nz\n";
  write_file(txt, text, sizeof text - 1);

  const char* paths[1] = {rec};
  weft_dataset *ds = NULL, *padded = NULL;
  WT_OK(weft_dataset_tfrecord(paths, 1, "", &ds));
  struct reader r = open_reader(ds);
  for (int i = 0; i < 3; ++i) {
    weft_tensor* t = NULL;
    WT_OK(next(&r, &t));
    const int64_t len = (int64_t)strlen(records[i]);
    wt_expect_shape(t, WEFT_UINT8, WT_DIMS(len), 1);
    if (len > 0)  /* an empty tensor may have no data pointer */
      cr_expect(memcmp(weft_tensor_data(t), records[i], (size_t)len) == 0);
    weft_tensor_destroy(t);
  }
  expect_end(&r);
  close_reader(&r);
  weft_dataset_destroy(ds);

  paths[0] = bad;
  WT_OK(weft_dataset_tfrecord(paths, 1, NULL, &ds));
  r = open_reader(ds);
  weft_tensor* t = NULL;
  WT_OK(next(&r, &t));  /* "x" is intact */
  weft_tensor_destroy(t);
  WT_EXPECT_ERROR(next(&r, &t), WEFT_DATA_LOSS, "bad.tfrecord", "17");
  close_reader(&r);
  weft_dataset_destroy(ds);

  paths[0] = txt;
  WT_OK(weft_dataset_text_lines(paths, 1, &ds));
  WT_OK(weft_dataset_padded_batch(ds, 3, 0, &padded));
  r = open_reader(padded);
  WT_OK(next(&r, &t));
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(3, 4));
  cr_expect(memcmp(weft_tensor_data(t), "ab\0\0abcd\0\0\0\0", 12) == 0);
  weft_tensor_destroy(t);
  WT_OK(next(&r, &t));
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(1, 1));
  cr_expect_eq(*(const uint8_t*)weft_tensor_data(t), 'z');
  weft_tensor_destroy(t);
  expect_end(&r);
  close_reader(&r);
  weft_dataset_destroy(ds);
  weft_dataset_destroy(padded);
  unlink(rec);
  unlink(txt);
  unlink(bad);
  rmdir(dir);
}

/* Reads the IDX file at `path` (5 slices of 2x3 uint8, byte k of slice i
 * = (6i + k) * 7) cast to float32 by a parallel map, through prefetch. */
static void read_idx_pipeline(const char* path) {
  weft_dataset *idx = NULL, *mapped = NULL, *pre = NULL;
  WT_OK(weft_dataset_idx(path, &idx));
  cr_expect_eq(weft_dataset_component_dtype(idx, 0), WEFT_UINT8);
  weft_graph* fn = wt_graph_new();
  weft_output x = wt_placeholder(fn, "x", WEFT_UINT8, WT_SHAPE(2, 3));
  weft_op_builder* b = weft_op_begin(fn, "Cast", "f");
  weft_op_add_input(b, x);
  weft_op_set_attr_dtype(b, "DstT", WEFT_FLOAT32);
  weft_node* cast = NULL;
  WT_OK(weft_op_finish(b, &cast));
  weft_output y = {cast, 0};
  WT_OK(weft_dataset_map(idx, fn, &x, 1, &y, 1, 2, &mapped));
  weft_graph_destroy(fn);
  WT_OK(weft_dataset_prefetch(mapped, 2, &pre));
  struct reader r = open_reader(pre);
  for (int i = 0; i < 5; ++i) {
    weft_tensor* t = NULL;
    WT_OK(next(&r, &t));
    wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(2, 3));
    const float* v = weft_tensor_data(t);
    for (int k = 0; k < 6; ++k)
      cr_expect_eq(v[k], (float)(uint8_t)((6 * i + k) * 7));
    weft_tensor_destroy(t);
  }
  expect_end(&r);
  close_reader(&r);
  weft_dataset_destroy(idx);
  weft_dataset_destroy(mapped);
  weft_dataset_destroy(pre);
}

/* An IDX file written here (big-endian header), read as slices, through a
 * prefetching pipeline; nothing is left running once the session goes. */
Test(dataset, idx_file_through_prefetch_leaves_no_thread) {
  char path[] = "/tmp/weft-idx-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  uint8_t file[4 + 12 + 5 * 2 * 3];
  const uint8_t head[16] = {0, 0, 0x08, 3, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 3};
  memcpy(file, head, 16);
  for (int i = 0; i < 30; ++i) file[16 + i] = (uint8_t)(i * 7);
  write_file(path, file, sizeof file);
  /* The first pass starts what lives for the process (the CPU plugin's
   * threads); the second must leave the count where it found it. */
  read_idx_pipeline(path);
  const int before = wt_thread_count();
  read_idx_pipeline(path);
  cr_expect_eq(wt_thread_count(), before, "threads left behind");
  weft_dataset* idx = NULL;
  file[2] = 0x07;  /* no such element type */
  write_file(path, file, sizeof file);
  WT_EXPECT_ERROR(weft_dataset_idx(path, &idx), WEFT_INVALID_ARGUMENT, path);
  cr_expect_null(idx);
  unlink(path);
}

Test(dataset, bad_input_is_refused) {
  weft_dataset *range = NULL, *out = NULL;
  WT_OK(weft_dataset_range(0, 4, 1, &range));
  WT_EXPECT_ERROR(weft_dataset_range(0, 4, 0, &out), WEFT_INVALID_ARGUMENT,
                  "step");
  WT_EXPECT_ERROR(weft_dataset_batch(range, 0, 0, &out),
                  WEFT_INVALID_ARGUMENT, "batch_size");
  WT_EXPECT_ERROR(weft_dataset_shuffle(range, 0, 1, &out),
                  WEFT_INVALID_ARGUMENT, "buffer_size");
  const char* none[1] = {"/nonexistent/weft.tfrecord"};
  WT_EXPECT_ERROR(weft_dataset_tfrecord(none, 1, "LZMA", &out),
                  WEFT_INVALID_ARGUMENT, "LZMA");
  weft_graph* fn = wt_graph_new();
  weft_output f = wt_placeholder(fn, "x", WEFT_FLOAT32, NULL, 0);
  WT_EXPECT_ERROR(weft_dataset_map(range, fn, &f, 1, &f, 1, 1, &out),
                  WEFT_INVALID_ARGUMENT, "float32", "int64");
  weft_graph_destroy(fn);
  /* A file that is not there fails when read, naming it. */
  WT_OK(weft_dataset_tfrecord(none, 1, "", &out));
  struct reader r = open_reader(out);
  weft_tensor* t = NULL;
  weft_status* st = next(&r, &t);
  cr_assert_not_null(st);
  cr_expect(strstr(weft_status_message(st), "/nonexistent/weft.tfrecord"),
            "%s", weft_status_message(st));
  weft_status_destroy(st);
  close_reader(&r);
  weft_dataset_destroy(out);
  /* A map function that fails names the dataset. */
  weft_graph* bad = wt_graph_new();
  weft_output x = wt_placeholder(bad, "x", WEFT_INT64, NULL, 0);
  const int64_t zero = 0;
  weft_output q = wt_apply2(
      bad, "Div", "q", x,
      wt_const(bad, "zero", wt_tensor(WEFT_INT64, NULL, 0, &zero)));
  WT_OK(weft_dataset_map(range, bad, &x, 1, &q, 1, 1, &out));
  weft_graph_destroy(bad);
  r = open_reader(out);
  WT_EXPECT_ERROR(next(&r, &t), WEFT_INVALID_ARGUMENT, "division by zero",
                  "Map(Range)");
  close_reader(&r);
  weft_dataset_destroy(out);
  weft_graph* g = wt_graph_new();
  weft_output comps[1];
  WT_EXPECT_ERROR(weft_dataset_iterator(g, NULL, range, comps, NULL),
                  WEFT_INVALID_ARGUMENT, "name");
  weft_graph_destroy(g);
  weft_dataset_destroy(range);
}
