"""Inside the grader's sandbox: run one submission's notebook, then answer the grader's questions about it.

    python scripts/grade_runner.py NOTEBOOK --timeout 60 --requests-fd R --answers-fd A

scripts/grade.py starts it under bubblewrap; nobody runs it by hand. The notebook's code cells run in order in one
IPython shell, as in a Jupyter kernel (magics and shell lines too), each interrupted after --timeout seconds; what
they print is counted and dropped. Then it answers, one JSON object per line (teachllm.course.answers):

    {"op": "get", "name": "costliest"}          → {"value": <encoded>} | {"function": true} | {"missing": true}
    {"op": "call", "name": "kept_after", "args": [...], "kwargs": {...}}
                                                → {"value": <encoded>} | {"error": {"type", "repr", "str"}}
    {"op": "end"}                               → {"printed": <characters printed>}, and the runner exits

A call's inputs come from the grader; {"$": "ref", "name": "lm"} among them is this notebook's own `lm` (its
attribute `path`, or wrapped as grading.WithoutCache), so that a student's function runs on the objects of their
notebook. Each call is interrupted after --timeout seconds too.

The runner knows nothing of the tests: no test file and no expected value is in the sandbox. It runs in the
student's Python, so their code can change anything here, this file's functions included; what it sends is the
student's answer, and the grader trusts none of it beyond decoding it as data.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

ready = {"printed": 0}  # characters the notebook printed: written by Counted, read by the grader at the end


class Counted:
    """sys.stdout and sys.stderr in the sandbox: counts what is written, keeps none of it."""

    encoding, errors = "utf-8", "replace"

    def write(self, text) -> int:
        ready["printed"] += len(text) if isinstance(text, str) else 0
        return len(text) if isinstance(text, str) else 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class Interrupted(KeyboardInterrupt):
    """A cell or a call ran past --timeout."""


def timed(seconds: float, run):
    """run(), interrupted (Interrupted, in the main thread) after `seconds`."""
    def ring(signum, frame):
        raise Interrupted()

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return run()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_cells(path: str, timeout: float):
    """Run the notebook's code cells in one IPython shell; return the shell (its user_ns is the notebook's
    globals). A cell that raises or runs out of time shows its traceback (counted, dropped) and the next one runs."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # no sqlite history file
    shell = InteractiveShell.instance(config=config)
    with open(path, encoding="utf-8") as f:
        cells = [c for c in json.load(f)["cells"] if c.get("cell_type") == "code"]
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        try:
            timed(timeout, lambda code=source: shell.run_cell(code, store_history=False))
        except Interrupted:  # the alarm rang outside the cell's own code: the cell is over all the same
            pass
    return shell


def answer(request: dict, names: dict, timeout: float) -> dict:
    """The answer to one request about the notebook's globals `names`."""
    from teachllm.course import answers

    op, name = request.get("op"), request.get("name")
    if not isinstance(name, str) or name not in names:
        return {"missing": True}
    value = names[name]
    if op == "get":
        if callable(value):
            return {"function": True}
        return {"value": answers.encode(value)}
    if op != "call":
        return {"error": answers.error(ValueError(f"unknown request {op!r}"))}

    def resolve(ref: dict):
        from teachllm.course.grading import WithoutCache

        if ref.get("name") not in names:
            raise KeyError(ref.get("name"))
        obj = names[ref["name"]]
        for attribute in ref.get("path", []):
            obj = getattr(obj, attribute)
        return WithoutCache(obj) if ref.get("wrap") == "WithoutCache" else obj

    def call():
        args = answers.decode(request.get("args", []), resolve)
        kwargs = answers.decode(request.get("kwargs", {"$": "dict", "items": []}), resolve)
        return answers.encode(value(*args, **kwargs))

    try:
        return {"value": timed(timeout, call)}
    except Interrupted:
        return {"error": answers.error(TimeoutError(f"{name} did not return within {timeout:g} s"))}
    except BaseException as error:  # SystemExit too: the student's function, not the runner, ends
        return {"error": answers.error(error)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--requests-fd", type=int, required=True)
    parser.add_argument("--answers-fd", type=int, required=True)
    args = parser.parse_args()
    from teachllm.course.answers import Channel, ChannelClosed

    channel = Channel(args.requests_fd, args.answers_fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what the notebook writes to the file descriptor itself goes nowhere either
    sys.stdout = sys.stderr = Counted()
    shell = run_cells(args.notebook, args.timeout)
    sys.stdout = sys.stderr = Counted()  # the notebook may have replaced them
    channel.send({"ready": True, "printed": ready["printed"]})
    while True:
        try:
            request = channel.receive()
        except ChannelClosed:
            break
        if request.get("op") == "end":
            channel.send({"printed": ready["printed"]})
            break
        try:
            reply = answer(request, shell.user_ns, args.timeout)
            channel.send(reply)
        except ValueError as error:  # an answer too large to send
            channel.send({"error": {"type": "ValueError", "repr": repr(str(error)), "str": str(error)}})
    os._exit(0)  # threads the notebook started end here; bubblewrap ends every process the notebook started


if __name__ == "__main__":
    main()
