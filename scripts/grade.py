"""Grade a folder of submitted chapter notebooks, offline: `make grade SUBMISSIONS=folder`.

    python scripts/grade.py submissions/              # every *.ipynb in it; the student is the file's name
    python scripts/grade.py submissions/ --timeout 60 --limit 900

For each submission: find its chapter (the notebook's metadata, else the distributed notebook it matches best),
check that the cells we distributed (the chapter's own code, the grader cell, the check cells) are unchanged,
then run it with the chapter's full tests (notebooks/grading/tests/chNN-exK.py, hidden cases included) through
otter-grader's library, `otter.execute.grade_notebook`. (`otter grade`, the command, runs each submission in a
Docker container; we have no Docker, so each submission runs here in a subprocess of its own instead.)

- A cell that runs longer than --timeout seconds is interrupted and the rest of the notebook still runs, so a
  `while True: pass` costs only that exercise; a submission that takes longer than --limit in all is stopped and
  scores zero, with the reason in its feedback.
- An error in one exercise's cell fails that exercise's checks only.
- A changed or deleted distributed code cell marks the exercise it checks (a check cell) or every exercise (any
  other cell) as tampered: zero points, with the cell named in the feedback. Markdown cells are not compared.

Writes folder/grades.csv (student,exercise,points,max_points: one row per student and exercise) and
folder/feedback/<student>.md (points and failure messages per exercise, in the notebook's language; never a
test's source or its expected values). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TESTS = NOTEBOOKS / "grading" / "tests"
SOLUTIONS = NOTEBOOKS / "solutions"
EXERCISE = re.compile(r"^#\s*Exercise (\d+)\b", re.M)  # an exercise cell's first comment line
CHECK = re.compile(r"""grader\.check\(\s*["'](ch\d\d-ex\d+)["']\s*\)""")
SECTION = re.compile(r"^# %% Exercise (\d+)[ \t]*$", re.M)  # a section of notebooks/solutions/chNN.py


# ---- the course's files -----------------------------------------------------------------------------------------

def test_files(chapter: str) -> list[Path]:
    """The full test files of one chapter, in exercise order: notebooks/grading/tests/chNN-exK.py."""
    return sorted(TESTS.glob(f"ch{chapter}-ex*.py"), key=lambda p: int(p.stem.split("-ex")[1]))


def max_points(path: Path) -> float:
    """The points a test file is worth: the sum over its test cases."""
    from otter.test_files import ExceptionTestFile

    return float(sum(tc.points for tc in ExceptionTestFile.from_file(str(path)).test_cases))


def source(chapter: str) -> Path:
    """The chapter's jupytext source, notebooks/src/NN-name.py."""
    return next((NOTEBOOKS / "src").glob(f"{chapter}-*.py"))


def distributed(chapter: str, lang: str = "en", notebooks: Path = NOTEBOOKS) -> Path:
    """The chapter's committed notebook, the one students get: notebooks/NN-name.ipynb, or notebooks/zh/..."""
    return (notebooks if lang == "en" else notebooks / lang) / f"{source(chapter).stem}.ipynb"


def exercise_number(cell) -> int | None:
    """K for a code cell tagged `exercise` whose first comment is `# Exercise K: ...`, else None."""
    if cell.cell_type != "code" or "exercise" not in cell.metadata.get("tags", []):
        return None
    match = EXERCISE.search(cell.source)
    return int(match.group(1)) if match else None


def exercise_cells(chapter: str) -> dict[int, str]:
    """Exercise number → the code of its cell in the chapter's source (the stub a student starts from)."""
    import jupytext

    cells = jupytext.read(source(chapter)).cells
    return {k: c.source for c in cells if (k := exercise_number(c)) is not None}


def solution_sections(chapter: str) -> tuple[str, dict[int, str]]:
    """notebooks/solutions/chNN.py split at its `# %% Exercise K` lines: the setup, and exercise number → section."""
    parts = SECTION.split((SOLUTIONS / f"ch{chapter}.py").read_text(encoding="utf-8"))
    return parts[0], {int(k): code.strip() + "\n" for k, code in zip(parts[1::2], parts[2::2], strict=True)}


def solved_cell(chapter: str, k: int, stub: str) -> str:
    """Exercise K's cell solved: the stub's first line (`# Exercise K: ...`), the solution's setup when section K
    reads a name the setup defines (without the file's docstring), then section K."""
    setup, sections = solution_sections(chapter)
    tree = ast.parse(setup)
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
        setup = "\n".join(setup.splitlines()[tree.body[0].end_lineno:])  # drop the docstring
    defined = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    defined |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
                for a in n.names}
    read = {n.id for n in ast.walk(ast.parse(sections[k])) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    parts = [stub.splitlines()[0], setup.strip() if defined & read else "", sections[k]]
    return "\n\n".join(p for p in parts if p)


# ---- one submission ---------------------------------------------------------------------------------------------

def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def identify(nb, notebooks: Path = NOTEBOOKS) -> tuple[str | None, str]:
    """(chapter, language) of a submission: from its metadata (scripts/build_notebooks.py writes both), else the
    distributed notebook that shares the most code cells with it."""
    lang = nb.metadata.get("language", "en")
    chapter = nb.metadata.get("teachllm", {}).get("chapter")
    if chapter and test_files(chapter):
        return chapter, lang
    sources = {c.source.strip() for c in code_cells(nb)}
    best, best_shared = (None, "en"), 0
    for path in sorted(notebooks.glob("[0-9][0-9]-*.ipynb")) + sorted(notebooks.glob("*/[0-9][0-9]-*.ipynb")):
        shared = sum(c.source.strip() in sources for c in code_cells(nbformat.read(path, as_version=4)))
        if shared > best_shared:
            best, best_shared = (path.name[:2], path.parent.name if path.parent != notebooks else "en"), shared
    return best


def tampering(nb, reference) -> dict[str, list[str]]:
    """Which distributed code cells a submission changed or deleted: exercise name (or "*" for all) → the cells.

    A cell is found by its id (Jupyter keeps ids), else by its text anywhere in the notebook; exercise cells are
    the student's to change and are skipped. Cells a student added are not checked."""
    by_id = {c.get("id"): c for c in code_cells(nb)}
    sources = {c.source.strip() for c in code_cells(nb)}
    touched: dict[str, list[str]] = {}
    for n, cell in enumerate(reference.cells, start=1):
        if cell.cell_type != "code" or "exercise" in cell.metadata.get("tags", []):
            continue
        theirs = by_id.get(cell.get("id"))
        if (theirs is not None and theirs.source.strip() == cell.source.strip()) or cell.source.strip() in sources:
            continue
        first = next((line for line in cell.source.splitlines() if line.strip()), "")[:60]
        what = f"cell {n} ({'changed' if theirs is not None else 'deleted'}): {first}"
        for name in CHECK.findall(cell.source) or ["*"]:
            touched.setdefault(name, []).append(what)
    return touched


def run_otter(path: Path, chapter: str, timeout: int) -> dict:
    """Run one submission with the chapter's full tests (in this process: main() starts one per submission)."""
    import otter.execute
    from otter.execute import grade_notebook
    from traitlets.config import Config

    from teachllm.course.grading import failure_message

    # grade_notebook builds its own traitlets Config and takes no cell time limit: give it one with ours in it
    otter.execute.Config = lambda: Config(ExecutePreprocessor={"timeout": timeout, "interrupt_on_timeout": True})
    results = grade_notebook(str(path), tests_glob=[str(p) for p in test_files(chapter)], test_dir=str(TESTS),
                             ignore_errors=True)
    out = {}
    for test in test_files(chapter):
        try:
            tf = results.get_result(test.stem)
        except (KeyError, AttributeError):
            continue
        messages = list(dict.fromkeys(failure_message(r.message) for r in tf.test_case_results if not r.passed))
        out[test.stem] = {"points": float(tf.score), "messages": messages}
    return out


def stop(pid: int) -> None:
    """Kill a process and every process below it: the kernel runs in a session of its own, so the process group
    is not enough."""
    import psutil  # ipykernel's dependency

    parent = psutil.Process(pid)
    for process in [*parent.children(recursive=True), parent]:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass


def grade_submission(path: Path, timeout: int, limit: int, notebooks: Path = NOTEBOOKS) -> dict:
    """Grade one notebook: {"chapter", "lang", "exercises": {name: {"points", "max", "messages", "status"}}}."""
    nb = nbformat.read(path, as_version=4)
    chapter, lang = identify(nb, notebooks)
    if chapter is None:
        return {"chapter": None, "lang": lang, "exercises": {}}
    exercises = {t.stem: {"points": 0.0, "max": max_points(t), "messages": [], "status": "graded"}
                 for t in test_files(chapter)}
    touched = tampering(nb, nbformat.read(distributed(chapter, lang, notebooks), as_version=4))
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        command = [sys.executable, __file__, "--one", str(path.resolve()), "--chapter", chapter,
                   "--timeout", str(timeout), "--out", str(result)]
        # the kernel runs where the distributed notebook runs, so relative paths and the checks folder resolve alike
        process = subprocess.Popen(command, cwd=distributed(chapter, lang).parent, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        try:
            _, stderr = process.communicate(timeout=limit)
            ran = json.loads(result.read_text()) if result.exists() else None
            problem = None if ran is not None else f"the grader failed: {stderr.strip().splitlines()[-1:]}"
        except subprocess.TimeoutExpired:
            stop(process.pid)
            process.communicate()
            ran, problem = None, f"the notebook did not finish within {limit} s"
    for name, entry in exercises.items():
        if problem:
            entry.update(status="not graded", messages=[problem])
        elif name in touched or "*" in touched:
            entry.update(status="tampered", messages=touched.get(name, []) + touched.get("*", []))
        elif name in ran:
            entry.update(points=ran[name]["points"], messages=ran[name]["messages"])
        else:
            entry.update(messages=["the checks of this exercise did not run"])
    return {"chapter": chapter, "lang": lang, "exercises": exercises}


# ---- feedback ---------------------------------------------------------------------------------------------------

WORDS = {
    "en": {"title": "Feedback: {student}, chapter {chapter}", "total": "Total: {points:g} of {max:g} points",
           "exercise": "Exercise {k}: {points:g} / {max:g}", "passed": "All checks passed.",
           "tampered": "Not graded: a cell we distributed was changed or deleted. Restore it from the chapter's "
                       "notebook and submit again:", "not graded": "Not graded:", "graded": "What the checks found:",
           "unknown": "This notebook is not one of the course's chapters with graded exercises."},
    "zh": {"title": "反馈：{student}，第 {chapter} 章", "total": "总分：{points:g} / {max:g}",
           "exercise": "练习 {k}：{points:g} / {max:g}", "passed": "全部检查通过。",
           "tampered": "未评分：分发的单元格被修改或删除了。请从本章的笔记本中恢复它，再重新提交：",
           "not graded": "未评分：", "graded": "检查发现的问题：",
           "unknown": "这个笔记本不是课程中带评分练习的章节。"},
}


def feedback(student: str, graded: dict) -> str:
    """The Markdown feedback for one student, in the notebook's language."""
    words = WORDS["zh" if graded["lang"] == "zh" else "en"]
    if graded["chapter"] is None:
        return f"# {student}\n\n{words['unknown']}\n"
    entries = graded["exercises"]
    lines = [f"# {words['title'].format(student=student, chapter=int(graded['chapter']))}", "",
             words["total"].format(points=sum(e["points"] for e in entries.values()),
                                   max=sum(e["max"] for e in entries.values())), ""]
    for name, e in entries.items():
        lines += [f"## {words['exercise'].format(k=name.split('-ex')[1], points=e['points'], max=e['max'])}", ""]
        if not e["messages"]:
            lines += [words["passed"], ""]
            continue
        lines += [words[e["status"]], ""]
        lines += [f"- {m}".replace("\n", "\n  ") for m in e["messages"]] + [""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="a folder of submitted .ipynb files")
    parser.add_argument("--timeout", type=int, default=60, help="seconds a cell may run before it is interrupted")
    parser.add_argument("--limit", type=int, default=900, help="seconds one whole submission may take")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS,
                        help="the folder of the notebooks as distributed (default: notebooks/; a test's own)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # internal: grade one notebook in this process
    parser.add_argument("--chapter", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.one:
        args.out.write_text(json.dumps(run_otter(args.one, args.chapter, args.timeout)))
        return
    if args.folder is None or not args.folder.is_dir():
        sys.exit(f"grade: {args.folder} is not a folder of submitted notebooks (make grade SUBMISSIONS=folder)")
    submissions = sorted(args.folder.glob("*.ipynb"))
    if not submissions:
        sys.exit(f"grade: no .ipynb files in {args.folder}")
    (args.folder / "feedback").mkdir(exist_ok=True)
    rows = []
    for n, path in enumerate(submissions, start=1):
        start = time.perf_counter()
        graded = grade_submission(path, args.timeout, args.limit, args.notebooks)
        student = path.stem
        (args.folder / "feedback" / f"{student}.md").write_text(feedback(student, graded), encoding="utf-8")
        for name, e in graded["exercises"].items():
            rows.append([student, name, f"{e['points']:g}", f"{e['max']:g}"])
        marks = [f"{name} {e['points']:g}/{e['max']:g}" + ("" if e["status"] == "graded" else f" {e['status']}")
                 for name, e in graded["exercises"].items()]
        seconds = time.perf_counter() - start
        print(f"[{n}/{len(submissions)}] {student}: {', '.join(marks) or 'no graded chapter found'} ({seconds:.0f} s)",
              file=sys.stderr)
    with open(args.folder / "grades.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["student", "exercise", "points", "max_points"], *rows])
    print(f"grade: wrote {args.folder / 'grades.csv'} and {len(submissions)} files in {args.folder / 'feedback'}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
