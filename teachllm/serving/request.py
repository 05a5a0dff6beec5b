"""Request: one user's prompt as it moves through the serving engine.

    WAITING ──(scheduler admits it, blocks allocated)──► RUNNING ──(a stop rule fires)──► FINISHED
        ▲                                                   │
        └──────────(preempted: blocks freed, recomputed)────┘
    (an error in its own step, or `engine.abort(id)`, ends it at once: FAILED, finish_reason "error" / "abort")

The stop rules, the detokenizer and the per-token timings are those of `teachllm.generate.Sequence`,
which a Request wraps; the Request adds what serving needs on top:

- `num_computed_tokens`: how many of its tokens (prompt + output) already have K and V in the cache.
  Prefill and decode are the same thing seen from here: the engine computes the tokens from
  `num_computed_tokens` to the end. After the prompt is done only one is left each iteration, the
  token sampled last time (decode); before that there are many (prefill, maybe in chunks).
- `block_table`: the KV blocks that hold its tokens, in order (token at position p lives in block
  `block_table[p // block_size]`, slot `p % block_size`).
- timestamps (seconds since the engine started): arrival, first token, finish.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum

from ..generate import GenerationOutput, Metrics, Sequence
from ..sampling import SamplingParams


class RequestStatus(Enum):
    WAITING = "waiting"  # in the queue: no blocks, nothing computed
    RUNNING = "running"  # admitted: has blocks, is prefilled or decoded each iteration
    FINISHED = "finished"  # a stop rule fired; its blocks are freed
    FAILED = "failed"  # its step raised an error (kept in `error`), or it was aborted; its blocks are freed


@dataclass
class RequestStats:
    """One request's timings and counts, as plain data (seconds since the engine started)."""
    request_id: int
    prompt_len: int  # tokens in the prompt
    output_len: int  # tokens generated
    arrival_s: float  # when it was added
    first_token_s: float  # when its first token was sampled
    finish_s: float  # when its last token was sampled
    ttft_s: float  # time to first token = first_token_s − arrival_s (queueing included)
    latency_s: float  # end-to-end latency = finish_s − arrival_s
    tpot_s: float  # mean time between two of its tokens after the first (nan with one token)
    max_gap_s: float  # longest wait between two of its tokens (a stall behind someone's long prefill shows here)
    arrival_iteration: int  # first iteration it could have run in
    first_iteration: int  # iteration that produced its first token
    finish_iteration: int  # iteration that produced its last token
    num_cached_tokens: int  # prompt tokens found in the prefix cache (not computed)
    num_preemptions: int  # times it was sent back to the queue for lack of blocks

    def to_dict(self) -> dict:
        return asdict(self)


