#!/usr/bin/env python3
"""Performance benchmark for ``memory-diff build`` (stdlib only).

Every measurement is a whole process, started the way a user starts it:

* reference: ``python -c <loop>`` that opens each file as UTF-8 text, reads it
  line by line and calls ``json.loads`` on every line (errors caught), and does
  nothing else;
* build: ``memory-diff build FILES... --memory <tmp>/memory.md --jobs J`` as the
  installed console script runs it (and the pre-commit hook with it): the module
  imported from its compiled bytecode, which pip writes at install. The bench
  compiles the tool into its temporary folder and runs
  ``python -c "from memory_diff import main; ..."`` there;
* script (corpus only): ``python memory_diff.py build ...``, which compiles the
  source on every run (about 20 ms of start-up more).

Reference and build runs alternate (the order is reversed every other round),
the ratio build/reference is taken per round and the median is reported.
Peak resident memory comes from ``os.wait4`` on each child (ru_maxrss); the
children are started by a small spawner process, so that this script's own size
is not counted in theirs (see SPAWNER_SCRIPT). With
``--jobs`` > 1 the tool runs worker processes, and ru_maxrss is then the
largest single process of the tree, not the sum of the workers.

Sections:

* corpus:  a directory of transcripts (default ../shared/corpus/sessions,
           skipped with one line when absent);
* scaling: synthetic Claude Code-style JSONL at 1x, 2x, 4x, 8x a base size;
* memory:  memory files of 1k, 10k and 100k bullet lines against one small
           fixed transcript, compared with an empty memory file;
* mix:     synthetic sessions like other teams' (longer assistant turns, tool
           results as lists of text blocks), build / reference, cold and warm;
* hook:    the pre-commit hook (discovery included) over N distinct finished
           sessions and one new 1 MB session, against build of that one alone;
* hook-real: the same on sessions the size of real ones: N copies of the corpus's
           sessions (each its own session id and the repository's cwd) and one
           corpus session new (skipped with one line when the corpus is absent).

The corpus and mix sections also time the cache: cold (an empty cache, filled by
the run), warm (the cache of unchanged files) and --no-cache, in a repository of
their own (a folder with a .git directory), never this one.

``--quick`` is a tiny mode for CI so the script cannot rot. Nothing about time
is asserted; the exit status is non-zero only when a run fails.
"""

from __future__ import annotations

import argparse
import hashlib
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

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
DEFAULT_TOOL = REPO_ROOT / "memory_diff.py"
MB = 1_000_000  # sizes and throughput in decimal megabytes
MIB = 1024 * 1024  # resident memory in binary megabytes

# The reference: read every line as UTF-8 text and json.loads it, nothing else.
REFERENCE_SCRIPT = """\
import json, sys
for path in sys.argv[1:]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                json.loads(line)
            except Exception:
                pass
"""


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
    samples: list[Sample] = field(default_factory=list)
    cwd: Path | None = None  # where it runs, when not the round's folder
    before: Callable[[], None] | None = None  # run before each measured run, not timed
    env: dict[str, str] | None = None

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


def run_rounds(variants: list[Variant], repeat: int, cwd: Path, warmup: bool = True) -> None:
    """Alternate the variants for ``repeat`` rounds, reversing the order each round."""
    if warmup:  # bring the files into the page cache (and fill the caches); not measured
        for variant in variants if any(v.before or v.cwd for v in variants) else variants[:1]:
            if variant.before:
                variant.before()
            run_measured(variant.argv, variant.cwd or cwd, variant.env)
    for rnd in range(repeat):
        order = variants if rnd % 2 == 0 else list(reversed(variants))
        for variant in order:
            if variant.before:
                variant.before()
            variant.samples.append(run_measured(variant.argv, variant.cwd or cwd, variant.env))


def paired_ratio(num: Variant, den: Variant) -> float:
    """Median over rounds of num/den, both measured in the same round."""
    return statistics.median(
        a.seconds / b.seconds for a, b in zip(num.samples, den.samples) if b.seconds > 0
    )


def reference_argv(files: Sequence[Path]) -> list[str]:
    return [sys.executable, "-c", REFERENCE_SCRIPT, *map(str, files)]


# What the console script `memory-diff` does, with the compiled module's folder first.
INSTALLED_SCRIPT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from memory_diff import main; sys.exit(main())"


