/* Input-pipeline throughput: records per second through
 *
 *   TFRecord file -> map(parse the Example's "image" bytes and int64
 *   "label", decode the PNG or JPEG, cast to float32 and divide by 255;
 *   num_parallel_calls = THREADS) -> batch 128 (drop the remainder)
 *   -> prefetch 2
 *
 * drained through an IteratorGetNext node in a session (inter- and
 * intra-op threads THREADS), one pass of the file after another.  Its twin
 * bench/pipeline_tf.py builds the same pipeline with tf.data;
 * scripts/bench_peers.sh runs both (workloads pipeline_png and
 * pipeline_jpeg) on the files bench/pipeline_data.py writes.
 *
 *   pipeline [THREADS [PASSES [png|jpeg [FILE]]]]
 *
 * One untimed pass first (it also reads the file into the page cache),
 * then PASSES timed ones, each through a fresh iterator (IteratorInit);
 * prints "Weft pipeline <what>, T thread(s): R records/s (CPU C
 * us/record), median of PASSES passes of N records", then the CRC-32 of
 * the first batch's pixels (float32 bytes) and labels (int64 bytes), which
 * the twin prints of its own first batch: equal, the two pipelines made
 * the same numbers.  FILE defaults to build/bench-data/ and the format's
 * file name there. */
#define _POSIX_C_SOURCE 200809L
#include <zlib.h>

#include "bench_util.h"

enum { BATCH = 128, PREFETCH = 2, MAX_PASSES = 100 };

static weft_node* finish(weft_op_builder* b, const char* what) {
  weft_node* n = NULL;
  weft_status* st = weft_op_finish(b, &n);
  if (st) bench_die(what, st);
  return n;
}

/* ParseExampleFeature: feature `key` of the serialized Example as `dtype`
 * (uint8: the first bytes value; int64 with rank 0: one value). */
static weft_output parse_feature(weft_graph* g, weft_output record,
                                 const char* key, weft_dtype dtype,
                                 int scalar) {
  weft_op_builder* b = weft_op_begin(g, "ParseExampleFeature", key);
  weft_op_add_input(b, record);
  weft_op_set_attr_string(b, "key", key);
  weft_op_set_attr_dtype(b, "T", dtype);
  static const int64_t no_dims[1] = {0};
  if (scalar) weft_op_set_attr_int_list(b, "shape", no_dims, 0);
  return (weft_output){finish(b, key), 0};
}

/* The map function: serialized Example -> (float32 [h, w, c] in [0, 1],
 * int64 label). */
static weft_graph* map_function(int jpeg, weft_output* record,
                                weft_output outputs[2]) {
  weft_graph* g;
  weft_status* st = weft_graph_create(&g);
  if (st) bench_die("graph", st);
  const int64_t any[1] = {-1};
  if ((st = weft_graph_placeholder(g, "record", WEFT_UINT8, any, 1, record)))
    bench_die("placeholder", st);
  weft_output bytes = parse_feature(g, *record, "image", WEFT_UINT8, 0);
  weft_op_builder* b = weft_op_begin(g, jpeg ? "DecodeJpeg" : "DecodePng",
                                     "decode");
  weft_op_add_input(b, bytes);
  weft_op_set_attr_int(b, "channels", jpeg ? 3 : 1);
  /* TensorFlow's default for tf.io.decode_jpeg; the twin names it too. */
  if (jpeg) weft_op_set_attr_string(b, "dct_method", "INTEGER_FAST");
  weft_output pixels = {finish(b, "decode"), 0};
  b = weft_op_begin(g, "Cast", "cast");
  weft_op_add_input(b, pixels);
  weft_op_set_attr_dtype(b, "DstT", WEFT_FLOAT32);
  weft_output cast = {finish(b, "cast"), 0};
  const float scale = 255.0f;
  weft_tensor* t;
  weft_output divisor;
  if ((st = weft_tensor_create_copy(WEFT_FLOAT32, NULL, 0, &scale,
                                    sizeof scale, &t)) ||
      (st = weft_graph_constant(g, "255", t, &divisor)))
    bench_die("constant", st);
  weft_tensor_destroy(t);
  weft_output div_in[2] = {cast, divisor};
  if ((st = weft_graph_apply(g, "RealDiv", "scaled", div_in, 2,
                             &outputs[0])))
    bench_die("RealDiv", st);
  outputs[1] = parse_feature(g, *record, "label", WEFT_INT64, 1);
  return g;
}

typedef struct pipeline {
  weft_graph* graph;
  weft_session* session;
  weft_output next[2];
  weft_node* init;
} pipeline;

