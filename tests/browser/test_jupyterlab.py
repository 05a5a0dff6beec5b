"""The widgets in a real JupyterLab, driven by headless Chromium (Debian's package, through Playwright).

Starts `jupyter lab` on 127.0.0.1 with a fixed token, opens tests/browser/widgets.ipynb, runs every
cell, then moves the distribution explorer's temperature slider and the attention explorer's layer
selector and checks that the charts in the page change. Then it opens tests/browser/widgets-zh.ipynb, the
same explorer after `viz.set_language("zh")`, and checks that its labels and figure title are Chinese and
drawn with a CJK font (not missing-glyph boxes). Screenshots go to artifacts/screenshots/.
Every request the page makes must stay on 127.0.0.1: nothing may come from a CDN.

Without Chromium or Playwright the test is skipped, except under CI=true, where it fails.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser_support import CHROMIUM_FLAGS, SCREENSHOTS, chinese_is_drawn, local_page

HERE = Path(__file__).parent
NOTEBOOK = "widgets.ipynb"
CHINESE_NOTEBOOK = "widgets-zh.ipynb"
TOKEN = "teachllm-browser-test"
SERVER_TIMEOUT_S = 180  # JupyterLab's first start on a busy 2-core machine
RUN_TIMEOUT_S = 420  # the kernel loads the model and runs every cell
CHANGE_TIMEOUT_S = 120  # a slider move: the kernel recomputes, the browser redraws


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium):
    """A JupyterLab server on a free port, serving a copy of this folder's notebook, with a kernel that
    runs this Python (sys.executable) and no news or update checks. Yields its base URL."""
    root = tmp_path_factory.mktemp("lab")
    for name in (NOTEBOOK, CHINESE_NOTEBOOK):
        shutil.copy(HERE / name, root / name)
    jupyter = tmp_path_factory.mktemp("jupyter")
    kernel = jupyter / "data" / "kernels" / "python3"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python"}))
    settings = jupyter / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps(
        {"fetchNews": "false", "checkForUpdates": False}))
    env = {**os.environ, "JUPYTER_PATH": str(jupyter / "data"), "JUPYTER_DATA_DIR": str(jupyter / "user-data"),
           "JUPYTER_CONFIG_DIR": str(jupyter / "config"),
           "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"), "IPYTHONDIR": str(jupyter / "ipython"),
           "JUPYTERLAB_SETTINGS_DIR": str(jupyter / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(jupyter / "workspaces"), "HF_HUB_OFFLINE": "1"}
    port = _free_port()
    log = (jupyter / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
         "--ServerApp.allow_root=True", "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_TIMEOUT_S
        while not _answers(f"{base}/lab?token={TOKEN}"):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start:\n{(jupyter / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield base
    finally:
        try:  # shut the server down with its kernels; then make sure the process we started is gone
            request = urllib.request.Request(f"{base}/api/shutdown?token={TOKEN}", method="POST")
            urllib.request.urlopen(request, timeout=10).close()
            server.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
        log.close()


def _wait_until(condition, timeout_s: float, what: str, poll_s: float = 0.25):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


KERNEL_IDLE = """() => {
    const session = window.jupyterapp.shell.currentWidget?.sessionContext?.session;
    const kernel = session && session.kernel;
    return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""


def _kernel_ready(page) -> bool:
    """True once the notebook's kernel is connected and idle. A "Select Kernel" dialog, which JupyterLab
    sometimes shows while the session starts, is accepted (its default is the notebook's kernelspec)."""
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    if accept.count():
        accept.first.click()
        return False
    return page.evaluate(KERNEL_IDLE)


def _run_notebook(browser, url: str, outside: list):
    """A page of `url` (a notebook in JupyterLab) once its kernel is ready, with "Run All" started (not awaited);
    requests that leave 127.0.0.1 are blocked and appended to `outside`."""
    page = local_page(browser, "http://127.0.0.1", outside, {"width": 1500, "height": 1100}, RUN_TIMEOUT_S * 1000)
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands"
                           "  .isEnabled('notebook:run-all-cells')")
    _wait_until(lambda: _kernel_ready(page), SERVER_TIMEOUT_S, "the notebook's kernel")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")  # no await
    return page


