"""The course's timing adds up: each chapter's core path fills 45 minutes, and the 90-minute lecture path's stops
fill 90.

What is read, and in which form the pages write it (one form per edition):

    book/lecturers-guide.md, under `## Chapter 10 · …`:
        **Plan (45 min).** 10 min: … (10.1–10.2). 10 min: … (10.4–10.6). …      the core path
        **Optional.** 10.3, … (10 min); 10.9, … (10 min); …                       or `**Optional.** None: …`
    book/zh/lecturers-guide.md, under `## 第 10 章 · …`:
        **计划（45 分钟）。** 10 分钟：…（10.1–10.2）。…
        **选讲。** 10.3，…（10 分钟）；10.9，…（10 分钟）；…
    notebooks/src/10-*.py:     # ## 10.3 Title *(optional)*      a section off the core path
    notebooks/src/10-*.zh.md:  ## 10.3 标题（选讲）
    book/lecture-path.md:      ## 5. Title (15 minutes), and `**Chapter:** …, sections 10.1, 10.2 …` under it;
                               the text above the first stop states the total ("90 minutes")
    book/zh/lecture-path.md:   ## 5. 标题（15 分钟）, `**章节：** …`, "90 分钟"

A plan item's sections are the numbers in its text ("6.4–6.6" is 6.4, 6.5 and 6.6); an item with none (questions,
an exercise discussed in class) still counts its minutes. The checks, per chapter and edition: the plan states
45 minutes and its items add up to 45; the plan and the optional list together name every section of the chapter,
each once; the sections the guide lists as optional are exactly those the chapter's headings mark optional; and
both editions give the same minutes. The lecture path's stops add up to 90, the total its introduction states, and
run only core sections. The last test plants errors in copies of the texts and sees each one found.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "notebooks" / "src"
BOOK = ROOT / "book"
CORE_MINUTES, LECTURE_MINUTES = 45, 90

FORMS = {  # each edition's words for the same structure
    "en": dict(guide=BOOK / "lecturers-guide.md", path=BOOK / "lecture-path.md", suffix=".py",
               chapter=r"^## Chapter (\d+) · ", plan=r"^\*\*Plan \((\d+) min\)\.\*\*", item=r"(\d+) min:",
               optional=r"^\*\*Optional\.\*\*", minutes=r"\((\d+) min\)", list_sep=";",
               heading=r"^# ## (\d+\.\d+) (.*)$", mark="*(optional)*",
               stop=r"^## \d+\. .*\((\d+) minutes\)$", stop_chapters=r"^\*\*Chapters?:\*\*", total="{} minutes"),
    "zh": dict(guide=BOOK / "zh" / "lecturers-guide.md", path=BOOK / "zh" / "lecture-path.md", suffix=".zh.md",
               chapter=r"^## 第 (\d+) 章 · ", plan=r"^\*\*计划（(\d+) 分钟）。\*\*", item=r"(\d+) 分钟：",
               optional=r"^\*\*选讲。\*\*", minutes=r"（(\d+) 分钟）", list_sep="；",
               heading=r"^## (\d+\.\d+) (.*)$", mark="（选讲）",
               stop=r"^## \d+\. .*（(\d+) 分钟）$", stop_chapters=r"^\*\*章节：\*\*", total="{} 分钟"),
}
SECTION = re.compile(r"(\d+)\.(\d+)(?:–(\d+)\.(\d+))?")  # "10.4" or a range "10.4–10.6"


@dataclass
class Plan:
    """One chapter's entry in the lecturer's guide."""
    stated: int  # the minutes the plan's label states: "Plan (45 min)"
    items: list[tuple[int, list[str]]]  # (minutes, the sections it names) per item, in order
    optional: dict[str, int] = field(default_factory=dict)  # section → minutes, from the **Optional.** line


def sections_in(text: str) -> list[str]:
    """The section numbers a text names, ranges written out: "(6.4–6.6)" → ["6.4", "6.5", "6.6"]."""
    found = []
    for chapter, first, chapter_to, last in SECTION.findall(text):
        assert chapter_to in ("", chapter), f"a range across chapters: {chapter}.{first}–{chapter_to}.{last}"
        found += [f"{chapter}.{n}" for n in range(int(first), int(last or first) + 1)]
    return found


def order(section: str) -> tuple[int, int]:
    """A sort key: "10.2" before "10.10"."""
    chapter, number = section.split(".")
    return int(chapter), int(number)


def paragraph(text: str, start: str) -> str | None:
    """The paragraph that begins with the pattern `start` (without it), or None."""
    m = re.search(start + r"(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    return m.group(m.lastindex) if m else None


def parse_guide(text: str, lang: str) -> dict[int, Plan]:
    """Chapter number → its plan, from a lecturer's guide in edition `lang`."""
    form, plans = FORMS[lang], {}
    parts = re.split(form["chapter"], text, flags=re.M)  # [preamble, "1", body of chapter 1, "2", …]
    for number, body in zip(parts[1::2], parts[2::2], strict=True):
        label = re.search(form["plan"], body, re.M)
        assert label, f"chapter {number}: no plan in the form {form['plan']!r}"
        split = re.split(form["item"], paragraph(body, form["plan"]))  # ["", "5", " text (1.1). ", "15", …]
        items = [(int(minutes), sections_in(item)) for minutes, item in zip(split[1::2], split[2::2], strict=True)]
        listed = paragraph(body, form["optional"])
        assert listed is not None, f"chapter {number}: no line in the form {form['optional']!r}"
        optional = {}
        for entry in filter(sections_in, listed.split(form["list_sep"])):
            minutes = re.search(form["minutes"], entry)
            assert minutes, f"chapter {number}: optional {entry.strip()!r} gives no minutes"
            optional[sections_in(entry)[0]] = int(minutes.group(1))  # the entry's first number names it
        plans[int(number)] = Plan(int(label.group(1)), items, optional)
    return plans


