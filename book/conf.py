"""Sphinx configuration of the teachllm book (`make book`; see book/README.md).

The chapters are the notebooks in ../notebooks, rendered from their committed outputs (never executed).
Everything the pages load is local: MathJax from book/_vendor (scripts/fetch_book_assets.sh), plotly.js
from the plotly package, diagrams drawn to SVG by Graphviz at build time.
"""

import re
import sys
import types
from pathlib import Path

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
sys.path.insert(0, str(BOOK / "_ext"))
sys.path.insert(0, str(ROOT))  # autodoc documents this checkout's teachllm

project = "teachllm: how an LLM generates text"
author = "the teachllm authors"
copyright = "the teachllm authors; SmolLM2-135M-Instruct is Apache-2.0"  # noqa: A001
language = "en"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.graphviz",
    "sphinx.ext.mathjax",
    "teachllm_book",  # book/_ext: chapters from ../notebooks, plotly figures, widgets, glossary links
]

root_doc = "index"
# zh/ is the Chinese edition, a second Sphinx project (book/zh/conf.py) built into _build/html/zh
exclude_patterns = ["_build", "_vendor", "_slides_vendor", "zh", "README.md", "Thumbs.db", ".DS_Store"]
templates_path = []

# ---- notebooks: render the committed outputs, never execute ----------------------------------------
nb_execution_mode = "off"
nb_ipywidgets_js = {}  # myst-nb would load require.js and the widget manager from CDNs
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
teachllm_chapters_from = ROOT / "notebooks"  # copied (unchanged) to book/chapters/ at build time
# the language switch at the top of every page: (path from this site's root to the other edition's, label)
teachllm_other_edition = ("zh/", "中文版")

# ---- math: the vendored MathJax 3 (SVG output: no font files to fetch) ------------------------------
mathjax_path = "mathjax/tex-svg.js"  # relative to _static/

# ---- diagrams: Graphviz renders SVG at build time (apt-get install graphviz) -------------------------
graphviz_output_format = "svg"
graphviz_dot_args = ["-Gfontname=Helvetica", "-Nfontname=Helvetica", "-Efontname=Helvetica"]

# ---- API reference from the docstrings ---------------------------------------------------------------
autosummary_generate = True
# `python -m teachllm` (and `python -m teachllm.bench`) runs its command on import: autosummary's recursive walk
# must not import a __main__ module. A module marked as a Sphinx mock is skipped by that walk; each command is
# documented by the module its __main__ calls (teachllm.cli, teachllm.bench.decode).
for _main in sorted((ROOT / "teachllm").rglob("__main__.py")):
    _name = ".".join(_main.relative_to(ROOT).with_suffix("").parts)
    sys.modules[_name] = types.SimpleNamespace(__sphinx_mock__=True, __name__=_name)
autosummary_imported_members = False
# "ignore-module-all": a package page documents what is defined in it, not what its __all__ re-exports
# (otherwise tl.ModelConfig and tl.config.ModelConfig are two targets and every reference is ambiguous)
autodoc_default_options = {"members": True, "undoc-members": False, "ignore-module-all": True}
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False



def plain_text_docstring(app, what, name, obj, options, lines):
    """teachllm's docstrings are plain text, not reStructuredText (they write `<|im_end|>`, |x_i|, shape
    comments, aligned tables). Show them as written: the first paragraph as escaped text (it is also
    autosummary's one-line summary), the rest as a literal block, so docutils never misreads them."""
    if not lines:
        return
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    first = [re.sub(r"([\\`*|_\[\]<>:])", r"\\\1", line.strip()) for line in lines[:end]]
    rest = lines[end:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    lines[:] = first + ([""] + ["::", ""] + ["    " + line for line in rest] + [""] if rest else [])


def setup(app):
    app.connect("autodoc-process-docstring", plain_text_docstring)


# ---- HTML --------------------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "teachllm"
html_static_path = ["_static", "_vendor"]
html_css_files = ["book.css"]
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
}
html_last_updated_fmt = None
html_show_sourcelink = False

# ---- warnings: `make book` runs with -W, so every warning fails the build ----------------------------
nitpicky = False
suppress_warnings = []
