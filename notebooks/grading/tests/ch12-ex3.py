"""Chapter 12, exercise 3: how many tokens of a prompt sent twice the prefix cache gives back."""
import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

OK_FORMAT = False
name = "ch12-ex3"
points = 3


def found(env, n, block_size):
    try:
        got = env["tokens_found_again"](n, block_size)
    except Exception as error:
        raise AssertionError(say("tokens_found_again raised {e!r}", "tokens_found_again 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, int) and not isinstance(got, bool), say(
        "tokens_found_again should return a number of tokens (an int), not {t}",
        "tokens_found_again 应返回一个 token 数（int），而不是 {t}", t=type(got).__name__)
    return got


def engine_found(n, block_size):
    """Send an n-token prompt twice to an engine with prefix caching (tiny random model); tokens found the 2nd time."""
    torch.manual_seed(0)
    cfg = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                         head_dim=12, max_position_embeddings=512)
    tiny = LanguageModel(Transformer(cfg).eval(), tokenizer=None, name="tiny")
    engine = ServingEngine(tiny, ServingConfig(block_size=block_size, num_blocks=64))
    prompt, one = [3 + i % 90 for i in range(n)], tl.SamplingParams(temperature=0, max_tokens=1)
    engine.run([prompt], one)
    return engine.run([prompt], one).requests[0].num_cached_tokens


@test_case(points=1, hidden=False)
def test_returns_a_count(env):
    got = found(env, 40, 16)
    assert 0 <= got <= 40, say("tokens_found_again returned {got}, more than the prompt or below zero",
                               "tokens_found_again 返回了 {got}，比提示词还多或小于零", got=got)


@test_case(points=2, hidden=True)
def test_against_the_engine(env):
    for n, block_size in ((16, 16), (17, 16), (8, 4), (9, 4), (12, 4), (30, 8), (5, 1)):
        got, want = found(env, n, block_size), engine_found(n, block_size)
        assert got == want, say(
            "for {n} tokens in blocks of {bs}, tokens_found_again is off: only whole blocks are shared, and which "
            "prompt token must the second request compute itself?",
            "{n} 个 token、块大小 {bs} 时 tokens_found_again 不对：只有整块才能共享；"
            "第二个请求必须自己计算哪个提示词 token？",
            n=n, bs=block_size)
