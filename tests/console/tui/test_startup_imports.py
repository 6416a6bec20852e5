"""What the console's first frame does not import: the heavy modules a view, a chart or
a request needs are imported when they are first used (`specconsole bench tui` times
the first frame; this checks the behaviour behind it, not a time). In a subprocess, as
`specconsole connect` starts."""

from __future__ import annotations

import json
import subprocess
import sys

# plotext (charts), httpx (requests), prometheus_client (/metrics) and the views' own
# modules wait for first use; torch and the engine are never the console's.
LATER = ("plotext", "httpx", "prometheus_client", "torch", "engine")
VIEWS = ("dashboard", "sweeps", "history", "flags", "prompt_lab", "logs")


def _loaded(code: str) -> list[str]:
    script = f"import sys, json; {code}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_starting_the_console_imports_no_heavy_module_and_no_view() -> None:
    # What `specconsole connect` imports before its first frame: its own parser, the app.
    loaded = _loaded("import console.cli, console.tui.app; console.cli.build_parser('connect')")
    assert [m for m in loaded if m.split(".")[0] in LATER] == []
    # nor the other commands' modules (measuring, benchmarks, the service commands)
    commands = [m for m in loaded if m.startswith("console.commands.")]
    assert sorted(commands) == ["console.commands.parsing", "console.commands.ui"], commands
    # nor the experiments and the doctor: an action imports them when it first runs
    later = [m for m in loaded if m.startswith(("console.experiments", "console.doctor"))]
    assert later == []
    views = [f"console.tui.screens.{v}" for v in VIEWS]
    assert [m for m in loaded if m in views] == []
