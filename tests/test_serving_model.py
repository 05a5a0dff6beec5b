"""The serving engine on the bundled SmolLM2-135M: paged == contiguous, engine == each request alone,
continuous batching beats static batching on the clock, and CacheBlend trades quality for compute."""

import pytest
import torch

import teachllm as tl
from teachllm.serving import ServingConfig, ServingEngine, compare_with_contiguous, quality_table
from teachllm.serving.parity import contiguous_logits
from teachllm.serving.workload import DOCUMENTS, QUESTION, compare_batching, mixed_workload

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]  # see conftest.py


def chat(lm, question):
    return lm.tokenizer.apply_chat_template([{"role": "user", "content": question}])


@pytest.fixture(scope="module")
def parity_prompts(lm, long_prompt):
    """16 and 12 tokens end on a block boundary (12 not for block size 16); 21 shares 16 with the first."""
    ids = long_prompt
    prompts = [ids[:16], ids[:16] + ids[40:45], ids[:12], ids[20:27]]
    return prompts, [contiguous_logits(lm, p, 3) for p in prompts]


@pytest.mark.parametrize("block_size", [1, 4, 16])
@pytest.mark.parametrize("batched", [False, True])
def test_paged_logits_equal_contiguous(lm, parity_prompts, block_size, batched, tol):
    prompts, reference = parity_prompts
    report = compare_with_contiguous(lm, prompts, block_size, n_decode=3, batched=batched, reference=reference)
    assert report.max_abs_error <= tol.logits
    assert report.cached_tokens[1] == 16  # the shared prefix was read from the first prompt's blocks
    if not batched and lm.device.type == "cpu":  # one sequence per call, as the reference: the paging alone
        uncached = [error for error, cached in zip(report.errors, report.cached_tokens, strict=True) if cached == 0]
        assert uncached and all(error == 0.0 for error in uncached)  # bit for bit (chapter 12 says so)


def test_continuous_batching_gives_each_request_its_own_greedy_tokens(lm, tol, agree_until_a_near_tie):
    """Each request's tokens are those it gets alone; in 16 bits, until a near-tie (batches of another shape add in
    another order, and 8 bits may tip a tie either way)."""
    prompts = [chat(lm, "What is the capital of France?"), "The three primary colours are",
               chat(lm, "Name a fruit."), "def add(a, b):", chat(lm, "Say hello in Spanish.")]
    params = [tl.SamplingParams(temperature=0, max_tokens=n) for n in (12, 6, 9, 14, 5)]
    engine = ServingEngine(lm, ServingConfig(max_num_seqs=2, block_size=8, num_blocks=64))
    run = engine.run(prompts, params)
    for prompt, sp, got in zip(prompts, params, run.outputs, strict=True):
        want = lm.generate(prompt, sp)
        if got.token_ids != want.token_ids and lm.dtype != torch.float32:
            assert agree_until_a_near_tie(lm, want.prompt_token_ids, want.token_ids, got.token_ids, tol.steps)
            continue
        assert (got.token_ids, got.text, got.finish_reason) == (want.token_ids, want.text, want.finish_reason)
    assert engine.block_manager.num_hit_tokens > 0  # the chat template's system prompt was shared
    assert engine.block_manager.num_free_blocks == engine.block_manager.num_blocks  # no block leaked


def test_continuous_batching_finishes_sooner_than_static(lm, tol, agree_until_a_near_tie):
    """Three long outputs among short ones, four requests at a time: static batching puts one long request
    in each batch and makes the next batch wait for it; continuous batching runs the three together.
    The iteration counts are exact; the wall-clock ratios are the serving benchmark's to report
    (`make bench-serving`), since a shared machine makes timed assertions flaky."""
    workload = mixed_workload(lm, n_requests=12, max_num_seqs=4, long_tokens=32, short_tokens=(2, 4))
    short = workload.short_ids
    result = compare_batching(lm, workload, max_num_seqs=4)
    static, cont = result["static"], result["continuous"]
    for c, s in zip(cont.outputs, static.outputs, strict=True):  # the same tokens (in 16 bits, to a near-tie)
        assert c.token_ids == s.token_ids or (lm.dtype != torch.float32 and agree_until_a_near_tie(
            lm, s.prompt_token_ids, s.token_ids, c.token_ids, tol.steps))
    # what does not depend on the clock: 3 batches × 32 iterations against about 32 + the admissions
    assert static.iterations == 96
    assert cont.iterations <= 0.5 * static.iterations
    assert cont.forward_calls < static.forward_calls
    assert (cont.summary(short)["latency_iterations"]["mean"]
            < 0.6 * static.summary(short)["latency_iterations"]["mean"])


def test_cacheblend_recomputing_hkvd_tokens_beats_reuse_and_random(lm, tol):
    chunks = [lm.tokenizer.encode(d) for d in DOCUMENTS]
    suffix = lm.tokenizer.encode(QUESTION)
    rows = {(r.select, r.ratio): r for r in quality_table(lm, chunks, suffix, ratios=(0.0, 0.15, 1.0))}
    reuse, hkvd, random, full = (rows["deviation", 0.0], rows["deviation", 0.15], rows["random", 0.15],
                                 rows["deviation", 1.0])
    assert full.max_abs_logit_diff <= max(1e-3, tol.steps)  # recomputing everything is a full prefill
    # in 16 bits, within the whole-model bound of tests/test_kernels.py (bfloat16 weights alone: 8.4e-4)
    assert full.kl < (1e-6 if lm.dtype == torch.float32 else 3e-3)
    assert reuse.compute_saved == 1.0 and reuse.kl > 0.1  # reusing the chunks alone costs quality
    assert hkvd.compute_saved > 0.75  # 2 full layers + 15 % of the tokens in the other 28
    assert hkvd.kl < 0.5 * reuse.kl and hkvd.kl < 0.5 * random.kl
    assert hkvd.ppl < reuse.ppl
