"""Chapter 11, exercise 2: static and continuous batching with one request at a time."""
import torch
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

OK_FORMAT = False
name = "ch11-ex2"
points = 3


def predicted(env, max_tokens):
    try:
        got = env["iterations_one_at_a_time"](list(max_tokens))
    except Exception as error:
        raise AssertionError(say("iterations_one_at_a_time raised {e!r}", "iterations_one_at_a_time 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, int) and not isinstance(got, bool), say(
        "iterations_one_at_a_time should return a number of iterations (an int), not {t}",
        "iterations_one_at_a_time 应返回迭代次数（一个 int），而不是 {t}", t=type(got).__name__)
    return got


def engine_iterations(policy, max_tokens):
    """Iterations the engine takes for one 4-token prompt per request on a tiny random model, max_num_seqs=1."""
    torch.manual_seed(0)
    cfg = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                         head_dim=12, max_position_embeddings=512)
    tiny = LanguageModel(Transformer(cfg).eval(), tokenizer=None, name="tiny")
    params = [tl.SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in max_tokens]
    prompts = [[5 + i, 6, 7, 8] for i in range(len(max_tokens))]
    return ServingEngine(tiny, ServingConfig(policy=policy, max_num_seqs=1)).run(prompts, params).iterations


@test_case(points=1, hidden=False)
def test_returns_a_count(env):
    got = predicted(env, [3, 5, 2, 4])
    assert got > 0, say("iterations_one_at_a_time returned {got}: a run takes at least one iteration",
                        "iterations_one_at_a_time 返回了 {got}：一次运行至少要一次迭代", got=got)
    assert isinstance(env.get("static_same_as_continuous"), bool), say(
        "set static_same_as_continuous to True or False", "请把 static_same_as_continuous 设为 True 或 False")


@test_case(points=1.5, hidden=True)
def test_against_the_engine(env):
    for max_tokens in ([1, 1, 1], [6, 2, 9], [4, 7]):
        want, got = engine_iterations("continuous", max_tokens), predicted(env, max_tokens)
        assert got == want, say(
            "for output lengths {m} the prediction is {way}: what does the prefill iteration "
            "yield, and how many iterations does each further token take?",
            "输出长度为 {m} 时，预测{way}了：预填充那次迭代产出了什么？之后每个 token 各要几次迭代？",
            m=max_tokens, way=say("too high", "偏多") if got > want else say("too low", "偏少"))


@test_case(points=0.5, hidden=True)
def test_policies(env):
    same = engine_iterations("static", [6, 2, 9]) == engine_iterations("continuous", [6, 2, 9])
    assert env.get("static_same_as_continuous") is same, say(
        "static_same_as_continuous is wrong: with one slot, when can a waiting request start under each policy?",
        "static_same_as_continuous 不对：只有一个位置时，两种策略下等待的请求各在什么时候开始？")
