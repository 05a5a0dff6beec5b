# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**", "Cells that time"]}
# # Chapter 10 · What it costs
#
# **What you will see.** We count the work of prefill and decode, first with the formula of Lecture 11 of the
# course notes for a textbook layer, then exactly for the real model, and check the count against PyTorch's own
# FLOP counter.
# Next we count the bytes each phase has to read and measure the two limits of the machine you are on: how
# fast it multiplies and how fast it reads memory. The two phases then land on a **roofline**. Finally we
# time three claims of the course notes: prefill is compute-bound, decode is memory-bound, and batching decode
# is almost free.
#
# **What you will learn.**
# - How to count the FLOPs of a transformer layer: $24bsh^2 + 4bs^2h$ for the textbook layer, and what changes
#   for a real Llama-style model (grouped-query attention, SwiGLU, the LM head).
# - Why prefill and decode read the same weight bytes but do very different FLOPs, and what **arithmetic intensity**
#   (FLOPs per byte) says about the bottleneck.
# - How to read a roofline, and why **batching** raises decode throughput almost for free until the KV
#   cache gets large.
# - Where **TTFT**, **tokens/s** and the **decode rate** ($1 / \text{TPOT}$) come from.
#
# Cells that time something give different output on every machine and every run.

# %% slide={"title": {"en": "The model's shape", "zh": "模型的形状"}, "code": [[12, 16]]}
import torch
from torch.utils.flop_counter import FlopCounterMode

import teachllm as tl
from teachllm import cost, roofline, viz
from teachllm.fastpath import quant
from teachllm.roofline import PhasePoint, format_points

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok, config = lm.tokenizer, lm.config
print(viz.tr("h = {h}, L = {L}, n_h = {n_h}, n_kv = {n_kv}, d = {d}, f = {f}, V = {V:,}, {params:.1f}M parameters, "
             "{dtype}", h=config.hidden_size, L=config.n_layers, n_h=config.n_heads, n_kv=config.n_kv_heads,
             d=config.head_dim, f=config.intermediate_size, V=config.vocab_size, params=config.n_params / 1e6,
             dtype=lm.dtype))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.1 Counting one matrix multiplication
#
# The lecture starts from one rule. To multiply an $m \times k$ matrix by a $k \times n$ matrix, each of the
# $mn$ results needs $k$ multiplications and $k - 1$ additions, about **$2mkn$ FLOPs** (floating-point
# operations) in all.
# PyTorch's `FlopCounterMode` uses the same rule. Here it is on the shape of this model's query projection
# for a 37-token prompt, [37, 576] @ [576, 576]:

# %%
m, k, n = 37, config.hidden_size, config.hidden_size
x, w = torch.randn(m, k), torch.randn(k, n)
with FlopCounterMode(display=False) as counter:
    x @ w
