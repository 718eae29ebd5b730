"""BuildCache: the builder's per-event work, remembered across builds so a step costs O(new content).

Events are immutable once appended. What the builder derives from ONE event — its rendered message
and token count, its pruned preview, its verbatim size — is memoized under (what, event id,
variant) and checked against the event itself on every hit (identity, else equality), so a different
log that reuses an id simply recomputes. What it derives from the WHOLE log — view(), the live
(non-rewound) events, the session ledger, the history's verbatim token total, the rendered message
list — is kept as snapshots of a prefix of the log and extended with the new events only; a rewind
in the new events, or a log that is not an extension of a snapshot, recomputes from scratch.

A cache never changes a result: a build with a warm cache returns exactly what a cold one does
(tests/context/test_build_cache.py checks it at every step of random histories; `inspect` re-builds
with a cold cache and compares a sha256). One cache serves one counter: binding another empties it.
The agent owns one per session (`BuildInputs.cache`); without one the builder uses a cache tied to
the counter object (weakly), so benchmarks and tools that reuse a counter are cached too.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ctxagent.context.events import ImageRef
from ctxagent.context.history import MESSAGE_KINDS, Event, Summary, ViewItem, extend_view, view
from ctxagent.context.images import image_tokens
from ctxagent.context.ledger import Ledger
from ctxagent.context.pins import live_events
from ctxagent.context.prompt_cache import SHORTEST_TTL_S
from ctxagent.context.request import ToolSpec
from ctxagent.context.tokens import MESSAGE_OVERHEAD, TokenCounter, count_system, count_tool_spec

T = TypeVar("T")

SNAPSHOTS = 4  # prefixes kept: the log, plus a few branches (relief rounds, replayed strategies)
DEFAULT_MAX_CHARS = 32_000_000  # memoized text held (≈ 8M tokens); over it the oldest half goes
SHARED_MAX_CHARS = 8_000_000  # the same for a cache tied to a counter (tests share counters widely)
_ENTRY_CHARS = 64  # what a memo entry without text is charged


def refs_tokens(refs: list[ImageRef] | None) -> int:
    """What an event's images cost by the default rule (context/images.py)."""
    return sum(image_tokens(r.width, r.height) for r in refs or ())


def event_tokens(ev: Event, counter: TokenCounter) -> int:
    """What an event costs verbatim (spilled results count their full original size)."""
    if ev.kind == "user":
        return MESSAGE_OVERHEAD + counter.count(ev.user.sent_text) + refs_tokens(ev.user.images)
    if ev.kind == "assistant":
        step = ev.assistant
        args = sum(counter.count(json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)) for c in step.tool_calls)
        return MESSAGE_OVERHEAD + counter.count(step.text) + args + 4 * len(step.tool_calls)
    if ev.kind == "tool_result":
        result = ev.tool_result
        spill = result.spill_ref
        if spill is not None and spill.tokens is not None:
            return MESSAGE_OVERHEAD + spill.tokens + refs_tokens(result.images)
        return MESSAGE_OVERHEAD + counter.count(result.content) + refs_tokens(result.images)
    return 0


@dataclass
class CacheStats:
    """Work done afresh (cache misses), by kind: what a test counts instead of timing."""

    renders: int = 0  # messages rendered and counted
    prunes: int = 0  # pruned / capped previews computed and counted
    sizes: int = 0  # verbatim event sizes counted (loss %)
    log_rebuilds: int = 0  # view / live events / ledger recomputed over the whole log
    log_extends: int = 0  # ... extended with new events only
    render_restarts: int = 0  # message lists rendered from the first item
    render_resumes: int = 0  # ... resumed from a rendered prefix
    slice_walks: int = 0  # tools-slice enforcements walked afresh (not found in BuildCache.enforced)
    slice_resumes: int = 0  # ... walked on from an earlier one's stop (a jump of the cut or of the end)


