"""build --baseline: a patch to the seen file only that records, per conversation, the
last record read, so that a repository with a backlog of sessions can adopt the hook.
After it is applied, nothing already read is proposed again, whatever the rules say."""
from __future__ import annotations

import collections
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import memory_diff as md

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF, main_process  # noqa: E402
FORMATS = ROOT / "tests" / "fixtures" / "formats"

SESSION = "3f1c2a9e-5b7d-4e21-9c0a-7d2e8f1b6a40"
RULES = [
    "Never push directly to main because the release job deploys every commit.",
    "Always keep the changelog in CHANGELOG.md because the release notes are generated from it.",
    "Never run the migration script against production because it drops the audit table.",
]
NEW = "Always bump the schema version when a migration renames a column, because old clients read it."

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, timeout=60)


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MEMORY_DIFF, *args], cwd=cwd, capture_output=True, timeout=120)


def claude_record(text: str) -> dict[str, Any]:
    return {"type": "user", "sessionId": SESSION, "cwd": "/r", "message": {"role": "user", "content": text}}


def jsonl(path: Path, records: list[dict[str, Any]], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)
    return path


def stats_of(stderr: bytes) -> dict[str, int]:
    return {k: int(v) for k, v in (ln.split("=", 1) for ln in stderr.decode().splitlines())}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    assert git(path, "init", "-q").returncode == 0
    (path / "AGENTS.md").write_bytes(b"# AGENTS.md\n\n- Keep it short.\n")
    assert git(path, "add", "-A").returncode == 0
    assert git(path, "commit", "-q", "-m", "init").returncode == 0
    return path


def apply(repo: Path, patch: bytes, *flags: str) -> None:
    (repo.parent / "p.diff").write_bytes(patch)
    done = git(repo, "apply", *flags, str(repo.parent / "p.diff"))
    assert done.returncode == 0, done.stderr.decode()


# -- the seen file's two kinds of line ----------------------------------------------------

@pytest.mark.parametrize(("data", "shown", "baseline"), [
    pytest.param(b"", set(), {}, id="empty"),
    pytest.param(b"- Keep it short.\n- Use make.", {"keep it short", "use make"}, {}, id="bullets"),
    pytest.param(b"<!-- memory-diff baseline: claude:abc through 12 -->\n- Keep it short.\n",
                 {"keep it short"}, {"claude:abc": 12}, id="record-and-bullet"),
    pytest.param(b"<!-- memory-diff baseline: claude:abc through 12 -->\r\n"
                 b"<!-- memory-diff baseline: claude:abc through 30 -->\r\n"
                 b"<!-- memory-diff baseline: claude:abc through 20 -->\r\n",
                 set(), {"claude:abc": 30}, id="furthest-wins-crlf"),
    pytest.param(b"\xef\xbb\xbf<!-- memory-diff baseline: file:docs/s.jsonl through 3 -->\n",
                 set(), {"file:docs/s.jsonl": 3}, id="bom"),
    pytest.param(b"- <!-- memory-diff baseline: claude:abc through 12 -->\n",
                 {"<!-- memory-diff baseline: claude:abc through 12 -->"}, {}, id="a-bullet-is-no-record"),
])
def test_read_seen(data: bytes, shown: set[str], baseline: dict[str, int]) -> None:
    seen = md.read_seen(data)
    assert (seen.shown, seen.baseline) == (shown, baseline)
    # Every line shown here is a bullet: a rejection is told by them; a record is none.
    assert {md.normalize(line) for line in seen.bullets} == shown


@pytest.mark.parametrize(("name", "fmt", "records", "key"), [
    pytest.param(f"{SESSION}.jsonl", "claude", [{"type": "summary"}, claude_record("x")], f"claude:{SESSION}",
                 id="claude-file-named-by-session"),
    pytest.param("copy.jsonl", "claude", [claude_record("x")], f"claude:{SESSION}/copy", id="claude-copy"),
    pytest.param(f"rollout-2026-01-01T10-00-00-{SESSION}.jsonl", "codex",
                 [{"type": "session_meta", "payload": {"id": SESSION, "cwd": "/r"}}], f"codex:{SESSION}",
                 id="codex-rollout"),
    pytest.param("legacy.jsonl", "codex", [{"id": "5973b6c0", "instructions": "x"}], "codex:5973b6c0/legacy",
                 id="codex-legacy"),
    pytest.param("session-1.json", "gemini", [{"sessionId": "g1", "messages": []}], "gemini:g1/session-1",
                 id="gemini"),
    pytest.param("s.jsonl", "claude", [{"sessionId": "x -->\n- evil", "type": "user"}], "file:s.jsonl",
                 id="odd-session-id-falls-back-to-the-path"),
    pytest.param("my notes.jsonl", "native", [{"role": "user", "text": "x"}], "file:my%20notes.jsonl",
                 id="native-path-relative-to-the-root"),
])
def test_conversation_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, fmt: str,
                          records: list[Any], key: str) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert md.conversation_key(str(tmp_path / name), fmt, records, os.path.realpath(tmp_path)) == key


