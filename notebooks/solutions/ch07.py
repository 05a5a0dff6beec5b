"""Chapter 7 · Penalties — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import torch
from transformers import NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor

import teachllm as tl
from teachllm import sampling

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
prompt_ids = tok.encode("List of animals: dog, cat,")


def distinct_fraction(ids: list[int]) -> float:
    return len(set(ids)) / len(ids)


# %% Exercise 1
# Raise each penalty alone until the loop breaks. Frequency grows with every repeat of the commas; presence
# subtracts one constant per id already seen, so ", " is not punished more and more and a long list keeps going.


def penalised_logits(logits, output_ids, presence, frequency):
    """logits [V] − c_j · frequency − (c_j > 0) · presence, where c_j counts token j in output_ids."""
    counts = torch.bincount(torch.tensor(list(output_ids), dtype=torch.long), minlength=logits.shape[-1])  # [V]
    return logits - counts.to(logits.dtype) * frequency - (counts > 0).to(logits.dtype) * presence


long_list_penalty = "presence"

z = torch.randn(20, generator=torch.Generator().manual_seed(0))
seen = [3, 3, 3, 7]
torch.testing.assert_close(penalised_logits(z, seen, 0.5, 0.2),
                           sampling.apply_presence_frequency_penalty(z, seen, 0.5, 0.2))
base = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=16, ignore_eos=True))
assert distinct_fraction(base.token_ids) < 0.3  # the loop: dog, cat, dog, cat, ...
print("no penalty:", repr(base.text[:80]))
for name in ("presence_penalty", "frequency_penalty"):
    for value in (0.5, 1.5):
        out = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=16, ignore_eos=True,
                                                        **{name: value}))
        print(f"{name} = {value}: {distinct_fraction(out.token_ids):.2f} distinct  {out.text[:60]!r}")
        assert distinct_fraction(out.token_ids) > distinct_fraction(base.token_ids)

# %% Exercise 2
# A text that must repeat. no_repeat_ngram_size=2 forbids any repeated pair, so " = " and "2 x" cannot come back
# and the table breaks; a repetition penalty makes every seen digit less likely.


def banned_by_no_repeat(ids, n):
    """The tokens that would complete an n-gram already in ids: the next token of every earlier n-gram whose
    first n − 1 tokens equal the last n − 1 tokens of ids."""
    ids = list(ids)
    if len(ids) < n:
        return set()
    suffix = ids[len(ids) - n + 1:]
    return {ids[i + n - 1] for i in range(len(ids) - n + 1) if ids[i:i + n - 1] == suffix}


table_survives_no_repeat = False

table = "2 x 1 = 2\n2 x 2 = 4\n2 x 3 = 6\n"
table_ids = tok.encode(table)
hf = NoRepeatNGramLogitsProcessor(2)(torch.tensor([table_ids]), torch.zeros(1, lm.config.vocab_size))
assert banned_by_no_repeat(table_ids, 2) == set(hf[0].isinf().nonzero().flatten().tolist())  # = transformers
for extra in ({}, {"no_repeat_ngram_size": 2}, {"repetition_penalty": 1.3}):
    out = lm.generate(table_ids, tl.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, **extra))
    print(extra or "no penalty", "->", repr(out.text))
    if "no_repeat_ngram_size" in extra:
        full = table_ids + out.token_ids
        pairs = list(zip(full, full[1:], strict=False))
        new_pairs = pairs[len(table_ids) - 1:]
        assert all(p not in pairs[: len(table_ids) - 1 + i] for i, p in enumerate(new_pairs))  # nothing repeats
        assert not out.text.startswith("2 x 4 = 8")  # the table cannot go on: "2 x" was already seen

# %% Exercise 3
# A negative logit is MULTIPLIED by r. Dividing it would move it towards 0, i.e. UP, and make the seen token
# more likely.


def repetition_penalised(logits, seen_ids, r):
    """For every distinct seen id: logit / r if the logit is > 0, else logit · r (CTRL, as transformers)."""
    out = logits.clone()
    idx = torch.tensor(sorted(set(seen_ids)), dtype=torch.long)
    out[idx] = torch.where(out[idx] > 0, out[idx] / r, out[idx] * r)
    return out


dividing_raises_seen_token = True

logits = torch.tensor([2.0, -2.0, 0.5])
r = 1.5
penalised = repetition_penalised(logits, [1], r)
assert penalised[1] == -3.0  # -2 · 1.5
torch.testing.assert_close(penalised, RepetitionPenaltyLogitsProcessor(r)(torch.tensor([[1]]), logits[None])[0])
torch.testing.assert_close(penalised, sampling.apply_repetition_penalty(logits, [1], r))
p_before, p_after = torch.softmax(logits, -1)[1], torch.softmax(penalised, -1)[1]
p_divided = torch.softmax(torch.tensor([2.0, -2.0 / r, 0.5]), -1)[1]
print(f"p(seen token): {p_before:.3f} before, {p_after:.3f} multiplied, {p_divided:.3f} if divided")
assert p_after < p_before < p_divided
