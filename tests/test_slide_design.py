"""The slide decks read as slides (issue 36): every deck of `make slides`, in both languages, built as HTML in memory
(scripts/build_slides.py's chapter_deck, lecture_deck and deck_html; no browser, no assets) and read back slide by
slide (each <section>):

- every slide opens with its section's title: its own heading, or a running header that repeats the last
  section heading word for word, followed by the continuation mark, one mark per language;
- a section heading (`##`) is the first thing on its slide, never under the tail of the section before;
- no fragment: a slide with fewer than 3 lines of text shows a title, a figure or a widget;
- no waste: two slides of one section that would fit on one are one;
- the lecture deck's sections are the lecture path's (book/lecture-path.md), stop by stop, in order: read here
  from the page itself, every section number a stop names for the chapters its **Chapter(s):** line names;
- every section slide (a section's first, a chapter's title, a lecture stop's title) has speaker notes, and they
  carry no raw TeX (the presenter view does not typeset); code never breaks inside an identifier;
- the book's kernel-free widgets run in the decks: each widget a notebook saves in its static form
  (application/vnd.teachllm.widget+json) is on a slide as the book's <div class="teachllm-live"> with that same
  form beside it, the deck loads book/_static/teachllm-widgets.js, copied unchanged, and no slide says "open
  the notebook" instead.

The counts are printed (pytest -s) for the record: slides, continuations, fragments, slides without a title.
"""

import filecmp
import html
import json
import math
import re
import sys
from pathlib import Path

import pytest

from teachllm.viz.language import display_width

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_slides  # noqa: E402  (scripts/ is not a package)

LANGS = ("en", "zh")
MARK = {"en": "(continued)", "zh": "（续）"}
TEXT_COLUMNS = 90  # characters of prose on a line of a 1280 px slide at 24 px (a Chinese character counts two)
SLIDE = re.compile(r"<section[^>]*>(.*?)</section>", re.S)
HEADING = re.compile(r"<(h[12])([^>]*)>(.*?)</\1>", re.S)


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup)).strip()


def read_slide(markup: str) -> dict:
    """One <section> as what a student sees: its first element, headings, lines of text, figures, notes."""
    notes = "".join(re.findall(r'<aside class="notes">(.*?)</aside>', markup, re.S))
    body = re.sub(r'<aside class="notes">.*?</aside>|<script[^>]*>.*?</script>', "", markup, flags=re.S)
    first = re.match(r"\s*<(\w+)([^>]*)>", body)
    headings = [(tag, attrs, text_of(inner)) for tag, attrs, inner in HEADING.findall(body)]
    rows = sum(text_of(pre).count("\n") + 1 for pre in re.findall(r"<pre[^>]*>(.*?)</pre>", body, re.S))
    rest = re.sub(r"<pre[^>]*>.*?</pre>|<h[1-6][^>]*>.*?</h[1-6]>", "", body, flags=re.S)
    rows += len(re.findall(r"<tr>", rest)) - len(re.findall(r"<thead>", rest))
    rest = re.sub(r"<table>.*?</table>", "", rest, flags=re.S)
    for chunk in re.split(r"</p>|</li>|<li>|<p[^>]*>|</div>|<ul>|<ol[^>]*>|</ul>|</ol>", rest):
        if (plain := text_of(chunk)) and 'class="continued"' not in chunk:
            rows += math.ceil(display_width(plain) / TEXT_COLUMNS)
    visual = r'class="figure"|<img|class="widget-note"|class="teachllm-live"'
    running = bool(first) and first[1] == "h2" and "running" in first[2]  # a running header, titled or not
    opens = bool(first) and (first[1] in ("h1", "h2") and not running
                             or 'class="stop-title"' in first[2])  # a section's first slide, a title
    header = re.match(r"\s*<h2[^>]*>(.*?)</h2>", body, re.S) if running else None
    section = re.search(r'<span class="section">(.*?)</span>', header[1], re.S) if header else None
    return {"first": (first[1], first[2]) if first else ("", ""), "headings": headings, "rows": rows,
            "visual": bool(re.search(visual, body)), "title": "<h1" in body,
            # a continuation: a slide that opens with the continuation mark (a slide the author titled has none)
            "continued": bool(header) and 'class="mark"' in header[1], "titled": bool(section),
            "running": text_of(section[1]) if section else text_of(header[1]) if header else "",
            "notes": text_of(notes), "html": body, "section": opens}


