"""Flags from vLLM's own parser in both releases the console knows: 0.33 keeps it in
`vllm.entrypoints.common.cli_args`, 0.32 in `vllm.entrypoints.launchers.cli_args`; and a
`--speculative-config` edit is checked against the installed release's SpeculativeConfig
(its keys, its methods) before anything restarts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from console.backends import get_adapter
from console.config import HostProfile, LaunchProfile
from console.transport import LocalTransport
from tests.console.fixtures.capture_engines import venv_dir
from tests.console.fixtures.vllm_venv import BUILD_HINT, usable, venv_path

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

RELEASES = {
    # the parser-only install of 0.33.0 needs to be told its device (no GPU to find)
    "0.33.0": ("vllm.entrypoints.common.cli_args", {"VLLM_TARGET_DEVICE": "cpu"}),
    "0.32.0": ("vllm.entrypoints.launchers.cli_args", {}),
}


def _venv(release: str) -> Path:
    path = venv_dir("vllm") if release == "0.33.0" else venv_path()
    if not usable(path):
        how = "capture_engines.py venv" if release == "0.33.0" else BUILD_HINT
        if os.environ.get("CI") == "true":
            pytest.fail(f"no vLLM {release} venv at {path}; .ci/run builds it ({how})")
        pytest.skip(f"no vLLM {release} venv at {path}; build it with `{how}`")
    return path


@pytest.mark.parametrize("release", sorted(RELEASES))
async def test_each_releases_parser_and_speculative_config(release: str) -> None:
    module, env = RELEASES[release]
    profile = HostProfile(
        name=f"vllm-{release}", engine="vllm", port=8000,
        launch=LaunchProfile(venv=str(_venv(release)), env=env),
    )  # fmt: skip
    adapter, transport = get_adapter("vllm"), LocalTransport()
    found = await adapter.discover_schema(transport, profile)
    assert found.origin == "parser", found.fallback_reason
    assert f"vllm {release}'s own argparse parser ({module}.make_arg_parser" in found.schema.source
    assert {"speculative-config", "max-model-len", "host"} <= set(found.schema.flags)

    def config(**values: object) -> dict:
        return {"model": "/m", "speculative-config": json.dumps(values)}

    ok = await adapter.check_flags(transport, profile, found, config(method="dflash", model="/d"))
    assert ok is not None and ok.ok, ok
    typo = await adapter.check_flags(transport, profile, found, config(method="dflsh"))
    assert typo is not None and not typo.ok and "did you mean 'dflash'" in typo.error
    assert typo.stage == "validate"
    key = await adapter.check_flags(transport, profile, found, config(num_spec_tokens=3))
    assert key is not None and not key.ok
    assert "has no key 'num_spec_tokens'; did you mean 'num_speculative_tokens'" in key.error
