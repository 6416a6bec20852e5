"""Host profiles: one TOML file per host under the user config dir.

`<config dir>/hosts/<name>.toml`, where the config dir is platformdirs' user config dir
for "specconsole", or `$SPECCONSOLE_CONFIG_DIR` (tests and CI point it at a temp dir).
The `local` profile is built in (the bundled engine on this machine); a `local.toml`
file overrides it.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Literal

import platformdirs
import tomli_w
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from console.errors import ConfigError
from console.sampling import Sampling

EngineKind = Literal["builtin", "sglang", "vllm"]
FlagValue = str | int | float | bool

LOCAL = "local"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def normalize_flag_name(name: str) -> str:
    """`--context-length`, `context_length` and `context-length` are one flag."""
    return name.strip().lstrip("-").replace("_", "-")


class _Strict(BaseModel):
    # Unknown keys are errors: a typo in a profile must not be silently ignored.
    model_config = ConfigDict(extra="forbid")


class SSHProfile(_Strict):
    destination: str = Field(min_length=1)  # alias in ~/.ssh/config, host, user@host[:port]
    config: list[str] | None = None  # ssh config files; default ~/.ssh/config
    known_hosts: list[str] | None = None  # default: UserKnownHostsFile or ~/.ssh/known_hosts
    identity_file: list[str] | None = None  # default: IdentityFile from config, ~/.ssh/id_*
    use_agent: bool = True
    connect_timeout: float = Field(default=15.0, gt=0)
    keepalive_interval: float = Field(default=15.0, gt=0)


class LaunchProfile(_Strict):
    """How to start the engine. Exactly one of python, venv or command (or none: `python3`)."""

    python: str | None = None  # interpreter that has the engine installed
    venv: str | None = None  # a virtualenv dir; uses <venv>/bin/python
    command: list[str] | str | None = None  # full launcher, e.g. ["vllm", "serve"]
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None

    @model_validator(mode="after")
    def _one_launcher(self) -> LaunchProfile:
        given = [k for k in ("python", "venv", "command") if getattr(self, k)]
        if len(given) > 1:
            raise ValueError(f"set only one of python, venv, command (got {', '.join(given)})")
        return self

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        for key in env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise ValueError(f"{key!r} is not a valid environment variable name")
        return env


class SupervisorProfile(_Strict):
    kind: Literal["process", "systemd"] = "process"
    unit: str | None = None  # systemd unit name; default specconsole-<host>.service
    scope: Literal["system", "user"] = "system"
    sudo: bool = False  # prefix systemctl/journalctl and unit writes with `sudo -n`
    mode: Literal["unit", "dropin"] = "unit"  # own the whole unit, or override ExecStart


class BaselineProfile(_Strict):
    """The short baseline `set --baseline` (and the TUI's apply) runs before and after a
    change. A change that matters at long context (a draft window, a context length)
    cannot show at 256 tokens, so by default it also measures one near the context
    length: 256 and 90% of the engine's context length, clamped so the output fits."""

    contexts: list[int] | None = None  # prompt lengths; None: 256 and ~90% of the limit
    output: int = Field(default=96, ge=1, le=65536)  # tokens generated per request
    text_types: list[str] = Field(default_factory=lambda: ["code", "prose"])
    repeat: int = Field(default=3, ge=1, le=100)

    @field_validator("contexts")
    @classmethod
    def _contexts(cls, contexts: list[int] | None) -> list[int] | None:
        if contexts is None:
            return None
        if not contexts:
            raise ValueError("give at least one context, or leave it out for the default")
        bad = [c for c in contexts if c < 1]
        if bad:
            raise ValueError(f"contexts are prompt lengths of at least 1 token, not {bad[0]}")
        return sorted(set(contexts))

    @field_validator("text_types")
    @classmethod
    def _types(cls, kinds: list[str]) -> list[str]:
        kinds = [k.strip() for k in kinds if k.strip()]
        if not kinds:
            raise ValueError("give at least one text type (e.g. code, prose)")
        return list(dict.fromkeys(kinds))


DEFAULT_STATE_DIR = "~/.local/state/specconsole"  # XDG's default state home, on any host


class HostProfile(_Strict):
    name: str
    engine: EngineKind = "builtin"
    ssh: SSHProfile | None = None  # None: this machine
    launch: LaunchProfile = Field(default_factory=LaunchProfile)
    supervisor: SupervisorProfile = Field(default_factory=SupervisorProfile)
    port: int = Field(default=30000, ge=1, le=65535)
    model_path: str | None = None
    draft_model_path: str | None = None
    service: str | None = None  # service name on the host; default: the profile name
    # On the host; on this machine the default honours XDG_STATE_HOME (service/launch.py).
    state_dir: str = DEFAULT_STATE_DIR
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    baseline: BaselineProfile = Field(default_factory=BaselineProfile)
    # The sampling the service's traffic uses: every measurement on this host runs at it
    # (console/sampling.py); greedy by default, as every figure was before it existed.
    sampling: Sampling = Field(default_factory=Sampling)

    # True when `launch.python` was not given but filled in with this console's own
    # interpreter (see `_own_interpreter`); such a value is never written to a file.
    _python_implied: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _own_interpreter(self) -> HostProfile:
        # The bundled engine on this machine runs with the interpreter this console runs
        # with: that one has the engine installed beside the console. `python3` on PATH
        # is whatever a cron job, a unit or pipx puts first, often one without it ("No
        # module named 'engine'"). A profile that names its launcher keeps it.
        launch = self.launch
        if (
            self.ssh is None
            and self.engine == "builtin"
            and not (launch.python or launch.venv or launch.command)
        ):
            self.launch = launch.model_copy(update={"python": sys.executable})
            self._python_implied = True
        return self

    @property
    def interpreter_note(self) -> str:
        """Which interpreter (or launcher) starts the engine, and why that one."""
        launch = self.launch
        if self._python_implied:
            return f"{launch.python} (this console's own interpreter, same machine)"
        if launch.python:
            return f"{launch.python} (launch.python of the profile)"
        if launch.venv:
            return f"{launch.venv}/bin/python (launch.venv of the profile)"
        if launch.command:
            command = (
                launch.command if isinstance(launch.command, str) else " ".join(launch.command)
            )
            return f"{command} (launch.command of the profile)"
        return "python3 on the host's PATH (the profile names no launcher)"

    @field_validator("name", "service")
    @classmethod
    def _safe_name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME_RE.fullmatch(value):
            raise ValueError("use letters, digits, '.', '_' or '-' (at most 64)")
        return value

    @field_validator("flags")
    @classmethod
    def _flag_names(cls, flags: dict[str, FlagValue]) -> dict[str, FlagValue]:
        return {normalize_flag_name(k): v for k, v in flags.items()}

    @property
    def service_name(self) -> str:
        return self.service or self.name

    @property
    def is_local(self) -> bool:
        return self.ssh is None

    @property
    def unit_name(self) -> str:
        unit = self.supervisor.unit or f"specconsole-{self.service_name}"
        return unit if unit.endswith(".service") else unit + ".service"


def builtin_local_profile() -> HostProfile:
    """The bundled engine on this machine, run with this interpreter (filled in by
    `HostProfile._own_interpreter`, so it is never written into a saved profile)."""
    return HostProfile(name=LOCAL, engine="builtin", port=30000)


def config_dir() -> Path:
    override = os.environ.get("SPECCONSOLE_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir("specconsole"))


def hosts_dir() -> Path:
    return config_dir() / "hosts"


def _profile_path(name: str) -> Path:
    return hosts_dir() / f"{name}.toml"


def format_validation_error(source: str, exc: ValidationError) -> str:
    """One sentence naming the first bad key, e.g. `launch.python: Input should be ...`."""
    first = exc.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = len(exc.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{source} is invalid: {key}: {first['msg']}{tail}."


def parse_profile(name: str, data: dict, source: str) -> HostProfile:
    data = {**data, "name": data.get("name", name)}
    try:
        return HostProfile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc)) from None


def load_profile(name: str) -> HostProfile:
    path = _profile_path(name)
    if not path.exists():
        if name == LOCAL:
            return builtin_local_profile()
        known = ", ".join(list_profile_names())
        raise ConfigError(
            f"No host profile named {name!r} (known: {known}); "
            "add one with `specconsole hosts add`."
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Host profile {path} is not valid TOML: {exc}.") from None
    profile = parse_profile(name, data, f"Host profile {path}")
    if profile.name != name:
        raise ConfigError(
            f"Host profile {path} is invalid: name: must match the file name {name!r}."
        )
    return profile


def list_profile_names() -> list[str]:
    names = {p.stem for p in hosts_dir().glob("*.toml")} if hosts_dir().is_dir() else set()
    names.add(LOCAL)
    return sorted(names)


def profile_to_toml(profile: HostProfile) -> str:
    data = profile.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    data.pop("name", None)  # the file name is the name
    if profile._python_implied:
        # Filled in from whichever interpreter runs the console now; a file keeps none,
        # so the profile follows the console to a new virtualenv.
        data.get("launch", {}).pop("python", None)
        if not data.get("launch"):
            data.pop("launch", None)
    return tomli_w.dumps(data)


def save_profile(profile: HostProfile, *, overwrite: bool = False) -> Path:
    path = _profile_path(profile.name)
    if path.exists() and not overwrite:
        raise ConfigError(
            f"Host profile {profile.name!r} already exists at {path}; "
            "remove it first or edit the file."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(profile_to_toml(profile))
    os.replace(tmp, path)
    return path


def remove_profile(name: str) -> Path:
    path = _profile_path(name)
    if not path.exists():
        if name == LOCAL:
            raise ConfigError("The local profile is built in and cannot be removed.")
        raise ConfigError(f"No host profile named {name!r} to remove.")
    path.unlink()
    return path
