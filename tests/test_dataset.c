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
  /* Their elements' shapes: slices [2] and []; batches [-1, 2] (the last
   * may be short), [4, 2] when the remainder is dropped. */
  int64_t d[WEFT_MAX_RANK] = {0};
  cr_expect_eq(weft_dataset_component_shape(slices, 0, d), 1);
  cr_expect_eq(d[0], 2);
  cr_expect_eq(weft_dataset_component_shape(slices, 1, d), 0);
  cr_expect_eq(weft_dataset_component_shape(batch, 0, d), 2);
  cr_expect(d[0] == -1 && d[1] == 2, "[%lld, %lld]", (long long)d[0],
            (long long)d[1]);
  cr_expect_eq(weft_dataset_component_shape(dropped, 1, d), 1);
  cr_expect_eq(d[0], 4);
  cr_expect_eq(weft_dataset_component_shape(dropped, 1, NULL), 1);
  cr_expect_eq(weft_dataset_component_shape(dropped, 2, d), -2);
  cr_expect_eq(weft_dataset_component_shape(dropped, -1, d), -2);
  cr_expect_eq(weft_dataset_component_shape(NULL, 0, d), -2);
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
  const int before = wt_thread_count_settled();
  read_idx_pipeline(path);
  cr_expect_eq(wt_thread_count_down_to(before), before, "threads left behind");
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

/* Fixed-length records: a 3-byte header, 4-byte records and a 2-byte
 * footer written here, over two files; a truncated last record is
 * DATA_LOSS naming the file and the record's offset. */
Test(dataset, fixed_length_records_header_footer_and_truncation) {
  char dir[] = "/tmp/weft-fixed-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char a[256], b[256], cut[256], tiny[256];
  snprintf(a, sizeof a, "%s/a.bin", dir);
  snprintf(b, sizeof b, "%s/b.bin", dir);
  snprintf(cut, sizeof cut, "%s/cut.bin", dir);
  snprintf(tiny, sizeof tiny, "%s/tiny.bin", dir);
  /* a: HDR, records 0..3 4..7 8..11 (byte values), footer FT; b: one
   * record 100..103. */
  uint8_t file[3 + 3 * 4 + 2];
  memcpy(file, "HDR", 3);
  for (int i = 0; i < 12; ++i) file[3 + i] = (uint8_t)i;
  memcpy(file + 15, "FT", 2);
  write_file(a, file, sizeof file);
  const uint8_t other[3 + 4 + 2] = {'h', 'd', 'r', 100, 101, 102, 103, 'f',
                                    't'};
  write_file(b, other, sizeof other);
  /* cut: two records, then 3 bytes of a third, then the footer: the
   * partial record starts at offset 3 + 8 = 11. */
  write_file(cut, file, 3 + 8 + 3 + 2);
  write_file(tiny, "HD", 2);

  const char* paths[2] = {a, b};
  weft_dataset* ds = NULL;
  WT_OK(weft_dataset_fixed_length_records(paths, 2, 3, 4, 2, NULL, &ds));
  cr_expect_str_eq(weft_dataset_name(ds), "FixedLengthRecords");
  cr_expect_eq(weft_dataset_num_components(ds), 1);
  cr_expect_eq(weft_dataset_component_dtype(ds, 0), WEFT_UINT8);
  struct reader r = open_reader(ds);
  const uint8_t want[4][4] = {
      {0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {100, 101, 102, 103}};
  for (int i = 0; i < 4; ++i) {
    weft_tensor* t = NULL;
    WT_OK(next(&r, &t));
    wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(4));
    cr_expect(memcmp(weft_tensor_data(t), want[i], 4) == 0, "record %d", i);
    weft_tensor_destroy(t);
  }
  expect_end(&r);
  close_reader(&r);
  weft_dataset_destroy(ds);

  paths[0] = cut;
  WT_OK(weft_dataset_fixed_length_records(paths, 1, 3, 4, 2, "", &ds));
  r = open_reader(ds);
  for (int i = 0; i < 2; ++i) {
    weft_tensor* t = NULL;
    WT_OK(next(&r, &t));
    cr_expect(memcmp(weft_tensor_data(t), want[i], 4) == 0, "record %d", i);
    weft_tensor_destroy(t);
  }
  weft_tensor* t = NULL;
  WT_EXPECT_ERROR(next(&r, &t), WEFT_DATA_LOSS, cut, "offset 11",
                  "truncated");
  cr_expect_null(t);
  close_reader(&r);
  weft_dataset_destroy(ds);

  paths[0] = tiny;  /* shorter than its header */
  WT_OK(weft_dataset_fixed_length_records(paths, 1, 3, 4, 2, NULL, &ds));
  r = open_reader(ds);
  WT_EXPECT_ERROR(next(&r, &t), WEFT_DATA_LOSS, tiny, "header");
  close_reader(&r);
  weft_dataset_destroy(ds);

  /* Bad arguments, refused when the dataset is made. */
  paths[0] = a;
  WT_EXPECT_ERROR(weft_dataset_fixed_length_records(paths, 1, 0, 0, 0, NULL,
                                                    &ds),
                  WEFT_INVALID_ARGUMENT, "record_bytes 0");
  WT_EXPECT_ERROR(weft_dataset_fixed_length_records(paths, 1, -1, 4, 0, NULL,
                                                    &ds),
                  WEFT_INVALID_ARGUMENT, "header_bytes -1");
  WT_EXPECT_ERROR(weft_dataset_fixed_length_records(
                      paths, 1, 0, 4, ((int64_t)1 << 30) + 1, NULL, &ds),
                  WEFT_INVALID_ARGUMENT, "footer_bytes 1073741825");
  WT_EXPECT_ERROR(weft_dataset_fixed_length_records(paths, 1, 0, 4, 0, "LZMA",
                                                    &ds),
                  WEFT_INVALID_ARGUMENT, "LZMA");
  WT_EXPECT_ERROR(weft_dataset_fixed_length_records(NULL, 1, 0, 4, 0, NULL,
                                                    &ds),
                  WEFT_INVALID_ARGUMENT, "path");
  WT_EXPECT_ERROR(weft_dataset_fixed_length_records(paths, 1, 0, 4, 0, NULL,
                                                    NULL),
                  WEFT_INVALID_ARGUMENT, "out");
  cr_expect_null(ds);
  unlink(a);
  unlink(b);
  unlink(cut);
  unlink(tiny);
  rmdir(dir);
}

