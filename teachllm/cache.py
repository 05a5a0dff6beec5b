"""KVCache: the keys and values of every token seen so far, kept so decode never recomputes them.

Why only K and V? When one token is appended, the new row of QKᵀ needs the new query against
*all* keys, and the new output row needs *all* values; the old queries are never used again.
So each layer keeps K and V for past tokens, and the query is computed fresh for the new token.

This cache is contiguous and preallocated, as in the interview answer's `KVCache` sketch (chapter 4): one block of
memory sized for `max_len` tokens per sequence, filled left to right. Its size, per token, is

    2 (K and V) · n_layers · n_kv_heads · head_dim · bytes per element

Rows of a batch share one write position (`length`). Prompts of different lengths are
left-padded: `start[b]` is the first slot of row b that holds a real token, and the
attention mask hides the slots before it.
"""

from __future__ import annotations

from typing import Protocol

import torch

from .config import ModelConfig
from .cost import kv_cache_bytes


class AttentionCache(Protocol):
    """What the decoder asks of a cache: three calls per forward pass. The contiguous `KVCache`, the paged
    view of the serving chapters, the int8 cache and CacheBlend's context all implement them."""

    def positions_and_mask(self, n_new: int, window: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Before the layers run: each new token's position [B, S] (what RoPE sees) and which keys
        each may read [B, 1, S, T] (from `attention_mask`)."""

    def write(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """In each layer: store the new tokens' K and V [B, n_kv, S, d]; return all keys and values the
        new queries attend over, [B, n_kv, T, d] each."""

    def advance(self, n_new: int) -> None:
        """After the last layer: the new tokens are stored."""


def attention_mask(query_pos: torch.Tensor, key_pos: torch.Tensor, window: int | None = None) -> torch.Tensor:
    """Which keys each new query may read, from positions alone: [B, 1, S, T] bool.

    query_pos [B, S]: each new token's position in its own sequence (negative on left padding);
    key_pos [B, T] (or [T] for every row alike): the position of the token in each key slot (negative
    where a slot holds padding). A query at position p may read the key at position j when
    - causal: j ≤ p;
    - padding: j ≥ 0 (the slot holds a real token);
    - sliding window (Mistral): p − j < window, at most `window` tokens back, itself included.
    A query always reads the key of its own position, so no softmax row is empty (an empty row would
    give NaN): a padding query reads only itself.
    """
    q = query_pos[:, :, None]  # [B, S, 1]
    k = key_pos[..., None, :] if key_pos.dim() == 2 else key_pos[None, None, :]  # [B or 1, 1, T]
    allowed = (k <= q) & (k >= 0)  # [B, S, T]
    if window is not None:
        allowed = allowed & (q - k < window)
    allowed = allowed | (k == q)
    return allowed[:, None]  # [B, 1, S, T]


class KVCache:
    """Make one with lm.new_cache(max_len, batch_size), which checks the sizes against the model and the
    machine's memory and puts the cache on the model's device in its dtype; the constructor takes them as given,
    and asks for the dtype and device by name: a cache must live where its model does."""

    def __init__(self, config: ModelConfig, max_len: int, batch_size: int = 1, *, dtype: torch.dtype,
                 device: str | torch.device):
        self.config = config
        self.max_len = max_len
        self.batch_size = batch_size
        shape = (config.n_layers, batch_size, config.n_kv_heads, max_len, config.head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # [L, B, n_kv, max_len, d]
        self.v = torch.zeros(shape, dtype=dtype, device=device)  # [L, B, n_kv, max_len, d]
        self.length = 0  # slots filled so far (the same for every row)
        self.start = torch.zeros(batch_size, dtype=torch.long, device=device)  # [B] first real slot of each row

    # ---- what a student looks at ---------------------------------------------------------------
    def keys(self, layer: int) -> torch.Tensor:
        """Keys stored for one layer: [B, n_kv, length, d]."""
        return self.k[layer, :, :, : self.length]

    def values(self, layer: int) -> torch.Tensor:
        """Values stored for one layer: [B, n_kv, length, d]."""
        return self.v[layer, :, :, : self.length]

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token of one sequence takes: 2 · L · n_kv · d · element size."""
        return kv_cache_bytes(self.config, n_tokens=1, dtype=self.k.dtype)

    @property
    def bytes_allocated(self) -> int:
        return self.k.nbytes + self.v.nbytes

    @property
    def bytes_used(self) -> int:
        """Bytes of the slots filled so far, over all rows (padding slots included: they hold memory too)."""
        return self.length * self.batch_size * self.bytes_per_token

    def __repr__(self) -> str:
        c = self.config
        return (f"KVCache(batch={self.batch_size}, length={self.length}/{self.max_len}, "
                f"layers={c.n_layers}, kv_heads={c.n_kv_heads}, head_dim={c.head_dim}, dtype={self.k.dtype}, "
                f"used={self.bytes_used / 2**20:.2f} MiB of {self.bytes_allocated / 2**20:.2f} MiB)")

    # ---- what the model does with it -----------------------------------------------------------
    def check_room(self, n_new: int) -> None:
        """Raise if `n_new` more tokens do not fit (no silent truncation, no wrap-around)."""
        if self.length + n_new > self.max_len:
            raise ValueError(f"the KV cache is full: it holds {self.length} of {self.max_len} slots, "
                             f"and {n_new} more token(s) do not fit; make a larger cache with "
                             f"lm.new_cache(max_len=...) (at most {self.config.max_position_embeddings})")

    def write(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the new tokens' K and V after the filled slots; return all keys and values up to them.

        k_new, v_new: [B, n_kv, S, d]. Returns two views of shape [B, n_kv, length + S, d].
        The length itself moves on only in `advance`, once every layer has written.
        """
        end = self.length + k_new.shape[2]
        self.k[layer, :, :, self.length:end] = k_new
        self.v[layer, :, :, self.length:end] = v_new
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def positions_and_mask(self, n_new: int, window: int | None = None):
        """For `n_new` tokens about to be written: their positions [B, S] (what RoPE sees; padding
        slots sit at 0) and which slots each may attend to [B, 1, S, T]."""
        slots = torch.arange(self.length + n_new, device=self.start.device)  # [T] every slot up to the new ones
        key_pos = slots[None, :] - self.start[:, None]  # [B, T] position of each slot's token; < 0: padding
        query_pos = key_pos[:, self.length:]  # [B, S] the new tokens' positions
        return query_pos.clamp(min=0), attention_mask(query_pos, key_pos, window)  # padding sits at 0 for RoPE

    def advance(self, n_new: int) -> None:
        self.length += n_new

    def truncate(self, length: int) -> None:
        """Forget every token after the first `length` (speculative decoding rolls back rejected drafts).
        The slots keep their old values; the next write overwrites them."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate a cache of length {self.length} to {length}")
        self.length = length

    def reorder(self, rows: torch.Tensor) -> None:
        """Make row i a copy of row rows[i] (beam search: each surviving beam takes its parent's cache)."""
        self.k = self.k[:, rows]
        self.v = self.v[:, rows]
        self.start = self.start[rows]

    def reset(self) -> None:
        """Forget every token (the memory stays allocated)."""
        self.length = 0
        self.start.zero_()
