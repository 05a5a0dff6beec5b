"""What inference costs: matmul FLOPs and bytes moved per phase, counted from a ModelConfig or a loaded model.

Symbols: b batch, s new tokens per sequence in one call, T keys each query sees (cached + new),
h hidden size, L layers, n_h query heads, n_kv key/value heads, d head dim, f MLP width, V vocab.

A matmul of (m×k)·(k×n) is 2·m·k·n FLOPs (one multiply and one add per term). One decoder layer
of the real model (grouped-query attention, SwiGLU with three matrices) runs

    q_proj   2·b·s·h·(n_h·d)         qk (QKᵀ)  2·b·s·T·n_h·d        gate_proj  2·b·s·h·f
    k_proj   2·b·s·h·(n_kv·d)        pv (·V)   2·b·s·T·n_h·d        up_proj    2·b·s·h·f
    v_proj   2·b·s·h·(n_kv·d)        o_proj    2·b·s·(n_h·d)·h      down_proj  2·b·s·f·h

and the LM head adds 2·b·h·V per position it projects. Conventions, the same as the engine's code:

- attention is counted over all T keys, with no causal discount: the engine computes the masked
  entries of QKᵀ too and then hides them (about half of the prefill attention work is masked;
  a sliding window, too, only masks);
- prefill projects only the last position through the LM head (`last_only=True` in the engine);
  `all_positions=True` counts every position, as `lm.forward` does;
- softmax, RMSNorm, RoPE, SiLU, residual adds and biases are not matmuls and count 0.

The lecture's textbook layer (GPT-style: n_kv = n_h, n_h·d = h, a two-matrix MLP of width 4h, no
LM head) gives 24·b·s·h² + 4·b·s²·h per layer; `textbook_flops` and `compare_with_textbook` set it
next to the exact count.

Bytes depend on the dtype the numbers are held in. Pass the loaded model (`lm`) and they are counted in its own
dtype (float32 on a CPU, bfloat16 on a GPU by default); a bare ModelConfig holds no weights, so with one the
dtype must be named (`dtype="bf16"`). `flop_counter` is PyTorch's FLOP counter with fused attention counted on
every device, to check these formulas against what runs. Only formulas live here; measuring a device (peak
FLOP/s, bandwidth, the time of each phase) is `teachllm.roofline`, one layer up.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch

from .config import ModelConfig
from .units import element_size
from .words import english, pad

ATTENTION_OPS = ("qk", "pv")  # the two matmuls that grow with the keys T; the rest are linear layers


def _check(func: str, config, **counts) -> None:
    """Guards for every public function: a ModelConfig, and counts that are integers ≥ 1 (n_tokens ≥ 0)."""
    if not isinstance(config, ModelConfig):
        raise TypeError(f"{func} takes a ModelConfig or a loaded model (lm), got {type(config).__name__}")
    for name, value in counts.items():
        low = 0 if name == "n_tokens" else 1
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"{func}: {name}={value!r} must be an integer ≥ {low}")


def _config(model) -> ModelConfig:
    """The shape of `model`: a ModelConfig itself, or a loaded model's (lm.config)."""
    config = getattr(model, "config", model)
    return config if isinstance(config, ModelConfig) else model


def _dtype(func: str, model, dtype) -> torch.dtype | str:
    """The dtype bytes are counted in: the one asked for, else a loaded model's own (lm.dtype). A ModelConfig holds
    no weights, so it does not say; then the dtype must be given, rather than a guess that is wrong on a GPU."""
    if dtype is not None:
        return dtype
    own = getattr(model, "dtype", None)
    if isinstance(own, torch.dtype):
        return own
    raise ValueError(f"{func}: a {type(model).__name__} does not say which dtype the numbers are held in; pass "
                     "dtype= ('float32', 'bf16', ...), or the loaded model itself (lm) to count in its own dtype")