class Request:
    def __init__(self, request_id: int, prompt_ids: list[int], params: SamplingParams, tokenizer=None,
                 eos_token_ids=(), arrival_s: float = 0.0, arrival_iteration: int = 0):
        if not prompt_ids:
            raise ValueError("empty prompt: a request needs at least one token")
        self.request_id = request_id  # the engine's name for it (its index in the order of arrival)
        self.seq = Sequence(prompt_ids, params, tokenizer, eos_token_ids)  # ids, stop rules, detokenizer
        self.status = RequestStatus.WAITING
        self.num_computed_tokens = 0  # tokens whose K and V are in the cache
        self.num_cached_tokens = 0  # of those, tokens taken from the prefix cache instead of computed
        self.block_table: list[int] = []  # block ids holding its K and V, in token order
        self.arrival_s = arrival_s
        self.arrival_iteration = arrival_iteration  # index of the first iteration it could run in
        self.first_token_s: float | None = None
        self.last_token_s: float | None = None
        self.finish_s: float | None = None
        self.first_iteration: int | None = None
        self.finish_iteration: int | None = None
        self.num_preemptions = 0
        self.error: str | None = None  # why it failed ("abort" when aborted), None otherwise

    # ---- its tokens ----------------------------------------------------------------------------
    @property
    def params(self) -> SamplingParams:
        return self.seq.params

    @property
    def prompt_ids(self) -> list[int]:
        return self.seq.prompt_ids

    @property
    def output_ids(self) -> list[int]:
        return self.seq.output_ids

    @property
    def token_ids(self) -> list[int]:
        """Prompt and output so far: everything whose K and V the cache must eventually hold."""
        return self.seq.prompt_ids + self.seq.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.seq.prompt_ids) + len(self.seq.output_ids)

    @property
    def num_uncomputed(self) -> int:
        """Tokens still to run through the model before the next token can be sampled."""
        return self.num_tokens - self.num_computed_tokens

    @property
    def is_prefill(self) -> bool:
        """True while the prompt (or, after a preemption, prompt + output) is being computed;
        False in decode, where one token, the last one sampled, is left each iteration."""
        return not self.seq.output_ids or self.num_uncomputed > 1

    @property
    def finished(self) -> bool:
        return self.seq.finished

    # ---- what the engine does to it ------------------------------------------------------------
    def append_token(self, token: int, now: float, iteration: int, logprobs: dict | None = None) -> None:
        """Add a sampled token at time `now`; the stop rules of `Sequence` decide whether it finishes.

        Each token is charged the time since the previous one (since arrival for the first), so the
        `Metrics` of `result()` read as serving metrics: ttft includes the time spent in the queue,
        e2e is the latency from arrival to the last token."""
        previous = self.arrival_s if self.last_token_s is None else self.last_token_s
        if self.first_token_s is None:
            self.first_token_s, self.first_iteration = now, iteration
        self.seq.append(token, now - previous, logprobs)
        self.last_token_s = now
        if self.seq.finished:
            self.finish_s, self.finish_iteration = now, iteration

    def preempt(self) -> None:
        """Back to the queue with nothing computed (its blocks are freed by the block manager):
        when it runs again, prompt + output so far are recomputed in one prefill."""
        self.status = RequestStatus.WAITING
        self.num_computed_tokens = 0
        self.num_cached_tokens = 0
        self.num_preemptions += 1

    def fail(self, reason: str, error: str, now: float, iteration: int) -> None:
        """End it at once with finish_reason `reason` ("error" or "abort"); the engine frees its blocks."""
        self.seq.finish_reason, self.error = reason, error
        self.status = RequestStatus.FAILED
        self.finish_s, self.finish_iteration = now, iteration

    def result(self) -> GenerationOutput:
        """The same output `lm.generate` gives: text, ids, finish reason, log-probs, metrics.
        A request that failed before its first token has empty text and NaN timings."""
        if self.seq.step_s:
            return self.seq.result()
        nan = float("nan")
        metrics = Metrics(ttft_s=nan, tpot_s=nan, tokens_per_s=nan, e2e_s=nan,
                          n_prompt_tokens=len(self.prompt_ids), n_output_tokens=0)
        return GenerationOutput(text="", token_ids=[], finish_reason=self.seq.finish_reason, stop_reason=None,
                                logprobs=self.seq.logprobs, metrics=metrics, prompt_token_ids=list(self.prompt_ids))

    def stats(self) -> RequestStats:
        if not self.finished:
            raise ValueError(f"request {self.request_id} has not finished")
        gaps = self.seq.step_s[1:]  # seconds between consecutive tokens
        first_s = float("nan") if self.first_token_s is None else self.first_token_s  # nan: failed before it
        first_iteration = self.finish_iteration if self.first_iteration is None else self.first_iteration
        return RequestStats(
            request_id=self.request_id, prompt_len=len(self.prompt_ids), output_len=len(self.output_ids),
            arrival_s=self.arrival_s, first_token_s=first_s, finish_s=self.finish_s,
            ttft_s=first_s - self.arrival_s, latency_s=self.finish_s - self.arrival_s,
            tpot_s=sum(gaps) / len(gaps) if gaps else float("nan"), max_gap_s=max(gaps, default=float("nan")),
            arrival_iteration=self.arrival_iteration, first_iteration=first_iteration,
            finish_iteration=self.finish_iteration,
            num_cached_tokens=self.num_cached_tokens, num_preemptions=self.num_preemptions)

    def __repr__(self) -> str:
        return (f"Request(id={self.request_id}, {self.status.value}, prompt={len(self.prompt_ids)}, "
                f"output={len(self.output_ids)}, computed={self.num_computed_tokens}, blocks={self.block_table})")
