"""`make slides`: reveal.js decks built from the committed chapter notebooks, for teaching from the front of a room.

    book/_build/slides/lecture.html        the 90-minute inference lecture, in the lecture path's order
    book/_build/slides/NN-name.html        one deck per chapter
    book/_build/slides/zh/...              the same decks from the Chinese notebooks and pages
    book/_build/slides/assets/             reveal.js and MathJax (npm, vendored by scripts/fetch_book_assets.sh),
                                           plotly.js (from the plotly package) and deck.css: nothing is fetched

No second copy of the prose: a deck is the notebook's cells (prose, code and its outputs), cut into slides where
the notebook's slide metadata says (`slide`, `subslide`; `skip` cells, exercises and checks are left out). A
slide is 1280×720 and never scaled: code is at least 20 px, and what does not fit moves on to a continuation
slide (a long cell is split between lines), never shrunk. The lecture deck takes the sections the lecture path
(book/lecture-path.md) names, stop by stop, each stop opening with its own slide. Speaker notes (reveal.js's
presenter view: press S) come from the lecturer's guide: a chapter's plan on its first slide, what to run
and ask where the guide names a section, and from the lecture path's "say" and "ask" lines in the lecture deck.

A notebook the decks cannot be built from (every cell left out, no title in the first cell, a figure whose
height is not a number) stops the build with one line naming the notebook, the cell and the fix (DeckError).

How a slide's height is judged: each block (a paragraph, a code cell, an output, a figure) is given the height
its lines take at the deck's font sizes (deck.css), counting wrapped lines; the tests then measure every slide
in Chromium and fail if one scrolls.

    python scripts/build_slides.py           # every deck, both languages
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from teachllm.viz.language import display_width

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
OUT = BOOK / "_build" / "slides"
VENDOR = {"reveal": BOOK / "_slides_vendor" / "reveal", "mathjax": BOOK / "_vendor" / "mathjax"}
NOTEBOOKS = {"en": ROOT / "notebooks", "zh": ROOT / "notebooks" / "zh"}
PAGES = {"en": BOOK, "zh": BOOK / "zh"}
PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"
LEFT_OUT = {"exercise", "check", "remove-cell", "language"}

# The slide's geometry and type sizes (deck.css uses the same numbers): what a block's height is judged by.
WIDTH, HEIGHT, PAD_X, PAD_Y = 1280, 720, 44, 28
BUDGET = HEIGHT - 2 * PAD_Y - 8
TEXT_PX, CODE_PX = 24, 20
TEXT_LINE, CODE_LINE = 34, 26  # line heights in px
TEXT_COLUMNS = (WIDTH - 2 * PAD_X) / (TEXT_PX * 0.52)  # average Latin glyph ≈ 0.52 em; a Chinese one is 1 em (2 units)
CODE_COLUMNS = int((WIDTH - 2 * PAD_X - 28) / (CODE_PX * 0.602))  # a monospace glyph is 0.602 em
FIGURE_MAX = 520

WORDS = {"en": {"continued": "continued", "widget": "Interactive widget <code>{w}</code>: open this chapter's "
                "notebook in JupyterLab to use it.", "lecture": "The inference lecture: from logits to the KV cache"},
         "zh": {"continued": "续", "widget": "交互控件 <code>{w}</code>：在 JupyterLab 中打开本章的笔记本使用。",
                "lecture": "推理一讲：从 logits 到 KV 缓存"}}


class DeckError(ValueError):
    """A notebook the decks cannot be built from, in one line naming the notebook, the cell and the fix;
    `make slides` prints it without a traceback."""


def shown(path: Path) -> str:
    """A path as a message names it: from the checkout's root when it is in the checkout."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# ---- text → HTML -----------------------------------------------------------------------------------------
def markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable("table").use(dollarmath_plugin, double_inline=True)