# ---- FLOPs ---------------------------------------------------------------------------------------
@dataclass
class FlopCount:
    """Matmul FLOPs of one forward call, per layer and per operation."""
    phase: str  # "prefill", "decode", "forward" or "textbook"
    batch_size: int  # b
    n_new: int  # s: tokens each sequence runs through the model in this call
    n_keys: int  # T: keys each new query is scored against
    per_op: dict[str, int]  # FLOPs of ONE layer for each operation, in the order the layer runs them
    n_layers: int  # L
    lm_head: int  # FLOPs of the LM head (2·b·h·V per projected position)

    @property
    def per_layer(self) -> int:
        """FLOPs of one decoder layer."""
        return sum(self.per_op.values())

    @property
    def total(self) -> int:
        """L · per_layer + LM head."""
        return self.n_layers * self.per_layer + self.lm_head

    @property
    def attention(self) -> int:
        """QKᵀ and ·V over all layers: L · 4·b·s·T·n_h·d."""
        return self.n_layers * sum(self.per_op[op] for op in ATTENTION_OPS)

    @property
    def linear(self) -> int:
        """Everything else: the projections, the MLP and the LM head (the weights' matmuls)."""
        return self.total - self.attention

    @property
    def attention_fraction(self) -> float:
        return self.attention / self.total

    def by_op(self) -> dict[str, int]:
        """FLOPs of each operation summed over all layers, plus "lm_head"."""
        return {**{op: self.n_layers * n for op, n in self.per_op.items()}, "lm_head": self.lm_head}

    def table(self, tr=english) -> str:
        """The count as a table: one row per operation, over all layers. `tr`: the words' language
        (`teachllm.words`; `teachllm.viz.tr` for the reader's)."""
        rows = [tr("{phase}: batch {b}, {s} new token(s), {T} keys, {L} layers", phase=tr(self.phase),
                   b=self.batch_size, s=self.n_new, T=self.n_keys, L=self.n_layers),
                tr("operation          per layer        all layers   share")]
        for op, n in self.per_op.items():
            rows.append(f"{op:<12}{n:>16,}{self.n_layers * n:>18,}{self.n_layers * n / self.total:>8.1%}")
        rows.append(f"{'lm_head':<12}{'':>16}{self.lm_head:>18,}{self.lm_head / self.total:>8.1%}")
        rows.append(tr("total       {per_layer:>16,}{total:>18,}  = {gflop:.3f} GFLOP", per_layer=self.per_layer,
                       total=self.total, gflop=self.total / 1e9))
        return "\n".join(rows)

    __str__ = table


def layer_flops(config: ModelConfig, n_new: int, n_keys: int, batch_size: int = 1) -> dict[str, int]:
    """Matmul FLOPs of one decoder layer for b = batch_size, s = n_new new tokens and T = n_keys keys."""
    config = _config(config)
    _check("layer_flops", config, n_new=n_new, n_keys=n_keys, batch_size=batch_size)
    b, s, T = batch_size, n_new, n_keys
    h, f, d = config.hidden_size, config.intermediate_size, config.head_dim
    q_width, kv_width = config.n_heads * d, config.n_kv_heads * d  # n_h·d and n_kv·d
    return {
        "q_proj": 2 * b * s * h * q_width,  # [b·s, h] @ [h, n_h·d]
        "k_proj": 2 * b * s * h * kv_width,  # [b·s, h] @ [h, n_kv·d]: GQA makes this n_h/n_kv times smaller
        "v_proj": 2 * b * s * h * kv_width,
        "qk": 2 * b * config.n_heads * s * d * T,  # per head [s, d] @ [d, T]
        "pv": 2 * b * config.n_heads * s * T * d,  # per head [s, T] @ [T, d]
        "o_proj": 2 * b * s * q_width * h,  # [b·s, n_h·d] @ [n_h·d, h]
        "gate_proj": 2 * b * s * h * f,  # [b·s, h] @ [h, f]
        "up_proj": 2 * b * s * h * f,  # [b·s, h] @ [h, f]
        "down_proj": 2 * b * s * f * h,  # [b·s, f] @ [f, h]
    }


