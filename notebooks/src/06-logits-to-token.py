# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 6 · From logits to a token
#
# **What you will see.** The model's last layer gives a *score* for each of the 49,152 entries in its
# vocabulary. A *decoding strategy* turns those scores into one token. We take the scores of a real model
# for two prompts, one where the model is sure of the next word and one where many words fit, and apply
# each rule to them in turn: greedy decoding, temperature, top-k, top-p, min-p, and then several rules at
# once, in the order transformers and vLLM apply them. The worked examples of *LLM Generation Process*
# (《LLM 生成过程》) and of Lecture 11 are recomputed with teachllm's own functions. At the end, an explorer
# lets you move the sliders yourself.
#
# **What you will learn.**
# - **Logits** are unnormalised scores; softmax turns them into probabilities.
# - **Greedy** decoding takes the most likely token; **sampling** draws one from the distribution.
# - **Temperature** makes the distribution sharper or flatter. It is the only rule here that changes its
#   *shape*. **Top-k**, **top-p** and **min-p** only *cut* the list of candidates.
# - The order of the rules matters: transformers applies temperature → top-k → top-p → min-p, while vLLM
#   applies min-p before top-k and top-p. The same settings can then give different distributions.
# - Which settings suit which task: the table of parameter combinations in *LLM Generation Process*, as
#   presets run on one prompt.

# %% slide={"code": false}
import math

import plotly.graph_objects as go
import torch

import teachllm as tl
from teachllm import sampling, viz

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer


def show(probs, names, digits=3):
    """Print a short probability vector next to its token names."""
    print("  ".join(f"{n}: {float(p):.{digits}f}" for n, p in zip(names, probs, strict=True)))


def top_tokens(logits, n=6):
    """The n most likely tokens of one row of logits, as 'token p' strings."""
    probs = logits.softmax(dim=-1)  # [V]
    top = torch.topk(probs, n)
    return ", ".join(f"{tok.token_text(int(i))!r} {float(p):.3f}" for p, i in zip(top.values, top.indices, strict=True))


# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["We use two prompts"]}
# ## 6.1 Logits and probabilities
#
# The model's forward pass ends with the LM head: one score per vocabulary entry, for the position after
# the last prompt token. These scores are the **logits**. They can be any real number, and only their
# differences matter. Softmax turns them into probabilities:
#
# $$p_i = \frac{\exp(z_i)}{\sum_j \exp(z_j)}$$
#
# We use two prompts throughout this chapter. After "The capital of France is" the model is fairly sure of
# the next word. After "Once upon a time, there was a" many words fit.

# %% slide={"code": [[1, 4]]}
sure_ids = tok.encode("The capital of France is")
open_ids = tok.encode("Once upon a time, there was a")
sure = viz.next_token_logits(lm, sure_ids)  # [V] float32: one prefill, the logits after the last token
open_ = viz.next_token_logits(lm, open_ids)  # [V]
SURE, OPEN = viz.tr("sure"), viz.tr("open")  # the two prompts' names, as the prose calls them
print(viz.tr("logits: {shape} = one score per vocabulary entry", shape=tuple(open_.shape)))
for name, logits in ((SURE, sure), (OPEN, open_)):
    top = torch.topk(logits, 5)
    print(viz.tr("{name}: largest logits", name=name), [f"{tok.token_text(int(i))!r} {float(z):.2f}" for z, i in
                                                        zip(top.values, top.indices, strict=True)])

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The course notes' softmax example", "zh": "课程资料里的 softmax 例子"}}
# *LLM Generation Process* (§4.1) illustrates softmax with four logits, [−1.2, 0.5, 2.3, −0.1, …], and four
# probabilities, [0.01, 0.05, 0.30, 0.03, …]. Those numbers are illustrative, not the output of a model,
# and the "…" matters: softmax over the four logits alone gives quite different probabilities. The
# four probabilities do all follow from one normaliser (Σ exp(z) over the whole vocabulary), so in that
# vocabulary the tokens not listed hold most of the probability:

# %% slide={"code": [[1, 3]]}
notes_z = torch.tensor([-1.2, 0.5, 2.3, -0.1])
print(viz.tr("softmax of the four alone: {probs}", probs=[round(p, 2) for p in notes_z.softmax(-1).tolist()]))
normaliser = math.exp(2.3) / 0.30  # Σ exp(z) over the whole vocabulary, if p(2.3) = 0.30
print(viz.tr("with Σ exp(z) = {total} for the whole vocabulary: {probs}", total=round(normaliser, 1),
             probs=[round(math.exp(z) / normaliser, 2) for z in notes_z.tolist()]))