def myst_roles(text: str, lang: str = "en") -> str:
    """MyST roles as their text: {term}`KV 缓存 <KV cache>` → KV 缓存, {doc}`chapters/06-logits-to-token` →
    chapter 6 (第 6 章), {doc}`preface` → preface."""
    chapter = "chapter {}" if lang == "en" else "第 {} 章"
    text = re.sub(r"\{doc\}`chapters/(\d+)-[\w-]+`", lambda m: chapter.format(int(m[1])), text)
    text = re.sub(r"\{[\w:-]+\}`([^`<]*?)\s*<[^`]*>`", r"\1", text)
    return re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", text)


def math_html(rendered: str) -> str:
    """dollarmath's spans → the delimiters MathJax looks for."""
    rendered = re.sub(r'<span class="math inline">(.*?)</span>', r"\\(\1\\)", rendered, flags=re.S)
    return re.sub(r'<div class="math block">(.*?)</div>', r"<p>\\[\1\\]</p>", rendered, flags=re.S)


def visual_lines(text: str, columns: float) -> int:
    """Lines `text` takes once wrapped at `columns` (a Chinese character takes two)."""
    return sum(max(1, math.ceil(display_width(line) / columns)) for line in text.split("\n"))


@dataclass
class Block:
    html: str
    height: float
    lines: list[str] | None = None  # a code or text block: its lines, so it can be split between slides
    kind: str = ""


def prose_blocks(source: str, lang: str = "en") -> list[Block]:
    """A Markdown cell as one block per top-level element (heading, paragraph, list, table, display maths)."""
    md = markdown()
    text = myst_roles(source, lang)
    tokens = md.parse(text)
    blocks = []
    lines = text.split("\n")
    for token in tokens:
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        begin, end = token.map
        chunk = "\n".join(lines[begin:end])
        rendered = math_html(md.render(chunk))
        if token.type == "heading_open":
            height = 64 if token.tag == "h1" else 56
        elif token.type == "table_open":
            height = 40 * (end - begin)
        elif token.type == "math_block":
            height = 30 * chunk.count("\n") + 80
        else:
            plain = re.sub(r"\$\$?[^$]*\$\$?", "xxxxxxxxxx", chunk)
            height = TEXT_LINE * visual_lines(plain, TEXT_COLUMNS) + 14
        blocks.append(Block(rendered, height, kind=token.type))
    return blocks


def code_block(source: str, kind: str = "code") -> Block:
    lines = source.rstrip("\n").split("\n")
    return Block("", 0, lines=lines, kind=kind)


def render_lines(block: Block, lines: list[str]) -> Block:
    """A code or output block holding these lines, with its height."""
    text = "\n".join(lines)
    if block.kind == "code":
        body = highlight(text, PythonLexer(), HtmlFormatter(nowrap=True))
        markup = f'<pre class="code">{body}</pre>'
    else:
        markup = f'<pre class="output">{html.escape(text)}</pre>'
    return Block(markup, CODE_LINE * visual_lines(text, CODE_COLUMNS) + 26, kind=block.kind)


def figure_height(layout: dict, where: str = "a figure") -> int:
    """The figure's height on a slide in px: the layout's (450 when it sets none), at most FIGURE_MAX. plotly
    takes a height as a number of pixels; anything else ("450px") is a DeckError naming `where`."""
    height = layout.get("height")
    if height is None:
        return 450
    if isinstance(height, bool) or not isinstance(height, int | float) or not 0 < height < float("inf"):
        raise DeckError(f"{where}: the figure's layout height is {height!r}; use a number of pixels, e.g. 450")
    return int(min(height, FIGURE_MAX))


def figure_block(figure: dict, png: str | None, figure_id: str, where: str = "a figure") -> Block:
    layout = dict(figure.get("layout") or {})
    height = figure_height(layout, where)
    layout.update(height=height, width=WIDTH - 2 * PAD_X - 20, autosize=False)
    layout.pop("template_is_default", None)
    spec = json.dumps({"data": figure.get("data", []), "layout": layout}, separators=(",", ":")).replace("</", "<\\/")
    fallback = (f'<noscript><img alt="figure" style="max-height:{height}px" src="data:image/png;base64,'
                f'{"".join(png.split())}"></noscript>' if png else "")
    return Block(f'<div class="figure" id="{figure_id}" style="height:{height}px">{fallback}</div>'
                 f'<script type="application/json" id="{figure_id}-json">{spec}</script>', height + 16, kind="figure")


