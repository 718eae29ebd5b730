"""`ctxagent acp`: ctxagent as an Agent Client Protocol agent (the `agent-client-protocol` SDK).

`AcpServer` implements the SDK's `Agent` interface. A session is a ctxagent session — the same
log, root rules, config, tools and permissions as the app and `ctxagent -p` — and its turns run on a
worker thread (`Agent.run_turn`), streaming back through tui/acp/stream.py.

- initialize: protocol version 1; `loadSession`; prompts of text, images, resource links and
  embedded context (a file of the repository is attached as `@path`, an image as an attachment:
  tui/acp/prompt.py). No audio: the providers' requests carry none, so advertising it would drop
  it silently.
- session/new: `cwd` → the repository root by ctxagent's rule (`find_repo_root`), the config
  (`load_config`, the repository's settings only when trusted), a new session log. A `cwd` that can
  never be a root (the home folder, `/`, /tmp: context/floor/roots.py) or whose repository moves its
  work tree is a JSON-RPC error (invalid params) whose message says why and how to go on; so is
  session/load's.
- session/load: resume a ctxagent session by id and replay its visible history (tui/acp/replay.py)
  before answering, as the protocol asks.
- session/prompt: a turn, or one of the slash commands (tui/acp/commands.py), or `!command`.
  Its stop reason: end_turn, max_tokens (the reply was cut), max_turn_requests (the step limit),
  cancelled; a provider error is a JSON-RPC error with the message the log holds.
- session/cancel: the running turn's cancel event — the loop's own cancel path, which stops between
  steps and before each tool, answers a pending permission question with a refusal, and leaves the
  log consistent.
- When the client goes away mid-turn, every running turn is cancelled and finished (its log
  synced and closed) before the process exits.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)
from ctxagent.agent.providers.pricing import session_cost
from ctxagent.context.floor.display import echo
from ctxagent.tui.acp.bridge import AcpApprover, Bridge, ClientFiles
from ctxagent.tui.acp.commands import available_commands_update, parse_command
from ctxagent.tui.acp.prompt import prompt_content
from ctxagent.tui.acp.replay import history_updates
from ctxagent.tui.acp.stream import SessionStream

if TYPE_CHECKING:
    from acp.interfaces import Client
    from acp.schema import ClientCapabilities, StopReason
    from ctxagent.agent.loop import Agent
    from ctxagent.agent.session import Session

DEFAULT_PERMISSION_SECONDS = 300.0
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")  # ctxagent's ids: 20260102-030405-abcdef
STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn", "max_tokens": "max_tokens", "response_cap": "max_tokens",
    "max_steps": "max_turn_requests", "cancelled": "cancelled",
}


@dataclass
class AcpSession:
    session: Session
    agent: Agent
    stream: SessionStream
    files: ClientFiles | None = None
    cancel: threading.Event | None = None  # the running turn's
    busy: bool = False
    ready: asyncio.Event | None = None  # set once what waited for the session's id went out


def _failure(exc: BaseException) -> RequestError:
    return RequestError(-32603, f"ctxagent: {exc}", {"type": type(exc).__name__})


class AcpServer:
    """The ACP `Agent` (see the module's note)."""

    def __init__(self, args: argparse.Namespace, permission_timeout: float = DEFAULT_PERMISSION_SECONDS):
        self.args = args
        self.permission_timeout = permission_timeout
        self.sessions: dict[str, AcpSession] = {}
        self.client: Client | None = None
        self._bridge: Bridge | None = None
        self.capabilities: ClientCapabilities | None = None
        self.executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ctxagent-acp")
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the connection ---------------------------------------------------------------------------
    def on_connect(self, conn: Client) -> None:
        self.client = conn

    @property
    def bridge(self) -> Bridge:
        if self._bridge is None:
            if self.client is None:
                raise RequestError.internal_error({"details": "no client connection"})
            self._bridge = Bridge(asyncio.get_running_loop(), self.client)
        return self._bridge

    async def _in_worker(self, fn: Any, *args: Any) -> Any:
        self.bridge  # noqa: B018 - bound on the loop's thread: a worker cannot find the loop itself
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    # -- the protocol -----------------------------------------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        from ctxagent.agent import __version__

        self.capabilities = client_capabilities
        self.bridge  # noqa: B018 - bound to this loop now, before any worker thread needs it
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
            ),
            agent_info=Implementation(name="ctxagent", title="ctxagent", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # no auth methods: the provider's key comes from the environment or the config

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        held = await self._in_worker(self._open, cwd, None)
        _say_mcp_ignored(held, mcp_servers)
        self._after_response(held)
        return NewSessionResponse(session_id=held.session.id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any) -> LoadSessionResponse:
        if not SESSION_ID.match(session_id or ""):
            raise RequestError.invalid_params({"sessionId": f"not a ctxagent session id: {session_id!r}"})
        if session_id in self.sessions:
            raise RequestError.invalid_params({"sessionId": f"session {session_id} is already open on this connection"})
        held = await self._in_worker(self._open, cwd, session_id)
        _say_mcp_ignored(held, mcp_servers)
        if held.session.id != session_id:  # an id prefix resolved to another session: not what was asked
            self._forget(held)
            raise RequestError.invalid_params({"sessionId": f"no session {session_id!r} (did you mean {held.session.id}?)"})
        for update in history_updates(held.session.log.events, held.session.root):
            await self._notify(held.session.id, update)
        self._after_response(held)
        return LoadSessionResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        held = self._session(session_id)
        if held.ready is not None:
            await held.ready.wait()  # the session's first updates go out before any of its turn's
        if held.busy:
            raise RequestError.invalid_request({"details": "a turn is already running in this session; cancel it first"})
        text, images = prompt_content(held.session.root, prompt)
        if not text.strip() and images:
            text = "(an image)"
        if not text.strip():
            raise RequestError.invalid_params({"prompt": "the prompt has no text"})
        held.busy, held.cancel = True, threading.Event()
        try:
            command = parse_command(text)
            if command is not None:
                await self._in_worker(self._run_command, held, command[0], command[1])
                return PromptResponse(stop_reason="end_turn")
            stripped = text.strip()
            if stripped.startswith("!") and len(stripped) > 1:
                done = await self._in_worker(held.agent.run_command, stripped[1:].strip(), held.cancel)
            else:
                done = await self._in_worker(held.agent.run_turn, text, held.cancel, images)
        except asyncio.CancelledError:
            held.cancel.set()
            raise
        except RequestError:
            raise
        except Exception as exc:  # noqa: BLE001 - a state write failing mid-turn (disk full): say it, keep serving
            raise _failure(exc) from exc
        finally:
            held.busy = False
        if done.stop_reason == "error":
            raise RequestError(-32603, f"ctxagent: {done.error}", {"type": done.error_type, "turn": done.turn})
        return PromptResponse(stop_reason=STOP_REASONS.get(done.stop_reason, "end_turn"))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        held = self.sessions.get(session_id)
        if held is not None and held.cancel is not None:
            held.cancel.set()

    # -- sessions ---------------------------------------------------------------------------------
    def _session(self, session_id: str) -> AcpSession:
        held = self.sessions.get(session_id)
        if held is None:
            raise RequestError.invalid_params({"sessionId": f"unknown session {session_id!r}: session/new or session/load first"})
        return held

    def _open(self, cwd: str, resume: str | None) -> AcpSession:
        """A session for `cwd` (runs on a worker: it reads config, may refresh the model list, opens stores)."""
        from ctxagent.agent.config import flags_from_args, load_config
        from ctxagent.agent.factory import create_agent
        from ctxagent.agent.providers.catalogue import refresh_for_start
        from ctxagent.agent.session import find_repo_root, open_session
        from ctxagent.agent.trust import describe_ignored
        from ctxagent.context.errors import (
            ConfigError,
            CtxagentError,
            HistoryError,
            RootRefusedError,
            StateDirError,
        )

        where = Path(cwd)
        if not where.is_absolute() or not where.is_dir():
            raise RequestError.invalid_params({"cwd": f"must be an absolute path to a directory: {cwd!r}"})
        try:  # the client's cwd is untrusted: the home folder, `/` or /tmp never become the repository
            root = find_repo_root(where)
        except (RootRefusedError, StateDirError) as exc:
            raise RequestError(-32602, f"ctxagent: {exc}", {"cwd": cwd, "type": type(exc).__name__}) from exc
        try:
            config = load_config(root, flags_from_args(self.args))
            refresh_for_start(config)
            session = open_session(root, config, resume)
        except HistoryError as exc:
            raise RequestError.invalid_params({"sessionId": str(exc)}) from exc
        except (ConfigError, CtxagentError, OSError) as exc:
            raise _failure(exc) from exc
        stream = SessionStream(self.bridge, session.log, session.root, "")
        stream.hold()  # the client learns the session id from the answer: what comes before waits for it
        holder: list[AcpSession] = []
        approver = AcpApprover(self.bridge, session.id, session.root, self.permission_timeout,
                               lambda: holder[0].cancel if holder else None)
        try:
            agent = create_agent(session, on_event=stream, approver=approver)
        except CtxagentError as exc:
            session.log.close()
            raise _failure(exc) from exc
        stream.model_label = agent.model_label
        stream.cost = session_cost(session.log.events, agent.model_label).total
        if config.ignored_keys:
            stream.thought(describe_ignored(config.ignored_keys))
        held = AcpSession(session, agent, stream, files=self._client_files(session))
        if held.files is not None:
            agent.parts.tool_config["files"] = held.files
            approver.files = held.files
        holder.append(held)
        self.sessions[session.id] = held
        return held

    def _client_files(self, session: Session) -> ClientFiles | None:
        fs = self.capabilities.fs if self.capabilities is not None else None
        read, write = bool(fs and fs.read_text_file), bool(fs and fs.write_text_file)
        if not (read or write):
            return None
        return ClientFiles(self.bridge, session.id, session.root, read=read, write=write)

    def _after_response(self, held: AcpSession) -> None:
        """After the session's id reached the client: the slash commands, the plan, what was held."""
        ready = held.ready = asyncio.Event()

        async def send() -> None:
            try:
                await asyncio.sleep(0.05)  # the response is written first (the SDK sends it when the handler returns)
                await self._notify(held.session.id, available_commands_update())
                await self._in_worker(self._release, held)
            except Exception as exc:  # noqa: BLE001 - the client left already: its session is closed at shutdown
                echo(f"ctxagent acp: could not send session {held.session.id}'s first updates: {exc}", err=True)
            finally:
                ready.set()

        task = asyncio.get_running_loop().create_task(send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _release(self, held: AcpSession) -> None:
        held.stream.release()
        if held.stream.plan:
            held.stream.send_plan(force=True)
        last = held.agent.last_report
        if last is not None:
            held.stream.report = last
            held.stream.send_usage()

    def _run_command(self, held: AcpSession, command: Any, arg: str) -> None:
        from ctxagent.context.errors import CtxagentError

        try:
            reply = command.run(held.agent, held.stream, arg)
        except (CtxagentError, ValueError, OSError) as exc:
            reply = f"/{command.name} failed: {exc}"
        held.stream.say(reply)
        report = held.agent.last_build.report if held.agent.last_build is not None else held.agent.last_report
        if report is not None:
            held.stream.report = report
            held.stream.send_usage()

    async def _notify(self, session_id: str, update: Any) -> None:
        if self.client is not None:
            await self.client.session_update(session_id=session_id, update=update)

    def _forget(self, held: AcpSession) -> None:
        self.sessions.pop(held.session.id, None)
        _close_log(held.session)

    # -- the end ----------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """The client is gone: cancel every running turn, let each finish (its log synced), close the logs."""
        for held in self.sessions.values():
            if held.cancel is not None:
                held.cancel.set()
        if self._bridge is not None:
            self._bridge.gone = True
        await asyncio.get_running_loop().run_in_executor(None, lambda: self.executor.shutdown(wait=True))
        for held in list(self.sessions.values()):
            _close_log(held.session)
        self.sessions.clear()


def _say_mcp_ignored(held: AcpSession, servers: Any) -> None:
    """ctxagent does not connect to the MCP servers a client passes (mcpCapabilities are all false,
    and stdio servers would run unsandboxed): say so rather than drop them silently."""
    if servers:
        names = ", ".join(str(getattr(s, "name", "?")) for s in servers)
        held.stream.thought(f"[info] ctxagent does not connect to the client's MCP servers ({names}); "
                            "its own tools are available")


def _close_log(session: Session) -> None:
    try:
        session.log.close()
    except OSError:
        pass  # already reported by the turn; a full disk must not turn the exit into a traceback
