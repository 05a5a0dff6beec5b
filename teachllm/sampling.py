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

import dataclasses
import math
import numbers
from dataclasses import dataclass, field

import numpy as np
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
        _check_together(self)  # each field was checked as it was set (below)

    def __setattr__(self, name, value):
        """Every field is checked as it is set, in the constructor and after it: `params.max_tokens = 0`
        raises, and leaves `params` as it was."""
        if name not in _CHECKS:
            return object.__setattr__(self, name, value)
        old = self.__dict__.get(name, _UNSET)
        object.__setattr__(self, name, _checked(name, value))
        if all(field in self.__dict__ for field in _CHECKS):  # constructed: the rules between fields hold too
            try:
                _check_together(self)
            except ValueError:
                object.__setattr__(self, name, old)
                raise

    def replace(self, **changes) -> SamplingParams:
        """A copy with some fields changed, checked like a new SamplingParams: params.replace(seed=1)."""
        unknown = sorted(set(changes) - set(_CHECKS))
        if unknown:
            raise ValueError(f"SamplingParams has no field {', '.join(unknown)}; the fields are {', '.join(_CHECKS)}")
        return dataclasses.replace(self, **changes)

    def check_for_model(self, vocab_size: int) -> None:
        """The limits that depend on the model: logprobs and stop_token_ids within its vocabulary."""
        if self.logprobs is not None and self.logprobs > vocab_size:
            raise ValueError(f"SamplingParams.logprobs={self.logprobs} is larger than the model's vocabulary of "
                             f"{vocab_size} tokens; must be None or 0 .. {vocab_size}")
        for i in self.stop_token_ids:
            if i >= vocab_size:
                raise ValueError(f"SamplingParams.stop_token_ids holds {i}, outside the model's vocabulary; "
                                 f"token ids must be in 0 .. {vocab_size - 1}")

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    @property
    def top_k_enabled(self) -> bool:
        return self.top_k > 0


# ---- checking the fields: each field's rule in one table ----------------------------------------
def _number(name, value, low, high, allowed, low_open=False, finite=True) -> float:
    """A real number (int, float or numpy scalar; not a bool) in range, returned as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"SamplingParams.{name}={value!r} must be a number {allowed}")
    value = float(value)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and value > high
    if too_low or too_high or math.isnan(value) or (finite and math.isinf(value)):
        raise ValueError(f"SamplingParams.{name}={value!r} is out of range: must be {allowed}")
    return value


def _integer(name, value, low, allowed, high=None) -> int:
    """An integer (int or numpy integer; not a bool) in range, returned as an int."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral)
            or (low is not None and value < low) or (high is not None and value > high)):
        raise ValueError(f"SamplingParams.{name}={value!r} is out of range: must be {allowed}")
    return int(value)


def _flag(name, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"SamplingParams.{name}={value!r} must be True or False")
    return bool(value)


def _stop_strings(value) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"SamplingParams.stop={value!r} must be a string or a list of non-empty strings")
    for s in value:
        if not isinstance(s, str) or not s:
            raise ValueError(f"SamplingParams.stop must hold non-empty strings, got {s!r}")
    return list(value)


def _stop_ids(value) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, range)):
        raise ValueError(f"SamplingParams.stop_token_ids={value!r} must be a list of token ids ≥ 0")
    return [_integer("stop_token_ids", i, 0, "token ids ≥ 0") for i in value]


def _optional(check):
    return lambda value: None if value is None else check(value)


SEED_RANGE = (-(2**63), 2**64 - 1)  # what torch.Generator.manual_seed takes

_CHECKS = {  # field → function that returns the checked (normalised) value or raises ValueError
    "temperature": lambda v: _number("temperature", v, 0, None, "≥ 0 (0 = greedy)"),
    "top_k": lambda v: _integer("top_k", v, -1, "-1 or 0 (off), or ≥ 1"),
    "top_p": lambda v: _number("top_p", v, 0, 1, "in (0, 1]", low_open=True),
    "min_p": lambda v: _number("min_p", v, 0, 1, "in [0, 1]"),
    "repetition_penalty": lambda v: _number("repetition_penalty", v, 0, None, "> 0 (1 = off)", low_open=True),
    "presence_penalty": lambda v: _number("presence_penalty", v, -2, 2, "in [-2, 2]"),
    "frequency_penalty": lambda v: _number("frequency_penalty", v, -2, 2, "in [-2, 2]"),
    "no_repeat_ngram_size": lambda v: _integer("no_repeat_ngram_size", v, 0, "≥ 0 (0 = off)"),
    "max_tokens": lambda v: _integer("max_tokens", v, 1, "≥ 1"),
    "min_tokens": lambda v: _integer("min_tokens", v, 0, "≥ 0"),
    "stop": _stop_strings,
    "stop_token_ids": _stop_ids,
    "ignore_eos": lambda v: _flag("ignore_eos", v),
    "include_stop_str_in_output": lambda v: _flag("include_stop_str_in_output", v),
    "seed": _optional(lambda v: _integer("seed", v, SEED_RANGE[0], "None or an integer in -2**63 .. 2**64 - 1",
                                         high=SEED_RANGE[1])),
    "logprobs": _optional(lambda v: _integer("logprobs", v, 0, "None or ≥ 0")),
    "num_beams": lambda v: _integer("num_beams", v, 1, "≥ 1"),
    "length_penalty": lambda v: _number("length_penalty", v, None, None, "a finite number"),
}


