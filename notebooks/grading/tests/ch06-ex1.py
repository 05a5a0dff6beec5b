"""Chapter 6, exercise 1: temperature 0 against greedy decoding."""
import torch
from otter.test_files import test_case
from transformers import TemperatureLogitsWarper

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch06-ex1"
points = 3


def probability(env, logits, temperature):
    """The student's greedy_token_probability(logits, temperature) as a float; fails the case if it raises."""
    assert callable(env.get("greedy_token_probability")), say(
        "greedy_token_probability is not defined: run its cell, and fix any error in it",
        "greedy_token_probability 没有定义：运行它所在的单元格，并改正其中的错误")
    try:
        got = env["greedy_token_probability"](logits, temperature)
    except Exception as error:
        raise AssertionError(say("greedy_token_probability raised {e!r}", "greedy_token_probability 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1, say(
        "greedy_token_probability should return one number, not {t}",
        "greedy_token_probability 应返回一个数，而不是 {t}", t=type(got).__name__)
    return float(got)


@test_case(points=1, hidden=False)
def test_returns_a_probability(env):
    got = probability(env, torch.randn(50, generator=torch.Generator().manual_seed(1)), 1.0)
    assert 0.0 <= got <= 1.0, say("greedy_token_probability returned {got}, which is not a probability",
                                  "greedy_token_probability 返回了 {got}，这不是一个概率", got=got)


@test_case(points=1, hidden=True)
def test_against_softmax(env):
    for seed in range(3):
        logits = 3 * torch.randn(1000, generator=torch.Generator().manual_seed(100 + seed))  # [V]
        for t in (2.0, 0.5, 0.1, 0.01):
            want = float((logits / t).softmax(-1)[logits.argmax()])
            got = probability(env, logits, t)
            assert abs(got - want) < 1e-4, say(
                "at T = {t} the probability of the greedy token is wrong: divide the logits by T, then softmax",
                "T = {t} 时贪婪 token 的概率不对：先把 logits 除以 T，再做 softmax", t=t)


@test_case(points=0.5, hidden=True)
def test_tie(env):
    got = env.get("tied_top_probability")
    assert isinstance(got, (int, float)) and not isinstance(got, bool), say(
        "tied_top_probability should be a number", "tied_top_probability 应是一个数")
    tied = torch.tensor([5.0, 5.0, 1.0, 0.0]) / 0.01
    assert abs(got - float(tied.softmax(-1)[0])) < 0.01, say(
        "tied_top_probability is wrong: at T = 0.01, what share does each of two tied top tokens get?",
        "tied_top_probability 不对：T = 0.01 时，两个并列最高的 token 各得多少概率？")


@test_case(points=0.5, hidden=True)
def test_transformers(env):
    try:
        TemperatureLogitsWarper(0.0)
        refused = False
    except ValueError:
        refused = True
    assert env.get("t0_refused_by_transformers") is refused, say(
        "t0_refused_by_transformers is wrong: build TemperatureLogitsWarper(0.0) and see",
        "t0_refused_by_transformers 不对：构造 TemperatureLogitsWarper(0.0) 看看")
