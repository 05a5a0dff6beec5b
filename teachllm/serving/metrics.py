"""What a serving run records, as plain data: a timeline of iterations and each request's timings.

The viz layer and the chapters read these; nothing here draws. Serving metrics (per request, from
its arrival): TTFT = first token − arrival (queueing included), latency = last token − arrival.
Per run: total time, throughput = output tokens / total time, and — robust to a busy machine — the
number of iterations and model forward calls it took, and each request's latency counted in iterations
(from the iteration it arrived in to the one that produced its last token, both included).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from ..generate import GenerationOutput
from .request import RequestStats


@dataclass
class IterationRecord:
    """One iteration of the engine: who ran, what kind of work, how long it took."""
    index: int  # 0, 1, 2, ...
    start_s: float  # seconds since the run started
    seconds: float  # scheduling + forward calls + sampling
    decode_ids: list[int]  # requests that decoded one token
    prefill: list[tuple[int, int, int]]  # (request id, first position, tokens) of each prefill chunk
    num_tokens: int  # tokens computed: decodes + prefill chunks
    forward_calls: int  # model calls (one for the decodes, one for the prefills)
    sampled: list[int]  # requests that got a new token
    finished: list[int]  # requests that finished
    preempted: list[int]  # requests sent back to the queue
    num_waiting: int  # queue length after the iteration
    num_running: int  # running requests after the iteration
    blocks_used: int  # KV blocks held after the iteration
    slots_allocated: int  # blocks_used × block_size
    slots_used: int  # slots holding a computed token (a shared slot counted once)
    slots_reserved: int  # Σ (prompt + max_tokens) over the running requests: what contiguous caches would hold
    fragmentation: float  # 1 − slots_used / slots_allocated after the iteration
    contiguous_fragmentation: float  # 1 − computed tokens / slots_reserved
    block_tables: dict | None = None  # BlockManager.snapshot() after the iteration, if recorded

    def to_dict(self) -> dict:
        return asdict(self)


def _stats(values: list[float]) -> dict:
    if not values:
        return {"mean": float("nan"), "median": float("nan"), "max": float("nan")}
    return {"mean": statistics.fmean(values), "median": statistics.median(values), "max": max(values)}


@dataclass
class ServingRun:
    """Everything one `ServingEngine.run` produced."""
    config: dict  # ServingConfig.to_dict()
    outputs: list[GenerationOutput]  # one per prompt, in order (what lm.generate would return)
    requests: list[RequestStats]  # one per prompt, in order
    timeline: list[IterationRecord] = field(default_factory=list)
    total_s: float = 0.0  # from the start of the run to the last token

    @property
    def iterations(self) -> int:
        return len(self.timeline)

    @property
    def forward_calls(self) -> int:
        return sum(r.forward_calls for r in self.timeline)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_len for r in self.requests)

    def summary(self, ids=None) -> dict:
        """Totals for the run, and latency/TTFT statistics for the requests `ids` (default: all)."""
        chosen = [r for r in self.requests if ids is None or r.request_id in set(ids)]
        return {
            "requests": len(chosen),
            "total_s": self.total_s,
            "iterations": self.iterations,
            "forward_calls": self.forward_calls,
            "tokens_computed": sum(r.num_tokens for r in self.timeline),
            "output_tokens": self.output_tokens,
            "throughput_tok_s": self.output_tokens / self.total_s if self.total_s else float("nan"),
            "requests_per_s": len(self.requests) / self.total_s if self.total_s else float("nan"),
            "latency_s": _stats([r.latency_s for r in chosen]),
            "ttft_s": _stats([r.ttft_s for r in chosen]),
            "latency_iterations": _stats([r.finish_iteration - r.arrival_iteration + 1 for r in chosen]),
            "ttft_iterations": _stats([r.first_iteration - r.arrival_iteration + 1 for r in chosen]),
            "tpot_s": _stats([r.tpot_s for r in chosen if r.output_len > 1]),
            "max_gap_s": _stats([r.max_gap_s for r in chosen if r.output_len > 1]),
        }

    def to_dict(self) -> dict:
        return {"config": self.config, "summary": self.summary(),
                "requests": [r.to_dict() for r in self.requests],
                "timeline": [r.to_dict() for r in self.timeline]}
