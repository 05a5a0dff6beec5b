# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**", "The code is `teachllm/serving/block_manager.py`"]}
# # Chapter 12 · The paged KV cache
#
# **What you will see.** The KV cache of chapter 4 is one contiguous tensor per request, reserved up front
# for the longest the request could get. With many requests that wastes most of the memory. vLLM's
# **PagedAttention** stores the cache in small fixed-size **blocks**, a **paged KV cache**, and hands them out as
# requests grow, the way an operating system pages memory. We compute the waste of contiguous reservations on the example
# of *LLM Inference Flow* (《LLM 推理流程》) §7.2, follow a token's K and V to its block, watch block tables
# fill, get freed and get shared while real requests run, and check that the paged cache gives the same logits
# as the contiguous one.
#
# **What you will learn.**
# - Why a contiguous cache must reserve `prompt + max_tokens` slots, and how much of that is wasted.
# - **Blocks**, **block tables** and the slot of a token,
#   $\text{slot}(p) = \text{table}[\lfloor p / b \rfloor] \cdot b + (p \bmod b)$ for a block size $b$.
# - Allocation on demand, freeing at finish, and **sharing** a common prefix (reference counts).
# - **Fragmentation** (allocated but unused slots) of both schemes, measured on a run.
#
# The code is `teachllm/serving/block_manager.py` (who owns which block) and `paged_cache.py` (the tensors).

# %% slide={"code": [25, 26]}
import math

import torch

import teachllm as tl
from teachllm import viz
from teachllm.serving import BlockManager, PagedKVCache, Request, ServingConfig, ServingEngine, compare_with_contiguous
from teachllm.serving.parity import contiguous_logits
from teachllm.serving.workload import LONG_TEXT
from teachllm.viz import data, figures
from teachllm.viz.serving import (
    BlockTableView,
    block_table_figure,
    fragmentation_figure,
    paged_cache_points,
    slot_usage,
)

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
torch.set_num_threads(1)  # steadier timings on a shared or busy machine (remove it to use every core)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer
tol = tl.tolerance(lm.dtype)  # how far two computations of the same numbers may differ in this dtype
per_token = tl.cost.kv_cache_bytes(lm, n_tokens=1)  # 2 · L · n_kv · d · bytes per element (4 in float32)
print(viz.tr("K and V of one token: {n:,} bytes ({kib:.0f} KiB)", n=per_token, kib=per_token / 1024))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 12.1 A contiguous cache must reserve the maximum
#
# When a request arrives nobody knows how many tokens it will generate: it may stop at the end-of-sequence
# token after ten tokens or run to `max_tokens`. A contiguous cache is one piece of memory per request, so it
# has to be as long as the request could ever get: `prompt + max_tokens` slots, reserved at admission.
#
# The example of §7.2: three requests that may need 1000, 500 and 800 tokens. Suppose that, at some moment,
# they hold 350, 150 and 400 tokens (prompt and output so far). The block manager does the accounting for
# both schemes (no model needed: this is bookkeeping). A request here is its tokens so far, with `max_tokens`
# set so that its maximum length is the example's:

# %% slide={"title": {"en": "The example of §7.2, allocated", "zh": "§7.2 的例子，实际分配"}, "code": [[1, 9]]}
maximum, so_far = [1000, 500, 800], [350, 150, 400]
manager = BlockManager(num_blocks=256, block_size=16, enable_prefix_caching=False)
requests = []
for i, (most, n) in enumerate(zip(maximum, so_far, strict=True)):
    r = Request(i, list(range(100, 100 + n)), tl.SamplingParams(max_tokens=most - n))  # n tokens so far
    manager.allocate(r, r.num_tokens)  # blocks for its tokens, on demand
    r.num_computed_tokens = r.num_tokens  # (what the engine records after the forward pass)
    requests.append(r)
usage = manager.usage(requests)
print(viz.pad(viz.tr("tokens held:"), 27) + f"{sum(so_far):>5}")
print(viz.pad(viz.tr("contiguous, reserved:"), 27) + viz.tr("{n:>5} slots = {mib:6.1f} MiB, wasted {wasted:.1%}",
      n=usage.contiguous_slots, mib=usage.contiguous_slots * per_token / 2**20, wasted=usage.contiguous_fragmentation))
