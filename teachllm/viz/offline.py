"""How the notebooks show plotly figures: drawn by JupyterLab itself, nothing fetched from a CDN.

    from teachllm import viz
    viz.show_figures_offline()        # the first code cell of every chapter

With TEACHLLM_STATIC_FIGURES=1 every figure also carries a PNG, made on this machine by kaleido
(plotly.js from the plotly package, the system's chromium, MathJax switched off), for a reader
that cannot run plotly.js: a saved notebook on GitHub, an e-mail. The PNG is 800 pixels wide, as
tall as the figure, at scale 1, so one stays well under 100 KB.

kaleido looks for the browser where choreographer's `Chromium.find_browser` does: its own download
(`kaleido_get_chrome`), then BROWSER_PATH, then chromium / chrome on the PATH and their usual places.
Without one, or with one that never answers, kaleido would wait forever at the first figure; here
`show_figures_offline` says so in one line instead, at once or after `timeout` seconds.
"""

from __future__ import annotations

import os
import threading

import plotly.io as pio

from ..inputs import env_flag

PNG_WIDTH = 800  # pixels; the height is the figure's own (plotly's default, 500, if it sets none)


def show_figures_offline(timeout: float = 30) -> str:
    """Set plotly's default renderer for the notebooks and return it: "plotly_mimetype" (JupyterLab's own
    plotly draws the figure), or "plotly_mimetype+png" when TEACHLLM_STATIC_FIGURES is on. Then a browser
    must draw a first, empty figure within `timeout` seconds, or this raises RuntimeError."""
    static = env_flag("TEACHLLM_STATIC_FIGURES")
    if static:
        import kaleido  # here: only PNGs need kaleido and its browser
        from choreographer.browsers.chromium import Chromium

        why = "draws a PNG of each figure in a Chromium"
        instead = "set TEACHLLM_STATIC_FIGURES=0 to show figures without PNGs"
        browser = Chromium.find_browser(skip_local=False)  # the one kaleido will start
        if not (browser and os.path.isfile(browser) and os.access(browser, os.X_OK)):
            found = f"BROWSER_PATH={browser!r} is not a program" if os.environ.get("BROWSER_PATH") else "none was found"
            raise RuntimeError(f"TEACHLLM_STATIC_FIGURES=1 {why}, and {found} "
                               f"(apt-get install chromium, or set BROWSER_PATH); {instead}")
        # One browser for every figure, started here with MathJax off: kaleido's default loads MathJax from a CDN.
        kaleido.start_sync_server(mathjax=False, silence_warnings=True)
        first = threading.Thread(target=kaleido.calc_fig_sync, args=({"data": [], "layout": {}},), daemon=True)
        first.start()
        first.join(timeout)  # kaleido itself would wait without end for a browser that does not start or answer
        if first.is_alive():
            raise RuntimeError(f"TEACHLLM_STATIC_FIGURES=1 {why}, and {browser} did not draw one in {timeout:g} s "
                               f"(set BROWSER_PATH to a working one); {instead}")
        pio.defaults.default_width, pio.defaults.default_scale = PNG_WIDTH, 1
        pio.defaults.headers = None  # no per-call options: kaleido's server would warn that it ignores them
    pio.renderers.default = "plotly_mimetype+png" if static else "plotly_mimetype"
    return pio.renderers.default