print(viz.tr("the tokens behind the '…' then hold {share:.0%} of the probability",
             share=1 - float(notes_z.exp().sum()) / normaliser))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Only differences matter", "zh": "只有差值才重要"}}
# Back to the model's own logits. Softmax turns them into probabilities that sum to 1. Adding the same number to every logit changes
# nothing, because softmax only sees differences:

# %% slide={"code": [[1, 3]]}
for name, logits in ((SURE, sure), (OPEN, open_)):
    probs = logits.softmax(dim=-1)  # [V]
    print(viz.tr("{name}: {tokens}", name=name, tokens=top_tokens(logits)))
    print("      " + viz.tr("sum = {total:.4f}, entropy = {bits:.3f} bits", total=float(probs.sum()),
                            bits=viz.data.entropy_bits(logits)))
shifted = (open_ + 100.0).softmax(dim=-1)
print("softmax(logits + 100) == softmax(logits):", torch.allclose(shifted, open_.softmax(dim=-1), atol=1e-6))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Entropy** (in bits) measures how spread out a distribution is: 0 bits when one token has all the
# probability, log₂ 49,152 ≈ 15.6 bits when every token is equally likely. The "sure" prompt has about
# 2 bits, the "open" one about 8.
#
# ## 6.2 Greedy decoding
#
# The simplest strategy takes the most likely token, `argmax(logits)`. It is deterministic: the same input
# always gives the same output. That suits factual answers, but greedy decoding can loop (chapter 7) and
# does not suit creative writing. In teachllm, `temperature=0` means greedy, as in vLLM:

