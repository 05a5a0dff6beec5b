"""Chapter 3 · Prefill, layer by layer — solutions to the exercises."""
import torch

import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
prompt = "The capital of Italy is"
ids = tok.encode(prompt)

# Exercise 1: a logit lens. Apply the final norm and the LM head to the last position after every layer.
stages = list(lm.step_through(ids))
layer_outputs = [s.output for s in stages if s.name.startswith("layer")]
assert len(layer_outputs) == lm.config.n_layers
answer = int(lm.forward(ids)[0, -1].argmax())
with torch.no_grad():
    tops = [int(lm.model.lm_head(lm.model.norm(h[:, -1])).argmax()) for h in layer_outputs]
print("top token after each layer:", [tok.token_text(t) for t in tops])
assert tops[-1] == answer  # the last layer's lens is the model's own prediction
first = next(i for i, t in enumerate(tops) if all(u == answer for u in tops[i:]))
print(f"{tok.token_text(answer)!r} is the answer from layer {first} on")

# Exercise 2: head 2 of layer 1 on random tokens. If it is a previous-token head by position, its mean
# attention on the previous token stays high on nonsense too.
random_ids = torch.randint(0, lm.config.vocab_size, (24,), generator=torch.Generator().manual_seed(0)).tolist()
trace = tl.Trace()
lm.prefill(random_ids, lm.new_cache(max_len=24), trace=trace)
pattern = trace.layers[1].probs[0, 2]  # [24, 24]
prev = torch.stack([pattern[i, i - 1] for i in range(1, 24)]).mean()
print(f"layer 1 head 2 on random tokens: mean attention on the previous token {float(prev):.2f}")
assert prev > 0.5

# Exercise 3: replace " Italy" by " Spain". Row i depends on tokens 0..i only (causal mask), so only the
# rows from the change on differ.
other = tok.encode(prompt.replace("Italy", "Spain"))
a, b = lm.forward(ids)[0], lm.forward(other)[0]  # [S, V]
changed = [i for i in range(len(ids)) if (a[i] - b[i]).abs().max() > 1e-4]
first_diff = next(i for i, (x, y) in enumerate(zip(ids, other, strict=True)) if x != y)
print("rows that changed:", changed, "first changed token:", first_diff)
assert changed == list(range(first_diff, len(ids)))
