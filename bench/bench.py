#!/usr/bin/env python3
"""Side-by-side benchmark of two checkouts of ``memory-diff build`` (stdlib only).

Usage, from anywhere:

    python3 bench/bench.py --before 4568168            # that commit vs the work tree
    python3 bench/bench.py --before 4568168 --after HEAD --sections corpus
    python3 bench/bench.py --quick                     # CI: HEAD vs the work tree, small

``--before`` (default HEAD) is a revision, exported with ``git archive`` into a temporary
folder, or a folder or .py file; ``--after`` likewise, by default this work tree's
memory_diff.py. Each side is compiled as pip compiles it at install and run the way the
console script runs it (``from memory_diff import main``), so only the command line and
``main`` are used: a tree without the other's internals times the same way. The
``script`` row runs ``python memory_diff.py`` instead, which compiles the source on
every run.

Every measurement is a whole process. The two sides alternate, the order reversed every
round (before, after, after, before, ...), after one untimed run of each (page cache,
and the cache the warm rows read). Each row prints both medians, their ratio
after/before (with issue 25's bound where it sets one: 1.15x for the cold corpus rows in
one process and with the default jobs, 1.3x for hook-real) and each side's peak resident
memory (``os.wait4``'s ru_maxrss; with more than one job, the largest process of the
tree). Both sides run with the same arguments in the same folder, a repository of its
own; each side keeps its own cache there, moved into place before each of its runs (not
timed).

Sections (``--sections``, all by default):

* corpus:    ../shared/corpus/sessions cold (``--no-cache``) in one process
             (``--jobs 1``), with the default jobs, as a script in one process, and warm
             (the cache of unchanged files); the teams' transcripts cold in one process;
* synthetic: one synthetic Claude Code-style session (8 MB, quick 0.2 MB), cold, one
             process, against a memory file of 10,000 bullets: runs without the corpus;
* hook:      the pre-commit hook (discovery included, warm) over N synthetic finished
             sessions of 64 kB and one new 1 MB session, touched before each run;
* hook-real: the same over N copies of the corpus's sessions (real-sized; each copy its
             own session id and the repository's cwd) and one corpus session new.

The corpus parts are skipped with one line when ../shared/corpus is absent. ``--quick``
is a small run for CI so the script cannot rot: one round, the corpus capped at 2 MB, 20
hook sessions. Nothing about time is asserted; the exit status is non-zero only when a
run fails. Figures belong in bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import py_compile
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import HarnessError, resolve  # noqa: E402  (bench/compare.py, beside this file)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
MB = 1_000_000  # sizes in decimal megabytes
MIB = 1024 * 1024  # resident memory in binary megabytes
SIDES = ("before", "after")


class BenchError(Exception):
    """A measured process failed; the message says which and why."""


@dataclass
class Sample:
    seconds: float
    max_rss: int  # bytes; 0 when the platform cannot tell


@dataclass
class Variant:
    name: str
    argv: list[str]
    cwd: Path
    before: Callable[[], None] | None = None  # run before each measured run, not timed
    env: dict[str, str] | None = None
    samples: list[Sample] = field(default_factory=list)

    def median_seconds(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    def peak_rss(self) -> int:
        return max((s.max_rss for s in self.samples), default=0)


# --------------------------------------------------------------------------
# process measurement


# Linux starts a child's peak RSS at its parent's resident size (fork copies the page
# tables, exec keeps the high-water mark), so a process started by this script, which
# holds generated data, would report this script's size as its own floor. Every
# measured process is started by a small spawner instead, itself started first; it
# times each run and returns its wait4 usage.
SPAWNER_SCRIPT = """\
import json, os, subprocess, sys, time
for line in sys.stdin:
    argv, cwd, err_path, env = json.loads(line)
    with open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env=None if env is None else {**os.environ, **env})
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    print(json.dumps([seconds, os.waitstatus_to_exitcode(status), usage.ru_maxrss]), flush=True)
"""


class Spawner:
    """The spawner process; run() measures one command through it."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SPAWNER_SCRIPT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self, argv: Sequence[str], cwd: Path, err_path: Path,
            env: dict[str, str] | None = None) -> tuple[float, int, int]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps([list(argv), str(cwd), str(err_path), env]) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise BenchError("the spawner process died")
        seconds, code, max_rss = json.loads(reply)
        return seconds, code, max_rss

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


