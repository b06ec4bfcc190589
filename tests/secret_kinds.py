"""The table of issue 12: credential and personal-data kinds, the ten shapes a value takes in
a sentence, and the look-alikes that must pass (used by tests/test_secret_table.py).

Plain data and generators, no test logic.

KINDS -- one row per kind: an id, a family ("secret" or "pii"), the format it follows (as the
issuer documents it, or as gitleaks and CredSweeper match it), a generator, and how the value
sits in a sentence: the words before it (`lead`, for kinds that are only a secret after a
keyword), where a soft hyphen goes inside its prefix, and how it goes into a URL. A generator
returns a Token: the value as written, and its random parts; no 12-character window of a
random part may be printed by any mode.

SHAPES -- ten ways a value sits in a message. Each frame is a strong memory candidate on its
own (a rule with a reason, naming code, long enough), so that, without a secret gate, the
sentence would be proposed; the control (the frame with the value replaced by NEUTRAL) shows
that it is.

LOOKALIKES -- sentences holding things that look like credentials or personal data and are
neither; no secret rule may withhold them.

No literal credential is in this file. Every value is made when the table is built, from
random.Random seeded with "<SEED>:<kind>:<shape>", so the same seed gives the same table.
Where a format carries a checksum the generated value carries a valid one: GitHub and npm
(CRC32 of the random part in base62), Atlassian (CRC32 in hex), Grafana (CRC32, little
endian hex), age (bech32), OpenPGP armor (CRC-24), PuTTY PPK v3 (HMAC-SHA-256 MAC), and JWTs
are signed (HMAC-SHA-256 with a random key). Invisible characters are written as escapes.
"""

import base64
import hashlib
import hmac
import json
import os
import random
import string
import struct
import urllib.parse
import uuid
import zlib
from typing import Callable, NamedTuple, Optional, Tuple, Union

import gate_cases as gc

SEED = os.environ.get("MEMORY_DIFF_TABLE_SEED", "memory-diff-secret-table-v1")

ALNUM = string.ascii_letters + string.digits
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase  # the checksum order
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
UPPER_NUM = string.ascii_uppercase + string.digits
B32 = string.ascii_uppercase + "234567"  # AWS key ids
DIGITS = string.digits
PUNCT_PW = ALNUM + "!%*+-=_"

ZWSP = "\u200b"
SHY = "\u00ad"

# --------------------------------------------------------------------------- generators


class Token(NamedTuple):
    value: str                      # as written in the sentence (before a shape touches it)
    randoms: Tuple[str, ...]        # the random parts: windows are taken over these
    bare: Optional[str] = None      # the value without its keyword, for a URL query


def chars(rng, n, alphabet):
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(rng, n, alphabet=ALNUM):
    """n characters holding every class (upper, lower, digit) the alphabet has, so that a
    value is never rejected for looking like a word."""
    need = [cls for cls in (str.isupper, str.islower, str.isdigit) if any(cls(c) for c in alphabet)]
    while True:
        s = chars(rng, n, alphabet)
        if all(any(cls(c) for c in s) for cls in need) and "example" not in s.lower():
            return s


def rbytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def digits(rng, n):
    return str(rng.randint(1, 9)) + chars(rng, n - 1, DIGITS)


def b64(raw):
    return base64.b64encode(raw).decode()


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def base62(n, width=6):
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = BASE62[r] + out
    return out.rjust(width, "0")


def crc32(text):
    return zlib.crc32(text.encode()) & 0xFFFFFFFF


def crc24(data):
    """OpenPGP armor checksum, RFC 4880 section 6.1."""
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32_polymod(values):
    gen = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            if (top >> i) & 1:
                chk ^= gen[i]
    return chk


def bech32_hrp(hrp):
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def bech32_encode(hrp, data):
    acc = bits = 0
    five = []
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            five.append((acc >> bits) & 31)
    if bits:
        five.append((acc << (5 - bits)) & 31)
    pm = bech32_polymod(bech32_hrp(hrp) + five + [0] * 6) ^ 1
    five += [(pm >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32[d] for d in five)


def ssh_string(data):
    return struct.pack(">I", len(data)) + data


def lines_of(text, width):
    return [text[i:i + width] for i in range(0, len(text), width)]


def long_pieces(lines):
    """Random parts of a multi-line body: its lines long enough to hold a window."""
    return tuple(line for line in lines if len(line) >= 12)


def with_prefix(prefix, n, alphabet=ALNUM, head=""):
    """prefix + head + n random characters; the random part is head + the characters."""
    def make(rng, shape):
        body = head + mixed(rng, n, alphabet)
        return Token(prefix + body, (body,))
    return make


def github_classic(prefix):
    # 30 random base62 characters and a CRC32 of them in base62, zero-padded to 6
    # (github.blog, "Behind GitHub's new authentication token formats"; npm uses the same).
    def make(rng, shape):
        body = mixed(rng, 30)
        body += base62(crc32(body))
        return Token(prefix + body, (body,))
    return make


def github_fine_grained(rng, shape):
    body = mixed(rng, 22) + "_" + mixed(rng, 59)
    return Token("github_pat_" + body, (body,))


def pypi(rng, shape):
    # A macaroon, serialized v2 and base64url'd: location pypi.org, a UUID identifier, one
    # caveat, a 32-byte signature. Every PyPI token starts pypi-AgEIcHlwaS5vcmc.
    def field(kind, data):
        return bytes((kind, len(data))) + data
    ident = str(uuid.UUID(bytes=rbytes(rng, 16), version=4)).encode()
    caveat = json.dumps({"version": 1, "permissions": "user"}).encode()
    raw = (b"\x02" + field(1, b"pypi.org") + field(2, ident) + b"\x00"
           + field(2, caveat) + b"\x00" + b"\x00" + field(6, rbytes(rng, 32)))
    body = b64url(raw)
    head = "AgEIcHlwaS5vcmc"
    assert body.startswith(head), body
    return Token("pypi-" + body, (body[len(head):],))


def slack_bot(rng, shape):
    body = f"{digits(rng, 12)}-{digits(rng, 13)}-{mixed(rng, 24)}"
    return Token("xoxb-" + body, (body,))


def slack_user(rng, shape):
    body = f"{digits(rng, 12)}-{digits(rng, 12)}-{digits(rng, 13)}-{mixed(rng, 32, HEX)}"
    return Token("xoxp-" + body, (body,))


def slack_webhook(rng, shape):
    body = f"T{chars(rng, 10, UPPER_NUM)}/B{chars(rng, 11, UPPER_NUM)}/{mixed(rng, 24)}"
    return Token("https://hooks.slack.com/services/" + body, (body,))


def stripe(prefix):
    def make(rng, shape):
        body = "51" + mixed(rng, 97)  # 107 characters in all, as Stripe issues them now
        return Token(prefix + body, (body,))
    return make


def sendgrid(rng, shape):
    a, b = mixed(rng, 22, B64URL), mixed(rng, 43, B64URL)
    return Token(f"SG.{a}.{b}", (a, b))


def postman(rng, shape):
    a, b = mixed(rng, 24, HEX), mixed(rng, 34, HEX)
    return Token(f"PMAK-{a}-{b}", (a, b))


def discord_bot(rng, shape):
    # base64 of the bot's user id, a base64url timestamp, a base64url HMAC.
    uid = str(rng.randrange(10 ** 17, 10 ** 19))
    secret = mixed(rng, 6, B64URL) + "." + mixed(rng, 38, B64URL)
    return Token(b64(uid.encode()).rstrip("=") + "." + secret, (secret,))


def discord_webhook(rng, shape):
    token = mixed(rng, 68, B64URL)
    return Token(f"https://discord.com/api/webhooks/{digits(rng, 19)}/{token}", (token,))


def telegram_bot(rng, shape):
    secret = "AA" + mixed(rng, 33, B64URL)  # 35 characters after the colon
    return Token(f"{digits(rng, 10)}:{secret}", (secret,))


def uuid4(rng, shape):
    value = str(uuid.UUID(bytes=rbytes(rng, 16), version=4))
    return Token(value, (value,))


def azure_storage(rng, shape):
    key = b64(rbytes(rng, 64))  # 88 characters, ending ==
    account = "acme" + chars(rng, 6, string.ascii_lowercase + DIGITS)
    return Token(f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};"
                 "EndpointSuffix=core.windows.net", (key,))


