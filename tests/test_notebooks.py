"""The committed notebooks, English and Chinese, match their sources and were committed executed (nbval
compares their outputs); the Chinese edition's code and outputs are the English edition's."""

import re
import sys
from configparser import ConfigParser
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCES = sorted((NOTEBOOKS / "src").glob("*.py"))
sys.path.insert(0, str(ROOT / "scripts"))
import build_notebooks  # noqa: E402  (scripts/ is not a package)
import translations  # noqa: E402

EDITIONS = [(lang, src) for lang in build_notebooks.LANGUAGES for src in SOURCES]
IDS = [f"{lang}-{src.stem}" for lang, src in EDITIONS]


def built_path(lang: str, src: Path) -> Path:
    return build_notebooks.folder(lang) / f"{src.stem}.ipynb"


def test_there_are_notebooks():
    assert SOURCES, "no notebook sources in notebooks/src"


@pytest.mark.parametrize(("lang", "src"), EDITIONS, ids=IDS)
def test_notebook_matches_its_source(lang, src):
    built = built_path(lang, src)
    assert built.is_file(), f"{built} is missing: run `python scripts/build_notebooks.py --lang {lang} {src.stem[:2]}`"
    nb = nbformat.read(built, as_version=4)
    want = build_notebooks.notebook_from_source(src, lang)  # raises when a translation is out of sync
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in want.cells], (
        f"{built.name} ({lang}) is out of date with {src.name}: rebuild it")
    slides = [(c.metadata.get("slideshow"), c.metadata.get("slide")) for c in nb.cells]
    assert slides == [(c.metadata.get("slideshow"), c.metadata.get("slide")) for c in want.cells], (
        f"{built.name}'s slide types or slide choices differ from {src.name}: "
        f"`python scripts/build_notebooks.py --metadata-only {src.stem[:2]}`")
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize(("lang", "src"), EDITIONS, ids=IDS)
def test_notebook_was_committed_executed(lang, src):
    nb = nbformat.read(built_path(lang, src), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "some cells were never run"
    assert not any(o.output_type == "error" for c in code for o in c.outputs), "a cell raised an error"


@pytest.mark.parametrize(("lang", "src"), EDITIONS, ids=IDS)
def test_notebook_stays_small(lang, src):
    """No widget state or embedded plotly.js: either would put megabytes of JavaScript into the repo."""
    path = built_path(lang, src)
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata, "widget state was stored: build with scripts/build_notebooks.py"
    assert path.stat().st_size < 1_500_000, f"{path.name} is {path.stat().st_size / 1e6:.1f} MB"


@pytest.mark.parametrize(("lang", "src"), EDITIONS, ids=IDS)
def test_every_figure_carries_a_static_rendering(lang, src):
    """A plotly figure output also holds a PNG, so it shows where no JavaScript runs (a code host, an export)."""
    nb = nbformat.read(built_path(lang, src), as_version=4)
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
               if "application/vnd.plotly.v1+json" in o.get("data", {})]
    without = [o for o in figures if "image/png" not in o["data"]]
    assert not without, f"{len(without)} of {len(figures)} figures have no PNG: build with TEACHLLM_STATIC_FIGURES=1"


SANITIZE = ConfigParser()
SANITIZE.read(NOTEBOOKS / "sanitize.cfg")


def sanitised(text: str) -> str:
    """Text with what nbval's sanitise file normalises (timings, ids, addresses) normalised the same way."""
    for section in SANITIZE.sections():
        text = re.sub(SANITIZE[section]["regex"], SANITIZE[section]["replace"], text)
    return text


def printed(cell) -> str:
    """What a code cell printed and returned as text, sanitised; figures and widgets are left out."""
    parts = [o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
             for o in cell.outputs if not {"application/vnd.plotly.v1+json", "application/vnd.jupyter.widget-view+json"}
             & set(o.get("data", {}))]
    return sanitised("".join(parts))


NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")


def ignored(cell) -> set[str]:
    """nbval's markers on a cell, in one spelling: its tags (NBVAL_IGNORE_OUTPUT or nbval-ignore-output) and a
    first-line comment (# NBVAL_IGNORE_OUTPUT)."""
    first = cell.source.splitlines()[0] if cell.source else ""
    comment = [first[1:].strip()] if first.startswith("#") else []
    return {t.lower().replace("_", "-") for t in [*cell.metadata.get("tags", []), *comment]}
HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
@pytest.mark.parametrize("lang", build_notebooks.LANGUAGES[1:])
def test_translated_notebook_prints_what_the_english_one_prints(lang, src):
    """Same code (the comments of exercise and check cells translated), same random seeds, same outputs. Every
    code cell whose output nbval compares prints the same text in both editions, except where the viz layer
    prints words in the reader's language (chapter 7's penalty table, chapter 11's iteration log): there the
    text differs, but only in its words, so it must hold Chinese and the very same numbers (a Chinese sentence
    may put them in another order; it holds more Chinese characters than the English, which may print Chinese
    data of its own, chapter 2's '大语言模型'). Figures and widgets, whose labels
    are translated, are left out."""
    english = [c for c in nbformat.read(built_path("en", src), as_version=4).cells if c.cell_type == "code"]
    other = [c for c in nbformat.read(built_path(lang, src), as_version=4).cells
             if c.cell_type == "code" and "language" not in c.metadata.get("tags", [])]
    catalogue = translations.comment_catalogue(lang)
    want = [translations.localise_comments(c.source, catalogue) if translations.commented(c) else c.source
            for c in english]
    assert [c.source for c in other] == want
    differ = []
    for k, (a, b) in enumerate(zip(english, other, strict=True)):
        if "nbval-ignore-output" in ignored(a) or printed(a) == printed(b):
            continue
        same_numbers = sorted(NUMBER.findall(printed(a))) == sorted(NUMBER.findall(printed(b)))
        # the translation adds Chinese words; the English may print Chinese data too (chapter 2's '大语言模型')
        if not (same_numbers and len(HAN.findall(printed(b))) > len(HAN.findall(printed(a)))):
            differ.append(k)
    assert not differ, f"code cells {differ} print differently in {lang}: {printed(other[differ[0]])[:300]!r}"
