"""Chapter 7, exercise 2: the tokens no_repeat_ngram_size forbids."""
import torch
from otter.test_files import test_case
from transformers import NoRepeatNGramLogitsProcessor

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch07-ex2"
points = 3


def banned(env, ids, n):
    """The student's banned_by_no_repeat(ids, n) as a set of ints; fails the case otherwise."""
    try:
        got = env["banned_by_no_repeat"](list(ids), n)
    except Exception as error:
        raise AssertionError(say("banned_by_no_repeat raised {e!r}", "banned_by_no_repeat 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, set), say("banned_by_no_repeat should return a set of token ids, not {t}",
                                     "banned_by_no_repeat 应返回 token id 的集合，而不是 {t}", t=type(got).__name__)
    return {int(i) for i in got}


def reference(ids, n, vocab):
    """transformers' NoRepeatNGramLogitsProcessor: the ids it sets to -inf."""
    out = NoRepeatNGramLogitsProcessor(n)(torch.tensor([ids]), torch.zeros(1, vocab))
    return set(out[0].isinf().nonzero().flatten().tolist())


@test_case(points=1, hidden=False)
def test_returns_a_set(env):
    banned(env, [5, 6, 7, 5], 2)


@test_case(points=1, hidden=True)
def test_against_transformers(env):
    randoms = [(torch.randint(0, 4, (m,), generator=torch.Generator().manual_seed(m)).tolist(), n)
               for m, n in ((12, 2), (30, 3), (31, 2), (60, 4), (2, 3))]
    for ids, n in [([1, 2, 3, 3], 2), ([0, 1, 1, 1], 3)] + randoms:
        length, got = len(ids), banned(env, ids, n)
        assert got == reference(ids, n, 4), say(
            "banned_by_no_repeat(ids, {n}) is wrong for a sequence of {m} tokens ({k} banned): an n-gram is banned "
            "when its first n − 1 tokens equal the last n − 1 tokens of ids, wherever it occurred, the latest "
            "one included", "banned_by_no_repeat(ids, {n}) 在一个 {m} 个 token 的序列上不对（禁止了 {k} 个）："
            "一个 n 元组的前 n − 1 个 token 等于 ids 末尾的 n − 1 个 token 时就要禁止，无论它出现在哪里，"
            "包括最近的那一个", n=n, m=length, k=len(got))


@test_case(points=1, hidden=True)
def test_table_answer(env):
    assert env.get("table_survives_no_repeat") is False, say(
        "table_survives_no_repeat is not right: which pairs of tokens must the next line of the table repeat?",
        "table_survives_no_repeat 不对：乘法表的下一行必须重复哪些相邻的 token 对？")
