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
  nothing was labelled keep or maybe, in any checkpoint copy of the session's
  conversation (a sentence of several copies was labelled in one of them).

Halves. Checkpoint files of one conversation share its ``sessionId``, so a
session file is put by its conversation id (the first ``sessionId`` in the
file, or the Gemini document's own ``sessionId``; the file name when there is
none): "tune" when the first byte of sha256(conversation id) is even,
otherwise "holdout". Copies of one conversation never sit in both halves. Look
at samples (--show) from the tune half only, and read the holdout figures as
the honest ones.

After the per-session table, in order:
- Union runs: one ``build`` over all sessions of a half (and over all of
  them), as a team runs it, so evidence across sessions shows; with the
  default cap and with ``--max-add 1000``. A proposal is matched through its
  ``source.file``: that session's labels first, then every label.
- Extra labels (--extra-labels, default bench/quality_labels.jsonl when it
  exists): JSON lines ``{"id": ..., "label": "keep|maybe|drop"}``, id as the
  corpus defines it (sha256 of the lower-cased, white-space-collapsed text,
  first 16 hex digits). A proposal that matches no corpus label but has an
  extra label counts as matched with it. The file holds ids, never text.
  --dump-unmatched PATH writes the still unmatched proposals (id, session,
  text) for blind labelling, to a path outside this repository only.
- The team's own memory edits: Edit / MultiEdit / Write tool calls on a
  CLAUDE.md or AGENTS.md. For each distinct edit the session is cut to the
  lines before it and built; an edit is matched when a proposal has a
  character-trigram Jaccard of at least 0.35 with one of the lines it adds.
  Counted among the edits that some sentence of the conversation before them
  matches at all (the tool cannot propose what was never said).