@dataclass(frozen=True)
class ColdTrail:
    """The messages that met a cold prompt cache in the first request that held them, folded over the
    log like the ledger: one that arrived more than the provider's cache TTL after the message before it
    (an idle user, a resumed session, a long tool run; events without a time never count), and the
    newest message at a step for another model than the step before it (its step records say which).
    The TTL is the build's (context/prompt_cache.py `rules_for`), so the fold keeps every gap longer than
    the shortest TTL and `with_build` picks the ones past this build's."""

    gaps: tuple[tuple[int, float], ...] = ()  # (event id, seconds since the message before) past SHORTEST_TTL_S
    switched: frozenset[int] = frozenset()  # messages first sent to another model than the step before
    last_model: str = ""
    newest: int = -1  # the newest message event so far
    last_ts: float = 0.0

    def feed(self, events: list[Event]) -> ColdTrail:
        gaps, switched, last_model, newest, last_ts = self.gaps, self.switched, self.last_model, self.newest, self.last_ts
        for ev in events:
            if ev.kind in MESSAGE_KINDS:
                if ev.ts and last_ts and ev.ts - last_ts > SHORTEST_TTL_S:
                    gaps = (*gaps, (ev.id, ev.ts - last_ts))
                last_ts = ev.ts or last_ts
                newest = ev.id
            elif ev.kind == "context_report":
                model = str(ev.data.get("model") or "")
                if model and last_model and model != last_model and newest >= 0:
                    switched = switched | {newest}
                last_model = model or last_model
        return ColdTrail(gaps, switched, last_model, newest, last_ts)

    def cold(self, ttl_s: float = SHORTEST_TTL_S) -> frozenset[int]:
        """The messages that met a cold cache with entries living `ttl_s`."""
        return self.switched | {i for i, gap in self.gaps if gap > ttl_s}

    def with_build(self, model: str, ttl_s: float = SHORTEST_TTL_S) -> frozenset[int]:
        """`cold(ttl_s)`, plus this build's newest message if it is for another model than the last step."""
        cold = self.cold(ttl_s)
        if model and self.last_model and model != self.last_model and self.newest >= 0:
            return cold | {self.newest}
        return cold


RECENT_FILES = 10  # files the warm block's recall asks about: the ones the latest calls named


@dataclass(frozen=True)
class RecallCue:
    """What the memory hook is asked at a step, folded over the live log: the newest user message's text,
    and the files the newest events named (newest first, at most RECENT_FILES distinct) — a tool
    result's files, an assistant call's `path` argument."""

    query: str = ""
    files: tuple[str, ...] = ()

    def feed(self, events: list[Event]) -> RecallCue:
        query, files = self.query, self.files
        for ev in events:
            named: list[str] = []
            if ev.kind == "user":
                query = ev.user.text
            elif ev.kind == "tool_result":
                named = list(ev.tool_result.meta.files)
            elif ev.kind == "assistant":
                named = [p for c in ev.assistant.tool_calls if isinstance(p := c.arguments.get("path"), str)]
            if named:
                # the first distinct names of (this event's, then the older ones'): the older list cut to
                # RECENT_FILES loses nothing, since a name it dropped had RECENT_FILES newer ones before it
                files = tuple(dict.fromkeys([*named, *files]))[:RECENT_FILES]
        return RecallCue(query, files)


@dataclass(frozen=True)
class LogState:
    """Everything the builder derives from a log prefix. Never mutated: copy before changing."""

    events: list[Event]  # the prefix this describes (a private copy)
    items: list[ViewItem]  # view(events)
    live: list[Event]  # live_events(events)
    live_tokens: int  # verbatim tokens of the live message events (loss % denominator)
    ledger: Ledger  # the session ledger (pins, quotes, decisions, files, failures) folded over `live`
    cold: ColdTrail  # where the prompt cache was cold (time gaps, model switches), folded over `events`
    cue: RecallCue  # what memory recall is asked at this step, folded over `live`
    summaries: tuple[Summary, ...] = ()  # the compaction summaries in `items`, in order (only a compaction adds one)


