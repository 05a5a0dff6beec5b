"""Hostile input to the builders (issue 38): the slide decks (scripts/build_slides.py), the book's extension
(book/_ext/teachllm_book.py), the PDF's request filter (scripts/build_pdf.py) and the translations check
(scripts/translations.py). A broken notebook or page stops the build with one line naming the file, the cell and
the fix, never a bare IndexError or JSONDecodeError; the PDF loads nothing but its own build; `check` never calls
a broken translation in sync. Each builder's functions are called on tiny synthetic inputs: nothing is built."""

import json
import shutil
import sys
import types
from pathlib import Path

import nbformat
import pytest
from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import build_pdf  # noqa: E402  (scripts/ and book/_ext are not packages)
import build_slides  # noqa: E402
import teachllm_book  # noqa: E402
import translations  # noqa: E402

PLOTLY = "application/vnd.plotly.v1+json"
LIVE = "application/vnd.teachllm.widget+json"


def write_notebook(path: Path, cells: list) -> Path:
    notebook = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(notebook, path)
    return path


def figure_cell(layout: dict):
    """A code cell whose output is a plotly figure with this layout."""
    data = {PLOTLY: {"data": [], "layout": layout}, "text/plain": "Figure"}
    output = nbformat.v4.new_output("display_data", data=data)
    return nbformat.v4.new_code_cell("fig.show()", outputs=[output])


def title_cell():
    return nbformat.v4.new_markdown_cell("# Chapter 6 · From logits to a token\n\nSome prose.")


# ---- the slide decks -------------------------------------------------------------------------------------------
def test_a_chapter_whose_cells_are_all_left_out_is_refused_by_name(tmp_path):
    skipped = title_cell()
    skipped.metadata["slideshow"] = {"slide_type": "skip"}
    exercise = nbformat.v4.new_code_cell("answer = ...", metadata={"tags": ["exercise"]})
    path = write_notebook(tmp_path / "06-logits-to-token.ipynb", [skipped, exercise])
    with pytest.raises(ValueError, match=r"06-logits-to-token\.ipynb: every cell is left out of the slides") as e:
        build_slides.chapter_deck(path, "en")
    assert "slide type other than skip" in str(e.value)


@pytest.mark.parametrize("height", ["450px", "450", True, -5])
def test_a_figure_height_that_is_not_a_number_of_pixels_names_the_cell(tmp_path, height):
    path = write_notebook(tmp_path / "06-logits-to-token.ipynb", [title_cell(), figure_cell({"height": height})])
    with pytest.raises(ValueError, match=r"06-logits-to-token\.ipynb, cell 2 \('fig\.show\(\)'\)") as e:
        build_slides.notebook_groups(path, "en", build_slides.figure_counter("06"))
    assert f"height is {height!r}" in str(e.value) and "use a number of pixels, e.g. 450" in str(e.value)


@pytest.mark.parametrize(("layout", "height"), [({}, 450), ({"height": 300}, 300), ({"height": 300.5}, 300),
                                                ({"height": 5000}, build_slides.FIGURE_MAX)])
def test_a_figure_height_in_pixels_is_kept_up_to_the_slides_maximum(layout, height):
    block = build_slides.figure_block({"data": [], "layout": layout}, None, "f-1")
    assert block.height == height + 16 and f'style="height:{height}px"' in block.html


def test_an_empty_first_cell_stops_make_slides_with_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "en").mkdir()
    (tmp_path / "zh").mkdir()
    write_notebook(tmp_path / "en" / "06-logits-to-token.ipynb",
                   [nbformat.v4.new_markdown_cell(""), nbformat.v4.new_markdown_cell("## 6.1 Logits\n\nProse.")])
    monkeypatch.setattr(build_slides, "NOTEBOOKS", {"en": tmp_path / "en", "zh": tmp_path / "zh"})
    monkeypatch.setattr(build_slides, "OUT", tmp_path / "slides")
    monkeypatch.setattr(build_slides, "copy_assets", lambda: None)  # reveal.js is not needed to find the error
    monkeypatch.setattr(build_slides, "lecture_deck", lambda lang: [])
    with pytest.raises(SystemExit) as e:
        build_slides.main()
    message = str(e.value.code)
    assert message.startswith("make slides: ") and "\n" not in message, message
    assert "06-logits-to-token.ipynb: its first cell is empty" in message and "'# Chapter 6 · " in message, message


def test_a_first_cell_of_code_is_no_title(tmp_path):
    path = write_notebook(tmp_path / "06-x.ipynb", [nbformat.v4.new_code_cell("import teachllm")])
    with pytest.raises(ValueError, match=r"06-x\.ipynb: its first cell does not open with a title heading"):
        build_slides.deck_title(path)
    assert build_slides.deck_title(write_notebook(tmp_path / "07-y.ipynb", [title_cell()])) == \
        "Chapter 6 · From logits to a token"


