"""Chapter 5 · Decode — solutions to the exercises."""
import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
ids = tok.encode("The capital of France is Paris. The capital of Italy is")
S = len(ids)
generated = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)).token_ids

# Exercise 1 (question 1 of the course note LLM Generation Process): with the 10 tokens KNOWN, one parallel
# pass predicts all of them (teacher forcing); in generation token t+1 does not exist until step t has run.
# Start from placeholders and feed each pass's predictions back: a pass is only sure to fix one more token.
parallel = lm.forward(ids + generated[:-1])[0]  # [S + 9, V]
assert parallel[S - 1:].argmax(-1).tolist() == generated
guess = tok.encode(" the", add_special_tokens=False) * len(generated)
passes = 0
while True:
    passes += 1
    predicted = lm.forward(ids + guess[:-1])[0, S - 1:].argmax(-1).tolist()
    if predicted == guess:
        break
    guess = predicted
assert guess == generated
print(f"one pass when the tokens are known; {passes} passes of the whole sequence when they are not")
assert passes > 2

# Exercise 2: attention work per layer grows as 4·T·n_h·d; the rest is fixed. Find where they meet,
# then check the crossing against the formula.
cfg = lm.config
T = 1
while tl.cost.decode_flops(cfg, T).attention < tl.cost.decode_flops(cfg, T).linear:
    T += 1
linear = tl.cost.decode_flops(cfg, 1).linear
by_formula = linear / (4 * cfg.n_heads * cfg.head_dim * cfg.n_layers)
print(f"attention overtakes the rest at T = {T:,} (formula: {by_formula:,.0f})")
assert abs(T - by_formula) <= 1

# Exercise 3: a left-padded batch. The decode step has no causal part, but the padding stays masked.
short = tok.encode("The capital of Italy is")
cache = lm.new_cache(max_len=S + 1, batch_size=2)
first = lm.prefill([short, ids], cache).argmax(-1)  # [2]
trace = tl.Trace()
lm.decode_step(first, cache, trace=trace)
rows = [trace.mask[b, 0, 0].tolist() for b in range(2)]
for row in rows:
    print("".join("1" if m else "0" for m in row))
assert all(rows[1])  # the longer prompt reads every slot
assert rows[0].count(False) == S - len(short) and not any(rows[0][: S - len(short)])  # the padding
