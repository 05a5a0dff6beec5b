"""The decoder, layer by layer, in plain PyTorch.

    token ids ──► embedding ──► L × [ RMSNorm → attention (+ residual) → RMSNorm → SwiGLU MLP (+ residual) ]
              ──► final RMSNorm ──► LM head ──► logits

Symbols used in shape comments: B batch, S new tokens in this call, T keys visible (cached + new),
h hidden size, n_h query heads, n_kv key/value heads, g = n_h / n_kv, d head dim, f MLP width, V vocab.

One `forward` serves prefill (S = prompt length), decode (S = 1) and an uncached pass over a whole
sequence (cache=None). With a cache, each layer writes its new K and V into it and attends over
everything stored so far; without, it attends over the K and V it just computed.

What the decoder asks of a cache (the contiguous `KVCache`, or the paged cache of the serving
chapters) is three calls, written down as the `AttentionCache` protocol in cache.py:
`positions_and_mask(n_new, window)` before the layers run, `write(layer, k_new, v_new)` in each
layer, and `advance(n_new)` after the last one.

`forward` is the whole pass in one plain loop. `LanguageModel.step_through` walks the same layers one
stage at a time, and CacheBlend runs some layers on fewer tokens; both call the layers themselves.

Parameter names follow the Hugging Face checkpoints (`layers.0.self_attn.q_proj.weight`, ...),
so a checkpoint's tensors load one to one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .cache import AttentionCache, attention_mask
from .config import ModelConfig


# ---- what a traced forward pass records --------------------------------------------------------
@dataclass
class LayerTrace:
    """What one decoder layer computed; asked for by passing a `Trace` to a forward call."""
    resid_in: torch.Tensor  # [B, S, h]       residual stream entering the layer
    q: torch.Tensor  # [B, n_h, S, d]          queries of the new tokens, after RoPE
    k: torch.Tensor  # [B, n_kv, S, d]         keys of the new tokens, after RoPE (what the cache stores)
    v: torch.Tensor  # [B, n_kv, S, d]         values of the new tokens
    scores: torch.Tensor  # [B, n_h, S, T]     q·kᵀ/√d, -inf where the mask forbids
    probs: torch.Tensor  # [B, n_h, S, T]      softmax of the scores: the attention pattern
    z: torch.Tensor  # [B, n_h, S, d]          each head's output, probs · v, before the o projection
    attn_out: torch.Tensor  # [B, S, h]        attention output after the o projection
    resid_mid: torch.Tensor  # [B, S, h]       resid_in + attn_out
    mlp_out: torch.Tensor  # [B, S, h]         SwiGLU MLP output
    resid_out: torch.Tensor  # [B, S, h]       resid_mid + mlp_out: what the next layer reads


@dataclass
class Stage:
    """One stop of the forward pass (`LanguageModel.step_through`): what a named stage produced."""
    name: str  # "embedding", "layer 0" … "layer L-1", "final norm", "logits"
    output: torch.Tensor  # [B, S, h] hidden states, or [B, S, V] logits for the last stage
    index: int | None = None  # layer index for the layer stages


@dataclass
class Trace:
    """Captures of one forward call. Pass `trace=Trace()`; it is filled in place."""
    positions: torch.Tensor | None = None  # [B, S]       position of each new token (what RoPE sees)
    mask: torch.Tensor | None = None  # [B, 1, S, T]      True where a query may attend to a key
    embeddings: torch.Tensor | None = None  # [B, S, h]   token embeddings
    layers: list[LayerTrace] = field(default_factory=list)
    final_hidden: torch.Tensor | None = None  # [B, S, h] after the final norm
    logits: torch.Tensor | None = None  # [B, S', V]      S' = 1 when only the last position is projected


# ---- building blocks ---------------------------------------------------------------------------
class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight, computed in float32."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rope_inv_freq(config: ModelConfig) -> torch.Tensor:
    """Rotation speed of each pair of dimensions: θ^(-2i/d) for i = 0 .. d/2-1.  [d/2]

    Llama 3 stretches the slow (long-wavelength) pairs by `factor` and blends the middle band,
    so that a model trained at 8k positions reads 128k.
    """
    d = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    s = config.rope_scaling
    if s is None:
        return inv_freq
    old_len = s["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    low_freq_wavelen = old_len / s["low_freq_factor"]  # longer waves than this: divide by factor
    high_freq_wavelen = old_len / s["high_freq_factor"]  # shorter waves than this: unchanged
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / s["factor"], inv_freq)
    smooth = (old_len / wavelen - s["low_freq_factor"]) / (s["high_freq_factor"] - s["low_freq_factor"])
    blended = (1 - smooth) * scaled / s["factor"] + smooth * scaled
    middle = (wavelen >= high_freq_wavelen) & (wavelen <= low_freq_wavelen)
    return torch.where(middle, blended, scaled)


def rope_cos_sin(inv_freq: torch.Tensor, positions: torch.Tensor, dtype: torch.dtype):
    """cos and sin of position · frequency, each [B, S, d] (the d/2 angles repeated twice)."""
    angles = positions[..., None].float() * inv_freq  # [B, S, d/2]
    angles = torch.cat([angles, angles], dim=-1)  # [B, S, d]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (x_i, x_{i+d/2}) pair by its angle.  x: [B, heads, S, d]; cos, sin: [B, S, d]."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # [B, heads, S, d]
    return x * cos[:, None] + rotated * sin[:, None]


def attention_by_hand(q, k, v, mask, scale):
    """softmax(q·kᵀ·scale, masked)·v written out, returning the scores and probabilities too.

    q: [B, n_h, S, d]; k, v: [B, n_kv, T, d]; mask: [B, 1, S, T].
    Grouped-query attention: query heads g·j … g·j+g-1 all read key/value head j.
    """
    B, n_h, S, d = q.shape
    n_kv, T = k.shape[1], k.shape[2]
    g = n_h // n_kv
    q = q.view(B, n_kv, g, S, d)  # [B, n_kv, g, S, d]  query heads grouped under their KV head
    scores = (q @ k[:, :, None].transpose(-1, -2)) * scale  # [B, n_kv, g, S, T]
    scores = scores.masked_fill(~mask[:, :, None], float("-inf"))
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)  # [B, n_kv, g, S, T]
    out = probs @ v[:, :, None]  # [B, n_kv, g, S, d]
    return out.view(B, n_h, S, d), scores.view(B, n_h, S, T), probs.view(B, n_h, S, T)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, index: int):
        super().__init__()
        self.index = index  # which layer: where in the KV cache this layer keeps its K and V
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.scale = config.head_dim ** -0.5
        h, d = config.hidden_size, config.head_dim
        self.q_proj = nn.Linear(h, config.n_heads * d, bias=config.qkv_bias)
        self.k_proj = nn.Linear(h, config.n_kv_heads * d, bias=config.qkv_bias)
        self.v_proj = nn.Linear(h, config.n_kv_heads * d, bias=config.qkv_bias)
        self.o_proj = nn.Linear(config.n_heads * d, h, bias=config.o_bias)
        self.qk_norm = config.qk_norm
        if config.qk_norm:
            self.q_norm = RMSNorm(d, config.rms_norm_eps)
            self.k_norm = RMSNorm(d, config.rms_norm_eps)

    def forward(self, x, rope, mask, cache: AttentionCache | None, record: dict | None):
        B, S, _ = x.shape
        q = self.q_proj(x).view(B, S, self.n_heads, self.head_dim)  # [B, S, n_h, d]
        k = self.k_proj(x).view(B, S, self.n_kv_heads, self.head_dim)  # [B, S, n_kv, d]
        v = self.v_proj(x).view(B, S, self.n_kv_heads, self.head_dim)  # [B, S, n_kv, d]
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, heads, S, d]
        q, k = apply_rope(q, *rope), apply_rope(k, *rope)

        if cache is not None:
            k_all, v_all = cache.write(self.index, k, v)  # [B, n_kv, T, d]: past tokens + these
        else:
            k_all, v_all = k, v  # [B, n_kv, S, d]: no past

        if record is None:  # fast path: PyTorch's fused kernel, same math as attention_by_hand
            out = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, scale=self.scale,
                                                 enable_gqa=self.n_heads != self.n_kv_heads)
        else:
            out, scores, probs = attention_by_hand(q, k_all, v_all, mask, self.scale)
            record.update(q=q, k=k, v=v, scores=scores, probs=probs, z=out)
        out = out.transpose(1, 2).reshape(B, S, self.n_heads * self.head_dim)  # [B, S, n_h·d]
        return self.o_proj(out)  # [B, S, h]


class MLP(nn.Module):
    """SwiGLU: down( silu(gate(x)) ⊙ up(x) )."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        h, f = config.hidden_size, config.intermediate_size
        self.gate_proj = nn.Linear(h, f, bias=config.mlp_bias)
        self.up_proj = nn.Linear(h, f, bias=config.mlp_bias)
        self.down_proj = nn.Linear(f, h, bias=config.mlp_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # [B, S, f] → [B, S, h]


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, index: int):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config, index)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x, rope, mask, cache: AttentionCache | None = None, trace: Trace | None = None):
        record = {} if trace is not None else None
        attn_out = self.self_attn(self.input_layernorm(x), rope, mask, cache, record)  # [B, S, h]
        mid = x + attn_out  # [B, S, h]
        mlp_out = self.mlp(self.post_attention_layernorm(mid))  # [B, S, h]
        out = mid + mlp_out  # [B, S, h]
        if trace is not None:
            trace.layers.append(LayerTrace(resid_in=x, attn_out=attn_out, resid_mid=mid,
                                           mlp_out=mlp_out, resid_out=out, **record))
        return out


