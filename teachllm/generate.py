"""generate(): prefill once, then decode one token at a time until a stop rule fires.

    tokens ─► prefill ─► logits ─► process + sample ─► token ─► stop? ─► decode_step ─► logits ─► ...

`steps` is that loop, written as a generator that yields after every token, so the terminal demo,
streaming and the notebooks all watch the same code run (`generation_steps` checks a user's input,
then runs it). `generate` and `stream` are thin consumers of it; `greedy` is the smallest loop of all.

Stop rules (vLLM's): the end-of-sequence token unless `ignore_eos`; a token in `stop_token_ids`
(its id is kept, its text left out); a stop string found in the decoded output (also across token
boundaries; the text is cut where it begins, or after it with `include_stop_str_in_output`);
`max_tokens` ("length"). Until `min_tokens` tokens exist, EOS and stop ids are masked and stop
strings are not looked for.

On a GPU, `generate` and `stream` take the fast path instead (teachllm/fastpath/loop.py: a static cache, a CUDA
graph per step, ids read back every few steps), with these same stop rules and outputs; `fast=False` keeps this
loop. On the CPU this loop is the default; `lm.decode_path` says which ran, and why.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import inputs
from .beam import beam_search
from .cache import KVCache
from .fastpath import loop
from .model import Trace
from .outputs import GenerationOutput, Metrics
from .sampling import SamplingParams, process_logits, row_seeds, sample, top_logprobs
from .timing import clock
from .tokenizer import IncrementalDetokenizer


class Sequence:
    """One request while it is generated: its ids, its text so far, and whether it has stopped."""

    def __init__(self, prompt_ids: list[int], params: SamplingParams, tokenizer, eos_token_ids):
        self.prompt_ids = list(prompt_ids)
        self.output_ids: list[int] = []
        self.params = params
        self.eos_token_ids = set() if params.ignore_eos else set(eos_token_ids)
        self.detok = (IncrementalDetokenizer(tokenizer, params.stop, params.include_stop_str_in_output)
                      if tokenizer is not None else None)
        self.logprobs: list[dict[int, float]] | None = [] if params.logprobs is not None else None
        self.finish_reason: str | None = None
        self.stop_reason: str | int | None = None
        self.step_s: list[float] = []  # time of each step that produced one of this sequence's tokens

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def append(self, token: int, seconds: float, logprobs: dict[int, float] | None = None) -> None:
        """Add one generated token (that took `seconds` to produce) and apply the stop rules.

        As in vLLM: the id that stops generation (EOS or a stop id) stays in `output_ids` but its text
        is left out unless `include_stop_str_in_output`; and a stop string only counts once more than
        `min_tokens` tokens exist (text up to then is not searched).
        """
        self.output_ids.append(token)
        self.step_s.append(seconds)
        if self.logprobs is not None:
            self.logprobs.append(logprobs)
        stop_id = token in self.eos_token_ids or token in self.params.stop_token_ids
        if self.detok is not None and not (stop_id and not self.params.include_stop_str_in_output):
            self.detok.add(token, check_stop=len(self.output_ids) > self.params.min_tokens)
        if token in self.eos_token_ids:
            self.finish_reason = "stop"
        elif token in self.params.stop_token_ids:
            self.finish_reason, self.stop_reason = "stop", token
        elif self.detok is not None and self.detok.stop_found is not None:
            self.finish_reason, self.stop_reason = "stop", self.detok.stop_found
        elif len(self.output_ids) >= self.params.max_tokens:
            self.finish_reason = "length"

    @property
    def text(self) -> str:
        return self.detok.text if self.detok is not None else ""

    def result(self) -> GenerationOutput:
        """What generate() returns for this sequence: text, ids, finish reason, log-probs and timings."""
        n, step_s = len(self.output_ids), self.step_s
        e2e = sum(step_s)
        metrics = Metrics(ttft_s=step_s[0], tpot_s=(e2e - step_s[0]) / (n - 1) if n > 1 else float("nan"),
                          tokens_per_s=n / e2e, e2e_s=e2e, n_prompt_tokens=len(self.prompt_ids),
                          n_output_tokens=n, step_s=list(step_s))
        return GenerationOutput(text=self.text, token_ids=list(self.output_ids), finish_reason=self.finish_reason,
                                stop_reason=self.stop_reason, logprobs=self.logprobs, metrics=metrics,
                                prompt_token_ids=list(self.prompt_ids))


@dataclass
class Step:
    """What one iteration of the loop did, for anyone watching."""
    index: int  # 0 is the token chosen right after prefill
    phase: str  # "prefill" or "decode"
    tokens: list[int]  # the token chosen for each sequence
    logits: torch.Tensor  # [B, V] the model's raw logits
    processed: torch.Tensor  # [B, V] after penalties and filters
    seconds: float  # model + sampling time of this step
    cache: KVCache
    sequences: list[Sequence]


def generation_steps(lm, prompts, params: SamplingParams | None = None):
    """Generate for prompts as a user gives them (text or token ids, one or a batch), one `Step` at a time:
    the input is checked here, once (`inputs.request`), then `steps` runs."""
    prompts, params, _ = inputs.request(prompts, params, lm)
    return steps(lm, prompts, params)


def steps(lm, prompts: list[list[int]], params: SamplingParams):
    """The loop: generate for a batch of prompts (lists of ids), yielding a `Step` after every token.

    All prompts are prefilled together (left-padded) and decoded together; a sequence that has
    stopped keeps its row until the last one stops (static batching). With a random seed, row i draws
    from its own generator seeded with seed + i, so it matches the same prompt alone with random seed seed + i.
    """
    eos = lm.config.eos_token_ids
    tokenizer = lm.tokenizer if lm.has_tokenizer else None
    seqs = [Sequence(p, params, tokenizer, eos) for p in prompts]
    generators = None
    if params.seed is not None:
        generators = [torch.Generator(device=lm.device).manual_seed(s) for s in row_seeds(params.seed, len(seqs))]
    cache = lm.new_cache(max_len=max(len(p) for p in prompts) + params.max_tokens, batch_size=len(seqs))

    t0 = clock(lm.device)
    logits = lm.prefill(prompts, cache)  # [B, V]
    index = 0
    while True:
        processed = process_logits(logits, params, [s.prompt_ids for s in seqs], [s.output_ids for s in seqs], eos)
        tokens = sample(processed, params, generators)  # [B]
        logprobs = (top_logprobs(logits, params.logprobs, tokens) if params.logprobs is not None
                    else [None] * len(seqs))  # per sequence: {token id: log-probability}
        seconds = clock(lm.device) - t0
        chosen = tokens.tolist()
        for seq, token, token_logprobs in zip(seqs, chosen, logprobs, strict=True):
            if not seq.finished:
                seq.append(token, seconds, token_logprobs)
        yield Step(index, "prefill" if index == 0 else "decode", chosen, logits, processed, seconds, cache, seqs)
        if all(s.finished for s in seqs):
            return
        t0 = clock(lm.device)
        logits = lm.decode_step(tokens, cache)  # [B, V]; finished rows run too and are ignored
        index += 1


def generate(lm, prompts: list[list[int]], params: SamplingParams, fast: bool | None = None) -> list[GenerationOutput]:
    """Generate for every prompt (checked lists of ids); one output per prompt, in order.

    fast: the GPU's fast path (teachllm/fastpath/loop.py: the same outputs, fewer waits for the device); None
    takes it on CUDA only, where it supports `params`. `lm.decode_path` says afterwards which loop ran, and why."""
    if _fast_path(lm, params, fast, len(prompts)):
        for seqs in loop.fast_steps(lm, prompts, params, Sequence):
            if all(seq.finished for seq in seqs):
                return [seq.result() for seq in seqs]
    if params.num_beams > 1:
        return [beam_search(lm, p, params) for p in prompts]
    for step in steps(lm, prompts, params):
        if all(seq.finished for seq in step.sequences):  # the last step: every sequence has stopped
            return [seq.result() for seq in step.sequences]


def stream(lm, prompt: list[int], params: SamplingParams, fast: bool | None = None):
    """Yield the generated text in pieces as tokens arrive; never half a character, never a stop string.
    fast: as in `generate` (on the fast path the pieces come every few tokens, at each read-back)."""
    if params.num_beams > 1:
        raise ValueError("beam search cannot stream: the best beam is known only at the end")
    if not lm.has_tokenizer:
        raise ValueError("streaming text needs a tokenizer; this model was loaded without one")
    if _fast_path(lm, params, fast, 1):
        for seqs in loop.fast_steps(lm, [prompt], params, Sequence):
            piece = seqs[0].detok.release(final=seqs[0].finished)
            if piece:
                yield piece
        return
    for step in steps(lm, [prompt], params):
        seq = step.sequences[0]
        piece = seq.detok.release(final=seq.finished)
        if piece:
            yield piece


def _fast_path(lm, params: SamplingParams, fast: bool | None, n_prompts: int) -> bool:
    """Whether generate / stream take the fast path; `lm.decode_path` keeps which loop ran and why, in one line."""
    reason = loop.why_not(lm, params, fast, n_prompts)
    lm.decode_path = "fast path (teachllm/fastpath/loop.py)" if reason is None else f"reference loop: {reason}"
    return reason is None


# ---- the smallest loop: greedy, the reference the tests, the benchmark and the views share ----------------
@torch.no_grad()
def greedy_decode(lm, logits: torch.Tensor, cache, n: int, traces: list | None = None):
    """n tokens from the logits [B, V] of the last step: each the most likely, fed back through decode_step
    (n − 1 calls). Yields (tokens [B], the logits [B, V] they were chosen from). traces: a list that gets one
    `Trace` per decode_step call."""
    for i in range(n):
        tokens = logits.argmax(dim=-1)  # [B]
        yield tokens, logits
        if i + 1 < n:
            logits = lm.decode_step(tokens, cache, trace=_new_trace(traces))  # [B, V]


@torch.no_grad()
def greedy(lm, ids: list[int], n_new: int, traces: list | None = None) -> tuple[list[int], list[torch.Tensor]]:
    """Greedy decoding of one prompt, written with prefill and decode_step: the n_new most likely tokens (EOS
    does not stop it) and the logits [V] each was chosen from. traces: a list that gets one `Trace` per call."""
    cache = lm.new_cache(max_len=len(ids) + n_new)
    logits = lm.prefill(ids, cache, trace=_new_trace(traces))  # [1, V]
    chosen = list(greedy_decode(lm, logits, cache, n_new, traces))
    return [int(t[0]) for t, _ in chosen], [step_logits[0] for _, step_logits in chosen]


def _new_trace(traces: list | None):
    if traces is None:
        return None
    traces.append(Trace())
    return traces[-1]