def output_blocks(cell, lang: str, figure_ids, where: str = "a cell") -> list[Block]:
    blocks, text = [], []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            text.append(output.text)
            continue
        data = output.get("data", {})
        if PLOTLY in data:
            png = data.get("image/png")
            png = "".join(png) if isinstance(png, list) else png
            blocks.append(figure_block(data[PLOTLY], png, next(figure_ids), where))
        elif WIDGET in data:
            name = re.match(r"[\[\"'\s]*([A-Za-z_]\w*)", "".join(data.get("text/plain", ""))) or None
            note = WORDS[lang]["widget"].format(w=html.escape(name[1] if name else "widget"))
            blocks.append(Block(f'<p class="widget-note">{note}</p>', 2 * TEXT_LINE + 20, kind="widget"))
        elif "image/png" in data:
            png = "".join(data["image/png"]) if isinstance(data["image/png"], list) else data["image/png"]
            blocks.append(Block(f'<img class="png" src="data:image/png;base64,{png}">', FIGURE_MAX, kind="png"))
        elif "text/plain" in data:
            text.append("".join(data["text/plain"]) + "\n")
    out = "".join(text).rstrip("\n")
    return ([code_block(out, "output")] if out else []) + blocks


# ---- cells → slides ----------------------------------------------------------------------------------------
@dataclass
class Slide:
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    section: str | None = None

    @property
    def height(self) -> float:
        return sum(b.height for b in self.blocks)


def pack(groups: list[tuple[list[Block], list[str], str | None]], lang: str) -> list[Slide]:
    """Each group (the cells from one slide mark to the next) becomes one slide or more: blocks go on while they
    fit, a code or output block too long for the room left is split between its lines, a block that fits no
    slide at all (a figure) gets one of its own."""
    slides = []
    for blocks, notes, section in groups:
        slide = Slide(notes=list(notes), section=section)
        slides.append(slide)
        for block in blocks:
            if block.lines is None:
                if slide.blocks and slide.height + block.height > BUDGET:
                    slide = Slide(section=section)
                    slides.append(slide)
                slide.blocks.append(block)
                continue
            lines = block.lines
            while lines:
                fit = 0
                while fit < len(lines) and slide.height + render_lines(block, lines[:fit + 1]).height <= BUDGET:
                    fit += 1
                if fit == 0 and not slide.blocks:
                    fit = 1  # one line wider than a slide: it wraps, it is not cut
                if fit == 0:
                    slide = Slide(section=section)
                    slides.append(slide)
                    continue
                slide.blocks.append(render_lines(block, lines[:fit]))
                lines = lines[fit:]
                if lines:
                    slide = Slide(section=section)
                    slides.append(slide)
    return [s for s in slides if s.blocks]


SECTION = re.compile(r"^#{1,3}\s+(\d+\.\d+)\b", re.M)


def notebook_groups(path: Path, lang: str, figure_ids, only: set[str] | None = None):
    """(blocks, notes, section) per slide group of one notebook; with `only`, just the cells of those sections."""
    notebook = nbformat.read(path, as_version=4)
    groups, section = [], None
    for number, cell in enumerate(notebook.cells, start=1):
        kind = (cell.metadata.get("slideshow") or {}).get("slide_type", "-")
        if kind == "skip" or LEFT_OUT & set(cell.metadata.get("tags", [])):
            continue
        if cell.cell_type == "markdown" and (match := SECTION.search(cell.source)):
            section = match[1]
        elif cell.cell_type == "markdown" and re.match(r"#\s", cell.source):
            section = "0"
        if only is not None and section not in only:
            continue
        if kind in ("slide", "subslide") or not groups:
            groups.append(([], [], section))
        blocks = groups[-1][0]
        if cell.cell_type == "markdown":
            blocks += prose_blocks(cell.source, lang)
        else:
            blocks.append(code_block(cell.source))
            first = (cell.source.strip().splitlines() or [""])[0][:50]
            blocks += output_blocks(cell, lang, figure_ids, f"{shown(path)}, cell {number} ({first!r})")
    return groups


