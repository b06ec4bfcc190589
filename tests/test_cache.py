"""The cache of per-transcript results (issue 16): a run that reuses it prints the same
bytes as `--no-cache`, on every output; only `cached_files` differs. Every test runs in
a temporary repository, never in this one."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF, SCRIPT, main_process  # noqa: E402
FORMATS = ROOT / "tests" / "fixtures" / "formats"
HOUR_NS = 3600 * 10**9

sys.path.insert(0, str(ROOT))

import memory_diff as md  # noqa: E402

SESSION = "00000000-0000-4000-8000-cccccccccccc"


def claude(type_: str, content: Any, n: int) -> dict[str, Any]:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/workspace/app",
            "sessionId": SESSION, "type": type_, "message": {"role": type_, "content": content},
            "uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": f"2026-01-20T04:16:{n:02d}.000Z"}


# A session with what a result carries besides plain candidates: a memory request that
# points back (its provenance names the file), the agent's own memory-file write, a
# withheld secret, a weak candidate and several conversations' worth of counters.
RICH = [
    claude("user", "We must never deploy on Fridays because the on-call rota is thin.", 1),
    claude("assistant", [{"type": "text", "text": "The root cause was that `load_config()` only reads the "
                                                  "local file, so CI never saw the override. "
                                                  "The token is ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 "
                                                  "and it must stay out of logs."}], 2),
    claude("user", "Please add this to CLAUDE.md.", 3),
    claude("assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Edit",
                          "input": {"file_path": "/workspace/app/CLAUDE.md", "old_string": "",
                                    "new_string": "- Always run make lint before pushing."}}], 4),
    claude("assistant", [{"type": "text", "text": "You should prefer small commits."}], 5),
]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def age(*paths: Path) -> None:
    """Make files an hour old: older than the racy window, so the cache may reuse them."""
    old = time.time_ns() - HOUR_NS
    for path in paths:
        os.utime(path, ns=(old, old))


def cases_to_keep() -> list[Path]:
    """The first case of each format, and every case holding what a mode switches on
    (sidechains, summaries): what the cache keeps differs by reader, not by the number of
    files one reader reads (and every file read costs each of the tests' runs its time)."""
    readers: set[str] = set()
    cases = []
    for case in sorted(FORMATS.iterdir()):
        reader = json.loads((case / "expected.json").read_text(encoding="utf-8"))["format"]
        if reader not in readers or "sidechain" in case.name or "summary" in case.name:
            readers.add(reader)
            cases.append(case)
    return cases


CASES = cases_to_keep()
EXAMPLES = ("basic-english", "chinese")  # proposals in two languages


def make_repo(folder: Path, cases: list[Path], examples: tuple[str, ...]) -> Path:
    """A repository with these transcripts under sessions/ and the rich session, an hour old."""
    repo = folder / "repo"
    (repo / ".git").mkdir(parents=True)
    sessions = repo / "sessions"
    sessions.mkdir()
    for case in cases:
        for source in sorted(case.iterdir()):
            if source.name.startswith("transcript") or source.suffix == ".md":
                shutil.copyfile(source, sessions / f"{case.name}-{source.name}")
    for example in examples:
        shutil.copyfile(ROOT / "examples" / example / "transcript.jsonl", sessions / f"example-{example}.jsonl")
    write_jsonl(sessions / "rich.jsonl", RICH)
    (sessions / "notes.json").write_text('{"not": "a transcript"}', encoding="utf-8")  # skipped_files
    age(*sessions.iterdir())
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with transcripts of every format under sessions/."""
    return make_repo(tmp_path, CASES, EXAMPLES)


@pytest.fixture
def rich_repo(tmp_path: Path) -> Path:
    """The rich session beside one transcript in Markdown and one in JSONL: every field a kept
    result has, in the fewest files (a corruption is read the same whatever the reader)."""
    return make_repo(tmp_path, [FORMATS / "aider_chinese"], ("basic-english",))


def build(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[bytes, list[str], int]:
    """stdout, the --stats lines (if any), and the exit status of one `build`, run in this
    process: the cache is what a run finds on disk, and a run in a fresh interpreter would
    spend most of its time starting (the tests of runs at once and of another build of the
    module start their own)."""
    proc = main_process(["build", *args], cwd, env)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in (0, 1), proc.stderr.decode("utf-8", "replace")
    return proc.stdout, proc.stderr.decode("utf-8", "replace").splitlines(), proc.returncode


def cached(stats: list[str]) -> int:
    return next(int(line.split("=", 1)[1]) for line in stats if line.startswith("cached_files="))


def without_cached(stats: list[str]) -> list[str]:
    return [line for line in stats if not line.startswith("cached_files=")]


def cache_folder(repo: Path) -> Path:
    return repo / ".git" / "memory-diff"


def read_kept(path: Path) -> Any:
    """A file of the cache, decoded as the module decodes it."""
    return md.cache_value(path.read_bytes())


def write_kept(path: Path, value: Any) -> str:
    """`value` written as the module writes a file of the cache; the SHA-256 it is named by."""
    data = md.cache_bytes(value)
    path.write_bytes(data)
    return data[:32].hex()


def indexes(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"results-*{md.CACHE_SUFFIX}"))


def comparable(stdout: bytes) -> bytes:
    """--json's bytes with the value of cached_files, the one counter that may differ, cut."""
    return re.sub(rb'("cached_files": )\d+', rb"\1N", stdout)


MODES = [
    pytest.param([], id="patch"),
    pytest.param(["--stats"], id="stats"),
    pytest.param(["--json"], id="json"),
    pytest.param(["--explain"], id="explain"),
    pytest.param(["--min-score", "0", "--max-add", "50", "--stats"], id="min-score-0"),
    pytest.param(["--seen", "seen.md", "--section", "Notes", "--stats"], id="seen-section"),
    pytest.param(["--roles", "user", "--stats"], id="roles-user"),
    pytest.param(["--include-sidechains", "--include-summaries", "--json"], id="sidechains-summaries"),
    pytest.param(["--jobs", "1", "--explain"], id="jobs-1-explain"),
]


@pytest.mark.parametrize("mode", MODES)
def test_cold_warm_and_no_cache_print_the_same_bytes(repo: Path, mode: list[str]) -> None:
    args = ["sessions", "--memory", "AGENTS.md", *mode]
    plain = build(repo, *args, "--no-cache")
    assert not cache_folder(repo).exists()
    cold = build(repo, *args)
    warm = build(repo, *args)
    assert comparable(cold[0]) == comparable(plain[0]) == comparable(warm[0])
    if "--json" not in mode:
        assert cold[0] == plain[0] == warm[0]
    assert cold[2] == plain[2] == warm[2]
    assert plain[0]  # something is printed in every mode
    if "--stats" in mode:
        assert without_cached(cold[1]) == without_cached(plain[1]) == without_cached(warm[1])
        assert (cached(plain[1]), cached(cold[1])) == (0, 0)
        assert cached(warm[1]) == len(build(repo, "sessions", "--list-sources")[0].splitlines())
    if "--json" in mode:
        docs = [json.loads(out) for out, _, _ in (plain, cold, warm)]
        assert docs[0]["stats"]["cached_files"] == docs[1]["stats"]["cached_files"] == 0
        assert docs[2]["stats"]["cached_files"] > 0


def stats_args(*extra: str) -> list[str]:
    return ["sessions", "--memory", "AGENTS.md", "--stats", *extra]


def same_as_no_cache(repo: Path, *args: str) -> int:
    """Run with the cache, then without; assert the same bytes and counters; the
    cached_files of the run with the cache."""
    warm = build(repo, *args)
    plain = build(repo, *args, "--no-cache")
    assert warm[0] == plain[0]
    assert without_cached(warm[1]) == without_cached(plain[1])
    return cached(warm[1])


def test_order_and_path_as_given_are_rebuilt_from_this_run(repo: Path) -> None:
    files = sorted(str(p.relative_to(repo)) for p in (repo / "sessions").iterdir() if p.suffix == ".jsonl")
    build(repo, *files, "--memory", "AGENTS.md", "--stats")
    # Other order, other spellings of the same files, an --explain that names them.
    others = [str(repo / f) for f in reversed(files[1::2])] + [f"./{f}" for f in files[0::2]]
    assert cached(build(repo, *others, "--memory", "AGENTS.md", "--stats")[1]) == len(files)
    for mode in (["--stats"], ["--explain"], ["--json"], ["--stats", "--seen", "seen.md"]):
        args = [*others, "--memory", "AGENTS.md", *mode]
        warm, plain = build(repo, *args), build(repo, *args, "--no-cache")
        assert comparable(warm[0]) == comparable(plain[0])
        assert without_cached(warm[1]) == without_cached(plain[1])
    assert cached(build(repo, *others, "--memory", "AGENTS.md", "--stats")[1]) == len(files)


def test_a_grown_session_is_read_again_whole(repo: Path) -> None:
    rich = repo / "sessions" / "rich.jsonl"
    build(repo, *stats_args())
    write_jsonl(rich, RICH + [claude("user", "Going forward, always pin the base image by digest.", 6),
                              claude("assistant", [{"type": "text", "text": "Sure."}], 7)])
    age(rich)
    total = len(build(repo, "sessions", "--list-sources")[0].splitlines())
    assert same_as_no_cache(repo, *stats_args()) == total - 1
    assert same_as_no_cache(repo, *stats_args("--explain")) in (0, total - 1)


# A history as the hook meets it, one step after another: each step changes the sessions,
# then a run with the cache must print what a run without it prints: a resumed copy read
# before the session it copies (its name sorts first), in other roles; a session gone;
# a new one; the live one growing.
HISTORY_STEPS = [
    pytest.param(lambda s: None, id="unchanged"),
    pytest.param(lambda s: write_jsonl(s / "0-resumed.jsonl", [
        {**r, "type": "assistant" if r["type"] == "user" else r["type"]} for r in RICH[:2]]), id="a-resumed-copy-first"),
    pytest.param(lambda s: (s / "rich.jsonl").unlink(missing_ok=True), id="a-session-gone"),
    pytest.param(lambda s: write_jsonl(s / "new.jsonl", RICH[:1] + [
        claude("user", "We must never deploy on Fridays since the on-call rota is thin.", 9)]), id="a-new-session"),
    pytest.param(lambda s: write_jsonl(s / "rich.jsonl", RICH + [
        claude("user", "Never deploy on Fridays: the rota is thin.", 8)]), id="the-live-one-grown"),
]


@pytest.mark.parametrize("step", HISTORY_STEPS)
def test_each_step_of_a_history_prints_what_no_cache_prints(repo: Path, step: Any) -> None:
    sessions = repo / "sessions"
    for mode in (["--explain"], ["--min-score", "0", "--max-add", "50"]):
        build(repo, *stats_args(*mode))
        build(repo, *stats_args(*mode))  # their results kept
        step(sessions)
        age(*sessions.iterdir())
        same_as_no_cache(repo, *stats_args(*mode))
        same_as_no_cache(repo, *stats_args(*mode))


# A crowded history: every line shares most of its words with more than RELATED others,
# so each line's list of related lines is cut, and which lines make a list's top depends
# on the lines of every session. Each step changes which lines there are, some of them
# read from the cache and some read again.
SERVICES = ("billing", "search", "auth", "ledger", "mailer", "uploads", "reports", "gateway", "scheduler")
DAYS = ("Fridays", "Mondays", "weekends", "holidays", "release days", "month ends", "audit weeks", "nights")


def crowded(session: int, lines: int, start: int = 0) -> list[dict[str, Any]]:
    records = []
    for n in range(start, start + lines):
        service, day = SERVICES[(n + session) % len(SERVICES)], DAYS[(n * 3 + session) % len(DAYS)]
        text = (f"We must never deploy the {service} service on {day} because the on-call rota "
                f"for {service} is thin in team {n % 5}.")
        records.append(claude("user", text, n % 60))
        records.append(claude("assistant", [{"type": "text", "text": f"Noted for {service}."}], n % 60))
    return records


def crowded_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "crowded"
    (repo / ".git").mkdir(parents=True)
    (repo / "sessions").mkdir()
    for session in range(4):
        write_jsonl(repo / "sessions" / f"s{session}.jsonl", crowded(session, 30, session * 7))
    age(*(repo / "sessions").iterdir())
    return repo


CROWDED_STEPS = [
    pytest.param(lambda s: (s / "s1.jsonl").unlink(), id="a-session-gone"),
    pytest.param(lambda s: write_jsonl(s / "s9.jsonl", crowded(9, 40, 100)), id="a-new-session"),
    pytest.param(lambda s: write_jsonl(s / "s2.jsonl", crowded(2, 30, 14) + crowded(5, 25, 60)), id="one-grown"),
    pytest.param(lambda s: write_jsonl(s / "0-copy.jsonl", crowded(3, 20, 21)), id="a-copy-read-first"),
]


def test_the_related_lines_are_cut_in_the_crowded_history(tmp_path: Path) -> None:
    """The crowded history does what it is for: some line has more related lines than
    RELATED, so the cut decides which are compared (else the steps test nothing more
    than the small history does)."""
    lines = {md.normalize(r["message"]["content"]) for s in range(4)
             for r in crowded(s, 30, s * 7) if r["type"] == "user"}
    words = [set(md._tokens(line)) for line in sorted(lines)]
    assert max(sum(len(a & b) >= 2 for b in words) for a in words) > md.RELATED + 1


@pytest.mark.parametrize("step", CROWDED_STEPS)
def test_each_step_of_a_crowded_history_prints_what_no_cache_prints(tmp_path: Path, step: Any) -> None:
    repo = crowded_repo(tmp_path)
    args = stats_args("--min-score", "0", "--max-add", "500")
    build(repo, *args)
    build(repo, *args)  # their results kept
    step(repo / "sessions")
    age(*(repo / "sessions").iterdir())
    same_as_no_cache(repo, *args)
    same_as_no_cache(repo, *args)
    warm = build(repo, "sessions", "--memory", "AGENTS.md", "--json", "--min-score", "0", "--max-add", "500")
    plain = build(repo, "sessions", "--memory", "AGENTS.md", "--json", "--min-score", "0", "--max-add", "500",
                  "--no-cache")
    assert comparable(warm[0]) == comparable(plain[0])


def test_a_rewrite_of_the_same_size_and_mtime_is_read_again(repo: Path) -> None:
    rich = repo / "sessions" / "rich.jsonl"
    build(repo, *stats_args())
    before = rich.stat()
    data = rich.read_bytes()
    rich.write_bytes(data.replace(b"Fridays", b"Mondays"))  # same size
    os.utime(rich, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime; the ctime moved
    total = len(build(repo, "sessions", "--list-sources")[0].splitlines())
    assert same_as_no_cache(repo, *stats_args()) == total - 1


def test_a_file_modified_within_the_racy_window_is_read_again(repo: Path) -> None:
    rich = repo / "sessions" / "rich.jsonl"
    now = time.time_ns()
    os.utime(rich, ns=(now, now))
    build(repo, *stats_args())
    total = len(build(repo, "sessions", "--list-sources")[0].splitlines())
    assert same_as_no_cache(repo, *stats_args()) == total - 1  # never reused while racy


def garble_indexes(folder: Path) -> None:
    for path in indexes(folder):
        path.write_bytes(path.read_bytes()[:-7] + b"garbage")


def rewrite_index(change: Any) -> Any:
    def corrupt(folder: Path) -> None:
        for index in indexes(folder):
            write_kept(index, change(read_kept(index)))
    return corrupt


def spoiled(entry: list[Any]) -> list[Any]:
    """An entry whose candidates say something else: were it taken up, the output would
    differ. (One an earlier corruption left of no result's shape stays as it is.)"""
    result = entry[5]
    if type(result) is not list or not result or type(result[0]) is not list:
        return entry
    return [*entry[:5], [[[f"{row[0]} Spoiled.", *row[1:]] for row in result[0]], *result[1:]]]


def entries_changed(change: Any) -> Any:
    """Each entry spoiled and changed, as a run of another build or a bug might have written it."""
    return rewrite_index(lambda doc: {**doc, "entries": {k: change(spoiled(e)) for k, e in doc["entries"].items()}})


def results_changed(change: Any) -> Any:
    """Each entry's result (plain_result's) spoiled and changed."""
    return entries_changed(lambda e: [*e[:5], change(e[5])])


def candidates_changed(change: Any) -> Any:
    """Each kept candidate of each result spoiled and changed."""
    return results_changed(lambda r: [[change(row) for row in r[0]], *r[1:]])


def entries_swapped(doc: dict[str, Any]) -> dict[str, Any]:
    """Each entry under the name of the next: of another file than its name says."""
    names = list(doc["entries"])
    return {**doc, "entries": {a: spoiled(doc["entries"][b]) for a, b in zip(names, names[1:] + names[:1])}}


def wrong_types(doc: dict[str, Any]) -> dict[str, Any]:
    for entry in doc["entries"].values():
        entry[1] = [str(x) for x in entry[1]]
    return doc


def replace_with_folders(folder: Path) -> None:
    for path in folder.iterdir():
        if not path.is_dir():
            path.unlink()
            path.mkdir()


def hashed(data: bytes) -> bytes:
    """Bytes under the SHA-256 header the module checks: what a hand or another build wrote."""
    import hashlib
    return hashlib.sha256(data).digest() + data


def code_object() -> bytes:
    """marshal's bytes of a code object marshal cannot build (more positional-only
    arguments than arguments): loading them raises SystemError."""
    import marshal
    data = bytearray(marshal.dumps((lambda: 0).__code__, 2))
    data[5:9] = (7).to_bytes(4, "little")
    return bytes(data)


def index_bytes(change: Any) -> Any:
    """Each results index replaced by the bytes change(index) gives, hashed."""
    def corrupt(folder: Path) -> None:
        for index in indexes(folder):
            with contextlib.suppress(ValueError):  # one this corruption wrote before stays so
                index.write_bytes(hashed(change(read_kept(index))))
    return corrupt


def holding_itself(doc: dict[str, Any]) -> bytes:
    import marshal
    loop: list[Any] = []
    loop.append(loop)
    for entry in doc["entries"].values():
        entry.append(loop)
    return marshal.dumps(doc, 4)  # marshal's format 4 writes references: a list in itself


def fifo_for_index(folder: Path) -> None:
    for index in indexes(folder):
        index.unlink()
        os.mkfifo(index)


def truncate_everything(folder: Path) -> None:
    for path in folder.iterdir():
        path.write_bytes(b"")


def test_a_spoiled_result_is_taken_as_written(repo: Path) -> None:
    # What the corruptions below that spoil a result rely on: the cache trusts a result
    # that is well formed, so the spoiled text shows when nothing else is wrong.
    build(repo, *stats_args())
    entries_changed(lambda entry: entry)(cache_folder(repo))
    assert b"Spoiled." in build(repo, *stats_args())[0]


FORMAT_2 = "ab" * 32  # what an entry of format 2 held: the SHA-256 of the pack holding its result
CORRUPTIONS = [
    pytest.param(garble_indexes, id="index-garbled"),
    pytest.param(rewrite_index(lambda doc: {**doc, "key": {"build": "another"}}), id="index-of-another-build"),
    pytest.param(rewrite_index(lambda doc: {**doc, "format": 2, "links": None, "entries": {
        k: [*e[:5], FORMAT_2] for k, e in doc["entries"].items()}}), id="index-of-format-2"),
    pytest.param(rewrite_index(lambda doc: {**doc, "entries": {k: [*e[:5], FORMAT_2] for k, e in doc["entries"].items()}}),
                 id="index-naming-packs"),
    pytest.param(rewrite_index(lambda doc: [doc]), id="index-a-list"),
    pytest.param(rewrite_index(wrong_types), id="index-wrong-types"),
    pytest.param(rewrite_index(lambda doc: {**doc, "entries": {k: 1 for k in doc["entries"]}}),
                 id="index-entries-not-lists"),
    pytest.param(rewrite_index(lambda doc: {**doc, "entries": {k: tuple(e) for k, e in doc["entries"].items()}}),
                 id="index-entries-tuples"),
    pytest.param(rewrite_index(lambda doc: {**doc, "entries": {k: e[:5] for k, e in doc["entries"].items()}}),
                 id="index-entries-a-field-short"),
    pytest.param(index_bytes(holding_itself), id="index-entries-holding-themselves"),
    pytest.param(index_bytes(lambda doc: code_object()), id="index-a-code-object-of-no-build"),
    pytest.param(index_bytes(lambda doc: b"(\xff\xff\x00\x00"), id="index-a-tuple-longer-than-its-bytes"),
    pytest.param(rewrite_index(entries_swapped), id="entries-swapped"),
    pytest.param(entries_changed(lambda e: [e[0], [n + 1 for n in e[1]], *e[2:]]), id="entry-of-another-identity"),
    pytest.param(entries_changed(lambda e: [e[0] + "x", *e[1:]]), id="entry-of-another-path"),
    pytest.param(entries_changed(lambda e: [*e[:4], not e[4], e[5]]), id="entry-walked-flipped"),
    pytest.param(entries_changed(lambda e: [e[0], e[1], 0, *e[3:]]), id="entry-stamped-before-the-file-changed"),
    pytest.param(results_changed(lambda r: [[["x"]], {}, None, 3]), id="result-of-another-shape"),
    pytest.param(results_changed(lambda r: r[:5]), id="result-a-field-short"),
    pytest.param(results_changed(lambda r: [*r, 0]), id="result-a-field-more"),
    pytest.param(results_changed(lambda r: tuple(r)), id="result-a-tuple"),
    pytest.param(results_changed(lambda r: (lambda: 0).__code__), id="result-a-code-object"),
    pytest.param(results_changed(lambda r: [r[0], [[k, 10**30] for k, _ in r[1]], *r[2:]]),
                 id="a-counter-past-64-bits"),
    pytest.param(results_changed(lambda r: [r[0], r[1] + r[1][:1], *r[2:]]), id="a-counter-twice"),
    pytest.param(results_changed(lambda r: [r[0], dict(r[1]), *r[2:]]), id="counters-a-dict"),
    pytest.param(results_changed(lambda r: [*r[:2], [[o[:2], *x] for o, *x in r[2]] or [[[1], "a", "b"]], *r[3:]]),
                 id="explain-order-short"),
    pytest.param(results_changed(lambda r: [*r[:3], [[1, "CLAUDE.md", "not a list"]], *r[4:]]),
                 id="writes-of-another-shape"),
    pytest.param(results_changed(lambda r: [*r[:4], 5, r[5]]), id="conversation-key-a-number"),
    pytest.param(results_changed(lambda r: [*r[:4], "file:elsewhere/x.jsonl", r[5]]),
                 id="conversation-key-of-another-path"),
    pytest.param(results_changed(lambda r: [*r[:5], "4"]), id="through-a-string"),
    pytest.param(candidates_changed(lambda row: row[:-1]), id="a-candidate-a-field-short"),
    pytest.param(candidates_changed(lambda row: [*row, ""]), id="a-candidate-a-field-more"),
    pytest.param(candidates_changed(tuple), id="a-candidate-a-tuple"),
    pytest.param(candidates_changed(lambda row: [*row[:3], 10**5000, *row[4:]]), id="a-line-of-5001-digits"),
    pytest.param(candidates_changed(lambda row: [*row[:6], 6.0, *row[7:]]), id="a-score-a-float"),
    pytest.param(truncate_everything, id="everything-empty"),
    pytest.param(fifo_for_index, id="index-a-fifo", marks=pytest.mark.skipif(not hasattr(os, "mkfifo"),
                                                                            reason="no FIFOs here")),
    pytest.param(replace_with_folders, id="folders-in-place-of-files"),
    pytest.param(lambda folder: shutil.rmtree(folder), id="deleted"),
]


UNCACHED: list[tuple[bytes, list[str], int]] = []  # every rich_repo fixture reads the same files
# --explain keeps a run's whole verdict in the cache (reasons and order besides proposals),
# so its entries hold every field a corruption can spoil; --stats shows every counter.
EVERYTHING = ("sessions", "--memory", "AGENTS.md", "--explain", "--stats")


@pytest.mark.parametrize("corrupt", CORRUPTIONS)
def test_a_corrupt_cache_changes_nothing(rich_repo: Path, corrupt: Any) -> None:
    build(rich_repo, *EVERYTHING)
    corrupt(cache_folder(rich_repo))
    after = build(rich_repo, *EVERYTHING)
    if not UNCACHED:
        UNCACHED.append(build(rich_repo, *EVERYTHING, "--no-cache"))
    assert after[0] == UNCACHED[0][0]
    assert without_cached(after[1]) == without_cached(UNCACHED[0][1])
    # What can be rewritten is: the next run reuses it again.
    again = build(rich_repo, *EVERYTHING)
    if corrupt is not replace_with_folders:  # a folder where a file goes stays there
        assert cached(again[1]) > 0


UNWRITABLE = [
    pytest.param(lambda repo: (repo / ".git" / "memory-diff").write_text("a file", encoding="utf-8"),
                 id="cache-folder-is-a-file"),
    pytest.param(lambda repo: ((repo / ".git").rmdir(), (repo / ".git").write_text("gitdir: /nonexistent/x\n")),
                 id="gitdir-missing"),
    pytest.param(lambda repo: ((repo / ".git").rmdir(), (repo / ".git").write_text("not a gitdir line\n")),
                 id="git-file-without-gitdir"),
]


@pytest.mark.parametrize("spoil", UNWRITABLE)
def test_an_unwritable_cache_changes_nothing(repo: Path, spoil: Any) -> None:
    spoil(repo)
    assert same_as_no_cache(repo, *stats_args()) == 0
    assert same_as_no_cache(repo, *stats_args()) == 0


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root writes anywhere")
def test_a_read_only_git_directory_changes_nothing(repo: Path) -> None:
    os.chmod(repo / ".git", 0o555)
    try:
        assert same_as_no_cache(repo, *stats_args()) == 0
    finally:
        os.chmod(repo / ".git", 0o755)


def no_space(*args: Any, **kwargs: Any) -> Any:
    raise OSError(28, "No space left on device")


def not_permitted(*args: Any, **kwargs: Any) -> Any:
    raise PermissionError(13, "Permission denied")


FAILING_WRITES = [
    pytest.param("tempfile.mkstemp", no_space, id="disk-full"),
    pytest.param("os.replace", not_permitted, id="rename-refused"),
    pytest.param("os.makedirs", not_permitted, id="folder-refused"),
]


@pytest.mark.parametrize(("target", "failure"), FAILING_WRITES)
def test_a_cache_that_cannot_be_written_is_still_read(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsysbinary: pytest.CaptureFixture[bytes],
                                                      target: str, failure: Any) -> None:
    sys.path.insert(0, str(ROOT))
    import memory_diff
    build(repo, *stats_args())  # a cache written while it could be
    (repo / "sessions" / "rich.jsonl").write_bytes((repo / "sessions" / "rich.jsonl").read_bytes() + b"\n")
    age(repo / "sessions" / "rich.jsonl")
    plain_grown = build(repo, *stats_args("--no-cache"))
    monkeypatch.chdir(repo)
    monkeypatch.setattr(target, failure)
    assert memory_diff.main(["build", *stats_args("--jobs", "1")]) == 0
    out, err = capsysbinary.readouterr()
    total = len(build(repo, "sessions", "--list-sources")[0].splitlines())
    assert out == plain_grown[0]
    assert without_cached(err.decode().splitlines()) == without_cached(plain_grown[1])
    assert cached(err.decode().splitlines()) == total - 1  # the grown one is read, and cannot be kept


def test_outside_a_repository_there_is_no_cache(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "outside"
    shutil.copytree(repo / "sessions", outside / "sessions")
    age(*(outside / "sessions").iterdir())
    build(outside, *stats_args())
    assert same_as_no_cache(outside, *stats_args()) == 0
    assert sorted(p.name for p in outside.iterdir()) == ["sessions"]


def test_a_worktree_keeps_its_cache_in_the_git_directory_it_names(tmp_path: Path, repo: Path) -> None:
    shutil.rmtree(repo / ".git")
    gitdir = tmp_path / "main.git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (repo / ".git").write_text(f"gitdir: {os.path.relpath(gitdir, repo)}\n", encoding="utf-8")
    build(repo, *stats_args())
    assert indexes(gitdir / "memory-diff")
    total = len(build(repo, "sessions", "--list-sources")[0].splitlines())
    assert same_as_no_cache(repo, *stats_args()) == total


def test_the_cache_holds_no_withheld_text(repo: Path) -> None:
    for mode in ([], ["--explain"], ["--json"], ["--stats", "--min-score", "0"]):
        build(repo, "sessions", "--memory", "AGENTS.md", *mode)
    held = b"".join(p.read_bytes() for p in cache_folder(repo).iterdir())
    assert b"ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" not in held
    assert b"Fridays" in held  # the results are there


def test_a_config_value_is_part_of_the_key(repo: Path) -> None:
    build(repo, *stats_args())
    (repo / ".memory-diff.toml").write_text('signal = ["customers"]\nmin_score = 2\n', encoding="utf-8")
    assert same_as_no_cache(repo, *stats_args()) == 0
    (repo / ".memory-diff.toml").write_text('noise = ["decided"]\n', encoding="utf-8")
    assert same_as_no_cache(repo, *stats_args()) == 0


def test_another_build_of_the_module_does_not_reuse_it(tmp_path: Path, repo: Path) -> None:
    build(repo, *stats_args())
    other = tmp_path / "other" / "memory_diff.py"
    other.parent.mkdir()
    other.write_bytes(SCRIPT.read_bytes() + b"\n# another build\n")
    proc = subprocess.run([sys.executable, str(other), "build", *stats_args()], cwd=repo, capture_output=True)
    assert "cached_files=0" in proc.stderr.decode().splitlines()


def test_the_index_holds_one_result_a_transcript(repo: Path) -> None:
    # As sessions come and go, the results index names each transcript read once, by its
    # absolute path, and the folder holds the indexes alone.
    folder, sessions = cache_folder(repo), repo / "sessions"
    build(repo, *stats_args())
    for n in range(3):
        write_jsonl(sessions / f"later-{n}.jsonl", [claude("user", f"We must never deploy build {n} on Fridays.", 1)])
        age(sessions / f"later-{n}.jsonl")
        listed = build(repo, "sessions", "--list-sources")[0].decode().splitlines()
        assert same_as_no_cache(repo, *stats_args()) == len(listed) - 1  # all but the new session
        doc = read_kept(max(indexes(folder), key=lambda p: p.stat().st_mtime_ns))
        assert sorted(doc["entries"]) == sorted(str(repo / line.split("\t")[0]) for line in listed)
        assert all(entry[0] == name for name, entry in doc["entries"].items())
    assert sorted(p.name.split("-")[0] for p in folder.iterdir()) == ["discovery", "results"]


def test_files_of_earlier_formats_are_swept(repo: Path) -> None:
    # A new index sweeps the folder: format 2's packs, format 1's JSON files and the
    # temporary files of runs that failed go; a temporary file this new may be another
    # run's, and stays.
    folder = cache_folder(repo)
    folder.mkdir(parents=True)
    old = [folder / f"{'ab' * 32}{md.CACHE_SUFFIX}", folder / "results-0123.json", folder / ".tmp-failed"]
    for path in [*old, folder / ".tmp-running"]:
        path.write_bytes(b"x")
    age(*old)
    build(repo, *stats_args())
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(("results-", "discovery-"))) == \
        [".tmp-running"]


def test_the_cache_stays_bounded(repo: Path) -> None:
    folder = cache_folder(repo)
    for score in range(7):  # seven option sets: only the newest indexes are kept
        build(repo, *stats_args("--min-score", str(score)))
    assert len(indexes(folder)) <= 4
    # A file that no longer exists is dropped from the index, and its result with it.
    (repo / "sessions" / "rich.jsonl").unlink()
    build(repo, *stats_args())
    doc = read_kept(max(indexes(folder), key=lambda p: p.stat().st_mtime_ns))
    assert not [k for k in doc["entries"] if k.endswith("rich.jsonl")]
    # The indexes are all the folder holds.
    assert all(p.name.startswith(("results-", "discovery-")) for p in folder.iterdir())


def test_pruning_deletes_nothing_outside_the_cache(tmp_path: Path) -> None:
    # Discovery's index holds what it read (a session's cwd), no file names: a cwd of a
    # result name's length, with a file `<cwd>.json` beside it, must outlive its session.
    import tempfile
    root = Path(tempfile.mkdtemp(prefix="md-"))  # short enough for a cwd of 64 characters inside it
    try:
        _prune_beside(root, tmp_path)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _prune_beside(root: Path, tmp_path: Path) -> None:
    (root / ".git").mkdir(parents=True)
    cwd = str(root) + "/"
    cwd += "d" * (64 - len(cwd))
    os.makedirs(cwd)
    victim = Path(cwd + md.CACHE_SUFFIX)
    victim.write_text('{"precious": true}', encoding="utf-8")
    config = tmp_path / "config"
    project = config / "projects" / md_slug(str(root))
    project.mkdir(parents=True)
    session = project / "s.jsonl"
    write_jsonl(session, [dict(record, cwd=cwd) for record in RICH])
    age(session, victim)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config)}
    for _ in range(2):
        build(root, "--memory", "AGENTS.md", "--stats", env=env)
    session.unlink()  # its discovery entry goes
    build(root, "--memory", "AGENTS.md", "--stats", env=env)
    assert victim.read_text(encoding="utf-8") == '{"precious": true}'