print(f"2·m·k·n = {2 * m * k * n:,}   FlopCounterMode: {counter.get_total_flops():,}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.2 The lecture's derivation: one layer, $24bsh^2 + 4bs^2h$
#
# The symbols are the lecture's: batch $b$, sequence length $s$, hidden size $h$, heads $n_h$, head dim
# $h_d = h / n_h$. The lecture's layer is a textbook (GPT-style) one: every head has its own K and V, and the MLP
# goes $h \to 4h \to h$. Its matmuls, one at a time:
#
# | step | shapes | FLOPs |
# | --- | --- | --- |
# | $Q, K, V = xW_Q,\ xW_K,\ xW_V$ | $[b, s, h] \cdot [h, h]$, three times | $3 \cdot 2bsh^2 = \mathbf{6bsh^2}$ |
# | $\text{scores} = QK^\top$, per head | $[b, n_h, s, h_d] \cdot [b, n_h, h_d, s]$ | $2 b n_h s^2 h_d = \mathbf{2bs^2h}$ |
# | $\text{scores} \cdot V$, per head | $[b, n_h, s, s] \cdot [b, n_h, s, h_d]$ | $\mathbf{2bs^2h}$ |
# | output projection | $[b, s, h] \cdot [h, h]$ | $\mathbf{2bsh^2}$ |
# | MLP up | $[b, s, h] \cdot [h, 4h]$ | $\mathbf{8bsh^2}$ |
# | MLP down | $[b, s, 4h] \cdot [4h, h]$ | $\mathbf{8bsh^2}$ |
# | **layer** | | $\mathbf{24bsh^2 + 4bs^2h}$ |
#
# Softmax, normalisation and the activation are not matmuls and are left out, as in the lecture. Now with
# numbers: b = 1, s = 37 (the chat prompt of chapter 1) and this model's h = 576. `cost.textbook_flops`
# computes the same layer, and we write each formula out next to it:

# %% slide={"title": {"en": "The count, step by step, with numbers", "zh": "代入数字逐步计数"}, "code": [[8, 14]]}
b, s, h = 1, 37, config.hidden_size
book = cost.textbook_flops(config, seq_len=s, batch_size=b).per_op  # FLOPs of one textbook layer, per matmul
steps = [("Q, K, V projections", ["q_proj", "k_proj", "v_proj"], "6bsh²", 6 * b * s * h**2),
         ("Q·Kᵀ", ["qk"], "2bs²h", 2 * b * s**2 * h),
         ("scores·V", ["pv"], "2bs²h", 2 * b * s**2 * h),
         ("output projection", ["o_proj"], "2bsh²", 2 * b * s * h**2),
         ("MLP, h → 4h → h", ["up_proj", "down_proj"], "16bsh²", 16 * b * s * h**2)]
for name, ops, formula, by_hand in steps:
    counted = sum(book[op] for op in ops)
    assert counted == by_hand
    print(f"{viz.pad(viz.tr(name), 22)}{formula:>8} = {by_hand:>15,}")
layer = 24 * b * s * h**2 + 4 * b * s**2 * h
assert layer == sum(book.values())
print(f"{viz.pad(viz.tr('one layer'), 22)}{'':>8} = {layer:>15,}   (24bsh² + 4bs²h)")
print(viz.tr("{L} layers: {gflop:.3f} GFLOP", L=config.n_layers, gflop=config.n_layers * layer / 1e9))
print(viz.tr("linear ÷ attention part: 24bsh² / 4bs²h = 24h / 4s = {ratio:.0f}", ratio=24 * h / (4 * s)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The two terms, and decode", "zh": "两项的增长，以及解码"}}
# The $24bsh^2$ part grows linearly with the prompt; the $4bs^2h$ part (attention) grows with its square. With
# s = 37 and h = 576, the linear part is 24 · 576 / (4 · 37) ≈ 93 times larger.
#
# **Decode.** The lecture goes on: without a cache, the second token would run the same layer on $s + 1$
# tokens, the third on $s + 2$, and so on, each time paying the quadratic cost again. With the KV cache, a
# decode step runs one new token (a query length of 1) against $T = s + 1$ keys, $s$ still being the prompt
# length: $24bh^2 + 4bTh$ per layer. For the token
# after our 37-token prompt:

# %%
without_cache = cost.textbook_flops(config, seq_len=s + 1).total  # the whole sequence again
with_cache = cost.textbook_flops(config, seq_len=1, context_len=s + 1).total  # one query, s + 1 keys
print(viz.tr("recompute all {n} tokens: {without:.3f} GFLOP;  one cached decode step: {cached:.4f} GFLOP;  "
             "{ratio:.0f}× less", n=s + 1, without=without_cache / 1e9, cached=with_cache / 1e9,
             ratio=without_cache / with_cache))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.3 An estimate for Llama-7B from the course notes *(optional)*
#
# *LLM Inference Flow* (《LLM 推理流程》) estimates the FLOPs of Llama-7B for a 1,000-token prompt with two
# small functions (its §3.3 and §4.3). Here is its code, with the lines that print its numbers. The arithmetic is the
# notes' own; their Chinese docstrings are replaced by English ones of ours that name the source, and the comments
# are translated into English.

# %% slide={"title": {"en": "The course notes' two functions", "zh": "课程资料的两个函数"}, "code": [[1, 8], 20, 21]}
def estimate_prefill_flops(prompt_len, hidden_size, num_layers, num_heads):
    """Prefill FLOPs as LLM Inference Flow §3.3 estimates them."""
    # attention: O(n^2 * d)
    attn_flops = 2 * prompt_len * prompt_len * hidden_size * num_layers
    # FFN: O(n * d * 4d)
    ffn_flops = 2 * prompt_len * hidden_size * 4 * hidden_size * num_layers
    total_flops = attn_flops + ffn_flops
    return total_flops


def decode_step_flops(seq_len, hidden_size, num_layers):
    """The FLOPs of one decode step as LLM Inference Flow §4.3 estimates them."""
    # attention: only the last token; its Q against every K: O(seq_len * d)
    attn_flops = 2 * seq_len * hidden_size * num_layers
    # FFN: only the last token
    ffn_flops = 2 * hidden_size * 4 * hidden_size * num_layers
    return attn_flops + ffn_flops


flops = estimate_prefill_flops(1000, 4096, 32, 32)  # Llama-7B, prompt_len = 1000
print(f"Prefill FLOPs: {flops / 1e12:.2f} TFLOPs")
prefill_1000 = estimate_prefill_flops(1000, 4096, 32, 32)
decode_step = decode_step_flops(1000, 4096, 32)
print(f"Prefill (1000 tokens): {prefill_1000 / 1e9:.2f} GFLOPs")
print(f"Single Decode step: {decode_step / 1e9:.2f} GFLOPs")
print(f"Ratio: {prefill_1000 / decode_step:.0f}x")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The estimate against the exact count", "zh": "估算与精确计数对比"}, "say": true}
# The ratio is right: prefill of 1,000 tokens costs about 1,000 decode steps. The totals are about three
# times too small, though, because the estimate leaves out most of the layer. Put it (column "estimate") next
# to the lecture's layer (column "lecture") and the exact count for Llama-2-7B's shape (h = 4096, 32 layers,
# 32 heads, a SwiGLU MLP of width 11,008, 32,000-token vocabulary):

# %% slide={"code": [[10, 15]]}
llama_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                          n_kv_heads=32, head_dim=128, max_position_embeddings=4096)  # Llama-2-7B's config.json
s7, h7, L7 = 1000, 4096, 32
estimate_terms = {"Q·Kᵀ and scores·V": 2 * s7**2 * h7 * L7, "Q, K, V, O projections": 0,  # the estimate above
                  "MLP": 2 * s7 * h7 * 4 * h7 * L7, "LM head": 0}
groups = {"Q·Kᵀ and scores·V": ["qk", "pv"], "Q, K, V, O projections": ["q_proj", "k_proj", "v_proj", "o_proj"],
          "MLP": ["gate_proj", "up_proj", "down_proj"], "LM head": ["lm_head"]}
book_7b = cost.textbook_flops(llama_7b, s7).by_op()
exact_7b = cost.prefill_flops(llama_7b, s7).by_op()
print(viz.tr("TFLOP, 1,000-token prefill  estimate  lecture   exact"))
for name, ops in groups.items():
    print(f"{viz.pad(viz.tr(name), 28)}{estimate_terms[name] / 1e12:>8.3f}{sum(book_7b[o] for o in ops) / 1e12:>9.3f}"
          f"{sum(exact_7b[o] for o in ops) / 1e12:>8.3f}")
print(f"{viz.pad(viz.tr('total'), 28)}{sum(estimate_terms.values()) / 1e12:>8.3f}{sum(book_7b.values()) / 1e12:>9.3f}"
      f"{sum(exact_7b.values()) / 1e12:>8.3f}")
print(viz.tr("rule of thumb 2 · N · tokens (N = {n:.2f}B parameters): {tflop:.3f} TFLOP", n=llama_7b.n_params / 1e9,
             tflop=2 * llama_7b.n_params * s7 / 1e12))
print(viz.tr("exact decode step at 1,000 tokens: {exact:.2f} GFLOP (estimate: {estimate:.2f})",
             exact=cost.decode_flops(llama_7b, s7).total / 1e9, estimate=decode_step / 1e9))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": [{"en": "What the estimate leaves out", "zh": "估算漏掉了什么"}, {"en": "Why 2·N·tokens agrees at 1,000 tokens", "zh": "为何 2·N·tokens 在 1000 个 token 处吻合", "at": "The exact count"}]}
# What the estimate of *LLM Inference Flow* leaves out:
# - the four projections Q, K, V and O ($8sh^2$ per layer, a third of the linear work);
# - half of the MLP: it counts $h \to 4h$ but not $4h \to h$. Llama's SwiGLU MLP even has three matrices of
#   width 11,008: $6shf$, which is more than the lecture's $16sh^2$;
# - half of attention: $QK^\top$, but not $\text{scores} \cdot V$;
# - the LM head (small here: the engine runs it for the last position only).
#
# The exact count and the rule of thumb "2 FLOPs per parameter per token" agree at 1,000 tokens, but that
# is a coincidence of this length. The rule is wrong in two places, in opposite directions:
# - it **leaves out attention**, which has no parameters: $4sh$ FLOPs per token and layer ($QK^\top$ and
#   $\text{scores} \cdot V$), growing with the prompt;
# - it **counts parameters that do no matmul work per token**: the embedding table is a lookup (0 FLOPs), and
#   the LM head runs for the last position only. Llama-7B has a separate embedding and head, $2Vh$
#   parameters, so the rule overcounts $4Vh$ FLOPs per token.
#
# The two terms are equal when $4shL = 4Vh$, that is at $s = V / L$ = 32,000 / 32 = 1,000 tokens: exactly
# the prompt of *LLM Inference Flow*. SmolLM2 ties its head to the embedding (one $V \times h$ matrix in $N$),
# so for it the terms meet at $s = V / (2L)$. Exact ÷ rule against the prompt length, with the two terms as
# shares of the rule:

# %% slide={"title": {"en": "Where the rule of thumb is off", "zh": "经验法则偏离在哪里"}, "code": false}
def rule_parts(cfg, n):
    """exact ÷ (2·N·n), the attention the rule leaves out and the embedding/head work it counts, ÷ the rule."""
    exact, rule = cost.prefill_flops(cfg, n), 2 * cfg.n_params * n
    return exact.total / rule, exact.attention / rule, (rule - (exact.total - exact.attention)) / rule


print(viz.tr(" prompt | SmolLM2:      exact÷rule  +attn  −emb/head | Llama-7B: exact÷rule  +attn  −emb/head"))
for n in (37, 300, 819, 1000, 2000, 4096, 8192):
    row = [f"{r:>10.3f}{a:>8.3f}{e:>9.3f}" for r, a, e in (rule_parts(config, n), rule_parts(llama_7b, n))]
    print(f"{n:>7} | {row[0]:<43}| {row[1]}")
print(f"Llama-7B: V / L = {llama_7b.vocab_size // llama_7b.n_layers:,};  SmolLM2: V / (2L) = "
      f"{config.vocab_size / (2 * config.n_layers):.0f}")
ratio, attn, emb = rule_parts(llama_7b, 1000)
assert abs(ratio - 1) < 1e-4 and abs(attn - emb) < 1e-4  # at 1,000 tokens the two errors cancel
assert rule_parts(llama_7b, 8192)[0] > 1.25 and rule_parts(config, 37)[0] < 0.85

# %% [markdown] slideshow={"slide_type": "subslide"}
# Below the crossing the rule overestimates, above it underestimates, and the gap widens with the prompt:
# at 8,192 tokens the exact count of Llama-7B is 1.28 times the rule, that of SmolLM2 2.89 times. For a
# small model the error is larger both ways: its embedding is a fifth of its parameters, and its
# attention is large next to its narrow layers.

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["`cost.prefill_flops` and `cost.decode_flops`"]}
# ## 10.4 The exact count for the model at hand
#
# `cost.prefill_flops` and `cost.decode_flops` count every matmul of the real model, per layer and per
# operation (the formulas are in the docstring of `teachllm/cost.py`). Prefill of the 37-token prompt, then
# the decode step that follows it (38 keys):

# %% slide={"output": [[1, 3], [9, 13], 15, 26, 27]}
prefill_37 = cost.prefill_flops(config, 37)
print(prefill_37.table(viz.tr))  # viz.tr: the table in the reader's language; print(prefill_37) prints it too
print()
print(cost.decode_flops(config, 38).table(viz.tr))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Which operations dominate", "zh": "哪些运算占大头"}, "say": true}
# In prefill the three MLP matrices do three quarters of the work. In a decode step the LM head stands out
# (21%): prefill runs it once for 37 tokens, and decode runs it once for every token. Next to the lecture's
# formula:

# %% slide={"output": [[1, 4], [8, 12]]}
print(cost.format_comparison(cost.compare_with_textbook(config, 37), viz.tr))
kv_width = config.n_kv_heads * config.head_dim
print("\n" + viz.tr("width of K and V: n_kv · d = {n_kv} · {d} = {width}", n_kv=config.n_kv_heads, d=config.head_dim,
                    width=kv_width))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Why the two differ", "zh": "两者为何不同"}}
# Why the two differ:
# - **GQA.** 9 query heads share 3 KV heads, so K and V have width 3 · 64 = 192, not 576. Their projections
#   cost a third.
# - **SwiGLU** has a third matrix (the gate), which the textbook MLP lacks.
# - **$f \neq 4h$.** The MLP is 1,536 wide, not 4 · 576 = 2,304, so up and down cost two thirds each.
# - **The LM head**, $2hV$ per projected position, is outside the layer formula.
#
# Here the differences nearly cancel: the exact count is 0.90 of the textbook's.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.5 Checking the count against PyTorch
#
# An independent check: run a real prefill under `FlopCounterMode` and let PyTorch count what it executes.
# We pass a `Trace` so that attention runs as two plain matmuls (`attention_by_hand` in `teachllm/model.py`),
# which the counter sees.

# %% slide={"title": {"en": "Every matmul, counted by PyTorch", "zh": "PyTorch 逐个计数每个矩阵乘法"}, "code": [[3, 7]]}
chat_ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}]))
assert len(chat_ids) == 37
with FlopCounterMode(display=False) as counter:
    lm.prefill(chat_ids, lm.new_cache(max_len=37), trace=tl.Trace())
counts = counter.get_flop_counts()  # {module name: {operator: FLOPs}}
print(f"FlopCounterMode: {counter.get_total_flops():,}   teachllm.cost: {prefill_37.total:,}")
assert counter.get_total_flops() == prefill_37.total

per_op = prefill_37.per_op  # one layer
print("\n" + viz.tr("layer 0, operation by operation:"))
for op in ("q_proj", "k_proj", "v_proj", "o_proj"):
    print(f"  {op:<22}{sum(counts[f'Transformer.layers.0.self_attn.{op}'].values()):>13,}{per_op[op]:>13,}")
attention = sum(v for key, v in counts["Transformer.layers.0.self_attn"].items() if str(key) != "aten.mm")
print(f"  {viz.pad(viz.tr('qk + pv (bmm)'), 22)}{attention:>13,}{per_op['qk'] + per_op['pv']:>13,}")
for op in ("gate_proj", "up_proj", "down_proj"):
    print(f"  {op:<22}{sum(counts[f'Transformer.layers.0.mlp.{op}'].values()):>13,}{per_op[op]:>13,}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the counter counts", "zh": "计数器数的是什么"}}
