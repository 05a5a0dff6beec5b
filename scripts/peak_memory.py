"""Run a command and report the most memory it and every process it started held at once, and how long it took.

    python scripts/peak_memory.py --label "make test" -- bash -c 'pytest ... && pytest --nbval ...'

`make test` runs under it, so that its last lines say what a student's laptop needs: the peak of the memory all of
its processes held together (the tests, the notebook kernels, the grader's sandboxes, Chromium), not the peak of
one process alone. Every 0.2 s it adds up the proportional set size (PSS, /proc/PID/smaps_rollup: a page shared by
n processes counts 1/n in each, so PyTorch's libraries, mapped by every Python process, count once) of the
command's process and all its descendants. A peak shorter than the interval can be missed, so the report also
gives the largest peak resident size any single process reached (VmHWM, exact), which the joint peak can never be
below. Linux only: elsewhere the command runs and only its time is reported.

The exit status is the command's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

PROC = Path("/proc")
INTERVAL_S = 0.2


def children_of() -> dict[int, list[int]]:
    """Every process's children, from /proc/PID/stat (field 4 is the parent's id)."""
    tree: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the name in (...) may hold spaces
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def descendants(root: int) -> list[int]:
    tree, found, todo = children_of(), [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += tree.get(pid, [])
    return found


def kib(pid: int, file: str, field: str) -> int:
    """A `field:  N kB` line of /proc/PID/<file>, in KiB; 0 for a process that has ended or hides it."""
    try:
        with open(PROC / str(pid) / file) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Sampler(threading.Thread):
    """Samples the joint PSS of a process tree until stopped; keeps the peak, when it happened, and each
    process's own peak resident size (VmHWM) as last seen."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.start_time = root, time.monotonic()
        self.peak_kib, self.peak_at, self.processes_at_peak = 0, 0.0, 0
        self.hwm_kib: dict[int, tuple[int, str]] = {}  # pid → (VmHWM, command name)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(INTERVAL_S):
            pids = descendants(self.root)
            total = sum(kib(pid, "smaps_rollup", "Pss") for pid in pids)
            if total > self.peak_kib:
                self.peak_kib, self.peak_at, self.processes_at_peak = total, time.monotonic(), len(pids)
            for pid in pids:
                hwm = kib(pid, "status", "VmHWM")
                if hwm > self.hwm_kib.get(pid, (0, ""))[0]:
                    self.hwm_kib[pid] = (hwm, name(pid))


def name(pid: int) -> str:
    try:
        words = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [w.decode(errors="replace") for w in words if w]
    # `python -m pytest`, `python -m ipykernel_launcher`, `python scripts/grade.py`: the part that says what it is
    if "-m" in words[:-1]:
        return words[words.index("-m") + 1]
    if "-c" in words:
        return f"{Path(words[0]).name} -c"
    return Path(next((w for w in words[1:] if not w.startswith("-")), words[0] if words else "?")).name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="the command", help="what the report calls the command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    start = time.monotonic()
    process = subprocess.Popen(command)
    sampler = Sampler(process.pid) if (PROC / "self" / "smaps_rollup").exists() else None
    if sampler:
        sampler.start()
    try:
        status = process.wait()
    except KeyboardInterrupt:
        process.wait()
        raise
    elapsed = time.monotonic() - start
    if sampler:
        sampler.done.set()
        sampler.join()
        biggest = max(sampler.hwm_kib.values(), default=(0, "?"))
        at = sampler.peak_at - sampler.start_time
        if not sampler.peak_kib:
            print(f"{args.label}: ended before its memory was sampled (every {INTERVAL_S} s)")
        else:
                print(f"{args.label}: peak memory {sampler.peak_kib / 2**20:.2f} GiB, all its processes together (PSS, "
                  f"sampled every {INTERVAL_S} s; {sampler.processes_at_peak} processes, {int(at // 60)} min "
                  f"{int(at % 60)} s in); the largest single process: {biggest[0] / 2**20:.2f} GiB ({biggest[1]})")
    print(f"{args.label}: {int(elapsed // 60)} min {int(elapsed % 60)} s, exit status {status}")
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
