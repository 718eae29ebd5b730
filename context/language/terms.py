"""Text → search terms, for code and for Chinese, shared by indexing and querying.

SQLite's FTS5 tokenizers know neither code nor Chinese: `unicode61` keeps a whole CJK run as one
token (so "用户登录" never matches "登录"), and `trigram` needs three characters (so the two-character
word "登录" finds nothing). We therefore pre-tokenize in Python and let FTS5 (`unicode61`)
index the space-separated result:

- a CJK run becomes its overlapping bigrams ("用户登录" → 用户 户登 登录), a lone character stays;
- an identifier is split at camelCase humps, `_`, `.`, `/`, `-` and also kept joined
  ("getUserName" → getusername get user name; "src/auth/login.py" → src auth login py);
- everything is lower-cased and light-stemmed (`stem`) in Python, for both sides, so the store's
  own term statistics (`term_df`) use exactly the terms FTS5 indexed.

Queries drop stopwords and are expanded through a synonym table (login ↔ auth ↔ 登录 ↔ 认证 …)
that users can extend.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ctxagent.context.floor.bounded_json import toml_loads

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W{_CJK}]+(?:[./\-:'][^\W{_CJK}]+)*)")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_a-zA-Z]+")

STOPWORDS_EN = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves also ever s t d ll m re ve y let lets us please okay ok yes yeah hey hi
    really much many get got one thing things like something anything""".split()
)
# Chinese function words that would otherwise survive as single characters or bigrams.
STOPWORDS_ZH = frozenset("的 了 是 在 和 与 及 或 一下 这个 那个 我们 你们 他们 一个 什么 怎么 吗 呢 吧 啊 把 被 就 都 也 还 请".split())
STOPWORDS = STOPWORDS_EN | STOPWORDS_ZH

# Groups of interchangeable terms. A query term in a group brings in the whole group.
DEFAULT_SYNONYMS: list[list[str]] = [
    ["login", "log in", "logon", "sign in", "signin", "auth", "authentication", "authenticate", "登录", "登陆", "认证", "鉴权"],
    ["logout", "log out", "sign out", "signout", "登出", "注销", "退出登录"],
    ["config", "configuration", "settings", "setting", "options", "preferences", "配置", "设置"],
    ["database", "db", "sql", "数据库"],
    ["test", "tests", "testing", "pytest", "unittest", "测试", "单测"],
    ["error", "exception", "failure", "traceback", "bug", "错误", "异常", "报错"],
    ["delete", "remove", "drop", "删除", "移除"],
    ["user", "account", "用户", "账户", "账号"],
    ["password", "passwd", "pwd", "密码"],
    ["token", "jwt", "令牌"],
    ["deploy", "deployment", "release", "部署", "发布"],
    ["dependency", "dependencies", "package", "packages", "依赖"],
    ["cache", "caching", "缓存"],
    ["permission", "permissions", "access", "权限"],
    ["api", "endpoint", "route", "接口", "路由"],
    ["log", "logs", "logging", "日志"],
    ["performance", "perf", "latency", "speed", "性能"],
    ["document", "docs", "documentation", "readme", "文档"],
]


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _word_terms(word: str, camel: bool = True) -> list[str]:
    pieces: list[str] = []
    joined: list[str] = []
    for segment in (x for x in re.split(r"[./:']+", word) if x):
        parts = [p for p in re.split(r"[_\-]+", segment) if p]
        for part in parts:
            humps = (_CAMEL.findall(part) if camel else None) or [part]
            pieces.extend(h.lower() for h in humps)
            if len(humps) > 1:
                joined.append(part.lower())  # the whole identifier, e.g. getusername
        if len(parts) > 1 and len(segment) <= 40:
            joined.append("".join(parts).lower())  # user_name → username, so either spelling finds it
    return pieces + joined


def terms(text: str, camel: bool = True) -> list[str]:
    """All index terms of `text`, in order, with repeats (BM25 wants term frequency).

    `camel=False` keeps identifiers whole (PostgreSQL stays one term): for comparing subjects.
    """
    out: list[str] = []
    for m in _TOKEN.finditer(text or ""):
        if m.group("cjk"):
            out.extend(_cjk_terms(m.group("cjk")))
        else:
            out.extend(_word_terms(m.group("word"), camel))
    return out


def index_text(text: str) -> str:
    """The string FTS5 indexes for `text`: its terms, stemmed (the same `stem` queries use)."""
    return " ".join(stem(t) for t in terms(text))


