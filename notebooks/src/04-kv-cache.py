# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 4 · The KV cache
#
# **What you will see.** The derivation of the KV cache in Lecture 11, redone with numbers. We append one token
# to a prompt, recompute everything, and compare row by row: every row that existed before comes out the
# same, and only the new token's row is new. That new row needs the new token's query and *every* token's
# keys and values. So an engine keeps K and V — the **KV cache** — and never Q. Then we open teachllm's
# cache, measure it against the formula, and check that generating with it gives the same logits as
# recomputing everything.
#
# **What you will learn.**
# - Which rows of $QK^\top$, of the attention output and of the logits change when a token is appended, and why
#   that makes caching possible at all (the causal mask).
# - Why K and V are cached and Q is not.
# - The cache size, $2 \cdot L \cdot n_{kv} \cdot d \cdot \text{tokens} \cdot \text{bytes per element}$:
#   46,080 bytes per token for this model; what grouped-query attention saves; the same formula for Llama-2-7B.
# - How a preallocated, contiguous cache is laid out, and how much of it is used.
# - That cached decoding reproduces the uncached forward pass, and how much work it saves.

# %% slide={"code": false}
import dataclasses
import inspect

import torch

import teachllm as tl
from teachllm import viz
from teachllm.viz import CacheGrowthView, cache_growth_figure
from teachllm.viz.data import cache_point
from teachllm.words import display_width

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer
tol = tl.tolerance(lm.dtype)  # how far two computations of the same numbers may differ in this dtype
cfg = lm.config
L = cfg.n_layers

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4.1 Append one token: what changes?
#
# The lecture asks: generating the second "next token" means running the model on $s + 1$ tokens after
# running it on $s$. Is all of that work new? We run the uncached forward pass twice with a `tl.Trace`:
# on the prompt (S = 12 tokens), and on the prompt plus the token the model chose (13 tokens).

# %%
prompt = "The capital of France is Paris. The capital of Italy is"
ids = tok.encode(prompt)
S = len(ids)
short_trace, long_trace = tl.Trace(), tl.Trace()
short_logits = lm.forward(ids, trace=short_trace)  # [1, S, V]
next_id = int(short_logits[0, -1].argmax())
longer = ids + [next_id]
long_logits = lm.forward(longer, trace=long_trace)  # [1, S + 1, V]
print(viz.tr("S = {S} tokens, then {n}: the model appended {token!r}", S=S, n=S + 1, token=tok.token_text(next_id)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Old rows against new rows, capture by capture", "zh": "逐个张量对比旧行与新行"}, "say": true}
# Now compare the two runs, capture by capture. For every tensor we ask: are rows 0 … 11 (the old tokens)
# the same in both runs? For the attention scores and probabilities, a row is a query and a column a key;
# the 13-token run also has a new **column** (key 12) in the old rows.

# %% slide={"code": [9, 11, 13], "output": [[1, 3], [6, 12]]}
def same(a, b, atol=tol.logits):
    """Equal up to rounding in the model's dtype (`tol`: relative 1e-5, absolute `atol` = 1e-4 in float32);
    −inf entries must match exactly."""
    finite_a, finite_b = a.nan_to_num(0, 0, 0), b.nan_to_num(0, 0, 0)
    return bool(torch.equal(a.isinf(), b.isinf()) and torch.allclose(finite_a, finite_b, rtol=tol.rtol, atol=atol))


layer, head = 1, 2
a, b = short_trace.layers[layer], long_trace.layers[layer]
print(viz.tr("layer {layer}: capture   shape with 12 → 13 tokens           old rows the same?", layer=layer))
for name in ("resid_in", "attn_out", "mlp_out", "resid_out"):  # [B, S, h]: rows on dim 1
    x, y = getattr(a, name), getattr(b, name)
    print(f"{'':>9}{name:<10}{str(tuple(x.shape)) + ' → ' + str(tuple(y.shape)):<36}{same(x, y[:, :S])}")
for name in ("q", "k", "v"):  # [B, heads, S, d]: rows on dim 2
    x, y = getattr(a, name), getattr(b, name)
    print(f"{'':>9}{name:<10}{str(tuple(x.shape)) + ' → ' + str(tuple(y.shape)):<36}{same(x, y[:, :, :S])}")
for name in ("scores", "probs"):  # [B, n_h, S, T]: old rows, old columns
    x, y = getattr(a, name), getattr(b, name)
    print(f"{'':>9}{name:<10}{str(tuple(x.shape)) + ' → ' + str(tuple(y.shape)):<36}{same(x, y[:, :, :S, :S])}")
print(f"{'':>9}{'logits':<10}{str(tuple(short_logits.shape)) + ' → ' + str(tuple(long_logits.shape)):<36}"
      f"{same(short_logits, long_logits[:, :S], atol=tol.steps)}")
print(viz.tr("new column (key 12) in the old rows: scores all -inf: {inf} | probs all 0: {zero}",
             inf=bool(b.scores[0, :, :S, S].isinf().all()), zero=bool((b.probs[0, :, :S, S] == 0).all())))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Head 2 of layer 1, key by key", "zh": "第 1 层 2 号头，逐个键对比"}, "say": ["Every old row"]}
# Every old row is the same. ("The same" means equal up to float32 rounding, within the tolerance the check
# above uses: the two runs multiply matrices of different sizes, so the sums are added in a slightly different
# order.)
#
# The same picture as the lecture's lower-triangular $QK^\top$ (slide “回顾 Self-attn 中的计算过程”), for head 2 of
# layer 1: `=` marks an entry that
# is the same as in the 12-token run, `N` a new entry, `·` an entry the causal mask hides.

# %% slide={"code": [[1, 3], 12], "output": [[1, 4], [-3, -1]]}
x, y = a.scores[0, head], b.scores[0, head]  # [12, 12], [13, 13]
print(viz.pad(viz.tr("key →"), 9) + "".join(f"{j:>3}" for j in range(S + 1)))
for i in range(S + 1):
    marks = []
    for j in range(S + 1):
        if y[i, j].isinf():
            marks.append("·")
        elif i < S and j < S and same(x[i, j], y[i, j]):
            marks.append("=")
        else:
            marks.append("N")
    print(viz.pad(viz.tr("query {i:>2}", i=i), 9) + "".join(f"{m:>3}" for m in marks))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "All 30 layers", "zh": "全部 30 层"}}
