"""The term list, enforced: the glossary of each edition is the one list of terms its prose uses.

An entry of book/zh/glossary.md (or book/glossary.md) may end with a line naming forms not to use:

    屋脊点                                  random seed
    ridge point                             随机种子
      ……定义……                                ...definition...
      不写作：脊点。                           Not: seed, seeds.

`check` reads those lines and reports every prose use of a replaced form in that edition's chapters and
pages. A form that lies inside one of the entry's own headwords is no hit (屋脊点 is none for 脊点, "random
seed" none for "seed"), nor is the first-use pattern 提示词（prompt）; a form wider than the headword is one
(这个笔记本, although it holds 笔记本). In the Chinese edition it also enforces the space
rule: one half-width space between a Chinese character and a Latin letter or digit, either way round
("第 10 章会用 Roofline 模型"), none beside full-width punctuation ("（prefill）").

Prose means what a reader reads as text: in a chapter or page, everything but code (fenced blocks and
`spans`), maths, HTML comments and link targets; in the engine (teachllm/), its docstrings and comments; in
viz's Chinese words, each template but its {field} slots. The glossary pages themselves are checked for
the space rule only (they name the replaced forms on purpose).

    python scripts/terms.py check                    # every chapter and page of both editions, and the engine
    python scripts/terms.py check notebooks/src/10-* # some files (either edition, by their path)
    python scripts/terms.py rules                    # the rules the glossaries hold
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = {"en": ROOT / "book" / "glossary.md", "zh": ROOT / "book" / "zh" / "glossary.md"}
RULE_LINE = {"en": re.compile(r"^\s+Not: (.+)\.\s*$"), "zh": re.compile(r"^\s+不写作：(.+)。\s*$")}
SEPARATOR = {"en": ", ", "zh": "、"}
CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
HAS_CJK = re.compile(f"[{CJK}]")
# a Chinese character and a Latin letter or digit side by side (emphasis stars between them do not count)
NO_SPACE = re.compile(f"[{CJK}]\\**[A-Za-z0-9]|[A-Za-z0-9]\\**[{CJK}]")
# directives whose body is prose; every other fenced block is code, maths or a diagram
PROSE_DIRECTIVES = {"glossary", "note", "tip", "hint", "important", "warning", "caution", "attention", "danger",
                    "error", "admonition", "seealso", "dropdown", "margin", "sidebar", "topic", "epigraph"}


@dataclass(frozen=True)
class Rule:
    lang: str
    headwords: tuple[str, ...]  # the entry's headwords in this edition's language: what to write
    replaced: tuple[str, ...]  # what not to write

    def pattern(self) -> re.Pattern:
        """A replaced form as a regex: Chinese literally; a Latin word whole, in any case, plural s allowed, but
        not as a --flag, a name= or a name + 1 (a variable)."""
        latin = r"(?<![A-Za-z0-9_-]){}(?:s|es)?(?![A-Za-z0-9_]|\s*[=+])"
        forms = sorted(self.replaced, key=len, reverse=True)
        return re.compile("|".join(latin.format(re.escape(f)) if f.isascii() else re.escape(f) for f in forms), re.I)


def glossary_entries(lang: str) -> list[tuple[list[str], list[str]]]:
    """(headwords, definition lines) for each entry of one edition's {glossary} block."""
    text = GLOSSARY[lang].read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    if block is None:
        raise ValueError(f"{GLOSSARY[lang].relative_to(ROOT)}: no ```{{glossary}} block")
    entries: list[tuple[list[str], list[str]]] = []
    for line in block[1].splitlines():
        if not line.strip() or line.startswith(":"):
            continue
        if not line[0].isspace():
            if not entries or entries[-1][1]:
                entries.append(([], []))
            entries[-1][0].append(line.strip())
        elif entries:
            entries[-1][1].append(line)
    return entries


def rules(lang: str) -> list[Rule]:
    """The rules one edition's glossary holds: an entry's last definition line, when it names forms not to use."""
    found = []
    for heads, body in glossary_entries(lang):
        lines = [line for line in body if line.strip()]
        match = RULE_LINE[lang].match(lines[-1]) if lines else None
        if match:
            own = tuple(h for h in heads if bool(HAS_CJK.search(h)) == (lang == "zh"))
            found.append(Rule(lang, own, tuple(f.strip() for f in match[1].split(SEPARATOR[lang]))))
    return found


def _blank(match: re.Match) -> str:
    """The matched text as spaces, its line breaks kept: positions and line numbers stay those of the file."""
    return re.sub(r"[^\n]", " ", match[0])


def prose(text: str) -> str:
    """Markdown with everything that is not prose blanked out, position for position."""
    def fence(match: re.Match) -> str:
        directive = re.match(r"\{([\w-]+)\}", match[2].strip())
        if directive and directive[1] in PROSE_DIRECTIVES:
            return " " * len(match[1]) + " " * len(match[2]) + match[3] + " " * len(match[4])
        return _blank(match)

    text = re.sub(r"(?ms)^(`{3,}|~{3,})([^\n]*)(\n.*?\n)(\1)\s*$", fence, text)
    for pattern in (r"<!--.*?-->", r"\$\$.*?\$\$", r"(?<![\\$])\$[^$\n]+\$", r"\{[\w:-]+\}`[^`]*`", r"``.*?``",
                    r"`[^`\n]*`", r"\]\([^)\n]*\)", r"https?://\S+", r"<[^>\n]+>", r"(?m)^\([\w-]+\)=\s*$",
                    r"(?m)^\s*:[\w-]+:.*$"):
        text = re.sub(pattern, _blank, text, flags=re.S)
    return text


