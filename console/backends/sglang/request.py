"""SGLang's native `/generate` request (our engine speaks it too) and what its
`meta_info` says: completion tokens, verify steps (`spec_verify_ct`), finish reason, and
with `--enable-metrics` `decode_throughput`, from which the decode time follows."""

from __future__ import annotations

from typing import Any

from console.backends.request import RequestFigures, RequestSpec, finish_type
from console.backends.sglang.spec_fields import from_sglang_meta
from console.backends.wire import TimedResponse

ENDPOINT = "/generate"


def native_body(spec: RequestSpec, *, round_stats: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "sampling_params": {
            "temperature": 0,
            "max_new_tokens": spec.max_tokens,
            "ignore_eos": spec.ignore_eos,
        },
        "stream": spec.stream,
    }
    body["sampling_params"].update(native_sampling(spec))
    if spec.input_ids is not None:
        body["input_ids"] = list(spec.input_ids)
    else:
        body["text"] = spec.text
    if round_stats:
        body["return_round_stats"] = True  # our engine's own per-round record
    return body


def native_sampling(spec: RequestSpec) -> dict[str, Any]:
    """The sampling fields of `sampling_params` (the seed is SGLang's `sampling_seed`,
    which ours reads too); none beyond `temperature: 0` when greedy."""
    s = spec.sampling
    if s.greedy:
        return {}
    fields: dict[str, Any] = {"temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k}
    if spec.seed is not None:
        fields["sampling_seed"] = spec.seed
    return fields


def native_figures(response: TimedResponse) -> RequestFigures:
    meta = response.body.get("meta_info") or {}
    n = int(meta.get("completion_tokens") or 0)
    steps = meta.get("spec_verify_ct")
    decode_s = meta.get("decode_time")  # ours
    if decode_s is None and meta.get("decode_throughput") and n > 1:
        decode_s = (n - 1) / float(meta["decode_throughput"])  # SGLang --enable-metrics
    rounds = None
    if isinstance(meta.get("round_stats"), list):
        rounds = [
            [float(r["context_len"]), float(r["step_ms"]) / 1000.0, float(r["commit_len"])]
            for r in meta["round_stats"]
        ]
    return RequestFigures(
        completion_tokens=n,
        finish_reason=finish_type(meta.get("finish_reason")),
        prompt_tokens=meta.get("prompt_tokens"),
        verify_steps=int(steps) if steps else None,
        server_decode_s=float(decode_s) if decode_s else None,
        server_decode_source="server" if decode_s else None,
        server_ttft_s=meta.get("ttft"),
        text=str(response.body.get("text", "")),
        output_ids=response.body.get("output_ids"),
        rounds=rounds,
        spec=from_sglang_meta(meta),
    )


def native_stream_tokens(data: dict[str, Any], seen: int) -> int:
    """Tokens so far after one streamed event: its `meta_info.completion_tokens`."""
    return int((data.get("meta_info") or {}).get("completion_tokens") or 0)
