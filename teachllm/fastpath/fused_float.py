"""The forward pass in fewer operations for float weights, on any device: the step the GPU fast path decodes with.

Who reads it: the fast path (graph.py's decode_step and CudaGraphDecoder, loop.py) and the tests. The chapters read
model.py, which writes each layer out as the course explains it; fused.py does what this file does for the GGUF's
4-bit weights on the CPU. Here the weights are model.py's own float32, bfloat16 or float16 nn.Linear matrices:

    model.py                                   here
    q_proj, k_proj, v_proj: three matmuls      one, on the three matrices' rows stacked (qkv)
    gate_proj, up_proj: two matmuls            one (gate_up), then silu(gate) · up
    o_proj, down_proj, then the residual add   one addmm each: the matmul adds the residual itself
    RMSNorm written out                        F.rms_norm (one call; on the CPU PyTorch still runs the same six
                                               operations, pow, mean, add, rsqrt, mul, mul)
    RoPE's cos and sin computed every call     one table of cos and sin for every position, made once on the
                                               model's device in its dtype, read at the cache's positions (a gather)
    RoPE on q, then on k, rotate_half by cat   RoPE once, on q and k side by side, rotate_half by roll
    the boolean mask, turned into -inf and 0   turned once per step, not once per layer
    by SDPA in every layer
    activations [B, S, h], nn.Module calls     rows [B·S, h] (no reshapes around each matmul), a plain loop

On a GPU each operation that computes launches about one kernel, a few microseconds of the host's time whatever
its size: a decode step of a small model is launch-bound, so fewer operations is a faster step before the CUDA
graph removes the launches' Python, and a shorter graph after. `operations` in teachllm/bench/fast.py counts them
(on the CPU in float32, one layer computes 25 operations here and 39 in model.py).

Stacking moves no numbers. The stacked matrix is built once, and each of model.py's matrices becomes a block of
its rows (`Parameter.data` is pointed at a view): the reference and this path read the same memory, so an edit
to the weights is seen by both, and no memory is added. If the model's parameters are replaced (`model.to(...)`,
a new dtype), `current()` says so and the fast path builds a new FusedStep. gpt-fast (its Attention's `wqkv`) and
nano-vllm (QKVParallelLinear, MergedColumnParallelLinear, RotaryEmbedding's `cos_sin_cache` read at the positions)
load the weights stacked in the first place; teachllm keeps model.py's names and stacks in place.

The arithmetic is the same as model.py's (a matmul over more rows may sum in another order, F.rms_norm multiplies
by the norm's weight before rounding to 16 bits where model.py rounds first), so the logits agree to the dtype's
tolerance (tests/test_fused_float.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..model import Attention, Transformer, rope_cos_sin

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def why_unfused(model: Transformer) -> str | None:
    """None when every matrix of `model` is a plain float nn.Linear on one device in one dtype (what this file
    fuses); otherwise, in one line, why not."""
    w = model.embed_tokens.weight
    if w.dtype not in FLOAT_DTYPES:
        return f"the weights are {w.dtype}: the fused step takes float32, bfloat16 or float16"
    for i, layer in enumerate(model.layers):
        a, m = layer.self_attn, layer.mlp
        for name, linear in (("q_proj", a.q_proj), ("k_proj", a.k_proj), ("v_proj", a.v_proj), ("o_proj", a.o_proj),
                             ("gate_proj", m.gate_proj), ("up_proj", m.up_proj), ("down_proj", m.down_proj)):
            if type(linear) is not nn.Linear:
                return f"layer {i}'s {name} is a {type(linear).__name__}, not a plain nn.Linear"
            if linear.weight.dtype != w.dtype or linear.weight.device != w.device:
                return (f"layer {i}'s {name} is {linear.weight.dtype} on {linear.weight.device}, the embedding "
                        f"{w.dtype} on {w.device}: the fused step wants one dtype on one device")
    if type(model.lm_head) is not nn.Linear:
        return f"the LM head is a {type(model.lm_head).__name__}, not a plain nn.Linear"
    return None


def stack_rows(linears: list[nn.Linear]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One matrix [ΣN, K] (and bias [ΣN], or None) holding the linears' rows one after another. Each linear's
    weight and bias become views of it, so the linears and the stack share one copy of the numbers."""
    weight = torch.cat([m.weight.detach() for m in linears])  # [ΣN, K]
    has_bias = [m.bias is not None for m in linears]
    if any(has_bias) and not all(has_bias):
        raise ValueError("stack_rows: some of the matrices have a bias and some not; give all or none")
    bias = torch.cat([m.bias.detach() for m in linears]) if all(has_bias) else None  # [ΣN]
    start = 0
    for m in linears:
        rows = slice(start, start + m.out_features)
        m.weight.data = weight[rows]  # [N, K] the same Parameter, now a view of the stacked rows
        if bias is not None:
            m.bias.data = bias[rows]
        start += m.out_features
    return weight, bias


