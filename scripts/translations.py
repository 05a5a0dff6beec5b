"""The Chinese edition's translations: one Markdown file per chapter, beside its English source.

    notebooks/src/06-logits-to-token.py       the chapter: code cells and English prose (jupytext)
    notebooks/src/06-logits-to-token.zh.md    the Chinese prose, one block per English Markdown cell

Each block starts with a header naming the English cell it translates by position and by a hash of its
text, then holds the Chinese Markdown:

    <!-- cell 3 · en 9f1c0a2b -->
    ## 6.1 Logits 与概率
    ...

Code cells are never translated: the Chinese notebook runs the same code. When an English cell changes,
its hash changes and `check` names the block to revise; a cell with no Chinese yet is an error too.

The book's own pages are translated whole: book/zh/preface.md begins `<!-- en: preface.md 1a2b3c4d -->`,
the hash of book/preface.md it was translated from, and `check` names the page when the English moves on. A page
whose hash matches is still checked as a translation: text below the header, in Chinese, every code fence closed,
and the English page's headings, level by level (a page cut short, or a section left out, has fewer).

    python scripts/translations.py check              # every chapter in sync (CI runs this as a test)
    python scripts/translations.py status 06          # what is out of date, with the English beside it
    python scripts/translations.py skeleton 06        # start a file: the English text under each header

Code cells are the same in both editions, with one exception: the comments in a cell a learner works in or
reads the feedback of (tagged `exercise` or `check`: "# Exercise 1: your answer here.") are translated when
the notebook is built, from one catalogue per language, notebooks/src/comments.zh.json (English comment →
translation). A comment with no entry stops the build; the tests also fail on an entry no cell uses.

Every file is read as UTF-8 (a leading byte-order mark is dropped); a file that is not UTF-8, an empty file or a
malformed header is reported in one line naming the file, what is wrong and the fix, never decoded by guesswork.
A byte-order mark is harmless in a translation or a book page (read here, and by Sphinx, without it) but not in a
chapter source: jupytext, which builds the notebooks, reads it as part of the first line, so `check` reports it.
"""

from __future__ import annotations

import argparse
import codecs
import hashlib
import io
import json
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "notebooks" / "src"
BOOK = ROOT / "book"
# A hash is a number written in hex: 9F1C0A2B and 9f1c0a2b name the same English text, so both cases are accepted
# (and compared lower-cased) rather than sending a translator after a difference that is not one. `skeleton` and
# the check's messages write lower case.
PAGE_HEADER = re.compile(r"^<!-- en: ([\w.-]+\.md) ([0-9a-fA-F]{8}) -->(?:\n|$)")
LANGUAGES = ("zh",)
HEADER = re.compile(r"^<!-- cell (\d+) · en ([0-9a-fA-F]{8}) -->[ \t]*$", re.M)
HEADER_LIKE = re.compile(r"^<!--\s*cell\b.*$", re.M | re.I)  # what a mistyped header looks like
CJK = re.compile(r"[\u4e00-\u9fff]")
COMMENTED_TAGS = {"exercise", "check"}  # code cells whose comments a learner reads in their language
KEPT_COMMENT = re.compile(r"^(NBVAL_\w+|noqa\b.*|type: .*)$")  # markers for tools, never translated


class TranslationError(ValueError):
    """An expected failure, in one line naming the file, what is wrong and the fix; the CLI prints `error: ...`."""


def read_text(path: Path, name: str | None = None) -> str:
    """The text of a UTF-8 file, with any byte-order mark dropped and Windows line ends made Unix ones; raises
    TranslationError for bytes that are not UTF-8 (an editor saved it as GB18030, say) rather than guess."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TranslationError(f"{name or path.name} is not UTF-8 text (line {line}); save it as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def line_number(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def first_line(text: str) -> str:
    """The start of a cell's first line, to name it in a message (an empty cell has none)."""
    return (text.strip().splitlines() or [""])[0][:60]


def skeleton_command(name: str) -> str:
    return f"python scripts/translations.py skeleton {name[:2]}"


def text_hash(text: str) -> str:
    """Eight hex digits naming one English cell's text."""
    return hashlib.sha1(text.strip().encode()).hexdigest()[:8]


