# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**", "The word *decode*", "Everything runs on"]}
# # Chapter 1 · The generation loop
#
# **What you will see.** One prompt travels through every stage of text generation on a real model,
# SmolLM2-135M-Instruct: the tokenizer turns text into ids, *prefill* runs the whole prompt through the
# model at once, a *sampler* turns the model's scores into one token, *decode* adds one token at a time,
# and the detokenizer turns ids back into text.
#
# The word *decode* is used in four ways. In this course it names the phase that adds one token per pass; the
# rule that picks each token (greedy, sampling, beam search) is a *decoding strategy*, one of the model's
# layers is a *decoder layer*, and turning ids back into text is *detokenizing*.
#
# **What you will learn.**
# - A model's forward pass ends in **logits** — one score per vocabulary entry — not in text.
# - Generation has two phases: **prefill** (the prompt, all tokens in one pass) and **decode** (one new
#   token per pass, reusing what was computed before through the KV cache).
# - How to read the numbers a serving engine reports: **TTFT**, **time per output token**, **tokens/s**.
#
# Everything runs on a laptop CPU in a few seconds. The later chapters open up these stages one by one, then turn
# to cost and serving.

# %% slide={"code": [9, 10]}
import torch

import teachllm as tl
from teachllm import viz
from teachllm.viz import pipeline_figure, pipeline_stages

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct: CUDA + bfloat16 if there is a GPU, else CPU + float32
lm

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["Prefill runs once"]}
# ## 1.1 The pipeline
#
# | stage | input | output | teachllm |
# | --- | --- | --- | --- |
# | tokenizer | text | token ids | `lm.tokenizer.encode` |
# | prefill | all prompt ids | logits for the next token; K and V of every prompt token stored | `lm.prefill(ids, cache)` |
# | sampler | logits | one token id | `tl.sampling` (chapters 6–8) |
# | decode | one new id | logits for the next token; its K and V appended | `lm.decode_step(token, cache)` |
# | detokenizer | ids | text | `lm.tokenizer.decode` |
#
# Prefill runs once per request; sampler and decode run in a loop until a stop condition holds
# (chapter 9). This model is an *instruct* model, trained on conversations, so we wrap the question
# in its chat template.

# %% slide={"title": {"en": "The question in the chat template", "zh": "套上对话模板的问题"}}
messages = [{"role": "user", "content": "What is the capital of France?"}]
prompt = lm.tokenizer.apply_chat_template(messages)
print(prompt)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "With this prompt's shapes", "zh": "这个提示词的实际形状"}, "say": true}
# The same pipeline as a picture, with the live shapes of this prompt (`pipeline_stages` runs the engine's
# own calls: encode, prefill, one decode step, the sampler, the detokenizer). The two orange boxes are the loop.

# %% slide={"code": [1, 4], "output": false}
stages = pipeline_stages(lm, prompt)
for stage in stages:
    print(f"{viz.pad(viz.tr(stage.name), 12)} {stage.shape}")  # the stage's name in the reader's language
pipeline_figure(stages)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The course notes' generate(), in one call", "zh": "课程资料里的 generate()：一次调用"}}
# *LLM Generation Process* (《LLM 生成过程》), the course notes' chapter on generation, ends its walk-through
# (§7.1) with one function that does all of it,
# `generate(model, tokenizer, prompt, max_tokens=100, temperature=0.8, top_p=0.9)`. In teachllm the same
# settings are a `SamplingParams`, and a random seed (`seed`) makes the draw repeatable (the sections below take
# it apart):

# %%
notes_call = lm.generate(prompt, tl.SamplingParams(max_tokens=100, temperature=0.8, top_p=0.9, seed=0))
print(repr(notes_call.text))
print(viz.tr("{n} tokens, finished because: {reason}", n=len(notes_call.token_ids), reason=notes_call.finish_reason))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["The model never"]}
# ## 1.2 Stage 1 — tokenize
#
# The model never sees characters, only integer ids from a fixed vocabulary (49,152 entries here).
# `<|im_start|>` and `<|im_end|>` are *special tokens*: single ids that mark where a turn begins and ends.
# (*LLM Generation Process* §1.1 shows `"Hello, world"` → `[15496, 11, 995]`; those are GPT-2's ids. Every
# tokenizer has its own.) In the printout below, `Ċ` is a newline and `Ġ` a space before a word (`'Ġis'` is
# `' is'`): this tokenizer works on bytes and shows each byte as a printable character. Chapter 2 explains why.

# %% slide={"code": [1, 2], "output": [[1, 6], [12, 18]]}
ids = lm.tokenizer.encode(prompt)
print(viz.tr("{n} tokens", n=len(ids)))
for i, (token_id, piece) in enumerate(zip(ids, lm.tokenizer.pieces(ids), strict=True)):
    if i < 4 or i >= len(ids) - 12:
        print(f"{i:>3}  {token_id:>6}  {piece!r}")
    elif i == 4:
        print("     ...")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1.3 Stage 2 — prefill
