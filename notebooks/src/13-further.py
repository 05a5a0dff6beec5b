# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 13 · Further: reuse, speculation, compression
#
# **What you will see.** Four ideas that serving engines build on top of the previous chapters, each run on
# the bundled model and measured honestly — including where it does not pay off on this model and this CPU:
# reusing the KV cache of a shared prefix across requests; CacheBlend, which reuses the KV cache of text that
# is *not* a prefix and recomputes a few tokens; speculative decoding; and an int8 KV cache. The chapter ends
# with the table of optimisations of *LLM Inference Flow* (《LLM 推理流程》) and where each one appears in this
# course.
#
# **What you will learn.**
# - **Prefix caching**: how a block is named by its tokens *and everything before them*, and what a shared
#   system prompt saves.
# - **CacheBlend**: why precomputed chunks cannot simply be glued together, and how recomputing about 15% of
#   the tokens recovers most of the quality (the number of *LLM Inference Flow* §3.4, measured).
# - **Speculative decoding**: a cheap draft proposes, the model checks several tokens in one call; what the
#   acceptance rate must be for it to pay.
# - **KV cache quantisation**: a quarter of the memory for a small, measurable error.

# %% slide={"code": false}
import torch

import teachllm as tl
from teachllm import viz
from teachllm.serving import (
    Int8KVCache,
    ServingConfig,
    ServingEngine,
    acceptance_table,
    blend,
    block_hash,
    expected_tokens_per_call,
    int8_error,
    precompute_chunk,
    quality_table,
    quantize_int8,
    shift_keys,
)
from teachllm.serving.workload import DOCUMENTS, QUESTION
from teachllm.tolerances import agree_until_a_near_tie
from teachllm.viz.serving import blend_quality_figure

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
torch.set_num_threads(1)  # steadier timings on a shared or busy machine (remove it to use every core)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer
tol = tl.tolerance(lm.dtype)  # how far two computations of the same numbers may differ in this dtype

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 13.1 Prefix caching across requests
#
# Many requests start the same way: a chat template and a system prompt, a few-shot preamble, a long
# document everyone asks about. The K and V of a token depend only on that token and the tokens *before* it,
# so a prefix computed for one request is valid for every request that starts with it. Chapter 12 showed
# requests sharing blocks while they ran; here the cache outlives the requests.
#
# A full block is named by a **chained hash**: `h_i = hash(h_{i−1}, tokens of block i)`. The name includes
# the whole prefix, because the same 16 tokens after different text have different K and V:

# %% slide={"title": {"en": "A block's name, chained", "zh": "块的名字：链式哈希"}, "code": [[10, 16]]}
system = ("You are a patient tutor for a course on how large language models generate text. Answer in one short "
          "sentence with simple words, and say so when you do not know the answer.")
questions = ["What is a token?", "What does the KV cache store?", "Why is decode slow?"]
chats = [tok.encode(tok.apply_chat_template([{"role": "system", "content": system}, {"role": "user", "content": q}]))
         for q in questions]
common = next(i for i, column in enumerate(zip(*chats, strict=False)) if len(set(column)) > 1)
print(viz.tr("prompts of {lengths} tokens; the first {common} are the same (template + system prompt)",
             lengths=[len(c) for c in chats], common=common))

ids = chats[0]
h0 = block_hash(None, ids[:16])  # block 0: tokens 0–15
h1 = block_hash(h0, ids[16:32])  # block 1: tokens 16–31, after block 0
print(viz.tr("block 1 named again from the same tokens, after the same block 0: {same}",
             same=h1 == block_hash(h0, ids[16:32])))
print(viz.tr("the same 16 tokens at the start of a sequence get another name:   {other}",
             other=h1 != block_hash(None, ids[16:32])))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Two later requests reuse two blocks", "zh": "后来的两个请求复用两个块"}}
# The first question is served alone; the other two arrive after it has finished. The engine's block manager
# keeps freed blocks with their names until it needs the memory, so the later requests find the system
# prompt's full blocks:

