"""For every pytest run of this repository (the tests, and nbval on the notebooks): the run ends with its peak
resident memory and its slowest files, so that it says what memory and time it needs (`make test` must fit a
student's 8 GB laptop), and the memory a test file freed (or a test that grew the process) is given back to the
system before the next one starts.

TEACHLLM_TEST_MEMORY=1 also lists each file's peak and what stayed resident after it.
"""

import os
import time

import pytest

MODULE_PEAKS = {}  # test module → (peak resident memory while its tests ran, resident after it), GiB
MODULE_SECONDS = {}  # test module → wall seconds from the end of the module before it to its own end
_LAST_END = [time.perf_counter()]


def _status_gib(field: str) -> float:
    """VmRSS or VmHWM of this process in GiB (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            line = next(x for x in f if x.startswith(field + ":"))
    except (OSError, StopIteration):
        return 0.0
    return int(line.split()[1]) / 2**20


def release_memory() -> None:
    """Give freed memory back to the system: the garbage collector first (models in reference cycles), then glibc's
    malloc_trim, which returns the free pages of its heaps (a freed model otherwise stays counted in the process)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        pass


def pytest_collection_finish(session):
    """The first module's time starts when its tests do, not when collection did."""
    _LAST_END[0] = time.perf_counter()


GREW_GIB = 0.2  # a test after which the process holds this much more than before it: release what it freed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """After a test that left the process GREW_GIB larger, release what it freed: a model it loaded can still be
    held by a reference cycle (a script's namespace run by runpy, an exception's traceback kept by pytest.raises)
    until the garbage collector's next full pass, and the next test's peak would stand on it.
    After a test file's last test, once pytest has dropped everything it held for it (its fixtures, and the
    values the last test was given): release what the file freed, record its peak, start the next file's afresh."""
    before = _status_gib("VmRSS")
    yield
    if nextitem is not None and nextitem.path == item.path:
        if _status_gib("VmRSS") > before + GREW_GIB:
            release_memory()
        return
    peak = _status_gib("VmHWM")
    release_memory()
    name = item.path.stem if item.path.parent.name != "zh" else f"zh/{item.path.stem}"  # the two editions apart
    MODULE_PEAKS[name] = (peak, _status_gib("VmRSS"))
    now = time.perf_counter()
    MODULE_SECONDS[name] = MODULE_SECONDS.get(name, 0.0) + now - _LAST_END[0]
    _LAST_END[0] = now
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the present resident size (Linux ≥ 4.0)
    except OSError:
        pass


def pytest_terminal_summary(terminalreporter):
    """At the end of the run: the peak resident memory of this test process, and of the largest process it started
    (the notebook kernels, the grader), and the slowest test files, so that a run says what memory and time it needs."""
    import resource
    import sys

    unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is in bytes on macOS, KiB on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit / 2**30
    own = max([own, *(peak for peak, _ in MODULE_PEAKS.values())])  # each module's peak is reset after it
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * unit / 2**30
    # Linux counts a started process from the memory of the one that started it (its peak survives the fork and
    # the exec): a figure at or below the test process's own peak says only that no child went above it.
    children = (f"the largest process it started (a notebook kernel, the grader): {child:.2f} GiB" if child > own
                else "no process it started went above that")
    terminalreporter.write_line(f"peak resident memory: {own:.2f} GiB in the test process; {children}")
    if MODULE_PEAKS:
        top = sorted(MODULE_PEAKS.items(), key=lambda kv: -kv[1][0])[:5]
        terminalreporter.write_line("largest module peaks (then resident after the module): " + ", ".join(
            f"{m} {peak:.2f} ({after:.2f}) GiB" for m, (peak, after) in top))
        if os.environ.get("TEACHLLM_TEST_MEMORY"):
            for m, (peak, after) in MODULE_PEAKS.items():
                terminalreporter.write_line(f"  {m}: peak {peak:.2f} GiB, after {after:.2f} GiB")
    if MODULE_SECONDS:
        slow = sorted(MODULE_SECONDS.items(), key=lambda kv: -kv[1])[:8]
        terminalreporter.write_line("slowest modules: " + ", ".join(f"{m} {s:.0f} s" for m, s in slow))
