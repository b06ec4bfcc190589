"""The tool over the real, uncleaned transcript corpus (skipped when it is absent).

The corpus lives next to this repository, at ../shared/corpus (README.md, labels.jsonl,
sessions/). Nothing of it is copied here: the tests read it in place and print figures
(bullets by role, label coverage) to the terminal; run with `pytest -s` to see them.

  a. `build` over every session: exit 0, nothing on stderr, and every patch applies to an
     empty memory file with `git apply --check` and `patch -p1 --dry-run`; bullets come
     from both roles across the corpus.
  b. label coverage: the labelled sentences were taken from visible prose, so nearly all
     of them must be found in the prose the readers extract.
  c. `--jobs 1` and `--jobs 4` give the same bytes.
  d. the byte prefilter for Claude Code lines (claude_may_hold_prose), the SIGNAL
     phrase pre-check (signal_phrases) and not counting what nobody prints change no
     output.
"""
from __future__ import annotations

import collections
import io
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF  # noqa: E402
FORMATS = ROOT / "tests" / "fixtures" / "formats"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
SESSIONS = CORPUS / "sessions"
LABELS = CORPUS / "labels.jsonl"
sys.path.insert(0, str(ROOT))

import memory_diff as md  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (SESSIONS.is_dir() and LABELS.is_file()), reason=f"corpus not found at {CORPUS}")

EVERYTHING = ("--min-score", "0", "--max-add", "100000")
MIN_COVERAGE = 0.95
THREADS = 4

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


def session_files() -> list[Path]:
    return sorted(p for p in SESSIONS.iterdir() if p.is_file()) if SESSIONS.is_dir() else []


def run(cmd: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=600,
                          env={**os.environ, **GIT_ENV})


def tool(cwd: Path, *args: str, cache: bool = False) -> subprocess.CompletedProcess[bytes]:
    """The CLI, without the cache unless asked (runs here compare outputs of several runs)."""
    extra = [] if cache or args[:1] != ("build",) else ["--no-cache"]
    return run([*MEMORY_DIFF, *args, *extra], cwd)


