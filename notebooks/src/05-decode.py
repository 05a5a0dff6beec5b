# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 5 · Decode
#
# **What you will see.** The second phase of generation. After prefill has filled the KV cache, each decode
# step runs **one** new token through the model: it computes that token's query, key and value, reads every
# earlier key and value from the cache, appends its own, and returns the logits for the token after it. We
# write one decode step of one layer by hand and check it against teachllm, then run the loop and watch the
# cache grow one slot per step.
#
# **What you will learn.**
# - What one decode step computes, with shapes: q_new `[1, d]` against the cached keys plus its own,
#   `[T, d]` → one row of scores `[1, T]` → softmax → · V.
# - Why decode needs no causal mask: the newest token may see everything before it.
# - The decode loop: sample a token, feed it back, repeat until a stop condition.
# - How a decode step differs from prefill in the attention pattern (one row, not a triangle) and in cost.
# - Why decode cannot run many tokens in parallel the way prefill does, and the idea behind speculative
#   decoding.

# %% slide={"code": false}
import math

import torch

import teachllm as tl
from teachllm import viz
from teachllm.model import apply_rope, rope_cos_sin
from teachllm.viz import AttentionExplorer, StepThrough, attention_figure, capture_attention, step_figure
from teachllm.viz.data import step_record
from teachllm.viz.widgets import labeller

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer
tol = tl.tolerance(lm.dtype)  # how far two computations of the same numbers may differ in this dtype
cfg = lm.config
n_h, n_kv, d, g = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.n_groups

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5.1 One decode step, from the outside
#
# Prefill the prompt of chapters 3 and 4, take the greedy token, and feed it to `lm.decode_step`. Before
# the step we copy the cache's keys and values of layer 1: section 5.2 needs them as they were.

# %% slide={"code": [[4, 7], [13, 15]]}
prompt = "The capital of France is Paris. The capital of Italy is"
ids = tok.encode(prompt)
S = len(ids)
cache = lm.new_cache(max_len=S + 16)
logits = lm.prefill(ids, cache)  # [1, V]
token = int(logits.argmax(-1))  # greedy: ' Rome'
print(viz.tr("prefill of {S} tokens → {token!r}; {cache}", S=S, token=tok.token_text(token), cache=cache))

layer = 1
k_cache, v_cache = cache.keys(layer).clone(), cache.values(layer).clone()  # [1, n_kv, S, d] each

trace = tl.Trace()
next_logits = lm.decode_step(token, cache, trace=trace)  # [1, V]
print(viz.tr("decode step fed {fed!r} → {chosen!r}; {cache}", fed=tok.token_text(token),
             chosen=tok.token_text(int(next_logits.argmax(-1))), cache=cache))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The step's shapes", "zh": "这一步的形状"}}
# The step ran one token through all 30 layers. Its trace's scores, (1, 9, 1, 13), have the shape
# `[batch, heads, 1, N+1]` of the `decode_step` sketch in *LLM Generation Process* (《LLM 生成过程》): one query
# row, T = S + 1 = 13 keys.

# %% slide={"code": [[1, 3]]}
t = trace.layers[layer]
print(viz.tr("position of the new token: {positions} (RoPE rotates by this)", positions=trace.positions.tolist()))
print(viz.tr("mask: {shape} all True: {all_true}", shape=tuple(trace.mask.shape), all_true=bool(trace.mask.all())))
for name in ("resid_in", "q", "k", "v", "scores", "probs", "attn_out"):
    print(f"  {name:<9}{tuple(getattr(t, name).shape)}")
