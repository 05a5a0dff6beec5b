"""Chapter 3, exercise 1: a logit lens, the top token after every layer."""
import torch
from otter.test_files import test_case

from teachllm.course.grading import say

OK_FORMAT = False
name = "ch03-ex1"
points = 3
PROMPT = "The capital of France is Paris. The capital of Italy is"  # the chapter's prompt


def lens(env, ids):
    """The student's logit_lens(lm, ids) as a list of ints; fails the case if it raises."""
    try:
        got = env["logit_lens"](env["lm"], ids)
    except Exception as error:
        raise AssertionError(say("logit_lens raised {e!r}", "logit_lens 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, (list, tuple)), say("logit_lens should return a list of token ids, not {t}",
                                               "logit_lens 应返回一个 token id 列表，而不是 {t}", t=type(got).__name__)
    return [int(t) for t in got]


@test_case(points=1, hidden=False)
def test_one_id_per_layer(env):
    lm = env["lm"]
    got = lens(env, lm.tokenizer.encode("The sky is"))
    assert len(got) == lm.config.n_layers, say("logit_lens gave {n} ids; the model has {L} decoder layers",
                                               "logit_lens 给出了 {n} 个 id；模型有 {L} 个解码器层",
                                               n=len(got), L=lm.config.n_layers)


@test_case(points=1.5, hidden=True)
def test_against_reference(env):
    lm = env["lm"]
    for text in ("The capital of Japan is", "One, two, three, four,"):
        ids = lm.tokenizer.encode(text)
        outputs = [s.output for s in lm.step_through(ids) if s.name.startswith("layer")]
        with torch.no_grad():
            want = [int(lm.model.lm_head(lm.model.norm(h[:, -1])).argmax()) for h in outputs]
        got = lens(env, ids)
        wrong = [i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w]
        assert got == want, say(
            "logit_lens is wrong for {text!r} after layer(s) {wrong}: apply the final norm, then the LM head, to the "
            "last position of each layer's output",
            "logit_lens 对 {text!r} 在第 {wrong} 层之后不对：对每一层输出的最后一个位置先做最终归一化，再过 LM head",
            text=text, wrong=wrong[:5] or "-")


@test_case(points=0.5, hidden=True)
def test_rome_layer(env):
    lm = env["lm"]
    got = env.get("rome_layer")
    assert isinstance(got, int) and not isinstance(got, bool), say("rome_layer should be a layer index (an int)",
                                                                   "rome_layer 应是一个层的编号（整数）")
    ids = lm.tokenizer.encode(PROMPT)
    outputs = [s.output for s in lm.step_through(ids) if s.name.startswith("layer")]
    with torch.no_grad():
        tops = [int(lm.model.lm_head(lm.model.norm(h[:, -1])).argmax()) for h in outputs]
    answer = int(lm.forward(ids)[0, -1].argmax())
    want = next(i for i, t in enumerate(tops) if all(u == answer for u in tops[i:]))
    assert got == want, say("rome_layer is wrong: the first layer, counting from 0 as in lm.model.layers[i], from "
                            "which on the top token after each layer is the model's answer",
                            "rome_layer 不对：要找的是第一个这样的层（像 lm.model.layers[i] 那样从 0 数起）：从它开始，"
                            "每层之后排名第一的 token 一直是模型的答案")
