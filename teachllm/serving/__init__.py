"""Serving many requests: a paged KV cache, a scheduler, and an engine that runs them iteration by iteration.

    from teachllm.serving import ServingEngine, ServingConfig
    engine = ServingEngine(lm, ServingConfig(policy="continuous", max_num_seqs=8))
    run = engine.run(prompts, tl.SamplingParams(temperature=0, max_tokens=32))

One concept per file, in the order a request meets them:

    config.py         ServingConfig: policy (static / continuous), batch and token limits, block size
    request.py        Request: WAITING → RUNNING → FINISHED, built on teachllm.generate.Sequence
    block_manager.py  BlockManager: blocks on demand, reference counts, prefix hashes, fragmentation
    paged_cache.py    PagedKVCache: the block pool; PagedBatch: the decoder's cache for one forward call
    scheduler.py      Scheduler: decodes, prompt chunks and admissions under the limits, preemption
    engine.py         ServingEngine: schedule → forward → sample → free, and the timeline
    metrics.py        IterationRecord, ServingRun: what a run recorded, as plain data
    parity.py         the paged cache against the contiguous one
    cacheblend.py     reuse of non-prefix chunk caches with selective recompute (CacheBlend)
    speculative.py    speculative decoding, the model drafting for itself from some of its layers
    kv_quant.py       an int8 KV cache and the error it costs
    workload.py       the workloads and measurements of the chapters; bench.py prints and saves them
"""

from .block_manager import Block, BlockManager, BlockUsage, block_hash
from .cacheblend import BlendResult, BlendRow, ChunkKV, blend, precompute_chunk, quality_table, shift_keys
from .config import ServingConfig
from .engine import ServingEngine
from .kv_quant import Int8KVCache, dequantize_int8, int8_error, quantize_int8
from .metrics import IterationRecord, ServingRun
from .paged_cache import PagedBatch, PagedKVCache
from .parity import ParityReport, compare_with_contiguous
from .request import Request, RequestStats, RequestStatus
from .scheduler import ScheduledBatch, Scheduler
from .speculative import (
    SpeculativeResult,
    acceptance_table,
    draft_model,
    expected_tokens_per_call,
    speculative_generate,
)

__all__ = [
    "BlendResult", "BlendRow", "Block", "BlockManager", "BlockUsage", "ChunkKV", "Int8KVCache", "IterationRecord",
    "PagedBatch", "PagedKVCache", "ParityReport", "Request", "RequestStats", "RequestStatus", "ScheduledBatch",
    "Scheduler", "ServingConfig", "ServingEngine", "ServingRun", "SpeculativeResult", "acceptance_table", "blend",
    "block_hash", "compare_with_contiguous", "dequantize_int8", "draft_model", "expected_tokens_per_call",
    "int8_error", "precompute_chunk", "quality_table", "quantize_int8", "shift_keys", "speculative_generate",
]
