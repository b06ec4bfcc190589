"""Issue 26: the secret gate judged by properties, over values nobody listed.

Generated token bodies (hex, base62, base64, base64url, one-case a-z0-9 and base32,
UUID-shaped; with or without an issuer-like prefix made up here, never a real issuer's) are
put into generated sentence shapes (plain, code span, link, URL query, quotes, `NAME =
value`, JSON, table row, a line wrap inside the message, invisible and format characters,
percent-encoding, full-width forms, Chinese with full-width punctuation), said by the user
or the assistant, in a frame that is proposed when it holds a harmless phrase instead
(test_frame_control_is_proposed).

1. No 12-character window of the body appears in any output of any mode (the patch and its
   `--stats` stderr, `--json --stats`, `--explain`, `lint` of the sentence as a bullet),
   under any view of that output: as printed, invisible characters (and their printed
   escapes) and line breaks removed, NFKC, JSON strings decoded, percent-decoded, and any
   base64 run decoded.
2. A look-alike in its named context passes the gate (a commit SHA named as a commit, a
   UUID or ULID named as an id, a digest named as a checksum or fingerprint, a public key),
   judged by `--explain`'s verdict, not by the score.
3. A harmless token (words, paths, versions, identifiers, numbers) passes the gate.

The tool runs in-process (main(argv), standard streams captured) for speed, and a few cases
through the CLI. In CI the examples are few and derandomized; MEMORY_DIFF_EXAMPLES raises
the count by hand (each property then runs that many).
"""
from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import html
import io
import json
import os
import random
import re
import string
import time
import subprocess
import sys
import tempfile
import unicodedata
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, assume, example, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import memory_diff as md  # noqa: E402
from command import MEMORY_DIFF  # noqa: E402

