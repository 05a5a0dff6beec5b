"""The built book (make book → book/_build/html) in headless Chromium, served from 127.0.0.1.

Every request that leaves 127.0.0.1 is blocked and counted: the count must be zero (no CDN, no fonts,
no analytics). On four pages it checks what a reader would see:

- the lecturer's guide: its formulas are typeset by the vendored MathJax (`mjx-container` with SVG);
- chapter 6: the plotly figures are drawn by the local plotly.js, answer a hover and zoom on a drag;
- the diagrams page: the Graphviz diagrams are drawn (SVG with nodes);
- the search page: searching "KV cache" lists results.

And on the Chinese edition (book/_build/html/zh): chapter 6 is drawn in Chinese (two of its characters,
screenshotted, differ from each other and from the missing-glyph box), its figure and formula are drawn,
chapter 4's widget buttons and the toggle of a hidden cell read in Chinese (book-zh-widget.png,
book-zh-code-toggle.png), the language switch leads to the same chapter in English and back, and searching
预填充 finds pages (Sphinx indexes Chinese only with jieba).

Screenshots: artifacts/screenshots/book-*.png. Without a built site, Chromium or Playwright the test is
skipped, except under CI=true, where it fails.
"""

import re
from pathlib import Path

import pytest
from browser_support import CHROMIUM_FLAGS, SCREENSHOTS, chinese_is_drawn, local_page, missing, serve

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "book" / "_build" / "html"
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def site():
    """The built site served on a free port of 127.0.0.1; yields its base URL."""
    for page in ("index.html", "lecturers-guide.html", "diagrams.html", "search.html",
                 "chapters/06-logits-to-token.html", "zh/index.html", "zh/chapters/06-logits-to-token.html"):
        if not (SITE / page).is_file():
            missing(f"the book is not built ({SITE / page} is missing: run `make book`)")
    with serve(SITE) as url:
        yield url


def test_book_renders_offline(site, chromium):
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    outside = []  # every request that would have left 127.0.0.1

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = local_page(browser, site + "/", outside, {"width": 1400, "height": 1000}, TIMEOUT_MS)

            # ---- math: the vendored MathJax typesets the lecturer's guide's formulas ------------------
            page.goto(f"{site}/lecturers-guide.html")
            page.wait_for_function("() => document.querySelectorAll('mjx-container svg').length >= 6")
            formulas = page.locator("mjx-container[display='true']")
            assert formulas.count() >= 6
            assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
            formulas.nth(3).scroll_into_view_if_needed()  # chapter 6: softmax with temperature
            page.screenshot(path=SCREENSHOTS / "book-math.png")
            # ... and a chapter: 6.3 writes softmax with temperature in TeX, in the notebook's own markdown
            page.goto(f"{site}/chapters/06-logits-to-token.html")
            page.wait_for_function("() => document.querySelectorAll('mjx-container svg').length >= 1")
            assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error in chapter 6"
            page.locator("mjx-container[display='true']").first.scroll_into_view_if_needed()
            page.screenshot(path=SCREENSHOTS / "book-chapter-math.png")

            # ---- plotly: drawn by the one local plotly.js, answers a hover, zooms ---------------------
            page.goto(f"{site}/chapters/06-logits-to-token.html")
            page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
            assert page.evaluate("() => typeof Plotly") == "object"
            plot = page.locator(".js-plotly-plot", has=page.locator(".bars .point path")).first  # 6.9's bars
            plot.scroll_into_view_if_needed()
            bars = plot.locator(".bars .point path")
            assert bars.count() >= 5
            box = bars.first.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            hover = plot.locator(".hoverlayer .hovertext")
            hover.first.wait_for(state="visible")
            hover_text = hover.first.text_content()
            assert hover_text and hover_text.strip()
            plot.screenshot(path=SCREENSHOTS / "book-plotly-hover.png")
            x_range = "el => JSON.stringify(el._fullLayout.xaxis.range)"
            before = plot.evaluate(x_range)
            drag = plot.locator(".nsewdrag").first.bounding_box()
            y = drag["y"] + drag["height"] / 2
            page.mouse.move(drag["x"] + drag["width"] * 0.2, y)
            page.mouse.down()
            page.mouse.move(drag["x"] + drag["width"] * 0.5, y, steps=8)
            page.mouse.up()
            for _ in range(40):  # plotly relayouts on mouse up
                if plot.evaluate(x_range) != before:
                    break
                page.wait_for_timeout(250)
            assert plot.evaluate(x_range) != before, "dragging across the plot did not zoom it"

            # ---- diagrams: Graphviz SVG, drawn -----------------------------------------------------------
            page.goto(f"{site}/diagrams.html")
            page.wait_for_function("""() => {
                const objects = [...document.querySelectorAll('object.graphviz')];
                return objects.length >= 4 && objects.every(o => o.contentDocument &&
                    o.contentDocument.querySelectorAll('svg g.node').length >= 1 &&
                    o.contentDocument.querySelectorAll('svg text').length >= 8);
            }""")
            sizes = page.evaluate("() => [...document.querySelectorAll('object.graphviz')]"
                                  ".map(o => o.getBoundingClientRect().height)")
            assert all(h > 50 for h in sizes), sizes
            page.screenshot(path=SCREENSHOTS / "book-diagrams.png", full_page=True)

            # ---- search: "KV cache" ---------------------------------------------------------------------
            page.goto(f"{site}/search.html?q=KV+cache")
            results = page.locator("#search-results ul.search li")
            results.first.wait_for(state="visible")
            titles = results.locator("a").all_inner_texts()
            assert any("KV cache" in t for t in titles), titles
            page.screenshot(path=SCREENSHOTS / "book-search.png")

            # ---- the home page, for the artifacts -------------------------------------------------------
            page.goto(f"{site}/index.html")
            page.wait_for_selector(".bd-sidebar-primary")
            page.screenshot(path=SCREENSHOTS / "book-index.png")
        finally:
            browser.close()
    print(f"requests that tried to leave 127.0.0.1: {len(outside)}")
    assert outside == [], f"the book tried to fetch from outside 127.0.0.1: {outside}"