def azure_sas(rng, shape):
    raw = b64(rbytes(rng, 32))
    sig = urllib.parse.quote(raw, safe="")
    account = "acme" + chars(rng, 6, string.ascii_lowercase + DIGITS)
    return Token(f"https://{account}.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rl"
                 f"&se=2026-12-31T00:00:00Z&spr=https&sig={sig}", (sig, raw))


def openai_legacy(rng, shape):
    body = mixed(rng, 20) + "T3BlbkFJ" + mixed(rng, 20)
    return Token("sk-" + body, (body,))


def openai_project(rng, shape):
    body = mixed(rng, 58, B64URL) + "T3BlbkFJ" + mixed(rng, 58, B64URL)
    return Token("sk-proj-" + body, (body,))


def anthropic(rng, shape):
    body = mixed(rng, 93, B64URL) + "AA"
    return Token("sk-ant-api03-" + body, (body,))


JWT_HEADER = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())


def _jwt(rng, payload):
    signed = f"{JWT_HEADER}.{payload}"
    sig = b64url(hmac.new(rbytes(rng, 32), signed.encode(), hashlib.sha256).digest())
    return Token(f"{signed}.{sig}", (payload, sig))


def jwt(rng, shape):
    claims = {"sub": digits(rng, 10), "name": chars(rng, 8, string.ascii_lowercase), "role": "admin",
              "iat": rng.randrange(1_700_000_000, 1_800_000_000)}
    return _jwt(rng, b64url(json.dumps(claims, separators=(",", ":")).encode()))


def jwt_not_json(rng, shape):
    while True:
        payload = b64url(rbytes(rng, 30))  # an opaque (say, encrypted) payload
        if not payload.startswith("ey"):
            return _jwt(rng, payload)


def bearer(rng, shape):
    token = mixed(rng, 40, B64URL)
    return Token("Authorization: Bearer " + token, (token,), bare=token)


def basic_auth_url(rng, shape):
    pw = mixed(rng, 20)
    return Token(f"https://deploy:{pw}@git.acme-corp.io/platform/app.git", (pw,))


def _pem(label, raw, width=64):
    lines = lines_of(b64(raw), width)
    return Token(f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----",
                 long_pieces(lines))


def pem_rsa(rng, shape):
    return _pem("RSA PRIVATE KEY", gc._PEM_DER_PREFIX["RSA PRIVATE KEY"] + rbytes(rng, 300))


def pem_ec(rng, shape):
    # An EC P-256 key as OpenSSL writes it: version, the 32-byte private key, the curve's
    # OID, the 65-byte public point. 121 bytes, three lines.
    raw = (bytes.fromhex("30770201010420") + rbytes(rng, 32)
           + bytes.fromhex("a00a06082a8648ce3d030107a144034200") + b"\x04" + rbytes(rng, 64))
    return _pem("EC PRIVATE KEY", raw)


def pem_openssh(rng, shape):
    return _pem("OPENSSH PRIVATE KEY", gc._PEM_DER_PREFIX["OPENSSH PRIVATE KEY"] + rbytes(rng, 260), 70)


def pgp_block(rng, shape):
    # A secret-key packet (new format, tag 5, v4, EdDSA) in ASCII armor with its CRC-24.
    body = b"\x04" + struct.pack(">I", rng.randrange(1_600_000_000, 1_800_000_000)) + b"\x16" \
        + bytes.fromhex("092b06010401da470f01") + b"\x01\x07\x40" + rbytes(rng, 32) + b"\x00" + rbytes(rng, 34)
    packet = bytes((0xC5, len(body))) + body
    lines = lines_of(b64(packet), 64)
    check = "=" + b64(crc24(packet).to_bytes(3, "big"))
    text = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(lines) + "\n" + check
            + "\n-----END PGP PRIVATE KEY BLOCK-----")
    return Token(text, long_pieces(lines))


def ssh2_encrypted(rng, shape):
    # The ssh.com (SECSH, RFC 4716 armor) private key: magic 3f6ff9eb, then the key type,
    # the cipher and the encrypted key.
    inner = (ssh_string(b"if-modn{sign{rsa-pkcs1-sha1},encrypt{rsa-pkcs1v2-oaep}}")
             + ssh_string(b"3des-cbc") + ssh_string(rbytes(rng, 240)))
    raw = bytes.fromhex("3f6ff9eb") + struct.pack(">I", len(inner) + 8) + inner
    lines = lines_of(b64(raw), 70)
    text = ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n"
            f'Comment: "2048-bit rsa, deploy key {chars(rng, 6, HEX)}"\n'
            + "\n".join(lines) + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----")
    return Token(text, long_pieces(lines))