def install(tool: Path, tmp: Path) -> Path:
    """Compile the tool as pip does at install; the folder to import it from."""
    folder = tmp / "installed"
    folder.mkdir(exist_ok=True)
    py_compile.compile(str(tool), cfile=str(folder / "memory_diff.pyc"), doraise=True)
    return folder


def build_argv(tool: Path, files: Sequence[Path], memory: Path, jobs: int, script: bool = False) -> list[str]:
    """`tool` is the folder install() made, or with `script` the memory_diff.py itself."""
    start = [str(tool)] if script else ["-c", INSTALLED_SCRIPT, str(tool)]
    return [sys.executable, *start, "build", *map(str, files), "--memory", str(memory), "--jobs", str(jobs)]


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


def write_scaled_transcripts(directory: Path, base_bytes: int, factors: Sequence[int],
                             seed: int, stem: str = "synthetic") -> list[Path]:
    """One stream of records; file k receives records until it holds base*k bytes.

    Each smaller file is therefore a prefix of the larger ones."""
    paths = [directory / f"{stem}_x{k}.jsonl" for k in factors]
    targets = [base_bytes * k for k in factors]
    sizes = [0] * len(factors)
    handles = [p.open("w", encoding="utf-8", newline="\n") for p in paths]
    try:
        for line in SyntheticTranscript(seed).lines():
            n = len(line.encode("utf-8"))
            open_any = False
            for i, target in enumerate(targets):
                if sizes[i] < target:
                    handles[i].write(line)
                    sizes[i] += n
                    open_any = open_any or sizes[i] < target
            if not open_any:
                break
    finally:
        for h in handles:
            h.close()
    return paths