# Only the last row is new. It is not a coincidence of one layer: the check below runs over all 30 layers
# and every tensor the trace captures (the table above showed most of them; the check adds each head's output
# `z` and `resid_mid`).

# %%
rows_on = {"resid_in": 1, "attn_out": 1, "resid_mid": 1, "mlp_out": 1, "resid_out": 1,  # [B, S, h]
           "q": 2, "k": 2, "v": 2, "z": 2, "scores": 2, "probs": 2}  # [B, heads, S, ·]: the dim the rows are on
assert set(rows_on) == {f.name for f in dataclasses.fields(tl.LayerTrace)}  # every capture, none left out
for x, y in zip(short_trace.layers, long_trace.layers, strict=True):
    for name, dim in rows_on.items():
        old = getattr(y, name).narrow(dim, 0, S)  # the old tokens' rows
        if name in ("scores", "probs"):
            old = old[..., :S]  # and the old keys' columns
        assert same(getattr(x, name), old)
print(viz.tr("all {L} layers: every value of the 12 old tokens is unchanged by the 13th", L=L))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the new row needs", "zh": "新的一行需要什么"}, "say": ["Why: the causal"]}
# Why: the causal mask. Token $i$ reads only tokens $0, \dots, i$, in every layer, so nothing that comes after it
# can change anything computed for it. That is the property that makes a cache correct: what was computed
# for old tokens stays valid forever. (A model whose tokens could see the future, such as BERT, would have
# to recompute everything.)
#
# **What the new row needs.** Follow the lecture's shapes. The logits for the next token come from the last
# row only; in every layer that row is
#
# $$
# \underbrace{q_{\text{new}}}_{[1,\ d]}\;
# \underbrace{[k_0 \dots k_{\text{new}}]^\top}_{[d,\ S+1]}
# \;\to\; \underbrace{\text{scores}}_{[1,\ S+1]}
# \;\to\; \operatorname{softmax}
# \;\to\; \cdot\, \underbrace{[v_0 \dots v_{\text{new}}]}_{[S+1,\ d]}
# \;\to\; [1,\ d]
# $$
#
# It needs the **new** token's query and the keys and values of **all** tokens. The old tokens' keys and
# values are those of the 12-token run, up to rounding (checked above), so the new row can be built from the
# short run's K and V plus the new token's own k and v. We do it for head 2 of layer 1:

# %% slide={"title": {"en": "The new row from the old K and V", "zh": "用旧的 K、V 算出新的一行"}}
g = cfg.n_groups
kv_head = head // g
k_old, v_old = a.k[0, kv_head], a.v[0, kv_head]  # [S, d]: what a cache would hold after the 12-token run
q_new = b.q[0, head, S:]  # [1, d]: the new token's query
k_new, v_new = b.k[0, kv_head, S:], b.v[0, kv_head, S:]  # [1, d] each
keys = torch.cat([k_old, k_new])  # [S + 1, d]
values = torch.cat([v_old, v_new])  # [S + 1, d]
row = torch.softmax(q_new @ keys.T / cfg.head_dim ** 0.5, dim=-1)  # [1, S + 1]: no mask, it may see all
torch.testing.assert_close(row, b.probs[0, head, S:])
torch.testing.assert_close(row @ values, b.z[0, head, S:], atol=tol.values, rtol=tol.rtol)  # [1, d]: the head's output
print(viz.tr("new rows of the attention pattern and of the head's output from old K, V + the new token's q, k, v "
             "= the 13-token run's"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the lecture concludes", "zh": "第 11 讲的结论"}}
# So the lecture concludes (slide “LLM 自回归过程中的 kv 复用”) that only K and V are cached (“为K和V构建缓存”). The
# numbers above say why:
# - **Keep K and V** of every token, in every layer: each later token reads all of them.
# - **Never keep Q**: an old token's query served only its own row, which is finished. The new row needs
#   only the new token's query, which depends on the new token and is computed fresh.
# - **Do not keep the attention or MLP outputs** either. The lecture says they are updated by the norms and the
#   residual stream and cannot be reused; section 4.1 shows that the old tokens' outputs are in fact unchanged, but
#   nothing reads them again. The new token's attention output and MLP output depend on the new token, pass
#   through the norms and the residual stream into the next layer, and are computed fresh.
#
# ## 4.2 teachllm's KV cache
#
# The interview answer in the course notes (§5.1) sketches a cache as one preallocated, contiguous block
# (comments translated):
#
# ```python
# class KVCache:
#     def __init__(self, max_seq_len, batch_size):
#         # preallocate one contiguous block of memory
#         self.k_cache = torch.empty(...)
#         self.v_cache = torch.empty(...)
#
#     def append_kv(self, new_k, new_v):
#         # an efficient update strategy
#         pass
# ```
#
# teachllm's `KVCache` fills in the dots. It allocates K and V for all layers once, `[L, B, n_kv, max_len, d]`
# each, and a write copies the new tokens' K and V into the next free slots:

# %% slide={"title": {"en": "teachllm's KVCache", "zh": "teachllm 的 KVCache"}, "output": [[1, 2], [6, 8], 12, [18, 21]]}
print(inspect.getsource(tl.KVCache.__init__))
print(inspect.getsource(tl.KVCache.write))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "An empty cache, then a prefill", "zh": "先建空缓存，再预填充"}}
# An empty cache for 32 tokens, then a prefill of our 12:

# %%
cache = lm.new_cache(max_len=32)
print(cache)
prefill_trace = tl.Trace()
logits = lm.prefill(ids, cache, trace=prefill_trace)
print(cache)
print("cache.k:", tuple(cache.k.shape), "= [L, B, n_kv, max_len, d]")
print("cache.keys(1):", tuple(cache.keys(1).shape), viz.tr("= [B, n_kv, length, d]: the filled slots of layer 1"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The cache holds prefill's K and V", "zh": "缓存里就是预填充算出的 K 和 V"}}
# What the cache holds is exactly the K (after RoPE) and V each layer computed during prefill, and the same
# numbers the uncached 12-token run computed:

# %%
for i in range(L):
    assert torch.equal(cache.keys(i), prefill_trace.layers[i].k)
    assert torch.equal(cache.values(i), prefill_trace.layers[i].v)
    assert same(cache.keys(i), short_trace.layers[i].k) and same(cache.values(i), short_trace.layers[i].v)
print(viz.tr("all {L} layers: cache = prefill's K and V = the uncached run's K and V", L=L))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "One decode step writes slot 12", "zh": "一步解码写入 12 号槽位"}}
# One decode step feeds the chosen token, writes its K and V into slot 12, and moves `length` on by one.
# The numbers it writes are those of the 13-token uncached run (up to float32 rounding: one run multiplied
# a single row, the other 13 rows at once, and the sums come out in a different order):

