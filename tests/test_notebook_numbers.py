"""Every number the prose of a committed notebook quotes is backed by a code cell near it.

A number in a markdown cell passes when it equals (to the precision the prose gives) a number printed by,
or written in the source of, one of the code cells around it: the `BEFORE` code cells before the markdown
cell and the `AFTER` code cells after it (for the opening cell and the summary, which restate the whole
chapter, any code cell of the notebook). A cell's source counts because an `assert` there keeps the
number true: nbval re-runs every cell, so when a quoted number drifts, either its printout changes (nbval
fails) or its assert does. Timing cells are tagged NBVAL_IGNORE_OUTPUT, so a number only they print
should not be quoted; this test cannot tell those apart, which is why the prose around them quotes ratios
or says what to look for.

What is not a measurement, and is skipped (the allow-list, kept small and explicit):
- headings, code spans (`...`) and fenced code: they quote code, which runs;
- the exercises (they give inputs to try, not results) and references to the seeds' sections (§2.3);
- integers up to `SMALL` (counts, indices, chapter and section numbers, "γ + 1");
- a number after "about", "near", "≈" … needs an evidence number within 10%, not an exact one;
- section references such as "4.3" or "(12.5)" after "chapter", "section" or in parentheses;
- years (1900–2039) and digits glued to letters (SmolLM2-135M, H100, fp16, 1e-5 is still checked);
- the per-notebook `QUOTED` numbers below: numbers from the seeds or from papers, quoted as such.
"""

import math
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# both editions: the Chinese notebooks run the same code, so their prose must quote the same numbers
BUILT = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")) + sorted(NOTEBOOKS.glob("zh/[0-9][0-9]-*.ipynb"))
BEFORE, AFTER = 4, 2  # code cells searched on each side of a markdown cell
SMALL = 12

# Numbers quoted from elsewhere (the seeds' worked examples and tables, other models' specifications,
# definitions), per notebook, each with the reason it needs no measurement.
QUOTED: dict[str, dict[str, str]] = {
    "02-tokens": {"32,000": "Llama 2's vocabulary size, quoted", "256": "the number of byte values"},
    "06-logits-to-token": {n: "the seed's table of presets, quoted as such" for n in
                           ("0.0", "0.1", "0.3", "0.5", "0.7", "0.9", "1.0", "1.2", "1.5", "2.0", "0.95", "0.98",
                            "40", "50", "100")},
    "07-penalties": {"0.3": "the lecture's tuning tips, quoted", "0.6": "the lecture's tuning tips, quoted"},
    "10-what-it-costs": {"3.35": "the H100 SXM's spec-sheet bandwidth in TB/s, quoted",
                         "128": "2⁷, the offset that makes a signed 8-bit value unsigned",
                         **{n: "the seeds' GPU utilisation ranges, quoted" for n in ("20", "30", "50", "80", "95")}},
    "13-further": {"32": "float32 is 32 bits", "127": "the largest int8 value",
                   "15": "the seed's CacheBlend recompute ratio, quoted"},
}
XFAIL: dict[str, str] = {}  # notebook stem → why its check is expected to fail for now

NUMBER = re.compile(r"(?<![\w.·^])[-−]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:e[-−]?\d+)?(?![\w])")
# "in 3.3", "of 3.5", "(4.3)", "chapter 10", "sections 12.4 and 12.5": references to a section
SECTION = re.compile(r"(?:\b(?:chapters?|sections?|§|in|of|see|from|and|to)\s+|[(,|（，、]\s*)(\d{1,2}\.\d)\b", re.I)
APPROX = re.compile(r"\b(?:about|around|near|nearly|almost|roughly|some)\b|[≈~]|约|大约|大概|接近|将近|差不多|近", re.I)
CJK_NEXT_TO_DIGIT = re.compile(r"(?<=[\u4e00-\u9fff])(?=[-−\d])|(?<=\d)(?=[\u4e00-\u9fff])")
SKIP = [
    re.compile(r"^## (?:Exercises|练习|习题).*", re.S | re.M),  # exercises give inputs to try, not results
    re.compile(r"```.*?```", re.S),  # fenced code
    re.compile(r"`[^`]*`"),  # code spans
    re.compile(r"^#.*$", re.M),  # headings
    re.compile(r"https?://\S+"),  # links
    re.compile(r"§\s*\d+(?:\.\d+)*"),  # a section of a seed document ("generation-process §2.3")
    re.compile(r"\b(?:chapters?|sections?|§)\s+\d+(?:\.\d+)?(?:\s*(?:,|and|or|–|-|to)\s*\d+(?:\.\d+)?)*", re.I),
    re.compile(r"\b(?:19\d\d|20[0-3]\d)\b"),  # years
    re.compile(r"第\s*\d+(?:\.\d+)?\s*[章节讲]|\d+(?:\.\d+)?\s*节"),  # "第 10 章", "第 11 讲", "4.3 节"
]
SUMMARY = ("## Summary", "## 小结", "## 总结", "## 本章小结")


