"""The bundled SmolLM2-135M-Instruct against transformers on the same weights: float32 on the CPU in `make test`,
any device and dtype under TEACHLLM_DEVICE / TEACHLLM_DTYPE (`make gpu-check`), with the bounds of that dtype
(teachllm.tolerances)."""

import os

import pytest
import torch

import teachllm as tl
from teachllm import bench

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too

PROMPTS = [
    "The three primary colours are",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
]


def test_forward_matches_transformers_over_64_plus_tokens(lm, hf_model, long_prompt, tol):
    ids = torch.tensor([long_prompt], device=lm.device)
    with torch.no_grad():
        ref = hf_model(ids).logits  # [1, S, V]
    err = (lm.forward(ids) - ref).abs().max().item()
    print(f"forward vs transformers over {ids.shape[1]} tokens: max abs error {err:.2e}")
    assert err <= tol.logits


def test_prefill_plus_decode_equals_forward_batch_1(lm, long_prompt, tol):
    full = lm.forward(long_prompt)[0]  # [S, V]
    cache = lm.new_cache(max_len=len(long_prompt))
    split = 24
    got = [lm.prefill(long_prompt[:split], cache)[0]]
    for token in long_prompt[split:]:
        got.append(lm.decode_step(token, cache)[0])
    got = torch.stack(got)  # [S - split + 1, V]
    want = full[split - 1:]
    err = (got - want).abs().max().item()
    print(f"prefill({split}) + {len(long_prompt) - split} decode steps vs forward: max abs error {err:.2e}")
    assert err <= tol.steps
    assert all(tol.same_choice(w, g, "steps") for w, g in zip(want, got, strict=True))
    assert cache.length == len(long_prompt)


def test_prefill_plus_decode_equals_forward_batch_3(lm, long_prompt, tol):
    rows = torch.tensor([long_prompt[:40], long_prompt[10:50], long_prompt[-40:]], device=lm.device)  # [3, 40]
    full = lm.forward(rows)  # [3, 40, V]
    cache = lm.new_cache(max_len=40, batch_size=3)
    got = [lm.prefill(rows[:, :16], cache)]
    for i in range(16, 40):
        got.append(lm.decode_step(rows[:, i], cache))
    got = torch.stack(got, dim=1)  # [3, 25, V]
    want = full[:, 15:]
    err = (got - want).abs().max().item()
    print(f"batch 3: prefill + decode vs forward: max abs error {err:.2e}")
    assert err <= tol.steps
    assert all(tol.same_choice(w, g, "steps") for w, g in zip(want.flatten(0, 1), got.flatten(0, 1), strict=True))


def test_left_padded_batch_equals_each_prompt_alone(lm, tol):
    prompts = [lm.tokenizer.encode(p) for p in PROMPTS]
    alone = [lm.prefill(p, lm.new_cache(max_len=len(p)))[0] for p in prompts]
    cache = lm.new_cache(max_len=max(map(len, prompts)) + 1, batch_size=len(prompts))
    together = lm.prefill(prompts, cache)  # [3, V], left-padded inside
    for b, logits in enumerate(alone):
        assert (together[b] - logits).abs().max() <= tol.steps
    # and one decode step on top of the padding
    nxt = together.argmax(-1)
    stepped = lm.decode_step(nxt, cache)
    for b, p in enumerate(prompts):
        ref = lm.forward(p + [int(nxt[b])])[0, -1]
        assert (stepped[b] - ref).abs().max() <= tol.steps


def test_greedy_equals_transformers_generate(lm, hf_model, greedy, tol, agree_until_a_near_tie):
    """The same tokens; in 16 bits, the same until a near-tie (conftest.agree_until_a_near_tie)."""
    for prompt in PROMPTS:
        ids = lm.tokenizer.encode(prompt)
        ref = bench.hf_greedy(hf_model, ids, 32, exact=False)
        ours = greedy(lm, ids, 32)
        if lm.dtype == torch.float32:
            assert ours == ref, f"{prompt!r}: {lm.tokenizer.decode(ours)!r} != {lm.tokenizer.decode(ref)!r}"
        else:
            assert agree_until_a_near_tie(lm, ids, ref, ours, tol.steps), prompt


def test_captures_agree_with_the_cache_and_the_fast_path(lm, long_prompt, tol):
    ids = long_prompt[:20]
    cache = lm.new_cache(max_len=32)
    trace = tl.Trace()
    traced = lm.prefill(ids, cache, trace=trace)
    plain = lm.prefill(ids, lm.new_cache(max_len=32))
    assert (traced - plain).abs().max() <= tol.logits
    layer = trace.layers[7]
    assert torch.equal(cache.keys(7), layer.k)  # the cache holds exactly the keys the layer computed
    assert torch.equal(cache.values(7), layer.v)
    # the attention output is the probabilities times the values, head by head
    g = lm.config.n_groups
    v_per_head = layer.v.repeat_interleave(g, dim=1)  # [1, n_h, S, d]
    heads = layer.probs @ v_per_head  # [1, n_h, S, d]
    assert (heads - layer.z).abs().max() <= tol.values  # z is each head's output before o_proj
    o_proj = lm.model.layers[7].self_attn.o_proj
    by_hand = o_proj(heads.transpose(1, 2).reshape(1, 20, -1))
    assert torch.allclose(by_hand, layer.attn_out, atol=tol.logits, rtol=tol.rtol)
    assert torch.equal(layer.resid_out, trace.layers[8].resid_in)


def test_decode_step_trace_has_one_query_row(lm, long_prompt):
    cache = lm.new_cache(max_len=32)
    lm.prefill(long_prompt[:10], cache)
    trace = tl.Trace()
    lm.decode_step(long_prompt[10], cache, trace=trace)
    probs = trace.layers[0].probs
    assert probs.shape == (1, lm.config.n_heads, 1, 11)  # one new query against 11 keys
    assert trace.positions.tolist() == [[10]]


def test_step_through_yields_every_stage_and_the_same_logits(lm, long_prompt, tol):
    ids = long_prompt[:12]
    stages = list(lm.step_through(ids))
    names = [s.name for s in stages]
    assert names == ["embedding"] + [f"layer {i}" for i in range(lm.config.n_layers)] + ["final norm", "logits"]
    assert (stages[-1].output - lm.forward(ids)).abs().max() <= tol.values
    cache = lm.new_cache(max_len=16)
    *_, last = lm.step_through(ids, cache)
    assert cache.length == 12
    assert (lm.decode_step(0, cache) - lm.forward(ids + [0])[:, -1]).abs().max() <= tol.steps


def test_the_dispatch_asked_for_is_the_one_used():
    """`make test-avx2` asks for PyTorch's AVX2 kernels (ATEN_CPU_CAPABILITY=avx2); a run that silently kept
    others would test nothing new."""
    asked = os.environ.get("ATEN_CPU_CAPABILITY")
    if asked:
        assert torch.backends.cpu.get_cpu_capability() == asked.upper()
