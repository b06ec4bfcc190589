"""How the tests run memory-diff. MEMORY_DIFF: `main` in a fresh interpreter, the module
imported from its file rather than run as a script: Python compiles a script anew on every
run (a quarter of a second for this module, most of a small run's time) but keeps an
imported module's bytecode. main_process: `main` in the test's own process, for tables of
many rows. test_examples and test_readme run `python memory_diff.py` as the README types it."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # main_process's import
SCRIPT = ROOT / "memory_diff.py"


def launcher(script: Path) -> list[str]:
    """The command line that runs `main` of the module in `script` (any copy, any name)."""
    code = ("import importlib.util, sys; "
            f"spec = importlib.util.spec_from_file_location('memory_diff', {str(script)!r}); "
            "module = sys.modules['memory_diff'] = importlib.util.module_from_spec(spec); "
            "spec.loader.exec_module(module); sys.exit(module.main())")
    return [sys.executable, "-c", code]


MEMORY_DIFF = launcher(SCRIPT)


def main_process(argv: list[str], cwd: Path,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`main(argv)` in this process, in cwd (and env, when given, as os.environ), as
    subprocess.run gives a command's result (stderr encoded as Python's is). For tables of what
    is proposed or printed, which hundreds of runs check, not how a process behaves; one run at
    a time, as it changes the working directory."""
    import memory_diff

    stdout, stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    here, environ = os.getcwd(), dict(os.environ)
    try:
        os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = memory_diff.main(argv)
    finally:
        os.chdir(here)
        if env is not None:
            os.environ.clear()
            os.environ.update(environ)
    stdout.flush()
    return subprocess.CompletedProcess(argv, status, stdout.buffer.getvalue(),
                                       stderr.getvalue().encode("utf-8", "backslashreplace"))
