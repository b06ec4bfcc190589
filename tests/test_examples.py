"""Golden examples: examples/<name>/ holds transcript.jsonl, memory.md, args.txt (extra CLI
arguments, one a line) and expected.diff. `build` runs from the repository root with
relative paths (the preamble names the transcript as given), stdout must equal
expected.diff byte for byte, and the patch must apply with git apply and patch -p1.

To re-generate after an intended change, run from the repository root:
    python memory_diff.py build examples/NAME/transcript.jsonl \
        --memory examples/NAME/memory.md ARGS > examples/NAME/expected.diff
and read the diff before committing it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "memory_diff.py"
EXAMPLES = ROOT / "examples"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


def example_args(case: Path) -> list[str]:
    text = (case / "args.txt").read_text(encoding="utf-8")
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def command(case: Path) -> list[str]:
    rel = case.relative_to(ROOT).as_posix()
    # Run inside this repository: --no-cache, so its git directory never holds a cache.
    return [sys.executable, str(SCRIPT), "build", f"{rel}/transcript.jsonl",
            "--memory", f"{rel}/memory.md", *example_args(case), "--no-cache"]


CASES = [pytest.param(p, id=p.name) for p in sorted(EXAMPLES.iterdir()) if p.is_dir()]


def test_enough_examples() -> None:
    assert len(CASES) >= 4
    for param in CASES:
        case = param.values[0]
        for name in ("transcript.jsonl", "memory.md", "args.txt", "expected.diff"):
            assert (case / name).is_file(), f"{case.name}/{name}"


@pytest.mark.parametrize("case", CASES)
def test_example_output(case: Path) -> None:
    done = subprocess.run(command(case), cwd=ROOT, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
    expected = (case / "expected.diff").read_bytes()
    assert done.stdout == expected


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-c", "core.autocrlf=false", *args], cwd=repo,
                          env={**os.environ, **GIT_ENV}, capture_output=True, timeout=60)


def _targets(patch: bytes) -> list[str]:
    out = []
    for line in patch.split(b"\n"):
        if line.startswith(b"+++ b/"):
            out.append(line[6:].decode().rstrip("\t"))
    return out


@pytest.mark.parametrize("case", CASES)
def test_example_applies(case: Path, tmp_path: Path) -> None:
    patch = (case / "expected.diff").read_bytes()
    assert patch, f"{case.name}: an example must propose something"
    targets = _targets(patch)
    assert targets
    copies = {}
    for tool in ("git", "patch"):
        repo = tmp_path / tool
        repo.mkdir()
        assert _git(repo, "init", "-q").returncode == 0
        for rel in targets:
            source = ROOT / rel
            dest = repo / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if source.exists():
                shutil.copyfile(source, dest)
        assert _git(repo, "add", "-A").returncode == 0
        copies[tool] = repo
    patch_file = tmp_path / "expected.diff"
    patch_file.write_bytes(patch)

    done = _git(copies["git"], "apply", str(patch_file))
    assert done.returncode == 0, done.stderr.decode()
    done = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-i", str(patch_file)],
                          cwd=copies["patch"], capture_output=True, timeout=60)
    assert done.returncode == 0, (done.stdout + done.stderr).decode()

    for rel in targets:
        by_git = (copies["git"] / rel).read_bytes()
        by_patch = (copies["patch"] / rel).read_bytes()
        assert by_git == by_patch, rel
        original = (ROOT / rel).read_bytes() if (ROOT / rel).exists() else b""
        # The result is the original (its last line terminated) plus the `- ` bullets,
        # each with the file's own line ending, and nothing else.
        eol = b"\r\n" if original.count(b"\r\n") * 2 > original.count(b"\n") else b"\n"
        if original and not original.endswith(b"\n"):
            original += eol
        hunk = patch.split(b"\n--- ")[targets.index(rel) + 1].split(b"\n")
        added = [ln[1:] for ln in hunk[2:] if ln.startswith(b"+")]  # hunk[1] is the +++ header
        for removed in (ln[1:] for ln in hunk[1:] if ln.startswith(b"-")):
            # The re-emitted last line of a file without a final newline is not a bullet.
            added.remove(next(a for a in added if a.rstrip(b"\r") == removed))
        assert any(a.startswith(b"- ") for a in added)
        # Besides bullets, only a missing section's heading (--section, or the default
        # section of a file with sections) and its blank lines are added.
        section = rel.endswith("memory.md")
        for line in added:
            assert line.startswith(b"- ") or line.strip() == b"" or (section and line.startswith(b"#")), line
        block = [a + b"\n" for a in added]  # a CRLF line keeps its \r before the split's \n
        assert all(line.endswith(eol) for line in block), block
        # The result is the original with the added lines inserted as one block.
        lines = original.splitlines(keepends=True)
        assert any(b"".join(lines[:k] + block + lines[k:]) == by_git for k in range(len(lines) + 1)), rel


def test_examples_leave_memory_untouched() -> None:
    before = {p: p.read_bytes() for p in EXAMPLES.rglob("*") if p.is_file()}
    for param in CASES:
        subprocess.run(command(param.values[0]), cwd=ROOT, capture_output=True, timeout=60)
    after = {p: p.read_bytes() for p in EXAMPLES.rglob("*") if p.is_file()}
    assert after == before
