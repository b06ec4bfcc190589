"""Flags that cannot be honoured together are errors; --list-sources --json is a JSON
list; --json carries what the preamble tells the reviewer."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF  # noqa: E402
RULES = [
    "Never push directly to main because the release job deploys every commit.",
    "Always keep the changelog in CHANGELOG.md because the release notes are generated from it.",
    "Never run the migration script against production because it drops the audit table.",
]


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MEMORY_DIFF, "build", *args], cwd=cwd, capture_output=True, timeout=60)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"role": "user", "text": t}) + "\n" for t in RULES))
    return tmp_path


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(["t.jsonl", "--json", "--explain"], "--json and --explain cannot be used together", id="json-explain"),
    pytest.param(["t.jsonl", "--baseline", "--json"], "--baseline and --json cannot be used together", id="baseline-json"),
    pytest.param(["t.jsonl", "--baseline", "--explain"], "--baseline and --explain cannot be used together",
                 id="baseline-explain"),
    pytest.param(["t.jsonl", "--list-sources", "--explain"], "--list-sources and --explain cannot be used together",
                 id="list-sources-explain"),
    pytest.param(["t.jsonl", "--list-sources", "--baseline"], "--list-sources and --baseline cannot be used together",
                 id="list-sources-baseline"),
    pytest.param(["t.jsonl", "--list-sources", "--stats"], "--list-sources and --stats cannot be used together",
                 id="list-sources-stats"),
    pytest.param(["t.jsonl", "--since", "7d"],
                 "--since applies to discovered sessions: it cannot be used with named TRANSCRIPTs", id="since-named"),
])
def test_flags_that_cannot_be_honoured_together(folder: Path, args: list[str], says: str) -> None:
    done = run(folder, *args, "--memory", "m.md")
    assert (done.returncode, done.stdout, done.stderr.decode()) == (2, b"", f"memory-diff: error: {says}\n")


def test_list_sources_json_is_a_list(folder: Path) -> None:
    done = run(folder, "t.jsonl", "--list-sources", "--json", "--memory", "m.md")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == [{"file": "t.jsonl", "format": "native"}]
    assert done.stdout.endswith(b"]\n")


def test_json_carries_the_preambles_flags(folder: Path) -> None:
    (folder / "AGENTS.md").write_text("# A\n\n- Always push directly to main because the release job deploys every "
                                      "commit.\n" + "".join(f"- Filler line {n:05d} to grow the file past the limit.\n"
                                                            for n in range(700)))
    done = run(folder, "t.jsonl", "--memory", "AGENTS.md", "--json", "--max-add", "2")
    notes = json.loads(done.stdout)["notes"]
    patch = run(folder, "t.jsonl", "--memory", "AGENTS.md", "--max-add", "2").stdout.decode()
    shown = [ln[2:] for ln in patch.split("\ndiff --git ", 1)[0].splitlines()]
    assert any(n.startswith("bullet 1 may contradict AGENTS.md:3") for n in notes), notes
    assert any(n.startswith("warning: with this patch AGENTS.md is") for n in notes), notes
    assert "1 more pending over the cap of 2" in " ".join(notes)
    assert all(n in shown for n in notes), (notes, shown)
    assert json.loads(run(folder, "t.jsonl", "--memory", "m.md", "--json").stdout)["notes"] == []
