"""Chapter 5, exercise 3: the decode step's mask for a left-padded batch."""
import torch
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch05-ex3"
points = 3


def mask_rows(env, prompts):
    """The student's decode_mask(lm, prompts) as lists of bools [batch][T]; fails the case otherwise."""
    try:
        got = env["decode_mask"](env["lm"], prompts)
    except Exception as error:
        raise AssertionError(say("decode_mask raised {e!r}", "decode_mask 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, torch.Tensor), say("decode_mask should return a tensor of booleans, not {t}",
                                              "decode_mask 应返回一个布尔张量，而不是 {t}", t=type(got).__name__)
    want = (len(prompts), max(len(p) for p in prompts) + 1)
    assert tuple(got.shape) == want, say(
        "decode_mask returned shape {s}: one row per prompt, one column per key the decode step's query sees ({w})",
        "decode_mask 返回的形状是 {s}：每条提示词一行，解码步的查询看到的每个键一列（{w}）",
        s=tuple(got.shape), w=want)
    return got.bool().tolist()


@test_case(points=1, hidden=False)
def test_one_row_per_prompt(env):
    tok = env["lm"].tokenizer
    mask_rows(env, [tok.encode("Hello"), tok.encode("Good morning, how are you?")])


@test_case(points=1, hidden=True)
def test_padding_stays_masked(env):
    tok = env["lm"].tokenizer
    for texts in (("One two three four five six", "Hi"), ("A", "The quick brown fox")):
        prompts = [tok.encode(t) for t in texts]
        longest = max(len(p) for p in prompts)
        for row, prompt in zip(mask_rows(env, prompts), prompts, strict=True):
            pad = longest - len(prompt)
            assert row == [False] * pad + [True] * (len(prompt) + 1), say(
                "the row of a prompt of {n} tokens in a batch padded to {m} is wrong: which slots are padding "
                "(teachllm pads on the left), and does the new token see itself?",
                "一条 {n} 个 token 的提示词（批次填充到 {m} 个 token）对应的那一行不对：哪些槽位是填充"
                "（teachllm 在左侧填充）？新 token 能看到它自己吗？", n=len(prompt), m=longest)


@test_case(points=1, hidden=True)
def test_all_true_answer(env):
    assert env.get("decode_mask_all_true") is False, say(
        "decode_mask_all_true is not right: look at the row of the shorter prompt",
        "decode_mask_all_true 不对：看看较短那条提示词对应的行")
