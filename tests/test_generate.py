"""generate(), stream() and beam search on the bundled model, against transformers' generate and vLLM's stop rules."""

import pytest
import torch

import teachllm as tl
from teachllm import SamplingParams, bench

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too


def chat(lm, question):
    return lm.tokenizer.apply_chat_template([{"role": "user", "content": question}])


@pytest.fixture(scope="module")
def prompts(lm):
    return ["The three primary colours are", chat(lm, "What is the capital of France?"), "def add(a, b):",
            chat(lm, "Name a fruit.")]


def hf_generate(lm, hf_model, prompt, **kwargs):
    n_new = kwargs.pop("max_new_tokens")
    return bench.hf_greedy(hf_model, lm.tokenizer.encode(prompt), n_new, exact=False, **kwargs)


def test_greedy_equals_transformers(lm, hf_model, prompts):
    for prompt in prompts:
        ours = lm.generate(prompt, SamplingParams(temperature=0, max_tokens=32)).token_ids
        assert ours == hf_generate(lm, hf_model, prompt, max_new_tokens=32), prompt


@pytest.mark.parametrize("settings", [dict(repetition_penalty=1.3), dict(no_repeat_ngram_size=2),
                                      dict(repetition_penalty=1.15, no_repeat_ngram_size=3)])
def test_greedy_with_penalties_equals_transformers(lm, hf_model, prompts, settings):
    for prompt in prompts[:3]:
        ours = lm.generate(prompt, SamplingParams(temperature=0, max_tokens=24, **settings)).token_ids
        assert ours == hf_generate(lm, hf_model, prompt, max_new_tokens=24, **settings), prompt


def test_min_tokens_equals_transformers_min_new_tokens(lm, hf_model, prompts):
    prompt = prompts[1]  # greedy ends with EOS after a few tokens
    free = lm.generate(prompt, SamplingParams(temperature=0, max_tokens=32))
    assert free.finish_reason == "stop" and free.token_ids[-1] in lm.config.eos_token_ids
    n = len(free.token_ids) + 3
    forced = lm.generate(prompt, SamplingParams(temperature=0, max_tokens=32, min_tokens=n))
    assert len(forced.token_ids) >= n
    assert not set(forced.token_ids[: n - 1]) & set(lm.config.eos_token_ids)
    assert forced.token_ids == hf_generate(lm, hf_model, prompt, max_new_tokens=32, min_new_tokens=n)


@pytest.mark.parametrize("beams,length_penalty", [(3, 1.0), (4, 0.6), (2, 2.0)])
def test_beam_search_equals_transformers(lm, hf_model, prompts, beams, length_penalty):
    for prompt in prompts if beams == 3 else prompts[1:3]:  # all four prompts once, two for the other settings
        ours = lm.generate(prompt, SamplingParams(num_beams=beams, length_penalty=length_penalty, max_tokens=24))
        ref = hf_generate(lm, hf_model, prompt, num_beams=beams, length_penalty=length_penalty, max_new_tokens=24)
        assert ours.token_ids == ref, prompt


def test_beam_search_steps_keep_k_beams(lm, prompts):
    steps = list(tl.beam_search_steps(lm, lm.tokenizer.encode(prompts[0]), SamplingParams(num_beams=3, max_tokens=6)))
    assert all(len(s.running) == 3 for s in steps[:-1])
    assert steps[-1].done and len(steps[-1].finished) == 3
    assert steps[-1].running == []  # max_tokens reached: every candidate ended, no beam goes on
    scores = [h.score for h in steps[-1].finished]
    assert scores == sorted(scores, reverse=True)


def test_eos_stops_and_ignore_eos_goes_on(lm, prompts):
    out = lm.generate(prompts[1], SamplingParams(temperature=0, max_tokens=32))
    assert out.finish_reason == "stop" and out.stop_reason is None
    assert "<|im_end|>" not in out.text  # special tokens are not part of the text
    n = len(out.token_ids)
    more = lm.generate(prompts[1], SamplingParams(temperature=0, max_tokens=n + 5, ignore_eos=True))
    assert more.finish_reason == "length" and len(more.token_ids) == n + 5
    assert more.token_ids[:n] == out.token_ids


def test_max_tokens_gives_length(lm, prompts):
    out = lm.generate(prompts[0], SamplingParams(temperature=0, max_tokens=7))
    assert out.finish_reason == "length" and len(out.token_ids) == 7


def test_stop_token_ids(lm, prompts):
    free = lm.generate(prompts[0], SamplingParams(temperature=0, max_tokens=20))
    target = free.token_ids[4]
    first = free.token_ids.index(target)
    out = lm.generate(prompts[0], SamplingParams(temperature=0, max_tokens=20, stop_token_ids=[target]))
    assert out.token_ids == free.token_ids[: first + 1]
    assert out.finish_reason == "stop" and out.stop_reason == target
    # as in vLLM, the stop id's text is left out of the output unless include_stop_str_in_output
    assert out.text == lm.tokenizer.decode(free.token_ids[:first])
    kept = lm.generate(prompts[0], SamplingParams(temperature=0, max_tokens=20, stop_token_ids=[target],
                                                  include_stop_str_in_output=True))
    assert kept.text == lm.tokenizer.decode(free.token_ids[: first + 1])


def spanning_stop_string(lm, ids):
    """A stop string made of the end of one token and the start of the next, and where it starts."""
    texts = [lm.tokenizer.token_text(i) for i in ids]
    for i in range(2, len(ids) - 1):
        a, b = texts[i], texts[i + 1]
        if len(a) >= 2 and len(b) >= 2 and a.isascii() and b.isascii():
            stop = a[-2:] + b[:2]
            prefix = lm.tokenizer.decode(ids[:i + 1])
            return stop, i, len(prefix) - 2
    raise AssertionError("no two adjacent tokens of length ≥ 2")


