"""What the `weft train` tests under mpirun share: the skip when Open MPI or
the dataset is missing, mpirun's prefix, the environment, the accuracy
line, finding a rank's process, and starting jobs that cannot outlive the
test."""

import atexit
import os
import signal
import subprocess
import sys
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


# Every job a test starts runs in a session of its own, and whatever is
# left of those sessions is killed when the test ends, however it ends: a
# failed assertion, a timeout, or meson's SIGTERM at the suite's deadline.
# Without this a case that failed before waiting for its job left mpirun
# and ranks spinning for the rest of the machine's day (stop 48).  Killing
# mpirun is not enough: Open MPI puts each rank in a process group of its
# own, but they stay in mpirun's session.
_sessions = []


def _kill_session(sid):
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                stat = f.read()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp, session.
        fields = stat.rsplit(')', 1)[1].split()
        if int(fields[3]) == sid:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except ProcessLookupError:
                pass


def _kill_all_jobs():
    for sid in _sessions:
        _kill_session(sid)


atexit.register(_kill_all_jobs)
# SIGTERM's default ends Python without atexit; as an exit it runs.
signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(128 + sig))


def start(args, e):
    """Starts `args` in a session of its own, output captured as text."""
    job = subprocess.Popen(args, env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    _sessions.append(job.pid)
    return job


def run(args, e, timeout):
    """subprocess.run for a job: on timeout all of it is killed (mpirun
    and every rank, not only mpirun) before TimeoutExpired is raised."""
    job = start(args, e)
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_session(job.pid)
        job.communicate()
        raise
    return subprocess.CompletedProcess(args, job.returncode, out, err)


def signal_rank_at_checkpoint(args, e, ckpt, rank, sig):
    """Starts `args` (an mpirun command line whose ranks carry
    WEFT_TEST_MARKER from `e`), waits for its first periodic checkpoint
    `ckpt`, sends rank `rank` signal `sig`; returns (job, pid)."""
    job = start(args, e)
    deadline = time.monotonic() + 120
    while not os.path.exists(ckpt) and job.poll() is None:
        assert time.monotonic() < deadline, 'no checkpoint after 120 s'
        time.sleep(0.01)
    pid = rank_pid(e['WEFT_TEST_MARKER'], rank)
    assert pid is not None and job.poll() is None, \
        f'the job ended before rank {rank} could be signalled'
    os.kill(pid, sig)
    return job, pid
