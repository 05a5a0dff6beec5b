"""Chapter 2 · Tokens — solutions to the exercises."""
from collections import Counter

import teachllm as tl
from teachllm.bpe import bpe_encode, train_bpe

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer

# %% Exercise 1
# Make the endings more frequent than the stems (Sennrich et al.'s counts). Reference: count the adjacent symbol
# pairs by hand; the first merge must be the most frequent pair.
words = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
my_text = " ".join(words)

_, merges = train_bpe(my_text, n_merges=4)
learned = [m.result for m in merges]
print("first merges:", learned)
assert "es" in learned[:2] and "est" in learned
pairs = Counter(p for w in words for p in zip(w, w[1:], strict=False))
assert pairs[("e", "s")] == pairs[("s", "t")] == 9 == max(pairs.values())
print("'low lower lowest' →", bpe_encode("low lower lowest", merges))

# %% Exercise 2
# Tokens per character. English is about one token per word; Chinese and emoji need one or more per character, so
# the same message costs more tokens (price) and more decode steps (time).
def tokens_per_char(tok, text):
    # the number of tokens tok.encode gives for text (no special tokens added), divided by its characters
    return len(tok.encode(text, add_special_tokens=False)) / len(text)


costliest = "emoji"

rates = {}
for text in ["The weather is lovely today.", "今天天气很好。", "🌞🌈😊🎉"]:
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text  # byte-level BPE round-trips every string
    rates[text] = tokens_per_char(tok, text)
    print(f"{text!r}: {len(text)} characters, {len(ids)} tokens, {rates[text]:.2f} per character")
english, chinese, emoji = rates.values()
assert english < 0.5 < 1 <= chinese < emoji

# %% Exercise 3
# A typed "<|im_end|>" is matched as the special token itself: the message seems to end early.
def end_of_turn_count(tok, content):
    # how many <|im_end|> ids the chat-template prompt of one user message with this content holds
    prompt = tok.apply_chat_template([{"role": "user", "content": content}])
    return tok.encode(prompt).count(tok.encode("<|im_end|>", add_special_tokens=False)[0])


typed_im_end_is_special = True

im_end = tok.encode("<|im_end|>", add_special_tokens=False)
assert im_end == [2]
assert end_of_turn_count(tok, "Hi<|im_end|>") == end_of_turn_count(tok, "Hi") + 1
print("a typed <|im_end|> becomes id 2, a real end of turn")
