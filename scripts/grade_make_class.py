"""Make a folder of submissions of one chapter, to time the grader on a whole class (issue 36):

    python scripts/grade_make_class.py /tmp/class100 --students 100
    time python scripts/grade.py /tmp/class100 --jobs 2

Each student starts from the chapter's distributed notebook (English, or Chinese for every fifth) and is one of
six kinds, in turn, so that a class of 100 holds 17 of each of the first four and 16 of the others:

- right:     every exercise cell solved with the official solution (full points)
- wrong:     each exercise answered with a plausible wrong answer from tests/grading_wrong/ (less than full)
- empty:     the notebook as distributed (zero)
- crashing:  solved, but exercise 1 raises (loses exercise 1)
- looping:   solved, but exercise 2 never ends (loses exercise 2; costs one cell time limit, --timeout)
- tampered:  solved, but a lecture cell is changed (zero: every exercise is marked tampered)

The expected total of each student is written to expected.csv beside the folder's submissions (student, kind,
points), so a run can be checked against it: python scripts/grade_make_class.py --check /tmp/class100.

Measured with the tests run outside the sandbox (scripts/grade_sandbox.py), on a 2-core Intel Xeon (AVX-512)
shared with other work (1-minute load 3.3 to 7.0, median 3.6): 100 submissions in 15 min 11 s with --jobs 2, 6.6
a minute, 100 of 100 as expected. The 16 looping ones spent 1,099 of the 1,810 job-seconds in their cell time limit
(60 s each); the others took 8 s each (median).
"""

from __future__ import annotations

import argparse
import csv
import importlib
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
import grade  # noqa: E402  (scripts/ is not a package)

KINDS = ("right", "wrong", "empty", "crashing", "looping", "tampered")


def student(reference, chapter: str, kind: str, n: int) -> tuple[nbformat.NotebookNode, float]:
    """One submission of `kind` and its expected total."""
    full = {p.stem: grade.max_points(p) for p in grade.test_files(chapter)}
    wrong = importlib.import_module(f"grading_wrong.ch{chapter}").WRONG
    nb = nbformat.from_dict(reference)
    above = []  # the code above each cell, which a solution reuses (the model, imports)
    for cell in nb.cells:
        k = grade.exercise_number(cell)
        if cell.cell_type == "code":
            above.append(cell.source)
        if k is None or kind == "empty":
            continue
        name = f"ch{chapter}-ex{k}"
        if kind == "wrong":
            answers = wrong[name]
            cell.source = f"{cell.source.splitlines()[0]}\n{answers[n % len(answers)].strip()}\n"
        elif kind == "crashing" and k == 1:
            cell.source = f'{cell.source.splitlines()[0]}\nraise RuntimeError("a bug in exercise 1")\n'
        elif kind == "looping" and k == 2:
            cell.source = f"{cell.source.splitlines()[0]}\nwhile True:\n    pass\n"
        else:
            cell.source = grade.solved_cell(chapter, k, cell.source, "\n# %%\n".join(above[:-1]))
    if kind == "tampered":
        lecture = next(c for c in nb.cells if c.cell_type == "code")
        lecture.source += "\nprint('my own change')\n"
    expected = {"right": sum(full.values()), "empty": 0.0, "tampered": 0.0, "wrong": None,
                "crashing": sum(full.values()) - full[f"ch{chapter}-ex1"],
                "looping": sum(full.values()) - full[f"ch{chapter}-ex2"]}[kind]
    return nb, expected


def make(folder: Path, students: int, chapter: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    references = {lang: nbformat.read(grade.distributed(chapter, lang), as_version=4) for lang in ("en", "zh")}
    rows = [["student", "kind", "points"]]
    for n in range(students):
        kind = KINDS[n % len(KINDS)]
        name = f"s{n:03d}-{kind}"
        nb, expected = student(references["zh" if n % 5 == 4 else "en"], chapter, kind, n)
        nbformat.write(nb, folder / f"{name}.ipynb")
        rows.append([name, kind, "" if expected is None else f"{expected:g}"])
    with open(folder.parent / f"{folder.name}-expected.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    print(f"{students} submissions of chapter {chapter} in {folder}; expected totals in "
          f"{folder.parent / (folder.name + '-expected.csv')}")


def check(folder: Path) -> int:
    """Compare the grader's totals.csv with the expected totals: the number of students that differ."""
    with open(folder.parent / f"{folder.name}-expected.csv", newline="", encoding="utf-8") as f:
        expected = {row["student"]: row for row in csv.DictReader(f)}
    with open(folder / "totals.csv", newline="", encoding="utf-8") as f:
        got = {row["student"]: (float(row["points"]), float(row["max_points"])) for row in csv.DictReader(f)}
    bad = 0
    for name, row in expected.items():
        points, full = got.get(name, (None, None))
        ok = points is not None and (points < full if row["kind"] == "wrong" else points == float(row["points"]))
        if not ok:
            bad += 1
            print(f"{name}: got {points}, expected {row['points'] or 'less than full'}")
    print(f"{len(expected) - bad} of {len(expected)} students graded as expected")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--chapter", default="06")
    parser.add_argument("--check", action="store_true", help="compare the folder's totals.csv with the expected")
    args = parser.parse_args()
    if args.check:
        sys.exit(1 if check(args.folder) else 0)
    make(args.folder, args.students, args.chapter)


if __name__ == "__main__":
    main()
