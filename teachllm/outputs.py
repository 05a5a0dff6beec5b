"""What generation returns: the text and ids of one sequence, why it stopped, and how long it took.

Plain data, shared by the sampling loop (`teachllm.generate`) and beam search (`teachllm.beam`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Metrics:
    ttft_s: float  # time to first token: prefill + choosing the first token
    tpot_s: float  # time per output token after the first (mean decode step); nan with one token
    tokens_per_s: float  # output tokens / end-to-end time
    e2e_s: float  # end-to-end latency, prompt ids in → last token out
    n_prompt_tokens: int
    n_output_tokens: int
    step_s: list[float] = field(default_factory=list)  # each step: [prefill, decode 1, decode 2, ...]


@dataclass
class GenerationOutput:
    text: str  # the generated text (special tokens skipped; cut at a stop string)
    token_ids: list[int]  # every generated id, the one that stopped generation included
    finish_reason: str  # "stop" (EOS, stop id or stop string) or "length" (max_tokens)
    stop_reason: str | int | None  # the stop string or stop id that ended it; None for EOS and length
    logprobs: list[dict[int, float]] | None  # with logprobs=N: per step, top-N (and the chosen) log-probabilities
    metrics: Metrics
    prompt_token_ids: list[int]
