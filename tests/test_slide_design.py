"""The slide decks read as slides (issue 36): every deck of `make slides`, in both languages, built as HTML in memory
(scripts/build_slides.py's chapter_deck, lecture_deck and deck_html; no browser, no assets) and read back slide by
slide (each <section>):

- every slide opens with its section's title: its own heading, a running header that repeats the last section
  heading word for word, followed by the continuation mark, one mark per language, or (a slide its author
  titled) the section heading small above the slide's own title;
- slides are chosen, not paginated: in every deck fewer than a quarter of the slides are continuations, and both
  editions carry the same choices (each cell's `slide` metadata); the choices themselves (lines folded, output
  rows kept, prose said in the notes, titled slides) are shown on a notebook made here, and a choice the deck
  cannot keep stops the build naming the cell;
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

The counts are printed (pytest -s) for the record: slides, continuations and their share, titled slides,
fragments, slides without a title. tests/slide_reading.py reads a slide; tests/browser/test_slides.py reads them
again as Chromium shows them.
"""

import filecmp
import json
import re
from pathlib import Path

import pytest
from slide_reading import (
    MARK,
    ROOT,
    build_slides,
    continuations,
    fragments,
    lecture_path_sections,
    raw_tex,
    read_deck,
    section_numbers,
    share,
    text_of,
    untitled,
    without_notes,
)

LANGS = ("en", "zh")


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
        print(f"{name}: {len(slides)} slides, {continuations(slides)} continuations ({share(slides):.0%}), "
              f"{sum(s['titled'] for s in slides)} titled by their authors, {len(fragments(slides))} fragments, "
              f"{len(untitled(slides))} without a title")
    return found


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


@pytest.mark.parametrize("lang", LANGS)
def test_the_lecture_deck_has_the_lecture_paths_sections_in_order(decks, lang):
    expected = lecture_path_sections(lang)
    assert {"3.1", "3.5", "5.4", "6.7", "7.7", "10.5", "4.4"} <= set(expected), expected  # the page names them
    assert expected.index("6.9") < expected.index("8.2"), expected
    assert section_numbers(decks["lecture" if lang == "en" else "zh/lecture"]) == expected


def test_speaker_notes_carry_no_raw_tex(decks):
    bad = {name: raw_tex(slides) for name, slides in decks.items() if raw_tex(slides)}
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
    bad = {name: without_notes(slides) for name, slides in decks.items() if without_notes(slides)}
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


def test_continuations_are_under_a_quarter_of_every_deck(decks):
    """Slides are chosen by their authors, not a notebook paginated: in every deck, fewer than a quarter of the
    slides carry on the slide before them ("(continued)"); a slide an author titled is a slide of its own."""
    shares = {name: share(slides) for name, slides in decks.items()}
    print("continuations per deck:", ", ".join(f"{name} {value:.0%}" for name, value in shares.items()))
    assert all(value < 0.25 for value in shares.values()), {n: f"{v:.0%}" for n, v in shares.items() if v >= 0.25}


def test_both_editions_make_the_same_choices():
    """The slide metadata lives in the chapter's .py; each edition's notebook carries it cell for cell."""
    for path in sorted(build_slides.NOTEBOOKS["en"].glob("[0-9][0-9]-*.ipynb")):
        import nbformat

        def chosen(p: Path) -> list:
            cells = nbformat.read(p, as_version=4).cells
            return [(c.cell_type, c.metadata.get("slide"), c.metadata.get("slideshow")) for c in cells
                    if "language" not in c.metadata.get("tags", [])]

        english, chinese = chosen(path), chosen(build_slides.NOTEBOOKS["zh"] / path.name)
        assert english == chinese, path.name
        assert sum(bool(c[1]) for c in english) >= 10, f"{path.name}: its author chose almost nothing"


# ---- the author's choices, on a notebook made here ---------------------------------------------------------------
def tiny_deck(tmp_path, cells, lang="en"):
    """A two-section notebook of these (kind, source, slide metadata, printed text) cells, as slides."""
    import nbformat

    made = [nbformat.v4.new_markdown_cell("# Chapter 1 · Tiny\n\nThe first paragraph, said.\n\nThe second, shown.",
                                          metadata={"slide": {"say": [2]}})]
    for kind, source, choice, printed in cells:
        meta = {"slide": choice} if choice else {}
        if kind == "markdown":
            made.append(nbformat.v4.new_markdown_cell(source, metadata=meta))
        else:
            cell = nbformat.v4.new_code_cell(source, metadata=meta)
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)] if printed else []
            made.append(cell)
    path = tmp_path / "01-tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=made), path)
    slides = build_slides.pack(build_slides.notebook_groups(path, lang, build_slides.figure_counter("t")), lang)
    return slides, read_deck(build_slides.deck_html("t", slides, lang, "assets"))


LOOP = "import os\nx = 1\nfor i in range(5):\n    y = i * x\n    print(y)\nassert y == 4"


