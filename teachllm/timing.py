"""Timing on any device: wait for queued work, read the clock, take the median of a few runs.

GPU work is asynchronous: a CUDA call returns once the kernel is queued, not once it is done. Every
timing in teachllm reads the clock through `clock`, which first waits for the device to catch up;
without that one times only the launch.
"""

from __future__ import annotations

import statistics
import time

import torch


def synchronize(device: str | torch.device = "cpu") -> None:
    """Wait until the device has finished the work queued so far (a no-op on the CPU)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(device: str | torch.device = "cpu") -> float:
    """time.perf_counter() after the device has caught up: take two and subtract to time a region."""
    synchronize(device)
    return time.perf_counter()


def timed(fn, device: str | torch.device = "cpu", reps: int = 5, warmup: int = 1,
          budget_s: float | None = None) -> float:
    """Median seconds of `fn()` over `reps` runs, after `warmup` untimed runs.

    With `budget_s`, stops repeating once that many seconds have been spent on timed runs
    (at least one timed run always happens), so a slow case does not take the whole benchmark.
    """
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(max(1, reps)):
        start = clock(device)
        fn()
        times.append(clock(device) - start)
        if budget_s is not None and sum(times) >= budget_s:
            break
    return statistics.median(times)