# %% slide={"code": [[1, 3]]}
engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=64, enable_prefix_caching=True))
greedy = tl.SamplingParams(temperature=0, max_tokens=16)
runs = [engine.run(chats[:1], greedy), engine.run(chats[1:], greedy)]
for run in runs:
    for stats, out in zip(run.requests, run.outputs, strict=True):
        alone = lm.generate(chats[stats.request_id], greedy).token_ids
        if out.token_ids != alone:  # only in 16 bits: reused keys round unlike a full prefill, a near-tie may tip
            assert lm.dtype != torch.float32 and agree_until_a_near_tie(lm, chats[stats.request_id], alone,
                                                                        out.token_ids, tol.steps)
        prefilled = sum(n for r in run.timeline for rid, _, n in r.prefill if rid == stats.request_id)
        print(viz.tr("request {rid}: {prompt} prompt tokens, {cached:>2} found in the cache, {computed} computed",
                     rid=stats.request_id, prompt=stats.prompt_len, cached=stats.num_cached_tokens, computed=prefilled))
manager = engine.block_manager
print(viz.tr("prefix-cache hit rate: {hit} of {queried} prompt tokens looked up = {rate:.1%}",
             hit=manager.num_hit_tokens, queried=manager.num_queried_tokens, rate=manager.prefix_hit_rate))
print(viz.tr("block 0 of the first request is in the cache under its name: {found}", found=h0 in manager.hash_to_block))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Only full blocks are shared", "zh": "只有满块才能共享"}, "say": ["Both, checked on"]}
# The shared part is 44 tokens long, but only **full** blocks are shared: two blocks of 16, 32 tokens per
# request. The outputs are exactly those of `lm.generate`. In vLLM this is `enable_prefix_caching`; SGLang
# keeps the same kind of cache in a radix tree. Prefix caching only ever helps a *prefix*: a document that
# comes second, after a different first document, is not found (exercise 1). That is the problem CacheBlend
# takes on.
#
# ## 13.2 CacheBlend: reusing what is not a prefix
#
# Retrieval-augmented generation builds prompts as `document 1 + document 2 + … + question`, with documents
# that come back in request after request, in any order. The idea: compute each document's K and V **once,
# alone**, store them, and for a new prompt place the stored caches one after another. Two things are wrong
# with that:
#
# 1. **Positions.** A stored key was rotated by RoPE for position *p* inside its document, but it now sits at
#    *p* + offset. Rotations add up, so one more rotation by the offset repairs it exactly (`shift_keys`).
# 2. **Cross-attention.** A document computed alone never attended to the documents before it, so from
#    layer 1 on (every layer after layer 0) its K and V differ from those of a full prefill. Only computing repairs that.
#
# Both, checked on two of the documents:

# %% slide={"title": {"en": "Both, checked on two documents", "zh": "在两篇文档上验证两点"}, "code": [[5, 10]]}
chunks = [tok.encode(d) for d in DOCUMENTS]
first, second = chunks[0], chunks[1]
full = lm.new_cache(max_len=len(first) + len(second))
lm.prefill(first + second, full)  # the reference: a full prefill of both
alone = precompute_chunk(lm, second)  # the second document computed alone, from position 0
moved = shift_keys(lm, alone.k, offset=len(first))  # [L, n_kv, n, d]: keys rotated to their new positions
for layer in (0, 1, 15, 29):
    stored = full.keys(layer)[0, :, len(first):]  # [n_kv, n, d]
    print(viz.tr("layer {layer:>2}: max |key| error  as stored {stored:6.3f}, after the shift {shifted:6.3f}", layer=layer,
                 stored=float((alone.k[layer] - stored).abs().max()), shifted=float((moved[layer] - stored).abs().max())))
