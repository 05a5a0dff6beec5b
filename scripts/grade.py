"""Grade a folder of submitted chapter notebooks, offline: `make grade SUBMISSIONS=folder`.

    python scripts/grade.py submissions/              # every .ipynb in it, or in a folder per student
    python scripts/grade.py submissions/ --timeout 60 --limit 900 --memory 6 --jobs 2

A student is a notebook's file name (alice.ipynb, alice.IPYNB), or the name of a folder holding their notebook
(alice/ch06.ipynb; with several notebooks, alice-ch06). Names are compared in Unicode NFC.

For each submission: read it (a file that is not a readable notebook is skipped, with the reason, and the batch
goes on), find its chapter (the notebook's metadata, else the distributed notebook it matches best), check that
the cells we distributed are unchanged, run the cells grading needs (below) in a sandbox, and then run the
chapter's full tests (notebooks/grading/tests/chNN-exK.py, otter's format, hidden cases included) here, outside
the sandbox. --jobs submissions (default: one per CPU) are graded at once, each in its own sandbox with its share
of the CPUs as torch threads.

The trust boundary (scripts/grade_sandbox.py). The student's code runs only in the sandbox; the tests run only in
this process, on a pristine teachllm: their `env` is the notebook's globals asked of the sandbox one name at a
time, their `env["lm"]` is this process's own model (loaded once per run), and a student's function given inputs
by a test runs in the sandbox and sends back its result. What crosses is data, as JSON (teachllm.course.answers:
numbers, text, lists, sets, dicts, tensors and numpy arrays byte for byte, teachllm's dataclasses rebuilt by their
constructors; nothing pickled, no code); the inputs go in, the answers come out, and the expected values are
computed and compared here, never in the sandbox, which sees no test file. So code in a submission can change its
own answers and nothing else: not the tests, the library they compute with, the model, the points, or another
student's grading (each has its own sandbox; this process keeps only what the pristine side computed). A
failure message is a test's own assertion text, the error the student's code raised, or, for an error in a test's
code, only its type: never a test's source or an expected value.

What runs. A lecture cell (a code cell of the distributed notebook, found unchanged in the submission) is checked
for tampering, and run only when the exercises need it; everything else runs. Precisely, read from the code
(Python's own scope analysis, `symtable`, and the syntax tree), walking from the last cell to the first:
- always run: exercise cells and every cell the student added or changed (their code is what is graded; a changed
  lecture cell is tampering anyway). The check cells are lecture cells: the grader's tests do their work;
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
/tmp holding a copy of the notebook, the rest of the machine read-only, the submissions folder, the course's
tests, solutions and test suite not visible at all, no network, its own process namespace (every process it
starts ends with it), and limits on memory (--memory), CPU time, file size and printed output. Inside, only
scripts/grade_runner.py runs: it runs the notebook's cells in one IPython shell, then answers the grader's
questions about its globals through two pipes.

- A cell, or a call of a student's function, that runs longer than --timeout seconds is interrupted and grading
  goes on; a submission that takes longer than --limit in all is stopped and scores zero, with the reason in its
  feedback, as does one whose sandbox ends early (os._exit, a crash, out of memory).
- An error in one exercise's cell fails that exercise's checks only.
- A changed or deleted distributed code cell marks the exercise it checks (a check cell) or every exercise (any
  other cell) as tampered: zero points, with the cell named in the feedback. Markdown cells are not compared.

Writes, in the folder: grades.csv (student,exercise,points,max_points: one row per student and exercise),
totals.csv (student,points,max_points), skipped.csv (file,reason: what was not graded and why), review.csv
(student,reason: code a lecturer may want to read, such as a cell that imports otter or rebinds `lm`: a
heuristic, not a defence, since such code can change only the submission's own answers) and
feedback/<student>.md (points and failure messages per exercise, in the notebook's language). Progress goes to
stderr.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import os
import re
import signal
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grade_sandbox as sandbox  # noqa: E402  (scripts/ is not a package)

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


def max_points(path: Path) -> float:
    """The points a test file is worth: the sum over its test cases."""
    return float(sum(tc.points for tc in sandbox.test_file(path).test_cases))


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


def tampering(nb, reference) -> dict[str, list[str]]:
    """Which distributed code cells a submission changed or deleted: exercise name (or "*" for all) → the cells.

    A cell is found by its id (Jupyter keeps ids): a cell with that id must hold the same code. A cell whose id is
    gone is found by its text anywhere in the notebook. Exercise cells are the student's to change and are skipped;
    cells a student added are not checked (review() reads them)."""
    cells = code_cells(nb)
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
    """Code in a submission that a lecturer may want to read, because it reaches for the grading machinery or
    rewrites what the chapter gives: importing otter or ctypes, exec and friends, changing an attribute of a module
    the chapter imports (tl.bpe.train_bpe = ...), or assigning a name that the chapter's cells define and the
    tests read (lm). Reads the cells that are not distributed unchanged. A heuristic, and no longer a defence: the
    tests run outside the student's Python (see the module's docstring), so such code changes only the student's
    own answers. It flags, it never changes a score, and code written to hide from it is not found."""
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
                        found.append(f"cell {n} rebinds {ast.unparse(node)}")
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


def cells_to_run(nb, reference, chapter: str, checks: bool = False) -> list[bool]:
    """For each cell of the submission, whether the grader runs it (see the module's docstring, "What runs");
    checks=True: the check cells run too, as the student's always do (the instructor edition shows their ✓).

    The student's cells (exercise cells, cells they added or changed) always run. A lecture cell (a code cell of
    the distributed notebook, unchanged; the check cells too, whose work the grader's own tests do) runs when it
    binds or changes a name that a later running cell or the tests read, or when it changes state no name shows;
    the names it reads are then needed too. Walked from the last cell to the first, so each lecture cell is decided
    on what runs after it."""
    mine = {"exercise", "check"} if checks else {"exercise"}
    lecture = {c.source.strip() for c in code_cells(reference) if not mine & set(c.metadata.get("tags", []))}
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


# ---- the copy that runs in the sandbox ---------------------------------------------------------------------------

def runnable(nb, run: list[bool] | None = None) -> nbformat.NotebookNode:
    """The copy that runs: the cells `run` names (default all), no old outputs."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    if run is not None:
        nb.cells = [c for c, keep in zip(nb.cells, run, strict=True) if keep or c.cell_type != "code"]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


STOPPED = ("your notebook stopped the Python kernel (os._exit, a crash, or running out of memory), so no check could "
           "run: run it top to bottom in Jupyter, find the cell after which the kernel restarts, and fix it")


def grade_submission(nb, folder: Path, limits: sandbox.Limits, notebooks: Path = NOTEBOOKS) -> dict:
    """Grade one notebook: {"chapter", "lang", "exercises": {name: {"points", "max", "messages", "status"}},
    "notes", "review"}."""
    chapter, lang = identify(nb, notebooks)
    if chapter is None:
        return {"chapter": None, "lang": lang, "exercises": {}, "notes": [], "review": []}
    exercises = {t.stem: {"points": 0.0, "max": max_points(t), "messages": [], "status": "graded"}
                 for t in test_files(chapter)}
    reference = nbformat.read(distributed(chapter, lang, notebooks), as_version=4)
    touched = tampering(nb, reference)
    ran, problem, notes = {}, None, []
    box = sandbox.Sandbox(runnable(nb, cells_to_run(nb, reference, chapter)), lang, folder, limits)
    try:
        with box:
            ran = sandbox.run_tests(box, test_files(chapter), lang)
            box.end()
    except sandbox.SandboxGone as error:
        if box.left() > 0:  # it ended or broke off, rather than ran out of time
            print(f"    the sandbox stopped answering ({error}); its log ends:\n{box.log_tail}", file=sys.stderr)
            problem = STOPPED
        else:
            problem = f"the notebook did not finish within {limits.limit} s"
    if box.printed > limits.output_mb * 2**20:
        notes.append(f"The notebook printed {box.printed / 2**20:.0f} MB; the grader keeps none of it (more than "
                     f"{limits.output_mb:g} MB slows grading: print less).")
    for name, entry in exercises.items():
        if problem:
            entry.update(status="not graded", messages=[problem])
        elif name in touched or "*" in touched:
            entry.update(status="tampered", messages=touched.get(name, []) + touched.get("*", []))
        else:
            messages = [shorten(m) for m in ran[name]["messages"] if m][:MESSAGES]
            entry.update(points=ran[name]["points"], messages=messages)
    return {"chapter": chapter, "lang": lang, "exercises": exercises, "notes": notes,
            "review": review(nb, reference, chapter)}


def shorten(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS] + " […]"


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
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.folder is None or not args.folder.is_dir():
        sys.exit(f"grade: {args.folder} is not a folder of submitted notebooks (make grade SUBMISSIONS=folder)")
    limits = sandbox.Limits(timeout=args.timeout, limit=args.limit, memory_gb=args.memory, output_mb=args.output,
                    jobs=args.jobs)
    check_outputs(args.folder)
    sandbox.check_folder_placement(args.folder)
    sandbox.require_bwrap()
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
        for pid in list(sandbox.RUNNING):
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