# ---- speaker notes from the lecturer's guide and the lecture path ---------------------------------------------
def guide_sections(lang: str) -> dict[int, str]:
    """Chapter number → its section of the lecturer's guide (Markdown)."""
    text = (PAGES[lang] / "lecturers-guide.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    found = {}
    for part in parts:
        number = re.match(r"(?:Chapter\s+|第\s*)(\d+)", part)
        if number:
            found[int(number[1])] = part
    return found


def paragraphs(markdown_text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", markdown_text) if p.strip() and not p.startswith("$$")]


def chapter_notes(groups, guide: str) -> None:
    """The guide's plan on the first slide; each paragraph that names a section number on that section's first
    slide; the paragraphs naming none (questions, misconceptions, homework) on the last slide."""
    body = paragraphs(guide)[1:]  # the heading line is the first
    placed = set()
    first_of = {}
    for k, (_, _, section) in enumerate(groups):
        first_of.setdefault(section, k)
    for paragraph in body:
        named = [s for s in re.findall(r"\b(\d+\.\d+)\b", paragraph) if s in first_of]
        if named and not paragraph.startswith(("**Plan", "**计划")):
            groups[first_of[named[0]]][1].append(paragraph)
            placed.add(paragraph)
    groups[0][1][:0] = [p for p in body if p not in placed and p.startswith(("**Plan", "**计划"))]
    groups[-1][1].extend(p for p in body if p not in placed and not p.startswith(("**Plan", "**计划")))


def lecture_stops(lang: str) -> list[tuple[str, str, list[tuple[str, list[str]]]]]:
    """(heading, the stop's Markdown, [(chapter notebook, [section, ...]), ...]) for each stop of the lecture path,
    in its order: the sections named after the stop's **Chapter(s):** line, each under the chapter named before it."""
    text = (PAGES[lang] / "lecture-path.md").read_text(encoding="utf-8")
    stops = []
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        line = re.search(r"\*\*(?:Chapters?:|章节：)\*\*(.*?)(?:\n\s*\n|\n- )", body, re.S)
        if not line:
            continue
        targets, current = [], None
        for token in re.finditer(r"\{doc\}`chapters/([\w-]+)`|(\d+)\.(\d+)(?:\s*[–-]\s*(\d+)\.(\d+))?", line[1]):
            if token[1]:
                current = (token[1], [])
                targets.append(current)
            elif current and token[2] == current[0].split("-")[0].lstrip("0"):
                last = int(token[5]) if token[4] else int(token[3])
                current[1].extend(f"{token[2]}.{n}" for n in range(int(token[3]), last + 1))
        stops.append((heading.strip(), body, [t for t in targets if t[1]]))
    return stops


# ---- HTML -------------------------------------------------------------------------------------------------
def section_html(slide: Slide, continued: bool, lang: str) -> str:
    mark = f'<p class="continued">({WORDS[lang]["continued"]})</p>' if continued else ""
    notes = ""
    if slide.notes:
        rendered = math_html(markdown().render(myst_roles("\n\n".join(slide.notes), lang)))
        notes = f'<aside class="notes">{rendered}</aside>'
    return f"<section>{mark}{''.join(b.html for b in slide.blocks)}{notes}</section>"


def deck_html(title: str, slides: list[Slide], lang: str, assets: str) -> str:
    sections, previous = [], None
    for slide in slides:
        continued = previous is not None and slide.section == previous.section and not slide.notes and \
            not any(b.kind == "heading_open" for b in slide.blocks)
        sections.append(section_html(slide, continued, lang))
        previous = slide
    return f"""<!doctype html>
<html lang="{'zh-CN' if lang == 'zh' else 'en'}">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="{assets}/reveal/reset.css">
<link rel="stylesheet" href="{assets}/reveal/reveal.css">
<link rel="stylesheet" href="{assets}/reveal/theme/white.css">
<link rel="stylesheet" href="{assets}/deck.css">
<script>window.MathJax = {{tex: {{inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]]}},
  svg: {{fontCache: "global"}}, options: {{ignoreHtmlClass: "notes"}}}};</script>
<script src="{assets}/mathjax/tex-svg.js" defer></script>
<script src="{assets}/plotly.min.js"></script>
</head>
<body class="lang-{lang}">
<div class="reveal"><div class="slides">
{chr(10).join(sections)}
</div></div>
<script src="{assets}/reveal/reveal.js"></script>
<script src="{assets}/reveal/plugin/notes/notes.js"></script>
<script src="{assets}/deck.js"></script>
</body>
</html>
"""


DECK_CSS = f"""/* teachllm decks: 1280×720 slides, never scaled (build_slides.py judges heights with these sizes) */
.reveal {{ font-family: "Noto Sans", "DejaVu Sans", sans-serif; font-size: {TEXT_PX}px; color: #222; }}
.lang-zh .reveal {{ font-family: "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei",
  sans-serif; }}
.reveal .slides {{ text-align: left; }}
.reveal .slides > section {{ box-sizing: border-box; width: {WIDTH}px; height: {HEIGHT}px !important;
  padding: {PAD_Y}px {PAD_X}px !important; overflow: hidden; top: 0 !important; }}
.reveal h1, .reveal h2, .reveal h3 {{ font-family: inherit; text-transform: none; color: #1d3557;
  margin: 0 0 12px; line-height: 1.2; }}
.reveal h1 {{ font-size: 40px; }} .reveal h2 {{ font-size: 34px; }} .reveal h3 {{ font-size: 28px; }}
.reveal p, .reveal li {{ font-size: {TEXT_PX}px; line-height: {TEXT_LINE}px; margin: 0 0 10px; }}
.reveal ul, .reveal ol {{ margin: 0 0 10px 1.2em; display: block; }}
.reveal table {{ font-size: 20px; margin: 0 0 10px; border-collapse: collapse; }}
.reveal table th, .reveal table td {{ padding: 4px 10px; border-bottom: 1px solid #ccc; }}
.reveal pre {{ box-sizing: border-box; width: 100%; margin: 0 0 10px; padding: 10px 14px; box-shadow: none;
  font-size: {CODE_PX}px; line-height: {CODE_LINE}px; white-space: pre-wrap; overflow-wrap: anywhere;
  word-break: break-all; max-height: none; overflow: visible; }}
.reveal pre.code {{ background: #f5f7fa; border-left: 4px solid #2a9d8f; }}
.reveal pre.output {{ background: #fff; border-left: 4px solid #bbb; }}
.reveal code {{ font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace; font-size: {CODE_PX}px; }}
.reveal pre {{ font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace; }}
.reveal .figure {{ width: 100%; margin: 0 0 16px; }}
.reveal .figure noscript img, .reveal img.png {{ max-width: 100%; }}
.reveal .widget-note {{ border-left: 4px solid #2166ac; background: #f4f8fc; padding: 8px 14px; }}
.reveal .continued {{ color: #888; font-size: 18px; margin: 0 0 4px; }}
.reveal .stop-title h1 {{ margin-top: 160px; }}
{HtmlFormatter().get_style_defs('.reveal pre.code')}
"""

DECK_JS = """// teachllm decks: reveal.js at the slide's own size (never scaled, so code stays at its 20 px), the
// presenter view (press S), and each plotly figure drawn from the JSON beside it with the local plotly.js.
//
// The build packs cells into slides by judging heights; the browser has the last word, with the fonts of the
// machine that shows the deck. Before reveal.js starts (and after MathJax has set the formulas), every slide
// that scrolls hands its last element, or the last lines of a block of code or output, or the last items of
// a list or rows of a table, to a new slide after it, marked as continued, until it fits: nothing is cut
// off and nothing shrinks.
(function () {
  var continued = document.documentElement.lang.indexOf("zh") === 0 ? "（续）" : "(continued)";

  function overflows(section) { return section.scrollHeight > section.clientHeight; }

  function movable(section) {
    return [].filter.call(section.children, function (e) {
      return e.tagName !== "ASIDE" && !e.classList.contains("continued");
    });
  }

  function nextSlide(section) {
    var next = section.nextElementSibling;
    if (next && next.dataset.continues === section.dataset.slide) { return next; }
    next = document.createElement("section");
    next.dataset.slide = section.dataset.slide + "+";
    next.dataset.continues = section.dataset.slide;
    var mark = document.createElement("p");
    mark.className = "continued";
    mark.textContent = continued;
    next.appendChild(mark);
    section.insertAdjacentElement("afterend", next);
    return next;
  }

  // move the last lines of a <pre> to the next slide until this one fits; false when not even one line stays
  function splitPre(section, pre, next) {
    var lines = pre.innerHTML.split("\\n");
    var moved = [];
    while (lines.length > 1 && overflows(section)) {
      moved.unshift(lines.pop());
      pre.innerHTML = lines.join("\\n");
    }
    if (!moved.length) { return false; }
    var rest = pre.cloneNode(false);
    rest.innerHTML = moved.join("\\n");
    var mark = next.querySelector(".continued");
    mark.insertAdjacentElement("afterend", rest);
    return !overflows(section);
  }

  // the same for a list or a table: its last items (rows) go to a copy of it on the next slide, a table's
  // under the same header, an ordered list still counting
  function splitItems(section, block, next) {
    var holder = block.tagName === "TABLE" ? block.tBodies[0] : block;
    if (!holder) { return false; }
    var moved = [];
    while (holder.children.length > 1 && overflows(section)) {
      moved.unshift(holder.removeChild(holder.lastElementChild));
    }
    if (!moved.length) { return false; }
    var rest = block.cloneNode(false);
    var restHolder = rest;
    if (block.tagName === "TABLE") {
      if (block.tHead) { rest.appendChild(block.tHead.cloneNode(true)); }
      restHolder = rest.appendChild(document.createElement("tbody"));
    } else if (block.tagName === "OL") {
      rest.start = (block.start || 1) + holder.children.length;
    }
    moved.forEach(function (item) { restHolder.appendChild(item); });
    next.querySelector(".continued").insertAdjacentElement("afterend", rest);
    return !overflows(section);
  }

  function paginate() {
    var sections = document.querySelectorAll(".reveal .slides > section");
    [].forEach.call(sections, function (s, k) { s.dataset.slide = String(k); });
    for (var s = document.querySelector(".reveal .slides > section"); s; s = s.nextElementSibling) {
      s.style.display = "block";
      while (overflows(s)) {
        var items = movable(s);
        if (items.length === 0) { break; }
        var last = items[items.length - 1];
        var next = nextSlide(s);
        if (last.tagName === "PRE" && splitPre(s, last, next)) { break; }
        if (/^(UL|OL|TABLE)$/.test(last.tagName) && splitItems(s, last, next)) { break; }
        if (items.length === 1) { break; }  // one element taller than a slide: left for the tests to find
        var mark = next.querySelector(".continued");
        mark.insertAdjacentElement("afterend", last);
      }
      s.style.display = "";
    }
  }

  function start() {
    paginate();
    Reveal.initialize({width: 1280, height: 720, margin: 0, minScale: 1, maxScale: 1, center: false,
                       hash: true, transition: "none", plugins: [RevealNotes]}).then(function () {
      document.querySelectorAll(".reveal .figure").forEach(function (div) {
        var spec = document.getElementById(div.id + "-json");
        if (!spec || typeof Plotly === "undefined") { return; }
        var fig = JSON.parse(spec.textContent);
        Plotly.newPlot(div, fig.data, fig.layout, {displaylogo: false, responsive: false});
      });
    });
  }

  window.addEventListener("load", function () {
    var typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    (typeset ? typeset : Promise.resolve()).then(start, start);
  });
})();
"""


def copy_assets() -> None:
    """reveal.js and MathJax from book/_vendor (scripts/fetch_book_assets.sh), plotly.js from the plotly package."""
    import plotly  # the notebook extra; only the slide build needs it here

    assets = OUT / "assets"
    if not (VENDOR["reveal"] / "reveal.js").is_file() or not (VENDOR["mathjax"] / "tex-svg.js").is_file():
        sys.exit("make slides: reveal.js or MathJax is not vendored yet (run scripts/fetch_book_assets.sh)")
    for name, source in VENDOR.items():
        shutil.rmtree(assets / name, ignore_errors=True)
        shutil.copytree(source, assets / name)
    shutil.copyfile(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", assets / "plotly.min.js")
    (assets / "deck.css").write_text(DECK_CSS, encoding="utf-8")
    (assets / "deck.js").write_text(DECK_JS, encoding="utf-8")


def figure_counter(prefix: str):
    n = 0
    while True:
        n += 1
        yield f"{prefix}-figure-{n}"


def chapter_deck(path: Path, lang: str) -> list[Slide]:
    groups = notebook_groups(path, lang, figure_counter(path.stem[:2]))
    if not groups:
        raise DeckError(f"{shown(path)}: every cell is left out of the slides (slide_type \"skip\", or tagged "
                        f"{', '.join(sorted(LEFT_OUT))}), so its deck would be empty; give at least the title cell "
                        "a slide type other than skip")
    number = int(path.stem[:2])
    guide = guide_sections(lang).get(number)
    if guide:
        chapter_notes(groups, guide)
    return pack(groups, lang)


def deck_title(path: Path) -> str:
    """The chapter's title: the heading that opens its first cell ("# Chapter 6 · From logits to a token")."""
    cells = nbformat.read(path, as_version=4).cells
    first = cells[0].source.strip() if cells else ""
    if cells and cells[0].cell_type == "markdown" and first.startswith("# "):
        return first.splitlines()[0][2:].strip()
    found = ("has no cells" if not cells else "its first cell is empty" if not first else
             f"its first cell does not open with a title heading ({first.splitlines()[0][:50]!r})")
    raise DeckError(f"{shown(path)}: {found}; the first cell must be a Markdown cell that opens with the "
                    "chapter's title, e.g. '# Chapter 6 · From logits to a token'")


def lecture_deck(lang: str) -> list[Slide]:
    slides, ids = [], figure_counter("lecture")
    for heading, body, targets in lecture_stops(lang):
        title = Block(f'<div class="stop-title"><h1>{html.escape(heading)}</h1></div>', 300, kind="heading_open")
        slides += pack([([title], paragraphs(body), f"stop {heading}")], lang)
        for chapter, sections in targets:
            path = NOTEBOOKS[lang] / f"{chapter}.ipynb"
            groups = notebook_groups(path, lang, ids, only=set(sections))
            groups.sort(key=lambda g: sections.index(g[2]) if g[2] in sections else len(sections))
            slides += pack(groups, lang)
    return slides


def build() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    copy_assets()
    for lang in ("en", "zh"):
        folder = OUT if lang == "en" else OUT / lang
        folder.mkdir(exist_ok=True)
        assets = "assets" if lang == "en" else "../assets"
        for path in sorted(NOTEBOOKS[lang].glob("[0-9][0-9]-*.ipynb")):
            slides, title = chapter_deck(path, lang), deck_title(path)
            (folder / f"{path.stem}.html").write_text(deck_html(title, slides, lang, assets), encoding="utf-8")
        slides = lecture_deck(lang)
        (folder / "lecture.html").write_text(deck_html(WORDS[lang]["lecture"], slides, lang, assets), encoding="utf-8")
        print(f"slides ({lang}): {folder.relative_to(ROOT)}/lecture.html ({len(slides)} slides as built) and "
              f"{len(list(NOTEBOOKS[lang].glob('[0-9][0-9]-*.ipynb')))} chapter decks")


def main() -> None:
    try:
        build()
    except DeckError as e:
        sys.exit(f"make slides: {e}")


if __name__ == "__main__":
    main()
