"""Functions that fit on a screen, classes that hold one concept, modules a reader can hold.

No function over 80 lines and no class over 300 in the console and the engine (its server,
its bench and its training included); no console module over 500 lines (a longer one is
two concepts sharing a file).
A module-level table (a tuple of flags, a dict of notes) is data, not logic, and is not
a function or a class, so it is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = ("console", "engine")
MAX_FUNCTION, MAX_CLASS = 80, 300
MAX_CONSOLE_MODULE = 500


def oversized(path: Path, root: Path = ROOT) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            limit = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - start + 1
            if length > limit:
                out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return out


@pytest.mark.parametrize("tree", TREES)
def test_no_oversized_function_or_class(tree: str) -> None:
    found = [row for path in sorted((ROOT / tree).rglob("*.py")) for row in oversized(path)]
    assert found == []


def long_modules(root: Path, limit: int = MAX_CONSOLE_MODULE) -> list[str]:
    return [
        f"{path.relative_to(root.parent)} ({n} lines)"
        for path in sorted(root.rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > limit
    ]


def test_no_console_module_over_500_lines() -> None:
    assert long_modules(ROOT / "console") == []


def test_the_module_check_counts_lines(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * 501)
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * 500)
    assert long_modules(tmp_path / "pkg") == ["pkg/long.py (501 lines)"]


def test_the_size_check_counts_decorators_and_bodies(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    path = tmp_path / "m.py"
    path.write_text(f"@staticmethod\ndef long():\n{body}\n\ndef short():\n    pass\n")
    assert oversized(path, tmp_path) == ["m.py:2 long (82 lines)"]
