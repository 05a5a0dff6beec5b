"""What a refused or broken call leaves behind: nothing (issue 24, the second hostile-input pass).

- The serving engine: every public method either works or raises a clear error, and after each refusal a
  normal request still completes with exactly `lm.generate`'s tokens.
- Logits that are not finite: one policy in every sampling rule and in greedy decoding (NaN is an error
  naming the row; +inf is a certain token; a row with every token ruled out is an error, never a guess).
- One meaning of `seed` for a batch: row i draws as the same prompt alone with seed + i.
"""

import math

import pytest
import torch

import teachllm as tl
from teachllm import sampling
from teachllm.serving import ServingConfig, ServingEngine

SP = tl.SamplingParams
PROMPT = "Name a colour."
GREEDY = SP(temperature=0, max_tokens=5)


def engine_for(lm, **config):
    return ServingEngine(lm, ServingConfig(**{"block_size": 4, "num_blocks": 32, "max_num_seqs": 4, **config}))


def still_serves(engine, lm):
    """After a refusal: nothing queued, no block held, and a normal request gives lm.generate's tokens."""
    assert not engine.has_unfinished
    assert engine.block_manager.num_free_blocks == engine.config.num_blocks
    run = engine.run([PROMPT], GREEDY)
    assert run.outputs[0].token_ids == lm.generate(PROMPT, GREEDY).token_ids


# ---- the serving engine --------------------------------------------------------------------------------------
def test_a_run_with_one_bad_prompt_adds_none(lm):
    """The finding: run() refused a bad second prompt after queueing the first, so every later run() failed
    with "needs an idle engine". Every prompt is checked before any is added."""
    engine = engine_for(lm)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        engine.run([PROMPT, [1, lm.config.vocab_size]], GREEDY)
    assert engine.requests == []
    with pytest.raises(ValueError, match="logprobs"):
        engine.run([PROMPT, PROMPT], [GREEDY, SP(logprobs=10**6)])
    assert engine.requests == []
    still_serves(engine, lm)


@pytest.mark.parametrize(("ids", "facts"), [([99], ("drain", "99", "0 ..")), ([], ("drain", "[]", "non-empty")),
                                            ("0", ("drain", "'0'", "list")), ([True], ("drain", "True", "ints"))])
def test_drain_refuses_what_is_not_a_request(lm, ids, facts):
    """The finding: drain([99]) raised IndexError; drain([]) ran the queue and then raised min()'s message."""
    engine = engine_for(lm)
    engine.run([PROMPT], GREEDY)  # one request exists
    with pytest.raises(ValueError) as error:
        engine.drain(ids)
    assert all(fact in str(error.value) for fact in facts), str(error.value)
    still_serves(engine, lm)


def test_a_dict_or_another_object_is_not_a_config_or_a_model(lm):
    with pytest.raises(TypeError, match=r"ServingConfig\(\*\*your_dict\)"):
        ServingEngine(lm, {"policy": "continuous"})
    with pytest.raises(TypeError, match="LanguageModel"):
        ServingEngine("lm")


def test_every_refused_call_leaves_the_engine_usable(lm):
    engine = engine_for(lm)
    refusals = [
        (lambda: engine.step(), RuntimeError, "nothing to run"),
        (lambda: engine.abort(7), ValueError, "no request 7"),
        (lambda: engine.abort(True), ValueError, "no request True"),
        (lambda: engine.add_request([[1, 2], [3]], GREEDY), ValueError, "one prompt"),
        (lambda: engine.add_request(PROMPT, SP(num_beams=2)), ValueError, "beam search"),
        (lambda: engine.add_request(PROMPT, SP(max_tokens=200)), ValueError, "KV slots"),
        (lambda: engine.add_request(PROMPT, "greedy"), TypeError, "SamplingParams"),
        (lambda: engine.run([], GREEDY), ValueError, "at least one prompt"),
    ]
    for call, error, words in refusals:
        with pytest.raises(error, match=words):
            call()
        still_serves(engine, lm)