def english_cells(src: Path) -> list[str]:
    """The English Markdown cells of one chapter source, in order."""
    notebook = jupytext.reads(read_text(src), fmt={"extension": src.suffix})
    return [c.source for c in notebook.cells if c.cell_type == "markdown"]


def translation_path(src: Path, lang: str) -> Path:
    return src.with_name(f"{src.stem}.{lang}.md")


@dataclass(frozen=True)
class Block:
    number: int  # 1-based position among the English Markdown cells
    english_hash: str
    text: str


def check_layout(path: Path, text: str) -> None:
    """Raise TranslationError unless the file is a run of well-formed headers, each with its block below it."""
    if not text.strip():
        raise TranslationError(f"{path.name} is empty: delete it, then start it with `{skeleton_command(path.name)}`")
    for line in HEADER_LIKE.finditer(text):
        if not HEADER.match(line[0]):
            raise TranslationError(f"{path.name} line {line_number(text, line.start())}: {line[0][:60]!r} is not a "
                                   f"block header; write it as `<!-- cell N · en HASH -->` (HASH: 8 hex digits)")
    first = HEADER.search(text)
    if first is None:
        raise TranslationError(f"{path.name}: no `<!-- cell N · en HASH -->` headers; "
                               f"`{skeleton_command(path.name)}` shows the layout")
    if text[:first.start()].strip():
        raise TranslationError(f"{path.name}: text before the first `<!-- cell N · en HASH -->` header; "
                               "move it into a block or delete it")


def read_blocks(path: Path) -> list[Block]:
    """The blocks of one translation file, in file order; raises TranslationError for a file that is not one."""
    text = read_text(path)
    check_layout(path, text)
    heads = list(HEADER.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)]
    return [Block(int(h[1]), h[2].lower(), text[h.end():end].strip("\n").strip())
            for h, end in zip(heads, ends, strict=True)]


def cell_problems(src: Path, lang: str) -> list[tuple[int | None, str]]:
    """(English cell number or None, message) for everything that keeps one chapter's translation from matching
    its English source; empty when in sync."""
    path = translation_path(src, lang)
    if not path.is_file():
        return [(None, f"{path.name} is missing: start it with `{skeleton_command(src.name)}`")]
    try:
        english, blocks = english_cells(src), read_blocks(path)
    except TranslationError as e:
        return [(None, str(e))]
    found = []
    if src.read_bytes().startswith(codecs.BOM_UTF8):  # harmless in a translation (read here only), not in a source
        found.append((None, f"{src.name} starts with a byte-order mark, which jupytext (and so build_notebooks.py) "
                            "reads as text: its first cell would not be Markdown; save it as UTF-8 without a BOM"))
    for k, cell in enumerate(english, start=1):
        block = blocks[k - 1] if k <= len(blocks) else None
        if block is None:
            found.append((k, f"{path.name}: English cell {k} has no translation ({first_line(cell)!r})"))
        elif block.number != k:
            found.append((k, f"{path.name}: block {k} is headed `cell {block.number}`"))
        elif block.english_hash != text_hash(cell):
            found.append((k, f"{path.name}: cell {k} changed in English after it was translated "
                             f"({first_line(cell)!r}); revise the block, then set its hash to {text_hash(cell)}"))
        elif not CJK.search(block.text):
            found.append((k, f"{path.name}: cell {k} is not translated yet"))
    if len(blocks) > len(english):
        found.append((None, f"{path.name}: {len(blocks) - len(english)} block(s) more than the English cells"))
    return found


def problems(src: Path, lang: str) -> list[str]:
    """The messages of `cell_problems`: empty when the chapter's translation is in sync."""
    return [message for _, message in cell_problems(src, lang)]


def outline(text: str) -> tuple[list[str], tuple[int, str, str] | None]:
    """A Markdown page's headings outside code fences, in order, and the fence left open at its end as (line
    number, line, its mark), None when every fence closes. A fence closes with a line of its own character, at
    least as many (MyST nests ```` around ```)."""
    headings, fence = [], None
    for number, line in enumerate(text.split("\n"), start=1):
        mark = re.match(r"(`{3,}|~{3,}|:{3,})", line)
        if mark and fence is None:
            fence = (number, line, mark[1])
        elif mark and set(line.strip()) == {fence[2][0]} and len(line.strip()) >= len(fence[2]):
            fence = None
        elif fence is None and re.match(r"#{1,6}\s", line):
            headings.append(line.strip())
    return headings, fence


