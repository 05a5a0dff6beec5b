"""Chapter 4, exercise 3: how many tokens of KV cache fit on a GPU after the weights."""
import dataclasses

from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch04-ex3"
points = 3
LLAMA2_7B = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)  # Meta's config.json


def fit(env, config, memory_bytes, dtype):
    """The student's tokens_that_fit(config, memory_bytes, dtype) as a number; fails the case if it raises."""
    try:
        got = env["tokens_that_fit"](config, memory_bytes, dtype)
    except Exception as error:
        raise AssertionError(say("tokens_that_fit raised {e!r}", "tokens_that_fit 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, (int, float)) and not isinstance(got, bool), say(
        "tokens_that_fit should return a number of tokens, not {t}", "tokens_that_fit 应返回 token 数，而不是 {t}",
        t=type(got).__name__)
    return got


def close(got, want, tolerance=0.01):
    return got is not None and not isinstance(got, bool) and abs(got - want) <= tolerance * want


@test_case(points=1, hidden=False)
def test_returns_a_count(env):
    got = fit(env, env["lm"].config, 4e9, "float32")
    assert got > 0, say("tokens_that_fit says nothing fits next to SmolLM2 in 4 GB", "tokens_that_fit 认为在 4 GB 里"
                        "放下 SmolLM2 之后一个 token 也放不下")


@test_case(points=1, hidden=True)
def test_against_the_formula(env):
    def reference(config, memory_bytes, dtype):
        free = memory_bytes - tl.cost.weight_bytes(config, dtype)
        return free / tl.cost.kv_cache_bytes(config, 1, dtype=dtype)

    smol = env["lm"].config
    gqa = dataclasses.replace(LLAMA2_7B, n_kv_heads=8)
    for config, memory, dtype in ((smol, 2e9, "float32"), (smol, 1e9, "bfloat16"), (gqa, 40e9, "float16"),
                                  (LLAMA2_7B, 24e9, "float16")):
        assert close(fit(env, config, memory, dtype), reference(config, memory, dtype)), say(
            "tokens_that_fit is wrong for a model with {L} layers and {kv} KV heads in {gb:g} GB ({dtype}): subtract "
            "the weights, then divide by the bytes of K and V for one token",
            "tokens_that_fit 对一个 {L} 层、{kv} 个 KV 头的模型在 {gb:g} GB（{dtype}）下不对：先减去权重，再除以一个 "
            "token 的 K 和 V 的字节数",
            L=config.n_layers, kv=config.n_kv_heads, gb=memory / 1e9, dtype=dtype)


@test_case(points=1, hidden=True)
def test_llama2_7b(env):
    def reference(config, weights_of=None):
        free = 80e9 - tl.cost.weight_bytes(weights_of or config, "float16")
        return free / tl.cost.kv_cache_bytes(config, 1, dtype="float16")

    gqa = dataclasses.replace(LLAMA2_7B, n_kv_heads=8)
    assert close(env.get("my_tokens"), reference(LLAMA2_7B)), say(
        "my_tokens is wrong: count the bytes per token again (K and V, every layer, every KV head, 2 bytes each), "
        "and use 80 GB = 80e9 bytes", "my_tokens 不对：重新算一算每个 token 的字节数（K 和 V、每一层、每个 KV 头，每个"
        "元素 2 字节），并取 80 GB = 80e9 字节")
    # with 8 KV heads the K and V projections shrink too; keeping the 32-head weights is accepted as well
    wants = (reference(gqa), reference(gqa, weights_of=LLAMA2_7B))
    assert any(close(env.get("my_tokens_8_kv_heads"), w) for w in wants), say(
        "my_tokens_8_kv_heads is wrong: which factor of the bytes per token do 8 KV heads change?",
        "my_tokens_8_kv_heads 不对：8 个 KV 头改变的是每个 token 字节数中的哪个因子？")
