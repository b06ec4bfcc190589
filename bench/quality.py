#!/usr/bin/env python3
"""Precision / recall of ``memory-diff build`` against the labelled corpus (stdlib only).

Runs ``python memory_diff.py build SESSION --json --memory <empty>`` once per
session, as a user would (separate processes, ``--jobs`` at a time), and
matches each proposed bullet to the labelled sentences of the same session.

Matching. Both sides are normalised: NFKC, lower-case, markdown emphasis
(``**``, ``__``, ``*``, backticks) removed, leading list markers / numbering /
heading marks removed, white space collapsed, trailing punctuation removed.
A proposal matches a label of its session when the normalised texts are
equal, or one contains the other and the shorter is at least 20 characters
(the tool's sentence split differs from the labeller's), or their character
trigram Jaccard similarity is at least 0.6. The best-overlapping label is
kept: equality first, then containment (the larger share of the longer text
wins), then the highest Jaccard. The labels are de-duplicated across sessions
(one row a sentence), and several sessions are checkpoints of one conversation,
so a proposal that matches no label of its own session is matched against the
labels of every session before it counts as unmatched.

Figures, per half and overall:
  proposals per session; strict precision = keep / matched; lenient precision =
  (keep + maybe) / matched; recall(keep) = keep labels matched by at least one
  proposal / keep labels; unmatched = share of proposals matching no label;
  empty-session proposals/session = proposals per session over sessions where
  nothing was labelled keep or maybe (target: at most 1).

Halves. A session is in the "tune" half when the first byte of
sha256(file name) is even, otherwise in "holdout". Look at samples (--show)
from the tune half only, and read the holdout figures as the honest ones.

It reads the corpus from ../shared/corpus (override with --corpus) and exits 0
with one line when it is absent. Nothing is asserted about the figures; the
exit status is 1 only when a run of the tool fails. Samples printed by --show
go to the terminal only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
DEFAULT_TOOL = REPO_ROOT / "memory_diff.py"

MIN_CONTAINED = 20
MIN_JACCARD = 0.6
SHOW_KINDS = ("unmatched", "drop", "maybe", "keep", "keep-missed")

_EMPHASIS = re.compile(r"\*\*|__|[*`]")
_LEAD = re.compile(r"^(?:[-+*\u2022>]|#{1,6}|\(?\d{1,3}[.):]|\(?[a-z][.)])\s+")
_SPACE = re.compile(r"\s+")
_TRAIL = ".,;:!?\u2026\u3002\uff0c\uff1b\uff1a\uff01\uff1f \"'"


def normalise(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).lower()
    t = _EMPHASIS.sub("", t)
    t = _SPACE.sub(" ", t).strip()
    while True:
        stripped = _LEAD.sub("", t, count=1)
        if stripped == t:
            break
        t = stripped
    return t.rstrip(_TRAIL).strip()


def trigrams(text: str) -> frozenset[str]:
    return frozenset(text[i:i + 3] for i in range(max(1, len(text) - 2)))


@dataclass
class Label:
    uid: str
    text: str
    label: str  # keep | maybe | drop
    kind: str
    norm: str
    grams: frozenset[str]


@dataclass
class Proposal:
    text: str
    norm: str
    grams: frozenset[str]
    best: Label | None = None
    score: float = 0.0


@dataclass
class SessionResult:
    name: str
    half: str
    labels: list[Label]
    proposals: list[Proposal] = field(default_factory=list)
    error: str | None = None
    recalled: set[str] = field(default_factory=set)  # ids of labels matched by any proposal

    @property
    def empty(self) -> bool:
        return not any(lab.label in ("keep", "maybe") for lab in self.labels)


def match_score(p_norm: str, p_grams: frozenset[str], lab: Label) -> float:
    """0 when no match; equality 3; containment 1..2; Jaccard 0.6..1."""
    if not p_norm or not lab.norm:
        return 0.0
    if p_norm == lab.norm:
        return 3.0
    short, long_ = sorted((p_norm, lab.norm), key=len)
    if len(short) >= MIN_CONTAINED and short in long_:
        return 1.0 + len(short) / len(long_)
    union = len(p_grams | lab.grams)
    jaccard = len(p_grams & lab.grams) / union if union else 0.0
    return jaccard if jaccard >= MIN_JACCARD else 0.0


def half_of(name: str) -> str:
    return "tune" if hashlib.sha256(name.encode("utf-8")).digest()[0] % 2 == 0 else "holdout"


def load_labels(path: Path) -> dict[str, list[Label]]:
    by_session: dict[str, list[Label]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            norm = normalise(row["text"])
            by_session.setdefault(row["session"], []).append(
                Label(row["id"], row["text"], row["label"], row.get("kind", "-"), norm, trigrams(norm)))
    return by_session


def run_session(tool: Path, session: Path, memory: Path, extra: list[str], cwd: Path,
                timeout: float) -> tuple[list[str], str | None]:
    argv = [sys.executable, str(tool), "build", str(session), "--json",
            "--memory", str(memory), *extra]
    try:
        done = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return [], f"timed out after {timeout:g} s"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return [], f"exit {done.returncode}: {lines[-1] if lines else '(no stderr)'}"
    out = done.stdout.decode("utf-8", "replace").strip()
    if not out:
        return [], None
    try:
        data = json.loads(out)
        return [str(item["text"]) for item in data.get("proposed", [])], None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return [], f"unreadable --json output ({exc.__class__.__name__})"


def evaluate(result: SessionResult, texts: list[str], everywhere: list[Label]) -> None:
    for text in texts:
        norm = normalise(text)
        prop = Proposal(text, norm, trigrams(norm))
        for pool in (result.labels, everywhere):
            for lab in pool:
                score = match_score(norm, prop.grams, lab)
                if score <= 0:
                    continue
                result.recalled.add(lab.uid)
                if score > prop.score:
                    prop.best, prop.score = lab, score
            if prop.best is not None:
                break
        result.proposals.append(prop)


def ratio(num: int, den: int) -> str:
    return f"{num / den:.2f} ({num}/{den})" if den else "- (0/0)"


def table_row(half: str, results: list[SessionResult]) -> list[str]:
    ok = [r for r in results if r.error is None]
    props = [p for r in ok for p in r.proposals]
    matched = [p for p in props if p.best is not None]
    keep = sum(1 for p in matched if p.best is not None and p.best.label == "keep")
    maybe = sum(1 for p in matched if p.best is not None and p.best.label == "maybe")
    keep_total = sum(1 for r in ok for lab in r.labels if lab.label == "keep")
    recalled = {uid for r in results for uid in r.recalled}
    keep_hit = sum(1 for r in ok for lab in r.labels if lab.label == "keep" and lab.uid in recalled)
    empties = [r for r in ok if r.empty]
    empty_props = sum(len(r.proposals) for r in empties)
    per = f"{len(props) / len(ok):.2f}" if ok else "-"
    empty_per = f"{empty_props / len(empties):.2f} (n={len(empties)})" if empties else "- (n=0)"
    return [half, str(len(ok)), str(len(props)), per, ratio(keep, len(matched)),
            ratio(keep + maybe, len(matched)), ratio(keep_hit, keep_total),
            ratio(len(props) - len(matched), len(props)), empty_per]


def print_table(rows: list[list[str]]) -> None:
    header = ["half", "sessions", "proposals", "per session", "strict P", "lenient P",
              "recall(keep)", "unmatched", "empty-session prop/session"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def show_samples(kind: str, results: list[SessionResult], limit: int) -> None:
    print(f"\n-- samples: {kind} (terminal only; at most {limit}) --")
    shown = 0
    for r in results:
        if kind == "keep-missed":
            recalled = {uid for other in results for uid in other.recalled}
            items = [f"[{lab.kind}] {lab.text}" for lab in r.labels
                     if lab.label == "keep" and lab.uid not in recalled]
        else:
            want = None if kind == "unmatched" else kind
            items = []
            for p in r.proposals:
                got = p.best.label if p.best is not None else None
                if got != want:
                    continue
                items.append(p.text if p.best is None
                             else f"{p.text}\n      ~ {p.best.text}  [{p.score:.2f}]")
        for item in items:
            if shown >= limit:
                return
            print(f"  {r.name}: {item}")
            shown += 1
    if not shown:
        print("  (none)")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Match `memory-diff build --json` proposals to the labelled corpus.")
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                   help="corpus root with sessions/ and labels.jsonl (default: %(default)s)")
    p.add_argument("--tool", type=Path, default=DEFAULT_TOOL,
                   help="memory_diff.py to run (default: %(default)s)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="sessions run at once, one process each (default: %(default)s)")
    p.add_argument("--max-add", type=int, default=None,
                   help="pass --max-add N to build (default: not passed, the tool's cap)")
    p.add_argument("--extra-args", default="",
                   help="more build arguments, shell-quoted, e.g. \"--roles user\"")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per session")
    p.add_argument("--show", action="append", default=[], choices=SHOW_KINDS,
                   help="print sample proposals (unmatched / matched to drop / maybe / keep) "
                        "or keep labels never proposed (keep-missed); repeatable")
    p.add_argument("--show-half", choices=("tune", "holdout", "all"), default="tune",
                   help="half the samples come from (default: %(default)s)")
    p.add_argument("--limit", type=int, default=20, help="samples per --show (default: 20)")
    args = p.parse_args(argv)
    if args.jobs < 1 or args.limit < 0:
        p.error("--jobs must be >= 1 and --limit >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sessions_dir: Path = args.corpus / "sessions"
    labels_path: Path = args.corpus / "labels.jsonl"
    if not sessions_dir.is_dir() or not labels_path.is_file():
        print(f"quality: corpus not found at {args.corpus}; nothing to measure")
        return 0
    tool: Path = args.tool.resolve()
    if not tool.is_file():
        print(f"quality: {tool} not found", file=sys.stderr)
        return 1
    labels = load_labels(labels_path)
    everywhere = [lab for session_labels in labels.values() for lab in session_labels]
    extra_args = shlex.split(args.extra_args)
    extra = ([] if args.max_add is None else ["--max-add", str(args.max_add)]) + extra_args
    sessions = sorted(p for p in sessions_dir.iterdir()
                      if p.is_file() and not p.name.startswith("."))
    results = [SessionResult(s.name, half_of(s.name), labels.get(s.name, [])) for s in sessions]
    digest = hashlib.sha256(tool.read_bytes()).hexdigest()[:12]
    cap = "default cap" if args.max_add is None else f"--max-add {args.max_add}"
    print(f"quality: {len(sessions)} sessions, {sum(map(len, labels.values()))} labels | "
          f"{tool.name} sha256 {digest} | {cap}"
          + (f" | extra: {shlex.join(extra_args)}" if extra_args else ""), flush=True)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memory-diff-quality-") as tmp_name:
        tmp = Path(tmp_name)
        memory = tmp / "memory.md"
        memory.write_text("", encoding="utf-8")

        def work(pair: tuple[Path, SessionResult]) -> None:
            path, result = pair
            texts, result.error = run_session(tool, path.resolve(), memory, extra, tmp,
                                              args.timeout)
            evaluate(result, texts, everywhere)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(work, zip(sessions, results)))
    elapsed = time.perf_counter() - started

    failed = [r for r in results if r.error is not None]
    for r in failed:
        print(f"quality: error: {r.name}: {r.error}", file=sys.stderr)
    rows = [table_row(half, [r for r in results if r.half == half])
            for half in ("tune", "holdout")]
    rows.append(table_row("all", results))
    print(f"halves: tune = sha256(file name) first byte even, holdout = odd | "
          f"{elapsed:.0f} s, --jobs {args.jobs}"
          + (f" | {len(failed)} session(s) failed, left out" if failed else ""))
    print_table(rows)

    pool_for_show = [r for r in results if r.error is None
                     and (args.show_half == "all" or r.half == args.show_half)]
    try:
        for kind in args.show:
            show_samples(kind, pool_for_show, args.limit)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