def forward_flops(config: ModelConfig, n_new: int, n_keys: int, batch_size: int = 1, n_projected: int = 1,
                  phase: str = "forward") -> FlopCount:
    """Matmul FLOPs of any forward call: s = n_new tokens per sequence scored against T = n_keys keys,
    with n_projected positions per sequence going through the LM head (2·b·h·V each)."""
    config = _config(config)
    _check("forward_flops", config, n_new=n_new, n_keys=n_keys, batch_size=batch_size, n_projected=n_projected)
    for name, value in (("n_new", n_new), ("n_keys", n_keys), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if n_keys < n_new:
        raise ValueError(f"n_keys ({n_keys}) must be at least n_new ({n_new}): every new token is itself a key")
    lm_head = 2 * batch_size * n_projected * config.hidden_size * config.vocab_size
    return FlopCount(phase, batch_size, n_new, n_keys, layer_flops(config, n_new, n_keys, batch_size),
                     config.n_layers, lm_head)


def prefill_flops(config: ModelConfig, seq_len: int, batch_size: int = 1, all_positions: bool = False) -> FlopCount:
    """FLOPs of prefilling `batch_size` prompts of `seq_len` tokens into an empty cache (s = T = seq_len).

    Per layer: 2·b·s·h·(n_h + 2·n_kv)·d + 2·b·s·n_h·d·h + 6·b·s·h·f + 4·b·s²·n_h·d.
    The LM head runs on the last position only (2·b·h·V), as in `lm.prefill`; with
    `all_positions=True` on all of them (2·b·s·h·V), as in `lm.forward`.
    """
    config = _config(config)
    _check("prefill_flops", config, seq_len=seq_len, batch_size=batch_size)
    n_projected = seq_len if all_positions else 1
    phase = "forward" if all_positions else "prefill"
    return forward_flops(config, seq_len, seq_len, batch_size, n_projected, phase)


def decode_flops(config: ModelConfig, context_len: int, batch_size: int = 1) -> FlopCount:
    """FLOPs of one decode step: one new token per sequence, scored against `context_len` keys.

    `context_len` counts the new token itself: it is T, the keys the new query sees, which is
    cache.length + 1 just before `lm.decode_step` (and cache.length just after it).
    Per layer: the prefill formula with s = 1 and the attention term 4·b·T·n_h·d; LM head 2·b·h·V.
    """
    config = _config(config)
    _check("decode_flops", config, context_len=context_len, batch_size=batch_size)
    return forward_flops(config, 1, context_len, batch_size, 1, "decode")


def textbook_flops(config: ModelConfig, seq_len: int, batch_size: int = 1, context_len: int | None = None) -> FlopCount:
    """The lecture's per-layer count, 24·b·s·h² + 4·b·s·T·h (T = s in prefill), for the same shapes.

    It assumes a GPT-style layer: Q, K and V each h → h (6·b·s·h²), QKᵀ and ·V (2·b·s·T·h each),
    the output projection (2·b·s·h²), a two-matrix MLP h → 4h → h (8·b·s·h² each way, 16·b·s·h²),
    and no LM head. A decode step is seq_len=1 with context_len=T.
    """
    config = _config(config)
    _check("textbook_flops", config, seq_len=seq_len, batch_size=batch_size,
           **({} if context_len is None else {"context_len": context_len}))
    if context_len is not None and context_len < seq_len:
        raise ValueError(f"textbook_flops: context_len={context_len} is shorter than seq_len={seq_len}; the new "
                         "tokens are part of the context, so context_len must be at least seq_len")
    b, s, h = batch_size, seq_len, config.hidden_size
    T = seq_len if context_len is None else context_len
    per_op = {"q_proj": 2 * b * s * h * h, "k_proj": 2 * b * s * h * h, "v_proj": 2 * b * s * h * h,
              "qk": 2 * b * s * T * h, "pv": 2 * b * s * T * h, "o_proj": 2 * b * s * h * h,
              "gate_proj": 0, "up_proj": 2 * b * s * h * 4 * h, "down_proj": 2 * b * s * 4 * h * h}
    return FlopCount("textbook", b, s, T, per_op, config.n_layers, lm_head=0)


def _why(config: ModelConfig, op: str) -> tuple[str, dict]:
    """Why the real model's count of `op` differs from the textbook's (or that it does not): an English template
    and its fields, so that `format_comparison` can print it in another language."""
    h, f = config.hidden_size, config.intermediate_size
    q_width, kv_width = config.n_heads * config.head_dim, config.n_kv_heads * config.head_dim
    if op in ("q_proj", "o_proj", "qk", "pv"):
        return ("same (n_h·d = h)", {}) if q_width == h else ("n_h·d = {q}, not h = {h}", {"q": q_width, "h": h})
    if op in ("k_proj", "v_proj"):
        if kv_width == h:
            return "same (n_kv·d = h)", {}
        return ("GQA: {n_kv} KV heads for {n_h} query heads, n_kv·d = {kv} not {h}",
                {"n_kv": config.n_kv_heads, "n_h": config.n_heads, "kv": kv_width, "h": h})
    if op == "gate_proj":
        return "SwiGLU's third matrix; the textbook MLP has two", {}
    if op in ("up_proj", "down_proj"):
        return ("same (f = 4h)", {}) if f == 4 * h else ("MLP width f = {f}, not 4h = {h4}", {"f": f, "h4": 4 * h})
    return "the textbook counts the layers only; the LM head is 2·b·h·V per projected position", {}


def compare_with_textbook(config: ModelConfig, seq_len: int, batch_size: int = 1,
                          all_positions: bool = False) -> list[dict]:
    """Prefill FLOPs per operation (all layers), textbook against exact, with the reason for each gap.

    Returns rows {"op", "textbook", "exact", "ratio" (exact / textbook, None where the textbook has 0), "why",
    "reason" (why's English template and its fields)}, the last one being "total". `format_comparison(rows)`
    prints them.
    """
    config = _config(config)
    _check("compare_with_textbook", config, seq_len=seq_len, batch_size=batch_size)
    exact = prefill_flops(config, seq_len, batch_size, all_positions).by_op()
    book = textbook_flops(config, seq_len, batch_size).by_op()
    reasons = {op: _why(config, op) for op in exact}
    reasons["total"] = ("24·b·s·h² + 4·b·s²·h per layer, against the real model", {})
    rows = [{"op": op, "textbook": book[op], "exact": exact[op], "ratio": exact[op] / book[op] if book[op] else None}
            for op in exact]
    total_book, total_exact = sum(book.values()), sum(exact.values())
    rows.append({"op": "total", "textbook": total_book, "exact": total_exact, "ratio": total_exact / total_book})
    for row in rows:
        template, fields = reasons[row["op"]]
        row.update(why=template.format(**fields), reason=(template, fields))
    return rows


def format_comparison(rows: list[dict], tr=english) -> str:
    """`compare_with_textbook`'s rows as a table; `tr`: the words' language (`teachllm.words`)."""
    lines = [tr("operation           textbook            exact exact/book  why")]
    for r in rows:
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.3f}"
        op = pad(tr("total"), 11) if r["op"] == "total" else f"{r['op']:<11}"
        why = tr(r["reason"][0], **r["reason"][1]) if "reason" in r else r["why"]
        lines.append(f"{op}{r['textbook']:>17,}{r['exact']:>17,}{ratio:>11}  {why}")
    return "\n".join(lines)


