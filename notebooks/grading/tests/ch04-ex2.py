"""Chapter 4, exercise 2: how much of a cached prompt a second prompt can reuse."""
import torch
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch04-ex2"
points = 3
PAIRS = [("The capital of France is Paris.", "The capital of France is Paris. The capital of Italy is"),
         ("The capital of France is", "The capital of Italy is"),
         ("Hello world", "Goodbye world"),
         ("The capital of France is Paris.", "The capital")]


def reusable(env, ids_a, ids_b):
    """The student's reusable_prefix(ids_a, ids_b) as an int; fails the case if it raises."""
    try:
        got = env["reusable_prefix"](list(ids_a), list(ids_b))
    except Exception as error:
        raise AssertionError(say("reusable_prefix raised {e!r}", "reusable_prefix 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, int) and not isinstance(got, bool), say(
        "reusable_prefix should return a whole number of tokens, not {t}",
        "reusable_prefix 应返回一个整数（token 数），而不是 {t}", t=type(got).__name__)
    return got


@test_case(points=1, hidden=False)
def test_same_prompt(env):
    ids = env["lm"].tokenizer.encode("A prompt sent twice")
    got = reusable(env, ids, ids)
    assert got == len(ids), say("the same prompt twice: reusable_prefix gives {got} of its {n} tokens",
                                "同一条提示词发送两次：reusable_prefix 给出 {got}，而它共有 {n} 个 token",
                                got=got, n=len(ids))


@test_case(points=1.5, hidden=True)
def test_against_the_cache(env):
    lm = env["lm"]
    for text_a, text_b in PAIRS:
        ids_a, ids_b = lm.tokenizer.encode(text_a), lm.tokenizer.encode(text_b)
        c0, c1 = lm.new_cache(max_len=len(ids_a)), lm.new_cache(max_len=len(ids_b))
        lm.prefill(ids_a, c0)
        lm.prefill(ids_b, c1)
        want = 0  # the leading positions whose K and V agree in every layer
        while want < min(len(ids_a), len(ids_b)) and all(
                torch.allclose(c0.keys(layer)[:, :, want], c1.keys(layer)[:, :, want], rtol=0, atol=1e-4)
                and torch.allclose(c0.values(layer)[:, :, want], c1.values(layer)[:, :, want], rtol=0, atol=1e-4)
                for layer in range(lm.config.n_layers)):
            want += 1
        assert reusable(env, ids_a, ids_b) == want, say(
            "reusable_prefix is wrong for {a!r} then {b!r}: a token's K and V depend on every token up to it",
            "reusable_prefix 对先 {a!r} 后 {b!r} 不对：一个 token 的 K 和 V 取决于它之前（含它自己）的每一个 token",
            a=text_a, b=text_b)


@test_case(points=0.5, hidden=True)
def test_answer(env):
    lm = env["lm"]
    a, b = (lm.tokenizer.encode(t) for t in PAIRS[0])  # b starts with all of a
    caches = [lm.new_cache(max_len=len(a)), lm.new_cache(max_len=len(b))]
    lm.prefill(a, caches[0])
    lm.prefill(b, caches[1])
    want = all(torch.allclose(caches[0].keys(layer), caches[1].keys(layer)[:, :, :len(a)], rtol=0, atol=1e-4)
               for layer in range(lm.config.n_layers))
    assert env.get("same_kv_for_shared_tokens") is want, say(
        "same_kv_for_shared_tokens is wrong (it should be True or False): compare cache.keys(layer) of both prompts",
        "same_kv_for_shared_tokens 不对（应为 True 或 False）：比较两条提示词的 cache.keys(layer)")
