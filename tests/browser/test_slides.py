"""The slide decks (make slides → book/_build/slides) in headless Chromium, served from 127.0.0.1, at 1280×720.

For the lecture deck and one chapter deck (chapter 6) in each language: every request that leaves 127.0.0.1 is
blocked and counted (the count must be zero); every slide fits the screen with nothing cut off (each slide's
scroll size equals its client size, and no element inside reaches past its right edge) and is drawn at its own
size (reveal.js does not scale it); code is at least 20 px; the formulas are typeset (MathJax SVG); a figure is
drawn (plotly SVG); the presenter view (reveal.js's notes plugin, key S) opens with speaker notes; the arrow keys
move between slides. Screenshots of the first three slides of each lecture deck go to artifacts/screenshots/.

Without built decks, Chromium or Playwright the test is skipped, except under CI=true, where it fails.
"""

from pathlib import Path

import pytest
from browser_support import CHROMIUM_FLAGS, SCREENSHOTS, local_page, missing, serve

ROOT = Path(__file__).resolve().parents[2]
SLIDES = ROOT / "book" / "_build" / "slides"
DECKS = ["lecture.html", "06-logits-to-token.html", "zh/lecture.html", "zh/06-logits-to-token.html"]
TIMEOUT_MS = 90_000

# every slide, one after the other: does it scroll, does anything inside reach past its edges, the smallest code
MEASURE = """() => {
  const slides = Reveal.getSlides();
  const found = [];
  slides.forEach((slide, k) => {
    Reveal.slide(k);
    const box = slide.getBoundingClientRect();
    const wide = [...slide.querySelectorAll("pre, table, img, .figure, mjx-container, p, li")]
      .filter(e => e.getBoundingClientRect().right > box.right + 1).length;
    const code = [...slide.querySelectorAll("pre, pre code")].map(e => parseFloat(getComputedStyle(e).fontSize));
    found.push({k, scrollH: slide.scrollHeight, clientH: slide.clientHeight, scrollW: slide.scrollWidth,
                clientW: slide.clientWidth, width: Math.round(box.width), height: Math.round(box.height), wide,
                code: code.length ? Math.min(...code) : null, notes: !!slide.querySelector("aside.notes")});
  });
  Reveal.slide(0);
  return found;
}"""


@pytest.fixture(scope="module")
def decks():
    """The built decks served on a free port of 127.0.0.1; yields the base URL."""
    for deck in DECKS:
        if not (SLIDES / deck).is_file():
            missing(f"the slides are not built ({SLIDES / deck} is missing: run `make slides`)")
    with serve(SLIDES) as url:
        yield url


@pytest.mark.parametrize("deck", DECKS)
def test_a_deck_fits_the_screen_offline_with_notes(decks, chromium, deck):
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    outside = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = local_page(browser, decks + "/", outside, {"width": 1280, "height": 720}, TIMEOUT_MS)
            page.goto(f"{decks}/{deck}")
            page.wait_for_function("() => window.Reveal && Reveal.isReady()")
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.document")
            page.evaluate("() => MathJax.startup.promise")
            assert page.evaluate("() => Reveal.getScale()") == 1, "reveal.js scaled the slides"

            slides = page.evaluate(MEASURE)
            assert len(slides) >= 10, f"{deck}: only {len(slides)} slides"
            scrolled = [s for s in slides if s["scrollH"] > s["clientH"] or s["scrollW"] > s["clientW"] or s["wide"]]
            assert not scrolled, f"{deck}: {len(scrolled)} slide(s) cut off, first {scrolled[0]}"
            assert all((s["width"], s["height"]) == (1280, 720) for s in slides), slides[0]
            code = [s["code"] for s in slides if s["code"] is not None]
            assert code and min(code) >= 20, f"{deck}: code at {min(code)} px"
            assert any(s["notes"] for s in slides), f"{deck}: no speaker notes"
            assert page.locator("mjx-container svg").count() >= 1, f"{deck}: no formula typeset"
            assert page.locator(".figure .main-svg").count() >= 1, f"{deck}: no figure drawn"

            # the arrow keys move between slides
            page.keyboard.press("ArrowRight")
            assert page.evaluate("() => Reveal.getIndices().h") == 1
            page.keyboard.press("ArrowLeft")
            assert page.evaluate("() => Reveal.getIndices().h") == 0

            if deck.endswith("lecture.html"):
                name = "slides-zh" if deck.startswith("zh/") else "slides-en"
                for k in range(3):
                    page.evaluate(f"() => Reveal.slide({k})")
                    page.wait_for_timeout(200)
                    page.screenshot(path=SCREENSHOTS / f"{name}-lecture-{k + 1}.png")

            # the presenter view: a window with the current slide's notes
            with_notes = next(s["k"] for s in slides if s["notes"])
            page.evaluate(f"() => Reveal.slide({with_notes})")
            with page.expect_popup() as popup_info:
                page.keyboard.press("s")
            speaker = popup_info.value
            speaker.wait_for_selector(".speaker-controls-notes")
            speaker.wait_for_function("() => document.querySelector('.speaker-controls-notes').innerText.trim()"
                                      ".length > 20")
            notes = speaker.locator(".speaker-controls-notes").inner_text()
            assert "notes" not in notes.lower()[:6] or len(notes) > 20, notes
            if deck.endswith("lecture.html"):
                speaker.screenshot(path=SCREENSHOTS / f"{name}-presenter.png")
        finally:
            browser.close()
    assert outside == [], f"{deck} tried to fetch from outside 127.0.0.1: {outside}"
