"""generate() on the fast path: the same stop rules and outputs as generate.py's loop, with the device left alone.

Who reads it: `lm.generate` and `lm.stream` on a GPU (issue 35), and the tests. The chapters read generate.py's
`steps`, which checks every step's logits, samples on the host's terms and reads each token back: each of
those waits for the device, and on a GPU the waiting, not the arithmetic, sets the speed.

    generate.py's steps (the reference)        here
    a KVCache whose shapes grow                 a StaticKVCache (static_cache.py): the same shapes every step
    lm.decode_step, checked every step          CudaGraphDecoder.step (graph.py): one recorded graph per batch
                                                size on CUDA, the eager step elsewhere
    model.py's forward                          the fused step (fused_float.py): stacked q/k/v and gate/up, a
                                                RoPE table; model.py's forward where it does not apply, or with
                                                TEACHLLM_UNFUSED_STEP=1
    settle / choosable raise at once on NaN     the same checks as flags on the device, raised at the next read
    tokens.tolist() after every step            ids gathered on the device, read back every READ_EVERY steps;
                                                EOS, stop ids, stop strings and max_tokens are applied then

A read-back hands the tokens to generate.py's `Sequence` one at a time, so the stop rules, the text and the
finish reasons are the reference's own; the steps run past a stop before the read that sees it are discarded.
Each token's time is its share of the time between two reads (one step cannot be timed without waiting for it).

What it supports: greedy decoding and sampling (temperature, top-k, top-p, min-p, a random seed), batches of up to
32 prompts of any lengths (left-padded), streaming. Anything that needs the host between two steps falls back
to the reference loop, and `why_not` says why in one line: beam search, the penalties that read the token
history (repetition, presence, frequency, no-repeat n-gram), min_tokens, log-probabilities, weights="gguf"
(its own CPU path, teachllm.fastpath.fused).

`fast`: True asks for this loop (on the CPU it runs through the eager step: what the CPU tests compare),
False for the reference loop, None (the default) for this loop on CUDA only. TEACHLLM_PLAIN_DECODE=1 in the
environment makes None mean the reference loop everywhere.
"""

from __future__ import annotations

import torch

from .. import inputs
from ..inputs import env_flag
from ..model import Transformer
from ..sampling import NoTokenError, apply_min_p, apply_temperature, apply_top_k, apply_top_p, row_seeds
from ..timing import clock
from .fused_float import FusedStep, why_unfused
from .graph import BATCH_SIZES, CudaGraphDecoder, prefill
from .static_cache import StaticKVCache

READ_EVERY = 8  # decode steps between two read-backs of the ids (and two looks at the stop rules)
PLAIN_FLAG = "TEACHLLM_PLAIN_DECODE"  # 1, true, yes or on: fast=None means the reference loop, on CUDA too
UNFUSED_FLAG = "TEACHLLM_UNFUSED_STEP"  # 1, true, yes or on: the fast path decodes with model.py's forward


def why_not(lm, params, fast: bool | None, n_prompts: int = 1) -> str | None:
    """None when `generate` should take the fast path for n_prompts prompts; otherwise, in one line, why it takes
    the reference loop."""
    if fast is not None and not isinstance(fast, bool):
        raise ValueError(f"fast={fast!r}: give True (the fast path), False (the reference loop) or None (the fast "
                         "path on CUDA only)")
    if fast is False:
        return "fast=False: the reference loop (teachllm/generate.py) was asked for"
    if fast is None and env_flag(PLAIN_FLAG):
        return f"{PLAIN_FLAG} is set: the reference loop (teachllm/generate.py), on every device"
    if fast is None and lm.device.type != "cuda":
        return (f"the model is on {lm.device.type}: the fast path is the default on CUDA only (fast=True runs it "
                "here, through the eager step)")
    unsupported = [(params.num_beams > 1, "beam search"),
                   (params.repetition_penalty != 1.0, "repetition_penalty"),
                   (params.presence_penalty != 0.0 or params.frequency_penalty != 0.0, "presence/frequency penalty"),
                   (params.no_repeat_ngram_size > 0, "no_repeat_ngram_size"),
                   (params.min_tokens > 0, "min_tokens"),
                   (params.logprobs is not None, "logprobs")]
    named = [name for on, name in unsupported if on]
    if named:
        return (f"{', '.join(named)} read the tokens on the host at every step: the reference loop "
                "(teachllm/generate.py) runs instead")
    if getattr(lm, "fast", None) is not None:
        return "weights='gguf' runs its own CPU path (teachllm.fastpath.fused): the reference loop runs instead"
    if lm.device.type == "cuda" and n_prompts > max(BATCH_SIZES):
        return (f"a batch of {n_prompts} prompts is larger than the largest recorded batch size, {max(BATCH_SIZES)}: "
                "the reference loop runs instead")
    return None


