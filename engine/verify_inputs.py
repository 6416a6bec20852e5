"""The tree verify's inputs, written in place into buffers kept across a request's rounds.

A DDTree round hands the target three tensors built from its tree: token ids, position
ids and the additive attention mask. Building them with torch ops from Python lists cost
a round, and only it, tens of microseconds; so each lives in a buffer made once per tree
size, and a round only writes the bytes that changed. On CPU the writes are Python
memoryview slice assignments of bytes built from the tree's lists: no numpy or torch
call at all. Between two forwards, where a round runs them, a numpy or torch call costs
several microseconds more than in a loop of its own (its code has left the CPU's caches).
"""

from __future__ import annotations

from array import array

import torch

from engine.tree import DraftTree


class TreeMask:
    """The verify mask: zeros over the past, and over the new rows 0 where a node sees
    another (itself and its ancestors) and the dtype's minimum elsewhere.

    Rebuilding it allocated and filled [N, past+N] per round, which grows with context;
    this buffer only clears what the previous round's block leaves uncovered and writes
    the new block, so a round touches N*N entries whatever the context.

    With `groups` > 1 (query heads per K/V head) the mask comes already folded as
    `Attention.attend` folds the query heads, [1, 1, groups*N, past+N] with the N rows
    repeated per group: written once a round here instead of repeated by every layer.
    The buffer holds exactly N rows per group, so that fold is a view; a round whose tree
    has another size (only near the context limit) reallocates it.
    """

    def __init__(self, dtype: torch.dtype, device, groups: int = 1):
        self.dtype, self.device, self.groups = dtype, torch.device(device), groups
        self.neg = torch.finfo(dtype).min
        # On CPU in float32 rows are written as bytes: one element's bytes, seen / hidden.
        self.seen = self.hidden = None
        if self.device.type == "cpu" and dtype == torch.float32:
            pair = torch.tensor([0.0, self.neg], dtype=dtype).numpy().tobytes()
            self.seen, self.hidden = pair[:4], pair[4:]
        self._allocate(0, 0)

    def _allocate(self, n: int, cols: int) -> None:
        self.buf = torch.zeros((self.groups, n, cols), dtype=self.dtype, device=self.device)
        self.folded = self.buf.view(1, 1, self.groups * n, cols)
        # (memoryview cannot cast an empty buffer: the first round allocates a real one)
        cast = self.seen is not None and self.buf.numel() > 0
        self.mem = memoryview(self.buf.numpy()).cast("B") if cast else None
        # Byte offset of each row of the buffer, as (row of the tree, [one per group]).
        stride = cols * self.buf.element_size()
        self.row_at = [[(g * n + i) * stride for g in range(self.groups)] for i in range(n)]
        self.written: int | None = None  # past_len of the block the last round wrote

    def __call__(self, tree: DraftTree, past_len: int) -> torch.Tensor:
        n = len(tree)
        end = past_len + n
        _, rows, cols = self.buf.shape
        if n != rows or end > cols:  # columns grow by doubling: a long request reallocates rarely
            self._allocate(n, max(256, cols if end <= cols else max(end, 2 * cols)))
        if self.mem is not None:
            self._write_bytes(tree.parents, past_len)
        else:
            p = self.written
            if p is not None:
                self.buf[:, :, p : p + n] = 0
            hidden = torch.from_numpy(~tree.visibility).to(self.device)
            self.buf[:, :, past_len:end].masked_fill_(hidden, self.neg)
        self.written = past_len
        return self.folded[..., :end]

    def _write_bytes(self, parents: list[int], past_len: int) -> None:
        """Row i is its parent's row with its own column seen (parents precede children),
        written after zeros over whatever the previous block leaves uncovered."""
        n = len(parents)
        seen, hidden, size = self.seen, self.hidden, len(self.seen)
        p = self.written
        first = past_len  # the first column each row write covers
        if p is not None and p != past_len:
            if p < past_len < p + n:  # the old block's columns left of the new one: zeros
                first = p
            else:  # no overlap (or an earlier past): clear the old block on its own
                zeros = bytes(n * size)
                for at in (a + p * size for ats in self.row_at for a in ats):
                    self.mem[at : at + len(zeros)] = zeros
        lead = bytes((past_len - first) * size)
        rows = [seen + hidden * (n - 1)]
        for i in range(1, n):
            above = rows[parents[i]]
            rows.append(above[: i * size] + seen + above[(i + 1) * size :])
        shift = first * size
        mem = self.mem
        for row, ats in zip(rows, self.row_at, strict=True):
            data = lead + row
            for at in ats:
                mem[at + shift : at + shift + len(data)] = data


class RowIds:
    """A long tensor of row indices (the accepted path's rows of the verify's outputs), in
    one buffer kept across a request's rounds: a memoryview write and a slice, where
    `torch.tensor(path)` took ~30 us between the forwards."""

    def __init__(self, device, size: int = 16):
        self.device = torch.device(device)
        self._allocate(size)

    def _allocate(self, size: int) -> None:
        self.buf = torch.zeros(size, dtype=torch.long)
        self.mem = memoryview(self.buf.numpy()).cast("B").cast("q")

    def __call__(self, rows: list[int]) -> torch.Tensor:
        n = len(rows)
        if n > len(self.mem):
            self._allocate(max(n, 2 * len(self.mem)))
        self.mem[:n] = array("q", rows)
        ids = self.buf[:n]
        return ids if self.device.type == "cpu" else ids.to(self.device)


class TreeIds:
    """Token and position ids [1, N] of each round's tree, in one [2, N] buffer kept
    across the rounds of one request: one memoryview write of both rows, where building
    both tensors from lists took five torch ops a round. The buffer is exactly N wide
    (reallocated when a tree has another size), so the two rows it hands out are views
    made once, not sliced every round."""

    def __init__(self, device):
        self.device = torch.device(device)
        self._allocate(0)

    def _allocate(self, n: int) -> None:
        self.buf = torch.zeros((2, n), dtype=torch.long)
        self.mem = memoryview(self.buf.numpy()).cast("B").cast("q") if n else None
        self.rows = (self.buf[0:1], self.buf[1:2])

    def __call__(self, tree: DraftTree, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        n = len(tree)
        if n != self.buf.shape[1]:
            self._allocate(n)
        self.mem[:] = array("q", tree.tokens + [start + d for d in tree.depths])
        if self.device.type != "cpu":
            ids = self.buf.to(self.device)
            return ids[0:1], ids[1:2]
        return self.rows
