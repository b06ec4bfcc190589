"""The review loop: the provenance preamble, the size-budget warning, near-duplicate and
contradiction flags, `--seen`, team configuration (`[tool.memory-diff]` in pyproject.toml
or `.memory-diff.toml`), `--explain`, and `--section` blank-line habits.

Everything runs inside a real git repository, the CLI in a subprocess (the tables of budget
warnings, flags and configuration errors run its `main` in the test's process: a hundred
runs); a patch is applied with both `git apply` and `patch -p1` and the result compared byte
for byte."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import main_process  # noqa: E402
sys.path.insert(0, str(ROOT))
import memory_diff as md  # noqa: E402

# User-role rules: each passes SIGNAL, NOISE and the score with room.
B1 = "Never push directly to main because the release job deploys every commit."
B2 = "Always run the database migrations in a transaction, since a partial migration leaves the schema broken."
B3 = "Do not store uploaded images on the web server disk, because the containers are replaced on every deploy."
B4 = "Never share one database between parallel test workers, because the fixtures truncate tables between tests."
# An assistant sentence that is proposed (a root cause, stated concretely).
A1 = "The root cause is that the local Redis 6 server never answers the RESP3 handshake, so the client waits forever."
Z1 = "不要把密钥提交到仓库，因为仓库是公开的。"
Z2 = "必须在合并之前运行完整的测试套件，因为夜间构建会在每天凌晨重新运行全部测试。"
# No built-in SIGNAL marker; scores 4 once a team's extra signal lets it in.
EXTRA = "Deploys go out on Tuesdays so that the support rota can watch the first hours of traffic."
# Proposed by the built-ins; a team's extra noise pattern `staging seed` drops it.
NOISY = "Never run the staging seed script twice because it duplicates every invoice row."
NARRATION = "Now let me check the tests because they fail."
# Proposed, but with the lowest score here (4): the one a cap drops.
LOW = "We chose Postgres over MySQL because the reporting team runs it every day."

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


# -- helpers -----------------------------------------------------------------------------

def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "text": text, **extra}


def assistant(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "text": text, **extra}


def bullets(*texts: str, eol: bytes = b"\n") -> bytes:
    return b"".join(b"- " + t.encode() + eol for t in texts)


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-c", "core.autocrlf=false", *args], cwd=repo,
                          env={**os.environ, **GIT_ENV}, capture_output=True, timeout=60)


def write_files(base: Path, files: dict[str, bytes | str]) -> None:
    for name, data in files.items():
        target = base / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)


def make_repo(path: Path, files: dict[str, bytes | str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    assert git(path, "init", "-q").returncode == 0
    write_files(path, files)
    (path / ".keep").write_bytes(b"")
    assert git(path, "add", "-A").returncode == 0
    assert git(path, "commit", "-q", "-m", "init").returncode == 0
    return path


def to_jsonl(records: list[Any]) -> bytes:
    return b"".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)).encode() + b"\n"
                    for r in records)


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return main_process(list(args), cwd)


def parse_stats(stderr: bytes) -> dict[str, int]:
    out = {}
    for line in stderr.decode().splitlines():
        key, _, value = line.partition("=")
        out[key] = int(value)
    return out


def snapshot(repo: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(repo.rglob("*")):
        if ".git" in path.relative_to(repo).parts or not path.is_file():
            continue
        out[path.relative_to(repo).as_posix()] = path.read_bytes()
    return out


def apply_both(repo: Path, patch: bytes, tmp: Path) -> dict[str, bytes]:
    """Apply with git apply and with patch -p1 in two copies; both must succeed and agree."""
    patch_file = tmp / "proposal.patch"
    patch_file.write_bytes(patch)
    with_git, with_patch = tmp / "copy-git", tmp / "copy-patch"
    for copy in (with_git, with_patch):
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(repo, copy, symlinks=True)
    done = git(with_git, "apply", "--check", str(patch_file))
    assert done.returncode == 0, done.stderr.decode() + "\n" + patch.decode("utf-8", "replace")
    done = git(with_git, "apply", str(patch_file))
    assert done.returncode == 0, done.stderr.decode()
    done = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-i", str(patch_file)],
                          cwd=with_patch, capture_output=True, timeout=60)
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    by_git, by_patch = snapshot(with_git), snapshot(with_patch)
    assert by_git == by_patch
    return by_git


def preamble(patch: bytes) -> list[str]:
    """The lines before the first `diff --git` line; every one must be a `# ` comment."""
    head = patch.split(b"\ndiff --git ", 1)[0] if not patch.startswith(b"diff --git ") else b""
    lines = head.decode("utf-8").split("\n")
    assert all(ln.startswith("# ") for ln in lines), lines
    return lines


def added_bullets(patch: bytes) -> dict[str, list[str]]:
    """{file (as in the +++ header): [bullet text, ...]} of each file section."""
    out: dict[str, list[str]] = {}
    for part in patch.split(b"\n--- ")[1:]:
        lines = part.split(b"\n")
        target = lines[1].decode()[len("+++ b/"):].rstrip("\t")
        # A last line without a newline is re-emitted (`-x` then `+x`): not a proposal.
        reemitted = [ln[1:] for ln in lines[2:] if ln.startswith(b"-")]
        added = [ln[1:] for ln in lines[2:] if ln.startswith(b"+")]
        for old in reemitted:
            added.remove(next(a for a in added if a.rstrip(b"\r") == old))
        out[target] = [a[2:].decode().rstrip("\r") for a in added if a.startswith(b"- ")]
    return out


SOURCE = re.compile(r"^#\s+(\d+)\. (.+):(\d+) \((user|assistant)(?:, (.+))?\)$")
SUMMARY = re.compile(r"^# memory-diff: (\d+) proposed from (\d+) sessions?; (\d+) candidates? dropped"
                     r"(?:: ([^;]*))?(?:; (\d+) sentences withheld by the safety gates)?$")
SUMMARY_LABELS = {
    "noise": "dropped_noise", "length": "dropped_length", "weak": "dropped_weak",
    "duplicate": "dropped_duplicate", "already in memory": "already_in_memory",
    "already seen": "already_seen", "over the cap": "dropped_over_cap",
}
GATES = ("dropped_secret", "dropped_pii", "dropped_injection", "dropped_invisible", "dropped_structure")
FLAG = re.compile(r"^# bullet (\d+) (near-duplicate of|may contradict) (.+):(\d+) \(overlap ([0-9.]+)\): (.*)$")
WARNING = re.compile(r"^# warning: with this patch (.+) is ([\d,]+) (chars|bytes); (.+) loads about ([\d,]+), "
                     r"the rest is not read$")


def check_summary(line: str, stats: dict[str, int], sessions: int) -> None:
    match = SUMMARY.match(line)
    assert match, line
    proposed, files, dropped = (int(g) for g in match.group(1, 2, 3))
    assert proposed == stats["proposed"]
    assert files == sessions
    assert dropped == stats["signal"] - stats["proposed"], (line, stats)
    parts = {}
    for part in (match.group(4) or "").split(", ") if match.group(4) else []:
        number, _, label = part.partition(" ")
        parts[SUMMARY_LABELS[label]] = int(number)
    assert parts == {key: stats[key] for key in SUMMARY_LABELS.values() if stats[key]}, (line, stats)
    assert sum(parts.values()) == dropped, line
    gated = sum(stats[k] for k in GATES)
    assert int(match.group(5) or 0) == gated, (line, stats)


# ========================================================================================
# 1. The provenance preamble
# ========================================================================================

CLAUDE_LINES = [
    {"parentUuid": None, "isSidechain": False, "cwd": "/workspace/demo", "sessionId": "s1", "type": "user",
     "message": {"role": "user", "content": "The integration tests hang on my machine but pass in CI."},
     "uuid": "u1", "timestamp": "2025-07-01T09:00:00.000Z"},
    {"parentUuid": "u1", "isSidechain": False, "cwd": "/workspace/demo", "sessionId": "s1", "type": "assistant",
     "message": {"role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": A1}]},
     "uuid": "u2", "timestamp": "2025-07-01T09:00:30.000Z"},
    {"parentUuid": "u2", "isSidechain": False, "cwd": "/workspace/demo", "sessionId": "s1", "type": "user",
     "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
     "uuid": "u3", "timestamp": "2025-07-01T09:00:40.000Z"},
    {"parentUuid": "u3", "isSidechain": False, "cwd": "/workspace/demo", "sessionId": "s1", "type": "user",
     "message": {"role": "user", "content": B1}, "uuid": "u4", "timestamp": "2025-07-01T09:01:10.000Z"},
]
CODEX_LINES = [
    {"timestamp": "2025-08-02T10:00:00.000Z", "type": "session_meta",
     "payload": {"id": "x", "timestamp": "2025-08-02T10:00:00.000Z", "cwd": "/workspace/demo"}},
    {"timestamp": "2025-08-02T10:00:05.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": B2}]}},
    {"timestamp": "2025-08-02T10:00:05.001Z", "type": "event_msg",
     "payload": {"type": "user_message", "message": B2}},
    {"timestamp": "2025-08-02T10:00:09.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": A1}]}},
]
GEMINI_DOC = {"sessionId": "g1", "projectHash": "abc", "messages": [
    {"id": "m1", "timestamp": "2025-09-03T11:00:00.000Z", "type": "user", "content": "Why is the upload slow?"},
    {"id": "m2", "timestamp": "2025-09-03T11:00:20.000Z", "type": "gemini", "content": A1},
    {"id": "m3", "timestamp": "2025-09-03T11:01:00.000Z", "type": "user", "content": B3},
]}
CLINE_DOC = [
    {"role": "user", "content": [{"type": "text", "text": f"<task>\n{B1}\n</task>"}], "ts": 1748772000000},
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look at the workflow files."}],
     "ts": 1748772005000},
    {"role": "user", "content": [{"type": "text", "text": B4}], "ts": 1748772060000},
]
AIDER_MD = (f"# aider chat started at 2025-10-04 08:15:00\n\n> Aider v0.80.0\n\n#### {B2}\n\n"
            f"Let me look at the migration runner.\n\n#### {B4}\n").encode()

# A transcript that exercises every drop the summary counts, and two safety gates.
MIXED = [
    user(B1, timestamp="2025-05-01T10:00:00Z"),
    assistant(NARRATION),                                                # noise
    user("Always do that."),                                              # length
    assistant("We should maybe use the cache because it is faster."),      # weak
    user(B1),                                                             # duplicate
    user(B2),                                                             # already in memory
    user(B3),                                                             # already seen
    user("Never use the key AKIAZZZZZZZZZZZZZZZZ in the tests because it is shared."),  # secret
    user("Always email alice.smith@corp-mail.de before deploying the billing service."),  # pii
    user(B4, timestamp="2025-05-01T10:09:00Z"),
    assistant(LOW, timestamp="2025-05-01T10:10:00Z"),                     # over the cap (--max-add 2)
]

# id, files in the repository, transcripts {name: bytes}, arguments,
# expected sources [(file, line, role, timestamp)], sessions.
PREAMBLE_CASES = [
    pytest.param({"AGENTS.md": "# Notes\n"},
                 {"t.jsonl": to_jsonl([user(B1, timestamp="2025-05-01T10:00:00Z"), assistant(NARRATION), user(B2)])},
                 ["--memory", "AGENTS.md"],
                 [("t.jsonl", 1, "user", "2025-05-01T10:00:00Z"), ("t.jsonl", 3, "user", None)], 1,
                 id="native-with-and-without-timestamp"),
    pytest.param({"AGENTS.md": "# Notes\n"}, {"session.jsonl": to_jsonl(CLAUDE_LINES)}, ["--memory", "AGENTS.md"],
                 [("session.jsonl", 2, "assistant", "2025-07-01T09:00:30.000Z"),
                  ("session.jsonl", 4, "user", "2025-07-01T09:01:10.000Z")], 1, id="claude-code"),
    pytest.param({"AGENTS.md": "# Notes\n"}, {"rollout.jsonl": to_jsonl(CODEX_LINES)}, ["--memory", "AGENTS.md"],
                 [("rollout.jsonl", 2, "user", "2025-08-02T10:00:05.000Z"),
                  ("rollout.jsonl", 4, "assistant", "2025-08-02T10:00:09.000Z")], 1, id="codex"),
    pytest.param({"AGENTS.md": "# Notes\n"}, {"chat.json": json.dumps(GEMINI_DOC, indent=2).encode()},
                 ["--memory", "AGENTS.md"],
                 [("chat.json", 2, "assistant", "2025-09-03T11:00:20.000Z"),
                  ("chat.json", 3, "user", "2025-09-03T11:01:00.000Z")], 1, id="gemini-message-index"),
    pytest.param({"AGENTS.md": "# Notes\n"}, {"api_conversation_history.json": json.dumps(CLINE_DOC).encode()},
                 ["--memory", "AGENTS.md"],
                 [("api_conversation_history.json", 1, "user", "2025-06-01T10:00:00Z"),
                  ("api_conversation_history.json", 3, "user", "2025-06-01T10:01:00Z")], 1,
                 id="cline-epoch-ms"),
    pytest.param({"AGENTS.md": "# Notes\n"}, {".aider.chat.history.md": AIDER_MD}, ["--memory", "AGENTS.md"],
                 [(".aider.chat.history.md", 5, "user", "2025-10-04 08:15:00"),
                  (".aider.chat.history.md", 9, "user", "2025-10-04 08:15:00")], 1, id="aider-session-header"),
    pytest.param({"AGENTS.md": "# Notes\n"},
                 {"a.jsonl": to_jsonl([user(B1)]), "b.jsonl": to_jsonl([assistant(A1), user(Z1)])},
                 ["--memory", "AGENTS.md"],
                 [("a.jsonl", 1, "user", None), ("b.jsonl", 1, "assistant", None), ("b.jsonl", 2, "user", None)], 2,
                 id="two-sessions-in-order"),
    pytest.param({"AGENTS.md": "# Notes\n\n" + bullets(B2).decode(), "seen.md": bullets(B3).decode()},
                 {"mixed.jsonl": to_jsonl(MIXED)},
                 ["--memory", "AGENTS.md", "--seen", "seen.md", "--max-add", "2"],
                 [("mixed.jsonl", 1, "user", "2025-05-01T10:00:00Z"),
                  ("mixed.jsonl", 10, "user", "2025-05-01T10:09:00Z")], 1, id="every-drop-and-gates"),
    pytest.param({"docs/AGENTS.md": "# 项目笔记\n"}, {"会话.jsonl": to_jsonl([user(Z1, timestamp="2025-11-05T12:00:00Z")])},
                 ["--memory", "docs/AGENTS.md", "--section", "约定"],
                 [("会话.jsonl", 1, "user", "2025-11-05T12:00:00Z")], 1, id="chinese-section-subfolder"),
]


@pytest.mark.parametrize(("files", "transcripts", "args", "sources", "sessions"), PREAMBLE_CASES)
def test_preamble(tmp_path: Path, files: dict[str, str], transcripts: dict[str, bytes], args: list[str],
                  sources: list[tuple[str, int, str, str | None]], sessions: int) -> None:
    repo = make_repo(tmp_path / "repo", files)
    write_files(repo, transcripts)
    names = list(transcripts)
    before = snapshot(repo)
    done = run(repo, "build", *names, *args, "--stats")
    assert done.returncode == 0, done.stderr.decode()
    patch, stats = done.stdout, parse_stats(done.stderr)
    assert snapshot(repo) == before

    lines = preamble(patch)
    # Nothing in the preamble looks like a diff line to git or patch.
    assert not any(ln.startswith(("# ---", "# +++", "# @@")) for ln in lines)
    check_summary(lines[0], stats, sessions)
    found = [SOURCE.match(ln) for ln in lines[1:1 + len(sources)]]
    assert all(found), lines
    assert [int(m.group(1)) for m in found] == list(range(1, len(sources) + 1))
    assert [(m.group(2), int(m.group(3)), m.group(4), m.group(5)) for m in found] == sources
    assert not any(SOURCE.match(ln) for ln in lines[1 + len(sources):])

    # The preamble agrees with --json, bullet for bullet.
    doc = json.loads(run(repo, "build", *names, *args, "--json").stdout)
    assert [(p["source"]["file"], p["source"]["line"], p["source"]["role"], p["source"]["timestamp"])
            for p in doc["proposed"]] == sources
    memory = args[args.index("--memory") + 1]
    texts = [p["text"] for p in doc["proposed"]]
    assert added_bullets(patch)[memory] == texts

    # Both tools apply it; the memory file receives the bullets and nothing of the preamble.
    result = apply_both(repo, patch, tmp_path)
    original = before.get(memory, b"")
    changed = result[memory]
    assert all(line in changed for line in original.split(b"\n"))
    new_lines = changed.decode().split("\n")
    extra = [ln for ln in new_lines if ln not in original.decode().split("\n")]
    bullet_lines = [f"- {t}" for t in texts]
    assert [ln for ln in extra if ln.startswith("- ")] == bullet_lines
    assert all(ln.startswith("#") is False or "--section" in args for ln in extra), extra
    assert "memory-diff:" not in changed.decode()
    if "--section" not in args:
        assert changed == original + bullets(*texts)
    for name, data in before.items():
        if name not in (memory, *(args[i + 1] for i, a in enumerate(args) if a == "--seen")):
            assert result[name] == data, name


# Transcript-controlled text that reaches the preamble must not end the comment: a line
# that does not start with `# ` is read by git and patch, so a timestamp holding
# "\n--- /dev/null\n+++ b/evil.md\n@@ ..." would make the patch create a file.
HOSTILE_CASES = [
    pytest.param({"t.jsonl": to_jsonl([user(B1, timestamp="2025-05-01\n--- /dev/null\n+++ b/evil.md\n@@ -0,0 +1 @@\n+x")])},
                 "t.jsonl", id="timestamp-with-newlines"),
    pytest.param({"t.jsonl": to_jsonl([user(B1, timestamp="2025-05-01\r\n--- a/evil.md")])},
                 "t.jsonl", id="timestamp-with-crlf"),
    pytest.param({"odd\n--- name.jsonl": to_jsonl([user(B1)])}, "odd\n--- name.jsonl", id="file-name-with-newline"),
]


@pytest.mark.parametrize(("transcripts", "name"), HOSTILE_CASES)
def test_preamble_stays_a_comment(tmp_path: Path, transcripts: dict[str, bytes], name: str) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "# Notes\n"})
    write_files(tmp_path, transcripts)
    done = run(repo, "build", str(tmp_path / name), "--memory", "AGENTS.md")
    assert done.returncode == 0, done.stderr.decode()
    head = done.stdout.split(b"\ndiff --git a/AGENTS.md b/AGENTS.md\n", 1)[0]
    assert all(ln.startswith(b"# ") for ln in head.split(b"\n")), head
    result = apply_both(repo, done.stdout, tmp_path)
    assert result["AGENTS.md"] == b"# Notes\n" + bullets(B1)
    assert "evil.md" not in result


# ========================================================================================
# 2. The size-budget warning (Claude Code ~40,000 chars, Codex 32 KiB)
# ========================================================================================

FILLER = b"- Keep the build notes short and current."


def memory_of_size(size: int, eol: bytes = b"\n", final: bool = True, line: bytes = FILLER) -> bytes:
    """Exactly `size` bytes of `# Notes` and filler bullets (ASCII unless `line` is not)."""
    out = [b"# Notes" + eol]
    total = len(out[0])
    while size - total > 2 * (len(line) + len(eol)):
        out.append(line + eol)
        total += len(line) + len(eol)
    rest = size - total - (len(eol) if final else 0)
    out.append(b"- " + b"x" * (rest - 2) + (eol if final else b""))
    data = b"".join(out)
    assert len(data) == size
    return data


EXTRA_LF = len(bullets(B1, B2))
CODEX = 32 * 1024
CLAUDE = 40_000
ZH_LINE = "- 请保持构建说明简短并及时更新。".encode()

# id, memory bytes, extra arguments, the budgets the patched file exceeds
# (also derived from the patched file below: the table says it for the reader).
BUDGET_CASES = [
    pytest.param(memory_of_size(30_000), [], [], id="well-below"),
    pytest.param(memory_of_size(CODEX - EXTRA_LF), [], [], id="exactly-at-codex-budget"),
    pytest.param(memory_of_size(CODEX - EXTRA_LF + 1), [], ["bytes"], id="one-byte-past-codex-budget"),
    pytest.param(memory_of_size(32_700), [], ["bytes"], id="crosses-codex-only"),
    pytest.param(memory_of_size(CLAUDE - EXTRA_LF), [], ["bytes"], id="exactly-at-claude-budget"),
    pytest.param(memory_of_size(39_950), [], ["chars", "bytes"], id="crosses-both"),
    pytest.param(memory_of_size(45_000), [], ["chars", "bytes"], id="already-past-both"),
    # 3 bytes but 1 character a CJK character: past 32 KiB in bytes, far below 40,000 chars.
    pytest.param(memory_of_size(33_000, line=ZH_LINE), [], ["bytes"], id="chinese-bytes-not-chars"),
    # The warning must count what applying really adds, not an estimate.
    pytest.param(memory_of_size(CODEX - EXTRA_LF, eol=b"\r\n"), [], ["bytes"], id="crlf-boundary"),
    pytest.param(memory_of_size(CODEX - EXTRA_LF, final=False), [], ["bytes"], id="no-final-newline-boundary"),
    pytest.param(memory_of_size(CODEX - EXTRA_LF), ["--section", "Gotchas"], ["bytes"],
                 id="missing-section-heading-boundary"),
]


# The file patched, what --memory names, and the budgets of the agents reading it: each
# agent's limit applies to the file it reads (Claude Code CLAUDE.md, Codex AGENTS.md).
READERS = [
    pytest.param("AGENTS.md", "AGENTS.md", {"bytes"}, id="agents-md-codex"),
    pytest.param("CLAUDE.md", "CLAUDE.md", {"chars"}, id="claude-md-claude-code"),
    pytest.param("GEMINI.md", "GEMINI.md", set(), id="gemini-md-none-known"),
    pytest.param("AGENTS.md", "CLAUDE.md", {"chars", "bytes"}, id="claude-md-links-to-agents-md"),
]


@pytest.mark.parametrize(("name", "given", "read"), READERS)
@pytest.mark.parametrize(("memory", "args", "units"), BUDGET_CASES)
def test_budget_warning(tmp_path: Path, memory: bytes, args: list[str], units: list[str],
                        name: str, given: str, read: set[str]) -> None:
    repo = make_repo(tmp_path / "repo", {name: memory})
    if given != name:
        os.symlink(name, repo / given)
    (tmp_path / "t.jsonl").write_bytes(to_jsonl([user(B1), user(B2)]))
    done = main_process(["build", str(tmp_path / "t.jsonl"), "--memory", given, *args], repo)
    assert done.returncode == 0, done.stderr.decode()
    lines = preamble(done.stdout)
    warnings = [WARNING.match(ln) for ln in lines if ln.startswith("# warning:")]
    assert all(warnings), lines
    after = apply_both(repo, done.stdout, tmp_path)[name]
    assert added_bullets(done.stdout)[name] == [B1, B2]
    size = {"chars": len(after.decode()), "bytes": len(after)}
    limits = {"chars": CLAUDE, "bytes": CODEX}
    units = [u for u in units if u in read]
    assert sorted(u for u in limits if size[u] > limits[u] and u in read) == sorted(units), size
    assert sorted(m.group(3) for m in warnings) == sorted(units), (lines, size)
    for match in warnings:
        unit = match.group(3)
        assert match.group(1) == name
        assert int(match.group(2).replace(",", "")) == size[unit], (match.group(0), size)
        assert int(match.group(5).replace(",", "")) == limits[unit]
        assert match.group(4) == {"chars": "Claude Code", "bytes": "Codex"}[unit]


def test_budget_warning_names_budgets_lint_knows() -> None:
    assert ("Claude Code", "chars", CLAUDE) in md.BUDGETS
    assert ("Codex", "bytes", CODEX) in md.BUDGETS


# ========================================================================================
# 3. Near-duplicate and contradiction flags
# ========================================================================================

OTHER = [
    "# Notes",
    "",
    "- Keep the staging database small because the nightly restore takes an hour.",
    "- Format Python with black and sort imports with isort.",
]

# id, memory lines, proposals (user sentences, all proposed), expected flags
# [(bullet number, kind, memory line number)].
FLAG_CASES = [
    pytest.param(OTHER + ["- Always push directly to main because the release job deploys every commit."], [B1],
                 [(1, "may contradict", 5)], id="en-never-vs-always"),
    pytest.param(OTHER + ["- Never run the database migrations in a transaction, since a partial migration "
                          "leaves the schema broken."], [B2],
                 [(1, "may contradict", 5)], id="en-always-vs-never"),
    pytest.param(OTHER + ["- Squash the commits of a release branch because the changelog script reads every "
                          "commit message."],
                 ["Don't squash the commits of a release branch because the changelog script reads every "
                  "commit message."], [(1, "may contradict", 5)], id="en-dont-vs-do"),
    pytest.param(OTHER + ["- Do not store uploaded images in the object bucket, because the containers are "
                          "replaced on every deploy."],
                 ["Always store uploaded images in the object bucket, because the containers are replaced on "
                  "every deploy."], [(1, "may contradict", 5)], id="en-do-vs-do-not"),
    pytest.param(["# 笔记", "", "- 要在周五下午发布新版本，因为周末值班的人太少。"],
                 ["不要在周五下午发布新版本，因为周末值班的人太少。"], [(1, "may contradict", 3)], id="zh-buyao-vs-yao"),
    pytest.param(["# 笔记", "", "- 不必在合并之前运行完整的测试套件，因为夜间构建会在每天凌晨重新运行全部测试。"],
                 [Z2], [(1, "may contradict", 3)], id="zh-bixu-vs-bubi"),
    pytest.param(["# 笔记", "", "- " + Z2],
                 ["我们决定不必在合并之前运行完整的测试套件，因为夜间构建会在每天凌晨重新运行全部测试。"],
                 [(1, "may contradict", 3)], id="zh-bubi-vs-bixu"),
    pytest.param(OTHER + ["- Do not store uploaded images on the web server disk because the containers get "
                          "replaced on each deploy."], [B3], [(1, "near-duplicate of", 5)], id="en-near-duplicate-reworded"),
    pytest.param(OTHER + ["- never push directly to MAIN, because the release job deploys each commit!"], [B1],
                 [(1, "near-duplicate of", 5)], id="en-near-duplicate-case-and-punctuation"),
    pytest.param(["# 笔记", "", "- 不要把密钥提交到仓库里，因为仓库是公开的。"], [Z1], [(1, "near-duplicate of", 3)],
                 id="zh-near-duplicate-reworded"),
    pytest.param(OTHER + ["- Never push tags from a laptop because the release job signs them."], [B1], [],
                 id="en-same-topic-not-flagged"),
    pytest.param(OTHER, [B1, B2], [], id="unrelated-lines-not-flagged"),
    pytest.param(OTHER + ["- Always push directly to main because the release job deploys every commit."], [B2, B1],
                 [(2, "may contradict", 5)], id="second-bullet-flagged"),
    pytest.param(OTHER[:2] + ["- Always push directly to main because the release job deploys every commit.",
                              "- Do not store uploaded images on the web server disk because the containers get "
                              "replaced on each deploy."] + OTHER[2:], [B1, B3],
                 [(1, "may contradict", 3), (2, "near-duplicate of", 4)], id="two-flags-two-lines"),
    # A negation elsewhere in both sentences ("no one", 没有) must not hide the flip.
    pytest.param(OTHER + ["- Deploy on Friday afternoons because there is no one on call over the weekend."],
                 ["Never deploy on Friday afternoons because there is no one on call over the weekend."],
                 [(1, "may contradict", 5)], id="en-flip-with-negation-in-reason"),
    pytest.param(["# 笔记", "", "- 要在周五下午发布新版本，因为周末没有人值班。"],
                 ["不要在周五下午发布新版本，因为周末没有人值班。"], [(1, "may contradict", 3)],
                 id="zh-flip-with-negation-in-reason"),
]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize(("memory", "proposals", "flags"), FLAG_CASES)
def test_review_flags(tmp_path: Path, memory: list[str], proposals: list[str],
                      flags: list[tuple[int, str, int]], eol: bytes) -> None:
    data = b"".join(ln.encode() + eol for ln in memory)
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": data})
    (tmp_path / "t.jsonl").write_bytes(to_jsonl([user(p) for p in proposals]))
    done = main_process(["build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md"], repo)
    assert done.returncode == 0, done.stderr.decode()
    lines = preamble(done.stdout)
    found = [FLAG.match(ln) for ln in lines if ln.startswith("# bullet ")]
    assert all(found), lines
    assert [(int(m.group(1)), m.group(2), int(m.group(4))) for m in found] == flags, lines
    for match in found:
        assert match.group(3) == "AGENTS.md"
        # The flag quotes the memory line it names.
        assert match.group(6) == memory[int(match.group(4)) - 1].strip()
        threshold = md.NEAR_DUPLICATE if match.group(2) == "near-duplicate of" else md.CONTRADICTION
        assert float(match.group(5)) >= threshold
    # Flag, do not merge: every proposal is still proposed, appended after the old lines.
    assert added_bullets(done.stdout)["AGENTS.md"] == proposals
    result = apply_both(repo, done.stdout, tmp_path)
    assert result["AGENTS.md"] == data + bullets(*proposals, eol=eol)


def test_thresholds_are_documented_constants() -> None:
    assert 0 < md.CONTRADICTION < md.NEAR_DUPLICATE < 1
    # Character trigrams: a Chinese rewording overlaps as an English one does.
    en = md.jaccard(md.trigrams(md.normalize(B3)), md.trigrams(md.normalize(
        "Do not store uploaded images on the web server disk because the containers get replaced on each deploy.")))
    zh = md.jaccard(md.trigrams(md.normalize(Z1)), md.trigrams(md.normalize("不要把密钥提交到仓库里，因为仓库是公开的。")))
    assert en >= md.NEAR_DUPLICATE and zh >= md.NEAR_DUPLICATE


BIG_LINES = 100_000
TARGET = 73_457  # 1-based line of the contradicted rule


def big_memory(filler: Any) -> bytes:
    lines = ["# Notes", ""] + [filler(i) for i in range(BIG_LINES)]
    lines[TARGET - 1] = "- Always push directly to main because the release job deploys every commit."
    return ("\n".join(lines) + "\n").encode()


# Words a large team memory repeats on thousands of lines; the proposal is made of them.
COMMON = ("always never push directly main because release job deploys every commit the run tests "
          "before merge branch review build cache deploy staging keep config files docs team").split()

BIG_CASES = [
    pytest.param(lambda i: f"- Module m{i:05d} keeps its fixtures in folder f{i:05d}.", id="distinct-filler"),
    # Every word of the proposal is on thousands of lines: a posting list cut-off must not
    # make the contradicted rule invisible.
    pytest.param(lambda i: "- " + " ".join(COMMON[(i * 7 + j * 3) % len(COMMON)] for j in range(6)) + f" n{i}.",
                 id="common-words-filler"),
]


@pytest.mark.parametrize("filler", BIG_CASES)
def test_flags_on_a_100k_line_memory(tmp_path: Path, filler: Any) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": big_memory(filler)})
    (tmp_path / "t.jsonl").write_bytes(to_jsonl([user(B2), user(B1)]))
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md")
    assert done.returncode == 0, done.stderr.decode()
    lines = preamble(done.stdout)
    flags = [FLAG.match(ln) for ln in lines if ln.startswith("# bullet ")]
    assert [(int(m.group(1)), m.group(2), int(m.group(4))) for m in flags if m] == [(2, "may contradict", TARGET)], lines
    assert added_bullets(done.stdout)["AGENTS.md"] == [B2, B1]


# ========================================================================================
# 4. --seen: never ask twice
# ========================================================================================

EN = [user(B1), assistant("Now let me look at the cache layer."), user("OK. " + B2)]

# id, repository files, transcript, arguments, changed files after applying (everything
# else unchanged), proposed bullets.
SEEN_CASES = [
    pytest.param({"AGENTS.md": "# Notes\n"}, EN, ["--seen", ".memory-seen.md"],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1, B2), ".memory-seen.md": bullets(B1, B2)},
                 [B1, B2], id="missing-seen-file-created"),
    pytest.param({"AGENTS.md": "# Notes\n", ".memory-seen.md": bullets(B1)}, EN, ["--seen", ".memory-seen.md"],
                 {"AGENTS.md": b"# Notes\n" + bullets(B2), ".memory-seen.md": bullets(B1, B2)},
                 [B2], id="existing-seen-file"),
    pytest.param({"AGENTS.md": "# Notes\n",
                  ".memory-seen.md": b"* " + B1.upper().rstrip(".").encode() + b"\n"}, EN,
                 ["--seen", ".memory-seen.md"],
                 {"AGENTS.md": b"# Notes\n" + bullets(B2),
                  ".memory-seen.md": b"* " + B1.upper().rstrip(".").encode() + b"\n" + bullets(B2)},
                 [B2], id="seen-matches-regardless-of-case-marker-punctuation"),
    pytest.param({"AGENTS.md": "# Notes\n", "seen.md": b"# Already proposed\r\n\r\n- " + B1.encode() + b"\r\n"}, EN,
                 ["--seen", "seen.md"],
                 {"AGENTS.md": b"# Notes\n" + bullets(B2),
                  "seen.md": b"# Already proposed\r\n\r\n- " + B1.encode() + b"\r\n" + bullets(B2, eol=b"\r\n")},
                 [B2], id="crlf-seen-file-keeps-crlf"),
    pytest.param({"AGENTS.md": "# Notes\n", "seen.md": b"- " + B1.encode()}, EN, ["--seen", "seen.md"],
                 {"AGENTS.md": b"# Notes\n" + bullets(B2), "seen.md": bullets(B1, B2)},
                 [B2], id="seen-file-without-final-newline"),
    pytest.param({"AGENTS.md": "# Notes\n\n## Gotchas\n\n- Old.\n\n## Style\n\n- Use black.\n"}, EN,
                 ["--seen", "memory/seen.md", "--section", "Gotchas"],
                 {"AGENTS.md": b"# Notes\n\n## Gotchas\n\n- Old.\n" + bullets(B1, B2) + b"\n## Style\n\n- Use black.\n",
                  "memory/seen.md": bullets(B1, B2)},
                 [B1, B2], id="section-goes-to-memory-only"),
    pytest.param({"AGENTS.md": "# Notes\n\n" + bullets(B2).decode(), "seen.md": bullets(B1)},
                 EN + [user(B3)], ["--seen", "seen.md"],
                 {"AGENTS.md": b"# Notes\n\n" + bullets(B2, B3), "seen.md": bullets(B1, B3)},
                 [B3], id="memory-and-seen-both-filter"),
]


@pytest.mark.parametrize(("files", "records", "args", "changed", "proposed"), SEEN_CASES)
def test_seen(tmp_path: Path, files: dict[str, Any], records: list[Any], args: list[str],
              changed: dict[str, bytes], proposed: list[str]) -> None:
    repo = make_repo(tmp_path / "repo", files)
    (tmp_path / "t.jsonl").write_bytes(to_jsonl(records))
    before = snapshot(repo)
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md", *args, "--stats")
    assert done.returncode == 0, done.stderr.decode()
    stats = parse_stats(done.stderr)
    assert snapshot(repo) == before
    lines = preamble(done.stdout)
    check_summary(lines[0], stats, 1)
    seen_name = args[args.index("--seen") + 1]
    added = added_bullets(done.stdout)
    assert added == {"AGENTS.md": proposed, seen_name: proposed}
    assert stats["proposed"] == len(proposed)
    result = apply_both(repo, done.stdout, tmp_path)
    assert result == {**before, **changed}

    # Never ask twice: from the applied tree, with the proposals deleted from the memory
    # file again (a reviewer's rejection), nothing is proposed.
    applied = tmp_path / "copy-git"
    (applied / "AGENTS.md").write_bytes(before["AGENTS.md"])
    again = run(applied, "build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md", *args, "--stats")
    assert (again.returncode, again.stdout) == (0, b""), again.stdout.decode()
    assert parse_stats(again.stderr)["already_seen"] >= len(proposed)


def test_all_seen_prints_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "# Notes\n", "seen.md": bullets(B2, B1)})
    (tmp_path / "t.jsonl").write_bytes(to_jsonl(EN))
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md", "--seen", "seen.md",
               "--exit-code")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_seen_file_is_plain_reviewable_text(tmp_path: Path) -> None:
    """The seen file holds one `- bullet` line per proposal, exactly as the memory does."""
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": "# Notes\n"})
    (tmp_path / "t.jsonl").write_bytes(to_jsonl(EN + [user(Z1)]))
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md", "--seen", "seen.md")
    result = apply_both(repo, done.stdout, tmp_path)
    assert result["seen.md"] == "".join(f"- {t}\n" for t in (B1, B2, Z1)).encode()


# ========================================================================================
# 5. Configuration a team commits
# ========================================================================================

CONFIG_RECORDS = [user(B1), assistant(A1), user(B2), user(EXTRA), user(NOISY), assistant(NARRATION)]
ALL = [B1, A1, B2, NOISY]  # what the built-ins propose from CONFIG_RECORDS
TOP = [B1, A1, NOISY]  # the default cap's three: the highest scores, B2 one point below
GOTCHAS = "# Notes\n\n## Gotchas\n\n- Old.\n\n## Style\n\n- Use black.\n"


def toml(**table: Any) -> str:
    return "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in table.items())


def pyproject(**table: Any) -> str:
    return '[project]\nname = "demo"\nversion = "1.0"\n\n[tool.memory-diff]\n' + toml(**table)


# id, files relative to a base folder that holds the repository `repo/`, the folder the
# command runs in (relative to base), arguments, changed files after applying (relative
# to the repository; every other file unchanged).
CONFIG_CASES = [
    pytest.param({"repo/AGENTS.md": "# Notes\n", "repo/src/pkg/mod.py": ""}, "repo", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(*TOP)}, id="no-config-defaults"),
    pytest.param({"repo/pyproject.toml": pyproject(memory="AGENTS.md", **{"max-add": 1}),
                  "repo/AGENTS.md": "# Notes\n", "repo/src/pkg/mod.py": ""}, "repo/src/pkg", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1)}, id="pyproject-found-from-subfolder"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="AGENTS.md", max_add=1),
                  "repo/AGENTS.md": "# Notes\n", "repo/src/pkg/mod.py": ""}, "repo/src/pkg", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1)}, id="dotfile-found-from-subfolder-underscore-key"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="ROOT.md"),
                  "repo/docs/.memory-diff.toml": toml(memory="SUB.md", **{"max-add": 1}),
                  "repo/docs/deep/x.md": ""}, "repo/docs/deep", [],
                 {"docs/SUB.md": bullets(B1)}, id="nearest-config-wins"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="AGENTS.md", max_add=2),
                  "repo/sub/pyproject.toml": '[project]\nname = "sub"\n', "repo/AGENTS.md": "# Notes\n"},
                 "repo/sub", [], {"AGENTS.md": b"# Notes\n" + bullets(B1, NOISY)},
                 id="pyproject-without-table-is-passed-over"),
    pytest.param({".memory-diff.toml": toml(memory="OUTER.md", max_add=1),
                  "pyproject.toml": pyproject(memory="OUTER.md", max_add=1),
                  "repo/sub/x.md": ""}, "repo/sub", [],
                 {"AGENTS.md": bullets(*TOP)}, id="config-above-repository-root-ignored"),
    pytest.param({"repo/config/.memory-diff.toml": toml(memory="../AGENTS.md", seen="seen.md", section="Gotchas"),
                  "repo/AGENTS.md": GOTCHAS, "repo/config/deeper/x.md": ""}, "repo/config/deeper", [],
                 {"AGENTS.md": b"# Notes\n\n## Gotchas\n\n- Old.\n" + bullets(*TOP) + b"\n## Style\n\n- Use black.\n",
                  "config/seen.md": bullets(*TOP)}, id="paths-relative-to-config-file"),
    pytest.param({"repo/pyproject.toml": pyproject(memory="AGENTS.md", section="Gotchas", roles=["assistant"],
                                                   **{"max-add": 1, "min-score": 4}),
                  "repo/AGENTS.md": GOTCHAS},
                 "repo", [], {"AGENTS.md": b"# Notes\n\n## Gotchas\n\n- Old.\n" + bullets(A1)
                              + b"\n## Style\n\n- Use black.\n"}, id="section-roles-from-pyproject"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="A.md", section="Config", roles="assistant", max_add=1,
                                                 seen="config-seen.md"),
                  "repo/B.md": "# Notes\n"},
                 "repo", ["--memory", "B.md", "--section", "Cli", "--roles", "user", "--max-add", "3",
                          "--seen", "cli-seen.md"],
                 {"B.md": b"# Notes\n\n## Cli\n\n" + bullets(B1, B2, NOISY), "cli-seen.md": bullets(B1, B2, NOISY)},
                 id="command-line-flags-win"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="AGENTS.md", roles="user"), "repo/AGENTS.md": "# Notes\n"},
                 "repo", [], {"AGENTS.md": b"# Notes\n" + bullets(B1, B2, NOISY)}, id="roles-as-a-string"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="AGENTS.md", signal=[r"\btuesdays?\b"], max_add=10),
                  "repo/AGENTS.md": "# Notes\n"}, "repo", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1, A1, B2, EXTRA, NOISY)}, id="extra-signal-extends"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="AGENTS.md", signal=["Tuesdays"], max_add=10),
                  "repo/AGENTS.md": "# Notes\n"}, "repo", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1, A1, B2, EXTRA, NOISY)},
                 id="extra-signal-capitalised-pattern"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="AGENTS.md", noise=["staging seed"]),
                  "repo/AGENTS.md": "# Notes\n"}, "repo", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1, A1, B2)}, id="extra-noise-extends"),
    pytest.param({"repo/pyproject.toml": pyproject(memory="AGENTS.md", signal=["tuesdays"], noise=["staging seed"],
                                                   max_add=10),
                  "repo/AGENTS.md": "# Notes\n"}, "repo", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(B1, A1, B2, EXTRA)}, id="extra-signal-and-noise-in-pyproject"),
    pytest.param({"repo/.memory-diff.toml": toml(memory="AGENTS.md", include_sidechains=False, allow_pii=False,
                                                 **{"include-summaries": False, "min_score": 7}),
                  "repo/AGENTS.md": "# Notes\n"}, "repo", [],
                 {"AGENTS.md": b"# Notes\n" + bullets(*TOP)}, id="dash-and-underscore-keys-together"),
]


@pytest.mark.parametrize(("files", "cwd", "args", "changed"), CONFIG_CASES)
def test_config(tmp_path: Path, files: dict[str, str], cwd: str, args: list[str],
                changed: dict[str, bytes]) -> None:
    base = tmp_path / "base"
    write_files(base, files)
    repo = make_repo(base / "repo", {})
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(to_jsonl(CONFIG_RECORDS))
    before = snapshot(repo)
    done = run(base / cwd, "build", str(transcript), *args)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
    result = apply_both(repo, done.stdout, tmp_path)
    assert result == {**before, **changed}
    # Built-in rules still work under a team's patterns: narration is never proposed.
    assert NARRATION.encode() not in done.stdout


def test_explain_parts_add_up_to_the_score(tmp_path: Path) -> None:
    """--explain's parts sum to the score it shows, for a request's rule, a team's own signal and
    a user's sentence with a marker alone (from-user only where the kind is stated)."""
    repo = make_repo(tmp_path / "repo", {".memory-diff.toml": toml(signal=["tuesdays"], max_add=10)})
    records = [assistant("The totals now match."),
               user("Add to CLAUDE.md: for the payments module, amounts are integer cents because floats drift."),
               user(EXTRA), user(B1),
               user("The export button sits in the settings page because the admins asked for it there.")]
    (tmp_path / "t.jsonl").write_bytes(to_jsonl(records))
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--explain", "--max-add", "10")
    assert done.returncode == 0, done.stderr.decode()
    scored = [re.match(r"\w+\(score (-?\d+): (.*)\)$", line.split("\t")[0]) for line in done.stdout.decode().splitlines()]
    scored = [m for m in scored if m]
    assert len(scored) == 4, done.stdout.decode()
    for m in scored:
        assert int(m[1]) == sum(int(part.rsplit(" ", 1)[1]) for part in m[2].split(", ")), m[0]
    rows = {ln.split("\t")[3]: ln.split("\t")[0] for ln in done.stdout.decode().splitlines()}
    assert "from-user" in rows["for the payments module, amounts are integer cents because floats drift."]
    assert "from-user" in rows[EXTRA] and "from-user" in rows[B1]
    assert "from-user" not in rows["The export button sits in the settings page because the admins asked for it there."]


