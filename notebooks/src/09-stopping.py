# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 9 · Stopping
#
# **What you will see.** The decode loop runs until a stop rule fires. We go through every rule a serving
# engine such as vLLM offers — the end-of-sequence token, `max_tokens`, stop token ids, stop strings,
# `ignore_eos`, `min_tokens` — and watch each one end (or not end) a real generation, with the
# `finish_reason` and `stop_reason` the engine reports. Then we stream a Chinese answer and see why a
# stream must never show half a character.
#
# **What you will learn.**
# - Which rules stop generation, how each is reported, and which one fired.
# - Why stop strings are matched on *text*, not on tokens, and what that means for streaming.
# - How `min_tokens` works (it masks logits) and what `ignore_eos` is for.
# - Why printing tokens one by one garbles Chinese and emoji, and how an incremental detokenizer fixes it.

# %% slide={"code": false}
import torch

import teachllm as tl
from teachllm import viz

torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer


def chat(question):
    """Token ids of a one-turn conversation, ready for the assistant's answer."""
    return tok.encode(tok.apply_chat_template([{"role": "user", "content": question}]))


def report(out):
    """The fields an engine returns for a finished request."""
    print(f"text          : {out.text!r}")
    print(viz.tr("tokens        : {n}, last one {id} = {piece!r}", n=len(out.token_ids), id=out.token_ids[-1],
                 piece=tok.pieces(out.token_ids[-1:])[0]))
    print(f"finish_reason : {out.finish_reason!r}   stop_reason: {out.stop_reason!r}")


# %% [markdown] slideshow={"slide_type": "slide"} slide={"title": {"en": "The fields of SamplingParams", "zh": "SamplingParams 的字段", "at": "and §5.2 lists"}, "say": ["and §5.2 lists", "The EOS token"]}
# ## 9.1 The stop rules
#
# *LLM Generation Process* (《LLM 生成过程》, §5.1), one of the course notes, sketches the check that runs
# after every generated token:
#
# ```python
# def check_stop_condition(token_id, generated_tokens, params):
#     if token_id == params.eos_token_id:              # 1. end-of-sequence token
#         return True, "EOS"
#     if len(generated_tokens) >= params.max_tokens:   # 2. length limit
#         return True, "MAX_LENGTH"
#     text = tokenizer.decode(generated_tokens)        # 3. stop strings, searched in the text
#     for stop_str in params.stop_strings:
#         if stop_str in text:
#             return True, "STOP_STRING"
#     return False, None
# ```
#
# and §5.2 lists the fields of vLLM's `SamplingParams` that control it. teachllm's `SamplingParams` has the
# same fields, plus `min_tokens`:
#
# | field | default | meaning | reported as |
# | --- | --- | --- | --- |
# | `max_tokens` | 16 | at most this many generated tokens | `finish_reason="length"` |
# | `stop` | `[]` | stop when the output **text** contains one of these strings | `"stop"`, `stop_reason` = the string |
# | `stop_token_ids` | `[]` | stop when one of these ids is generated | `"stop"`, `stop_reason` = the id |
# | `include_stop_str_in_output` | `False` | keep the stop string at the end of the text | |
# | `ignore_eos` | `False` | do not stop at the EOS token | |
# | `min_tokens` | 0 | no stopping (EOS, stop ids, stop strings) before this many tokens | |
#
# The EOS token itself ends generation with `finish_reason="stop"` and `stop_reason=None`.

# %% slide={"title": {"en": "The defaults", "zh": "默认值"}}
defaults = tl.SamplingParams()
for name in ("max_tokens", "stop", "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens"):
    print(f"{name:<28} {getattr(defaults, name)!r}")
print(viz.tr("this model's EOS ids: {ids} {pieces}", ids=lm.config.eos_token_ids,
             pieces=tok.pieces(list(lm.config.eos_token_ids))))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9.2 End of sequence
#
# An instruct model ends its answer by generating the token that closes its turn: `<|im_end|>`, id 2.
# It is kept in `token_ids` (it says *why* generation stopped) and left out of `text`.

# %%
question = chat("What is the capital of France?")
greedy = tl.SamplingParams(temperature=0, max_tokens=32)
answer = lm.generate(question, greedy)
report(answer)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9.3 `max_tokens`: finish reason "length"
#
# The same question with room for only five tokens. The answer is cut off mid-sentence; a client should
# check `finish_reason` before trusting an answer to be complete.

# %%
report(lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=5)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9.4 `stop_token_ids`
#
# A stop id ends generation like EOS does, but `stop_reason` names it. Real uses: a model whose chat turns end
# with a different token than the EOS in its configuration (Llama 3 Instruct ends a turn with `<|eot_id|>`,
# while its first `config.json` named `<|end_of_text|>` as EOS), or stopping at a token of your choice.
# Here we stop at the first full stop, `'.'` (id 30), to keep only the first sentence of a longer answer:

