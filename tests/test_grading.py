"""Graded exercises: every test file scores the official solution full, the untouched stub zero and each plausible
wrong answer (tests/grading_wrong/chNN.py) less than full; the public checks are up to date; the grader
(scripts/grade.py) grades a folder of submissions, crashes, endless loops and tampering included."""

from __future__ import annotations

import ast
import builtins
import csv
import importlib
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from otter.test_files import ExceptionTestFile

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
import build_checks  # noqa: E402  (scripts/ is not a package)
import grade  # noqa: E402

TEST_FILES = sorted(grade.TESTS.glob("ch[0-9][0-9]-ex*.py"))
IDS = [p.stem for p in TEST_FILES]


def chapter_and_number(path: Path) -> tuple[str, int]:
    chapter, k = re.fullmatch(r"ch(\d\d)-ex(\d+)", path.stem).groups()
    return chapter, int(k)


_setup: dict[str, dict] = {}  # one chapter's globals at a time: each holds a model (13 at once would be 7 GB)


@pytest.fixture(scope="module", autouse=True)
def release_the_last_setup():
    yield
    _setup.clear()


def run_in_order_of(item) -> str:
    """This module's tests run chapter by chapter (tests/conftest.py sorts them by this key), so that each
    chapter's setup runs once and is released before the next one's."""
    return item.callspec.id if hasattr(item, "callspec") else ""


def setup_env(chapter: str) -> dict:
    """The globals after the chapter's solution setup (run once per chapter, then kept until the next chapter)."""
    if chapter not in _setup:
        _setup.clear()
        env: dict = {"__name__": "solution"}
        exec(compile(grade.solution_sections(chapter)[0], f"ch{chapter}.py", "exec"), env)
        _setup[chapter] = env
    return dict(_setup[chapter])


def score(path: Path, code: str, env: dict) -> tuple[float, float, list[str]]:
    """(points, max points, failure messages) of the test file on the globals left by `code` run over `env`."""
    exec(compile(code, "<answer>", "exec"), env)
    tf = ExceptionTestFile.from_file(str(path))
    tf.run(env)
    return tf.score, tf.possible, [r.message for r in tf.test_case_results if not r.passed]


@pytest.mark.parametrize("path", TEST_FILES, ids=IDS)
def test_the_solution_scores_full_points(path):
    chapter, k = chapter_and_number(path)
    points, possible, failed = score(path, grade.solution_sections(chapter)[1][k], setup_env(chapter))
    assert points == possible, f"{path.stem}: the solution fails {failed}"
    assert 2 <= possible <= 4, f"{path.stem}: an exercise is worth 2 to 4 points, not {possible}"


@pytest.mark.parametrize("path", TEST_FILES, ids=IDS)
def test_the_stub_scores_zero_without_crashing(path):
    chapter, k = chapter_and_number(path)
    points, _, failed = score(path, grade.exercise_cells(chapter)[k], setup_env(chapter))
    assert points == 0
    assert all("AssertionError" in m for m in failed), f"{path.stem}: a case crashed on the stub: {failed}"


@pytest.mark.parametrize("path", TEST_FILES, ids=IDS)
def test_each_wrong_answer_scores_less_than_full(path):
    chapter, _ = chapter_and_number(path)
    wrong = importlib.import_module(f"grading_wrong.ch{chapter}").WRONG.get(path.stem, [])
    assert wrong, f"tests/grading_wrong/ch{chapter}.py holds no wrong answer for {path.stem}"
    for code in wrong:
        points, possible, _ = score(path, code, setup_env(chapter))
        assert points < possible, f"{path.stem}: this wrong answer scores full points:\n{code}"


@pytest.mark.parametrize("path", TEST_FILES, ids=IDS)
def test_each_test_file_has_public_and_hidden_cases(path):
    cases = ExceptionTestFile.from_file(str(path)).test_cases
    public = sum(tc.points for tc in cases if not tc.hidden)
    assert 0 < public < sum(tc.points for tc in cases) / 2, f"{path.stem}: the hidden cases hold most points"