torch.testing.assert_close(moved[0], full.keys(0)[0, :, len(first):], atol=tol.values, rtol=tol.rtol)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": [{"en": "Recompute a few tokens per layer", "zh": "每层只重算少数 token"}, {"en": "Quality, measured on the question", "zh": "以问题为准衡量质量", "at": "Quality is measured"}], "say": ["Quality is measured"]}
# In layer 0 the shift makes the keys exact (a token's layer-0 key depends on nothing else); from layer 1 on
# the missing cross-attention shows. **CacheBlend** (Yao et al., EuroSys 2025) recomputes a small share $r$
# of the tokens in every layer and reuses the rest. It picks the tokens whose K and V deviate most from what
# a full prefill would give, the *high-KV-deviation* (HKVD) tokens: teachllm recomputes layers 0 and 1 for
# all $N$ tokens, measures each token's deviation at layer 1, and from layer 2 on recomputes only the $rN$
# tokens with the largest one. Counted in token-layers, over $L$ layers, that is a share
#
# $$\frac{2N + (L - 2)\,rN}{LN}$$
#
# of a full prefill's compute.
#
# Quality is measured on the question that follows the documents (27 tokens, with its answer): the KL
# divergence of its next-token distributions from those after a full prefill, how often both pick the same
# next token, and its perplexity. Below, HKVD selection against the same number of random tokens:

# %% slide={"code": [4], "output": [[3, -2]]}
suffix = tok.encode(QUESTION)
print(viz.tr("{n} documents of {lengths} tokens, then the question ({q} tokens): {question}", n=len(chunks),
             lengths=[len(c) for c in chunks], q=len(suffix), question=repr(QUESTION)))
rows = quality_table(lm, chunks, suffix, ratios=(0.0, 0.05, 0.15, 0.3, 0.5, 1.0))
# KL to 3 decimals and perplexity to 2: the digits that come out the same whatever kernels the CPU runs
print("\n" + viz.tr("select        r  compute      KL  top-1 perplexity"))
for r in rows:
    select = "—" if r.ratio in (0.0, 1.0) else r.select
    print(f"{select:<10}{r.ratio:>5.2f}{r.recompute_fraction:>9.3f}{r.kl:>8.3f}{r.top1_agreement:>7.3f}{r.ppl:>11.2f}")
print(viz.tr("(r = 0: full reuse, no compute; r = 1: a full prefill; perplexity after a full prefill {ppl:.2f})",
             ppl=rows[0].ppl_full))

# %% slide={"title": {"en": "Quality against compute", "zh": "质量与计算量"}, "code": false}
blend_quality_figure(rows)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Reuse as is, or recompute a few", "zh": "原样复用，还是重算少数"}}
# Reusing the stored caches with only the keys shifted to their new positions ($r = 0$) costs a lot: KL 0.34 and a perplexity of 7.1 instead of 5.3.
# Recomputing the ~15% of the tokens that *LLM Inference Flow* §3.4 names, with HKVD selection — 21% of a full
# prefill's compute, since two layers are recomputed in full — removes three quarters of the KL; the same number of random tokens removes
# a third of it. (The perplexity, over only 27 tokens, is noisier and does not fall at every step.) The top-1
# column hardly tells the two selections apart: over 27 positions it moves in steps of 1/27, and at r = 0.15,
# 0.30 and 0.50 the two have exactly the same top-1 (0.852, 0.926, 0.963). Which tokens did HKVD pick?

# %% slide={"title": {"en": "The tokens it recomputes", "zh": "被重算的 token"}, "code": [[1, 4]]}
context = sum(chunks, [])
hkvd = blend(lm, [precompute_chunk(lm, c) for c in chunks], ratio=0.15)
starts = {sum(len(c) for c in chunks[:i]): i + 1 for i in range(len(chunks))}
print(viz.tr("{n} of {total} tokens recomputed in layers 2–29:", n=len(hkvd.selected), total=len(context)))
print(" ".join(viz.tr("[doc {n}]", n=starts[p]) + repr(tok.token_text(context[p])) if p in starts
               else repr(tok.token_text(context[p])) for p in hkvd.selected))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Mostly the first tokens of documents 2, 3 and 4 (`Document`, ` `, `2`, `:` …). Computed alone, each of
