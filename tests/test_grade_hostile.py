"""The grader (scripts/grade.py) against hostile and broken submissions: one grader run over one folder holding
every case (unreadable files, odd names, a notebook that probes its sandbox, one that attacks the machine and kills
its kernel) and one ordinary submission, whose score must be what tests/test_grading.py expects of it; then a few
runs that stop before grading (output links, bubblewrap missing)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
import uuid
from pathlib import Path

import nbformat
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
import grade  # noqa: E402  (scripts/ is not a package)
from test_grading import submission, trimmed_chapter  # noqa: E402

GRADE = ROOT / "scripts" / "grade.py"
CHAPTER = "06"  # the chapter tests/test_grading.py grades: its checks run in seconds
CHECKOUT_TEST = grade.TESTS / f"ch{CHAPTER}-ex2.py"
HIDDEN_LINE = "for seed, t, k in ((2, 0.5, 3), (3, 2.0, 10), (4, 1.3, 1)):"  # a hidden case's settings in ch06-ex2.py
NFC, NFD = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
BAD = {  # file name → its bytes (None: made below); each must be reported and the batch must go on
    "not-json.ipynb": b"hello", "empty.ipynb": b"", "list.ipynb": b"[1, 2]", "latin1.ipynb": b"\xff\xfe{}",
    "cells-text.ipynb": json.dumps({"cells": "abc", "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode(),
    "glob.ipynb": None, "french.ipynb": None, "meta-text.ipynb": None, "passwd.ipynb": None, "folder.ipynb": None,
}


def empty_notebook(**metadata) -> dict:
    return {"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


PROBE = '''# Exercise 1 (a probe of the sandbox)
import os, resource
def can(action):
    try:
        action()
        return 1
    except Exception:
        return 0
seen = {{"folder": int(os.path.isdir(r"{folder}") and bool(os.listdir(r"{folder}"))),
         "tests": int(os.path.exists(r"{checkout_test}")), "write": can(lambda: open(r"{checkout_test}", "a").close())}}
soft = resource.getrlimit(resource.RLIMIT_AS)[0]
seen["memlimit"], seen["memerror"] = int(soft != resource.RLIM_INFINITY), 0
if soft != resource.RLIM_INFINITY:
    try:
        bytearray(soft)
    except MemoryError:
        seen["memerror"] = 1
PROBE = "PROBE " + " ".join(f"{{k}}={{v}}" for k, v in seen.items())
def greedy_token_probability(logits, temperature):
    raise RuntimeError(PROBE)
'''

QUOTE = '''# Exercise 2 (quotes the hidden tests in its error, if it can read them)
def kept_after(logits, temperature, k=None, top_p=None):
    text = "no test file"
    for path in (r"{checkout_test}", "/tmp/grade/in/tests/ch06-ex2.py"):
        try:
            text = open(path).read()
            break
        except OSError:
            pass
    raise RuntimeError(text)
'''

ATTACK = '''import os, subprocess, sys
script = ("import sys, time\\nfor _ in range(240):\\n    for path in sys.argv[2:]:\\n        try:\\n"
          "            open(path, 'w').write('pwned')\\n        except OSError:\\n            pass\\n"
          "    time.sleep(0.5)")
subprocess.Popen(["setsid", sys.executable, "-c", script, "{token}", r"{escaped}", r"{grades}"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    open(r"{bob}", "w").write("pwned")
except OSError:
    pass
try:
    os.remove(r"{outside}")
except OSError:
    pass
os._exit(1)
'''


def hostile_notebooks(reference, folder: Path, tmp: Path, token: str) -> dict[str, nbformat.NotebookNode]:
    """The probe ("=2+5": a formula as a name) and the attacker ("mallory")."""
    every = set(range(1, len(grade.test_files(CHAPTER)) + 1))
    probe = submission(reference, CHAPTER, every, {
        1: PROBE.format(folder=folder, checkout_test=CHECKOUT_TEST),
        2: QUOTE.format(checkout_test=CHECKOUT_TEST)})
    n, check = next((n, c) for n, c in enumerate(probe.cells) if f'grader.check("ch{CHAPTER}-ex3")' in c.source)
    copy = nbformat.v4.new_code_cell(check.source, metadata={"tags": ["otter_ignore"]})  # the untouched copy
    check.source = 'print("all checks passed")'  # the real check cell, edited: tampering
    flood = nbformat.v4.new_code_cell('for _ in range(3000):\n    print("x" * 1000)')  # 3 MB printed
    bait = nbformat.v4.new_code_cell("import otter.test_files\ntl.SamplingParams = tl.SamplingParams")  # harmless
    probe.cells[n + 1:n + 1] = [copy, flood, bait]
    attacker = nbformat.v4.new_notebook(metadata={"teachllm": {"chapter": CHAPTER}})  # no model to load: quicker
    attacker.cells.append(nbformat.v4.new_code_cell(ATTACK.format(
        token=token, escaped=tmp / "escaped.txt", grades=folder / "grades.csv", bob=folder / "feedback" / "bob.md",
        outside=tmp / "outside.txt")))
    return {"=2+5": probe, "mallory": attacker}


def leftovers(token: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if token in (process.info["cmdline"] or []):
            found.append(process)
    return found


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One grader run over a folder holding every case; returns what the tests read."""
    if shutil.which("bwrap") is None and os.environ.get("CI") != "true":
        pytest.skip("bubblewrap is not installed (sudo apt-get install bubblewrap): the grader needs it")
    tmp = tmp_path_factory.mktemp("hostile")
    distributed, folder = tmp / "distributed", tmp / "submissions"
    distributed.mkdir()
    folder.mkdir()
    reference = trimmed_chapter(CHAPTER)
    nbformat.write(reference, distributed / grade.distributed(CHAPTER).name)
    for name, data in BAD.items():
        if data is not None:
            (folder / name).write_bytes(data)
    for name, metadata in (("glob", {"teachllm": {"chapter": "*"}}), ("french", {"language": "fr"}),
                           ("meta-text", {"teachllm": "06"}), ("alice.IPYNB", {}), (NFC, {}), (NFD, {})):
        path = folder / (name if name.endswith(".IPYNB") else f"{name}.ipynb")
        path.write_text(json.dumps(empty_notebook(**metadata)))
    (folder / "passwd.ipynb").symlink_to("/etc/passwd")
    (folder / "folder.ipynb").mkdir()
    (folder / "bob").mkdir()  # a folder per student: the ordinary submission, every exercise solved
    every = set(range(1, len(grade.test_files(CHAPTER)) + 1))
    nbformat.write(submission(reference, CHAPTER, every), folder / "bob" / "ch06.ipynb")
    token = f"grader-hostile-{uuid.uuid4().hex}"
    for student, nb in hostile_notebooks(reference, folder, tmp, token).items():
        nbformat.write(nb, folder / f"{student}.ipynb")
    (tmp / "outside.txt").write_text("a file outside the submissions folder")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(GRADE), str(folder), "--timeout", "30", "--limit", "300",
                           "--output", "1", "--notebooks", str(distributed)], capture_output=True, text=True)
    print(f"the grader took {time.perf_counter() - start:.0f} s\n{done.stderr}")
    time.sleep(2)  # a process left behind would write again by now
    yield {"folder": folder, "tmp": tmp, "done": done, "token": token, "leftovers": leftovers(token),
           "full": sum(grade.max_points(p) for p in grade.test_files(CHAPTER))}
    for process in leftovers(token):  # started by this test's attacker on a grader without a sandbox
        process.kill()


