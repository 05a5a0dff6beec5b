"""Plausible wrong answers to chapter 3's exercises: the hidden tests must not give any of them full points."""

WRONG = {
    "ch03-ex1": [
        # forgets the final norm before the LM head
        """
import torch
def logit_lens(lm, ids):
    outputs = [s.output for s in lm.step_through(ids) if s.name.startswith("layer")]
    with torch.no_grad():
        return [int(lm.model.lm_head(h[:, -1]).argmax()) for h in outputs]
rome_layer = 29
""",
        # reads the first position instead of the last
        """
import torch
def logit_lens(lm, ids):
    outputs = [s.output for s in lm.step_through(ids) if s.name.startswith("layer")]
    with torch.no_grad():
        return [int(lm.model.lm_head(lm.model.norm(h[:, 0])).argmax()) for h in outputs]
rome_layer = 29
""",
        # the right lens, layers counted from 1
        """
import torch
def logit_lens(lm, ids):
    outputs = [s.output for s in lm.step_through(ids) if s.name.startswith("layer")]
    with torch.no_grad():
        return [int(lm.model.lm_head(lm.model.norm(h[:, -1])).argmax()) for h in outputs]
rome_layer = 30
""",
    ],
    "ch03-ex2": [
        # averages over every query, the first one (which has no previous token) included
        """
import teachllm as tl
def previous_token_attention(lm, ids, layer, head):
    trace = tl.Trace()
    lm.forward(ids, trace=trace)
    p = trace.layers[layer].probs[0, head]
    return float(sum(p[i, i - 1] for i in range(len(ids))) / len(ids))
previous_token_head_on_random_ids = True
""",
        # the diagonal: attention on the token itself
        """
import teachllm as tl
def previous_token_attention(lm, ids, layer, head):
    trace = tl.Trace()
    lm.forward(ids, trace=trace)
    return float(trace.layers[layer].probs[0, head].diagonal().mean())
previous_token_head_on_random_ids = False
""",
    ],
    "ch03-ex3": [
        # only the rows of the tokens that differ
        """
def rows_that_change(ids_a, ids_b):
    return [i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y]
""",
        # off by one: from the row after the change
        """
def rows_that_change(ids_a, ids_b):
    first = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), len(ids_a))
    return list(range(first + 1, len(ids_a)))
""",
    ],
}
