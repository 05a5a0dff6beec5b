"""Plausible wrong answers to chapter 8's exercises: the grader must give each less than full points."""

WRONG = {
    "ch08-ex1": [
        # the wrong softmax axis: normalises over positions instead of over the vocabulary
        """
import torch
def total_logprob(lm, prompt_ids, out_ids):
    logp = torch.log_softmax(lm.forward(prompt_ids + out_ids)[0, len(prompt_ids) - 1:-1], 0)
    return float(logp.gather(1, torch.tensor(out_ids)[:, None]).sum())
k1_is_greedy = True
total_always_grows_with_k = False
""",
        # off by one: each token scored at its own position instead of the one before it
        """
import torch
def total_logprob(lm, prompt_ids, out_ids):
    logp = torch.log_softmax(lm.forward(prompt_ids + out_ids)[0, len(prompt_ids):], -1)
    return float(logp.gather(1, torch.tensor(out_ids)[:, None]).sum())
k1_is_greedy = True
total_always_grows_with_k = False
""",
        # right sum, believes a wider beam always scores higher
        """
import torch
def total_logprob(lm, prompt_ids, out_ids):
    logp = torch.log_softmax(lm.forward(prompt_ids + out_ids)[0, len(prompt_ids) - 1:-1], -1)
    return float(logp.gather(1, torch.tensor(out_ids)[:, None]).sum())
k1_is_greedy = True
total_always_grows_with_k = True
""",
    ],
    "ch08-ex2": [
        # divides by the whole sequence's length, prompt included
        """
import torch
def mean_logprob(lm, prompt_ids, out_ids):
    logp = torch.log_softmax(lm.forward(prompt_ids + out_ids)[0, len(prompt_ids) - 1:-1], -1)
    return float(logp.gather(1, torch.tensor(out_ids)[:, None]).sum()) / (len(prompt_ids) + len(out_ids))
beam_always_at_least_greedy = False
""",
        # averages raw logits instead of log-probabilities
        """
import torch
def mean_logprob(lm, prompt_ids, out_ids):
    logits = lm.forward(prompt_ids + out_ids)[0, len(prompt_ids) - 1:-1]
    return float(logits.gather(1, torch.tensor(out_ids)[:, None]).mean())
beam_always_at_least_greedy = False
""",
        # right average, wrong conclusion
        """
import torch
def mean_logprob(lm, prompt_ids, out_ids):
    logp = torch.log_softmax(lm.forward(prompt_ids + out_ids)[0, len(prompt_ids) - 1:-1], -1)
    return float(logp.gather(1, torch.tensor(out_ids)[:, None]).mean())
beam_always_at_least_greedy = True
""",
    ],
}
