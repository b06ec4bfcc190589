"""Property test for invisible text: random rule sentences mixed with the invisible
classes, written as a native JSONL transcript, built into a patch for a committed
AGENTS.md in a real git repository.

For every seed:

1. the `+` lines of the patch (without the marker) are exactly the bytes that
   `git apply` adds to AGENTS.md, and `patch -p1` writes the same bytes;
2. no code point of a cleaned or a dropped class is anywhere in stdout (no ESC, no
   C0/C1 control but the newline, no default-ignorable, no surrogate, no bidi control);
3. a sentence with cleaned-class characters only between words comes out as a bullet
   equal to the clean sentence; a sentence with a bidi control never comes out; a
   sentence with a character inside a word may come out or not, and every bullet is the
   clean text of some input sentence;
4. `--stats`: `cleaned_invisible` >= the cleaned sentences that came out,
   `dropped_invisible` == the bidi sentences.

stdlib `random` with fixed seeds, one `build` subprocess per seed. Lone surrogates reach
the transcript as JSON escapes (`json.dumps(..., ensure_ascii=True)`).

The last tests in this file are targeted cases found while writing the property test.
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
from command import MEMORY_DIFF  # noqa: E402

MEMORY = b"# Agents\n\n- Use make for builds.\n"

# Good user rules, each proposed when clean (checked by test_pool_is_proposed_when_clean).
# Each holds the single-word marker "because", so a bidi control between two words can
# never hide the SIGNAL match: every bidi sentence reaches the gate and is counted as
# dropped_invisible.
POOL = [
    "Never push directly to main because the release job deploys every commit.",
    "Always run the linter before committing because CI rejects unformatted files.",
    "Do not edit the generated protobuf stubs by hand because the build overwrites them.",
    "Never commit the local .env file because it holds per-developer settings.",
    "Always pin dependency versions because floating ranges broke the nightly build twice.",
    "Prefer small pull requests because reviewers approve large ones without reading them.",
    "Do not call the payment sandbox from unit tests because it rate-limits the whole team.",
    "Always keep migrations backwards compatible because the old pods keep running during a rollout.",
    "Avoid mocking the clock in the scheduler tests because the retry logic reads it twice.",
    "Always bump the schema version when a column changes because the reader caches by version.",
    "We chose SQLite over Postgres for the cache because it needs no server on laptops.",
    "Never rename a public API field because mobile clients from last year still call it.",
    "Make sure the feature flag defaults to off because staging shares the production config.",
    "Do not log request bodies because they may contain customer addresses.",
    "Always rebase feature branches on main because the merge queue refuses merge commits.",
    "Never bump the minor version by hand because the release tool derives it from the changelog.",
    "Always use pnpm instead of npm because the lockfile is only maintained for pnpm.",
    "Always run the integration suite with one worker because the fixtures share a single database.",
    "Always store timestamps in UTC because the reports are compared across three regions.",
    "Never write new scripts in Bash because the Windows runners lack a POSIX shell.",
    "Always close the upload socket explicitly because the mock server drops the last chunk otherwise.",
    "Never put test fixtures outside tests/data because the packaging step excludes every other folder.",
    "Do not retry failed webhooks inline because the provider already retries them with backoff.",
    "Never reuse a staging database snapshot in development because it contains real order history.",
]

# -- the classes -------------------------------------------------------------------------

# Terminal escape sequences, each complete (so none may swallow the text after it).
ESCAPES = [
    "\x1b[0m", "\x1b[m", "\x1b[1m", "\x1b[31m", "\x1b[1;32m", "\x1b[38;5;208m",
    "\x1b[48;2;10;20;30m", "\x1b[2K", "\x1b[1G", "\x1b[3A", "\x1b[?25l", "\x1b[?25h",
    "\x9b0m", "\x9b1;31m",  # 8-bit CSI
    "\x1b]0;build log\x07", "\x1b]2;title\x1b\\",  # OSC window title, BEL and ST ends
]
# OSC 8 hyperlinks wrap a word: (opener, closer).
HYPERLINKS = [
    ("\x1b]8;;https://example.com/runbook\x07", "\x1b]8;;\x07"),
    ("\x1b]8;id=1;https://example.org/docs\x1b\\", "\x1b]8;;\x1b\\"),
]
SGR_WRAPS = [("\x1b[1m", "\x1b[0m"), ("\x1b[31m", "\x1b[39m"), ("\x1b[4;33m", "\x1b[m")]
# Other C0/C1 controls. Left out: \t (a class of its own: it becomes a space), \n and \r
# and \x85 NEL (line breaks: they end a line, hence a sentence), ESC (introduces an escape
# sequence; tested above as complete sequences) and the C1 introducers of sequences and
# control strings (SS2, SS3, DCS, SOS, CSI, OSC, PM, APC), which a stripper may rightly
# extend over the text after them.
CONTROLS = [chr(c) for c in range(0x00, 0x20) if c not in (0x09, 0x0A, 0x0D, 0x1B)] + ["\x7f"] + [
    chr(c) for c in range(0x80, 0xA0) if c not in (0x85, 0x8E, 0x8F, 0x90, 0x98, 0x9B, 0x9D, 0x9E, 0x9F)]
# Zero-width and other default-ignorable code points.
IGNORABLES = [
    "\u00ad", "\u034f", "\u115f", "\u1160", "\u17b4", "\u17b5",
    *map(chr, range(0x180B, 0x1810)), *map(chr, range(0x200B, 0x200E)),
    *map(chr, range(0x2060, 0x2065)), *map(chr, range(0x206A, 0x2070)), "\u3164",
    *map(chr, range(0xFE00, 0xFE10)), "\ufeff", "\uffa0", *map(chr, range(0xFFF0, 0xFFF9)),
    *map(chr, range(0x1BCA0, 0x1BCA4)), *map(chr, range(0x1D173, 0x1D17B)),
]
# Bidirectional overrides, embeddings, isolates and marks: the sentence is dropped.
BIDI = [*map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)), "\u200e", "\u200f", "\u061c"]
BIDI_WRAPS = [("\u202e", "\u202c"), ("\u2067", "\u2069"), ("\u2066", "\u2069"), ("\u202d", "\u202c")]

# Every code point of the cleaned and dropped classes that stdout must not hold (the
# newline excepted); tags U+E0000..U+E0FFF and all surrogates as ranges.
FORBIDDEN = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f" + "".join(IGNORABLES) + "".join(BIDI)
    + "\U000e0000-\U000e0fff\ud800-\udfff]"
)
KEYWORDS = frozenset({"because", "never", "always", "not", "prefer", "avoid", "chose", "instead",
                      "make", "sure", "keep"})


def cleaned_token(rng: random.Random) -> str:
    """One random character or sequence of a cleaned class (not tab, not a wrap)."""
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice(ESCAPES)
    if kind == 1:
        return rng.choice(CONTROLS)
    if kind == 2:
        return chr(rng.randint(0xD800, 0xDFFF))  # a lone surrogate
    if rng.random() < 0.2:
        return chr(0xE0000 + rng.randrange(0x1000))  # tags, variation selectors supplement
    return rng.choice(IGNORABLES)


def cleaned_run(rng: random.Random) -> str:
    return "".join(cleaned_token(rng) for _ in range(rng.randint(1, 3)))


class Sentence(NamedTuple):
    clean: str
    dirty: str
    kind: str          # "between" | "inside" | "bidi"
    has_cleaned: bool  # holds at least one character of a cleaned class


def decorate(rng: random.Random, clean: str) -> Sentence:
    """The sentence with invisible characters between its words (and maybe inside a word,
    maybe a bidi control). Nothing goes next to the final period: "commit.\\x1b[0m Next"
    is a different case (see test_invisible_after_sentence_end_keeps_sentences_apart)."""
    words = clean.split(" ")
    n = len(words)
    before = [""] * n          # after the preceding space (or at the message start)
    after = [""] * n           # before the following space (not for the last word)
    seps = [" "] * (n - 1)
    cores = list(words)        # words may get an insertion inside, or a wrap around
    has_cleaned = False

    # Between words: 1-4 runs of cleaned characters, each left or right of a space.
    for _ in range(rng.randint(1, 4)):
        gap = rng.randrange(n - 1)
        if rng.random() < 0.5:
            after[gap] += cleaned_run(rng)
        else:
            before[gap + 1] += cleaned_run(rng)
        has_cleaned = True
    if rng.random() < 0.2:  # at the start: after the space between sentences, or the message start
        before[0] += cleaned_run(rng)
    if rng.random() < 0.3:  # a tab for a space
        seps[rng.randrange(n - 1)] = "\t"
        has_cleaned = True

    kind = "between"
    if rng.random() < 0.3:  # inside a word: between two letters, often of a keyword
        # (before any wrap, so never inside an escape sequence's payload)
        kind = "inside"
        for _ in range(rng.randint(1, 2)):
            choices = [i for i, w in enumerate(words) if sum(c.isalpha() for c in w) >= 2]
            keyed = [i for i in choices if words[i].lower().strip(".,") in KEYWORDS]
            i = rng.choice(keyed if keyed and rng.random() < 0.6 else choices)
            word = cores[i]
            spots = [k for k in range(1, len(word)) if word[k - 1].isalpha() and word[k].isalpha()]
            if spots:
                k = rng.choice(spots)
                token = rng.choice(IGNORABLES) if rng.random() < 0.6 else cleaned_token(rng)
                cores[i] = word[:k] + token + word[k:]
                has_cleaned = True
    if rng.random() < 0.4:  # colour or a hyperlink around a word (its punctuation outside)
        i = rng.randrange(n)
        opener, closer = rng.choice(SGR_WRAPS + HYPERLINKS)
        core = cores[i].rstrip(".,")
        cores[i] = opener + core + closer + cores[i][len(core):]
        has_cleaned = True
    if rng.random() < 0.25:  # a bidi control between words, or a pair around a word
        kind = "bidi"
        if rng.random() < 0.5:
            i = rng.randrange(n)
            opener, closer = rng.choice(BIDI_WRAPS)
            core = cores[i].rstrip(".,")
            cores[i] = opener + core + closer + cores[i][len(core):]
        else:
            gap = rng.randrange(n - 1)
            if rng.random() < 0.5:
                after[gap] += rng.choice(BIDI)
            else:
                before[gap + 1] += rng.choice(BIDI)

    parts = []
    for i in range(n):
        parts.append(before[i] + cores[i] + (after[i] + seps[i] if i < n - 1 else ""))
    return Sentence(clean, "".join(parts), kind, has_cleaned)


def transcript(seed: int) -> list[list[Sentence]]:
    """Messages of 1-3 sentences, 4-9 distinct pool sentences in all."""
    rng = random.Random(seed)
    while True:
        picked = rng.sample(POOL, rng.randint(4, 9))
        messages: list[list[Sentence]] = []
        while picked:
            size = min(len(picked), rng.randint(1, 3))
            take, picked = picked[:size], picked[size:]
            messages.append([decorate(rng, s) for s in take])
        text = "".join(s.dirty for m in messages for s in m)
        # A high surrogate right before a low one would be read back as one real character.
        if not re.search("[\ud800-\udbff][\udc00-\udfff]", text):
            return messages


# -- running the tool --------------------------------------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-c", "core.autocrlf=false", *args], cwd=repo,
                          env={**os.environ, **GIT_ENV}, capture_output=True, timeout=60)


def make_repo(path: Path) -> Path:
    path.mkdir()
    assert git(path, "init", "-q").returncode == 0
    (path / "AGENTS.md").write_bytes(MEMORY)
    assert git(path, "add", "AGENTS.md").returncode == 0
    assert git(path, "commit", "-q", "-m", "init").returncode == 0
    return path


def write_jsonl(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"role": "user", "text": t}, ensure_ascii=True) + "\n"
                            for t in texts), encoding="ascii")
    return path


def build(repo: Path, transcript_path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MEMORY_DIFF, "build", str(transcript_path),
                           "--memory", "AGENTS.md", "--max-add", "100", "--stats"],
                          cwd=repo, capture_output=True, timeout=60)


def plus_lines(patch: bytes) -> list[bytes]:
    """The `+` lines of the hunks, marker removed."""
    lines = patch.split(b"\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith(b"+++ "))
    return [ln[1:] for ln in lines[start + 1:] if ln.startswith(b"+")]


def stats_of(stderr: bytes) -> dict[str, int]:
    return {k: int(v) for k, v in (ln.split("=", 1) for ln in stderr.decode().splitlines() if "=" in ln)}


def bullets_of(repo: Path, transcript_path: Path) -> tuple[list[str], dict[str, int], bytes]:
    done = build(repo, transcript_path)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    bullets = [ln.decode() for ln in plus_lines(done.stdout)] if done.stdout else []
    assert all(b.startswith("- ") for b in bullets), bullets
    return [b[2:] for b in bullets], stats_of(done.stderr), done.stdout


# -- tests -------------------------------------------------------------------------------

def test_pool_is_proposed_when_clean(tmp_path: Path) -> None:
    """Each pool sentence is a good rule, proposed as is: one a message, and all in one
    message (so the split between sentences is the tool's, not the test's)."""
    assert len(set(POOL)) == len(POOL)
    assert all(re.search(r"\bbecause\b", s) for s in POOL)
    assert all(s.isascii() and s.isprintable() and "  " not in s for s in POOL)
    repo = make_repo(tmp_path / "repo")
    got, stats, _ = bullets_of(repo, write_jsonl(tmp_path / "one.jsonl", POOL))
    assert got == POOL
    assert stats["proposed"] == len(POOL)
    got, stats, _ = bullets_of(repo, write_jsonl(tmp_path / "all.jsonl", [" ".join(POOL)]))
    assert got == POOL
    assert stats["cleaned_invisible"] == 0


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed{s}") for s in range(40)])
def test_random_invisible_mix(seed: int, tmp_path: Path) -> None:
    messages = transcript(seed)
    sentences = [s for m in messages for s in m]
    repo = make_repo(tmp_path / "repo")
    path = write_jsonl(tmp_path / "t.jsonl", ["".join(
        s.dirty if j == 0 else " " + s.dirty for j, s in enumerate(m)) for m in messages])
    done = build(repo, path)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    out = done.stdout
    stats = stats_of(done.stderr)

    # (2) nothing invisible in stdout: valid UTF-8 (no surrogate can be encoded), no
    # ESC/C0/C1 byte but the newline, no code point of the classes.
    text = out.decode("utf-8")  # strict: a surrogate written with surrogatepass fails here
    bad = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(text)})
    assert not bad, f"seed {seed}: invisible code points in stdout: {bad}"
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", out)

    # (1) the `+` lines are what git apply and patch -p1 add, byte for byte.
    added = plus_lines(out) if out else []
    if out:
        patch_file = tmp_path / "proposal.patch"
        patch_file.write_bytes(out)
        checked = git(repo, "apply", "--check", str(patch_file))
        assert checked.returncode == 0, checked.stderr.decode()
        applied = git(repo, "apply", str(patch_file))
        assert applied.returncode == 0, applied.stderr.decode()
        expected = MEMORY + b"".join(ln + b"\n" for ln in added)
        assert (repo / "AGENTS.md").read_bytes() == expected
        (repo / "AGENTS.md").write_bytes(MEMORY)
        patched = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-i",
                                  str(patch_file)], cwd=repo, capture_output=True, timeout=60)
        assert patched.returncode == 0, (patched.stdout + patched.stderr).decode()
        assert (repo / "AGENTS.md").read_bytes() == expected

    # (3) which sentences come out, and as what.
    assert all(ln.startswith(b"- ") for ln in added), added
    bullets = [ln[2:].decode() for ln in added]
    assert len(bullets) == len(set(bullets))
    assert stats["sentences"] == len(sentences), "a sentence was split or merged"
    allowed = {s.clean for s in sentences if s.kind != "bidi"}
    strays = [b for b in bullets if b not in allowed]
    assert not strays, f"seed {seed}: bullets that are no clean input sentence: {strays}"
    for s in sentences:
        if s.kind == "between":
            assert s.clean in bullets, f"seed {seed}: missing {s.clean!r} from {s.dirty!r}"
        elif s.kind == "bidi":
            assert s.clean not in bullets, f"seed {seed}: bidi sentence proposed: {s.dirty!r}"

    # (4) the accounting.
    came_out = [s for s in sentences if s.kind != "bidi" and s.clean in bullets]
    bidi = [s for s in sentences if s.kind == "bidi"]
    assert stats["proposed"] == len(bullets)
    assert stats["cleaned_invisible"] >= sum(s.has_cleaned for s in came_out)
    # cleaned_invisible counts escape sequences and characters removed, so it has no
    # upper bound in sentences.
    assert stats["dropped_invisible"] == len(bidi)


def test_generator_covers_every_class() -> None:
    """The 40 seeds together exercise every class and every kind of sentence."""
    dirty = "".join(s.dirty for seed in range(40) for m in transcript(seed) for s in m)
    kinds = {s.kind for seed in range(40) for m in transcript(seed) for s in m}
    assert kinds == {"between", "inside", "bidi"}
    assert "\x1b[" in dirty and "\x1b]8;" in dirty and "\x9b" in dirty and "\t" in dirty
    assert re.search("[\ud800-\udfff]", dirty)
    assert re.search("[\U000e0000-\U000e0fff]", dirty)
    assert re.search("[\u200b-\u200d\u2060-\u2064\ufeff\u00ad]", dirty)
    assert re.search("[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]", dirty)
    assert re.search("[" + "".join(BIDI) + "]", dirty)


# -- targeted cases found while writing the property test --------------------------------

ESC_RULE = "Never push directly to main because the release job deploys every commit."
ESC_RULE2 = "Always pin dependency versions because floating ranges broke the nightly build twice."


@pytest.mark.parametrize("dirty", [
    # `tput sgr0` on xterm/linux terminals writes ESC ( B ESC [ m: a charset designation
    # (ECMA-35 nF: ESC, intermediates 0x20-0x2F, a final 0x30-0x7E) before the SGR reset.
    pytest.param("Never push directly to \x1b(B\x1b[mmain because the release job deploys every commit.",
                 id="tput-sgr0-charset"),
    pytest.param("Never push directly to main \x1b7because the release job\x1b8 deploys every commit.",
                 id="decsc-decrc"),  # ESC 7 / ESC 8 (Fp): save and restore the cursor
    pytest.param("Never push directly to main because the \x1b=release job deploys every commit.",
                 id="deckpam"),      # ESC = (Fp): keypad application mode
    pytest.param("Never push directly to \x1bcmain because the release job deploys every commit.",
                 id="ris"),          # ESC c (Fs): reset to initial state
])
def test_two_byte_and_charset_escapes_leave_no_residue(dirty: str, tmp_path: Path) -> None:
    """An escape sequence is removed whole: only ESC + 0x40-0x5F (Fe) is, today; for
    nF, Fp and Fs sequences the ESC goes and its final byte stays in the bullet."""
    repo = make_repo(tmp_path / "repo")
    got, _, _ = bullets_of(repo, write_jsonl(tmp_path / "t.jsonl", [dirty]))
    assert got == [ESC_RULE]


@pytest.mark.parametrize("glue", [
    pytest.param("\x1b[0m ", id="sgr-reset-after-period"),
    pytest.param("\u200b ", id="zero-width-after-period"),
    pytest.param("\x1b]8;;\x07 ", id="osc8-close-after-period"),
])
def test_invisible_after_sentence_end_keeps_sentences_apart(glue: str, tmp_path: Path) -> None:
    """Colour reset right after a period ("...commit.\\x1b[0m Always...") is how coloured
    terminal text ends a sentence. Sentences are split before cleaning, so the period is
    not followed by white space and two rules come out as one bullet."""
    repo = make_repo(tmp_path / "repo")
    got, stats, _ = bullets_of(repo, write_jsonl(tmp_path / "t.jsonl", [ESC_RULE + glue + ESC_RULE2]))
    assert got == [ESC_RULE, ESC_RULE2]
    assert stats["sentences"] == 2