#
# Prefill runs all prompt tokens through the model in **one** forward pass. Two things come out:
# - the **logits** after the last prompt token: a score for every possible next token;
# - the **KV cache**, filled with the keys and values of every prompt token in every layer,
#   so that decode never has to recompute them (chapter 4).

# %%
cache = lm.new_cache(max_len=len(ids) + 32)
logits = lm.prefill(ids, cache)
print("logits:", tuple(logits.shape), "= [batch, vocabulary]")
print(cache)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1.4 Stage 3 — from logits to a token
#
# Softmax turns the scores into probabilities that sum to 1. The simplest sampler, **greedy**, takes the
# most probable token. Chapter 6 shows the others (temperature, top-k, top-p, ...).

# %%
probs = torch.softmax(logits[0].float(), dim=-1)  # [V]
top = torch.topk(probs, 5)
for p, token_id in zip(top.values, top.indices, strict=True):
    print(f"{lm.tokenizer.token_text(int(token_id))!r:>12}  p = {float(p):.3f}")
print(viz.tr("sum of all {n} probabilities: {total:.4f}", n=probs.numel(), total=float(probs.sum())))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1.5 Stage 4 — the decode loop, written out
#
# Below, the `generate()` sketch of *LLM Generation Process* (§7.1) as code that runs, with three differences:
# greedy decoding in place of sampling; the first token is checked for end-of-sequence too (the sketch checks only
# inside the loop); and the end-of-sequence token, once chosen, is kept in `out` (the sketch breaks out of the
# loop before appending it). Each decode step feeds **one** token, the one just chosen, and reads
# everything earlier from the cache. We stop at the end-of-sequence token
# (`<|im_end|>`, id 2) or after `max_tokens`.

# %% slide={"code": [[1, 11], [14, 15]]}
def generate_greedy(lm, ids, max_tokens):
    cache = lm.new_cache(max_len=len(ids) + max_tokens)
    logits = lm.prefill(ids, cache)  # phase 1: the whole prompt in one pass
    out = []
    for _ in range(max_tokens):
        token = int(logits.argmax(-1))  # the sampler: greedy
        out.append(token)
        if token in lm.config.eos_token_ids or len(out) == max_tokens:  # stop: end of sequence, or enough tokens
            break
        logits = lm.decode_step(token, cache)  # phase 2: one token, reading the cache
    return out


out_ids = generate_greedy(lm, ids, max_tokens=32)
print(out_ids)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1.6 Stage 5 — detokenize
#
# `skip_special_tokens=True` drops the `<|im_end|>` that ended the answer.

# %%
answer = lm.tokenizer.decode(out_ids, skip_special_tokens=True)
print(repr(answer))

# %% [markdown] slideshow={"slide_type": "subslide"}
# teachllm's own `generate` runs the same loop (with every sampling rule and stop rule of the later
# chapters). With `temperature=0` it is greedy, so it must give exactly the same tokens:

# %%
result = lm.generate(prompt, tl.SamplingParams(temperature=0, max_tokens=32))
assert result.token_ids == out_ids, "our loop and teachllm's generate disagree"
print(repr(result.text), viz.tr("| finish reason: {reason}", reason=result.finish_reason))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1.7 Watching the loop step by step
#
# `tl.generation_steps` is the loop inside `generate`, paused after every token. Step 1 comes from
# prefill; every later step is one decode pass, and the cache grows by exactly one slot each time.

