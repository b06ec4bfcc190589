"""End-to-end reader tests: each fixture in tests/fixtures/formats/<case>/ goes through the CLI.

A case directory holds one transcript (named as the real tool names it) and expected.json:
  format   the reader the sniffer must pick (and the name accepted by --format)
  args     extra CLI arguments for the case
  bullets  [[role, text], ...] or [[role, line, text], ...]: exactly what `build --json`
           proposes, in transcript order (with the line, when given, of its source)
  timestamps (optional) each bullet's source timestamp, in order
  absent   substrings planted in content that must be skipped; none may reach stdout
  stats    (optional) counters that must have exactly these values
Skipped content carries signal-shaped sentences on purpose, so a leak shows up as a bullet.
"""
from __future__ import annotations

import base64
import contextlib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
from command import MEMORY_DIFF, main_process  # noqa: E402
FIXTURES = HERE / "fixtures" / "formats"


def _load_cases() -> list[Any]:
    params = []
    for case_dir in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        transcripts = [p for p in case_dir.iterdir() if p.name != "expected.json"]
        assert len(transcripts) == 1, f"{case_dir}: expected exactly one transcript"
        expected = json.loads((case_dir / "expected.json").read_text(encoding="utf-8"))
        params.append(pytest.param(transcripts[0], expected, id=case_dir.name))
    return params


CASES = _load_cases()


