"""Chapter 12 quiz keys, from teachllm.serving's block manager, paged cache and engine: the most a
sequence wastes, what a 16-token prompt sent twice finds in the cache, a token's slot, the 1000/500/800
example of LLM Inference Flow §7.2, and the KV bytes of one token (teachllm.cost)."""
import teachllm as tl
from teachllm.serving import BlockManager, PagedKVCache, Request, ServingConfig, ServingEngine
from teachllm.serving.workload import LONG_TEXT


def max_waste(lm):
    manager = BlockManager(num_blocks=1, block_size=16)
    return {"answer": max(manager.blocks_for(n) * 16 - n for n in range(1, 200))}


def sixteen_twice(lm):
    prompt = lm.tokenizer.encode(LONG_TEXT)[:16]
    engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=16))
    one = tl.SamplingParams(temperature=0, max_tokens=1)
    engine.run([prompt], one)
    return {"answer": engine.run([prompt], one).requests[0].num_cached_tokens}


def token_slot(lm):
    import torch
    pool = PagedKVCache(lm.config, num_blocks=8, block_size=4, dtype=lm.dtype, device=lm.device)
    return {"answer": int(pool.slots([5, 2, 7], torch.tensor([9]))[0])}


def _example(lm):
    manager = BlockManager(num_blocks=256, block_size=16, enable_prefix_caching=False)
    requests = []
    for i, (most, n) in enumerate(zip([1000, 500, 800], [350, 150, 400], strict=True)):
        r = Request(i, list(range(100, 100 + n)), tl.SamplingParams(max_tokens=most - n))
        manager.allocate(r, r.num_tokens)
        r.num_computed_tokens = r.num_tokens
        requests.append(r)
    return manager.usage(requests), requests


def contiguous_waste(lm):
    usage, _ = _example(lm)
    return {"answer": round(100 * usage.contiguous_fragmentation, 1), "reserved": usage.contiguous_slots}


def paged_blocks(lm):
    usage, requests = _example(lm)
    return {"answer": usage.blocks_used, "per_request": [len(r.block_table) for r in requests],
            "waste": round(100 * usage.fragmentation, 1)}


def kv_bytes_per_token(lm):
    c = lm.config
    return {"answer": tl.cost.kv_cache_bytes(c, n_tokens=1, dtype="float32"), "n_layers": c.n_layers,
            "n_kv": c.n_kv_heads,
            "d": c.head_dim}
