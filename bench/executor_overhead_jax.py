"""JAX's nearest figure to bench/executor_overhead.c, clearly not the same
one: jax.jit of a chain of 1,000 scalar adds is folded by XLA into one
fused kernel (x + 1000), so a per-node figure would be meaningless.  This
measures instead the dispatch of a trivial jitted function (x + 1 on a
float32 scalar, waiting for the result): JAX's fixed cost per call, which
bench_peers.sh reports per call, not per node.  Threads as
train_mlp_jax.py.  Usage: executor_overhead_jax.py [threads [runs]]"""
import sys

from tf_timing import limit_jax_threads, time_per_unit

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
limit_jax_threads(threads)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def main():
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    # Enough calls for a stable figure: one is a few microseconds.
    runs *= 10
    f = jax.jit(lambda x: x + 1)
    x = jnp.float32(0)
    time_per_unit("JAX %s jit dispatch per call (trivial function, not per "
                  "node)" % jax.__version__, threads, runs, 100, 1, "call",
                  lambda: jax.block_until_ready(f(x)))


if __name__ == "__main__":
    main()
