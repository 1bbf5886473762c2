"""JAX peer of bench/train_mlp.c: 784 -> 256 -> 10, ReLU, softmax
cross-entropy, the whole step under jax.jit; mode sgd (plain SGD at 0.1,
batches of 100), adam (Adam at 0.001, beta 0.9 / 0.999, epsilon 1e-8, bias
correction as TensorFlow's ApplyAdam and Weft's, written out: no optax) or
infer (the logits of a batch of BATCH rows, default 256); prints steps per
second (median of timed blocks) and CPU time per step.  The process is
held to `threads` cores (affinity) and XLA's CPU thread pools to as many
threads.  Usage: train_mlp_jax.py [threads [steps [sgd|adam|infer
[batch]]]]"""
import sys

from tf_timing import limit_jax_threads, mlp_arguments, time_jax_sgd, \
    time_jax_step, time_steps

threads, steps, mode, B, what = mlp_arguments(sys.argv)
limit_jax_threads(threads)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

P, H, C = 784, 256, 10


def forward(params, x):
    w1, b1, w2, b2 = params
    return jnp.maximum(x @ w1 + b1, 0) @ w2 + b2


def loss_fn(params, x, labels):
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def adam_step(state, x, labels, rate=0.001, b1=0.9, b2=0.999, eps=1e-8):
    params, m, v, t = state
    grads = jax.grad(loss_fn)(params, x, labels)
    t = t + 1
    rate_t = rate * jnp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    m = tuple(b1 * mi + (1 - b1) * g for mi, g in zip(m, grads))
    v = tuple(b2 * vi + (1 - b2) * g * g for vi, g in zip(v, grads))
    params = tuple(p - rate_t * mi / (jnp.sqrt(vi) + eps)
                   for p, mi, vi in zip(params, m, v))
    return params, m, v, t


def main():
    rng = np.random.default_rng(1)
    params = (jnp.asarray(rng.uniform(-0.05, 0.05, (P, H)), jnp.float32),
              jnp.zeros(H, jnp.float32),
              jnp.asarray(rng.uniform(-0.05, 0.05, (H, C)), jnp.float32),
              jnp.zeros(C, jnp.float32))
    x = jnp.asarray(rng.random((B, P)), jnp.float32)
    labels = jnp.asarray(np.arange(B) % C, jnp.int32)
    if mode == "infer":
        f = jax.jit(forward)
        time_steps("JAX %s %s" % (jax.__version__, what), threads, steps, 20,
                   lambda: jax.block_until_ready(f(params, x)))
    elif mode == "adam":
        zeros = tuple(jnp.zeros_like(p) for p in params)
        time_jax_step(what, threads, steps, 20, adam_step,
                      (params, zeros, zeros, jnp.float32(0)), x, labels)
    else:
        time_jax_sgd(what, threads, steps, 20, loss_fn, params, 0.1, x,
                     labels)


if __name__ == "__main__":
    main()
