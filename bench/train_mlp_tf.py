"""TensorFlow 1.x graph mode peer of bench/train_mlp.c: 784 -> 256 -> 10,
ReLU, sparse softmax cross-entropy; mode sgd (plain SGD at 0.1, batches of
100), adam (tf.compat.v1.train.AdamOptimizer at 0.001, beta 0.9 / 0.999,
epsilon 1e-8, batches of 100) or infer (session.run of the logits of a
batch of BATCH rows, default 256); prints steps per second (median of
timed blocks) and CPU time per step.
Usage: train_mlp_tf.py [threads [steps [sgd|adam|infer [batch]]]]"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tf_timing import mlp_arguments, time_tf_session  # noqa: E402

P, H, C = 784, 256, 10


def main():
    threads, steps, mode, B, what = mlp_arguments(sys.argv)
    infer = mode == "infer"
    tf.compat.v1.disable_eager_execution()
    g = tf.Graph()
    rng = np.random.default_rng(1)
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [B, P])
        labels = tf.compat.v1.placeholder(tf.int32, [B])
        w1 = tf.Variable(rng.uniform(-0.05, 0.05, (P, H)).astype(np.float32))
        b1 = tf.Variable(np.zeros(H, np.float32))
        w2 = tf.Variable(rng.uniform(-0.05, 0.05, (H, C)).astype(np.float32))
        b2 = tf.Variable(np.zeros(C, np.float32))
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                           logits=logits))
        if mode == "adam":
            optimizer = tf.compat.v1.train.AdamOptimizer(0.001, 0.9, 0.999,
                                                         1e-8)
        else:
            optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        train = logits if infer else optimizer.minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    feed = {x: rng.random((B, P), np.float32)}
    if not infer:
        feed[labels] = (np.arange(B) % C).astype(np.int32)
    time_tf_session("TensorFlow %s %s" % (tf.__version__, what), threads,
                    steps, 20, g, init, train, feed)


if __name__ == "__main__":
    main()
