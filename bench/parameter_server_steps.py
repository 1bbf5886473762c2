#!/usr/bin/env python3
"""Asynchronous parameter-server training steps/s (issue 16, item 3).

    python3 bench/parameter_server_steps.py BUILD_DIR [ROUNDS]

`weft train fashion-mnist --model mlp --epochs 1 --input feed` (600 steps
of batch 100, one thread per process) in one process, and under mpirun
with --parameter-server: rank 0 holds the variables and serves, 1, 2 or 3
workers train, each its share of the batches.  Every step of a worker moves
the weights from the server (0.81 MB) and the gradients back (0.81 MB),
plus a run request, two control tokens and a reply; the floor it is
compared with is one process's step plus two raw MPI transfers of 1 MiB
(bench/sendrecv_mpi's one-way time at that size, measured in the same
run).  On a 2-core machine the processes share the cores: this measures
the protocol's overhead, not speed-up.  Prints medians of ROUNDS (default
3) interleaved runs, with the CPU time per step of all processes together.
"""
import os
import re
import resource
import statistics
import subprocess
import sys

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else 'build')
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
WEFT = os.path.join(BUILD, 'tools', 'weft')
ENV = dict(os.environ,
           WEFT_PLUGIN_PATH=os.path.join(BUILD, 'plugins', 'cpu'),
           WEFT_MPI_MODULE=os.path.join(BUILD, 'runtime', 'weft-mpi.so'),
           LD_LIBRARY_PATH=os.path.join(BUILD, 'runtime'))
MPIRUN = ['mpirun', '--oversubscribe', '--allow-run-as-root', '-x',
          'WEFT_PLUGIN_PATH', '-x', 'WEFT_MPI_MODULE', '-x',
          'LD_LIBRARY_PATH']
STEPS = 600


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def train(ranks):
    """(steps/s, CPU seconds per step) of one run."""
    cmd = [WEFT, 'train', 'fashion-mnist', '--model', 'mlp', '--epochs', '1',
           '--threads', '1', '--input', 'feed',
           '--checkpoint', f'/tmp/ps_steps_{ranks}.ckpt',
           '--save', f'/tmp/ps_steps_{ranks}.model']
    if ranks > 1:
        cmd = MPIRUN + ['-np', str(ranks)] + cmd + ['--parameter-server']
    cpu0 = cpu_of_children()
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True,
                         timeout=900)
    cpu = cpu_of_children() - cpu0
    if out.returncode != 0:
        sys.exit(f'{" ".join(cmd)} failed:\n{out.stderr[-2000:]}')
    seconds = re.findall(r'epoch 1/1: ([0-9.]+) s training', out.stdout)
    if not seconds:
        sys.exit(f'no training time in the output of {" ".join(cmd)}')
    return STEPS / float(seconds[-1]), cpu / STEPS


def one_way_1mib():
    out = subprocess.run(MPIRUN + ['-np', '2', os.path.join(
        BUILD, 'bench', 'sendrecv_mpi'), '11'], env=ENV, capture_output=True,
        text=True, timeout=900)
    for line in out.stdout.splitlines():
        if line.lstrip().startswith('1048576'):
            # The raw MPI column: the round trip's half.
            numbers = re.findall(r'([0-9.]+) us', line)
            if len(numbers) >= 2:
                return float(numbers[1]) * 1e-6
    sys.exit(f'sendrecv_mpi: no 1 MiB line\n{out.stdout}')


def main():
    runs = {}
    for _ in range(ROUNDS):
        for ranks in (1, 2, 3, 4):
            runs.setdefault(ranks, []).append(train(ranks))
    transfer = one_way_1mib()
    one_rate = statistics.median(r for r, _ in runs[1])
    floor = 1.0 / (1.0 / one_rate + 2 * transfer)
    print(f'# {ROUNDS} rounds, medians; MLP 784-256-10, batch 100, 1 thread '
          f'per process, {STEPS} steps; 1 MiB one way over MPI '
          f'{transfer * 1e6:.0f} us; load {os.getloadavg()[0]:.1f}')
    print(f'{"processes":>24} {"steps/s":>8} {"CPU ms/step":>12} '
          f'{"floor st/s":>11} {"ratio":>6}')
    for ranks in (1, 2, 3, 4):
        rate = statistics.median(r for r, _ in runs[ranks])
        cpu = statistics.median(c for _, c in runs[ranks]) * 1e3
        label = ('one process' if ranks == 1 else
                 f'server + {ranks - 1} worker(s)')
        # A worker alone can reach the floor; several share 2 cores.
        print(f'{label:>24} {rate:>8.0f} {cpu:>12.2f} '
              f'{(one_rate if ranks == 1 else floor):>11.0f} '
              f'{rate / (one_rate if ranks == 1 else floor):>6.2f}')


if __name__ == '__main__':
    main()
