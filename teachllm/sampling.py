"""From logits to a token: one small pure function per rule, and the pipeline that applies them.

Every function takes logits of shape [V] or [B, V] and returns new logits of the same shape;
a token that a rule removes gets -inf, as in transformers and vLLM. The formulas follow
transformers' `generation/logits_process.py` (the reference the tests compare against), except
presence/frequency penalties, which transformers lacks: those follow the OpenAI formula as vLLM
implements it (on the generated tokens only).

`process_logits` applies the rules in one fixed order (transformers' order, with vLLM's
presence/frequency penalties beside the repetition penalty):

    1. repetition penalty        (prompt + output)
    2. presence / frequency      (output only)
    3. no-repeat n-gram          (prompt + output)
    4. min_tokens: EOS and stop ids get -inf until min_tokens tokens exist
    --- only when sampling (temperature > 0) ---
    5. temperature → 6. top-k → 7. top-p → 8. min-p

Note that vLLM applies min-p *before* top-k/top-p, transformers after: the same parameters can
give different distributions. teachllm follows transformers.

Logits that are not finite numbers follow one policy, in every rule and in greedy decoding alike
(`settle`): NaN is an error naming the row; +inf means "this token is certain"; -inf is a token ruled out.
Each rule is a pure function of well-formed arguments. Called directly (as the chapters do), a rule checks
what it is given at that boundary, once (`@boundary`: `inputs.rule`, then `settle`); `process_logits` checks
its own arguments once and calls the rules themselves (`rule.pure`). SamplingParams (params.py) checks its fields
as they are set.
"""

from __future__ import annotations

import functools
import inspect

import torch

from . import inputs
from .params import SEED_RANGE, SamplingParams, TemplatedError


# ---- logits that are not finite numbers ------------------------------------------------------------------
class NoTokenError(TemplatedError):
    """A row of logits no token can be chosen from (its message in the reader's language: TemplatedError)."""


def settle(logits: torch.Tensor) -> torch.Tensor:
    """The policy for logits that are not finite, shared by every rule and by greedy decoding:
    - NaN is an error naming the row: a model that computed one is broken, and no probability follows from it;
    - +inf means "this token is certain": the row becomes 0 at each +inf and -inf elsewhere, so every rule
      keeps exactly those tokens and softmax shares the probability among them equally;
    - -inf is a token already ruled out, the way every rule removes one."""
    nan = logits.isnan()
    if bool(nan.any()):
        row, token = nan.reshape(-1, logits.shape[-1]).nonzero()[0].tolist()
        raise NoTokenError("logits row {row} holds NaN (token {token}, and maybe others): the model's output is "
                           "broken, and no token can be chosen from it", row=row, token=token)
    certain = logits.isposinf()
    if not bool(certain.any()):
        return logits
    settled = torch.zeros_like(logits).masked_fill(~certain, float("-inf"))
    return torch.where(certain.any(-1, keepdim=True), settled, logits)


HISTORIES = ("seen_ids", "output_ids", "ids")  # the penalties' token histories: one list of ids per row


def boundary(rule):
    """A rule as a student calls it: what it is given is checked here, once (`inputs.rule`: the logits' type and
    shape, each argument's range; a token history as one list of ids per row), and non-finite logits are settled
    (`settle`). `rule.pure` is the rule itself, which `process_logits` calls with arguments it checked."""
    signature = inspect.signature(rule)

    @functools.wraps(rule)
    def checked(logits, *args, **kwargs):
        bound = signature.bind(logits, *args, **kwargs)
        bound.apply_defaults()
        given = {k: v for k, v in bound.arguments.items() if k != "logits"}
        inputs.rule(rule.__name__, logits, **{k: v for k, v in given.items() if k not in HISTORIES})
        rows = _rows(logits)  # [B, V]
        for name in HISTORIES:
            if name in given:
                given[name] = inputs.histories(given[name], rows.shape[0], rows.shape[-1])
        return rule(settle(logits), **given)

    checked.pure = rule
    return checked


def _rows(logits: torch.Tensor) -> torch.Tensor:
    return logits if logits.dim() == 2 else logits[None]  # [B, V]


# ---- filters (only when sampling) --------------------------------------------------------------
@boundary
def apply_temperature(logits: torch.Tensor, t: float) -> torch.Tensor:
    """logits / t.  t < 1 sharpens the distribution, t > 1 flattens it; t must be > 0
    (t = 0 is not a temperature: engines treat it as greedy, see `sample`)."""
    return logits / t


