"""The live book's budget: every chapter page of the built site (make book) stays under PAGE_BUDGET bytes, with
its widgets' data inside it; the whole site's size and each page's are printed for the record.

A chapter page holds its figures' JSON and its widgets' static forms (teachllm/viz/static.py); plotly.js and
the scripts are shared files, counted once in the site's total. Without a built site the test is skipped,
except under CI=true, where it fails (.ci/run builds the book first)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "book" / "_build" / "html"
# bytes: the largest page (chapter 5: attention for 19 tokens in 270 frames, and a recorded run) is about 1.24 MB
PAGE_BUDGET = 3 * 2**20
WIDGET_SCRIPT_BUDGET = 40 * 2**10  # _static/teachllm-widgets.js, unminified and commented


def site_files() -> list[Path]:
    if not (SITE / "chapters").is_dir():
        pytest.skip(f"{SITE.relative_to(ROOT)} is not built: make book")
    return [p for p in SITE.rglob("*") if p.is_file()]


def test_every_chapter_page_is_within_budget():
    files = site_files()
    pages = sorted(p for p in files if p.parent.name == "chapters" and p.suffix == ".html")
    assert len(pages) == 26, [p.name for p in pages]  # 13 chapters, two editions
    sizes = {str(p.relative_to(SITE)): p.stat().st_size for p in pages}
    total = sum(p.stat().st_size for p in files)
    print(f"site: {total / 2**20:.1f} MiB in {len(files)} files; chapter pages: "
          + ", ".join(f"{name} {size / 2**20:.2f} MiB" for name, size in sizes.items()))
    over = {name: size for name, size in sizes.items() if size > PAGE_BUDGET}
    assert not over, f"chapter pages over {PAGE_BUDGET / 2**20:.0f} MiB: {over}"
    script = SITE / "_static" / "teachllm-widgets.js"
    assert script.is_file() and script.stat().st_size < WIDGET_SCRIPT_BUDGET
