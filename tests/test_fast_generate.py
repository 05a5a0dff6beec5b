"""lm.generate and lm.stream on the fast path (teachllm/fastpath/loop.py, issue 35), checked on the CPU, where
fast=True runs the same loop through the eager step:
- its outputs are the reference loop's (generate.py): greedy tokens, seeded samples, text, finish and stop reasons,
  EOS, stop ids and stop strings, streaming, a batch of prompts of different lengths (left-padded);
- it decodes with the fused step (fastpath/fused_float.py), and its logits are KVCache's to float32 rounding;
- between two read-backs it reads nothing from the device (one read per READ_EVERY steps, not one per token);
- the switch: the reference loop by default on the CPU (byte for byte), fast=False, TEACHLLM_PLAIN_DECODE, and the
  settings it does not support fall back to the reference loop with their reason in lm.decode_path.
"""

from types import SimpleNamespace

import pytest
import torch
from test_static_cache import Recorder, scalar_reads
from tiny_decoder import random_decoder

import teachllm as tl
from teachllm.cache import KVCache
from teachllm.fastpath import loop
from teachllm.fastpath.graph import prefill
from teachllm.lm import LanguageModel

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]  # see conftest.py

PROMPTS = [[5, 17, 23, 42, 8, 9, 60], [11, 12], [70, 71, 72, 73]]  # different lengths: left padding


def tiny_lm(tokenizer=None, vocab_size=101, eos=(3,), seed=0):
    """A tiny random decoder whose greedy choices vary from step to step; with the bundled tokenizer (its whole
    vocabulary) when text is needed."""
    model = random_decoder(seed, vocab_size=vocab_size, eos_token_ids=eos)
    return LanguageModel(model, tokenizer, name="tiny")


@pytest.fixture(scope="module")
def tiny():
    return tiny_lm()


@pytest.fixture(scope="module")
def texty(lm):
    """The tiny decoder over the bundled tokenizer's vocabulary, so that outputs have text."""
    return tiny_lm(lm.tokenizer, vocab_size=lm.config.vocab_size, eos=lm.config.eos_token_ids)


def both(lm, prompts, params):
    """The reference loop's outputs and the fast path's, for the same prompts."""
    reference = lm.generate(prompts, params, fast=False)
    assert lm.decode_path.startswith("reference loop: fast=False")
    fast = lm.generate(prompts, params, fast=True)
    assert lm.decode_path.startswith("fast path") and "each step runs eagerly" in lm.decode_path, lm.decode_path
    assert "the fused step (teachllm/fastpath/fused_float.py)" in lm.decode_path, lm.decode_path
    return reference, fast


def same(reference, fast):
    for a, b in zip(reference, fast, strict=True):
        assert (b.token_ids, b.text, b.finish_reason, b.stop_reason) == (a.token_ids, a.text, a.finish_reason,
                                                                         a.stop_reason)
        assert b.prompt_token_ids == a.prompt_token_ids and b.metrics.n_output_tokens == a.metrics.n_output_tokens


@pytest.mark.parametrize("max_tokens", [1, 8, 21])  # no read-back after prefill alone, one chunk, several
def test_greedy_fast_equals_the_reference_loop_in_a_left_padded_batch(tiny, max_tokens):
    reference, fast = both(tiny, PROMPTS, tl.SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True))
    same(reference, fast)
    assert all(len(o.token_ids) == max_tokens for o in fast)
    if max_tokens > 8:
        assert len(set(fast[0].token_ids)) > 3  # the tokens vary: not one repeated token


def test_seeded_sampling_draws_what_the_reference_draws(tiny):
    params = tl.SamplingParams(temperature=0.8, top_k=30, top_p=0.9, min_p=0.02, seed=7, max_tokens=12,
                               ignore_eos=True)
    same(*both(tiny, PROMPTS, params))


def test_the_logits_are_kvcaches_to_float32_rounding(tiny):
    ids, steps = torch.tensor([PROMPTS[0]]), 10
    plain = KVCache(tiny.config, len(PROMPTS[0]) + steps, 1, dtype=torch.float32, device="cpu")
    decoder = loop.decoder_for(tiny, 1, len(PROMPTS[0]) + steps)
    want, got = [tiny.prefill(ids, plain)], [prefill(tiny.model, ids, decoder.cache)]
    for _ in range(steps):
        token = got[-1].argmax(-1)  # [1]
        want.append(tiny.decode_step(token, plain))
        got.append(decoder.step(token)[0].clone())
    for a, b in zip(want, got, strict=True):
        torch.testing.assert_close(b, a)  # float32 defaults


def test_eos_and_stop_ids_stop_the_fast_path_where_they_stop_the_reference(tiny):
    free = tiny.generate(PROMPTS[0], tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True), fast=True)
    token = free.token_ids[10]
    at = free.token_ids.index(token)
    eos_lm = tiny_lm(eos=(token,))  # the same weights (the same seed), with that token as its EOS
    reference, fast = both(eos_lm, [PROMPTS[0]], tl.SamplingParams(temperature=0, max_tokens=20))
    same(reference, fast)
    assert fast[0].finish_reason == "stop" and fast[0].token_ids == free.token_ids[:at + 1]
    reference, fast = both(tiny, [PROMPTS[0]], tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True,
                                                                 stop_token_ids=[token]))
    same(reference, fast)
    assert fast[0].stop_reason == token and len(fast[0].token_ids) == at + 1