# ---- the whole decoder -------------------------------------------------------------------------
class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.n_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.register_buffer("inv_freq", rope_inv_freq(config), persistent=False)  # [d/2]

    def prepare(self, n_new: int, batch_size: int, cache: AttentionCache | None):
        """Positions, RoPE angles and attention mask for `n_new` tokens per sequence written after what
        `cache` holds.

        The cache knows where each sequence stands, so it says which position each new token has and
        which stored keys it may read. Without a cache, every sequence starts at position 0.
        """
        window = self.config.sliding_window
        if cache is None:
            positions = torch.arange(n_new, device=self.inv_freq.device).expand(batch_size, n_new)  # [B, S]
            mask = attention_mask(positions, positions, window)  # [B, 1, S, S]
        else:
            positions, mask = cache.positions_and_mask(n_new, window)  # [B, S], [B, 1, S, T]
        rope = rope_cos_sin(self.inv_freq, positions, self.embed_tokens.weight.dtype)
        return positions, rope, mask

    def forward(self, ids: torch.Tensor, cache: AttentionCache | None = None, trace: Trace | None = None,
                last_only: bool = False) -> torch.Tensor:
        """Logits for the new tokens `ids` [B, S]: [B, S, V], or [B, 1, V] with last_only."""
        B, S = ids.shape
        positions, rope, mask = self.prepare(S, B, cache)
        x = self.embed_tokens(ids)  # [B, S, h]
        if trace is not None:
            trace.positions, trace.mask, trace.embeddings = positions, mask, x
        for layer in self.layers:
            x = layer(x, rope, mask, cache, trace)  # [B, S, h]
        x = self.norm(x)  # [B, S, h]
        if last_only:
            x = x[:, -1:]  # [B, 1, h]: an engine only needs the next token after the last one
        logits = self.lm_head(x)  # [B, S, V]
        if cache is not None:
            cache.advance(S)  # every layer has written the K and V of the S new tokens
        if trace is not None:
            trace.final_hidden, trace.logits = x, logits
        return logits