EXAMPLES = int(os.environ.get("MEMORY_DIFF_EXAMPLES", "0")) or None
WINDOW = 12
# No example database and no explain phase: a run writes nothing into the repository.
SETTINGS = settings(max_examples=EXAMPLES or 60, derandomize=not EXAMPLES, deadline=None, database=None,
                    phases=(Phase.explicit, Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
MEMORY = "# Agents\n\n- Use make for builds.\n"

# -- token bodies --------------------------------------------------------------------------

ALPHABETS = {
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "base62": string.ascii_letters + string.digits,
    "base64": string.ascii_letters + string.digits + "+/",
    "base64url": string.ascii_letters + string.digits + "-_",
    "lower36": string.ascii_lowercase + string.digits,  # one case: no capitals to split at
    "letters": string.ascii_letters,  # no digit: judged by its pieces and its letters' pairs
    "base32": string.ascii_uppercase + "234567",  # TOTP seeds and the like
    "signed": string.ascii_letters + string.digits + "!#$%*^~()<>;&",  # a generator's password
}


def make_body(seed: int, alphabet: str, length: int) -> str:
    """A value as a generator of credentials writes one: random over its alphabet, holding
    every class the alphabet has (a token with no digit reads as a word)."""
    rng = random.Random(seed)
    if alphabet == "uuid":
        return "-".join("".join(rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12))
    if alphabet == "jwt":  # base64url of a JSON header and payload, a random signature
        claims = {"sub": make_body(seed, "base62", 12), "role": rng.choice(["service_role", "admin", "anon"]),
                  "iat": rng.randint(1_600_000_000, 1_800_000_000)}
        parts = [json.dumps({"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}).encode(),
                 json.dumps(claims).encode(), rng.randbytes(length)]
        return ".".join(base64.urlsafe_b64encode(part).decode().rstrip("=") for part in parts)
    chars = ALPHABETS[alphabet]
    need = [cls for cls in (str.isupper, str.islower, str.isdigit) if any(cls(c) for c in chars)]
    while True:
        body = "".join(rng.choice(chars) for _ in range(length))
        # An edge of `-`, `_` or `/` is a separator, not part of the token.
        if all(any(cls(c) for c in body) for cls in need) and body[0].isalnum() and body[-1].isalnum():
            return body


@st.composite
def tokens(draw: st.DrawFn) -> tuple[str, str]:
    """(token as written, its random body)."""
    alphabet = draw(st.sampled_from(["hex", "HEX", "base62", "base64", "base64url", "lower36", "base32", "uuid",
                                     "signed", "jwt", "letters"]))
    # One-case bodies and letters alone from 28 characters: shorter, a random one and a name run
    # together (`mistral7binstructv02`, `TxnMgrCkptWrtr`) are too alike; README's Security
    # section gives that residual.
    low = 32 if alphabet in ("hex", "HEX") else 28 if alphabet in ("lower36", "base32", "letters") else 20
    body = make_body(draw(st.integers(0, 2**32)), alphabet, draw(st.integers(low, 64)))
    prefix = ""
    if alphabet != "jwt" and draw(st.booleans()):  # (a JWT opens with its header)
        # Made up here: two to five letters and a separator, sometimes a second part.
        prefix = draw(st.text("bcdfghjklmnpqrstvwxz", min_size=2, max_size=5)) + draw(st.sampled_from("_-"))
        if draw(st.booleans()):
            prefix += draw(st.sampled_from(["pt_", "v2_", "sk_", "live-"]))
    suffix = draw(st.sampled_from(["", "", "", "-us21", "-eu3"]))
    # A made-up prefix that is a public id's by design (Stripe's `pm_`, AWS's `sg-`) makes the
    # token that id, one of README's harmless forms (found at 1,000 examples: `pm_<base62>`).
    assume(not md.PUBLIC_VALUE.match(prefix + body + suffix))
    return prefix + body + suffix, body


# -- sentence shapes -----------------------------------------------------------------------

NEUTRAL = "the vault entry"
NEUTRAL_ZH = "保险库里的条目"
# Each is proposed with NEUTRAL in {s} (test_frame_control_is_proposed).
FRAMES = {
    "en": "Never rotate {s} by hand in `deploy.sh` because the nightly release job fails closed when it changes.",
    "en2": "We decided to keep {s} in `staging.toml` because the vault sidecar cannot reach the build network.",
    "zh": "必须在 `deploy.sh` 里使用{s}，因为旧的凭据上周已被吊销，夜间发布任务启动时会读取它。",
}
LEADS = ["", "the key ", "the token ", "the build agent secret ", "api key: ", "credential ", "the value ",
         "the signing key fix from ", "BKQZ_AGENT_TOKEN=", "export QWPX_API_KEY=", "key=", "token%3D",
         "the password ", "auth: ", "the value for project id 4411 is "]
LEADS_ZH = ["", "密钥", "授权码", "密匙", "令牌是", "SMTP 授权码：", "密钥在部署时要用到："]
INVISIBLES = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\ufff9", "\ufffa", "\ufffb", "\u180e"]
SHAPES = ["plain", "code", "link", "query", "quotes", "assign", "json", "table", "wrap", "invisible", "percent", "fullwidth",
          "reference", "markdown"]


def full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


@st.composite
def placed(draw: st.DrawFn) -> tuple[str, str, str, str]:
    """(role, message, body, shape): a token in a shaped slot of a frame."""
    token, body = draw(tokens())
    frame = draw(st.sampled_from(sorted(FRAMES)))
    shape = draw(st.sampled_from(SHAPES))
    lead = draw(st.sampled_from(LEADS_ZH if frame == "zh" else LEADS))
    if shape == "code":
        slot = f"{lead}`{token}`"
    elif shape == "link":
        slot = f"{lead}[the hook](https://ci.example.com/hooks/{token})"
    elif shape == "query":
        param = draw(st.sampled_from(["sig", "k", "t", "code", "apikey", "access_token", "x"]))
        slot = f"{lead}https://hooks.example.com/run?{param}={token}&retry=1"
    elif shape == "quotes":
        left, right = draw(st.sampled_from(['""', "''", "“”", "「」", "‘’"]))
        slot = f"{lead}{left}{token}{right}"
    elif shape == "assign":
        name = draw(st.sampled_from(["BKQZ_AGENT_TOKEN", "PLVX_KEY", "WEBHOOK_URL_PART", "agentConf", "build.conf"]))
        slot = f"{lead}`{name} {draw(st.sampled_from(['=', ' = ', ': ', ':=']))}{token}`"
    elif shape == "json":
        slot = f'{lead}`{{"agent": "{token}", "region": "eu"}}`'
    elif shape == "table":
        slot = f"| staging | {lead}{token} |"
    elif shape == "wrap":
        cut = draw(st.integers(1, len(token) - 1))
        slot = f"{lead}{token[:cut]}\n{token[cut:]}"
    elif shape == "invisible":
        chars = list(token)
        for _ in range(draw(st.integers(1, 3))):
            chars.insert(draw(st.integers(0, len(chars))), draw(st.sampled_from(INVISIBLES)))
        slot = lead + draw(st.sampled_from(INVISIBLES)) * draw(st.integers(0, 1)) + "".join(chars)
    elif shape == "percent":
        cut = draw(st.integers(0, len(token)))
        escaped = "".join(f"%{ord(c):02X}" if i % 3 == 0 else c for i, c in enumerate(token[cut:]))
        slot = f"{lead.replace('=', '%3D')}{token[:cut]}{escaped}"
    elif shape == "reference":  # HTML's character references (`&quot;`, `&#61;`, `&#x41;`) in it
        cut = draw(st.integers(0, len(token)))
        escaped = "".join(draw(st.sampled_from([f"&#{ord(c)};", f"&#x{ord(c):x};"])) if i % 4 == 0 else c
                          for i, c in enumerate(token[cut:]))
        slot = f"{lead.replace('=', '&#61;')}&quot;{token[:cut]}{escaped}&quot;"
    elif shape == "markdown":  # Markdown's escapes inside words (`zq\_live\_...`, `a\|b`)
        slot = lead + re.sub(r"(?<=[A-Za-z0-9])([_|*~])(?=[A-Za-z0-9])", r"\\\1", token)
    elif shape == "fullwidth":
        slot = full_width(lead + token) if draw(st.booleans()) else lead + full_width(token)
    else:
        slot = lead + token
    return draw(st.sampled_from(["user", "assistant"])), FRAMES[frame].replace("{s}", slot), body, shape


# -- running the tool ----------------------------------------------------------------------

@contextlib.contextmanager
def workspace():
    with tempfile.TemporaryDirectory() as tmp:
        here = os.getcwd()
        os.chdir(tmp)
        try:
            Path("AGENTS.md").write_text(MEMORY, encoding="utf-8")
            yield Path(tmp)
        finally:
            os.chdir(here)


def write_transcript(folder: Path, messages: list[tuple[str, str]]) -> str:
    path = folder / "session.jsonl"
    path.write_text("".join(json.dumps({"role": role, "text": text}) + "\n" for role, text in messages),
                    encoding="utf-8")
    return str(path)


def run(argv: list[str]) -> tuple[str, str]:
    """main(argv) in this process: (stdout, stderr)."""
    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8")
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
        status = md.main(argv)
        stdout.flush()
    assert status in (0, 1), err.getvalue()
    return out.getvalue().decode("utf-8", "surrogateescape"), err.getvalue()


BUILD = ["build", "--memory", "AGENTS.md", "--no-cache", "--jobs", "1"]
MODES = {"patch": ["--stats"], "json": ["--json", "--stats"], "explain": ["--explain"]}


def all_outputs(messages: list[tuple[str, str]], runner=run) -> dict[str, str]:
    """Every mode's stdout and stderr, and lint's of each message as a bullet."""
    outputs = {}
    with workspace() as folder:
        path = write_transcript(folder, messages)
        for mode, flags in MODES.items():
            outputs[mode], outputs[mode + " stderr"] = runner(BUILD + flags + [path])
        Path("notes.md").write_text(MEMORY + "".join(f"- {text}\n" for _, text in messages), encoding="utf-8")
        outputs["lint"], outputs["lint stderr"] = runner(["lint", "notes.md"])
    return outputs


def run_cli(argv: list[str]) -> tuple[str, str]:
    proc = subprocess.run([*MEMORY_DIFF, *argv], capture_output=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout.decode("utf-8", "surrogateescape"), proc.stderr.decode("utf-8", "surrogateescape")


# -- views of an output --------------------------------------------------------------------

ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|n|r|t)")
MARKDOWN_ESCAPE = re.compile(r"\\([_|*~])")
BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def invisible(c: str) -> bool:
    return unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp") or c in "\u180e\u3164\u115f\u1160"


def views(text: str, as_json: bool = False) -> list[str]:
    found = [text]
    if as_json and text.strip():
        found.append("\n".join(json_strings(json.loads(text))))
    found += [ESCAPE.sub("", "".join(c for c in v if not invisible(c))) for v in found]
    found += [unicodedata.normalize("NFKC", v) for v in found]
    found += [urllib.parse.unquote(v) for v in found]
    found += [html.unescape(v) for v in found] + [MARKDOWN_ESCAPE.sub(r"\1", v) for v in found]
    decoded = []
    for v in found:
        for run_ in BASE64_RUN.findall(v):
            for alt in (None, b"-_"):
                try:
                    raw = base64.b64decode(run_.rstrip("=") + "=" * (-len(run_.rstrip("=")) % 4), altchars=alt)
                    decoded.append(raw.decode("utf-8"))
                except (binascii.Error, ValueError):
                    pass
    return found + decoded


def json_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *json_strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return []


def leaks(outputs: dict[str, str], body: str) -> list[str]:
    windows = {body[i:i + WINDOW] for i in range(len(body) - WINDOW + 1)} or {body}  # a short one whole
    return [mode for mode, text in outputs.items()
            if any(w in v for v in views(text, mode == "json") for w in windows)]


def explain_row(explain: str, needle: str) -> str:
    rows = [row for row in explain.splitlines() if needle in row.split("\t", 3)[-1]]
    return rows[0] if rows else ""


# -- property 1: no credential in any output ---------------------------------------------------

@SETTINGS
@given(placed())
def test_no_window_of_a_generated_credential_is_printed(case: tuple[str, str, str, str]) -> None:
    role, message, body, _ = case
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, body), (ascii(message), {k: v for k, v in outputs.items() if k in leaks(outputs, body)})


@settings(SETTINGS, max_examples=EXAMPLES or 4)
@given(placed())
def test_no_window_is_printed_through_the_cli(case: tuple[str, str, str, str]) -> None:
    role, message, body, _ = case
    outputs = all_outputs([(role, message)], run_cli)
    assert not leaks(outputs, body), ascii(message)


@pytest.mark.parametrize("frame", sorted(FRAMES))
def test_frame_control_is_proposed(frame: str) -> None:
    """Without a value in it, each frame is proposed: property 1 cannot pass by a frame that
    is never proposed."""
    text = FRAMES[frame].replace("{s}", NEUTRAL_ZH if frame == "zh" else NEUTRAL)
    for role in ("user", "assistant"):
        patch = all_outputs([(role, text)])["patch"]
        assert "+- " in patch, (frame, role)


# -- property 2: look-alikes in their named context ----------------------------------------------

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


KSUID_SECONDS = (1_460_000_000, 2_200_000_000)  # 2016 to 2039, seconds since 1970
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase  # in a KSUID's order


def ksuid(seconds: int, payload: int) -> str:
    """A KSUID: its seconds since 1.4e9 and 128 random bits, in 27 base62 characters."""
    value, out = (seconds - 1_400_000_000) << 128 | payload, ""
    for _ in range(27):
        value, digit = divmod(value, 62)
        out = BASE62[digit] + out
    return out


@st.composite
def lookalikes(draw: st.DrawFn) -> tuple[str, str]:
    """(sentence, the value): a value a credential rule could take, named as what it is."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    hexed = lambda n: "".join(rng.choice("0123456789abcdef") for _ in range(n))  # noqa: E731
    kind = draw(st.sampled_from(["commit", "uuid", "ulid", "ksuid", "digest", "fingerprint", "public"]))
    if kind == "commit":
        value = hexed(draw(st.sampled_from([7, 8, 10, 12, 40])))
        named = draw(st.sampled_from(["the signing key fix from commit {v}", "commit {v}", "the fix landed in {v} (the commit)",
                                      "revert SHA {v}", "the token refresh change in commit `{v}`"]))
    elif kind == "uuid":
        value = make_body(rng.getrandbits(32), "uuid", 36)
        named = draw(st.sampled_from(["checkpoint ids are UUIDs such as {v}", "the session id {v}",
                                      "request ID `{v}`", "the tenant UUID {v}"]))
    elif kind == "ulid":
        value = "01" + "".join(rng.choice(CROCKFORD) for _ in range(24))
        named = draw(st.sampled_from(["the job id {v}", "the event ULID {v}", "run id `{v}`"]))
    elif kind == "ksuid":
        value = ksuid(rng.randrange(*KSUID_SECONDS), rng.getrandbits(128))
        named = draw(st.sampled_from(["the batch KSUID {v}", "event id `{v}`", "{v} (the export's id)"]))
    elif kind == "digest":
        value = hexed(64)
        named = draw(st.sampled_from(["the sha256 checksum {v}", "checksum `{v}`", "its digest is {v}",
                                      "the SHA-256 hash {v}"]))
    elif kind == "fingerprint":
        value = "SHA256:" + base64.b64encode(rng.randbytes(32)).decode().rstrip("=")
        named = draw(st.sampled_from(["the SSH host key fingerprint {v}", "the host key fingerprint is `{v}`"]))
    else:
        value = draw(st.sampled_from(["pk_live_", "pk_test_"])) + make_body(rng.getrandbits(32), "base62", 24)
        named = draw(st.sampled_from(["the publishable key {v}", "the public key `{v}` in checkout.js",
                                      "{v}, the team's public key,"]))
    sentence = "Never change {s} in `deploy.sh` because the nightly release job pins it.".replace(
        "{s}", named.replace("{v}", value))
    return sentence, value


OTHER_GATES = ("dropped_pii", "dropped_invisible", "dropped_injection")  # they withhold the text for their own reason


def stage_of(sentence: str, value: str, role: str = "user") -> str:
    """The --explain stage of the row showing the value; "withheld: ..." when no row shows it
    and no gate but the secret gate withheld a row's text."""
    explain = all_outputs([(role, sentence)])["explain"]
    row = explain_row(explain, value)
    if row:
        return row.split("\t", 1)[0]
    if any(line.startswith(OTHER_GATES) for line in explain.splitlines()):
        return "other gate: " + ascii(explain)
    return "withheld: " + ascii(explain)


@SETTINGS
@given(lookalikes(), st.sampled_from(["user", "assistant"]))
def test_lookalike_in_its_named_context_passes(case: tuple[str, str], role: str) -> None:
    sentence, value = case
    stage = stage_of(sentence, value, role)
    assert not stage.startswith(("dropped_secret", "withheld")), (sentence, stage)


# -- property 3: harmless tokens ---------------------------------------------------------------

WORDS = ["cache", "build", "release", "worker", "session", "manager", "retry", "upload", "config", "parser",
         "handler", "queue", "token", "client", "server", "index", "schema", "migration", "deploy", "user",
         "async", "request", "response", "backend", "frontend", "loader", "timeout", "buffer", "stream", "v2"]


@st.composite
def harmless(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=5))
    kind = draw(st.sampled_from(["snake", "camel", "pascal", "upper", "kebab", "path", "version", "number", "dotted",
                                 "glued"]))
    if kind == "snake":
        return "_".join(parts)
    if kind == "glued":  # words run together in one case, as config keys are (`logallrefupdates`)
        glued = "".join(part for part in parts if part.isalpha())
        return glued.upper() if draw(st.booleans()) else glued
    if kind == "camel":
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    if kind == "pascal":
        return "".join(p.capitalize() for p in parts) + draw(st.sampled_from(["", "2", "V3", "Impl"]))
    if kind == "upper":
        return "_".join(parts).upper() + draw(st.sampled_from(["", "=1", "=true"]))
    if kind == "kebab":
        return "-".join(parts) + draw(st.sampled_from(["", "-v2", "-2024-06-01"]))
    if kind == "path":
        return "src/" + "/".join(parts) + draw(st.sampled_from([".py", ".ts", "_test.go", "/"]))
    if kind == "version":
        nums = draw(st.lists(st.integers(0, 120), min_size=3, max_size=4))
        return "v" + ".".join(map(str, nums)) + draw(st.sampled_from(["", "-rc1", "-beta.2", "+build.17"]))
    if kind == "number":
        return str(draw(st.integers(10**5, 10**18)))
    return ".".join(parts) + "()"


@SETTINGS
@given(harmless(), st.sampled_from(["", "the key ", "the token ", "`"]), st.sampled_from(["user", "assistant"]))
def test_harmless_token_passes(token: str, lead: str, role: str) -> None:
    value = f"`{token}`" if lead == "`" else lead + token
    sentence = FRAMES["en"].replace("{s}", value)
    stage = stage_of(sentence, token, role)
    assert not stage.startswith(("dropped_secret", "withheld")), (sentence, stage)


# -- the classes issue 26 names, one row each, values made at test time ---------------------------

def _rng(name: str) -> random.Random:
    return random.Random(f"issue-26:{name}")


def _chars(name: str, n: int, alphabet: str = "base62") -> str:
    return make_body(_rng(name).getrandbits(32), alphabet, n)


RULE = "Never change {s} in `deploy.sh` because the nightly release job reads it at start."
RULE_ZH = "必须在 `deploy.sh` 里使用{s}，因为夜间发布任务启动时会读取它。"


def _row(name: str, slot: str, value: str, frame: str = RULE):
    return pytest.param(frame.replace("{s}", slot), value, id=name)


_HEX32, _B62, _PW = _chars("hex32", 32, "hex"), _chars("b62", 40), _chars("pw", 14)
_HEX40 = _chars("hex40", 40, "hex")
_SMTP = "".join(_rng("smtp").choices(string.ascii_lowercase, k=16))
# A password as people choose one, long enough for a 12-character window.
_HUMAN = "HarborLights" + str(_rng("human").randint(1990, 2030)) + "!"
# A password a generator made, with the signs it adds (no piece between them of 16 or more).
_SIGNED = "*".join(_chars(f"signed{n}", 6) for n in range(3)) + "~Q7x"
_SLASHED = _chars("slashed1", 5) + "/" + _chars("slashed2", 5) + "(&;" + _chars("slashed3", 4)
_WRAP_SIGNED = _chars("wrap1", 10) + ")g7*~" + _chars("wrap3", 6)  # no line of it judged alone
# Joined by brackets alone, as a query's value: a query's next name (`&retry=`) once read as markup.
_QUERY_SIGNED = _chars("qv1", 9) + "<" + _chars("qv2", 9) + "(" + _chars("qv3", 4)
# One bracket that opens nothing, no sign: each side too short to be judged alone (_ONE_JOIN).
_ONE_JOIN = {mark: _chars(f"join{mark}1", 7) + mark + _chars(f"join{mark}2", 12) for mark in "<>;)]}|"}
_REPEAT = ("tide" + str(_rng("repeat").randint(2, 9))) * 3  # a chosen password of low entropy
_B32 = make_body(12, "base32", 28)  # its last 12 characters are capitals with vowels
_B32_CUT = 16
_UUID = make_body(_rng("uuid").getrandbits(32), "uuid", 36)
_SRI = base64.b64encode(_rng("sri").randbytes(64)).decode()  # a sha512's 88 characters, padded
# Seeds whose short mixed-case bodies the gate printed before (28 makes issue 26's `hViIMT...`).
# 1023, 1209 and 1564: printed until a part of two letters counted as no word, as one did;
# 1878 and 2437 until a letter between digits or a part whose only vowel is y did; 157 and 2221
# until three such parts counted in a token up to 30 characters.
_WORDY = [(28, "base62", 20), (149, "base62", 20), (4, "base62", 22), (287, "base62", 24),
          (417, "base62", 27), (418, "base62", 29), (59, "base64url", 23), (1023, "base62", 20),
          (1209, "base62", 20), (1564, "base62", 20), (1878, "base62", 20), (2437, "base62", 20),
          (157, "base62", 20), (2221, "base62", 20)]
# One-case bodies printed until a one-case token with under a quarter vowels counted as random
# (the second pair's base32 at 32 characters is a TOTP seed's length).
_ONE_CASE = [(15, "lower36", 24), (104, "lower36", 32), (2, "base32", 32), (4, "base32", 32), (2, "base32", 16)]
_HOOK = str(_rng("hook").randint(10**7, 10**8)) + "/" + _chars("hook", 7).lower()
_SPACED_KEY = " ".join(_chars("spaced", 32, "base32").lower()[i:i + 4] for i in range(0, 32, 4))
_SEED_WORDS = " ".join(_rng("seed").choice(["anchor", "badge", "cliff", "dune", "ember", "flock", "grape", "hinge",
                                            "ivory", "jolly", "kettle", "lunar", "mango", "nerve", "oyster"])
                       for _ in range(12))
_BRACKETED = _chars("br1", 2, "lower36") + "#" + _chars("br2", 3) + ")" + _chars("br3", 4) + ";" + _chars("br4", 4) \
    + ">" + _chars("br5", 5)
# ... none of its parts between signs judged alone (the gate once found no part of this one).
_DJANGO = "".join(_chars(f"djf{n}", k, "lower36") + sign for n, (k, sign) in enumerate(
    [(11, "("), (2, "*"), (8, "=("), (2, "$"), (9, "("), (4, "+"), (3, "="), (2, "")]))
_PAIR = _chars("pair1", 8, "hex") + ":" + _chars("pair2", 8, "hex")
_LONG_SIGNED = "~".join(_chars(f"long{n}", 11) for n in range(7))  # 83 characters, no piece of 16
_DOTTED = ".".join(_chars(f"dot{n}", 8) for n in range(3))
# A secret after a word the naming window used to cut short ("state|ful" read as OAuth's
# state, "sid|ecar" as a SID).
_CUT = f"We decided to keep {_HEX32} for staging, the deploy job has a stateful cache that needs it."
_CUT_SID = f"We decided to keep {_HEX32} for staging; it is read by a deploy sidecar that cannot reach the vault."
_LETTERS = "".join(_rng("letters").choices(string.ascii_letters, k=32))  # a key with no digit
_LOWER26 = "".join(_rng("lower26").choices(string.ascii_lowercase, k=24))
_KEY_BYTES = "[" + ",".join(str(b) for b in _rng("key-bytes").randbytes(64)) + "]"
_DIGITS24 = "".join(_rng("digits24").choices(string.digits, k=24))
_RECOVERY = "-".join(_chars("recovery", 16, "base32")[i:i + 4] for i in range(0, 16, 4))
_APP_PW = " ".join(_chars("apppw", 16, "lower36").translate(str.maketrans("0123456789", "bcdfghjklm"))[i:i + 4]
                   for i in range(0, 16, 4))
# Twelve words of BIP39's list, drawn once.
_SEED = "ladder orchid pencil vivid mosquito rescue bamboo drift olive canvas timber glue"
_SEED20 = _SEED + " ember cliff hinge anchor grape dune flock badge"  # (drawn: in no order)
_SEED25 = _SEED20 + " kettle mango ivory lunar jolly"
_SEED_HANGUL = unicodedata.normalize("NFD", "가격 가끔 가난 가능 가득 가르침 가뭄 가방 가상 가슴 가운데 가을")
_SEED_HANGUL3 = "고양이 사무실 자동차 바나나 도서관 운동장 비행기 냉장고 컴퓨터 선생님 대학교 무지개"
_SEED_ES = ("cueva prisión célebre monja azúcar golpe tibio fusil torre garaje jeringa correr brisa innato "
            "prado oruga talar faja")
_SEED_HANZI = "的 一 是 在 不 了 有 和 人 这 中 大"
_SEED_NFD = unicodedata.normalize("NFD", "árbol cometa jardín pícaro mármol océano túnel lápiz nómada bisonte "
                                  "ráfaga cúpula")
_SEED_KANA = "\u3000".join(["さくら", "みずうみ", "ひこうき", "おんがく", "たまご", "きつね", "かえる", "ゆうびん",
                             "こおり", "はなび", "つくえ", "ほたる"])


# DER headers: an RSA key's SubjectPublicKeyInfo (public), its PKCS#8 and PKCS#1 forms and an
# EC key's PKCS#8 (private); the bodies after them are random bytes.
_SPKI_RSA = base64.b64encode(bytes.fromhex("30820122300d06092a864886f70d01010105000382010f00")
                             + _rng("spki").randbytes(60)).decode()
_SPKI_EC = base64.b64encode(bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200")
                            + _rng("spki-ec").randbytes(65)).decode()
_PKCS8_RSA = base64.b64encode(bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7")
                              + _rng("pkcs8").randbytes(60)).decode()
_PKCS1_RSA = base64.b64encode(bytes.fromhex("308204a40201000282010100") + _rng("pkcs1").randbytes(60)).decode()
_PKCS8_EC = base64.b64encode(bytes.fromhex("308187020100301306072a8648ce3d020106082a8648ce3d030107046d")
                             + _rng("pkcs8-ec").randbytes(48)).decode()
# A UUIDv7 of 2025 (its first 48 bits: milliseconds since 1970) and one whose clock reads 2100.
_UUID7 = f"{1_740_000_000_000:012x}"[:8] + "-" + f"{1_740_000_000_000:012x}"[8:] + "-7" + _UUID[15:]
_UUID7_LATE = f"{4_102_444_800_000:012x}"[:8] + "-" + f"{4_102_444_800_000:012x}"[8:] + "-7" + _UUID[15:]


_ULID_NOW = "01K" + "".join(_rng("ulid-now").choices(CROCKFORD, k=23))  # a ULID of 2025
_FULL_WIDTH_SIGNED_ASCII = "xk29%Ra*FbWeqLmT4zPs#KdNfoq;Rb$vnH27dSQ!cG*PbfwgW5sC%)MXFHE"
_FULL_WIDTH_SIGNED = "".join(chr(ord(c) + 0xFEE0) for c in _FULL_WIDTH_SIGNED_ASCII)
_JWT_CUT = base64.urlsafe_b64encode(b'{"alg": "HS256", "typ": "JWT"}').decode().rstrip("=")
_JWT_REST = "." + base64.urlsafe_b64encode(b'{"sub": "svc-deploy", "role": "admin"}').decode().rstrip("=") \
    + "." + _chars("jwt-sig", 43, "base64url")
CLASSES = [
    # Issuers no rule names: a short prefix and a hex, UUID or base62 body (prefixes made up).
    _row("issuer-prefix-base62", f"the agent token bkqz_{_B62}", _B62),
    _row("issuer-prefix-short", f"squv_{_chars('squ', 28)}", _chars("squ", 28)),
    # A hook's secret of letters alone (Zapier's catch hook); a password's word in Finnish, with
    # its copula, which is English "on", and in Croatian (a fresh blind probe's).
    _row("hook-secret-of-letters", "ZAPIER_HOOK_URL=https://hooks.zapier.com/hooks/catch/6663374/ewvscyq/",
         "6663374/ewvscyq"),
    _row("finnish-password", "NAS-laitteen salasana on Kissa-Koira-88", "Kissa-Koira-88", frame="{s}"),
    _row("croatian-password", "lozinka za ruter je Kissa-Koira-88", "Kissa-Koira-88", frame="{s}"),
    # A mail provider's SMTP 授权码 is a password: its 16 letters may read as words' by their pairs.
    _row("smtp-authcode-of-vowels", "QQ邮箱 SMTP 授权码：yieipyqobpfyepby", "yieipyqobpfyepby"),
    # "Public" said of a token, not naming it: a wish or a denial.
    _row("public-as-a-predicate", f"never make {_B62[:24]} public, it is the deploy credential", _B62[:24],
         frame="{s}"),
    # A made-up prefix that spells a naming word (`zh:` names a Terraform hash, `tx` an id).
    _row("issuer-prefix-naming-word-zh", f"zh_{_HEX32}", _HEX32),
    _row("issuer-prefix-naming-word-tx", f"tx-{_HEX32}", _HEX32),
    _row("issuer-snake-hex", f"lsq2_pt_{_HEX32}_{_chars('lsq', 10, 'hex')}", _HEX32),
    _row("issuer-region-suffix", f"the mail API key {_HEX32}-us21", _HEX32),
    _row("bare-hex-32", f"`{_HEX32}`", _HEX32),
    _row("uuid-token", f"the monitoring API key {_UUID}", _UUID),
    # A PIN before a condition or a time ("..., if the badge reader fails") is still the PIN's.
    _row("pin-before-a-condition", "the kiosk PIN is 4390 if the badge reader fails", "4390"),
    # An account's PIN may run to twelve digits (a broker's, a carrier's port-out PIN).
    _row("pin-twelve-digits", "the brokerage account PIN is 950572226700 for the web login", "950572226700"),
    # ... a key ending in "pin" with more pieces before it; a URL query's unquoted (not a GPIO's).
    _row("pin-key-of-pieces", '`{"brokerage_account_pin": "950572226700"}`', "950572226700"),
    _row("pin-query-unquoted", "https://bank.example.net/login?account_pin=950572", "950572"),
    # A security question's answer, a name as typed, known by the question named beside it.
    _row("security-answer", "the registrar's security question answer is Halloway", "Halloway"),
    _row("memorable-word-with-a-digit", "memorable word on the payroll portal: quintessa4", "quintessa4"),
    _row("security-answer-de", "Sicherheitsfrage beim Provider, Antwort: Brennecke", "Brennecke"),
    _row("keypad-code-before-its-key", "the roof hatch keypad is 4102 followed by the hash key", "4102"),
    # A private key in DER is no public key, though it opens as one (`MII...`).
    _row("private-key-pkcs8", f"the service key is {_PKCS8_RSA}", _PKCS8_RSA),
    _row("private-key-pkcs1", f"the signing key is {_PKCS1_RSA}", _PKCS1_RSA),
    _row("private-key-ec-pkcs8", f"the token verification key is {_PKCS8_EC}", _PKCS8_EC),
    # A UUIDv7 whose clock is out of this era is no id of now: the key's word decides.
    _row("uuid7-of-another-era", f"the primary key is {_UUID7_LATE}", _UUID7_LATE),
    _row("webhook-path", f"https://hooks.example.net/services/T0{_chars('t', 8)}/B0{_chars('b', 8)}/{_B62[:24]}",
         _B62[:24]),
    _row("webhook-query", f"https://ci.example.net/trigger?build=7&token={_B62}", _B62),
    _row("uuid-under-tokens-path", f"https://api.example.net/tokens/{_UUID}", _UUID),
    _row("client-secret-beside-its-id", f"`client_id=web, client_secret={_B62[:32]}`", _B62[:32]),
    # Passwords by position, whatever they look like.
    _row("pgpassword", f"`PGPASSWORD={_PW} psql -h db`", _PW),
    _row("mysql-p-glued", f"`mysql -u root -p{_PW} app`", _PW),
    _row("sshpass", f"`sshpass -p {_PW} ssh deploy@host`", _PW),
    _row("htpasswd", f"`htpasswd -b .htpasswd admin {_PW}`", _PW),
    _row("jdbc-oracle", f"`jdbc:oracle:thin:scott/{_PW}@db.example.net:1521:orcl`", _PW),
    _row("connection-string", f"`postgres://app:{_PW}@db.example.net/app`", _PW),
    _row("password-option", f"`deploy --password={_PW}`", _PW),
    # Where the scan lost the value before: a wrap, an invisible glue, %3D, full width, format characters.
    _row("wrapped", f"the token {_B62[:20]}\n{_B62[20:]}", _B62),
    # Wrapped where the piece before the break reads as a word (`tezv`) but a dot joins it to
    # more; and a passphrase after its word, each line of it words.
    _row("wrapped-after-a-dot", "the bootstrap token r00a61.tezv\n4gzi9fdhu6vp", "r00a61.tezv4gzi9fdhu6vp"),
    _row("wrapped-passphrase", "the keystore password velvet-canyo\nn-ember-orbit", "velvet-canyon-ember-orbit"),
    _row("invisible-glue", f"the key\u200b{_B62}", _B62),
    _row("percent-separator", f"token%3D{_B62}", _B62),
    _row("full-width", full_width(f"sk_live_{_B62}"), _B62),
    _row("format-characters", f"the key {_B62[:12]}\ufff9{_B62[12:25]}\ufffb{_B62[25:]}", _B62),
    # Chinese wording: an SMTP 授权码 (sixteen letters), the misspelling 密匙, 密钥 a few words before.
    _row("zh-smtp-code", f"SMTP 授权码：{_SMTP}", _SMTP, RULE_ZH),
    _row("zh-misspelling", f"密匙是{_B62}", _B62, RULE_ZH),
    _row("zh-key-words-before", f"密钥在部署时要用到：{_B62}", _B62, RULE_ZH),
    # A session's id that is not a UUID or a ULID is a login's cookie (a blind list of the ninth
    # stop of 2026-12-06), in any language; an HTML character reference is no separator.
    _row("session-cookie-sid", f"the scraper sends acme_sid={_HEX32}{_HEX32[:16]} from my browser", _HEX32),
    _row("session-id-variable", f"`export SESSION_ID={_HEX32}` so the tests reuse my login", _HEX32),
    _row("session-id-japanese", f"セッションIDは {_HEX32} です", _HEX32, RULE_ZH),
    _row("character-reference-separator", f"api_key&#61;&quot;{_B62}&quot;", _B62),
    # A ULID of this era is an id but where a credential's word names it, before or after, in
    # any language (a blind list's of the ninth stop of 2026-12-06); a naming word inside a
    # kebab-case name names nothing (`checkout-web`: no commit's checkout).
    _row("ulid-issued-as-an-api-key", f"the partner account was issued {_ULID_NOW} as its API key",
         _ULID_NOW),
    _row("ulid-before-a-japanese-secret-word", f"{_ULID_NOW} は決済ゲートウェイの署名シークレットです",
         _ULID_NOW, RULE_ZH),
    _row("naming-word-in-a-kebab-name", f"the access token for project checkout-web = {_HEX32}",
         _HEX32),
    # A commit's verb after a clause's comma names nothing (French, Turkish); a secret key's and a
    # secret code's words abroad (a blind list of the ninth stop of 2026-12-06).
    _row("commit-verb-after-a-comma",
         f"la clé secrète de production est {_HEX32}, ne la committe surtout pas", _HEX32, "{s}"),
    _row("new-clause-after-a-comma",
         f"for the Sentry project {_HEX32}, the ingest endpoint rejects events without it", _HEX32),
    _row("turkish-secret-key", f"Gizli anahtar {_HEX32}, lütfen bunu commit etme.", _HEX32, "{s}"),
    _row("vietnamese-secret-code", f"Mã bí mật của API là {_HEX32}.", _HEX32, "{s}"),
    # Letters in one case with a digit or few, paired as no words pair them (rare_pairs).
    _row("rare-letter-pairs", f"the build agent uses {_chars('pairs5', 20, 'lower36')}",
         _chars("pairs5", 20, "lower36")),
    _row("rare-letter-pairs-2", f"the build agent uses {_chars('pairs14', 20, 'lower36')}",
         _chars("pairs14", 20, "lower36")),
    _row("markdown-escaped-underscores", f"the token zq\\_live\\_{_B62[:10]}\\_{_B62[10:20]}",
         f"{_B62[:10]}_{_B62[10:20]}"),
    _row("markdown-escaped-pipe-in-a-table", f"| zq | {_B62[:12]}\\|{_B62[12:23]} |",
         f"{_B62[:12]}|{_B62[12:23]}"),
    # Places a probe found printing a chosen password (made up here): a header, a cookie, a
    # login's `-p`, `.netrc`, an XML element, long options of other names, a suffixed variable,
    # a value opening with a placeholder's word.
    _row("authorization-any-scheme", f"`Authorization: Token {_HUMAN}`", _HUMAN),
    _row("api-key-header", f"`X-Api-Key: {_HUMAN}`", _HUMAN),
    _row("cookie-value", f"`Cookie: session={_HEX32[:24]}`", _HEX32[:24]),
    _row("bearer-chosen", f"`Authorization: Bearer {_HUMAN}`", _HUMAN),
    _row("login-p-space", f"`docker login -u deploy -p {_HUMAN}`", _HUMAN),
    _row("netrc", f"`machine git.example.net login deploy password {_HUMAN}`", _HUMAN),
    _row("xml-element", f"`<password>{_HUMAN}</password>`", _HUMAN),
    _row("passphrase-option", f"`gpg --batch --passphrase {_HUMAN} -d backup.gpg`", _HUMAN),
    _row("storepass-option", f"`keytool -list -keystore app.jks -storepass {_HUMAN}`", _HUMAN),
    _row("client-secret-option", f"`az ad sp create --client-secret {_HUMAN}`", _HUMAN),
    _row("suffixed-password-variable", f"`DB_PASSWORD_PROD={_HUMAN}`", _HUMAN),
    _row("suffixed-pwd-variable", f"`DB_PWD_PROD={_HUMAN}`", _HUMAN),
    _row("secret-key-base", f"`SECRET_KEY_BASE={_HUMAN}`", _HUMAN),
    _row("placeholder-word-prefix", f"`docker login --password MyS3cretPass{_PW[:4]}`", f"MyS3cretPass{_PW[:4]}"),
    _row("low-entropy-after-password", f'`db_password = "{_REPEAT}"`', _REPEAT),
    _row("low-entropy-json-password", f'`{{"password": "{_REPEAT}"}}`', _REPEAT),
    _row("name-opening-with-the", f"`PGPASSWORD=Theodore{_PW[:6]} psql -h db`", f"Theodore{_PW[:6]}"),
    # Places a second probe found printing a chosen password (its sentences were written apart
    # from the rules; these are other instances of the same classes).
    *[_row(f"place-{name}", text.replace("{pw}", _HUMAN), _HUMAN) for name, text in [
        ("sql-identified-by", "`ALTER USER 'app'@'%' IDENTIFIED BY '{pw}';`"),
        ("redis-requirepass", "`requirepass {pw}` in redis.conf"), ("rar-hp", "`rar a -hp{pw} logs.rar logs/`"),
        ("lftp-user-comma", "`lftp -u deploy,{pw} ftp.example.net`"),
        ("rabbitmq-add-user", "`rabbitmqctl add_user monitor {pw}`"),
        ("string-after-password-selector", "`await page.fill('input[name=password]', '{pw}')`"),
        ("words-before-the-copula", "the password of the staging database is {pw}"),
        ("set-to", "set the admin password to {pw}"), ("german-lautet", "das Kennwort für den Server lautet {pw}"),
        ("japanese-desu", "パスワードは {pw} です"),
        # A third probe's classes: no verb, a colon a few words on, psk, another tool, code.
        ("password-then-value", "sign in as the demo user with password {pw} on staging"),
        ("colon-after-words", "Passwort für den Build-Server: {pw}"), ("psk", 'lan_psk = "{pw}"'),
        ("mosquitto-P", "`mosquitto_sub -u sensor -P {pw} -t temp`"),
        ("credential-call", 'new NetworkCredential("backup", "{pw}")'),
        ("password-builder-call", '.password("{pw}")'),
        ("xml-name-value", '<property name="db.password" value="{pw}"/>'),
        ("httpie-without-a-url-scheme", "`http -a deploy:{pw} example.org/api`"),
        # A fifth round of classes (other instances than the probes showed): a user and password
        # pair in prose, a password by its place in a call or a schemeless DSN, more tools, typed
        # and prefixed assignments, a C macro, "secret is", more languages.
        ("login-pair-slash", "the demo account for QA is ops / {pw}"),
        ("login-pair-colon", "the creds for the staging box are deploy:{pw}"),
        ("connect-call-positional", '`conn = pymssql.connect("db.example.net", "sa", "{pw}")`'),
        ("pdo-positional", "`$pdo = new PDO($dsn, 'shop', '{pw}');`"),
        ("dsn-without-scheme", '`sql.Open("mysql", "app:{pw}@tcp(db:3306)/shop")`'),
        ("net-user-add", "`net user svc_sync {pw} /add`"), ("mcrcon-p", "`mcrcon -H 10.0.0.5 -p {pw} list`"),
        ("typed-declaration", 'const adminPass: string = "{pw}";'),
        ("bytes-literal", "SECRET_KEY = b'{pw}'"), ("c-macro", '#define MQTT_PASSWORD "{pw}"'),
        ("secret-is", "the webhook secret is {pw}"), ("vietnamese-la", "mật khẩu wifi là {pw}"),
        ("turkish-possessive", "Yönetici parolası: {pw}"),
        # A sixth round: a reader of stdin by another flag, RDP's /p:, a router's `secret 0`,
        # a config directive, a member call, more languages, escaped JSON.
        ("passwd-on-stdin", "`echo '{pw}' | sudo openconnect --user=ops --passwd-on-stdin vpn.example.org`"),
        ("rdp-p", "`xfreerdp /v:rdp.example.org /u:ops /p:{pw}`"),
        ("router-secret-0", "`username backup privilege 15 secret 0 {pw}`"),
        ("config-directive", 'ProxyPassword "{pw}" in the vhost'),
        ("smtp-member-call", "`Net::SMTP.start('mx.example.org', 25, 'example.org', 'ops', '{pw}', :plain)`"),
        ("spanish-clave", "la clave del wifi es {pw}"), ("japanese-login-pair", "ステージングのログインは ops / {pw} です"),
        ("turkish-olarak", "Şifre olarak {pw} kullan"),
        ("json-escaped-german", '`body={\\"passwort\\":\\"{pw}\\"}`'),
        ("json-unicode-escape", '`{\\u0022password\\u0022:\\u0022{pw}\\u0022}`'),
        # A seventh round (from probe8): a table's password column, a value in parentheses
        # after its word, more scripts' words for "password".
        ("table-column", "| env | host | password |\n|---|---|---|\n| qa | qa-db:5432 | `{pw}` |"),
        ("in-parentheses", "la contraseña de la base (`{pw}`) ya está en el .env"),
        ("greek", "ο κωδικός του staging είναι {pw}"), ("hebrew", "הסיסמה לשרת היא {pw}"),
        ("hindi", "डेटाबेस का पासवर्ड {pw} है"), ("snmp-community", "`snmpget -v2c -c {pw} 10.0.0.9 sysName.0`"),
        # An eighth round (from probe9): an XML element with attributes, Dovecot's {PLAIN}, a
        # space-separated config line, a lowercase compound name, a one-string auth call.
        ("xml-pass-attributes", '<Pass encoding="plain">{pw}</Pass>'),
        ("dovecot-plain", "`ops:{PLAIN}{pw}:5000:5000::/home/ops`"),
        ("config-line-spaced", "bridge config:\nremote_password {pw}\nremote_username gw"),
        ("php-compound-key", "`'dbpassword' => '{pw}',`"), ("lua-auth-call", '`red:auth("{pw}")`'),
        ("hungarian", "a teszt szerver jelszava {pw}, a felhasználó admin"),
        ("danish", "adgangskoden til serveren er {pw}"),
        # A ninth round (from probe11): a quote after curl's `user:`, a word's suffix after a
        # hyphen, a clitic glued to the word (Arabic's "and"), French's "c'est".
        ("curl-user-quoted", "`curl -k -u ops:'{pw}' https://search:9200/_cat/indices`"),
        ("hyphen-suffix", "akun admin, password-nya {pw}, jangan disebar"),
        ("arabic-clitic", "اسم المستخدم admin وكلمة المرور {pw} للخادم"),
        ("french-cest", "le compte de service demande un mot de passe, c'est {pw} pour l'instant"),
        # A tenth round (from probe12): spaces around `=`, PAM's `authtok`, a passphrase's
        # variable, Malay, a flag after a line continuation, a password written to its file.
        ("authtok-spaced", "[domain/example]\nldap_default_authtok = {pw}\n"),
        ("passphrase-variable", "`wpa_passphrase={pw}` in hostapd.conf"),
        ("malay", "kata sandi wifi kantor: {pw}"),
        ("continued-command", "`ldapwhoami -x -D cn=ops,dc=corp \\\n  -w {pw}`"),
        ("password-file", "`echo -n '{pw}' > .vault_password`"),
        # An eleventh round (from probe13): a token's or an API key's option.
        ("token-option", "`doctl auth init --access-token {pw}`"),
        ("api-key-option", "`./deployer push --api-key={pw} --env prod`"),
        # A twelfth round (from probe14): a password in apposition, a link's text, Chinese with
        # words between the word and its colon, a colon read after a first "to".
        ("apposition", "the new staging password, {pw}, expires on Monday"),
        ("link-text", "the db password is in the wiki: [{pw}](https://wiki.example.org/db)"),
        ("chinese-words-before-colon", "我把redis密码更新了，现在是：{pw}，记得同步"),
        ("colon-after-to", "the password to the admin panel: {pw}"),
        # A thirteenth round (from probe15): more languages' words and particles, a value
        # that opens with a dash.
        ("korean-particle-ga", "DB 비밀번호가 {pw}입니다"), ("swedish", "lösenordet är {pw}"),
        ("norwegian", "passordet er {pw} inntil videre"), ("arabic-indefinite", "كلمة مرور الخادم هي {pw}"),
        ("turkish-accusative", "veritabanı şifresini {pw} olarak ayarladım"),
        ("dash-leading", "the kiosk password -{pw} works on every tablet"),
        # A fourteenth round (from probe17): many words before Vietnamese's `là`, a change's
        # "to" in other languages, a proxy's list of basic-auth users.
        ("vietnamese-nine-words", "mật khẩu của tài khoản quản trị trên máy chủ thử nghiệm mới là {pw}"),
        ("italian-changed-in", "la password del database l'ho cambiata in {pw} stamattina"),
        ("spanish-changed-a", "la contraseña del usuario deploy la he cambiado a {pw}"),
        ("russian-changed-na", "пароль от базы я сменил на {pw} вчера"),
        ("polish-changed-na", "hasło do serwera zmieniłem na {pw}"),
        ("traefik-basicauth-users", '`traefik.http.middlewares.auth.basicauth.users=ops:{pw}`'),
        # A fifteenth round (from probe18): a change's "to" in Chinese, Japanese's を, Vietnamese's
        # thành, "passphrase" in Korean, a word glued to Thai's password word.
        ("chinese-changed-to", "我已经把数据库的密码换成 {pw} 了"),
        ("japanese-wo", "ステージングのパスワードを {pw} にしました"),
        ("vietnamese-thanh", "em đã đổi mật khẩu máy chủ thành {pw} rồi"),
        ("korean-passphrase", "서명 키의 패스프레이즈 {pw} 는 금고에 있어요"),
        ("thai-glued-word", "รหัสผ่านสำหรับ VPN คือ {pw} นะ"),
        # Generated in the review: a change's verb before the password's word, Chinese's 了.
        ("italian-changed-before", "ho cambiato la password del server in {pw} ieri sera"),
        ("french-changed-before", "j'ai changé le mot de passe de la base en {pw}"),
        ("ukrainian-changed-before", "змінив пароль до бази на {pw}"),
        ("chinese-changed-le", "我把 VPN 密码改成了 {pw}"),
        # A login's pair in code spans or quotes, a review's leaks of the seventh stop of
        # 2026-12-06 (the user is no password's word; the password no thing's name).
        ("login-pair-in-code-spans", "Grafana admin login: `admin` / `{pw}` on both dashboards"),
        ("login-pair-in-quotes", 'credentials: "sa" / "{pw}" for the test database'),
        ("login-pair-in-curly-quotes", "login: “admin” / “{pw}”"),
        ("login-pair-quoted-french", "connecte-toi avec 'admin' / '{pw}'"),
        ("login-pair-quoted-german", "Anmeldedaten für den Testserver: `tester` / `{pw}`"),
        ("login-pair-quoted-russian", 'Логин в Grafana: "grafana" / "{pw}"'),
        ("login-pair-quoted-signing-in", "I tried signing in with 'postgres' / '{pw}' but it says no"),
    ]],
    _row("signs-and-slash-after-colon", f"le mot de passe de la base :\n{_SLASHED}", _SLASHED, frame="{s}"),
    _row("signed-generated-password", f"I reset it to {_SIGNED} this morning, it works now", _SIGNED),
    _row("passphrase-in-code-span", "ustawiłem hasło `tulip-window-garden` w pliku .env", "tulip-window-garden"),
    _row("passphrase-in-parentheses", "the new password (`amber-falcon-ridge`) is in the vault too", "amber-falcon-ridge"),
    # Found by property 4 unseeded at 500 examples: a password shaped like a setting glued to
    # its flag, one opening with the `*` that alone asks for a prompt.
    _row("glued-flag-setting-shaped", "`mysqladmin -u root -pqa=2024091733 status`", "qa=2024091733"),
    _row("net-use-star-password", "`net use S: \\\\nas\\share /user:corp\\ops *773041996255`", "*773041996255"),
    _row("value-alone-after-colon", f"here is the VPN password, keep it private:\n{_HUMAN}", _HUMAN, frame="{s}"),
    _row("recovery-code", f"use recovery code {_RECOVERY} if the MFA phone is lost", _RECOVERY),
    # ... named in a variable or a key (`RECOVERY_CODE=`, `"access_code":`).
    _row("recovery-code-variable", "`GITHUB_RECOVERY_CODE=025ba-e18ef` in the vault's export", "025ba-e18ef"),
    _row("access-code-variable", "`ACCESS_CODE=07098121` for the night-shift terminal", "07098121"),
    _row("access-code", f"the emergency access code {_RECOVERY} opens the console once", _RECOVERY),
    _row("access-code-turkish", f"acil erişim kodu: {_RECOVERY}", _RECOVERY),
    _row("spaced-base32-key", f"the authenticator's setup key is {_SPACED_KEY} (type it by hand)", _SPACED_KEY),
    _row("seed-phrase", f"the wallet was restored from this phrase:\n> {_SEED_WORDS}\n", _SEED_WORDS, frame="{s}"),
    # A ninth round (from secret31, a blind list): a seed phrase in prose, a generated value
    # holding brackets or `;`, a key's halves joined by a colon.
    _row("seed-phrase-in-prose", f"the hot wallet was restored from the seed phrase {_SEED_WORDS} last spring",
         _SEED_WORDS, frame="{s}"),
    _row("seed-phrase-zh", f"热钱包是用助记词 {_SEED_WORDS} 恢复的", _SEED_WORDS, frame="{s}"),
    _row("signs-with-brackets", f"the auth token {_BRACKETED} of the push user", _BRACKETED),
    _row("signs-unquoted-after-its-name", f"Django uses SECRET_KEY {_DJANGO}; rotating it logs everyone out",
         _DJANGO, frame="{s}"),
    _row("colon-pair-in-a-command", f"`bundle config --local gems.example.net {_PAIR}`", _PAIR),
    _row("colon-pair-zh", f"Sidekiq 用凭据 {_PAIR} 安装", _PAIR, RULE_ZH),
    # A tenth round (from secret32, a blind list written after the ninth): generated parts
    # joined by dots, three words joined after a password's word, a seed phrase after "is".
    _row("dotted-generated-parts", f"the gateway token {_DOTTED}", _DOTTED),
    _row("passphrase-after-is", "the vault password is Laterne-Gewitter-Maerz", "Laterne-Gewitter-Maerz"),
    _row("seed-phrase-after-is", f"the cold wallet recovery phrase is {_SEED_WORDS}", _SEED_WORDS, frame="{s}"),
    # Found by property 1 at 300 examples: a signed value longer than 64 characters.
    _row("signed-longer-than-64", f"the relay key {_LONG_SIGNED}", _LONG_SIGNED),
    _row("app-password-with-vowels", "the SMTP relay sends with qzvk mtrw pldx hsoe", "qzvk mtrw pldx hsoe"),
    _row("letters-only-key", f'`API_KEY = "{_LETTERS}"` in the notebook', _LETTERS),
    # Letters alone that no word names: mixed case by pieces and pairs, one case by pairs
    # (rare_pairs), as a mail provider's 16-letter code is written.
    _row("letters-alone-unnamed", f"here it is: {_chars('alone8', 20, 'letters')}", _chars("alone8", 20, "letters")),
    _row("letters-alone-small", f"paste {_LOWER26} into the settings", _LOWER26),
    # Key material as its bytes; a long number a key's name or word names; a commit's verb denied
    # beyond the naming window; a gem host's login.
    _row("key-bytes", f"cat ~/.config/solana/id.json prints {_KEY_BYTES}", _KEY_BYTES[1:40]),
    _row("digits-after-key-name", f"`SMS_GATEWAY_API_KEY={_DIGITS24}` in the worker", _DIGITS24),
    _row("digits-after-key-word", f"the api key for the SMS gateway is {_DIGITS24}", _DIGITS24),
    _row("commit-denied-far-before", f"Never commit Khóa API môi trường production là {_HEX32.upper()} to git",
         _HEX32.upper(), "{s}"),
    _row("bundle-config-login", f"`bundle config --global gems.example.com ops:{_PW}`", _PW),
    # A token of 16 whose separators leave under 16 letters and digits, judged whole from 12.
    _row("base64url-short-joined", f"the relay uses {_chars('b64u21', 16, 'base64url')}",
         _chars("b64u21", 16, "base64url")),
    _row("letters-alone-capitals", f"the staging value changed to {_LOWER26.upper()}.", _LOWER26.upper(), "{s}"),
    _row("approle-secret-id", f'`secret_id: "{_UUID}"` in the approle login', _UUID),
    _row("word-cut-at-the-window", _CUT, _HEX32, frame="{s}"),
    _row("word-cut-at-the-window-sid", _CUT_SID, _HEX32, frame="{s}"),
    # A digest's word naming something else beside a token no digest has the form of.
    _row("digest-word-names-a-job", f"`OPENAI_API_KEY=sk-proj-{_B62}{_B62}` is for the nightly digest job only",
         _B62, frame="{s}"),
    _row("digest-word-names-a-job-zh", f"约定：sk-proj-{_B62}{_B62} 只用于批量摘要任务。", _B62, frame="{s}"),
    _row("app-password-letters", f"the SMTP app password is {_APP_PW}", _APP_PW),
    # An eleventh round (secret32's rest): a licence or product key and recovery codes in
    # dashed groups of four or five, a password that "stays" a value.
    _row("licence-key-dashed", "the PDF SDK is licensed as PRO-B41D-9C3E-4335-0F7A-22D1 since the upgrade",
         "PRO-B41D-9C3E-4335-0F7A-22D1"),
    _row("recovery-codes-in-pairs", "the owner's codes are 7b1e0-c93fa 04d2b-e8a61 f5c07-39bd2",
         "7b1e0-c93fa 04d2b-e8a61 f5c07-39bd2"),
    _row("password-stays", "the lab Wi-Fi password stays Kaffee_Maschine_2017 for the printers",
         "Kaffee_Maschine_2017"),
    _row("passwort-bleibt", "das Gäste-WLAN-Passwort bleibt Kaffee_Maschine_2017", "Kaffee_Maschine_2017"),
    _row("password-remained", "the lab Wi-Fi password remained Kaffee_Maschine_2017 all year",
         "Kaffee_Maschine_2017"),
    _row("german-low-quotes", "das WLAN-Passwort ist „blaue Tasse 42“", "blaue Tasse 42"),
    _row("hmac-key", f"`hmac.new(b'{_B62}', body, hashlib.sha256)`", _B62),
    _row("sshpass-quoted-word", "`sshpass -p 'lighthousekeeper' ssh pi@host`", "lighthousekeeper"),
    # Any command's spaced `-p` before a value made as passwords are (both cases and a digit).
    _row("spaced-p-with-a-user", f"`dbcli -u SYSTEM -p {_chars('spaced-p', 14)} -d prod`",
         _chars("spaced-p", 14)),
    # A password's name, then "holds" or "contains", or a Chinese copula between English words.
    _row("password-variable-holds", f"the CI secret RELEASE_PASSWORD holds {_chars('holds', 14)}",
         _chars("holds", 14)),
    _row("passphrase-zh-copula", "商户的 passphrase 是 Coral-Heron-2011，后台可以改。", "Coral-Heron-2011"),
    _row("private-key-assigned", f"`PrivateKey = {_B62}` in the interface section", _B62),
    # Base32 wrapped where its second line opens with capitals that read like a word.
    _row("wrapped-base32-capitals", _B32[:_B32_CUT] + "\n" + _B32[_B32_CUT:], _B32),
    # A generator's password wrapped where a bracket stands before the break (WRAPPED_SIGNED).
    _row("wrapped-signed", _WRAP_SIGNED[:13] + "\n" + _WRAP_SIGNED[13:], _WRAP_SIGNED),
    *[_row(f"signed-one-join-{n}", value, value) for n, value in enumerate(_ONE_JOIN.values())],
    # A generator's 12 or 14 letters and digits, no sign (mid_generated; bench/README says how many
    # such values still read as a name).
    _row("mid-length-12", _chars("mid12", 12), _chars("mid12", 12)),
    _row("mid-length-14", _chars("mid15", 14), _chars("mid15", 14)),
    # A signed value as one value of a query (query_values): judged without the query's names.
    _row("signed-query-value", "https://ci.example.net/cb?ref=" + _QUERY_SIGNED + "&retry=1", _QUERY_SIGNED),
    # A password echoed into a command whose password option is given no value: it reads stdin.
    _row("echo-into-password-option", "`echo walnut-otter71 | sudo remotedesk --set-password`",
         "walnut-otter71"),
    _row("echo-into-password-option-then-a-line", "echo walnut-otter71 | remotedesk --set-password\nthen restart",
         "walnut-otter71"),
    _row("password-glued-zh-copula", "password是walnut-otter71，别外传。", "walnut-otter71"),
    # A made-up prefix that is a Stripe object's (`ch_`) before hex, which no Stripe id is.
    _row("stripe-prefix-before-hex", f"ch_{_HEX32}", _HEX32),
    # Wrapped where a line ends in a word's letters glued to the token (`+Rumb`): no word alone.
    _row("wrapped-after-a-glued-word", "q+Rumb\n7XkpT+w9nzLe4R", "q+Rumb7XkpT+w9nzLe4R"),
    # A short mixed-case token alone in a plain sentence, its letters read like words.
    *[_row(f"short-mixed-case-{a}-{n}-seed-{seed}", make_body(seed, a, n), make_body(seed, a, n))
      for seed, a, n in _WORDY],
    *[_row(f"one-case-{a}-{n}-seed-{seed}", make_body(seed, a, n), make_body(seed, a, n))
      for seed, a, n in _ONE_CASE],
    # An id's word after a preposition names another thing ("for the events API"), not the token.
    _row("prefixed-hex-for-an-events-api", "tqx_" + _chars("tqx", 40, "hex"), "tqx_" + _chars("tqx", 40, "hex"),
         "Staging uses {s} for the billing events API, prod another one."),
    # A webhook's path after the hook's name, its pieces short.
    _row("webhook-path-short-pieces", f"https://hooks.example.net/hooks/catch/{_HOOK}/", _HOOK),
    # A chosen password anywhere in its word's clause.
    _row("password-in-apposition", _HUMAN, _HUMAN, "The warehouse password you pasted, {s}, fails on login."),
    _row("password-after-a-verb", _HUMAN, _HUMAN, "The password field contains {s} since the reset."),
    _row("passwort-words-after-ist", _HUMAN, _HUMAN,
         "Das Passwort für den Benutzer etl ist laut deiner Nachricht {s} – bitte ändern."),
    # Made to a policy, where a reviewer's list found the first rule blind (no password word).
    *[_row(name, value, value, frame) for name, value, frame in [
        ("policy-word-at-digits", "Welcome@20241", "The kiosk takes {s} since Monday."),
        ("policy-signs-together", "Pa$$w0rdKiosk", "Try {s} on the lab switch."),
        ("policy-after-a-colon", "Harbor#Lights77", "the box: {s} until Friday"),
        ("policy-before-a-colon", "Harbor#Lights77", "It is {s}: keep it off the ticket."),
        ("policy-in-another-script", "Contraseña#2024x", "La VPN es {s} desde hoy."),
        ("policy-in-a-table-cell", "Harbor#Lights77", "| staging | {s} |"),
        ("policy-ending-in-a-bang", "Lighthouse2024!", "I set it back to {s} again this morning."),
        # A capital prefix and `#` is also a table's key (`USER#Alice42`), held: passwords open so.
        ("policy-capital-prefix", "ROSA#Harbor2024", "the kiosk opens with {s} now"),
        ("policy-like-a-cell", "Harbor2024!AB12", "the kiosk opens with {s} now")]],
    # From secret50 (a blind list): an app password whose groups hold vowels but read as no
    # words, Windows' options in small letters, a router's plain secret and SNMP community,
    # passwords piped to kinit or cryptsetup, a setter's argument, a PIN before Japanese,
    # "user X, pass Y" and a Wi-Fi key made as passwords are.
    _row("app-password-vowels-in-every-group", "the app password is kqre vomb tsnu waid", "kqre vomb tsnu waid"),
    _row("app-password-after-an-option", '`mailer -smtp-password "kqre vomb tsnu waid" -smtp-from ops`',
         "kqre vomb tsnu waid"),
    _row("schtasks-small-letters", "`schtasks /create /tn Nightly /ru CORP\\svc /rp harbor-otter72`",
         "harbor-otter72"),
    _row("router-plain-secret", "`username ops privilege 15 secret harbor-otter72`", "harbor-otter72"),
    _row("snmp-server-community", "`snmp-server community harbor-otter72 RO`", "harbor-otter72"),
    _row("echo-into-kinit", "`echo 'harbor-otter72' | kinit ops@EXAMPLE.ORG`", "harbor-otter72"),
    _row("echo-into-cryptsetup", "`echo -n 'harbor-otter72' | cryptsetup luksOpen /dev/sdb1 vault -`",
         "harbor-otter72"),
    _row("setter-call", '`OTA.setPassword("harbor-otter72");`', "harbor-otter72"),
    _row("pin-before-japanese", "YubiKeyのPINは604219です。", "604219", frame="{s}"),
    _row("user-then-pass", "WordPress: user `editor`, pass `Harbor-Otter72`", "Harbor-Otter72"),
    _row("wifi-key", "guest wifi: SSID Lab-Guest, key Harbor-Otter72", "Harbor-Otter72"),
    # From secret51 (a blind list): a value holding a Latin letter past ASCII, an access code
    # with a keypad's signs, macOS keychain options, a Terraform variable's default.
    _row("value-with-latin-letter", "la contraseña del ZIP es Contraseña-Zip94x", "Contraseña-Zip94x", frame="{s}"),
    _row("access-code-keypad-signs", "alarm disarm code: *31907# within 30s", "*31907#"),
    _row("macos-keychain-w", "`security add-generic-password -a ci -s gh -w harbor-otter72`", "harbor-otter72"),
    _row("macos-keychain-p", "`security create-keychain -p 'harbor-otter72' build.keychain`", "harbor-otter72"),
    # From secret52 (a blind list): a JWT's signing key, a VPN's pre-shared key in a config line.
    _row("jwt-signing-key", "`jwt.sign(payload, 'harbor-otter-key-72', { expiresIn: '1h' })`", "harbor-otter-key-72"),
    _row("pre-shared-key-config", "`tunnel-group 203.0.113.9 ipsec-attributes ikev1 pre-shared-key Harbor-Otter72`",
         "Harbor-Otter72"),
    _row("unlock-phrase-quoted", 'The vault unlock phrase is "purple heron eats 9 figs" (spaces too).',
         "purple heron eats 9 figs", frame="{s}"),
    _row("terraform-default", 'variable "db_password" {\n  type    = string\n  default = "Harbor-Otter72"\n}',
         "Harbor-Otter72", frame="{s}"),
    # From secret53 (a blind list): a password in another alphabet or in kana, with a digit; a
    # SIM's PUK; a lock's combination; a wallet's recovery phrase
    # wrapped; a licence key whose groups are mostly letters no word has.
    _row("password-cyrillic", "пароль от роутера — Ласточка_2231, не меняй его", "Ласточка_2231", frame="{s}"),
    _row("password-kana-quoted", "Wi-Fiのパスワードは「さくらもち77#」です。", "さくらもち77#", frame="{s}"),
    _row("password-hangul", "the NAS password is 바다거북88! since the move", "바다거북88!", frame="{s}"),
    _row("sim-puk", "the spare SIM's PUK is 40718263, kept in the safe", "40718263", frame="{s}"),
    _row("puk-as", "I stored the PUK for the router's SIM as 92650318 in the vault", "92650318", frame="{s}"),
    _row("lock-combination", "the locker combination is 14-32-07 for the test rack", "14-32-07", frame="{s}"),
    _row("seed-phrase-wrapped", "MNEMONIC: " + _SEED.replace(" ", "\n", 1), _SEED, frame="{s}"),
    _row("backup-words-after-are", f"the backup words are {_SEED} and stay offline", _SEED, frame="{s}"),
    _row("licence-key-letter-groups", "activate the seat with K7-9TQW-HRZD-MOLA-NBVC", "K7-9TQW-HRZD-MOLA-NBVC"),
    # From secret54 (a blind list written after those rules): a PUK2; a code set "to" its value; a
    # combination after "for"; Japanese 暗証番号;
    # a recovery phrase numbered, between commas, in JSON or after another language's name;
    # licence keys of three groups of five letters and of a prefix and four groups.
    _row("puk2", "PUK2 for the spare SIM is 58203917, not the PUK", "58203917", frame="{s}"),
    _row("code-set-to", "I've set the garage keypad code to 628014 for the move", "628014", frame="{s}"),
    _row("combination-for", "the combination for locker 9 is 27 04 33, this term", "27 04 33", frame="{s}"),
    _row("pin-japanese", "倉庫の暗証番号は4826です。", "4826", frame="{s}"),
    _row("seed-numbered", "backup words: " + " ".join(f"{n}) {w}" for n, w in enumerate(_SEED.split(), 1)),
         " ".join(f"{n}) {w}" for n, w in enumerate(_SEED.split(), 1)), frame="{s}"),
    _row("seed-commas", "the signer's recovery phrase is " + ", ".join(_SEED.split()), ", ".join(_SEED.split()),
         frame="{s}"),
    _row("seed-json", f'{{"mnemonic": "{_SEED}"}} stays in the fixture', _SEED, frame="{s}"),
    _row("seed-russian-name", f"фраза восстановления кошелька — {_SEED}", _SEED, frame="{s}"),
    _row("licence-three-of-five", "the giveaway key is QWRTZ-HMPLK-SDFGN, once", "QWRTZ-HMPLK-SDFGN"),
    _row("licence-prefix-four-groups", "the licence is MNTR-B7QX-PLEA-93KD-ZR2W", "MNTR-B7QX-PLEA-93KD-ZR2W"),
    # From secret55 (a blind list written after all of the above): a password of four or five
    # digits after its word; a door's code and a safe's combination in German and Italian; a
    # recovery phrase given "as", or after Portuguese "palavras de recuperação ... são".
    _row("password-of-digits", "the guest Wi-Fi password is 40719 since May, on the fridge", "40719", frame="{s}"),
    _row("password-of-digits-pt", "a senha do cofre é 8142, nunca a compartilhe", "8142", frame="{s}"),
    _row("door-code-german", "Der Türcode fürs Archiv lautet 5832# – immer testen.", "5832#", frame="{s}"),
    _row("combination-italian", "la combinazione della cassaforte è 31-07-58, mai ai clienti.", "31-07-58",
         frame="{s}"),
    _row("seed-as", f"I've saved the hot wallet's mnemonic as {_SEED}; never paste it", _SEED, frame="{s}"),
    # Found by property 1 unseeded at 1,000 examples: base64 split by its `+` into pieces that
    # read as names, and a generated value holding `%d` among other signs (no format string).
    _row("base64-plus-between-pieces", "sxeNVAh+yKTHPWRP58Wh", "sxeNVAh+yKTHPWRP58Wh"),
    _row("signs-holding-a-format", "rUgd5&z!k#8%d$2LGNvXtY>!!D4ZLS$#VD~4b2csRArWP",
         "rUgd5&z!k#8%d$2LGNvXtY>!!D4ZLS$#VD~4b2csRArWP"),
    _row("seed-portuguese", f"as palavras de recuperação da carteira são {_SEED}, sempre offline", _SEED,
         frame="{s}"),
    # From secret57 and secret58 (blind lists; the values here are new): a code's word in another
    # language before what it opens, a genitive or a long clause between a PIN and its number;
    # backup codes named in more languages, hyphenated or listed; a number in groups after any
    # code's word; a recovery phrase after a bare "seed" or unnamed; serials and keys in groups.
    _row("code-of-a-safe-spanish", "el código de la caja fuerte del almacén es 304918, no lo cambies", "304918",
         frame="{s}"),
    _row("code-of-an-intercom-russian", "Код домофона в офисе: 58213, не забудь", "58213", frame="{s}"),
    _row("code-of-a-safe-polish", "kod do sejfu w magazynie to 61724, nigdy nie zapisuj", "61724", frame="{s}"),
    _row("pin-after-a-long-clause", "the SIM PIN for the LTE router in rack 4 is 7302; keep it offline",
         "7302", frame="{s}"),
    _row("pin-before-nanode", "ロッカーの暗証番号は5821なので、なくさないで。", "5821", frame="{s}"),
    _row("pin-arabic-clause", "رمز PIN لجهاز الاختبار هو 6142 لا تشاركه", "6142", frame="{s}"),
    _row("pin-genitive-ukrainian", "PIN-код тестової SIM-картки — 9305, нікому", "9305", frame="{s}"),
    _row("pincode-dutch", "de pincode van de testtelefoon is 482913.", "482913", frame="{s}"),
    _row("keypad-code-changed-to", "the lab keypad code changed to *4821 yesterday", "*4821", frame="{s}"),
    _row("padlock-combination-commas", "the bike padlock is 12, 40, 27 — spin twice", "12, 40, 27", frame="{s}"),
    _row("backup-code-hyphenated", "Der Backup-Code für das Testkonto ist 5820 1937 – einmalig.", "5820 1937",
         frame="{s}"),
    _row("backup-code-russian", "Резервный код для входа — k4m2-9xq7, только на крайний случай", "k4m2-9xq7",
         frame="{s}"),
    _row("backup-codes-listed", "Los códigos de respaldo son 4821-9930 y 5512-0384.", "5512-0384", frame="{s}"),
    _row("grouped-code-indonesian", "Kode cadangan akun saya 518-204-937, jangan disimpan.", "518-204-937",
         frame="{s}"),
    _row("grouped-code-japanese", "バックアップコード「6130-2284-9071」を保管して", "6130-2284-9071", frame="{s}"),
    _row("seed-japanese-name", f"復元フレーズは「{_SEED}」です。", _SEED, frame="{s}"),
    _row("seed-bare-colon", f"seed: {_SEED}", _SEED, frame="{s}"),
    _row("seed-unnamed-after-a-colon", f"Cüzdan kelimeleri şunlar: {_SEED}", _SEED, frame="{s}"),
    _row("serial-digit-groups", "la licencia es 6120-4418-2093-7765-3301 en el equipo", "6120-4418-2093-7765-3301",
         frame="{s}"),
    _row("serial-prefix-digit-groups", "제품 키는 HQX-3381-0472-9915-6620입니다.", "HQX-3381-0472-9915-6620",
         frame="{s}"),
    _row("licence-uniform-groups", "ключ активации — 48QFE-WRTAN-ZPX4K-LOMEC, на один ПК", "48QFE-WRTAN-ZPX4K-LOMEC",
         frame="{s}"),
    _row("mixed-groups-after-a-code-word", "Код доступу до тестового акаунта: K2PW-9QXR-M4TZ", "K2PW-9QXR-M4TZ",
         frame="{s}"),
    _row("password-han", "数据库密码是 熊猫7731Xy!，别外传。", "熊猫7731Xy!", frame="{s}"),
    _row("password-bulgarian-definite", "паролата за сървъра е Звезда_4417 и не се сменя", "Звезда_4417", frame="{s}"),
    _row("password-bengali", 'রাউটারের পাসওয়ার্ড হলো "নদী4471#"', "নদী4471#", frame="{s}"),
    _row("passphrase-after-a-dash", "Парольная фраза для ключа — «серый волк 9 ест»", "серый волк 9 ест", frame="{s}"),
    _row("passphrase-its", "the gpg passphrase — it's `Maple-Comet-Bridge-27`", "Maple-Comet-Bridge-27",
         frame="{s}"),
    # Found by property 1 unseeded at 1,000 examples: a generated value with a data centre's
    # suffix, and one in full width whose `；` and `！` end sentences once split there.
    _row("signed-before-a-region-suffix", "X5iR#)ur&A(kyxHKR))Y-us21", "X5iR#)ur&A(kyxHKR))Y"),
    _row("full-width-sentence-ends-inside", "api key: " + _FULL_WIDTH_SIGNED, _FULL_WIDTH_SIGNED_ASCII),
    # Found by property 1 at 1,000 examples: one case, two runs of digits and letters no word
    # strings together (five consonants in a row).
    _row("one-case-two-digit-runs", "dwkblbas205irhk77uboihadulbf", "dwkblbas205irhk77uboihadulbf"),
    # From the blind secret60: a naming word denied, capital groups joined by dots, a word inside
    # a backup code's name (values made up here).
    _row("naming-word-denied", f"the deploy token is hex, not a commit: {_HEX32}", _HEX32, frame="{s}"),
    _row("dotted-capital-groups", "the vendor printed it on the contract as K4QX.9TRM.ZP2W.H7NV.QC3D",
         "K4QX.9TRM.ZP2W.H7NV.QC3D", frame="{s}"),
    _row("backup-code-word-inside", "Backup login code for the console: 5813-2094-6637-1408", "5813-2094-6637-1408",
         frame="{s}"),
    # From the blind secret61: a phrase quoted 35 characters after its word, and one unquoted
    # after a colon, as diceware makes them (made up here).
    _row("phrase-quoted-far", "The passphrase for the release signing GPG key is “otter lantern basil 4 rooms”.",
         "otter lantern basil 4 rooms", frame="{s}"),
    _row("diceware-after-a-colon", "Disk passphrase for the encrypted archive: tundra pickle violin harbor mantle",
         "tundra pickle violin harbor mantle", frame="{s}"),
    _row("diceware-after-is", "The master password for the shared vault is walnut gravel pepper anchor, lowercase.",
         "walnut gravel pepper anchor", frame="{s}"),
    # Property 4 at 300 examples: digits then a sign, given "using", read as a count.
    _row("given-digits-then-a-sign", "the sync job reaches the NAS as backup_svc using 000?11234567 every night",
         "000?11234567", frame="{s}"),
    # From the blind secret64 (values made up here): a password named in code (camelCase, a
    # `_PASS` variable, a closing backtick) given in prose; "now" before a chosen one; one long
    # word in small letters; a card's code and a text's one-time code.
    _row("camel-name-set-to", "In values.yaml I set grafana.adminPassword to Heron_Dusk_41.", "Heron_Dusk_41",
         frame="{s}"),
    _row("underscore-pass-is-now", "I changed docker-compose so SMTP_RELAY_PASS is now Marsh-Wren-5520.",
         "Marsh-Wren-5520", frame="{s}"),
    _row("backticked-name-to", "set `LOKI_PUSH_PASSWORD` to `tidepool-egret-73` in the promtail config",
         "tidepool-egret-73", frame="{s}"),
    _row("password-is-now", "the build box password is now Kestrel-Quay-8812.", "Kestrel-Quay-8812", frame="{s}"),
    _row("one-long-word", "the wiki admin password is lanternharborfog, all lowercase", "lanternharborfog",
         frame="{s}"),
    _row("one-long-word-assigned", "[smtp]\nuser = relay\npass = copperkettlemoon", "copperkettlemoon", frame="{s}"),
    _row("card-security-code", "Test card for the sandbox: ends 7710, CVV 593, exp 11/28", "593", frame="{s}"),
    _row("sms-code", "the SMS code I got is 604281, quick before it expires", "604281", frame="{s}"),
    # ... digits that read as a date are a code's after its name and "is" or ":" (found at
    # 1,000 examples: "the SMS code is 20290100").
    _row("two-fa-code-shaped-as-a-date", "my 2FA code: 20240115, it expires in a minute", "20240115",
         frame="{s}"),
    _row("sms-code-four-digits", "the code they texted me is 7391, is that enough?", "7391", frame="{s}"),
    _row("verification-code-zh", "验证码是583920，快点输", "583920", frame="{s}"),
    # From the blind secret69 (values made up here): "still", "currently", "again" before a
    # value, with or without a copula; grouped one-time digits; an app that shows the code.
    _row("still-word-and-digit", "the root password is still wombat7 on the old jump host", "wombat7", frame="{s}"),
    _row("currently-one-word", "The VPN password is currently meadowlarks until IT pushes the policy",
         "meadowlarks", frame="{s}"),
    _row("its-again-one-word", "they set the kiosk password back, it's again hazelnutcream", "hazelnutcream",
         frame="{s}"),
    _row("now-without-copula-ru", "Пароль от сервера теперь sobolek58", "sobolek58", frame="{s}"),
    _row("grouped-one-time-code", "ok got the SMS, it's 418 027, enter that on the console", "418 027",
         frame="{s}"),
    _row("authenticator-shows", "Google Authenticator shows 730591 right now, paste it quick", "730591",
         frame="{s}"),
    _row("long-word-as-the-password", "Log in with admin and rivermeadow as the password, then change it",
         "rivermeadow", frame="{s}"),
    _row("one-time-code-desu", "認証コードは 264018 です、すぐ入力してください", "264018", frame="{s}"),
    # From the blind probe of the first stop of 2026-12-07's second half (values made up here):
    # Thai's copula glued to the words after the password's word; a short key of one case with a
    # character twice, after its name.
    _row("thai-glued-copula", "รหัสผ่านเราเตอร์ห้องประชุมคือ k47wrtmn2q ห้ามเปลี่ยน", "k47wrtmn2q", frame="{s}"),
    _row("short-key-one-repeat", "export MAPS_API_KEY=QXRTBWQ4 before the smoke test", "QXRTBWQ4", frame="{s}"),
    _row("recovery-codes-it", "Codici di recupero del conto: 51730862 94418027 30675194", "51730862 94418027",
         frame="{s}"),
    # A naming phrase joined into a key by `_`, in JSON or a form's field, read as its prose.
    _row("key-phrase-json-vi", 'Keep `{"mật_khẩu_máy_chủ_thử_nghiệm": "bluefin42x"}` out of the repo',
         "bluefin42x", frame="{s}"),
    _row("key-phrase-json-es", 'set `"contraseña_de_la_base_de_datos": "pulpo77rojo"` only in the vault',
         "pulpo77rojo", frame="{s}"),
    _row("key-phrase-field-es", "the form posts `clave_del_wifi_de_la_oficina=marea2024sol`", "marea2024sol",
         frame="{s}"),
    # From probe5 (a blind list): a recovery phrase under its name with prose after it, the name
    # far before it; a password's name escaped in JSON (`\u5bc6\u7801`, 密码) before the value.
    _row("seed-named-then-prose", f"Seed-Phrase der Demo-Wallet, bitte ausschließlich im Safe lagern: {_SEED}",
         _SEED),
    _row("seed-named-then-prose-en", f"the recovery phrase of the demo wallet the QA team shares, kept offline: "
         f"{_SEED}", _SEED, frame="{s} is what staging restores."),
    # A warning to keep the value to oneself outweighs an id's word; a doc comment after two
    # spaces is no table's column (a wrapped token is rejoined); a spaced `-p` quoted.
    _row("id-with-secrecy-warning", f"the application ID is {_HEX40}; never put it in a public repo", _HEX40,
         frame="{s}"),
    _row("wrapped-before-code-comment", f'TELEGRAM_TOKEN = "{_B62[:12]}\n{_B62[12:35]}"  # the alerts bot', _B62[:35],
         frame="{s}"),
    _row("login-p-quoted", f'`racadm -r 10.0.0.9 -u root -p "{_HUMAN}" getsysinfo`', _HUMAN),
    _row("password-name-json-escaped", "`" + json.dumps({"note": f"库的 root 密码是 {_HUMAN} ，只在跳板机上用"}) + "`",
         _HUMAN),
    # A query's value its name calls a credential, whatever it looks like; a password chosen as a
    # hook's path, words joined with a number, letters in groups, digits in groups.
    _row("query-value-of-words", "https://hooks.example.net/run?signature=OtterLantern&n=1", "OtterLantern"),
    _row("hook-path-chosen-password", "[the hook](https://ci.example.net/hooks/Lantern$Otter1987)",
         "Lantern$Otter1987"),
    _row("hook-path-passphrase", "https://ci.example.net/webhooks/otter-maple-lantern72", "otter-maple-lantern72"),
    _row("hook-path-letter-groups", "https://ci.example.net/hooks/qwzd-pkrt-mxvb-lnfs", "qwzd-pkrt-mxvb-lnfs"),
    _row("hook-path-digit-groups", "https://ci.example.net/hooks/405178-882139-091546-667204",
         "405178-882139-091546-667204"),
    # A link's password in quotes; a header's scheme before a quoted value, a payload after it.
    _row("link-password-quoted", 'lftp ftp://deploy:"Harbor$Lights77"@ftp.example.net', "Harbor$Lights77"),
    _row("header-scheme-quoted", f'curl -H "Authorization: Splunk "{_UUID}"" -d \'{{"event": "done"}}\'', _UUID),
    # What a recovery key is "for" is no value: the key after the colon is, across a break too.
    _row("recovery-key-for-a-device", "BitLocker recovery key for DESKTOP-4QK7M: "
         "405178-882139-091546-667204\n-310582-118734-559021-774310", "-310582-118734-559021", frame="{s}"),
    # A value a line break cut: named after it (the file it is written to), a line with columns
    # read by its name, a key in groups.
    # (Each piece holds a window: no view joins lines.)
    _row("wrapped-named-after", "echo 'otter-maple-lan\ntern-oak-river72' > ~/.config/deploy/vault_pass",
         "otter-maple-lan"),
    _row("wrapped-in-columns", 'rotate      POSTGRES_PASSWORD: "quiet-harbor-\nlantern-oak-fig"', "quiet-harbor-",
         frame="{s}"),
    _row("wrapped-key-in-groups", "slmgr /ipk 73968-GF4WK-VT\n627-NWYYH-698X3", "73968-GF4WK-VT"),
    # A JWT cut right before its first dot: the header alone is base64 of JSON (found at 1,000).
    _row("jwt-cut-before-its-dot", _JWT_CUT[:-2] + "\n" + _JWT_CUT[-2:] + _JWT_REST, _JWT_CUT[:-2], frame="{s}"),
    _row("wrapped-quoted-words", "export RESTIC_PASSWORD='otter lantern maple\nharbor 77 fig!'", "harbor 77 fig!",
         frame="{s}"),
    # An element named for a password with a namespace; Indonesian's `itu` as a copula; "public"
    # in another language after a token names a place, not the token.
    _row("xml-password-namespaced", '<wsse:Password Type="https://docs.example.org/wss#PasswordText">'
         "Lantern!Otter8x</wsse:Password>", "Lantern!Otter8x"),
    _row("password-copula-indonesian", "password router kantor itu Lantern_Otter2031, jangan disebar",
         "Lantern_Otter2031", frame="{s}"),
    _row("public-place-abroad", f"no subas sk_{_B62[:32]} al repositorio público", _B62[:32], frame="{s}"),
    # From probe9 (read after its blind run): a space percent-encoded or as a character reference
    # (a recovery phrase's words); a Windows password's hashes paired, or one named NT's, whatever
    # "hash" says; a cookie's quoted value; a registry value's type before its quote; a glued `-P`
    # after a glued `-U`; words, a capital and a digit a hyphen joins; a hook's path of hex pairs.
    _row("seed-percent-spaces", "the wallet recovery phrase: " + _SEED.replace(" ", "%20").replace("o", "%6F"),
         _SEED, frame="{s}"),
    _row("seed-reference-spaces", "the wallet recovery phrase: "
         + "".join(word + (" ", "&#32;")[n % 2] for n, word in enumerate(_SEED.split())).replace("o", "&#111;"),
         _SEED, frame="{s}"),
    _row("ntlm-pair", f"impacket-wmiexec -hashes aad3b435b51404eeaad3b435b51404ee:{_HEX32} admin@10.0.0.5",
         _HEX32),
    _row("ntlm-pair-quoted", f'pth-winexe --hashes aad3b435b51404eeaad3b435b51404ee:"{_HEX32}" //10.0.0.5 cmd',
         _HEX32),
    _row("nt-hash-named", f"the NT hash of svc_backup is {_HEX32}", _HEX32, frame="{s}"),
    _row("kerberos-key-after-its-type", f"secretsdump lists ACME\\svc_sql:aes256-cts-hmac-sha1-96:{_HEX32}{_HEX32[::-1]}",
         _HEX32),
    _row("cookie-quoted", f'Cookie: PHPSESSID="{_HEX32.upper()}.node7"; Path=/app', _HEX32.upper()),
    _row("registry-typed-quoted", '"Password"=hex:"5a,1f,c3,88,0e,d2,47,b9"', "5a,1f,c3,88,0e,d2,47,b9"),
    _row("login-glued-user-and-password", "isql -Ureporter -POtter7lantern! -SDWH", "Otter7lantern!"),
    _row("memorable-hyphens", "[users] ops = Lantern-Otter-Maple4", "Lantern-Otter-Maple4"),
    _row("memorable-underscores", "the kiosk takes Harbor_quiet_Fig4_dune at boot", "Harbor_quiet_Fig4_dune"),
    _row("hook-path-hex-pairs", "https://ci.example.net/hooks/3c-9f-a1-07-be-44-d2-18", "3c-9f-a1-07-be-44-d2-18"),
    _row("hook-key-after-its-number", "https://hooks.example.net/hooks/catch/40917733/elmora7/", "/40917733/elmora7"),
    _row("hook-path-short-words", "https://ci.example.net/hooks/otter_ox_fig_7", "otter_ox_fig_7"),
    # From probe11 (read after its blind run): a recovery phrase of any length from 12 to 33 words
    # (SLIP-39's 20, Algorand's 25), with no wallet named when it is long; under its name, words
    # in any script (accents composed or not, kana between ideographic spaces).
    _row("seed-twenty-words-no-wallet", f"share 2 of 3 for the vault: {_SEED20}", _SEED20, frame="{s}"),
    _row("seed-twenty-five-quoted", f'import -m "{_SEED25}" on the node', _SEED25, frame="{s}"),
    _row("seed-accents-decomposed", f"frase semilla de la cartera de pruebas: {_SEED_NFD}", _SEED_NFD, frame="{s}"),
    _row("seed-kana-ideographic-spaces", f"ウォレットの復元フレーズ: {_SEED_KANA}", _SEED_KANA, frame="{s}"),
    _row("credential-noun-before-its-prefix", f"the token tok_{_B62[:20]} is live", f"tok_{_B62[:20]}"),
    # ... a passphrase of longer words and a number after them, after its name in Portuguese or
    # Spanish too.
    _row("passphrase-long-words-and-a-number", "the passphrase of the offsite encrypted NAS backup is "
         "marmalade lighthouse cobblestone violet 71, all lowercase", "marmalade lighthouse cobblestone violet 71",
         frame="{s}"),
    _row("senha-words", "a senha do cofre é girassol telhado caneca vermelha 12, sem acentos",
         "girassol telhado caneca vermelha 12", frame="{s}"),
    # From probe12 (a blind list aimed at the above; read after its run): a long run right after
    # what a paper says, with prose after it and a plural or two; words of nine letters; a
    # passphrase after its name in Italian, German ("lautet") and Russian, a conjunction after it.
    _row("seed-after-what-the-paper-says", f"the backup card says {_SEED20} and the date under it",
         _SEED20, frame="{s}"),
    _row("seed-long-with-plurals", f"share 3 of 5: {_SEED20} cabins {_SEED[:26]}",
         f"{_SEED20} cabins {_SEED[:26]}", frame="{s}"),
    _row("seed-nine-letters", "il portafoglio si ripristina con: " + " ".join(
        ["scrivania", "ombrello", "tartaruga", "candela", "giraffa", "pennello", "lucertola", "cammello",
         "forbici", "zucchero", "lanterna", "biscotto"]), "scrivania ombrello tartaruga candela", frame="{s}"),
    _row("passphrase-italian", "la frase segreta del disco è lupo grigio corre veloce 12, non committarla",
         "lupo grigio corre veloce 12", frame="{s}"),
    _row("passphrase-german-lautet", "der Passwortsatz für das Backup lautet roter fuchs springt hoch 4, bitte",
         "roter fuchs springt hoch 4", frame="{s}"),
    _row("passphrase-russian", "кодовая фраза для ключа: зелёный кот пьёт молоко", "зелёный кот пьёт молоко",
         frame="{s}"),
    _row("passphrase-spanish-then-y", "la frase de contraseña del gpg es tortuga roja come pera y caduca pronto",
         "tortuga roja come pera", frame="{s}"),
    # Written after probe12's blind run (read after it): a phrase's words as its list writes them
    # (kana's voicing marks, hangul's jamo apart: secret_view composes them), in kana, hanzi or
    # hangul spaced after a lead; after what restores with them or how many they are; a path's
    # slash as a lead; a letter of another script as a character reference.
    _row("seed-kana-marks-apart", "ウォレットの復元: " + unicodedata.normalize("NFD", _SEED_KANA.replace("さくら", "だんご")),
         unicodedata.normalize("NFD", "だんご"), frame="{s}"),
    _row("seed-hangul-jamo-apart", "지갑 복구: " + _SEED_HANGUL, _SEED_HANGUL, frame="{s}"),
    _row("seed-hanzi-after-restore", f"恢复的时候输入：{_SEED_HANZI}，然后检查余额。", _SEED_HANZI, frame="{s}"),
    _row("seed-after-restore-with", f"to restore with: {_SEED}", _SEED, frame="{s}"),
    _row("seed-after-how-many-words", f"sign in with the 12 words {_SEED}.", _SEED, frame="{s}"),
    _row("seed-after-a-path-slash", f"https://ci.example.net/restore/{_SEED20} by hand", _SEED20, frame="{s}"),
    _row("passphrase-reference-cyrillic", "кодовая фраза: &#1079;елёный кот пьёт молоко", "елёный кот пьёт молоко",
         frame="{s}"),
    # ... and after probe13's: a phrase where a wallet is named after a verb that gives it
    # ("type <words> and ..."), numbered, accented, in brackets; a named phrase's hangul words of
    # three syllables; a passphrase after a password's name in Polish or Swedish, or before a
    # bracket.
    # ... and a value named as an id once is still a credential where a credential's word names it.
    _row("id-repeated-as-a-token", f"the request id is {_B62[3:27]}; export API_TOKEN={_B62[3:27]} before the run",
         _B62[3:27], frame="{s}"),
    _row("id-repeated-after-secrecy", f"the run id is {_B62[5:29]}, keep it secret: {_B62[5:29]} unlocks the runner",
         _B62[5:29], frame="{s}"),
    _row("seed-after-a-verb", f"in the wallet app, type {_SEED} and then confirm the PIN", _SEED, frame="{s}"),
    _row("seed-numbered-unnamed", "copied from the backup card: "
         + " ".join(f"{n}. {word}" for n, word in enumerate(_SEED20.split(), 1)), "1. ladder 2. orchid 3. pencil",
         frame="{s}"),
    _row("seed-accented-unnamed", f"para la cuenta de pruebas: {_SEED_ES} y nada más", _SEED_ES, frame="{s}"),
    _row("seed-in-brackets", f"the words I copied [{_SEED20}] may be out of order", _SEED20, frame="{s}"),
    _row("seed-hangul-three-syllables", "복구 문구 " + _SEED_HANGUL3 + " 이거 입력해 주세요", _SEED_HANGUL3, frame="{s}"),
    _row("passphrase-polish-to", "hasło do serwera testowego to modry ptak lata nisko 7, nie zapisuj go",
         "modry ptak lata nisko 7", frame="{s}"),
    _row("passphrase-swedish-ar", "lösenordet till labbet är blå katten dricker mjölk varje morgon",
         "blå katten dricker mjölk", frame="{s}"),
    _row("passphrase-before-a-bracket", "the passphrase for the signing key is quiet harbor lamp violin (lowercase)",
         "quiet harbor lamp violin", frame="{s}"),
    _row("address-said-a-private-key", f"address {_B62[:30]}{_HEX32[:21]} is the private key of the hot wallet",
         f"{_B62[:30]}{_HEX32[:21]}", frame="{s}"),
]


@pytest.mark.parametrize(("message", "value"), CLASSES)
def test_class_prints_no_window(message: str, value: str) -> None:
    for role in ("user", "assistant"):
        outputs = all_outputs([(role, message)])
        assert not leaks(outputs, value), (ascii(message), role, leaks(outputs, value))


# -- property 3b: a phrase a line break wraps ---------------------------------------------------

# The phrases of CLASSES (four words or more), each a line of its message.
PHRASES = [p for p in CLASSES if len(p.values[1].split()) >= 4 and p.values[1] in p.values[0]
           and "\n" not in p.values[0] and p.values[0].index(p.values[1]) + len(p.values[1]) > 48]


@st.composite
def wrapped_phrase(draw: st.DrawFn) -> tuple[str, str, str]:
    """A phrase of CLASSES with a line break where a hard wrap may put it: past a terminal's
    width (md.WRAP_WIDTH), for a space, or inside a word (between two letters or digits; not
    inside what a terminal shows as one character, a letter and its mark or a syllable's jamo,
    nor before a sign)."""
    message, value = draw(st.sampled_from(PHRASES)).values
    nfc = functools.partial(unicodedata.normalize, "NFC")
    at = message.index(value)
    places = [k for k in range(1, len(value)) if len(nfc(message[:at + k])) > md.WRAP_WIDTH
              and (value[k] == " " or value[k - 1:k + 1].isalnum()
                   and nfc(value[:k]) + nfc(value[k:]) == nfc(value))]
    k = draw(st.sampled_from(places))
    wrapped = value[:k] + "\n" + value[k + (value[k] == " "):]
    return draw(st.sampled_from(["user", "assistant"])), message.replace(value, wrapped), value


@SETTINGS
@given(wrapped_phrase())
def test_a_wrapped_phrase_prints_no_window(case: tuple[str, str, str]) -> None:
    role, message, value = case
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, value), (ascii(message), role, leaks(outputs, value))


# -- property 4: a chosen password in a password's place ---------------------------------------

# A key beside a word that is no id (ID_KEYS) stays a credential's name.
PASSWORD_KEY_PLACES = ["`const encryptionKey = \"{pw}\"`", "X-Api-Key: {pw}"]
# What a login or a lock is given "with", without a word for a password.
GIVEN_PLACES = ["the sync job reaches the NAS as backup_svc using {pw} every night", "the kiosk unlocks with {pw}"]
# Places a password stands in whatever it looks like: a tool's option, a `.pgpass` line, a
# pipe into a reader, a login call in code, prose in several languages. Written apart from
# the probes the rules were fixed on (other tools of the same kinds, other wordings).
PASSWORD_PLACES = [
    "`mysqladmin -u root -p{pw} status`", "`mariadb-dump -u backup -p{pw} app`",
    "`mongorestore --host db -u admin -p {pw} dump/`", "`bcp app.dbo.orders out o.dat -S db -U sa -P {pw}`",
    "`ldapmodify -x -D cn=admin,dc=corp -w {pw} -f users.ldif`", "`redis-cli -a {pw} --scan`",
    "`plink -ssh deploy@host -pw {pw} uptime`", "`unzip -P {pw} backup.zip`", "`7za x -p{pw} backup.7z`",
    "`ssh-keygen -p -P {pw} -f deploy_key`", "`openssl pkcs12 -export -in c.pem -passout pass:{pw}`",
    "`smbclient -L nas -U admin%{pw}`", "`podman login quay.io -u bot -p {pw}`",
    "`*:*:*:postgres:{pw}` in ~/.pgpass", "`echo '{pw}' | sudo -S systemctl restart app`",
    "`echo '{pw}' | gpg --batch --pinentry-mode loopback --passphrase-fd 0 -d backup.gpg`",
    "`conn.login('ops', '{pw}')`", "`auth=('deploy', '{pw}')`",
    "the root password is {pw}", "Kennwort: {pw}", "a senha é {pw}", "wachtwoord = {pw}",
    "the login for the test VM is ops / {pw}", '`mysqli_connect("db", "app", "{pw}", "shop")`',
    "`net use S: \\\\nas\\share /user:corp\\ops {pw}`", "the signing secret is {pw}",
    *PASSWORD_KEY_PLACES, *GIVEN_PLACES,
]


@st.composite
def chosen_passwords(draw: st.DrawFn) -> str:
    """A password as people choose one: words, digits and a sign, words and a year, or a run of
    mixed signs; at least 12 characters, so that a window fits, and never only letters (nor
    opening with `$`, which a shell reads as a variable)."""
    words = st.sampled_from(["Harbor", "sunset", "Quartz", "maple", "Falcon", "river", "Tango", "orbit"])
    signs = st.sampled_from(list("!@#$^*-_+=.?~"))
    made = draw(st.one_of(
        st.tuples(words, st.integers(0, 9999).map(str), signs, words).map("".join),
        st.tuples(words, words, st.integers(1950, 2039).map(str)).map("".join),  # `HarborQuartz1987`
        st.text(string.ascii_letters + string.digits + "!@#^*_+=.?~", min_size=12, max_size=24)))
    return made if any(c.isdigit() for c in made) and len(made) >= 12 else made + "2024!x9Q"


@SETTINGS
@given(st.sampled_from(PASSWORD_PLACES), chosen_passwords(), st.sampled_from(["user", "assistant"]))
def test_a_chosen_password_in_its_place_is_withheld(place: str, password: str, role: str) -> None:
    # README's residuals: a setting's shape (`-p ab=0123`); a stand-in, one character repeated,
    # anywhere (`00000000000A`, found at 1,000 examples), under MIN_ENTROPY bits a character after
    # a key's name (`000000000001`, as `xxxxxxxx`); given "with", a thing's name's shape
    # (`Harbor0+sunset` as `mTLS+JWT`), a setting's or a count's (digits before a word), a reference.
    assume(not re.match(r"[a-z]{2,}=", password))
    assume(md.shannon(password) >= 1)
    assume(place not in PASSWORD_KEY_PLACES or md.shannon(password) >= md.MIN_ENTROPY)
    assume(place not in GIVEN_PLACES or not (md.NAMED_THING.fullmatch(password) or "=" in password
                                             or password.isdigit() or md.shannon(password) < md.MIN_ENTROPY
                                             or re.fullmatch(r"[^\w]\d+", password)))  # a reference: #1234
    message = RULE.replace("{s}", place.replace("{pw}", password))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, password), (ascii(message), leaks(outputs, password))


