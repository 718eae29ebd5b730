"""Render a history view into measured request messages (the builder's working draft).

Every message is counted once with `count_message`, and remembered in the BuildCache under its
event id, so the next build renders only what is new: it resumes from the longest rendered prefix of
the view, and items it must render again (after a compaction changed the view) are memo hits. Slots
are frozen so that rendered prefixes can be shared between builds; the draft replaces a slot to
prune it and keeps a running total, so each cut is re-measured in O(1).

Repairs that keep a request valid for every provider, deterministically: an assistant tool call
with no result right after it gets a synthetic error result; a tool result whose call is not in
view (e.g. masked) is shown as a user-side note instead of a dangling "tool" message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import partial
from typing import Any

from ctxagent.context.builder import image_parts
from ctxagent.context.builder.cache import BuildCache, RenderState
from ctxagent.context.builder.inputs import BuildInputs, Draft, Slot
from ctxagent.context.builder.slot_fold import fold_slots
from ctxagent.context.history import Event, Summary, ViewItem
from ctxagent.context.images import DEFAULT_RULE, rule_of
from ctxagent.context.ledger import Ledger, files_line, quotes_block, with_quotes
from ctxagent.context.prune import value_rank
from ctxagent.context.request import Message, ToolCall
from ctxagent.context.tokens import REQUEST_OVERHEAD, TokenCounter, count_message

__all__ = ["Draft", "Slot", "assemble", "render", "warm_position", "with_content"]

SUMMARY_HEADER = ("[Summary of earlier conversation (events {first}–{last}); the original messages are kept in the "
                  "session log — read_event id=N shows event N]")
MISSING_RESULT = "[no result recorded for this tool call: it was interrupted or cancelled]"


def warm_position(messages: list[Message]) -> int:
    """Right before the newest user message if the history ends with one; else after the trailing tool results."""
    if messages and messages[-1].role == "user" and messages[-1].kind == "message":
        return len(messages) - 1
    return len(messages)


def _spill_meta(ev: Event) -> dict[str, Any] | None:
    spill = ev.tool_result.spill_ref
    return spill.model_dump(mode="json", exclude_none=True) if spill is not None and spill.handle else None


def _render_summary(it: Summary, quoted: str, counter: TokenCounter) -> tuple[Message, int]:
    if it.method == "server" and it.block is not None:
        # the provider's own compaction block: it opened an assistant reply and goes back verbatim
        msg = Message(role="assistant", content=it.text, kind="server_compaction", event_id=it.event_id, block=it.block)
        return msg, count_message(msg, counter)
    text = SUMMARY_HEADER.format(first=it.first_id, last=it.last_id) + "\n" + it.text + (f"\n{quoted}" if quoted else "")
    msg = Message(role="user", content=text, kind="summary", event_id=it.event_id)
    return msg, count_message(msg, counter)


def _render_result(it: Event, answered: bool, quotes: tuple[str, ...], counter: TokenCounter,
                   rule: str | None = DEFAULT_RULE) -> tuple[Message, int, int, dict[str, Any] | None]:
    """(message, tokens, value rank, spill meta) of a tool result; `answered`: its call is right before it.
    A spilled result shows its preview, then the ledger's requirement lines of the part cut away.
    Its images go with it (`rule`: the provider's image-token rule; None: stubs, the model takes none)."""
    r = it.tool_result
    spill = _spill_meta(it)
    content = image_parts.with_image_text(with_quotes(r.content, quotes) if spill else r.content, r.images, rule, it.id)
    images = image_parts.parts_of(r.images, rule) if rule is not None else ()
    if answered:
        msg = Message(role="tool", content=content, tool_call_id=r.call_id, name=r.name, is_error=r.is_error,
                      event_id=it.id, images=images)
    else:  # its call is not in view: keep the facts, as a user-side note
        msg = Message(role="user", content=f"[output of an earlier {r.name or 'tool'} call {r.call_id}]\n{content}",
                      event_id=it.id, images=images)
    return msg, count_message(msg, counter), value_rank(r.content, r.name, r.is_error), spill


def _render_assistant(it: Event, counter: TokenCounter) -> tuple[Message, int] | None:
    step = it.assistant
    calls = [ToolCall(c.id, c.name, dict(c.arguments)) for c in step.tool_calls]
    if not step.text and not calls:
        return None  # an empty reply (e.g. cancelled before any output) carries nothing and some APIs reject it
    msg = Message(role="assistant", content=step.text, tool_calls=calls, event_id=it.id)
    return msg, count_message(msg, counter)


def _render_user(it: Event, counter: TokenCounter, rule: str | None = DEFAULT_RULE) -> tuple[Message, int]:
    u = it.user
    images = image_parts.parts_of(u.images, rule) if rule is not None else ()
    msg = Message(role="user", content=image_parts.with_image_text(u.sent_text, u.images, rule, it.id),
                  event_id=it.id, images=images)
    return msg, count_message(msg, counter)


def _render_missing(call_id: str, name: str, counter: TokenCounter) -> tuple[Message, int]:
    msg = Message(role="tool", content=MISSING_RESULT, tool_call_id=call_id, name=name, is_error=True)
    return msg, count_message(msg, counter)


def render(items: list[ViewItem], counter: TokenCounter, cache: BuildCache | None = None,
           ledger: Ledger | None = None, summary_quotes_tokens: int = 0,
           task_sections: Mapping[int, str] | None = None, image_rule: str | None = DEFAULT_RULE) -> list[Slot]:
    """The view's messages as slots. With a cache: resumes from the longest rendered prefix of `items`
    and renders each remaining event through the per-event memo (the result is the same either way).
    `ledger`: the session ledger, whose quotes go with the results and summaries that cut them
    (a summary's within `summary_quotes_tokens`). `task_sections`: the task state a summary quotes
    word for word, by the summary's event id (context/builder/task_state.py). `image_rule`: the
    provider's image-token rule (context/images.py); None: the model takes no images, each is a stub."""
    cache = (cache or BuildCache()).bind(counter)
    quotes = {q.event_id: q for q in ledger.quotes} if ledger is not None else {}
    memo = cache.memo
    start = cache.render_prefix(items, image_rule)
    has_images = start.has_images if start else False
    slots: list[Slot] = list(start.slots) if start else []
    pending: list[tuple[str, str]] = list(start.pending) if start else []  # calls awaiting a result right after their assistant message
    turn = start.turn if start else 0

    def flush() -> None:
        for call_id, name in pending:
            msg, n = memo(("missing", call_id, name), None, partial(_render_missing, call_id, name, counter),
                          kind="renders", chars=len(MISSING_RESULT))
            slots.append(Slot(msg, n, "tools", "synthetic", turn, -1))
        pending.clear()

    for idx in range(len(start.items) if start else 0, len(items)):
        it = items[idx]
        if isinstance(it, Summary):
            flush()
            masked = [q for q in quotes.values() if it.first_id <= q.event_id <= it.last_id] if quotes else []
            quoted = quotes_block(masked, summary_quotes_tokens, counter) if masked else ""
            files = files_line(ledger.touched, it.first_id, it.last_id) if ledger is not None else ""
            task = task_sections.get(it.event_id, "") if task_sections else ""
            quoted = "\n".join(x for x in (files, quoted, task) if x)
            msg, n = memo(("summary", it.event_id), (it, quoted), partial(_render_summary, it, quoted, counter),
                          kind="renders", chars=len(it.text) + len(quoted))
            slots.append(Slot(msg, n, "hot", "summary", turn, idx, event_id=it.event_id))
            continue
        size = cache.size(it)
        if it.kind == "tool_result":
            result = it.tool_result
            has_images = has_images or bool(result.images)
            call_id = result.call_id
            match = next((p for p in pending if p[0] == call_id), None)
            if match is not None:
                pending.remove(match)
            lines = quotes[it.id].lines if it.id in quotes else ()
            key: tuple[Any, ...] = ("result", it.id, match is not None) + ((image_rule,) if result.images else ())
            msg, n, rank, spill = memo(key, (it, lines),
                                       partial(_render_result, it, match is not None, lines, counter, image_rule),
                                       kind="renders", chars=len(result.content))
            slots.append(Slot(msg, n, "tools", "spilled" if spill else "verbatim", turn, idx,
                              is_tool_result=True, rank=rank, source=result.content,
                              spill=spill, event_id=it.id, full_tokens=size, quotes=lines))
            continue
        flush()
        if it.kind == "user":
            turn = it.user.turn or turn + 1
            has_images = has_images or bool(it.user.images)
            msg, n = memo(("user", it.id) + ((image_rule,) if it.user.images else ()), it,
                          partial(_render_user, it, counter, image_rule),
                          kind="renders", chars=len(it.user.text))
            slots.append(Slot(msg, n, "hot", "verbatim", turn, idx, event_id=it.id, full_tokens=size))
        elif it.kind == "assistant":
            rendered = memo(("assistant", it.id), it, partial(_render_assistant, it, counter),
                            kind="renders", chars=len(it.assistant.text))
            if rendered is None:
                continue
            msg, n = rendered
            slots.append(Slot(msg, n, "hot", "verbatim", turn, idx, event_id=it.id, full_tokens=size))
            pending.extend((c.id, c.name) for c in msg.tool_calls)
    cache.keep_render(RenderState(list(items), list(slots), tuple(pending), turn, image_rule, has_images))
    flush()
    return slots


def assemble(items: list[ViewItem], inputs: BuildInputs, warm: str, cache: BuildCache | None = None,
             ledger: Ledger | None = None, task_sections: Mapping[int, str] | None = None) -> Draft:
    counter = inputs.counter
    cache = (cache or BuildCache()).bind(counter)
    rule = rule_of(inputs.model) if inputs.images else None
    slots = render(items, counter, cache, ledger, inputs.budget.base("warm") // 2, task_sections, rule)
    fold = fold_slots(slots, cache)  # the slots' fold: extended with the new slots only (slot_fold.py)
    stubbed = _stub_old_images(slots, protect_from(slots, inputs.protect_turns), counter, cache, fold.image_slots)
    if stubbed is not slots:
        slots, fold = stubbed, fold_slots(stubbed, cache)
    system_tokens, tool_spec_tokens = cache.fixed_tokens(inputs.system, inputs.tools)
    warm_msg = Message(role="user", content=warm, kind="warm") if warm else None
    warm_tokens = count_message(warm_msg, counter) if warm_msg else 0
    return Draft(items, slots, REQUEST_OVERHEAD + system_tokens + tool_spec_tokens, system_tokens, tool_spec_tokens,
                 warm_msg, warm_tokens, protect_from(slots, inputs.protect_turns), inputs.protect_turns,
                 cuts=cache.cut_memo(), known_sum=fold.tokens)


def protect_from(slots: list[Slot], protect: int) -> int:
    """Slot index where the last `protect` user turns start (all of them if fewer; none if protect ≤ 0).
    Scans from the end: the recent turns are few, the history is long."""
    if protect <= 0:
        return len(slots)
    found = 0
    first = 0
    for i in range(len(slots) - 1, -1, -1):
        s = slots[i]
        if s.msg.role == "user" and s.msg.kind == "message" and not s.is_tool_result:
            found += 1
            first = i
            if found == protect:
                return i
    return first if found else 0


def _stub_old_images(slots: list[Slot], protect: int, counter: TokenCounter, cache: BuildCache,
                     with_images: tuple[int, ...]) -> list[Slot]:
    """Images older than the protected recent turns: a text stub each (their clearing point).
    `with_images`: the indices of the slots with images, in order."""
    if not with_images or with_images[0] >= protect:
        return slots
    out = list(slots)
    for i in with_images:
        if i >= protect:
            break
        s = out[i]
        if s.msg.images:
            msg, n = cache.memo(("old_images", s.event_id, s.msg.role), s.msg,
                                partial(image_parts.stub_old, s.msg, counter), kind="prunes")
            out[i] = dataclasses.replace(s, msg=msg, tokens=n)
    return out


def with_content(msg: Message, content: str) -> Message:
    """`msg` showing `content` (a preview, a stub): its images, if any, become stubs too."""
    return image_parts.without_images(msg, content)
