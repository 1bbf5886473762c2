/* The training set of `weft train` as a dataset pipeline (train_input.h). */
#define _POSIX_C_SOURCE 200809L
#include "tools/train_input.h"

#include "tools/commands.h"
#include "tools/idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PIXELS = 784 };

static int check(weft_status* st, const char* what) {
  if (st == NULL) return 1;
  fprintf(stderr, "weft: %s: %s\n", what, weft_status_message(st));
  weft_status_destroy(st);
  return 0;
}

static int op1(weft_graph* g, const char* op, const char* name, weft_output x,
               const weft_output* y, weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_op_add_input(b, x);
  if (y) weft_op_add_input(b, *y);
  weft_node* n = NULL;
  if (!check(weft_op_finish(b, &n), name)) return 0;
  *out = (weft_output){n, 0};
  return 1;
}

static int cast(weft_graph* g, const char* name, weft_output x, weft_dtype to,
                weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, "Cast", name);
  weft_op_add_input(b, x);
  weft_op_set_attr_dtype(b, "DstT", to);
  weft_node* n = NULL;
  if (!check(weft_op_finish(b, &n), name)) return 0;
  *out = (weft_output){n, 0};
  return 1;
}

/* Feature `key` of a serialized Example as T of `shape`. */
static int feature(weft_graph* g, const char* key, weft_output record,
                   weft_dtype t, const int64_t* shape, int32_t rank,
                   weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, "ParseExampleFeature", key);
  weft_op_add_input(b, record);
  weft_op_set_attr_string(b, "key", key);
  weft_op_set_attr_dtype(b, "T", t);
  weft_op_set_attr_int_list(b, "shape", shape, rank);
  weft_node* n = NULL;
  if (!check(weft_op_finish(b, &n), "parse function")) return 0;
  *out = (weft_output){n, 0};
  return 1;
}

/* record -> (image uint8 [784], label uint8), the IDX source's element. */
static int parse_map(const weft_dataset* in, int32_t parallel,
                     weft_dataset** out) {
  weft_graph* fn = NULL;
  if (!check(weft_graph_create(&fn), "parse function")) return 0;
  int64_t any[1] = {-1}, pixels[1] = {PIXELS};
  weft_output record, fields[2], label;
  int ok = check(weft_graph_placeholder(fn, "record", WEFT_UINT8, any, 1,
                                        &record), "parse function") &&
           feature(fn, "image", record, WEFT_UINT8, pixels, 1, &fields[0]) &&
           feature(fn, "label", record, WEFT_INT64, NULL, 0, &label) &&
           cast(fn, "label_u8", label, WEFT_UINT8, &fields[1]) &&
           check(weft_dataset_map(in, fn, &record, 1, fields, 2, parallel,
                                  out), "pipeline parse");
  weft_graph_destroy(fn);
  return ok;
}

/* A batch of (uint8 pixels, uint8 labels) -> (float32 pixels / 255, int32
 * labels). */
static int scale_map(const weft_dataset* in, weft_dataset** out) {
  weft_graph* fn = NULL;
  if (!check(weft_graph_create(&fn), "pipeline map")) return 0;
  int64_t bx[2] = {-1, PIXELS}, bl[1] = {-1};
  weft_output x[2], y[2], scale, f;
  float inv255 = 1.0f / 255.0f;
  weft_tensor* s = NULL;
  int ok = check(weft_graph_placeholder(fn, "x", WEFT_UINT8, bx, 2, &x[0]),
                 "map x") &&
           check(weft_graph_placeholder(fn, "y", WEFT_UINT8, bl, 1, &x[1]),
                 "map y") &&
           check(weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &inv255,
                                         sizeof inv255, &s), "map scale") &&
           check(weft_graph_constant(fn, "scale", s, &scale), "map scale") &&
           cast(fn, "xf", x[0], WEFT_FLOAT32, &f) &&
           op1(fn, "Mul", "x01", f, &scale, &y[0]) &&
           cast(fn, "yi", x[1], WEFT_INT32, &y[1]) &&
           check(weft_dataset_map(in, fn, x, 2, y, 2, 1, out),
                 "pipeline map");
  weft_tensor_destroy(s);
  weft_graph_destroy(fn);
  return ok;
}

static int constant_i64(weft_graph* g, const char* name, int64_t v,
                        weft_output* out) {
  weft_tensor* t = NULL;
  int ok = check(weft_tensor_create_copy(WEFT_INT64, NULL, 0, &v, sizeof v,
                                         &t), name) &&
           check(weft_graph_constant(g, name, t, out), name);
  weft_tensor_destroy(t);
  return ok;
}

