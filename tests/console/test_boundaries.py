"""The console never imports torch or the engine: it talks to engines via transports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"
FORBIDDEN = ("torch", "engine", "textual", "textual_serve")  # Textual only under console/tui


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_forbidden_imports_in_console_sources() -> None:
    offenders = {
        str(path.relative_to(CONSOLE)): sorted(_imports(path) & set(FORBIDDEN))
        for path in CONSOLE.rglob("*.py")
        if "tui" not in path.parts
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_the_console_loads_neither_torch_nor_engine() -> None:
    code = (
        "import sys, console.cli, console.service, console.transport, console.backends; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'engine')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