def parse_headings(text: str, lang: str) -> dict[str, bool]:
    """Section number → whether its heading marks it optional, from a chapter's source in edition `lang`."""
    form = FORMS[lang]
    return {n: title.rstrip().endswith(form["mark"]) for n, title in re.findall(form["heading"], text, re.M)}


def chapter_file(number: int, lang: str) -> Path:
    stem = next(p for p in SOURCES.glob(f"{number:02d}-*.py")).name[:-3]
    return SOURCES / (stem + FORMS[lang]["suffix"])


def problems(number: int, plan: Plan, headings: dict[str, bool]) -> list[str]:
    """What is wrong with one chapter's plan against its headings: [] when the timing holds."""
    core = [s for _, sections in plan.items for s in sections]
    found = []
    if plan.stated != CORE_MINUTES or sum(m for m, _ in plan.items) != CORE_MINUTES:
        found.append(f"chapter {number}: the plan states {plan.stated} min, its items add up to "
                     f"{sum(m for m, _ in plan.items)}; both must be {CORE_MINUTES}")
    for s in sorted({s for s in core if core.count(s) > 1} | (set(core) & set(plan.optional)), key=order):
        found.append(f"chapter {number}: {s} is counted twice")
    named = set(core) | set(plan.optional)
    for s in sorted(named - set(headings), key=order):
        found.append(f"chapter {number}: the guide names {s}, which the chapter does not have")
    for s in sorted(set(headings) - named, key=order):
        found.append(f"chapter {number}: {s} is neither in the plan nor listed as optional")
    for s, marked in sorted(headings.items(), key=lambda item: order(item[0])):
        if marked and s not in plan.optional:
            found.append(f"chapter {number}: {s} is marked optional but the guide does not list it as optional")
        if s in plan.optional and not marked:
            found.append(f"chapter {number}: the guide lists {s} as optional but its heading is not marked")
        if marked and s in core:
            found.append(f"chapter {number}: {s} is in the core plan but marked optional")
    return found


def check_guide(guide: str, lang: str, chapters: dict[int, str] | None = None) -> list[str]:
    """Every chapter's problems; `chapters` (number → source text) replaces the files on disk, for planting."""
    plans, found = parse_guide(guide, lang), []
    numbers = sorted(int(p.name[:2]) for p in SOURCES.glob("[0-9][0-9]-*.py"))
    if sorted(plans) != numbers:
        found.append(f"the guide has chapters {sorted(plans)}, the book {numbers}")
    for number, plan in plans.items():
        text = (chapters or {}).get(number) or chapter_file(number, lang).read_text(encoding="utf-8")
        found += problems(number, plan, parse_headings(text, lang))
    return found


def parse_lecture_path(text: str, lang: str) -> tuple[list[int], list[list[str]], str]:
    """The minutes of each stop, the sections each stop's chapter line names, and the text above the first stop."""
    form = FORMS[lang]
    parts = re.split(form["stop"], text, flags=re.M)  # [introduction, "10", body of stop 1, …]
    minutes = [int(m) for m in parts[1::2]]
    cited = [sections_in(paragraph(body, form["stop_chapters"]) or "") for body in parts[2::2]]
    return minutes, cited, parts[0]


