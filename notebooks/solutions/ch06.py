"""Chapter 6 · From logits to a token — solutions to the exercises, checked against transformers.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import itertools

import torch
from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper

import teachllm as tl
from teachllm import sampling

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
question = tok.apply_chat_template([{"role": "user", "content": "Write one sentence about the sea."}])
logits = lm.prefill(tok.encode(question), lm.new_cache(max_len=64))  # [1, V]
greedy_id = int(logits.argmax())

# %% Exercise 1
# (question 2 of the course note LLM Generation Process): temperature 0 is not a small temperature, it is greedy
# by convention.


def greedy_token_probability(logits, temperature):
    """The probability that sampling at `temperature` (T > 0) draws argmax(logits); logits is [V]."""
    probs = torch.softmax(sampling.apply_temperature(logits, temperature), -1)  # [V]
    return float(probs[logits.argmax()])


tied_top_probability = 0.5  # two tied tokens stay 50/50 at any T > 0; the others vanish as T → 0
try:
    TemperatureLogitsWarper(0.0)  # what transformers builds for do_sample=True, temperature=0
    t0_refused_by_transformers = False
except ValueError as error:
    t0_refused_by_transformers = True
    print("transformers:", str(error).splitlines()[0][:100])

print("logits / 0 gives:", (logits[0, :3] / 0).tolist())  # inf, -inf or nan: not a distribution
g = torch.Generator().manual_seed(0)
for t in (0.5, 0.1, 0.01):
    probs = torch.softmax(sampling.apply_temperature(logits, t), -1)
    draws = torch.multinomial(probs[0], 200, replacement=True, generator=g)
    print(f"T = {t}: p(greedy) = {greedy_token_probability(logits[0], t):.3f}, "
          f"greedy token in {int((draws == greedy_id).sum())} of 200 draws")
tied = torch.tensor([[2.0, 2.0, 1.0]])
probs = torch.softmax(sampling.apply_temperature(tied, 0.01), -1)
assert torch.allclose(probs[0, :2], torch.tensor([tied_top_probability] * 2))
assert t0_refused_by_transformers
assert lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=1)).token_ids[0] == greedy_id

# %% Exercise 2
# Temperature keeps the ranking, so top-k keeps the same tokens; top-p looks at probabilities, which temperature
# changes, so it keeps more tokens when T > 1 and fewer when T < 1.


def kept_after(logits, temperature, k=None, top_p=None):
    """The set of token ids kept when `logits` [V] are divided by `temperature`, then top-k or top-p applied."""
    out = sampling.apply_temperature(logits, temperature)
    out = sampling.apply_top_k(out, k) if k is not None else sampling.apply_top_p(out, top_p)
    return set(torch.isfinite(out).nonzero().flatten().tolist())


topk_depends_on_temperature = False
topp_depends_on_temperature = True

kept_k = {t: kept_after(logits[0], t, k=5) for t in (0.5, 1.0, 2.0)}
assert kept_k[0.5] == kept_k[1.0] == kept_k[2.0]
n_p = {t: len(kept_after(logits[0], t, top_p=0.9)) for t in (0.5, 1.0, 2.0)}
print("top-p 0.9 keeps", n_p, "tokens at T = 0.5, 1, 2")
assert n_p[0.5] <= n_p[1.0] <= n_p[2.0] and n_p[0.5] < n_p[2.0]

# %% Exercise 3
# Min-p and top-k commute. Both keep a top slice of the same ranking: top-k the first k, min-p those with
# p ≥ min_p · p_max, and masking tokens below the top does not change p_max's ratio test, so either order keeps
# the intersection. Check many settings, against transformers' warpers.


def kept_in_order(logits, min_p, k, min_p_first):
    """The set of token ids kept from `logits` [V] by min-p then top-k (`min_p_first`), or top-k then min-p."""
    if min_p_first:
        out = sampling.apply_top_k(sampling.apply_min_p(logits, min_p), k)
    else:
        out = sampling.apply_min_p(sampling.apply_top_k(logits, k), min_p)
    return set(torch.isfinite(out).nonzero().flatten().tolist())


min_p_top_k_commute = True

for k, p in itertools.product((1, 3, 10, 50, 400), (0.01, 0.05, 0.1, 0.3, 0.8)):
    a, b = kept_in_order(logits[0], p, k, False), kept_in_order(logits[0], p, k, True)
    assert a == b, (k, p)
    reference = MinPLogitsWarper(p)(None, TopKLogitsWarper(k)(None, logits.clone()))
    assert a == set(torch.isfinite(reference[0]).nonzero().flatten().tolist()), (k, p)
print("min-p and top-k give the same kept set in either order, for 25 settings")
