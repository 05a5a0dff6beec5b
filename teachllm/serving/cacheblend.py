"""CacheBlend: reuse the KV caches of text chunks computed on their own, and recompute a few tokens.

The setting is retrieval-augmented generation: a prompt is chunk_1 + chunk_2 + … + chunk_n + question,
where the chunks (retrieved documents) come back in request after request, in any order. Prefix caching
helps only chunk_1; the others sit at a different offset after different text each time.

Full reuse: compute each chunk's K and V once, alone (positions 0 … n_c − 1), and for a new prompt
place the chunks one after another. Two things are wrong with the result:

1. positions: a key was rotated by RoPE for position p, but sits at p + o. RoPE is a rotation, and
   rotations add up, R(o)·R(p) = R(p + o), so rotating the stored key by the offset o repairs it exactly
   (`shift_keys`).
2. cross-attention: chunk 2's tokens never attended to chunk 1, so from layer 1 on their K and V differ
   from those of a full prefill. This cannot be repaired without computing.

CacheBlend (Yao et al., EuroSys 2025) recomputes the K and V of a small fraction r of the tokens at
every layer and reuses the rest. It picks the tokens whose K/V deviate most from the full prefill's
(high-KV-deviation, "HKVD" tokens). Here: layers 0 and 1 are recomputed for all N tokens (layer 0's K and V
depend on nothing but the token itself; layer 1 is the first where the missing cross-attention shows),
the deviation ‖k_new − k_reused‖² + ‖v_new − v_reused‖² at layer 1 picks the r·N tokens, and layers 2 … L−1
run for those tokens only, attending to the blended K and V of everybody. The compute spent, counted in
token-layers (the linear layers dominate at these lengths), is

    recomputed fraction = (2·N + (L − 2)·r·N) / (L·N)        (0 for full reuse, 1 for r = 1)

and the quality lost is measured on the question that follows: KL divergence and top-1 agreement of its
next-token distributions, and its perplexity, against a full prefill of the same prompt.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from ..cache import attention_mask
from ..model import apply_rope, rope_cos_sin

SELECTIONS = ("deviation", "random")


@dataclass
class ChunkKV:
    """One chunk's K and V, computed alone from position 0 (what a KV store would keep for it)."""
    token_ids: list[int]
    k: torch.Tensor  # [L, n_kv, n, d] keys after RoPE at positions 0 … n − 1
    v: torch.Tensor  # [L, n_kv, n, d]


@dataclass
class BlendResult:
    k: torch.Tensor  # [L, n_kv, N, d] blended keys of the whole context
    v: torch.Tensor  # [L, n_kv, N, d]
    selected: list[int]  # positions recomputed in every layer (beyond the fully recomputed ones)
    recompute_fraction: float  # token-layers computed / (L · N)
    deviation: torch.Tensor | None  # [N] K/V deviation per token at the first blended layer (None for r = 0)


@torch.no_grad()
def precompute_chunk(lm, token_ids: list[int]) -> ChunkKV:
    """Prefill one chunk alone and keep its K and V."""
    cache = lm.new_cache(max_len=len(token_ids))
    lm.prefill(token_ids, cache)
    return ChunkKV(list(token_ids), cache.k[:, 0].clone(), cache.v[:, 0].clone())


def shift_keys(lm, k: torch.Tensor, offset: int) -> torch.Tensor:
    """Keys rotated for positions p → keys for positions p + offset: one more RoPE rotation by `offset`.
    k: [L, n_kv, n, d]."""
    positions = torch.full((1, k.shape[2]), offset, device=k.device)  # [1, n]
    cos, sin = rope_cos_sin(lm.model.inv_freq, positions, k.dtype)  # [1, n, d] each
    return apply_rope(k, cos, sin)  # [L, n_kv, n, d] (the L dimension plays the batch)


