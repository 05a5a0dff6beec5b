"""The grader's trust boundary, tried by real submissions through the real grader (scripts/grade.py): the tests'
expected values are computed outside the student's process, on a pristine teachllm, so a submission that marks
otter's results as passed, replaces a library function the tests use, or rebinds `lm` scores what its answers are
worth; its feedback quotes neither a test file nor a classmate's notebook, whatever its code raises; and a check
cell changed beside an untouched copy tagged `otter_ignore` is still tampering (issue 38's first list); and an
answer the grader computes with (chapter 9's SamplingParams) cannot size the grader's own work (a million beams).

Each hostile submission's expected score is that of the same answers without the attack, scored in this process
on the solution's own setup (tests/test_grading.py's `score`); the ordinary ones must score full points."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
import grade  # noqa: E402  (scripts/ is not a package)
from test_grading import score, setup_env, submission, trimmed_chapter  # noqa: E402

GRADE = ROOT / "scripts" / "grade.py"
SECRET = f"bob-secret-{uuid.uuid4().hex}"  # in bob's notebook only

OTTER_PASSES = '''# Exercise 1 (untouched, but otter is told that every case passed)
from otter.test_files import exception_test
from otter.test_files.abstract_test import TestCaseResult

def _all_passed(self, global_environment):
    self.test_case_results = [TestCaseResult(test_case=tc, message="passed", passed=True) for tc in self.test_cases]

exception_test.ExceptionTestFile.run = _all_passed
'''

WRONG_TEXT = 'my_text = "low lower lowest"\n'  # BPE merges "lo" and "low" first: not what exercise 1 asks
BPE_REPLACED = '''
import teachllm.bpe

class _Merge:
    result = "er"

teachllm.bpe.train_bpe = lambda text, n_merges=4: (None, [_Merge()] * n_merges)  # "er" first, whatever the text
'''

WRONG_RATE = 'def tokens_per_char(tok, text):\n    return 1.0\n\n\ncostliest = "English"\n'
LM_REBOUND = '''

class _Tokenizer:
    def encode(self, text, add_special_tokens=True):
        return list(range(len(text)))  # one token per character, so that 1.0 is "right"


class _Model:
    tokenizer = _Tokenizer()


lm = _Model()
'''

STOPS = ("import teachllm as tl\n\nstops_despite_ignore_eos = tl.SamplingParams(temperature=0, max_tokens=20, "
         "ignore_eos=True, stop_token_ids=[2]{beams})\nwhy_stop_string_fails = \"a\"\n")

QUOTE = '''# Exercise 2 (puts the hidden tests in its error, if it can read them)
def kept_after(logits, temperature, k=None, top_p=None):
    text = "could not read the tests"
    for path in (r"{checkout_test}", "/tmp/grade/in/tests/ch06-ex2.py"):
        try:
            text = open(path, encoding="utf-8").read()
            break
        except OSError:
            pass
    raise RuntimeError(text)
'''

CLASSMATE = '''# Exercise 1 (puts a classmate's notebook in its error, if it can read it)
import glob, os

def greedy_token_probability(logits, temperature):
    text = "could not read a classmate"
    for path in [r"{classmate}"] + glob.glob(r"{folder}/*.ipynb") + glob.glob("/proc/*/cmdline"):
        try:
            found = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        if "bob-secret" in found or r"{folder}" in found:
            text = found
            break
    raise RuntimeError(text)
'''


def code_of(nb, chapter: str, k: int) -> str:
    return next(c.source for c in nb.cells if grade.exercise_number(c) == k)


def honest_points(chapter: str, k: int, code: str) -> float:
    """What `code` scores on exercise k of `chapter` in this process, with the solution's setup and nothing
    replaced: the score a submission holding these answers has earned."""
    return score(grade.TESTS / f"ch{chapter}-ex{k}.py", code, setup_env(chapter))[0]


def read_grades(folder: Path) -> dict[str, dict[str, float]]:
    with open(folder / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    out: dict[str, dict[str, float]] = {}
    for student, exercise, points, _ in rows:
        out.setdefault(student, {})[exercise] = float(points)
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One grader run over every case; returns the folder and, per student, the points each exercise should get."""
    if shutil.which("bwrap") is None and os.environ.get("CI") != "true":
        pytest.skip("bubblewrap is not installed (sudo apt-get install bubblewrap): the grader needs it")
    tmp = tmp_path_factory.mktemp("boundary")
    distributed, folder = tmp / "distributed", tmp / "submissions"
    distributed.mkdir()
    folder.mkdir()
    refs = {chapter: trimmed_chapter(chapter) for chapter in ("02", "06", "09")}
    for chapter, reference in refs.items():
        nbformat.write(reference, distributed / grade.distributed(chapter).name)
    full = {ch: {p.stem: grade.max_points(p) for p in grade.test_files(ch)} for ch in refs}
    every = {ch: set(range(1, len(full[ch]) + 1)) for ch in refs}
    zero = {ch: dict.fromkeys(full[ch], 0.0) for ch in refs}
    cases: dict[str, tuple[nbformat.NotebookNode, dict[str, float]]] = {}

    bob = submission(refs["06"], "06", every["06"])
    bob.cells.append(nbformat.v4.new_code_cell(f"# {SECRET}"))
    cases["bob"] = (bob, full["06"])
    cases["carol"] = (submission(refs["02"], "02", every["02"]), full["02"])

    stub = code_of(refs["06"], "06", 1)
    cases["otter-passes"] = (submission(refs["06"], "06", (), {1: stub + "\n" + OTTER_PASSES}), zero["06"])

    stub = code_of(refs["02"], "02", 1).splitlines()[0]
    bpe = submission(refs["02"], "02", (), {1: f"{stub}\n{WRONG_TEXT}{BPE_REPLACED}"})
    cases["bpe-replaced"] = (bpe, {**zero["02"], "ch02-ex1": honest_points("02", 1, WRONG_TEXT)})

    stub = code_of(refs["02"], "02", 2).splitlines()[0]
    rebound = submission(refs["02"], "02", (), {2: f"{stub}\n{WRONG_RATE}{LM_REBOUND}"})
    cases["lm-rebound"] = (rebound, {**zero["02"], "ch02-ex2": honest_points("02", 2, WRONG_RATE)})

    copy = submission(refs["06"], "06", every["06"], edit_check=3)  # the check cell of exercise 3, edited
    n = next(n for n, c in enumerate(copy.cells) if c.source == 'print("all checks passed")')
    untouched = next(c for c in refs["06"].cells if 'grader.check("ch06-ex3")' in c.source).source
    copy.cells.insert(n + 1, nbformat.v4.new_code_cell(untouched, metadata={"tags": ["otter_ignore"]}))
    cases["ignored-copy"] = (copy, {**full["06"], "ch06-ex3": 0.0})

    quote = submission(refs["06"], "06", every["06"], {2: QUOTE.format(checkout_test=grade.TESTS / "ch06-ex2.py")})
    cases["quotes-tests"] = (quote, {**full["06"], "ch06-ex2": 0.0})

    reader = CLASSMATE.format(classmate=folder / "bob.ipynb", folder=folder)
    cases["reads-bob"] = (submission(refs["06"], "06", every["06"], {1: reader}), {**full["06"], "ch06-ex1": 0.0})

    stub = code_of(refs["09"], "09", 1).splitlines()[0]
    beams = submission(refs["09"], "09", (), {1: f"{stub}\n{STOPS.format(beams=', num_beams=10**6')}"})
    cases["million-beams"] = (beams, {**zero["09"], "ch09-ex1": honest_points("09", 1, STOPS.format(beams=""))})

    for student, (nb, _) in cases.items():
        nbformat.write(nb, folder / f"{student}.ipynb")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(GRADE), str(folder), "--timeout", "30", "--limit", "300",
                           "--notebooks", str(distributed)], capture_output=True, text=True)
    print(f"the grader took {time.perf_counter() - start:.0f} s\n{done.stderr}")
    assert done.returncode == 0, done.stderr
    return {"folder": folder, "expected": {s: e for s, (_, e) in cases.items()}, "grades": read_grades(folder)}