print(viz.pad(viz.tr("paged, 16-token blocks:"), 27) + viz.tr(
      "{n:>5} slots = {mib:6.1f} MiB, wasted {wasted:.1%} ({blocks} blocks: {sizes})", n=usage.slots_allocated,
      mib=usage.slots_allocated * per_token / 2**20, wasted=usage.fragmentation, blocks=usage.blocks_used,
      sizes=[len(r.block_table) for r in requests]))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Three fifths wasted, and for Llama-2-7B", "zh": "浪费五分之三；换成 Llama-2-7B"}}
# The contiguous reservation wastes $1 - 900 / 2300$ of its slots, about three fifths, and they stay reserved while
# the requests run.
# With blocks, only the last block of each request can be partly empty: under 16 wasted slots per request. For
# Llama-2-7B in float16 a token's K and V take 0.5 MiB, so the example's 2300 reserved slots are 1.1 GiB for
# 900 tokens:

# %% slide={"code": [[3, 6]]}
llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
for template, slots in (("Llama-2-7B, contiguous: {gib:.2f} GiB", usage.contiguous_slots),
                        ("Llama-2-7B, paged     : {gib:.2f} GiB", usage.slots_allocated)):
    print(viz.tr(template, gib=tl.cost.kv_cache_bytes(llama2_7b, slots, dtype="float16") / 2**30))
print(viz.tr("Llama-2-7B, one token: {mib:.2f} MiB", mib=tl.cost.kv_cache_bytes(llama2_7b, 1, dtype="float16") / 2**20))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Reservations cut free memory into holes", "zh": "预留把空闲内存切成碎块"}}
# Reservations also cut the free memory into holes that do not join up: external fragmentation. (Elsewhere in this
# chapter, fragmentation means the other kind, slots allocated but unused.) §7.2 names "severe memory fragmentation"
# among the problems of contiguous caches. Put the three
# reservations one after another in a pool of 2600 slots, then let the 500-slot request finish, and ask
# for room for a new request that may need 700 tokens:

# %% slide={"code": [[7, 9], 14]}
pool = 2600
reserved = {"request 1": 1000, "request 2": 500, "request 3": 800}  # the reservations of §7.2, in this order
start, placed = 0, {}
for name, size in reserved.items():
    placed[name] = (start, start + size)  # [first slot, last slot + 1)
    start += size
holes = [(start, pool), placed.pop("request 2")]  # the end of the pool, and the slots request 2 gave back
free = sum(end - begin for begin, end in holes)
need = 700
print(viz.tr("pool of {pool} slots; holes after request 2 finishes: {holes} = {free} free slots", pool=pool,
             holes=sorted(end - begin for begin, end in holes), free=free))
print(viz.tr("contiguous: a {need}-slot reservation fits in a hole: {fits}", need=need,
             fits=any(end - begin >= need for begin, end in holes)))
free_blocks, blocks_needed = free // 16, math.ceil(need / 16)
print(viz.tr("paged, 16-slot blocks: {free} free blocks, at most {needed} needed: fits: {fits}",
             free=free_blocks, needed=blocks_needed, fits=free_blocks >= blocks_needed))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["800 slots are", "(vLLM calls this", "A small pool"]}
# 800 slots are free, but in two holes of 300 and 500, so a contiguous reservation of 700 fits in neither,
# although there is room for it. With blocks any free block will do, wherever it is: such a request takes
# its blocks one at a time as it grows, at most $\lceil 700 / 16 \rceil = 44$ of them, and the 50 free blocks
# hold them.
#
# ## 12.2 Blocks, block tables and slots
#
# The paged cache is one pool per K and V: `[layers, num_blocks, block_size, n_kv, d]`. A request owns a
# list of blocks, its **block table**: with a block size $b$ (`block_size`), logical block $i$ (its tokens
# $ib$ … $ib + b - 1$) lives in physical block `table[i]`. Flattening blocks and slots, the token at
# position $p$ sits at
#
# $$\text{slot}(p) = \text{table}[\lfloor p / b \rfloor] \cdot b + (p \bmod b)$$
#
# (vLLM calls this the *slot mapping*; the code below computes it as `table[p // bs] * bs + p % bs`).
#
# A small pool of 8 blocks of 4 tokens. Request 0 (5 tokens) and request 1 (9 tokens) take blocks; request 0
# finishes and frees its blocks; request 2 (10 tokens) arrives and gets the freed blocks first:

# %% slide={"title": {"en": "A pool of 8 blocks of 4 tokens", "zh": "8 个块、每块 4 个 token 的池"}, "code": [[5, 13]]}
pool = PagedKVCache(lm.config, num_blocks=8, block_size=4, dtype=lm.dtype, device=lm.device)  # beside the model
manager = BlockManager(num_blocks=8, block_size=4, enable_prefix_caching=False)
texts = ["The sky is blue.", "The three primary colours are red, yellow and",
         "Paged attention stores keys and values in blocks."]
a, b, c = (Request(i, tok.encode(t), tl.SamplingParams()) for i, t in enumerate(texts))
manager.allocate(a, a.num_tokens)
manager.allocate(b, b.num_tokens)
for r in (a, b):
    print(viz.tr("request {i}: {n} tokens → blocks {table}", i=r.request_id, n=r.num_tokens, table=r.block_table))
manager.free(a)  # request 0 finishes
manager.allocate(c, c.num_tokens)
print(viz.tr("request 0 finished; request 2: {n} tokens → blocks {table} (not contiguous)", n=c.num_tokens,
             table=c.block_table))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Request 2's slots", "zh": "请求 2 的槽位"}, "say": true}
# Now run request 2's prompt through the model with the pool as its cache (`pool.view` is what the engine
# passes to the model for one forward call), and the same prompt with a contiguous cache. Every key must
# land at the slot the formula says:

# %% slide={"code": [[7, 8], [10, 12]], "output": [[1, 5], [9, 11]]}
ids = c.prompt_ids
with torch.no_grad():
    lm.model(torch.tensor([ids], device=lm.device), pool.view([c.block_table], num_computed=[0], num_new=[len(ids)]))
contiguous = lm.new_cache(max_len=len(ids))
lm.prefill(ids, contiguous)

bs, table = pool.block_size, c.block_table
slots = [table[p // bs] * bs + p % bs for p in range(len(ids))]
assert slots == pool.slots(table, torch.arange(len(ids))).tolist()  # the formula is the pool's own mapping
print(viz.tr(" p token        logical physical offset slot"))
for p, (token, slot) in enumerate(zip(tok.pieces(ids), slots, strict=True)):
    print(f"{p:>2} {token!r:<12} {p // bs:>7} {table[p // bs]:>8} {p % bs:>6} {slot:>4}")
for layer in range(lm.config.n_layers):
    flat_k = pool.k[layer].flatten(0, 1)  # [num_blocks · block_size, n_kv, d]
    flat_v = pool.v[layer].flatten(0, 1)
    torch.testing.assert_close(flat_k[slots], contiguous.keys(layer)[0].transpose(0, 1), atol=tol.values, rtol=0)
    torch.testing.assert_close(flat_v[slots], contiguous.values(layer)[0].transpose(0, 1), atol=tol.values, rtol=0)
print(viz.tr("every layer: the key and value of position p are at slot(p), equal to the contiguous cache's"))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["To attend, each"]}
# To attend, each layer needs a request's keys in order. `PagedBatch.write` gathers them through the slot
# mapping into a dense tensor; vLLM's PagedAttention kernel instead reads the blocks where they lie, without
# the copy. The arithmetic is the same.
#
# ## 12.3 Blocks on demand, freed at finish, shared by a prefix
#
# Now real requests on the serving engine, with small blocks (4 tokens) so that we can see them: five chat
# questions, at most three running at once, up to 32 tokens each. They all begin with the same chat template
# (`<|im_start|>system …<|im_start|>user`), 24 identical tokens. The pool has 28 blocks (112 slots). Request 0
# arrives first; the other four come one iteration later:

# %% slide={"title": {"en": "Five chat requests on 4-token blocks", "zh": "五个对话请求，每块 4 个 token"}, "code": [[11, 15]], "output": [1, [3, 7]]}
questions = ["What is the capital of France?", "What is 2 + 2?", "Is the sun a star?",
             "What is the capital of Italy?", "What do bees make?"]
chats = [tok.encode(tok.apply_chat_template([{"role": "user", "content": q}])) for q in questions]
shared = next(i for i, pair in enumerate(zip(*chats, strict=False)) if len(set(pair)) > 1)
print(viz.tr("prompt lengths {lengths}; the first {shared} tokens are the same in all of them",
             lengths=[len(c) for c in chats], shared=shared))

engine = ServingEngine(lm, ServingConfig(max_num_seqs=3, block_size=4, num_blocks=28))
print(viz.tr("pool: {blocks} blocks × {size} slots = {slots} slots", blocks=engine.config.num_blocks,
             size=engine.config.block_size, slots=engine.config.num_blocks * engine.config.block_size))
params = tl.SamplingParams(temperature=0, max_tokens=32)
ids = [engine.add_request(chats[0], params)]
engine.step()  # iteration 0: request 0 prefills alone
ids += [engine.add_request(chat, params) for chat in chats[1:]]
run = engine.drain(ids, first_iteration=0)
for out, stats in zip(run.outputs, run.requests, strict=True):
    print(viz.tr("request {rid}: {prompt} prompt + {output:>2} output tokens ({reason}), iterations {first}–{last}, "
                 "{cached} prompt tokens found in the cache", rid=stats.request_id, prompt=stats.prompt_len,
                 output=stats.output_len, reason=out.finish_reason, first=stats.first_iteration,
                 last=stats.finish_iteration, cached=stats.num_cached_tokens))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "After iteration 1", "zh": "第 1 次迭代之后"}}
