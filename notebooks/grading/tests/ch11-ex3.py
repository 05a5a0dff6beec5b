"""Chapter 11, exercise 3: the token budget of chunked prefill against a long prompt's TTFT."""
import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

OK_FORMAT = False
name = "ch11-ex3"
points = 3


def chunked_run(budget, long_len):
    """Three short requests decode on a tiny random model; then a long prompt arrives (the last request)."""
    torch.manual_seed(0)
    cfg = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                         head_dim=12, max_position_embeddings=512)
    tiny = LanguageModel(Transformer(cfg).eval(), tokenizer=None, name="tiny")
    engine = ServingEngine(tiny, ServingConfig(max_num_seqs=4, max_num_batched_tokens=budget, chunked_prefill=True))
    ids = [engine.add_request([5 + i, 6, 7, 8, 9], tl.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))
           for i in range(3)]
    engine.step()
    engine.step()
    ids.append(engine.add_request(list(range(3, 3 + long_len)), tl.SamplingParams(temperature=0, max_tokens=2,
                                                                                   ignore_eos=True)))
    return engine.drain(ids, first_iteration=0)


def call(env, fn, *args):
    try:
        got = env[fn](*args)
    except Exception as error:
        raise AssertionError(say("{fn} raised {e!r}", "{fn} 抛出了异常 {e!r}", fn=fn, e=error)) from None
    assert isinstance(got, int) and not isinstance(got, bool), say(
        "{fn} should return a number (an int), not {t}", "{fn} 应返回一个 int，而不是 {t}", fn=fn, t=type(got).__name__)
    return got


@test_case(points=1, hidden=False)
def test_returns_numbers(env):
    run = chunked_run(16, 30)
    assert call(env, "long_prompt_ttft", run, run.requests[-1].request_id) >= 1, say(
        "long_prompt_ttft should count at least one iteration", "long_prompt_ttft 至少应数到一次迭代")
    assert call(env, "largest_iteration", run) >= 1, say(
        "largest_iteration should count at least one token", "largest_iteration 至少应数到一个 token")
    assert isinstance(env.get("smaller_budget_delays_long_prompt"), bool), say(
        "set smaller_budget_delays_long_prompt to True or False",
        "请把 smaller_budget_delays_long_prompt 设为 True 或 False")


@test_case(points=1.5, hidden=True)
def test_against_the_run(env):
    for budget, long_len in ((8, 25), (20, 40), (64, 30)):
        run = chunked_run(budget, long_len)
        req = run.requests[-1]
        ttft = call(env, "long_prompt_ttft", run, req.request_id)
        assert ttft == req.first_iteration - req.arrival_iteration + 1, say(
            "with a budget of {b}, long_prompt_ttft is off: count the iterations from the one the request arrives in "
            "to the one that samples its first token, both included",
            "预算为 {b} 时 long_prompt_ttft 不对：从请求到达的那次迭代数到为它采样第一个 token 的那次迭代，两头都算",
            b=budget)
        assert call(env, "largest_iteration", run) == max(r.num_tokens for r in run.timeline), say(
            "with a budget of {b}, largest_iteration is off: count the tokens an iteration computes (decodes and "
            "prefill chunk tokens), not its requests",
            "预算为 {b} 时 largest_iteration 不对：数一次迭代计算的 token（解码的和预填充分块里的），而不是请求数",
            b=budget)


@test_case(points=0.5, hidden=True)
def test_the_trade(env):
    small, large = chunked_run(8, 40), chunked_run(64, 40)
    delays = (small.requests[-1].first_iteration - small.requests[-1].arrival_iteration
              > large.requests[-1].first_iteration - large.requests[-1].arrival_iteration)
    assert env.get("smaller_budget_delays_long_prompt") is delays, say(
        "smaller_budget_delays_long_prompt is wrong: with a smaller budget, how many chunks does the long prompt need?",
        "smaller_budget_delays_long_prompt 不对：预算更小时，长提示词要分成多少块？")
