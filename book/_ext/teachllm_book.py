"""Sphinx extension for the teachllm book: the chapters are the notebooks, shown offline.

What it does, in the order a build meets it:

1. ``builder-inited``: copies ``notebooks/*.ipynb`` unchanged into ``book/chapters/`` (gitignored), so the
   notebooks stay the one source of every chapter sentence. Files are rewritten only when they changed,
   so incremental builds stay incremental.
2. ``source-read`` (chapters only, in memory, never on disk):
   - a plotly figure (``application/vnd.plotly.v1+json``) becomes a ``<div class="teachllm-plotly">`` with
     the figure's JSON beside it; ``_static/plotly-figures.js`` draws it with the one local plotly.js, so
     it stays interactive (hover, zoom); the notebook's PNG of it is the ``<noscript>`` fallback;
   - an ipywidgets view becomes its kernel-free form: the notebooks are built with each widget's static form
     (``application/vnd.teachllm.widget+json``, teachllm/viz/static.py) beside it, and the page gets a
     ``<div class="teachllm-live" data-teachllm-widget="...">`` with that JSON; ``_static/teachllm-widgets.js``
     draws the same controls and figures with no kernel. A widget saved without one is a build warning (the
     old note naming it stays as the fallback);
   - an output the page cannot be drawn from (a figure whose height is not a number of pixels, a widget form
     that is not a JSON object naming its widget) stops the build with one line naming the notebook, the cell
     and the fix (``ExtensionError``);
   - the exercises' empty work cells (tagged ``exercise``) are left out (``remove-cell``), and their check
     cells (tagged ``check``, hidden in JupyterLab) become a closed toggle (``hide-cell``); the worked
     answers are on the Solutions page.
3. ``html-page-context``: pages with a plotly figure or a widget load ``_static/vendor/plotly.min.js`` (one
   file for the whole site, copied from the plotly package) and ``plotly-figures.js``; pages with a widget
   also load ``teachllm-widgets.js``.
4. ``doctree-resolved`` (chapters only): the first occurrence of each glossary term in a chapter's prose
   becomes a link to its entry in the glossary. Code, outputs, headings and existing links are skipped.
   The Chinese edition links its Chinese terms (预填充, KV 缓存 …) too.
5. ``html-page-context``: every page starts with a link to the same page in the other edition (English ↔
   中文, ``teachllm_other_edition``); the API pages, which exist in English only, lead to the API page.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"
LIVE = "application/vnd.teachllm.widget+json"  # a widget's kernel-free form (teachllm.viz.static.MIME)
CHAPTERS = "chapters"
PLOTLY_JS = "vendor/plotly.min.js"


# ---- 1. the chapters are the notebooks ------------------------------------------------------------------
def copy_chapters(app: Sphinx) -> None:
    source = Path(app.config.teachllm_chapters_from)
    target = Path(app.srcdir) / CHAPTERS
    target.mkdir(exist_ok=True)
    wanted = {p.name: p for p in sorted(source.glob("[0-9][0-9]-*.ipynb"))}
    if not wanted:
        raise RuntimeError(f"no chapter notebooks in {source}")
    for stale in target.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()
    for name, path in wanted.items():
        data = path.read_bytes()
        copy = target / name
        if not copy.exists() or copy.read_bytes() != data:
            copy.write_bytes(data)


# ---- 2. outputs a static page can show ------------------------------------------------------------------
def figure_height(figure: dict, where: str = "a figure") -> float:
    """The figure's height in px (450 when its layout sets none). plotly takes a height as a number of pixels;
    anything else ("450px") is an ExtensionError naming `where`."""
    height = (figure.get("layout") or {}).get("height")
    if height is None:
        return 450
    if isinstance(height, bool) or not isinstance(height, int | float) or not 0 < height < float("inf"):
        raise ExtensionError(f"{where}: the figure's layout height is {height!r}; use a number of pixels, e.g. 450")
    return height


def plotly_html(figure: dict, element_id: str, png: str | None = None, where: str = "a figure") -> str:
    """A placeholder div and the figure's JSON; plotly-figures.js draws it on page load. The notebook's PNG
    of the figure, when it has one, is what a reader with JavaScript off sees instead."""
    height = figure_height(figure, where)
    spec = json.dumps(figure, separators=(",", ":")).replace("</", "<\\/")  # never close the <script>
    fallback = (f'<noscript><img class="teachllm-plotly-png" alt="figure" src="data:image/png;base64,'
                f'{"".join(png.split())}"></noscript>\n' if png else "")
    return (f'<div class="teachllm-plotly" id="{element_id}" style="height:{int(height)}px">{fallback}</div>\n'
            f'<script type="application/json" id="{element_id}-json">{spec}</script>')


WIDGET_NOTE = {  # what a widget's output becomes in the static page, in the edition's language
    "en": ("<strong>Interactive widget: <code>{widget}</code>.</strong> It needs a running Python kernel: open this "
           "chapter's notebook in JupyterLab (<code>make lab</code>) and run the cell to use it."),
    "zh": ("<strong>交互控件：<code>{widget}</code>。</strong>它只能在运行着的 Python 环境里使用：在 JupyterLab 中"
           "打开本章的笔记本（<code>make lab</code>），运行这个单元格。"),
}


def widget_html(plain: str, lang: str = "en") -> str:
    name = re.match(r"[\[\"'\s]*([A-Za-z_][A-Za-z0-9_]*)", plain or "")
    widget = html.escape(name.group(1) if name else "widget")
    return f'<div class="teachllm-widget"><p>{WIDGET_NOTE[lang].format(widget=widget)}</p></div>'


NO_SCRIPT = {"en": "This widget is drawn by JavaScript, which is off in this browser.",
             "zh": "这个控件由 JavaScript 绘制，而这个浏览器关闭了 JavaScript。"}


def live_widget_html(form: dict, element_id: str, lang: str = "en") -> str:
    """The widget's kernel-free form: a root element naming the widget and its static form as JSON beside it;
    _static/teachllm-widgets.js builds the controls and draws it."""
    spec = json.dumps(form, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    name = html.escape(form["widget"])
    return (f'<div class="teachllm-live" id="{element_id}" data-teachllm-widget="{name}">'
            f'<noscript>{NO_SCRIPT[lang]}</noscript></div>\n'
            f'<script type="application/json" id="{element_id}-json">{spec}</script>')


def widget_form(value, where: str = "a widget") -> dict:
    """A widget's kernel-free form as the notebook saved it (a JSON string, or the object itself); an
    ExtensionError naming `where` when it is not a JSON object naming its widget."""
    rebuild = "rebuild the notebook with scripts/build_notebooks.py, which saves it"
    try:
        form = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as e:
        raise ExtensionError(f"{where}: the widget's kernel-free form ({LIVE}) is not JSON ({e}); it must be the "
                             f"JSON object teachllm.viz.static writes: {rebuild}") from None
    if not isinstance(form, dict) or not isinstance(form.get("widget"), str):
        raise ExtensionError(f"{where}: the widget's kernel-free form ({LIVE}) is not a JSON object naming its "
                             f'widget ({{"widget": "...", ...}}): {rebuild}')
    return form


def static_notebook(text: str, prefix: str, lang: str = "en", name: str | None = None) -> str:
    """The chapter notebook `text` as the static page shows it; `name` (the notebook's path) names it in errors."""
    notebook = json.loads(text)
    n_figures = n_widgets = 0
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        where = f"{name or f'chapter {prefix}'}, cell {number}"
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "exercise" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if "check" in tags and "hide-cell" not in tags:
            tags.append("hide-cell")
        for output in cell.get("outputs", []):
            data = output.get("data")
            if not data:
                continue
            if PLOTLY in data:
                n_figures += 1
                png = data.get("image/png")
                png = "".join(png) if isinstance(png, list) else png
                output["data"] = {"text/html": plotly_html(data[PLOTLY], f"{prefix}-figure-{n_figures}", png, where)}
            elif LIVE in data:
                n_widgets += 1
                form = widget_form(data[LIVE], where)
                output["data"] = {"text/html": live_widget_html(form, f"{prefix}-widget-{n_widgets}", lang)}
            elif WIDGET in data:
                logger.warning(f"{where}: a widget's output has no kernel-free form ({LIVE}); rebuild the "
                               "notebook with scripts/build_notebooks.py")
                plain = data.get("text/plain", "")
                output["data"] = {"text/html": widget_html("".join(plain) if isinstance(plain, list) else plain, lang)}
    return json.dumps(notebook)


def rewrite_chapter(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname.startswith(f"{CHAPTERS}/"):
        lang = "zh" if (app.config.language or "en").startswith("zh") else "en"
        stem = docname.split("/")[-1]
        notebook = Path(app.config.teachllm_chapters_from) / f"{stem}.ipynb"  # the one book/chapters/ copies
        name = str(notebook.relative_to(Path.cwd()) if notebook.is_relative_to(Path.cwd()) else notebook)
        source[0] = static_notebook(source[0], prefix=stem[:2], lang=lang, name=name)


# ---- 3. plotly.js: one local copy, loaded only where a figure is ------------------------------------------
def add_plotly_js(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    body = context.get("body") or ""
    if 'class="teachllm-plotly"' in body or 'class="teachllm-live"' in body:
        app.add_js_file(PLOTLY_JS, priority=400)
        app.add_js_file("plotly-figures.js", priority=401)
    if 'class="teachllm-live"' in body:
        app.add_js_file("teachllm-widgets.js", priority=402)


def copy_plotly_js(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    import plotly

    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    target = Path(app.outdir) / "_static" / PLOTLY_JS
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.stat().st_size != source.stat().st_size:
        shutil.copyfile(source, target)


# ---- 4. glossary terms linked from the chapters ------------------------------------------------------------
SKIP = (nodes.literal, nodes.literal_block, nodes.reference, nodes.title, nodes.raw, nodes.math,
        nodes.math_block, nodes.FixedTextElement, nodes.term)


def _linkable(node: nodes.Text) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, SKIP):
            return False
        parent = parent.parent
    return True


NOT_THE_TERM = {"笔记本": "电脑"}  # Chinese term → what, following it, makes another word


def glossary_terms(app: Sphinx) -> list[tuple[re.Pattern, str, str]]:
    """(pattern, docname, anchor) for each English glossary term, longest first."""
    std = app.env.domains.standard_domain
    terms, seen = [], set()
    chinese = (app.config.language or "").startswith("zh")
    for name, _display, kind, docname, anchor, _priority in std.get_objects():
        if kind != "term" or name.lower() in seen:
            continue
        if name.isascii() and len(name) >= 3:
            pattern = re.compile(rf"(?<![\w/-]){re.escape(name)}(?![\w-])", re.IGNORECASE)
        elif chinese and not name.isascii() and len(name) >= 2:
            # Chinese has no spaces to bound a word; a few terms begin longer words (笔记本电脑, a laptop)
            pattern = re.compile(re.escape(name) + (f"(?!{NOT_THE_TERM[name]})" if name in NOT_THE_TERM else ""))
        else:
            continue
        seen.add(name.lower())  # "KV cache" and "KV Cache" are one term to a case-blind search
        terms.append((pattern, docname, anchor, len(name)))
    terms.sort(key=lambda t: -t[3])
    return [t[:3] for t in terms]


def link_glossary(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if not docname.startswith(f"{CHAPTERS}/") or app.builder.format != "html":
        return
    linked = set()  # one link per entry: its longest headword found ("roofline model" before "roofline")
    for pattern, term_doc, anchor in glossary_terms(app):
        if anchor in linked:
            continue
        for text in list(doctree.findall(nodes.Text)):
            match = pattern.search(str(text))
            if match is None or not _linkable(text):
                continue
            value = str(text)
            uri = app.builder.get_relative_uri(docname, term_doc) + "#" + anchor
            link = nodes.reference("", match.group(0), internal=True, refuri=uri,
                                   reftitle="glossary", classes=["glossary-link"])
            parts = [nodes.Text(value[:match.start()]), link, nodes.Text(value[match.end():])]
            text.parent.replace(text, [p for p in parts if not isinstance(p, nodes.Text) or str(p)])
            linked.add(anchor)
            break


# ---- 5. the language switch ------------------------------------------------------------------------------
def other_edition_page(pagename: str, to_translation: bool) -> str:
    """The page name in the other edition: the same page, except the API pages (English only)."""
    if to_translation:
        return "api" if pagename.startswith("api/") else pagename
    return "api/index" if pagename == "api" else pagename


def add_language_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if app.config.teachllm_other_edition is None or "body" not in context:
        return
    prefix, label = app.config.teachllm_other_edition
    up = "../" * pagename.count("/")
    target = other_edition_page(pagename, to_translation=not prefix.startswith(".."))
    href = f"{up}{prefix}{target}.html"
    lang = "en" if prefix.startswith("..") else "zh-CN"
    context["body"] = (f'<p class="language-switch"><a href="{html.escape(href)}" hreflang="{lang}" lang="{lang}">'
                       f"{html.escape(label)}</a></p>\n") + context["body"]


def setup(app: Sphinx) -> dict:
    app.add_config_value("teachllm_chapters_from", None, "env")
    app.add_config_value("teachllm_other_edition", None, "html")
    app.connect("html-page-context", add_language_switch)
    app.connect("builder-inited", copy_chapters)
    app.connect("source-read", rewrite_chapter)
    app.connect("html-page-context", add_plotly_js)
    app.connect("build-finished", copy_plotly_js)
    app.connect("doctree-resolved", link_glossary)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