/* Placeholders for a (position, image, label) element in `g`. */
static int position_element(weft_graph* g, weft_output p[3]) {
  int64_t any[1] = {-1};
  return check(weft_graph_placeholder(g, "position", WEFT_INT64, NULL, 0,
                                      &p[0]), "shard") &&
         check(weft_graph_placeholder(g, "x", WEFT_UINT8, any, 1, &p[1]),
               "shard") &&
         check(weft_graph_placeholder(g, "y", WEFT_UINT8, NULL, 0, &p[2]),
               "shard");
}

/* Data parallelism: of each epoch's shuffled elements, those that rows
 * [shard * b, (shard + 1) * b) of a global batch of `batch` would hold
 * (b = batch / num_shards), none of a last partial global batch (which a
 * single process drops).  Batched by b, each shard's batches are then its
 * rows of the single process's batches.  With whole_batches, the elements
 * of the global batches whose index modulo num_shards is the shard,
 * batched by `batch`.  A shard's batch keeps an
 * unknown leading dim (so evaluation can feed any number of images):
 * zip(range, elements) -> filter on the position -> drop the position. */
static int shard_elements(const train_input* in, const weft_dataset* stage,
                          weft_dataset* made[3], weft_dataset** out) {
  /* Whole batches: the batch's index modulo the shards picks. */
  const int64_t b = in->whole_batches ? in->num_shards
                                      : in->batch / in->num_shards;
  const int64_t limit = in->epoch_elements / in->batch * in->batch;
  weft_graph *pick = NULL, *drop = NULL;
  weft_output p[3], d[3], batch_c, part_c, shard_c, limit_c, pos_in_batch,
      row_part, mine, early, keep, kept[2];
  int ok =
      check(weft_dataset_range(0, INT64_MAX, 1, &made[0]), "shard") &&
      check(weft_dataset_zip((const weft_dataset* const[]){made[0], stage}, 2,
                             &made[1]), "shard") &&
      check(weft_graph_create(&pick), "shard") && position_element(pick, p) &&
      constant_i64(pick, "batch", in->batch, &batch_c) &&
      constant_i64(pick, "part", b, &part_c) &&
      constant_i64(pick, "shard", in->shard, &shard_c) &&
      constant_i64(pick, "limit", limit, &limit_c) &&
      (in->whole_batches
           ? op1(pick, "FloorDiv", "batch_index", p[0], &batch_c,
                 &pos_in_batch) &&
                 op1(pick, "FloorMod", "row_part", pos_in_batch, &part_c,
                     &row_part)
           : op1(pick, "FloorMod", "row", p[0], &batch_c, &pos_in_batch) &&
                 op1(pick, "FloorDiv", "row_part", pos_in_batch, &part_c,
                     &row_part)) &&
      op1(pick, "Equal", "mine", row_part, &shard_c, &mine) &&
      op1(pick, "Less", "early", p[0], &limit_c, &early) &&
      op1(pick, "LogicalAnd", "keep", mine, &early, &keep) &&
      check(weft_dataset_filter(made[1], pick, p, 3, keep, &made[2]),
            "shard") &&
      check(weft_graph_create(&drop), "shard") && position_element(drop, d) &&
      op1(drop, "Identity", "x_kept", d[1], NULL, &kept[0]) &&
      op1(drop, "Identity", "y_kept", d[2], NULL, &kept[1]) &&
      check(weft_dataset_map(made[2], drop, d, 3, kept, 2, 1, out), "shard");
  weft_graph_destroy(pick);
  weft_graph_destroy(drop);
  return ok;
}

/* Counts a stage made (the pipeline's stages are stage[0..*k)). */
static int made(int* k, int ok) {
  if (ok) ++*k;
  return ok;
}

