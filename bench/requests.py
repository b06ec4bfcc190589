"""Memory requests honoured on generated sets: does `build` propose what each request asks to
record, and nothing for a message that only mentions a memory?

    python bench/requests.py [--tool memory_diff.py] [SET.tsv ...]

A set is tab-separated `KIND LANG MESSAGE EXPECTED` lines (bench/requests/set*.tsv by default):
KIND `request` (EXPECTED: the rule's content) or `near` (a mention, EXPECTED `-`); `\\n` in a
message is a line break. Each message is its own session, the user's message and the agent's
"OK.", built with `--json --max-add 1000`. A request counts as honoured when a proposal's text
is at least MATCH similar to EXPECTED (difflib's ratio, lower-cased); a near one when nothing is
proposed. Prints the failures, then the counts per set, kind and language (English or other).
"""
from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
MATCH = 0.5


def proposals(tool: str, folder: Path, index: int, message: str) -> list[str]:
    session = folder / f"s{index}.json"
    session.write_text(json.dumps([{"role": "user", "content": message.replace("\\n", "\n")},
                                   {"role": "assistant", "content": "OK."}]))
    run = subprocess.run([sys.executable, tool, "build", str(session), "--json", "--no-cache",
                          "--max-add", "1000", "--memory", str(folder / "memory.md")],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return [f"<error: {run.stderr.strip()}>"]
    return [item["text"] for item in json.loads(run.stdout)["proposed"]]


def honoured(kind: str, expected: str, proposed: list[str]) -> bool:
    if kind == "near":
        return not proposed
    return any(difflib.SequenceMatcher(None, expected.lower(), text.lower()).ratio() >= MATCH
               for text in proposed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", default=str(HERE.parent / "memory_diff.py"))
    parser.add_argument("sets", nargs="*", type=Path, default=sorted((HERE / "requests").glob("set*.tsv")))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "memory.md").write_text("")
        summary = []
        for path in args.sets:
            rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()
                    if line.count("\t") == 3]
            with ThreadPoolExecutor(2) as pool:
                found = list(pool.map(lambda item: proposals(args.tool, folder, *item),
                                      enumerate(row[2] for row in rows)))
            counts: dict[tuple[str, str], list[int]] = {}
            for (kind, lang, message, expected), proposed in zip(rows, found):
                ok = honoured(kind, expected, proposed)
                for key in ((kind, "all"), (kind, "en" if lang == "en" else "other")):
                    counts.setdefault(key, [0, 0])[0] += ok
                    counts[key][1] += 1
                if not ok:
                    print(f"{path.name}\t{kind}\t{lang}\t{message[:120]}\t=> {[text[:80] for text in proposed]}")
            summary.append((path.name, counts))
    print("\nset\tkind\tall\ten\tother")
    for name, counts in summary:
        for kind in ("request", "near"):
            cells = ["%d/%d" % tuple(counts.get((kind, part), (0, 0))) for part in ("all", "en", "other")]
            print("\t".join([name, kind, *cells]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
