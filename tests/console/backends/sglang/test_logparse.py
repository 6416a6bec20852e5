"""SGLang's log lines: older formats as written below, SGLang 0.5.23's evaluated from the
f-strings cut from its source (`fixtures/engines/sglang-0.5.23/log_formats.json`)."""

from __future__ import annotations

from console.backends import get_backend
from console.backends.logparse import (
    DecodeBatchLine,
    PrefillStats,
    parse_sglang_decode,
    parse_sglang_prefill,
)
from tests.console.backends.test_logparse import _formats, _pick, render

PREFIX = "[2026-04-01 12:00:00 TP0] "  # SGLang logger format "[%(asctime)s{prefix}] %(message)s"


def sglang_mixin_line(*, spec: bool = True, iter_msg: str = "", device: str = "cuda") -> str:
    """SGLang `scheduler_metrics_mixin.log_decode_stats`, current version."""
    num_used, token_usage, num_running_reqs = 1234, 0.0123, 1
    spec_accept_length, spec_accept_rate = 6.534, 0.4081
    can_run_cuda_graph, last_gen_throughput, waiting = True, 512.3, 0
    token_usage_msg = f"#token: {num_used}, token usage: {token_usage:.2f}, "
    msg = f"Decode batch{iter_msg}, #running-req: {num_running_reqs}, {token_usage_msg}"
    if spec:
        msg += f"accept len: {spec_accept_length:.2f}, accept rate: {spec_accept_rate:.2f}, "
    msg += (
        f"{'cuda graph' if device == 'cuda' else 'cpu graph'}: {can_run_cuda_graph}, "
        f"gen throughput (token/s): {last_gen_throughput:.2f}, "
        f"#queue-req: {waiting}, "
    )
    return PREFIX + msg


def test_sglang_current_decode_line() -> None:
    stats = parse_sglang_decode(sglang_mixin_line())
    assert stats == DecodeBatchLine(
        running_req=1, tokens=1234, token_usage=0.01, accept_len=6.53, accept_rate=0.41,
        gen_throughput=512.3, queue_req=0, graph=True, forward_ct=None,
    )  # fmt: skip


def test_sglang_decode_line_without_spec_and_with_forward_iters() -> None:
    stats = parse_sglang_decode(sglang_mixin_line(spec=False, iter_msg=" [4711]", device="cpu"))
    assert stats is not None
    assert stats.accept_len is None and stats.accept_rate is None
    assert stats.forward_ct == 4711 and stats.graph is True


def test_sglang_old_scheduler_line_has_a_period_and_no_accept_rate() -> None:
    n, num_used, u, x, b, t, q = 2, 900, 0.0456, 3.25, False, 88.0, 3
    line = f"Decode batch. #running-req: {n}, #token: {num_used}, token usage: {u:.2f}, "
    line += f"accept len: {x:.2f}, "
    line += (
        f"cuda graph: {b}, gen throughput (token/s): {t:.2f}, #queue-req: {q}"  # no trailing comma
    )
    stats = parse_sglang_decode(PREFIX + line)
    assert stats is not None
    assert (stats.running_req, stats.tokens, stats.accept_len, stats.accept_rate) == (
        2,
        900,
        3.25,
        None,
    )
    assert (stats.gen_throughput, stats.queue_req, stats.graph) == (88.0, 3, False)


def test_sglang_hybrid_model_reports_full_tokens() -> None:
    line = (
        "Decode batch, #running-req: 1, #full token: 4096, full token usage: 0.25, "
        "#swa token: 512, swa token usage: 0.10, accept len: 2.00, accept rate: 0.50, "
        "cuda graph: True, gen throughput (token/s): 40.00, #queue-req: 0"
    )
    stats = parse_sglang_decode(line)
    assert stats is not None and stats.tokens == 4096 and stats.token_usage == 0.25


def test_not_decode_lines() -> None:
    assert parse_sglang_decode("Prefill batch. #new-seq: 1, #new-token: 20") is None
    assert parse_sglang_decode("Decode batch, #running-req: 1") is None  # truncated


SGL_VALUES = {
    "iter_msg": "", "num_running_reqs": 48, "can_run_cuda_graph": True,
    "self._graph_backend_label": "cuda graph", "last_gen_throughput": 123456.789,
    "len(self.scheduler.waiting_queue)": 7, "spec_accept_length": 6.5349,
    "spec_accept_rate": 0.40816, "full_num_used": 1234567, "full_token_usage": 0.9876,
    "num_new_seqs": 3, "log_input_tokens": 200000, "log_hit_tokens": 1024,
    "prefill_stats.num_running_reqs.total": 12, "num_pending_tokens": 5,
    "last_input_throughput": 98765.4321, "batch_iter": 4711,
}  # fmt: skip


def _sglang_line(kind: str, *, spec: bool = True, values: dict | None = None) -> str:
    f = _formats("sglang-0.5.23")
    vals = {**SGL_VALUES, **(values or {})}
    usage = ", ".join(
        [render(_pick(f[f"{kind}_usage"], "#token:" if kind == "decode" else "token usage"), vals)]
    )
    vals["token_usage_msg"] = usage + ", "
    if kind == "decode":
        msg = render(_pick(f["decode"], "Decode batch"), vals)
        if spec:
            msg += render(_pick(f["decode"], "accept len:"), vals)
        msg += render(_pick(f["decode"], "gen throughput"), vals)
    else:
        msg = render(_pick(f["prefill"], "Prefill batch"), vals)
        msg += render(_pick(f["prefill"], "_graph_backend_label"), vals)
        msg += render(_pick(f["prefill"], "input throughput"), vals)
    return PREFIX + msg


def test_sglang_0_5_23_decode_line_from_its_f_strings() -> None:
    line = _sglang_line("decode")
    assert not line.endswith(", ")  # 0.5.23 ends at #queue-req
    stats = parse_sglang_decode(line)
    assert stats == DecodeBatchLine(
        running_req=48, tokens=1234567, token_usage=0.99, accept_len=6.53, accept_rate=0.41,
        gen_throughput=123456.79, queue_req=7, graph=True, forward_ct=None,
    )  # fmt: skip
    iters = parse_sglang_decode(
        _sglang_line(
            "decode",
            spec=False,
            values={"iter_msg": " [4711]", "self._graph_backend_label": "npu graph"},
        )
    )
    assert iters is not None and iters.forward_ct == 4711 and iters.accept_len is None
    assert iters.graph is True


def test_sglang_0_5_23_prefill_line_from_its_f_strings() -> None:
    line = _sglang_line("prefill")
    assert "Prefill batch, #new-seq: 3, #new-token: 200000" in line
    stats = parse_sglang_prefill(line)
    assert stats == PrefillStats(
        new_seq=3, new_token=200000, cached_token=1024, token_usage=0.99, running_req=12,
        queue_req=7, input_throughput=98765.43, graph=True, forward_ct=None,
    )  # fmt: skip
    assert isinstance(get_backend("sglang").parse_log(line), PrefillStats)
    # The older scheduler's prefill line: a period, no graph, no throughput.
    old = (
        "Prefill batch. #new-seq: 1, #new-token: 20, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0, "
    )
    assert parse_sglang_prefill(old) == PrefillStats(1, 20, 0, 0.0, 0, 0, None, None, None)
    assert (
        parse_sglang_decode(line) is None and parse_sglang_prefill(_sglang_line("decode")) is None
    )