def read_deck(page: str) -> list[dict]:
    return [read_slide(m) for m in SLIDE.findall(page)]


@pytest.fixture(scope="module")
def decks() -> dict[str, list[dict]]:
    """Every deck of both languages ("zh/06-logits-to-token" …), read slide by slide."""
    found = {}
    for lang in LANGS:
        prefix = "" if lang == "en" else "zh/"
        for path in sorted(build_slides.NOTEBOOKS[lang].glob("[0-9][0-9]-*.ipynb")):
            slides = build_slides.chapter_deck(path, lang)
            found[prefix + path.stem] = read_deck(build_slides.deck_html("t", slides, lang, "assets"))
        found[prefix + "lecture"] = read_deck(build_slides.deck_html("t", build_slides.lecture_deck(lang), lang, "a"))
    for name, slides in found.items():  # the record: pytest -s shows it
        print(f"{name}: {len(slides)} slides, {sum(s['continued'] for s in slides)} continuations, "
              f"{len(fragments(slides))} fragments, {len(untitled(slides))} without a title")
    return found


def untitled(slides: list[dict]) -> list[int]:
    """Slides that do not open with their section's title: a heading of their own, a running header that
    repeats the last section heading and ends with the continuation mark, or (a slide the author titled) one
    whose first line repeats the section heading, its own title below."""
    found, section = [], None
    for k, slide in enumerate(slides):
        tag, attrs = slide["first"]
        if slide["section"]:
            section = slide["headings"][0][2]
            continue
        mark = r"\s*(\(continued\)|（续）)"
        if slide["titled"]:
            if section is None or slide["running"] != section:
                found.append(k)
        elif tag != "h2" or section is None or not re.fullmatch(re.escape(section) + mark, slide["running"]):
            found.append(k)
    return found


def fragments(slides: list[dict]) -> list[int]:
    return [k for k, s in enumerate(slides) if s["rows"] < 3 and not s["visual"] and not s["title"]]


def test_every_slide_opens_with_its_sections_title(decks):
    bad = {name: untitled(slides) for name, slides in decks.items() if untitled(slides)}
    assert not bad, f"slides (#/N) without their section's title: {bad}"


def test_one_continuation_mark_per_language(decks):
    for name, slides in decks.items():
        lang = "zh" if name.startswith("zh/") else "en"
        marks = {re.search(r"(\(continued\)|（续）|\(续\)|\(cont\.?\))\s*$", s["headings"][0][2] if s["headings"]
                           else text_of(s["html"])[:40]) for s in slides if s["continued"]}
        assert {m[1] if m else None for m in marks} <= {MARK[lang]}, f"{name}: continuation marks {marks}"
    assert MARK["zh"] in build_slides.DECK_JS and "(续)" not in build_slides.DECK_JS  # the browser's own pages


def test_a_section_heading_starts_its_slide(decks):
    def late(slide: dict) -> bool:  # a section heading that is not the slide's first element
        sections = [k for k, (tag, attrs, _) in enumerate(slide["headings"]) if tag == "h2" and "running" not in attrs]
        return bool(sections) and (sections != [0] or slide["first"][0] != "h2")

    bad = {name: [k for k, s in enumerate(slides) if late(s)] for name, slides in decks.items()}
    bad = {name: ks for name, ks in bad.items() if ks}
    assert not bad, f"section headings under the tail of another section (#/N): {bad}"


def test_no_slide_is_a_fragment(decks):
    bad = {name: [(k, s["rows"], text_of(s["html"])[-60:]) for k in fragments(slides) for s in [slides[k]]]
           for name, slides in decks.items() if fragments(slides)}
    assert not bad, f"slides with fewer than 3 lines and no title, figure or widget: {bad}"


def test_no_two_slides_of_a_section_would_fit_on_one():
    for lang in LANGS:
        for path in sorted(build_slides.NOTEBOOKS[lang].glob("[0-9][0-9]-*.ipynb")):
            slides = build_slides.chapter_deck(path, lang)
            for k in range(1, len(slides)):
                a, b = slides[k - 1], slides[k]
                rest = sum(block.height for block in b.blocks if block.kind != "running")
                assert a.section != b.section or a.part != b.part or a.height + rest > build_slides.BUDGET, \
                    f"{path.name}: slides #/{k - 1} and #/{k} ({a.section}) fit on one ({a.height:.0f} + {rest:.0f} px)"


