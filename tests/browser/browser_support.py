"""What both browser tests share: Debian's chromium driven through the playwright package (never
`playwright install`, which downloads a browser), with the flags that keep it off the network."""

import os
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