SPAWNER: Spawner | None = None  # started by main() where wait4 exists


def run_measured(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Sample:
    """Run one process to completion (`env` added to this one's); return wall time and peak RSS."""
    err_path = cwd / "stderr.txt"
    if SPAWNER:
        seconds, code, max_rss = SPAWNER.run(argv, cwd, err_path, env)
        # Linux reports KiB, macOS and the BSDs bytes.
        rss = max_rss * (1 if sys.platform == "darwin" else 1024)
    else:  # pragma: no cover - platforms without wait4: time only
        with open(err_path, "wb") as err:
            start = time.perf_counter()
            code = subprocess.run(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=err, env=None if env is None else {**os.environ, **env}).returncode
            seconds, rss = time.perf_counter() - start, 0
    if code != 0:
        tail = err_path.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        shown = " ".join(argv[:4]) + (" ..." if len(argv) > 4 else "")
        raise BenchError(f"exit {code} from {shown}\n{tail}")
    return Sample(seconds, rss)



def run_rounds(variants: list[Variant], repeat: int) -> None:
    """One untimed run of each, then ``repeat`` rounds, the order reversed each round."""
    for variant in variants:
        if variant.before:
            variant.before()
        run_measured(variant.argv, variant.cwd, variant.env)
    for rnd in range(repeat):
        for variant in variants if rnd % 2 == 0 else list(reversed(variants)):
            if variant.before:
                variant.before()
            variant.samples.append(run_measured(variant.argv, variant.cwd, variant.env))


# What the console script `memory-diff` does, with the compiled module's folder first.
INSTALLED_SCRIPT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from memory_diff import main; sys.exit(main())"


@dataclass
class Side:
    name: str  # "before" or "after"
    source: Path  # its memory_diff.py
    installed: Path  # the folder holding its compiled module

    def argv(self, *args: str, script: bool = False) -> list[str]:
        start = [str(self.source)] if script else ["-c", INSTALLED_SCRIPT, str(self.installed)]
        return [sys.executable, *start, *args]


def install(source: Path, folder: Path) -> Path:
    """Compile the module as pip does at install; the folder to import it from."""
    folder.mkdir(parents=True)
    py_compile.compile(str(source), cfile=str(folder / "memory_diff.pyc"), doraise=True)
    return folder


def fake_repo(folder: Path) -> Path:
    """A folder with an empty .git directory: enough for memory-diff to keep its cache."""
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    return folder


class Caches:
    """Each side's cache in one repository: the side about to run has its own moved into
    .git/memory-diff, the other's waits beside it (a rename, not timed)."""

    def __init__(self, repo: Path) -> None:
        self.git = repo / ".git"
        self.current: str | None = None

    def use(self, side: str) -> None:
        if self.current == side:
            return
        live = self.git / "memory-diff"
        if self.current is not None and live.exists():
            live.rename(self.git / f"memory-diff-{self.current}")
        elif live.exists():
            shutil.rmtree(live)
        kept = self.git / f"memory-diff-{side}"
        if kept.exists():
            kept.rename(live)
        self.current = side


def pair(label: str, sides: Sequence[Side], argv: Callable[[Side], list[str]], cwd: Path,
         caches: Caches, repeat: int, env: dict[str, str] | None = None,
         prepare: Callable[[], None] | None = None, target: float | None = None) -> str:
    """Time one scenario on both sides, alternating; the row that reports it, with the
    verdict against issue 25's bound on the ratio where it sets one."""
    def before_run(side: str) -> Callable[[], None]:
        def run() -> None:
            caches.use(side)
            if prepare:
                prepare()
        return run
    variants = [Variant(s.name, argv(s), cwd, before_run(s.name), env) for s in sides]
    run_rounds(variants, repeat)
    old, new = variants
    ratio = new.median_seconds() / old.median_seconds()
    verdict = "" if target is None else f" ({'within' if ratio <= target else 'OVER'} {target:g}x)"
    line = (f"{label}: before {old.median_seconds():.3f} s, after {new.median_seconds():.3f} s, "
            f"after/before {ratio:.2f}x{verdict} | peak RSS "
            f"{fmt_rss(old.peak_rss())} / {fmt_rss(new.peak_rss())}")
    print(line, flush=True)
    return line


def fmt_mb(n_bytes: float) -> str:
    return f"{n_bytes / MB:.1f} MB"


def fmt_rss(n_bytes: int) -> str:
    return f"{n_bytes / MIB:.0f} MB" if n_bytes else "n/a"


# --------------------------------------------------------------------------
# synthetic transcripts (invented text; deterministic for a given seed)

COMPONENTS = [
    "cache layer", "scheduler", "config loader", "migration runner", "auth middleware",
    "webhook handler", "index builder", "retry queue", "session store", "rate limiter",
    "export job", "search service", "billing adapter", "log shipper", "feature flag client",
    "upload worker", "template engine", "metrics exporter", "plugin registry", "diff renderer",
]
PLACES = ["SQLite", "Redis", "the main process", "a sidecar", "the worker pool",
          "a temp directory", "the repo root", "memory", "the CI runner", "object storage"]
REASONS = [
    "it survives restarts", "the old path raced on shutdown", "CI has no network access",
    "the vendor API throttles bursts", "tests must stay hermetic", "it keeps startup under 50 ms",
    "the lock file is shared between jobs", "users run it on Windows too",
    "the schema changes every release", "retries already happen upstream",
]
COMMANDS = ["make lint", "go test ./...", "npm run check", "pytest -q", "cargo fmt",
            "ruff check .", "make generate", "git fetch --prune", "tox -e py311", "just fmt"]
PATHS = ["internal/store/store.go", "src/app/config.py", "cmd/tool/main.go", "lib/queue.ts",
         "pkg/hooks/hooks.go", "docs/ARCHITECTURE.md", "scripts/release.sh", "api/schema.json",
         "web/src/routes.tsx", "tests/helpers.py"]
STYLES = ["small pure functions", "table-driven tests", "explicit error wrapping",
          "early returns", "dataclasses", "plain SQL", "one package per feature",
          "structured logging", "golden files", "named constants"]
FAILURES = ["deadlocked", "dropped events", "leaked file handles", "returned stale rows",
            "double-counted retries", "timed out", "panicked on empty input",
            "truncated long lines", "lost the trailing newline", "skipped the last batch"]
CONDITIONS = ["two jobs started at once", "the config file was missing",
              "the clock jumped backwards", "the input had no final newline",
              "the branch name contained a slash", "the queue was empty at startup",
              "a hook ran inside a worktree", "the disk was full", "the token expired",
              "the user pressed Ctrl-C"]
VERBS = ["cache", "rewrite", "mock", "inline", "split", "rename", "vendor", "lock",
         "retry", "shard", "batch", "stub", "reorder", "serialize", "preload"]
NAMES = ["load", "parse", "apply", "flush", "resolve", "render", "commit", "scan",
         "merge", "index", "verify", "encode", "decode", "prune", "sync"]
SYMBOLS = ["→", "✓", "é", "—", "µs", "…"]


def _signal_sentence(rng: random.Random) -> str:
    c, c2 = rng.sample(COMPONENTS, 2)
    templates: list[Callable[[], str]] = [
        lambda: f"We decided to keep the {c} in {rng.choice(PLACES)} because {rng.choice(REASONS)}.",
        lambda: f"Never {rng.choice(VERBS)} the {c} directly; go through the {c2} instead.",
        lambda: f"Always run `{rng.choice(COMMANDS)}` before pushing changes to {rng.choice(PATHS)}.",
        lambda: f"The root cause was that the {c} {rng.choice(FAILURES)} when {rng.choice(CONDITIONS)}.",
        lambda: f"I prefer {rng.choice(STYLES)} over {rng.choice(STYLES)} in the {c} code.",
        lambda: f"Don't edit {rng.choice(PATHS)} by hand, it is generated by `{rng.choice(COMMANDS)}`.",
        lambda: f"The {c} must stay idempotent since the {c2} retries on every failure.",
        lambda: f"We chose {rng.choice(PLACES)} instead of {rng.choice(PLACES)} for the {c}.",
    ]
    return rng.choice(templates)()


def _noise_sentence(rng: random.Random) -> str:
    c = rng.choice(COMPONENTS)
    templates: list[Callable[[], str]] = [
        lambda: f"Let me look at {rng.choice(PATHS)} to see how the {c} is wired.",
        lambda: f"Now I'll update the {c} tests.",
        lambda: f"All {rng.randint(3, 400)} tests pass.",
        lambda: "Here's what I found:",
        lambda: f"Should we {rng.choice(VERBS)} the {c} too?",
        lambda: f"Looking at `{rng.choice(NAMES)}{rng.choice(NAMES).title()}()`, it calls the {c} twice.",
        lambda: f"This is why the {c} looked slow {rng.choice(SYMBOLS)} good catch.",
        lambda: f"I'll {rng.choice(VERBS)} the {c} and re-run `{rng.choice(COMMANDS)}`.",
        lambda: f"Thanks, that works {rng.choice(SYMBOLS)}",
    ]
    return rng.choice(templates)()


def _prose(rng: random.Random, n_min: int, n_max: int, signal_share: float) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(n_min, n_max)):
        s = _signal_sentence(rng) if rng.random() < signal_share else _noise_sentence(rng)
        roll = rng.random()
        if roll < 0.15:
            parts.append("\n- " + s)
        elif roll < 0.22:
            parts.append("\n\n**" + s.rstrip(".") + "**.")
        elif roll < 0.27:
            parts.append("\n\n## " + rng.choice(COMPONENTS).title() + "\n\n" + s)
        else:
            parts.append((" " if parts else "") + s)
    return "".join(parts).strip()


