# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**", "The engine is"]}
# # Chapter 11 · Serving many requests
#
# **What you will see.** Until now one prompt had the model to itself. A server has many users at once,
# and how it groups their work decides how fast each of them gets an answer. We batch decode steps and
# measure what that buys; run the same twelve requests through *static* and *continuous* batching on one
# engine and watch, iteration by iteration, who waits, who prefills and who decodes; then let a long
# prompt arrive while others decode, with and without *chunked prefill*.
#
# **What you will learn.**
# - Why batching makes decode cheaper per token: one decode step reads every weight once, whatever the batch.
# - What an engine **iteration** is, and how a scheduler fills it with decodes and prefills.
# - **Static batching**: short requests wait for the longest one in their batch. **Continuous batching**:
#   requests may join or leave at any iteration.
# - **Chunked prefill**: a long prompt split across iterations under each iteration's token budget, so it does not
#   stall everyone else's decode.
#
# The engine is `teachllm.serving` (one file per concept: `config.py`, `request.py`, `scheduler.py`,
# `block_manager.py`, `engine.py`). Its KV cache is *paged*; chapter 12 opens that part.

# %% slide={"code": false}
import torch

import teachllm as tl
from teachllm import viz
from teachllm.serving import ServingConfig, ServingEngine
from teachllm.serving.workload import LONG_TEXT, PROMPTS, decode_throughput, mixed_workload
from teachllm.tolerances import agree_until_a_near_tie
from teachllm.viz.serving import IterationTimeline, describe_iteration, iteration_timeline_figure

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
torch.set_num_threads(1)  # steadier timings on a shared or busy machine (remove it to use every core)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11.1 Why batch: one decode step reads every weight
#
# A decode step turns one token into logits. To do so it multiplies a vector by every weight matrix of the
# model: about 2 FLOPs per weight, and every weight has to come from memory. *LLM Generation Process*
# (《LLM 生成过程》) §6.3 makes the point with two code sketches. For one request, `read_weights()` (its comment:
# `# 14GB`), then `process_1_token()`, "a very small amount of computation"; for a batch of 32, `read_weights()`
# with the comment `# 14GB(只读一次)`, "read only once", then `process_32_tokens()`, "32 times the computation".
# The notes do not say whose weights these are; a 7-billion-parameter model in float16 is about that size.
# `tl.cost` gives the numbers for Llama-2-7B and for our model:

# %% slide={"code": [[3, 4]]}
llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
print(viz.tr("Llama-2-7B: {params:.2f} B parameters, {gb:.1f} GB of weights in float16",
             params=llama2_7b.n_params / 1e9, gb=tl.cost.weight_bytes(llama2_7b, "float16") / 1e9))
print(viz.tr("SmolLM2-135M: {params:.1f} M parameters, {mb:.0f} MB of weights in {dtype} (what runs here)",
             params=lm.config.n_params / 1e6, mb=tl.cost.weight_bytes(lm) / 1e6,
             dtype=str(lm.dtype).removeprefix("torch.")))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "One decode step, growing batches", "zh": "批次变大时的一个解码步"}, "say": true}
# One decode step at a context of 33 tokens, for growing batches (`tl.cost.decode_cost`: FLOPs of the matrix
# products; bytes = weights read once + the K and V each sequence reads from its cache + the new tokens' K and V
# written):

# %% slide={"code": [[1, 4]]}
print(viz.tr("batch   GFLOP  MB moved  FLOP/byte  MB of weights per token"))
for b in (1, 2, 4, 8, 16, 32):
    c = tl.cost.decode_cost(lm, context_len=33, batch_size=b)  # lm: bytes in the model's own dtype
    print(f"{b:>5} {c.flops / 1e9:>7.3f} {c.bytes / 1e6:>9.1f} {c.intensity:>10.2f} {c.weight_bytes / b / 1e6:>24.1f}")
flops_per_weight = tl.cost.decode_flops(lm, context_len=33).total / lm.config.n_params
print(viz.tr("batch 1: {flops:.2f} FLOPs per weight", flops=flops_per_weight))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Measured: decode rate by batch", "zh": "实测：不同批次的解码速率"}, "say": true}
# The work grows 32-fold from batch 1 to batch 32, the memory traffic barely moves, so the arithmetic
# intensity grows nearly as much. While decode is memory-bound (chapter 10), a step takes about as
# long as reading the weights, so a batch of $b$ should give nearly $b$ times the tokens per second.
# Measured on this machine (`decode_throughput` times `lm.decode_step` on a contiguous cache: for each
# batch, the median of three runs of four steps; the numbers change from run to run, so look at their
# shape rather than their values). The rate in the table is the **decode rate** of chapter 1, summed over
# the batch, $b / t_\text{step}$ for a batch of $b$ and a step time $t_\text{step}$: tokens per second once
# every sequence is decoding. It is not *tokens/s*, which in this course always means output tokens ÷
# end-to-end time, prefill included (11.3 reports that).