def write_memory_file(path: Path, n_lines: int, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write("# Project memory\n\n")
        for i in range(n_lines):
            if i % 200 == 0:
                out.write(f"\n## {rng.choice(COMPONENTS).title()} notes {i // 200}\n\n")
            out.write(f"- {_signal_sentence(rng)}\n")


# --------------------------------------------------------------------------
# sections


def transcript_files(directory: Path, max_bytes: int | None) -> list[Path]:
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


def bench_corpus(args: argparse.Namespace, tool: Path, installed: Path, tmp: Path,
                 jobs: list[int]) -> list[str]:
    sessions: Path = args.sessions or (args.corpus / "sessions")
    if not sessions.is_dir():
        line = f"corpus: not found at {sessions}; corpus run skipped"
        print(line, flush=True)
        return [line]
    files = transcript_files(sessions, int(args.max_mb * MB) if args.max_mb else None)
    if not files:
        line = f"corpus: no files in {sessions}; corpus run skipped"
        print(line, flush=True)
        return [line]
    total = sum(p.stat().st_size for p in files)
    memory = tmp / "memory.md"
    memory.write_text("", encoding="utf-8")
    print(f"corpus: {len(files)} files {fmt_mb(total)} from {sessions}, "
          f"{args.repeat} alternating round(s) ...", flush=True)
    ref = Variant("reference", reference_argv(files))
    builds = [Variant(f"build --jobs {j}", build_argv(installed, files, memory, j)) for j in jobs]
    script = Variant("script --jobs 1", build_argv(tool, files, memory, 1, script=True))
    run_rounds([ref, *builds, script], args.repeat, tmp)
    parts = [f"corpus: {len(files)} files {fmt_mb(total)}", "reference 1.00x"]
    parts += [f"{b.name} {paired_ratio(b, ref):.2f}x" for b in [*builds, script]]
    mbps = [f"ref {total / MB / ref.median_seconds():.1f}"]
    mbps += [f"j{j} {total / MB / b.median_seconds():.1f}" for j, b in zip(jobs, builds)]
    rss = [f"ref {fmt_rss(ref.peak_rss())}"]
    rss += [f"j{j} {fmt_rss(b.peak_rss())}" for j, b in zip(jobs, builds)]
    line = " | ".join(parts + ["MB/s " + ", ".join(mbps),
                               "peak RSS (largest process) " + ", ".join(rss)])
    detail = "  median s: " + ", ".join(
        f"{v.name} {v.median_seconds():.3f}" for v in [ref, *builds, script])
    print(line)
    print(detail, flush=True)
    return [line, *bench_cache("corpus", files, installed, tmp, jobs, args.repeat)]


def fake_repo(folder: Path) -> Path:
    """A folder with an empty .git directory: enough for memory-diff to keep its cache."""
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    return folder


def clear_cache(repo: Path) -> Callable[[], None]:
    return lambda: shutil.rmtree(repo / ".git" / "memory-diff", ignore_errors=True)


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


def bench_cache(label: str, files: Sequence[Path], installed: Path, tmp: Path, jobs: list[int],
                repeat: int) -> list[str]:
    """Cold (an empty cache, which the run fills), warm (the cache of unchanged files) and
    --no-cache, in a repository of their own, alternating."""
    repo = fake_repo(tmp / f"cache-{label}")
    memory = tmp / "memory.md"
    memory.write_text("", encoding="utf-8")
    ref = Variant("reference", reference_argv(files))
    rows: list[tuple[int, Variant, Variant, Variant]] = []
    for j in jobs:
        argv = build_argv(installed, files, memory, j)
        rows.append((j, Variant(f"cold j{j}", argv, cwd=repo, before=clear_cache(repo)),
                     Variant(f"warm j{j}", argv, cwd=repo), Variant(f"no-cache j{j}", [*argv, "--no-cache"], cwd=repo)))
    print(f"cache: {label}, {len(files)} files, cold / warm / --no-cache, {repeat} round(s) ...", flush=True)
    run_rounds([ref, *(v for row in rows for v in row[1:])], repeat, tmp)
    parts = []
    for j, cold, warm, plain in rows:
        parts.append(f"j{j}: cold {paired_ratio(cold, ref):.2f}x warm {paired_ratio(warm, ref):.2f}x "
                     f"no-cache {paired_ratio(plain, ref):.2f}x of the reference, warm/cold {paired_ratio(warm, cold):.2f}")
    line = f"cache: {label}: " + " | ".join(parts)
    print(line)
    print("  median s: " + ", ".join(f"{v.name} {v.median_seconds():.3f}"
                                     for v in [ref, *(v for row in rows for v in row[1:])]), flush=True)
    return [line]


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


class MixTranscript(SyntheticTranscript):
    """Sessions like other teams' (where one process ran at 1.34x the reference, against
    1.04x on the shared corpus): longer assistant turns, and tool results whose content
    is a list of text blocks, which the byte test cannot rule out by their bytes."""

    def record(self) -> dict[str, object]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:  # a long assistant turn, mostly narration
            return self._assistant({"type": "text", "text": _prose(rng, 8, 40, 0.04)})
        if roll < 0.35:  # a tool result as text blocks
            rec = self._envelope("user")
            rec["message"] = {"role": "user", "content": [{
                "tool_use_id": "toolu_" + self._uuid()[:20], "type": "tool_result",
                "content": [{"type": "text", "text": self._big_text(8.0)} for _ in range(rng.randint(1, 3))]}]}
            return rec
        return super().record()


def bench_mix(args: argparse.Namespace, installed: Path, tmp: Path) -> list[str]:
    folder = tmp / "mix"
    folder.mkdir()
    files = [folder / f"mix-{k:02d}.jsonl" for k in range(args.mix_files)]
    for k, path in enumerate(files):
        write_session(path, MixTranscript(args.seed + 500 + k), int(args.mix_mb * MB / args.mix_files))
    age(files)
    total = sum(p.stat().st_size for p in files)
    memory = tmp / "memory.md"
    memory.write_text("", encoding="utf-8")
    ref = Variant("reference", reference_argv(files))
    build = Variant("build --jobs 1", build_argv(installed, files, memory, 1))
    print(f"mix: {len(files)} synthetic sessions like other teams' ({fmt_mb(total)}), "
          f"{args.repeat} round(s) ...", flush=True)
    run_rounds([ref, build], args.repeat, tmp)
    line = f"mix: {len(files)} files {fmt_mb(total)} | build --jobs 1 {paired_ratio(build, ref):.2f}x the reference"
    print(line)
    print(f"  median s: reference {ref.median_seconds():.3f}, build {build.median_seconds():.3f}", flush=True)
    return [line, *bench_cache("mix", files, installed, tmp, [1], args.repeat)]


def write_session(path: Path, transcript: SyntheticTranscript | Iterator[str], size: int, mode: str = "w") -> None:
    """`size` bytes of a transcript's lines (or more of a stream of them: `mode` "a")."""
    written = 0
    with path.open(mode, encoding="utf-8", newline="\n") as out:
        for line in transcript.lines() if isinstance(transcript, SyntheticTranscript) else transcript:
            out.write(line)
            written += len(line.encode("utf-8"))
            if written >= size:
                break


def bench_hook(args: argparse.Namespace, installed: Path, tmp: Path) -> list[str]:
    """The pre-commit hook: `build` with no inputs in a repository whose Claude Code
    project folder holds N finished sessions and one live 1 MB session, against `build`
    of that one session alone. The live session is touched before each run, so it is
    read again as a live one is; and, in a second hook run of each round, it has grown
    by --hook-grow-kb of new records (new sentences to compare), as a live session
    grows between two commits."""
    summary = []
    memory = tmp / "memory.md"
    memory.write_text("", encoding="utf-8")
    for n in args.hook_sessions:
        repo = fake_repo(tmp / f"hook-{n}" / "repo")
        config = tmp / f"hook-{n}" / "claude"
        project = config / "projects" / claude_slug(os.path.realpath(repo))
        project.mkdir(parents=True)
        started = time.perf_counter()
        old = [project / f"old-{k:04d}.jsonl" for k in range(n)]
        for k, path in enumerate(old):
            write_session(path, DistinctTranscript(args.seed + 100 + k, os.path.realpath(repo)),
                          int(args.hook_session_kb * 1000))
        age(old)
        new = project / "new.jsonl"
        stream = DistinctTranscript(args.seed + 99, os.path.realpath(repo)).lines()
        write_session(new, stream, int(args.hook_new_mb * MB))
        total = sum(p.stat().st_size for p in [*old, new])
        print(f"hook: {n} sessions of {args.hook_session_kb:g} kB and one new of {args.hook_new_mb:g} MB "
              f"({fmt_mb(total)}), generated in {time.perf_counter() - started:.1f} s, "
              f"{args.repeat} round(s) ...", flush=True)

        def grow(path: Path = new, stream: Iterator[str] = stream) -> None:
            write_session(path, stream, int(args.hook_grow_kb * 1000), mode="a")
        env = {"CLAUDE_CONFIG_DIR": str(config)}
        start = ["-c", INSTALLED_SCRIPT, str(installed), "build", "--memory", str(memory)]
        one = Variant("one new session", [sys.executable, *start, str(new), "--no-cache"], cwd=repo, env=env)
        hook = Variant("hook", [sys.executable, *start], cwd=repo, env=env, before=lambda path=new: touch(path))
        grown = Variant("hook, grown", [sys.executable, *start], cwd=repo, env=env, before=grow)
        cold = Variant("hook --no-cache", [sys.executable, *start, "--no-cache"], cwd=repo, env=env)
        run_rounds([one, hook, grown, cold], args.repeat, tmp)
        line = (f"hook: {n} sessions + 1 new ({fmt_mb(total)}): hook / one new session alone "
                f"{paired_ratio(hook, one):.2f}x, the new one grown by {args.hook_grow_kb:g} kB "
                f"{paired_ratio(grown, one):.2f}x, hook --no-cache / one {paired_ratio(cold, one):.2f}x")
        print(line)
        print("  median s: " + ", ".join(f"{v.name} {v.median_seconds():.3f}" for v in (one, hook, grown, cold)),
              flush=True)
        summary.append(line)
    return summary


CWD_FIELD = re.compile(rb'"cwd":\s*"(?:[^"\\]|\\.)*"')
SESSION_ID_FIELD = re.compile(rb'"sessionId":\s*"([^"]+)"')


def bench_hook_real(args: argparse.Namespace, installed: Path, tmp: Path) -> list[str]:
    """The hook on sessions the size of real ones: a repository whose Claude Code project
    holds N copies of the corpus's sessions, each copy with a session id of its own and
    the repository as its cwd (so discovery finds N distinct sessions of the repository),
    and one corpus session of about --hook-new-mb, new and touched before each run,
    against `build` of that one alone. A real session leaves about twice the candidates
    of a synthetic 64 kB one in the cache. Copies of one session say the same sentences,
    so their findings group, as the findings of resumed and checkpointed sessions do."""
    sessions = args.sessions or args.corpus / "sessions"
    if not sessions.is_dir():
        line = f"hook-real: skipped, no corpus at {sessions}"
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
    memory = tmp / "memory.md"
    memory.write_text("", encoding="utf-8")
    summary = []
    for n in args.hook_real_sessions:
        repo = fake_repo(tmp / f"hook-real-{n}" / "repo")
        config = tmp / f"hook-real-{n}" / "claude"
        project = config / "projects" / claude_slug(os.path.realpath(repo))
        project.mkdir(parents=True)
        cwd = b'"cwd":' + json.dumps(os.path.realpath(repo)).encode()
        started = time.perf_counter()
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
        print(f"hook-real: {n} copies of {len(others)} corpus sessions and one new of {fmt_mb(new.stat().st_size)} "
              f"({fmt_mb(total)}), written in {time.perf_counter() - started:.1f} s, {args.repeat} round(s) ...",
              flush=True)

        env = {"CLAUDE_CONFIG_DIR": str(config)}
        start = ["-c", INSTALLED_SCRIPT, str(installed), "build", "--memory", str(memory)]
        one = Variant("one new session", [sys.executable, *start, str(new), "--no-cache"], cwd=repo, env=env)
        hook = Variant("hook", [sys.executable, *start], cwd=repo, env=env, before=lambda path=new: touch(path))
        run_rounds([one, hook], args.repeat, tmp)
        line = f"hook-real: {n} sessions + 1 new ({fmt_mb(total)}): hook / one new session alone {paired_ratio(hook, one):.2f}x"
        print(line)
        print(f"  median s: one new session {one.median_seconds():.3f}, hook {hook.median_seconds():.3f}", flush=True)
        summary.append(line)
        shutil.rmtree(repo.parent)  # a gigabyte at 800: gone before the next
    return summary


def bench_scaling(args: argparse.Namespace, installed: Path, tmp: Path) -> list[str]:
    factors = [1, 2, 4, 8]
    base = int(args.size * MB)
    print(f"scaling: generating synthetic transcripts {args.size:g} MB x "
          f"{'/'.join(map(str, factors))} (seed {args.seed}) ...", flush=True)
    started = time.perf_counter()
    paths = write_scaled_transcripts(tmp, base, factors, args.seed)
    print(f"  generated in {time.perf_counter() - started:.1f} s", flush=True)
    memory = tmp / "memory.md"
    memory.write_text("", encoding="utf-8")
    rows: list[tuple[int, int, Variant, Variant]] = []
    for k, path in zip(factors, paths):
        ref = Variant("reference", reference_argv([path]))
        build = Variant("build", build_argv(installed, [path], memory, 1))
        run_rounds([ref, build], args.scaling_repeat, tmp)
        rows.append((k, path.stat().st_size, ref, build))
    print(f"scaling: synthetic, build --jobs 1, median of {args.scaling_repeat} round(s)")
    print(f"  {'size':>4} {'MB':>7} {'build s':>8} {'vs x1':>6} {'ref vs x1':>9} "
          f"{'build/ref':>9} {'MB/s':>7} {'peak RSS':>9}")
    _, _, ref1, build1 = rows[0]
    for k, size, ref, build in rows:
        print(f"  x{k:<3} {size / MB:7.1f} {build.median_seconds():8.3f} "
              f"{build.median_seconds() / build1.median_seconds():6.2f} "
              f"{ref.median_seconds() / ref1.median_seconds():9.2f} "
              f"{paired_ratio(build, ref):8.2f}x {size / MB / build.median_seconds():7.1f} "
              f"{fmt_rss(build.peak_rss()):>9}")
    k8, size8, _, build8 = rows[-1]
    growth = build8.median_seconds() / build1.median_seconds()
    marginal = (size8 - rows[0][1]) / MB / max(1e-9, build8.median_seconds() - build1.median_seconds())
    verdict = "within" if growth <= k8 + 1 else "ABOVE"
    note = (f"  x{k8}/x1 time {growth:.2f} ({verdict} {k8 + 1}x); marginal throughput "
            f"x1->x{k8} {marginal:.1f} MB/s (start-up excluded)")
    print(note, flush=True)
    line = (f"scaling: synthetic {args.size:g} MB x{'/'.join(map(str, factors))}: build time vs x1 "
            + "/".join(f"{b.median_seconds() / build1.median_seconds():.2f}" for _, _, _, b in rows)
            + " | build/ref " + "/".join(f"{paired_ratio(b, r):.2f}" for _, _, r, b in rows)
            + f"x | marginal {marginal:.1f} MB/s | peak RSS x{k8} {fmt_rss(build8.peak_rss())}")
    return [line]


def bench_memory(args: argparse.Namespace, installed: Path, tmp: Path) -> list[str]:
    [transcript] = write_scaled_transcripts(
        tmp, int(args.memory_transcript_kb * 1000), [1], args.seed + 1, stem="fixed")
    sizes = [0, *args.memory_lines]
    variants: list[Variant] = []
    for n in sizes:
        mem = tmp / f"memory_{n}.md"
        if n:
            write_memory_file(mem, n, args.seed + n)
        else:
            mem.write_text("", encoding="utf-8")
        variants.append(Variant(f"memory {n} lines", build_argv(installed, [transcript], mem, 1)))
    ref = Variant("reference", reference_argv([transcript]))
    tsize = transcript.stat().st_size
    print(f"memory: {'/'.join(map(str, args.memory_lines))}-line memory files, transcript "
          f"{tsize / 1000:.0f} kB, {args.repeat} round(s) ...", flush=True)
    run_rounds([ref, *variants], args.repeat, tmp)
    empty = variants[0]
    print(f"memory: added build time vs an empty memory file "
          f"(reference {ref.median_seconds() * 1000:.0f} ms, "
          f"build with empty memory {empty.median_seconds() * 1000:.0f} ms)")
    print(f"  {'lines':>7} {'file MB':>8} {'added/ref':>10} {'added ms (noisy)':>17} {'peak RSS':>9}")
    summary: list[str] = []
    for n, v in zip(sizes[1:], variants[1:]):
        added = [a.seconds - e.seconds for a, e in zip(v.samples, empty.samples)]
        ratio = statistics.median(
            d / r.seconds for d, r in zip(added, ref.samples) if r.seconds > 0)
        ms = statistics.median(added) * 1000
        fsize = (tmp / f"memory_{n}.md").stat().st_size
        print(f"  {n:>7} {fsize / MB:8.2f} {ratio:+9.2f}x {ms:+17.0f} {fmt_rss(v.peak_rss()):>9}")
        label = f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)
        summary.append(f"{label} {ratio:+.2f}x ({ms:+.0f} ms)")
    sys.stdout.flush()
    return [f"memory file on a {tsize / 1000:.0f} kB transcript, added time / reference: "
            + ", ".join(summary) + " (ms noisy)"]