# -- property 5: a password made to a policy or as a memorable one, wherever it stands --------

# Places with no word for a password near: a verb, an apposition, a code span, another language.
POLICY_PLACES = ["type {pw} at the vault prompt", "it works again with {pw} since Monday",
                 "use `{pw}` to get into the router", "({pw})", "\"{pw}\" on the shared box",
                 "用{pw}登录测试环境", "die Zeichenfolge {pw} im Tresor", "la cadena «{pw}» del router"]


@st.composite
def policy_passwords(draw: st.DrawFn) -> str:
    """Capitals, small letters, digits and a sign of `!#$&*?@^~` between two parts (`%` and two
    hex digits read as an escape). Before `@` a capital or a digit opens it: a small letter's word
    at a name reads as a user at a host (`ops@Jump01`), as one in one case after `@` does."""
    part = st.text(string.ascii_letters + string.digits, min_size=3, max_size=9)
    sign = draw(st.sampled_from(list("!#$&*?@^~")))
    made = draw(part) + sign + draw(part)
    made = f"Q{made}Qz" if sign == "@" else made
    for need in (string.ascii_uppercase, string.ascii_lowercase, string.digits):
        if not set(made) & set(need):
            made += draw(st.sampled_from(need))
    return made + "Qz7xQz7xQz7x"[:max(0, 12 - len(made))]


