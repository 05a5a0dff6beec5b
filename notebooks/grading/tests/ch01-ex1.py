"""Chapter 1, exercise 1: what each forward pass processes, and what grows with the prompt."""
from otter.test_files import test_case

import teachllm as tl
from teachllm.course.grading import say

OK_FORMAT = False
name = "ch01-ex1"
points = 3


def passes(env, ids, max_tokens):
    """The student's tokens_per_pass(lm, ids, max_tokens) as a list of ints; fails the case if it raises."""
    try:
        got = env["tokens_per_pass"](env["lm"], ids, max_tokens)
    except Exception as error:
        raise AssertionError(say("tokens_per_pass raised {e!r}", "tokens_per_pass 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, (list, tuple)) and all(isinstance(n, int) for n in got), say(
        "tokens_per_pass should return a list of whole numbers, not {t}",
        "tokens_per_pass 应返回一个整数列表，而不是 {t}", t=type(got).__name__)
    return list(got)


@test_case(points=1, hidden=False)
def test_returns_a_list(env):
    got = passes(env, env["lm"].tokenizer.encode("Hello, world"), 4)
    assert got and all(n > 0 for n in got), say("tokens_per_pass should give a positive count for every pass",
                                                "tokens_per_pass 应为每次前向传播给出一个正数")


@test_case(points=1.5, hidden=True)
def test_against_the_engine(env):
    lm = env["lm"]
    for text, max_tokens in (("The capital of France is", 5), ("Once upon a time, " * 6, 3), ("Hi", 1)):
        ids = lm.tokenizer.encode(text)
        params = tl.SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True)
        lengths = [step.cache.length for step in tl.generation_steps(lm, [ids], params)]  # the engine's own loop
        want = [b - a for a, b in zip([0, *lengths], lengths, strict=False)]  # tokens added to the cache per pass
        assert passes(env, ids, max_tokens) == want, say(
            "for a prompt of {n} tokens and {m} new tokens, tokens_per_pass is wrong: which tokens does prefill "
            "process, how many does one decode step process, and how many passes are there?",
            "提示词有 {n} 个 token、生成 {m} 个新 token 时，tokens_per_pass 不对：预填充处理哪些 token？一个解码步"
            "处理几个？一共有几次前向传播？", n=len(ids), m=max_tokens)


@test_case(points=0.5, hidden=True)
def test_what_grows(env):
    assert env.get("grows_with_prompt") in ("TTFT", "TPOT"), say(
        'grows_with_prompt should be "TTFT" or "TPOT"', 'grows_with_prompt 应是 "TTFT" 或 "TPOT"')
    lm, prompt = env["lm"], env["lm"].tokenizer.encode("Hi " * 20)
    cache = lm.new_cache(max_len=len(prompt) + 1)
    logits = lm.prefill(prompt, cache)  # TTFT: one pass over the whole prompt
    before = cache.length
    lm.decode_step(int(logits.argmax()), cache)  # TPOT: one pass over one token
    grows = {"TTFT": before == len(prompt), "TPOT": cache.length - before == len(prompt)}
    assert grows[env["grows_with_prompt"]], say(
        "grows_with_prompt is wrong: which phase processes every prompt token?",
        "grows_with_prompt 不对：哪个阶段要处理提示词的每一个 token？")
