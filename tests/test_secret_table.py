"""Issue 12: the secret table. Every kind of tests/secret_kinds.py, in each of its ten shapes,
is checked against the whole stdout and stderr of four modes: the patch (`build`),
`build --json --stats`, `build --explain` and `lint` (the shape's sentence as a bullet line).
Nothing may print the value, nor any 12-character window of its random part, as printed or
once the invisible characters a shape inserted are taken out (raw, or in the escaped form
one_line() prints); lint must report the kind (`secret`, or `pii` for personal data).

The look-alikes go through `build --json --stats` one by one: no secret rule may withhold
them (no secret_* counter, dropped_secret 0; the score may still drop them: the stage is
asserted, not the patch), and lint reports no secret on their lines.

Then the channels the issue names: a Claude Code record whose timestamp holds a token, a
memory file and a seen file whose last lines (the patch's context) hold credentials, a
transcript whose file name holds a token, --explain on SSH2 and PuTTY key blocks, and
--explain on a sentence with a random-looking token and no keyword.

Kinds run a few to a transcript (each row's value is its own, so a leak is still told row by
row): all ten shapes as separate messages, each mode once per transcript, kept for the session.
`main` runs in this process (tests/command.py) in a temporary directory holding an empty
memory file. MEMORY_DIFF_UNDER_TEST=/path/to/memory_diff.py checks another copy of the tool
against the same table; MEMORY_DIFF_TABLE_SEED changes the generated values.
"""

import base64
import hashlib
import hmac
import json
import os
import random
import re
import struct
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TOOL = Path(os.environ.get("MEMORY_DIFF_UNDER_TEST") or REPO / "memory_diff.py").resolve()
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import secret_kinds as sk  # noqa: E402
from command import launcher, main_process  # noqa: E402
from test_gates import MEMORY_HEADER, Result, _lint_findings, all_strings, parse_build_json  # noqa: E402

pytestmark = pytest.mark.skipif(not TOOL.is_file(), reason="memory_diff.py is not written yet")

WINDOW = 12
MODES = ("patch", "json", "explain", "lint")
KINDS_PER_RUN = 3  # kinds that share a transcript: fewer processes, the same row-by-row verdicts
GROUPS = [sk.KINDS[i:i + KINDS_PER_RUN] for i in range(0, len(sk.KINDS), KINDS_PER_RUN)]
GROUP_OF = {kind.id: n for n, kinds in enumerate(GROUPS) for kind in kinds}
# What a shape inserts, and how one_line() prints it.
INSERTED = {sk.ZWSP: ("\\u200b",), sk.SHY: ("\\xad", "\\u00ad")}

# --------------------------------------------------------------------------- running the tool


def _run(args, cwd, env):
    """`main` in this process; another copy of the tool (MEMORY_DIFF_UNDER_TEST) in its own."""
    if TOOL == REPO / "memory_diff.py":
        return Result(args, main_process(args, cwd, env))
    return Result(args, subprocess.run([*launcher(TOOL), *args], cwd=cwd, env=env, capture_output=True, timeout=300))


