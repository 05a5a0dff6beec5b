"""Plausible wrong answers to chapter 2's exercises: the hidden tests must not give any of them full points."""

WRONG = {
    "ch02-ex1": [
        'my_text = "low lower lowest"\n',  # the chapter's own text: BPE merges "lo", "low" first
        'my_text = "low low low lower lowest"\n',  # repeats the stem, so "lo" and "low" win again
        'my_text = "lower lower newest"\n',  # "er" is there, but "we" and "lo" are more frequent
    ],
    "ch02-ex2": [
        # bytes per character, not tokens
        """
def tokens_per_char(tok, text):
    return len(text.encode("utf-8")) / len(text)
costliest = "emoji"
""",
        # tokens per word
        """
def tokens_per_char(tok, text):
    return len(tok.encode(text, add_special_tokens=False)) / len(text.split())
costliest = "emoji"
""",
        # the right rate, the wrong conclusion
        """
def tokens_per_char(tok, text):
    return len(tok.encode(text, add_special_tokens=False)) / len(text)
costliest = "Chinese"
""",
    ],
    "ch02-ex3": [
        # encodes the message alone, without the chat template
        """
def end_of_turn_count(tok, content):
    return tok.encode(content, add_special_tokens=False).count(2)
typed_im_end_is_special = True
""",
        # counts only the template's own end-of-turn markers, as if typed text stayed text
        """
def end_of_turn_count(tok, content):
    return tok.encode(tok.apply_chat_template([{"role": "user", "content": "x"}])).count(2)
typed_im_end_is_special = False
""",
    ],
}
