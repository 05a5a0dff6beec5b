"""The KV cache: its size against the formula, and its contents against what the layers computed."""

import pytest
import torch

import teachllm as tl

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too


def formula_bytes(config, n_tokens, batch, element_size):
    """2 (K and V) · L · n_kv · d · tokens · batch · bytes per element."""
    return 2 * config.n_layers * config.n_kv_heads * config.head_dim * n_tokens * batch * element_size


def test_allocated_and_used_bytes_follow_the_formula(lm):
    c, size = lm.config, lm.dtype.itemsize  # 4 bytes an element in float32, 2 in bfloat16
    cache = lm.new_cache(max_len=100, batch_size=2)
    assert cache.bytes_allocated == formula_bytes(c, 100, 2, size)
    assert cache.bytes_used == 0
    lm.prefill(torch.zeros(2, 7, dtype=torch.long), cache)
    lm.decode_step([5, 6], cache)
    assert cache.length == 8
    assert cache.bytes_used == formula_bytes(c, 8, 2, size)
    # SmolLM2-135M: 2 · 30 layers · 3 KV heads · 64 dims · 4 bytes = 46,080 bytes per token in float32
    assert cache.bytes_per_token == 2 * 30 * 3 * 64 * size


def test_the_cache_holds_what_each_layer_computed(lm):
    """After prefill, every layer's stored K and V are the keys and values that layer computed (its trace),
    and the slots beyond the filled length are still zero."""
    cache, trace = lm.new_cache(max_len=16), tl.Trace()
    lm.prefill([10, 20, 30], cache, trace=trace)
    for layer in range(lm.config.n_layers):
        assert torch.equal(cache.keys(layer), trace.layers[layer].k)  # [1, n_kv, 3, d]
        assert torch.equal(cache.values(layer), trace.layers[layer].v)
    assert cache.k[:, :, :, 3:].abs().max() == 0 and cache.v[:, :, :, 3:].abs().max() == 0


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


def test_a_cache_never_outgrows_the_context_window(lm):
    window = lm.config.max_position_embeddings
    with pytest.raises(ValueError, match=f"context window of {window}"):
        lm.new_cache(max_len=window + 1)
    cache = lm.new_cache(max_len=4)
    lm.prefill([1, 2, 3], cache)
    lm.decode_step(4, cache)
    with pytest.raises(ValueError, match="the KV cache is full"):
        lm.decode_step(5, cache)