def putty_ppk(rng, shape):
    # PuTTY-User-Key-File-3, ssh-ed25519, not encrypted: the MAC is HMAC-SHA-256 with an
    # empty key over algorithm, encryption, comment, public blob and private blob.
    alg, enc = b"ssh-ed25519", b"none"
    comment = f"eddsa-key-2026011{rng.randint(0, 9)}".encode()
    public = ssh_string(alg) + ssh_string(rbytes(rng, 32))
    private = ssh_string(rbytes(rng, 32))
    mac = hmac.new(b"", ssh_string(alg) + ssh_string(enc) + ssh_string(comment)
                   + ssh_string(public) + ssh_string(private), hashlib.sha256).hexdigest()
    pub_lines, priv_lines = lines_of(b64(public), 64), lines_of(b64(private), 64)
    text = "\n".join([f"PuTTY-User-Key-File-3: {alg.decode()}", f"Encryption: {enc.decode()}",
                      f"Comment: {comment.decode()}", f"Public-Lines: {len(pub_lines)}", *pub_lines,
                      f"Private-Lines: {len(priv_lines)}", *priv_lines, f"Private-MAC: {mac}"])
    return Token(text, long_pieces(priv_lines) + (mac,))


def quoted_password(rng, shape):
    pw = list(mixed(rng, 18, PUNCT_PW))
    for mark in ",;":
        pw.insert(rng.randint(2, len(pw) - 2), mark)
    pw = "".join(pw)
    return Token(f'"{pw}"', (pw,), bare=pw)


def plain(n, alphabet=ALNUM):
    def make(rng, shape):
        value = mixed(rng, n, alphabet)
        return Token(value, (value,))
    return make


def base64_named(rng, shape):
    token = github_classic("ghp_")(rng, shape).value
    value = b64(f"export GITHUB_TOKEN={token}\n".encode())
    return Token(value, (value, token[4:]))


def base64_random(rng, shape):
    value = b64(rbytes(rng, 32))
    return Token(value, (value,))


def assignment(name, n, alphabet=ALNUM):
    def make(rng, shape):
        value = mixed(rng, n, alphabet)
        return Token(name + value, (value,), bare=value)
    return make


def atlassian(rng, shape):
    # ATATT3 + base64url + "=" + the CRC32 (8 hex) of everything before it; 192 characters.
    head = "ATATT3xFfGF0" + mixed(rng, 171, B64URL) + "="
    value = head + f"{crc32(head):08X}"
    return Token(value, (value[12:],))


def sentry_org(rng, shape):
    claims = {"iat": rng.randrange(1_700_000_000, 1_800_000_000) + rng.random(), "url": "https://sentry.io",
              "region_url": "https://us.sentry.io", "org": "acme-" + chars(rng, 4, string.ascii_lowercase)}
    secret = mixed(rng, 43, B64)
    return Token("sntrys_" + b64(json.dumps(claims, separators=(",", ":")).encode()) + "_" + secret, (secret,))


def grafana_sa(rng, shape):
    head = "glsa_" + mixed(rng, 32)
    value = head + "_" + struct.pack("<I", crc32(head)).hex()
    return Token(value, (value[5:],))


def age_key(rng, shape):
    value = bech32_encode("age-secret-key-", rbytes(rng, 32)).upper()
    return Token(value, (value[len("AGE-SECRET-KEY-1"):],))


FIRST = ("jana", "li", "amir", "sofia", "kenji", "olu", "marta", "wei", "priya", "tomas")
LAST = ("novak", "chen", "haddad", "rossi", "sato", "adeyemi", "silva", "zhang", "iyer", "berg")


def email(rng, shape):
    local = f"{rng.choice(FIRST)}.{rng.choice(LAST)}.{chars(rng, 4, HEX)}"
    return Token(f"{local}@{rng.choice(('proton.me', 'fastmail.com', 'acme-corp.io', '163.com', 'qq.com'))}",
                 (local,))


def intl_phone(rng, shape):
    cc, groups = rng.choice((("44", (2, 4, 4)), ("49", (2, 4, 4)), ("61", (1, 4, 4)),
                             ("81", (2, 4, 4)), ("33", (1, 2, 2, 2, 2))))
    parts = [digits(rng, n) for n in groups]
    if shape == "url":
        return Token(f"+{cc}{''.join(parts)}", ("".join(parts),))
    return Token(f"+{cc} {' '.join(parts)}", (" ".join(parts),))


def cn_mobile(rng, shape):
    number = "1" + rng.choice("3456789") + chars(rng, 9, DIGITS)
    if shape == "url":
        return Token("+86" + number, (number,))
    if SHAPES.index(shape) % 2 == 0:  # half the shapes with +86 and spaces, half bare
        spaced = f"{number[:3]} {number[3:7]} {number[7:]}"
        return Token("+86 " + spaced, (spaced,))
    return Token(number, (number,))


LOWER_NUM = string.ascii_lowercase + string.digits
AZURE_TAIL = ALNUM + "_~.-"


def notion(rng, shape):
    body = digits(rng, 11) + mixed(rng, 35)
    return Token("ntn_" + body, (body,))


def terraform(rng, shape):
    head, tail = mixed(rng, 14), mixed(rng, 67, B64URL + "=")
    return Token(f"{head}.atlasv1.{tail}", (tail,))


def dynatrace(rng, shape):
    a, b = mixed(rng, 24, UPPER_NUM), mixed(rng, 64, UPPER_NUM)
    return Token(f"dt0c01.{a}.{b}", (a, b))


def flutterwave(rng, shape):
    body = mixed(rng, 32, "abcdefgh" + DIGITS)
    return Token(f"FLWSECK_TEST-{body}-X", (body,))


def airtable(rng, shape):
    a, b = mixed(rng, 14), mixed(rng, 64, HEX)
    return Token(f"pat{a}.{b}", (a + "." + b,))


def harness(rng, shape):
    a, b, c = mixed(rng, 22, B64URL), mixed(rng, 24, HEX), mixed(rng, 20)
    return Token(f"pat.{a}.{b}.{c}", (a, b, c))


def brevo(rng, shape):
    a, b = mixed(rng, 64, HEX), mixed(rng, 16)
    return Token(f"xkeysib-{a}-{b}", (a, b))


