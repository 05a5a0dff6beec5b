"""Section 5 of `python -m teachllm.bench`: the GPU fast path (issue 35) against the reference loop and transformers.

Five ways to decode greedily, in one process, on the same model, device, dtype and prompt:

    teachllm eager               generate.py's loop: KVCache, lm.decode_step, each token read back (the reference)
    teachllm fast path           lm.generate(fast=True): StaticKVCache, a CUDA graph per batch size replayed each
                                 step, ids read back every few steps (teachllm/fastpath/loop.py); on the CPU the
                                 same loop through the eager step
    teachllm compiled            torch.compile(mode="reduce-overhead") of the static-cache decode step (CUDA only)
    transformers eager           its generate(), greedy
    transformers static compiled its generate() with cache_implementation="static", whose forward it compiles (CUDA
                                 only)

For each: TTFT (a run of 1 token), decode tokens/s at batch 1 and at the largest batch
(batch × (N − 1) / (time(N) − time(1))), and the kernels a decode step launches, counted by torch.profiler as the
difference between a run of 1 + S tokens and a run of 1, divided by S. On CUDA a "kernel" is an event on the device
(kernels, copies, fills); on the CPU, where there are no launches, it is an aten operator called from Python (the
unit of dispatch overhead there). A way that cannot run here is skipped, with its reason in the report.
"teachllm fast path, model.py step" is the fast path with TEACHLLM_UNFUSED_STEP=1: the same loop and graphs over
model.py's forward instead of the fused step (teachllm/fastpath/fused_float.py), so the two rows show the fusion.

Below the table, the operations one decode step dispatches (`step_operations`): model.py's step and the fused step
on a StaticKVCache, every ATen operation counted by a dispatch mode (the layer under autograd where each call is
one operator and its arguments), and how many of them compute (all but the views, which only relabel memory). On
CUDA each computing operation is one kernel launch or about one: those are what a graph-less decode step pays for
in launches, what the issue's ~1,200 kernels a step counts. Counted on the CPU it is the same Python, not a
measurement of a GPU's kernels.
"""

from __future__ import annotations

import contextlib
import os
import statistics

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

from ..fastpath import loop
from ..fastpath.graph import decode_step, prefill
from ..fastpath.static_cache import StaticKVCache
from ..params import SamplingParams
from ..timing import clock

PROFILED_STEPS = 4  # decode steps whose kernels are counted (S above)
COMPILE = {"mode": "reduce-overhead"}  # torch.compile's arguments for "teachllm compiled" (the tests trace it eagerly)


# ---- the five ways; each is a function (prompts: list of id lists, n new tokens) → the first row's tokens ------
def teachllm_eager(lm):
    def run(prompts, n):
        return lm.generate(prompts, _greedy(n), fast=False)[0].token_ids
    return run


def teachllm_fast(lm, fused: bool = True):
    """lm.generate(fast=True); fused=False: with TEACHLLM_UNFUSED_STEP=1, over model.py's forward."""
    def run(prompts, n):
        with _environment(loop.UNFUSED_FLAG, None if fused else "1"):
            return lm.generate(prompts, _greedy(n), fast=True)[0].token_ids
    return run


@contextlib.contextmanager
def _environment(name: str, value: str | None):
    """Within: the environment variable `name` set to `value` (None: unset); as it was afterwards."""
    before = os.environ.pop(name, None)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)
        if before is not None:
            os.environ[name] = before


def teachllm_compiled(lm):
    """torch.compile(mode="reduce-overhead") of one decode step on a StaticKVCache: prefill eager, then the
    compiled step n − 1 times. The compiled function sees a view of the cache whose host count it resets itself,
    so that no Python number changes from call to call (a changing one would make it compile again)."""
    model = lm.model
    kept = {}

    def device_step(view, ids):  # ids [B, 1] → next ids [B]; only device tensors change between calls
        view._filled = 0
        return model(ids, view, last_only=True)[:, -1].argmax(dim=-1)

    @torch.no_grad()
    def run(prompts, n):
        B, S = len(prompts), len(prompts[0])
        slots = min(max(256, 1 << (S + n - 1).bit_length()), lm.config.max_position_embeddings)  # as loop.py
        key = (B, max(slots, S + n))
        if key not in kept:  # one cache and one compiled step per shape, as reduce-overhead records per shape
            cache = StaticKVCache(lm.config, key[1], B, dtype=lm.dtype, device=lm.device)
            view = object.__new__(StaticKVCache)
            view.__dict__.update(cache.__dict__)
            view.root = view
            kept[key] = cache, view, torch.compile(device_step, **COMPILE)
        cache, view, step = kept[key]
        cache.reset()
        ids = torch.tensor(prompts, device=lm.device)  # [B, S] (the bench's prompts have equal lengths)
        token = prefill(model, ids, cache).argmax(dim=-1)  # [B]
        out = [token]
        for _ in range(n - 1):
            token = step(view, token[:, None]).clone()  # [B]
            cache.root._filled += 1  # the host count, kept outside the compiled step
            out.append(token)
        return torch.stack(out, dim=1)[0].tolist()
    return run


