# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 7 · Penalties
#
# **What you will see.** Greedy decoding on a small model falls into a loop — the same two words over and
# over. We break the loop with each penalty in turn: the repetition penalty, the presence and frequency
# penalties, and the no-repeat n-gram ban. Each one is computed by hand on the model's live logits and
# checked against teachllm's implementation.
#
# **What you will learn.**
# - Why a model repeats itself, and why temperature, top-k and top-p alone do not stop it.
# - The formula of each penalty, which tokens it counts (prompt and output, or output only), and where
#   HuggingFace transformers and vLLM differ.
# - **Soft** penalties (they lower a score) against **hard** constraints (they forbid a token).
# - The lecture's tuning tips: which penalty to reach for, with which value, in which order.

# %% slide={"code": false}
from collections import Counter

import torch

import teachllm as tl
from teachllm import viz
from teachllm.sampling import apply_no_repeat_ngram, apply_presence_frequency_penalty, apply_repetition_penalty
from teachllm.viz import labeller, penalty_stages, penalty_stages_figure

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer


def repeated_trigrams(ids):
    """How many of the token 3-grams in `ids` already occurred earlier in `ids`: 0 means no repetition."""
    grams = [tuple(ids[i:i + 3]) for i in range(len(ids) - 2)]
    return sum(1 for i, g in enumerate(grams) if g in grams[:i])


def show_top(logits, k=5):
    """The k highest logits as 'token:logit'."""
    top = torch.topk(logits, k)
    return "  ".join(f"{tok.token_text(int(i))!r}:{float(v):.2f}" for v, i in zip(top.values, top.indices, strict=True))


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7.1 A model that repeats itself
#
# A plain-text prompt (no chat template: the model simply continues the text) that asks for a list.
# Greedy decoding, 24 tokens:

# %% slide={"code": [[1, 3], [9, 11]]}
prompt = "List of animals: dog, cat,"
prompt_ids = tok.encode(prompt)
greedy = tl.SamplingParams(temperature=0, max_tokens=24)

chosen_p = []  # probability of each chosen token
for step in tl.generation_steps(lm, [prompt_ids], greedy):
    token = step.tokens[0]
    chosen_p.append((token, float(torch.softmax(step.logits[0].float(), -1)[token])))