def run_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`main` in this process (every reader on every fixture: hundreds of runs), inside this
    repository: --no-cache, so its git directory never holds a cache; one job, no workers."""
    build = ["--no-cache", "--jobs", "1"] if args[:1] == ("build",) else []
    return main_process([*args, *build], ROOT)


def build_json(transcript: Path, tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    proc = run_cli(
        "build", str(transcript),
        "--memory", str(tmp_path / "memory.md"),
        "--max-add", "100", "--min-score", "0",  # readers under test, not the score
        "--json",
        *extra,
    )
    stdout = proc.stdout.decode("utf-8", errors="replace")
    stderr = proc.stderr.decode("utf-8", errors="replace")
    assert proc.returncode == 0, f"exit {proc.returncode}\nstderr:\n{stderr}"
    assert "Traceback" not in stderr, stderr
    result = json.loads(stdout) if stdout.strip() else {"stats": {}, "proposed": []}
    return result, stdout


def bullets_of(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["source"]["role"], p["text"]) for p in result["proposed"]]


def check(expected: dict[str, Any], result: dict[str, Any], stdout: str) -> None:
    if all(len(b) == 3 for b in expected["bullets"]) and expected["bullets"]:
        got = [(p["source"]["role"], p["source"]["line"], p["text"]) for p in result["proposed"]]
        assert got == [tuple(b) for b in expected["bullets"]]
    else:
        assert bullets_of(result) == [tuple(b) for b in expected["bullets"]]
    if "timestamps" in expected:
        assert [p["source"]["timestamp"] for p in result["proposed"]] == expected["timestamps"]
    for needle in expected["absent"]:
        assert needle not in stdout, f"skipped content leaked: {needle!r}"
    for key, value in expected.get("stats", {}).items():
        assert result["stats"].get(key) == value, f"stats[{key!r}]"


@pytest.mark.parametrize(("transcript", "expected"), CASES)
def test_sniffed_format(transcript: Path, expected: dict[str, Any], tmp_path: Path) -> None:
    result, stdout = build_json(transcript, tmp_path, *expected["args"])
    check(expected, result, stdout)


@pytest.mark.parametrize(("transcript", "expected"), CASES)
def test_forced_format_and_list_sources(
    transcript: Path, expected: dict[str, Any], tmp_path: Path,
) -> None:
    fmt = expected["format"]
    result, stdout = build_json(transcript, tmp_path, *expected["args"], "--format", fmt)
    check(expected, result, stdout)

    proc = run_cli("build", "--list-sources", str(transcript))
    listing = proc.stdout.decode("utf-8", errors="replace")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", errors="replace")
    assert re.search(rf"(?<![\w-]){re.escape(fmt)}(?![\w-])", listing), listing


# -- generated in tmp_path: inputs too big, or too broken, to keep as files ---------------

BEFORE = "We decided to keep uploaded originals for ninety days because customers re-crop them."
AFTER = "Never resize images on the request path because large originals stall the web workers."


def claude_line(type_: str, content: Any, n: int, **extra: Any) -> str:
    message: dict[str, Any] = {"role": type_, "content": content}
    if type_ == "assistant":
        message.update({"model": "claude-opus-4-5-20251101", "id": f"msg_gen{n}",
                        "type": "message", "stop_reason": None})
    record = {
        "parentUuid": None if n == 0 else f"00000000-0000-4000-8000-{n - 1:012d}",
        "isSidechain": False, "userType": "external", "cwd": "/workspace/demo-app",
        "sessionId": "00000000-0000-4000-8000-aaaaaaaaaaaa", "version": "2.1.12",
        "type": type_, "message": message, **extra,
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-01-20T04:16:{n:02d}.000Z",
    }
    return json.dumps(record, ensure_ascii=False)


def huge_image_result() -> list[dict[str, Any]]:
    data = base64.b64encode(bytes(range(256)) * (4 * 1024 * 1024 // 256)).decode("ascii")
    return [{"type": "tool_result", "tool_use_id": "toolu_gen_big", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
    ]}]


def huge_file_result() -> list[dict[str, Any]]:
    lines = [
        f"{i:6d}\u2192# Always rebuild LEAKHUGEFILE shard {i} before release because stale shards break search."
        for i in range(1, 60_000)
    ]
    return [{"type": "tool_result", "tool_use_id": "toolu_gen_big", "content": "\n".join(lines)}]


@pytest.mark.parametrize(
    "make_result",
    [pytest.param(huge_image_result, id="base64_image"), pytest.param(huge_file_result, id="huge_file")],
)
def test_claude_huge_tool_result_line(make_result: Any, tmp_path: Path) -> None:
    big = claude_line("user", make_result(), 2, toolUseResult={"type": "text"})
    assert len(big) > 5_000_000
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        "\n".join([
            claude_line("user", BEFORE, 0),
            claude_line("assistant", [{"type": "tool_use", "id": "toolu_gen_big", "name": "Read",
                                       "input": {"file_path": "/workspace/demo-app/big.txt"}}], 1),
            big,
            claude_line("assistant", [{"type": "text", "text": AFTER}], 3),
        ]) + "\n",
        encoding="utf-8",
    )
    result, stdout = build_json(transcript, tmp_path)
    assert bullets_of(result) == [("user", BEFORE), ("assistant", AFTER)]
    assert "LEAKHUGEFILE" not in stdout
    assert result["stats"]["malformed"] == 0


def test_native_truncated_last_line(tmp_path: Path) -> None:
    first = {"role": "user", "text": BEFORE}
    second = {"role": "assistant", "text": AFTER}
    half = json.dumps({"role": "assistant",
                       "text": "Always LEAKHALFLINE keep partial records because they finish later."})
    transcript = tmp_path / "live.jsonl"
    transcript.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n" + half[: len(half) // 2],
                          encoding="utf-8")
    result, stdout = build_json(transcript, tmp_path)
    assert bullets_of(result) == [("user", BEFORE), ("assistant", AFTER)]
    assert result["stats"]["malformed"] == 1
    assert "LEAKHALFLINE" not in stdout


def test_claude_two_records_glued_on_one_line(tmp_path: Path) -> None:
    transcript = tmp_path / "glued.jsonl"
    transcript.write_text(
        claude_line("user", BEFORE, 0) + claude_line("assistant", [{"type": "text", "text": AFTER}], 1) + "\n",
        encoding="utf-8",
    )
    result, _ = build_json(transcript, tmp_path)
    assert bullets_of(result) == [("user", BEFORE), ("assistant", AFTER)]


# -- recognised, but read by no reader: named in the error, never "use --format" ---------

def sqlite_file(path: Path, table: str) -> None:
    import sqlite3
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(f"CREATE TABLE {table} (key TEXT, value BLOB)")
        db.commit()


NOT_READ_CASES = [
    pytest.param("run.traj", '{"environment": "swe", "trajectory": [], "history": [], "info": {}}',
                 "a SWE-agent trajectory", id="swe-agent"),
    pytest.param("conversations.json", '[{"title": "t", "mapping": {}, "current_node": "n"}]',
                 "a ChatGPT data export", id="chatgpt-export"),
    pytest.param("conversations.json", '[{"uuid": "u", "name": "n", "chat_messages": []}]',
                 "a Claude.ai data export", id="claude-ai-export"),
    pytest.param("trajectory.json", '[{"id": 0, "source": "user", "action": "message", "message": "hi"}]',
                 "an OpenHands event stream", id="openhands"),
    pytest.param("history.json", '[{"type": "human", "data": {"content": "hi"}}]', "LangChain messages",
                 id="langchain"),
    pytest.param("chat.json", '{"version": 3, "requesterUsername": "me", "responderUsername": "GitHub Copilot", '
                              '"requests": []}', "a VS Code Copilot Chat session", id="vscode-copilot-chat"),
    pytest.param("msg_01JABCDEFGHJKMNPQRSTVWXYZ0.json",
                 '{"id": "msg_01JABCDEFGHJKMNPQRSTVWXYZ0", "sessionID": "ses_01JABCDEFGHJKMNPQRSTVWXYZ0", '
                 '"role": "user", "time": {"created": 1}}', "an OpenCode storage file", id="opencode-legacy-file"),
    pytest.param("state.vscdb", "cursorDiskKV", "a Cursor or VS Code state database", id="cursor-state-db"),
    pytest.param("other.db", "notes", "an SQLite database that is no OpenCode store", id="other-sqlite"),
]


@pytest.mark.parametrize(("name", "content", "named"), NOT_READ_CASES)
def test_a_recognised_format_that_is_not_read_is_named(tmp_path: Path, name: str, content: str, named: str) -> None:
    path = tmp_path / name
    if name.endswith((".vscdb", ".db")):
        sqlite_file(path, content)
    else:
        path.write_text(content, encoding="utf-8")
    proc = run_cli("build", str(path), "--memory", str(tmp_path / "memory.md"))
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and proc.stdout == b""
    assert stderr.startswith(f"memory-diff: error: {path}: {named}") and stderr.count("\n") == 1, stderr
    assert "--format" not in stderr
    # In a folder, such a file is passed over and counted, as any file that is no transcript.
    if name.endswith(".json"):
        walked = run_cli("build", str(tmp_path), "--memory", str(tmp_path / "memory.md"), "--stats")
        assert walked.returncode == 0 and b"skipped_files=1\n" in walked.stderr


# -- a language the rules do not know: said with --stats ----------------------------------

RU = "Мы решили всегда хранить ключи в конфиге, потому что так проще для всех."
JA = "設定ファイルは必ずリポジトリの外に置いてください、理由は漏洩を防ぐためです。"
ZH = "我们决定把配置文件放在仓库外面，因为这样可以避免泄露密钥。"
EN = "We decided to keep the config outside the repository because it holds keys."


@pytest.mark.parametrize(("texts", "counters", "note"), [
    pytest.param([RU, RU, EN], {"uncovered_script": 2, "uncovered_script_cyrillic": 2}, "cyrillic", id="russian"),
    pytest.param([JA, JA, RU], {"uncovered_script": 3, "uncovered_script_kana": 2, "uncovered_script_cyrillic": 1},
                 "kana, cyrillic", id="japanese-then-russian"),
    pytest.param([RU, EN, ZH], {"uncovered_script": 1, "uncovered_script_cyrillic": 1}, None, id="mostly-covered"),
    pytest.param([ZH, EN], {"uncovered_script": 0}, None, id="chinese-and-english"),
])
def test_stats_say_when_most_prose_is_in_a_script_the_rules_do_not_cover(
        tmp_path: Path, texts: list[str], counters: dict[str, int], note: str | None) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps({"role": "user", "text": t}, ensure_ascii=False) + "\n" for t in texts),
                          encoding="utf-8")
    proc = run_cli("build", str(transcript), "--memory", str(tmp_path / "memory.md"), "--stats")
    assert proc.returncode == 0
    lines = proc.stderr.decode("utf-8").splitlines()
    stats = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("memory-diff:"))
    assert {k: int(stats.get(k, 0)) for k in counters} == counters
    notes = [line for line in lines if line.startswith("memory-diff: note:")]
    assert notes == ([f"memory-diff: note: most prose is in a script the rules do not cover ({note}): "
                      "they know English and Chinese, so nothing in it can be proposed"] if note else [])


# -- OpenCode: one SQLite database for every project, read for the current repository ------

OPENCODE_SCHEMA = """
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
  directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
