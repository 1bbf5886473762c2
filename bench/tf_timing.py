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
