"""teachllm.tolerances: each bound holds where two correct computations differ, and fails where a bug does.

For float32, bfloat16 and float16, the bundled model computes the same logits two ways (cached against uncached,
the last row of `forward` against `prefill`) and the differences must stay within the dtype's bounds. Then the
same comparison with a real bug planted (the decode step told the wrong position, one cached key slot stale)
must leave them: a bound loose enough to hide a bug would be no check at all.
"""

import pytest
import torch

import teachllm as tl
from teachllm.tolerances import KINDS

pytestmark = pytest.mark.floating  # the differences depend on the CPU's kernels: `make test-avx2` runs it too

DTYPES = ("float32", "bfloat16", "float16")


@pytest.fixture(scope="module", params=DTYPES)
def model(request, lm):
    """The bundled model in each dtype, on the CPU (the float32 one is the session's model when it is that)."""
    if lm.device.type == "cpu" and str(lm.dtype) == f"torch.{request.param}":
        return lm
    return tl.load(device="cpu", dtype=request.param, progress=False)


def cached_and_uncached(model, ids, split, bug=None):
    """Logits of ids[split:] fed one decode step at a time after a prefill of ids[:split], and the same rows of one
    uncached forward pass: two [n, V] float32 tensors. `bug(cache)` runs before each decode step."""
    cache = model.new_cache(max_len=len(ids))
    rows = [model.prefill(ids[:split], cache)[0]]
    for token in ids[split:-1]:
        if bug is not None:
            bug(cache)
        rows.append(model.decode_step(token, cache)[0])
    return torch.stack(rows).float(), model.forward(ids)[0, split - 1:-1].float()


def test_bounds_are_what_the_table_says():
    for dtype in DTYPES:
        tol = tl.tolerance(dtype)
        assert tol.eps == torch.finfo(getattr(torch, dtype)).eps
        for kind, (scale, float32_bound, ulps) in KINDS.items():
            expected = float32_bound if dtype == "float32" else ulps * tol.eps * scale
            assert getattr(tol, kind) == expected, (dtype, kind)
    assert tl.tolerance("bf16") == tl.tolerance(torch.bfloat16)
    assert (tl.tolerance("float32").text("logits"), tl.tolerance("bf16").text("logits")) == ("1e-4", "2")
    with pytest.raises(ValueError, match="float8"):
        tl.tolerance("float8")
    with pytest.raises(ValueError, match="no bounds for torch.int8"):
        tl.tolerance(torch.int8)


def test_correct_computations_stay_within_the_bounds(model, long_prompt):
    tol = tl.tolerance(model.dtype)
    ids = long_prompt[:28]
    cached, uncached = cached_and_uncached(model, ids, split=12)
    assert float((cached - uncached).abs().max()) <= tol.steps
    assert all(tol.same_choice(u, c, "steps") for u, c in zip(uncached, cached, strict=True))
    last = model.prefill(ids, model.new_cache(max_len=len(ids)))[0].float()
    assert float((last - model.forward(ids)[0, -1].float()).abs().max()) <= tol.logits


@pytest.mark.parametrize("bug", ["position off by one", "a stale key"])
def test_a_planted_bug_leaves_the_bounds(model, long_prompt, bug):
    tol = tl.tolerance(model.dtype)
    ids = long_prompt[:28]

    def shifted(cache):  # the next token is told it sits one place later (RoPE and the mask see the wrong position)
        cache.start -= 1

    def stale(cache):  # the cache forgets the keys every layer stored for the sixth prompt token
        cache.k[:, :, :, 5] = 0
    # (A smaller bug, one layer's key for one token, moves the logits by about 1.9: far outside float32's bound,
    # inside bfloat16's 2.0. A 16-bit run cannot see it; the float32 run, which the committed outputs are, does.)

    cached, uncached = cached_and_uncached(model, ids, split=12, bug={"position off by one": shifted,
                                                                       "a stale key": stale}[bug])
    assert float((cached - uncached).abs().max()) > tol.steps


def test_same_choice_allows_only_near_ties():
    tol = tl.tolerance("float32")
    a = torch.tensor([5.0, 4.9998, 1.0])
    assert tol.same_choice(a, torch.tensor([5.0, 4.9, 1.0]))  # the same argmax
    assert tol.same_choice(a, torch.tensor([4.9997, 4.9999, 1.0]))  # a near-tie: a's two picks 2e-4 apart
    assert not tol.same_choice(torch.tensor([5.0, 4.0, 1.0]), torch.tensor([4.0, 5.0, 1.0]))
