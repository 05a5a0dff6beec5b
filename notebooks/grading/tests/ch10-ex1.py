"""Chapter 10, exercise 1: the prompt length at which attention is half of a layer's prefill FLOPs."""
from otter.test_files import test_case

import teachllm as tl
from teachllm import cost
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch10-ex1"
points = 3


def half_length(env, cfg):
    """The student's attention_half_length(cfg) as a float; fails the case if it raises or returns no number."""
    try:
        got = env["attention_half_length"](cfg)
    except Exception as error:
        raise AssertionError(say("attention_half_length raised {e!r}", "attention_half_length 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, (int, float)) and not isinstance(got, bool), say(
        "attention_half_length should return a number of tokens, not {t}",
        "attention_half_length 应返回一个 token 数，而不是 {t}", t=type(got).__name__)
    return float(got)


def engine_half_length(cfg):
    """Per layer, attention is a·s² and the rest l·s (teachllm.cost), so they are equal at s = l / a."""
    per_token = cost.layer_flops(cfg, n_new=1, n_keys=1)
    attention = sum(per_token[op] for op in cost.ATTENTION_OPS)
    return (sum(per_token.values()) - attention) / attention


@test_case(points=1, hidden=False)
def test_returns_a_length(env):
    got = half_length(env, env["lm"].config if "lm" in env else tl.load(device="cpu", dtype="float32").config)
    assert got > 1, say("attention_half_length returned {got}: a prompt length is more than one token",
                        "attention_half_length 返回了 {got}：提示词长度应大于一个 token", got=got)


@test_case(points=2, hidden=True)
def test_against_the_engine_count(env):
    shapes = [dict(hidden_size=768, intermediate_size=2048, n_layers=12, n_heads=12, n_kv_heads=4, head_dim=64),
              dict(hidden_size=1024, intermediate_size=2816, n_layers=8, n_heads=16, n_kv_heads=16, head_dim=64),
              dict(hidden_size=512, intermediate_size=1536, n_layers=4, n_heads=8, n_kv_heads=1, head_dim=80)]
    for shape in shapes:
        cfg = tl.ModelConfig(vocab_size=1000, max_position_embeddings=4096, **shape)
        want, got = engine_half_length(cfg), half_length(env, cfg)
        assert abs(got - want) <= 1e-6 * want + 0.5, say(
            "for h = {h}, n_h = {nh}, n_kv = {nkv}, f = {f} the length is off by {pct:.0%}: count every matmul of "
            "the layer (K and V have n_kv heads, the MLP has three matrices) against QKᵀ and scores·V",
            "h = {h}、n_h = {nh}、n_kv = {nkv}、f = {f} 时长度偏差了 {pct:.0%}：把层中每个矩阵乘法都算上（K 和 V 只有 "
            "n_kv 个头，MLP 有三个矩阵），再与 QKᵀ 和 scores·V 比较", h=cfg.hidden_size, nh=cfg.n_heads,
            nkv=cfg.n_kv_heads, f=cfg.intermediate_size, pct=abs(got - want) / want)