# After iteration 1 three requests run. Requests 1 and 2 found request 0's first six blocks (24 tokens) in the
# cache: their block tables start with the **same physical blocks** (green, reference count 3), and they
# computed only the rest of their prompts. Each block table holds just the blocks its tokens need; its last
# block is partly filled, unless the tokens happen to fill it (request 2's prompt fills its blocks exactly).

# %% slide={"code": false}
block_table_figure(run.timeline[1].block_tables, title=viz.tr("after iteration {i}", i=1), columns=14)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Step through the run", "zh": "逐步查看这次运行"}, "say": true}
# Step through the run: request 2's table grows by one block every four tokens. When request 0 finishes,
# the blocks only it held go back to the pool's free queue (grey); the shared prefix blocks stay, since
# others still hold them. A freed full block keeps its K and V (the prefix cache remembers which prefix it
# holds) and goes to the back of the free queue, handed out again only after the never-used ones; a block that
# is not full holds no prefix worth keeping, goes to the front and is reused first (12.2's small example had
# prefix caching off, so there every freed block went to the front). Request 3, whose prompt begins like
# request 0's (the template, then "What is the capital of"), even finds one of the freed blocks still holding
# what it needs, and so finds 28 prompt tokens in the cache
# (chapter 13 makes use of that).

# %%
BlockTableView(run, start=1, columns=14)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The same story in numbers", "zh": "同一过程的数字"}}
# The same story in numbers, read from the recorded block tables:

# %% slide={"code": false}
tables = {r.index: r.block_tables for r in run.timeline}
growth = [(i, len(t["tables"][2])) for i, t in tables.items() if 2 in t["tables"]]
changes = [(i, n) for k, (i, n) in enumerate(growth) if k == 0 or n != growth[k - 1][1]]
print(viz.tr("request 2's blocks after iteration: {changes}", changes=", ".join(f"{i} → {n}" for i, n in changes)))
finish = run.requests[0].finish_iteration
last = tables[finish - 1]["tables"]
own = sorted(set(last[0]).difference(*(t for rid, t in last.items() if rid != 0)))
print(viz.tr("request 0 finished in iteration {finish}; the blocks only it held went back to the pool: {own}",
             finish=finish, own=own))
for block in own:
    later = [(i, rid) for i, t in tables.items() if i > finish for rid, table in t["tables"].items() if block in table]
    print(viz.tr("  block {block:>2}: next held by request {rid} from iteration {i}", block=block, rid=later[0][1],
                 i=later[0][0]) if later else viz.tr("  block {block:>2}: not needed again", block=block))
joined = run.requests[3].first_iteration
print(viz.tr("request 3 (joined in iteration {joined}): table {table}, {n} prompt tokens found in the cache",
             joined=joined, table=tables[joined]["tables"][3], n=run.requests[3].num_cached_tokens))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["After every iteration"]}
