"""A virtual environment under the build folder with packages from PyPI,
for the tests that check Weft against a format's own tools (TensorFlow,
onnx, onnxruntime).  Never a dependency of Weft itself.

    why = ensure_venv(build_dir / 'onnx-venv', ['onnx', 'onnxruntime'],
                      'import onnx, onnxruntime')
    if why: raise Skip(why)

Tests that share a venv (graphdef_import and record_interop share
interop-venv) run at the same time under `meson test`: the venv is made
and filled under an exclusive lock on a file beside it, so that one test
never probes a venv another is half way through making (a python without
pip yet, a package half installed) and skips for that.
"""

import fcntl
import subprocess
import sys
from pathlib import Path


def venv_python(venv: Path) -> Path:
    return venv / 'bin' / 'python'


def ensure_venv(venv: Path, packages, imports: str, timeout: int = 900):
    """None once `imports` runs in `venv` (made and filled with `packages`
    from PyPI when it does not), else the reason it cannot, for a skip."""
    lock_path = venv.parent / (venv.name + '.lock')
    try:
        lock = open(lock_path, 'a')
    except OSError as e:
        return f'cannot open {lock_path} to lock the venv: {e}'
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_venv_locked(venv, packages, imports, timeout)


def _ensure_venv_locked(venv: Path, packages, imports: str, timeout: int):
    python = venv_python(venv)
    probe = [str(python), '-c', imports]
    if python.exists() and \
            subprocess.run(probe, capture_output=True).returncode == 0:
        return None
    if not python.exists():
        r = subprocess.run([sys.executable, '-m', 'venv', str(venv)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return 'cannot create a venv: ' + (r.stderr.strip() or '?')[-300:]
    wanted = ' '.join(packages)
    try:
        r = subprocess.run([str(python), '-m', 'pip', 'install', '--quiet',
                            *packages], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return f'pip install {wanted} took over {timeout // 60} minutes'
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ['?'])[-1]
        return (f'pip install {wanted} failed (PyPI unreachable?): ' +
                last[-300:])
    if subprocess.run(probe, capture_output=True).returncode != 0:
        return f'`{imports}` fails after pip install {wanted}'
    return None
