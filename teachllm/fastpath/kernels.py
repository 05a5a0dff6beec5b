"""Which kernel multiplies by a GGUF matrix on this CPU: the candidates, their error, and the fastest.

    lm = tl.load(weights="gguf")              # kernel="auto": the fastest faithful kernel per group of matrices,
    print(lm.describe())                      #   measured once on this machine, then read from the cache
    tl.load(weights="gguf", kernel="int4")    # one kernel for every matrix, to compare

A quantised layer (teachllm.fastpath.quant) keeps the file's blocks exactly. To multiply by them it needs them in the
layout some kernel reads, and which kernel is fastest depends on the CPU: its vector instructions (AVX2,
AVX-512 and its VNNI and BF16 extensions, ARM's NEON), its caches and its memory. So nothing is assumed:
`choose` times each group of same-shaped matrices on each candidate, inside a whole decode step's worth of
matrix calls (so that the weights come from memory as in a real step), and keeps the fastest of those that
stay faithful (on a near-tie, the one closest to float32). PyTorch's int4 kernel is written for AVX-512
first; with AVX2 only (most laptops) it runs at about half its speed, which is why teachllm carries kernels of
its own, in C.

The candidates (`KERNELS`):

    int4          the file's own 4-bit integers, PyTorch's packed int4 kernel (bfloat16 activations in, bfloat16
                  out); the Q8_0 head as two 4-bit digits, two passes. Reads 0.5–1 byte a weight.
    avx2          the file's own integers (4-bit and 8-bit alike, one pass), teachllm's C kernel for CPUs with AVX2
                  and FMA (csrc/gemv_avx2.c, built on first use by native.py): activations rounded
                  to 16-bit integers per block of 32, integer dot products, float32 out. 0.63–1.06 bytes a weight
                  (the file's own float16 scales). It can apply the RMSNorm before it as it reads the rows.
    avx512        the same arithmetic with 512-bit vectors, two outputs per vector (csrc/gemv_avx512.c),
                  for CPUs with AVX-512 (F, BW, VL, DQ) and VNNI, unless ATEN_CPU_CAPABILITY holds PyTorch below.
    float16       the weight de-quantised to float16, fbgemm's packed float16 GEMM with float32 activations: each
                  weight rounded to 11 significant bits (Q4_1's values need up to 15). 2 bytes a weight.
    bfloat16      de-quantised to bfloat16 (8 significant bits), activations too. 2 bytes a weight.
    float32       de-quantised to float32: the reference itself, 4 bytes a weight.
    int8          re-quantised to int8 with one scale per row (PyTorch's int8 weight-only kernel).
    dynamic-int8  fbgemm's dynamic quantisation: int8 weights per row, and the activations rounded to 8 bits
                  with one scale per call.

A kernel is *faithful* when the model on it stays within tests/test_kernels.py's bound against float32 (mean KL
≤ 3e-3 over the bench's 20 prompts, greedy tokens float32's until a near-tie). The first six are; int8 and
dynamic-int8 are not (the test measures and asserts both), so `choose` never picks them: force them to see why.
Each kernel also has a `bound` on one matrix: the relative error of its output against float32 on probe
activations, checked for every matrix before a kernel is used, so that a kernel that computes wrongly on some
CPU is refused rather than timed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..words import english
from . import native

GROUP = 32  # weights per GGUF block, for both formats
AUTO = "auto"


# ---- the candidates: a weight in each kernel's layout, and how to multiply by it --------------------------
class Int4(nn.Module):
    """The stored 4-bit integers, packed for `torch._weight_int4pack_mm_for_cpu`.

    The kernel computes w = (q − 8)·s + z per group of 32, which is Q4_1 (w = d·q + m) with s = d, z = m + 8d.
    Q8_0 (w = d·q, q in −128..127) has no CPU kernel with a scale per 32 weights, so it is written as two 4-bit
    digits, q + 128 = 16·hi + lo, multiplied twice: w = 16d·(hi − 8) + d·(lo − 8) + 8d. Activations enter as
    bfloat16 (the kernel's fast path; with float32 it was about 45× slower per call) and so do the per-group
    scales and zeros; the output leaves as bfloat16 and becomes float32 again.
    """

    def __init__(self, layer, weight=None):
        super().__init__()
        if layer.format == "Q4_1":
            d, m = layer.d.float(), layer.m.float()  # [N, G]
            digits = [(layer.q.to(torch.int32), d, m + 8 * d)]
        else:  # Q8_0
            unsigned, d = layer.q.to(torch.int32) + 128, layer.d.float()  # [N, K] in 0..255, [N, G]
            digits = [(unsigned >> 4, 16 * d, torch.zeros_like(d)), (unsigned & 0x0F, d, 8 * d)]
        for i, (q, scale, zero) in enumerate(digits):
            self.register_buffer(f"packed{i}", torch._convert_weight_to_int4pack_for_cpu(q, 1))
            sz = torch.stack([scale, zero], dim=-1).transpose(0, 1).contiguous().to(torch.bfloat16)  # [G, N, 2]
            self.register_buffer(f"scales_and_zeros{i}", sz)
        self.digits = len(digits)
        self.nbytes = sum(b.nbytes for b in self.buffers())  # what one call reads

    takes = torch.bfloat16  # the activations' dtype `mm` wants

    def mm(self, rows: torch.Tensor) -> torch.Tensor:
        """rows [M, K] bfloat16 → [M, N] bfloat16."""
        y = torch._weight_int4pack_mm_for_cpu(rows, self.packed0, GROUP, self.scales_and_zeros0)
        if self.digits == 2:
            y = y + torch._weight_int4pack_mm_for_cpu(rows, self.packed1, GROUP, self.scales_and_zeros1)
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mm(x.reshape(-1, x.shape[-1]).to(self.takes)).to(x.dtype).view(*x.shape[:-1], -1)


class Dense(nn.Module):
    """The de-quantised weight in `dtype`, multiplied by F.linear (MKL or oneDNN); activations in `dtype` too."""

    def __init__(self, layer, dtype: torch.dtype, weight=None):
        super().__init__()
        weight = layer.dequantize() if weight is None else weight  # [N, K] float32
        self.register_buffer("weight", weight.to(dtype))  # [N, K]
        self.nbytes = self.weight.nbytes
        self.takes = dtype

    def mm(self, rows: torch.Tensor) -> torch.Tensor:
        return F.linear(rows, self.weight)  # [M, N] in the weight's dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x.to(self.takes), self.weight).to(x.dtype)


class Float16(nn.Module):
    """The de-quantised weight as float16, packed by fbgemm; float32 activations, float32 arithmetic."""

    def __init__(self, layer, weight=None):
        super().__init__()
        weight = layer.dequantize() if weight is None else weight  # [N, K] float32
        self.packed = torch.ops.quantized.linear_prepack_fp16(weight, None)  # fbgemm's own object
        self.nbytes = 2 * layer.out_features * layer.in_features

    takes = torch.float32

    def mm(self, rows: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized.linear_dynamic_fp16(rows, self.packed)  # [M, N] float32

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mm(x.reshape(-1, x.shape[-1]).float()).to(x.dtype).view(*x.shape[:-1], -1)


class Int8(nn.Module):
    """Re-quantised to int8, one scale per row (the row's largest |w| / 127), for `torch._weight_int8pack_mm`."""

    def __init__(self, layer, weight=None):
        super().__init__()
        w = layer.dequantize() if weight is None else weight  # [N, K] float32
        scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127  # [N]
        self.register_buffer("q", torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8))  # [N, K]
        self.register_buffer("scale", scale.to(torch.bfloat16))
        self.nbytes = self.q.nbytes + self.scale.nbytes

    takes = torch.bfloat16

    def mm(self, rows: torch.Tensor) -> torch.Tensor:
        return torch._weight_int8pack_mm(rows, self.q, self.scale)  # [M, N] bfloat16

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mm(x.reshape(-1, x.shape[-1]).to(self.takes)).to(x.dtype).view(*x.shape[:-1], -1)


class DynamicInt8(nn.Module):
    """fbgemm's dynamic quantisation (torch.ao): int8 weights per row; each call rounds its activations to
    8 bits with one scale and zero point for the whole call."""

    def __init__(self, layer, weight=None):
        super().__init__()
        w = layer.dequantize() if weight is None else weight  # [N, K] float32
        scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127  # [N]
        with warnings.catch_warnings():  # torch.ao's quantised tensors are deprecated; this kernel shows why not
            warnings.simplefilter("ignore", UserWarning)
            q = torch.quantize_per_channel(w, scale.double(), torch.zeros_like(scale, dtype=torch.long), 0,
                                           torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(q, None)
        self.nbytes = layer.out_features * layer.in_features + 8 * layer.out_features

    takes = torch.float32

    def mm(self, rows: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized.linear_dynamic(rows, self.packed, True)  # reduce_range, as torch.ao on x86

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mm(x.reshape(-1, x.shape[-1]).float()).to(x.dtype).view(*x.shape[:-1], -1)


class Avx2(nn.Module):
    """The file's own integers, multiplied by teachllm's C kernel (csrc/gemv_avx2.c, built on first use
    by native.py): float32 activations in, each block of 32 rounded to 16-bit integers with its own scale,
    integer dot products with AVX2, float32 scales and sums, float32 out. Q4_1 and Q8_0 alike, in one pass."""

    c_file = "avx2"
    work_per_row = 0.5  # floats of scratch per activation: each as one int16

    def __init__(self, layer, weight=None):
        super().__init__()
        self.lib = native.library(self.c_file)  # RuntimeError where it cannot run: no AVX2, no compiler
        self.q4 = layer.format == "Q4_1"
        width, N = (16 if self.q4 else 32), layer.out_features  # bytes of integers per block
        pad = -N % 4  # the C file takes outputs four at a time; the padding rows are zero

        def tiled(t: torch.Tensor) -> torch.Tensor:  # [N, G, b] → [N/4, G, 4·b]: one block of four outputs
            t = F.pad(t, (0, 0, 0, 0, 0, pad))
            return t.view(-1, 4, *t.shape[1:]).transpose(1, 2).flatten(2)

        integers = self.arrange(tiled(layer.blocks[..., -width:]))  # [N/4, G, 4·width]
        scales = [tiled(layer.blocks[..., 0:2])]  # [N/4, G, 4·2]: d, the file's float16 bytes
        if self.q4:
            scales.append(tiled(layer.blocks[..., 2:4]))  # m, likewise
        self.register_buffer("tiles", torch.cat([integers, *scales], dim=-1).contiguous())  # [N/4, G, bytes]
        self.out_features, self.in_features = N, layer.in_features
        self.nbytes = self.tiles.nbytes

    def arrange(self, integers: torch.Tensor) -> torch.Tensor:
        """The integers of a tile in the order the C file reads them: as the file has them."""
        return integers

    takes = torch.float32

    def mm(self, rows: torch.Tensor, norm: nn.Module | None = None) -> torch.Tensor:
        """rows [M, K] float32 → [M, N] float32; with `norm` (an RMSNorm), norm(rows) → [M, N], the norm applied by
        the C file as it reads the rows."""
        rows = rows.contiguous()
        M, K, G = rows.shape[0], self.in_features, self.in_features // GROUP
        y = torch.empty(M, self.out_features)  # [M, N]
        work = torch.empty(M * (int(K * self.work_per_row) + 2 * G + K))  # int16 activations, scales, sums, norm
        weight, eps = (None, 0.0) if norm is None else (norm.weight.data_ptr(), norm.eps)
        self.lib.gemv(rows.data_ptr(), self.tiles.data_ptr(), self.q4, work.data_ptr(), y.data_ptr(), M,
                      self.out_features, G, torch.get_num_threads(), weight, eps)
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mm(x.reshape(-1, x.shape[-1]).float()).to(x.dtype).view(*x.shape[:-1], -1)


class Avx512(Avx2):
    """The same arithmetic with 512-bit vectors (csrc/gemv_avx512.c): each vector holds one block of two
    outputs. The 8-bit head's integers are re-ordered to match: in each pair of outputs, the first halves of both
    blocks, then the second halves."""

    c_file = "avx512"
    work_per_row = 1.0  # each activation twice as int16: once beside each half of a pair

    def arrange(self, integers: torch.Tensor) -> torch.Tensor:
        if self.q4:
            return integers
        T, G = integers.shape[:2]
        pairs = integers.view(T, G, 2, 2, 2, 16)  # [T, G, pair, output, half, 16]
        return pairs.transpose(3, 4).reshape(T, G, 128)  # [T, G, pair, half, output, 16]


@dataclass(frozen=True)
class Kernel:
    name: str
    make: type  # (layer, its float32 weight or None) → nn.Module holding the weight in this kernel's layout
    faithful: bool  # the model on it stays within tests/test_kernels.py's bound (so `choose` may pick it)
    bound: float  # largest relative error of one matrix's output against float32, on probe activations


class Names(dict):
    """A dict keyed by kernel names: `x in KERNELS` is False for anything but a string (a list, say), where a dict
    would raise "unhashable type", so that the check of a `kernel` argument can say what was wrong."""

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and super().__contains__(key)


# The bounds sit about three times above the largest error measured on the model's matrices (layers 0 and 29
# and the head, random activations and a real hidden state, under AVX-512 and AVX2 dispatch alike): int4 3.7e-3,
# avx2 8.1e-5 (avx512 sums the same integer products), float16 2.5e-4, bfloat16 3.1e-3, float32 0, int8 1.4e-2,
# dynamic-int8 3.3e-2.
KERNELS: dict[str, Kernel] = Names({k.name: k for k in (
    Kernel("int4", Int4, True, 1e-2),
    Kernel("avx2", Avx2, True, 3e-4),
    Kernel("avx512", Avx512, True, 3e-4),
    Kernel("float16", Float16, True, 2e-3),
    Kernel("bfloat16", lambda layer, weight=None: Dense(layer, torch.bfloat16, weight), True, 1e-2),
    Kernel("float32", lambda layer, weight=None: Dense(layer, torch.float32, weight), True, 1e-5),
    Kernel("int8", Int8, False, 3e-2),
    Kernel("dynamic-int8", DynamicInt8, False, 1e-1),
)})
FAITHFUL = tuple(name for name, k in KERNELS.items() if k.faithful)


def probe_error(layer, impl: nn.Module, weight: torch.Tensor | None = None, rows: int = 4) -> float:
    """‖impl(x) − x·Wᵀ‖ / ‖x·Wᵀ‖ for random activations x [rows, K], W the layer's float32 weight."""
    x = torch.randn(rows, layer.in_features, generator=torch.Generator().manual_seed(0))  # [rows, K]
    reference = x @ (layer.dequantize() if weight is None else weight).T  # [rows, N]
    return float((impl(x) - reference).norm() / reference.norm())


def build(layer, name: str, check: bool = True, weight: torch.Tensor | None = None) -> nn.Module:
    """The layer's weight in kernel `name`'s layout; ValueError if this PyTorch or CPU cannot run it, or (with
    `check`) if it computes outside the kernel's bound. `weight`: the layer's float32 weight, if at hand."""
    try:
        impl = KERNELS[name].make(layer, weight)
        error = probe_error(layer, impl, weight) if check else 0.0
    except (RuntimeError, NotImplementedError) as failure:  # e.g. no fbgemm in this build (ARM)
        raise ValueError(f"kernel {name} does not run here: {str(failure).splitlines()[0]}") from None
    if not error <= KERNELS[name].bound:
        raise ValueError(f"kernel {name} is off by {error:.1e} on a probe, over its bound {KERNELS[name].bound:g}")
    return impl


# ---- groups: the matrices that share a format and shape share a kernel -----------------------------------
@dataclass
class Group:
    """Matrices of one format and shape (say every layer's gate_proj and up_proj); one kernel serves them all."""
    format: str  # "Q4_1" or "Q8_0"
    out_features: int
    in_features: int
    names: list[str] = field(default_factory=list)  # module paths in the model
    kernel: str = "int4"
    why: str = ""
    step_ms: dict[str, float] = field(default_factory=dict)  # ms its matrices take in a decode step, per kernel
    refused: dict[str, str] = field(default_factory=dict)  # kernel → why it was not considered

    @property
    def label(self) -> str:
        roles = sorted({n.rsplit(".", 1)[-1] for n in self.names})
        return f"{', '.join(roles)} ×{len(self.names)}"


def groups_of(model: nn.Module) -> list[Group]:
    """The quantised matrices of `model`, grouped by format and shape, in the order the model runs them."""
    found: dict[tuple, Group] = {}
    for name, module in model.named_modules():
        if hasattr(module, "use_kernel"):
            key = (module.format, module.out_features, module.in_features)
            found.setdefault(key, Group(*key)).names.append(name)
    return list(found.values())


def use(model: nn.Module, group: Group, impls: dict[str, nn.Module] | None = None, kernel: str | None = None):
    """Put `group` on `kernel` (default its own): the given weights for each matrix, or newly built ones."""
    kernel = kernel or group.kernel
    for name in group.names:
        layer = model.get_submodule(name)
        if impls is not None:
            layer.use_kernel(kernel, impls[name])
        elif layer.kernel != kernel:
            layer.use_kernel(kernel, build(layer, kernel))


# ---- choosing: each group timed on each kernel, inside a step's worth of matrix calls ----------------------
@dataclass
class Choice:
    """What `configure` decided for a model, and on what evidence."""
    groups: list[Group]
    machine: dict  # the CPU and software the times were measured on (the cache key)
    how: str  # "measured", "cached" or "forced"
    seconds: float = 0.0  # time the measurement took (when measured)
    when: str = ""

    def describe(self, tr=english) -> str:
        """The machine, then one row per group: its kernel and why; `tr`: the words' language (teachllm.words)."""
        m = self.machine
        how = {"measured": tr("measured"), "cached": tr("cached"), "forced": tr("forced")}.get(self.how, self.how)
        threads = tr("{n} thread", n=1) if m["threads"] == 1 else tr("{n} threads", n=m["threads"])
        head = tr("kernels on {cpu} ({capability} dispatch, {threads}, torch {torch}): {how}", cpu=m["cpu"],
                  capability=m["capability"], threads=threads, torch=m["torch"], how=how)
        if self.how != "forced":
            head += tr(" {when}, in {seconds:.1f} s", when=self.when, seconds=self.seconds)
        lines = [head, tr("  matrices                             shape  kernel    why")]
        for g in self.groups:
            shape = f"{g.in_features} → {g.out_features}"
            lines.append(f"  {g.label:<28}{shape:>14}  {g.kernel:<10}{reason(g, tr)}")
        refused = sorted({f"{k} ({why})" for g in self.groups for k, why in g.refused.items()})
        if refused:
            lines.append(tr("  not considered: {kernels}", kernels="; ".join(refused)))
        return "\n".join(lines)


def reason(group: Group, tr=english) -> str:
    """Why `group` runs on its kernel (what `group.why` holds), in `tr`'s language: forced, or the fastest or a
    near-tie of the milliseconds measured on each kernel."""
    if not group.step_ms:
        if KERNELS[group.kernel].faithful:
            return tr("forced")
        return tr("forced: outside the faithful bound, for comparison")
    kept, fastest = group.kernel, min(group.step_ms, key=group.step_ms.get)
    others = ", ".join(f"{k} {ms:.1f}" for k, ms in sorted(group.step_ms.items(), key=lambda kv: kv[1]) if k != kept)
    if kept == fastest:
        return tr("fastest: {ms:.2f} ms a step (others: {others})", ms=group.step_ms[kept], others=others)
    return tr("a tie, closest to float32: {ms:.2f} ms a step (others: {others})", ms=group.step_ms[kept], others=others)


def machine() -> dict:
    """What the fastest kernel depends on: the CPU, the instruction set PyTorch dispatches to, the threads and
    the software. Two machines that agree on all of it share a measurement."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        text = cpuinfo.read_text(errors="replace")
        cpu = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), cpu)
    held = {v: os.environ[v] for v in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS",
                                         "FBGEMM_ENABLE_INSTRUCTIONS") if v in os.environ}
    return {"cpu": cpu, "flags": hashlib.sha256(" ".join(sorted(native.cpu_flags())).encode()).hexdigest()[:16],
            "capability": torch.backends.cpu.get_cpu_capability(), "dispatch": held,
            "threads": torch.get_num_threads(), "torch": torch.__version__, "machine": platform.machine(),
            "candidates": list(FAITHFUL), "c_kernel": native.digest(), "compiler": native.compiler() is not None,
            "rule": RULE}


def measure(model: nn.Module, groups: list[Group], group: Group, impls: dict[str, dict[str, nn.Module]],
            steps: int = 3, rounds: int = 3) -> dict[str, float]:
    """Milliseconds `group`'s matrices take in one decode step, on each kernel in `impls` (kernel → weights
    per matrix), the other groups on their current kernels.

    A step here is every quantised matrix of the model called once, in the model's order, on one row of
    activations: what a decode step multiplies, without the rest of it. Only `group`'s calls are timed; the
    others run between them, so its weights come from memory as they do in a real step (a micro-benchmark
    that repeats one matrix would read it from the cache). The kernels take turns, round after round, in a
    rotating order; each turn keeps the fastest of its steps (on a shared machine, interference only adds).
    After the first round, a kernel more than SLOWER times the fastest drops out."""
    order = [n for n, m in model.named_modules() if hasattr(m, "use_kernel")]  # the order the model runs them
    timed = set(group.names)
    rows = {n: torch.randn(1, model.get_submodule(n).in_features) for n in order}  # [1, K] each
    times: dict[str, list[float]] = {k: [] for k in impls}
    for r in range(rounds):
        racing = [k for k in times if r == 0 or min(times[k]) <= SLOWER * min(min(v) for v in times.values())]
        for kernel in racing[r % len(racing):] + racing[:r % len(racing)]:
            use(model, group, impls[kernel], kernel)
            layers = [model.get_submodule(n) for n in order]
            spent = []
            for _ in range(steps + 1):  # the first step is a warm-up: new weights, new memory
                spent.append(0.0)
                for n, layer in zip(order, layers, strict=True):
                    start = time.perf_counter()
                    layer(rows[n])
                    if n in timed:
                        spent[-1] += time.perf_counter() - start
            times[kernel].append(min(spent[1:]))
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}


SLOWER = 1.5


def matmul_ms(model: nn.Module, steps: int = 5) -> float:
    """Milliseconds a decode step spends in its quantised matrices: each called once on one row, in the model's
    order, the fastest of `steps` passes. The rest of a step (norms, RoPE, attention, the cache, bookkeeping)
    is what a whole step takes beyond this."""
    layers = [m for m in model.modules() if hasattr(m, "use_kernel")]
    rows = [torch.randn(1, layer.in_features) for layer in layers]  # [1, K] each
    best = float("inf")
    with torch.no_grad():
        for _ in range(steps + 1):
            start = time.perf_counter()
            for layer, row in zip(layers, rows, strict=True):
                layer(row)
            best = min(best, time.perf_counter() - start) if _ else best
    return 1e3 * best


RULE = 2  # how `pick` decides; a saved choice made by another rule is measured again
TIE = 0.03  # kernels within this share of the fastest count as a tie, and the one closest to float32 wins it


def pick(step_ms: dict[str, float]) -> str:
    """The kernel to keep, given each candidate's ms a step: among those within TIE of the fastest (a difference
    that small is within the noise of a shared machine), the most faithful, i.e. the one with the smallest
    bound (then the faster)."""
    best = min(step_ms.values())
    near = [k for k, ms in step_ms.items() if ms <= best / (1 - TIE)]
    return min(near, key=lambda k: (KERNELS[k].bound, step_ms[k]))


def choose(model: nn.Module, groups: list[Group], candidates=FAITHFUL) -> None:
    """For each group in turn (the others on what was chosen before), time its matrices on every candidate
    that runs here within its bound, and keep the fastest; on a near-tie, the most faithful (`pick`)."""
    for group in groups:
        impls: dict[str, dict[str, nn.Module]] = {k: {} for k in candidates}
        for i, name in enumerate(group.names):
            layer = model.get_submodule(name)
            weight = layer.dequantize()  # [N, K] float32, shared by the kernels that start from it
            for kernel in [k for k in candidates if k in impls]:
                if kernel == layer.kernel:
                    impls[kernel][name] = layer.impl
                    continue
                try:  # the probe on the group's first matrix: a kernel that computes wrongly here does so on all
                    impls[kernel][name] = build(layer, kernel, check=i == 0, weight=weight)
                except ValueError as refusal:
                    group.refused[kernel] = str(refusal)
                    del impls[kernel]
        group.step_ms = measure(model, groups, group, impls)
        group.kernel = kept = pick(group.step_ms)
        group.why = reason(group)
        use(model, group, impls[kept], kept)


# ---- the cache: one measurement per machine ----------------------------------------------------------------
def cache_file(model_key: str, facts: dict) -> Path:
    from ..checkpoints.convert import cache_dir  # here: the cache folder is read from the environment at call time

    digest = hashlib.sha256(json.dumps([model_key, facts], sort_keys=True).encode()).hexdigest()[:20]
    return cache_dir() / "kernels" / f"{digest}.json"


class Unfit(ValueError):
    """A saved choice that cannot be used: the message says why."""


def read_choice(path: Path, groups: list[Group], facts: dict) -> dict | None:
    """Fill `groups` from the choice saved at `path`, and return the file's record ("seconds", "when"); None where
    there is none (nothing said), or where it cannot be trusted (a warning says why, and it is measured again):
    in a linked folder, not what `save_choice` writes, measured on another machine than `facts`, or naming a
    kernel that is not faithful."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        native.refuse_link(path.parent)
        if path.is_symlink():
            raise Unfit("it is a link, not a file teachllm wrote")
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError) as failure:
            raise Unfit(f"it cannot be read as JSON ({failure})") from None
        fit(saved, groups, facts)
    except (Unfit, RuntimeError) as reason:
        warnings.warn(f"the saved kernel choice {path} is not used ({reason}); measuring the kernels again",
                      stacklevel=3)
        return None
    by_key = {(s["format"], s["out_features"], s["in_features"]): s for s in saved["groups"]}
    for g in groups:
        s = by_key[(g.format, g.out_features, g.in_features)]
        g.kernel, g.why, g.step_ms, g.refused = s["kernel"], s["why"], s["step_ms"], s["refused"]
    return saved


