"""Chapter 3's computed answers: greedy's token after the chapter's prompt, the prompt's length, and the FLOPs of
one position through the LM head."""

import teachllm as tl
from teachllm.course.quiz import next_token

PROMPT = "The capital of France is Paris. The capital of Italy is"


def greedy_after_italy(lm) -> dict:
    return next_token(lm, prompt=PROMPT)


def italy_prompt_tokens(lm) -> dict:
    return {"answer": len(lm.tokenizer.encode(PROMPT)), "hidden": lm.config.hidden_size}


def lm_head_flops(lm) -> dict:
    config = lm.config
    one_row = tl.cost.prefill_flops(config, 1).lm_head  # the LM head on the last position only, as lm.prefill
    assert one_row == 2 * config.hidden_size * config.vocab_size
    return {"answer": one_row, "hidden": config.hidden_size, "vocab": config.vocab_size}
