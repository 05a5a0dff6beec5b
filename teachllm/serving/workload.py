"""Workloads for the serving chapters, and the measurements they report (wall-clock, in one process).

- `decode_throughput`: batched decode at several batch sizes. A decode step reads every weight once
  whatever the batch, so while decode is memory-bound, B sequences cost little more than one:
  tokens/s grows almost linearly with B (chapter 11).
- `mixed_workload` + `compare_batching`: requests with mixed prompt and output lengths — a few long
  outputs among many short ones, spaced so that every static batch holds one long request — run
  under static and under continuous batching. Static batching makes the short requests of later
  batches wait for each batch's long one; continuous batching refills a row as soon as it frees.
- `chunked_prefill_demo`: a long prompt arrives while short requests decode. Without chunking its
  whole prefill lands in one iteration and every decoder stalls behind it; with chunked prefill it is
  spread over iterations that keep decoding.

Timings on a shared machine are noisy, so every measurement also reports what does not depend on
the clock: iterations, forward calls, and latencies counted in iterations.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .. import roofline
from ..sampling import SamplingParams
from ..texts import ENGLISH
from .config import ServingConfig
from .engine import ServingEngine
from .metrics import ServingRun

# Chapter 13's workloads (and the serving bench's): CacheBlend's four short documents and a question about two of
# them; speculative decoding's prompt, QUESTION_SPEC
DOCUMENTS = [
    "Document 1: Alice Martin is a marine biologist who lives in Lisbon. She studies octopuses and has two cats "
    "named Pixel and Byte. ",
    "Document 2: The Lisbon Oceanarium opened in 1998 and is one of the largest aquariums in Europe. It holds "
    "about eight thousand animals. ",
    "Document 3: Bob Chen is a pastry chef in Montreal. His bakery is famous for its maple croissants, which sell "
    "out every morning. ",
    "Document 4: Octopuses have three hearts and blue blood. They can change colour in a fraction of a second to "
    "hide from predators. ",
]
QUESTION_SPEC = "Explain why the sky is blue."
QUESTION = ("Question: In which city does Alice live, and what does she study? "
            "Answer: Alice lives in Lisbon and she studies octopuses.")

PROMPTS = [
    "The three primary colours are",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "def fibonacci(n):",
    "Explain in simple words why the sky is blue during the day and red at sunset.",
    "List three fruits that are rich in vitamin C:",
    "The capital of France is",
    "Write a short poem about the first snow of winter falling on a quiet city street at night.",
    "Water boils at",
    "In 1969, the first humans walked on the Moon. Describe what they saw when they stepped out of the lander.",
    "The best way to learn a new programming language is",
    "Translate to French: good morning, how are you today?",
    "A recipe for pancakes needs flour, milk, eggs and",
    "Summarise the plot of a detective story in which a missing painting is found in the museum's own basement.",
    "Roses are red,",
    "To make a cup of green tea, first",
    "The quick brown fox",
]

LONG_TEXT = ENGLISH  # the shared sample paragraph (teachllm.texts)


def decode_throughput(lm, batch_sizes=(1, 2, 4, 8, 16), steps: int = 8, context: int = 32,
                      reps: int = 3) -> list[dict]:
    """Decode tokens/s at each batch size after `context` tokens of the shared paragraph: the measurement
    of `teachllm.roofline.decode_throughput`, in the chapter's units (rows: batch, ms_per_step, tokens_per_s)."""
    ids = lm.tokenizer.encode(LONG_TEXT)[:context]
    return [{"batch": r["batch_size"], "ms_per_step": 1000 * r["seconds_per_step"], "tokens_per_s": r["tokens_per_s"]}
            for r in roofline.decode_throughput(lm, ids, batch_sizes, steps, reps=reps)]


@dataclass
class Workload:
    prompts: list[list[int]]  # token ids of each request
    params: list[SamplingParams]  # greedy, ignore_eos, so output lengths are exactly max_tokens
    long_ids: list[int]  # requests with a long output
    short_ids: list[int]  # the others

    def describe(self) -> dict:
        return {"requests": len(self.prompts), "prompt_tokens": [len(p) for p in self.prompts],
                "output_tokens": [p.max_tokens for p in self.params], "long_ids": self.long_ids,
                "short_ids": self.short_ids}


