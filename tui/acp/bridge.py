"""The turn's thread talking to the client: notifications, permission questions, the editor's files.

A turn runs on a worker thread (`Agent.run_turn` is synchronous, like in the app); the connection
lives on the event loop. `Bridge.call` runs one coroutine on the loop and waits for it from the
worker — with a deadline, and giving up at once when the turn is cancelled — so every update goes out
in the order the loop emitted it and a client that stops answering cannot hang a turn.

- `AcpApprover`: the session's `Approver` (agent/parts.py) as `session/request_permission`, with
  allow once / allow for this session / reject. "For this session" is the approver's `remember`: the
  tool runner keeps the allowance by its own rule (agent/tool_calls.py). No answer within the
  timeout, a cancelled turn or a client gone is a refusal that says why.
- `ClientFiles`: the tools' `FileAccess` (tools/contract.py) over `fs/read_text_file` and
  `fs/write_text_file`, so the agent reads and edits the editor's unsaved buffers. The tools have
  confined the path before it gets here; it is checked once more against the root.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from ctxagent.agent.updates import PermissionDecision, PermissionRequest
from ctxagent.context.errors import ToolError
from ctxagent.context.floor.display import echo

if TYPE_CHECKING:
    from acp.interfaces import Client

T = TypeVar("T")

NOTIFY_SECONDS = 30.0  # a notification the client's pipe cannot take in this long: the client is gone
FILE_SECONDS = 30.0  # an fs/ request without an answer


class TurnCancelled(Exception):
    """The turn was cancelled while waiting for the client."""


class Bridge:
    """Runs coroutines on the connection's loop from worker threads."""

    def __init__(self, loop: asyncio.AbstractEventLoop, client: Client):
        self.loop = loop
        self.client = client
        self.gone = False  # the client stopped taking messages: later notifications are dropped
        self._said_gone = False

    def call(self, make: Callable[[], Coroutine[Any, Any, T]], timeout: float,
             cancel: threading.Event | None = None) -> T:
        """The coroutine's result; TimeoutError after `timeout` s, TurnCancelled when `cancel` is set
        first, ConnectionError when the client is gone, or what the coroutine raised."""
        if _on_loop(self.loop):
            raise RuntimeError("Bridge.call from the event loop's own thread would wait for itself")
        if self.gone:
            raise ConnectionError("the client is gone")
        try:
            future = asyncio.run_coroutine_threadsafe(make(), self.loop)
        except RuntimeError as exc:  # the loop is closed: the server is shutting down
            raise ConnectionError(f"the connection is closed ({exc})") from exc
        deadline = time.monotonic() + timeout
        while True:
            try:
                return future.result(timeout=0.05)
            except concurrent.futures.TimeoutError:
                if cancel is not None and cancel.is_set():
                    future.cancel()
                    raise TurnCancelled() from None
                if time.monotonic() >= deadline:
                    future.cancel()
                    raise TimeoutError(f"no answer within {timeout:g} s") from None
            except concurrent.futures.CancelledError as exc:
                raise ConnectionError("the request was dropped: the connection is closing") from exc

    def notify(self, session_id: str, update: Any) -> None:
        """Send one session/update; a client that is gone is said once on stderr, and the turn goes on."""
        if self.gone:
            return
        if _on_loop(self.loop):  # from a handler on the loop itself: queue it, in order, without waiting
            task = self.loop.create_task(self.client.session_update(session_id=session_id, update=update))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a closed pipe is said by the next call
            return
        try:
            self.call(lambda: self.client.session_update(session_id=session_id, update=update), NOTIFY_SECONDS)
        except Exception as exc:  # noqa: BLE001 - the turn must finish and its log stay whole whatever the pipe does
            self.gone = True
            if not self._said_gone:
                self._said_gone = True
                echo(f"ctxagent acp: cannot reach the client ({type(exc).__name__}: {exc}); "
                     "the turn goes on and is logged", err=True)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


# -- permissions ----------------------------------------------------------------------------------

ALLOW_ONCE, ALLOW_SESSION, REJECT = "allow_once", "allow_session", "reject"


