"""StaticKVCache: the KV cache with shapes that never change, so that a decode step can be replayed as a CUDA graph.

Who reads it: the GPU fast path (teachllm/fastpath/graph.py), not the chapters. The chapters read cache.py's
`KVCache`, which is the same idea written for a person: `write` returns the slots filled so far, so the keys a
step attends over grow by one every step, and the cache's length is a Python int.

A CUDA graph records a step's kernels once, with their arguments (shapes, pointers, scalars) baked in, and
replays them later with no Python in between. So everything a decode step touches must have the same shape
and live at the same address every step, and no Python number may change from one step to the next. Here:

    KVCache (cache.py)                             StaticKVCache (here)
    write returns k[..., :length + S]              write returns the whole buffer, max_len slots
    the length is a Python int                     the length is a tensor on the device, moved on in place
    k[..., length:end] = k_new (a slice)           k.index_copy_(slot dim, slots of the new tokens, k_new)
    the mask covers length + S keys               the mask covers all max_len keys

The slots not yet written need no mask of their own: a slot at or after the new tokens holds a position later
than every new query's, so the causal rule of `attention_mask` already hides it (an empty slot, or one a
`truncate` left behind). Attention over max_len keys costs more than over the filled ones (every step reads
all the slots); what it buys is a step that can be recorded once and replayed.

Its host side keeps one Python int, `filled`: how many slots the calls on this cache have asked for, counted
on the host as they are made, never read back from the device. `check_room` reads it, so the room check costs
no synchronisation.
"""

from __future__ import annotations

import torch

from ..cache import attention_mask
from ..config import ModelConfig


class StaticKVCache:
    """The AttentionCache protocol (cache.py) with fixed shapes: `positions_and_mask`, `write`, `advance`.

    Made on the model's device in the model's dtype; all rows of a batch share one write position, and
    `start[b]` (the first real slot of row b) hides left padding as in `KVCache`."""

    def __init__(self, config: ModelConfig, max_len: int, batch_size: int = 1, *, dtype: torch.dtype,
                 device: str | torch.device):
        for name, value in (("max_len", max_len), ("batch_size", batch_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"StaticKVCache: {name}={value!r}; give a whole number of at least 1")
        if max_len > config.max_position_embeddings:
            raise ValueError(f"StaticKVCache: max_len={max_len} is beyond the model's context window of "
                             f"{config.max_position_embeddings} tokens; give max_len <= "
                             f"{config.max_position_embeddings}")
        self.config = config
        self.max_len = max_len
        self.batch_size = batch_size
        shape = (config.n_layers, batch_size, config.n_kv_heads, max_len, config.head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # [L, B, n_kv, max_len, d]
        self.v = torch.zeros(shape, dtype=dtype, device=device)  # [L, B, n_kv, max_len, d]
        self.layers = list(zip(self.k.unbind(0), self.v.unbind(0), strict=True))  # per layer, views [B, n_kv, T, d]
        self.length = torch.zeros((), dtype=torch.long, device=device)  # [] slots filled, on the device
        self.start = torch.zeros(batch_size, dtype=torch.long, device=device)  # [B] first real slot of each row
        self.slots = torch.arange(max_len, device=device)  # [T] the index of every slot, T = max_len
        self.new_slots = self.length[None]  # [S] where the new tokens go: set by positions_and_mask
        self.root = self  # the cache whose host count `filled` this one shares (itself, or the one it views)
        self._filled = 0

    @property
    def filled(self) -> int:
        """Slots the calls so far have filled, counted on the host (the device holds the same number in
        `length`; reading that would wait for the device)."""
        return self.root._filled

    def rows(self, n: int) -> StaticKVCache:
        """The first `n` rows of this cache, sharing its memory, its length and its host count: what a batch of
        n sequences decodes through when the cache was made for more (the CUDA graphs of smaller batch sizes)."""
        if not 1 <= n <= self.batch_size:
            raise ValueError(f"StaticKVCache.rows({n}): this cache holds {self.batch_size} rows; "
                             f"ask for 1 to {self.batch_size}, or make a cache with batch_size={n}")
        if n == self.batch_size:
            return self
        view = object.__new__(StaticKVCache)
        view.__dict__.update(self.__dict__)
        view.batch_size = n
        view.k, view.v = self.k[:, :n], self.v[:, :n]  # [L, n, n_kv, max_len, d] views of the same memory
        view.layers = list(zip(view.k.unbind(0), view.v.unbind(0), strict=True))
        view.start = self.start[:n]  # [n] a view: setting it sets the parent's rows
        view.root = self.root
        return view

    def __repr__(self) -> str:
        c = self.config
        return (f"StaticKVCache(batch={self.batch_size}, filled={self.filled}/{self.max_len}, "
                f"layers={c.n_layers}, kv_heads={c.n_kv_heads}, head_dim={c.head_dim}, dtype={self.k.dtype}, "
                f"device={self.k.device})")

    # ---- what the model does with it -----------------------------------------------------------
    def check_room(self, n_new: int) -> None:
        """Raise if `n_new` more tokens do not fit; reads the host count, so it never waits for the device."""
        if self.filled + n_new > self.max_len:
            raise ValueError(f"the static KV cache is full: it holds {self.filled} of {self.max_len} slots, "
                             f"and {n_new} more token(s) do not fit; make a StaticKVCache with a larger max_len "
                             f"(at most {self.config.max_position_embeddings})")

    def positions_and_mask(self, n_new: int, window: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """For `n_new` tokens about to be written: their positions [B, S] (what RoPE sees; padding sits at 0)
        and which of all max_len slots each may attend to [B, 1, S, max_len]. Remembers the slots they go to."""
        self.new_slots = self.length + self.slots[:n_new]  # [S] length, length + 1, ..., length + S - 1
        key_pos = self.slots[None, :] - self.start[:, None]  # [B, T] position of each slot's token; < 0: padding
        query_pos = self.new_slots[None, :] - self.start[:, None]  # [B, S] the new tokens' positions
        return query_pos.clamp(min=0), attention_mask(query_pos, key_pos, window)  # [B, S], [B, 1, S, T]

    def write(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the new tokens' K and V [B, n_kv, S, d] at the slots `positions_and_mask` chose; return the
        whole buffers, [B, n_kv, max_len, d] each (the mask hides what is not written yet)."""
        k, v = self.layers[layer]  # [B, n_kv, max_len, d] each, made once (indexing self.k each step is an op too)
        k.index_copy_(2, self.new_slots, k_new)
        v.index_copy_(2, self.new_slots, v_new)
        return k, v

    def advance(self, n_new: int) -> None:
        """After the last layer: the length moves on, in place on the device, and the host count with it."""
        self.length.add_(n_new)  # [] in place: a CUDA graph replays this too
        self.root._filled += n_new

    def reset(self) -> None:
        """Forget every token (the memory stays allocated, at the same addresses)."""
        self.length.zero_()
        self.start.zero_()
        self.root._filled = 0
