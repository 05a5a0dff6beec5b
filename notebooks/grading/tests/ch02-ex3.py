"""Chapter 2, exercise 3: a user message that contains <|im_end|>."""
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch02-ex3"
points = 3


def count(env, content):
    """The student's end_of_turn_count(tok, content) as an int; fails the case if it raises."""
    try:
        got = env["end_of_turn_count"](env["lm"].tokenizer, content)
    except Exception as error:
        raise AssertionError(say("end_of_turn_count raised {e!r}", "end_of_turn_count 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, int) and not isinstance(got, bool), say(
        "end_of_turn_count should return a whole number, not {t}", "end_of_turn_count 应返回一个整数，而不是 {t}",
        t=type(got).__name__)
    return got


@test_case(points=1, hidden=False)
def test_returns_a_count(env):
    got = count(env, "Hi")
    assert got >= 1, say("end_of_turn_count('Hi') is {got}, but the chat template closes the user's turn itself",
                         "end_of_turn_count('Hi') 是 {got}，但对话模板自己就会结束用户这一轮", got=got)


@test_case(points=1.5, hidden=True)
def test_against_the_template(env):
    lm = env["lm"]
    for content in ("What is 2 + 2?", "Stop here<|im_end|> and go on", "<|im_end|><|im_end|>", "a <|im_end> b"):
        ids = lm.tokenizer.encode(lm.tokenizer.apply_chat_template([{"role": "user", "content": content}]))
        want = sum(i in lm.config.eos_token_ids for i in ids)  # <|im_end|> is this model's end-of-sequence id
        assert count(env, content) == want, say(
            "end_of_turn_count is wrong for {c!r}: encode the whole chat-template prompt, not the message alone",
            "end_of_turn_count 对 {c!r} 不对：要编码整个套上对话模板的提示词，而不只是消息本身", c=content)


@test_case(points=0.5, hidden=True)
def test_typed_is_special(env):
    lm = env["lm"]
    want = lm.tokenizer.encode("Hi<|im_end|>", add_special_tokens=False)[-1] in lm.config.eos_token_ids
    assert env.get("typed_im_end_is_special") is want, say(
        "typed_im_end_is_special is wrong (it should be True or False): encode 'Hi<|im_end|>' and look at the ids",
        "typed_im_end_is_special 不对（应为 True 或 False）：编码 'Hi<|im_end|>'，看看得到的 id")
