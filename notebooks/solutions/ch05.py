"""Chapter 5 · Decode — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import torch

import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
cfg = lm.config
ids = tok.encode("The capital of France is Paris. The capital of Italy is")
S = len(ids)
generated = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)).token_ids

# %% Exercise 1
# (question 1 of the course note LLM Generation Process): with the 10 tokens KNOWN, one parallel pass predicts
# all of them (teacher forcing); in generation token t+1 does not exist until step t has run.


def logits_for_known_tokens(lm, prompt_ids, known_ids):
    """One forward pass; row i of the result [len(known_ids), V] holds the logits that predict known_ids[i]."""
    n = len(prompt_ids)
    return lm.forward(list(prompt_ids) + list(known_ids)[:-1])[0, n - 1:]  # [len(known_ids), V]


one_pass_in_generation = False  # the pass needs the tokens as input, and generation has not chosen them yet

parallel = logits_for_known_tokens(lm, ids, generated)  # [10, V]
assert parallel.argmax(-1).tolist() == generated
cache = lm.new_cache(max_len=S + len(generated))
stepwise = [lm.prefill(ids, cache)[0]] + [lm.decode_step(t, cache)[0] for t in generated[:-1]]
torch.testing.assert_close(parallel, torch.stack(stepwise), atol=1e-3, rtol=1e-3)  # = the decode loop's logits
# Without the tokens: start from placeholders and feed each pass's predictions back; a pass is only sure to fix
# one more token.
guess = tok.encode(" the", add_special_tokens=False) * len(generated)
passes = 0
while True:
    passes += 1
    predicted = logits_for_known_tokens(lm, ids, guess).argmax(-1).tolist()
    if predicted == guess:
        break
    guess = predicted
assert guess == generated
print(f"one pass when the tokens are known; {passes} passes of the whole sequence when they are not")
assert passes > 2

# %% Exercise 2
# Attention work per layer grows as 4·T·n_h·d; the rest is fixed. Find where they meet, then check the crossing
# against the formula.


def attention_crossover(cfg):
    """The smallest T at which tl.cost.decode_flops(cfg, T) counts as many attention FLOPs as all the others."""
    T = 1
    while tl.cost.decode_flops(cfg, T).attention < tl.cost.decode_flops(cfg, T).linear:
        T += 1
    return T


T = attention_crossover(cfg)
linear = tl.cost.decode_flops(cfg, 1).linear
by_formula = linear / (4 * cfg.n_heads * cfg.head_dim * cfg.n_layers)
print(f"attention overtakes the rest at T = {T:,} (formula: {by_formula:,.0f})")
assert abs(T - by_formula) <= 1

# %% Exercise 3
# A left-padded batch. The decode step has no causal part, but the padding stays masked.


def decode_mask(lm, prompts):
    """Prefill a batch of prompts (lists of ids), run one decode step with a trace, return its mask [batch, T]."""
    longest = max(len(p) for p in prompts)
    cache = lm.new_cache(max_len=longest + 1, batch_size=len(prompts))
    first = lm.prefill(prompts, cache).argmax(-1)  # [batch]
    trace = tl.Trace()
    lm.decode_step(first, cache, trace=trace)
    return trace.mask[:, 0, 0]  # [batch, T]: True where the new token may look


decode_mask_all_true = False  # the shorter prompt's padding slots stay masked

short = tok.encode("The capital of Italy is")
rows = decode_mask(lm, [short, ids]).tolist()
for row in rows:
    print("".join("1" if m else "0" for m in row))
assert all(rows[1])  # the longer prompt reads every slot
assert rows[0].count(False) == S - len(short) and not any(rows[0][: S - len(short)])  # the padding
