"""Chapter 4 · The KV cache — solutions to the exercises."""
import dataclasses

import torch

import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
ids = tok.encode("The capital of France is Paris. The capital of Italy is")

# Exercise 1: generation without a cache (rerun everything, keep the last row) gives the same tokens.
n = 6
seq = list(ids)
for _ in range(n):
    seq.append(int(lm.forward(seq)[0, -1].argmax()))
cached = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)).token_ids
assert seq[len(ids):] == cached
print("same tokens with and without the cache:", tok.decode(cached))

# Exercise 2: a shared beginning gives the same K and V: a token's K, V depend only on tokens up to it.
short = tok.encode("The capital of France is Paris.")
assert ids[:len(short)] == short
cache_a, cache_b = lm.new_cache(max_len=len(short)), lm.new_cache(max_len=len(ids))
lm.prefill(short, cache_a)
lm.prefill(ids, cache_b)
for layer in range(lm.config.n_layers):
    torch.testing.assert_close(cache_a.keys(layer), cache_b.keys(layer)[:, :, :len(short)], atol=1e-4, rtol=0)
    torch.testing.assert_close(cache_a.values(layer), cache_b.values(layer)[:, :, :len(short)], atol=1e-4, rtol=0)
print(f"{len(short)} shared tokens: same K and V in every layer → a server can reuse them (prefix caching)")

# Exercise 3: Llama-2-7B in fp16 on 80 GB. Per token: 2 (K, V) × 32 layers × n_kv × 128 × 2 bytes.
llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
free = 80e9 - tl.cost.weight_bytes(llama2_7b, "float16")
for n_kv in (32, 8):
    config = dataclasses.replace(llama2_7b, n_kv_heads=n_kv)
    per_token = tl.cost.kv_cache_bytes(config, 1, dtype="float16")
    assert per_token == 2 * 32 * n_kv * 128 * 2  # the formula, by hand
    print(f"{n_kv} KV heads: {per_token / 2**10:.0f} KiB per token, {int(free // per_token):,} tokens fit")
assert tl.cost.kv_cache_bytes(llama2_7b, 1, dtype="float16") == 4 * tl.cost.kv_cache_bytes(
    dataclasses.replace(llama2_7b, n_kv_heads=8), 1, dtype="float16")
