"""The book's exercise solutions (notebooks/solutions/chNN.py) run and their asserts hold.

Each is a standalone script on the bundled model (CPU, float32); it checks its answers against a hand
count, a formula, transformers or an uncached/unbatched run. One file per chapter notebook.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("ch[0-9][0-9].py"))
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
TIMEOUT_S = 600  # seconds each on an idle 2-core machine; the limit leaves room for a busy one


def test_one_solution_file_per_chapter():
    assert [s.stem[2:] for s in SOLUTIONS] == [c.name[:2] for c in CHAPTERS]


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[s.stem for s in SOLUTIONS])
def test_solution_runs(solution):
    # One torch thread: small matrices gain nothing from threads, and a busy machine makes them slower.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "TRANSFORMERS_VERBOSITY": "error"}
    done = subprocess.run([sys.executable, str(solution)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{solution.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{solution.name} printed nothing"
