# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 8 · Beam search
#
# **What you will see.** The third decoding strategy of the lecture, next to greedy decoding and sampling:
# beam search keeps the *k* best partial sequences instead of one. We watch three beams grow token by
# token, check their scores against the model's own log-probabilities, and see beam search find a
# continuation that greedy decoding misses. Then the length penalty decides between finished answers of
# different lengths.
#
# **What you will learn.**
# - The probability of a whole sequence, and why choosing the best token at each step (greedy) does not
#   always give the most probable sequence.
# - How beam search works: candidates, summed log-probabilities, finished hypotheses.
# - What the **length penalty** does: $\text{score} = \sum \log p \,/\, \text{length}^{lp}$, and how its value
#   changes the winner.
# - What beam search is good for, and what it costs.

# %% slide={"code": false}
import math

import torch

import teachllm as tl
from teachllm import viz
from teachllm.viz import beam_tree, beam_tree_figure, labeller

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer
tol = tl.tolerance(lm.dtype)  # how far two computations of the same numbers may differ in this dtype


def token_logprobs(prompt_ids, output_ids):
    """log p of each output token given everything before it, from one uncached forward pass."""
    logp = torch.log_softmax(lm.forward(prompt_ids + output_ids)[0].float(), dim=-1)  # [S, V]
    start = len(prompt_ids) - 1  # the logits at position i predict token i + 1
    return [float(logp[start + i, t]) for i, t in enumerate(output_ids)]


# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["The three on"]}
# ## 8.1 Three ways to decode
#
# The model gives a probability for the next token; the probability of a whole continuation
# $y = y_1 \dots y_n$ of a prompt $x$ is the product of the steps, so its log-probability (natural log, in nats)
# is a sum:
#
# $$\log P(y \mid x) = \log p(y_1 \mid x) + \log p(y_2 \mid x, y_1) + \dots + \log p(y_n \mid x, y_1 \dots y_{n-1})$$
#
# | strategy | each step | result | good for |
# | --- | --- | --- | --- |
# | greedy decoding | take the most probable token | deterministic; best step by step, not always the best sequence | short factual answers, code |
# | sampling | draw a token from the (filtered) distribution | varied; can drift into incoherent text | chat, creative writing (chapter 6) |
# | beam search | keep the *k* sequences with the highest summed log-probability | deterministic; usually more probable sequences, *k* times the work | translation, summarisation |
#
# The three on one prompt, 8 tokens each, with the total log-probability of what they wrote:

# %% slide={"title": {"en": "The three on one prompt", "zh": "同一提示词上的三种策略"}, "code": [[9, 14]]}
prompt = "The capital of France is"
prompt_ids = tok.encode(prompt)
strategies = {
    "greedy": tl.SamplingParams(temperature=0, max_tokens=8),
    "sampling (T=1, seed 0)": tl.SamplingParams(temperature=1.0, seed=0, max_tokens=8),
    "beam search (k=3)": tl.SamplingParams(num_beams=3, max_tokens=8),
}
outputs = {}
for name, params in strategies.items():
    outputs[name] = lm.generate(prompt_ids, params).token_ids
    print(viz.pad(viz.tr(name), 25) + viz.tr("total log p = {lp:8.3f}   {text!r}",
          lp=sum(token_logprobs(prompt_ids, outputs[name])), text=tok.decode(outputs[name])))
gap = sum(token_logprobs(prompt_ids, outputs["beam search (k=3)"])) - sum(token_logprobs(prompt_ids, outputs["greedy"]))
print(viz.tr("beam ÷ greedy probability: e^{gap:.2f} = {ratio:.1f}×", gap=gap, ratio=math.exp(gap)))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Greedy decoding and beam search both start with ` Paris.`, then part ways; beam search's continuation is
# more probable as a whole (−7.2 against −8.5: the ratio printed above), and the sample is far less
# probable than either. Section 8.3 looks at where greedy lost. First, the beams themselves.
#
# ## 8.2 Watching the beams
#
# Each step, every running beam proposes continuations. A candidate scores its beam's summed log-probability
# plus the new token's log-probability; of all *k* × vocabulary candidates the best *k* become the new beams.
# A candidate that ends — with the EOS token, or by reaching `max_tokens` — becomes a **finished
# hypothesis** instead, scored $\sum \log p \,/\, \text{length}^{lp}$ (8.4). `tl.beam_search_steps` yields
# the state after every step.