# %% tags=["nbval-ignore-output"]
rows = decode_throughput(lm, batch_sizes=(1, 2, 4, 8, 16, 32), steps=4, context=32, reps=3)
one = rows[0]["tokens_per_s"]
print(viz.tr("batch  ms per step  decode rate  × batch 1"))
for r in rows:
    print(f"{r['batch']:>5} {r['ms_per_step']:>12.1f} {r['tokens_per_s']:>12.1f} {r['tokens_per_s'] / one:>10.1f}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Three things to look for", "zh": "表中要看的三点"}, "say": ["Three things to", "(This notebook runs"]}
# Three things to look for in the table.
#
# - **From batch 2 to batch 8 a step costs far less than four times as much.** That is the memory-bound regime:
#   the weights are read once per step, whatever the batch, and most of the few extra multiply-adds per weight
#   fit in the time the read takes. So four times the batch gives well over twice the decode rate.
# - **Batch 2 costs more than batch 1**, so its decode rate is barely higher. That is not the model but
#   the matrix kernel: with one row, every weight matrix meets a single vector, and PyTorch calls a
#   *matrix–vector* product (GEMV), a kernel written to stream the weights as fast as memory allows. From
#   two rows on it calls a *matrix–matrix* product (GEMM), tuned for large square blocks, which on thin
#   [2, 576] inputs reads the same weights much more slowly. The next cell times the largest
#   matrix, the LM head ([576 × 49,152]), with 1, 2 and 8 rows.
# - **Further on, the step time grows with the batch.** Not because there are more weights to read: at batch 32 a step moves
#   under a tenth more bytes than at batch 1 (the first table). Two costs grow with the batch instead.
#   Attention shares nothing across the batch: each sequence reads its own K and V. And the matrix kernels do
#   the extra multiply-adds slowly on inputs only a few rows thick, far from the speed they reach on large
#   blocks, so the arithmetic no longer hides inside the weight read. On a GPU, whose ridge point is hundreds
#   of FLOPs per byte, the batch can grow much further before that happens.
#
# (This notebook runs on one thread, `torch.set_num_threads(1)`, so a busy machine disturbs it less. With
# more threads every step is faster, but small matrices gain little from them.)

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "The LM head: GEMV against GEMM", "zh": "LM 头：GEMV 与 GEMM"}, "code": [[3, 8]]}
head = lm.model.lm_head.weight  # [V, h], as nn.Linear stores it
assert tuple(head.shape) == (49152, 576)
for n_rows in (1, 2, 8):
    x = torch.randn(n_rows, lm.config.hidden_size, device=lm.device, dtype=lm.dtype)  # [n_rows, h]
    seconds = min(tl.timing.timed(lambda x=x: torch.nn.functional.linear(x, head), lm.device, reps=1)
                  for _ in range(10))
    print(viz.tr("{n} row(s) × LM head: {ms:5.1f} ms ({rate:,.0f} rows/s)", n=n_rows, ms=seconds * 1e3,
                 rate=n_rows / seconds))

# %% [markdown] slideshow={"slide_type": "subslide"}
# On this machine, one row goes through the LM head much faster than two (GEMV against GEMM), and eight rows take
# about as long as two (the timings change from run to run, and on another machine the order may differ). Batching is what makes serving many users affordable; the rest of the chapter is about
# *how* to batch requests that arrive at different times and want different lengths.
#
# ## 11.2 An engine that serves many requests
#
# `ServingEngine` takes requests and runs them in **iterations**. Each iteration:
#
# 1. the scheduler picks the work: one token for every running request that is decoding, and (part of) the
#    prompt of requests that are new;
# 2. the model runs: one forward call for all the decodes (`[B_d, 1]`) and one for the prefills
#    (`[B_p, S]`), on the same weights;
# 3. every request whose prompt is fully computed (the decoders, and a request whose last prompt chunk ran in this
#    iteration) samples a new token (sampling and stop rules of chapters 6–9);
# 4. finished requests leave and free their KV cache; the iteration goes into the run's **timeline**.
#
# With greedy decoding every request must get exactly the tokens `lm.generate` gives it alone — batching
# changes *when* a token is computed, not *which*. This model runs in float32 here; in half precision (bfloat16
# or float16), batches of other shapes round differently, and where two tokens' logits nearly tie the result may
# part (the code below allows for that):

