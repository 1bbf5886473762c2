"""JAX peer of bench/train_mlp.c: 784 -> 256 -> 10, ReLU, softmax
cross-entropy, plain SGD at 0.1, batches of 100, the whole step under
jax.jit; prints training steps per second (median of timed blocks) and CPU
time per step.  The process is held to `threads` cores (affinity) and XLA's
CPU thread pools to as many threads.  Usage: train_mlp_jax.py [threads]
[steps]"""
import sys

from tf_timing import limit_jax_threads, time_jax_sgd

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
limit_jax_threads(threads)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

B, P, H, C = 100, 784, 256, 10


def loss_fn(params, x, labels):
    w1, b1, w2, b2 = params
    logits = jnp.maximum(x @ w1 + b1, 0) @ w2 + b2
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def main():
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 700
    rng = np.random.default_rng(1)
    params = (jnp.asarray(rng.uniform(-0.05, 0.05, (P, H)), jnp.float32),
              jnp.zeros(H, jnp.float32),
              jnp.asarray(rng.uniform(-0.05, 0.05, (H, C)), jnp.float32),
              jnp.zeros(C, jnp.float32))
    x = jnp.asarray(rng.random((B, P)), jnp.float32)
    labels = jnp.asarray(np.arange(B) % C, jnp.int32)
    time_jax_sgd("MLP training", threads, steps, 20, loss_fn, params, 0.1, x,
                 labels)


if __name__ == "__main__":
    main()
