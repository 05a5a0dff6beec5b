"""Plausible wrong answers to chapter 1's exercises: the hidden tests must not give any of them full points."""

WRONG = {
    "ch01-ex1": [
        # a decode step also after the last token (the loop of section 1.5 runs one pass too many)
        """
def tokens_per_pass(lm, ids, max_tokens):
    return [len(ids)] + [1] * max_tokens
grows_with_prompt = "TTFT"
""",
        # every step recomputes the whole sequence, as if there were no cache
        """
def tokens_per_pass(lm, ids, max_tokens):
    return [len(ids) + i for i in range(max_tokens)]
grows_with_prompt = "TTFT"
""",
        # the right count, the wrong phase
        """
def tokens_per_pass(lm, ids, max_tokens):
    return [len(ids)] + [1] * (max_tokens - 1)
grows_with_prompt = "TPOT"
""",
    ],
    "ch01-ex2": [
        # compares the last id with a list of ids: never equal
        """
def stopped_at_eos(lm, token_ids):
    return token_ids[-1] == lm.tokenizer.encode("<|im_end|>", add_special_tokens=False)
eos_in_token_ids = True
eos_in_text = False
""",
        # thinks the end-of-sequence token is printed with the text
        """
def stopped_at_eos(lm, token_ids):
    return token_ids[-1] in lm.config.eos_token_ids
eos_in_token_ids = True
eos_in_text = True
""",
    ],
}