def onepassword(rng, shape):
    parts = [mixed(rng, n, UPPER_NUM) for n in (6, 11, 5, 5, 5)]
    return Token("A3-" + "-".join(parts), ("-".join(parts),))


def azure_client_secret(rng, shape):
    tail = mixed(rng, 34, AZURE_TAIL)
    return Token(f"{mixed(rng, 3)}{rng.randint(0, 9)}Q~{tail}", (tail,))


def slack_workflow(rng, shape):
    body = mixed(rng, 43)
    return Token("https://hooks.slack.com/workflows/" + body, (body,))


def grafana_legacy(rng, shape):
    value = b64(json.dumps({"k": mixed(rng, 32), "n": "deploy", "id": rng.randint(1, 9)},
                           separators=(",", ":")).encode())
    assert value.startswith("eyJrIjoi"), value
    return Token(value, (value[8:52],))


def xml_password(rng, shape):
    pw = mixed(rng, 18)
    return Token(f'<add key="ClearTextPassword" value="{pw}" />', (pw,), bare=pw)


def basic_header(rng, shape):
    encoded = b64(f"deploy:{mixed(rng, 20)}".encode())
    return Token("Authorization: Basic " + encoded, (encoded,), bare=encoded)


def curl_user(rng, shape):
    pw = mixed(rng, 20, PUNCT_PW)
    return Token(f"curl -u deploy:{pw} https://api.acme-corp.io/v1/releases", (pw,), bare=pw)


def placeholder_word_first(rng, shape):
    pw = mixed(rng, 18)
    return Token("DB_PASSWORD=my" + pw, (pw,), bare="my" + pw)


def id_dash_secret(rng, shape):
    secret = mixed(rng, 25)
    return Token(f"{digits(rng, 15)}-{secret}", (secret,))


# --------------------------------------------------------------------------- kinds


class Kind(NamedTuple):
    id: str
    family: str                     # "secret" | "pii"
    fmt: str                        # the format generated (for the report and a reviewer)
    make: Callable[[random.Random, str], Token]
    lead: str = ""                  # words before the value when it is only a secret after a keyword
    lead_zh: Optional[str] = None   # the same in the Chinese shape
    soft: Union[int, str] = 2       # the soft hyphen goes after this many characters, or after
    soft_in: str = "value"          #   this text, in the value or in the lead
    url: str = "path"               # path: /hook/VALUE/run; next: ?next=VALUE; query: ?PARAM=bare
    param: str = "token"


def _k(*args, **kw):
    return Kind(*args, **kw)