"""


def opencode_db(path: Path, sessions: list[tuple[str, str | None, str, list[tuple[str, dict[str, Any], list[Any]]]]]) -> None:
    """sessions: (id, parent id, directory, [(role, extra message data, parts)]), written
    out of order so that the reader's ordering is what is tested."""
    import sqlite3
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(OPENCODE_SCHEMA)
        for s_index, (sid, parent, directory, messages) in reversed(list(enumerate(sessions))):
            db.execute("INSERT INTO session VALUES (?, 'prj', ?, 'slug', ?, 'title', '1.0', ?, ?)",
                       (sid, parent, directory, 1770000000000 + s_index, 1770000000000 + s_index))
            for m_index, (role, extra, parts) in reversed(list(enumerate(messages))):
                mid, created = f"msg_{sid}_{m_index:03d}", 1770000000000 + 60_000 * (10 * s_index + m_index)
                db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                           (mid, sid, created, created, json.dumps({"role": role, "time": {"created": created}, **extra})))
                for p_index, part in reversed(list(enumerate(parts))):
                    db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                               (f"prt_{mid}_{p_index:03d}", mid, sid, created, created, json.dumps(part)))
        db.commit()


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


OC_USER = "We must never ship the billing service on Fridays because the on-call rota is thin."
OC_ROOT = "The root cause is that the deploy job reads the rota from a stale cache."
OC_DECIDED = "We decided to read the rota from the scheduler API instead of the cache."
OC_SUB = "The subagent found that the scheduler API must be called with the team id."
OC_SUMMARY = "The user decided to freeze Friday deploys because the rota is thin."


