"""Host profiles: TOML files in an isolated config dir, validated with one-key errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from console import config
from console.errors import ConfigError


def test_builtin_local_profile_runs_the_bundled_engine() -> None:
    local = config.load_profile("local")
    assert local.engine == "builtin" and local.is_local
    assert local.supervisor.kind == "process" and local.port == 30000
    assert local.launch.python == sys.executable
    assert "local" in config.list_profile_names()


def test_config_dir_follows_the_environment(_isolated_config: Path) -> None:
    assert config.config_dir() == _isolated_config


def test_add_show_list_remove_round_trip(_isolated_config: Path) -> None:
    profile = config.parse_profile(
        "gpu1",
        {
            "engine": "sglang",
            "ssh": {"destination": "ops@gpu1:2222"},
            "launch": {
                "venv": "/opt/sglang",
                "env": {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"},
            },
            "supervisor": {"kind": "systemd", "unit": "sglang"},
            "model_path": "/models/Qwen3-8B",
            "flags": {"--speculative-algorithm": "DFLASH", "page_size": 1},
        },
        "test",
    )
    path = config.save_profile(profile)
    assert path == _isolated_config / "hosts" / "gpu1.toml"
    loaded = config.load_profile("gpu1")
    assert loaded == profile
    assert loaded.flags == {"speculative-algorithm": "DFLASH", "page-size": 1}
    assert loaded.unit_name == "sglang.service"
    assert config.list_profile_names() == ["gpu1", "local"]
    with pytest.raises(ConfigError, match="already exists"):
        config.save_profile(profile)
    config.remove_profile("gpu1")
    assert config.list_profile_names() == ["local"]


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('engine = "tgi"\n', "engine"),
        ("port = 70000\n", "port"),
        ('[launch]\npython = "/x"\nvenv = "/y"\n', "launch"),
        ('[ssh]\ndestination = ""\n', "ssh.destination"),
        ('colour = "red"\n', "colour"),
        ('[supervisor]\nkind = "docker"\n', "supervisor.kind"),
        ('[launch.env]\n"BAD NAME" = "1"\n', "launch.env"),
    ],
)
def test_bad_profile_error_names_the_key(_isolated_config: Path, toml: str, key: str) -> None:
    hosts = _isolated_config / "hosts"
    hosts.mkdir(parents=True)
    (hosts / "bad.toml").write_text(toml)
    with pytest.raises(ConfigError) as err:
        config.load_profile("bad")
    message = str(err.value)
    assert f"invalid: {key}:" in message and "\n" not in message


def test_unknown_and_unparsable_profiles(_isolated_config: Path) -> None:
    with pytest.raises(ConfigError, match="No host profile named 'nope'"):
        config.load_profile("nope")
    hosts = _isolated_config / "hosts"
    hosts.mkdir(parents=True)
    (hosts / "broken.toml").write_text("engine = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config.load_profile("broken")
    with pytest.raises(ConfigError, match="built in"):
        config.remove_profile("local")


def test_local_toml_overrides_the_builtin_profile(_isolated_config: Path) -> None:
    hosts = _isolated_config / "hosts"
    hosts.mkdir(parents=True)
    (hosts / "local.toml").write_text("port = 31000\n")
    assert config.load_profile("local").port == 31000
