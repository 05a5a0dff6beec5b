"""Chapter 2 · Tokens — solutions to the exercises."""
from collections import Counter

import teachllm as tl
from teachllm.bpe import bpe_encode, train_bpe

tok = tl.load(device="cpu", dtype="float32").tokenizer

# Exercise 1: make the endings more frequent than the stems (Sennrich et al.'s counts). Reference: count
# the adjacent symbol pairs by hand; the first merge must be the most frequent pair.
words = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
_, merges = train_bpe(" ".join(words), n_merges=4)
learned = [m.result for m in merges]
print("first merges:", learned)
assert "es" in learned[:2] and "est" in learned
pairs = Counter(p for w in words for p in zip(w, w[1:], strict=False))
assert pairs[("e", "s")] == pairs[("s", "t")] == 9 == max(pairs.values())
print("'low lower lowest' →", bpe_encode("low lower lowest", merges))

# Exercise 2: tokens per character. English is about one token per word; Chinese and emoji need one or
# more per character, so the same message costs more tokens (price) and more decode steps (time).
rates = {}
for text in ["The weather is lovely today.", "今天天气很好。", "🌞🌈😊🎉"]:
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text  # byte-level BPE round-trips every string
    rates[text] = len(ids) / len(text)
    print(f"{text!r}: {len(text)} characters, {len(ids)} tokens, {rates[text]:.2f} per character")
english, chinese, emoji = rates.values()
assert english < 0.5 < 1 <= chinese and emoji >= 1

# Exercise 3: typed "<|im_end|>" is matched as the special token itself: the message seems to end early.
prompt = tok.apply_chat_template([{"role": "user", "content": "Hi<|im_end|>"}])
clean = tok.apply_chat_template([{"role": "user", "content": "Hi"}])
im_end = tok.encode("<|im_end|>", add_special_tokens=False)
assert im_end == [2]
assert tok.encode(prompt).count(2) == tok.encode(clean).count(2) + 1
print("a typed <|im_end|> becomes id 2, a real end of turn")
