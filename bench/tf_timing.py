"""Timing shared by the Python peers (TensorFlow and JAX): warm-up steps,
then 10 timed blocks, wall-clock (time.perf_counter) and process CPU time
(time.process_time) per call; prints the lines scripts/bench_peers.sh
reads, in the form of bench/bench_util.h's bench_steps and
bench_print_per_unit."""
import statistics
import time


def time_blocks(warmup, block, step):
    """Runs step() `warmup` times, then 10 blocks of `block` calls; returns
    the medians of wall-clock and CPU seconds per call."""
    for _ in range(warmup):
        step()
    walls, cpus = [], []
    for _ in range(10):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(block):
            step()
        w1, c1 = time.perf_counter(), time.process_time()
        walls.append((w1 - w0) / block)
        cpus.append((c1 - c0) / block)
    return statistics.median(walls), statistics.median(cpus)


def time_steps(label, threads, steps, warmup, step):
    """Runs step() `warmup` times, then 10 blocks of steps // 10, and prints
    "<label>, N thread(s): X steps/s (CPU Y ms/step), ..."."""
    block = max(steps // 10, 1)
    wall, cpu = time_blocks(warmup, block, step)
    print("%s, %d thread(s): %.1f steps/s (CPU %.3f ms/step), median of 10 "
          "blocks of %d steps" % (label, threads, 1 / wall, cpu * 1e3, block))


def time_per_unit(label, threads, calls, warmup, per_call, unit, step):
    """As time_steps for a call doing `per_call` units of work: prints
    "<label>, N thread(s): X us/<unit> (CPU Y us/<unit>), ..."."""
    block = max(calls // 10, 1)
    wall, cpu = time_blocks(warmup, block, step)
    print("%s, %d thread(s): %.4f us/%s (CPU %.4f us/%s), median of 10 "
          "blocks of %d calls of %d" % (label, threads,
                                        wall * 1e6 / per_call, unit,
                                        cpu * 1e6 / per_call, unit, block,
                                        per_call))


def mlp_arguments(argv):
    """train_mlp's command line, shared by its Python peers:
    [threads [steps [sgd|adam|infer [batch]]]] -> (threads, steps, mode,
    batch, label), label naming the workload as train_mlp.c does."""
    threads = int(argv[1]) if len(argv) > 1 else 1
    mode = argv[3] if len(argv) > 3 else "sgd"
    infer = mode == "infer"
    batch = int(argv[4]) if infer and len(argv) > 4 else (
        256 if infer else 100)
    steps = int(argv[2]) if len(argv) > 2 else (2000 if infer else 700)
    label = ("MLP inference batch %d" % batch if infer else
             "MLP %s training" % ("Adam" if mode == "adam" else "SGD"))
    return threads, steps, mode, batch, label


def tf_session_config(threads):
    """A session config with `threads` intra- and inter-op threads."""
    import tensorflow as tf
    return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                                    inter_op_parallelism_threads=threads)


def time_tf_session(label, threads, steps, warmup, graph, init, train, feed):
    """A TensorFlow 1.x session over `graph` with `threads` intra- and
    inter-op threads: runs `init`, then times `train` (a target, or a value
    to fetch) fed with `feed`."""
    import tensorflow as tf
    with tf.compat.v1.Session(graph=graph,
                              config=tf_session_config(threads)) as s:
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


def time_jax_step(label, threads, steps, warmup, step, state, *args):
    """Times `state = step(state, *args)` under jax.jit, waiting for each
    result."""
    import jax

    step = jax.jit(step)
    box = [state]

    def one():
        box[0] = step(box[0], *args)
        jax.block_until_ready(box[0])

    time_steps("JAX %s %s" % (jax.__version__, label), threads, steps,
               warmup, one)


def time_jax_sgd(label, threads, steps, warmup, loss_fn, params, rate,
                 *args):
    """Times a jitted SGD step of `loss_fn(params, *args)` at `rate`."""
    import jax

    def step(params, *args):
        grads = jax.grad(loss_fn)(params, *args)
        return tuple(p - rate * g for p, g in zip(params, grads))

    time_jax_step(label, threads, steps, warmup, step, params, *args)