# %% slide={"title": {"en": "Three beams, step by step", "zh": "三条束，逐步展开"}, "code": [[1, 3]], "output": [[1, 8], [-3, -1]]}
params = tl.SamplingParams(num_beams=3, max_tokens=8)
steps = list(tl.beam_search_steps(lm, prompt_ids, params))
for step in steps:
    print(viz.tr("step {n}", n=step.index + 1))
    for beam in step.running:  # empty at max_tokens: every candidate ends, no beam runs on
        print(viz.tr("   running   {score:8.3f}  {text!r}", score=beam.score, text=tok.decode(beam.token_ids)))
    for hyp in step.finished:
        print(viz.tr("   finished  {score:8.3f}  {text!r}  (sum / length)", score=hyp.score,
                     text=tok.decode(hyp.token_ids)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Read it top down", "zh": "从上往下读"}, "say": ["The running scores"]}
# Read it top down:
# - After step 1 the three beams are ` Paris`, ` the` and ` London`: greedy decoding would have kept only
#   the first.
# - A beam can fall behind and come back: ` Paris. The` is second at step 3 and its continuation
#   ` Paris. The capital of` is first at step 5, ahead of the greedy path ` Paris.\n\nThe`.
# - At step 8 `max_tokens` is reached, every candidate ends, and the finished hypotheses are ranked by
#   $\sum \log p \,/\, 8$.
#
# The running scores are nothing but sums of the model's log-probabilities. Check one beam at every step
# against a fresh, uncached forward pass:

# %% slide={"title": {"en": "Scores are sums of log-probabilities", "zh": "得分就是对数概率之和"}}
for step in steps[:-1]:
    beam = step.running[0]
    by_hand = sum(token_logprobs(prompt_ids, beam.token_ids))
    assert abs(by_hand - beam.score) < tol.logprob, (by_hand, beam.score)
print(viz.tr("every best beam's score = the sum of its tokens' log-probabilities"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The steps as a tree", "zh": "把这些步画成一棵树"}, "say": true}
# The same steps as a tree (`beam_tree_figure`): one column per generated token, one node for every beam
# that was kept at that length, best on top. The red path is the best finished hypothesis, the one
# `generate` returns; grey branches were kept for a while and then dropped. Hover over a node for its score.

# %% slide={"code": false}
tree = beam_tree(steps, labeller(tok))
best = [n for n in tree if n.kept_to_end]
print(viz.tr("{n} nodes; the best path: {path!r}", n=len(tree), path=tok.decode(list(best[-1].ids))))
assert list(best[-1].ids) == lm.generate(prompt_ids, params).token_ids
beam_tree_figure(tree)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8.3 Beam search against greedy, token by token
#
# Where does greedy decoding lose? Compare the log-probability of each token on the two paths:

# %% slide={"code": [[1, 3], [7, 8]]}
greedy_ids, beam_ids = outputs["greedy"], outputs["beam search (k=3)"]
greedy_lp, beam_lp = token_logprobs(prompt_ids, greedy_ids), token_logprobs(prompt_ids, beam_ids)
print(viz.tr("    greedy              log p   beam search         log p"))
for i in range(len(greedy_ids)):
    print(f"{i + 1:>3} {tok.token_text(greedy_ids[i])!r:<18}{greedy_lp[i]:>7.3f}   "
          f"{tok.token_text(beam_ids[i])!r:<18}{beam_lp[i]:>7.3f}")
print(viz.tr("sum  {greedy:>24.3f}   {beam:>25.3f}", greedy=sum(greedy_lp), beam=sum(beam_lp)))
assert sum(beam_lp) > sum(greedy_lp)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Where greedy loses", "zh": "贪婪解码输在哪里"}, "say": ["A chat question,"]}
# Greedy takes `'\n'` at step 3 because it is the best token *there* (−1.01 against −2.44 for ` The`). But
# after a blank line the model has to guess what comes next (`The` −1.94, ` answer` −3.21), while after
# ` The` the sentence almost writes itself (` capital` −0.86, ` of` −0.24). Beam search kept ` The` alive
# long enough to find that out. It is still a search among *k* paths, not over all sequences: a wider beam
# can find better ones (exercise 1), and a narrow one can miss the greedy answer (exercise 2).
#
# ## 8.4 Finished hypotheses and the length penalty
#
# Log-probabilities are negative, so every extra token lowers a sum: comparing plain sums, beam search
# prefers short answers. The length penalty divides by a power of the length (EOS included), as
# transformers does:
#
# $$\text{score} = \frac{\sum_{t=1}^{n} \log p(y_t \mid x, y_1 \dots y_{t-1})}{n^{lp}}, \qquad n = \text{length}$$
#
# - lp = 0: the plain sum; short sequences win.
# - lp = 1 (transformers' default): the average log-probability per token.
# - lp > 1: long sequences are favoured. (lp < 0 would favour short ones even more.)
#
# A chat question, where `<|im_end|>` can end the answer at any step, with three values of lp:

# %% slide={"title": {"en": "Three values of lp on a chat question", "zh": "聊天问题上的三个 lp 值"}, "code": [3, [6, 7], 12, 13], "output": [1, 2, 5, 6, 9, 10]}
chat_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}]))
finished = {}  # each finished hypothesis (as a tuple of ids) → its sum of log-probabilities
for lp in (0.0, 1.0, 2.0):
    last = list(tl.beam_search_steps(lm, chat_ids, tl.SamplingParams(num_beams=3, length_penalty=lp,
                                                                      max_tokens=16)))[-1]
    print(f"length_penalty = {lp}")
    for hyp in last.finished:
        total = sum(token_logprobs(chat_ids, hyp.token_ids))
        length = len(hyp.token_ids)
        assert abs(total / length ** lp - hyp.score) < tol.logprob  # the score is the formula above
        finished[tuple(hyp.token_ids)] = total
        print(viz.tr("   score {score:8.4f} = {total:7.3f} / {length:>2}^{lp:.0f}   {text!r}", score=hyp.score,
                     total=total, length=length, lp=lp, text=tok.decode(hyp.token_ids, skip_special_tokens=True)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The winner changes with lp", "zh": "胜者随 lp 改变"}, "say": true}
# The winner changes: with lp = 0 and 1 it is the eight-token `The capital of France is Paris.`; with lp = 2
# it is a fifteen-token sentence whose sum is about three times as negative. Score every finished hypothesis we
# met under each length penalty, and the order changes: the eight-token answer stays first until the largest lp,
# where most of the longer sentences move ahead of it:

# %% slide={"code": [[1, 5]], "output": [1, 2, 5, [8, 12]]}
lps = (0.0, 0.6, 1.0, 1.5, 2.0)
print(viz.tr("length      sum  {lps}  text", lps="".join(f"{'lp=' + str(lp):>9}" for lp in lps)))
for ids, total in sorted(finished.items(), key=lambda item: len(item[0])):
    scores = "".join(f"{total / len(ids) ** lp:>9.3f}" for lp in lps)
    print(f"{len(ids):>6} {total:>8.3f}  {scores}  {tok.decode(list(ids), skip_special_tokens=True)[:40]!r}")
winners = [tok.decode(list(max(finished, key=lambda ids: finished[ids] / len(ids) ** lp)),
                      skip_special_tokens=True) for lp in lps]
for lp, text in zip(lps, winners, strict=True):
    print(viz.tr("best at lp = {lp}: {text!r}", lp=lp, text=text))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["The lecture's tip"]}
# The lecture's tip for translation — `length_penalty` between 0.6 and 1.0 — sits between "shortest wins"
# and "longest wins": tune it until sentence lengths look right, on your own data.
#
# ## 8.5 In practice
#
# `lm.generate` with `num_beams` > 1 runs this search and returns the best finished hypothesis: the
# beam-search answer of section 8.1 is the top finished hypothesis of 8.2. It is transformers'
# `generate(num_beams=k, do_sample=False, length_penalty=lp)` written out step by step; teachllm's test
# `test_beam_search_equals_transformers` checks that the two return the same tokens.

# %%
assert outputs["beam search (k=3)"] == steps[-1].finished[0].token_ids  # 8.1's generate = 8.2's best hypothesis
print(repr(tok.decode(outputs["beam search (k=3)"])))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Beam search refuses sampling parameters", "zh": "束搜索不接受采样参数"}}
# Beam search is deterministic, so sampling parameters make no sense with it, and teachllm refuses them:

# %%
try:
    tl.SamplingParams(num_beams=3, top_p=0.9)
except tl.params.TemplatedError as error:  # its message, in the reader's language
    print(viz.tr(error.template, **error.fields))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What it costs, when to use it", "zh": "代价与适用场景"}, "say": ["After each exercise,", "Work in the cells"]}
# What it costs and when to use it:
# - *k* beams = a decode batch of *k* rows every step, and *k* copies of the KV cache, reordered every step by
#   the beam each new beam came from.
# - The answer is known only at the end, so beam search cannot stream.
# - Higher probability is not the same as better text: for open-ended writing, the most probable text is
#   often bland or repetitive (exercise 2). Chat models therefore sample; beam search is used where there is
#   one right answer, such as translation or speech recognition.
#
# ## Summary
# - A sequence's log-probability is the sum of its tokens' log-probabilities; greedy maximises each term,
#   beam search keeps the *k* best sums.
# - On "The capital of France is", beam search (k = 3) found a continuation with total log p −7.2 where
#   greedy's had −8.5. Beam search is a heuristic, though: it can also prune the greedy path and end up
#   worse.
# - Finished hypotheses are ranked by $\sum \log p \,/\, \text{length}^{lp}$: lp = 0 favours short answers,
#   larger lp longer ones, and the winner can change.
# - teachllm's beam search is transformers' `num_beams`, checked token for token by the tests.
#
# ## Exercises
# 1. Run beam search with *k* = 1, 2, 3 and 5 on "The capital of France is". Is *k* = 1 the same as greedy
#    decoding? Does the total log-probability grow with *k*? Write `total_logprob(lm, prompt_ids, out_ids)`,
#    the sum of log p of the tokens `out_ids` after `prompt_ids` from one forward pass, and use it to compare.
#    Run the same *k* on "Once upon a time" too and compare *k* = 2 with *k* = 3. Then set `k1_is_greedy` and
#    `total_always_grows_with_k` to True or False. (Call `teachllm.beam.beam_search`
#    for *k* = 1: through `lm.generate`, `num_beams=1` means no beam search, and the default temperature samples.)
# 2. Is beam search always at least as good as greedy decoding? Ask for a one-line poem about the sea, once
#    greedy and once with beam search (*k* = 4, 30 tokens), and compare the average log-probability per
#    token (what lp = 1 ranks by): write `mean_logprob(lm, prompt_ids, out_ids)` for it. Set
#    `beam_always_at_least_greedy` to True if beam search always scores at least as well as greedy by this
#    measure, else False. Which would you rather read?
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"] slideshow={"slide_type": "skip"}
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: beam search with k = 1, 2, 3 and 5; is k = 1 greedy?
def total_logprob(lm, prompt_ids, out_ids):
    # the sum of log p of each token of out_ids after prompt_ids, from one forward pass (a float)
    ...  # your code


k1_is_greedy = None  # True or False
total_always_grows_with_k = None  # True or False: does a larger k always give a higher total log-probability?

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch08-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: a one-line poem, greedy against beam search (k = 4, 30 tokens).
def mean_logprob(lm, prompt_ids, out_ids):
    # the average log p per token of out_ids after prompt_ids (what lp = 1 ranks by), a float
    ...  # your code


beam_always_at_least_greedy = None  # True or False

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch08-ex2")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch08.py` (in JupyterLab: `solutions/ch08.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(8)