def test_chinese_book_renders_offline(site, chromium):
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    outside = []
    chapter = "chapters/06-logits-to-token.html"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = local_page(browser, site + "/", outside, {"width": 1400, "height": 1000}, TIMEOUT_MS)

            # ---- a Chinese chapter: its text in a CJK font, its figures and formulas drawn -------------
            page.goto(f"{site}/zh/{chapter}")
            assert page.evaluate("() => document.documentElement.lang").startswith("zh")
            page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
            page.wait_for_function("() => document.querySelectorAll('mjx-container svg').length >= 1")
            heading = page.locator("article h1").first.inner_text()
            assert "第 6 章" in heading, heading
            drawn = chinese_is_drawn(page, "article h1")
            print("Chinese characters drawn in the chapter heading:", drawn)
            titles = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot .gtitle')]"
                                   ".map(t => t.textContent)")
            assert any(re.search(r"[\u4e00-\u9fff]", t) for t in titles), f"figure titles not in Chinese: {titles}"
            chinese = [k for k, t in enumerate(titles) if len(set(re.findall(r"[\u4e00-\u9fff]", t))) >= 2]
            page.evaluate("k => document.querySelectorAll('.js-plotly-plot .gtitle')[k].id = 'zh-figure-title'",
                          chinese[0])
            print("Chinese characters drawn in a figure title:", chinese_is_drawn(page, "#zh-figure-title"))
            page.screenshot(path=SCREENSHOTS / "book-zh-chapter.png")
            figure = page.locator(".js-plotly-plot").first
            figure.scroll_into_view_if_needed()
            figure.screenshot(path=SCREENSHOTS / "book-zh-figure.png")

            # ---- what a reader reads around the code is Chinese too: a widget's buttons, a hidden cell's toggle
            page.goto(f"{site}/zh/chapters/04-kv-cache.html")
            widget = page.locator("[data-teachllm-widget='CacheGrowthView']")
            widget.locator(".main-svg").first.wait_for()
            widget.scroll_into_view_if_needed()
            labels = widget.locator(".teachllm-buttons button").all_inner_texts()
            assert labels == ["下一个 token", "运行到结束", "重新开始"], labels
            widget.screenshot(path=SCREENSHOTS / "book-zh-widget.png")
            toggle = page.locator("details.hide summary").first
            toggle.scroll_into_view_if_needed()
            assert toggle.inner_text().strip() == "显示代码单元格", toggle.inner_text()
            toggle.screenshot(path=SCREENSHOTS / "book-zh-code-toggle.png")
            toggle.click()
            assert "隐藏代码单元格" in toggle.inner_text(), toggle.inner_text()
            texts = page.evaluate("() => [...document.querySelectorAll('.teachllm-buttons button, "
                                  "details.hide summary')].map(e => e.innerText)")
            assert not [t for t in texts if re.search(r"next token|restart|Show code|Hide code", t)], texts

            # ---- the language switch: the same chapter in English, and back ------------------------------
            page.goto(f"{site}/zh/{chapter}")
            page.locator(".language-switch a").click()
            page.wait_for_load_state()
            assert page.url == f"{site}/{chapter}", page.url
            page.locator(".language-switch a").click()
            page.wait_for_load_state()
            assert page.url == f"{site}/zh/{chapter}", page.url

            # ---- search in Chinese: jieba split the pages into words, so 预填充 is in the index ----------
            page.goto(f"{site}/zh/search.html?q=预填充")
            results = page.locator("#search-results ul.search li")
            results.first.wait_for(state="visible")
            assert results.count() >= 3, results.all_inner_texts()
            page.screenshot(path=SCREENSHOTS / "book-zh-search.png")
        finally:
            browser.close()
    print(f"requests that tried to leave 127.0.0.1: {len(outside)}")
    assert outside == [], f"the Chinese book tried to fetch from outside 127.0.0.1: {outside}"
