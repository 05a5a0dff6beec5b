"""Chapter 6, exercise 2: which tokens top-k and top-p keep after temperature."""
import torch
from otter.test_files import test_case
from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch06-ex2"
points = 4


def kept(env, logits, temperature, **rule):
    """The student's kept_after(...) as a set of ints; fails the case if it raises or returns something else."""
    assert callable(env.get("kept_after")), say(
        "kept_after is not defined: run its cell, and fix any error in it",
        "kept_after 没有定义：运行它所在的单元格，并改正其中的错误")
    try:
        got = env["kept_after"](logits, temperature, **rule)
    except Exception as error:
        raise AssertionError(say("kept_after raised {e!r}", "kept_after 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, set), say("kept_after should return a set of token ids, not {t}",
                                     "kept_after 应返回 token id 的集合，而不是 {t}", t=type(got).__name__)
    return {int(i) for i in got}


def reference(logits, temperature, k=None, top_p=None):
    """transformers' warpers: temperature, then top-k or top-p; the ids whose logit stays finite."""
    out = TemperatureLogitsWarper(temperature)(None, logits[None].clone())
    out = TopKLogitsWarper(k)(None, out) if k is not None else TopPLogitsWarper(top_p)(None, out)
    return set(out[0].isfinite().nonzero().flatten().tolist())


@test_case(points=1, hidden=False)
def test_returns_a_set_of_k(env):
    got = kept(env, torch.randn(50, generator=torch.Generator().manual_seed(1)), 1.0, k=5)
    assert len(got) == 5, say("kept_after(..., k=5) keeps {n} tokens where top-k with k = 5 keeps 5",
                              "kept_after(..., k=5) 保留了 {n} 个 token，而 k = 5 的 top-k 保留 5 个", n=len(got))


@test_case(points=1, hidden=True)
def test_top_k(env):
    for seed, t, k in ((2, 0.5, 3), (3, 2.0, 10), (4, 1.3, 1)):
        logits = torch.randn(500, generator=torch.Generator().manual_seed(seed))
        assert kept(env, logits, t, k=k) == reference(logits, t, k=k), say(
            "kept_after with T = {t}, k = {k} keeps the wrong tokens",
            "kept_after 在 T = {t}、k = {k} 时保留的 token 不对", t=t, k=k)


@test_case(points=1, hidden=True)
def test_top_p(env):
    for seed, t, p in ((5, 0.5, 0.9), (6, 2.0, 0.9), (7, 1.0, 0.5)):
        logits = 2 * torch.randn(500, generator=torch.Generator().manual_seed(seed))
        got, want = kept(env, logits, t, top_p=p), reference(logits, t, top_p=p)
        assert got == want, say(
            "kept_after with T = {t}, top_p = {p} keeps {n} tokens, not the right set: apply temperature first, and "
            "keep the token that crosses p", "kept_after 在 T = {t}、top_p = {p} 时保留了 {n} 个 token，集合不对："
            "先作用温度，并保留越过 p 的那个 token", t=t, p=p, n=len(got))


@test_case(points=1, hidden=True)
def test_answers(env):
    assert env.get("topk_depends_on_temperature") is False and env.get("topp_depends_on_temperature") is True, say(
        "topk_depends_on_temperature or topp_depends_on_temperature is wrong: compare kept_after at T = 0.5 and 2",
        "topk_depends_on_temperature 或 topp_depends_on_temperature 不对：比较 T = 0.5 和 2 时 kept_after 的结果")