def lecture_path_sections(lang: str) -> list[str]:
    """The lecture path's sections, read from the page: per stop, per chapter its **Chapter(s):** line names (in
    that order), every section number of that chapter the stop names (ranges such as 6.1–6.5 included), by
    number. A course note's §4.4 is not one."""
    text = (build_slides.PAGES[lang] / "lecture-path.md").read_text(encoding="utf-8")
    found = []
    for stop in re.split(r"^## ", text, flags=re.M)[1:]:
        line = re.search(r"\*\*(Chapters?:|章节：)\*\*(.*?)\n(\s*\n|- )", stop, re.S)
        if not line:
            continue
        for chapter in re.findall(r"chapters/(\d+)-", line[2]):
            number, named = int(chapter), set()
            for m in re.finditer(rf"(?<![\d.§]){number}\.(\d+)(?:\s*[–-]\s*{number}\.(\d+))?(?!\d|\.\d)", stop):
                named |= set(range(int(m[1]), int(m[2] or m[1]) + 1))
            found += [f"{number}.{n}" for n in sorted(named)]
    return found


@pytest.mark.parametrize("lang", LANGS)
def test_the_lecture_deck_has_the_lecture_paths_sections_in_order(decks, lang):
    expected = lecture_path_sections(lang)
    assert {"3.1", "3.5", "5.4", "6.7", "7.7", "10.5", "4.4"} <= set(expected), expected  # the page names them
    assert expected.index("6.9") < expected.index("8.2"), expected
    slides = decks["lecture" if lang == "en" else "zh/lecture"]
    shown = [s["headings"][0][2] for s in slides if s["first"][0] == "h2" and "running" not in s["first"][1]]
    numbers = [m[1] if (m := re.match(r"(\d+\.\d+)\s", heading)) else heading for heading in shown]
    assert numbers == expected


def test_speaker_notes_carry_no_raw_tex(decks):
    raw = re.compile(r"\\[()\[\]]|\$|\\[A-Za-z]+|\^\{")
    bad = {name: [(k, raw.search(s["notes"])[0]) for k, s in enumerate(slides) if raw.search(s["notes"])]
           for name, slides in decks.items()}
    bad = {name: ks for name, ks in bad.items() if ks}
    assert not bad, f"raw TeX in speaker notes (#/N): {bad}"
    notes = build_slides.notes_html(["Top-$k$ with $k = 3$; $2 \\cdot \\text{layers} \\cdot s^2$."], "en")
    assert "Top-k with k = 3; 2 · layers · s²." in notes, notes


def test_code_breaks_between_words_not_inside_identifiers():
    css = build_slides.DECK_CSS
    assert "break-all" not in css and re.search(r"word-break:\s*normal", css), "code may split identifiers"
    # the builder judges heights the same way: a long call wraps before a whole word, so it takes 2 lines of 10
    assert build_slides.code_lines("a = tokenizer.encode(x)", 10) >= 3


def test_a_lecture_path_naming_a_section_a_chapter_lacks_is_refused_by_name(tmp_path, monkeypatch):
    page = tmp_path / "lecture-path.md"
    page.write_text("# Lecture\n\n## 1. Sampling\n\n**Chapter:** {doc}`chapters/06-logits-to-token`, sections 6.1 and "
                    "6.12.\n\n- Run 6.1.\n", encoding="utf-8")
    monkeypatch.setattr(build_slides, "PAGES", {"en": tmp_path})
    with pytest.raises(build_slides.DeckError, match=r"lecture-path\.md, stop '1\. Sampling': .*06-logits-to-token"
                       r"\.ipynb has no section 6\.12") as e:
        build_slides.lecture_deck("en")
    assert "fix the section number in the lecture path" in str(e.value)


