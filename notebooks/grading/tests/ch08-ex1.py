"""Chapter 8, exercise 1: a sequence's total log-probability; beam search with k = 1 is greedy."""
import math
import numbers

import torch
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch08-ex1"
points = 3


def student_total(env, prompt, out):
    """The student's total_logprob(lm, prompt, out) as a float; fails the case otherwise."""
    try:
        got = env["total_logprob"](env["lm"], prompt, out)
    except Exception as error:
        raise AssertionError(say("total_logprob raised {e!r}", "total_logprob 抛出了异常 {e!r}", e=error)) from None
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    assert isinstance(got, numbers.Real) and not isinstance(got, bool), say(
        "total_logprob should return a number, not {t}", "total_logprob 应返回一个数，而不是 {t}",
        t=type(got).__name__)
    return float(got)


def decode_loop_logprob(lm, prompt, out):
    """The same sum from the cached path: prefill, then one decode step per token."""
    cache = lm.new_cache(max_len=len(prompt) + len(out))
    logits = [lm.prefill(prompt, cache)[0]] + [lm.decode_step(t, cache)[0] for t in out[:-1]]  # [V] each
    return float(sum(torch.log_softmax(row, -1)[t] for row, t in zip(logits, out, strict=True)))


@test_case(points=1, hidden=False)
def test_returns_a_log_probability(env):
    tok = env["lm"].tokenizer
    got = student_total(env, tok.encode("Once upon a"), tok.encode(" time there", add_special_tokens=False))
    assert got <= 0 and math.isfinite(got), say(
        "total_logprob returned {g}: a sum of log-probabilities is finite and at most 0",
        "total_logprob 返回了 {g}：对数概率之和是有限的，且不大于 0", g=got)


@test_case(points=1, hidden=True)
def test_against_the_decode_loop(env):
    lm = env["lm"]
    for prompt, out in (("The largest planet is", " Jupiter, which has many moons."), ("1, 2, 3,", " 4, 5")):
        p, o = lm.tokenizer.encode(prompt), lm.tokenizer.encode(out, add_special_tokens=False)
        got = student_total(env, p, o)
        assert abs(got - decode_loop_logprob(lm, p, o)) < 1e-3, say(
            "total_logprob is wrong for a continuation of {n} tokens: take log_softmax over the vocabulary, at the "
            "positions that predict each token of out_ids (the last prompt position predicts the first)",
            "对一个 {n} 个 token 的续写，total_logprob 的结果不对：在词表维度上取 log_softmax，并且要用预测 "
            "out_ids 中每个 token 的那些位置（提示词的最后一个位置预测第一个）", n=len(o))


@test_case(points=1, hidden=True)
def test_answers(env):
    assert env.get("k1_is_greedy") is True and env.get("total_always_grows_with_k") is False, say(
        "k1_is_greedy or total_always_grows_with_k is not right: what does a beam of one keep at each step, and can "
        "a wider beam prune the path a narrower one keeps?", "k1_is_greedy 或 total_always_grows_with_k 不对："
        "宽度为 1 的束每一步保留什么？更宽的束会不会剪掉较窄的束保留的那条路径？")