def test_config_extra_patterns_shown_in_explain(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".memory-diff.toml": toml(signal=["tuesdays"], noise=["staging seed"],
                                                                    max_add=10)})
    (tmp_path / "t.jsonl").write_bytes(to_jsonl(CONFIG_RECORDS))
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--explain")
    assert done.returncode == 0, done.stderr.decode()
    rows = {ln.split("\t")[3]: ln.split("\t")[0] for ln in done.stdout.decode().splitlines()}
    assert rows[EXTRA].startswith("proposed(")
    assert rows[NOISY] == "dropped_noise(noise-extra)"
    assert rows[NARRATION] == "dropped_noise(narration)"


# id, config file name, content, what the one error line must name besides the file.
CONFIG_ERRORS = [
    pytest.param(".memory-diff.toml", 'colour = "red"\n', "colour", id="unknown-key"),
    pytest.param("pyproject.toml", pyproject(memroy="AGENTS.md"), "memroy", id="unknown-key-pyproject"),
    pytest.param(".memory-diff.toml", 'max-add = "three"\n', "max-add", id="max-add-string"),
    pytest.param(".memory-diff.toml", 'max_add = "three"\n', "max_add", id="max-add-underscore-string"),
    pytest.param(".memory-diff.toml", "max-add = 0\n", "max-add", id="max-add-zero"),
    pytest.param(".memory-diff.toml", "max-add = true\n", "max-add", id="max-add-bool"),
    pytest.param(".memory-diff.toml", "max-add = 2.5\n", "max-add", id="max-add-float"),
    pytest.param(".memory-diff.toml", "memory = 3\n", "memory", id="memory-number"),
    pytest.param(".memory-diff.toml", 'section = ["Gotchas"]\n', "section", id="section-list"),
    pytest.param(".memory-diff.toml", "seen = false\n", "seen", id="seen-bool"),
    pytest.param(".memory-diff.toml", "roles = 5\n", "roles", id="roles-number"),
    pytest.param(".memory-diff.toml", 'roles = ["admin"]\n', "roles", id="roles-unknown"),
    pytest.param(".memory-diff.toml", 'signal = "tuesdays"\n', "signal", id="signal-string-not-list"),
    pytest.param(".memory-diff.toml", 'signal = ["("]\n', "signal", id="signal-bad-regex"),
    pytest.param("pyproject.toml", pyproject(noise=["[a-"]), "noise", id="noise-bad-regex-pyproject"),
    pytest.param(".memory-diff.toml", "noise = [1, 2]\n", "noise", id="noise-not-strings"),
    pytest.param(".memory-diff.toml", 'format = "word"\n', "format", id="format-unknown"),
    pytest.param(".memory-diff.toml", 'include-sidechains = "yes"\n', "include-sidechains", id="bool-as-string"),
    pytest.param(".memory-diff.toml", 'since = "soon"\n', "since", id="since-unparsable"),
    pytest.param(".memory-diff.toml", "memory = \n", None, id="bad-toml"),
    pytest.param("pyproject.toml", '[tool.memory-diff]\nmemory = "a.md"\nmemory = "b.md"\n', None,
                 id="bad-toml-duplicate-key"),
    pytest.param("pyproject.toml", '[tool]\nmemory-diff = "AGENTS.md"\n', "tool.memory-diff", id="table-not-a-table"),
]


