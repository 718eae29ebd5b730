"""The one set of secret shapes: what a key, token or password looks like in text.

Used through `context/floor/sanitize.py` by everything that persists text — the session log, spill files,
memory records, reports — and by the sandbox's environment filter (`credential_shaped`), so a secret is
recognised the same way everywhere. `redact_shapes` replaces each one with REDACTED, keeping what says
what it was (the variable name, the URL's user, the PEM armour lines):

- keys and tokens by their shape: the rules of context/data/secret_rules.toml (secret_rules.py) —
  gitleaks' ~215 rules (MIT, recorded with their version) and the project's own for what gitleaks
  lacks (any `sk-ant-…`, OpenRouter, Groq, `whsec_`, `ya29.`, Discord webhooks, a bare AWS secret
  beside an AWS key id, `--password X` / `--token X`, `-u user:password`);
- `Bearer …` headers, `Basic …` headers (base64 of `user:password`);
- Azure connection strings and SAS tokens (`AccountKey=`, `SharedAccessKey=`, `SharedAccessSignature=`);
- PEM and OpenSSH private key blocks (also with their newlines escaped as \\n, as in a JSON file);
- the password of `scheme://user:password@host`, and a key-like user with no password
  (`https://<32 hex>@o1.ingest.sentry.io/1`, a Sentry DSN; `ssh://git@host` stays);
- the value assigned to a secret-looking name: PASSWORD=, *_SECRET=, *_TOKEN=, *_KEY=, *_PWD=
  (MYSQL_PWD), *_AUTH= (NPM_CONFIG__AUTH), *_DSN= in env files (`export API_KEY=…`), config files
  (`password: …`, `"client_secret": "…"`, `token = "…"`) and code literals. Code that merely
  mentions the name stays: `token = tokenize(x)`, `password = os.environ["PW"]`, `secret_key: str`,
  `max_tokens = 1024`, `PWD=/home/me`.

A key split by characters that show as nothing (a zero-width space, a soft hyphen, a bidi mark) is
found as if they were not there: they are dropped from between two ASCII characters of any text in
which a secret then shows (`redact_shapes`).

Every pass is linear in the text (they run on megabytes of tool output, and on what a hostile file
or model makes of them: `token=` 100,000 times, a million `-----BEGIN PRIVATE KEY-----`): each
regular expression is a literal start then character classes that cannot overlap (no backtracking
beyond a constant), lookbehinds are bounded, and where many candidates share one stretch of text
(the value runs of `a_key=a_key=…`) what was scanned once is remembered (`_Scan`).
`ctxagent bench perf` measures it (its redaction rows, adversarial and ordinary text).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re

from ctxagent.context.floor.secret_rules import rule_spans

REDACTED = "[redacted]"


BEARER = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/\-]{16,}=*")
# `Basic <base64>`: only when the base64 is `user:password` ("basic operations" is prose)
BASIC = re.compile(r"(?i)(\bbasic\s+)([A-Za-z0-9+/]{8,}={0,2})")
# AWS secret keys have no prefix: recognise them by the name they are assigned to. (One optional
# quote between two runs of spaces: `\s*["']?\s*` would backtrack quadratically on a run of spaces.)
AWS_SECRET = re.compile(
    r"(?i)(aws_secret_access_key|aws-secret-access-key|secretaccesskey)(\s*(?:[\"']\s*)?[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})"
)
# Azure storage / Service Bus connection strings and SAS tokens: the value runs to the next `;`
AZURE = re.compile(r"(?i)(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=)([^;\s\"'<>$%{][^;\s\"'<>]*)")
_URL_USERINFO = re.compile(r"([^\s:/@\"'<>]+:)([^\s@/\"'<>]+)@")  # right after "scheme://"
_URL_USER = re.compile(r"([^\s:/@\"'<>]+)@")  # a user with no password
MIN_URL_KEY = 16  # a user part this long, of letters and digits, is a key (a Sentry DSN's is 32)
_ANY_URL_USER = re.compile(r"://[^/\s@]+@")


def _key_like(value: str, minimum: int) -> bool:
    return len(value) >= minimum and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _redact_url_userinfo(text: str) -> str:
    out: list[str] = []
    pos = 0
    at = text.find("://")
    while at != -1:
        # each scan stops at the next "://" (':' and '/' end both classes): linear
        m = _URL_USERINFO.match(text, at + 3)
        if m:
            out.append(text[pos:m.start(2)] + REDACTED)
            pos = m.end(2)
        else:
            user = _URL_USER.match(text, at + 3)
            if user and _key_like(user.group(1), MIN_URL_KEY):
                out.append(text[pos:user.start(1)] + REDACTED)
                pos = user.end(1)
        at = text.find("://", max(at + 3, pos))
    return "".join(out) + text[pos:] if out else text


def _is_user_password(token: str) -> bool:
    bare = token.rstrip("=")
    try:
        decoded = base64.b64decode(bare + "=" * (-len(bare) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return False
    return ":" in decoded and decoded.isprintable()


# --- private key blocks ---------------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_END = re.compile(r"-----END ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s\\:,.\-]*")  # base64, headers (Proc-Type: 4,ENCRYPTED), \n escapes


def _redact_pem(text: str) -> str:
    # Every END marker found once (by its kind), so a thousand BEGINs without an END do not each
    # search the rest of the text for one.
    ends: dict[str, list[int]] = {}
    if "-----END " in text:
        for e in _PEM_END.finditer(text):
            ends.setdefault(e.group(1), []).append(e.start())
    out: list[str] = []
    pos = 0
    for m in _PEM_BEGIN.finditer(text):
        if m.start() < pos:
            continue
        end_marker = f"-----END {m.group(1)}-----"
        kind = ends.get(m.group(1), [])
        i = bisect.bisect_left(kind, m.end())
        if i == len(kind):  # cut off (a preview, a truncated paste): the base64 that follows is still the key
            rest = _PEM_BODY.match(text, m.end())
            end = rest.end() if rest is not None else m.end()
            body_end = end
        else:
            body_end = kind[i]
            end = body_end + len(end_marker)
        body = text[m.end():body_end]
        sep = "\n" if "\n" in body else ("\\n" if "\\n" in body else "")
        out.append(text[pos:m.end()] + sep + REDACTED + sep + text[body_end:end])
        pos = end
    return "".join(out) + text[pos:] if out else text


# --- values assigned to secret-looking names ----------------------------------------------------

# A value character: printable ASCII except quotes, brackets, separators — so a value ends where
# code or text around it (Chinese included) begins.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
MAX_NAME = 128  # how far back a name is read from its secret word (a bounded lookbehind)
_WORDS = ("password", "passwd", "secret", "token", "key", "pwd", "auth", "dsn")
# These name a secret only at the end of a longer name (`*_key`, `MYSQL_PWD`, `NPM_CONFIG__AUTH`,
# `SENTRY_DSN`): a bare `key`, `monkey`, `PWD=/home/me` (the shell's directory) or `auth: true` do not.
_SUFFIX_WORDS = ("key", "pwd", "auth", "dsn")
_VALUE_CHARS = "".join(re.escape(chr(c)) for c in range(0x21, 0x7F) if chr(c) not in "\"'`,;(){}[]<>")
_OP = re.compile(r"[\"']?[ \t]*(?:=(?!=)|:(?![:=]))[ \t]*")  # what follows the name: `=`, `: `, `" :`
_RUN = re.compile(r"[" + _VALUE_CHARS + r"]*")  # an unquoted value
_QUOTED = {'"': re.compile(r"\"[^\"\n]*\""), "'": re.compile(r"'[^'\n]*'")}
_CODE_VALUE = re.compile(r"[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # a variable, or an attribute path
_DIGIT = re.compile(r"[0-9]")
_LETTER = re.compile(r"[A-Za-z]")
_CLEAR_NAMES = re.compile(r"(?i)pass|pwd|secret|token|api[_.\-]?key|private|access|auth|credential|dsn")
MIN_NAMED = 8  # a value under a clearly secret name (password: 4)
MIN_KEY = 16  # under another *_key name (sort_key, cache_key) only a long, random-looking value
_ASCII_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


class _Scan:
    """What the candidates of one text share, scanned once. Candidates come left to right, and the
    unquoted value of each runs to the end of its run of value characters: in `a_key=a_key=…` every
    value ends at the same place, so the run's end, and where the next digit and letter are, are
    remembered instead of scanned again for each (that was the quadratic case)."""

    def __init__(self, text: str):
        self.text = text
        self._run = (-1, -1)  # a scanned run [start, end)
        self._next = {_DIGIT: (-1, -1), _LETTER: (-1, -1)}  # pattern -> (scanned from, found at | -1)

    def run_end(self, p: int) -> int:
        start, end = self._run
        if not start <= p <= end:
            m = _RUN.match(self.text, p)
            end = m.end() if m is not None else p
            self._run = (p, end)
        return end

    def has(self, pattern: re.Pattern[str], p: int, end: int) -> bool:
        """Is there a match of the one-character `pattern` in text[p:end]?"""
        frm, at = self._next[pattern]
        if not (frm <= p and (at == -1 or p <= at)):
            m = pattern.search(self.text, p)
            frm, at = p, (m.start() if m is not None else -1)
            self._next[pattern] = (frm, at)
        return at != -1 and at < end


def _looks_secret(name: str, value: str, quoted: bool, env: bool) -> bool:
    """For a quoted value (short: it ends at the next quote on its line)."""
    if not value or value[0] in "$%":
        return False  # a reference (${VAR}, %(x)s) is not the secret itself
    clear = _CLEAR_NAMES.search(name)
    if env:
        return len(value) >= (1 if clear else MIN_NAMED)
    if any(ch.isspace() for ch in value) or "{" in value or "<" in value:
        return False  # a message or a template, not a credential
    if clear:
        return len(value) >= (4 if clear.group(0).lower() in ("pass", "pwd") else MIN_NAMED)
    return _key_like(value, MIN_KEY)


def _run_looks_secret(scan: _Scan, name: str, p: int, end: int, env: bool) -> bool:
    """`_looks_secret` for the unquoted value text[p:end], without copying it (it may be long, and
    shared by many candidates)."""
    text = scan.text
    size = end - p
    if size <= 0 or text[p] in "$%@":
        return False  # a reference (${VAR}, %(x)s, @secret) is not the secret itself
    clear = _CLEAR_NAMES.search(name)
    if env:  # NAME=value in an env file or a shell line
        return size >= (1 if clear else MIN_NAMED)
    if _CODE_VALUE.fullmatch(text, p, end):
        # code (`password=password`, `token: str`, `secret = settings.SECRET`), or a password of
        # letters alone at the end of a config line (`password: hunter`)
        return _letters_password(text, name, p, end)
    if clear:
        return size >= (4 if clear.group(0).lower() in ("pass", "pwd") else MIN_NAMED)
    return size >= MIN_KEY and scan.has(_DIGIT, p, end) and scan.has(_LETTER, p, end)


_LETTERS = re.compile(r"[A-Za-z]{4,}")
_LINE_END = re.compile(r"[ \t]*(?:$|[\r\n#;&])")  # what may follow a value that ends its line
_PASSWORD_NAME = re.compile(r"(?i)pass|pwd")
_NAMING_WORD = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")  # `password = new_password`: a variable
_NOT_PASSWORDS = frozenset(  # literals and type names a password field is written with in code and schemas
    "none null nil true false undefined required optional empty string str bytes bool boolean number int integer "
    "float text varchar char object any unknown list dict array self this".split())


def _letters_password(text: str, name: str, p: int, end: int) -> bool:
    """text[p:end], letters alone under a password's name, ending its line: `password: hunter` in
    YAML, `password=correcthorse` in a shell or properties line. Code stays: an assignment with
    spaces (`password = value`), a variable (`password=new_password`), a type (`password: string`),
    a literal (`None`), an argument (`f(password=pw)`)."""
    if not _PASSWORD_NAME.search(name) or not _LETTERS.fullmatch(text, p, end):
        return False
    op = p
    while op > 0 and text[op - 1] in " \t":
        op -= 1
    if text[op - 1:op] == "=" and (op != p or text[op - 2:op - 1] in (" ", "\t")):  # `password = value`: code
        return False
    value = text[p:end]
    if value.lower() in _NOT_PASSWORDS or _NAMING_WORD.search(value):
        return False
    return _LINE_END.match(text, end) is not None


def _assignment(scan: _Scan, low: str, word_at: int, word_end: int) -> tuple[int, int] | None:
    """The span (start, end) of the value assigned at a secret word, if it is to be redacted."""
    text = scan.text
    word = low[word_at:word_end]
    if word in _SUFFIX_WORDS and (word_at == 0 or low[word_at - 1] not in "_.-") \
            and not (word == "key" and low.startswith("apikey", word_at - 3)):
        return None  # `key`, `monkey`, `PWD`: only *_key, *.key, *-key and apikey name secrets
    op = _OP.match(text, word_end)
    if op is None:
        return None
    start = word_at
    floor = max(0, word_at - MAX_NAME)
    while start > floor and low[start - 1] in _NAME_CHARS:
        start -= 1
    before = text[start - 1] if start else ""
    if before in ("?", "&"):  # a URL's query parameter: handled with its own end (&, #)
        return None
    name = text[start:word_end]
    env = name.isupper() and text[word_end:op.end()] == "=" and before != '"'
    p = op.end()
    first = text[p:p + 1]
    if first in _QUOTED:
        m = _QUOTED[first].match(text, p)
        if m is None or text[m.end():m.end() + 1] in ("(", "["):
            return None  # unclosed (no value), or `"x"(…)`: code
        if not _looks_secret(name, text[p + 1:m.end() - 1], True, env):
            return None
        return p + 1, m.end() - 1
    end = scan.run_end(p)
    if text[end:end + 1] in ("(", "["):  # `token = tokenize(x)`, `pw = os.environ["PW"]`: a call or an index, code
        return None
    if not _run_looks_secret(scan, name, p, end, env):
        return None
    return p, end


def _ascii_lower(text: str) -> str:
    """`text` with only A-Z lowered: every offset stays the same as in `text`."""
    return text.encode("utf-8", "surrogatepass").translate(_ASCII_LOWER).decode("utf-8", "surrogatepass")


def _redact_assignments(text: str) -> str:
    low = _ascii_lower(text)
    found: list[tuple[int, int]] = []
    for word in _WORDS:
        at = low.find(word)
        while at != -1:
            found.append((at, at + len(word)))
            at = low.find(word, at + len(word))
    if not found:
        return text
    found.sort()
    scan = _Scan(text)
    out: list[str] = []
    pos = 0
    for at, end in found:
        if at < pos:
            continue  # inside a value already redacted
        span = _assignment(scan, low, at, end)
        if span is not None and span[0] >= pos:
            out.append(text[pos:span[0]] + REDACTED)
            pos = span[1]
    return "".join(out) + text[pos:] if out else text


_QUERY_PARAM = re.compile(r"(?i)([?&][A-Za-z0-9_.\-]*?(?:password|passwd|secret|token|apikey|[_.\-]key)=)([^&#\s\"'<>]{4,})")


def redact_shapes(text: str) -> str:
    """`text` with every secret of a known shape replaced by REDACTED. A key split by invisible
    characters (a zero-width space inside it) is found as if they were not there."""
    if _HIDDEN.search(text):
        joined = _HIDDEN_IN_TOKEN.sub("", text)
        if joined != text:
            out = _redact(joined)
            if out != joined:  # a secret: the text is changed anyway, and without what hid it
                return out
    return _redact(text)


def _redact(text: str) -> str:
    out = _redact_rules(text)
    if "PRIVATE KEY" in out:
        out = _redact_pem(out)
    if "://" in out:
        out = _redact_url_userinfo(out)
    low = out.lower()  # for the substring tests only (lower() may change lengths)
    if "bearer" in low:
        out = BEARER.sub(lambda m: m.group(1) + REDACTED, out)
    if "basic" in low:
        out = BASIC.sub(lambda m: m.group(1) + REDACTED if _is_user_password(m.group(2)) else m.group(0), out)
    if "secretaccesskey" in low or "secret_access_key" in low or "secret-access-key" in low:
        out = AWS_SECRET.sub(lambda m: m.group(1) + m.group(2) + REDACTED, out)
    if "accountkey=" in low or "sharedaccess" in low:
        out = AZURE.sub(lambda m: m.group(1) + REDACTED, out)
    if any(w in low for w in _WORDS):
        if "=" in out and ("?" in out or "&" in out):
            out = _QUERY_PARAM.sub(lambda m: m.group(1) + (REDACTED if m.group(2)[0] not in "${" else m.group(2)), out)
        out = _redact_assignments(out)
    return out


def _redact_rules(text: str) -> str:
    """Every rule of the data file (context/data/secret_rules.toml, see secret_rules.py)."""
    spans = rule_spans(text, _ascii_lower(text))
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out.append(text[pos:start] + REDACTED)
        pos = end
    return "".join(out) + text[pos:]


# Characters that show as nothing: between two characters of a key they must not hide it.
_HIDDEN_CHARS = "\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_HIDDEN = re.compile(f"[{_HIDDEN_CHARS}]")
_HIDDEN_IN_TOKEN = re.compile(f"(?<=[!-~])[{_HIDDEN_CHARS}]+(?=[!-~])")


# --- the environment of a command -------------------------------------------------------------

# Names that say "credential" (for a command's environment: a variable so named is not passed,
# whatever its value — MYSQL_PWD, NPM_CONFIG__AUTH, SENTRY_DSN, *_CREDENTIALS, *_PRIVATE_*, *_KEY)
CREDENTIAL_NAME = re.compile(r"(?i)pass|pwd|secret|token|auth|credential|cookie|dsn|private|(?:^|_)(?:api_?)?key(?:$|_)")


def credential_shaped(name: str, value: str) -> bool:
    """True when the variable `name=value` looks like a credential: its name says so, its value holds a
    secret of a known shape (alone or as `name=value`), or a URL with any user part — stricter than
    the log's redaction (`https://abc123@host` passes there: too short to be called a key in prose)."""
    if CREDENTIAL_NAME.search(name):
        return True
    if redact_shapes(value) != value or _ANY_URL_USER.search(value):
        return True
    assignment = f"{name}={value}"
    return redact_shapes(assignment) != assignment
