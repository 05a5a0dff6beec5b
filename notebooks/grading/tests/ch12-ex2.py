"""Chapter 12, exercise 2: a pool too small for every request at once (preemption)."""
import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

OK_FORMAT = False
name = "ch12-ex2"
points = 3


def tiny_runs(num_blocks):
    """Six 3-token prompts, 16 tokens each, on a tiny random model: with a large pool and with `num_blocks` of 4."""
    torch.manual_seed(0)
    cfg = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                         head_dim=12, max_position_embeddings=512)
    tiny = LanguageModel(Transformer(cfg).eval(), tokenizer=None, name="tiny")
    prompts = [[3 + i, 4 + i, 5 + i] for i in range(6)]
    params = tl.SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    return [ServingEngine(tiny, ServingConfig(max_num_seqs=6, block_size=4, num_blocks=n)).run(prompts, params)
            for n in (64, num_blocks)]


def count(env, run):
    try:
        got = env["count_preemptions"](run)
    except Exception as error:
        raise AssertionError(say("count_preemptions raised {e!r}", "count_preemptions 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, int) and not isinstance(got, bool), say(
        "count_preemptions should return a number (an int), not {t}", "count_preemptions 应返回一个 int，而不是 {t}",
        t=type(got).__name__)
    return got


@test_case(points=1, hidden=False)
def test_returns_a_count(env):
    large, _ = tiny_runs(6)
    assert count(env, large) == 0, say("count_preemptions should find no preemption when the pool is large",
                                       "池子足够大时，count_preemptions 不应数出任何抢占")
    assert isinstance(env.get("same_tokens_small_pool"), bool), say(
        "set same_tokens_small_pool to True or False", "请把 same_tokens_small_pool 设为 True 或 False")


@test_case(points=1.5, hidden=True)
def test_against_the_requests(env):
    for num_blocks in (6, 9):
        _, small = tiny_runs(num_blocks)
        want = sum(r.num_preemptions for r in small.requests)
        assert count(env, small) == want, say(
            "with {n} blocks count_preemptions is off: one iteration can preempt several requests, and a request can "
            "be preempted more than once", "{n} 个块时 count_preemptions 不对：一次迭代可能抢占好几个请求，"
            "一个请求也可能被抢占不止一次", n=num_blocks)


@test_case(points=0.5, hidden=True)
def test_same_tokens(env):
    large, small = tiny_runs(6)
    same = [o.token_ids for o in small.outputs] == [o.token_ids for o in large.outputs]
    assert env.get("same_tokens_small_pool") is same, say(
        "same_tokens_small_pool is wrong: what does a preempted request recompute when it comes back?",
        "same_tokens_small_pool 不对：被抢占的请求回来之后要重新计算什么？")
