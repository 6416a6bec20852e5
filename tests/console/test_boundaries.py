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


# -- engine kinds live in console/backends/<kind>/ ----------------------------------------

ENGINE_KINDS = {"builtin", "sglang", "vllm"}
# Where a branch on the engine kind would mean engine knowledge outside its adapter.
KIND_FREE = ("analysis", "measure", "experiments", "commands", "tui", "service", "store")
# `engine ==` / `kind ==` of any kind here (tui's sweep kinds are not engine kinds, so only
# the packages the adapter contract was made for are held to this).
NO_KIND_COMPARE = ("analysis", "measure", "experiments")


def _kind_constants(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and node.value in ENGINE_KINDS:
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_kind_constants(e) for e in node.elts)) if node.elts else set()
    return set()


def _named_kind(node: ast.AST) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in ("engine", "kind")


def engine_kind_branches(source: str, *, any_kind_compare: bool) -> list[str]:
    """Comparisons that branch on an engine kind: against "builtin"/"sglang"/"vllm" (also
    `in` a tuple of them), and with `any_kind_compare` every `engine ==` / `kind ==`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        hit = any(_kind_constants(o) for o in operands)
        equality = any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops)
        if any_kind_compare and equality and _named_kind(node.left):
            hit = True  # `engine == x`, `profile.kind != y`
        if hit:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_engine_kind_branch_outside_the_adapters() -> None:
    offenders = {}
    for area in KIND_FREE:
        for path in (CONSOLE / area).rglob("*.py"):
            hits = engine_kind_branches(path.read_text(), any_kind_compare=area in NO_KIND_COMPARE)
            if hits:
                offenders[str(path.relative_to(CONSOLE))] = hits
    assert offenders == {}, "engine-kind knowledge belongs in console/backends/<kind>/"


def test_the_branch_check_finds_a_branch() -> None:
    """The check above is not vacuous: each form of branch it exists for is found."""
    for snippet in (
        'if engine == "vllm": pass',
        'if service.profile.engine != "builtin": pass',
        'native = engine in ("builtin", "sglang")',
        'x = "sglang" == kind',
    ):
        assert engine_kind_branches(snippet, any_kind_compare=False), snippet
    assert engine_kind_branches("ok = engine == other", any_kind_compare=True)
    assert not engine_kind_branches('mode = kind == "context"', any_kind_compare=False)
