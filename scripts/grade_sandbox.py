"""The grader's sandbox and the tests outside it (scripts/grade.py's trust boundary, in code).

    with Sandbox(notebook, lang, folder, limits) as box:   # bubblewrap + scripts/grade_runner.py: the cells run
        results = run_tests(box, test_paths, lang)          # here, on a pristine teachllm: {exercise: points, ...}
        box.end()

A Sandbox runs one submission's notebook under bubblewrap: a private /tmp with a copy of the notebook, the machine
read-only, the submissions folder and the course's tests, solutions and test suite not there, no network, its own
process namespace, limits on memory, CPU time, file size (Limits). Inside, scripts/grade_runner.py runs the cells,
then answers questions about the notebook's globals through two pipes (teachllm.course.answers).

run_tests runs otter's test files in this process. Their `env` is Globals: the notebook's globals asked of the
sandbox one name at a time, a student's function a Function that runs there on the inputs a test gives it, and
`env["lm"]` this process's own pristine model. The expected values are computed and compared here; only the
inputs go in and only the answers, as data, come out. PRISTINE keeps the tests of the --jobs submissions graded
at once from running at the same moment (they share the model and the test modules), except while a sandbox
answers.
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
HIDDEN = [NOTEBOOKS / "grading", NOTEBOOKS / "solutions", ROOT / "tests", ROOT / ".git", ROOT / "book" / "_build"]
TEST_FILE_LOCK = threading.Lock()  # reading a test file runs its imports: transformers' lazy imports race in threads


# ---- the sandbox ------------------------------------------------------------------------------------------------

RUNNER = ROOT / "scripts" / "grade_runner.py"  # what runs in the sandbox
RUNNING: set[int] = set()  # the process groups of the sandboxes running now (one per job), to stop on Ctrl-C
INSIDE = Path("/tmp/grade")  # in the sandbox: in/ (read-only: the notebook), notebooks/ (the runner's cwd)
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
    paths = [folder.resolve(), *HIDDEN]
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
    keep["TEACHLLM_DEVICE"] = "cpu"  # the sandbox sees no GPU; the grader's pristine model is on the CPU too
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


class SandboxGone(BaseException):
    """The sandbox stopped answering: ended, crashed, sent what is not a message, or took too long. A
    BaseException, so that a test's `except Exception` does not take it for the student's error."""


class Sandbox:
    """One submission's notebook running in bubblewrap with scripts/grade_runner.py, and the pipes to ask it about
    the notebook's globals (teachllm.course.answers). `with Sandbox(...) as box:` starts it and waits until the
    cells have run; leaving the block ends every process in it."""

    def __init__(self, nb, lang: str, folder: Path, limits: Limits):
        self.nb, self.lang, self.folder, self.limits = nb, lang, folder, limits
        self.deadline = time.monotonic() + limits.limit
        self.printed, self.log_tail = 0, ""

    def __enter__(self) -> Sandbox:
        from teachllm.course.answers import Channel

        self.tmp = tempfile.TemporaryDirectory(prefix="grade-")
        inputs = Path(self.tmp.name) / "in"
        inputs.mkdir()
        nbformat.write(self.nb, inputs / "submission.ipynb")
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        self.log = open(Path(self.tmp.name) / "log.txt", "wb+")
        inner = [sys.executable, str(RUNNER), str(INSIDE / "in" / "submission.ipynb"), "--timeout",
                 str(self.limits.timeout), "--requests-fd", str(requests_r), "--answers-fd", str(answers_w)]
        try:
            self.process = subprocess.Popen(
                bwrap_command(inputs, self.folder, self.lang, self.limits, inner), stdin=subprocess.DEVNULL,
                stdout=self.log, stderr=self.log, pass_fds=(requests_r, answers_w), env=sandbox_env(self.limits),
                preexec_fn=self.limits.applier(), start_new_session=True)
        except BaseException:
            for fd in (requests_w, answers_r):
                os.close(fd)
            self.log.close()
            self.tmp.cleanup()
            raise
        finally:
            os.close(requests_r)
            os.close(answers_w)
        RUNNING.add(self.process.pid)
        self.channel = Channel(answers_r, requests_w)
        try:
            self.printed = self.count(self.receive(self.left()))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def left(self) -> float:
        """Seconds left of the submission's --limit."""
        return max(0.0, self.deadline - time.monotonic())

    def receive(self, timeout: float) -> dict:
        from teachllm.course.answers import ChannelClosed

        try:
            return self.channel.receive(min(timeout, self.left()))
        except ChannelClosed as error:
            raise SandboxGone(str(error)) from None

    def ask(self, request: dict) -> dict:
        """Send one request and wait for its answer: at most a cell's --timeout and a little more (the runner
        interrupts the call itself after --timeout), within what is left of --limit."""
        from teachllm.course.answers import ChannelClosed

        try:
            self.channel.send(request)
        except ChannelClosed as error:
            raise SandboxGone(str(error)) from None
        return self.receive(self.limits.timeout + 15)

    def end(self) -> None:
        """Ask the runner to finish, and read what the notebook printed in all."""
        self.printed = self.count(self.ask({"op": "end"}))

    def count(self, answer: dict) -> int:
        """The characters printed, as the runner reported them (0 if it did not)."""
        printed = answer.get("printed")
        return printed if type(printed) is int and printed >= 0 else self.printed

    def __exit__(self, *exc) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # bwrap; --die-with-parent ends every process inside
        except ProcessLookupError:
            pass
        self.process.wait()
        RUNNING.discard(self.process.pid)
        os.close(self.channel.read_fd)
        os.close(self.channel.write_fd)
        self.log.seek(max(0, self.log.seek(0, os.SEEK_END) - 2000))
        self.log_tail = "".join(c if c.isprintable() or c == "\n" else "?"
                                for c in self.log.read().decode("utf-8", "replace"))
        self.log.close()
        self.tmp.cleanup()