# ... or a memorable password: words and a number a dot joins.

@st.composite
def memorable_passwords(draw: st.DrawFn) -> str:
    """Three to five words of 3 to 10 letters, one opening with a capital, and a number of 3 or 4
    digits that is no year, joined by dots in any order, a sign after them or not; the last piece
    no file's extension (four letters of one case)."""
    word = st.text(string.ascii_lowercase, min_size=3, max_size=10)
    words = draw(st.lists(word, min_size=3, max_size=5))
    capital = draw(st.integers(0, len(words) - 1))
    words[capital] = words[capital].title()
    number = str(draw(st.integers(100, 9999).filter(lambda n: not 1950 <= n <= 2049)))
    pieces = draw(st.permutations([*words, number]))
    if len(pieces[-1]) <= 4 and pieces[-1].isalpha() and not pieces[-1].istitle():  # the number ends it
        at = pieces.index(number)
        pieces[at], pieces[-1] = pieces[-1], number
    return ".".join(pieces) + draw(st.sampled_from(["", "!", "?", "#"]))


@SETTINGS
@given(st.sampled_from(POLICY_PLACES), st.one_of(policy_passwords(), memorable_passwords()),
       st.sampled_from(["user", "assistant"]))
def test_a_made_password_is_withheld_anywhere(place: str, password: str, role: str) -> None:
    message = RULE.replace("{s}", place.replace("{pw}", password))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, password), (ascii(message), leaks(outputs, password))


# -- property 6: a short generated value, wherever it stands ----------------------------------

@st.composite
def alternating_values(draw: st.DrawFn) -> str:
    """8 to 15 characters whose letters (runs of one or two, two or more of each case) and digits
    (one at a time) alternate (`K7m4Q9z2`); a dash may join two parts."""
    runs = draw(st.lists(st.text(string.ascii_letters, min_size=1, max_size=2), min_size=4, max_size=7))
    digits = draw(st.lists(st.sampled_from(string.digits), min_size=len(runs), max_size=len(runs)))
    made = "".join(run + digit for run, digit in zip(runs, digits))
    if made.lower() == made or made.upper() == made:
        made = "Q" + made[1:] if made.lower() == made else "q" + made[1:]
    made = (made + "x7Q9z")[:max(8, min(len(made), 15))]
    dash = draw(st.integers(0, len(made) - 1))
    return made if not 3 < dash < len(made) - 3 else made[:dash] + "-" + made[dash:]


@SETTINGS
@given(st.sampled_from(POLICY_PLACES), alternating_values(), st.sampled_from(["user", "assistant"]))
def test_a_short_generated_value_is_withheld_anywhere(place: str, value: str, role: str) -> None:
    assume(md.shannon(value.replace("-", "")) >= md.SHORT_ENTROPY)  # a repeat is no generated value
    assume(sum(map(str.isupper, value)) > 1 < sum(map(str.islower, value)))
    assume(not md.SVG_PATH.fullmatch(value))  # an SVG path's letters and numbers pass (README)
    message = RULE.replace("{s}", place.replace("{pw}", value))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, value), (ascii(message), leaks(outputs, value))


# -- property 6b: a short key of one case, by its name ----------------------------------------

KEY_PLACES = ["export {name}={v}", "{name}: {v}", "`{{\"{name}\": \"{v}\"}}`", "{name} = \"{v}\""]
KEY_NAMES = ["W3W_API_KEY", "MAPS_API_KEY", "apiKey", "ACCESS_TOKEN", "client_secret", "SERVICE_TOKEN"]