class _BlendKV:
    """The context's K and V while blending: reused everywhere, overwritten where tokens are recomputed.
    Passed to the decoder as its cache (the `AttentionCache` calls): the new tokens are the ones at `rows`,
    and every one of them may read the whole context before it."""

    def __init__(self, k: torch.Tensor, v: torch.Tensor, rows: torch.Tensor):
        self.k, self.v = k, v  # [L, n_kv, N, d]
        self.rows = rows  # [S] positions of the tokens computed in this pass
        self.deviation: dict[int, torch.Tensor] = {}  # layer → [S] ‖new − reused‖² per token

    def positions_and_mask(self, n_new: int, window: int | None = None):
        keys = torch.arange(self.k.shape[2], device=self.rows.device)  # [N] the whole context
        return self.rows[None], attention_mask(self.rows[None], keys, window)  # [1, S], [1, 1, S, N]

    def advance(self, n_new: int) -> None:
        pass  # the context's length does not change: recomputed tokens overwrite their own slots

    def write(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor):
        """k_new, v_new: [1, n_kv, S, d] for the positions `rows`; returns the whole context's [1, n_kv, N, d]."""
        dk = (k_new[0] - self.k[layer][:, self.rows]).pow(2).sum(dim=(0, 2))  # [S]
        dv = (v_new[0] - self.v[layer][:, self.rows]).pow(2).sum(dim=(0, 2))  # [S]
        self.deviation[layer] = dk + dv
        self.k[layer][:, self.rows] = k_new[0]
        self.v[layer][:, self.rows] = v_new[0]
        return self.k[layer][None], self.v[layer][None]


@torch.no_grad()
def blend(lm, chunks: list[ChunkKV], ratio: float, select: str = "deviation", full_layers: int = 2,
          seed: int = 0) -> BlendResult:
    """Place the chunks one after another and recompute a fraction `ratio` of their tokens (see the module
    docstring). select: "deviation" (CacheBlend's HKVD tokens) or "random" (the same number, at random)."""
    if not 0 <= ratio <= 1:
        raise ValueError(f"ratio must be in [0, 1], got {ratio}")
    if select not in SELECTIONS:
        raise ValueError(f"select must be one of {SELECTIONS}, got {select!r}")
    m, L = lm.model, lm.config.n_layers
    if not 1 <= full_layers <= L:
        raise ValueError(f"full_layers must be in 1 … {L}, got {full_layers}")
    offsets = [0]
    for c in chunks[:-1]:
        offsets.append(offsets[-1] + len(c.token_ids))
    k = torch.cat([shift_keys(lm, c.k, o) for c, o in zip(chunks, offsets, strict=True)], dim=2)  # [L, n_kv, N, d]
    v = torch.cat([c.v for c in chunks], dim=2)  # [L, n_kv, N, d]
    N = k.shape[2]
    if ratio == 0:  # full reuse: nothing is computed
        return BlendResult(k, v, [], 0.0, None)

    ids = torch.tensor([sum((c.token_ids for c in chunks), [])], device=k.device)  # [1, N]
    kv = _BlendKV(k.clone(), v.clone(), rows=torch.arange(N, device=k.device))  # every token, first
    _, rope, mask = m.prepare(N, 1, kv)
    hidden = m.embed_tokens(ids)  # [1, N, h]
    for layer in m.layers[:full_layers]:  # layers 0 … full_layers − 1 recompute all N tokens
        hidden = layer(hidden, rope, mask, kv)  # [1, N, h]
    rows = kv.rows
    if full_layers < L:  # layers full_layers … L − 1 recompute only the chosen tokens
        n_keep = max(1, round(ratio * N))
        if select == "deviation":
            rows = kv.deviation[full_layers - 1].topk(n_keep).indices.sort().values  # [r·N]
        else:
            g = torch.Generator().manual_seed(seed)
            rows = torch.randperm(N, generator=g)[:n_keep].sort().values.to(k.device)
        kv.rows = rows
        _, rope, mask = m.prepare(len(rows), 1, kv)  # the chosen tokens' positions, and what each may read
        hidden = hidden[:, rows]  # [1, r·N, h]
        for layer in m.layers[full_layers:]:  # layers full_layers … L − 1 recompute only the chosen tokens
            hidden = layer(hidden, rope, mask, kv)  # [1, r·N, h]
    computed = full_layers * N + (L - full_layers) * len(rows)
    deviation = kv.deviation[full_layers - 1] if full_layers < L else None
    return BlendResult(kv.k, kv.v, rows.tolist() if full_layers < L else [], computed / (L * N), deviation)


