# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 3 · Prefill, layer by layer
#
# **What you will see.** The prefill pass of chapter 1, opened up. A twelve-token prompt goes through the
# embedding, all 30 decoder layers, the final norm and the LM head, and we stop after every stage to look at
# the tensors. Inside one layer we look at the queries, keys and values, the causal mask, the attention
# scores, the attention pattern and the MLP, and we recompute one attention head by hand.
#
# **What you will learn.**
# - One forward pass outputs **logits**, one score per vocabulary entry, not a token. A **decoding strategy**
#   (greedy, sampling, beam search) turns the logits into a token.
# - The shape of everything prefill computes: the **residual stream** is `[batch, tokens, 576]` from the
#   embedding to the final norm; only the LM head widens it to the 49,152-entry vocabulary.
# - How one attention layer works: Q, K and V, scores $qk^\top/\sqrt{d}$, the **causal mask**, softmax, ·V, and
#   **grouped-query attention** (9 query heads share 3 key/value heads).
# - Why prefill keeps only the **last row** of the logits, and how much work that saves.

# %% slide={"title": {"en": "The model's shape", "zh": "模型的形状"}, "code": [[17, 20]]}
import inspect
import math

import torch

import teachllm as tl
from teachllm import viz
from teachllm.model import Transformer
from teachllm.viz import AttentionExplorer, attention_figure, capture_attention
from teachllm.viz.widgets import labeller

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer
tol = tl.tolerance(lm.dtype)  # how far two computations of the same numbers may differ in this dtype
cfg = lm.config
print(viz.tr("layers L = {L}, hidden h = {h}, query heads n_h = {n_h}, KV heads n_kv = {n_kv}, head dim d = {d}, "
             "MLP width f = {f}, vocabulary V = {V:,}", L=cfg.n_layers, h=cfg.hidden_size, n_h=cfg.n_heads,
             n_kv=cfg.n_kv_heads, d=cfg.head_dim, f=cfg.intermediate_size, V=cfg.vocab_size))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["| 1. run the", "Our prompt repeats"]}
# ## 3.1 One inference gives logits, not a token
#
# Lecture 11 puts it plainly: “LLM的一次推理输出logits,并非token”. A call of the model returns **logits**, not a
# token; logits are an unnormalised score for every token of the vocabulary. Which token comes next is decided
# afterwards, by a decoding strategy.
# In the Llama source the lecture walks through, the three steps are:
#
# | step | Llama (transformers) | teachllm |
# | --- | --- | --- |
# | 1. run the decoder layers | `LlamaModel` runs each `DecoderLayer`, then the final norm | `lm.model.layers`, then `lm.model.norm` |
# | 2. project to the vocabulary | `lm_head` gives the logits | `lm.model.lm_head` (inside `lm.prefill`) |
# | 3. turn the logits into a token (the decoding strategy) | greedy, sampling or beam search | `tl.sampling` (chapters 6–7); beam search: `tl.beam_search_steps` (chapter 8) |
#
# Our prompt repeats a pattern, so the model has an easy guess for the next token:

# %% slide={"code": [1, 2, 7, 8], "output": [[2, 7]]}
prompt = "The capital of France is Paris. The capital of Italy is"
ids = tok.encode(prompt)
S = len(ids)
print(viz.tr("{n} tokens: {pieces}", n=S, pieces=tok.pieces(ids)))

cache = lm.new_cache(max_len=S)
logits = lm.prefill(ids, cache)  # [1, V]: one row of scores, for the token after the last one
print("logits:", tuple(logits.shape), "= [batch, vocabulary]")
probs = torch.softmax(logits[0], dim=-1)  # [V]
top = torch.topk(probs, 5)
for p, i in zip(top.values, top.indices, strict=True):
    print(f"  {tok.token_text(int(i))!r:<12} logit {float(logits[0, i]):6.2f}   p = {float(p):.3f}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Two strategies, the same logits", "zh": "同一组 logits，两种解码策略"}}
# Nothing in these logits says "the answer is ` Rome`". Two decoding strategies applied to the **same**
# logits: greedy takes the highest score every time; sampling draws from the probabilities, so ` Rome` comes
# up more often than any other token, but not every time. (The draws use a generator with a fixed random seed, so they are the same on
# every run.)

