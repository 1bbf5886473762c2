"""TensorFlow 1.x graph mode peer of bench/executor_overhead.c: a chain of
1,000 Add nodes on float32 scalars, starting at a fed placeholder, one
session.run fetching the last node; prints the wall-clock and CPU time per
node (the run's time over the node count, as Weft's headline figure).
Grappler is switched off (rewrite_options.disable_meta_optimizer): its
arithmetic optimizer would otherwise be free to rewrite the chain of Adds
into one AddN, and the figure is meant to be the executor's cost per node,
as Weft's (whose chain is not rewritten) is.
Usage: executor_overhead_tf.py [threads [runs]]"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tf_timing import tf_session_config, time_per_unit  # noqa: E402

NODES = 1000


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    tf.compat.v1.disable_eager_execution()
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [])
        one = tf.constant(1.0)
        y = x
        for _ in range(NODES):
            y = tf.add(y, one)
    config = tf_session_config(threads)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    feed = {x: np.float32(0)}
    with tf.compat.v1.Session(graph=g, config=config) as s:
        if s.run(y, feed) != NODES:
            sys.exit("executor_overhead_tf.py: wrong result")
        time_per_unit("TensorFlow %s executor per node (chain of %d Add)" %
                      (tf.__version__, NODES), threads, runs, runs // 4 + 10,
                      NODES, "node", lambda: s.run(y, feed))


if __name__ == "__main__":
    main()
