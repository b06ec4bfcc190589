"""Table tests for the memory-diff security gates (secrets, personal data, injection-shaped
text, invisible/deceptive characters, structure-changing bullets).

Data lives in tests/gate_cases.py. Every positive runs `build --json --stats` on its own (so
the gate counters can be attributed to it). `--explain`, the plain patch and `lint` (one memory
file line per case) run once over all positives together; leak and finding checks are still
per case. Documentation example keys are linted alone, to see that a lone `note` exits 0. All
negatives run together in one transcript; each is checked separately by its own param id.
The runs are `main` in this process (tests/command.py), their results kept for the session.
"""

import difflib
import json
import os
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TOOL = REPO / "memory_diff.py"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import gate_cases as gc  # noqa: E402
from command import main_process  # noqa: E402

pytestmark = pytest.mark.skipif(not TOOL.is_file(), reason="memory_diff.py is not written yet")

GATE_COUNTERS = ("dropped_secret", "dropped_pii", "dropped_injection", "dropped_invisible")
NON_GATE_DROPS = {"dropped_noise", "dropped_length", "dropped_duplicate", "dropped_over_cap"}
WINDOW = 12  # no run of this many characters of a secret body may be printed
MEMORY_HEADER = "# Project memory\n\n"  # the case line of a lint file is line 3

POS_PARAMS = [pytest.param(c, id=c["id"]) for c in gc.POSITIVES]
LINT_PARAMS = [pytest.param(c, id=c["id"]) for c in gc.POSITIVES if c["lint"]]
CONTROL_PARAMS = [pytest.param(c, id=c["id"]) for c in gc.POSITIVES if c["id"] not in gc.CONTROL_SKIP]
NEG_PARAMS = [pytest.param(cid, text, id=f"negative-{cid}") for cid, text in gc.NEGATIVES]


# --------------------------------------------------------------------------- running the tool

class Result:
    def __init__(self, args, proc):
        self.args = args
        self.returncode = proc.returncode
        self.stdout = proc.stdout.decode("utf-8", "surrogateescape")
        self.stderr = proc.stderr.decode("utf-8", "surrogateescape")

    def brief(self, limit=1500):
        def cut(s):
            s = s if len(s) <= limit else s[:limit] + "...[cut]"
            return ascii(s)  # never let raw control characters reach the test log
        return f"args={self.args[1:]!r}\nexit={self.returncode}\nstdout={cut(self.stdout)}\nstderr={cut(self.stderr)}"


def _run(args, env):
    # Run inside this repository: --no-cache, so its git directory never holds a cache.
    extra = ["--no-cache"] if list(args[:1]) == ["build"] else []
    return Result(args, main_process([*args, *extra], REPO, env))


def _write_transcript(path, texts):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for t in texts:
            f.write(json.dumps({"role": "user", "text": t}, ensure_ascii=False) + "\n")


def _write_memory(path, header=MEMORY_HEADER):
    path.write_text(header, encoding="utf-8", newline="\n")


@pytest.fixture(scope="session")
def tool_env(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_DATA_HOME=str(home / ".local" / "share"))
    return env


# --------------------------------------------------------------------------- parsing output

_STAT_LINE = re.compile(r"^([a-z][a-z0-9_]*)=(-?\d+)\s*$")


def parse_stats(stderr):
    out = {}
    for line in stderr.splitlines():
        m = _STAT_LINE.match(line.strip())
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def parse_build_json(res):
    """(parsed object or None, [bullet texts], stats). Empty stdout = nothing proposed."""
    body = res.stdout.strip()
    obj = None
    if body:
        try:
            obj = json.loads(body)
        except ValueError as e:
            pytest.fail(f"--json stdout is not one JSON object ({e})\n{res.brief()}")
    bullets = [p["text"] for p in (obj or {}).get("proposed", [])]
    stats = parse_stats(res.stderr)
    if obj and isinstance(obj.get("stats"), dict):
        stats.update({k: v for k, v in obj["stats"].items() if isinstance(v, int)})
    return obj, bullets, stats


