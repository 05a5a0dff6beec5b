"""Chapter 13, exercise 2: CacheBlend choosing its tokens after layer 0 (full_layers=1)."""
from functools import cache

import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import blend, precompute_chunk

OK_FORMAT = False
name = "ch13-ex2"
points = 3


@cache
def tiny_chunks():
    """A tiny random model (4 layers) and three chunks of 10, 15 and 15 tokens, each computed alone."""
    torch.manual_seed(0)
    cfg = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=4, n_heads=4, n_kv_heads=2,
                         head_dim=12, max_position_embeddings=512)
    tiny = LanguageModel(Transformer(cfg).eval(), tokenizer=None, name="tiny")
    ids = torch.randint(3, 97, (40,), generator=torch.Generator().manual_seed(13)).tolist()
    return tiny, [precompute_chunk(tiny, c) for c in (ids[:10], ids[10:25], ids[25:])]


def share(env, n_tokens, n_layers, ratio, full_layers):
    try:
        got = env["recompute_share"](n_tokens, n_layers, ratio, full_layers)
    except Exception as error:
        raise AssertionError(say("recompute_share raised {e!r}", "recompute_share 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, int | float) and not isinstance(got, bool), say(
        "recompute_share should return a number (a share between 0 and 1), not {t}",
        "recompute_share 应返回一个数（0 到 1 之间的比例），而不是 {t}", t=type(got).__name__)
    return float(got)


@test_case(points=1, hidden=False)
def test_returns_a_share(env):
    got = share(env, 200, 30, 0.15, 2)
    assert 0 < got < 1, say("recompute_share returned {got}: blend computes some, but not all, of a full prefill",
                            "recompute_share 返回了 {got}：blend 计算的是完整预填充的一部分，而不是全部或零",
                            got=got)
    assert isinstance(env.get("layer0_kv_depends_on_other_tokens"), bool), say(
        "set layer0_kv_depends_on_other_tokens to True or False",
        "请把 layer0_kv_depends_on_other_tokens 设为 True 或 False")


@test_case(points=1.5, hidden=True)
def test_against_blend(env):
    tiny, chunks = tiny_chunks()
    n_tokens, n_layers = sum(len(c.token_ids) for c in chunks), tiny.config.n_layers
    for ratio in (0.1, 0.25, 0.5):  # r·N is a whole number of tokens
        for full_layers in (1, 2, 3):
            want = blend(tiny, chunks, ratio=ratio, full_layers=full_layers).recompute_fraction
            got = share(env, n_tokens, n_layers, ratio, full_layers)
            assert abs(got - want) < 1e-9, say(
                "recompute_share is off for r = {r}, full_layers = {f} ({L} layers): count the token-layers of the "
                "layers recomputed for every token, then those of the chosen tokens in the other layers",
                "r = {r}、full_layers = {f}（共 {L} 层）时 recompute_share 不对：先数为所有 token 重算的那些层的"
                "“token·层”数，再数其余各层中只为被选中 token 重算的", r=ratio, f=full_layers, L=n_layers)


@test_case(points=0.5, hidden=True)
def test_layer0(env):
    tiny, chunks = tiny_chunks()
    at_layer0 = blend(tiny, chunks, ratio=0.25, full_layers=1).deviation  # [N] deviation at layer 0
    at_layer1 = blend(tiny, chunks, ratio=0.25, full_layers=2).deviation  # [N] deviation at layer 1
    depends = bool(at_layer0.max() > 1e-3 * at_layer1.max())
    assert env.get("layer0_kv_depends_on_other_tokens") is depends, say(
        "layer0_kv_depends_on_other_tokens is wrong: what does layer 0 compute a token's K and V from?",
        "layer0_kv_depends_on_other_tokens 不对：第 0 层是用什么计算一个 token 的 K 和 V 的？")
