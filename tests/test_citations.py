"""Quotations from the course notes are exact (issue 37).

A Chinese sentence that puts a phrase between quotation marks (“…” or 「…」) in a paragraph that cites
the course notes (《LLM 生成过程》, 《LLM 推理流程》, 第 11 讲, the interview answer, or 课程资料 in general) presents
that phrase as the notes' own words. This test finds every such phrase in the Chinese chapters and
book pages and checks that it is in the notes as written, in the document the paragraph names if it
names one. Two things are normalised, since they are typography, not wording: white space (the
notes' text was extracted with spaces and line breaks in odd places) and the width of punctuation
(the notes write `,` and `?` where we print `，` and `？`).

A phrase that is not the notes' words is paraphrased without quotation marks. Quotation marks around
a title, or around a term the paragraph defines, are not quotations of the notes: the list
`NOT_QUOTATIONS` names each.

The English edition quotes the notes in translation, which cannot be checked this way; a quoted
phrase there that contains Chinese characters is checked like the Chinese edition's.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT.parent / "shared" / "course-notes"

# the documents' titles as the book cites them, and which file each is (../shared/curriculum.md)
CITED_AS = {
    "《LLM 生成过程》": "generation-process",
    "《LLM 推理流程》": "inference-flow",
    "第 11 讲": "lecture-11-inference",
    "面试题": "prefill-vs-decode-qa",
}
CITES_THE_NOTES = re.compile("|".join(map(re.escape, [*CITED_AS, "课程资料", "course notes"])))
QUOTED = re.compile(r"[“「]([^”」\n]+)[”」]|\"([^\"\n]+)\"")
CJK = re.compile(r"[\u4e00-\u9fff]")

# quoted phrases that are not the notes' words: titles, and terms a page defines
NOT_QUOTATIONS = {
    "大语言模型解析 VIII：模型推理二三事",  # the lecture's title (preface, references)
    "面试题解答",  # how the book names the interview answer
    "课程资料",  # the name the book gives the four documents (references)
    "今天天气很好。",  # chapter 2's exercise: a sentence to tokenize, our own
    "有把握",  # chapter 6's names for its two prompts (`sure` and `open_` in the code), our own
    "开放",
    "春天",  # chapter 7's Chinese request is about spring; the word its answer repeats, named
}
PAGES = [
    *sorted((ROOT / "notebooks" / "src").glob("*.zh.md")),
    *sorted(p for p in (ROOT / "book" / "zh").glob("*.md") if p.name != "glossary.md"),  # the glossary quotes terms
    *sorted((ROOT / "notebooks" / "src").glob("*.py")),
    *sorted(p for p in (ROOT / "book").glob("*.md") if p.name != "glossary.md"),
]
WIDTH = str.maketrans("，。：；？！（）、", ",.:;?!(),")


def plain(text: str) -> str:
    """Text as compared: no white space, punctuation in its narrow form."""
    return re.sub(r"\s+", "", text).translate(WIDTH)


def notes() -> dict[str, str]:
    if not NOTES.is_dir():
        pytest.skip("the course notes are not beside the checkout (../shared/course-notes)")
    return {p.stem: plain(p.read_text(encoding="utf-8")) for p in NOTES.glob("*.txt")}


def quotations(text: str) -> list[tuple[str, list[str]]]:
    """Each phrase quoted in a paragraph that cites the notes, with the documents that paragraph names."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        if not CITES_THE_NOTES.search(paragraph):
            continue
        named = [name for title, name in CITED_AS.items() if title in paragraph]
        for match in QUOTED.finditer(paragraph):
            phrase = match.group(1) or match.group(2)
            if CJK.search(phrase) and phrase not in NOT_QUOTATIONS:
                found.append((phrase, named))
    return found


def misquoted(text: str, documents: dict[str, str]) -> list[str]:
    """The quoted phrases of `text` that are not, as written, in the notes (in the documents named, if any)."""
    wrong = []
    for phrase, named in quotations(text):
        # a paragraph that names one document quotes that one; one naming several (or none) may quote any
        where = [documents[named[0]]] if len(named) == 1 else list(documents.values())
        if not any(plain(phrase) in document for document in where):
            wrong.append(f"“{phrase}” ({', '.join(named) or 'the course notes'})")
    return wrong


def prose_of(page: Path) -> str:
    """The page's text; of a chapter source, without its cells' `# %%` lines, which hold metadata (a slide's
    title in both editions, say), not prose."""
    text = page.read_text(encoding="utf-8")
    return re.sub(r"^# %%.*$", "", text, flags=re.M) if page.suffix == ".py" else text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_quotations_of_the_notes_are_exact(page):
    wrong = misquoted(prose_of(page), notes())
    assert not wrong, (
        f"{page.relative_to(ROOT)} quotes, as the notes' words, what the notes do not say: {wrong}. Quote the "
        "notes as written, or paraphrase without quotation marks"
    )


def test_the_check_finds_quotations():
    """The pages quote the notes often enough that a check finding none would be broken."""
    assert sum(len(quotations(p.read_text(encoding="utf-8"))) for p in PAGES) >= 20


@pytest.mark.parametrize(
    "planted",
    [
        # the misquotations the issue found: chapter 11 cell 3 (neither phrase is in the notes) ...
        "《LLM 生成过程》§6.3 说：“读取权重（14 GB），计算一个 token”，而批处理时“权重只读一次，计算 32 个 token”。",
        # ... and a real phrase of one document attributed to another
        "第 11 讲说：“Prefill阶段并行处理输入tokens，计算密集型”。",
    ],
)
def test_a_misquotation_is_found(planted):
    assert misquoted(planted, notes())


def test_an_exact_quotation_passes_whatever_its_spacing_and_punctuation():
    exact = "面试题说：“Prefill 阶段并行处理输入 tokens，计算密集型”。"
    assert quotations(exact) and not misquoted(exact, notes())
