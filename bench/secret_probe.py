"""A blind probe of the secret gate: does any output print a listed credential, and does the
gate pass a listed look-alike?

    python bench/secret_probe.py KINDS.tsv [--lookalikes LOOK.tsv] [--tool memory_diff.py] [-v]

KINDS.tsv holds `ID KIND CONTEXT VALUE SECRET` lines: CONTEXT is a snippet with `{v}` where the
VALUE goes, SECRET the part of VALUE that must never be printed. Each kind is written in the
SHAPES below, each said by the user and by the assistant, and run in every mode
(tests/test_secret_properties.all_outputs: the patch with --stats, --json, --explain, lint); a
row leaks when a 12-character window of SECRET shows in an output under any of that test's
views. LOOK.tsv holds `ID KIND SENTENCE VALUE` lines: a look-alike is withheld when
`--explain` shows no row with its value and the secret gate took it.

The lists are written by a helper that reads no code and kept outside the repository: a list
read while writing rules is no longer a measure of what nobody listed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import test_secret_properties as props  # noqa: E402

RULE = "Never rotate {s} by hand because the nightly release job fails closed when it changes."
RULE_ZH = "必须在部署脚本里使用{s}，因为夜间发布任务启动时会读取它。"


def wrapped(value: str) -> str:
    return value[:len(value) // 2] + "\n" + value[len(value) // 2:]


def sprinkled(value: str) -> str:
    return "".join(c + props.INVISIBLES[i % len(props.INVISIBLES)] if i % 5 == 2 else c for i, c in enumerate(value))


def percented(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if i % 3 == 0 else c for i, c in enumerate(value))


def referenced(value: str) -> str:
    return "".join(f"&#{ord(c)};" if i % 4 == 0 else c for i, c in enumerate(value))


# Each takes the snippet (with {v}) and the value, and gives the message.
SHAPES = {
    "plain": lambda c, v: RULE.replace("{s}", c.replace("{v}", v)),
    "code": lambda c, v: RULE.replace("{s}", "`" + c.replace("{v}", v) + "`"),
    "fence": lambda c, v: "Keep this in the deploy notes:\n```\n" + c.replace("{v}", v) + "\n```",
    "alone": lambda c, v: c.replace("{v}", v),
    "zh": lambda c, v: RULE_ZH.replace("{s}", c.replace("{v}", v)),
    "quotes": lambda c, v: RULE.replace("{s}", c.replace("{v}", v if re.search(r"[\"']\{v\}", c) else f'"{v}"')),
    "link": lambda c, v: RULE.replace("{s}", f"[the hook](https://ci.example.com/hooks/{v})"),
    "query": lambda c, v: RULE.replace("{s}", f"https://hooks.example.com/run?sig={v}&retry=1"),
    "json": lambda c, v: RULE.replace("{s}", "`" + json.dumps({"run": c.replace("{v}", v), "region": "eu"}) + "`"),
    "table": lambda c, v: f"| staging | {c.replace('{v}', v)} |",
    "wrap": lambda c, v: RULE.replace("{s}", c.replace("{v}", wrapped(v))),
    "invisible": lambda c, v: RULE.replace("{s}", c.replace("{v}", sprinkled(v))),
    "percent": lambda c, v: RULE.replace("{s}", c.replace("{v}", percented(v))),
    "fullwidth": lambda c, v: RULE.replace("{s}", props.full_width(c.replace("{v}", v))),
    "reference": lambda c, v: RULE.replace("{s}", c.replace("{v}", referenced(v))),
    "markdown": lambda c, v: RULE.replace("{s}", c.replace("{v}", v.replace("_", "\\_"))),
    "bullet": lambda c, v: "Notes for the next session:\n- " + c.replace("{v}", v) + "\n- Deploys run at 02:00.",
    "aside": lambda c, v: "For the record, " + c.replace("{v}", v) + " is what staging uses; never paste it in chat.",
}


# Shapes that put the value alone where a generated secret stands (a hook's path, a signature's
# query): a chosen password there is a probe's artefact as much as a leak; counted apart.
VALUE_ALONE = {"link", "query"}


def use(tool: str) -> None:
    spec = importlib.util.spec_from_file_location("memory_diff", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    props.md = module


def probe_kind(tool: str, row: list[str]) -> list[tuple[str, str, str, list[str]]]:
    """(shape, role, message, modes that leak) for each leaking row of one kind."""
    use(tool)
    _, _, context, value, secret = row
    found = []
    for shape, make in SHAPES.items():
        message = make(context, value)
        for role in ("user", "assistant"):
            leaking = props.leaks(props.all_outputs([(role, message)]), secret)
            if leaking:
                found.append((shape, role, message, leaking))
    return found


def probe_lookalike(tool: str, row: list[str]) -> str:
    use(tool)
    _, _, sentence, value = row
    return props.stage_of(sentence, value)


def rows(path: Path, fields: int) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.count("\t") == fields - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kinds", type=Path)
    parser.add_argument("--lookalikes", type=Path)
    parser.add_argument("--tool", default=str(ROOT / "memory_diff.py"))
    parser.add_argument("-v", action="store_true", help="print each leaking row")
    args = parser.parse_args()
    kinds = rows(args.kinds, 5)
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(probe_kind, [args.tool] * len(kinds), kinds))
        looks = rows(args.lookalikes, 4) if args.lookalikes else []
        stages = list(pool.map(probe_lookalike, [args.tool] * len(looks), looks))
    printed = 0
    for row, found in zip(kinds, results):
        if found:
            printed += 1
            print(f"printed\t{row[0]}\t{row[1]}\t{len(found)} rows\t{sorted({m for *_, ms in found for m in ms})}")
            if args.v:
                for shape, role, message, leaking in found:
                    print(f"\t{shape}\t{role}\t{leaking}\t{ascii(message)[:220]}")
    withheld = 0
    for row, stage in zip(looks, stages):
        if stage.startswith(("dropped_secret", "withheld")):
            withheld += 1
            print(f"withheld\t{row[0]}\t{row[1]}\t{ascii(row[2])[:200]}")
    total = sum(len(SHAPES) * 2 for _ in kinds)
    alone = sum(1 for found in results if found and {shape for shape, *_ in found} <= VALUE_ALONE)
    print(f"kinds printed: {printed} of {len(kinds)} ({alone} only where the value stands alone: "
          f"{', '.join(sorted(VALUE_ALONE))}); rows leaking: {sum(map(len, results))} of {total}")
    if looks:
        print(f"look-alikes withheld: {withheld} of {len(looks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