KINDS = [
    # -- source hosts and package registries
    _k("github-ghp", "secret", "ghp_ + 30 base62 + 6 base62 CRC32 of the 30", github_classic("ghp_")),
    _k("github-ghs", "secret", "ghs_ + 30 base62 + 6 base62 CRC32 of the 30", github_classic("ghs_")),
    _k("github-fine-grained", "secret", "github_pat_ + 22 alnum + _ + 59 alnum", github_fine_grained),
    _k("gitlab-glpat", "secret", "glpat- + 20 [A-Za-z0-9]", with_prefix("glpat-", 20)),
    _k("gitlab-gldt", "secret", "gldt- + 20 [A-Za-z0-9_-]", with_prefix("gldt-", 20, B64URL)),
    _k("gitlab-glrt", "secret", "glrt- + 20 [A-Za-z0-9_-]", with_prefix("glrt-", 20, B64URL)),
    _k("npm", "secret", "npm_ + 30 base62 + 6 base62 CRC32 of the 30", github_classic("npm_")),
    _k("pypi", "secret", "pypi-AgEIcHlwaS5vcmc + base64url macaroon v2 (UUID id, caveat, 32-byte sig)", pypi),
    _k("huggingface", "secret", "hf_ + 34 [A-Za-z]", with_prefix("hf_", 34, string.ascii_letters)),
    _k("atlassian", "secret", "ATATT3xFfGF0 + 171 base64url + = + 8 hex CRC32 of the rest (192)", atlassian),
    _k("docker-hub", "secret", "dckr_pat_ + 27 base64url", with_prefix("dckr_pat_", 27, B64URL)),
    # -- chat, mail, payments, messaging
    _k("slack-bot", "secret", "xoxb- + 12 digits - 13 digits - 24 alnum", slack_bot),
    _k("slack-user", "secret", "xoxp- + 12 d - 12 d - 13 d - 32 hex", slack_user),
    _k("slack-webhook", "secret", "https://hooks.slack.com/services/T + 10 / B + 11 / 24 alnum", slack_webhook,
       soft=10, url="next"),
    _k("discord-bot", "secret", "base64(user id) . 6 base64url . 38 base64url after 'the Discord bot token'",
       discord_bot, lead="the Discord bot token ", lead_zh="Discord 的 bot token ", url="query",
       param="discord_bot_token"),
    _k("discord-webhook", "secret", "https://discord.com/api/webhooks/ + 19 digits / 68 base64url",
       discord_webhook, soft=10, url="next"),
    _k("telegram-bot", "secret", "10 digits : AA + 33 base64url", telegram_bot),
    _k("stripe-secret", "secret", "sk_live_51 + 97 alnum", stripe("sk_live_")),
    _k("stripe-restricted", "secret", "rk_live_51 + 97 alnum", stripe("rk_live_")),
    _k("square-oauth", "secret", "sq0atp- + 22 base64url", with_prefix("sq0atp-", 22, B64URL)),
    _k("square-access", "secret", "EAAA + 60 base64url", with_prefix("EAAA", 60, B64URL)),
    _k("twilio-api-key", "secret", "SK + 32 hex", with_prefix("SK", 32, HEX), soft=1),
    _k("twilio-auth-token", "secret", "32 hex after 'the Twilio auth token'", plain(32, HEX),
       lead="the Twilio auth token ", lead_zh="Twilio 的 auth token ", soft="auth to", soft_in="lead",
       url="query", param="auth_token"),
    _k("sendgrid", "secret", "SG. + 22 base64url . 43 base64url", sendgrid),
    _k("mailgun", "secret", "key- + 32 hex after 'the Mailgun API key'", with_prefix("key-", 32, HEX),
       lead="the Mailgun API key ", lead_zh="Mailgun 的 API key "),
    _k("shopify-access", "secret", "shpat_ + 32 hex", with_prefix("shpat_", 32, HEX)),
    _k("shopify-shared-secret", "secret", "shpss_ + 32 hex", with_prefix("shpss_", 32, HEX)),
    # -- clouds and platforms
    _k("aws-access-key-id", "secret", "AKIA + 16 [A-Z2-7]", with_prefix("AKIA", 16, B32)),
    _k("aws-sts-key-id", "secret", "ASIA + 16 [A-Z2-7]", with_prefix("ASIA", 16, B32)),
    _k("aws-secret-access-key", "secret", "40 [A-Za-z0-9+/] after 'the AWS secret access key'", plain(40, B64),
       lead="the AWS secret access key ", lead_zh="AWS 的 secret access key ", soft="secret ac",
       soft_in="lead", url="query", param="aws_secret_access_key"),
    _k("azure-storage-key", "secret", "connection string; AccountKey= 88-char base64 (64 bytes)", azure_storage,
       soft="AccountK"),
    _k("azure-sas", "secret", "blob URL with sig= percent-encoded base64 of 32 bytes", azure_sas,
       soft="&si", url="next"),
    _k("google-api-key", "secret", "AIza + Sy + 33 base64url (35 after AIza)", with_prefix("AIza", 33, B64URL, "Sy")),
    _k("google-oauth-secret", "secret", "GOCSPX- + 28 base64url", with_prefix("GOCSPX-", 28, B64URL)),
    _k("heroku-api-key", "secret", "UUID v4 after 'the Heroku API key'", uuid4,
       lead="the Heroku API key ", lead_zh="Heroku 的 API key ", soft="Hero", soft_in="lead",
       url="query", param="heroku_api_key"),
    _k("digitalocean", "secret", "dop_v1_ + 64 hex", with_prefix("dop_v1_", 64, HEX)),
    _k("cloudflare", "secret", "40 base64url after 'the Cloudflare API token'", plain(40, B64URL),
       lead="the Cloudflare API token ", lead_zh="Cloudflare 的 API token ", soft="API to", soft_in="lead",
       url="query", param="cf_api_token"),
    _k("databricks", "secret", "dapi + 32 hex", with_prefix("dapi", 32, HEX)),
    _k("vault", "secret", "hvs.CAESI + 86 base64url", with_prefix("hvs.", 86, B64URL, "CAESI")),
    _k("doppler", "secret", "dp.pt. + 43 alnum", with_prefix("dp.pt.", 43)),
    _k("pulumi", "secret", "pul- + 40 hex", with_prefix("pul-", 40, HEX)),
    _k("supabase", "secret", "sbp_ + 40 hex", with_prefix("sbp_", 40, HEX)),
    _k("planetscale", "secret", "pscale_pw_ + 43 base64url", with_prefix("pscale_pw_", 43, B64URL)),
    _k("postman", "secret", "PMAK- + 24 hex - 34 hex", postman),
    _k("grafana", "secret", "glsa_ + 32 alnum _ + 8 hex (CRC32 of the rest, little endian)", grafana_sa),
    _k("new-relic", "secret", "NRAK- + 27 [A-Z0-9]", with_prefix("NRAK-", 27, UPPER_NUM)),
    _k("sentry", "secret", "sntrys_ + base64 JSON {iat,url,region_url,org} _ 43 base64", sentry_org),
    _k("linear", "secret", "lin_api_ + 40 alnum", with_prefix("lin_api_", 40)),
    # -- model providers
    _k("openai-legacy", "secret", "sk- + 20 alnum + T3BlbkFJ + 20 alnum", openai_legacy),
    _k("openai-project", "secret", "sk-proj- + 58 base64url + T3BlbkFJ + 58 base64url", openai_project),
    _k("anthropic", "secret", "sk-ant-api03- + 93 base64url + AA", anthropic),
    # -- generic carriers
    _k("jwt", "secret", "HS256 JWT: header . base64url JSON claims . HMAC-SHA256", jwt),
    _k("jwt-not-json", "secret", "HS256 JWT whose payload is 30 opaque bytes", jwt_not_json),
    _k("bearer-header", "secret", "Authorization: Bearer + 40 base64url (opaque)", bearer,
       url="query", param="access_token"),
    _k("basic-auth-url", "secret", "https://deploy:<20 alnum>@git.acme-corp.io/...", basic_auth_url, url="next"),
    _k("pem-rsa", "secret", "-----BEGIN RSA PRIVATE KEY----- DER base64, 64-column lines", pem_rsa, soft=7),
    _k("pem-ec", "secret", "-----BEGIN EC PRIVATE KEY----- P-256 DER (121 bytes)", pem_ec, soft=7),
    _k("pem-openssh", "secret", "-----BEGIN OPENSSH PRIVATE KEY----- openssh-key-v1, 70-column lines",
       pem_openssh, soft=7),
    _k("pgp-private-block", "secret", "-----BEGIN PGP PRIVATE KEY BLOCK----- tag-5 packet + CRC-24 line",
       pgp_block, soft=7),
    _k("ssh2-encrypted", "secret", "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ---- magic 3f6ff9eb, Comment:",
       ssh2_encrypted, soft=7),
    _k("putty-ppk", "secret", "PuTTY-User-Key-File-3 ssh-ed25519, Private-Lines + valid Private-MAC",
       putty_ppk, soft=3),
    _k("quoted-password", "secret", '"18 chars with , and ;" after \'the staging database password\'',
       quoted_password, lead="the staging database password ", lead_zh="预发布数据库的 password ",
       soft="pas", soft_in="lead", url="query", param="password"),
    _k("zh-mima", "secret", "密码是 + 16 [A-Za-z0-9!%*+-=_]", plain(16, PUNCT_PW),
       lead="the database password, 密码是", lead_zh="数据库密码，密码是", soft="密", soft_in="lead",
       url="query", param="password"),
    _k("zh-miyao", "secret", "密钥： + 32 base64 chars", plain(32, B64),
       lead="the deploy key, 部署密钥：", lead_zh="部署密钥：", soft="密", soft_in="lead",
       url="query", param="key"),
    _k("zh-lingpai", "secret", "令牌是 + 40 alnum", plain(40),
       lead="the access token, 访问令牌是", lead_zh="访问令牌是", soft="令", soft_in="lead",
       url="query", param="token"),
    _k("zh-kouling", "secret", "口令是 + 14 [A-Za-z0-9!%*+-=_]", plain(14, PUNCT_PW),
       lead="the admin passphrase, 管理口令是", lead_zh="管理口令是", soft="口", soft_in="lead",
       url="query", param="passphrase"),
    _k("base64-named-credential", "secret", "base64 of 'export GITHUB_TOKEN=ghp_...\\n' (no keyword outside it)",
       base64_named, lead="the encoded bootstrap blob ", lead_zh="编码后的启动数据 ", url="query", param="blob"),
    _k("base64-after-keyword", "secret", "base64 of 32 random bytes after 'the webhook signing secret'",
       base64_random, lead="the webhook signing secret ", lead_zh="webhook 的 signing secret ",
       soft="signing se", soft_in="lead", url="query", param="signing_secret"),
    _k("key-is-hex", "secret", "40 hex after 'the key is'", plain(40, HEX),
       lead="the deploy key, and the key is ", lead_zh="部署密钥，the key is ", soft="the ke", soft_in="lead",
       url="query", param="key"),
    _k("key-is-base64", "secret", "40 base64 chars after 'the key is'", plain(40, B64),
       lead="the deploy key, and the key is ", lead_zh="部署密钥，the key is ", soft="the ke", soft_in="lead",
       url="query", param="key"),
    _k("dotenv-db-pass", "secret", "DB_PASS= + 20 [A-Za-z0-9!%*+-=_]", assignment("DB_PASS=", 20, PUNCT_PW),
       url="query", param="DB_PASS"),
    _k("name-value-secret", "secret", "'Client Secret: ' + 32 alnum", assignment("Client Secret: ", 32),
       url="query", param="client_secret"),
    _k("age", "secret", "AGE-SECRET-KEY-1 + 58 bech32 (upper case, valid checksum)", age_key, soft=5),
    # -- issue 12, again: formats from gitleaks' rules that got through, generated here
    _k("notion", "secret", "ntn_ + 11 digits + 35 alnum", notion),
    _k("perplexity", "secret", "pplx- + 48 alnum", with_prefix("pplx-", 48)),
    _k("heroku-v2", "secret", "HRKU-AA + 58 base64url", with_prefix("HRKU-AA", 58, B64URL)),
    _k("openshift", "secret", "sha256~ + 43 base64url", with_prefix("sha256~", 43, B64URL)),
    _k("sourcegraph", "secret", "sgp_ + 40 hex", with_prefix("sgp_", 40, HEX)),
    _k("terraform-cloud", "secret", "14 alnum . atlasv1 . 67 base64url", terraform),
    _k("alibaba", "secret", "LTAI + 20 alnum", with_prefix("LTAI", 20)),
    _k("clojars", "secret", "CLOJARS_ + 60 [a-z0-9]", with_prefix("CLOJARS_", 60, LOWER_NUM)),
    _k("dynatrace", "secret", "dt0c01. + 24 [A-Z0-9] . 64 [A-Z0-9]", dynatrace),
    _k("easypost", "secret", "EZAK + 54 alnum", with_prefix("EZAK", 54)),
    _k("flutterwave", "secret", "FLWSECK_TEST- + 32 [a-h0-9] + -X", flutterwave),
    _k("flyio", "secret", "fo1_ + 43 base64url", with_prefix("fo1_", 43, B64URL)),
    _k("airtable", "secret", "pat + 14 alnum . 64 hex", airtable),
    _k("harness", "secret", "pat. + 22 base64url . 24 hex . 20 alnum", harness),
    _k("intra42", "secret", "s-s4t2ud- + 64 hex", with_prefix("s-s4t2ud-", 64, HEX)),
    _k("octopus", "secret", "API- + 26 [A-Z0-9]", with_prefix("API-", 26, UPPER_NUM)),
    _k("rubygems", "secret", "rubygems_ + 48 hex", with_prefix("rubygems_", 48, HEX)),
    _k("brevo", "secret", "xkeysib- + 64 hex - 16 alnum", brevo),
    _k("shippo", "secret", "shippo_live_ + 40 hex", with_prefix("shippo_live_", 40, HEX)),
    _k("lob", "secret", "test_ + 35 hex", with_prefix("test_", 35, HEX)),
    _k("onepassword", "secret", "A3- + 6 - 11 - 5 - 5 - 5 [A-Z0-9]", onepassword),
    _k("azure-client-secret", "secret", "3 alnum + digit + Q~ + 34 [A-Za-z0-9_~.-]", azure_client_secret, soft=5),
    _k("stripe-prod", "secret", "sk_prod_51 + 97 alnum", stripe("sk_prod_")),
    _k("slack-workflow", "secret", "https://hooks.slack.com/workflows/ + 43 alnum", slack_workflow,
       soft=10, url="next"),
    _k("grafana-legacy", "secret", "base64 of {\"k\":32 alnum,...} (eyJrIjoi...)", grafana_legacy),
    _k("square-short", "secret", "EAAA + 30 base64url", with_prefix("EAAA", 30, B64URL)),
    # -- generic carriers the rules missed
    _k("camelcase-assignment", "secret", "dbPassword= + 20 [A-Za-z0-9!%*+-=_]", assignment("dbPassword=", 20, PUNCT_PW),
       url="query", param="db_password"),
    _k("xml-key-value", "secret", '<add key="ClearTextPassword" value="18 alnum" />', xml_password,
       soft="ClearT", url="query", param="password"),
    _k("basic-header", "secret", "Authorization: Basic + base64 of deploy:<20 alnum>", basic_header,
       soft="Autho", url="query", param="access_token"),
    _k("curl-user", "secret", "curl -u deploy:<20 [A-Za-z0-9!%*+-=_]> URL", curl_user,
       soft="cur", url="query", param="password"),
    _k("placeholder-word-first", "secret", "DB_PASSWORD=my + 18 alnum (not a placeholder)",
       placeholder_word_first, url="query", param="password"),
    # -- no kind, no keyword: a token that looks generated (credential_shaped)
    _k("unknown-base62", "secret", "24 alnum, no prefix, no keyword", plain(24)),
    _k("unknown-id-dash-secret", "secret", "15 digits - 25 alnum, no keyword", id_dash_secret),
    # -- personal data
    _k("pii-email", "pii", "first.last.<4 hex>@ a mail provider", email, url="query", param="email"),
    _k("pii-intl-phone", "pii", "+CC and 8-12 digits in groups (+44, +49, +61, +81, +33)", intl_phone,
       url="query", param="to"),
    _k("pii-cn-mobile", "pii", "1[3-9] + 9 digits, '+86 1xx xxxx xxxx' or bare", cn_mobile,
       url="query", param="to"),
]
KIND_BY_ID = {k.id: k for k in KINDS}

