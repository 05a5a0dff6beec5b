"""How far apart two computations of the same numbers may land: one table, shared by the tests and the chapters.

Two ways of computing the same thing (with the KV cache and without, fused and by hand, a paged cache and a
contiguous one, a batch and one row at a time) do the same arithmetic in a different order. They round
differently, so they agree only up to the precision of the dtype they run in.

That precision is the dtype's machine epsilon ε, the gap between 1 and the next number it can hold:

    float32   ε = 2⁻²³ ≈ 1.2e-7     (24 bits of mantissa)
    float16   ε = 2⁻¹⁰ ≈ 9.8e-4     (11 bits)
    bfloat16  ε = 2⁻⁷  ≈ 7.8e-3     (8 bits)

Near a value x the representable numbers are about ε·|x| apart: one *ulp* of x. A logit near 32 (the
largest logits of the models the course loads are about 35) is known to an ulp of 32·ε: 3.8e-6 in float32,
0.031 in float16, 0.25 in bfloat16.

Where the differences come from depends on the dtype:

- **16-bit dtypes** (bfloat16, float16): every stored activation is rounded to 8 or 11 bits, while the sums
  inside a matmul run in float32. Two orderings differ mainly by those roundings of the results, so they land
  a few ulps apart. Each 16-bit bound below is a number of ulps at the size of what is compared.
- **float32**: there is no coarse rounding of results. What differs is the order of long float32 sums
  (dot products of 576 to 1,536 terms, over 30 layers), which leaves more ulps of difference but far smaller
  numbers. The float32 bounds are the ones the tests have always used; measured differences stay 2 to 10 times
  below them.

Measured on the bundled model, cached against uncached logits over three prompts: float32 5.3e-5 (14 ulps at
32), float16 0.099 (3.2 ulps), bfloat16 0.75 (3 ulps); the tests' other comparisons (paged against contiguous,
a batch against one row, teachllm against transformers) stay within the same bounds. tests/test_tolerances.py
checks each bound against such a pair, and against the same pair with a bug planted (a wrong position, one
stale key in one layer's cache), which must leave it. The 16-bit bounds are coarse by nature: in bfloat16 a
logit near 32 is known to ±0.125, and the stale key moves the logits by 2.4, just past the bound of 2. The
float32 checks are the fine-grained ones.

    tol = tl.tolerance(lm.dtype)
    assert (cached - uncached).abs().max() <= tol.logits
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .units import dtype_named

# what is compared: (the size of the values compared, bound in float32, bound in 16-bit dtypes as ulps at that size)
KINDS = {
    # one layer's tensors (keys, values, a head's output: |x| up to about 8) computed two ways
    "values": (8.0, 1e-5, 4),
    # probabilities (attention weights, a softmax over the vocabulary: in [0, 1]) computed two ways
    "probs": (1.0, 1e-4, 4),
    # the logits of one forward call (|logit| up to about 32) computed two ways
    "logits": (32.0, 1e-4, 8),
    # logits after a prefill and several decode steps, against one uncached pass: more roundings in between (in
    # 16 bits the rounding of each result still dominates; a wider 16-bit bound would hide a stale cache slot)
    "steps": (32.0, 5e-4, 8),
    # a sum of a few (up to 16) tokens' log-probabilities (|sum| up to about 16) computed two ways
    "logprob": (16.0, 1e-3, 8),
}
# relative bound, for tensors whose size varies (the residual stream reaches the hundreds): float32, 16-bit in ulps
RELATIVE = (1e-5, 4)


@dataclass(frozen=True)
class Tolerance:
    """The bounds for one dtype: the largest |difference| allowed between two computations of the same numbers."""
    dtype: torch.dtype
    eps: float  # ε: the gap between 1 and the next representable number
    values: float  # a layer's keys, values or head outputs
    probs: float  # probabilities, attention weights
    logits: float  # one forward call's logits
    steps: float  # logits after a prefill and a few decode steps
    logprob: float  # a sum of a few tokens' log-probabilities
    rtol: float  # relative, on top of an absolute bound: |a − b| ≤ atol + rtol·|b| (torch.allclose's rule)

    def same_choice(self, a: torch.Tensor, b: torch.Tensor, kind: str = "logits") -> bool:
        """Whether two rows of logits [V], equal within the `kind` bound, pick the same token: either the same
        argmax, or a near-tie that rounding may break either way (`a`'s two picks within twice the bound)."""
        i, j = int(a.argmax()), int(b.argmax())
        return i == j or float(a[i] - a[j]) <= 2 * getattr(self, kind)

    def text(self, kind: str) -> str:
        """A bound written the way the chapters print it: 1e-4, 5e-4, 0.25, 2."""
        value = getattr(self, kind)
        if value >= 0.01:
            return f"{value:g}"
        mantissa, exponent = f"{value:.0e}".split("e")
        return f"{mantissa}e{int(exponent)}"


def tolerance(dtype: torch.dtype | str) -> Tolerance:
    """The bounds for two computations in `dtype` (a torch dtype or a name such as "bf16")."""
    dtype = dtype_named(dtype)
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"tolerance: no bounds for {dtype}; teachllm runs in float32, bfloat16 or float16")
    eps = torch.finfo(dtype).eps
    bounds = {}
    for kind, (scale, float32_bound, ulps) in KINDS.items():
        bounds[kind] = float32_bound if dtype == torch.float32 else ulps * eps * scale
    bounds["rtol"] = RELATIVE[0] if dtype == torch.float32 else RELATIVE[1] * eps
    return Tolerance(dtype, eps, **bounds)


@torch.no_grad()
def agree_until_a_near_tie(lm, prompt_ids, want, got, bound: float) -> bool:
    """Two greedy runs of the same prompt (token lists) agree, or part at a near-tie: a step where the model's
    own logits for the two tokens are within twice `bound` of each other, which rounding may tip either way
    (bfloat16 keeps 8 bits); after it the texts go their own ways. Checked against an uncached pass."""
    n = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), None)
    if n is None:
        return len(want) == len(got)
    logits = lm.forward(list(prompt_ids) + list(want[:n]))[0, -1].float()  # [V] where they part
    return float(logits[want[n]] - logits[got[n]]) <= 2 * bound
