"""The engine server's modules import one way: the app imports the endpoints and the
state they read, never the reverse, and no module takes part in an import loop, type-only
imports counted (`ServerState` once lived in app.py, which imported every endpoint that
imported it back under `if TYPE_CHECKING:`)."""

from __future__ import annotations

from pathlib import Path

from tests.console.test_layers import import_cycles, import_graph

ENGINE = Path(__file__).resolve().parents[3] / "engine"


def test_engine_has_no_import_loop_type_only_imports_counted() -> None:
    assert import_cycles(import_graph(ENGINE, type_only=True)) == []


def test_only_the_launcher_imports_the_app() -> None:
    graph = import_graph(ENGINE)
    importers = sorted(m for m, edges in graph.items() if "engine.serve.app" in edges)
    assert importers == ["engine.serve.launch"]


def test_the_loop_check_sees_a_type_only_loop(tmp_path: Path) -> None:
    """The test of the test: state imports app under TYPE_CHECKING, app imports state."""
    root = tmp_path / "engine"
    (root / "serve").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "serve" / "__init__.py").write_text("")
    (root / "serve" / "app.py").write_text("from engine.serve.state import S\n")
    (root / "serve" / "state.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine.serve import app\n"
    )
    assert import_cycles(import_graph(root, type_only=True)) == [
        ["engine.serve.app", "engine.serve.state"]
    ]
