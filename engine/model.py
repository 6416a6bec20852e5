"""Qwen3-architecture causal LM (the verify target), loadable from HF-layout checkpoints.

RMSNorm, RoPE with configurable theta, grouped-query attention with per-head q/k RMSNorm,
SwiGLU MLP, tied or untied LM head. Weight names follow transformers' Qwen3ForCausalLM so
real checkpoints and our bundled one load the same way. `forward` takes explicit position
ids and an additive mask over [past + new] rows: tree verification needs both (siblings
share a position; each node sees only its ancestors).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from engine.kvcache import KVCache


@dataclass
class Qwen3Config:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int | None = None
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 4096
    eos_token_id: int | list[int] | None = None
    bos_token_id: int | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")

    @classmethod
    def from_dict(cls, d: dict) -> Qwen3Config:
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        rope = d.get("rope_parameters") or d.get("rope_scaling") or {}
        if "rope_theta" not in known and isinstance(rope, dict) and "rope_theta" in rope:
            known["rope_theta"] = rope["rope_theta"]
        return cls(**known, extra={k: v for k, v in d.items() if k not in names})

    @classmethod
    def from_file(cls, path: str | Path) -> Qwen3Config:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict_base(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        d.update(self.extra)
        d.setdefault("architectures", ["Qwen3ForCausalLM"])
        d.setdefault("model_type", "qwen3")
        d.setdefault("hidden_act", "silu")
        d.setdefault("attention_bias", False)
        d.setdefault("torch_dtype", "float32")
        return d


def join_weights(*linears: nn.Linear) -> torch.Tensor:
    """One [sum(out), in] weight for several Linear layers reading the same input, with each
    layer's weight re-pointed at its rows of it, so fusing does not double the memory.

    On CPU the joined weight is stored column-major (a transposed view of a contiguous
    [in, out] buffer), the layout oneDNN multiplies fastest (see `linear`).
    """
    weights = [lin.weight.detach() for lin in linears]
    joined = torch.cat(weights)
    if joined.device.type == "cpu":
        joined = joined.t().contiguous().t()
    row = 0
    for lin, w in zip(linears, weights, strict=True):
        lin.weight.data = joined[row : row + w.shape[0]]
        row += w.shape[0]
    return joined


# Rows from which `linear` hands a CPU matmul to oneDNN instead of MKL's sgemm.
ONEDNN_MIN_ROWS = 4


def _onednn_dtypes() -> tuple[torch.dtype, ...]:
    """The dtypes `linear` may hand to oneDNN here: bf16 only where this CPU has oneDNN's
    bf16 kernels (AVX-512 BW/VL/DQ or AVX-NE-CONVERT); elsewhere its weight reorder
    raises, so a bf16 load on such a CPU (an AVX2-only host) keeps F.linear."""
    if not torch.backends.mkldnn.is_available():
        return ()
    bf16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    return (torch.float32, torch.bfloat16) if bf16 else (torch.float32,)


ONEDNN_DTYPES = _onednn_dtypes()


def linear(
    x: torch.Tensor, weight: torch.Tensor, packed: torch.Tensor | None = None
) -> torch.Tensor:
    """F.linear, through oneDNN for a multi-row inference input on CPU.

    MKL's sgemm on this class of CPU (measured on AMD Zen, AVX-512) multiplies 16 rows by a
    [768, 256] weight in 70 us, oneDNN in 36 us with the column-major weight
    `join_weights` lays out: verify, draft and prefill forwards are mostly such matmuls.
    For one row (an AR step) MKL is faster (10 us against 18), so it keeps those. Training
    (grad enabled) and other devices take F.linear. `packed` is `weight` in oneDNN's own
    layout (`pack_weight`); oneDNN then skips re-laying the weight out on every call.
    """
    if (
        x.device.type == "cpu"
        and x.dtype in ONEDNN_DTYPES
        and weight.stride(0) == 1
        and x.numel() >= ONEDNN_MIN_ROWS * x.shape[-1]
        and not torch.is_grad_enabled()
    ):
        w = packed if packed is not None else weight
        return torch.ops.mkldnn._linear_pointwise(x, w, None, "none", [], "")
    return F.linear(x, weight)


# Models whose inference weights exceed this keep one copy of them: a packed weight is a
# second copy, worth it for the small pairs CPU decoding serves, not for a 16 GB target.
PACK_MAX_BYTES = 1 << 30


def pack_weight(weight: torch.Tensor) -> torch.Tensor | None:
    """`weight` [out, in] in oneDNN's blocked layout for `linear`, or None where `linear`
    would not take oneDNN for it. Bit-identical results: the layout oneDNN reorders the
    plain weight into on each call, done once (16 rows of the bundled pair's matmuls:
    724 -> 643 us a verify forward)."""
    if weight.device.type != "cpu" or weight.stride(0) != 1:
        return None
    if weight.dtype not in ONEDNN_DTYPES:
        return None
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None)


def project(lin: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """`lin(x)` through `linear` (the module has no bias)."""
    return linear(x, lin.weight, getattr(lin, "packed", None))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:  # one fused kernel; same arithmetic as below
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def unit_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / rms(x) over the last dim, computed in float32 as RMSNorm does, without weight."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), eps=eps)
    return F.rms_norm(x.float(), (x.shape[-1],), eps=eps).to(x.dtype)


class RotaryEmbedding(nn.Module):
    """RoPE tables. The inverse frequencies stay float32 on purpose: casting the model to
    bf16 must not round them, or positions drift from transformers' Qwen3
    (tests/engine/test_parity.py).

    cos/sin are tabulated once per device and dtype for every position up to the largest
    seen so far (grown by doubling), so a decode step indexes two tables instead of running
    six elementwise ops per forward. The table rows are computed exactly as a direct
    evaluation would (position * inv_freq in float32), so values are bit-identical.

    Finding the largest position reads the position tensor, which on an accelerator waits
    for the device every forward. A decoder that knows its bound calls `reserve` once; on
    such devices the table is then sized to it and positions are never read back.
    """

    def __init__(self, head_dim: int, theta: float):
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta
        self.reserved = 0  # positions below this are guaranteed by the caller (`reserve`)
        self._inv_freq: dict[torch.device, torch.Tensor] = {}
        self._tables: dict[tuple[torch.device, torch.dtype], tuple[torch.Tensor, ...]] = {}
        self._spans: dict[tuple[torch.device, torch.dtype], tuple[torch.Tensor, ...]] = {}

    def inv_freq(self, device: torch.device) -> torch.Tensor:
        inv = self._inv_freq.get(device)
        if inv is None:
            exps = torch.arange(0, self.head_dim, 2, dtype=torch.int64, device=device).float()
            inv = 1.0 / (self.theta ** (exps / self.head_dim))
            self._inv_freq[device] = inv
        return inv

    def _table(self, needed: int, device: torch.device, dtype: torch.dtype):
        key = (device, dtype)
        table = self._tables.get(key)
        if table is None or table[0].shape[0] < needed:
            size = max(needed, 2 * table[0].shape[0] if table is not None else 256)
            freqs = torch.arange(size, device=device).float()[:, None] * self.inv_freq(device)
            emb = torch.cat((freqs, freqs), dim=-1)
            sin = emb.sin().to(dtype)
            table = (emb.cos().to(dtype), sin, signed_sin(sin))
            self._tables[key] = table
            self._spans[key] = tuple(t[None, None] for t in table)
        return table

    def span(
        self, first: int, count: int, device: torch.device, dtype: torch.dtype, signed: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`forward` for the consecutive positions first..first+count-1 (the drafter's context
        and block rows): slices of the tables instead of gathers by a position tensor, so
        no position tensor is built and nothing is read back. Same values, bit for bit."""
        if torch.is_grad_enabled():
            return self(torch.arange(first, first + count, device=device)[None], dtype, signed)
        self._table(first + count, device, dtype)
        cos, sin, ssin = self._spans[(device, dtype)]  # [1, 1, positions, D] views
        rows = slice(first, first + count)
        return cos[:, :, rows], (ssin if signed else sin)[:, :, rows]

    def reserve(self, positions: int) -> None:
        """Promise that every position passed from now on is below `positions`."""
        self.reserved = max(self.reserved, positions)

    def forward(
        self, positions: torch.Tensor, dtype: torch.dtype, signed: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin [b, 1, T, D] for position ids [b, T] (any order, repeats allowed);
        `signed` gives `signed_sin(sin)` in place of sin, for `apply_rope_rolled`."""
        if torch.is_grad_enabled() or positions.numel() == 0:
            freqs = positions.float()[..., None] * self.inv_freq(positions.device)
            emb = torch.cat((freqs, freqs), dim=-1)
            sin = emb.sin().to(dtype)[:, None]
            return emb.cos().to(dtype)[:, None], signed_sin(sin) if signed else sin
        if self.reserved and positions.device.type != "cpu":
            table = self._table(self.reserved, positions.device, dtype)  # no device read
        else:  # on CPU the read is free, and the table stays as small as the traffic
            table = self._table(int(positions.max()) + 1, positions.device, dtype)
        return table[0][positions][:, None], table[2 if signed else 1][positions][:, None]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + rotate_half(x) * sin


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """sin with its first half negated: rotate_half(x) * sin == x.roll(D/2) * signed_sin."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def apply_rope_rolled(x: torch.Tensor, cos: torch.Tensor, ssin: torch.Tensor) -> torch.Tensor:
    """`apply_rope` with the sign folded into the table (`signed_sin`): bit-identical,
    since negating is exact, in three ops instead of six (chunk, neg and cat become one
    roll); measured 19 -> 7 us for a 16-row verify's q and k heads."""
    return x * cos + x.roll(x.shape[-1] // 2, -1) * ssin


class MLP(nn.Module):
    def __init__(self, hidden: int, inter: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.fused: torch.Tensor | None = None  # [gate; up], set by fuse() for inference
        self.fused_packed: torch.Tensor | None = None  # set by fuse_for_inference

    def fuse(self) -> None:
        self.fused = join_weights(self.gate_proj, self.up_proj)
        join_weights(self.down_proj)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused is not None:
            gate, up = linear(x, self.fused, self.fused_packed).chunk(2, dim=-1)
            return project(self.down_proj, F.silu(gate) * up)
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Attention(nn.Module):
    """Qwen3 attention; `kv_input` lets the DFlash drafter inject context rows into K/V."""

    def __init__(self, cfg: Qwen3Config):
        super().__init__()
        self.n_heads = cfg.num_attention_heads
        self.n_kv = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        h = cfg.hidden_size
        self.q_proj = nn.Linear(h, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.n_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.n_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, h, bias=False)
        self.q_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps)
        # Inference-only concatenated projections (set by fuse()): one matmul instead of
        # three matters when a step is dominated by per-op overhead, as on CPU.
        self.qkv: torch.Tensor | None = None
        self.qkv_packed: torch.Tensor | None = None  # set by fuse_for_inference
        self.kv: torch.Tensor | None = None
        self.qk_norm_weight: torch.Tensor | None = None

    def fuse(self) -> None:
        self.qkv = join_weights(self.q_proj, self.k_proj, self.v_proj)
        self.kv = self.qkv[self.n_heads * self.head_dim :]
        join_weights(self.o_proj)
        # q_norm and k_norm normalise every head over head_dim with their own weights, so
        # one rms_norm over the q and k heads together, scaled per head, does both.
        self.qk_norm_weight = torch.cat(
            [
                self.q_norm.weight.detach().expand(self.n_heads, -1),
                self.k_norm.weight.detach().expand(self.n_kv, -1),
            ]
        )

    def fused_qkv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, q_from: int = 0):
        """q [b, H, T-q_from, D], k and v [b, KV, T, D] from one matmul, one norm, one RoPE.

        `sin` is the signed table (`RotaryEmbedding(..., signed=True)`): fused layers take it.

        `q_from` drops the first query rows: the drafter's context rows only need K/V.
        """
        b, t, _ = x.shape
        nq = self.n_heads + self.n_kv
        qkv = linear(x, self.qkv, self.qkv_packed).view(b, t, nq + self.n_kv, self.head_dim)
        qk = unit_rms(qkv[:, :, :nq], self.q_norm.eps) * self.qk_norm_weight
        qk = apply_rope_rolled(qk.transpose(1, 2), cos, sin)
        q, k = qk[:, : self.n_heads, q_from:], qk[:, self.n_heads :]
        return q, k, qkv[:, :, nq:].transpose(1, 2)

    def _shape_kv(self, k, v, cos, sin):
        b, t, _ = k.shape
        k = self.k_norm(k.view(b, t, self.n_kv, self.head_dim)).transpose(1, 2)
        v = v.view(b, t, self.n_kv, self.head_dim).transpose(1, 2)
        return apply_rope(k, cos, sin), v

    def _shape_q(self, q, cos, sin):
        b, t, _ = q.shape
        q = self.q_norm(q.view(b, t, self.n_heads, self.head_dim)).transpose(1, 2)
        return apply_rope(q, cos, sin)

    def project_kv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        if self.kv is not None:
            k, v = linear(x, self.kv).split(self.n_kv * self.head_dim, dim=-1)
            return self._shape_kv(k, v, cos, sin)
        return self._shape_kv(self.k_proj(x), self.v_proj(x), cos, sin)

    def project_q(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        return self._shape_q(self.q_proj(x), cos, sin)

    def attend(self, q, k, v, mask: torch.Tensor | None, is_causal: bool) -> torch.Tensor:
        return project(self.o_proj, self.attend_heads(q, k, v, mask, is_causal))

    def attend_heads(self, q, k, v, mask: torch.Tensor | None, is_causal: bool) -> torch.Tensor:
        """Attention's output [b, T, H*D] before o_proj: a packed batch (engine/packed.py)
        attends sequence by sequence and projects all of their rows in one matmul."""
        b, _, t, d = q.shape
        groups = self.n_heads // self.n_kv
        rows = groups * t
        # A mask of groups*t rows comes folded already (TreeMask writes it once a round).
        folded = groups > 1 and mask is not None and mask.shape[1] == 1 and mask.shape[2] == rows
        if folded and t == 1:  # one query row attends as an AR step does: unfold (a view)
            mask, folded = mask[:, :, :1], False
        if folded or (
            groups > 1 and t > 1 and not is_causal and (mask is None or mask.shape[1] == 1)
        ):
            # The query heads sharing a K/V head become rows of one head: SDPA then reads
            # each K/V head once for all of them, with the mask rows repeated per head
            # (the mask is the same for every head). Same arithmetic per row: bit-identical.
            q = q.reshape(b, self.n_kv, rows, d)
            if mask is not None and not folded:
                mask = mask.repeat(1, 1, groups, 1)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            out = out.view(b, self.n_heads, t, d)
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, is_causal=is_causal, enable_gqa=groups > 1
            )
        return out.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim)

    def forward(self, x, cos, sin, cache: KVCache | None, layer: int, mask: torch.Tensor | None):
        if self.qkv is not None:
            q, k, v = self.fused_qkv(x, cos, sin)
        else:
            q = self.project_q(x, cos, sin)
            k, v = self.project_kv(x, cos, sin)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        # Without an explicit mask: causal over the new rows with the whole past visible.
        # SDPA's is_causal aligns top-left, so it is only right when there is no past.
        is_causal = mask is None and q.shape[2] > 1 and k.shape[2] == q.shape[2]
        if mask is None and q.shape[2] > 1 and not is_causal:
            mask = causal_mask(q.shape[2], k.shape[2] - q.shape[2], x.dtype, x.device)
        return self.attend(q, k, v, mask, is_causal)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: Qwen3Config):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg.hidden_size, cfg.intermediate_size)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, cos, sin, cache, layer, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, layer, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


