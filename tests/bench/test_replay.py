"""Replay on tiny hand-made trajectories with known answers: tokens (whole requests, provider units), overflows,
retention of facts, requirements and decisions, cached cost, the baseline and the server-side emulations."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build
from ctxagent.context.builder.inputs import BuildInputs
from ctxagent.context.history import Event
from ctxagent.context.tokens import REQUEST_OVERHEAD, count_request, count_system
from ctxagent.tui.lab.bench.cache_cost import RULES
from ctxagent.tui.lab.bench.emulations import ServerParams
from ctxagent.tui.lab.bench.readers import SourceEvent, Trajectory
from ctxagent.tui.lab.bench.replay import STRATEGIES, Engine
from ctxagent.tui.lab.bench.replay_run import replay_source
from ctxagent.tui.lab.bench.tokens_bench import reference_estimates, tokens_source

SYSTEM = "You are a coding agent."
LONG_TASK = ("Fix the crash in src/app.py please. 修复崩溃。 The crash happens when the reader gets an empty file, "
             "and the stack trace points at the parser module; reproduce it first, then fix it and explain the change.")


def _big_output(lines: int, needle_at: int | None = None) -> str:
    out = [f"line {i:04d}: value_{i} = compute(alpha_{i}, beta_{i}) # 说明 {i}" for i in range(lines)]
    if needle_at is not None:
        out[needle_at] = "see helpers/helpers.py for the shared code"
    return "\n".join(out)


def _call(traj: Trajectory, cid: str, command: str, reported: int | None) -> None:
    traj.add_assistant("THOUGHT", [{"id": cid, "name": "bash", "arguments": {"command": command}}], reported)


def tiny_trajectory(reported: bool = True, system: str = SYSTEM) -> Trajectory:
    """call 1 reads app.py (named by the user); its output names helpers.py deep in the middle;
    call 2 reads helpers.py (a fact only a context that kept that middle still shows); call 3 ends."""
    t = Trajectory("mini-swe-agent", "tiny", system=system)
    t.add_user(LONG_TASK)
    _call(t, "c1", "cat src/app.py", 1000 if reported else None)
    t.add_tool_result("c1", "bash", _big_output(900, needle_at=450))
    _call(t, "c2", "cat helpers/helpers.py", 2000 if reported else None)
    t.add_tool_result("c2", "bash", "def shared():\n    return 1\n")
    t.add_assistant("done", [], 3000 if reported else None)
    return t


def spec_trajectory() -> Trajectory:
    """A user requirement and decision, then an issue read by a tool with two more requirements, then plain steps."""
    t = Trajectory("mini-swe-agent", "spec", system=SYSTEM)
    t.add_user("Please fix the crash in src/app.py. Do not modify the tests directory under any circumstances. "
               "Let's use the streaming parser for the new reader.")
    _call(t, "c1", "issues show 7", None)
    t.add_tool_result("c1", "bash", "Issue 7: reader crash\n## Constraints\n"
                                    "- Keep the public API of reader.py stable for version two.\n"
                                    "- The fix must stay compatible with Python 3.11 and later.\n")
    _call(t, "c2", "cat src/app.py", None)
    t.add_tool_result("c2", "bash", "import os\nprint(os.getcwd())\n")
    _call(t, "c3", "python src/app.py", None)
    t.add_tool_result("c3", "bash", "/tmp/work\n")
    t.add_assistant("Fixed.", [], None)
    return t


def _full_requests(traj: Trajectory) -> list[int]:
    """Independent count: the full request at each call, built from the raw events so far."""
    engine = Engine.load(10**9)
    out = []
    for call in traj.calls:
        events = [Event(i, e.kind, e.data) for i, e in enumerate(traj.events[: call.position])]
        res = build(BuildInputs(events=events, system=traj.system, tools=[], budget=Budget(window=10**9),
                                counter=engine.counter, step=1, turn=1, strategy="full"))
        out.append(count_request(res.request, engine.counter))
    return out


def test_full_and_window_tokens_retention_and_overflows() -> None:
    traj = tiny_trajectory(reported=False)  # no usage: the calibrator stays at 1, provider tokens = local
    window = 12_000
    full_tokens = _full_requests(traj)
    res = replay_source([traj], window, strategies=["full", "window"], overhead="none")
    full, win = res["strategies"]["full"], res["strategies"]["window"]
    assert res["runs"] == 1 and res["calls"] == 3 and res["prefix"]["tokens"] == 0
    assert full["tokens_sum"] == sum(full_tokens)
    assert full["overflows"] == sum(1 for n in full_tokens if n > window) >= 1  # the 900-line output alone is > 12k
    # facts: app.py at call 1 (named by the user), helpers.py at call 2 (named in the output's middle)
    assert full["retention"] == 1.0
    assert win["retention"] == 0.5  # the window caps each message at 4,000 tokens: the middle is gone
    assert win["tokens_sum"] < full["tokens_sum"] and win["overflows"] == 0
    assert 0 < full["prefix_reuse"] <= 1
    assert full["build_ms_p50"] is not None and full["spills"] == 0 and full["compactions"] == 0


def test_whole_requests_carry_the_prefix_the_transcript_lacks() -> None:
    traj = tiny_trajectory()
    local = _full_requests(traj)
    # the provider saw 5,000 more tokens than the transcript holds, and counts 25 % more: reported = 5000 + 1.25 · local
    for call, n in zip(traj.calls, local, strict=True):
        call.reported = int(round(5000 + 1.25 * n))
    res = replay_source([traj], 200_000, strategies=["full"])
    assert res["fit"]["a"] == pytest.approx(5000, abs=2) and res["fit"]["b"] == pytest.approx(1.25, abs=1e-3)
    prefix = res["prefix"]["tokens"]
    assert prefix == pytest.approx(4000, abs=10)  # a / b local tokens of stable prefix in every request
    # the first call is priced before the calibrator has seen any usage (ratio 1), the others at its ratio 1.25
    expected = (local[0] + prefix) + sum(c.reported or 0 for c in traj.calls[1:])
    assert res["strategies"]["full"]["tokens_sum"] == pytest.approx(expected, rel=0.005)
    assert res["strategies"]["reference"]["tokens_sum"] == sum(c.reported or 0 for c in traj.calls)
    assert res["calibration_ratio"] == pytest.approx(1.25, abs=0.01)
    # ctxagent's own prompt and tools in the strategies' requests; the reference keeps the source's estimated
    # prefix, so the calibrator still learns the provider's ratio and not the missing prefix
    product = replay_source([traj], 200_000, strategies=["full"], overhead="product")
    assert product["prefix"]["mode"] == "product" and product["prefix"]["tokens"] > 500
    assert product["reference_prefix"]["tokens"] == pytest.approx(4000, abs=10)
    assert product["calibration_ratio"] == pytest.approx(1.25, abs=0.01)
    # history only, as the old measure did: the calibrator's intercept absorbs the missing 5,000 tokens, so the
    # effective ratio at the last request's size is above the provider's 1.25
    none = replay_source([traj], 200_000, strategies=["full"], overhead="none")
    assert none["prefix"]["tokens"] == 0 and none["calibration_ratio"] > 1.4


def test_overflows_are_counted_in_calibrated_provider_tokens() -> None:
    traj = tiny_trajectory()
    local = _full_requests(traj)
    for call, n in zip(traj.calls, local, strict=True):
        call.reported = 2 * n  # a provider that counts twice our tokens
    window = int(1.5 * local[-1])  # every local count fits, twice the last ones do not
    assert all(n < window for n in local)
    res = replay_source([traj], window, strategies=["full", "ctxagent"], use_memory=False)
    expected = int(local[0] > window) + sum(1 for n in local[1:] if 2 * n > window)  # ratio 1 at the first call, then 2
    assert expected == 2
    assert res["strategies"]["full"]["overflows"] == expected
    assert res["strategies"]["reference"]["overflows"] == sum(1 for c in traj.calls if (c.reported or 0) > window)
    # the product's builder gets the same ratio: it relieves pressure until the calibrated size fits
    assert res["strategies"]["ctxagent"]["overflows"] == 0
    assert res["strategies"]["ctxagent"]["tokens_p95"] <= window


def test_requirement_and_decision_retention_known_answers() -> None:
    res = replay_source([spec_trajectory()], 200_000, use_memory=False, overhead="none")
    s = res["strategies"]
    for name in ("full", "window", "ctxagent", "reference", "anthropic-clear", "anthropic-compact", "openai-compact"):
        assert s[name]["requirement_retention"] == 1.0, name  # nothing is ever cut at this size
        assert s[name]["decision_retention"] == 1.0, name
    base = s["last2+names"]
    # calls: 1 sees the user turn (1/1); 2 the result (2 of 3); 3 and 4 plain steps (0 of 3)
    assert base["requirement_retention"] == pytest.approx((1 + 2 / 3 + 0 + 0) / 4, abs=1e-4)
    assert base["requirement_retention_by_origin"] == {"tool": pytest.approx(1 / 3, abs=1e-4), "user": 0.25}
    assert base["decision_retention"] == 0.25
    # app.py is a fact at calls 2 and 3: at 2 it is only in the list of names, at 3 in the previous call's command
    assert base["retention"] == 1.0 and base["retention_without_lists"] == 0.5


def test_cost_cached_openai_rules_known_answer() -> None:
    traj = tiny_trajectory(reported=False)
    sizes = _full_requests(traj)
    res = replay_source([traj], 10**9, strategies=["full"], overhead="none", rules=RULES["openai"])
    read = [0] + [(prev // 128) * 128 if prev >= 1024 else 0 for prev in sizes[:-1]]  # each request extends the last
    full = res["strategies"]["full"]
    assert full["cost_uncached"] == sum(sizes)
    assert full["cost_cached"] == pytest.approx(sum(sizes) - sum(read) + 0.1 * sum(read), abs=1)
    assert full["cost_cached_last_message"] is None  # breakpoints mean nothing under automatic caching


def test_cost_cached_anthropic_rules_with_the_products_breakpoints() -> None:
    system = "You are a careful coding agent. " * 200  # a stable prefix over 1,024 tokens
    traj = tiny_trajectory(reported=False, system=system)
    sizes = _full_requests(traj)
    res = replay_source([traj], 10**9, strategies=["full"], overhead="none", rules=RULES["anthropic"])
    full = res["strategies"]["full"]
    engine = Engine.load(10**9)
    stable = REQUEST_OVERHEAD + count_system(system, engine.counter)
    assert stable > 1024
    # the product marks the stable prefix and the end of the history (no warm block in `full`): each call
    # reads the previous request from the cache and writes what is new
    last = 1.25 * sizes[0] + sum(0.1 * a + 1.25 * (b - a) for a, b in zip(sizes, sizes[1:], strict=False))
    assert full["cost_cached"] == pytest.approx(last, abs=1)
    assert full["cost_cached_last_message"] == pytest.approx(last, abs=1)


def test_reference_cost_uses_the_reported_cache_usage() -> None:
    traj = tiny_trajectory()
    usage = [(1000, 0, 900), (2000, 900, 1000), (3000, 1900, 1000)]
    for call, (reported, read, write) in zip(traj.calls, usage, strict=True):
        call.reported, call.cached, call.cache_write = reported, read, write
    res = replay_source([traj], 200_000, strategies=["full"], rules=RULES["anthropic"])
    ref = res["strategies"]["reference"]
    expected = sum((r - c - w) + 0.1 * c + 1.25 * w for r, c, w in usage)
    assert ref["cost_real"] == pytest.approx(expected, abs=1)  # the real bill, beside ...
    # ... the same simulation as the strategies' (with Claude Code's breakpoint on the last message)
    assert ref["cost_uncached"] == 6000 and ref["cost_cached"] == ref["cost_cached_last_message"] < 6000
    assert res["strategies"]["full"]["cost_real"] is None


def test_server_side_emulations_in_the_replay() -> None:
    traj = spec_trajectory()
    for i in range(4, 10):  # more steps with sizeable outputs
        _call(traj, f"c{i}", f"cat src/mod_{i}.py", None)
        traj.add_tool_result(f"c{i}", "bash", _big_output(60))
    traj.add_assistant("Done.", [], None)
    params = ServerParams(clear_trigger=2_000, clear_keep=3, compact_trigger=4_000, openai_trigger_share=0.02)
    res = replay_source([traj], 200_000, use_memory=False, overhead="none", server=params)
    s = res["strategies"]
    clear = s["anthropic-clear"]
    assert clear["prunes"] == 9 - 3  # every result but the last three tool uses' is cleared by the end
    # the requirements sat in the first result: cleared once it fell out of the last three
    assert 0 < clear["requirement_retention_by_origin"]["tool"] < 1
    assert clear["tokens_sum"] < s["full"]["tokens_sum"]
    for name in ("anthropic-compact", "openai-compact"):
        st = s[name]
        assert st["compactions"] >= 1 and st["extra_calls"] == st["compactions"]
        # the billed tokens include the summarization iterations over the whole prompt
        assert st["tokens_sum"] > st["tokens_mean"] * res["calls"] + 1
    # the OpenAI compaction keeps the user's messages verbatim, Anthropic's summary keeps what its detectors find
    assert s["openai-compact"]["requirement_retention_by_origin"]["user"] == 1.0
    assert res["server_side"]["anthropic-clear"]["trigger"] == 2_000


def test_reference_retention_uses_the_real_summary_after_a_source_compaction() -> None:
    traj = tiny_trajectory()
    last = traj.events.pop()  # drop the final answer; compact, then come back to helpers.py
    traj.calls.pop()
    traj.events.append(SourceEvent("source_compaction", {"summary": "Summary: we read src/app.py.", "pre_tokens": 9000}))
    traj.add_user("continue. You must not change the public API.")
    _call(traj, "c3", "python helpers/helpers.py", 1500)
    traj.add_tool_result("c3", "bash", "ok")
    traj.events.append(last)
    res = replay_source([traj], 200_000, strategies=["full", "ctxagent"], use_memory=False)
    after = res["after_source_compaction"]
    assert after["calls"] == 1
    assert after["facts"] == 1 and after["early_facts"] == 1
    assert after["retention"]["reference"] == 0.0  # the real summary dropped helpers.py
    assert after["retention"]["full"] == 1.0
    assert after["requirement_retention"]["full"] == 1.0
    assert res["strategies"]["reference"]["compactions"] == 1
    assert res["fit"] is not None  # the fit used only the calls before the compaction


def test_ctxagent_spills_big_output_and_keeps_within_window() -> None:
    traj = tiny_trajectory(reported=False)
    res = replay_source([traj], 12_000, strategies=["ctxagent"])
    c = res["strategies"]["ctxagent"]
    assert c["spills"] == 1
    assert c["overflows"] == 0
    assert c["tokens_sum"] < 12_000 * 3


def test_tokens_bench_calibrates_from_previous_calls() -> None:
    traj = tiny_trajectory()
    engine = Engine.load(10**9)
    pairs = reference_estimates(traj, engine)
    for call, (_, local) in zip(traj.calls, pairs, strict=True):
        call.reported = int(local * 1.2)  # a provider whose tokenizer counts 20 % more
    res = tokens_source([traj, traj], engine=engine)
    assert res["calls"] == 6
    assert res["raw"]["median_rel_err"] == pytest.approx(1 / 6, abs=0.01)
    assert res["calibrated"]["median_rel_err"] < 0.01
    assert res["final_ratio"] == pytest.approx(1.2, abs=0.01)


def test_cli_replay_json_shape_and_tables(tmp_path) -> None:  # type: ignore[no-untyped-def]
    traj_file = tmp_path / "run.jsonl"
    run = {"instance_id": "x", "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "fix src/app.py. Do not touch the tests."},
        {"role": "assistant", "content": "THOUGHT\n```bash\ncat src/app.py\n```", "usage": {"prompt_tokens": 120}},
        {"role": "user", "content": "<returncode>0</returncode><output>import os</output>"},
        {"role": "assistant", "content": "THOUGHT\n```bash\nsed -i s/a/b/ src/app.py\n```", "usage": {"prompt_tokens": 160}},
        {"role": "user", "content": "<returncode>0</returncode><output></output>"},
    ]}
    traj_file.write_text(json.dumps(run) + "\n")
    base = [sys.executable, "-m", "ctxagent.tui.cli", "bench", "replay", "--source", "mini-swe-agent",
            "--data", str(traj_file), "--window", "32000"]
    out = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert set(res) >= {"source", "window", "runs", "calls", "fit", "prefix", "cache_rules", "server_side", "strategies"}
    assert set(res["strategies"]) == {*STRATEGIES, "reference"}
    keys = {"tokens_sum", "tokens_mean", "tokens_p95", "prefix_reuse", "overflows", "failed_builds", "used_later",
            "retention", "retention_without_lists", "requirement_retention", "requirement_retention_by_origin",
            "decision_retention", "cost_uncached", "cost_cached", "cost_cached_last_message", "cost_real",
            "summarization_cost", "summarization_tokens", "cache_read_share", "cache_written", "build_ms_p50",
            "build_ms_p95", "spills", "prunes", "compactions", "extra_calls"}
    assert all(set(s) == keys for s in res["strategies"].values())
    assert res["calls"] == 2 and res["fit"] is not None and res["cache_rules"]["name"] == "openai"
    table = subprocess.run([*base, "--window", "32000,16k", "--strategy", "ctxagent,last2+names"], capture_output=True,
                           text=True, timeout=120)
    assert table.returncode == 0, table.stderr
    assert "W = 32,000" in table.stdout and "W = 16,000" in table.stdout
    assert "last2+names (baseline)" in table.stdout and "The trivial baseline last2+names" in table.stdout
    assert table.stdout.index("used-later kept") < table.stdout.index("retention w/o lists")  # the headline first
    bad = subprocess.run([*base, "--strategy", "nope"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown strategy" in bad.stderr


# -- the honest measures ---------------------------------------------------------------------
def test_grep_baseline_keeps_user_messages_detected_lines_and_the_last_two() -> None:
    res = replay_source([spec_trajectory()], 200_000, strategies=["full", "grep", "last2+names"], use_memory=False,
                        overhead="none")
    s = res["strategies"]
    # the user's turn verbatim plus the product's detectors over the issue read: every requirement line, no engine
    assert s["grep"]["requirement_retention"] == 1.0
    assert s["last2+names"]["requirement_retention"] < s["grep"]["requirement_retention"]


def test_grep_baseline_request_shape() -> None:
    from ctxagent.context.request import Message, Request, ToolCall
    from ctxagent.tui.lab.bench.emulations import GREP_KIND, GrepTracker, grep_baseline

    g = GrepTracker()
    g.add("user", {"text": "Fix it. Never touch the migrations. We'll use SQLite."})
    g.add("assistant", {"text": "", "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "cat SPEC.md"}}]})
    g.add("tool_result", {"call_id": "c1", "content": "## Constraints\n- Keep the CLI flags.\nFAILED t.py::test_a - x"})
    lines = list(g.lines)
    assert "Never touch the migrations." in lines and "We'll use SQLite." in lines
    assert "Keep the CLI flags." in lines and any(ln.startswith("FAILED t.py::test_a") for ln in lines)
    msgs = [Message("user", "first task"), Message("assistant", "", tool_calls=[ToolCall("c1", "bash", {"command": "ls"})]),
            Message("tool", "a\nb", tool_call_id="c1"), Message("user", "second"), Message("assistant", "ok"),
            Message("user", "third")]
    req = grep_baseline(Request("sys", msgs, []), lines)
    assert [m.content for m in req.messages[:2]] == ["first task", "second"]  # every user message before the last 2
    assert req.messages[2].kind == GREP_KIND and "- Never touch the migrations." in req.messages[2].content
    assert [m.content for m in req.messages[3:]] == ["ok", "third"]


def test_a_failed_build_is_counted_at_the_size_it_would_have_sent() -> None:
    """A system prompt larger than the window: nothing that trims can fit, and the builder raises."""
    big = "You are a careful agent. " * 900  # ~5,400 tokens
    traj = tiny_trajectory(reported=False, system=big)
    res = replay_source([traj], 4_000, strategies=["full", "ctxagent"], use_memory=False, overhead="none")
    ctx, full = res["strategies"]["ctxagent"], res["strategies"]["full"]
    assert ctx["failed_builds"] == ctx["overflows"] == 3
    # the un-relieved size: its own log (the 900-line output spilled) with no relief; never 0, never a saving
    assert ctx["tokens_sum"] > 3 * count_system(big, Engine.load(4000).counter)
    assert ctx["tokens_sum"] < full["tokens_sum"] and ctx["cost_cached"] > 0
    assert ctx["used_later"]["missing"]["build_failed"] == ctx["used_later"]["strings"]
    assert ctx["retention"] == 0.0 and ctx["requirement_retention"] in (None, 0.0)


def test_one_hour_ttl_writes_cost_twice_and_live_an_hour() -> None:
    system = "You are a careful coding agent. " * 400  # a stable prefix over 1,024 tokens at any calibration
    traj = tiny_trajectory(system=system)
    usage = [(3000, 0, 2900, 2900), (4000, 2900, 1000, 1000), (5000, 3900, 1000, 1000)]
    for k, (call, (reported, read, write, w1h)) in enumerate(zip(traj.calls, usage, strict=True)):
        call.reported, call.cached, call.cache_write, call.cache_write_1h = reported, read, write, w1h
        call.time = 1000.0 + 1000 * k  # 16 minutes apart: a 5-minute entry would be gone
    res = replay_source([traj], 10**9, strategies=["full"], overhead="none", rules=RULES["anthropic"])
    ref = res["strategies"]["reference"]
    assert res["cache_rules"]["runs_with_1h_ttl"] == 1
    assert ref["cost_real"] == pytest.approx(sum((r - c - w) + 0.1 * c + 2.0 * w for r, c, w, _ in usage), abs=1)
    # the simulation keeps the stable prefix for an hour: every call after the first reads it
    full = res["strategies"]["full"]
    assert full["cache_read_share"] > 0.3
    five = [dataclasses.replace(c, cache_write_1h=0) for c in traj.calls]
    traj.calls[:] = five
    res5 = replay_source([traj], 10**9, strategies=["full"], overhead="none", rules=RULES["anthropic"])
    assert res5["cache_rules"]["runs_with_1h_ttl"] == 0
    assert res5["strategies"]["full"]["cache_read_share"] == 0.0  # 16 minutes: every 5-minute entry expired
    assert res5["strategies"]["reference"]["cost_real"] < ref["cost_real"]


def test_each_call_is_priced_with_its_model_and_the_build_is_told_it() -> None:
    traj = tiny_trajectory(reported=False)
    traj.source = "claude-code"
    models = ["claude-opus-4-6", "claude-haiku-4-5", "claude-opus-4-6"]
    for call, model in zip(traj.calls, models, strict=True):
        call.model = model
    seen: list[str] = []
    engine = Engine.load(200_000)
    real_build = engine.build

    def build_and_note(inputs):  # type: ignore[no-untyped-def]
        seen.append((inputs.strategy, inputs.model, [e.kind for e in inputs.events].count("context_report")))
        return real_build(inputs)

    engine.build = build_and_note
    res = replay_source([traj], 200_000, strategies=["full", "ctxagent"], use_memory=False, overhead="none",
                        rules=RULES["openai"], engine=engine)
    assert res["models"] == {"claude-haiku-4-5": 1, "claude-opus-4-6": 2}
    ctx_builds = [(m, n) for s, m, n in seen if s == "ctxagent"]
    # the product's builder gets each call's model, and its log the model of every step before (context_report)
    assert ctx_builds == [("claude-opus-4-6", 0), ("claude-haiku-4-5", 1), ("claude-opus-4-6", 2)]
    # the Haiku call costs a fifth of an Opus call (1.0 against 5.0 per million input tokens)
    sizes = _full_requests(traj)
    full = res["strategies"]["full"]
    assert full["cost_uncached"] == pytest.approx(sizes[0] + 0.2 * sizes[1] + sizes[2], abs=2)


def test_ctxagents_summaries_are_billed_at_the_summary_models_price() -> None:
    traj = spec_trajectory()
    traj.source = "claude-code"
    for i in range(4, 16):  # long thoughts: no relief of tool output can make room for them, a compaction must
        thought = f"Step {i}: " + " ".join(f"reasoning_{i}_{j} about the reader" for j in range(120))
        traj.add_assistant(thought, [{"id": f"c{i}", "name": "bash", "arguments": {"command": f"cat m{i}.py"}}], None)
        traj.add_tool_result(f"c{i}", "bash", "ok")
    traj.add_assistant("Done.", [], None)
    res = replay_source([traj], 9_000, strategies=["ctxagent"], use_memory=False, overhead="none")
    c = res["strategies"]["ctxagent"]
    assert c["compactions"] >= 1 and c["summarization_tokens"]["calls"] == c["compactions"]
    s = c["summarization_tokens"]
    assert s["input"] > s["output"] > 0
    # Opus 4.6 → its summary sibling Haiku 5.5 in the registry: input 0.10 and output 0.50 against Opus's 5.0
    assert c["summarization_cost"] == pytest.approx(s["input"] * 0.02 + s["output"] * 0.1, abs=2)
    assert res["pricing"]["summary_model"] == "claude-haiku-5-5"
    # the summaries' input counts in the tokens billed
    assert c["tokens_sum"] == pytest.approx(c["tokens_mean"] * res["calls"] + s["input"], abs=2)
