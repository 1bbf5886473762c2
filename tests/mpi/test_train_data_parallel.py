"""`weft train fashion-mnist --data-parallel` and `weft devices --cluster`
under mpirun (issue 16).

    test_train_data_parallel.py WEFT MPI_MODULE [MPIRUN]

With a fixed seed, N ranks each taking 1/N of every batch (gradients
averaged by AllReduce before each update) must train exactly as one process
with the whole batch: the same losses step by step (the chief logs the loss
averaged over the ranks) within float tolerance, the same test accuracy.
And the main job reaches its accuracy target that way.  Without mpirun the
cases that need it are skipped, with the reason.
"""

import os
import signal
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
from tap import Skip, Tap  # noqa: E402
import train_common as common  # noqa: E402
from train_common import DATA, accuracy  # noqa: E402

WEFT = sys.argv[1]
MODULE = sys.argv[2]
MPIRUN = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None

tap = Tap()


def need_mpi():
    common.need_mpi(MPIRUN, MODULE)


def mpirun(ranks, *extra_env):
    return common.mpirun(MPIRUN, ranks, *extra_env)


def env():
    return common.env(MODULE)


def train(workdir, tag, ranks, *flags):
    """Runs weft train (under mpirun when ranks > 0); returns (stdout,
    losses)."""
    log = os.path.join(workdir, tag + '.log')
    args = [WEFT, 'train', 'fashion-mnist', '--threads', '1',
            '--loss-log', log,
            '--checkpoint', os.path.join(workdir, tag + '.ckpt'),
            '--save', os.path.join(workdir, tag + '-model')] + list(flags)
    if ranks > 0:
        args = mpirun(ranks) + args + ['--data-parallel']
    done = common.run(args, env(), timeout=600)
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:],
                                  done.stderr[-2000:])
    with open(log) as f:
        losses = [float.fromhex(line.split()[1]) for line in f]
    return done.stdout, losses


def same_training(ranks, *flags):
    need_mpi()
    with tempfile.TemporaryDirectory() as d:
        one, one_losses = train(d, 'one', 0, *flags)
        many, many_losses = train(d, 'many', ranks, *flags)
    assert len(one_losses) == len(many_losses) == 600, (
        len(one_losses), len(many_losses))
    worst = max(abs(a - b) / max(abs(a), 1e-6)
                for a, b in zip(one_losses, many_losses))
    # Sums over shards reassociate: float32 rounding, no more.
    assert worst < 1e-5, f'losses differ by up to {worst:.3g} (relative)'
    # Training moved: the first loss is ln(10), the last far below.
    assert many_losses[-1] < 0.8 * many_losses[0], many_losses[-1]
    assert accuracy(one) == accuracy(many), (accuracy(one), accuracy(many))
    # One voice: the other ranks print nothing.
    assert many.count('test accuracy:') == 1, many


@tap.case
def two_ranks_train_as_one_process_through_the_pipeline():
    same_training(2, '--epochs', '1', '--learning-rate', '0.05')


@tap.case
def four_ranks_train_as_one_process_when_fed():
    same_training(4, '--epochs', '1', '--learning-rate', '0.05',
                  '--input', 'feed')


@tap.case
def the_mlp_reaches_its_target_on_two_ranks():
    need_mpi()
    with tempfile.TemporaryDirectory() as d:
        out, _ = train(d, 'mlp', 2, '--model', 'mlp')
    assert accuracy(out) >= 85.0, out[-1500:]


@tap.case
def a_batch_that_does_not_split_is_refused():
    need_mpi()
    done = common.run(
        mpirun(3) + [WEFT, 'train', 'fashion-mnist', '--data-parallel',
                     '--batch', '100'], env(), timeout=120)
    assert done.returncode != 0
    assert 'does not split evenly over 3 ranks' in done.stderr, done.stderr


