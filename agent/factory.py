"""Assemble an Agent from a session's config: provider, tools, engine parts, memory, checkpoints."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ctxagent.agent.config import Config
from ctxagent.agent.instructions.loading import (  # the names other modules take from here too
    BASE_PROMPT as BASE_PROMPT,
    MAX_INSTRUCTIONS_CHARS as MAX_INSTRUCTIONS_CHARS,
    instructions_file as instructions_file,
    logged_nested,
    system_prompt as system_prompt,
)
from ctxagent.agent.loop import Agent, AgentParts, Approver
from ctxagent.agent.parts import deny_mutations
from ctxagent.agent.providers import catalogue, specs
from ctxagent.agent.providers.protocol import Provider, TextDelta
from ctxagent.agent.providers.registry import (
    ModelInfo,
    cheaper_sibling,
    lifecycle_problem,
    make_provider,
    model_info,
    parse_model_name,
    takes_images,
)
from ctxagent.agent.providers.setup_text import no_model_message
from ctxagent.agent.session import Session
from ctxagent.agent.subagents.child import ParentSide
from ctxagent.agent.subagents.tool import make_task_tool
from ctxagent.agent.updates import AgentEvent, Notice
from ctxagent.context.budget import Budget, default_max_output
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.errors import ConfigError, CtxagentError
from ctxagent.context.floor.state_paths import spill_dir, user_state_dir
from ctxagent.context.request import Message, Request
from ctxagent.context.server_edits import SERVER_STRATEGIES
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tools.contract import Tool, ToolRegistry
from ctxagent.tools.sandbox import SandboxPolicy

if TYPE_CHECKING:
    from ctxagent.agent.checkpoints.store import Checkpoints
    from ctxagent.context.memory import MemoryStore
    from ctxagent.context.memory.recall import MemoryRecall


def resolve_model(config: Config) -> tuple[str, ModelInfo]:
    """`provider:model` and what is known of it: the registry, overridden by the provider's cached
    catalogue. A retired model is refused (ConfigError naming the replacement); a deprecated one is
    returned, and `lifecycle_problem(info, label)` says what to warn."""
    name = config.model or specs.default_model(config)
    if not name:
        raise ConfigError(no_model_message())
    provider, model = parse_model_name(name)
    label = f"{provider}:{model}"
    spec = specs.get(provider)
    listed = catalogue.load(provider, specs.key_url(spec, config)).models if spec.list_models else {}
    info = model_info(provider, model, default_window=config.default_window, catalogue=listed)
    problem = lifecycle_problem(info, label)
    if problem is not None and problem[0] == "retired":
        raise ConfigError(problem[1])
    return label, info


def provider_for(config: Config, label: str, max_tokens: int) -> Provider:
    """The provider for `label` ("provider:model", or a name parse_model_name reads) under `config`: its
    key, to the URL the rule gives that provider (specs.credentials_for) — the session's model, a
    sub-agent's, a summary's and a warm-up's alike."""
    return make_provider(label, specs.credentials_for(config, parse_model_name(label)[0]), max_tokens=max_tokens)


def check_strategy(strategy: str, label: str) -> None:
    """A server-side strategy needs a provider whose server does it (ConfigError otherwise)."""
    spec = specs.get(parse_model_name(label)[0])
    if strategy in SERVER_STRATEGIES and not spec.server_edits:
        servers = [s for s in specs.providers() if s.server_edits]
        titles = " or ".join(f"the {s.title} API's" for s in servers)
        names = " or ".join(f"{s.name}:" for s in servers)
        note = f" {spec.no_server_edits_note}" if spec.no_server_edits_note else ""
        raise ConfigError(f"strategy {strategy} is {titles} own context management and needs an {names} model "
                          f"(this session uses {label}).{note}")


def summarizer_for(config: Config, label: str) -> Callable[[str], str] | None:
    """A one-shot model call for compaction, or None for the extractive (model-free) summary."""
    if config.summary_model == "none":
        return None
    provider_name, model = parse_model_name(label)
    if not specs.get(provider_name).summary_sibling and not config.summary_model:
        return None  # no cheaper sibling to ask (a scripted session's script holds only the main model's turns)
    target = config.summary_model or f"{provider_name}:{cheaper_sibling(provider_name, model)}"
    try:
        provider = provider_for(config, target, 2048)
    except ConfigError:
        return None

    def summarize(prompt: str) -> str:
        req = Request(system="You write faithful, structured summaries of coding sessions.", messages=[Message("user", prompt)], tools=[], max_tokens=2048)
        return "".join(ev.text for ev in provider.stream(req) if isinstance(ev, TextDelta))

    return summarize


def _memory_parts(session: Session) -> tuple[MemoryStore | None, MemoryRecall | None, str]:
    """(store, recall, problem): with memory off, or a database that cannot be opened (garbage,
    read-only, disk full), the agent runs without memory and `problem` says why."""
    if not session.config.memory:
        return None, None, ""
    from ctxagent.context.memory import MemoryStore
    from ctxagent.context.memory.recall import MemoryRecall

    store = user = None
    try:
        store = MemoryStore.open_project(session.root, synonyms=session.config.synonyms,
                                         degrade_after_turns=session.config.degrade_after_turns)
        user = MemoryStore.open_user()
    except CtxagentError as exc:
        if store is not None:
            store.close()
        return None, None, f"running without memory: {exc} (set memory = false in the config to silence this)"
    return store, MemoryRecall(store, session.id, top_k=session.config.recall_k, user_store=user), ""


