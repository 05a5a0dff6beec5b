"""PagedKVCache: K and V in a pool of fixed-size blocks, read through each sequence's block table.

The pool is one tensor per K and V:

    k, v: [L, num_blocks, block_size, n_kv, d]

A token at position p of a sequence lives in block `block_table[p // block_size]`, slot
`p % block_size`; flattening the first two dimensions, its *slot* in the pool is

    slot(p) = block_table[p // block_size] · block_size + p % block_size

(vLLM's "slot mapping"). Which blocks a sequence owns is decided by the BlockManager; this file only
moves tensors.

The decoder talks to a cache through three calls (see teachllm/model.py). `PagedBatch` is a view of
the pool for one forward call over several sequences and implements them:

- `positions_and_mask`: each row's own positions (sequences in one call have different lengths);
- `write(layer, k_new, v_new)`: store the new tokens' K and V at their slots, then gather every key
  and value of each row from its blocks into a dense [B, n_kv, T, d] tensor, T = the longest row,
  and let the mask hide the tail of the shorter rows. (A real engine's PagedAttention kernel reads the
  blocks in place instead of gathering them; the arithmetic is the same.)
- `advance`: nothing to do: how far each sequence has got is kept by the engine
  (`Request.num_computed_tokens`), since a view lives for a single call.

Rows may bring different numbers of new tokens (prefill chunks of different lengths): they are
left-padded to the longest, so the last column is every row's last real token (the one whose logits
pick the next token, `last_only=True`). Padding columns are computed but never stored; each reads
key 0 at least, so no softmax row is empty (an empty row would give NaN).
"""

from __future__ import annotations

import torch

from ..cache import attention_mask
from ..config import ModelConfig
from ..cost import kv_cache_bytes
from ..units import ceil_div


