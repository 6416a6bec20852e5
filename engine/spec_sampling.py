"""Lossless speculative sampling: the accept rules of DFlash's chain and DDTree's tree.

Notation: p is the target's sampling distribution at a position (`sampling.warp` of its
logits at the request's settings), q the drafter's at the same settings. The DFlash
drafter drafts a whole block in one forward, so q_d depends on the depth d only, never on
the draft tokens before it; the rules below hold for any q that is fixed before the draws
it governs, which this is.

DFlash (a chain), standard speculative sampling (Leviathan et al. 2023, "Fast Inference
from Transformers via Speculative Decoding"; Chen et al. 2023, "Accelerating Large
Language Model Decoding with Speculative Sampling"): x_d ~ q_d; accept x_d with
probability min(1, p_d(x_d) / q_d(x_d)); at the first rejection emit a token from
norm(max(0, p_d - q_d)) and stop; after all are accepted emit a bonus token from p.

DDTree (a tree), recursive rejection sampling over each node's children (SpecInfer, Miao
et al. 2024, "SpecInfer: Accelerating Large Language Model Serving with Tree-based
Speculative Inference and Verification"), with the children drawn *without replacement*
(Sequoia, Chen et al. 2024, "Sequoia: Scalable, Robust, and Hardware-aware Speculative
Decoding", its sampling-without-replacement verification). At a node with residual r
(initially p) and children c_1..c_m, for j = 1..m: accept c_j with probability
min(1, r(c_j) / q_j(c_j)) and descend; otherwise r <- norm(max(0, r - q_j)) and q_{j+1}
is q_j with c_j removed and renormalised. When every child is rejected, emit from r.

How the children are drawn, and why that makes the tree rule lossless. The greedy tree
(engine/tree.py) takes each depth's top tokens, a deterministic choice under which the
rule above would be wrong. Here the tree's *shape* is still DDTree's best-first shape, but
built from q's sorted probabilities (so it depends on q only, never on a draw), and the
rank-r token of depth d is the r-th of an ordered sample without replacement from q_d
(Gumbel-top-k: the top keys of log q + Gumbel noise; Kool et al. 2019, "Stochastic Beams
and Where to Find Them"). Each node's children are then the first m draws without
replacement from q of its depth, m fixed by the shape. (All nodes of a depth share that
depth's sample, which is harmless: a walk visits one node per depth, so each depth's
sample is used once, and it is independent of everything the walk did above it.)

Claim: from a state (r, q) with candidates still to come, drawn without replacement from
q, the node emits exactly r.
Induction on the candidates left: with none, it samples r. Otherwise the next candidate
c ~ q is accepted and emitted as x with probability q(x) min(1, r(x)/q(x)) = min(q, r)(x);
it is rejected with probability 1 - sum min(q, r) = sum max(0, r - q) = Z, and then,
whichever token was rejected, the rest is the same procedure from state
(max(0, r - q)/Z, q without c), which by induction emits max(0, r - q)/Z. In total
min(q, r) + max(0, r - q) = r. So every node emits exactly the target's p at that
node (r = p at the start), and descending into the accepted child continues with fresh,
independent draws (the next depth's sample), so the whole output is the target's
sequence distribution, as plain sampling from it would give. The chain is the same
argument with one candidate per node.

Greedy requests never come here: the decode loops keep their argmax path unchanged.
"""

from __future__ import annotations

import torch

from engine.sampling import sample, uniform
from engine.tree import DraftTree, best_first


def sample_tree(root_token: int, q: torch.Tensor, budget: int, gen: torch.Generator) -> DraftTree:
    """DDTree's best-first shape from q [L, V] (the drafter's sampling distributions), its
    rank-r token at each depth the r-th of a sample without replacement from that depth."""
    k = max(1, min(budget, q.shape[-1]))
    logq = q.log()  # -inf where top-k / top-p cut a token: it is never drawn
    u = torch.rand(q.shape, generator=gen, device=q.device).clamp_(min=1e-20)
    keys = (logq - (-u.log()).log()).masked_fill(q <= 0, float("-inf"))
    drawn = keys.topk(k, dim=-1).indices
    shape_logp = logq.topk(k, dim=-1).values
    widths = (q > 0).sum(dim=-1).clamp(max=k)
    if q.device.type != "cpu":
        drawn, shape_logp, widths = drawn.cpu(), shape_logp.cpu(), widths.cpu()
    return best_first(root_token, shape_logp.tolist(), drawn.tolist(), budget, widths.tolist())


def accept_chain(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, gen: torch.Generator
) -> tuple[int, int]:
    """Standard speculative sampling of a chain: p [k+1, V] the target's distributions
    after the bonus and after each draft, q [k, V] the drafter's, drafts [k] with
    drafts[d] ~ q[d]. Returns (accepted drafts, the token emitted after them)."""
    k = drafts.shape[0]
    rows = torch.arange(k, device=drafts.device)
    ratio = p[rows, drafts] / q[rows, drafts]
    ok = uniform(k, gen, drafts.device) < ratio
    accepted = int(ok.int().cumprod(0).sum()) if k else 0
    if accepted == k:
        return accepted, int(sample(p[k], gen))
    return accepted, int(sample(residual(p[accepted], q[accepted]), gen))


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """max(0, p - q), unnormalised. When it is all zero (p == q up to rounding, where a
    rejection has probability 0), p itself, so the next draw is still well defined."""
    r = (p - q).clamp_(min=0)
    return r if float(r.sum()) > 0 else p


def walk_tree(
    tree: DraftTree, p: torch.Tensor, q: torch.Tensor, gen: torch.Generator
) -> tuple[list[int], int]:
    """Recursive rejection sampling down a `sample_tree` tree: p [N, V] the target's
    distributions at each node (tree order), q [L, V] the drafter's per depth. Returns
    the accepted node path (from the root) and the token emitted after it."""
    cur, path = 0, [0]
    while True:
        r = p[cur]
        kids = tree.child_maps[cur]
        if kids:
            qd = q[tree.depths[cur]]
            draws = uniform(len(kids), gen, p.device).tolist()
        nxt = None
        for j, (token, node) in enumerate(kids.items()):  # insertion order is rank order
            if draws[j] * float(qd[token]) < float(r[token]):  # prob min(1, r/q)
                nxt = node
                break
            r = residual(r, qd)
            r = r / r.sum()
            qd = qd.clone()
            qd[token] = 0.0
            qd = qd / qd.sum().clamp(min=1e-30)
        if nxt is None:
            return path, int(sample(r, gen))
        cur = nxt
        path.append(cur)
