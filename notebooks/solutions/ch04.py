"""Chapter 4 · The KV cache — solutions to the exercises."""
import dataclasses

import torch

import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
prompt = "The capital of France is Paris. The capital of Italy is"  # the chapter's prompt
ids = tok.encode(prompt)

# %% Exercise 1
# Generation without a cache (rerun everything, keep the last row) gives the same tokens, with far more work.
def generate_without_cache(lm, ids, n):
    # n greedy tokens after ids, each chosen from the last row of lm.forward on the whole sequence so far
    seq = list(ids)
    for _ in range(n):
        seq.append(int(lm.forward(seq)[0, -1].argmax()))
    return seq[len(ids):]


n = 6
cached = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)).token_ids
assert generate_without_cache(lm, ids, n) == cached
print("same tokens with and without the cache:", tok.decode(cached))

# %% Exercise 2
# A shared beginning gives the same K and V: a token's K and V depend only on the tokens up to it.
def reusable_prefix(ids_a, ids_b):
    # how many of the first tokens of ids_b could reuse the K and V cached for ids_a
    count = 0
    for x, y in zip(ids_a, ids_b, strict=False):
        if x != y:
            break
        count += 1
    return count


same_kv_for_shared_tokens = True

short = tok.encode("The capital of France is Paris.")
assert reusable_prefix(short, ids) == len(short)
cache_a, cache_b = lm.new_cache(max_len=len(short)), lm.new_cache(max_len=len(ids))
lm.prefill(short, cache_a)
lm.prefill(ids, cache_b)
for layer in range(lm.config.n_layers):
    torch.testing.assert_close(cache_a.keys(layer), cache_b.keys(layer)[:, :, :len(short)], atol=1e-4, rtol=0)
    torch.testing.assert_close(cache_a.values(layer), cache_b.values(layer)[:, :, :len(short)], atol=1e-4, rtol=0)
print(f"{len(short)} shared tokens: same K and V in every layer → a server can reuse them (prefix caching)")

# %% Exercise 3
# Llama-2-7B in fp16 on 80 GB. Per token: 2 (K, V) × 32 layers × n_kv × 128 × 2 bytes.
def tokens_that_fit(config, memory_bytes, dtype="float16"):
    # how many tokens of KV cache fit in memory_bytes once the weights of config (stored in dtype) are loaded
    free = memory_bytes - tl.cost.weight_bytes(config, dtype)
    return int(free // tl.cost.kv_cache_bytes(config, 1, dtype=dtype))


llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
my_tokens = tokens_that_fit(llama2_7b, 80e9)
my_tokens_8_kv_heads = tokens_that_fit(dataclasses.replace(llama2_7b, n_kv_heads=8), 80e9)

for n_kv, fit in ((32, my_tokens), (8, my_tokens_8_kv_heads)):
    config = dataclasses.replace(llama2_7b, n_kv_heads=n_kv)
    per_token = tl.cost.kv_cache_bytes(config, 1, dtype="float16")
    assert per_token == 2 * 32 * n_kv * 128 * 2  # the formula, by hand
    print(f"{n_kv} KV heads: {per_token / 2**10:.0f} KiB per token, {fit:,} tokens fit")
assert tl.cost.kv_cache_bytes(llama2_7b, 1, dtype="float16") == 4 * tl.cost.kv_cache_bytes(
    dataclasses.replace(llama2_7b, n_kv_heads=8), 1, dtype="float16")
