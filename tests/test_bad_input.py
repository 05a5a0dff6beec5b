"""Bad input, on every public surface, gets an exception that names what was wrong and what is allowed.

One table, one line per case: (surface, call, exception type, facts…). The call receives `t`, which
holds the model (`t.lm`, `t.cfg`), fresh caches and engines, small logits and a temporary folder.
The facts are what the message must name, in any order and in any wording: the argument or field, the bad
value as the user gave it (where a message can hold it), and what is allowed or how to fix it.

A fact is a plain substring, a tuple of accepted spellings (`POSITIVE`), or `word("p")` for a one-letter
argument. Each fact must be found in text of its own: the value 0 does not count inside the range `> 0`.
"""

import json
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import teachllm as tl
from teachllm import cost, sampling
from teachllm.checkpoints.loading import CacheNotWritableError, DamagedCheckpointError
from teachllm.cli import main as cli
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

SP = tl.SamplingParams
V = 49152  # the bundled model's vocabulary
NAN, INF = math.nan, math.inf
LONG = torch.long
POSITIVE = ("≥ 1", "positive")  # an integer ≥ 1, said either way
VOCAB = "0 .. 49151"  # the bundled model's token ids


def word(name):
    """A one-letter argument such as `p`, found only as a word of its own (not the p of 'top_p')."""
    return re.compile(rf"\b{re.escape(name)}\b")


def C(surface, call, error, *facts):
    """One case: `call(t)` must raise `error`, with a message that names every fact."""
    return surface, call, error, facts


def find(fact, message):
    """Where `fact` first appears in `message`, as (start, end), or None."""
    if isinstance(fact, re.Pattern):
        found = fact.search(message)
        return found.span() if found else None
    for spelling in fact if isinstance(fact, tuple) else (fact,):
        start = message.find(spelling)
        if start >= 0:
            return start, start + len(spelling)
    return None


def shortest(fact):
    """The length of a fact's shortest spelling; a word() is one letter, the shortest of all."""
    if isinstance(fact, re.Pattern):
        return 0
    return min(map(len, fact)) if isinstance(fact, tuple) else len(fact)


def missing_facts(message, facts):
    """The facts that `message` does not name. Longer facts are found first and their text is blanked out,
    so a short fact cannot be found inside a longer one: the value 0 does not count inside '> 0'."""
    missing = []
    for fact in sorted(facts, key=shortest, reverse=True):
        span = find(fact, message)
        if span is None:
            missing.append(fact)
        else:
            start, end = span
            message = message[:start] + "\0" * (end - start) + message[end:]
    return missing


def assert_names(message, facts):
    missing = missing_facts(message, facts)
    assert not missing, f"the message does not name {missing}: {message}"


def message_of(error):
    """The text the user reads: an exception's message, or the line the CLI exits with."""
    return str(error.code) if isinstance(error, SystemExit) else str(error)


def assign(params, **change):
    for name, value in change.items():
        setattr(params, name, value)