print(f"  {'logits':<9}{tuple(next_logits.shape)}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["The mask is all"]}
# The mask is all True: no causal mask is needed, because nothing in the cache comes after the new token.
# (The mask exists for batches of prompts with different lengths, where it hides padding slots: exercise 3.)
#
# ## 5.2 One decode step by hand, for one layer
#
# The sketch of a decode step in *LLM Generation Process* §3.2, per layer (abridged, the comments shortened
# and translated):
#
# ```python
# q_new = layer.q_proj(hidden_states)          # [batch, 1, hidden]
# k_new = layer.k_proj(hidden_states)
# v_new = layer.v_proj(hidden_states)
# k_cache, v_cache = kv_cache.get(layer_idx)   # the history
# k_full = torch.cat([k_cache, k_new], dim=2)
# v_full = torch.cat([v_cache, v_new], dim=2)
# kv_cache.update(layer_idx, k_new, v_new)
# scores = (q_new @ k_full.transpose(-2, -1)) / sqrt(head_dim)   # [batch, heads, 1, N+1]
# attn_weights = F.softmax(scores, dim=-1)     # no causal mask: the new token may see all history
# attn_output = attn_weights @ v_full          # [batch, heads, 1, head_dim]
# ```
#
# We do exactly that with layer 1's own modules, adding the steps this model's layer has that the sketch
# leaves out: the RMSNorm before the projections, the split into heads, RoPE on q and k, repeating each KV head
# for its group of query heads (GQA, below) and the output projection `o_proj`. The input is the new token's
# residual-stream vector (the sketch's `hidden_states`) as it entered layer 1, taken from the trace.

# %% slide={"title": {"en": "Q, K and V of the new token, by hand", "zh": "手算新 token 的 Q、K、V"}, "code": [3, [5, 12], 17]}
block = lm.model.layers[layer]  # input_layernorm, self_attn (q/k/v/o_proj), post_attention_layernorm, mlp
attn = block.self_attn
x = t.resid_in  # [1, 1, h]: the new token's residual stream entering layer 1

with torch.no_grad():
    xn = block.input_layernorm(x)  # [1, 1, h]
    q_new = attn.q_proj(xn).view(1, 1, n_h, d).transpose(1, 2)  # [1, n_h, 1, d]
    k_new = attn.k_proj(xn).view(1, 1, n_kv, d).transpose(1, 2)  # [1, n_kv, 1, d]
    v_new = attn.v_proj(xn).view(1, 1, n_kv, d).transpose(1, 2)  # [1, n_kv, 1, d]
    position = torch.tensor([[S]], device=lm.device)  # the new token sits after the S cached ones
    cos, sin = rope_cos_sin(lm.model.inv_freq, position, lm.dtype)  # [1, 1, d] each
    q_new, k_new = apply_rope(q_new, cos, sin), apply_rope(k_new, cos, sin)

torch.testing.assert_close(q_new, t.q)
torch.testing.assert_close(k_new, t.k)
torch.testing.assert_close(v_new, t.v)
print(viz.tr("q_new, k_new, v_new by hand = the decode step's: {q} {k}", q=tuple(q_new.shape), k=tuple(k_new.shape)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The attention, by hand", "zh": "手算注意力"}}
# Now the attention. Each query head reads its group's KV head (query head *h* reads KV head *h* // 3), so we
# repeat each KV head (the cached keys plus the new one) 3 times before the matrix product. Nothing comes after
# the new token, so there is no causal mask to apply:

# %% slide={"code": [[1, 3], [5, 9], 13]}
K = torch.cat([k_cache, k_new], dim=2)  # [1, n_kv, T, d]: the cache's keys, then the new one
V = torch.cat([v_cache, v_new], dim=2)  # [1, n_kv, T, d]
K_heads, V_heads = K.repeat_interleave(g, dim=1), V.repeat_interleave(g, dim=1)  # [1, n_h, T, d]

scores = q_new @ K_heads.transpose(-1, -2) / math.sqrt(d)  # [1, n_h, 1, T]: one row per head
probs = torch.softmax(scores, dim=-1)  # [1, n_h, 1, T]
out = probs @ V_heads  # [1, n_h, 1, d]
with torch.no_grad():
    attn_out = attn.o_proj(out.transpose(1, 2).reshape(1, 1, n_h * d))  # [1, 1, h]: heads side by side, mixed

torch.testing.assert_close(probs, t.probs)
torch.testing.assert_close(attn_out, t.attn_out)
print(viz.tr("probs {p} and attn_out {o} by hand = the decode step's", p=tuple(probs.shape), o=tuple(attn_out.shape)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The rest of the layer", "zh": "这一层的其余部分"}}
# The rest of the layer is the same as in prefill, for one row: add to the residual stream, RMSNorm, MLP,
# add again. And the cache: slot 12 now holds the k_new and v_new we computed by hand.

# %%
with torch.no_grad():
    mid = x + attn_out  # [1, 1, h]
    layer_out = mid + block.mlp(block.post_attention_layernorm(mid))  # [1, 1, h]
torch.testing.assert_close(layer_out, t.resid_out)
torch.testing.assert_close(cache.keys(layer)[:, :, S:], k_new)
torch.testing.assert_close(cache.values(layer)[:, :, S:], v_new)
print(viz.tr("layer 1's output by hand = the decode step's; cache slot 12 holds k_new and v_new"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the new token looked at", "zh": "新 token 看了哪里"}, "say": true}
# What did the new token look at? Head 2 is the previous-token head of chapter 3: its one row gives its
# largest weight to ` is`, the token just before ` Rome`.

# %%
labels = [tok.token_text(i) for i in ids + [token]]
row = probs[0, 2, 0]  # [T]
for label, p in zip(labels, row, strict=True):
    print(f"{label!r:<11}{float(p):6.3f}  " + "█" * round(40 * float(p)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5.3 The decode loop
#
# The `decode_loop` of *LLM Generation Process* §3.3, comments translated:
#
# ```python
# def decode_loop(model, first_token, kv_cache, max_tokens, stop_token_id):
#     generated_tokens = [first_token]
#     current_token = first_token
#     position = kv_cache.current_len
#     for step in range(max_tokens):
#         logits = decode_step(model, current_token, kv_cache, position)   # one decode step
#         next_token = sample(logits, sampling_params)                     # sample the next token
#         if next_token == stop_token_id:                                  # stop condition
#             break
#         generated_tokens.append(next_token)
#         current_token = next_token
#         position += 1
#     return generated_tokens
# ```
#
# The same loop with teachllm. There is no `position` to carry: the cache knows how many tokens it holds,
# and the model reads the new token's position from it. We print the cache's length after every step.

# %% slide={"title": {"en": "The same loop with teachllm", "zh": "用 teachllm 写同一个循环"}, "code": [1, [5, 7], [10, 14]], "output": [[1, 3], -1]}
def decode_loop(lm, first_token, cache, max_tokens, stop_token_ids, params):
    """Generate up to max_tokens tokens (first_token included) after a prefilled cache."""
    generated = [first_token]
    current = first_token
    while len(generated) < max_tokens:
        logits = lm.decode_step(current, cache)  # [1, V]: one token in, the cache grows by one slot
        next_token = int(tl.sampling.sample(logits, params)[0])
        print(viz.tr("  fed {fed!r:<11} cache length {n:>2} → next {chosen!r}", fed=tok.token_text(current),
                     n=cache.length, chosen=tok.token_text(next_token)))
        if next_token in stop_token_ids:
            break
        generated.append(next_token)
        current = next_token
    return generated


greedy = tl.SamplingParams(temperature=0)
cache = lm.new_cache(max_len=S + 16)
first = int(tl.sampling.sample(lm.prefill(ids, cache), greedy)[0])  # prefill gives the first token
print(viz.tr("prefill: cache length {n} → first token {first!r}", n=cache.length, first=tok.token_text(first)))
generated = decode_loop(lm, first, cache, max_tokens=10, stop_token_ids=lm.config.eos_token_ids, params=greedy)
print(repr(tok.decode(generated)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "teachllm's generate runs the same loop", "zh": "teachllm 的 generate 跑的是同一个循环"}}
# Each step adds exactly one slot to the cache. teachllm's `generate` runs the same loop (with every
# sampling and stop rule of the later chapters), so under greedy decoding it must give the same tokens:

# %%
result = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=10))
assert result.token_ids == generated
print(repr(result.text), viz.tr("| finish reason: {reason}", reason=result.finish_reason))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5.4 Decode rows in the attention pattern
#
# `capture_attention` prefills the prompt and then runs decode steps, each with a trace, and stacks their
# attention rows under the prefill triangle. In the figure, the blue block is prefill: 12 query rows at once,
# with the causal mask above the diagonal. Each orange row is one decode step: one query reading the whole
# cache, including the slots the steps before it appended.

# %% slide={"code": false}
capture = capture_attention(lm, ids, n_decode=6, labels_of=labeller(tok))
attention_figure(capture, layer=1, head=2)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Prefill's triangle plus the decode rows", "zh": "预填充的三角形加上解码行"}}
# Put together, prefill's triangle and the decode rows are exactly the triangle that one uncached forward
# pass over all 18 tokens computes: decode fills in the matrix one row per step.

# %%
full_trace = tl.Trace()
lm.forward(capture.token_ids, trace=full_trace)
for i, layer_probs in enumerate(capture.probs):  # [n_h, N, N] per layer, NaN where masked
    shown = ~layer_probs.isnan()
    assert torch.allclose(layer_probs[shown], full_trace.layers[i].probs[0].float().cpu()[shown], atol=tol.probs)
print(viz.tr("{rows} rows (12 prefill + 6 decode) = the uncached forward's attention, in all {L} layers",
             rows=len(capture.token_ids), L=cfg.n_layers))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The attention explorer", "zh": "注意力探索器"}}
# The explorer shows every layer and head for the same setting (the same prompt and number of decode
# steps); it opens on layer 1, head 2.

# %% slide={"code": [1, 3]}
explorer = AttentionExplorer(lm, prompt, n_decode=6)
explorer.layer.value, explorer.head.value = 1, 2
explorer

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5.5 Stepping through the loop
#
# `tl.generation_steps` is the loop inside `generate`, paused after each token. `step_record` summarises a
# step for the viewer: the phase, the chosen token, the top candidates and the cache's length.

# %%
params = tl.SamplingParams(temperature=0, max_tokens=8)
records = [step_record(step, labeller(tok)) for step in tl.generation_steps(lm, [ids], params)]
print(viz.tr("step  phase   token           p  cache length"))
for r in records:
    print(f"{r.index:>4}  {viz.pad(viz.tr(r.phase), 8)}{r.label:<11}{r.candidates[0][2]:>6.3f}  {r.cache_length:>12}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "One step's candidates", "zh": "一步的候选 token"}}
# `step_figure` draws one step's candidates, the chosen one in red.

# %%
step_figure(records[1])

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Step through the loop yourself", "zh": "亲手逐步运行循环"}}
# The same as a widget: press **next token** to run one step of the real loop.

# %%
StepThrough(lm, prompt, params)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5.6 What a decode step costs
#
# Prefill handled 12 tokens in one call; a decode step handles one. But both read all the model's weights
# once per call. `tl.cost` counts the matmul FLOPs and the bytes a call must move (weights, plus the K and V
# read and written); their ratio is the arithmetic intensity:

# %%
print(viz.tr("call                         tokens   GFLOP  MB moved  FLOP/byte"))
for name, c in ((viz.tr("prefill, {n}-token prompt", n=S), tl.cost.prefill_cost(lm, S)),  # lm: bytes in the model's dtype
                (viz.tr("decode step, T = {T}", T=S + 1), tl.cost.decode_cost(lm, S + 1)),
                (viz.tr("prefill, {n}-token prompt", n=512), tl.cost.prefill_cost(lm, 512)),
                (viz.tr("decode step, T = {T}", T=513), tl.cost.decode_cost(lm, 513))):
    tokens = c.length if c.phase == "prefill" else 1
    print(f"{viz.pad(name, 28)}{tokens:>7}{c.flops / 1e9:>8.2f}{c.bytes / 1e6:>10.1f}{c.intensity:>11.1f}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the numbers say", "zh": "这些数字说明什么"}, "say": ["After each exercise,", "Work in the cells"]}
# In float32 a decode step moves more than half a gigabyte (the weights) to do about a quarter of a GFLOP:
# about one FLOP for every two bytes (in bfloat16, as on a GPU, half the bytes: one FLOP per byte). Prefill
# does the same weight reading for every token of the prompt at once, so its FLOPs per byte grow with the
# prompt: 4.8 for these 12 tokens, 216.8 for 512. That is why the course notes call prefill compute-bound and
# decode memory-bound. Prefill is compute-bound only once its prompt is long enough to pass the device's ridge
# point (its peak FLOP/s divided by its memory bandwidth); chapter 10 measures where that is, and both phases, on a
# roofline.
#
# **The idea behind speculative decoding.** Decode still cannot run its tokens in one call the way prefill
# does: each step needs the token the step before chose (exercise 1). But suppose one call ran a few tokens:
# it would move about the bytes of a call over one, because a call reads the weights once (compare the short
# prefill with the decode step above). As long as such a call stays memory-bound (as on a GPU, with its high
# ridge point), its time follows its bytes, and it takes about as long as a decode step over one token.
# Speculative decoding spends that slack: a small, cheap *draft* model proposes several tokens one by one,
# and the model checks them all in one forward pass, whose rows give its own choice after each of them. It
# keeps the proposals up to the first one it would not have chosen and takes its own choice there, so one
# pass of its weights yields one token or several; with greedy decoding the text is exactly the model's own.
# Chapter 13 tries it on this model.
#
# ## Summary
# - A decode step runs one token: q_new, k_new, v_new from its residual-stream vector (RMSNorm, projections, RoPE at
#   its position), then q_new against all T cached-plus-new keys, softmax, · V. One row per head, no causal
#   mask.
# - The step writes k_new and v_new into the next cache slot, so the cache grows by one token per step.
# - The decode loop feeds each chosen token back in, until EOS or `max_tokens`.
# - Prefill's triangle plus one decode row per step is exactly the attention of one uncached pass over the
#   whole sequence.
# - A decode step does little arithmetic for all the weights it reads: it is memory-bound.
#
# ## Exercises
# 1. (*LLM Generation Process*, question 1.) Why can decode not process many tokens in parallel the way
#    prefill does? Test it: if you already knew the 10 tokens of 5.3, could one forward pass give every
#    step's logits? Write `logits_for_known_tokens(lm, prompt_ids, known_ids)`: one `lm.forward` call whose
#    row *i* holds the logits that predict `known_ids[i]`, and compare it with the decode loop. And in real
#    generation, what would that pass need that you do not have yet? Set `one_pass_in_generation` to True if
#    real generation could get its 10 tokens from one such pass, else False.
# 2. A decode step's attention work grows with the cache; its other work does not. At what context length
#    does attention ($QK^\top$ and $\cdot V$) cost as many FLOPs as the rest of the step? Write
#    `attention_crossover(cfg)`, the smallest context length T at which `tl.cost.decode_flops(cfg, T)` counts
#    at least as many attention FLOPs as all the others, for any model's `cfg`.
# 3. 5.1 said decode needs no causal mask. Decode a batch of two prompts of different lengths (teachllm
#    left-pads the shorter one) and look at the decode step's mask. Write `decode_mask(lm, prompts)`, which
#    prefills a batch of prompts (lists of ids), runs one decode step with a trace and returns the step's mask
#    as booleans `[batch, T]`. Is it still all True? Set `decode_mask_all_true` to True or False.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"]
# Exercise 1: one forward pass over the prompt and the 10 known tokens.
def logits_for_known_tokens(lm, prompt_ids, known_ids):
    # one lm.forward call; row i of the result [len(known_ids), V] holds the logits that predict known_ids[i]
    ...  # your code


one_pass_in_generation = None  # True or False: could real generation get its 10 tokens from one pass?

# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch05-ex1")

# %% tags=["exercise"]
# Exercise 2: the first context length where attention costs at least as much as the rest.
def attention_crossover(cfg):
    # the smallest T at which tl.cost.decode_flops(cfg, T) counts as many attention FLOPs as all the others
    ...  # your code

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch05-ex2")

# %% tags=["exercise"]
# Exercise 3: decode a batch of two prompts of different lengths and look at the mask.
def decode_mask(lm, prompts):
    # prefill the batch of prompts (lists of ids), run one decode step with a trace, return its mask [batch, T]
    ...  # your code


decode_mask_all_true = None  # True or False: is that decode step's mask all True?

# %% tags=["check"]
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch05-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch05.py` (in JupyterLab: `solutions/ch05.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(5)