# %%
decode_trace = tl.Trace()
lm.decode_step(next_id, cache, trace=decode_trace)
print(cache)
for i in range(L):
    assert torch.equal(cache.k[i, :, :, S], decode_trace.layers[i].k[:, :, 0])
    assert same(cache.keys(i), long_trace.layers[i].k) and same(cache.values(i), long_trace.layers[i].v)
print(viz.tr("slot 12 now holds the new token's K and V; all 13 slots = the 13-token run's K and V"))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["For SmolLM2-135M in"]}
# ## 4.3 How big is the cache?
#
# Per token, every layer keeps one key and one value vector per KV head:
#
# $$
# \text{bytes per token} = \underbrace{2}_{\text{K and V}} \cdot L \cdot n_{kv} \cdot d \cdot \text{bytes per element}
# $$
#
# For SmolLM2-135M in float32 that is 2 · 30 · 3 · 64 · 4. The cache's own count and `tl.cost.kv_cache_bytes`
# must agree with the formula, and with the tensors' real sizes:

# %% slide={"code": [1, 4]}
per_token = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * cache.k.element_size()
print(viz.tr("2 · {L} · {n_kv} · {d} · {size} bytes = {per_token:,} bytes per token", L=cfg.n_layers,
             n_kv=cfg.n_kv_heads, d=cfg.head_dim, size=cache.k.element_size(), per_token=per_token))
assert per_token == cache.bytes_per_token == tl.cost.kv_cache_bytes(lm, 1)  # lm: counted in the model's own dtype
assert tl.cost.kv_cache_bytes(cfg, 1, dtype="float32") == 46_080  # in float32, whatever this machine runs

assert cache.bytes_used == cache.length * per_token == tl.cost.kv_cache_bytes(lm, cache.length)
assert cache.bytes_used == sum(cache.keys(i).nbytes + cache.values(i).nbytes for i in range(L))
assert cache.bytes_allocated == cache.max_len * per_token == cache.k.nbytes + cache.v.nbytes
print(viz.tr("used:      {n:>2} tokens × {per_token:,} = {used:>9,} bytes", n=cache.length, per_token=per_token,
             used=cache.bytes_used))
print(viz.tr("allocated: {n:>2} slots  × {per_token:,} = {allocated:>9,} bytes ({share:.0%} in use)", n=cache.max_len,
             per_token=per_token, allocated=cache.bytes_allocated, share=cache.bytes_used / cache.bytes_allocated))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The whole context: cache against weights", "zh": "整个上下文：缓存与权重"}}
# A contiguous cache reserves `max_len` slots up front, used or not; chapter 12's paged cache reserves
# memory in small blocks as the sequence grows. At the model's full context of 8,192 tokens, the cache of
# one sequence is 377 MB in float32, about seven tenths of the 538 MB of the weights themselves (in bfloat16, as on a GPU,
# both are half as large):

# %%
full = tl.cost.kv_cache_bytes(lm, cfg.max_position_embeddings)
weights = tl.cost.weight_bytes(lm)
print(viz.tr("KV cache at {n:,} tokens: {cache:.0f} MB; weights: {weights:.0f} MB (both in {dtype})",
             n=cfg.max_position_embeddings, cache=full / 1e6, weights=weights / 1e6,
             dtype=str(lm.dtype).removeprefix("torch.")))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **The cache counts tokens, not characters.** The first sentence of the English paragraph the chapters
# measure with (`tl.texts.ENGLISH`) and our Chinese translation of it, cut by this model's tokenizer, with
# the cache each needs:

