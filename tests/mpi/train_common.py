"""What the `weft train` tests under mpirun share: the skip when Open MPI or
the dataset is missing, mpirun's prefix, the environment, the accuracy
line, and finding a rank's process."""

import os
import subprocess
import time

from tap import Skip

DATA = '/usr/share/datasets/fashion-mnist'


def need_mpi(mpirun_path, module):
    if mpirun_path is None or not os.path.exists(module):
        raise Skip('skipped: Open MPI (mpirun, libopenmpi-dev) is not '
                   'installed, or Weft was built without its MPI module')
    if not os.path.isdir(DATA):
        raise Skip('skipped: no Fashion-MNIST (Debian dataset-fashion-mnist)')


def mpirun(mpirun_path, ranks, *extra_env):
    """The mpirun prefix for `ranks` ranks passing Weft's variables."""
    args = [mpirun_path, '-np', str(ranks), '--oversubscribe',
            '--allow-run-as-root', '-x', 'WEFT_PLUGIN_PATH', '-x',
            'WEFT_MPI_MODULE']
    for name in extra_env:
        args += ['-x', name]
    return args


def env(module):
    e = dict(os.environ)
    e['WEFT_MPI_MODULE'] = module
    return e


def accuracy(stdout):
    for line in stdout.splitlines():
        if line.startswith('test accuracy:'):
            return float(line.split()[2].rstrip('%'))
    raise AssertionError('no accuracy line in:\n' + stdout[-2000:])


def rank_pid(marker, rank):
    """The pid of the process whose environment has `marker` and MPI rank
    `rank`, or None."""
    want = {b'WEFT_TEST_MARKER=' + marker.encode(),
            b'OMPI_COMM_WORLD_RANK=' + str(rank).encode()}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/environ', 'rb') as f:
                env_items = set(f.read().split(b'\0'))
        except OSError:
            continue
        if want <= env_items:
            return int(entry)
    return None


def signal_rank_at_checkpoint(args, e, ckpt, rank, sig):
    """Starts `args` (an mpirun command line whose ranks carry
    WEFT_TEST_MARKER from `e`), waits for its first periodic checkpoint
    `ckpt`, sends rank `rank` signal `sig`; returns (job, pid)."""
    job = subprocess.Popen(args, env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(ckpt) and job.poll() is None:
        assert time.monotonic() < deadline, 'no checkpoint after 120 s'
        time.sleep(0.01)
    pid = rank_pid(e['WEFT_TEST_MARKER'], rank)
    assert pid is not None and job.poll() is None, \
        f'the job ended before rank {rank} could be signalled'
    os.kill(pid, sig)
    return job, pid
