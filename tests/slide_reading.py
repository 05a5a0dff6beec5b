"""Reading a built deck back as a student sees it, slide by slide: shared by tests/test_slide_design.py (the HTML
scripts/build_slides.py writes) and tests/browser/test_slides.py (the slides as Chromium shows them, after deck.js
has moved what did not fit onto slides of its own)."""

import html
import math
import re
import sys
from pathlib import Path

from teachllm.viz.language import display_width

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_slides  # noqa: E402  (scripts/ is not a package)

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
            "continued": bool(header) and 'class="mark"' in header[1], "part": bool(section),
            "titled": bool(section) and 'class="mark"' not in header[1],
            "running": text_of(section[1]) if section else text_of(header[1]) if header else "",
            "notes": text_of(notes), "html": body, "section": opens}


def read_deck(page: str) -> list[dict]:
    return [read_slide(m) for m in SLIDE.findall(page)]


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
        if slide["part"]:  # a slide an author titled, or its continuation: the section's title on its first line
            if section is None or slide["running"] != section:
                found.append(k)
        elif tag != "h2" or section is None or not re.fullmatch(re.escape(section) + mark, slide["running"]):
            found.append(k)
    return found


def fragments(slides: list[dict]) -> list[int]:
    return [k for k, s in enumerate(slides) if s["rows"] < 3 and not s["visual"] and not s["title"]]


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


RAW_TEX = re.compile(r"\\[()\[\]]|\$|\\[A-Za-z]+|\^\{")  # what MathJax would have typeset: \( \[ $ \frac ^{


def continuations(slides: list[dict]) -> int:
    """Slides that carry the continuation mark: what did not fit on the slide before, not a slide of its own."""
    return sum(s["continued"] for s in slides)


def share(slides: list[dict]) -> float:
    return continuations(slides) / len(slides)


def section_numbers(slides: list[dict]) -> list[str]:
    """The sections a deck opens, in order: each section slide's number ("6.3"), or its heading when it has none."""
    shown = [s["headings"][0][2] for s in slides if s["first"][0] == "h2" and "running" not in s["first"][1]]
    return [m[1] if (m := re.match(r"(\d+\.\d+)\s", heading)) else heading for heading in shown]


def without_notes(slides: list[dict]) -> list[int]:
    """Section slides (a section's first, a chapter's title, a lecture stop's title) with no speaker notes."""
    return [k for k, s in enumerate(slides) if s["section"] and display_width(s["notes"]) < 20]


def raw_tex(slides: list[dict]) -> list[tuple[int, str]]:
    return [(k, RAW_TEX.search(s["notes"])[0]) for k, s in enumerate(slides) if RAW_TEX.search(s["notes"])]
