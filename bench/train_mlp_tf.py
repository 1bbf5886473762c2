"""TensorFlow 1.x graph mode peer of bench/train_mlp.c: 784 -> 256 -> 10,
ReLU, sparse softmax cross-entropy, plain SGD at 0.1, batches of 100;
prints training steps per second (median of timed blocks) and CPU time per
step.  Usage: train_mlp_tf.py [threads] [steps]"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tf_timing import time_tf_session  # noqa: E402

B, P, H, C = 100, 784, 256, 10


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 700
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
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss)
        init = tf.compat.v1.global_variables_initializer()
    feed = {x: rng.random((B, P), np.float32),
            labels: (np.arange(B) % C).astype(np.int32)}
    time_tf_session("TensorFlow %s MLP training" % tf.__version__, threads,
                    steps, 20, g, init, train, feed)


if __name__ == "__main__":
    main()