_UNSET = object()


def _checked(name, value):
    return _CHECKS[name](value)


def _check_together(p: SamplingParams) -> None:
    """The rules that tie two fields together."""
    if p.min_tokens > p.max_tokens:
        raise ValueError(f"SamplingParams.min_tokens={p.min_tokens} is larger than max_tokens="
                         f"{p.max_tokens}; min_tokens must be ≤ max_tokens")
    if p.num_beams > 1:
        sampling = [name for name, off in (("top_k", p.top_k in (0, -1)), ("top_p", p.top_p == 1.0),
                                           ("min_p", p.min_p == 0.0), ("stop", not p.stop),
                                           ("logprobs", p.logprobs is None),
                                           ("temperature", p.temperature in (0.0, 1.0))) if not off]
        if sampling:
            raise ValueError(f"SamplingParams: beam search (num_beams={p.num_beams}) is deterministic and "
                             f"does not take {', '.join(sampling)}; leave them at their defaults"
                             + (" (temperature 0 or 1)" if "temperature" in sampling else ""))


# ---- helpers: every rule works on [V] and on [B, V] --------------------------------------------
def _as_rows(logits: torch.Tensor) -> torch.Tensor:
    return logits if logits.dim() == 2 else logits[None]


def _check_logits(func: str, logits) -> None:
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() not in (1, 2):
        what = (f"a {logits.dtype} tensor of shape {tuple(logits.shape)}" if isinstance(logits, torch.Tensor)
                else type(logits).__name__)
        raise TypeError(f"{func}: logits must be a floating-point tensor of shape [V] or [B, V], got {what}")


def _check_params(func: str, params) -> None:
    if not isinstance(params, SamplingParams):
        what = "the class SamplingParams itself" if params is SamplingParams else repr(params)[:60]
        raise TypeError(f"{func}: params must be a SamplingParams instance, e.g. SamplingParams(temperature=0), "
                        f"got {what}")


def _check_arg(func: str, name: str, value, allowed: str, low=None, high=None, low_open=False,
               integer=False) -> None:
    """Raise a ValueError naming the function, the argument, its value and what is allowed."""
    kind = numbers.Integral if integer else numbers.Real
    ok = isinstance(value, kind) and not isinstance(value, (bool, np.bool_))
    if ok:
        v = float(value)
        ok = math.isfinite(v)
        ok = ok and (low is None or (v > low if low_open else v >= low)) and (high is None or v <= high)
    if not ok:
        raise ValueError(f"{func}: {name}={value!r} is not allowed; must be {allowed}")


def _rows_of_ids(ids, batch: int, vocab: int) -> list[list[int]]:
    """Token histories as one list per row: a flat list (or 1-D tensor) is one row's history."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)):
        raise ValueError(f"token histories must be a list of ids or one list per row, got {type(ids).__name__}")
    ids = list(ids)
    if ids and isinstance(ids[0], (list, tuple)):
        rows = [list(r) for r in ids]
    else:
        rows = [ids]
    if len(rows) != batch:
        raise ValueError(f"{len(rows)} token histories given for {batch} rows of logits")
    for row in rows:
        if all(type(i) is int for i in row) and (not row or 0 <= min(row) and max(row) < vocab):
            continue  # the usual case, checked quickly
        for i in row:
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, numbers.Integral) or not 0 <= i < vocab:
                raise ValueError(f"token histories must hold token ids in 0 .. {vocab - 1}, got {i!r}")
    return rows


# ---- filters (only when sampling) --------------------------------------------------------------
def apply_temperature(logits: torch.Tensor, t: float) -> torch.Tensor:
    """logits / t.  t < 1 sharpens the distribution, t > 1 flattens it; t must be > 0
    (t = 0 is not a temperature: engines treat it as greedy, see `sample`)."""
    _check_logits("apply_temperature", logits)
    if isinstance(t, numbers.Real) and not isinstance(t, (bool, np.bool_)) and t <= 0:
        raise ValueError(f"temperature must be > 0 here, got {t}; temperature 0 means greedy (use sample())")
    _check_arg("apply_temperature", "t", t, "a finite number > 0", low=0, low_open=True)
    return logits / t


def apply_top_k(logits: torch.Tensor, k: int, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Keep logit_i if logit_i ≥ the k-th largest logit (ties at the boundary all survive), else -inf.
    k is raised to min_tokens_to_keep; k ≤ 0 disables."""
    _check_logits("apply_top_k", logits)
    _check_arg("apply_top_k", "k", k, "an integer (≤ 0 = off)", integer=True)
    _check_arg("apply_top_k", "min_tokens_to_keep", min_tokens_to_keep, "an integer ≥ 1", low=1, integer=True)
    if k <= 0:
        return logits
    k = min(max(k, min_tokens_to_keep), logits.shape[-1])
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # [..., 1]
    return logits.masked_fill(logits < kth_largest, float("-inf"))