# %%
greedy = tl.SamplingParams(temperature=0)
for name, logits, ids in ((SURE, sure, sure_ids), (OPEN, open_, open_ids)):
    processed = sampling.process_logits(logits, greedy, ids, [])  # no penalties are set: unchanged
    token = int(sampling.sample(processed[None], greedy)[0])  # [1] → int
    assert token == int(logits.argmax())
    print(viz.tr("{name}: greedy picks {token!r}", name=name, token=tok.token_text(token)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6.3 Temperature
#
# Temperature divides the logits z by T before softmax:
#
# $$p_i = \frac{\exp(z_i / T)}{\sum_j \exp(z_j / T)}$$
#
# *LLM Generation Process* §4.3 sums up its effect (the table translated):
#
# | temperature | effect | used for |
# | --- | --- | --- |
# | T < 1 | more deterministic, favouring likely tokens | factual answers |
# | T = 1 | the original distribution | general use |
# | T > 1 | more random, more varied | creative writing |
#
# Here is the "open" prompt at several temperatures. The lecture's rules of thumb are T = 0.1–0.5 for
# summaries and question answering, T = 0.7–1.3 for creative writing and brainstorming.

# %% slide={"title": {"en": "The open prompt at nine temperatures", "zh": "开放提示词在九个温度下"}, "code": [[1, 4]]}
print(viz.tr("     T  entropy  most likely tokens"))
for T in (0.1, 0.3, 0.5, 0.7, 1.0, 1.3, 2.0, 5.0, 100.0):
    scaled = sampling.apply_temperature(open_, T)  # logits / T
    print(f"{T:>6} {viz.data.entropy_bits(scaled):>8.3f}  {top_tokens(scaled, 4)}")
print(viz.tr("uniform over all {n:,} tokens: {bits:.3f} bits", n=tok.vocab_size, bits=math.log2(tok.vocab_size)))
gap = math.log2(tok.vocab_size) - viz.data.entropy_bits(sampling.apply_temperature(open_, 100.0))
print(viz.tr("at T = 100 the entropy is {gap:.4f} bits below uniform", gap=gap))
assert gap < 0.002

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Entropy against temperature", "zh": "熵随温度的变化"}, "say": true}
# The two ends are the lecture's limits. As T → 0, all the probability moves to the argmax and sampling
# becomes greedy decoding. As T → ∞, every logit divided by T goes to 0 and the distribution becomes
# uniform. At T = 100 the entropy is only 0.0012 bits below uniform: every token has about the same chance.
#
# Entropy against temperature, for both prompts:

# %% slide={"code": false}
temperatures = [round(0.05 * 1.2**i, 4) for i in range(30)]  # 0.05 … about 10, evenly spaced on a log axis
fig = go.Figure(layout=viz.figures.figure_layout(
    height=380, title=viz.tr("Entropy of the next-token distribution against temperature"),
    xaxis=dict(type="log", title=viz.tr("temperature T")), yaxis=dict(title=viz.tr("entropy (bits)"), range=[0, 18.5])))
for name, logits, ids in ((SURE, sure, sure_ids), (OPEN, open_, open_ids)):
    H = [round(viz.data.entropy_bits(sampling.apply_temperature(logits, T)), 2) for T in temperatures]  # bits
    fig.add_scatter(x=temperatures, y=H, mode="lines+markers", name=viz.tr('"{name}" prompt ({text})', name=name,
                                                                           text=tok.decode(ids)))
fig.add_hline(y=round(math.log2(tok.vocab_size), 4), line_dash="dash", annotation_text=viz.tr("uniform: log₂ V"))
for (low, high), color, task in (((0.1, 0.5), "#9ecae1", viz.tr("QA, summaries")), ((0.7, 1.3), "#fdae6b", viz.tr("creative, brainstorming"))):
    fig.add_vrect(x0=low, x1=high, fillcolor=color, opacity=0.25, line_width=0)  # the lecture's ranges
    fig.add_annotation(x=round(math.log10(low), 4), y=17.5, text=task, showarrow=False, xanchor="left")  # log axis
print(viz.tr("at T = 0.5: sure {sure:.3f} bits, open {open:.3f} bits",
             sure=viz.data.entropy_bits(sampling.apply_temperature(sure, 0.5)),
             open=viz.data.entropy_bits(sampling.apply_temperature(open_, 0.5))))
fig

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Why temperature: it changes the odds", "zh": "为什么要有温度：它改变几率", "at": "**Why the lecture"}}
# The same temperature does different things to the two prompts. At T = 0.5 the "sure" prompt is almost
# greedy (0.08 bits), while the "open" one still spreads over several tokens (3.9 bits).
#
# **Why the lecture introduces temperature.** Logits are unnormalised preferences, and models are often
# overconfident, so their output lacks variety. Top-k and top-p (next sections) cannot fix that: they only
# remove candidates, and the survivors keep their relative odds. Temperature is a continuous control over
# the *shape* of the distribution, between stable and creative, and is usually the first setting to tune.
# Compare the odds between the two best tokens after the "open" prompt after a top-k cut and after a
# temperature:

# %% slide={"code": [[1, 4]]}
a, b = torch.topk(open_, 2).indices.tolist()  # the two most likely tokens
for label, logits in ((viz.tr("model"), open_), (viz.tr("after top-k = {k}", k=10), sampling.apply_top_k(open_, 10)),
                      (viz.tr("after T = {T}", T=0.5), sampling.apply_temperature(open_, 0.5))):
    p = logits.softmax(dim=-1)
    print(f"{viz.pad(label, 18)} p({tok.token_text(a)!r}) = {float(p[a]):.3f}   p({tok.token_text(b)!r}) = {float(p[b]):.3f}   "
          + viz.tr("odds = {odds:.3f}", odds=float(p[a] / p[b])))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["Top-k raises both"]}
# Top-k raises both probabilities but keeps their odds (1.18). T = 0.5 squares them (1.18² ≈ 1.39).
#
# ## 6.4 Top-k sampling
#
# Top-k keeps the k most likely tokens, sets every other logit to −∞, and samples from what is left after
# softmax renormalises it. In *LLM Generation Process* §4.4, the example has k = 3:

# %% slide={"code": [[1, 4], [11, 13]]}
notes_probs = torch.tensor([0.40, 0.30, 0.15, 0.10, 0.05])
notes_logits = notes_probs.log()  # any logits with these probabilities; softmax(log p) = p
names = ["A", "B", "C", "D", "E"]
after = sampling.apply_top_k(notes_logits, 3).softmax(dim=-1)
print(viz.pad(viz.tr("original:"), 11), end="")
show(notes_probs, names, 2)
print(viz.pad(viz.tr("top-3:"), 11), end="")
show(notes_probs.masked_fill(after == 0, 0), names, 2)
print(viz.pad(viz.tr("normalised:"), 11), end="")
show(after, names, 2)
assert torch.allclose(after, torch.tensor([0.47, 0.35, 0.18, 0.0, 0.0]), atol=0.005)
kept = float(notes_probs[:3].sum())  # the probability top-3 keeps
print(viz.tr("kept mass {kept:.2f}; 0.40 / {kept:.2f} = {p:.2f}", kept=kept, p=0.40 / kept))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The lecture's example, k = 2", "zh": "第 11 讲的例子：k = 2", "at": "The lecture's example"}, "say": ["The lecture's example"]}
# Each survivor is divided by the mass that is kept, 0.40 + 0.30 + 0.15 = 0.85, so 0.40 becomes 0.47.
#
# The lecture's example is a Chinese prompt, 南京大学计算机学院的课程有 ("the courses of Nanjing University's
# computer science school include"), with next words {算法 (algorithms): 0.4, 操作系统 (operating systems): 0.3,
# 计算机 (computers): 0.2, 数据 (data): 0.05, …}. The remaining 0.05 is spread over every other word; here it
# is one entry, "…". With k = 2 only two continuations are possible:

# %% slide={"code": [[1, 6]]}
course_words = ["算法", "操作系统", "计算机", "数据", "…"]
course_logits = torch.tensor([0.4, 0.3, 0.2, 0.05, 0.05]).log()
for k in (2, 1):
    probs = sampling.apply_top_k(course_logits, k).softmax(dim=-1)
    print(f"k = {k}: ", end="")
    show(probs, course_words)
params = tl.SamplingParams(temperature=1.0, top_k=2)
draws = sampling.sample(sampling.process_logits(course_logits, params, [], [])[None].expand(10, -1), params,
                        torch.Generator().manual_seed(0))  # 10 draws, [10]
for i in draws.tolist()[:4]:
    print("南京大学计算机学院的课程有" + course_words[i])
drawn = sorted({course_words[i] for i in draws.tolist()})
print(viz.tr("words drawn in {n} samples: {words}", n=len(draws), words=drawn))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Ties at the boundary", "zh": "边界上的并列", "at": "Two details from"}}
# With k = 1 only the most likely word is left: **greedy decoding is top-k sampling with k = 1**.
#
# Two details from transformers, which teachllm follows. From `TopKLogitsWarper`: k sets a threshold, the
# k-th largest logit, and every token whose logit reaches it survives, so a token that ties with the k-th
# largest logit is kept too. From `generate`, which builds the processors: k = 0 switches top-k off
# (`TopKLogitsWarper` itself refuses k = 0).

# %%
tied = torch.tensor([0.40, 0.20, 0.15, 0.15, 0.10]).log()
print(viz.tr("k = 3 with a tie at the boundary keeps {n} tokens", n=int(sampling.apply_top_k(tied, 3).isfinite().sum())))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "A fixed k on live logits", "zh": "真实 logits 上固定的 k"}}
# The weakness of top-k is that k is fixed. On the live logits, the same k keeps most of the probability
# after the "sure" prompt and much less of it after the "open" one:

