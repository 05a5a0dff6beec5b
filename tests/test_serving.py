"""The serving engine on a tiny random model: scheduling, block accounting, paging, CacheBlend.

Every check compares with a reference: `lm.generate` run on each request alone, the contiguous
KV cache, a full prefill, or a count done by hand. The bundled model's checks are in
test_serving_model.py.
"""

import json
import math

import pytest
import torch
from tiny_decoder import random_decoder

import teachllm as tl
from teachllm.lm import LanguageModel
from teachllm.serving import (
    BlockManager,
    PagedKVCache,
    Request,
    ServingConfig,
    ServingEngine,
    blend,
    compare_with_contiguous,
    dequantize_int8,
    int8_error,
    precompute_chunk,
    quantize_int8,
    shift_keys,
    speculative_generate,
)
from teachllm.serving.cacheblend import logits_after

EOS = 3


def tiny_lm(seed=0, **overrides):
    """A tiny random decoder with weights large enough for peaked attention and varied greedy choices."""
    model = random_decoder(seed, **{**dict(n_layers=3, max_position_embeddings=256, eos_token_ids=(EOS,)), **overrides})
    return LanguageModel(model, None, name="tiny")


pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]  # see conftest.py


@pytest.fixture(scope="module")
def lm():
    return tiny_lm()


def random_prompts(n, seed, shared=0, lengths=(1, 30)):
    """n prompts of random lengths; with shared > 0 they start with a common prefix of up to `shared` tokens."""
    g = torch.Generator().manual_seed(seed)
    prefix = torch.randint(4, 101, (shared,), generator=g).tolist()
    prompts = []
    for _ in range(n):
        keep = int(torch.randint(0, shared + 1, (1,), generator=g)) if shared else 0
        rest = int(torch.randint(*lengths, (1,), generator=g))
        prompts.append(prefix[:keep] + torch.randint(4, 101, (rest,), generator=g).tolist())
    return prompts


def alone(lm, prompts, params):
    return [lm.generate(p, sp) for p, sp in zip(prompts, params, strict=True)]


def assert_no_leaks(engine):
    bm = engine.block_manager
    assert bm.num_free_blocks == bm.num_blocks
    assert all(b.ref_count == 0 for b in bm.blocks)
    assert not engine.scheduler.running and not engine.scheduler.waiting