@pytest.mark.parametrize("include", [False, True])
def test_stop_string_across_tokens(lm, prompts, include):
    free = lm.generate(prompts[2], SamplingParams(temperature=0, max_tokens=24))
    stop, i, where = spanning_stop_string(lm, free.token_ids)
    assert free.text.find(stop) == where  # it does not appear earlier
    out = lm.generate(prompts[2], SamplingParams(temperature=0, max_tokens=24, stop=[stop, "never-seen"],
                                                 include_stop_str_in_output=include))
    assert out.finish_reason == "stop" and out.stop_reason == stop
    assert out.token_ids == free.token_ids[: i + 2]  # generation ran until the token that completed it
    assert out.text == free.text[: where + (len(stop) if include else 0)]
    pieces = list(lm.stream(prompts[2], SamplingParams(temperature=0, max_tokens=24, stop=[stop],
                                                       include_stop_str_in_output=include)))
    assert "".join(pieces) == out.text


def test_min_tokens_delays_stop_strings(lm, prompts):
    """vLLM's rule: a stop string counts only if it ends in the text of a token after the first min_tokens."""
    free = lm.generate(prompts[2], SamplingParams(temperature=0, max_tokens=24))
    stop, i, _ = spanning_stop_string(lm, free.token_ids)  # completed by token i + 2 (1-based)
    just_after = lm.generate(prompts[2], SamplingParams(temperature=0, max_tokens=24, stop=[stop], min_tokens=i + 1))
    assert just_after.token_ids == free.token_ids[: i + 2] and just_after.stop_reason == stop
    too_early = lm.generate(prompts[2], SamplingParams(temperature=0, max_tokens=24, stop=[stop], min_tokens=i + 2))
    assert len(too_early.token_ids) > i + 2 and too_early.token_ids[: i + 2] == free.token_ids[: i + 2]


@pytest.mark.parametrize("question", ["Explain what a cache is in one sentence.", "请用中文介绍一下你自己。",
                                      "Reply with three emoji that describe happiness."])
def test_stream_never_splits_a_character(lm, question):
    prompt = chat(lm, question)
    params = SamplingParams(temperature=0, max_tokens=30)
    out = lm.generate(prompt, params)
    pieces = list(lm.stream(prompt, params))
    assert "".join(pieces) == out.text
    assert not any("\ufffd" in p for p in pieces)
    if question != "Explain what a cache is in one sentence.":
        assert not out.text.isascii()  # the test only means something if the output has multi-byte characters
        assert len(pieces) > 1


def test_batch_of_different_lengths_equals_each_alone(lm, prompts):
    params = SamplingParams(temperature=0, max_tokens=16)
    together = lm.generate(prompts, params)
    assert [o.token_ids for o in together] == [lm.generate(p, params).token_ids for p in prompts]
    assert [o.finish_reason for o in together] == [lm.generate(p, params).finish_reason for p in prompts]


def test_seeded_sampling_is_reproducible(lm, prompts):
    params = SamplingParams(temperature=1.0, top_p=0.95, seed=1234, max_tokens=20)
    a, b = lm.generate(prompts[0], params), lm.generate(prompts[0], params)
    assert a.token_ids == b.token_ids
    other = lm.generate(prompts[0], SamplingParams(temperature=1.0, top_p=0.95, seed=99, max_tokens=20))
    assert other.token_ids != a.token_ids


def test_logprobs_are_the_models_log_probabilities(lm, prompts, tol):
    out = lm.generate(prompts[0], SamplingParams(temperature=0, max_tokens=5, logprobs=3))
    ids = out.prompt_token_ids + out.token_ids
    logp = torch.log_softmax(lm.forward(ids)[0].float(), dim=-1)  # [S, V], uncached
    for step, entry in enumerate(out.logprobs):
        row = logp[len(out.prompt_token_ids) - 1 + step]
        top = torch.topk(row, 3)
        third = sorted(entry.values())[-3]  # the 3rd best the step reported
        for token, value in zip(top.indices.tolist(), top.values.tolist(), strict=True):
            assert token in entry or value - third <= 2 * tol.logprob  # the top 3, up to a near-tie in 16 bits
        for token, value in entry.items():
            assert abs(value - row[token].item()) < tol.logprob
        assert out.token_ids[step] in entry


def test_metrics(lm, prompts):
    out = lm.generate(prompts[0], SamplingParams(temperature=0, max_tokens=8))
    m = out.metrics
    assert m.n_prompt_tokens == len(lm.tokenizer.encode(prompts[0])) and m.n_output_tokens == 8
    assert len(m.step_s) == 8 and m.ttft_s == m.step_s[0]
    assert abs(m.e2e_s - sum(m.step_s)) < 1e-9
    assert abs(m.tokens_per_s - 8 / m.e2e_s) < 1e-6
    assert abs(m.tpot_s - sum(m.step_s[1:]) / 7) < 1e-9


def test_prompt_plus_max_tokens_beyond_the_context(lm):
    with pytest.raises(ValueError, match="exceeds the model's context window of 8192"):
        lm.generate([1] * 8000, SamplingParams(max_tokens=500))


def test_bad_prompts(lm):
    with pytest.raises(ValueError, match="non-empty"):
        lm.generate([], SamplingParams())
    with pytest.raises(ValueError, match="empty prompt"):
        lm.generate("", SamplingParams())