# Every matmul agrees to the FLOP. Two things to know about the counter:
# - It counts matmul-like operators only. Softmax, RMSNorm, RoPE, SiLU, the elementwise product of
#   SwiGLU, the residual additions and the embedding lookup all count 0. They cost a few operations per
#   element of $[s, h]$ or $[n_h, s, T]$ tensors, which is small next to 2 FLOPs per weight per token, but it
#   is not zero, and these operations read and write memory.
# - It counts only the kernels it has a formula for. Without a `Trace`, teachllm runs attention with PyTorch's
#   fused `scaled_dot_product_attention`. PyTorch has no formula for the CPU's fused kernel (it counts 0 there),
#   and the torch 2.11 of our GPU machine has one for the GPU's kernels that refuses grouped-query heads.
#   `cost.flop_counter()` is the same counter with a formula for every fused attention kernel, so the fast
#   path counts the same on any device:

# %% slide={"title": {"en": "The fast path, counted too", "zh": "快速路径也一并计数"}}
with cost.flop_counter() as counter:  # FlopCounterMode, with fused attention counted on every device
    lm.prefill(chat_ids, lm.new_cache(max_len=37))  # the fast path: fused attention
assert counter.get_total_flops() == prefill_37.total
print(viz.tr("fast path counted: {counted:,} = teachllm.cost {total:,}", counted=counter.get_total_flops(),
             total=prefill_37.total))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "One decode step", "zh": "一个解码步"}}
# The same check for one decode step, after the prompt: one query against 38 keys.

# %%
cache = lm.new_cache(max_len=38)
token = lm.prefill(chat_ids, cache).argmax(-1)
with FlopCounterMode(display=False) as counter:
    lm.decode_step(token, cache, trace=tl.Trace())
assert counter.get_total_flops() == cost.decode_flops(config, 38).total
print(viz.tr("decode step: FlopCounterMode {counted:,} = teachllm.cost {total:,}", counted=counter.get_total_flops(),
             total=cost.decode_flops(config, 38).total))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.6 How much of prefill is attention?
#
# Attention is the only part that grows with $s^2$; everything else grows with $s$. For short prompts it is a
# small share:

# %%
for n in (37, 300, 1000, 3000, 4096, 8192):
    f = cost.prefill_flops(config, n)
    print(viz.tr("{n:>5} tokens: {gflop:>9.1f} GFLOP, attention (Q·Kᵀ and scores·V) {share:6.1%}", n=n,
                 gflop=f.total / 1e9, share=f.attention_fraction))

# %% [markdown] slideshow={"slide_type": "subslide"}
# At 37 tokens attention is about 1% of the work, and at 300 tokens about 9%. It passes half only at about
# 3,000 tokens (exercise 1). These counts include the masked half of $QK^\top$, which the engine computes and
# then hides. A kernel that skips masked blocks, such as FlashAttention, does about half of this attention
# work.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.7 Bytes, and FLOPs per byte
#
# A matmul also has to *read* its weights. Every forward call reads every weight matrix once, whether it
# runs 1 token or 300. Attention also reads the K and V of every cached token, and the call writes the K and V
# of its new tokens. `cost.prefill_cost` and `cost.decode_cost` count both sides. Their ratio is the
# **arithmetic intensity**, FLOPs per byte moved:
#
# $$\text{intensity} = \frac{\text{FLOPs}}{\text{bytes read and written}}$$

# %% slide={"title": {"en": "Prefill and decode, in FLOPs and bytes", "zh": "预填充与解码的 FLOPs 与字节"}, "code": [[2, 4]]}
print(viz.tr("call                     GFLOP weights MB KV read MB KV write MB FLOP/byte"))
for c in (cost.prefill_cost(config, 37, dtype=lm.dtype), cost.prefill_cost(config, 300, dtype=lm.dtype),
          cost.decode_cost(config, 38, dtype=lm.dtype), cost.decode_cost(config, 301, dtype=lm.dtype),
          cost.decode_cost(config, 301, batch_size=16, dtype=lm.dtype)):
    name = f"{viz.tr(c.phase)} {'s' if c.phase == 'prefill' else 'T'}={c.length}" + (f", b={c.batch_size}" * (c.batch_size > 1))
    print(f"{viz.pad(name, 22)}{c.flops / 1e9:>8.3f}{c.weight_bytes / 1e6:>11.1f}{c.kv_read_bytes / 1e6:>11.2f}"
          f"{c.kv_write_bytes / 1e6:>12.3f}{c.intensity:>10.2f}")
per_token = cost.prefill_cost(config, 300, dtype=lm.dtype).intensity / 300
print(viz.tr("prefill, FLOP/byte per prompt token at s = 300: {x:.2f}", x=per_token))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the table says", "zh": "这张表说明什么"}}
# Prefill and decode read the same 538 MB of weights (float32; the embedding matrix doubles as the LM head
# and is counted once). Prefill does 37 or 300 tokens' worth of work with them, and a decode step does one.
# Each weight is used for one multiply-add (2 FLOPs) per token, and a float32 weight is 4 bytes, so a
# batch-1 decode step does **0.5 FLOP per byte** (about 1 in bfloat16). Prefill does about 0.4 × $s$: the
# embedding matrix, a fifth of the weights, goes through the LM head for the last position only. A decode
# step at batch 16 reads the weights once and does 16 times the work.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.8 The roofline of this machine
#
# Whether a computation waits for arithmetic or for memory depends on the machine's two limits:
# - **peak FLOP/s**: how fast it multiplies. `roofline.measure_device(..., config=lm.config)` times a square
#   matmul and every weight matmul of this model's prefill at 256 and 1,024 tokens, run as the model runs
#   them (`F.linear`, the same dtype, in this process and so with the same thread count), and keeps the best
#   rate of the best run. Every prefill and decode step multiplies by these weight matrices (with other row
#   counts) and does more, so none can beat it;
# - **bandwidth**: how many bytes per second it moves to and from main memory (it times a large copy).
#
# $$\text{attainable FLOP/s} = \min(\text{peak},\ \text{bandwidth} \times \text{intensity})$$
#
# Below the **ridge point**, where $\text{intensity} = \text{peak} / \text{bandwidth}$, a computation is
# memory-bound, and above it, compute-bound. The measurement takes about a second. Its numbers depend on your
# machine and on what else is running on it.

# %% slide={"code": false, "output": false}
shapes = roofline.model_matmul_shapes(config, lengths=(256, 1024))  # [m, k] @ [k, n] for m = 256 and 1,024
print(viz.tr("{n} of the model's matmul shapes (m, k, n), and one square one: {shapes} …", n=len(shapes),
             shapes=shapes[:6]))

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "This machine's two limits, measured", "zh": "实测这台机器的两个上限"}, "code": [1, 2]}
device = roofline.measure_device(lm.device, lm.dtype, config=lm.config)  # the best of those shapes
print(device.describe(viz.tr))  # viz.tr: in the reader's language; print(device) prints the same line
print(viz.tr("{device} for comparison", device=roofline.KNOWN_DEVICES["H100 SXM"].describe(viz.tr)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The real model, timed", "zh": "真实模型的计时"}, "say": true}
# Now the real model, timed: prefill at three prompt lengths and one decode step at batch 1 and 16
# (`measure_phases`; a few seconds).

# %% tags=["nbval-ignore-output"] slide={"code": [[1, 3]]}
points = roofline.measure_phases(lm, prefill_lengths=(16, 64, 300), decode_batches=(1, 16), decode_contexts=(301,),
                                 device=device, reps=3, budget_s=1.0)
print(format_points(points, viz.tr))
print(viz.tr("highest share of the peak reached by a phase: {share:.0%}",
             share=max(p.achieved_flops for p in points) / device.peak_flops))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The roofline", "zh": "Roofline 图"}, "say": true}
# The static figure (the book's version) and the same view as a widget, whose *measure* button runs the
# measurement again:

# %% tags=["nbval-ignore-output"] slideshow={"slide_type": "skip"}
viz.roofline_figure(device, points)

# %% tags=["nbval-ignore-output"] slide={"code": false}
roofline_view = viz.RooflineView(lm, prefill_lengths=(16, 64, 300), decode_batches=(1, 16), decode_contexts=(301,))
viz.widgets.refresh(roofline_view.figure, viz.figures.roofline_spec(device, points))  # show the points above
roofline_view

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": [{"en": "How to read it", "zh": "怎样读这张图"}, {"en": "On a GPU the picture shifts", "zh": "换到 GPU 上，图景就变了", "at": "**On a GPU the"}], "say": ["**On a GPU the"]}
# How to read it: batch-1 decode sits far to the left, at 0.5 FLOP/byte; batch 16, at about 6, lands beside the
# shortest prefill. The longer the prompt, the further right prefill sits. A point cannot rise above the flat roof:
# the peak is the best of the model's own matmuls, and a phase multiplies by the same weight matrices (with other
# row counts) and does more (the last line under the table above says how close the best phase came;
# `tests/test_roofline.py` checks that no phase exceeds the peak). The slope rests on a roughly measured bandwidth
# and is only an estimate. On a CPU the ridge is low, because a CPU has little arithmetic for its memory bandwidth:
# the device line above gives this machine's, at most a few dozen FLOP per byte, against 295 for an H100. A prefill
# far shorter than an H100 needs is then already compute-bound (a cell further down gives the length here), and
# batch-1 decode, at 0.5 FLOP per byte, is deep in the memory-bound region.
#
# Usually the points do not reach the roof (compare the table's GFLOP/s with its roof). A decode step runs
# hundreds of
# small operations (in every layer: norms, projections, RoPE, attention and MLP), each with its own Python and
# dispatch cost, and few of them are large enough to keep memory busy. The roof is an upper bound, not a
# prediction.
#
# **On a GPU the picture shifts.** An H100's spec sheet gives 989 TFLOP/s in bfloat16 and 3.35 TB/s: compare
# them with the numbers measured above. Its arithmetic outgrows its bandwidth far more than a CPU's does, so
# its ridge is near 300 FLOP/byte. Where the roofline would put this model and Llama-7B there, computed from
# the spec sheet and not measured:

# %% slide={"code": false, "output": false}
h100 = roofline.KNOWN_DEVICES["H100 SXM"]
predicted = []
print(viz.tr("                             FLOP/byte    bound  time at the roof"))
for name, cfg in (("SmolLM2-135M", config), ("Llama-7B", llama_7b)):
    for c in (cost.prefill_cost(cfg, 300, dtype="bf16"), cost.prefill_cost(cfg, 1000, dtype="bf16"),
              cost.decode_cost(cfg, 1001, dtype="bf16"), cost.decode_cost(cfg, 1001, batch_size=64, dtype="bf16")):
        seconds = c.flops / h100.attainable(c.intensity)
        label = f"{name} {viz.tr(c.phase)} " + (f"s={c.length}" if c.phase == "prefill" else f"b={c.batch_size}")
        bound = viz.tr("memory" if h100.bound(c.intensity) == "memory bandwidth" else "compute")  # short, for the column
        print(f"{viz.pad(label, 28)}{c.intensity:>10.1f}{viz.rpad(bound, 9)}{seconds * 1e3:>15.3f} ms")
        if name == "Llama-7B":
            predicted.append(PhasePoint(c.phase, c.batch_size, c.length, c.flops, c.bytes, seconds))
fig = viz.roofline_figure(h100, predicted)
fig.for_each_trace(lambda t: t.update(name=t.name.replace(viz.tr("(measured)"), viz.tr("(Llama-7B, predicted)"))))
fig

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Where prefill crosses the ridge", "zh": "预填充在哪里越过屋脊点"}}
# On an H100 a prefill is compute-bound only from a few hundred tokens on. Decode at batch 1 is far below,
# for both models, and even batch 64 does not reach the ridge.
#
# **Where prefill crosses the ridge.** The ridge is $\text{peak} / \text{bandwidth}$: the intensity a computation
# needs to keep the arithmetic busy. Prefill's intensity grows with the prompt, since every weight read is used once
# per prompt token: about 0.4 FLOP per byte per token for this model in float32, twice that in bfloat16 (10.7). So
# "prefill is compute-bound", as the course notes say, holds from the prompt length where the intensity reaches the
# ridge. On the spec-sheet H100, in bfloat16, with `teachllm.cost`:

# %% slide={"title": {"en": "The crossing, computed", "zh": "算出越过点"}, "code": [[10, 15]]}
def crossing(cfg, roof, dtype):
    """The shortest prompt whose prefill reaches `roof`'s ridge (its intensity grows with the length)."""
    return next(n for n in range(1, 100_000) if cost.prefill_cost(cfg, n, dtype=dtype).intensity >= roof.ridge)


print(viz.tr("H100 ridge: {ridge:.0f} FLOP/byte (bfloat16)", ridge=h100.ridge))
for dtype in ("float32", "bf16"):
    print(viz.tr("SmolLM2-135M prefill of 300 tokens, {dtype}: {x:.2f} FLOP/byte per prompt token", dtype=dtype,
                 x=cost.prefill_cost(config, 300, dtype=dtype).intensity / 300))
for name, cfg in (("SmolLM2-135M", config), ("Llama-7B", llama_7b)):
    n_star = crossing(cfg, h100, "bf16")
    print(viz.tr("{name:<14} prefill is compute-bound on an H100 from {n} tokens on ({before_x:.1f} FLOP/byte at "
                 "{before}, {x:.1f} at {n})", name=name, n=n_star, before=n_star - 1,
                 before_x=cost.prefill_cost(cfg, n_star - 1, dtype="bf16").intensity,
                 x=cost.prefill_cost(cfg, n_star, dtype="bf16").intensity))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "And on this CPU", "zh": "在这台 CPU 上"}}