def test_standard_input_has_no_conversation_key() -> None:
    assert md.conversation_key("-", "claude", [claude_record("x")], ".") is None


# -- the flow -----------------------------------------------------------------------------

def test_baseline_then_only_new_content_is_proposed(repo: Path, tmp_path: Path) -> None:
    session = jsonl(tmp_path / f"{SESSION}.jsonl", [claude_record(t) for t in RULES])
    args = [str(session), "--memory", "AGENTS.md"]
    assert run(repo, "build", *args, "--exit-code").returncode == 1  # the backlog

    base = run(repo, "build", *args, "--baseline")
    assert base.returncode == 0, base.stderr.decode()
    patch = base.stdout
    assert b"+++ b/.memory-diff-seen.md\n" in patch and b"AGENTS.md" not in patch  # the seen file only
    assert re.findall(rb"(?m)^\+.*", patch)[1:] == [f"+<!-- memory-diff baseline: claude:{SESSION} through 3 -->".encode()]
    assert b"(3 pending proposals set aside)" in patch
    apply(repo, patch)
    assert md.read_seen((repo / ".memory-diff-seen.md").read_bytes()).shown == set()  # no judgement recorded

    # Nothing pending, even once the rules change (here: every candidate would pass).
    for extra in ([], ["--min-score", "-50"], ["--max-add", "1"]):
        done = run(repo, "build", *args, "--exit-code", *extra)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), extra
    # A second baseline has nothing to add.
    assert run(repo, "build", *args, "--baseline").stdout == b""

    # The session goes on: only what was added is read.
    jsonl(session, [claude_record(t) for t in RULES + [NEW]])
    done = run(repo, "build", *args, "--exit-code", "--stats")
    assert done.returncode == 1
    assert re.findall(rb"(?m)^\+- .*", done.stdout) == [f"+- {NEW}".encode()] * 2  # memory and seen file
    stats = stats_of(done.stderr)
    assert (stats["lines"], stats["skipped_baseline"], stats["prose"], stats["proposed"]) == (4, 3, 1, 1)
    assert stats["parsed"] == 1
    apply(repo, done.stdout)
    assert run(repo, "build", *args, "--exit-code").returncode == 0


def test_half_written_last_line_is_read_again_once_complete(repo: Path, tmp_path: Path) -> None:
    line = json.dumps(claude_record(NEW)).encode()
    session = jsonl(tmp_path / f"{SESSION}.jsonl", [claude_record(t) for t in RULES], tail=line[:40])
    apply(repo, run(repo, "build", str(session), "--memory", "AGENTS.md", "--baseline").stdout)
    assert b"through 3 -->" in (repo / ".memory-diff-seen.md").read_bytes()
    jsonl(session, [claude_record(t) for t in RULES + [NEW]])
    done = run(repo, "build", str(session), "--memory", "AGENTS.md")
    assert re.findall(rb"(?m)^\+- .*", done.stdout) == [f"+- {NEW}".encode()] * 2


def test_baseline_applies_with_patch_too(repo: Path, tmp_path: Path) -> None:
    (repo / ".memory-diff-seen.md").write_bytes(b"- Keep it short.")  # no final newline
    (repo / "sessions").mkdir()
    session = jsonl(repo / "sessions" / "s.jsonl", [{"role": "user", "text": t} for t in RULES])
    patch = run(repo, "build", str(session), "--memory", "AGENTS.md", "--baseline").stdout
    (tmp_path / "p.diff").write_bytes(patch)
    done = subprocess.run(["patch", "-p1", "--batch", "-i", str(tmp_path / "p.diff")], cwd=repo,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / ".memory-diff-seen.md").read_bytes() == (
        b"- Keep it short.\n<!-- memory-diff baseline: file:sessions/s.jsonl through 3 -->\n")


def test_baseline_is_for_the_configured_seen_file(repo: Path, tmp_path: Path) -> None:
    (repo / ".memory-diff.toml").write_text('memory = "AGENTS.md"\nseen = "docs/seen.md"\n')
    session = jsonl(tmp_path / "s.jsonl", [{"role": "user", "text": t} for t in RULES])
    patch = run(repo, "build", str(session), "--baseline").stdout
    assert b"--- /dev/null\n+++ b/docs/seen.md\n" in patch


