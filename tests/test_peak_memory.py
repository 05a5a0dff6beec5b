"""scripts/peak_memory.py, which `make test` runs under: the peak it reports is the memory of all the command's
processes at once (a parent and a child each holding 300 MiB count 600), the largest single process is named, and
the command's exit status is passed on."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "peak_memory.py"
HOLD = """
import subprocess, sys, time
held = bytearray(300 * 2**20)  # zero pages are not resident until written: touch each page
for i in range(0, len(held), 4096):
    held[i] = 1
child = subprocess.Popen([sys.executable, "-c", '''
import time
held = bytearray(300 * 2**20)
for i in range(0, len(held), 4096):
    held[i] = 1
time.sleep(1.5)
'''])
child.wait()
sys.exit(3)
"""


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="PSS is read from Linux's /proc")
def test_the_peak_is_every_process_together_and_the_status_is_passed_on():
    done = subprocess.run([sys.executable, str(SCRIPT), "--label", "held", "--", sys.executable, "-c", HOLD],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    peak, single = map(float, re.search(r"peak memory ([\d.]+) GiB.*largest single process: ([\d.]+) GiB",
                                        done.stdout).groups())
    assert 0.29 <= single < 0.45 and "python" in done.stdout  # one process's 300 MiB, and its name
    assert 0.58 <= peak < 0.9  # both at once: 2 × 300 MiB (a few MiB of Python each on top)
    assert re.search(r"held: 0 min \d s, exit status 3", done.stdout)


def test_a_command_is_required():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "give the command" in done.stderr


CYCLE = '''
import gc

HELD = {}


def resident_gib():
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmRSS:")) / 2**20


def test_leaves_memory_in_a_reference_cycle():
    gc.disable()  # so that only the run's own release can free it
    HELD["before"] = resident_gib()
    box = {"data": bytearray(b"1" * (400 * 2**20))}  # 400 MiB, every page written
    box["itself"] = box  # a cycle: unreachable after this test, yet freed only by the garbage collector


def test_the_next_test_does_not_carry_it():
    assert resident_gib() < HELD["before"] + 0.1, (HELD["before"], resident_gib())
'''


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="resident memory is read from Linux's /proc")
def test_memory_a_test_left_in_a_cycle_is_released_before_the_next_test(tmp_path):
    """The repository's conftest.py gives back what a test freed but left in a reference cycle (a runpy namespace,
    a traceback kept by pytest.raises) once it has grown the process by conftest.GREW_GIB: without that, a model
    a test loaded stayed resident through the tests after it, until a full collection happened to run."""
    (tmp_path / "conftest.py").write_text((SCRIPT.parents[1] / "conftest.py").read_text())
    (tmp_path / "test_cycle.py").write_text(CYCLE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_cycle.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:]