@st.composite
def short_keys(draw: st.DrawFn) -> str:
    """8 to 15 capitals (or small letters) and digits, at least one of each, all but one
    character different (`NFADYNC7`): a short generated key; the entropy of its length is less
    than MIN_ENTROPY, which a longer one reaches."""
    letters = draw(st.sampled_from([string.ascii_uppercase, string.ascii_lowercase]))
    size = draw(st.integers(8, 15))
    chars = draw(st.lists(st.sampled_from(letters + string.digits), min_size=size - 1, max_size=size - 1,
                          unique=True))
    chars.insert(draw(st.integers(0, len(chars))), draw(st.sampled_from(chars)))
    return "".join(chars)


@SETTINGS
@given(st.sampled_from(KEY_PLACES), st.sampled_from(KEY_NAMES), short_keys(), st.sampled_from(["user", "assistant"]))
def test_a_short_key_after_its_name_is_withheld(place: str, name: str, value: str, role: str) -> None:
    assume(not value.isalpha() and not value.isdigit())
    # ... whose letters read as no word's: few vowels, a third of their pairs rare (README: a
    # quarter of drawn keys of 8 are not, a fifth of 10)
    assume(md.unworded(value))
    message = RULE.replace("{s}", place.format(name=name, v=value))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, value), (ascii(message), leaks(outputs, value))


# -- property 6c: key material as a literal's escaped bytes -------------------------------------

BYTES_PLACES = ["app.secret_key = {v}", "`SIGNING = {v}` in settings.py", "the old key was {v} before rotation",
                "pass {v} to the HMAC", "密钥是 {v}，不要改"]


@SETTINGS
@given(st.sampled_from(BYTES_PLACES), st.integers(0, 2**32), st.sampled_from([16, 24, 32, 48, 64]),
       st.sampled_from(["user", "assistant"]))
@example("`SIGNING = {v}` in settings.py", 2790, 16, "user")  # a `'` byte inside `b"..."` (found at 1,000)
@example("app.secret_key = {v}", 2011928, 16, "user")  # an escaped `\'` among the bytes (found at 1,000)
def test_drawn_bytes_in_a_literal_are_withheld(place: str, seed: int, size: int, role: str) -> None:
    """A key as Python prints drawn bytes (`b'\\xfdq\\xcd...'`): escapes, printable bytes, spaces
    and quotes among them."""
    value = repr(random.Random(seed).randbytes(size))
    message = RULE.replace("{s}", place.format(v=value))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, value), (ascii(message), leaks(outputs, value))


# -- property 7: the value of an option named for a password, whatever it looks like -----------

@st.composite
def password_options(draw: st.DrawFn) -> tuple[str, str]:
    """An option whose name holds a password's word, in kebab, snake, camel, Pascal or Windows style,
    and a line giving it a value: a chosen password, or a passphrase of words in quotes. `pass`
    glued to a small letter is another word (`--bypass`, `/compass:`)."""
    before = draw(st.sampled_from(["", "db", "admin", "new", "root", "vault", "store"]))
    word = draw(st.sampled_from(["password", "passwd", "passphrase", "passcode", "pass"]))
    style = draw(st.sampled_from(["kebab", "snake", "camel", "pascal", "windows"]))
    name = {"kebab": "--" + "-".join(filter(None, [before, word])),
            "snake": "--" + "_".join(filter(None, [before, word])),
            "camel": "-" + before + (word.title() if before else word),
            "pascal": "-" + before.title() + word.title(),
            "windows": "/" + before + (word.title() if before and word == "pass" else word)}[style]
    if style != "windows" and draw(st.booleans()):
        words = draw(st.lists(st.sampled_from(["maple", "orbit", "quiet", "river", "lantern", "north",
                                               "copper", "tulip"]), min_size=3, max_size=5))
        value, quote = " ".join(words), draw(st.sampled_from(["'", '"']))
        return value, f"`provision {name} {quote}{value}{quote} --host kiosk`"
    value = draw(chosen_passwords())
    assume("'" not in value and '"' not in value)
    joint = ":" if style == "windows" else draw(st.sampled_from(["=", " "]))
    return value, f"`provision {name}{joint}{value} --host kiosk`"


@SETTINGS
@given(password_options(), st.sampled_from(["user", "assistant"]))
def test_a_password_options_value_is_withheld_whatever_it_looks_like(case: tuple[str, str], role: str) -> None:
    value, place = case
    message = RULE.replace("{s}", place)
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, value), (ascii(message), leaks(outputs, value))


@st.composite
def password_variables(draw: st.DrawFn) -> tuple[str, str]:
    """A variable whose name holds a password's word as any piece (`PASS_SMTP`, `db_pw_prod`,
    `MOT_DE_PASSE_ADMIN`), no piece after it a setting's, given a chosen password; `pw` only as
    the last piece."""
    pieces = st.lists(st.sampled_from(["db", "smtp", "admin", "prod", "relay", "ldap", "main", "backup", "jira"]),
                      max_size=2)
    before, after = draw(pieces), draw(pieces)
    word = draw(st.sampled_from(["password", "passwd", "pass", "pwd", "passphrase", "pw", "secret",
                                 "passwort", "kennwort", "mot_de_passe", "contrasena"]))
    if word == "pw":  # last only: `PW_*` are Playwright's, `E2E_PW_BROWSER` too
        before, after = before or ["db"], []
    name = "_".join([*before, word, *after])
    return draw(chosen_passwords()), name.upper() if draw(st.booleans()) else name


@SETTINGS
@given(password_variables(), st.sampled_from(["`export {n}={v}`", "{n}={v} in the env file", "?{n}={v}&lang=de"]),
       st.sampled_from(["user", "assistant"]))
def test_a_password_variables_value_is_withheld_whatever_it_looks_like(case: tuple[str, str], place: str,
                                                                       role: str) -> None:
    value, name = case
    assume(not value.startswith("$"))
    message = RULE.replace("{s}", place.format(n=name, v=value))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, value), (ascii(message), leaks(outputs, value))


# -- property 8: a code that opens a door, a lock, a safe or an alarm -----------------------------

# What a code opens, and where it is given: after a copula, a colon, a verb of keying it in, "with".
# A code before its thing ("4410 is the side door's") is README's residual, as are three digits.
ACCESS_THINGS = ["side door", "loading-dock gate", "bike lock", "key safe", "server room door", "gym locker",
                 "alarm panel", "office safe", "storage cage", "garage keypad", "padlock on the shed"]
ACCESS_PLACES = ["the {thing} code is {v}", "{thing}: {v}", "the {thing} opens with {v}",
                 "enter {v} on the {thing}", "the {thing} combination is {v}", "for the {thing}, dial {v} then wait",
                 "the {thing} was reset to {v} last week", "der Code für die Tür ist {v}",
                 "le code du portail est {v}", "la combinación del candado es {v}"]


@st.composite
def access_codes(draw: st.DrawFn) -> str:
    """Four to eight digits (a year's too), or a dial's numbers in two digits."""
    return draw(st.one_of(st.integers(1000, 99_999_999).map(str),
                          st.lists(st.integers(10, 99).map(str), min_size=3, max_size=4).map("-".join)))


@SETTINGS
@given(st.sampled_from(ACCESS_PLACES), st.sampled_from(ACCESS_THINGS), access_codes(),
       st.sampled_from(["user", "assistant"]))
def test_an_access_code_in_its_place_is_withheld(place: str, thing: str, code: str, role: str) -> None:
    message = RULE.replace("{s}", place.replace("{thing}", thing).replace("{v}", code))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, code), (ascii(message), leaks(outputs, code))


# One-time codes: a login's code by text or app, a card's security code, three to eight digits.
ONE_TIME_PLACES = ["the SMS code is {v}", "my 2FA code: {v}", "the OTP they sent is {v}, hurry",
                   "CVV {v}", "the card's CVC is {v}", "enter verification code {v} on the login page",
                   "der Bestätigungscode ist {v}", "验证码是{v}", "認証コードは{v}です"]


# Five digits and more: a shorter code may equal a count an output prints (found at 1,000
# examples: "146" in lint's "(146 bytes)"); the class rows hold three and four digits.
@SETTINGS
@given(st.sampled_from(ONE_TIME_PLACES), st.integers(10_000, 99_999_999).map(str),
       st.sampled_from(["user", "assistant"]))
def test_a_one_time_code_in_its_place_is_withheld(place: str, code: str, role: str) -> None:
    message = RULE.replace("{s}", place.replace("{v}", code))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, code), (ascii(message), leaks(outputs, code))


# -- property 9: a security question's answer -------------------------------------------------

# A question named beside its answer, and the answer given after it; an answer as people type one:
# a name or place in capitals, or a word with a digit. One named nowhere (a pet's name alone) is
# README's residual, as is an answer in small letters.
ANSWER_PLACES = ["the security question answer for the bank is {v}", "maiden name for the registrar: {v}",
                 "recovery question on the Apple ID -> {v}", "the memorable word was changed to {v}",
                 "for the first pet question I put {v} on the payroll portal",
                 "la respuesta secreta del banco es {v}", "Sicherheitsfrage: {v}"]


@st.composite
def answers(draw: st.DrawFn) -> str:
    """A capitalised name of five to twelve letters, maybe two, or a small word and digits."""
    name = st.text(string.ascii_lowercase, min_size=4, max_size=11).map(lambda w: w.capitalize())
    return draw(st.one_of(name, st.tuples(name, name).map(" ".join),
                          st.tuples(st.text(string.ascii_lowercase, min_size=4, max_size=9),
                                    st.integers(1, 99).map(str)).map("".join)))


@SETTINGS
@given(st.sampled_from(ANSWER_PLACES), answers(), st.sampled_from(["user", "assistant"]))
def test_a_security_answer_in_its_place_is_withheld(place: str, answer: str, role: str) -> None:
    message = RULE.replace("{s}", place.replace("{v}", answer))
    outputs = all_outputs([(role, message)])
    assert not leaks(outputs, answer), (ascii(message), leaks(outputs, answer))


SHA = _chars("sha", 40, "hex")
_KSUID = ksuid(1_790_000_000, _rng("ksuid").getrandbits(128))  # of 2026
_JWT = ".".join(base64.urlsafe_b64encode(part).decode().rstrip("=") for part in (
    b'{"alg":"HS256","typ":"JWT"}', b'{"iss":"example","ref":"project","role":"service_role","iat":1700000000}',
    base64.b64decode(_chars("jwt-signature", 43, "base64") + "=")))
_B64 = _chars("cookie", 150, "base64url")  # a Fernet token's alphabet, padded
_B64_KEY = base64.b64encode(_rng("b64key").randbytes(32)).decode()
ULID_VALUE = "01" + "".join(_rng("ulid").choice(CROCKFORD) for _ in range(24))
FINGERPRINT = "SHA256:" + base64.b64encode(_rng("fp").randbytes(32)).decode().rstrip("=")
_BASE58_KEY = "".join(_rng("base58").choice("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")
                      for _ in range(44))
