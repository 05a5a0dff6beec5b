"""Chapter 7 · Penalties — solutions to the exercises."""
import torch

import teachllm as tl
from teachllm import sampling

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
prompt_ids = tok.encode("List of animals: dog, cat,")


def distinct_fraction(ids: list[int]) -> float:
    return len(set(ids)) / len(ids)


# Exercise 1: raise each penalty alone until the loop breaks. Frequency grows with every repeat of the
# commas; presence subtracts one constant per id already seen, so ", " is not punished more and more and a
# long list keeps going.
base = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=16, ignore_eos=True))
assert distinct_fraction(base.token_ids) < 0.3  # the loop: dog, cat, dog, cat, ...
print("no penalty:", repr(base.text[:80]))
for name in ("presence_penalty", "frequency_penalty"):
    for value in (0.5, 1.5):
        out = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=16, ignore_eos=True,
                                                        **{name: value}))
        print(f"{name} = {value}: {distinct_fraction(out.token_ids):.2f} distinct  {out.text[:60]!r}")
        assert distinct_fraction(out.token_ids) > distinct_fraction(base.token_ids)

# Exercise 2: a text that must repeat. no_repeat_ngram_size=2 forbids any repeated pair, so " = " and
# "2 x" cannot come back and the table breaks; a repetition penalty makes every seen digit less likely.
table = "2 x 1 = 2\n2 x 2 = 4\n2 x 3 = 6\n"
table_ids = tok.encode(table)
for extra in ({}, {"no_repeat_ngram_size": 2}, {"repetition_penalty": 1.3}):
    out = lm.generate(table_ids, tl.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, **extra))
    print(extra or "no penalty", "->", repr(out.text))
    if "no_repeat_ngram_size" in extra:
        full = table_ids + out.token_ids
        pairs = list(zip(full, full[1:], strict=False))
        new_pairs = pairs[len(table_ids) - 1:]
        assert all(p not in pairs[: len(table_ids) - 1 + i] for i, p in enumerate(new_pairs))  # nothing repeats

# Exercise 3: a negative logit is MULTIPLIED by r. Dividing it would move it towards 0, i.e. UP, and make
# the seen token more likely.
logits = torch.tensor([[2.0, -2.0, 0.5]])
r = 1.5
penalised = sampling.apply_repetition_penalty(logits, [[1]], r)
assert penalised[0, 1] == -3.0  # -2 · 1.5
p_before, p_after = torch.softmax(logits, -1)[0, 1], torch.softmax(penalised, -1)[0, 1]
p_divided = torch.softmax(torch.tensor([[2.0, -2.0 / r, 0.5]]), -1)[0, 1]
print(f"p(seen token): {p_before:.3f} before, {p_after:.3f} multiplied, {p_divided:.3f} if divided")
assert p_after < p_before < p_divided