@dataclass(frozen=True)
class RenderState:
    """render() part-way: the slots of items[:len(items)] and the state needed to go on."""

    items: list[ViewItem]
    slots: list[Any]  # list[render.Slot]; slots are frozen, so they can be shared
    pending: tuple[tuple[str, str], ...]  # (call id, tool name) still awaiting a result
    turn: int
    image_rule: str | None = None  # the image-token rule its images were rendered with (render.py)
    has_images: bool = False  # some item has images: resumed only under the same rule


def summaries_in(items: list[ViewItem]) -> tuple[Summary, ...]:
    """The compaction summaries a view shows, in order."""
    return tuple(it for it in items if isinstance(it, Summary))


def _is_prefix(prefix: list[Any], full: list[Any]) -> bool:
    n = len(prefix)
    if n > len(full):
        return False
    if n == 0:
        return True
    last = full[n - 1]
    if last is not prefix[-1] and last != prefix[-1]:  # cheap reject before the O(n) compare
        return False
    return full[:n] == prefix  # C-level; identical objects compare without calling __eq__


class BuildCache:
    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS):
        self.max_chars = max_chars
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._counter: TokenCounter | None = None
        self._reset()

    def _reset(self) -> None:
        self._memo: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self.cuts: dict[tuple[int, str], tuple[Any, Any]] = {}  # Draft.cut's memo: a slot's cuts, by identity
        self.enforced: list[Any] = []  # list[slice_relief.Enforced]: the last tools-slice enforcements
        self.folds: list[Any] = []  # list[slot_fold.SlotFold]: the last slot lists folded
        self._chars = 0
        self._logs: list[LogState] = []
        self._renders: list[RenderState] = []
        self._fixed: tuple[str, list[ToolSpec], int, int] | None = None

    def bind(self, counter: TokenCounter) -> BuildCache:
        """Use this cache with `counter`; a different counter than last time empties it."""
        if counter is not self._counter:
            with self._lock:
                if counter is not self._counter:
                    self._reset()
                    self._counter = counter
        return self

    # -- per-event memo ---------------------------------------------------------------------------
    def memo(self, key: tuple[Any, ...], anchor: Any, compute: Callable[[], T], *, kind: str, chars: int = 0) -> T:
        """compute() once per (key, anchor): a hit needs the same anchor (the event, or the message it
        was derived from) — identical or equal. `kind` names the CacheStats counter of misses."""
        hit = self._memo.get(key)
        if hit is not None and (hit[0] is anchor or hit[0] == anchor):
            return hit[1]  # type: ignore[no-any-return]  # the memo holds values of every key's own type
        value = compute()
        setattr(self.stats, kind, getattr(self.stats, kind) + 1)
        with self._lock:
            self._memo[key] = (anchor, value)
            self._chars += chars + _ENTRY_CHARS
            if self._chars > self.max_chars:
                self._evict()
        return value

    def _evict(self) -> None:
        """Drop the oldest half of the memo (insertion order); snapshots keep what they reference."""
        drop = len(self._memo) // 2
        for key in list(self._memo)[:drop]:
            del self._memo[key]
        self._chars = self._chars // 2
        self.cuts.clear()  # it holds slots, which hold rendered text: it goes with the memo it was made from
        self.enforced.clear()
        self.folds.clear()

    def size(self, ev: Event) -> int:
        """event_tokens(ev), memoized."""
        counter = self._counter
        assert counter is not None, "bind() the cache to a counter first"
        return self.memo(("size", ev.id), ev, lambda: event_tokens(ev, counter), kind="sizes")

    def fixed_tokens(self, system: str, tools: list[ToolSpec]) -> tuple[int, int]:
        """(system prompt tokens, tool schema tokens): the stable prefix, counted once while unchanged."""
        fixed = self._fixed
        if fixed is not None and fixed[0] == system and fixed[1] == tools:
            return fixed[2], fixed[3]
        counter = self._counter
        assert counter is not None, "bind() the cache to a counter first"
        sys_tokens = count_system(system, counter)
        tool_tokens = sum(count_tool_spec(t, counter) for t in tools)
        self._fixed = (system, list(tools), sys_tokens, tool_tokens)
        return sys_tokens, tool_tokens

    def cut_memo(self) -> dict[tuple[int, str], tuple[Any, Any]]:
        """The memo a build's Draft keeps its cuts in (one entry per slot cut; emptied when it outgrows
        what the memo holds, whose entries its slots share)."""
        if len(self.cuts) > max(4096, 2 * len(self._memo)):
            self.cuts.clear()  # slots of renders no longer resumed from (a compaction restarts the render)
        return self.cuts

    # -- log snapshots ----------------------------------------------------------------------------
    def log_state(self, events: list[Event]) -> LogState:
        """view / live events / ledger / verbatim total of `events`, extended from the longest snapshot
        that is a prefix of it."""
        best: LogState | None = None
        for st in self._logs:
            if (best is None or len(st.events) > len(best.events)) and _is_prefix(st.events, events):
                best = st
        if best is not None and len(best.events) == len(events):
            return best
        tail = events[len(best.events):] if best is not None else events
        if best is None or any(e.kind == "rewind" for e in tail):
            live = live_events(events)
            items = view(events)
            state = LogState(list(events), items, live,
                             sum(self.size(e) for e in live if e.kind in MESSAGE_KINDS), Ledger().feed(live),
                             ColdTrail().feed(events), RecallCue().feed(live), summaries_in(items))
            self.stats.log_rebuilds += 1
        else:  # a rewind hides only earlier events: the new ones are live, and extend every fold
            items = extend_view(best.items, tail)
            compacted = any(e.kind == "compaction" for e in tail)
            state = LogState(best.events + tail, items, best.live + tail,
                             best.live_tokens + sum(self.size(e) for e in tail if e.kind in MESSAGE_KINDS),
                             best.ledger.copy().feed(tail), best.cold.feed(tail), best.cue.feed(tail),
                             summaries_in(items) if compacted else best.summaries)
            self.stats.log_extends += 1
        self._logs = [state, *(s for s in self._logs if s is not best)][:SNAPSHOTS]
        return state

    # -- rendered prefixes ------------------------------------------------------------------------
    def render_prefix(self, items: list[ViewItem], image_rule: str | None = None) -> RenderState | None:
        """The longest remembered render whose items are a prefix of `items` (one with images: rendered
        under the same image-token rule, which a /model switch may change)."""
        best: RenderState | None = None
        for st in self._renders:
            if st.has_images and st.image_rule != image_rule:
                continue
            if (best is None or len(st.items) > len(best.items)) and _is_prefix(st.items, items):
                best = st
        if best is None:
            self.stats.render_restarts += 1
        else:
            self.stats.render_resumes += 1
        return best

    def keep_render(self, state: RenderState) -> None:
        self._renders = [state, *(s for s in self._renders if not _is_prefix(s.items, state.items))][:SNAPSHOTS]


_SHARED: weakref.WeakKeyDictionary[Any, BuildCache] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def cache_for(counter: TokenCounter, cache: BuildCache | None = None) -> BuildCache:
    """`cache` bound to `counter`; without one, the cache tied to this counter object (a fresh one if
    the counter cannot be weakly referenced)."""
    if cache is None:
        with _SHARED_LOCK:
            try:
                cache = _SHARED.get(counter)
                if cache is None:
                    cache = _SHARED[counter] = BuildCache(SHARED_MAX_CHARS)
            except TypeError:
                cache = BuildCache(SHARED_MAX_CHARS)
    return cache.bind(counter)
