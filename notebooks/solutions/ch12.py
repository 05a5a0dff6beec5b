"""Chapter 12 · Paged KV cache — solutions to the exercises."""
import math

import teachllm as tl
from teachllm.serving import BlockManager, ServingConfig, ServingEngine
from teachllm.serving.workload import LONG_TEXT

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
questions = ["What is the capital of France?", "What is 2 + 2?", "Is the sun a star?"]
chats = [tok.encode(tok.apply_chat_template([{"role": "user", "content": q}])) for q in questions]
params = tl.SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)

# Exercise 1: slots allocated, wasted, and block-table entries, for block sizes 1, 4, 16, 64.
# Each request stores prompt + output − 1 tokens (the last sampled token is never run through the model).
lengths = [len(c) + params.max_tokens - 1 for c in chats]
print(f"{'block size':>10} {'allocated':>9} {'wasted':>7} {'entries':>7}")
for bs in (1, 4, 16, 64):
    blocks = [BlockManager(1, bs).blocks_for(n) for n in lengths]
    assert blocks == [math.ceil(n / bs) for n in lengths]  # by hand
    allocated = sum(blocks) * bs
    assert allocated - sum(lengths) < bs * len(lengths)  # at most bs − 1 wasted per request
    print(f"{bs:>10} {allocated:>9} {(allocated - sum(lengths)) / allocated:>7.1%} {sum(blocks):>7}")

# Exercise 2: a pool too small for all three at once. The scheduler preempts the newest request, frees its
# blocks and recomputes it later: every request still gets the tokens it gets with a large pool.
large = ServingEngine(lm, ServingConfig(max_num_seqs=3, block_size=4, num_blocks=64)).run(chats, params)
need = sum(math.ceil(n / 4) for n in lengths)
small = ServingEngine(lm, ServingConfig(max_num_seqs=3, block_size=4, num_blocks=need // 2)).run(chats, params)
preempted = sum(len(r.preempted) for r in small.timeline)
print(f"{need} blocks needed without sharing, {need // 2} in the pool: {preempted} preemptions, "
      f"{small.iterations} iterations against {large.iterations}")
assert [o.token_ids for o in small.outputs] == [o.token_ids for o in large.outputs]

# Exercise 3: a 16-token prompt sent twice finds nothing with blocks of 16: the last prompt token must be
# computed to give the first output's logits, so at most (n − 1) // 16 full blocks are reused.
text = tok.encode(LONG_TEXT)
engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=16))
one = tl.SamplingParams(temperature=0, max_tokens=1)
for n in (16, 17):
    engine.run([text[:n]], one)
    again = engine.run([text[:n]], one)
    found = again.requests[0].num_cached_tokens
    print(f"{n} tokens sent twice: {found} found in the cache")
    assert found == (n - 1) // 16 * 16
