"""Section 5 of `python -m teachllm.bench` (teachllm/bench/fast.py, issue 35) on the CPU, with a tiny random model in
teachllm and in transformers and tiny sizes: the ways that run here are measured (TTFT, tokens/s, operators per step
from torch.profiler) and give the reference's tokens; the CUDA-only ways are skipped with their reason; the compiled
step, traced by torch.compile's eager backend, is traced once and gives the reference's tokens."""

import math

import pytest
import torch
import transformers
from test_fast_generate import tiny_lm
from torch._dynamo.utils import counters

import teachllm as tl
from teachllm.bench import fast
from teachllm.bench.decode import random_models

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]  # see conftest.py


def test_the_fast_section_runs_on_the_cpu_and_skips_what_needs_cuda():
    transformers.logging.set_verbosity_error()
    config = tl.ModelConfig(vocab_size=101, hidden_size=64, intermediate_size=96, n_layers=2, n_heads=4,
                            n_kv_heads=2, head_dim=16, max_position_embeddings=128, eos_token_ids=(3,))
    lm, hf = random_models(config, torch.device("cpu"), torch.float32)
    section = fast.fast_section(lm, hf, [5, 6, 7, 8], new_tokens=4, batch_sizes=(1, 2), reps=1)
    rows = section["rows"]
    assert list(rows) == ["teachllm eager", "teachllm fast path", "teachllm compiled", "transformers eager",
                          "transformers static compiled"]
    for name in ("teachllm compiled", "transformers static compiled"):
        assert "CUDA only" in rows[name]["skipped"]
    for name in ("teachllm eager", "teachllm fast path", "transformers eager"):
        row = rows[name]
        assert "skipped" not in row, row
        assert row["ttft_s"] > 0 and row["kernels_per_step"] > 10  # a decode step is many operators
        assert all(math.isnan(row[f"batch_{b}"]["decode_tokens_per_s"]) or row[f"batch_{b}"]["decode_tokens_per_s"] > 0
                   for b in (1, 2))
    assert rows["teachllm fast path"]["same_tokens"]
    text = fast.format_fast(section)
    assert "teachllm fast path" in text and "skipped: torch.compile" in text and "aten operators" in text


def test_the_compiled_step_is_traced_once_and_gives_the_reference_tokens(monkeypatch):
    lm = tiny_lm()
    monkeypatch.setattr(fast, "COMPILE", {"backend": "eager"})  # dynamo's tracing, without a C++ compiler
    counters.clear()
    run = fast.teachllm_compiled(lm)
    want = lm.generate([5, 6, 7, 8], tl.SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)).token_ids
    assert run([[5, 6, 7, 8]], 10) == want
    assert run([[5, 6, 7, 8]], 10) == want  # the same cache again, reset
    assert counters["stats"]["unique_graphs"] == 1  # no Python number changed from step to step: no recompiling
    torch._dynamo.reset()