def _write_transcript(path, messages):
    """messages: (role, text) pairs, one native record each."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for role, text in messages:
            f.write(json.dumps({"role": role, "text": text}, ensure_ascii=False) + "\n")


def _write_lint_file(path, texts):
    """A memory file with one bullet per text; the (first, last) line of each."""
    body, lines, line = MEMORY_HEADER, [], MEMORY_HEADER.count("\n") + 1
    for text in texts:
        body += "- " + text + "\n"
        lines.append((line, line + text.count("\n")))
        line += text.count("\n") + 1
    path.write_text(body, encoding="utf-8", newline="\n")
    return lines


@pytest.fixture(scope="session")
def table_env(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_DATA_HOME=str(home / ".local" / "share"))
    return env


def _build_args(mode, transcript, memory="memory.md"):
    extra = {"patch": [], "json": ["--json", "--stats"], "explain": ["--explain"]}[mode]
    return ["build", transcript, "--memory", memory, "--max-add", "1000", *extra]


# --------------------------------------------------------------------------- finding a leak


def _variants(text):
    """The output as printed, and as it reads with what a shape inserted taken out."""
    clean = text
    for char, escapes in INSERTED.items():
        clean = clean.replace(char, "")
        for escape in escapes:
            clean = clean.replace(escape, "")
    return [text] if clean == text else [text, clean]


class Output:
    """Everything one run printed, searchable for values and 12-character windows."""

    def __init__(self, res, extra=()):
        self.res = res
        self.texts = [v for t in [res.stdout + "\n" + res.stderr, *extra] for v in _variants(t)]
        self.grams = {t[i:i + WINDOW] for t in self.texts for i in range(len(t) - WINDOW + 1)}

    def find(self, needle):
        """An excerpt around the first place needle is printed, or None."""
        for text in self.texts:
            pos = text.find(needle)
            if pos >= 0:
                return ascii(text[max(0, pos - 60):pos + len(needle) + 60])
        return None

    def leak(self, value, needles):
        """None, or what of a value was printed and where. needles: windows of its random
        part (see _needles)."""
        for form in {value, value.replace("\n", "\\n")}:
            if self.find(form):
                return f"the value {ascii(form[:48])} is printed: ...{self.find(form)}..."
        for label, needle in needles:
            if needle in self.grams if len(needle) == WINDOW else self.find(needle):
                return f"{label} {ascii(needle)} is printed: ...{self.find(needle)}..."
        return None


def _windows(randoms):
    """(label, window) for every 12-character window of each random part; a part shorter
    than a window is one needle whole."""
    out = []
    for i, piece in enumerate(randoms):
        if len(piece) < WINDOW:
            out.append((f"random part #{i}", piece))
        else:
            out += [(f"{WINDOW} characters of random part #{i} (from index {j})", piece[j:j + WINDOW])
                    for j in range(len(piece) - WINDOW + 1)]
    return out


# A window that occurs in more than one row is structure (a DER prefix, a JWT header, the
# fixed bytes of a key format), not the row's own randomness: looked for, it would blame a
# leak on every row that shares it. Each row is checked for the windows only it has.
_SHARED = Counter(w for r in sk.ROWS for w in {w for _, w in _windows(r.randoms)})
NEEDLES = {r.id: [(label, w) for label, w in _windows(r.randoms) if _SHARED[w] == 1] for r in sk.ROWS}


def _json_strings(res):
    try:
        return ["\n".join(all_strings(json.loads(res.stdout)))] if res.stdout.strip() else []
    except ValueError:
        return []


def _output(mode, res):
    return Output(res, _json_strings(res) if mode == "json" else ())


def _fail(message):
    """Fail with the message alone: a table row says what leaked and where, and rendering
    two thousand tracebacks costs more than running the table."""
    pytest.fail(message, pytrace=False)


def _findings(res, path, lo, hi):
    return [kind for line, kind in _lint_findings(res, path) if lo <= line <= hi]


# --------------------------------------------------------------------------- the table


@pytest.fixture(scope="session")
def table_runs(tmp_path_factory, table_env):
    base = tmp_path_factory.mktemp("secret-table")
    jobs, groups = [], []
    for n, kinds in enumerate(GROUPS):
        d = base / f"group-{n:02d}"
        d.mkdir()
        rows = [r for r in sk.ROWS if r.kind in kinds]
        _write_transcript(d / "transcript.jsonl", [(r.role, r.text) for r in rows])
        (d / "memory.md").write_text("", encoding="utf-8")
        lines = _write_lint_file(d / "lint.md", [r.text for r in rows])
        groups.append({"lint_lines": {r.id: span for r, span in zip(rows, lines)}})
        for mode in MODES:
            args = ["lint", "lint.md"] if mode == "lint" else _build_args(mode, "transcript.jsonl")
            jobs.append((n, mode, args, d))
    for (n, mode, _, _), res in zip(jobs, (_run(j[2], j[3], table_env) for j in jobs)):
        groups[n][mode] = _output(mode, res)
    return groups


ROW_PARAMS = [pytest.param(row, mode, id=f"{row.id}-{mode}") for row in sk.ROWS for mode in MODES]


@pytest.mark.parametrize("row,mode", ROW_PARAMS)
def test_secret_table(row, mode, table_runs):
    run = table_runs[GROUP_OF[row.kind.id]]
    out = run[mode]
    where = out.leak(row.value, NEEDLES[row.id])
    if where:
        _fail(f"{row.id}: `{mode}`: {where}")
    if mode != "lint":
        if out.res.returncode != 0:
            _fail(f"{row.id}: `{mode}` exits {out.res.returncode}\n{out.res.brief()}")
        return
    lo, hi = run["lint_lines"][row.id]
    want = "secret" if row.kind.family == "secret" else "pii"
    found = _findings(out.res, "lint.md", lo, hi)
    if want not in found:
        _fail(f"{row.id}: lint reports no `{want}` on lint.md:{lo}" + (f"-{hi}" if hi > lo else "")
              + f" (findings there: {found}); the line is {ascii(row.text[:160])}")
    if out.res.returncode != 1:
        _fail(f"{row.id}: lint exits {out.res.returncode}, not 1\n{out.res.brief()}")


@pytest.fixture(scope="session")
def control_run(tmp_path_factory, table_env):
    d = tmp_path_factory.mktemp("secret-table-controls")
    controls = sorted({(r.role, r.control) for r in sk.ROWS})
    _write_transcript(d / "transcript.jsonl", controls)
    (d / "memory.md").write_text("", encoding="utf-8")
    res = _run(_build_args("json", "transcript.jsonl"), d, table_env)
    assert res.returncode == 0, res.brief()
    return set(parse_build_json(res)[1])


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id) for r in sk.ROWS])
def test_control_is_proposed(row, control_run):
    """The row's sentence with NEUTRAL for the value is proposed: only a gate can keep the
    row itself out, so the table can fail."""
    if row.control not in control_run:
        _fail(f"{row.id}: the control is not proposed: {row.control!r}")


# --------------------------------------------------------------------------- the table's own shape


def _clean(text):
    return text.replace(sk.ZWSP, "").replace(sk.SHY, "")


def test_table_size_and_shape():
    families = [k.family for k in sk.KINDS]
    assert len(sk.KINDS) >= 60 and families.count("secret") >= 57 and families.count("pii") == 3, families
    assert len(sk.SHAPES) == 10 and len(sk.ROWS) == len(sk.KINDS) * 10
    ids = [r.id for r in sk.ROWS] + [la.id for la in sk.LOOKALIKES]
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert len(sk.LOOKALIKES) >= 45
    values = [r.value for r in sk.ROWS]
    assert len(values) == len(set(values)), "every row has a value of its own"
    for r in sk.ROWS:
        assert r.value in _clean(r.text) and r.randoms[0] in _clean(r.text), r.id
        assert len(NEEDLES[r.id]) >= min(8, len(_windows(r.randoms))), f"{r.id}: too little of it is its own"
        assert r.value not in r.control, r.id
    for shape in ("zero-width", "soft-hyphen"):
        inserted = sk.ZWSP if shape == "zero-width" else sk.SHY
        assert all(inserted in r.text for r in sk.ROWS if r.shape == shape), shape
    assert all(r.text.endswith(r.value) for r in sk.ROWS if r.shape == "end")


def test_table_is_seeded():
    again = [sk.build_row(k, s) for k in sk.KINDS for s in sk.SHAPES]
    assert again == sk.ROWS


def test_no_literal_credential_in_the_table_files():
    """The values exist only at run time: none of them is in the files that make them."""
    sources = "".join((HERE / name).read_text(encoding="utf-8") for name in ("secret_kinds.py", Path(__file__).name))
    for r in sk.ROWS:
        for piece in r.randoms:
            assert piece[:WINDOW] not in sources, r.id


# --------------------------------------------------------------------------- checksums


def _base62_decode(text):
    n = 0
    for c in text:
        n = n * 62 + sk.BASE62.index(c)
    return n


def _b64any(text):
    return base64.urlsafe_b64decode(text.replace("+", "-").replace("/", "_") + "=" * (-len(text) % 4))


def _check(kind_id, value):
    if kind_id in ("github-ghp", "github-ghs", "npm"):
        assert _base62_decode(value[-6:]) == sk.crc32(value[4:-6])
    elif kind_id == "atlassian":
        assert len(value) == 192 and int(value[-8:], 16) == sk.crc32(value[:-8])
    elif kind_id == "grafana":
        assert struct.unpack("<I", bytes.fromhex(value[38:]))[0] == sk.crc32(value[:37])
    elif kind_id == "age":
        hrp, data = value.lower().rsplit("1", 1)
        assert hrp == "age-secret-key-" and len(data) == 58
        assert sk.bech32_polymod(sk.bech32_hrp(hrp) + [sk.BECH32.index(c) for c in data]) == 1
    elif kind_id == "pgp-private-block":
        lines = value.split("\n")
        body, check = "".join(lines[2:-2]), lines[-2]
        crc = int.from_bytes(base64.b64decode(check[1:]), "big")
        assert check.startswith("=") and sk.crc24(base64.b64decode(body)) == crc
    elif kind_id == "putty-ppk":
        fields = dict(line.split(": ", 1) for line in value.split("\n") if ": " in line)
        lines = value.split("\n")
        pub_at = lines.index(f"Public-Lines: {fields['Public-Lines']}") + 1
        priv_at = lines.index(f"Private-Lines: {fields['Private-Lines']}") + 1
        public = base64.b64decode("".join(lines[pub_at:pub_at + int(fields["Public-Lines"])]))
        private = base64.b64decode("".join(lines[priv_at:priv_at + int(fields["Private-Lines"])]))
        names = [fields[k].encode() for k in ("PuTTY-User-Key-File-3", "Encryption", "Comment")]
        data = b"".join(sk.ssh_string(x) for x in (*names, public, private))
        assert hmac.new(b"", data, hashlib.sha256).hexdigest() == fields["Private-MAC"]
    elif kind_id in ("jwt", "jwt-not-json"):
        header, payload, sig = value.split(".")
        assert json.loads(_b64any(header)) == {"alg": "HS256", "typ": "JWT"} and len(_b64any(sig)) == 32
        if kind_id == "jwt":
            assert isinstance(json.loads(_b64any(payload)), dict)
        else:
            with pytest.raises(ValueError):
                json.loads(_b64any(payload))
    elif kind_id == "pypi":
        assert _b64any(value[len("pypi-"):]).startswith(b"\x02\x01\x08pypi.org\x02\x24")
    elif kind_id == "discord-bot":
        assert _b64any(value.split(".")[0]).decode().isdigit()
    elif kind_id == "azure-storage-key":
        key = re.search(r"AccountKey=([^;]+);", value).group(1)
        assert len(key) == 88 and len(base64.b64decode(key)) == 64
    elif kind_id == "heroku-api-key":
        assert uuid.UUID(value).version == 4
    elif kind_id == "sentry":
        claims = json.loads(_b64any(value[len("sntrys_"):].rsplit("_", 1)[0]))
        assert set(claims) == {"iat", "url", "region_url", "org"}


CHECKED = ("github-ghp", "github-ghs", "npm", "atlassian", "grafana", "age", "pgp-private-block", "putty-ppk",
           "jwt", "jwt-not-json", "pypi", "discord-bot", "azure-storage-key", "heroku-api-key", "sentry")


def test_checksum_helpers_match_published_vectors():
    assert sk.crc24(b"123456789") == 0x21CF02  # CRC-24/OPENPGP check value
    for valid in ("a12uel5l", "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw"):  # BIP-173
        hrp, data = valid.rsplit("1", 1)
        assert sk.bech32_polymod(sk.bech32_hrp(hrp) + [sk.BECH32.index(c) for c in data]) == 1
    assert sk.base62(61, 1) == "z" and sk.base62(62, 2) == "10"  # digits, then A-Z, then a-z


@pytest.mark.parametrize("kind_id", CHECKED)
def test_generated_values_follow_the_format(kind_id):
    """Where a format has a checksum (or a structure a scanner can verify), every generated
    value carries a valid one."""
    for r in sk.ROWS:
        if r.kind.id == kind_id and r.shape != "url":
            _check(kind_id, r.value)


# --------------------------------------------------------------------------- look-alikes


@pytest.fixture(scope="session")
def lookalike_runs(tmp_path_factory, table_env):
    base = tmp_path_factory.mktemp("secret-table-lookalikes")
    jobs = []
    for la in sk.LOOKALIKES:
        d = base / la.id
        d.mkdir()
        _write_transcript(d / "transcript.jsonl", [("user", la.text)])
        (d / "memory.md").write_text("", encoding="utf-8")
        jobs.append((la.id, _build_args("json", "transcript.jsonl"), d))
    plain = [la for la in sk.LOOKALIKES if not la.example]
    lines = _write_lint_file(base / "lint.md", [la.text for la in plain])
    jobs.append(("lint", ["lint", "lint.md"], base))
    for la in sk.LOOKALIKES:
        if la.example:  # alone, to see that a lone note exits 0
            _write_lint_file(base / f"lint-{la.id}.md", [la.text])
            jobs.append((f"lint-{la.id}", ["lint", f"lint-{la.id}.md"], base))
    out = dict(zip([j[0] for j in jobs], (_run(j[1], j[2], table_env) for j in jobs)))
    out["lint_lines"] = {la.id: span for la, span in zip(plain, lines)}
    return out


LOOKALIKE_PARAMS = [pytest.param(la, id=la.id) for la in sk.LOOKALIKES if not la.example]


@pytest.mark.parametrize("la", LOOKALIKE_PARAMS)
def test_lookalike_not_withheld(la, lookalike_runs):
    res = lookalike_runs[la.id]
    if res.returncode != 0:
        _fail(f"{la.id}: exits {res.returncode}\n{res.brief()}")
    stats = parse_build_json(res)[2]
    secret = {k: v for k, v in stats.items() if k.startswith("secret_") and v}
    if secret or stats.get("dropped_secret", 0):
        _fail(f"{la.id}: withheld by a secret rule: {secret}, dropped_secret={stats.get('dropped_secret')}; "
              f"{ascii(la.text)}")
    if "pii" in la.gates and stats.get("dropped_pii", 0):
        _fail(f"{la.id}: withheld as personal data: {ascii(la.text)}")


@pytest.mark.parametrize("la", LOOKALIKE_PARAMS)
def test_lookalike_lint_clean(la, lookalike_runs):
    res = lookalike_runs["lint"]
    lo, hi = lookalike_runs["lint_lines"][la.id]
    found = [k for k in _findings(res, "lint.md", lo, hi) if k in ("secret", "note") + tuple(la.gates)]
    if found:
        _fail(f"{la.id}: lint reports {found} on lint.md:{lo}: {ascii(la.text)}")


@pytest.mark.parametrize("la", [pytest.param(la, id=la.id) for la in sk.LOOKALIKES if la.example])
def test_lookalike_doc_example_is_a_note(la, lookalike_runs):
    """AWS's documentation key may be withheld from bullets, but lint calls it a note and
    exits 0 (the behaviour tests/gate_cases.py fixes)."""
    res = lookalike_runs[f"lint-{la.id}"]
    findings = _lint_findings(res, f"lint-{la.id}.md")
    assert findings and all(k == "note" for _, k in findings), res.brief()
    assert res.returncode == 0, res.brief()


# --------------------------------------------------------------------------- channels

GOOD_SENTENCE = ("Always run `make check` before tagging a release because the changelog job rejects "
                 "unsigned tags on the release branch.")


def _token(kind_id, shape="user-en"):
    """A fresh value of a kind, seeded apart from the table's rows."""
    kind = sk.KIND_BY_ID[kind_id]
    return kind.make(random.Random(f"{sk.SEED}:channel:{kind_id}:{shape}"), shape)