# %% slide={"code": [[1, 4]], "output": [[1, 3]]}
period = tok.encode(".")[0]
paris = chat("Tell me about Paris in two sentences.")
out = lm.generate(paris, tl.SamplingParams(temperature=0, max_tokens=32, stop_token_ids=[period]))
report(out)
kept = lm.generate(paris, tl.SamplingParams(temperature=0, max_tokens=32, stop_token_ids=[period],
                                            include_stop_str_in_output=True))
print(viz.tr("with include_stop_str_in_output: {text!r}", text=kept.text))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["The id that stopped"]}
# The id that stopped generation stays in `token_ids` (it says *why* generation ended), but its text is
# left out of `text`, as vLLM does, unless `include_stop_str_in_output=True`.
#
# ## 9.5 Stop strings, across token boundaries
#
# A stop string is looked for in the decoded **text**, not in the token ids, because the same string can be
# cut into tokens in many ways. To make the point we choose a stop string that starts inside one token and
# runs on to the end of the next: the last four characters of ` France`, then all of ` is`.

# %%
texts = [tok.token_text(i) for i in answer.token_ids]
print(viz.tr("tokens: {tokens}", tokens="|".join(texts)))
i = texts.index(" France")
stop = texts[i][-4:] + texts[i + 1]  # 'ance' + ' is'
print(viz.tr("stop string: {stop!r}, made of the end of {a!r} and all of {b!r}", stop=stop, a=texts[i],
             b=texts[i + 1]))

# %% slide={"title": {"en": "Cut where the stop string begins", "zh": "在停止字符串开始处截断"}, "code": [[1, 5]], "output": [1, 2, [5, 6]]}
for include in (False, True):
    params = tl.SamplingParams(temperature=0, max_tokens=32, stop=[stop], include_stop_str_in_output=include)
    out = lm.generate(question, params)
    print(f"include_stop_str_in_output={include}")
    report(out)
assert out.token_ids == answer.token_ids[: i + 2]  # it ran until the token that completed the stop string

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Streaming holds text back", "zh": "流式输出会先扣住文本", "at": "When streaming, this"}}
# Generation ran until ` is`, the token that completed the string; the text is then cut where the stop
# string *begins* — in the middle of ` France` — or after it with `include_stop_str_in_output=True`.
#
# When streaming, this creates a problem: after ` France` arrives, `ance` might be the start of the stop
# string, so the engine cannot show it yet. It holds back the last `len(stop) - 1` characters until it knows.
# The pieces `lm.stream` yields therefore do not line up with tokens (we ask for the reference loop, `fast=False`:
# on a GPU the fast path reads the ids back only every few tokens, so its pieces come in batches):

# %%
print(list(lm.stream(question, tl.SamplingParams(temperature=0, max_tokens=32, stop=[stop]), fast=False)))
print(list(lm.stream(question, tl.SamplingParams(temperature=0, max_tokens=32), fast=False)))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The `check_stop_condition` of *LLM Generation Process* finds the string but only returns
# `True, "STOP_STRING"`: it does not cut the text. And it decodes the whole output again after every token. An engine cuts the text, keeps the tokens, and only
# searches near the end.
#
# ## 9.6 `ignore_eos`
#
# With `ignore_eos=True` the EOS token no longer stops generation; only `max_tokens` (or a stop string or
# id) does. The model has finished its answer, so it goes on writing the next turns of the conversation:

# %%
out = lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True))
report(out)
print(viz.tr("pieces: {pieces}", pieces=tok.pieces(out.token_ids)))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The text shows `system` and `user` because the special tokens around them are skipped. No one wants
# this as an answer: `ignore_eos` is for **benchmarks**, where every request must produce exactly
# `max_tokens` tokens so that runs can be compared (chapters 10 and 11).
#
# ## 9.7 `min_tokens`
#
# `min_tokens` works on the logits, not on the output: until that many tokens exist, EOS and the stop ids
# get logit −∞, so the sampler cannot pick them (and stop strings are not checked). `tl.generation_steps`
# shows both the model's raw logits and the processed ones: here is what the model wanted, and what it got.

# %% slide={"title": {"en": "Step by step: EOS masked for 10 tokens", "zh": "逐步看：前 10 个 token 屏蔽 EOS"}, "code": [[4, 8]], "output": [1, [7, 12], -1]}
params = tl.SamplingParams(temperature=0, max_tokens=20, min_tokens=10)
eos = lm.config.eos_token_ids[0]
print(viz.tr("step  token         p(EOS)  EOS masked?"))
for step in tl.generation_steps(lm, [question], params):
    p_eos = float(torch.softmax(step.logits[0].float(), -1)[eos])  # what the model gave EOS
    masked = bool(torch.isinf(step.processed[0, eos]))  # what the sampler saw
    shown = viz.tr("yes" if masked else "no")
    print(f"{step.index + 1:>4}  {tok.token_text(step.tokens[0])!r:<12}{p_eos:>8.3f}  {shown}")
