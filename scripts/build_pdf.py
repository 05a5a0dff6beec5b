"""`make pdf`: the whole book as one PDF per edition, to print or hand out.

    book/_build/pdf/teachllm.pdf       the English edition
    book/_build/pdf/teachllm-zh.pdf    the Chinese edition

How: Sphinx's singlehtml builder puts each edition on one page (cross-references become links within the
page; the chapters keep their numbered headings), and Debian's Chromium prints that page through the book's
print CSS (book/_static/book.css): every figure as the notebook's PNG of it, code wrapped rather than
clipped, no navigation, toolbars or widget notes. A table of contents with links opens the PDF, and the PDF's
outline (bookmarks) follows the headings. Nothing is fetched: every request that is not a file of the
build (a file: URL under the edition's singlehtml folder, or a data: URL) is refused, whether it is for the
network or for another file on the disk, and the build fails naming what was asked for (`of_the_build`).

Why Chromium rather than Sphinx's LaTeX builder: the pages are HTML already, with MathJax's formulas, the
plotly figures' PNGs and the notebooks' output tables, which would each need a LaTeX twin (and xeCJK plus a
TeX Live of several GB for Chinese); Chromium is what the browser tests use anyway, embeds a subset of each
font the page uses (Noto Sans CJK for Chinese) and gives what a reader's own "Print to PDF" gives.

    python scripts/build_pdf.py            # both editions
    python scripts/build_pdf.py --lang zh  # one
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
EDITIONS = {"en": (BOOK, "teachllm.pdf", "Contents"), "zh": (BOOK / "zh", "teachllm-zh.pdf", "目录")}
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--font-render-hinting=none"]
TIMEOUT_MS = 180_000

# A contents list at the top, linking each document of the book (the singlehtml page marks where each begins
# with a <span id="document-NAME">)
CONTENTS = """title => {
  const nav = document.createElement("nav");
  nav.className = "pdf-contents";
  nav.innerHTML = "<h2></h2><ul></ul>";
  nav.querySelector("h2").textContent = title;
  let documents = 0;
  for (const mark of document.querySelectorAll("span[id^='document-']")) {
    let section = mark.nextElementSibling;
    while (section && section.tagName !== "SECTION") section = section.nextElementSibling;
    const heading = section && section.querySelector("h1, h2");
    if (!heading) continue;
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = "#" + mark.id;  // section ids repeat across documents (id1 …); the document marks do not
    link.textContent = heading.textContent.replace(/[#¶]\\s*$/, "").trim();
    item.appendChild(link);
    nav.querySelector("ul").appendChild(item);
    documents += 1;
  }
  document.querySelector("h1").insertAdjacentElement("afterend", nav);
  return documents;
}"""


def singlehtml(lang: str) -> Path:
    """Build one edition as one HTML page; returns the page."""
    source, _, _ = EDITIONS[lang]
    out = BOOK / "_build" / "singlehtml" / lang
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "singlehtml", "-q", str(source), str(out)], check=True)
    return out / "index.html"


def of_the_build(url: str, folder: Path) -> bool:
    """Whether Chromium may load `url` while printing a page built in `folder`: a data: URL, or a file: URL of a
    file under `folder` ("../" resolved first). Anything else, the network or any other file, is refused."""
    if url.startswith("data:"):
        return True
    parts = urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return False
    return Path(os.path.normpath(url2pathname(parts.path))).is_relative_to(os.path.normpath(folder))


def print_pdf(page_path: Path, target: Path, contents_title: str, chromium: str) -> tuple[int, list[str]]:
    """Print one page to PDF with Chromium; returns (documents in the contents, the URLs refused)."""
    from playwright.sync_api import sync_playwright  # the dev extra; only `make pdf` needs it

    refused = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)

            def only_files(route):
                if of_the_build(route.request.url, page_path.parent):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            page.route("**/*", only_files)
            page.goto(page_path.as_uri(), wait_until="load")
            page.wait_for_function("() => !window.MathJax || (MathJax.startup && MathJax.startup.promise)")
            page.evaluate("() => window.MathJax ? MathJax.startup.promise.then(() => true) : true")
            page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
            documents = page.evaluate(CONTENTS, contents_title)
            page.wait_for_function("() => [...document.images].every(i => i.complete)")
            page.emulate_media(media="print")
            target.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(path=str(target), format="A4", print_background=True, outline=True, tagged=True,
                     margin={"top": "16mm", "bottom": "18mm", "left": "14mm", "right": "14mm"},
                     display_header_footer=True, header_template="<span></span>",
                     footer_template='<div style="font-size:8px;width:100%;text-align:center">'
                                     '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
        finally:
            browser.close()
    return documents, refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(EDITIONS), action="append", help="one edition (default: both)")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("make pdf: Debian's chromium is missing (apt-get install chromium)")
    for lang in args.lang or list(EDITIONS):
        start = time.perf_counter()
        page = singlehtml(lang)
        _, name, title = EDITIONS[lang]
        target = BOOK / "_build" / "pdf" / name
        documents, refused = print_pdf(page, target, title, chromium)
        if refused:
            shown = ", ".join(refused[:3]) + (f" and {len(refused) - 3} more" if len(refused) > 3 else "")
            sys.exit(f"make pdf: the {lang} book asked for {len(refused)} URL(s) outside its build folder "
                     f"{page.parent.relative_to(ROOT)}: {shown}; make each a file of the book (book/_static) "
                     "or drop it")
        print(f"{target.relative_to(ROOT)}: {documents} documents, {target.stat().st_size / 1e6:.1f} MB, "
              f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
