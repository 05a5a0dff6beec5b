"""Chapter 4, exercise 1: the generation loop without a cache."""
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import WithoutCache, say

OK_FORMAT = False
name = "ch04-ex1"
points = 3


def generated(env, ids, n):
    """The student's generate_without_cache(lm, ids, n) as a list of ints; fails the case if it raises."""
    try:
        got = env["generate_without_cache"](WithoutCache(env["lm"]), list(ids), n)
    except AssertionError:
        raise
    except Exception as error:
        raise AssertionError(say("generate_without_cache raised {e!r}", "generate_without_cache 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, (list, tuple)), say("generate_without_cache should return a list of token ids, not {t}",
                                               "generate_without_cache 应返回一个 token id 列表，而不是 {t}",
                                               t=type(got).__name__)
    return [int(t) for t in got]


@test_case(points=1, hidden=False)
def test_returns_n_ids(env):
    got = generated(env, env["lm"].tokenizer.encode("The sky is"), 3)
    assert len(got) == 3, say("generate_without_cache(lm, ids, 3) gave {n} ids, not 3",
                              "generate_without_cache(lm, ids, 3) 给出了 {n} 个 id，而不是 3 个", n=len(got))


@test_case(points=2, hidden=True)
def test_same_as_cached_greedy(env):
    lm = env["lm"]
    for text, n in (("Once upon a time", 5), ("1, 2, 3, 4,", 4)):
        ids = lm.tokenizer.encode(text)
        want = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)).token_ids
        got = generated(env, ids, n)
        assert got == want, say(
            "generate_without_cache differs from cached greedy decoding for {text!r}: at each step take the argmax of "
            "the last row, append it, and run the whole sequence again",
            "对 {text!r}，generate_without_cache 与带缓存的贪婪解码不一致：每一步取最后一行的 argmax，把它接到"
            "序列后面，再对整个序列重新运行", text=text)
