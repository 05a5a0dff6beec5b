"""Chapter 7, exercise 3: the repetition penalty divides positive logits and multiplies negative ones."""
import torch
from otter.test_files import test_case
from transformers import RepetitionPenaltyLogitsProcessor

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch07-ex3"
points = 3


def penalised(env, logits, seen_ids, r):
    """The student's repetition_penalised(...) as a tensor [V]; fails the case if it raises or returns otherwise."""
    try:
        got = env["repetition_penalised"](logits.clone(), list(seen_ids), r)
    except Exception as error:
        raise AssertionError(say("repetition_penalised raised {e!r}", "repetition_penalised 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, torch.Tensor) and got.shape == logits.shape, say(
        "repetition_penalised should return a tensor shaped like the logits [V], not {g}",
        "repetition_penalised 应返回与 logits 形状相同的张量 [V]，而不是 {g}",
        g=tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__)
    return got


@test_case(points=1, hidden=False)
def test_shape(env):
    penalised(env, torch.tensor([1.0, -1.0, 0.5]), [0], 1.2)


@test_case(points=1, hidden=True)
def test_against_transformers(env):
    for seed, r in ((1, 1.3), (2, 2.0), (3, 0.8)):
        g = torch.Generator().manual_seed(seed)
        logits, seen = 3 * torch.randn(30, generator=g), torch.randint(0, 30, (12,), generator=g).tolist()
        want = RepetitionPenaltyLogitsProcessor(r)(torch.tensor([seen]), logits[None].clone())[0]
        assert torch.allclose(penalised(env, logits, seen, r), want, atol=1e-5), say(
            "repetition_penalised with r = {r} is wrong for some token: look at the seen tokens with a negative "
            "logit, and at tokens seen more than once (the penalty applies once per distinct token)",
            "r = {r} 时 repetition_penalised 对某些 token 的结果不对：看看 logit 为负的已出现 token，以及出现过不止"
            "一次的 token（每个不同的 token 只惩罚一次）", r=r)


@test_case(points=1, hidden=True)
def test_dividing_answer(env):
    assert env.get("dividing_raises_seen_token") is True, say(
        "dividing_raises_seen_token is not right: is −2 / 1.5 larger or smaller than −2?",
        "dividing_raises_seen_token 不对：−2 / 1.5 比 −2 大还是小？")
