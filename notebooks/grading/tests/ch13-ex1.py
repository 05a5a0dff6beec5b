"""Chapter 13, exercise 1: how many tokens of a new prompt the prefix cache gives back."""
from functools import cache

import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

OK_FORMAT = False
name = "ch13-ex1"
points = 3


def found(env, sent, prompt, block_size):
    try:
        got = env["prefix_tokens_found"]([list(p) for p in sent], list(prompt), block_size)
    except Exception as error:
        raise AssertionError(say("prefix_tokens_found raised {e!r}", "prefix_tokens_found 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, int) and not isinstance(got, bool), say(
        "prefix_tokens_found should return a number of tokens (an int), not {t}",
        "prefix_tokens_found 应返回一个 token 数（int），而不是 {t}", t=type(got).__name__)
    return got


@cache
def tiny_model():
    torch.manual_seed(0)
    cfg = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                         head_dim=12, max_position_embeddings=512)
    return LanguageModel(Transformer(cfg).eval(), tokenizer=None, name="tiny")


def engine_found(sent, prompt, block_size):
    """Send each of `sent`, then `prompt`, to an engine with prefix caching (tiny random model, one output token
    each); the tokens of `prompt` found in the cache."""
    engine = ServingEngine(tiny_model(), ServingConfig(block_size=block_size, num_blocks=128))
    one = tl.SamplingParams(temperature=0, max_tokens=1)
    for p in sent:
        engine.run([p], one)
    return engine.run([prompt], one).requests[0].num_cached_tokens


def documents():
    """Three 'documents' of 21, 13 and 17 token ids and a 6-token 'question'."""
    ids = torch.randint(3, 97, (57,), generator=torch.Generator().manual_seed(13)).tolist()
    return ids[:21], ids[21:34], ids[34:51], ids[51:]


@test_case(points=1, hidden=False)
def test_returns_a_count(env):
    d1, d2, _, question = documents()
    prompt = d1 + d2 + question
    got = found(env, [], prompt, 4)
    assert got == 0, say("prefix_tokens_found found {got} tokens when nothing was sent before",
                         "之前什么都没发送过，prefix_tokens_found 却找到了 {got} 个 token", got=got)
    got = found(env, [d1 + d2 + question], d2 + d1 + question, 4)
    assert 0 <= got <= len(prompt), say("prefix_tokens_found returned {got}, more than the prompt or below zero",
                                        "prefix_tokens_found 返回了 {got}，比提示词还多或小于零", got=got)


@test_case(points=2, hidden=True)
def test_against_the_engine(env):
    d1, d2, d3, q = documents()
    cases = [  # (prompts sent before, the new prompt)
        ([d1 + d2 + q], d2 + d1 + q),
        ([d1 + d2 + q, d2 + d1 + q], d1 + d3 + q),  # the best match is not the last prompt sent
        ([d1 + d2 + q, d3 + q], d1 + d2 + q),  # the same prompt again
        ([d1 + d2 + q], d1 + d2),  # a prefix of a prompt sent before
        ([d1 + d2 + d3, d2 + q], d1 + d2 + q),
    ]
    for block_size in (4, 8, 16, 1):
        for sent, prompt in cases:
            got, want = found(env, sent, prompt, block_size), engine_found(sent, prompt, block_size)
            assert got == want, say(
                "with blocks of {bs} and {m} prompt(s) sent before, a prompt of {n} tokens: prefix_tokens_found is "
                "off. Only whole blocks whose whole prefix matches are found, any earlier prompt may hold them, and "
                "which prompt token must the new request compute itself?",
                "块大小为 {bs}、之前发送过 {m} 条提示词时，对一条 {n} 个 token 的提示词，prefix_tokens_found 不对。"
                "只有整个前缀都相同的整块才能找到，而且之前的任何一条提示词都可能存着它们；新请求又必须自己计算哪个"
                "提示词 token？", bs=block_size, n=len(prompt), m=len(sent))