- Memory requests: user prose that asks for a memory edit, by this script's
  own patterns (independent of the tool's rules). A request got its proposal
  when the whole session, built with the default cap, proposes its own line or
  a line of the assistant turn just before it.

Other teams (corpus/teams, when present): one ``build`` a transcript, default cap, as
the session runs are. A proposal is matched to the labels of its own file first, then to
those of its team (never to another team's). Figures per team: proposals per file, strict
and lenient precision over matched proposals (teams the tool proposes for), recall of keep
(teams that have keep labels); for each half the median and the worst team of each, and
the pooled figures, so that a team the tool is silent on shows as lost recall. Halves:
"write" when the first byte of sha256(team name) is even, otherwise "check": write rules
while reading the write half only, and read the check half's figures as the honest ones.
Extra labels for team proposals come from bench/quality_labels_teams.jsonl when it exists
(--team-labels; ids only, as above). --parts runs only some sections.

Held-out teams (--heldout DIR): transcripts of teams neither corpus holds, fetched from public
repositories and listed in DIR/PROVENANCE.tsv (saved_as, repo), or where DIR has none in
bench/heldout_provenance.tsv, which says where each came from (repo, path, commit). Each transcript is built once, default cap. Their labels
(bench/quality_labels_heldout.jsonl: id, repo, label, kind; no text) were made blind by the
rubric, over every candidate at --max-add 1000 and score 3 and a sample at score 2, so a
proposal is matched by its id; one no label names is counted as such (label it blind and add
it). Halves: "read" when the first byte of sha256(repo) is even, else "check". Recall counts a
repository's keep labels that are proposed.

It reads the corpus from ../shared/corpus (override with --corpus) and exits 0
with one line when it is absent. Nothing is asserted about the figures; the
exit status is 1 only when a run of the tool fails. The default output holds
no corpus text: samples, edits and requests are printed by --show, to the
terminal only.
"""

from __future__ import annotations

import argparse
import csv
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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
DEFAULT_TOOL = REPO_ROOT / "memory_diff.py"
DEFAULT_EXTRA_LABELS = REPO_ROOT / "bench" / "quality_labels.jsonl"
DEFAULT_TEAM_LABELS = REPO_ROOT / "bench" / "quality_labels_teams.jsonl"
DEFAULT_HELDOUT_LABELS = REPO_ROOT / "bench" / "quality_labels_heldout.jsonl"
HELDOUT_PROVENANCE = REPO_ROOT / "bench" / "heldout_provenance.tsv"
PARTS = ("sessions", "union", "edits", "requests", "teams", "heldout")
TEAM_HALVES = ("write", "check")
HELDOUT_HALVES = ("read", "check")

MIN_CONTAINED = 20
MIN_JACCARD = 0.6
# Edits and sentences are compared loosely: a bullet is a rewording of what was said.
EDIT_JACCARD = 0.35
# Added lines shorter than this (code fences, "E2E tests:", "```bash") match any
# sentence that names the same thing and would make every edit look reachable.
MIN_ADDED = 20
UNION_CAP = 1000
LABELS = ("keep", "maybe", "drop")
SHOW_KINDS = ("unmatched", "drop", "maybe", "keep", "keep-missed", "edits", "requests")
MEMORY_NAMES = ("CLAUDE.md", "AGENTS.md")
EDIT_TOOLS = ("Edit", "Write", "MultiEdit")

_EMPHASIS = re.compile(r"\*\*|__|[*`]")
_LEAD = re.compile(r"^(?:[-+*\u2022>]|#{1,6}|\(?\d{1,3}[.):]|\(?[a-z][.)])\s+")
_SPACE = re.compile(r"\s+")
_TRAIL = ".,;:!?\u2026\u3002\uff0c\uff1b\uff1a\uff01\uff1f \"'"

# -- memory requests: this script's own patterns, kept apart from the tool's rules --
# "memory" alone is mostly RAM ("a memory leak"), so it counts only as a destination.
_MEMORY_FILE = (r"(?:(?:\.claude/)?\b(?:claude|agents|gemini)\.md\b|\bmemory\s+files?\b"
                r"|\b(?:to|in|into)\s+(?:(?:your|the|my|our|project'?s?)\s+){0,2}memory\b"
                r"(?!\s+(?:leak|usage|use|limit|footprint|pressure|allocation)))")
_MEMORY_VERB = r"\b(?:add|put|update|write|note(?!\s*:))\b"
_RULE_WORD = (r"\b(?:always|never|don'?t|do not|must|should|make sure|please|prefer|avoid|"
              r"use|stop|keep)\b")
REQUEST_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "add this to CLAUDE.md", "let's update AGENTS.md", "put it in your memory"
    ("names a memory file", re.compile(_MEMORY_VERB + r"[^\n]{0,60}?" + _MEMORY_FILE, re.I)),
    # "CLAUDE.md should be updated"
    ("names a memory file", re.compile(
        _MEMORY_FILE + r"[^\n]{0,30}?\b(?:should|needs? to|must)\s+(?:be\s+)?"
        r"(?:updated|added|noted|written)", re.I)),
    # "remember that ..." as an instruction, not "I remember that" or "do you remember that"
    ("remember that", re.compile(
        r"(?<![\w'])(?<!\bi )(?<!\bwe )(?<!\bthey )(?<!\byou )(?<!don't )(?<!do not )"
        r"(?<!can't )(?<!cannot )remember\s+that\b", re.I)),
    ("from now on / going forward", re.compile(
        r"\b(?:from\s+now\s+on|going\s+forward)\b(?=.*" + _RULE_WORD + r")"
        r"|" + _RULE_WORD + r".*\b(?:from\s+now\s+on|going\s+forward)\b", re.I)),
    ("记住 / 以后", re.compile(
        r"记住[^。！？\n]{2,}"
        r"|(?:以后|今后|从现在开始)[^。！？\n]{0,30}?"
        r"(?:都|要|不要|别|必须|总是|始终|一律|请|记得|应该|不能|禁止)")),
)
_REQUEST_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|(?<=[\u3002\uff01\uff1f])")
# Text Claude Code shows the user but the user did not type: slash-command output.
_NOT_TYPED = ("<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>")


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


def text_id(text: str) -> str:
    """The corpus id: sha256 of the lower-cased, white-space-collapsed text."""
    return hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:16]


def trigrams(text: str) -> frozenset[str]:
    return frozenset(text[i:i + 3] for i in range(max(1, len(text) - 2)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


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
    extra: str | None = None  # label from --extra-labels when no corpus label matched

    @property
    def verdict(self) -> str | None:
        return self.best.label if self.best is not None else self.extra


@dataclass
class SessionResult:
    name: str
    half: str
    labels: list[Label]
    proposals: list[Proposal] = field(default_factory=list)
    error: str | None = None
    recalled: set[str] = field(default_factory=set)  # ids of labels matched by any proposal
    # The conversation's labels: a sentence said in several checkpoint copies of one
    # conversation was labelled once, in one of them, so a copy holds what its
    # conversation holds (see `empty`).
    conversation_labels: list[Label] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing good in the session: no sentence of its conversation labelled keep or
        maybe. Counting only the file's own labels took a checkpoint copy whose keep
        sentences were labelled in the other copy for a session holding nothing good."""
        return not any(lab.label in ("keep", "maybe") for lab in self.conversation_labels or self.labels)


class Built(NamedTuple):
    """One proposal of ``build --json``."""
    text: str
    file: str
    line: int


def match_score(p_norm: str, p_grams: frozenset[str], lab: Label) -> float:
    """0 when no match; equality 3; containment 1..2; Jaccard 0.6..1."""
    if not p_norm or not lab.norm:
        return 0.0
    if p_norm == lab.norm:
        return 3.0
    short, long_ = sorted((p_norm, lab.norm), key=len)
    if len(short) >= MIN_CONTAINED and short in long_:
        return 1.0 + len(short) / len(long_)
    score = jaccard(p_grams, lab.grams)
    return score if score >= MIN_JACCARD else 0.0


def conversation_labels(scans: list[SessionScan], labels: dict[str, list[Label]]) -> dict[str, list[Label]]:
    """Each session file's conversation's labels, over all its checkpoint copies."""
    pooled: dict[str, list[Label]] = {}
    for scan in scans:
        pooled.setdefault(scan.conversation, []).extend(labels.get(scan.path.name, []))
    return {scan.path.name: pooled[scan.conversation] for scan in scans}


def hash_half(name: str, even: str, odd: str) -> str:
    """A fixed split by name: the first byte of its sha256, even or odd."""
    return even if hashlib.sha256(name.encode("utf-8")).digest()[0] % 2 == 0 else odd


def half_of(conversation: str) -> str:
    return hash_half(conversation, "tune", "holdout")


def label_rows(path: Path) -> Iterator[tuple[dict[str, Any], Label]]:
    """Each row of a labels file (JSON lines) with its Label."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                norm = normalise(row["text"])
                yield row, Label(row["id"], row["text"], row["label"], row.get("kind", "-"), norm, trigrams(norm))


def load_labels(path: Path) -> dict[str, list[Label]]:
    by_session: dict[str, list[Label]] = {}
    for row, label in label_rows(path):
        by_session.setdefault(row["session"], []).append(label)
    return by_session


def load_extra_labels(path: Path) -> dict[str, str]:
    extra: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                uid, label = row["id"], row["label"]
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not an {{id, label}} object "
                                 f"({exc.__class__.__name__})") from None
            if not isinstance(uid, str) or not re.fullmatch(r"[0-9a-f]{16}", uid) \
                    or label not in LABELS:
                raise ValueError(f"{path}:{number}: id must be 16 hex digits and label "
                                 f"one of {', '.join(LABELS)}")
            extra[uid] = label
    return extra


# -- reading the corpus sessions (the bench's own reader, not the tool's) --

_DECODER = json.JSONDecoder()


def records(data: bytes) -> list[tuple[int, dict[str, object]]]:
    """(line number, record) of a JSONL file; glued records share their line."""
    out: list[tuple[int, dict[str, object]]] = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        text = raw.decode("utf-8", "replace").strip().lstrip("\ufeff")
        at = 0
        while at < len(text):
            try:
                obj, at = _DECODER.raw_decode(text, at)
            except ValueError:
                break
            if isinstance(obj, dict):
                out.append((number, obj))
            while at < len(text) and text[at].isspace():
                at += 1
    return out


def content_of(record: dict[str, object]) -> object:
    message = record.get("message")
    return message.get("content") if isinstance(message, dict) else None


def user_prose(record: dict[str, object]) -> str | None:
    """What the person typed: a string or text blocks, not tool results, meta or summaries."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isCompactSummary") \
            or record.get("isSidechain"):
        return None
    content = content_of(record)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    texts = [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(texts) if texts else None


def assistant_text(record: dict[str, object]) -> str:
    content = content_of(record)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(b.get("text", "")) for b in content
                     if isinstance(b, dict) and b.get("type") == "text")


@dataclass
class MemoryEdit:
    session: str
    line: int
    tool: str
    target: str
    tool_id: str
    session_id: str
    body: str  # new_string, content or the edits, as JSON
    added: list[str]
    copies: list[str] = field(default_factory=list)


@dataclass
class MemoryRequest:
    session: str
    line: int
    uuid: str
    conversation: str
    text: str
    rule: str
    turn: frozenset[int]  # the request's line and the assistant turn just before it
    copies: list[str] = field(default_factory=list)


@dataclass
class SessionScan:  # what the bench reads from one session file itself
    path: Path
    conversation: str
    visible: list[tuple[int, str]] = field(default_factory=list)  # (line, user/assistant prose)
    edits: list[MemoryEdit] = field(default_factory=list)
    requests: list[MemoryRequest] = field(default_factory=list)
    not_typed: list[str] = field(default_factory=list)  # "line reason" of pattern hits left out


def added_lines(tool: str, given: dict[str, object]) -> list[str]:
    def new_lines(old: object, new: object) -> list[str]:
        before = set(str(old or "").split("\n"))
        return [ln for ln in str(new or "").split("\n") if ln not in before]

    if tool == "Write":
        lines = str(given.get("content") or "").split("\n")
    elif tool == "MultiEdit":
        edits = given.get("edits")
        lines = [ln for e in (edits if isinstance(edits, list) else []) if isinstance(e, dict)
                 for ln in new_lines(e.get("old_string"), e.get("new_string"))]
    else:
        lines = new_lines(given.get("old_string"), given.get("new_string"))
    return [ln for ln in lines if len(normalise(ln)) >= MIN_ADDED]


def request_rule(text: str) -> str | None:
    for sentence in _REQUEST_SPLIT.split(text):
        for rule, pattern in REQUEST_PATTERNS:
            if pattern.search(sentence):
                return rule
    return None


def scan_session(path: Path) -> SessionScan:
    data = path.read_bytes()
    conversation = ""
    recs: list[tuple[int, dict[str, object]]] = []
    try:  # the Gemini chat is one JSON document with its own sessionId and no Claude records
        doc = json.loads(data.decode("utf-8", "replace").lstrip("\ufeff"))
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        conversation = str(doc.get("sessionId") or "")
    else:
        recs = records(data)
    for _, rec in recs:
        if isinstance(rec.get("sessionId"), str) and rec["sessionId"]:
            conversation = str(rec["sessionId"])
            break
    scan = SessionScan(path, conversation or path.name)
    assistant_lines: list[int] = []  # since the last user prose message
    for number, rec in recs:
        kind = rec.get("type")
        if kind == "assistant":
            assistant_lines.append(number)
            if not rec.get("isSidechain"):
                text = assistant_text(rec)
                if text.strip():
                    scan.visible.append((number, text))
            content = content_of(rec)
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_use" \
                        or block.get("name") not in EDIT_TOOLS:
                    continue
                given = block.get("input")
                if not isinstance(given, dict):
                    continue
                target = str(given.get("file_path") or "")
                if target.replace("\\", "/").rsplit("/", 1)[-1] not in MEMORY_NAMES:
                    continue
                tool = str(block["name"])
                body = given.get("content") if tool == "Write" else \
                    given.get("edits") if tool == "MultiEdit" else given.get("new_string")
                scan.edits.append(MemoryEdit(
                    path.name, number, tool, target, str(block.get("id") or ""),
                    str(rec.get("sessionId") or scan.conversation),
                    json.dumps(body, sort_keys=True), added_lines(tool, given)))
            continue
        prose = user_prose(rec)
        if prose is None:
            continue
        scan.visible.append((number, prose))
        rule = request_rule(prose)
        # A plan Claude Code pastes back, or a slash command's output, is not the person asking.
        not_typed = "plan" if "planContent" in rec else \
            "command output" if prose.lstrip().startswith(_NOT_TYPED) else None
        if rule is not None and not_typed is not None:
            scan.not_typed.append(f"{path.name}:{number} ({not_typed})")
        elif rule is not None:
            scan.requests.append(MemoryRequest(
                path.name, number, str(rec.get("uuid") or ""), str(rec.get("sessionId") or ""),
                prose, rule, frozenset([number, *assistant_lines])))
        assistant_lines = []
    return scan


Copied = TypeVar("Copied", MemoryEdit, MemoryRequest)


def merge_copies(items: list[Copied], keys: Callable[[Copied], list[str]]) -> list[Copied]:
    """The first of each group of checkpoint copies, with every copy's place in .copies."""
    seen: dict[str, Copied] = {}
    firsts = []
    for item in items:
        item_keys = [k for k in keys(item) if k]
        first = next((seen[k] for k in item_keys if k in seen), None)
        if first is None:
            first = item
            firsts.append(item)
        for k in item_keys:
            seen.setdefault(k, first)
        first.copies.append(f"{item.session}:{item.line}")
    return firsts


def edit_keys(edit: MemoryEdit) -> list[str]:
    # Copies share the tool_use id; without one, the same text in the same conversation.
    return [edit.tool_id and f"id\0{edit.tool_id}", f"text\0{edit.session_id}\0{edit.body}"]


def request_keys(req: MemoryRequest) -> list[str]:
    return [req.uuid and f"id\0{req.uuid}", f"text\0{req.conversation}\0{req.text}"]


# -- running the tool --

def run_build(tool: Path, inputs: list[Path], memory: Path, extra: list[str], cwd: Path,
              timeout: float) -> tuple[list[Built], str | None]:
    argv = [sys.executable, str(tool), "build", *map(str, inputs), "--json",
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
        built = []
        for item in data.get("proposed", []):
            source = item.get("source") or {}
            built.append(Built(str(item["text"]), str(source.get("file", "")),
                               int(source.get("line") or 0)))
        return built, None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return [], f"unreadable --json output ({exc.__class__.__name__})"


def evaluate(result: SessionResult, built: list[Built], everywhere: list[Label],
             extra: dict[str, str]) -> None:
    for item in built:
        norm = normalise(item.text)
        prop = Proposal(item.text, norm, trigrams(norm))
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
        if prop.best is None:
            prop.extra = extra.get(text_id(item.text))
        result.proposals.append(prop)


def ratio(num: int, den: int) -> str:
    return f"{num / den:.2f} ({num}/{den})" if den else "- (0/0)"


def table_row(half: str, results: list[SessionResult]) -> list[str]:
    ok = [r for r in results if r.error is None]
    props = [p for r in ok for p in r.proposals]
    matched = [p for p in props if p.verdict is not None]
    keep = sum(1 for p in matched if p.verdict == "keep")
    maybe = sum(1 for p in matched if p.verdict == "maybe")
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


TABLE_HEADER = ["half", "sessions", "proposals", "per session", "strict P", "lenient P",
                "recall(keep)", "unmatched", "empty-session prop/session"]


def print_table(rows: list[list[str]], header: list[str] = TABLE_HEADER) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def show_samples(kind: str, results: list[SessionResult], limit: int,
                 title: str | None = None, skip: frozenset[str] = frozenset()) -> None:
    print(f"\n-- samples: {title or kind} (terminal only; at most {limit}) --")
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
                if p.verdict != want or (want is None and text_id(p.text) in skip):
                    continue
                items.append(p.text if p.best is None and p.extra is None
                             else f"{p.text}\n      ~ (extra label)" if p.best is None
                             else f"{p.text}\n      ~ {p.best.text}  [{p.score:.2f}]")
        for item in items:
            if shown >= limit:
                return
            print(f"  {r.name}: {item}")
            shown += 1
    if not shown:
        print("  (none)")


def outside_repo(value: str) -> Path:
    path = Path(value).expanduser().resolve()
    if path == REPO_ROOT or REPO_ROOT in path.parents:
        raise argparse.ArgumentTypeError(
            f"{value!r} is inside the repository {REPO_ROOT}; corpus text must not land there")
    return path


def parts_list(value: str) -> list[str]:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise argparse.ArgumentTypeError(f"{value!r}: parts are {', '.join(PARTS)}")
    return parts


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
                   help="pass --max-add N to the per-session builds (default: not passed, "
                        "the tool's cap; the union and edit runs use both caps regardless)")
    p.add_argument("--extra-args", default="",
                   help="more build arguments, shell-quoted, e.g. \"--roles user\"; every run")
    p.add_argument("--extra-labels", type=Path, default=None,
                   help="JSON lines {\"id\", \"label\"} for proposals no corpus label matches "
                        f"(default: {DEFAULT_EXTRA_LABELS.relative_to(REPO_ROOT)} if present)")
    p.add_argument("--dump-unmatched", type=outside_repo, default=None, metavar="PATH",
                   help="write the unmatched proposals (id, session, text) as JSON lines to "
                        "PATH, outside this repository, for blind labelling")
    p.add_argument("--team-labels", type=Path, default=None,
                   help="extra labels, as --extra-labels, for the other teams' proposals "
                        f"(default: {DEFAULT_TEAM_LABELS.relative_to(REPO_ROOT)} if present)")
    p.add_argument("--heldout", type=Path, default=None, metavar="DIR",
                   help="transcripts of teams outside the corpus, listed in DIR/PROVENANCE.tsv "
                        "(saved_as, repo) or else in "
                        f"{HELDOUT_PROVENANCE.relative_to(REPO_ROOT)}; the heldout part runs "
                        "only with it")
    p.add_argument("--heldout-labels", type=Path, default=None,
                   help="blind labels {\"id\", \"repo\", \"label\", \"kind\"} of the held-out "
                        f"proposals (default: {DEFAULT_HELDOUT_LABELS.relative_to(REPO_ROOT)})")
    p.add_argument("--parts", type=parts_list, default=list(PARTS),
                   help=f"sections to run, comma-separated (default: all: {','.join(PARTS)})")
    p.add_argument("--show-teams", action="append", default=[],
                   choices=("unmatched", "drop", "maybe", "keep", "keep-missed"),
                   help="print sample proposals of the other teams' write half; repeatable")
    p.add_argument("--show-heldout", action="append", default=[],
                   choices=("unmatched", "drop", "maybe", "keep"),
                   help="print sample proposals of the held-out teams' read half; repeatable")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    p.add_argument("--show", action="append", default=[], choices=SHOW_KINDS,
                   help="print sample proposals (unmatched / matched to drop / maybe / keep), "
                        "keep labels never proposed (keep-missed), the memory edits with their "
                        "best matches (edits) or the memory-request candidates (requests); "
                        "repeatable")
    p.add_argument("--show-half", choices=("tune", "holdout", "all"), default="tune",
                   help="half the samples come from (default: %(default)s; "
                        "edits and requests are all listed)")
    p.add_argument("--limit", type=int, default=20, help="samples per --show (default: 20)")
    args = p.parse_args(argv)
    if args.jobs < 1 or args.limit < 0:
        p.error("--jobs must be >= 1 and --limit >= 0")
    return args


# -- the report sections after the per-session table --

def union_runs(tool: Path, sessions_dir: Path, scans: list[SessionScan], halves: dict[str, str],
               labels: dict[str, list[Label]], everywhere: list[Label], extra: dict[str, str],
               extra_args: list[str], memory: Path, tmp: Path, timeout: float,
               ) -> tuple[dict[tuple[str, str], list[SessionResult]], list[str]]:
    """One build over all sessions of a half, with each cap; results per source file."""
    runs: dict[tuple[str, str], list[SessionResult]] = {}
    errors = []
    for cap_name, cap in (("default cap", []),
                          (f"--max-add {UNION_CAP}", ["--max-add", str(UNION_CAP)])):
        for half in ("tune", "holdout", "all"):
            names = [s.path.name for s in scans if half == "all" or halves[s.path.name] == half]
            by_conversation = conversation_labels(scans, labels)
            results = {n: SessionResult(n, halves[n], labels.get(n, []), conversation_labels=by_conversation[n])
                       for n in names}
            built, error = run_build(tool, [(sessions_dir / n).resolve() for n in names], memory,
                                     [*cap, *extra_args], tmp, timeout)
            if error is not None:
                errors.append(f"union run {half}, {cap_name}: {error}")
                for r in results.values():
                    r.error = error
            by_file: dict[str, list[Built]] = {}
            for item in built:
                by_file.setdefault(Path(item.file).name, []).append(item)
            for name, items in by_file.items():
                if name not in results:
                    errors.append(f"union run {half}, {cap_name}: proposal from {name!r}")
                    continue
                evaluate(results[name], items, everywhere, extra)
            runs[(cap_name, half)] = list(results.values())
    return runs, errors


def sentences_before(scan: SessionScan, line: int) -> list[tuple[int, str, frozenset[str]]]:
    """The conversation's prose before LINE, split crudely: by line and by '. '."""
    out = []
    for number, text in scan.visible:
        if number >= line:
            break
        for row in text.split("\n"):
            for part in row.split(". "):
                norm = normalise(part)
                if norm:
                    out.append((number, part.strip(), trigrams(norm)))
    return out


@dataclass
class EditResult:
    edit: MemoryEdit
    sentence: tuple[float, int, str, str]  # Jaccard, line, sentence, added line
    proposals: dict[str, tuple[float, str, str]]  # cap -> Jaccard, proposal, added line
    error: str | None = None

    @property
    def reachable(self) -> bool:
        return self.sentence[0] >= EDIT_JACCARD


def edit_runs(tool: Path, scans: dict[str, SessionScan], edits: list[MemoryEdit],
              extra_args: list[str], memory: Path, tmp: Path, timeout: float) -> list[EditResult]:
    out = []
    for edit in edits:
        scan = scans[edit.session]
        added = [(ln, trigrams(normalise(ln))) for ln in edit.added]
        best_sentence = (0.0, 0, "", "")
        for number, sentence, grams in sentences_before(scan, edit.line):
            for ln, ln_grams in added:
                score = jaccard(grams, ln_grams)
                if score > best_sentence[0]:
                    best_sentence = (score, number, sentence, ln)
        cut = tmp / f"{Path(edit.session).stem}.before-{edit.line}.jsonl"
        lines = scan.path.read_bytes().split(b"\n")
        cut.write_bytes(b"".join(ln + b"\n" for ln in lines[:edit.line - 1]))
        result = EditResult(edit, best_sentence, {})
        for cap_name, cap in ((f"--max-add {UNION_CAP}", ["--max-add", str(UNION_CAP)]),
                              ("default cap", [])):
            built, error = run_build(tool, [cut], memory, [*cap, *extra_args], tmp, timeout)
            if error is not None:
                result.error = f"{edit.session}:{edit.line} {cap_name}: {error}"
            best = (0.0, "", "")
            for item in built:
                grams = trigrams(normalise(item.text))
                for ln, ln_grams in added:
                    score = jaccard(grams, ln_grams)
                    if score > best[0]:
                        best = (score, item.text, ln)
            result.proposals[cap_name] = best
        out.append(result)
    return out


def print_edits(total: int, results: list[EditResult], show: bool) -> None:
    reachable = [r for r in results if r.reachable]
    caps = (f"--max-add {UNION_CAP}", "default cap")
    print(f"\nmemory edits (Edit / MultiEdit / Write on {' or '.join(MEMORY_NAMES)}): "
          f"{total} tool calls, {len(results)} distinct after merging checkpoint copies, "
          f"{len(reachable)} reachable (a sentence before the edit has Jaccard >= "
          f"{EDIT_JACCARD} with a line it adds; added lines under {MIN_ADDED} characters left out)")
    for cap in caps:
        hit = sum(1 for r in reachable if r.proposals[cap][0] >= EDIT_JACCARD)
        anywhere = sum(1 for r in results if r.proposals[cap][0] >= EDIT_JACCARD)
        print(f"  session cut before the edit, {cap}: a proposal matches {ratio(hit, len(reachable))}"
              f" of reachable edits ({anywhere}/{len(results)} of all)")
    for r in results:
        e = r.edit
        figures = ", ".join(f"{cap} {r.proposals[cap][0]:.2f}" for cap in caps)
        print(f"  {e.session}:{e.line} {e.tool} {Path(e.target.replace(chr(92), '/')).name}: "
              f"{len(e.added)} added lines | best sentence {r.sentence[0]:.2f} (line {r.sentence[1]})"
              f" | best proposal {figures} | copies {', '.join(e.copies)}"
              + (f" | error: {r.error}" if r.error else ""))
        if not show:
            continue
        for ln in e.added:
            print(f"      + {ln}")
        print(f"      best sentence [{r.sentence[0]:.2f}] line {r.sentence[1]}: {r.sentence[2]}")
        print(f"        ~ added: {r.sentence[3]}")
        for cap in caps:
            score, text, ln = r.proposals[cap]
            print(f"      best proposal, {cap} [{score:.2f}]: {text or '(none)'}")
            if text:
                print(f"        ~ added: {ln}")


def print_requests(every: list[MemoryRequest], requests: list[MemoryRequest],
                   not_typed: list[str], proposed_lines: dict[str, list[int]], show: bool) -> None:
    turns = {f"{r.session}:{r.line}": r.turn for r in every}  # each copy's own turn

    def got(req: MemoryRequest) -> list[str]:
        return [f"{copy.rsplit(':', 1)[0]}:{n}" for copy in req.copies
                for n in proposed_lines.get(copy.rsplit(":", 1)[0], []) if n in turns[copy]]

    total = len(every)
    answered = [r for r in requests if got(r)]
    print(f"\nmemory requests (user prose asking for a memory edit, this script's patterns): "
          f"{total} messages, {len(requests)} distinct after merging checkpoint copies; "
          f"got its proposal (whole session, default cap, the request's line or the assistant "
          f"turn before it): {ratio(len(answered), len(requests))}")
    for r in requests:
        hits = got(r)
        print(f"  {', '.join(r.copies)} [{r.rule}] uuid {r.uuid[:8] or '-'}: "
              + (f"proposed from {', '.join(hits)}" if hits else "no proposal from its turn")
              + f" (turn lines {min(r.turn)}-{max(r.turn)})")
        if show:
            print("      " + r.text.replace("\n", "\n      "))
    if not_typed:
        print(f"  pattern hits left out, not typed by the user: {', '.join(not_typed)}")


# -- other teams (corpus/teams) --

def team_half(team: str) -> str:
    return hash_half(team, "write", "check")


def load_team_labels(path: Path) -> dict[str, list[tuple[str, Label]]]:
    """Labels by transcript file (relative to teams/), each with its team."""
    by_file: dict[str, list[tuple[str, Label]]] = {}
    for row, label in label_rows(path):
        by_file.setdefault(row["file"], []).append((row["team"], label))
    return by_file


def team_files(teams_dir: Path, by_file: dict[str, list[tuple[str, Label]]]) -> list[tuple[str, str]]:
    """(file relative to teams/, team) of every labelled transcript present, sorted."""
    out = []
    for rel in sorted(by_file):
        if (teams_dir / rel).is_file():
            out.append((rel, by_file[rel][0][0]))
    return out


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass
class TeamFigures:
    team: str
    half: str
    files: int
    proposals: int
    matched: int
    keep: int
    maybe: int
    keep_total: int
    keep_hit: int

    @property
    def per_file(self) -> float:
        return self.proposals / self.files if self.files else 0.0


def team_figures(team: str, results: list[SessionResult], half: str = "") -> TeamFigures:
    ok = [r for r in results if r.error is None]
    props = [p for r in ok for p in r.proposals]
    matched = [p for p in props if p.verdict is not None]
    recalled = {uid for r in ok for uid in r.recalled}
    keeps = {lab.uid for r in ok for lab in r.labels if lab.label == "keep"}
    return TeamFigures(team, half or team_half(team), len(ok), len(props), len(matched),
                       sum(1 for p in matched if p.verdict == "keep"),
                       sum(1 for p in matched if p.verdict == "maybe"),
                       len(keeps), len(keeps & recalled))


def print_team_tables(figures: list[TeamFigures], halves: tuple[str, ...] = TEAM_HALVES) -> None:
    header = ["team", "half", "files", "proposals", "per file", "strict P", "lenient P",
              "recall(keep)", "unmatched"]
    rows = []
    for f in sorted(figures, key=lambda f: (f.half, f.team.lower())):
        rows.append([f.team, f.half, str(f.files), str(f.proposals), f"{f.per_file:.2f}",
                     ratio(f.keep, f.matched), ratio(f.keep + f.maybe, f.matched),
                     ratio(f.keep_hit, f.keep_total), str(f.proposals - f.matched)])
    print_table(rows, header)
    print("\nteams by half: median and worst team of each figure (precision over teams the tool "
          "proposes for and a label matched; recall over teams with keep labels), then pooled")
    header = ["half", "teams", "per file med/worst", "strict med/worst", "lenient med/worst",
              "recall med/worst", "pooled per file", "pooled strict", "pooled lenient",
              "pooled recall", "unmatched"]
    rows = []
    for half in (*halves, "all"):
        fs = [f for f in figures if half == "all" or f.half == half]
        if not fs:
            continue
        per = [f.per_file for f in fs]
        strict = [f.keep / f.matched for f in fs if f.matched]
        lenient = [(f.keep + f.maybe) / f.matched for f in fs if f.matched]
        recall = [f.keep_hit / f.keep_total for f in fs if f.keep_total]

        def mw(values: list[float], worst: Callable[[list[float]], float]) -> str:
            return f"{median(values):.2f}/{worst(values):.2f} (n={len(values)})" if values else "-"

        files = sum(f.files for f in fs)
        props = sum(f.proposals for f in fs)
        matched = sum(f.matched for f in fs)
        keep = sum(f.keep for f in fs)
        maybe = sum(f.maybe for f in fs)
        rows.append([half, str(len(fs)), mw(per, max), mw(strict, min), mw(lenient, min),
                     mw(recall, min), f"{props / files:.2f}" if files else "-",
                     ratio(keep, matched), ratio(keep + maybe, matched),
                     ratio(sum(f.keep_hit for f in fs), sum(f.keep_total for f in fs)),
                     ratio(props - matched, props)])
    print_table(rows, header)


def team_runs(tool: Path, teams_dir: Path, extra: dict[str, str], extra_args: list[str],
              memory: Path, tmp: Path, timeout: float, jobs: int,
              ) -> tuple[dict[str, list[SessionResult]], list[str]]:
    """One build a transcript; results by team."""
    by_file = load_team_labels(teams_dir / "labels.jsonl")
    files = team_files(teams_dir, by_file)
    team_labels: dict[str, list[Label]] = {}
    for rel, team in files:
        team_labels.setdefault(team, []).extend(lab for _, lab in by_file[rel])
    results = [SessionResult(rel, team_half(team), [lab for _, lab in by_file[rel]])
               for rel, team in files]

    def work(rel: str, team: str, result: SessionResult) -> None:
        built, result.error = run_build(tool, [(teams_dir / rel).resolve()], memory, extra_args,
                                        tmp, timeout)
        evaluate(result, built, team_labels[team], extra)

    return run_grouped(files, results, work, jobs, "teams/")


def run_grouped(files: list[tuple[str, str]], results: list[SessionResult],
                work: Callable[[str, str, SessionResult], None], jobs: int, where: str,
                ) -> tuple[dict[str, list[SessionResult]], list[str]]:
    """WORK on each (file, group) and its result, JOBS at a time; the results by group and the
    failed runs, each named WHERE + its file."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(lambda pair: work(*pair[0], pair[1]), zip(files, results)))
    grouped: dict[str, list[SessionResult]] = {}
    for (_, group), result in zip(files, results):
        grouped.setdefault(group, []).append(result)
    return grouped, [f"{where}{r.name}: {r.error}" for r in results if r.error is not None]


# -- held-out teams: transcripts fetched from public repositories, labelled blind by id --

def heldout_half(repo: str) -> str:
    return hash_half(repo, "read", "check")


def load_heldout_labels(path: Path) -> dict[str, list[Label]]:
    """Blind labels by repository: JSON lines {"id", "repo", "label", "kind"}, no text."""
    by_repo: dict[str, list[Label]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
                label = Label(row["id"], "", row["label"], row.get("kind", "-"), "", frozenset())
                by_repo.setdefault(row["repo"], []).append(label)
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{number}: not a label line") from None
    return by_repo


def heldout_runs(tool: Path, heldout: Path, labels: dict[str, list[Label]], extra_args: list[str],
                 memory: Path, tmp: Path, timeout: float, jobs: int,
                 ) -> tuple[dict[str, list[SessionResult]], list[str]]:
    """Build each transcript HELDOUT/PROVENANCE.tsv lists (saved_as, repo) once; a proposal is
    matched by its id to its repository's labels. Recall counts the keep labels proposed."""
    listing = heldout / "PROVENANCE.tsv"
    if not listing.exists():
        listing = HELDOUT_PROVENANCE
    with listing.open(encoding="utf-8", newline="") as handle:
        files = [(row["saved_as"], row["repo"]) for row in csv.DictReader(handle, delimiter="\t")]
    results = [SessionResult(rel, heldout_half(repo), labels.get(repo, [])) for rel, repo in files]

    def work(rel: str, _repo: str, result: SessionResult) -> None:
        built, result.error = run_build(tool, [(heldout / rel).resolve()], memory, extra_args,
                                        tmp, timeout)
        evaluate(result, built, [], {lab.uid: lab.label for lab in result.labels})
        result.recalled = {text_id(item.text) for item in built}

    return run_grouped(files, results, work, jobs, "held-out ")


def dump_unmatched(path: Path, runs: list[list[SessionResult]], corpus: str = "sessions") -> int:
    """Append the unmatched proposals of RUNS to PATH (created empty by main)."""
    rows: dict[str, dict[str, str]] = {}
    for results in runs:
        for r in results:
            for p in r.proposals:
                if p.verdict is None:
                    rows.setdefault(text_id(p.text), {"id": text_id(p.text), "corpus": corpus,
                                                      "half": r.half, "session": r.name,
                                                      "text": p.text})
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for uid in sorted(rows):  # by id, so the order says nothing about the tool
            handle.write(json.dumps(rows[uid], ensure_ascii=False) + "\n")
    return len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    parts = set(args.parts)
    sessions_dir: Path = args.corpus / "sessions"
    labels_path: Path = args.corpus / "labels.jsonl"
    teams_dir: Path = args.corpus / "teams"
    if not sessions_dir.is_dir() or not labels_path.is_file():
        print(f"quality: corpus not found at {args.corpus}; nothing to measure")
        return 0
    tool: Path = args.tool.resolve()
    if not tool.is_file():
        print(f"quality: {tool} not found", file=sys.stderr)
        return 1
    extra_path: Path | None = args.extra_labels
    if extra_path is None and DEFAULT_EXTRA_LABELS.is_file():
        extra_path = DEFAULT_EXTRA_LABELS
    team_labels_path: Path | None = args.team_labels
    if team_labels_path is None and DEFAULT_TEAM_LABELS.is_file():
        team_labels_path = DEFAULT_TEAM_LABELS
    try:
        extra = load_extra_labels(extra_path) if extra_path is not None else {}
        team_extra = load_extra_labels(team_labels_path) if team_labels_path is not None else {}
        heldout_labels_path: Path = args.heldout_labels or DEFAULT_HELDOUT_LABELS
        heldout_labels = load_heldout_labels(heldout_labels_path) \
            if args.heldout is not None and "heldout" in parts else {}
    except (OSError, ValueError) as exc:
        print(f"quality: error: {exc}", file=sys.stderr)
        return 2
    started_all = time.perf_counter()
    labels = load_labels(labels_path)
    everywhere = [lab for session_labels in labels.values() for lab in session_labels]
    extra_args = shlex.split(args.extra_args)
    per_session_extra = ([] if args.max_add is None else ["--max-add", str(args.max_add)]) + extra_args
    sessions = sorted(p for p in sessions_dir.iterdir()
                      if p.is_file() and not p.name.startswith("."))
    scans = [scan_session(s) for s in sessions]
    read_s = time.perf_counter() - started_all
    halves = {s.path.name: half_of(s.conversation) for s in scans}
    by_conversation = conversation_labels(scans, labels)
    results = [SessionResult(s.name, halves[s.name], labels.get(s.name, []), conversation_labels=by_conversation[s.name])
               for s in sessions]
    digest = hashlib.sha256(tool.read_bytes()).hexdigest()[:12]
    cap = "default cap" if args.max_add is None else f"--max-add {args.max_add}"
    print(f"quality: {len(sessions)} sessions, {sum(map(len, labels.values()))} labels | "
          f"{tool.name} sha256 {digest} | {cap}"
          + (f" | extra: {shlex.join(extra_args)}" if extra_args else "")
          + (f" | extra labels: {len(extra)} from {extra_path}" if extra_path else "")
          + (f" | parts: {','.join(p for p in PARTS if p in parts)}" if parts != set(PARTS) else ""),
          flush=True)

    elapsed = union_s = edits_s = teams_s = 0.0
    union: dict[tuple[str, str], list[SessionResult]] = {}
    union_errors: list[str] = []
    edit_results: list[EditResult] = []
    all_edits: list[MemoryEdit] = []
    all_requests: list[MemoryRequest] = []
    requests: list[MemoryRequest] = []
    proposed_lines: dict[str, list[int]] = {}
    request_errors: list[str] = []
    team_results: dict[str, list[SessionResult]] = {}
    team_errors: list[str] = []
    heldout_results: dict[str, list[SessionResult]] = {}
    heldout_errors: list[str] = []
    heldout_s = 0.0
    per_session_built: list[list[Built]] = []
    with tempfile.TemporaryDirectory(prefix="memory-diff-quality-") as tmp_name:
        tmp = Path(tmp_name)
        memory = tmp / "memory.md"
        memory.write_text("", encoding="utf-8")

        def work(pair: tuple[Path, SessionResult]) -> list[Built]:
            path, result = pair
            built, result.error = run_build(tool, [path.resolve()], memory, per_session_extra,
                                            tmp, args.timeout)
            evaluate(result, built, everywhere, extra)
            return built

        if "sessions" in parts:
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                per_session_built = list(pool.map(work, zip(sessions, results)))
            elapsed = time.perf_counter() - started

        if "union" in parts:
            started = time.perf_counter()
            union, union_errors = union_runs(tool, sessions_dir, scans, halves, labels, everywhere,
                                             extra, extra_args, memory, tmp, args.timeout)
            union_s = time.perf_counter() - started
        if "edits" in parts:
            started = time.perf_counter()
            all_edits = [e for s in scans for e in s.edits]
            edits = merge_copies(all_edits, edit_keys)
            by_name = {s.path.name: s for s in scans}
            edit_results = edit_runs(tool, by_name, edits, extra_args, memory, tmp, args.timeout)
            edits_s = time.perf_counter() - started
        if "requests" in parts:
            all_requests = [r for s in scans for r in s.requests]
            requests = merge_copies(all_requests, request_keys)
            # Requests are judged on the whole session with the default cap: reuse the
            # per-session runs when they were that, else build those sessions again.
            names = [s.name for s in sessions]
            for name in sorted({c.rsplit(":", 1)[0] for r in requests for c in r.copies}):
                if args.max_add is None and per_session_built:
                    built = per_session_built[names.index(name)]
                else:
                    built, error = run_build(tool, [(sessions_dir / name).resolve()], memory,
                                             extra_args, tmp, args.timeout)
                    if error is not None:
                        request_errors.append(f"{name}: {error}")
                proposed_lines[name] = [item.line for item in built]
        if "teams" in parts and (teams_dir / "labels.jsonl").is_file():
            started = time.perf_counter()
            team_results, team_errors = team_runs(tool, teams_dir, team_extra, per_session_extra,
                                                  memory, tmp, args.timeout, args.jobs)
            teams_s = time.perf_counter() - started
        if "heldout" in parts and args.heldout is not None:
            started = time.perf_counter()
            try:
                heldout_results, heldout_errors = heldout_runs(
                    tool, args.heldout, heldout_labels, per_session_extra, memory, tmp,
                    args.timeout, args.jobs)
            except (OSError, KeyError, csv.Error) as exc:
                heldout_errors = [f"held-out {args.heldout}: cannot read PROVENANCE.tsv: {exc!r}"]
            heldout_s = time.perf_counter() - started

    failed = [r for r in results if r.error is not None]
    for r in failed:
        print(f"quality: error: {r.name}: {r.error}", file=sys.stderr)
    if "sessions" in parts:
        rows = [table_row(half, [r for r in results if r.half == half])
                for half in ("tune", "holdout")]
        rows.append(table_row("all", results))
        conversations = {s.conversation for s in scans}
        tune_conversations = sum(1 for c in conversations if half_of(c) == "tune")
        print(f"halves: tune = sha256(conversation id) first byte even, holdout = odd | "
              f"{len(conversations)} conversations ({tune_conversations} tune, "
              f"{len(conversations) - tune_conversations} holdout) | {elapsed:.0f} s, --jobs {args.jobs}"
              + (f" | {len(failed)} session(s) failed, left out" if failed else ""))
        print_table(rows)

    if "union" in parts:
        print("\nunion runs: one build over all sessions of the half "
              "(proposals per session = proposals / sessions in the half)")
        union_rows = [[cap_name, *table_row(half, union[(cap_name, half)])]
                      for cap_name in ("default cap", f"--max-add {UNION_CAP}")
                      for half in ("tune", "holdout", "all")]
        print_table(union_rows, ["run", *TABLE_HEADER])
    if extra_path is not None and "sessions" in parts:
        def by_extra(rs: list[SessionResult]) -> str:
            props = [p for r in rs for p in r.proposals]
            return ratio(sum(1 for p in props if p.best is None and p.extra is not None), len(props))
        print(f"extra labels ({extra_path.name}) matched what no corpus label did: per session "
              f"{by_extra(results)}"
              + (f", union all --max-add {UNION_CAP} {by_extra(union[(f'--max-add {UNION_CAP}', 'all')])}"
                 if union else ""))

    show = set(args.show)
    if "edits" in parts:
        print_edits(len(all_edits), edit_results, "edits" in show)
    if "requests" in parts:
        print_requests(all_requests, requests, [n for s in scans for n in s.not_typed],
                       proposed_lines, "requests" in show)
    if team_results:
        team_count = len(team_results)
        print(f"\nother teams (corpus/teams): {team_count} teams, "
              f"{sum(len(rs) for rs in team_results.values())} transcripts, one build each | "
              f"halves: write = sha256(team) first byte even, check = odd | {teams_s:.0f} s"
              + (f" | extra labels: {len(team_extra)} from {team_labels_path}"
                 if team_labels_path else ""))
        print_team_tables([team_figures(team, rs) for team, rs in team_results.items()])
    if heldout_results:
        labelled = sum(len(v) for v in heldout_labels.values())
        unlabelled = sum(1 for rs in heldout_results.values() for r in rs for p in r.proposals
                         if p.verdict is None)
        print(f"\nheld-out teams ({args.heldout}): {len(heldout_results)} repositories, "
              f"{sum(len(rs) for rs in heldout_results.values())} transcripts, one build each | "
              f"halves: read = sha256(repo) first byte even, check = odd | {heldout_s:.0f} s | "
              f"{labelled} blind labels from {heldout_labels_path}; proposals no label names: "
              f"{unlabelled} (label them blind: --dump-unmatched)")
        print_team_tables([team_figures(repo, rs, heldout_half(repo))
                           for repo, rs in heldout_results.items()], HELDOUT_HALVES)

    all_errors = union_errors + [r.error for r in edit_results if r.error] + request_errors \
        + team_errors + heldout_errors
    for error in all_errors:
        print(f"quality: error: {error}", file=sys.stderr)
    if args.dump_unmatched is not None:
        args.dump_unmatched.parent.mkdir(parents=True, exist_ok=True)
        args.dump_unmatched.write_text("", encoding="utf-8")
        count = dump_unmatched(args.dump_unmatched, [results, *union.values()])
        team_count = dump_unmatched(args.dump_unmatched, list(team_results.values()), "teams")
        heldout_count = dump_unmatched(args.dump_unmatched, list(heldout_results.values()),
                                       "heldout")
        print(f"\nunmatched proposals written for blind labelling: {count} of the sessions, "
              f"{team_count} of the teams, {heldout_count} held out to {args.dump_unmatched}")
    pool_for_show = [r for r in results if r.error is None
                     and (args.show_half == "all" or r.half == args.show_half)]
    try:
        for kind in args.show:
            if kind in ("edits", "requests"):
                continue
            show_samples(kind, pool_for_show, args.limit)
            if kind == "unmatched" and union:
                shown = frozenset(text_id(p.text) for r in pool_for_show for p in r.proposals)
                union_pool = [r for r in union[(f"--max-add {UNION_CAP}", "all")]
                              if r.error is None
                              and (args.show_half == "all" or r.half == args.show_half)]
                show_samples(kind, union_pool, args.limit,
                             f"unmatched in the union run, --max-add {UNION_CAP}, "
                             "not proposed per session", shown)
        if args.show_teams:
            # The write half only: the check half's transcripts and proposals stay unread.
            write_pool = [r for rs in team_results.values() for r in rs if r.half == "write"]
            for kind in args.show_teams:
                show_samples(kind, write_pool, args.limit, f"teams, write half: {kind}")
        if args.show_heldout:
            # The read half only, as for the teams.
            read_pool = [r for rs in heldout_results.values() for r in rs if r.half == "read"]
            for kind in args.show_heldout:
                show_samples(kind, read_pool, args.limit, f"held-out teams, read half: {kind}")
        print(f"\nquality: {time.perf_counter() - started_all:.0f} s in all (reading the corpus "
              f"{read_s:.0f} s, per-session runs {elapsed:.0f} s, union runs {union_s:.0f} s, "
              f"edit runs {edits_s:.0f} s, team runs {teams_s:.0f} s, "
              f"held-out runs {heldout_s:.0f} s)")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if failed or all_errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
