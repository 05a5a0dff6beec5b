"""Chapter 9, exercise 2: predicting the finish reason when min_tokens = max_tokens."""
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch09-ex2"
points = 3


@test_case(points=1, hidden=False)
def test_predictions_are_set(env):
    assert env.get("my_finish_reason") in ("stop", "length"), say(
        'my_finish_reason should be "stop" or "length", not {v!r}', 'my_finish_reason 应为 "stop" 或 "length"，'
        "而不是 {v!r}", v=env.get("my_finish_reason"))
    assert isinstance(env.get("my_id2_appears"), bool), say(
        "my_id2_appears should be True or False, not {v!r}", "my_id2_appears 应为 True 或 False，而不是 {v!r}",
        v=env.get("my_id2_appears"))


RUNS = {}  # the run, made once per grading


def run(env):
    """The greedy run with min_tokens = max_tokens = 10 on the France question."""
    if "run" in RUNS:
        return RUNS["run"]
    lm = env["lm"]
    question = lm.tokenizer.encode(lm.tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}]))
    RUNS["run"] = lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=10, min_tokens=10))
    return RUNS["run"]


@test_case(points=1, hidden=True)
def test_finish_reason(env):
    reason = env.get("my_finish_reason")
    assert reason in ("stop", "length") and reason == run(env).finish_reason, say(
        "my_finish_reason does not match the run: which stop rules can act before min_tokens is reached?",
        "my_finish_reason 与实际运行不符：在达到 min_tokens 之前，哪些停止规则可以起作用？")


@test_case(points=1, hidden=True)
def test_id2(env):
    guess = env.get("my_id2_appears")
    assert isinstance(guess, bool) and guess == (2 in run(env).token_ids), say(
        "my_id2_appears does not match the run: what does min_tokens do to the EOS logit?",
        "my_id2_appears 与实际运行不符：min_tokens 对 EOS 的 logit 做了什么？")