@boundary
def apply_top_k(logits: torch.Tensor, k: int, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Keep logit_i if logit_i ≥ the k-th largest logit (ties at the boundary all survive), else -inf.
    k is raised to min_tokens_to_keep; k ≤ 0 disables."""
    if k <= 0:
        return logits
    k = min(max(k, min_tokens_to_keep), logits.shape[-1])
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # [..., 1]
    return logits.masked_fill(logits < kth_largest, float("-inf"))


@boundary
def apply_top_p(logits: torch.Tensor, p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Nucleus filtering. Sort ascending, take softmax and the cumulative sum c; remove the tokens with
    c ≤ 1 − p, but always keep the `min_tokens_to_keep` most likely. The token whose probability
    crosses the threshold is kept: with [.4, .3, .15, .10, .05] and p = 0.9, four tokens survive."""
    if p >= 1.0:
        return logits
    sorted_logits, order = torch.sort(logits, dim=-1, descending=False)  # least likely first
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    remove_sorted = cumulative <= (1 - p)
    remove_sorted[..., -min_tokens_to_keep:] = False  # the most likely tokens stay
    remove = remove_sorted.scatter(-1, order, remove_sorted)  # back to vocabulary order
    return logits.masked_fill(remove, float("-inf"))


@boundary
def apply_min_p(logits: torch.Tensor, p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Remove token i if prob_i < p · max_j prob_j (probabilities of these logits, i.e. after temperature);
    keep at least `min_tokens_to_keep`. p = 0 disables."""
    if p <= 0:
        return logits
    probs = logits.softmax(dim=-1)
    remove = probs < p * probs.amax(dim=-1, keepdim=True)
    keep = torch.topk(probs, min(min_tokens_to_keep, probs.shape[-1]), dim=-1).indices
    remove = remove.scatter(-1, keep, False)
    return logits.masked_fill(remove, float("-inf"))


# ---- penalties (greedy and sampling alike) -----------------------------------------------------
def token_counts(histories: list[list[int]], like: torch.Tensor) -> torch.Tensor:
    """How often each token occurs in each row's history: [B, V] in the dtype and on the device of `like` [B, V].
    One scatter for the whole batch (no loop over rows on the device)."""
    rows = [b for b, ids in enumerate(histories) for _ in ids]
    cols = [i for ids in histories for i in ids]
    counts = torch.zeros_like(like)  # [B, V]
    if cols:
        index = (torch.tensor(rows, device=like.device), torch.tensor(cols, device=like.device))
        counts.index_put_(index, torch.ones(len(cols), dtype=like.dtype, device=like.device), accumulate=True)
    return counts


@boundary
def apply_repetition_penalty(logits: torch.Tensor, seen_ids, r: float) -> torch.Tensor:
    """CTRL's repetition penalty (as transformers): for every distinct token already in the sequence,
    logit / r if the logit is > 0, else logit · r. r > 1 discourages repeats; r = 1 is off."""
    if r == 1.0:
        return logits
    rows = _rows(logits)  # [B, V]
    seen = token_counts(seen_ids, rows) > 0  # [B, V]
    penalised = torch.where(rows > 0, rows / r, rows * r)  # [B, V]
    return torch.where(seen, penalised, rows).view_as(logits)


@boundary
def apply_presence_frequency_penalty(logits: torch.Tensor, output_ids, presence: float,
                                     frequency: float) -> torch.Tensor:
    """OpenAI's penalties, on the generated tokens only (not the prompt):
    logit_j − c_j · frequency − (c_j > 0) · presence, where c_j counts token j in the output."""
    if presence == 0 and frequency == 0:
        return logits
    rows = _rows(logits)  # [B, V]
    counts = token_counts(output_ids, rows)  # [B, V]
    return (rows - (counts * frequency + (counts > 0).to(rows.dtype) * presence)).view_as(logits)


def banned_ngram_tokens(ids: list[int], n: int) -> set[int]:
    """Tokens that would complete an n-gram already in `ids`: for every earlier n-gram whose first n−1
    tokens equal the last n−1 tokens of `ids`, its n-th token."""
    if n <= 0 or len(ids) < n:
        return set()
    suffix = tuple(ids[len(ids) - n + 1:])
    return {ids[i + n - 1] for i in range(len(ids) - n + 1) if tuple(ids[i:i + n - 1]) == suffix}


@boundary
def apply_no_repeat_ngram(logits: torch.Tensor, ids, n: int) -> torch.Tensor:
    """No n-gram of size n may appear twice (prompt included): the tokens that would complete one get -inf.
    Nothing is banned while the sequence is shorter than n; n = 0 is off."""
    if n <= 0:
        return logits
    rows = _rows(logits)  # [B, V]
    banned = [sorted(banned_ngram_tokens(h, n)) for h in ids]
    return rows.masked_fill(token_counts(banned, rows) > 0, float("-inf")).view_as(logits)


def apply_min_tokens(logits: torch.Tensor, n_output: int, min_tokens: int, stop_ids) -> torch.Tensor:
    """While fewer than `min_tokens` tokens have been generated, the ids that would stop generation
    (EOS and stop_token_ids) get -inf."""
    stop_ids = sorted(set(stop_ids))
    if n_output >= min_tokens or not stop_ids:
        return logits
    out = logits.clone()
    out[..., stop_ids] = float("-inf")
    return out


# ---- the pipeline ------------------------------------------------------------------------------
def apply_penalties(logits: torch.Tensor, params: SamplingParams, prompt_ids, output_ids,
                    eos_token_ids=()) -> torch.Tensor:
    """Steps 1–4 of the pipeline: the rules that also apply to greedy decoding and beam search."""
    inputs.rule("apply_penalties", logits)
    inputs.sampling_params("apply_penalties", params)
    rows = settle(_rows(logits).float())  # [B, V]
    B, V = rows.shape
    inputs.for_vocabulary(params, V)
    eos = inputs.end_ids("eos_token_ids", eos_token_ids, V)
    prompts, outputs = inputs.histories(prompt_ids, B, V), inputs.histories(output_ids, B, V)
    return _penalties(rows, params, prompts, outputs, eos).view(logits.shape)


def _penalties(rows: torch.Tensor, params: SamplingParams, prompts, outputs, eos_token_ids) -> torch.Tensor:
    """Steps 1–4 on settled rows [B, V] and checked histories (one list of ids per row)."""
    histories = [p + o for p, o in zip(prompts, outputs, strict=True)]
    rows = apply_repetition_penalty.pure(rows, histories, params.repetition_penalty)
    rows = apply_presence_frequency_penalty.pure(rows, outputs, params.presence_penalty, params.frequency_penalty)
    rows = apply_no_repeat_ngram.pure(rows, histories, params.no_repeat_ngram_size)
    stop_ids = list(params.stop_token_ids) + ([] if params.ignore_eos else list(eos_token_ids))
    if params.min_tokens > 0:
        rows = torch.stack([apply_min_tokens(r, len(o), params.min_tokens, stop_ids)
                            for r, o in zip(rows, outputs, strict=True)])
    return rows


def process_logits(logits: torch.Tensor, params: SamplingParams, prompt_ids, output_ids,
                   eos_token_ids=()) -> torch.Tensor:
    """Apply every rule `params` switches on, in the order of the module docstring.

    logits: [V] or [B, V]. prompt_ids, output_ids: one list of ids (for [V]) or one list per row.
    eos_token_ids: the model's end-of-sequence ids (masked by min_tokens unless ignore_eos).
    Returns float32 logits of the same shape; with temperature 0 only the penalties are applied.
    The arguments are checked here, once; the rules run as the pure functions they are (`rule.pure`).
    """
    out = apply_penalties(logits, params, prompt_ids, output_ids, eos_token_ids)
    if not params.greedy:  # params' fields were checked as they were set: each is in its rule's range
        out = apply_temperature.pure(out, params.temperature)
        out = apply_top_k.pure(out, params.top_k)
        out = apply_top_p.pure(out, params.top_p)
        out = apply_min_p.pure(out, params.min_p)
    return out


def choosable(processed: torch.Tensor) -> torch.Tensor:
    """Settled logits [B, V] that leave each row at least one token; a row the rules emptied is an error."""
    processed = settle(_rows(processed))
    empty = ~(processed > float("-inf")).any(dim=-1)  # [B]
    if bool(empty.any()):
        raise NoTokenError("logits row {row}: every token is ruled out (all logits are -inf), so none can be "
                           "chosen; usually the penalties and filters removed them all", row=int(empty.nonzero()[0]))
    return processed


def row_seeds(seed: int, n: int) -> list[int]:
    """The random seeds of a batch's rows: `seed`, `seed + 1`, …, kept within what torch takes (2**64 wraps to 0)."""
    low, high = SEED_RANGE
    return [(seed + i - low) % (high - low + 1) + low for i in range(n)]


def sample(processed: torch.Tensor, params: SamplingParams, generator=None) -> torch.Tensor:
    """Choose the next token from processed logits [B, V] → ids [B].
    Greedy (temperature 0): the most likely token. Otherwise one draw from softmax(processed): from one
    `generator`, or row i from generator[i] when a list is given (a batch with a random seed, see `row_seeds`)."""
    inputs.rule("sample", processed)
    inputs.sampling_params("sample", params)
    processed = choosable(processed)
    if params.greedy:
        return processed.argmax(dim=-1)
    probs = processed.softmax(dim=-1)  # [B, V]; removed tokens have probability 0
    if isinstance(generator, (list, tuple)):
        return torch.cat([torch.multinomial(p[None], 1, generator=g)[:, 0] for p, g in zip(probs, generator,
                                                                                             strict=True)])
    return torch.multinomial(probs, num_samples=1, generator=generator)[:, 0]


def top_logprobs(logits: torch.Tensor, n: int, chosen: torch.Tensor) -> list[dict[int, float]]:
    """Per row: the n most likely tokens' log-probabilities under the model's raw distribution,
    plus the chosen token's (vLLM's default: log-probabilities before any processing)."""
    inputs.rule("top_logprobs", logits, n=n)
    logp = torch.log_softmax(choosable(logits.float()), dim=-1)  # [B, V]
    out = []
    for row, c in zip(logp, chosen.tolist(), strict=True):
        best = torch.topk(row, n) if n > 0 else None
        entry = {} if best is None else {int(i): float(v) for v, i in zip(best.values, best.indices, strict=True)}
        entry[int(c)] = float(row[c])
        out.append(entry)
    return out
