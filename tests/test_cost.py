"""FLOP and byte counts against references: PyTorch's FLOP counter, the KV cache's own size, the model's
parameters, the lecture's closed formula on a model of exactly its shape, and the roofline's definition.

`torch.utils.flop_counter.FlopCounterMode` counts matmul-like ops (mm, addmm, bmm, and the SDPA kernels
it knows) as 2·m·k·n and everything else as 0. On the engine's fast path the attention runs in
PyTorch's fused kernel, which this CPU build does not register (it counts 0); the traced path
(`trace=tl.Trace()`) runs `attention_by_hand`, whose QKᵀ and ·V are plain batched matmuls over all T
keys. So: under trace the counter sees every matmul and must match the analytic total; on the fast
path it must match the analytic count minus attention (plus the kernel's count, if it registers one).
"""

import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import teachllm as tl
from teachllm import bench, cost, roofline, timing
from teachllm.model import Transformer

LINEAR_OPS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def count(fn):
    """Run fn under FlopCounterMode; return {module path: {op name: FLOPs}}."""
    counter = FlopCounterMode(display=False)
    with counter:
        fn()
    return {module: {str(op): n for op, n in ops.items()} for module, ops in counter.get_flop_counts().items()}


def families(counts):
    """Measured FLOPs split by where they happen: attention (inside each attention module but outside its
    four projections: QKᵀ and ·V, whatever aten op ran them) and linear (everything else)."""
    total = sum(counts["Global"].values())
    attention = 0
    for module, ops in counts.items():
        if module.endswith(".self_attn"):
            projections = sum(sum(counts.get(f"{module}.{p}", {}).values())
                              for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
            attention += sum(ops.values()) - projections
    return {"attention": attention, "linear": total - attention, "total": total}


def per_op(counts, n_layers):
    """Measured FLOPs of each projection summed over the layers, and of the LM head."""
    out = {}
    for op in LINEAR_OPS:
        block = "self_attn" if op in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
        out[op] = sum(sum(counts[f"Transformer.layers.{i}.{block}.{op}"].values()) for i in range(n_layers))
    out["lm_head"] = sum(counts["Transformer.lm_head"].values())
    return out


def assert_close(analytic, measured, rel=0.01):
    assert abs(analytic - measured) <= rel * measured, f"analytic {analytic:,} vs measured {measured:,}"


def check_against_counter(expected: cost.FlopCount, counts, n_layers):
    """Total, families and each projection: the analytic count within 1% of the counter's."""
    measured = families(counts)
    assert_close(expected.total, measured["total"])
    assert_close(expected.attention, measured["attention"])
    assert_close(expected.linear, measured["linear"])
    ops = expected.by_op()
    for op, n in per_op(counts, n_layers).items():
        assert_close(ops[op], n)


@pytest.mark.parametrize("batch, seq_len", [(1, 37), (2, 19)])
def test_prefill_flops_match_the_counter_under_trace(lm, batch, seq_len):
    ids = torch.randint(0, lm.config.vocab_size, (batch, seq_len), generator=torch.Generator().manual_seed(0))
    counts = count(lambda: lm.prefill(ids, lm.new_cache(max_len=64, batch_size=batch), trace=tl.Trace()))
    check_against_counter(cost.prefill_flops(lm.config, seq_len, batch), counts, lm.config.n_layers)


@pytest.mark.parametrize("batch", [1, 3])
def test_decode_flops_match_the_counter_under_trace(lm, batch):
    """A decode step after a 17-token prompt sees T = 18 keys, the new token included."""
    cache = lm.new_cache(max_len=64, batch_size=batch)
    lm.prefill(torch.randint(0, 1000, (batch, 17), generator=torch.Generator().manual_seed(1)), cache)
    counts = count(lambda: lm.decode_step([7] * batch, cache, trace=tl.Trace()))
    assert cache.length == 18
    check_against_counter(cost.decode_flops(lm.config, 18, batch), counts, lm.config.n_layers)


def test_fast_path_counts_the_linear_layers_and_what_it_knows_of_attention(lm):
    """Without a trace the counter sees the projections exactly; the fused attention kernel counts
    0 on this CPU build, or its 4·b·s·T·n_h·d where PyTorch registers it."""
    ids = list(range(100, 137))
    counts = count(lambda: lm.prefill(ids, lm.new_cache(max_len=64)))
    expected = cost.prefill_flops(lm.config, 37)
    measured = families(counts)
    assert_close(expected.linear, measured["linear"])
    assert measured["attention"] == 0 or abs(measured["attention"] - expected.attention) <= 0.01 * expected.attention
    cache = lm.new_cache(max_len=64)
    lm.prefill(ids, cache)
    counts = count(lambda: lm.decode_step(5, cache))
    assert_close(cost.decode_flops(lm.config, 38).linear, families(counts)["linear"])


def test_forward_projects_every_position(lm):
    ids = list(range(200, 223))
    counts = count(lambda: lm.forward(ids, trace=tl.Trace()))
    expected = cost.prefill_flops(lm.config, 23, all_positions=True)
    check_against_counter(expected, counts, lm.config.n_layers)
    assert expected.lm_head == 23 * cost.prefill_flops(lm.config, 23).lm_head


@pytest.mark.parametrize("seq_len, low, high", [(37, 0.005, 0.02), (300, 0.07, 0.13)])
def test_attention_share_of_prefill(lm, seq_len, low, high):
    """The issue's claim: QKᵀ and ·V are about 1% of prefill matmul FLOPs at 37 tokens and about 10%
    at 300 (measured: 1.2% and 8.9%). The share grows with s because attention is 4·b·s²·n_h·d."""
    analytic = cost.prefill_flops(lm.config, seq_len).attention_fraction
    assert low <= analytic <= high
    ids = torch.randint(0, lm.config.vocab_size, (1, seq_len), generator=torch.Generator().manual_seed(2))
    measured = families(count(lambda: lm.prefill(ids, lm.new_cache(max_len=seq_len), trace=tl.Trace())))
    assert abs(measured["attention"] / measured["total"] - analytic) <= 0.01 * analytic


# ---- the lecture's formula ---------------------------------------------------------------------
def textbook_config(intermediate_size):
    """n_kv = n_h and n_h·d = h = 48, as the lecture's GPT-style layer assumes."""
    return tl.ModelConfig(vocab_size=101, hidden_size=48, intermediate_size=intermediate_size, n_layers=2,
                          n_heads=4, n_kv_heads=4, head_dim=12, max_position_embeddings=64)


def test_textbook_formula_is_the_closed_form():
    c = textbook_config(4 * 48)
    b, s, h, T = 3, 10, 48, 25
    assert cost.textbook_flops(c, s, b).per_layer == 24 * b * s * h**2 + 4 * b * s**2 * h
    assert cost.textbook_flops(c, 1, b, context_len=T).per_layer == 24 * b * h**2 + 4 * b * T * h


def test_textbook_and_exact_agree_on_a_textbook_shaped_model():
    """Where the shapes are the textbook's (n_kv = n_h, n_h·d = h, f = 4h) the attention half of the
    layer and the up/down matrices agree op by op; the exact count has one matrix more, SwiGLU's gate
    (8·b·s·h²), so the layers differ by exactly that. With f = 8h/3 (SwiGLU's three matrices then hold
    as many weights as the two of a 4h MLP, the choice Llama's width follows) the whole layer is again
    24·b·s·h² + 4·b·s²·h. The LM head is outside the textbook's count; the counter on a real model of
    that shape is the reference for the exact side."""
    b, s = 2, 11
    c = textbook_config(4 * 48)
    exact, book = cost.prefill_flops(c, s, b), cost.textbook_flops(c, s, b)
    for op in ("q_proj", "k_proj", "v_proj", "qk", "pv", "o_proj", "up_proj", "down_proj"):
        assert exact.per_op[op] == book.per_op[op], op
    assert exact.per_layer - book.per_layer == exact.per_op["gate_proj"] == 8 * b * s * 48**2
    torch.manual_seed(0)
    tiny = tl.LanguageModel(Transformer(c).eval(), tokenizer=None)
    ids = torch.randint(0, c.vocab_size, (b, s))
    measured = families(count(lambda: tiny.prefill(ids, tiny.new_cache(max_len=s, batch_size=b), trace=tl.Trace())))
    assert measured["total"] == exact.total
    assert measured["total"] - c.n_layers * exact.per_op["gate_proj"] - exact.lm_head == book.total

    c = textbook_config(8 * 48 // 3)
    assert cost.prefill_flops(c, s, b).per_layer == cost.textbook_flops(c, s, b).per_layer


def test_comparison_with_textbook_explains_each_gap(lm):
    rows = {r["op"]: r for r in cost.compare_with_textbook(lm.config, 37)}
    assert rows["k_proj"]["ratio"] == pytest.approx(lm.config.n_kv_heads / lm.config.n_heads)
    assert rows["up_proj"]["ratio"] == pytest.approx(lm.config.intermediate_size / (4 * lm.config.hidden_size))
    assert rows["gate_proj"]["textbook"] == 0 and "SwiGLU" in rows["gate_proj"]["why"]
    assert rows["total"]["exact"] == cost.prefill_flops(lm.config, 37).total
    assert "GQA" in cost.format_comparison(list(rows.values()))
    assert "lm_head" in str(cost.prefill_flops(lm.config, 37))


# ---- bytes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("max_len, batch, dtype", [(16, 1, torch.float32), (100, 2, torch.float32),
                                                   (64, 3, torch.bfloat16), (8, 5, torch.float16)])
