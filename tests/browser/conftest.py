"""The fixtures the browser tests share: chromium (see browser_support.py), and one headless browser per module."""

import shutil

import pytest
from browser_support import CHROMIUM_FLAGS, missing


@pytest.fixture(scope="module")
def chromium():
    """Path of Debian's chromium, or a skip (a failure under CI) naming what is missing."""
    path = shutil.which("chromium")
    if path is None:
        missing("chromium is not on PATH")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("the playwright Python package is not installed")
    return path


@pytest.fixture(scope="module")
def browser(chromium):
    """One headless chromium for a test module (the live book's and the quiz's pages)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()
