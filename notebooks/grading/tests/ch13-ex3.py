"""Chapter 13, exercise 3: why a larger γ does not keep helping speculative decoding."""
import math
import random

from otter.test_files import test_case

from teachllm.course.grading import say
from teachllm.serving import expected_tokens_per_call

OK_FORMAT = False
name = "ch13-ex3"
points = 3


def ceiling(env, alpha):
    try:
        got = env["tokens_per_call_ceiling"](alpha)
    except Exception as error:
        raise AssertionError(say("tokens_per_call_ceiling raised {e!r}", "tokens_per_call_ceiling 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, int | float) and not isinstance(got, bool), say(
        "tokens_per_call_ceiling should return a number of tokens (a float), not {t}",
        "tokens_per_call_ceiling 应返回一个 token 数（float），而不是 {t}", t=type(got).__name__)
    return float(got)


@test_case(points=1, hidden=False)
def test_returns_a_number(env):
    low, high = ceiling(env, 0.3), ceiling(env, 0.6)
    assert 1 <= low < high, say(
        "tokens_per_call_ceiling gives {low:.3g} at α = 0.3 and {high:.3g} at α = 0.6: every target call yields at "
        "least one token, and more when proposals are accepted more often",
        "tokens_per_call_ceiling 在 α = 0.3 时给出 {low:.3g}，在 α = 0.6 时给出 {high:.3g}：每次目标调用至少产出一个 "
        "token，提议被接受得越频繁，产出越多", low=low, high=high)
    assert isinstance(env.get("gamma_keeps_helping"), bool), say(
        "set gamma_keeps_helping to True or False", "请把 gamma_keeps_helping 设为 True 或 False")


@test_case(points=1.5, hidden=True)
def test_against_the_formula(env):
    rng = random.Random(13)
    for alpha in [0.0, 0.5, 0.9, 0.97] + [rng.uniform(0.05, 0.95) for _ in range(5)]:
        want = expected_tokens_per_call(alpha, 5000)  # γ so large that α^γ is nothing
        got = ceiling(env, alpha)
        assert math.isclose(got, want, rel_tol=1e-6), say(
            "tokens_per_call_ceiling is off at α = {a:.2f}: a call yields 1 + α + α² + … + α^γ tokens on average; "
            "what does that sum approach as γ grows?",
            "α = {a:.2f} 时 tokens_per_call_ceiling 不对：一次调用平均产出 1 + α + α² + … + α^γ 个 token；"
            "γ 越来越大时，这个和趋近于什么？", a=alpha)


@test_case(points=0.5, hidden=True)
def test_gamma_keeps_helping(env):
    # what going from γ to 2γ adds, at a good draft's α = 0.8: it shrinks towards nothing
    gains = [expected_tokens_per_call(0.8, 2 * g) - expected_tokens_per_call(0.8, g) for g in (4, 8, 16, 32)]
    keeps = gains[-1] > 0.5 * gains[0]
    assert env.get("gamma_keeps_helping") is keeps, say(
        "gamma_keeps_helping is wrong: compare what γ = 4 → 8 adds with what γ = 16 → 32 adds, and what each extra "
        "proposal costs", "gamma_keeps_helping 不对：比较 γ 从 4 增到 8 和从 16 增到 32 各多出多少，"
        "以及每多一个提议要花多少代价")
