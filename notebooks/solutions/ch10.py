"""Chapter 10 · What it costs — solutions to the exercises."""
import teachllm as tl
from teachllm import cost
from teachllm.roofline import KNOWN_DEVICES

config = tl.load(device="cpu", dtype="float32").config
llama_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                          n_kv_heads=32, head_dim=128, max_position_embeddings=4096)

# Exercise 1: per layer and token, the linear part is 2·h·(n_h + 2·n_kv)·d + 2·n_h·d·h + 6·h·f and causal
# attention over s tokens averages 4·(s/2)·n_h·d... Derive s* from the formulas, then find where the exact
# count first reaches 50 %, and check that the two agree (the LM head moves it a little).
for name, c in (("SmolLM2-135M", config), ("Llama-7B", llama_7b)):
    h, d, f = c.hidden_size, c.head_dim, c.intermediate_size
    linear = 2 * h * (c.n_heads + 2 * c.n_kv_heads) * d + 2 * c.n_heads * d * h + 6 * h * f
    s_star = linear / (4 * c.n_heads * d)
    lo, hi = 1, 200_000  # bisect: attention_fraction grows with the prompt length
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if cost.prefill_flops(c, mid).attention_fraction < 0.5 else (lo, mid)
    print(f"{name}: formula s* = {s_star:,.0f} tokens; exact count reaches 50 % at {lo:,}")
    assert 0.5 * s_star < lo < 2.5 * s_star

# Exercise 2: on an H100 (spec sheet, bf16), decode at 1,000 tokens of context never becomes compute-bound:
# weights are read once per step, but every sequence reads its own KV cache, so the intensity levels off.
h100 = KNOWN_DEVICES["H100 SXM"]
intensities = [cost.decode_cost(config, 1000, batch_size=b, dtype="bf16").intensity for b in (1, 16, 256, 4096)]
print("decode intensity at batch 1, 16, 256, 4096:", [f"{i:.1f}" for i in intensities], f"ridge {h100.ridge:.0f}")
assert intensities == sorted(intensities) and intensities[-1] < h100.ridge
limit = cost.decode_flops(config, 1000).total / (cost.kv_cache_bytes(config, 1000, dtype="bf16")
                                                 + cost.kv_cache_bytes(config, 1, dtype="bf16"))
assert intensities[-1] < limit < h100.ridge
print(f"the limit, one sequence's FLOPs / its KV bytes: {limit:.1f} FLOP/byte")

# Exercise 3: which decode step grows with the context? Bytes read per step (the step is memory-bound):
# the weights once, plus every sequence's cache. At batch 16 the caches outweigh the weights.
weights = cost.weight_bytes(config, "float32")
for batch in (1, 16):
    small, large = (cost.decode_cost(config, t, batch_size=batch, dtype="float32").bytes for t in (64, 2048))
    print(f"batch {batch:>2}: {small / 1e6:7.0f} MB at 64 tokens, {large / 1e6:7.0f} MB at 2,048 "
          f"(× {large / small:.2f})")
kv_16 = cost.kv_cache_bytes(config, 2048, batch_size=16, dtype="float32")
assert kv_16 > 2 * weights > 4 * cost.kv_cache_bytes(config, 2048, batch_size=1, dtype="float32")
print("(the notebook times these steps: the batch-16 step grows with the context, the batch-1 step barely)")