# them was at the very start of a sequence, where a model parks attention it does not need elsewhere (an
# "attention sink"); in the blended prompt they are in the middle, and their K and V change the most. Those
# few tokens carry most of the error. (A real system also saves the time to *load* the stored caches; on a
# GPU CacheBlend overlaps that loading with the recompute.)
#
# ## 13.3 Speculative decoding
#
# Decode is memory-bound: on a GPU, whose ridge point is hundreds of FLOPs per byte, a forward call over 4 tokens
# costs about as much as one over 1, since the weights are read once either way. Not on this CPU: chapter 11
# times decode steps by batch size here, and the end of this section comes back to it. Speculative decoding
# spends that slack: a cheap **draft** model proposes
# $\gamma$ tokens one by one, and the model (the **target**) checks them all in **one** call over $\gamma + 1$
# tokens. With greedy decoding:
#
# - the target's choices after `[last token, p₁, …, p_γ]` are $t_0, \dots, t_\gamma$;
# - accept $p_1, p_2, \dots$ while $p_i = t_{i-1}$; at the first mismatch take the target's own choice instead
#   (or, if all $\gamma$ were accepted, one bonus token $t_\gamma$).
#
# Every call yields 1 to $\gamma + 1$ tokens, and the output is exactly the target's greedy output. It pays
# when the draft is much cheaper than the target and its proposals are often accepted. Without a second checkpoint,
# teachllm's draft is the model itself running only some of its layers: the first k (an early exit, as in
# LayerSkip), or all but some middle ones (as in Draft & Verify). Three drafts, $\gamma = 3$, 12 tokens:

# %% slide={"title": {"en": "Three drafts from the model's own layers", "zh": "用模型自身的层做三个草稿"}, "code": [3]}
prompt = tok.encode(tok.apply_chat_template([{"role": "user", "content": "Explain why the sky is blue."}]))
drafts = {"first 24 layers": 24, "first 29 layers": 29, "layers 0–9 and 20–29": list(range(10)) + list(range(20, 30))}
spec = acceptance_table(lm, prompt, max_tokens=12, drafts=tuple(drafts.values()), gammas=(3,))
print(viz.tr("draft                  accepted/proposed  tokens per target call  = greedy output"))
for name, r in zip(drafts, spec, strict=True):
    if not r["same_as_greedy"]:  # only in 16 bits: a verify pass rounds unlike single steps, and a near-tie may tip
        greedy_ids = lm.generate(prompt, tl.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)).token_ids
        assert lm.dtype != torch.float32 and agree_until_a_near_tie(lm, prompt, greedy_ids, r["token_ids"], tol.steps)
    print(f"{viz.pad(viz.tr(name), 22)}{r['acceptance_rate']:>18.2f}{r['tokens_per_target_call']:>24.2f}"
          f"{str(r['same_as_greedy']):>17}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What to expect from an acceptance rate", "zh": "接受率意味着什么", "at": "**What to expect"}}
# Every draft gives exactly the greedy tokens, as the rule guarantees. But these drafts are poor: SmolLM2 was
# not trained to exit early, so even 29 of its 30 layers get only 0.28 of their proposals accepted, the first
# 24 layers 0.19, and the middle-skipped draft 0.07. An early-exit draft needs training for it (LayerSkip);
# real deployments use a small model of the same family, or extra heads trained to draft (Medusa, EAGLE).
#
# **What to expect from an acceptance rate.** The two papers that introduced speculative decoding (Leviathan et
# al.'s and Chen et al.'s, in the references) give an estimate under a simplifying assumption: if each proposal
# is accepted with probability $\alpha$, independently, a target call yields on average
#
# $$1 + \alpha + \dots + \alpha^\gamma = \frac{1 - \alpha^{\gamma + 1}}{1 - \alpha}$$
#
# tokens. Put the accepted/proposed column into it and it does not match the measurement (0.28 gives 1.38,
# not 1.83). The reason is what $\alpha$ means: the formula's $\alpha$ is the chance that a proposal is
# accepted *once all the proposals before it were*, and the proposals after the first mismatch are never
# judged at all. Counting only the judged ones gives the $\alpha$ the formula wants (`judged_acceptance`):
#
# $$\alpha = \frac{\text{accepted}}{\text{accepted} + \text{rejected rounds}}$$