def test_shutdown_aborts_what_is_left_and_refuses_more(lm):
    engine = engine_for(lm)
    ids = [engine.add_request(PROMPT, GREEDY) for _ in range(3)]
    engine.step()
    engine.shutdown()
    assert [engine.requests[i].result().finish_reason for i in ids] == ["abort"] * 3
    assert not engine.has_unfinished and engine.block_manager.num_free_blocks == engine.config.num_blocks
    with pytest.raises(RuntimeError, match="shut down"):
        engine.add_request(PROMPT, GREEDY)


def test_the_engine_as_a_context_manager_shuts_down_even_on_an_error(lm):
    with pytest.raises(KeyError), engine_for(lm) as engine:
        engine.add_request(PROMPT, GREEDY)
        raise KeyError("the caller's own error")
    assert engine.closed and engine.requests[0].result().finish_reason == "abort"
    assert engine.block_manager.num_free_blocks == engine.config.num_blocks


# ---- logits that are not finite ----------------------------------------------------------------------------
RULES = {
    "temperature": lambda x: sampling.apply_temperature(x, 0.7),
    "top_k": lambda x: sampling.apply_top_k(x, 3),
    "top_p": lambda x: sampling.apply_top_p(x, 0.9),
    "min_p": lambda x: sampling.apply_min_p(x, 0.1),
    "repetition": lambda x: sampling.apply_repetition_penalty(x, [[1, 2], [1, 2]], 1.3),
    "presence/frequency": lambda x: sampling.apply_presence_frequency_penalty(x, [[1, 1], [1, 1]], 0.5, 0.5),
    "no-repeat n-gram": lambda x: sampling.apply_no_repeat_ngram(x, [[1, 2, 1], [1, 2, 1]], 2),
    "process_logits": lambda x: sampling.process_logits(x, SP(temperature=0.8, top_k=5, top_p=0.9, min_p=0.05,
                                                              repetition_penalty=1.2), [[1], [2]], [[3], [4]]),
    "greedy": lambda x: sampling.sample(x, SP(temperature=0)),
    "sample": lambda x: sampling.sample(x, SP(temperature=1.0)),
    "top_logprobs": lambda x: sampling.top_logprobs(x, 3, torch.tensor([0, 0])),
}


def logits_with(value, at=(1, 6)):
    x = torch.randn(2, 10, generator=torch.Generator().manual_seed(0))  # [B, V]
    x[at] = value
    return x


@pytest.mark.parametrize("rule", RULES)
def test_nan_is_an_error_naming_the_row(rule):
    """The finding: greedy picked a NaN's id; process_logits and top-k kept the NaN; top_logprobs returned NaN."""
    with pytest.raises(ValueError, match=r"row 1 holds NaN \(token 6"):
        RULES[rule](logits_with(math.nan))


@pytest.mark.parametrize("rule", [r for r in RULES if r != "top_logprobs"])
def test_plus_infinity_is_a_certain_token(rule):
    """The finding: top-p and min-p removed nothing when one logit was +inf. +inf means "this token is
    certain": every rule keeps it alone in its row, and greedy and sampling both choose it."""
    out = RULES[rule](logits_with(math.inf))
    if rule in ("greedy", "sample"):
        assert int(out[1]) == 6
    else:
        assert torch.isfinite(out[1, 6]) and torch.isneginf(out[1]).sum() == 9  # only token 6 is left in row 1
        assert torch.isfinite(out[0]).sum() >= 1  # row 0 went through the rule as usual


def test_plus_infinity_in_top_logprobs_and_in_a_tie():
    entry = sampling.top_logprobs(logits_with(math.inf), 2, torch.tensor([0, 6]))[1]
    assert entry[6] == 0.0 and sorted(entry.values())[0] == -math.inf  # log 1, and log 0 for the rest
    x = logits_with(math.inf)
    x[1, 2] = math.inf  # two certain tokens share the probability
    draws = sampling.sample(x.repeat(200, 1)[1::2], SP(temperature=1.0), torch.Generator().manual_seed(0))
    assert set(draws.tolist()) == {2, 6}


@pytest.mark.parametrize("rule", ["greedy", "sample", "top_logprobs"])
def test_a_row_with_every_token_ruled_out_is_an_error(rule):
    x = logits_with(0.0)
    x[1] = -math.inf
    with pytest.raises(ValueError, match=r"row 1: every token is ruled out"):
        RULES[rule](x)