# %% slide={"code": [[1, 2], [4, 7]]}
greedy = tl.SamplingParams(temperature=0)
sampling = tl.SamplingParams(temperature=1.0)
generator = torch.Generator(device=lm.device).manual_seed(0)  # a generator draws on its own device
greedy_token = int(tl.sampling.sample(logits, greedy)[0])
draws = [int(tl.sampling.sample(logits, sampling, generator)[0]) for _ in range(10)]
print(viz.tr("greedy     : {token!r}", token=tok.token_text(greedy_token)))
print(viz.tr("10 samples : {tokens}", tokens=[tok.token_text(t) for t in draws]))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3.2 The whole pass, stage by stage
#
# `lm.step_through(ids)` runs the same forward pass as prefill, but stops after every stage and hands us
# its output: the token embeddings, the output of each of the 30 decoder layers, the final RMSNorm and the
# logits. *LLM Generation Process* (《LLM 生成过程》, §2.2) draws this as
#
# token ids → embedding → layer 1 → layer 2 → … → layer N → LM head → logits `[seq_len, vocab_size]`
#
# (The diagram counts layers from 1; teachllm and the tables below count from 0.) All prompt tokens go through
# each stage together, as one matrix: this is what it means for prefill to
# process the prompt in parallel. Next to each shape we print the size (root mean square) of the first and the
# last token's vector.

# %% slide={"title": {"en": "Shapes and sizes after every stage", "zh": "每一级之后的形状与大小"}, "code": [[1, 7]], "output": [[1, 3], [12, 14], [-3, -1]]}
stages = list(lm.step_through(ids))
print(viz.tr("stage      shape              RMS first token  RMS last token"))
named = {"embedding": viz.tr("embedding"), "final norm": viz.tr("final norm"), "logits": "logits"}
for stage in stages:
    rms = stage.output[0].pow(2).mean(-1).sqrt()  # [S]: size of each token's vector
    name = named[stage.name] if stage.index is None else viz.tr("layer {i}", i=stage.index)
    print(f"{viz.pad(name, 11)}{str(tuple(stage.output.shape)):<18}{float(rms[0]):>16.1f}{float(rms[-1]):>16.1f}")

full_logits = lm.forward(ids)  # [1, S, V]: the same pass in one call
assert torch.equal(stages[-1].output, full_logits)
assert torch.equal(stages[0].output[0], lm.model.embed_tokens.weight[ids])  # the embedding is a table lookup

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What to read from this", "zh": "从中读出什么"}, "say": ["The notes' diagram also"]}
# What to read from this:
# - The **residual stream** keeps one shape, `[1, 12, 576]`, from the embedding to the final norm. Each
#   layer reads it and *adds* its result to it; nothing is replaced. Only the LM head changes the width,
#   from h = 576 to V = 49,152.
# - On the whole the vectors grow as layers add to them, though not at every layer (in layer 9 the first
#   token's RMS falls from 22.9 to 6.2). The first token's vector jumps to an RMS near 950 in layer 11
#   and stays huge until the last layers. Large models show this too ("massive activations" on the first
#   token); in 3.6 we meet attention heads that look at the first token and little else.
# - The final RMSNorm scales every token's vector back to a similar size before the LM head reads it.
#
# The notes' diagram also has a box between the embedding and the first decoder layer (the diagram's layer 1,
# our layer 0), "Position Encoding" (添加位置信息),
# which the line above leaves out. Llama-family models add no position vector there: a token has the same embedding wherever it stands. Positions enter inside every
# attention layer, where **RoPE** (rotary position embedding) rotates the queries and keys by an angle that depends on the position.
# ` capital` is token 1 and token 8 of our prompt. Below, their embeddings are identical, and after layer 0 they
# differ. Two things make them differ: the tokens before them are not the same, so attention reads different inputs,
# and RoPE rotates their queries and keys by different angles. So the comparison shows only that the position is not
# in the embedding; it does not isolate what RoPE does:

# %% slide={"title": {"en": "Where positions enter", "zh": "位置信息从哪里进入"}}
print(viz.tr("{pieces} same id: {same}", pieces=tok.pieces([ids[1], ids[8]]), same=ids[1] == ids[8]))
print(viz.tr("same embedding vector: {same}", same=torch.equal(stages[0].output[0, 1], stages[0].output[0, 8])))
print(viz.tr("same vector after layer 0: {same}", same=torch.equal(stages[1].output[0, 1], stages[1].output[0, 8])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3.3 Inside one layer
#
# A decoder layer does two things, each added to the residual stream:
#
# $$
# \begin{aligned}
# \mathrm{resid\_mid} &= \mathrm{resid\_in} + \mathrm{attention}(\mathrm{RMSNorm}(\mathrm{resid\_in}))\\
# \mathrm{resid\_out} &= \mathrm{resid\_mid} + \mathrm{MLP}(\mathrm{RMSNorm}(\mathrm{resid\_mid}))
# \end{aligned}
# $$
#
# A `tl.Trace` passed to a forward call records, for every layer, the tensors it computed. Nothing is
# recorded unless we ask, so the normal path stays fast. We trace the prefill and look at layer 1.

# %% slide={"title": {"en": "One layer's tensors, traced", "zh": "追踪一层里的张量"}, "code": [[1, 4], [18, 19]]}
trace = tl.Trace()
lm.prefill(ids, lm.new_cache(max_len=S), trace=trace)
layer = 1
t = trace.layers[layer]
meaning = {
    "resid_in": "residual stream entering the layer  [B, S, h]",
    "q": "queries of each token, after RoPE     [B, n_h, S, d]",
    "k": "keys, after RoPE (what the cache keeps) [B, n_kv, S, d]",
    "v": "values (what the cache keeps)         [B, n_kv, S, d]",
    "scores": "q·kᵀ/√d, −inf where the mask forbids  [B, n_h, S, S]",
    "probs": "softmax of the scores: the pattern   [B, n_h, S, S]",
    "z": "each head's output, probs · v        [B, n_h, S, d]",
    "attn_out": "attention output after o_proj       [B, S, h]",
    "resid_mid": "resid_in + attn_out                  [B, S, h]",
    "mlp_out": "SwiGLU MLP output                    [B, S, h]",
    "resid_out": "resid_mid + mlp_out                  [B, S, h]",
}
for name, text in meaning.items():
    print(f"{name:<10}{str(tuple(getattr(t, name).shape)):<17}{viz.tr(text)}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Grouped-query attention in the shapes", "zh": "形状里的分组查询注意力"}}
# Grouped-query attention shows in the shapes: there are **9** query heads but only **3** key and value
# heads. Each KV head serves a group of $g = 9/3 = 3$ query heads: query heads 0–2 read KV head 0, heads
# 3–5 read KV head 1, heads 6–8 read KV head 2. The weight matrices say the same:

# %%
attn = lm.model.layers[layer].self_attn
for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
    print(viz.tr("{name}: weight {shape}  [out, in]", name=name, shape=tuple(getattr(attn, name).weight.shape)))
print(viz.tr("query heads per KV head: g = {g}", g=cfg.n_groups))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The two residual additions", "zh": "两次残差相加"}}
# The two residual additions, checked on the captures, and the hand-over from one layer to the next:

# %%
assert torch.allclose(t.resid_mid, t.resid_in + t.attn_out)
assert torch.allclose(t.resid_out, t.resid_mid + t.mlp_out)
assert torch.equal(trace.layers[layer + 1].resid_in, t.resid_out)  # layer 2 reads what layer 1 wrote
print(viz.tr("resid_mid = resid_in + attn_out, resid_out = resid_mid + mlp_out, and layer 2 reads layer 1's output"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The causal mask", "zh": "因果掩码"}}
# **The causal mask.** Token $i$ may attend to tokens $0, \dots, i$ and never to a later one: during training
# the model learned to predict each next token without seeing it. The trace keeps the mask that was used
# (`True` = may attend, shown as 1):

# %% slide={"code": [3, [5, 6]], "output": [[1, 6], -1]}
labels = [tok.token_text(i) for i in ids]
names = [f"{label!r:.10}" for label in labels]  # at most 10 characters, for the tables below
mask = trace.mask[0, 0]  # [S, S]
print(" " * 13 + "".join(f"{j:>3}" for j in range(S)) + viz.tr("   ← key position"))
for i in range(S):
    print(f"{i:>2} {names[i]:<10}" + "".join(f"{int(m):>3}" for m in mask[i]))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Scores", "zh": "注意力分数"}}
# **Scores and probabilities.** Head 2 of layer 1 is a good one to watch. Its scores are $qk^\top/\sqrt{d}$,
# with −inf written wherever the mask says 0 (the first rows):

# %%
head = 2
scores = t.scores[0, head]  # [S, S]
for i in range(4):
    print(f"{names[i]:<10}" + "".join(f"{float(x):>7.2f}" for x in scores[i, :6]) + "  …")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The attention pattern", "zh": "注意力模式"}}
# Softmax turns each row into probabilities that sum to 1; the −inf entries become exactly 0. This is the
# **attention pattern**: row $i$ says how much token $i$ takes from its own value and from each earlier token's.

# %% slide={"code": [1, [7, 8]], "output": [[1, 7], -1]}
pattern = t.probs[0, head]  # [S, S]
print(" " * 10 + "".join(f"{label[:5]:>6}" for label in labels))
for i in range(S):
    print(f"{names[i]:<10}" + "".join(f"{float(x):>6.2f}" if mask[i, j] else "     ·"
                                        for j, x in enumerate(pattern[i])))
assert torch.allclose(pattern.float().sum(-1), torch.ones(S, device=lm.device), atol=tol.rtol)
prev = torch.stack([pattern[i, i - 1] for i in range(1, S)])
print(viz.tr("mean attention on the previous token: {mean:.3f}", mean=float(prev.mean())))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["In all rows but"]}
# In all rows but row 0 (nothing before it) and the `.` (which looks at itself) the largest weight sits one
# place left of the diagonal: head 2 of layer 1 is a **previous-token head**. It copies information about token $i - 1$ into
# token $i$'s vector, so that later layers can ask "which token came before me?" (3.6 shows a head in a later layer that seems to use it).
#
# ## 3.4 One head by hand
#
# The trace gives us the queries, keys and values of every token (queries and keys after RoPE). From them, one head's
# attention is five lines. Head 2 reads KV head $\lfloor 2/3 \rfloor = 0$.

# %% slide={"code": [[1, 5], [7, 11], [13, 15]]}
d = cfg.head_dim
kv_head = head // cfg.n_groups
q_h = t.q[0, head]  # [S, d]
k_h = t.k[0, kv_head]  # [S, d]
v_h = t.v[0, kv_head]  # [S, d]

my_scores = q_h @ k_h.T / math.sqrt(d)  # [S, S]: every query against every key
causal = torch.tril(torch.ones(S, S, dtype=torch.bool, device=lm.device))  # [S, S]: key j ≤ query i
my_scores = my_scores.masked_fill(~causal, float("-inf"))
my_probs = torch.softmax(my_scores, dim=-1)  # [S, S]
my_out = my_probs @ v_h  # [S, d]: this head's output for every token

torch.testing.assert_close(my_scores, t.scores[0, head])
torch.testing.assert_close(my_probs, t.probs[0, head])
print(viz.tr("scores and probabilities by hand = the trace's"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "All heads, through o_proj", "zh": "所有头经过 o_proj"}}
# The trace also keeps every head's output before the output projection, as `z`. So we check our head
# against `t.z`, and then check that `o_proj`, which mixes all 9 heads, gives the trace's `attn_out`:

# %% slide={"code": [[1, 2], [4, 7]]}
torch.testing.assert_close(my_out, t.z[0, head])  # [S, d]: the trace's copy of head 2's output
print(viz.tr("head 2's output by hand = the trace's z: {shape}", shape=tuple(my_out.shape)))

with torch.no_grad():
    concat = t.z.transpose(1, 2).reshape(1, S, cfg.n_heads * d)  # [1, S, n_h·d]: the heads side by side
    torch.testing.assert_close(attn.o_proj(concat), t.attn_out)
print(viz.tr("o_proj(all {n} heads) = the trace's attn_out: {shape}", n=cfg.n_heads, shape=tuple(t.attn_out.shape)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3.5 Only the last row of the logits is needed
#
# `lm.forward` projects **every** position through the LM head and returns `[1, S, V]`. Row $i$ holds the
# model's prediction for token $i + 1$. During prefill an engine needs only the prediction after the
# **last** prompt token, so `lm.prefill` returns that row alone. The two agree:

# %%
print("lm.forward:", tuple(full_logits.shape), "  lm.prefill:", tuple(logits.shape))
assert (full_logits[0, -1] - logits[0]).abs().max() < tol.logits
assert tol.same_choice(full_logits[0, -1], logits[0])
print(viz.tr("last row of forward = prefill's logits (within {tol})", tol=tol.text("logits")))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the other rows predict", "zh": "其余各行预测了什么"}}
# The other rows are the predictions for tokens we already have. They are what training uses (every
# position is a training example), but generation has no use for them:

# %% slide={"output": [[1, 6], [-3, -1]]}
print(viz.tr("pos  token      model predicts next  actual next"))
for i in range(S):
    guess = tok.token_text(int(full_logits[0, i].argmax()))
    actual = repr(tok.token_text(ids[i + 1])) if i + 1 < S else viz.tr("(to generate)")
    print(f"{i:>3}  {names[i]:<11}{guess!r:<21}{actual}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What skipping the other rows saves", "zh": "跳过其余各行省下多少"}, "say": true}
# After the first sentence, the model predicts the words of the second that repeat the first (` capital`,
# ` of`, ` is`): it has seen the pattern once. It misses only what it could not know: after the full stop it
# predicts a new line, not ` The`, and after ` of` it copies the first sentence, ` France`, not ` Italy`. How much
# work does skipping the other rows save? The LM head is a [576 × 49,152] matrix, $2hV$ FLOPs per position it
# projects. `tl.cost` counts the matmul FLOPs of both calls:

# %% slide={"code": [[3, 5]], "output": [[1, 5]]}
lengths = (S, 128, 1000, 2048, cfg.max_position_embeddings)
share = {}
for n_tokens in lengths:
    engine = tl.cost.prefill_flops(cfg, n_tokens)  # LM head on the last position only, as lm.prefill
    every = tl.cost.prefill_flops(cfg, n_tokens, all_positions=True)  # on every position, as lm.forward
    saved = every.total - engine.total
    share[n_tokens] = saved / every.total
    print(viz.tr("prompt of {n:>5} tokens: LM head {every:8.2f} → {engine:.3f} GFLOP; saves {saved:8.2f} GFLOP = "
                 "{share:.0%} of forward's work (attention is {attention:.0%})", n=n_tokens, every=every.lm_head / 1e9,
                 engine=engine.lm_head / 1e9, saved=saved / 1e9, share=share[n_tokens],
                 attention=every.attention_fraction))
print(viz.tr("one position through the LM head: 2·h·V = {flops:,} FLOPs", flops=2 * cfg.hidden_size * cfg.vocab_size))
assert share[S] > 0.15 and share[cfg.max_position_embeddings] < 0.1  # the share at the longest context is far below ours

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["For this small"]}
# For this small model the vocabulary is large compared with the layers, so the LM head is a big share of
# a full forward pass: for short prompts, projecting one row instead of all of them removes about a fifth
# of the work (19% at 12 tokens, 17% at 1,000). The share is not fixed, though. The LM head and the
# layers' weight matmuls grow in proportion to the prompt, but attention compares every token with every
# earlier one and grows with its square: at 2,048 tokens the saving is down to 14%, and at the model's
# longest context, 8,192 tokens, attention is 68% of the work and the saving is 7%. Chapter 10 counts
# these costs in detail.
#
# ## 3.6 Seeing attention
#
# `capture_attention` runs a traced prefill and keeps every layer's attention probabilities;
# `attention_figure` draws one query head beside the two heads that share its KV head. Rows are queries,
# columns keys; the grey upper triangle is what the causal mask hides. First, the previous-token head of
# 3.3 and its group:

# %% slide={"code": false}
capture = capture_attention(lm, ids, n_decode=0, labels_of=labeller(tok))
attention_figure(capture, layer=1, head=2)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Layer 18: an attention sink", "zh": "第 18 层：注意力汇聚点"}, "say": true}
# The three heads read the same keys and values but have their own queries, so their patterns differ:
# head 2 looks at the previous token. In the first sentence head 1 splits its weight between the token itself
# and the one before, and head 0 spreads its weight over the token itself, the one before and the first token;
# from the full stop on, `.` takes a large share (in head 1, the largest in every row
# after it). Deeper in the model the patterns change. In layer 18, heads 7 and 8 send almost all their
# attention to the **first token**, whatever the query (an "attention sink": a head with nothing useful to
# read parks its weight there; the first token's huge vector in 3.2 goes with it). Head 6 does the same in
# the first sentence and less in the second; from the final ` is` it looks back at ` Paris`, the answer in the
# earlier sentence with the same pattern.

# %% slide={"code": false}
attention_figure(capture, layer=18, head=8)

# %% slide={"title": {"en": "How much goes to the first token", "zh": "有多少注意力落在第一个 token 上"}}
sink = capture.probs[18][7:9, 1:, 0]  # heads 7 and 8, every query after the first, key 0
print(viz.tr("layer 18, heads 7–8: mean attention on the first token {mean:.3f}", mean=float(sink.mean())))
print(viz.tr("layer 18, head 6: the last token ' is' → ' Paris' {p:.3f}", p=float(capture.probs[18][6, S - 1, 5])))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The attention explorer", "zh": "注意力探索器"}, "say": true}
# The explorer below shows the same data for any layer and head: choose them in the two menus, **layer** and
# **head**. It opens on
# the previous-token head. Look for heads that attend to themselves (the diagonal), to the first token,
# or to the token after an earlier copy of the current one.

# %% slide={"code": [1, 3]}
explorer = AttentionExplorer(lm, prompt, n_decode=0)
explorer.layer.value, explorer.head.value = 1, 2
explorer

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["teachllm's real code"]}
# ## 3.7 The course notes' prefill sketch and teachllm's code *(optional)*
#
# *LLM Generation Process* §2.3 sketches prefill like this (abridged: comments translated; blank lines, ellipses and
# most comments that only name a step dropped; the docstring joined into one line; the rest merged and, where a
# code line follows, moved to its end):
#
# ```python
# def prefill(model, input_ids, kv_cache):
#     """input_ids: [batch_size, seq_len]"""
#     batch_size, seq_len = input_ids.shape
#     hidden_states = model.embed_tokens(input_ids)  # [batch, seq, hidden]
#     for layer_idx, layer in enumerate(model.layers):  # every layer
#         q = layer.q_proj(hidden_states)
#         k = layer.k_proj(hidden_states)
#         v = layer.v_proj(hidden_states)
#         kv_cache.update(layer_idx, k, v)  # store in the KV cache
#         # self-attention (all K and V, causal mask)
#         # FFN
#     logits = model.lm_head(hidden_states)
#     return logits[:, -1, :]  # only the last position predicts the next token: [batch, vocab_size]
# ```
#
# teachllm's real code has the same outline. `lm.prefill` checks its input and calls the model with
# `last_only=True` (the 4-bit model of section 10.13 takes a shortcut here, `teachllm.fastpath.fused`: the same pass in
# fewer operations):

# %% slide={"title": {"en": "teachllm's prefill", "zh": "teachllm 的 prefill"}, "output": [1, 2, [8, 13]]}
print(inspect.getsource(tl.LanguageModel.prefill))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The model's forward", "zh": "模型的 forward"}, "say": true}
# and the model's `forward` is the sketch's loop over the layers, written out in full (`lm.step_through`
# walks the same steps, with a stop after each):

# %% slide={"output": [[4, 6], [9, 14], 19]}
print(inspect.getsource(Transformer.forward))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The sketch against teachllm", "zh": "课程资料的草图与 teachllm 对照"}, "say": ["After each exercise,", "Worked answers are", "Work in the cells"]}
# | the course notes' sketch | teachllm | difference |
# | --- | --- | --- |
# | `model.embed_tokens(input_ids)` | `self.embed_tokens(ids)` | same |
# | (positions not shown) | `self.prepare(S, B, cache)`: positions, RoPE angles, the causal mask | Llama rotates q and k by position (RoPE) instead of adding a position vector |
# | `layer.q_proj(hidden_states)` … | `layer(x, rope, mask, cache, trace)` | the layer first applies RMSNorm, then RoPE to q and k, and adds its outputs to the residual stream |
# | `kv_cache.update(layer_idx, k, v)` | `cache.write(self.index, k, v)` inside the attention, then `cache.advance(S)` after the LM head | the cache stores K after RoPE (chapter 4), and counts the new tokens once every layer has written them |
# | `model.lm_head(hidden_states)` then `[:, -1, :]` | `self.norm(x)`, `x[:, -1:]`, then `self.lm_head(x)` | a final RMSNorm; the last row is taken *before* the LM head, which saves the work of 3.5 |
#
# ## Summary
# - A forward pass ends in logits `[batch, positions, V]`; a decoding strategy turns the last row into a
#   token. The model itself never picks a token.
# - Prefill sends all prompt tokens through every stage together. The residual stream keeps the shape
#   `[B, S, h]` through all 30 layers; each layer adds an attention output and an MLP output to it.
# - Attention in one head: $\text{scores} = qk^\top/\sqrt{d}$, −inf above the diagonal (causal mask), softmax,
#   then ·V.
#   Here 9 query heads share 3 KV heads (grouped-query attention), so K and V are 3 times smaller than Q.
# - Only the last position's logits are needed to choose the next token; projecting just that row cuts the
#   LM head's work by a factor of S.
#
# ## Exercises
# 1. In which layer does ` Rome` become the model's answer? Apply the final norm and the LM head
#    (`lm.model.norm`, `lm.model.lm_head`) to the last token's vector after every layer: write
#    `logit_lens(lm, ids)`, the top token id after each layer, print those tokens for our prompt, and set
#    `rome_layer` to the first layer (counting from 0, as in `lm.model.layers[i]`) from which the top token is
#    always ` Rome`.
# 2. Is head 2 of layer 1 a previous-token head only on sensible text? Write
#    `previous_token_attention(lm, ids, layer, head)`, the mean attention each query (from position 1 on) puts on
#    the token just before it, measure it for 24 random token ids (use a `torch.Generator` with a fixed
#    random seed), and set `previous_token_head_on_random_ids` to True or False (is the mean above 0.5?).
# 3. Replace ` Italy` by ` Spain` in the prompt. Which rows of the logits change, and why? Write
#    `rows_that_change(ids_a, ids_b)`, which predicts *without running the model* the rows that differ between
#    two prompts of the same length, then check it against `lm.forward`. (Chapter 4 builds on the answer.)
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Worked answers are in the repository, in `notebooks/solutions/ch03.py` (in JupyterLab: `solutions/ch03.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.
#
# Work in the cells below, one per exercise.

# %% tags=["check"] slideshow={"slide_type": "skip"}
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: a logit lens: the top token after every layer.
def logit_lens(lm, ids):
    # the top token id after each decoder layer, at the last position: the final norm and the LM head applied
    # to that layer's output; one id per layer
    ...  # your code


rome_layer = None  # the first layer (0-based) from which the top token is always " Rome" for our prompt

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch03-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: is head 2 of layer 1 a previous-token head on random tokens too?
def previous_token_attention(lm, ids, layer, head):
    # the mean attention weight that each query, from position 1 on, puts on the token just before it, in this
    # layer and head, for a prefill of ids
    ...  # your code


previous_token_head_on_random_ids = None  # True or False

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch03-ex2")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 3: replace " Italy" by " Spain": which rows of the logits change?
def rows_that_change(ids_a, ids_b):
    # without running the model: the positions whose row of logits differs between two prompts of the same length,
    # as a sorted list
    ...  # your code

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch03-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(3)
