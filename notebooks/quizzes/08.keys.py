"""Chapter 8 quiz keys: how much more probable beam search's (k = 3) continuation of "The capital of France is" is
than greedy's, whether beam search with k = 1 gives greedy's tokens, and how many candidates one beam step scores."""
import torch

import teachllm as tl
from teachllm.beam import beam_search

PROMPT = "The capital of France is"  # the chapter's prompt


def _total_logprob(lm, prompt_ids, out_ids):
    logp = torch.log_softmax(lm.forward(prompt_ids + out_ids)[0].float(), dim=-1)  # [S, V]
    return float(logp[len(prompt_ids) - 1:-1].gather(1, torch.tensor(out_ids)[:, None]).sum())


def beam_vs_greedy_gap(lm):
    ids = lm.tokenizer.encode(PROMPT)
    greedy = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=8)).token_ids
    beam = lm.generate(ids, tl.SamplingParams(num_beams=3, max_tokens=8)).token_ids
    g, b = _total_logprob(lm, ids, greedy), _total_logprob(lm, ids, beam)
    return {"answer": round(b - g, 2), "greedy_lp": round(g, 2), "beam_lp": round(b, 2),
            "greedy_text": repr(lm.tokenizer.decode(greedy)), "beam_text": repr(lm.tokenizer.decode(beam)),
            "ratio": round(float(torch.tensor(b - g).exp()), 1)}


def k1_is_greedy(lm):
    ids = lm.tokenizer.encode(PROMPT)
    greedy = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=8)).token_ids
    k1 = beam_search(lm, ids, tl.SamplingParams(num_beams=1, max_tokens=8)).token_ids
    return {"answer": 0 if k1 == greedy else 1}  # options: 0 "Yes …", 1 "No …"


def beam_candidates(lm):
    V = lm.tokenizer.vocab_size
    return {"answer": 3 * V, "V": V}