def fit(saved, groups: list[Group], facts: dict) -> None:
    """Unfit, saying why, unless `saved` is what `save_choice` writes, for this machine and these groups, with a
    faithful kernel for each."""
    def number(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if not isinstance(saved, dict) or not number(saved.get("seconds")) or not isinstance(saved.get("when"), str) \
            or not isinstance(saved.get("groups"), list) or not all(isinstance(s, dict) for s in saved["groups"]):
        raise Unfit("it is not a saved choice: a JSON object with 'machine', 'seconds', 'when' and 'groups'")
    if saved.get("machine") != facts:
        raise Unfit("it was measured on another machine, or with other software")
    by_key = {(s.get("format"), s.get("out_features"), s.get("in_features")): s for s in saved["groups"]}
    for g in groups:
        s = by_key.get((g.format, g.out_features, g.in_features))
        if s is None:
            raise Unfit(f"it has no kernel for the {g.format} matrices {g.in_features} → {g.out_features}")
        if s.get("kernel") not in FAITHFUL:
            raise Unfit(f"kernel {s.get('kernel')!r} is not one of the faithful kernels {', '.join(FAITHFUL)}")
        step_ms, refused = s.get("step_ms"), s.get("refused")
        if not isinstance(s.get("why"), str) or not isinstance(step_ms, dict) or not isinstance(refused, dict) \
                or not all(isinstance(k, str) and number(v) for k, v in step_ms.items()) \
                or not all(isinstance(k, str) and isinstance(v, str) for k, v in refused.items()):
            raise Unfit(f"the entry for {g.format} {g.in_features} → {g.out_features} is not what save_choice writes")


def save_choice(path: Path, choice: Choice) -> None:
    """Write the choice next to the converted checkpoints, listed in its folder's manifest (native.record), so that
    `make clean-cache` removes it with them. RuntimeError if the folder is a link, as for the C kernels."""
    folder = path.parent
    native.refuse_link(folder)
    folder.mkdir(parents=True, exist_ok=True)
    groups = [{k: v for k, v in asdict(g).items() if k != "names"} for g in choice.groups]
    text = json.dumps({"machine": choice.machine, "seconds": choice.seconds, "when": choice.when,
                       "groups": groups}, indent=1)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    f = open(temporary, "x")  # "x": a new file, never through a link or a file someone left at that name
    try:
        with f:
            f.write(text)
        temporary.replace(path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    native.record(path, hashlib.sha256(text.encode()).hexdigest())


def configure(lm, kernel: str = AUTO, model_key: str = "") -> Choice:
    """Put every quantised matrix of `lm` on a kernel: `kernel` for all of them, or with "auto" the fastest
    faithful one per group, read from the cache or measured now (a few seconds) and saved there."""
    if kernel != AUTO and kernel not in KERNELS:
        raise ValueError(f"kernel={kernel!r}: kernel must be 'auto' or one of {', '.join(KERNELS)} (a name, as a "
                         "string)")
    groups, facts = groups_of(lm.model), machine()
    if kernel != AUTO:
        for g in groups:
            g.kernel = kernel
            g.why = reason(g)  # no times: forced
            use(lm.model, g)
        return Choice(groups, facts, "forced")
    path = cache_file(model_key, facts)
    saved = read_choice(path, groups, facts)
    if saved is not None:
        try:
            for g in groups:
                use(lm.model, g)
            return Choice(groups, facts, "cached", saved["seconds"], saved["when"])
        except ValueError as refusal:  # a kernel that cannot run now (say, the C compiler has gone)
            warnings.warn(f"the saved kernel choice {path} cannot be used here ({refusal}); measuring the kernels "
                          "again", stacklevel=2)
            groups = groups_of(lm.model)
    start = time.perf_counter()
    for g in groups:  # start from the file's own integers, then improve group by group
        use(lm.model, g, kernel="int4")
    with torch.no_grad():
        choose(lm.model, groups)
    choice = Choice(groups, facts, "measured", time.perf_counter() - start, time.strftime("%Y-%m-%d"))
    try:
        save_choice(path, choice)
    except OSError:
        pass  # a read-only cache: measure again next time
    except RuntimeError as refusal:  # a linked folder
        warnings.warn(f"the kernel choice is not saved: {refusal}", stacklevel=2)
    return choice
