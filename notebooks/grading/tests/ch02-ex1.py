"""Chapter 2, exercise 1: a text on which BPE learns `er` or `es` early."""
from otter.test_files import test_case

from teachllm.bpe import train_bpe
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch02-ex1"
points = 3


@test_case(points=1, hidden=False)
def test_is_text(env):
    text = env.get("my_text")
    assert isinstance(text, str) and text.split(), say("set my_text to a text of a few words, not {v!r}",
                                                       "把 my_text 设为由几个单词组成的文本，而不是 {v!r}", v=text)


@test_case(points=2, hidden=True)
def test_learns_er_or_es(env):
    text = env.get("my_text")
    assert isinstance(text, str), say("my_text is not a string", "my_text 不是字符串")
    first = [m.result for m in train_bpe(text, n_merges=4)[1]]
    assert {"er", "es"} & set(first), say(
        "not yet: the first merges are {first}; repeat the words that hold 'er' or 'es' more often than the others",
        "还不对：最先的几次合并是 {first}；让含有 'er' 或 'es' 的单词比其他单词重复得更多", first=first)