int train_input_build(const train_input* in, weft_graph* g, const char* name,
                      weft_output out[2]) {
  weft_dataset* stage[12] = {NULL};
  int k = 0, ok = 0;
  weft_tensor *images = NULL, *labels = NULL;
  if (in->num_tfrecords > 0) {
    /* Records are shuffled before they are parsed: less to hold. */
    if (!made(&k, check(weft_dataset_tfrecord(in->tfrecords,
                                              in->num_tfrecords,
                                              in->compression, &stage[k]),
                        "pipeline")) ||
        !made(&k, check(weft_dataset_shuffle(stage[k - 1], in->shuffle_buffer,
                                             (int64_t)in->seed, &stage[k]),
                        "pipeline shuffle")) ||
        !made(&k, parse_map(stage[k - 1], in->parallel, &stage[k])))
      goto done;
  } else {
    const int64_t xd[2] = {in->n, PIXELS}, ld[1] = {in->n};
    /* Borrowed: the dataset copies them. */
    if (!check(weft_tensor_create_from_data(WEFT_UINT8, xd, 2,
                                            (void*)in->images,
                                            (size_t)(in->n * PIXELS), NULL,
                                            NULL, &images), "pipeline") ||
        !check(weft_tensor_create_from_data(WEFT_UINT8, ld, 1,
                                            (void*)in->labels, (size_t)in->n,
                                            NULL, NULL, &labels),
               "pipeline"))
      goto done;
    weft_tensor* columns[2] = {images, labels};
    const int64_t buffer = in->shuffle_buffer > 0 ? in->shuffle_buffer : in->n;
    if (!made(&k, check(weft_dataset_from_tensor_slices(columns, 2,
                                                        &stage[k]),
                        "pipeline")) ||
        !made(&k, check(weft_dataset_shuffle(stage[k - 1], buffer,
                                             (int64_t)in->seed, &stage[k]),
                        "pipeline shuffle")))
      goto done;
  }
  /* A data-parallel shard: this process's rows of every batch. */
  int64_t batch = in->batch;
  if (in->num_shards > 1) {
    if (!made(&k, shard_elements(in, stage[k - 1], &stage[k], &stage[k + 3])))
      goto done;
    k += 3;
    if (!in->whole_batches) batch = in->batch / in->num_shards;
  }
  /* Batches of the same size in the same order every run, so `skip`
   * batches are exactly the steps a resumed run has done; the cast runs
   * once per batch, after the skip. */
  if (!made(&k, check(weft_dataset_batch(stage[k - 1], batch, 1,
                                         &stage[k]), "pipeline batch")) ||
      !made(&k, check(weft_dataset_repeat(stage[k - 1], in->epochs,
                                          &stage[k]), "pipeline repeat")) ||
      !made(&k, check(weft_dataset_skip(stage[k - 1], in->skip, &stage[k]),
                      "pipeline skip")) ||
      !made(&k, scale_map(stage[k - 1], &stage[k])) ||
      !made(&k, check(weft_dataset_prefetch(stage[k - 1], 2, &stage[k]),
                      "pipeline prefetch")) ||
      !check(weft_dataset_iterator(g, name, stage[k - 1], out, NULL),
             "pipeline iterator"))
    goto done;
  ok = 1;
done:
  /* Every stage made, counted or not (a shard's are made four at once). */
  for (size_t i = 0; i < sizeof stage / sizeof stage[0]; ++i)
    weft_dataset_destroy(stage[i]);
  weft_tensor_destroy(images);
  weft_tensor_destroy(labels);
  return ok;
}

int train_input_count_records(const char* const* paths, int32_t n,
                              const char* compression, int64_t* out) {
  weft_dataset *records = NULL, *batches = NULL;
  weft_graph* g = NULL;
  weft_session* s = NULL;
  int ok = 0;
  weft_output next;
  *out = 0;
  /* Records of any length, padded into large batches: few runs. */
  if (!check(weft_dataset_tfrecord(paths, n, compression, &records),
             "counting records") ||
      !check(weft_dataset_padded_batch(records, 4096, 0, &batches),
             "counting records") ||
      !check(weft_graph_create(&g), "counting records") ||
      !check(weft_dataset_iterator(g, "count", batches, &next, NULL),
             "counting records") ||
      !check(weft_session_create(g, NULL, &s), "counting records"))
    goto done;
  for (;;) {
    weft_tensor* t = NULL;
    weft_status* st = weft_session_run(s, NULL, NULL, 0, &next, 1, NULL, 0,
                                       &t);
    if (st != NULL && weft_status_code(st) == WEFT_OUT_OF_RANGE) {
      weft_status_destroy(st);
      break;
    }
    if (!check(st, "reading the TFRecord files")) goto done;
    *out += weft_tensor_dim(t, 0);
    weft_tensor_destroy(t);
  }
  ok = 1;
done:
  weft_session_destroy(s);
  weft_graph_destroy(g);
  weft_dataset_destroy(batches);
  weft_dataset_destroy(records);
  return ok;
}

/* ---- tf.train.Example records ------------------------------------------ */

/* Protobuf wire format: a field key and a length, each a varint. */
static size_t put_varint(uint8_t* p, uint64_t v) {
  size_t n = 0;
  do {
    p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return n;
}

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v > 0x7f) v >>= 7, ++n;
  return n;
}

/* Field `field` of wire type 2 (length-delimited) holding `len` bytes. */
static size_t put_header(uint8_t* p, uint32_t field, size_t len) {
  size_t n = put_varint(p, (uint64_t)field << 3 | 2);
  return n + put_varint(p + n, len);
}

static size_t header_size(uint32_t field, size_t len) {
  return varint_size((uint64_t)field << 3 | 2) + varint_size(len);
}

/* Example{features: Features{feature: {"image": Feature{bytes_list:
 * BytesList{value: [pixels]}}, "label": Feature{int64_list: Int64List{
 * value: [label] (packed)}}}}} — field numbers from TensorFlow's
 * example.proto and feature.proto. */