# --------------------------------------------------------------------------- shapes

NEUTRAL = "the vault entry"
NEUTRAL_ZH = "保险库里的条目"

# shape: (role, frame). {s} is where the (shaped) value goes.
FRAMES = {
    "user-en": ("user", "Never rotate {s} by hand in `deploy.sh` because the nightly release job fails closed "
                        "when it changes."),
    "assistant-en": ("assistant", "We decided to keep {s} in `staging.toml` because the vault sidecar cannot "
                                  "reach the build network."),
    "zh": ("user", "必须在 `deploy.sh` 里使用{s}，因为旧的凭据上周已被吊销，夜间发布任务启动时会读取它。"),
    "bold": ("user", "Always pass {s} to `release.py` in CI because the fallback credential was revoked in the "
                     "audit."),
    "italic": ("user", "Never commit {s} to `config/prod.yaml` because the repository is mirrored to a public "
                       "fork nightly."),
    "backticks": ("user", "Always export {s} before running `make deploy` because the upload step fails closed "
                          "without it."),
    "zero-width": ("user", "Never paste {s} into `notes.md` because the wiki sync publishes that file to every "
                           "contractor."),
    "soft-hyphen": ("user", "Always load {s} from `secrets.env` because the staging cluster refuses requests "
                            "signed with the old one."),
    "url": ("user", "Never log the callback {s} in `webhook.py` because request logs are kept by a vendor for "
                    "a year."),
    "end": ("user", "Never rotate the staging credential in `ops/rotate.sh` because the pager depends on it; "
                    "for the record {s}"),
}
SHAPES = tuple(FRAMES)
WRAP = {"bold": "**{}**", "italic": "_{}_", "backticks": "`{}`", "zero-width": ZWSP + "{}"}