@pytest.mark.parametrize(("name", "content", "key"), CONFIG_ERRORS)
@pytest.mark.parametrize("where", [".", "sub"], ids=["at-root", "from-subfolder"])
def test_config_error(tmp_path: Path, name: str, content: str, key: str | None, where: str) -> None:
    repo = make_repo(tmp_path / "repo", {name: content, "AGENTS.md": "# Notes\n", "sub/x.md": ""})
    (tmp_path / "t.jsonl").write_bytes(to_jsonl(EN))
    done = main_process(["build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md"], repo / where)
    assert done.returncode == 2
    assert done.stdout == b""
    err = done.stderr.decode()
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("memory-diff: error: "), err
    assert "Traceback" not in err
    assert str(repo / name) in err, err
    if key is not None:
        assert f"'{key}'" in err or f"[{key}]" in err, err


# ========================================================================================
# 6. --explain
# ========================================================================================

EXPLAIN_RECORDS = [
    user(f"{B1} {NARRATION} Always do that.", timestamp="2025-05-01T10:00:00Z"),
    assistant("The weather is nice today. We should maybe use the cache because it is faster."),
    user(B1),
    user("Never use the key AKIAZZZZZZZZZZZZZZZZ for the tests because it is the shared one."),
    user(B2),
    user(B3),
    assistant(A1),
    user(Z1),
    assistant(LOW),
]
STAGES = set(md.STAT_KEYS) | {"proposed"}

