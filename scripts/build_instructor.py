"""Write the instructor edition, for course staff only: book/_build/instructor/ (`make instructor`).

    book/_build/instructor/NN-name.ipynb       every chapter with graded exercises, each exercise cell solved
    book/_build/instructor/zh/NN-name.ipynb    the same in Chinese
    book/_build/instructor/tests/              the full tests, hidden cases and points included
    book/_build/instructor/solutions/          the worked solutions, one script per chapter
    book/_build/instructor/README.md           how to grade

An exercise cell keeps its first line and gets the solution's section K (notebooks/solutions/chNN.py, after its
`# %% Exercise K` line), with the solution's setup before it when the section needs it. The notebooks keep the
committed outputs of the student edition: run them to see the solved checks pass.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grade  # noqa: E402  (scripts/ is not a package)

OUT = grade.ROOT / "book" / "_build" / "instructor"

README = """# teachllm: the instructor edition

For course staff only: do not hand this folder to students. It holds

- `NN-name.ipynb` (Chinese: `zh/NN-name.ipynb`): each chapter with graded exercises, every exercise cell solved
  with the official solution. Run one to see every check pass.
- `tests/chNN-exK.py`: the full tests of exercise K of chapter NN, in otter-grader's format. Each
  `@test_case(points=..., hidden=...)` is one rubric item; the points of an exercise are their sum. Students see
  only the public cases (`hidden=False`, copied to notebooks/checks/ by scripts/build_checks.py); the hidden ones
  hold most of the points.
- `solutions/chNN.py`: the worked solutions, one script per chapter, checked against transformers.

## Grading a class

1. Collect the submitted notebooks in one folder, one file per student: `alice.ipynb`, `bob.ipynb`, ... (the
   file's name is the student's name in the results), or one folder per student as course platforms export
   them (`alice/ch06.ipynb`). Any chapter, English or Chinese, can be mixed.
2. From the repository: `make grade SUBMISSIONS=path/to/folder` (offline, no Docker; `TIMEOUT=120` gives each
   cell 120 s instead of 60).
3. Read `path/to/folder/grades.csv` (student, exercise, points, max_points), `totals.csv` (each student's
   total), `skipped.csv` (files that are not readable notebooks, and why) and `review.csv` (code worth reading
   before you trust a score, such as a cell that imports otter), and send each student
   `path/to/folder/feedback/<student>.md`: points per exercise and what the checks found, in the notebook's
   language, never the tests' code or expected values.

A cell that runs too long is interrupted and the rest of the notebook is still graded; an error in one
exercise costs that exercise only. A changed or deleted cell that we distributed (the chapter's code, the
grader cell, a check cell) scores the exercises it affects zero, and the feedback names the cell: the student
restores it from the chapter's notebook and submits again.

To change what is graded, edit notebooks/grading/tests/chNN-exK.py, then run `python scripts/build_checks.py`
and `python -m pytest tests/test_grading.py` (the solution scores full points, the stub zero, each wrong
answer in tests/grading_wrong/ less than full).
"""


def solved(path: Path, chapter: str) -> nbformat.NotebookNode:
    """A committed chapter notebook with each graded exercise cell replaced by its solution."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        k = grade.exercise_number(cell)
        if k is not None and (grade.TESTS / f"ch{chapter}-ex{k}.py").exists():
            cell.source = grade.solved_cell(chapter, k, cell.source)
            cell.outputs, cell.execution_count = [], None
    return nb


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    chapters = sorted({p.name[2:4] for p in grade.TESTS.glob("ch[0-9][0-9]-ex*.py")})
    for chapter in chapters:
        for lang in ("en", "zh"):
            path = grade.distributed(chapter, lang)
            target = OUT / path.name if lang == "en" else OUT / lang / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(solved(path, chapter), target)
    shutil.copytree(grade.TESTS, OUT / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(grade.SOLUTIONS, OUT / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    (OUT / "README.md").write_text(README, encoding="utf-8")
    print(f"instructor edition: {len(chapters)} chapters, both languages, in {OUT.relative_to(grade.ROOT)}/")


if __name__ == "__main__":
    main()
