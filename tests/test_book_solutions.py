"""The book's exercise solutions (notebooks/solutions/chNN.py) run and their asserts hold.

Each is a standalone script on the bundled model (CPU, float32); it checks its answers against a hand
count, a formula, transformers or an uncached/unbatched run. One file per chapter notebook. They run here as
scripts (`runpy`, as `python chNN.py` would, in a namespace of their own), in this process: a fresh process for
each cost its imports and model load again, about a third of the time. None changes global state (a seed, a
setting): each draws from a generator of its own.
"""

import runpy
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("ch[0-9][0-9].py"))
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def test_one_solution_file_per_chapter():
    assert [s.stem[2:] for s in SOLUTIONS] == [c.name[:2] for c in CHAPTERS]


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[s.stem for s in SOLUTIONS])
def test_solution_runs(solution, capsys):
    # One torch thread: small matrices gain nothing from threads, and a busy machine makes them slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runpy.run_path(str(solution), run_name="__main__")  # an assert that fails raises here, with its line
    finally:
        torch.set_num_threads(threads)
    assert capsys.readouterr().out.strip(), f"{solution.name} printed nothing"
