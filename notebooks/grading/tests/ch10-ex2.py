"""Chapter 10, exercise 2: decode's arithmetic intensity at a very large batch, against an H100's ridge."""
from otter.test_files import test_case

import teachllm as tl
from teachllm import cost
from teachllm.course.grading import say
from teachllm.roofline import KNOWN_DEVICES

OK_FORMAT = False
name = "ch10-ex2"
points = 3


def limit(env, cfg, context_len):
    """The student's decode_intensity_limit(cfg, context_len) as a float; fails the case if it raises."""
    try:
        got = env["decode_intensity_limit"](cfg, context_len)
    except Exception as error:
        raise AssertionError(say("decode_intensity_limit raised {e!r}", "decode_intensity_limit 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, (int, float)) and not isinstance(got, bool), say(
        "decode_intensity_limit should return a number of FLOPs per byte, not {t}",
        "decode_intensity_limit 应返回每字节的 FLOPs（一个数），而不是 {t}", t=type(got).__name__)
    return float(got)


def engine_limit(cfg, context_len):
    """b·FLOPs / (weights + b·KV) → FLOPs / KV of one sequence as b grows (teachllm.cost's bytes model, bf16)."""
    one = cost.decode_cost(cfg, context_len, dtype="bf16")
    return one.flops / (one.kv_read_bytes + one.kv_write_bytes)


def bundled_config(env):
    return env["lm"].config if "lm" in env else tl.load(device="cpu", dtype="float32").config


@test_case(points=1, hidden=False)
def test_returns_an_intensity(env):
    got = limit(env, bundled_config(env), 1000)
    assert got > 0, say("decode_intensity_limit returned {got}: FLOPs per byte are positive",
                        "decode_intensity_limit 返回了 {got}：每字节的 FLOPs 应为正数", got=got)
    answer = env.get("compute_bound_on_h100")
    assert isinstance(answer, bool), say("set compute_bound_on_h100 to True or False",
                                         "请把 compute_bound_on_h100 设为 True 或 False")


@test_case(points=1.5, hidden=True)
def test_against_the_engine_bytes_model(env):
    cfg = tl.ModelConfig(vocab_size=5000, hidden_size=640, intermediate_size=1792, n_layers=6, n_heads=10,
                         n_kv_heads=2, head_dim=64, max_position_embeddings=4096)
    for context_len in (8, 100, 3000):
        want, got = engine_limit(cfg, context_len), limit(env, cfg, context_len)
        assert abs(got - want) <= 1e-3 * want, say(
            "at {T} tokens of context the limit is off by {pct:.1%}: as the batch grows, what each sequence adds is "
            "its FLOPs and the K and V it reads and writes (the new token's too), in bfloat16",
            "上下文为 {T} 个 token 时，极限值偏差了 {pct:.1%}：批变大时，每个序列增加的是它的 FLOPs，"
            "以及它读写的 K 和 V（新 token 的也算），按 bfloat16 计", T=context_len, pct=abs(got - want) / want)


@test_case(points=0.5, hidden=True)
def test_h100(env):
    ridge = KNOWN_DEVICES["H100 SXM"].ridge
    assert env.get("compute_bound_on_h100") is (engine_limit(bundled_config(env), 1000) > ridge), say(
        "compute_bound_on_h100 is wrong: compare the limit with the H100's ridge point (FLOPs/s ÷ bytes/s)",
        "compute_bound_on_h100 不对：把这个极限与 H100 的屋脊点（FLOPs/s ÷ 字节/s）比较")
