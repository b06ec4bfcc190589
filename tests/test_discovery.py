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
import time
from pathlib import Path

import pytest

from command import MEMORY_DIFF, main_process  # noqa: E402


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
    proc = subprocess.run([*MEMORY_DIFF, "build", "--list-sources"],
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

TOOL_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "COPILOT_HOME", "XDG_DATA_HOME")
RULE = "Never push directly to main because the release job deploys every commit."


def list_sources(repo: Path, home: Path, *args: str, **env: str) -> list[tuple[str, str]]:
    """`build --list-sources` run in `repo` with HOME=`home`: [(shown path, format)]."""
    clean = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    proc = main_process(["build", "--list-sources", *args], repo, {**clean, "HOME": str(home), **env})
    # Only discovery's own note (sessions passed over, or none found: tested below) may be on stderr.
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert all(b"passed over: their cwd is outside" in ln or b": no sessions " in ln
               for ln in proc.stderr.splitlines()), proc.stderr
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
    proc = subprocess.run([*MEMORY_DIFF, "build", "--json", "--memory", "AGENTS.md"],
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


# -- SpecStory: .specstory/history/*.md of the repository root ----------------------------

def specstory_history(repo: Path, name: str, turn_times: list[str], session: str | None = None) -> Path:
    """A SpecStory history committed in the repository, one User turn per time."""
    path = repo / ".specstory" / "history" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    head = ["<!-- Generated by SpecStory, Markdown v2.1.0 -->", ""]
    if session:
        head += [f"<!-- Claude Code Session {session} (2026-01-20 10:00:00Z) -->", ""]
    turns = [f"_**User ({when})**_\n\n{RULE}\n" if when else f"_**User**_\n\n{RULE}\n" for when in turn_times]
    path.write_text("\n".join(head) + "\n---\n\n".join(turns))
    return path


def test_specstory_histories_of_the_repository_root_are_discovered(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    claude_session(home / ".claude" / "projects", repo)
    b = specstory_history(repo, "2026-01-21_09-00-00Z-second.md", ["2026-01-21 09:00:00Z"])
    a = specstory_history(repo, "2026-01-20_10-00Z-first.md", ["2026-01-20 10:00Z"])
    (repo / ".specstory" / "history" / "notes.txt").write_text(RULE)  # not a history
    specstory_history(repo / "pkg", "2026-01-22_10-00Z-nested.md", ["2026-01-22 10:00Z"])  # not the root's
    assert list_sources(repo, home) == [
        (f"~/.claude/projects/{claude_code_dir(str(repo))}/s.jsonl", "claude"),
        (str(a), "specstory"),
        (str(b), "specstory"),
    ]


def test_specstory_histories_are_found_from_a_subfolder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    history = specstory_history(repo, "2026-01-20_10-00Z-first.md", ["2026-01-20 10:00Z"])
    assert list_sources(repo / "src", tmp_path / "home") == [(str(history), "specstory")]


@pytest.mark.parametrize(("name", "turn_times", "since", "kept"), [
    pytest.param("2026-01-01_10-00Z-old.md", ["2026-01-01 10:00Z", "{recent}"], "1d", True, id="last-turn-recent"),
    pytest.param("{recent_name}-renamed.md", ["2026-01-01 10:00Z"], "1d", False, id="turns-over-the-name"),
    pytest.param("{recent_name}-undated.md", [""], "1d", True, id="name-when-turns-undated"),
    pytest.param("2026-01-01_10-00-00Z-old.md", [""], "1d", False, id="old-name-undated"),
    pytest.param("chat.md", [""], "1d", True, id="mtime-when-nothing-dated"),
    pytest.param("chat.md", ["2026-01-01 11:30:00+0100"], "2026-01-01T10:31:00", False, id="zone-offset-before"),
    pytest.param("chat.md", ["2026-01-01 11:30:00+0100"], "2026-01-01T10:29:00", True, id="zone-offset-after"),
])
def test_since_uses_the_dates_of_a_specstory_history_not_its_mtime(
        tmp_path: Path, name: str, turn_times: list[str], since: str, kept: bool) -> None:
    """A committed history gets the checkout's mtime (here: now): --since reads its
    turn headers, else its file name."""
    repo = make_repo(tmp_path / "repo")
    recent = time.gmtime(time.time() - 3600)
    name = name.format(recent_name=time.strftime("%Y-%m-%d_%H-%M-%SZ", recent))
    times = [t.format(recent=time.strftime("%Y-%m-%d %H:%M:%SZ", recent)) for t in turn_times]
    path = specstory_history(repo, name, times)
    assert list_sources(repo, tmp_path / "home", "--since", since) == ([(str(path), "specstory")] if kept else [])


# -- one conversation, one reading ----------------------------------------------------

SESSION = "3f2a9c4e-8b1d-4e6f-a2c7-5d9e0b1f4a36"


def build_json(repo: Path, home: Path, *args: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    proc = main_process(["build", "--json", "--memory", "AGENTS.md", *args], repo, {**clean, "HOME": str(home)})
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def claude_jsonl(projects: Path, repo: Path, session: str, sidechain: bool = False, name: str = "") -> Path:
    path = projects / claude_code_dir(str(repo)) / (name or f"{session}.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "parentUuid": None, "isSidechain": sidechain, "type": "user", "cwd": str(repo), "sessionId": session,
        "uuid": "u1", "message": {"role": "user", "content": RULE},
    }) + "\n")
    return path


def test_a_specstory_copy_of_a_read_claude_session_is_not_read_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    jsonl = claude_jsonl(home / ".claude" / "projects", repo, SESSION)
    specstory_history(repo, "2026-01-20_10-00-00Z-push-rules.md", ["2026-01-20 10:00:00Z"], session=SESSION)
    other = specstory_history(repo, "2026-01-21_10-00-00Z-other.md", ["2026-01-21 10:00:00Z"],
                              session="0b7d3e5f-1a2c-4d6e-8f90-a1b2c3d4e5f6")
    shown = "~" + str(jsonl)[len(str(home)):]
    assert list_sources(repo, home) == [(shown, "claude"), (str(other), "specstory")]
    stats = build_json(repo, home)["stats"]
    assert stats["skipped_same_session"] == 1  # type: ignore[index]
    assert stats["dropped_duplicate"] == 1  # type: ignore[index]  # the other conversation's copy only


def test_the_same_session_saved_under_two_names_is_read_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    short = specstory_history(repo, "2026-01-20_10-00-00Z.md", ["2026-01-20 10:00:00Z"], session=SESSION)
    longer = specstory_history(repo, "2026-01-20_10-00-00Z-push-rules.md",
                               ["2026-01-20 10:00:00Z", "2026-01-20 10:05:00Z"], session=SESSION)
    assert list_sources(repo, home) == [(str(longer), "specstory")]
    # Named outright, too: the later (larger) save is the one read.
    assert list_sources(repo, home, str(longer), str(short)) == [(str(longer), "specstory")]
    assert build_json(repo, home)["stats"]["skipped_same_session"] == 1  # type: ignore[index]


def test_a_subagent_file_naming_its_parent_session_does_not_hide_the_specstory_copy(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    agent = claude_jsonl(home / ".claude" / "projects", repo, SESSION, sidechain=True, name="agent-a1b2c3.jsonl")
    history = specstory_history(repo, "2026-01-20_10-00-00Z.md", ["2026-01-20 10:00:00Z"], session=SESSION)
    shown = "~" + str(agent)[len(str(home)):]
    assert list_sources(repo, home, str(agent), str(history)) == [(shown, "claude"), (str(history), "specstory")]


def test_a_folder_of_specstory_histories_is_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    history = specstory_history(repo, "2026-01-20_10-00-00Z.md", ["2026-01-20 10:00:00Z"])
    (repo / ".specstory" / "history" / "README.md").write_text("# Chats\n\n#### not a transcript\n")
    assert list_sources(repo, tmp_path / "home", ".specstory") == [(".specstory/history/2026-01-20_10-00-00Z.md",
                                                                   "specstory")]
    assert history.exists()


def copilot_session(copilot_home: Path, cwd: Path | str, session: str, legacy: bool = False) -> Path:
    """A Copilot CLI session: session-state/<id>/events.jsonl (older: session-state/<id>.jsonl)."""
    state = copilot_home / "session-state"
    path = state / f"{session}.jsonl" if legacy else state / session / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in (
        {"type": "session.start", "id": "e1", "parentId": None, "timestamp": "2026-08-03T09:00:00.000Z",
         "data": {"sessionId": session, "producer": "copilot-agent", "context": {"cwd": str(cwd)}}},
        {"type": "user.message", "id": "e2", "parentId": "e1", "timestamp": "2026-08-03T09:00:01.000Z",
         "data": {"content": RULE}},
    )) + "\n")
    return path


