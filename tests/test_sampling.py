"""Each sampling rule against transformers' LogitsProcessor, the OpenAI formula, and the course notes' examples."""

import math

import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinNewTokensLengthLogitsProcessor,
    MinPLogitsWarper,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from teachllm import SamplingParams
from teachllm.sampling import (
    apply_min_p,
    apply_no_repeat_ngram,
    apply_presence_frequency_penalty,
    apply_repetition_penalty,
    apply_temperature,
    apply_top_k,
    apply_top_p,
    process_logits,
    sample,
)

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too

V = 50


def random_logits(batch=4, seed=0, ties=False):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, V, generator=g) * 3
    if ties:  # several equal values, some straddling the top-k boundary
        logits = (logits * 2).round() / 2
    return logits


def random_histories(batch=4, length=30, seed=0, vocab=V):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab // 3, (batch, length), generator=g)  # a small id range: many repeats


def same(a, b):
    """Equal, with -inf in the same places."""
    assert torch.equal(torch.isinf(a), torch.isinf(b))
    torch.testing.assert_close(a.masked_fill(torch.isinf(a), 0), b.masked_fill(torch.isinf(b), 0))


@pytest.mark.parametrize("t", [0.1, 0.7, 1.0, 1.5, 2.0])
def test_temperature(t):
    x = random_logits()
    same(apply_temperature(x, t), TemperatureLogitsWarper(t)(None, x.clone()))


@pytest.mark.parametrize("k", [1, 2, 3, 7, 20, V, V + 10])
@pytest.mark.parametrize("ties", [False, True])
def test_top_k(k, ties):
    x = random_logits(ties=ties)
    same(apply_top_k(x, k), TopKLogitsWarper(min(k, V))(None, x.clone()))


def test_top_k_ties_at_the_boundary_survive():
    x = torch.tensor([[3.0, 2.0, 2.0, 2.0, 1.0]])
    out = apply_top_k(x, 2)
    assert torch.isfinite(out).tolist() == [[True, True, True, True, False]]
    same(out, TopKLogitsWarper(2)(None, x.clone()))


@pytest.mark.parametrize("keep", [1, 3])
def test_top_k_min_tokens_to_keep(keep):
    x = random_logits()
    same(apply_top_k(x, 1, min_tokens_to_keep=keep), TopKLogitsWarper(1, min_tokens_to_keep=keep)(None, x.clone()))


@pytest.mark.parametrize("p", [0.05, 0.3, 0.6, 0.9, 0.95, 0.999])
@pytest.mark.parametrize("ties", [False, True])
def test_top_p(p, ties):
    x = random_logits(ties=ties)
    same(apply_top_p(x, p), TopPLogitsWarper(p)(None, x.clone()))


def test_top_p_keeps_the_boundary_token():
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4]])
    out = apply_top_p(probs.log(), 0.6)  # cumulative from the top: .4, .7 — .3 crosses 0.6 and is kept
    assert torch.isfinite(out).tolist() == [[False, False, True, True]]
    same(out, TopPLogitsWarper(0.6)(None, probs.log()))


@pytest.mark.parametrize("keep", [1, 2, 5])
def test_top_p_min_tokens_to_keep(keep):
    x = random_logits() * 5  # very peaked: p = 0.1 alone would keep one token
    same(apply_top_p(x, 0.1, min_tokens_to_keep=keep), TopPLogitsWarper(0.1, min_tokens_to_keep=keep)(None, x.clone()))


@pytest.mark.parametrize("p", [0.01, 0.1, 0.3, 0.8, 1.0])
@pytest.mark.parametrize("keep", [1, 3])
def test_min_p(p, keep):
    x = random_logits()
    same(apply_min_p(x, p, min_tokens_to_keep=keep), MinPLogitsWarper(p, min_tokens_to_keep=keep)(None, x.clone()))


@pytest.mark.parametrize("r", [0.8, 1.0, 1.2, 2.0])
def test_repetition_penalty(r):
    x, seen = random_logits(), random_histories()
    same(apply_repetition_penalty(x, seen, r), RepetitionPenaltyLogitsProcessor(r)(seen, x.clone()))


