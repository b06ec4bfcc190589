"""Print memory_diff's COMMON_PAIRS: the 250 commonest letter pairs inside the words of the
running Python's standard library sources, its tests and installed packages left out (CPython
3.11.7's `Lib/` made the table), and how often random letters pair so.

    python bench/letter_pairs.py [LIB_DIR]
"""

import collections
import pathlib
import random
import re
import string
import sys
import sysconfig

PAIRS = 250
SKIPPED = {"site-packages", "dist-packages", "test", "tests", "idle_test"}  # the library's own code
PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")  # memory_diff.NAME_PIECE, on letters alone


def main(argv: list[str]) -> int:
    lib = pathlib.Path(argv[1] if len(argv) > 1 else sysconfig.get_paths()["stdlib"])
    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(lib.rglob("*.py")):
        if SKIPPED & set(path.relative_to(lib).parts[:-1]):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for word in re.findall(r"[A-Za-z]+", text):
            for piece in PIECE.findall(word):
                piece = piece.lower()
                counts.update(piece[i:i + 2] for i in range(len(piece) - 1))
    common = sorted(pair for pair, _ in counts.most_common(PAIRS))
    total = sum(counts.values())
    covered = sum(counts[pair] for pair in common) / total
    rng = random.Random(0)
    drawn = ["".join(rng.choices(string.ascii_lowercase, k=2)) for _ in range(100_000)]
    chance = sum(pair in common for pair in drawn) / len(drawn)
    print(f"{lib}: {total} pairs; the {PAIRS} commonest cover {covered:.1%} of them, "
          f"{chance:.1%} of random letters' pairs")
    for row in range(0, len(common), 32):
        print(" ".join(common[row:row + 32]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