# %% slide={"title": {"en": "Three requests, one engine", "zh": "一个引擎，三个请求"}, "code": [[4, 10]], "output": [[1, 3], [6, 10]]}
questions = ["What is the capital of France?", "What colour is the sky?", "What is 2 + 2?"]
chats = [tok.apply_chat_template([{"role": "user", "content": q}]) for q in questions]
greedy = tl.SamplingParams(temperature=0, max_tokens=12)
engine = ServingEngine(lm, ServingConfig(policy="continuous", max_num_seqs=4))
run = engine.run(chats, greedy)
for chat, out in zip(chats, run.outputs, strict=True):
    alone = lm.generate(chat, greedy)
    assert out.token_ids == alone.token_ids or (lm.dtype != torch.float32 and agree_until_a_near_tie(  # 16 bits
        lm, tok.encode(chat), alone.token_ids, out.token_ids, tl.tolerance(lm.dtype).steps))  # same tokens as alone
    print(f"{out.finish_reason:<7} {out.text!r}")
print("\n" + viz.tr("{n} iterations, {calls} forward calls; the first two:", n=run.iterations, calls=run.forward_calls))
for record in run.timeline[:2]:
    print(describe_iteration(record))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The example of §6.2, run", "zh": "运行 §6.2 的例子", "at": "First the example"}, "say": ["Iteration 0 prefilled"]}
# Iteration 0 prefilled the three prompts in one call (each got its first token); iteration 1 decoded one
# token for each of them in one call. A request that stops at `<|im_end|>` leaves in the iteration that
# sampled it.
#
# ## 11.3 Static against continuous batching
#
# *LLM Inference Flow* (《LLM 推理流程》) §6.1 draws a static batch of three requests, of 100, 50 and 200
# tokens: the batch is done only when the longest request is, so the short requests wait for the long one. The
# two policies, on the same engine (`ServingConfig.policy`):
#
# | policy | when can a waiting request join? | the cost |
# | --- | --- | --- |
# | static | only when the engine is idle: a batch forms, runs until its last request finishes, then the next forms | rows freed by short requests stay empty; the queue waits for the longest request of the batch |
# | continuous | every iteration, as soon as a running request finishes and frees its place | none of that: the batch is refilled at every iteration (vLLM, TGI, SGLang do this) |
#
# (Here a short request in a static batch does leave when it finishes; its row then stays empty.)
#
# First the example of §6.2, run: three slots hold requests A, B and C, and there is a request D (the one marked
# "new!"). §6.2 says neither when D arrives nor how long the requests are: here D is submitted with A, B and C
# and finds every slot taken, and we give A, B and C the lengths of §6.1's batch, 100, 50 and 200 tokens, and D 50 tokens; here B, not A, is the first to finish.
# Only iteration counts matter here, not what the model says, so a tiny model with random weights runs it
# in a few seconds (the engine does not care which model it drives):

# %% slide={"code": [[7, 9]]}
from teachllm.lm import LanguageModel  # noqa: E402
from teachllm.model import Transformer  # noqa: E402

tiny = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                      head_dim=12, max_position_embeddings=512)
tiny_lm = LanguageModel(Transformer(tiny).eval(), tokenizer=None, name="tiny, random weights")
slot_requests = {"A": 100, "B": 50, "C": 200, "D": 50}  # output tokens of each request
slot_params = [tl.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in slot_requests.values()]
for policy in ("static", "continuous"):
    engine = ServingEngine(tiny_lm, ServingConfig(policy=policy, max_num_seqs=3, block_size=16, num_blocks=64))
    run = engine.run([[5, 6, 7, 8]] * len(slot_requests), slot_params)  # four 4-token prompts
    first = {i: min(r.index for r in run.timeline if i in [rid for rid, _, _ in r.prefill]) for i in range(4)}
    last = {i: r.index for r in run.timeline for i in r.finished}
    spans = ", ".join(f"{name} {first[i]}–{last[i]}" for i, name in enumerate(slot_requests))
    print(viz.tr("{policy}: {n} iterations; each request runs from iteration to iteration: {spans}",
                 policy=viz.pad(viz.tr(policy), 10), n=run.iterations, spans=spans))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": [{"en": "What static batching wastes", "zh": "静态批处理浪费了什么"}, {"en": "Twelve requests on the real model", "zh": "真实模型上的十二个请求", "at": "Now a workload"}]}
