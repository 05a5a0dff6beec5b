"""Plausible wrong answers to chapter 5's exercises: the grader must give each less than full points."""

WRONG = {
    "ch05-ex1": [
        # off by one: keeps the rows that predict the token AFTER each known token
        """
def logits_for_known_tokens(lm, prompt_ids, known_ids):
    return lm.forward(list(prompt_ids) + list(known_ids))[0, len(prompt_ids):]
one_pass_in_generation = False
""",
        # right pass, wrong conclusion
        """
def logits_for_known_tokens(lm, prompt_ids, known_ids):
    return lm.forward(list(prompt_ids) + list(known_ids)[:-1])[0, len(prompt_ids) - 1:]
one_pass_in_generation = True
""",
    ],
    "ch05-ex2": [
        # off by one: the last length where attention is still cheaper
        """
import teachllm as tl
def attention_crossover(cfg):
    T = 1
    while tl.cost.decode_flops(cfg, T + 1).attention < tl.cost.decode_flops(cfg, T + 1).linear:
        T += 1
    return T
""",
        # the formula rounded down instead of up
        """
import teachllm as tl
def attention_crossover(cfg):
    return int(tl.cost.decode_flops(cfg, 1).linear / (4 * cfg.n_heads * cfg.head_dim * cfg.n_layers))
""",
        # counts the KV heads instead of the query heads (grouped-query attention confused)
        """
import math
import teachllm as tl
def attention_crossover(cfg):
    return math.ceil(tl.cost.decode_flops(cfg, 1).linear / (4 * cfg.n_kv_heads * cfg.head_dim * cfg.n_layers))
""",
    ],
    "ch05-ex3": [
        # reads the mask of the prefill's last query instead of the decode step's
        """
import teachllm as tl
def decode_mask(lm, prompts):
    cache = lm.new_cache(max_len=max(map(len, prompts)) + 1, batch_size=len(prompts))
    trace = tl.Trace()
    lm.prefill(prompts, cache, trace=trace)
    return trace.mask[:, 0, -1]
decode_mask_all_true = False
""",
        # builds the mask by hand, padding on the right
        """
import torch
def decode_mask(lm, prompts):
    m = max(map(len, prompts))
    return torch.tensor([[True] * len(p) + [False] * (m - len(p)) + [True] for p in prompts])
decode_mask_all_true = False
""",
        # right mask, wrong conclusion
        """
import teachllm as tl
def decode_mask(lm, prompts):
    cache = lm.new_cache(max_len=max(map(len, prompts)) + 1, batch_size=len(prompts))
    first = lm.prefill(prompts, cache).argmax(-1)
    trace = tl.Trace()
    lm.decode_step(first, cache, trace=trace)
    return trace.mask[:, 0, 0]
decode_mask_all_true = True
""",
    ],
}