class AcpApprover:
    """`Approver` over session/request_permission (see the module's note)."""

    def __init__(self, bridge: Bridge, session_id: str, root: Path, timeout: float,
                 cancel: Callable[[], threading.Event | None]):
        self.bridge = bridge
        self.session_id = session_id
        self.root = root
        self.timeout = timeout
        self.cancel = cancel  # the running turn's cancel event
        self.files: Any = None  # the session's ClientFiles, when the client serves them (write_file's diff)

    def __call__(self, req: PermissionRequest) -> PermissionDecision:
        from acp.schema import PermissionOption, ToolCallUpdate
        from ctxagent.tui.acp.tool_view import locations, permission_content, text_content, title, tool_kind

        # The tool runner decides what an allowance covers (agent/tool_calls.py); a request that names
        # it (`target`), says what to know first (`note`) or cannot be remembered says so here too.
        target = str(getattr(req, "target", "") or "")
        note = str(getattr(req, "note", "") or "")
        content = permission_content(self.root, req, self.files) + ([text_content(note)] if note else [])
        tool_call = ToolCallUpdate(
            tool_call_id=req.call_id, title=title(req.tool, req.arguments), kind=tool_kind(req.tool), status="pending",
            content=content, locations=locations(self.root, req.arguments) or None, raw_input=req.arguments,
        )
        covers = f"{req.tool} {target}" if target else req.tool
        options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
        if getattr(req, "can_remember", True):
            shown = covers if len(covers) <= 80 else covers[:79] + "…"
            options.append(PermissionOption(option_id=ALLOW_SESSION, name=f"Allow {shown} for this session",
                                            kind="allow_always"))
        options.append(PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"))
        try:
            answer = self.bridge.call(
                lambda: self.bridge.client.request_permission(session_id=self.session_id, tool_call=tool_call,
                                                              options=options),
                self.timeout, self.cancel())
        except TurnCancelled:
            return PermissionDecision(False, reason="the turn was cancelled before the user answered")
        except TimeoutError:
            return PermissionDecision(False, reason=f"the editor gave no answer within {self.timeout:g} s, "
                                                    "which counts as a refusal")
        except ConnectionError:
            return PermissionDecision(False, reason="the editor disconnected before answering")
        except Exception as exc:  # noqa: BLE001 - a client's error reply or a malformed answer: refuse, say why
            return PermissionDecision(False, reason=f"the permission request failed: {type(exc).__name__}: {exc}")
        outcome = answer.outcome
        if outcome.outcome == "cancelled":
            return PermissionDecision(False, reason="the user cancelled the turn")
        chosen = getattr(outcome, "option_id", "")
        if chosen == ALLOW_ONCE:
            return PermissionDecision(True)
        if chosen == ALLOW_SESSION and any(o.option_id == ALLOW_SESSION for o in options):
            return PermissionDecision(True, remember=True)
        if chosen == REJECT:
            return PermissionDecision(False, reason="the user rejected it in the editor")
        return PermissionDecision(False, reason=f"the editor answered with an option ctxagent did not offer ({chosen!r})")


# -- the editor's files ----------------------------------------------------------------------------


class ClientFiles:
    """`FileAccess` through the client; the parts it does not offer stay on the local disk."""

    def __init__(self, bridge: Bridge, session_id: str, root: Path, *, read: bool, write: bool,
                 local: Any = None):
        from ctxagent.tools.contract import LOCAL_FILES

        self.bridge = bridge
        self.session_id = session_id
        self.root = root.resolve()
        self.read_through, self.write_through = read, write
        self.local = local or LOCAL_FILES
        self.reads = self.writes = 0  # requests sent to the client

    def _inside(self, path: Path) -> str:
        absolute = path if path.is_absolute() else self.root / path
        if not absolute.resolve().is_relative_to(self.root):
            raise ToolError(f"{path} is outside the repository; the editor is not asked for it")
        return str(absolute)

    def open_read(self, path: Path) -> BinaryIO:
        if not self.read_through:
            return self.local.open_read(path)
        where = self._inside(path)
        try:
            answer = self.bridge.call(
                lambda: self.bridge.client.read_text_file(session_id=self.session_id, path=where), FILE_SECONDS)
        except Exception as exc:  # noqa: BLE001 - the client's error, a timeout, a closed pipe: the tool says it
            raise ToolError(f"the editor could not read {path.name}: {_reason(exc)}") from exc
        self.reads += 1
        return io.BytesIO(answer.content.encode("utf-8", "surrogateescape"))

    def write(self, path: Path, data: bytes) -> None:
        if not self.write_through:
            self.local.write(path, data)
            return
        where = self._inside(path)
        text = data.decode("utf-8", "replace").removeprefix("\ufeff")  # the editor keeps its own encoding
        try:
            self.bridge.call(lambda: self.bridge.client.write_text_file(session_id=self.session_id, path=where,
                                                                        content=text), FILE_SECONDS)
        except Exception as exc:  # noqa: BLE001 - see open_read
            raise ToolError(f"the editor could not write {path.name}: {_reason(exc)}") from exc
        self.writes += 1


def _reason(exc: BaseException) -> str:
    data = getattr(exc, "data", None)  # an SDK RequestError: the client's own words are in its data
    return (str(exc) or type(exc).__name__) + (f" ({data})" if data else "")
