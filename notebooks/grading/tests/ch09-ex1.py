"""Chapter 9, exercise 1: stopping at the end of the answer with ignore_eos=True."""
import dataclasses

from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch09-ex1"
points = 3


def student_params(env):
    """The student's stops_despite_ignore_eos; fails the case unless it is SamplingParams with ignore_eos=True."""
    params = env.get("stops_despite_ignore_eos")
    assert isinstance(params, tl.SamplingParams), say(
        "stops_despite_ignore_eos should be a tl.SamplingParams, not {t}",
        "stops_despite_ignore_eos 应是一个 tl.SamplingParams，而不是 {t}", t=type(params).__name__)
    assert params.ignore_eos is True, say("stops_despite_ignore_eos must keep ignore_eos=True",
                                          "stops_despite_ignore_eos 必须保留 ignore_eos=True")
    return params


@test_case(points=1, hidden=False)
def test_is_sampling_params_with_ignore_eos(env):
    student_params(env)


@test_case(points=1, hidden=True)
def test_stops_at_the_end_of_another_answer(env):
    lm = env["lm"]
    tok = lm.tokenizer
    question = tok.encode(tok.apply_chat_template([{"role": "user", "content": "What is 2 + 2?"}]))
    # greedy, one beam: the grader runs this itself, so the student's settings must not size its work
    params = dataclasses.replace(student_params(env), temperature=0.0, max_tokens=24, min_tokens=0, num_beams=1,
                                 logprobs=None)
    try:
        got = lm.generate(question, params)
    except Exception as error:
        raise AssertionError(say("generating with stops_despite_ignore_eos raised {e!r}",
                                 "用 stops_despite_ignore_eos 生成时抛出了异常 {e!r}", e=error)) from None
    plain = lm.generate(question, tl.SamplingParams(temperature=0.0, max_tokens=24))
    assert got.finish_reason == "stop" and got.token_ids[:len(plain.token_ids)] == plain.token_ids, say(
        "with stops_despite_ignore_eos the answer to another question ran {n} tokens and ended with finish reason "
        "{r!r}, not where the answer ends", "用 stops_despite_ignore_eos 回答另一个问题时生成了 {n} 个 token，"
        "结束原因是 {r!r}，没有停在答案的结尾", n=len(got.token_ids), r=got.finish_reason)
    assert len(got.token_ids) == len(plain.token_ids), say(
        "with stops_despite_ignore_eos the answer to another question went on past its end",
        "用 stops_despite_ignore_eos 回答另一个问题时，生成越过了答案的结尾")


@test_case(points=1, hidden=True)
def test_reason(env):
    assert env.get("why_stop_string_fails") == "a", say(
        "why_stop_string_fails is not right: print the output text of the stop-string run and look for <|im_end|>",
        "why_stop_string_fails 不对：打印使用停止字符串那次运行的输出文本，找一找 <|im_end|>")