# ---- the step, and the decoder, kept on the model between calls (stacking and recording take a moment) --------
def step_for(lm) -> tuple[Transformer | FusedStep, str]:
    """What a decode step calls: the fused step (fused_float.py) where it applies, else model.py's forward; and
    which, in a few words. The fused step is kept on `lm` while its stacked matrices are still the model's."""
    if env_flag(UNFUSED_FLAG):
        return lm.model, f"model.py's step ({UNFUSED_FLAG} is set)"
    why = why_unfused(lm.model)
    if why is not None:
        return lm.model, f"model.py's step ({why})"
    kept = getattr(lm, "_fused_step", None)
    if kept is None or kept.model is not lm.model or not kept.current():
        lm._fused_step = None  # let the old table go before the new one is made
        lm._fused_step = FusedStep(lm.model)
    return lm._fused_step, "the fused step (teachllm/fastpath/fused_float.py)"


def decoder_for(lm, n_rows: int, max_len: int) -> CudaGraphDecoder:
    """A CudaGraphDecoder with room for n_rows sequences of max_len tokens, its cache empty, decoding with
    step_for(lm)'s step; its `reason` says which step, and whether graphs replay it.

    On CUDA the decoder is kept on `lm` and reused while it is large enough and decodes with the same step: a new
    one records its graphs again. Its cache is made for the next recorded batch size and a power of two of slots
    (at least 256), so that prompts of other lengths reuse it. Elsewhere (the eager step) it is made for exactly
    what is asked."""
    step, which = step_for(lm)
    if lm.device.type != "cuda":
        cache = StaticKVCache(lm.config, max_len, n_rows, dtype=lm.dtype, device=lm.device)
        decoder = CudaGraphDecoder(step, cache, batch_sizes=(n_rows,))
        decoder.reason = f"{which}; {decoder.reason}"
        return decoder
    kept = getattr(lm, "_graph_decoder", None)
    if (kept is not None and kept.model is step and kept.cache.batch_size >= n_rows
            and kept.cache.max_len >= max_len):
        kept.cache.reset()
        return kept
    rows = next(b for b in BATCH_SIZES if b >= n_rows)
    slots = min(max(256, 1 << (max_len - 1).bit_length()), lm.config.max_position_embeddings)
    lm._graph_decoder = None  # let the old graphs and cache go before the new ones are made
    cache = StaticKVCache(lm.config, max(slots, max_len), rows, dtype=lm.dtype, device=lm.device)
    sizes = tuple(b for b in BATCH_SIZES if b <= rows)
    try:
        lm._graph_decoder = CudaGraphDecoder(step, cache, batch_sizes=sizes)
    except Exception as error:  # recording failed (a kernel that cannot be captured, say): decode eagerly instead
        torch.cuda.synchronize()
        cache.reset()
        lm._graph_decoder = CudaGraphDecoder(step, cache, batch_sizes=sizes, record=False)
        lm._graph_decoder.reason = (f"recording the CUDA graphs failed ({type(error).__name__}: "
                                    f"{str(error).splitlines()[0][:160] if str(error) else ''}): each step runs "
                                    "eagerly (decode_step)")
    lm._graph_decoder.reason = f"{which}; {lm._graph_decoder.reason}"
    return lm._graph_decoder