# %%
for name, logits in ((SURE, sure), (OPEN, open_)):
    probs = logits.softmax(dim=-1)
    for k in (3, 10, 50):
        kept = sampling.apply_top_k(logits, k).isfinite()  # [V] True where the token survives
        print(viz.tr("{name}: top-{k:<3} keeps {mass:.3f} of the probability", name=name, k=k,
                     mass=float(probs[kept].sum())))

# %% [markdown] slideshow={"slide_type": "subslide"}
# After the "sure" prompt, three tokens already hold 85% of the probability, and k = 50 lets in dozens more
# that the model gives about 1% or less each. After the "open" prompt, even 50 tokens hold only 60%, and k = 3
# keeps 16%: it throws away most of the words that fit.
#
# ## 6.5 Top-p (nucleus) sampling
#
# Top-p keeps the smallest set of most likely tokens whose probabilities add up to at least p, so the
# number of candidates adapts to the distribution. In *LLM Generation Process* §4.5, the example has p = 0.9:

# %%
after = sampling.apply_top_p(notes_logits, 0.9).softmax(dim=-1)
kept = after > 0
print(viz.pad(viz.tr("sorted:"), 12), end="")
show(notes_probs, names, 2)
print(viz.pad(viz.tr("cumulative:"), 12), end="")
show(notes_probs.cumsum(0), names, 2)
print(viz.tr("top-p {p} keeps {n} tokens holding {mass:.2f} of the probability", p=0.9, n=int(kept.sum()),
             mass=float(notes_probs[kept].sum())))
print(viz.pad(viz.tr("normalised:"), 12), end="")
show(after, names, 3)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The token that crosses p is kept", "zh": "越过 p 的那个 token 被保留"}}
# After three tokens the cumulative probability is 0.85, not yet 0.9. The fourth token crosses 0.9 and is
# **kept**, so the nucleus holds 0.95. transformers writes the rule the other way round, and teachllm
# follows it: sort the tokens from least to most likely, and remove those whose cumulative sum is $\le 1 - p$.
# The most likely token always survives. The example teachllm's tests check against transformers'
# `TopPLogitsWarper` (`test_top_p_keeps_the_boundary_token` in `tests/test_sampling.py`) has [.1, .2, .3, .4]
# and p = 0.6, and both .3 and .4 survive:

# %%
ref_probs = torch.tensor([0.1, 0.2, 0.3, 0.4])
print(viz.tr("p = 0.6 keeps {kept}", kept=sampling.apply_top_p(ref_probs.log(), 0.6).isfinite().tolist()))
for p in (0.3, 0.5, 0.75, 0.9, 0.96):
    print(viz.tr("notes example, p = {p:<4}: {n} tokens kept", p=p, n=int(sampling.apply_top_p(notes_logits, p).isfinite().sum())))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The same p on live logits", "zh": "真实 logits 上的同一个 p"}}