@pytest.mark.parametrize("chapter", sorted({chapter_and_number(p)[0] for p in TEST_FILES}))
def test_every_graded_exercise_cell_is_followed_by_its_check(chapter):
    import jupytext

    cells = [c for c in jupytext.read(grade.source(chapter)).cells if c.cell_type == "code"]
    assert any("grading.checker()" in c.source and "check" in c.metadata.get("tags", []) for c in cells), (
        f"chapter {chapter}: no cell makes the grader (`grader = grading.checker()`, tagged check)")
    for n, cell in enumerate(cells):
        k = grade.exercise_number(cell)
        if k is None or not (grade.TESTS / f"ch{chapter}-ex{k}.py").exists():
            continue
        after = cells[n + 1] if n + 1 < len(cells) else None
        assert after is not None and "check" in after.metadata.get("tags", []) and (
            f'grader.check("ch{chapter}-ex{k}")' in after.source), f"chapter {chapter}: exercise {k} has no check cell"


def test_the_instructor_edition_solves_every_graded_exercise_in_both_languages():
    """build_instructor.solved replaces each graded exercise cell with its solution, in the Chinese notebooks too
    (their cells begin `# 练习 K：`), with only the setup it needs: every name it reads is bound in it or above it
    (read from the code), and it does not load the model the notebook has already loaded."""
    sys.path.insert(0, str(grade.ROOT / "scripts"))
    import build_instructor

    chapters = sorted({chapter_and_number(p)[0] for p in TEST_FILES})
    for chapter in chapters:
        graded = {chapter_and_number(p)[1] for p in TEST_FILES if chapter_and_number(p)[0] == chapter}
        for lang in ("en", "zh"):
            nb = build_instructor.solved(grade.distributed(chapter, lang), chapter)
            solved = {grade.exercise_number(c) for c in nb.cells if grade.exercise_number(c) in graded}
            assert solved == graded, f"chapter {chapter} ({lang}): exercises {sorted(graded - solved)} not solved"
            _, sections = grade.solution_sections(chapter)
            bound = set(dir(builtins))  # the names the cells above a solution bind
            for cell in nb.cells:
                use = grade.cell_use(cell.source) if cell.cell_type == "code" else None
                if grade.exercise_number(cell) in graded:
                    k = grade.exercise_number(cell)
                    assert sections[k].strip() in cell.source
                    missing = use.reads - use.binds - bound
                    assert not missing, f"chapter {chapter} ({lang}), exercise {k}: {sorted(missing)} bound nowhere"
                    assert "tl.load(" not in cell.source.replace(sections[k].strip(), ""), (
                        f"chapter {chapter} ({lang}), exercise {k}: the solution loads the model again")
                if use is not None:
                    bound |= use.binds


def test_the_public_checks_are_up_to_date_and_hold_no_hidden_case():
    want = build_checks.expected()
    have = {p.name: p.read_text(encoding="utf-8") for p in build_checks.CHECKS.glob("ch*-ex*.py")}
    assert have == want, "notebooks/checks/ is out of date: python scripts/build_checks.py"
    for name, text in have.items():
        assert not any(build_checks.hidden(node) for node in ast.parse(text).body), name
        assert all(not tc.hidden for tc in ExceptionTestFile.from_string(text).test_cases), name


# ---- the grader, on a folder of submissions --------------------------------------------------------------------

def trimmed_chapter(chapter: str) -> nbformat.NotebookNode:
    """The committed notebook cut down to what grading needs, so the test runs in a minute or two: the first code cell
    (imports, the model) and everything from the grader cell on (exercises, checks)."""
    nb = nbformat.read(grade.distributed(chapter), as_version=4)
    first = next(n for n, c in enumerate(nb.cells) if c.cell_type == "code")
    grader_cell = next(n for n, c in enumerate(nb.cells) if "grading.checker()" in c.source)
    nb.cells = [nb.cells[first], *nb.cells[grader_cell:]]
    return nb


