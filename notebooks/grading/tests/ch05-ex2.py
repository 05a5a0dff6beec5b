"""Chapter 5, exercise 2: the context length at which a decode step's attention costs as much as the rest."""
import dataclasses
import numbers

from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch05-ex2"
points = 3


def crossover(env, cfg):
    """The student's attention_crossover(cfg) as an int; fails the case if it raises or returns something else."""
    try:
        got = env["attention_crossover"](cfg)
    except Exception as error:
        raise AssertionError(say("attention_crossover raised {e!r}", "attention_crossover 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, numbers.Integral) and not isinstance(got, bool) and got >= 1, say(
        "attention_crossover should return a context length (an integer ≥ 1), not {g!r}",
        "attention_crossover 应返回一个上下文长度（不小于 1 的整数），而不是 {g!r}", g=got)
    return int(got)


def check_crossing(cfg, T):
    """Fails unless T is the first context length where attention FLOPs reach the others."""
    def attention_wins(t):
        f = tl.cost.decode_flops(cfg, t)
        return f.attention >= f.linear

    assert attention_wins(T), say("at T = {T} attention still costs less than the rest of the step: T is too small",
                                  "在 T = {T} 时注意力的开销仍小于这一步的其余部分：T 太小了", T=T)
    assert T == 1 or not attention_wins(T - 1), say(
        "attention already costs at least as much as the rest at T − 1 = {t}: you want the first such length",
        "在 T − 1 = {t} 时注意力的开销已经不少于其余部分：要找的是第一个这样的长度", t=T - 1)


@test_case(points=1, hidden=False)
def test_returns_a_length(env):
    crossover(env, env["lm"].config)


@test_case(points=1, hidden=True)
def test_bundled_model(env):
    cfg = env["lm"].config
    check_crossing(cfg, crossover(env, cfg))


@test_case(points=1, hidden=True)
def test_other_models(env):
    base = env["lm"].config
    for shape in (dict(n_layers=4, hidden_size=256, n_heads=8, n_kv_heads=2, head_dim=32, intermediate_size=512),
                  dict(n_layers=2, hidden_size=128, n_heads=4, n_kv_heads=4, head_dim=32, intermediate_size=384,
                       vocab_size=1000)):
        cfg = dataclasses.replace(base, **shape)
        check_crossing(cfg, crossover(env, cfg))