# ---- choosing the next token on the device ---------------------------------------------------------------
def settle_on_device(logits: torch.Tensor, bad: torch.Tensor) -> torch.Tensor:
    """sampling.settle without its questions to the host: +inf rows become "only these tokens", and a NaN or a
    row with no token left is recorded in `bad` [B] (in place), to be raised at the next read-back."""
    bad |= logits.isnan().any(dim=-1)  # [B]
    certain = logits.isposinf()  # [B, V]
    settled = torch.zeros_like(logits).masked_fill(~certain, float("-inf"))
    logits = torch.where(certain.any(dim=-1, keepdim=True), settled, logits)  # [B, V]
    bad |= ~(logits > float("-inf")).any(dim=-1)  # [B] every token ruled out
    return logits


def choose(logits: torch.Tensor, params, generators, bad: torch.Tensor) -> torch.Tensor:
    """The next ids [B] from raw logits [B, V]: sampling.process_logits then sampling.sample for the rules
    supported here, in the same order and with the same draws, and no read of a device value."""
    rows = settle_on_device(logits.float(), bad)  # [B, V] float32, as apply_penalties makes them
    if params.greedy:
        return rows.argmax(dim=-1)  # [B]
    rows = apply_temperature.pure(rows, params.temperature)
    rows = apply_top_k.pure(rows, params.top_k)
    rows = apply_top_p.pure(rows, params.top_p)
    rows = apply_min_p.pure(rows, params.min_p)
    probs = settle_on_device(rows, bad).softmax(dim=-1)  # [B, V]; removed tokens have probability 0
    if generators is not None:  # row i draws from its own generator, as sampling.sample does
        return torch.cat([torch.multinomial(p[None], 1, generator=g)[:, 0]
                          for p, g in zip(probs, generators, strict=True)])
    return torch.multinomial(probs, num_samples=1)[:, 0]  # [B]


def raise_if_bad(bad: torch.Tensor) -> None:
    """At a read-back: the error settle / choosable would have raised at the step itself."""
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        raise NoTokenError("logits row {row} holds NaN, or every token in it is ruled out: the model's output is "
                           "broken, and no token can be chosen from it (found at a read-back of the fast path)",
                           row=row)


# ---- the loop --------------------------------------------------------------------------------------------
def fast_steps(lm, prompts: list[list[int]], params, sequence_class):
    """Generate for checked prompts (lists of ids); yields the list of `Sequence`s after every read-back.

    sequence_class: generate.py's Sequence (passed in: generate.py imports this module, not the other way)."""
    eos = lm.config.eos_token_ids
    tokenizer = lm.tokenizer if lm.has_tokenizer else None
    seqs = [sequence_class(p, params, tokenizer, eos) for p in prompts]
    n = len(seqs)
    generators = None
    if params.seed is not None and not params.greedy:
        generators = [torch.Generator(device=lm.device).manual_seed(s) for s in row_seeds(params.seed, n)]
    width = max(len(p) for p in prompts)
    ids = inputs.sequences([[0] * (width - len(p)) + list(p) for p in prompts], lm)  # [B, S] left-padded
    pad = torch.tensor([width - len(p) for p in prompts], device=lm.device)  # [B]
    decoder = decoder_for(lm, n, width + params.max_tokens)
    lm.decode_path = f"fast path (teachllm/fastpath/loop.py); {decoder.reason}"
    cache = decoder.cache.rows(n)
    bad = torch.zeros(n, dtype=torch.bool, device=lm.device)  # [B] a NaN or an empty row, seen on the device

    t0 = clock(lm.device)
    tokens = choose(prefill(lm.model, ids, cache, pad), params, generators, bad)  # [B]
    chunk = [tokens]  # the ids chosen since the last read-back, each [B], on the device
    made = 1  # tokens chosen so far per row
    while True:
        if len(chunk) == READ_EVERY or made == params.max_tokens or made == 1:
            raise_if_bad(bad)
            chosen = torch.stack(chunk, dim=1).tolist()  # [B, k]: the one wait for the device per chunk
            seconds = (clock(lm.device) - t0) / len(chunk)
            for seq, row in zip(seqs, chosen, strict=True):
                for token in row:
                    if not seq.finished:
                        seq.append(token, seconds)
            yield seqs
            if all(s.finished for s in seqs):
                return
            chunk, t0 = [], clock(lm.device)
        logits, _ = decoder.step(tokens)  # [B, V]; finished rows run too and are ignored
        tokens = choose(logits, params, generators, bad)  # [B]
        chunk.append(tokens)
        made += 1
