"""`ctxagent replay` end to end, as a user runs it: the bench's Claude Code sessions in the native layout,
a truncated transcript and one with a newer version's records beside them, HOME and TMPDIR the test's,
no network, and a look at everything on disk before and after."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    BENCH,
    LONG,
    SMALL,
    child_env,
    claude_folder_name,
    lay_out,
    needs_bench,
    newer_copy,
    run_replay,
    snapshot,
    torn_copy,
)

pytestmark = needs_bench


def reported_calls(path: Path, sidechain: bool) -> list[int]:
    """Each model call's prompt tokens, straight from the transcript: one per API response (`message.id`)."""
    out: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        msg = rec.get("message") if isinstance(rec, dict) and rec.get("type") == "assistant" else None
        if not isinstance(msg, dict) or msg.get("model") == "<synthetic>" or bool(rec.get("isSidechain")) != sidechain:
            continue
        u = msg.get("usage") if isinstance(msg.get("usage"), dict) else {}
        out.setdefault(str(msg.get("id")), sum(int(u.get(k) or 0) for k in
                                              ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")))
    return list(out.values())


@dataclass
class Ran:
    result: Any
    out: dict[str, Any]
    folder: Path
    before: dict[str, tuple[int, int]]
    after: dict[str, tuple[int, int]]
    written: set[str]
    tmp: Path


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    base = tmp_path_factory.mktemp("replay-cli")
    home, repo, tmp = base / "home", base / "work" / "my_repo", base / "tmp"
    for d in (home, repo, tmp):
        d.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "app.py").write_text("print('hi')\n", encoding="utf-8")
    folder = lay_out(home / ".claude" / "projects", repo)
    torn_copy(BENCH / "tool_heavy.jsonl", folder / "still-being-written.jsonl")
    newer_copy(BENCH / "short.jsonl", folder / "from-a-newer-version.jsonl")
    out, plot = repo / "replay.json", repo / "replay.svg"
    before = snapshot(home, repo, tmp)
    result = run_replay(["--jobs", "2", "--out", str(out), "--plot", str(plot)], repo,
                        child_env(home, tmp, base / "site"))
    after = snapshot(home, repo, tmp)
    assert result.returncode == 0, result.stderr[-4000:]
    return Ran(result, json.loads(out.read_text(encoding="utf-8")), folder, before, after, {str(out), str(plot)}, tmp)


def test_every_session_and_subagent_has_a_row(ran: Ran) -> None:
    sessions = ran.out["sessions"]
    expected = {f.stem for f in ran.folder.glob("*.jsonl")} | {f.stem for f in ran.folder.glob("*/subagents/agent-*.jsonl")
                                                              if not f.name.startswith("agent-acompact-")}
    assert {s["session"] for s in sessions} == expected
    table = ran.result.stdout.split("\n\nSummary")[0]
    for s in sessions:
        row = next(ln for ln in table.splitlines() if ln.lstrip("└ ").startswith(s["session"][:8]))
        assert row.startswith("└") == (s["parent"] is not None)


def test_subagents_are_linked_to_their_session(ran: Ran) -> None:
    subs = [s for s in ran.out["sessions"] if s["parent"] is not None]
    assert len(subs) == len(list(ran.folder.glob("*/subagents/agent-a[!c]*.jsonl"))) > 0
    for s in subs:
        assert Path(s["path"]).parent.parent.name == s["parent"]
        order = [x["session"] for x in ran.out["sessions"]]
        assert order.index(s["parent"]) < order.index(s["session"])  # listed under its session


def test_what_it_sent_is_the_usage_claude_code_reported(ran: Ran) -> None:
    for s in ran.out["sessions"]:
        path = Path(s["path"])
        if path.name == "from-a-newer-version.jsonl":  # short.jsonl's calls, and its newer record counted in strings
            assert set(reported_calls(BENCH / "short.jsonl", False)) | {1200} <= set(s["series"]["original"])
            continue
        reported = reported_calls(path, sidechain=s["parent"] is not None)
        assert s["calls"] == len(reported) and s["series"]["original"] == reported, s["session"]


def test_overflows_and_compactions_agree_with_the_curves(ran: Ran) -> None:
    window = ran.out["window"]
    for s in ran.out["sessions"]:
        ours = s["series"]["ctxagent"]
        assert len(ours) == s["calls"]
        assert s["strategies"]["ctxagent"]["overflows"] == sum(1 for t in ours if t > window)
        assert len(s["series"]["ctxagent_compactions"]) == s["strategies"]["ctxagent"]["compactions"]
    with_own = [s for s in ran.out["sessions"] if s["series"]["original_compactions"]]
    assert {Path(s["path"]).stem for s in with_own} == set(LONG)  # the two sessions that compacted themselves


def test_costs_and_retention_are_reported_per_session(ran: Ran) -> None:
    for s in ran.out["sessions"]:
        for side in (s["original"], s["strategies"]["ctxagent"]):
            assert side["cost_cached_usd"] is not None and side["cost_uncached_usd"] is not None
        assert s["original"]["cost_real_usd"] is not None  # Claude Code reports its cache usage
    long = [s for s in ran.out["sessions"] if Path(s["path"]).stem in LONG]
    for s in long:
        for side in (s["original"], s["strategies"]["ctxagent"]):
            assert side["requirement_retention"] is not None and side["decision_retention"] is not None


def test_bad_transcripts_are_skipped_counted_and_named(ran: Ran) -> None:
    by_name = {Path(s["path"]).name: s for s in ran.out["sessions"]}
    assert by_name["still-being-written.jsonl"]["skipped"]["claude-code:torn_last_line"] == 1
    newer = by_name["from-a-newer-version.jsonl"]["skipped"]
    assert newer["claude-code:record:ai-title"] == 1 and newer["claude-code:bad_json_line"] == 1
    line = next(ln for ln in ran.result.stdout.splitlines() if "skipped and counted" in ln)
    assert "torn last line" in line and "unknown entry type 'ai-title'" in line and "malformed" in line


def test_the_summary_fits_a_screen_and_says_what_it_assumed(ran: Ran) -> None:
    summary = ran.result.stdout.split("\n\nSummary", 1)[1].split("\n\n")[0]
    lines = summary.splitlines()
    assert len(lines) <= 24
    text = "\n".join(lines)
    assert "W = 200,000" in text and "Caveats:" in text and "baseline grep" in text and "baseline last2+names" in text
    assert "nothing was sent anywhere" in text
    assert str(ran.folder) in lines[0]


def test_nothing_is_written_but_out_and_plot(ran: Ran) -> None:
    changed = {p for p in set(ran.before) | set(ran.after) if ran.before.get(p) != ran.after.get(p)}
    assert changed == ran.written
    assert not any(ran.tmp.iterdir())  # the temporary working folders are gone too


def test_no_connection_was_attempted(ran: Ran) -> None:
    assert "network guard on" in ran.result.stderr  # the guard ran in the command's processes
    assert "NETWORK ATTEMPT" not in ran.result.stderr


def test_progress_goes_to_stderr_as_plain_lines(ran: Ran) -> None:
    err = ran.result.stderr
    assert "reading transcripts [" in err and "replay W=200,000 replay [" in err and "\r" not in err
    assert "reading transcripts" not in ran.result.stdout


def test_the_svg_draws_both_curves_for_each_session(ran: Ran) -> None:
    root = ET.parse(Path(next(p for p in ran.written if p.endswith(".svg")))).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    texts = " ".join(t.text or "" for t in root.iter(f"{ns}text"))
    drawn = [s for s in sorted(ran.out["sessions"], key=lambda s: -s["calls"])][:8]
    for s in drawn:
        assert s["session"][:16] in texts
    strokes = [p.get("stroke") for p in root.iter(f"{ns}polyline")]
    assert strokes.count("#3b6fb6") >= len([s for s in drawn if s["calls"] > 1])  # the original's curves (+ marks)


# -- smaller runs: the other ways in ----------------------------------------------------------------
@pytest.fixture
def user(tmp_path: Path) -> dict[str, Path]:
    paths = {"home": tmp_path / "home", "repo": tmp_path / "repo", "tmp": tmp_path / "tmp", "site": tmp_path / "site"}
    for k in ("home", "repo", "tmp"):
        paths[k].mkdir()
    return paths


def test_a_png_and_the_terminal_picture(user: dict[str, Path]) -> None:
    from PIL import Image

    lay_out(user["home"] / ".claude" / "projects", user["repo"], SMALL)
    png = user["repo"] / "p.png"
    r = run_replay(["--plot", str(png), "--picture"], user["repo"], child_env(user["home"], user["tmp"], user["site"]))
    assert r.returncode == 0, r.stderr[-3000:]
    with Image.open(png) as img:
        assert img.format == "PNG" and img.width >= 1000 and img.height > 300
    assert "context tokens per call" in r.stdout and "original: what Claude Code sent" in r.stdout
    assert "┌" in r.stdout and "\x1b[" not in r.stdout  # drawn, without colours when stdout is not a terminal


def test_claude_config_dir_moves_the_projects_folder(user: dict[str, Path]) -> None:
    lay_out(user["tmp"].parent / "cfg" / "projects", user["repo"], ("short",))
    env = child_env(user["home"], user["tmp"], user["site"], CLAUDE_CONFIG_DIR=str(user["tmp"].parent / "cfg"))
    r = run_replay(["--out", str(user["tmp"].parent / "o.json")], user["repo"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert [s["session"] for s in json.loads((user["tmp"].parent / "o.json").read_text())["sessions"]] == ["short"]


def test_all_takes_every_project_and_since_filters(user: dict[str, Path]) -> None:
    projects = user["home"] / ".claude" / "projects"
    lay_out(projects, Path("/somewhere/else"), ("short",))
    lay_out(projects, Path("/another/project"), ("tool_heavy",))
    env = child_env(user["home"], user["tmp"], user["site"])
    r = run_replay(["--all", "--out", str(user["tmp"].parent / "o.json")], user["repo"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(s["session"] for s in json.loads((user["tmp"].parent / "o.json").read_text())["sessions"]) == \
        ["short", "tool_heavy"]
    later = run_replay(["--all", "--since", "2030-01-01"], user["repo"], env)
    assert later.returncode == 1 and "none active since 2030-01-01" in later.stderr


def test_no_sessions_says_where_it_looked(user: dict[str, Path]) -> None:
    r = run_replay([], user["repo"], child_env(user["home"], user["tmp"], user["site"]))
    assert r.returncode == 1
    assert "no Claude Code sessions" in r.stderr
    assert str(user["home"] / ".claude" / "projects" / claude_folder_name(user["repo"])) in r.stderr


def test_a_plot_file_of_another_kind_is_refused_before_any_work(user: dict[str, Path]) -> None:
    r = run_replay(["--plot", "picture.gif"], user["repo"], child_env(user["home"], user["tmp"], user["site"]))
    assert r.returncode == 2 and ".svg or .png" in r.stderr
