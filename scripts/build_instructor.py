"""Write the instructor edition, for course staff only: book/_build/instructor/ (`make instructor`).

    book/_build/instructor/NN-name.ipynb       every chapter with graded exercises, each exercise cell solved
    book/_build/instructor/zh/NN-name.ipynb    the same in Chinese
    book/_build/instructor/tests/              the full tests, hidden cases and points included
    book/_build/instructor/solutions/          the worked solutions, one script per chapter
    book/_build/instructor/README.md           how to grade

An exercise cell keeps its first line and gets the solution's section K (notebooks/solutions/chNN.py, after its
`# %% Exercise K` line), after the few statements of the solution's setup that the section reads (not the whole
setup, and no import the notebook already made above the cell). Then the cells the grader would run (the
solutions and the lecture cells they need; scripts/grade.py, "What runs"), and the check cells with what they
need, are run, so each check cell shows its ✓; the other cells keep the committed outputs of the student edition
(--no-execute: none run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
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
   cell 120 s instead of 60). Submissions are graded one per CPU at once, each in its own bubblewrap sandbox,
   and only the cells the exercises need run there: the students' own cells and the lecture cells they depend
   on (a cell that only draws a figure, makes a widget or generates a sample text is checked, not run). The
   tests (`tests/`) run outside the sandbox, on the grader's own copy of teachllm and the model: a student's code
   can get its answers wrong, never its score changed.
3. Read `path/to/folder/grades.csv` (student, exercise, points, max_points), `totals.csv` (each student's
   total), `skipped.csv` (files that are not readable notebooks, and why) and `review.csv` (code you may want
   to read, such as a cell that imports otter or rebinds `lm`: attempts, which cannot change a score), and send
   each student
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
    before = []  # the code above each cell: its imports are not repeated in a solution
    for cell in nb.cells:
        k = grade.exercise_number(cell)
        if k is not None and (grade.TESTS / f"ch{chapter}-ex{k}.py").exists():
            cell.source = grade.solved_cell(chapter, k, cell.source, "\n# %%\n".join(before))
            cell.outputs, cell.execution_count = [], None
        if cell.cell_type == "code":
            before.append(cell.source)
    return nb


def executed(nb, path: Path, chapter: str) -> nbformat.NotebookNode:
    """Run the solved notebook's cells that grading runs (grade.cells_to_run: the solutions, the checks and the
    lecture cells they need) in a kernel in the notebook's folder, so each check cell shows its ✓; the other cells
    keep their committed outputs. Stops with the cell's error if a solution or a check raises."""
    from nbclient import NotebookClient

    run = grade.cells_to_run(nb, nbformat.read(path, as_version=4), chapter, checks=True)
    part = nbformat.from_dict(nb)
    part.cells = [c for c, keep in zip(part.cells, run, strict=True) if keep]
    NotebookClient(part, timeout=900, kernel_name="python3", record_timing=False, store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    ran = iter(part.cells)
    for cell, keep in zip(nb.cells, run, strict=True):
        if keep:
            done = next(ran)
            cell.outputs, cell.execution_count = done.get("outputs", []), done.get("execution_count")
    return nb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-execute", action="store_true", help="leave the solved cells without outputs")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="notebooks run at once")
    args = parser.parse_args()
    if OUT.exists():
        shutil.rmtree(OUT)
    chapters = sorted({p.name[2:4] for p in grade.TESTS.glob("ch[0-9][0-9]-ex*.py")})

    def write(chapter: str, lang: str) -> list[str]:
        """Write one notebook; the check cells whose output does not say they passed."""
        path = grade.distributed(chapter, lang)
        target = OUT / path.name if lang == "en" else OUT / lang / path.name
        nb = solved(path, chapter)
        if not args.no_execute:
            nb = executed(nb, path, chapter)
        nbformat.write(nb, target)
        failed = [f"{target.relative_to(OUT)}: {cell.source.strip().splitlines()[-1]}" for cell in nb.cells
                  if grade.CHECK.search(cell.source) and not args.no_execute and not passed(cell)]
        print(f"  {target.relative_to(OUT)}" + (f": {len(failed)} checks fail" if failed else ""), flush=True)
        return failed

    (OUT / "zh").mkdir(parents=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # one kernel per notebook
        failed = sum(pool.map(lambda job: write(*job), [(c, lang) for c in chapters for lang in ("en", "zh")]), [])
    shutil.copytree(grade.TESTS, OUT / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(grade.SOLUTIONS, OUT / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    (OUT / "README.md").write_text(README, encoding="utf-8")
    print(f"instructor edition: {len(chapters)} chapters, both languages, in {OUT.relative_to(grade.ROOT)}/")
    if failed:
        sys.exit("these checks of the solved notebooks do not pass:\n" + "\n".join(failed))


def passed(cell) -> bool:
    """A check cell's output says every case passed (otter: "chNN-exK results: All test cases passed!"; the Chinese
    edition's report, grading.ChineseReport: "chNN-exK 的结果：全部检查通过！")."""
    return any(said in str(out.get("data", {}).get("text/plain", "")) for out in cell.outputs
               for said in ("All test cases passed", "全部检查通过"))


if __name__ == "__main__":
    main()
