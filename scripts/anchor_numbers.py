"""Every number the chapters' prose quotes, tied to the one printed line or line of code it quotes.

    tests/notebook_numbers.json    for each chapter, where each quoted number's evidence is

A number in a Markdown cell of a committed notebook, English or Chinese, is found by the words around it.
Its anchor names the code cell and the line there that backs it, again by the words around the number,
never by the number itself:

    {"cell": 8, "en": "almost greedy (⟨⟩ bits), while the",
     "zh": "时，“sure”提示词几乎就是贪婪解码（⟨⟩ 比特），而“open”提示",
     "code": 7, "out": "at T = #: sure ⟨⟩ bits, open # bits"}

reads: in Markdown cell 8 of chapter 6 (counted as `scripts/translations.py` counts them), the number between
"almost greedy (" and " bits), while the" in English, and the one before " 比特" in the Chinese words quoted,
is the number that code cell 7 (counted among the English code cells) prints between "sure " and " bits"
on the line "at T = #: sure ⟨⟩ bits, open # bits". `#` stands for any other number and ⟨⟩ for the one in
question; white space is collapsed. A line the Chinese edition prints in Chinese has its own words there,
`"out_zh"` beside `"out"`. `"src"` in place of `"out"` reads the cell's source instead (a
`max_tokens=300`, an `assert`; comments do not count), and `"nth": 3` takes the third line that fits when
several do (the rows of a table whose labels are numbers). The check reads the committed notebook, finds
the line, takes the number there and requires the prose to give that number to the prose's own precision:
"0.08" is backed by 0.076 (two decimals), "about 45,000" by 45,080 (two significant digits, because of
"about"; 45,001 would need 45,001), "85%" by 0.850. Since an anchor holds no number, a number changed in
the prose, or a printout that changes under it, fails. The output of a cell nbval does not compare (a
timing: tagged nbval-ignore-output) is no evidence; its source is.

Numbers quoted from elsewhere (the course notes, a spec sheet, a definition) have no output to point
at: each chapter's "quoted" list holds the quoted words themselves, in both editions, with the reason; a
number inside them passes while the words stay exactly as listed.

    python scripts/anchor_numbers.py check [NN ...]    what does not hold, both editions (the test runs this)
    python scripts/anchor_numbers.py show NN           each anchor with its prose and its evidence, to review
    python scripts/anchor_numbers.py propose NN        add an anchor for each quoted number that has none
    python scripts/anchor_numbers.py mutate [NN ...]   change each quoted number in memory (×1.37, +1 in its last
                                                       digit, ×1.5) and count how many changes the check reports

`propose` is a first draft, not a verdict: it takes the number in the chapter's code cells that agrees with
the prose and is nearest (the cell just above first), on a line sharing the prose's words; a coincidence
fits as well as the real evidence, so read every proposal with `show` and correct the JSON by hand.

What the prose says that is not a quoted number, and is skipped (each for its reason):
- headings, code spans and fenced code: they quote code, which runs, and nbval compares what it prints;
- the exercises: they give inputs to try, not results;
- references to chapters, lectures and the chapter's own sections ("chapter 7", "§2.3", "in 6.3", "第 11
  讲", "4.3 节"), links and years: not measurements;
- digits that are part of a name or a formula (SmolLM2-135M, H100, fp16, Llama-2-7B, 24bsh², 2·m·k·n);
- numbered-list markers at the start of a line;
- integers up to 12 (`SMALL`): counts, indices, parameters and definitions ("k = 3", "4-bit", "T = 1",
  "2 FLOPs per multiply-add"), unless "about", "≈", "%" or "×" marks them as a measurement ("about 2 bits",
  "9%", "2×"), which is checked like any other number.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tokenize
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ANCHORS = ROOT / "tests" / "notebook_numbers.json"
EDITIONS = ("en", "zh")
HOLE, OTHER = "⟨⟩", "#"  # in a signature: the number in question, and any other number
SMALL = 12  # integers up to this are counts, indices, parameters and definitions, unless marked as measurements

# A number as prose and printouts write it: 1,536  0.0012  −0.99  .47  1e-05  85 (of 85%). Not part of a name
# (H100, fp16, Llama-2-7B, 24bsh², 2·m), but a superscript (1.18²) or an "x" (1000x, read as ×) may follow.
NUMBER = re.compile(r"(?<![A-Za-z0-9_.·^])(?<![A-Za-z]-)[-−]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
                    r"(?:e[-−+]?\d+)?(?!(?!x\b)[A-Za-z0-9_·]|[.,]\d)")
SKIP = [
    re.compile(r"^## (?:Exercises|练习|习题).*", re.S | re.M),  # exercises give inputs to try, not results
    re.compile(r"```.*?```", re.S),  # fenced code
    re.compile(r"`[^`\n]*`"),  # code spans
    re.compile(r"^#.*$", re.M),  # headings
    re.compile(r"https?://\S+"),  # links
    re.compile(r"^\s*\d+[.)]\s", re.M),  # numbered-list markers
    re.compile(r"§\s*\d+(?:\.\d+)*"),  # a section of a course-notes document ("《LLM 生成过程》§2.3")
    re.compile(r"\b(?:chapters?|sections?|lectures?)\s+\d+(?:\.\d+)?(?:\s*(?:,|and|or|–|-|to)\s*\d+(?:\.\d+)?)*",
               re.I),
    re.compile(r"\b(?:19\d\d|20[0-3]\d)\b"),  # years
    re.compile(r"第\s*\d+(?:\.\d+)?\s*[章节讲]|\d+(?:\.\d+)?\s*节"),  # "第 10 章", "第 11 讲", "4.3 节"
]
# "in 6.3", "of 8.2", "(10.8)", "| 13.1, 13.2 |": one of the chapter's own sections (another chapter's N.M is
# a number like any other: "a perplexity of 7.1", "[−1.2, 0.5, 2.3]")
SECTION = re.compile(r"(?:\b(?:in|of|see|from|and|to)\s+|[(,|（，、]\s*)(\d{1,2}\.\d)\b", re.I)
SECTION_HEADING = re.compile(r"^#+\s+(\d{1,2}\.\d)\b", re.M)
APPROX = re.compile(r"\b(?:about|around|near|nearly|almost|roughly|some)\b|[≈~]|约|大约|大概|接近|将近|差不多|近", re.I)
CLAUSE_END = re.compile(r"[.;:!?]\s|[。；：！？，]")
PERCENT = ("%", "％")
SUMMARY = ("## Summary", "## 小结", "## 总结", "## 本章小结")  # cells that restate the whole chapter


# ---------------------------------------------------------------------------------------------- the prose


@dataclass(frozen=True)
class Quote:
    """One number the prose quotes."""

    text: str  # as written: "1,536", "−0.99", ".47"
    start: int  # where it stands in its Markdown cell
    approximate: bool  # "about", "≈", "约" … before it, in the same clause
    percent: bool  # "%" after it (or after the end of its range, "50–80%")


def blank(text: str, start: int, end: int) -> str:
    """The text with [start, end) overwritten by spaces (newlines kept), so that positions do not move."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def quotes_in(markdown: str, sections: frozenset[str] = frozenset()) -> list[Quote]:
    """The numbers a Markdown cell quotes: every number, less what the module's docstring lists as skipped."""
    text = markdown
    for pattern in SKIP:
        for m in pattern.finditer(text):
            text = blank(text, *m.span())
    for m in SECTION.finditer(text):
        if m.group(1) in sections:
            text = blank(text, *m.span(1))
    out = []
    for m in NUMBER.finditer(markdown):
        if text[m.start():m.end()] != m.group(0):
            continue  # inside something skipped
        approximate = bool(APPROX.search(CLAUSE_END.split(text[max(0, m.start() - 16):m.start()])[-1]))
        after = text[m.end():m.end() + 1]
        percent = after in PERCENT or bool(re.match(r"[–-]\s?[\d.]+\s?[%％]", text[m.end():m.end() + 12]))
        small = re.fullmatch(r"[-−]?\d+", m.group(0)) and abs(int(m.group(0).replace("−", "-"))) <= SMALL
        if small and not (approximate or percent or after == "×"):
            continue  # a count, an index, a parameter or a definition ("k = 3", "4-bit", "T = 1")
        out.append(Quote(m.group(0), m.start(), approximate, percent))
    return out