# %% slide={"title": {"en": "The formula against the measurement", "zh": "公式与实测对比"}, "code": false}
print(viz.tr("draft                  rounds judged α  formula  measured  1 + γ·accepted/proposed"))
for name, r in zip(drafts, spec, strict=True):
    formula = expected_tokens_per_call(r["judged_acceptance"], r["gamma"])
    identity = 1 + r["gamma"] * r["acceptance_rate"]  # each round: its accepted proposals + one target token
    print(f"{viz.pad(viz.tr(name), 22)}{r['target_calls']:>7}{r['judged_acceptance']:>9.2f}{formula:>9.2f}"
          f"{r['tokens_per_target_call']:>10.2f}{identity:>25.2f}")
print(viz.tr("the accepted/proposed rate of 'first 29 layers' in the formula: {n:.2f} tokens per call",
             n=expected_tokens_per_call(spec[1]["acceptance_rate"], 3)))
print(viz.tr("a good draft, judged α = 0.8 with γ = 4: {n:.2f} tokens per call", n=expected_tokens_per_call(0.8, 4)))

# %% [markdown] slideshow={"slide_type": "subslide"}
# With the judged $\alpha$ the formula lands within a few hundredths of the measurement. The last column is not
# a model but bookkeeping: every round yields its accepted proposals plus one token of the target's, so it
# matches the measurement by construction. Over 12 tokens there are only a handful of rounds (the
# `rounds` column), so these rates are rough, and in real text acceptances come in runs (an easy phrase
# is accepted whole), which the independence assumption ignores. On the clock, here:

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "Wall-clock time", "zh": "墙钟时间"}}
for name, r in zip(drafts, spec, strict=True):
    print(viz.tr("{name} {s:5.2f} s against greedy {greedy:5.2f} s: speed-up {x:.2f}×", name=viz.pad(viz.tr(name), 22),
                 s=r["seconds"], greedy=r["greedy_seconds"], x=r["speedup"]))

# %% [markdown] slideshow={"slide_type": "subslide"}
# A speed-up below 1: the draft costs most of a full model per proposal, and with 1.22 to 1.83 tokens per
# target call the verification calls save too little. On a CPU a call over 4 tokens is also not as cheap as
# it would be on a GPU. Speculative decoding pays when the draft costs a small fraction of the target and
# its judged acceptance is high: at $\alpha = 0.8$ and $\gamma = 4$ a call yields 3.36 tokens (check it with
# `expected_tokens_per_call(0.8, 4)`).
#
# ## 13.4 A KV cache in int8 *(optional)*
#
# Decode reads the whole KV cache every step, and the cache limits how many requests fit (chapter 12). Storing
# K and V in 8 bits instead of 32 cuts both. `Int8KVCache` quantises each head of each token on its own: for
# the vector $x$ of one head, the scale is $s = \max_j |x_j| / 127$ and the stored integers are
# $q = \mathrm{round}(x / s)$, so $s\,q$ differs from $x$ by at most half a step, $s / 2$, in each value. On
# one token's keys from a real prefill:

# %% slide={"title": {"en": "int8 with one scale per head", "zh": "int8，每个头一个缩放因子"}, "code": [[3, 6]]}
cache = lm.new_cache(max_len=len(prompt))
lm.prefill(prompt, cache)
k = cache.keys(10)[0, :, -1]  # layer 10, last prompt token: [n_kv, d]
q, scale = quantize_int8(k)
error = (q.float() * scale - k).abs()
assert (error <= scale / 2 + 1e-6).all()
for head in range(lm.config.n_kv_heads):
    print(viz.tr("KV head {head}: first values {values} → int8 {ints}, scale {scale:.4f}, max error {error:.4f}",
                 head=head, values=[round(v, 3) for v in k[head, :4].tolist()], ints=q[head, :4].tolist(),
                 scale=float(scale[head]), error=float(error[head].max())))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Memory and quality", "zh": "内存与质量"}}
