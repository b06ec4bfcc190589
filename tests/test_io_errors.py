"""Output errors and input that is no transcript: one error line and exit 2, never a
traceback and never the exit 1 that the hook reads as "proposals pending"."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF  # noqa: E402
RULE = "Never push directly to main because the release job deploys every commit."


def native(*texts: str) -> bytes:
    return b"".join(json.dumps({"role": "user", "text": t}).encode() + b"\n" for t in texts)


def run(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MEMORY_DIFF, *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=120)


def one_error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err)
    assert err.count("\n") == 1 and err.startswith("memory-diff: error: "), err
    assert "Traceback" not in err
    return err


# -- output errors ----------------------------------------------------------------------

COMMANDS = [
    pytest.param(["build", "t.jsonl", "--memory", "m.md"], id="build-patch"),
    pytest.param(["build", "t.jsonl", "--memory", "m.md", "--json"], id="build-json"),
    pytest.param(["build", "t.jsonl", "--memory", "m.md", "--explain"], id="build-explain"),
    pytest.param(["build", "t.jsonl", "--memory", "m.md", "--list-sources"], id="list-sources"),
    pytest.param(["lint", "bad.md"], id="lint"),
]


def setup_inputs(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_bytes(native(RULE))
    (tmp_path / "bad.md").write_text("- Ask jane.doe@acme-corp.io before a release.\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", COMMANDS)
def test_full_disk_is_one_error_line(tmp_path: Path, args: list[str]) -> None:
    setup_inputs(tmp_path)
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*MEMORY_DIFF, *args], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, timeout=120)
    err = one_error_line(done)
    assert "standard output: No space left on device" in err


@pytest.mark.parametrize("args", COMMANDS)
def test_closed_stdout_is_one_error_line(tmp_path: Path, args: list[str]) -> None:
    setup_inputs(tmp_path)
    done = subprocess.run(["bash", "-c", 'exec >&-; exec "$@"', "bash", *MEMORY_DIFF, *args],
                          cwd=tmp_path, stderr=subprocess.PIPE, timeout=120)
    assert "standard output: closed" in one_error_line(done)


def test_broken_pipe_is_quiet_and_exit_0(tmp_path: Path) -> None:
    # Enough --explain output to fill the pipe, read by a reader that leaves at once.
    (tmp_path / "t.jsonl").write_bytes(native(*[f"Sentence {n} says nothing at all here." for n in range(20000)]))
    proc = subprocess.Popen([*MEMORY_DIFF, "build", "t.jsonl", "--memory", "m.md", "--explain"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read()
    assert (proc.wait(timeout=120), err) == (0, b"")


def test_closed_stdin_is_one_error_line(tmp_path: Path) -> None:
    done = subprocess.run(["bash", "-c", 'exec <&-; exec "$@"', "bash", *MEMORY_DIFF,
                           "build", "-", "--memory", "m.md"], cwd=tmp_path, capture_output=True, timeout=120)
    assert "-: standard input is closed" in one_error_line(done)


# -- input that is no transcript ----------------------------------------------------------

ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4
CLAUDE_MD = b"# CLAUDE.md\n\n## Build\n\n- Run `make test` before pushing because CI is slow.\n"
CLAUDE_LINE = json.dumps({"type": "user", "sessionId": "s", "cwd": "/r",
                          "message": {"role": "user", "content": RULE}}).encode() + b"\n"
SWE_AGENT = json.dumps({"trajectory": [{"action": "ls", "observation": "a.py", "thought": "Look."}],
                        "history": [{"role": "system", "content": "You are an agent."}],
                        "info": {"exit_status": "submitted"}}).encode()
MINI_SWE = json.dumps({"info": {"exit_status": "Submitted", "mini_version": "1.0"},
                       "messages": [{"role": "user", "content": RULE}],
                       "trajectory_format": "mini-swe-agent-1"}).encode()
OPENHANDS = json.dumps([{"id": 0, "source": "user", "message": RULE, "action": "message"},
                        {"id": 1, "source": "agent", "observation": "run", "content": "ok"}]).encode()

# id, file name, bytes, extra arguments, what the one error line says after the name.
NOT_TRANSCRIPTS = [
    pytest.param("random.jsonl", bytes(range(256)) * 8, [], "not a transcript: binary data, no line is a JSON record",
                 id="random-bytes"),
    pytest.param("tool", ELF, [], "not a transcript: binary data, no line is a JSON record", id="elf-binary"),
    pytest.param("notes.txt", b"hello\nworld\n", [], "not a transcript: none of its 2 lines is a JSON record",
                 id="plain-text"),
    pytest.param("live.jsonl", b'{"parentUuid": null, "type": "user", "message": {"role": "us', [],
                 "not a transcript: none of its 1 line is a JSON record", id="only-line-half-written"),
    pytest.param("CLAUDE.md", CLAUDE_MD, [], "not a transcript: a Markdown file, not an Aider chat history",
                 id="memory-file-named-as-transcript"),
    pytest.param("data.jsonl", b'{"a": 1}\n{"b": 2}\n', [], "not a transcript: 2 records of no format memory-diff reads",
                 id="json-of-no-format"),
    pytest.param("s.jsonl", CLAUDE_LINE, ["--format", "codex"],
                 "not a transcript: none of its 1 record is a codex record (--format codex)", id="forced-codex-on-claude"),
    pytest.param("s.jsonl", CLAUDE_LINE, ["--format", "native"],
                 "not a transcript: none of its 1 record is a native record (--format native)", id="forced-native-on-claude"),
    pytest.param("s.jsonl", CLAUDE_LINE, ["--format", "aider"],
                 "not a transcript: no line is an Aider chat line (#### )", id="forced-aider-on-claude"),
    pytest.param("x.json", b'{"a": 1}', ["--format", "gemini"],
                 "not a transcript: a JSON document with no list of messages (--format gemini)",
                 id="forced-gemini-on-object"),
    pytest.param("run.traj", SWE_AGENT, [], "a SWE-agent trajectory: a format memory-diff recognises but does not read",
                 id="swe-agent"),
    pytest.param("run.traj.json", MINI_SWE, [],
                 "a mini-swe-agent trajectory: a format memory-diff recognises but does not read "
                 "(an autonomous run, with no human user in it)", id="mini-swe-agent"),
    pytest.param("trajectory.json", OPENHANDS, [],
                 "an OpenHands event stream: a format memory-diff recognises but does not read", id="openhands"),
]


@pytest.mark.parametrize(("name", "data", "args", "says"), NOT_TRANSCRIPTS)
def test_named_file_that_is_no_transcript_is_an_error(tmp_path: Path, name: str, data: bytes, args: list[str],
                                                       says: str) -> None:
    (tmp_path / name).write_bytes(data)
    done = run(tmp_path, "build", name, "--memory", "m.md", *args)
    assert one_error_line(done) == f"memory-diff: error: {name}: {says}\n"
    assert done.stdout == b""
    # Standard input is named outright too.
    if not name.endswith((".md", ".json", ".traj")):
        piped = run(tmp_path, "build", "-", "--memory", "m.md", *args, stdin=data)
        assert one_error_line(piped) == f"memory-diff: error: -: {says}\n"


@pytest.mark.parametrize(("name", "data", "args", "says"),
                         [p for p in NOT_TRANSCRIPTS if p.values[0].endswith((".jsonl", ".json"))])
def test_the_same_file_in_a_folder_is_passed_over(tmp_path: Path, name: str, data: bytes, args: list[str],
                                                  says: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / name).write_bytes(data)
    (folder / "z.jsonl").write_bytes(native(RULE) if "--format" not in args else CLAUDE_LINE)
    done = run(tmp_path, "build", "sessions", "--memory", "m.md", "--json", *args)
    if "--format" in args:  # the good file is of another format than the forced one
        assert done.returncode == 0 and json.loads(done.stdout)["stats"]["skipped_files"] == 2
        return
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert [p["text"] for p in result["proposed"]] == [RULE]
    assert result["stats"]["skipped_files"] == 1


@pytest.mark.parametrize(("name", "data", "args"), [
    pytest.param("empty.jsonl", b"", [], id="empty-file"),
    pytest.param("blank.jsonl", b"\n\n", [], id="blank-lines"),
    pytest.param("tools.jsonl", json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user", "content": [
        {"type": "tool_result", "content": "ok"}]}}).encode() + b"\n", [], id="claude-session-without-prose"),
    pytest.param("snap.jsonl", json.dumps({"type": "file-history-snapshot", "messageId": "m",
                                           "snapshot": {}}).encode() + b"\n", [], id="claude-snapshots-only"),
    pytest.param("empty.json", b'{"messages": []}', [], id="document-without-messages"),
    pytest.param("s.jsonl", CLAUDE_LINE, ["--format", "claude"], id="forced-format-that-fits"),
    pytest.param("sys.jsonl", b'{"role": "system", "content": "Be brief."}\n', [], id="messages-without-prose"),
])
def test_recognised_session_without_prose_is_fine(tmp_path: Path, name: str, data: bytes, args: list[str]) -> None:
    (tmp_path / name).write_bytes(data)
    done = run(tmp_path, "build", name, "--memory", "m.md", *args)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""


def test_unreadable_folder_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Run in-process: the tests may run as root, whom no permission bit stops.
    import memory_diff as md
    folder = tmp_path / "sessions"
    (folder / "sub").mkdir(parents=True)
    real_scandir = os.scandir

    def scandir(path: object) -> object:
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(md.UserError) as caught:
        md.expand_inputs([str(folder)])
    assert str(caught.value) == f"{folder / 'sub'}: cannot read the folder: Permission denied"
    assert md.expand_inputs([str(folder)], strict=False) == ([], set())  # discovery goes on
