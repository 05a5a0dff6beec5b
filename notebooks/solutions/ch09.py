"""Chapter 9 · Stopping — solutions to the exercises.

The file runs as one script; each `# %% Exercise K` section defines the names exercise K's cell asks for
(the instructor edition puts the section in that cell) and then checks them.
"""
import teachllm as tl

lm = tl.load(device="cpu", dtype="float32")
tok = lm.tokenizer
question = tok.encode(tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}]))

# %% Exercise 1
# With ignore_eos=True, a stop STRING "<|im_end|>" never matches (the text skips special tokens), a stop ID 2
# does (ids are checked, and ignore_eos turns off only the EOS rule).
stops_despite_ignore_eos = tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True, stop_token_ids=[2])
why_stop_string_fails = "a"

by_string = lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True,
                                                    stop=["<|im_end|>"]))
by_id = lm.generate(question, stops_despite_ignore_eos)
print("stop string:", repr(by_string.text), by_string.finish_reason)
print("stop id:    ", repr(by_id.text), by_id.finish_reason, by_id.stop_reason)
assert by_string.finish_reason == "length" and len(by_string.token_ids) == 20
assert by_id.finish_reason == "stop" and by_id.stop_reason == 2 and len(by_id.token_ids) < 20
plain = lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=20))
assert by_id.token_ids == plain.token_ids  # the same answer as with the EOS rule on

# %% Exercise 2
# min_tokens = max_tokens = 10 masks EOS for all ten steps: finish reason "length", no id 2.
my_finish_reason = "length"
my_id2_appears = False

out = lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=10, min_tokens=10))
print(repr(out.text), out.finish_reason)
assert out.finish_reason == my_finish_reason and len(out.token_ids) == 10
assert (2 in out.token_ids) == my_id2_appears
