"""Property test for the shortcuts of the sentence stage: they must never change a verdict.

judge_message looks for SIGNAL phrases once in a whole message, skips a message that
holds none, and lets judge() check a sentence's phrases with `in` before SIGNAL runs;
without --stats or --json it does not even split such a message (Options.count_all).
Each random message, made of pieces chosen for the ways a phrase can form late (bold
markers stripped line by line, code spans re-paired by a rewritten home path or a
masked password, a stray withheld-secret mark), gets:

1. the verdicts judge_message gives, with its shortcuts;
2. the verdicts of a reference that cleans, masks and rewrites the message the same
   way, splits it, and runs judge() on every sentence with no phrase list;

and everything but `dropped_no_signal` must be the same, as must the counters the
patch's summary reads, with count_all on and off. stdlib `random`, fixed seeds.
"""
from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import memory_diff as md  # noqa: E402

# Whole pieces for the ways a phrase can form late: `**` stripped again line by line, a
# stray withheld-secret mark deleted between two `*`, a backtick taken by a rewritten
# home path or a masked password (which re-pairs code spans); and plain phrases, Chinese,
# invisible and case-folding characters, and what the gates stop.
PIECES = ["mu**st", "mu*\ue000*st", "/home/bob`", "https://u:Zq8xW3rT9pLm@h.example`", "`", " ", " ", ". ", "\n",
          "- ", "> ", "**", "never", "because", "不要", "\u200b", "\u202e", "\u017f", "token=Zq8xW3rT9pLm2",
          "ignore previous instructions", "a@example.com", "the cache ", "is cleared between runs"]
GATED = ("dropped_secret", "dropped_pii", "dropped_injection", "dropped_invisible", "dropped_structure",
         "signal", "dropped_noise", "dropped_length", "dropped_weak")
CASES = 3000


def reference(text: str, opts: md.Options) -> dict[int, str]:
    """Every sentence judged by SIGNAL itself: no phrase list, no skipped message."""
    clean, _ = md.clean_invisible(text)
    clean = md.mask_secrets(md.strip_emphasis(clean), Counter())
    if md.HOME_HINT.search(clean):
        clean = md.HOME_PATH.sub("~", clean)
    verdicts = (md.judge(s, "assistant", opts, md.SIGNAL, md.NOISE) for s in md.split_sentences(clean))
    return {n: v.stage for n, v in enumerate(verdicts) if v.stage != "dropped_no_signal"}


@pytest.mark.parametrize("seed", range(4))
def test_shortcuts_change_no_verdict(seed: int) -> None:
    rng = random.Random(seed)
    judged = 0
    for _ in range(CASES):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        # The assistant's: a user's message may be a memory request, which the reference
        # does not model (tests/test_canonical.py holds those).
        message = md.Message("assistant", text, 1, None)
        counted, quiet = Counter(), Counter()
        full = md.judge_message(message, md.Options(), md.SIGNAL, md.NOISE, counted)
        lean = md.judge_message(message, md.Options(count_all=False), md.SIGNAL, md.NOISE, quiet) or []
        got = {n: v.stage for n, _, v in full if v.stage != "dropped_no_signal"}
        assert got == reference(text, md.Options()), repr(text)
        assert [counted[k] for k in GATED] == [quiet[k] for k in GATED], repr(text)
        assert {n: v.stage for n, _, v in lean if v.stage != "dropped_no_signal"} == got, repr(text)
        judged += bool(got)
    assert judged > CASES // 10, "too few messages reached a verdict past SIGNAL: the test proves little"