# ## 12.4 Fragmentation: allocated against used
#
# After every iteration the engine recorded how many blocks were in use and what fraction of their slots held
# nothing, $1 - \text{used} / \text{allocated}$ (`IterationRecord.fragmentation`), and the same for contiguous
# caches that would have reserved `prompt + max_tokens` for each running request,
# $1 - \text{tokens} / \text{reserved}$. Three lines, each one value per iteration: the slots that hold a token (a
# shared slot counted once), the slots paging allocated, the slots contiguous caches would have reserved:

# %% slide={"code": false}
usage = slot_usage(run)
fragmentation_figure(usage)

# %% slide={"title": {"en": "Waste per iteration", "zh": "每次迭代的浪费"}, "code": false, "output": [[1, 4], [-3, -1]]}
print(viz.tr("iteration running  used  paged contiguous"))
for u in usage[::4]:
    print(f"{u.iteration:>9} {u.running:>7} {u.slots_used:>5} {u.slots_allocated:>6} {u.slots_reserved:>10}")
busy = [u for u in usage if u.running]
print(viz.tr("mean over {n} iterations: paged wastes {paged:.1%} of what it allocates, contiguous reservations {contiguous:.1%}",
             n=len(busy), paged=sum(u.paged_waste for u in busy) / len(busy),
             contiguous=sum(u.contiguous_waste for u in busy) / len(busy)))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Three requests stop early at `<|im_end|>` (8 to 12 tokens of the 32 allowed), so the slots reserved
# for their output stay mostly empty; paging wastes at most three slots per request, and holds the shared
# prefix once for everybody. *LLM Inference Flow* §7.3 claims "no fragmentation" for blocks, and it is nearly
# true: any free block will do, so there are no holes as in 12.1; the slots allocated but unused remain, less than
# one block per request, and the block size sets that bound (exercise 1).
#
# ## 12.5 The same logits
#
# Paging changes where K and V are stored, not what attention computes. `compare_with_contiguous` runs four
# prompts through paged caches the way the engine does — blocks from the block manager, a prompt that shares a
# 16-token prefix reading it from the cache, batched decode steps — and each prompt alone through the
# contiguous cache, and compares every logit:

# %% slide={"title": {"en": "Three block sizes, the same logits", "zh": "三种块大小，同样的 logits"}, "code": [[8, 13]]}
text = tok.encode(LONG_TEXT)
prompts = [text[:16], text[:16] + text[40:45], text[:12], text[20:27]]  # the 2nd shares 16 tokens with the 1st
reference = [contiguous_logits(lm, p, n_decode=3) for p in prompts]
print(viz.tr("prompts of {lengths} tokens, prefill + 3 decode steps each; largest |logit| {largest:.1f}",
             lengths=[len(p) for p in prompts],
             largest=max(float(x.abs().max()) for logits, _ in reference for x in logits)))
reports = {}
for block_size in (1, 4, 16):
    report = reports[block_size] = compare_with_contiguous(lm, prompts, block_size, n_decode=3, reference=reference)
    assert report.max_abs_error <= tol.logits
    print(viz.tr("block size {size:>2}: every logit within {bound} of the contiguous cache's: {within}, prefix "
                 "tokens read from the cache: {cached}", size=block_size, bound=tol.text("logits"),
                 within=report.max_abs_error <= tol.logits, cached=report.cached_tokens))

# %% tags=["nbval-ignore-output"] slide={"title": {"en": "The largest difference", "zh": "最大差异"}}
# the largest difference itself depends on the order in which this CPU's kernels add, so nbval does not compare it
for block_size, report in reports.items():
    print(viz.tr("block size {size:>2}: max |paged − contiguous| = {error:.0e}", size=block_size,
                 error=report.max_abs_error))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The second prompt reads its first 16 tokens' K and V from the first prompt's blocks; with small blocks the
# third prompt (the first 12 tokens of the first) finds most of its tokens too, but never the last one, whose
# logits it needs. The differences left (up to the maximum printed above, under the 1e-4 the comparison
# asserts, on logits as large as the largest |logit| printed) come from computing in batches of
# another shape, which the contiguous cache shows too when it batches. With `batched=False` (one sequence per
# forward call, as in the contiguous run), a prompt with no cached prefix gets bit-identical logits on a CPU
# (`tests/test_serving_model.py` asserts it).
#
# ## 12.6 Contiguous against paged, side by side *(optional)*
#
# One request, "What is 2 + 2?", allowed 64 tokens: it stops after 12. The contiguous cache of chapter 4
# reserves prompt + 64 slots at once (grey line); the paged cache holds 16-token blocks (vLLM's default size),
# one more each time the last one is full (orange). Both store exactly the same tokens (blue, and the dotted
# orange line on top of it):

