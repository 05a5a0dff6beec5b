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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

GREEDY_BELOW = 1e-5  # a temperature below this means greedy decoding (vLLM's rule); 0 is not a real temperature


@dataclass
class SamplingParams:
    temperature: float = 1.0  # divide logits by this before sampling; 0 = greedy. The default samples (as vLLM)
    top_k: int = 0  # keep only the k most likely tokens; 0 or -1 = off
    top_p: float = 1.0  # keep the smallest set of tokens whose probability reaches p (nucleus); 1 = off
    min_p: float = 0.0  # drop tokens less likely than min_p × the top token's probability; 0 = off
    repetition_penalty: float = 1.0  # >1 discourages every token already seen (prompt included); 1 = off
    presence_penalty: float = 0.0  # subtract this from tokens that appeared in the output at all
    frequency_penalty: float = 0.0  # subtract this × count for tokens that appeared in the output
    no_repeat_ngram_size: int = 0  # forbid any n-gram of this size from appearing twice; 0 = off
    max_tokens: int = 16  # generate at most this many tokens (finish reason "length")
    min_tokens: int = 0  # do not stop (EOS, stop ids, stop strings) before this many tokens
    stop: list[str] = field(default_factory=list)  # stop when the output text contains one of these
    stop_token_ids: list[int] = field(default_factory=list)  # stop when one of these ids is generated
    ignore_eos: bool = False  # keep going past the end-of-sequence token
    include_stop_str_in_output: bool = False  # keep the stop string at the end of the text
    seed: int | None = None  # seed for this request's random draws; None = torch's global generator
    logprobs: int | None = None  # return the top-N log-probabilities at each step
    num_beams: int = 1  # >1: deterministic beam search with this many beams
    length_penalty: float = 1.0  # beam search: a finished beam scores sum(logprobs) / length ** length_penalty

    def __post_init__(self):
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        self.stop = list(self.stop)
        self.stop_token_ids = list(self.stop_token_ids)
        _check_number("temperature", self.temperature, 0, None, "≥ 0 (0 = greedy)")
        _check_int("top_k", self.top_k, -1, "-1 or 0 (off), or ≥ 1")
        _check_number("top_p", self.top_p, 0, 1, "in (0, 1]", low_open=True)
        _check_number("min_p", self.min_p, 0, 1, "in [0, 1]")
        _check_number("repetition_penalty", self.repetition_penalty, 0, None, "> 0 (1 = off)", low_open=True)
        _check_number("presence_penalty", self.presence_penalty, -2, 2, "in [-2, 2]")
        _check_number("frequency_penalty", self.frequency_penalty, -2, 2, "in [-2, 2]")
        _check_int("no_repeat_ngram_size", self.no_repeat_ngram_size, 0, "≥ 0 (0 = off)")
        _check_int("max_tokens", self.max_tokens, 1, "≥ 1")
        _check_int("min_tokens", self.min_tokens, 0, "≥ 0")
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"SamplingParams.min_tokens={self.min_tokens} is larger than max_tokens="
                             f"{self.max_tokens}; min_tokens must be ≤ max_tokens")
        for s in self.stop:
            if not isinstance(s, str) or not s:
                raise ValueError(f"SamplingParams.stop must hold non-empty strings, got {s!r}")
        for i in self.stop_token_ids:
            _check_int("stop_token_ids", i, 0, "token ids ≥ 0")
        if self.seed is not None:
            _check_int("seed", self.seed, None, "an integer or None")
        if self.logprobs is not None:
            _check_int("logprobs", self.logprobs, 0, "None or ≥ 0")
        _check_int("num_beams", self.num_beams, 1, "≥ 1")
        _check_number("length_penalty", self.length_penalty, None, None, "a number")
        if self.num_beams > 1:
            sampling = [name for name, off in (("top_k", self.top_k in (0, -1)), ("top_p", self.top_p == 1.0),
                                               ("min_p", self.min_p == 0.0), ("stop", not self.stop),
                                               ("logprobs", self.logprobs is None)) if not off]
            if sampling:
                raise ValueError(f"SamplingParams: beam search (num_beams={self.num_beams}) is deterministic and "
                                 f"does not take {', '.join(sampling)}; leave them at their defaults")

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    @property
    def top_k_enabled(self) -> bool:
        return self.top_k > 0