def causal_mask(new: int, past: int, dtype: torch.dtype, device) -> torch.Tensor:
    """Additive [1, 1, new, past+new] mask: all past rows visible, causal over new rows."""
    m = torch.full((new, past + new), torch.finfo(dtype).min, dtype=dtype, device=device)
    m[:, :past] = 0
    m[:, past:] = torch.triu(m[:, past:], diagonal=1)
    return m[None, None]


def fuse_for_inference(module: nn.Module, pack: bool | None = None) -> None:
    """Concatenate projection weights (and lay them out for fast small matmuls on CPU).
    Call after .to(), and never before training: the fused weights are views the
    optimiser's updates would not keep in step. `pack` also keeps each matmul's weight in
    oneDNN's layout (`pack_weight`); by default when the weights take at most
    PACK_MAX_BYTES."""
    for mod in module.modules():
        if isinstance(mod, Attention | MLP):
            mod.fuse()
    for lin in module.modules():  # the LM head (tied or not) and the drafter's fc
        if (
            isinstance(lin, nn.Linear)
            and lin.weight.device.type == "cpu"
            and lin.weight.is_contiguous()
        ):
            join_weights(lin)
    if pack is None:
        pack = sum(p.numel() * p.element_size() for p in module.parameters()) <= PACK_MAX_BYTES
    if pack:
        _pack_matmuls(module)