# %%
sentence = {"English": "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
                       "combined movable metal type, oil-based ink and a wooden screw press adapted from wine making.",
            "Chinese": "印刷机的历史始于十五世纪：约翰内斯·古腾堡把金属活字、油性墨水和一台由榨酒机改造而来的"
                       "木制螺旋压力机结合在了一起。"}  # the same sentence, translated by us
assert tl.texts.ENGLISH.startswith(sentence["English"])
n_tokens = {name: len(tok.encode(text)) for name, text in sentence.items()}
for name, text in sentence.items():
    print(viz.tr("{name}: {chars} characters, {tokens} tokens, {mb:.2f} MB of cache", name=viz.tr(name),
                 chars=len(text), tokens=n_tokens[name], mb=tl.cost.kv_cache_bytes(lm, n_tokens[name]) / 1e6))
print(viz.tr("Chinese ÷ English: {ratio:.1f}× the tokens, and so the cache", ratio=n_tokens["Chinese"] / n_tokens["English"]))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same sentence needs 3.3 times the cache in Chinese. This tokenizer has few merges for Chinese: the 57
# characters take 113 tokens, about two each (byte-level pieces, chapter 2), and the cache grows by one slot per
# token whatever the token holds. A context window of 8,192 tokens therefore holds far less Chinese text than
# English. How many tokens a sentence takes depends on the tokenizer: the cell counts them for the model that is
# loaded, so with another checkpoint (`TEACHLLM_MODEL`, the last section of the lecturer's guide) it prints that
# model's count.

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What grouped-query attention saves", "zh": "分组查询注意力省下多少"}}
# **What grouped-query attention saves.** The cache stores $n_{kv}$ heads, not $n_h$. With one KV head per query
# head (plain multi-head attention, $n_{kv} = 9$) it would be three times larger; with a single KV head
# (multi-query attention) three times smaller:

# %%
for name, n_kv in ((viz.tr("multi-head (n_kv = n_h)"), 9), (viz.tr("grouped-query, SmolLM2"), 3),
                   (viz.tr("multi-query"), 1)):
    variant = dataclasses.replace(cfg, n_kv_heads=n_kv)
    print(viz.pad(name, 26), viz.tr("n_kv = {n_kv}: {size:>7,} bytes per token", n_kv=n_kv,
                                    size=tl.cost.kv_cache_bytes(variant, 1, dtype=lm.dtype)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "A larger model", "zh": "更大的模型"}, "say": true}
# **A larger model.** Llama-2-7B has 32 layers, 32 KV heads (no GQA) of dimension 128, and runs in fp16.
# We build its `ModelConfig` from those numbers and let the same formula count. Llama-2-70B, with GQA
# (8 KV heads for 64 query heads), needs less cache per token than the 7B model:

# %% slide={"code": [[6, 9]]}
llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
llama2_70b = tl.ModelConfig(vocab_size=32000, hidden_size=8192, intermediate_size=28672, n_layers=80, n_heads=64,
                            n_kv_heads=8, head_dim=128, max_position_embeddings=4096)
print(viz.tr("model                    L  n_kv    d   per token  4,096 tokens   weights"))
for name, c, dtype in (("SmolLM2-135M, fp32", cfg, "float32"), ("Llama-2-7B, fp16", llama2_7b, "float16"),
                       ("Llama-2-70B, fp16", llama2_70b, "float16")):
    one = tl.cost.kv_cache_bytes(c, 1, dtype=dtype)
    ctx = tl.cost.kv_cache_bytes(c, 4096, dtype=dtype)
    print(f"{name:<22}{c.n_layers:>4}{c.n_kv_heads:>6}{c.head_dim:>5}  {one / 2**20:>6.3f} MiB{ctx / 2**30:>10.2f} GiB"
          f"{tl.cost.weight_bytes(c, dtype) / 1e9:>8.1f} GB")
assert tl.cost.kv_cache_bytes(llama2_7b, 1, dtype="float16") == 2**19  # 0.5 MiB per token
assert 32 * tl.cost.kv_cache_bytes(llama2_7b, 4096, dtype="float16") == 64 * 2**30  # a batch of 32: 64 GiB