@torch.no_grad()
def logits_after(lm, k: torch.Tensor, v: torch.Tensor, suffix_ids: list[int]) -> torch.Tensor:
    """Prefill `suffix_ids` on top of a given context K and V ([L, n_kv, N, d]); logits at every suffix
    position [Q, V]."""
    N = k.shape[2]
    cache = lm.new_cache(max_len=N + len(suffix_ids))
    cache.k[:, 0, :, :N] = k
    cache.v[:, 0, :, :N] = v
    cache.advance(N)
    ids = torch.tensor([suffix_ids], device=lm.device)  # [1, Q]
    return lm.model(ids, cache)[0]  # [Q, V]


def compare_logits(reference: torch.Tensor, logits: torch.Tensor, suffix_ids: list[int]) -> dict:
    """Quality of `logits` [Q, V] against `reference` [Q, V] on the same suffix: max |Δ logit|, mean
    KL(reference ‖ logits), top-1 agreement, and the perplexity each gives the suffix's own tokens.

    The measures are taken in float64, on the CPU (any device's logits; MPS has no float64). A float32
    log-softmax over a vocabulary-sized row rounds by about 1e-6 per position, and differently under AVX2 and
    AVX-512 kernels, whose sums run in another order: chapter 13's perplexity of 6.3685 printed 6.368 on one
    and 6.369 on the other, and the KL of two nearly equal rows, a small difference of large terms, came out
    below zero. In float64 what is left is the logits' own difference between kernels."""
    ref_lp = torch.log_softmax(reference.detach().to("cpu", torch.float64), dim=-1)  # [Q, V]
    lp = torch.log_softmax(logits.detach().to("cpu", torch.float64), dim=-1)  # [Q, V]
    kl = (ref_lp.exp() * (ref_lp - lp)).sum(-1)  # [Q]
    target = torch.tensor(suffix_ids[1:])  # each position predicts the next suffix token
    nll_ref = -ref_lp[:-1].gather(1, target[:, None]).mean()
    nll = -lp[:-1].gather(1, target[:, None]).mean()
    return {"max_abs_logit_diff": float((reference - logits).abs().max()), "kl": float(kl.mean()),
            "top1_agreement": float((ref_lp.argmax(-1) == lp.argmax(-1)).float().mean()),
            "ppl_full": math.exp(float(nll_ref)), "ppl": math.exp(float(nll))}


@dataclass
class BlendRow:
    select: str  # "deviation" or "random"
    ratio: float  # share of tokens recomputed beyond the fully recomputed layers
    recompute_fraction: float  # token-layers computed / token-layers of a full prefill of the context
    compute_saved: float  # 1 − recompute_fraction
    max_abs_logit_diff: float  # on the suffix, against a full prefill
    kl: float  # mean KL(full ‖ blended) over the suffix positions
    top1_agreement: float  # share of suffix positions where both pick the same next token
    ppl_full: float  # perplexity of the suffix after a full prefill
    ppl: float  # perplexity of the suffix after the blended cache

    def to_dict(self) -> dict:
        return asdict(self)


def quality_table(lm, chunk_ids: list[list[int]], suffix_ids: list[int],
                  ratios=(0.0, 0.05, 0.15, 0.3, 0.5, 1.0), selects=SELECTIONS) -> list[BlendRow]:
    """Quality against compute for each ratio and selection rule: the chapter's CacheBlend table."""
    context = sum(chunk_ids, [])
    reference = lm.forward(context + suffix_ids)[0, len(context):]  # [Q, V] full prefill
    chunks = [precompute_chunk(lm, ids) for ids in chunk_ids]
    rows = []
    for select in selects:
        for ratio in ratios:
            if select != selects[0] and ratio in (0.0, 1.0):
                continue  # full reuse and full recompute do not depend on the selection rule
            result = blend(lm, chunks, ratio, select)
            quality = compare_logits(reference, logits_after(lm, result.k, result.v, suffix_ids), suffix_ids)
            rows.append(BlendRow(select=select, ratio=ratio, recompute_fraction=result.recompute_fraction,
                                 compute_saved=1 - result.recompute_fraction, **quality))
    return rows
