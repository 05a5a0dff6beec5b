"""teachllm.fastpath.fused: the same forward pass in fewer operations gives the plain loop's logits.

Reference: `Transformer.forward` (model.py's plain loop) on the same weights, with the same cache; and
greedy decoding through it. Checked with q/k/v and gate/up stacked (their kernels agree) and unstacked (k/v on
another kernel than q), on PyTorch's kernels and on teachllm's C kernels (which apply the RMSNorm themselves on
the fast path), for a left-padded batch, a prefill and decode steps, and for one sequence (decode attention
without a mask).
"""

import pytest
import torch

from teachllm.fastpath import kernels, native
from teachllm.fastpath.fused import FastPath
from teachllm.generate import greedy
from teachllm.model import Trace

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]

PROMPTS = ["The three primary colours are", "人工智能正在改变我们的生活方式，", "def add(a, b):\n    return"]


@pytest.fixture(scope="module")
def qlm(qlm_int4):
    return qlm_int4


def both_paths(qlm, prompts, steps: int = 4):
    """Logits [B, V] of a prefill and `steps` greedy decode steps, on the fast path and on the plain one."""
    out, fast_path = {}, qlm.fast
    for name, path in (("fast", fast_path), ("plain", None)):
        qlm.fast = path
        ids = [qlm.tokenizer.encode(p) for p in prompts]
        cache = qlm.new_cache(max_len=max(map(len, ids)) + steps, batch_size=len(ids))
        logits = [qlm.prefill(ids, cache)]  # [B, V]
        for _ in range(steps):
            logits.append(qlm.decode_step(logits[-1].argmax(-1), cache))
        out[name] = torch.stack(logits)  # [steps + 1, B, V]
    qlm.fast = fast_path
    return out["fast"], out["plain"]


@pytest.mark.parametrize("kernel", ["int4", "float16"] + [k for k in native.C_FILES
                                                            if native.why_not_on_this_cpu(k) is None])
def test_fast_path_gives_the_plain_loops_logits(qlm, kernel):
    """On teachllm's C kernels the fast path lets the C file apply the RMSNorm, the plain loop applies it first.
    Their float32 roundings differ by an ulp here and there, and an ulp can send an activation to the next 16-bit
    integer: two roundings of the same numbers, each about as far from float32 as the other (max |Δlogit| from
    float32, measured: avx2 plain 0.021, fast 0.019; avx512 plain 0.012, fast 0.017). So there the fast path must
    stay within twice the plain loop's distance from float32 (a norm applied wrongly moves logits by whole units),
    and pick the same tokens."""
    if kernel in native.C_FILES and native.why_not(kernel):
        pytest.skip(f"{kernel}: {native.why_not(kernel)}")
    qlm.set_kernel(kernel)
    try:
        assert qlm.fast.qkv[0] is not None and not isinstance(qlm.fast.qkv[0], list)  # stacked
        fast, plain = both_paths(qlm, PROMPTS)
        if kernel in native.C_FILES:
            qlm.set_kernel("float32")
            exact = both_paths(qlm, PROMPTS)[1]
            assert float((fast - exact).abs().max()) < 2 * float((plain - exact).abs().max())
        else:
            assert float((fast - plain).abs().max()) < 1e-4  # the same arithmetic; F.rms_norm sums in its own order
        assert torch.equal(fast.argmax(-1), plain.argmax(-1))
    finally:
        qlm.set_kernel("int4")


def test_fast_path_with_matrices_on_different_kernels(qlm):
    """k/v on float16, q on int4: q, k and v cannot stack, so the fast path calls them one by one. (Attention
    stays in PyTorch here: on bfloat16 kernels the C attention's own float order is amplified, see below.)"""
    groups = kernels.groups_of(qlm.model)
    kv = next(g for g in groups if g.out_features == qlm.config.n_kv_heads * qlm.config.head_dim)
    kernels.use(qlm.model, kv, kernel="float16")
    qlm.fast = FastPath(qlm.model)
    qlm.fast.c_attention_on = False
    try:
        assert isinstance(qlm.fast.qkv[0], list) and not isinstance(qlm.fast.gate_up[0], list)
        fast, plain = both_paths(qlm, PROMPTS[:1])
        assert float((fast - plain).abs().max()) < 1e-4
    finally:
        qlm.set_kernel("int4")


def test_decode_attention_in_c_gives_the_plain_loops_logits(qlm):
    """One sequence, decode steps: the fast path takes RoPE, the cache write and attention in C
    (teachllm/fastpath/csrc/attention.h). On float32 matrices it gives the plain loop's logits to float rounding. (On
    the int4 kernel, whose activations are bfloat16, the C file's float order moves a logit by up to 0.3, as
    any other order would: that kernel's own distance from float32 is 1.15.)"""
    if native.why_not():
        pytest.skip(f"avx2: {native.why_not()}")
    qlm.set_kernel("float32")
    try:
        cache = qlm.new_cache(max_len=4)
        qlm.prefill(qlm.tokenizer.encode("Hi"), cache)
        assert qlm.fast.c_attention(cache, 1, 1, None) is not None  # the C path is the one tested
        fast, plain = both_paths(qlm, PROMPTS[1:2], steps=8)
        assert float((fast - plain).abs().max()) < 1e-4
        assert torch.equal(fast.argmax(-1), plain.argmax(-1))
    finally:
        qlm.set_kernel("int4")


def test_greedy_text_is_the_same_on_both_paths(qlm):
    ids = qlm.tokenizer.encode(PROMPTS[0])
    fast_tokens = greedy(qlm, ids, 24)[0]
    path, qlm.fast = qlm.fast, None
    try:
        assert greedy(qlm, ids, 24)[0] == fast_tokens
    finally:
        qlm.fast = path


def test_a_trace_takes_the_plain_path(qlm):
    """Tracing needs the layers' own captures, so a traced call runs model.py's loop (and fills the trace). Its
    attention is written out by hand there, so its float sums differ from the fused kernel's, and bfloat16
    rounding at the next matrix can turn that into a few hundredths of a logit (NEAR_TIE in test_quant.py)."""
    ids = qlm.tokenizer.encode(PROMPTS[0])
    cache, trace = qlm.new_cache(max_len=len(ids)), Trace()
    traced = qlm.prefill(ids, cache, trace=trace)
    assert len(trace.layers) == qlm.config.n_layers and trace.logits is not None
    assert torch.equal(trace.logits[:, -1], traced)
    assert float((traced - qlm.prefill(ids, qlm.new_cache(max_len=len(ids)))).abs().max()) < 0.5
