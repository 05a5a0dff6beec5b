"""Chapter 11 · Serving many requests — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
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


# %% Exercise 1
# (question 3 of the course note LLM Generation Process): in the same iteration. The scheduler gives each decoding
# request one token, then fills the rest of the token budget with a chunk of the new prompt; only requests whose
# tokens are all computed get a sampled token.


def mixed_iterations(run):
    """The indices of the iterations in which a prefill chunk runs while other requests decode."""
    return [record.index for record in run.timeline if record.decode_ids and record.prefill]


chunk_gets_token_each_iteration = False  # only the iteration that computes its last prompt token samples for it
run = long_prompt_joins(True, 32)
mixed = [r for r in run.timeline if r.index in mixed_iterations(run)]
assert mixed
for record in mixed:
    (rid, start, n), = record.prefill
    assert record.num_tokens == len(record.decode_ids) + n <= 32
    print(f"iteration {record.index}: {len(record.decode_ids)} decode tokens + prompt tokens {start}..{start + n - 1}"
          f" of request {rid}; {'its first token' if rid in record.sampled else 'no token for it yet'}")
alone = [lm.generate(p, tl.SamplingParams(temperature=0, max_tokens=m, ignore_eos=True)).token_ids
         for p, m in zip(PROMPTS[:3] + [long_prompt], (8, 8, 8, 2), strict=True)]
assert [o.token_ids for o in run.outputs] == alone  # batching never changes a request's tokens
assert any(rid not in r.sampled for r in mixed for rid, _, _ in r.prefill) is not chunk_gets_token_each_iteration

# %% Exercise 2
# With max_num_seqs=1 both policies serve one request at a time: one iteration for each prefill (which yields the
# first token) and one per further token, i.e. Σ output tokens.


def iterations_one_at_a_time(max_tokens):
    """Iterations to serve requests one at a time, given each request's number of output tokens."""
    return sum(max_tokens)


static_same_as_continuous = True
prompts = PROMPTS[:4]
params = [tl.SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in (3, 5, 2, 4)]
for policy in ("static", "continuous"):
    r = ServingEngine(lm, ServingConfig(policy=policy, max_num_seqs=1)).run(prompts, params)
    print(f"{policy}: {r.iterations} iterations")
    assert r.iterations == iterations_one_at_a_time([3, 5, 2, 4])

# %% Exercise 3
# The budget trades the long prompt's TTFT against the size of every iteration. For a chat service, a budget that
# keeps every iteration short keeps the others' decode smooth, at the cost of a later first token for the long
# prompt.


def long_prompt_ttft(run, request_id):
    """TTFT in iterations: from the iteration the request arrives in to the one that samples its first token."""
    req = next(r for r in run.requests if r.request_id == request_id)
    return req.first_iteration - req.arrival_iteration + 1


def largest_iteration(run):
    """The most tokens (decodes + prefill chunk tokens) any iteration of the run computed."""
    return max(record.num_tokens for record in run.timeline)


smaller_budget_delays_long_prompt = True
results = {}
for budget in (8, 32, 128):
    r = long_prompt_joins(True, budget)
    results[budget] = (long_prompt_ttft(r, r.requests[-1].request_id), largest_iteration(r))
    print(f"budget {budget:>3}: long prompt TTFT {results[budget][0]} iterations, largest iteration "
          f"{results[budget][1]} tokens")
assert results[8][0] > results[32][0] >= results[128][0]
assert smaller_budget_delays_long_prompt
assert results[8][1] <= 8 < results[128][1]
