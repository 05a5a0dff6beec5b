"""Chapter 7, exercise 1: presence and frequency penalties."""
import torch
from otter.test_files import test_case

from teachllm import sampling
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch07-ex1"
points = 3


def penalised(env, logits, output_ids, presence, frequency):
    """The student's penalised_logits(...) as a tensor [V]; fails the case if it raises or returns something else."""
    try:
        got = env["penalised_logits"](logits.clone(), list(output_ids), presence, frequency)
    except Exception as error:
        raise AssertionError(say("penalised_logits raised {e!r}", "penalised_logits 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, torch.Tensor) and got.shape == logits.shape, say(
        "penalised_logits should return a tensor shaped like the logits [V], not {g}",
        "penalised_logits 应返回与 logits 形状相同的张量 [V]，而不是 {g}",
        g=tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__)
    return got


@test_case(points=1, hidden=False)
def test_shape(env):
    penalised(env, torch.zeros(10), [1, 2, 2], 0.5, 0.5)


@test_case(points=1, hidden=True)
def test_against_engine(env):
    for seed, presence, frequency in ((1, 0.7, 0.0), (2, 0.0, 0.4), (3, 1.1, 0.3)):
        g = torch.Generator().manual_seed(seed)
        logits, ids = torch.randn(40, generator=g), torch.randint(0, 40, (15,), generator=g).tolist()
        want = sampling.apply_presence_frequency_penalty(logits, ids, presence, frequency)
        assert torch.allclose(penalised(env, logits, ids, presence, frequency), want, atol=1e-5), say(
            "penalised_logits with presence = {p}, frequency = {f} is wrong for some token: presence counts a token "
            "once however often it appeared, frequency once per appearance",
            "presence = {p}、frequency = {f} 时 penalised_logits 对某些 token 的结果不对：presence 对出现过的 token "
            "只算一次，无论出现多少次；frequency 每出现一次算一次", p=presence, f=frequency)


@test_case(points=1, hidden=True)
def test_long_list_answer(env):
    assert env.get("long_list_penalty") == "presence", say(
        "long_list_penalty is not right: which penalty grows each time the comma is used again?",
        "long_list_penalty 不对：哪一种惩罚会随着逗号每多用一次而变大？")
