"""An int8 KV cache: K and V in a quarter of the memory, at the cost of a small rounding error.

Each head of each token is quantised on its own (absmax, symmetric):

    scale = max_i |x_i| / 127          over the d values of one head of one token
    q_i   = round(x_i / scale)  ∈ [−127, 127]        (stored as int8, with the fp32 scale)
    x̂_i  = q_i · scale,          |x_i − x̂_i| ≤ scale / 2

Bytes per token: 2 · L · n_kv · (d + 4) instead of 2 · L · n_kv · d · 4 in fp32, i.e. (d + 4) / 4d
≈ 27 % for d = 64. Attention still runs in the model's dtype: the cache dequantises what it returns.
`int8_error` measures what the rounding costs, against the same decode with the fp32 cache.
"""

from __future__ import annotations

import torch

from ..cache import attention_mask
from ..config import ModelConfig


def quantize_int8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [..., d] → q int8 [..., d] and scale [..., 1] with x ≈ q · scale."""
    scale = x.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-8) / 127  # [..., 1]
    q = torch.round(x.float() / scale).clamp(-127, 127).to(torch.int8)  # [..., d]
    return q, scale


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return (q.float() * scale).to(dtype)


class Int8KVCache:
    """A contiguous cache (like teachllm.cache.KVCache, one row per sequence, no left padding) that
    stores K and V as int8 plus one scale per token and head. It implements the decoder's three calls."""

    def __init__(self, config: ModelConfig, max_len: int, batch_size: int = 1, *, dtype: torch.dtype,
                 device: str | torch.device):
        """dtype: what the keys and values are read back as (the model's, lm.dtype); device: the model's."""
        if max_len < 1 or batch_size < 1:
            raise ValueError(f"max_len and batch_size must be ≥ 1, got {max_len} and {batch_size}")
        self.config, self.max_len, self.dtype = config, max_len, dtype
        shape = (config.n_layers, batch_size, config.n_kv_heads, max_len, config.head_dim)
        self.k = torch.zeros(shape, dtype=torch.int8, device=device)  # [L, B, n_kv, max_len, d]
        self.v = torch.zeros(shape, dtype=torch.int8, device=device)  # [L, B, n_kv, max_len, d]
        self.k_scale = torch.zeros(shape[:-1] + (1,), device=device)  # [L, B, n_kv, max_len, 1]
        self.v_scale = torch.zeros(shape[:-1] + (1,), device=device)  # [L, B, n_kv, max_len, 1]
        self.length = 0
        self.start = torch.zeros(batch_size, dtype=torch.long, device=device)  # [B] no padding

    @property
    def bytes_per_token(self) -> int:
        """2 · L · n_kv · (d int8 values + one fp32 scale)."""
        c = self.config
        return 2 * c.n_layers * c.n_kv_heads * (c.head_dim + 4)

    @property
    def bytes_allocated(self) -> int:
        return self.k.nbytes + self.v.nbytes + self.k_scale.nbytes + self.v_scale.nbytes

    def positions_and_mask(self, n_new: int, window: int | None = None):
        if self.length + n_new > self.max_len:
            raise ValueError(f"the int8 KV cache is full: {self.length} + {n_new} > {self.max_len}")
        slots = torch.arange(self.length + n_new, device=self.start.device)  # [T] no padding: slot = position
        positions = slots[self.length:].expand(len(self.start), n_new)  # [B, S]
        return positions, attention_mask(positions, slots, window)

    def write(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor):
        """Quantise and store the new K and V ([B, n_kv, S, d]); return all of them dequantised [B, n_kv, T, d]."""
        end = self.length + k_new.shape[2]
        self.k[layer, :, :, self.length:end], self.k_scale[layer, :, :, self.length:end] = quantize_int8(k_new)
        self.v[layer, :, :, self.length:end], self.v_scale[layer, :, :, self.length:end] = quantize_int8(v_new)
        k = dequantize_int8(self.k[layer, :, :, :end], self.k_scale[layer, :, :, :end], self.dtype)
        v = dequantize_int8(self.v[layer, :, :, :end], self.v_scale[layer, :, :, :end], self.dtype)
        return k, v

    def advance(self, n_new: int) -> None:
        self.length += n_new


@torch.no_grad()
def int8_error(lm, prompt_ids: list[int], n_decode: int = 16) -> dict:
    """Greedy decode with the fp32 cache, and the same tokens through the int8 cache: the logit error at
    each step, and how long a free-running int8 greedy decode keeps the fp32 one's tokens."""
    fp_cache = lm.new_cache(max_len=len(prompt_ids) + n_decode)
    q_cache = Int8KVCache(lm.config, len(prompt_ids) + n_decode, dtype=lm.dtype, device=lm.device)
    free_cache = Int8KVCache(lm.config, len(prompt_ids) + n_decode, dtype=lm.dtype, device=lm.device)
    ids = torch.tensor([prompt_ids], device=lm.device)  # [1, P]
    fp = lm.model(ids, fp_cache, last_only=True)[0, -1]  # [V]
    q = lm.model(ids, q_cache, last_only=True)[0, -1]  # [V]
    free = lm.model(ids, free_cache, last_only=True)[0, -1]
    diffs, kls, agree, fp_tokens, free_tokens = [], [], [], [], []
    for step in range(n_decode):
        lp, lq = torch.log_softmax(fp.float(), -1), torch.log_softmax(q.float(), -1)
        diffs.append(float((fp - q).abs().max()))
        kls.append(float((lp.exp() * (lp - lq)).sum()))
        agree.append(int(fp.argmax()) == int(q.argmax()))
        fp_tokens.append(int(fp.argmax()))
        free_tokens.append(int(free.argmax()))
        if step == n_decode - 1:
            break
        token = torch.tensor([[fp_tokens[-1]]], device=lm.device)  # teacher-forced: the fp32 run's token
        fp = lm.model(token, fp_cache, last_only=True)[0, -1]
        q = lm.model(token, q_cache, last_only=True)[0, -1]
        free = lm.model(torch.tensor([[free_tokens[-1]]], device=lm.device), free_cache, last_only=True)[0, -1]
    same = next((i for i, (a, b) in enumerate(zip(fp_tokens, free_tokens, strict=True)) if a != b), n_decode)
    fp_bytes = 2 * lm.config.n_layers * lm.config.n_kv_heads * lm.config.head_dim * fp_cache.k.element_size()
    return {"max_abs_logit_diff": max(diffs), "mean_kl": sum(kls) / len(kls), "top1_agreement": sum(agree) / len(agree),
            "greedy_tokens_identical": same, "n_decode": n_decode, "bytes_per_token_fp": fp_bytes,
            "bytes_per_token_int8": q_cache.bytes_per_token, "memory_ratio": q_cache.bytes_per_token / fp_bytes}
