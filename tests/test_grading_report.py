"""A check cell's report is in the reader's language: otter's own in English, Chinese in the Chinese edition.

A real public check (notebooks/checks/ch02-ex1.py: `my_text` is a text of a few words) runs through
teachllm.course.grading.Checker, as a chapter's check cell calls it (`grader.check("ch02-ex1")`, the notebook's
globals read from the calling frame), on a failing answer and a passing one, in each language.
"""

from __future__ import annotations

import re

import pytest
from otter.test_files import TestFile

from teachllm import viz
from teachllm.course import grading

CHECKS = grading.checks_folder(grading.__file__)  # notebooks/checks/ of this repository


def run_check(answer, lang: str):
    """grader.check("ch02-ex1") run as a notebook cell runs it, with my_text = `answer`, in `lang`."""
    cell = {"grader": grading.Checker(tests_dir=str(CHECKS)), "my_text": answer}
    before = viz.language()
    viz.set_language(lang)  # as the Chinese edition's first cell does
    try:
        exec('result = grader.check("ch02-ex1")', cell)
    finally:
        viz.set_language(before)
    return cell["result"]


@pytest.fixture(scope="module")
def failing_line() -> int:
    """The line of ch02-ex1.py that fails on my_text = None: where its first `assert` is."""
    lines = (CHECKS / "ch02-ex1.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip().startswith("assert "))


def test_english_report_is_otters_own(failing_line):
    failed, passed = run_check(None, "en"), run_check("the tester rested", "en")
    assert isinstance(failed, TestFile) and isinstance(passed, TestFile)  # otter's result, not a wrapper
    assert repr(failed) == failed.summary() and repr(passed) == passed.summary()
    assert repr(failed).startswith("ch02-ex1 results:\n")
    assert "❌ Test case failed" in repr(failed)
    assert f"Error at line {failing_line} in test ch02-ex1:" in repr(failed)
    assert "AssertionError: set my_text to a text of a few words, not None" in repr(failed)
    assert f"Error at line {failing_line} in test ch02-ex1:" in failed._repr_html_()
    assert repr(passed) == "ch02-ex1 results: All test cases passed!"
    assert " passed! " in passed._repr_html_()


def test_chinese_report(failing_line):
    failed, passed = run_check(None, "zh"), run_check("the tester rested", "zh")
    assert not failed.passed_all and failed.grade == 0  # otter's result underneath, attributes and all
    assert passed.passed_all and passed.grade == 1
    text = repr(failed)
    assert text.startswith("ch02-ex1 的结果：\n    ch02-ex1 - 1 的结果：\n        ❌ 未通过\n")
    assert f"检查 ch02-ex1 第 {failing_line} 行出错：" in text
    assert "AssertionError: 把 my_text 设为由几个单词组成的文本，而不是 None" in text
    assert "assert isinstance(text, str)" in text  # the failing line, as the test file has it
    page = failed._repr_html_()
    assert f"检查 ch02-ex1 第 {failing_line} 行出错：" in page and "❌ 未通过" in page and "的结果：" in page
    assert repr(passed) == "ch02-ex1 的结果：全部检查通过！"
    assert passed._repr_html_() == "<p><strong><pre style='display: inline;'>ch02-ex1</pre></strong> 通过！</p>"
    # nothing of otter's English is left (the failing line's code and its English say() string aside)
    shown = re.sub(r"^ *assert .*$", "", text + page, flags=re.M)
    for english in ("results:", "result:", "Test case failed", "Error at line", "passed!", "All test cases"):
        assert english not in shown + repr(passed) + passed._repr_html_(), english


def test_the_grader_speaking_chinese_gets_the_chinese_report():
    """The grader decides the language by `speaking`, as `say` does, whatever the notebook language is."""
    with grading.speaking("zh"):
        result = run_check(None, "en")
    assert "❌ 未通过" in repr(result)
