"""Discovery of a repository's sessions (memory_diff.claude_slug / discover).

Claude Code names ~/.claude/projects/<dir> with (cli.js, 2.1.x):
    s = cwd.replace(/[^a-zA-Z0-9]/g, "-")            # per UTF-16 code unit
    dir = s.length <= 200 ? s : s.slice(0, 200) + "-" + Math.abs(int32 djb2(cwd)).toString(36)
A slug that did not truncate, or counted an astral character as one unit, would find no
session for a repository whose path is longer than 200 characters or holds an emoji.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "memory_diff.py"


def claude_code_dir(cwd: str) -> str:
    """Claude Code's own rule, transcribed."""
    units = cwd.encode("utf-16-le")
    codes = [int.from_bytes(units[i:i + 2], "little") for i in range(0, len(units), 2)]
    slug = "".join(chr(c) if chr(c).isascii() and chr(c).isalnum() else "-" for c in codes)
    if len(slug) <= 200:
        return slug
    h = 0
    for c in codes:
        h = ((h << 5) - h + c) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h & 0x80000000 else h)
    digits = ""
    while True:
        h, r = divmod(h, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if not h:
            break
    return f"{slug[:200]}-{digits}"


def sources(tmp_path: Path, repo: Path) -> str:
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / claude_code_dir(str(repo))
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_text(json.dumps({
        "type": "user", "cwd": str(repo),
        "message": {"role": "user", "content": "Never push directly to main because the release job deploys every commit."},
    }) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")}
    env["HOME"] = str(home)
    proc = subprocess.run([sys.executable, str(SCRIPT), "build", "--list-sources"],
                          cwd=repo, env=env, capture_output=True, text=True, check=True)
    return proc.stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / ".git").mkdir()
    return path.resolve()


def test_discovers_sessions_of_a_repository_deeper_than_200_characters(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / ("d" * 60) / ("e" * 60) / ("f" * 60) / "repo")
    assert len(str(repo)) > 200
    assert "s.jsonl" in sources(tmp_path, repo)


def test_discovers_sessions_of_a_repository_with_an_astral_character(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "\U0001F680" / "repo")
    assert "s.jsonl" in sources(tmp_path, repo)
