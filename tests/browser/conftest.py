"""The chromium fixture both browser tests use (see browser_support.py)."""

import shutil

import pytest
from browser_support import missing


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
