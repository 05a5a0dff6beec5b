"""The chapters' quizzes in the built book, with no kernel (book/_static/teachllm-widgets.js, `quizWidget`).

In chapter 3 of each edition: the page's Quiz widget holds the loader's questions (teachllm.course.quiz.load) in the
edition's language; one question answered right and one wrong get data-result="right" and "wrong", a ✓ and a ✗,
and their explanations become visible; nothing is requested outside 127.0.0.1. Screenshots of the answered quiz:
artifacts/screenshots/quiz-en.png and quiz-zh.png.

The chapters get their quiz cell (`viz.Quiz(NN)`) when the notebooks are rebuilt (scripts/build_notebooks.py) and
the book after them (`make book`): a page without a Quiz widget fails here, saying so.
"""

from pathlib import Path

import pytest
from browser_support import SCREENSHOTS, local_page, missing, serve

from teachllm.course import quiz

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "book" / "_build" / "html"
PAGE = "chapters/03-prefill-layer-by-layer.html"
EDITIONS = {"en": "", "zh": "zh/"}
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def site():
    for prefix in EDITIONS.values():
        if not (SITE / prefix / PAGE).is_file():
            missing(f"the book is not built ({SITE / prefix / PAGE} is missing: run `make book`)")
    with serve(SITE) as url:
        yield url


def answer(page, question_id: str, response) -> dict:
    """Choose option `response` (an index) or type the number `response`, press Check; what the page shows."""
    box = page.locator(f'[data-teachllm-widget="Quiz"] [data-question-id="{question_id}"]')
    if box.get_attribute("data-type") == "numeric":
        box.locator("input").fill(str(response))
    else:
        box.locator(f'input[type="radio"][value="{response}"]').check()
    box.locator("button.teachllm-quiz-check").click()
    return {"result": box.get_attribute("data-result"), "verdict": box.locator(".teachllm-quiz-result").inner_text(),
            "explanation": box.locator(".teachllm-quiz-explanation").is_visible(),
            "explanation_text": box.locator(".teachllm-quiz-explanation").inner_text()}


@pytest.mark.parametrize("lang", list(EDITIONS))
def test_a_quiz_checks_answers_in_the_page(site, browser, lang):
    outside: list[str] = []
    page = local_page(browser, site, outside, {"width": 1280, "height": 1000}, TIMEOUT_MS)
    page.goto(f"{site}/{EDITIONS[lang]}{PAGE}")
    page.wait_for_function("document.documentElement.dataset.teachllmWidgets === 'ready'")
    root = page.locator('[data-teachllm-widget="Quiz"]')
    assert root.count() == 1, (f"{EDITIONS[lang]}{PAGE} has no Quiz widget: add `viz.Quiz(3)` to the chapter, then "
                               "rebuild the notebooks (scripts/build_notebooks.py 03) and the book (make book)")
    questions = quiz.load(3, lang)
    shown = root.locator("[data-question-id]").evaluate_all("els => els.map(e => e.dataset.questionId)")
    assert shown == [q.id for q in questions]
    assert root.locator(".teachllm-quiz-text").first.inner_text().startswith("1. " + questions[0].question[:8])

    right, wrong = [q for q in questions if q.type != "numeric"][:2]
    seen = answer(page, right.id, right.answer)
    assert seen["result"] == "right" and seen["verdict"].startswith("✓") and seen["explanation"]
    wrong_choice = (wrong.answer + 1) % len(wrong.options)
    seen = answer(page, wrong.id, wrong_choice)
    assert seen["result"] == "wrong" and seen["verdict"].startswith("✗") and seen["explanation"]
    assert seen["explanation_text"].strip()[:10] in wrong.explanation  # the edition's own explanation
    numeric = next(q for q in questions if q.type == "numeric")
    assert answer(page, numeric.id, f"{numeric.answer:,}")["result"] == "right"
    untouched = next(q for q in questions if q.id not in (right.id, wrong.id, numeric.id))
    box = root.locator(f'[data-question-id="{untouched.id}"]')
    assert box.get_attribute("data-result") is None and not box.locator(".teachllm-quiz-explanation").is_visible()

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    root.scroll_into_view_if_needed()
    root.screenshot(path=str(SCREENSHOTS / f"quiz-{lang}.png"))
    assert outside == [], f"requests outside 127.0.0.1: {outside}"
    page.context.close()