def shaped(text: str) -> tuple[str, dict[int, int]]:
    """The text with every number written as `#` and each run of white space as one space, and where each
    number (by its position in `text`) landed. Signatures are written and matched in this form."""
    out, where, length, at = [], {}, 0, 0
    for m in NUMBER.finditer(text):
        out.append(re.sub(r"\s+", " ", text[at:m.start()]))
        length += len(out[-1])
        where[m.start()] = length
        out.append(OTHER)
        length += 1
        at = m.end()
    out.append(re.sub(r"\s+", " ", text[at:]))
    return "".join(out), where


def fits(shape: str, at: int, signature: str) -> bool:
    """Whether the number at `at` of a shaped text is the one `signature` ("before⟨⟩after") describes."""
    before, _, after = signature.partition(HOLE)
    return shape[:at].endswith(before) and shape[at + 1:].startswith(after)


# -------------------------------------------------------------------------------------------- the code


def code_source(cell) -> str:
    """A code cell's source without its comments (a number in a comment is prose, not code); 45_000 reads
    45000."""
    lines = cell.source.splitlines()
    try:
        for token in tokenize.generate_tokens(io.StringIO(cell.source).readline):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                lines[row - 1] = lines[row - 1][:col]
    except (tokenize.TokenError, SyntaxError):  # not plain Python (a %magic): keep it whole
        pass
    return re.sub(r"\b\d+(?:_\d+)+\b", lambda m: m.group(0).replace("_", ""), "\n".join(lines))


