"""SamplingParams: what one request asks of the sampler, each field checked as it is set.

The fields and their defaults follow vLLM's SamplingParams (temperature 1 samples; 0 is greedy decoding), with
transformers' beam search beside them. A field is checked when it is set, in the constructor and after it
(`params.max_tokens = 0` raises and leaves `params` as it was), so a SamplingParams that exists is a valid one:
the sampling rules and the generation loop take its fields as they are. What depends on the model (stop ids
within its vocabulary, prompt plus max_tokens within its context window) is checked at the edge
(`inputs.request`), where the model is known.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from dataclasses import field as dataclass_field

import numpy as np

from .units import is_id


class TemplatedError(ValueError):
    """A refusal whose message is kept as its template and fields too, so that a notebook can print it in its
    reader's language: viz.tr(error.template, **error.fields)."""

    def __init__(self, template: str, **fields):
        super().__init__(template.format(**fields))
        self.template, self.fields = template, fields


GREEDY_BELOW = 1e-5  # a temperature below this means greedy decoding (vLLM's rule); 0 is not a real temperature
SEED_RANGE = (-(2**63), 2**64 - 1)  # what torch.Generator.manual_seed takes


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
    stop: list[str] = dataclass_field(default_factory=list)  # stop when the output text contains one of these
    stop_token_ids: list[int] = dataclass_field(default_factory=list)  # stop when one of these ids is generated
    ignore_eos: bool = False  # keep going past the end-of-sequence token
    include_stop_str_in_output: bool = False  # keep the stop string at the end of the text
    seed: int | None = None  # random seed of the draws (row i of a batch: seed + i); None = torch's global one
    logprobs: int | None = None  # return the top-N log-probabilities at each step
    num_beams: int = 1  # >1: deterministic beam search with this many beams
    length_penalty: float = 1.0  # beam search: a finished beam scores sum(logprobs) / length ** length_penalty

    def __post_init__(self):
        fields_together(self)  # each field was checked as it was set (below)

    def __setattr__(self, name, value):
        """Every field is checked as it is set, in the constructor and after it: `params.max_tokens = 0`
        raises, and leaves `params` as it was."""
        if name not in FIELDS:
            return object.__setattr__(self, name, value)
        old = self.__dict__.get(name)
        object.__setattr__(self, name, field(name, value))
        if all(f in self.__dict__ for f in FIELDS):  # constructed: the rules between fields hold too
            try:
                fields_together(self)
            except ValueError:
                object.__setattr__(self, name, old)
                raise

    def replace(self, **changes) -> SamplingParams:
        """A copy with some fields changed, checked like a new SamplingParams: params.replace(seed=1)."""
        unknown = sorted(set(changes) - set(FIELDS))
        if unknown:
            raise ValueError(f"SamplingParams has no field {', '.join(unknown)}; the fields are "
                             f"{', '.join(FIELDS)}")
        return dataclasses.replace(self, **changes)

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    @property
    def top_k_enabled(self) -> bool:
        return self.top_k > 0


# ---- each field's check ----------------------------------------------------------------------------------
def _number(name, value, low, high, allowed, low_open=False) -> float:
    """A finite real number (int, float or numpy scalar; not a bool) in range, returned as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"SamplingParams.{name}={value!r} must be a number {allowed}")
    value = float(value)
    too_low = low is not None and (value <= low if low_open else value < low)
    if too_low or (high is not None and value > high) or not math.isfinite(value):
        raise ValueError(f"SamplingParams.{name}={value!r} is out of range: must be {allowed}")
    return value


def _integer(name, value, low, allowed, high=None) -> int:
    """An integer (int or numpy integer; not a bool) in range, returned as an int."""
    if not is_id(value) or (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"SamplingParams.{name}={value!r} is out of range: must be {allowed}")
    return int(value)


def _flag(name, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"SamplingParams.{name}={value!r} must be True or False")
    return bool(value)


def _stop_strings(value) -> list[str]:
    value = [value] if isinstance(value, str) else value
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


FIELDS = {  # field → function that returns the checked (normalised) value or raises ValueError
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


def field(name: str, value):
    """One field of SamplingParams, checked and normalised (a numpy integer becomes an int, a string in
    `stop` a list of one)."""
    return FIELDS[name](value)


def fields_together(p) -> None:
    """The rules that tie two fields of SamplingParams together."""
    if p.min_tokens > p.max_tokens:
        raise ValueError(f"SamplingParams.min_tokens={p.min_tokens} is larger than max_tokens="
                         f"{p.max_tokens}; min_tokens must be ≤ max_tokens")
    if p.num_beams > 1:
        taken = [f"{name}={value!r}" for name, value, off in (
            ("top_k", p.top_k, p.top_k in (0, -1)), ("top_p", p.top_p, p.top_p == 1.0),
            ("min_p", p.min_p, p.min_p == 0.0), ("stop", p.stop, not p.stop),
            ("logprobs", p.logprobs, p.logprobs is None), ("seed", p.seed, p.seed is None),
            ("temperature", p.temperature, p.temperature in (0.0, 1.0))) if not off]
        if taken:
            raise TemplatedError("SamplingParams: beam search (num_beams={n}) is deterministic and does not take "
                                 "{taken}; leave them at their defaults (temperature 0 or 1)", n=p.num_beams,
                                 taken=", ".join(taken))
