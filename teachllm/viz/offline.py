"""How the notebooks show plotly figures: drawn by JupyterLab itself, nothing fetched from a CDN.

    from teachllm import viz
    viz.show_figures_offline()        # the first code cell of every chapter

With TEACHLLM_STATIC_FIGURES=1 every figure also carries a PNG, made on this machine by kaleido
(plotly.js from the plotly package, the system's chromium, MathJax switched off), for a reader
that cannot run plotly.js: a saved notebook on GitHub, an e-mail. The PNG is 800 pixels wide, as
tall as the figure, at scale 1, so one stays well under 100 KB.
"""

from __future__ import annotations

import os

import plotly.io as pio

PNG_WIDTH = 800  # pixels; the height is the figure's own (plotly's default, 500, if it sets none)


def show_figures_offline() -> str:
    """Set plotly's default renderer for the notebooks and return it: "plotly_mimetype" (JupyterLab's own
    plotly draws the figure), or "plotly_mimetype+png" when TEACHLLM_STATIC_FIGURES=1."""
    static = os.environ.get("TEACHLLM_STATIC_FIGURES") == "1"
    if static:
        import kaleido

        pio.defaults.default_width, pio.defaults.default_scale = PNG_WIDTH, 1
        pio.defaults.headers = None  # no per-call options: kaleido's server would warn that it ignores them
        # One browser for every figure, started here with MathJax off: kaleido's default loads MathJax from a CDN.
        kaleido.start_sync_server(mathjax=False, silence_warnings=True)
    pio.renderers.default = "plotly_mimetype+png" if static else "plotly_mimetype"
    return pio.renderers.default