# The same greedy decode with the model's own cache (float32 on a CPU) and with the int8 cache, fed the same
# tokens (16 steps):

# %% slide={"code": false}
int8_cache = Int8KVCache(lm.config, max_len=1024, dtype=lm.dtype, device=lm.device)
int8_bytes, float_bytes = int8_cache.bytes_per_token, tl.cost.kv_cache_bytes(lm, 1)  # lm: in the model's dtype
dtype, size = str(lm.dtype).removeprefix("torch."), lm.dtype.itemsize
print(viz.tr("bytes per token: {int8:,} instead of {full:,} ({share:.1%}: d int8 values + one float32 scale per head, "
             "against {size}·d bytes)", int8=int8_bytes, full=float_bytes, share=int8_bytes / float_bytes, size=size))
print(viz.tr("1024 tokens: {int8:.1f} MiB in int8 against {full:.1f} MiB in {dtype}",
             int8=int8_cache.bytes_allocated / 2**20, full=tl.cost.kv_cache_bytes(lm, 1024) / 2**20, dtype=dtype))

# %% tags=["nbval-ignore-output"] slide={"code": [1]}
result = int8_error(lm, prompt, n_decode=16)
print(viz.tr("max |logit difference| {diff:.2f} (logits are of size ≈ 20), mean KL {kl:.4f}, same top-1 token in "
             "{agree:.0%} of the steps", diff=result["max_abs_logit_diff"], kl=result["mean_kl"],
             agree=result["top1_agreement"]))
print(viz.tr("free-running int8 greedy decode: the same tokens as {dtype} for the first {same} of {n} steps",
             dtype=dtype, same=result["greedy_tokens_identical"], n=result["n_decode"]))