CASES = [
    # ---- SamplingParams: each field's type and range ------------------------------------------------
    C("SamplingParams", lambda t: SP(temperature=-0.1), ValueError, "temperature", "-0.1", "≥ 0"),
    C("SamplingParams", lambda t: SP(temperature="hot"), ValueError, "temperature", "'hot'", "≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=NAN), ValueError, "temperature", "nan", "≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=INF), ValueError, "temperature", "inf", "≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=None), ValueError, "temperature", "None", "≥ 0"),
    C("SamplingParams", lambda t: SP(temperature=True), ValueError, "temperature", "True", "≥ 0"),
    C("SamplingParams", lambda t: SP(top_k=-2), ValueError, "top_k", "-2", "-1", "0", "≥ 1"),
    C("SamplingParams", lambda t: SP(top_k=2.5), ValueError, "top_k", "2.5", "-1", "0", "≥ 1"),
    C("SamplingParams", lambda t: SP(top_k="5"), ValueError, "top_k", "'5'", "-1", "0", "≥ 1"),
    C("SamplingParams", lambda t: SP(top_k=True), ValueError, "top_k", "True", "-1", "0", "≥ 1"),
    C("SamplingParams", lambda t: SP(top_p=0.0), ValueError, "top_p", "0.0", "(0, 1]"),
    C("SamplingParams", lambda t: SP(top_p=1.5), ValueError, "top_p", "1.5", "(0, 1]"),
    C("SamplingParams", lambda t: SP(top_p=-0.1), ValueError, "top_p", "-0.1", "(0, 1]"),
    C("SamplingParams", lambda t: SP(top_p=NAN), ValueError, "top_p", "nan", "(0, 1]"),
    C("SamplingParams", lambda t: SP(top_p="0.9"), ValueError, "top_p", "'0.9'", "(0, 1]"),
    C("SamplingParams", lambda t: SP(min_p=-0.1), ValueError, "min_p", "-0.1", "[0, 1]"),
    C("SamplingParams", lambda t: SP(min_p=1.1), ValueError, "min_p", "1.1", "[0, 1]"),
    C("SamplingParams", lambda t: SP(min_p=NAN), ValueError, "min_p", "nan", "[0, 1]"),
    C("SamplingParams", lambda t: SP(repetition_penalty=0), ValueError, "repetition_penalty", "0", "> 0"),
    C("SamplingParams", lambda t: SP(repetition_penalty=-1), ValueError, "repetition_penalty", "-1", "> 0"),
    C("SamplingParams", lambda t: SP(repetition_penalty=NAN), ValueError, "repetition_penalty", "nan", "> 0"),
    C("SamplingParams", lambda t: SP(repetition_penalty=INF), ValueError, "repetition_penalty", "inf", "> 0"),
    C("SamplingParams", lambda t: SP(presence_penalty=2.5), ValueError, "presence_penalty", "2.5", "[-2, 2]"),
    C("SamplingParams", lambda t: SP(presence_penalty=-3), ValueError, "presence_penalty", "-3", "[-2, 2]"),
    C("SamplingParams", lambda t: SP(frequency_penalty=-2.1), ValueError, "frequency_penalty", "-2.1", "[-2, 2]"),
    C("SamplingParams", lambda t: SP(frequency_penalty=NAN), ValueError, "frequency_penalty", "nan", "[-2, 2]"),
    C("SamplingParams", lambda t: SP(no_repeat_ngram_size=-1), ValueError, "no_repeat_ngram_size", "-1", "≥ 0"),
    C("SamplingParams", lambda t: SP(no_repeat_ngram_size=1.5), ValueError, "no_repeat_ngram_size", "1.5", "≥ 0"),
    C("SamplingParams", lambda t: SP(max_tokens=0), ValueError, "max_tokens", "0", POSITIVE),
    C("SamplingParams", lambda t: SP(max_tokens=-5), ValueError, "max_tokens", "-5", POSITIVE),
    C("SamplingParams", lambda t: SP(max_tokens=2.0), ValueError, "max_tokens", "2.0", POSITIVE),
    C("SamplingParams", lambda t: SP(max_tokens=None), ValueError, "max_tokens", "None", POSITIVE),
    C("SamplingParams", lambda t: SP(max_tokens=True), ValueError, "max_tokens", "True", POSITIVE),
    C("SamplingParams", lambda t: SP(min_tokens=-1), ValueError, "min_tokens", "-1", "≥ 0"),
    C("SamplingParams", lambda t: SP(min_tokens=20, max_tokens=10), ValueError,
      "min_tokens", "20", "max_tokens", "10", "≤"),
    C("SamplingParams", lambda t: SP(stop=[3]), ValueError, "stop", "3", "string"),
    C("SamplingParams", lambda t: SP(stop=[""]), ValueError, "stop", "''", "non-empty"),
    C("SamplingParams", lambda t: SP(stop=None), ValueError, "stop", "None", "string"),
    C("SamplingParams", lambda t: SP(stop=5), ValueError, "stop", "5", "string"),
    C("SamplingParams", lambda t: SP(stop_token_ids=[-5]), ValueError, "stop_token_ids", "-5", "≥ 0"),
    C("SamplingParams", lambda t: SP(stop_token_ids=["a"]), ValueError, "stop_token_ids", "'a'", "≥ 0"),
    C("SamplingParams", lambda t: SP(stop_token_ids=[1.5]), ValueError, "stop_token_ids", "1.5", "≥ 0"),
    C("SamplingParams", lambda t: SP(stop_token_ids=None), ValueError, "stop_token_ids", "None", "list", "≥ 0"),
    C("SamplingParams", lambda t: SP(stop_token_ids=3), ValueError, "stop_token_ids", "3", "list", "≥ 0"),
    C("SamplingParams", lambda t: SP(ignore_eos="no"), ValueError, "ignore_eos", "'no'", "True or False"),
    C("SamplingParams", lambda t: SP(ignore_eos=1), ValueError, "ignore_eos", "1", "True or False"),
    C("SamplingParams", lambda t: SP(ignore_eos=None), ValueError, "ignore_eos", "None", "True or False"),
    C("SamplingParams", lambda t: SP(include_stop_str_in_output="false"), ValueError,
      "include_stop_str_in_output", "'false'", "True or False"),
    C("SamplingParams", lambda t: SP(seed=2**64), ValueError, "seed", "18446744073709551616", "-2**63", "2**64 - 1"),
    C("SamplingParams", lambda t: SP(seed=-2**63 - 1), ValueError,
      "seed", "-9223372036854775809", "-2**63", "2**64 - 1"),
    C("SamplingParams", lambda t: SP(seed=1.5), ValueError, "seed", "1.5", "None", "integer"),
    C("SamplingParams", lambda t: SP(seed="1"), ValueError, "seed", "'1'", "None", "integer"),
    C("SamplingParams", lambda t: SP(logprobs=-1), ValueError, "logprobs", "-1", "None", "≥ 0"),
    C("SamplingParams", lambda t: SP(logprobs=1.5), ValueError, "logprobs", "1.5", "None", "≥ 0"),
    C("SamplingParams", lambda t: SP(logprobs=True), ValueError, "logprobs", "True", "None", "≥ 0"),
    C("SamplingParams", lambda t: SP(num_beams=0), ValueError, "num_beams", "0", POSITIVE),
    C("SamplingParams", lambda t: SP(num_beams=2.0), ValueError, "num_beams", "2.0", POSITIVE),
    C("SamplingParams", lambda t: SP(length_penalty=INF), ValueError, "length_penalty", "inf", "finite"),
    C("SamplingParams", lambda t: SP(length_penalty=NAN), ValueError, "length_penalty", "nan", "finite"),
    C("SamplingParams", lambda t: SP(length_penalty="1"), ValueError, "length_penalty", "'1'", "number"),
    C("SamplingParams", lambda t: SP(num_beams=3, top_p=0.9), ValueError, "num_beams", "3", "top_p", "default"),
    C("SamplingParams", lambda t: SP(num_beams=3, temperature=0.7), ValueError,
      "num_beams", "3", "temperature", "0 or 1"),
    C("SamplingParams", lambda t: SP(num_beams=2, stop=["x"]), ValueError, "num_beams", "2", "stop", "default"),
    C("SamplingParams", lambda t: SP(num_beams=2, logprobs=1), ValueError, "num_beams", "2", "logprobs", "default"),
    # ---- SamplingParams after construction: assignment is checked, replace() too ----------------------
    C("SamplingParams", lambda t: assign(SP(), max_tokens=0), ValueError, "max_tokens", "0", POSITIVE),
    C("SamplingParams", lambda t: assign(SP(), temperature=-1), ValueError, "temperature", "-1", "≥ 0"),
    C("SamplingParams", lambda t: assign(SP(), top_p=0), ValueError, "top_p", "0", "(0, 1]"),
    C("SamplingParams", lambda t: assign(SP(), ignore_eos="no"), ValueError, "ignore_eos", "'no'", "True or False"),
    C("SamplingParams", lambda t: assign(SP(), stop=None), ValueError, "stop", "None", "string"),
    C("SamplingParams", lambda t: assign(SP(max_tokens=5), min_tokens=9), ValueError,
      "min_tokens", "9", "max_tokens", "5", "≤"),
    C("SamplingParams", lambda t: assign(SP(top_p=0.9), num_beams=2), ValueError, "num_beams", "2", "top_p", "default"),
    C("SamplingParams", lambda t: assign(SP(), seed=2**70), ValueError, "seed", "1180591620717411303424", "2**64 - 1"),
    C("SamplingParams", lambda t: SP().replace(max_tokens=0), ValueError, "max_tokens", "0", POSITIVE),
    C("SamplingParams", lambda t: SP().replace(top_q=1), ValueError, "top_q", "top_p"),
    # ---- tl.sampling: the pure functions -------------------------------------------------------------
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, 0.0), ValueError, "temperature", "0.0", "> 0", "greedy"),
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, -1), ValueError, "temperature", "-1", "> 0"),
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, NAN), ValueError, word("t"), "nan", "> 0"),
    C("tl.sampling", lambda t: sampling.apply_temperature(t.x, "1"), ValueError, word("t"), "'1'", "> 0"),
    C("tl.sampling", lambda t: sampling.apply_temperature([1.0, 2.0], 1.0), TypeError,
      "logits", "list", "floating-point", "tensor"),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x, 2.5), ValueError, word("k"), "2.5", "integer"),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x, "3"), ValueError, word("k"), "'3'", "integer"),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x, 3, min_tokens_to_keep=0), ValueError,
      "min_tokens_to_keep", "0", POSITIVE),
    C("tl.sampling", lambda t: sampling.apply_top_k(t.x.long(), 3), TypeError, "logits", "torch.int64", "floating"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, 0.0), ValueError, word("p"), "0.0", "(0, 1]"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, -0.5), ValueError, word("p"), "-0.5", "(0, 1]"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, 1.5), ValueError, word("p"), "1.5", "(0, 1]"),
    C("tl.sampling", lambda t: sampling.apply_top_p(t.x, NAN), ValueError, word("p"), "nan", "(0, 1]"),
    C("tl.sampling", lambda t: sampling.apply_min_p(t.x, 1.5), ValueError, word("p"), "1.5", "[0, 1]"),
    C("tl.sampling", lambda t: sampling.apply_min_p(t.x, -0.1), ValueError, word("p"), "-0.1", "[0, 1]"),
    C("tl.sampling", lambda t: sampling.apply_min_p(t.x, NAN), ValueError, word("p"), "nan", "[0, 1]"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [1], 0), ValueError, word("r"), "0", "> 0"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [1], -1.2), ValueError,
      word("r"), "-1.2", "> 0"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [1], NAN), ValueError, word("r"), "nan", "> 0"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, [10**6], 1.2), ValueError,
      "histories", "1000000", "0 .. 9"),
    C("tl.sampling", lambda t: sampling.apply_repetition_penalty(t.x, "abc", 1.2), ValueError,
      "histories", "str", "list"),
    C("tl.sampling", lambda t: sampling.apply_presence_frequency_penalty(t.x, [1], NAN, 0), ValueError,
      "presence", "nan", "finite"),
    C("tl.sampling", lambda t: sampling.apply_presence_frequency_penalty(t.x, [1], 0, INF), ValueError,
      "frequency", "inf", "finite"),
    C("tl.sampling", lambda t: sampling.apply_no_repeat_ngram(t.x, [1, 2], -1), ValueError, word("n"), "-1", "≥ 0"),
    C("tl.sampling", lambda t: sampling.apply_no_repeat_ngram(t.x, [1, 2], 1.5), ValueError,
      word("n"), "1.5", "integer", "≥ 0"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, None, [], []), TypeError,
      "params", "None", "SamplingParams"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, {"temperature": 0}, [], []), TypeError,
      "params", "{'temperature': 0}", "SamplingParams"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, SP, [], []), TypeError,
      "params", "class", "SamplingParams", "instance"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, SP(), [[1], [2]], [[], []]), ValueError,
      "histories", "2", "1", "row"),
    C("tl.sampling", lambda t: sampling.process_logits(t.x, SP(stop_token_ids=[50], min_tokens=1), [], []), ValueError,
      "stop_token_ids", "50", "0 .. 9"),
    C("tl.sampling", lambda t: sampling.sample(t.x.long(), SP()), TypeError, "logits", "torch.int64", "floating"),
    C("tl.sampling", lambda t: sampling.top_logprobs(t.x, 11, torch.tensor([0])), ValueError,
      word("n"), "11", "0 .. 10"),
    # ---- prefill / forward / decode_step / step_through -------------------------------------------
    C("prefill", lambda t: t.lm.prefill([], t.cache()), ValueError, "empty", "at least one token"),
    C("prefill", lambda t: t.lm.prefill("The sky", t.cache()), TypeError,
      "text", "'The sky'", "token ids", "lm.tokenizer.encode"),
    C("prefill", lambda t: t.lm.prefill(None, t.cache()), TypeError, "token ids", "None", "list", "tensor"),
    C("prefill", lambda t: t.lm.prefill([1.7, 2.2], t.cache()), TypeError, "token ids", "1.7", "integer"),
    C("prefill", lambda t: t.lm.prefill([True, False], t.cache()), TypeError, "token ids", "True", "integer"),
    C("prefill", lambda t: t.lm.prefill([1, -1], t.cache()), ValueError, "token id", "-1", VOCAB),
    C("prefill", lambda t: t.lm.prefill([1, V], t.cache()), ValueError, "token id", "49152", VOCAB),
    C("prefill", lambda t: t.lm.prefill([1, 10**9], t.cache()), ValueError, "token id", "1000000000", VOCAB),
    C("prefill", lambda t: t.lm.prefill(torch.tensor([1.0, 2.0]), t.cache()), TypeError,
      "token ids", "torch.float32", "integer"),
    C("prefill", lambda t: t.lm.prefill(torch.tensor([True]), t.cache()), TypeError,
      "token ids", "torch.bool", "integer"),
    C("prefill", lambda t: t.lm.prefill(np.array([1.5, 2.0]), t.cache()), TypeError,
      "token ids", "numpy", "float64", "integer"),
    C("prefill", lambda t: t.lm.prefill([[[1, 2]]], t.cache()), ValueError, "token ids", "[batch][seq]"),
    C("prefill", lambda t: t.lm.prefill(torch.ones(1, 2, 3, dtype=LONG), t.cache()), ValueError,
      "token ids", "(1, 2, 3)", "[batch, seq]"),
    C("prefill", lambda t: t.lm.prefill([1, 2], "cache"), TypeError, "cache", "str", "KVCache", "lm.new_cache"),
    C("prefill", lambda t: t.lm.prefill([1, 2], t.cache(batch_size=2)), ValueError,
      "sequence", "1", "batch_size", "2"),
    C("prefill", lambda t: t.lm.prefill([1, 2, 3, 4, 5], t.cache(max_len=4)), ValueError,
      "KV cache", "full", "4", "5", "lm.new_cache", "max_len"),
    C("prefill", lambda t: t.lm.prefill([[1, 2], [3]], t.filled(batch_size=2)), ValueError,
      "different lengths", "empty cache"),
    C("forward", lambda t: t.lm.forward([[1, 2], [3]]), ValueError, "rows", "1", "2", "one length"),
    C("forward", lambda t: t.lm.forward("hello"), TypeError, "text", "'hello'", "token ids", "lm.tokenizer.encode"),
    C("forward", lambda t: t.lm.forward(torch.zeros(1, 2, 3, dtype=LONG)), ValueError,
      "token ids", "(1, 2, 3)", "[batch, seq]"),
    C("forward", lambda t: t.lm.forward({"ids": [1]}), TypeError, "token ids", "dict", "list", "tensor"),
    C("forward", lambda t: t.lm.forward(torch.zeros(1, 8193, dtype=LONG)), ValueError,
      "8193", "context window", "8192"),
    C("forward", lambda t: t.lm.forward([[1, 2], 3]), TypeError, "token ids", "ints", "lists", "one list per sequence"),
    C("decode_step", lambda t: t.lm.decode_step(1, t.cache()), ValueError, "decode_step", "lm.prefill"),
    C("decode_step", lambda t: t.lm.decode_step(torch.ones(1, 2, dtype=LONG), t.filled()), ValueError,
      "decode_step", "one token per sequence", "(1, 2)", "[B, 1]"),
    C("decode_step", lambda t: t.lm.decode_step(2.5, t.filled()), TypeError, "token ids", "float", "int"),
    C("decode_step", lambda t: t.lm.decode_step("a", t.filled()), TypeError,
      "text", "'a'", "token ids", "lm.tokenizer.encode"),
    C("decode_step", lambda t: t.lm.decode_step(V, t.filled()), ValueError, "token id", "49152", VOCAB),
    C("decode_step", lambda t: t.lm.decode_step(1, t.filled(max_len=3)), ValueError,
      "KV cache", "full", "3", "lm.new_cache", "max_len"),
    C("decode_step", lambda t: t.lm.decode_step(1, None), TypeError, "cache", "None", "KVCache", "lm.new_cache"),
    C("decode_step", lambda t: t.lm.decode_step([1, 2], t.filled()), ValueError, "sequence", "2", "batch_size", "1"),
    C("step_through", lambda t: list(t.lm.step_through("hi")), TypeError,
      "text", "'hi'", "token ids", "lm.tokenizer.encode"),
    C("step_through", lambda t: list(t.lm.step_through([1, 2], t.cache(batch_size=2))), ValueError,
      "sequence", "1", "batch_size", "2"),
    # ---- generate / stream / beam search --------------------------------------------------------------
    C("generate", lambda t: t.lm.generate([]), ValueError, "prompt", "[]", "non-empty"),
    C("generate", lambda t: t.lm.generate(""), ValueError, "prompt", "empty", "at least one token"),
    C("generate", lambda t: t.lm.generate(None), TypeError, "prompt", "None", "string", "token ids"),
    C("generate", lambda t: t.lm.generate(42), TypeError, "prompt", "int", "string", "token ids"),
    C("generate", lambda t: t.lm.generate(torch.ones(2, 2, 2, dtype=LONG)), ValueError,
      "token ids", "(2, 2, 2)", "[seq]", "[batch, seq]"),
    C("generate", lambda t: t.lm.generate(torch.tensor([1.0, 2.0])), TypeError,
      "token ids", "torch.float32", "integer"),
    C("generate", lambda t: t.lm.generate("hi", {"temperature": 0}), TypeError,
      "params", "{'temperature': 0}", "SamplingParams(**"),
    C("generate", lambda t: t.lm.generate("hi", SP), TypeError, "params", "class", "instance", "SamplingParams()"),
    C("generate", lambda t: t.lm.generate("hi", 0.7), TypeError, "params", "0.7", "SamplingParams"),
    C("generate", lambda t: t.lm.generate("hi", SP(logprobs=10**6)), ValueError,
      "logprobs", "1000000", "49152 tokens", "0 .. 49152"),
    C("generate", lambda t: t.lm.generate("hi", SP(stop_token_ids=[V])), ValueError,
      "stop_token_ids", "49152", VOCAB),
    C("generate", lambda t: t.lm.generate([1.5, 2]), TypeError, "prompt", "1.5", "token ids", "int"),
    C("generate", lambda t: t.lm.generate([True, 2]), TypeError, "prompt", "True", "token ids", "int"),
    C("generate", lambda t: t.lm.generate([[1, 2], [3, -1]]), ValueError, "token id", "-1", VOCAB),
    C("generate", lambda t: t.lm.generate([[[1, 2]]]), ValueError, "batch", "prompt", "strings", "token ids"),
    C("generate", lambda t: t.lm.generate([{"role": "user"}]), TypeError,
      "prompt", "{'role': 'user'}", "string", "token ids"),
    C("generate", lambda t: t.lm.generate([1] * 8000, SP(max_tokens=500)), ValueError,
      "8000", "max_tokens", "500", "context window", "8192"),
    C("stream", lambda t: next(t.lm.stream(["a", "b"])), ValueError, "stream", "one prompt", "generate"),
    C("stream", lambda t: next(t.lm.stream("hi", SP(num_beams=2))), ValueError, "beam search", "stream"),
    C("stream", lambda t: next(t.lm.stream("hi", {"max_tokens": 2})), TypeError,
      "params", "{'max_tokens': 2}", "SamplingParams"),
    C("beam search", lambda t: next(tl.beam_search_steps(t.lm, [[1, 2], [3]], SP(num_beams=2))), ValueError,
      "beam search", "one prompt", "batch"),
    C("beam search", lambda t: next(tl.beam_search_steps(t.lm, [], SP(num_beams=2))), ValueError,
      "prompt", "[]", "non-empty"),
    C("generation_steps", lambda t: next(tl.generation_steps(t.lm, [[1, V]], SP())), ValueError,
      "token id", "49152", VOCAB),
    C("generation_steps", lambda t: next(tl.generation_steps(t.lm, [[1]], "greedy")), TypeError,
      "params", "'greedy'", "SamplingParams"),
    # ---- the tokenizer wrapper ------------------------------------------------------------------------
    C("tokenizer", lambda t: t.lm.tokenizer.encode([1, 2, 3]), TypeError, "encode", "list", "str", "decode"),
    C("tokenizer", lambda t: t.lm.tokenizer.encode(None), TypeError, "encode", "None", "str"),
    C("tokenizer", lambda t: t.lm.tokenizer.encode(b"bytes"), TypeError, "encode", "bytes", "str"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([V]), ValueError, "token id", "49152", "0 .. 49151"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([-1]), ValueError, "token id", "-1", "0 .. 49151"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([1.5]), TypeError, "token ids", "1.5", "integer"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([True]), TypeError, "token ids", "True", "integer"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode("hello"), TypeError, "token ids", "str", "int", "encode"),
    C("tokenizer", lambda t: t.lm.tokenizer.decode(torch.ones(2, 2, dtype=LONG)), TypeError,
      "token ids", "(2, 2)", "1-D"),
    C("tokenizer", lambda t: t.lm.tokenizer.pieces([10**6]), ValueError, "token id", "1000000", VOCAB),
    C("tokenizer", lambda t: t.lm.tokenizer.token_text(10**6), ValueError, "token id", "1000000", VOCAB),
    C("tokenizer", lambda t: t.lm.tokenizer.token_text([1, 2]), TypeError,
      "token_text", "one token id", "2", "decode"),
    C("tokenizer", lambda t: t.lm.tokenizer.apply_chat_template("hi"), TypeError,
      "apply_chat_template", "'hi'", "list", "'role'", "'content'"),
    C("tokenizer", lambda t: t.lm.tokenizer.apply_chat_template([{"role": "user"}]), TypeError,
      "apply_chat_template", "[{'role': 'user'}]", "'content'"),
    # ---- caches ----------------------------------------------------------------------------------------
    C("cache", lambda t: t.lm.new_cache(max_len=0), ValueError, "max_len", "0", POSITIVE),
    C("cache", lambda t: t.lm.new_cache(max_len=-3), ValueError, "max_len", "-3", POSITIVE),
    C("cache", lambda t: t.lm.new_cache(max_len=2.5), ValueError, "max_len", "2.5", POSITIVE),
    C("cache", lambda t: t.lm.new_cache(max_len=True), ValueError, "max_len", "True", POSITIVE),
    C("cache", lambda t: t.lm.new_cache(batch_size=False), ValueError, "batch_size", "False", POSITIVE),
    C("cache", lambda t: t.lm.new_cache(max_len=8193), ValueError, "max_len", "8193", "context window", "8192"),
    C("cache", lambda t: t.lm.new_cache(max_len=4, batch_size=0), ValueError, "batch_size", "0", POSITIVE),
    C("cache", lambda t: t.filled().truncate(9), ValueError, "truncate", "3", "9"),
    C("cache", lambda t: t.filled().truncate(-1), ValueError, "truncate", "3", "-1"),
    # ---- tl.load ------------------------------------------------------------------------------------------
    C("tl.load", lambda t: tl.load("./no/such/checkpoint"), tl.ModelNotFoundError,
      "no/such/checkpoint", "folder", ".gguf", "Hub id"),
    C("tl.load", lambda t: tl.load(dtype="float8"), ValueError, "dtype", "float8", "float32", "bfloat16", "float16"),
    C("tl.load", lambda t: tl.load(dtype=torch.int8), ValueError,
      "dtype", "torch.int8", "float32", "bfloat16", "float16"),
    C("tl.load", lambda t: tl.load(device="tpu"), ValueError, "device", "tpu", "auto", "cpu", "cuda"),
    C("tl.load", lambda t: tl.load(device=None), ValueError, "device", "None", "auto", "cpu", "cuda"),
    C("tl.load", lambda t: tl.load(device="meta"), ValueError, "device", "meta", "auto", "cpu", "cuda"),
    C("tl.load", lambda t: tl.load(42), TypeError, "tl.load", "int", "folder", "str", "Path"),
    C("tl.load", lambda t: tl.load(t.folder(config={"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})),
      tl.UnsupportedModelError, "model_type", "gpt2", "llama", "mistral", "qwen2", "qwen3"),
    C("tl.load", lambda t: tl.load(t.folder(files={"pytorch_model.bin": b"x"})), tl.ModelNotFoundError,
      "checkpoint", "pytorch_model.bin", ".safetensors", "convert"),
    C("tl.load", lambda t: tl.load(t.folder(files={"config.json": b"{oops"})), DamagedCheckpointError,
      "config.json", "JSON", "restore"),
    C("tl.load", lambda t: tl.load(t.folder(files={"model.safetensors": b"\0" * 64})), DamagedCheckpointError,
      "model.safetensors", "safetensors", "replace"),
    C("tl.load", lambda t: tl.load(t.folder(config=None)), FileNotFoundError,
      "checkpoint", "config.json", ".safetensors"),
    C("tl.load", lambda t: tl.load(t.file("notes.txt")), tl.ModelNotFoundError,
      "notes.txt", "folder", "config.json", ".gguf"),
    C("tl.load", lambda t: t.env("HF_HUB_OFFLINE", "1") or tl.load("someone/some-model"), tl.ModelNotFoundError,
      "someone/some-model", "local folder", "tl.load()"),
    C("tl.load", lambda t: t.env("TEACHLLM_DTYPE", "fp8") or tl.load(), ValueError,
      "TEACHLLM_DTYPE", "fp8", "float32", "bfloat16", "float16"),
    C("tl.load", lambda t: t.env("TEACHLLM_DEVICE", "tpu") or tl.load(), ValueError,
      "TEACHLLM_DEVICE", "tpu", "cpu", "cuda"),
    C("tl.load", lambda t: t.env("TEACHLLM_CACHE", str(t.file("f") / "cache")) or tl.load(), CacheNotWritableError,
      "f/cache", "TEACHLLM_CACHE", "writable"),
    # ---- tl.cost ---------------------------------------------------------------------------------------------
    C("tl.cost", lambda t: cost.prefill_flops(t.lm.tokenizer, 10), TypeError,
      "prefill_flops", "Tokenizer", "ModelConfig", "loaded model (lm)"),
    C("tl.cost", lambda t: cost.prefill_flops(t.cfg, -1), ValueError, "seq_len", "-1", POSITIVE),
    C("tl.cost", lambda t: cost.prefill_flops(t.cfg, 0), ValueError, "seq_len", "0", POSITIVE),
    C("tl.cost", lambda t: cost.prefill_flops(t.cfg, 8, batch_size=-2), ValueError, "batch_size", "-2", POSITIVE),
    C("tl.cost", lambda t: cost.decode_flops(t.cfg, 0), ValueError, "context_len", "0", POSITIVE),
    C("tl.cost", lambda t: cost.decode_flops(t.cfg, 2.5), ValueError, "context_len", "2.5", "integer", POSITIVE),
    C("tl.cost", lambda t: cost.decode_cost(t.cfg, True), ValueError, "context_len", "True", "integer", POSITIVE),
    C("tl.cost", lambda t: cost.kv_cache_bytes(t.cfg, -1), ValueError, "n_tokens", "-1", "≥ 0"),
    C("tl.cost", lambda t: cost.kv_cache_bytes(t.cfg, 10, batch_size=0), ValueError, "batch_size", "0", POSITIVE),
    C("tl.cost", lambda t: cost.kv_cache_bytes(t.cfg, 10), ValueError,
      "kv_cache_bytes", "ModelConfig", "dtype=", "'bf16'", "(lm)"),  # bytes need a dtype: a config has none
    C("tl.cost", lambda t: cost.weight_bytes(t.lm.tokenizer), TypeError,
      "weight_bytes", "Tokenizer", "ModelConfig", "(lm)"),
    C("tl.cost", lambda t: cost.weight_bytes(t.cfg, "float8"), ValueError,
      "dtype", "float8", "float32", "bfloat16", "float16"),
    C("tl.cost", lambda t: cost.element_size(5), ValueError, "dtype", "5", "torch.dtype", "'float32'"),
    C("tl.cost", lambda t: cost.forward_flops(t.cfg, 5, 3), ValueError, "n_keys", "3", "n_new", "5", "at least"),
    C("tl.cost", lambda t: cost.prefill_cost(t.cfg, -3), ValueError, "seq_len", "-3", POSITIVE),
    C("tl.cost", lambda t: cost.textbook_flops(t.cfg, -1), ValueError, "seq_len", "-1", POSITIVE),
    C("tl.cost", lambda t: cost.compare_with_textbook(t.cfg, 0), ValueError, "seq_len", "0", POSITIVE),
    C("tl.cost", lambda t: cost.weight_bytes_read(t.cfg, -1), ValueError, "n_new", "-1", POSITIVE),
    C("tl.cost", lambda t: cost.layer_flops(t.cfg, 4, "8"), ValueError, "n_keys", "'8'", "integer", POSITIVE),
    # ---- serving ---------------------------------------------------------------------------------------------
    C("serving", lambda t: ServingConfig(policy="fifo"), ValueError, "policy", "fifo", "'static'", "'continuous'"),
    C("serving", lambda t: ServingConfig(max_num_seqs=0), ValueError, "max_num_seqs", "0", POSITIVE),
    C("serving", lambda t: ServingConfig(block_size=0), ValueError, "block_size", "0", POSITIVE),
    C("serving", lambda t: ServingConfig(num_blocks=2.5), ValueError, "num_blocks", "2.5", POSITIVE),
    C("serving", lambda t: ServingConfig(max_num_seqs=True), ValueError, "max_num_seqs", "True", POSITIVE),
    C("serving", lambda t: ServingConfig(max_num_seqs=8, max_num_batched_tokens=4), ValueError,
      "max_num_batched_tokens", "4", "max_num_seqs", "8", "smaller"),
    C("serving", lambda t: ServingConfig(max_num_batched_tokens=0), ValueError,
      "max_num_batched_tokens", "0", "None", POSITIVE),
    C("serving", lambda t: ServingConfig(chunked_prefill=True), ValueError,
      "chunked_prefill", "max_num_batched_tokens"),
    C("serving", lambda t: ServingConfig(enable_prefix_caching="no"), ValueError,
      "enable_prefix_caching", "'no'", "True or False"),
    C("serving", lambda t: ServingConfig(chunked_prefill="yes", max_num_batched_tokens=64), ValueError,
      "chunked_prefill", "'yes'", "True or False"),
    C("serving", lambda t: ServingConfig(record_block_tables=1), ValueError,
      "record_block_tables", "1", "True or False"),
    C("serving", lambda t: t.engine().add_request(torch.ones(2, 3, dtype=LONG)), ValueError,
      "add_request", "one prompt", "(2, 3)", "1-D"),
    C("serving", lambda t: t.engine().add_request([[1, 2], [3]]), ValueError,
      "add_request", "one prompt", "batch", "run()"),
    C("serving", lambda t: t.engine().add_request([]), ValueError, "prompt", "[]", "non-empty"),
    C("serving", lambda t: t.engine().add_request(""), ValueError, "prompt", "empty", "at least one token"),
    C("serving", lambda t: t.engine().add_request([1, 10**6]), ValueError, "token id", "1000000", VOCAB),
    C("serving", lambda t: t.engine().add_request([1.5]), TypeError, "prompt", "1.5", "token ids", "int"),
    C("serving", lambda t: t.engine().add_request(None), TypeError, "prompt", "None", "string", "token ids"),
    C("serving", lambda t: t.engine().add_request([1], {"max_tokens": 3}), TypeError,
      "params", "{'max_tokens': 3}", "SamplingParams(**"),
    C("serving", lambda t: t.engine().add_request([1], SP(logprobs=10**6)), ValueError,
      "logprobs", "1000000", "49152 tokens", "0 .. 49152"),
    C("serving", lambda t: t.engine().add_request([1], SP(stop_token_ids=[10**6])), ValueError,
      "stop_token_ids", "1000000", VOCAB),
    C("serving", lambda t: t.engine().add_request([1], SP(num_beams=2)), ValueError,
      "beam search", "num_beams", "lm.generate"),
    C("serving", lambda t: t.engine().add_request([1] * 30, SP(max_tokens=10)), ValueError,
      "30", "max_tokens", "10", "32", "ServingConfig.num_blocks"),
    C("serving", lambda t: t.engine().run([]), ValueError, "run()", "prompt", "[]"),
    C("serving", lambda t: t.engine().run(None), ValueError, "run()", "prompt", "None"),
    C("serving", lambda t: t.engine().run(torch.ones(2, 2, 2, dtype=LONG)), ValueError,
      "run()", "(2, 2, 2)", "[seq]", "[batch, seq]"),
    C("serving", lambda t: t.engine().run(["a", "b"], [SP()]), ValueError, "1", "SamplingParams", "2", "prompts"),
    C("serving", lambda t: t.engine().run(["a"], "greedy"), TypeError, "params", "'greedy'", "SamplingParams"),
    C("serving", lambda t: t.engine().step(), RuntimeError, "step()", "nothing to run", "add_request"),
    C("serving", lambda t: t.engine().abort(5), ValueError, "abort", "5", "add_request"),
    C("serving", lambda t: t.engine().abort("0"), ValueError, "abort", "'0'", "add_request"),
    # ---- the command line: one line, non-zero exit --------------------------------------------------------
    C("CLI", lambda t: cli(["step", "--top-p", "2"]), SystemExit, "top_p", "2", "(0, 1]"),
    C("CLI", lambda t: cli(["step", "--temperature", "-1"]), SystemExit, "temperature", "-1", "≥ 0"),
    C("CLI", lambda t: cli(["step", "--max-tokens", "0"]), SystemExit, "max_tokens", "0", POSITIVE),
    C("CLI", lambda t: cli(["step", "--seed", str(2**70)]), SystemExit,
      "seed", "1180591620717411303424", "2**64 - 1"),
    C("CLI", lambda t: cli(["step", "--device", "tpu"]), SystemExit, "device", "tpu", "cpu", "cuda"),
    C("CLI", lambda t: cli(["step", "--dtype", "float8"]), SystemExit, "dtype", "float8", "float32"),
    C("CLI", lambda t: cli(["step", "--model", "./nope"]), SystemExit, "nope", "folder", ".gguf"),
    C("CLI", lambda t: cli(["generate", "--num-beams", "3", "--temperature", "0.7"]), SystemExit,
      "num_beams", "3", "temperature", "0 or 1"),
    C("CLI", lambda t: cli(["step", "\udcff"]), SystemExit, "prompt", "UTF-8", "encoding"),
    # ---- the second hostile pass (issue 24): answered clearly instead of with a raw error --------------------
    C("generate", lambda t: t.lm.generate([1, "a"]), TypeError, "prompt", "'a'", "string", "token ids"),
    C("generate", lambda t: t.lm.generate([[1, 2], 3]), TypeError, "prompt", "3", "string", "token ids"),
    C("prefill", lambda t: t.lm.prefill([2**63], t.cache()), ValueError, "token id", "9223372036854775808", VOCAB),
    C("forward", lambda t: t.lm.forward([[1, 2**64]]), ValueError, "token id", "18446744073709551616", VOCAB),
    C("tokenizer", lambda t: t.lm.tokenizer.decode([2**63]), ValueError, "token id", "9223372036854775808", VOCAB),
    C("prefill", lambda t: t.lm.prefill([1, 2], t.tiny().new_cache(max_len=8)), ValueError,
      "cache", "another model", "lm.new_cache"),
    C("cache", lambda t: t.lm.new_cache(max_len=8192, batch_size=100_000), ValueError,
      "max_len", "8192", "batch_size", "100000", "GiB", "lower max_len or batch_size"),
    C("tl.load", lambda t: tl.load(t.mismatched()), ValueError, "shapes", "config.json", "embed_tokens.weight"),
    C("SamplingParams", lambda t: SP(num_beams=2, seed=0), ValueError, "num_beams", "2", "seed=0", "default"),
    C("tl.sampling", lambda t: sampling.apply_top_k(torch.tensor([[1.0, NAN]]), 1), ValueError, "row 0", "NaN"),
    C("roofline", lambda t: tl.roofline.attainable(-1e12, 1e11, 10), ValueError, "peak_flops", "-1", "> 0"),
    C("roofline", lambda t: tl.roofline.attainable(1e12, 1e11, NAN), ValueError, "intensity", "nan", "≥ 0"),
    C("roofline", lambda t: t.no_cuda() or tl.roofline.measure_device("cuda"), ValueError,
      "measure_device", "cuda", "no", "cpu", "KNOWN_DEVICES"),
    C("tl.cost", lambda t: cost.textbook_flops(t.cfg, 10, context_len=5), ValueError,
      "context_len", "5", "seq_len", "10", "at least"),
    C("tl.load", lambda t: t.no_cuda() or t.env("TEACHLLM_DEVICE", "cuda") or tl.load(), ValueError,
      "TEACHLLM_DEVICE", "cuda", "unset TEACHLLM_DEVICE", "cpu"),
    C("tl.load", lambda t: t.env("TEACHLLM_DTYPE", "bf16") or tl.load(weights="gguf"), ValueError,
      "weights='gguf'", "TEACHLLM_DTYPE", "bf16", "unset TEACHLLM_DTYPE", "float32"),
    C("tl.load", lambda t: t.env("TEACHLLM_DEVICE", "cuda") or tl.load(weights="gguf"), ValueError,
      "weights='gguf'", "TEACHLLM_DEVICE", "cuda", "cpu"),
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

    def mismatched():
        """The bundled model's weights with a config.json that describes a wider model."""
        path = tmp_path / "mismatched"
        path.mkdir()
        source = tl.checkpoints.loading.checkpoint_folder(progress=False)
        (path / "model.safetensors").symlink_to(source / "model.safetensors")
        config = json.loads((source / "config.json").read_text())
        (path / "config.json").write_text(json.dumps({**config, "hidden_size": 1152, "intermediate_size": 3072}))
        return path

    def no_cuda():
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def tiny():
        """Another model: 2 layers of random weights, the bundled vocabulary."""
        config = tl.ModelConfig(vocab_size=V, hidden_size=64, intermediate_size=96, n_layers=2, n_heads=4,
                                n_kv_heads=2, head_dim=16, max_position_embeddings=64)
        return tl.LanguageModel(Transformer(config).eval(), None, "tiny")

    return SimpleNamespace(lm=lm, cfg=lm.config, x=torch.randn(1, 10), cache=cache, filled=filled, folder=folder,
                           file=file, engine=engine, env=monkeypatch.setenv, mismatched=mismatched, no_cuda=no_cuda,
                           tiny=tiny)


@pytest.mark.parametrize("surface, call, error, facts", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input(t, surface, call, error, facts):
    with pytest.raises(error) as raised:
        call(t)
    assert_names(message_of(raised.value), facts)
    if error is SystemExit:
        assert raised.value.code != 0 and "\n" not in str(raised.value.code)  # one line, non-zero


def test_at_least_150_cases_cover_every_surface():
    surfaces = {c[0] for c in CASES}
    assert len(CASES) >= 150
    assert {"SamplingParams", "tl.sampling", "prefill", "forward", "decode_step", "generate", "stream", "tokenizer",
            "cache", "tl.load", "tl.cost", "serving", "CLI"} <= surfaces


# ---- the check itself can fail ----------------------------------------------------------------------------
FIRST_OF_EACH_SURFACE = list({c[0]: c for c in reversed(CASES)}.values())


def without(fact, message):
    """`message` with every spelling of `fact` cut out."""
    if isinstance(fact, re.Pattern):
        return fact.sub("", message)
    for spelling in fact if isinstance(fact, tuple) else (fact,):
        message = message.replace(spelling, "")
    return message


@pytest.mark.parametrize("surface, call, error, facts", FIRST_OF_EACH_SURFACE,
                         ids=[c[0] for c in FIRST_OF_EACH_SURFACE])
def test_a_message_without_one_of_its_facts_fails_the_check(t, surface, call, error, facts):
    """A real message passes; the same message with one fact cut out (the field, the value, the range, the fix)
    does not, and the check names the fact it missed."""
    with pytest.raises(error) as raised:
        call(t)
    message = message_of(raised.value)
    assert missing_facts(message, facts) == []
    for fact in facts:
        assert fact in missing_facts(without(fact, message), facts)


def test_a_fact_is_found_only_in_text_of_its_own():
    """The value 0 does not count inside the range '> 0', nor p inside 'top_p'; a tuple takes any spelling."""
    penalty = ("repetition_penalty", "0", "> 0")
    assert missing_facts("SamplingParams.repetition_penalty=0.0 is out of range: must be > 0", penalty) == []
    assert missing_facts("SamplingParams.repetition_penalty is out of range: must be > 0", penalty) == ["0"]
    top_p = (word("p"), "nan", "(0, 1]")
    assert missing_facts("apply_top_p: p=nan is not allowed; must be in (0, 1]", top_p) == []
    assert missing_facts("apply_top_p: nan is not allowed; must be in (0, 1]", top_p) == [word("p")]
    max_len = ("max_len", "0", POSITIVE)
    assert missing_facts("max_len must be a positive integer, got 0", max_len) == []
    assert missing_facts("max_len=0 must be an integer ≥ 1", max_len) == []
    assert missing_facts("max_len=0 must be an integer", max_len) == [POSITIVE]


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
    with pytest.raises(ValueError) as raised:
        lm.prefill([1, 2, 3, 4, 5], cache)
    assert_names(str(raised.value), ("KV cache", "full"))
    assert cache.length == 0


def test_a_full_cache_stays_as_it_was(lm):
    cache = lm.new_cache(max_len=3)
    lm.prefill([1, 2, 3], cache)
    with pytest.raises(ValueError) as raised:
        lm.decode_step(4, cache)
    assert_names(str(raised.value), ("KV cache", "full"))
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
    for change, facts in [({"n_kv_heads": 3}, ("n_heads", "4", "n_kv_heads", "3", "multiple")),
                          ({"n_layers": 0}, ("n_layers", "0", POSITIVE)),
                          ({"model_type": "gpt2"}, ("model_type", "gpt2", "llama"))]:
        with pytest.raises(ValueError) as raised:
            tl.ModelConfig(**{**base, **change})
        assert_names(str(raised.value), facts)
