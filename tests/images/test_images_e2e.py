"""Images end to end: the real console script, the real anthropic and openai SDKs, the real scripted
server (a subprocess) — an image reaches the request as the wire's image block, its bytes stay out
of the session log, and the scripted model says what it saw."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from image_helpers import e2e, png

git, run_ctxagent, session_events = e2e().git, e2e().run_ctxagent, e2e().session_events

MODELS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"]
SHOT = png(64, 48)


def _images_of(body: dict[str, Any]) -> list[bytes]:
    """The image bytes a request carries, from either wire format."""
    out: list[bytes] = []

    def block(b: Any) -> None:
        if not isinstance(b, dict):
            return
        if b.get("type") == "image":
            out.append(base64.b64decode(b["source"]["data"]))
        elif b.get("type") == "image_url":
            out.append(base64.b64decode(b["image_url"]["url"].split(",", 1)[1]))
        elif b.get("type") == "tool_result" and isinstance(b.get("content"), list):
            for inner in b["content"]:
                block(inner)

    for m in body["messages"]:
        if isinstance(m.get("content"), list):
            for b in m["content"]:
                block(b)
    return out


def _session(out_stdout: str) -> str:
    return str(json.loads(out_stdout.strip().splitlines()[-1])["session"])


@pytest.fixture
def shot_repo(repo: Path) -> Path:
    (repo / "shot.png").write_bytes(SHOT)
    (repo / "notes").mkdir()
    (repo / "notes" / "logo.dat").write_bytes(png(8, 8))  # an image by its bytes, whatever its name
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "images")
    return repo


@pytest.mark.parametrize("model", MODELS)
def test_mention_attaches_the_image(shot_repo: Path, scripted_server, model: str) -> None:
    srv = scripted_server([{"text": "I see: {images}"}])
    out = run_ctxagent(shot_repo, "-p", "what is wrong in @shot.png ?", "--model", model, "--base-url", srv.url,
                       "--output", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert "image/png 64x48" in result["result"]  # the scripted model saw it
    (req,) = srv.requests()
    assert _images_of(req["body"]) == [SHOT]
    assert req["images"][0]["where"] == ("tool_result" if model.startswith("anthropic") else "user")
    if model.startswith("openai"):  # a tool message takes text only: the image follows in a user message
        tool = next(m for m in req["body"]["messages"] if m["role"] == "tool")
        assert isinstance(tool["content"], str) and "shot.png" in tool["content"]
    log = (shot_repo / ".ctxagent" / "sessions" / f"{_session(out.stdout)}.jsonl").read_text()
    assert base64.b64encode(SHOT).decode()[:40] not in log  # bytes out of the log
    events = session_events(shot_repo, _session(out.stdout))
    (ref,) = [img for e in events if e.get("kind") == "tool_result" for img in e["data"].get("images", [])]
    assert ref["media_type"] == "image/png" and (ref["width"], ref["height"]) == (64, 48) and ref["size"] == len(SHOT)
    assert (shot_repo / ".ctxagent" / "spill" / f"{ref['sha256']}.img").read_bytes() == SHOT
    check = run_ctxagent(shot_repo, "inspect", _session(out.stdout), "--step", "1")  # rebuilt, images read back
    assert check.returncode == 0 and "identical" in check.stdout, check.stdout + check.stderr


@pytest.mark.parametrize("model", MODELS)
def test_read_file_of_an_image(shot_repo: Path, scripted_server, model: str) -> None:
    srv = scripted_server([
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes/logo.dat"}}]},
        {"text": "got {images}"},
    ])
    out = run_ctxagent(shot_repo, "-p", "look at the logo", "--model", model, "--base-url", srv.url, "--output", "json")
    assert out.returncode == 0, out.stderr
    assert "image/png 8x8" in json.loads(out.stdout.strip().splitlines()[-1])["result"]
    first, second = srv.requests()
    assert _images_of(first["body"]) == [] and _images_of(second["body"]) == [png(8, 8)]


@pytest.mark.parametrize("model", MODELS)
def test_old_images_become_stubs_and_come_back(shot_repo: Path, scripted_server, model: str) -> None:
    srv = scripted_server([
        {"text": "a chart"},
        {"text": "ok"},
        {"text": "ok {images}"},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "shot.png"}}]},
        {"text": "again: {images}"},
    ])
    base = ("--model", model, "--base-url", srv.url, "--output", "json")
    for i, prompt in enumerate(["what is in @shot.png ?", "and then?", "and now?", "look again"]):
        out = run_ctxagent(shot_repo, "-p", prompt, *(("--continue",) if i else ()), *base)
        assert out.returncode == 0, out.stderr
    bodies = [r["body"] for r in srv.requests()]
    assert [len(_images_of(b)) for b in bodies] == [1, 1, 0, 0, 1]  # cleared once older than the last two turns
    third = json.dumps(bodies[2], ensure_ascii=False)
    assert "cleared from view: older than the recent turns — read_file path=shot.png shows it again" in third
    assert json.loads(out.stdout.strip().splitlines()[-1])["result"] == "again: image/png 64x48 " + (
        "(tool_result)" if model.startswith("anthropic") else "(user)")


def test_the_catalogue_says_a_model_takes_no_images(shot_repo: Path, scripted_server) -> None:
    srv = scripted_server({"turns": [{"text": "saw {images}"}], "models": [
        {"id": "claude-sonnet-5-5", "max_input_tokens": 200_000, "max_tokens": 32_000, "image_input": False}]})
    out = run_ctxagent(shot_repo, "-p", "look at @shot.png", "--model", "anthropic:claude-sonnet-5-5",
                       "--base-url", srv.url, "--output", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["result"] == "saw no images"
    (req,) = srv.requests()
    assert _images_of(req["body"]) == []
    assert "its contents are not shown (this model takes no images)" in json.dumps(req["body"])


def test_inspect_rebuilds_a_step_of_a_model_without_images_with_the_stubs_it_sent(
        shot_repo: Path, scripted_server) -> None:
    """A session switched to a model that takes no images (a local model's, by the registry's rule) sends
    the earlier image as a stub; `inspect` rebuilds that step by the same rule (registry.takes_images), so
    the rebuilt request is the one sent — not one with the image in it."""
    srv = scripted_server([{"text": "saw {images}"}, {"text": "now {images}"}])
    first = run_ctxagent(shot_repo, "-p", "what is in @shot.png ?", "--model", "openai:gpt-5.4-mini",
                         "--base-url", srv.url, "--output", "json")
    assert first.returncode == 0, first.stderr
    again = run_ctxagent(shot_repo, "-p", "and without it?", "--continue", "--model", "openai:local-coder-7b",
                         "--base-url", srv.url, "--output", "json")
    assert again.returncode == 0, again.stderr
    bodies = [r["body"] for r in srv.requests()]
    assert [len(_images_of(b)) for b in bodies] == [1, 0]
    assert "this model takes no images" in json.dumps(bodies[1], ensure_ascii=False)
    session = _session(again.stdout)
    for step in ("1", "2"):  # the image model's step with its image, the other's with the stub
        check = run_ctxagent(shot_repo, "inspect", session, "--step", step)
        assert check.returncode == 0 and "identical to what was sent" in check.stdout, check.stdout + check.stderr
    rebuilt = json.loads(run_ctxagent(shot_repo, "inspect", session, "--step", "2", "--json").stdout)["request"]
    assert _images_of(rebuilt) == [] and "this model takes no images" in json.dumps(rebuilt, ensure_ascii=False)
