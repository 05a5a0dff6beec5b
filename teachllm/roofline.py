"""The roofline: how fast a device can go at a given arithmetic intensity, and where prefill and decode land.

    attainable FLOP/s = min(peak FLOP/s, bandwidth × intensity)        intensity = FLOPs / bytes moved

Below the ridge point (intensity = peak / bandwidth) a computation waits on memory; above it, on
the arithmetic units. Batch-1 decode does about 1 FLOP per byte of weights read (each weight is
used for one multiply-add per token, 2 FLOPs for 2 or 4 bytes), so it sits far left of the ridge;
a long prefill uses each weight for hundreds of tokens and sits far right.

`measure_device` measures the two numbers that draw the roof (the fastest of the model's own
matmuls, and a copy),
`KNOWN_DEVICES` holds spec-sheet values for comparison, and `measure_phases` times the real model
and returns the points to place under the roof. Timing goes through `teachllm.timing.timed`,
which synchronises CUDA before reading the clock.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from .config import ModelConfig
from .cost import decode_cost, prefill_cost
from .generate import greedy_decode
from .timing import clock, synchronize, timed  # noqa: F401  (re-exported: tl.roofline.timed, .clock)
from .words import english, pad


# ---- a device's roof -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Device:
    """The two numbers of a roofline."""
    name: str  # "cpu", "cuda (NVIDIA H100 80GB HBM3)", or a spec-sheet name
    peak_flops: float  # FLOP/s of a large matmul: measured, or the dense spec value
    bandwidth: float  # bytes/s to and from main memory (bytes read + bytes written)
    dtype: str  # the element type the peak refers to ("float32", "bfloat16", ...)
    source: str  # "measured" or "spec sheet"

    @property
    def ridge(self) -> float:
        """Intensity (FLOP/byte) where memory-bound turns into compute-bound: peak / bandwidth."""
        return self.peak_flops / self.bandwidth

    def attainable(self, intensity: float) -> float:
        return attainable(self.peak_flops, self.bandwidth, intensity)

    def bound(self, intensity: float) -> str:
        """What limits work of this intensity here: "compute" at or past the ridge, else "memory bandwidth"."""
        return "compute" if intensity >= self.ridge else "memory bandwidth"

    def label(self, tr=english) -> str:
        """The name, in `tr`'s language (`teachllm.words`): a measured CPU is named by its threads."""
        cpu = re.fullmatch(r"cpu, (\d+) threads", self.name)
        return tr("cpu, {n} threads", n=int(cpu[1])) if cpu else self.name

    def describe(self, tr=english) -> str:
        """One line: the name, the source, the peak, the bandwidth and the ridge; `tr`: the words' language."""
        source = tr("measured") if self.source == "measured" else tr("spec sheet") if self.source == "spec sheet" \
            else self.source
        return tr("{name} ({source}, {dtype}): peak {peak:.3g} TFLOP/s, bandwidth {bandwidth:.4g} GB/s, ridge "
                  "{ridge:.1f} FLOP/byte", name=self.label(tr), source=source, dtype=self.dtype,
                  peak=self.peak_flops / 1e12, bandwidth=self.bandwidth / 1e9, ridge=self.ridge)

    __str__ = describe


def attainable(peak_flops: float, bandwidth: float, intensity: float) -> float:
    """The roofline: min(peak FLOP/s, bandwidth × intensity). The roof's two numbers are rates, > 0; an
    intensity (FLOPs per byte) is ≥ 0."""
    for name, value, low in (("peak_flops", peak_flops, "> 0"), ("bandwidth", bandwidth, "> 0"),
                             ("intensity", intensity, "≥ 0")):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or value < 0 or (value == 0 and low == "> 0"):
            raise ValueError(f"attainable: {name}={value!r} is not allowed; must be a finite number {low}")
    return min(peak_flops, bandwidth * intensity)


# Spec-sheet values (dense tensor-core throughput, no structured sparsity; HBM/GDDR bandwidth).
# A spec is an upper bound: measure the device you are on rather than trusting this table.
KNOWN_DEVICES = {
    "H200 SXM": Device("H200 SXM", 989e12, 4.8e12, "bfloat16", "spec sheet"),
    "H100 SXM": Device("H100 SXM", 989e12, 3.35e12, "bfloat16", "spec sheet"),
    "H100 PCIe": Device("H100 PCIe", 756e12, 2.0e12, "bfloat16", "spec sheet"),
    "A100 SXM 80GB": Device("A100 SXM 80GB", 312e12, 2.039e12, "bfloat16", "spec sheet"),
    "L4": Device("L4", 121e12, 300e9, "bfloat16", "spec sheet"),
    "RTX 4090": Device("RTX 4090", 165e12, 1.008e12, "bfloat16", "spec sheet"),
    "T4": Device("T4", 65e12, 320e9, "float16", "spec sheet"),
}


