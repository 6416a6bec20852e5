"""The console's layer order, checked on every import in its sources.

Imports run one way: the faces (`tui`, then `commands`, which launch it, then `cli`) use
`experiments` (flag changes and arms compared) and `doctor` (a host's checks, each with
its fix), which use `measure` (requests to an engine), which uses `service`, then
`backends`, then `transport`; `store` (run history) sits below `measure`, which writes
to it. `analysis` (pure figures, no I/O) may be used by every layer above the
foundation (`errors`, `config`, `settings`, `events`, `hosts`, `numbers`, `sampling`) and uses
nothing but it. Nothing imports upward, no two areas of a layer use
each other, the TUI never imports the CLI's `commands`, and no module takes part in an
import loop. Imports inside functions count too: a lazy import is still a dependency.
Imports under `if TYPE_CHECKING:` count for the layer order but not as loops: they never
run.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"

RANKS = {
    "errors": 0, "config": 0, "settings": 0, "events": 0, "hosts": 0, "numbers": 0,
    "sampling": 0,
    "analysis": 1,
    "store": 2, "transport": 2,
    "backends": 3,
    "service": 4,
    "measure": 5,
    "experiments": 6,
    "doctor": 6,  # composes service, measure (GPU telemetry) and backends; used by the faces
    "tui": 7,
    "commands": 8,  # `connect` and `web` start the TUI; the TUI never uses the CLI
    "cli": 9, "__init__": 9,
}  # fmt: skip
# Areas of one layer that may use each other (the import-loop test still watches them):
# only the foundation's modules.
PEERS = [{a for a, rank in RANKS.items() if rank == 0}]
FORBIDDEN = {("tui", "commands")}


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(root: Path, module: str, name: str | None) -> str:
    """`from module import name`: the submodule where one exists, else the module."""
    if name is not None:
        candidate = root.parent.joinpath(*f"{module}.{name}".split("."))
        if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
            return f"{module}.{name}"
    return module


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:` (annotations only)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(test or ast.Pass()):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def import_graph(root: Path, *, type_only: bool = True) -> dict[str, set[str]]:
    """Module -> the modules of this package it imports (absolute and relative)."""
    top = root.name
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = _module_name(root, path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        tree = ast.parse(path.read_text())
        skip = set() if type_only else _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name.split(".")[0] == top)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module.split(".")[0] != top:
                    continue
                edges.update(_resolve(root, module, a.name) for a in node.names)
        edges.discard(name)
        graph[name] = edges
    return graph


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for source, targets in graph.items():
        a = _area(source)
        for target in sorted(targets):
            b = _area(target)
            if a == b or ((a, b) not in FORBIDDEN and any({a, b} <= g for g in PEERS)):
                continue
            if (a, b) in FORBIDDEN or RANKS[b] >= RANKS[a]:
                out.append(f"{source} imports {target}")
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_console_imports_run_one_way() -> None:
    assert layer_violations(import_graph(CONSOLE)) == []


def test_console_has_no_import_loop() -> None:
    assert import_cycles(import_graph(CONSOLE, type_only=False)) == []


def test_the_checks_catch_an_upward_import_and_a_loop(tmp_path: Path) -> None:
    """The test of the test: a tree with a service->tui import and a loop fails both."""
    root = tmp_path / "console"
    files = {
        "__init__.py": "",
        "service/__init__.py": "",
        "service/core.py": "from console.tui.app import App\nfrom . import helper\n",
        "service/helper.py": "def f():\n    from .core import x  # lazy, still a loop\n",
        "service/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from .untyped import y\n",
        "service/untyped.py": "from .typed import z\n",
        "tui/__init__.py": "",
        "tui/app.py": "from console.commands.base import run\nApp = 1\n",
        "commands/__init__.py": "",
        "commands/base.py": "X = 1\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    graph = import_graph(root)
    assert layer_violations(graph) == [
        "console.service.core imports console.tui.app",
        "console.tui.app imports console.commands.base",
    ]
    assert ["console.service.core", "console.service.helper"] in import_cycles(graph)
    assert ["console.service.typed", "console.service.untyped"] in import_cycles(graph)
    assert import_cycles(import_graph(root, type_only=False)) == [
        ["console.service.core", "console.service.helper"]
    ]