loop_ids = [token for token, _ in chosen_p]
print(repr(tok.decode(loop_ids)))
print(viz.tr("repeated 3-grams in the output: {n}", n=repeated_trigrams(loop_ids)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The loop feeds itself", "zh": "循环自我强化"}}
# The model is stuck: `dog, cat,` forever. Worse, from the second use on, each repetition makes the next one
# more likely. Here is the probability the model gave ` dog` and ` cat` each time it chose them:

# %%
for word in (" dog", " cat"):
    ps = [p for token, p in chosen_p if tok.token_text(token) == word]
    print(viz.tr("p({word}) each time it was chosen: {ps}", word=repr(word), ps=" ".join(f"{p:.2f}" for p in ps)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Four penalties", "zh": "四种惩罚", "at": "A **penalty** changes"}, "say": ["A **penalty** changes", "To compute them"]}
# ` dog` went from 0.14 at its second use to 0.66 at its sixth: the text in the context window is the strongest
# evidence the model has, and a pattern that has occurred several times looks like a pattern that will go on. Greedy decoding always
# takes the top token, so once the loop leads, it never lets go. Sampling with a temperature only makes the
# escape random, and top-k / top-p keep the loop's tokens, since they are the most likely.
#
# A **penalty** changes the logits of tokens that already occurred, before any sampling rule sees them:
#
# | penalty | formula on the logit of token $j$ | counts tokens in | kind | defined by |
# | --- | --- | --- | --- | --- |
# | repetition penalty $r$ | $\ell / r$ if $\ell > 0$, else $\ell \cdot r$ (every token seen, once) | prompt + output | soft, scales the logit | CTRL paper; HF `repetition_penalty`, vLLM |
# | presence penalty | $\ell - \text{presence}$ if $j$ occurred | output only | soft, a constant | OpenAI API, vLLM |
# | frequency penalty | $\ell - \text{frequency} \cdot c_j$ ($c_j$ = times $j$ occurred) | output only | soft, grows with each use | OpenAI API, vLLM |
# | no-repeat n-gram $n$ | $-\infty$ for a token that would repeat an earlier n-gram | prompt + output | **hard**: forbidden | HF `no_repeat_ngram_size` |
# | length penalty | $\text{score} = \sum \log p \,/\, \text{length}^{lp}$ | a whole finished sequence | ranks beams | HF beam search (chapter 8) |
#
# To compute them by hand we take the logits at one step inside the loop: after 12 generated tokens,
# where greedy chose ` dog` (for the fourth time).

# %% slide={"title": {"en": "One step inside the loop", "zh": "循环里的一步"}}
k = 12
history = prompt_ids + loop_ids[:k]  # the context at that step: prompt + 12 output tokens
logits = lm.forward(history)[0, -1]  # [V]: next-token logits, no cache
print(repr(tok.decode(loop_ids[:k])), "->", repr(tok.token_text(loop_ids[k])))
print(viz.tr("top 5 logits: {top}", top=show_top(logits)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7.2 Repetition penalty (prompt + output)
#
# For every distinct token already in the sequence — the prompt included — the logit is divided by *r*
# when positive and multiplied by *r* when negative, so both move down. The lecture starts question
# answering and code at *r* = 1.05; here we use 1.2 to see it clearly.

# %% slide={"title": {"en": "Repetition penalty by hand, r = 1.2", "zh": "手算重复惩罚，r = 1.2"}, "code": [1, 2, [5, 7], 9]}
r = 1.2
seen = sorted(set(history))  # each seen token is penalised once, however often it occurred
by_hand = logits.clone()
print(viz.tr("token          logit   after    loss"))
for j in seen:
    before = float(logits[j])
    by_hand[j] = logits[j] / r if logits[j] > 0 else logits[j] * r
    print(f"{tok.token_text(j)!r:<12}{before:>8.2f}{float(by_hand[j]):>8.2f}{before - float(by_hand[j]):>8.2f}")
assert torch.equal(by_hand, apply_repetition_penalty(logits, history, r))  # teachllm agrees
print(viz.tr("top 5 after: {top}", top=show_top(by_hand)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Whole generations with the penalty", "zh": "整段生成加上重复惩罚", "at": "With the penalty"}, "say": ["` dog` and `"]}
# ` dog` and ` cat` lose 3.46 and 3.40 and come down to just above ` fox`, ` sheep` and ` deer`, which were
# never seen. ` dog` still leads by a hair — ` dog, cat,` has occurred four times by now — but its probability falls
# sharply (section 7.5 measures it). Because the penalty *divides*, a large logit loses more than a small
# one: the comma loses 1.6, ` dog` 3.46. The tokens of the prompt (`List`, ` animals`, `:`) are penalised too.
#
# With the penalty on from the first token, the loop never gets going. Whole generations, at the lecture's
# starting value and at 1.2:

# %%
results = {viz.tr("no penalty"): loop_ids}
for r in (1.05, 1.2):
    out = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=24, repetition_penalty=r))
    results[f"repetition_penalty={r}"] = out.token_ids
    print(f"r = {r}: {out.text!r}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "In Chinese: 写一句关于春天的话。", "zh": "中文请求：写一句关于春天的话。", "at": "**In Chinese.** The"}}
# Even 1.05 breaks the ` dog, cat,` loop: the very first token is no longer ` dog`, because ` dog` is in the
# prompt. At 1.2 the comma itself — seen in the prompt, needed between every two animals — is
# penalised hard enough that the model leaves the list format. The penalty cannot tell wanted
# repetition from unwanted.
#
# **In Chinese.** The same penalty, on a request in Chinese: one sentence about spring (写一句关于春天的话。),
# through the chat template. Greedy and without a penalty, the answer repeats the prompt's own word 春天 in a
# loop; with the penalty, even at 1.05, the lecture's starting value for question answering and code (for
# creative text it advises a lower one), the answer leaves Chinese altogether:

# %%
spring_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": "写一句关于春天的话。"}]))
for r in (1.0, 1.05, 1.3):
    out = lm.generate(spring_ids, tl.SamplingParams(temperature=0, max_tokens=24, repetition_penalty=r))
    print(f"r = {r}: {out.text!r}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Why: bytes, and the prompt counts", "zh": "原因：字节，以及提示词也被计入"}, "say": true}
# The penalty broke the loop, but not the way it should. Three facts explain it: two about the tokenizer and the
# penalty, one about the model. First, the tokenizer is
# byte-level: a Chinese character is three bytes in UTF-8, and most characters of the question take two
# tokens, a first piece and a one-byte tail. The next cell prints each character with its bytes and its
# token ids. The pieces are shared: a tail, as a rule, by the characters that end in the same byte (句 and 春 end in
# the same one), and a first piece by those that start with the same two bytes (春 starts like 明, 星 and 昨).
# Second, the repetition penalty counts the prompt. So
# every piece of the question's characters is penalised, and through the shared pieces, characters the
# question never used. The cell after it looks at the answer's first token, without the penalty and with it
# (a piece that is not a whole character prints as `'�'`):

# %%
for ch in "写一句关于春天的话。":  # each character, its UTF-8 bytes, its token ids
    print(f"{ch}  {ch.encode().hex(' ')}  {tok.encode(ch)}")
assert tok.encode("句")[-1] == tok.encode("春")[-1]  # one tail token, two characters
assert tok.encode("春")[0] == tok.encode("明")[0] == tok.encode("星")[0]  # one first piece, several characters

# %% slide={"title": {"en": "The answer's first token", "zh": "回答的第一个 token"}, "code": [1, [4, 8]]}
first = lm.forward(spring_ids)[0, -1]  # [V]: the logits of the answer's first token
chinese = torch.tensor([any("\u4e00" <= c <= "\u9fff" or c == "\ufffd" for c in tok.token_text(i))
                        for i in range(first.shape[0])], device=first.device)  # [V]: a character or a piece of one
for r in (1.0, 1.05):
    probs = apply_repetition_penalty(first, spring_ids, r).softmax(dim=-1)  # [V]
    top = int(probs.argmax())
    print(viz.tr("r = {r}: first choice {token!r} (id {id}, p = {p:.3f}); every Chinese piece together: {share:.3f}",
                 r=r, token=tok.token_text(top), id=top, p=float(probs[top]), share=float(probs[chinese].sum())))
    if r == 1.0:
        assert top == tok.encode("春")[0] and top in spring_ids  # the first piece of 春, which the prompt holds
        assert float(first[top]) > 0  # a positive logit, which the penalty divides by r

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the penalty cannot tell apart", "zh": "惩罚分不清什么"}}
# Without the penalty, the model's first choice is the first piece of 春, the word the question is about (the cell
# asserts that it is the token the prompt's 春 starts with, and that its logit is positive). That piece also starts
# 明 and 星, so its p belongs to the shared piece, not to 春 alone. The penalty divides its logit and
# lowers every token of the prompt the same way, and an English opening, `The`, takes its place; the probability of
# all Chinese pieces together drops as well. Third, this small model barely learned Chinese (chapter 2). Even
# without the penalty its first choice is far from certain, and the Chinese pieces together hold only a small part
# of the probability (the cell above prints both), so a light penalty is enough for an English opening to take over.
# A model trained on Chinese may answer otherwise; this chapter does not test that.
# Where an answer reuses the question's words, and characters share
# their pieces, the repetition penalty cannot tell an answer from an echo. The presence and frequency penalties
# below count the output only, so they leave the question's characters alone.
#
# ## 7.3 Presence and frequency penalties (output only)
#
# These come from the OpenAI API; vLLM implements them. Let $c_j$ be how often token $j$ occurs in the
# **output** so far. Then the logit $\ell_j$ becomes
#
# $$\ell_j - c_j \cdot \text{frequency} - \mathbb{1}[c_j > 0] \cdot \text{presence}$$
#
# where $\mathbb{1}[c_j > 0]$ is 1 if $j$ occurred and 0 if not. A plain subtraction, in logit units; the
# prompt is not counted.

# %% slide={"title": {"en": "Presence and frequency by hand", "zh": "手算存在惩罚与频率惩罚"}, "code": [[1, 3], [6, 7], 10]}
presence, frequency = 0.5, 0.5
output_so_far = loop_ids[:k]
counts = Counter(output_so_far)
by_hand = logits.clone()
print(viz.tr("token     c   logit   after"))
for j, c in sorted(counts.items()):
    by_hand[j] = logits[j] - c * frequency - presence  # c > 0 for every token in counts
    print(f"{tok.token_text(j)!r:<8}{c:>3}{float(logits[j]):>8.2f}{float(by_hand[j]):>8.2f}")
torch.testing.assert_close(by_hand, apply_presence_frequency_penalty(logits, output_so_far, presence, frequency))
print(viz.tr("top 5 after: {top}", top=show_top(by_hand)))
print(viz.tr("loss: {losses}",
             losses="  ".join(f"{tok.token_text(j)!r} {float(logits[j] - by_hand[j]):.2f}" for j in sorted(counts))))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Whole generations: presence against frequency", "zh": "整段生成：存在惩罚与频率惩罚", "at": "The two penalties"}, "say": ["At 0.5 each,"]}
# At 0.5 each, ` dog` loses 2.0 (0.5 for being present, 3 × 0.5 for three uses) and is still the top token,
# at 18.77 against the unseen ` fox`'s 16.81. A subtraction moves a token by the same amount whatever the size of
# the logits: only its lead over the others counts. The comma, used six times, loses 3.5.
#
# The two penalties differ in how they grow: presence costs the same after one use or after ten, frequency
# grows with every use. Full generations at 0.5 and at 1.5:

# %%
for name in ("presence_penalty", "frequency_penalty"):
    for value in (0.5, 1.5):
        out = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=24, **{name: value}))
        results[f"{name}={value}"] = out.token_ids
        print(f"{name} = {value}: {out.text!r}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Three things to see", "zh": "三点观察"}, "say": ["Try the three"]}
# Three things to see:
# - All four outputs begin with `dog, cat,` again: the prompt is not counted, so the first repetition of
#   the prompt is free. The repetition penalty (7.2) stopped it at once.
# - At 0.5 neither penalty removes the repetition; it changes form, each new animal twice
#   (`sheep, sheep, goat, goat`).
# - At 1.5 presence gives a long, varied list; frequency ends the list after a few animals — the comma's
#   penalty grows by 1.5 with every animal until another token beats it.
#
# Try the three soft penalties yourself. The explorer below holds the logits of the step we studied: the
# prompt and the first 12 tokens of the loop. The repetition slider counts the prompt and the output;
# presence and frequency count only the output. Watch ` dog` and the comma fall, and what rises in their place.

# %% slide={"title": {"en": "Try the penalties yourself", "zh": "亲手试试这些惩罚"}}
viz.DistributionExplorer(lm, prompt, output=tok.decode(loop_ids[:k]))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ## 7.4 No-repeat n-gram (a hard ban)
#
# With `no_repeat_ngram_size = n`, the model may not write a token that makes a sequence of *n* tokens occur again
# (the prompt's n-grams count too; repeats already in the prompt stay, since the ban acts on new tokens). Before each
# token: take the last *n* − 1 tokens; wherever they occurred earlier, the token that followed them there is
# banned (logit −∞).

# %%
n = 3
suffix = history[-(n - 1):]  # the last n-1 tokens
banned = {history[i + n - 1] for i in range(len(history) - n + 1) if history[i:i + n - 1] == suffix}
print(viz.tr("last {n} tokens: {suffix} -> banned: {banned}", n=n - 1, suffix=[tok.token_text(t) for t in suffix],
             banned=[tok.token_text(t) for t in banned]))
assert banned == tl.sampling.banned_ngram_tokens(history, n)
masked = apply_no_repeat_ngram(logits, history, n)
assert set(torch.isinf(masked).nonzero().flatten().tolist()) == banned  # exactly those are -inf
print(viz.tr("top 5 after: {top}", top=show_top(masked)))

# %% slide={"title": {"en": "Whole generations with the ban", "zh": "整段生成加上禁令"}}
for n in (3, 4):
    out = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=24, no_repeat_ngram_size=n))
    results[f"no_repeat_ngram_size={n}"] = out.token_ids
    print(f"n = {n}: {out.text!r}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# With *n* = 3 the ban works — no 3-gram repeats — but the model, still wanting its loop, finds the nearest
# allowed variants (`dog, dog (cat), cat, cat (dog)`). With *n* = 4 it leaves the list altogether. A hard ban
# removes exact copies, not the urge to repeat.
#
# ## 7.5 Soft against hard
#
# At the step we studied, here is what each rule did to ` dog`, the loop's next token:

# %% slide={"code": [[2, 7]]}
dog = loop_ids[k]
rules = {
    "none": logits,
    "repetition 1.2": apply_repetition_penalty(logits, history, 1.2),
    "presence 0.5 + frequency 0.5": apply_presence_frequency_penalty(logits, output_so_far, 0.5, 0.5),
    "no-repeat 3-gram": apply_no_repeat_ngram(logits, history, 3),
}
print(viz.tr("rule                           dog logit  p(dog)  top token"))
for name, row in rules.items():
    p = torch.softmax(row, -1)[dog]
    top_token = tok.token_text(int(row.argmax()))
    print(f"{viz.pad(viz.tr(name), 30)}{float(row[dog]):>10.2f}{float(p):>8.3f}  {top_token!r}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Soft and hard", "zh": "软与硬"}}
# - **Soft** (repetition, presence, frequency): ` dog` keeps a finite logit. If the context makes it
#   likely enough, it can still win — right for a word that must repeat, such as a name or `the`.
# - **Hard** (no-repeat n-gram): ` dog` gets probability 0, however sure the model is. Exact, but blind:
#   it also forbids repetitions that are correct (exercise 2).
#
# The same step as a picture: the leading tokens' logits before any penalty (grey) and after each one in
# turn, in the order the pipeline applies them (`tl.sampling.apply_penalties`): repetition 1.2, then
# presence 0.5 + frequency 0.5, then the no-repeat 3-gram ban. Each colour starts from the one before it;
# a token with no bar in the last colour is banned (−∞).

# %% slide={"title": {"en": "The penalties in the pipeline's order", "zh": "按流水线顺序施加惩罚"}, "code": false, "output": false}
all_penalties = tl.SamplingParams(repetition_penalty=1.2, presence_penalty=0.5, frequency_penalty=0.5,
                                  no_repeat_ngram_size=3)
stages = penalty_stages(logits, all_penalties, prompt_ids, output_so_far, labeller(tok), top_n=6)
for name, values in stages.stages:
    print(viz.pad(name, 32) + "  ".join(f"{label}:{v:.2f}" for label, v in zip(stages.labels[:4], values, strict=False)))
penalty_stages_figure(stages)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "How much each run repeated itself", "zh": "每次运行重复了多少"}, "say": true}
# How much each run repeated itself (every run greedy, 24 tokens), counted as 3-grams of output tokens seen
# earlier in the output:

# %% slide={"output": [1, 2, 3, 5, 7, 8]}
for name, ids in results.items():
    print(viz.pad(name, 27) + viz.tr("repeated 3-grams: {n:>2}   {text!r}", n=repeated_trigrams(ids),
                                     text=tok.decode(ids)[:60]))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["The first two"]}
# ## 7.6 Length penalty belongs to beam search
#
# The lecture's list ends with the length penalty. It does not change logits at all: it changes how beam
# search ranks *finished* sequences,
#
# $$\text{score} = \frac{\sum \log p}{\text{length}^{lp}},$$
#
# so it only exists when `num_beams` > 1. Chapter 8 shows it.
#
# ## 7.7 Tuning tips
#
# From the lecture:
#
# | task | start with |
# | --- | --- |
# | question answering, code | repetition penalty 1.05, frequency penalty 0.5 |
# | creative writing, poetry | a lower repetition penalty; presence penalty 0.3 for varied topics |
# | long conversations | `no_repeat_ngram_size` 3–4, then raise the repetition penalty if needed |
# | translation with beam search | `length_penalty` between 0.6 and 1.0 to tune sentence length |
#
# The first two rows on our looping prompt, greedy so that only the penalties differ (24 tokens each):

# %% slide={"title": {"en": "The first two rows, on our loop", "zh": "前两行用在我们的循环上"}, "code": [[4, 7]]}
tips = {"no penalty": {}, "QA / code: repetition 1.05 + frequency 0.5": dict(repetition_penalty=1.05,
                                                                             frequency_penalty=0.5),
        "creative: presence 0.3": dict(presence_penalty=0.3)}
for name, penalties in tips.items():
    out = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=24, **penalties))
    print(viz.pad(viz.tr(name), 45) + viz.tr("repeated 3-grams: {n:>2}   {text!r}", n=repeated_trigrams(out.token_ids),
                                             text=out.text[:60]))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Order of tuning, and how engines differ", "zh": "调参顺序与各引擎的差异", "at": "**Order of tuning**:"}, "say": ["After each exercise,", "Work in the cells"]}
# The lecture's starting point for question answering and code breaks the loop of the greedy list.
# Presence 0.3 leaves it exactly as it was: it takes a flat 0.3 off the logit of every token already
# used, too little to change which token is largest here. It is meant for sampled creative text, where
# small shifts in probability change which topics get drawn, not for breaking a greedy loop.
#
# **Order of tuning**: temperature → top-k / top-p → penalties → the remaining limits (stop strings,
# `max_tokens`). Change one knob at a time; temperature and the filters interact, and so do the penalties.
#
# **Engines differ.** HuggingFace `generate` has `repetition_penalty` (prompt and output) and
# `no_repeat_ngram_size`, and no presence or frequency penalty. vLLM applies its repetition penalty to prompt
# and output too, but its presence and frequency penalties to the **output only**, as the OpenAI API defines
# them. teachllm follows both conventions: `apply_penalties` uses prompt + output for the repetition penalty and
# the no-repeat n-gram ban, and the output alone for presence and frequency. The same numbers can therefore mean
# different things in different engines.
#
# ## Summary
# - Greedy decoding can loop, and the loop reinforces itself: p(` dog`) rose from 0.14 at its second use to
#   0.66 at its sixth.
# - The repetition penalty divides positive logits (multiplies negative ones) for every token seen,
#   prompt included; it scales with the logit, so small values such as 1.05 already act.
# - Presence and frequency penalties subtract logit units for tokens of the output only; frequency grows
#   with each use and also punishes needed tokens such as the comma.
# - No-repeat n-gram is a hard ban: exact, but it forbids correct repetitions too.
# - Length penalty ranks finished beams (chapter 8).
#
# ## Exercises
# 1. Raise the presence penalty alone from 0 until the loop breaks. Do the same with the frequency penalty.
#    Which one keeps a long list going, and why? First write `penalised_logits(logits, output_ids, presence,
#    frequency)`, the logits `[V]` after both penalties for the generated ids `output_ids`, then set
#    `long_list_penalty` to `"presence"` or `"frequency"`.
# 2. Give the model a text that *must* repeat, such as a multiplication table
#    (`"2 x 1 = 2\n2 x 2 = 4\n2 x 3 = 6\n"`). What do `no_repeat_ngram_size=2` and `repetition_penalty=1.3` do
#    to it? Write `banned_by_no_repeat(ids, n)`, the set of token ids that `no_repeat_ngram_size=n` forbids
#    right after the sequence `ids`, and set `table_survives_no_repeat` to True if the table can go on
#    correctly under `no_repeat_ngram_size=2`, else False.
# 3. Why does the repetition penalty multiply a negative logit by *r* instead of dividing it? Write
#    `repetition_penalised(logits, seen_ids, r)`, the logits `[V]` after the repetition penalty *r* for the ids
#    in `seen_ids`. Take a token with a negative logit, pretend it was seen, and compare multiplying with
#    dividing; set `dividing_raises_seen_token` to True if dividing would make the seen token *more* likely,
#    else False.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"] slideshow={"slide_type": "skip"}
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: presence and frequency penalties, raised one at a time.
def penalised_logits(logits, output_ids, presence, frequency):
    # logits [V] after the presence and frequency penalties for the generated ids output_ids
    ...  # your code


long_list_penalty = None  # "presence" or "frequency": which one keeps a long list going?

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch07-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: a text that must repeat, under no_repeat_ngram_size=2 and repetition_penalty=1.3.
def banned_by_no_repeat(ids, n):
    # the set of token ids that no_repeat_ngram_size=n forbids right after the sequence ids
    ...  # your code


table_survives_no_repeat = None  # True or False: can the table go on correctly with no_repeat_ngram_size=2?

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch07-ex2")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 3: why a negative logit is multiplied by r, not divided.
def repetition_penalised(logits, seen_ids, r):
    # logits [V] after the repetition penalty r for the ids in seen_ids
    ...  # your code


dividing_raises_seen_token = None  # True or False: would dividing a negative logit make its token more likely?

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch07-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch07.py` (in JupyterLab: `solutions/ch07.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(7)