def test_repetition_penalty_on_one_row():
    x, seen = random_logits(batch=1)[0], random_histories(batch=1)[0]
    same(apply_repetition_penalty(x, seen.tolist(), 1.3), RepetitionPenaltyLogitsProcessor(1.3)(seen[None], x[None])[0])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_no_repeat_ngram(n):
    x = random_logits()
    for length in (1, 2, 3, 10, 30):
        ids = random_histories(length=length, seed=length)
        same(apply_no_repeat_ngram(x, ids, n), NoRepeatNGramLogitsProcessor(n)(ids, x.clone()))


def test_no_repeat_ngram_bans_the_repeat():
    ids = [5, 6, 7, 1, 5, 6]  # "5 6" was followed by 7 before: with n = 3, 7 is banned now
    out = apply_no_repeat_ngram(torch.zeros(V), ids, 3)
    assert torch.isinf(out).nonzero().flatten().tolist() == [7]


def test_presence_and_frequency_follow_the_openai_formula():
    x = random_logits(batch=2)
    outputs = [[3, 3, 3, 9], [4]]
    got = apply_presence_frequency_penalty(x, outputs, presence=0.5, frequency=0.25)
    want = x.clone()
    for row, ids in enumerate(outputs):
        for j in set(ids):
            c = ids.count(j)
            want[row, j] -= c * 0.25 + (1 if c > 0 else 0) * 0.5  # logit − c·frequency − (c > 0)·presence
    same(got, want)


def test_presence_frequency_ignore_the_prompt():
    x = random_logits(batch=1)[0]
    params = SamplingParams(temperature=0, presence_penalty=1.0, frequency_penalty=1.0)
    out = process_logits(x, params, prompt_ids=[1, 2, 3], output_ids=[])
    same(out, x)


SETTINGS = [
    dict(temperature=0.7, top_k=20, top_p=0.9),
    dict(temperature=1.3, top_k=5, top_p=0.5, min_p=0.05, repetition_penalty=1.2, no_repeat_ngram_size=2),
    dict(temperature=0.5, min_p=0.2, repetition_penalty=0.9),
    dict(temperature=1.0, top_p=0.8, min_tokens=5, repetition_penalty=1.1, no_repeat_ngram_size=3),
    dict(temperature=0, repetition_penalty=1.3, no_repeat_ngram_size=2, min_tokens=4),
]


def hf_processors(s: dict, prompt_len: int, eos: int) -> LogitsProcessorList:
    """The list transformers' generate builds for these settings, in its order."""
    procs = LogitsProcessorList()
    if s.get("repetition_penalty", 1.0) != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(s["repetition_penalty"]))
    if s.get("no_repeat_ngram_size", 0) > 0:
        procs.append(NoRepeatNGramLogitsProcessor(s["no_repeat_ngram_size"]))
    if s.get("min_tokens", 0) > 0:
        procs.append(MinNewTokensLengthLogitsProcessor(prompt_len, s["min_tokens"], eos))
    if s["temperature"] > 0:  # do_sample=True
        if s["temperature"] != 1.0:
            procs.append(TemperatureLogitsWarper(float(s["temperature"])))
        if s.get("top_k", 0):
            procs.append(TopKLogitsWarper(s["top_k"]))
        if s.get("top_p", 1.0) < 1.0:
            procs.append(TopPLogitsWarper(s["top_p"]))
        if s.get("min_p", 0.0):
            procs.append(MinPLogitsWarper(s["min_p"]))
    return procs


@pytest.mark.parametrize("settings", SETTINGS)
def test_process_logits_equals_the_transformers_pipeline(settings):
    eos = 0
    x = random_logits()
    hist = random_histories(length=12)
    prompt, output = hist[:, :9], hist[:, 9:]  # 3 tokens generated so far
    got = process_logits(x, SamplingParams(**settings), prompt.tolist(), output.tolist(), eos_token_ids=[eos])
    want = hf_processors(settings, prompt_len=9, eos=eos)(hist, x.clone())
    same(got, want)


def test_seed_example_top_k():
    """《LLM 生成过程》§4.4: k = 3 on [.40, .30, .15, .10, .05] → [.47, .35, .18, 0, 0]."""
    probs = torch.tensor([0.40, 0.30, 0.15, 0.10, 0.05])
    kept = apply_top_k(probs.log(), 3).softmax(-1)
    assert [round(p, 2) for p in kept.tolist()] == [0.47, 0.35, 0.18, 0.0, 0.0]


