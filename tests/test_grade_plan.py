"""Which cells the grader runs (scripts/grade.py, "What runs"): the student's cells always, a lecture cell (a check
cell too, whose work the grader's own tests do) only when a later running cell or the tests read what it defines or
changes. Read from the code only: these tests run no notebook."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import grade  # noqa: E402  (scripts/ is not a package)

CHAPTERS = sorted({p.name[2:4] for p in grade.TESTS.glob("ch[0-9][0-9]-ex*.py")})


def planned(nb, reference, chapter: str) -> dict[str, bool]:
    """First line of each code cell → whether it runs."""
    run = grade.cells_to_run(nb, reference, chapter)
    return {c.source.strip().splitlines()[0] if c.source.strip() else "": run[n]
            for n, c in enumerate(nb.cells) if c.cell_type == "code"}


def runs(nb, reference, chapter: str, text: str) -> bool:
    run = grade.cells_to_run(nb, reference, chapter)
    return next(run[n] for n, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source)


def test_cell_use_reads_scopes_changes_and_state():
    use = grade.cell_use("import torch\nx = 1\ndef f(a):\n    b = a + y\n    return b\n[z for z in w]\nprint(x)")
    assert use.binds == {"torch", "x", "f"} and {"y", "w", "print"} <= use.reads and "x" not in use.reads
    assert not {"a", "b", "z"} & use.binds and not {"a", "b", "z"} & use.reads, "a function's locals are its own"
    assert grade.cell_use("lm.model.x = 1\nd[0] += 2\ncache.append(3)\nw.add_(1)\nlm.generate(ids)").changes == {
        "lm", "d", "cache", "w"}, "lm.generate is assumed to leave lm as it was; the others change their object"
    assert grade.cell_use("torch.manual_seed(0)").always and grade.cell_use("%time x = 1").always
    assert grade.cell_use("viz.show_figures_offline()").always and grade.cell_use("os.chdir('/')").always
    assert not grade.cell_use("g = torch.Generator().manual_seed(0)").always, "a new generator is no global state"
    assert grade.cell_use("def f():\n    global g\n    g = 1").binds == {"f", "g"}
    assert grade.cell_use("logits = f(ids)\nprint(logits, x)\nx = 1").reads == {"f", "ids", "print", "x"}, (
        "a name bound before it is read is not needed from an earlier cell")
    assert grade.cell_use("for t in ts:\n    p = f(t)\n    print(p)\ntry:\n    g()\nexcept E as e:\n    print(e)"
                          ).reads == {"ts", "f", "print", "g", "E"}
    assert grade.cell_use("if c:\n    x = 1\nprint(x)").reads == {"c", "print", "x"}, "the branch may not run"
    assert grade.cell_use("total += 1").reads == {"total"}


def test_chapter_6_skips_the_generation_tables_figures_widgets_and_quiz():
    reference = nbformat.read(grade.distributed("06"), as_version=4)
    plan = planned(reference, reference, "06")
    assert plan["import math"], "the setup (imports, the model) runs"
    skipped = [line for line in plan if not plan[line]]
    generating = [c for c in reference.cells if c.cell_type == "code" and "lm.generate(" in c.source]
    assert generating and not any(runs(reference, reference, "06", c.source) for c in generating), (
        "the cells that generate text (a minute each) are not needed by the exercises")
    for text in ("viz.DistributionExplorer(", "viz.Quiz(6)", "viz.distribution_figure("):
        assert not runs(reference, reference, "06", text), f"{text} only shows something: skipped"
    assert len(skipped) >= len(plan) // 2


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_exercise_cell_runs_no_check_cell_does_and_the_model_is_loaded(chapter, lang):
    reference = nbformat.read(grade.distributed(chapter, lang), as_version=4)
    run = grade.cells_to_run(reference, reference, chapter)
    for n, cell in enumerate(reference.cells):
        tags = set(cell.metadata.get("tags", []))
        if "exercise" in tags:
            assert run[n], f"chapter {chapter} ({lang}): cell {n + 1} is an exercise and must run"
        elif "check" in tags:
            assert not run[n], f"chapter {chapter} ({lang}): cell {n + 1} is a check cell, which the grader replaces"
    with_checks = grade.cells_to_run(reference, reference, chapter, checks=True)  # the instructor edition's run
    assert all(with_checks[n] for n, c in enumerate(reference.cells) if "check" in c.metadata.get("tags", []))
    first = next(n for n, c in enumerate(reference.cells) if c.cell_type == "code")
    assert run[first], f"chapter {chapter} ({lang}): the first code cell (imports, the model) must run"
    assert not all(run[n] for n, c in enumerate(reference.cells) if c.cell_type == "code"), (
        f"chapter {chapter} ({lang}): no lecture cell is skipped")


def test_a_students_own_cell_runs_and_pulls_in_what_it_reads():
    reference = nbformat.read(grade.distributed("06"), as_version=4)
    assert not runs(reference, reference, "06", "q_logits = viz.next_token_logits")
    nb = nbformat.from_dict(reference)
    n = next(n for n, c in enumerate(nb.cells) if grade.exercise_number(c) == 1)
    nb.cells.insert(n, nbformat.v4.new_code_cell("my_shape = tuple(q_logits.shape)"))
    assert runs(nb, reference, "06", "my_shape = "), "a cell the student added runs"
    assert runs(nb, reference, "06", "q_logits = viz.next_token_logits"), "and so does the cell defining q_logits"


def test_a_lecture_cell_that_changes_what_the_tests_read_runs():
    reference = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import torch\nkept_after = None"),
        nbformat.v4.new_code_cell("table = [1, 2]\nprint(table)"),  # only prints: skipped
        nbformat.v4.new_code_cell("helper = {}\nhelper['k'] = 1"),  # nothing reads helper: skipped
        nbformat.v4.new_code_cell("kept_after.cache = {}"),  # changes what the tests read: runs
        nbformat.v4.new_code_cell("torch.manual_seed(1)"),  # global state: runs
        nbformat.v4.new_code_cell("%matplotlib inline"),  # a magic: runs
        nbformat.v4.new_code_cell("torch.backends.flag = 1"),  # changes a module: runs
    ])
    assert [*planned(reference, reference, "06").values()] == [True, False, False, True, True, True, True]
