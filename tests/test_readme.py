"""The README's usage example runs as written (so the README stays true)."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_usage_example_runs(lm):
    block = re.search(r"## Using it\n\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(block, "README.md", "exec"), namespace)
    text = printed.getvalue()
    # the comment beside print(cache) shows what it prints
    assert "KVCache(batch=1, length=6/64" in text and "used=0.26 MiB of 2.81 MiB" in text
    assert namespace["out"].finish_reason in ("stop", "length")


def test_quick_start_names_the_commands_ci_runs():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    assert "make demo" in text and "make test" in text and "make lab" in text
    assert "make test" in ci