/* The interleave tests' maker: input element i (an int64 scalar) becomes
 * range(10 i, 10 i + lengths[i]); element `fail` (if >= 0) is refused,
 * or with `wrong_dtype` made a float32 dataset instead. */
struct ranges {
  int64_t lengths[4];
  int64_t fail;
  int wrong_dtype;
  int released;
};

static weft_status* make_range(void* arg, const weft_tensor* const* element,
                               int32_t n, weft_dataset** out) {
  struct ranges* r = arg;
  if (n != 1 || weft_tensor_dtype(element[0]) != WEFT_INT64)
    return weft_status_create(WEFT_INTERNAL, "the element is not one int64");
  const int64_t i = *(const int64_t*)weft_tensor_data(element[0]);
  if (i == r->fail && !r->wrong_dtype)
    return weft_status_create(WEFT_NOT_FOUND, "no shard here");
  if (i == r->fail) {
    float x[1] = {1};
    weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_SHAPE(1), x);
    weft_status* st = weft_dataset_from_tensor_slices(&t, 1, out);
    weft_tensor_destroy(t);
    return st;
  }
  return weft_dataset_range(10 * i, 10 * i + r->lengths[i], 1, out);
}

static void release_ranges(void* arg) { ((struct ranges*)arg)->released++; }

static weft_dataset* interleaved(struct ranges* r, int64_t inputs,
                                 int64_t cycle, int64_t block,
                                 int32_t parallel) {
  weft_dataset *in = NULL, *ds = NULL;
  WT_OK(weft_dataset_range(0, inputs, 1, &in));
  const weft_dtype types[1] = {WEFT_INT64};
  WT_OK(weft_dataset_interleave(in, make_range, r, release_ranges, types, 1,
                                cycle, block, parallel, &ds));
  weft_dataset_destroy(in);  /* the interleave keeps what it needs */
  return ds;
}