def code_output(cell) -> str:
    """What a code cell printed, and the text form of what it returned."""
    out = ""
    for output in cell.get("outputs", []):
        text = output.get("text", output.get("data", {}).get("text/plain", ""))
        out += text if "text" in output or not out or out.endswith("\n") else "\n" + text  # a stream may end mid-line
    return out


def timing(cell) -> bool:
    """A cell whose output nbval does not compare (a timing, a measured peak): its numbers change from run to run."""
    return "nbval-ignore-output" in cell.metadata.get("tags", []) or "# NBVAL_IGNORE_OUTPUT" in cell.source


@dataclass(frozen=True)
class Place:
    """One number in a code cell's output or source."""

    text: str
    line: str  # the line it stands on, shaped
    at: int  # its position in the shaped line
    percent: bool


def places(text: str) -> list[Place]:
    """Every number in a printout or a source, line by line."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        shape, where = shaped(line)
        out += [Place(m.group(0), shape, where[m.start()], line[m.end():m.end() + 1] in PERCENT)
                for m in NUMBER.finditer(line)]
    return out


def find(text: str, signature: str, nth: int | None = None) -> tuple[Place | None, str]:
    """The number a signature (and `nth`) picks out of a printout or a source, or None and why not."""
    found = [p for p in places(text) if fits(p.line, p.at, signature)]
    if nth is not None:
        return (found[nth - 1], "") if 0 < nth <= len(found) else (None, f"only {len(found)} lines fit")
    if len(found) == 1:
        return found[0], ""
    return None, "no line fits" if not found else f'{len(found)} lines fit (add "nth")'


# ---------------------------------------------------------------------------------------- the comparison


def decimal(number: str) -> Decimal:
    return Decimal(number.replace(",", "").replace("−", "-"))


def significant(number: str) -> int:
    """Significant digits as written: 45,000 → 2, 0.050 → 2, 8 → 1, 1e-05 → 1."""
    digits = number.replace(",", "").lstrip("-−").lower().split("e")[0]
    if "." in digits:
        return max(len(digits.replace(".", "").lstrip("0")), 1)
    return max(len(digits.strip("0")), 1)


def agrees(quote: Quote, evidence: Place) -> bool:
    """Whether the prose's number is the evidence, rounded as the prose rounds it: to the prose's decimals, or to
    its significant digits after "about" (and in scientific notation). "85%" is backed by 85% and by 0.85; an
    unsigned number by a negative one ("0.99 nats below")."""
    wanted, have = decimal(quote.text), decimal(evidence.text)
    if quote.percent and not evidence.percent:
        have *= 100
    elif evidence.percent and not quote.percent:
        have /= 100
    if quote.approximate or "e" in quote.text.lower():
        if have == 0 or wanted == 0:
            return have == wanted
        step = Decimal(1).scaleb(have.adjusted() - significant(quote.text) + 1)
    else:
        mantissa = quote.text.split("e")[0]
        step = Decimal(1).scaleb(-len(mantissa.split(".")[1]) if "." in mantissa else 0)
    for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN):  # the evidence may have been rounded either way
        rounded = (have / step).quantize(Decimal(1), rounding=rounding) * step
        if rounded == wanted or (not quote.text.startswith(("-", "−")) and abs(rounded) == wanted):
            return True
    return False


# -------------------------------------------------------------------------------------------- notebooks


@dataclass(frozen=True)
class Chapter:
    """One committed notebook, as the anchors address it."""

    stem: str
    edition: str
    prose: tuple[str, ...]  # Markdown cells, in order: anchor "cell" n is prose[n - 1]
    code: tuple  # code cells, in order, the Chinese edition's language cell left out: anchor "code" n
    code_before: tuple[int, ...]  # for each Markdown cell, how many of those code cells come before it

    @property
    def sections(self) -> frozenset[str]:
        """The chapter's own section numbers ("6.3"): "in 6.3" refers to a heading, and quotes nothing."""
        own = self.stem[:2].lstrip("0") + "."
        return frozenset(m.group(1) for cell in self.prose for m in SECTION_HEADING.finditer(cell)
                         if m.group(1).startswith(own))

    def quotes(self, cell: int) -> list[Quote]:
        """The numbers Markdown cell `cell` (1-based) quotes."""
        return quotes_in(self.prose[cell - 1], self.sections)

    def with_prose(self, cell: int, text: str) -> Chapter:
        return replace(self, prose=self.prose[:cell - 1] + (text,) + self.prose[cell:])