# And on this CPU, with the ridge measured above (float32, the dtype the model runs in here; the ridge moves
# with the measurement):

# %% tags=["nbval-ignore-output"]
print(viz.tr("this CPU's ridge: {ridge:.1f} FLOP/byte ({dtype})", ridge=device.ridge, dtype=device.dtype))
for name, cfg in (("SmolLM2-135M", config), ("Llama-7B", llama_7b)):
    print(viz.tr("{name:<14} prefill is compute-bound here from {n} tokens on", name=name,
                 n=crossing(cfg, device, lm.dtype)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Two more caveats", "zh": "另外两点说明", "at": "The course notes"}}
# On this CPU a much shorter prompt is enough (the cell above says how many); on an H100
# this model needs 356 tokens and Llama-7B 305. Below that, even prefill waits on memory: a
# 300-token prefill of this model on an H100 is memory-bound, which is what the table of section 10.9 shows. The
# course notes (*LLM Inference Flow* §3.2, the interview answer §2.2) call prefill compute-bound. They mean GPUs,
# and on a GPU that holds only for long prompts or large batches of prompts (on this CPU, whose ridge is low, a
# much shorter prompt suffices, as the cell above shows).
#
# The course notes also quote GPU utilisation, and they disagree: *LLM Generation Process* (§6.1) gives prefill
# 50–80% and decode 10–30%; the interview answer gives 80–95% and 10–30% in its table, and "usually
# below 20%" for decode in its text. Section 10.9 measures the same shares on this machine.
#
# There is one more thing the roofline ignores. A batch-1 decode step of the small model on an H100 would need
# about 0.09 ms of memory traffic, but it launches hundreds of kernels, each costing a few microseconds. Tiny
# models on big GPUs are limited by launch overhead, not by the roof.

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["The comparison table"]}
# ## 10.9 Prefill against decode, with numbers *(optional)*
#
# The comparison table of *LLM Generation Process* (§6.1), filled in for this model: a prefill of N = 300 tokens
# against the decode step that follows it (T = 301 keys). First the rows that follow from counting:

# %% slide={"code": false}
N = 300
pre, dec = cost.prefill_cost(config, N, dtype=lm.dtype), cost.decode_cost(config, N + 1, dtype=lm.dtype)
pre_f, dec_f = cost.prefill_flops(config, N), cost.decode_flops(config, N + 1)
pre16, dec16 = cost.prefill_cost(config, N, dtype="bf16"), cost.decode_cost(config, N + 1, dtype="bf16")
d = config.head_dim


weights = viz.tr("weights {mb:.0f} MB", mb=pre.weight_bytes / 1e6)
table = [  # row name, prefill, decode; viz.tr: in the reader's language
    (viz.tr("tokens per pass"), f"{N}", "1"),
    (viz.tr("attention, per head"), f"Q[{N}×{d}] × K[{N}×{d}]ᵀ → [{N}×{N}]",
     f"Q[1×{d}] × K[{N + 1}×{d}]ᵀ → [1×{N + 1}]"),
    (viz.tr("attention FLOPs (O(N²d), O(Nd))"), f"{pre_f.attention / 1e9:.3f} G", f"{dec_f.attention / 1e9:.4f} G"),
    (viz.tr("all FLOPs"), f"{pre.flops / 1e9:.2f} G", f"{dec.flops / 1e9:.3f} G"),
    (viz.tr("memory read"), weights, viz.tr("weights {mb:.0f} MB", mb=dec.weight_bytes / 1e6)
                                     + f" + KV {dec.kv_read_bytes / 1e6:.1f} MB"),
    (viz.tr("FLOP per byte, float32"), f"{pre.intensity:.1f}", f"{dec.intensity:.2f}"),
    (viz.tr("FLOP per byte, bfloat16"), f"{pre16.intensity:.1f}", f"{dec16.intensity:.2f}"),
    (viz.tr("bottleneck on an H100 (ridge {ridge:.0f})", ridge=h100.ridge), viz.tr(h100.bound(pre16.intensity)),
     viz.tr(h100.bound(dec16.intensity))),
    (viz.tr("compute-bound on an H100 from"), viz.tr("{n} prompt tokens", n=crossing(config, h100, "bf16")),
     viz.tr("never at batch 1")),
]
print(f"{'':<36}{viz.pad(viz.tr('prefill'), 38)}{viz.tr('decode')}")
for name, p, q in table:
    print(f"{viz.pad(name, 36)}{viz.pad(p, 38)}{q}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The rows that need a clock", "zh": "需要计时的几行"}}
# And the rows that need a clock, from the measurements of 10.8 (this machine, this run):

# %% tags=["nbval-ignore-output"] slide={"code": false}
p_pre = next(p for p in points if p.phase == "prefill" and p.length == N)
p_dec = next(p for p in points if p.phase == "decode" and p.batch_size == 1)
print(f"{'':<36}{viz.rpad(viz.tr('prefill'), 12)}{viz.rpad(viz.tr('decode'), 12)}")
print(f"{viz.pad(viz.tr('time'), 36)}{p_pre.seconds * 1e3:>9.1f} ms{p_dec.seconds * 1e3:>9.1f} ms")
print(f"{viz.pad(viz.tr('time per token'), 36)}{p_pre.seconds / N * 1e3:>9.2f} ms{p_dec.seconds * 1e3:>9.1f} ms")
print(f"{viz.pad(viz.tr('achieved GFLOP/s'), 36)}{p_pre.achieved_flops / 1e9:>12.1f}{p_dec.achieved_flops / 1e9:>12.2f}")
print(f"{viz.pad(viz.tr('utilisation: % of peak FLOP/s'), 36)}{p_pre.achieved_flops / device.peak_flops:>12.1%}"
      f"{p_dec.achieved_flops / device.peak_flops:>12.1%}")
print(f"{viz.pad(viz.tr('bytes/s: % of measured bandwidth'), 36)}{p_pre.achieved_bandwidth / device.bandwidth:>12.1%}"
      f"{p_dec.achieved_bandwidth / device.bandwidth:>12.1%}")
for name, p in (("prefill", p_pre), ("decode", p_dec)):
    print(viz.tr("bottleneck of {name} here: {bound} ({intensity:.1f} FLOP/byte, ridge {ridge:.1f})", name=viz.tr(name),
                 bound=viz.tr(device.bound(p.intensity)), intensity=p.intensity, ridge=device.ridge))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the clock says", "zh": "计时说明什么"}}
