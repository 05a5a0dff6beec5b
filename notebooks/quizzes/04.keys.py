"""Chapter 4 quiz keys: the token appended to the chapter's prompt, the KV cache's bytes per token, its size at
the full context, how much larger plain multi-head attention would make it, and the bytes in use after a few decode
steps."""
import dataclasses

import teachllm as tl
from teachllm.course.quiz import next_token

PROMPT = "The capital of France is Paris. The capital of Italy is"  # the chapter's prompt


def next_after_italy(lm):
    return next_token(lm, prompt=PROMPT)


def cache_bytes_per_token(lm):
    cfg = lm.config
    return {"answer": tl.cost.kv_cache_bytes(cfg, 1, dtype="float32"), "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
            "n_kv_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim}


def cache_full_context(lm):
    cfg = lm.config
    full = tl.cost.kv_cache_bytes(cfg, cfg.max_position_embeddings, dtype="float32")
    return {"answer": round(full / 1e6, 1), "n_tokens": cfg.max_position_embeddings,
            "per_token": tl.cost.kv_cache_bytes(cfg, 1, dtype="float32"),
            "weights_mb": round(tl.cost.weight_bytes(cfg, dtype="float32") / 1e6, 1),
            "share": full / tl.cost.weight_bytes(cfg, dtype="float32")}  # the cache as a fraction of the weights


def mha_cache_ratio(lm):
    cfg = lm.config
    mha = dataclasses.replace(cfg, n_kv_heads=cfg.n_heads)  # one KV head per query head
    ratio = tl.cost.kv_cache_bytes(mha, 1, dtype="float32") // tl.cost.kv_cache_bytes(cfg, 1, dtype="float32")
    return {"answer": ratio, "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads}


def cache_bytes_after_steps(lm):
    ids = lm.tokenizer.encode(PROMPT)
    cache = lm.new_cache(max_len=len(ids) + 5)
    token = int(lm.prefill(ids, cache).argmax(-1))
    for _ in range(5):
        token = int(lm.decode_step(token, cache).argmax(-1))
    return {"answer": cache.bytes_used, "n_prompt": len(ids), "length": cache.length,
            "per_token": cache.bytes_per_token}