seq = step.sequences[0]
print(viz.tr("{text!r} | finish reason: {reason}", text=seq.text, reason=seq.finish_reason))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the mask did", "zh": "屏蔽带来了什么"}}
# At step 8 the model gives EOS probability 0.77 — it wants to stop after `Paris.` — but EOS is masked, so
# it takes the next best token, ` It`, and starts a new sentence. Once that sentence is under way EOS is
# unlikely again, and the answer runs to `max_tokens`. transformers calls the same rule `min_new_tokens`;
# teachllm's tests check the two agree.
#
# ## 9.8 Streaming without broken characters
#
# A streamed answer is shown piece by piece as tokens arrive. With byte-level BPE (chapter 2), a Chinese
# character can be split across tokens, and one token alone can be an incomplete character. Print each
# token's `token_text` as it arrives and the reader sees `'�'`:

# %%
chinese = chat("请用中文介绍一下你自己。")  # "Please introduce yourself in Chinese."
params = tl.SamplingParams(temperature=0, max_tokens=20)
out = lm.generate(chinese, params)
naive = [tok.token_text(t) for t in out.token_ids]
print(viz.tr("token by token : {pieces}", pieces=naive))
print(viz.tr("joined         : {text}", text="".join(naive)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "lm.stream holds back half characters", "zh": "lm.stream 扣住半个字符"}}
# After each token, `lm.stream` decodes only the last few tokens (a window that starts at the last complete
# character, as vLLM does, so the work per token stays small however long the output grows) and releases
# text only up to the last complete character; a `'�'` at the end means "bytes still missing", so that
# part waits for the next token:

# %%
pieces = list(lm.stream(chinese, params, fast=False))  # the reference loop: at most one piece per token, on any device
print(viz.tr("stream pieces  : {pieces}", pieces=pieces))
assert "".join(pieces) == out.text
assert not any("\ufffd" in piece for piece in pieces)  # never half a character
print(viz.tr("full text      : {text}", text=out.text))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["After each exercise,", "Work in the cells"]}
# The stream is right; the answer is not. Asked in Chinese to introduce itself, the model writes `你自己是一个独立的客户，可以`: it takes 你自己 ("yourself") from the question and goes on "is an independent customer, can". These are real words, and no answer: the bundled model writes Chinese characters, not Chinese sense. The last section of the lecturer's guide says where its Chinese still teaches something (tokens, sampling, the repetition penalty, streaming) and how to run the chapters on a model that speaks Chinese.
#
# The same holds back-and-release logic serves both problems of this chapter: an unfinished character and a
# stop string that might be starting are both held until later tokens settle them.
#
# ## Summary
# - `finish_reason` is `"stop"` (EOS, a stop id, a stop string) or `"length"` (`max_tokens`); `stop_reason`
#   names the stop id or string, and is `None` for EOS and for length.
# - Stop strings are matched on the decoded text, so they work across token boundaries; the text is cut
#   where the string begins, or after it with `include_stop_str_in_output`.
# - `min_tokens` masks EOS and stop ids with −∞ until enough tokens exist; `ignore_eos` removes the EOS rule
#   and is meant for benchmarks.
# - A stream must hold back incomplete characters and possible starts of stop strings.
# - A stop id stays in `token_ids`; its text is left out of `text` unless `include_stop_str_in_output`.
#
# ## Exercises
# 1. With `ignore_eos=True`, can you still stop at the end of the answer? Try `stop=["<|im_end|>"]` and then
#    `stop_token_ids=[2]`. Set `stops_despite_ignore_eos` to a `tl.SamplingParams` with `ignore_eos=True` that
#    still ends at the end of the answer (the grader tries it on another question). Why does only one of them
#    work? Set `why_stop_string_fails` to the letter of the reason:
#    (a) the output text skips special tokens, so `"<|im_end|>"` never appears in it;
#    (b) `ignore_eos=True` turns off every stop rule, stop strings included;
#    (c) stop strings are checked only once `max_tokens` is reached.
# 2. Set `min_tokens` equal to `max_tokens` (10) for the France question. Predict the finish reason and
#    whether id 2 appears in the output (`my_finish_reason`, `my_id2_appears`), then check.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"]
# Exercise 1: ignore_eos=True with stop=["<|im_end|>"], then with stop_token_ids=[2].
stops_despite_ignore_eos = None  # a tl.SamplingParams with ignore_eos=True that still stops at the answer's end
why_stop_string_fails = None  # "a", "b" or "c"

# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch09-ex1")

# %% tags=["exercise"]
# Exercise 2: your prediction for min_tokens = max_tokens = 10.
my_finish_reason = None  # "stop" or "length"
my_id2_appears = None  # True or False

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch09-ex2")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch09.py` (in JupyterLab: `solutions/ch09.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(9)
