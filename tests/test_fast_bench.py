"""Section 5 of `python -m teachllm.bench` (teachllm/bench/fast.py, issue 35) on the CPU, with a tiny random model in
teachllm and in transformers and tiny sizes: the ways that run here are measured (TTFT, tokens/s, operators per step
from torch.profiler) and give the reference's tokens; the CUDA-only ways are skipped with their reason; the compiled
step, traced by torch.compile's eager backend, is traced once and gives the reference's tokens; the operations one
decode step dispatches are counted as dispatched, and one layer of the fused step dispatches what its code says."""

import math

import pytest
import torch
import transformers
from test_fast_generate import tiny_lm
from tiny_decoder import random_decoder
from torch._dynamo.utils import counters

import teachllm as tl
from teachllm.bench import fast
from teachllm.bench.decode import random_models
from teachllm.fastpath.fused_float import FusedStep

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]  # see conftest.py


def test_the_fast_section_runs_on_the_cpu_and_skips_what_needs_cuda():
    transformers.logging.set_verbosity_error()
    config = tl.ModelConfig(vocab_size=101, hidden_size=64, intermediate_size=96, n_layers=2, n_heads=4,
                            n_kv_heads=2, head_dim=16, max_position_embeddings=128, eos_token_ids=(3,))
    lm, hf = random_models(config, torch.device("cpu"), torch.float32)
    section = fast.fast_section(lm, hf, [5, 6, 7, 8], new_tokens=4, batch_sizes=(1, 2), reps=1)
    rows = section["rows"]
    assert list(rows) == ["teachllm eager", "teachllm fast path", "teachllm fast path, model.py step",
                          "teachllm compiled", "transformers eager", "transformers static compiled"]
    for name in ("teachllm compiled", "transformers static compiled"):
        assert "CUDA only" in rows[name]["skipped"]
    for name in ("teachllm eager", "teachllm fast path", "teachllm fast path, model.py step", "transformers eager"):
        row = rows[name]
        assert "skipped" not in row, row
        assert row["ttft_s"] > 0 and row["kernels_per_step"] > 10  # a decode step is many operators
        assert all(math.isnan(row[f"batch_{b}"]["decode_tokens_per_s"]) or row[f"batch_{b}"]["decode_tokens_per_s"] > 0
                   for b in (1, 2))
    assert rows["teachllm fast path"]["same_tokens"] and rows["teachllm fast path, model.py step"]["same_tokens"]
    counts = section["operations_per_step"]
    assert counts["fused step"]["computing"] < counts["model.py step"]["computing"]
    text = fast.format_fast(section)
    assert "teachllm fast path" in text and "skipped: torch.compile" in text and "aten operators" in text
    assert "operations per decode step" in text and "not a GPU measurement" in text
    assert f"fused step      {counts['fused step']['all']:>6,} ({counts['fused step']['computing']:,} computing" in text


def test_operations_are_counted_as_dispatched():
    x, y = torch.randn(3, 4), torch.randn(3, 5)
    with fast.OperationCount() as counted:
        (x.t() @ y + 1).transpose(0, 1).reshape(20)  # t, transpose: views; mm, add; a reshape of a transpose copies
    assert (counted.all, counted.computing) == (6, 3), (counted.all, counted.computing)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_what_one_layer_of_the_fused_step_dispatches(dtype):
    """Per layer (a 3-layer model's count minus a 2-layer one's), the fused step computes: two RMSNorms (as many
    operations as F.rms_norm dispatches here), the q/k/v and the gate/up matmul, RoPE on q and k (roll, two
    products, a sum), two cache writes, one attention, o_proj and down_proj each with its residual add (addmm),
    silu and the product: 2 · rms_norm + 13. model.py's step computes at least 10 more."""
    x, w = torch.randn(1, 64, dtype=dtype), torch.ones(64, dtype=dtype)
    with fast.OperationCount() as norm:
        torch.nn.functional.rms_norm(x, (64,), w, 1e-5)
    per_layer = {}
    for name in ("model.py", "fused"):
        count = []
        for n_layers in (2, 3):
            model = random_decoder(0, n_layers=n_layers).to(dtype)
            forward = FusedStep(model) if name == "fused" else model
            count.append(fast.operations(forward, model.config, "cpu", dtype)["computing"])
        per_layer[name] = count[1] - count[0]
    assert per_layer["fused"] == 2 * norm.computing + 13, (per_layer, norm.computing)
    assert per_layer["model.py"] >= per_layer["fused"] + 10, per_layer


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
