"""The client's side of a session: its file system (unsaved buffers), its content blocks, "allow for
this session", and the slash commands it was told about."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from acp.schema import ClientCapabilities, FileSystemCapabilities, McpServerStdio

from .conftest import CALC, RecordingClient, acp_agent, run, session_events


def _png() -> bytes:
    """A real 2 × 2 RGB PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress((b"\x00" + b"\x10\x20\x30" * 2) * 2))
            + chunk(b"IEND", b""))


def _session(client: RecordingClient, repo: Path, url: str, prompts: list[list[Any]], *, fs: bool = False,
             mcp: list[Any] | None = None) -> tuple[str, list[Any]]:
    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)) if fs else ClientCapabilities()

    async def main() -> tuple[str, list[Any]]:
        async with acp_agent(client, repo, url) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
            sid = (await conn.new_session(cwd=str(repo), mcp_servers=mcp or [])).session_id
            return sid, [await conn.prompt(session_id=sid, prompt=p) for p in prompts]

    return run(main())


def test_the_tools_read_and_edit_the_editors_buffers_confined_to_the_root(repo: Path, tmp_path: Path, scripted_server) -> None:
    (tmp_path / "outside.txt").write_text("secret outside the repository\n")
    srv = scripted_server([
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "return a - b  # unsaved",
                                                             "new_text": "return a + b"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "../outside.txt"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "README.md", "content": "# calc, rewritten\n"}}]},
        {"text": "Edited the buffer."},
    ])
    calc, readme = str(repo / "calc.py"), str(repo / "README.md")
    client = RecordingClient(answers=["allow_once", "allow_once"],
                             buffers={calc: "def add(a, b):\n    return a - b  # unsaved\n", readme: "# unsaved readme\n"})
    sid, (answer,) = _session(client, repo, srv.url, [[text_block("fix add")]], fs=True)
    assert answer.stop_reason == "end_turn"
    # read_file, edit_file's read, then write_file's: the diff the user approves, and the tool's own;
    # never the path outside the repository
    assert client.reads == [calc, calc, readme, readme]
    assert client.writes == [(calc, "def add(a, b):\n    return a + b\n"), (readme, "# calc, rewritten\n")]
    write_asked = client.permissions[1][0].content[0]
    assert write_asked.old_text == "# unsaved readme\n" and write_asked.new_text == "# calc, rewritten\n"
    assert (repo / "calc.py").read_text() == CALC and (repo / "README.md").read_text() == "# calc\n"  # the editor saves
    results = [e["data"] for e in session_events(repo, sid) if e["kind"] == "tool_result"]
    assert "# unsaved" in results[0]["content"] and not results[0]["is_error"]
    assert not results[1]["is_error"] and "+    return a + b" in results[1]["meta"]["diff"]
    assert results[2]["is_error"] and "secret" not in results[2]["content"]


def test_without_the_client_fs_the_local_disk_is_used(repo: Path, scripted_server) -> None:
    srv = scripted_server([
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(buffers={str(repo / "calc.py"): "never read"})
    _session(client, repo, srv.url, [[text_block("fix add")]])
    assert client.reads == [] and client.writes == []
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_resource_links_embedded_context_and_images(repo: Path, scripted_server) -> None:
    srv = scripted_server([{"text": "Seen: {images}."}])
    client = RecordingClient()
    shot = _png()
    blocks = [
        text_block("explain these"),
        resource_link_block("calc.py", f"file://{repo}/calc.py"),
        resource_block(embedded_text_resource("untitled:scratch-1", "scratch text from the editor")),
        resource_block(embedded_text_resource(f"file://{repo}/README.md", "# calc (buffer)")),
        image_block("aGVsbG8=", "image/png"),  # "hello": no image by its bytes
        image_block(base64.b64encode(shot).decode(), "image/png"),
    ]
    mcp = [McpServerStdio(name="their-fs", command="/bin/false", args=[], env=[])]
    sid, (answer,) = _session(client, repo, srv.url, [blocks], mcp=mcp)
    assert answer.stop_reason == "end_turn"
    thoughts = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "does not connect to the client's MCP servers (their-fs)" in thoughts
    events = session_events(repo, sid)
    user = next(e["data"]["text"] for e in events if e["kind"] == "user")
    assert "@calc.py" in user and "@README.md" in user and "scratch text from the editor" in user
    assert "not attached: an image (prompt image is not a PNG, JPEG, GIF or WEBP image" in user
    (ref,) = next(e["data"]["images"] for e in events if e["kind"] == "user")  # the real one goes as an attachment
    assert ref["media_type"] == "image/png" and (ref["width"], ref["height"]) == (2, 2)
    (seen,) = srv.requests()[0]["images"]  # ... and reaches the request as an image block
    assert seen["where"] == "user" and seen["size"] == len(shot)
    assert (repo / ".ctxagent" / "spill" / f"{ref['sha256']}.img").read_bytes() == shot
    assert base64.b64encode(shot).decode() not in (repo / ".ctxagent" / "sessions" / f"{sid}.jsonl").read_text()
    attached = [e["data"]["meta"]["files"] for e in events if e["kind"] == "tool_result"]
    assert attached == [["calc.py"], ["README.md"]]  # the app's own @path attachment: read_file before the step
    body = json.dumps(srv.requests()[0]["body"])
    assert "return a - b" in body and "scratch text from the editor" in body


def test_allow_for_session_then_compact_rewind_remember_over_acp(repo: Path, scripted_server) -> None:
    srv = scripted_server([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "one\n"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "two\n"}}]},
        {"text": "Wrote notes.txt twice."},
        {"text": "Second turn."},
        {"text": "## Decisions\n- notes.txt holds two\n"},  # the summary /compact asks the model for
    ])
    client = RecordingClient(answers=["allow_session"])
    prompts = [[text_block(t)] for t in ("write notes", "and again", "/compact", "/rewind", "/rewind 1 both",
                                         "/remember never touch calc.py", "/cost")]
    sid, answers = _session(client, repo, srv.url, prompts)
    assert {a.stop_reason for a in answers} == {"end_turn"}
    assert len(client.permissions) == 1  # the second write_file was covered by "allow for this session"
    events = session_events(repo, sid)
    kinds = [e["kind"] for e in events]
    assert "compaction" in kinds and "rewind" in kinds
    assert not (repo / "notes.txt").exists()  # /rewind 1 both restored the code from before turn 1
    assert any(e["kind"] == "memory" and e["data"]["text"] == "never touch calc.py" for e in events)
    text = client.text()
    assert "Compacted" in text and "turn 1: write notes" in text and "rewound to before turn 1" in text
    assert "Pinned" in text and "model calls with anthropic:" in text
    assert len(srv.requests()) == 5


def test_a_tool_results_image_goes_to_the_client_as_image_content(repo: Path, scripted_server) -> None:
    shot = _png()
    (repo / "shot.png").write_bytes(shot)
    srv = scripted_server([{"tool_calls": [{"name": "read_file", "arguments": {"path": "shot.png"}}]}, {"text": "ok"}])
    client = RecordingClient()
    _session(client, repo, srv.url, [[text_block("look")]])
    done = [u for u in client.of("tool_call_update") if u.status == "completed"]
    (images,) = [[c.content for c in u.content or [] if getattr(c.content, "type", "") == "image"] for u in done]
    assert [(i.mime_type, base64.b64decode(i.data)) for i in images] == [("image/png", shot)]
