"""Batched decoding is lossless: every request's tokens, decoded in a batch with others
that join and leave mid-decode, are the tokens it gets decoded alone: greedy, and sampled
with a seed per request (each sequence draws from its own generator, in the order it
would alone)."""

from __future__ import annotations

import pytest

from engine.batch import BatchDecoder
from engine.checkpoint import load_bundle
from engine.decode import Decoder
from engine.sampling import GREEDY, SamplingSettings

TEXTS = ["def f(x):\n", "import os\n", "class Stack:\n    def push", "x", "for i in range(10):"]
ARMS = [("ar", None), ("dflash", None), ("ddtree", 3), ("ddtree", 12)]


@pytest.fixture(scope="module")
def bundle(tiny_pair):
    return load_bundle(*tiny_pair)


def run_batched(dec: Decoder, prompts: list[list[int]], n: int, concurrency: int,
                sampling=lambda i: GREEDY) -> dict:  # fmt: skip
    """Requests join one per round while fewer than `concurrency` run; each leaves at its end."""
    batch, out, waiting = (
        BatchDecoder(dec),
        {i: [] for i in range(len(prompts))},
        list(range(len(prompts))),
    )
    while waiting or len(batch):
        if waiting and len(batch) < concurrency:
            i = waiting.pop(0)
            out[i] += batch.join(i, prompts[i], max_new_tokens=n + 3 * i,
                                 sampling=sampling(i)).tokens  # fmt: skip
        for key, step in batch.step().items():
            out[key] += step.tokens
    return out


@pytest.mark.parametrize(("method", "budget"), ARMS)
def test_batched_tokens_equal_alone(bundle, method, budget):
    tok = bundle.tokenizer
    prompts = [tok.encode(t) for t in TEXTS * 2][:8]
    dec = Decoder(bundle.target, bundle.drafter, method=method, budget=budget)
    alone = {i: dec.generate(p, max_new_tokens=16 + 3 * i).tokens for i, p in enumerate(prompts)}
    for concurrency in (1, 2, 4, 8):
        assert run_batched(dec, prompts, 16, concurrency) == alone, concurrency


@pytest.mark.parametrize(("method", "budget"), ARMS)
def test_seeded_sampled_tokens_batched_equal_alone(bundle, method, budget):
    tok = bundle.tokenizer
    prompts = [tok.encode(t) for t in TEXTS * 2][:8]
    dec = Decoder(bundle.target, bundle.drafter, method=method, budget=budget)

    def sampling(i: int) -> SamplingSettings:  # a seed of its own, two settings in turn
        return SamplingSettings(temperature=1.0 if i % 2 else 0.6, top_p=0.9 if i % 2 else 1.0,
                                seed=100 + i)  # fmt: skip

    alone = {i: dec.generate(p, max_new_tokens=16 + 3 * i, sampling=sampling(i)).tokens
             for i, p in enumerate(prompts)}  # fmt: skip
    greedy = {i: dec.generate(p, max_new_tokens=16 + 3 * i).tokens for i, p in enumerate(prompts)}
    assert alone != greedy  # the draws do something (the test could not pass by greedy)
    for concurrency in (2, 4, 8):
        assert run_batched(dec, prompts, 16, concurrency, sampling) == alone, concurrency


def test_a_request_leaving_mid_decode_leaves_the_rest_unchanged(bundle):
    tok = bundle.tokenizer
    dec = Decoder(bundle.target, bundle.drafter, method="ddtree")
    prompts = [tok.encode(t) for t in TEXTS[:3]]
    alone = [dec.generate(p, max_new_tokens=20).tokens for p in prompts]
    batch, out = BatchDecoder(dec), {0: [], 2: []}
    for i, p in enumerate(prompts):
        first = batch.join(i, p, max_new_tokens=20).tokens
        if i != 1:
            out[i] += first
    batch.step()  # one round with all three, then request 1 is cancelled
    batch.leave(1)
    assert len(batch) == 2
    # replay: the first round's tokens were dropped above, so compare the tails
    rest = {0: [], 2: []}
    while len(batch):
        for key, step in batch.step().items():
            rest[key] += step.tokens
    for i in (0, 2):
        assert alone[i][-len(rest[i]) :] == rest[i] and alone[i][: len(out[i])] == out[i]
