"""The CLI and the TUI read the same views: for the same host state, `specconsole status`
and the dashboard list the same key flags with the same sources, the status line and the
status bar say the same state, and `rollback` and the TUI's confirmation show the same
diff (or the same sentence when there is nothing to roll back to).

The host is real (a profile, a local transport, a launch store on disk); only what needs
a running engine is fixed: its schema, its /get_server_info and, where it matters, its
state, taken from the snapshot fakes the dashboard pictures are made from.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from console import cli
from console.backends.schema import FlagSchema
from console.backends.schema_discovery import DiscoveredSchema
from console.config import load_profile
from console.errors import ConfigError
from console.service import ApplyResult, LifecycleEvent
from console.service.engine_service import EngineService
from console.service.flag_view import read_flag_view
from console.service.launch import LaunchConfig
from console.transport import LocalTransport
from console.tui.actions import EngineActions
from console.tui.widgets.status_bar import state_text
from tests.console.tui import fakes


async def _command(argv: list[str]) -> int:
    """One `specconsole` command run in this process, as `main` runs it."""
    args = cli.build_parser().parse_args(argv)
    return await args.func(args)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Profile `lab` on this machine, with the fakes' schema, server info and state."""
    assert cli.main(["hosts", "add", "lab", "--state-dir", str(tmp_path / "state")]) == 0
    host = SimpleNamespace(status=fakes.status("ready"))

    async def schema(self) -> DiscoveredSchema:
        return DiscoveredSchema(FlagSchema({s.name: s for s in fakes.SPECS}, source="fixed"),
                                dict(fakes.ROLES))  # fmt: skip

    async def server_info(self) -> dict | None:
        return fakes.INFO if host.status.state == "ready" else None

    async def status(self):
        return host.status

    async def rollback(self, *, timeout: float = 0) -> ApplyResult:
        # The restart itself is the e2e tests' business; here only what is shown before it.
        return ApplyResult(LifecycleEvent("ready"), fakes.CONFIG)

    for name, fn in (("schema", schema), ("server_info", server_info), ("status", status),
                     ("rollback", rollback)):  # fmt: skip
        monkeypatch.setattr(EngineService, name, fn)
    host.service = EngineService(load_profile("lab"), LocalTransport("lab"))
    return host


async def _write(service: EngineService, current: LaunchConfig, last_good=None) -> None:
    store = await service.store()
    await store.write_current(current)
    if last_good is not None:
        await store.write_last_good(last_good)


async def test_status_lists_the_dashboards_key_flags(lab, capsys) -> None:
    await _write(lab.service, fakes.CONFIG)
    # What the dashboard shows for the same inputs (its panel reads exactly this).
    dashboard = [k.as_tuple() for k in (await read_flag_view(
        fakes.FakeService(), info=fakes.INFO, ask_engine=False)).key_flags()]  # fmt: skip
    assert dashboard[0] == ("algorithm", "DDTREE", "engine")

    assert await _command(["status", "lab", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(k["label"], k["value"], k["source"]) for k in out["key_flags"]] == dashboard
    assert out["state"] == "ready" and out["detail"] == ""

    assert await _command(["status", "lab"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("gpu1: ready (builtin, process supervisor, pid 4242, port 30000)")
    for label, value, source in dashboard:
        assert any(ln.split() == [*label.split(), value, f"({source})"]
                   for ln in text.splitlines()), (label, text)  # fmt: skip


async def test_status_line_and_status_bar_say_the_same_state(lab, capsys) -> None:
    await _write(lab.service, fakes.CONFIG)
    lab.status = fakes.FAILED
    bar = state_text(SimpleNamespace(status=fakes.FAILED, lifecycle=None, running=None))
    assert bar == ("failed", "exit code 1")
    assert await _command(["status", "lab"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"gpu1: {bar[0]} {bar[1]} (builtin")
    # Stopped engine: the key flags come from the launch config and the defaults.
    assert "draft window          1024  (launch config)" in text


async def test_flags_json_has_the_engines_effective_values(lab, capsys) -> None:
    await _write(lab.service, fakes.CONFIG)
    assert await _command(["flags", "lab", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["current"] == fakes.FLAGS
    assert out["effective"]["speculative-algorithm"] == "DDTREE"
    assert out["effective"]["speculative-draft-window-size"] == 1024
    assert [f["name"] for f in out["flags"]] == [s.name for s in fakes.SPECS]

    assert await _command(["flags", "lab"]) == 0
    text = capsys.readouterr().out
    assert "--speculative-algorithm = -   [{NONE,DFLASH,DDTREE}, default DDTREE]   engine " \
           "reports DDTREE" in text  # fmt: skip
    assert "--context-length = 2048   [int, default the model's max_position_embeddings]\n" in text


async def test_rollback_shows_the_diff_the_tui_confirms(lab, capsys) -> None:
    tui = SimpleNamespace(app=SimpleNamespace(session_service=lambda: lab.service, host="lab"))
    good = LaunchConfig(engine="builtin", flags={"context-length": 1024}, argv=["x"])
    await _write(lab.service, fakes.CONFIG, good)
    confirm_text = await EngineActions._rollback_diff(tui)  # type: ignore[arg-type]
    assert "+--context-length 1024" in confirm_text

    assert await _command(["rollback", "lab"]) == 0
    out = capsys.readouterr().out
    assert out == f"{confirm_text}\nlab: rolled back and ready\n"


def test_no_last_good_is_one_sentence_in_both(lab, capsys) -> None:
    # Sync: the CLI's `main` runs its own event loop, as from a shell.
    tui = SimpleNamespace(app=SimpleNamespace(session_service=lambda: lab.service, host="lab"))
    asyncio.run(_write(lab.service, fakes.CONFIG))
    with pytest.raises(ConfigError) as refused:
        asyncio.run(EngineActions._rollback_diff(tui))  # type: ignore[arg-type]
    assert cli.main(["rollback", "lab"]) == cli.EXIT_ERROR
    assert capsys.readouterr().err == f"specconsole: {refused.value}\n"
    assert str(refused.value).startswith("There is no last-good config for lab yet")
