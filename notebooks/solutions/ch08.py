"""Chapter 8 · Beam search — solutions to the exercises."""
import torch

import teachllm as tl
from teachllm.beam import beam_search

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
prompt_ids = tok.encode("The capital of France is")


def total_logprob(prompt: list[int], out: list[int]) -> float:
    logp = torch.log_softmax(lm.forward(prompt + out)[0, len(prompt) - 1:-1], -1)  # [n, V]
    return float(logp.gather(1, torch.tensor(out)[:, None]).sum())


# Exercise 1: beam search with k = 1 keeps the single best token at every step: greedy decoding. (Through
# `lm.generate`, num_beams=1 means "no beam search", i.e. ordinary sampling, as in transformers, so we call
# the beam search itself.) A larger k usually, but not always, finds a higher total log-probability.
greedy = lm.generate(prompt_ids, tl.SamplingParams(temperature=0, max_tokens=8)).token_ids
beams = {k: beam_search(lm, prompt_ids, tl.SamplingParams(num_beams=k, max_tokens=8)).token_ids
         for k in (1, 2, 3)}
assert beams[1] == greedy
for k, ids in beams.items():
    print(f"k = {k}: total log p = {total_logprob(prompt_ids, ids):7.3f}  {tok.decode(ids)!r}")

# (tests/test_generate.py checks teachllm's beam search against transformers' num_beams.)

# Exercise 2: more probable is not better to read. Compare average log p per token of a greedy poem and
# a k = 4 beam poem.
poem = tok.encode(tok.apply_chat_template([{"role": "user", "content": "Write a one-line poem about the sea."}]))
greedy_poem = lm.generate(poem, tl.SamplingParams(temperature=0, max_tokens=12)).token_ids
beam_poem = lm.generate(poem, tl.SamplingParams(num_beams=4, max_tokens=12)).token_ids
for name, ids in (("greedy", greedy_poem), ("beam k=4", beam_poem)):
    print(f"{name:<8} average log p {total_logprob(poem, ids) / len(ids):.3f}  {tok.decode(ids)!r}")
