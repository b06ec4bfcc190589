"""Which memory file `build` patches when neither --memory nor the config names one, and
the argument errors about the memory and seen files."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF  # noqa: E402
RULE = "Never push directly to main because the release job deploys every commit."


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MEMORY_DIFF, *args], cwd=cwd, capture_output=True, timeout=30,
                          env={**os.environ, **(env or {})})


def setup(tmp_path: Path, files: dict[str, str], links: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    for name, dest in links.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(dest, repo / name)
    (tmp_path / "t.jsonl").write_text(json.dumps({"role": "user", "text": RULE}) + "\n")
    return repo


def target(patch: bytes) -> str:
    found = re.findall(rb"^\+\+\+ b/(.*)$", patch, re.M)
    assert len(found) == 1, patch
    return found[0].decode()


# id, files at the root, symlinks, the file patched.
CASES = [
    pytest.param({"AGENTS.md": "# A\n"}, {}, "AGENTS.md", id="agents"),
    pytest.param({"CLAUDE.md": "# C\n", "memory.md": "# M\n"}, {}, "CLAUDE.md", id="claude"),
    pytest.param({".claude/CLAUDE.md": "# C\n"}, {}, ".claude/CLAUDE.md", id="dot-claude"),
    pytest.param({"GEMINI.md": "# G\n"}, {}, "GEMINI.md", id="gemini"),
    pytest.param({"AGENTS.md": "# A\n"}, {"CLAUDE.md": "AGENTS.md"}, "AGENTS.md", id="claude-links-to-agents"),
    pytest.param({"AGENTS.md": "# A\n", "CLAUDE.md": "@AGENTS.md\n"}, {}, "AGENTS.md", id="claude-imports-agents"),
    pytest.param({"AGENTS.md": "# A\n", "CLAUDE.md": "<!-- see AGENTS.md -->\n\n@AGENTS.md\n"}, {}, "AGENTS.md",
                 id="claude-imports-agents-with-a-comment"),
    pytest.param({"AGENTS.md": "# A\n", ".claude/CLAUDE.md": "@../AGENTS.md\n"}, {}, "AGENTS.md",
                 id="dot-claude-imports-agents"),
    pytest.param({"AGENTS.md": "# A\n"}, {"CLAUDE.md": "AGENTS.md", "GEMINI.md": "AGENTS.md"}, "AGENTS.md",
                 id="all-links-to-one"),
    pytest.param({}, {}, "AGENTS.md", id="none-named-transcript"),
]


@pytest.mark.parametrize(("files", "links", "expected"), CASES)
def test_default_memory_file(tmp_path: Path, files: dict[str, str], links: dict[str, str], expected: str) -> None:
    repo = setup(tmp_path, files, links)
    done = run(repo, "build", str(tmp_path / "t.jsonl"))
    assert done.returncode == 0, done.stderr.decode()
    assert target(done.stdout) == expected
    assert done.stdout.count(b"\n+- ") == 1


@pytest.mark.parametrize(("files", "links", "names"), [
    pytest.param({"AGENTS.md": "# A\n", "CLAUDE.md": "# C\n"}, {}, "AGENTS.md, CLAUDE.md", id="agents-and-claude"),
    pytest.param({"AGENTS.md": "# A\n", "CLAUDE.md": "@AGENTS.md\n\n- And a rule of its own.\n"}, {},
                 "AGENTS.md, CLAUDE.md", id="import-and-more"),
    pytest.param({"CLAUDE.md": "# C\n", "GEMINI.md": "# G\n"}, {"AGENTS.md": "CLAUDE.md"},
                 "AGENTS.md, CLAUDE.md, GEMINI.md", id="a-link-and-another"),
])
def test_several_memory_files_is_an_error(tmp_path: Path, files: dict[str, str], links: dict[str, str],
                                          names: str) -> None:
    repo = setup(tmp_path, files, links)
    done = run(repo, "build", str(tmp_path / "t.jsonl"))
    err = done.stderr.decode()
    assert (done.returncode, done.stdout, err.count("\n")) == (2, b"", 1), err
    assert f"several memory files at the repository root ({names}): choose one with --memory PATH" in err
    assert run(repo, "build", str(tmp_path / "t.jsonl"), "--memory", "CLAUDE.md").returncode == 0


@pytest.mark.parametrize(("tool", "expected"), [
    pytest.param("claude", "CLAUDE.md", id="claude-sessions"),
    pytest.param("gemini", "GEMINI.md", id="gemini-sessions"),
    pytest.param("codex", "AGENTS.md", id="codex-sessions"),
])
def test_no_memory_file_guesses_the_one_the_agent_reads(tmp_path: Path, tool: str, expected: str) -> None:
    import hashlib
    repo = setup(tmp_path, {}, {})
    real = os.path.realpath(repo)
    home = tmp_path / "home"
    if tool == "claude":
        folder = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", real)
        folder.mkdir(parents=True)
        (folder / "s.jsonl").write_text(json.dumps({"type": "user", "cwd": real, "sessionId": "s",
                                                    "message": {"role": "user", "content": RULE}}) + "\n")
    elif tool == "gemini":
        folder = home / ".gemini" / "tmp" / hashlib.sha256(real.encode()).hexdigest() / "chats"
        folder.mkdir(parents=True)
        (folder / "session-1.json").write_text(json.dumps(
            {"sessionId": "g", "projectHash": "x", "messages": [{"type": "user", "content": RULE}]}))
    else:
        folder = home / ".codex" / "sessions" / "2026" / "01" / "01"
        folder.mkdir(parents=True)
        (folder / "rollout-2026-01-01T00-00-00-c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
            {"type": "session_meta", "payload": {"id": "c", "cwd": real}},
            {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                  "content": [{"type": "input_text", "text": RULE}]}})))
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": "", "GEMINI_CLI_HOME": ""}
    done = run(repo, "build", env=env)
    assert done.returncode == 0, done.stderr.decode()
    assert target(done.stdout) == expected


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(["--memory", ""], "--memory: must not be empty", id="empty-memory"),
    pytest.param(["--memory", "m.md", "--seen", ""], "--seen: must not be empty", id="empty-seen"),
    pytest.param(["--memory", "m.md", "--section", ""], "--section: a heading needs a title", id="empty-section"),
    pytest.param(["--memory", "m.md", "--section", "##"], "--section: a heading needs a title", id="hashes-only"),
    pytest.param(["--memory", "m.md", "--section", " ## "], "--section: a heading needs a title", id="blank-hashes"),
])
def test_empty_names_are_errors(tmp_path: Path, args: list[str], says: str) -> None:
    repo = setup(tmp_path, {}, {})
    done = run(repo, "build", str(tmp_path / "t.jsonl"), *args)
    err = done.stderr.decode()
    assert (done.returncode, done.stdout, err) == (2, b"", f"memory-diff: error: {says}" + err.split(says, 1)[1])
    assert err.count("\n") == 1


def test_fifo_as_memory_is_an_error_not_a_hang(tmp_path: Path) -> None:
    repo = setup(tmp_path, {}, {})
    os.mkfifo(repo / "AGENTS.md")
    done = run(repo, "build", str(tmp_path / "t.jsonl"), "--memory", "AGENTS.md")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == "memory-diff: error: AGENTS.md: not a regular file\n"