# ---- the book's extension ------------------------------------------------------------------------------------
def chapter_json(output_data: dict) -> str:
    output = nbformat.v4.new_output("display_data", data=output_data)
    notebook = nbformat.v4.new_notebook(cells=[title_cell(), nbformat.v4.new_code_cell("view", outputs=[output])])
    return nbformat.writes(notebook)


def rewrite(tmp_path, text: str) -> str:
    """The chapter page Sphinx reads for notebooks/06-logits-to-token.ipynb, as the extension rewrites it."""
    config = types.SimpleNamespace(language="en", teachllm_chapters_from=tmp_path / "notebooks")
    source = [text]
    teachllm_book.rewrite_chapter(types.SimpleNamespace(config=config), "chapters/06-logits-to-token", source)
    return source[0]


@pytest.mark.parametrize("form", ['{"widget": "SamplerView", ', "not json at all"])
def test_a_widget_form_that_is_not_json_names_the_notebook_and_cell(tmp_path, form):
    with pytest.raises(ExtensionError, match=r"06-logits-to-token\.ipynb, cell 2: the widget's kernel-free form") as e:
        rewrite(tmp_path, chapter_json({LIVE: form, "text/plain": "SamplerView()"}))
    assert "is not JSON" in str(e.value) and "must be the JSON object" in str(e.value)
    assert "scripts/build_notebooks.py" in str(e.value)


@pytest.mark.parametrize("form", ["[1, 2]", '{"controls": []}', '{"widget": 3}'])
def test_a_widget_form_that_names_no_widget_is_refused(tmp_path, form):
    with pytest.raises(ExtensionError, match=r"cell 2: .* not a JSON object naming its widget"):
        rewrite(tmp_path, chapter_json({LIVE: form}))


def test_a_widget_form_in_json_becomes_a_live_widget(tmp_path):
    page = json.loads(rewrite(tmp_path, chapter_json({LIVE: '{"widget": "SamplerView", "controls": []}'})))
    html = page["cells"][1]["outputs"][0]["data"]["text/html"]
    assert 'data-teachllm-widget="SamplerView"' in html and '"controls":[]' in html


def test_a_book_figure_height_that_is_not_a_number_names_the_cell(tmp_path):
    with pytest.raises(ExtensionError, match=r"06-logits-to-token\.ipynb, cell 2: .*height is '450px'; use a "
                                             r"number of pixels, e.g\. 450"):
        rewrite(tmp_path, chapter_json({PLOTLY: {"data": [], "layout": {"height": "450px"}}}))
    page = json.loads(rewrite(tmp_path, chapter_json({PLOTLY: {"data": [], "layout": {"height": 320}}})))
    assert 'style="height:320px"' in page["cells"][1]["outputs"][0]["data"]["text/html"]


# ---- the PDF's request filter -----------------------------------------------------------------------------------
class FakeRoute:
    def __init__(self, url):
        self.request, self.answer = types.SimpleNamespace(url=url), None

    def continue_(self):
        self.answer = "loaded"

    def abort(self):
        self.answer = "refused"


def fake_playwright(urls: list[str], routes: list[FakeRoute]) -> types.ModuleType:
    """playwright.sync_api with a page that, on goto, asks for each of `urls` through the page's route handler."""
    page = types.SimpleNamespace(set_default_timeout=lambda ms: None, wait_for_function=lambda *a: None,
                                 evaluate=lambda *a: 1, emulate_media=lambda **k: None, pdf=lambda **k: None)
    page.route = lambda pattern, handler: setattr(page, "handler", handler)

    def goto(url, wait_until):
        for asked in [url, *urls]:
            routes.append(FakeRoute(asked))
            page.handler(routes[-1])

    page.goto = goto
    browser = types.SimpleNamespace(new_page=lambda **k: page, close=lambda: None)
    chromium = types.SimpleNamespace(launch=lambda **k: browser)

    class SyncPlaywright:
        def __enter__(self):
            return types.SimpleNamespace(chromium=chromium)

        def __exit__(self, *exc):
            return False

    return types.SimpleNamespace(sync_playwright=SyncPlaywright)


def test_the_pdf_loads_only_files_of_its_own_build(tmp_path, monkeypatch):
    build = tmp_path / "singlehtml" / "en"
    build.mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    inside, outside = (build / "_static" / "book.css").as_uri(), secret.as_uri()
    climbing = build.as_uri() + "/../../secret.txt"
    urls = [inside, "data:image/png;base64,AAAA", outside, climbing, "file:///etc/passwd", "https://cdn.example/x.js"]
    routes = []
    monkeypatch.setitem(sys.modules, "playwright.sync_api", fake_playwright(urls, routes))
    documents, refused = build_pdf.print_pdf(build / "index.html", tmp_path / "out.pdf", "Contents", "chromium")
    assert refused == [outside, climbing, "file:///etc/passwd", "https://cdn.example/x.js"], refused
    assert [r.answer for r in routes] == ["loaded", "loaded", "loaded", "refused", "refused", "refused", "refused"]