def _checkpoints(session: Session) -> Checkpoints:
    from ctxagent.agent.checkpoints.store import Checkpoints

    return Checkpoints(session.root, session.state_dir)


# The tools that read or write the memory database: not registered when memory is off.
STORE_TOOLS = frozenset({"search_memory", "store_memory"})


def default_registry(*, memory: bool = True) -> ToolRegistry:
    from ctxagent.tools.budget_tools import budget_tools
    from ctxagent.tools.history_tool import make_read_event_tool
    from ctxagent.tools.memory_tools import memory_tools
    from ctxagent.tools.spill_tool import make_read_spill_tool

    tools = [t for t in memory_tools() if memory or t.name not in STORE_TOOLS]
    return make_registry(extra=[make_read_spill_tool(), make_read_event_tool(), *tools, *budget_tools()])


def subagent_model(config: Config, label: str) -> str:
    """The model every sub-agent runs on: `subagent_model` ("cheaper": the session model's cheaper
    sibling), else the session's `label`. The user's config says it; a `task` call never does."""
    if config.subagent_model == "cheaper":
        provider_name, model = parse_model_name(label)
        return f"{provider_name}:{cheaper_sibling(provider_name, model)}"
    return config.subagent_model or label


def task_tool(session: Session, parts: AgentParts, on_event: Callable[[AgentEvent], None] | None,
              approver: Approver | None, max_output: int) -> Tool:
    """The `task` tool of this session: its sub-agents reach the parent's parts, front end and approver."""
    side = ParentSide(session=session, parts=parts, on_event=on_event or (lambda _ev: None),
                      approver=approver or deny_mutations,
                      make_provider=lambda label: provider_for(session.config, label, max_output),
                      default_model=lambda: subagent_model(session.config, parts.model_label))
    return make_task_tool(side)


def calibration_path(label: str) -> Path:
    """Where the agent for `label` ("provider:model") keeps its token-count calibration (user-level)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)
    return user_state_dir() / "calibration" / f"{safe}.json"


def create_agent(
    session: Session,
    *,
    on_event: Callable[[AgentEvent], None] | None = None,
    approver: Approver | None = None,
    registry: ToolRegistry | None = None,
) -> Agent:
    config = session.config
    label, info = resolve_model(config)
    problem = lifecycle_problem(info, label)
    if problem is not None and on_event is not None:
        on_event(Notice(problem[1], "warning"))  # deprecated: still served, but say so at the start
    check_strategy(config.strategy, label)
    window = config.window or info.window
    max_output = config.max_output_tokens or default_max_output(window, info.max_output)
    provider = provider_for(config, label, max_output)
    budget = Budget.from_profile(config.budget_profile, window, max_output)
    if config.budget:
        budget = Budget(window, fractions={**budget.fractions, **config.budget}, max_output=max_output, profile=config.budget_profile)
    counter = CachedCounter(get_counter(info.tokenizer))
    calibrator = Calibrator(label, path=calibration_path(label))
    memory, warm, memory_problem = _memory_parts(session)
    told: list[str] = []  # an instruction file the agent wrote: said at the start (system_prompt)
    system = system_prompt(session.root, memory=memory is not None, log=session.log, notices=told,
                           nested=logged_nested(session.log), user=True)  # a resume keeps the folders' files
    tools = registry or default_registry(memory=memory is not None)
    policy = SandboxPolicy.from_config(config)
    parts = AgentParts(
        provider=provider,
        registry=tools,
        counter=counter,
        budget=budget,
        calibrator=calibrator,
        spill=SpillStore(spill_dir(session.root)),
        system=system,
        model_label=label,
        tokenizer=info.tokenizer,
        memory=memory,
        warm=warm,
        summarize=summarizer_for(config, label),
        checkpoints=_checkpoints(session),
        tool_config={"test_command": config.test_command, "shell_timeout": config.shell_timeout,
                     "sandbox": policy},  # every command the tools run (and every local MCP server)
        images=takes_images(*parse_model_name(label), info),  # the provider's catalogue may say
    )
    if registry is None:  # a caller's own registry gets the task tool only if it adds it
        parts.registry.add(task_tool(session, parts, on_event, approver, max_output))
    if config.mcp_servers:  # started in the background: the first prompt never waits for them
        from ctxagent.agent.mcp.runtime import start_mcp

        # after every built-in (the task tool included): a resumed session's MCP tools come back at
        # once, after the same built-ins a new session sent them after (the cached prefix stays)
        parts.mcp = start_mcp(config.mcp_servers, session.root, policy, tools, counter=counter, window=window,
                              share=config.mcp_defer_share, log=session.log, on_event=on_event)
    agent = Agent(session, parts, on_event=on_event, approver=approver)
    if memory_problem and on_event is not None:
        on_event(Notice(memory_problem, "warning"))
    if on_event is not None:
        for text in told:
            on_event(Notice(text, "warning"))
    return agent


def warm_sdk(config: Config, before: Callable[[str], None] | None = None) -> str:
    """Import the SDK that `config`'s model speaks, now (seconds for `anthropic`: call it on a worker
    thread while the user types; the app does, tui/app/agent_start.py). `before(title)` is called first
    when there is an SDK to import. Returns the provider's title, or "" when there is nothing to import
    or the config names no usable model (building the agent says why)."""
    try:
        label, _ = resolve_model(config)
        provider = provider_for(config, label, 1024)
    except CtxagentError:
        return ""
    warm = getattr(provider, "warm", None)
    if warm is None:
        return ""
    title = specs.get(parse_model_name(label)[0]).title
    if before is not None:
        before(title)
    warm()
    return title
