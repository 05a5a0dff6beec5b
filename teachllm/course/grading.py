"""Checks for the chapter exercises, in the reader's language (otter-grader).

A chapter notebook makes one checker and calls it after each exercise cell:

    from teachllm.course import grading
    grader = grading.checker()      # otter's Notebook, reading notebooks/checks/
    grader.check("ch06-ex2")        # the public checks of exercise 2 of chapter 6

notebooks/checks/ holds the public part of each test file; the full tests, hidden cases included, are in
notebooks/grading/tests/ and only the course's grader (scripts/grade.py) runs them. A test file words its
messages with `say`, so a student reading the Chinese edition gets them in Chinese.
"""

from __future__ import annotations

from pathlib import Path

import otter

from ..viz.language import language

CHECKS = Path("notebooks") / "checks"  # the public checks, relative to the repository root


def say(en: str, zh: str, **fields) -> str:
    """A check's message in the notebook's language (teachllm.viz.language()), formatted with `fields`."""
    return (zh if language() == "zh" else en).format(**fields)


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


def failure_message(message: str | None) -> str:
    """What a student may read of a failed test case: the exception's message, without otter's quote of the test's
    source line (which, for a hidden case, would show how the answer is checked)."""
    lines = (message or "").splitlines()
    if len(lines) >= 3 and lines[1].startswith("Error at line"):
        lines = lines[3:]  # otter: "❌ Test case failed" / "Error at line N in test …:" / "  <source line>" / error
    text = "\n".join(lines).strip()
    return text.removeprefix("AssertionError: ").strip()
