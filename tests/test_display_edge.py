"""Every printer goes through the display edge (context/floor/display.py): an AST scan of the modules
that print — the CLI, headless, the benchmarks' reports, the demo, the app's entry — for a print() or
a write to a terminal stream whose text did not pass through it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDGE = {"for_display", "strip_controls", "show_controls", "json_text", "flat", "plain", "judged", "markup_safe"}
STREAMS = {"stdout", "stderr", "out", "err", "stream"}
THE_EDGE_ITSELF = ROOT / "context" / "floor" / "display.py"
NOT_A_TERMINAL = {ROOT / "tui" / "lab" / "scripted" / "server.py"}  # writes HTTP responses to its socket


def _printing_modules() -> list[Path]:
    return sorted(p for folder in ("agent", "tui", "tools") for p in (ROOT / folder).rglob("*.py"))


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _safe(node: ast.AST) -> bool:
    """Text that may reach a terminal: a literal, what an edge function returned, or a sum of these."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Call):
        return _name(node.func) in EDGE
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _safe(node.left) and _safe(node.right)
    return False


def bypasses(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append((node.lineno, "print() — use echo / echo_json"))
        elif (isinstance(node.func, ast.Attribute) and node.func.attr == "write"
              and _name(node.func.value) in STREAMS and not all(_safe(a) for a in node.args)):
            found.append((node.lineno, f"{ast.unparse(node.func)}() of text that did not pass the display edge"))
    return found


def test_no_module_prints_around_the_display_edge() -> None:
    problems = [f"{path.relative_to(ROOT)}:{line}: {what}"
                for path in _printing_modules() if path != THE_EDGE_ITSELF and path not in NOT_A_TERMINAL
                for line, what in bypasses(ast.parse(path.read_text(encoding="utf-8")))]
    assert not problems, "\n".join(problems)


def test_the_scan_finds_what_it_must() -> None:
    found = bypasses(ast.parse(
        "print(name)\nsys.stderr.write(f'x {name}')\nself.err.write(text)\nout.write(name + '\\n')\n"
        "sys.stdout.write(strip_controls(name) + '\\n')\nfh.write(data)\nstream.write('\\r' + for_display(x))\n"))
    assert [line for line, _ in found] == [1, 2, 3, 4]
