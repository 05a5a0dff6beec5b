"""Chapter 1 · The generation loop — solutions to the exercises."""
import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
greedy = tl.SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
short = tok.apply_chat_template([{"role": "user", "content": "Name the capital of France."}])

# %% Exercise 1
# A ten times longer prompt. Prefill processes every prompt token in one pass, so TTFT grows with the prompt; a
# decode step still processes one token, so TPOT barely moves.
def tokens_per_pass(lm, ids, max_tokens):
    # the number of tokens each forward pass feeds the model when generating max_tokens tokens (EOS ignored)
    # from the prompt ids: prefill first, then every decode step
    return [len(ids)] + [1] * (max_tokens - 1)  # the last token chosen needs no pass of its own


grows_with_prompt = "TTFT"

# Times depend on the machine, so we print them and assert only what is not timing: the added text really adds
# tokens (10 × "Paris is a city on the Seine. ", counted by the tokenizer itself), and both runs decode 6 tokens.
long = tok.apply_chat_template([{"role": "user", "content": "Name the capital of France. "
                                 + "Paris is a city on the Seine. " * 10}])
runs = {name: lm.generate(text, greedy) for name, text in (("short", short), ("long", long))}
for name, r in runs.items():
    m = r.metrics
    print(f"{name:>5}: {m.n_prompt_tokens:4d} prompt tokens, TTFT {m.ttft_s * 1e3:6.1f} ms, "
          f"TPOT {m.tpot_s * 1e3:5.1f} ms")
    assert m.n_output_tokens == 6
added = 10 * len(tok.encode("Paris is a city on the Seine. ", add_special_tokens=False))
assert runs["long"].metrics.n_prompt_tokens - runs["short"].metrics.n_prompt_tokens >= added - 10
passes = tokens_per_pass(lm, tok.encode(long), 6)
assert sum(passes) == runs["long"].metrics.n_prompt_tokens + 5  # every prompt token once, then one per step
print("tokens per forward pass, long prompt:", passes)

# %% Exercise 2
# The end-of-sequence id is kept in token_ids (it says why generation stopped) and left out of the text (it is not
# words).
eos_in_token_ids = True
eos_in_text = False


def stopped_at_eos(lm, token_ids):
    # True when generation ended because the model chose an end-of-sequence token (finish reason "stop")
    return bool(token_ids) and token_ids[-1] in lm.config.eos_token_ids


out = lm.generate(short, tl.SamplingParams(temperature=0, max_tokens=40))
assert out.finish_reason == "stop" and stopped_at_eos(lm, out.token_ids)
assert out.token_ids[-1] in lm.config.eos_token_ids
assert "<|im_end|>" not in out.text
assert out.text == tok.decode(out.token_ids[:-1]).strip() or out.text == tok.decode(out.token_ids[:-1])
cut = lm.generate(short, tl.SamplingParams(temperature=0, max_tokens=3))
assert cut.finish_reason == "length" and not stopped_at_eos(lm, cut.token_ids)
print("EOS id kept in token_ids, not in text:", repr(out.text))
