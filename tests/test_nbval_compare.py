"""notebooks/conftest.py: nbval compares numbers to one unit in their last printed digit, nothing looser.

The cases come from a run under AVX2 dispatch (`ATEN_CPU_CAPABILITY=avx2`) of notebooks committed on an
AVX-512 machine: each printed one digit differently. The cases that must still fail are what a real change
looks like: two units off, an integer off by one, a word changed.
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

spec = importlib.util.spec_from_file_location("nbval_numbers", Path(__file__).parents[1] / "notebooks" / "conftest.py")
nbval_numbers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nbval_numbers)


@pytest.mark.parametrize(("new", "old"), [
    ("      6.369\n", "      6.368\n"),  # a perplexity one unit apart
    ("   score  -2.8369 =  -2.837 /  8^0", "   score  -2.8368 =  -2.837 /  8^0"),  # chapter 8: a beam's score
    ("= 6e-05 (≤ 1e-4: True)", "= 5e-05 (≤ 1e-4: True)"),  # chapter 12: one unit of the exponent's mantissa
    ("−4.933 nats", "−4.932 nats"),  # a typographic minus
    (" 10.000 |", "  9.999 |"),  # the column widened by a digit
])
def test_one_unit_in_the_last_printed_digit_agrees(new, old):
    assert nbval_numbers.texts_agree(new, old)


@pytest.mark.parametrize(("new", "old"), [
    ("6.370", "6.368"),  # two units
    ("6.37", "6.368"),  # a coarser print: one unit of the finer number is 0.001
    ("prefix tokens read from the cache: [0, 16, 12, 0]", "prefix tokens read from the cache: [0, 16, 11, 0]"),
    ("token 30229", "token 30228"),  # integers are exact
    ("diverges at 7", "diverges at 6"),
    ("score -2.837 'Paris'", "score -2.837 'Rome'"),  # the words differ
    ("1.5 2.5", "1.5"),  # a number more
])
def test_anything_more_still_differs(new, old):
    assert not nbval_numbers.texts_agree(new, old)


def test_figure_floats_agree_to_four_significant_digits_or_a_millionth():
    agree = nbval_numbers.agree
    old = {"data": [{"type": "heatmap", "z": [[0.537656, 4.4e-05, 21.64]], "x": [0, 1, 2]}]}
    assert agree({"data": [{"type": "heatmap", "z": [[0.537657, 4.5e-05, 21.65]], "x": [0, 1, 2]}]}, old)
    assert not agree({"data": [{"type": "heatmap", "z": [[0.5379, 4.4e-05, 21.64]], "x": [0, 1, 2]}]}, old)
    assert not agree({"data": [{"type": "heatmap", "z": [[0.537656, 4.4e-05, 21.64]], "x": [0, 1, 3]}]}, old)
    assert not agree({"data": [{"type": "bar", "z": [[0.537656, 4.4e-05, 21.64]], "x": [0, 1, 2]}]}, old)
    assert not agree(0.5, 0.6)  # short values do not widen the tolerance


def test_align_keeps_the_committed_value_only_where_it_agrees():
    old = [nbformat.v4.new_output("stream", text="ppl 6.368, cached [0, 16, 11, 0]\n"),
           nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": {"y": [5.2892]}})]
    close = [nbformat.v4.new_output("stream", text="ppl 6.369, cached [0, 16, 11, 0]\n"),
             nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": {"y": [5.2893]}})]
    far = [nbformat.v4.new_output("stream", text="ppl 6.370, cached [0, 16, 11, 0]\n"),
           nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": {"y": [5.31]}})]
    assert nbval_numbers.align(close, old) == old
    assert nbval_numbers.align(far, old) == far
    assert all(type(o) is nbformat.NotebookNode for o in nbval_numbers.align(close, old))  # nbval reads attributes


@pytest.mark.parametrize(("printed", "passes"), [("6.369", True), ("6.370", False)])
def test_nbval_uses_the_comparison(tmp_path, printed, passes):
    """A real nbval run over a notebook whose committed output says 6.368: the cell now prints `printed`."""
    shutil.copy(Path(__file__).parents[1] / "notebooks" / "conftest.py", tmp_path / "conftest.py")
    cell = nbformat.v4.new_code_cell(f"print('perplexity {printed}')", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="perplexity 6.368\n")]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "one.ipynb")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
                          "--nbval-current-env", str(tmp_path / "one.ipynb")], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert (run.returncode == 0) == passes, run.stdout[-2000:]
