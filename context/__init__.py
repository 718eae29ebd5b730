"""The context engine: tokens, budget, the session log and its view, the builder, spill / prune /
compact, the monitor, memory.

Runs without a model, a terminal or a network; imports neither `ctxagent.agent` nor `ctxagent.tui`.
This is its face: a library user builds a request from a log with `build(BuildInputs(...))` and
reads the `ContextReport` — or, step by step, `build_step(log, StepSetup(...))` builds the next
request and records it in the log (planned compactions, a `context_report`), and `rebuild_step`
rebuilds any recorded step from the log alone. Each name is imported on first use
(context/floor/lazy.py), so importing the face is cheap.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"  # ctxagent's (pyproject.toml's version); the agent face re-exports it

_EXPORTS = {
    # the build: inputs, result, and the request's fingerprint
    "BuildInputs": "ctxagent.context.builder.inputs",
    "BuildResult": "ctxagent.context.builder.inputs",
    "WarmProvider": "ctxagent.context.builder.inputs",
    "build": "ctxagent.context.builder.dispatch",
    "request_sha256": "ctxagent.context.builder.dispatch",
    # one step: build the next request, record it in the log, rebuild it later
    "RecordedStep": "ctxagent.context.builder.step",
    "StepSetup": "ctxagent.context.builder.step",
    "build_next": "ctxagent.context.builder.step",
    "build_step": "ctxagent.context.builder.step",
    "RebuiltStep": "ctxagent.context.builder.rebuild",
    "rebuild_step": "ctxagent.context.builder.rebuild",
    "record_system_prompt": "ctxagent.context.builder.step",
    # the price of a relief: its prompt-cache effect, logged in the step's report
    "ReliefPrice": "ctxagent.context.builder.relief_price",
    "relief_label": "ctxagent.context.builder.relief_price",
    "STRATEGIES": "ctxagent.context.strategies",
    # the session log and its view
    "Event": "ctxagent.context.history",
    "SessionLog": "ctxagent.context.history",
    "Summary": "ctxagent.context.history",
    "view": "ctxagent.context.history",
    # what the log holds: one payload type per event kind (SessionLog.append takes them)
    "AssistantData": "ctxagent.context.events",
    "BuildParams": "ctxagent.context.events",
    "CodeRewindData": "ctxagent.context.events",
    "CompactionData": "ctxagent.context.events",
    "ContextReportData": "ctxagent.context.events",
    "Payload": "ctxagent.context.events",
    "SpillRef": "ctxagent.context.events",
    "SystemPromptData": "ctxagent.context.events",
    "ToolResultData": "ctxagent.context.events",
    "UserData": "ctxagent.context.events",
    # budget, counting, calibration
    "Budget": "ctxagent.context.budget",
    "TokenCounter": "ctxagent.context.tokens",
    "CachedCounter": "ctxagent.context.tokens",
    "get_counter": "ctxagent.context.tokens",
    "count_request": "ctxagent.context.tokens",
    "Calibrator": "ctxagent.context.calibrator",
    # the request the providers translate
    "Message": "ctxagent.context.request",
    "Request": "ctxagent.context.request",
    "ToolCall": "ctxagent.context.request",
    "Usage": "ctxagent.context.request",
    "ToolSpec": "ctxagent.context.request",
    # the report and its breakpoints
    "ContextReport": "ctxagent.context.report",
    "DEFAULT_THRESHOLDS": "ctxagent.context.monitor",
    "advice_for": "ctxagent.context.monitor",
    "usage_text": "ctxagent.context.monitor",
    # spill store
    "SpillStore": "ctxagent.context.spill",
    # whether a test run passed (the panel's mark, memory's tag)
    "RunOutcome": "ctxagent.context.test_runs",
    "run_outcome": "ctxagent.context.test_runs",
    # memory records, as views show them
    "Record": "ctxagent.context.memory.record",
    "RETIRED": "ctxagent.context.memory.record",
    # the one exception tree (context/errors.py documents it)
    "CtxagentError": "ctxagent.context.errors",
    "ConfigError": "ctxagent.context.errors",
    "ContextOverflowError": "ctxagent.context.errors",
    "HistoryError": "ctxagent.context.errors",
    "ProviderError": "ctxagent.context.errors",
    "ToolError": "ctxagent.context.errors",
    # text that reaches a terminal
    "echo": "ctxagent.context.floor.display",
    "for_display": "ctxagent.context.floor.display",
    "plural": "ctxagent.context.floor.display",
    "show_controls": "ctxagent.context.floor.display",
    "strip_controls": "ctxagent.context.floor.display",
}
__all__ = ["__version__", *sorted(_EXPORTS)]

if TYPE_CHECKING:
    from ctxagent.context.budget import (
        Budget as Budget,
    )
    from ctxagent.context.builder.dispatch import (
        build as build,
        request_sha256 as request_sha256,
    )
    from ctxagent.context.builder.inputs import (
        BuildInputs as BuildInputs,
        BuildResult as BuildResult,
        WarmProvider as WarmProvider,
    )
    from ctxagent.context.builder.rebuild import (
        RebuiltStep as RebuiltStep,
        rebuild_step as rebuild_step,
    )
    from ctxagent.context.builder.relief_price import (
        ReliefPrice as ReliefPrice,
        relief_label as relief_label,
    )
    from ctxagent.context.builder.step import (
        RecordedStep as RecordedStep,
        StepSetup as StepSetup,
        build_next as build_next,
        build_step as build_step,
        record_system_prompt as record_system_prompt,
    )
    from ctxagent.context.calibrator import (
        Calibrator as Calibrator,
    )
    from ctxagent.context.errors import (
        ConfigError as ConfigError,
        ContextOverflowError as ContextOverflowError,
        CtxagentError as CtxagentError,
        HistoryError as HistoryError,
        ProviderError as ProviderError,
        ToolError as ToolError,
    )
    from ctxagent.context.events import (
        AssistantData as AssistantData,
        BuildParams as BuildParams,
        CodeRewindData as CodeRewindData,
        CompactionData as CompactionData,
        ContextReportData as ContextReportData,
        Payload as Payload,
        SpillRef as SpillRef,
        SystemPromptData as SystemPromptData,
        ToolResultData as ToolResultData,
        UserData as UserData,
    )
    from ctxagent.context.floor.display import (
        echo as echo,
        for_display as for_display,
        plural as plural,
        show_controls as show_controls,
        strip_controls as strip_controls,
    )
    from ctxagent.context.history import (
        Event as Event,
        SessionLog as SessionLog,
        Summary as Summary,
        view as view,
    )
    from ctxagent.context.memory.record import (
        RETIRED as RETIRED,
        Record as Record,
    )
    from ctxagent.context.monitor import (
        DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS,
        advice_for as advice_for,
        usage_text as usage_text,
    )
    from ctxagent.context.report import (
        ContextReport as ContextReport,
    )
    from ctxagent.context.request import (
        Message as Message,
        Request as Request,
        ToolCall as ToolCall,
        ToolSpec as ToolSpec,
        Usage as Usage,
    )
    from ctxagent.context.spill import (
        SpillStore as SpillStore,
    )
    from ctxagent.context.strategies import (
        STRATEGIES as STRATEGIES,
    )
    from ctxagent.context.test_runs import (
        RunOutcome as RunOutcome,
        run_outcome as run_outcome,
    )
    from ctxagent.context.tokens import (
        CachedCounter as CachedCounter,
        TokenCounter as TokenCounter,
        count_request as count_request,
        get_counter as get_counter,
    )
else:
    from ctxagent.context.floor.lazy import lazy_face

    __getattr__, __dir__ = lazy_face(globals(), _EXPORTS)
