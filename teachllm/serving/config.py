"""ServingConfig: the knobs of the serving engine, checked when it is made.

Two policies run on the same engine (`teachllm.serving.engine.ServingEngine`):

- "static": a batch is formed when the engine is idle, and nobody joins until every request in it
  has finished. A short request that lands in the same batch as a long one frees its row early,
  but the requests still waiting cannot use that row: they wait for the longest one.
- "continuous": every iteration, finished requests leave and waiting ones join (up to
  `max_num_seqs` running at once). This is what vLLM, TGI and SGLang do.

Chunked prefill: with `chunked_prefill=True` a prompt is prefilled in pieces that fit the token
budget `max_num_batched_tokens` left over after the decodes of that iteration, so one long prompt
cannot stall the decodes of everyone else for a whole iteration.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass

POLICIES = ("static", "continuous")


@dataclass(frozen=True)
class ServingConfig:
    policy: str = "continuous"  # "static" or "continuous" batching (see the module docstring)
    max_num_seqs: int = 8  # at most this many requests run at once (the batch size limit)
    max_num_batched_tokens: int | None = None  # token budget per iteration (decodes + prefill); None = no limit
    chunked_prefill: bool = False  # split prompts into chunks that fit the token budget
    block_size: int = 16  # tokens per KV block (vLLM's default is 16)
    num_blocks: int = 128  # blocks in the KV pool: the pool holds num_blocks · block_size tokens
    enable_prefix_caching: bool = True  # reuse full blocks whose tokens (and prefix) were computed before
    record_block_tables: bool = True  # the timeline keeps a copy of every block table after each iteration

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"ServingConfig.policy={self.policy!r} is not allowed; must be one of {POLICIES}")
        for name in ("max_num_seqs", "block_size", "num_blocks", "max_num_batched_tokens"):
            value = getattr(self, name)
            if isinstance(value, numbers.Integral) and not isinstance(value, bool):
                object.__setattr__(self, name, int(value))  # numpy integers too
        for name in ("max_num_seqs", "block_size", "num_blocks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ServingConfig.{name} must be a positive integer, got {value!r}")
        for name in ("chunked_prefill", "enable_prefix_caching", "record_block_tables"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"ServingConfig.{name}={getattr(self, name)!r} must be True or False")
        budget = self.max_num_batched_tokens
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
                raise ValueError(f"ServingConfig.max_num_batched_tokens must be None or a positive integer, "
                                 f"got {budget!r}")
            if budget < self.max_num_seqs:
                raise ValueError(f"ServingConfig.max_num_batched_tokens={budget} is smaller than max_num_seqs="
                                 f"{self.max_num_seqs}: every running request must be able to decode one token "
                                 "per iteration")
        if self.chunked_prefill and budget is None:
            raise ValueError("ServingConfig.chunked_prefill needs a token budget: set max_num_batched_tokens "
                             "(the chunk of a prompt is what is left of the budget after the decodes)")

    @property
    def num_slots(self) -> int:
        """Tokens the KV pool can hold: num_blocks · block_size."""
        return self.num_blocks * self.block_size

    def to_dict(self) -> dict:
        return asdict(self)