def model_matmul_shapes(config: ModelConfig, lengths=(256, 1024)) -> list[tuple[int, int, int]]:
    """The (m, k, n) of every weight matmul a prefill of each length runs: [m, k] @ [k, n], m = tokens.

    q/k/v/o projections, the three MLP matrices and the LM head (the largest, [m, h] @ [h, V])."""
    h, f, d = config.hidden_size, config.intermediate_size, config.head_dim
    shapes = []
    for m in lengths:
        for k, n in ((h, config.n_heads * d), (h, config.n_kv_heads * d), (config.n_heads * d, h), (h, f), (f, h),
                     (h, config.vocab_size)):
            if (m, k, n) not in shapes:
                shapes.append((m, k, n))
    return shapes


def measure_device(device: str | torch.device = "cpu", dtype: torch.dtype | None = None, reps: int = 5,
                   config: ModelConfig | None = None, lengths=(256, 1024)) -> Device:
    """Measure the roof of `device`: peak FLOP/s from the fastest matmul, bandwidth from a large copy.

    Matmul probe: an [n, n] @ [n, n] (n = 1536 on a CPU, 8192 on a GPU) and, with `config`, every
    weight matmul of that model's prefill at `lengths` tokens (`model_matmul_shapes`), each run as
    the model runs it (`F.linear`, same dtype, in this process, so with the same thread count).
    The peak is the best rate of any shape in its fastest run: a measured upper bound for the
    model's own matmuls, which a timed prefill or decode step (matmuls plus everything else) stays
    under. 2·m·k·n FLOPs per [m, k] @ [k, n].
    Copy probe: dst.copy_(src) moves 2 · src.nbytes (read once, written once); the tensors
    (64 MiB on a CPU, 1 GiB on a GPU) are far larger than any cache, so it measures main memory;
    the median of `reps` runs. About 1–3 s on a laptop CPU.
    """
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"measure_device: device={str(device)!r} asks for a CUDA GPU, but this machine has none; "
                         "measure 'cpu', or take a spec sheet's numbers from KNOWN_DEVICES")
    gpu = device.type == "cuda"
    dtype = dtype or (torch.bfloat16 if gpu else torch.float32)
    n = 8192 if gpu else 1536
    shapes = [(n, n, n)] + (model_matmul_shapes(config, lengths) if config is not None else [])
    generator = torch.Generator().manual_seed(0)
    peak = 0.0
    for m, k, n_out in shapes:
        x = torch.randn(m, k, generator=generator).to(device, dtype)  # [m, k]
        w = torch.randn(n_out, k, generator=generator).to(device, dtype)  # [n, k], stored as nn.Linear stores it
        fastest = min(timed(lambda x=x, w=w: F.linear(x, w), device, reps=1) for _ in range(max(1, reps)))
        peak = max(peak, 2 * m * k * n_out / fastest)
    n_bytes = 2**30 if gpu else 2**26
    src = torch.empty(n_bytes, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    bandwidth = 2 * n_bytes / timed(lambda: dst.copy_(src), device, reps=reps)
    if gpu:
        name = f"cuda ({torch.cuda.get_device_name(device)})"
    else:
        name = f"cpu, {torch.get_num_threads()} threads" if device.type == "cpu" else str(device)
    return Device(name, peak, bandwidth, str(dtype).removeprefix("torch."), "measured")


# ---- where the real model lands ------------------------------------------------------------------
@dataclass
class PhasePoint:
    """One timed forward call of the real model, next to its FLOP and byte counts."""
    phase: str  # "prefill" or "decode"
    batch_size: int  # b
    length: int  # prefill: prompt length s; decode: keys visible T (the new token included)
    flops: int  # matmul FLOPs (teachllm.cost)
    bytes: int  # bytes moved in the cost model: weights + K/V read and written
    seconds: float  # median wall time of the call
    attainable_flops: float | None = None  # the roof at this intensity, when a Device was given

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes

    @property
    def achieved_flops(self) -> float:
        """FLOP/s actually reached."""
        return self.flops / self.seconds

    @property
    def achieved_bandwidth(self) -> float:
        """Bytes/s the call would have needed if it moved exactly the modelled bytes."""
        return self.bytes / self.seconds

    @property
    def tokens_per_s(self) -> float:
        """Tokens processed per second: b·s for prefill, b for a decode step."""
        return self.batch_size * (self.length if self.phase == "prefill" else 1) / self.seconds

    def to_dict(self) -> dict:
        return {**asdict(self), "intensity": self.intensity, "achieved_flops": self.achieved_flops,
                "achieved_bandwidth": self.achieved_bandwidth, "tokens_per_s": self.tokens_per_s}


def measure_phases(lm, prefill_lengths=(32, 128, 512), decode_batches=(1, 8), decode_contexts=(128, 1024),
                   device: Device | None = None, reps: int = 3, warmup: int = 1,
                   budget_s: float | None = 5.0) -> list[PhasePoint]:
    """Time prefill at each length (batch 1) and one decode step at each batch × context length.

    Decode points do not run a real prompt first: the cache is marked as holding T − 1 tokens
    (zeros) and one step runs on top. A step's time does not depend on the values it reads, and
    this keeps a batch-16, 1024-token point from spending minutes on its prefill.
    Returns data only; the notebooks draw it. With `device` (from `measure_device`), each point
    also carries the roof's attainable FLOP/s at its intensity.
    """
    generator = torch.Generator().manual_seed(0)
    points = []

    def add(cost, fn):
        seconds = timed(fn, lm.device, reps=reps, warmup=warmup, budget_s=budget_s)
        roof = device.attainable(cost.intensity) if device is not None else None
        points.append(PhasePoint(cost.phase, cost.batch_size, cost.length, cost.flops, cost.bytes, seconds, roof))

    for s in prefill_lengths:
        ids = torch.randint(0, lm.config.vocab_size, (1, s), generator=generator).to(lm.device)  # [1, s]
        cache = lm.new_cache(max_len=s)

        def prefill(ids=ids, cache=cache):
            cache.reset()
            lm.prefill(ids, cache)

        add(prefill_cost(lm.config, s, 1, lm.dtype), prefill)
    for b in decode_batches:
        for T in decode_contexts:
            cache = lm.new_cache(max_len=T, batch_size=b)
            token = torch.randint(0, lm.config.vocab_size, (b,), generator=generator).to(lm.device)  # [b]

            def decode(cache=cache, token=token, T=T):
                cache.reset()
                cache.advance(T - 1)  # pretend T − 1 tokens are cached (zeros)
                lm.decode_step(token, cache)

            add(decode_cost(lm.config, T, b, lm.dtype), decode)
            del cache
    return points


def format_points(points: list[PhasePoint], tr=english) -> str:
    """The points as a table; `tr`: the words' language (`teachllm.words`)."""
    lines = [tr("phase    batch length    GFLOP       MB  FLOP/B       ms  GFLOP/s    GB/s roof GFLOP/s")]
    for p in points:
        roof = f"{p.attainable_flops / 1e9:>13.1f}" if p.attainable_flops is not None else f"{'':>13}"
        lines.append(f"{pad(tr(p.phase), 8)}{p.batch_size:>6}{p.length:>7}{p.flops / 1e9:>9.2f}{p.bytes / 1e6:>9.1f}"
                     f"{p.intensity:>8.1f}{p.seconds * 1e3:>9.1f}{p.achieved_flops / 1e9:>9.1f}"
                     f"{p.achieved_bandwidth / 1e9:>8.1f}{roof}")
    return "\n".join(lines)


@torch.no_grad()
def decode_throughput(lm, ids: list[int], batch_sizes=(1, 2, 4, 8, 16), steps: int = 8, reps: int = 3,
                      budget_s: float | None = None) -> list[dict]:
    """Batched decode speed: `steps` greedy decode steps for B copies of the prompt `ids`, at each batch size.

    The prompt is prefilled once per batch size (not timed); each timed run rewinds the cache to just after
    the prompt (its slots are never overwritten) and decodes again, so every run sees the same context.
    A step's time is the median run (`timed`) ÷ steps. The one measurement behind the benchmark's batch
    table and chapter 11's. Rows: batch_size, seconds_per_step, tokens_per_s (= batch_size ÷ step time).
    """
    rows = []
    for b in batch_sizes:
        cache = lm.new_cache(max_len=len(ids) + steps, batch_size=b)
        first = lm.prefill([list(ids)] * b, cache)  # [B, V]

        def decode(cache=cache, first=first):
            cache.truncate(len(ids))  # rewind to just after the prompt
            for _ in greedy_decode(lm, first, cache, steps + 1):  # steps decode_step calls
                pass

        step = timed(decode, lm.device, reps=reps, budget_s=budget_s) / steps
        rows.append({"batch_size": b, "seconds_per_step": step, "tokens_per_s": b / step})
        del cache
    return rows