def _context_file(path, tokens):
    """A memory-like file whose last three lines each hold a credential."""
    lines = [f"- Always deploy with {tokens[0].value} because the bot account has no 2FA.",
             f"- The CI user is {tokens[1].value} and it is read-only.",
             f"- Slack alerts go through {tokens[2].value} for the ops channel."]
    path.write_text("# Project memory\n\n- Always run `make lint` before pushing because CI rejects it.\n"
                    + "\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    return [4, 5, 6]


def _claude_record(text, timestamp, rng):
    return {"parentUuid": None, "isSidechain": False, "type": "user",
            "message": {"role": "user", "content": text}, "timestamp": timestamp,
            "uuid": str(uuid.UUID(bytes=sk.rbytes(rng, 16), version=4)),
            "sessionId": str(uuid.UUID(bytes=sk.rbytes(rng, 16), version=4))}


@pytest.fixture(scope="session")
def channel_runs(tmp_path_factory, table_env):
    base = tmp_path_factory.mktemp("secret-table-channels")
    rng = random.Random(f"{sk.SEED}:channels")
    cases, jobs = {}, []

    def add(case, d, args, tokens, **extra):
        cases[case] = dict(tokens=tokens, **extra)
        jobs.append((case, args, d))

    # A token in a record's timestamp: Claude Code JSONL and the native format.
    d = base / "timestamp-claude"
    d.mkdir()
    tokens = [_token("github-ghp"), _token("jwt")]
    with open(d / "session.jsonl", "w", encoding="utf-8") as f:
        for i, tok in enumerate(tokens):
            text = GOOD_SENTENCE if i == 0 else GOOD_SENTENCE.replace("`make check`", "`make verify`")
            f.write(json.dumps(_claude_record(text, tok.value, rng)) + "\n")
    (d / "memory.md").write_text("", encoding="utf-8")
    for mode in ("patch", "json", "explain"):
        add(f"timestamp-claude-{mode}", d, _build_args(mode, "session.jsonl"), tokens)
    d = base / "timestamp-native"
    d.mkdir()
    tokens = [_token("aws-access-key-id"), _token("slack-bot")]
    with open(d / "session.jsonl", "w", encoding="utf-8") as f:
        for i, tok in enumerate(tokens):
            text = GOOD_SENTENCE if i == 0 else GOOD_SENTENCE.replace("`make check`", "`make verify`")
            f.write(json.dumps({"role": "user", "text": text, "timestamp": tok.value}) + "\n")
    (d / "memory.md").write_text("", encoding="utf-8")
    for mode in ("patch", "json", "explain"):
        add(f"timestamp-native-{mode}", d, _build_args(mode, "session.jsonl"), tokens)

    # Credentials on the last three lines of the memory file and of the seen file: the
    # patch's context lines.
    for target in ("memory", "seen"):
        d = base / f"context-{target}"
        d.mkdir()
        tokens = [_token("github-ghp", target), _token("aws-access-key-id", target), _token("slack-webhook", target)]
        _write_transcript(d / "transcript.jsonl", [("user", GOOD_SENTENCE)])
        if target == "memory":
            lines = _context_file(d / "memory.md", tokens)
            extra = []
        else:
            (d / "memory.md").write_text("# Project memory\n", encoding="utf-8")
            lines = _context_file(d / "seen.md", tokens)
            extra = ["--seen", "seen.md"]
        for mode in ("patch", "json", "explain"):
            add(f"context-{target}-{mode}", d, _build_args(mode, "transcript.jsonl") + extra, tokens,
                error_path=f"{target}.md", error_lines=lines)

    # A token in the transcript's file name: provenance, --json, --explain, and an error.
    d = base / "file-name"
    d.mkdir()
    tokens = [_token("github-ghp", "file"), _token("aws-access-key-id", "file")]
    name = f"session-{tokens[0].value}.jsonl"
    _write_transcript(d / name, [("user", GOOD_SENTENCE)])
    (d / "memory.md").write_text("", encoding="utf-8")
    for mode in ("patch", "json", "explain"):
        add(f"file-name-{mode}", d, _build_args(mode, name), tokens[:1])
    broken = f"{tokens[1].value}.json"
    (d / broken).write_text("{not json", encoding="utf-8")
    add("file-name-error", d, _build_args("patch", broken), tokens[1:], expect_error=True)

    # --explain on key blocks that are not PEM, and on a random token with no keyword.
    for kind_id in ("ssh2-encrypted", "putty-ppk"):
        d = base / f"explain-{kind_id}"
        d.mkdir()
        tok = _token(kind_id, "explain")
        text = ("Always install this key on the bastion because the CI runner connects through it.\n"
                + tok.value + "\nNever paste keys into chat because the logs are kept for a year.")
        _write_transcript(d / "transcript.jsonl", [("user", text)])
        (d / "memory.md").write_text("", encoding="utf-8")
        block = [line for line in tok.value.split("\n") if len(line.strip()) >= 8]
        add(f"explain-{kind_id}-block", d, _build_args("explain", "transcript.jsonl"), [tok], lines=block)
    for name, alphabet in (("base64", sk.B64), ("base64url", sk.B64URL), ("base62", sk.ALNUM)):
        d = base / f"explain-random-{name}"
        d.mkdir()
        value = sk.mixed(rng, 40, alphabet)
        tok = sk.Token(value, (value,))
        _write_transcript(d / "transcript.jsonl", [("user", f"The build cache for the nightly job lives under "
                                                            f"{value} on the shared runner.")])
        (d / "memory.md").write_text("", encoding="utf-8")
        add(f"explain-random-{name}", d, _build_args("explain", "transcript.jsonl"), [tok])

    for case, res in zip([j[0] for j in jobs], (_run(j[1], j[2], table_env) for j in jobs)):
        cases[case]["out"] = _output("json" if case.endswith("-json") else "other", res)
    return cases


def _assert_no_leak(case, run):
    for tok in run["tokens"]:
        where = run["out"].leak(tok.value, _windows(tok.randoms))
        if where:
            _fail(f"{case}: {where}")


def _assert_ok_or_refused(case, run):
    """Exit 0, or exit 2 with one error line naming the file's line and pointing at lint."""
    res = run["out"].res
    if res.returncode == 0:
        return
    errors = res.stderr.splitlines()
    path, lines = run["error_path"], run["error_lines"]
    rx = re.compile(rf"^memory-diff: error: (?:.*/)?{re.escape(path)}:(\d+): .*\blint\b")
    match = rx.match(errors[0]) if len(errors) == 1 else None
    assert res.returncode == 2 and match and int(match.group(1)) in lines and not res.stdout, (
        f"{case}: expected exit 0, or exit 2 with one line `memory-diff: error: {path}:LINE: ... lint ...` "
        f"naming line {lines}\n{res.brief()}")


CHANNEL_CASES = ([f"timestamp-{fmt}-{mode}" for fmt in ("claude", "native") for mode in ("patch", "json", "explain")]
                 + [f"context-{t}-{mode}" for t in ("memory", "seen") for mode in ("patch", "json", "explain")]
                 + [f"file-name-{mode}" for mode in ("patch", "json", "explain", "error")])


@pytest.mark.parametrize("case", CHANNEL_CASES)
def test_channel_does_not_print_the_token(case, channel_runs):
    run = channel_runs[case]
    res = run["out"].res
    _assert_no_leak(case, run)
    if case.startswith("context-"):
        _assert_ok_or_refused(case, run)
    elif run.get("expect_error"):
        errors = res.stderr.splitlines()
        assert res.returncode == 2 and len(errors) == 1 and errors[0].startswith("memory-diff: error: "), res.brief()
    else:
        assert res.returncode == 0, res.brief()
        if case.endswith("-patch"):  # the proposal is there: its provenance was printed
            assert "+- " + GOOD_SENTENCE in res.stdout, res.brief()


@pytest.mark.parametrize("case", ["explain-ssh2-encrypted-block", "explain-putty-ppk-block"])
def test_explain_prints_no_line_of_a_key_block(case, channel_runs):
    run = channel_runs[case]
    _assert_no_leak(case, run)
    for line in run["lines"]:
        where = run["out"].find(line.strip())
        if where:
            _fail(f"{case}: --explain prints the key block's line {ascii(line)}: ...{where}...")
    assert run["out"].res.returncode == 0, run["out"].res.brief()


@pytest.mark.parametrize("case", ["explain-random-base64", "explain-random-base64url", "explain-random-base62"])
def test_explain_withholds_a_random_token_without_keyword(case, channel_runs):
    run = channel_runs[case]
    _assert_no_leak(case, run)
    assert run["out"].res.returncode == 0, run["out"].res.brief()
