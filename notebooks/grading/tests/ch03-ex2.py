"""Chapter 3, exercise 2: is head 2 of layer 1 a previous-token head on random tokens too?"""
import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch03-ex2"
points = 3


def attention(env, ids, layer, head):
    """The student's previous_token_attention(lm, ids, layer, head) as a float; fails the case if it raises."""
    try:
        got = env["previous_token_attention"](env["lm"], ids, layer, head)
    except Exception as error:
        raise AssertionError(say("previous_token_attention raised {e!r}", "previous_token_attention 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, (int, float, torch.Tensor)) and torch.as_tensor(got).numel() == 1, say(
        "previous_token_attention should return one number, not {t}",
        "previous_token_attention 应返回一个数，而不是 {t}", t=type(got).__name__)
    return float(got)


def random_ids(lm, n, seed):
    return torch.randint(0, lm.config.vocab_size, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@test_case(points=1, hidden=False)
def test_is_a_weight(env):
    got = attention(env, random_ids(env["lm"], 8, 7), 0, 0)
    assert 0.0 <= got <= 1.0, say("previous_token_attention gave {got}: an attention weight lies between 0 and 1",
                                  "previous_token_attention 给出了 {got}：注意力权重在 0 和 1 之间", got=got)


@test_case(points=1.5, hidden=True)
def test_against_trace(env):
    lm = env["lm"]
    for seed, n, layer, head in ((1, 24, 1, 2), (2, 16, 3, 5), (3, 12, 0, 8)):
        ids, trace = random_ids(lm, n, seed), tl.Trace()
        lm.forward(ids, trace=trace)
        want = float(trace.layers[layer].probs[0, head].diagonal(-1).mean())  # probs [S, S]: entries (i, i - 1)
        assert abs(attention(env, ids, layer, head) - want) < 1e-3, say(
            "previous_token_attention is wrong for layer {layer}, head {head} on {n} tokens: average probs[i, i - 1] "
            "over the queries that have a previous token",
            "previous_token_attention 在第 {layer} 层第 {head} 个头、{n} 个 token 上不对："
            "对每个有前一个 token 的查询 i，取 probs[i, i - 1] 求平均", layer=layer, head=head, n=n)


@test_case(points=0.5, hidden=True)
def test_answer(env):
    lm = env["lm"]
    trace = tl.Trace()
    lm.forward(random_ids(lm, 24, 0), trace=trace)
    want = float(trace.layers[1].probs[0, 2].diagonal(-1).mean()) > 0.5
    assert env.get("previous_token_head_on_random_ids") is want, say(
        "previous_token_head_on_random_ids is wrong (it should be True or False): measure it on 24 random ids",
        "previous_token_head_on_random_ids 不对（应为 True 或 False）：在 24 个随机 id 上测一测")
