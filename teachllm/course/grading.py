"""Checks for the chapter exercises, in the reader's language (otter-grader).

A chapter notebook makes one checker and calls it after each exercise cell:

    from teachllm.course import grading
    grader = grading.checker()      # otter's Notebook, reading notebooks/checks/
    grader.check("ch06-ex2")        # the public checks of exercise 2 of chapter 6

notebooks/checks/ holds the public part of each test file; the full tests, hidden cases included, are in
notebooks/grading/tests/ and only the course's grader (scripts/grade.py) runs them, outside the student's Python.
A test file words its messages with `say`, so a student reading the Chinese edition gets them in Chinese.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import otter

from ..viz.language import language

CHECKS = Path("notebooks") / "checks"  # the public checks, relative to the repository root


_speaking: ContextVar[str | None] = ContextVar("speaking", default=None)  # the grader's: one notebook's language


def say(en: str, zh: str, **fields) -> str:
    """A check's message in the notebook's language, formatted with `fields`: teachllm.viz.language() in the
    notebook, the graded notebook's language in the grader (`speaking`)."""
    return (zh if (_speaking.get() or language()) == "zh" else en).format(**fields)


@contextmanager
def speaking(lang: str):
    """`say` answers in `lang` ("en" or "zh") inside the block, in this thread only: the grader grades an English
    and a Chinese notebook at once."""
    token = _speaking.set(lang)
    try:
        yield
    finally:
        _speaking.reset(token)


class WithoutCache:
    """A model with its cached paths closed, for an exercise that must not use them: lm.forward and everything
    else work, lm.prefill (decode_step, generate, stream, new_cache) fails the check with a message that says so."""

    CACHED = ("prefill", "decode_step", "generate", "stream", "new_cache")

    def __init__(self, lm):
        self._lm = lm

    def __getattr__(self, attr):
        if attr in self.CACHED:
            raise AssertionError(say("generate_without_cache calls lm.{a}: use lm.forward on the whole sequence",
                                     "generate_without_cache 调用了 lm.{a}：应对整个序列调用 lm.forward", a=attr))
        return getattr(self._lm, attr)


def checks_folder(start: Path | None = None) -> Path:
    """notebooks/checks/, found from `start` (default: the current directory) or a folder above it: the English
    notebooks run in notebooks/, the Chinese ones in notebooks/zh/."""
    start = Path.cwd() if start is None else Path(start)
    for base in (start, *start.resolve().parents):
        for candidate in (base / "checks", base / CHECKS):
            if candidate.is_dir() and candidate.parent.name == "notebooks":
                return candidate
    raise FileNotFoundError(say("no notebooks/checks/ folder above {start}: open the chapter from the course's "
                                "notebooks/ folder", "在 {start} 及其上级目录中找不到 notebooks/checks/：请从课程的 "
                                "notebooks/ 文件夹打开本章", start=start))


class Checker(otter.Notebook):
    """otter's Notebook without its log file: a check writes no .OTTER_LOG beside the notebook."""

    def _log_event(self, *args, **kwargs) -> None:
        pass


def checker() -> Checker:
    """The object a chapter's check cells call: `grader.check("chNN-exK")` runs that exercise's public checks."""
    return Checker(tests_dir=str(checks_folder()))
