"""Bad input, on every public surface, gets an exception that names what was wrong and what is allowed.

One table, one line per case: (surface, call, exception type, pattern). The call receives `t`, which
holds the model (`t.lm`, `t.cfg`), fresh caches and engines, small logits and a temporary folder.
The pattern must find the field or value in the message *and* what would be accepted.
"""

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import teachllm as tl
from teachllm import cost, sampling
from teachllm.cli import main as cli
from teachllm.loading import CacheNotWritableError, DamagedCheckpointError
from teachllm.serving import ServingConfig, ServingEngine

SP = tl.SamplingParams
V = 49152  # the bundled model's vocabulary
NAN, INF = math.nan, math.inf
LONG = torch.long


def C(surface, call, error, pattern):
    """One case: `call(t)` must raise `error` with a message matching `pattern` (re.search)."""
    return surface, call, error, pattern


def assign(params, **change):
    for name, value in change.items():
        setattr(params, name, value)


CASES = [
    # ---- SamplingParams: each field's type and range ------------------------------------------------
    C("SamplingParams", lambda t: SP(temperature=-0.1), ValueError, r"temperature=-0\.1 is out of range: must be ≥ 0"),
    C("SamplingParams", lambda t: SP(temperature="hot"), ValueError, r"temperature='hot' must be a number ≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=NAN), ValueError, r"temperature=nan is out of range: must be ≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=INF), ValueError, r"temperature=inf is out of range: must be ≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=None), ValueError, r"temperature=None must be a number ≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=True), ValueError, r"temperature=True must be a number ≥ 0"),
    C("SamplingParams", lambda t: SP(top_k=-2), ValueError, r"top_k=-2 is out of range: must be -1 or 0 \(off\)"),
    C("SamplingParams", lambda t: SP(top_k=2.5), ValueError, r"top_k=2\.5 is out of range: must be -1 or 0"),
    C("SamplingParams", lambda t: SP(top_k="5"), ValueError, r"top_k='5' is out of range: must be -1 or 0"),
    C("SamplingParams", lambda t: SP(top_k=True), ValueError, r"top_k=True is out of range: must be -1 or 0"),
    C("SamplingParams", lambda t: SP(top_p=0.0), ValueError, r"top_p=0\.0 is out of range: must be in \(0, 1\]"),
    C("SamplingParams", lambda t: SP(top_p=1.5), ValueError, r"top_p=1\.5 is out of range: must be in \(0, 1\]"),
    C("SamplingParams", lambda t: SP(top_p=-0.1), ValueError, r"top_p=-0\.1 is out of range: must be in \(0, 1\]"),
    C("SamplingParams", lambda t: SP(top_p=NAN), ValueError, r"top_p=nan is out of range: must be in \(0, 1\]"),
    C("SamplingParams", lambda t: SP(top_p="0.9"), ValueError, r"top_p='0\.9' must be a number in \(0, 1\]"),
    C("SamplingParams", lambda t: SP(min_p=-0.1), ValueError, r"min_p=-0\.1 is out of range: must be in \[0, 1\]"),
    C("SamplingParams", lambda t: SP(min_p=1.1), ValueError, r"min_p=1\.1 is out of range: must be in \[0, 1\]"),
    C("SamplingParams", lambda t: SP(min_p=NAN), ValueError, r"min_p=nan is out of range: must be in \[0, 1\]"),
    C("SamplingParams", lambda t: SP(repetition_penalty=0), ValueError, r"repetition_penalty=0\.0 .*must be > 0"),
    C("SamplingParams", lambda t: SP(repetition_penalty=-1), ValueError, r"repetition_penalty=-1\.0 .*must be > 0"),
    C("SamplingParams", lambda t: SP(repetition_penalty=NAN), ValueError, r"repetition_penalty=nan .*must be > 0"),
    C("SamplingParams", lambda t: SP(repetition_penalty=INF), ValueError, r"repetition_penalty=inf .*must be > 0"),
    C("SamplingParams", lambda t: SP(presence_penalty=2.5), ValueError, r"presence_penalty=2\.5 .*in \[-2, 2\]"),
    C("SamplingParams", lambda t: SP(presence_penalty=-3), ValueError, r"presence_penalty=-3\.0 .*in \[-2, 2\]"),
    C("SamplingParams", lambda t: SP(frequency_penalty=-2.1), ValueError, r"frequency_penalty=-2\.1 .*in \[-2, 2\]"),
    C("SamplingParams", lambda t: SP(frequency_penalty=NAN), ValueError, r"frequency_penalty=nan .*in \[-2, 2\]"),
    C("SamplingParams", lambda t: SP(no_repeat_ngram_size=-1), ValueError, r"no_repeat_ngram_size=-1 .*must be ≥ 0"),
    C("SamplingParams", lambda t: SP(no_repeat_ngram_size=1.5), ValueError, r"no_repeat_ngram_size=1\.5 .*≥ 0"),
    C("SamplingParams", lambda t: SP(max_tokens=0), ValueError, r"max_tokens=0 is out of range: must be ≥ 1"),
    C("SamplingParams", lambda t: SP(max_tokens=-5), ValueError, r"max_tokens=-5 is out of range: must be ≥ 1"),
    C("SamplingParams", lambda t: SP(max_tokens=2.0), ValueError, r"max_tokens=2\.0 is out of range: must be ≥ 1"),
    C("SamplingParams", lambda t: SP(max_tokens=None), ValueError, r"max_tokens=None is out of range: must be ≥ 1"),
    C("SamplingParams", lambda t: SP(max_tokens=True), ValueError, r"max_tokens=True is out of range: must be ≥ 1"),
    C("SamplingParams", lambda t: SP(min_tokens=-1), ValueError, r"min_tokens=-1 is out of range: must be ≥ 0"),
    C("SamplingParams", lambda t: SP(min_tokens=20, max_tokens=10), ValueError,
      r"min_tokens=20 is larger than max_tokens=10; min_tokens must be ≤ max_tokens"),
    C("SamplingParams", lambda t: SP(stop=[3]), ValueError, r"stop must hold non-empty strings, got 3"),
    C("SamplingParams", lambda t: SP(stop=[""]), ValueError, r"stop must hold non-empty strings, got ''"),
    C("SamplingParams", lambda t: SP(stop=None), ValueError, r"stop=None must be a string or a list of non-empty"),
    C("SamplingParams", lambda t: SP(stop=5), ValueError, r"stop=5 must be a string or a list of non-empty strings"),
    C("SamplingParams", lambda t: SP(stop_token_ids=[-5]), ValueError, r"stop_token_ids=-5 .*token ids ≥ 0"),
    C("SamplingParams", lambda t: SP(stop_token_ids=["a"]), ValueError, r"stop_token_ids='a' .*token ids ≥ 0"),
    C("SamplingParams", lambda t: SP(stop_token_ids=[1.5]), ValueError, r"stop_token_ids=1\.5 .*token ids ≥ 0"),
    C("SamplingParams", lambda t: SP(stop_token_ids=None), ValueError, r"stop_token_ids=None must be a list of token"),
    C("SamplingParams", lambda t: SP(stop_token_ids=3), ValueError, r"stop_token_ids=3 must be a list of token ids"),
    C("SamplingParams", lambda t: SP(ignore_eos="no"), ValueError, r"ignore_eos='no' must be True or False"),
    C("SamplingParams", lambda t: SP(ignore_eos=1), ValueError, r"ignore_eos=1 must be True or False"),
    C("SamplingParams", lambda t: SP(ignore_eos=None), ValueError, r"ignore_eos=None must be True or False"),
    C("SamplingParams", lambda t: SP(include_stop_str_in_output="false"), ValueError,
      r"include_stop_str_in_output='false' must be True or False"),
    C("SamplingParams", lambda t: SP(seed=2**64), ValueError, r"seed=18446744073709551616 .*-2\*\*63 \.\. 2\*\*64 - 1"),
    C("SamplingParams", lambda t: SP(seed=-2**63 - 1), ValueError, r"seed=-9223372036854775809 .*-2\*\*63"),
    C("SamplingParams", lambda t: SP(seed=1.5), ValueError, r"seed=1\.5 .*None or an integer"),
    C("SamplingParams", lambda t: SP(seed="1"), ValueError, r"seed='1' .*None or an integer"),
    C("SamplingParams", lambda t: SP(logprobs=-1), ValueError, r"logprobs=-1 is out of range: must be None or ≥ 0"),
    C("SamplingParams", lambda t: SP(logprobs=1.5), ValueError, r"logprobs=1\.5 .*must be None or ≥ 0"),
    C("SamplingParams", lambda t: SP(logprobs=True), ValueError, r"logprobs=True .*must be None or ≥ 0"),
    C("SamplingParams", lambda t: SP(num_beams=0), ValueError, r"num_beams=0 is out of range: must be ≥ 1"),
    C("SamplingParams", lambda t: SP(num_beams=2.0), ValueError, r"num_beams=2\.0 is out of range: must be ≥ 1"),
    C("SamplingParams", lambda t: SP(length_penalty=INF), ValueError, r"length_penalty=inf .*must be a finite number"),
    C("SamplingParams", lambda t: SP(length_penalty=NAN), ValueError, r"length_penalty=nan .*must be a finite number"),
    C("SamplingParams", lambda t: SP(length_penalty="1"), ValueError, r"length_penalty='1' must be a number"),
    C("SamplingParams", lambda t: SP(num_beams=3, top_p=0.9), ValueError,
      r"beam search \(num_beams=3\) .* does not take top_p; leave them at their defaults"),
    C("SamplingParams", lambda t: SP(num_beams=3, temperature=0.7), ValueError,
      r"does not take temperature; leave them at their defaults \(temperature 0 or 1\)"),
    C("SamplingParams", lambda t: SP(num_beams=2, stop=["x"]), ValueError, r"does not take stop; leave them"),
    C("SamplingParams", lambda t: SP(num_beams=2, logprobs=1), ValueError, r"does not take logprobs; leave them"),
    # ---- SamplingParams after construction: assignment is checked, replace() too ----------------------
    C("SamplingParams", lambda t: assign(SP(), max_tokens=0), ValueError, r"max_tokens=0 .*must be ≥ 1"),
    C("SamplingParams", lambda t: assign(SP(), temperature=-1), ValueError, r"temperature=-1\.0 .*must be ≥ 0"),
    C("SamplingParams", lambda t: assign(SP(), top_p=0), ValueError, r"top_p=0\.0 .*in \(0, 1\]"),
    C("SamplingParams", lambda t: assign(SP(), ignore_eos="no"), ValueError, r"ignore_eos='no' must be True or"),
    C("SamplingParams", lambda t: assign(SP(), stop=None), ValueError, r"stop=None must be a string or a list"),
    C("SamplingParams", lambda t: assign(SP(max_tokens=5), min_tokens=9), ValueError, r"min_tokens=9 is larger"),
    C("SamplingParams", lambda t: assign(SP(top_p=0.9), num_beams=2), ValueError, r"does not take top_p"),
    C("SamplingParams", lambda t: assign(SP(), seed=2**70), ValueError, r"seed=1180591620717411303424 .*2\*\*64"),
    C("SamplingParams", lambda t: SP().replace(max_tokens=0), ValueError, r"max_tokens=0 .*must be ≥ 1"),
    C("SamplingParams", lambda t: SP().replace(top_q=1), ValueError, r"no field top_q; the fields are temperature"),
    # ---- tl.sampling: the pure functions -------------------------------------------------------------
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, 0.0), ValueError,
      r"temperature must be > 0 here, got 0\.0; temperature 0 means greedy"),
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, -1), ValueError, r"got -1; temperature 0 means"),
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, NAN), ValueError,
      r"apply_temperature: t=nan is not allowed; must be a finite number > 0"),
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, "1"), ValueError, r"t='1' .*a finite number > 0"),
    C("tl.sampling", lambda t: sampling.apply_temperature([1.0, 2.0], 1.0), TypeError,
      r"logits must be a floating-point tensor of shape \[V\] or \[B, V\], got list"),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x, 2.5), ValueError, r"apply_top_k: k=2\.5 .*an integer"),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x, "3"), ValueError, r"apply_top_k: k='3' .*an integer"),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x, 3, min_tokens_to_keep=0), ValueError,
      r"min_tokens_to_keep=0 is not allowed; must be an integer ≥ 1"),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x.long(), 3), TypeError, r"floating-point tensor .*torch\.int64"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, 0.0), ValueError, r"apply_top_p: p=0\.0 .*in \(0, 1\]"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, -0.5), ValueError,
      r"p=-0\.5 is not allowed; must be in \(0, 1"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, 1.5), ValueError, r"p=1\.5 is not allowed; must be in \(0, 1"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, NAN), ValueError, r"p=nan is not allowed; must be in \(0, 1"),
    C("tl.sampling", lambda t: sampling.apply_min_p(t.x, 1.5), ValueError, r"apply_min_p: p=1\.5 .*in \[0, 1\]"),
    C("tl.sampling", lambda t: sampling.apply_min_p(t.x, -0.1), ValueError, r"p=-0\.1 is not allowed; must be in \[0"),
    C("tl.sampling", lambda t: sampling.apply_min_p(t.x, NAN), ValueError, r"p=nan is not allowed; must be in \[0, 1"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [1], 0), ValueError,
      r"apply_repetition_penalty: r=0 is not allowed; must be a finite number > 0"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [1], -1.2), ValueError, r"r=-1\.2 .*> 0"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [1], NAN), ValueError, r"r=nan .*> 0"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [10**6], 1.2), ValueError,
      r"token histories must hold token ids in 0 \.\. 9, got 1000000"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, "abc", 1.2), ValueError,
      r"token histories must be a list of ids or one list per row, got str"),
    C("tl.sampling", lambda t: sampling.apply_presence_frequency_penalty(t.x, [1], NAN, 0), ValueError,
      r"presence=nan is not allowed; must be a finite number"),
    C("tl.sampling", lambda t: sampling.apply_presence_frequency_penalty(t.x, [1], 0, INF), ValueError,
      r"frequency=inf is not allowed; must be a finite number"),
    C("tl.sampling", lambda t: sampling.apply_no_repeat_ngram(t.x, [1, 2], -1), ValueError,
      r"apply_no_repeat_ngram: n=-1 is not allowed; must be an integer ≥ 0"),
    C("tl.sampling", lambda t: sampling.apply_no_repeat_ngram(t.x, [1, 2], 1.5), ValueError, r"n=1\.5 .*integer ≥ 0"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, None, [], []), TypeError,
      r"params must be a SamplingParams instance, e\.g\. SamplingParams\(temperature=0\), got None"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, {"temperature": 0}, [], []), TypeError,
      r"must be a SamplingParams instance.*got \{'temperature': 0\}"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, SP, [], []), TypeError,
      r"must be a SamplingParams instance.*got the class SamplingParams itself"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, SP(), [[1], [2]], [[], []]), ValueError,
      r"2 token histories given for 1 rows of logits"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, SP(stop_token_ids=[50], min_tokens=1), [], []), ValueError,
      r"stop_token_ids holds 50, outside the model's vocabulary; token ids must be in 0 \.\. 9"),
    C("tl.sampling", lambda t: sampling.sample(t.x.long(), SP()), TypeError, r"sample: logits must be a floating"),
    C("tl.sampling", lambda t: sampling.top_logprobs(t.x, 11, torch.tensor([0])), ValueError,
      r"top_logprobs: n=11 is not allowed; must be an integer in 0 \.\. 10"),
    # ---- prefill / forward / decode_step / step_through -------------------------------------------
    C("prefill", lambda t: t.lm.prefill([], t.cache()), ValueError, r"empty prompt: at least one token id"),
    C("prefill", lambda t: t.lm.prefill("The sky", t.cache()), TypeError,
      r"text was given where token ids are expected \('The sky'\); turn it into ids with lm\.tokenizer\.encode"),
    C("prefill", lambda t: t.lm.prefill(None, t.cache()), TypeError,
      r"token ids must be an int, a list of ints, .* got NoneType"),
    C("prefill", lambda t: t.lm.prefill([1.7, 2.2], t.cache()), TypeError, r"token ids must be integers, got 1\.7"),
    C("prefill", lambda t: t.lm.prefill([True, False], t.cache()), TypeError, r"token ids must be integers, got True"),
    C("prefill", lambda t: t.lm.prefill([1, -1], t.cache()), ValueError,
      r"token id -1 is outside the vocabulary: token ids must be in 0 \.\. 49151"),
    C("prefill", lambda t: t.lm.prefill([1, V], t.cache()), ValueError, r"token id 49152 is outside .* 0 \.\. 49151"),
    C("prefill", lambda t: t.lm.prefill([1, 10**9], t.cache()), ValueError, r"token id 1000000000 is outside"),
    C("prefill", lambda t: t.lm.prefill(torch.tensor([1.0, 2.0]), t.cache()), TypeError,
      r"token ids must be an integer tensor, got dtype torch\.float32"),
    C("prefill", lambda t: t.lm.prefill(torch.tensor([True]), t.cache()), TypeError,
      r"must be an integer tensor, got dtype torch\.bool"),
    C("prefill", lambda t: t.lm.prefill(np.array([1.5, 2.0]), t.cache()), TypeError,
      r"token ids must be integers, got a numpy array of dtype float64"),
    C("prefill", lambda t: t.lm.prefill([[[1, 2]]], t.cache()), ValueError, r"nest at most two deep: \[batch\]\[seq\]"),
    C("prefill", lambda t: t.lm.prefill(torch.ones(1, 2, 3, dtype=LONG), t.cache()), ValueError,
      r"token ids must have shape \[batch, seq\], got \(1, 2, 3\)"),
    C("prefill", lambda t: t.lm.prefill([1, 2], "cache"), TypeError,
      r"cache must be a KVCache made by lm\.new_cache\(.*\), got str"),
    C("prefill", lambda t: t.lm.prefill([1, 2], t.cache(batch_size=2)), ValueError,
      r"1 sequence\(s\) given, but the cache was made for batch_size=2"),
    C("prefill", lambda t: t.lm.prefill([1, 2, 3, 4, 5], t.cache(max_len=4)), ValueError,
      r"KV cache is full: it holds 0 of 4 slots, and 5 more"),
    C("prefill", lambda t: t.lm.prefill([[1, 2], [3]], t.filled(batch_size=2)), ValueError,
      r"prompts of different lengths can only be prefilled into an empty cache"),
    C("forward", lambda t: t.lm.forward([[1, 2], [3]]), ValueError,
      r"ragged batch: rows of 1 and 2 tokens; forward needs rows of one length"),
    C("forward", lambda t: t.lm.forward("hello"), TypeError, r"text was given where token ids are expected"),
    C("forward", lambda t: t.lm.forward(torch.zeros(1, 2, 3, dtype=LONG)), ValueError,
      r"must have shape \[batch, seq\], got \(1, 2, 3\)"),
    C("forward", lambda t: t.lm.forward({"ids": [1]}), TypeError, r"token ids must be an int, a list .*got dict"),
    C("forward", lambda t: t.lm.forward(torch.zeros(1, 8193, dtype=LONG)), ValueError,
      r"a sequence of 8193 tokens is longer than the model's context window of 8192"),
    C("forward", lambda t: t.lm.forward([[1, 2], 3]), TypeError, r"token ids mix ints and lists: give one list"),
    C("decode_step", lambda t: t.lm.decode_step(1, t.cache()), ValueError,
      r"decode_step needs a cache that prefill has filled; call lm\.prefill\(ids, cache\) first"),
    C("decode_step", lambda t: t.lm.decode_step(torch.ones(1, 2, dtype=LONG), t.filled()), ValueError,
      r"one token per sequence: an int, a list of B ints, or a tensor of shape \[B\] or \[B, 1\]; got shape \(1, 2\)"),
    C("decode_step", lambda t: t.lm.decode_step(2.5, t.filled()), TypeError, r"token ids must be an int.*got float"),
    C("decode_step", lambda t: t.lm.decode_step("a", t.filled()), TypeError, r"text was given where token ids"),
    C("decode_step", lambda t: t.lm.decode_step(V, t.filled()), ValueError, r"token id 49152 is outside"),
    C("decode_step", lambda t: t.lm.decode_step(1, t.filled(max_len=3)), ValueError,
      r"KV cache is full: it holds 3 of 3 slots"),
    C("decode_step", lambda t: t.lm.decode_step(1, None), TypeError, r"cache must be a KVCache .*got NoneType"),
    C("decode_step", lambda t: t.lm.decode_step([1, 2], t.filled()), ValueError,
      r"2 sequence\(s\) given, but the cache was made for batch_size=1"),
    C("step_through", lambda t: list(t.lm.step_through("hi")), TypeError, r"text was given where token ids"),
    C("step_through", lambda t: list(t.lm.step_through([1, 2], t.cache(batch_size=2))), ValueError,
      r"given, but the cache was made for batch_size=2"),
    # ---- generate / stream / beam search --------------------------------------------------------------
    C("generate", lambda t: t.lm.generate([]), ValueError, r"a prompt must be a non-empty string, list of token ids"),
    C("generate", lambda t: t.lm.generate(""), ValueError, r"empty prompt: every prompt needs at least one token"),
    C("generate", lambda t: t.lm.generate(None), TypeError,
      r"a prompt must be a string, a list of token ids, or a list of those; got NoneType"),
    C("generate", lambda t: t.lm.generate(42), TypeError, r"a prompt must be a string, .*got int"),
    C("generate", lambda t: t.lm.generate(torch.ones(2, 2, 2, dtype=LONG)), ValueError,
      r"tensor of token ids must have shape \[seq\] \(one prompt\) or \[batch, seq\], got shape \(2, 2, 2\)"),
    C("generate", lambda t: t.lm.generate(torch.tensor([1.0, 2.0])), TypeError, r"integer tensor, got dtype torch\.fl"),
    C("generate", lambda t: t.lm.generate("hi", {"temperature": 0}), TypeError,
      r"params must be a SamplingParams instance or None; got \{'temperature': 0\}: use SamplingParams\(\*\*your_dict"),
    C("generate", lambda t: t.lm.generate("hi", SP), TypeError, r"use an instance, e\.g\. SamplingParams\(\)"),
    C("generate", lambda t: t.lm.generate("hi", 0.7), TypeError, r"params must be a SamplingParams instance or None"),
    C("generate", lambda t: t.lm.generate("hi", SP(logprobs=10**6)), ValueError,
      r"logprobs=1000000 is larger than the model's vocabulary of 49152 tokens; must be None or 0 \.\. 49152"),
    C("generate", lambda t: t.lm.generate("hi", SP(stop_token_ids=[V])), ValueError,
      r"stop_token_ids holds 49152, outside the model's vocabulary; token ids must be in 0 \.\. 49151"),
    C("generate", lambda t: t.lm.generate([1.5, 2]), TypeError,
      r"a prompt must be a string or a list of token ids \(i"),
    C("generate", lambda t: t.lm.generate([True, 2]), TypeError, r"got an element True \(bool\)"),
    C("generate", lambda t: t.lm.generate([[1, 2], [3, -1]]), ValueError, r"token id -1 is outside .* 0 \.\. 49151"),
    C("generate", lambda t: t.lm.generate([[[1, 2]]]), ValueError,
      r"a batch of prompts is a list of strings or of lists"),
    C("generate", lambda t: t.lm.generate([{"role": "user"}]), TypeError, r"got an element \{'role': 'user'\} \(dict"),
    C("generate", lambda t: t.lm.generate([1] * 8000, SP(max_tokens=500)), ValueError,
      r"a prompt of 8000 tokens plus max_tokens=500 exceeds the model's context window of 8192"),
    C("stream", lambda t: next(t.lm.stream(["a", "b"])), ValueError, r"stream takes one prompt; use generate for a b"),
    C("stream", lambda t: next(t.lm.stream("hi", SP(num_beams=2))), ValueError,
      r"beam search cannot stream: the best beam is known only at the end"),
    C("stream", lambda t: next(t.lm.stream("hi", {"max_tokens": 2})), TypeError, r"params must be a SamplingParams"),
    C("beam search", lambda t: next(tl.beam_search_steps(t.lm, [[1, 2], [3]], SP(num_beams=2))), ValueError,
      r"beam search takes one prompt \(a list of token ids or a string\), not a batch"),
    C("beam search", lambda t: next(tl.beam_search_steps(t.lm, [], SP(num_beams=2))), ValueError,
      r"a prompt must be a non-empty string, list of token ids"),
    C("generation_steps", lambda t: next(tl.generation_steps(t.lm, [[1, V]], SP())), ValueError,
      r"token id 49152 is outside"),
    C("generation_steps", lambda t: next(tl.generation_steps(t.lm, [[1]], "greedy")), TypeError,
      r"params must be a SamplingParams instance or None; got 'greedy'"),
    # ---- the tokenizer wrapper ------------------------------------------------------------------------
    C("tokenizer", lambda t: t.lm.tokenizer.encode([1, 2, 3]), TypeError,
      r"encode takes text \(a str\), got list; to turn token ids into text use decode"),
    C("tokenizer", lambda t: t.lm.tokenizer.encode(None), TypeError, r"encode takes text \(a str\), got NoneType"),
    C("tokenizer", lambda t: t.lm.tokenizer.encode(b"bytes"), TypeError, r"encode takes text \(a str\), got bytes"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([V]), ValueError,
      r"token id 49152 is outside the vocabulary: ids must be in 0 \.\. 49151"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([-1]), ValueError, r"token id -1 is outside .* 0 \.\. 49151"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([1.5]), TypeError, r"token ids must be integers, got 1\.5"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([True]), TypeError, r"token ids must be integers, got True"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode("hello"), TypeError,
      r"token ids must be an int or a list of ints, got str; to turn text into ids use encode"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode(torch.ones(2, 2, dtype=LONG)), TypeError,
      r"integers in a list or a 1-D tensor, got a torch\.int64 tensor of shape \(2, 2\)"),
    C("tokenizer", lambda t: t.lm.tokenizer.pieces([10**6]), ValueError, r"token id 1000000 is outside .* 49151"),
    C("tokenizer", lambda t: t.lm.tokenizer.token_text(10**6), ValueError, r"token id 1000000 is outside .* 49151"),
    C("tokenizer", lambda t: t.lm.tokenizer.token_text([1, 2]), TypeError,
      r"token_text takes one token id, got 2; use decode for a list"),
    C("tokenizer", lambda t: t.lm.tokenizer.apply_chat_template("hi"), TypeError,
      r"apply_chat_template takes a non-empty list of messages, each a dict with a 'role' and a 'content'"),
    C("tokenizer", lambda t: t.lm.tokenizer.apply_chat_template([{"role": "user"}]), TypeError,
      r"each a dict with a 'role' and a 'content' string.*got \[\{'role': 'user'\}\]"),
    # ---- caches ----------------------------------------------------------------------------------------
    C("cache", lambda t: t.lm.new_cache(max_len=0), ValueError, r"max_len must be a positive integer, got 0"),
    C("cache", lambda t: t.lm.new_cache(max_len=-3), ValueError, r"max_len must be a positive integer, got -3"),
    C("cache", lambda t: t.lm.new_cache(max_len=2.5), ValueError, r"max_len must be a positive integer, got 2\.5"),
    C("cache", lambda t: t.lm.new_cache(max_len=True), ValueError, r"max_len must be a positive integer, got True"),
    C("cache", lambda t: t.lm.new_cache(batch_size=False), ValueError, r"batch_size must be a positive integer"),
    C("cache", lambda t: t.lm.new_cache(max_len=8193), ValueError,
      r"max_len=8193 exceeds the model's context window of 8192 tokens"),
    C("cache", lambda t: t.lm.new_cache(max_len=4, batch_size=0), ValueError,
      r"batch_size must be a positive integer, got 0"),
    C("cache", lambda t: t.filled().truncate(9), ValueError, r"cannot truncate a cache of length 3 to 9"),
    C("cache", lambda t: t.filled().truncate(-1), ValueError, r"cannot truncate a cache of length 3 to -1"),
    # ---- tl.load ------------------------------------------------------------------------------------------
    C("tl.load", lambda t: tl.load("./no/such/checkpoint"), tl.ModelNotFoundError,
      r"no such folder: no/such/checkpoint\. Give a checkpoint folder, a \.gguf file, a Hub id"),
    C("tl.load", lambda t: tl.load(dtype="float8"), ValueError,
      r"dtype 'float8' is not one of float32, fp32, bfloat16"),
    C("tl.load", lambda t: tl.load(dtype=torch.int8), ValueError, r"dtype must be float32, bfloat16 or float16, got t"),
    C("tl.load", lambda t: tl.load(device="tpu"), ValueError,
      r"device='tpu' is not a device torch knows; use 'auto' \(the default\), 'cpu', 'cuda'"),
    C("tl.load", lambda t: tl.load(device=None), ValueError, r"device=None is not a device; use 'auto' \(the default"),
    C("tl.load", lambda t: tl.load(device="meta"), ValueError,
      r"device='meta' is not supported by teachllm; use 'auto'"),
    C("tl.load", lambda t: tl.load(42), TypeError, r"tl\.load takes a folder, a \.gguf file, a Hub id \(str or Path\)"),
    C("tl.load", lambda t: tl.load(t.folder(config={"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})),
      tl.UnsupportedModelError, r"unsupported model: 'gpt2'.*model_type llama, mistral, qwen2, qwen3"),
    C("tl.load", lambda t: tl.load(t.folder(files={"pytorch_model.bin": b"x"})), tl.ModelNotFoundError,
      r"holds no \*\.safetensors weights\. It has pytorch_model\.bin: teachllm does not unpickle weights"),
    C("tl.load", lambda t: tl.load(t.folder(files={"config.json": b"{oops"})), DamagedCheckpointError,
      r"config\.json is not valid JSON .*; restore the checkpoint's config\.json"),
    C("tl.load", lambda t: tl.load(t.folder(files={"model.safetensors": b"\0" * 64})), DamagedCheckpointError,
      r"model\.safetensors cannot be read as safetensors .*; replace it with a good copy of the checkpoint"),
    C("tl.load", lambda t: tl.load(t.folder(config=None)), FileNotFoundError,
      r"has no config\.json; a checkpoint folder needs config\.json and \*\.safetensors"),
    C("tl.load", lambda t: tl.load(t.file("notes.txt")), tl.ModelNotFoundError,
      r"notes\.txt is a file; give a checkpoint folder \(config\.json \+ \*\.safetensors\), a \.gguf file"),
    C("tl.load", lambda t: t.env("HF_HUB_OFFLINE", "1") or tl.load("someone/some-model"), tl.ModelNotFoundError,
      r"could not fetch 'someone/some-model'.*give a local folder instead; tl\.load\(\) with no argument"),
    C("tl.load", lambda t: t.env("TEACHLLM_DTYPE", "fp8") or tl.load(), ValueError,
      r"TEACHLLM_DTYPE='fp8' is not one of float32, fp32"),
    C("tl.load", lambda t: t.env("TEACHLLM_DEVICE", "tpu") or tl.load(), ValueError, r"device='tpu' is not a device"),
    C("tl.load", lambda t: t.env("TEACHLLM_CACHE", str(t.file("f") / "cache")) or tl.load(), CacheNotWritableError,
      r"cannot write the converted model to .*/f/cache .*; set TEACHLLM_CACHE to a writable folder"),
    # ---- tl.cost ---------------------------------------------------------------------------------------------
    C("tl.cost", lambda t: cost.prefill_flops(t.lm, 10), TypeError,
      r"prefill_flops takes a ModelConfig, got LanguageModel; pass lm\.config, not the model"),
    C("tl.cost", lambda t: cost.prefill_flops(t.cfg, -1), ValueError,
      r"prefill_flops: seq_len=-1 must be an integer ≥ 1"),
    C("tl.cost", lambda t: cost.prefill_flops(t.cfg, 0), ValueError, r"seq_len=0 must be an integer ≥ 1"),
    C("tl.cost", lambda t: cost.prefill_flops(t.cfg, 8, batch_size=-2), ValueError, r"batch_size=-2 must be an integ"),
    C("tl.cost", lambda t: cost.decode_flops(t.cfg, 0), ValueError, r"decode_flops: context_len=0 must be an integer"),
    C("tl.cost", lambda t: cost.decode_flops(t.cfg, 2.5), ValueError, r"context_len=2\.5 must be an integer ≥ 1"),
    C("tl.cost", lambda t: cost.decode_cost(t.cfg, True), ValueError, r"context_len=True must be an integer ≥ 1"),
    C("tl.cost", lambda t: cost.kv_cache_bytes(t.cfg, -1), ValueError,
      r"kv_cache_bytes: n_tokens=-1 must be an i.* ≥ 0"),
    C("tl.cost", lambda t: cost.kv_cache_bytes(t.cfg, 10, batch_size=0), ValueError,
      r"batch_size=0 must be an integer"),
    C("tl.cost", lambda t: cost.kv_cache_bytes(t.lm, 10), TypeError, r"kv_cache_bytes takes a ModelConfig, got Langu"),
    C("tl.cost", lambda t: cost.weight_bytes(t.lm), TypeError, r"weight_bytes takes a ModelConfig.*pass lm\.config"),
    C("tl.cost", lambda t: cost.weight_bytes(t.cfg, "float8"), ValueError, r"dtype 'float8' is not one of float32"),
    C("tl.cost", lambda t: cost.element_size(5), ValueError, r"element_size: dtype=5 must be a torch\.dtype or a name"),
    C("tl.cost", lambda t: cost.forward_flops(t.cfg, 5, 3), ValueError,
      r"n_keys \(3\) must be at least n_new \(5\): every new token is itself a key"),
    C("tl.cost", lambda t: cost.prefill_cost(t.cfg, -3), ValueError,
      r"prefill_cost: seq_len=-3 must be an integer ≥ 1"),
    C("tl.cost", lambda t: cost.textbook_flops(t.cfg, -1), ValueError, r"textbook_flops: seq_len=-1 must be an integ"),
    C("tl.cost", lambda t: cost.compare_with_textbook(t.cfg, 0), ValueError, r"seq_len=0 must be an integer ≥ 1"),
    C("tl.cost", lambda t: cost.weight_bytes_read(t.cfg, -1), ValueError, r"weight_bytes_read: n_new=-1 must be an"),
    C("tl.cost", lambda t: cost.layer_flops(t.cfg, 4, "8"), ValueError, r"layer_flops: n_keys='8' must be an integer"),
    # ---- serving ---------------------------------------------------------------------------------------------
    C("serving", lambda t: ServingConfig(policy="fifo"), ValueError,
      r"policy='fifo' is not allowed; must be one of \('static', 'continuous'\)"),
    C("serving", lambda t: ServingConfig(max_num_seqs=0), ValueError,
      r"max_num_seqs must be a positive integer, got 0"),
    C("serving", lambda t: ServingConfig(block_size=0), ValueError, r"block_size must be a positive integer, got 0"),
    C("serving", lambda t: ServingConfig(num_blocks=2.5), ValueError,
      r"num_blocks must be a positive integer, got 2\.5"),
    C("serving", lambda t: ServingConfig(max_num_seqs=True), ValueError,
      r"max_num_seqs must be a positive integer, got"),
    C("serving", lambda t: ServingConfig(max_num_seqs=8, max_num_batched_tokens=4), ValueError,
      r"max_num_batched_tokens=4 is smaller than max_num_seqs=8"),
    C("serving", lambda t: ServingConfig(max_num_batched_tokens=0), ValueError,
      r"max_num_batched_tokens must be None or a positive integer, got 0"),
    C("serving", lambda t: ServingConfig(chunked_prefill=True), ValueError,
      r"chunked_prefill needs a token budget: set max_num_batched_tokens"),
    C("serving", lambda t: ServingConfig(enable_prefix_caching="no"), ValueError,
      r"enable_prefix_caching='no' must be True or False"),
    C("serving", lambda t: ServingConfig(chunked_prefill="yes", max_num_batched_tokens=64), ValueError,
      r"chunked_prefill='yes' must be True or False"),
    C("serving", lambda t: ServingConfig(record_block_tables=1), ValueError, r"record_block_tables=1 must be True or"),
    C("serving", lambda t: t.engine().add_request(torch.ones(2, 3, dtype=LONG)), ValueError,
      r"add_request takes one prompt: a 1-D tensor of token ids, got shape \(2, 3\); add each row as its own"),
    C("serving", lambda t: t.engine().add_request([[1, 2], [3]]), ValueError,
      r"add_request takes one prompt \(a string, a list of token ids or a 1-D tensor\), got a batch"),
    C("serving", lambda t: t.engine().add_request([]), ValueError, r"a prompt must be a non-empty string"),
    C("serving", lambda t: t.engine().add_request(""), ValueError, r"empty prompt: a request needs at least one token"),
    C("serving", lambda t: t.engine().add_request([1, 10**6]), ValueError,
      r"token id 1000000 is outside .* 0 \.\. 491"),
    C("serving", lambda t: t.engine().add_request([1.5]), TypeError,
      r"a prompt must be a string or a list of token id"),
    C("serving", lambda t: t.engine().add_request(None), TypeError, r"a prompt must be a string, .*got NoneType"),
    C("serving", lambda t: t.engine().add_request([1], {"max_tokens": 3}), TypeError,
      r"params must be a SamplingParams instance or None; got \{'max_tokens': 3\}"),
    C("serving", lambda t: t.engine().add_request([1], SP(logprobs=10**6)), ValueError,
      r"logprobs=1000000 is larger than the model's vocabulary of 49152 tokens"),
    C("serving", lambda t: t.engine().add_request([1], SP(stop_token_ids=[10**6])), ValueError,
      r"stop_token_ids holds 1000000, outside the model's vocabulary"),
    C("serving", lambda t: t.engine().add_request([1], SP(num_beams=2)), ValueError,
      r"the serving engine does not do beam search; use lm\.generate for num_beams > 1"),
    C("serving", lambda t: t.engine().add_request([1] * 30, SP(max_tokens=10)), ValueError,
      r"a prompt of 30 tokens plus max_tokens=10 needs 40 KV slots, but the pool holds 32 .*raise ServingConfig\.n"),
    C("serving", lambda t: t.engine().run([]), ValueError, r"run\(\) needs at least one prompt: a string, a list of"),
    C("serving", lambda t: t.engine().run(None), ValueError, r"run\(\) needs at least one prompt.*got None"),
    C("serving", lambda t: t.engine().run(torch.ones(2, 2, 2, dtype=LONG)), ValueError,
      r"run\(\) takes prompts as a tensor of shape \[seq\] or \[batch, seq\], got shape \(2, 2, 2\)"),
    C("serving", lambda t: t.engine().run(["a", "b"], [SP()]), ValueError, r"1 SamplingParams given for 2 prompts"),
    C("serving", lambda t: t.engine().run(["a"], "greedy"), TypeError, r"params must be a SamplingParams instance"),
    C("serving", lambda t: t.engine().step(), RuntimeError,
      r"step\(\): there is nothing to run, no request is waiting or running; add one with add_request"),
    C("serving", lambda t: t.engine().abort(5), ValueError,
      r"abort: there is no request 5; request ids are the ints add_request returned"),
    C("serving", lambda t: t.engine().abort("0"), ValueError, r"abort: there is no request '0'"),
    # ---- the command line: one line, non-zero exit --------------------------------------------------------
    C("CLI", lambda t: cli(["step", "--top-p", "2"]), SystemExit, r"^error: .*top_p=2\.0 is out of range: must be in"),
    C("CLI", lambda t: cli(["step", "--temperature", "-1"]), SystemExit, r"^error: .*temperature=-1\.0 .*≥ 0"),
    C("CLI", lambda t: cli(["step", "--max-tokens", "0"]), SystemExit, r"^error: .*max_tokens=0 .*≥ 1"),
    C("CLI", lambda t: cli(["step", "--seed", str(2**70)]), SystemExit, r"^error: .*seed=1180591620717411303424"),
    C("CLI", lambda t: cli(["step", "--device", "tpu"]), SystemExit, r"^error: device='tpu' is not a device"),
    C("CLI", lambda t: cli(["step", "--dtype", "float8"]), SystemExit, r"^error: dtype 'float8' is not one of"),
    C("CLI", lambda t: cli(["step", "--model", "./nope"]), SystemExit, r"^error: no such folder: nope\. Give a"),
    C("CLI", lambda t: cli(["generate", "--num-beams", "3", "--temperature", "0.7"]), SystemExit,
      r"^error: .*does not take temperature"),
    C("CLI", lambda t: cli(["step", "\udcff"]), SystemExit, r"^error: the prompt is not valid UTF-8 text"),
]


@pytest.fixture
def t(lm, tmp_path, monkeypatch):
    def cache(max_len=8, batch_size=1):
        return lm.new_cache(max_len=max_len, batch_size=batch_size)

    def filled(max_len=8, batch_size=1):
        c = cache(max_len, batch_size)
        lm.prefill([[1, 2, 3]] * batch_size, c)
        return c

    def folder(config: dict | None = ..., files: dict | None = None):
        path = tmp_path / "checkpoint"
        path.mkdir(exist_ok=True)
        if config is ...:
            config = {"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
                      "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 16}
        if config is not None:
            (path / "config.json").write_text(json.dumps(config))
        for name, data in (files or {}).items():
            (path / name).write_bytes(data)
        return path

    def file(name):
        path = tmp_path / name
        path.write_text("")
        return path

    def engine():
        return ServingEngine(lm, ServingConfig(block_size=4, num_blocks=8, max_num_seqs=2))

    return SimpleNamespace(lm=lm, cfg=lm.config, x=torch.randn(1, 10), cache=cache, filled=filled, folder=folder,
                           file=file, engine=engine, env=monkeypatch.setenv)


@pytest.mark.parametrize("surface, call, error, pattern", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input(t, surface, call, error, pattern):
    with pytest.raises(error, match=pattern) as raised:
        call(t)
    if error is SystemExit:
        assert raised.value.code != 0 and "\n" not in str(raised.value.code)  # one line, non-zero


def test_at_least_150_cases_cover_every_surface():
    surfaces = {c[0] for c in CASES}
    assert len(CASES) >= 150
    assert {"SamplingParams", "tl.sampling", "prefill", "forward", "decode_step", "generate", "stream", "tokenizer",
            "cache", "tl.load", "tl.cost", "serving", "CLI"} <= surfaces


# ---- what a refused input leaves behind: nothing --------------------------------------------------------
def test_a_refused_assignment_leaves_the_params_as_they_were():
    params = SP(max_tokens=5, temperature=0.5)
    with pytest.raises(ValueError):
        params.max_tokens = 0
    with pytest.raises(ValueError):
        params.min_tokens = 9
    assert (params.max_tokens, params.min_tokens, params.temperature) == (5, 0, 0.5)
    params.max_tokens = 7  # a good value is taken
    assert params.max_tokens == 7 and params.replace(seed=3) == SP(max_tokens=7, temperature=0.5, seed=3)


def test_numpy_scalars_are_numbers(lm):
    params = SP(temperature=np.float32(0.5), top_k=np.int64(5), max_tokens=np.int32(3), seed=np.uint64(7),
                stop_token_ids=[np.int64(2)])
    assert (type(params.temperature), type(params.top_k), type(params.max_tokens)) == (float, int, int)
    assert params == SP(temperature=0.5, top_k=5, max_tokens=3, seed=7, stop_token_ids=[2])
    ids = np.array(lm.tokenizer.encode("The sky is"))
    assert torch.equal(lm.prefill(ids, lm.new_cache(max_len=8)), lm.prefill(ids.tolist(), lm.new_cache(max_len=8)))


def test_a_prompt_longer_than_the_cache_writes_nothing(lm):
    cache = lm.new_cache(max_len=4)
    with pytest.raises(ValueError, match="KV cache is full"):
        lm.prefill([1, 2, 3, 4, 5], cache)
    assert cache.length == 0


def test_a_full_cache_stays_as_it_was(lm):
    cache = lm.new_cache(max_len=3)
    lm.prefill([1, 2, 3], cache)
    with pytest.raises(ValueError, match="KV cache is full"):
        lm.decode_step(4, cache)
    assert cache.length == 3


def test_a_refused_request_leaves_the_engine_idle_and_usable(lm):
    engine = ServingEngine(lm, ServingConfig(block_size=4, num_blocks=8, max_num_seqs=2))
    with pytest.raises(ValueError):
        engine.add_request([1], SP(logprobs=10**6))
    assert not engine.has_unfinished and engine.block_manager.num_free_blocks == 8
    run = engine.run([[1, 2, 3]], SP(temperature=0, max_tokens=2))
    assert run.outputs[0].token_ids == lm.generate([1, 2, 3], SP(temperature=0, max_tokens=2)).token_ids


def test_config_validation():
    base = dict(vocab_size=10, hidden_size=8, intermediate_size=16, n_layers=1, n_heads=4, n_kv_heads=4,
                head_dim=2, max_position_embeddings=16)
    tl.ModelConfig(**base)
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        tl.ModelConfig(**{**base, "n_kv_heads": 3})
    with pytest.raises(ValueError, match="n_layers must be a positive integer"):
        tl.ModelConfig(**{**base, "n_layers": 0})
    with pytest.raises(ValueError, match="model_type 'gpt2' is not supported"):
        tl.ModelConfig(**{**base, "model_type": "gpt2"})