def test_seed_example_top_p():
    """《LLM 生成过程》§4.5: p = 0.9 keeps four tokens (cumulative .95)."""
    probs = torch.tensor([0.40, 0.30, 0.15, 0.10, 0.05])
    kept = torch.isfinite(apply_top_p(probs.log(), 0.9))
    assert kept.tolist() == [True, True, True, True, False]
    assert math.isclose(probs[kept].sum().item(), 0.95, abs_tol=1e-6)


def test_temperature_zero_is_greedy():
    x = random_logits()
    params = SamplingParams(temperature=0.0, top_k=3, top_p=0.5)  # filters are not applied when greedy
    assert torch.equal(sample(process_logits(x, params, [[]] * 4, [[]] * 4), params), x.argmax(-1))
    with pytest.raises(ValueError, match="greedy"):
        apply_temperature(x, 0.0)


def test_tiny_temperature_approaches_greedy():
    x = random_logits()
    params = SamplingParams(temperature=0.01)
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([sample(process_logits(x, params, [[]] * 4, [[]] * 4), params, g) for _ in range(50)])
    assert (draws == x.argmax(-1)).float().mean() > 0.99


def test_seeded_sampling_is_reproducible():
    x = random_logits()
    params = SamplingParams(temperature=1.0)
    a = [sample(x, params, torch.Generator().manual_seed(7)).tolist() for _ in range(3)]
    assert a[0] == a[1] == a[2]


def test_empirical_frequencies_pass_a_chi_square_test():
    chisquare = pytest.importorskip("scipy.stats").chisquare  # the reference (not on a bare GPU machine)

    x = random_logits(batch=1, seed=3)
    params = SamplingParams(temperature=0.8, top_k=12, top_p=0.95)
    processed = process_logits(x, params, [[]], [[]])  # [1, V]
    probs = processed.softmax(-1)[0]
    n = 20000
    g = torch.Generator().manual_seed(0)
    draws = sample(processed.expand(n, V), params, g)  # n independent draws from one distribution
    counts = torch.bincount(draws, minlength=V)
    support = probs > 0
    assert counts[~support].sum() == 0  # never a removed token
    expected = probs[support].double()
    expected = expected / expected.sum() * n  # float64, so both sides sum to n exactly
    stat, p_value = chisquare(counts[support].double().numpy(), expected.numpy())
    assert p_value > 1e-3, f"chi-square p = {p_value:.2e}"


BAD = [
    ("temperature", -0.1, "≥ 0"), ("top_p", 0.0, r"in \(0, 1\]"), ("top_p", 1.5, r"in \(0, 1\]"),
    ("top_k", -2, "-1 or 0"), ("min_p", -0.1, r"in \[0, 1\]"), ("min_p", 1.1, r"in \[0, 1\]"),
    ("repetition_penalty", 0.0, "> 0"), ("presence_penalty", 2.5, r"in \[-2, 2\]"),
    ("frequency_penalty", -2.1, r"in \[-2, 2\]"), ("max_tokens", 0, "≥ 1"), ("num_beams", 0, "≥ 1"),
    ("logprobs", -1, "None or ≥ 0"), ("no_repeat_ngram_size", -1, "≥ 0"), ("min_tokens", -1, "≥ 0"),
    ("stop", [3], "non-empty strings"), ("stop", [""], "non-empty strings"), ("stop_token_ids", [-5], "≥ 0"),
    ("temperature", "hot", "must be a number"), ("top_k", 2.5, "-1 or 0"),
]


@pytest.mark.parametrize("field,value,allowed", BAD)
def test_bad_params_name_the_field_value_and_range(field, value, allowed):
    with pytest.raises(ValueError, match=rf"SamplingParams\.{field}.*{allowed}"):
        SamplingParams(**{field: value})


def test_min_tokens_above_max_tokens():
    with pytest.raises(ValueError, match="min_tokens=20 is larger than max_tokens=10"):
        SamplingParams(min_tokens=20, max_tokens=10)


def test_beam_search_refuses_sampling_settings():
    with pytest.raises(ValueError, match="beam search.*top_p"):
        SamplingParams(num_beams=3, top_p=0.9)


def test_a_single_stop_string_is_accepted():
    assert SamplingParams(stop="\n").stop == ["\n"]