_SUFFIXES = (("ational", "ate"), ("ations", "ate"), ("ation", "ate"), ("nesses", ""), ("ness", ""), ("ments", ""),
             ("ment", ""), ("ings", ""), ("ing", ""), ("ied", "y"), ("ies", "y"), ("ers", "er"), ("ed", ""), ("es", ""),
             ("s", ""))


@lru_cache(maxsize=1 << 16)  # a pure function of a word: every step's recall stems the same query terms
def stem(term: str) -> str:
    """A light English stemmer, applied to index and query alike: tests/testing/tested → test, cache/caching → cach."""
    if not term.isascii() or not term.isalpha() or len(term) <= 3:
        return term
    for suffix, repl in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            if suffix == "s" and term[-2] in "sui":  # class, status, analysis keep their s
                break
            term = term[: -len(suffix)] + repl
            break
    if len(term) > 4 and term.endswith("e"):
        term = term[:-1]
    if len(term) >= 4 and term[-1] == term[-2] and term[-1] not in "lsz":
        term = term[:-1]  # running → runn → run
    return term


def key_terms(text: str, extra_stop: Iterable[str] = ()) -> set[str]:
    """Distinct, stemmed, non-stopword terms: what a text is about."""
    stop = STOPWORDS | set(extra_stop)
    return {stem(t) for t in terms(text, camel=False) if t not in stop and not (len(t) == 1 and t.isascii() and t.isalpha())}


def normalize(text: str) -> str:
    """A key under which trivially different spellings of the same record collide."""
    return " ".join(terms(text))


class Synonyms:
    """Term → its synonym group (as lists of terms, one list per member, multi-word members kept)."""

    def __init__(self, groups: Iterable[Iterable[str]] | None = None):
        self._by_term: dict[str, list[list[str]]] = {}
        self.version = 0  # bumped by every group added: what a cache of expanded queries keys on
        for group in DEFAULT_SYNONYMS:
            self.add_group(group)
        for extra in groups or []:
            self.add_group(extra)

    def add_group(self, group: Iterable[str]) -> None:
        self.version += 1
        members = [m for m in (terms(g) for g in group) if m]
        for m in members:
            # a multi-word member ("sign in") is looked up by its adjacent pair in `expand`
            bucket = self._by_term.setdefault(" ".join(m), [])
            bucket.extend(x for x in members if x not in bucket)

    def expand(self, query_terms: list[str]) -> list[list[str]]:
        """Members (each a term list) that the query's terms or adjacent pairs bring in."""
        found: list[list[str]] = []
        keys = list(query_terms) + [f"{a} {b}" for a, b in zip(query_terms, query_terms[1:], strict=False)]
        for k in keys:
            for member in self._by_term.get(k, []):
                if member not in found:
                    found.append(member)
        return found


def fts_phrase(member: list[str]) -> str:
    return '"' + " ".join(t.replace('"', '""') for t in member) + '"'


MAX_SYNONYM_UNITS = 8  # every OR'ed phrase costs BM25 work on every matching record


def query_units(query: str, synonyms: Synonyms | None = None, max_terms: int = 48) -> list[list[str]]:
    """The query's content terms, then their synonyms (multi-word members as phrases), deduplicated."""
    raw = terms(query)
    content = [t for t in raw if t not in STOPWORDS and not (len(t) == 1 and t.isascii() and not t.isdigit())]
    if not content:
        content = [t for t in raw if len(t) > 1]
    units: list[list[str]] = [[t] for t in dict.fromkeys(stem(t) for t in content)][:max_terms]
    if synonyms is not None:
        added = 0
        for member in synonyms.expand(raw):
            unit = [stem(t) for t in member]
            if unit not in units and added < MAX_SYNONYM_UNITS:
                units.append(unit)
                added += 1
    return units[: max_terms + 16]


def match_of(units: list[list[str]]) -> str:
    return " OR ".join(fts_phrase(u) for u in units)


def build_match(query: str, synonyms: Synonyms | None = None, max_terms: int = 48) -> str:
    """An FTS5 MATCH expression: the query's content terms OR'ed, plus their synonyms."""
    return match_of(query_units(query, synonyms, max_terms))


def config_synonyms(config: Path) -> list[list[str]]:
    """Extra synonym groups from a config.toml's top-level `synonyms` (the agent's config reads the same key)."""
    if not config.is_file():
        return []
    try:
        data = toml_loads(config.read_text(encoding="utf-8"))  # bounded: a file nested to death reads as none
    except (OSError, ValueError):  # TOMLDecodeError, TooDeepError, UnicodeDecodeError
        return []
    groups = data.get("synonyms") or []  # the same top-level key the agent's config reads
    return [[str(x) for x in g] for g in groups if isinstance(g, list)]
