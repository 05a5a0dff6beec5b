"""Chapter 8, exercise 2: the average log-probability per token; beam search is not always better."""
import numbers

import torch
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch08-ex2"
points = 3


def student_mean(env, prompt, out):
    """The student's mean_logprob(lm, prompt, out) as a float; fails the case otherwise."""
    try:
        got = env["mean_logprob"](env["lm"], prompt, out)
    except Exception as error:
        raise AssertionError(say("mean_logprob raised {e!r}", "mean_logprob 抛出了异常 {e!r}", e=error)) from None
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    assert isinstance(got, numbers.Real) and not isinstance(got, bool), say(
        "mean_logprob should return a number, not {t}", "mean_logprob 应返回一个数，而不是 {t}", t=type(got).__name__)
    return float(got)


def reference(lm, prompt, out):
    """Average of log p(token) over out, each from the transformers-style full forward pass."""
    logp = torch.log_softmax(lm.forward(prompt + out)[0], -1)  # [len(prompt) + len(out), V]
    return float(sum(logp[len(prompt) - 1 + i, t] for i, t in enumerate(out))) / len(out)


@test_case(points=1, hidden=False)
def test_returns_a_number(env):
    tok = env["lm"].tokenizer
    got = student_mean(env, tok.encode("Once upon a"), tok.encode(" time there", add_special_tokens=False))
    assert got <= 0, say("mean_logprob returned {g}: an average of log-probabilities is at most 0",
                         "mean_logprob 返回了 {g}：对数概率的平均值不大于 0", g=got)


@test_case(points=1, hidden=True)
def test_average_per_token(env):
    lm = env["lm"]
    for prompt, out in (("The sea is", " deep and blue, and the waves are loud."), ("Hello", " world")):
        p, o = lm.tokenizer.encode(prompt), lm.tokenizer.encode(out, add_special_tokens=False)
        got = student_mean(env, p, o)
        assert abs(got - reference(lm, p, o)) < 1e-3, say(
            "mean_logprob is wrong for a prompt of {m} tokens and a continuation of {n}: average the log p of the "
            "continuation's tokens only, over its own length",
            "对一个 {m} 个 token 的提示词和一个 {n} 个 token 的续写，mean_logprob 的结果不对：只对续写部分的 token "
            "的 log p 求平均，除以续写自身的长度", m=len(p), n=len(o))


@test_case(points=1, hidden=True)
def test_answer(env):
    assert env.get("beam_always_at_least_greedy") is False, say(
        "beam_always_at_least_greedy is not right: compare the two poems' averages, and remember that beam search "
        "prunes", "beam_always_at_least_greedy 不对：比较两首诗的平均值，并记住束搜索会剪枝")
