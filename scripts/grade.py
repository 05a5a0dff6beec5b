"""Grade a folder of submitted chapter notebooks, offline: `make grade SUBMISSIONS=folder`.

    python scripts/grade.py submissions/              # every .ipynb in it, or in a folder per student
    python scripts/grade.py submissions/ --timeout 60 --limit 900 --memory 6 --jobs 2

A student is a notebook's file name (alice.ipynb, alice.IPYNB), or the name of a folder holding their notebook
(alice/ch06.ipynb; with several notebooks, alice-ch06). Names are compared in Unicode NFC.

For each submission: read it (a file that is not a readable notebook is skipped, with the reason, and the batch
goes on), find its chapter (the notebook's metadata, else the distributed notebook it matches best), check that
the cells we distributed are unchanged, then run the cells grading needs (below) with the chapter's full tests
(notebooks/grading/tests/chNN-exK.py, hidden cases included) through otter-grader's library,
`otter.execute.grade_notebook`. --jobs submissions (default: one per CPU) are graded at once, each in its own
sandbox with its share of the CPUs as torch threads.

What runs. A lecture cell (a code cell of the distributed notebook, found unchanged in the submission) is checked
for tampering, and run only when the exercises need it; everything else runs. Precisely, read from the code
(Python's own scope analysis, `symtable`, and the syntax tree), walking from the last cell to the first:
- always run: exercise cells, check cells, and every cell the student added or changed (their code is what is
  graded; a changed lecture cell is tampering anyway);
- a lecture cell runs when it binds a name (assignment, import, def, for, with) that a running cell after it or
  the tests read (every identifier in a string of the chapter's test files counts as read), or changes in place an
  object such a name holds (x.a = ..., x[i] = ..., +=, del, a method that changes its object: x.append(...),
  x.add_(...), module.to(...), MUTATORS), or changes state that no name shows: a module or an imported name
  changed (os.environ[...] = ..., tl.x = ...), a magic or shell line, code that does not parse, a call such as
  torch.manual_seed, set_*, use_*, filterwarnings, os.chdir (STATE_CALLS). The
  names a running cell reads before it binds them itself are then needed from the cells before it.
So a cell that only draws a figure, makes a widget or a quiz, or prints a table, runs only if a later cell reads
what it defines. This is sound for the course's own lecture code under one assumption, which the course keeps:
calling a function or method changes no object a later cell reads except through the forms above (lm.generate,
viz.next_token_logits, sampling.* leave their arguments as they were). It does not replay the global random
state that a skipped cell would have consumed: the tests seed their own generators.

Each submission runs in a sandbox of its own (bubblewrap, `bwrap`; `apt-get install bubblewrap`): a private
/tmp holding a copy of the notebook and of the chapter's tests, the rest of the machine read-only, the
submissions folder, the course's hidden tests and solutions not visible at all, no network, its own process
namespace (every process it starts ends with it), and limits on memory (--memory), CPU time, file size and
printed output. The grader reads the results from a file it gave the sandbox, checks them (known exercises,
points between 0 and the maximum) and removes from the messages anything that quotes a test file.

- A cell that runs longer than --timeout seconds is interrupted and the rest of the notebook still runs; a
  submission that takes longer than --limit in all is stopped and scores zero, with the reason in its feedback.
- An error in one exercise's cell fails that exercise's checks only.
- A changed or deleted distributed code cell marks the exercise it checks (a check cell) or every exercise (any
  other cell) as tampered: zero points, with the cell named in the feedback. Markdown cells are not compared.

Writes, in the folder: grades.csv (student,exercise,points,max_points: one row per student and exercise),
totals.csv (student,points,max_points), skipped.csv (file,reason: what was not graded and why), review.csv
(student,reason: code a lecturer should read, such as a cell that imports otter or rebinds `lm`; the tests run
in the student's own Python, so such code can change a score) and feedback/<student>.md (points and failure
messages per exercise, in the notebook's language; never a test's source). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import symtable
import sys
import tempfile
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TESTS = NOTEBOOKS / "grading" / "tests"
SOLUTIONS = NOTEBOOKS / "solutions"
EXERCISE = re.compile(r"^#\s*(?:Exercise |练习\s*)(\d+)\b", re.M)  # an exercise cell's first comment line, en or zh
CHECK = re.compile(r"""grader\.check\(\s*["'](ch\d\d-ex\d+)["']\s*\)""")
SECTION = re.compile(r"^# %% Exercise (\d+)[ \t]*$", re.M)  # a section of notebooks/solutions/chNN.py
LANGUAGES = ("en", "zh")  # the editions: notebooks/ and notebooks/zh/
OUTPUTS = ("feedback", "grades.csv", "totals.csv", "skipped.csv", "review.csv")  # what the grader writes in the folder
MAX_NOTEBOOK_BYTES = 50 * 2**20  # a bigger file is not a chapter notebook
MESSAGE_CHARS = 400  # the most of one failure message a student's feedback shows
MESSAGES = 5  # the most failure messages per exercise


# ---- the course's files -----------------------------------------------------------------------------------------

def test_files(chapter: str) -> list[Path]:
    """The full test files of one chapter, in exercise order: notebooks/grading/tests/chNN-exK.py."""
    return sorted(TESTS.glob(f"ch{chapter}-ex*.py"), key=lambda p: int(p.stem.split("-ex")[1]))


TEST_FILE_LOCK = threading.Lock()  # reading a test file runs its imports: transformers' lazy imports race in threads


def max_points(path: Path) -> float:
    """The points a test file is worth: the sum over its test cases."""
    from otter.test_files import ExceptionTestFile

    with TEST_FILE_LOCK:
        return float(sum(tc.points for tc in ExceptionTestFile.from_file(str(path)).test_cases))


def source(chapter: str) -> Path:
    """The chapter's jupytext source, notebooks/src/NN-name.py."""
    return next((NOTEBOOKS / "src").glob(f"{chapter}-*.py"))


def distributed(chapter: str, lang: str = "en", notebooks: Path = NOTEBOOKS) -> Path:
    """The chapter's committed notebook, the one students get: notebooks/NN-name.ipynb, or notebooks/zh/..."""
    return (notebooks if lang == "en" else notebooks / lang) / f"{source(chapter).stem}.ipynb"


def exercise_number(cell) -> int | None:
    """K for a code cell tagged `exercise` whose first comment is `# Exercise K: ...` (`# 练习 K：...`), else None."""
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


def made_above(code: str) -> set[tuple]:
    """What the code above an exercise cell (cells joined by "\n# %%\n"; a cell that does not parse is left out)
    makes that a solution need not make again: ("import", module, as) and ("from", module, name, as) for each
    import, and ("=", name, text) for the last top-level `name = ...` of each name, its text as ast.unparse writes it
    (tl.load(...) whatever its arguments: the notebook's model is the one a student's answer uses)."""
    made, last = set(), {}
    for cell in code.split("\n# %%\n"):
        try:
            tree = ast.parse(cell)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                last[node.targets[0].id] = assigned(node)
            else:
                for name in cell_use(ast.unparse(node)).binds:
                    last.pop(name, None)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                made |= {("import", a.name, a.asname) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                made |= {("from", node.module, a.name, a.asname) for a in node.names}
    return made | {("=", name, text) for name, text in last.items()}


def assigned(node: ast.Assign) -> str:
    """The text of an assignment's value; "tl.load(...)" for any call of tl.load."""
    value = node.value
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "tl.load":
        return "tl.load(...)"
    return ast.unparse(value)


def solved_cell(chapter: str, k: int, stub: str, before: str = "") -> str:
    """Exercise K's cell solved: the stub's first line (`# Exercise K: ...`), then the statements of the solution's
    setup that section K needs (each one binding a name that the section or a statement kept reads), less what
    `before` (the notebook's code above the cell) already made the same way (made_above: imports, `tok =
    lm.tokenizer`, the model), then section K. A name the notebook binds otherwise is made again: the setup's
    `logits` need not be the notebook's."""
    setup, sections = solution_sections(chapter)
    lines, body = setup.splitlines(), ast.parse(setup).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the file's docstring
    made, needed, kept = made_above(before), set(cell_use(sections[k]).reads), []
    for node in reversed(body):
        text = "\n".join(lines[node.lineno - 1:node.end_lineno])
        use = cell_use(text)
        if not (use.binds | use.changes) & needed:
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and (
                ("=", node.targets[0].id, assigned(node)) in made):
            continue  # the notebook made the same name the same way: `tok = lm.tokenizer`, `lm = tl.load()`
        needed |= use.reads
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a for a in node.names if (("import", a.name, a.asname) if isinstance(node, ast.Import) else
                                               ("from", node.module, a.name, a.asname)) not in made]
            if not names:
                continue
            if len(names) < len(node.names):
                node.names = names
                text = ast.unparse(node)
        kept.insert(0, text)
    parts = [stub.splitlines()[0], "\n".join(kept), sections[k]]
    return "\n\n".join(p for p in parts if p)


# ---- finding and reading submissions ----------------------------------------------------------------------------

class Unreadable(Exception):
    """A submission the grader cannot grade: the message says what is wrong and what to do."""


def student_name(name: str) -> str:
    """A student's name as printed and used for their feedback file: Unicode NFC (so one José, however the file
    system spelled it), control characters as '?'."""
    return "".join(c if c.isprintable() else "?" for c in unicodedata.normalize("NFC", name))


def find_submissions(folder: Path) -> tuple[list[tuple[str, Path]], list[tuple[str, str]]]:
    """The notebooks in `folder` as (student, path), and the entries that are not submissions as (name, reason).
    A .ipynb (any case) directly in the folder is one student; a folder holds one student's notebooks."""
    found, skipped = [], []
    for entry in sorted(folder.iterdir()):
        if entry.name in OUTPUTS or entry.name.startswith("."):
            continue  # the grader's own files, .ipynb_checkpoints and other hidden files
        if entry.suffix.lower() == ".ipynb":
            found.append((entry.stem, entry))  # a link or a folder named x.ipynb too: read_submission says why
        elif entry.is_dir() and not entry.is_symlink():
            try:
                inner = sorted(p for p in entry.iterdir() if p.suffix.lower() == ".ipynb" and p.name[:1] != ".")
            except OSError as error:
                skipped.append((entry.name, f"a folder the grader cannot read ({error.strerror}): not graded"))
                continue
            if not inner:
                skipped.append((entry.name, "a folder with no .ipynb notebook in it"))
            for p in inner:
                found.append((entry.name if len(inner) == 1 else f"{entry.name}-{p.stem}", p))
        else:
            skipped.append((entry.name, "not a .ipynb notebook (or a link): not graded"))
    students, seen = [], {}
    for name, path in found:
        student = student_name(name)
        seen[student] = seen.get(student, 0) + 1
        if seen[student] > 1:  # two files whose names differ only in Unicode form (NFC/NFD) or in case of .ipynb
            skipped.append((str(path.relative_to(folder)), f"graded as {student} ({seen[student]}): its name is "
                            "another submission's once written in Unicode NFC; check which student it is"))
            student = f"{student} ({seen[student]})"
        students.append((student, path))
    return students, skipped


def read_submission(path: Path) -> nbformat.NotebookNode:
    """The notebook at `path`, or Unreadable saying why not (each check names what a saved notebook has)."""
    fix = "save the notebook from Jupyter (File > Save) and submit the .ipynb file"
    if path.is_symlink():
        raise Unreadable(f"is a link, not a notebook file: {fix}")
    if path.is_dir():
        raise Unreadable(f"is a folder, not a notebook file: {fix}")
    if not path.is_file():
        raise Unreadable(f"is not a regular file: {fix}")
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise Unreadable(f"is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB: clear the outputs and save it again")
    data = path.read_bytes()
    if not data.strip():
        raise Unreadable(f"is empty: {fix}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(f"is not UTF-8 text (byte {error.start}): {fix}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise Unreadable(f"is not JSON (line {error.lineno}): {fix}") from None
    if not (isinstance(raw, dict) and isinstance(raw.get("cells"), list) and isinstance(raw.get("metadata", {}), dict)
            and all(isinstance(c, dict) and isinstance(c.get("metadata", {}), dict) for c in raw["cells"])):
        raise Unreadable(f"is JSON but not a Jupyter notebook (no list of cells): {fix}")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as error:  # nbformat's own checks: a notebook it cannot convert to version 4
        raise Unreadable(f"is not a notebook nbformat can read ({type(error).__name__}): {fix}") from None
    for n, cell in enumerate(nb.cells, start=1):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") not in ("code", "markdown", "raw") or not isinstance(cell.get("source"), str) or (
                not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
            raise Unreadable(f"cell {n} is not a code, Markdown or raw cell with text and a list of tags: {fix}")
    meta = nb.metadata.get("teachllm", {})
    if not isinstance(meta, dict):
        raise Unreadable(f"its metadata `teachllm` is {type(meta).__name__}, not the object the chapter's notebook "
                         f"has: start again from the chapter's notebook")
    chapter = meta.get("chapter")
    if chapter is not None and not (isinstance(chapter, str) and re.fullmatch(r"\d\d", chapter)):
        raise Unreadable(f"its metadata `teachllm.chapter` is {chapter!r}, not a two-digit chapter such as '06': "
                         "start again from the chapter's notebook")
    if nb.metadata.get("language", "en") not in LANGUAGES:
        raise Unreadable(f"its metadata `language` is {nb.metadata.get('language')!r}, not one of "
                         f"{', '.join(LANGUAGES)}: start again from the chapter's notebook")
    return nb


# ---- one submission ---------------------------------------------------------------------------------------------

def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def identify(nb, notebooks: Path = NOTEBOOKS) -> tuple[str | None, str]:
    """(chapter, language) of a submission: from its metadata (scripts/build_notebooks.py writes both), else the
    distributed notebook that shares the most code cells with it. read_submission has checked both fields."""
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


def ignored_by_otter(cell) -> bool:
    """otter skips a cell tagged `otter_ignore` (or with metadata otter.ignore); the grader runs every cell."""
    otter_meta = cell.metadata.get("otter", {})
    return "otter_ignore" in cell.metadata.get("tags", []) or (isinstance(otter_meta, dict) and bool(
        otter_meta.get("ignore")))


def tampering(nb, reference) -> dict[str, list[str]]:
    """Which distributed code cells a submission changed or deleted: exercise name (or "*" for all) → the cells.

    A cell is found by its id (Jupyter keeps ids): a cell with that id must hold the same code. A cell whose id is
    gone is found by its text anywhere in the notebook. Exercise cells are the student's to change and are skipped;
    cells a student added are not checked (review() reads them)."""
    cells = [c for c in code_cells(nb) if not ignored_by_otter(c)]  # a copy tagged otter_ignore does not count
    by_id = {c.get("id"): c for c in cells}
    sources = {c.source.strip() for c in cells}
    touched: dict[str, list[str]] = {}
    for n, cell in enumerate(reference.cells, start=1):
        if cell.cell_type != "code" or "exercise" in cell.metadata.get("tags", []):
            continue
        theirs = by_id.get(cell.get("id"))
        if (theirs.source.strip() == cell.source.strip()) if theirs is not None else cell.source.strip() in sources:
            continue
        first = next((line for line in cell.source.splitlines() if line.strip()), "")[:60]
        what = f"cell {n} ({'changed' if theirs is not None else 'deleted'}): {first}"
        for name in CHECK.findall(cell.source) or ["*"]:
            touched.setdefault(name, []).append(what)
    return touched


SUSPECT_MODULES = {"otter", "ctypes", "gc", "importlib", "builtins", "inspect", "subprocess", "signal", "pickle"}
SUSPECT_NAMES = {"exec", "eval", "compile", "setattr", "globals", "vars", "__import__", "__builtins__"}  # builtins
SUSPECT_ATTRIBUTES = {"__code__", "__globals__", "__builtins__", "__dict__", "_exit", "modules"}  # os._exit


def review(nb, reference, chapter: str) -> list[str]:
    """Code in a submission that a lecturer should read, because it can change what the tests see: the tests run
    in the student's Python, after their cells. Reads the cells that are not distributed unchanged: importing
    otter or ctypes, exec and friends, changing an attribute of a module the chapter imports (tl.bpe.train_bpe =
    ...), or assigning a name that the chapter's cells define and the tests read (lm). A heuristic: it flags, it
    never changes a score, and code written to hide from it is not found."""
    distributed = {c.source.strip() for c in code_cells(reference)}
    modules, defined = set(), set()
    for cell in code_cells(reference):
        if "exercise" in cell.metadata.get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
    read = set()
    for test in test_files(chapter):
        read |= set(re.findall(r"""env(?:\.get\(|\[)\s*["'](\w+)["']""", test.read_text(encoding="utf-8")))
    theirs = []  # (cell number, syntax tree) of the cells that are not distributed unchanged
    found = []
    for n, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code" or cell.source.strip() in distributed:
            continue
        lines = cell.source.splitlines()
        if any(line.lstrip().startswith(("!", "%")) for line in lines):
            found.append(f"cell {n} runs a shell command or magic")
        try:
            theirs.append((n, ast.parse("\n".join(line for line in lines if not line.lstrip().startswith(("!", "%"))))))
        except SyntaxError:
            continue
    for _, tree in theirs:  # a module the student imports under a name of their own is a module too
        modules |= {(a.asname or a.name).split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import | ast.ImportFrom) for a in node.names}
    protected = (defined & read) | modules
    for n, tree in theirs:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                found += [f"cell {n} imports {m}" for m in names if m.split(".")[0] in SUSPECT_MODULES]
            elif isinstance(node, ast.Name | ast.Attribute):
                name = node.id if isinstance(node, ast.Name) else node.attr
                if name in (SUSPECT_NAMES if isinstance(node, ast.Name) else SUSPECT_ATTRIBUTES):
                    found.append(f"cell {n} uses {name}")
                elif isinstance(node.ctx, ast.Store | ast.Del):
                    root = node
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    if isinstance(root, ast.Name) and root.id in protected:
                        found.append(f"cell {n} assigns {ast.unparse(node)}, which the tests may use")
    return list(dict.fromkeys(found))


# ---- what runs: the student's cells and the lecture cells they need ---------------------------------------------

STATE_CALLS = re.compile(r"^(set_\w*|manual_seed\w*|seed|use_\w+|filterwarnings|simplefilter|chdir|putenv|"
                         r"show_figures\w*|setLevel|register\w*|basicConfig)$")  # calls that change global state
MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add",
            "discard", "sort", "reverse", "load_state_dict", "train", "eval", "to", "cuda", "cpu", "half", "float",
            "double", "bfloat16", "apply", "reset", "close", "write", "send"}  # methods that change their object


def root_name(node) -> str | None:
    """`lm` for lm, lm.model.layers[0].weight and lm.cache(); None for an expression that starts elsewhere."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call | ast.Starred):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


@dataclass(frozen=True)
class CellUse:
    """What one code cell does to the notebook's globals, as far as reading its code shows."""

    binds: frozenset[str]  # globals it assigns, imports, defines or deletes
    reads: frozenset[str]  # globals it reads before it binds them, in its own code or in the functions it defines
    changes: frozenset[str]  # globals whose objects it may change in place: x.a = …, x[i] = …, x.append(…), x.add_(…)
    always: bool  # it changes state that no name shows (a seed, a setting, a magic), or its code does not parse


def cell_use(code: str) -> CellUse:
    """CellUse of one cell, from Python's own scope analysis (symtable) and its syntax tree."""
    try:
        tree, table = ast.parse(code), symtable.symtable(code, "<cell>", "exec")
    except (SyntaxError, ValueError):  # a magic (%time), a shell line (!ls), or broken code
        return CellUse(frozenset(), frozenset(), frozenset(), True)
    binds = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    reads = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    tables = list(table.get_children())
    while tables:  # the functions, classes and comprehensions it defines: the globals they read or declare
        inner = tables.pop()
        tables += inner.get_children()
        for s in inner.get_symbols():
            if s.is_global() and s.is_referenced():
                reads.add(s.get_name())
            if s.is_declared_global() and s.is_assigned():
                binds.add(s.get_name())
    reads |= binds & {n.target.id for n in ast.walk(tree)  # a global's x += 1 reads it
                      if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    reads &= read_before_bound(tree.body, set())  # `x = f()` then `x.g()` needs no earlier cell's x
    changes, always = set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            changes.add(root_name(node.value))
        elif isinstance(node, ast.AugAssign):
            changes.add(root_name(node.target))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if STATE_CALLS.match(method):  # torch.manual_seed(0), not torch.Generator().manual_seed(0): a new object
                always = always or not any(isinstance(n, ast.Call) for n in ast.walk(node.func.value))
            elif method in MUTATORS or (method.endswith("_") and not method.startswith("_")):
                changes.add(root_name(node.func.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and STATE_CALLS.match(node.func.id):
            always = True
    changes.discard(None)
    return CellUse(frozenset(binds), frozenset(reads), frozenset(changes), always)


def read_before_bound(statements: list, bound: set[str]) -> set[str]:
    """The names `statements` read that no statement before the read has bound, given the names `bound` before
    them. A for loop's target is bound in its body, an except clause's name in its handler; what a block (if,
    for, while, try, with) binds counts after it only for the block itself, since it may not run."""
    early = set()

    def loads(*nodes) -> set[str]:  # x += 1 reads x too
        walked = [n for node in nodes if node is not None for n in ast.walk(node)]
        return ({n.id for n in walked if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                | {n.target.id for n in walked if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
                ) - bound

    for node in statements:
        if isinstance(node, ast.For | ast.AsyncFor):
            early |= loads(node.iter)
            early |= read_before_bound(node.body + node.orelse, bound | names_in(node.target))
        elif isinstance(node, ast.If | ast.While):
            early |= loads(node.test) | read_before_bound(node.body, set(bound)) | read_before_bound(
                node.orelse, set(bound))
        elif isinstance(node, ast.With | ast.AsyncWith):
            early |= loads(*[i.context_expr for i in node.items])
            early |= read_before_bound(node.body, bound | {n for i in node.items for n in names_in(i.optional_vars)})
        elif isinstance(node, ast.Try):
            early |= read_before_bound(node.body + node.orelse + node.finalbody, set(bound))
            for handler in node.handlers:
                early |= loads(handler.type) | read_before_bound(handler.body, bound | {handler.name} - {None})
        else:
            early |= loads(node)
            bound = bound | {s.get_name() for s in symtable.symtable(ast.unparse(node), "<statement>",
                                                                      "exec").get_symbols()
                             if s.is_assigned() or s.is_imported()}
    return early


def names_in(target) -> set[str]:
    """The names an assignment target binds: `name`, `a, (b, c)`; none for None."""
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target is not None else set()


def names_the_tests_read(chapter: str) -> set[str]:
    """Every name a chapter's test files could look up in the notebook's globals: each string in them that is a
    Python identifier (env["lm"], env.get("kept_after"), and names held in variables or loops)."""
    names = set()
    for test in test_files(chapter):
        names |= {n.value for n in ast.walk(ast.parse(test.read_text(encoding="utf-8")))
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier()}
    return names


def cells_to_run(nb, reference, chapter: str) -> list[bool]:
    """For each cell of the submission, whether the grader runs it (see the module's docstring, "What runs").

    The student's cells (exercise cells, cells they added or changed) and the check cells always run. A lecture
    cell (a code cell of the distributed notebook, unchanged) runs when it binds or changes a name that a later
    running cell or the tests read, or when it changes state no name shows; the names it reads are then needed
    too. Walked from the last cell to the first, so each lecture cell is decided on what runs after it."""
    lecture = {c.source.strip() for c in code_cells(reference)
               if not {"exercise", "check"} & set(c.metadata.get("tags", []))}
    imported = set()  # a module or an imported name: changing it (os.environ[...] = ..., tl.x = ...) is global state
    for cell in code_cells(reference):
        try:
            imported |= {(a.asname or a.name).split(".")[0] for node in ast.walk(ast.parse(cell.source))
                         if isinstance(node, ast.Import | ast.ImportFrom) for a in node.names}
        except SyntaxError:
            continue
    needed = names_the_tests_read(chapter)
    run = [False] * len(nb.cells)
    for n in reversed(range(len(nb.cells))):
        cell = nb.cells[n]
        if cell.cell_type != "code":
            continue
        use = cell_use(cell.source)
        is_lecture = cell.source.strip() in lecture and "exercise" not in cell.metadata.get("tags", [])
        if not is_lecture or use.always or (use.binds | use.changes) & needed or use.changes & imported:
            run[n] = True
            needed |= use.reads | use.changes
    return run


# ---- the sandbox ------------------------------------------------------------------------------------------------

RUNNING: set[int] = set()  # the process groups of the sandboxes running now (one per job), to stop on Ctrl-C
INSIDE = Path("/tmp/grade")  # in the sandbox: in/ (read-only: the notebook, the tests), notebooks/ (the kernel's cwd)
BWRAP_MISSING = ("grade: bubblewrap (`bwrap`) is needed to run students' notebooks in a sandbox and was not found: "
                 "install it (sudo apt-get install bubblewrap) and run again")


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Each process in the sandbox gets the memory, CPU and file-size limits."""

    timeout: int = 60  # seconds one cell may run before it is interrupted
    limit: int = 900  # seconds the whole submission may take (wall clock), then it is stopped
    memory_gb: float = 6.0  # address space of each process (the kernel, the runner), GiB
    output_mb: float = 10.0  # printed output the runner keeps count of; the rest is dropped
    file_mb: int = 64  # the largest file a process may write
    tmp_mb: int = 512  # the sandbox's /tmp, in memory
    jobs: int = 1  # submissions graded at once, each in its own sandbox

    def __post_init__(self):
        for name in ("timeout", "limit", "memory_gb", "output_mb", "file_mb", "tmp_mb", "jobs"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise SystemExit(f"grade: --{name.split('_')[0]} must be a positive number, not {value!r}")

    def rlimits(self) -> list[tuple[int, int]]:
        """(resource, value) for each limit, no higher than this process's own hard limit."""
        memory = int(self.memory_gb * 2**30)
        cpu = int(self.limit * (os.cpu_count() or 1))  # CPU seconds: a kernel with n threads uses n per wall second
        out = []
        for kind, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_CORE, 0),
                            (resource.RLIMIT_FSIZE, self.file_mb * 2**20), (resource.RLIMIT_NPROC, 4096)):
            hard = resource.getrlimit(kind)[1]
            out.append((kind, value if hard == resource.RLIM_INFINITY else min(value, hard)))
        return out  # RLIMIT_NPROC counts the user's processes; root is exempt

    def applier(self):
        """The function that sets the limits in the sandbox's first process (its children inherit them), between
        fork and exec: it only calls setrlimit on values computed here, as is safe with the grader's threads."""
        values = self.rlimits()

        def apply() -> None:
            for kind, value in values:
                resource.setrlimit(kind, (value, value))

        return apply


def require_bwrap() -> None:
    """Stop with what to do when bubblewrap is missing or cannot make a sandbox here."""
    if shutil.which("bwrap") is None:
        sys.exit(BWRAP_MISSING)
    done = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"grade: bubblewrap cannot make a sandbox here ({done.stderr.strip()}): it needs user namespaces "
                 "(sysctl kernel.unprivileged_userns_clone=1) or root; in a container, allow them")


def needed_paths() -> list[Path]:
    """What the sandbox must see (read-only): the checkout (teachllm, this script), Python and the venv, the model
    caches."""
    from teachllm.checkpoints.convert import cache_dir

    hf_home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
    paths = [ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent, cache_dir(), hf_home]
    return [p.resolve() for p in paths if p.exists()]


def hidden_paths(folder: Path) -> list[Path]:
    """What the sandbox must not see although / is there read-only: the submissions (and output) folder, the
    course's full tests, solutions, test suite, history and instructor edition. Under /tmp only what is under a
    needed path bound again: the rest of /tmp is a fresh one."""
    paths = [folder.resolve(), TESTS.parent, SOLUTIONS, ROOT / "tests", ROOT / ".git", ROOT / "book" / "_build"]
    again = [p for p in needed_paths() if p.is_relative_to("/tmp")]
    return [p for p in paths if p.is_dir() and (not p.is_relative_to("/tmp") or any(p.is_relative_to(a)
                                                                                     for a in again))]


def check_folder_placement(folder: Path) -> None:
    """The submissions folder is hidden in the sandbox: it must not hold the course or Python themselves."""
    needed = [ROOT, Path(sys.prefix).resolve(), Path(sys.executable).resolve()]
    if any(p.is_relative_to(folder.resolve()) for p in needed):
        sys.exit(f"grade: {folder} holds the course's checkout or its Python, which the sandbox hides with the "
                 "submissions: put the submissions in a folder of their own (make grade SUBMISSIONS=path/to/folder)")


def sandbox_env(limits: Limits) -> dict[str, str]:
    """The environment inside: the model's settings and a private home, nothing else of the grader's. Each of the
    --jobs submissions running at once gets its share of the CPUs as torch's threads (unless OMP_NUM_THREADS is
    set), so that they do not fight over the cores."""
    from teachllm.checkpoints.convert import cache_dir

    keep = {k: v for k, v in os.environ.items()
            if k in ("PATH", "LANG", "LC_ALL", "TZ") or k.startswith(("TEACHLLM_", "OMP_", "MKL_"))}
    keep.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // limits.jobs)))
    hf_home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return {**keep, "HOME": "/tmp/home", "TMPDIR": "/tmp", "TEACHLLM_CACHE": str(cache_dir().resolve()),
            "HF_HOME": hf_home, "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def bwrap_command(inputs: Path, folder: Path, lang: str, limits: Limits, inner: list[str]) -> list[str]:
    """bwrap's arguments: / read-only, a fresh /tmp, /dev and /proc, the hidden folders covered, the inputs
    read-only at /tmp/grade/in, the public checks where the chapter's notebook finds them, no network, a PID
    namespace of its own that ends when its first process ends or the grader dies."""
    cwd = INSIDE / "notebooks" if lang == "en" else INSIDE / "notebooks" / lang
    command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
               "--size", str(limits.tmp_mb * 2**20), "--tmpfs", "/tmp"]
    for path in needed_paths():
        if path.is_relative_to("/tmp"):  # a checkout or venv under /tmp: seen again, read-only
            command += ["--ro-bind", str(path), str(path)]
    for path in hidden_paths(folder):
        command += ["--tmpfs", str(path), "--remount-ro", str(path)]
    command += ["--ro-bind", str(inputs), str(INSIDE / "in"), "--dir", str(cwd), "--dir", "/tmp/home",
                "--ro-bind", str(NOTEBOOKS / "checks"), str(INSIDE / "notebooks" / "checks"),
                "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--chdir", str(cwd), "--", *inner]
    return command


def runnable(nb, run: list[bool] | None = None) -> nbformat.NotebookNode:
    """The copy that runs: the cells `run` names (default all; otter's ignore tags and cell settings dropped), no
    old outputs."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    if run is not None:
        nb.cells = [c for c, keep in zip(nb.cells, run, strict=True) if keep or c.cell_type != "code"]
    for cell in nb.cells:
        cell.metadata.pop("otter", None)
        if "tags" in cell.metadata:
            cell.metadata["tags"] = [t for t in cell.metadata["tags"] if t != "otter_ignore"]
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def run_sandboxed(nb, chapter: str, lang: str, folder: Path, limits: Limits,
                  run: list[bool] | None = None) -> tuple[dict | None, str | None]:
    """Run the notebook with the chapter's full tests in a sandbox: (the runner's raw results, None) or
    (None, why there are none). The log (the runner's and the kernel's stderr) goes to the grader's stderr."""
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        inputs = Path(tmp) / "in"
        (inputs / "tests").mkdir(parents=True)
        for test in test_files(chapter):
            shutil.copyfile(test, inputs / "tests" / test.name)
        nbformat.write(runnable(nb, run), inputs / "submission.ipynb")
        with open(Path(tmp) / "result.json", "wb+") as result, open(Path(tmp) / "log.txt", "wb+") as log:
            inner = [sys.executable, str(Path(__file__).resolve()), "--one", str(INSIDE / "in" / "submission.ipynb"),
                     "--chapter", chapter, "--tests", str(INSIDE / "in" / "tests"), "--timeout", str(limits.timeout),
                     "--output", str(limits.output_mb), "--out-fd", str(result.fileno())]
            process = subprocess.Popen(bwrap_command(inputs, folder, lang, limits, inner), stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=log, pass_fds=(result.fileno(),), env=sandbox_env(limits),
                                       preexec_fn=limits.applier(), start_new_session=True)
            RUNNING.add(process.pid)
            try:
                process.wait(timeout=limits.limit)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # bwrap; --die-with-parent ends every process inside
                process.wait()
                return None, f"the notebook did not finish within {limits.limit} s"
            finally:
                RUNNING.discard(process.pid)
            result.seek(0)
            text = result.read(2**20).decode("utf-8", "replace")
            log.seek(max(0, log.seek(0, os.SEEK_END) - 2000))
            tail = "".join(c if c.isprintable() or c == "\n" else "?" for c in log.read().decode("utf-8", "replace"))
    try:
        return json.loads(text), None
    except json.JSONDecodeError:
        print(f"    the sandbox ended (exit code {process.returncode}) without results; its log ends:\n{tail}",
              file=sys.stderr)
        return None, (f"the grading run stopped (exit code {process.returncode}) without results, for example "
                      "out of memory: run the notebook top to bottom in Jupyter and make it finish")


# ---- grading: the runner in the sandbox, the checks outside ----------------------------------------------------

def run_one(path: Path, chapter: str, tests: Path, timeout: int, output_mb: float) -> dict:
    """In the sandbox: run one submission with the chapter's full tests (otter's grade_notebook starts the kernel)
    and return {"exercises": {name: {"points", "messages"}}, "stopped", "printed"}. Printed output is counted and
    dropped (the results come from otter's own file), so a print loop does not fill the runner's memory."""
    import nbclient.client
    import otter.execute
    from nbclient.exceptions import DeadKernelError
    from otter.execute import grade_notebook
    from traitlets.config import Config

    from teachllm.course.grading import failure_message

    printed = [0]

    def count_and_drop(self, outs, msg, display_id, cell_index):  # nbclient's NotebookClient.output, keeping nothing
        if msg.get("msg_type") == "stream":
            printed[0] += len(msg.get("content", {}).get("text", ""))

    nbclient.client.NotebookClient.output = count_and_drop
    # grade_notebook builds its own traitlets Config and takes no cell time limit: give it one with ours in it
    otter.execute.Config = lambda: Config(ExecutePreprocessor={"timeout": timeout, "interrupt_on_timeout": True})
    files = sorted(tests.glob(f"ch{chapter}-ex*.py"), key=lambda p: int(p.stem.split("-ex")[1]))
    try:
        results = grade_notebook(str(path), tests_glob=[str(p) for p in files], test_dir=str(tests),
                                 ignore_errors=True)
    except DeadKernelError:
        return {"exercises": {}, "stopped": True, "printed": printed[0]}
    out = {}
    for test in files:
        try:
            tf = results.get_result(test.stem)
        except (KeyError, AttributeError):
            continue
        messages = list(dict.fromkeys(failure_message(r.message) for r in tf.test_case_results if not r.passed))
        out[test.stem] = {"points": float(tf.score), "messages": messages}
    return {"exercises": out, "stopped": False, "printed": printed[0]}


def checked(raw, exercises: dict) -> dict:
    """The runner's results, checked before they count: known exercises, points from 0 to the exercise's maximum,
    messages as text. Raises ValueError naming what is wrong."""
    if not isinstance(raw, dict) or not isinstance(raw.get("exercises"), dict):
        raise ValueError("not an object with exercises")
    out = {}
    for name, entry in raw["exercises"].items():
        if name not in exercises or not isinstance(entry, dict):
            raise ValueError(f"an unknown exercise {name!r}")
        points, messages = entry.get("points"), entry.get("messages")
        if isinstance(points, bool) or not isinstance(points, int | float) or not 0 <= points <= exercises[name]["max"]:
            raise ValueError(f"{name}: points {points!r} outside 0 to {exercises[name]['max']:g}")
        if not isinstance(messages, list) or not all(isinstance(m, str) for m in messages):
            raise ValueError(f"{name}: messages that are not a list of text")
        out[name] = {"points": float(points), "messages": messages}
    return out


def scrubber(chapter: str):
    """A function that removes from a failure message every line that names a test file or its folder, or repeats
    a line of the chapter's test files (so no hidden case's code or expected value is quoted), and shortens it."""
    files = test_files(chapter)
    secret = {s for t in files for line in t.read_text(encoding="utf-8").splitlines() if len(s := line.strip()) >= 12}
    markers = [str(TESTS), str(INSIDE), "grading/tests", "@test_case", "env[", "env.get(", *(t.name for t in files)]

    def scrub(message: str) -> str:
        lines = [line for line in message.splitlines()
                 if line.strip() not in secret and not any(m in line for m in markers)]
        text = "\n".join(lines).strip()
        return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " […]"

    return scrub


STOPPED = ("your notebook stopped the Python kernel (os._exit, a crash, or running out of memory), so no check could "
           "run: run it top to bottom in Jupyter, find the cell after which the kernel restarts, and fix it")


def grade_submission(nb, folder: Path, limits: Limits, notebooks: Path = NOTEBOOKS) -> dict:
    """Grade one notebook: {"chapter", "lang", "exercises": {name: {"points", "max", "messages", "status"}},
    "notes", "review"}."""
    chapter, lang = identify(nb, notebooks)
    if chapter is None:
        return {"chapter": None, "lang": lang, "exercises": {}, "notes": [], "review": []}
    exercises = {t.stem: {"points": 0.0, "max": max_points(t), "messages": [], "status": "graded"}
                 for t in test_files(chapter)}
    reference = nbformat.read(distributed(chapter, lang, notebooks), as_version=4)
    touched = tampering(nb, reference)
    raw, problem = run_sandboxed(nb, chapter, lang, folder, limits, cells_to_run(nb, reference, chapter))
    ran, notes = {}, []
    if raw is not None and isinstance(raw, dict) and raw.get("stopped") is True:
        problem = STOPPED
    elif raw is not None:
        try:
            ran = checked(raw, exercises)
        except ValueError as error:
            problem = f"the grading run returned results the grader does not accept ({error})"
        printed = raw.get("printed") if isinstance(raw, dict) and isinstance(raw.get("printed"), int) else 0
        if printed > limits.output_mb * 2**20:
            notes.append(f"The notebook printed {printed / 2**20:.0f} MB; the grader keeps none of it (more than "
                         f"{limits.output_mb:g} MB slows grading: print less).")
    scrub = scrubber(chapter)
    for name, entry in exercises.items():
        if problem:
            entry.update(status="not graded", messages=[problem])
        elif name in touched or "*" in touched:
            entry.update(status="tampered", messages=touched.get(name, []) + touched.get("*", []))
        elif name in ran:
            messages = [s for m in ran[name]["messages"] if (s := scrub(m))][:MESSAGES]
            if not messages and ran[name]["points"] < entry["max"]:
                messages = ["a check failed; its message quoted the tests and is not shown"]
            entry.update(points=ran[name]["points"], messages=messages)
        else:
            entry.update(messages=["the checks of this exercise did not run"])
    return {"chapter": chapter, "lang": lang, "exercises": exercises, "notes": notes,
            "review": review(nb, reference, chapter)}


# ---- feedback and the folder's files ---------------------------------------------------------------------------

WORDS = {
    "en": {"title": "Feedback: {student}, chapter {chapter}", "total": "Total: {points:g} of {max:g} points",
           "exercise": "Exercise {k}: {points:g} / {max:g}", "passed": "All checks passed.",
           "tampered": "Not graded: a cell we distributed was changed or deleted. Restore it from the chapter's "
                       "notebook and submit again:", "not graded": "Not graded:", "graded": "What the checks found:",
           "unknown": "This notebook is not one of the course's chapters with graded exercises.",
           "unreadable": "Not graded: the file {file} {reason}."},
    "zh": {"title": "反馈：{student}，第 {chapter} 章", "total": "总分：{points:g} / {max:g}",
           "exercise": "练习 {k}：{points:g} / {max:g}", "passed": "全部检查通过。",
           "tampered": "未评分：分发的单元格被修改或删除了。请从本章的笔记本中恢复它，再重新提交：",
           "not graded": "未评分：", "graded": "检查发现的问题：",
           "unknown": "这个笔记本不是课程中带评分练习的章节。", "unreadable": "未评分：文件 {file} {reason}。"},
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
    lines += [*graded.get("notes", []), ""] if graded.get("notes") else []
    for name, e in entries.items():
        lines += [f"## {words['exercise'].format(k=name.split('-ex')[1], points=e['points'], max=e['max'])}", ""]
        if not e["messages"]:
            lines += [words["passed"], ""]
            continue
        lines += [words[e["status"]], ""]
        lines += [f"- {m}".replace("\n", "\n  ") for m in e["messages"]] + [""]
    return "\n".join(lines)


def check_outputs(folder: Path) -> None:
    """Stop before grading if the grader could not write its files safely: it never writes through a link."""
    for name in OUTPUTS:
        path = folder / name
        if path.is_symlink():
            sys.exit(f"grade: {path} is a link; the grader does not write through links: remove it (rm {path}) "
                     "and run again")
        if path.exists() and (path.is_dir() != (name == "feedback")):
            sys.exit(f"grade: {path} is a {'folder' if path.is_dir() else 'file'}, where the grader writes its "
                     f"{name}: move it away and run again")


def write_file(path: Path, text: str) -> None:
    """Write through a new temporary file and a rename: a link at `path` is replaced, never followed."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def csv_text(rows: list[list]) -> str:
    """CSV with every text cell that a spreadsheet would read as a formula (= + - @, a tab) quoted with '."""
    out = io.StringIO()
    csv.writer(out).writerows([[f"'{v}" if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v
                                for v in row] for row in rows])
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="a folder of submitted .ipynb files")
    parser.add_argument("--timeout", type=int, default=60, help="seconds a cell may run before it is interrupted")
    parser.add_argument("--limit", type=int, default=900, help="seconds one whole submission may take")
    parser.add_argument("--memory", type=float, default=6.0, help="GiB of memory each process of a submission "
                        "may reserve (address space)")
    parser.add_argument("--output", type=float, default=10.0, help="MB of printed output a submission may make "
                        "before its feedback says so (none is kept)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="submissions graded at once, each in its own sandbox (default: the number of CPUs)")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS,
                        help="the folder of the notebooks as distributed (default: notebooks/; a test's own)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # internal: the runner, in the sandbox
    parser.add_argument("--chapter", help=argparse.SUPPRESS)
    parser.add_argument("--tests", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out-fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.one:
        try:
            result = run_one(args.one, args.chapter, args.tests, args.timeout, args.output)
        except Exception as error:  # the grader outside reads no results and says so
            print(f"grade --one: {type(error).__name__}: {error}", file=sys.stderr)
            raise
        with os.fdopen(args.out_fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(result))
        return
    if args.folder is None or not args.folder.is_dir():
        sys.exit(f"grade: {args.folder} is not a folder of submitted notebooks (make grade SUBMISSIONS=folder)")
    limits = Limits(timeout=args.timeout, limit=args.limit, memory_gb=args.memory, output_mb=args.output,
                    jobs=args.jobs)
    check_outputs(args.folder)
    check_folder_placement(args.folder)
    require_bwrap()
    submissions, skipped = find_submissions(args.folder)
    if not submissions and not skipped:
        sys.exit(f"grade: no .ipynb files in {args.folder} (nor in a folder per student)")
    for name, reason in skipped:
        print(f"grade: {name}: {reason}", file=sys.stderr)
    (args.folder / "feedback").mkdir(exist_ok=True)
    done, lock = [0], threading.Lock()

    def attempt(student: str, path: Path) -> tuple[dict | None, str | None]:
        """(what grade_submission returned, None), or (None, why it was not graded); prints one line of progress."""
        start, file = time.perf_counter(), str(path.relative_to(args.folder))
        graded, reason = None, None
        try:
            graded = grade_submission(read_submission(path), args.folder, limits, args.notebooks)
            exercises = graded["exercises"]
            marks = [f"{name} {e['points']:g}/{e['max']:g}" + ("" if e["status"] == "graded" else f" {e['status']}")
                     for name, e in exercises.items()]
            line = (f"{', '.join(marks) or 'no graded chapter found'} ({time.perf_counter() - start:.0f} s)"
                    + (f"; to review: {'; '.join(graded['review'])}" if graded.get("review") else ""))
        except Unreadable as error:
            graded, line = {"chapter": None, "lang": "en", "unreadable": str(error)}, f"skipped: {file} {error}"
        except Exception as error:  # a file nobody foresaw, or a bug: this student is reported, the batch goes on
            reason = f"the grader failed on it ({type(error).__name__}: {error}); grade it by hand"
            line = f"skipped: {file}: {reason}"
        with lock:
            done[0] += 1
            print(f"[{done[0]}/{len(submissions)}] {student}: {line}", file=sys.stderr, flush=True)
        return graded, reason

    pool = ThreadPoolExecutor(max_workers=limits.jobs)  # each thread waits on its own sandbox
    try:
        results = list(pool.map(lambda entry: attempt(*entry), submissions))
    except KeyboardInterrupt:  # stop every sandbox now rather than wait for them
        pool.shutdown(wait=False, cancel_futures=True)
        for pid in list(RUNNING):
            os.killpg(pid, signal.SIGKILL)
        sys.exit("grade: interrupted; nothing written")
    pool.shutdown()
    rows, totals, flagged = [], [], []
    for (student, path), (graded, reason) in zip(submissions, results, strict=True):
        file = str(path.relative_to(args.folder))
        if graded is None:
            skipped.append((file, reason))
            continue
        if "unreadable" in graded:
            skipped.append((file, graded["unreadable"]))
            text = f"# {student}\n\n{WORDS['en']['unreadable'].format(file=file, reason=graded['unreadable'])}\n"
        else:
            text = feedback(student, graded)
        try:
            write_file(args.folder / "feedback" / f"{student}.md", text)
        except OSError as error:  # feedback/<student>.md is a folder, say
            skipped.append((file, f"graded, but its feedback could not be written ({error}): move that path away"))
        exercises = graded.get("exercises", {})
        for name, e in exercises.items():
            rows.append([student, name, f"{e['points']:g}", f"{e['max']:g}"])
        if exercises:
            totals.append([student, f"{sum(e['points'] for e in exercises.values()):g}",
                           f"{sum(e['max'] for e in exercises.values()):g}"])
        flagged += [[student, reason] for reason in graded.get("review", [])]
    write_file(args.folder / "grades.csv", csv_text([["student", "exercise", "points", "max_points"], *rows]))
    write_file(args.folder / "totals.csv", csv_text([["student", "points", "max_points"], *totals]))
    write_file(args.folder / "skipped.csv", csv_text([["file", "reason"], *skipped]))
    write_file(args.folder / "review.csv", csv_text([["student", "reason"], *flagged]))
    print(f"grade: wrote {args.folder / 'grades.csv'} ({len(totals)} students graded, {len(skipped)} files skipped: "
          f"skipped.csv; {len(flagged)} cells to review: review.csv) and feedback in {args.folder / 'feedback'}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
