"""The measured roof is a real upper bound: no phase of the bundled model, timed the same way chapter 10 times
it, reaches more FLOP/s than the peak `measure_device` measures from the model's own matmul shapes.

This compares two measurements taken in the same process (a ratio, not a wall-clock threshold): the peak is
the fastest run of the fastest matmul, a phase is the median of whole forward calls that do those matmuls and
more, so a phase above the peak means the probe missed a faster kernel the model uses.
"""

import pytest

import teachllm as tl
from teachllm import roofline

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too


def test_model_matmul_shapes_are_the_layers_weights():
    config = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4,
                            n_kv_heads=2, head_dim=12, max_position_embeddings=128)
    shapes = roofline.model_matmul_shapes(config, lengths=(5,))
    # q [48→48], k and v [48→24], o [48→48] (the same as q), gate/up [48→128], down [128→48], LM head [48→97]
    assert shapes == [(5, 48, 48), (5, 48, 24), (5, 48, 128), (5, 128, 48), (5, 48, 97)]


def test_no_phase_of_the_bundled_model_exceeds_the_measured_peak(lm):
    points = roofline.measure_phases(lm, prefill_lengths=(16, 64, 300), decode_batches=(1, 16),
                                     decode_contexts=(301,), reps=3, budget_s=1.0)
    device = roofline.measure_device(lm.device, lm.dtype, reps=3, config=lm.config)
    assert device.name.startswith(lm.device.type)
    for p in points:
        share = p.achieved_flops / device.peak_flops
        assert share <= 1.0, f"{p.phase} b={p.batch_size} len={p.length}: {share:.0%} of the measured peak"
