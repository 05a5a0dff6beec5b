"""show_figures_offline: which values of TEACHLLM_STATIC_FIGURES switch the PNGs on, and a clear error, soon,
when there is no browser to draw them or the one there does not answer (kaleido alone would wait forever).

The browser cases run in a child Python with a time limit, so a hang fails the test instead of blocking it.
"""

import os
import shutil
import signal
import subprocess
import sys

import pytest

pytest.importorskip("plotly")  # before anything that imports teachllm.viz
pytest.importorskip("ipywidgets")
pytest.importorskip("kaleido")
import kaleido
import plotly.io as pio

from teachllm import viz

NO_BROWSER = ("RuntimeError: TEACHLLM_STATIC_FIGURES=1 draws a PNG of each figure in a Chromium, and "
              "BROWSER_PATH='{path}' is not a program (apt-get install chromium, or set BROWSER_PATH); "
              "set TEACHLLM_STATIC_FIGURES=0 to show figures without PNGs")


@pytest.fixture
def drawn(monkeypatch):
    """kaleido with the browser left out: the figures show_figures_offline asks it to draw, none drawn.
    plotly's renderer and image settings are put back after the test."""
    for name in ("default_width", "default_scale", "headers"):
        monkeypatch.setattr(pio.defaults, name, getattr(pio.defaults, name))
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)
    monkeypatch.setattr(kaleido, "start_sync_server", lambda **kw: None)
    figures = []
    monkeypatch.setattr(kaleido, "calc_fig_sync", figures.append)
    monkeypatch.setenv("BROWSER_PATH", sys.executable)  # a program where the browser would be
    return figures


@pytest.mark.parametrize("value", ["1", "true", "True", "YES", "on", " on "])
def test_the_usual_spellings_switch_pngs_on(monkeypatch, drawn, value):
    monkeypatch.setenv("TEACHLLM_STATIC_FIGURES", value)
    assert viz.show_figures_offline() == "plotly_mimetype+png" and drawn == [{"data": [], "layout": {}}]


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "no", "off", "", None])
def test_the_usual_spellings_switch_pngs_off(monkeypatch, drawn, value):
    if value is None:
        monkeypatch.delenv("TEACHLLM_STATIC_FIGURES", raising=False)
    else:
        monkeypatch.setenv("TEACHLLM_STATIC_FIGURES", value)
    assert viz.show_figures_offline() == "plotly_mimetype" and drawn == []


@pytest.mark.parametrize("value", ["2", "tru", "enabled", "y", "png"])
def test_anything_else_is_refused_by_name(monkeypatch, drawn, value):
    """Not silently off, as "true" once was: the error names the variable, the value and what is allowed."""
    monkeypatch.setenv("TEACHLLM_STATIC_FIGURES", value)
    with pytest.raises(ValueError, match=f"TEACHLLM_STATIC_FIGURES='{value}': use 1, true, yes or on to switch it "
                                         "on, 0, false, no, off or nothing to switch it off"):
        viz.show_figures_offline()
    assert drawn == []


def run_python(code: str, tmp_path, browser: str) -> subprocess.CompletedProcess:
    """`code` in a child Python with TEACHLLM_STATIC_FIGURES=1 and BROWSER_PATH=`browser`, no chromium on the PATH
    and no browser of kaleido's own (XDG_DATA_HOME, where kaleido_get_chrome puts one, is empty). A child still
    running after 30 seconds fails the test."""
    env = {**os.environ, "TEACHLLM_STATIC_FIGURES": "1", "BROWSER_PATH": browser,
           "PATH": os.path.dirname(sys.executable), "XDG_DATA_HOME": str(tmp_path)}
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("no answer in 30 s: a missing or silent browser must not make show_figures_offline hang")


def test_no_browser_is_one_clear_line_at_once(tmp_path):
    """Where kaleido waited forever at the first PNG (a reader's cell was killed after 45 s)."""
    code = ("import time; from teachllm import viz; import plotly.io as pio; start = time.monotonic()\n"
            "try:\n    viz.show_figures_offline(); pio.to_image({'data': []}, format='png')\n"
            "finally:\n    print(f'{time.monotonic() - start:.2f}')\n")
    done = run_python(code, tmp_path, str(tmp_path / "no-browser"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == NO_BROWSER.format(path=tmp_path / "no-browser")
    assert float(done.stdout) < 3  # seconds from the call to the error: no browser is started, nothing waits


@pytest.mark.parametrize("browser", ["exit 1", f"echo $$ > pid; exec {shutil.which('sleep')} 60"],
                         ids=["crashes", "never answers"])
def test_a_browser_that_does_not_draw_is_given_up_after_the_timeout(tmp_path, browser):
    """A "browser" that exits at once, and one that never answers: both kept kaleido waiting forever."""
    program = tmp_path / "browser"
    program.write_text(f"#!/bin/sh\ncd {tmp_path}\n{browser}\n")
    program.chmod(0o755)
    code = ("import os, time; from teachllm import viz; start = time.monotonic()\n"
            "try:\n    viz.show_figures_offline(timeout=2)\nexcept RuntimeError as e:\n"
            "    print(f'{time.monotonic() - start:.2f}', e, flush=True)\n"
            "    os._exit(1)  # not sys.exit: kaleido's exit handler would wait for the browser that never answers\n")
    try:
        done = run_python(code, tmp_path, str(program))
    finally:
        if (tmp_path / "pid").exists():  # the silent "browser" this test started: still asleep
            os.kill(int((tmp_path / "pid").read_text()), signal.SIGTERM)
    assert done.returncode == 1 and " " in done.stdout, done.stderr[-2000:]
    seconds, message = done.stdout.split(" ", 1)
    assert 2 <= float(seconds) < 5
    assert message.strip() == (f"TEACHLLM_STATIC_FIGURES=1 draws a PNG of each figure in a Chromium, and {program} "
                               "did not draw one in 2 s (set BROWSER_PATH to a working one); "
                               "set TEACHLLM_STATIC_FIGURES=0 to show figures without PNGs")
