"""nbval, with numbers compared the way they were printed: to one unit in their last digit.

nbval re-runs each notebook and compares every output with the committed one, character for character
(after `sanitize.cfg`). A number rounded for printing can still change in its last digit on another CPU:
6.3685 prints 6.368 on one machine and 6.369 on a machine whose kernels add in another order (AVX2 against
AVX-512). No rounding avoids that — whatever the precision, a value near the boundary between two printed
values falls on either side — so the comparison allows it:

- in text (printed output, strings in a figure), two outputs agree when they are the same once their
  numbers are taken out, and each pair of numbers differs by at most one unit in its last printed digit
  (6.368 and 6.369 agree; 6.368 and 6.370 do not; 5e-05 and 6e-05 agree); numbers printed without a
  decimal point or an exponent (counts, token ids, sizes) must be equal;
- in a plotly figure, two floats agree when they differ by at most one unit in their fourth significant
  digit, or by 1e-6 (`teachllm.viz` rounds the numbers it draws to 6 decimals); integers must be equal.

Anything else — a number off by two units, a changed word, a token, an integer — still fails. A value that
truly differs from machine to machine by more than that (a time, a measured peak) is not compared at all:
its cell is tagged NBVAL_IGNORE_OUTPUT and the prose quotes ratios.

pytest reads this file for every notebook under notebooks/, so `make test` and a plain
`pytest --nbval notebooks/…` compare alike.
"""

from __future__ import annotations

import copy
import math
import os
import re

NUMBER = re.compile(r"(?<![\w.])[-−]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+−]?\d+)?")
FIGURE_DIGITS = 4  # significant digits a figure's floats must agree to
FIGURE_ABSOLUTE = 1e-6  # ... or this much: teachllm.viz rounds figure data to 6 decimals
SLACK = 1 + 1e-9  # the units below are computed in floating point


def _parse(number: str) -> float:
    return float(number.replace("−", "-"))


def last_digit_unit(number: str) -> float:
    """The value of one unit in the last printed digit: '6.368' → 0.001, '5e-05' → 1e-05, '120' → 1."""
    mantissa, _, exponent = number.replace("−", "-").lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def is_integer(number: str) -> bool:
    """Printed without a decimal point or an exponent: a count, an id, a size — compared exactly."""
    return not re.search(r"[.eE]", number)


def numbers_agree(a: str, b: str) -> bool:
    """Two printed numbers agree if equal, or, when both carry a fraction or an exponent, within one unit
    of the finer one's last digit. Integers must be equal: a count or a token id does not round."""
    if a == b:
        return True
    if is_integer(a) or is_integer(b):
        return False
    unit = min(last_digit_unit(a), last_digit_unit(b))
    return abs(_parse(a) - _parse(b)) <= unit * SLACK


def texts_agree(a: str, b: str) -> bool:
    """The same text once the numbers are taken out (runs of spaces count as one: a column may widen by a
    digit), and every pair of numbers within one unit of its last printed digit."""
    if a == b:
        return True
    numbers_a, numbers_b = NUMBER.findall(a), NUMBER.findall(b)
    if len(numbers_a) != len(numbers_b):
        return False
    skeleton = [re.sub(r"\s+", " ", s) for s in (NUMBER.sub("#", a), NUMBER.sub("#", b))]
    return skeleton[0] == skeleton[1] and all(map(numbers_agree, numbers_a, numbers_b))


def floats_agree(a: float, b: float) -> bool:
    """Two floats of a figure agree to FIGURE_DIGITS significant digits, or to FIGURE_ABSOLUTE."""
    if a == b or (math.isnan(a) and math.isnan(b)):
        return True
    largest = max(abs(a), abs(b))
    unit = max(10.0 ** (math.floor(math.log10(largest)) - (FIGURE_DIGITS - 1)), FIGURE_ABSOLUTE)
    return abs(a - b) <= unit * SLACK


def agree(new, old) -> bool:
    """Whether a new output value (text, or a figure's JSON) agrees with the committed one."""
    if isinstance(new, str) and isinstance(old, str):
        return texts_agree(new, old)
    if isinstance(new, bool) or isinstance(old, bool):
        return new == old
    if isinstance(new, float) and isinstance(old, float):
        return floats_agree(new, old)
    if isinstance(new, dict) and isinstance(old, dict):
        return new.keys() == old.keys() and all(agree(new[k], old[k]) for k in new)
    if isinstance(new, list) and isinstance(old, list):
        return len(new) == len(old) and all(map(agree, new, old))
    return new == old


def align(new_outputs: list, old_outputs: list) -> list:
    """The new outputs, with every value that agrees with its committed counterpart replaced by that
    counterpart, so that nbval's exact comparison passes there and reports only the real differences."""
    if len(new_outputs) != len(old_outputs):
        return new_outputs
    aligned = []
    for new, old in zip(new_outputs, old_outputs, strict=True):
        new = copy.copy(new)  # a NotebookNode: nbval reads its fields as attributes
        if new.get("output_type") == old.get("output_type") and new.get("name") == old.get("name"):
            if "text" in new and "text" in old and agree(new["text"], old["text"]):
                new["text"] = old["text"]
            if "data" in new and "data" in old:
                new["data"] = {mime: old["data"][mime] if mime in old["data"] and agree(value, old["data"][mime])
                               else value for mime, value in new["data"].items()}
        aligned.append(new)
    return aligned


STATIC_FORM = "application/vnd.teachllm.widget+json"  # teachllm.viz.static.MIME


def without_static_forms(outputs: list) -> list:
    """The committed outputs without the widgets' kernel-free forms: the notebooks are built with them for the
    book (TEACHLLM_STATIC_WIDGETS=1), nbval runs without; tests/test_viz_static.py checks them instead."""
    cleaned = []
    for output in outputs:
        if STATIC_FORM in output.get("data", {}):
            output = copy.copy(output)
            output["data"] = {k: v for k, v in output["data"].items() if k != STATIC_FORM}
        cleaned.append(output)
    return cleaned


def pytest_configure(config):
    if not config.getoption("nbval", default=False) and not config.getoption("nbval_lax", default=False):
        return
    from nbval.plugin import IPyNbCell

    compare = IPyNbCell.compare_outputs
    if getattr(compare, "teachllm", False):
        return

    def compare_outputs(self, test, ref, skip_compare=None):
        return compare(self, align(test, ref), without_static_forms(ref), skip_compare)

    compare_outputs.teachllm = True
    IPyNbCell.compare_outputs = compare_outputs


def pytest_report_header(config):
    """Which kernels the notebooks run on: PyTorch's CPU dispatch, and ATEN_CPU_CAPABILITY if it is set."""
    import torch

    asked = os.environ.get("ATEN_CPU_CAPABILITY", "the CPU's best")
    return f"CPU dispatch: {torch.backends.cpu.get_cpu_capability()} (asked: {asked})"
