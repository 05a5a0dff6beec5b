"""Chapter 1, exercise 2: the end-of-sequence token in token_ids and in text."""
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch01-ex2"
points = 3


def stopped(env, token_ids):
    """The student's stopped_at_eos(lm, token_ids); fails the case if it raises or does not return a bool."""
    try:
        got = env["stopped_at_eos"](env["lm"], token_ids)
    except Exception as error:
        raise AssertionError(say("stopped_at_eos raised {e!r}", "stopped_at_eos 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, bool), say("stopped_at_eos should return True or False, not {t}",
                                      "stopped_at_eos 应返回 True 或 False，而不是 {t}", t=type(got).__name__)
    return got


def run(lm, content, max_tokens):
    prompt = lm.tokenizer.apply_chat_template([{"role": "user", "content": content}])
    return lm.generate(prompt, tl.SamplingParams(temperature=0, max_tokens=max_tokens))


@test_case(points=1, hidden=False)
def test_returns_a_bool(env):
    stopped(env, run(env["lm"], "Say hello.", 2).token_ids)


@test_case(points=1, hidden=True)
def test_against_finish_reason(env):
    for content, max_tokens in (("Name the capital of France.", 40), ("Name the capital of France.", 3),
                                ("What is 2 + 2?", 30)):
        out = run(env["lm"], content, max_tokens)
        assert stopped(env, out.token_ids) == (out.finish_reason == "stop"), say(
            "stopped_at_eos is wrong for a generation that finished with reason {r!r}: look at its last id",
            "对一次结束原因为 {r!r} 的生成，stopped_at_eos 不对：看看它的最后一个 id", r=out.finish_reason)


@test_case(points=1, hidden=True)
def test_answers(env):
    out = run(env["lm"], "Name the capital of France.", 40)
    eos = env["lm"].config.eos_token_ids
    for name_, want in (("eos_in_token_ids", out.token_ids[-1] in eos),
                        ("eos_in_text", env["lm"].tokenizer.decode(eos[:1]) in out.text)):
        assert env.get(name_) is want, say("{name} is wrong (it should be True or False): print result.token_ids and "
                                           "result.text of a generation that stopped",
                                           "{name} 不对（应为 True 或 False）：打印一次已停止生成的 result.token_ids "
                                           "和 result.text 看看", name=name_)