# ---- bytes ---------------------------------------------------------------------------------------
def weight_bytes(config: ModelConfig, dtype: torch.dtype | str | None = None) -> int:
    """Bytes of all parameters, a tied embedding/LM-head matrix counted once: n_params · element size.
    dtype: the one to count in; by default a loaded model's own (pass lm), required with a ModelConfig."""
    model, config = config, _config(config)
    _check("weight_bytes", config)
    dtype = _dtype("weight_bytes", model, dtype)
    return config.n_params * element_size(dtype)


def kv_cache_bytes(config: ModelConfig, n_tokens: int, batch_size: int = 1,
                   dtype: torch.dtype | str | None = None) -> int:
    """Bytes of K and V for n_tokens tokens of batch_size sequences: 2 · L · n_kv · d · tokens · b · bytes."""
    model, config = config, _config(config)
    _check("kv_cache_bytes", config, n_tokens=n_tokens, batch_size=batch_size)
    dtype = _dtype("kv_cache_bytes", model, dtype)
    return 2 * config.n_layers * config.n_kv_heads * config.head_dim * n_tokens * batch_size * element_size(dtype)


def weight_bytes_read(config: ModelConfig, n_new: int, batch_size: int = 1,
                      dtype: torch.dtype | str | None = None) -> int:
    """Bytes of weights one forward call reads: every matrix once, whatever the batch.

    The embedding is a lookup, not a matmul: an untied model reads only the b·s rows it needs
    (the LM head matrix is read whole); a tied model reads the shared matrix whole for the LM head.
    """
    model, config = config, _config(config)
    _check("weight_bytes_read", config, n_new=n_new, batch_size=batch_size)
    dtype = _dtype("weight_bytes_read", model, dtype)
    total = weight_bytes(config, dtype)
    if config.tie_word_embeddings:
        return total
    table = config.vocab_size * config.hidden_size * element_size(dtype)
    rows = batch_size * n_new * config.hidden_size * element_size(dtype)
    return total - table + min(rows, table)


