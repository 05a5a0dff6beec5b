"""Chapter 11 · Serving many requests — solutions to the exercises."""
import teachllm as tl
from teachllm.serving import ServingConfig, ServingEngine
from teachllm.serving.workload import LONG_TEXT, PROMPTS

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
long_prompt = tok.encode(LONG_TEXT)[:48]


def long_prompt_joins(chunked: bool, budget: int = 32):
    """Three requests decode; then a 48-token prompt arrives."""
    engine = ServingEngine(lm, ServingConfig(max_num_seqs=4, max_num_batched_tokens=budget if chunked else None,
                                             chunked_prefill=chunked))
    ids = [engine.add_request(p, tl.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)) for p in PROMPTS[:3]]
    for _ in range(2):
        engine.step()
    ids.append(engine.add_request(long_prompt, tl.SamplingParams(temperature=0, max_tokens=2, ignore_eos=True)))
    return engine.drain(ids, first_iteration=0)


# Exercise 1 (question 3 of the course note LLM Generation Process): in the same iteration. The scheduler
# gives each decoding request one token, then fills the rest of the token budget with a chunk of the new
# prompt; only requests whose tokens are all computed get a sampled token.
run = long_prompt_joins(True, 32)
mixed = [r for r in run.timeline if r.decode_ids and r.prefill]
assert mixed
for record in mixed:
    (rid, start, n), = record.prefill
    assert record.num_tokens == len(record.decode_ids) + n <= 32
    print(f"iteration {record.index}: {len(record.decode_ids)} decode tokens + prompt tokens {start}..{start + n - 1}"
          f" of request {rid}; {'its first token' if rid in record.sampled else 'no token for it yet'}")
alone = [lm.generate(p, tl.SamplingParams(temperature=0, max_tokens=m, ignore_eos=True)).token_ids
         for p, m in zip(PROMPTS[:3] + [long_prompt], (8, 8, 8, 2), strict=True)]
assert [o.token_ids for o in run.outputs] == alone  # batching never changes a request's tokens

# Exercise 2: with max_num_seqs=1 both policies serve one request at a time: one iteration for each
# prefill (which yields the first token) and one per further token, i.e. Σ output tokens.
prompts = PROMPTS[:4]
params = [tl.SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in (3, 5, 2, 4)]
for policy in ("static", "continuous"):
    r = ServingEngine(lm, ServingConfig(policy=policy, max_num_seqs=1)).run(prompts, params)
    print(f"{policy}: {r.iterations} iterations")
    assert r.iterations == 3 + 5 + 2 + 4

# Exercise 3: the budget trades the long prompt's TTFT against the size of every iteration.
results = {}
for budget in (8, 32, 128):
    r = long_prompt_joins(True, budget)
    req = r.requests[-1]
    results[budget] = (req.first_iteration - req.arrival_iteration + 1, max(x.num_tokens for x in r.timeline))
    print(f"budget {budget:>3}: long prompt TTFT {results[budget][0]} iterations, largest iteration "
          f"{results[budget][1]} tokens")
assert results[8][0] > results[32][0] >= results[128][0]
assert results[8][1] <= 8 < results[128][1]
