"""Continuous batching: several sequences decoded together, one target forward a round.

A `BatchDecoder` wraps a `Decoder` (its models, method, budget, block and context) and
holds the running sequences, each with its own target KV cache, draft session, sampling
generator and verify buffers. Sequences join (`join` runs their prefill alone and returns
the first token) and leave (finished, or `leave` on a cancel) between rounds; `step`
runs one round for all of them:

1. one drafter forward proposes every sequence's block (engine/packed_draft.py);
2. each sequence plans its rows: its AR token, DFlash block or DDTree tree;
3. one target forward verifies all of those rows (engine/packed.py);
4. each sequence settles its own rows with its own accept rule (engine/batch_rounds.py).

Lossless: the packed forward gives every row the attention it gets alone (its own cache,
its own causal or ancestry mask) and the same row-wise arithmetic, and each sequence's
accept rule and generator draws are its own, so greedy a sequence commits the tokens it
commits decoded alone, and seeded sampling draws the same numbers in the same order.
A batch of one takes the Decoder's own single-sequence round, so concurrency 1 runs
exactly the code (and at the speed) it ran before batching.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import torch

from engine.batch_rounds import PLANS, SETTLES
from engine.decode import Decoder, Step, _cache_of, _Clock, check_request
from engine.kvcache import KVCache
from engine.packed import packed_forward
from engine.packed_draft import propose_many
from engine.round_stats import RoundStats
from engine.sampling import GREEDY, SamplingSettings, sample, warp
from engine.verify_inputs import RowIds, TreeIds, TreeMask


class Running:
    """One sequence in the batch: its caches and buffers, where it stands, and its limits."""

    def __init__(self, decoder: Decoder, prompt_len: int, max_new_tokens: int, eos, sampling):
        target = decoder.target
        self.cache: KVCache = target.new_cache(decoder.max_context)
        self.session = decoder.new_draft_session() if decoder.method != "ar" else None
        cfg = target.config
        groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.tree_mask = TreeMask(target.dtype, target.device, groups)
        self.tree_ids = TreeIds(target.device)
        self.path_ids = RowIds(target.device, decoder.block_size)
        self.sampling = None if sampling.greedy else sampling
        self.gen = None if sampling.greedy else sampling.generator(target.device)
        self.eos = set(eos)
        self.limit = min(max_new_tokens, decoder.max_context - prompt_len)
        self.emitted = 0
        self.bonus = 0
        self.start = prompt_len  # position of the bonus; the cache holds [0, start)
        self.plan = None  # this round's drafts or tree, between plan and settle

    def pick(self, logits: torch.Tensor) -> int:
        if self.sampling is None:
            return int(logits.argmax())
        return int(sample(warp(logits, self.sampling), self.gen))

    def cut(self, tokens: list[int]) -> tuple[list[int], str | None]:
        """The tokens to emit (cut after an EOS or at the length limit) and why it ends."""
        reason = None
        for i, t in enumerate(tokens):
            if t in self.eos:
                tokens, reason = tokens[: i + 1], "stop"
                break
        room = self.limit - self.emitted
        if len(tokens) > room:
            tokens, reason = tokens[:room], "length"
        elif len(tokens) == room and reason is None:
            reason = "length"
        self.emitted += len(tokens)
        return tokens, reason

    @property
    def caches(self) -> list[KVCache]:
        return [c for c in (self.cache, _cache_of(self.session)) if c is not None]


class BatchDecoder:
    def __init__(self, decoder: Decoder):
        self.decoder = decoder
        self.running: dict[Hashable, Running] = {}

    def __len__(self) -> int:
        return len(self.running)

    @property
    def num_tokens(self) -> int:
        """Tokens in the running sequences' target caches together."""
        return sum(r.cache.length for r in self.running.values())

    @torch.inference_mode()
    def join(
        self,
        key: Hashable,
        prompt_ids: list[int],
        *,
        max_new_tokens: int,
        eos_token_ids: Iterable[int] = (),
        ignore_eos: bool = False,
        sampling: SamplingSettings = GREEDY,
    ) -> Step:
        """Prefill a new sequence alone and return its first token; unless that already
        ends it, it runs in every `step` from now on. Refuses what `Decoder.stream` refuses."""
        dec = self.decoder
        n = check_request(len(prompt_ids), dec.max_context, max_new_tokens)
        if key in self.running:
            raise ValueError(f"sequence {key!r} is already running")
        eos = () if ignore_eos else eos_token_ids
        seq = Running(dec, n, max_new_tokens, eos, sampling)
        dev = dec.target.device
        clock = _Clock(dev)
        logits, hidden = dec.target(
            torch.tensor([prompt_ids], dtype=torch.long, device=dev),
            torch.arange(n, device=dev)[None],
            seq.cache,
            output_layers=dec.layer_ids,
            logits_rows=slice(-1, None),
        )
        seq.bonus = seq.pick(logits[0, -1])
        if seq.session is not None:
            seq.session.add_context(hidden)
        first, reason = seq.cut([seq.bonus])
        if reason:
            self._retire(seq)
        else:
            self.running[key] = seq
        return Step(first, None, prefill_ms=clock.lap(), finish_reason=reason)

    def leave(self, key: Hashable) -> None:
        """Drop a sequence between rounds (a cancel); its caches are freed."""
        seq = self.running.pop(key, None)
        if seq is not None:
            self._retire(seq)

    @torch.inference_mode()
    def step(self) -> dict[Hashable, Step]:
        """One verify round for every running sequence: each one's Step, by key. A
        sequence whose Step has a finish reason has left the batch."""
        if not self.running:
            return {}
        if len(self.running) == 1:
            results = self._solo_round()
        else:
            results = self._batched_round()
        steps = {}
        for key, (tokens, stats) in results.items():
            seq = self.running[key]
            seq.start += stats.commit_len
            seq.bonus = tokens[-1]
            out, reason = seq.cut(tokens)
            steps[key] = Step(out, stats, finish_reason=reason)
            if reason:
                self.leave(key)
        return steps

    def _solo_round(self) -> dict[Hashable, tuple[list[int], RoundStats]]:
        """The Decoder's own single-sequence round, on this sequence's state."""
        dec = self.decoder
        ((key, seq),) = self.running.items()
        dec._tree_mask, dec._tree_ids, dec._path_ids = seq.tree_mask, seq.tree_ids, seq.path_ids
        dec._sampling, dec._gen = seq.sampling, seq.gen
        name = f"_{dec.method}_round"
        if seq.sampling is not None and dec.method != "ar":
            name = f"_{dec.method}_sampled"
        clock = _Clock(dec.target.device)
        tokens, stats = getattr(dec, name)(seq.cache, seq.session, seq.bonus, seq.start, clock)
        return {key: (tokens, stats)}

    def _batched_round(self) -> dict[Hashable, tuple[list[int], RoundStats]]:
        dec = self.decoder
        seqs = list(self.running.values())
        clock = _Clock(dec.target.device)
        contexts = [s.cache.length for s in seqs]
        if dec.method == "ar":
            drafts = [None] * len(seqs)
        else:
            sessions = [s.session for s in seqs]
            bonuses, starts = [s.bonus for s in seqs], [s.start for s in seqs]
            drafts = propose_many(sessions, bonuses, starts, dec.block_size)
        draft_ms = clock.lap()
        plan = PLANS[dec.method]
        segments = [plan(s, d, dec) for s, d in zip(seqs, drafts, strict=True)]
        tree_ms = clock.lap()
        logits, hidden = packed_forward(dec.target, segments, dec.layer_ids)
        verify_ms = clock.lap()
        taps = None
        if hidden:
            taps = hidden[0] if len(hidden) == 1 else torch.cat(hidden, dim=-1)
        settle, settled, at = SETTLES[dec.method], [], 0
        for s, seg in zip(seqs, segments, strict=True):
            rows = slice(at, at + seg.rows)
            settled.append(settle(s, logits[0, rows], taps[:, rows] if taps is not None else None))
            at += seg.rows
        commit_ms = clock.lap()
        out = {}
        for key, (tokens, nodes), ctx in zip(self.running, settled, contexts, strict=True):
            stats = RoundStats(len(tokens), ctx, draft_ms, tree_ms, verify_ms, commit_ms, nodes)
            out[key] = (tokens, stats)
        return out

    def _retire(self, seq: Running) -> None:
        self.decoder.last_kv_cache_bytes = sum(c.nbytes for c in seq.caches)

    def kv_cache_info(self) -> dict[str, int]:
        """`Decoder.kv_cache_info`, summed over the running sequences."""
        info = self.decoder.kv_cache_info()
        seqs = list(self.running.values())
        if seqs:
            info["kv_cache_tokens"] = sum(s.cache.allocated for s in seqs)
            info["kv_cache_used_tokens"] = self.num_tokens
            info["kv_cache_bytes"] = sum(c.nbytes for s in seqs for c in s.caches)
        return info
