"""Architecture rules that must hold at every commit:

- imports go one way (tui → agent → tools → context), and only tui/ imports textual;
- tui/ reaches agent/ and context/ only through their faces, `ctxagent.agent` and `ctxagent.context`
  (tui/ may import tools/ by the layering, but does not: the faces are what the app needs);
- no import circle between the project's modules; no `*Mixin` classes in agent/ context/ tools/ tui/;
- agent/'s root holds at most 16 modules (`__init__.py` not counted): the rest lives in its folders;
- no module is longer than 450 lines (the longest today: context/history.py, 420; tui/app/screens/session_screen.py, 404);
- every file path docs/ARCHITECTURE.md names exists, and its library example runs;
- the tree is ruff-clean.

How imports are read (`module_imports`): every import statement wherever it stands — at module level,
inside a function (lazy), under `if TYPE_CHECKING:` — relative ones resolved. `import a.b.c` and
`from a.b import c` where `a/b/c.py` (or `a/b/c/`) exists are an edge to the module `a.b.c`;
`from a.b import Name` is an edge to `a.b` itself, its `__init__.py` when it is a package.

Faces (a package's `__init__.py`) are modules like any other for whoever imports them from outside
the package: `tui/app/app.py` → `ctxagent.agent` is an edge, and so is everything the face imports,
its `if TYPE_CHECKING:` block included (tests/test_faces.py checks that block matches the lazy map).
An import of an ENCLOSING package from inside it is no edge: Python runs `agent/__init__.py` before
any `ctxagent.agent.*` module, so every module of a package already depends on its face, whether it
spells the import or not; counting that would make every face that re-exports its own submodules a
circle by construction, though its imports are lazy. What a module may take from its own package's
face is a rule of its own (`test_a_module_takes_from_its_own_face_only_what_the_face_defines`): only
names the face defines itself (`__version__`, the trajectory types of `tui/lab/bench/readers/`), never a
name it re-exports — a sibling is imported from the sibling, so the edge is seen and counted.
Imports by a computed name (`importlib.import_module(variable)`: the CLI's subcommand table, bench's
list of benchmarks) are not seen.

The first-frame rule of the app (what tui/ loads before it shows the prompt) is tests/tui/test_house.py's.
"""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"context": "ctxagent.context", "tools": "ctxagent.tools", "agent": "ctxagent.agent", "tui": "ctxagent.tui"}
# what each layer may import from ctxagent (tui → agent → tools → context)
ALLOWED = {
    "context": {"context"},
    "tools": {"tools", "context"},
    "agent": {"agent", "tools", "context"},
    "tui": {"tui", "agent", "tools", "context"},
}
TUI_MAY_IMPORT = {"ctxagent.agent", "ctxagent.context"}  # the faces, and no module behind them
# The rooms of tui/ (the front ends and the lab) that reach agent/ and context/ only through their faces.
FACE_ONLY_ROOMS = ("ctxagent.tui.app", "ctxagent.tui.entry")
# The rooms of tui/ and which of the others each may import: the command line starts the app, ACP and
# the lab's commands; the app, ACP and the lab are clients of the runtime, never of each other.
TUI_ROOMS: dict[str, set[str]] = {"app": set(), "acp": set(), "lab": set(), "cli": {"app", "acp", "lab"}}
MAX_AGENT_ROOT_MODULES = 16
MAX_MODULE_LINES = 450  # a hard cap, a little above the ~400 lines where a module should be split
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name → file of every module of the four packages (a package is its `__init__.py`)."""
    modules: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def module_imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module) for every project module that `name` (at `path`) imports (see the module doc)."""

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:  # a name past the deepest module (a.b.c.d, no d) is that module
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if _is_package(path) else name.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in modules else base)
        for target in targets:
            module = known(target) if target.startswith("ctxagent.") else None
            if module is not None and module != name and not name.startswith(module + "."):
                found.append((node.lineno, module))
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: {m for _, m in module_imports(name, path, modules)} for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, nexts = work[-1]
            nxt = next(nexts, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_imports_are_one_way() -> None:
    bad: list[str] = []
    for layer, allowed in ALLOWED.items():
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    parts = name.split(".")
                    if parts[0] == "ctxagent" and len(parts) > 1 and parts[1] not in allowed:
                        bad.append(f"{_rel(path)}:{node.lineno} imports {name}")
                    if parts[0] == "textual" and layer != "tui":
                        bad.append(f"{_rel(path)}:{node.lineno} imports textual outside tui/")
    assert not bad, "\n".join(bad)


def test_tui_imports_only_the_faces_of_agent_and_context() -> None:
    """... and from them only their public names (`__all__`; the face's lazy map refuses any other)."""
    modules = project_modules()
    public = {face: set(importlib.import_module(face).__all__) for face in TUI_MAY_IMPORT}
    bad = [f"{_rel(path)}:{line} imports {module}"
           for name, path in modules.items() if name.startswith(FACE_ONLY_ROOMS)
           for line, module in module_imports(name, path, modules)
           if not module.startswith("ctxagent.tui") and module not in TUI_MAY_IMPORT]
    bad += [f"{_rel(path)}:{node.lineno} takes {alias.name} from {node.module}, which does not export it"
            for name, path in modules.items() if name.startswith("ctxagent.tui")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module in public
            for alias in node.names if alias.name not in public[node.module]]
    assert not bad, "tui/ imports only ctxagent.agent and ctxagent.context:\n" + "\n".join(bad)


def test_the_rooms_of_tui_import_each_other_one_way() -> None:
    """tui/entry.py → cli → {app, acp, lab}; the app, ACP and the lab never import each other."""
    modules = project_modules()

    def room(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["ctxagent", "tui"] and parts[2] in TUI_ROOMS else None

    bad = [f"{_rel(path)}:{line} imports {module}"
           for name, path in modules.items() if (mine := room(name)) is not None
           for line, module in module_imports(name, path, modules)
           if (theirs := room(module)) is not None and theirs != mine and theirs not in TUI_ROOMS[mine]]
    assert not bad, "\n".join(bad)


def test_the_runtime_never_prints() -> None:
    """agent/ is the runtime: it says things through its events (agent/updates.py) and return values; the
    front ends decide what reaches a terminal. No print(), echo(), echo_json(), nor sys.stdout / sys.stderr."""
    bad: list[str] = []
    for path in (ROOT / "agent").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "echo", "echo_json"):
                bad.append(f"{_rel(path)}:{node.lineno} calls {node.func.id}()")
            elif (isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")
                  and isinstance(node.value, ast.Name) and node.value.id == "sys"):
                bad.append(f"{_rel(path)}:{node.lineno} uses sys.{node.attr}")
    assert not bad, "\n".join(bad)


def test_no_import_circles() -> None:
    found = circles(import_graph(project_modules()))
    assert not found, "import circles (module-level, lazy and TYPE_CHECKING imports count):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def _plant(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for folder in PACKAGES:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    return project_modules(root)


def test_the_scan_sees_lazy_type_checking_relative_and_face_imports(tmp_path: Path) -> None:
    modules = _plant(tmp_path, {
        "agent/__init__.py": "",
        "agent/loop.py": "",
        "agent/step.py": "",
        "agent/cli/__init__.py": "",
        "agent/cli/main.py": """
            from typing import TYPE_CHECKING
            from . import commands
            from ..step import StepRunner
            if TYPE_CHECKING:
                from ctxagent.agent.loop import Agent
            def later():
                import ctxagent.tools.confine.deep
                from ctxagent import context
                from ctxagent.agent import Agent, loop
        """,
        "agent/cli/commands.py": "",
        "tools/confine.py": "",
        "context/__init__.py": "",
    })
    found = {m for _, m in module_imports("ctxagent.agent.cli.main", modules["ctxagent.agent.cli.main"], modules)}
    # `from ctxagent.agent import Agent` names the face that encloses main.py: no edge (see the module doc)
    assert found == {"ctxagent.agent.cli.commands", "ctxagent.agent.step", "ctxagent.agent.loop",
                     "ctxagent.tools.confine", "ctxagent.context"}


def test_a_planted_circle_is_found_whichever_kind_of_import_closes_it(tmp_path: Path) -> None:
    modules = _plant(tmp_path, {
        "context/a.py": "from ctxagent.context.b import B\n",
        "context/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ctxagent.context.c import C\n",
        "context/c.py": "def later():\n    from ctxagent.context import a\n",
        "context/leaf.py": "from ctxagent.context.a import A\n",
        # a face that re-exports its submodules: ingest importing the face (it encloses ingest) is no
        # edge, nor is a sibling imported through the package; store importing ingest's importer is one
        "context/memory/__init__.py": "from ctxagent.context.memory.store import Store\n",
        "context/memory/ingest.py": "from ctxagent.context.memory import Store, store\n",
        "context/memory/store.py": "def later():\n    from ctxagent.context.memory.recall import recall\n",
        "context/memory/recall.py": "from ctxagent.context.memory.ingest import ingest\n",
        # an importer from outside the package does reach the face, and through it the store
        "context/report.py": "import ctxagent.context.memory\n",
        "context/memory/search.py": "from ctxagent.context.report import Report\n",
    })
    graph = import_graph(modules)
    assert graph["ctxagent.context.memory.ingest"] == {"ctxagent.context.memory.store"}
    assert graph["ctxagent.context.report"] == {"ctxagent.context.memory"}
    assert circles(graph) == [
        ["ctxagent.context.a", "ctxagent.context.b", "ctxagent.context.c"],
        ["ctxagent.context.memory.ingest", "ctxagent.context.memory.recall", "ctxagent.context.memory.store"],
    ]


def _defined_names(face: Path) -> set[str]:
    """Names a face binds itself at run time: top-level def, class and assignment (its imports and its
    `if TYPE_CHECKING:` block re-export names that live in other modules)."""
    names: set[str] = set()
    for node in ast.parse(face.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_a_module_takes_from_its_own_face_only_what_the_face_defines() -> None:
    modules = project_modules()
    bad: list[str] = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules
                    and name.startswith(node.module + ".")):
                continue
            face = modules[node.module]
            defined = _defined_names(face)
            bad += [f"{_rel(path)}:{node.lineno} takes {alias.name} from {node.module}: import it from where it lives"
                    for alias in node.names if alias.name not in defined and f"{node.module}.{alias.name}" not in modules]
    assert not bad, "\n".join(bad)


def test_no_mixin_classes() -> None:
    mixins = [f"{_rel(path)}:{node.lineno} {node.name}"
              for path in project_modules().values()
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.ClassDef) and node.name.endswith("Mixin")]
    assert not mixins, "compose parts instead of mixing in:\n" + "\n".join(mixins)


