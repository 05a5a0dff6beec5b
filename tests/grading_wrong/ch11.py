"""Plausible wrong answers to chapter 11's exercises: the grader must give each less than full points."""

WRONG = {
    "ch11-ex1": [
        # every iteration with a prefill, even one with nothing decoding
        """
def mixed_iterations(run):
    return [r.index for r in run.timeline if r.prefill]
chunk_gets_token_each_iteration = False
""",
        # either kind of work, and thinks every chunk yields a token
        """
def mixed_iterations(run):
    return [r.index for r in run.timeline if r.decode_ids or r.prefill]
chunk_gets_token_each_iteration = True
""",
    ],
    "ch11-ex2": [
        # one extra iteration per request for its prefill
        """
def iterations_one_at_a_time(max_tokens):
    return sum(max_tokens) + len(max_tokens)
static_same_as_continuous = True
""",
        # as if all requests ran together, and the policies differed
        """
def iterations_one_at_a_time(max_tokens):
    return max(max_tokens)
static_same_as_continuous = False
""",
    ],
    "ch11-ex3": [
        # off by one: the arrival iteration not counted
        """
def long_prompt_ttft(run, request_id):
    req = next(r for r in run.requests if r.request_id == request_id)
    return req.first_iteration - req.arrival_iteration
def largest_iteration(run):
    return max(r.num_tokens for r in run.timeline)
smaller_budget_delays_long_prompt = True
""",
        # counts requests in an iteration, not tokens; and gets the trade backwards
        """
def long_prompt_ttft(run, request_id):
    req = next(r for r in run.requests if r.request_id == request_id)
    return req.first_iteration - req.arrival_iteration + 1
def largest_iteration(run):
    return max(len(r.decode_ids) + len(r.prefill) for r in run.timeline)
smaller_budget_delays_long_prompt = False
""",
    ],
}