# ---- configuration -----------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    (dict(policy="fifo"), "policy"),
    (dict(max_num_seqs=0), "max_num_seqs"),
    (dict(block_size=0), "block_size"),
    (dict(max_num_seqs=8, max_num_batched_tokens=4), "smaller than max_num_seqs"),
    (dict(chunked_prefill=True), "needs a token budget"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ServingConfig(**kwargs)


def test_requests_that_cannot_fit(lm):
    engine = ServingEngine(lm, ServingConfig(block_size=4, num_blocks=4))
    with pytest.raises(ValueError, match="pool holds 16"):
        engine.add_request(list(range(4, 14)), tl.SamplingParams(max_tokens=10))
    with pytest.raises(ValueError, match="context window"):
        engine.add_request(list(range(4, 14)), tl.SamplingParams(max_tokens=250))
    with pytest.raises(ValueError, match="beam search"):
        engine.add_request([5, 6], tl.SamplingParams(num_beams=2))
    with pytest.raises(ValueError, match="token ids"):
        engine.add_request([5, 1000])


# ---- block accounting --------------------------------------------------------------------------
def make_request(i, n_prompt, max_tokens=4, start=10):
    return Request(i, list(range(start, start + n_prompt)), tl.SamplingParams(max_tokens=max_tokens))


def test_fragmentation_against_a_hand_count():
    bm = BlockManager(num_blocks=16, block_size=4, enable_prefix_caching=False)
    requests = [make_request(0, 5, 11), make_request(1, 8, 8), make_request(2, 13, 3)]
    for r in requests:
        bm.allocate(r, r.num_tokens)
        r.num_computed_tokens = r.num_tokens
    # blocks: ceil(5/4) + ceil(8/4) + ceil(13/4) = 2 + 2 + 4 = 8 → 32 slots, 5 + 8 + 13 = 26 used
    usage = bm.usage(requests)
    assert (usage.blocks_used, usage.slots_allocated, usage.slots_used) == (8, 32, 26)
    assert usage.fragmentation == pytest.approx(1 - 26 / 32)  # 0.1875
    # contiguous caches reserve prompt + max_tokens = 16 each: 48 slots for the same 26 tokens
    assert usage.contiguous_slots == 48
    assert usage.contiguous_fragmentation == pytest.approx(1 - 26 / 48)
    assert usage.blocks_free == 8
    for r in requests:
        bm.free(r)
    assert bm.num_free_blocks == 16 and all(b.ref_count == 0 for b in bm.blocks)
    assert bm.usage([]).fragmentation == 0.0


def test_prefix_blocks_are_shared_and_counted_once():
    bm = BlockManager(num_blocks=16, block_size=4)
    a, b = make_request(0, 10), make_request(1, 10)  # the same 10 tokens: 2 full blocks + 2 tokens
    bm.allocate(a, 10)
    a.num_computed_tokens = 10
    bm.seal(a)
    cached = bm.cached_prefix(b)
    assert cached == a.block_table[:2]
    bm.allocate(b, 2, cached)
    assert b.num_computed_tokens == b.num_cached_tokens == 8
    b.num_computed_tokens = 10
    assert [bm.blocks[i].ref_count for i in a.block_table] == [2, 2, 1]
    usage = bm.usage([a, b])
    # 4 physical blocks: 2 shared full ones + a 2-token tail each: 16 slots allocated, 8 + 2 + 2 used
    assert (usage.blocks_used, usage.blocks_shared, usage.slots_allocated, usage.slots_used) == (4, 2, 16, 12)
    assert usage.fragmentation == pytest.approx(1 - 12 / 16)
    assert bm.snapshot([a, b])["ref_counts"] == {a.block_table[0]: 2, a.block_table[1]: 2,
                                                 a.block_table[2]: 1, b.block_table[2]: 1}


def test_prompt_on_a_block_boundary_recomputes_its_last_block():
    bm = BlockManager(num_blocks=8, block_size=4)
    a, b = make_request(0, 8), make_request(1, 8)
    bm.allocate(a, 8)
    a.num_computed_tokens = 8
    bm.seal(a)
    # both blocks are full and known, but one token must be computed to get logits: only block 0 is reused
    assert bm.cached_prefix(b) == a.block_table[:1]


def test_prefix_outlives_its_request_until_evicted():
    bm = BlockManager(num_blocks=3, block_size=4)
    a = make_request(0, 9)
    bm.allocate(a, 9)
    a.num_computed_tokens = 9
    bm.seal(a)
    full = a.block_table[:2]
    bm.free(a)
    assert bm.num_free_blocks == 3 and bm.usage([]).blocks_cached_free == 2
    later = make_request(1, 9)
    assert bm.cached_prefix(later) == full  # found after its request finished
    other = make_request(2, 12, start=50)  # different tokens needing all 3 blocks: evicts the cached prefix
    bm.allocate(other, 12)
    bm.free(other)
    assert bm.cached_prefix(make_request(3, 9)) == []


def test_paged_cache_reads_through_the_block_table(lm):
    pool = PagedKVCache(lm.config, num_blocks=8, block_size=4, dtype=lm.dtype, device=lm.device)
    ids = torch.randint(4, 101, (1, 10))
    table = [6, 2, 5]
    with torch.no_grad():
        lm.model(ids, pool.view([table], [0], [10]))
    cache = lm.new_cache(max_len=10)
    lm.prefill(ids, cache)
    for layer in range(lm.config.n_layers):
        k, v = pool.gather(layer, table, 10)  # [n_kv, 10, d]
        torch.testing.assert_close(k, cache.keys(layer)[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(v, cache.values(layer)[0], atol=1e-5, rtol=0)
    assert pool.k[:, [0, 1, 3, 4, 7]].abs().max() == 0  # blocks not in the table were never written


# ---- the paged cache against the contiguous one ------------------------------------------------
@pytest.mark.parametrize("window", [None, 5])
@pytest.mark.parametrize("block_size", [1, 3, 4, 16])
@pytest.mark.parametrize("batched", [False, True])
def test_paged_logits_equal_contiguous(block_size, window, batched):
    lm = tiny_lm(sliding_window=window) if window else tiny_lm()
    prompts = random_prompts(3, seed=1, lengths=(3, 14))
    base = torch.randint(4, 101, (12,), generator=torch.Generator().manual_seed(9)).tolist()
    prompts = [base, base + prompts[0], base[:8]] + prompts[1:]  # a 12-token prompt (on a boundary for 1, 3, 4)
    report = compare_with_contiguous(lm, prompts, block_size, n_decode=5, batched=batched)
    assert report.max_abs_error <= 1e-4
    if block_size <= 4:
        assert report.cached_tokens[1] == 12  # the second prompt found the first one's blocks


# ---- the engine against each request alone ----------------------------------------------------
CONFIGS = {
    "continuous": dict(policy="continuous", max_num_seqs=4, block_size=4, num_blocks=64),
    "static": dict(policy="static", max_num_seqs=4, block_size=4, num_blocks=64),
    "chunked": dict(policy="continuous", max_num_seqs=4, block_size=3, num_blocks=64, max_num_batched_tokens=8,
                    chunked_prefill=True),
    "budget-no-chunks": dict(policy="continuous", max_num_seqs=3, block_size=8, num_blocks=32,
                             max_num_batched_tokens=20),
    "small-pool": dict(policy="continuous", max_num_seqs=6, block_size=4, num_blocks=15),
    "no-prefix-cache": dict(policy="continuous", max_num_seqs=5, block_size=2, num_blocks=80,
                            enable_prefix_caching=False),
}


FUSED = ("continuous", "chunked", "small-pool")  # also run with fast=True: the fused step (fastpath/fused_float.py)


@pytest.mark.parametrize("name, fast", [(name, None) for name in sorted(CONFIGS)] + [(name, True) for name in FUSED])
def test_greedy_engine_equals_each_request_alone(lm, name, fast):
    prompts = random_prompts(10, seed=2, shared=13, lengths=(1, 12))
    stop_at = lm.generate(prompts[0], tl.SamplingParams(temperature=0, max_tokens=6)).token_ids[-1]
    params = [tl.SamplingParams(temperature=0, max_tokens=int(n), stop_token_ids=[stop_at] if i % 3 == 0 else [],
                                repetition_penalty=1.3 if i % 4 == 1 else 1.0)
              for i, n in enumerate(torch.randint(1, 20, (10,), generator=torch.Generator().manual_seed(3)))]
    expected = alone(lm, prompts, params)  # the reference loop (generate.py) with model.py's forward
    engine = ServingEngine(lm, ServingConfig(**CONFIGS[name]), fast=fast)
    run = engine.run(prompts, params)
    if fast:
        assert engine.forward_path.startswith("the fused step"), engine.forward_path
    else:  # the CPU's default
        assert engine.forward_path.startswith("model.py's forward (the model is on cpu"), engine.forward_path
    for got, want in zip(run.outputs, expected, strict=True):
        assert (got.token_ids, got.finish_reason, got.stop_reason) == (want.token_ids, want.finish_reason,
                                                                       want.stop_reason)
    assert any(o.stop_reason == stop_at for o in run.outputs)  # the stop rules of Sequence fired
    assert_no_leaks(engine)
    if name == "small-pool":
        assert sum(len(r.preempted) for r in run.timeline) > 0  # the pool was too small: requests were preempted
    if name in ("continuous", "small-pool"):
        assert engine.block_manager.num_hit_tokens > 0  # the shared prefix was found in the cache


@pytest.mark.parametrize("fast", [None, True])
def test_seeded_sampling_equals_each_request_alone(lm, fast):
    prompts = random_prompts(6, seed=4, lengths=(2, 10))
    params = [tl.SamplingParams(temperature=0.9, top_k=20, max_tokens=8, seed=100 + i) for i in range(6)]
    expected = alone(lm, prompts, params)
    run = ServingEngine(lm, ServingConfig(max_num_seqs=3, block_size=4, num_blocks=32), fast=fast).run(prompts, params)
    assert [o.token_ids for o in run.outputs] == [o.token_ids for o in expected]


def test_the_forward_switch(lm, monkeypatch):
    config = ServingConfig(max_num_seqs=2, block_size=4, num_blocks=16)
    params = tl.SamplingParams(temperature=0, max_tokens=3)
    engine = ServingEngine(lm, config, fast=False)
    engine.run([[5, 6, 7]], params)
    assert engine.forward_path == "model.py's forward (fast=False)"
    monkeypatch.setenv("TEACHLLM_PLAIN_DECODE", "1")
    engine = ServingEngine(lm, config)
    engine.run([[5, 6, 7]], params)
    assert "TEACHLLM_PLAIN_DECODE is set" in engine.forward_path
    with pytest.raises(ValueError, match="fast='yes': give True"):
        ServingEngine(lm, config, fast="yes")


# ---- what the scheduler did --------------------------------------------------------------------
def test_timeline_adds_up_and_respects_the_limits(lm):
    prompts = random_prompts(8, seed=5, lengths=(5, 30))
    params = tl.SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    config = ServingConfig(max_num_seqs=3, block_size=4, num_blocks=64, max_num_batched_tokens=10,
                           chunked_prefill=True)
    run = ServingEngine(lm, config).run(prompts, params)
    for record in run.timeline:
        assert record.num_tokens == len(record.decode_ids) + sum(n for _, _, n in record.prefill)
        assert record.num_tokens <= 10
        assert record.num_running <= 3
        assert 0 <= record.fragmentation < 1
    chunks = [(rid, start, n) for r in run.timeline for rid, start, n in r.prefill]
    assert any(start > 0 for _, start, _ in chunks)  # some prompt was prefilled in several chunks
    for i, prompt in enumerate(prompts):  # the chunks of each prompt cover it exactly once, in order
        mine = [(start, n) for rid, start, n in chunks if rid == i]
        assert [s for s, _ in mine] == [sum(n for _, n in mine[:k]) for k in range(len(mine))]
        assert sum(n for _, n in mine) == len(prompt)
    json.dumps(run.to_dict())  # plain data, for the viz layer


def test_static_batching_admits_only_when_idle(lm):
    prompts = random_prompts(9, seed=6, lengths=(2, 8))
    params = [tl.SamplingParams(temperature=0, max_tokens=20 if i % 3 == 0 else 2, ignore_eos=True) for i in range(9)]
    runs = {policy: ServingEngine(lm, ServingConfig(policy=policy, max_num_seqs=3, block_size=4, num_blocks=64))
            .run(prompts, params) for policy in ("static", "continuous")}
    static = runs["static"].timeline
    admissions = [r.index for r in static if r.prefill]
    assert len(admissions) == 3  # three batches of three
    for i in admissions[1:]:
        assert static[i - 1].num_running == 0  # a new batch starts only when the last one has finished
    cont = runs["continuous"].timeline
    assert any(r.prefill and r.decode_ids for r in cont)  # continuous: requests join while others decode
    # the robust measure: fewer iterations, and short requests finish in fewer iterations
    assert runs["continuous"].iterations < runs["static"].iterations
    short = [i for i in range(9) if i % 3]
    assert (runs["continuous"].summary(short)["latency_iterations"]["mean"]
            < runs["static"].summary(short)["latency_iterations"]["mean"])
    assert [o.token_ids for o in runs["static"].outputs] == [o.token_ids for o in runs["continuous"].outputs]


def test_block_tables_are_recorded_as_plain_data(lm):
    engine = ServingEngine(lm, ServingConfig(max_num_seqs=2, block_size=4, num_blocks=16))
    run = engine.run(random_prompts(3, seed=7, lengths=(3, 9)), tl.SamplingParams(temperature=0, max_tokens=5))
    snapshot = run.timeline[0].block_tables
    assert set(snapshot) == {"block_size", "tables", "computed", "ref_counts", "cached_free", "num_free"}
    for rid, table in snapshot["tables"].items():
        assert len(table) == -(-snapshot["computed"][rid] // 4)  # exactly the blocks its tokens need
    assert run.timeline[-1].block_tables["tables"] == {}


# ---- CacheBlend --------------------------------------------------------------------------------
def test_shifted_keys_equal_keys_computed_at_the_offset(lm):
    a, b = random_prompts(2, seed=8, lengths=(5, 9))
    full = lm.new_cache(max_len=len(a) + len(b))
    lm.prefill(a + b, full)
    chunk = precompute_chunk(lm, b)
    moved = shift_keys(lm, chunk.k, len(a))  # [L, n_kv, n, d]
    # layer 0's keys depend on the token alone: moved to its offset, the chunk's keys are the full prefill's
    torch.testing.assert_close(moved[0], full.keys(0)[0, :, len(a):], atol=1e-5, rtol=1e-5)


def test_blend_at_full_recompute_equals_full_prefill_and_counts_its_compute(lm):
    chunk_ids = random_prompts(3, seed=9, lengths=(6, 12))
    suffix = [7, 8, 9, 10]
    reference = lm.forward(sum(chunk_ids, []) + suffix)[0, -len(suffix):]
    chunks = [precompute_chunk(lm, ids) for ids in chunk_ids]
    N, L = sum(map(len, chunk_ids)), lm.config.n_layers
    exact = blend(lm, chunks, ratio=1.0)
    torch.testing.assert_close(logits_after(lm, exact.k, exact.v, suffix), reference, atol=1e-4, rtol=1e-4)
    assert exact.recompute_fraction == 1.0
    reuse = blend(lm, chunks, ratio=0.0)
    assert reuse.recompute_fraction == 0.0
    assert (logits_after(lm, reuse.k, reuse.v, suffix) - reference).abs().max() > 1e-2  # reuse alone is not exact
    part = blend(lm, chunks, ratio=0.25)
    n = round(0.25 * N)
    assert len(part.selected) == n
    assert part.recompute_fraction == pytest.approx((2 * N + (L - 2) * n) / (L * N))
    # the chosen tokens are those whose K/V deviated most at layer 1
    assert set(part.selected) == set(part.deviation.topk(n).indices.tolist())


def test_blend_quality_is_measured_in_float64_whatever_the_kernels():
    """compare_logits against the definitions, in float64 (reference-semantics.md: softmax, KL, perplexity =
    exp(mean NLL)): a float32 log-softmax over a vocabulary-sized row rounds by about 1e-6 per position, and
    differently under AVX2 and AVX-512 kernels (its sums run in another order); that moved chapter 13's
    perplexity in its fourth digit, and a KL of two near-equal rows came out below 0 ("-0.0000")."""
    from teachllm.serving.cacheblend import compare_logits

    g = torch.Generator().manual_seed(0)
    reference = 6 * torch.randn(27, 49152, generator=g)  # [Q, V]: logits of the chapter's size
    nearly = reference + 1e-5 * torch.randn(27, 49152, generator=g)  # [Q, V]: what another summation order gives
    suffix = torch.randint(0, 49152, (27,), generator=g).tolist()

    def by_definition(logits):
        lp = torch.log_softmax(logits.double(), dim=-1)  # [Q, V]
        return lp, math.exp(float(-lp[:-1].gather(1, torch.tensor(suffix[1:])[:, None]).mean()))

    ref_lp, ref_ppl = by_definition(reference)
    lp, ppl = by_definition(nearly)
    kl = float((ref_lp.exp() * (ref_lp - lp)).sum(-1).mean())
    got = compare_logits(reference, nearly, suffix)
    assert got["kl"] >= 0 and got["kl"] == pytest.approx(kl, rel=1e-6, abs=1e-15)
    assert got["ppl_full"] == pytest.approx(ref_ppl, rel=1e-12) and got["ppl"] == pytest.approx(ppl, rel=1e-12)
    same = compare_logits(reference, reference.clone(), suffix)
    assert same["kl"] == 0 and same["ppl"] == same["ppl_full"] and same["top1_agreement"] == 1

# ---- speculative decoding and the int8 KV cache ------------------------------------------------
@pytest.mark.parametrize("draft", [1, 2, [0, 2], 3])
def test_speculative_decoding_gives_the_greedy_tokens(lm, draft):
    prompt = random_prompts(1, seed=10, lengths=(4, 9))[0]
    result = speculative_generate(lm, prompt, max_tokens=15, draft_layers=draft, gamma=3)
    greedy = lm.generate(prompt, tl.SamplingParams(temperature=0, max_tokens=15, ignore_eos=True))
    assert result.token_ids == greedy.token_ids
    calls = []
    forward = lm.model.forward
    lm.model.forward = lambda *args, **kwargs: calls.append(args[0].shape[1]) or forward(*args, **kwargs)
    try:  # count the target's forward calls independently of the result's own bookkeeping
        again = speculative_generate(lm, prompt, max_tokens=15, draft_layers=draft, gamma=3)
    finally:
        del lm.model.forward
    assert again.token_ids == greedy.token_ids
    assert calls == [len(prompt)] + [4] * again.target_calls  # one prefill, then γ + 1 = 4 tokens per check
    assert again.accepted <= again.proposed == 3 * again.target_calls
    # every round yields its accepted proposals and one token of the target's: 1 + 15 − 1 ≤ that total
    assert again.accepted + again.target_calls >= 15 - 1
    assert again.rejected <= again.target_calls
    full_rounds = again.target_calls - again.rejected  # rounds that accepted all 3 proposals
    assert again.accepted >= 3 * full_rounds
    if draft == 3:  # a draft with every layer is the target: every proposal is accepted
        assert result.acceptance_rate == result.judged_acceptance == 1.0 and result.rejected == 0
        assert result.target_calls == math.ceil((15 - 1) / 4)  # γ + 1 = 4 tokens per call


def test_expected_tokens_per_call_is_the_geometric_sum():
    assert tl.serving.expected_tokens_per_call(0.0, 4) == 1.0  # nothing accepted: the target's own token
    assert tl.serving.expected_tokens_per_call(1.0, 4) == 5.0  # everything accepted: γ + 1
    alpha, gamma = 0.6, 3
    assert tl.serving.expected_tokens_per_call(alpha, gamma) == pytest.approx((1 - alpha**4) / (1 - alpha))


def test_int8_quantisation_error_is_bounded_by_half_a_step():
    x = torch.randn(3, 5, 16) * torch.rand(3, 5, 1) * 10
    q, scale = quantize_int8(x)
    assert q.dtype == torch.int8 and int(q.abs().max()) == 127
    assert ((dequantize_int8(q, scale) - x).abs() <= scale / 2 + 1e-6).all()


def test_int8_kv_cache_is_close_to_fp32_in_a_quarter_of_the_memory(lm):
    prompt = random_prompts(1, seed=11, lengths=(6, 12))[0]
    result = int8_error(lm, prompt, n_decode=8)
    d = lm.config.head_dim
    assert result["memory_ratio"] == pytest.approx((d + 4) / (4 * d))  # 5/16 for d = 16, 17/64 for d = 64
    scale = float(lm.forward(prompt).abs().max())
    assert 0 < result["max_abs_logit_diff"] < 0.1 * scale  # rounding costs something, but little
    assert result["mean_kl"] < 0.01 and result["top1_agreement"] >= 0.75