def _pack_matmuls(module: nn.Module) -> None:
    """Pack the weights the fused forwards multiply by: joined q/k/v and gate/up (their
    own Linear layers are then never called), o_proj, down_proj, the LM head, the fc."""
    joined = set()
    for mod in module.modules():
        if isinstance(mod, Attention) and mod.qkv is not None:
            mod.qkv_packed = pack_weight(mod.qkv)
            joined.update(id(m) for m in (mod.q_proj, mod.k_proj, mod.v_proj))
        elif isinstance(mod, MLP) and mod.fused is not None:
            mod.fused_packed = pack_weight(mod.fused)
            joined.update(id(m) for m in (mod.gate_proj, mod.up_proj))
    for mod in module.modules():
        if isinstance(mod, nn.Linear) and id(mod) not in joined:
            mod.packed = pack_weight(mod.weight)


class Qwen3Model(nn.Module):
    def __init__(self, cfg: Qwen3Config):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(cfg.head_dim, cfg.rope_theta)


class Qwen3ForCausalLM(nn.Module):
    def __init__(self, cfg: Qwen3Config):
        super().__init__()
        self.config = cfg
        self.model = Qwen3Model(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def new_cache(self, capacity: int | None = None, batch: int = 1) -> KVCache:
        c = self.config
        return KVCache(
            c.num_hidden_layers,
            c.num_key_value_heads,
            c.head_dim,
            capacity or c.max_position_embeddings,
            device=self.device,
            dtype=self.dtype,
            batch=batch,
        )

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model.embed_tokens(ids)

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        cache: KVCache | None = None,
        attn_mask: torch.Tensor | None = None,
        output_layers: Sequence[int] = (),
        logits_rows: slice | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits [1, T, V] and the outputs of decoder layers `output_layers`.

        Tapped layers follow transformers' hidden_states[l + 1]: the output of decoder layer
        l, except that the last layer's tap is the final-normed output (transformers applies
        the norm before recording the last hidden state), so a drafter trained on either
        implementation sees the same features. `attn_mask` is additive over [past + new]
        rows; None means causal. `logits_rows` restricts the LM head to some rows (prefill
        only needs the last one).
        """
        x = self.model.embed_tokens(input_ids)
        fused = self.model.layers[0].self_attn.qkv is not None
        cos, sin = self.model.rotary_emb(position_ids, x.dtype, signed=fused)
        wanted = set(output_layers)
        last = len(self.model.layers) - 1
        hidden: dict[int, torch.Tensor] = {}
        for i, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, cache, i, attn_mask)
            if i in wanted and i != last:
                hidden[i] = x
        if cache is not None:
            cache.commit_append()
        if last in wanted:
            hidden[last] = x = self.model.norm(x)
            x = x if logits_rows is None else x[:, logits_rows]
        else:
            x = self.model.norm(x if logits_rows is None else x[:, logits_rows])
        return project(self.lm_head, x), [hidden[i] for i in output_layers]