/* Reads ds to its end into got (room for 16); returns the count. */
static int read_all_i64(const weft_dataset* ds, int64_t* got) {
  struct reader r = open_reader(ds);
  int n = 0;
  for (;;) {
    weft_tensor* t = NULL;
    weft_status* st = next(&r, &t);
    if (st != NULL) {
      cr_expect_eq(weft_status_code(st), WEFT_OUT_OF_RANGE, "%s",
                   weft_status_message(st));
      weft_status_destroy(st);
      break;
    }
    cr_assert_lt(n, 16);
    got[n++] = *(const int64_t*)weft_tensor_data(t);
    weft_tensor_destroy(t);
  }
  close_reader(&r);
  return n;
}

/* Ranges of 3, 1 and 4 elements (0 1 2, 10, 20 21 22 23), worked by hand
 * through tf.data's order: with cycle 2, block 2, slot 0 gives 0 1, slot 1
 * gives 10 and ends (range 2 takes its place), slot 0 gives 2 and ends
 * (no input left), slot 1 gives 20 21, then 22 23 alone.  The same with
 * threads reading ahead; cycle 3, block 1 and cycle 1 worked the same way. */
Test(dataset, interleave_follows_tf_data_order) {
  struct ranges r = {{3, 1, 4, 0}, -1, 0, 0};
  struct {
    int64_t cycle, block;
    int32_t parallel;
    int n;
    int64_t want[8];
  } cases[] = {
      {2, 2, 1, 8, {0, 1, 10, 2, 20, 21, 22, 23}},
      {2, 2, 2, 8, {0, 1, 10, 2, 20, 21, 22, 23}},
      {2, 2, 64, 8, {0, 1, 10, 2, 20, 21, 22, 23}},
      {3, 1, 1, 8, {0, 10, 20, 1, 21, 2, 22, 23}},
      {3, 1, 3, 8, {0, 10, 20, 1, 21, 2, 22, 23}},
      {1, 5, 1, 8, {0, 1, 2, 10, 20, 21, 22, 23}},
      {1, 1, 4, 8, {0, 1, 2, 10, 20, 21, 22, 23}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
    weft_dataset* ds =
        interleaved(&r, 3, cases[c].cycle, cases[c].block, cases[c].parallel);
    if (c == 0) {
      cr_expect_str_eq(weft_dataset_name(ds), "Interleave(Range)");
      cr_expect_eq(weft_dataset_num_components(ds), 1);
      cr_expect_eq(weft_dataset_component_dtype(ds, 0), WEFT_INT64);
    }
    int64_t got[16];
    const int n = read_all_i64(ds, got);
    cr_expect_eq(n, cases[c].n, "case %zu", c);
    for (int i = 0; i < n && i < cases[c].n; ++i)
      cr_expect_eq(got[i], cases[c].want[i], "case %zu, element %d", c, i);
    weft_dataset_destroy(ds);
    cr_expect_eq(r.released, (int)c + 1, "release once, when all is gone");
  }
  /* An input of none: empty. */
  weft_dataset* none = interleaved(&r, 0, 2, 1, 2);
  int64_t got[16];
  cr_expect_eq(read_all_i64(none, got), 0);
  weft_dataset_destroy(none);
}

/* The maker's error names the input element, after the elements that come
 * before it in the order; the pass then stays failed until init. */
Test(dataset, interleave_errors_name_the_input_element) {
  for (int32_t parallel = 1; parallel <= 2; ++parallel) {
    struct ranges r = {{2, 2, 2, 0}, 1, 0, 0};
    weft_dataset* ds = interleaved(&r, 3, 2, 1, parallel);
    struct reader rd = open_reader(ds);
    cr_expect_eq(next_i64(&rd), 0);  /* element 0's turn comes first */
    weft_tensor* t = NULL;
    WT_EXPECT_ERROR(next(&rd, &t), WEFT_NOT_FOUND, "Interleave(Range)",
                    "input element 1", "no shard here");
    WT_EXPECT_ERROR(next(&rd, &t), WEFT_NOT_FOUND, "input element 1");
    wt_run_targets(rd.s, &rd.init, 1);
    cr_expect_eq(next_i64(&rd), 0, "init starts again");
    close_reader(&rd);
    weft_dataset_destroy(ds);
    cr_expect_eq(r.released, 1);

    /* A dataset of other dtypes than declared. */
    struct ranges wrong = {{2, 2, 2, 0}, 0, 1, 0};
    ds = interleaved(&wrong, 3, 2, 1, parallel);
    rd = open_reader(ds);
    WT_EXPECT_ERROR(next(&rd, &t), WEFT_INVALID_ARGUMENT, "input element 0",
                    "(float32)", "(int64)");
    close_reader(&rd);
    weft_dataset_destroy(ds);
    cr_expect_eq(wrong.released, 1);
  }
  /* Bad arguments: refused, and `arg` released all the same. */
  struct ranges r = {{1, 1, 1, 1}, -1, 0, 0};
  weft_dataset *in = NULL, *out = NULL;
  WT_OK(weft_dataset_range(0, 3, 1, &in));
  const weft_dtype types[1] = {WEFT_INT64}, bad_types[1] = {(weft_dtype)99};
  WT_EXPECT_ERROR(weft_dataset_interleave(in, make_range, &r, release_ranges,
                                          types, 1, 0, 1, 1, &out),
                  WEFT_INVALID_ARGUMENT, "cycle_length is 0");
  WT_EXPECT_ERROR(weft_dataset_interleave(in, make_range, &r, release_ranges,
                                          types, 1, 2, -5, 1, &out),
                  WEFT_INVALID_ARGUMENT, "block_length is -5");
  WT_EXPECT_ERROR(weft_dataset_interleave(in, make_range, &r, release_ranges,
                                          types, 1, 2, 1, 65, &out),
                  WEFT_INVALID_ARGUMENT, "num_parallel_calls is 65");
  WT_EXPECT_ERROR(weft_dataset_interleave(in, NULL, &r, release_ranges, types,
                                          1, 2, 1, 1, &out),
                  WEFT_INVALID_ARGUMENT, "make");
  WT_EXPECT_ERROR(weft_dataset_interleave(in, make_range, &r, release_ranges,
                                          NULL, 1, 2, 1, 1, &out),
                  WEFT_INVALID_ARGUMENT, "dtypes");
  WT_EXPECT_ERROR(weft_dataset_interleave(in, make_range, &r, release_ranges,
                                          bad_types, 1, 2, 1, 1, &out),
                  WEFT_INVALID_ARGUMENT, "99");
  WT_EXPECT_ERROR(weft_dataset_interleave(NULL, make_range, &r,
                                          release_ranges, types, 1, 2, 1, 1,
                                          &out),
                  WEFT_INVALID_ARGUMENT, "input");
  cr_expect_null(out);
  cr_expect_eq(r.released, 7);
  weft_dataset_destroy(in);
}

/* The common case: an input of file names (uint8 vectors) and a maker
 * that reads each file.  Three files of 3, 2 and 1 one-byte records
 * (a0 a1 a2, b0 b1, c0) with cycle 2, block 1 give a0 b0 a1 b1 a2 c0;
 * with two threads reading ahead too, which are gone with the session,
 * also when it goes in the middle of a pass.  A truncated file names its
 * input element and the file.  `arg`: the record size (NULL: 1). */
static weft_status* make_file(void* arg, const weft_tensor* const* element,
                              int32_t n, weft_dataset** out) {
  const int64_t record_bytes = arg ? *(const int64_t*)arg : 1;
  (void)n;
  char path[256];
  const size_t len = weft_tensor_byte_size(element[0]);
  if (len >= sizeof path)
    return weft_status_create(WEFT_INVALID_ARGUMENT, "path too long");
  memcpy(path, weft_tensor_data(element[0]), len);
  path[len] = '\0';
  const char* paths[1] = {path};
  return weft_dataset_fixed_length_records(paths, 1, 0, record_bytes, 0, NULL,
                                           out);
}

static int read_files(const weft_dataset* files, int32_t parallel,
                      int stop_after, char* got) {
  weft_dataset* ds = NULL;
  const weft_dtype types[1] = {WEFT_UINT8};
  WT_OK(weft_dataset_interleave(files, make_file, NULL, NULL, types, 1, 2, 1,
                                parallel, &ds));
  struct reader r = open_reader(ds);
  int n = 0;
  for (; n < stop_after; ++n) {
    weft_tensor* t = NULL;
    weft_status* st = next(&r, &t);
    if (st != NULL) {
      cr_expect_eq(weft_status_code(st), WEFT_OUT_OF_RANGE, "%s",
                   weft_status_message(st));
      weft_status_destroy(st);
      break;
    }
    wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(1));
    got[n] = *(const char*)weft_tensor_data(t);
    weft_tensor_destroy(t);
  }
  close_reader(&r);
  weft_dataset_destroy(ds);
  return n;
}