# On the live logits, the same p keeps one to two orders of magnitude fewer tokens after the "sure" prompt
# than after the "open" one (at p = 0.9, 10 against 698):

# %%
for p in (0.5, 0.9, 0.95):
    n_sure = int(sampling.apply_top_p(sure, p).isfinite().sum())
    n_open = int(sampling.apply_top_p(open_, p).isfinite().sum())
    print(viz.tr("top-p {p}: sure prompt keeps {n_sure:>4} tokens, open prompt keeps {n_open:>5}", p=p, n_sure=n_sure,
                 n_open=n_open))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Top-p after temperature", "zh": "温度之后的 top-p"}}
# Top-p sees the distribution *after* temperature, so the two are coupled. The lecture's advice is to fix
# one and then tune the other, otherwise it is hard to tell which setting caused a change. With top-p 0.9
# on the "open" prompt:

# %%
for T in (0.5, 1.0, 1.5):
    n = int(sampling.apply_top_p(sampling.apply_temperature(open_, T), 0.9).isfinite().sum())
    print(viz.tr("T = {T}: top-p 0.9 keeps {n:>5} tokens", T=T, n=n))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6.6 Min-p
#
# Min-p removes every token whose probability is less than min_p times the top token's probability:
# remove token $i$ if $p_i < m \cdot \max_j p_j$, where $m$ is `min_p`. The threshold is relative, so it
# tightens when the model is sure and loosens when it is not:

# %%
for name, logits in ((SURE, sure), (OPEN, open_)):
    top_p_ = float(logits.softmax(dim=-1).max())
    n = int(sampling.apply_min_p(logits, 0.1).isfinite().sum())
    print(viz.tr("{name}: top token p = {top:.3f}, min-p 0.1 keeps tokens with p ≥ {threshold:.4f}: {n} tokens",
                 name=name, top=top_p_, threshold=0.1 * top_p_, n=n))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6.7 Several rules at once, and their order
#
# Engines apply the rules one after another, each to the output of the previous one. In transformers,
# `GenerationMixin._get_logits_processor` (in `generation/utils.py`) builds the list. The penalties come
# first (chapter 7), and then, only when sampling: temperature → top-k → top-p → min-p. Here is the list it
# builds. Its classes live in `generation/logits_process.py`, and the model is a tiny random one, because
# only the list matters:

# %% slide={"code": [[5, 10]]}
import transformers  # noqa: E402  (imported here: this is the only section that needs it)
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM  # noqa: E402

transformers.logging.set_verbosity_error()
hf_tiny = LlamaForCausalLM(LlamaConfig(vocab_size=tok.vocab_size, hidden_size=8, intermediate_size=16,
                                       num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1))
settings = dict(temperature=0.7, top_k=50, top_p=0.9, min_p=0.05, repetition_penalty=1.1)
hf_processors = hf_tiny._get_logits_processor(generation_config=GenerationConfig(do_sample=True, **settings),
                                              input_ids_seq_length=len(open_ids))
print(" → ".join(type(p).__name__ for p in hf_processors))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "teachllm gives transformers' result", "zh": "teachllm 与 transformers 结果相同"}}
# teachllm's `process_logits` applies the same rules in the same order. On the live logits it gives the same
# result as transformers' own list:

# %%
hf_out = hf_processors(torch.tensor([open_ids], device=lm.device), open_[None].clone())[0]  # [V]
ours = sampling.process_logits(open_, tl.SamplingParams(**settings), open_ids, [])  # [V]
assert torch.equal(hf_out.isfinite(), ours.isfinite())
assert torch.allclose(hf_out[ours.isfinite()], ours[ours.isfinite()], atol=1e-5)
print(viz.tr("same {n} surviving tokens, same logits (the top 5 tokens' probabilities: {top})",
             n=int(ours.isfinite().sum()), top=top_tokens(ours, 5)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Top-k and top-p together", "zh": "top-k 与 top-p 同时使用"}}
# **Top-k and top-p together** (the lecture's "top-k + top-p sampling"). transformers applies top-k first,
# and top-p then works on the renormalised survivors. The other order can give a different result. On the
# distribution of the *LLM Generation Process* example, with k = 3 and p = 0.8:

# %%
k_then_p = sampling.apply_top_p(sampling.apply_top_k(notes_logits, 3), 0.8).softmax(dim=-1)
p_then_k = sampling.apply_top_k(sampling.apply_top_p(notes_logits, 0.8), 3).softmax(dim=-1)
print(viz.pad(viz.tr("top-k, then top-p (transformers):"), 33), end=" ")
show(k_then_p, names)
print(viz.pad(viz.tr("top-p, then top-k:"), 33), end=" ")
show(p_then_k, names)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Min-p: transformers and vLLM disagree", "zh": "min-p：transformers 与 vLLM 不一致", "at": "**Min-p: transformers and"}}
# After top-3 the probabilities are [.47, .35, .18], and the first two already reach 0.8. On the original
# distribution 0.8 needs three tokens.
#
# **Min-p: transformers and vLLM disagree.** vLLM's V1 engine (`vllm/v1/sample/sampler.py`, the default
# engine since vLLM 0.8) applies temperature → min-p → top-k → top-p, so min-p comes *before* top-k and
# top-p. (The older V0 sampler, `vllm/model_executor/layers/sampler.py`, ran top-k and top-p first and
# min-p last, as transformers does: the order below is V1's.) teachllm follows transformers in
# `process_logits`. To get vLLM V1's order we call the same functions in that order:

# %% slide={"code": [[9, 14]], "output": [1, 2]}
def vllm_order(logits, p: tl.SamplingParams):
    """vLLM V1's sampler order for the filters: /T → min-p → top-k → top-p (teachllm's functions)."""
    out = sampling.apply_temperature(logits, p.temperature)
    out = sampling.apply_min_p(out, p.min_p)
    out = sampling.apply_top_k(out, p.top_k)
    return sampling.apply_top_p(out, p.top_p)


params = tl.SamplingParams(temperature=1.0, top_p=0.8, min_p=0.3)
hf_order = sampling.process_logits(notes_logits, params, [], []).softmax(dim=-1)
print(viz.tr("transformers: top-p 0.8, then min-p 0.3:"), end=" ")
show(hf_order, names)
print(viz.tr("vLLM:         min-p 0.3, then top-p 0.8:"), end=" ")
show(vllm_order(notes_logits, params).softmax(dim=-1), names)
after_top_p = sampling.apply_top_p(notes_logits, 0.8).softmax(dim=-1)  # what min-p sees in transformers
hf_top, vllm_top = float(after_top_p.max()), float(notes_probs.max())  # the top probability each min-p scales
print(viz.tr("min-p thresholds: transformers 0.3 × {hf:.2f} = {hf_min:.2f}, vLLM 0.3 × {vllm:.2f} = {vllm_min:.2f}",
             hf=hf_top, hf_min=0.3 * hf_top, vllm=vllm_top, vllm_min=0.3 * vllm_top))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The two orders on live logits", "zh": "两种顺序在真实 logits 上"}}
# In transformers, top-p 0.8 keeps A, B and C (cumulative .40, .70, .85). Min-p 0.3 then asks for
# p ≥ 0.3 × 0.47 = 0.14 among the renormalised [.47, .35, .18], and all three pass. In vLLM, min-p comes
# first: its threshold 0.3 × 0.40 = 0.12 removes D and E. Top-p 0.8 then meets the renormalised
# [.47, .35, .18], and two tokens are enough. Same settings, different distributions. On live logits, with
# the "chat" preset plus min-p 0.05:

# %%
params = tl.SamplingParams(temperature=0.8, top_k=40, top_p=0.9, min_p=0.05)
for name, logits in ((SURE, sure), (OPEN, open_)):
    n_hf = int(sampling.process_logits(logits, params, [], []).isfinite().sum())
    n_vllm = int(vllm_order(logits, params).isfinite().sum())
    print(viz.tr("{name}: transformers' order keeps {n_hf} tokens, vLLM's order keeps {n_vllm}", name=name, n_hf=n_hf,
                 n_vllm=n_vllm))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Logits that are not finite", "zh": "非有限值的 logits"}, "say": true}
# **Logits that are not finite (NaN and ±inf).** A broken model can hand out NaN, and a caller may want one token to be
# certain. Every rule above, and greedy decoding, follows one policy (`sampling.settle`). NaN is an error
# that names the row: no probability follows from it. +inf means "this token is certain": the row keeps only
# that token, and several +inf tokens share the probability. −inf is a token already ruled out; a row in
# which the rules rule out every token is an error, never a guess:

# %%
certain = torch.tensor([[1.0, 2.0, math.inf, 0.5]])  # token 2 is certain
kept_ids = sampling.apply_top_p(certain, 0.5).isfinite().nonzero()[:, 1].tolist()
print(viz.tr("top-p 0.5 keeps token(s) {ids}", ids=kept_ids),
      viz.tr("| greedy picks"), int(sampling.sample(certain, tl.SamplingParams(temperature=0))),
      viz.tr("| sampling picks"), int(sampling.sample(certain, tl.SamplingParams(temperature=1.0))))
for broken in (torch.tensor([[1.0, math.nan, 0.5]]), torch.full((1, 3), -math.inf)):
    try:
        sampling.sample(broken, tl.SamplingParams(temperature=0))
    except sampling.NoTokenError as error:  # its message, in the reader's language
        print(f"{broken.tolist()}: {viz.tr(error.template, **error.fields)}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6.8 The presets: one setting per task *(optional)*
#
# The table of parameter combinations in *LLM Generation Process* §4.7, with the value `teachllm.viz.PRESETS`
# picks inside each range:
#
# | task | temperature | top-p | top-k | preset |
# | --- | --- | --- | --- | --- |
# | code generation | 0.1–0.3 | – | – | `code` |
# | factual QA | 0.0–0.5 | 0.9 | – | `factual QA` |
# | chat | 0.7–0.9 | 0.9 | 40 | `chat` |
# | creative writing | 1.0–1.2 | 0.95 | 50 | `creative` |
# | brainstorming | 1.5–2.0 | 0.98 | 100 | `brainstorm` |
#
# Each preset on the same chat prompt, with the same random seed (`greedy` is greedy decoding). The two
# columns after the name describe the first step: how many tokens survive the filters, and the entropy of what
# is left.

# %% slide={"code": false, "output": false}
for name, preset in viz.PRESETS.items():
    print(f"{name:<11} {preset}")
question = tok.apply_chat_template([{"role": "user", "content": "Write one sentence about the sea."}])
q_ids = tok.encode(question)
q_logits = viz.next_token_logits(lm, q_ids)

# %% slide={"title": {"en": "Each preset on one prompt", "zh": "每个预设在同一提示词上"}, "code": [[2, 6]]}
print(viz.tr("preset      survive  bits  text (random seed 0, 16 tokens)"))
for name, preset in {"greedy": dict(temperature=0), **viz.PRESETS}.items():
    params = tl.SamplingParams(**preset, seed=0, max_tokens=16)
    d = viz.distribution(q_logits, params, q_ids)
    out = lm.generate(q_ids, params)
    print(f"{name:<11}{d.n_kept:>8,}{d.entropy_after:>6.2f}  {out.text!r}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Brainstorming: how high a temperature?", "zh": "头脑风暴：温度该多高？"}, "say": true}
# `code` sets no filter, so all 49,152 tokens survive. At T = 0.2, though, nearly all the probability sits
# on one token (0.00 bits), and yet within 16 steps the text leaves the greedy path. `factual QA` cuts the
# first step down to one token. From there down the table, more tokens survive each row and the text grows
# more varied. `brainstorm` has nearly 5 bits at the first step and soon stops making sense. A sampled text
# depends on the random seed: change it and run again.
#
# **Two sources, two ranges for brainstorming.** The table above (from *LLM Generation Process*) puts
# brainstorming at T = 1.5–2.0; Lecture 11 (quoted in 6.3) puts creative writing and brainstorming together at
# T = 0.7–1.3. Which one suits this model? One way to ask it: sample a brainstorm at several temperatures
# (top-p 0.98 and top-k 100, as in the table), read each text, and score it with the model itself, by the mean
# log-probability it gives the sampled tokens at T = 1 (in nats, natural-log units, per token; the higher, the
# more the text is one the model itself would write).

# %% slide={"code": [4, 5, 8]}
idea_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": "Give me ideas for a science fair."}]))
print(viz.tr("   T mean log p  text (random seed 0, 24 tokens)"))
brainstorm_scores = {}
for T in (0.7, 1.0, 1.3, 1.5, 2.0):
    out = lm.generate(idea_ids, tl.SamplingParams(temperature=T, top_p=0.98, top_k=100, seed=0, max_tokens=24))
    logp = lm.forward(idea_ids + out.token_ids)[0, len(idea_ids) - 1:-1].log_softmax(-1)  # [n, V] at T = 1
    brainstorm_scores[T] = float(logp.gather(-1, torch.tensor(out.token_ids, device=lm.device)[:, None]).mean())
    print(f"{T:>4}{brainstorm_scores[T]:>11.2f}  {out.text!r}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["The score falls"]}
# The score falls with every step up in temperature: −0.99 nats per token at T = 0.7, −2.16 at 1.0,
# −2.85 at 1.3, −4.92 at 2.0. That is expected of any model, large or small: the hotter the sampling, the more
# often it draws tokens the model at T = 1 finds unlikely. So the score alone cannot pick a range; the texts must.
# At 1.3 and 1.5 the model already invents a material ("smolyum"), and at 2.0 the sentence drifts away from the
# question. Judged by these texts, a 135M model supports the lecture's range, and only its lower half. The
# table's 1.5–2.0 may be meant for larger models; this chapter does not test that. Set `TEACHLLM_MODEL` to a larger
# checkpoint and rerun this section, comparing the texts at each temperature, to find out.
# Change the random seed and run again to see how much of this comes from the random seed.
#
# ## 6.9 Explore
#
# The same view twice. First a static figure, which the book reuses: the "chat" preset on the sea prompt.
# Light bars are the model's probabilities, grey where a rule removed the token. Dark bars are the
# probabilities after processing. The orange line is the cumulative probability that top-p cuts.

# %% slide={"code": false}
labels_of = viz.labeller(tok)  # ids → readable token labels
d = viz.distribution(q_logits, tl.SamplingParams(**viz.PRESETS["chat"]), q_ids, labels_of=labels_of)
viz.distribution_figure(d)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The distribution explorer", "zh": "分布探索器"}, "say": true}
# Then the explorer. It runs the model once and, when a slider moves, reruns `process_logits` on the same
# logits. Pick a preset, move temperature, top-k, top-p and min-p, and press *sample* to draw a token with
# the random seed shown.

# %% slide={"code": false}
viz.DistributionExplorer(lm, question)

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["After each exercise,", "Work in the cells"]}
# ## Summary
# - The model gives logits, and softmax turns them into probabilities. A decoding strategy then picks one
#   token.
# - Greedy takes the argmax. It is top-k with k = 1, and `temperature=0` in teachllm and vLLM.
# - Temperature divides the logits by T. T → 0 approaches greedy and T → ∞ approaches uniform. Of
#   temperature, top-k, top-p and min-p, it is the only one that changes the odds between the tokens left.
# - Top-k keeps a fixed number of tokens (*LLM Generation Process*: [.40, .30, .15, .10, .05] →
#   [.47, .35, .18, 0, 0]). Top-p
#   keeps the smallest set that reaches p, and the token that crosses p stays (p = 0.9 keeps four tokens,
#   0.95 of the mass). Min-p keeps tokens within a factor of the best one. Top-p and min-p adapt to how
#   sure the model is; top-k does not.
# - Order matters. transformers runs temperature → top-k → top-p → min-p; vLLM (V1 engine, the default
#   since 0.8) runs min-p before top-k and top-p.
#
# ## Exercises
# 1. (*LLM Generation Process*, question 2.) Is `temperature = 0` the same as greedy decoding? Try dividing
#    the logits by 0. Then write `greedy_token_probability(logits, temperature)`, the probability that sampling
#    at temperature T draws the greedy token, and look at it for T = 0.5, 0.1 and 0.01. What happens when two
#    tokens tie for the top? Set `tied_top_probability` to the probability each of them gets at T = 0.01. Does
#    transformers accept `do_sample=True, temperature=0`? Set `t0_refused_by_transformers` to True or False.
# 2. Temperature keeps the ranking of tokens. Does it change *which* tokens top-k keeps? Which tokens top-p
#    keeps? Write `kept_after(logits, temperature, k=None, top_p=None)`, the set of token ids that survive
#    temperature and then top-k (or top-p), and answer with `topk_depends_on_temperature` and
#    `topp_depends_on_temperature` (True or False).
# 3. Section 6.7 showed that min-p gives different results before and after top-p. Is the same true for
#    min-p and top-k? Write `kept_in_order(logits, min_p, k, min_p_first)`, the set of token ids that survive
#    min-p and top-k in the order given, check many settings on the live logits, and set
#    `min_p_top_k_commute` to True or False.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"]
# Exercise 1: temperature 0, and sampling at T = 0.5, 0.1, 0.01.
def greedy_token_probability(logits, temperature):
    # the probability that sampling at this temperature (T > 0) draws argmax(logits); logits is [V]
    ...  # your code


tied_top_probability = None  # a number: the probability of each of two tied top tokens at T = 0.01
t0_refused_by_transformers = None  # True or False

# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch06-ex1")

# %% tags=["exercise"]
# Exercise 2: does temperature change which tokens top-k keeps? Which tokens top-p keeps?
def kept_after(logits, temperature, k=None, top_p=None):
    # the set of token ids kept when logits [V] are divided by temperature, then top-k (or top-p) applied
    ...  # your code


topk_depends_on_temperature = None  # True or False
topp_depends_on_temperature = None  # True or False

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch06-ex2")

# %% tags=["exercise"]
# Exercise 3: min-p before and after top-k, on many settings.
def kept_in_order(logits, min_p, k, min_p_first):
    # the set of token ids kept from logits [V] by min-p then top-k (min_p_first=True), or top-k then min-p
    ...  # your code


min_p_top_k_commute = None  # True or False: do both orders always keep the same tokens?

# %% tags=["check"]
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch06-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch06.py` (in JupyterLab: `solutions/ch06.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(6)