def test_kv_cache_bytes_equal_the_cache_allocation(lm, max_len, batch, dtype):
    cache = tl.KVCache(lm.config, max_len, batch, dtype=dtype, device=lm.device)  # as lm.new_cache builds, any dtype
    assert cost.kv_cache_bytes(lm.config, max_len, batch, dtype) == cache.bytes_allocated
    assert cost.kv_cache_bytes(lm, max_len, batch) == lm.new_cache(max_len, batch).bytes_allocated  # lm's own dtype


def test_kv_cache_bytes_equal_the_bytes_used_after_prefill_and_decode(lm):
    cache = lm.new_cache(max_len=40, batch_size=2)
    lm.prefill([[5, 6, 7, 8], [9, 10]], cache)
    lm.decode_step([11, 12], cache)
    lm.decode_step([13, 14], cache)
    assert cache.bytes_used == cost.kv_cache_bytes(lm, cache.length, 2) == cost.kv_cache_bytes(lm, 6, 2)


def test_weight_bytes_equal_the_parameters(lm):
    params = sum(p.numel() * p.element_size() for p in lm.model.parameters())  # a tied matrix is listed once
    assert cost.weight_bytes(lm.config, lm.dtype) == cost.weight_bytes(lm) == params
    assert cost.weight_bytes(lm.config, torch.bfloat16) == cost.weight_bytes(lm.config, torch.float32) // 2


