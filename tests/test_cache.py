"""The cache of per-transcript results (issue 16): a run that reuses it prints the same
bytes as `--no-cache`, on every output; only `cached_files` differs. Every test runs in
a temporary repository, never in this one."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "memory_diff.py"
FORMATS = ROOT / "tests" / "fixtures" / "formats"
HOUR_NS = 3600 * 10**9

SESSION = "00000000-0000-4000-8000-cccccccccccc"


def claude(type_: str, content: Any, n: int) -> dict[str, Any]:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/workspace/app",
            "sessionId": SESSION, "type": type_, "message": {"role": type_, "content": content},
            "uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": f"2026-01-20T04:16:{n:02d}.000Z"}


# A session with what a result carries besides plain candidates: a memory request that
# points back (its provenance names the file), the agent's own memory-file write, a
# withheld secret, a weak candidate and several conversations' worth of counters.
RICH = [
    claude("user", "We must never deploy on Fridays because the on-call rota is thin.", 1),
    claude("assistant", [{"type": "text", "text": "The root cause was that `load_config()` only reads the "
                                                  "local file, so CI never saw the override. "
                                                  "The token is ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 "
                                                  "and it must stay out of logs."}], 2),
    claude("user", "Please add this to CLAUDE.md.", 3),
    claude("assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Edit",
                          "input": {"file_path": "/workspace/app/CLAUDE.md", "old_string": "",
                                    "new_string": "- Always run make lint before pushing."}}], 4),
    claude("assistant", [{"type": "text", "text": "You should prefer small commits."}], 5),
]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def age(*paths: Path) -> None:
    """Make files an hour old: older than the racy window, so the cache may reuse them."""
    old = time.time_ns() - HOUR_NS
    for path in paths:
        os.utime(path, ns=(old, old))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with transcripts of every format under sessions/, an hour old."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    sessions = repo / "sessions"
    sessions.mkdir()
    for case in sorted(FORMATS.iterdir()):
        for source in sorted(case.iterdir()):
            if source.name.startswith("transcript") or source.suffix == ".md":
                shutil.copyfile(source, sessions / f"{case.name}-{source.name}")
    for example in sorted((ROOT / "examples").iterdir()):
        shutil.copyfile(example / "transcript.jsonl", sessions / f"example-{example.name}.jsonl")
    write_jsonl(sessions / "rich.jsonl", RICH)
    (sessions / "notes.json").write_text('{"not": "a transcript"}', encoding="utf-8")  # skipped_files
    age(*sessions.iterdir())
    return repo


def build(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[bytes, list[str], int]:
    """stdout, the --stats lines (if any), and the exit status of one `build`."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "build", *args], cwd=cwd, capture_output=True,
                          timeout=120, env=env)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in (0, 1), proc.stderr.decode("utf-8", "replace")
    return proc.stdout, proc.stderr.decode("utf-8", "replace").splitlines(), proc.returncode


def cached(stats: list[str]) -> int:
    return next(int(line.split("=", 1)[1]) for line in stats if line.startswith("cached_files="))


def without_cached(stats: list[str]) -> list[str]:
    return [line for line in stats if not line.startswith("cached_files=")]


def cache_folder(repo: Path) -> Path:
    return repo / ".git" / "memory-diff"


def comparable(stdout: bytes) -> bytes:
    """--json's bytes with the value of cached_files, the one counter that may differ, cut."""
    return re.sub(rb'("cached_files": )\d+', rb"\1N", stdout)


MODES = [
    pytest.param([], id="patch"),
    pytest.param(["--stats"], id="stats"),
    pytest.param(["--json"], id="json"),
    pytest.param(["--explain"], id="explain"),
    pytest.param(["--min-score", "0", "--max-add", "50", "--stats"], id="min-score-0"),
    pytest.param(["--seen", "seen.md", "--section", "Notes", "--stats"], id="seen-section"),
    pytest.param(["--roles", "user", "--stats"], id="roles-user"),
    pytest.param(["--include-sidechains", "--include-summaries", "--json"], id="sidechains-summaries"),
    pytest.param(["--jobs", "1", "--explain"], id="jobs-1-explain"),
]


@pytest.mark.parametrize("mode", MODES)
def test_cold_warm_and_no_cache_print_the_same_bytes(repo: Path, mode: list[str]) -> None:
    args = ["sessions", "--memory", "AGENTS.md", *mode]
    plain = build(repo, *args, "--no-cache")
    assert not cache_folder(repo).exists()
    cold = build(repo, *args)
    warm = build(repo, *args)
    assert comparable(cold[0]) == comparable(plain[0]) == comparable(warm[0])
    if "--json" not in mode:
        assert cold[0] == plain[0] == warm[0]
    assert cold[2] == plain[2] == warm[2]
    assert plain[0]  # something is printed in every mode
    if "--stats" in mode:
        assert without_cached(cold[1]) == without_cached(plain[1]) == without_cached(warm[1])
        assert (cached(plain[1]), cached(cold[1])) == (0, 0)
        assert cached(warm[1]) == len(build(repo, "sessions", "--list-sources")[0].splitlines())
    if "--json" in mode:
        docs = [json.loads(out) for out, _, _ in (plain, cold, warm)]
        assert docs[0]["stats"]["cached_files"] == docs[1]["stats"]["cached_files"] == 0
        assert docs[2]["stats"]["cached_files"] > 0