# ---- the tests, outside the sandbox, on a pristine teachllm ----------------------------------------------------

PRISTINE = threading.Lock()  # held while tests run in this process; released while a sandbox answers
_pristine_model: list = []


def pristine_model():
    """The model the tests compute with: the notebook's `tl.load()`, as the sandbox loads it (on the CPU: it sees
    no GPU; TEACHLLM_DTYPE and TEACHLLM_MODEL as set), loaded once per grader run and never given to a student."""
    if not _pristine_model:
        import teachllm as tl

        _pristine_model.append(tl.load(device="cpu", progress=False))
    return _pristine_model[0]


class Undefined(KeyError):
    """A name the notebook does not define (env["name"] as a dict would say)."""


class Globals:
    """The notebook's globals as the tests see them (`env`), asked of the sandbox one name at a time: `env["x"]`,
    `env.get("x")`, `"x" in env`. A value comes back decoded as data; a function as a `Function` that runs in the
    sandbox; `lm` is the grader's own pristine model, whatever the notebook bound to that name. Every question
    releases PRISTINE while the sandbox answers (so another job's tests can run) and restores torch's global
    random state after (so that what it ran meanwhile changes nothing here)."""

    PRISTINE_NAMES = ("lm",)

    def __init__(self, box: Sandbox):
        self.box = box

    def ask(self, request: dict) -> dict:
        import torch

        state = torch.get_rng_state()
        PRISTINE.release()
        try:
            return self.box.ask(request)
        finally:
            PRISTINE.acquire()
            torch.set_rng_state(state)

    def __getitem__(self, name: str):
        from teachllm.course.answers import decode

        if name in self.PRISTINE_NAMES:
            return pristine_model()
        answer = self.ask({"op": "get", "name": name})
        if answer.get("function") is True:
            return Function(self, name)
        if "value" not in answer:
            raise Undefined(name)
        return decode(answer["value"])

    def get(self, name: str, default=None):
        try:
            return self[name]
        except Undefined:
            return default

    def __contains__(self, name: str) -> bool:
        try:
            self[name]
            return True
        except Undefined:
            return False

    def ref(self, obj) -> dict | None:
        """How one of the grader's objects given to a student's function travels: the pristine model and its
        tokenizer as the notebook's own (a ref); anything else by value."""
        from teachllm.course.grading import WithoutCache

        lm = _pristine_model[0] if _pristine_model else None
        if lm is None:
            return None
        if obj is lm:
            return {"$": "ref", "name": "lm"}
        if obj is lm.tokenizer:
            return {"$": "ref", "name": "lm", "path": ["tokenizer"]}
        if isinstance(obj, WithoutCache) and obj._lm is lm:
            return {"$": "ref", "name": "lm", "wrap": "WithoutCache"}
        return None