# --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Time `memory-diff build` against a bare json.loads reference loop.")
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                   help="corpus root (default: %(default)s)")
    p.add_argument("--sessions", type=Path, default=None,
                   help="directory of transcripts to time (default: CORPUS/sessions)")
    p.add_argument("--tool", type=Path, default=DEFAULT_TOOL,
                   help="memory_diff.py to time, compiled as installed and as a script (default: %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="tiny run for CI: repeat 1, 0.2 MB synthetic base, corpus capped at 2 MB")
    p.add_argument("--repeat", type=int, default=None,
                   help="alternating rounds for the corpus and memory runs (default 5, quick 1)")
    p.add_argument("--scaling-repeat", type=int, default=None,
                   help="alternating rounds per synthetic size (default 3, quick 1)")
    p.add_argument("--jobs", default=None,
                   help="comma-separated --jobs values for the corpus run (default 1,<cpus>)")
    p.add_argument("--size", type=float, default=None,
                   help="synthetic base size in MB (default 8, quick 0.2)")
    p.add_argument("--max-mb", type=float, default=None,
                   help="use only the first corpus files up to this many MB (quick: 2)")
    p.add_argument("--memory-lines", default="1000,10000,100000",
                   help="comma-separated memory file sizes in lines (default: %(default)s)")
    p.add_argument("--memory-transcript-kb", type=float, default=200.0,
                   help="size of the fixed transcript for the memory run (default: %(default)s)")
    p.add_argument("--sections", default="corpus,mix,scaling,memory,hook,hook-real",
                   help="which sections to run (default: %(default)s)")
    p.add_argument("--hook-sessions", default=None,
                   help="comma-separated numbers of finished sessions for the hook run (default 50,200,800, quick 20)")
    p.add_argument("--hook-session-kb", type=float, default=None,
                   help="size of each finished session of the hook run in kB (default 64, quick 16)")
    p.add_argument("--hook-grow-kb", type=float, default=20.0,
                   help="how much the live session grows before each 'grown' hook run (default: %(default)s)")
    p.add_argument("--hook-real-sessions", default=None,
                   help="comma-separated numbers of copies of corpus sessions for the hook-real run "
                        "(default 800, quick 20)")
    p.add_argument("--hook-new-mb", type=float, default=None,
                   help="size of the new session of the hook run in MB (default 1, quick 0.1)")
    p.add_argument("--mix-mb", type=float, default=None,
                   help="total size of the sessions like other teams' in MB (default 32, quick 0.5)")
    p.add_argument("--mix-files", type=int, default=16, help="how many of them (default: %(default)s)")
    p.add_argument("--seed", type=int, default=1234, help="synthetic data seed")
    args = p.parse_args(argv)
    args.repeat = args.repeat or (1 if args.quick else 5)
    args.scaling_repeat = args.scaling_repeat or (1 if args.quick else 3)
    args.size = args.size or (0.2 if args.quick else 8.0)
    if args.max_mb is None and args.quick:
        args.max_mb = 2.0
    args.hook_sessions = [int(x) for x in (args.hook_sessions or ("20" if args.quick else "50,200,800")).split(",")]
    args.hook_real_sessions = [int(x) for x in (args.hook_real_sessions or ("20" if args.quick else "800")).split(",")]
    args.hook_session_kb = args.hook_session_kb or (16.0 if args.quick else 64.0)
    args.hook_new_mb = args.hook_new_mb or (0.1 if args.quick else 1.0)
    args.mix_mb = args.mix_mb or (0.5 if args.quick else 32.0)
    cpus = os.cpu_count() or 1
    args.jobs = args.jobs or ",".join(dict.fromkeys(["1", str(cpus)]))
    try:
        args.jobs_list = [int(x) for x in args.jobs.split(",") if x.strip()]
        args.memory_lines = [int(x) for x in args.memory_lines.split(",") if x.strip()]
    except ValueError:
        p.error("--jobs and --memory-lines take comma-separated integers")
    args.section_set = {s.strip() for s in args.sections.split(",") if s.strip()}
    unknown = args.section_set - {"corpus", "mix", "scaling", "memory", "hook", "hook-real"}
    if unknown:
        p.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    if args.repeat < 1 or args.scaling_repeat < 1 or args.size <= 0:
        p.error("--repeat, --scaling-repeat and --size must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global SPAWNER
    if hasattr(os, "wait4"):
        SPAWNER = Spawner()  # a fresh interpreter: small, however large this process grows
    try:
        return run(parse_args(argv))
    finally:
        if SPAWNER:
            SPAWNER.close()


def run(args: argparse.Namespace) -> int:
    tool: Path = args.tool.resolve()
    if not tool.is_file():
        print(f"bench: {tool} not found", file=sys.stderr)
        return 1
    digest = hashlib.sha256(tool.read_bytes()).hexdigest()[:12]
    header = (f"memory-diff bench{' --quick' if args.quick else ''} "
              f"{datetime.now().strftime('%Y-%m-%d')} | {tool.name} sha256 {digest} | "
              f"Python {platform.python_version()} {platform.system()} {platform.machine()} | "
              f"{os.cpu_count()} CPUs | whole-process times, median of alternating runs, "
              f"ratio = build / reference")
    print(header, flush=True)
    summary = [header]
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="memory-diff-bench-") as tmp_name:
            tmp = Path(tmp_name)
            installed = install(tool, tmp)
            if "corpus" in args.section_set:
                summary += bench_corpus(args, tool, installed, tmp, args.jobs_list)
            if "mix" in args.section_set:
                summary += bench_mix(args, installed, tmp)
            if "scaling" in args.section_set:
                summary += bench_scaling(args, installed, tmp)
            if "memory" in args.section_set:
                summary += bench_memory(args, installed, tmp)
            if "hook" in args.section_set:
                summary += bench_hook(args, installed, tmp)
            if "hook-real" in args.section_set:
                summary += bench_hook_real(args, installed, tmp)
    except BenchError as exc:
        print(f"bench: a measured run failed: {exc}", file=sys.stderr)
        return 1
    print(f"\n== summary (paste into a note; total {time.perf_counter() - started:.0f} s) ==")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
