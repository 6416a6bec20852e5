"""Sampling settings and the target's sampling distribution.

A request's temperature, top-k and top-p turn a row of logits into the distribution the
target samples from, in the order transformers, vLLM and SGLang apply them: divide by
the temperature, keep the top-k logits, then keep the smallest set of most probable
tokens whose mass reaches top-p. Speculative sampling (engine/spec_sampling.py) is
lossless with respect to exactly this distribution, so the drafter's proposals go through
the same `warp` at the same settings.

Temperature 0 (or below SGLang's 1e-6, where dividing by it overflows) means greedy: the
decode loops then take the argmax exactly as they always have, and never touch a random
generator. Every sampled request owns one seeded `torch.Generator`, and every random draw
of the request comes from it in a fixed order, so the same seed, prompt and flags give
the same tokens.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import torch

GREEDY_BELOW = 1e-6  # SGLang's _SAMPLING_EPS: smaller temperatures decode greedily


@dataclass(frozen=True)
class SamplingSettings:
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1  # -1 or 0: no limit (SGLang's and vLLM's convention)
    seed: int | None = None  # None: a fresh random seed per request

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """Why these settings are invalid (one sentence), or None."""
        t, p = self.temperature, self.top_p
        if not (isinstance(t, int | float) and math.isfinite(t) and t >= 0):
            return f"temperature must be a finite number >= 0, got {t!r}."
        if not (isinstance(p, int | float) and 0 < p <= 1):
            return f"top_p must be in (0, 1], got {p!r}."
        if not isinstance(self.top_k, int) or self.top_k < -1:
            return f"top_k must be -1 or 0 (no limit) or a positive count, got {self.top_k!r}."
        if self.seed is not None and not isinstance(self.seed, int):
            return f"seed must be an integer, got {self.seed!r}."
        return None

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    def generator(self, device) -> torch.Generator:
        """The request's random stream. torch seeds take 64 bits: a larger or negative seed
        is folded into that range, so every integer a client sends is usable."""
        seed = self.seed if self.seed is not None else secrets.randbits(63)
        g = torch.Generator(device=torch.device(device))
        g.manual_seed(seed % 2**64)
        return g


GREEDY = SamplingSettings()


def warp(logits: torch.Tensor, s: SamplingSettings) -> torch.Tensor:
    """Probabilities [..., V] (float32) of sampling each token from `logits` [..., V] at
    the settings' temperature, top-k and top-p; tokens cut by top-k or top-p get exactly 0."""
    x = logits.float() / s.temperature
    vocab = x.shape[-1]
    if 0 < s.top_k < vocab:
        kth = x.topk(s.top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))  # ties at the k-th logit stay, as in HF
    probs = torch.softmax(x, dim=-1)
    if s.top_p < 1:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # A token stays when the mass ranked above it is still short of top_p, so the most
        # probable token always stays and the kept set is the smallest reaching top_p.
        cut = (sorted_p.cumsum(dim=-1) - sorted_p) >= s.top_p
        sorted_p = sorted_p.masked_fill(cut, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def sample(probs: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One token per row of (possibly unnormalised) weights [..., V]: long [...]."""
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=gen).reshape(probs.shape[:-1])


def uniform(n: int, gen: torch.Generator, device) -> torch.Tensor:
    """n draws from U[0, 1) on `device`, from the request's stream."""
    return torch.rand(n, generator=gen, device=device)
