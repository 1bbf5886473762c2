"""JAX peer of bench/train_cnn.c: conv 5x5 1->32 SAME, ReLU, max-pool 2,
conv 5x5 32->64 SAME, ReLU, max-pool 2, dense 3136->10, softmax
cross-entropy, plain SGD at 0.01, batch 64, NHWC, the whole step under
jax.jit; prints training steps per second and CPU time per step.  Threads
as train_mlp_jax.py.  Usage: train_cnn_jax.py [threads] [steps]"""
import sys

from tf_timing import limit_jax_threads, time_jax_sgd

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
limit_jax_threads(threads)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

B, S, C = 64, 28, 10


def block(h, f, b):
    h = lax.conv_general_dilated(h, f, (1, 1), "SAME",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jnp.maximum(h + b, 0)
    return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                             "VALID")


def loss_fn(params, x, labels):
    f1, b1, f2, b2, wd, bd = params
    h = block(block(x, f1, b1), f2, b2).reshape(B, -1)
    logp = jax.nn.log_softmax(h @ wd + bd)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def main():
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = np.random.default_rng(1)

    def u(shape, lim):
        return jnp.asarray(rng.uniform(-lim, lim, shape), jnp.float32)

    params = (u((5, 5, 1, 32), 0.2), jnp.zeros(32, jnp.float32),
              u((5, 5, 32, 64), 0.05), jnp.zeros(64, jnp.float32),
              u((7 * 7 * 64, C), 0.03), jnp.zeros(C, jnp.float32))
    x = jnp.asarray(rng.random((B, S, S, 1)), jnp.float32)
    labels = jnp.asarray(rng.integers(0, C, B), jnp.int32)
    time_jax_sgd("CNN training", threads, steps, 5, loss_fn, params, 0.01, x,
                 labels)


if __name__ == "__main__":
    main()