@pytest.mark.parametrize("case", [pytest.param(p, id=p.name) for p in sorted(FORMATS.iterdir()) if p.is_dir()])
def test_every_reader_honours_the_baseline(tmp_path: Path, case: Path) -> None:
    (tmp_path / ".git").mkdir()
    args = json.loads((case / "expected.json").read_text(encoding="utf-8")).get("args", [])
    transcript = next(p for p in case.iterdir() if p.name != "expected.json")
    build = [str(transcript), "--memory", "m.md", *args]
    # main in this process, a reader a row (the other tests run the command).
    base = main_process(["build", *build, "--baseline"], tmp_path)
    assert base.returncode == 0, base.stderr.decode()
    (tmp_path / ".memory-diff-seen.md").write_bytes(b"\n".join(re.findall(rb"(?m)^\+(<!--.*)", base.stdout)) + b"\n")
    done = main_process(["build", *build, "--stats", "--exit-code"], tmp_path)
    assert (done.returncode, done.stdout) == (0, b""), done.stderr.decode()
    stats = stats_of(done.stderr)
    assert stats["skipped_baseline"] == stats["lines"] - stats["malformed"] > 0, stats
    assert stats["prose"] == stats["messages"] == 0
    # The accounting identity stays exact: every record in one counter.
    assert stats["lines"] == stats["blank"] + stats["malformed"] + stats["prose"] + sum(
        v for k, v in stats.items() if k.startswith("skipped_") and k != "skipped_files"), stats


def gemini(*texts: str) -> bytes:
    return json.dumps({"sessionId": "g1", "projectHash": "p", "messages": [
        {"type": "user", "content": t} for t in texts]}, indent=2).encode()


def aider(*texts: str) -> bytes:
    return b"# aider chat started at 2026-01-01 10:00:00\n\n" + b"".join(
        b"#### " + t.encode() + b"\n\nOk.\n\n" for t in texts)


@pytest.mark.parametrize(("name", "write"), [
    pytest.param("session-1.json", gemini, id="gemini-document-by-message-index"),
    pytest.param(".aider.chat.history.md", aider, id="aider-by-line"),
    pytest.param("t.jsonl", lambda *t: b"".join(json.dumps({"role": "user", "text": x}).encode() + b"\n" for x in t),
                 id="native-by-line"),
])
def test_a_grown_transcript_yields_only_what_was_added(tmp_path: Path, name: str, write: Any) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / name).write_bytes(write(*RULES))
    base = run(tmp_path, "build", name, "--memory", "m.md", "--baseline")
    assert base.returncode == 0, base.stderr.decode()
    (tmp_path / ".memory-diff-seen.md").write_bytes(b"".join(re.findall(rb"(?m)^\+(<!--.*\n)", base.stdout)))
    assert run(tmp_path, "build", name, "--memory", "m.md").stdout == b""
    (tmp_path / name).write_bytes(write(*RULES, NEW))
    done = run(tmp_path, "build", name, "--memory", "m.md")
    assert re.findall(rb"(?m)^\+- .*", done.stdout) == [f"+- {NEW}".encode()] * 2, done.stdout


def test_pending_note_says_how_many_wait(tmp_path: Path) -> None:
    jsonl(tmp_path / "s.jsonl", [{"role": "user", "text": t} for t in RULES])
    done = run(tmp_path, "build", "s.jsonl", "--memory", "m.md", "--max-add", "1")
    assert b"\n# 2 more pending over the cap of 1: once this patch is applied and committed, " \
           b"the next run proposes the next batch" in done.stdout
    assert b"more pending" not in run(tmp_path, "build", "s.jsonl", "--memory", "m.md").stdout


def test_stats_identity_holds_with_a_baseline() -> None:
    stats: collections.Counter[str] = collections.Counter()
    pos = md.Position()
    pos.skip = 2
    lines = [b'{"role": "user", "text": "a"}\n', b"\n", b'{"role": "user", "text": "b"}\n', b"\n", b"junk\n"]
    list(md.read_jsonl(lines, md.native_reader(md.Options()), stats, pos=pos))
    assert stats["lines"] == 5 and stats["skipped_baseline"] == 2 and pos.through == 5
    assert stats["lines"] == sum(v for k, v in stats.items() if k.startswith("skipped_")) + \
        stats["blank"] + stats["malformed"] + stats["prose"]
