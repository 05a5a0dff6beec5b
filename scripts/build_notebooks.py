"""Build the chapter notebooks: notebooks/src/NN-name.py (jupytext percent format) → notebooks/NN-name.ipynb.

Each notebook is converted, executed top to bottom in a fresh kernel, and written with its outputs,
which is what nbval compares against in CI. The .py files are the ones to edit (they diff well);
tests/test_notebooks.py checks that every .ipynb still matches its .py.

    python scripts/build_notebooks.py              # all notebooks
    python scripts/build_notebooks.py 01 06        # the ones whose names start with 01 or 06
    python scripts/build_notebooks.py --metadata-only 03   # copy cell metadata only (slides, tags); no re-run

`--metadata-only` is for a change that touches only cell metadata in the .py (a slide type, say): it
copies each cell's metadata into the committed notebook and keeps its outputs, after checking that the
cells' sources are the same.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def notebook_from_source(src: Path) -> nbformat.NotebookNode:
    """The notebook a .py source describes, without outputs, with plain metadata."""
    nb = jupytext.read(src)
    nb.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    return nb


def build(src: Path) -> float:
    nb = notebook_from_source(src)
    # Widget state is not stored: a live widget needs a running kernel anyway, and plotly's FigureWidget
    # state carries its whole JavaScript bundle (megabytes per notebook).
    client = NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False, store_widget_state=False,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nbformat.write(nb, NOTEBOOKS / f"{src.stem}.ipynb")
    return seconds


def copy_metadata(src: Path) -> None:
    """Give the committed notebook the cell metadata of its source; sources and outputs stay as they are."""
    path = NOTEBOOKS / f"{src.stem}.ipynb"
    built, want = nbformat.read(path, as_version=4), notebook_from_source(src)
    if [(c.cell_type, c.source) for c in built.cells] != [(c.cell_type, c.source) for c in want.cells]:
        sys.exit(f"{path.name}: the cells differ from {src.name}; rebuild it instead")
    for cell, source_cell in zip(built.cells, want.cells, strict=True):
        cell.metadata = source_cell.metadata
    nbformat.write(built, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="build only notebooks whose names start with these")
    parser.add_argument("--metadata-only", action="store_true", help="copy cell metadata, do not execute")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sources = sorted((NOTEBOOKS / "src").glob("*.py"))
    if args.prefixes:
        sources = [s for s in sources if s.name.startswith(tuple(args.prefixes))]
    if not sources:
        sys.exit("no notebook sources matched")
    for src in sources:
        if args.metadata_only:
            copy_metadata(src)
            print(f"{src.stem}: metadata copied")
            continue
        print(f"{src.stem}: executing ...", end=" ", flush=True)
        print(f"{build(src):.1f} s")


if __name__ == "__main__":
    main()
