"""`make pdf`: the whole book as one PDF per edition, to print or hand out.

    book/_build/pdf/teachllm.pdf       the English edition
    book/_build/pdf/teachllm-zh.pdf    the Chinese edition

How: Sphinx's singlehtml builder puts each edition on one page (cross-references become links within the
page; the chapters keep their numbered headings), and Debian's Chromium prints that page through the book's
print CSS (book/_static/book.css): every figure as the notebook's PNG of it, code wrapped rather than
clipped, no navigation, toolbars or widget notes, each quiz as its questions and answer key. A table of contents
with links opens the PDF, and the PDF's outline (bookmarks) follows the headings, each titled as its heading is
written (`outline_titles`: Chromium's own titles drop spaces and repeat pieces). The API reference is left out
(`FOR_PAPER` says why), and code wraps only at spaces. Nothing is fetched: every request that is not a file of the
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

# Made for paper before printing: sphinx-book-theme's own print header goes (it repeats the book's title and an
# empty "Contents" heading, which Chromium put in the outline), and so does the API reference: in the singlehtml
# page it is one line linking to pages that page does not hold (autosummary's generated pages), and printed in
# full it would be a few hundred pages of docstrings the site already serves. The theme's print header and the API
# page are each removed, with the entries of the book's contents lists that link to the API page.
FOR_PAPER = """() => {
  document.querySelectorAll("#jb-print-toc").forEach(e => e.remove());
  let removed = 0;
  for (const mark of document.querySelectorAll("span[id^='document-api']")) {
    const section = mark.nextElementSibling;
    if (section && section.tagName === "SECTION") { section.remove(); removed += 1; }
    mark.remove();
  }
  for (const link of document.querySelectorAll("a[href^='#document-api']")) (link.closest("li") || link).remove();
  // code wraps at spaces only: each run of non-space characters of a code block (up to WORD characters, which
  // fit on a line) becomes one unbreakable span holding its highlighted pieces, so Chromium cannot break after
  // the "-" of "-math.inf" or inside "[1.0, 2.0]" (a break there drops or splits characters in copied text)
  const WORD = 80;
  for (const pre of document.querySelectorAll("div.highlight pre")) {
    const pieces = [];  // [text, class of its highlighting span]
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const owner = node.parentElement === pre ? "" : node.parentElement.className;
      for (const part of node.data.split(/(\\s+)/)) if (part) pieces.push([part, owner]);
    }
    const out = document.createDocumentFragment();
    let word = null, length = 0;
    for (const [text, owner] of pieces) {
      if (/^\\s+$/.test(text)) { out.append(text); word = null; continue; }
      if (!word) { word = document.createElement("span"); word.className = "pdf-word"; out.append(word); length = 0; }
      const piece = document.createElement("span");
      if (owner) piece.className = owner;
      piece.textContent = text;
      word.append(piece);
      length += text.length;
      if (length > WORD) word.className = "";
    }
    pre.replaceChildren(out);
  }
  return removed;
}"""

# The title of every heading Chromium puts in the PDF's outline, in the page's order: an <h1>–<h6> or an element
# with role="heading" (the contents' captions) that is shown in print, its text without the "#" link, white space
# collapsed. Chromium's own titles lose the space where a heading wraps ("largelanguage") and repeat a heading's
# text when the heading is laid out across a page break ("前言前言"); `outline_titles` puts these back.
HEADINGS = """() => [...document.querySelectorAll("h1, h2, h3, h4, h5, h6, [role=heading]")]
  .filter(h => h.getClientRects().length > 0)
  .map(h => {
    const copy = h.cloneNode(true);
    copy.querySelectorAll(".headerlink").forEach(a => a.remove());
    return copy.textContent.replace(/\\s+/g, " ").trim();
  })"""

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


def print_pdf(page_path: Path, target: Path, contents_title: str, chromium: str,
              headings: list[str] | None = None) -> tuple[int, list[str]]:
    """Print one page to PDF with Chromium; returns (documents in the contents, the URLs refused). `headings`, when
    given, receives the title of each heading in the printed page (for `outline_titles`)."""
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
            # the kernel-free widgets drawn and typeset (a quiz prints from its typeset form)
            page.evaluate("() => window.teachllm && window.teachllm.ready ? window.teachllm.ready.then(() => true) "
                          ": true")
            page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
            page.evaluate(FOR_PAPER)
            documents = page.evaluate(CONTENTS, contents_title)
            page.wait_for_function("() => [...document.images].every(i => i.complete)")
            page.emulate_media(media="print")
            if headings is not None:
                headings.extend(page.evaluate(HEADINGS))
            target.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(path=str(target), format="A4", print_background=True, outline=True, tagged=True,
                     margin={"top": "16mm", "bottom": "18mm", "left": "14mm", "right": "14mm"},
                     display_header_footer=True, header_template="<span></span>",
                     footer_template='<div style="font-size:8px;width:100%;text-align:center">'
                                     '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
        finally:
            browser.close()
    return documents, refused


def squeezed(text: str) -> str:
    return "".join(text.split())


def titles_match(bookmark: str, heading: str) -> bool:
    """Whether Chromium's `bookmark` can be its title for `heading`: white space aside, both begin with the same
    three characters ("1.6", "Cha", "前言"), and the bookmark holds no character the heading lacks."""
    b, h = squeezed(bookmark), squeezed(heading)
    return bool(h) and b[:min(3, len(h))] == h[:3] and set(b) <= set(h)


def outline_titles(pdf: Path, headings: list[str]) -> None:
    """Give each bookmark of `pdf` the title of its heading, as the page writes it.

    Chromium makes one bookmark per heading, in the page's order, but titles it from pieces of the laid-out lines:
    the space at a line break is lost, a heading's text or a piece of it can come twice ("前言前言", "9.6 9.6
    ignore_eos"), or only its first line. So the bookmarks are matched to the headings one for one, in order; a
    different number of each, or a pair whose texts cannot be the same heading (`titles_match`), stops the build."""
    import logging

    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # Chromium's trailer undercounts its objects; harmless

    writer = PdfWriter(clone_from=PdfReader(pdf))
    outlines = writer._root_object.get("/Outlines")
    items = []

    def walk(node):
        while node is not None:
            node = node.get_object()
            items.append(node)
            walk(node.get("/First"))
            node = node.get("/Next")

    walk(outlines.get_object().get("/First") if outlines else None)
    if len(items) != len(headings):
        sys.exit(f"make pdf: {pdf.name} has {len(items)} bookmarks for {len(headings)} headings")
    for item, heading in zip(items, headings, strict=True):
        if not titles_match(str(item["/Title"]), heading):
            sys.exit(f"make pdf: {pdf.name}: the bookmark {str(item['/Title'])!r} is not the heading {heading!r}")
        item[NameObject("/Title")] = TextStringObject(heading)
    with open(pdf, "wb") as f:
        writer.write(f)


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
        headings = []
        documents, refused = print_pdf(page, target, title, chromium, headings)
        if refused:
            shown = ", ".join(refused[:3]) + (f" and {len(refused) - 3} more" if len(refused) > 3 else "")
            sys.exit(f"make pdf: the {lang} book asked for {len(refused)} URL(s) outside its build folder "
                     f"{page.parent.relative_to(ROOT)}: {shown}; make each a file of the book (book/_static) "
                     "or drop it")
        outline_titles(target, headings)
        print(f"{target.relative_to(ROOT)}: {documents} documents, {target.stat().st_size / 1e6:.1f} MB, "
              f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
