"""tf.data twin of bench/pipeline.c: records per second through

  TFRecordDataset -> map(tf.io.parse_single_example of the bytes feature
  "image" and the int64 "label", decode_png or decode_jpeg, cast to
  float32, / 255; num_parallel_calls = THREADS) -> batch(128,
  drop_remainder=True) -> prefetch(2)

with THREADS inter- and intra-op threads (tf.config.threading) and a
private tf.data thread pool of THREADS threads (intra-op parallelism
inside the pipeline 1, as in Weft's map functions).  One untimed pass,
then PASSES timed ones, each through a new iterator; prints the line
pipeline.c prints (median records/s, process CPU time per record) and the
CRC-32 of the first batch's pixels and labels.

Iterated eagerly (`for batch in dataset`: no copy of the batch; the
default), or with --graph through a tf.compat.v1 session: an
initializable iterator whose get_next op is run as a target (its outputs
not fetched into NumPy, except the first batch's, for the CRC).  On a
2-core AMD EPYC the two measured the same within their noise, PNG and
JPEG, 1 and 2 threads: Python's cost per batch is small beside that of
the batch's 128 records.

Usage: pipeline_tf.py [THREADS [PASSES [png|jpeg [FILE]]]] [--graph]"""
import os
import statistics
import sys
import time
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

BATCH, PREFETCH = 128, 2
FILES = {"png": "fashion-mnist-png.tfrecord", "jpeg": "rgb64-jpeg.tfrecord"}
WHAT = {"png": "28x28 gray PNG", "jpeg": "64x64 RGB JPEG"}


def make_dataset(path, jpeg, threads):
    features = {"image": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        f = tf.io.parse_single_example(record, features)
        if jpeg:
            image = tf.io.decode_jpeg(f["image"], channels=3,
                                      dct_method="INTEGER_FAST")
        else:
            image = tf.io.decode_png(f["image"], channels=1)
        return tf.cast(image, tf.float32) / 255.0, f["label"]

    ds = (tf.data.TFRecordDataset(path)
          .map(parse, num_parallel_calls=threads)
          .batch(BATCH, drop_remainder=True)
          .prefetch(PREFETCH))
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    options.threading.max_intra_op_parallelism = 1
    return ds.with_options(options)


def crcs(images, labels):
    return (zlib.crc32(np.ascontiguousarray(images, np.float32).tobytes()),
            zlib.crc32(np.ascontiguousarray(labels, np.int64).tobytes()))


def eager_passes(path, jpeg, threads, passes):
    """[(records, wall, cpu)] of passes + 1 passes, and the first batch's
    CRCs."""
    ds = make_dataset(path, jpeg, threads)
    first, out = None, []
    for _ in range(passes + 1):
        records = 0
        w0, c0 = time.perf_counter(), time.process_time()
        for images, labels in ds:
            if first is None:
                first = crcs(images.numpy(), labels.numpy())
            records += BATCH
        out.append((records, time.perf_counter() - w0,
                    time.process_time() - c0))
    return out, first


def graph_passes(path, jpeg, threads, passes):
    tf.compat.v1.disable_eager_execution()
    g = tf.Graph()
    with g.as_default():
        it = tf.compat.v1.data.make_initializable_iterator(
            make_dataset(path, jpeg, threads))
        images, labels = it.get_next()
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                                      inter_op_parallelism_threads=threads)
    out = []
    with tf.compat.v1.Session(graph=g, config=config) as s:
        s.run(it.initializer)
        first = crcs(*s.run([images, labels]))
        for p in range(passes + 1):
            records = BATCH if p == 0 else 0
            w0, c0 = time.perf_counter(), time.process_time()
            if p > 0:
                s.run(it.initializer)
            try:
                while True:
                    s.run(images.op)
                    records += BATCH
            except tf.errors.OutOfRangeError:
                pass
            out.append((records, time.perf_counter() - w0,
                        time.process_time() - c0))
    return out, first


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    graph = "--graph" in sys.argv[1:]
    threads = int(args[0]) if args else 1
    passes = int(args[1]) if len(args) > 1 else 5
    fmt = args[2] if len(args) > 2 else "png"
    if fmt not in FILES or threads < 1 or passes < 1:
        sys.exit(__doc__)
    path = args[3] if len(args) > 3 else os.path.join("build/bench-data",
                                                       FILES[fmt])
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    run = graph_passes if graph else eager_passes
    results, first = run(path, fmt == "jpeg", threads, passes)
    timed = results[1:]  # the first pass warms up
    records = timed[0][0]
    if any(r != records for r, _, _ in timed) or records == 0:
        sys.exit("pipeline_tf: passes gave %s records" %
                 [r for r, _, _ in results])
    print("TensorFlow %s pipeline %s, %d thread(s): %.0f records/s (CPU %.2f "
          "us/record), median of %d passes of %d records (tf.data, %s)" %
          (tf.__version__, WHAT[fmt], threads,
           records / statistics.median(w for _, w, _ in timed),
           statistics.median(c for _, _, c in timed) / records * 1e6, passes,
           records, "v1 graph iterator" if graph else "eager iteration"))
    print("  first batch: pixels crc32 %08x, labels crc32 %08x" % first)


if __name__ == "__main__":
    main()
