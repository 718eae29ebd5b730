"""One secret pattern set, for the session log, spill files and memory: a test per shape.

Each shape is redacted the same way by the log's Sanitizer (which also runs before spilling) and by
the memory store, and what says what it was (the name, the URL's user, the PEM armour, the Chinese
around it) stays. Code that only mentions a secret-sounding name is left alone, or the model could
no longer read or edit it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ctxagent.context.events import ToolResultData
from ctxagent.context.floor.sanitize import REDACTED, Sanitizer, redact_secrets
from ctxagent.context.history import SessionLog
from ctxagent.context.memory import MemoryStore
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import get_counter

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx4Wq8Zr1mXbL0Yk3Jv9Tq2dQ7pN6sR4uV8wA1bC3dE5fG7hI\n"
       "Proc-Type: 4,ENCRYPTED\nk3Jv9Tq2dQ7pN6sR4uV8wA1bC3dE5fG7hI9jK0lM2nO4pQ6rS8tU0vW2xY4zA6bC8==\n"
       "-----END RSA PRIVATE KEY-----")
OPENSSH = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
           "QyNTUxOQAAACBXk2vN1oP3qR5sT7uV9wX1yZ3aB5cD7eF9gH1iJ3kL5mAAAAJhZ2Fnb3Rs\n-----END OPENSSH PRIVATE KEY-----")

# (id, text, the secret that must go, what must stay)
SHAPES = [
    ("pem-block", f"key file:\n{PEM}\n用完删除", "MIIEpAIBAAKCAQEAx4Wq8Zr1", "-----END RSA PRIVATE KEY-----\n用完删除"),
    ("pem-encrypted-header", PEM, "k3Jv9Tq2dQ7pN6sR4uV8wA1b", "-----BEGIN RSA PRIVATE KEY-----"),
    ("openssh-block", OPENSSH, "b3BlbnNzaC1rZXktdjEAAAAABG5v", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("pem-in-json", json.dumps({"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAAS\n-----END PRIVATE KEY-----\n"}),
     "MIIEvQIBADANBgkqhkiG9w0", '"private_key": "-----BEGIN PRIVATE KEY-----'),
    ("pem-cut-off", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yFQ5MAkGA1UE\n[... output truncated]",
     "MHcCAQEEIBkg4LVWM9nuwNSk3yFQ5M", "[... output truncated]"),
    ("slack-bot", "SLACK=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx 机器人", "xoxb-1234567890", "机器人"),
    ("slack-user", "token xoxp-2222222222-3333333333-4444444444-abcdef0123456789", "xoxp-2222222222", "token "),
    ("stripe-live", "charge with sk_live_51HxYzAbCdEfGhIjKlMnOpQr please", "sk_live_51HxYz", "charge with "),
    ("stripe-restricted", "rk_live_51HxYzAbCdEfGhIjKlMnOpQr", "rk_live_51HxYz", ""),
    ("google-api-key", "maps key AIzaSyA1234567890abcdefghijklmnopqrstuv 地图", "AIzaSyA123456", "地图"),
    ("huggingface", "HF: hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "hf_AbCdEfGhIjKl", "HF: "),
    ("url-password", "DATABASE_URL=postgres://admin:hunter2xyz@db.internal:5432/app", "hunter2xyz", "postgres://admin:"),
    ("url-password-https", "git clone https://bot:ghs9Tq2dQ7pN6@git.example.com/r.git", "ghs9Tq2dQ7pN6", "@git.example.com/r.git"),
    ("env-password", "DB_PASSWORD=hunter2", "hunter2", "DB_PASSWORD="),
    ("env-password-quoted", "export PASSWORD='c0rrect horse'", "c0rrect horse", "export PASSWORD="),
    ("env-secret", "CLIENT_SECRET=abcd1234efgh5678", "abcd1234efgh5678", "CLIENT_SECRET="),
    ("env-token", 'GITHUB_TOKEN="9f8e7d6c5b4a"', "9f8e7d6c5b4a", "GITHUB_TOKEN="),
    ("env-key", "export OPENROUTER_API_KEY=or-v1-0123456789abcdef", "or-v1-0123456789abcdef", "OPENROUTER_API_KEY="),
    ("env-key-chinese", "配置：STRIPE_KEY=zzk_9f8e7d6c5b4a3210，请勿外传", "zzk_9f8e7d6c5b4a3210", "，请勿外传"),
    ("yaml-password", "database:\n  password: s3cr3t!x\n  host: db", "s3cr3t!x", "  host: db"),
    ("json-secret", '{"client_secret": "abcd1234efgh", "name": "app"}', "abcd1234efgh", '"name": "app"'),
    ("toml-token", 'api_token = "0123456789abcdef"', "0123456789abcdef", "api_token = "),
    ("ini-password", "[db]\npassword = Tr0ub4dor&3\n", "dor&3", "[db]"),
    ("code-literal-key", "SECRET_KEY = 'django-insecure-7f3k2m9x'", "django-insecure-7f3k2m9x", "SECRET_KEY = "),
    ("url-query-token", "GET /api?access_token=abc123def456ghi&page=2", "abc123def456ghi", "&page=2"),
    ("url-query-second", "/cb?page=2&client_secret=Zz9Yy8Xx7&state=x", "Zz9Yy8Xx7", "&state=x"),
    ("bearer-header", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "eyJhbGciOiJIUzI1NiJ9", "Authorization: Bearer "),
    ("aws-secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "aws_secret_access_key"),
    ("github-token", "ghp_1234567890abcdefghijklmnopqrstuvwxyz12", "ghp_1234567890", ""),
    ("anthropic", "sk-ant-api03-" + "Zq9x" * 12, "sk-ant-api03-Zq9x", ""),
    # issue 19: the shapes `env` sent to the model, the log and memory (the sandbox's filter knew them)
    ("gitlab-pat", "GITLAB=glpat-Ab3dEf6hIj9kLm2nOp5q 令牌", "glpat-Ab3dEf6hIj9kLm2nOp5q", " 令牌"),
    ("gitlab-deploy", "token gldt-Zz9Yy8Xx7Ww6Vv5Uu4Tt3", "gldt-Zz9Yy8Xx7Ww6Vv5Uu4Tt3", "token "),
    ("azure-account-key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
     "Eby8vdM02xNOcqFlqUwJPL", "AccountName=acme;AccountKey=[redacted];EndpointSuffix=core.windows.net"),
    ("azure-sas", "Endpoint=sb://x.servicebus.windows.net/;SharedAccessSignature=sv=2020-08-04&sig=ab%2Bcd3D&se=1",
     "sig=ab%2Bcd3D", "SharedAccessSignature="),
    ("azure-shared-key", "Endpoint=sb://x/;SharedAccessKeyName=root;SharedAccessKey=Zm9vYmFyYmF6cXV4MTIz=", "Zm9vYmFyYmF6", "SharedAccessKeyName=root"),
    ("basic-header", "Authorization: Basic dXNlcjpwYXNzd29yZA== 已发送", "dXNlcjpwYXNzd29yZA", "Authorization: Basic "),
    ("sentry-dsn", "dsn https://3f2a9c1b7d4e4f6a8b0c2d4e6f8a0b1c@o123.ingest.sentry.io/456", "3f2a9c1b7d4e4f6a8b0c",
     "@o123.ingest.sentry.io/456"),
    ("env-dsn", "SENTRY_DSN=https://abc123@o1.ingest.sentry.io/1", "abc123@", "SENTRY_DSN="),
    ("mysql-pwd", "MYSQL_PWD=hunter2", "hunter2", "MYSQL_PWD="),
    ("npm-auth", "NPM_CONFIG__AUTH=dXNlcjpwYXNz", "dXNlcjpwYXNz", "NPM_CONFIG__AUTH="),
]

# code and prose that merely mention a secret-sounding name: unchanged
UNCHANGED = [
    "token = tokenize(x)",
    "tokens = [token for token in tokenize(text)]",
    "password = os.environ['DB_PASSWORD']",
    "password = getpass.getpass()",
    "def login(user: str, password: str) -> bool:",
    "if password == 'admin123':",
    "secret_key: str = settings.SECRET_KEY",
    "self.token = token",
    "max_tokens = 1024",
    "token_count: int = 0",
    "sort_key = 'name'",
    "primary_key=True",
    "password: ${DB_PASSWORD}",
    'password = "{{ vault_password }}"',
    "raise ValueError('invalid token: expired')",
    "PWD=/home/me/project",
    "http://localhost:8080/path?page=2",
    "ssh://git@github.com:22/org/repo.git",
    "用户密码必须加密存储，token 不能写进日志。",
    "git checkout task-abcdefghijklmnopqrstuvwxyz0123",
    "Basic usage: call it with basic functionality first.",
    "auth: true",
    "author=me",
    "https://user@example.com/repo.git",
    "OLDPWD=/tmp",
]


@pytest.mark.parametrize(("text", "secret", "kept"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_each_shape_is_redacted_the_same_way_everywhere(tmp_path: Path, text: str, secret: str, kept: str) -> None:
    logged = Sanitizer()(text)
    assert secret not in logged and REDACTED in logged and kept in logged, logged
    assert redact_secrets(text) == logged  # the shape-only form is the same set
    with MemoryStore.open(tmp_path / "m.db") as store:
        rec = store.get(store.add(text, "note", context=text))
        assert rec is not None and secret not in rec.content and secret not in rec.context and REDACTED in rec.content


@pytest.mark.parametrize("text", UNCHANGED)
def test_code_and_prose_that_mention_secrets_are_left_alone(text: str) -> None:
    assert Sanitizer()(text) == text


def test_log_and_spill_hold_no_shape(tmp_path: Path) -> None:
    """Through the real sinks: a large tool output full of secrets is sanitized, then spilled."""
    everything = "\n".join(s[1] for s in SHAPES)
    big = everything + "\n" + "\n".join(f"filler line {i}" for i in range(3000))
    log = SessionLog.create(tmp_path / "sessions", "s1", sanitize=Sanitizer())
    content = log.sanitize(big) if log.sanitize else big  # as agent/tool_calls.py does before spilling
    spill = SpillStore(tmp_path / "spill")
    shown, meta = spill.maybe_spill(content, get_counter("o200k_base"), 500)
    assert meta is not None
    log.append(ToolResultData(call_id="c1", name="shell", content=shown, is_error=False, spill=meta))
    log.close()
    on_disk = (tmp_path / "sessions" / "s1.jsonl").read_text(encoding="utf-8") + spill.get(meta["handle"])
    for _id, _text, secret, _kept in SHAPES:
        assert secret not in on_disk, _id
