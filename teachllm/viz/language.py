"""The language of every word teachllm.viz draws or prints: English by default, Chinese for the Chinese edition.

    from teachllm import viz
    viz.set_language("zh")                                  # or TEACHLLM_LANGUAGE=zh before the import
    viz.tr("layer {i}", i=3)                                # '第 3 层'

The English text is the key: `tr` looks it up in `zh.ZH` (English template → Chinese template) and fills in
the named fields with `str.format`: every field the template names must be given, and no other (a literal
brace is written twice, "{{"). Token texts, numbers and units are fields or stay outside `tr`, so
both editions show the same values. A figure made while the language is "zh" also gets a font family
that has Chinese glyphs (`font`). tests/test_viz_language.py checks that every string given to `tr`
in teachllm/viz and notebooks/src has an entry there, and that every entry is used.
"""

from __future__ import annotations

import os
import re
import string

from ..words import display_width, pad, rpad  # noqa: F401  (viz.pad, viz.rpad; display_width for viz.lecture)
from .zh import ZH

LANGUAGES = ("en", "zh")
CJK_FONT = "Noto Sans CJK SC, Source Han Sans SC, PingFang SC, Microsoft YaHei, sans-serif"


def _checked(lang: str, name: str = "language") -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, LANGUAGES))}, got {lang!r}")
    return lang


untranslated: set[str] = set()  # strings `tr` was asked for in Chinese and had no entry for (the tests read it)
_current = _checked(os.environ.get("TEACHLLM_LANGUAGE") or "en", "TEACHLLM_LANGUAGE")  # unset or empty: English


def set_language(lang: str) -> None:
    """Draw and print in `lang`: "en" (English, the default) or "zh" (Chinese)."""
    global _current
    _current = _checked(lang)


def language() -> str:
    """The language figures and widgets use now: "en" or "zh"."""
    return _current


def _field_names(template: str) -> set[str]:
    """The named fields of a `str.format` template: "{n} of {total:,} tokens" → {"n", "total"}."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:  # a lone "{" or "}"
        raise ValueError(f"tr: {template!r} is not a template: {e} (a literal brace is written twice)") from None
    return {re.split(r"[.\[]", name)[0] for _, name, _, _ in parts if name is not None}  # "{d.x}", "{d[0]}" → "d"


def tr(english: str, **fields) -> str:
    """`english` in the current language, with `fields` filled in (`str.format` named fields): tr("layer {i}", i=3).
    Every field the template names must be given, and no other. A string with no Chinese entry stays English
    (the tests make sure there is none)."""
    if not isinstance(english, str):
        raise TypeError(f"tr takes the English text as a str, got {type(english).__name__} {english!r}")
    needed = _field_names(english)
    missing, unused = sorted(needed - fields.keys()), sorted(fields.keys() - needed)
    if missing:
        raise TypeError(f"tr: the template {english!r} needs the field(s) {', '.join(missing)} "
                        f"(given: {', '.join(sorted(fields)) or 'none'})")
    if unused:
        raise TypeError(f"tr: the template {english!r} has no field(s) {', '.join(unused)}")
    if _current == "zh" and english not in ZH:
        untranslated.add(english)
    template = ZH.get(english, english) if _current == "zh" else english
    return template.format(**fields)


def template(english: str) -> str:
    """`english`'s template in the current language, fields not filled in: for the book's pages, which fill them
    in themselves (teachllm.viz.static)."""
    if _current == "zh" and english not in ZH:
        untranslated.add(english)
    return ZH.get(english, english) if _current == "zh" else english


def font() -> dict:
    """Layout settings for the current language: a font family with Chinese glyphs for "zh", nothing for "en"."""
    return {"font": {"family": CJK_FONT}} if _current == "zh" else {}