def notebook_path(stem: str, edition: str) -> Path:
    return (NOTEBOOKS if edition == "en" else NOTEBOOKS / edition) / f"{stem}.ipynb"


def read_chapter(stem: str, edition: str, path: Path | None = None) -> Chapter:
    nb = nbformat.read(path or notebook_path(stem, edition), as_version=4)
    prose, code, code_before = [], [], []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            prose.append(cell.source)
            code_before.append(len(code))
        elif cell.cell_type == "code" and "language" not in cell.metadata.get("tags", []):
            code.append(cell)
    return Chapter(stem, edition, tuple(prose), tuple(code), tuple(code_before))


def stems(prefixes: list[str] | None = None) -> list[str]:
    names = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
    return [s for s in names if not prefixes or any(s.startswith(p) for p in prefixes)]


def load_anchors(path: Path = ANCHORS) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write_anchors(anchors: dict, path: Path = ANCHORS) -> None:
    """One entry per line, chapters in order, so that a review reads the diff line by line."""
    chunks = []
    for stem in sorted(anchors):
        parts = []
        for key in ("quoted", "numbers"):
            rows = ",\n".join("      " + json.dumps(e, ensure_ascii=False) for e in anchors[stem].get(key, []))
            parts.append(f'    "{key}": [\n{rows}\n    ]' if rows else f'    "{key}": []')
        chunks.append(f'  "{stem}": {{\n' + ",\n".join(parts) + "\n  }")
    path.write_text("{\n" + ",\n".join(chunks) + "\n}\n", encoding="utf-8")


# -------------------------------------------------------------------------------------------- the check