def _code_pool(rng: random.Random, size: int = 3000) -> list[str]:
    pool: list[str] = []
    for i in range(size):
        name = rng.choice(NAMES) + rng.choice(NAMES).title()
        kind = i % 8
        if kind == 0:
            pool.append(f"func {name}(ctx context.Context, id string) (*{name.title()}, error) {{")
        elif kind == 1:
            pool.append("\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"%s: %w\", id, err)\n\t}")
        elif kind == 2:
            pool.append(f"    def {name.lower()}(self, items: list[str]) -> dict[str, int]:")
        elif kind == 3:
            pool.append(f"2026-01-{rng.randint(10, 28)}T12:{rng.randint(10, 59)}:00Z INFO "
                        f"{rng.choice(COMPONENTS)} {rng.choice(NAMES)}ed {rng.randint(1, 999)} items "
                        f"in {rng.randint(1, 900)}ms")
        elif kind == 4:
            pool.append(f"ok  \texample.com/proj/{rng.choice(NAMES)}\t0.{rng.randint(100, 999)}s")
        elif kind == 5:
            pool.append(f"{rng.randint(1, 2000):>6}\u2192    const {name} = "
                        f"{json.dumps(rng.choice(REASONS))}")
        elif kind == 6:
            pool.append(f"--- FAIL: Test{name.title()} ({rng.random():.2f}s)")
        else:
            pool.append(f"  \"{name}\": {{\"enabled\": {str(rng.random() < 0.5).lower()}, "
                        f"\"limit\": {rng.randint(1, 10000)}}},")
    return pool


