from __future__ import annotations

import base64
import json

from ctxagent.context.events import ToolResultData
from ctxagent.context.floor.sanitize import IMAGE_STRIPPED, REDACTED, Sanitizer
from ctxagent.context.history import SessionLog

PNG = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode()


def test_base64_data_uri_is_stripped() -> None:
    s = Sanitizer([])
    out = s(f"look: {PNG} done")
    assert out == f"look: {IMAGE_STRIPPED} done"
    short = "data:image/png;base64,iVBORw0KGgo="
    assert s(short) == short  # under 200 chars: kept


def test_key_shapes_are_redacted() -> None:
    s = Sanitizer()
    samples = [
        "sk-ant-api03-" + "A1b2C3d4E5" * 8,
        "sk-proj-" + "abcDEF123_" * 6,
        "sk-" + "a1B2c3D4e5" * 4 + "T3BlbkFJ" + "x" * 20,
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_" + "a" * 36,
        "gho_" + "B" * 36,
        "ghs_" + "c1" * 18,
        "github_pat_" + "11ABCDEFG0" * 8,
    ]
    for key in samples:
        text = f"export KEY={key} # 密钥"
        out = s(text)
        assert key not in out, key
        assert REDACTED in out and "密钥" in out


def test_aws_secret_after_its_name() -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    out = Sanitizer()(f"aws_secret_access_key = {secret}\nregion=us-east-1")
    assert secret not in out and "region=us-east-1" in out
    out = Sanitizer()(json.dumps({"AWS_SECRET_ACCESS_KEY": secret}))
    assert secret not in out


def test_configured_values_and_nested_structures() -> None:
    key = "my-local-llm-key-123456"
    s = Sanitizer([key, "short"])
    data = {"text": f"using {key}", "list": [key, 3, None, {"deep": PNG}], "tuple": (key,), "n": 1.5, key: "as key"}
    out = s(data)
    dumped = json.dumps(out, default=str)
    assert key not in dumped
    assert out["n"] == 1.5 and out["list"][1] == 3 and out["list"][2] is None
    assert out["list"][3]["deep"] == IMAGE_STRIPPED
    assert s("short words stay") == "short words stay"  # too short to be treated as a secret


def test_ordinary_text_untouched() -> None:
    s = Sanitizer(["sk-test-key-000000000"])
    text = "def task_skip(): return 'sk' + '-' + 'x'  # 不要修改配置文件"
    assert s(text) == text
    branch = "git checkout task-abcdefghijklmnopqrstuvwxyz0123"  # contains "sk-…" but is not a key
    assert s(branch) == branch


def test_session_log_sanitizes_before_writing(tmp_path) -> None:
    key = "sk-ant-api03-" + "Z" * 40
    log = SessionLog.create(tmp_path, "s1", sanitize=Sanitizer([key]))
    log.append(ToolResultData(call_id="c", name="shell", content=f"KEY={key} img={PNG}", is_error=False))
    log.close()
    raw = (tmp_path / "s1.jsonl").read_text(encoding="utf-8")
    assert key not in raw and "base64," not in raw
    assert REDACTED in raw and IMAGE_STRIPPED in raw
