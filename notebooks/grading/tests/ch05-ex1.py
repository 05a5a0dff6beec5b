"""Chapter 5, exercise 1: one forward pass gives every step's logits when the tokens are known."""
import torch
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch05-ex1"
points = 3


def known_logits(env, prompt, known):
    """The student's logits_for_known_tokens(...) as a tensor [len(known), V]; fails the case otherwise."""
    lm = env["lm"]
    try:
        got = env["logits_for_known_tokens"](lm, prompt, known)
    except Exception as error:
        raise AssertionError(say("logits_for_known_tokens raised {e!r}", "logits_for_known_tokens 抛出了异常 {e!r}",
                                 e=error)) from None
    assert isinstance(got, torch.Tensor), say("logits_for_known_tokens should return a tensor, not {t}",
                                              "logits_for_known_tokens 应返回一个张量，而不是 {t}",
                                              t=type(got).__name__)
    want = (len(known), lm.config.vocab_size)
    assert tuple(got.shape) == want, say("logits_for_known_tokens returned shape {s}: expected one row of V logits "
                                         "per known token, {w}", "logits_for_known_tokens 返回的形状是 {s}：应当是"
                                         "每个已知 token 一行 V 个 logits，即 {w}", s=tuple(got.shape), w=want)
    return got


@test_case(points=1, hidden=False)
def test_one_row_per_known_token(env):
    tok = env["lm"].tokenizer
    known_logits(env, tok.encode("One, two,"), tok.encode(" three, four", add_special_tokens=False))


@test_case(points=1, hidden=True)
def test_rows_match_the_decode_loop(env):
    lm = env["lm"]
    prompt = lm.tokenizer.encode("The capital of Spain is")
    known = lm.tokenizer.encode(" Madrid, and the capital of Peru is Lima.", add_special_tokens=False)
    got = known_logits(env, prompt, known)
    cache = lm.new_cache(max_len=len(prompt) + len(known))
    stepwise = [lm.prefill(prompt, cache)[0]] + [lm.decode_step(t, cache)[0] for t in known[:-1]]  # [V] each
    close = torch.allclose(got.detach().float(), torch.stack(stepwise), atol=1e-3, rtol=1e-3)
    assert close, say("row i is not the logits the decode loop computes before known_ids[i]: check which positions "
                      "of the forward pass you keep (the last prompt position predicts the first known token)",
                      "第 i 行不是解码循环在 known_ids[i] 之前算出的 logits：检查你保留了前向传播的哪些位置"
                      "（提示词的最后一个位置预测第一个已知 token）")


@test_case(points=1, hidden=True)
def test_one_pass_in_generation(env):
    assert env.get("one_pass_in_generation") is False, say(
        "one_pass_in_generation is not right: what does the forward pass take as input, and when does generation "
        "know it?", "one_pass_in_generation 不对：这次前向传播的输入是什么？生成时什么时候才知道它？")