def md_slug(path: str) -> str:
    sys.path.insert(0, str(ROOT))
    import memory_diff
    return memory_diff.claude_slug(path)


def test_two_runs_at_once_leave_a_cache_that_changes_nothing(repo: Path) -> None:
    args = [*MEMORY_DIFF, "build", *stats_args()]
    for _ in range(3):
        procs = [subprocess.Popen(args, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert len({out for out, _ in outs}) == 1
        assert all(p.returncode == 0 for p in procs)
    assert same_as_no_cache(repo, *stats_args()) > 0
    assert not list(cache_folder(repo).glob(".tmp-*"))


# -- discovery: the hook's own reading of each session's cwd ------------------------------

def hook_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "hook-repo"
    (repo / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    sys.path.insert(0, str(ROOT))
    import memory_diff
    slug = memory_diff.claude_slug(os.path.realpath(repo))
    projects = home / ".claude" / "projects" / slug
    projects.mkdir(parents=True)
    for n in range(5):
        records = [dict(r, cwd=os.path.realpath(repo), sessionId=f"{SESSION[:-1]}{n}") for r in RICH]
        records[0]["message"] = {"role": "user", "content": f"We must never deploy on day {n} because of audits."}
        write_jsonl(projects / f"session-{n}.jsonl", records)
    elsewhere = home / ".claude" / "projects" / (slug + "-sub")
    elsewhere.mkdir()
    write_jsonl(elsewhere / "other.jsonl", [dict(RICH[0], cwd="/somewhere/else")])
    age(*projects.iterdir(), *elsewhere.iterdir())
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_HOME", "CONFIG_DIR"))}
    return repo, {**env, "HOME": str(home)}


def test_discovery_reuses_what_it_read_and_the_hook_prints_the_same(tmp_path: Path) -> None:
    repo, env = hook_repo(tmp_path)
    for mode in (["--list-sources"], ["--memory", "AGENTS.md", "--stats"], ["--memory", "AGENTS.md"]):
        plain = build(repo, *mode, "--no-cache", env=env)
        cold = build(repo, *mode, env=env)
        warm = build(repo, *mode, env=env)
        assert plain[0] == cold[0] == warm[0]
        assert without_cached(plain[1]) == without_cached(warm[1])
    # The sessions of the repository's cwd are the ones read, the last one too (the patch's
    # preamble no longer names every session that wrote CLAUDE.md: one summary line).
    listed = build(repo, "--list-sources", env=env)[0]
    assert b"session-4.jsonl" in listed and b"other.jsonl" not in listed
    assert cached(build(repo, "--memory", "AGENTS.md", "--stats", env=env)[1]) == 5
    assert list(cache_folder(repo).glob(f"discovery-*{md.CACHE_SUFFIX}"))


def test_a_baseline_and_then_a_grown_session_give_what_no_cache_gives(repo: Path) -> None:
    # The baseline is an option the results are keyed on: a warm run after a baseline is
    # recorded, and after the session then grows, must equal --no-cache each time.
    sessions, seen = repo / "sessions", repo / "seen.md"
    args = ["sessions", "--memory", "AGENTS.md", "--seen", "seen.md", "--stats"]
    build(repo, *args)  # warm the cache with no baseline in play
    patch, _, _ = build(repo, *args[:-1], "--baseline")
    assert patch, "nothing to baseline"
    subprocess.run(["git", "apply", "--include", "seen.md", "-"], cwd=repo, input=patch, check=True)
    assert "memory-diff baseline:" in seen.read_text(encoding="utf-8")
    for _ in range(2):
        out, stats, _ = build(repo, *args)
        plain, plain_stats, _ = build(repo, *args, "--no-cache")
        assert (out, without_cached(stats)) == (plain, without_cached(plain_stats))
    assert out == b"", "the baseline recorded everything read"
    records = RICH + [claude("user", "We must always tag releases from the release branch because "
                                     "hotfixes land there first.", 6)]
    write_jsonl(sessions / "rich.jsonl", records)
    age(sessions / "rich.jsonl")
    out, stats, _ = build(repo, *args)
    plain, plain_stats, _ = build(repo, *args, "--no-cache")
    assert (out, without_cached(stats)) == (plain, without_cached(plain_stats))
    assert b"+- We must always tag releases" in out




def _plain() -> list[Any]:
    """plain_result of one result of one candidate, taken back as it was."""
    cand = md.Candidate("Never deploy on Fridays.", "never deploy on fridays", "user", "t.jsonl", 3,
                        "2026-01-20T04:16:01.000Z", "constraint", 6, (0, 3, 1, 0), "conv", "t.jsonl:2")
    result = md.FileResult([cand], md.Counter({"prose": 1}), [])
    plain = md.cache_value(md.cache_bytes(md.plain_result(result, "t.jsonl")))
    assert md.rebuilt(plain, 0, "t.jsonl", md.cwd_root()) == result
    return plain


# One field of a kept candidate of another type than plain_result writes (or a field more
# or fewer): the result is not reused (its file is read again), whatever else is right.
@pytest.mark.parametrize(("field", "value"), [
    pytest.param(0, None, id="text-none"),
    pytest.param(3, "3", id="line-a-string"),
    pytest.param(3, True, id="line-a-bool"),
    pytest.param(3, -(1 << 63), id="line-past-64-bits"),
    pytest.param(4, 5, id="timestamp-a-number"),
    pytest.param(6, 6.0, id="score-a-float"),
    pytest.param(8, "1", id="order-a-string"),
    pytest.param(9, False, id="order-a-bool"),
    pytest.param(10, 1, id="conversation-a-number"),
    pytest.param(11, "2", id="request-a-string"),
    pytest.param(14, None, id="also-none"),
    pytest.param(15, "", id="a-field-too-many"),
    pytest.param(14, ..., id="a-field-short"),
])
def test_a_kept_candidate_of_another_shape_is_not_reused(field: int, value: Any) -> None:
    plain = _plain()
    row = plain[0][0]
    if value is ...:
        del row[field]
    elif field < len(row):
        row[field] = value
    else:
        row.append(value)
    with pytest.raises((ValueError, TypeError)):
        md.rebuilt(plain, 0, "t.jsonl", md.cwd_root())


@pytest.mark.parametrize(("key", "taken"), [
    pytest.param(None, True, id="no-key"),
    pytest.param("claude:00000000-0000-4000-8000-cccccccccccc", True, id="a-session-id"),
    pytest.param(md.file_key("t.jsonl", md.cwd_root()), True, id="the-file-key-of-this-run"),
    pytest.param("file:elsewhere/t.jsonl", False, id="a-file-key-moved-with-a-link-or-home"),
])
def test_a_result_keyed_by_its_path_is_taken_where_the_key_is_this_runs(key: Any, taken: bool) -> None:
    # A baseline's key of a transcript that names no session is its real path: a link
    # repointed at a hard link of the same file, or another home folder, moves it.
    cand = md.Candidate("Never deploy on Fridays.", "never deploy on fridays", "user", "t.jsonl", 3,
                        None, "constraint", 6, (0, 3, 1, 0), "t.jsonl")
    result = md.FileResult([cand], md.Counter({"prose": 1}), [], [], key, 4)
    plain = md.cache_value(md.cache_bytes(md.plain_result(result, "t.jsonl")))
    if taken:
        assert md.rebuilt(plain, 0, "t.jsonl", md.cwd_root()) == result
    else:
        with pytest.raises(ValueError):
            md.rebuilt(plain, 0, "t.jsonl", md.cwd_root())
