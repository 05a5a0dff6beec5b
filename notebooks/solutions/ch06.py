"""Chapter 6 · From logits to a token — solutions to the exercises, checked against transformers."""
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

# Exercise 1 (question 2 of the course note LLM Generation Process): temperature 0 is not a small
# temperature, it is greedy by convention.
print("logits / 0 gives:", (logits[0, :3] / 0).tolist())  # inf, -inf or nan: not a distribution
g = torch.Generator().manual_seed(0)
for t in (0.5, 0.1, 0.01):
    probs = torch.softmax(sampling.apply_temperature(logits, t), -1)
    draws = torch.multinomial(probs[0], 200, replacement=True, generator=g)
    print(f"T = {t}: greedy token in {int((draws == greedy_id).sum())} of 200 draws")
tied = torch.tensor([[2.0, 2.0, 1.0]])
probs = torch.softmax(sampling.apply_temperature(tied, 0.01), -1)
assert torch.allclose(probs[0, :2], torch.tensor([0.5, 0.5]))  # two tied tokens stay 50/50 at any T > 0
try:
    TemperatureLogitsWarper(0.0)  # what transformers builds for do_sample=True, temperature=0
    refused = False
except ValueError as error:
    refused = True
    print("transformers:", str(error).splitlines()[0][:100])
assert refused
assert lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=1)).token_ids[0] == greedy_id

# Exercise 2: temperature keeps the ranking, so top-k keeps the same tokens; top-p looks at probabilities,
# which temperature changes, so it keeps more tokens when T > 1 and fewer when T < 1.
kept_k = {t: set(torch.isfinite(sampling.apply_top_k(sampling.apply_temperature(logits, t), 5))[0]
                 .nonzero().flatten().tolist()) for t in (0.5, 1.0, 2.0)}
assert kept_k[0.5] == kept_k[1.0] == kept_k[2.0]
n_p = {t: int(torch.isfinite(sampling.apply_top_p(sampling.apply_temperature(logits, t), 0.9)).sum())
       for t in (0.5, 1.0, 2.0)}
print("top-p 0.9 keeps", n_p, "tokens at T = 0.5, 1, 2")
assert n_p[0.5] <= n_p[1.0] <= n_p[2.0] and n_p[0.5] < n_p[2.0]

# Exercise 3: min-p and top-k commute. Both keep a top slice of the same ranking: top-k the first k,
# min-p those with p ≥ min_p · p_max, and masking tokens below the top does not change p_max's ratio
# test, so either order keeps the intersection. Check many settings, against transformers' warpers.
for k, p in itertools.product((1, 3, 10, 50, 400), (0.01, 0.05, 0.1, 0.3, 0.8)):
    a = sampling.apply_min_p(sampling.apply_top_k(logits, k), p)
    b = sampling.apply_top_k(sampling.apply_min_p(logits, p), k)
    assert torch.equal(torch.isfinite(a), torch.isfinite(b)), (k, p)
    reference = MinPLogitsWarper(p)(None, TopKLogitsWarper(k)(None, logits.clone()))
    assert torch.equal(torch.isfinite(a), torch.isfinite(reference)), (k, p)
print("min-p and top-k give the same kept set in either order, for 25 settings")
