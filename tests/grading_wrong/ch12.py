"""Plausible wrong answers to chapter 12's exercises: the grader must give each less than full points."""

WRONG = {
    "ch12-ex1": [
        # rounds down: the last, partly filled block is forgotten
        """
def block_usage(lengths, block_size):
    entries = sum(n // block_size for n in lengths)
    return entries * block_size, entries * block_size - sum(lengths), entries
""",
        # always one block more than n // block_size: an extra block on exact multiples
        """
def block_usage(lengths, block_size):
    entries = sum(n // block_size + 1 for n in lengths)
    return entries * block_size, entries * block_size - sum(lengths), entries
""",
    ],
    "ch12-ex2": [
        # counts iterations that preempted, not preemptions
        """
def count_preemptions(run):
    return sum(1 for record in run.timeline if record.preempted)
same_tokens_small_pool = True
""",
        # counts distinct requests, and thinks a preempted request loses its tokens
        """
def count_preemptions(run):
    return len({rid for record in run.timeline for rid in record.preempted})
same_tokens_small_pool = False
""",
    ],
    "ch12-ex3": [
        # forgets that the last prompt token must be computed
        """
def tokens_found_again(prompt_len, block_size):
    return prompt_len // block_size * block_size
""",
        # forgets that only whole blocks are shared
        """
def tokens_found_again(prompt_len, block_size):
    return prompt_len - 1
""",
    ],
}
