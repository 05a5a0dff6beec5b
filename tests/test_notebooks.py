"""The committed notebooks match their sources and were committed executed (nbval compares their outputs)."""

from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SOURCES = sorted((NOTEBOOKS / "src").glob("*.py"))


def test_there_are_notebooks():
    assert SOURCES, "no notebook sources in notebooks/src"


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_notebook_matches_its_source(src):
    built = NOTEBOOKS / f"{src.stem}.ipynb"
    assert built.is_file(), f"{built.name} is missing: run `python scripts/build_notebooks.py {src.stem[:2]}`"
    nb = nbformat.read(built, as_version=4)
    want = jupytext.read(src)
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in want.cells], (
        f"{built.name} is out of date with {src.name}: rebuild it")
    slides = [c.metadata.get("slideshow") for c in nb.cells]
    assert slides == [c.metadata.get("slideshow") for c in want.cells], (
        f"{built.name}'s slide types differ from {src.name}: `python scripts/build_notebooks.py --metadata-only`")
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_notebook_was_committed_executed(src):
    nb = nbformat.read(NOTEBOOKS / f"{src.stem}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "some cells were never run"
    assert not any(o.output_type == "error" for c in code for o in c.outputs), "a cell raised an error"


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_notebook_stays_small(src):
    """No widget state or embedded plotly.js: either would put megabytes of JavaScript into the repo."""
    path = NOTEBOOKS / f"{src.stem}.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata, "widget state was stored: build with scripts/build_notebooks.py"
    assert path.stat().st_size < 1_000_000, f"{path.name} is {path.stat().st_size / 1e6:.1f} MB"