def submission(reference, chapter: str, solve=(), replace=None, edit_check=None, edit_lecture=False):
    """A copy of `reference` with exercises `solve` solved, cells replaced ({k: code}), a check cell edited and
    the first code cell (the lecture's) changed."""
    nb = nbformat.from_dict(reference)
    if edit_lecture:
        next(c for c in nb.cells if c.cell_type == "code").source += "\nprint('changed')"
    above = []  # the code above each cell, which a solution reuses (the model, imports)
    for cell in nb.cells:
        k = grade.exercise_number(cell)
        if k in (replace or {}):
            cell.source = replace[k]
        elif k in solve:
            cell.source = grade.solved_cell(chapter, k, cell.source, "\n# %%\n".join(above))
        elif edit_check and f'grader.check("ch{chapter}-ex{edit_check}")' in cell.source:
            cell.source = 'print("all checks passed")'
        if cell.cell_type == "code":
            above.append(cell.source)
    return nb


def test_the_grader_grades_a_folder(tmp_path):
    """The whole chapter as distributed: the grader runs only the lecture cells the exercises need (the ones that
    generate text, a minute each, are skipped), so the solution's full points also show that it kept enough."""
    chapter = "06"
    reference = nbformat.read(grade.distributed(chapter), as_version=4)
    distributed = tmp_path / "distributed"
    distributed.mkdir()
    nbformat.write(reference, distributed / grade.distributed(chapter).name)
    full = {p.stem: grade.max_points(p) for p in grade.test_files(chapter)}
    every = set(range(1, len(full) + 1))
    folder = tmp_path / "submissions"
    folder.mkdir()
    cases = {  # student → (notebook, expected total)
        "correct": (submission(reference, chapter, every), sum(full.values())),
        "empty": (submission(reference, chapter), 0),
        "crash": (submission(reference, chapter, every, {1: 'raise RuntimeError("a bug")'}),
                  sum(full.values()) - full["ch06-ex1"]),
        "loop": (submission(reference, chapter, every, {2: "while True:\n    pass"}),
                 sum(full.values()) - full["ch06-ex2"]),
        "tampered": (submission(reference, chapter, every, edit_check=3), sum(full.values()) - full["ch06-ex3"]),
        "lecture": (submission(reference, chapter, every, edit_lecture=True), 0),
    }
    for student, (nb, _) in cases.items():
        nbformat.write(nb, folder / f"{student}.ipynb")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "grade.py"), str(folder), "--timeout", "30",
                           "--limit", "600", "--notebooks", str(distributed)], capture_output=True, text=True)
    print(f"the grader took {time.perf_counter() - start:.0f} s for {len(cases)} submissions\n{done.stderr}")
    assert done.returncode == 0, done.stderr
    with open(folder / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["student", "exercise", "points", "max_points"]
    totals = {}
    for student, exercise, points, max_points in rows[1:]:
        assert float(max_points) == full[exercise]
        totals[student] = totals.get(student, 0) + float(points)
    assert totals == {student: total for student, (_, total) in cases.items()}
    assert len(rows) == 1 + len(cases) * len(full)
    for student in cases:
        text = (folder / "feedback" / f"{student}.md").read_text(encoding="utf-8")
        assert "@test_case" not in text and "env[" not in text, f"{student}'s feedback shows test source"
    assert "cell" in (folder / "feedback" / "tampered.md").read_text(encoding="utf-8")
    assert "cell 2 (changed)" in (folder / "feedback" / "lecture.md").read_text(encoding="utf-8")
    assert "RuntimeError" not in (folder / "feedback" / "correct.md").read_text(encoding="utf-8")


def test_make_grade_without_a_folder_says_what_to_do():
    done = subprocess.run(["make", "-s", "grade", "SUBMISSIONS="], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and "SUBMISSIONS=" in done.stderr