class SyntheticTranscript:
    """Yields Claude Code-style JSONL lines (with newline) forever."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pool = _code_pool(self.rng)
        self.clock = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
        self.session = self._uuid()
        self.parent: str | None = None

    def _uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _envelope(self, kind: str) -> dict[str, object]:
        self.clock += timedelta(milliseconds=self.rng.randint(5, 40_000))
        uid = self._uuid()
        rec: dict[str, object] = {
            "parentUuid": self.parent, "isSidechain": False, "userType": "external",
            "cwd": "/home/dev/project", "sessionId": self.session, "version": "2.1.0",
            "gitBranch": "main", "type": kind, "uuid": uid,
            "timestamp": self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        self.parent = uid
        return rec

    def _assistant(self, block: dict[str, object]) -> dict[str, object]:
        rec = self._envelope("assistant")
        rec["message"] = {
            "model": "claude-synthetic", "id": "msg_" + self._uuid().replace("-", "")[:24],
            "type": "message", "role": "assistant", "content": [block],
            "stop_reason": None, "usage": {"input_tokens": self.rng.randint(1, 9),
                                            "output_tokens": self.rng.randint(1, 900)},
        }
        return rec

    def _big_text(self, mean_kb: float) -> str:
        target = int(self.rng.expovariate(1 / (mean_kb * 1000))) + 200
        lines = self.rng.choices(self.pool, k=max(1, target // 45))
        return "\n".join(lines)

    def record(self) -> dict[str, object]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.06:  # user prose
            rec = self._envelope("user")
            rec["message"] = {"role": "user", "content": _prose(rng, 1, 4, 0.35)}
            return rec
        if roll < 0.20:  # assistant text block
            return self._assistant({"type": "text", "text": _prose(rng, 1, 8, 0.2)})
        if roll < 0.28:  # thinking block
            return self._assistant({"type": "thinking", "thinking": _prose(rng, 3, 12, 0.3),
                                    "signature": self._uuid().replace("-", "") * 4})
        if roll < 0.42:  # tool use
            return self._assistant({"type": "tool_use", "id": "toolu_" + self._uuid()[:20],
                                    "name": rng.choice(["Bash", "Read", "Edit", "Grep"]),
                                    "input": {"command": rng.choice(COMMANDS),
                                              "file_path": "/home/dev/project/" + rng.choice(PATHS)}})
        if roll < 0.56:  # big tool result
            rec = self._envelope("user")
            rec["message"] = {"role": "user", "content": [{
                "tool_use_id": "toolu_" + self._uuid()[:20], "type": "tool_result",
                "content": self._big_text(12.0), "is_error": rng.random() < 0.05}]}
            rec["toolUseResult"] = {"stdout": self._big_text(2.0), "stderr": "", "interrupted": False}
            return rec
        if roll < 0.88:  # progress
            rec = self._envelope("progress")
            rec["data"] = {"type": rng.choice(["hook_progress", "bash_progress"]),
                           "hookEvent": "PostToolUse", "output": self._big_text(1.0)}
            rec["toolUseID"] = "toolu_" + self._uuid()[:20]
            return rec
        if roll < 0.95:  # system
            rec = self._envelope("system")
            rec.update({"subtype": "stop_hook_summary", "hookCount": 1, "level": "suggestion",
                        "content": f"Hook finished {rng.choice(SYMBOLS)}"})
            return rec
        uid = self._uuid()
        return {"type": "file-history-snapshot", "messageId": uid,
                "snapshot": {"messageId": uid, "trackedFileBackups": {},
                             "timestamp": self.clock.isoformat()}, "isSnapshotUpdate": False}

    def lines(self) -> Iterator[str]:
        while True:
            yield json.dumps(self.record(), ensure_ascii=False, separators=(",", ":")) + "\n"



def write_memory_file(path: Path, n_lines: int, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write("# Project memory\n\n")
        for i in range(n_lines):
            if i % 200 == 0:
                out.write(f"\n## {rng.choice(COMPONENTS).title()} notes {i // 200}\n\n")
            out.write(f"- {_signal_sentence(rng)}\n")



def write_session(path: Path, transcript: SyntheticTranscript | Iterator[str], size: int, mode: str = "w") -> None:
    """`size` bytes of a transcript's lines (or more of a stream of them: `mode` "a")."""
    written = 0
    with path.open(mode, encoding="utf-8", newline="\n") as out:
        for line in transcript.lines() if isinstance(transcript, SyntheticTranscript) else transcript:
            out.write(line)
            written += len(line.encode("utf-8"))
            if written >= size:
                break



