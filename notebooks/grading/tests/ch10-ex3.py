"""Chapter 10, exercise 3: the KV cache's share of a decode step's bytes, at short and long contexts."""
from otter.test_files import test_case

import teachllm as tl
from teachllm import cost
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch10-ex3"
points = 3


def share(env, cfg, context_len, batch_size):
    """The student's kv_share(cfg, context_len, batch_size) as a float; fails the case if it raises."""
    try:
        got = env["kv_share"](cfg, context_len, batch_size)
    except Exception as error:
        raise AssertionError(say("kv_share raised {e!r}", "kv_share 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, (int, float)) and not isinstance(got, bool), say(
        "kv_share should return a fraction (a number), not {t}", "kv_share 应返回一个比例（一个数），而不是 {t}",
        t=type(got).__name__)
    return float(got)


def engine_share(cfg, context_len, batch_size):
    step = cost.decode_cost(cfg, context_len, batch_size=batch_size, dtype="float32")
    return (step.kv_read_bytes + step.kv_write_bytes) / step.bytes


def bundled_config(env):
    return env["lm"].config if "lm" in env else tl.load(device="cpu", dtype="float32").config


@test_case(points=1, hidden=False)
def test_returns_a_fraction(env):
    got = share(env, bundled_config(env), 64, 1)
    assert 0 < got < 1, say("kv_share returned {got}: a share of the bytes lies between 0 and 1",
                            "kv_share 返回了 {got}：字节中所占的份额应在 0 和 1 之间", got=got)
    answer = env.get("step_grows_with_context")
    assert answer in (1, 16) and not isinstance(answer, bool), say(
        "set step_grows_with_context to 1 or 16", "请把 step_grows_with_context 设为 1 或 16")


@test_case(points=1.5, hidden=True)
def test_against_the_engine_bytes_model(env):
    cfg = tl.ModelConfig(vocab_size=8000, hidden_size=512, intermediate_size=1408, n_layers=10, n_heads=8,
                         n_kv_heads=2, head_dim=64, max_position_embeddings=8192, tie_word_embeddings=True)
    for context_len, batch_size in ((64, 1), (2048, 1), (64, 16), (2048, 16), (500, 7)):
        want, got = engine_share(cfg, context_len, batch_size), share(env, cfg, context_len, batch_size)
        assert abs(got - want) < 1e-4, say(
            "at {T} tokens and batch {b} the share is off: a step reads the weights once, and every sequence reads "
            "its K and V and writes the new token's (float32)",
            "上下文 {T} 个 token、批大小 {b} 时份额不对：一步只读一次权重，而每个序列都要读自己的 K 和 V，"
            "并写入新 token 的 K 和 V（float32）", T=context_len, b=batch_size)


@test_case(points=0.5, hidden=True)
def test_which_step_grows(env):
    cfg = bundled_config(env)
    grows = {b: cost.decode_cost(cfg, 2048, batch_size=b, dtype="float32").bytes
             / cost.decode_cost(cfg, 64, batch_size=b, dtype="float32").bytes
             for b in (1, 16)}
    assert env.get("step_grows_with_context") == max(grows, key=grows.get), say(
        "step_grows_with_context is wrong: which batch's bytes per step grow most from 64 to 2,048 tokens?",
        "step_grows_with_context 不对：从 64 到 2,048 个 token，哪个批大小每步读写的字节增长最多？")
