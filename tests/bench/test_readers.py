"""Readers on small slices of the real trajectories (built in-test, never copied) and on hand-made quirks."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from ctxagent.tui.lab.bench.readers import SOURCES, default_data_dir, read_source, source_path
from ctxagent.tui.lab.bench.readers.claude import parse_claude_code
from ctxagent.tui.lab.bench.readers.openhands import parse_openhands
from ctxagent.tui.lab.bench.readers.swe import parse_mini_swe_agent, parse_swe_agent

DATA = default_data_dir()
needs_data = pytest.mark.skipif(not (DATA / "claude-code").is_dir(), reason=f"no shared bench data at {DATA}")

CC_LONG = "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def _cc_lines() -> list[str]:
    return (DATA / "claude-code" / CC_LONG).read_text(encoding="utf-8").splitlines()


@needs_data
def test_claude_code_slice_merges_split_responses_and_counts_usage_once() -> None:
    lines = _cc_lines()[:120]
    traj = parse_claude_code(lines, "slice")
    # ground truth from the raw records: one call per distinct message.id, usage of its first record
    usage_by_id: dict[str, int] = {}
    for raw in lines:
        rec = json.loads(raw)
        if rec.get("type") == "assistant" and not rec.get("isSidechain"):
            u = rec["message"]["usage"]
            usage_by_id.setdefault(rec["message"]["id"], u["input_tokens"] + u.get("cache_read_input_tokens", 0)
                                   + u.get("cache_creation_input_tokens", 0))
    assert [c.reported for c in traj.calls] == list(usage_by_id.values())
    assert traj.skipped["claude-code:split_record_merged"] > 0
    assert traj.skipped["claude-code:record:progress"] > 0
    # every call's position is an assistant event, and every tool result answers a known call
    assert all(traj.events[c.position].kind == "assistant" for c in traj.calls)
    call_ids = {tc["id"] for e in traj.events if e.kind == "assistant" for tc in e.data["tool_calls"]}
    results = [e for e in traj.events if e.kind == "tool_result"]
    assert results and all(r.data["call_id"] in call_ids for r in results)
    assert traj.events[0].kind == "user" and "spotter-dov" in traj.events[0].data["text"]
    first_call = traj.events[traj.calls[0].position]
    assert first_call.data["tool_calls"][0]["name"] == "Bash"


@needs_data
def test_claude_code_slice_with_the_real_compaction() -> None:
    lines = _cc_lines()
    traj = parse_claude_code(lines[700:800], "around-boundary")
    comps = [e for e in traj.events if e.kind == "source_compaction"]
    assert len(comps) == 1
    assert comps[0].data["summary"].startswith("This session is being continued")
    assert comps[0].data["pre_tokens"] == 170251
    # the summary is not also a user message
    assert not any(e.kind == "user" and e.data["text"].startswith("This session is being continued") for e in traj.events)
    assert traj.first_compaction_position is not None
    assert any(c.position > traj.first_compaction_position for c in traj.calls)


def test_claude_code_hand_made_quirks() -> None:
    def rec(**kw: object) -> str:
        return json.dumps(kw)

    lines = [
        rec(type="user", message={"role": "user", "content": "修复 src/登录.py 的 bug"}),
        "{not json",
        rec(type="progress", data={}),
        rec(type="assistant", timestamp="2026-02-10T21:11:59.500Z",
            message={"id": "m1", "model": "claude", "content": [{"type": "thinking", "thinking": "hm"}],
                     "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}}),
        rec(type="assistant", message={"id": "m1", "model": "claude", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "src/登录.py"}}],
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}}),
        rec(type="assistant", isSidechain=True, message={"id": "side", "content": [], "usage": {"input_tokens": 9}}),
        rec(type="user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "print('hi')"},
                                                                      {"type": "image", "source": {}}]},
            {"type": "tool_result", "tool_use_id": "nope", "content": "orphan"}]}),
        rec(type="assistant", message={"id": "syn", "model": "<synthetic>", "content": [{"type": "text", "text": "x"}],
                                       "usage": {"input_tokens": 0}}),
        rec(type="system", subtype="compact_boundary", compactMetadata={"preTokens": 1234}),
        rec(type="user", isCompactSummary=True, message={"role": "user", "content": "Summary: read src/登录.py"}),
        rec(type="assistant", message={"id": "m2", "model": "claude", "content": [{"type": "text", "text": "好的"}],
                                       "usage": {"input_tokens": 50}}),
    ]
    traj = parse_claude_code(lines)
    assert [c.reported for c in traj.calls] == [125, 50]
    assert traj.calls[0].cached == 100 and traj.calls[0].cache_write == 20  # the reference's cached cost uses both
    assert traj.calls[0].time == 1770757919.5 and traj.calls[1].time is None  # a record without a timestamp
    kinds = [e.kind for e in traj.events]
    assert kinds == ["user", "assistant", "tool_result", "tool_result", "source_compaction", "assistant"]
    assert traj.events[2].data["content"] == "print('hi')\n[image]"
    assert traj.events[4].data == {"summary": "Summary: read src/登录.py", "pre_tokens": 1234}
    sk = traj.skipped
    assert sk["claude-code:bad_json_line"] == 1
    assert sk["claude-code:sidechain"] == 1
    assert sk["claude-code:synthetic_message"] == 1
    assert sk["claude-code:orphan_tool_result"] == 1
    assert sk["claude-code:image_block"] == 1
    assert sk["claude-code:thinking_block"] == 1
    assert sk["claude-code:split_record_merged"] == 1


@needs_data
def test_mini_swe_agent_first_real_run() -> None:
    with gzip.open(DATA / "mini-swe-agent" / "trajectories.jsonl.gz", "rt", encoding="utf-8") as fh:
        run = json.loads(fh.readline())
    traj = parse_mini_swe_agent(run, run["instance_id"])
    assistants = [m for m in run["messages"] if m["role"] == "assistant"]
    assert len(traj.calls) == len(assistants)
    assert [c.reported for c in traj.calls] == [m["usage"]["prompt_tokens"] for m in assistants]
    assert traj.system.startswith("You are a helpful assistant")
    first = traj.events[traj.calls[0].position]
    assert first.data["tool_calls"] == [{"id": "call_1", "name": "bash", "arguments": {"command": "ls -R"}}]
    assert "```bash" not in first.data["text"] and first.data["text"].startswith("THOUGHT")
    assert traj.events[traj.calls[0].position + 1].kind == "tool_result"
    # the built-in probe: a changed file appears in some tool output before the end
    assert any("separable.py" in e.data["content"] for e in traj.events if e.kind == "tool_result")


def test_mini_swe_agent_format_errors_stay_user_messages() -> None:
    run = {"messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "THOUGHT: two\n```bash\nls\n```\n```bash\npwd\n```", "usage": {"prompt_tokens": 10}},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks."},
        {"role": "assistant", "content": "THOUGHT: one\n```bash\ncat a.py\n```", "usage": {"prompt_tokens": 30, "cached_tokens": 8}},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>cat: a.py: No such file</output>"},
    ]}
    traj = parse_mini_swe_agent(run)
    assert [e.kind for e in traj.events] == ["user", "assistant", "user", "assistant", "tool_result"]
    assert traj.skipped["mini-swe-agent:several_bash_blocks"] == 1
    assert traj.events[4].data["is_error"] is True
    assert traj.calls[1].cached == 8


@needs_data
def test_swe_agent_function_calling_and_plain_formats() -> None:
    root = DATA / "swe-agent" / "trajectories" / "demonstrations"
    fc = json.loads((root / "replay__marshmallow-code__marshmallow-1867__function_calling_replace__install-1"
                     / "marshmallow-code__marshmallow-1867.traj").read_text())
    traj = parse_swe_agent(fc)
    assert traj.calls and all(c.reported is None for c in traj.calls)
    first = traj.events[traj.calls[0].position]
    assert first.data["tool_calls"][0]["name"] == "create"
    assert first.data["tool_calls"][0]["arguments"] == {"filename": "reproduce.py"}
    res = traj.events[traj.calls[0].position + 1]
    assert res.kind == "tool_result" and res.data["call_id"] == first.data["tool_calls"][0]["id"]
    plain = json.loads((root / "ctf" / "crypto" / "eps.traj").read_text())
    t2 = parse_swe_agent(plain)
    a = t2.events[t2.calls[0].position]
    assert a.data["tool_calls"][0]["arguments"]["command"].startswith("file ~/ctf_files/*")
    assert t2.events[t2.calls[0].position + 1].kind == "tool_result"


@needs_data
def test_openhands_first_real_run() -> None:
    line = (DATA / "openhands" / "evaluation_benchmarks_multi_swe_bench_examples_output.jsonl").read_text().splitlines()[0]
    run = json.loads(line)
    traj = parse_openhands(run)
    assert len(traj.calls) == len(run["metrics"]["token_usages"])
    assert [c.reported for c in traj.calls] == [u["prompt_tokens"] for u in run["metrics"]["token_usages"]]
    assert traj.system.startswith("You are OpenHands agent")
    assert traj.skipped["openhands:recall"] == 2
    first = traj.events[traj.calls[0].position]
    assert first.data["tool_calls"][0]["arguments"]["command"].startswith("ls -l /workspace")


def test_openhands_one_response_with_two_actions_is_one_call() -> None:
    resp = {"id": "r1", "usage": {"prompt_tokens": 77}, "choices": [{"message": {"content": "look", "tool_calls": [
        {"id": "a", "function": {"name": "execute_bash", "arguments": "{\"command\": \"ls\"}"}},
        {"id": "b", "function": {"name": "str_replace_editor", "arguments": "{\"command\": \"view\", \"path\": \"/w/x.c\"}"}}]}}]}
    run = {"history": [
        {"source": "agent", "action": "system", "args": {"content": "sys"}},
        {"source": "user", "action": "message", "args": {"content": "fix it"}},
        {"source": "agent", "action": "run", "args": {"command": "ls"},
         "tool_call_metadata": {"tool_call_id": "a", "function_name": "execute_bash", "model_response": resp}},
        {"source": "agent", "action": "read", "args": {"path": "/w/x.c"},
         "tool_call_metadata": {"tool_call_id": "b", "function_name": "str_replace_editor", "model_response": resp}},
        {"source": "agent", "observation": "run", "content": "x.c",
         "tool_call_metadata": {"tool_call_id": "a", "function_name": "execute_bash", "model_response": resp}},
        {"source": "agent", "observation": "error", "content": "bad parameter"},
    ], "metrics": {"token_usages": [{"prompt_tokens": 77, "cache_read_tokens": 40, "cache_write_tokens": 7,
                                     "response_id": "r1"}, {"prompt_tokens": 99}]}}
    traj = parse_openhands(run)
    assert [c.reported for c in traj.calls] == [77]
    assert (traj.calls[0].cached, traj.calls[0].cache_write) == (40, 7)  # from metrics, matched by response id
    a = traj.events[traj.calls[0].position]
    assert [tc["id"] for tc in a.data["tool_calls"]] == ["a", "b"]
    assert a.data["tool_calls"][1]["arguments"]["path"] == "/w/x.c"
    assert traj.skipped["openhands:call_without_event"] == 1
    assert traj.skipped["openhands:observation_without_call"] == 1


@needs_data
def test_read_source_limit_env_and_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for source in SOURCES:
        res = read_source(source, DATA, limit=2)
        assert 1 <= len(res.trajectories) <= 2
        assert all(t.source == source for t in res.trajectories)
    monkeypatch.setenv("CTXAGENT_BENCH_DATA", str(DATA))
    assert source_path("openhands", None) == DATA / "openhands"
    with pytest.raises(FileNotFoundError):
        read_source("openhands", tmp_path / "nowhere")
    with pytest.raises(ValueError):
        read_source("aider", DATA)
    # a data path may also be one file of the source
    one = read_source("openhands", DATA / "openhands" / "evaluation_benchmarks_multi_swe_bench_examples_output.jsonl")
    assert len(one.trajectories) == 3


def test_claude_code_per_call_model_one_hour_writes_and_the_compaction_calls_usage(tmp_path: Path) -> None:
    def rec(**kw: object) -> str:
        return json.dumps(kw)

    usage = {"input_tokens": 3, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 500,
             "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 400}}
    lines = [rec(type="user", message={"role": "user", "content": "go"}),
             rec(type="assistant", message={"id": "m1", "model": "claude-opus-4-6", "content": [], "usage": usage}),
             rec(type="user", message={"role": "user", "content": "title?"}),
             rec(type="assistant", message={"id": "m2", "model": "claude-haiku-4-5", "content": [],
                                            "usage": {"input_tokens": 40}}),
             rec(type="system", subtype="compact_boundary", compactMetadata={"preTokens": 1503}),
             rec(type="user", isCompactSummary=True, message={"role": "user", "content": "Summary."}),
             rec(type="assistant", message={"id": "m3", "model": "claude-opus-4-6", "content": [], "usage": usage})]
    session = tmp_path / "s1.jsonl"
    session.write_text("\n".join(lines) + "\n")
    sub = tmp_path / "s1" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-acompact-abc.jsonl").write_text(rec(type="assistant", timestamp="2026-02-10T21:11:59Z", message={
        "id": "c1", "model": "claude-opus-4-6", "content": [], "usage": {
            "input_tokens": 3, "cache_read_input_tokens": 1400, "cache_creation_input_tokens": 97, "output_tokens": 8,
            "cache_creation": {"ephemeral_5m_input_tokens": 97, "ephemeral_1h_input_tokens": 0}}}) + "\n")
    traj = read_source("claude-code", tmp_path).trajectories[0]
    assert [c.model for c in traj.calls] == ["claude-opus-4-6", "claude-haiku-4-5", "claude-opus-4-6"]
    assert traj.calls[0].cache_write == 500 and traj.calls[0].cache_write_1h == 400
    assert traj.calls[1].cache_write_1h is None  # no split reported
    boundary = next(e for e in traj.events if e.kind == "source_compaction")
    assert boundary.data["usage"] == {"reported": 1500, "cached": 1400, "written": 97, "written_1h": 0,
                                      "model": "claude-opus-4-6", "time": 1770757919.0}


def _mini_file(path: Path, ids: list[str]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for iid in ids:
            fh.write(json.dumps({"instance_id": iid, "messages": [
                {"role": "system", "content": "sys"}, {"role": "user", "content": f"task {iid}"},
                {"role": "assistant", "content": "T\n```bash\nls\n```", "usage": {"prompt_tokens": 10}}]}) + "\n")


def test_limit_takes_a_stable_sample_across_repositories(tmp_path: Path) -> None:
    from ctxagent.tui.lab.bench.readers import repository_of

    ids = ([f"django__django-{n}" for n in range(11000, 11012)] + [f"astropy__astropy-{n}" for n in range(7000, 7004)]
           + [f"sympy__sympy-{n}" for n in range(13000, 13004)] + ["psf__requests-2317"])
    data = tmp_path / "mini-swe-agent"
    data.mkdir()
    _mini_file(data / "trajectories.jsonl.gz", ids)
    first_k = ids[:4]  # file order: django only
    sample = [t.run_id for t in read_source("mini-swe-agent", tmp_path, limit=4).trajectories]
    assert sample != first_k and len(sample) == 4
    assert {repository_of(r) for r in sample} == {"django/django", "astropy/astropy", "sympy/sympy", "psf/requests"}
    assert sample == [t.run_id for t in read_source("mini-swe-agent", tmp_path, limit=4).trajectories]  # stable
    assert sample == [i for i in ids if i in sample]  # in file order
    bigger = [t.run_id for t in read_source("mini-swe-agent", tmp_path, limit=9).trajectories]
    assert set(sample) <= set(bigger)  # a larger sample keeps the smaller one's runs
    # the same runs in another file order give the same sample
    _mini_file(data / "trajectories.jsonl.gz", list(reversed(ids)))
    assert sorted(t.run_id for t in read_source("mini-swe-agent", tmp_path, limit=4).trajectories) == sorted(sample)
    assert repository_of("trajectories/demo/replay__marshmallow-code__marshmallow-1867__default__t-0.20") == \
        "marshmallow-code/marshmallow"