def touch(path: Path) -> None:
    """Modified now, as a live session is between two commits: read again, whatever the cache holds."""
    now = time.time_ns()
    os.utime(path, ns=(now, now))


def age(paths: Sequence[Path]) -> None:
    """An hour old: past the racy window, as finished sessions are (a file modified in the
    two seconds before a run is read again whatever the cache holds)."""
    old = time.time_ns() - 3600 * 10**9
    for path in paths:
        os.utime(path, ns=(old, old))



def claude_slug(path: str) -> str:
    """As memory-diff names a Claude Code project folder (ASCII paths)."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in path)[:200]


SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zu", "pe", "dra", "fen", "gor", "hul",
             "jek", "qua", "wix", "yal", "bri", "cos"]


class DistinctTranscript(SyntheticTranscript):
    """A synthetic session of its own: its components, places, reasons, failures and
    conditions are made-up words of this session, so that sessions do not say the same
    sentences (dedupe would collapse them), and its records name `cwd`."""

    def __init__(self, seed: int, cwd: str) -> None:
        super().__init__(seed)
        self.cwd = cwd
        rng = random.Random(seed * 7919 + 1)
        word = lambda: "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))  # noqa: E731
        self.vocabulary = {
            "COMPONENTS": [f"{word()} {word()}" for _ in range(20)],
            "PLACES": [f"the {word()} store" for _ in range(10)],
            "REASONS": [f"the {word()} {word()} {rng.choice(['drifts', 'stalls', 'leaks', 'races'])}"
                        for _ in range(10)],
            "FAILURES": [f"{rng.choice(['dropped', 'skipped', 'doubled'])} the {word()} rows" for _ in range(10)],
            "CONDITIONS": [f"the {word()} {word()} was empty" for _ in range(10)],
        }

    def _envelope(self, kind: str) -> dict[str, object]:
        rec = super()._envelope(kind)
        rec["cwd"] = self.cwd
        return rec

    def record(self) -> dict[str, object]:
        saved = {name: globals()[name] for name in self.vocabulary}
        globals().update(self.vocabulary)
        try:
            return super().record()
        finally:
            globals().update(saved)



# --------------------------------------------------------------------------
# sections


def transcript_files(directory: Path, max_bytes: int | None) -> list[Path]:
    """The folder's files in name order, when max_bytes is given only those that fit in it."""
    files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    if max_bytes is None:
        return files
    chosen: list[Path] = []
    total = 0
    for p in files:
        size = p.stat().st_size
        if chosen and total + size > max_bytes:
            continue
        chosen.append(p)
        total += size
    return chosen


