"""A resumed session keeps its model — the one it started with, or the one it was switched to — and
every call is priced with the model that made it (issue 24, items 4 and 5): the real console script,
the real SDKs, the loopback scripted server."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ctxagent.agent.providers.registry import cost_usd, model_info, parse_model_name
from ctxagent.context.request import Usage

SONNET, MINI = "anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"


def price(label: str, usage: Usage) -> float:
    """One call's dollars at `label`'s registry prices (the expected value, computed here by hand)."""
    provider, model = parse_model_name(label)
    return float(cost_usd(model_info(provider, model), usage))


def _calls(events: list[dict]) -> list[tuple[str, Usage]]:
    """(model of the step, usage) of each model call, read from the log by hand."""
    out, model = [], ""
    for e in events:
        if e["kind"] == "context_report":
            model = e["data"]["model"]
        elif e["kind"] == "assistant" and not e["data"].get("direct"):
            u = e["data"].get("usage", {})
            out.append((model, Usage(u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cache_read", 0),
                                     u.get("cache_write", 0))))
    return out


def test_resume_with_a_base_url_keeps_the_switched_model_and_prices_each_call(
        repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    srv = scripted_server([{"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}])
    first = ctxagent_run(repo, "-p", "hello", "--model", SONNET, "--base-url", srv.url, "--output", "json")
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session"]
    # a switch of model on the same session (the app's /model does the same to the next steps)
    second = ctxagent_run(repo, "-p", "again", "--resume", session, "--model", MINI, "--base-url", srv.url, "--output", "json")
    assert second.returncode == 0, second.stderr
    # no --model: the session's own, the one it last ran with — not "no model configured", not a guess
    third = ctxagent_run(repo, "-p", "and again", "--resume", session, "--base-url", srv.url, "--output", "json")
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["result"] == "third answer"
    events = read_session(repo, session)
    models = [e["data"]["model"] for e in events if e["kind"] == "context_report"]
    assert models == [SONNET, MINI, MINI]
    assert [r["path"] for r in srv.requests()][-1].endswith("/chat/completions")  # OpenAI's wire, as gpt-5.4-mini
    # the report prices each call with its own model
    calls = _calls(events)
    sonnet = sum(price(m, u) for m, u in calls if m == SONNET)
    mini = sum(price(m, u) for m, u in calls if m == MINI)
    assert sonnet > 0 and mini > 0 and sonnet != mini * 2  # different prices, so a repricing would show
    report = ctxagent_run(repo, "report", session)
    assert report.returncode == 0, report.stderr
    line = next(ln for ln in report.stdout.splitlines() if ln.startswith("cost:"))
    assert f"${sonnet + mini:.4f}" in line
    assert f"1 call with {SONNET} ${sonnet:.4f}" in line and f"2 calls with {MINI} ${mini:.4f}" in line
    assert "tokens: as the provider counts them" in report.stdout  # the unit, said once


def test_a_resume_naming_a_model_uses_that_model(repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    srv = scripted_server([{"text": "one"}, {"text": "two"}])
    first = ctxagent_run(repo, "-p", "hello", "--model", MINI, "--base-url", srv.url, "--output", "json")
    session = json.loads(first.stdout)["session"]
    again = ctxagent_run(repo, "-p", "again", "--continue", "--model", SONNET, "--base-url", srv.url, "--output", "json")
    assert again.returncode == 0, again.stderr
    assert [e["data"]["model"] for e in read_session(repo, session) if e["kind"] == "context_report"] == [MINI, SONNET]
    assert re.search(r"/messages$", srv.requests()[-1]["path"])


def test_a_resume_sends_where_the_config_says_and_says_the_log_named_another_url(
        repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    """The log is in the repository (anyone may have written it): it keeps the session's model, never
    its base URL. A resume on another URL than the log recorded goes to the config's, and says both."""
    before, now = (scripted_server([{"text": "first answer"}]),
                   scripted_server([{"text": "second answer"}, {"text": "third answer"}]))
    first = ctxagent_run(repo, "-p", "hello", "--model", MINI, "--base-url", before.url, "--output", "json")
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session"]
    again = ctxagent_run(repo, "-p", "again", "--resume", session, "--base-url", now.url, "--output", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["result"] == "second answer"
    assert len(before.requests()) == 1 and len(now.requests()) == 1
    lines = [ln for ln in again.stderr.splitlines() if "this session ran against" in ln]
    assert lines == [f"ctxagent: this session ran against {before.url}, now {now.url} from your config "
                     "(the session log never chooses where requests go)"]
    # the log now records where the session went: the next resume on that URL says nothing
    starts = [e["data"] for e in read_session(repo, session) if e["kind"] == "session_start"]
    assert starts[-1]["base_url"] == now.url
    third = ctxagent_run(repo, "-p", "once more", "--resume", session, "--base-url", now.url, "--output", "json")
    assert third.returncode == 0, third.stderr
    assert "this session ran against" not in third.stderr
