"""Chapter 11, exercise 1: the iterations in which a prompt chunk is prefilled while other requests decode."""
import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

OK_FORMAT = False
name = "ch11-ex1"
points = 3


def chunked_run(budget, long_len, seed):
    """Three short requests decode on a tiny random model; then a long prompt arrives, prefilled in chunks."""
    torch.manual_seed(seed)
    cfg = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                         head_dim=12, max_position_embeddings=512)
    tiny = LanguageModel(Transformer(cfg).eval(), tokenizer=None, name="tiny")
    g = torch.Generator().manual_seed(seed)
    engine = ServingEngine(tiny, ServingConfig(max_num_seqs=4, max_num_batched_tokens=budget, chunked_prefill=True))
    ids = [engine.add_request(torch.randint(3, 97, (5 + i,), generator=g).tolist(),
                              tl.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)) for i in range(3)]
    engine.step()
    engine.step()
    ids.append(engine.add_request(torch.randint(3, 97, (long_len,), generator=g).tolist(),
                                  tl.SamplingParams(temperature=0, max_tokens=2, ignore_eos=True)))
    return engine.drain(ids, first_iteration=0)


def mixed(env, run):
    try:
        got = env["mixed_iterations"](run)
    except Exception as error:
        raise AssertionError(say("mixed_iterations raised {e!r}", "mixed_iterations 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, (list, tuple)) and all(isinstance(i, int) for i in got), say(
        "mixed_iterations should return a list of iteration indices, not {t}",
        "mixed_iterations 应返回迭代编号的列表，而不是 {t}", t=type(got).__name__)
    return sorted(got)


@test_case(points=1, hidden=False)
def test_returns_indices(env):
    run = chunked_run(10, 30, 0)
    got = mixed(env, run)
    assert got and set(got) <= {r.index for r in run.timeline}, say(
        "mixed_iterations should return some of the run's iteration indices (record.index)",
        "mixed_iterations 应返回这次运行中的若干迭代编号（record.index）")
    assert isinstance(env.get("chunk_gets_token_each_iteration"), bool), say(
        "set chunk_gets_token_each_iteration to True or False",
        "请把 chunk_gets_token_each_iteration 设为 True 或 False")


@test_case(points=1.5, hidden=True)
def test_against_the_timeline(env):
    for budget, long_len, seed in ((8, 25, 1), (16, 40, 2), (12, 33, 3)):
        run = chunked_run(budget, long_len, seed)
        want = [r.index for r in run.timeline if r.decode_ids and r.prefill]
        got = mixed(env, run)
        assert got == want, say(
            "with a budget of {b}, mixed_iterations gives {n} iterations, not the timeline's: an iteration "
            "counts when it holds a prefill chunk and at least one decode",
            "预算为 {b} 时，mixed_iterations 给出了 {n} 次迭代，与时间线不符：一次迭代既有预填充分块、"
            "又至少有一个解码，才算数", b=budget, n=len(got))


@test_case(points=0.5, hidden=True)
def test_who_gets_a_token(env):
    run = chunked_run(10, 30, 0)
    long_id = run.requests[-1].request_id
    chunks = [r for r in run.timeline if any(rid == long_id for rid, _, _ in r.prefill)]
    every = all(long_id in r.sampled for r in chunks)
    assert env.get("chunk_gets_token_each_iteration") is every, say(
        "chunk_gets_token_each_iteration is wrong: which requests does an iteration sample a token for?",
        "chunk_gets_token_each_iteration 不对：一次迭代会为哪些请求采样 token？")