def bench_corpus(args: argparse.Namespace, sides: Sequence[Side], tmp: Path) -> list[str]:
    sessions: Path = args.corpus / "sessions"
    if not sessions.is_dir():
        line = f"corpus: skipped, no {sessions}"
        print(line, flush=True)
        return [line]
    files = transcript_files(sessions, int(args.max_mb * MB) if args.max_mb else None)
    repo = fake_repo(tmp / "corpus")
    caches = Caches(repo)
    memory = repo / "AGENTS.md"
    memory.write_text("", encoding="utf-8")
    common = ["build", *map(str, files), "--memory", str(memory)]
    label = f"corpus ({len(files)} sessions, {fmt_mb(sum(p.stat().st_size for p in files))})"
    print(f"{label}: {args.repeat} round(s) a row ...", flush=True)
    rows = [
        pair(f"{label} cold, one process", sides,
             lambda s: s.argv(*common, "--jobs", "1", "--no-cache"), repo, caches, args.repeat,
             target=1.15),
        pair(f"{label} cold, default jobs", sides,
             lambda s: s.argv(*common, "--no-cache"), repo, caches, args.repeat, target=1.15),
        pair(f"{label} cold, one process, as a script", sides,
             lambda s: s.argv(*common, "--jobs", "1", "--no-cache", script=True), repo, caches,
             args.repeat),
        pair(f"{label} warm, default jobs", sides, lambda s: s.argv(*common), repo, caches,
             args.repeat),
    ]
    teams = args.corpus / "teams"
    if teams.is_dir():
        files = sorted(p for kind in teams.iterdir() if kind.is_dir() for p in kind.iterdir()
                       if p.is_file())
        if args.max_mb:
            files = files[:3]
        common = ["build", *map(str, files), "--memory", str(memory)]
        rows.append(pair(f"teams ({len(files)} transcripts, "
                         f"{fmt_mb(sum(p.stat().st_size for p in files))}) cold, one process",
                         sides, lambda s: s.argv(*common, "--jobs", "1", "--no-cache"), repo,
                         caches, args.repeat))
    return rows


def bench_synthetic(args: argparse.Namespace, sides: Sequence[Side], tmp: Path) -> list[str]:
    folder = tmp / "synthetic"
    repo = fake_repo(folder)
    transcript = folder / "synthetic.jsonl"
    write_session(transcript, SyntheticTranscript(args.seed), int(args.size * MB))
    memory = folder / "memory.md"
    write_memory_file(memory, args.memory_lines, args.seed + 1)
    label = (f"synthetic ({fmt_mb(transcript.stat().st_size)}, memory file of "
             f"{args.memory_lines} bullets)")
    return [pair(f"{label} cold, one process", sides,
                 lambda s: s.argv("build", str(transcript), "--memory", str(memory), "--jobs", "1",
                                  "--no-cache"), repo, Caches(repo), args.repeat)]