assert result["bytes_per_token_int8"] == int8_bytes and result["mean_kl"] < 0.01  # on every CPU we ran it on

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "A quarter of the memory", "zh": "四分之一的内存"}, "say": ["*LLM Inference Flow*", "The interview answer", "After each exercise,", "Work in the cells"]}
# A quarter of the memory, and a next-token distribution that moves very little (the cell asserts a mean KL
# under 0.01). Where float32's two best tokens are almost tied, the rounding can tip the choice, and a
# free-running greedy text then goes its own way; how soon depends on the CPU's float arithmetic, so the cell
# prints it for this machine rather than the chapter quoting one run. Engines offer this as an fp8 KV cache
# (vLLM's `kv_cache_dtype="fp8"`); the saved memory becomes a larger batch (chapter 11) or a longer context.
#
# ## 13.5 Where each optimisation acts
#
# *LLM Inference Flow* §5.3 sums up the optimisations in a table: prefill is limited by compute, decode by
# memory, and some methods help both. Here it is with the place in this course where each is shown, and with
# methods the original does not list added: chunked prefill, continuous batching and the paged KV cache
# (chapters 11 and 12), this chapter's prefix caching and CacheBlend. The "quantisation" (量化) in the original's
# "both" row does not say what is quantised; here it is split in two: KV cache quantisation goes to decode (the interview
# answer, §7, lists "KV Cache压缩和量化" among decode's optimisations), quantisation of the weights stays in "both".
# The original also puts speculative decoding in the "both" row. It cuts only decode's steps and does nothing for
# prefill (the interview answer, §7, lists it among decode's optimisations), so here it goes to decode:
#
# | phase | limited by | optimisation | in this course |
# | --- | --- | --- | --- |
# | prefill | compute | operator fusion, FlashAttention | chapter 10 places prefill on the roofline; teachllm's fast path calls PyTorch's fused `scaled_dot_product_attention` (on a GPU, a fused kernel PyTorch picks; with the explicit mask teachllm passes, not its FlashAttention one), the traced path writes attention out (chapter 3) |
# | prefill | compute | compute less: prefix caching, CacheBlend | 13.1, 13.2 |
# | prefill | latency of others | chunked prefill | chapter 11 |
# | decode | memory bandwidth | batching, continuous batching | chapter 11 |
# | decode | memory capacity | paged KV cache | chapter 12 |
# | decode | memory | KV cache compression and quantisation | 13.4 |
# | decode | memory bandwidth | speculative decoding | 13.3 |
# | both | — | quantisation of the weights | section 10.13: the bundled GGUF file stores its matrices in 4 bits (Q4_1) and its embedding in 8 bits (Q8_0); `tl.load()` de-quantises them to float32, `tl.load(weights="gguf")` keeps the blocks and multiplies with them directly |
#
# The interview answer on the prefill and decode phases adds model and data parallelism to prefill's
# optimisations (several GPUs), outside the scope of a single-CPU course.
#
# ## Summary
# - Prefix caching names each full block by its tokens and everything before them; the full blocks of a shared
#   prefix are computed once and found by later requests (here 32 prompt tokens per request; the shared tokens
#   past the last full block are computed again), with identical outputs.
# - Precomputed chunks placed after other text need their keys rotated (exact) and their cross-attention
#   restored (not possible without computing). CacheBlend's HKVD selection, at *LLM Inference Flow*'s 15% of
#   the tokens, removes three quarters of the KL for about a fifth of the prefill compute; the same number of random
#   tokens leaves about three times as much KL.
# - With greedy verification, speculative decoding keeps the target's exact greedy output; it pays only with
#   a draft that is cheap *and* agrees often. Layer-dropping drafts of this untrained-for-it model agree rarely, and the speed-up here is below 1.
# - An int8 KV cache takes 27% of the float32 memory at a small logit error.
#
# ## Exercises
# 1. Send "document 1 + document 2 + question" and then "document 2 + document 1 + question" to an engine with
#    prefix caching. How many tokens does the second request find in the cache? And "document 1 + document 3 +
#    question"? Write `prefix_tokens_found(sent_prompts, prompt, block_size)`: how many tokens of `prompt` the
#    prefix cache gives back when the prompts `sent_prompts` (each answered with one token) were sent before it
#    and are all still cached.
# 2. CacheBlend recomputes layers 0 and 1 in full (`full_layers=2`) before choosing tokens. What happens with
#    `full_layers=1`, choosing by the deviation at layer 0 — at $r = 0.15$, for HKVD? Write
#    `recompute_share(n_tokens, n_layers, ratio, full_layers)`, the share of a full prefill's token-layers that
#    `blend` computes for a context of `n_tokens` tokens, and set `layer0_kv_depends_on_other_tokens` to True or
#    False: does a token's K and V at layer 0 depend on the tokens before it?
# 3. With the 29-layer draft, try $\gamma$ = 1, 2, 4 and 6 (12 tokens). How do the acceptance rate and the tokens per
#    target call change, and why does a larger $\gamma$ not keep helping? Write `tokens_per_call_ceiling(alpha)`,
#    the most tokens per target call that any $\gamma$ can give on average when each proposal is accepted with
#    probability $\alpha$ (once all before it were), and set `gamma_keeps_helping` to True or False.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: which tokens of a new prompt does the prefix cache find?
def prefix_tokens_found(sent_prompts, prompt, block_size):
    # how many tokens of prompt the cache gives back after sent_prompts (lists of ids), each answered with one token
    ...  # your code


# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch13-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: CacheBlend with full_layers=1.
def recompute_share(n_tokens, n_layers, ratio, full_layers):
    # token-layers blend computes, divided by those of a full prefill (n_tokens · n_layers)
    ...  # your code


layer0_kv_depends_on_other_tokens = None  # True or False: do a token's layer-0 K and V depend on other tokens?

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch13-ex2")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 3: speculative decoding with γ = 1, 2, 4 and 6.
def tokens_per_call_ceiling(alpha):
    # the most tokens per target call, on average, that any γ gives when each proposal is accepted with
    # probability alpha once all the proposals before it were
    ...  # your code


gamma_keeps_helping = None  # True or False: does each larger γ keep adding as much?

# %% tags=["check"]
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch13-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch13.py` (in JupyterLab: `solutions/ch13.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(13)
