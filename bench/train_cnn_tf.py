"""TensorFlow 1.x graph mode peer of bench/train_cnn.c: conv 5x5 1->32
SAME, ReLU, max-pool 2, conv 5x5 32->64 SAME, ReLU, max-pool 2, dense
3136->10, softmax cross-entropy, plain SGD, batch 64, NHWC; prints training
steps per second (median of timed blocks) and CPU time per step.  Usage:
train_cnn_tf.py [threads] [steps]"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tf_timing import time_tf_session  # noqa: E402

B, S, C = 64, 28, 10


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    tf.compat.v1.disable_eager_execution()
    g = tf.Graph()
    rng = np.random.default_rng(1)

    def var(shape, lim):
        return tf.Variable(rng.uniform(-lim, lim, shape).astype(np.float32))

    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [B, S, S, 1])
        labels = tf.compat.v1.placeholder(tf.int32, [B])
        h = x
        for shape, lim in (((5, 5, 1, 32), 0.2), ((5, 5, 32, 64), 0.05)):
            f = var(shape, lim)
            b = tf.Variable(np.zeros(shape[3], np.float32))
            h = tf.nn.relu(tf.nn.bias_add(
                tf.nn.conv2d(h, f, strides=1, padding="SAME"), b))
            h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.reshape(h, [B, 7 * 7 * 64])
        logits = tf.matmul(h, var((7 * 7 * 64, C), 0.03)) + tf.Variable(
            np.zeros(C, np.float32))
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                           logits=logits))
        train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
            loss)
        init = tf.compat.v1.global_variables_initializer()
    feed = {x: rng.random((B, S, S, 1), np.float32),
            labels: rng.integers(0, C, B).astype(np.int32)}
    time_tf_session("TensorFlow %s CNN training" % tf.__version__, threads,
                    steps, 5, g, init, train, feed)


if __name__ == "__main__":
    main()
