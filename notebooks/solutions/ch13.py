"""Chapter 13 · Further — solutions to the exercises."""
import teachllm as tl
from teachllm.serving import ServingConfig, ServingEngine, blend, precompute_chunk, speculative_generate
from teachllm.serving.bench import DOCUMENTS, QUESTION
from teachllm.serving.cacheblend import compare_logits, logits_after

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
chunks = [tok.encode(d) for d in DOCUMENTS]

# Exercise 1: prefix caching finds only blocks whose WHOLE prefix matches. Reference: count, by hand, the
# leading tokens the new prompt shares with one sent before, rounded down to whole blocks of 16 (never
# the prompt's last token).
engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=64))
question = tok.encode(" Question: who studies octopuses?", add_special_tokens=False)
sent = []
for order in ((0, 1), (1, 0), (0, 2)):
    prompt = sum((chunks[i] for i in order), []) + question
    found = engine.run([prompt], tl.SamplingParams(temperature=0, max_tokens=1)).requests[0].num_cached_tokens
    shared = max((next((i for i, (a, b) in enumerate(zip(prompt, p, strict=False)) if a != b), min(len(p), len(prompt)))
                  for p in sent), default=0)
    expected = min(shared, len(prompt) - 1) // 16 * 16
    print(f"documents {order[0] + 1} + {order[1] + 1} + question: {found} tokens found (shared prefix {shared})")
    assert found == expected
    sent.append(prompt)

# Exercise 2: at layer 0 a token's K and V do not depend on other tokens, so choosing by the layer-0
# deviation chooses by noise; from layer 1 on the missing cross-attention shows.
stored = [precompute_chunk(lm, c) for c in chunks]
suffix = tok.encode(QUESTION)
context = sum(chunks, [])
reference = lm.forward(context + suffix)[0, len(context):]
deviation = {}
for full_layers in (1, 2):
    b = blend(lm, stored, ratio=0.15, full_layers=full_layers)
    q = compare_logits(reference, logits_after(lm, b.k, b.v, suffix), suffix)
    deviation[full_layers] = float(b.deviation.max())
    print(f"full_layers={full_layers}: max deviation {deviation[full_layers]:.4f}, KL {q['kl']:.4f}")
assert deviation[1] < 1e-2 * deviation[2]

# Exercise 3: speculative decoding with the 29-layer draft: the output is the greedy output for every γ;
# tokens per target call level off because a proposal counts only if all earlier ones were accepted.
prompt = tok.encode(tok.apply_chat_template([{"role": "user", "content": "Explain why the sky is blue."}]))
greedy = lm.generate(prompt, tl.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)).token_ids
for gamma in (1, 2, 4, 6):
    r = speculative_generate(lm, prompt, max_tokens=12, draft_layers=29, gamma=gamma)
    assert r.token_ids == greedy
    print(f"γ = {gamma}: acceptance {r.acceptance_rate:.2f}, {r.tokens_per_target_call:.2f} tokens per target call")
