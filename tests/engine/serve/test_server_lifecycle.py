"""Command line and process lifecycle of `specengine serve`: --help, bad flags, SIGTERM."""

from __future__ import annotations

import re
import subprocess
import threading

import httpx
import pytest

from tests.engine.serve._server_harness import (
    REPO,
    SGLANG_DECODE_RE,
    ServerProcess,
    serve_cmd,
    sse_events,
)

pytestmark = pytest.mark.timeout(300)
# A test that starts `specengine serve` (seconds each) runs in the slow tier; the
# argparser and help tests stay in the fast one, which keeps within 4 min.
starts_a_server = pytest.mark.slow

FLAGS = [
    "--model-path",
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--speculative-num-draft-tokens",
    "--speculative-ddtree-budget",
    "--speculative-draft-window-size",
    "--context-length",
    "--reasoning-parser",
    "--tool-call-parser",
    "--host",
    "--port",
    "--api-key",
    "--served-model-name",
    "--decode-log-interval",
    "--device",
    "--dtype",
]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        serve_cmd(*args), cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def test_help_lists_every_flag():
    r = run_cli("--help")
    assert r.returncode == 0
    text = r.stdout
    for flag in FLAGS:
        assert re.search(rf"^  {re.escape(flag)}\b", text, re.M), flag
    assert "{NONE,DFLASH,DDTREE}" in text
    assert "--port PORT" in text
    # One "(default: ...)" per flag, help's own -h aside.
    flat = " ".join(text.split())
    assert flat.count("(default:") >= len(FLAGS)
    assert "(default: 30000)" in flat and "(default: DDTREE)" in flat and "(default: 40)" in flat
    # The deprecated alias is accepted but hidden, as in SGLang.
    assert "--speculative-dflash-draft-window-size" not in text


def test_specengine_entry_point_help(capsys):
    from engine.cli import main

    assert main(["--help"]) == 0
    assert main([]) == 2
    assert main(["bogus"]) == 2
    with pytest.raises(SystemExit) as exc:  # train delegates to engine.train.cli.main
        main(["train", "--help"])
    assert exc.value.code == 0
    assert "usage: specengine train" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        ["--speculative-algorithm", "MEDUSA"],
        ["--speculative-num-draft-tokens", "8", "--speculative-draft-window-size", "4"],
        ["--port", "99999"],
        ["--decode-log-interval", "0"],
        ["--context-length", "lots"],
        ["--no-such-flag"],
    ],
    ids=[
        "unknown-algorithm",
        "window-below-block",
        "bad-port",
        "zero-interval",
        "non-int-context",
        "unknown-flag",
    ],
)
def test_bad_command_line_exits_with_one_sentence(args):
    r = run_cli(*args)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], r.stderr


@starts_a_server
def test_bad_flags_against_weights(tiny_pair, tmp_path):
    target, drafter = tiny_pair
    common = ["--model-path", str(target), "--speculative-draft-model-path", str(drafter)]
    cases = [
        (common + ["--speculative-draft-window-size", "2"], "window"),  # below the drafter block
        (common + ["--context-length", "1000000"], "context"),
        (["--model-path", str(tmp_path / "nowhere")], "does not exist"),
        (
            [
                "--model-path",
                str(target),
                "--speculative-draft-model-path",
                str(tmp_path / "nodrafter"),
            ],
            "does not exist",
        ),
    ]
    for args, word in cases:
        r = run_cli(*args, "--port", "1")
        assert r.returncode != 0, args
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "error:" in lines[0] and word in lines[0], r.stderr
        assert "Traceback" not in r.stdout + r.stderr


@starts_a_server
def test_sigterm_mid_request_exits_zero(tiny_pair):
    target, drafter = tiny_pair
    srv = ServerProcess(
        target,
        drafter,
        "--speculative-dflash-draft-window-size",
        "16",
        "--decode-log-interval",
        "2",
    )
    try:
        srv.wait_ready()
        log = srv.log()
        assert "deprecated" in log and "--speculative-draft-window-size" in log
        with srv.client() as c:
            assert c.get("/get_server_info").json()["speculative_draft_window_size"] == 16
        events: list = []
        started = threading.Event()

        def long_stream():
            try:
                with (
                    httpx.Client(base_url=srv.base, timeout=60) as c,
                    c.stream(
                        "POST",
                        "/v1/completions",
                        json={
                            "prompt": "x = ",
                            "max_tokens": 480,
                            "ignore_eos": True,
                            "stream": True,
                        },
                    ) as r,
                ):
                    lines = []
                    for line in r.iter_lines():
                        lines.append(line)
                        started.set()
                    events.extend(sse_events(lines))
            except httpx.HTTPError:
                pass
            finally:
                started.set()

        t = threading.Thread(target=long_stream)
        t.start()
        assert started.wait(60)
        code = srv.terminate(timeout=30)
        t.join(30)
        assert code == 0, srv.log()
        assert not t.is_alive()
        # The stream ended (aborted or finished), never hung.
        if events:
            assert events[-1] == "[DONE]"
    finally:
        srv.close()


@starts_a_server
def test_plain_autoregressive_server(tiny_pair):
    target, _ = tiny_pair
    srv = ServerProcess(
        target,
        None,
        "--speculative-algorithm",
        "NONE",
        "--decode-log-interval",
        "3",
        "--skip-server-warmup",
    )
    try:
        srv.wait_ready()
        with srv.client() as c:
            r = c.post(
                "/generate",
                json={"text": "a", "sampling_params": {"max_new_tokens": 10, "ignore_eos": True}},
            )
            assert r.status_code == 200, r.text
            meta = r.json()["meta_info"]
            assert meta["completion_tokens"] == 10 and meta["spec_verify_ct"] == 9
            info = c.get("/get_server_info").json()
            assert info["speculative_algorithm"] == "NONE"
        lines = [ln for ln in srv.log().splitlines() if "Decode batch" in ln]
        assert lines and all(re.search(SGLANG_DECODE_RE, ln) for ln in lines)
        assert "accept len" not in lines[0]  # as SGLang without speculative decoding
        assert srv.terminate() == 0
    finally:
        srv.close()
