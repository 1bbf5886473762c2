"""TensorFlow 1.x graph mode peer of bench/while_loop.c: i = i + 1 while
i < 100000 in tf.compat.v1.while_loop, one Session.run per loop.  Prints
the median wall and CPU time per iteration.  Usage: while_loop_tf.py
[threads] [reps]"""
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tf_timing import tf_session_config  # noqa: E402

ITERATIONS = 100000


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 21
    tf.compat.v1.disable_eager_execution()
    g = tf.Graph()
    with g.as_default():
        limit = tf.constant(ITERATIONS, tf.int32)
        out = tf.compat.v1.while_loop(lambda i: i < limit, lambda i: i + 1,
                                      [tf.constant(0, tf.int32)])
    with tf.compat.v1.Session(graph=g,
                              config=tf_session_config(max(threads, 1))) as s:
        wall, cpu = [], []
        for r in range(reps + 2):
            w0, c0 = time.perf_counter(), time.process_time()
            v = s.run(out)
            w1, c1 = time.perf_counter(), time.process_time()
            assert v == ITERATIONS, v
            if r >= 2:
                wall.append((w1 - w0) / ITERATIONS * 1e6)
                cpu.append((c1 - c0) / ITERATIONS * 1e6)
    print("TensorFlow %s while_loop, %d thread(s): %.3f us/iteration "
          "(CPU %.3f us), median of %d runs of %d iterations" %
          (tf.__version__, threads, statistics.median(wall),
           statistics.median(cpu), reps, ITERATIONS))


if __name__ == "__main__":
    main()
