"""What both browser tests share: Debian's chromium driven through the playwright package (never
`playwright install`, which downloads a browser), with the flags that keep it off the network."""

import collections
import contextlib
import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def missing(what: str):
    """Skip with a hint, except under CI=true, where a browser test must run (.ci/run installs chromium and
    builds the book first)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}; CI=true, so this test must run (.ci/run installs chromium and builds the book)")
    pytest.skip(f"{what} (make book; apt-get install chromium; pip install playwright; never `playwright install`)")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(folder: Path):
    """`folder` served on a free port of 127.0.0.1 while the block runs; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def local_page(browser, allowed: str, outside: list, viewport: dict, timeout_ms: int):
    """A new page on which every request that does not start with `allowed` (data: and blob: URLs aside)
    is blocked and its URL appended to `outside`, so a test can assert that nothing left the machine."""
    def only_local(route):
        url = route.request.url
        if url.startswith((allowed, "data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context = browser.new_context(viewport=viewport)
    context.route("**/*", only_local)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    return page


def pages_in_turn(new_page, urls, ahead: int = 1):
    """(url, page) for each of `urls`, in order, each page loaded ("load" fired); while the caller reads one, the
    browser already loads the next `ahead`, so a test that reads many pages does not wait for each in turn. Each
    page's context is closed once the caller has read it. Only for a check of what a page shows: a time measured
    on a page may include another page loading beside it."""
    waiting = iter(urls)
    loading = collections.deque()

    def start_next():
        url = next(waiting, None)
        if url is not None:
            page = new_page()
            page.goto(url, wait_until="commit")  # returns once the browser has the response; the page goes on loading
            loading.append((url, page))

    for _ in range(ahead + 1):
        start_next()
    while loading:
        url, page = loading.popleft()
        start_next()
        try:
            page.wait_for_load_state("load")
            yield url, page
        finally:
            page.context.close()


_GLYPH_SPANS = """([selector, probes]) => {
    const el = document.querySelector(selector);
    if (!el) return null;
    const han = [...new Set(el.textContent.match(/[\\u4e00-\\u9fff]/g) || [])].slice(0, 2);
    if (han.length < 2) return null;
    const font = getComputedStyle(el).font;
    [...han, '\\ue000'].forEach((text, k) => {
        const span = document.createElement('span');
        span.id = probes[k];
        span.textContent = text;
        span.style.cssText = `font:${font};position:fixed;left:${8 + 80 * k}px;top:8px;z-index:99999;` +
            'background:#fff;color:#000;padding:2px;line-height:1.2';
        document.body.appendChild(span);
    });
    return han;
}"""


def chinese_is_drawn(page, selector: str) -> list[str]:
    """Two Chinese characters of the element `selector` drawn in its font must look different from each other
    and from the missing-glyph box (a private-use character): with no CJK font, every one is the same box.
    Returns the two characters; raises AssertionError when they are boxes."""
    probes = ["glyph-probe-a", "glyph-probe-b", "glyph-probe-box"]
    han = page.evaluate(_GLYPH_SPANS, [selector, probes])
    assert han, f"no two Chinese characters in {selector}"
    a, b, box = (page.locator(f"#{p}").screenshot() for p in probes)
    page.evaluate("probes => probes.forEach(p => document.getElementById(p).remove())", probes)
    assert a != b and a != box and b != box, f"{han} are drawn as missing-glyph boxes: no CJK font?"
    return han