def problems_in(text: str, lang: str, rule_list: list[Rule], where: str) -> list[str]:
    """One message per finding in one piece of prose (already `prose()`-masked); `where` prefixes it."""
    found = []

    def line(position: int) -> int:
        return text.count("\n", 0, position) + 1

    for rule in rule_list:
        # the entry's own headwords, and the first-use form with the replaced word in brackets (提示词（prompt）):
        # a hit inside one of them (脊点 in 屋脊点, 种子 in 随机种子) is the chosen term, not a replaced one
        chosen = [m.span() for head in rule.headwords
                  for m in re.finditer(re.escape(head) + r"(?:s|es)?(?:\s*[（(][^）)\n]*[）)])?", text)]
        for hit in rule.pattern().finditer(text):
            if not any(start <= hit.start() and hit.end() <= end for start, end in chosen):
                found.append(f"{where}:{line(hit.start())}: {hit[0]!r} is a form the glossary replaces by "
                             f"{' / '.join(rule.headwords)!r}")
    if lang == "zh":
        for hit in NO_SPACE.finditer(text):
            context = text[max(0, hit.start() - 6):hit.end() + 6].replace("\n", " ").strip()
            found.append(f"{where}:{line(hit.start())}: no space between Chinese and Latin in {context!r}")
    return found


def edition(path: Path) -> str:
    """'zh' for the Chinese edition's files (NN-*.zh.md, book/zh/, viz's zh.py), 'en' for the rest."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    return "zh" if rel.endswith(".zh.md") or rel.startswith("book/zh/") or rel == "teachllm/viz/zh.py" else "en"


def texts(path: Path) -> list[tuple[str, str]]:
    """(where, prose) pieces of one file: a page whole, a chapter source's Markdown cells, a module's docstrings
    and comments, viz's Chinese
    templates one by one (a {field} with a number format, {n:,} say, reads as a digit, so "{n:,}个" misses its
    space as "3个" would; any other field may hold Chinese or Latin and reads as neither)."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    if rel == "teachllm/viz/zh.py":
        sys.path.insert(0, str(ROOT))
        from teachllm.viz.zh import ZH

        def slots(chinese: str) -> str:
            return re.sub(r"\{[^{}:]*\}", "·", re.sub(r"\{[^{}]*:[^{}]*\}", "0", chinese))

        return [(f"{rel} [{english!r}]", slots(chinese)) for english, chinese in ZH.items()]
    if rel.startswith("teachllm/"):
        # each piece starts on its own line of the module, so findings name the module's line numbers
        return [(rel, prose("\n" * (line - 1) + text)) for line, text in code_prose(path.read_text(encoding="utf-8"))]
    if path.suffix == ".py":
        notebook = jupytext.read(path)
        markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
        return [(f"{rel} cell {k}", prose(source)) for k, source in enumerate(markdown, start=1)]
    return [(rel, prose(path.read_text(encoding="utf-8")))]


def code_prose(source: str) -> list[tuple[int, str]]:
    """(first line, text) of each docstring and comment of a Python module: the engine's prose."""
    found = [(t.start[0], t.string[1:]) for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring and node.body:
                found.append((node.body[0].lineno, docstring))
    return sorted(found)


def default_files() -> list[Path]:
    """Every chapter and page of both editions, the README, the engine's docstrings and comments, and viz's
    Chinese words."""
    chapters, book = ROOT / "notebooks" / "src", ROOT / "book"
    return [*sorted(chapters.glob("*.py")), *sorted(chapters.glob("*.zh.md")),
            *sorted(p for p in book.glob("*.md") if p.name != "README.md"), *sorted((book / "zh").glob("*.md")),
            ROOT / "README.md", *sorted((ROOT / "teachllm").rglob("*.py"))]


def check(paths: list[Path]) -> list[str]:
    """Every finding in these files, as `path:line: message` lines; empty when they follow the term list."""
    loaded = {lang: rules(lang) for lang in GLOSSARY}
    found = []
    for path in paths:
        lang = edition(path)
        own_glossary = path.resolve() == GLOSSARY[lang].resolve()
        for where, text in texts(path):
            found += problems_in(text, lang, [] if own_glossary else loaded[lang], where)
        if path.suffix == ".py" and path.resolve().is_relative_to(ROOT / "notebooks"):
            for where, text in slide_titles(path):  # a chapter source carries its Chinese slide titles too
                found += problems_in(text, "zh", loaded["zh"], where)
    return found


def slide_titles(path: Path) -> list[tuple[str, str]]:
    """(where, title) for each Chinese slide title in a chapter source's cell metadata (slide={"title": {"zh": …}})."""
    cells = jupytext.read(path).cells
    return [(f"{path.name} cell {k} (slide title)", prose(title["zh"])) for k, cell in enumerate(cells, start=1)
            if isinstance(title := cell.metadata.get("slide", {}).get("title"), dict) and "zh" in title]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["check", "rules"])
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    if args.command == "rules":
        for lang in GLOSSARY:
            for rule in rules(lang):
                print(f"{lang}: {' / '.join(rule.headwords)} ← not {', '.join(rule.replaced)}")
        return
    paths = [p for p in args.files if p.suffix in (".py", ".md") and p.exists()] or default_files()
    found = check(paths)
    print(*found, sep="\n") if found else print(f"terms: {len(paths)} files follow the glossaries' term lists")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
