"""Build the chapter notebooks: notebooks/src/NN-name.py (jupytext percent format) → notebooks/NN-name.ipynb,
and the Chinese edition, notebooks/src/NN-name.py + NN-name.zh.md → notebooks/zh/NN-name.ipynb.

Each notebook is converted, executed top to bottom in a fresh kernel, and written with its outputs,
which is what nbval compares against in CI. The .py files are the ones to edit (they diff well);
tests/test_notebooks.py checks that every .ipynb still matches its .py.

A Chinese notebook has the English one's code cells, its Markdown cells from the translation file
(scripts/translations.py), the comments of its exercise and check cells translated (the code the same),
and one more code cell before the first: `viz.set_language("zh")`, so figures and widgets speak Chinese.
Figures also carry a PNG (TEACHLLM_STATIC_FIGURES=1, kaleido), so they show on a code host, in an HTML
export and in the book, and widgets their kernel-free form for the book (TEACHLLM_STATIC_WIDGETS=1,
teachllm/viz/static.py).

    python scripts/build_notebooks.py              # all notebooks, both editions
    python scripts/build_notebooks.py 01 06        # the ones whose names start with 01 or 06
    python scripts/build_notebooks.py --lang zh 06 # one edition only
    python scripts/build_notebooks.py --metadata-only 03   # copy cell metadata only (slides, tags); no re-run
    python scripts/build_notebooks.py --sources-only 10    # copy cell sources and metadata; no re-run
    python scripts/build_notebooks.py --quizzes-only 05    # show the quiz as its YAML and keys.json say; no re-run

`--metadata-only` is for a change that touches only cell metadata in the .py (a slide type, say): it
copies each cell's metadata into the committed notebook and keeps its outputs, after checking that the
cells' sources are the same. `--sources-only` is for a change that cannot alter an output (a module's new
import path, a reworded paragraph): it copies sources and metadata, cell for cell, and keeps the outputs, after
checking that the cells are as many and of the same kinds. nbval (`make test`) then runs every cell and compares:
an output the change did alter fails there. `--quizzes-only` is for a change to a chapter's quiz
(notebooks/quizzes/): the quiz cell's output is drawn again from the YAML and keys.json, which is all it depends
on; tests/test_quiz.py checks that every notebook shows its chapter's current quiz.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from teachllm.inputs import env_flag

sys.path.insert(0, str(Path(__file__).resolve().parent))
import translations  # noqa: E402  (scripts/ is not a package)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGES = ("en", *translations.LANGUAGES)
QUIZ_CELL = re.compile(r"^viz\.Quiz\((\d+)\)\s*$", re.M)  # a chapter's quiz cell ends with `viz.Quiz(N)`
MIME_KEY = "application/vnd.teachllm.widget+json"  # teachllm.viz.static.MIME: a widget's kernel-free form
LANGUAGE_CELL = {"zh": 'from teachllm import viz\n\nviz.set_language("zh")  # 图表和控件的文字用中文；代码与英文版相同'}


def folder(lang: str) -> Path:
    """Where one edition's notebooks live: notebooks/ for English, notebooks/<lang>/ for a translation."""
    return NOTEBOOKS if lang == "en" else NOTEBOOKS / lang


def notebook_from_source(src: Path, lang: str = "en") -> nbformat.NotebookNode:
    """The notebook a .py source describes in one language, without outputs, with plain metadata."""
    nb = jupytext.read(src)
    # the chapter's number tells the grader (scripts/grade.py) which exercises a submitted notebook holds
    nb.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}, "teachllm": {"chapter": src.name[:2]}}
    if lang != "en":
        prose = iter(translations.translated_cells(src, lang))  # raises when the translation is out of sync
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = next(prose)
        catalogue = translations.comment_catalogue(lang)
        for k, cell in enumerate(nb.cells):
            if translations.commented(cell):
                cell.source = translations.localise_comments(cell.source, catalogue, f"{src.name}, code cell {k}")
        first_code = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code")
        nb.cells.insert(first_code, nbformat.v4.new_code_cell(LANGUAGE_CELL[lang], metadata={"tags": ["language"]}))
        nb.metadata["language"] = lang
    for k, cell in enumerate(nb.cells):
        cell.id = f"{lang}-{k:03d}"  # stable ids: rebuilding does not churn every cell
    return nb