def test_the_request_filter_reads_file_urls_as_paths(tmp_path):
    build = tmp_path / "singlehtml" / "en"
    assert build_pdf.of_the_build((build / "a b" / "x.js").as_uri(), build)
    assert not build_pdf.of_the_build(build.as_uri() + "/%2E%2E/%2e%2e/secret.txt", build)
    assert not build_pdf.of_the_build((tmp_path / "singlehtml" / "en-other" / "x.js").as_uri(), build)
    assert not build_pdf.of_the_build("file://otherhost" + (build / "x.js").as_posix(), build)


# ---- the translations check --------------------------------------------------------------------------------------
ENGLISH = ("# Preface\n\nWho it is for.\n\n## What to install\n\n```bash\npip install teachllm\n```\n\n"
           "## How to read it\n\nIn order.\n")
CHINESE = "# 前言\n\n写给谁。\n\n## 安装什么\n\n```bash\npip install teachllm\n```\n\n## 怎么读\n\n按顺序。\n"


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A book of one page, book/preface.md, and its Chinese translation, to break."""
    (tmp_path / "book" / "zh").mkdir(parents=True)
    (tmp_path / "book" / "preface.md").write_text(ENGLISH, encoding="utf-8")
    monkeypatch.setattr(translations, "BOOK", tmp_path / "book")
    return tmp_path / "book"


def header() -> str:
    return f"<!-- en: preface.md {translations.text_hash(ENGLISH)} -->"


@pytest.mark.parametrize(("page", "wanted"), [
    (header(), "holds only its header line: translate book/preface.md below it"),
    (header() + "\n\n", "holds only its header line"),
    (header() + "\n" + ENGLISH, "is not translated yet"),
    (header() + "\n" + CHINESE.split("```\n")[0], "line 8: the code fence '```bash' is never closed"),
    (header() + "\n" + CHINESE.split("## 怎么读")[0], "has 2 headings where book/preface.md has 3, the first missing "
                                                     "or different at heading 3 ('## How to read it' in English)"),
    (header() + "\n" + CHINESE.replace("## 安装什么", "### 安装什么"), "different at heading 2"),
    (header() + "\n" + CHINESE + "\n## 附录\n", "the first extra: '## 附录'"),
], ids=["header only", "header and blank lines", "English", "fence left open", "cut short", "heading level",
        "extra heading"])
def test_a_broken_chinese_page_is_not_in_sync(book, page, wanted):
    (book / "zh" / "preface.md").write_text(page, encoding="utf-8")
    found = translations.book_problems("zh")
    assert len(found) == 1 and found[0].startswith("book/zh/preface.md") and wanted in found[0], found


def test_a_whole_chinese_page_is_in_sync(book):
    (book / "zh" / "preface.md").write_text(header() + "\n" + CHINESE, encoding="utf-8")
    assert translations.book_problems("zh") == []


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    """A copy of chapter 6 and its translation, the only chapter `check` sees."""
    src = translations.SOURCES / "06-logits-to-token.py"
    for path in (src, translations.translation_path(src, "zh")):
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setattr(translations, "SOURCES", tmp_path)
    return tmp_path / src.name


def run_check(monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["translations.py", "check"])
    with pytest.raises(SystemExit) as exit_:
        translations.main()
    return exit_.value.code, capsys.readouterr().out


def test_check_reports_a_broken_chinese_page(book, chapter, monkeypatch, capsys):
    (book / "zh" / "preface.md").write_text(header() + "\n", encoding="utf-8")
    status, out = run_check(monkeypatch, capsys)
    assert status == 1 and "in sync" not in out and "book/zh/preface.md holds only its header line" in out, out


def test_check_reports_a_byte_order_mark_in_an_english_chapter_source(book, chapter, monkeypatch, capsys):
    """jupytext reads the mark as text, so the built notebook's title cell would be a code cell."""
    import jupytext

    (book / "zh" / "preface.md").write_text(header() + "\n" + CHINESE, encoding="utf-8")
    assert run_check(monkeypatch, capsys)[0] == 0  # the copies are in sync to begin with
    chapter.write_bytes(b"\xef\xbb\xbf" + chapter.read_bytes())
    assert jupytext.read(chapter).cells[0].cell_type == "code"  # why the mark is a problem in a source
    status, out = run_check(monkeypatch, capsys)
    assert status == 1 and "in sync" not in out, out
    assert "06-logits-to-token.py starts with a byte-order mark" in out and "without a BOM" in out, out