def feedback(graded, student: str) -> str:
    return (graded["folder"] / "feedback" / f"{student}.md").read_text(encoding="utf-8")


def hidden_lines(chapter: str) -> set[str]:
    """The lines of a chapter's test files that its public checks (which students have) do not hold."""
    public = {line.strip() for p in (grade.NOTEBOOKS / "checks").glob(f"ch{chapter}-ex*.py")
              for line in p.read_text(encoding="utf-8").splitlines()}
    return {s for p in grade.test_files(chapter) for line in p.read_text(encoding="utf-8").splitlines()
            if len(s := line.strip()) >= 12 and s not in public}


@pytest.mark.parametrize("student", ["bob", "carol"])
def test_ordinary_submissions_score_full_points(graded, student):
    assert graded["grades"][student] == graded["expected"][student]


def test_marking_otters_results_as_passed_changes_nothing(graded):
    assert graded["grades"]["otter-passes"] == graded["expected"]["otter-passes"]


def test_replacing_a_library_function_the_tests_use_changes_nothing(graded):
    assert graded["grades"]["bpe-replaced"] == graded["expected"]["bpe-replaced"]


def test_rebinding_lm_changes_nothing(graded):
    assert graded["grades"]["lm-rebound"] == graded["expected"]["lm-rebound"]


def test_an_ignored_copy_of_a_check_cell_does_not_hide_tampering(graded):
    assert graded["grades"]["ignored-copy"] == graded["expected"]["ignored-copy"]
    assert "changed" in feedback(graded, "ignored-copy")


def test_an_error_cannot_quote_the_hidden_tests(graded):
    text = feedback(graded, "quotes-tests")
    assert graded["grades"]["quotes-tests"] == graded["expected"]["quotes-tests"]
    assert "could not read the tests" in text, text  # the student's own error came through
    quoted = [line for line in hidden_lines("06") if line in text]
    assert not quoted, f"the feedback quotes the hidden tests: {quoted}"


def test_an_error_cannot_quote_a_classmates_notebook(graded):
    text = feedback(graded, "reads-bob")
    assert graded["grades"]["reads-bob"] == graded["expected"]["reads-bob"]
    assert "could not read a classmate" in text, text
    assert SECRET not in text and not re.search(r"submissions/\w", text), text


def test_an_answer_the_grader_computes_with_does_not_size_its_work(graded):
    """stops_despite_ignore_eos with a million beams: the grader runs it greedily, as the test says, and scores
    it as the same settings without beams."""
    assert graded["grades"]["million-beams"] == graded["expected"]["million-beams"]
    assert graded["expected"]["million-beams"]["ch09-ex1"] == 3