def test_batch_one_decode_is_about_one_flop_per_byte_in_16_bit(lm):
    """The reference's rule of thumb: matrix–vector work reads each 2-byte weight for 2 FLOPs. A batch of
    8 reuses every weight 8 times, so the intensity grows almost 8-fold (the KV reads do not shrink)."""
    one = cost.decode_cost(lm.config, 64, 1, torch.bfloat16)
    assert 0.9 <= one.intensity <= 1.1
    assert one.weight_bytes == cost.weight_bytes(lm.config, torch.bfloat16)
    assert one.kv_read_bytes == cost.kv_cache_bytes(lm.config, 64, 1, torch.bfloat16)
    eight = cost.decode_cost(lm.config, 64, 8, torch.bfloat16)
    assert 7 <= eight.intensity / one.intensity <= 8
    assert cost.prefill_cost(lm, 512).intensity > 100 * cost.decode_cost(lm, 512).intensity


# ---- roofline ----------------------------------------------------------------------------------
def test_roofline_is_the_lower_of_the_two_roofs():
    h100 = roofline.KNOWN_DEVICES["H100 SXM"]
    assert (h100.peak_flops, h100.bandwidth) == (989e12, 3.35e12)
    for intensity in (0.5, 1, 10, h100.ridge, 1000, 1e5):
        roof = h100.attainable(intensity)
        assert roof <= h100.peak_flops
        assert roof == min(h100.peak_flops, h100.bandwidth * intensity)
    assert h100.attainable(1.0) == h100.bandwidth  # memory-bound below the ridge: 1 FLOP per byte
    assert h100.attainable(10 * h100.ridge) == h100.peak_flops
    assert roofline.attainable(100.0, 10.0, 2.0) == 20.0
    # the bound names the roof that is lower: bandwidth × intensity below the ridge, the peak above it
    for intensity in (0.5, 10, 294, 296, 1e4):
        below = h100.bandwidth * intensity < h100.peak_flops
        assert h100.bound(intensity) == ("memory bandwidth" if below else "compute")


def test_device_probe_returns_positive_numbers():
    measured = roofline.measure_device("cpu", reps=2)
    assert measured.peak_flops > 0 and measured.bandwidth > 0 and measured.ridge > 0
    assert measured.source == "measured"


