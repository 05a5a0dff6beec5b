"""Chapter 1 · The generation loop — solutions to the exercises."""
import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
greedy = tl.SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)

# Exercise 1: a ten times longer prompt. Prefill processes every prompt token, so TTFT grows with the
# prompt; a decode step still processes one token. Times depend on the machine, so we print them and
# assert only what is not timing: the added text really adds tokens (10 × "Paris is a city on the
# Seine. ", counted by the tokenizer itself), and both runs decode 6 tokens.
short = tok.apply_chat_template([{"role": "user", "content": "Name the capital of France."}])
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

# Exercise 2: the end-of-sequence id is kept in token_ids (it says why generation stopped) and left out
# of the text (it is not words).
out = lm.generate(short, tl.SamplingParams(temperature=0, max_tokens=40))
assert out.finish_reason == "stop"
assert out.token_ids[-1] in lm.config.eos_token_ids
assert "<|im_end|>" not in out.text
assert out.text == tok.decode(out.token_ids[:-1]).strip() or out.text == tok.decode(out.token_ids[:-1])
print("EOS id kept in token_ids, not in text:", repr(out.text))
