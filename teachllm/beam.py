"""Beam search: keep the k best partial sequences instead of only one.

Each step, every running beam proposes continuations; a candidate scores its beam's summed
log-probability plus the new token's log-probability. The best candidates split two ways:
  - those that end (EOS / a stop id, or max_tokens reached) become finished hypotheses, scored
    sum_logprobs / generated_length ** length_penalty; the best k finished ones are kept;
  - the best k that go on become the next beams (each takes a copy of its parent's KV cache).
The search stops once no running beam can beat the worst of k finished hypotheses, or when
max_tokens is reached; the best finished hypothesis is the answer.

This is transformers' `_beam_search` (num_beams=k, do_sample=False, early_stopping=False)
written out step by step, so the two return the same best sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import inputs
from .outputs import GenerationOutput, Metrics
from .sampling import SamplingParams, apply_penalties, settle
from .timing import clock


@dataclass
class Hypothesis:
    token_ids: list[int]  # generated ids (no prompt)
    score: float  # running: sum of log-probs; finished: that sum / length ** length_penalty


@dataclass
class BeamStep:
    index: int  # step number; step i chooses the (i+1)-th generated token
    running: list[Hypothesis]  # the k beams that go on (none once every candidate has ended)
    finished: list[Hypothesis]  # the best (up to k) finished hypotheses so far, best first
    seconds: float  # time of this step
    done: bool  # the search stops after this step


def beam_search_steps(lm, prompt, params: SamplingParams | None = None):
    """Beam search for one prompt as a user gives it (text or token ids), one `BeamStep` at a time: the input
    is checked here, once, then `beam_steps` runs."""
    prompts, params, single = inputs.request(prompt, params, lm)
    if not single:
        raise ValueError("beam search takes one prompt (a list of token ids or a string), not a batch")
    return beam_steps(lm, prompts[0], params)


def beam_steps(lm, prompt_ids: list[int], params: SamplingParams):
    """Run beam search for one prompt (a checked list of ids), yielding a `BeamStep` after every token."""
    k, alpha, max_new = params.num_beams, params.length_penalty, params.max_tokens  # alpha: length penalty
    stop_ids = set(params.stop_token_ids) | (set() if params.ignore_eos else set(lm.config.eos_token_ids))
    vocab = lm.config.vocab_size
    # enough that k of them always go on, and no more than there are (k·V: when every id stops, all of them)
    n_candidates = min(max(2, 1 + len(stop_ids)) * k, k * vocab)

    cache = lm.new_cache(max_len=len(prompt_ids) + max_new, batch_size=k)
    t0 = clock(lm.device)
    logits = lm.prefill([list(prompt_ids)] * k, cache)  # [k, V]: k identical rows to start from
    beams: list[list[int]] = [[] for _ in range(k)]
    beam_scores = torch.full((k,), -1e9, device=lm.device)
    beam_scores[0] = 0.0  # only one real beam at the start, or the k copies would all pick the same token
    finished: list[Hypothesis] = []
    improvable = True
    for step in range(max_new):
        logp = torch.log_softmax(settle(logits.float()), dim=-1)  # [k, V]; +inf is a certain token
        logp = apply_penalties(logp, params, [list(prompt_ids)] * k, beams, stop_ids)  # on log-probs, as HF does
        total = (logp + beam_scores[:, None]).view(-1)  # [k·V]: every continuation of every beam
        scores, flat = torch.topk(total, n_candidates)  # best candidates, best first
        parents, tokens = flat // vocab, flat % vocab  # [n_candidates] each
        length = step + 1  # generated tokens, this one included
        ends = torch.tensor([t in stop_ids or length == max_new for t in tokens.tolist()], device=lm.device)

        # finished: only among the first k candidates, and only while a better one is still possible
        if improvable:
            for j in range(k):
                if ends[j]:
                    ids = beams[int(parents[j])] + [int(tokens[j])]
                    finished.append(Hypothesis(ids, float(scores[j]) / length ** alpha))
            finished = sorted(finished, key=lambda h: h.score, reverse=True)[:k]

        # running: the best k candidates that go on (an ending one only if nothing else is left)
        beam_scores, pick = torch.topk(scores - 1e9 * ends.float(), k)  # [k]
        beams = [beams[int(parents[j])] + [int(tokens[j])] for j in pick]
        cache.reorder(parents[pick])

        # can any running beam still beat the worst finished one?
        if len(finished) == k:
            improvable = improvable and float(beam_scores[0]) / length ** alpha > finished[-1].score
        done = not improvable or bool(ends.all())
        now = clock(lm.device)
        seconds, t0 = now - t0, now
        running = [] if bool(ends.all()) else [Hypothesis(b, float(s)) for b, s in zip(beams, beam_scores, strict=True)]
        yield BeamStep(step, running, list(finished), seconds, done)
        if done:
            return
        logits = lm.decode_step(torch.tensor([b[-1] for b in beams], device=lm.device), cache)


def beam_search(lm, prompt_ids: list[int], params: SamplingParams) -> GenerationOutput:
    """The best sequence beam search finds for one prompt (a checked list of ids), as a `GenerationOutput`."""
    step_s = []
    for step in beam_steps(lm, prompt_ids, params):
        step_s.append(step.seconds)
    best = step.finished[0]
    ids = best.token_ids
    ended_by_stop = ids[-1] in params.stop_token_ids or (
        not params.ignore_eos and ids[-1] in lm.config.eos_token_ids)
    e2e = sum(step_s)
    metrics = Metrics(ttft_s=step_s[0], tpot_s=(e2e - step_s[0]) / max(len(step_s) - 1, 1),
                      tokens_per_s=len(ids) / e2e, e2e_s=e2e, n_prompt_tokens=len(prompt_ids),
                      n_output_tokens=len(ids), step_s=step_s)
    text = lm.tokenizer.decode(ids, skip_special_tokens=True) if lm.has_tokenizer else ""
    return GenerationOutput(text=text, token_ids=ids, finish_reason="stop" if ended_by_stop else "length",
                            stop_reason=ids[-1] if ids[-1] in params.stop_token_ids else None, logprobs=None,
                            metrics=metrics, prompt_token_ids=list(prompt_ids))
