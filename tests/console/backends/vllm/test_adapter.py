"""The vLLM adapter: speculation lives in `--speculative-config` JSON (or the older
`--speculative-model`), requests go to /v1/completions with /metrics scraped around
them, and `vllm serve` on a build without package metadata gets one sentence."""

from __future__ import annotations

import json

from console.backends import get_adapter
from console.backends.request import RequestSpec
from console.config import HostProfile, LaunchProfile

ADAPTER = get_adapter("vllm")
DFLASH = json.dumps({"method": "dflash", "model": "/d", "num_speculative_tokens": 15})


def test_speculation_from_the_config_json_and_the_older_flags() -> None:
    spec = ADAPTER.speculation({"model": "/m", "speculative-config": DFLASH})
    assert (spec.method, spec.draft_tokens, spec.drafter) == ("dflash", 15, "/d")
    old = ADAPTER.speculation({"speculative-model": "/d", "num-speculative-tokens": 4})
    assert (old.method, old.draft_tokens) == ("draft_model", 4)
    assert ADAPTER.speculation({"model": "/m"}).method is None
    flags = {"model": "/m", "speculative-config": DFLASH, "num-speculative-tokens": 4}
    assert ADAPTER.speculation_off(flags) == {
        "speculative-config": None,
        "num-speculative-tokens": None,
    }


def test_a_profile_drafter_goes_into_the_config_json() -> None:
    profile = HostProfile(
        name="v", engine="vllm", port=8000, model_path="/m", draft_model_path="/d",
        flags={"speculative-config": '{"num_speculative_tokens": 7}'},
        launch=LaunchProfile(venv="/venv"),
    )  # fmt: skip
    flags = ADAPTER.initial_flags(profile)
    assert json.loads(str(flags["speculative-config"])) == {
        "num_speculative_tokens": 7, "method": "dflash", "model": "/d",
    }  # fmt: skip
    assert ADAPTER.launcher(profile.launch) == [
        "/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server",
    ]  # fmt: skip


def test_requests_are_completions_measured_by_counter_deltas() -> None:
    body = ADAPTER.request_body(RequestSpec("code", "c", 9, input_ids=(5, 6)), "target")
    assert body["prompt"] == [5, 6] and body["model"] == "target" and body["max_tokens"] == 9
    assert ADAPTER.request_endpoint == "/v1/completions" and ADAPTER.scrapes_around_requests
    assert ADAPTER.version_path == "/version"


def test_the_metadata_failure_of_vllm_serve_is_named() -> None:
    tail = [
        '  File ".../vllm/entrypoints/cli/main.py", line 27, in main',
        "importlib.metadata.PackageNotFoundError: No package metadata was found for vllm",
    ]
    sentence = ADAPTER.launch_problem(tail)
    assert sentence is not None and "vllm.entrypoints.openai.api_server" in sentence
    assert ADAPTER.launch_problem(["RuntimeError: Engine core initialization failed."]) is None


def test_new_services_bind_loopback_and_a_wider_bind_is_named() -> None:
    plain = HostProfile(name="v", engine="vllm", port=8000, launch=LaunchProfile(venv="/v"))
    assert ADAPTER.initial_flags(plain)["host"] == "127.0.0.1"
    assert not ADAPTER.bind(ADAPTER.initial_flags(plain)).wide
    # Without --host vLLM binds every interface (launcher.py: (args.host or "", port)).
    unset = ADAPTER.bind({"model": "/m"})
    assert unset.wide and not unset.from_flag and "every interface" in (unset.warning() or "")
    open_profile = HostProfile(
        name="v", engine="vllm", port=8000, flags={"host": "0.0.0.0"}, launch=LaunchProfile()
    )
    flags = ADAPTER.initial_flags(open_profile)
    assert flags["host"] == "0.0.0.0" and ADAPTER.bind(flags).wide
