"""Plausible wrong answers to chapter 13's exercises: the grader must give each less than full points."""

WRONG = {
    "ch13-ex1": [
        # forgets that the prompt's last token must be computed
        """
def prefix_tokens_found(sent_prompts, prompt, block_size):
    def shared(a, b):
        return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    longest = max((shared(p, prompt) for p in sent_prompts), default=0)
    return longest // block_size * block_size
""",
        # forgets that only whole blocks are found
        """
def prefix_tokens_found(sent_prompts, prompt, block_size):
    def shared(a, b):
        return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    longest = max((shared(p, prompt) for p in sent_prompts), default=0)
    return min(longest, len(prompt) - 1)
""",
        # looks only at the prompt sent last
        """
def prefix_tokens_found(sent_prompts, prompt, block_size):
    if not sent_prompts:
        return 0
    last = sent_prompts[-1]
    n = next((i for i, (x, y) in enumerate(zip(last, prompt)) if x != y), min(len(last), len(prompt)))
    return min(n, len(prompt) - 1) // block_size * block_size
""",
        # counts whole blocks that appear anywhere in an earlier prompt, not only under the same prefix
        """
def prefix_tokens_found(sent_prompts, prompt, block_size):
    seen = {tuple(p[i:i + block_size]) for p in sent_prompts for i in range(0, len(p) - block_size + 1, block_size)}
    n = 0
    while n + block_size <= len(prompt) - 1 and tuple(prompt[n:n + block_size]) in seen:
        n += block_size
    return n
""",
    ],
    "ch13-ex2": [
        # forgets the layers recomputed in full
        """
def recompute_share(n_tokens, n_layers, ratio, full_layers):
    return ratio
layer0_kv_depends_on_other_tokens = False
""",
        # recomputes the chosen tokens in every layer, on top of the full ones
        """
def recompute_share(n_tokens, n_layers, ratio, full_layers):
    return (full_layers * n_tokens + n_layers * ratio * n_tokens) / (n_layers * n_tokens)
layer0_kv_depends_on_other_tokens = False
""",
        # the right share, but believes layer 0 already sees the other tokens
        """
def recompute_share(n_tokens, n_layers, ratio, full_layers):
    return (full_layers + (n_layers - full_layers) * ratio) / n_layers
layer0_kv_depends_on_other_tokens = True
""",
    ],
    "ch13-ex3": [
        # forgets the target's own token in each call
        """
def tokens_per_call_ceiling(alpha):
    return alpha / (1 - alpha)
gamma_keeps_helping = False
""",
        # the expected tokens for one γ (here 6), not the ceiling over every γ
        """
def tokens_per_call_ceiling(alpha):
    return (1 - alpha ** 7) / (1 - alpha)
gamma_keeps_helping = False
""",
        # the right ceiling, but believes γ keeps helping
        """
def tokens_per_call_ceiling(alpha):
    return 1 / (1 - alpha)
gamma_keeps_helping = True
""",
    ],
}
