"""`make slides`: reveal.js decks built from the committed chapter notebooks, for teaching from the front of a room.

    book/_build/slides/lecture.html        the 90-minute inference lecture, in the lecture path's order
    book/_build/slides/NN-name.html        one deck per chapter
    book/_build/slides/zh/...              the same decks from the Chinese notebooks and pages
    book/_build/slides/assets/             reveal.js and MathJax (npm, vendored by scripts/fetch_book_assets.sh),
                                           plotly.js (from the plotly package), the book's teachllm-widgets.js
                                           (copied unchanged), deck.css and deck.js: nothing is fetched

No second copy of the prose: a deck is the notebook's cells (prose, code and its outputs; `skip` cells, exercises
and checks are left out), section by section, showing what the chapter's author chose for the room (below, "What
a slide shows"). Each section (`#` or `##` heading; "## Summary" is one of its own) starts a new slide; a slide
the author titled starts a slide of its own, under the section's title; blocks fill slides while they fit, and a
slide that only carries on the one before opens with a running header, "6.3 Temperature (continued)" /
"6.3 温度（续）", so the room always knows where it is. A slide is 1280×720 and never scaled: code is at least
20 px, and what does not fit moves on, never shrunk: a long listing is split between lines, never leaving fewer
than 3 of them on either side; a heading, a lead-in ("Why:") or a code cell stays with the start of what
follows; a slide with fewer than 3 lines of text (no figure, widget or title) takes the end of the slide before
it. The lecture deck takes the sections the lecture path
(book/lecture-path.md) names, stop by stop, each stop opening with its own slide. Speaker notes (reveal.js's
presenter view: press S) come from the lecturer's guide: a chapter's plan on its first slide, what to run and ask
where the guide names a section, and from the lecture path's "say" and "ask" lines in the lecture deck; a section
neither names still gets a note on its first slide, made from the section itself and saying so: its first
sentence and what its slides show (section_note); prose the author chose to say (slide.say) goes to the notes of
its slide. Their maths is plain text ("2 · layers · s²"), since the presenter view does not typeset. In the
presenter view the current and the next slide are the deck again, in frames: there (and only there) reveal.js
may scale a slide down, so each shows whole at any window size, and each frame starts below a band that holds
the window's labels and layout menu, so they cover no slide.

What a slide shows: the author chooses it in the chapter's source, notebooks/src/NN-name.py, as cell metadata on
the cell's `# %%` line (jupytext), so both editions get the same choices and `scripts/build_notebooks.py
--metadata-only NN` carries them into the committed notebooks without running a cell; the notebook itself still
shows everything. The key is `slide`, an object:

    # %% slide={"code": [[3, 8], -1], "output": [1, [5, 9]]}
    # %% slide={"code": false}                       (a setup cell, or a figure whose plotting code is not the point)
    # %% [markdown] slide={"say": ["The two ends are", 3]}
    # %% [markdown] slide={"title": {"en": "Entropy against temperature", "zh": "熵随温度的变化"}}
    # %% [markdown] slide={"title": [{"en": "…", "zh": "…"}, {"en": "…", "zh": "…", "at": "**Min-p: transformers"}]}

- "code" (code cell): the lines of the cell the slide shows, 1-based, [first, last] ranges and negative numbers
  from the end; each run left out shows as one `# ⋯` line at its indentation, and what is left must still parse
  as Python (a fold that cuts a statement in two is refused). false shows no code, only what the cell made.
- "output" (code cell): the lines of what the cell printed, the same way (a folded run shows as `⋯`); false
  shows none of it. Figures and widgets are always shown.
- "say" (Markdown cell): the blocks (paragraph, list, table, formula) said rather than shown: they go to the
  speaker notes of the slide they would have been on. true says every block but the headings. A block is named
  by its first words in the English cell ("The two ends are"), which survive edits around it, or by its number
  (from 1, headings counted). A translation must have the English cell's blocks (it may add some after them,
  a legend): the build refuses a cell where it does not.
- "title": this cell starts a slide of its own, with this title in each edition under the section's title
  (at most PART_TITLE characters, one line); "at" starts it at a block inside a Markdown cell (first words or
  number), and a list gives several. A `###` heading starts such a slide too, titled by itself.

A choice the build cannot keep (a line or a block that is not there, a key a cell does not take, a title missing
an edition) stops the build with a DeckError naming the notebook and the cell.

A widget runs on its slide as it does in the book, with no kernel: the notebook saves each widget's static form
(application/vnd.teachllm.widget+json, teachllm/viz/static.py), the slide carries it beside the book's
<div class="teachllm-live">, and book/_static/teachllm-widgets.js draws it; deck.js only fixes the size of its
figure to what the slide leaves it. A figure's text (tick labels, titles, legends, annotations, a widget's figure
too) is drawn at least FIGURE_FONT px on the slide (the notebook's 12 px is for a screen at arm's length), and a
log axis then labels its powers of ten only.

A notebook the decks cannot be built from (every cell left out, no title in the first cell, a figure whose
height is not a number), or a lecture path that names a section a chapter does not have, stops the build with
one line naming the notebook, the cell and the fix (DeckError).

How a slide's height is judged: each block (a paragraph, a code cell, an output, a figure) is given the height
its lines take at the deck's font sizes (deck.css), counting wrapped lines; the tests then measure every slide
in Chromium and fail if one scrolls.

    python scripts/build_slides.py           # every deck, both languages
"""

from __future__ import annotations

import ast
import html
import json
import math
import re
import shutil
import sys
from collections.abc import Callable
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
LIVE = "application/vnd.teachllm.widget+json"  # a widget's kernel-free form (teachllm/viz/static.py), as the book uses
WIDGETS_JS = BOOK / "_static" / "teachllm-widgets.js"  # the book's widgets, copied unchanged into the decks' assets
LEFT_OUT = {"exercise", "check", "remove-cell", "language"}

# The slide's geometry and type sizes (deck.css uses the same numbers): what a block's height is judged by.
WIDTH, HEIGHT, PAD_X, PAD_Y = 1280, 720, 44, 28
BUDGET = HEIGHT - 2 * PAD_Y - 24  # 24 px to spare: heights are judged, the browser has the last word
TEXT_PX, CODE_PX = 24, 20
TEXT_LINE, CODE_LINE, TABLE_LINE = 34, 26, 26  # line heights in px
TEXT_COLUMNS = (WIDTH - 2 * PAD_X) / (TEXT_PX * 0.55)  # average Latin glyph ≈ 0.55 em; a Chinese one is 1 em (2 units)
CODE_COLUMNS = int((WIDTH - 2 * PAD_X - 28) / (CODE_PX * 0.602))  # a monospace glyph is 0.602 em
FIGURE_MAX = 520
FIGURE_FONT, FIGURE_TITLE = 16, 20  # the least size (px) of a figure's text on a slide, of its title (deck.js)
SPEAKER_BAND = 42  # px above each frame of the speaker window, for its labels (notes.js: 34 px high)

