"""The same forward pass in fewer operations: the fast path beside model.py's plain one.

model.py writes each layer out as the course explains it: RMSNorm in four lines, q, k and v as three
projections, RoPE on q and then on k. Each line is one or more PyTorch operations, and each operation costs a
few microseconds of bookkeeping (checking its arguments, allocating its output, choosing a kernel) whatever
its size. A decode step of a small model multiplies small matrices by one row, so on a CPU that bookkeeping,
a thousand operations or so, is a good share of the step once the weights are 4-bit. This path computes the
same things with fewer operations:

    plain (model.py)                          here
    RMSNorm: float, pow, mean, rsqrt, mul …   F.rms_norm: one fused operation; with teachllm's C kernels,
                                              none: the C file normalises the rows as it reads them
    q_proj, k_proj, v_proj: three calls       one call on the three matrices' rows stacked (qkv)
    gate_proj, up_proj: two calls             one call (gate_up), then silu(gate) · up
    RoPE on q, then on k                      RoPE once, on q and k side by side
    nn.Module calls for every piece           a plain loop over the layers' tensors
    attention with an all-true mask (decode)  attention without one
    RoPE, cache write, attention: a dozen     decoding one sequence, where the C kernels run: one C call,
    operations for each layer                 decode_attention (teachllm/fastpath/csrc/attention.h), the same sums

The arithmetic is the same, the order of some float additions aside, so the logits agree with the plain
path to float rounding (tests/test_fast.py). `tl.load(weights="gguf")` uses it for prefill and decode when
nothing is traced; `lm.fast = None` turns it off, and chapter 10 times both.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..cache import KVCache
from ..model import Transformer
from . import kernels, native
from .fused_float import attend, rotate_half_sign
from .quant import QuantisedLinear, quantised_linear


def stacked(parts: list[QuantisedLinear]):
    """One quantised matrix holding `parts`' rows one after another, on their (common) kernel; None when they
    use different kernels or formats (then they stay separate calls)."""
    if len({(p.format, p.kernel, p.in_features) for p in parts}) != 1:
        return None
    blocks = torch.cat([p.blocks.flatten(1) for p in parts])  # [ΣN, G · bytes]: rows stack, blocks run along a row
    biases = [p.bias for p in parts]
    bias = None if all(b is None for b in biases) else torch.cat(
        [b if b is not None else torch.zeros(p.out_features) for p, b in zip(parts, biases, strict=True)])
    layer = quantised_linear(parts[0].format, blocks, parts[0].in_features, bias)
    if parts[0].kernel != layer.kernel:
        layer.use_kernel(parts[0].kernel, kernels.build(layer, parts[0].kernel))
    return layer


def project(layer, rows: torch.Tensor, cast: dict, norm: nn.Module | None = None) -> torch.Tensor:
    """`layer`'s matrix on rows [M, K] float32 (on norm(rows) when an RMSNorm `norm` is given), through its
    kernel's own entry point: [M, N] in the kernel's output dtype (float32 or bfloat16; adding it to float32
    promotes it, exactly). teachllm's C kernels apply the norm themselves as they read the rows; for the others
    `cast` keeps the normalised rows, converted to the dtype the kernel takes, so that q/k/v or gate/up do it once."""
    impl = layer.impl
    if norm is not None and isinstance(impl, kernels.Avx2):
        y = impl.mm(rows, norm)  # [M, N]
    else:
        if impl.takes not in cast:
            normed = rows if norm is None else F.rms_norm(rows, (rows.shape[-1],), norm.weight, norm.eps)
            cast[impl.takes] = normed.to(impl.takes)
        y = impl.mm(cast[impl.takes])  # [M, N]
    return y if layer.bias is None else y.float() + layer.bias


class FastPath:
    """model's weights, with q/k/v and gate/up stacked where they share a kernel; call it like model.forward
    with a cache and no trace."""

    def __init__(self, model: Transformer):
        self.model = model
        c = model.config
        self.qkv, self.gate_up = [], []
        for layer in model.layers:
            a, m = layer.self_attn, layer.mlp
            self.qkv.append(stacked([a.q_proj, a.k_proj, a.v_proj]) or [a.q_proj, a.k_proj, a.v_proj])
            self.gate_up.append(stacked([m.gate_proj, m.up_proj]) or [m.gate_proj, m.up_proj])
        self.c_attention_on = True  # False: PyTorch's RoPE, cache write and attention in every step
        self.sign = rotate_half_sign(c.head_dim)  # [d]: rotate_half(x) = roll(x, d/2) · sign

    def c_attention(self, cache, B: int, S: int, mask):
        """The C library whose decode_attention (teachllm/fastpath/csrc/attention.h) can take this step's attention, or
        None: it takes one token of one sequence that reads every key, in a float32 KVCache on the CPU, without
        q/k norms, where teachllm's C kernels run."""
        c, first = self.model.config, self.model.layers[0].self_attn
        if not (B == S == 1 and mask is None and isinstance(cache, KVCache) and cache.k.dtype == torch.float32
                and cache.k.device.type == "cpu" and cache.k.shape[1] == 1 and cache.length < cache.max_len
                and c.head_dim % 8 == 0 and c.head_dim <= 256 and not first.qk_norm and self.c_attention_on):
            return None
        try:
            return native.library("avx2")
        except RuntimeError:  # no AVX2 or no compiler: PyTorch's operations
            return None

    def __call__(self, ids: torch.Tensor, cache, last_only: bool = True) -> torch.Tensor:
        """Logits for the new tokens `ids` [B, S] after what `cache` holds: [B, 1, V] (last_only) or [B, S, V]."""
        model, c = self.model, self.model.config
        B, S = ids.shape
        n_h, n_kv, d, h = c.n_heads, c.n_kv_heads, c.head_dim, c.hidden_size
        _, (cos, sin), mask = model.prepare(S, B, cache)  # cos, sin [B, S, d]; mask [B, 1, S, T]
        if S == 1 and bool(mask.all()):
            mask = None  # one new token that may read every key: attention without a mask is the same, and faster
        cos, sin = cos[:, :, None], (sin * self.sign)[:, :, None]  # [B, S, 1, d]: every head alike
        c_lib = self.c_attention(cache, B, S, mask)
        if c_lib is not None:
            cos, sin = cos.contiguous(), sin.contiguous()  # [1, 1, 1, d]
            scores = torch.empty(cache.length + 1)  # the C file's scratch: one score per key
        x = model.embed_tokens(ids).view(B * S, h)  # [M, h], M = B·S rows
        for i, layer in enumerate(model.layers):
            a, m = layer.self_attn, layer.mlp
            cast = {}
            norm = layer.input_layernorm
            if isinstance(self.qkv[i], list):
                qkv = torch.cat([project(p, x, cast, norm).float() for p in self.qkv[i]], dim=-1)  # [M, (n_h+2n_kv)·d]
            else:
                qkv = project(self.qkv[i], x, cast, norm).float()  # [M, (n_h+2n_kv)·d]
            if c_lib is not None:  # one token of one sequence: RoPE, the cache write and attention in C
                qkv, out = qkv.contiguous(), torch.empty(1, n_h * d)  # [1, (n_h+2n_kv)·d], [1, n_h·d]
                k_all, v_all = cache.k[a.index], cache.v[a.index]  # [1, n_kv, max_len, d] each
                c_lib.decode_attention(qkv.data_ptr(), cos.data_ptr(), sin.data_ptr(), k_all.data_ptr(),
                                       v_all.data_ptr(), k_all.stride(1), cache.length, n_h, n_kv, d, a.scale,
                                       scores.data_ptr(), out.data_ptr())
            else:  # RoPE on q and k at once, the cache write, attention (fused_float.attend, the GPU step's too)
                out = attend(a, qkv.view(B, S, -1), cos, sin, cache, mask)  # [M, n_h·d]
            x = x + project(a.o_proj, out, {})  # [M, h]
            cast = {}
            norm = layer.post_attention_layernorm
            if isinstance(self.gate_up[i], list):
                gate, up = (project(p, x, cast, norm).float() for p in self.gate_up[i])  # [M, f] each
            else:
                gate, up = project(self.gate_up[i], x, cast, norm).float().chunk(2, dim=-1)  # [M, f] each
            x = x + project(m.down_proj, F.silu(gate) * up, {})  # [M, h]
        x = x.view(B, S, h)
        if last_only:
            x = x[:, -1:]  # [B, 1, h]
        if hasattr(model.lm_head, "impl"):  # the head quantised too (the GGUF file's, tied to the embedding)
            logits = project(model.lm_head, x.reshape(-1, h), {}, model.norm).float().view(*x.shape[:2], -1)
        else:
            logits = model.lm_head(F.rms_norm(x, (h,), model.norm.weight, model.norm.eps))  # [B, S', V]
        cache.advance(S)
        return logits
