"""Discovery of a repository's sessions (memory_diff.claude_slug / discover).

Claude Code names ~/.claude/projects/<dir> with (cli.js, 2.1.x):
    s = cwd.replace(/[^a-zA-Z0-9]/g, "-")            # per UTF-16 code unit
    dir = s.length <= 200 ? s : s.slice(0, 200) + "-" + Math.abs(int32 djb2(cwd)).toString(36)
A slug that did not truncate, or counted an astral character as one unit, would find no
session for a repository whose path is longer than 200 characters or holds an emoji.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


# -- Codex, Gemini, CLAUDE_CONFIG_DIR, subfolders, the lossy slug, --since, the listing ----

TOOL_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
RULE = "Never push directly to main because the release job deploys every commit."


def list_sources(repo: Path, home: Path, *args: str, **env: str) -> list[tuple[str, str]]:
    """`build --list-sources` run in `repo` with HOME=`home`: [(shown path, format)]."""
    clean = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    proc = subprocess.run([sys.executable, str(SCRIPT), "build", "--list-sources", *args],
                          cwd=repo, env={**clean, "HOME": str(home), **env}, capture_output=True, timeout=60)
    # Only the note about sessions passed over (tested below) may be on stderr.
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert all(b"passed over: their cwd is outside" in ln for ln in proc.stderr.splitlines()), proc.stderr
    return [tuple(line.split("\t")) for line in proc.stdout.decode().splitlines()]  # type: ignore[misc]


def claude_session(projects: Path, cwd: Path | str, name: str = "s.jsonl", folder: str | None = None) -> Path:
    """A Claude Code session started in `cwd`, where Claude Code would store it."""
    path = projects / (folder or claude_code_dir(str(cwd))) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "summary", "summary": "s", "leafUuid": "u0"}) + "\n" + json.dumps({
        "parentUuid": None, "type": "user", "cwd": str(cwd), "sessionId": name, "uuid": "u1",
        "message": {"role": "user", "content": RULE},
    }) + "\n")
    return path


def codex_rollout(codex_home: Path, cwd: Path | str | None, name: str, day: str = "2026/01/20") -> Path:
    """A Codex CLI rollout: sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl."""
    path = codex_home / "sessions" / day / name
    path.parent.mkdir(parents=True, exist_ok=True)
    meta: dict[str, object] = {"id": name, "timestamp": "2026-01-20T10:00:00.000Z",
                               "originator": "codex_cli_rs", "cli_version": "0.135.0"}
    if cwd is not None:
        meta["cwd"] = str(cwd)
    path.write_text("\n".join(json.dumps(r) for r in (
        {"timestamp": "2026-01-20T10:00:00.000Z", "type": "session_meta", "payload": meta},
        {"timestamp": "2026-01-20T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": RULE}]}},
    )) + "\n")
    return path


def gemini_chat(gemini_home: Path, project: Path | str, name: str) -> Path:
    """A Gemini CLI chat: .gemini/tmp/<sha256 of the project path>/chats/session-*.json."""
    digest = hashlib.sha256(str(project).encode()).hexdigest()
    path = gemini_home / ".gemini" / "tmp" / digest / "chats" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"sessionId": name, "projectHash": digest, "messages": [
        {"id": "m1", "type": "user", "content": RULE, "timestamp": "2026-01-20T10:00:00.000Z"},
    ]}, indent=2))
    return path


def test_codex_rollouts_are_found_by_the_cwd_of_their_session_meta(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "work" / "repo")
    (repo / "sub").mkdir()
    codex = tmp_path / "codex"
    mine = codex_rollout(codex, repo, "rollout-2026-01-20T10-00-00-0001.jsonl")
    in_sub = codex_rollout(codex, repo / "sub", "rollout-2026-01-21T10-00-00-0002.jsonl", day="2026/01/21")
    codex_rollout(codex, tmp_path / "work" / "other", "rollout-2026-01-20T11-00-00-0003.jsonl")
    codex_rollout(codex, str(repo) + "-fork", "rollout-2026-01-20T12-00-00-0004.jsonl")  # shares a prefix
    codex_rollout(codex, None, "rollout-2026-01-20T13-00-00-0005.jsonl")  # no cwd: cannot tell
    codex_rollout(codex, repo, "notes-2026-01-20.jsonl")  # not a rollout
    listed = list_sources(repo, tmp_path / "home", CODEX_HOME=str(codex))
    assert listed == [(str(mine), "codex"), (str(in_sub), "codex")]


def test_codex_home_defaults_to_dot_codex_under_home(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    codex_rollout(home / ".codex", repo, "rollout-2026-01-20T10-00-00-0001.jsonl")
    listed = list_sources(repo, home)
    assert listed == [("~/.codex/sessions/2026/01/20/rollout-2026-01-20T10-00-00-0001.jsonl", "codex")]


def test_gemini_chats_are_found_by_the_hash_of_the_repository_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    gemini = tmp_path / "gemini-home"
    mine = gemini_chat(gemini, repo, "session-2026-01-20T10-00-abcd.json")
    gemini_chat(gemini, tmp_path / "elsewhere", "session-2026-01-20T11-00-ef01.json")
    (mine.parent.parent / "logs.json").write_text("[]")  # beside chats/, not a chat
    listed = list_sources(repo, tmp_path / "home", GEMINI_CLI_HOME=str(gemini))
    assert listed == [(str(mine), "gemini")]


def test_claude_config_dir_overrides_dot_claude(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    config = tmp_path / "claude-config"
    mine = claude_session(config / "projects", repo)
    claude_session(home / ".claude" / "projects", repo, name="ignored.jsonl")
    assert list_sources(repo, home, CLAUDE_CONFIG_DIR=str(config)) == [(str(mine), "claude")]
    assert list_sources(repo, home) == [(f"~/.claude/projects/{claude_code_dir(str(repo))}/ignored.jsonl", "claude")]


def test_claude_sessions_started_in_a_subfolder_are_found(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "pkg" / "api").mkdir(parents=True)
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    top = claude_session(projects, repo, name="top.jsonl")
    deep = claude_session(projects, repo / "pkg" / "api", name="deep.jsonl")
    # A sibling whose name starts like the repository's: a longer slug, cwd outside.
    claude_session(projects, tmp_path / "repo-tools", name="sibling.jsonl")
    # A slug folder of the repository holding a session whose cwd is elsewhere.
    claude_session(projects, tmp_path / "elsewhere", name="moved.jsonl", folder=claude_code_dir(str(repo)))
    listed = [path for path, _ in list_sources(repo, home)]
    assert listed == ["~" + str(p)[len(str(home)):] for p in sorted([deep, top])]


@pytest.mark.parametrize(("repo_at", "cwd_found", "cwd_not_found"), [
    pytest.param("a-b", "a-b", "a/b", id="repo-with-dash"),
    pytest.param("a", "a/b", "a-b", id="repo-with-subfolder"),
])
def test_lossy_slug_is_resolved_by_cwd(tmp_path: Path, repo_at: str, cwd_found: str, cwd_not_found: str) -> None:
    """/x/a-b and /x/a/b share the slug -x-a-b: only the session whose cwd is inside counts."""
    x = tmp_path / "x"
    (x / "a" / "b").mkdir(parents=True)
    (x / "a-b").mkdir()
    (x / repo_at / ".git").mkdir()
    repo = (x / repo_at).resolve()
    assert claude_code_dir(str(x / "a-b")) == claude_code_dir(str(x / "a" / "b"))
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    found = claude_session(projects, x / cwd_found, name="found.jsonl")
    claude_session(projects, x / cwd_not_found, name="not-found.jsonl")
    assert [p for p, _ in list_sources(repo, home)] == ["~" + str(found)[len(str(home)):]]


def test_since_excludes_a_session_last_modified_before_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    old = claude_session(projects, repo, name="old.jsonl")
    new = claude_session(projects, repo, name="new.jsonl")
    codex_old = codex_rollout(home / ".codex", repo, "rollout-2026-01-20T10-00-00-0001.jsonl")
    gemini_old = gemini_chat(home, repo, "session-2026-01-20T10-00-abcd.json")
    three_days_ago = time.time() - 3 * 86400
    for path in (old, codex_old, gemini_old):
        os.utime(path, (three_days_ago, three_days_ago))
    shown = lambda p: "~" + str(p)[len(str(home)):]  # noqa: E731
    assert [p for p, _ in list_sources(repo, home, "--since", "1d")] == [shown(new)]
    assert [p for p, _ in list_sources(repo, home, "--since", "1w")] == \
        [shown(new), shown(old), shown(codex_old), shown(gemini_old)]


def test_list_sources_shows_home_as_tilde_and_the_format(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    claude_session(home / ".claude" / "projects", repo)
    codex_rollout(home / ".codex", repo, "rollout-2026-01-20T10-00-00-0001.jsonl")
    gemini_chat(home, repo, "session-2026-01-20T10-00-abcd.json")
    outside = tmp_path / "codex-elsewhere"
    in_outside = codex_rollout(outside, repo, "rollout-2026-01-22T10-00-00-0009.jsonl", day="2026/01/22")
    digest = hashlib.sha256(str(repo).encode()).hexdigest()
    assert list_sources(repo, home) == [
        (f"~/.claude/projects/{claude_code_dir(str(repo))}/s.jsonl", "claude"),
        ("~/.codex/sessions/2026/01/20/rollout-2026-01-20T10-00-00-0001.jsonl", "codex"),
        (f"~/.gemini/tmp/{digest}/chats/session-2026-01-20T10-00-abcd.json", "gemini"),
    ]
    assert list_sources(repo, home, CODEX_HOME=str(outside))[1] == (str(in_outside), "codex")


def test_discovered_sessions_are_read_by_build(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    claude_session(home / ".claude" / "projects", repo)
    codex_rollout(home / ".codex", repo, "rollout-2026-01-20T10-00-00-0001.jsonl")
    gemini_chat(home, repo, "session-2026-01-20T10-00-abcd.json")
    clean = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    proc = subprocess.run([sys.executable, str(SCRIPT), "build", "--json", "--memory", "AGENTS.md"],
                          cwd=repo, env={**clean, "HOME": str(home)}, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    # The same rule in all three: proposed once, from the first session, the others duplicates.
    assert [p["text"] for p in doc["proposed"]] == [RULE]
    assert doc["stats"]["dropped_duplicate"] == 2


def test_discovery_order_is_deterministic(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    # Created in the reverse of the order they are listed in.
    for name in ("z.jsonl", "m.jsonl", "a.jsonl"):
        claude_session(projects, repo / "sub", name=name)
        claude_session(projects, repo, name=name)
    for day in ("2026/02/01", "2026/01/31", "2025/12/31"):
        for n in ("9", "1"):
            codex_rollout(home / ".codex", repo, f"rollout-{day.replace('/', '-')}T10-00-00-000{n}.jsonl", day=day)
    for name in ("session-2026-01-20T12-00-ffff.json", "session-2026-01-20T10-00-0000.json"):
        gemini_chat(home, repo, name)
    first = list_sources(repo, home)
    assert first == list_sources(repo, home)
    slug = claude_code_dir(str(repo))
    claude = [p for p, f in first if f == "claude"]
    codex = [p for p, f in first if f == "codex"]
    gemini = [p for p, f in first if f == "gemini"]
    assert [f for _, f in first] == ["claude"] * 6 + ["codex"] * 6 + ["gemini"] * 2
    assert claude == [f"~/.claude/projects/{slug}/{n}" for n in ("a.jsonl", "m.jsonl", "z.jsonl")] + \
                     [f"~/.claude/projects/{slug}-sub/{n}" for n in ("a.jsonl", "m.jsonl", "z.jsonl")]
    assert codex == sorted(codex)
    assert gemini == sorted(gemini)


def test_discovery_says_when_it_finds_nothing_or_passes_sessions_over(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    clean = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}

    def build() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, str(SCRIPT), "build", "--memory", "m.md"], cwd=repo,
                              env={**clean, "HOME": str(home)}, capture_output=True, timeout=60)

    done = build()
    assert (done.returncode, done.stdout) == (0, b"")
    assert done.stderr.decode() == (f"memory-diff: no sessions found for {repo} (Claude Code, Codex, Gemini CLI; "
                                    f"see --list-sources)\n")
    claude_session(home / ".claude" / "projects", tmp_path / "elsewhere", name="moved.jsonl",
                   folder=claude_code_dir(str(repo)))
    done = build()
    assert done.stderr.decode().endswith("; 1 Claude Code session in a matching folder passed over: "
                                         f"their cwd is outside {repo}\n")
    assert done.stderr.count(b"\n") == 1
    claude_session(home / ".claude" / "projects", repo)
    done = build()
    assert done.returncode == 0 and done.stdout.startswith(b"# memory-diff: 1 proposed")
    assert done.stderr.decode() == ("memory-diff: 1 Claude Code session in a matching folder passed over: "
                                    f"their cwd is outside {repo}\n")
