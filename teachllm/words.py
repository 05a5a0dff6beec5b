"""The words teachllm's text formatters print: English, unless they are given another language's `tr`.

A formatter that prints a table or a sentence (`cost.FlopCount.table`, `cost.format_comparison`,
`roofline.Device.describe`, `roofline.format_points`, `lm.describe`) takes `tr`, a function of an English
template and its named fields. `english`, the default, fills the template in; `teachllm.viz.tr` looks it up in
the viz catalogue first, so the Chinese edition's chapters print the same table in Chinese:

    print(prefill_37.table())          # English
    print(prefill_37.table(viz.tr))    # the reader's language (viz.set_language)

The engine never imports teachllm.viz; the catalogue check (tests/test_viz_language.py) reads the templates
these modules pass to `tr`. `pad` aligns a column whose text may hold Chinese, which a terminal or a notebook
draws two columns wide.
"""

from __future__ import annotations

import unicodedata


def english(template: str, **fields) -> str:
    """`template` filled in with `fields` (`str.format` named fields): the default `tr` of every formatter."""
    return template.format(**fields)


def display_width(text: str) -> int:
    """Columns `text` takes in a monospaced font: a Chinese character (East Asian wide or full-width) takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, columns: int) -> str:
    """`text` followed by spaces up to `columns` as a terminal or notebook shows it: a Chinese character
    takes two columns, so `f"{text:<32}"` would misalign a table of Chinese row names."""
    return text + " " * max(0, columns - display_width(text))


def rpad(text: str, columns: int) -> str:
    """`text` after spaces up to `columns` (right-aligned), counted as `pad` counts them."""
    return " " * max(0, columns - display_width(text)) + text