def test_copilot_cli_sessions_are_found_by_the_cwd_of_their_session_start(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "web").mkdir()
    home = tmp_path / "home"
    mine = copilot_session(home / ".copilot", repo, "a1")
    legacy = copilot_session(home / ".copilot", repo / "web", "b2", legacy=True)
    copilot_session(home / ".copilot", tmp_path / "elsewhere", "c3")
    (home / ".copilot" / "session-state" / "a1" / "checkpoints").mkdir()
    (home / ".copilot" / "session-state" / "a1" / "checkpoints" / "001.json").write_text("{}")  # not a transcript
    shown = lambda p: "~" + str(p)[len(str(home)):]  # noqa: E731
    # As a folder is walked: its files, then its subfolders.
    assert list_sources(repo, home) == [(shown(legacy), "copilot"), (shown(mine), "copilot")]
    elsewhere = tmp_path / "copilot-home"
    moved = copilot_session(elsewhere, repo, "d4")
    assert list_sources(repo, home, COPILOT_HOME=str(elsewhere)) == [(str(moved), "copilot")]


def opencode_store(data_home: Path, name: str, directories: list[str]) -> Path:
    import contextlib
    import sqlite3
    path = data_home / "opencode" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript("CREATE TABLE session (id TEXT, parent_id TEXT, directory TEXT, time_created INTEGER);"
                         "CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, data TEXT);"
                         "CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, data TEXT);")
        db.executemany("INSERT INTO session VALUES (?, NULL, ?, 1)", [(f"ses_{i}", d) for i, d in enumerate(directories)])
        db.commit()
    return path