def apply_top_p(logits: torch.Tensor, p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Nucleus filtering. Sort ascending, take softmax and the cumulative sum c; remove the tokens with
    c ≤ 1 − p, but always keep the `min_tokens_to_keep` most likely. The token whose probability
    crosses the threshold is kept: with [.4, .3, .15, .10, .05] and p = 0.9, four tokens survive."""
    _check_logits("apply_top_p", logits)
    _check_arg("apply_top_p", "p", p, "in (0, 1] (1 = off)", low=0, high=1, low_open=True)
    _check_arg("apply_top_p", "min_tokens_to_keep", min_tokens_to_keep, "an integer ≥ 1", low=1, integer=True)
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
    _check_logits("apply_min_p", logits)
    _check_arg("apply_min_p", "p", p, "in [0, 1] (0 = off)", low=0, high=1)
    _check_arg("apply_min_p", "min_tokens_to_keep", min_tokens_to_keep, "an integer ≥ 1", low=1, integer=True)
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
    _check_logits("apply_repetition_penalty", logits)
    _check_arg("apply_repetition_penalty", "r", r, "a finite number > 0 (1 = off)", low=0, low_open=True)
    if r == 1.0:
        return logits
    out = _as_rows(logits).clone()
    for row, seen in zip(out, _rows_of_ids(seen_ids, out.shape[0], out.shape[-1]), strict=True):
        if seen:
            idx = torch.tensor(sorted(set(seen)), device=row.device)
            picked = row[idx]
            row[idx] = torch.where(picked > 0, picked / r, picked * r)
    return out.view_as(logits)


def apply_presence_frequency_penalty(logits: torch.Tensor, output_ids, presence: float,
                                     frequency: float) -> torch.Tensor:
    """OpenAI's penalties, on the generated tokens only (not the prompt):
    logit_j − c_j · frequency − (c_j > 0) · presence, where c_j counts token j in the output."""
    _check_logits("apply_presence_frequency_penalty", logits)
    _check_arg("apply_presence_frequency_penalty", "presence", presence, "a finite number")
    _check_arg("apply_presence_frequency_penalty", "frequency", frequency, "a finite number")
    if presence == 0 and frequency == 0:
        return logits
    out = _as_rows(logits).clone()
    for row, ids in zip(out, _rows_of_ids(output_ids, out.shape[0], out.shape[-1]), strict=True):
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
    _check_logits("apply_no_repeat_ngram", logits)
    _check_arg("apply_no_repeat_ngram", "n", n, "an integer ≥ 0 (0 = off)", low=0, integer=True)
    if n <= 0:
        return logits
    out = _as_rows(logits).clone()
    for row, history in zip(out, _rows_of_ids(ids, out.shape[0], out.shape[-1]), strict=True):
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
    _check_logits("apply_penalties", logits)
    _check_params("apply_penalties", params)
    rows = _as_rows(logits).float()
    B = rows.shape[0]
    V = rows.shape[-1]
    params.check_for_model(V)
    prompts, outputs = _rows_of_ids(prompt_ids, B, V), _rows_of_ids(output_ids, B, V)
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
    _check_logits("sample", processed)
    _check_params("sample", params)
    if params.greedy:
        return processed.argmax(dim=-1)
    probs = processed.softmax(dim=-1)  # [B, V]; removed tokens have probability 0
    return torch.multinomial(probs, num_samples=1, generator=generator)[:, 0]


def top_logprobs(logits: torch.Tensor, n: int, chosen: torch.Tensor) -> list[dict[int, float]]:
    """Per row: the n most likely tokens' log-probabilities under the model's raw distribution,
    plus the chosen token's (vLLM's default: log-probabilities before any processing)."""
    _check_logits("top_logprobs", logits)
    _check_arg("top_logprobs", "n", n, f"an integer in 0 .. {logits.shape[-1]} (the vocabulary)", low=0,
               high=logits.shape[-1], integer=True)
    logp = torch.log_softmax(logits.float(), dim=-1)  # [B, V]
    out = []
    for row, c in zip(logp, chosen.tolist(), strict=True):
        best = torch.topk(row, n) if n > 0 else None
        entry = {} if best is None else {int(i): float(v) for v, i in zip(best.values, best.indices, strict=True)}
        entry[int(c)] = float(row[c])
        out.append(entry)
    return out