class Function:
    """A function of the student's, called in the sandbox on the inputs a test gives it; returns the answer
    decoded, or raises the error the function raised (answers.RemoteError, of the same built-in type)."""

    def __init__(self, env: Globals, name: str):
        self.env, self.name = env, name

    def __call__(self, *args, **kwargs):
        from teachllm.course.answers import decode, encode, remote_error

        answer = self.env.ask({"op": "call", "name": self.name, "args": encode(list(args), self.env.ref, strict=True),
                               "kwargs": encode(kwargs, self.env.ref, strict=True)})
        if "error" in answer:
            raise remote_error(answer["error"])
        if "value" not in answer:
            raise Undefined(self.name)
        return decode(answer["value"])

    def __repr__(self) -> str:
        return f"<the student's function {self.name}>"


_test_files: dict[Path, object] = {}


def test_file(path: Path):
    """The otter test file at `path`, read once per grader run (its module's caches kept across students: they
    hold only what the pristine side computed). Each run gets a shallow copy, with its own results."""
    import copy

    from otter.test_files import ExceptionTestFile

    with TEST_FILE_LOCK:
        if path not in _test_files:
            _test_files[path] = ExceptionTestFile.from_file(str(path))
        return copy.copy(_test_files[path])


def case_message(error: Exception) -> str:
    """What a student reads of a failed test case: a test's own assertion message (worded for students, with no
    expected value), a name their notebook does not define, or the error their code raised; for any other error in
    the test's code, only its type."""
    from teachllm.course.answers import Refused, RemoteError
    from teachllm.course.grading import say

    if isinstance(error, AssertionError):  # the test's, or the student's own (a WithoutCache check, say)
        return str(error).strip("'").strip()
    if isinstance(error, Undefined):
        return say("{name} is not defined: run its cell, and fix any error in it",
                   "{name} 没有定义：运行它所在的单元格，并改正其中的错误", name=str(error).strip("'"))
    if isinstance(error, RemoteError | Refused):
        return f"{type(error).__name__}: {str(error).strip(chr(39))}"
    return say("a check could not run on your answer ({t})", "有一项检查无法在你的答案上运行（{t}）",
               t=type(error).__name__)


def run_tests(box: Sandbox, paths: list[Path], lang: str) -> dict:
    """The tests of each file in `paths` (one exercise each), run here on the pristine teachllm against the notebook
    in `box`, their messages in `lang`: {exercise: {"points", "messages"}}. Raises SandboxGone if the sandbox
    stops answering."""
    from teachllm.course.grading import speaking

    env, out = Globals(box), {}
    with PRISTINE, speaking(lang):
        for path in paths:
            tf, passed, messages = test_file(path), [], []
            for tc in tf.test_cases:
                try:
                    tc.body.call_func(env)
                    passed.append(tc)
                except SandboxGone:
                    raise
                except Exception as error:
                    messages.append(case_message(error))
            points = sum(tc.points for tc in passed)
            if tf.all_or_nothing and len(passed) < len(tf.test_cases):
                points = 0
            out[path.stem] = {"points": float(points), "messages": list(dict.fromkeys(messages))}
    return out


