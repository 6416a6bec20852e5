"""vLLM live samples carry a decode context (so live `diagnose` works), and a measured
request's TTFT comes from vLLM's own histogram."""

from __future__ import annotations

import pytest

from console.backends.vllm.live import sample_from_scrapes
from console.backends.vllm.request import server_ttft
from console.backends.wire import parse_metrics

INFO = 'vllm:cache_config_info{block_size="128",engine="0",kv_cache_size_tokens="209664"} 1.0\n'


def _page(
    *, generated: float, drafts: float, accepted: float, prompts: float, prompt_sum: float,
    gen_sum: float, running: float, usage: float, itl: float, ttft: tuple[float, float],
) -> str:  # fmt: skip
    return INFO + "".join(
        f"{name} {value}\n"
        for name, value in (
            ("vllm:generation_tokens_total", generated),
            ("vllm:spec_decode_num_drafts_total", drafts),
            ("vllm:spec_decode_num_accepted_tokens_total", accepted),
            ("vllm:request_prompt_tokens_count", prompts),
            ("vllm:request_prompt_tokens_sum", prompt_sum),
            ("vllm:request_generation_tokens_count", prompts),
            ("vllm:request_generation_tokens_sum", gen_sum),
            ("vllm:num_requests_running", running),
            ("vllm:kv_cache_usage_perc", usage),
            ("vllm:inter_token_latency_seconds_sum", itl),
            ("vllm:inter_token_latency_seconds_count", drafts),
            ("vllm:time_to_first_token_seconds_count", ttft[0]),
            ("vllm:time_to_first_token_seconds_sum", ttft[1]),
        )
    )


BEFORE = _page(generated=0, drafts=0, accepted=0, prompts=0, prompt_sum=0, gen_sum=0,
               running=0, usage=0, itl=0, ttft=(0, 0))  # fmt: skip


def test_finished_requests_give_the_exact_decode_context() -> None:
    after = _page(generated=400, drafts=50, accepted=348, prompts=2, prompt_sum=600, gen_sum=400,
                  running=0, usage=0, itl=0.25, ttft=(2, 0.07))  # fmt: skip
    sample = sample_from_scrapes(parse_metrics(BEFORE, t=0.0), parse_metrics(after, t=2.0))
    assert sample is not None
    # (600 + 400 / 2) / 2 requests: prompt plus half the output, as a measured request's
    assert sample.context_tokens == 400 and sample.note == ""
    assert sample.commit_len == pytest.approx(1 + 348 / 50)


def test_a_request_still_running_gives_the_kv_cache_in_use() -> None:
    after = _page(generated=100, drafts=12, accepted=88, prompts=0, prompt_sum=0, gen_sum=0,
                  running=1, usage=0.00244140625, itl=0.05, ttft=(1, 0.03))  # fmt: skip
    sample = sample_from_scrapes(parse_metrics(BEFORE, t=0.0), parse_metrics(after, t=2.0))
    assert sample is not None and sample.context_tokens == 512  # 4 blocks of 128
    assert "KV cache" in sample.note


def test_ttft_is_the_histograms_delta_for_exactly_one_request() -> None:
    one = parse_metrics(
        _page(generated=200, drafts=25, accepted=183, prompts=1, prompt_sum=340, gen_sum=200,
              running=0, usage=0, itl=0.13, ttft=(1, 0.0303)), t=1.0,
    )  # fmt: skip
    two = parse_metrics(
        _page(generated=400, drafts=50, accepted=366, prompts=2, prompt_sum=680, gen_sum=400,
              running=0, usage=0, itl=0.26, ttft=(2, 0.0606)), t=2.0,
    )  # fmt: skip
    before = parse_metrics(BEFORE, t=0.0)
    assert server_ttft(before, one) == pytest.approx(0.0303)
    assert server_ttft(before, two) is None  # two first tokens: not one request's
    assert server_ttft(None, one) is None