@pytest.mark.parametrize("include", [False, True])
def test_stop_strings_and_streaming(texty, include):
    prompts = [[1, 504, 3000, 211], [1, 77]]
    free = texty.generate(prompts[0], tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True), fast=False)
    stop = free.text[len(free.text) // 2: len(free.text) // 2 + 3]  # from the middle of the text: found mid-run
    params = tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True, stop=[stop, "never seen"],
                               include_stop_str_in_output=include)
    reference, fast = both(texty, prompts, params)
    same(reference, fast)
    assert fast[0].finish_reason == "stop" and fast[0].stop_reason == stop
    pieces = list(texty.stream(prompts[0], params, fast=True))
    assert texty.decode_path.startswith("fast path") and "".join(pieces) == reference[0].text
    assert "".join(texty.stream(prompts[0], params)) == reference[0].text  # the CPU's default: the reference loop


def test_no_read_from_the_device_between_read_backs(tiny):
    """The reference loop reads the device several times a token; the fast path once per read-back (the first
    token, then every READ_EVERY steps), greedy or sampling alike."""
    n = 1 + 2 * loop.READ_EVERY  # read-backs after tokens 1, 9 and 17
    for params in (tl.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True),
                   tl.SamplingParams(temperature=0.7, top_p=0.9, seed=1, max_tokens=n, ignore_eos=True)):
        reads = {}
        for fast in (False, True):
            with Recorder() as r:
                tiny.generate(PROMPTS, params, fast=fast)
            reads[fast] = len(scalar_reads(r))
        assert reads[True] == 3 and reads[False] > 2 * n, reads


def test_the_switch_and_the_reasons(tiny, monkeypatch):
    greedy = tl.SamplingParams(temperature=0, max_tokens=4)
    reference = tiny.generate(PROMPTS, greedy, fast=False)
    default = tiny.generate(PROMPTS, greedy)  # CPU: the reference loop, as the notebooks ran it
    assert "the model is on cpu" in tiny.decode_path
    assert [o.token_ids for o in default] == [o.token_ids for o in reference]
    monkeypatch.setenv(loop.PLAIN_FLAG, "1")
    tiny.generate(PROMPTS, greedy, fast=True)
    assert tiny.decode_path.startswith("fast path")  # an explicit fast=True wins over the environment
    cuda = SimpleNamespace(device=torch.device("cuda"), fast=None)
    assert loop.PLAIN_FLAG in loop.why_not(cuda, greedy, None)
    monkeypatch.setenv(loop.PLAIN_FLAG, "0")
    assert loop.why_not(cuda, greedy, None) is None  # on CUDA the fast path is the default
    assert "larger than the largest recorded batch size" in loop.why_not(cuda, greedy, None, n_prompts=33)
    with pytest.raises(ValueError, match="give True"):
        tiny.generate(PROMPTS, greedy, fast="yes")
    for change, reason in ((dict(repetition_penalty=1.3), "repetition_penalty"),
                           (dict(presence_penalty=0.5), "presence/frequency"),
                           (dict(no_repeat_ngram_size=2), "no_repeat_ngram_size"),
                           (dict(min_tokens=2), "min_tokens"), (dict(logprobs=2), "logprobs"),
                           (dict(num_beams=2), "beam search")):
        params = greedy.replace(**change)
        want = tiny.generate(PROMPTS, params, fast=False)
        got = tiny.generate(PROMPTS, params, fast=True)
        assert tiny.decode_path.startswith("reference loop: ") and reason in tiny.decode_path
        assert [o.token_ids for o in got] == [o.token_ids for o in want]


def test_a_broken_model_is_reported_at_the_read_back():
    broken = tiny_lm(seed=1)
    with torch.no_grad():
        broken.model.norm.weight[0] = float("nan")
    params = tl.SamplingParams(temperature=0, max_tokens=5)
    with pytest.raises(ValueError, match="NaN"):
        broken.generate(PROMPTS, params, fast=False)
    with pytest.raises(ValueError, match="NaN"):
        broken.generate(PROMPTS, params, fast=True)


def test_the_bundled_model_gives_the_same_greedy_text(lm):
    prompts = [lm.tokenizer.encode("The three primary colours are"), lm.tokenizer.encode("def add(a, b):")]
    reference, fast = both(lm, prompts, tl.SamplingParams(temperature=0, max_tokens=10))
    same(reference, fast)


if torch.cuda.is_available():  # defined only where CUDA is (a skip fails under CI=true): never run without a GPU
    def test_on_cuda_the_graphs_are_recorded_and_give_the_reference_loops_outputs():
        gpu = tiny_lm()
        gpu.model.to("cuda")
        for prompts, params in ((PROMPTS, tl.SamplingParams(temperature=0, max_tokens=21, ignore_eos=True)),
                                (PROMPTS[:1], tl.SamplingParams(temperature=0, max_tokens=9, ignore_eos=True)),
                                (PROMPTS, tl.SamplingParams(temperature=0.8, top_p=0.9, seed=3, max_tokens=12,
                                                            ignore_eos=True))):
            reference = gpu.generate(prompts, params, fast=False)
            fast = gpu.generate(prompts, params)  # the default on CUDA
            assert "CUDA graphs recorded" in gpu.decode_path and "the fused step" in gpu.decode_path, gpu.decode_path
            same(reference, fast)