static size_t encode_example(const uint8_t* pixels, uint8_t label,
                             uint8_t* p) {
  const size_t bytes_list = header_size(1, PIXELS) + PIXELS;
  const size_t image_feature = header_size(1, bytes_list) + bytes_list;
  const size_t image_entry =
      header_size(1, 5) + 5 + header_size(2, image_feature) + image_feature;
  const size_t int64_list = header_size(1, varint_size(label)) +
                            varint_size(label);
  const size_t label_feature = header_size(3, int64_list) + int64_list;
  const size_t label_entry =
      header_size(1, 5) + 5 + header_size(2, label_feature) + label_feature;
  const size_t features = header_size(1, image_entry) + image_entry +
                          header_size(1, label_entry) + label_entry;
  size_t n = put_header(p, 1, features);
  n += put_header(p + n, 1, image_entry);
  n += put_header(p + n, 1, 5);
  memcpy(p + n, "image", 5), n += 5;
  n += put_header(p + n, 2, image_feature);
  n += put_header(p + n, 1, bytes_list);
  n += put_header(p + n, 1, PIXELS);
  memcpy(p + n, pixels, PIXELS), n += PIXELS;
  n += put_header(p + n, 1, label_entry);
  n += put_header(p + n, 1, 5);
  memcpy(p + n, "label", 5), n += 5;
  n += put_header(p + n, 2, label_feature);
  n += put_header(p + n, 3, int64_list);
  n += put_header(p + n, 1, varint_size(label));
  n += put_varint(p + n, label);
  return n;
}

const char* train_input_compression(const char* path) {
  size_t n = strlen(path);
  if (n > 3 && strcmp(path + n - 3, ".gz") == 0) return "GZIP";
  if (n > 3 && strcmp(path + n - 3, ".zz") == 0) return "ZLIB";
  return "";
}

int train_input_write_tfrecord(const char* path, const char* compression,
                               const uint8_t* images, const uint8_t* labels,
                               int64_t n) {
  weft_tensor** records = calloc((size_t)(n > 0 ? n : 1), sizeof *records);
  int ok = records != NULL;
  if (!ok) fprintf(stderr, "weft: out of memory\n");
  uint8_t buf[PIXELS + 64];
  for (int64_t i = 0; ok && i < n; ++i) {
    int64_t len = (int64_t)encode_example(images + i * PIXELS, labels[i], buf);
    ok = check(weft_tensor_create_copy(WEFT_UINT8, &len, 1, buf, (size_t)len,
                                       &records[i]), "encoding a record");
  }
  if (ok)
    ok = check(weft_tfrecord_write(path, compression,
                                   (const weft_tensor* const*)records,
                                   (int32_t)n), path);
  for (int64_t i = 0; records && i < n; ++i) weft_tensor_destroy(records[i]);
  free(records);
  return ok;
}

/* weft tfrecord fashion-mnist OUT [--split train|t10k] [--data DIR]: the
 * split as tf.train.Example records, compressed by OUT's suffix (.gz GZIP,
 * .zz ZLIB), for `weft train --data tfrecord:OUT` and other readers. */
int weft_command_tfrecord(int argc, char** argv) {
  const char* out = NULL;
  const char* split = "train";
  const char* dir = "/usr/share/datasets/fashion-mnist";
  if (argc < 3 || strcmp(argv[1], "fashion-mnist") != 0) {
    fprintf(stderr, "weft tfrecord: usage: weft tfrecord fashion-mnist "
            "OUT.tfrecord [--split train|t10k] [--data DIR]\n");
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "--split") == 0 && i + 1 < argc &&
        (strcmp(argv[i + 1], "train") == 0 ||
         strcmp(argv[i + 1], "t10k") == 0)) {
      split = argv[++i];
    } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (argv[i][0] != '-' && out == NULL) {
      out = argv[i];
    } else {
      fprintf(stderr, "weft tfrecord: unknown or incomplete argument "
              "'%s'\n", argv[i]);
      return 2;
    }
  }
  if (out == NULL) {
    fprintf(stderr, "weft tfrecord: name the file to write\n");
    return 2;
  }
  char err[4200];
  idx_dataset d;
  if (idx_read_dataset(dir, split, 10, &d, err, sizeof err) != 0) {
    fprintf(stderr, "weft tfrecord: %s\n", err);
    return 1;
  }
  int rc = 1;
  const char* compression = train_input_compression(out);
  if (d.images.dims[1] * d.images.dims[2] != PIXELS) {
    fprintf(stderr, "weft tfrecord: images must be 28x28\n");
  } else if (train_input_write_tfrecord(out, compression, d.images.data,
                                        d.labels.data, d.images.dims[0])) {
    printf("%s: %lld records (%s split)\n", out,
           (long long)d.images.dims[0], split);
    rc = 0;
  }
  idx_free_dataset(&d);
  return rc;
}