def _check_number(name, value, low, high, allowed, low_open=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"SamplingParams.{name}={value!r} must be a number {allowed}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and value > high
    if too_low or too_high or value != value:  # value != value catches NaN
        raise ValueError(f"SamplingParams.{name}={value!r} is out of range: must be {allowed}")


def _check_int(name, value, low, allowed):
    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):
        raise ValueError(f"SamplingParams.{name}={value!r} is out of range: must be {allowed}")


# ---- helpers: every rule works on [V] and on [B, V] --------------------------------------------
def _as_rows(logits: torch.Tensor) -> torch.Tensor:
    return logits if logits.dim() == 2 else logits[None]


def _rows_of_ids(ids, batch: int) -> list[list[int]]:
    """Token histories as one list per row: a flat list (or 1-D tensor) is one row's history."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    ids = list(ids)
    if ids and isinstance(ids[0], (list, tuple)):
        rows = [list(r) for r in ids]
    else:
        rows = [ids]
    if len(rows) != batch:
        raise ValueError(f"{len(rows)} token histories given for {batch} rows of logits")
    return rows


# ---- filters (only when sampling) --------------------------------------------------------------
def apply_temperature(logits: torch.Tensor, t: float) -> torch.Tensor:
    """logits / t.  t < 1 sharpens the distribution, t > 1 flattens it; t must be > 0
    (t = 0 is not a temperature: engines treat it as greedy, see `sample`)."""
    if t <= 0:
        raise ValueError(f"temperature must be > 0 here, got {t}; temperature 0 means greedy (use sample())")
    return logits / t


def apply_top_k(logits: torch.Tensor, k: int, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Keep logit_i if logit_i ≥ the k-th largest logit (ties at the boundary all survive), else -inf.
    k is raised to min_tokens_to_keep; k ≤ 0 disables."""
    if k <= 0:
        return logits
    k = min(max(k, min_tokens_to_keep), logits.shape[-1])
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # [..., 1]
    return logits.masked_fill(logits < kth_largest, float("-inf"))


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
def apply_repetition_penalty(logits: torch.Tensor, seen_ids, r: float) -> torch.Tensor:
    """CTRL's repetition penalty (as transformers): for every distinct token already in the sequence,
    logit / r if the logit is > 0, else logit · r. r > 1 discourages repeats; r = 1 is off."""
    if r == 1.0:
        return logits
    out = _as_rows(logits).clone()
    for row, seen in zip(out, _rows_of_ids(seen_ids, out.shape[0]), strict=True):
        if seen:
            idx = torch.tensor(sorted(set(seen)), device=row.device)
            picked = row[idx]
            row[idx] = torch.where(picked > 0, picked / r, picked * r)
    return out.view_as(logits)


def apply_presence_frequency_penalty(logits: torch.Tensor, output_ids, presence: float,
                                     frequency: float) -> torch.Tensor:
    """OpenAI's penalties, on the generated tokens only (not the prompt):
    logit_j − c_j · frequency − (c_j > 0) · presence, where c_j counts token j in the output."""
    if presence == 0 and frequency == 0:
        return logits
    out = _as_rows(logits).clone()
    for row, ids in zip(out, _rows_of_ids(output_ids, out.shape[0]), strict=True):
        if ids:
            counts = torch.bincount(torch.tensor(ids, device=row.device), minlength=row.shape[0]).to(row.dtype)
            row -= counts * frequency + (counts > 0).to(row.dtype) * presence
    return out.view_as(logits)