def git(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return run(["git", "-c", "core.autocrlf=false", *args], repo, stdin)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository whose memory file, AGENTS.md, exists and is empty."""
    path = tmp_path_factory.mktemp("corpus-repo")
    assert git(path, "init", "-q").returncode == 0
    (path / "AGENTS.md").write_bytes(b"")
    assert git(path, "add", "AGENTS.md").returncode == 0
    assert git(path, "commit", "-q", "-m", "init").returncode == 0
    return path


def describe(proc: subprocess.CompletedProcess[bytes]) -> str:
    return f"exit {proc.returncode}, stderr {proc.stderr.decode('utf-8', 'replace')[-2000:]!r}"


# -- a. build over every session ---------------------------------------------------------

class SessionRun:
    def __init__(self, session: Path, mode: str, proc: subprocess.CompletedProcess[bytes]) -> None:
        self.session, self.mode, self.proc = session, mode, proc
        self.git_check: subprocess.CompletedProcess[bytes] | None = None
        self.patch_check: subprocess.CompletedProcess[bytes] | None = None


def check_patch(repo: Path, item: SessionRun) -> SessionRun:
    patch = item.proc.stdout
    if item.proc.returncode == 0 and patch:
        item.git_check = git(repo, "apply", "--check", "-", stdin=patch)
        item.patch_check = run(["patch", "-p1", "--dry-run", "--batch", "--silent"], repo, patch)
    return item


@pytest.fixture(scope="module")
def per_session(repo: Path) -> list[SessionRun]:
    """One `build SESSION --memory AGENTS.md` per session with every candidate (--min-score
    0), each patch checked against the empty file. The default settings propose a subset of
    these bullets in the same patch shape; one run over the folder covers them."""
    modes = {"min-score-0": EVERYTHING}

    def one(job: tuple[Path, str]) -> SessionRun:
        session, mode = job
        proc = tool(repo, "build", str(session), "--memory", "AGENTS.md", "--jobs", "1", *modes[mode])
        return check_patch(repo, SessionRun(session, mode, proc))

    jobs = [(s, m) for s in session_files() for m in modes]
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, jobs))


def test_corpus_has_the_sessions_the_readme_promises() -> None:
    assert len(session_files()) == 103


def test_every_session_builds_with_exit_0_and_silent_stderr(per_session: list[SessionRun]) -> None:
    bad = [f"{r.session.name} [{r.mode}]: {describe(r.proc)}" for r in per_session
           if r.proc.returncode != 0 or r.proc.stderr]
    assert not bad, f"{len(bad)} runs failed:\n" + "\n".join(bad[:20])


# The preamble lists each bullet's source: `#   1. path:line (role, timestamp)`.
PREAMBLE_ROLE = re.compile(r"^#\s+\d+\. .*\((user|assistant)[,)]", re.M)


def test_every_session_patch_applies_to_the_empty_memory_file(per_session: list[SessionRun]) -> None:
    patched = [r for r in per_session if r.proc.returncode == 0 and r.proc.stdout]
    bad = []
    for r in patched:
        for name, check in (("git apply --check", r.git_check), ("patch -p1 --dry-run", r.patch_check)):
            assert check is not None
            if check.returncode != 0:
                out = (check.stdout + check.stderr).decode("utf-8", "replace")[-1000:]
                bad.append(f"{r.session.name} [{r.mode}] {name}: {out}")
    counts = collections.Counter(r.mode for r in patched)
    bullets = {mode: collections.Counter(PREAMBLE_ROLE.findall(b"".join(
        r.proc.stdout for r in patched if r.mode == mode).decode("utf-8", "replace"))) for mode in counts}
    print(f"\ncorpus, one run a session: non-empty patches {dict(counts)} of {len(session_files())}; "
          f"bullets by role {({mode: dict(c) for mode, c in bullets.items()})}")
    assert not bad, f"{len(bad)} patches do not apply:\n" + "\n".join(bad[:20])
    assert counts["min-score-0"] > 0, counts


def test_every_bullet_of_a_session_patch_is_one_added_line(per_session: list[SessionRun]) -> None:
    """Against an empty file a patch only adds: no `-` line, no context line."""
    bad = []
    for r in per_session:
        body = r.proc.stdout.split(b"\n@@ ", 1)[-1].split(b"\n", 1)[-1] if r.proc.stdout else b""
        for line in body.split(b"\n"):
            if line and not line.startswith(b"+- "):
                bad.append(f"{r.session.name} [{r.mode}]: {line[:120]!r}")
                break
    assert not bad, "\n".join(bad[:20])


def folder_json(repo: Path, *extra: str) -> dict[str, Any]:
    proc = tool(repo, "build", str(SESSIONS), "--memory", "AGENTS.md", "--json", *extra)
    assert proc.returncode == 0 and not proc.stderr, describe(proc)
    return json.loads(proc.stdout)


def roles(doc: dict[str, Any]) -> collections.Counter[str]:
    return collections.Counter(p["source"]["role"] for p in doc["proposed"])


def test_bullets_come_from_both_roles_across_the_corpus(repo: Path) -> None:
    default = folder_json(repo, "--jobs", "2")
    everything = folder_json(repo, "--jobs", "2", *EVERYTHING)
    summary = (f"corpus bullets, one run over sessions/: default settings {len(default['proposed'])} "
               f"{dict(roles(default))}; --min-score 0 {len(everything['proposed'])} {dict(roles(everything))}")
    print("\n" + summary)
    assert set(roles(everything)) == {"user", "assistant"}, summary
    assert 0 < len(default["proposed"]) <= md.DEFAULT_MAX_ADD, summary
    for doc in (default, everything):
        assert doc["stats"]["proposed"] == len(doc["proposed"]), summary
        assert doc["stats"]["malformed"] == 0, summary


def test_one_patch_with_every_candidate_of_the_corpus_applies(repo: Path) -> None:
    proc = tool(repo, "build", str(SESSIONS), "--memory", "AGENTS.md", "--jobs", "2", *EVERYTHING)
    assert proc.returncode == 0 and not proc.stderr, describe(proc)
    added = proc.stdout.count(b"\n+- ")
    assert added > 100
    check = git(repo, "apply", "--check", "-", stdin=proc.stdout)
    assert check.returncode == 0, check.stderr.decode("utf-8", "replace")
    check = run(["patch", "-p1", "--dry-run", "--batch"], repo, proc.stdout)
    assert check.returncode == 0, (check.stdout + check.stderr).decode("utf-8", "replace")


# -- b. label coverage -------------------------------------------------------------------

LIST_MARKER = re.compile(r"^(?:\s*(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?|\s*#{1,6}\s+|\s*>\s?)+")


def norm(text: str) -> str:
    """NFKC, lower case, `**` and backticks removed, list markers stripped, white space
    collapsed, trailing punctuation stripped."""
    text = unicodedata.normalize("NFKC", text).lower().replace("**", "").replace("`", "")
    text = LIST_MARKER.sub("", " ".join(text.split()))
    return text.rstrip(" .。!！?？;；:：,，")


def prose_of(path: Path) -> list[md.Message]:
    with open(path, "rb") as f:
        _, messages = md.read_transcript(str(path), f, md.Options(), collections.Counter())
        return [m for m in messages if isinstance(m, md.Message)]  # not the session's memory writes


def normalised_lines(messages: list[md.Message]) -> Iterator[str]:
    """Each physical line of prose, normalised: a labelled sentence never spans lines."""
    for message in messages:
        for line in md.LINE_BREAK.split(message.text):
            yield norm(line)


@pytest.fixture(scope="module")
def coverage() -> dict[str, Any]:
    labels = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    prose: dict[str, str] = {}
    sentences: dict[str, set[str]] = {}
    read: dict[str, list[md.Message]] = {}
    for session in sorted({label["session"] for label in labels}):
        messages = read[session] = prose_of(SESSIONS / session)
        prose[session] = "\n".join(normalised_lines(messages))
        sentences[session] = {norm(s) for m in messages for s in md.split_sentences(m.text)}
    in_prose, as_sentence, missing = 0, 0, []
    for label in labels:
        key = norm(label["text"])
        if key and key in prose[label["session"]]:
            in_prose += 1
            as_sentence += key in sentences[label["session"]]
        else:
            missing.append(label)
    return {"labels": labels, "in_prose": in_prose, "as_sentence": as_sentence, "missing": missing,
            "messages": read}


def test_labelled_sentences_occur_in_the_extracted_prose(coverage: dict[str, Any]) -> None:
    total = len(coverage["labels"])
    share = coverage["in_prose"] / total
    summary = (f"label coverage: {coverage['in_prose']}/{total} = {share:.1%} occur in the readers' prose; "
               f"{coverage['as_sentence']}/{total} = {coverage['as_sentence'] / total:.1%} are exactly one "
               f"of split_sentences' sentences")
    print("\n" + summary)
    examples = "\n".join(f"  {m['session']} {m['role']}: {m['text'][:160]!r}" for m in coverage["missing"][:10])
    assert share >= MIN_COVERAGE, f"{summary}\nnot found, e.g.:\n{examples}"


THINKING_SPAN = re.compile(r"<thinking>(.*?)(?:</thinking>|\Z)", re.S)


def literal_thinking(session: Path) -> str:
    """Normalised lines of the `<thinking>...</thinking>` spans that the model wrote into
    visible text blocks of a Claude Code session (strip_injected removes them)."""
    lines = []
    with open(session, "rb") as f:
        for raw in f:
            if b"<thinking>" not in raw:
                continue
            for record in md.parse_jsonl_line(raw) or []:
                message = record.get("message") if isinstance(record, dict) else None
                content = message.get("content") if isinstance(message, dict) else None
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "text":
                        for span in THINKING_SPAN.findall(str(block.get("text"))):
                            lines += [norm(line) for line in md.LINE_BREAK.split(span)]
    return "\n".join(lines)


def test_labelled_sentences_not_found_are_all_literal_thinking(coverage: dict[str, Any]) -> None:
    """The labeller counted text the model wrote between literal `<thinking>` tags inside a
    visible text block as prose; the tool drops it on purpose (INJECTED_TAGS). Any other
    label the readers do not find is a reader losing visible prose."""
    thinking: dict[str, str] = {}
    other = []
    for label in coverage["missing"]:
        session = label["session"]
        if session not in thinking:
            thinking[session] = literal_thinking(SESSIONS / session)
        if norm(label["text"]) not in thinking[session]:
            other.append(label)
    keep = [m for m in coverage["missing"] if m["label"] == "keep"]
    print(f"\nlabels inside literal <thinking> text: {len(coverage['missing']) - len(other)}, "
          f"of them labelled keep: {len(keep)}")
    assert not other, "\n".join(f"  {m['session']} {m['role']} {m['label']}: {m['text'][:160]!r}"
                                for m in other[:10])


def test_labelled_sentences_come_from_the_role_the_reader_gives(coverage: dict[str, Any]) -> None:
    """A label found in the prose is found in a message of its own role."""
    by_role: dict[tuple[str, str], str] = {}
    missing = {id(m) for m in coverage["missing"]}
    wrong = []
    for label in coverage["labels"]:
        key = norm(label["text"])
        where = (label["session"], label["role"])
        if where not in by_role:
            messages = [m for m in coverage["messages"][label["session"]] if m.role == label["role"]]
            by_role[where] = "\n".join(normalised_lines(messages))
        if id(label) not in missing and key not in by_role[where]:
            wrong.append(label)
    assert not wrong, "\n".join(f"  {m['session']} {m['role']}: {m['text'][:160]!r}" for m in wrong[:10])


# -- c. --jobs does not change the bytes -------------------------------------------------

def format_fixture_transcripts() -> list[str]:
    return sorted(str(p) for p in FORMATS.rglob("*") if p.is_file() and p.name != "expected.json")


@pytest.mark.parametrize("mode", [
    pytest.param((), id="patch"),
    pytest.param(("--json",), id="json"),
    pytest.param(("--json", *EVERYTHING), id="json-min-score-0"),
    pytest.param(EVERYTHING, id="patch-min-score-0"),
])
@pytest.mark.parametrize("inputs", [
    pytest.param("corpus", id="corpus"),
    pytest.param("fixtures", id="format-fixtures"),
])
def test_jobs_1_and_4_give_identical_stdout(inputs: str, mode: tuple[str, ...], repo: Path) -> None:
    paths = [str(SESSIONS)] if inputs == "corpus" else format_fixture_transcripts()
    outs = []
    for jobs in ("1", "4"):
        proc = tool(repo, "build", *paths, "--memory", "AGENTS.md", "--jobs", jobs, *mode)
        assert proc.returncode == 0 and not proc.stderr, describe(proc)
        outs.append(proc.stdout)
    assert outs[0], "nothing to compare"
    assert outs[0] == outs[1]


@pytest.mark.parametrize("mode", [
    pytest.param(("--jobs", "2"), id="patch"),
    pytest.param(("--jobs", "1", "--explain"), id="explain"),
    pytest.param(("--jobs", "2", "--stats", *EVERYTHING), id="stats-min-score-0"),
])
def test_the_cache_changes_no_output_on_the_corpus(mode: tuple[str, ...], repo: Path) -> None:
    args = ("build", str(SESSIONS), "--memory", "AGENTS.md", *mode)
    plain, cold, warm = tool(repo, *args), tool(repo, *args, cache=True), tool(repo, *args, cache=True)
    assert plain.returncode == cold.returncode == warm.returncode == 0
    assert plain.stdout == cold.stdout == warm.stdout and plain.stdout
    lines = [p.stderr.decode().splitlines() for p in (plain, cold, warm)]
    if "--stats" in mode:
        rest = [[x for x in ls if not x.startswith("cached_files=")] for ls in lines]
        assert rest[0] == rest[1] == rest[2]
        assert [[x for x in ls if x.startswith("cached_files=")] for ls in lines] == [
            ["cached_files=0"], ["cached_files=0"], [f"cached_files={len(list(SESSIONS.iterdir()))}"]]


# -- d. the byte prefilter changes no output ---------------------------------------------

class Stdout:
    """Stands in for sys.stdout: memory_diff writes bytes to sys.stdout.buffer."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()

    def write(self, text: str) -> int:
        return self.buffer.write(text.encode())

    def flush(self) -> None:
        pass


def main_stdout(*argv: str) -> bytes:
    out, saved = Stdout(), sys.stdout
    sys.stdout = out  # type: ignore[assignment]
    try:
        # --no-cache: a function monkeypatched in this process is no change of the module's bytes.
        status = md.main([*argv, "--no-cache"])
    finally:
        sys.stdout = saved
    assert status == 0
    return out.buffer.getvalue()


# Counters of sentences: the same with and without the prefilter. The record counters
# (parsed, skipped_unparsed, skipped_tool_output, ...) differ by design.
SENTENCE_STATS = ("messages", "sentences", "dropped_secret", "dropped_pii", "dropped_invisible",
                  "dropped_injection", "dropped_structure", "dropped_no_signal", "signal", "dropped_noise",
                  "dropped_length", "dropped_weak", "dropped_duplicate", "proposed")


def test_claude_prefilter_changes_no_output(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    argv = ("build", str(SESSIONS), "--memory", "AGENTS.md", "--jobs", "1")
    with_filter = json.loads(main_stdout(*argv, "--json", *EVERYTHING))
    explained = main_stdout(*argv, "--explain", *EVERYTHING)

    monkeypatch.setattr(md, "claude_may_hold_prose", lambda raw: True)
    everything_parsed = json.loads(main_stdout(*argv, "--json", *EVERYTHING))
    explained_parsed = main_stdout(*argv, "--explain", *EVERYTHING)

    assert with_filter["stats"]["skipped_unparsed"] > 0, "the prefilter skipped nothing: test proves nothing"
    assert everything_parsed["stats"]["skipped_unparsed"] == 0, "the monkeypatch did not take"
    assert with_filter["proposed"] == everything_parsed["proposed"]
    assert {k: with_filter["stats"][k] for k in SENTENCE_STATS} == \
           {k: everything_parsed["stats"][k] for k in SENTENCE_STATS}
    assert explained == explained_parsed


@pytest.mark.parametrize("mode", [pytest.param((), id="default"), pytest.param(EVERYTHING, id="min-score-0")])
def test_patch_is_the_same_when_the_counters_are_printed(repo: Path, mode: tuple[str, ...],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Without --stats or --json, messages without a SIGNAL phrase or a secret are not split.
    monkeypatch.chdir(repo)
    argv = ("build", str(SESSIONS), "--memory", "AGENTS.md", "--jobs", "1", *mode)
    patch = main_stdout(*argv)
    assert patch.count(b"\n+- ") >= md.DEFAULT_MAX_ADD, "too few proposals to compare"
    assert patch == main_stdout(*argv, "--stats")


def test_signal_phrase_precheck_changes_nothing(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the pre-check every sentence of every message goes through SIGNAL itself.
    monkeypatch.chdir(repo)
    argv = ("build", str(SESSIONS), "--memory", "AGENTS.md", "--jobs", "1", *EVERYTHING)
    runs = {}
    for name in ("phrases", "regex-only"):
        if name == "regex-only":
            monkeypatch.setattr(md, "signal_phrases", lambda lowered: None)
        runs[name] = main_stdout(*argv, "--json", "--stats"), main_stdout(*argv, "--explain")
    assert json.loads(runs["phrases"][0])["stats"]["signal"] > 0, "nothing to compare"
    assert runs["phrases"] == runs["regex-only"]