IPFS_CID = "Qm" + "".join(_rng("cid").choice("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz") for _ in range(44))
BTC_ADDRESS = "bc1q" + "".join(_rng("btc").choice("qpzry9x8gf2tvdw0s3jn54khce6mua7l") for _ in range(38))
ETH_ADDRESS = "0x" + _chars("eth", 40, "hex")
ETH_TX = "0x" + _chars("eth-tx", 64, "hex")
NODE_ID = base64.b64encode(b"Order:437900").decode()
CURSOR = base64.b64encode(b'{"pk": "tenant-17", "rk": "9d2549100bdb"}').decode()
AGE_RECIPIENT = "age1" + "".join(_rng("age").choice("qpzry9x8gf2tvdw0s3jn54khce6mua7l") for _ in range(58))
_EXTENSION = "".join(_rng("extension").choices("abcdefghijklmnop", k=32))
JWT_HEADER = base64.urlsafe_b64encode(b'{"alg":"RS256","typ":"JWT","kid":"k1"}').decode().rstrip("=")
LOOKALIKES = [
    # Settings under a key that opens with a password's word, text after the word that is no
    # password (a command, a label, a place), numbers glued to a colon that are no codes.
    # Letters of an abbreviation in groups of several lengths.
    _row("letters-of-two-lengths", "`token_type=brr-ghjkl-mnp-qrstv` is sent by the test server", "ghjkl-mnp"),
    # ... a word of many consonants (a React key, a run of three groups), the alphabet as a stand-in.
    _row("react-key-word", '`<Panel key="synchronization" title="Sync" />`', "synchronization"),
    _row("three-groups-of-four", "`key: prod-sync-http` routes the job", "prod-sync-http"),
    # ... a keyboard's row typed as a stand-in; a browser extension's id, its hex in a to p.
    _row("keyboard-row-stand-in", "the form's placeholder is qwertyuiopasdfghjkl for now", "qwertyuiopasdfghjkl"),
    _row("extension-id", f"the Chrome extension id is {_EXTENSION}, allow it", _EXTENSION),
    # ... an authenticator's GUID (AAGUID), PostHog's key a page embeds, bytes in order (a table),
    # a count of tokens.
    _row("aaguid", f"YubiKey authenticators report AAGUID {_UUID}; the allowlist matches on it", _UUID),
    _row("posthog-project-key", f"the web app embeds phc_{_chars('phc', 43)} for analytics", _chars("phc", 43)),
    _row("byte-table-in-order", f"the lookup table is [{', '.join(map(str, range(0, 256, 8)))}]", "0, 8, 16, 24"),
    _row("key-phrase-of-a-hash", "`user_password_hash: 5f4dcc3b5aa765d61d8327deb882cf99` in the fixture",
         "5f4dcc3b5aa765d61d8327deb882cf99"),
    _row("masked-after-its-head", '`"CLERK_SECRET_KEY": "sk_test_••••••••••••••••••••"` in the shared example env',
         "sk_test_"),
    _row("key-phrase-of-a-setting", "`session_cookie_max_age_days: 30000000` for the kiosk", "30000000"),
    _row("token-count", "worker_tokens=5976238, reviewer_tokens=606532 in the last run", "5976238"),
    # ... an id's label or word before a prefixed hex, a module's hash in pieces, a public key's
    # name, a pattern, a file's name with a sign or a digit, hex after an event's dot, a UUID under
    # a snake_case name (the fifth stop's scan, blind lists and review).
    _row("request-id-label", f"`request_id: req_{_HEX32}` in the client's debug log", _HEX32),
    _row("request-id-header", f"`(b'x-request-id', b'req_{_HEX32}')` in the client's debug log", _HEX32),
    _row("go-sum-hash", "`github.com/frankban/quicktest v1.14.6 h1:FZvbOBFD3B90Alb+jWrt6kSfIQuGtT3wHPgpQwwuM+4=`",
         "FZvbOBFD3B90Alb"),
    _row("prefixed-id-after-its-word", f"`job id job_{_HEX32}` restarted twice", _HEX32),
    # An order's number in another language; a hash named by an aside after a comma.
    _row("order-number-german", f"Bestellnummer {_UUID} wurde doppelt verbucht.", _UUID),
    _row("commit-named-by-an-apposition", f"fixed in {SHA}, the commit that added the retry", SHA),
    _row("hash-named-by-an-aside",
         f"the cache entry ends in {_HEX32}, which is just the hash of package-lock.json", _HEX32),
    # A transcript's own ids (Anthropic's messages and tool calls), public as Stripe's objects are.
    _row("anthropic-tool-use-id", f"the tool call toolu_01{_chars('toolu', 22)} errored twice",
         f"toolu_01{_chars('toolu', 22)}"),
    # Names of words and numbers: their letters pair as words do (rare_pairs).
    _row("name-with-numbers-aarch64", "the image targets `aarch64UnknownLinuxGnu` only",
         "aarch64UnknownLinuxGnu"),
    _row("name-with-numbers-utf8mb4", "the table collation is `utf8mb4UnicodeCi` everywhere", "utf8mb4UnicodeCi"),
    _row("pinyin-name-with-a-number", "the helper `yonghuXinxi3Biao` reads the third user table",
         "yonghuXinxi3Biao"),
    _row("name-with-numbers-sha256", "sign with `sha256WithRSAEncryption` as the spec asks",
         "sha256WithRSAEncryption"),
    # A request's id under its abbreviation or its word in another language; an AI tool's session
    # as a UUID; a path between HTML character references (SpecStory's); a stand-in's words.
    _row("request-id-abbreviated", f"`[req:{_HEX32[:16]}] token validation failed: expired`", _HEX32[:16]),
    _row("request-id-rid", f"`rid={_HEX32}` in the access log", _HEX32),
    _row("request-id-chinese", f"请求 {_UUID} 的签名校验失败", _UUID, RULE_ZH),
    _row("session-uuid", f"`claude --resume` picks up session {_UUID} where it stopped", _UUID),
    _row("path-between-character-references", "&#96;inc/extras.php&#96; - Fixed return type", "inc/extras.php"),
    _row("stand-in-changeme-words", "`DB_PASSWORD=changeme-in-prod` in .env.example is a placeholder",
         "changeme-in-prod"),
    _row("public-key-hex-name", f"`server_public_key_hex: {_HEX32}{_HEX32}`", _HEX32),
    _row("media-file-digit-extension", "the clip `Sc2i_oMXJZ6.mp4` has no audio track", "oMXJZ6"),
    _row("event-name-hex-after-a-dot", "`kubectl get events` shows web-d5e8dfd9d5-c1o08.e254f1e06645c019 as Warning",
         "e254f1e06645c019"),
    _row("css-selector-classes", "scrape `div.BNeawe.s3v9rd.AP7Wnd` for the snippet text", "BNeawe"),
    _row("mktemp-name", "the here-document lands in `tmp.Xk9qL2mZ7p` under $TMPDIR", "Xk9qL2mZ7p"),
    _row("minted-cache-file", "minted writes `5F2C9A1B8E7D6C5B4A39281706F5E4D3.pygtex` per listing", "5F2C9A1B"),
    _row("token-pattern", "the scanner's pattern `ghp_[A-Za-z0-9]{36}` for GitHub's tokens", "[A-Za-z0-9]{36}"),
    _row("webpack-runtime-file", "`runtime~main.8e0b7c1f.js` is inlined into the HTML", "runtime~main"),
    _row("debian-package-file", "`libssl3_3.0.11-1~deb12u2_amd64.deb` is the patched one", "deb12u2"),
    _row("uuid-in-a-snake-key", '`"transcript_uuid_at_start": "3e449b91-ddf2-4fd6-a3f6-c051142b7e90"`', "3e449b91"),
    _row("alphabet-stand-in", "`api_key=abcdefghijklmnopqrstuvwxyz` until the vendor sends one", "ghijklmnop"),
    _row("key-attribute-iterations", "`PBKDF2_PASSWORD_ITERATIONS=310000` is what the docs suggest", "310000"),
    _row("key-attribute-timeout", "`pin_timeout=30000` for the kiosk", "30000"),
    _row("key-playwright-setting", "`PW_TEST_HTML_REPORT_OPEN=never` in CI", "never"),
    _row("query-toggle", "see https://app.example.org/prefs?show_password_hint=1&tab=security", "tab=security"),
    _row("passphrase-command", "to change the passphrase: `ssh-keygen -p -f ~/.ssh/id_rsa` works", "ssh-keygen -p"),
    _row("password-label", 'the German label reads Passwort "Passwort vergessen" on the login page', "Passwort vergessen"),
    _row("password-is-stored", "The passphrase is stored in the team vault and rotated yearly.", "stored in the team vault"),
    _row("password-see-vault", "Password: see the shared vault entry.", "see the shared vault entry"),
    _row("password-compound", "Der Passwort-Ablauf ist auf Freitag verschoben worden.", "auf Freitag verschoben",
         "{s}"),
    _row("password-identifier-colon", "The error maps to wrong_password: show the retry hint instead.",
         "show the retry hint", "{s}"),
    _row("password-again", "After the reset the password is again accepted by the old client.", "again accepted",
         "{s}"),
    _row("password-words-to-before", "I swapped in password: abc before sharing the log.", "abc before sharing",
         "{s}"),
    _row("password-count", "The password is eight characters at minimum.", "eight characters at minimum", "{s}"),
    _row("k8s-secret-name", 'The pod waits: secret "orders-db-credentials" not found in namespace prod.',
         "orders-db-credentials", "{s}"),
    _row("git-cat-file", "git cat-file -p 3f9c2e71a0b45d8e6c1f7a29b0d4e5c6f8a1b2c3 | head -5", "3f9c2e71a0b45d8e",
         "{s}"),
    _row("admin-path-markup", '<.link navigate={~p"/admin"} class="text-slate-600 hover:text-slate-800">',
         "text-slate-800", "{s}"),
    # Found by a review of this change: postal PIN codes, ports and ids glued to a colon, menus.
    _row("indian-pin-code", '`{"city": "Bengaluru", "pin_code": "560034"}` in the fixture', "560034"),
    _row("port-glued", "the door service runs on door-svc:9000 now", "9000", "{s}"),
    _row("line-glued", "see lock.rs:1042 for the door check", "1042", "{s}"),
    _row("menu-path", "The menu path is Admin / Users2 in the old UI.", "Users2", "{s}"),
    _row("servo-pulse-width", "`SERVO_PW=1500` centres the servo", "1500"),
    _row("password-label-quoted", 'Password strength: "Very strong" shows in green.', "Very strong", "{s}"),
    _row("passphrase-prose", "The password is part of the connection string.", "part of the connection",
         "{s}"),
    _row("colon-time", "the door code changes at 10:30 every night", "10:30"),
    _row("colon-port", "the door controller listens on localhost:8080 today", "localhost:8080"),
    _row("wrapped-link", "read https://docs.example.org/guide/\nsetup.html before the release", "setup.html"),
    # Found by a review: links with encoded spaces, a PIN key holding a date and time, names that
    # open with a code's words but go on (`ACCESS_CODE_TTL_MS`), a private key's file.
    _row("link-encoded-space-status", "see https://gcc.gnu.org/wiki/OpenACC/Implementation%20Status#status-12",
         "Status#status-12"),
    _row("link-encoded-space-query", "the docs search is https://docs.example.net/search?q=release%20notes%20v2#section-3",
         "v2#section-3"),
    _row("pin-key-date-time", "`NIGHTLY_PIN=202401151230` stamps the nightly build", "202401151230"),
    _row("access-code-ttl-name", "`ACCESS_CODE_TTL_MS=86400000` sets a day", "86400000"),
    _row("backup-key-id-name", "`BACKUP_KEY_ID=7F3A9C21` names the vault entry", "7F3A9C21"),
    _row("recovery-key-version-name", "`RECOVERY_KEY_VERSION=20240115` is the schema date", "20240115"),
    _row("private-key-file-zh", "私钥位置: `~/.ssh/id_ed25519`，公钥在同一目录", "~/.ssh/id_ed25519"),
    # Beside the one-time codes and the long chosen word: a code's length or life, a call, a
    # thing a password names, a word after another language's copula.
    _row("otp-length", "the OTP is 6 digits long and expires after 300 seconds", "300"),
    _row("sms-code-validity", "SMS codes are valid for 120 seconds", "120"),
    _row("otp-http-status", "the OTP service returns HTTP 429 after 5 tries", "429"),
    _row("password-thing-named", "Add simple password middleware for staging", "middleware"),
    _row("secret-getter-call", "this.getSecret(\"apiKey\") returns undefined", "apiKey"),
    _row("password-is-described", "the password is configured in vault", "configured"),
    _row("as-the-password-manager", "Use vaultwarden as the password manager for the team", "vaultwarden"),
    _row("password-is-somewhere", "the password is somewhere in 1password, search for staging-db", "somewhere"),
    _row("password-is-plaintext", "the password is plaintext in that legacy table", "plaintext"),
    _row("sms-limit-per-day", "the SMS code limit is 500 per day per account", "500"),
    _row("mfa-share", "MFA is at 100% of staff accounts since March", "100%"),
    _row("clave-este-directorio", "necesito revisar algunos archivos clave dentro de este directorio", "directorio",
         frame="{s}"),
    _row("commit-nearest-word", f"the signing key fix from commit {SHA}", SHA),
    _row("ssh-host-key-fingerprint", f"the SSH host key fingerprint {FINGERPRINT}", FINGERPRINT),
    # Found by property 2 at 400 examples: a random piece of the digest spells an id's word (`+TX/`).
    _row("fingerprint-piece-spells-a-word", "the SSH host key fingerprint "
         "SHA256:aW5DdGg1LN+TX/2giwNBTY8RMR/dhNHdw57c/b2SWYM", "SHA256:aW5DdGg1LN+TX/2giwNBTY8RMR/dhNHdw57c/b2SWYM"),
    _row("ulid", f"the job id {ULID_VALUE}", ULID_VALUE),
    # Git's own words for a commit; an abbreviation's dot ends no clause; "public" before a noun
    # after the token names it (a fresh blind list of the second stop of 2026-12-07's sequel).
    # Bytes as escapes that are no key: a format's magic, text as its UTF-8, a run of one byte.
    _row("png-magic-escaped", r"the file opens with b'\x89PNG\r\n\x1a\n' and then its chunks", r"\x89PNG\r\n\x1a\n"),
    _row("utf8-text-escaped", r"the greeting is b'\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c\xef\xbc\x81'",
         r"\xe4\xbd\xa0\xe5\xa5\xbd"),
    _row("latin-1-text-escaped", r"the old export wrote b'Stra\xdfe und Gr\xfc\xdfe aus M\xfcnchen' in Latin-1",
         r"Gr\xfc\xdfe aus M\xfcnchen"),
    _row("zero-padding-escaped", "the header pads with " + repr(bytes(24)), repr(bytes(24))[2:14]),
    _row("head-of-a-fork", f"HEAD of the vendor fork is at {SHA}", SHA),
    _row("ksuid-after-e-g", f"the replay tool needs the KSUID of the event, e.g. {_KSUID}", _KSUID),
    # An id's word names any form as short as ids are (a JWKS kid, a deployment's, a record's) and
    # a 32-byte key's base58 (a Solana program id); a changeset is a commit; "해시" a hash; an
    # IPFS CID before its path (from probe5 and probe6, blind lists).
    # A record's noun right before a UUID names a job's, a task's, a deployment's id (probe6).
    _row("uuid-after-a-job", f"AWS Batch job {_UUID} failed with exit code 137", _UUID),
    _row("uuid-after-a-task-ru", f"Задача {_UUID} упала с кодом 137", _UUID),
    _row("uuid-after-a-deployment-fr", f"Le déploiement {_UUID} est en production", _UUID),
    _row("ksuid-named-in-prose", "the batch KSUID ZDPbWG2kLd1QuD7WP6lGFGCAoLE", "ZDPbWG2kLd1QuD7WP6lGFGCAoLE"),
    _row("jwks-kid", f"the JWKS now has two keys; the new one has kid {_B62[:22]}", _B62[:22]),
    _row("deployment-id-base62", f"Deployment dpl_{_B62[:28]} introduced the broken redirect", "dpl_" + _B62[:28]),
    _row("base58-program-id", f"Program ID {_BASE58_KEY} is deployed on devnet", _BASE58_KEY),
    _row("changeset", f"the regression came in with changeset {SHA}", SHA),
    _row("hash-korean", f"트랜잭션 해시 0x{SHA}{SHA[:24]} 는 이미 블록에 포함됐어요", f"0x{SHA}{SHA[:24]}"),
    _row("ipfs-cid-with-path", f"ipfs cat {IPFS_CID}/readme prints the description", IPFS_CID),
    # Found by property 2 at 1000 examples: a KSUID may open with `0x`, which no hex is then.
    _row("ksuid-opening-with-0x", "the batch KSUID 0xo9XyRJFoRkdwYiYqFc2niSHZZ", "0xo9XyRJFoRkdwYiYqFc2niSHZZ"),
    _row("public-slug", f"short links use a nanoid like {_B62[:21]} as the public slug", _B62[:21]),
    # A public key is public by its DER (a bit string after the algorithm), whatever names it.
    _row("spki-rsa-public-key", f"the token verification key starts with {_SPKI_RSA}", _SPKI_RSA),
    _row("spki-ec-public-key", f"the JWKS key for token checks is {_SPKI_EC}", _SPKI_EC),
    # A UUIDv7 names its time as a ULID does: an id, also after "primary keys".
    _row("uuid7-primary-key", f"new rows get UUIDv7 primary keys like {_UUID7}", _UUID7),
    # A URL path's collection names its record's id (a UUID or hex), not a hook's or a token's.
    _row("uuid-in-a-record-path", f"`DELETE /api/projects/{_UUID}` returns 404", _UUID),
    _row("hex-in-a-record-path", f"`GET /users/{SHA[:24]}` returns the user", SHA[:24]),
    # An algorithm before "as the password ..." names how passwords are kept, not one.
    _row("algorithm-as-the-password-hash", "we use sha256 as the password hash since the audit", "sha256"),
    # The alphabet in order in an app password's groups is a place-holder.
    _row("app-password-alphabet", "the docs show the app password as abcd efgh ijkl mnop", "abcd efgh ijkl mnop"),
    # A password policy's regular expression is a pattern, no password.
    _row("password-policy-regex", "the password policy regex is ^(?=.*[A-Z])(?=.*\\d).{14,}$ since Monday",
         "^(?=.*[A-Z])(?=.*\\d).{14,}$"),
    # An OAuth client id is the public half of the client's pair, whatever its form.
    _row("oauth-client-id", f"Auth0 SPA settings: client_id {_B62[:32]}, domain acme.eu.auth0.com", _B62[:32]),
    _row("uuid-as-id", f"checkpoint ids are UUIDs such as {_UUID}", _UUID),
    _row("kubernetes-secret-name", "the Kubernetes secret `payments-api-credentials-prod`", "payments-api-credentials-prod"),
    _row("env-name-with-value", "`IS_WEBPACK_TEST=1` in the key env", "IS_WEBPACK_TEST=1"),
    _row("port", "`ssh -p 2222 deploy@host`", "ssh -p 2222"),
    _row("mkdir-p", "`mkdir -p build/out`", "mkdir -p build/out"),
    # Names of 12 to 15 letters and digits in both cases (mid_generated: their pieces are words).
    *[_row(f"mid-length-name-{name}", f"`{name}` is the one to call", name)
      for name in ["parseHTTP2Frame", "ResNet50V2Lite", "UTF8StringView", "OAuth2TokenSvc", "MPEG4AudioCfg"]],
    # A spaced `-p` before what no password looks like: a file, a plug-in, a package in small letters.
    _row("tsc-project-file", "`tsc -p tsconfig.App2.json` builds it", "tsc -p tsconfig.App2.json"),
    _row("pytest-plugin", "`pytest -p no:cacheprovider` skips the cache", "pytest -p no:cacheprovider"),
    _row("cargo-package", "`cargo test -p billing-core2` runs one crate", "cargo test -p billing-core2"),
    # ... or in a command that names no user, or mysql's, where a spaced `-p` prompts.
    _row("maven-profile", "`mvn verify -P Release2Build` signs it", "mvn verify -P Release2Build"),
    _row("compose-project", "`docker compose -p Staging2Stack up -d`", "docker compose -p Staging2Stack"),
    _row("mysql-prompts", "`mysql -u root -p Shop2Db < dump.sql` loads it", "mysql -u root -p Shop2Db"),
    # What a password's word "contains" or "holds" that is no value.
    _row("password-contains-words", "the password contains a digit and a capital here", "contains a digit"),
    _row("secret-store-holds", "the secret store holds 42 entries now", "holds 42 entries"),
    _row("package-spec", "`npm i @angular/core@17`", "@angular/core@17"),
    # Capitals, small letters, a digit and a sign, and no password (POLICY_NOT).
    _row("user-at-host", "the prompt reads dev@Build-Agent-07 after the upgrade", "dev@Build-Agent-07"),
    _row("file-anchor", "the steps are in setup.md#Step3Docker", "setup.md#Step3Docker"),
    _row("go-duration", "`ctx, cancel := context.WithTimeout(ctx, 5*time.Second)`", "5*time.Second"),
    _row("query-string", "https://ci.example.com/runs?branch=Main2&sort=Desc", "branch=Main2&sort=Desc"),
    _row("lower-case-user-at-a-host", "`ssh -J relay@Gate7 app@web2` reaches it", "relay@Gate7"),
    _row("a-rate", "the board runs an STM32F4@180MHz core", "STM32F4@180MHz"),
    _row("nested-class", "the trace ends in `Uploader$Chunk2.flush`", "Uploader$Chunk2.flush"),
    _row("file-name", "open `Plan_Q3&Q4_v7.xlsx` first", "Plan_Q3&Q4_v7.xlsx"),
    _row("formula", "the score is `Hp*2.5+Armor3` in the sheet", "Hp*2.5+Armor3"),
    _row("strftime", "logs go to `App_%Y%m%d_v1` daily", "App_%Y%m%d_v1"),
    _row("identity-hash", "it prints `Basket@5e2de80c` instead", "Basket@5e2de80c"),
    _row("sql-like", "`WHERE code LIKE 'Inv_%2024%'` finds them", "Inv_%2024%"),
    _row("symbol-version", "the binary needs memcpy@GLIBC_2.14 at least", "memcpy@GLIBC_2.14"),
    _row("markdown-bold-glued", "the doc reads `us-east-1**Then**` as is", "us-east-1**Then**"),
    _row("escaped-sign", "`type=Report%2FQ3` in the query", "Report%2FQ3"),
    _row("lambda-frame", "it fails in `com.shop.Basket$load$1.invoke`", "com.shop.Basket$load$1.invoke"),
    _row("worker-index", "the log says [Uploader#4] gave up", "Uploader#4"),
    _row("revision-range", "`git diff V2.0..Main~3` shows it", "V2.0..Main~3"),
    _row("bit-mask", "`(Mode&0x1F)` keeps the low bits", "Mode&0x1F"),
    _row("sentence-ending-bang", "We finally moved to Vue3Router! It works.", "Vue3Router", "{s}"),
    _row("quoted-phrase", 'the password label, "Scheduled testing" as the job name', "Scheduled testing"),
    # What a credential's place may hold that is none: a command's output, a file, a variable.
    *[_row(name, f"`{text}`", text) for name, text in [
        ("password-from-command", "PGPASSWORD=$(cat /run/secrets/pg) psql"),
        ("password-from-file", "kubectl create secret generic db --from-file=password=./pw.txt"),
        ("secret-from-command", "SECRET_KEY_BASE=$(rails secret)"),
        ("bearer-variable", "Authorization: Bearer $TOKEN"),
        ("password-stdin", "docker login -u deploy --password-stdin"),
        ("password-file-variable", "DB_PASSWORD_FILE=/run/secrets/db"),
        ("password-from-absolute-path", "DB_PASSWORD=/run/secrets/db"),
        ("bearer-template", "Authorization: Bearer ${{ secrets.TOKEN }}"),
        ("password-metadata", "password_policy=strict"),
        ("secret-name", "SECRET_NAME=db-creds"),
        ("password-from-password-manager", 'psql --password "$(pass show db/prod)"'),
        ("mysql-p-prompts", "mysql -u root -p app"), ("mysql-capital-p-is-a-port", "mysql -h db -P 3306 app"), ("ansible-vault-tag", "password: !vault |"),
        ("mongo-p-before-an-option", "mongosh -u admin -p --authenticationDatabase admin"),
        ("empty-passphrase", "ssh-keygen -t ed25519 -N '' -f deploy_key"),
        ("compiler-position", "main.c:12:5: error: expected ';'"),
        ("ipv6-full-form", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
        ("requirepass-enabled", "the redis server runs with requirepass enabled."),
        # Code that passes a password, not one: a member, a snake_case variable, a call, a template.
        ("password-member", "smtp.login(user=cfg.user, password=cfg.smtp_password)"),
        ("password-variable-in-a-call", "pika.PlainCredentials(username=mq_user, password=mq_pass)"),
        ("password-from-a-call", "db_password = vault.read_secret('db').get('password')"),
        ("format-template", 'dsn = f"mysql://{user}:{password}@{host}/app"'),
        ("bearer-format-template", "headers = {'Authorization': f'Bearer {api_token}'}"),
        ("openssl-env-source", "openssl enc -aes-256-cbc -pass env:BACKUP_PASS -in a.tar"),
        ("angle-placeholder-with-a-space", "PASSWORD=<the service password> in .env.local"),
        ("html-password-field", '<input type="password" name="password" autocomplete="new-password">'),
        # Where a secret store or a later step holds the value.
        ("secret-store-uri", "DB_PASSWORD=op://Platform/Postgres/password"),
        ("powershell-env", "$env:DB_PASSWORD = $env:VAULT_DB_PASSWORD"),
        ("sops-encrypted", "api_key: ENC[AES256_GCM,data:Zm9v,type:str]"),
        ("hiera-lookup", "password: \"%{hiera('db::password')}\""),
        ("elided-value", "STRIPE_SECRET_KEY=sk_live_..."),
        ("config-call", "DB_PASSWORD = config('DB_PASSWORD')"),
        ("parenthetical", "password (hashed by the identity provider)"),
        ("acronym-after-password", "the password PBKDF2 parameters live in auth.py"),
        ("settings-after-words", "we store passwords with scrypt (N=16384, r=8, p=1), never plain SHA-1")]],
    # A public key or encoded content named as such, its body random.
    _row("wireguard-public-key", f"`PublicKey = {_B64_KEY}` in the peer section", _B64_KEY),
    _row("public-key-assigned", f"`public_key: {_B64_KEY}`", _B64_KEY),
    _row("data-uri", f'`<img src="data:image/png;base64,{_B64_KEY}">`', _B64_KEY),
    *[_row(name, f"`{text}`", text) for name, text in [
        ("ruby-interpolation", "password = \"#{ENV['MAIL_PASSWORD']}\""),
        ("index-lookup", 'keyPassword = signingProps["keyPassword"] as String'),
        ("positional-format", "Password={0};User Id={1};")]],
    # Harmless by a name (a camelCase key, a checksum's label) or by a form (a number in hex,
    # an address, base64 of JSON, a hash, a mask, a path); and, in one list, values that
    # stand in for a password (brackets, a template, a bind variable, a reference).
    _row("uuid-camel-case-id", f'`"orderId": "{_UUID}"`', _UUID),
    # A query's camelCase name, its last word naming (a table's header: MULTILINE_LOOKALIKES).
    _row("uuid-camel-case-query", f"https://app.example.com/history?queryId={_UUID}", _UUID),
    _row("hex-number", "the device address is 0x7ffee4b2c3a8d1f0", "0x7ffee4b2c3a8d1f0"),
    _row("go-sum-checksum", f"`golang.org/x/net v0.24.0 h1:{_B64_KEY}`", _B64_KEY),
    _row("age-recipient", f"the sops recipient {AGE_RECIPIENT}", AGE_RECIPIENT),
    _row("jwt-header-alone", f"the JWT header `{JWT_HEADER}` names the algorithm", JWT_HEADER),
    _row("uuid-named-inside-its-token", f"`correlationId={_UUID} durationMs=482`", _UUID),
    _row("ipfs-cid", f"ipfs add returned {IPFS_CID}", IPFS_CID),
    _row("bitcoin-address", f"the donation address {BTC_ADDRESS}", BTC_ADDRESS),
    _row("ethereum-address", f"send the test ETH to {ETH_ADDRESS}", ETH_ADDRESS),
    _row("transaction-hash", f"the migration ran in transaction {ETH_TX}, block 19,842,117", ETH_TX),
    _row("xxh64-digest", f"xxh64 of the chunk: {_HEX32[:16]}", _HEX32[:16]),
    _row("sri-digest", f"the lockfile's integrity is sha512-{_SRI}", _SRI),
    _row("ssh-fingerprint-named", f"the host key fingerprint is SHA256:{_SRI[:43]}", _SRI[:43]),
    _row("graphql-node-id", f"query {{ node(id: \"{NODE_ID}\") {{ id }} }}", NODE_ID),
    _row("cursor-in-base64-json", f"`continuationToken={CURSOR}`", CURSOR),
    _row("checksum-listing", f"`{SHA}{SHA[:24]}  node-v20.15.1-linux-x64.tar.xz`", SHA + SHA[:24]),
    _row("recovery-codes-stored", "keep the recovery codes in 1Password, never in the repo", "1Password"),
    # A hook's event in words; a setting's words under a key's name in a query.
    _row("hook-path-event-words", "https://ci.example.net/hooks/github-push-events", "github-push-events"),
    _row("query-setting-words", "https://api.example.net/items?sort_key=created_at_desc&page=2", "created_at_desc"),
    # An id's word as a name's last word or before a copula or a colon; a digest's word with its
    # size; a public key's short word.
    _row("id-name-with-copula", f"VERCEL_PROJECT_ID is prj_{_B62[:28]}", _B62[:28]),
    _row("id-word-with-colon", f"the Cognito user pool ID: eu-central-1_{_B62[:9]}", f"eu-central-1_{_B62[:9]}"),
    _row("digest-word-with-size", f"the xxHash64 of the file is {_HEX32[:16]}", _HEX32[:16]),
    _row("pubkey-word", f"open a channel to node pubkey 03{_HEX32}{_HEX32}", f"03{_HEX32}{_HEX32}"),
    # "Public" in another language before its token.
    _row("public-word-abroad", f"la client key (publique, côté navigateur) est live_{_B62[:32]}", _B62[:32]),
    _row("public-word-korean", f"사이트 키(공개용)는 {_UUID} 입니다", _UUID),
    *[_row(name, f"`{text}`", text) for name, text in [
        ("angle-placeholder-with-signs", "Password=<YourStrong@Passw0rd>;"),
        ("curl-user-placeholder", "curl -u elastic:<password> https://localhost:9200"),
        ("template-lookup", "password: \"{{ vault('secret/data/app:db_password') }}\""),
        ("shell-required-message", 'client_secret: "${CLIENT_SECRET:?set the secret first}"'),
        ("path-in-quotes", "Enter passphrase for key '/root/.ssh/id_ed25519':"),
        ("brands-after-login", "login via GitHub / GitLab is supported"),
        ("image-tag-after-account", "the account service image node:18-alpine"),
        ("name-in-a-user-call", 'createUser("alice", "Alice Smith")'),
        ("masked-key", "STRIPE_SECRET_KEY=sk_live_************************4242"),
        ("masked-password", "password=•••••••• (hidden)"), ("filtered-log", '"password"=>"[FILTERED]"'),
        ("secret-spec-option", "docker build --secret id=npmrc,src=.npmrc ."),
        ("spanish-placeholder", "contraseña: TU_CONTRASEÑA_AQUÍ"),
        ("bcrypt-hash", "INSERT INTO users (email, pw_hash) VALUES ('a@b.c', '$2b$12$" + _B62[:22] + _B62[:31] + "')"),
        ("bind-variable", "CREATE USER etl IDENTIFIED BY :new_password;"),
        ("keychain-reference", 'xcrun altool --upload-app -f App.ipa -u ci@example.org -p "@keychain:AC_PASSWORD"'),
        ("kubernetes-pod-name", "checkout-api-7d9fb8c6b4-x2kqz   1/1   Running"),
        ("yescrypt-shadow-line", "deploy:$y$j9T$" + _B62[:22] + "$" + _B62[22:] + ":19782:0:99999:7:::"),
        ("masked-in-brackets", "dbPassword      [secret]"),
        ("password-command-variable", 'RCLONE_PASSWORD_COMMAND="pass show rclone/config"'),
        ("helm-existing-secret", "existingSecret: mysql-credentials"),
        ("password-word-as-value", 'DATABASE_URL="postgresql://user:motdepasse@127.0.0.1:5432/app"'),
        ("two-star-mask", "transport: redis://:**@redis:6379/0"),
        ("path-as-a-key", "key=uploads/2024/31aa0703-d9fd-4e44-9563-13217ff06ac5.jpg"),
        ("hashed-bundle-name", "dist/assets/index-0B3gZeCM.js   412.18 kB"),
        ("aws-unique-id", '"UserId": "AIDA9G628B71J7XKTFBQ9"'),
        # From probe11's look-alikes, new instances of each class: a MAC or IPv6 address is no
        # `.pgpass` line, a GUID in braces, base64 of text, a hashed known_hosts entry, a raw
        # CIDv1, a pinned ref, a lock file's reference, a serial, a compound hash, a thumbprint,
        # `pass` as a URL's stand-in, a non-null member path, an env() call's default.
        ("mac-address-reservation", "dhcp-host=3c:52:82:0a:9f:e1,printer,10.0.0.40"),
        ("ipv6-address", "the gateway is 2001:db8:aa:bb:12:34:56:78 on vlan 30"),
        ("guid-in-braces", 'Project("{' + _UUID.upper() + '}") = "Billing.Api"'),
        ("base64-of-text", "index.html: " + base64.b64encode(b"<h1>Maintenance: back at 10:00</h1>").decode()),
        ("known-hosts-hashed", "|1|" + base64.b64encode(_rng("kh1").randbytes(20)).decode() + "|"
         + base64.b64encode(_rng("kh2").randbytes(20)).decode() + " ssh-ed25519"),
        ("cidv1-raw", "ipfs cat bafkrei" + _chars("cid1", 52, "base32").lower()),
        ("pinned-action", f"uses: actions/setup-python@{SHA}"),
        ("lock-reference", f'"reference": "{SHA}"'),
        ("certificate-serial", f"serial={_HEX32.upper()}"),
        ("code-directory-hash", f"CDHash={SHA}"),
        ("magnet-info-hash", f"magnet:?xt=urn:btih:{SHA}&dn=debian.iso"),
        ("certificate-thumbprint", f"the certificate thumbprint {SHA.upper()}"),
        ("url-placeholder-pass", "amqp://user:pass@broker/vhost"),
        ("non-null-member-path", "clientSecret: process.env.OIDC_CLIENT_SECRET!,"),
        ("env-call-default", 'SMTP_PASSWORD = env("SMTP_PASSWORD", default="")'),
        # From probe12's: a merge names a commit, an image in base64, a list of secret names, a
        # secret store's path, a setting about the password, a map's reference, a metadata suffix.
        ("merge-commit", f"the regression came with {SHA} (the merge of #812)"),
        ("terraform-lock-hash", f'"zh:{SHA}{SHA[:24]}",'),
        ("png-base64", "favicon: iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8v9hAAAAAXNSR0IArs4c6QAAAARnQU1B"),
        ("compose-secret-list", "secrets: [db_root_pw]"),
        ("secret-store-path", "jwt_secret = platform/jwt_signing"),
        ("encryption-setting", "password_encryption = scram-sha-256"),
        ("map-reference", "smtp_sasl_password_maps = hash:/etc/postfix/sasl_passwd"),
        ("metadata-suffix", "PASSWORD_RESET_TOKEN_TTL_SECONDS = 900"),
        # From probe13's: a JSON key after a password file's path, a tool's stand-in in
        # parentheses, a secret's status, a checksum beside a file in a folder or after a
        # file's URL, a UUID named by a compound word.
        ("json-key-after-path", '{"Source": "/run/secrets/db_password", "Destination": "/run/db_pw"}'),
        ("sensitive-value", "    password               = (sensitive value)"),
        ("secret-status", 'secret_status = "active"'),
        ("checksum-beside-path", f"{SHA}{SHA[:24]}  dist/app-4.25.16.tar.gz"),
        ("checksum-after-file-url", f'resolved "https://registry.example.org/ms/-/ms-2.1.3.tgz#{SHA}"'),
        ("compound-uuid-word", f'/dev/sda2: TYPE="ext4" PARTUUID="{_UUID}"'),
        # From probe14's: a key its name or its own prefix calls public, a checksum in Russian,
        # a password's name in code before a comma.
        ("publishable-key-assigned", f"publishable_key: 'qz_pub_{_B62[:30]}'"),
        ("public-key-in-japanese", f"公開鍵は {_B62} です"),
        ("checksum-in-russian", f"контрольная сумма архива: {_HEX32}"),
        ("state-pair-in-code", "const [password, setPassword] = useState('');"),
        # From probe15's: a file's line anchor and a masked key with signs stay shown.
        ("line-anchor", "see [main.go:379](go/cmd/web/main.go#L379-L381) for the fallback"),
        ("masked-with-signs", "API_KEY=abc.*********xYz9 in the example"),
        ("fingerprint-in-french", f"l'empreinte de la clé est {SHA.upper()}"),
        ("trace-in-spanish", f"la traza {_HEX32} no aparece en Jaeger"),
        ("dunder-placeholder", "db.password=__DB_PASSWORD__ is replaced at deploy time"),
        # From probe16's: Mapbox's public token, a variable as a URL's user token.
        ("mapbox-public-token", f"mapboxgl.accessToken = 'pk.eyJ1Ijoi{_B62[:30]}.{_B62[:22]}'"),
        ("token-variable-in-url", "git remote set-url origin https://x-access-token:$GH_TOKEN@github.com/acme/api.git"),
        # Generated after the review: an issue's number in parentheses after the word.
        ("issue-number-in-parentheses", "the password policy (#4821): rotate keys every 90 days"),
        # From probe17's: a tracer's span, a commit in Ukrainian.
        ("span-id", f"the slow span {SHA[:16]} is the cache lookup"),
        ("commit-in-ukrainian", f"зламалось після коміту {SHA}, подивись будь ласка"),
        # From probe18's: an image pinned to its digest, a cache key, an object, a commit in
        # Polish, Stripe's object ids, a UPS tracking number.
        ("image-digest-pin", f"`node:20-alpine@sha256:{SHA}{SHA[:24]}` in the Dockerfile"),
        ("cache-key", f"the cache key is npm-{SHA} for this lockfile"),
        ("object-id", f"the LFS object {SHA}{SHA[:24]} is missing"),
        ("commit-in-polish", f"po commicie {SHA} testy nie przechodzą"),
        ("stripe-object-ids", f"refund ch_{_B62[:24]} for customer cus_{_B62[:14]}"),
        ("ups-tracking", "the parcel 1Z9W8V7U6T5S4R3Q2P is stuck in customs")]],
    _row("commit-in-russian", f"Хеш коммита: {SHA}", SHA),
    _row("accessor-id", f"AccessorID: {_UUID} and SecretID: <hidden>", _UUID),
    _row("aws-resource-id", f"security group sg-{SHA[:17]} allows 443 from the VPC", f"sg-{SHA[:17]}"),
    _row("uuid-named-in-russian", f"Идентификатор запроса {_UUID}, ошибка 502", _UUID),
    # A key naming a record or an entry (ID_KEYS): its value is an id.
    _row("idempotency-key-header", f"send `Idempotency-Key: {SHA[:32]}` with every retried POST", SHA[:32]),
    _row("partition-key", f"the partition key: tenant_{SHA[:20]} for every write", f"tenant_{SHA[:20]}"),
    _row("sort-key-camel", f'`const sortKey = "{SHA[:24]}"` in the fixture', SHA[:24]),
    _row("zh-prose-after-password-word", "密码放在团队的密码管理器里，不要发到群里", "密码放在团队的密码管理器里"),
    # Prose about a password, not one: words after "the password is" (property 4's places).
    *[_row(f"prose-{n}", text, text) for n, text in enumerate([
        "the password is hashed with bcrypt", "the admin password is printed to the log on first start",
        "the password is PBKDF2-hashed with 600000 iterations", "the password is NOT sent to analytics",
        "Passwort ist erforderlich, wenn der Dienst startet", "the password is `$POSTGRES_PASSWORD`",
        "the password policy is `minlength=12`", "the password reset link is https://example.com/reset2",
        "パスワードはbcryptでハッシュ化して保存します"])],
    # Names of words, acronyms and versions, not random however mixed (the last two come from
    # property 3's generator).
    *[_row(f"name-{name}", f"`{name}`", name) for name in [
        "getUserByIdV2Async", "TestResumeLargeFiles2", "useQueryClientV5", "HTMLParserUTF8Helper",
        "k8sV1beta1Api", "useS3BucketForEC2Logs", "AmazonRedshiftQueryEditorV2FullAccess",
        "RecvmsgIntoRFC3542AncillaryUDP6Test", "OAuth2ClientCredentialsProviderV3",
        "parseX509CertificateFromPEMv3", "listAllURLsForUserV2", "build-cfg-v2-x86-msvc-2022",
        "nonlinear_2eq_order1_type1", "CacheQueueRequestRequestRequest2", "RequestV2V2Cache2"]],
    # Letters and digits mixed short of alternating (property 6), or shorter than it judges: a
    # model, a release, a size, a method's call, a machine, a bundle's file, a formula, a part; and
    # names shaped like chosen passwords, which the value cannot tell from them (README).
    *[_row(f"not-alternating-{name}", f"`{name}` stays as it is", name) for name in [
        "GPT-4o", "Llama-3-70B", "Qwen2.5-Coder-32B", "Mixtral-8x7B", "Ubuntu-22.04", "Standard_D4s_v5",
        "sha256.Sum256", "tslog.Float64", "MacBook-Pro-2024", "Context7-compatible", "uiMode.D3cNFP6u.css",
        "iPhone15Pro", "Win10Pro", "IPv4Addr", "H264Decoder", "0xFF92A3FD", "Vector3Int", "Web3Provider",
        "x86_64", "utf8mb4", "aarch64", "stm32f103c8t6", "STM32F103C8T6", "a1b2c3d4e5", "Na2SO4", "2x16GB", "nRF24L01",
        "H3K4me3", "org.slf4j.Logger", "nn.Conv1d", "Matrix4x4", "Win32_Process", "Standard_B1ms",
        "Windows-Server-2019", "Mistral-Nemo-Instruct-2407", "Test_Case_01", "Python-100-Days",
        "int8x16_t", "1h23m45s", "enp0s31f6", "m16n8k16"]],
    # Git's range of two revisions, and a revision after `git log`.
    _row("revision-range", f"review the commit range {SHA[:40]}..{SHA[::-1][:40]} first", SHA[::-1][:40]),
    _row("revision-range-three-dots", f"`git diff {SHA[:12]}...{SHA[::-1][:40]}` shows it", SHA[::-1][:40]),
    _row("git-log-revision", f"`git log {SHA[:40]}` shows it", SHA[:40]),
    # An SVG path's commands and numbers.
    _row("svg-path", '`<path d="M0 0h24v24H0z" fill="none"/>` frames every icon', "0h24v24H0z"),
    # `-p` after `-u` is a port, a process or a priority as often as a password; curl's variables;
    # an exclamation after a name; a constant's or a version's dot.
    *[_row(f"not-a-password-{n}", f"`{text}`", text) for n, text in enumerate([
        "docker run -u 1000 -p 8080:80 web", "docker run -u 1000 -p 127.0.0.1:5432:5432 db",
        "docker run --rm -u 1000:1000 -p 53:53/udp pihole", "journalctl -u nginx -p err..alert",
        "htop -u www-data -p 1234,5678", "curl -u $CI_USER:$CI_TOKEN https://ci.internal/api",
        # a prompt, a patch, a hashed password's stand-in, another command's plugin, a flag
        'read -u 3 -p "Enter password: " pw', "git diff -U 3 -p HEAD~1",
        "useradd -u 1001 -p '*' -s /usr/sbin/nologin builder",
        "sudo -u ci python -m pytest -p no:cacheprovider tests/",
        "mongosh --username admin -p --authenticationDatabase admin",
        # an auth service's host and port; a GPIO pin and a pinned buffer; a PIN's file
        "./gateway --auth auth-service:9443 --listen :8080", "gpio --pin 17 mode out",
        "torchrun train.py --pin-memory --workers 8", "ykman piv access change-pin --pin-file ~/pin.txt"])],
    # A review's harmless texts for the position rules: "pin" in small letters and years; English
    # words before a `-p`; a hint or a secret's story in quotes; a policy's name; an error's text;
    # keytool's `-storepass:file`; a route; a scheme's pair.
    *[_row(f"position-review-{n}", f"`{text}`", text) for n, text in enumerate([
        "we pin 2024 as the baseline year for the benchmarks", "pip-compile --pin 2024",
        "nightly_pin: 20240115", "cudaHostAlloc will pin 4096 MB of host memory per worker",
        "Per the security review, connect with ssh -p 2222 deploy@host",
        "Log in with the password 'see vault' and the user admin.",
        'the password hint reads "your first pet name"', 'The secret sauce is "cache everything twice".',
        "reg add HKLM\\Netlogon /v MaximumPasswordAge /t REG_DWORD /d 30 /f",
        "Set-ItemProperty -Path $key -Name MinimumPasswordLength -Value 12",
        'raise ValueError("SECRET_KEY= must be set in production")',
        "keytool -importcert -keystore ks.jks -storepass:file ks.pass -file ca.pem",
        "POST /token:introspect returns the claims", "./proxy --auth sigv4:us-east-1 --service es",
        "./proxy --auth hmac:sha256", "schema['password'] = 'required|string|min:8|regex:/[A-Z]/'"])],
    # What a form's, a validator's or a translation's dictionary says about a password: a message,
    # a field's name, a list of rules; an expression, a directory's name, a source of credentials.
    *[_row(f"password-message-{n}", f"`{text}`", text) for n, text in enumerate([
        "errors['password'] = 'Password must be at least 8 characters.'",
        "placeholders['password'] = 'Enter your password'", '"password": "Must hold a digit and a capital."',
        "widgets['password'] = 'PasswordInput'", "autocomplete['password'] = 'current-password'",
        "$rules['password'] = 'required|string|min:12'",
        "Set-ADAccountPassword -Identity kiosk -NewPassword (Read-Host -AsSecureString)",
        "./sync --auth ldap:cn=reader,dc=example,dc=org", "credentials: keyring:system",
        "credential: managed-identity:system-assigned"])],
    _row("exclamation-after-a-name", "Finally green on Python3!, pushing now", "Python3!"),
    *[_row(f"dotted-{name}", f"`{name}` is the format", name) for name in ["cv2.CV_8UC3", "Wan2.1-T2V-14B"]],
    # Words and a number a dot joins that no memorable password is: two words (a model's, an
    # event's, an index in a path), a file, a year, a release's in small letters, a version.
    *[_row(f"dotted-words-{name}", f"`{name}` is the name", name) for name in [
        "Dell.Latitude.7420", "Security.Audit.4625", "Items.1024.Name", "Invoice.March.Draft.1042.docx",
        "Scan.Front.Page.0042.PDF", "Annual.Report.Final.2023", "ubuntu.jammy.2204.amd64", "Newtonsoft.Json.13.0.3"]],
    # A UUID named as an id in more languages (a number's 号, Polish, Korean, Arabic).
    *[_row(f"uuid-named-{n}", text, _UUID) for n, text in enumerate([
        f"工单号 {_UUID} 还没有处理", f"Identyfikator płatności {_UUID} nie istnieje",
        f"요청 식별자 {_UUID} 로 검색하세요", f"معرّف الطلب هو {_UUID}"])],
    # Passwords' words beside a tool's name, a release, a sprint or an account's name.
    *[_row(f"beside-a-password-word-{n}", text, value) for n, (text, value) in enumerate([
        ("password hashing uses argon2id since the Release2031 branch", "Release2031"),
        ("the database account is svcreport2033; its password stays in the vault", "svcreport2033"),
        ("password resets have been broken since Sprint77 shipped", "Sprint77"),
        ("the admin password is kept on bastion04 under /etc/app", "bastion04"),
        ("Postgres17 password auth fails with scram errors after the upgrade", "Postgres17"),
        ("run `useradd ops2031` then lock the password with `passwd -l`", "ops2031"),
        ("the password policy page, draft2031, still needs a review", "draft2031"),
        ("password rotation for the hosts, bastion04, bastion05, ran overnight", "bastion05"),
        ("비밀번호로 office365 계정에 로그인합니다", "office365"),
        ("use TCP / IPv6 for the login service", "IPv6"),
        ("the response had 'x-ratelimit-limit-tokens': '2000000' in its headers", "2000000"),
        ("entra en la página y compara ubuntu / node22 con la imagen anterior", "node22"),
        ('`const labelKey = "StepTitle2"` in the wizard', "StepTitle2"),
        ("the password stays unchanged after the reset", "unchanged")])],
    # Dashed groups that are names, numbers or dates, not a key's.
    *[_row(f"dashed-groups-{n}", text, value) for n, (text, value) in enumerate([
        ("the release train is TEAM-ALPHA-2024-DEMO this quarter", "TEAM-ALPHA-2024-DEMO"),
        ("the order number 4711-2024-0815-0001 is in the ticket", "4711-2024-0815-0001"),
        ("the shards shard-east-west-main-0001 and shard-east-west-main-0002 swap", "shard-east-west-main-0001"),
        ("buy ISBN 978-3-16-148410-0 for the team", "978-3-16-148410-0"),
        ("we serve gpt2-base-fp16-onnx from the edge box", "gpt2-base-fp16-onnx")])],
    # What a login or a lock is given "with" that names a thing (NAMED_THING); codes that are no
    # access code.
    *[_row(f"given-a-name-{n}", text, value) for n, (text, value) in enumerate([
        ("the runner logs in as ci with Python3.11 preinstalled", "Python3.11"),
        ("the bastion authenticates with ecdsa384 keys only", "ecdsa384"),
        ("the vault is protected with aes-256-gcm at rest", "aes-256-gcm"),
        ("the search panel opens with Ctrl+Alt+F", "Ctrl+Alt+F"),
        ("the portal signs in with SAML2 against the IdP", "SAML2"),
        ("`nightly_pin: 20231104` keeps the toolchain fixed", "20231104"),
        ("the exit code 3072 means the lock was stale", "3072"),
        ("the load test logs in as bot with 250000 users at peak", "250000"),
        ("the importer signs in as etl with 12000000 rows a night", "12000000"),
        ("the share is mounted as www-data with 0640 permissions", "0640"),
        ("the loader logs in as etl using 1048576 rows a batch", "1048576"),
        ("the safe code is from 2019 and needs a review", "2019"),
        ("the smoke job connects as qa with Chromium126 headless", "Chromium126"),
        ("the migration runs as dba using pg_restore16 from the image", "pg_restore16"),
        ("the runner logs in as builder with rust:1.79-slim as its image", "rust:1.79-slim"),
        ("the palette opens with Cmd+ in the editor", "Cmd+"),
        ("the bundle is encrypted with ansible_core_2.16 headers", "ansible_core_2.16"),
        ('Sign in with "remember me" ticked to keep the session', "remember me"),
        ('the start page opens with "Welcome Back Friend" on top', "Welcome Back Friend"),
        ("| password | string | the account's password |", "string"),
        ("| Pass | 1432 | Fail | 3 |", "1432"),
        ("`net use Z: \\\\nas\\share /persistent:yes`", "/persistent:yes"),
        # Hex named by a record's word, or after its type's capitals.
        ("restore from snapshot 3c9e51a07bd24f6e8a1d90c2f4b7e63a5d08c1f29e7b4a6d3f05c81e92ab47d6",
         "3c9e51a07bd24f6e8a1d90c2f4b7e63a5d08c1f29e7b4a6d3f05c81e92ab47d6"),
        ("the messaging service SID MG7d2e91c04fa3b68e15d09a7c3b2f4e8d sends the alerts",
         "MG7d2e91c04fa3b68e15d09a7c3b2f4e8d"),
        # A login's pair of code names in code spans (`LoginForm` / `LoginView2`, a metric's path).
        ("the login flow calls `LoginForm` / `LoginView2` in that order", "LoginView2"),
        ("login metrics go to `auth.login.ok` / `auth.login.fail2`", "auth.login.fail2"),
        ("creds for the tests come from `TEST_USER` / `TEST_PASS_V2` env vars", "TEST_PASS_V2"),
        # ... and a second review's: fixtures, ports, event ids, packages, files, a stop in quotes.
        ("login fixtures `user_1` / `user_2` are shared between the e2e tests", "user_2"),
        ("the login service listens on `8080` / `8443`", "8443"),
        ("Windows logon event IDs `4624` / `4625` are what we alert on", "4625"),
        ("Login: upgrade `react-router@6` / `react-router@7` breaks the redirect", "react-router@7"),
        ("Login components `Login.tsx` / `Login2.tsx` will be merged", "Login2.tsx"),
        ("Log in with 'Okta2024.' on the first screen", "Okta2024"),
        # Words a lock or a login is given "with" are as often a screen's text or a tool's name.
        ("the badge reader unlocks with 'present your card now' on its screen", "present your card now"),
        ("the cluster's backups are encrypted with velero-restic-helper", "velero-restic-helper"),
        ("env:\n- name: PASSWORD_MIN_LENGTH\n  value: \"14\"", "14"),
        # What a review found the new rules took: quantities, settings, fault codes, records.
        ("the load test logs in with 2500 virtual users", "2500"),
        ("run the seed as admin with DEBUG=1 set", "DEBUG=1"),
        ("the gateway authenticates with IAM+SigV4 only", "IAM+SigV4"),
        ("the PLC raises alarm code 4711 when the belt jams", "4711"),
        ("`lock_timeout_code: 1500` in the settings", "1500"),
        ("`led_pin = 2300` is the blink interval", "2300"),
        ("[cache-02.prod]:6379 role:replica", "role:replica"),
        ("`rsync -u nas:Photos_2024 ~/Pictures/` syncs only newer files", "nas:Photos_2024"),
        ("`net use Z: \\\\nas\\share >nul 2>&1` hides the output", ">nul")])],
    # Code and markup with brackets and joins (MARKUP), and hex in brackets: no password's signs.
    *[_row(f"code-with-joins-{n}", text, value) for n, (text, value) in enumerate([
        ("`while(i<len&&buf[i]>0);` skips the padding", "while(i<len&&buf[i]>0);"),
        ("the template prints `<td>&nbsp;</td><td>&mdash;</td>` for empty cells",
         "<td>&nbsp;</td><td>&mdash;</td>"),
        ("the checkpoint was written (f3a91c0d7e52) before the rewind", "(f3a91c0d7e52)"),
        ("`var batches = [][]byte{chunkA1, chunkB2}` holds the parts", "[][]byte{chunkA1,"),
        ("the search link is /find?q=cr%C3%A8me%20br%C3%BBl%C3%A9e&page=2", "q=cr%C3%A8me%20br%C3%BBl%C3%A9e"),
        ("the driver logs `Reg=0x%04X;Mask=0x%02X` on each fault", "Reg=0x%04X;Mask=0x%02X"),
        ('`curl -sSu "$ART_USER:$ART_PASS" https://artifacts.internal/` reads the env', "$ART_USER:$ART_PASS"),
        # One bracket that opens something: a call, an index, a literal (_ONE_JOIN leaves them).
        ("the swatch is `Rgb(0xFF7A0C3E` plus its shades", "Rgb(0xFF7A0C3E"),
        ("`readReg(I2C_BUS_1` blocks until the bus is free", "readReg(I2C_BUS_1"),
        ("`ids := []pb.NodeID{nodeA7` lists the seeds", "[]pb.NodeID{nodeA7"),
        # ... or that joins a name to another part (named_pair): a cast, an array's type.
        ("the mask is `(byte)0x7Fab` on both ports", "(byte)0x7Fab"),
        ("the buffer is typed `[i32;MAX_LEN2]` in the header", "[i32;MAX_LEN2]"),
        # A hex literal between joins: a bit mask's expression (MARKUP).
        ("the status bits are `(irqMask&0x3F00)>>8` on rev B", "(irqMask&0x3F00)>>8"),
        ("the low nibble is `flagsV2>>4&0x0F` there", "flagsV2>>4&0x0F")])],
    # Lines that end in a word next to hex (wrapped_tokens: only a line of hex groups joins).
    *[_row(f"word-by-hex-{n}", text, value) for n, (text, value) in enumerate([
        ("the cafe\nbeef stew recipe 1234 is in docs", "beef"),
        ("see commit a1b2c3d in the\nrelease notes of 2024", "release")])],
    # Pasted files a blind list showed withheld: a password's hash in quotes (bcrypt, argon2 as
    # Jupyter writes it, Apache's `$apr1$`) and a Kubernetes secret's name under its key.
    *[_row(f"pasted-{name}", text, value) for name, text, value in [
        ("bcrypt-in-quotes", 'c.hashed_password = "$2y$10$abcdefghijklmnopqrstuuOq7Jm9kYxW1ZQ6o1b7Gd0N9c0Hn4Ex"',
         "uuOq7Jm9kYxW1ZQ6o1b7Gd0N9c0Hn4Ex"),
        ("jupyter-argon2", 'c.PasswordIdentityProvider.hashed_password = "argon2:$argon2id$v=19$m=65536,t=3,p=4$'
         'nyKWr7vOIja6MFCKNl11lQ$Mer3DHZvAcYkAOQfXk1pDq3bqfB9o1b7Gd0N9c0Hn4E"', "Mer3DHZvAcYkAOQfXk1pDq3b"),
        ("htpasswd-apr1", "admin:$apr1$soeqJA4P$QBRb2M6j.Ase4RuCEbM38a", "QBRb2M6j.Ase4RuCEbM38a"),
        ("existing-secret-name", "auth:\n  username: app\n  existingSecret: app-postgresql-credentials\n",
         "app-postgresql-credentials")]],
    # A compound key's naming word with words after it names its value; words of a search link
    # stay words beside a wallet's word (a phrase's own name reads them as one: SEED_KEY).
    _row("key-uuid-at-start", f'`"transcript_uuid_at_start": "{_UUID}"`', _UUID),
    _row("key-commit-sha-full", f"`commit_sha_full = {SHA}`", SHA),
    _row("search-words-joined-by-plus", "the ledger wallet guide is at /results?search_query=ledger+nano+"
         "setup+guide+for+beginners+with+backup+steps+and+pin+reset+tips", "ledger+nano+setup+guide"),
    _row("search-link-beside-seed", "seed the test wallet table from /search?q=how%20to%20seed%20a%20"
         "postgres%20database%20with%20fake%20users%20from%20a%20csv%20file",
         "how%20to%20seed%20a%20postgres%20database%20with%20fake%20users"),
    # A token that is a pattern whole (TOKEN_PATTERN); a setting's number after a password's word
    # (SETTING_NUMBER); a password's own word, in a script with no short forms, as a link's password.
    _row("pattern-of-a-token", "the hook rejects keys matching ^npm_[A-Za-z0-9]{36}$ in diffs",
         "^npm_[A-Za-z0-9]{36}$"),
    _row("setting-number-after-password", "Password prompts time out after a while (PROMPT_TIMEOUT_MS=4500).",
         "PROMPT_TIMEOUT_MS=4500"),
    _row("password-word-in-a-link-zh", "连接串写成 mysql://账号:密码@服务器:3306/库 的样子", "账号:密码"),
    # Words a hyphen joins with a year, or two words and a model's number, are no memorable
    # password; `-U` before another option names no user, so `-P` after it is a profile.
    _row("hyphen-words-and-a-year", "the runners use the Windows-Server-2019 image", "Windows-Server-2019"),
    _row("hyphen-model-number", "QA tests on a Dell-Latitude-7420 laptop", "Dell-Latitude-7420"),
    _row("hyphen-model-version-first", "the eval runs Qwen2-Math-Instruct on two GPUs", "Qwen2-Math-Instruct"),
    _row("update-flag-then-profile", "release with `mvn -U -PReleaseProfile2 deploy`", "ReleaseProfile2"),
    # From probe11: a record's id whose prefix its noun before it spells (`refund re_...`,
    # `message msg_...`, TypeID's `team team_...`); a credential's noun before one is no such.
    _row("record-noun-spells-the-prefix", f"the refund re_{_B62[:24]} failed twice", f"re_{_B62[:24]}"),
    _row("record-noun-abbreviated", f"the message msg_{_B62[4:26]} arrived late", f"msg_{_B62[4:26]}"),
    _row("record-noun-repeated", f"see team team_{_B62[8:34].lower()} in the admin", f"team_{_B62[8:34].lower()}"),
    _row("payment-record-noun", f"the payout {_B62[2:19].upper()} bounced on Monday", _B62[2:19].upper()),
    _row("wallet-address", f"tips go to the address {_B62}{_B62[:20]} on the site", f"{_B62}{_B62[:20]}"),
    _row("senha-said-of", "a senha padrão é trocada pelo script antes do deploy", "trocada pelo script antes"),
    # Written after probe13's blind run: words in alphabetical order are a list's (a glossary, a
    # word list's start), not a phrase drawn at random; prose after a password's name in other
    # languages holds their articles and prepositions.
    _row("glossary-in-order", "our wallet glossary covers account address balance block chain coin deposit "
         "exchange fee gas hash key ledger mining", "account address balance block chain coin deposit", frame="{s}"),
    _row("contraseña-prose", "la contraseña es obligatoria para todos los usuarios nuevos",
         "obligatoria para todos los usuarios", frame="{s}"),
    _row("senha-prose-of-a-team", "a senha é trocada todo mês pela equipe de infra", "trocada todo mês pela equipe",
         frame="{s}"),
    # ... a value named as harmless once (a workspace's id) is that thing where it repeats (a path).
    _row("named-id-repeated-in-a-path", f"the workspace id is ws_{_B62[:26].lower()}, so the page is "
         f"/w/ws_{_B62[:26].lower()}/overview", f"ws_{_B62[:26].lower()}", frame="{s}"),
    _row("wachtzin-prose", "de wachtzin is vier woorden lang en staat nergens op papier", "vier woorden lang",
         frame="{s}"),
]


# Look-alikes over several lines, which no one sentence shows: the scan itself holds nothing.
MULTILINE_LOOKALIKES = [
    # From the blind harmless70 (values made up here): a line that ends a digest whole (its
    # hex's length, base64's padding) is no wrap, so the next line's word joins nothing.
    pytest.param(f"pinned by digest:\nFROM python:3.12-slim@sha256:{SHA}{SHA[:24]}\nRUN pip install -r r.txt",
                 id="digest-then-a-command"),
    pytest.param("go.sum line:\ngithub.com/acme/kit v0.4.47 h1:Qm9vZ2xlLXN1bS1oYXNoLW9mLWtpdC12MDQ0Nw=\nIt builds.",
                 id="base64-padding-then-a-word"),
    pytest.param("Masking works now: Authorization: Bearer [REDACTED].", id="redacted-before-a-stop"),
    # A link ending a line at its port, a mention or a decorator opening the next: no `user:pw@`.
    pytest.param("Staging: http://localhost:8080,\n@maria can you check the header?", id="port-then-a-mention"),
    pytest.param("Served at http://127.0.0.1:8000.\n@app.get(\"/health\")", id="port-then-a-decorator"),
    pytest.param("A senha vem do ambiente: POSTGRES_PASSWORD: ${DB_PASSWORD}.", id="key-name-after-a-colon"),
    pytest.param("GOOGLE_CLIENT_SECRET=\nNEXTAUTH_URL=http://localhost:3000", id="empty-value-then-next-line"),
    # A line break after an option or a credential's word whose next line is a word, a list's
    # marker or a key: the line ended (cut_value).
    pytest.param("set the password\nfile path in config.yaml", id="password-then-a-word"),
    pytest.param("mysql -p\nmydb < dump.sql", id="option-then-a-database"),
    pytest.param("the token\n- expires in 3600 seconds", id="token-then-a-list-item"),
    pytest.param('the "pass": "<your password> placeholder', id="unclosed-quote-placeholder"),
    pytest.param("| env | password |\n|---|---|\n| dev | in Vault |\n| qa | n/a |", id="table-without-passwords"),
    pytest.param("org.gradle.jvmargs=-Xmx4g\nVERSION_NAME=1.17.15", id="assignment-after-a-line-break"),
    pytest.param("mysql_config_editor set --login-path=ci --user=ci --password\nEnter password:",
                 id="password-prompt-on-the-next-line"),
    # A line break between records is no wrap: a key opens the next line, or a line holds columns.
    pytest.param("secrets:\n  db_password_v2:\n    file: ./db_password.txt", id="yaml-key-after-a-colon"),
    pytest.param("3.12-slim: Pulling from library/python\n2d429b9e73a6: Pull complete\n9a6b0f1e3c2d: Pull complete",
                 id="record-after-a-line-break"),
    pytest.param("i-0a1b2c3d4e5f60718\tsubnet-0f1e2d3c4b5a69788\tvpc-09f8e7d6c5b4a3921\n"
                 "i-07a6b5c4d3e2f1098\tsubnet-0f1e2d3c4b5a69788\tvpc-09f8e7d6c5b4a3921", id="columns-after-a-line-break"),
    # A Markdown table's header names the values of its column.
    pytest.param(f"| run | run_id | AUC |\n|---|---|---|\n| base | (none) | 0.81 |\n| xgb | {_UUID} | 0.84 |",
                 id="uuid-in-an-id-column"),
    pytest.param(f"| file | SHA-256 |\n| --- | --- |\n| a.csv | {SHA + SHA[:24]} |", id="hex-in-a-checksum-column"),
    # A chosen password's shape past its word's sentence; a hook's name in a repository or a page.
    pytest.param("The password expired. We tagged the fix as rc1+hotfix2 today.", id="shape-past-the-clause"),
    pytest.param("Password auth is disabled on host db-01?sslmode=require", id="shape-is-a-setting"),
    pytest.param(f"https://github.com/pre-commit/pre-commit-hooks/commit/{SHA}", id="hooks-in-a-repository-name"),
    pytest.param("https://docs.example.com/webhooks/guides/release-2024-notes", id="hooks-docs-page"),
    pytest.param(f"https://github.com/adnanh/webhook/commit/{SHA}", id="commit-of-a-repository-named-webhook"),
    pytest.param("The password reset needs python3.11+ on the runner.", id="versions-in-password-prose"),
    pytest.param("The password is sent over TLS only.", id="words-describing-a-password"),
    pytest.param("The password is rotated every ninety days and the old one expires.", id="words-then-a-conjunction"),
    pytest.param("The password is stored hashed inside postgres but the salt is per user.", id="participle-first"),
    # ... and the review of a looser first version: prose or a usage block, then a record.
    pytest.param("Deployed commit 4f9c2a1b\nVERSION=1.4.2", id="prose-then-a-record"),
    pytest.param("<usage>total_tokens: 71001\ntool_uses: 38\nduration_ms: 1880", id="usage-block"),
    pytest.param("export PGPASSWORD=$POSTGRES_PASSWORD\n$PSQL -f schema.sql", id="variable-then-a-command"),
    # Prose a line break wraps is read as one line (wrapped_phrases): no more than it holds.
    pytest.param("the password rotation runbook now lives in the ops wiki under access and is\n"
                 "reviewed each quarter by the platform team", id="prose-wrapped-after-a-password-word"),
    pytest.param("the recovery phrase stays on paper in the office safe and nobody types it\n"
                 "into a laptop or a phone", id="prose-wrapped-after-a-phrase-name"),
    pytest.param("课件第二页要显示这句：白 日 依 山 尽 黄 河 入 海 流 欲 穷 千 里 目", id="hanzi-spaced-for-a-slide"),
    # A checksum wrapped over two lines: both are the checksum (wrapped_tokens).
    pytest.param("the tarball's sha256 checksum is 9f2c41e8b07d3a65c1e48f0b92d7a3c6\n"
                 "5e08b1f4a97c2d63e0b5f18a4c7d92e3 per SHA256SUMS", id="checksum-wrapped"),
    # A key named for a password in a column not headed as values; a token's name as a value.
    pytest.param("| key | ttl |\n|---|---|\n| session_secret | 3600 |", id="row-key-in-a-ttl-column"),
    pytest.param("params:\n  - name: registry-token\n    value: ghcr-token-ro1", id="env-value-names-a-token"),
    pytest.param("env:\n  - name: OPENAI_MAX_TOKENS\n    value: \"8192\"", id="env-value-is-a-number"),
    # Code over two lines, signs at the break: calls and statements, no password.
    pytest.param("if (!cache.has(keyV2)) {\n  cache.set(keyV2, await load(id));\n}", id="code-wrapped-at-a-brace"),
    pytest.param("const total = items.reduce((a, b) =>\na + b.price * b.qty, 0);", id="code-wrapped-at-an-arrow"),
    # ... and after a line that closes a statement or a group (_CLOSER), signs on both lines.
    pytest.param("t[j]=s[j]^0x5A;\ntotal2", id="code-after-a-semicolon"),
    pytest.param("(flags&0x1F)|\ni--", id="code-after-a-pipe"),
]


@pytest.mark.parametrize("text", MULTILINE_LOOKALIKES)
def test_multiline_lookalike_holds_no_secret(text: str) -> None:
    assert md.scan_secrets(text) == []


# Keys Azure and others name "primary" or "object" hold credentials, hex as often as not: those
# words are no id's name (ID_KEYS).
HEX_KEY_PLACES = ["the Azure Maps primary key is {v}", "APIM_PRIMARY_KEY={v}", '{{"primaryKey": "{v}"}}',
                  "the object key: {v}", "UNIQUE_KEY={v}",
                  # A table's header that names no id leaves the value to the value.
                  "| env | api key |\n|---|---|\n| prod | {v} |", "| env | value |\n|---|---|\n| prod | {v} |"]


# Values a review of the first version of the table-header, query-name and preposition rules
# printed: a header or a name whose credential's word is not its first, a cell that names its own
# value, pipes in code, a second table, a secret's word after a preposition, a chosen password.
VALUE_PLACES = [
    # From a fresh blind list in 18 shapes (2026-12-06): a password's word as any piece of a
    # variable; a passphrase in a code span, in quotes holding an apostrophe, after a colon, or in
    # words after "is"; a code glued to its colon; a link's password split by a line break.
    pytest.param("`export KENNWORT_LDAP_BIND={v}`", "Quokka!7713", id="key-in-german"),
    pytest.param("`export MOT_DE_PASSE_SMTP={v}`", "renard-bleu-58", id="key-in-french"),
    pytest.param("the backup passphrase `{v}` unlocks the archive", "lanterns drift over harbor", id="passphrase-code-span"),
    pytest.param('we set the passphrase to "{v}" last week', "auntie's garden smelled of rain", id="passphrase-apostrophe"),
    pytest.param('das Kennwort lautet: "{v}"', "Möwen über Kiel 88", id="passphrase-after-colon"),
    pytest.param("the archive passphrase is {v} and nobody else knows it", "otters nap beside the weir",
                 id="passphrase-words-after-is"),
    pytest.param("the gate code:{v} for the side entrance", "4718", id="code-glued-colon"),
    pytest.param("以后开门用 the side gate code：{v}，别外传", "350917", id="code-full-width-colon"),
    pytest.param("the SIM PUK:{v} because it locked", "70219384", id="puk-then-because"),
    pytest.param("mount sftp://ops:{v}@files.example.net/drop for the logs", "Tern\n5-Gale-Rock",
                 id="link-password-wrapped"),
    # ... and split right before its `@`: the line ends in a user and a password, no host.
    pytest.param("mount smb://CORP;jdoe:{v}\n@fs01.example.net/finance on boot", "Kiefer-Moos-31",
                 id="link-password-wrapped-before-its-at"),
    # Letters alone, as app passwords and some issuers' keys are, after a credential's name.
    pytest.param("`api_key={v}` in the mail relay's env", "qtvd-mwpk-hzrn-bxlf", id="letters-after-api-key"),
    pytest.param("https://relay.example.net/hook?token={v}", "kwmzpdtrxqhvnbsy", id="letters-in-a-query"),
    pytest.param('`{{"api_key": "{v}"}}` in the relay config', "bqtkamzfresnwiplx",
                 id="letters-in-runs-of-four-at-most"),
    # From a fresh blind list of 150 chat messages (2026-12-06): a file's dots between the word and
    # its value, an administrator's pair, a PIN named after "my".
    pytest.param('the passphrase for ~/.ssh/deploy_key is "{v}" today', "amber fox under moss", id="passphrase-past-a-path"),
    pytest.param("the NAS admin at nas.local is admin / {v} for now", "Quill_2291", id="admin-pair-past-a-host"),
    pytest.param("my bank pin is {v} since Monday", "7340", id="pin-after-a-possessive"),
    # From fresh blind lists (2026-12-07): a passphrase of plain words after "is" that a
    # conjunction ends; a JWT wrapped in its payload, its name more than a line's reach before
    # the break; base64 wrapped before its padding (`==` names no key).
    pytest.param("the archive password is {v} and nobody else may know it", "amber kettle hums softly",
                 id="passphrase-words-then-a-conjunction"),
    pytest.param("the service role key for the staging project is {v} for now",
                 f"{_JWT[:110]}\n{_JWT[110:]}", id="jwt-wrapped-in-its-payload"),
    pytest.param("the session cookie, copy it whole: {v}", f"{_B64[:12]}\nm{_B64[12:]}==",
                 id="base64-wrapped-before-its-padding"),
    # A review of that change: a generated password's signs on both lines, a JWT with no word.
    pytest.param("ok, log in as deploy with {v} today", "Wq4%tz~Rb\n$k81mHvPxLe", id="signed-password-wrapped"),
    pytest.param("got {v} back from /auth", f"{_JWT[:50]}\n{_JWT[50:]}", id="jwt-wrapped-with-no-word"),
    # From a fresh probe of 80 credentials in their structures: a break inside the key's name
    # (the next line then opens with `rd=`, no record of its own).
    pytest.param("set spring.datasource.passwo\nrd={v} in the prod profile", "river5stone",
                 id="break-inside-the-keys-name"),
    # ... and a value's first piece on a line that a command's wrap ends (each break is read).
    pytest.param("$ openssl rand -base64 32\n{v} is the session secret", f"{_B64[:14]}\n{_B64[14:44]}",
                 id="wrap-below-a-wrapped-line"),
    # A short password wrapped after its word: both lines' pieces are the value's (no 12-character
    # window of it stands on one line, so the class table cannot see it).
    pytest.param("Never change the vault password is {v} in `deploy.sh`.", "tide9\nlamp4moss",
                 id="wrapped-short-password"),
    pytest.param("| env | Subscription key |\n|---|---|\n| prod | {v} |", SHA[:32], id="header-key-last"),
    pytest.param("| env | Session token |\n|---|---|\n| prod | {v} |", _UUID, id="header-token-last"),
    pytest.param("| id | note |\n|---|---|\n| api key {v} | ok |", SHA[:32], id="cell-names-its-value"),
    pytest.param("| pattern | token | trace id |\n|---|---|---|\n| `a\\|b` | {v} | t-1 |", SHA[:32],
                 id="escaped-pipe-in-code"),
    pytest.param("| name | id |\n|---|---|\n| a | 1 |\n| env | api key |\n|---|---|\n| prod | {v} |", SHA[:32],
                 id="second-table"),
    pytest.param("https://api.example.com/v1/data?requestSignature={v}", SHA[:32], id="query-signature-last"),
    pytest.param("In the tenant settings, paste {v} into the API key field", SHA[:32],
                 id="secret-word-after-a-preposition"),
    pytest.param("token {v}  svc.cluster", _B62[:24], id="host-after-a-token"),
    pytest.param('`const encryptionKey = "{v}"`', "Harbor0!Harbor", id="chosen-password-after-a-key"),
    pytest.param("本番DBのパスワードは、前任者のメモによると「{v}」らしい", "Sakura*1993", id="chosen-password-ja"),
    pytest.param("postgres://admin:{v}@db.internal:5432/app", "top-secret", id="words-as-url-password"),
    pytest.param('DB_PASSWORD="{v}"', "super_secret", id="words-as-password-variable"),
    # A second review: a pipe folded from `｜` or in code splits the row; a cell that names its
    # value behind a `;`; a password run on past a webhook's URL (a later rule's longer match).
    pytest.param("| pattern | token | trace id |\n|---|---|---|\n| a｜b | {v} | t-1 |", SHA[:32],
                 id="full-width-pipe-in-a-cell"),
    pytest.param("| pattern | token | trace id |\n|---|---|---|\n| `a | b` | {v} | t-1 |", SHA[:32],
                 id="pipe-in-code-splits"),
    pytest.param("| name | request id |\n|---|---|\n| billing | api key; {v} |", SHA[:32], id="cell-names-behind-a-semicolon"),
    pytest.param("see https://x.example.net/webhooks/a1b2c3d4/password: {v}", "Harbor0!Harbor",
                 id="password-run-on-past-a-webhook"),
    # An id's word names hex, a UUID or a ULID, not a base62 token; a key after a value in JSON
    # names the next value.
    pytest.param("the session id is {v}, paste it into the cookie", _B62[:28], id="session-id-base62"),
    pytest.param("the token for project id 4411 is {v}", _B62[:28], id="id-of-another-value"),
    pytest.param("the deploy value for project id 4411 is {v}", _B62[:28], id="id-with-its-own-value"),
    pytest.param("access key id {v}", _B62[:28], id="id-beside-a-credential-word"),
    pytest.param("the deploy job reads {v} from the vault at start", _UUID, id="record-noun-from-afar"),
    pytest.param("license serial: {v}", _B62[:28], id="license-serial"),
    # A KSUID's form is any 27 base62 characters: a query's id names it only where its first 32
    # bits are seconds of this era (one random run in six reads so; this one reads as 2145). Said
    # right before it in prose ("the batch KSUID <v>"), an id's word names any form up to 28.
    pytest.param("https://app.example.com/replay?event_id={v}", "ZDPbWG2kLd1QuD7WP6lGFGCAoLE",
                 id="ksuid-of-no-era-in-a-query"),
    pytest.param("https://app.example.com/login/magic?id={v}", _B62[:28], id="id-in-a-query"),
    pytest.param('{{"session": {{"id": "{v}"}}}}', _B62[:28], id="session-object-id"),
    pytest.param('{{"token": "{v}", "id": 12}}', SHA[:32], id="json-key-after-the-value"),
    # A password a person chose, a word and a number, where it is the password: after a copula
    # and an adverb, before its word with "as" or "is", glued in Chinese.
    pytest.param("the wiki's password is still {v} until Friday", "Lighthouse1987", id="word-number-after-adverb"),
    pytest.param("set {v} as the router password", "ravensworth2031", id="word-number-before-its-word"),
    pytest.param("我把 {v} 设成了测试环境的密码", "chenjia0923", id="word-number-before-zh"),
    pytest.param("La contraseña que elegiste, {v}, ya funciona", "Girasol2029", id="word-number-aside"),
    pytest.param("the password you sent me yesterday, {v}, opens the staging box", "Marigold1988",
                 id="word-number-aside-en"),
    pytest.param("Пароль для стенда — {v}, поменяй потом", "Vostok1961", id="word-number-ru"),
    pytest.param("Kata sandi server uji adalah {v}, jangan dibagikan", "Bandung1945", id="word-number-id-copula"),
    pytest.param("Я задал {v} паролем для стенда", "Zenit#1925", id="chosen-before-an-inflected-word"),
    # After a key's name, capitals, small letters and a digit as a policy asks, with no sign
    # (hypothesis found `Harbor0-Harbor` unseeded).
    pytest.param('`const encryptionKey = "{v}"`', "Lantern7-Lantern", id="policy-password-after-a-key"),
    # A login's `user / password` pair after a login's verb in other languages, or before a
    # Chinese, Japanese or Korean one.
    pytest.param("Entra con deploy / {v} y revisa el panel", "Tr0mp3t4Az", id="login-pair-es"),
    pytest.param("Zaloguj się jako qa / {v} i sprawdź raport", "Wisla#1928", id="login-pair-pl"),
    pytest.param("请用 ops / {v} 登录测试环境", "Huangshan#33", id="login-pair-verb-after-zh"),
    # An option named for a password with a number (imapsync's two accounts), curl's `user:pw`.
    pytest.param("`imapsync --user1 ana --password1 {v} --host2 localhost`", "bluecanoe88", id="password-option-numbered"),
    pytest.param("`curl -u admin:{v} https://ci.internal/api/json`", "CoffeeTableMountain", id="curl-user-password"),
    # An option named for a password in any case, quoted whole; `user:pw` after auth; a subscript;
    # a PIN after its name, in prose too; a name and its value as options; SQL's clause; a
    # passphrase in quotes after its word; words to a quote in an assignment.
    pytest.param("`ssh-keygen -t ed25519 -N '{v}' -f deploy_key`", "wooden kites sail north", id="quoted-passphrase"),
    pytest.param("`provision -adminPassword {v} -host kiosk`", "Quarry_51x", id="camel-case-option"),
    pytest.param("`tool.exe /password:{v} /user:kiosk`", "Ferret#204", id="windows-option"),
    pytest.param("`jenkins-cli -auth svc:{v} build job`", "Plover_883", id="auth-pair"),
    pytest.param("`app.credentials=svc:{v}`", "Quokka!22x", id="credentials-pair"),
    pytest.param("`settings['db_password'] = '{v}'`", "Heron_Cove_9", id="subscript"),
    pytest.param("`ykman piv access change-pin --new-pin {v}`", "582014", id="pin-option"),
    pytest.param("`KIOSK_PIN: {v}`", "4471", id="pin-key"),
    pytest.param('`AT+CPIN="{v}"`', "6620", id="pin-at-command"),
    pytest.param("`reg add HKLM\\Winlogon /v DefaultPassword /t REG_SZ /d {v} /f`", "Marten_Lodge_3",
                 id="name-and-value-options"),
    pytest.param("`ALTER ROLE app WITH LOGIN PASSWORD '{v}'`", "quiet brook under pines", id="sql-password"),
    pytest.param('`wpa_passphrase CabinNet "{v}"`', "moss on the north wall", id="wpa-passphrase"),
    pytest.param("the smartcard PIN is {v} and locks after three tries", "318604", id="pin-in-prose"),
    pytest.param("the vault's passphrase is '{v}', keep it offline", "lichen under old stones", id="passphrase-in-quotes"),
    pytest.param('`Environment="BACKUP_PASSPHRASE={v}"`', "slow rivers carry sand", id="words-to-a-quote"),
    pytest.param("Le mot de passe de l'équipe est « {v} »", "lent soleil 4412", id="passphrase-in-guillemets"),
    pytest.param('`"password": "{v}"`', "Winter is coming 2024", id="spaced-password-is-no-message"),
    pytest.param('`"password": "{v}"`', "supersecretpassword", id="one-word-holding-the-word"),
    pytest.param("`tool --db_password {v}`", "Hunter2x9", id="snake-case-option"),
    pytest.param("the passphrase is '{v}'", "quiet brook under pines.", id="passphrase-with-a-stop"),
    pytest.param('la passphrase dell\'archivio è "{v}"', "vento sopra il porto", id="passphrase-after-an-elision"),
    # What a login or a lock is given "with", and more places by position.
    pytest.param("the report worker reaches Redis as cache_ro with {v} every hour", "Pelt7_Orchard",
                 id="as-an-account-with"),
    pytest.param("la passerelle se connecte comme admin avec {v}", "moss7Lantern", id="as-an-account-fr"),
    pytest.param("the gateway signs in with {v} after a reboot", "moss7Lantern", id="signs-in-with"),
    pytest.param("the fire safe unlocks with {v}.", "40271963", id="unlocks-with-digits"),
    pytest.param("`$env:DeployPassPhrase = '{v}'`", "amber fields at dusk", id="camel-pass-phrase"),
    pytest.param("`7z x '-p{v}' drop.7z`", "Kelp&Stone41", id="quoted-glued-option"),
    pytest.param("`curl -fsu ops:{v} https://nexus.internal/`", "Brine+Dock52", id="combined-short-flags"),
    pytest.param("if the upload fails, check --user ops:{v} in deploy.sh", "Brine+Dock52", id="user-pair-option"),
    pytest.param("`GATE_ENTRY_CODE={v}`", "630518", id="gate-code-key"),
    pytest.param("the loading dock's keypad code is {v}", "71930", id="keypad-code-in-prose"),
    pytest.param("never paste {v}\n-9c41-d27e08b5a3f6 into the ticket", "7f3ac2d1-58be-beef",
                 id="uuid-wrapped-at-a-word-like-group"),
    pytest.param("never paste {v} into the ticket", "q8>Vt&m;&Rw4<Lz(k", id="signed-by-brackets-and-joins"),
    pytest.param("never paste {v} into the ticket", "hT4kW&(7Rq()vLmN9z", id="signed-by-an-empty-call"),
    pytest.param("rotate {v} tomorrow", "Qx4;Wn8<Rj3>Lp6q", id="signed-by-a-tag-like-run"),
    pytest.param("rotate {v} tomorrow", "Kd5]Tg2&Hw7|Np4<Ru", id="signed-ending-in-an-opening"),
    pytest.param("never paste {v} into the ticket", "Bx7~qL%D3mr#Zt%4k", id="percent-sign-not-an-escape"),
    pytest.param("`net use Y: \\\\nas02\\media {v} /user:LAB\\render`", "Quill_Arbor_6",
                 id="net-use-password-before-user"),
    pytest.param("`sendemail -f a@x.example -t b@x.example -xu bot -xp {v}`", "lark7pond", id="sendemail-xp"),
    pytest.param("`[mail.relay.example]:2525 courier:{v}` in sasl_passwd", "tern5Quay", id="postfix-sasl-passwd"),
    pytest.param('env:\n- name: SMTP_PASSWORD\n  value: "{v}"', "Oxbow-Lane-12", id="kubernetes-env-pair"),
    pytest.param("| field | value |\n|---|---|\n| redis_password | {v} |", "Mire9Falcon", id="table-row-key"),
    # From a fresh probe of 128 kinds in 18 shapes and a blind list of dotted values (the fifth stop
    # of 2026-12-06): an issuer's prefix before hex after an idiom or a verb that names a record
    # or a commit; a generated password a dot joins, whole past a finding before its dot; a mixed
    # case tail after a dash; a password's name first in a variable's (`password_for_wifi`).
    pytest.param("for the record {v}", "bkua_" + _chars("bkua", 40, "hex"), id="issuer-prefix-after-an-idiom"),
    pytest.param("Never commit {v} to the repo", "bkua_" + _chars("bkua2", 40, "hex"), id="issuer-prefix-after-commit"),
    pytest.param('`{{"curl_u": "deploy:{v}"}}` in the script', "tWq8Lzn.Rk3PmXv9", id="dotted-password-in-a-pair"),
    pytest.param("Keep the value {v} out of the notes", "mPq7Rtz_3k.W8xK", id="dotted-password-bare"),
    pytest.param("Please store {v} somewhere safer than this chat", "Qm7X.vz52kxtP.4hn81w",
                 id="dotted-password-ending-like-an-extension"),
    pytest.param("the refresh token I got back was `{v}`, it fails", "QwErT5yUiOp3AsDfGh.KjL9.ZxCvB7nM",
                 id="token-whole-past-its-dot"),
    pytest.param("Keep the value {v} out of the notes", "pLm4Wq9zT2#-RvKx", id="signed-password-mixed-case-tail"),
    pytest.param('`{{"password_for_wifi": "{v}"}}` in the kiosk config', "Kestrel_Mavu4471", id="key-password-for-a-thing"),
    pytest.param('`{{"mot_de_passe": "{v}"}}` in the relay config', "Lierre-Gris-904", id="key-name-of-words-in-snake-case"),
    # ... and the reviews': a password holding a bracket's range is no pattern, nor one with `~`
    # ending in `.` and letters a file's name.
    pytest.param("use {v} to log in to the staging box", "TQZh[f-W]5CjXn6", id="bracket-range-in-a-password"),
    pytest.param("DB_PASSWORD={v} on the replica", "Xu[K-VbUp]wC1N", id="bracket-range-with-a-name"),
    pytest.param("the VPN is {v} since Monday", "nsUA1iyxO~oxZR.okjn", id="tilde-password-ending-like-a-file"),
    # A recovery phrase a link's query joins with `%20` or `+`, under the phrase's own name.
    pytest.param("never log https://wallet.example/restore?seed_phrase={v} in the proxy",
                 "%20".join("animal atom clump brief wrist bench category cushion bundle change creek broken".split()),
                 id="seed-phrase-in-a-query-with-percent-spaces"),
    pytest.param("the metamask import link was /import?mnemonic={v}&net=1",
                 "+".join("gravity oyster ladder velvet mango tunnel prison frost kidney olive shrimp humble".split()),
                 id="seed-phrase-in-a-query-with-plus-spaces"),
    # ... whose words may end in `s` as plurals do (`cactus`, `canvas`); and a PIN's key whose
    # first piece names a public thing (from a blind list a helper wrote without reading the code).
    pytest.param("the wallet backup tool saved /save?seed={v} in its log",
                 "%20".join("eternal cactus advance garlic board emerge naive canvas antenna reef garment unicorn".split()),
                 id="seed-phrase-in-a-query-with-words-ending-in-s"),
    pytest.param('`{{"public_door_controller_admin_pin": "{v}"}}` in the device profile', "FjHAGLH93vJ-IE_U_%",
                 id="pin-key-opening-with-public"),
    # Generated parts joined by brackets and `;&<`, the last like a tag's opening (property 1 at 200
    # examples, unseeded): a place-holder's `<name` follows one name, not a run of joins.
    pytest.param("Never rotate [the hook](https://ci.example.com/hooks/{v}) by hand", "WQDvX;K)JX;bFc4ttOvG&hpe3KBjU8q<cpms",
                 id="joins-ending-like-a-tag"),
    # A value a named rule finds up to a line break runs on to the next line's first run (a
    # terminal's wrap); a key's value in bold whose quote is never closed.
    pytest.param("Never rotate {v} by hand in `deploy.sh`", "curl -u deploy:sUQm\nnVX.LYZ7iSo1", id="curl-user-wrapped"),
    pytest.param("the cron runs {v} reports < nightly.sql", "mysql -u rep -pTr7u\nx_Vq92Lm", id="glued-option-wrapped"),
    pytest.param("it hangs at {v} admin@10.0.4.17", "sshpass -p Wq8z\nR!t5Kp3", id="sshpass-wrapped-after-four"),
    pytest.param('Always pass **"pass": "{v}** to `release.py`', "hTWSABAe_7x.A17@", id="unclosed-quote-in-bold"),
    # ... and a public value opening the next line leaves the cut value withheld (a review's).
    pytest.param("db_password: {v}\n$2b$12$KIXQJ8Rz0pT5rLq7VwY9UuE1nF3cH6gS2dA4bM8oZ0xW1yV3uT5sq", "Hunter2Pass9",
                 id="password-then-a-hash-line"),
    pytest.param("export AWS_SECRET_ACCESS_KEY={v}\narn:aws:iam::123456789012:role/deploy-role",
                 "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8TvLkA3m", id="secret-then-an-arn-line"),
]


# Inputs a review found exponential or quadratic in the option and auth rules: each is scanned in
# well under a second (tens of seconds before), or in linear time where the machine is slower.
LONG_INPUTS = [
    pytest.param("token -" + "-".join(["aB"] * 40), id="dashed-capitals"),
    pytest.param("the token spec covers -" + "-".join(["getUserByIdAndRole"] * 30) + " x", id="dashed-camel"),
    pytest.param("-" + "someLongCamelCaseIdentifier" * 740 + " token", id="long-camel"),
    pytest.param("token " + "aBcD" * 5000 + "+Ef " + "ab+" * 7000 + "Cd", id="long-base64-plus"),
    pytest.param("a." * 10000 + "credentials=x:y", id="dotted-before-credentials"),
    # A tool's name met again and again on one line (`net`: 64 s at 40,000 characters before).
    pytest.param(("the net effect is that teams use caching, net of costs. " * 800)[:40000], id="tool-name-repeated"),
    pytest.param("sendemail " * 4000, id="tool-name-alone-repeated"),
    # Signed lines a line break joins, one finding each (a table's header and the policy check
    # were looked for once a finding: 1.6 s at 50,000 characters before).
    pytest.param(("a(B3)c!D4e\nF5%g(H6)i\n" * 2500)[:50000], id="wrapped-signed-lines"),
]


def _scan_seconds(text: str) -> float:
    started = time.perf_counter()
    md.scan_secrets(text)
    return time.perf_counter() - started


@pytest.mark.parametrize("text", LONG_INPUTS)
def test_a_long_input_is_scanned_in_linear_time(text: str) -> None:
    """Under a second, or, on a slow or busy machine, under 25 times a tenth of it: linear reads
    ten times as long, quadratic a hundred (the best of two runs each)."""
    whole = min(_scan_seconds(text) for _ in range(2))
    tenth = min(_scan_seconds(text[:len(text) // 10]) for _ in range(2))
    assert whole < max(1.0, 25 * tenth), (whole, tenth)


@pytest.mark.parametrize(("place", "value"), VALUE_PLACES)
def test_a_value_in_its_place_is_withheld(place: str, value: str) -> None:
    text = place.format(v=value)
    at = text.index(value)
    hits = md.scan_secrets(text)
    assert all(any(hit.start <= i < hit.end for hit in hits) for i in range(at, at + len(value))), text


# A documentation's example is shown (EXAMPLE_SECRET), but not the credential on the next line:
# it is not extended over it (cut_value), nor does it make the span it merges with an example.
EXAMPLE_THEN_SECRET = [
    pytest.param("the docs use AKIAIOSFODNN7EXAMPLE\n{v} in prod", "ghp_R8kQ2mLx7VtN3pWz9YbC4dFh6JsA1eGu5TiO",
                 id="example-key-then-a-real-token"),
    pytest.param("password: EXAMPLEpass123\nroot:{v}@db", "Tr7u!kQ9zLm2Xv", id="example-password-then-a-login"),
    pytest.param("token: sk_test_EXAMPLE0000000000000000\nhunter2:{v}", "Tr7u!kQ9zLm2Xv", id="example-token-then-a-pair"),
]


@pytest.mark.parametrize(("place", "value"), EXAMPLE_THEN_SECRET)
def test_an_example_does_not_show_the_credential_after_it(place: str, value: str) -> None:
    assert value not in md.withhold(place.format(v=value))


@pytest.mark.parametrize("place", HEX_KEY_PLACES)
def test_a_hex_key_beside_an_id_word_is_withheld(place: str) -> None:
    value = SHA[:32]
    text = place.format(v=value)
    assert any(hit.start <= text.index(value) < hit.end for hit in md.scan_secrets(text)), text


@pytest.mark.parametrize(("message", "value"), LOOKALIKES)
def test_lookalike_passes_the_gate(message: str, value: str) -> None:
    """--explain shows it (the patch and --explain decide alike), and lint finds no secret."""
    stage = stage_of(message, value)
    assert not stage.startswith(("dropped_secret", "withheld")), (message, stage)
    lint = md.lint_text(MEMORY + f"- {message}\n")
    assert not [f for f in lint if f[1] == "secret"], lint


# A key's phrase (KEY_PHRASE) is a key before its own sign on its line: not a name ending a line
# before a rule of `=` (a test log's `=== RUN`), a comparison or a C++ scope.
@pytest.mark.parametrize(("text", "key"), [
    pytest.param('`{"mật_khẩu_máy_chủ": "x"}`', "mật_khẩu_máy_chủ", id="json-key"),
    pytest.param("`clave_del_wifi_de_casa=x`", "clave_del_wifi_de_casa", id="field"),
    pytest.param("TestRegistry/Register_and_Get\n=== RUN   TestX", None, id="a-name-before-a-rule-line"),
    pytest.param("if user_input_value == expected:", None, id="a-comparison"),
    pytest.param("std_chrono_steady::now()", None, id="a-scope"),
])
def test_a_key_phrase_is_a_key_before_its_sign(text: str, key: str | None) -> None:
    found = md.KEY_PHRASE.search(text)
    assert (found and found[1]) == key