def patch_bullets(stdout):
    """Bullet texts added by a unified diff on stdout."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            line = line[1:]
            out.append(line[2:] if line.startswith("- ") else line)
    return out


def all_strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from all_strings(k)
            yield from all_strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from all_strings(v)


def _lint_findings(res, path):
    rx = re.compile(r"^" + re.escape(str(path)) + r":(\d+): ([A-Za-z][\w-]*):")
    out = []
    for line in (res.stdout + "\n" + res.stderr).splitlines():
        m = rx.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


def _norm(s):
    """Comparison key for a cleaned bullet: whitespace, backticks and backslashes ignored."""
    return re.sub(r"[\s`\\]+", "", s)


# --------------------------------------------------------------------------- assertions

def assert_no_leak(case, where, text):
    """No value and no WINDOW-long run of a secret body anywhere in `text`."""
    for i, v in enumerate(case["values"]):
        pos = text.find(v)
        assert pos < 0, f"{case['id']}: value #{i} {ascii(v[:40])} leaked in {where} at offset {pos}"
    for i, body in enumerate(case["bodies"]):
        for j in range(0, max(1, len(body) - WINDOW + 1)):
            w = body[j:j + WINDOW]
            pos = text.find(w)
            assert pos < 0, (f"{case['id']}: {WINDOW} characters of secret body #{i} (from index {j}) "
                             f"leaked in {where} at offset {pos}")


def assert_bullets_safe(case, bullets, where):
    for b in bullets:
        for v in case["values"] + case["pieces"]:
            assert v not in b, f"{case['id']}: {where} bullet carries {ascii(v[:60])}: {ascii(b)}"
        for rx in case["forbid"]:
            assert not re.search(rx, b), f"{case['id']}: {where} bullet matches {rx!r}: {ascii(b)}"


# --------------------------------------------------------------------------- session caches

@pytest.fixture(scope="session")
def positive_runs(tmp_path_factory, tool_env):
    base = tmp_path_factory.mktemp("gate-positives")

    def work(case):
        d = base / case["id"]
        d.mkdir()
        t, mem = d / "transcript.jsonl", d / "memory.md"
        _write_transcript(t, [case["text"]])
        _write_memory(mem)
        out = {"json": _run(["build", str(t), "--memory", str(mem), "--json", "--stats", "--max-add", "100"], tool_env)}
        if case["note"]:  # a note must be the only finding to show that it exits 0
            lm = d / "lint-memory.md"
            lm.write_text(MEMORY_HEADER + "- " + case["text"] + "\n", encoding="utf-8", newline="\n")
            out["lint"] = _run(["lint", str(lm)], tool_env)
            out["lint_path"] = str(lm)
            out["lint_lines"] = (3, 3 + case["text"].count("\n"))
        return out

    return dict(zip([c["id"] for c in gc.POSITIVES], map(work, gc.POSITIVES)))


@pytest.fixture(scope="session")
def lint_batch(tmp_path_factory, tool_env):
    """`lint` once over a memory file holding every non-note positive, one bullet each."""
    d = tmp_path_factory.mktemp("gate-lint")
    lm = d / "lint-memory.md"
    text, lines, line_no = MEMORY_HEADER, {}, 3
    for c in gc.POSITIVES:
        if c["lint"] and not c["note"]:
            text += "- " + c["text"] + "\n"
            n = c["text"].count("\n")
            lines[c["id"]] = (line_no, line_no + n)
            line_no += n + 1
    lm.write_text(text, encoding="utf-8", newline="\n")
    return {"lint": _run(["lint", str(lm)], tool_env), "lint_path": str(lm), "lint_lines": lines}


@pytest.fixture(scope="session")
def positive_batch(tmp_path_factory, tool_env):
    """--explain and the plain patch over all positives at once."""
    d = tmp_path_factory.mktemp("gate-positive-batch")
    t, mem = d / "transcript.jsonl", d / "memory.md"
    _write_transcript(t, [c["text"] for c in gc.POSITIVES])
    _write_memory(mem)
    explain, plain = (_run(a, tool_env) for a in [
        ["build", str(t), "--memory", str(mem), "--explain"],
        ["build", str(t), "--memory", str(mem), "--max-add", "1000"],
    ])
    return {"explain": explain, "plain": plain}


@pytest.fixture(scope="session")
def control_run(tmp_path_factory, tool_env):
    d = tmp_path_factory.mktemp("gate-controls")
    t, mem = d / "transcript.jsonl", d / "memory.md"
    _write_transcript(t, [c["clean"] for c in gc.POSITIVES if c["id"] not in gc.CONTROL_SKIP])
    _write_memory(mem)
    return _run(["build", str(t), "--memory", str(mem), "--json", "--stats", "--max-add", "1000"], tool_env)


@pytest.fixture(scope="session")
def negative_runs(tmp_path_factory, tool_env):
    d = tmp_path_factory.mktemp("gate-negatives")
    t, mem, lm = d / "transcript.jsonl", d / "memory.md", d / "lint-memory.md"
    _write_transcript(t, [text for _, text in gc.NEGATIVES])
    _write_memory(mem)
    lm.write_text(MEMORY_HEADER + "".join(f"- {text}\n" for _, text in gc.NEGATIVES),
                  encoding="utf-8", newline="\n")
    build, plain, explain, lint = (_run(a, tool_env) for a in [
        ["build", str(t), "--memory", str(mem), "--json", "--stats", "--max-add", "100"],
        ["build", str(t), "--memory", str(mem), "--max-add", "100"],
        ["build", str(t), "--memory", str(mem), "--explain"],
        ["lint", str(lm)],
    ])
    return {"build": build, "plain": plain, "explain": explain, "lint": lint, "lint_path": str(lm)}


# --------------------------------------------------------------------------- the table itself

def test_table_size_and_shape():
    by_cls = {}
    for c in gc.POSITIVES:
        by_cls[c["cls"]] = by_cls.get(c["cls"], 0) + 1
    assert len(gc.POSITIVES) >= 60 and len(gc.NEGATIVES) >= 60, by_cls
    ids = [c["id"] for c in gc.POSITIVES] + [cid for cid, _ in gc.NEGATIVES]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    sentences = [c["clean"] for c in gc.POSITIVES if c["id"] not in gc.CONTROL_SKIP] + [t for _, t in gc.NEGATIVES]
    dupes = {s for s in sentences if sentences.count(s) > 1}
    assert not dupes, f"control/negative sentences must be distinct: {dupes}"
    kinds = {c["kind"] for c in gc.POSITIVES if c["cls"] == "secret"}
    assert kinds == set(gc.SECRET_KINDS), f"every contract secret kind needs a case: {set(gc.SECRET_KINDS) - kinds}"
    for c in gc.POSITIVES:
        for v in c["values"][:1] + c["bodies"]:
            assert v and v in c["text"], c["id"]


# --------------------------------------------------------------------------- positives

@pytest.mark.parametrize("case", POS_PARAMS)
def test_positive_build_json(case, positive_runs):
    """`build --json --stats`: nothing of the case is proposed, nothing of it is printed,
    and the gate that stopped it is counted."""
    res = positive_runs[case["id"]]["json"]
    assert res.returncode == 0, res.brief()
    obj, bullets, stats = parse_build_json(res)
    assert_no_leak(case, "stdout", res.stdout)
    assert_no_leak(case, "stderr", res.stderr)
    for s in all_strings(obj):
        assert_no_leak(case, "a JSON string", s)
    assert_bullets_safe(case, bullets, "--json")

    cls = case["cls"]
    if cls in ("secret", "pii", "injection"):
        counter = gc.COUNTER[cls]
        assert stats.get(counter, 0) > 0, f"{case['id']}: expected {counter} > 0, stats={stats}, bullets={ascii(bullets)}"
        if cls == "secret":
            k = f"secret_{case['kind']}"
            assert stats.get(k, 0) > 0, f"{case['id']}: expected {k} > 0, stats={stats}"
    else:
        cleaned = any(_norm(b) == _norm(case["clean"]) for b in bullets)
        if cls == "invisible":
            counted = stats.get("dropped_invisible", 0) > 0
            what = "dropped_invisible > 0"
        else:  # structure: no counter is named in the contract; any gate-like drop counter
            counted = any(v > 0 for k, v in stats.items()
                          if k in GATE_COUNTERS or (k.startswith("dropped_") and k not in NON_GATE_DROPS))
            what = "a gate drop counter > 0"
        assert counted or cleaned, (f"{case['id']}: expected {what} or the cleaned bullet "
                                    f"{case['clean']!r}; stats={stats}, bullets={ascii(bullets)}")


@pytest.mark.parametrize("case", POS_PARAMS)
def test_positive_explain_does_not_echo(case, positive_batch):
    res = positive_batch["explain"]
    assert res.returncode == 0, res.brief()
    assert res.stdout.strip(), f"--explain printed nothing\n{res.brief()}"
    assert_no_leak(case, "--explain stdout", res.stdout)
    assert_no_leak(case, "--explain stderr", res.stderr)


@pytest.mark.parametrize("case", POS_PARAMS)
def test_positive_plain_patch(case, positive_batch):
    res = positive_batch["plain"]
    assert res.returncode == 0, res.brief()
    assert_no_leak(case, "patch stdout", res.stdout)
    assert_no_leak(case, "patch stderr", res.stderr)
    assert_bullets_safe(case, patch_bullets(res.stdout), "patch")


@pytest.mark.parametrize("case", LINT_PARAMS)
def test_positive_lint(case, positive_runs, lint_batch):
    if case["note"]:
        run = positive_runs[case["id"]]
        res, path = run["lint"], run["lint_path"]
        lo, hi = run["lint_lines"]
    else:
        res, path = lint_batch["lint"], lint_batch["lint_path"]
        lo, hi = lint_batch["lint_lines"][case["id"]]
    assert_no_leak(case, "lint stdout", res.stdout)
    assert_no_leak(case, "lint stderr", res.stderr)
    findings = _lint_findings(res, path)
    here = [k for line, k in findings if lo <= line <= hi]
    if case["note"]:
        assert "note" in here, f"{case['id']}: expected `{path}:{lo}: note:`\n{res.brief()}"
        assert all(k == "note" for _, k in findings), f"{case['id']}: only a note expected\n{res.brief()}"
        assert res.returncode == 0, f"{case['id']}: a lone note must exit 0\n{res.brief()}"
    else:
        assert any(k != "note" for k in here), (f"{case['id']}: expected `{path}:{lo}: <kind>:`; "
                                                f"findings near it: {[f for f in findings if lo - 2 <= f[0] <= hi + 2]}")
        assert res.returncode == 1, res.brief()  # any non-note finding fails lint


@pytest.mark.parametrize("case", CONTROL_PARAMS)
def test_positive_control_is_proposed(case, control_run):
    """The same statement without the dangerous part IS proposed: the positive carries a
    signal, so only the gate can be what keeps it out."""
    assert control_run.returncode == 0, control_run.brief()
    _, bullets, stats = parse_build_json(control_run)
    assert case["clean"] in bullets, (f"control for {case['id']} not proposed: {case['clean']!r}; "
                                      f"close: {difflib.get_close_matches(case['clean'], bullets, 3, 0.6)}; stats={stats}")


# --------------------------------------------------------------------------- negatives

def _explain_lines(res, text):
    key = text[:30]
    return [ascii(line) for line in res.stdout.splitlines() if key in line][:5]


@pytest.mark.parametrize("cid,text", NEG_PARAMS)
def test_negative_is_proposed_unchanged(cid, text, negative_runs):
    res = negative_runs["build"]
    assert res.returncode == 0, res.brief()
    _, bullets, stats = parse_build_json(res)
    assert text in bullets, (f"{cid}: expected bullet {text!r}\nclose: {difflib.get_close_matches(text, bullets, 3, 0.6)}\n"
                             f"explain: {_explain_lines(negative_runs['explain'], text)}\nstats={stats}")
    plain = negative_runs["plain"]
    assert plain.returncode == 0, plain.brief()
    assert f"\n+- {text}\n" in "\n" + plain.stdout, f"{cid}: the patch lacks the exact line '+- {text}'"


@pytest.mark.parametrize("cid,text", NEG_PARAMS)
def test_negative_lint_clean(cid, text, negative_runs):
    res, path = negative_runs["lint"], negative_runs["lint_path"]
    line_no = 3 + [c for c, _ in gc.NEGATIVES].index(cid)
    hits = [(line, k) for line, k in _lint_findings(res, path) if line == line_no]
    assert not hits, f"{cid}: lint flagged line {line_no}: {hits}\n{res.brief()}"


def test_negative_lint_exit_code(negative_runs):
    assert negative_runs["lint"].returncode == 0, negative_runs["lint"].brief()


# --------------------------------------------------------------------------- --allow-pii

def _build_one(tmp_path, env, text, *extra):
    t, mem = tmp_path / "transcript.jsonl", tmp_path / "memory.md"
    _write_transcript(t, [text])
    _write_memory(mem)
    res = _run(["build", str(t), "--memory", str(mem), "--json", "--stats", "--max-add", "100", *extra], env)
    assert res.returncode == 0, res.brief()
    return parse_build_json(res)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in gc.ALLOW_PII])
def test_allow_pii_lets_personal_data_through(case, tmp_path, tool_env):
    _, bullets, stats = _build_one(tmp_path, tool_env, case["text"], "--allow-pii")
    assert case["text"] in bullets, f"{case['id']}: --allow-pii should propose it; stats={stats}, bullets={bullets}"
    assert stats.get("dropped_pii", 0) == 0, stats


def test_allow_pii_still_drops_secrets(tmp_path, tool_env):
    case = gc.ALLOW_PII_SECRET
    _, bullets, stats = _build_one(tmp_path, tool_env, case["text"], "--allow-pii")
    assert_bullets_safe(case, bullets, "--allow-pii")
    assert stats.get("dropped_secret", 0) > 0, stats