def feedback(graded, student: str) -> str:
    return (graded["folder"] / "feedback" / f"{student}.md").read_text(encoding="utf-8")


def totals(graded) -> dict[str, float]:
    out: dict[str, float] = {}
    for student, _, points, _ in read_csv(graded["folder"] / "grades.csv")[1:]:
        out[student] = out.get(student, 0) + float(points)
    return out


def test_each_bad_file_is_reported_on_its_own_and_the_batch_goes_on(graded):
    assert graded["done"].returncode == 0, graded["done"].stderr
    skipped = {name: reason for name, reason in read_csv(graded["folder"] / "skipped.csv")[1:]}
    for name in BAD:
        assert name in skipped, f"{name} is not in skipped.csv: {skipped}"
        assert any(name in line and "skipped" in line for line in graded["done"].stderr.splitlines()), name
    assert "link" in skipped["passwd.ipynb"] and "folder" in skipped["folder.ipynb"]
    assert "UTF-8" in skipped["latin1.ipynb"] and "'fr'" in skipped["french.ipynb"] and "'*'" in skipped["glob.ipynb"]
    assert "Traceback" not in graded["done"].stderr


def test_capital_ipynb_and_a_folder_per_student_are_graded(graded):
    assert "not one of the course's chapters" in feedback(graded, "alice")
    assert totals(graded)["bob"] == graded["full"], "the ordinary submission (every exercise solved) lost points"
    assert "All checks passed." in feedback(graded, "bob")


def test_names_are_nfc_and_spreadsheet_formulas_are_quoted(graded):
    names = sorted(p.stem for p in (graded["folder"] / "feedback").iterdir())
    assert all(unicodedata.is_normalized("NFC", n) for n in names), names
    assert NFC in names and f"{NFC} (2)" in names
    for table in ("grades.csv", "totals.csv", "review.csv"):
        cells = [c for row in read_csv(graded["folder"] / table) for c in row]
        assert not any(c[:1] in "=+-@" for c in cells if c), f"{table} holds a formula: {cells}"
    assert "'=2+5" in totals(graded)


def test_the_sandbox_hides_the_folder_and_the_checkout_and_limits_memory(graded):
    text = feedback(graded, "=2+5")
    assert "PROBE folder=0 tests=0 write=0 memlimit=1 memerror=1" in text, text