def test_opencode_databases_holding_a_session_of_the_repository_are_found(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    data = home / ".local" / "share"
    mine = opencode_store(data, "opencode.db", [str(tmp_path / "elsewhere"), str(repo / "src")])
    opencode_store(data, "opencode-dev.db", [str(tmp_path / "elsewhere")])  # no session here
    (data / "opencode" / "auth.json").write_text("{}")
    shown = "~" + str(mine)[len(str(home)):]
    assert list_sources(repo, home) == [(shown, "opencode")]
    moved = opencode_store(tmp_path / "xdg", "opencode-beta.db", [str(repo)])
    assert list_sources(repo, home, XDG_DATA_HOME=str(tmp_path / "xdg")) == [(str(moved), "opencode")]


@pytest.mark.parametrize("tool", ["codex", "gemini"])
def test_a_specstory_copy_of_a_codex_or_gemini_session_named_with_it_is_not_read_again(tmp_path: Path, tool: str) -> None:
    """SpecStory names a Codex session by its session_meta id, a Gemini chat by its sessionId."""
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    if tool == "codex":
        own = codex_rollout(home / ".codex", repo, f"rollout-2026-01-20T10-00-00-{SESSION}.jsonl")
        text = own.read_text().replace(f'"id": "rollout-2026-01-20T10-00-00-{SESSION}.jsonl"', f'"id": "{SESSION}"')
        own.write_text(text)
    else:
        own = gemini_chat(home, repo, "session-2026-01-20T10-00-abcd.json")
        own.write_text(own.read_text().replace('"sessionId": "session-2026-01-20T10-00-abcd.json"',
                                               f'"sessionId": "{SESSION}"'))
    assert SESSION in own.read_text()
    copy = specstory_history(repo, "2026-01-20_10-00-00Z.md", ["2026-01-20 10:00:00Z"], session=SESSION)
    shown = "~" + str(own)[len(str(home)):]
    assert list_sources(repo, home, str(own), str(copy)) == [(shown, tool)]
    other = copy.with_name("2026-01-21_10-00-00Z.md")
    other.write_text(copy.read_text().replace(SESSION, "0b7d3e5f-1a2c-4d6e-8f90-a1b2c3d4e5f6"))
    assert list_sources(repo, home, str(own), str(other)) == [(shown, tool), (str(other), "specstory")]


def test_discovery_says_when_it_finds_nothing_or_passes_sessions_over(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    clean = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}

    def build() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([*MEMORY_DIFF, "build", "--memory", "m.md"], cwd=repo,
                              env={**clean, "HOME": str(home)}, capture_output=True, timeout=60)

    done = build()
    assert (done.returncode, done.stdout) == (0, b"")
    assert done.stderr.decode() == (f"memory-diff: no sessions found for {repo} (Claude Code, Codex, Gemini CLI, Copilot CLI, OpenCode, SpecStory; "
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