def test_the_agent_root_holds_few_modules() -> None:
    root = sorted(p.name for p in (ROOT / "agent").glob("*.py") if p.name != "__init__.py")
    assert len(root) <= MAX_AGENT_ROOT_MODULES, f"agent/ holds {len(root)} modules; give a kind its folder: {root}"


def test_no_module_is_too_long() -> None:
    long = [f"{_rel(path)}: {n} lines" for path in project_modules().values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(long)


# a path as the architecture notes write one: folders, then a file with an extension
DOC_PATH = re.compile(r"(?<![\w./<-])((?:[\w-]+/)+[\w-]+\.(?:py|toml|md|json|tcss))\b")
DOC_FOLDER = re.compile(r"`((?:[\w-]+/)+)`")  # a folder, written `like/this/`


def test_every_path_in_the_architecture_notes_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    cited = sorted(set(DOC_PATH.findall(text)) | set(DOC_FOLDER.findall(text)))
    assert len(cited) > 20  # the regex does see the notes' paths
    missing = [p for p in cited if not (ROOT / p).exists()]
    assert not missing, f"{_rel(DOC)} names files that do not exist: {missing}"


def test_the_library_example_in_the_architecture_notes_runs(tmp_path: Path) -> None:
    """The notes' `ctxagent.context` example, run as written (in a scratch directory: it writes a log)."""
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    said = re.findall(r"This prints `(.*?)`", text)  # what the notes say it prints
    assert len(blocks) == 1 and len(said) == 1
    out = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == said[0]
    assert (tmp_path / "sessions" / "demo-1.jsonl").exists()


def test_ruff_clean() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    out = subprocess.run([ruff, "check", "agent", "tools", "context", "tui", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