# Prefill's share of the peak is many times decode's: decode does little arithmetic per byte it reads. That is
# what
# the table of *LLM Generation Process* says. The exact percentages are this machine's, and on a shared
# CPU they move from run to run. Prefill's share stays at or below 100%: the peak is the fastest of the
# model's own matmuls, with the same threads.
#
# The same 300-token prefill would be memory-bound on an H100, as the "bottleneck on an H100" row says: it is below
# the 356-token crossing of 10.8. Against the utilisation ranges of the course notes (10.8), this run's shares of
# the peak:

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "The course notes' utilisation ranges, checked", "zh": "核对课程资料给出的利用率区间"}, "code": false}
quoted_ranges = [("LLM Generation Process", "prefill", 0.50, 0.80), ("LLM Generation Process", "decode", 0.10, 0.30),
                 ("interview answer, table", "prefill", 0.80, 0.95), ("interview answer, table", "decode", 0.10, 0.30),
                 ("interview answer, text", "decode", 0.0, 0.20)]
shares = {"prefill": p_pre.achieved_flops / device.peak_flops, "decode": p_dec.achieved_flops / device.peak_flops}
for source, phase, lo, hi in quoted_ranges:
    share = shares[phase]
    verdict = "inside" if lo <= share <= hi else ("below" if share < lo else "above")
    print(f"{viz.pad(viz.tr(source), 26)}{viz.pad(viz.tr(phase), 8)}{lo:>4.0%}–{hi:<4.0%}  "
          + viz.tr("this run {share:6.1%}: {verdict}", share=share, verdict=viz.tr(verdict)))
print(viz.tr("the roof caps decode's share here at intensity ÷ ridge = {intensity:.2f} ÷ {ridge:.1f} = {cap:.1%}",
             intensity=p_dec.intensity, ridge=device.ridge, cap=p_dec.intensity / device.ridge))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Read the verdicts above: they are this run's. Decode's share cannot be high on a machine whose ridge lies far
# above decode's intensity (this CPU's and the H100's both do; the cells above print their ridges): below the ridge the
# roof caps it at $\text{intensity} / \text{ridge}$ (the last line), and a real step usually lands below the roof
# (the slope rests on a roughly measured bandwidth). A decode share no larger than that cap supports the interview
# answer's text ("below 20%") rather than the 10–30% of both tables. Prefill's share depends on how busy the
# machine is: on a quiet one a long prefill comes near the peak, since it multiplies by the very weight matrices
# the peak was measured on, and the busier the machine, the further it falls short; the verdicts say which
# document's range this run lands in. Two cautions: the course notes speak of GPUs serving large models, and their
# "GPU utilisation" is often the busy time a tool such as `nvidia-smi` reports, not the share of peak FLOP/s
# measured here.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.10 The utilisation timeline *(optional)*
#
# *LLM Generation Process* (§6.2) draws a Gantt chart: one long, busy prefill bar, then many short, mostly idle
# decode steps. Here
# it is measured. `PhaseTimeline` generates 12 tokens greedily after a 100-token prompt, times every step,
# and divides each step's FLOPs by its time and by the device's peak.

# %%
long_prompt = " ".join(["The printing press spread across Europe in the fifteenth century, and books became "
                        "cheap enough for ordinary readers."] * 5)
print(viz.tr("{n} prompt tokens", n=len(tok.encode(long_prompt))))
timeline_view = viz.PhaseTimeline(lm, long_prompt, tl.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True),
                                  device=device)

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "Prefill busy, decode idle", "zh": "预填充忙碌，解码空闲"}, "code": false}
segments = timeline_view.measure()  # generate once and time each step
for phase in ("prefill", "decode"):
    seg = [x for x in segments if x.phase == phase]
    print(viz.pad(viz.tr(phase), 8) + viz.tr(" {n:>2} step(s), {ms:7.1f} ms in all, mean utilisation {u:6.1%} of peak "
                                             "FLOP/s", n=len(seg), ms=sum(x.seconds for x in seg) * 1e3,
                                             u=sum(x.utilisation for x in seg) / len(seg)))
viz.timeline_figure(segments)

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "The timeline widget", "zh": "时间线控件"}}
timeline_view  # the widget: "generate and time" measures again

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.11 Batching decode
#
# *LLM Generation Process* (§6.3) says that a decode step for one request reads all the weights ("14GB" in its
# sketch, which names no model; a 7B model in float16 is about that size) to produce one token, and that a batch
# of 32 reads them once for 32 tokens: 32 times the work for the same bytes. Counted for this model at 301 keys:

# %% slide={"code": false}
print(viz.tr("decode step at T = {T} keys", T=N + 1))
print(viz.tr("batch    GFLOP  weights MB  KV read MB  FLOP/byte"))
for batch in (1, 4, 16, 32):
    c = cost.decode_cost(config, N + 1, batch_size=batch, dtype=lm.dtype)
    print(f"{batch:>5}{c.flops / 1e9:>9.2f}{c.weight_bytes / 1e6:>12.1f}{c.kv_read_bytes / 1e6:>12.1f}"
          f"{c.intensity:>11.2f}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Llama-7B on an H100: the cache catches up", "zh": "H100 上的 Llama-7B：缓存追上来"}}
# The weights are read once whatever the batch. But each sequence reads its own KV cache, so 32 times the
# work for nearly the same bytes holds only while the cache is small next to the weights. For a 7B model, the size
# the 14GB stands for (*LLM Inference Flow* §3.3 estimates Llama-7B too), in bfloat16, here on an H100 at
# 1,000 tokens of context, the roofline predicts:

# %% slide={"code": false}
print(viz.tr("batch  weights GB  KV read GB  FLOP/byte  decode tokens/s  × batch 1"))
base = None
for batch in (1, 8, 32, 128):
    c = cost.decode_cost(llama_7b, 1000, batch_size=batch, dtype="bf16")
    tokens_per_s = batch * h100.attainable(c.intensity) / c.flops  # b tokens per step; step = FLOPs / attainable
    base = base or tokens_per_s
    print(f"{batch:>5}{c.weight_bytes / 1e9:>12.1f}{c.kv_read_bytes / 1e9:>12.1f}{c.intensity:>11.1f}"
          f"{tokens_per_s:>17.0f}{tokens_per_s / base:>11.1f}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What batching buys, predicted and measured", "zh": "批处理的收益：预测与实测"}, "say": ["Now measured on"]}
# At batch 32 the KV cache (16.8 GB) outweighs the weights, and throughput grows about 15 times, not 32.
# Llama-2-7B has no grouped-query attention: every one of its 32 heads stores its own K and V. This is why
# later models share KV heads, and why chapter 12 manages the cache in pages.
#
# Now measured on this machine. `teachllm.bench.batch_throughput` prefills a short prompt for 1, 4 and 16
# sequences, times 4 greedy decode steps, and puts the roofline's prediction (from the roof measured in
# 10.8) beside each:

# %% tags=["nbval-ignore-output"] slide={"code": [[3, 4]]}
from teachllm.bench import Settings, batch_throughput  # noqa: E402

rows = batch_throughput(lm, tok.encode("The capital of France is"),
                        Settings(batch_sizes=(1, 4, 16), batch_steps=4, reps=2, budget_s=1.5), device)
print(viz.tr("batch decode tokens/s  × batch 1  roofline  × batch 1"))
for r in rows:
    print(f"{r['batch_size']:>5}{r['tokens_per_s']:>16.1f}{r['ratio_to_batch_1']:>11.2f}"
          f"{r['predicted_tokens_per_s']:>10.1f}{r['predicted_ratio']:>11.2f}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Why not 16 times", "zh": "为何不到 16 倍"}}
# Batch 16 gives many times the tokens per second of batch 1, though not 16 times as many. The roofline's own
# prediction (the last column) falls short too, and why depends on this machine's ridge (10.8). A step of the
# larger batch does one token's FLOPs for every sequence while reading the weights once, so its intensity is many
# times batch 1's; a little less than in proportion, because each sequence also reads its own K and V.
# - If the ridge lies above the step's intensity, the step is still memory-bound. Its bytes grow a little with the
#   batch, so the prediction falls just short of the batch size.
# - If the ridge lies below it, the step has crossed the ridge and the arithmetic limits it. The prediction is then
#   the ridge divided by batch 1's intensity, far short of the batch size when the ridge is low.
#
# On a GPU, with its ridge near 300, the gain keeps growing to much larger batches, though less than in
# proportion once the KV cache outweighs the weights (the Llama-7B table above). Either way, each sequence waits
# for the whole batch, so batching buys throughput at the cost of latency per token: a step takes (batch size ÷ the
# table's factor) times as long as at batch 1.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10.12 TTFT and tokens per second *(optional)*
#
# The two metrics of chapter 1 follow from all this:
# - **TTFT** (time to first token) is mostly one prefill. Past the ridge (10.8) prefill is compute-bound, so TTFT
#   grows with the prompt's FLOPs: roughly linearly in its length, and faster once attention matters.
# - **TPOT** (time per output token) is one decode step. A step is memory-bound, so at batch 1 it cannot be
#   shorter than one read of the weights and the cache (the next cell shows how far this CPU is from that bound).
#   $1 / \text{TPOT}$ is the **decode rate**.
# - **tokens/s**, as chapter 1 defines it (`Metrics.tokens_per_s`), is
#   $\text{output tokens} / \text{end-to-end time}$, TTFT included, so it is below the decode rate (as long as
#   TTFT is longer than TPOT); the
#   shorter the answer, the more. A server's throughput is $\text{batch} / \text{step time}$, which batching
#   raises.
#
# The roofline gives a lower bound for each. Compared with the measured timeline of section 10.10:

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "Measured against the bounds", "zh": "实测与下界对比"}, "code": false}
n_prompt = segments[0].tokens
pre_cost = cost.prefill_cost(config, n_prompt, dtype=lm.dtype)
dec_cost = cost.decode_cost(config, segments[-1].tokens, dtype=lm.dtype)
ttft, tpot = segments[0].seconds, sum(x.seconds for x in segments[1:]) / (len(segments) - 1)
print(viz.tr("TTFT ({n}-token prompt): measured {measured:7.1f} ms, roofline bound {roof:6.1f} ms (bound: {bound})",
             n=n_prompt, measured=ttft * 1e3, roof=pre_cost.flops / device.attainable(pre_cost.intensity) * 1e3,
             bound=viz.tr(device.bound(pre_cost.intensity))))