# %% slide={"code": [[1, 3]]}
params = tl.SamplingParams(temperature=0, max_tokens=32)
print(viz.tr("step  phase    token             p  cache length"))
for step in tl.generation_steps(lm, [ids], params):
    token = step.tokens[0]
    p = torch.softmax(step.logits[0].float(), -1)[token]
    print(f"{step.index + 1:>4}  {viz.pad(viz.tr(step.phase), 8)} {lm.tokenizer.token_text(token)!r:<12} {float(p):>6.3f}  "
          f"{step.cache.length:>12}")

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["Timings depend on"]}
# ## 1.8 The numbers an engine reports
#
# | metric | definition | what it measures |
# | --- | --- | --- |
# | TTFT (time to first token) | request in → first token out | prefill: what a user waits before anything appears |
# | TPOT (time per output token) | mean time of each later token | one decode step |
# | tokens/s (TPS) | output tokens ÷ end-to-end time | generation speed of a whole request |
# | decode rate | $1/\mathrm{TPOT}$ | how fast tokens stream once the first has appeared |
# | latency | request in → last token out | $\mathrm{TTFT} + (n-1)\cdot\mathrm{TPOT}$ |
# | throughput | requests (or tokens) per second over many users | system capacity (chapter 11) |
#
# Engines and benchmarks use "tokens/s" for both of the middle rows, which is why two reports of the same
# run can disagree. In this course **tokens/s always means output tokens ÷ end-to-end time**, TTFT
# included (`Metrics.tokens_per_s`); $1/\mathrm{TPOT}$ is called the **decode rate**. As long as TTFT is longer
# than TPOT, the decode rate is higher than tokens/s, and the gap between them is the prefill: the shorter the
# answer, the more TTFT weighs in tokens/s.
#
# Timings depend on the machine, so this cell's output differs from run to run.

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "One request, measured", "zh": "一次请求的实测指标"}, "code": [1, 2, 10]}
m = result.metrics
n_in, n_out = m.n_prompt_tokens, m.n_output_tokens
print(viz.tr("prompt tokens: {n_in}, output tokens: {n_out}", n_in=n_in, n_out=n_out))
print(viz.tr("TTFT                  {ms:7.1f} ms   (prefill of {n_in} tokens + choosing one)", ms=m.ttft_s * 1e3, n_in=n_in))
print(viz.tr("time per output token {ms:7.1f} ms   (one decode step)", ms=m.tpot_s * 1e3))
print(viz.tr("end-to-end latency    {ms:7.1f} ms   = TTFT + {steps} × TPOT", ms=m.e2e_s * 1e3, steps=n_out - 1))
print(viz.tr("tokens/s              {rate:7.1f}   = {n_out} output tokens ÷ end-to-end latency", rate=m.tokens_per_s,
             n_out=n_out))
print(viz.tr("decode rate           {rate:7.1f}   = 1 ÷ TPOT, tokens per second after the first", rate=1 / m.tpot_s))
assert abs(m.tokens_per_s - m.n_output_tokens / m.e2e_s) <= 1e-9 * m.tokens_per_s  # the definition

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["After each exercise,", "Worked answers are", "Work in the cells"]}
# Compare the two phases: prefill handled all the prompt's tokens in one pass, a decode step handled one.
# Per token, prefill is far cheaper (divide TTFT by the number of prompt tokens). Why processing $N$
# tokens at once costs much less than $N$ single steps is the question of chapters 5 and 10.
#
# ## Summary
# - Text → ids → **prefill** (one pass, fills the KV cache, gives the first logits) → **sample** →
#   **decode** one token at a time → ids → text.
# - A forward pass gives logits; a sampler turns them into a token. Greedy takes the most probable one.
# - TTFT is mostly prefill; time per output token is one decode step.
# - $\text{tokens/s} = \text{output tokens} / \text{end-to-end time}$ (TTFT included); $1/\mathrm{TPOT}$ is the
#   decode rate.
#
# ## Exercises
# 1. Make the prompt ten times longer (for example, paste a paragraph into the question). Predict how
#    TTFT and time per output token change, then measure. Write `tokens_per_pass(lm, ids, max_tokens)`, which
#    returns a list: the number of tokens each forward pass feeds the model while it generates `max_tokens`
#    tokens after the prompt `ids` (end-of-sequence ignored), and set `grows_with_prompt` to `"TTFT"` or `"TPOT"`: the one that grows
#    markedly with the prompt's length.
# 2. Is the end-of-sequence token part of `result.token_ids`? Is it part of `result.text`? Answer with
#    `eos_in_token_ids` and `eos_in_text` (True or False), and write `stopped_at_eos(lm, token_ids)`, True when a
#    generation ended because the model chose an end-of-sequence token. Why might an engine keep the token in one
#    and not the other?
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Worked answers are in the repository, in `notebooks/solutions/ch01.py` (in JupyterLab: `solutions/ch01.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.
#
# Work in the cells below, one per exercise.

# %% tags=["check"] slideshow={"slide_type": "skip"}
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: a ten times longer prompt: what each forward pass processes, and what grows.
def tokens_per_pass(lm, ids, max_tokens):
    # the number of tokens each forward pass feeds the model when generating max_tokens tokens (EOS ignored)
    # from the prompt ids: prefill first, then every decode step
    ...  # your code


grows_with_prompt = None  # "TTFT" or "TPOT": which one grows markedly with the prompt's length?

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch01-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: the end-of-sequence token in result.token_ids and in result.text.
eos_in_token_ids = None  # True or False
eos_in_text = None  # True or False


def stopped_at_eos(lm, token_ids):
    # True when generation ended because the model chose an end-of-sequence token (finish reason "stop")
    ...  # your code

# %% tags=["check"] slideshow={"slide_type": "skip"}
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch01-ex2")

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(1)
