"""The bundled engine on this machine runs with the console's own interpreter (not the
first `python3` on PATH, which a cron job, a unit or pipx may not share), and the console
says which interpreter it uses."""

from __future__ import annotations

import sys
from pathlib import Path

from console import cli, config
from console.backends import get_backend


def test_builtin_local_uses_this_interpreter_and_says_so() -> None:
    local = config.load_profile("local")
    assert local.launch.python == sys.executable
    assert "this console's own interpreter" in local.interpreter_note
    assert sys.executable in local.interpreter_note
    argv = get_backend(local.engine).launch_argv(local, {"port": 30000})
    assert argv[0] == sys.executable


def test_a_local_profile_without_launcher_gets_it_but_never_stores_it(
    _isolated_config: Path,
) -> None:
    # A same-machine profile with its own port, as one makes to run a second engine.
    profile = config.parse_profile("mine", {"engine": "builtin", "port": 31234}, "test")
    assert profile.launch.python == sys.executable
    path = config.save_profile(profile)
    assert "python" not in path.read_text()  # follows the console to a new virtualenv
    assert config.load_profile("mine").launch.python == sys.executable
    # A local.toml overriding the builtin one (a port, say) keeps the interpreter too.
    config.save_profile(config.parse_profile("local", {"port": 31235}, "test"))
    assert config.load_profile("local").launch.python == sys.executable


def test_a_named_launcher_or_a_remote_host_is_left_alone() -> None:
    named = config.parse_profile("a", {"launch": {"python": "/opt/py/bin/python"}}, "test")
    assert named.launch.python == "/opt/py/bin/python"
    assert "launch.python of the profile" in named.interpreter_note
    venv = config.parse_profile("b", {"launch": {"venv": "/opt/venv"}}, "test")
    assert venv.launch.python is None and "/opt/venv/bin/python" in venv.interpreter_note
    remote = config.parse_profile("c", {"ssh": {"destination": "ops@gpu1"}}, "test")
    assert remote.launch.python is None  # this interpreter is not on that host
    assert "PATH" in remote.interpreter_note


def test_hosts_show_names_the_interpreter(capsys) -> None:
    assert cli.main(["hosts", "show", "local"]) == 0
    out = capsys.readouterr().out
    assert f"# engine launcher: {sys.executable} (this console's own interpreter" in out