Test(dataset, interleave_over_files_in_parallel_leaves_no_thread) {
  char dir[] = "/tmp/weft-files-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  const size_t len = strlen(dir) + 3;  /* "/f0" */
  uint8_t names[3][64];
  cr_assert_lt(len, sizeof names[0]);
  const char* contents[3] = {"ABC", "DE", "F"};
  for (int i = 0; i < 3; ++i) {
    char path[64];
    snprintf(path, sizeof path, "%s/f%d", dir, i);
    write_file(path, contents[i], strlen(contents[i]));
    memcpy(names[i], path, len);
  }
  uint8_t flat[3 * 64];
  for (int i = 0; i < 3; ++i) memcpy(flat + i * len, names[i], len);
  weft_tensor* paths =
      wt_tensor(WEFT_UINT8, WT_DIMS(3, (int64_t)len), 2, flat);
  weft_dataset* files = NULL;
  WT_OK(weft_dataset_from_tensor_slices(&paths, 1, &files));
  weft_tensor_destroy(paths);

  char got[16];
  cr_expect_eq(read_files(files, 1, 16, got), 6);
  cr_expect(memcmp(got, "ADBECF", 6) == 0, "%.6s", got);
  /* The first parallel pass starts what lives for the process; the rest
   * must leave the thread count where they found it. */
  cr_expect_eq(read_files(files, 2, 16, got), 6);
  const int before = wt_thread_count_settled();
  memset(got, 0, sizeof got);
  cr_expect_eq(read_files(files, 2, 16, got), 6);
  cr_expect(memcmp(got, "ADBECF", 6) == 0, "%.6s", got);
  cr_expect_eq(read_files(files, 2, 2, got), 2);  /* stopped mid-pass */
  cr_expect_eq(wt_thread_count_down_to(before), before, "threads left behind");

  /* Records of 2 bytes: f0 (ABC) ends in a partial record at offset 2,
   * which fails the pass at its turn, naming input element 0 and f0. */
  int64_t two = 2;
  weft_dataset* ds = NULL;
  const weft_dtype types[1] = {WEFT_UINT8};
  WT_OK(weft_dataset_interleave(files, make_file, &two, NULL, types, 1, 2, 1,
                                2, &ds));
  struct reader r = open_reader(ds);
  weft_tensor* t = NULL;
  WT_OK(next(&r, &t));
  cr_expect(memcmp(weft_tensor_data(t), "AB", 2) == 0);
  weft_tensor_destroy(t);
  WT_OK(next(&r, &t));
  cr_expect(memcmp(weft_tensor_data(t), "DE", 2) == 0);
  weft_tensor_destroy(t);
  char f0[64], f1[64];
  snprintf(f0, sizeof f0, "%s/f0", dir);
  snprintf(f1, sizeof f1, "%s/f1", dir);
  WT_EXPECT_ERROR(next(&r, &t), WEFT_DATA_LOSS, "input element 0", f0,
                  "offset 2");
  close_reader(&r);
  weft_dataset_destroy(ds);
  /* f1 empty: its turn passes to f2 (A, f1 ends, B, F, C). */
  write_file(f1, "", 0);
  cr_expect_eq(read_files(files, 2, 16, got), 4);
  cr_expect(memcmp(got, "ABFC", 4) == 0, "%.4s", got);
  for (int i = 0; i < 3; ++i) {
    char path[64];
    snprintf(path, sizeof path, "%s/f%d", dir, i);
    unlink(path);
  }
  rmdir(dir);
  weft_dataset_destroy(files);
}