def rope_table(model: Transformer, n_positions: int, sign: torch.Tensor) -> torch.Tensor:
    """cos and sin of every position below n_positions, [P, 2, 1, d] in the model's dtype on its device: the
    numbers model.py's rope_cos_sin computes (the same float32 angles, rounded once). The sin half is multiplied
    by `sign` [d] (-1 then +1), which turns rotate_half(x) into a roll: see `attend`."""
    w = model.embed_tokens.weight
    positions = torch.arange(n_positions, device=w.device)  # [P]
    cos, sin = rope_cos_sin(model.inv_freq, positions, w.dtype)  # [P, d] each
    return torch.stack([cos, sin * sign.to(w.device, w.dtype)], dim=1)[:, :, None]  # [P, 2, 1, d]


def rotate_half_sign(d: int) -> torch.Tensor:
    """[d]: -1 on the first half, +1 on the second. rotate_half(x) = cat(-x₂, x₁) = roll(x, d/2) · sign."""
    return torch.cat([-torch.ones(d // 2), torch.ones(d // 2)])


def attend(a: Attention, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache, mask) -> torch.Tensor:
    """One layer's attention from its stacked projections qkv [B, S, (n_h + 2·n_kv)·d]: q/k norms where the model
    has them, RoPE on q and k at once (cos, sin [B, S, 1, d], sin times rotate_half_sign), the cache write, and
    scaled dot-product attention over what the cache returns, under `mask` (bool or additive, [B, 1, S, T], or
    None: every key). Returns the heads' outputs [B·S, n_h·d], ready for o_proj."""
    B, S = qkv.shape[:2]
    n_h, n_kv, d = a.n_heads, a.n_kv_heads, a.head_dim
    qkv = qkv.view(B, S, n_h + 2 * n_kv, d)
    qk, v = qkv[:, :, :n_h + n_kv], qkv[:, :, n_h + n_kv:]  # [B, S, n_h+n_kv, d], [B, S, n_kv, d]
    if a.qk_norm:
        qk = torch.cat([F.rms_norm(qk[:, :, :n_h], (d,), a.q_norm.weight, a.q_norm.eps),
                        F.rms_norm(qk[:, :, n_h:], (d,), a.k_norm.weight, a.k_norm.eps)], dim=2)
    qk = qk * cos + qk.roll(d // 2, dims=-1) * sin  # RoPE on q and k at once: x·cos + rotate_half(x)·sin, as
    # model.py rounds it (an addcmul would save an operation, but its fused multiply-add rounds once, not twice)
    k_all, v_all = cache.write(a.index, qk[:, :, n_h:].transpose(1, 2), v.transpose(1, 2))  # [B, n_kv, T, d] each
    out = F.scaled_dot_product_attention(qk[:, :, :n_h].transpose(1, 2), k_all, v_all, attn_mask=mask,
                                         scale=a.scale, enable_gqa=n_h != n_kv)  # [B, n_h, S, d]
    return out.transpose(1, 2).reshape(B * S, n_h * d)  # [B·S, n_h·d]


class FusedStep:
    """model.forward with a cache and no trace, in fewer operations; call it as model(ids, cache, last_only=True).

    Built once per model (it stacks the weights in place) for caches of up to `max_len` positions: the RoPE
    table's length, by default the model's context window (the bundled model's table: 8,192 × 2 × 64 numbers).

    Every tensor it reads each step lives on the device: the positions and the mask come from the cache (a
    StaticKVCache's are device tensors), the cos and sin are gathered from the table at those positions, so
    nothing is read back and no shape depends on how far the cache is filled."""

    def __init__(self, model: Transformer, max_len: int | None = None):
        why = why_unfused(model)
        if why is not None:
            raise ValueError(f"FusedStep: {why}; use the model itself (model.py's forward) instead")
        max_len = model.config.max_position_embeddings if max_len is None else max_len
        if not isinstance(max_len, int) or not 1 <= max_len <= model.config.max_position_embeddings:
            raise ValueError(f"FusedStep: max_len={max_len!r}; give 1 to {model.config.max_position_embeddings} "
                             "(the model's context window)")
        self.model, self.config, self.max_len = model, model.config, max_len
        self.qkv = [stack_rows([a.q_proj, a.k_proj, a.v_proj]) for a in (x.self_attn for x in model.layers)]
        self.gate_up = [stack_rows([m.gate_proj, m.up_proj]) for m in (x.mlp for x in model.layers)]
        self.views = [(m, m.weight.data_ptr()) for x in model.layers for m in (
            x.self_attn.q_proj, x.self_attn.k_proj, x.self_attn.v_proj, x.mlp.gate_proj, x.mlp.up_proj)]
        # each stacked nn.Linear, and where its rows now live
        self.rope = rope_table(model, max_len, rotate_half_sign(self.config.head_dim))  # [P, 2, 1, d]
        w = model.embed_tokens.weight
        self.zero = torch.zeros((), dtype=w.dtype, device=w.device)  # [] what an allowed key adds to its score
        self.minus_inf = torch.full((), float("-inf"), dtype=w.dtype, device=w.device)  # [] a forbidden one

    def current(self) -> bool:
        """Whether model.py's matrices are still the views `stack_rows` made (False once the model was moved or
        its parameters replaced: then build a new FusedStep). Compares pointers on the host: no synchronisation."""
        return all(m.weight.data_ptr() == ptr for m, ptr in self.views)

    def __call__(self, ids: torch.Tensor, cache, last_only: bool = True) -> torch.Tensor:
        """Logits for the new tokens `ids` [B, S] after what `cache` holds: [B, 1, V] (last_only) or [B, S, V]."""
        model, c = self.model, self.config
        B, S = ids.shape
        h = c.hidden_size
        slots = getattr(cache, "max_len", None) or getattr(cache, "length", 0)  # a paged view: its keys this call
        if slots > self.max_len:  # checked on the host: on CUDA a gather past the table is a device-side assert
            raise ValueError(f"a cache of {slots} positions needs a RoPE table as long; this FusedStep's holds "
                             f"{self.max_len}: make it with max_len={slots} (or None: the model's context window)")
        positions, mask = cache.positions_and_mask(S, c.sliding_window)  # [B, S] on the device, [B, 1, S, T]
        cos, sin = self.rope[positions].unbind(2)  # [B, S, 1, d] each: one gather, no host read
        bias = torch.where(mask, self.zero, self.minus_inf)  # [B, 1, S, T]: 0 where allowed, -inf elsewhere
        x = F.embedding(ids.reshape(B * S), model.embed_tokens.weight)  # [M, h], M = B·S rows
        for layer, (w_qkv, b_qkv), (w_gate_up, b_gate_up) in zip(model.layers, self.qkv, self.gate_up, strict=True):
            a, m = layer.self_attn, layer.mlp
            n1, n2 = layer.input_layernorm, layer.post_attention_layernorm
            qkv = F.linear(F.rms_norm(x, (h,), n1.weight, n1.eps), w_qkv, b_qkv)  # [M, (n_h+2n_kv)·d]
            out = attend(a, qkv.view(B, S, -1), cos, sin, cache, bias)  # [M, n_h·d]
            x = add_linear(x, out, a.o_proj)  # [M, h]: x + o_proj(out)
            gate, up = F.linear(F.rms_norm(x, (h,), n2.weight, n2.eps), w_gate_up, b_gate_up).chunk(2, dim=-1)
            x = add_linear(x, F.silu(gate) * up, m.down_proj)  # [M, h]: x + down(silu(gate) · up); gate, up [M, f]
        x = x.view(B, S, h)
        if last_only:
            x = x[:, -1:]  # [B, 1, h]: the final norm and the head only where the next token is chosen
        logits = F.linear(F.rms_norm(x, (h,), model.norm.weight, model.norm.eps), model.lm_head.weight,
                          model.lm_head.bias)  # [B, S', V]
        cache.advance(S)
        return logits


def add_linear(x: torch.Tensor, rows: torch.Tensor, linear: nn.Linear) -> torch.Tensor:
    """x + linear(rows) for x [M, N], rows [M, K]: the residual add done by the matmul itself (one addmm, where
    model.py runs a matmul and then an add), or the two operations when the linear has a bias."""
    if linear.bias is not None:
        return x + F.linear(rows, linear.weight, linear.bias)
    return torch.addmm(x, rows, linear.weight.t())  # [M, N]
