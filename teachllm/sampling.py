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
Each rule checks what it is called with in one line (`inputs.rule`); SamplingParams checks its fields as
they are set (`inputs.field`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from . import inputs

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
    seed: int | None = None  # random seed of the draws (row i of a batch: seed + i); None = torch's global one
    logprobs: int | None = None  # return the top-N log-probabilities at each step
    num_beams: int = 1  # >1: deterministic beam search with this many beams
    length_penalty: float = 1.0  # beam search: a finished beam scores sum(logprobs) / length ** length_penalty

    def __post_init__(self):
        inputs.fields_together(self)  # each field was checked as it was set (below)

    def __setattr__(self, name, value):
        """Every field is checked as it is set, in the constructor and after it: `params.max_tokens = 0`
        raises, and leaves `params` as it was."""
        if name not in inputs.FIELDS:
            return object.__setattr__(self, name, value)
        old = self.__dict__.get(name)
        object.__setattr__(self, name, inputs.field(name, value))
        if all(f in self.__dict__ for f in inputs.FIELDS):  # constructed: the rules between fields hold too
            try:
                inputs.fields_together(self)
            except ValueError:
                object.__setattr__(self, name, old)
                raise

    def replace(self, **changes) -> SamplingParams:
        """A copy with some fields changed, checked like a new SamplingParams: params.replace(seed=1)."""
        unknown = sorted(set(changes) - set(inputs.FIELDS))
        if unknown:
            raise ValueError(f"SamplingParams has no field {', '.join(unknown)}; the fields are "
                             f"{', '.join(inputs.FIELDS)}")
        return dataclasses.replace(self, **changes)

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    @property
    def top_k_enabled(self) -> bool:
        return self.top_k > 0


# ---- logits that are not finite numbers ------------------------------------------------------------------
def settle(logits: torch.Tensor) -> torch.Tensor:
    """The policy for logits that are not finite, shared by every rule and by greedy decoding:
    - NaN is an error naming the row: a model that computed one is broken, and no probability follows from it;
    - +inf means "this token is certain": the row becomes 0 at each +inf and -inf elsewhere, so every rule
      keeps exactly those tokens and softmax shares the probability among them equally;
    - -inf is a token already ruled out, the way every rule removes one."""
    nan = logits.isnan()
    if bool(nan.any()):
        row, token = nan.reshape(-1, logits.shape[-1]).nonzero()[0].tolist()
        raise ValueError(f"logits row {row} holds NaN (token {token}, and maybe others): the model's output is "
                         "broken, and no token can be chosen from it")
    certain = logits.isposinf()
    if not bool(certain.any()):
        return logits
    settled = torch.zeros_like(logits).masked_fill(~certain, float("-inf"))
    return torch.where(certain.any(-1, keepdim=True), settled, logits)


def _checked(func: str, logits: torch.Tensor, **arguments) -> torch.Tensor:
    """What every rule does first: check its arguments (`inputs.rule`), then settle non-finite logits."""
    inputs.rule(func, logits, **arguments)
    return settle(logits)


def _rows(logits: torch.Tensor) -> torch.Tensor:
    return logits if logits.dim() == 2 else logits[None]  # [B, V]


# ---- filters (only when sampling) --------------------------------------------------------------
def apply_temperature(logits: torch.Tensor, t: float) -> torch.Tensor:
    """logits / t.  t < 1 sharpens the distribution, t > 1 flattens it; t must be > 0
    (t = 0 is not a temperature: engines treat it as greedy, see `sample`)."""
    logits = _checked("apply_temperature", logits, t=t)
    return logits / t


def apply_top_k(logits: torch.Tensor, k: int, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Keep logit_i if logit_i ≥ the k-th largest logit (ties at the boundary all survive), else -inf.
    k is raised to min_tokens_to_keep; k ≤ 0 disables."""
    logits = _checked("apply_top_k", logits, k=k, min_tokens_to_keep=min_tokens_to_keep)
    if k <= 0:
        return logits
    k = min(max(k, min_tokens_to_keep), logits.shape[-1])
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # [..., 1]
    return logits.masked_fill(logits < kth_largest, float("-inf"))


def apply_top_p(logits: torch.Tensor, p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Nucleus filtering. Sort ascending, take softmax and the cumulative sum c; remove the tokens with
    c ≤ 1 − p, but always keep the `min_tokens_to_keep` most likely. The token whose probability
    crosses the threshold is kept: with [.4, .3, .15, .10, .05] and p = 0.9, four tokens survive."""
    logits = _checked("apply_top_p", logits, p=p, min_tokens_to_keep=min_tokens_to_keep)
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
    logits = _checked("apply_min_p", logits, p=p, min_tokens_to_keep=min_tokens_to_keep)
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


def apply_repetition_penalty(logits: torch.Tensor, seen_ids, r: float) -> torch.Tensor:
    """CTRL's repetition penalty (as transformers): for every distinct token already in the sequence,
    logit / r if the logit is > 0, else logit · r. r > 1 discourages repeats; r = 1 is off."""
    logits = _checked("apply_repetition_penalty", logits, r=r)
    if r == 1.0:
        return logits
    rows = _rows(logits)  # [B, V]
    seen = token_counts(inputs.histories(seen_ids, rows.shape[0], rows.shape[-1]), rows) > 0  # [B, V]
    penalised = torch.where(rows > 0, rows / r, rows * r)  # [B, V]
    return torch.where(seen, penalised, rows).view_as(logits)


def apply_presence_frequency_penalty(logits: torch.Tensor, output_ids, presence: float,
                                     frequency: float) -> torch.Tensor:
    """OpenAI's penalties, on the generated tokens only (not the prompt):
    logit_j − c_j · frequency − (c_j > 0) · presence, where c_j counts token j in the output."""
    logits = _checked("apply_presence_frequency_penalty", logits, presence=presence, frequency=frequency)
    if presence == 0 and frequency == 0:
        return logits
    rows = _rows(logits)  # [B, V]
    counts = token_counts(inputs.histories(output_ids, rows.shape[0], rows.shape[-1]), rows)  # [B, V]
    return (rows - (counts * frequency + (counts > 0).to(rows.dtype) * presence)).view_as(logits)


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
    logits = _checked("apply_no_repeat_ngram", logits, n=n)
    if n <= 0:
        return logits
    rows = _rows(logits)  # [B, V]
    banned = [sorted(banned_ngram_tokens(h, n)) for h in inputs.histories(ids, rows.shape[0], rows.shape[-1])]
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
    rows = _rows(logits).float()  # [B, V]
    B, V = rows.shape
    inputs.for_vocabulary(params, V)
    prompts, outputs = inputs.histories(prompt_ids, B, V), inputs.histories(output_ids, B, V)
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


def choosable(processed: torch.Tensor) -> torch.Tensor:
    """Settled logits [B, V] that leave each row at least one token; a row the rules emptied is an error."""
    processed = settle(_rows(processed))
    empty = ~(processed > float("-inf")).any(dim=-1)  # [B]
    if bool(empty.any()):
        raise ValueError(f"logits row {int(empty.nonzero()[0])}: every token is ruled out (all logits are -inf), "
                         "so none can be chosen; the penalties and filters removed them all")
    return processed


def row_seeds(seed: int, n: int) -> list[int]:
    """The random seeds of a batch's rows: `seed`, `seed + 1`, …, kept within what torch takes (2**64 wraps to 0)."""
    low, high = inputs.SEED_RANGE
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
