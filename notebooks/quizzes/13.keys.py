"""Chapter 13 quiz keys: what prefix caching finds of a shared system prompt (the serving engine), the
share of a full prefill CacheBlend computes, tokens per target call by the speculative-decoding rule,
and the bytes of one token in the int8 KV cache (teachllm.serving)."""
import teachllm as tl
from teachllm.serving import Int8KVCache, ServingConfig, ServingEngine, expected_tokens_per_call

SYSTEM = ("You are a patient tutor for a course on how large language models generate text. Answer in one short "
          "sentence with simple words, and say so when you do not know the answer.")


def shared_prefix_found(lm):
    tok = lm.tokenizer
    chats = [tok.encode(tok.apply_chat_template([{"role": "system", "content": SYSTEM},
                                                 {"role": "user", "content": q}]))
             for q in ("What is a token?", "What does the KV cache store?", "Why is decode slow?")]
    common = next(i for i, pair in enumerate(zip(*chats, strict=False)) if len(set(pair)) > 1)
    engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=64, enable_prefix_caching=True))
    one = tl.SamplingParams(temperature=0, max_tokens=1)
    engine.run(chats[:1], one)
    found = engine.run(chats[1:], one).requests[0].num_cached_tokens
    return {"answer": found, "common": common, "blocks": found // 16, "rest": common - found}


def cacheblend_share(lm):
    L, r = lm.config.n_layers, 0.15
    return {"answer": round(100 * (2 + (L - 2) * r) / L, 1), "L": L, "L2": L - 2}


def expected_tokens(lm):
    return {"answer": round(expected_tokens_per_call(0.8, 4), 4)}


def int8_bytes(lm):
    c = lm.config
    return {"answer": Int8KVCache(c, max_len=1, dtype=lm.dtype, device=lm.device).bytes_per_token,
            "float32": tl.cost.kv_cache_bytes(c, 1, dtype="float32"),
            "n_layers": c.n_layers, "n_kv": c.n_kv_heads, "d": c.head_dim}
