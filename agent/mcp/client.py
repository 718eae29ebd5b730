"""The MCP servers of a session, connected in the background: `McpHub`.

The agent loop is synchronous, the SDK is async: the hub owns one thread with its own asyncio
loop, and every server is a task on it, started together at session start — the prompt never
waits for them. Each server's state (`ServerState`: starting → ready, or failed / crashed, with
the reason) changes on that thread and is reported through `on_change` (the agent turns it into
an `McpStatus` event the status bar shows). A call (`call`) is submitted to the loop and waited on
from the agent's thread, watching the turn's cancel event: Ctrl+C cancels the call's task, and the
SDK sends MCP's `notifications/cancelled` for it. Nothing here raises into the loop: a server that
never answers `initialize`, exits, or writes garbage becomes an error answer for its tools.

A server's `notifications/tools/list_changed` lists its tools again (`_relist`, a task: the handler
runs inside the session's reader and must not wait on it) and reports the new list through
`on_change` like the first; the catalog decides what the model sees (agent/mcp/catalog.py). A call
answered after such a notification returns once the new list is in, so a tool that changed the
list is seen changed from the next step.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from ctxagent.agent.mcp.config import McpServerConfig
from ctxagent.agent.mcp.transport import http_streams, stdio_streams
from ctxagent.context import __version__
from ctxagent.context.errors import CtxagentError
from ctxagent.tools.sandbox import SandboxPolicy

STATES = ("starting", "ready", "failed", "crashed", "stopped")
MAX_TOOLS = 2000  # a server listing more is cut here (pages are followed up to it)


@dataclass
class ServerState:
    """What `/mcp`, `ctxagent mcp-servers` and the status bar show about one server."""

    name: str
    transport: str  # "stdio" | "http"
    state: str = "starting"
    error: str = ""
    tools: list[types.Tool] = field(default_factory=list)  # listed and kept (enabled_tools / disabled_tools)
    server_info: str = ""
    since: float = field(default_factory=time.monotonic)


@dataclass
class CallOutcome:
    result: types.CallToolResult | None = None
    error: str = ""  # set when there is no result: the server's state, a timeout, a cancel


class _Link:
    def __init__(self, name: str, config: McpServerConfig):
        self.name, self.config = name, config
        self.state = ServerState(name, config.transport)
        self.session: Any = None
        self.stop: asyncio.Event | None = None
        self.started = threading.Event()  # set once the state left "starting"
        self.inflight: set[asyncio.Task[Any]] = set()
        self.fault = ""  # why the in-flight calls were cut (garbage on the wire)
        self.relist: asyncio.Task[None] | None = None  # the tools/list a list_changed notification started
        self.relist_again = False  # another notification came while it ran


def _first(exc: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    """An error in one line."""
    exc = _first(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


class McpHub:
    def __init__(self, servers: dict[str, McpServerConfig], root: Path, policy: SandboxPolicy,
                 on_change: Callable[[ServerState], None] | None = None):
        self.root = Path(root)
        self.policy = policy
        self.on_change = on_change
        self.links = {name: _Link(name, cfg) for name, cfg in servers.items() if cfg.enabled}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: list[concurrent.futures.Future[None]] = []
        self._lock = threading.Lock()

    # -- life -----------------------------------------------------------------------------------
    def start(self) -> McpHub:
        if self._thread is not None or not self.links:
            for link in self.links.values():
                link.started.set()
            return self
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="ctxagent-mcp", daemon=True)
        self._thread.start()
        ready.wait()
        for link in self.links.values():
            self._tasks.append(asyncio.run_coroutine_threadsafe(self._serve(link), loop))
        atexit.register(self.close)
        return self

    def wait_started(self, timeout: float | None = None) -> bool:
        """Wait until every server is ready or has failed (headless runs wait; the app does not)."""
        deadline = time.monotonic() + (timeout if timeout is not None else
                                       max((ln.config.startup_timeout for ln in self.links.values()), default=0) + 1)
        return all(link.started.wait(max(0.0, deadline - time.monotonic())) for link in self.links.values())

    def close(self, timeout: float = 5.0) -> None:
        loop = self._loop
        if loop is None:
            return
        self._loop = None
        for link in self.links.values():
            if link.stop is not None:
                loop.call_soon_threadsafe(link.stop.set)
        concurrent.futures.wait(self._tasks, timeout=timeout)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
        atexit.unregister(self.close)

    def states(self) -> list[ServerState]:
        with self._lock:
            return [replace(link.state, tools=list(link.state.tools)) for link in self.links.values()]

    def state_of(self, name: str) -> ServerState | None:
        link = self.links.get(name)
        return None if link is None else link.state

    # -- one server -------------------------------------------------------------------------------
    def _set(self, link: _Link, state: str, error: str = "", tools: list[types.Tool] | None = None) -> None:
        with self._lock:
            link.state = replace(link.state, state=state, error=error, since=time.monotonic(),
                                 tools=link.state.tools if tools is None else tools)
        if self.on_change is not None:
            try:
                self.on_change(link.state)
            except Exception:  # a front end's hiccup never stops a server
                pass
        if state != "starting":  # after on_change: who waits for the start finds the tools offered
            link.started.set()

    async def _serve(self, link: _Link) -> None:
        from mcp.client.session import ClientSession

        link.stop = asyncio.Event()
        cfg = link.config
        phase = "start"
        try:
            if cfg.transport == "stdio":
                policy = self.policy if cfg.sandbox else replace(self.policy, mode="off")
                streams = stdio_streams(cfg, self.root, policy, name=link.name)
            else:
                streams = http_streams(cfg)
            async with streams as (read, write, process):
                info = types.Implementation(name="ctxagent", version=__version__)
                async with ClientSession(read, write, client_info=info, message_handler=self._handler(link)) as session:
                    with anyio.fail_after(cfg.startup_timeout):
                        phase = "initialize"
                        init = await session.initialize()
                        phase = "tools/list"
                        tools = await self._list_tools(session)
                    link.session = session
                    with self._lock:
                        link.state.server_info = f"{init.server_info.name} {init.server_info.version}".strip()
                    self._set(link, "ready", tools=[t for t in tools if cfg.keeps(t.name)])
                    phase = "session"
                    async with anyio.create_task_group() as tg:
                        if process is not None:
                            tg.start_soon(self._watch, link, process, tg.cancel_scope)
                        await link.stop.wait()
                        tg.cancel_scope.cancel()
            if link.state.state == "ready":
                self._set(link, "stopped")
        except Exception as exc:
            first = _first(exc)
            if isinstance(first, TimeoutError) and phase != "session":
                self._set(link, "failed", f"no answer to {phase} within {cfg.startup_timeout:g}s (startup_timeout)")
            elif isinstance(first, CtxagentError):
                self._set(link, "failed", str(first))
            else:
                self._set(link, "crashed" if phase == "session" else "failed", f"{phase}: {_reason(first)}")
        finally:
            link.session = None
            if link.relist is not None:
                link.relist.cancel()
            if link.state.state in ("starting", "ready"):
                self._set(link, "crashed", "the connection ended")
            for task in list(link.inflight):
                link.fault = link.fault or f"server {link.name} {link.state.state}: {link.state.error}"
                task.cancel()

    async def _list_tools(self, session: Any) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor = None
        while len(tools) < MAX_TOOLS:
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return tools[:MAX_TOOLS]

    async def _watch(self, link: _Link, process: Any, scope: anyio.CancelScope) -> None:
        code = await process.wait()
        link.fault = f"server {link.name} exited (code {code})"
        self._set(link, "crashed", f"the server exited (code {code})")
        for task in list(link.inflight):
            task.cancel()
        scope.cancel()

    async def _relist(self, link: _Link) -> None:
        """The server's tools again, after it said they changed (again while notifications come)."""
        while link.session is not None:
            link.relist_again = False
            try:
                with anyio.fail_after(link.config.startup_timeout):
                    tools = await self._list_tools(link.session)
            except Exception as exc:  # the old list stays; the next call tells whether the server is well
                with self._lock:
                    link.state.error = f"tools/list after tools/list_changed: {_reason(exc)}"
                return
            if link.state.state != "ready":
                return
            self._set(link, "ready", tools=[t for t in tools if link.config.keeps(t.name)])
            if not link.relist_again:
                return

    def _handler(self, link: _Link) -> Any:  # the SDK's MessageHandlerFnT
        async def handle(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                if link.relist is not None and not link.relist.done():
                    link.relist_again = True
                else:
                    link.relist = asyncio.get_running_loop().create_task(self._relist(link))
                return
            if isinstance(message, Exception):  # the transport read garbage, or an oversized answer without an id
                link.fault = f"server {link.name} answered something unreadable: {_reason(message)}"
                for task in list(link.inflight):
                    task.cancel()
        return handle

    # -- calls ------------------------------------------------------------------------------------
    async def _call(self, link: _Link, tool: str, args: dict[str, Any], timeout: float) -> CallOutcome:
        task = asyncio.current_task()
        assert task is not None
        link.inflight.add(task)
        link.fault = ""
        try:
            result = await link.session.call_tool(tool, args, read_timeout_seconds=timeout)
            relist = link.relist  # the call changed the tool list: its answer waits for the new list
            if relist is not None and not relist.done():
                await asyncio.wait({relist}, timeout=link.config.startup_timeout)
            return CallOutcome(result)
        except asyncio.CancelledError:
            if link.fault:
                return CallOutcome(error=link.fault)
            raise
        except Exception as exc:
            return CallOutcome(error=f"{link.name}: {_reason(exc)}")
        finally:
            link.inflight.discard(task)

    def call(self, server: str, tool: str, args: dict[str, Any], cancel: threading.Event | None = None) -> CallOutcome:
        """Call `tool` on `server` from the agent's thread; waits for a starting server (up to its
        startup timeout) and for the call (up to its tool timeout), and gives up at once on cancel."""
        link = self.links.get(server)
        loop = self._loop
        if link is None or loop is None:
            return CallOutcome(error=f"the MCP server {server!r} is not running")
        cancel = cancel or threading.Event()
        deadline = time.monotonic() + link.config.startup_timeout + 1
        while not link.started.wait(0.05):
            if cancel.is_set() or time.monotonic() > deadline:
                return CallOutcome(error=f"the MCP server {server!r} is still starting")
        if link.state.state != "ready" or link.session is None:
            return CallOutcome(error=f"the MCP server {server!r} is {link.state.state}: {link.state.error}")
        timeout = link.config.tool_timeout
        future = asyncio.run_coroutine_threadsafe(self._call(link, tool, args, timeout), loop)
        while True:
            try:
                return future.result(timeout=0.05)
            except concurrent.futures.TimeoutError:
                if cancel.is_set():
                    future.cancel()  # cancels the task: the SDK sends notifications/cancelled
                    try:
                        future.result(timeout=2)
                    except (concurrent.futures.CancelledError, concurrent.futures.TimeoutError, Exception):
                        pass
                    return CallOutcome(error="cancelled by the user; the server was told (notifications/cancelled)")
            except concurrent.futures.CancelledError:
                return CallOutcome(error=link.fault or "the call was cancelled")