# id, memory, arguments, expected (stage, text) per sentence in transcript order.
EXPLAIN_CASES = [
    pytest.param(b"# Notes\n\n" + bullets(B3), ["--max-add", "4"], [
        ("proposed", B1), ("dropped_noise", NARRATION), ("dropped_length", "Always do that."),
        ("dropped_no_signal", "The weather is nice today."),
        ("dropped_weak", "We should maybe use the cache because it is faster."),
        ("dropped_duplicate", B1), ("dropped_secret", "<withheld: secret>"), ("proposed", B2),
        ("already_in_memory", B3), ("proposed", A1), ("proposed", Z1), ("dropped_over_cap", LOW),
    ], id="every-stage"),
    pytest.param(b"# Notes\n" + bullets(B1, B2, B3, A1, Z1, LOW), [], [
        ("already_in_memory", B1), ("dropped_noise", NARRATION), ("dropped_length", "Always do that."),
        ("dropped_no_signal", "The weather is nice today."),
        ("dropped_weak", "We should maybe use the cache because it is faster."),
        ("dropped_duplicate", B1), ("dropped_secret", "<withheld: secret>"), ("already_in_memory", B2),
        ("already_in_memory", B3), ("already_in_memory", A1), ("already_in_memory", Z1),
        ("already_in_memory", LOW),
    ], id="nothing-proposed-still-explained"),
]
EXPLAIN_ROW = re.compile(r"^([a-z_]+)(?:\((.*)\))?\t(.+):(\d+)\t(user|assistant)\t(.*)$")


