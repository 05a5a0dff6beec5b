"""Chapter 8 · Beam search — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import torch

import teachllm as tl
from teachllm.beam import beam_search

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
prompt_ids = tok.encode("The capital of France is")

# %% Exercise 1
# Beam search with k = 1 keeps the single best token at every step: greedy decoding. (Through `lm.generate`,
# num_beams=1 means "no beam search", i.e. ordinary sampling, as in transformers, so we call the beam search
# itself.) A larger k usually, but not always, finds a higher total log-probability: beam search is a heuristic.


def total_logprob(lm, prompt_ids, out_ids):
    """The sum of log p of each token of out_ids after prompt_ids, from one forward pass."""
    n = len(prompt_ids)
    logp = torch.log_softmax(lm.forward(list(prompt_ids) + list(out_ids))[0, n - 1:-1], -1)  # [len(out_ids), V]
    return float(logp.gather(1, torch.tensor(list(out_ids))[:, None]).sum())


k1_is_greedy = True
total_always_grows_with_k = False

greedy = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=8)).token_ids
totals = {}
for text in ("The capital of France is", "Once upon a time"):
    ids_in = tok.encode(text)
    for k in (1, 2, 3, 5):
        ids = beam_search(lm, ids_in, tl.SamplingParams(num_beams=k, max_tokens=8)).token_ids
        if k == 1 and ids_in == prompt_ids:
            assert ids == greedy
        totals[text, k] = total_logprob(lm, ids_in, ids)
        print(f"{text!r}, k = {k}: total log p = {totals[text, k]:7.3f}  {tok.decode(ids)!r}")
assert totals["Once upon a time", 3] < totals["Once upon a time", 2]  # a wider beam pruned the better path

# (tests/test_generate.py checks teachllm's beam search against transformers' num_beams.)

# %% Exercise 2
# More probable is not better to read, and beam search is not even always more probable per token: here the
# greedy poem stops at EOS with a higher average log p than the k = 4 beam, which runs to the length limit.


def mean_logprob(lm, prompt_ids, out_ids):
    """The average log p per token of out_ids after prompt_ids (what lp = 1 ranks by)."""
    n = len(prompt_ids)
    logp = torch.log_softmax(lm.forward(list(prompt_ids) + list(out_ids))[0, n - 1:-1], -1)  # [len(out_ids), V]
    return float(logp.gather(1, torch.tensor(list(out_ids))[:, None]).mean())


beam_always_at_least_greedy = False

poem = tok.encode(tok.apply_chat_template([{"role": "user", "content": "Write a one-line poem about the sea."}]))
greedy_poem = lm.generate(poem, tl.SamplingParams(temperature=0, max_tokens=30)).token_ids
beam_poem = lm.generate(poem, tl.SamplingParams(num_beams=4, max_tokens=30)).token_ids
means = {}
for name, ids in (("greedy", greedy_poem), ("beam k=4", beam_poem)):
    means[name] = mean_logprob(lm, poem, ids)
    print(f"{name:<8} average log p {means[name]:.3f}  {tok.decode(ids)!r}")
assert means["greedy"] > means["beam k=4"]  # a counterexample: beam search is not always at least as good
