"""The numbers behind every view, computed with teachllm's own code and returned as plain data.

The figures (`figures.py`) draw these objects, the widgets (`widgets.py`) recompute them when a
control moves, and the tests compare them with the engine. Nothing here imports plotting code.

    Distribution    the top tokens of one next-token distribution, before and after the sampling pipeline
    AttentionCapture  attention probabilities of a prefill and the decode steps after it, every layer
    CachePoint      the KV cache's size after one generation step, beside the formula
    StepRecord      one step of the generation loop: phase, token, candidates, time, cache length
    Segment         one step on the prefill/decode timeline, with its FLOPs and utilisation
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from .. import cost, sampling
from ..generate import greedy
from ..model import Trace
from ..sampling import SamplingParams

# The course's parameter-combination table (chapter 6, "The presets"), one value picked inside each range.
PRESETS: dict[str, dict] = {
    "code": dict(temperature=0.2),  # T 0.1–0.3
    "factual QA": dict(temperature=0.3, top_p=0.9),  # T 0.0–0.5, top-p 0.9
    "chat": dict(temperature=0.8, top_p=0.9, top_k=40),  # T 0.7–0.9, top-p 0.9, top-k 40
    "creative": dict(temperature=1.1, top_p=0.95, top_k=50),  # T 1.0–1.2, top-p 0.95, top-k 50
    "brainstorm": dict(temperature=1.7, top_p=0.98, top_k=100),  # T 1.5–2.0, top-p 0.98, top-k 100
}


@contextmanager
def one_thread():
    """Run a block on one CPU thread. Work on one [V] row is too small to split, and split work waits for
    its slowest thread: on a busy 2-core machine that wait made a redraw 5–10× slower."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def token_label(text: str) -> str:
    """A token's text made visible on an axis: a leading space as '␣', a newline as '↵'."""
    return text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"


def labeller(tokenizer):
    """A function ids → readable labels (token_label of each token's text), remembering what it has seen."""
    seen: dict[int, str] = {}

    def labels_of(ids):
        for i in ids:
            if i not in seen:
                seen[i] = token_label(tokenizer.token_text(i))
        return [seen[i] for i in ids]

    return labels_of


def entropy_bits(logits: torch.Tensor) -> float:
    """Entropy of softmax(logits) in bits: −Σ p·log₂ p (tokens at −inf contribute 0)."""
    p = logits.float().softmax(dim=-1)  # [V]
    return float(torch.special.entr(p).sum()) / math.log(2)


# ---- 1. the next-token distribution -------------------------------------------------------------
@dataclass
class Distribution:
    """The top tokens of one next-token distribution, before and after `process_logits`."""
    params: SamplingParams
    token_ids: list[int]  # the top_n tokens by logit after the penalties, most likely first
    labels: list[str]  # what each of them reads as (token_label)
    before: list[float]  # the model's probabilities: softmax(raw logits)
    after: list[float]  # probabilities after processing, renormalised; 0 for removed tokens
    kept: list[bool]  # survived every rule
    cumulative: list[float]  # running sum of the distribution top-p cuts (after penalties, temperature, top-k)
    n_top_p: int | None  # tokens top-p keeps (None when top-p is off or decoding is greedy)
    n_kept: int  # surviving tokens in the whole vocabulary (1 when greedy)
    vocab_size: int  # V
    entropy_before: float  # bits, of the model's distribution
    entropy_after: float  # bits, of the processed distribution (0 when greedy)
    chosen: int | None = None  # a sampled token id, once the "sample" button has been pressed
    chosen_rank: int | None = None  # its rank after processing (0 = most likely)


def next_token_logits(lm, prompt_ids: list[int]) -> torch.Tensor:
    """The model's logits for the token after `prompt_ids`: one prefill, float32 [V]."""
    cache = lm.new_cache(max_len=len(prompt_ids))
    return lm.prefill(prompt_ids, cache)[0].float()  # [V]


