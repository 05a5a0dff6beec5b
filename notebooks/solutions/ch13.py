"""Chapter 13 · Further — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import teachllm as tl
from teachllm.serving import ServingConfig, ServingEngine, blend, precompute_chunk, speculative_generate
from teachllm.serving.cacheblend import compare_logits, logits_after
from teachllm.serving.workload import DOCUMENTS, QUESTION

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
chunks = [tok.encode(d) for d in DOCUMENTS]

# %% Exercise 1
# Prefix caching finds only blocks whose WHOLE prefix matches: the leading tokens the new prompt shares with one
# sent before, rounded down to whole blocks, and never the prompt's last token (it must be computed to give the
# first output's logits). "document 2 + document 1" shares nothing with "document 1 + document 2"; "document 1 +
# document 3" finds document 1's full blocks.


def prefix_tokens_found(sent_prompts, prompt, block_size):
    """Tokens of `prompt` the prefix cache gives back after `sent_prompts` were sent (each answered with one token)."""
    def shared(a, b):
        return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))

    longest = max((shared(p, prompt) for p in sent_prompts), default=0)
    return min(longest, len(prompt) - 1) // block_size * block_size


engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=64))
question = tok.encode(" Question: who studies octopuses?", add_special_tokens=False)
sent = []
for order in ((0, 1), (1, 0), (0, 2)):
    prompt = sum((chunks[i] for i in order), []) + question
    found = engine.run([prompt], tl.SamplingParams(temperature=0, max_tokens=1)).requests[0].num_cached_tokens
    print(f"documents {order[0] + 1} + {order[1] + 1} + question: {found} tokens found")
    assert found == prefix_tokens_found(sent, prompt, 16)
    sent.append(prompt)

# %% Exercise 2
# blend computes full_layers · N token-layers for every token, then r·N tokens (rounded, at least one) in each of
# the other L − full_layers layers. At layer 0 a token's K and V do not depend on other tokens (its hidden state is
# its embedding; the shifted key is exact), so the layer-0 deviation is zero up to rounding and choosing by it
# chooses by noise: it saves one layer of N tokens and loses HKVD's advantage. From layer 1 on the missing
# cross-attention shows.


def recompute_share(n_tokens, n_layers, ratio, full_layers):
    """Token-layers `blend` computes for a context of n_tokens, over those of a full prefill (n_tokens · n_layers)."""
    if ratio == 0:
        return 0.0  # full reuse: nothing is computed
    chosen = max(1, round(ratio * n_tokens)) if full_layers < n_layers else n_tokens
    return (full_layers * n_tokens + (n_layers - full_layers) * chosen) / (n_layers * n_tokens)


layer0_kv_depends_on_other_tokens = False
stored = [precompute_chunk(lm, c) for c in chunks]
suffix = tok.encode(QUESTION)
context = sum(chunks, [])
reference = lm.forward(context + suffix)[0, len(context):]
deviation = {}
for full_layers in (1, 2):
    b = blend(lm, stored, ratio=0.15, full_layers=full_layers)
    q = compare_logits(reference, logits_after(lm, b.k, b.v, suffix), suffix)
    deviation[full_layers] = float(b.deviation.max())
    share = recompute_share(len(context), lm.config.n_layers, 0.15, full_layers)
    assert abs(share - b.recompute_fraction) < 1e-12
    print(f"full_layers={full_layers}: {share:.3f} of a full prefill, max deviation {deviation[full_layers]:.4f}, "
          f"KL {q['kl']:.4f}")
assert (deviation[1] > 1e-2 * deviation[2]) is layer0_kv_depends_on_other_tokens

# %% Exercise 3
# Speculative decoding with the 29-layer draft: the output is the greedy output for every γ. A target call yields
# 1 + α + … + α^γ tokens on average; the terms shrink geometrically, so the sum levels off at 1 / (1 − α) however
# large γ is, while every extra proposal costs one more draft step (and the proposals after a mismatch are wasted).


def tokens_per_call_ceiling(alpha):
    """The limit of 1 + α + … + α^γ as γ grows: the most tokens per target call any γ gives on average."""
    return 1 / (1 - alpha)


gamma_keeps_helping = False
prompt = tok.encode(tok.apply_chat_template([{"role": "user", "content": "Explain why the sky is blue."}]))
greedy = lm.generate(prompt, tl.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)).token_ids
for gamma in (1, 2, 4, 6):
    r = speculative_generate(lm, prompt, max_tokens=12, draft_layers=29, gamma=gamma)
    assert r.token_ids == greedy
    # each call yields its accepted proposals + 1, and a call ends in a rejection unless all were accepted, so the
    # measurement never beats the ceiling of its own judged α
    assert r.tokens_per_target_call <= tokens_per_call_ceiling(r.judged_acceptance) + 1e-9
    print(f"γ = {gamma}: acceptance {r.acceptance_rate:.2f}, {r.tokens_per_target_call:.2f} tokens per target call "
          f"(ceiling at its judged α = {r.judged_acceptance:.2f}: {tokens_per_call_ceiling(r.judged_acceptance):.2f})")