class PagedKVCache:
    def __init__(self, config: ModelConfig, num_blocks: int, block_size: int, *, dtype: torch.dtype,
                 device: str | torch.device):
        """The pool's dtype and device are asked for by name (`dtype=lm.dtype, device=lm.device`): the blocks must
        live where the model that writes them does, in its dtype."""
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be ≥ 1, got {num_blocks} and {block_size}")
        self.config = config
        self.num_blocks = num_blocks
        self.block_size = block_size
        shape = (config.n_layers, num_blocks, block_size, config.n_kv_heads, config.head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # [L, N, bs, n_kv, d]
        self.v = torch.zeros(shape, dtype=dtype, device=device)  # [L, N, bs, n_kv, d]

    @property
    def bytes_per_token(self) -> int:
        """2 · L · n_kv · d · element size, as for the contiguous cache."""
        return kv_cache_bytes(self.config, n_tokens=1, dtype=self.k.dtype)

    @property
    def bytes_allocated(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def slots(self, block_table: list[int], positions) -> torch.Tensor:
        """Pool slots of one sequence's tokens at `positions` (a LongTensor or a list): table[p // bs] · bs + p % bs,
        on the pool's device."""
        table = torch.tensor(block_table, dtype=torch.long, device=self.k.device)
        positions = torch.as_tensor(positions, device=self.k.device)
        return table[positions // self.block_size] * self.block_size + positions % self.block_size

    def gather(self, layer: int, block_table: list[int], length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One sequence's first `length` keys and values of one layer, in order: two [n_kv, length, d]."""
        slots = self.slots(block_table, torch.arange(length, device=self.k.device))  # [length]
        k = self.k[layer].flatten(0, 1)[slots]  # [length, n_kv, d]
        v = self.v[layer].flatten(0, 1)[slots]  # [length, n_kv, d]
        return k.transpose(0, 1), v.transpose(0, 1)

    def view(self, block_tables: list[list[int]], num_computed: list[int], num_new: list[int]) -> PagedBatch:
        """A cache for one forward call: row b has num_computed[b] tokens stored and brings num_new[b]."""
        return PagedBatch(self, block_tables, num_computed, num_new)

    def __repr__(self) -> str:
        c = self.config
        return (f"PagedKVCache(blocks={self.num_blocks}×{self.block_size} tokens, layers={c.n_layers}, "
                f"kv_heads={c.n_kv_heads}, head_dim={c.head_dim}, dtype={self.k.dtype}, "
                f"{self.bytes_allocated / 2**20:.2f} MiB)")


class PagedBatch:
    """The pool seen by one forward call over B sequences (see the module docstring)."""

    def __init__(self, pool: PagedKVCache, block_tables: list[list[int]], num_computed: list[int],
                 num_new: list[int]):
        if not (len(block_tables) == len(num_computed) == len(num_new)) or not block_tables:
            raise ValueError("one block table, one computed length and one new-token count per row are needed")
        if min(num_new) < 1:
            raise ValueError(f"every row must bring at least one new token, got {num_new}")
        device, bs = pool.k.device, pool.block_size
        for table, start, n in zip(block_tables, num_computed, num_new, strict=True):
            if len(table) * bs < start + n:
                raise ValueError(f"a block table of {len(table)} blocks holds {len(table) * bs} tokens, "
                                 f"not {start + n}; allocate blocks before the forward call")
        self.pool = pool
        self.n_new = max(num_new)  # S: the call's width (rows are left-padded to it)
        starts = torch.tensor(num_computed, device=device)  # [B] tokens already stored per row
        n = torch.tensor(num_new, device=device)  # [B] real new tokens per row
        S = self.n_new
        col = torch.arange(S, device=device)[None]  # [1, S]
        self.real = col >= (S - n)[:, None]  # [B, S] False on the left padding
        self.positions = (starts[:, None] + col - (S - n)[:, None]).clamp(min=0)  # [B, S] each row's own
        self.length = int((starts + n).max())  # T: keys in the longest row after this call
        key_pos = torch.arange(self.length, device=device)  # [T]
        width = ceil_div(self.length, bs)  # blocks the longest row spans
        tables = torch.zeros(len(block_tables), width, dtype=torch.long, device=device)  # [B, width], 0 = padding
        for b, table in enumerate(block_tables):
            tables[b, :len(table[:width])] = torch.tensor(table[:width], dtype=torch.long, device=device)
        # the slot of every key of every row [B, T]; past a row's end it points into block 0 (masked)
        self.key_slots = tables[:, key_pos // bs] * bs + key_pos % bs  # [B, T]
        new_slots = tables.gather(1, self.positions // bs) * bs + self.positions % bs  # [B, S]
        self.new_slots = new_slots[self.real]  # [N_real] where the real new tokens are stored

    def positions_and_mask(self, n_new: int, window: int | None = None):
        """Positions [B, S] and mask [B, 1, S, T]: key j is visible to a query at position p
        if j ≤ p (causal; this also hides the keys past a shorter row's end) and p − j < window."""
        if n_new != self.n_new:
            raise ValueError(f"this view was made for {self.n_new} new tokens per row, not {n_new}")
        key_pos = torch.arange(self.length, device=self.positions.device)  # [T] slot j of a row holds position j
        return self.positions, attention_mask(self.positions, key_pos, window)  # [B, S], [B, 1, S, T]

    def write(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the real new tokens' K and V ([B, n_kv, S, d]) in the pool; return each row's keys and
        values gathered from its blocks: two [B, n_kv, T, d]."""
        flat_k = self.pool.k[layer].flatten(0, 1)  # [N·bs, n_kv, d], a view of the pool
        flat_v = self.pool.v[layer].flatten(0, 1)  # [N·bs, n_kv, d]
        flat_k.index_copy_(0, self.new_slots, k_new.transpose(1, 2)[self.real])  # [N_real, n_kv, d] stored
        flat_v.index_copy_(0, self.new_slots, v_new.transpose(1, 2)[self.real])
        k_all = flat_k[self.key_slots].transpose(1, 2)  # [B, T, n_kv, d] → [B, n_kv, T, d]
        v_all = flat_v[self.key_slots].transpose(1, 2)  # [B, n_kv, T, d]
        return k_all, v_all

    def advance(self, n_new: int) -> None:
        """Nothing to move: the engine advances each Request.num_computed_tokens after the call."""