# %% slide={"code": false}
question = chats[1]
params = tl.SamplingParams(temperature=0, max_tokens=64)
contiguous_points = [data.cache_point(s.index, s.phase, s.cache) for s in tl.generation_steps(lm, [question], params)]
engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=16))
engine.run([question], params)
paged_points = paged_cache_points(engine, request_id=0)
assert [p.length for p in paged_points] == [p.length for p in contiguous_points]
figures.cache_growth_figure(contiguous_points, paged=paged_points)

# %% slide={"title": {"en": "The final count", "zh": "最终的数字"}}
last_c, last_p = contiguous_points[-1], paged_points[-1]
print(viz.tr("{n} tokens: contiguous {c_slots} slots = {c_mib:.2f} MiB, paged {p_slots} slots = {p_mib:.2f} MiB",
             n=last_c.length, c_slots=last_c.capacity, c_mib=last_c.bytes_allocated / 2**20,
             p_slots=last_p.capacity, p_mib=last_p.bytes_allocated / 2**20))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["After each exercise,", "Work in the cells"]}
# ## Summary
# - A contiguous cache reserves `prompt + max_tokens` per request: with the maximum lengths 1000/500/800 of
#   *LLM Inference Flow* §7.2, and 900 tokens held at the moment we assumed, 2300 slots are reserved for those
#   900 tokens (61% wasted), and the free memory splits into holes.
# - A paged cache is a pool of fixed-size blocks; a block table maps each request's logical blocks to physical
#   ones, and a token's K and V sit at slot $\text{table}[\lfloor p / b \rfloor] \cdot b + (p \bmod b)$.
# - Blocks are handed out as a request grows and return to the pool when it finishes, to be handed out again,
#   wherever they are; full blocks that hold a prefix go last, so that a later request may find them.
# - Requests with a common prefix share its full blocks (reference count > 1) and skip computing it.
# - Waste is under one block per request; the logits are those of the contiguous cache (≤ 1e-4).
#
# ## Exercises
# 1. Smaller blocks waste less, but each request needs a longer block table, and a real kernel reads more,
#    smaller pieces. For the five requests of 12.3 (at the tokens each finally stores in the cache: prompt +
#    output − 1, since the last output token is never written), compute the slots allocated, the slots wasted and the block-table entries for block sizes 1, 4, 16 and 64. Write
#    `block_usage(lengths, block_size)`, returning the three counts `(allocated, wasted, entries)` for requests
#    of `lengths` tokens.
# 2. What happens when the pool is too small? Run the five requests as 12.3 does (at most three at once, request
#    0 one iteration ahead), only on a pool of 24 blocks of 4 tokens. Do they still get the tokens they got before? Write `count_preemptions(run)`, how many times the run sent a
#    request back to the queue, and set `same_tokens_small_pool` to True or False.
# 3. A prompt of exactly 16 tokens is sent twice, with blocks of 16. How many of its tokens does the second
#    request find in the cache, and why not all of them? Write `tokens_found_again(prompt_len, block_size)`, the
#    tokens the second request finds for any prompt length and block size.
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 1: slots allocated, slots wasted and block-table entries for a block size.
def block_usage(lengths, block_size):
    # (allocated, wasted, entries): slots allocated, slots wasted and block-table entries, three ints
    ...  # your code


# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch12-ex1")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 2: run the five requests with 24 blocks of 4 tokens.
def count_preemptions(run):
    # how many times the run sent a request back to the queue for lack of blocks
    ...  # your code


same_tokens_small_pool = None  # True or False: the same tokens as with a large pool?

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch12-ex2")

# %% tags=["exercise"] slideshow={"slide_type": "skip"}
# Exercise 3: a prompt sent twice.
def tokens_found_again(prompt_len, block_size):
    # the prompt tokens the second request finds in the cache when the same prompt is sent twice
    ...  # your code


# %% tags=["check"]
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch12-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch12.py` (in JupyterLab: `solutions/ch12.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(12)