print(viz.tr("TPOT:                     measured {measured:7.1f} ms, roofline bound {roof:6.1f} ms (bound: {bound})",
             measured=tpot * 1e3, roof=dec_cost.flops / device.attainable(dec_cost.intensity) * 1e3,
             bound=viz.tr(device.bound(dec_cost.intensity))))
print(viz.tr("decode rate (1 ÷ TPOT): {rate:.1f} tokens per second; the roof allows {roof:.1f}", rate=1 / tpot,
             roof=device.attainable(dec_cost.intensity) / dec_cost.flops))
print(viz.tr("tokens/s (output tokens ÷ end-to-end time): {n} ÷ {s:.3f} s = {rate:.1f}", n=len(segments),
             s=sum(x.seconds for x in segments), rate=len(segments) / sum(x.seconds for x in segments)))

# %% [markdown] slideshow={"slide_type": "subslide"}
# For Llama-7B on an H100, the same bounds, from the spec sheet (section 10.8), at batch 1:

# %%
pre_7b, dec_7b = cost.prefill_cost(llama_7b, 1000, dtype="bf16"), cost.decode_cost(llama_7b, 1001, dtype="bf16")
ttft_7b, tpot_7b = (c.flops / h100.attainable(c.intensity) for c in (pre_7b, dec_7b))
print(viz.tr("Llama-7B on an H100: TTFT ≥ {ttft:.1f} ms for a 1,000-token prompt, TPOT ≥ {tpot:.2f} ms, decode rate ≤ "
             "{rate:.0f} tokens per second", ttft=ttft_7b * 1e3, tpot=tpot_7b * 1e3, rate=1 / tpot_7b))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What engines do about it", "zh": "引擎如何应对"}}
# Real engines reach a good part of that. The course notes sort their optimisations by phase. The table in
# *LLM Inference Flow* §5.3 has three rows:
# - prefill, bound by compute: operator fusion, FlashAttention;
# - decode, bound by memory: KV-cache compression, batching (continuous batching, chapter 11);
# - both: quantisation (§10.13), speculative decoding (chapter 13).
#
# The interview answer (§7) has two lists only, prefill and decode, and puts speculative decoding under decode.

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["These kernels are"]}
# ## 10.13 Fewer bytes per weight: the model as it ships *(optional)*
#
# Decode at batch 1 reads every weight once per token, so its speed is set by the bytes, and the bytes by
# how many bits each weight takes. The bundled file is not float32: it stores the layers' matrices as
# **Q4_1** (blocks of 32 weights, each a 4-bit integer $q$ in 0..15, with a float16 scale $d$ and minimum $m$
# per block: $w = dq + m$, 5 bits per weight in all) and the embedding, which is also the LM head, as **Q8_0**
# (8-bit integers, one float16 scale per 32: 8.5 bits per weight). `tl.load()` de-quantises all of it to
# float32. `tl.load(weights="gguf")` keeps the blocks and multiplies with them directly, through PyTorch's
# packed 4-bit kernel (`torch._weight_int4pack_mm_for_cpu`), in a small layer class of `teachllm.fastpath.quant`.
# `kernel="int4"` asks for that kernel on every machine, so that every machine compares the same kernel (the
# timings still differ from machine to machine); which kernel is fastest depends on the CPU (the end of this
# section).
#
# These kernels are CPU kernels: `weights="gguf"` always runs on the CPU, in float32 around the packed
# matrices. So this whole section runs on the CPU, and compares the 4-bit model with float32 and bfloat16
# models on the CPU too, whatever device the rest of the chapter uses (on a GPU machine, a float32 copy is
# loaded for it):

# %% slide={"title": {"en": "The 4-bit model, inside", "zh": "4 位模型的内部"}, "code": [1, 6, [16, 21]], "output": [[2, 7]]}
qlm = tl.load(weights="gguf", kernel="int4", device="cpu", dtype="float32")  # the file's own 4 and 8 bits
on_cpu = lm.device.type == "cpu" and lm.dtype == torch.float32
lm32 = lm if on_cpu else tl.load(device="cpu", dtype="float32")  # the float32 reference, beside the 4-bit model
print(viz.tr("4-bit model on {q}; float32 reference on {ref}", q=qlm.device, ref=lm32.device)
      + ("" if on_cpu else viz.tr(" (this chapter's model runs on {device} in {dtype})", device=lm.device, dtype=lm.dtype)))
gate = qlm.model.layers[0].mlp.gate_proj


def sizes(layer):  # a quantised layer's shape, its bytes as stored and as float32, its kernel
    stored, as_float32 = layer.sizes_mib()
    return viz.tr("{cls}: {i} → {o}, {mib:.2f} MiB as stored (float32: {mib32:.2f} MiB), kernel {kernel}",
                  cls=type(layer).__name__, i=layer.in_features, o=layer.out_features, mib=stored, mib32=as_float32,
                  kernel=layer.kernel)


print(sizes(gate))
print(viz.tr("row 0, block 0: q = {q}", q=gate.q[0, :32].tolist()))
print(viz.tr("                d = {d:.6g}, m = {m:.6g}", d=float(gate.d[0, 0]), m=float(gate.m[0, 0])))
print(viz.tr("dequantize() equals tl.load()'s float32 weight: {same}",
             same=torch.equal(gate.dequantize(), lm32.model.layers[0].mlp.gate_proj.weight)))
print(sizes(qlm.model.lm_head))
print(viz.tr("bits per weight: Q4_1 (32 × 4 bits + two float16) / 32 = {q4}, Q8_0 (32 × 8 bits + one float16) / 32 = "
             "{q8}", q4=(32 * 4 + 2 * 16) / 32, q8=(32 * 8 + 16) / 32))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Q4_1, and the bytes a step reads", "zh": "Q4_1 与每步读取的字节"}}
# The kernel computes $w = (q - 8)s + z$ per group, which is Q4_1 with $s = d$ and $z = m + 8d$. The Q8_0 head has
# no matching CPU kernel (PyTorch's int8 one takes one scale per row, not per 32 weights), so it is written as two
# 4-bit digits, $q + 128 = 16 \cdot \mathit{hi} + \mathit{lo}$, and goes through the 4-bit kernel twice; each pass
# carries its own bfloat16 scales and zeros, so the head reads a little more than its Q8_0 blocks would (the 4-bit
# row of the table below counts it so). The embedding lookup still uses the float32 table: it reads one row per
# token, which costs memory, not time.
#
# What one decode step reads, at 96 tokens of context (weights + K and V read and written; the cache stays
# in the model's activation dtype). int8 here means Q8_0 blocks for every matrix; no int8 model is built
# in this chapter, so it gets a prediction only:

# %% slide={"code": false}
T = 96
kv32, kv16 = cost.decode_cost(config, T, dtype="float32"), cost.decode_cost(config, T, dtype="bf16")
kv_only = {"float32": kv32.bytes - kv32.weight_bytes, "bfloat16": kv16.bytes - kv16.weight_bytes}
step_bytes = {
    "float32": kv32.weight_bytes + kv_only["float32"],
    "bfloat16": kv16.weight_bytes + kv_only["bfloat16"],
    "int8 (Q8_0)": config.n_params * 34 // 32 + kv_only["float32"],
    "4-bit (this file)": quant.weight_bytes_read(qlm.model) + kv_only["float32"],
}
for name, b in step_bytes.items():
    print(viz.pad(viz.tr(name), 20) + viz.tr("{mb:8.1f} MB per step   {x:4.1f}× fewer than float32", mb=b / 1e6,
                                             x=step_bytes["float32"] / b))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The roofline's decode rate, per precision", "zh": "各精度下 Roofline 模型给出的解码速率"}}
# A memory-bound step takes at least $\text{bytes} / \text{bandwidth}$, so the roofline (with the CPU's bandwidth,
# measured in 10.8 when the chapter runs on the CPU) predicts a decode rate (tokens per second, $1 / \text{TPOT}$) of
# $\text{bandwidth} / \text{bytes per step}$. Now the measurement:
# greedy decode of 16 tokens after a short prompt, for float32, bfloat16 (`tl.load(device="cpu", dtype="bfloat16")`)
# and the file's own blocks, the three runs taking turns (`teachllm.bench.greedy_speeds`; a few seconds). They run on
# one thread: each of the 4-bit kernel's calls is tiny, and on a busy machine threads that wait for each other
# cost more than they gain:

# %% tags=["nbval-ignore-output"] slide={"code": false}
from teachllm.bench import QUALITY_PROMPTS, greedy_speeds, quality, teachllm_greedy  # noqa: E402

