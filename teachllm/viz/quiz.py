"""A chapter's self-check quiz as a widget: `viz.Quiz(6)`, the last thing in a notebook cell.

Each question shows its text, radio buttons (a choice, or which token comes next) or a number box, and a
"Check" button; checking says ✓ or ✗ and shows the explanation. The questions are teachllm.course.quiz's final form
(notebooks/quizzes/NN.<lang>.yaml with the engine's answers from keys.json) in the language of
`viz.language()`, so no model is loaded. In the book the same quiz runs with no kernel: `static_form` carries
every question, the right answers and the explanations, and book/_static/teachllm-widgets.js (`quizWidget`)
checks the answers in the page.
"""

from __future__ import annotations

import html
import re

import ipywidgets as widgets

from ..course import quiz
from . import static
from .language import language, tr


def plain(markdown: str) -> str:
    """Inline Markdown as plain text, for a radio button's label (it shows no HTML): the markers dropped."""
    return re.sub(r"\*\*(.+?)\*\*|`([^`]+)`|\$([^$]+)\$", lambda m: next(g for g in m.groups() if g), markdown)


def question_html(q: quiz.Question, number: int) -> str:
    """The question's text, numbered, and for a next-token question the text the model continues."""
    text = f"<b>{number}.</b> {quiz.inline_html(q.question)}"
    if q.prompt is not None:
        text += f'<div class="teachllm-quiz-context">{tr("prompt:")} <code>{html.escape(q.prompt)}</code></div>'
    if q.chat is not None:
        text += (f'<div class="teachllm-quiz-context">{tr("user message (in the chat template):")} '
                 f"<code>{html.escape(q.chat)}</code></div>")
    return text


def option_html(q: quiz.Question) -> list[str]:
    """The options as HTML: a token's text in code style, a choice's inline Markdown rendered."""
    if q.type == "next-token":
        return [f"<code>{html.escape(o)}</code>" for o in q.options]
    return [quiz.inline_html(o) for o in q.options]


def answer_html(q: quiz.Question) -> str:
    """The right answer as HTML: the right option as the options show it, or the number and its unit."""
    return html.escape(q.answer_text()) if q.type == "numeric" else option_html(q)[q.answer]


def verdict(q: quiz.Question, right: bool) -> str:
    """"✓ Right." or "✗ Not right." and the answer, in green or red (the book's CSS uses the same colours)."""
    if right:
        return f'<span style="color:#1a7f37">{tr("✓ Right.")}</span>'
    answer = tr("✗ Not right. The answer: {answer}", answer=answer_html(q))
    return f'<span style="color:#b4232c">{answer}</span>'


class QuestionView(widgets.VBox):
    """One question: its text, the answer's input, "Check", the verdict and (once checked) the explanation."""

    def __init__(self, q: quiz.Question, number: int):
        self.q = q
        text = widgets.HTMLMath(question_html(q, number))
        if q.type == "numeric":
            self.input = widgets.Text(placeholder=tr("a number"), layout=widgets.Layout(width="160px"))
            row = [self.input, widgets.HTML(html.escape(q.unit))]
        else:
            self.input = widgets.RadioButtons(options=[(plain(o), i) for i, o in enumerate(q.options)], value=None,
                                              layout=widgets.Layout(width="auto"))
            row = [self.input]
        self.button = widgets.Button(description=tr("Check"), icon="check")
        self.button.on_click(lambda _: self.check())
        self.result = widgets.HTMLMath()  # the answer of a choice may hold math
        self.explanation = widgets.HTMLMath(f'<div style="background:#f6f8fa;padding:0.3em 0.6em">'
                                            f"{quiz.inline_html(q.explanation)}</div>",
                                            layout=widgets.Layout(display="none"))
        self.explanation.add_class("teachllm-quiz-explanation")
        super().__init__([text, widgets.HBox(row), widgets.HBox([self.button, self.result]), self.explanation])
        self.add_class("teachllm-quiz-question")

    def response(self):
        """The reader's answer: an option's index, a number, or None (nothing chosen, or not a number)."""
        if self.q.type != "numeric":
            return self.input.value
        try:
            return float(self.input.value.replace(",", ""))
        except ValueError:
            return None

    def check(self) -> bool | None:
        """Say whether the answer is right and show the explanation; None (and a hint) when there is no answer."""
        response = self.response()
        if response is None:
            numeric = self.q.type == "numeric"
            self.result.value = tr("Enter a number first.") if numeric else tr("Choose an answer first.")
            return None
        right = self.q.is_right(response)
        self.result.value = verdict(self.q, right)
        self.explanation.layout.display = None
        return right


class Quiz(static.StaticForm, widgets.VBox):
    """Chapter `chapter`'s quiz in the current language (`viz.set_language`)."""

    def __init__(self, chapter: int):
        self.chapter = chapter
        self.questions = quiz.load(chapter, language())
        self.views = [QuestionView(q, n) for n, q in enumerate(self.questions, 1)]
        super().__init__(self.views)
        self.add_class("teachllm-quiz")

    def static_form(self) -> dict:
        """For the book: every question with its right answer and explanation, as HTML; the page checks the
        reader's answer (book/_static/teachllm-widgets.js) and writes what `QuestionView.check` writes."""
        questions = [{"id": q.id, "type": q.type, "html": question_html(q, n), "options": option_html(q),
                      "answer": q.answer, "tolerance": q.tolerance, "relative_tolerance": quiz.RELATIVE_TOLERANCE,
                      "unit": q.unit, "answer_text": answer_html(q),
                      "explanation": quiz.inline_html(q.explanation)}
                     for n, q in enumerate(self.questions, 1)]
        strings = static.templates("Check", "✓ Right.", "✗ Not right. The answer: {answer}", "a number",
                                   "Enter a number first.", "Choose an answer first.")
        return static.form("Quiz", [], {}, chapter=self.chapter, questions=questions, strings=strings)