def mixed_workload(lm, n_requests: int = 20, max_num_seqs: int = 8, long_tokens: int = 96,
                   short_tokens: tuple[int, int] = (8, 24), seed: int = 0) -> Workload:
    """Requests 0, max_num_seqs, 2·max_num_seqs, … have `long_tokens` outputs (one per static batch);
    the others between short_tokens[0] and short_tokens[1]. Prompts are PROMPTS in an order drawn
    with random seed `seed`."""
    rng = random.Random(seed)
    texts = [PROMPTS[i % len(PROMPTS)] for i in range(n_requests)]
    rng.shuffle(texts)
    long_ids = list(range(0, n_requests, max_num_seqs))
    lengths = [long_tokens if i in long_ids else rng.randint(*short_tokens) for i in range(n_requests)]
    params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in lengths]
    return Workload([lm.tokenizer.encode(t) for t in texts], params, long_ids,
                    [i for i in range(n_requests) if i not in long_ids])


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def compare_batching(lm, workload: Workload, max_num_seqs: int = 8, repeats: int = 1, warmup: bool = True,
                     progress: bool = False, **config) -> dict:
    """Run `workload` under static and continuous batching (alternating, `repeats` times each; the faster
    run of each policy is kept) and return both runs and the continuous / static ratios."""
    if warmup:  # first calls pay for allocations and kernel selection; keep them out of the measurement
        ServingEngine(lm, ServingConfig(max_num_seqs=max_num_seqs, **config)).run(
            workload.prompts[:max_num_seqs], SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))
    best: dict[str, ServingRun] = {}
    for _ in range(repeats):
        for policy in ("static", "continuous"):
            engine = ServingEngine(lm, ServingConfig(policy=policy, max_num_seqs=max_num_seqs, **config))
            run = engine.run(workload.prompts, workload.params, progress=progress)
            if policy not in best or run.total_s < best[policy].total_s:
                best[policy] = run
    s, c = best["static"], best["continuous"]
    ss, cs = s.summary(workload.short_ids), c.summary(workload.short_ids)
    ratios = {
        "total_s": _ratio(c.total_s, s.total_s),
        "throughput_tok_s": _ratio(cs["throughput_tok_s"], ss["throughput_tok_s"]),
        "mean_latency_s": _ratio(c.summary()["latency_s"]["mean"], s.summary()["latency_s"]["mean"]),
        "short_mean_latency_s": _ratio(cs["latency_s"]["mean"], ss["latency_s"]["mean"]),
        "short_median_latency_s": _ratio(cs["latency_s"]["median"], ss["latency_s"]["median"]),
        "mean_ttft_s": _ratio(c.summary()["ttft_s"]["mean"], s.summary()["ttft_s"]["mean"]),
        "iterations": _ratio(c.iterations, s.iterations),
        "forward_calls": _ratio(c.forward_calls, s.forward_calls),
        "short_mean_latency_iterations": _ratio(cs["latency_iterations"]["mean"], ss["latency_iterations"]["mean"]),
    }
    return {"static": s, "continuous": c, "ratios": ratios}


def chunked_prefill_demo(lm, long_prompt_tokens: int = 384, n_decoders: int = 3, decode_tokens: int = 24,
                         budget: int = 64, join_after: int = 3) -> dict:
    """Short requests decode; after `join_after` iterations a long prompt arrives. Run without and with
    chunked prefill (token budget `budget` per iteration) and report the decoders' longest stall, the
    long prompt's TTFT, and the most tokens any iteration computed."""
    long_ids = (lm.tokenizer.encode(LONG_TEXT) * (1 + long_prompt_tokens // 60))[:long_prompt_tokens]
    out = {}
    for chunked in (False, True):
        config = ServingConfig(policy="continuous", max_num_seqs=n_decoders + 1, num_blocks=64,
                               max_num_batched_tokens=budget if chunked else None, chunked_prefill=chunked)
        engine = ServingEngine(lm, config)
        greedy = SamplingParams(temperature=0, max_tokens=decode_tokens, ignore_eos=True)
        ids = [engine.add_request(PROMPTS[i], greedy) for i in range(n_decoders)]
        first = len(engine.timeline)
        for _ in range(join_after):
            engine.step()
        ids.append(engine.add_request(long_ids, SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)))
        run = engine.drain(ids, first_iteration=first)
        decoders = run.requests[:n_decoders]
        out["chunked" if chunked else "whole"] = {
            "decoder_max_gap_s": max(r.max_gap_s for r in decoders),
            "decoder_mean_tpot_s": sum(r.tpot_s for r in decoders) / n_decoders,
            "long_ttft_s": run.requests[-1].ttft_s,
            "max_tokens_per_iteration": max(r.num_tokens for r in run.timeline),
            "iterations": run.iterations,
            "run": run,
        }
    return out
