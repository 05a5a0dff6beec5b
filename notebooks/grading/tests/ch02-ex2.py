"""Chapter 2, exercise 2: tokens per character in English, Chinese and emoji."""
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch02-ex2"
points = 3
SENTENCES = {"English": "The weather is lovely today.", "Chinese": "今天天气很好。", "emoji": "🌞🌈😊🎉"}


def rate(env, text):
    """The student's tokens_per_char(tok, text) as a float; fails the case if it raises."""
    try:
        got = env["tokens_per_char"](env["lm"].tokenizer, text)
    except Exception as error:
        raise AssertionError(say("tokens_per_char raised {e!r}", "tokens_per_char 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, (int, float)) and not isinstance(got, bool), say(
        "tokens_per_char should return a number, not {t}", "tokens_per_char 应返回一个数，而不是 {t}",
        t=type(got).__name__)
    return float(got)


@test_case(points=1, hidden=False)
def test_returns_a_number(env):
    got = rate(env, "Hello, world")
    assert got > 0, say("tokens_per_char gave {got} for 'Hello, world'; a text of 12 characters has some tokens",
                        "tokens_per_char 对 'Hello, world' 给出 {got}；12 个字符的文本总有几个 token", got=got)


@test_case(points=1.5, hidden=True)
def test_against_the_tokenizer(env):
    tok = env["lm"].tokenizer
    def reference(text):
        return len(tok.encode(text, add_special_tokens=False)) / len(text)

    for text in ("Tokenizers split text into pieces.", "我们明天去北京。", "Ça coûte 3 € — très cher !", "🚀✨🍕",
                 "def f(x):\n    return x"):
        assert abs(rate(env, text) - reference(text)) < 1e-9, say(
            "tokens_per_char is wrong for {text!r}: count the ids tok.encode gives (no special tokens) and divide by "
            "the number of characters, len(text)", "tokens_per_char 对 {text!r} 不对：数出 tok.encode 给出的 id（不加"
            "特殊 token），再除以字符数 len(text)", text=text)


@test_case(points=0.5, hidden=True)
def test_costliest(env):
    tok = env["lm"].tokenizer
    assert env.get("costliest") in SENTENCES, say('costliest should be "English", "Chinese" or "emoji"',
                                                   'costliest 应是 "English"、"Chinese" 或 "emoji"')
    want = max(SENTENCES, key=lambda k: len(tok.encode(SENTENCES[k], add_special_tokens=False)) / len(SENTENCES[k]))
    assert env["costliest"] == want, say("costliest is wrong: compare tokens_per_char of the three sentences",
                                         "costliest 不对：比较三个句子的 tokens_per_char")
