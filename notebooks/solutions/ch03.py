"""Chapter 3 · Prefill, layer by layer — solutions to the exercises."""
import torch

import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
prompt = "The capital of France is Paris. The capital of Italy is"  # the chapter's prompt
ids = tok.encode(prompt)

# %% Exercise 1
# A logit lens. Apply the final norm and the LM head to the last position after every layer.
def logit_lens(lm, ids):
    # the top token id after each decoder layer, at the last position: the final norm and the LM head applied
    # to that layer's output; one id per layer
    outputs = [s.output for s in lm.step_through(ids) if s.name.startswith("layer")]  # each [1, S, h]
    with torch.no_grad():
        return [int(lm.model.lm_head(lm.model.norm(h[:, -1])).argmax()) for h in outputs]


tops = logit_lens(lm, ids)
answer = int(lm.forward(ids)[0, -1].argmax())
rome_layer = next(i for i, t in enumerate(tops) if all(u == answer for u in tops[i:]))

assert len(tops) == lm.config.n_layers
print("top token after each layer:", [tok.token_text(t) for t in tops])
assert tops[-1] == answer  # the last layer's lens is the model's own prediction
assert tok.token_text(answer) == " Rome"
print(f"{tok.token_text(answer)!r} is the answer from layer {rome_layer} on")

# %% Exercise 2
# Head 2 of layer 1 on random tokens. If it is a previous-token head by position, its mean attention on the
# previous token stays high on nonsense too.
def previous_token_attention(lm, ids, layer, head):
    # the mean attention weight that each query, from position 1 on, puts on the token just before it, in this
    # layer and head, for a prefill of ids
    trace = tl.Trace()
    lm.prefill(ids, lm.new_cache(max_len=len(ids)), trace=trace)
    pattern = trace.layers[layer].probs[0, head]  # [S, S]
    return float(torch.stack([pattern[i, i - 1] for i in range(1, len(ids))]).mean())


random_ids = torch.randint(0, lm.config.vocab_size, (24,), generator=torch.Generator().manual_seed(0)).tolist()
prev = previous_token_attention(lm, random_ids, 1, 2)
previous_token_head_on_random_ids = prev > 0.5
print(f"layer 1 head 2 on random tokens: mean attention on the previous token {prev:.2f}")
assert previous_token_head_on_random_ids

# %% Exercise 3
# Replace " Italy" by " Spain". Row i depends on tokens 0..i only (causal mask), so only the rows from the change
# on differ.
def rows_that_change(ids_a, ids_b):
    # without running the model: the positions whose row of logits differs between two prompts of the same length,
    # as a sorted list
    first = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b, strict=True)) if x != y), len(ids_a))
    return list(range(first, len(ids_a)))


other = tok.encode(prompt.replace("Italy", "Spain"))
a, b = lm.forward(ids)[0], lm.forward(other)[0]  # [S, V]
changed = [i for i in range(len(ids)) if (a[i] - b[i]).abs().max() > 1e-4]
print("rows that changed:", changed, "predicted:", rows_that_change(ids, other))
assert changed == rows_that_change(ids, other)
