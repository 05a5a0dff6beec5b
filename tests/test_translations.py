"""The Chinese edition is in sync with the English one: every Markdown cell and book page is translated from
the English text as it is now (scripts/translations.py), and the check notices when the English moves on."""

import ast
import itertools
import re
import shutil
import sys
from pathlib import Path

import jupytext
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


# Hostile input (issue 24): a broken file gets one line naming the file, what is wrong and the fix; never a traceback.


def test_an_empty_translation_file_is_reported_with_the_fix(chapter):
    zh = translations.translation_path(chapter, "zh")
    for text in ("", "\n  \n"):
        zh.write_text(text, encoding="utf-8")
        found = translations.problems(chapter, "zh")
        assert len(found) == 1 and f"{zh.name} is empty" in found[0] and "skeleton 06" in found[0], found


def test_a_translation_file_that_is_not_utf8_is_reported_not_decoded(chapter):
    zh = translations.translation_path(chapter, "zh")
    zh.write_bytes(zh.read_text(encoding="utf-8").encode("gb18030"))
    found = translations.problems(chapter, "zh")
    assert len(found) == 1 and f"{zh.name} is not UTF-8 text" in found[0] and "save it as UTF-8" in found[0], found


def test_an_english_source_that_is_not_utf8_is_reported(chapter):
    chapter.write_bytes(chapter.read_text(encoding="utf-8").encode("utf-16"))
    found = translations.problems(chapter, "zh")
    assert len(found) == 1 and f"{chapter.name} is not UTF-8 text" in found[0], found


def test_a_byte_order_mark_is_accepted(chapter):
    zh = translations.translation_path(chapter, "zh")
    before = translations.translated_cells(chapter, "zh")
    zh.write_bytes(b"\xef\xbb\xbf" + zh.read_bytes())
    assert translations.problems(chapter, "zh") == []
    assert translations.translated_cells(chapter, "zh") == before


def test_windows_line_endings_are_accepted(chapter):
    zh = translations.translation_path(chapter, "zh")
    before = translations.translated_cells(chapter, "zh")
    zh.write_bytes(zh.read_bytes().replace(b"\n", b"\r\n"))
    assert translations.translated_cells(chapter, "zh") == before


def test_an_upper_case_hash_is_the_same_hash(chapter):
    zh = translations.translation_path(chapter, "zh")
    line = re.search(r"<!-- cell 3 · en ([0-9a-f]{8}) -->", zh.read_text(encoding="utf-8"))
    assert line[1] != line[1].upper(), "pick a cell whose hash has a letter in it"
    zh.write_text(zh.read_text(encoding="utf-8").replace(line[0], line[0].replace(line[1], line[1].upper())),
                  encoding="utf-8")
    assert translations.problems(chapter, "zh") == []
    zh.write_text(zh.read_text(encoding="utf-8").replace(line[1].upper(), "ABCDEF12"), encoding="utf-8")
    found = translations.problems(chapter, "zh")
    assert len(found) == 1 and "cell 3 changed in English" in found[0], found


def test_a_line_that_looks_like_a_header_but_is_not_one_is_reported(chapter):
    zh = translations.translation_path(chapter, "zh")
    text = zh.read_text(encoding="utf-8")
    header = re.search(r"<!-- cell 3 · en ([0-9a-f]{8}) -->", text)
    zh.write_text(text.replace(header[0], header[0].replace(header[1], header[1][:7])), encoding="utf-8")
    line = text[:header.start()].count("\n") + 1
    found = translations.problems(chapter, "zh")
    assert len(found) == 1 and f"{zh.name} line {line}" in found[0] and "not a block header" in found[0], found


def test_text_before_the_first_header_is_reported(chapter):
    zh = translations.translation_path(chapter, "zh")
    zh.write_text("第六章的译文\n\n" + zh.read_text(encoding="utf-8"), encoding="utf-8")
    found = translations.problems(chapter, "zh")
    assert len(found) == 1 and "before the first" in found[0], found


def test_an_empty_english_cell_does_not_crash_the_check(chapter):
    chapter.write_text(chapter.read_text(encoding="utf-8") + "\n# %% [markdown]\n\n# %%\nx = 1\n", encoding="utf-8")
    found = translations.problems(chapter, "zh")
    assert len(found) == 1 and "has no translation" in found[0], found


