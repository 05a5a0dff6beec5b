"""Chapter 6 quiz keys: greedy's token after the "sure" prompt, whether temperature changes the tokens top-k and
top-p keep on the "open" prompt (with the counts), how many tokens top-p 0.9 keeps after the "sure" prompt, and the
entropy of a uniform distribution over the vocabulary."""
import math

import torch

from teachllm import sampling
from teachllm.course.quiz import next_token

SURE, OPEN = "The capital of France is", "Once upon a time, there was a"  # the chapter's two prompts
TEMPERATURES = (0.5, 1.0, 1.5)


def _logits(lm, text):
    ids = lm.tokenizer.encode(text)
    return lm.prefill(ids, lm.new_cache(max_len=len(ids)))[0].float()  # [V]


def _kept(logits):
    return frozenset(logits.isfinite().nonzero().flatten().tolist())


def greedy_after_france(lm):
    return next_token(lm, prompt=SURE)


def temperature_top_k(lm):
    logits = _logits(lm, OPEN)
    kept = [_kept(sampling.apply_top_k(sampling.apply_temperature(logits, t), 10)) for t in TEMPERATURES]
    return {"answer": 0 if len(set(kept)) == 1 else 1}  # options: 0 "No …", 1 "Yes …"


def temperature_top_p(lm):
    logits = _logits(lm, OPEN)
    n = [len(_kept(sampling.apply_top_p(sampling.apply_temperature(logits, t), 0.9))) for t in TEMPERATURES]
    return {"answer": 0 if len(set(n)) > 1 else 1, "n_05": n[0], "n_10": n[1], "n_15": n[2]}  # 0 "Yes …", 1 "No …"


def top_p_sure_prompt(lm):
    sure, open_ = _logits(lm, SURE), _logits(lm, OPEN)
    kept_sure, kept_open = _kept(sampling.apply_top_p(sure, 0.9)), _kept(sampling.apply_top_p(open_, 0.9))
    return {"answer": len(kept_sure), "n_open": len(kept_open), "p_top": round(float(torch.softmax(sure, -1).max()), 3)}


def uniform_entropy(lm):
    V = lm.tokenizer.vocab_size
    return {"answer": round(math.log2(V), 2), "V": V}
