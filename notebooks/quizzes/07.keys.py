"""Chapter 7 quiz keys: the token greedy takes after the looping list prompt, and the first token greedy takes
with a repetition penalty of 1.05 (which counts the prompt) and with a presence penalty of 1.5 (which counts only
the output)."""
from teachllm import sampling
from teachllm.course.quiz import next_token

PROMPT = "List of animals: dog, cat,"  # the chapter's looping prompt


def loop_next_token(lm):
    return next_token(lm, prompt=PROMPT)


def _first_token(lm, penalise):
    """Options: the three best tokens after the penalty and the unpenalised favourite, in token-id order."""
    tok = lm.tokenizer
    ids = tok.encode(PROMPT)
    logits = lm.prefill(ids, lm.new_cache(max_len=len(ids)))[0].float()  # [V]
    after = penalise(logits, ids)
    options = sorted(set(after.topk(3).indices.tolist()) | {int(logits.argmax())})
    texts = [repr(tok.token_text(i)) for i in options]
    favourite = int(logits.argmax())
    return {"options": texts, "answer": options.index(int(after.argmax())),
            "picked": texts[options.index(int(after.argmax()))], "unpenalised": repr(tok.token_text(favourite)),
            "logit": round(float(logits[favourite]), 1), "drop": round(float(logits[favourite] - after[favourite]), 2)}


def repetition_first_token(lm):
    return _first_token(lm, lambda logits, ids: sampling.apply_repetition_penalty(logits, ids, 1.05))


def presence_first_token(lm):
    return _first_token(lm, lambda logits, ids: sampling.apply_presence_frequency_penalty(logits, [], 1.5, 0.0))