# %% [markdown] slideshow={"slide_type": "subslide"}
# Half a MiB per token: one 4,096-token conversation with Llama-2-7B holds 2 GiB of cache, and a batch of
# 32 such conversations 64 GiB, about five times the 13.5 GB of weights. This is why serving engines
# manage the KV cache so carefully (chapters 11 and 12) and why newer models use GQA.
#
# ## 4.4 Cached = uncached
#
# The cache is only worth having if it changes nothing. Generate 8 tokens greedily with prefill and decode
# steps, then run `lm.forward` once over the prompt plus those tokens, with no cache. Row $S - 1 + i$ of the
# uncached logits predicts the same token as step $i$ (step 0 is the prefill):

# %% slide={"title": {"en": "Eight steps, cached and uncached", "zh": "八步生成：有缓存与无缓存"}, "code": [[3, 8], 10], "output": [[1, 4], [-3, -1]]}
n_new = 8
cache = lm.new_cache(max_len=S + n_new)
step_logits = [lm.prefill(ids, cache)[0]]  # [V] after the prompt
generated = []
for _ in range(n_new):
    generated.append(int(step_logits[-1].argmax()))
    if len(generated) < n_new:
        step_logits.append(lm.decode_step(generated[-1], cache)[0])  # [V]

full_logits = lm.forward(ids + generated[:-1])[0]  # [S + n_new - 1, V]: every position, no cache
print(viz.tr("step  token        same argmax  |cached - uncached| < {bound}", bound=tol.text("steps")))
for i, cached in enumerate(step_logits):
    uncached = full_logits[S - 1 + i]
    same_token = int(uncached.argmax()) == int(cached.argmax()) == generated[i]
    close = float((uncached - cached).abs().max()) < tol.steps
    assert close and (same_token or tol.same_choice(uncached, cached, "steps"))  # or a near-tie, in 16 bits
    print(f"{i:>4}  {tok.token_text(generated[i])!r:<12}{str(same_token):>12}{str(close):>28}")
print(viz.tr("generated: {text!r}", text=tok.decode(generated)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "How much work the cache saves", "zh": "缓存省下多少计算"}, "say": ["(The two paths"]}
# (The two paths add the same numbers in a different order, so the logits differ in the last bits of
# float32, never by more than the tolerance. teachllm's tests run this check on the bundled model at batch 1
# and batch 3, and compare prefill plus decode with transformers' forward pass on a tiny random checkpoint of
# every supported model family, at batch 2.)
#
# **How much work does the cache save?** Without it, the model would rerun the whole sequence for every new
# token: the lecture's quadratic cost (“平方级别的开销”). `tl.cost` counts the matmul FLOPs of both ways of
# generating 100 tokens:

# %% slide={"code": [[1, 5]]}
for prompt_len in (S, 1000):
    n = 100
    without = sum(tl.cost.prefill_flops(cfg, prompt_len + k).total for k in range(n))  # rerun everything
    with_cache = tl.cost.prefill_flops(cfg, prompt_len).total + sum(
        tl.cost.decode_flops(cfg, prompt_len + k).total for k in range(1, n))  # one prefill, then one token
    print(viz.tr("prompt {prompt:>4}, {n} new tokens: without a cache {without:6.2f} TFLOP, with it {cached:6.3f} "
                 "TFLOP ({ratio:4.1f}× less)", prompt=prompt_len, n=n, without=without / 1e12,
                 cached=with_cache / 1e12, ratio=without / with_cache))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "FLOPs are not time", "zh": "FLOPs 不等于时间"}, "say": ["The cost of the"]}
# The cost of the cache is memory (4.3); the gain grows with the prompt, because without the cache every
# step repeats the whole prompt.
#
# **FLOPs are not time.** Does the cache make each step that many times faster, then? Take the sequence
# of the check above (the prompt and the tokens generated after it) and the step that adds one more
# token: without a cache the model reruns every token, with it only the new one. `tl.cost` counts the
# FLOPs of both, and also the bytes each call has to move: every weight of the model, read once, plus
# the K and V it reads and writes.