def banned_ngram_tokens(ids: list[int], n: int) -> set[int]:
    """Tokens that would complete an n-gram already in `ids`: for every earlier n-gram whose first n−1
    tokens equal the last n−1 tokens of `ids`, its n-th token."""
    if n <= 0 or len(ids) < n:
        return set()
    suffix = tuple(ids[len(ids) - n + 1:])
    return {ids[i + n - 1] for i in range(len(ids) - n + 1) if tuple(ids[i:i + n - 1]) == suffix}


def apply_no_repeat_ngram(logits: torch.Tensor, ids, n: int) -> torch.Tensor:
    """No n-gram of size n may appear twice (prompt included): the tokens that would complete one get -inf.
    Nothing is banned while the sequence is shorter than n; n = 0 is off."""
    if n <= 0:
        return logits
    out = _as_rows(logits).clone()
    for row, history in zip(out, _rows_of_ids(ids, out.shape[0]), strict=True):
        banned = banned_ngram_tokens(history, n)
        if banned:
            row[torch.tensor(sorted(banned), device=row.device)] = float("-inf")
    return out.view_as(logits)


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
    rows = _as_rows(logits).float()
    B = rows.shape[0]
    prompts, outputs = _rows_of_ids(prompt_ids, B), _rows_of_ids(output_ids, B)
    histories = [p + o for p, o in zip(prompts, outputs, strict=True)]
    rows = apply_repetition_penalty(rows, histories, params.repetition_penalty)
    rows = apply_presence_frequency_penalty(rows, outputs, params.presence_penalty, params.frequency_penalty)
    rows = apply_no_repeat_ngram(rows, histories, params.no_repeat_ngram_size)
    stop_ids = list(params.stop_token_ids) + ([] if params.ignore_eos else list(eos_token_ids))
    if params.min_tokens > 0:
        rows = torch.stack([apply_min_tokens(r, len(o), params.min_tokens, stop_ids)
                            for r, o in zip(rows, outputs, strict=True)])
    return rows.view(logits.shape)


def process_logits(logits: torch.Tensor, params: SamplingParams, prompt_ids, output_ids,
                   eos_token_ids=()) -> torch.Tensor:
    """Apply every rule `params` switches on, in the order of the module docstring.

    logits: [V] or [B, V]. prompt_ids, output_ids: one list of ids (for [V]) or one list per row.
    eos_token_ids: the model's end-of-sequence ids (masked by min_tokens unless ignore_eos).
    Returns float32 logits of the same shape; with temperature 0 only the penalties are applied.
    """
    out = apply_penalties(logits, params, prompt_ids, output_ids, eos_token_ids)
    if not params.greedy:
        out = apply_temperature(out, params.temperature)
        out = apply_top_k(out, params.top_k)
        out = apply_top_p(out, params.top_p)
        out = apply_min_p(out, params.min_p)
    return out


def sample(processed: torch.Tensor, params: SamplingParams, generator: torch.Generator | None = None):
    """Choose the next token from processed logits [B, V] → ids [B].
    Greedy (temperature 0): the most likely token. Otherwise one draw from softmax(processed)."""
    if params.greedy:
        return processed.argmax(dim=-1)
    probs = processed.softmax(dim=-1)  # [B, V]; removed tokens have probability 0
    return torch.multinomial(probs, num_samples=1, generator=generator)[:, 0]


def top_logprobs(logits: torch.Tensor, n: int, chosen: torch.Tensor) -> list[dict[int, float]]:
    """Per row: the n most likely tokens' log-probabilities under the model's raw distribution,
    plus the chosen token's (vLLM's default: log-probabilities before any processing)."""
    logp = torch.log_softmax(logits.float(), dim=-1)  # [B, V]
    out = []
    for row, c in zip(logp, chosen.tolist(), strict=True):
        best = torch.topk(row, n) if n > 0 else None
        entry = {} if best is None else {int(i): float(v) for v, i in zip(best.values, best.indices, strict=True)}
        entry[int(c)] = float(row[c])
        out.append(entry)
    return out