@pytest.mark.parametrize(("memory", "args", "expected"), EXPLAIN_CASES)
def test_explain(tmp_path: Path, memory: bytes, args: list[str], expected: list[tuple[str, str]]) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": memory})
    (repo / "t.jsonl").write_bytes(to_jsonl(EXPLAIN_RECORDS))
    done = run(repo, "build", "t.jsonl", "--memory", "AGENTS.md", "--explain", "--stats", *args)
    assert done.returncode == 0, done.stderr.decode()
    stats = parse_stats(done.stderr)
    text = done.stdout.decode()
    assert text.endswith("\n")
    rows = [EXPLAIN_ROW.match(ln) for ln in text.splitlines()]
    assert all(rows), text
    # Every sentence, once, with a stage name; the stages agree with the counters.
    assert len(rows) == stats["sentences"]
    assert [(m.group(1), m.group(6)) for m in rows] == expected
    assert all(m.group(1) in STAGES for m in rows)
    for stage in {m.group(1) for m in rows}:
        assert sum(m.group(1) == stage for m in rows) == stats[stage], stage
    assert all(m.group(3) == "t.jsonl" and 1 <= int(m.group(4)) <= len(EXPLAIN_RECORDS) for m in rows)
    # Proposed rows carry their score and its parts, which add up to it.
    for m in rows:
        if m.group(1) != "proposed":
            continue
        score = re.fullmatch(r"score (-?\d+): (.*)", m.group(2) or "")
        assert score, m.group(0)
        parts = [re.fullmatch(r"([a-z-]+) ([+-]\d+)", p) for p in score.group(2).split(", ")]
        assert all(parts) and parts[0].group(1) == "base", m.group(0)
        assert sum(int(p.group(2)) for p in parts) == int(score.group(1)) >= md.MIN_SCORE
    # No patch, no preamble.
    assert not re.search(r"^(?:--- |\+\+\+ |@@ |# memory-diff)", text, re.M)
    assert "AKIAZZZZ" not in text
    # What it says is proposed is what the patch proposes.
    plain = run(repo, "build", "t.jsonl", "--memory", "AGENTS.md", *args).stdout
    proposed = [m.group(6) for m in rows if m.group(1) == "proposed"]
    assert (added_bullets(plain).get("AGENTS.md", [])) == proposed
    # Deterministic.
    assert run(repo, "build", "t.jsonl", "--memory", "AGENTS.md", "--explain", *args).stdout == done.stdout