def test_timed_returns_the_median_and_keeps_to_its_budget(monkeypatch):
    """A fake clock makes the timed runs last 3, 1 and 2 s: the median is 2 and warm-up runs are not timed.
    With a budget, timing stops once the runs so far add up to it: 3.5 s stops after [3, 1], 2.5 s after [3]."""
    def fake_clock(durations):
        ticks = iter([t for d in durations for t in (0.0, d)])
        return lambda device="cpu": next(ticks)

    calls = []
    monkeypatch.setattr(timing, "clock", fake_clock([3.0, 1.0, 2.0]))
    assert timing.timed(lambda: calls.append(1), "cpu", reps=3, warmup=2) == 2.0
    assert len(calls) == 5
    monkeypatch.setattr(timing, "clock", fake_clock([3.0, 1.0]))
    assert timing.timed(lambda: None, "cpu", reps=3, warmup=0, budget_s=3.5) == 2.0
    monkeypatch.setattr(timing, "clock", fake_clock([3.0]))
    assert timing.timed(lambda: None, "cpu", reps=3, warmup=0, budget_s=2.5) == 3.0


def tiny_pair(tied=False):
    """A tiny random Llama in teachllm and in transformers, the same weights in both (bench.random_models)."""
    config = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4,
                            n_kv_heads=2, head_dim=12, max_position_embeddings=128, tie_word_embeddings=tied,
                            bos_token_id=1, eos_token_ids=(2,))
    return bench.random_models(config, torch.device("cpu"), torch.float32)


@pytest.mark.parametrize("tied", [False, True])
def test_random_models_hold_the_same_weights(tied):
    lm, hf = tiny_pair(tied)
    ids = torch.randint(0, 97, (2, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(lm.forward(ids), hf(ids).logits, atol=1e-4, rtol=1e-4)


def test_measure_phases_returns_points_with_their_costs():
    lm, _ = tiny_pair()
    points = roofline.measure_phases(lm, prefill_lengths=(8,), decode_batches=(1, 2), decode_contexts=(16,),
                                 device=roofline.KNOWN_DEVICES["T4"], reps=1, warmup=0)
    assert [(p.phase, p.batch_size, p.length) for p in points] == [("prefill", 1, 8), ("decode", 1, 16),
                                                                     ("decode", 2, 16)]
    for p in points:
        assert p.seconds > 0 and p.attainable_flops <= roofline.KNOWN_DEVICES["T4"].peak_flops
        assert {"intensity", "achieved_flops", "tokens_per_s"} <= set(p.to_dict())
    assert points[1].flops == cost.decode_flops(lm.config, 16).total


def test_bench_smoke_on_a_tiny_random_model(tmp_path):
    """The benchmark's pieces on a tiny random model: the JSON keys are there, and transformers with the
    copied weights generates the same greedy tokens as teachllm (so the two ran the same model)."""
    lm, hf = tiny_pair()
    settings = bench.Settings(new_tokens=4, reps=1, batch_sizes=(1, 2), batch_steps=2, prefill_lengths=(8,),
                              decode_contexts=(16,), budget_s=0.1)
    report = bench.run(lm, hf, list(range(3, 14)), settings, "tiny", roof=roofline.KNOWN_DEVICES["T4"])
    report = json.loads(json.dumps(report))
    assert {"setup", "roofline", "greedy", "batch_decode", "prefill", "decode_context", "elapsed_s"} <= set(report)
    assert report["greedy"]["same_tokens"]
    assert {"ttft_s", "decode_tokens_per_s"} <= set(report["greedy"]["teachllm"])
    assert {"decode_ratio", "ttft_ratio"} <= set(report["greedy"])
    assert [r["batch_size"] for r in report["batch_decode"]] == [1, 2]
    assert {"tokens_per_s", "ratio_to_batch_1", "predicted_ratio"} <= set(report["batch_decode"][1])
    assert "teachllm ÷ transformers" in bench.format_report(report)


@pytest.mark.parametrize("op", ["_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                                "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"])
def test_the_flop_counter_counts_every_fused_attention_kernel_with_grouped_query_heads(lm, op):
    """cost.flop_counter() gives each fused kernel (the CPU's, and the three a GPU may pick) the count of
    layer_flops' qk + pv, for grouped-query shapes too: 9 query heads on 3 KV heads, as the bundled model has.
    The formula is called as the counter calls it, on the shapes of meta tensors (no GPU needed)."""
    if not hasattr(torch.ops.aten, op):
        pytest.skip(f"this torch has no {op}")  # the four exist from torch 2.5 on
    c, s, T = lm.config, 7, 20
    q = torch.empty(2, c.n_heads, s, c.head_dim, device="meta")
    k = v = torch.empty(2, c.n_kv_heads, T, c.head_dim, device="meta")
    formula = cost.flop_counter().flop_registry[getattr(torch.ops.aten, op)]
    per_layer = cost.layer_flops(c, s, T, batch_size=2)
    assert formula(q, k, v, None, out_val=None) == per_layer["qk"] + per_layer["pv"]
