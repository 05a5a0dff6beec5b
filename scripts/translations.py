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
the hash of book/preface.md it was translated from, and `check` names the page when the English moves on.

    python scripts/translations.py check              # every chapter in sync (CI runs this as a test)
    python scripts/translations.py status 06          # what is out of date, with the English beside it
    python scripts/translations.py skeleton 06        # start a file: the English text under each header
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "notebooks" / "src"
BOOK = ROOT / "book"
PAGE_HEADER = re.compile(r"^<!-- en: ([\w.-]+\.md) ([0-9a-f]{8}) -->\n")
LANGUAGES = ("zh",)
HEADER = re.compile(r"^<!-- cell (\d+) · en ([0-9a-f]{8}) -->$", re.M)
CJK = re.compile(r"[\u4e00-\u9fff]")


def text_hash(text: str) -> str:
    """Eight hex digits naming one English cell's text."""
    return hashlib.sha1(text.strip().encode()).hexdigest()[:8]


def english_cells(src: Path) -> list[str]:
    """The English Markdown cells of one chapter source, in order."""
    return [c.source for c in jupytext.read(src).cells if c.cell_type == "markdown"]


def translation_path(src: Path, lang: str) -> Path:
    return src.with_name(f"{src.stem}.{lang}.md")


@dataclass(frozen=True)
class Block:
    number: int  # 1-based position among the English Markdown cells
    english_hash: str
    text: str


def read_blocks(path: Path) -> list[Block]:
    """The blocks of one translation file, in file order."""
    text = path.read_text(encoding="utf-8")
    heads = list(HEADER.finditer(text))
    if not heads:
        raise ValueError(f"{path.name}: no `<!-- cell N · en HASH -->` headers")
    ends = [h.start() for h in heads[1:]] + [len(text)]
    return [Block(int(h[1]), h[2], text[h.end():end].strip("\n").strip())
            for h, end in zip(heads, ends, strict=True)]


def cell_problems(src: Path, lang: str) -> list[tuple[int | None, str]]:
    """(English cell number or None, message) for everything that keeps one chapter's translation from matching
    its English source; empty when in sync."""
    path = translation_path(src, lang)
    if not path.is_file():
        hint = f"python scripts/translations.py skeleton {src.stem[:2]}"
        return [(None, f"{path.name} is missing: start it with `{hint}`")]
    english, blocks = english_cells(src), read_blocks(path)
    found = []
    for k, cell in enumerate(english, start=1):
        block = blocks[k - 1] if k <= len(blocks) else None
        if block is None:
            found.append((k, f"{path.name}: English cell {k} has no translation ({cell.splitlines()[0][:60]!r})"))
        elif block.number != k:
            found.append((k, f"{path.name}: block {k} is headed `cell {block.number}`"))
        elif block.english_hash != text_hash(cell):
            found.append((k, f"{path.name}: cell {k} changed in English after it was translated "
                             f"({cell.splitlines()[0][:60]!r}); revise the block, then set its hash to "
                             f"{text_hash(cell)}"))
        elif not CJK.search(block.text):
            found.append((k, f"{path.name}: cell {k} is not translated yet"))
    if len(blocks) > len(english):
        found.append((None, f"{path.name}: {len(blocks) - len(english)} block(s) more than the English cells"))
    return found


def problems(src: Path, lang: str) -> list[str]:
    """The messages of `cell_problems`: empty when the chapter's translation is in sync."""
    return [message for _, message in cell_problems(src, lang)]


def book_problems(lang: str) -> list[str]:
    """The book pages with no translation, or whose English changed after they were translated."""
    found = []
    for page in sorted(BOOK.glob("*.md")):
        if page.name == "README.md":
            continue
        other = BOOK / lang / page.name
        if not other.is_file():
            found.append(f"book/{lang}/{page.name} is missing")
            continue
        head = PAGE_HEADER.match(other.read_text(encoding="utf-8"))
        english_hash = text_hash(page.read_text(encoding="utf-8"))
        if not head or head[1] != page.name:
            found.append(f"book/{lang}/{page.name}: the first line must be `<!-- en: {page.name} HASH -->`")
        elif head[2] != english_hash:
            found.append(f"book/{lang}/{page.name}: book/{page.name} changed after it was translated; revise the "
                         f"page, then set its hash to {english_hash}")
    return found


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["check", "status", "skeleton"])
    parser.add_argument("prefixes", nargs="*", help="chapters whose names start with these (default: all)")
    parser.add_argument("--lang", default="zh", choices=LANGUAGES)
    args = parser.parse_args()
    sources = [s for s in sorted(SOURCES.glob("*.py")) if not args.prefixes or s.name.startswith(tuple(args.prefixes))]
    if args.command == "skeleton":
        for src in sources:
            path = translation_path(src, args.lang)
            if path.exists():
                sys.exit(f"{path.name} exists; edit it instead")
            path.write_text(skeleton(src, args.lang), encoding="utf-8")
            print(f"wrote {path.name}")
        return
    pages = [] if args.prefixes else book_problems(args.lang)
    found = [p for src in sources for p in problems(src, args.lang)] + pages
    if args.command == "status":
        for src in sources:
            english = english_cells(src)
            for k, message in cell_problems(src, args.lang):
                print(message)
                if k is not None:
                    print("    English now:\n" + "\n".join("    | " + t for t in english[k - 1].splitlines()))
        print("\n".join(pages))
    else:
        done = f"{len(sources)} chapters and the book's pages: every {args.lang} translation is in sync"
        print("\n".join(found) or done)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