def _insert_soft(text, at):
    pos = at if isinstance(at, int) else text.index(at) + len(at)
    return text[:pos] + SHY + text[pos:]


class Row(NamedTuple):
    id: str          # "<kind>-<shape>"
    kind: Kind
    shape: str
    role: str
    text: str        # the message
    value: str       # what must never be printed, as it is without the shape's invisible characters
    randoms: Tuple[str, ...]
    control: str     # the same frame with NEUTRAL in place of the value: it must be proposed


def build_row(kind, shape):
    rng = random.Random(f"{SEED}:{kind.id}:{shape}")
    token = kind.make(rng, shape)
    role, frame = FRAMES[shape]
    lead = kind.lead_zh if shape == "zh" and kind.lead_zh is not None else kind.lead
    value = token.value
    if shape == "url":
        if kind.url == "path":
            slot = f"https://example.com/hook/{value}/run"
        elif kind.url == "next":
            slot = f"https://example.com/cb?next={value}"
        else:
            value = token.bare or token.value
            slot = f"https://example.com/cb?{kind.param}={value}"
    elif shape == "soft-hyphen":
        if kind.soft_in == "lead":
            slot = _insert_soft(lead, kind.soft) + value
        else:
            slot = lead + _insert_soft(value, kind.soft)
    else:
        slot = lead + WRAP.get(shape, "{}").format(value)
    text = frame.replace("{s}", slot)
    control = frame.replace("{s}", NEUTRAL_ZH if shape == "zh" else NEUTRAL)
    return Row(f"{kind.id}-{shape}", kind, shape, role, text, value, token.randoms, control)


ROWS = [build_row(k, s) for k in KINDS for s in SHAPES]

# --------------------------------------------------------------------------- look-alikes


class LookAlike(NamedTuple):
    id: str
    text: str
    gates: Tuple[str, ...] = ("secret",)  # the gates that must not withhold it
    example: bool = False                 # a documentation example key: lint reports a note