def transformers_eager(hf):
    def run(prompts, n):
        return _hf_generate(hf, prompts, n)
    return run


def transformers_static_compiled(hf):
    def run(prompts, n):
        return _hf_generate(hf, prompts, n, cache_implementation="static")
    return run


@torch.no_grad()
def _hf_generate(hf, prompts, n, **kwargs):
    ids = torch.tensor(prompts, device=hf.device)  # [B, S]
    out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=n, min_new_tokens=n,
                      pad_token_id=0, **kwargs)
    return out[0, ids.shape[1]:].tolist()


def _greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)


def ways(lm, hf) -> dict[str, tuple[object, str | None]]:
    """name → (run function, None) or (None, why it is skipped here)."""
    cuda = lm.device.type == "cuda"
    only_cuda = "torch.compile(mode='reduce-overhead') records CUDA graphs: measured on CUDA only"
    return {"teachllm eager": (teachllm_eager(lm), None),
            "teachllm fast path": (teachllm_fast(lm), None),
            "teachllm fast path, model.py step": (teachllm_fast(lm, fused=False), None),
            "teachllm compiled": (teachllm_compiled(lm), None) if cuda else (None, only_cuda),
            "transformers eager": (transformers_eager(hf), None),
            "transformers static compiled": (transformers_static_compiled(hf), None) if cuda else (None, only_cuda)}


# ---- measuring -------------------------------------------------------------------------------------------
class OperationCount(TorchDispatchMode):
    """Counts the ATen operations run under it: `all`, and `computing`, those that are not views (a view, such as
    a transpose or a slice, relabels memory and launches no kernel)."""

    RELABELS = {"aten._unsafe_view", "aten.split", "aten.unbind", "aten.chunk"}  # views not marked as views

    def __init__(self):
        super().__init__()
        self.all = self.computing = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.all += 1
        name = str(func.overloadpacket._qualified_op_name).replace("::", ".")
        self.computing += not (func.is_view or name in self.RELABELS)
        return func(*args, **(kwargs or {}))


@torch.no_grad()
def operations(forward, config, device, dtype, prompt_len: int = 4) -> dict:
    """The ATen operations one decode step of `forward` (model.py's Transformer, or a FusedStep) dispatches on a
    StaticKVCache, batch 1, after a prompt of prompt_len tokens: {"all": ..., "computing": ...}."""
    cache = StaticKVCache(config, prompt_len + 2, 1, dtype=dtype, device=device)
    ids = torch.arange(4, 4 + prompt_len, device=device)[None]  # [1, prompt_len]
    token = decode_step(forward, prefill(forward, ids, cache).argmax(-1), cache)  # [1] one step untimed
    with OperationCount() as counted:
        decode_step(forward, token, cache)
    return {"all": counted.all, "computing": counted.computing}


def step_operations(lm) -> dict:
    """operations() for model.py's step and for the fused step, where the model can be fused."""
    counts = {"model.py step": operations(lm.model, lm.config, lm.device, lm.dtype)}
    step, which = loop.step_for(lm)
    if step is not lm.model:
        counts["fused step"] = operations(step, lm.config, lm.device, lm.dtype)
    else:
        counts["fused step"] = {"skipped": which}
    return counts


