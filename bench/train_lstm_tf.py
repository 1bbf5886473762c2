"""TensorFlow 1.x graph mode peer of bench/train_lstm.c: an LSTM of 128
units over 28 steps of 28 inputs (batch 64) in tf.compat.v1.while_loop,
dense to 10, softmax cross-entropy, plain SGD; prints training steps per
second (median of timed blocks) and CPU time per step.  Usage:
train_lstm_tf.py [threads] [steps]"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tf_timing import time_tf_session  # noqa: E402

B, T, D, H, C = 64, 28, 28, 128, 10


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    tf.compat.v1.disable_eager_execution()
    g = tf.Graph()
    rng = np.random.default_rng(1)
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [T, B, D])
        labels = tf.compat.v1.placeholder(tf.int32, [B])
        lim = np.sqrt(6.0 / (D + H + 4 * H))
        w = tf.Variable(rng.uniform(-lim, lim, (D + H, 4 * H)).astype(
            np.float32))
        b = tf.Variable(np.zeros(4 * H, np.float32))
        wo = tf.Variable(rng.uniform(-0.2, 0.2, (H, C)).astype(np.float32))
        bo = tf.Variable(np.zeros(C, np.float32))

        def body(t, h, c):
            gates = tf.matmul(tf.concat([tf.gather(x, t), h], 1), w) + b
            i, f, u, o = tf.split(gates, 4, axis=1)
            c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(u)
            return t + 1, tf.sigmoid(o) * tf.tanh(c), c

        zeros = tf.zeros([B, H])
        _, h, _ = tf.compat.v1.while_loop(lambda t, h, c: t < T, body,
                                          [tf.constant(0), zeros, zeros])
        logits = tf.matmul(h, wo) + bo
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                           logits=logits))
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss)
        init = tf.compat.v1.global_variables_initializer()
    feed = {x: rng.random((T, B, D), np.float32),
            labels: rng.integers(0, C, B).astype(np.int32)}
    time_tf_session("TensorFlow %s LSTM training" % tf.__version__, threads,
                    steps, 10, g, init, train, feed)


if __name__ == "__main__":
    main()