def bench_hook(args: argparse.Namespace, sides: Sequence[Side], tmp: Path) -> list[str]:
    """The pre-commit hook: `build` with no inputs in a repository whose Claude Code
    project folder holds N finished synthetic sessions, each saying sentences of its own,
    and one live session, touched before each run so that it is read again as a live one
    is; the rest comes from the cache."""
    n = args.hook_sessions
    repo = fake_repo(tmp / "hook" / "repo")
    config = tmp / "hook" / "claude"
    project = config / "projects" / claude_slug(os.path.realpath(repo))
    project.mkdir(parents=True)
    old = [project / f"old-{k:04d}.jsonl" for k in range(n)]
    for k, path in enumerate(old):
        write_session(path, DistinctTranscript(args.seed + 100 + k, os.path.realpath(repo)),
                      int(args.hook_session_kb * 1000))
    age(old)
    new = project / "new.jsonl"
    write_session(new, DistinctTranscript(args.seed + 99, os.path.realpath(repo)),
                  int(args.hook_new_mb * MB))
    total = sum(p.stat().st_size for p in [*old, new])
    memory = tmp / "hook" / "memory.md"
    memory.write_text("", encoding="utf-8")
    label = f"hook ({n} synthetic sessions of {args.hook_session_kb:g} kB + 1 new, {fmt_mb(total)})"
    line = pair(f"{label} warm", sides, lambda s: s.argv("build", "--memory", str(memory)), repo,
                Caches(repo), args.repeat, env={"CLAUDE_CONFIG_DIR": str(config)},
                prepare=lambda: touch(new))
    shutil.rmtree(tmp / "hook")
    return [line]


CWD_FIELD = re.compile(rb'"cwd":\s*"(?:[^"\\]|\\.)*"')
SESSION_ID_FIELD = re.compile(rb'"sessionId":\s*"([^"]+)"')


def bench_hook_real(args: argparse.Namespace, sides: Sequence[Side], tmp: Path) -> list[str]:
    """The hook on sessions the size of real ones: a repository whose Claude Code project
    holds N copies of the corpus's sessions, each copy with a session id of its own and
    the repository as its cwd (so discovery finds N distinct sessions of the repository),
    and one corpus session of about --hook-new-mb, new and touched before each run. Copies
    of one session say the same sentences, as resumed and checkpointed sessions do."""
    sessions = args.corpus / "sessions"
    if not sessions.is_dir():
        line = f"hook-real: skipped, no {sessions}"
        print(line, flush=True)
        return [line]
    files = [p for p in transcript_files(sessions, int(args.max_mb * MB) if args.max_mb else None)
             if SESSION_ID_FIELD.search(p.read_bytes()[:65536])]
    if len(files) < 2:
        line = f"hook-real: skipped, fewer than two Claude Code sessions in {sessions}"
        print(line, flush=True)
        return [line]
    fresh = min(files, key=lambda p: (abs(p.stat().st_size - args.hook_new_mb * MB), p.name))
    others = [p for p in files if p != fresh]
    n = args.hook_real_sessions
    repo = fake_repo(tmp / "hook-real" / "repo")
    config = tmp / "hook-real" / "claude"
    project = config / "projects" / claude_slug(os.path.realpath(repo))
    project.mkdir(parents=True)
    cwd = b'"cwd":' + json.dumps(os.path.realpath(repo)).encode()
    old = []
    for k in range(n):
        data = others[k % len(others)].read_bytes()
        found = SESSION_ID_FIELD.search(data)
        if found:
            data = data.replace(found.group(1), f"00000000-0000-4000-8000-{k:012d}".encode())
        old.append(project / f"copy-{k:04d}.jsonl")
        old[-1].write_bytes(CWD_FIELD.sub(lambda _: cwd, data))
    age(old)
    new = project / "new.jsonl"
    new.write_bytes(CWD_FIELD.sub(lambda _: cwd, fresh.read_bytes()))
    total = sum(p.stat().st_size for p in [*old, new])
    memory = tmp / "hook-real" / "memory.md"
    memory.write_text("", encoding="utf-8")
    label = f"hook-real ({n} copies of {len(others)} corpus sessions + 1 new, {fmt_mb(total)})"
    line = pair(f"{label} warm", sides, lambda s: s.argv("build", "--memory", str(memory)), repo,
                Caches(repo), args.repeat, env={"CLAUDE_CONFIG_DIR": str(config)},
                prepare=lambda: touch(new), target=1.3)
    shutil.rmtree(tmp / "hook-real")  # a gigabyte at 800
    return [line]