def test_a_code_cell_shows_the_lines_its_author_chose(tmp_path):
    _, slides = tiny_deck(tmp_path, [("markdown", "## 1.1 Loop\n\nA loop.\n\nSaid by its first words.",
                                      {"say": ["Said by"]}, ""),
                                     ("code", LOOP, {"code": [[2, 5]], "output": [1, -1]}, "0\n1\n2\n3\n4\n")])
    assert "Said by" not in slides[1]["html"] and "Said by its first words." in slides[1]["notes"]
    code = re.findall(r'<pre class="code">(.*?)</pre>', slides[1]["html"], re.S)
    shown = text_of(code[0]).split("\n")
    assert shown == ["# ⋯", "x = 1", "for i in range(5):", "    y = i * x", "    print(y)", "# ⋯"], shown
    output = text_of(re.search(r'<pre class="output">(.*?)</pre>', slides[1]["html"], re.S)[1]).split("\n")
    assert output == ["0", "⋯", "4"], output
    assert "The second, shown." in slides[0]["html"] and "The first paragraph" not in slides[0]["html"]
    assert "The first paragraph, said." in slides[0]["notes"]  # said, not shown: in the speaker notes


def test_a_titled_slide_is_a_slide_of_its_own_under_its_sections_title(tmp_path):
    long = "\n".join(f"print({k})" for k in range(30))  # taller than a slide: its end goes on
    _, slides = tiny_deck(tmp_path, [("markdown", "## 1.1 Loop\n\nA loop.", None, ""),
                                     ("code", "x = 1", None, "1\n"),
                                     ("markdown", "Now a longer listing:", {"title": {"en": "A long one",
                                                                                     "zh": "一段长的"}}, ""),
                                     ("code", long, None, "")], "en")
    titled = [s for s in slides if s["titled"]]
    assert len(titled) == 1 and not titled[0]["continued"] and titled[0]["running"] == "1.1 Loop"
    assert "A long one" in text_of(titled[0]["html"]) and "Now a longer listing" in titled[0]["html"]
    after = slides[slides.index(titled[0]) + 1]
    assert after["continued"] and "A long one" in text_of(after["html"]) and "(continued)" in text_of(after["html"])
    assert untitled(slides) == [] and share(slides) == 1 / len(slides)


@pytest.mark.parametrize(("cell", "error"), [
    (("code", LOOP, {"code": [[2, 9]]}, ""), r"slide\.code names line 9, and the code has 6 line"),
    (("code", "print(\n    1,\n    2)\nx = 1", {"code": [1, 4]}, ""), r"do not stand as Python"),
    (("code", LOOP, {"lines": [1]}, ""), r"takes code, output, title, not lines"),
    (("code", LOOP, {"output": [3]}, "0\n1\n"), r"slide\.output names line 3, and the output has 2"),
    (("markdown", "Some text.\n\n## 1.2 Next", {"say": [2]}, ""), r"a heading is always shown"),
    (("markdown", "Some text.", {"title": {"en": "Only English"}}, ""), r"title in every edition"),
    (("markdown", "Some text.", {"title": {"en": "x" * 70, "zh": "短"}}, ""), r"too long for one line"),
    (("markdown", "One.\n\nTwo.", {"title": {"en": "T", "zh": "T", "at": 3}}, ""), r"the cell has 2 block"),
    (("markdown", "One.\n\nTwo.", {"say": ["Three"]}, ""), r"starting 'Three', and no block\(s\) of the English"),
])
def test_a_choice_the_deck_cannot_keep_is_refused_naming_the_cell(tmp_path, cell, error):
    with pytest.raises(build_slides.DeckError, match=error) as e:
        tiny_deck(tmp_path, [("markdown", "## 1.1 Loop", None, ""), cell])
    assert "01-tiny.ipynb, cell 3" in str(e.value)


def test_a_translation_must_keep_the_blocks_a_choice_counts(tmp_path, monkeypatch):
    import nbformat

    english, chinese = tmp_path / "en", tmp_path / "zh"
    english.mkdir(), chinese.mkdir()
    for folder, text in ((english, "One.\n\nTwo."), (chinese, "一。二。")):  # the translation joined two paragraphs
        cells = [nbformat.v4.new_markdown_cell("# Chapter 1 · Tiny"),
                 nbformat.v4.new_markdown_cell("## 1.1 A\n\n" + text, metadata={"slide": {"say": [3]}})]
        nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / "01-tiny.ipynb")
    monkeypatch.setattr(build_slides, "NOTEBOOKS", {"en": english, "zh": chinese})
    build_slides.notebook_groups(english / "01-tiny.ipynb", "en", build_slides.figure_counter("t"))
    with pytest.raises(build_slides.DeckError, match=r"this translation's blocks \(heading, paragraph\) are not the "
                                                     r"English cell's \(heading, paragraph, paragraph\)"):
        build_slides.notebook_groups(chinese / "01-tiny.ipynb", "zh", build_slides.figure_counter("t"))
