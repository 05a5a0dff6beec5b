"""The printed book (`make pdf` → book/_build/pdf/): both editions exist, hold the thirteen chapters in order with a
contents list whose links go to places in the file, embed every font they use (the Chinese one a font with Chinese
glyphs), and print every code cell of chapter 6 whole: wrapped, never clipped (the text extracted from the PDF holds
each cell's source, white space aside).

Without the PDFs the test is skipped, except under CI=true, where it fails (.ci/run runs `make pdf` first)."""

import re
import unicodedata
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "book" / "_build" / "pdf"
EDITIONS = {"en": ("teachllm.pdf", ROOT / "notebooks", r"Chapter\s+(\d+)\s*·"),
            "zh": ("teachllm-zh.pdf", ROOT / "notebooks" / "zh", r"第\s*(\d+)\s*章\s*·")}
NOT_PRINTED = {"exercise", "check", "remove-cell"}  # the book removes exercise cells and hides check cells


def reader(lang: str):
    pypdf = pytest.importorskip("pypdf", reason="pip install pypdf (the dev extra)")
    path = PDF / EDITIONS[lang][0]
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} is missing: make pdf")
    return pypdf.PdfReader(path)


def plain(text: str) -> str:
    """Text as compared here: Unicode-normalised (a PDF may map 大 to the Kangxi radical ⼤), white space removed."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def outline_titles(items) -> list[str]:
    return [t for item in items for t in (outline_titles(item) if isinstance(item, list) else [item.title])]


def fonts(resources, found: dict) -> dict:
    """name → (embedded, maps Chinese) for every font of a page, its form XObjects included."""
    resources = resources.get_object() if resources else {}
    for font in (resources.get("/Font") or {}).values():
        font = font.get_object()
        descriptor = font.get("/FontDescriptor")
        if descriptor is None and "/DescendantFonts" in font:
            descriptor = font["/DescendantFonts"][0].get_object().get("/FontDescriptor")
        descriptor = descriptor.get_object() if descriptor else {}
        # a TrueType/OpenType font carries its file; a Type 3 font (Chromium's form for CFF fonts such as Noto
        # Sans CJK) carries each glyph it uses as drawing instructions
        embedded = any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3")) or "/CharProcs" in font
        unicode_map = font.get("/ToUnicode")
        chinese = bool(unicode_map) and bool(re.search(r"<(?:[4-9][0-9A-Fa-f]{3}|2[Ee][89A-Fa-f][0-9A-Fa-f])>",
                                                       unicode_map.get_object().get_data().decode("latin-1")))
        found[f"{font.get('/BaseFont')} {id(font)}"] = (embedded, chinese)
    for xobject in (resources.get("/XObject") or {}).values():
        xobject = xobject.get_object()
        if xobject.get("/Subtype") == "/Form":
            fonts(xobject.get("/Resources"), found)
    return found


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_chapters_are_in_order_with_a_contents_list_that_links(lang):
    pdf = reader(lang)
    _, _, heading = EDITIONS[lang]
    numbers = [int(m[1]) for t in outline_titles(pdf.outline) if (m := re.match(heading, t))]
    assert list(dict.fromkeys(numbers)) == list(range(1, 14)), numbers
    contents = pdf.pages[0].extract_text()
    assert [int(n) for n in re.findall(heading, contents)] == list(range(1, 14)), contents[:800]
    links = [a.get_object() for page in pdf.pages for a in page.get("/Annots") or []]
    internal = [a for a in links
                if a.get("/Subtype") == "/Link" and ("/Dest" in a or (a.get("/A") or {}).get("/S") == "/GoTo")]
    assert len(internal) >= 13, f"{len(internal)} links within the file"


@pytest.mark.parametrize("lang", EDITIONS)
def test_every_font_is_embedded(lang):
    pdf = reader(lang)
    found = {}
    for page in pdf.pages:
        fonts(page.get("/Resources"), found)
    assert found and all(embedded for embedded, _ in found.values()), [n for n, (e, _) in found.items() if not e]
    if lang == "zh":
        assert any(chinese for _, chinese in found.values()), "no font maps Chinese characters"


@pytest.mark.parametrize("lang", EDITIONS)
def test_every_code_cell_of_chapter_6_is_printed_whole(lang):
    pdf = reader(lang)
    _, folder, _ = EDITIONS[lang]
    text = plain("".join(page.extract_text() for page in pdf.pages))
    notebook = nbformat.read(folder / "06-logits-to-token.ipynb", as_version=4)
    cells = [c for c in notebook.cells if c.cell_type == "code" and not NOT_PRINTED & set(c.metadata.get("tags", []))]
    assert len(cells) > 20
    cut = [c.source.splitlines()[0] for c in cells if plain(c.source) not in text]
    assert not cut, f"{len(cut)} code cell(s) of chapter 6 not whole in the PDF, e.g. {cut[0]!r}"
