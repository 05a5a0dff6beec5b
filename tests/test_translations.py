"""The Chinese edition is in sync with the English one: every Markdown cell and book page is translated from
the English text as it is now (scripts/translations.py), and the check notices when the English moves on."""

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import translations  # noqa: E402  (scripts/ is not a package)

SOURCES = sorted(translations.SOURCES.glob("*.py"))


@pytest.mark.parametrize("lang", translations.LANGUAGES)
@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_every_cell_is_translated_from_the_english_as_it_is_now(src, lang):
    assert not translations.problems(src, lang), "\n".join(translations.problems(src, lang))


@pytest.mark.parametrize("lang", translations.LANGUAGES)
def test_every_book_page_is_translated_from_the_english_as_it_is_now(lang):
    assert not translations.book_problems(lang), "\n".join(translations.book_problems(lang))


@pytest.fixture
def chapter(tmp_path):
    """A copy of chapter 6 and its translation, to change."""
    src = translations.SOURCES / "06-logits-to-token.py"
    for path in (src, translations.translation_path(src, "zh")):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / src.name


def test_the_check_notices_an_english_cell_that_changed(chapter):
    chapter.write_text(chapter.read_text().replace("## 6.1 Logits and probabilities", "## 6.1 Scores"))
    found = translations.problems(chapter, "zh")
    assert len(found) == 1 and "cell 2 changed in English" in found[0]


def test_the_check_notices_a_new_english_cell_and_an_untranslated_one(chapter):
    chapter.write_text(chapter.read_text() + "\n# %% [markdown]\n# A new closing remark.\n")
    zh = translations.translation_path(chapter, "zh")
    blocks = zh.read_text(encoding="utf-8").split("<!-- cell ")
    blocks[2] = blocks[2].split("-->")[0] + "-->\nStill in English.\n\n"
    zh.write_text("<!-- cell ".join(blocks), encoding="utf-8")
    found = translations.problems(chapter, "zh")
    assert any("cell 2 is not translated" in f for f in found)
    assert any("has no translation" in f and "A new closing remark" in f for f in found)
    with pytest.raises(ValueError, match="has no translation"):
        translations.translated_cells(chapter, "zh")


def test_the_check_notices_a_book_page_whose_english_changed(tmp_path, monkeypatch):
    (tmp_path / "zh").mkdir()
    (tmp_path / "preface.md").write_text("# Preface\n\nNew text.\n")
    (tmp_path / "zh" / "preface.md").write_text("<!-- en: preface.md 00000000 -->\n# 前言\n", encoding="utf-8")
    monkeypatch.setattr(translations, "BOOK", tmp_path)
    found = translations.book_problems("zh")
    assert len(found) == 1 and "changed after it was translated" in found[0]


def test_the_chinese_book_calls_each_chapter_by_its_title():
    """The lecturer's guide and the solutions page head each section with the chapter's Chinese title."""
    import re

    titles = {}
    for src in SOURCES:
        first = translations.translated_cells(src, "zh")[0].splitlines()[0]
        m = re.match(r"# (第 (\d+) 章 · .+)$", first)
        assert m, f"{src.stem}: the Chinese chapter should open with '# 第 N 章 · title', not {first!r}"
        titles[int(m[2])] = m[1]
    for page in sorted((translations.BOOK / "zh").glob("*.md")):
        for m in re.finditer(r"^#+ (第 (\d+) 章 · .+)$", page.read_text(encoding="utf-8"), re.M):
            assert m[1] == titles[int(m[2])], f"book/zh/{page.name}: {m[1]!r} is chapter {m[2]}: {titles[int(m[2])]!r}"
