"""Chapter 1's computed answers: the chat prompt's length, the KV cache after six steps, and greedy's first token."""

import teachllm as tl
from teachllm.course.quiz import next_token

QUESTION = "What is the capital of France?"


def _chat_ids(lm) -> list[int]:
    return lm.tokenizer.encode(lm.tokenizer.apply_chat_template([{"role": "user", "content": QUESTION}]))


def chat_prompt_tokens(lm) -> dict:
    n_question = len(lm.tokenizer.encode(QUESTION, add_special_tokens=False))
    return {"answer": len(_chat_ids(lm)), "n_question": n_question}


def cache_after_step_six(lm) -> dict:
    ids = _chat_ids(lm)
    steps = tl.generation_steps(lm, [ids], tl.SamplingParams(temperature=0, max_tokens=6, ignore_eos=True))
    lengths = [step.cache.length for step in steps]
    return {"answer": lengths[5], "n_prompt": len(ids)}


def greedy_first_answer_token(lm) -> dict:
    return next_token(lm, chat=QUESTION)