def kernels_per_step(run, prompts, device, steps: int = PROFILED_STEPS) -> float:
    """Kernels (CUDA) or aten operators called from Python (CPU) one decode step launches: a profiled run of
    1 + steps tokens minus one of 1 token, divided by steps."""
    def count(n):
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            run(prompts, n)
            if device.type == "cuda":
                torch.cuda.synchronize()
        events = prof.events()
        if device.type == "cuda":
            return sum(1 for e in events if e.device_type == DeviceType.CUDA)
        return sum(1 for e in events if e.name.startswith("aten::") and e.cpu_parent is None)
    return (count(1 + steps) - count(1)) / steps


def speed(run, prompts, n: int, reps: int, device) -> dict:
    """TTFT (median time of a 1-token run) and decode tokens/s, batch × (n − 1) / (time(n) − time(1))."""
    times = {1: [], n: []}
    for _ in range(reps):
        for k in (1, n):
            start = clock(device)
            run(prompts, k)
            times[k].append(clock(device) - start)
    ttft, total = statistics.median(times[1]), statistics.median(times[n])
    rate = len(prompts) * (n - 1) / (total - ttft) if total > ttft else float("nan")  # nan: a busy moment hid it
    return {"ttft_s": ttft, "decode_tokens_per_s": rate}


def fast_section(lm, hf, ids: list[int], new_tokens: int, batch_sizes=(1, 32), reps: int = 3) -> dict:
    """Every way that runs here: TTFT, decode tokens/s at each batch size (copies of the prompt), kernels per
    step at batch 1, and whether its tokens are the reference's; the ways that cannot run, with the reason."""
    rows = {}
    reference = None
    for name, (run, skipped) in ways(lm, hf).items():
        if skipped:
            rows[name] = {"skipped": skipped}
            continue
        try:
            tokens = run([ids], new_tokens)  # the warm-up (and, compiled, the compiling), and the tokens
            row = {"tokens": tokens}
            for b in batch_sizes:
                prompts = [list(ids)] * b
                run(prompts, new_tokens)  # warm-up at this batch size (a fast path records its graphs here)
                measured = speed(run, prompts, new_tokens, reps, lm.device)
                row[f"batch_{b}"] = measured
            row["ttft_s"] = row[f"batch_{batch_sizes[0]}"]["ttft_s"]
            row["kernels_per_step"] = kernels_per_step(run, [ids], lm.device)
        except Exception as error:  # a way that fails here (a compiler missing, say) is reported, not fatal
            rows[name] = {"skipped": f"failed here: {type(error).__name__}: {str(error).splitlines()[0][:200]}"}
            continue
        reference = tokens if reference is None else reference
        row["same_tokens"] = tokens == reference
        rows[name] = row
    for row in rows.values():
        row.pop("tokens", None)
    return {"batch_sizes": list(batch_sizes), "new_tokens": new_tokens, "rows": rows,
            "kernel_unit": "device kernels (CUDA events)" if lm.device.type == "cuda"
            else "aten operators called from Python (CPU: no kernel launches)",
            "operations_per_step": step_operations(lm), "device": lm.device.type}


def format_fast(f: dict) -> str:
    b = f["batch_sizes"]
    head = "".join(f"{'tok/s @' + str(x):>14}" for x in b)
    lines = [f"5. the GPU fast path, greedy, {f['new_tokens']} new tokens   TTFT (ms){head}   kernels/step"
             "   same tokens",
             f"   (kernels: {f['kernel_unit']})"]
    for name, row in f["rows"].items():
        if "skipped" in row:
            lines.append(f"   {name:<34} skipped: {row['skipped']}")
            continue
        speeds = "".join(f"{row[f'batch_{x}']['decode_tokens_per_s']:>14.1f}" for x in b)
        lines.append(f"   {name:<34}{row['ttft_s'] * 1e3:>10.1f}{speeds}{row['kernels_per_step']:>15.0f}"
                     f"{str(row['same_tokens']):>14}")
    if "operations_per_step" in f:
        lines.append(f"   operations per decode step (batch 1, ATen operations dispatched, counted on {f['device']}):")
        for name, count in f["operations_per_step"].items():
            lines.append(f"      {name:<16}skipped: {count['skipped']}" if "skipped" in count else
                         f"      {name:<16}{count['all']:>6,} ({count['computing']:,} computing, the rest views)")
        if f["device"] != "cuda":
            lines += ["      on CUDA each computing operation launches about one kernel (what the issue's ~1,200",
                      "      kernels a step counts); these counts are the CPU's Python, not a GPU measurement"]
    return "\n".join(lines)
