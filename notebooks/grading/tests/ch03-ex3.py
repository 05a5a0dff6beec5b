"""Chapter 3, exercise 3: which rows of the logits change when one token of the prompt changes."""
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch03-ex3"
points = 3
PAIRS = [("The capital of Italy is", "The capital of Spain is"),
         ("My dog likes to run in the park", "My cat likes to run in the park"),
         ("Red apples are sweet", "Green apples are sweet"),
         ("One two three four", "One two three five"),
         ("I like tea and I like cake", "I like tea and you like pie")]


def rows(env, ids_a, ids_b):
    """The student's rows_that_change(ids_a, ids_b) as a list of ints; fails the case if it raises."""
    try:
        got = env["rows_that_change"](list(ids_a), list(ids_b))
    except Exception as error:
        raise AssertionError(say("rows_that_change raised {e!r}", "rows_that_change 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, (list, tuple, range)), say(
        "rows_that_change should return a list of positions, not {t}",
        "rows_that_change 应返回一个位置列表，而不是 {t}", t=type(got).__name__)
    return sorted(int(i) for i in got)


@test_case(points=1, hidden=False)
def test_same_prompt(env):
    ids = env["lm"].tokenizer.encode("Hello there, how are you?")
    assert rows(env, ids, ids) == [], say("rows_that_change says rows change between a prompt and itself",
                                          "rows_that_change 认为同一条提示词与它自己相比有行发生变化")


@test_case(points=2, hidden=True)
def test_against_the_model(env):
    lm = env["lm"]
    for text_a, text_b in PAIRS:
        ids_a, ids_b = lm.tokenizer.encode(text_a), lm.tokenizer.encode(text_b)
        a, b = lm.forward(ids_a)[0], lm.forward(ids_b)[0]  # [S, V]: the model on both prompts
        want = [i for i in range(len(ids_a)) if (a[i] - b[i]).abs().max() > 1e-4]
        assert rows(env, ids_a, ids_b) == want, say(
            "rows_that_change is wrong for {a!r} / {b!r}: which tokens can row i see through the causal mask?",
            "rows_that_change 对 {a!r} / {b!r} 不对：在因果掩码之下，第 i 行能看到哪些 token？", a=text_a, b=text_b)