# %% slide={"code": [[3, 4]]}
seq = ids + generated  # the whole sequence so far
T = len(seq)
redo = tl.cost.prefill_cost(lm, T)  # no cache: the whole sequence again
step = tl.cost.decode_cost(lm, T)  # with the cache: one new token against T keys
for name, c in ((viz.tr("without a cache"), redo), (viz.tr("with the cache"), step)):
    print(viz.tr("{name} {flops:6.3f} GFLOP, {mb:5.1f} MB moved", name=viz.pad(name, 16), flops=c.flops / 1e9,
                 mb=c.bytes / 1e6))
print(viz.tr("ratio: {flops:.1f}× the FLOPs, {bytes:.2f}× the bytes", flops=redo.flops / step.flops,
             bytes=redo.bytes / step.bytes))
print(viz.tr("of which the weights: {mb:.1f} MB in both", mb=step.weight_bytes / 1e6))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Timed on this machine", "zh": "在这台机器上计时"}}
# 16.0× the arithmetic, but almost the same bytes (1.00×): both calls read every weight of the model
# once (538.1 MB in float32), and that is nearly all the traffic. Which of the two ratios does the running
# time follow? The next cell times both calls (the median of five runs; the exact times depend on the machine,
# so its output is not checked):

# %% slide={"code": [[12, 16]]}
# NBVAL_IGNORE_OUTPUT
decode_cache = lm.new_cache(max_len=T)
lm.prefill(seq[:-1], decode_cache)


def one_cached_step():
    decode_cache.reset()
    decode_cache.advance(T - 1)  # the first T − 1 tokens are cached
    lm.decode_step(seq[-1], decode_cache)


t_redo = tl.timing.timed(lambda: lm.prefill(seq, lm.new_cache(max_len=T)), lm.device, reps=5)
t_step = tl.timing.timed(one_cached_step, lm.device, reps=5)
time_ratio, flop_ratio, byte_ratio = t_redo / t_step, redo.flops / step.flops, redo.bytes / step.bytes
print(viz.tr("without a cache {redo:.0f} ms, with it {step:.0f} ms: {time:.1f}× the time for {flops:.1f}× the FLOPs",
             redo=t_redo * 1e3, step=t_step * 1e3, time=time_ratio, flops=flop_ratio))
if time_ratio < 1:
    print(viz.tr("this timing was disturbed (the cached step came out slower): run the cell again"))
elif abs(time_ratio - byte_ratio) < abs(time_ratio - flop_ratio):
    print(viz.tr("on this machine the time ratio is nearer the bytes ratio"))