@pytest.mark.parametrize("params", [SP(temperature=0, min_tokens=2, max_tokens=3),
                                    SP(temperature=1.0, min_tokens=2, max_tokens=3, seed=0),
                                    SP(num_beams=2, min_tokens=2, max_tokens=3)], ids=["greedy", "sample", "beams"])
def test_min_tokens_with_every_token_a_stop_token_is_refused(lm, params):
    """The finding: every id a stop id with min_tokens gave a multinomial error (sampling), an index error
    (beams) or one emitted token (greedy). Nothing could be chosen, so the request is refused up front."""
    params = params.replace(stop_token_ids=list(range(lm.config.vocab_size)))
    with pytest.raises(ValueError, match=r"min_tokens=2 .*cover all 49152 tokens"):
        lm.generate(PROMPT, params)


def test_a_model_that_computes_nan_fails_naming_the_row(lm, monkeypatch):
    forward = lm.model.forward

    def broken(ids, cache=None, trace=None, last_only=False):
        logits = forward(ids, cache, trace, last_only)
        logits[-1, -1, 42] = math.nan  # the last row of the batch
        return logits

    monkeypatch.setattr(lm.model, "forward", broken)
    with pytest.raises(ValueError, match="row 1 holds NaN"):
        lm.generate([PROMPT, PROMPT], GREEDY)


# ---- one meaning of `seed` for a batch ---------------------------------------------------------------------
def test_row_i_of_a_seeded_batch_is_the_prompt_alone_with_seed_plus_i(lm):
    """The finding: generate([p, p], seed=0) gave two different rows, each different from generate(p, seed=0)."""
    params = SP(temperature=1.0, max_tokens=8, seed=5)
    rows = lm.generate([PROMPT, PROMPT, "The sky is"], params)
    alone = [lm.generate(p, params.replace(seed=5 + i)) for i, p in enumerate([PROMPT, PROMPT, "The sky is"])]
    assert [r.token_ids for r in rows] == [a.token_ids for a in alone]
    assert rows[0].token_ids != rows[1].token_ids  # two seeds, two draws (these differ at seed 5 and 6)


def test_row_seeds_stay_within_what_torch_takes():
    assert sampling.row_seeds(2**64 - 2, 3) == [2**64 - 2, 2**64 - 1, -(2**63)]
    assert sampling.row_seeds(0, 2) == [0, 1]


# ---- a walk stopped early ------------------------------------------------------------------------------------
def test_a_step_through_stopped_early_leaves_the_cache_as_it_was(lm):
    """step_through writes K and V layer by layer; the cache counts them only at the logits stage, so a walk
    broken off after layer 3 leaves it with its old length, and the next prefill overwrites those slots."""
    ids = lm.tokenizer.encode("The three primary colours are")
    cache = lm.new_cache(max_len=16)
    for stage in lm.step_through(ids, cache):
        if stage.name == "layer 3":
            break
    assert cache.length == 0
    assert torch.equal(lm.prefill(ids, cache), lm.prefill(ids, lm.new_cache(max_len=16)))
    assert cache.length == len(ids)


@pytest.mark.parametrize("refuse", [lambda: SP(num_beams=3, top_p=0.9), lambda: SP(num_beams=3, temperature=0.7),
                                    lambda: RULES["greedy"](torch.full((1, 4), -math.inf))],
                         ids=["beams-top_p", "beams-temperature", "no-token"])
def test_a_templated_refusal_reads_in_either_language(refuse):
    """Chapters 6 and 8 print a refusal through viz.tr(error.template, **error.fields): its English is the message
    itself, and its Chinese has no English left in it (identifiers and values aside)."""
    from teachllm import viz

    with pytest.raises(tl.params.TemplatedError) as caught:
        refuse()
    error = caught.value
    assert viz.tr(error.template, **error.fields) == str(error)  # the English edition prints the message
    before = viz.language()
    viz.set_language("zh")
    try:
        chinese = viz.tr(error.template, **error.fields)
    finally:
        viz.set_language(before)
    assert chinese != str(error) and "deterministic" not in chinese and "ruled out" not in chinese
    for value in error.fields.values():
        assert str(value) in chinese  # num_beams=3, top_p=0.9, the row: all still named
