"""Generation loops: autoregressive, DFlash (linear verify) and DDTree (tree verify).

Every loop is lossless. Greedy (temperature 0): the target's argmax decides every
committed token, so all three methods emit the same tokens. Sampled (temperature > 0):
speculative sampling (engine/spec_sampling.py) keeps each method's output distribution
exactly the target's; the drafter only changes how many tokens are committed per target
forward. Each verify round reports its commit length (accepted drafts + the bonus token,
called tau in the DFlash and DDTree papers), the context length it ran at, and where its
time went; decode throughput is then exactly sum(commit) / sum(step time).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import torch

from engine.decode_sampled import SampledRounds
from engine.drafter import DFlashDrafter, DraftSession
from engine.kvcache import KVCache
from engine.model import Qwen3ForCausalLM
from engine.round_stats import RoundStats
from engine.sampling import GREEDY, SamplingSettings
from engine.tree import build_tree, follow_verified
from engine.verify_inputs import RowIds, TreeIds, TreeMask

METHODS = ("ar", "dflash", "ddtree")
__all__ = ["METHODS", "Decoder", "Generation", "RoundStats", "Step"]


@dataclass
class Step:
    tokens: list[int]  # newly emitted tokens, already cut at the stop
    stats: RoundStats | None  # None for the prefill step
    prefill_ms: float | None = None  # only on the prefill step
    finish_reason: str | None = None  # on the last step: "stop" (EOS) or "length"


@dataclass
class Generation:
    prompt_len: int
    tokens: list[int] = field(default_factory=list)
    rounds: list[RoundStats] = field(default_factory=list)
    prefill_ms: float = 0.0
    finish_reason: str = "length"
    kv_cache_bytes: int = 0  # target + draft KV storage at the end (it only grows: the peak)

    @property
    def decode_ms(self) -> float:
        return sum(r.step_ms for r in self.rounds)

    @property
    def decode_tokens(self) -> int:
        """Tokens committed by verify rounds (the prefill's first token excluded)."""
        return max(0, len(self.tokens) - 1)

    @property
    def commit_mean(self) -> float:
        return sum(r.commit_len for r in self.rounds) / len(self.rounds) if self.rounds else 0.0

    @property
    def decode_tok_per_s(self) -> float:
        ms = self.decode_ms
        return 1000.0 * self.decode_tokens / ms if ms > 0 else 0.0


def _cache_of(session) -> KVCache | None:
    """The draft session's KV cache. A session only has to propose and add context (tests
    substitute their own); the drafter's keeps a cache that counts towards a request's memory."""
    cache = getattr(session, "cache", None)
    return cache if isinstance(cache, KVCache) else None


class _Clock:
    """Wall-clock phases; on CUDA, synchronise so a phase owns its kernels' time."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.t = time.perf_counter()

    def lap(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        now = time.perf_counter()
        ms = (now - self.t) * 1000.0
        self.t = now
        return ms


def check_request(n: int, max_context: int, max_new_tokens: int) -> int:
    """A request's prompt length `n`, refused (ValueError, one sentence) when the prompt
    is empty, fills the context, or asks for no token; the single and the batched
    decoder refuse alike."""
    if n == 0:
        raise ValueError("the prompt is empty")
    if n >= max_context:
        raise ValueError(
            f"the prompt ({n} tokens) leaves no room in the {max_context}-token context"
        )
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be at least 1")
    return n


class Decoder(SampledRounds):
    def __init__(
        self,
        target: Qwen3ForCausalLM,
        drafter: DFlashDrafter | None = None,
        *,
        method: str = "ddtree",
        budget: int | None = None,
        block_size: int | None = None,
        draft_window: int | None = None,
        max_context: int | None = None,
    ):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
        if method != "ar" and drafter is None:
            raise ValueError(f"method {method!r} needs a drafter")
        self.target = target
        self.drafter = drafter
        self.method = method
        self.block_size = block_size or (drafter.block_size if drafter is not None else 1)
        if method != "ar" and self.block_size < 2:
            raise ValueError("block size must be at least 2 for speculative decoding")
        # DDTree's default budget: the chain length, i.e. one node per draft position.
        self.budget = budget if budget is not None else self.block_size - 1
        if draft_window is not None and draft_window < 1:
            raise ValueError("draft window must be at least 1")
        self.draft_window = draft_window
        self.max_context = max_context or target.config.max_position_embeddings
        # Verify trees and draft blocks reach at most a block past the context limit.
        target.model.rotary_emb.reserve(self.max_context + self.block_size)
        if drafter is not None:
            drafter.rotary_emb.reserve(self.max_context + self.block_size)
        self.layer_ids = (
            list(drafter.target_layer_ids) if drafter is not None and method != "ar" else []
        )
        # The running request's caches (the engine thread sets them; /get_server_info reads).
        self._live: tuple[KVCache, KVCache | None] | None = None
        self.last_kv_cache_bytes = 0  # what the last finished request had allocated
        self._sampling: SamplingSettings | None = None  # the running request's, None: greedy
        self._gen: torch.Generator | None = None

    def kv_cache_info(self) -> dict[str, int]:
        """Current and maximum KV cache size, target and drafter together.

        The cache exists only while a request runs and grows in chunks up to the context
        limit, so `kv_cache_tokens`/`kv_cache_bytes` are 0 between requests, and
        `kv_cache_last_request_bytes` is what the last one grew to.
        """
        live = self._live
        if live is None:  # empty caches of this decoder's shapes: nothing is allocated
            session = self.new_draft_session() if self.method != "ar" else None
            target_cache, draft_cache = self.target.new_cache(self.max_context), _cache_of(session)
        else:
            target_cache, draft_cache = live
        caches = [c for c in (target_cache, draft_cache) if c is not None]
        return {
            "kv_cache_tokens": target_cache.allocated if live else 0,
            "kv_cache_used_tokens": target_cache.length if live else 0,
            "kv_cache_bytes": sum(c.nbytes for c in caches) if live else 0,
            "kv_cache_max_tokens": self.max_context,
            "kv_cache_max_bytes": sum(c.max_nbytes for c in caches),
            "kv_cache_chunk_tokens": target_cache.chunk,
            "kv_cache_last_request_bytes": self.last_kv_cache_bytes,
        }

    def new_draft_session(self) -> DraftSession:
        assert self.drafter is not None
        return DraftSession(self.drafter, self.max_context + self.block_size, self.draft_window)

    def generate(
        self,
        prompt_ids: list[int],
        *,
        max_new_tokens: int,
        eos_token_ids: Iterable[int] = (),
        ignore_eos: bool = False,
        sampling: SamplingSettings = GREEDY,
    ) -> Generation:
        gen = Generation(prompt_len=len(prompt_ids))
        for step in self.stream(
            prompt_ids,
            max_new_tokens=max_new_tokens,
            eos_token_ids=eos_token_ids,
            ignore_eos=ignore_eos,
            sampling=sampling,
        ):
            gen.tokens.extend(step.tokens)
            if step.stats is not None:
                gen.rounds.append(step.stats)
            if step.prefill_ms is not None:
                gen.prefill_ms = step.prefill_ms
            if step.finish_reason:
                gen.finish_reason = step.finish_reason
        gen.kv_cache_bytes = self.last_kv_cache_bytes
        return gen

    @torch.inference_mode()
    def stream(
        self,
        prompt_ids: list[int],
        *,
        max_new_tokens: int,
        eos_token_ids: Iterable[int] = (),
        ignore_eos: bool = False,
        sampling: SamplingSettings = GREEDY,
    ) -> Iterator[Step]:
        """The request's steps. `sampling` at temperature 0 (the default) decodes greedily,
        token-identical to AR; otherwise every draw comes from one generator seeded by
        `sampling.seed`, so a seed reproduces its tokens."""
        check_request(len(prompt_ids), self.max_context, max_new_tokens)
        cache = self.target.new_cache(self.max_context)
        session = self.new_draft_session() if self.method != "ar" else None
        cfg = self.target.config  # the verify mask comes folded for grouped-query heads
        groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self._tree_mask = TreeMask(self.target.dtype, self.target.device, groups)
        self._tree_ids = TreeIds(self.target.device)
        self._path_ids = RowIds(self.target.device, self.block_size)
        self._sampling = None if sampling.greedy else sampling
        self._gen = None if sampling.greedy else sampling.generator(self.target.device)
        self._live = (cache, _cache_of(session))
        try:
            yield from self._decode(
                prompt_ids, max_new_tokens, eos_token_ids, ignore_eos, cache, session
            )
        finally:  # also when the caller closes the generator (a cancelled request)
            self.last_kv_cache_bytes = sum(c.nbytes for c in self._live if c is not None)
            self._live = None

    def _decode(
        self, prompt_ids, max_new_tokens, eos_token_ids, ignore_eos, cache, session
    ) -> Iterator[Step]:
        n = len(prompt_ids)
        eos = set() if ignore_eos else set(eos_token_ids)
        target = self.target
        dev = target.device
        limit = min(max_new_tokens, self.max_context - n)  # tokens we may still emit
        emitted = 0

        def cut(tokens: list[int]) -> tuple[list[int], str | None]:
            nonlocal emitted
            reason = None
            for i, t in enumerate(tokens):
                if t in eos:
                    tokens, reason = tokens[: i + 1], "stop"
                    break
            room = limit - emitted
            if len(tokens) > room:
                tokens, reason = tokens[:room], "length"
            elif len(tokens) == room and reason is None:
                reason = "length"
            emitted += len(tokens)
            return tokens, reason

        clock = _Clock(dev)
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=dev)
        logits, hidden = target(
            ids,
            torch.arange(n, device=dev)[None],
            cache,
            output_layers=self.layer_ids,
            logits_rows=slice(-1, None),
        )
        bonus = self._pick(logits[0, -1])
        if session is not None:
            session.add_context(hidden)
        first, reason = cut([bonus])
        yield Step(first, None, prefill_ms=clock.lap(), finish_reason=reason)
        if reason:
            return

        start = n  # position of the bonus token; the target cache holds [0, start)
        round_fn = {
            "ar": self._ar_round,
            "dflash": self._dflash_round if self._sampling is None else self._dflash_sampled,
            "ddtree": self._ddtree_round if self._sampling is None else self._ddtree_sampled,
        }[self.method]
        while True:
            new_tokens, stats = round_fn(cache, session, bonus, start, clock)
            start += stats.commit_len
            bonus = new_tokens[-1]
            out, reason = cut(new_tokens)
            yield Step(out, stats, finish_reason=reason)
            if reason:
                return

    # Each round returns the tokens it commits after the old bonus: the accepted drafts
    # followed by the new bonus, so len == commit length.

    def _ar_round(self, cache, session, bonus, start, clock):
        dev = self.target.device
        ctx = cache.length
        clock.lap()
        logits, _ = self.target(
            torch.tensor([[bonus]], device=dev), torch.tensor([[start]], device=dev), cache
        )
        nxt = self._pick(logits[0, -1])
        verify = clock.lap()
        return [nxt], RoundStats(1, ctx, 0.0, 0.0, verify, 0.0, 1)

    def _room(self, start: int) -> int:
        """Verify rows that still fit in the context after `start`."""
        return self.max_context - start

    def _dflash_round(self, cache, session: DraftSession, bonus, start, clock):
        dev = self.target.device
        ctx = cache.length
        clock.lap()
        block = min(self.block_size, self._room(start))
        drafts = session.propose(bonus, start, self.block_size)[: block - 1].argmax(-1)
        draft_ms = clock.lap()
        ids = torch.cat([torch.tensor([bonus], device=dev), drafts])[None]
        pos = torch.arange(start, start + ids.shape[1], device=dev)[None]
        logits, hidden = self.target(ids, pos, cache, output_layers=self.layer_ids)
        post = logits[0].argmax(-1)
        verify_ms = clock.lap()
        matches = (drafts == post[:-1]).int()
        accepted = int(matches.cumprod(0).sum())
        commit = accepted + 1
        cache.crop(start + commit)
        session.add_context([h[:, :commit] for h in hidden])
        tokens = drafts[:accepted].tolist() + [int(post[accepted])]
        commit_ms = clock.lap()
        return tokens, RoundStats(commit, ctx, draft_ms, 0.0, verify_ms, commit_ms, ids.shape[1])

    def _ddtree_round(self, cache, session: DraftSession, bonus, start, clock):
        ctx = cache.length
        clock.lap()
        draft_logits = session.propose(bonus, start, self.block_size)
        draft_ms = clock.lap()
        budget = min(self.budget, self._room(start) - 1)
        tree = build_tree(bonus, draft_logits, budget)
        ids, pos = self._tree_ids(tree, start)
        mask = self._tree_mask(tree, ctx)
        tree_ms = clock.lap()
        logits, hidden = self.target(ids, pos, cache, attn_mask=mask, output_layers=self.layer_ids)
        post = logits.argmax(-1).tolist()[0]  # one op fewer than selecting the row first
        verify_ms = clock.lap()
        path, new_bonus = follow_verified(tree, post)
        cache.compact(ctx, path)
        # The taps side by side first, so the accepted rows are one slice or one gather
        # (the drafter's fuse takes them concatenated, as it does in training).
        taps = hidden[0] if len(hidden) == 1 else torch.cat(hidden, dim=-1)
        if path[-1] == len(path) - 1:  # the accepted path is a prefix of node order
            session.add_context([taps[:, : len(path)]])
        else:
            session.add_context([taps.index_select(1, self._path_ids(path))])
        tokens = [tree.tokens[i] for i in path[1:]] + [new_bonus]
        commit_ms = clock.lap()
        return tokens, RoundStats(
            len(path), ctx, draft_ms, tree_ms, verify_ms, commit_ms, len(tree)
        )