@tap.case
def data_parallel_alone_is_one_rank():
    if not os.path.isdir(DATA):
        raise Skip('skipped: no Fashion-MNIST (Debian dataset-fashion-mnist)')
    with tempfile.TemporaryDirectory() as d:
        one, one_losses = train(d, 'plain', 0, '--epochs', '1')
        alone = common.run(
            [WEFT, 'train', 'fashion-mnist', '--epochs', '1', '--threads',
             '1', '--data-parallel', '--loss-log',
             os.path.join(d, 'alone.log'), '--checkpoint',
             os.path.join(d, 'alone.ckpt'), '--save',
             os.path.join(d, 'alone-model')], env(), timeout=300)
        assert alone.returncode == 0, alone.stderr
        with open(os.path.join(d, 'alone.log')) as f:
            alone_losses = [float.fromhex(line.split()[1]) for line in f]
    # One rank: the very same arithmetic (an AllReduce of one is a copy).
    assert alone_losses == one_losses


@tap.case
def devices_cluster_lists_every_task():
    need_mpi()
    done = common.run(
        mpirun(3) + [WEFT, 'devices', '--cluster'], env(), timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith('cluster: 3 tasks (job worker, over MPI)'), out
    for task in range(3):
        # Rank 0 prints every task's block once, in order.
        assert out.count(f'/job:worker/task:{task} on ') == 1, out
        assert f'/job:worker/task:{task}/device:CPU:0' in out, out
    alone = common.run([WEFT, 'devices', '--cluster'], env(), timeout=60)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.startswith('cluster: 1 task (job worker; not started '
                                   'by an MPI launcher)'), alone.stdout


def interrupt_rank_one(sig, expected, *mpirun_options):
    """Trains the MLP on 2 ranks to its first periodic checkpoint, sends
    rank 1 `sig`, checks rank 0 ends the job with the collective's
    UNAVAILABLE and `expected` (the liveness verdict), then relaunches with
    --resume and checks it finishes at the target."""
    need_mpi()
    marker = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as d:
        ckpt = os.path.join(d, 'job.ckpt')
        command = [WEFT, 'train', 'fashion-mnist',
                   '--model', 'mlp', '--threads', '1', '--data-parallel',
                   '--checkpoint', ckpt, '--checkpoint-every', '100',
                   '--step-timeout', '3', '--save', os.path.join(d, 'model')]
        args = mpirun(2, 'WEFT_TEST_MARKER') + list(mpirun_options) + command
        e = env()
        e['WEFT_TEST_MARKER'] = marker
        # The first periodic checkpoint, then rank 1 stops or dies.
        job, pid = common.signal_rank_at_checkpoint(args, e, ckpt, 1, sig)
        stopped = time.monotonic()
        try:
            out, err = job.communicate(timeout=90)
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        took = time.monotonic() - stopped
        # Rank 0 names what it waited for and which rank did not answer,
        # within the step timeout (3 s), the liveness check (1 s) and the
        # job's teardown.  (mpirun's own exit status is not Weft's to
        # choose: with recovery enabled it can be 0.)
        assert 'waited for the other ranks of the job (2 ranks)' in err, \
            err[-3000:]
        assert expected in err, err[-3000:]
        assert took < 30, f'the job took {took:.1f} s to end'
        # The relaunch continues from the last periodic checkpoint.
        resumed = common.run(
            mpirun(2) + command + ['--resume'], e, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert accuracy(resumed.stdout) >= 85.0, resumed.stdout[-1500:]


@tap.case
def a_hung_rank_ends_the_job_and_a_resume_finishes_it():
    interrupt_rank_one(signal.SIGSTOP, 'rank 1 did not answer a liveness '
                       'check within 1000 ms: dead or stopped')


@tap.case
def a_killed_rank_ends_the_job_naming_it_and_a_resume_finishes_it():
    # Without recovery mpirun kills the whole job itself when a rank dies
    # (its own message); with it the others go on and Weft's deadline and
    # liveness check say what happened.
    interrupt_rank_one(signal.SIGKILL, 'rank 1 did not answer a liveness '
                       'check within 1000 ms: dead or stopped',
                       '--mca', 'orte_enable_recovery', '1')


sys.exit(tap.finish())
