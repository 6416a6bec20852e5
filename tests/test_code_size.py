"""Functions that fit on a screen, classes that hold one concept.

No function over 80 lines and no class over 300 in the console and the engine (its server,
its bench and its training included).
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


def test_the_size_check_counts_decorators_and_bodies(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    path = tmp_path / "m.py"
    path.write_text(f"@staticmethod\ndef long():\n{body}\n\ndef short():\n    pass\n")
    assert oversized(path, tmp_path) == ["m.py:2 long (82 lines)"]