def opencode_case(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "svc").mkdir()
    db = tmp_path / "opencode.db"
    opencode_db(db, [
        ("ses_1", None, str(repo), [
            ("user", {"agent": "build"}, [
                text(OC_USER),
                text("Called the Read tool: Always LEAKSYNTHETIC read the config because it changes.", synthetic=True),
            ]),
            ("assistant", {"modelID": "m", "parentID": "msg_ses_1_000"}, [
                {"type": "step-start"},
                {"type": "reasoning", "text": "The user must LEAKREASONING be right because they said so.", "time": {"start": 1}},
                {"type": "tool", "tool": "bash", "callID": "c1", "state": {
                    "status": "completed", "input": {"command": "grep -r rota"},
                    "output": "Never LEAKTOOLOUTPUT trust the cache because it is stale.", "title": "grep", "metadata": {},
                    "time": {"start": 1, "end": 2}}},
                text(OC_ROOT),
                {"type": "step-finish", "reason": "stop", "cost": 0, "tokens": {}},
            ]),
            ("assistant", {"summary": True}, [text(OC_SUMMARY)]),
            ("assistant", {}, [text(OC_DECIDED)]),
        ]),
        ("ses_2", "ses_1", str(repo), [("assistant", {}, [text(OC_SUB)])]),
        ("ses_3", None, str(tmp_path / "elsewhere"), [("user", {}, [text("Always LEAKOTHERPROJECT pin the versions because builds drift.")])]),
        ("ses_4", None, str(repo) + "-fork", [("user", {}, [text("Never LEAKSIBLING merge on red because CI is the gate.")])]),
        ("ses_5", None, str(repo / "svc"), [("user", {}, [text("Never LEAKIGNORED do it.", ignored=True)])]),
    ])
    return repo, db


@pytest.mark.parametrize(("args", "bullets"), [
    pytest.param([], [("user", 1, OC_USER), ("assistant", 2, OC_ROOT), ("assistant", 4, OC_DECIDED)], id="default"),
    pytest.param(["--include-sidechains", "--include-summaries"],
                 [("user", 1, OC_USER), ("assistant", 2, OC_ROOT), ("assistant", 3, OC_SUMMARY),
                  ("assistant", 4, OC_DECIDED), ("assistant", 5, OC_SUB)], id="sidechains-and-summaries"),
    pytest.param(["--format", "opencode"], [("user", 1, OC_USER), ("assistant", 2, OC_ROOT), ("assistant", 4, OC_DECIDED)],
                 id="forced"),
])
def test_opencode_database(tmp_path: Path, args: list[str], bullets: list[tuple[str, int, str]]) -> None:
    repo, db = opencode_case(tmp_path)
    proc = subprocess.run([*MEMORY_DIFF, "build", str(db), "--memory", "AGENTS.md", "--json",
                           "--min-score", "0", "--max-add", "100", *args], cwd=repo, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    assert [(p["source"]["role"], p["source"]["line"], p["text"]) for p in doc["proposed"]] == bullets
    assert doc["proposed"][0]["source"]["timestamp"] == "2026-02-02T02:40:00Z"
    assert b"LEAK" not in proc.stdout
    if not args:
        stats = doc["stats"]
        assert (stats["lines"], stats["skipped_sidechain"], stats["skipped_summary"], stats["skipped_injected"]) == (6, 1, 1, 1)