def _lookalikes():
    rng = random.Random(f"{SEED}:lookalikes")
    sha40 = chars(rng, 40, HEX)
    sha256 = hashlib.sha256(rbytes(rng, 32)).hexdigest()
    digest = hashlib.sha256(rbytes(rng, 32)).hexdigest()
    uid = str(uuid.UUID(bytes=rbytes(rng, 16), version=4))
    uid2 = str(uuid.UUID(bytes=rbytes(rng, 16), version=4))
    guid = "{" + str(uuid.UUID(bytes=rbytes(rng, 16), version=4)).upper() + "}"
    sri = "sha512-" + b64(hashlib.sha512(rbytes(rng, 32)).digest())
    pk = "pk_live_51" + mixed(rng, 97)
    text_b64 = b64(b"hello world from the onboarding docs")
    both = ("secret", "pii")
    return [
        LookAlike("git-remote-scp", "Always push to git@github.com:acme/widgets.git because the runner only has the "
                                    "SSH deploy key and HTTPS pushes are blocked.", both),
        LookAlike("git-remote-ssh-url", "Always mirror tags to ssh://git@gitlab.com/acme/platform/widgets.git because "
                                        "the web importer drops annotated tags.", both),
        LookAlike("uuid", f"Never reuse the fixture id {uid} in `seed.py` because the staging database already holds "
                          "a row with it.", both),
        LookAlike("uuid-keyword-after", f"Never delete the row {uid2}; the tenant id is keyed on it because the "
                                        "billing export joins on that column.", both),
        LookAlike("windows-guid", f"Always register the COM class as {guid} in `installer.wxs` because the upgrade "
                                  "path looks it up by that id.", both),
        LookAlike("commit-sha", f"Never rebase past {sha40} in `release.sh` because the signed release tags point at "
                                "that commit.", both),
        LookAlike("commit-url", f"Always link https://github.com/acme/widgets/commit/{sha40} in the changelog because "
                                "the release notes tool resolves it.", both),
        LookAlike("sha256-hex", f"Always verify the installer against {sha256} because the download mirror was "
                                "compromised once last year.", both),
        LookAlike("container-digest", f"Always pin the base image to sha256:{digest} because the upstream tag was "
                                      "overwritten twice.", both),
        LookAlike("sri-integrity", f"Never hand-edit the integrity field {sri} in `package-lock.json` because npm "
                                   "verifies the tarball against it.", both),
        LookAlike("semver", "Always pin the CLI to v1.2.3 and the SDK to 2.14.0-rc.1+build.5 because v1.3.0 changed "
                            "the exit codes.", both),
        LookAlike("sk-learn", "Always import sk-learn estimators through `ml/wrap.py` because the wrapper fixes the "
                              "random seed for every run.", both),
        LookAlike("cask-point", "Never run cask-point-at-private-repo on shared runners because it rewrites the "
                                "Homebrew tap for every user.", both),
        LookAlike("placeholder-angle", "Always write the credential as <your-token> in `docs/setup.md` because real "
                                       "values must never appear in the docs.", both),
        LookAlike("placeholder-env", "Always reference ${API_KEY} in `docker-compose.yml` because pasted keys end up "
                                     "in the git history forever.", both),
        LookAlike("placeholder-xxxx", "Always write API keys as xxxx in every README example because copy-paste "
                                      "leaks happened before.", both),
        LookAlike("placeholder-changeme", "Always ship the sample config with password = changeme because the "
                                          "installer forces a reset on first login.", both),
        LookAlike("env-ref-python", 'Always read password = os.environ["DB_PASSWORD"] in `settings.py` because '
                                    "hardcoded values leak into forks.", both),
        LookAlike("env-ref-node", "Always read process.env.STRIPE_SECRET_KEY in `server.ts` because the key "
                                  "rotates every month and deploys pick it up.", both),
        LookAlike("env-ref-dotenv", "Always set DB_PASS=${DB_PASS} in `.env.example` because the compose file "
                                    "expands it from the shell at startup.", both),
        LookAlike("aws-doc-example", f"Always write {gc.DOC_KEY_1} in README snippets because it is the key id the "
                                     "AWS documentation itself uses.", both, example=True),
        LookAlike("base64-plain-text", f"Always keep the banner as {text_b64} in `motd.conf` because the terminal "
                                       "plugin decodes it on login.", both),
        LookAlike("data-uri", "Never inline data:image/png;base64,iVBORw0KGgo images in `email.html` because "
                              "several mail clients strip them.", both),
        LookAlike("long-word", "Never rename pneumonoultramicroscopicsilicovolcanoconiosis in the spelling fixture "
                               "because the hyphenation tests depend on it.", both),
        LookAlike("long-identifier", "Never remove AbstractSingletonProxyFactoryBean from the DI config because "
                                     "startup breaks without it in production.", both),
        LookAlike("file-path", "Always keep src/auth/token_refresh_handler.py free of imports from `web/` because the "
                               "worker loads it without Django.", both),
        LookAlike("url-plain", "Always link https://docs.python.org/3/library/secrets.html from the security guide "
                               "because it explains token generation.", both),
        LookAlike("url-query", "Always bookmark https://example.com/search?q=rotate+keys&page=2 for the runbook "
                               "because the wiki search is broken.", both),
        LookAlike("npm-scoped", "Always publish `@acme/widgets` to the private registry because the public name is "
                                "squatted by someone else.", both),
        LookAlike("go-module", "Always import github.com/acme/widgets/v2 in new services because v1 is frozen and "
                               "receives only security fixes.", both),
        LookAlike("iso-timestamp", "Never change the cutover time 2026-01-15T09:30:00Z in `migrate.toml` because "
                                   "the partner integration starts then.", both),
        LookAlike("unix-millis", "Never compare event times in milliseconds such as 1736899200000 against "
                                 "second-based cursors because pages get skipped.", both),
        LookAlike("stripe-publishable", f"Always embed the publishable key {pk} in `checkout.js` because Stripe "
                                        "designs it to be public in the browser.", both),
        LookAlike("hf-function", "Always call hf_hub_download through `models/fetch.py` because it pins the "
                                 "revision and caches the files.", both),
        LookAlike("npm-config-env", "Always set npm_config_registry in the CI image because the default registry is "
                                    "blocked on the build network.", both),
        LookAlike("pypi-action", "Always publish with pypa/gh-action-pypi-publish in `release.yml` because trusted "
                                 "publishing needs no stored secret.", both),
        LookAlike("bearer-placeholder", "Always document the header as Authorization: Bearer <token> because the "
                                        "gateway accepts no other format.", both),
        LookAlike("basic-auth-user-only", "Always clone from https://deploy@git.acme-corp.io/platform/app.git because "
                                          "the credential helper supplies the password."),
        LookAlike("postgres-no-password", "Always point analytics at postgres://report@db.acme-corp.io:5432/analytics "
                                          "because peer auth is configured there."),
        LookAlike("masked-value", "Always mask values like password: ******** in screenshots because reviewers "
                                  "share them widely in chat.", both),
        LookAlike("key-value-words", "Always use the key-value store for session state because the key-rotation-"
                                     "policy job clears local caches.", both),
        LookAlike("dotted-package", "Never rename com.example.android.widget.provider because the Play Store listing "
                                    "is keyed on that application id.", both),
        LookAlike("clock-and-ratio", "Always schedule the export at 12:30:45 UTC and render thumbnails at 16:9 "
                                     "because the partner crops everything else.", both),
        LookAlike("ipv6-and-mac", "Never hardcode 2001:db8::1 or 00:1a:2b:3c:4d:5e in `net.yaml` because the lab "
                                  "network is renumbered every quarter.", both),
        LookAlike("aws-arn", "Always assume arn:aws:iam::123456789012:role/deploy from CI because the static user "
                             "keys were retired in March.", both),
        LookAlike("s3-url", "Never delete s3://acme-backups/2026/01/15/dump.sql.gz because it is the last backup "
                            "taken before the schema change.", both),
        LookAlike("prefix-prose", "Always block the ghp_ and glpat- prefixes in the push hook because token leaks "
                                  "cost a weekend of rotation.", both),
        LookAlike("eyj-prose", "Never paste strings starting with eyJ into tickets because they are usually JWTs "
                               "that grant access.", both),
        LookAlike("secret-ref-name", "Always mount `db-password` from the `app-secrets` secret because the chart "
                                     "reads no plain environment values.", both),
        LookAlike("zh-token-bucket", "必须用令牌桶算法限制 `api/upload` 的请求速率，因为突发流量曾经压垮过数据库的连接池。", both),
        LookAlike("zh-password-prose", "不要在日志里打印用户密码或者密钥，因为日志会同步到共享存储并保留一年以上。", both),
        LookAlike("zh-kouling-prose", "必须每季度更换一次管理口令，因为审计要求所有共享账号的口令都有轮换记录。", both),
    ]


LOOKALIKES = _lookalikes()