# Under static batching B is done after 50 iterations and A after 100, but their slots stay empty until C
# finishes at iteration 199: only then does D start, and the whole run takes 250 iterations. Under
# continuous batching D takes B's slot the iteration after B leaves (iteration 50) and is done long before
# C: 200 iterations, the length of the longest request, and D's last token comes at iteration 99
# instead of 249.
#
# Now a workload on the real model: twelve requests, at most four running at once, greedy with
# `ignore_eos` so each output has a known length. Requests 0, 4 and 8 want 16 tokens, the others between 2 and 6, so every static batch of
# four holds one long request:

# %% slide={"code": [[5, 7]]}
workload = mixed_workload(lm, n_requests=12, max_num_seqs=4, long_tokens=16, short_tokens=(2, 6))
print(viz.tr("prompt tokens: {lengths}", lengths=workload.describe()["prompt_tokens"]))
print(viz.tr("output tokens: {lengths}", lengths=workload.describe()["output_tokens"]))
runs = {}
for policy in ("static", "continuous"):
    engine = ServingEngine(lm, ServingConfig(policy=policy, max_num_seqs=4))
    runs[policy] = engine.run(workload.prompts, workload.params)
tol = tl.tolerance(lm.dtype)
parted = 0
for prompt, a, b in zip(workload.prompts, runs["static"].outputs, runs["continuous"].outputs, strict=True):
    if a.token_ids != b.token_ids:  # only in 16 bits: the two batchings round differently, a near-tie may tip
        assert lm.dtype != torch.float32 and agree_until_a_near_tie(lm, prompt, a.token_ids, b.token_ids, tol.steps)
        parted += 1
if parted == 0:
    print(viz.tr("both policies give every request the same tokens"))
else:
    print(viz.tr("{n} requests part between the policies, each at a near-tie", n=parted))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Static batching's timeline", "zh": "静态批处理的时间线"}}
# The timeline of each run: one row per request, one column per iteration. Grey: the request is waiting;
# blue: prefill; orange: decode; a black bar: it finished. Below, the tokens each iteration computed.

# %% slide={"code": false}
labels = {i: viz.tr("request {i} (long)" if i in workload.long_ids else "request {i} (short)", i=i) for i in range(12)}
iteration_timeline_figure(runs["static"], labels=labels)

# %% slide={"title": {"en": "Continuous batching's timeline", "zh": "连续批处理的时间线"}, "code": false}
iteration_timeline_figure(runs["continuous"], labels=labels)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What the two timelines show", "zh": "两条时间线说明什么"}}
# Under static batching, requests 4–7 wait until request 0's sixteenth token, although three of the four rows
# were empty from iteration 6 on; requests 8–11 wait through two such batches. Under continuous
# batching a finished request's place is taken in the very next iteration, so the three long requests end up
# running side by side. Step through the continuous run one iteration at a time (the *iteration* slider, or
# the *previous*, *next* and *last* buttons; the text says what the scheduler chose):

# %% slide={"title": {"en": "Step through the iterations", "zh": "逐次查看迭代"}}
IterationTimeline(runs["continuous"], labels=labels)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "§6.2's sequence, found in the run", "zh": "在运行里找到 §6.2 的顺序"}}
# The sequence of *LLM Inference Flow* §6.2, request A done in iteration 2 and the new request D joining in
# iteration 3, is in the timeline. The first iteration in which a request joins while others keep decoding:

# %%
joined = next(r for r in runs["continuous"].timeline if r.prefill and r.decode_ids)
before = runs["continuous"].timeline[joined.index - 1]
print(describe_iteration(before))
print(describe_iteration(joined))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What each request waited", "zh": "每个请求等了多久"}, "say": true}
# What each request waited, counted in iterations: from the iteration it arrived in to the one that gave its
# first token (TTFT) or its last token (latency), both end iterations included. Iterations do not depend on the machine's speed:

# %% slide={"code": [[2, 3]]}
print(viz.tr("            iterations forward calls  short: TTFT short: latency  long: TTFT long: latency"))
for policy, run in runs.items():
    short, long = run.summary(workload.short_ids), run.summary(workload.long_ids)
    print(f"{viz.pad(viz.tr(policy), 11)}{run.iterations:>11}{run.forward_calls:>14}"
          f"{short['ttft_iterations']['mean']:>13.1f}{short['latency_iterations']['mean']:>15.1f}"
          f"{long['ttft_iterations']['mean']:>12.1f}{long['latency_iterations']['mean']:>14.1f}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# Continuous batching needs half the iterations for the same tokens, and the short requests' mean latency
# is close to halved. It makes more forward calls than iterations (an iteration that admits a request while
# others decode runs two calls), but far fewer in total. The same comparison on the clock (this machine, this
# run; your numbers will differ; tokens/s is every output token ÷ the run's total time):

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "In seconds", "zh": "换算成秒"}, "code": [[9, 11]]}
s, c = runs["static"], runs["continuous"]
rows = [(viz.tr("total time (s)"), s.total_s, c.total_s),
        (viz.tr("tokens/s (all requests)"), s.summary()["throughput_tok_s"], c.summary()["throughput_tok_s"]),
        (viz.tr("short: mean latency (s)"), s.summary(workload.short_ids)["latency_s"]["mean"],
         c.summary(workload.short_ids)["latency_s"]["mean"]),
        (viz.tr("long: mean latency (s)"), s.summary(workload.long_ids)["latency_s"]["mean"],
         c.summary(workload.long_ids)["latency_s"]["mean"]),
        (viz.tr("mean TTFT (s)"), s.summary()["ttft_s"]["mean"], c.summary()["ttft_s"]["mean"])]
print(viz.tr("                           static  continuous  ratio"))
for name, a, b in rows:
    print(f"{viz.pad(name, 25)}{a:>8.2f}{b:>12.2f}{b / a:>7.2f}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# On a CPU an iteration's time grows with the tokens in it, so the wall-clock gains are smaller than the iteration
# counts suggest; on a GPU, where a forward pass costs about the same for 1 or 4 rows, they are close to the ratio
# of forward passes (here 32 ÷ 48); vLLM runs decode and prefill in one forward pass, and only then are they close
# to the iteration ratio. `python -m teachllm.bench.serving` runs a larger workload, with more requests and more of
# them at once.
#
# ## 11.4 Chunked prefill: a long prompt among decoders
#
# Prefill of a long prompt is a lot of work in one go. If it lands in one iteration, every request decoding in
# that iteration waits for it: their next token comes late (a stall in the stream the user sees). **Chunked
# prefill** (vLLM, Sarathi-Serve) gives each iteration a **token budget** (`max_num_batched_tokens`): decodes
# take one token each, and a prompt gets what is left, so a long prompt is spread over several iterations
# that keep decoding.
#
# Three short requests decode; after two iterations a 192-token prompt arrives. Once without chunking, once
# with a budget of 32 tokens per iteration:

# %% slide={"title": {"en": "Whole prompt against chunked", "zh": "整段预填充与分块预填充"}, "code": [[16, 18]]}
long_prompt = (tok.encode(LONG_TEXT) * 4)[:192]


def long_prompt_joins(chunked: bool, budget: int = 32):
    config = ServingConfig(max_num_seqs=4, max_num_batched_tokens=budget if chunked else None,
                           chunked_prefill=chunked)
    engine = ServingEngine(lm, config)
    decode = tl.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    ids = [engine.add_request(p, decode) for p in PROMPTS[:3]]
    for _ in range(2):  # the three requests start decoding
        engine.step()
    ids.append(engine.add_request(long_prompt, tl.SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)))
    return engine.drain(ids, first_iteration=0)  # step until every request has finished


chunk_runs = {"whole prompt": long_prompt_joins(False), "chunked, budget 32": long_prompt_joins(True)}
assert [o.token_ids for o in chunk_runs["whole prompt"].outputs] == \
    [o.token_ids for o in chunk_runs["chunked, budget 32"].outputs]
label = {"whole prompt": viz.tr("whole prompt"), "chunked, budget 32": viz.tr("chunked, budget 32")}
print(viz.tr("                     iterations  most tokens in one iteration  long prompt: TTFT (iterations)"))
for name, run in chunk_runs.items():
    long = run.requests[-1]
    print(f"{viz.pad(label[name], 20)}{run.iterations:>11}{max(r.num_tokens for r in run.timeline):>30}"
          f"{long.first_iteration - long.arrival_iteration + 1:>32}")

# %% slide={"title": {"en": "Without chunking", "zh": "不分块"}, "code": false}
whole = chunk_runs["whole prompt"]
most = max(r.num_tokens for r in whole.timeline)
iteration_timeline_figure(whole, title=viz.tr("without chunking: one iteration computes {most} tokens", most=most))