def test_widgets_render_and_respond_in_jupyterlab(lab, chromium):
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    outside = []  # requests that left 127.0.0.1

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = _run_notebook(browser, f"{lab}/lab/tree/{NOTEBOOK}?token={TOKEN}", outside)

            # ---- the distribution explorer: move the temperature slider ---------------------------
            explorer = page.locator(".jp-OutputArea-output", has=page.locator(".teachllm-temperature"))
            bars = explorer.locator(".js-plotly-plot .bars .point path")
            page.wait_for_selector(".teachllm-temperature .noUi-handle")
            _wait_until(lambda: bars.count() >= 20, RUN_TIMEOUT_S, "the distribution explorer's bars")

            def heights():
                return bars.evaluate_all("els => els.map(e => Math.round(e.getBoundingClientRect().height * 10) / 10)")

            before = heights()
            assert max(before) > 0
            explorer.screenshot(path=SCREENSHOTS / "distribution-explorer-temperature-1.0.png")
            readout = page.locator(".teachllm-temperature .widget-readout")
            assert readout.inner_text().strip() == "1.00"
            page.locator(".teachllm-temperature .noUi-handle").click()
            for _ in range(8):  # 1.00 → 1.40, one step of 0.05 per key press
                page.keyboard.press("ArrowRight")
            _wait_until(lambda: readout.inner_text().strip() == "1.40", CHANGE_TIMEOUT_S, "the slider to reach 1.40")
            after = _wait_until(lambda: (h := heights()) != before and h, CHANGE_TIMEOUT_S, "the bars to change")
            assert len(after) == len(before)
            explorer.screenshot(path=SCREENSHOTS / "distribution-explorer-temperature-1.4.png")

            # ---- the attention explorer: choose another layer -------------------------------------
            attention = page.locator(".jp-OutputArea-output", has=page.locator(".teachllm-layer"))
            images = attention.locator(".js-plotly-plot .heatmaplayer image")
            _wait_until(lambda: images.count() >= 6, RUN_TIMEOUT_S, "the attention heatmaps")

            def pictures():
                return images.evaluate_all("els => els.map(e => e.getAttribute('href') || "
                                           "e.getAttribute('xlink:href'))")

            first = pictures()
            attention.screenshot(path=SCREENSHOTS / "attention-explorer-layer-0.png")
            attention.locator(".teachllm-layer select").select_option(label="layer 12")
            _wait_until(lambda: (h := pictures()) != first and len(h) == len(first), CHANGE_TIMEOUT_S,
                        "the heatmaps to change")
            attention.screenshot(path=SCREENSHOTS / "attention-explorer-layer-12.png")

            # ---- the static figure (JupyterLab's plotly renderer) ----------------------------------
            static = page.locator(".jp-RenderedPlotly")
            _wait_until(lambda: static.locator(".bars .point path").count() >= 20, RUN_TIMEOUT_S, "the static figure")
            static.screenshot(path=SCREENSHOTS / "static-distribution-figure.png")
            page.screenshot(path=SCREENSHOTS / "jupyterlab.png")
        finally:
            browser.close()
    assert outside == [], f"the page tried to fetch from outside 127.0.0.1: {outside}"


def test_chinese_widget_in_jupyterlab(lab, chromium):
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    outside = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            # a workspace of its own: the default one would reopen the English notebook of the test above
            page = _run_notebook(browser, f"{lab}/lab/workspaces/zh/tree/{CHINESE_NOTEBOOK}?reset&token={TOKEN}",
                                 outside)
            explorer = page.locator(".jp-OutputArea-output", has=page.locator(".teachllm-temperature"))
            bars = explorer.locator(".js-plotly-plot .bars .point path")
            _wait_until(lambda: bars.count() >= 20, RUN_TIMEOUT_S, "the Chinese distribution explorer's bars")
            label = explorer.locator(".teachllm-temperature .widget-label").inner_text()
            assert "温度" in label, label
            title = explorer.locator(".js-plotly-plot .gtitle").first.text_content()
            assert any("\u4e00" <= ch <= "\u9fff" for ch in title), title
            explorer.locator(".teachllm-temperature .widget-label").evaluate("el => el.id = 'zh-temperature-label'")
            print("drawn:", chinese_is_drawn(page, "#zh-temperature-label"),
                  chinese_is_drawn(page, ".jp-OutputArea-output .js-plotly-plot .gtitle"))
            explorer.screenshot(path=SCREENSHOTS / "distribution-explorer-zh.png")
        finally:
            browser.close()
    assert outside == [], f"the page tried to fetch from outside 127.0.0.1: {outside}"