def test_book_pages_accept_a_byte_order_mark_and_an_upper_case_hash(tmp_path, monkeypatch):
    (tmp_path / "zh").mkdir()
    (tmp_path / "preface.md").write_text("# Preface\n", encoding="utf-8")
    english_hash = translations.text_hash("# Preface\n")
    page = f"\ufeff<!-- en: preface.md {english_hash.upper()} -->\n# 前言\n"
    (tmp_path / "zh" / "preface.md").write_text(page, encoding="utf-8")
    monkeypatch.setattr(translations, "BOOK", tmp_path)
    assert translations.book_problems("zh") == []


def test_a_book_page_that_is_not_utf8_is_reported(tmp_path, monkeypatch):
    (tmp_path / "zh").mkdir()
    (tmp_path / "preface.md").write_text("# Preface\n", encoding="utf-8")
    page = f"<!-- en: preface.md {translations.text_hash('# Preface')} -->\n# 前言\n"
    (tmp_path / "zh" / "preface.md").write_bytes(page.encode("gb18030"))
    monkeypatch.setattr(translations, "BOOK", tmp_path)
    found = translations.book_problems("zh")
    assert len(found) == 1 and "book/zh/preface.md is not UTF-8 text" in found[0], found


def run_cli(monkeypatch, capsys, *args):
    """(exit status, stdout, stderr) of `python scripts/translations.py ARGS`, run in this process."""
    monkeypatch.setattr(sys, "argv", ["translations.py", *args])
    with pytest.raises(SystemExit) as exit_:
        translations.main()
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


@pytest.mark.parametrize("command", ["check", "status", "skeleton"])
def test_a_prefix_that_matches_no_chapter_is_an_error(command, monkeypatch, capsys):
    status, out, err = run_cli(monkeypatch, capsys, command, "06", "99")
    assert status == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "'99'" in err and "06" in err and "13" in err, err


@pytest.mark.parametrize("command", ["check", "status"])
def test_the_cli_reports_a_file_that_is_not_utf8_in_one_line(command, chapter, monkeypatch, capsys):
    zh = translations.translation_path(chapter, "zh")
    zh.write_bytes(zh.read_text(encoding="utf-8").encode("gb18030"))
    monkeypatch.setattr(translations, "SOURCES", chapter.parent)
    status, out, err = run_cli(monkeypatch, capsys, command, "06")
    assert status == 1 and err == "" and out.strip().count("\n") == 0 and "is not UTF-8 text" in out, (out, err)


def test_the_cli_refuses_to_overwrite_a_translation_with_a_skeleton(chapter, monkeypatch, capsys):
    zh = translations.translation_path(chapter, "zh")
    before = zh.read_bytes()
    monkeypatch.setattr(translations, "SOURCES", chapter.parent)
    status, out, err = run_cli(monkeypatch, capsys, "skeleton", "06")
    assert status == 1 and err == f"error: {zh.name} exists; edit it instead\n" and zh.read_bytes() == before


def commented_cells():
    """(chapter, cell) for every exercise and check cell of every chapter: the cells whose comments are translated."""
    return [(src, cell) for src in SOURCES for cell in jupytext.read(src).cells if translations.commented(cell)]


@pytest.mark.parametrize("lang", translations.LANGUAGES)
def test_every_comment_a_learner_reads_is_translated_and_every_entry_is_used(lang):
    catalogue = translations.comment_catalogue(lang)
    used = {text for _, cell in commented_cells() for _, _, text in translations.comments(cell.source)}
    assert len(commented_cells()) > 20, "the chapters' exercise and check cells were not found"
    assert not used - set(catalogue) - {t for t in used if translations.KEPT_COMMENT.match(t)}, (
        f"no translation in {translations.comments_path(lang).name}")
    assert not set(catalogue) - used, f"entries no cell uses in {translations.comments_path(lang).name}"


@pytest.mark.parametrize("lang", translations.LANGUAGES)
def test_translating_the_comments_leaves_the_code_as_it_was(lang):
    catalogue = translations.comment_catalogue(lang)
    for src, cell in commented_cells():
        localised = translations.localise_comments(cell.source, catalogue)
        assert ast.dump(ast.parse(localised)) == ast.dump(ast.parse(cell.source)), src.name
        if translations.comments(cell.source):
            assert translations.CJK.search(localised), f"{src.name}: {cell.source[:60]!r} kept English comments"