@dataclass
class PhaseCost:
    """FLOPs and bytes of one forward call, and their ratio: the arithmetic intensity."""
    phase: str  # "prefill" or "decode"
    batch_size: int  # b
    length: int  # prefill: prompt length s; decode: keys visible T (the new token included)
    flops: int  # matmul FLOPs (FlopCount.total)
    weight_bytes: int  # weights read, once per call
    kv_read_bytes: int  # K and V read by attention: T tokens per sequence
    kv_write_bytes: int  # K and V of the new tokens written into the cache

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved."""
        return self.flops / self.bytes


def _phase_cost(phase: str, config: ModelConfig, flops: FlopCount, dtype) -> PhaseCost:
    b, s, T = flops.batch_size, flops.n_new, flops.n_keys
    return PhaseCost(phase, b, T, flops.total, weight_bytes_read(config, s, b, dtype),
                     kv_read_bytes=kv_cache_bytes(config, T, b, dtype),
                     kv_write_bytes=kv_cache_bytes(config, s, b, dtype))


def prefill_cost(config: ModelConfig, seq_len: int, batch_size: int = 1,
                 dtype: torch.dtype | str | None = None) -> PhaseCost:
    """FLOPs and bytes of a prefill. Bytes model: weights read once + K, V of the prompt written once
    and read once by attention. Activations (and the s×T attention scores) are not counted: they are
    assumed to stay in on-chip memory, as in a fused kernel, so this is the least traffic possible
    and the intensity an upper bound."""
    model, config = config, _config(config)
    _check("prefill_cost", config, seq_len=seq_len, batch_size=batch_size)
    dtype = _dtype("prefill_cost", model, dtype)
    return _phase_cost("prefill", config, prefill_flops(config, seq_len, batch_size), dtype)


def decode_cost(config: ModelConfig, context_len: int, batch_size: int = 1,
                dtype: torch.dtype | str | None = None) -> PhaseCost:
    """FLOPs and bytes of one decode step (T = context_len keys, the new token included). Bytes model:
    weights read once + the K, V of all T tokens read + the new token's K, V written; activations
    (a few vectors of width h per sequence) are not counted."""
    model, config = config, _config(config)
    _check("decode_cost", config, context_len=context_len, batch_size=batch_size)
    dtype = _dtype("decode_cost", model, dtype)
    return _phase_cost("decode", config, decode_flops(config, context_len, batch_size), dtype)


# ---- counting what PyTorch runs ----------------------------------------------------------------------
def _attention_flops(query_shape, key_shape, value_shape, *args, **kwargs) -> int:
    """FLOPs of one fused attention call: q [b, n_h, s, d] against k [b, n_kv, T, d] and v [b, n_kv, T, d_v].
    Each of the n_h query heads scores T keys (2·b·n_h·s·T·d) and mixes T values (2·b·n_h·s·T·d_v), whether
    its K and V are its own (n_kv = n_h) or shared with its group (grouped-query attention, n_kv < n_h)."""
    b, n_h, s, d = query_shape
    T, d_v = key_shape[-2], value_shape[-1]
    return 2 * b * n_h * s * T * d + 2 * b * n_h * s * T * d_v


def flop_counter(display: bool = False):
    """PyTorch's `FlopCounterMode`, with one formula more: fused attention on every device.

    The counter counts the operators it has a formula for. PyTorch has none for the CPU's fused attention
    kernel (it counts 0), and the formula of the torch 2.11 on our GPU machine refuses grouped-query shapes
    (n_kv < n_h: "query/key/value shapes are incompatible"). This counter gives every fused
    `scaled_dot_product_attention` kernel the count of `_attention_flops`, the same as `layer_flops`' qk + pv,
    so the fast path counts the same FLOPs on the CPU and on a GPU:

        with tl.cost.flop_counter() as counter:
            lm.prefill(ids, lm.new_cache(max_len=64))
        counter.get_total_flops() == tl.cost.prefill_flops(lm, len(ids)).total
    """
    from torch.utils.flop_counter import FlopCounterMode

    names = ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention")
    ops = [getattr(torch.ops.aten, name) for name in names if hasattr(torch.ops.aten, name)]
    return FlopCounterMode(display=display, custom_mapping={op: _attention_flops for op in ops})


__all__ = [
    "ATTENTION_OPS", "FlopCount", "PhaseCost", "compare_with_textbook", "decode_cost", "decode_flops", "element_size",
    "flop_counter", "format_comparison", "forward_flops", "kv_cache_bytes", "layer_flops", "prefill_cost",
    "prefill_flops",
    "textbook_flops", "weight_bytes", "weight_bytes_read",
]
