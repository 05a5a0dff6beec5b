"""The KV cache: its size against the formula, and its contents against what the layers computed."""

import torch

import teachllm as tl


def formula_bytes(config, n_tokens, batch, element_size):
    """2 (K and V) · L · n_kv · d · tokens · batch · bytes per element."""
    return 2 * config.n_layers * config.n_kv_heads * config.head_dim * n_tokens * batch * element_size


def test_allocated_and_used_bytes_follow_the_formula(lm):
    c = lm.config
    cache = lm.new_cache(max_len=100, batch_size=2)
    assert cache.bytes_allocated == formula_bytes(c, 100, 2, 4)
    assert cache.bytes_used == 0
    lm.prefill(torch.zeros(2, 7, dtype=torch.long), cache)
    lm.decode_step([5, 6], cache)
    assert cache.length == 8
    assert cache.bytes_used == formula_bytes(c, 8, 2, 4)
    # SmolLM2-135M: 2 · 30 layers · 3 KV heads · 64 dims · 4 bytes = 46,080 bytes per token
    assert cache.bytes_per_token == 2 * 30 * 3 * 64 * 4


def test_slots_beyond_length_stay_empty(lm):
    cache = lm.new_cache(max_len=16)
    lm.prefill([10, 20, 30], cache)
    assert cache.k[:, :, :, 3:].abs().max() == 0
    assert cache.keys(0).shape == (1, lm.config.n_kv_heads, 3, lm.config.head_dim)
    assert cache.k[:, :, :, :3].abs().min() >= 0 and cache.k[:, :, :, :3].abs().max() > 0


def test_reset_empties_the_cache(lm):
    cache = lm.new_cache(max_len=8)
    first = lm.prefill([1, 2, 3], cache)
    cache.reset()
    assert cache.length == 0
    assert torch.equal(lm.prefill([1, 2, 3], cache), first)


def test_repr_reports_usage(lm):
    cache = lm.new_cache(max_len=10)
    lm.prefill([1, 2], cache)
    assert "length=2/10" in repr(cache)


def test_default_cache_is_the_whole_context(lm):
    cache = tl.KVCache(lm.config, max_len=lm.config.max_position_embeddings)
    assert cache.max_len == lm.config.max_position_embeddings
