"""The printed book (`make pdf` → book/_build/pdf/): both editions exist, hold the thirteen chapters in order with a
contents list whose links go to places in the file, embed every font they use (the Chinese one a font with Chinese
glyphs), and print every code cell of chapter 6 whole: wrapped, never clipped (the text extracted from the PDF holds
each cell's source, white space aside), and wrapped only at spaces, so that copying keeps every token whole.
Bookmarks: one title each, as the heading writes it (Chromium's own doubled some, "前言前言", and lost the space at
a line break), no two siblings alike, "Contents" once. Every question of every chapter's quiz is in the text, with its
chapter's answer key. No page ends in an empty code frame (a frame whose code went on to the next page), and no frame
that fits on one page is split across two.

Each PDF is read once (a module-level cache). Reading is pure Python (pypdf parses every page's content stream for
its text, and again for its frames) and the four readings (two editions, text and frames) do not depend on each
other, so they run at once in two worker processes the first time any of them is needed. Without the PDFs the test
is skipped, except under CI=true, where it fails (.ci/run runs `make pdf` first)."""

import functools
import multiprocessing
import re
import unicodedata
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "book" / "_build" / "pdf"
EDITIONS = {"en": ("teachllm.pdf", ROOT / "notebooks", r"Chapter\s+(\d+)\s*·"),
            "zh": ("teachllm-zh.pdf", ROOT / "notebooks" / "zh", r"第\s*(\d+)\s*章\s*·")}
NOT_PRINTED = {"exercise", "check", "remove-cell"}  # the book removes exercise cells and hides check cells


WIDGET = "application/vnd.teachllm.widget+json"  # a widget's kernel-free form (teachllm.viz.static.MIME)
ANSWERS = {"en": "Answers", "zh": "答案"}  # the answer key's label (book/_static/teachllm-widgets.js)
LETTERS = "ABCDEFGHIJ"


def reader(lang: str):
    pytest.importorskip("pypdf", reason="pip install pypdf (the dev extra)")
    path = PDF / EDITIONS[lang][0]
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} is missing: make pdf")
    return _read(path)


@functools.cache
def _read(path: Path):
    import pypdf

    return pypdf.PdfReader(path)


def read_pages(path: str, kind: str) -> tuple:
    """Each page's text ("text") or code frames ("frames") of the PDF at `path`: what a worker process computes."""
    import pypdf

    pdf = pypdf.PdfReader(path)
    if kind == "text":
        return tuple(page.extract_text() for page in pdf.pages)
    return tuple(frames(pdf, page) for page in pdf.pages)


@functools.cache
def readings() -> dict[tuple[str, str], tuple]:
    """(edition, "text" | "frames") → read_pages, for every edition whose PDF exists, two at a time."""
    jobs = [(lang, kind) for lang in EDITIONS for kind in ("text", "frames") if (PDF / EDITIONS[lang][0]).is_file()]
    # spawn, not fork: this process has PyTorch's threads running, which a forked child would inherit half-made
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {job: pool.submit(read_pages, str(PDF / EDITIONS[job[0]][0]), job[1]) for job in jobs}
        return {job: future.result() for job, future in futures.items()}


def page_texts(lang: str) -> tuple[str, ...]:
    reader(lang)  # skips (or fails under CI=true) when the PDF is missing
    return readings()[lang, "text"]