def distribution(logits: torch.Tensor, params: SamplingParams, prompt_ids=(), output_ids=(), eos_token_ids=(),
                 top_n: int = 20, labels_of=None) -> Distribution:
    """Run the sampling pipeline on one row of logits [V] and summarise its top_n tokens.

    `after` is softmax(process_logits(...)); with temperature 0 (greedy) all the mass sits on the
    argmax, since that is the token greedy decoding takes. `labels_of(ids)` names the tokens.
    """
    prompt_ids, output_ids = list(prompt_ids), list(output_ids)
    penalised = sampling.apply_penalties(logits, params, prompt_ids, output_ids, eos_token_ids)  # [V]
    processed = sampling.process_logits(logits, params, prompt_ids, output_ids, eos_token_ids)  # [V]
    top = torch.topk(penalised, top_n)  # the bars: most likely first (temperature and top-k keep this order)
    ids = top.indices  # [top_n]
    if params.greedy:
        after = torch.zeros_like(processed)  # [V]
        after[processed.argmax()] = 1.0
        before_top_p = penalised
        kept = after[ids] > 0  # [top_n]
        n_top_p, n_kept, entropy_after = None, 1, 0.0
    else:
        after = processed.softmax(dim=-1)  # [V]
        tempered = sampling.apply_temperature(penalised, params.temperature)  # [V]
        before_top_p = sampling.apply_top_k(tempered, params.top_k)  # [V]: what top-p sees
        n_top_p = int(sampling.apply_top_p(before_top_p, params.top_p).isfinite().sum()) if params.top_p < 1 else None
        kept = processed[ids].isfinite()  # [top_n]
        n_kept = int(processed.isfinite().sum())
        entropy_after = entropy_bits(processed)
    raw = logits.float().softmax(dim=-1)  # [V]
    cumulative = before_top_p.softmax(dim=-1)[ids].cumsum(dim=0)  # [top_n]
    id_list = ids.tolist()
    return Distribution(params=params, token_ids=id_list,
                        labels=labels_of(id_list) if labels_of else [str(i) for i in id_list],
                        before=raw[ids].tolist(), after=after[ids].tolist(), kept=kept.tolist(),
                        cumulative=cumulative.tolist(), n_top_p=n_top_p, n_kept=n_kept, vocab_size=logits.shape[-1],
                        entropy_before=entropy_bits(logits), entropy_after=entropy_after)


def sample_token(logits: torch.Tensor, params: SamplingParams, seed: int, prompt_ids=(), output_ids=(),
                 eos_token_ids=()) -> tuple[int, int]:
    """Draw one token with `sample` and a generator seeded with `seed`, on the logits' device; returns (token id,
    its rank among the processed logits, 0 = most likely). The same random seed draws differently on a CPU and a GPU:
    each device has its own random number generator."""
    processed = sampling.process_logits(logits, params, list(prompt_ids), list(output_ids), eos_token_ids)  # [V]
    generator = torch.Generator(device=logits.device).manual_seed(seed)
    token = int(sampling.sample(processed[None], params, generator)[0])
    rank = int((processed > processed[token]).sum())
    return token, rank


# ---- 2. attention ---------------------------------------------------------------------------------
@dataclass
class AttentionCapture:
    """Attention probabilities of one prefill and the decode steps after it (batch 1), every layer.

    Row i of each matrix is the query at position i: rows < n_prompt come from the prefill (the
    lower-triangular block), each row after that from one decode step (one query reading the cache).
    """
    token_ids: list[int]  # the prompt, then the token each decode step fed in
    labels: list[str]  # token_label of each
    n_prompt: int  # S: rows from the prefill
    n_groups: int  # g = n_h / n_kv: query heads g·j … g·j+g−1 share KV head j
    probs: list[torch.Tensor]  # per layer [n_h, N, N]; NaN where the query may not (or cannot yet) look

    def group_of(self, head: int) -> list[int]:
        """The query heads that read the same KV head as `head`."""
        j = head // self.n_groups
        return list(range(j * self.n_groups, (j + 1) * self.n_groups))


def capture_attention(lm, prompt_ids: list[int], n_decode: int = 4, labels_of=None) -> AttentionCapture:
    """Prefill `prompt_ids` and greedily decode `n_decode` tokens, with a `Trace` on every call.
    Labels are the tokens' text (from the model's tokenizer) unless `labels_of` says otherwise."""
    S, N = len(prompt_ids), len(prompt_ids) + n_decode
    traces: list[Trace] = []  # one per call: the prefill, then n_decode decode steps
    tokens, _ = greedy(lm, prompt_ids, n_decode + 1, traces=traces)
    ids = list(prompt_ids) + tokens[:n_decode]
    n_h = lm.config.n_heads
    probs = []
    for layer in range(lm.config.n_layers):
        grid = torch.full((n_h, N, N), float("nan"))  # [n_h, N, N]
        row = 0
        for t in traces:
            p = t.layers[layer].probs[0].float().cpu()  # [n_h, s, T]
            allowed = t.mask[0, 0].cpu()  # [s, T]
            s, T = allowed.shape
            grid[:, row:row + s, :T] = p.masked_fill(~allowed, float("nan"))
            row += s
        probs.append(grid)
    if labels_of is None and lm.has_tokenizer:
        labels_of = labeller(lm.tokenizer)
    labels = labels_of(ids) if labels_of else [str(i) for i in ids]
    return AttentionCapture(ids, labels, S, lm.config.n_groups, probs)