SECTIONS = {"corpus": bench_corpus, "synthetic": bench_synthetic, "hook": bench_hook,
            "hook-real": bench_hook_real}


# --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Time two checkouts of `memory-diff build` side by side.")
    p.add_argument("--before", default="HEAD", metavar="REV",
                   help="revision, folder or .py file to compare against (default: HEAD)")
    p.add_argument("--after", metavar="PATH_OR_REV",
                   help="folder, .py file or revision (default: this work tree)")
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                   help="folder holding sessions/ and teams/ (default: %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="small run for CI: one round, corpus capped at 2 MB, 20 hook sessions")
    p.add_argument("--repeat", type=int, default=None, help="rounds a row (default 5, quick 1)")
    p.add_argument("--sections", default=",".join(SECTIONS),
                   help="which sections to run (default: %(default)s)")
    p.add_argument("--max-mb", type=float, default=None,
                   help="only the first corpus sessions up to this many MB (quick: 2)")
    p.add_argument("--size", type=float, default=None,
                   help="size of the synthetic session in MB (default 8, quick 0.2)")
    p.add_argument("--memory-lines", type=int, default=10000,
                   help="bullets of the synthetic section's memory file (default: %(default)s)")
    p.add_argument("--hook-sessions", type=int, default=None,
                   help="finished synthetic sessions of the hook (default 800, quick 20)")
    p.add_argument("--hook-session-kb", type=float, default=64.0,
                   help="size of each of them in kB (default: %(default)s)")
    p.add_argument("--hook-new-mb", type=float, default=None,
                   help="size of the new session of the hooks in MB (default 1, quick 0.1)")
    p.add_argument("--hook-real-sessions", type=int, default=None,
                   help="copies of corpus sessions of hook-real (default 800, quick 20)")
    p.add_argument("--seed", type=int, default=1234, help="synthetic data seed")
    args = p.parse_args(argv)
    args.repeat = args.repeat or (1 if args.quick else 5)
    args.size = args.size or (0.2 if args.quick else 8.0)
    if args.max_mb is None and args.quick:
        args.max_mb = 2.0
    args.hook_sessions = args.hook_sessions or (20 if args.quick else 800)
    args.hook_real_sessions = args.hook_real_sessions or (20 if args.quick else 800)
    args.hook_new_mb = args.hook_new_mb or (0.1 if args.quick else 1.0)
    args.corpus = args.corpus.resolve()
    args.section_list = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(args.section_list) - set(SECTIONS)
    if unknown:
        p.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    if args.repeat < 1 or args.size <= 0:
        p.error("--repeat and --size must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global SPAWNER
    args = parse_args(argv)
    if hasattr(os, "wait4"):
        SPAWNER = Spawner()  # a fresh interpreter: small, however large this process grows
    try:
        with tempfile.TemporaryDirectory(prefix="memory-diff-bench-") as name:
            return run(args, Path(name))
    except HarnessError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    finally:
        if SPAWNER:
            SPAWNER.close()


def run(args: argparse.Namespace, tmp: Path) -> int:
    sides = []
    for name, spec in zip(SIDES, (args.before, args.after)):
        source, _ = resolve(spec, tmp / name / "tree")
        if not source.is_file():
            raise HarnessError(f"no {source}")
        sides.append(Side(name, source, install(source, tmp / name / "installed")))
    header = (f"memory-diff bench{' --quick' if args.quick else ''} "
              f"{datetime.now().strftime('%Y-%m-%d')} | before {args.before}, after "
              f"{args.after or 'the work tree'} | Python {platform.python_version()} "
              f"{platform.system()} {platform.machine()} | {os.cpu_count()} CPUs | whole "
              f"processes, median of {args.repeat} alternating round(s)")
    print(header, flush=True)
    summary = [header]
    started = time.perf_counter()
    try:
        for section in args.section_list:
            summary += SECTIONS[section](args, sides, tmp)
    except BenchError as exc:
        print(f"bench: a measured run failed: {exc}", file=sys.stderr)
        return 1
    print(f"\n== summary (total {time.perf_counter() - started:.0f} s) ==")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
