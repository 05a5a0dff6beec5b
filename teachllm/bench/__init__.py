"""The benchmarks: teachllm measured against a reference run in the same process, with ratios, never alone.

Not the lesson. Chapter 10 and the README quote what these print; a lecturer runs them on the class's machines:

    python -m teachllm.bench            decode.py: teachllm against transformers, prefill and decode against the
                                        roofline, the 4-bit weights' speed and quality, and (fast.py) the GPU
                                        fast path against transformers: tokens/s, TTFT, kernels per step
    python -m teachllm.bench.serving    serving.py: batching, chunked prefill, the paged cache, CacheBlend,
                                        speculative decoding, the int8 KV cache
    python -m teachllm.bench.widgets    widgets.py: how long the distribution explorer takes to redraw

`from teachllm import bench` gives decode.py's functions (bench.quality, bench.perplexity, ...), as chapter 10 uses.
"""

from .decode import (
    GGUF,
    PLAIN,
    PROMPT,
    QUALITY_PROMPTS,
    Settings,
    agreeing_prefix,
    batch_throughput,
    checkpoint_models,
    compare_greedy,
    compare_weights,
    format_report,
    format_weights,
    greedy_speeds,
    hf_greedy,
    main,
    perplexity,
    quality,
    random_models,
    run,
    teachllm_greedy,
    to_hf_config,
)

__all__ = [
    "GGUF", "PLAIN", "PROMPT", "QUALITY_PROMPTS", "Settings", "agreeing_prefix", "batch_throughput",
    "checkpoint_models", "compare_greedy", "compare_weights", "format_report", "format_weights", "greedy_speeds",
    "hf_greedy", "main", "perplexity", "quality", "random_models", "run", "teachllm_greedy", "to_hf_config",
]