else:
    print(viz.tr("on this machine the time ratio is nearer the FLOP ratio"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["Where the time", "`cache_point` reads a"]}
# Where the time ratio lands tells you what limits this machine at this length; the cell above prints which.
# Near the bytes ratio, a step is mostly **memory-bound**: the processor spends most of its time waiting
# for the weights to arrive from memory, and most of the extra arithmetic of rerunning the earlier tokens
# hides in that wait. Then, for a short chat, the cache speeds a step up far less than the FLOP ratio suggests.
# Near the FLOP ratio,
# the arithmetic itself is the limit: this processor needs longer for the rerun's work than for one read of
# the weights. Either way the cache matters more as the sequence grows: the rerun's FLOPs grow with every
# token, and sooner or later compute, not memory, is the limit (the FLOP count earlier in 4.4 shows the ratio
# without to with the cache growing with the prompt).
# Chapter 10 draws this as a roofline.
#
# ## 4.5 Watching the cache grow
#
# `cache_point` reads a cache after each step of the generation loop: its own byte count, the formula's,
# and each layer's tensors. `cache_growth_figure` draws them. The loop allocates $S$ + `max_tokens` slots up
# front (the flat "contiguous: allocated" line); the used bytes climb by 46,080 per step towards it.

# %% slide={"code": false}
params = tl.SamplingParams(temperature=0, max_tokens=12)
points = [cache_point(step.index, step.phase, step.cache) for step in tl.generation_steps(lm, [ids], params)]
phases = {"prefill": viz.tr("prefill"), "decode": viz.tr("decode")}
shown = points[:3] + points[-1:]
labels = [viz.tr("step {step:>2} ({phase}): ", step=p.step, phase=phases[p.phase]) for p in shown]
width = max(display_width(label) for label in labels)  # the columns after the labels line up
for label, p in zip(labels, shown, strict=True):
    print(viz.pad(label, width) + viz.tr("{n:>2} of {capacity} slots, {used:>9,} bytes = formula {formula:>9,}",
                                         n=p.length, capacity=p.capacity, used=p.bytes_used, formula=p.formula_bytes))
assert all(p.bytes_used == p.formula_bytes == p.length * per_token for p in points)
print(viz.tr("growth per step: {growth:,} bytes = one token's K and V",
             growth=points[1].bytes_used - points[0].bytes_used))
cache_growth_figure(points)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The same view as a widget", "zh": "同一视图的交互控件"}}
# The same view as a widget: press **next token** to run one decode step and watch the bars grow, or
# **run to the end**.

# %%
CacheGrowthView(lm, prompt, params)

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["After each exercise,", "Worked answers are", "Work in the cells"]}
# ## Summary
# - Appending a token leaves every old row unchanged — Q, K, V, scores, probabilities, outputs, logits —
#   because of the causal mask. Only the new token's row is new.
# - That row needs the new query and all keys and values. So the engine caches K and V of every token in
#   every layer, and computes Q (and the layer outputs) for the new token only.
# - $\text{cache size} = 2 \cdot L \cdot n_{kv} \cdot d \cdot \text{tokens} \cdot \text{bytes per element}$:
#   46,080 bytes per token here (fp32), 0.5 MiB for Llama-2-7B (fp16). GQA divides it by $n_h / n_{kv}$ (3 here).
# - teachllm's `KVCache` is preallocated and contiguous: `bytes_allocated` is fixed, `bytes_used` grows by
#   one token's worth per decode step.
# - Cached decoding gives the same tokens and (within 5e-4) the same logits as recomputing everything,
#   with far fewer FLOPs.
#
# ## Exercises
# 1. Write the generation loop without a cache, `generate_without_cache(lm, ids, n)`: at every step, run
#    `lm.forward` on the whole sequence and take the last row. Generate 12 tokens both ways. Are the tokens the
#    same? How much slower is it?
# 2. Prefill two prompts that share a beginning: `"The capital of France is Paris."` and our prompt. Are the
#    cached K and V of the shared tokens the same? Set `same_kv_for_shared_tokens` to True or False, and write
#    `reusable_prefix(ids_a, ids_b)`: how many of the first tokens of `ids_b` could reuse the K and V cached for
#    `ids_a`. What could a server do with that? (Chapter 12.)
# 3. Llama-2-7B in fp16 on an 80 GB GPU (80·10⁹ bytes): after the weights, how many tokens of KV cache fit? How
#    many would fit if it had 8 KV heads, as Llama-2-70B has? Write `tokens_that_fit(config, memory_bytes, dtype)`
#    and set `my_tokens` and `my_tokens_8_kv_heads` (`llama2_7b` is defined in section 4.3).
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Worked answers are in the repository, in `notebooks/solutions/ch04.py` (in JupyterLab: `solutions/ch04.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.
#
# Work in the cells below, one per exercise.

# %% tags=["check"] slideshow={"slide_type": "skip"}
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: generation without a cache: rerun the whole sequence at every step.
def generate_without_cache(lm, ids, n):
    # n greedy tokens after ids, each chosen from the last row of lm.forward on the whole sequence so far
    ...  # your code

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch04-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: two prompts with a shared beginning: are the cached K and V of the shared tokens the same?
same_kv_for_shared_tokens = None  # True or False


def reusable_prefix(ids_a, ids_b):
    # how many of the first tokens of ids_b could reuse the K and V cached for ids_a
    ...  # your code

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch04-ex2")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 3: Llama-2-7B in fp16 on an 80 GB GPU: tokens of KV cache after the weights.
def tokens_that_fit(config, memory_bytes, dtype="float16"):
    # how many tokens of KV cache fit in memory_bytes once the weights of config (stored in dtype) are loaded
    ...  # your code


my_tokens = None  # Llama-2-7B (32 KV heads), 80 GB = 80e9 bytes
my_tokens_8_kv_heads = None  # the same model with 8 KV heads

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch04-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(4)
