"""Chapter 12 · Paged KV cache — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import math

import teachllm as tl
from teachllm.serving import BlockManager, ServingConfig, ServingEngine
from teachllm.serving.workload import LONG_TEXT

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
# The run of 12.3: five chat questions, at most three at once, 4-token blocks, request 0 one iteration ahead.
questions = ["What is the capital of France?", "What is 2 + 2?", "Is the sun a star?",
             "What is the capital of Italy?", "What do bees make?"]
chats = [tok.encode(tok.apply_chat_template([{"role": "user", "content": q}])) for q in questions]
params = tl.SamplingParams(temperature=0, max_tokens=32)


def run_of_12_3(num_blocks):
    """The five requests as 12.3 runs them, on a pool of `num_blocks` blocks of 4 tokens."""
    engine = ServingEngine(lm, ServingConfig(max_num_seqs=3, block_size=4, num_blocks=num_blocks))
    ids = [engine.add_request(chats[0], params)]
    engine.step()  # iteration 0: request 0 prefills alone
    ids += [engine.add_request(chat, params) for chat in chats[1:]]
    return engine.drain(ids, first_iteration=0)


large = run_of_12_3(28)
# Each request stores prompt + output − 1 tokens (the last sampled token is never run through the model).
lengths = [r.prompt_len + r.output_len - 1 for r in large.requests]

# %% Exercise 1
# Slots allocated, wasted, and block-table entries, for block sizes 1, 4, 16, 64.


def block_usage(lengths, block_size):
    """(slots allocated, slots wasted, block-table entries) for requests of `lengths` tokens in blocks of block_size."""
    entries = sum(math.ceil(n / block_size) for n in lengths)
    return entries * block_size, entries * block_size - sum(lengths), entries


print(f"{'block size':>10} {'allocated':>9} {'wasted':>7} {'entries':>7}")
for bs in (1, 4, 16, 64):
    blocks = [BlockManager(1, bs).blocks_for(n) for n in lengths]
    assert blocks == [math.ceil(n / bs) for n in lengths]  # by hand
    allocated, wasted, entries = block_usage(lengths, bs)
    assert (allocated, entries) == (sum(blocks) * bs, sum(blocks))
    assert allocated - sum(lengths) < bs * len(lengths)  # at most bs − 1 wasted per request
    print(f"{bs:>10} {allocated:>9} {(allocated - sum(lengths)) / allocated:>7.1%} {sum(blocks):>7}")

# %% Exercise 2
# A pool too small for all three at once. The scheduler preempts the newest request, frees its blocks and
# recomputes it later: every request still gets the tokens it gets with a large pool.


def count_preemptions(run):
    """How many times requests were sent back to the queue for lack of blocks (a request may count more than once)."""
    return sum(len(record.preempted) for record in run.timeline)


same_tokens_small_pool = True
small = run_of_12_3(24)
preempted = count_preemptions(small)
print(f"24 blocks in the pool: {preempted} preemptions, {len(small.timeline)} iterations against "
      f"{len(large.timeline)}")
assert ([o.token_ids for o in small.outputs] == [o.token_ids for o in large.outputs]) is same_tokens_small_pool
assert preempted == sum(r.num_preemptions for r in small.requests) > 0

# %% Exercise 3
# A 16-token prompt sent twice finds nothing with blocks of 16: the last prompt token must be computed to give the
# first output's logits, so at most (n − 1) // 16 full blocks are reused.


def tokens_found_again(prompt_len, block_size):
    """Prompt tokens the prefix cache gives back when the same prompt is sent a second time."""
    return (prompt_len - 1) // block_size * block_size


text = tok.encode(LONG_TEXT)
engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=16))
one = tl.SamplingParams(temperature=0, max_tokens=1)
for n in (16, 17):
    engine.run([text[:n]], one)
    again = engine.run([text[:n]], one)
    found = again.requests[0].num_cached_tokens
    print(f"{n} tokens sent twice: {found} found in the cache")
    assert found == tokens_found_again(n, 16)
