"""Timing shared by the TensorFlow peers: warm-up steps, then 10 timed
blocks; prints the line scripts/bench_peers.sh reads."""
import statistics
import time


def time_steps(label, threads, steps, warmup, step):
    """Runs step() `warmup` times, then 10 blocks of steps // 10, and prints
    "<label>, N thread(s): X steps/s (CPU Y ms/step), ..."."""
    for _ in range(warmup):
        step()
    block = max(steps // 10, 1)
    rates, cpus = [], []
    for _ in range(10):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(block):
            step()
        w1, c1 = time.perf_counter(), time.process_time()
        rates.append(block / (w1 - w0))
        cpus.append((c1 - c0) / block * 1e3)
    print("%s, %d thread(s): %.1f steps/s (CPU %.2f ms/step), median of 10 "
          "blocks of %d steps" % (label, threads, statistics.median(rates),
                                  statistics.median(cpus), block))


def time_tf_session(label, threads, steps, warmup, graph, init, train, feed):
    """A TensorFlow 1.x session over `graph` with `threads` intra- and
    inter-op threads: runs `init`, then times `train` fed with `feed`."""
    import tensorflow as tf
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                                      inter_op_parallelism_threads=threads)
    with tf.compat.v1.Session(graph=graph, config=config) as s:
        s.run(init)
        time_steps(label, threads, steps, warmup, lambda: s.run(train, feed))


def limit_jax_threads(threads):
    """Holds the process to `threads` cores and XLA's CPU pools to as many
    threads.  Call before importing jax."""
    import os
    os.sched_setaffinity(0, set(range(threads)))
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_multi_thread_eigen=%s"
                               " intra_op_parallelism_threads=%d" %
                               ("true" if threads > 1 else "false", threads))


def time_jax_sgd(label, threads, steps, warmup, loss_fn, params, rate,
                 *args):
    """Times a jitted SGD step of `loss_fn(params, *args)` at `rate`."""
    import jax

    @jax.jit
    def step(params, *args):
        grads = jax.grad(loss_fn)(params, *args)
        return tuple(p - rate * g for p, g in zip(params, grads))

    state = [params]

    def one():
        state[0] = step(state[0], *args)
        jax.block_until_ready(state[0])

    time_steps("JAX %s %s" % (jax.__version__, label), threads, steps,
               warmup, one)
