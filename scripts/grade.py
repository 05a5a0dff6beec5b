"""Grade a folder of submitted chapter notebooks, offline: `make grade SUBMISSIONS=folder`.

    python scripts/grade.py submissions/              # every .ipynb in it, or in a folder per student
    python scripts/grade.py submissions/ --timeout 60 --limit 900 --memory 6

A student is a notebook's file name (alice.ipynb, alice.IPYNB), or the name of a folder holding their notebook
(alice/ch06.ipynb; with several notebooks, alice-ch06). Names are compared in Unicode NFC.

For each submission: read it (a file that is not a readable notebook is skipped, with the reason, and the batch
goes on), find its chapter (the notebook's metadata, else the distributed notebook it matches best), check that
the cells we distributed are unchanged, then run it with the chapter's full tests (notebooks/grading/tests/
chNN-exK.py, hidden cases included) through otter-grader's library, `otter.execute.grade_notebook`.

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
import sys
import tempfile
import time
import unicodedata
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


# ---- the sandbox ------------------------------------------------------------------------------------------------

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

    def __post_init__(self):
        for name in ("timeout", "limit", "memory_gb", "output_mb", "file_mb", "tmp_mb"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise SystemExit(f"grade: --{name.split('_')[0]} must be a positive number, not {value!r}")

    def apply(self) -> None:
        """Set the limits on this process (the sandbox's first process; its children inherit them)."""
        memory = int(self.memory_gb * 2**30)
        cpu = self.limit * (os.cpu_count() or 1)  # CPU seconds: a kernel with n threads uses n per wall second
        for kind, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_CORE, 0),
                            (resource.RLIMIT_FSIZE, self.file_mb * 2**20), (resource.RLIMIT_NPROC, 4096)):
            soft, hard = resource.getrlimit(kind)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))  # RLIMIT_NPROC counts the user's processes; root is exempt


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


def sandbox_env() -> dict[str, str]:
    """The environment inside: the model's settings and a private home, nothing else of the grader's."""
    from teachllm.checkpoints.convert import cache_dir

    keep = {k: v for k, v in os.environ.items()
            if k in ("PATH", "LANG", "LC_ALL", "TZ") or k.startswith(("TEACHLLM_", "OMP_", "MKL_"))}
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


def runnable(nb) -> nbformat.NotebookNode:
    """The copy that runs: every cell (otter's ignore tags and cell settings dropped), no old outputs."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for cell in nb.cells:
        cell.metadata.pop("otter", None)
        if "tags" in cell.metadata:
            cell.metadata["tags"] = [t for t in cell.metadata["tags"] if t != "otter_ignore"]
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def run_sandboxed(nb, chapter: str, lang: str, folder: Path, limits: Limits) -> tuple[dict | None, str | None]:
    """Run the notebook with the chapter's full tests in a sandbox: (the runner's raw results, None) or
    (None, why there are none). The log (the runner's and the kernel's stderr) goes to the grader's stderr."""
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        inputs = Path(tmp) / "in"
        (inputs / "tests").mkdir(parents=True)
        for test in test_files(chapter):
            shutil.copyfile(test, inputs / "tests" / test.name)
        nbformat.write(runnable(nb), inputs / "submission.ipynb")
        with open(Path(tmp) / "result.json", "wb+") as result, open(Path(tmp) / "log.txt", "wb+") as log:
            inner = [sys.executable, str(Path(__file__).resolve()), "--one", str(INSIDE / "in" / "submission.ipynb"),
                     "--chapter", chapter, "--tests", str(INSIDE / "in" / "tests"), "--timeout", str(limits.timeout),
                     "--output", str(limits.output_mb), "--out-fd", str(result.fileno())]
            process = subprocess.Popen(bwrap_command(inputs, folder, lang, limits, inner), stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=log, pass_fds=(result.fileno(),), env=sandbox_env(),
                                       preexec_fn=limits.apply, start_new_session=True)
            try:
                process.wait(timeout=limits.limit)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # bwrap; --die-with-parent ends every process inside
                process.wait()
                return None, f"the notebook did not finish within {limits.limit} s"
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
    raw, problem = run_sandboxed(nb, chapter, lang, folder, limits)
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
    limits = Limits(timeout=args.timeout, limit=args.limit, memory_gb=args.memory, output_mb=args.output)
    check_outputs(args.folder)
    check_folder_placement(args.folder)
    require_bwrap()
    submissions, skipped = find_submissions(args.folder)
    if not submissions and not skipped:
        sys.exit(f"grade: no .ipynb files in {args.folder} (nor in a folder per student)")
    for name, reason in skipped:
        print(f"grade: {name}: {reason}", file=sys.stderr)
    (args.folder / "feedback").mkdir(exist_ok=True)
    rows, totals, flagged = [], [], []
    for n, (student, path) in enumerate(submissions, start=1):
        start, file = time.perf_counter(), str(path.relative_to(args.folder))
        try:
            graded = grade_submission(read_submission(path), args.folder, limits, args.notebooks)
        except Unreadable as error:
            skipped.append((file, str(error)))
            print(f"[{n}/{len(submissions)}] {student}: skipped: {file} {error}", file=sys.stderr)
            graded = {"chapter": None, "lang": "en", "unreadable": str(error)}
        except Exception as error:  # a file nobody foresaw, or a bug: this student is reported, the batch goes on
            reason = f"the grader failed on it ({type(error).__name__}: {error}); grade it by hand"
            skipped.append((file, reason))
            print(f"[{n}/{len(submissions)}] {student}: skipped: {file}: {reason}", file=sys.stderr)
            continue
        if "unreadable" in graded:
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
        if "unreadable" in graded:
            continue
        marks = [f"{name} {e['points']:g}/{e['max']:g}" + ("" if e["status"] == "graded" else f" {e['status']}")
                 for name, e in exercises.items()]
        seconds = time.perf_counter() - start
        print(f"[{n}/{len(submissions)}] {student}: {', '.join(marks) or 'no graded chapter found'} ({seconds:.0f} s)"
              + (f"; to review: {'; '.join(graded['review'])}" if graded.get("review") else ""), file=sys.stderr)
    write_file(args.folder / "grades.csv", csv_text([["student", "exercise", "points", "max_points"], *rows]))
    write_file(args.folder / "totals.csv", csv_text([["student", "points", "max_points"], *totals]))
    write_file(args.folder / "skipped.csv", csv_text([["file", "reason"], *skipped]))
    write_file(args.folder / "review.csv", csv_text([["student", "reason"], *flagged]))
    print(f"grade: wrote {args.folder / 'grades.csv'} ({len(totals)} students graded, {len(skipped)} files skipped: "
          f"skipped.csv; {len(flagged)} cells to review: review.csv) and feedback in {args.folder / 'feedback'}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
