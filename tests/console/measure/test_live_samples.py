"""Log line -> sample and scrape pair -> sample, on each engine's real formats.

Ours: the `Decode batch` lines and `/metrics` pages of a real `specengine serve` process
(bundled weights, so speculation accepts tokens), checked against the request's own
server figures. SGLang and vLLM: their log f-strings (shared with test_logparse) and
expositions written by hand from their metric names and HELP/TYPE lines.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from console.analysis.records import LiveSample, RequestSample
from console.measure.live_samples import (
    WALL_CLOCK_NOTE,
    metrics_kind,
    sample_from_log_line,
    sample_from_request,
    sample_from_scrapes,
)
from console.service.engine_client import parse_metrics
from tests.console.backends.sglang.test_logparse import sglang_mixin_line
from tests.console.backends.vllm.test_logparse import vllm_line
from tests.ports import free_port

pytestmark = pytest.mark.timeout(180)


# -- our engine, for real ---------------------------------------------------------------


class Engine:
    def __init__(self, port: int, log: Path, proc: subprocess.Popen) -> None:
        self.port, self.log, self.proc = port, log, proc
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)

    def metrics_text(self) -> str:
        response = self.http.get("/metrics")
        assert response.status_code == 200
        return response.text

    def generate(self, n: int, text: str = "def fib(n):\n") -> dict:
        body = {
            "text": text,
            "sampling_params": {"max_new_tokens": n, "ignore_eos": True, "temperature": 0},
        }
        response = self.http.post("/generate", json=body)
        assert response.status_code == 200, response.text
        return response.json()["meta_info"]

    def decode_lines(self) -> list[str]:
        return [ln for ln in self.log.read_text().splitlines() if "Decode batch" in ln]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    pytest.importorskip("engine.serve.app", reason="engine server not available")
    port = free_port()
    log = tmp_path_factory.mktemp("live_engine") / "engine.log"
    argv = [sys.executable, "-m", "engine.cli", "serve", "--port", str(port),
            "--skip-server-warmup", "--decode-log-interval", "10"]  # fmt: skip
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)
    eng = Engine(port, log, proc)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                if eng.http.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the engine did not come up"
            time.sleep(0.2)
        yield eng
    finally:
        eng.http.close()
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_our_scrape_delta_matches_the_requests_own_figures(engine: Engine) -> None:
    before = parse_metrics(engine.metrics_text(), t=100.0)
    meta = engine.generate(400)
    after = parse_metrics(engine.metrics_text(), t=130.0)
    assert metrics_kind(after) == "builtin"

    sample = sample_from_scrapes(before, after)
    assert sample is not None and sample.source == "metrics" and sample.t == 130.0
    steps = meta["spec_verify_ct"]
    # Commit: committed / verify steps, the per-round mean the engine reports.
    assert sample.commit_len == pytest.approx(meta["spec_commit_mean"], rel=1e-9)
    assert sample.commit_len > 1.5, "speculation should accept tokens on the bundled weights"
    # Step time: the step histogram's sum over the rounds, i.e. the request's decode time.
    assert sample.step_time_s == pytest.approx(meta["decode_time"] / steps, rel=0.05)
    # tok/s is committed / busy time: the request's own decode rate, not 400 / 30 s of wall
    # time between the scrapes (the idle 30 s do not dilute it).
    assert sample.tok_s == pytest.approx(meta["decode_throughput"], rel=0.1)
    assert sample.tok_s == pytest.approx(sample.commit_len / sample.step_time_s)
    assert (sample.running, sample.queue) == (0, 0)  # scraped after the request ended
    assert sample.context_tokens is None  # nothing in the KV cache at that moment
    assert sample.batch == 1.0  # alone: a round is one request's round


def test_under_a_batch_of_4_the_scrape_is_the_sum_of_the_streams(engine: Engine) -> None:
    """Four requests decoded together: the interval's tok/s is the aggregate, the sum of
    the four streams' own decode rates (each the engine's per-request figure); commit is
    per stream and round, step the round's time, and batch x commit / step is the tok/s.
    The streams join a round or two apart, and a stream's own rate leaves out the rounds
    it was not in, so the sum runs a little above the aggregate: within 10%."""
    import concurrent.futures

    # One prompt four times: greedy, the four take the same rounds and end together, so
    # each stream's decode time is the batch's busy time but for the joins.
    before = parse_metrics(engine.metrics_text(), t=200.0)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        metas = list(pool.map(lambda _: engine.generate(600), range(4)))
    after = parse_metrics(engine.metrics_text(), t=230.0)
    sample = sample_from_scrapes(before, after)
    assert sample is not None and sample.batch is not None
    assert 2.5 < sample.batch <= 4.0, sample  # most rounds held all four
    streams = sum(m["decode_throughput"] for m in metas)
    assert sample.tok_s == pytest.approx(streams, rel=0.10), (sample.tok_s, streams)
    assert sample.tok_s == pytest.approx(sample.batch * sample.commit_len / sample.step_time_s)
    committed = sum(m["spec_commit_mean"] * m["spec_verify_ct"] for m in metas)
    steps = sum(m["spec_verify_ct"] for m in metas)
    assert sample.commit_len == pytest.approx(committed / steps, rel=1e-6)
    assert sample.per_stream_tok_s == pytest.approx(sample.tok_s / sample.batch)

    # Idle: two scrapes with no decoding in between give no sample, not a row of zeros.
    idle = parse_metrics(engine.metrics_text(), t=160.0)
    assert sample_from_scrapes(after, idle) is None


def test_our_decode_lines_become_log_samples(engine: Engine) -> None:
    seen = len(engine.decode_lines())
    engine.generate(300, text="The quick brown fox")
    deadline = time.monotonic() + 10
    while len(engine.decode_lines()) <= seen and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = engine.decode_lines()[seen:]
    assert lines, "a 300-token request at --decode-log-interval 10 logs decode lines"
    for line in lines:
        sample = sample_from_log_line(line, t=5.0)
        assert sample is not None and sample.source == "log" and sample.t == 5.0
        assert sample.running == 1 and sample.queue == 0
        assert sample.tok_s is not None and sample.tok_s > 0
        assert sample.commit_len is not None and 1.0 <= sample.commit_len <= 16.0
        assert sample.step_time_s == pytest.approx(sample.commit_len / sample.tok_s)
        assert sample.context_tokens is not None and sample.context_tokens > 0
    contexts = [sample_from_log_line(ln).context_tokens for ln in lines]  # type: ignore[union-attr]
    assert contexts == sorted(contexts)  # #token grows as the request decodes


def test_other_lines_are_not_samples() -> None:
    for line in (
        "[2026-11-29 09:03:13] The server is fired up and ready to roll!",
        'INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
        "Decode batch, #running-req: 1",  # truncated
        "",
    ):
        assert sample_from_log_line(line) is None


# -- SGLang -------------------------------------------------------------------------------


def test_sglang_decode_line() -> None:
    # sglang_mixin_line: #token 1234, accept len 6.53, gen throughput 512.30, queue 0.
    sample = sample_from_log_line(sglang_mixin_line(), t=1.0)
    assert sample == LiveSample(
        t=1.0, source="log", tok_s=512.3, commit_len=6.53, step_time_s=pytest.approx(6.53 / 512.3),
        context_tokens=1234, queue=0, running=1,
    )  # fmt: skip


def test_sglang_decode_line_without_speculation_is_one_token_per_step() -> None:
    sample = sample_from_log_line(sglang_mixin_line(spec=False, device="cpu"))
    assert sample is not None and sample.commit_len is None
    assert sample.step_time_s == pytest.approx(1 / 512.3)


SGLANG_LABELS = 'engine_type="unified",model_name="Qwen/Qwen3-8B",pp_rank="0",tp_rank="0"'


def sglang_exposition(*, tput: float, accept: float, used: int, running: int, queue: int) -> str:
    """`python/sglang/srt/metrics/collector.py` gauges, as prometheus_client prints them."""
    rows = [
        ("num_running_reqs", "The number of running requests.", running),
        ("num_used_tokens", "The number of used tokens.", used),
        ("token_usage", "The token usage.", used / 40960),
        ("gen_throughput", "The generation throughput (token/s).", tput),
        ("num_queue_reqs", "The number of requests in the waiting queue.", queue),
        ("spec_accept_length", "The average acceptance length of speculative decoding.", accept),
        ("spec_accept_rate", "The average acceptance rate of speculative decoding.", accept / 8),
    ]
    out = []
    for name, doc, value in rows:
        out += [
            f"# HELP sglang:{name} {doc}",
            f"# TYPE sglang:{name} gauge",
            f"sglang:{name}{{{SGLANG_LABELS}}} {float(value)}",
        ]
    out += [
        "# HELP sglang:generation_tokens_total Number of generation tokens processed.",
        "# TYPE sglang:generation_tokens_total counter",
        f"sglang:generation_tokens_total{{{SGLANG_LABELS}}} 12345.0",
    ]
    return "\n".join(out) + "\n"


def test_sglang_gauges_give_one_sample_per_refresh() -> None:
    a = parse_metrics(sglang_exposition(tput=80.0, accept=3.2, used=900, running=1, queue=0), 1.0)
    b = parse_metrics(sglang_exposition(tput=96.0, accept=4.0, used=1100, running=1, queue=2), 3.0)
    assert metrics_kind(b) == "sglang"
    sample = sample_from_scrapes(a, b)
    assert sample is not None
    assert (sample.t, sample.tok_s, sample.commit_len) == (3.0, 96.0, 4.0)
    assert sample.step_time_s == pytest.approx(4.0 / 96.0)
    assert (sample.context_tokens, sample.running, sample.queue) == (1100, 1, 2)
    assert "gauges" in sample.note
    # SGLang refreshes its gauges only when it logs a decode interval: unchanged gauges
    # (idle, or no new interval yet) are no new sample, whatever running says.
    c = parse_metrics(sglang_exposition(tput=96.0, accept=4.0, used=1100, running=0, queue=0), 5.0)
    assert sample_from_scrapes(b, c) is None


# -- vLLM ---------------------------------------------------------------------------------

VLLM_LABELS = 'engine="0",model_name="Qwen/Qwen3-8B"'


def vllm_exposition(
    *,
    generated: int,
    drafts: int,
    draft_tokens: int,
    accepted: int,
    itl_sum: float | None,
    itl_count: int,
    running: int,
    waiting: int,
) -> str:
    """vLLM V1 `/metrics` (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py)."""
    out = [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{VLLM_LABELS}}} {float(running)}",
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
        "# TYPE vllm:num_requests_waiting gauge",
        f"vllm:num_requests_waiting{{{VLLM_LABELS}}} {float(waiting)}",
        "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
        "# TYPE vllm:kv_cache_usage_perc gauge",
        f"vllm:kv_cache_usage_perc{{{VLLM_LABELS}}} 0.0123",
        "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
        "# TYPE vllm:generation_tokens_total counter",
        f"vllm:generation_tokens_total{{{VLLM_LABELS}}} {float(generated)}",
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f"vllm:spec_decode_num_drafts_total{{{VLLM_LABELS}}} {float(drafts)}",
        "# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.",
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
        f"vllm:spec_decode_num_draft_tokens_total{{{VLLM_LABELS}}} {float(draft_tokens)}",
        "# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.",
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
        f"vllm:spec_decode_num_accepted_tokens_total{{{VLLM_LABELS}}} {float(accepted)}",
    ]
    if itl_sum is not None:
        out += [
            "# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.",
            "# TYPE vllm:inter_token_latency_seconds histogram",
            f'vllm:inter_token_latency_seconds_bucket{{{VLLM_LABELS},le="0.01"}} 0.0',
            f'vllm:inter_token_latency_seconds_bucket{{{VLLM_LABELS},le="0.025"}} '
            f"{float(itl_count)}",
            f'vllm:inter_token_latency_seconds_bucket{{{VLLM_LABELS},le="+Inf"}} '
            f"{float(itl_count)}",
            f"vllm:inter_token_latency_seconds_count{{{VLLM_LABELS}}} {float(itl_count)}",
            f"vllm:inter_token_latency_seconds_sum{{{VLLM_LABELS}}} {itl_sum}",
        ]
    return "\n".join(out) + "\n"


def test_vllm_counter_deltas() -> None:
    kw = dict(draft_tokens=0, running=1, waiting=0)
    a = parse_metrics(vllm_exposition(generated=1000, drafts=300, accepted=600, itl_sum=6.0,
                                      itl_count=300, **kw), 10.0)  # fmt: skip
    # 100 drafts (steps), 250 accepted: commit 1 + 250/100 = 3.5; 100 iterations in 2.0 s.
    b = parse_metrics(vllm_exposition(generated=1350, drafts=400, accepted=850, itl_sum=8.0,
                                      itl_count=400, **kw), 40.0)  # fmt: skip
    assert metrics_kind(b) == "vllm"
    sample = sample_from_scrapes(a, b)
    assert sample is not None and sample.t == 40.0 and sample.note == ""
    assert sample.commit_len == pytest.approx(3.5)
    assert sample.step_time_s == pytest.approx(0.02)
    # 175 tok/s while decoding, although the 30 s between the scrapes saw only 350 tokens.
    assert sample.tok_s == pytest.approx(175.0)
    assert (sample.running, sample.queue, sample.context_tokens) == (1, 0, None)
    # Nothing generated in between: no sample.
    assert sample_from_scrapes(b, b) is None


def test_vllm_without_latency_histogram_falls_back_to_wall_time_and_says_so() -> None:
    kw = dict(draft_tokens=0, itl_sum=None, itl_count=0, running=1, waiting=3)
    a = parse_metrics(vllm_exposition(generated=0, drafts=0, accepted=0, **kw), 0.0)
    b = parse_metrics(vllm_exposition(generated=200, drafts=50, accepted=100, **kw), 2.0)
    sample = sample_from_scrapes(a, b)
    assert sample is not None
    assert sample.tok_s == pytest.approx(100.0) and sample.commit_len == pytest.approx(3.0)
    assert sample.step_time_s == pytest.approx(0.03)
    assert sample.note == WALL_CLOCK_NOTE and sample.queue == 3


def test_counters_going_back_mean_a_restart_not_a_sample() -> None:
    kw = dict(draft_tokens=0, itl_count=10, running=0, waiting=0)
    a = parse_metrics(vllm_exposition(generated=5000, drafts=900, accepted=1800, itl_sum=9.0,
                                      **kw), 0.0)  # fmt: skip
    b = parse_metrics(vllm_exposition(generated=40, drafts=10, accepted=20, itl_sum=0.2, **kw), 2.0)
    assert sample_from_scrapes(a, b) is None
    # Different engines (a scrape of another port, say) are never subtracted either.
    sgl = parse_metrics(sglang_exposition(tput=1.0, accept=2.0, used=3, running=1, queue=0), 4.0)
    assert sample_from_scrapes(b, sgl) is None


def test_vllm_spec_decoding_line_gives_commit_only() -> None:
    line = vllm_line(3.4567, 120.5, 300.25, 245, 600, [0.812, 0.655, 0.5], 40.83)
    sample = sample_from_log_line(line, t=2.0)
    assert sample == LiveSample(t=2.0, source="log", commit_len=3.46)
    # An interval in which nothing was drafted says nothing.
    assert sample_from_log_line(vllm_line(0.0, 0.0, 0.0, 0, 0, [], float("nan"))) is None


def test_vllm_throughput_line_gives_wall_clock_tok_s_and_queue() -> None:
    # vLLM 0.33's loggers.py f-string, with the values a busy server prints
    line = (
        "INFO 11-29 10:00:05 [loggers.py:257] Engine 000: Avg prompt throughput: 1234.5 "
        "tokens/s, Avg generation throughput: 987.6 tokens/s, Running: 3 reqs, Waiting: 7 "
        "reqs, GPU KV cache usage: 41.2%, Prefix cache hit rate: 12.5%"
    )
    sample = sample_from_log_line(line, t=3.0)
    assert sample == LiveSample(
        t=3.0, source="log", tok_s=987.6, queue=7, running=3, note=WALL_CLOCK_NOTE
    )
    idle = line.replace("987.6", "0.0")
    assert sample_from_log_line(idle) is None  # an idle interval is no sample


def test_old_vllm_spec_line_commit_from_per_position_count() -> None:
    # Without a printed mean: 3 positions -> 600 drafted tokens are 200 drafts.
    line = vllm_line(0.0, 0.0, 0.0, 245, 600, [0.8, 0.4, 0.025], 40.8)
    line = line.replace("Mean acceptance length: 0.00, ", "")
    sample = sample_from_log_line(line)
    assert sample is not None and sample.commit_len == pytest.approx(1 + 245 / 200)


# -- the console's own requests -----------------------------------------------------------


def request_sample(**over: object) -> RequestSample:
    base: dict[str, object] = dict(
        engine="builtin", endpoint="/generate", text_type="code", prompt_id="fib",
        context_tokens=512, max_tokens=256, ignore_eos=True, streamed=False, flags_hash="abc",
        completion_tokens=256, finish_reason="length", latency_s=1.2, ttft_s=None,
        decode_time_s=1.0, decode_source="server", verify_steps=60, decode_tok_s=255.0,
        commit_len=4.25, step_time_s=1.0 / 60, decode_context=640.0, t=1234.5,
    )  # fmt: skip
    base.update(over)
    return RequestSample(**base)  # type: ignore[arg-type]


def test_request_sample_conversion() -> None:
    live = sample_from_request(request_sample())
    assert live == LiveSample(
        t=1234.5, source="request", tok_s=255.0, commit_len=4.25, step_time_s=1.0 / 60,
        context_tokens=640,
    )  # fmt: skip
    # Without a decode context, the prompt length stands in; a flagged sample says why.
    live = sample_from_request(request_sample(decode_context=None, flagged="degenerate"))
    assert live.context_tokens == 512 and live.note == "degenerate"
