"""Speculative sampling must leave the output distribution exactly the target's.

Two levels, both against exact probabilities (enumerated, not sampled) and judged by
Pearson's chi-square at a stated false-failure rate (tests/engine/sampling_stats.py):

- the real Decoder (DFlash, DDTree at budgets 3 and 12) on a tiny random pair with an
  8-token vocabulary, marginals of the emitted tokens at positions 1-3 (position 0 is the
  prefill's plain sample): end to end, through the drafter, the tree, the verify forward
  and the cache compaction. 1500 seeded requests fail a 4% TV deviation between two
  cells of probability ~0.15 80% of the time, 5% almost always; the slow tier's 10000
  fail 2%.
- the accept rules alone (spec_sampling) over a synthetic target whose distribution
  depends on the previous token and the position, 30000 draws: a 1% TV deviation
  between two cells of probability ~0.15 (noncentrality 40 against a critical value of
  28 at 6 dof) fails 93% of the time, 1.5% always. A 1% deviation spread over every cell
  in proportion to p is the hardest to see (noncentrality 4 N TV^2) and would need
  ~100000 draws. Two conditions run in the fast tier, all twelve under `slow`.

Every test is seeded, so a pass is a pass every time; the false-failure rate is what a
new seed would risk: 1e-4 per position and test.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from engine.decode import Decoder
from engine.drafter import DFlashConfig
from engine.model import Qwen3Config
from engine.sampling import SamplingSettings, sample, warp
from engine.spec_sampling import accept_chain, sample_tree, walk_tree
from engine.tiny import init_pair
from engine.tree import build_tree
from tests.engine.sampling_stats import assert_fits

FALSE_FAILURE = 1e-4  # per position and test
V, BLOCK = 8, 4
PROMPT = [1, 2, 3]
POSITIONS = (1, 2, 3)
SETTINGS = [(t, p) for t in (0.6, 1.0) for p in (0.9, 1.0)]
METHODS = [("dflash", None), ("ddtree", 3), ("ddtree", 12)]


@pytest.fixture(scope="module")
def pair():
    """An 8-token pair whose target distributions are spread (max prob ~0.2-0.5) and
    whose drafter is a different random model, so q differs from p and drafts get rejected."""
    tcfg = Qwen3Config(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
    )
    dcfg = DFlashConfig(Qwen3Config(**tcfg.to_dict_base()), BLOCK, [0], V - 1)
    return init_pair(tcfg, dcfg, seed=1, std=0.2)


def exact_marginals(target, s: SamplingSettings, prompt: list[int], n: int) -> list[list[float]]:
    """Marginal distribution of each of the first n sampled tokens, by enumerating every
    prefix of the continuation (V**(n-1) of them) through the target in one batch each."""
    out, joint = [], {(): 1.0}
    with torch.inference_mode():
        for _ in range(n):
            prefixes = list(joint)
            ids = torch.tensor([prompt + list(x) for x in prefixes])
            logits, _ = target(ids, torch.arange(ids.shape[1])[None])
            probs = warp(logits[:, -1], s).double().tolist()
            joint = {
                (*x, t): joint[x] * row[t]
                for x, row in zip(prefixes, probs, strict=True)
                for t in range(V)
            }
            marginal = [0.0] * V
            for x, w in joint.items():
                marginal[x[-1]] += w
            out.append(marginal)
    return out


@pytest.mark.parametrize(("temperature", "top_p"), SETTINGS)
@pytest.mark.parametrize(("method", "budget"), METHODS)
def test_decoder_samples_the_target_distribution(pair, method, budget, temperature, top_p):
    _decoder_fit(pair, method, budget, temperature, top_p, draws=1500)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "budget"), METHODS)
def test_decoder_samples_the_target_distribution_closely(pair, method, budget):
    _decoder_fit(pair, method, budget, 1.0, 0.9, draws=10000)


def _decoder_fit(pair, method, budget, temperature, top_p, draws):
    target, drafter = pair
    s = SamplingSettings(temperature=temperature, top_p=top_p)
    want = exact_marginals(target, s, PROMPT, max(POSITIONS) + 1)
    dec = Decoder(target, drafter, method=method, budget=budget)
    counts = [[0] * V for _ in POSITIONS]
    for seed in range(draws):
        run = SamplingSettings(temperature=temperature, top_p=top_p, seed=seed)
        tokens = dec.generate(PROMPT, max_new_tokens=4, ignore_eos=True, sampling=run).tokens
        for row, pos in zip(counts, POSITIONS, strict=True):
            row[tokens[pos]] += 1
    for row, pos in zip(counts, POSITIONS, strict=True):
        assert_fits(row, want[pos], FALSE_FAILURE, f"{method}/{budget} position {pos}")


# ---- the accept rules alone, with the power to see a 1% bias ------------------------------

RV, DEPTH, EMIT = 7, 3, 3


class MarkovTarget:
    """p(token at position j | the token before it): prefix-dependent, so a rule that read
    the wrong node's row or kept a rejected branch's context would show."""

    def __init__(self, s: SamplingSettings):
        g = torch.Generator().manual_seed(5)
        self.p = warp(torch.randn(DEPTH + EMIT + 2, RV, RV, generator=g) * 1.5, s)
        self.q = warp(torch.randn(DEPTH, RV, generator=g) * 1.5, s)

    def marginals(self, first_prev: int) -> list[list[float]]:
        m = self.p[0, first_prev].double()
        out = [m.tolist()]
        for j in range(1, EMIT):
            m = m @ self.p[j].double()
            out.append(m.tolist())
        return out

    def round(self, prev: int, pos: int, budget: int | None, gen) -> list[int]:
        """One verify round from `prev` at output position `pos`: the tokens it emits."""
        q = self.q
        if budget is None:
            drafts = sample(q, gen)
            ctx = torch.cat([torch.tensor([prev]), drafts])
            p = self.p[pos + torch.arange(DEPTH + 1), ctx]
            accepted, nxt = accept_chain(p, q, drafts, gen)
            return drafts[:accepted].tolist() + [nxt]
        tree = sample_tree(prev, q, budget, gen)
        p = self.p[torch.tensor(tree.depths) + pos, torch.tensor(tree.tokens)]
        path, nxt = walk_tree(tree, p, q, gen)
        return [tree.tokens[i] for i in path[1:]] + [nxt]


def _rule_fit(budget, temperature, top_p, draws=30000, model_cls=MarkovTarget):
    s = SamplingSettings(temperature=temperature, top_p=top_p)
    model = model_cls(s)
    gen = torch.Generator().manual_seed(11)
    counts = [[0] * RV for _ in range(EMIT)]
    for _ in range(draws):
        out: list[int] = []
        while len(out) < EMIT:
            prev = out[-1] if out else 0
            out += model.round(prev, len(out), budget, gen)
        for j in range(EMIT):
            counts[j][out[j]] += 1
    for j, (row, want) in enumerate(zip(counts, model.marginals(0), strict=True)):
        assert_fits(row, want, FALSE_FAILURE, f"budget {budget} position {j}")


FAST_RULES = [(None, 1.0, 1.0), (12, 0.6, 0.9)]
ALL_RULES = [
    (b, t, p)
    for b, (t, p) in itertools.product((None, 3, 12), SETTINGS)
    if (b, t, p) not in FAST_RULES
]


@pytest.mark.parametrize(("budget", "temperature", "top_p"), FAST_RULES)
def test_accept_rules_keep_the_target_distribution(budget, temperature, top_p):
    _rule_fit(budget, temperature, top_p)


@pytest.mark.slow
@pytest.mark.parametrize(("budget", "temperature", "top_p"), ALL_RULES)
def test_accept_rules_keep_the_target_distribution_everywhere(budget, temperature, top_p):
    _rule_fit(budget, temperature, top_p)


class TopKChildren(MarkovTarget):
    """The wrong pairing: DDTree's deterministic top-k children under the rule that
    assumes children drawn from q."""

    def round(self, prev, pos, budget, gen):
        tree = build_tree(prev, self.q.log(), budget)
        p = self.p[torch.tensor(tree.depths) + pos, torch.tensor(tree.tokens)]
        path, nxt = walk_tree(tree, p, self.q, gen)
        return [tree.tokens[i] for i in path[1:]] + [nxt]


def test_the_fit_catches_deterministic_children_under_the_sampled_rule():
    """The check has teeth: the classic mistake (top-k children verified as if sampled)
    biases the first token by ~30% TV here, and 3000 draws see it."""
    with pytest.raises(AssertionError, match="chi2"):
        _rule_fit(12, 1.0, 1.0, draws=3000, model_cls=TopKChildren)


def test_a_wider_sampled_tree_commits_more_than_the_chain(pair):
    """Lossless is not enough: the sampled tree must still pay. With children drawn from q,
    more of them per node means more chances to accept (here ~1.9 tokens a round for the
    chain, ~3.1 for a 40-node tree)."""
    target, drafter = pair

    def commit(method, budget):
        dec = Decoder(target, drafter, method=method, budget=budget)
        rounds = []
        for seed in range(40):
            s = SamplingSettings(temperature=1.0, seed=seed)
            rounds += dec.generate(PROMPT, max_new_tokens=30, ignore_eos=True, sampling=s).rounds
        return sum(r.commit_len for r in rounds) / len(rounds)

    chain, tree = commit("dflash", None), commit("ddtree", 40)
    assert chain > 1.2 and tree > chain + 0.5
