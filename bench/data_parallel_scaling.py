#!/usr/bin/env python3
"""Data-parallel training steps/s at 1, 2 and 4 ranks (issue 16, item 7b).

    python3 bench/data_parallel_scaling.py BUILD_DIR [ROUNDS]

For each rank count: `weft train fashion-mnist --model mlp --data-parallel`
(one epoch, the global batch of 100 split over the ranks, one thread per
rank), with each gradient averaged by its own AllReduce and with all of
them in one bucket; against the floor MPI sets: one process's step on a
rank's share of the batch (100/N examples, timed alone) plus one
MPI_Allreduce of the step's gradient bytes (0.81 MB; timed by
bench/allreduce_mpi at the 1 MiB point, the slowest rank's median).  No
Horovod/DDP peer: PyTorch is not a Debian package here, and the issue allows
this floor instead.  On a 2-core machine the ranks share the cores, so this
measures overhead, not speed-up.  Prints medians of ROUNDS (default 3)
interleaved runs.
"""
import os
import re
import statistics
import subprocess
import sys

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else 'build')
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
WEFT = os.path.join(BUILD, 'tools', 'weft')
MODULE = os.path.join(BUILD, 'runtime', 'weft-mpi.so')
ENV = dict(os.environ,
           WEFT_PLUGIN_PATH=os.path.join(BUILD, 'plugins', 'cpu'),
           WEFT_MPI_MODULE=MODULE,
           LD_LIBRARY_PATH=os.path.join(BUILD, 'runtime'))
MPIRUN = ['mpirun', '--oversubscribe', '--allow-run-as-root', '-x',
          'WEFT_PLUGIN_PATH', '-x', 'WEFT_MPI_MODULE', '-x',
          'LD_LIBRARY_PATH']


def train(ranks, bucket, tag, batch=100):
    cmd = [WEFT, 'train', 'fashion-mnist', '--model', 'mlp', '--epochs', '1',
           '--threads', '1', '--batch', str(batch),
           '--checkpoint', f'/tmp/dp_scaling_{tag}.ckpt',
           '--save', f'/tmp/dp_scaling_{tag}.model']
    if ranks > 1:
        cmd = MPIRUN + ['-np', str(ranks)] + cmd + [
            '--data-parallel', '--bucket-bytes', str(bucket)]
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        sys.exit(f'{" ".join(cmd)} failed:\n{out.stderr[-2000:]}')
    rates = re.findall(r'([0-9.]+) steps/s', out.stdout)
    if not rates:
        sys.exit(f'no steps/s in the output of {" ".join(cmd)}')
    return float(rates[-1])


def allreduce_1mib(ranks):
    out = subprocess.run(MPIRUN + ['-np', str(ranks),
                                   os.path.join(BUILD, 'bench',
                                                'allreduce_mpi'), '11'],
                         env=ENV, capture_output=True, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith('AllReduce') and ' 1048576 B' in line:
            return float(re.search(r'MPI blocking\s+([0-9.]+) us',
                                   line).group(1)) * 1e-6
    sys.exit(f'allreduce_mpi -np {ranks}: no 1 MiB line\n{out.stdout}')


def main():
    runs = {}
    for r in range(ROUNDS):
        for ranks in (1, 2, 4):
            for bucket in ((0,) if ranks == 1 else (0, 1 << 22)):
                runs.setdefault((ranks, bucket), []).append(
                    train(ranks, bucket, f'{ranks}_{bucket}'))
            if ranks > 1:  # one process on a rank's share
                runs.setdefault(('alone', ranks), []).append(
                    train(1, 0, f'alone_{ranks}', 100 // ranks))
    one = statistics.median(runs[(1, 0)])
    print(f'# {ROUNDS} rounds, medians; MLP 784-256-10, global batch 100, '
          f'1 thread per rank; load {os.getloadavg()[0]:.1f}')
    print(f'{"ranks":>5} {"per-gradient":>14} {"one bucket":>12} '
          f'{"MPI floor":>10} {"ratio to floor":>15}')
    print(f'{1:>5} {one:>10.0f} st/s {"":>12} {one:>6.0f} st/s {1.0:>15.2f}')
    for ranks in (2, 4):
        each = statistics.median(runs[(ranks, 0)])
        bucket = statistics.median(runs[(ranks, 1 << 22)])
        share = 1.0 / statistics.median(runs[('alone', ranks)])
        floor = 1.0 / (share + allreduce_1mib(ranks))
        print(f'{ranks:>5} {each:>10.0f} st/s {bucket:>8.0f} st/s '
              f'{floor:>6.0f} st/s {max(each, bucket) / floor:>15.2f}')


if __name__ == '__main__':
    main()
