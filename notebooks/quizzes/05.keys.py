"""Chapter 5 quiz keys: the token the first decode step gives after ' Rome', the matmul FLOPs and the arithmetic
intensity of one decode step (against 2 × parameters), and the cache's length after a prefill and a few decode steps."""
import teachllm as tl
from teachllm.course.quiz import next_token

PROMPT = "The capital of France is Paris. The capital of Italy is"  # the chapter's prompt


def next_after_rome(lm):
    return {**next_token(lm, prompt=PROMPT + " Rome"), "n_prompt": len(lm.tokenizer.encode(PROMPT)),
            "T": len(lm.tokenizer.encode(PROMPT + " Rome"))}


def decode_step_mflops(lm):
    cfg = lm.config
    T = len(lm.tokenizer.encode(PROMPT)) + 1  # the keys the first decode step sees: the prompt and ' Rome'
    flops = tl.cost.decode_flops(cfg, T).total
    return {"answer": round(flops / 1e6, 1), "T": T, "n_params_m": round(cfg.n_params / 1e6, 1),
            "two_params_m": round(2 * cfg.n_params / 1e6, 1)}


def decode_intensity(lm):
    cfg = lm.config
    T = len(lm.tokenizer.encode(PROMPT)) + 1
    step, prefill = tl.cost.decode_cost(cfg, T, dtype="float32"), tl.cost.prefill_cost(cfg, T - 1, dtype="float32")
    return {"answer": round(step.intensity, 2), "T": T, "mb": round(step.bytes / 1e6, 1),
            "gflop": round(step.flops / 1e9, 2), "prefill_intensity": round(prefill.intensity, 1), "S": T - 1}


def cache_length_after(lm):
    ids = lm.tokenizer.encode(PROMPT)
    cache = lm.new_cache(max_len=len(ids) + 4)
    token = int(lm.prefill(ids, cache).argmax(-1))
    for _ in range(4):
        token = int(lm.decode_step(token, cache).argmax(-1))
    return {"answer": cache.length, "n_prompt": len(ids)}