lm16 = tl.load(device="cpu", dtype="bfloat16")
models = {"float32": lm32, "bfloat16": lm16, "4-bit (this file)": qlm}  # all three on the CPU
cpu = device if on_cpu else roofline.measure_device("cpu", torch.float32)  # the CPU's roofs
ids = tok.encode("The history of the printing press begins")
threads = torch.get_num_threads()
torch.set_num_threads(1)
speeds = greedy_speeds({name: (lambda k, m=m: teachllm_greedy(m, ids, k)) for name, m in models.items()}, 16, 2)
torch.set_num_threads(threads)
flops = cost.decode_flops(config, T).total  # FLOPs of one step: the same in every precision
print(viz.tr("                     MB/step roofline decode rate  measured  × float32  × bandwidth"))
rows = []
for name, b in step_bytes.items():
    predicted = cpu.bandwidth / b
    measured = speeds[name]["decode_tokens_per_s"] if name in speeds else None
    rows.append(dict(name=viz.tr(name), intensity=flops / b, predicted_flops=flops * predicted,
                     measured_flops=flops * measured if measured else None))
    if measured:
        print(f"{viz.pad(viz.tr(name), 20)}{b / 1e6:>8.1f}{predicted:>21.1f}{measured:>10.1f}"
              f"{measured / speeds['float32']['decode_tokens_per_s']:>11.2f}{b * measured / cpu.bandwidth:>13.2f}")
    else:
        print(f"{viz.pad(viz.tr(name), 20)}{b / 1e6:>8.1f}{predicted:>21.1f}{'—':>10}")

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "Where each precision lands", "zh": "各精度落在哪里"}, "code": false}
viz.figures.precision_roofline_figure(cpu, rows)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": [{"en": "What the figure shows", "zh": "图中可见什么"}, {"en": "What it costs in quality", "zh": "质量上的代价", "at": "What it costs"}], "say": ["**Prefill and decode"]}
# Open circles are where the roof puts each precision, dots where it landed. All of them sit left of the ridge. The
# fewer the bytes per weight, the further up and to the right a decode step's dot moves along the sloped,
# memory-bound part of the roof, nearer the ridge; and the 4-bit model is much faster than float32 here (the table
# gives this run's factor). bfloat16 halves the bytes, but how much of that becomes speed depends on how well the CPU's matmul
# kernels handle bfloat16 (the table shows this machine). How near each dot comes to its circle is the × bandwidth
# column, and a dot may even pass its circle: the bandwidth is measured only roughly, by one timed copy that reads
# and writes, with this chapter's threads, on a shared machine, while a decode step mostly reads, on one thread.
# Here the circle is an estimate, not a strict upper bound. A dot far from its circle is so for the reason of 10.8:
# a step is hundreds of small operations.
#
# **Prefill and decode take the same path.** Each matrix multiplies with the same kernel whatever the prompt's
# length: there is no separate de-quantised path for long prompts.
#
# What it costs in quality, against the float32 model: the largest difference of any logit and the mean KL
# divergence over 20 prompts, and the perplexity of an English and a Chinese paragraph (`teachllm.bench.quality`;
# a few seconds):

# %% tags=["nbval-ignore-output"] slide={"code": false}
print(viz.tr("                     max |Δlogit|   mean KL  ppl English  ppl Chinese"))
losses = {}
for name in ("bfloat16", "4-bit (this file)"):
    q = losses[name] = quality(models[name].forward, lm32.forward, tok)
    print(f"{viz.pad(viz.tr(name), 20)}{q['max_abs_logit_diff']:>13.2f}{q['mean_kl']:>10.1e}{q['ppl_english']:>13.2f}"
          f"{q['ppl_chinese']:>13.2f}")
print(f"{'float32':<20}{0:>13.2f}{0:>10.1e}{q['ppl_english_float32']:>13.2f}{q['ppl_chinese_float32']:>13.2f}")
four = losses["4-bit (this file)"]
assert four["max_abs_logit_diff"] < 1.5 and four["mean_kl"] < 3e-3  # the bounds of tests/test_quant.py
for lang in ("english", "chinese"):
    assert abs(four[f"ppl_{lang}"] / four[f"ppl_{lang}_float32"] - 1) < 0.02  # perplexity within 2%
assert len(QUALITY_PROMPTS) == 20  # the prompts the logit difference and the KL are taken over

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Where the difference comes from", "zh": "差异从何而来"}}
# The 4-bit integers are exactly the file's (every `dequantize()` equals the float32 weight), so the whole
# difference is bfloat16 rounding inside the kernel: it takes bfloat16 activations, keeps the per-block
# scale and zero in bfloat16, and returns bfloat16. That moves a logit by less than 1.5 and the perplexity
# by less than 2% (the cell asserts both). Beside bfloat16 (the float32 weights run in bfloat16), the 4-bit model
# moves the logits less: its largest difference and its mean KL are both smaller. It does not move every perplexity
# less: on the Chinese paragraph its perplexity rises, while bfloat16's hardly moves (the table gives this run's
# numbers). Other
# combinations were tried: float32 activations into the same kernel give almost exactly the float32 logits but
# run slower than float32 MKL, and splitting the activations or the scales into a bfloat16 high and low part
# costs a second pass without removing the output's rounding. Those numbers are in the README.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **The two perplexity columns do not compare the languages.** Perplexity is the exponential of the loss
# averaged over tokens, and the tokenizer cuts the two paragraphs very differently. The float32 model's loss on each, per token and per
# byte of text:

# %%
from teachllm.bench.decode import bits_per_byte, perplexity  # noqa: E402

per = {}  # paragraph → (perplexity per token, bits per byte), float32
for name, text in (("English", tl.texts.ENGLISH), ("Chinese", tl.texts.CHINESE)):
    ids = tok.encode(text)
    logits = lm32.forward(ids)  # [1, S, V]
    per[name] = perplexity(logits, ids), bits_per_byte(logits, ids, tok)
    print(viz.tr("{name} paragraph: {chars} characters, {n_bytes} bytes, {tokens} tokens; perplexity {ppl:.2f} per "
                 "token, {bpb:.2f} bits per byte", name=viz.tr(name), chars=len(text), n_bytes=len(text.encode()),
                 tokens=len(ids), ppl=per[name][0], bpb=per[name][1]))
print(viz.tr("Chinese ÷ English, in bits per byte: {ratio:.1f}", ratio=per["Chinese"][1] / per["English"][1]))
assert per["Chinese"][0] < per["English"][0] and per["Chinese"][1] > 2 * per["English"][1]  # per token, per byte

# %% [markdown] slideshow={"slide_type": "subslide"}
# Per token the Chinese paragraph looks the easier one. But its 119 characters take 198 tokens, and the 389
# characters of the English one take 72: a Chinese character is often two or three byte-level pieces, and
# once the first piece is chosen the others are easy to guess, which pulls the average per token down. Shared
# out over the bytes of the text, a measure that does not depend on how the text was cut, the Chinese
# paragraph costs the model 2.4 times as many bits per byte. Compare languages, and tokenizers, per byte, never per
# token. The bfloat16 and 4-bit rows of the quality table above compare what they were made for: each precision
# against float32, on the same paragraph.

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Wide vectors against narrow ones", "zh": "宽向量与窄向量", "at": "With wide vectors"}}
# ### Which kernel is fastest depends on the CPU
#
# The 4-bit kernel is one way to multiply by these weights. A layer could also keep a float16 or a bfloat16 copy
# and use the CPU's ordinary matrix kernels, or keep float32. Which is fastest is a trade between two costs:
#
# - **Bytes read.** A 4-bit weight is half a byte, a float16 weight two bytes, a float32 weight four. A decode
#   step reads every weight once, so fewer bytes mean less waiting for memory.
# - **Work per byte.** A 4-bit weight cannot be multiplied as it is. The kernel first unpacks it (shift and
#   mask), removes the offset, scales it, and converts the activations to bfloat16. What that costs depends on
#   the CPU's vector instructions: how many numbers one instruction handles (AVX-512 twice as many as AVX2, ARM's
#   NEON half as many as AVX2), and whether the CPU multiplies bfloat16 or 8-bit integers directly (AVX-512's
#   BF16 and VNNI extensions, ARM's SME). A float16 weight needs one conversion instruction (F16C), float32 none.
#
# With wide vectors the unpacking is cheap and the fewest bytes win. With narrower ones, a format with less work
# per weight can win, most of all for the largest matrix, the LM head. So `tl.load(weights="gguf")` does not guess.
# With `kernel="auto"`, the default, it times each group of same-shaped matrices on each kernel, once on this
# machine, inside a whole step's worth of matrix calls (so that the weights come from memory, as in a real step).
# It keeps the fastest (on a near-tie, the one closest to float32) and saves the choice for later loads
# (`teachllm.fastpath.kernels`; once: `describe()` below says how long it took). It chooses only among kernels that
# keep the model within the 4-bit path's bound against float32. int8 with one scale per row and fbgemm's dynamic
# int8 leave that bound (`tests/test_kernels.py` measures both and asserts it), so auto never picks them: they run
# only when requested explicitly (`kernel="int8"`, `kernel="dynamic-int8"`), for comparison. `describe()` prints
# this machine's choice: its CPU and instruction set, then one row per group with the milliseconds its matrices
# took in a step on each kernel. A laptop may choose differently; run the cell there.

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "What kernel=\"auto\" chose here", "zh": "kernel=\"auto\" 在这里选了什么"}}
auto = tl.load(weights="gguf", device="cpu", dtype="float32")  # kernel="auto": measured once here, then cached
print(auto.describe(viz.tr))  # viz.tr: in the reader's language; auto.describe() prints it in English

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A kernel of our own, for AVX2
#
# PyTorch's 4-bit kernel is written for AVX-512 first. With AVX2 only, as on most laptops, it turns every weight
# into a float32 and spends two multiply-adds on it, and it runs at about half its AVX-512 speed. So teachllm
# carries a kernel of its own, in C: `teachllm/fastpath/csrc/gemv_avx2.c`, `avx2` in the table above. It works the way
# llama.cpp does. The activations are cut into blocks as long as the weights' blocks, and each block is rounded
# to integers with a scale of its own. The file's integers are then multiplied by them as integers: one AVX2
# instruction multiplies sixteen pairs and adds them in pairs, exactly. llama.cpp rounds the activations to
# 8 bits; this kernel keeps twice as many, so its output stays far closer to float32 than the bfloat16 inside
# PyTorch's kernel (the cell measures both on one matrix).
# The first `tl.load(weights="gguf")` on a machine builds it with the C compiler already there, in about a
# second, and the chooser times it beside the others. Without a compiler, or without AVX2, it is left out, and
# `describe()` says why. On a CPU with AVX-512 a second file, `gemv_avx512.c` (`avx512`), does the same
# arithmetic with vectors twice as wide: one vector holds a block for each of two outputs. Both read the file's float16
# scales as they are. Here is the AVX2 kernel's inner step, the dot product of one block:

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "The AVX2 kernel's inner loop", "zh": "AVX2 内核的内层循环"}, "code": [[3, 5]]}
from teachllm.fastpath import kernels, native  # noqa: E402

