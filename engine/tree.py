"""DDTree: the best-first draft tree under a node budget.

The drafter gives independent per-position distributions q_1..q_L. The expected number of
accepted tokens of a prefix-closed tree T is the sum of q(u) over its nodes, so the best
tree with B nodes is the B most probable prefixes; a heap over (depth, rank) pops them in
order of probability in O(B log B), and only the top-min(B, V) tokens of each depth matter.
Node order is pop order, which is non-increasing in probability, so parent < child.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class DraftTree:
    tokens: list[int]  # [root] + node tokens, in node order
    parents: list[int]  # parents[0] == -1
    depths: list[int]  # root depth 0
    child_maps: list[dict[int, int]]  # node -> {token: child node}
    log_probs: list[float]  # log q(u) of each node's prefix; root 0.0
    visibility: np.ndarray  # [N, N] bool, row i: ancestors of i and i itself

    def __len__(self) -> int:
        return len(self.tokens)

    def attention_mask(self, past_len: int, dtype: torch.dtype, device) -> torch.Tensor:
        """Additive [1, 1, N, past+N]: the past is fully visible, tree rows see ancestors."""
        return TreeMask(dtype, device)(self.visibility, past_len)

    def position_ids(self, start: int, device) -> torch.Tensor:
        return (torch.tensor(self.depths, dtype=torch.long) + start).to(device)[None]


class TreeMask:
    """The verify mask, kept across the rounds of one request.

    Every round's mask is zeros over the past and the tree's visibility over the new rows.
    Rebuilding it allocated and filled [N, past+N] per round, which grows with context;
    this buffer only clears the block the previous round wrote and writes the new one, so
    a round touches N*N entries whatever the context. On CPU both writes go through a
    numpy view of the buffer: numpy's few-microsecond calls in place of the torch ops
    (a tensor from the visibility, a cast, two slices, a fill and a masked fill) that
    cost a DDTree round, and only it, tens of microseconds a round.
    """

    def __init__(self, dtype: torch.dtype, device):
        self.buf = torch.zeros((0, 0), dtype=dtype, device=device)
        self.neg = torch.finfo(dtype).min
        self.written: tuple[int, int] | None = None  # (past_len, N) of the last block
        self._view()

    def _view(self) -> None:
        self.buf4 = self.buf[None, None]
        cpu = self.buf.device.type == "cpu" and self.buf.dtype == torch.float32
        self.np = self.buf.numpy() if cpu else None  # numpy has no bfloat16

    def __call__(self, visibility: np.ndarray, past_len: int) -> torch.Tensor:
        n = visibility.shape[0]
        end = past_len + n
        rows, cols = self.buf.shape
        if n > rows or end > cols:  # grow by doubling: a long request reallocates rarely
            self.buf = self.buf.new_zeros((max(n, rows), max(end, 2 * cols, 256)))
            self._view()
            self.written = None
        if self.np is not None:
            if self.written is not None:
                p, m = self.written
                self.np[:m, p : p + m] = 0
            self.np[:n, past_len:end][~visibility] = self.neg
        else:
            if self.written is not None:
                p, m = self.written
                self.buf[:m, p : p + m] = 0
            hidden = torch.from_numpy(~visibility).to(self.buf.device)
            self.buf[:n, past_len:end].masked_fill_(hidden, self.neg)
        self.written = (past_len, n)
        return self.buf4[:, :, :n, :end]


class TreeIds:
    """Token and position ids [1, N] of each round's tree, written into one buffer kept
    across the rounds of one request: two numpy writes into a view of it, where building
    both tensors from lists took five torch ops a round."""

    def __init__(self, device):
        self.device = torch.device(device)
        self.buf = torch.zeros((2, 0), dtype=torch.long)
        self.np = self.buf.numpy()

    def __call__(self, tree: DraftTree, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        n = len(tree)
        if n > self.buf.shape[1]:
            self.buf = torch.zeros((2, max(n, 2 * self.buf.shape[1], 32)), dtype=torch.long)
            self.np = self.buf.numpy()
        self.np[0, :n] = tree.tokens
        self.np[1, :n] = tree.depths
        self.np[1, :n] += start
        ids = self.buf[:, :n]
        if self.device.type != "cpu":
            ids = ids.to(self.device)
        return ids[0:1], ids[1:2]


def ancestry(parents: list[int]) -> np.ndarray:
    """[N, N] bool, row i: the ancestors of node i and i itself (parents[0] == -1).

    Node order puts every parent before its children, so row i is its parent's row plus
    itself. A row copy per node measured faster than the vectorised forms at tree sizes
    (7 us for 16 nodes, against 14-35 us for one pass per tree level and 18 us for
    repeated squaring of the parent matrix), since each numpy call costs microseconds.
    """
    n = len(parents)
    vis = np.zeros((n, n), dtype=bool)
    vis[0, 0] = True
    for i in range(1, n):
        vis[i, :i] = vis[parents[i], :i]
        vis[i, i] = True
    return vis


def build_tree(root_token: int, draft_logits: torch.Tensor, budget: int) -> DraftTree:
    """Best-first tree of at most `budget` nodes (plus the root) from logits [L, V]."""
    depth_limit, vocab = draft_logits.shape
    k = max(1, min(budget, vocab))
    if draft_logits.dtype != torch.float32:
        draft_logits = draft_logits.float()
    logp_t, tok_t = torch.log_softmax(draft_logits, dim=-1).topk(k, dim=-1)
    if logp_t.device.type != "cpu":
        logp_t, tok_t = logp_t.cpu(), tok_t.cpu()
    logp = logp_t.tolist()
    tok = tok_t.tolist()

    tokens = [root_token]
    parents = [-1]
    depths = [0]
    child_maps: list[dict[int, int]] = [{}]
    log_probs = [0.0]
    if budget <= 0 or depth_limit == 0:
        return DraftTree(tokens, parents, depths, child_maps, log_probs, np.ones((1, 1), bool))
    # Entries: (-log q, rank path for deterministic tie-breaks, parent, depth, rank, log q)
    heap = [(-logp[0][0], (0,), 0, 1, 0, logp[0][0])]
    while heap and len(tokens) - 1 < budget:
        _, ranks, parent, d, r, logw = heapq.heappop(heap)
        t = tok[d - 1][r]
        i = len(tokens)
        tokens.append(t)
        parents.append(parent)
        depths.append(d)
        child_maps.append({})
        log_probs.append(logw)
        child_maps[parent][t] = i
        if r + 1 < k:
            w = logw - logp[d - 1][r] + logp[d - 1][r + 1]
            heapq.heappush(heap, (-w, (*ranks[:-1], r + 1), parent, d, r + 1, w))
        if d < depth_limit:
            w = logw + logp[d][0]
            heapq.heappush(heap, (-w, (*ranks, 0), i, d + 1, 0, w))

    return DraftTree(tokens, parents, depths, child_maps, log_probs, ancestry(parents))


def follow_verified(tree: DraftTree, target_argmax: list[int]) -> tuple[list[int], int]:
    """Greedy walk: the accepted node path (starting at the root) and the bonus token."""
    cur = 0
    path = [0]
    while True:
        nxt = tree.child_maps[cur].get(target_argmax[cur])
        if nxt is None:
            return path, target_argmax[cur]
        cur = nxt
        path.append(cur)