# ---- 3. KV cache growth ---------------------------------------------------------------------------
@dataclass
class CachePoint:
    """The KV cache's size after one generation step."""
    step: int  # 0 = prefill
    phase: str  # "prefill" or "decode"
    length: int  # tokens stored per sequence
    capacity: int  # slots allocated per sequence (max_len)
    bytes_used: int  # the cache's own count: KVCache.bytes_used
    bytes_allocated: int  # KVCache.bytes_allocated
    formula_bytes: int  # 2 · L · n_kv · d · tokens · b · bytes per element (teachllm.cost.kv_cache_bytes)
    layer_bytes: list[int]  # K and V bytes stored in each layer, read off the tensors themselves
    layer_allocated: list[int]  # K and V bytes each layer reserves (its slice of the preallocated tensors)


def cache_point(step: int, phase: str, cache) -> CachePoint:
    """Read a `KVCache` after a step: its own byte counts, the formula's, and each layer's tensors."""
    c = cache.config
    layer_bytes = [cache.keys(i).nbytes + cache.values(i).nbytes for i in range(c.n_layers)]
    layer_allocated = [cache.k[i].nbytes + cache.v[i].nbytes for i in range(c.n_layers)]
    formula = cost.kv_cache_bytes(c, cache.length, cache.batch_size, cache.k.dtype)
    return CachePoint(step, phase, cache.length, cache.max_len, cache.bytes_used, cache.bytes_allocated, formula,
                      layer_bytes, layer_allocated)


# ---- 4. step-through ------------------------------------------------------------------------------
@dataclass
class StepRecord:
    """One step of `generation_steps` (batch 1), as the step-through view shows it."""
    index: int  # 0 = the token chosen after prefill
    phase: str  # "prefill" or "decode"
    token: int  # the chosen token
    label: str  # its text
    candidates: list[tuple[int, str, float]]  # (id, label, probability after processing), most likely first
    seconds: float  # model + sampling time of this step
    cache_length: int  # tokens in the KV cache when the step's token was chosen
    batch_size: int  # rows in the cache
    text: str  # the generated text so far
    finished: bool  # a stop rule fired


def step_record(step, labels_of, top_n: int = 8) -> StepRecord:
    """Summarise a `Step` from `generation_steps`: the candidates are softmax(step.processed) for row 0."""
    probs = step.processed[0].float().softmax(dim=-1)  # [V]
    top = torch.topk(probs, top_n)
    ids = top.indices.tolist()
    seq = step.sequences[0]
    token = step.tokens[0]
    return StepRecord(step.index, step.phase, token, labels_of([token])[0],
                      list(zip(ids, labels_of(ids), top.values.tolist(), strict=True)), step.seconds,
                      step.cache.length, step.cache.batch_size, seq.text, seq.finished)


# ---- 5. cost: the prefill/decode timeline ---------------------------------------------------------
@dataclass
class Segment:
    """One step on the timeline."""
    phase: str  # "prefill" or "decode"
    tokens: int  # prefill: prompt length s; decode: keys the new token saw, T
    start: float  # seconds since the prompt went in
    seconds: float  # how long the step took
    flops: int  # matmul FLOPs of its forward call (teachllm.cost)
    utilisation: float | None  # achieved FLOP/s ÷ the device's peak, when a peak is given


def timeline(records: list[StepRecord], config, peak_flops: float | None = None) -> list[Segment]:
    """Lay the steps end to end; each step's FLOPs from `teachllm.cost` (prefill of the prompt, or one
    decode step over the tokens in the cache)."""
    segments, start = [], 0.0
    for r in records:
        if r.phase == "prefill":
            flops = cost.prefill_flops(config, r.cache_length, r.batch_size).total
        else:
            flops = cost.decode_flops(config, r.cache_length, r.batch_size).total
        util = flops / r.seconds / peak_flops if peak_flops else None
        segments.append(Segment(r.phase, r.cache_length, start, r.seconds, flops, util))
        start += r.seconds
    return segments