def spaced(text: str) -> str:
    """Text with every run of white space one space: a line broken inside a token shows as a space in it. Spaces
    next to a character outside ASCII go (pypdf puts one around each run of Chinese, a line may break between two
    Chinese characters)."""
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    return re.sub(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ", "", text)


def in_text(piece: str, text: str) -> bool:
    """Whether `piece` (plain) is in `text` (plain), where the PDF may give a CJK radical for the character it
    draws (角 as ⻆, U+2EC6, which NFKC leaves alone)."""
    if piece in text:
        return True
    radical = "[\u2e80-\u2eff]"
    pattern = "".join(f"(?:{re.escape(c)}|{radical})" if "\u4e00" <= c <= "\u9fff" else re.escape(c) for c in piece)
    return re.search(pattern, text) is not None


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


def only_makes_a_widget(cell) -> bool:
    """A cell whose code is imports and one call, with a widget's output (`viz.Quiz(6)`): it prints no code."""
    statements = [line.strip() for line in cell.source.splitlines()
                  if line.strip() and not line.strip().startswith("#")
                  and not re.match(r"(from\s+\S+\s+)?import\s", line.strip())]
    widget = any(WIDGET in (output.get("data") or {}) for output in cell.get("outputs", []))
    return widget and len(statements) == 1 and re.fullmatch(r"[\w.]+\(.*\)", statements[0]) is not None


def printed_code_cells(lang: str, chapter: str = "06-logits-to-token"):
    _, folder, _ = EDITIONS[lang]
    notebook = nbformat.read(folder / f"{chapter}.ipynb", as_version=4)
    return [c for c in notebook.cells if c.cell_type == "code" and not NOT_PRINTED & set(c.metadata.get("tags", []))
            and not only_makes_a_widget(c)]


@pytest.mark.parametrize("lang", EDITIONS)
def test_every_code_cell_of_chapter_6_is_printed_whole(lang):
    text = plain("".join(page_texts(lang)))
    cells = printed_code_cells(lang)
    assert len(cells) > 20
    cut = [c.source.splitlines()[0] for c in cells if plain(c.source) not in text]
    assert not cut, f"{len(cut)} code cell(s) of chapter 6 not whole in the PDF, e.g. {cut[0]!r}"


@pytest.mark.parametrize("lang", EDITIONS)
def test_code_wraps_only_at_spaces(lang):
    """Compared with white space kept as one space, each cell's source is in the text: a line wrapped inside a
    token (`temperatur` / `e=0.8`, or a dropped `-` in `softmax(-1)`) would not be."""
    text = spaced("".join(page_texts(lang)))
    broken = [c.source.splitlines()[0] for c in printed_code_cells(lang) if spaced(c.source) not in text]
    assert not broken, f"{len(broken)} code cell(s) of chapter 6 wrapped inside a token, e.g. {broken[0]!r}"


# ---- bookmarks -----------------------------------------------------------------------------------------------
def outline_tree(items) -> list[tuple[str, list]]:
    """The outline as (title, children) pairs."""
    tree = []
    for item in items:
        if isinstance(item, list):
            tree[-1][1].extend(outline_tree(item))
        else:
            tree.append((item.title, []))
    return tree


def repeated(title: str) -> bool:
    """Whether `title`, white space aside, is a piece written twice or more ("前言前言", "9.6 9.6 ignore_eos")."""
    squeezed = "".join(title.split())
    return bool(re.fullmatch(r"(.+?)\1+", squeezed)) or bool(re.match(r"(\S+)\s+\1(\s|$)", title.strip()))


@pytest.mark.parametrize("lang", EDITIONS)
def test_bookmarks_are_one_title_each_and_unique(lang):
    tree = outline_tree(reader(lang).outline)
    titles, siblings_alike = [], []

    def walk(nodes):
        names = [t for t, _ in nodes]
        siblings_alike.extend(sorted({t for t in names if names.count(t) > 1}))
        for title, children in nodes:
            titles.append(title)
            walk(children)

    walk(tree)
    assert len(titles) > 150, len(titles)
    assert not siblings_alike, f"bookmarks alike under one parent: {siblings_alike[:5]}"
    doubled = [t for t in titles if repeated(t)]
    assert not doubled, f"{len(doubled)} bookmark(s) holding their title twice, e.g. {doubled[:3]}"
    contents = CONTENTS[lang]
    assert sum(t.strip() == contents for t in titles) == 1, [t for t in titles if contents in t]
    # the book's title, which wraps on the page, keeps its spaces (Chromium's bookmark read "largelanguage")
    index = ROOT / "book" / ("index.md" if lang == "en" else "zh/index.md")
    title = next(line[2:].strip() for line in index.read_text(encoding="utf-8").splitlines() if line.startswith("# "))
    assert titles[0] == title, (titles[0], title)


CONTENTS = {"en": "Contents", "zh": "目录"}


# ---- quizzes -------------------------------------------------------------------------------------------------
def markdown_pieces(text: str) -> list[str]:
    """The pieces of inline Markdown that print as text: math ($…$, typeset as drawings) split out, and the
    **, *, ` markers dropped."""
    pieces = re.split(r"\$[^$]+\$", text)
    # the markers teachllm.course.quiz.inline_html turns into <code>, <strong> and <em> (any other * is printed)
    pieces = [re.sub(r"(?<![A-Za-z0-9_*])\*(?!\s)(.+?)(?<!\s)\*(?![A-Za-z0-9_*])", r"\1",
                     re.sub(r"\*\*(.+?)\*\*", r"\1", re.sub(r"`([^`]+)`", r"\1", piece))) for piece in pieces]
    # an emoji has no text in the PDF (its font maps it to nothing): it splits a piece too
    return [p for piece in pieces for p in map(plain, re.split(r"[^\u0000-\uffff]", piece)) if p]


@pytest.mark.parametrize("lang", EDITIONS)
def test_every_quiz_question_is_printed_with_its_answer_key(lang):
    from teachllm.course import quiz

    text = plain("".join(page_texts(lang)))
    missing, keys = [], []
    for chapter in quiz.chapters():
        questions = quiz.load(chapter, lang)
        for q in questions:
            for piece in markdown_pieces(q.question) + [p for o in q.options for p in markdown_pieces(o)]:
                if not in_text(piece, text):
                    missing.append(f"chapter {chapter} {q.id}: {piece[:60]}")
        key = [f"{n}.{q.answer_text() if q.type == 'numeric' else LETTERS[q.answer]}"
               for n, q in enumerate(questions, 1)]
        expected = plain(f"{ANSWERS[lang]}:" + "·".join(key))
        if not in_text(expected, text):
            keys.append(f"chapter {chapter}: {expected}")
    assert len(quiz.chapters()) == 13
    assert not missing, f"{len(missing)} quiz text(s) not in the PDF, e.g. {missing[:3]}"
    assert not keys, f"{len(keys)} answer key(s) not in the PDF, e.g. {keys[:2]}"


# ---- code frames ---------------------------------------------------------------------------------------------
# A4 with the build's margins (scripts/build_pdf.py: 18 mm below, 16 mm above), in points from the page's foot
FOOT, HEAD = 18 / 25.4 * 72, 842.88 - 16 / 25.4 * 72


def _times(a, b):  # the PDF matrix a, then b
    return [a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
            a[2] * b[1] + a[3] * b[3], a[4] * b[0] + a[5] * b[2] + b[4], a[4] * b[1] + a[5] * b[3] + b[5]]


def _at(m, x, y):
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


def frames(pdf, page) -> list[tuple[float, float, int]]:
    """Every filled box on `page` wider than half the text column and not white, clipped to the text area, as
    (bottom, top, how many text runs start inside it), read from the content stream (form XObjects followed)."""
    from pypdf.generic import ContentStream

    boxes, starts = [], []

    def run(contents, resources, ctm):
        saved, colour, path, line, tm, leading = [], None, [], [1, 0, 0, 1, 0, 0], [1, 0, 0, 1, 0, 0], 0.0
        for operands, op in ContentStream(contents, pdf).operations:
            if op == b"q":
                saved.append((ctm, colour))
            elif op == b"Q":
                ctm, colour = saved.pop()
            elif op == b"cm":
                ctm = _times([float(v) for v in operands], ctm)
            elif op in (b"rg", b"sc", b"scn") and len(operands) == 3:
                colour = tuple(float(v) for v in operands)
            elif op == b"g":
                colour = (float(operands[0]),) * 3
            elif op == b"re":
                x, y, w, h = (float(v) for v in operands)
                path += [_at(ctm, x, y), _at(ctm, x + w, y + h)]
            elif op in (b"m", b"l", b"c"):
                path.append(_at(ctm, float(operands[-2]), float(operands[-1])))
            elif op in (b"f", b"f*", b"F", b"B", b"B*", b"n", b"S", b"s"):
                if op not in (b"n", b"S", b"s") and path and colour and min(colour) < 0.995:
                    xs, ys = [p[0] for p in path], [p[1] for p in path]
                    boxes.append((min(xs), max(FOOT, min(ys)), max(xs), min(HEAD, max(ys))))
                path = []
            elif op == b"BT":
                line = tm = [1, 0, 0, 1, 0, 0]
            elif op == b"Tm":
                line = tm = [float(v) for v in operands]
            elif op in (b"Td", b"TD"):
                line = tm = _times([1, 0, 0, 1, float(operands[0]), float(operands[1])], line)
                leading = -float(operands[1]) if op == b"TD" else leading
            elif op == b"TL":
                leading = float(operands[0])
            elif op == b"T*":
                line = tm = _times([1, 0, 0, 1, 0, -leading], line)
            elif op in (b"Tj", b"TJ", b"'", b'"'):
                starts.append(_at(_times(tm, ctm), 0, 0))
            elif op == b"Do":
                xobject = resources["/XObject"][operands[0]].get_object()
                if xobject.get("/Subtype") == "/Form":
                    matrix = [float(v) for v in xobject.get("/Matrix", [1, 0, 0, 1, 0, 0])]
                    run(xobject, xobject.get("/Resources") or resources, _times(matrix, ctm))
                else:  # an image fills its unit square: count it as content
                    (x0, y0), (x1, y1) = _at(ctm, 0, 0), _at(ctm, 1, 1)
                    starts.append(((x0 + x1) / 2, (y0 + y1) / 2))

    run(page.get_contents(), page["/Resources"], [1, 0, 0, 1, 0, 0])
    column = page.mediabox.width - 2 * 14 / 25.4 * 72
    return [(y0, y1, sum(x0 <= x <= x1 and y0 <= y <= y1 for x, y in starts))
            for x0, y0, x1, y1 in boxes if x1 - x0 > column / 2 and y1 - y0 > 6]


def page_frames(lang: str) -> tuple[list, ...]:
    reader(lang)
    return readings()[lang, "frames"]


@pytest.mark.parametrize("lang", EDITIONS)
def test_no_page_ends_in_an_empty_code_frame_and_no_frame_that_fits_is_split(lang):
    """Before: 64 English and 43 Chinese pages ended in a code cell's empty frame, its code on the next page (the
    highlight box avoided breaks, its frame did not), and as many frames that fit on one page were split."""
    at_foot = [[(y0, y1, n) for y0, y1, n in page if y0 <= FOOT + 2] for page in page_frames(lang)]
    at_head = [[(y0, y1, n) for y0, y1, n in page if y1 >= HEAD - 2] for page in page_frames(lang)]
    empty = [k + 1 for k, boxes in enumerate(at_foot) if any(n == 0 for _, _, n in boxes)]
    assert not empty, f"{len(empty)} page(s) end in an empty frame: {empty[:10]}"
    split = [k + 1 for k in range(len(at_foot) - 1) if at_foot[k] and at_head[k + 1]
             and max(y1 - y0 for y0, y1, _ in at_foot[k]) + max(y1 - y0 for y0, y1, _ in at_head[k + 1]) < HEAD - FOOT]
    assert not split, f"{len(split)} frame(s) that fit on a page split after page(s) {split[:10]}"
