"""Plausible wrong answers to chapter 7's exercises: the grader must give each less than full points."""

WRONG = {
    "ch07-ex1": [
        # the presence penalty multiplied by the count too, as if it were a second frequency penalty
        """
import torch
def penalised_logits(logits, output_ids, presence, frequency):
    counts = torch.bincount(torch.tensor(output_ids), minlength=logits.shape[-1]).float()
    return logits - counts * (presence + frequency)
long_list_penalty = "presence"
""",
        # the frequency penalty applied once per distinct token, not once per appearance
        """
import torch
def penalised_logits(logits, output_ids, presence, frequency):
    seen = torch.zeros_like(logits)
    seen[sorted(set(output_ids))] = 1.0
    return logits - seen * (presence + frequency)
long_list_penalty = "presence"
""",
        # right formula, wrong conclusion
        """
from teachllm import sampling
def penalised_logits(logits, output_ids, presence, frequency):
    return sampling.apply_presence_frequency_penalty(logits, output_ids, presence, frequency)
long_list_penalty = "frequency"
""",
    ],
    "ch07-ex2": [
        # off by one: matches the last n tokens instead of the last n - 1
        """
def banned_by_no_repeat(ids, n):
    suffix = ids[len(ids) - n:]
    return {ids[i + n] for i in range(len(ids) - n) if ids[i:i + n] == suffix}
table_survives_no_repeat = False
""",
        # off by one the other way: skips the latest n-gram
        """
def banned_by_no_repeat(ids, n):
    if len(ids) < n:
        return set()
    suffix = ids[len(ids) - n + 1:]
    return {ids[i + n - 1] for i in range(len(ids) - n) if ids[i:i + n - 1] == suffix}
table_survives_no_repeat = False
""",
        # right ban, wrong conclusion
        """
from teachllm import sampling
def banned_by_no_repeat(ids, n):
    return sampling.banned_ngram_tokens(ids, n)
table_survives_no_repeat = True
""",
    ],
    "ch07-ex3": [
        # divides every seen logit, negative ones too
        """
def repetition_penalised(logits, seen_ids, r):
    out = logits.clone()
    out[sorted(set(seen_ids))] /= r
    return out
dividing_raises_seen_token = True
""",
        # penalises a token once per appearance instead of once
        """
def repetition_penalised(logits, seen_ids, r):
    out = logits.clone()
    for i in seen_ids:
        out[i] = out[i] / r if out[i] > 0 else out[i] * r
    return out
dividing_raises_seen_token = True
""",
        # right penalty, wrong conclusion
        """
from teachllm import sampling
def repetition_penalised(logits, seen_ids, r):
    return sampling.apply_repetition_penalty(logits, seen_ids, r)
dividing_raises_seen_token = False
""",
    ],
}
