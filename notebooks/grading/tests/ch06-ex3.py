"""Chapter 6, exercise 3: min-p before and after top-k."""
import torch
from otter.test_files import test_case
from transformers import MinPLogitsWarper, TopKLogitsWarper

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch06-ex3"
points = 3


def kept(env, logits, min_p, k, min_p_first):
    """The student's kept_in_order(...) as a set of ints; fails the case if it raises or returns something else."""
    assert callable(env.get("kept_in_order")), say(
        "kept_in_order is not defined: run its cell, and fix any error in it",
        "kept_in_order 没有定义：运行它所在的单元格，并改正其中的错误")
    try:
        got = env["kept_in_order"](logits, min_p, k, min_p_first)
    except Exception as error:
        raise AssertionError(say("kept_in_order raised {e!r}", "kept_in_order 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, set), say("kept_in_order should return a set of token ids, not {t}",
                                     "kept_in_order 应返回 token id 的集合，而不是 {t}", t=type(got).__name__)
    return {int(i) for i in got}


@test_case(points=1, hidden=False)
def test_returns_a_set(env):
    got = kept(env, torch.randn(50, generator=torch.Generator().manual_seed(1)), 0.1, 5, True)
    assert 1 <= len(got) <= 5, say("kept_in_order(..., k=5, ...) keeps {n} tokens: top-k with k = 5 keeps at most 5",
                                   "kept_in_order(..., k=5, ...) 保留了 {n} 个 token：k = 5 的 top-k 最多保留 5 个",
                                   n=len(got))


@test_case(points=1, hidden=True)
def test_both_orders(env):
    for seed, min_p, k in ((2, 0.05, 40), (3, 0.3, 10), (4, 0.01, 400), (5, 0.5, 3)):
        logits = 3 * torch.randn(1000, generator=torch.Generator().manual_seed(seed))  # [V]
        min_p_rule, top_k_rule = MinPLogitsWarper(min_p), TopKLogitsWarper(k)
        for first, want in ((True, top_k_rule(None, min_p_rule(None, logits[None].clone()))),
                            (False, min_p_rule(None, top_k_rule(None, logits[None].clone())))):
            want = set(want[0].isfinite().nonzero().flatten().tolist())
            assert kept(env, logits, min_p, k, first) == want, say(
                "kept_in_order with min_p = {p}, k = {k}, min_p_first = {first} keeps the wrong tokens: min-p compares "
                "probabilities with min_p × the largest probability", "kept_in_order 在 min_p = {p}、k = {k}、"
                "min_p_first = {first} 时保留的 token 不对：min-p 比较的是概率与 min_p × 最大概率", p=min_p, k=k,
                first=first)


@test_case(points=1, hidden=True)
def test_answer(env):
    assert env.get("min_p_top_k_commute") is True, say(
        "min_p_top_k_commute is wrong: compare kept_in_order in both orders on many settings",
        "min_p_top_k_commute 不对：在多种设置下比较两种顺序下 kept_in_order 的结果")
