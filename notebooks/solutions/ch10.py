"""Chapter 10 · What it costs — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import teachllm as tl
from teachllm import cost
from teachllm.roofline import KNOWN_DEVICES

lm = tl.load(device="cpu", dtype="float32")
config = lm.config
llama_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                          n_kv_heads=32, head_dim=128, max_position_embeddings=4096)

# %% Exercise 1
# Per layer and token, the linear part is 2·h·(n_h + 2·n_kv)·d + 2·n_h·d·h + 6·h·f, and attention over s keys
# costs 4·s·n_h·d (QKᵀ and scores·V). They are equal at s* = linear / (4·n_h·d).


def attention_half_length(cfg):
    """The prompt length s* at which QKᵀ and scores·V cost as much as the rest of a layer's matmuls."""
    h, d, f = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    linear = 2 * h * (cfg.n_heads + 2 * cfg.n_kv_heads) * d + 2 * cfg.n_heads * d * h + 6 * h * f
    return linear / (4 * cfg.n_heads * d)


# Then find where the exact count first reaches 50 % and check that the two agree (the LM head moves it a little).
for name, c in (("SmolLM2-135M", config), ("Llama-7B", llama_7b)):
    s_star = attention_half_length(c)
    lo, hi = 1, 200_000  # bisect: attention_fraction grows with the prompt length
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if cost.prefill_flops(c, mid).attention_fraction < 0.5 else (lo, mid)
    print(f"{name}: formula s* = {s_star:,.0f} tokens; exact count reaches 50 % at {lo:,}")
    assert 0.5 * s_star < lo < 2.5 * s_star

# %% Exercise 2
# On an H100 (spec sheet, bf16), decode at 1,000 tokens of context never becomes compute-bound: weights are read
# once per step, but every sequence reads its own KV cache, so the intensity levels off at one sequence's FLOPs
# over its K and V bytes.


def decode_intensity_limit(cfg, context_len, dtype="bf16"):
    """FLOPs per byte of a decode step at `context_len` keys when the batch is so large that the weights no longer
    count: one sequence's FLOPs ÷ the K and V it reads (all context_len tokens) and writes (the new token)."""
    kv = cost.kv_cache_bytes(cfg, context_len, dtype=dtype) + cost.kv_cache_bytes(cfg, 1, dtype=dtype)
    return cost.decode_flops(cfg, context_len).total / kv


h100 = KNOWN_DEVICES["H100 SXM"]
compute_bound_on_h100 = decode_intensity_limit(config, 1000) > h100.ridge
intensities = [cost.decode_cost(config, 1000, batch_size=b, dtype="bf16").intensity for b in (1, 16, 256, 4096)]
print("decode intensity at batch 1, 16, 256, 4096:", [f"{i:.1f}" for i in intensities], f"ridge {h100.ridge:.0f}")
assert intensities == sorted(intensities) and intensities[-1] < decode_intensity_limit(config, 1000) < h100.ridge
assert not compute_bound_on_h100
print(f"the limit, one sequence's FLOPs / its KV bytes: {decode_intensity_limit(config, 1000):.1f} FLOP/byte")

# %% Exercise 3
# Which decode step grows with the context? Bytes read per step (the step is memory-bound): the weights once, plus
# every sequence's cache. At batch 16 the caches outweigh the weights; at batch 1 the weights dominate.


def kv_share(cfg, context_len, batch_size, dtype="float32"):
    """The fraction of the bytes one decode step moves that are K and V (read and written), not weights."""
    kv = cost.kv_cache_bytes(cfg, context_len + 1, batch_size=batch_size, dtype=dtype)  # T read + 1 written
    return kv / (cost.weight_bytes_read(cfg, 1, batch_size=batch_size, dtype=dtype) + kv)


step_grows_with_context = 16
weights = cost.weight_bytes(config, "float32")
for batch in (1, 16):
    small, large = (cost.decode_cost(config, t, batch_size=batch, dtype="float32").bytes for t in (64, 2048))
    print(f"batch {batch:>2}: {small / 1e6:7.0f} MB at 64 tokens, {large / 1e6:7.0f} MB at 2,048 "
          f"(× {large / small:.2f}); K and V are {kv_share(config, 64, batch):.0%} and "
          f"{kv_share(config, 2048, batch):.0%} of it")
kv_16 = cost.kv_cache_bytes(config, 2048, batch_size=16, dtype="float32")
assert kv_16 > 2 * weights > 4 * cost.kv_cache_bytes(config, 2048, batch_size=1, dtype="float32")
assert kv_share(config, 2048, 16) > 0.5 > kv_share(config, 2048, 1)
print("(the notebook times these steps: the batch-16 step grows with the context, the batch-1 step barely)")