# %% slide={"title": {"en": "Chunked, budget 32", "zh": "分块，预算 32"}, "code": false}
chunked = chunk_runs["chunked, budget 32"]
long_id = chunked.requests[-1].request_id
n_chunks = sum(rid == long_id for r in chunked.timeline for rid, _, _ in r.prefill)
iteration_timeline_figure(chunked, title=viz.tr("chunked prefill, budget 32: the long prompt is prefilled in {n} chunks",
                                                n=n_chunks))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The decoders' longest gap", "zh": "解码请求的最长间隔"}}
# Without chunking, iteration 2 computes 192 prompt tokens and 3 decode tokens; the decoders get their token
# only when the whole prefill is done. With chunks, no iteration computes more than 32 tokens (the dashed
# line). The price is the long prompt's own TTFT: 7 iterations instead of 1. The decoders' longest wait
# between two tokens, measured:

# %% tags=["nbval-ignore-output"]
for name, run in chunk_runs.items():
    gaps = [r.max_gap_s for r in run.requests[:3]]
    print(viz.pad(label[name], 20), viz.tr("decoders' longest gap between two tokens: {gap:6.0f} ms, long prompt's TTFT: "
                                          "{ttft:6.0f} ms", gap=max(gaps) * 1e3, ttft=run.requests[-1].ttft_s * 1e3))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["After each exercise,", "Work in the cells"]}
# ## Summary
# - A decode step reads every weight once whatever the batch, so batching decode multiplies tokens per second
#   (*LLM Generation Process* §6.3: the weights read once, `# 14GB(只读一次)`, for 32 times the computation);
#   `tl.cost` shows the intensity growing with the batch, and the measurement shows the gain.
# - An engine works in iterations: a scheduler fills each with decodes (one token per running request) and
#   prefills; finished requests leave and free their cache.
# - Static batching lets short requests wait for the longest one in their batch. Continuous batching
#   refills the batch every iteration: here half the iterations, and about half the latency for short
#   requests counted in iterations, with the same tokens for everyone.
# - Chunked prefill caps the tokens per iteration, so a long prompt does not stall the others' decoding; it
#   costs that prompt a later first token.
#
# ## Exercises
# 1. **How does continuous batching serve prefill and decode requests at once?** (*LLM Generation Process*,
#    question 3.) Find, in the engine's timeline, an iteration in which one request prefills a chunk of its
#    prompt while others decode, and say what the model computes in it. Write `mixed_iterations(run)`, the
#    indices of all such iterations of a run, and set `chunk_gets_token_each_iteration` to True or False: does
#    the request whose prompt is being prefilled get a sampled token in each of them?
# 2. With `max_num_seqs=1`, what do static and continuous batching become? Predict the number of iterations
#    for the first four requests of the workload, then run both. Write `iterations_one_at_a_time(max_tokens)`,
#    the total number of iterations to serve, one at a time, requests that want `max_tokens[i]` output tokens
#    each, and set
#    `static_same_as_continuous` to True or False.
# 3. Run `long_prompt_joins(True, budget)` with budgets of 8, 32 and 128. How do the long prompt's TTFT (in
#    iterations) and the largest iteration change? What would you choose for a chat service? Write
#    `long_prompt_ttft(run, request_id)`, a request's TTFT in iterations (the iteration it arrives in and the one
#    that samples its first token both count), and `largest_iteration(run)`, the most tokens any iteration
#    computes; set `smaller_budget_delays_long_prompt` to True or False.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: iterations that prefill a chunk while other requests decode.
def mixed_iterations(run):
    # the indices (record.index) of the iterations of run.timeline that hold a prefill chunk and a decode
    ...  # your code


chunk_gets_token_each_iteration = None  # True or False

# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch11-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: static and continuous batching with max_num_seqs=1.
def iterations_one_at_a_time(max_tokens):
    # the iterations needed to serve one request at a time; max_tokens[i] is request i's number of output tokens
    ...  # your code


static_same_as_continuous = None  # True or False

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch11-ex2")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 3: the token budget against the long prompt's TTFT.
def long_prompt_ttft(run, request_id):
    # the request's TTFT in iterations: from the iteration it arrives in to the one that samples its first token
    ...  # your code


def largest_iteration(run):
    # the most tokens (decodes + prefill chunk tokens) computed by one iteration of the run
    ...  # your code


smaller_budget_delays_long_prompt = None  # True or False

# %% tags=["check"]
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch11-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch11.py` (in JupyterLab: `solutions/ch11.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(11)