def test_every_section_slide_has_speaker_notes(decks):
    """A section's first slide, a chapter's title slide and a lecture stop's title carry notes: the guide's or the
    lecture path's where they say something, else a note made from the section itself."""
    bad = {name: [k for k, s in enumerate(slides) if s["section"] and display_width(s["notes"]) < 20]
           for name, slides in decks.items()}
    bad = {name: ks for name, ks in bad.items() if ks}
    assert not bad, f"section slides without speaker notes (#/N): {bad}"
    for name, slides in decks.items():
        assert sum(s["section"] for s in slides) >= 5, f"{name}: only {sum(s['section'] for s in slides)} sections"
    print({name: f"{sum(bool(s['notes']) for s in slides)}/{len(slides)} slides with notes" for name, slides in
           decks.items()})


def test_a_generated_note_quotes_the_section_and_invents_nothing():
    section = build_slides.Section("6.2", "6.2 Greedy", build_slides.prose_blocks(
        "## 6.2 Greedy\n\nThe simplest strategy takes the most likely token, $\\arg\\max$. It is deterministic.\n\n"
        "More text that is not quoted.", "en"))
    section.blocks.append(build_slides.code_block("x = 1"))
    note = build_slides.notes_html(build_slides.section_note(section, "en"), "en")
    assert "The simplest strategy takes the most likely token, argmax. It is deterministic." in note, note
    assert "not quoted" not in note and "code and what it prints" in note, note


def saved_widgets(path: Path) -> list[dict]:
    """The kernel-free forms a notebook saved, for the cells the slides show."""
    import nbformat

    found = []
    for cell in nbformat.read(path, as_version=4).cells:
        kind = (cell.metadata.get("slideshow") or {}).get("slide_type", "-")
        if cell.cell_type != "code" or kind == "skip" or build_slides.LEFT_OUT & set(cell.metadata.get("tags", [])):
            continue
        for output in cell.get("outputs", []):
            if build_slides.LIVE in output.get("data", {}):
                form = output["data"][build_slides.LIVE]
                found.append(json.loads(form) if isinstance(form, str) else form)
    return found


@pytest.mark.parametrize("lang", LANGS)
def test_the_books_widgets_run_in_the_decks(lang):
    shown_widgets = 0
    for path in sorted(build_slides.NOTEBOOKS[lang].glob("[0-9][0-9]-*.ipynb")):
        page = build_slides.deck_html("t", build_slides.chapter_deck(path, lang), lang, "assets")
        assert '<script src="assets/teachllm-widgets.js"></script>' in page
        assert 'class="widget-note"' not in page, f"{path.name}: a widget slide still sends the room to JupyterLab"
        roots = re.findall(r'<div class="teachllm-live" id="([\w-]+)" data-teachllm-widget="(\w+)" '
                           r'data-figure-height="(\d+)">', page)
        forms = saved_widgets(path)
        assert [name for _, name, _ in roots] == [form["widget"] for form in forms], path.name
        for (element_id, _, height), form in zip(roots, forms, strict=True):
            spec = re.search(rf'<script type="application/json" id="{element_id}-json">(.*?)</script>', page, re.S)
            assert spec and json.loads(spec[1].replace("<\\/", "</")) == form, f"{path.name}: {element_id}"
            assert build_slides.WIDGET_FIGURE_MIN <= int(height) or int(height) == \
                build_slides.widget_figure_height(form), (path.name, height)
        shown_widgets += len(roots)
    assert shown_widgets >= 10, shown_widgets  # chapters 2–7 and 10–12 have one or two each


def test_the_deck_assets_carry_the_books_widget_script_unchanged(tmp_path, monkeypatch):
    vendor = {"reveal": tmp_path / "reveal", "mathjax": tmp_path / "mathjax"}
    for name, file in (("reveal", "reveal.js"), ("mathjax", "tex-svg.js")):
        vendor[name].mkdir()
        (vendor[name] / file).write_text("// stub", encoding="utf-8")
    monkeypatch.setattr(build_slides, "VENDOR", vendor)
    monkeypatch.setattr(build_slides, "OUT", tmp_path / "slides")
    build_slides.copy_assets()
    copied = tmp_path / "slides" / "assets" / "teachllm-widgets.js"
    assert filecmp.cmp(copied, ROOT / "book" / "_static" / "teachllm-widgets.js", shallow=False)
    deck_js = (tmp_path / "slides" / "assets" / "deck.js").read_text(encoding="utf-8")
    assert "Plotly.react = function" in deck_js and "figureHeight" in deck_js  # the figure at the slide's size