def build(src: Path, lang: str = "en") -> float:
    nb = notebook_from_source(src, lang)
    folder(lang).mkdir(exist_ok=True)  # the kernel runs there, as it does when a reader opens the notebook
    # Widget state is not stored: a live widget needs a running kernel anyway, and plotly's FigureWidget
    # state carries its whole JavaScript bundle (megabytes per notebook).
    client = NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False, store_widget_state=False,
                            resources={"metadata": {"path": str(folder(lang))}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nbformat.write(nb, folder(lang) / f"{src.stem}.ipynb")
    return seconds


def copy_metadata(src: Path, lang: str = "en", sources: bool = False) -> None:
    """Give the committed notebook the cell metadata of its source (and with `sources`, the cells' sources too);
    outputs stay as they are."""
    path = folder(lang) / f"{src.stem}.ipynb"
    built, want = nbformat.read(path, as_version=4), notebook_from_source(src, lang)
    same = (lambda c: c.cell_type) if sources else (lambda c: (c.cell_type, c.source))
    if [same(c) for c in built.cells] != [same(c) for c in want.cells]:
        sys.exit(f"{path.name}: the cells differ from {src.name}; rebuild it instead")
    for cell, source_cell in zip(built.cells, want.cells, strict=True):
        cell.metadata = source_cell.metadata
        cell.source = source_cell.source
    nbformat.write(built, path)


def quiz_outputs(nb: nbformat.NotebookNode, lang: str) -> list[tuple[nbformat.NotebookNode, dict]]:
    """Each quiz cell of a notebook (`viz.Quiz(N)`) with the output data it shows now, in `lang`: the
    kernel-free form (static.MIME) and the text/plain line, both drawn from the quiz's YAML and keys.json."""
    from teachllm import viz

    found, before = [], viz.language()
    try:
        viz.set_language(lang)
        for cell in nb.cells:
            if cell.cell_type == "code" and (match := QUIZ_CELL.search(cell.source)):
                quiz = viz.Quiz(int(match.group(1)))
                found.append((cell, {MIME_KEY: json.dumps(quiz.static_form(), separators=(",", ":"), ensure_ascii=False,
                                                      allow_nan=False),
                                    "text/plain": quiz._repr_mimebundle_()["text/plain"]}))
    finally:
        viz.set_language(before)
    return found


def refresh_quizzes(src: Path, lang: str = "en") -> int:
    """Draw the quiz cells' outputs of the committed notebook again; the other cells and the widget's model id
    stay. Returns how many quiz cells changed."""
    path = folder(lang) / f"{src.stem}.ipynb"
    nb, changed = nbformat.read(path, as_version=4), 0
    for cell, data in quiz_outputs(nb, lang):
        shown = next((o for o in cell.outputs if MIME_KEY in o.get("data", {})), None)
        if shown is None:
            sys.exit(f"{path.name}: its quiz cell has no saved kernel-free form; rebuild the notebook instead")
        if shown.data[MIME_KEY] != data[MIME_KEY]:
            shown.data.update(data)
            changed += 1
    nbformat.write(nb, path)
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="build only notebooks whose names start with these")
    parser.add_argument("--metadata-only", action="store_true", help="copy cell metadata, do not execute")
    parser.add_argument("--sources-only", action="store_true", help="copy cell sources and metadata, do not execute")
    parser.add_argument("--quizzes-only", action="store_true", help="draw the quiz cells' outputs again, no re-run")
    parser.add_argument("--lang", choices=LANGUAGES, action="append", help="one edition (default: all)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TEACHLLM_STATIC_FIGURES", "1")
    os.environ["TEACHLLM_STATIC_WIDGETS"] = "1"  # each widget also saves its kernel-free form for the book
    browsers = ("chromium", "chromium-browser", "google-chrome", "chrome")
    no_run = args.metadata_only or args.sources_only or args.quizzes_only
    if env_flag("TEACHLLM_STATIC_FIGURES") and not no_run and not (
            os.environ.get("BROWSER_PATH") or any(shutil.which(b) for b in browsers)):
        sys.exit("build_notebooks: kaleido draws the PNG beside each figure in a Chromium, and none was found "
                 "(apt-get install chromium, or set BROWSER_PATH). TEACHLLM_STATIC_FIGURES=0 builds without "
                 "the PNGs; tests/test_notebooks.py then names the figures that lack one.")
    sources = sorted((NOTEBOOKS / "src").glob("*.py"))
    if args.prefixes:
        sources = [s for s in sources if s.name.startswith(tuple(args.prefixes))]
    if not sources:
        sys.exit("no notebook sources matched")
    if not no_run:
        # the bundled model converted before any chapter runs: a first conversion inside a chapter would be saved
        # with its progress bars, which a later run (warm cache) does not print, and nbval would fail on them
        import teachllm

        teachllm.load(progress=False)
    for src in sources:
        for lang in args.lang or LANGUAGES:
            name = src.stem if lang == "en" else f"{lang}/{src.stem}"
            if args.quizzes_only:
                print(f"{name}: {refresh_quizzes(src, lang)} quiz cell(s) drawn again")
                continue
            if args.metadata_only or args.sources_only:
                copy_metadata(src, lang, sources=args.sources_only)
                print(f"{name}: {'sources and ' * args.sources_only}metadata copied")
                continue
            print(f"{name}: executing ...", end=" ", flush=True)
            print(f"{build(src, lang):.1f} s")


if __name__ == "__main__":
    main()
