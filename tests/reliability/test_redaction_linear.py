"""Redaction is linear in the text, on the inputs made to be slow (issue 19).

`token=` ×13,333 (80k characters) took 7.8 s, and a 240k-character reply made a run take 168 s: a
pass that scans from each candidate to the end of the text is quadratic. This asserts no speed —
only how the cost grows: eight times the text may cost at most about eight times the time (a
generous 24×; a quadratic pass costs 64×). Both run in a child process with a time limit, so a
quadratic pass fails in minutes instead of running for hours.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ctxagent.context.floor.sanitize import REDACTED, Sanitizer
from ctxagent.tui.lab.bench.perf import ADVERSARIAL

SMALL, GROWTH = 100_000, 8
SLACK = 24  # allowed time ratio for GROWTH× the text (linear: 8, quadratic: 64)
FLOOR = 0.005  # seconds: below this a measurement is noise
BUDGET = 180  # seconds for the child: linear takes a few; quadratic (7.8 s at 80k) would take hours

# Both sizes are measured in one child, interleaved, in CPU time (a busy machine makes a long run
# wait for a core more often: wall time would grow faster than the work); each result is printed as
# it comes, so what did not finish in time is named.
_CHILD = """
import json, sys, time
from ctxagent.tui.lab.bench.perf import ADVERSARIAL
from ctxagent.context.floor.sanitize import Sanitizer
sanitize = Sanitizer(["sk-ant-api03-configured-key-0123456789"]).text
small, big = int(sys.argv[1]), int(sys.argv[2])
for name, make in ADVERSARIAL.items():
    texts = {"small": make(small), "big": make(big)}
    best = {"small": 1e9, "big": 1e9}
    for _ in range(3):
        for size, text in texts.items():
            t0 = time.process_time(); sanitize(text); best[size] = min(best[size], time.process_time() - t0)
    print(json.dumps({name: best}), flush=True)
"""


def test_every_adversarial_input_costs_linear_time() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(SMALL), str(SMALL * GROWTH)],
                            stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=BUDGET)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    times: dict[str, dict[str, float]] = {}
    for line in out.splitlines():
        times.update(json.loads(line))
    unfinished = [name for name in ADVERSARIAL if name not in times]
    assert not unfinished, f"redaction of {SMALL * GROWTH:,} characters did not finish in {BUDGET} s: {unfinished}"
    ratios = {name: t["big"] / max(t["small"], FLOOR) for name, t in times.items()}
    slow = {name: round(r, 1) for name, r in ratios.items() if r > SLACK}
    assert not slow, f"{GROWTH}× the text cost more than {SLACK}× the time: {slow} ({times})"


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_inputs_are_still_redacted_right(name: str) -> None:
    """Speed by skipping work would be wrong: each input with a real secret after it is redacted."""
    text = ADVERSARIAL[name](5_000) + "\nDB_PASSWORD=hunter2xyz 数据库\nsk-ant-api03-" + "Zq9x" * 12
    out = Sanitizer()(text)
    assert "hunter2xyz" not in out and "Zq9x" * 12 not in out and REDACTED in out and "数据库" in out


def test_the_issue_case_through_the_session_log(tmp_path) -> None:
    """`token=` ×13,333 and a 240k-character reply through the real log: redacted, and the long run
    of assignments is one redacted value, not 13,333."""
    from ctxagent.context.events import AssistantData
    from ctxagent.context.history import SessionLog

    log = SessionLog.create(tmp_path, "s", sanitize=Sanitizer())
    ev = log.append(AssistantData(text="token=" * 13_333, step=1, turn=1, stop_reason="end_turn"))
    reply = ("Here is the config: api_token = 'abcd1234efgh5678' and more prose. " * 3_500)[:240_000]
    ev2 = log.append(AssistantData(text=reply, step=2, turn=1, stop_reason="end_turn"))
    log.close()
    assert ev.assistant.text.startswith("token=") and ev.assistant.text.count(REDACTED) <= 1
    assert "abcd1234efgh5678" not in ev2.assistant.text and ev2.assistant.text.count(REDACTED) == reply.count("abcd1234efgh5678")


# Every rule of context/data/secret_rules.toml alone, on what makes its own pattern work hardest: its
# keywords repeated (bare, with `=`, with a name after), its example repeated, cut short and halved —
# a rule that rescans from each candidate (gitleaks' nuget-config-password did: `(.{8,})\"`) grows 64×.
RULE_SMALL = 8_000
_RULE_CHILD = """
import json, sys, time
from ctxagent.context.floor.secret_rules import rules
small, growth = int(sys.argv[1]), int(sys.argv[2])
def seeds(rule):
    out = {}
    for k in rule.keywords[:3]:
        out["kw " + k], out["kw= " + k], out["kw_ " + k] = k, k + "=", k + "_a "
    out["example"], out["example cut"], out["example half"] = rule.example, rule.example[:-2], rule.example[:len(rule.example) // 2]
    return {name: seed for name, seed in out.items() if seed}
for rule in rules():
    worst = None
    for name, seed in seeds(rule).items():
        t = []
        for n in (small, small * growth):
            text = (seed * (n // len(seed) + 1))[:n]
            t0 = time.process_time(); rule.matches(text); t.append(time.process_time() - t0)
        if worst is None or t[1] > worst[2]:
            worst = (name, t[0], t[1])
    print(json.dumps({rule.id: worst}), flush=True)
"""


def test_every_secret_rule_alone_costs_linear_time() -> None:
    from ctxagent.context.floor.secret_rules import rules

    proc = subprocess.Popen([sys.executable, "-W", "ignore", "-c", _RULE_CHILD, str(RULE_SMALL), str(GROWTH)],
                            stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=BUDGET)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    worst: dict[str, list] = {}
    for line in out.splitlines():
        worst.update(json.loads(line))
    unfinished = [r.id for r in rules() if r.id not in worst]
    assert not unfinished, f"these rules did not finish in {BUDGET} s: {unfinished[:5]}"
    slow = {rid: (name, round(big / max(small, FLOOR), 1)) for rid, (name, small, big) in worst.items()
            if big / max(small, FLOOR) > SLACK}
    assert not slow, f"{GROWTH}× the text cost more than {SLACK}× the time: {slow}"
