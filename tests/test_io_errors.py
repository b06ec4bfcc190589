"""Output errors and input that is no transcript: one error line and exit 2, never a
traceback and never the exit 1 that the hook reads as "proposals pending"."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "memory_diff.py"
RULE = "Never push directly to main because the release job deploys every commit."


def native(*texts: str) -> bytes:
    return b"".join(json.dumps({"role": "user", "text": t}).encode() + b"\n" for t in texts)


def run(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=120)


def one_error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err)
    assert err.count("\n") == 1 and err.startswith("memory-diff: error: "), err
    assert "Traceback" not in err
    return err


# -- output errors ----------------------------------------------------------------------

COMMANDS = [
    pytest.param(["build", "t.jsonl", "--memory", "m.md"], id="build-patch"),
    pytest.param(["build", "t.jsonl", "--memory", "m.md", "--json"], id="build-json"),
    pytest.param(["build", "t.jsonl", "--memory", "m.md", "--explain"], id="build-explain"),
    pytest.param(["build", "t.jsonl", "--memory", "m.md", "--list-sources"], id="list-sources"),
    pytest.param(["lint", "bad.md"], id="lint"),
]


def setup_inputs(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_bytes(native(RULE))
    (tmp_path / "bad.md").write_text("- Ask jane.doe@acme-corp.io before a release.\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", COMMANDS)
def test_full_disk_is_one_error_line(tmp_path: Path, args: list[str]) -> None:
    setup_inputs(tmp_path)
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, timeout=120)
    err = one_error_line(done)
    assert "standard output: No space left on device" in err


@pytest.mark.parametrize("args", COMMANDS)
def test_closed_stdout_is_one_error_line(tmp_path: Path, args: list[str]) -> None:
    setup_inputs(tmp_path)
    done = subprocess.run(["bash", "-c", 'exec >&-; exec "$@"', "bash", sys.executable, str(SCRIPT), *args],
                          cwd=tmp_path, stderr=subprocess.PIPE, timeout=120)
    assert "standard output: closed" in one_error_line(done)


def test_broken_pipe_is_quiet_and_exit_0(tmp_path: Path) -> None:
    # Enough --explain output to fill the pipe, read by a reader that leaves at once.
    (tmp_path / "t.jsonl").write_bytes(native(*[f"Sentence {n} says nothing at all here." for n in range(20000)]))
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "build", "t.jsonl", "--memory", "m.md", "--explain"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read()
    assert (proc.wait(timeout=120), err) == (0, b"")


def test_closed_stdin_is_one_error_line(tmp_path: Path) -> None:
    done = subprocess.run(["bash", "-c", 'exec <&-; exec "$@"', "bash", sys.executable, str(SCRIPT),
                           "build", "-", "--memory", "m.md"], cwd=tmp_path, capture_output=True, timeout=120)
    assert "-: standard input is closed" in one_error_line(done)