WORDS = {"en": {"continued": " (continued)", "widget": "Interactive widget <code>{w}</code>: open this chapter's "
                "notebook in JupyterLab to use it.", "lecture": "The inference lecture: from logits to the KV cache"},
         "zh": {"continued": "（续）", "widget": "交互控件 <code>{w}</code>：在 JupyterLab 中打开本章的笔记本使用。",
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


def code_lines(text: str, columns: int) -> int:
    """Lines code takes in a `white-space: pre-wrap` block that breaks between words, not inside them (deck.css):
    a word moves whole to the next line, and only a word longer than a line is cut."""
    total = 0
    for line in text.split("\n"):
        used, count = 0, 1
        for word in re.findall(r"\S+\s*|\s+", line):
            width = display_width(word.rstrip()) or display_width(word)
            if used and used + width > columns:
                count, used = count + 1, 0
            count += max(0, math.ceil(width / columns) - 1)
            used = (used + display_width(word)) if width <= columns else width % columns
        total += count
    return total


@dataclass
class Block:
    html: str
    height: float
    lines: list[str] | None = None  # a code or text block: its lines, so it can be split between slides
    kind: str = ""
    rows: int = 0  # lines of text it shows: a slide with fewer than MIN_ROWS of them is a fragment
    level: int = 0  # a heading's level (1 for the chapter's title, 2 for a section)
    keep: bool = False  # kept on the slide where the next block starts: a heading, a lead-in ("Why:"), code + output
    resize: Callable[[int], Block] | None = None  # a figure: the same figure at another height
    part: list[str] | None = None  # a piece of a code or output block: its lines, so a slide can take some back
    head: list[str] | None = None  # a table's header and rule (Markdown), repeated over each part of it
    source: str = ""  # a paragraph's or a list's Markdown: what a section's generated speaker note quotes
    said: list[str] = field(default_factory=list)  # prose the author chose to say, not show: the notes of its slide
    title: str = ""  # kind "break": the title (HTML) of the slide the author starts here (slide.title)


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
        if token.type == "fence":  # a listing in the prose is split between slides like a code cell
            python = token.info.strip().lower() in ("", "python", "py", "python3", "ipython", "pycon")
            blocks.append(code_block(token.content, "code" if python else "output"))
            continue
        rendered = math_html(md.render(chunk))
        indent = 2 * TEXT_PX if token.type in ("bullet_list_open", "ordered_list_open") else 0  # 1.2 em + marker
        columns = TEXT_COLUMNS - indent / (TEXT_PX * 0.55)
        block = Block(rendered, 0, kind=token.type, rows=visual_lines(shown_text(chunk), columns), source=chunk)
        if token.type == "heading_open":
            block.level, block.rows, block.keep = int(token.tag[1]), 0, True
            block.height = 64 if token.tag == "h1" else 56
        elif token.type == "table_open":  # split between slides by rows, each part under the header
            rows = chunk.split("\n")
            blocks.append(Block("", 0, lines=rows[2:], kind="table", head=rows[:2]))
            continue
        elif token.type == "math_block":
            block.height, block.rows = 30 * chunk.count("\n") + 80, max(2, chunk.count("\n"))
        else:  # deck.css: a paragraph or a list item has 10 px under it
            items = len(re.findall(r"^\s*(?:[-*+]|\d+[.)])\s", chunk, re.M)) if indent else 0
            block.height = TEXT_LINE * block.rows + 14 + 10 * items
            # a lead-in ("Why the two differ:", "**What you will learn.**") stays with what it introduces
            block.keep = chunk.rstrip().endswith((":", "：")) or bool(re.fullmatch(r"\*\*[^*]+\*\*", chunk.strip()))
        blocks.append(block)
    return blocks


def shown_text(markdown_text: str) -> str:
    """Markdown source as the lines it shows: a line break inside a paragraph or a list item is a space, each item
    and table row starts a line; a formula counts as ten characters, a link as its text, `**` and `` ` `` as none."""
    text = re.sub(r"\$\$?[^$]*\$\$?", "xxxxxxxxxx", markdown_text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("**", "").replace("`", "")
    return re.sub(r"\n(?!\s*(?:[-*+]\s|\d+[.)]\s|\|))\s*", " ", text)


def table_height(chunk: str) -> float:
    """A Markdown table's height in px (deck.css: 20 px type on 26 px lines, 4 px padding): each row as tall as
    its fullest cell wrapped at an equal share of the slide's width (a glyph taken as 0.55 em, a Chinese one 1 em)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in chunk.split("\n")
            if line.strip() and not re.fullmatch(r"[\s|:-]+", line)]
    columns = max((len(row) for row in rows), default=1)
    share = (WIDTH - 2 * PAD_X) / columns - 20  # px of text in a cell
    lines = [max(max(1, math.ceil(display_width(shown_text(c)) * 11 / share)) for c in row) for row in rows]
    return sum(TABLE_LINE * n + 9 for n in lines) + 10


def code_block(source: str, kind: str = "code") -> Block:
    lines = source.rstrip("\n").split("\n")
    return Block("", 0, lines=lines, kind=kind)


def render_lines(block: Block, lines: list[str], keep: bool = False, said: list[str] | None = None) -> Block:
    """A code or output block, or a table, holding these lines (rows), with its height (and the prose said with
    it, when this is its first part)."""
    text = "\n".join(lines)
    if block.head is not None:
        return Block(math_html(markdown().render("\n".join(block.head + lines))), lines_height(lines, block.head),
                     kind="table", rows=len(lines), keep=keep, part=lines, head=block.head,
                     said=list(said or []))
    if block.kind == "code":
        body = highlight(text, PythonLexer(), HtmlFormatter(nowrap=True))
        body = body.replace(f'<span class="c1">{FOLD_CODE}</span>', f'<span class="c1 fold">{FOLD_CODE}</span>')
        markup = f'<pre class="code">{body}</pre>'
    else:
        body = re.sub(rf"^{FOLD_OUTPUT}$", f'<span class="fold">{FOLD_OUTPUT}</span>', html.escape(text), flags=re.M)
        markup = f'<pre class="output">{body}</pre>'
    rows = code_lines(text, CODE_COLUMNS)
    return Block(markup, lines_height(lines), kind=block.kind, rows=rows, keep=keep, part=lines, said=list(said or []))


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
    smaller = dict(figure, layout=layout)
    return Block(f'<div class="figure" id="{figure_id}" style="height:{height}px">{fallback}</div>'
                 f'<script type="application/json" id="{figure_id}-json">{spec}</script>', height + 16, kind="figure",
                 resize=lambda h: figure_block(dict(smaller, layout=dict(layout, height=h)), png, figure_id, where))


def png_block(png: str, height: int) -> Block:
    """A figure as a PNG, at most `height` px high."""
    return Block(f'<img class="png" style="max-height:{height}px" src="data:image/png;base64,{png}">', height,
                 kind="png", resize=lambda h: png_block(png, h))


# A live widget on a slide: the book's kernel-free widget (book/_static/teachllm-widgets.js builds its controls and
# draws it from the static form beside it), with its figure drawn at the height the slide leaves it (deck.js tells
# plotly so). Its controls take about this many px above the figure at the deck's 18 px (deck.css), measured in
# Chromium; any widget not named takes one row of controls.
WIDGET_CONTROLS = {"DistributionExplorer": 260, "StepThrough": 135, "BlockTableView": 230, "IterationTimeline": 255}
WIDGET_ROW = 45
WIDGET_FIGURE_MIN = 220  # the least height (px) a widget's figure is drawn at to stay on the slide of its code
NO_SCRIPT = {"en": "This widget is drawn by JavaScript, which is off in this browser.",
             "zh": "这个控件由 JavaScript 绘制，而这个浏览器关闭了 JavaScript。"}


def unpack(value, table: list):
    """teachllm.viz.static's packing undone: {"$": i} is table[i]."""
    if isinstance(value, list):
        return [unpack(v, table) for v in value]
    if isinstance(value, dict):
        if list(value) == ["$"]:
            return unpack(table[value["$"]], table)
        return {k: unpack(v, table) for k, v in value.items()}
    return value


def widget_figure_height(form: dict) -> int:
    """The height the widget's figure asks for: its first frame's layout height, or the distribution explorer's."""
    layout = form.get("layout") or {}
    if form.get("frames"):
        frame = unpack(next(iter(form["frames"].values())), form.get("table", []))
        layout = (frame.get("figure") or {}).get("layout") or {}
    height = layout.get("height")
    return int(height) if isinstance(height, int | float) and not isinstance(height, bool) and height > 0 else 450


def widget_block(form: dict, element_id: str, lang: str, figure: int | None = None) -> Block:
    """The widget as the book shows it, its figure `figure` px high (at most the height it asks for)."""
    name = str(form["widget"])
    controls = WIDGET_CONTROLS.get(name, WIDGET_ROW)
    asked = min(widget_figure_height(form), FIGURE_MAX)
    figure = asked if figure is None else min(asked, max(WIDGET_FIGURE_MIN, figure))
    spec = json.dumps(form, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    markup = (f'<div class="teachllm-live" id="{element_id}" data-teachllm-widget="{html.escape(name)}" '
              f'data-figure-height="{figure}"><noscript>{NO_SCRIPT[lang]}</noscript></div>'
              f'<script type="application/json" id="{element_id}-json">{spec}</script>')
    return Block(markup, controls + figure + 16, kind="widget",
                 resize=lambda h: widget_block(form, element_id, lang, int(h + 16 - controls - 16)))


def widget_form(value, where: str) -> dict:
    """The widget's kernel-free form as the notebook saved it (a JSON string or the object); a DeckError naming
    `where` when it is not a JSON object naming its widget."""
    try:
        form = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        form = None
    if not isinstance(form, dict) or not isinstance(form.get("widget"), str):
        raise DeckError(f"{where}: the widget's kernel-free form ({LIVE}) is not a JSON object naming its widget; "
                        "rebuild the notebook with scripts/build_notebooks.py, which saves it")
    return form


def output_blocks(cell, lang: str, figure_ids, where: str = "a cell") -> list[Block]:
    blocks, text = [], []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            text.append(output.text)
            continue
        data = output.get("data", {})
        if LIVE in data:  # the widget itself, kernel-free, as in the book
            blocks.append(widget_block(widget_form(data[LIVE], where), next(figure_ids), lang))
        elif PLOTLY in data:
            png = data.get("image/png")
            png = "".join(png) if isinstance(png, list) else png
            blocks.append(figure_block(data[PLOTLY], png, next(figure_ids), where))
        elif WIDGET in data:
            name = re.match(r"[\[\"'\s]*([A-Za-z_]\w*)", "".join(data.get("text/plain", ""))) or None
            note = WORDS[lang]["widget"].format(w=html.escape(name[1] if name else "widget"))
            blocks.append(Block(f'<p class="widget-note">{note}</p>', 2 * TEXT_LINE + 20, kind="widget"))
        elif "image/png" in data:
            png = "".join(data["image/png"]) if isinstance(data["image/png"], list) else data["image/png"]
            blocks.append(png_block(png, FIGURE_MAX))
        elif "text/plain" in data:
            text.append("".join(data["text/plain"]) + "\n")
    out = "".join(text).rstrip("\n")
    return ([code_block(out, "output")] if out else []) + blocks


# ---- what the author chose to show: a cell's `slide` metadata ----------------------------------------------------
FOLD_CODE, FOLD_OUTPUT = "# ⋯", "⋯"  # where lines are folded on a slide (the notebook shows them)
CHOICES = {"code": {"title", "code", "output"}, "markdown": {"title", "say"}}


def chosen_lines(spec, count: int, where: str, what: str) -> list[int]:
    """The 0-based line numbers a line spec names: [1, [3, 5], -1] is the first line, the third to the fifth and
    the last (1-based, inclusive, a negative number counts from the end); a DeckError naming `where` otherwise."""
    unit, whole = ("block", "the cell") if what in ("say", "title") else ("line", f"the {what}")

    def line(k) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or k == 0 or not -count <= k <= count:
            raise DeckError(f"{where}: slide.{what} names {unit} {k!r}, and {whole} has {count} {unit}(s); give "
                            f"{unit} numbers from 1 to {count} (or -1 for the last), e.g. [1, [3, 5], -1]")
        return k - 1 if k > 0 else count + k

    if not isinstance(spec, list) or not spec:
        raise DeckError(f"{where}: slide.{what} is {spec!r}; give the lines to show as a list, e.g. [1, [3, 5], -1], "
                        "or false to show none")
    found = set()
    for item in spec:
        if isinstance(item, list) and len(item) == 2:
            first, last = line(item[0]), line(item[1])
            if first > last:
                raise DeckError(f"{where}: slide.{what} range {item!r} runs backwards; write [first, last]")
            found |= set(range(first, last + 1))
        else:
            found.add(line(item))
    return sorted(found)


def folded(lines: list[str], keep: list[int], marker: str, indent: bool = True) -> list[str]:
    """`lines` with only those numbered `keep`; each run left out (but one of blank lines only) becomes one
    `marker` line (code: at the indentation of its first line), so the room sees that the notebook shows more."""
    shown, last = [], -1
    for k in [*keep, len(lines)]:
        gap = [line for line in lines[last + 1:k] if line.strip()]
        if gap:
            shown.append(gap[0][:len(gap[0]) - len(gap[0].lstrip())] * indent + marker)
        if k < len(lines):
            shown.append(lines[k])
        last = k
    while shown and not shown[0].strip():
        shown.pop(0)
    while shown and not shown[-1].strip():
        shown.pop()
    return shown


def stands_as_python(lines: list[str], keep: list[int]) -> str | None:
    """None when the lines kept, each folded run written as `...`, parse as Python; else what does not parse.
    A fold that cuts a statement in two (half a call, a loop without its body) fails here, not in front of a room."""
    candidate = folded(lines, keep, "...")
    try:
        ast.parse("\n".join(candidate))
    except SyntaxError as e:
        return f"line {e.lineno} of what the slide would show ({(e.text or '').strip()[:50]!r}): {e.msg}"
    return None


def slide_choice(cell, where: str, lang: str) -> dict:
    """The cell's `slide` metadata, checked: what its slide shows (see the module docstring, "What a slide shows").
    A key the cell's kind does not take, a title missing a language, or a value of the wrong kind is a DeckError."""
    choice = cell.metadata.get("slide")
    if choice is None:
        return {}
    if not isinstance(choice, dict):
        raise DeckError(f"{where}: slide metadata is {choice!r}; give an object, e.g. slide={{\"say\": [2]}}")
    if unknown := set(choice) - CHOICES[cell.cell_type]:
        takes = ", ".join(sorted(CHOICES[cell.cell_type]))
        raise DeckError(f"{where}: a {cell.cell_type} cell's slide metadata takes {takes}"
                        f", not {', '.join(sorted(unknown))}")
    for title in titles(choice):
        if not (isinstance(title, dict) and all(isinstance(title.get(k), str) and title[k].strip() for k in WORDS)
                and set(title) <= {*WORDS, "at"}):
            raise DeckError(f"{where}: slide.title is {title!r}; give the slide's title in every edition, "
                            f'e.g. {{"en": "Entropy against temperature", "zh": "熵随温度的变化"}} (or a list of '
                            "them, each with its \"at\")")
        at = title.get("at", 1)
        if isinstance(at, bool) or not isinstance(at, int | str) or isinstance(at, int) and at < 1 or \
                (at != 1 and cell.cell_type != "markdown"):
            raise DeckError(f"{where}: slide.title's \"at\" is {at!r}; give the Markdown block the titled slide "
                            "starts with: its number (from 1) or its first words")
    return choice


def titles(choice: dict) -> list:
    """slide.title as a list: one title ({"en", "zh", "at"}) or several, for slides that start inside the cell."""
    title = choice.get("title")
    return [] if title is None else title if isinstance(title, list) else [title]


def block_index(item, reference: list[Block], where: str, what: str) -> int:
    """The 0-based number of the block a choice names in its cell: by number (from 1, headings counted), or by how
    its Markdown starts in the English cell ("The first two rows"), which stays right when the prose around it
    changes; a DeckError when no block, or more than one, starts so."""
    if isinstance(item, str):
        found = [k for k, b in enumerate(reference) if (b.source or "\n".join(b.lines or [])).strip().startswith(item)]
        if len(found) != 1:
            raise DeckError(f"{where}: slide.{what} names the block starting {item!r}, and {len(found) or 'no'} "
                            f"block(s) of the English cell start so; quote more of its first words")
        return found[0]
    return chosen_lines([item], len(reference), where, what)[0]


def said_blocks(choice: dict, blocks: list[Block], reference: list[Block], where: str) -> set[int]:
    """The 0-based numbers of the prose blocks a Markdown cell says rather than shows (slide.say: true, every block
    but its headings; or a list of blocks, each by number, from 1, headings counted, or by its first words in the
    English cell, `reference`)."""
    say = choice.get("say")
    if say is None or say is False:
        return set()
    if say is True:
        return {k for k, b in enumerate(blocks) if not b.level}
    if not isinstance(say, list) or not say:
        raise DeckError(f"{where}: slide.say is {say!r}; give true, or the blocks to say as a list, e.g. "
                        '[2, "The first two rows"]')
    numbers = [item for item in say if not isinstance(item, str)]
    picked = set(chosen_lines(numbers, len(reference), where, "say")) if numbers else set()
    picked |= {block_index(item, reference, where, "say") for item in say if isinstance(item, str)}
    if headings := [k + 1 for k in sorted(picked) if blocks[k].level]:
        raise DeckError(f"{where}: slide.say names block {headings[0]}, a heading; a heading is always shown")
    return picked


def block_kinds(source: str, lang: str) -> list[str]:
    return [b.kind for b in prose_blocks(source, lang)]


# ---- cells → sections → slides --------------------------------------------------------------------------------
VISUAL = {"figure", "png", "widget"}
PROSE = {"paragraph_open", "bullet_list_open", "ordered_list_open"}
MIN_ROWS = 3  # a slide shows at least this many lines of text, or a figure, a widget or a title
FIGURE_MIN = 360  # a figure may be drawn down to this height (px) to stay on the slide of the text before it
RUNNING = 46  # the height of a continuation's running header (deck.css: h2.running)
RUNNING_PART = 74  # a titled slide's two-line header (deck.css: h2.running.part)
PART_TITLE = 64  # the most display units (a Chinese character is two) a slide's title may take: one line at 30 px


@dataclass
class Section:
    """A chapter's section: from one `#` or `##` heading to the next, with the speaker notes for its first slide."""
    key: str  # "6.3"; "0" for the chapter's opening; an unnumbered section's heading ("Summary")
    title: str  # the heading as HTML: the running header of its continuation slides
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Slide:
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    section: str | None = None
    part: str = ""  # the title the author gave the run of slides this one is in (slide.title); "" for the first

    @property
    def height(self) -> float:
        return sum(b.height for b in self.blocks)

    @property
    def content(self) -> list[Block]:
        """The blocks below the slide's heading or running header."""
        return [b for b in self.blocks if b.kind != "running" and not b.level]

    @property
    def fragment(self) -> bool:
        """Fewer than MIN_ROWS lines of text, and no figure, widget or title to show instead."""
        shows = any(b.kind in VISUAL or b.level == 1 for b in self.blocks)
        return not shows and sum(b.rows for b in self.blocks) < MIN_ROWS


def running_header(section: Section, lang: str, part: str = "", titled: bool = False) -> Block:
    """"6.3 Temperature (continued)": the first line of every slide after a section's first. A slide the author
    started with a title (slide.title) opens with two lines, the section's title small above its own, "6.3
    Temperature" / "Entropy against temperature"; its continuations add the mark to the second."""
    mark = "" if titled else f'<span class="mark">{WORDS[lang]["continued"]}</span>'
    if not part:
        return Block(f'<h2 class="running">{section.title}{mark}</h2>', RUNNING, kind="running")
    return Block(f'<h2 class="running part{" titled" * titled}"><span class="section">{section.title}</span>'
                 f'<span class="sub">{part}{mark}</span></h2>', RUNNING_PART, kind="running")


def lines_height(lines: list[str], head: list[str] | None = None) -> float:
    """The height of a code or output block holding these lines, or of a table with this header (render_lines's)."""
    if head is not None:
        return table_height("\n".join(head + lines))
    return CODE_LINE * code_lines("\n".join(lines), CODE_COLUMNS) + 30  # deck.css: 2 × 10 px padding, 10 px margin


def most_lines(lines: list[str], room: float, head: list[str] | None = None) -> int:
    """How many of `lines`, from the first, fit in `room` px."""
    fit = 0
    while fit < len(lines) and lines_height(lines[:fit + 1], head) <= room:
        fit += 1
    return fit


def least(block: Block) -> float:
    """The height of the least of `block` that may open a slide: MIN_ROWS lines of a long listing, a figure
    drawn at its smallest, any other block whole."""
    if block.lines is not None:
        return lines_height(block.lines if len(block.lines) < 2 * MIN_ROWS else block.lines[:MIN_ROWS], block.head)
    if block.kind == "widget":
        return block.resize(0).height  # its figure at WIDGET_FIGURE_MIN
    return min(block.height, FIGURE_MIN + 16) if block.resize else block.height


def pack_section(section: Section, lang: str) -> list[Slide]:
    """One section on as few slides as its blocks take at their full size: the first opens with the section's
    heading, each one after with a running header; where the author started a slide with a title (slide.title),
    a slide opens with that title under the section's, and the blocks after it fill slides of their own from
    there. A block goes on while it fits; a heading, a lead-in or a code cell stays on the slide where the block
    after it starts; a figure may be drawn smaller (down to FIGURE_MIN) to stay by its text (before or after it);
    a listing too long for the room left is split between its lines, never leaving fewer than MIN_ROWS of them on
    either side."""
    parts, slides = [("", [])], []
    for block in section.blocks:
        if block.kind == "break":
            parts.append((block.title, []))
        else:
            parts[-1][1].append(block)
    for k, (title, blocks) in enumerate(parts):
        if k == 0:
            head = Slide(notes=list(section.notes), section=section.key)
        elif not blocks:
            continue
        else:
            head = Slide(blocks=[running_header(section, lang, title, titled=True)], section=section.key, part=title)
        slides += mend_fragments(pack_part(section, blocks, head, lang))
    return slides


def pack_part(section: Section, blocks: list[Block], head: Slide, lang: str) -> list[Slide]:
    """The blocks of one run of a section (pack_section) on slides, from `head` on."""
    slides = [head]

    def room() -> float:
        return BUDGET - slides[-1].height

    def fresh() -> None:
        slides.append(Slide(blocks=[running_header(section, lang, head.part)], section=section.key, part=head.part))

    for k, block in enumerate(blocks):
        after = least(blocks[k + 1]) if block.keep and k + 1 < len(blocks) else 0
        if block.lines is None:
            if slides[-1].content and block.height + after > room():
                smaller = block.resize(int(room() - 16)) if block.resize else None
                if smaller and smaller.height <= room() and (block.kind == "widget" or room() - 16 >= FIGURE_MIN):
                    block = smaller
                else:
                    fresh()
            if block.resize and block.height > room():  # a widget taller than a slide: its figure drawn smaller
                block = block.resize(int(room() - 16))
            after = blocks[k + 1] if k + 1 < len(blocks) else None
            if block.kind in ("figure", "png") and after is not None and after.lines is None and \
                    after.kind in PROSE and block.height + after.height > room() and \
                    room() - after.height - 16 >= FIGURE_MIN:  # the figure drawn smaller to keep what it says with it
                block = block.resize(int(room() - after.height - 16))
            slides[-1].blocks.append(block)
            continue
        lines, said = block.lines, block.said  # the prose said with it goes with its first part
        while lines:
            empty = not slides[-1].content
            whole = lines_height(lines, block.head)
            if whole + after <= room() or (empty and whole <= room()):
                slides[-1].blocks.append(render_lines(block, lines, keep=block.keep, said=said))
                break
            fit = most_lines(lines[:len(lines) - MIN_ROWS], room(), block.head)
            if fit < MIN_ROWS and empty:
                fit = max(1, most_lines(lines, room(), block.head))  # lines so wide that fewer fit: at least one
            if fit >= MIN_ROWS or empty:
                slides[-1].blocks.append(render_lines(block, lines[:fit], said=said))
                lines, said = lines[fit:], []
            fresh()
    return slides


def mend_fragments(slides: list[Slide]) -> list[Slide]:
    """A slide with fewer than MIN_ROWS lines of text after the first of its section goes back onto the slide
    before it when the two fit on one; otherwise it takes the end of that slide (its last block, or the last
    MIN_ROWS lines of a listing) while that slide keeps MIN_ROWS lines."""
    k = 1
    while k < len(slides):
        before, slide = slides[k - 1], slides[k]
        below = [b for b in slide.blocks if b.kind != "running"]
        if slide.fragment and before.height + sum(b.height for b in below) <= BUDGET:
            before.blocks += below
            del slides[k]
            continue
        while slide.fragment and take_end(before, slide):
            pass
        k += 1
    return slides


def take_end(before: Slide, slide: Slide) -> bool:
    """Move the end of `before` to the top of `slide`, under its running header; False when nothing may move."""
    last = before.blocks[-1]
    if last.level or last.kind == "running":
        return False
    moved, kept = last, []
    if last.part and len(last.part) >= 2 * MIN_ROWS:
        moved = render_lines(last, last.part[-MIN_ROWS:], keep=last.keep)
        kept = [render_lines(last, last.part[:-MIN_ROWS], said=last.said)]
    rest = before.blocks[:-1] + kept
    if slide.height + moved.height > BUDGET or Slide(rest).fragment:
        return False
    before.blocks[:] = rest
    slide.blocks.insert(1, moved)
    return True


def pack(sections: list[Section], lang: str) -> list[Slide]:
    """Every section on slides of its own (pack_section), one after the other; a section with no speaker notes
    from the guide or the lecture path gets a minimal one made from itself (section_note)."""
    for section in sections:
        if not section.notes:
            section.notes = section_note(section, lang)
    return [slide for section in sections for slide in pack_section(section, lang) if slide.blocks]


SECTION = re.compile(r"(\d+\.\d+)\b")


def new_section(heading: Block | None) -> Section:
    """The section a heading opens: keyed by its number, "0" for the chapter's title, else by its text."""
    if heading is None:
        return Section("0", "")
    title = re.sub(r"^\s*<h\d[^>]*>|</h\d>\s*$", "", heading.html)
    plain = html.unescape(re.sub(r"<[^>]+>", "", title)).strip()
    number = SECTION.match(plain)
    return Section(number[1] if number else "0" if heading.level == 1 else plain, title)


def notebook_groups(path: Path, lang: str, figure_ids, only: set[str] | None = None) -> list[Section]:
    """The sections of one notebook, each with its blocks; with `only`, just the sections with those keys. A
    section runs from one `#`/`##` heading to the next, whichever cell it is in: "## Summary" opens a section of
    its own ("Summary"), it does not go on with the numbered one before it. Each cell shows what its `slide`
    metadata chose (slide_choice): a code cell some of its lines and of its output's, a Markdown cell some of its
    blocks, the others said (in the speaker notes of the slide they would be on); a title starts a slide."""
    notebook = nbformat.read(path, as_version=4)
    english = None
    if lang != "en":  # a Markdown cell's blocks are chosen by number in the English cell: the translation's must match
        english = iter([c.source for c in nbformat.read(NOTEBOOKS["en"] / path.name, as_version=4).cells
                        if c.cell_type == "markdown"])
    sections, said = [], []
    for number, cell in enumerate(notebook.cells, start=1):
        first = (cell.source.strip().splitlines() or [""])[0][:50]
        where = f"{shown(path)}, cell {number} ({first!r})"
        original = next(english) if english is not None and cell.cell_type == "markdown" else None
        kind = (cell.metadata.get("slideshow") or {}).get("slide_type", "-")
        if kind == "skip" or LEFT_OUT & set(cell.metadata.get("tags", [])):
            continue
        choice = slide_choice(cell, where, lang)
        if cell.cell_type == "markdown":
            blocks = prose_blocks(cell.source, lang)
            reference = blocks if original is None else prose_blocks(original, "en")  # the English cell's blocks
            count = len(blocks)
            if (isinstance(choice.get("say"), list) or any(t.get("at", 1) != 1 for t in titles(choice))) and \
                    original is not None:
                kinds = block_kinds(original, "en")  # the translation may add blocks after them (a legend)
                if kinds != [b.kind for b in blocks[:len(kinds)]]:
                    raise DeckError(f"{where}: slide.say and slide.title's \"at\" choose blocks by number, and "
                                    "this translation's blocks "
                                    f"({', '.join(b.kind.removesuffix('_open') for b in blocks)}) are not the "
                                    f"English cell's ({', '.join(k.removesuffix('_open') for k in kinds)}); split "
                                    "or join its paragraphs as the English does")
                count = len(kinds)
            quiet = said_blocks(choice, blocks[:count], reference, where)
        else:
            outputs = output_blocks(cell, lang, figure_ids, where)
            if outputs and outputs[0].kind == "output" and "output" in choice:  # the text the cell printed
                lines, spec = outputs[0].lines, choice["output"]
                outputs[0:1] = [] if spec is False else [
                    code_block("\n".join(folded(lines, chosen_lines(spec, len(lines), where, "output"),
                                                FOLD_OUTPUT, indent=False)), "output")]
            lines, spec = cell.source.rstrip("\n").split("\n"), choice.get("code", True)
            if spec is True:
                code = [code_block(cell.source)]
            elif spec is False:
                code = []
            else:
                keep = chosen_lines(spec, len(lines), where, "code")
                if problem := stands_as_python(lines, keep):
                    raise DeckError(f"{where}: the lines slide.code chooses do not stand as Python, {problem}; "
                                    "choose whole statements (a folded run shows as '# ⋯')")
                code = [code_block("\n".join(folded(lines, keep, FOLD_CODE)))]
            if code:
                code[0].keep = bool(outputs)  # a cell's code stays with the start of its output
            blocks, quiet, reference = [*code, *outputs], set(), []
        breaks = []
        for title in titles(choice):
            at = 0 if title.get("at", 1) == 1 else block_index(title["at"], reference, where, "title")
            # the titled slide starts with block `at` of the cell
            if blocks and at >= len(blocks):
                raise DeckError(f"{where}: slide.title's \"at\" is {at + 1}, and the cell has {len(blocks)} "
                                "block(s)")
            if blocks and blocks[at].level in (1, 2):
                raise DeckError(f"{where}: slide.title before a heading; the heading is its slide's title already")
            breaks.append((at, markdown().renderInline(myst_roles(title[lang], lang))))
        for k, block in enumerate(blocks):  # a ### heading starts a slide titled by it
            if block.level == 3:
                breaks.append((k, re.sub(r"^\s*<h3[^>]*>|</h3>\s*$", "", block.html)))  # HTML already
        for at, text in sorted(breaks, reverse=True):
            if display_width(shown_text(html.unescape(re.sub(r"<[^>]+>", "", text)))) > PART_TITLE:
                raise DeckError(f"{where}: the slide title {text!r} is too long for one line; keep it under "
                                f"{PART_TITLE} characters (a Chinese character counts two)")
            if blocks and blocks[at].level == 3:
                blocks[at] = Block("", 0, kind="break", title=text)
                continue
            blocks.insert(at, Block("", 0, kind="break", title=text))
            quiet = {k + (k >= at) for k in quiet}
        for k, block in enumerate(blocks):
            if k in quiet:
                said.append(block.source or re.sub(r"<[^>]+>", "", block.html))
                continue
            if block.level in (1, 2) or not sections:
                if sections:
                    attach(sections[-1], said)
                sections.append(new_section(block if block.level in (1, 2) else None))
            if block.kind != "break":
                block.said, said = said + block.said, []
            sections[-1].blocks.append(block)
    if sections:
        attach(sections[-1], said)
    return [s for s in sections if only is None or s.key in only]


def attach(section: Section, said: list[str]) -> None:
    """Prose said, with no block shown after it in its section, goes to the notes of the last one shown (prose
    said before a titled slide goes to that slide's notes: it leads into what the slide shows)."""
    shown_blocks = [b for b in section.blocks if b.kind != "break"]
    if said and shown_blocks:
        shown_blocks[-1].said += said
    elif said:
        section.notes += said
    said.clear()


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


def chapter_notes(sections: list[Section], guide: str, whole: bool = True) -> None:
    """The guide's plan on the first slide; each paragraph that names a section number on that section's first
    slide; the paragraphs naming none (questions, misconceptions, homework) on the last slide. With whole=False
    (the lecture deck, which shows some of a chapter's sections) only the paragraphs that name a section."""
    body = paragraphs(guide)[1:]  # the heading line is the first
    placed = set()
    first_of = {}
    for section in sections:
        first_of.setdefault(section.key, section)
    for paragraph in body:
        named = [s for s in re.findall(r"\b(\d+\.\d+)\b", paragraph) if s in first_of]
        if named and not paragraph.startswith(("**Plan", "**计划")):
            first_of[named[0]].notes.append(paragraph)
            placed.add(paragraph)
    if not whole:
        return
    sections[0].notes[:0] = [p for p in body if p not in placed and p.startswith(("**Plan", "**计划"))]
    sections[-1].notes.extend(p for p in body if p not in placed and not p.startswith(("**Plan", "**计划")))


NOTE_WORDS = {
    "en": {"point": "From the section", "none": "the lecturer's guide has no note on it", "shows": "On the slides",
           "code": "code and what it prints", "figure": "a figure", "table": "a table", "math": "a formula",
           "widget": "the live widget {w}: change its controls in front of the room", "list": "a list",
           "sep": "; ", "end": "."},
    "zh": {"point": "本节要点", "none": "讲师指南对此节没有说明", "shows": "幻灯片上", "code": "代码及其输出",
           "figure": "一张图", "table": "一张表", "math": "一个公式", "widget": "交互控件 {w}：当堂操作它的控件",
           "list": "一个列表", "sep": "；", "end": "。"},
}
SENTENCE = {"en": re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[$])"), "zh": re.compile(r"(?<=[。！？])")}


def first_sentences(source: str, lang: str) -> str:
    """The opening of a paragraph or a list's first item, as a note quotes it: its first sentence, and the
    second too when the first is short; the Markdown kept (maths becomes plain text in notes_html)."""
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", source.strip().split("\n- ")[0].split("\n1. ")[0])
    text = re.sub(r"\s*\n\s*", "" if lang == "zh" else " ", text).strip()
    parts = [p for p in SENTENCE[lang].split(text) if p.strip()]
    if not parts:
        return ""
    quoted = parts[0].strip()
    if len(parts) > 1 and len(quoted) < (40 if lang == "zh" else 80):
        quoted += ("" if lang == "zh" else " ") + parts[1].strip()
    return quoted


def section_note(section: Section, lang: str) -> list[str]:
    """A speaker note for a section the lecturer's guide and the lecture path say nothing about, made from the
    section itself, nothing invented: the first sentence of its prose and what its slides show."""
    words = NOTE_WORDS[lang]
    prose = [b for b in section.blocks if b.source and b.kind in ("paragraph_open", "bullet_list_open",
             "ordered_list_open") and not re.fullmatch(r"\*\*[^*]+\*\*[:：]?", b.source.strip())]
    shows = []
    for kind, label in (("code", "code"), ("figure", "figure"), ("png", "figure"), ("table", "table"),
                        ("math_block", "math")):
        if any(b.kind == kind for b in section.blocks) and words[label] not in shows:
            shows.append(words[label])
    for b in section.blocks:
        if b.kind == "widget" and (name := re.search(r'data-teachllm-widget="([^"]+)"', b.html)):
            shows.append(words["widget"].format(w=f"`{name[1]}`"))
    if not shows and any(b.kind in ("bullet_list_open", "ordered_list_open") for b in section.blocks):
        shows.append(words["list"])
    point = (f"**{words['point']}**（{words['none']}）：" if lang == "zh" else
             f"**{words['point']}** ({words['none']}): ")
    quoted = first_sentences(prose[0].source, lang) if prose else ""
    note = [point + (quoted or html.unescape(re.sub(r"<[^>]+>", "", section.title)))]
    if shows:
        note.append(f"**{words['shows']}**{'：' if lang == 'zh' else ': '}{words['sep'].join(shows)}{words['end']}")
    return note


NAMED = re.compile(r"(?<![\d.§])(\d+)\.(\d+)(?:\s*[–-]\s*(\d+)\.(\d+))?(?!\d|\.\d)")


def named_sections(text: str, chapter: str) -> list[str]:
    """The sections of `chapter` ("06-logits-to-token") that `text` names: "6.1–6.5" is five of them; a course
    note's "§4.4" and a number such as "0.9" or "1.05" are not sections."""
    number, found = chapter.split("-")[0].lstrip("0"), []
    for m in NAMED.finditer(text):
        if m[1] == number:
            last = int(m[4]) if m[3] == number else int(m[2])
            found += [f"{number}.{n}" for n in range(int(m[2]), last + 1) if f"{number}.{n}" not in found]
    return found


def lecture_stops(lang: str) -> list[tuple[str, str, list[tuple[str, list[str], list[str]]]]]:
    """(heading, the stop's Markdown, [(chapter notebook, its sections, those its **Chapter(s):** line names)])
    for each stop of the lecture path, in its order. A chapter's sections are the ones the stop names anywhere
    (the **Chapter:** line, and "show section 3.5" below it), in the order of their numbers; the chapters are in
    the order the **Chapter(s):** line names them."""
    text = (PAGES[lang] / "lecture-path.md").read_text(encoding="utf-8")
    stops = []
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        line = re.search(r"\*\*(?:Chapters?:|章节：)\*\*(.*?)(?:\n\s*\n|\n- )", body, re.S)
        if not line:
            continue
        chapters = re.findall(r"\{doc\}`chapters/([\w-]+)`", line[1])
        pieces = re.split(r"\{doc\}`chapters/[\w-]+`", line[1])[1:]  # the text after each chapter's name
        targets = []
        for chapter, piece in zip(chapters, pieces, strict=True):
            required = named_sections(piece, chapter)
            every = sorted(set(required) | set(named_sections(body, chapter)), key=lambda s: int(s.split(".")[1]))
            if every:
                targets.append((chapter, every, required))
        stops.append((heading.strip(), body, targets))
    return stops


# ---- HTML -------------------------------------------------------------------------------------------------
SYMBOLS = {"cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "approx": "≈", "to": "→",
           "rightarrow": "→", "infty": "∞", "ldots": "…", "dots": "…", "sum": "Σ", "neq": "≠", "in": "∈",
           "alpha": "α", "beta": "β", "gamma": "γ", "theta": "θ", "lambda": "λ", "mu": "μ", "sigma": "σ",
           "pi": "π", "Delta": "Δ", "sqrt": "√", "left": "", "right": "", "quad": " ", ",": " ", ";": " ", " ": " "}
SUPER = str.maketrans("0123456789+-()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ")
SUB = str.maketrans("0123456789+-()", "₀₁₂₃₄₅₆₇₈₉₊₋₍₎")


def tex_plain(tex: str) -> str:
    """Inline TeX as plain text, for speaker notes (the presenter view has no MathJax): `2 \\cdot \\text{layers}`
    → 2 · layers, `s^2` → s², `\\frac{a}{b}` → (a)/(b)."""
    def script(m: re.Match, table: dict, mark: str) -> str:
        body = m[1] if m[1] is not None else m[2]
        return body.translate(table) if all(c in "0123456789+-()n" for c in body) and body else f"{mark}{body}"

    text = re.sub(r"\\(?:text|mathrm|operatorname|mathbf|mathit|textbf)\{([^{}]*)\}", r"\1", tex)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
    text = re.sub(r"\^\{([^{}]*)\}|\^(\w)", lambda m: script(m, SUPER, "^"), text)
    text = re.sub(r"_\{([^{}]*)\}|_(\d)", lambda m: script(m, SUB, "_"), text)
    text = re.sub(r"\\([A-Za-z]+|[,; !])", lambda m: SYMBOLS.get(m[1], m[1]), text)
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


def notes_html(notes: list[str], lang: str) -> str:
    """Speaker notes as HTML, their maths as plain text (the presenter view does not typeset)."""
    rendered = markdown().render(myst_roles("\n\n".join(notes), lang))
    plain = lambda m: html.escape(tex_plain(html.unescape(m[1])), quote=False)  # noqa: E731
    rendered = re.sub(r'<span class="math inline">(.*?)</span>', plain, rendered, flags=re.S)
    return re.sub(r'<div class="math block">(.*?)</div>', lambda m: f"<p>{plain(m)}</p>", rendered, flags=re.S)


def section_html(slide: Slide, lang: str) -> str:
    """One slide; its speaker notes are the section's (on its first slide) and the prose said with its blocks."""
    said = [text for block in slide.blocks for text in block.said]
    notes = f'<aside class="notes">{notes_html(slide.notes + said, lang)}</aside>' if slide.notes or said else ""
    return f"<section>{''.join(b.html for b in slide.blocks)}{notes}</section>"


def deck_html(title: str, slides: list[Slide], lang: str, assets: str) -> str:
    sections = [section_html(slide, lang) for slide in slides]
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
<script src="{assets}/teachllm-widgets.js"></script>
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
  font-size: {CODE_PX}px; line-height: {CODE_LINE}px; max-height: none; overflow: visible;
  white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; }}
/* identifiers stay whole: code wraps between words, and only a token longer than a line is cut */
.reveal pre.code {{ background: #f5f7fa; border-left: 4px solid #2a9d8f; }}
.reveal pre.output {{ background: #fff; border-left: 4px solid #bbb; }}
.reveal code {{ font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace; font-size: {CODE_PX}px; }}
.reveal pre {{ font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace; }}
.reveal .figure {{ width: 100%; margin: 0 0 16px; }}
.reveal .figure noscript img, .reveal img.png {{ max-width: 100%; }}
.reveal .widget-note {{ border-left: 4px solid #2166ac; background: #f4f8fc; padding: 8px 14px; }}
/* the book's kernel-free widgets (teachllm-widgets.js), at 18 px so their controls leave the figure room */
.reveal .teachllm-live {{ box-sizing: border-box; border-left: 4px solid #2166ac; padding: 2px 0 2px 12px;
  margin: 0 0 10px; font-size: 18px; line-height: 24px; }}
.reveal .teachllm-live p, .reveal .teachllm-live li {{ font-size: 18px; line-height: 24px; margin: 0; }}
.reveal .teachllm-controls {{ display: flex; flex-wrap: wrap; gap: 4px 24px; align-items: center; margin: 4px 0; }}
.reveal .teachllm-columns > div {{ display: flex; flex-direction: column; gap: 2px; }}
.reveal .teachllm-control {{ display: inline-flex; align-items: center; gap: 8px; margin: 0; font-size: 18px; }}
.reveal .teachllm-control > span {{ min-width: 6.5em; text-align: right; }}
.reveal .teachllm-control input[type=range] {{ width: 200px; }}
.reveal .teachllm-control input[type=number] {{ width: 5em; }}
.reveal .teachllm-control output {{ min-width: 3em; font-variant-numeric: tabular-nums; }}
.reveal .teachllm-live select, .reveal .teachllm-live input, .reveal .teachllm-live button {{ font-size: 18px; }}
.reveal .teachllm-buttons {{ display: flex; gap: 6px; }}
.reveal .teachllm-live button {{ border: 1px solid #999; border-radius: 3px; background: #f5f5f5; padding: 2px 12px;
  cursor: pointer; }}
.reveal .teachllm-live-note {{ color: #555; font-style: italic; }}
.reveal .teachllm-live-table table {{ font-size: 16px; margin: 0; }}
.reveal .teachllm-live-table td, .reveal .teachllm-live-table th {{ padding: 2px 8px; }}
.reveal .teachllm-live-info pre {{ white-space: pre-wrap; }}
.reveal h2.running {{ font-size: {TEXT_PX}px; line-height: 30px; color: #52667a; margin: 0 0 10px;
  padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }}
.reveal h2.running .mark {{ color: #888; font-weight: normal; }}
/* a slide the author titled (slide.title): the section's title small, the slide's own below it */
.reveal h2.running.part .section {{ display: block; font-size: 18px; line-height: 22px; font-weight: normal; }}
.reveal h2.running.part .sub {{ display: block; font-size: 30px; line-height: 38px; color: #1d3557; }}
.reveal pre .fold {{ color: #888; font-style: normal; }}  /* lines the slide folds; the notebook shows them */
.reveal .stop-title h1 {{ margin-top: 160px; }}
{HtmlFormatter().get_style_defs('.reveal pre.code')}
"""

DECK_JS = """// teachllm decks: reveal.js at the slide's own size (never scaled, so code stays at its 20 px), the
// presenter view (press S), and each plotly figure drawn from the JSON beside it with the local plotly.js.
//
// The build packs cells into slides by judging heights; the browser has the last word, with the fonts of the
// machine that shows the deck. Before reveal.js starts (and after MathJax has set the formulas), every slide
// that scrolls hands its last element, or the last lines of a block of code or output, or the last items of
// a list or rows of a table, to a new slide after it, under the section's running header ("6.3 Temperature
// (continued)", as the build writes it), until it fits: nothing is cut off and nothing shrinks.
(function () {
  var marks = __MARKS__;

  // The book's widgets (teachllm-widgets.js, loaded after this file) draw with Plotly.react; on a slide their
  // figure takes the width of the slide and the height the build left it (data-figure-height), fixed, so the
  // slide's height is known before reveal.js starts and the presenter view's small copies draw the same.
  if (window.Plotly) {
    var react = Plotly.react;
    Plotly.react = function (div, data, layout, config) {
      var root = div && div.closest && div.closest(".teachllm-live");
      if (root && root.dataset.figureHeight) {
        layout = Object.assign(roomFonts(layout, true), {width: __WIDGET_WIDTH__,
                                                         height: Number(root.dataset.figureHeight), autosize: false});
        data = (data || []).map(function (trace) { return roomFonts(trace, false); });
        config = Object.assign({}, config, {responsive: false});
      }
      return react.call(Plotly, div, data, layout, config);
    };
  }

  // A figure's text read from the back of a room: every font of a figure (its layout's, its axes' tick labels,
  // titles, legend, annotations, a trace's text) at least __FIGURE_FONT__ px on the 1280 px slide, a title
  // __FIGURE_TITLE__ px; the notebook's own figure (12-13 px, for a screen at arm's length) is left as it is.
  function roomFonts(spec, isLayout) {
    var copy = JSON.parse(JSON.stringify(spec || {}));
    (function walk(o, inTitle) {
      if (Array.isArray(o)) { o.forEach(function (x) { walk(x, inTitle); }); return; }
      if (!o || typeof o !== "object") { return; }
      Object.keys(o).forEach(function (k) {
        var v = o[k];
        if (/font$/i.test(k) && v && typeof v === "object" && !Array.isArray(v)) {
          var least = inTitle || k === "titlefont" ? __FIGURE_TITLE__ : __FIGURE_FONT__;
          if (typeof v.size !== "number" || v.size < least) { v.size = least; }
        }
        walk(v, inTitle || k === "title");
      });
    })(copy, false);
    if (!isLayout && typeof copy.mode === "string" && copy.mode.indexOf("text") >= 0 && copy.cliponaxis === undefined) {
      copy.cliponaxis = false;  // a point's label, larger now, is not cut off at the edge of the plot
    }
    if (isLayout) {  // a layout's own font, which its axes, legend and annotations inherit
      Object.keys(copy).forEach(function (k) {  // a log axis labels its powers of ten only: its small digits crowd
        var axis = copy[k];
        if (/^[xy]axis\\d*$/.test(k) && axis && axis.type === "log" && axis.dtick === undefined &&
            axis.tickvals === undefined) { axis.dtick = 1; }
      });
      copy.font = Object.assign({}, copy.font);
      if (typeof copy.font.size !== "number" || copy.font.size < __FIGURE_FONT__) { copy.font.size = __FIGURE_FONT__; }
    }
    return copy;
  }
  var continued = marks[document.documentElement.lang.indexOf("zh") === 0 ? "zh" : "en"];

  function overflows(section) { return section.scrollHeight > section.clientHeight; }

  function movable(section) {
    return [].filter.call(section.children, function (e) {
      return e.tagName !== "ASIDE" && !e.classList.contains("running");
    });
  }

  function nextSlide(section) {
    var next = section.nextElementSibling;
    if (next && next.dataset.continues === section.dataset.slide) { return next; }
    next = document.createElement("section");
    next.dataset.slide = section.dataset.slide + "+";
    next.dataset.continues = section.dataset.slide;
    next.appendChild(header(section));
    section.insertAdjacentElement("afterend", next);
    return next;
  }

  // the running header of a continuation: the slide's own (typeset) one, or one made from its heading; a slide
  // the author titled ("6.3 Temperature · Entropy against temperature") gains the mark on its continuation
  function header(section) {
    var running = section.querySelector("h2.running");
    var made;
    if (running) {
      made = running.cloneNode(true);
      made.classList.remove("titled");
      if (made.querySelector(".mark")) { return made; }
    } else {
      made = document.createElement("h2");
      made.className = "running";
      var heading = section.querySelector("h1, h2");
      if (heading) { [].forEach.call(heading.childNodes, function (n) { made.appendChild(n.cloneNode(true)); }); }
    }
    var mark = document.createElement("span");
    mark.className = "mark";
    mark.textContent = continued;
    made.appendChild(mark);
    return made;
  }

  // move the last lines of a <pre> to the next slide until this one fits; false when not even one line stays
  function splitPre(section, pre, next) {
    var lines = pre.innerHTML.split("\\n");
    var moved = [];
    while (lines.length > 1 && overflows(section)) {
      moved.unshift(lines.pop());
      pre.innerHTML = lines.join("\\n");
    }
    // never 1 or 2 lines on either side (as the build splits): take 3, or leave the block whole
    while (moved.length && moved.length < 3 && lines.length > 3) {
      moved.unshift(lines.pop());
      pre.innerHTML = lines.join("\\n");
    }
    if (moved.length < 3 || lines.length < 3) {
      pre.innerHTML = lines.concat(moved).join("\\n");
      return false;
    }
    var rest = pre.cloneNode(false);
    rest.innerHTML = moved.join("\\n");
    var mark = next.querySelector(".running");
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
    next.querySelector(".running").insertAdjacentElement("afterend", rest);
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
        next.querySelector(".running").insertAdjacentElement("afterend", last);
      }
      s.style.display = "";
    }
  }

  // In the presenter view (key S) the current and the next slide are this page again, in frames of the
  // speaker window (notes.js adds ?receiver): there each slide is scaled down to show whole; in the room never.
  var receiver = /receiver/i.test(window.location.search);
  // The speaker window sends the next-slide frame (controls=false) its state and "next" once, as soon as the
  // current frame is ready; a next frame still loading (it paginates and typesets first) misses them and would
  // show the current slide. It keeps the last state sent and, once ready, goes there and one step on itself.
  var upcoming = receiver && /controls=false/.test(window.location.search);
  var sent = null;
  if (upcoming) {
    window.addEventListener("message", function (event) {
      var data = null;
      try { data = JSON.parse(event.data); } catch (e) { return; }
      if (data && data.method === "setState") { sent = data.args[0]; }
    });
  }

  // The speaker window (notes.js writes it into a window it opens) labels its two frames "Current"/"Upcoming"
  // and puts its layout menu at the top right, over the slides' headers; here each frame starts below a band
  // that holds them, so nothing covers a slide.
  if (!receiver) {
    var open = window.open;
    window.open = function () {
      var speaker = open.apply(window, arguments);
      var tries = 0;
      var timer = setInterval(function () {
        var doc = null;
        try { doc = speaker && speaker.document; } catch (e) { clearInterval(timer); return; }
        if (doc && doc.getElementById("upcoming-slide") && doc.head) {
          var style = doc.createElement("style");
          style.id = "teachllm-speaker-band";
          style.textContent = "#current-slide, #upcoming-slide { box-sizing: border-box; padding-top: __BAND__px; }" +
            " #current-slide .label, #upcoming-slide .label, #speaker-layout { top: 4px; }";
          doc.head.appendChild(style);
          clearInterval(timer);
        } else if (++tries > 100) { clearInterval(timer); }
      }, 50);
      return speaker;
    };
  }

  function start() {
    paginate();
    Reveal.initialize({width: 1280, height: 720, margin: 0, minScale: receiver ? 0.05 : 1, maxScale: 1,
                       center: false,
                       hash: true, transition: "none", plugins: [RevealNotes]}).then(function () {
      if (upcoming) { Reveal.setState(sent || Reveal.getState()); Reveal.next(); }
      document.querySelectorAll(".reveal .figure").forEach(function (div) {
        var spec = document.getElementById(div.id + "-json");
        if (!spec || typeof Plotly === "undefined") { return; }
        var fig = JSON.parse(spec.textContent);
        var data = (fig.data || []).map(function (t) { return roomFonts(t, false); });
        Plotly.newPlot(div, data, roomFonts(fig.layout, true), {displaylogo: false, responsive: false});
      });
    });
  }

  window.addEventListener("load", function () {
    var typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    var widgets = window.teachllm && window.teachllm.ready;  // the widgets drawn, so their height counts
    Promise.all([typeset, widgets].map(function (p) { return p ? p.catch(function () {}) : null; }))
      .then(start, start);
  });
})();
""".replace("__WIDGET_WIDTH__", str(WIDTH - 2 * PAD_X - 20)).replace("__FIGURE_FONT__", str(FIGURE_FONT)).replace(
    "__FIGURE_TITLE__", str(FIGURE_TITLE)).replace("__BAND__", str(SPEAKER_BAND)).replace(
    "__MARKS__", json.dumps({lang: words["continued"] for lang, words in WORDS.items()}, ensure_ascii=False))


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
    shutil.copyfile(WIDGETS_JS, assets / "teachllm-widgets.js")  # the book's own file, unchanged


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
        title = Block(f'<div class="stop-title"><h1>{html.escape(heading)}</h1></div>', 300, kind="heading_open",
                      level=1)
        slides += pack([Section(f"stop {heading}", html.escape(heading), [title], paragraphs(body))], lang)
        for chapter, keys, required in targets:
            path = NOTEBOOKS[lang] / f"{chapter}.ipynb"
            sections = notebook_groups(path, lang, ids, only=set(keys))
            if missing := [k for k in required if k not in {s.key for s in sections}]:
                raise DeckError(f"{shown(PAGES[lang] / 'lecture-path.md')}, stop {heading!r}: {shown(path)} has no "
                                f"section {', '.join(missing)} on its slides (no '## {missing[0]} …' heading, or "
                                "its cells are skipped); fix the section number in the lecture path")
            guide = guide_sections(lang).get(int(chapter[:2]))
            if guide:
                chapter_notes(sections, guide, whole=False)
            slides += pack(sorted(sections, key=lambda s: keys.index(s.key)), lang)
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
