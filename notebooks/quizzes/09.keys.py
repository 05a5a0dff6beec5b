"""Chapter 9 quiz keys: the France question's last id, the finish reason with min_tokens = max_tokens,
and the token greedy takes when min_tokens masks the EOS the model wants."""
import torch

import teachllm as tl


def _question(lm):
    """The chapter's France question, ready for the assistant's answer."""
    tok = lm.tokenizer
    return tok.encode(tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}]))


def eos_last_id(lm):
    out = lm.generate(_question(lm), tl.SamplingParams(temperature=0, max_tokens=32))
    return {"answer": out.token_ids[-1], "piece": lm.tokenizer.pieces(out.token_ids[-1:])[0],
            "n_tokens": len(out.token_ids), "finish_reason": out.finish_reason}


def min_equals_max(lm):
    out = lm.generate(_question(lm), tl.SamplingParams(temperature=0, max_tokens=10, min_tokens=10))
    eos = lm.config.eos_token_ids[0]
    # the options of the YAML file, in order: (finish_reason, EOS among the ids)
    options = [("stop", True), ("length", False), ("length", True), ("stop", False)]
    return {"answer": options.index((out.finish_reason, eos in out.token_ids)), "n_tokens": len(out.token_ids)}


def masked_eos_pick(lm):
    eos = lm.config.eos_token_ids[0]
    params = tl.SamplingParams(temperature=0, max_tokens=10, min_tokens=10)
    steps = [(float(torch.softmax(s.logits[0].float(), -1)[eos]), s)  # what the model gave EOS at each step
             for s in tl.generation_steps(lm, [_question(lm)], params)]
    p_eos, step = max(steps, key=lambda pair: pair[0])  # the step where the model most wants to stop
    tok = lm.tokenizer
    candidates = sorted(torch.topk(step.processed[0], 3).indices.tolist() + [eos])  # by id: greedy's pick + 2 + EOS
    texts = [repr(tok.token_text(i)) for i in candidates]
    return {"options": texts, "answer": candidates.index(step.tokens[0]),
            "step": step.index + 1, "p_eos": round(p_eos, 2), "picked": repr(tok.token_text(step.tokens[0])),
            "eos": repr(tok.token_text(eos))}
