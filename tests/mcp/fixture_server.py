"""Real MCP servers for the tests, built with the SDK's MCPServer (FastMCP's v2 name), plus raw faulty ones.

    python fixture_server.py stdio [--tools N] [--evolve] 3 tools (+ N generated ones), over stdio; --evolve adds
                                                          `evolve`, which adds and removes tools mid-session
                                                          and sends notifications/tools/list_changed;
                                                          --colliding adds `a.b`, `a_b`, `a b` and `数据.读`
                                                          (one name once cleaned), each answering its own
                                                          name; --getenv adds `getenv` (a variable's value)
    python fixture_server.py http PORT_FILE [--tools N]   the same over Streamable HTTP on 127.0.0.1
    python fixture_server.py silent                       reads stdin, never answers `initialize`
    python fixture_server.py garbage                      answers initialize and tools/list, then writes garbage
    python fixture_server.py chunked PORT_FILE            Streamable HTTP by hand: a call's answer is a chunked
                                                          body without Content-Length that never ends; the bytes
                                                          it got out before the client hung up go to PORT_FILE.sent
"""

from __future__ import annotations

import json
import os
import socket
import sys

TOPICS = [
    ("weather", "Get the weather forecast for a city", "天气预报"),
    ("invoice", "Create an invoice for a customer order", "发票"),
    ("calendar", "List calendar events in a date range", "日历"),
    ("ticket", "Open a support ticket in the tracker", "工单"),
    ("deploy", "Deploy a service to the staging cluster", "部署"),
    ("translate", "Translate text between languages", "翻译"),
    ("payments", "Refund a card payment", "退款"),
    ("metrics", "Query time-series metrics of a host", "指标"),
]


COLLIDING = ("a.b", "a_b", "a b", "数据.读")


def build(extra: int, evolve: bool = False, colliding: bool = False, getenv: bool = False):
    global Context  # the annotations are strings (__future__), read in this module's globals
    import mcp_types as types
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("fixture")

    if evolve:
        def added(name: str):
            def tool(query: str) -> str:
                return f"{name} answers {query}"
            return tool

        @server.tool(description="Add the tools named in `add`, remove those named in `remove`, and say so.")
        async def evolve(ctx: Context, add: list[str] | None = None, remove: list[str] | None = None) -> str:
            for name in add or []:
                server.tool(name=name, description=f"A tool added mid-session: {name}. 中途加入的工具。")(added(name))
            for name in remove or []:
                server.remove_tool(name)
            await ctx.session.send_tool_list_changed()  # notifications/tools/list_changed
            return f"added {add or []}, removed {remove or []}"

    @server.tool(description="Echo the text back, reversed. 把文字倒过来。")
    def reverse(text: str) -> str:
        return text[::-1]

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> dict:
        return {"sum": a + b}

    @server.tool(description="Return a result of `size` bytes of text (big answers).")
    def blob(size: int) -> str:
        return ("0123456789abcdef" * (size // 16 + 1))[:size]

    @server.tool(description="Return a small PNG image.")
    def picture() -> list:
        return [types.TextContent(type="text", text="a picture:"),
                types.ImageContent(type="image", data="iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", mime_type="image/png")]

    @server.tool(description="Fail with an error the model should see.")
    def fail(reason: str) -> str:
        raise ValueError(f"it failed: {reason}")

    @server.tool(description="Exit the server process in the middle of the call.")
    def die() -> str:
        os._exit(3)

    @server.tool(description="Sleep for `seconds` seconds (to be cancelled); a cancel is written to `marker`.")
    async def sleep(seconds: float, marker: str = "") -> str:
        import anyio

        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            if marker:
                with open(marker, "w") as fh:
                    fh.write("cancelled")
            raise
        return "slept"

    if colliding:
        def named(own: str):
            def tool(text: str = "") -> str:
                return f"I am {own!r}: {text}"
            return tool

        for own in COLLIDING:
            server.tool(name=own, description="Answers with its own name. 回答自己的名字。")(named(own))

    if getenv:
        @server.tool(description="The value of an environment variable of the server's process.")
        def getenv(name: str) -> str:
            return repr(os.environ.get(name))

    for i in range(extra):
        name, what, zh = TOPICS[i % len(TOPICS)]

        def make(i: int = i, name: str = name):
            def tool(query: str, limit: int = 10) -> str:
                return f"{name} #{i}: {query}"
            return tool

        server.tool(name=f"{name}_{i}", description=f"{what} (variant {i}; {zh}). Takes a query and a limit "
                    f"of results; returns matching records with their identifiers.")(make())
    return server


def silent() -> None:
    for _ in sys.stdin:  # reads everything, answers nothing
        pass


def garbage() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "garbage", "version": "1"}}
        elif msg["method"] == "tools/list":
            result = {"tools": [{"name": "broken", "description": "answers garbage", "inputSchema": {"type": "object"}}]}
        else:
            sys.stdout.write('{"jsonrpc": "2.0", "id": oops this is not json\n')
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()


def chunked(port_file: str) -> None:
    """A raw HTTP/1.1 MCP endpoint: JSON answers for initialize and tools/list, and for tools/call a
    JSON body streamed in chunks, without Content-Length, for as long as the client reads (up to 1 GB)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _reply(self, status: int, body: bytes = b"", kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # no server-to-client stream
            self._reply(405)

        def do_DELETE(self) -> None:
            self._reply(200)

        def do_POST(self) -> None:
            msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if "id" not in msg:
                self._reply(202)
                return
            if msg["method"] == "initialize":
                result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                          "serverInfo": {"name": "chunked", "version": "1"}}
            elif msg["method"] == "tools/list":
                result = {"tools": [{"name": "endless", "description": "an answer that never ends",
                                     "inputSchema": {"type": "object"}},
                                    {"name": "zipped", "description": "a gzip answer, asked for identity",
                                     "inputSchema": {"type": "object"}},
                                    {"name": "small", "description": "a chunked answer that ends",
                                     "inputSchema": {"type": "object"}}]}
            elif msg["params"]["name"] == "zipped":
                import gzip

                body = gzip.compress(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
                    "content": [{"type": "text", "text": "0" * 50_000_000}]}}).encode())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            elif msg["params"]["name"] == "small":
                return self._endless(msg["id"], pieces=2)
            else:
                return self._endless(msg["id"])
            self._reply(200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())

        def _endless(self, rid: object, pieces: int = 16384) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            sent = 0
            head = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": ""}]}})
            first = head[: head.rindex('""') + 1].encode()
            piece = b"x" * 65536
            try:
                for chunk in [first] + [piece] * pieces + [b'"}]}}']:  # 1 GB at most
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    sent += len(chunk)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            finally:
                with open(port_file + ".sent", "w") as fh:
                    fh.write(str(sent))
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as fh:
        fh.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


def main() -> None:
    mode = sys.argv[1]
    extra = int(sys.argv[sys.argv.index("--tools") + 1]) if "--tools" in sys.argv else 0
    if mode == "silent":
        return silent()
    if mode == "garbage":
        return garbage()
    if mode == "chunked":
        return chunked(sys.argv[2])
    server = build(extra, "--evolve" in sys.argv, "--colliding" in sys.argv, "--getenv" in sys.argv)
    if mode == "stdio":
        server.run("stdio")
        return
    port_file = sys.argv[2]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with open(port_file + ".tmp", "w") as fh:
        fh.write(str(port))
    os.replace(port_file + ".tmp", port_file)
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