source = native.SOURCE.read_text()
start = source.index("/* q . xi for one block")
print(source[start:source.index("}\n", start) + 2])
if native.why_not() is None:
    layer = qlm.model.layers[0].mlp.down_proj
    x = torch.randn(4, layer.in_features, generator=torch.Generator().manual_seed(0))  # [4, K]
    exact = x @ layer.dequantize().T  # [4, N]: float32
    names = ["int4", "avx2"] + (["avx512"] if native.why_not("avx512") is None else [])
    errors = {name: float((kernels.build(layer, name)(x) - exact).norm() / exact.norm()) for name in names}
    for name, error in errors.items():
        print(f"{name:<6} " + viz.tr("relative error against float32: {error:.0e}", error=error))
    assert errors["avx2"] < errors["int4"] / 10 and errors["avx2"] <= kernels.KERNELS["avx2"].bound
else:
    print(viz.tr("the avx2 kernel does not run here: {why}", why=native.why_not()))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The fast path beside the plain one
#
# A decode step is not only matrix multiplies. Between them come the norms, RoPE, attention, the cache and the
# bookkeeping of every small PyTorch operation: a few microseconds each, whatever its size. Once the weights
# are 4-bit, that part is a large share of the step. `model.py` writes the layer out as this course explains it;
# `teachllm.fastpath.fused` runs the same arithmetic in fewer operations. It stacks the rows of q, k and v into one matrix
# (and gate and up into another), so one call replaces three (or two). It rotates q and k together. The RMSNorm
# before q/k/v and before gate/up is PyTorch's fused `F.rms_norm`, or, on teachllm's C kernels, no PyTorch
# operation at all: the C file normalises the rows as it reads them. When one sequence decodes, RoPE, the cache
# write and attention, a dozen PyTorch operations a layer, are one C call (`teachllm/fastpath/csrc/attention.h`), the same
# sums in float32. `prefill` and `decode_step` take it when nothing is traced; `step_through` and a
# `Trace` take the plain loop, which they need. Here is the plain layer, then the fast loop:

# %% slide={"title": {"en": "The plain layer, and the fast path", "zh": "普通层与快速路径"}, "code": false, "output": [[1, 10], [12, 13]]}
import inspect  # noqa: E402

from teachllm.fastpath import fused  # noqa: E402
from teachllm.model import DecoderLayer  # noqa: E402

print(inspect.getsource(DecoderLayer.forward))
print(inspect.getsource(fused.FastPath.__call__))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The same logits", "zh": "相同的 logits"}}
# Both give the same logits, to float rounding:

# %%
prompt_ids = tok.encode("The history of the printing press begins")
on_fast = qlm.prefill(prompt_ids, qlm.new_cache(max_len=len(prompt_ids)))  # [1, V]: qlm.fast is used
on_plain = qlm.model(torch.tensor([prompt_ids]), qlm.new_cache(max_len=len(prompt_ids)))[:, -1]  # model.py's loop
print(viz.tr("the same logits within 1e-4: {same}", same=float((on_fast - on_plain).abs().max()) < 1e-4))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "And the time", "zh": "再看时间"}}
# And the time: a step on each path, the milliseconds the quantised matrices take of it (each called once,
# `kernels.matmul_ms`), and the share outside them (32 tokens each, taking turns, one thread):

# %% tags=["nbval-ignore-output"] slide={"code": [[12, 15]]}
from teachllm.lm import LanguageModel  # noqa: E402

plain = LanguageModel(auto.model, auto.tokenizer, name="plain loop")  # the same weights; its `fast` is None
threads = torch.get_num_threads()
torch.set_num_threads(1)
paths = {"fast path": auto, "plain loop": plain}
runs = {name: (lambda k, m=m: teachllm_greedy(m, prompt_ids, k)) for name, m in paths.items()}  # after the prompt
matmuls = kernels.matmul_ms(auto.model)  # the matrices alone, before the steps and after: noise only slows them
speeds = greedy_speeds(runs, 32, 3)
matmuls = min(matmuls, kernels.matmul_ms(auto.model))
torch.set_num_threads(threads)
for name, row in speeds.items():
    step = 1e3 * row["step_s"]
    print(viz.pad(viz.tr(name), 12) + viz.tr("{step:6.1f} ms a step, {matrices:5.1f} ms in the matrices, {outside:4.0%} "
                                             "outside", step=step, matrices=matmuls, outside=1 - matmuls / step))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The matrices are timed on their own, apart from the steps, so on a busy machine the two timings can disagree by a
# millisecond or two; run the cell again if the share outside looks off. Both paths multiply by the same matrices;
# what the fast path removes is most of the time outside them (the two lines above give this run's shares).
# Attention, the cache and the operations that remain still cost their few microseconds each. Engines written in C,
# such as llama.cpp, have no per-operation bookkeeping and multiply with their own integer dot products; `python -m
# teachllm.bench --weights-only` prints llama.cpp's speed on this file beside teachllm's when it is installed.

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["After each exercise,", "Work in the cells"]}
# ## Summary
# - A matmul $(m \times k) \cdot (k \times n)$ costs $2mkn$ FLOPs. The lecture's layer costs $24bsh^2 + 4bs^2h$.
#   The Llama-7B estimate of *LLM Inference Flow* (4.56 TFLOPs for 1,000 tokens) leaves out the projections,
#   half the MLP and half of attention: the exact count is 13.5 TFLOPs, about 2 FLOPs per parameter per token.
# - The real model differs from the textbook: GQA shrinks K and V, SwiGLU adds a matrix, $f \neq 4h$, and the
#   LM head sits outside the layers. `FlopCounterMode` on a traced prefill agrees with `teachllm.cost` to
#   the FLOP. It counts matmuls only; `cost.flop_counter()` adds the fused attention kernels it misses.
# - Attention is about 1% of prefill at 37 tokens and 9% at 300.
# - Prefill and decode read the same weights. Prefill does $s$ tokens of work with them, decode one, so
#   decode does 0.5 FLOP/byte in float32 (about 1 in bfloat16) and is memory-bound. Prefill, with a long
#   enough prompt, is compute-bound.
# - Batching decode reuses each weight read for $b$ tokens, until the KV cache dominates the bytes.
# - The rule $2 \cdot N \cdot \text{tokens}$ matches Llama-7B's exact count at 1,000 tokens only because the
#   attention it leaves out equals the embedding and head work it wrongly counts; at longer prompts attention wins.
# - Prefill is compute-bound only past the ridge: on an H100 in bfloat16 from 356 prompt tokens for this model
#   and 305 for Llama-7B, on this CPU from a much shorter prompt. The course notes' utilisation ranges disagree;
#   section 10.9 prints which of them this machine's measurement falls in.
# - TTFT follows prefill's FLOPs; TPOT follows decode's bytes. tokens/s is
#   $\text{output tokens} / \text{end-to-end time}$, below the decode rate $1 / \text{TPOT}$.
# - Decode's speed follows the bytes per weight. The bundled file in its own 4- and 8-bit blocks
#   (`tl.load(weights="gguf")`) reads about a fifth of float32's bytes per step and decodes much faster,
#   at the cost of bfloat16-sized rounding in the logits.
# - Which kernel multiplies those weights fastest depends on the CPU's instructions: `kernel="auto"` measures
#   it once per machine and keeps the fastest kernel that stays within the bound. Between the matrices, the
#   fast path (`teachllm.fastpath.fused`) does the same arithmetic in fewer operations.
#
# ## Exercises
# 1. At what prompt length does attention ($QK^\top$ and $\text{scores} \cdot V$) reach half of a layer's prefill
#    FLOPs? Derive it from the per-layer formulas and write `attention_half_length(cfg)`, the length $s^*$ for any
#    `tl.ModelConfig`; evaluate it for this model and for Llama-7B, then check with `cost.prefill_flops` where the
#    exact count (LM head included) reaches half.
# 2. On an H100 (spec sheet, bfloat16), from which batch size does decode of this model at 1,000 tokens of
#    context become compute-bound? What stops it? Write `decode_intensity_limit(cfg, context_len)`, the FLOPs
#    per byte of a decode step in bfloat16 when the batch is so large that the weights' bytes no longer count,
#    and set `compute_bound_on_h100` to True or False.
# 3. Time a decode step at 64 and at 2,048 tokens of context, at batch 1 and 16. Which one grows with the
#    context, and why? Timings differ on every machine; the bytes explain them. Write
#    `kv_share(cfg, context_len, batch_size)`, the fraction of the bytes a float32 decode step moves that are K
#    and V (read and written) rather than weights, and set `step_grows_with_context` to the batch size (1 or 16)
#    whose step grows most with the context.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: the prompt length at which attention is half of a layer's FLOPs.
def attention_half_length(cfg):
    # s*: the prompt length at which QKᵀ and scores·V cost as much as the rest of the layer's matmuls
    ...  # your code


# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch10-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: decode's FLOPs per byte when the batch grows without bound.
def decode_intensity_limit(cfg, context_len, dtype="bf16"):
    # FLOPs per byte of a decode step at context_len keys when the weights' bytes no longer count
    ...  # your code


compute_bound_on_h100 = None  # True or False: does decode at 1,000 tokens ever become compute-bound on an H100?

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch10-ex2")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 3: time the four decode steps, then explain them with the bytes.
def kv_share(cfg, context_len, batch_size, dtype="float32"):
    # the fraction of the bytes one decode step moves that are K and V (read and written), not weights
    ...  # your code


step_grows_with_context = None  # 1 or 16: the batch size whose decode step grows most with the context

# %% tags=["check"]
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch10-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch10.py` (in JupyterLab: `solutions/ch10.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(10)
