"""Plausible wrong answers to chapter 6's exercises: the grader must give each less than full points."""

WRONG = {
    "ch06-ex1": [
        # multiplies by T instead of dividing
        """
import torch
def greedy_token_probability(logits, temperature):
    return float(torch.softmax(logits * temperature, -1)[logits.argmax()])
tied_top_probability = 0.5
t0_refused_by_transformers = True
""",
        # thinks one of two tied tokens takes everything, and that transformers accepts T = 0
        """
import torch
def greedy_token_probability(logits, temperature):
    return float(torch.softmax(logits / temperature, -1)[logits.argmax()])
tied_top_probability = 1.0
t0_refused_by_transformers = False
""",
    ],
    "ch06-ex2": [
        # applies top-p before temperature, so temperature never changes what top-p keeps
        """
from teachllm import sampling
def kept_after(logits, temperature, k=None, top_p=None):
    out = sampling.apply_top_k(logits, k) if k is not None else sampling.apply_top_p(logits, top_p)
    return set(out.isfinite().nonzero().flatten().tolist())
topk_depends_on_temperature = False
topp_depends_on_temperature = False
""",
        # top-p off by one: stops before the token that crosses p
        """
import torch
def kept_after(logits, temperature, k=None, top_p=None):
    z = logits / temperature
    order = z.argsort(descending=True)
    if k is not None:
        return set(order[:k].tolist())
    cum = z.softmax(-1)[order].cumsum(0)
    return set(order[cum < top_p].tolist()) or {int(order[0])}
topk_depends_on_temperature = False
topp_depends_on_temperature = True
""",
    ],
    "ch06-ex3": [
        # min-p threshold on the logits instead of the probabilities
        """
import torch
def kept_in_order(logits, min_p, k, min_p_first):
    top = set(logits.topk(k).indices.tolist())
    above = set((logits >= min_p * logits.max()).nonzero().flatten().tolist())
    return top & above
min_p_top_k_commute = True
""",
        # right function, wrong conclusion
        """
from teachllm import sampling
def kept_in_order(logits, min_p, k, min_p_first):
    if min_p_first:
        out = sampling.apply_top_k(sampling.apply_min_p(logits, min_p), k)
    else:
        out = sampling.apply_min_p(sampling.apply_top_k(logits, k), min_p)
    return set(out.isfinite().nonzero().flatten().tolist())
min_p_top_k_commute = False
""",
    ],
}