def translation_outline_problem(name: str, english_name: str, text: str, english: str) -> str | None:
    """Why a page whose hash matches is still no translation of its English (nothing below the header, no
    Chinese, a code fence left open, other headings), or None."""
    body = PAGE_HEADER.sub("", text, count=1)
    if not body.strip():
        return f"{name} holds only its header line: translate {english_name} below it"
    if not CJK.search(body):
        return f"{name} is not translated yet: it has no Chinese below its header; translate {english_name}"
    headings, fence = outline(text)
    if fence:
        return (f"{name} line {fence[0]}: the code fence {fence[1][:40]!r} is never closed; close it with a line "
                f"`{fence[2]}`, as in {english_name}")
    wanted = outline(english)[0]
    levels = [h.split()[0] for h in headings]
    for k, heading in enumerate(wanted):
        if k >= len(levels) or levels[k] != heading.split()[0]:
            return (f"{name} has {len(headings)} headings where {english_name} has {len(wanted)}, the first missing "
                    f"or different at heading {k + 1} ({heading[:60]!r} in English): translate every section of "
                    f"{english_name}, heading for heading")
    if len(levels) > len(wanted):
        return (f"{name} has {len(headings)} headings where {english_name} has {len(wanted)} (the first extra: "
                f"{headings[len(wanted)][:60]!r}): keep the English page's headings, no more")
    return None


def page_problem(page: Path, lang: str) -> str | None:
    """Why the translation of one book page does not match its English, or None when it does."""
    other, name = BOOK / lang / page.name, f"book/{lang}/{page.name}"
    if not other.is_file():
        return f"{name} is missing"
    try:
        text = read_text(other, name)
        english = read_text(page, f"book/{page.name}")
    except TranslationError as e:
        return str(e)
    head, english_hash = PAGE_HEADER.match(text), text_hash(english)
    if not head or head[1] != page.name:
        return f"{name}: the first line must be `<!-- en: {page.name} HASH -->`"
    if head[2].lower() != english_hash:
        return (f"{name}: book/{page.name} changed after it was translated; revise the page, then set its hash to "
                f"{english_hash}")
    return translation_outline_problem(name, f"book/{page.name}", text, english)


def book_problems(lang: str) -> list[str]:
    """The book pages with no translation, whose English changed after they were translated, or whose
    translation is cut short or broken."""
    found = [page_problem(page, lang) for page in sorted(BOOK.glob("*.md")) if page.name != "README.md"]
    return [message for message in found if message]


def translated_cells(src: Path, lang: str) -> list[str]:
    """The translated Markdown, one string per English Markdown cell; raises when the file is out of sync."""
    found = problems(src, lang)
    if found:
        raise ValueError("\n".join(found))
    return [b.text for b in read_blocks(translation_path(src, lang))]


def skeleton(src: Path, lang: str) -> str:
    """A translation file holding the English text under each header, for a translator to replace."""
    return "".join(f"<!-- cell {k} · en {text_hash(c)} -->\n{c.strip()}\n\n"
                   for k, c in enumerate(english_cells(src), start=1))


def chapters(prefixes: list[str]) -> list[Path]:
    """The chapter sources whose names start with one of the prefixes (all of them for none); raises
    TranslationError for a prefix that names no chapter, rather than report nothing as "in sync"."""
    sources = sorted(SOURCES.glob("*.py"))
    known = ", ".join(s.name.split("-")[0] for s in sources) or "none"
    for prefix in prefixes:
        if not any(s.name.startswith(prefix) for s in sources):
            raise TranslationError(f"no chapter in notebooks/src starts with {prefix!r}; give one of {known} "
                                   "(or none, for every chapter)")
    if not sources:
        raise TranslationError(f"no chapter sources in {SOURCES}; run this from a teachllm checkout")
    return [s for s in sources if not prefixes or s.name.startswith(tuple(prefixes))]