def test_explain_deterministic_across_jobs(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.jsonl").write_bytes(to_jsonl(EXPLAIN_RECORDS + [user(f"{B4} ({name})")]))
    outputs = {run(tmp_path, "build", "a.jsonl", "b.jsonl", "c.jsonl", "--memory", "m.md", "--explain",
                   "--jobs", jobs).stdout for jobs in ("1", "3")}
    assert len(outputs) == 1
    (out,) = outputs
    files = [ln.split("\t")[1].split(":")[0] for ln in out.decode().splitlines()]
    assert files == sorted(files)  # in input order


def test_explain_says_why_over_the_cap(tmp_path: Path) -> None:
    """An over-cap drop lost on score: for tuning, the row says the score it lost with."""
    (tmp_path / "t.jsonl").write_bytes(to_jsonl([assistant(LOW), user(B1)]))
    done = run(tmp_path, "build", "t.jsonl", "--memory", "m.md", "--explain", "--max-add", "1")
    rows = [ln.split("\t") for ln in done.stdout.decode().splitlines()]
    over = [r for r in rows if r[0].startswith("dropped_over_cap")]
    assert len(over) == 1 and over[0][3] == LOW
    assert re.fullmatch(r"dropped_over_cap\(score \d+.*\)", over[0][0]), over[0][0]


# ========================================================================================
# 7. --section keeps the file's blank-line habits (golden examples cover the main shapes)
# ========================================================================================

SECTION_CASES = [
    pytest.param(b"# Notes\n\n## Build\n\n- Use make.\n", "Gotchas",
                 b"# Notes\n\n## Build\n\n- Use make.\n\n## Gotchas\n\n" + bullets(B1, B2), id="missing-spaced-file"),
    pytest.param(b"# Notes\n## Build\n- Use make.\n", "Gotchas",
                 b"# Notes\n## Build\n- Use make.\n## Gotchas\n" + bullets(B1, B2), id="missing-tight-file"),
    pytest.param(b"# Notes\n\n## Build\n- Use make.\n\n## Style\n- Use black.\n", "Gotchas",
                 b"# Notes\n\n## Build\n- Use make.\n\n## Style\n- Use black.\n\n## Gotchas\n" + bullets(B1, B2),
                 id="missing-blank-before-heading-only"),
    pytest.param(b"# Notes\n\n## Build\n- Use make.\n\n## Style\n- Use black.\n", "style!",
                 b"# Notes\n\n## Build\n- Use make.\n\n## Style\n- Use black.\n" + bullets(B1, B2),
                 id="existing-tight-at-end-forgiving-match"),
]


@pytest.mark.parametrize(("memory", "section", "expected"), SECTION_CASES)
def test_section_blank_line_habits(tmp_path: Path, memory: bytes, section: str, expected: bytes) -> None:
    repo = make_repo(tmp_path / "repo", {"AGENTS.md": memory})
    (tmp_path / "t.jsonl").write_bytes(to_jsonl([user(B1), user(B2)]))
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md", "--section", section)
    assert done.returncode == 0, done.stderr.decode()
    assert apply_both(repo, done.stdout, tmp_path)["AGENTS.md"] == expected
