"""The one set of secret shapes: what a key, token or password looks like in text.

Used through `context/floor/sanitize.py` by everything that persists text — the session log, spill files,
memory records, reports — so a secret is recognised the same way everywhere. `redact_shapes` replaces
each one with REDACTED, keeping what says what it was (the variable name, the URL's user, the PEM
armour lines):

- provider keys by prefix: Anthropic, OpenAI, AWS key ids, GitHub, Slack (xoxb-/xoxp-/…), Stripe
  (sk_live_/rk_live_/…_test_), Google (AIza…), Hugging Face (hf_…), `Bearer …` headers;
- PEM and OpenSSH private key blocks (also with their newlines escaped as \\n, as in a JSON file);
- the password of `scheme://user:password@host`;
- the value assigned to a secret-looking name: PASSWORD=, *_SECRET=, *_TOKEN=, *_KEY= in env files
  (`export API_KEY=…`), config files (`password: …`, `"client_secret": "…"`, `token = "…"`) and
  code literals. Code that merely mentions the name stays: `token = tokenize(x)`,
  `password = os.environ["PW"]`, `secret_key: str`, `max_tokens = 1024`.

All patterns are linear-time (they run on megabytes of tool output).
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"


def _at_boundary(pattern: str) -> str:
    """`pattern` (starting with a literal character) only where it starts a token: "task-…" is not an
    "sk-" key. The check comes after the first character so the regex engine can skip quickly to
    candidate positions (one combined scan costs what one pattern did)."""
    return pattern[0] + r"(?<![A-Za-z0-9_\-].)" + pattern[1:]


PROVIDER_KEYS = re.compile("|".join(_at_boundary(p) for p in (
    r"sk-ant-[A-Za-z0-9_\-]{16,}",  # Anthropic (api03, admin01, …)
    r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}",  # OpenAI project / service account / admin keys
    r"sk-[A-Za-z0-9]{20,}(?:T3BlbkFJ[A-Za-z0-9]{20,})?",  # OpenAI classic
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens (ghp_, gho_, ghs_, ghu_, ghr_)
    r"github_pat_[A-Za-z0-9_]{40,}",  # GitHub fine-grained PAT
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack bot / user / app tokens (xoxb-, xoxp-, …)
    r"sk_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe secret key
    r"rk_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe restricted key
    r"AIza[0-9A-Za-z_\-]{35}",  # Google API key (39 characters in all)
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face token
)))
AWS_KEY_ID = re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")
BEARER = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/\-]{16,}=*")
# AWS secret keys have no prefix: recognise them by the name they are assigned to.
AWS_SECRET = re.compile(
    r"(?i)(aws_secret_access_key|aws-secret-access-key|secretaccesskey)(\s*[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})"
)
_URL_USERINFO = re.compile(r"([^\s:/@\"'<>]+:)([^\s@/\"'<>]+)@")  # right after "scheme://"


def _redact_url_passwords(text: str) -> str:
    out: list[str] = []
    pos = 0
    at = text.find("://")
    while at != -1:
        m = _URL_USERINFO.match(text, at + 3)
        if m:
            out.append(text[pos:m.start(2)] + REDACTED)
            pos = m.end(2)
        at = text.find("://", at + 3)
    return "".join(out) + text[pos:] if out else text


# --- private key blocks ---------------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s\\:,.\-]*")  # base64, headers (Proc-Type: 4,ENCRYPTED), \n escapes


def _redact_pem(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _PEM_BEGIN.finditer(text):
        if m.start() < pos:
            continue
        end_marker = f"-----END {m.group(1)}-----"
        end = text.find(end_marker, m.end())
        if end == -1:  # cut off (a preview, a truncated paste): the base64 that follows is still the key
            rest = _PEM_BODY.match(text, m.end())
            end = rest.end() if rest is not None else m.end()
            body_end = end
        else:
            body_end = end
            end += len(end_marker)
        body = text[m.end():body_end]
        sep = "\n" if "\n" in body else ("\\n" if "\\n" in body else "")
        out.append(text[pos:m.end()] + sep + REDACTED + sep + text[body_end:end])
        pos = end
    return "".join(out) + text[pos:] if out else text


# --- values assigned to secret-looking names ----------------------------------------------------

# A value character: printable ASCII except quotes, brackets, separators — so a value ends where
# code or text around it (Chinese included) begins.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_WORDS = ("password", "passwd", "secret", "token", "key")
_VALUE_CHARS = "".join(re.escape(chr(c)) for c in range(0x21, 0x7F) if chr(c) not in "\"'`,;(){}[]<>")
_OP = re.compile(r"[\"']?[ \t]*(?:=(?!=)|:(?![:=]))[ \t]*")  # what follows the name: `=`, `: `, `" :`
_VALUE = re.compile(r"(\"[^\"\n]*\"|'[^'\n]*'|[" + _VALUE_CHARS + r"]*)([(\[]?)")
_CODE_VALUE = re.compile(r"[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # a variable, or an attribute path
_CLEAR_NAMES = re.compile(r"(?i)pass|secret|token|api[_.\-]?key|private|access|auth|credential")
MIN_NAMED = 8  # a value under a clearly secret name (password: 4)
MIN_KEY = 16  # under another *_key name (sort_key, cache_key) only a long, random-looking value
_ASCII_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


def _looks_secret(name: str, value: str, quoted: bool, env: bool) -> bool:
    if not value or value[0] in "$%" or (not quoted and value[0] == "@"):
        return False  # a reference (${VAR}, %(x)s, @secret) is not the secret itself
    clear = _CLEAR_NAMES.search(name)
    if env:  # NAME=value in an env file or a shell line
        return len(value) >= (1 if clear else MIN_NAMED)
    if quoted and (any(ch.isspace() for ch in value) or "{" in value or "<" in value):
        return False  # a message or a template, not a credential
    if not quoted and _CODE_VALUE.fullmatch(value):
        return False  # code: `password=password`, `token: str`, `secret = settings.SECRET`
    if clear:
        return len(value) >= (4 if "pass" in clear.group(0).lower() else MIN_NAMED)
    return len(value) >= MIN_KEY and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _assignment(text: str, low: str, word_at: int, word_end: int) -> tuple[int, int, str] | None:
    """The redaction (start, end, replacement) of the value assigned at a secret word, if any."""
    if low.startswith("key", word_at) and (word_at == 0 or low[word_at - 1] not in "_.-") \
            and not low.startswith("apikey", word_at - 3):
        return None  # `key`, `monkey`: only *_key, *.key, *-key and apikey name secrets
    op = _OP.match(text, word_end)
    if op is None:
        return None
    start = word_at
    while start > 0 and low[start - 1] in _NAME_CHARS:
        start -= 1
    before = text[start - 1] if start else ""
    if before in ("?", "&"):  # a URL's query parameter: handled with its own end (&, #)
        return None
    name = text[start:word_end]
    value_m = _VALUE.match(text, op.end())
    assert value_m is not None  # both alternatives can match empty
    raw, call = value_m.group(1), value_m.group(2)
    if call:  # `token = tokenize(x)`, `pw = os.environ["PW"]`: a call or an index, code
        return None
    quoted = raw[:1] in ("'", '"') and len(raw) >= 2
    value = raw[1:-1] if quoted else raw
    env = name.isupper() and text[word_end:op.end()] == "=" and before != '"'
    if not _looks_secret(name, value, quoted, env):
        return None
    return (value_m.start(1) + (1 if quoted else 0), value_m.end(1) - (1 if quoted else 0), REDACTED)


def _redact_assignments(text: str) -> str:
    # ASCII-only lowering keeps every offset the same as in `text`
    low = text.encode("utf-8", "surrogatepass").translate(_ASCII_LOWER).decode("utf-8", "surrogatepass")
    edits: dict[int, tuple[int, str]] = {}
    for word in _WORDS:
        at = low.find(word)
        while at != -1:
            end = at + len(word)
            edit = _assignment(text, low, at, end)
            if edit is not None:
                edits.setdefault(edit[0], (edit[1], edit[2]))
            at = low.find(word, end)
    if not edits:
        return text
    out: list[str] = []
    pos = 0
    for start in sorted(edits):
        end, replacement = edits[start]
        if start < pos:
            continue
        out.append(text[pos:start] + replacement)
        pos = end
    return "".join(out) + text[pos:]


_QUERY_PARAM = re.compile(r"(?i)([?&][A-Za-z0-9_.\-]*?(?:password|passwd|secret|token|apikey|[_.\-]key)=)([^&#\s\"'<>]{4,})")


def redact_shapes(text: str) -> str:
    """`text` with every secret of a known shape replaced by REDACTED."""
    out = text
    out = PROVIDER_KEYS.sub(REDACTED, out)
    if "AKIA" in out or "ASIA" in out:
        out = AWS_KEY_ID.sub(REDACTED, out)
    if "PRIVATE KEY" in out:
        out = _redact_pem(out)
    if "://" in out:
        out = _redact_url_passwords(out)
    low = out.lower()  # for the substring tests only (lower() may change lengths)
    if "bearer" in low:
        out = BEARER.sub(lambda m: m.group(1) + REDACTED, out)
    if "secretaccesskey" in low or "secret_access_key" in low or "secret-access-key" in low:
        out = AWS_SECRET.sub(lambda m: m.group(1) + m.group(2) + REDACTED, out)
    if any(w in low for w in _WORDS):
        if "=" in out and ("?" in out or "&" in out):
            out = _QUERY_PARAM.sub(lambda m: m.group(1) + (REDACTED if m.group(2)[0] not in "${" else m.group(2)), out)
        out = _redact_assignments(out)
    return out
