"""Per-layer key/value cache with append, crop and compact-to-accepted-path.

Storage grows on demand in chunks of `chunk` rows (KV_CHUNK_TOKENS), up to `capacity`, the
context limit. Preallocating the whole context made every request pay for the longest
one: about 6 GB per request for Qwen3-8B at a 40k context, when most requests use a few
thousand rows. Within the allocation, appending a verify block is an in-place copy rather
than a torch.cat per layer per step (that reallocation dominated step time on CPU for small
models); only crossing a chunk boundary reallocates, and that copy (the valid rows, once per
`chunk` tokens) is small next to the attention that reads the whole cache every round.

Rows at or beyond `length` are never read (attention sees rows [0, end) right after writing
[length, end)), so new storage is left uninitialised and growth copies only the valid rows.
"""

from __future__ import annotations

import itertools

import torch

KV_CHUNK_TOKENS = 256


class KVCache:
    def __init__(
        self,
        num_layers: int,
        num_kv_heads: int,
        head_dim: int,
        capacity: int,
        *,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        batch: int = 1,
        chunk: int | None = None,
    ):
        chunk = chunk if chunk is not None else KV_CHUNK_TOKENS  # looked up now: tests shrink it
        if chunk < 1:
            raise ValueError(f"KV cache chunk must be at least 1 row, got {chunk}")
        empty = (num_layers, batch, num_kv_heads, 0, head_dim)
        self.keys = torch.empty(empty, device=device, dtype=dtype)
        self.values = torch.empty(empty, device=device, dtype=dtype)
        self.capacity = capacity
        self.chunk = chunk
        self.length = 0  # rows valid in every layer once a forward has finished
        self._pending = 0  # rows the current forward is appending

    @property
    def allocated(self) -> int:
        """Rows the storage holds now (a multiple of `chunk`, or `capacity`)."""
        return self.keys.shape[3]

    @property
    def row_bytes(self) -> int:
        """Bytes of keys and values for one token position across all layers."""
        k = self.keys
        return 2 * k.shape[0] * k.shape[1] * k.shape[2] * k.shape[4] * k.element_size()

    @property
    def nbytes(self) -> int:
        """Bytes allocated now (keys + values)."""
        return self.row_bytes * self.allocated

    @property
    def max_nbytes(self) -> int:
        """Bytes once grown to the full capacity."""
        return self.row_bytes * self.capacity

    def reserve(self, rows: int) -> None:
        """Make room for at least `rows` rows (rounded up to a chunk, capped at capacity)."""
        if rows <= self.allocated:
            return
        if rows > self.capacity:
            raise ValueError(f"KV cache capacity {self.capacity} exceeded ({rows} rows)")
        size = min(self.capacity, -(-rows // self.chunk) * self.chunk)
        shape = (*self.keys.shape[:3], size, self.keys.shape[4])
        n = self.length
        for name in ("keys", "values"):
            old = getattr(self, name)
            new = torch.empty(shape, device=old.device, dtype=old.dtype)
            new[:, :, :, :n] = old[:, :, :, :n]
            setattr(self, name, new)  # the old storage is freed here, before the next copy

    def append(
        self, layer: int, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write k/v ([1, H, T, D]) after the committed rows; return all rows for attention.

        Every layer of one forward appends the same T rows; `commit_append` then advances
        the length once, so layers never see each other's new rows twice. The first layer
        of a forward grows the storage when needed, so the others find room.
        """
        t = k.shape[2]
        end = self.length + t
        self.reserve(end)
        self.keys[layer, :, :, self.length : end] = k
        self.values[layer, :, :, self.length : end] = v
        self._pending = t
        return self.keys[layer, :, :, :end], self.values[layer, :, :, :end]

    def commit_append(self) -> None:
        self.length += self._pending
        self._pending = 0

    def crop(self, length: int) -> None:
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot crop a cache of {self.length} rows to {length}")
        self.length = length

    def compact(self, past_len: int, keep: torch.Tensor | list[int]) -> None:
        """Keep only rows past_len+keep[i] of the tail, moved to past_len+i, then crop.

        `keep` must be strictly increasing (an accepted root-to-leaf path in node order),
        so row i is only ever copied from a row at or after i.
        """
        keep = keep.tolist() if isinstance(keep, torch.Tensor) else list(keep)
        n = len(keep)
        if n and keep[-1] >= self.length - past_len:
            raise ValueError("compact index beyond the cache tail")
        # Rows already where they belong (the prefix the path shares with node order) are
        # not touched; an accepted path that is a prefix (about half of a DDTree request's
        # rounds) moves nothing at all and, being range(n), needs no order check.
        moves = [(i, src) for i, src in enumerate(keep) if src != i]
        if moves and any(b <= a for a, b in itertools.pairwise(keep)):
            raise ValueError("compact indices must be strictly increasing")
        # In place, row by row: keep[i] >= i, so a row is read before anything overwrites it.
        for i, src in moves:
            dst, src = past_len + i, past_len + src
            self.keys[:, :, :, dst] = self.keys[:, :, :, src]
            self.values[:, :, :, dst] = self.values[:, :, :, src]
        self.length = past_len + n

    def layer(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.keys[layer, :, :, : self.length], self.values[layer, :, :, : self.length]