def numbers_in(text: str) -> list[str]:
    return [m.group(0) for m in NUMBER.finditer(text)]


def value(number: str) -> float:
    return float(number.replace(",", "").replace("−", "-"))


def decimals(number: str) -> int:
    mantissa = number.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def quoted_numbers(markdown: str, sections: set[str] = frozenset()) -> list[tuple[str, bool]]:
    """(number, approximate) for each number the prose quotes; approximate when "about", "near", "≈" …
    stands just before it."""
    for pattern in SKIP:
        markdown = pattern.sub(" ", markdown)
    markdown = SECTION.sub(lambda m: " " if m.group(1) in sections else m.group(0), markdown)
    out = []
    for m in NUMBER.finditer(markdown):
        n, v = m.group(0), value(m.group(0))
        if "e" not in n.lower() and "." not in n and abs(v) <= SMALL:
            continue
        approximate = bool(APPROX.search(markdown[max(0, m.start() - 16):m.start()]))
        percent = markdown[m.end():m.end() + 1] == "%"
        out.append((n + "%" if percent else n, approximate))
    return out


def code_text(cell) -> str:
    parts = [cell.source]
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append(output["text"])
        elif "text/plain" in output.get("data", {}):
            parts.append(output["data"]["text/plain"])
    return "\n".join(parts)


def backed(number: str, evidence: list[float], approximate: bool = False) -> bool:
    """The prose's number equals an evidence number rounded to the prose's precision (within 10% when the
    prose says "about"); "85%" is also backed by a printed 0.85 or 0.850."""
    if number.endswith("%"):
        number = number[:-1]
        fraction = f"{value(number) / 100:.{decimals(number) + 2}f}"
        if backed(fraction, evidence, approximate):
            return True
    v = value(number)
    if approximate and any(abs(e - v) <= 0.1 * abs(v) for e in evidence):
        return True
    if "e" in number.lower():  # 1e-5: the same order of magnitude
        return any(e != 0 and math.floor(math.log10(abs(e))) == math.floor(math.log10(abs(v))) for e in evidence)
    places = decimals(number)
    return any(round(e, places) == v or round(abs(e), places) == abs(v) for e in evidence)


def section_numbers() -> set[str]:
    """Every "N.M" that is a section heading ("## 4.3 ...") in some notebook."""
    heading = re.compile(r"^#+\s+(\d{1,2}\.\d)\b", re.M)
    return {m.group(1) for p in BUILT for c in nbformat.read(p, as_version=4).cells if c.cell_type == "markdown"
            for m in heading.finditer(c.source)}


def unbacked(path: Path, sections: set[str] = frozenset()) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    cells = nb.cells
    code_at = [i for i, c in enumerate(cells) if c.cell_type == "code"]
    allowed = QUOTED.get(path.stem, {})
    problems = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        if i == 0 or any(s in cell.source for s in SUMMARY):  # they restate the whole chapter
            before, after = code_at, []
        else:
            before = [j for j in code_at if j < i][-BEFORE:]
            after = [j for j in code_at if j > i][:AFTER]
        evidence = [value(n) for j in before + after for n in numbers_in(code_text(cells[j]).replace("_", ""))]
        for n, approximate in quoted_numbers(cell.source, sections):
            if n.rstrip("%") not in allowed and not backed(n, evidence, approximate):
                at = cell.source.find(n)
                problems.append(f"cell {i}: {n!r} in …{cell.source[max(0, at - 70):at + 40]!r}…")
    return problems


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(reason=XFAIL[p.stem], strict=False))
                                  if p.stem in XFAIL else p for p in BUILT],
                         ids=[p.relative_to(NOTEBOOKS).with_suffix("").as_posix() for p in BUILT])
def test_every_quoted_number_is_printed_or_asserted_nearby(path):
    problems = unbacked(path, section_numbers())
    assert not problems, f"{path.name}: numbers in the prose that no nearby code cell prints or holds:\n" + \
        "\n".join(problems)


def test_the_check_finds_a_number_that_is_not_there(tmp_path):
    nb = nbformat.v4.new_notebook()
    printed = nbformat.v4.new_code_cell("print(x)")
    printed.outputs = [nbformat.v4.new_output("stream", text="speed-up 1.62×, 45,080 bytes\n")]
    nb.cells = [printed, nbformat.v4.new_markdown_cell(
        "A speed-up of 1.6 (chapter 11, sections 4.3 and 4.4), about 45,000 bytes, but 1.7 is made up; "
        "`max_tokens=64`.")]
    path = tmp_path / "99-test.ipynb"
    nbformat.write(nb, path)
    problems = unbacked(path, {"4.3", "4.4"})
    assert len(problems) == 1 and "'1.7'" in problems[0]
