"""`weft train fashion-mnist --parameter-server` under mpirun (issue 16):
rank 0 holds the variables and serves, the other ranks train
asynchronously, each its share of the batches.

    test_train_parameter_server.py WEFT MPI_MODULE [MPIRUN]

With one worker nothing is asynchronous: its steps apply in its order, so
the model must be exactly the single process's (the same predictions).
With two workers the MLP must still come near its target (85% in one
process: 86.16%; asynchronous workers' stale gradients cost a little and
vary from run to run: 84.8-86.1% over 17 runs of 2 and 3 workers, so 84%
here, clear of that spread and far above what lost updates leave), and a worker killed mid-training must end serving with an
error naming it, leave a checkpoint, and a relaunch with --resume must
finish.  Without mpirun
the cases that need it are skipped, with the reason.
"""

import os
import signal
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
from tap import Skip, Tap  # noqa: E402
from train_common import (  # noqa: E402
    accuracy, env, mpirun, need_mpi, signal_rank_at_checkpoint, DATA)
from train_common import run as run_job  # noqa: E402

WEFT = sys.argv[1]
MODULE = sys.argv[2]
MPIRUN = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None

tap = Tap()
ASYNC_TARGET = 84.0


def train(workdir, tag, ranks, *flags):
    """weft train (under mpirun with --parameter-server when ranks > 0);
    returns its stdout."""
    args = [WEFT, 'train', 'fashion-mnist', '--threads', '1',
            '--checkpoint', os.path.join(workdir, tag + '.ckpt'),
            '--save', os.path.join(workdir, tag + '-model')] + list(flags)
    if ranks > 0:
        args = mpirun(MPIRUN, ranks) + args + ['--parameter-server']
    done = run_job(args, env(MODULE), timeout=600)
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:],
                                  done.stderr[-2000:])
    return done.stdout


def predictions(stdout):
    for line in stdout.splitlines():
        if line.startswith('test predictions:'):
            return line
    raise AssertionError('no predictions line in:\n' + stdout[-2000:])


@tap.case
def one_worker_trains_exactly_as_one_process():
    need_mpi(MPIRUN, MODULE)
    with tempfile.TemporaryDirectory() as d:
        one = train(d, 'one', 0, '--model', 'mlp', '--epochs', '1',
                    '--input', 'feed')
        served = train(d, 'served', 2, '--model', 'mlp', '--epochs', '1',
                       '--input', 'feed')
    assert predictions(one) == predictions(served), (one[-800:],
                                                     served[-800:])
    assert accuracy(one) == accuracy(served)
    assert 'serving the variables to 1 worker(s)' in served, served[-1500:]


@tap.case
def two_workers_reach_the_mlp_target_through_the_pipeline():
    need_mpi(MPIRUN, MODULE)
    with tempfile.TemporaryDirectory() as d:
        out = train(d, 'mlp', 3, '--model', 'mlp')
    assert accuracy(out) >= ASYNC_TARGET, out[-1500:]
    # One voice: the server's.
    assert out.count('test accuracy:') == 1, out


@tap.case
def options_that_cannot_be_served_are_refused():
    if not os.path.isdir(DATA):
        raise Skip('skipped: no Fashion-MNIST (Debian dataset-fashion-mnist)')
    both = run_job(
        [WEFT, 'train', 'fashion-mnist', '--parameter-server',
         '--data-parallel'], env(MODULE), timeout=120)
    assert both.returncode != 0
    assert 'exclude each other' in both.stderr, both.stderr
    alone = run_job(
        [WEFT, 'train', 'fashion-mnist', '--parameter-server'], env(MODULE),
        timeout=120)
    assert alone.returncode != 0
    assert 'needs mpirun -np 2 or more' in alone.stderr, alone.stderr


@tap.case
def a_killed_worker_ends_serving_naming_it_and_a_resume_finishes():
    need_mpi(MPIRUN, MODULE)
    marker = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as d:
        ckpt = os.path.join(d, 'job.ckpt')
        command = [WEFT, 'train', 'fashion-mnist', '--model', 'mlp',
                   '--threads', '1', '--parameter-server',
                   '--checkpoint', ckpt, '--checkpoint-every', '100',
                   '--save', os.path.join(d, 'model')]
        # Without recovery mpirun ends the whole job itself when a rank
        # dies; with it the server goes on and Weft says what happened.
        args = (mpirun(MPIRUN, 3, 'WEFT_TEST_MARKER') +
                ['--mca', 'orte_enable_recovery', '1'] + command)
        e = env(MODULE)
        e['WEFT_TEST_MARKER'] = marker
        # Once in three clean-clone CI runs (stop 34, the suite's other
        # tests running beside it) the job ended with nothing from Weft
        # but Open MPI's "PMIX ERROR: BAD-PARAM ... pmix_event_notification"
        # line: mpirun ended every rank despite orte_enable_recovery.  That
        # is Open MPI's race, not the server's, so a second try is allowed
        # for that symptom only.
        for attempt in range(2):
            if os.path.exists(ckpt):
                os.remove(ckpt)
            job, _ = signal_rank_at_checkpoint(args, e, ckpt, 2,
                                               signal.SIGKILL)
            out, err = job.communicate(timeout=120)
            if ('stopped answering liveness checks' in err or attempt == 1
                    or 'PMIX ERROR' not in err):
                break
            print('# retrying: mpirun ended the job itself: ' +
                  err.strip()[-300:], file=sys.stderr)
        assert ('stopped answering liveness checks without ending its '
                'session' in err), err[-3000:]
        assert 'task /job:worker/task:1 (rank 2)' in err, err[-3000:]
        assert 'relaunch with --resume' in err, err[-3000:]
        resumed = run_job(
            mpirun(MPIRUN, 3) + command + ['--resume'], e, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert accuracy(resumed.stdout) >= ASYNC_TARGET, \
            resumed.stdout[-1500:]


sys.exit(tap.finish())