static void pipeline_open(pipeline* p, const char* path, int jpeg,
                          int threads) {
  weft_output record, fn_out[2];
  weft_graph* fn = map_function(jpeg, &record, fn_out);
  weft_dataset *records, *mapped, *batched, *prefetched;
  const char* paths[1] = {path};
  weft_status* st;
  if ((st = weft_dataset_tfrecord(paths, 1, "", &records)) ||
      (st = weft_dataset_map(records, fn, &record, 1, fn_out, 2, threads,
                             &mapped)) ||
      (st = weft_dataset_batch(mapped, BATCH, 1, &batched)) ||
      (st = weft_dataset_prefetch(batched, PREFETCH, &prefetched)))
    bench_die("dataset", st);
  weft_graph_destroy(fn);
  if ((st = weft_graph_create(&p->graph)) ||
      (st = weft_dataset_iterator(p->graph, "records", prefetched, p->next,
                                  &p->init)))
    bench_die("iterator", st);
  weft_dataset* all[4] = {records, mapped, batched, prefetched};
  for (int i = 0; i < 4; ++i) weft_dataset_destroy(all[i]);
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "CPU";
  o.inter_op_threads = threads;
  o.intra_op_threads = threads;
  if ((st = weft_session_create(p->graph, &o, &p->session)))
    bench_die("session", st);
}

/* The next batch into out[2] (caller destroys); 0 at the end of the pass. */
static int pipeline_next(pipeline* p, weft_tensor* out[2]) {
  weft_status* st = weft_session_run(p->session, NULL, NULL, 0, p->next, 2,
                                     NULL, 0, out);
  if (st == NULL) return 1;
  if (weft_status_code(st) != WEFT_OUT_OF_RANGE) bench_die("next batch", st);
  weft_status_destroy(st);
  return 0;
}

/* One pass from the start: the records it gave; the CRCs of the first
 * batch's components when `crc` is not NULL. */
static int64_t pipeline_pass(pipeline* p, uLong crc[2]) {
  weft_status* st =
      weft_session_run(p->session, NULL, NULL, 0, NULL, 0, &p->init, 1, NULL);
  if (st) bench_die("IteratorInit", st);
  int64_t records = 0;
  weft_tensor* out[2] = {NULL, NULL};
  while (pipeline_next(p, out)) {
    if (crc != NULL && records == 0)
      for (int c = 0; c < 2; ++c)
        crc[c] = crc32(crc32(0, NULL, 0), weft_tensor_data(out[c]),
                       (uInt)weft_tensor_byte_size(out[c]));
    records += weft_tensor_dim(out[1], 0);
    weft_tensor_destroy(out[0]);
    weft_tensor_destroy(out[1]);
  }
  return records;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int passes = argc > 2 ? atoi(argv[2]) : 5;
  const char* format = argc > 3 ? argv[3] : "png";
  const int jpeg = strcmp(format, "jpeg") == 0;
  if (threads < 1 || passes < 1 || passes > MAX_PASSES ||
      (!jpeg && strcmp(format, "png") != 0)) {
    fprintf(stderr, "usage: pipeline [THREADS [PASSES [png|jpeg [FILE]]]]\n");
    return 2;
  }
  const char* path = argc > 4 ? argv[4]
                     : jpeg   ? "build/bench-data/rgb64-jpeg.tfrecord"
                              : "build/bench-data/fashion-mnist-png.tfrecord";
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "pipeline: cannot open %s (bench/pipeline_data.py "
            "writes it; scripts/bench_peers.sh pipeline_%s runs both)\n",
            path, format);
    return 1;
  }
  fclose(f);
  pipeline p;
  pipeline_open(&p, path, jpeg, threads);
  uLong crc[2];
  const int64_t records = pipeline_pass(&p, crc);
  if (records == 0) {
    fprintf(stderr, "pipeline: %s holds fewer than %d records\n", path, BATCH);
    return 1;
  }
  double wall[MAX_PASSES], cpu[MAX_PASSES];
  for (int i = 0; i < passes; ++i) {
    double w0 = bench_now_seconds(), c0 = bench_process_cpu_seconds();
    int64_t n = pipeline_pass(&p, NULL);
    double w1 = bench_now_seconds(), c1 = bench_process_cpu_seconds();
    if (n != records) {
      fprintf(stderr, "pipeline: pass %d gave %lld records, not %lld\n", i,
              (long long)n, (long long)records);
      return 1;
    }
    wall[i] = (w1 - w0) / (double)n;
    cpu[i] = (c1 - c0) / (double)n;
  }
  printf("Weft pipeline %s, %d thread(s): %.0f records/s (CPU %.2f "
         "us/record), median of %d passes of %lld records\n",
         jpeg ? "64x64 RGB JPEG" : "28x28 gray PNG", threads,
         1.0 / bench_median(wall, passes), bench_median(cpu, passes) * 1e6,
         passes, (long long)records);
  printf("  first batch: pixels crc32 %08lx, labels crc32 %08lx\n", crc[0],
         crc[1]);
  weft_session_destroy(p.session);
  weft_graph_destroy(p.graph);
  return 0;
}