def context(text: str, start: int, width: int = 50) -> str:
    return re.sub(r"\s+", " ", text[max(0, start - width):start + width // 2]).strip()


def phrases(entry: dict, edition: str) -> list[str]:
    """The quoted words of a "quoted" entry in one edition: one phrase, or a list of them."""
    words = entry.get(edition, [])
    return [words] if isinstance(words, str) else words


def inside_quotation(cell: str, quote: Quote, entry: dict, edition: str) -> bool:
    """Whether the quote stands inside the entry's quoted words (compared with white space collapsed)."""
    flat = re.sub(r"\s+", " ", cell)
    at = len(re.sub(r"\s+", " ", cell[:quote.start] + "x")) - 1  # the quote's position in the collapsed text
    return any(m.start() <= at < m.end() for words in phrases(entry, edition)
               for m in re.finditer(re.escape(words), flat))


def evidence(chapter: Chapter, entry: dict) -> tuple[Place | None, str]:
    """The number an anchor points at, or None and what is wrong with the anchor."""
    kind = "out" if "out" in entry else "src"
    if not 0 < entry.get("code", 0) <= len(chapter.code):
        return None, f"its anchor names code cell {entry.get('code')}, and there are {len(chapter.code)}"
    cell = chapter.code[entry["code"] - 1]
    if kind == "out" and timing(cell):
        return None, (f"its anchor reads the output of code cell {entry['code']}, which nbval does not compare "
                      "(a timing): quote what to look for, or a number its source holds")
    words = entry.get(f"{kind}_{chapter.edition}", entry[kind])  # a line the Chinese edition prints in Chinese
    place, why = find(code_output(cell) if kind == "out" else code_source(cell), words, entry.get("nth"))
    if place is None:
        return None, f"code cell {entry['code']}'s {'output' if kind == 'out' else 'source'}: {why} {words!r}"
    return place, ""


def cell_problems(chapter: Chapter, cell: int, anchors: dict) -> list[str]:
    """What keeps the numbers of one Markdown cell from being tied to their evidence; empty when all hold."""
    entries = anchors.get(chapter.stem, {})
    numbers = [e for e in entries.get("numbers", []) if e["cell"] == cell and chapter.edition in e]
    quotations = [e for e in entries.get("quoted", []) if e["cell"] == cell and chapter.edition in e]
    text = chapter.prose[cell - 1]
    shape, at = shaped(text)
    where = f"{chapter.edition}/{chapter.stem} cell {cell}"
    out, used = [], set()
    for quote in chapter.quotes(cell):
        if any(inside_quotation(text, quote, q, chapter.edition) for q in quotations):
            continue
        said = f"{where}: {quote.text!r} in …{context(text, quote.start)}…\n    "
        mine = [k for k, e in enumerate(numbers) if fits(shape, at[quote.start], e[chapter.edition])]
        used.update(mine)
        if not mine:
            out.append(said + f"no anchor ties it to its evidence: add one to {ANCHORS.name} (`python scripts/"
                       f"anchor_numbers.py propose {chapter.stem[:2]}` drafts it, `show {chapter.stem[:2]}` shows it"
                       "), or, for a number quoted from elsewhere, the quoted words and why to its \"quoted\"")
        elif len(mine) > 1:
            out.append(said + f"{len(mine)} anchors fit it: lengthen their {chapter.edition!r} signatures")
        else:
            place, why = evidence(chapter, numbers[mine[0]])
            if place is None:
                out.append(said + why)
            elif not agrees(quote, place):
                shown = place.line[:place.at] + place.text + place.line[place.at + 1:]
                out.append(said + f"but code cell {numbers[mine[0]]['code']} "
                           f"{'prints' if 'out' in numbers[mine[0]] else 'has'} {place.text}: {shown!r}")
    for k, e in enumerate(numbers):
        if k not in used:
            out.append(f"{where}: the anchor {e[chapter.edition]!r} fits no number the cell quotes")
    for q in quotations:
        for words in phrases(q, chapter.edition):
            if words not in re.sub(r"\s+", " ", text):
                out.append(f"{where}: the quoted words {words!r} are not there")
    return out


def problems(chapter: Chapter, anchors: dict) -> list[str]:
    """Everything that keeps one notebook's quoted numbers from being tied to their evidence; empty when all
    hold."""
    entries = anchors.get(chapter.stem, {})
    out = [f"{chapter.edition}/{chapter.stem}: an anchor names Markdown cell {e['cell']}, and there are "
           f"{len(chapter.prose)}" for e in entries.get("numbers", []) + entries.get("quoted", [])
           if not 0 < e["cell"] <= len(chapter.prose)]
    return out + [p for n in range(1, len(chapter.prose) + 1) for p in cell_problems(chapter, n, anchors)]


# ------------------------------------------------------------------------------------------ the mutations

MUTATIONS = ("×1.37", "+1", "×1.5")  # the changes of issue 22's experiment


def mutated(number: str, kind: str) -> str | None:
    """The number changed as `kind` says and written as the prose wrote it (its decimals, thousands commas,
    sign, a leading "." or an exponent); None when the change disappears in that rounding (0 × 1.37)."""
    sign = number[0] if number[0] in "-−" else ""
    mantissa, e, exponent = number[len(sign):].partition("e")
    places = len(mantissa.split(".")[1]) if "." in mantissa else 0
    value = decimal(mantissa)
    value = value + Decimal(1).scaleb(-places) if kind == "+1" else value * Decimal(kind[1:])
    value = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{value:{',' if ',' in mantissa else ''}.{places}f}"
    if mantissa.startswith(".") and text.startswith("0."):
        text = text[1:]
    text = sign + text + e + exponent
    return None if text == number else text


def mutation_report(chapter: Chapter, anchors: dict) -> dict[str, dict[str, list]]:
    """For each kind of change, the changed quotes the check reports (`caught`) and those it lets through
    (`missed`), as (cell, original, changed)."""
    report = {kind: {"caught": [], "missed": []} for kind in MUTATIONS}
    for cell in range(1, len(chapter.prose) + 1):
        text = chapter.prose[cell - 1]
        for quote in chapter.quotes(cell):
            for kind in MUTATIONS:
                new = mutated(quote.text, kind)
                if new is None:
                    continue
                changed = chapter.with_prose(cell, text[:quote.start] + new + text[quote.start + len(quote.text):])
                verdict = "caught" if cell_problems(changed, cell, anchors) else "missed"
                report[kind][verdict].append((cell, quote.text, new))
    return report


# ---------------------------------------------------------------------------------------- the generator


NAME = re.compile(r"[\w.-]{2}", re.A)  # two characters of one ASCII name
STOP = {"the", "and", "for", "with", "that", "this", "are", "its", "from", "one", "two", "per", "not", "than",
        "each", "but", "has", "have", "all", "which", "when", "only", "more", "less", "about", "print", "int",
        "float", "len", "sum", "round", "range", "self", "none", "true", "false"}


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]{3,}|[\u4e00-\u9fff]{2}", text.replace("_", " "))} - STOP


def window(shape: str, at: int, others: list[int], side: int = 14, whole_up_to: int = 0) -> str | None:
    """The shortest signature around position `at` of a shaped text, cut at spaces where one is near, that fits
    none of the `others`; None when even the whole text does not tell them apart."""
    whole = shape[:at] + HOLE + shape[at + 1:]
    if len(shape) <= whole_up_to and not any(fits(shape, o, whole) for o in others):
        return whole
    while True:
        a, b = max(0, at - side), min(len(shape), at + 1 + side)
        left, right = shape.rfind(" ", max(0, a - 10), a), shape.find(" ", b, b + 10)
        a, b = (left + 1 if left >= 0 and a > 0 else a), (right if right >= 0 and b < len(shape) else b)
        while 0 < a < at and NAME.match(shape[a - 1:a + 1]):  # never cut a name ("Llama-2-70B") in two
            a -= 1
        while at < b < len(shape) and NAME.match(shape[b - 1:b + 1]):
            b += 1
        signature = shape[a:at] + HOLE + shape[at + 1:b]
        if not any(fits(shape, o, signature) for o in others):
            return signature
        if a == 0 and b == len(shape):
            return None
        side += 10


@dataclass(frozen=True)
class Candidate:
    code: int  # the code cell, 1-based
    kind: str  # "out" or "src"
    place: Place
    score: float


def neighbours(text: str, start: int) -> tuple[str | None, str | None]:
    """The numbers just before and just after the one at `start` of a line or a sentence, when near."""
    numbers = list(NUMBER.finditer(text))
    k = next(i for i, m in enumerate(numbers) if m.start() == start)
    before = numbers[k - 1].group(0) if k > 0 and start - numbers[k - 1].end() < 12 else None
    after = numbers[k + 1].group(0) if k + 1 < len(numbers) and numbers[k + 1].start() - start < 20 else None
    return before, after


def same_number(prose: str, printed: str) -> bool:
    return agrees(Quote(prose, 0, False, False), Place(printed, "", 0, False))


def candidates(chapter: Chapter, cell: int, quotes: list[Quote]) -> list[Candidate]:
    """Every number in the chapter's code cells that agrees with all of `quotes` (one per edition; the first
    one's words and neighbours count), best first."""
    text, quote = chapter.prose[cell - 1], quotes[0]
    prose_words = words(re.sub(r"\s+", " ", text[max(0, quote.start - 60):quote.start + 40]))
    prose_near = neighbours(text, quote.start)
    before = chapter.code_before[cell - 1]
    whole = cell == 1 or any(h in text for h in SUMMARY)
    out = []
    for c, code in enumerate(chapter.code, 1):
        distance = before - c if c <= before else c - before - 0.5  # 0: the cell just above, 0.5: just below
        for kind, source in (("out", "" if timing(code) else code_output(code)), ("src", code_source(code))):
            for line in source.splitlines():
                line = line.strip()
                shape, where = shaped(line)
                for m in NUMBER.finditer(line):
                    place = Place(m.group(0), shape, where[m.start()], line[m.end():m.end() + 1] in PERCENT)
                    if not all(agrees(q, place) for q in quotes):
                        continue
                    alike = sum(p is not None and e is not None and same_number(p, e)
                                for p, e in zip(prose_near, neighbours(line, m.start()), strict=True))
                    exact = place.text.lstrip("-−") == quote.text.lstrip("-−")
                    score = (3 * len(prose_words & words(line)) + 3 * alike + exact
                             - (0.1 if whole else 1) * distance - (kind == "src"))
                    out.append(Candidate(c, kind, place, score))
    return sorted(out, key=lambda x: -x.score)


def pair(en: list[Quote], zh: list[Quote]) -> list[tuple[Quote | None, Quote | None]]:
    """The English and Chinese quotes of one Markdown cell that are the same number, matched in order."""
    def key(q: Quote) -> tuple[Decimal, bool]:
        return decimal(q.text), q.percent

    pairs, left = [], list(zh)
    for q in en:
        same = [z for z in left if key(z) == key(q)]
        if same:
            left.remove(same[0])
        pairs.append((q, same[0] if same else None))
    return pairs + [(None, z) for z in left]


def evidence_entry(chapter: Chapter, best: Candidate) -> dict:
    """The "code", "out" or "src" and, when needed, "nth" that pick `best` out of its cell."""
    code = chapter.code[best.code - 1]
    every = places(code_output(code) if best.kind == "out" else code_source(code))
    line, at = best.place.line, best.place.at
    same_line = [p.at for p in every if p.line == line and p.at != at]
    signature = window(line, at, same_line, 14, 70) or line[:at] + HOLE + line[at + 1:]
    if len([p for p in every if fits(p.line, p.at, signature)]) > 1:  # the same words elsewhere: the whole line
        signature = line[:at] + HOLE + line[at + 1:]
    entry = {"code": best.code, best.kind: signature}
    found = [p for p in every if fits(p.line, p.at, signature)]
    if len(found) > 1:  # the same line more than once: count
        entry["nth"] = found.index(best.place) + 1
    return entry


def unanchored(chapter: Chapter, anchors: dict, cell: int) -> list[Quote]:
    entries = anchors.get(chapter.stem, {})
    text = chapter.prose[cell - 1]
    shape, at = shaped(text)
    return [q for q in chapter.quotes(cell)
            if not any(e["cell"] == cell and inside_quotation(text, q, e, chapter.edition)
                       for e in entries.get("quoted", []))
            and not any(e["cell"] == cell and chapter.edition in e and fits(shape, at[q.start], e[chapter.edition])
                        for e in entries.get("numbers", []))]


def propose(stem: str, anchors: dict) -> list[str]:
    """Add to `anchors` an anchor for each quoted number of one chapter that has none; one note per anchor
    added, to review."""
    chapters = {ed: read_chapter(stem, ed) for ed in EDITIONS}
    entries = anchors.setdefault(stem, {"quoted": [], "numbers": []})
    notes = []
    for cell in range(1, len(chapters["en"].prose) + 1):
        new = {ed: unanchored(chapters[ed], anchors, cell) for ed in EDITIONS}
        for en, zh in pair(new["en"], new["zh"]):
            quotes = {ed: q for ed, q in (("en", en), ("zh", zh)) if q is not None}
            main = next(iter(quotes))
            text = chapters[main].prose[cell - 1]
            found = candidates(chapters[main], cell, list(quotes.values()))
            said = f"{stem[:2]} cell {cell}: {quotes[main].text!r} in …{context(text, quotes[main].start)}…"
            if not found:
                notes.append(f"{said}\n    NO EVIDENCE: no code cell prints or holds it")
                continue
            entry = {"cell": cell}
            for ed, q in quotes.items():
                shape, at = shaped(chapters[ed].prose[cell - 1])
                entry[ed] = window(shape, at[q.start], [a for a in at.values() if a != at[q.start]])
            entry |= evidence_entry(chapters[main], found[0])
            entries["numbers"].append(entry)
            lines = {(c.code, c.kind, c.place.line) for c in found}
            notes.append(f"{said}\n    ← code {found[0].code} {found[0].kind}: {found[0].place.line!r}"
                         + (f"   ({len(lines) - 1} other lines fit)" if len(lines) > 1 else ""))
    entries["numbers"].sort(key=lambda e: e["cell"])
    return notes


def show(stem: str, anchors: dict) -> list[str]:
    """Each anchor of one chapter with the prose it reads and the evidence it finds, for review."""
    chapters = {ed: read_chapter(stem, ed) for ed in EDITIONS}
    out = [f"cell {e['cell']}: quoted, {e['why']}: " + " / ".join(repr(phrases(e, ed)) for ed in EDITIONS)
           for e in anchors.get(stem, {}).get("quoted", [])]
    for e in anchors.get(stem, {}).get("numbers", []):
        prose = []
        for ed in EDITIONS:
            if ed in e:
                text = chapters[ed].prose[e["cell"] - 1]
                shape, at = shaped(text)
                hits = [start for start, a in at.items() if fits(shape, a, e[ed])]
                if len(hits) == 1:
                    number = NUMBER.match(text, hits[0]).group(0)
                    marked = text[:hits[0]] + "⟨" + number + "⟩" + text[hits[0] + len(number):]
                    prose.append(context(marked, hits[0], 70))
                else:
                    prose.append(f"({len(hits)} numbers fit {e[ed]!r})")
        place, why = evidence(chapters["en"], e)
        line = place.line[:place.at] + "⟨" + place.text + "⟩" + place.line[place.at + 1:] if place else why
        kind = "out" if "out" in e else "src"
        out.append(f"cell {e['cell']}: {' | '.join(prose)}\n    ⟵ code {e['code']} {kind}{e.get('nth', '')}: {line}")
    return out


# ------------------------------------------------------------------------------------------------- CLI


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("check", "show", "propose", "mutate"))
    parser.add_argument("chapters", nargs="*", help="chapter numbers (06) or name prefixes; all when none")
    args = parser.parse_args()
    anchors = load_anchors()
    if args.command == "check":
        found = [p for stem in stems(args.chapters) for ed in EDITIONS
                 for p in problems(read_chapter(stem, ed), anchors)]
        print("\n".join(found) or "every quoted number is tied to its evidence")
        sys.exit(1 if found else 0)
    if args.command == "mutate":
        total = {kind: [0, 0] for kind in MUTATIONS}
        print(f"{'chapter':<34}" + "".join(f"{kind:>12}" for kind in MUTATIONS) + "   (caught / changed)")
        for stem in stems(args.chapters):
            for ed in EDITIONS:
                report = mutation_report(read_chapter(stem, ed), anchors)
                row = ""
                for kind in MUTATIONS:
                    caught, missed = len(report[kind]["caught"]), len(report[kind]["missed"])
                    total[kind][0] += caught
                    total[kind][1] += caught + missed
                    row += f"{f'{caught}/{caught + missed}':>12}"
                print(f"{ed + '/' + stem:<34}{row}")
                for kind in MUTATIONS:
                    for cell, before, after in report[kind]["missed"]:
                        print(f"    missed: cell {cell}, {before} → {after} ({kind})")
        print(f"{'all':<34}" + "".join(f"{f'{c}/{n}':>12}" for c, n in total.values()))
        sys.exit(0 if all(c == n for c, n in total.values()) else 1)
    for stem in stems(args.chapters):
        if args.command == "show":
            print("\n".join(show(stem, anchors)))
        else:
            print("\n".join(propose(stem, anchors)))
            write_anchors(anchors)


if __name__ == "__main__":
    main()
