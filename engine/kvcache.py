"""Per-layer key/value cache with append, crop and compact-to-accepted-path.

Storage is preallocated to the context limit so that appending a verify block is an
in-place copy rather than a torch.cat per layer per step (that reallocation dominated
step time on CPU for small models).
"""

from __future__ import annotations

import torch


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
    ):
        shape = (num_layers, batch, num_kv_heads, capacity, head_dim)
        self.keys = torch.zeros(shape, device=device, dtype=dtype)
        self.values = torch.zeros(shape, device=device, dtype=dtype)
        self.capacity = capacity
        self.length = 0  # rows valid in every layer once a forward has finished
        self._pending = 0  # rows the current forward is appending

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write k/v ([1, H, T, D]) after the committed rows; return all rows for attention.

        Every layer of one forward appends the same T rows; `commit_append` then advances
        the length once, so layers never see each other's new rows twice.
        """
        t = k.shape[2]
        end = self.length + t
        if end > self.capacity:
            raise ValueError(f"KV cache capacity {self.capacity} exceeded ({end} rows)")
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
        keep = torch.as_tensor(keep, dtype=torch.long, device=self.keys.device)
        n = keep.numel()
        if n and not bool((keep[1:] > keep[:-1]).all()):
            raise ValueError("compact indices must be strictly increasing")
        if n and int(keep[-1]) >= self.length - past_len:
            raise ValueError("compact index beyond the cache tail")
        contiguous = n == 0 or int(keep[-1]) == n - 1  # accepted path is a prefix: nothing moves
        if not contiguous:
            src = keep + past_len
            dst = slice(past_len, past_len + n)
            self.keys[:, :, :, dst] = self.keys.index_select(3, src)
            self.values[:, :, :, dst] = self.values.index_select(3, src)
        self.length = past_len + n

    def layer(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.keys[layer, :, :, : self.length], self.values[layer, :, :, : self.length]
