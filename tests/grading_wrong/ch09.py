"""Plausible wrong answers to chapter 9's exercises: the grader must give each less than full points."""

WRONG = {
    "ch09-ex1": [
        # the stop string: "<|im_end|>" is a special token, so it never appears in the output text
        """
import teachllm as tl
stops_despite_ignore_eos = tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True, stop=["<|im_end|>"])
why_stop_string_fails = "a"
""",
        # the right stop id, the wrong reason
        """
import teachllm as tl
stops_despite_ignore_eos = tl.SamplingParams(temperature=0, max_tokens=20, ignore_eos=True, stop_token_ids=[2])
why_stop_string_fails = "b"
""",
    ],
    "ch09-ex2": [
        # thinks EOS still ends the run before ten tokens
        """
my_finish_reason = "stop"
my_id2_appears = True
""",
        # right reason, but thinks EOS is generated as the last token
        """
my_finish_reason = "length"
my_id2_appears = True
""",
    ],
}
