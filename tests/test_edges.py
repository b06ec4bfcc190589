"""Edge cases from review: inputs that once crashed, leaked or were misread."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memory_diff as md

ROOT = Path(__file__).resolve().parent.parent
RULE = "Never push directly to main because the release job deploys every commit."


def run(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, str(ROOT / "memory_diff.py"), *args], cwd=cwd,
                          input=stdin, capture_output=True, timeout=120)


def native(*texts: str) -> bytes:
    return b"".join(json.dumps({"role": "user", "text": t}).encode() + b"\n" for t in texts)


def one_error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("memory-diff: error: "), err
    assert "Traceback" not in err
    return err


# -- inputs that are errors, and say so in one line, whatever the number of jobs ---------

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_bad_document_is_one_error_line_with_any_jobs(tmp_path: Path, jobs: str) -> None:
    (tmp_path / "ok.jsonl").write_bytes(native(RULE))
    (tmp_path / "bad.json").write_bytes(b'{"messages": [')
    err = one_error_line(run(tmp_path, "build", "ok.jsonl", "bad.json", "--jobs", jobs))
    assert "bad.json" in err


@pytest.mark.parametrize("jobs", ["1", "2", "3"])
def test_of_two_bad_files_the_first_named_is_reported(tmp_path: Path, jobs: str) -> None:
    # Workers take the largest files first; the error is still the first in input order.
    (tmp_path / "ok.jsonl").write_bytes(native(RULE))
    (tmp_path / "small.json").write_bytes(b'{"messages": [')
    (tmp_path / "large.json").write_bytes(b'{"messages": [' + b" " * 100_000)
    err = one_error_line(run(tmp_path, "build", "ok.jsonl", "small.json", "large.json", "--jobs", jobs))
    assert "small.json" in err and "large.json" not in err


@pytest.mark.parametrize(("args", "setup", "says"), [
    pytest.param(["--memory", "folder"], "folder", "is a folder", id="memory-is-a-folder"),
    pytest.param(["--memory", "m.md", "--seen", "m.md"], "", "cannot be the memory file", id="seen-is-memory"),
    pytest.param(["--section", "Rules\n+x"], "", "one line", id="section-with-newline"),
    pytest.param(["-", "-"], "", "only once", id="stdin-twice"),
    pytest.param(["--since", "1" + "0" * 400 + "d"], "", "", id="huge-since-is-not-a-crash"),
])
def test_argument_errors(tmp_path: Path, args: list[str], setup: str, says: str) -> None:
    if setup:
        (tmp_path / setup).mkdir()
    (tmp_path / "t.jsonl").write_bytes(native(RULE))
    transcript = [] if "-" in args else ["t.jsonl"]
    done = run(tmp_path, "build", *transcript, *args, stdin=native(RULE))
    if says:
        assert says in one_error_line(done)
    else:
        assert done.returncode in (0, 2) and b"Traceback" not in done.stderr


# -- inputs that are not errors ---------------------------------------------------------

@pytest.mark.parametrize(("name", "data"), [
    pytest.param("blank-first.jsonl", b"\n" + native(RULE), id="blank-first-line"),
    pytest.param("types.jsonl", b'{"type": {}}\n{"role": ["user"], "text": "x"}\n{"type": [1], "payload": 2}\n'
                 + native(RULE), id="odd-field-types"),
    pytest.param("ts.jsonl", json.dumps({"role": "user", "text": RULE, "timestamp": 1e300}).encode() + b"\n",
                 id="timestamp-overflow"),
])
def test_odd_jsonl_is_read_not_fatal(tmp_path: Path, name: str, data: bytes) -> None:
    (tmp_path / name).write_bytes(data)
    done = run(tmp_path, "build", name, "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr


def test_folder_passes_over_files_that_are_no_transcripts(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(native(RULE))
    (folder / "package.json").write_bytes(b'{"name": "x", "version": "1.0.0"}')
    (folder / "README.md").write_bytes(b"# Readme\n\n#### Options\n\nNever use the old flags because they break.\n")
    done = run(tmp_path, "build", "sessions", "--json")
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert [p["text"] for p in result["proposed"]] == [RULE]
    assert result["stats"]["skipped_files"] == 1
    listed = run(tmp_path, "build", "sessions", "--list-sources").stdout.decode()
    assert "README.md" not in listed


def test_one_line_gemini_session_is_gemini(tmp_path: Path) -> None:
    doc = {"sessionId": "s", "projectHash": "h", "messages": [{"type": "user", "content": RULE}]}
    (tmp_path / "chat.jsonl").write_text(json.dumps(doc))
    done = run(tmp_path, "build", "chat.jsonl", "--json")
    assert [p["text"] for p in json.loads(done.stdout)["proposed"]] == [RULE]
    assert run(tmp_path, "build", "chat.jsonl", "--list-sources").stdout.decode().endswith("\tgemini\n")


def test_aider_line_starting_with_a_path_is_speech(tmp_path: Path) -> None:
    history = "# aider chat started at 2026-01-01 10:00:00\n\n#### /usr/local is read-only on the build hosts, so never install tools there because the image resets.\n"
    (tmp_path / ".aider.chat.history.md").write_text(history)
    done = run(tmp_path, "build", ".aider.chat.history.md", "--json")
    assert len(json.loads(done.stdout)["proposed"]) == 1


def test_aider_user_fenced_code_is_code(tmp_path: Path) -> None:
    pasted = "    # Note: the cache must always be warmed before this is called, because the pool is lazy."
    history = ("# aider chat started at 2026-01-01 10:00:00\n\n#### here is the helper:  \n#### ```python  \n"
               f"#### def warm():  \n#### {pasted}  \n#### ```  \n#### {RULE}  \n")
    (tmp_path / ".aider.chat.history.md").write_text(history)
    done = run(tmp_path, "build", ".aider.chat.history.md", "--json")
    assert [p["text"] for p in json.loads(done.stdout)["proposed"]] == [RULE]


@pytest.mark.parametrize("before", [
    pytest.param("", id="header-first"),
    # What an interrupted run left before the next run's header, with no user line among it.
    pytest.param(">  \n> ^C again to exit  \n>  \n> ^C KeyboardInterrupt  \n\n", id="after-an-interrupted-run"),
    pytest.param("\n".join(f"> Added file{n}.py to the chat.  " for n in range(30)) + "\n\n", id="after-a-long-tail"),
])
def test_aider_history_opening_with_tool_lines_is_read(tmp_path: Path, before: str) -> None:
    history = before + "# aider chat started at 2026-01-01 10:00:00\n\n#### " + RULE + "  \n"
    (tmp_path / ".aider.chat.history.md").write_text(history)
    done = run(tmp_path, "build", ".aider.chat.history.md", "--json")
    assert [p["text"] for p in json.loads(done.stdout)["proposed"]] == [RULE]


@pytest.mark.parametrize("quoted", [
    # Aider's repo map: its header quoted, the next lines not (Markdown's lazy continuation).
    pytest.param("> Here are summaries of some files present in my git repository.\n"
                 "Do not propose changes to these files, treat them as *read-only*, because they are mapped.\n",
                 id="repo-map-boilerplate"),
    # A `--message` echoed on the command line Aider prints, its lines after the first unquoted.
    pytest.param("> aider --model m --message Build the exporter.\n"
                 "Never write to the cache folder by hand, because the exporter owns it.\n", id="echoed-message"),
])
def test_aider_lines_continuing_a_quote_are_tool_output(tmp_path: Path, quoted: str) -> None:
    history = "# aider chat started at 2026-01-01 10:00:00\n\n#### /map  \n" + quoted + "\n#### " + RULE + "  \n"
    (tmp_path / ".aider.chat.history.md").write_text(history)
    done = run(tmp_path, "build", ".aider.chat.history.md", "--json", "--max-add", "10")
    assert [p["text"] for p in json.loads(done.stdout)["proposed"]] == [RULE]


@pytest.mark.parametrize(("roles", "expected"), [
    pytest.param("assistant", ["assistant"], id="assistant-reads-summaries"),
    pytest.param("user", [], id="user-does-not"),
])
def test_compaction_summary_is_the_assistants(tmp_path: Path, roles: str, expected: list[str]) -> None:
    record = {"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True, "sessionId": "s",
              "message": {"role": "user", "content": "This session is being continued from a previous conversation.\n" + RULE}}
    (tmp_path / "s.jsonl").write_text(json.dumps(record) + "\n")
    # (--min-score 0: the role is under test here, not the score)
    done = run(tmp_path, "build", "s.jsonl", "--json", "--include-summaries", "--roles", roles, "--min-score", "0")
    assert [p["source"]["role"] for p in json.loads(done.stdout)["proposed"]] == expected


def verdict_of(text: str, opts: md.Options = md.Options()) -> md.Verdict:
    """The verdict on a one-sentence user message, through the whole message stage."""
    stats: md.Counter[str] = md.Counter()
    [(_, _, verdict)] = md.judge_message(md.Message("user", text, 1, None), opts, md.SIGNAL, md.NOISE, stats)
    return verdict


# -- gates the review found gaps in ------------------------------------------------------

def _key(seed: str, n: int) -> str:
    import hashlib
    return "".join(c.upper() if i % 3 == 0 else c for i, c in enumerate(hashlib.sha256(seed.encode()).hexdigest()))[:n]


@pytest.mark.parametrize(("text", "stage"), [
    pytest.param("Always connect with postgres://admin:hunter2@db.internal:5432/app because the pool expects it.",
                 "dropped_secret", id="url-password-short"),
    pytest.param(f"Never rotate MY_APP_TOKEN={_key('a', 32)} by hand because the vault owns it.",
                 "dropped_secret", id="prefixed-env-token"),
    pytest.param("Always set password: CorrectHorseBatteryStaple because the kiosk account needs it.",
                 "dropped_secret", id="passphrase-without-digits"),
    pytest.param("Always ping alice@corp-mail.de: she owns the billing module because she wrote it.",
                 "dropped_pii", id="email-before-colon"),
    pytest.param("Never call +33 6 12 34 56 78 after hours because the on-call phone is personal.",
                 "dropped_pii", id="french-mobile-in-pairs"),
    pytest.param("Always read @README before changing flags because it lists the stable ones.",
                 "dropped_structure", id="bare-at-import"),
])
def test_gate_gaps(text: str, stage: str) -> None:
    verdict = verdict_of(text)
    assert verdict.stage == stage, verdict


@pytest.mark.parametrize("hidden", [
    pytest.param("AKIA\u200b" + "QWERTYUIOPASDFGH", id="zero-width-inside-key"),
    pytest.param("AKIA\x1b[0m" + "QWERTYUIOPASDFGH", id="escape-inside-key"),
    pytest.param("AKIAQWER**" + "TYUIOPASDFGH", id="bold-marks-inside-key"),
])
def test_obfuscated_secret_is_found_after_cleaning(tmp_path: Path, hidden: str) -> None:
    (tmp_path / "t.jsonl").write_bytes(native(f"Always export {hidden} before deploys because the job reads it."))
    done = run(tmp_path, "build", "t.jsonl", "--json", "--explain")
    assert b"QWERTYUIOPASDFGH" not in done.stdout + done.stderr


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("Never hardcode /home/alice in scripts because CI runs elsewhere.",
                 "Never hardcode ~ in scripts because CI runs elsewhere.", id="home-at-word-end"),
    pytest.param("Never hardcode C:/Users/bob/AppData in scripts because CI runs elsewhere.",
                 "Never hardcode ~/AppData in scripts because CI runs elsewhere.", id="windows-forward-slashes"),
])
def test_home_paths_lose_the_name(text: str, expected: str) -> None:
    assert verdict_of(text).text == expected


def test_allow_pii_keeps_home_paths() -> None:
    text = "Never hardcode /home/alice/bin in scripts because CI runs elsewhere."
    assert verdict_of(text, md.Options(allow_pii=True)).text == text


def test_example_marker_in_host_is_not_a_note() -> None:
    findings = md.lint_text("- connect to postgres://admin:Xk9fQ2mZ7wLp@db.example-corp.io/app\n")
    assert [kind for _, kind, _ in findings] == ["secret"]


# -- what is not counted without --stats never changes the patch ---------------------------

@pytest.mark.parametrize(("quiet", "sentences", "secrets"), [
    pytest.param(f"Here is the deploy key: MY_APP_TOKEN={_key('quiet', 32)} for the staging box.", 2, 0,
                 id="secret-without-signal"),
    pytest.param(f"Never print the deploy key: MY_APP_TOKEN={_key('quiet', 32)} for the staging box.", 2, 1,
                 id="secret-with-signal"),
    pytest.param("The files live in /home/alice/src and /Users/bob/work today.", 2, 0, id="home-paths"),
    pytest.param("Build passed. Lint passed. Nothing else to report here.", 4, 0, id="plain"),
])
def test_patch_does_not_depend_on_counting(tmp_path: Path, quiet: str, sentences: int, secrets: int) -> None:
    # A message without any SIGNAL phrase is split (and scanned for secrets) only when
    # the counters are printed; a secret in it is withheld from --stats as ever, and the
    # patch's summary counts the sentences SIGNAL picked that a gate withheld.
    (tmp_path / "t.jsonl").write_bytes(native(quiet, RULE))
    plain = run(tmp_path, "build", "t.jsonl", "--memory", "AGENTS.md")
    counted = run(tmp_path, "build", "t.jsonl", "--memory", "AGENTS.md", "--stats")
    assert plain.returncode == counted.returncode == 0, plain.stderr
    assert plain.stdout == counted.stdout and f"+- {RULE}".encode() in plain.stdout
    stats = dict(line.split("=") for line in counted.stderr.decode().split())
    assert (int(stats["sentences"]), int(stats["dropped_secret"])) == (sentences, secrets)
    assert (b"1 sentences withheld by the safety gates" in plain.stdout) == bool(secrets)


def test_pulled_in_sentence_of_an_unsplit_message_is_counted_once(tmp_path: Path) -> None:
    # A message without a SIGNAL phrase is split only when counted; a request pointing
    # back at it moves its sentence from dropped_no_signal to signal, not adds one (found
    # in review: sentences=3 for two sentences).
    said = "The release script tags the commit and uploads the wheel to the internal index."
    (tmp_path / "t.jsonl").write_bytes(json.dumps({"role": "assistant", "text": said}).encode() + b"\n"
                                       + native("Please add this to CLAUDE.md."))
    plain = run(tmp_path, "build", "t.jsonl", "--memory", "AGENTS.md")
    counted = run(tmp_path, "build", "t.jsonl", "--memory", "AGENTS.md", "--stats")
    assert plain.stdout == counted.stdout and f"+- {said}".encode() in plain.stdout
    stats = dict(line.split("=") for line in counted.stderr.decode().split())
    assert (stats["sentences"], stats["dropped_no_signal"], stats["signal"], stats["requested"]) == ("2", "0", "2", "1")


# -- phrases that only form once the message is split (found in review) ------------------

LATE = "be cleared between sessions so that builds stay reproducible."


@pytest.mark.parametrize(("text", "bullet"), [
    pytest.param(f"Do builds always run on CI? The build cache mu*\ue000*st {LATE}",
                 f"The build cache must {LATE}", id="stray-mark-joins-a-bold-pair"),
    pytest.param(f"Do builds always run in /home/bob` here? The build cache mu**st` {LATE}",
                 f"The build cache must` {LATE}", id="home-path-takes-a-backtick"),
    pytest.param(f"Deploy with https://deploy:{_key('late', 12)}@example.com` here. The build cache mu**st` {LATE}",
                 f"The build cache must` {LATE}", id="masked-password-takes-a-backtick"),
])
@pytest.mark.parametrize("counted", [False, True])
def test_phrase_formed_by_splitting_is_found(tmp_path: Path, text: str, bullet: str, counted: bool) -> None:
    # `must` forms only when split_sentences strips `**` line by line; the SIGNAL phrase
    # pre-check must not have passed over the message. (The first sentence, a question,
    # holds a phrase of its own and is dropped as NOISE.)
    (tmp_path / "t.jsonl").write_bytes(native(text))
    done = run(tmp_path, "build", "t.jsonl", "--memory", "AGENTS.md", *(["--stats"] if counted else []))
    assert done.returncode == 0, done.stderr
    assert [ln for ln in done.stdout.decode().splitlines() if ln.startswith("+- ")] == [f"+- {bullet}"]


def test_secret_keyword_with_a_letter_ignorecase_folds(tmp_path: Path) -> None:
    # re.IGNORECASE matches U+017F to `s`, so the generic rule matches `ſecret=`; its
    # pre-filter, on lower-cased text, must fold it too.
    value = _key("long-s", 14)
    (tmp_path / "t.jsonl").write_bytes(native(f"Always keep it in the vault because \u017fecret={value} leaked once."))
    done = run(tmp_path, "build", "t.jsonl", "--memory", "AGENTS.md", "--stats")
    assert done.returncode == 0 and value.encode() not in done.stdout
    assert b"dropped_secret=1" in done.stderr


def _build_with_memo(cwd: Path, memo: int, *args: str) -> tuple[int, bytes, bytes]:
    code = ("import sys, memory_diff as md; md.JUDGED_MEMO = int(sys.argv[1]); md.JUDGED_LEAST = 0; "
            "sys.exit(md.main(sys.argv[2:]))")  # every message remembered, however short
    done = subprocess.run([sys.executable, "-c", code, str(memo), *args], cwd=cwd, capture_output=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("mode", [
    pytest.param([], id="patch"),
    pytest.param(["--json", "--stats"], id="json-stats"),
    pytest.param(["--explain"], id="explain"),
    pytest.param(["--roles", "user", "--stats"], id="roles-user"),
])
def test_a_message_judged_before_gives_what_judging_it_again_gives(tmp_path: Path, mode: list[str]) -> None:
    # Checkpoint copies repeat whole messages: judged once (JUDGED_MEMO), every output byte
    # and counter is the one of judging each copy again.
    key = "sk-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    turns = [("user", RULE), ("assistant", "The root cause was that the cache key ignores the locale, so "
                                           "two users share one entry."),
             ("user", f"Never paste the key {key} into a ticket because tickets are public."),
             ("assistant", "The parser reads the whole file into memory before it checks the header."),
             ("user", "Please add this to CLAUDE.md so you remember it."),
             ("user", "ok thanks")]
    first = b"".join(json.dumps({"role": r, "text": t}).encode() + b"\n" for r, t in turns)
    (tmp_path / "a.jsonl").write_bytes(first)
    (tmp_path / "b.jsonl").write_bytes(first + json.dumps({"role": "user", "text": RULE}).encode() + b"\n")
    args = ["build", "--no-cache", "--jobs", "1", *mode, "a.jsonl", "b.jsonl"]
    remembered, again = _build_with_memo(tmp_path, md.JUDGED_MEMO, *args), _build_with_memo(tmp_path, 0, *args)
    assert remembered == again
    assert remembered[1] and key.encode() not in remembered[1] + remembered[2]
    if not mode:  # what the request points back at is judged again as asked for, and proposed
        assert b"+- The parser reads the whole file into memory" in remembered[1]


def _square_or_fail(index: int, path: str, opts: md.Options, walked: bool) -> Any:
    # Stands in for process_input in the workers (they are forked, so they see it).
    if path == "fails":
        raise ValueError("five")
    if path == "bad":
        raise md.UserError(path, "not a transcript")
    if path == "dies":
        os._exit(3)  # a worker killed mid-run
    return index * index, walked


@pytest.mark.parametrize(("count", "jobs"), [
    pytest.param(0, 2, id="nothing-to-do"),
    pytest.param(1, 3, id="fewer-tasks-than-workers"),
    pytest.param(5, 2, id="more-tasks-than-workers"),
    pytest.param(5, 5, id="one-task-a-worker"),
    pytest.param(5, 1, id="one-process"),
])
def test_process_all_answers_in_input_order(monkeypatch: pytest.MonkeyPatch, count: int, jobs: int) -> None:
    monkeypatch.setattr(md, "process_input", _square_or_fail)
    paths = [f"f{i}" for i in range(count)]
    expected = [(i * i, i % 2 == 1) for i in range(count)]
    assert md.process_all(paths, set(paths[1::2]), md.Options(), jobs) == expected
    indices = [10 + i for i in range(count)]  # each one's own input index, where it is given
    assert md.process_all(paths, set(paths[1::2]), md.Options(), jobs, indices) == [
        (i * i, i % 2 == 1) for i in indices]


@pytest.mark.parametrize(("failing", "raised", "says"), [
    pytest.param(["fails"], ValueError, "five", id="a-workers-exception-is-raised-here"),
    pytest.param(["bad", "fails"], md.UserError, "^bad: not a transcript$", id="the-first-in-input-order"),
    pytest.param(["fails", "bad"], ValueError, "five", id="the-first-in-input-order-not-a-user-error"),
    pytest.param(["dies"], md.UserError, "^a worker process ended before it answered", id="a-killed-worker-is-one-error"),
])
def test_process_all_fails_as_one_process_would(monkeypatch: pytest.MonkeyPatch, failing: list[str],
                                                raised: type[BaseException], says: str) -> None:
    monkeypatch.setattr(md, "process_input", _square_or_fail)
    paths = ["f0", "f1", *failing, "f2", "f3", "f4"]
    with pytest.raises(raised, match=says):
        md.process_all(paths, set(), md.Options(), 2)
    with pytest.raises(ChildProcessError):  # and every worker was waited for
        os.waitpid(-1, os.WNOHANG)


def _where(index: int, path: str, opts: md.Options, walked: bool) -> Any:
    return path, os.getpid()


def test_the_files_of_one_conversation_are_read_by_one_worker(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    # Checkpoint copies repeat their conversation's messages: one worker judges the
    # repeats by memory (_JUDGED) only if it reads every copy.
    monkeypatch.setattr(md, "process_input", _where)
    paths = []
    for copy in range(2):
        for conversation in range(6):
            path = tmp_path / f"{copy}-{conversation}.jsonl"
            path.write_text(json.dumps({"sessionId": f"s{conversation}", "role": "user", "text": RULE}) + "\n")
            paths.append(str(path))
    where = md.process_all(paths, set(), md.Options(), 2)
    assert [p for p, _ in where] == paths
    assert [pid for _, pid in where[:6]] == [pid for _, pid in where[6:]]


def test_workers_leave_the_parents_output_alone(tmp_path: Path) -> None:
    # Text the parent has buffered but not yet written is written once, by the parent.
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(native(RULE))
    code = ("import sys, memory_diff as md; sys.stdout.write('once'); sys.stderr.write('twice'); "
            "md.process_all(['a.jsonl', 'b.jsonl'], set(), md.Options(), 2); sys.stdout.write('\\n')")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert (done.stdout, done.stderr, done.returncode) == (b"once\n", b"twice", 0)


def test_jobs_where_the_platform_cannot_fork_read_in_one_process(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(native(RULE))
    (tmp_path / "b.jsonl").write_bytes(native("We always run the migrations in a transaction, because a half-applied "
                                              "schema cannot be rolled back."))
    code = "import os, sys; del os.fork; import memory_diff as md; sys.exit(md.main(sys.argv[1:]))"
    args = ["build", "--no-cache", "--jobs", "2", "a.jsonl", "b.jsonl"]
    unforked = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, timeout=60,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    forked = run(tmp_path, *args)
    assert (unforked.returncode, unforked.stdout, unforked.stderr) == (forked.returncode, forked.stdout, forked.stderr)
    assert b"+- Never push directly to main" in forked.stdout
