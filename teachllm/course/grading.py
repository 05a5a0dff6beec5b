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

import html
import inspect
import re
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from textwrap import indent

import otter

from ..viz.language import language

CHECKS = Path("notebooks") / "checks"  # the public checks, relative to the repository root


_speaking: ContextVar[str | None] = ContextVar("speaking", default=None)  # the grader's: one notebook's language


def say(en: str, zh: str, **fields) -> str:
    """A check's message in the notebook's language, formatted with `fields`: teachllm.viz.language() in the
    notebook, the graded notebook's language in the grader (`speaking`)."""
    return (zh if speaks_chinese() else en).format(**fields)


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


def speaks_chinese() -> bool:
    """Whether a check's report is for a Chinese reader: the grader's `speaking`, else the notebook's language."""
    return (_speaking.get() or language()) == "zh"


# otter's words in a test case's message → the Chinese report's (the failing line and the error stay as they are)
CASE_WORDS = [(re.compile(r"^❌ Test case failed$", re.M), "❌ 未通过"),
              (re.compile(r"^✅ Test case passed$", re.M), "✅ 通过"),
              (re.compile(r"^Error at line (\d+) in test (\S+):$", re.M), r"检查 \2 第 \1 行出错：")]


class ChineseReport:
    """otter's result of one check (a TestFile), reported in Chinese: every attribute is otter's, only the two
    ways a notebook shows it (`_repr_html_`, `__repr__`) are written here, in the layout otter gives them, without
    otter's random emoji (a saved notebook's output must be the same on every run)."""

    def __init__(self, result):
        self._result = result

    def __getattr__(self, attr):
        return getattr(self._result, attr)

    @staticmethod
    def case_message(text: str | None) -> str:
        """One test case's message with otter's words in Chinese."""
        for pattern, chinese in CASE_WORDS:
            text = pattern.sub(chinese, text or "")
        return text

    @staticmethod
    def _notes(tcr) -> list[tuple[str, str]]:
        """(case, note): a test case's own success or failure message (otter's `message:`), where it has one."""
        note = tcr.test_case.success_message if tcr.passed else tcr.test_case.failure_message
        return [] if note is None else [(tcr.test_case.name, note)]

    def __repr__(self) -> str:
        result = self._result
        if result.passed_all:
            return "\n".join([f"{result.name} 的结果：全部检查通过！",
                              *(f"{name} 说明：{note}" for tcr in result.test_case_results
                                for name, note in self._notes(tcr))])
        cases = ["\n\n".join([*(f"{name} 说明：{note}" for name, note in self._notes(tcr)),
                               f"{tcr.test_case.name} 的结果：\n"
                               + indent(self.case_message(tcr.message).strip(), "    ")])
                 for tcr in result.test_case_results]
        return f"{result.name} 的结果：\n" + indent("\n\n".join(cases), "    ")

    def _repr_html_(self) -> str:
        def name(text: str) -> str:
            return f"<pre style='display: inline;'>{html.escape(text, quote=False)}</pre>"

        def notes(tcr) -> str:
            return "".join(f"<p><strong>{name(case)} 说明：</strong> {html.escape(note, quote=False)}</p>"
                           for case, note in self._notes(tcr))

        result = self._result
        if result.passed_all:
            return f"<p><strong>{name(result.name)}</strong> 通过！</p>" + "".join(map(notes, result.test_case_results))
        out = f"<p><strong style='color: red;'>{name(result.name)} 的结果：</strong></p>"
        for tcr in result.test_case_results:
            out += notes(tcr) + f"<p><strong>{name(tcr.test_case.name)} 的结果：</strong></p>"
            out += f"<pre>{html.escape(indent(self.case_message(tcr.message), '    '), quote=False)}</pre>"
        return out


class Checker(otter.Notebook):
    """otter's Notebook without its log file (a check writes no .OTTER_LOG beside the notebook), whose report
    is in Chinese in the Chinese edition (ChineseReport); in English it is otter's own."""

    def _log_event(self, *args, **kwargs) -> None:
        pass

    def check(self, question: str, global_env: dict | None = None):
        """Run `question`'s public checks against `global_env`, by default the globals of the code that calls
        this (the notebook's), as otter.Notebook.check does."""
        if global_env is None:
            global_env = inspect.currentframe().f_back.f_globals
        result = super().check(question, global_env)
        return ChineseReport(result) if speaks_chinese() else result


def checker() -> Checker:
    """The object a chapter's check cells call: `grader.check("chNN-exK")` runs that exercise's public checks."""
    return Checker(tests_dir=str(checks_folder()))