def check_lecture_path(text: str, lang: str) -> list[str]:
    minutes, cited, introduction = parse_lecture_path(text, lang)
    found = []
    if sum(minutes) != LECTURE_MINUTES:
        found.append(f"the stops take {' + '.join(map(str, minutes))} = {sum(minutes)} minutes, not {LECTURE_MINUTES}")
    if FORMS[lang]["total"].format(LECTURE_MINUTES) not in introduction:
        found.append(f"the introduction does not state the total, {FORMS[lang]['total'].format(LECTURE_MINUTES)!r}")
    for stop, sections in enumerate(cited, 1):
        if not sections:
            found.append(f"stop {stop} names no section")
        for s in sections:
            headings = parse_headings(chapter_file(int(s.split(".")[0]), lang).read_text(encoding="utf-8"), lang)
            if headings.get(s, True):
                found.append(f"stop {stop} runs {s}, which is optional or missing")
    return found


@pytest.mark.parametrize("lang", FORMS)
def test_every_chapter_has_a_45_minute_core_path_and_marked_optional_sections(lang):
    found = check_guide(FORMS[lang]["guide"].read_text(encoding="utf-8"), lang)
    assert not found, "\n".join(found)


def test_both_editions_of_the_guide_give_the_same_minutes():
    en, zh = (parse_guide(FORMS[lang]["guide"].read_text(encoding="utf-8"), lang) for lang in FORMS)
    assert en == zh
    assert any(plan.optional for plan in en.values())  # the parse finds optional sections (chapter 10's at least)


@pytest.mark.parametrize("lang", FORMS)
def test_the_lecture_path_takes_90_minutes_of_core_sections(lang):
    found = check_lecture_path(FORMS[lang]["path"].read_text(encoding="utf-8"), lang)
    assert not found, "\n".join(found)


def test_the_editions_of_the_lecture_path_agree():
    en, zh = (parse_lecture_path(FORMS[lang]["path"].read_text(encoding="utf-8"), lang)[:2] for lang in FORMS)
    assert en == zh and len(en[0]) == 6


def plant(text: str, old: str, new: str) -> str:
    """`text` with `old` replaced by `new`; `old` must be there, so that a plant never silently misses."""
    assert text.count(old) == 1, f"{old!r} is not in the text once"
    return text.replace(old, new)


def test_planted_errors_are_found():
    """A changed minute, a section marked optional in its heading but not listed, a listed optional section whose
    heading is not marked (in each edition), a section left out of the guide, and a lecture stop made longer: each is
    reported, and nothing else."""
    guide = FORMS["en"]["guide"].read_text(encoding="utf-8")
    tokens = chapter_file(2, "en").read_text(encoding="utf-8")
    costs = chapter_file(10, "en").read_text(encoding="utf-8")
    assert check_guide(guide, "en") == []  # so each finding below comes from its plant

    longer = plant(guide, "5 min: words, characters, subwords (2.4)", "10 min: words, characters, subwords (2.4)")
    assert check_guide(longer, "en") == ["chapter 2: the plan states 45 min, its items add up to 50; both must be 45"]

    marked = plant(tokens, "## 2.4 Words, characters, subwords", "## 2.4 Words, characters, subwords *(optional)*")
    assert check_guide(guide, "en", {2: marked}) == [
        "chapter 2: 2.4 is marked optional but the guide does not list it as optional",
        "chapter 2: 2.4 is in the core plan but marked optional"]

    unmarked = plant(costs, "## 10.10 The utilisation timeline *(optional)*", "## 10.10 The utilisation timeline")
    assert check_guide(guide, "en", {10: unmarked}) == [
        "chapter 10: the guide lists 10.10 as optional but its heading is not marked"]

    left_out = plant(guide, " 10.10, the utilisation timeline (5 min);", "")
    assert check_guide(left_out, "en") == [
        "chapter 10: 10.10 is neither in the plan nor listed as optional",
        "chapter 10: 10.10 is marked optional but the guide does not list it as optional"]

    zh_guide = FORMS["zh"]["guide"].read_text(encoding="utf-8")
    further = chapter_file(13, "zh").read_text(encoding="utf-8")
    unmarked_zh = plant(further, "## 13.4 int8 的 KV 缓存（选讲）", "## 13.4 int8 的 KV 缓存")
    assert check_guide(zh_guide, "zh", {13: unmarked_zh}) == [
        "chapter 13: the guide lists 13.4 as optional but its heading is not marked"]

    path = FORMS["zh"]["path"].read_text(encoding="utf-8")
    assert check_lecture_path(path, "zh") == []
    slower = plant(path, "## 3. 惩罚（10 分钟）", "## 3. 惩罚（15 分钟）")
    assert check_lecture_path(slower, "zh") == ["the stops take 10 + 20 + 15 + 15 + 15 + 20 = 95 minutes, not 90"]