def test_a_comment_with_no_translation_stops_the_build():
    with pytest.raises(translations.TranslationError, match="'your new hint'"):
        translations.localise_comments("x = 1  # your new hint\n", {"Exercise 1: your answer here.": "练习 1"})
    assert translations.localise_comments("x = 1  # NBVAL_IGNORE_OUTPUT", {}) == "x = 1  # NBVAL_IGNORE_OUTPUT"


# A line break inside a paragraph is a space to the browser, and Chinese puts no space between two characters:
# "分词器把文本\n变成 id" reads "分词器把文本 变成 id" in JupyterLab and in the book. Nor beside a full-width mark,
# whatever is on the other side: "之后，\n`lm`" reads "之后， `lm`", "个 token\n（" reads "token （". Emphasis marks
# (* and _) do not count as a side. Outside code fences, a Chinese paragraph is one line.
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”‘’…—]")
MARK = re.compile(r"[\u3000-\u303f\uff00-\uffef“”‘’…—]")
NOT_PROSE = re.compile(r"[ \t]*(?:#|\||<!--|```|:::)")  # a heading, table row, comment or directive: its own line
BLOCK_START = re.compile(r"[ \t]*(?:[-*+] |\d+[.)] |>|#|\||<|:|```|\$\$|†|不写作|$)")  # a line that starts a block


def soft_breaks(text: str) -> list[str]:
    """The lines of `text` (Markdown) that end in a break a browser would show as a space inside Chinese: between
    two Chinese characters, or beside a full-width mark. Outside ``` fences (the glossary's fence included: its
    definitions are paragraphs too)."""
    found, inside = [], None  # None, "code" or "glossary": the fence the block is in
    for block in re.split(r"^(```.*)$", text, flags=re.M):
        if block.startswith("```"):
            inside = None if inside else ("glossary" if block.startswith("```{glossary}") else "code")
            continue
        if inside == "glossary":  # a term's names stand one to a line; only its indented definition is a paragraph
            block = re.sub(r"^\S.*$", "", block, flags=re.M)
        if inside == "code":
            continue
        lines = block.split("\n")
        for line, after in itertools.pairwise(lines):
            if not line.strip() or NOT_PROSE.match(line) or BLOCK_START.match(after):
                continue
            left, right = line.rstrip(" \t*_")[-1:], after.lstrip(" \t*_")[:1]
            if (CJK.match(left) and CJK.match(right)) or MARK.match(left) or MARK.match(right):
                found.append(line[-20:])
    return found


def test_no_chinese_paragraph_breaks_between_two_characters():
    pages = sorted(translations.SOURCES.glob("*.zh.md")) + sorted((ROOT / "book" / "zh").glob("*.md"))
    problems = [f"{p.relative_to(ROOT)}: …{line}" for p in pages for line in soft_breaks(p.read_text(encoding="utf-8"))]
    assert not problems, "join these lines (a browser shows the break as a space):\n" + "\n".join(problems)


def test_the_soft_break_check_catches_a_planted_break_and_spares_headings_tables_and_code():
    assert soft_breaks("分词器把文本\n变成 id。\n") == ["分词器把文本"]
    assert soft_breaks("```{glossary}\n术语\nterm\n  第一行，\n  第二行。\n```\n") == ["  第一行，"]
    assert soft_breaks("```{glossary}\n术语\n别名\nterm\n  定义。\n  不写作：词。\n```\n") == []
    assert soft_breaks("## 小测验\n用本章内容检验。\n| 表头 |\n| 内容 |\n```python\n# 注释\n中文\n```\n") == []
    assert soft_breaks("课程 `lm`\n变成 id。") == []  # a break after code is a space Chinese writing keeps
    assert soft_breaks("```python\n代码\n```\n正文，\n接着写。") == ["正文，"]  # after a closed fence, prose again
    assert soft_breaks("之后，\n`lm` 不到一秒。\n10 分钟：讲。\n5 分钟：练。") == [
        "之后，", "`lm` 不到一秒。", "10 分钟：讲。"]
    assert soft_breaks("列表：\n- 一项。\n1. 二项。\n:alt: 图\n```{glossary}\n词\n  定义。\n  † 词。\n```\n") == []
    assert soft_breaks("三个**不在**\n这段。") == ["三个**不在**"]  # emphasis marks are not a side
    assert soft_breaks("个 token\n（注）。") == ["个 token"]  # nor is Latin beside a full-width mark