def write_skeletons(sources: list[Path], lang: str) -> int:
    """Start a translation file for each chapter; refuses (before writing any) when one exists."""
    for src in sources:
        if translation_path(src, lang).exists():
            raise TranslationError(f"{translation_path(src, lang).name} exists; edit it instead")
    for src in sources:
        translation_path(src, lang).write_text(skeleton(src, lang), encoding="utf-8")
        print(f"wrote {translation_path(src, lang).name}")
    return 0


def show_status(sources: list[Path], lang: str, pages: list[str]) -> int:
    """Print what is out of date, with the English text now beside each cell; 1 when anything is."""
    found = list(pages)
    for src in sources:
        chapter = cell_problems(src, lang)
        english = english_cells(src) if any(k is not None for k, _ in chapter) else []  # readable: k names a cell
        for k, message in chapter:
            found.append(message)
            print(message)
            if k is not None:
                print("    English now:\n" + "\n".join("    | " + t for t in english[k - 1].splitlines()))
    if pages:
        print("\n".join(pages))
    return 1 if found else 0


def check(sources: list[Path], lang: str, pages: list[str]) -> int:
    """Print every problem, or one line saying all is in sync; 1 when anything is out of date."""
    found = [p for src in sources for p in problems(src, lang)] + pages
    print("\n".join(found) or f"{len(sources)} chapters and the book's pages: every {lang} translation is in sync")
    return 1 if found else 0


def comments_path(lang: str) -> Path:
    return SOURCES / f"comments.{lang}.json"


def comment_catalogue(lang: str) -> dict[str, str]:
    """English comment → its translation, for the comments of exercise and check cells."""
    path = comments_path(lang)
    try:
        catalogue = json.loads(read_text(path))
    except FileNotFoundError:
        raise TranslationError(f"{path.name} is missing: it translates the comments of exercise and check "
                               "cells") from None
    except json.JSONDecodeError as e:
        raise TranslationError(f"{path.name} is not JSON ({e}): it holds one object, "
                               '{"English comment": "translation", ...}') from None
    if not isinstance(catalogue, dict):
        raise TranslationError(f"{path.name} holds a {type(catalogue).__name__}: it holds one object, "
                               '{"English comment": "translation", ...}')
    wrong = [k for k, v in catalogue.items() if not isinstance(v, str) or not CJK.search(v)]
    if wrong:
        raise TranslationError(f"{path.name}: the entry for {wrong[0]!r} is not a translation (a string in {lang})")
    return catalogue


def commented(cell) -> bool:
    """Whether a notebook cell's comments are translated: a code cell tagged exercise or check."""
    return cell.cell_type == "code" and bool(COMMENTED_TAGS & set(cell.metadata.get("tags", [])))


def comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text after "# ") of every comment in a code cell's source; lines count from 1."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(t.start[0], t.start[1], t.string[1:].strip()) for t in tokens if t.type == tokenize.COMMENT]


def localise_comments(source: str, catalogue: dict[str, str], where: str = "a cell") -> str:
    """The same code with each comment replaced by its entry in `catalogue`; raises TranslationError naming
    the first comment that has none."""
    lines = source.split("\n")
    for line, column, text in reversed(comments(source)):
        if KEPT_COMMENT.match(text):
            continue
        if text not in catalogue:
            raise TranslationError(f"{where}: the comment {text!r} has no entry in the comment catalogue; "
                                   f"add `{json.dumps(text, ensure_ascii=False)}: \"…\"`")
        lines[line - 1] = lines[line - 1][:column] + "# " + catalogue[text]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["check", "status", "skeleton"])
    parser.add_argument("prefixes", nargs="*", help="chapters whose names start with these (default: all)")
    parser.add_argument("--lang", default="zh", choices=LANGUAGES)
    args = parser.parse_args()
    try:
        sources = chapters(args.prefixes)
        if args.command == "skeleton":
            sys.exit(write_skeletons(sources, args.lang))
        pages = [] if args.prefixes else book_problems(args.lang)
        sys.exit((show_status if args.command == "status" else check)(sources, args.lang, pages))
    except TranslationError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