def test_a_submission_cannot_touch_the_machine_or_outlive_its_grading(graded):
    assert not graded["leftovers"], "a process the submission started outlived the grader"
    assert "Feedback: bob" in feedback(graded, "bob"), "another student's feedback was overwritten"
    assert (graded["tmp"] / "outside.txt").exists(), "a file outside the submissions folder was deleted"
    assert not (graded["tmp"] / "escaped.txt").exists(), "the submission wrote outside its sandbox"
    assert read_csv(graded["folder"] / "grades.csv")[0] == ["student", "exercise", "points", "max_points"]


def test_a_dead_kernel_is_the_notebooks_doing_not_a_grader_failure(graded):
    text = feedback(graded, "mallory")
    assert "stopped the Python kernel" in text and "grader failed" not in text, text


def test_feedback_quotes_no_test_and_says_the_output_was_too_long(graded):
    text = feedback(graded, "=2+5")
    for secret in (HIDDEN_LINE, "grading/tests", "ch06-ex2.py", "@test_case", "test_top_k"):
        assert secret not in text, f"the feedback quotes {secret!r}:\n{text}"
    assert "no test file" in text, text  # the student's own error came through
    assert "printed 3 MB" in text


def test_code_worth_reading_is_listed_for_review(graded):
    reasons = [reason for student, reason in read_csv(graded["folder"] / "review.csv")[1:] if student == "'=2+5"]
    assert any("imports otter.test_files" in r for r in reasons), reasons
    assert any("tl.SamplingParams" in r for r in reasons), reasons
    assert not any(student == "bob" for student, _ in read_csv(graded["folder"] / "review.csv")[1:])


def one_bad_notebook(tmp_path: Path) -> Path:
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "a.ipynb").write_text("not a notebook")
    return folder


@pytest.mark.parametrize("output", ["feedback-link", "grades-link", "feedback-file"])
def test_the_grader_writes_through_no_link_and_over_no_file(tmp_path, output):
    folder, target = one_bad_notebook(tmp_path), tmp_path / "elsewhere"
    if output == "feedback-link":
        target.mkdir()
        (folder / "feedback").symlink_to(target)
    elif output == "grades-link":
        target.write_text("not yours")
        (folder / "grades.csv").symlink_to(target)
    else:
        (folder / "feedback").write_text("a file")
    done = subprocess.run([sys.executable, str(GRADE), str(folder)], capture_output=True, text=True)
    assert done.returncode != 0
    name = "grades.csv" if output == "grades-link" else "feedback"
    assert str(folder / name) in done.stderr and ("link" in done.stderr or "move it away" in done.stderr), done.stderr
    assert not target.is_dir() or not any(target.iterdir()), "the grader wrote through the link"
    assert not target.is_file() or target.read_text() == "not yours", "the grader wrote through the link"


def test_without_bubblewrap_the_grader_says_how_to_install_it(tmp_path):
    folder = one_bad_notebook(tmp_path)
    done = subprocess.run([sys.executable, str(GRADE), str(folder)], capture_output=True, text=True,
                          env={**os.environ, "PATH": str(tmp_path / "no-bin")})
    assert done.returncode != 0 and "apt-get install bubblewrap" in done.stderr, done.stderr


STUCK = '''import signal, subprocess, sys
for ring in (signal.SIGALRM, signal.SIGINT):  # neither the grader's cell timer nor an interrupt stops it
    signal.signal(ring, signal.SIG_IGN)
subprocess.Popen(["setsid", sys.executable, "-c", "import time\\nwhile True:\\n    time.sleep(1)", "{token}"],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
while True:
    pass
'''


def test_a_submission_stopped_at_its_limit_leaves_no_process(tmp_path):
    """A notebook that ignores the cell timer and the interrupt, and has started a process in a session of its
    own, is stopped at --limit: it scores zero with the reason, and no process of it outlives the grader."""
    if shutil.which("bwrap") is None and os.environ.get("CI") != "true":
        pytest.skip("bubblewrap is not installed (sudo apt-get install bubblewrap): the grader needs it")
    folder, token = tmp_path / "submissions", f"grader-stuck-{uuid.uuid4().hex}"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(metadata={"teachllm": {"chapter": CHAPTER}})
    nb.cells.append(nbformat.v4.new_code_cell(STUCK.format(token=token)))
    nbformat.write(nb, folder / "stuck.ipynb")
    log = open(tmp_path / "grader.log", "w+")  # noqa: SIM115  (read after the grader ends)
    grader = subprocess.Popen([sys.executable, str(GRADE), str(folder), "--timeout", "5", "--limit", "15"],
                              stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        seen = False  # the notebook's process, alive while it is graded
        while grader.poll() is None:
            seen = seen or bool(leftovers(token))
            time.sleep(0.5)
        time.sleep(1)
        assert grader.returncode == 0, (tmp_path / "grader.log").read_text()
        assert seen, "the notebook's own process never started: the test proves nothing"
        assert "did not finish within 15 s" in (folder / "feedback" / "stuck.md").read_text(encoding="utf-8")
        assert not leftovers(token), "a process the submission started outlived the grader"
    finally:
        log.close()
        for process in leftovers(token):
            process.kill()
