"""`lecture.wrap`, the line breaking of the pipeline figure's boxes (chapter 1): Chinese breaks between words, never
inside a term of the glossary or a Latin word, never after an opening bracket or before closing punctuation, and no
line is wider than its box, in either language; English wraps as it always did."""

import re
from pathlib import Path

import pytest

pytest.importorskip("plotly")  # before anything that imports teachllm.viz
pytest.importorskip("ipywidgets")

from teachllm import viz
from teachllm.viz import lecture
from teachllm.viz.language import display_width
from teachllm.viz.lecture import CJK_WORDS, CLOSING, OPENING, PIPELINE_COLUMNS, wrap
from teachllm.viz.zh import ZH

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def glossary_terms() -> list[str]:
    """The Chinese headwords of book/zh/glossary.md: the lines of its {glossary} block that are not indented."""
    text = (ROOT / "book" / "zh" / "glossary.md").read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines()
            if line.strip() and not line[0].isspace() and not line.startswith(":") and CJK.search(line)]


TERMS = sorted({t for t in [*CJK_WORDS, *glossary_terms()] if len(t) > 1}, key=len, reverse=True)


def split_terms(lines: list[str]) -> list[tuple[str, str, str]]:
    """(term, line, next line) for every term that ends one line and goes on at the start of the next."""
    found = []
    for a, b in zip(lines, lines[1:], strict=False):
        for term in TERMS:
            for k in range(1, len(term)):
                left, right = term[:k].rstrip(), term[k:].lstrip()
                if left and right and a.endswith(left) and b.startswith(right):
                    found.append((term, a, b))
    return found


def check_lines(text: str, columns: int) -> list[str]:
    """Wrap `text` and check every rule; returns the lines."""
    lines = wrap(text, columns).split("<br>")
    assert "".join(lines).replace(" ", "") == text.replace(" ", ""), lines  # nothing lost, nothing added
    assert not split_terms(lines), (text, columns, split_terms(lines))
    assert not [a for a in lines[:-1] if a[-1] in OPENING], (text, columns, lines)  # （ “ 《 at a line end
    assert not [b for b in lines[1:] if b[0] in CLOSING], (text, columns, lines)  # ） ， 。 、 ” 》 at a line start
    for line in lines:  # a line is as wide as the box, unless it is one word that cannot break
        assert display_width(line) <= columns or wrap(line, 1) == line, (text, columns, lines)
    return lines


def test_the_glossary_terms_the_figures_use_are_words_wrap_keeps_whole():
    labels = " ".join(ZH.values())
    terms = glossary_terms()
    assert len(terms) > 30 and "KV 缓存" in terms and "预填充" in terms  # the glossary was read
    missing = [t for t in terms if len(t) > 1 and t in labels and t not in CJK_WORDS]
    assert not missing, f"glossary terms the Chinese labels use that CJK_WORDS lacks: {missing}"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_pipeline_figure_breaks_its_labels_between_words_and_fits_its_boxes(lm, lang):
    viz.set_language(lang)
    try:
        stages = lecture.pipeline_stages(lm, "What is the capital of France?")
        _, layout = lecture.pipeline_spec(stages)
    finally:
        viz.set_language("en")
    texts = {a["text"] for a in layout["annotations"]}
    for stage in stages:
        for text in (stage.what, stage.shape):
            assert wrap(text, PIPELINE_COLUMNS) in texts
            lines = check_lines(text, PIPELINE_COLUMNS)
            assert all(display_width(line) <= PIPELINE_COLUMNS for line in lines), lines  # no word is too long
    if lang == "zh":
        assert any(CJK.search(t) for t in texts) and "<b>反分词器</b>" in texts
        prefill = next(s.what for s in stages if s.name == "prefill")
        assert wrap(prefill, PIPELINE_COLUMNS) == "一次处理全部<br>提示词 token，<br>写入 KV 缓存"
        loop = next(s.what for s in stages if s.name == "decode loop")
        assert wrap(loop, PIPELINE_COLUMNS) == "每步一个 token，<br>读取缓存"  # not 读 / 取缓存
        sampler = next(s.what for s in stages if s.name == "sampler")
        assert wrap(sampler, PIPELINE_COLUMNS) == "logits → 一个 id<br>（贪婪解码）"  # the bracket starts a line


def test_the_box_is_wide_enough_for_its_columns_on_a_narrow_page():
    """16 columns of 10-pixel text (a column is half an em) and of 9-pixel monospace (0.6 em a character) fit a box
    of the figure drawn 680 pixels wide."""
    _, layout = lecture.pipeline_spec([lecture.PipelineStage("tokenizer", "x", "y")] * 6)
    (left, right), margin = layout["xaxis"]["range"], layout["margin"]
    box = (680 - margin["l"] - margin["r"]) / (right - left)  # pixels per x unit: a box is 1 unit wide
    fonts = [a["font"] for a in layout["annotations"] if "font" in a]
    assert {f["size"] for f in fonts if "family" not in f} == {10}  # what a stage does
    assert {f["size"] for f in fonts if "family" in f} == {9}  # its shape, in monospace
    assert PIPELINE_COLUMNS * 10 / 2 < box - 4 and PIPELINE_COLUMNS * 9 * 0.6 < box - 4


@pytest.mark.parametrize("columns", [4, 6, 8, 10, 12, 14, 16, 18, 24, 30])
def test_every_chinese_label_wraps_between_words_at_any_width(columns):
    for chinese in ZH.values():
        check_lines(re.sub(r"\{[^}]*\}", "7", re.sub(r"<[^>]+>", " ", chinese)).strip(), columns)  # fields: 7


def test_chinese_breaks_no_term_and_leaves_no_bracket_at_a_line_end():
    assert wrap("每步一个 token，读取缓存", 12) == "每步一个<br>token，<br>读取缓存"
    assert wrap("一个提示词走过整条流水线", 10) == "一个提示词<br>走过整条流<br>水线"  # only where it must
    assert wrap("填满 KV 缓存", 6) == "填满<br>KV 缓存"
    assert wrap("logits → 一个 id（采样）", 12) == "logits<br>→ 一个 id<br>（采样）"
    assert wrap("第 12 次迭代，178 个字符", 6) == "第 12 次<br>迭代，<br>178 个<br>字符"  # 第 12 次, 178 个: one word
    assert wrap("见《LLM 生成过程》", 12) == "见《LLM 生成<br>过程》"  # 《 stays with LLM, 》 with 过程


def test_a_long_latin_word_is_not_split():
    assert wrap("supercalifragilisticexpialidocious is long", 10) == "supercalifragilisticexpialidocious<br>is long"
    assert wrap("见 supercalifragilisticexpialidocious。", 10) == "见<br>supercalifragilisticexpialidocious。"
    assert wrap("it’s “quoted” text", 6) == "it’s<br>“quoted”<br>text"


@pytest.mark.parametrize(("text", "columns", "lines"), [
    ("every prompt token at once; fills the KV cache", 16, "every prompt<br>token at once;<br>fills the KV<br>cache"),
    ("every prompt token at once; fills the KV cache", 18, "every prompt token<br>at once; fills the<br>KV cache"),
    ("one token per step, reads the cache", 10, "one token<br>per step,<br>reads the<br>cache"),
    ("K, V: [30, 1, 3, 37, 64] each", 16, "K, V: [30, 1, 3,<br>37, 64] each"),
    ("[1, 37] → logits [1, 49152]", 10, "[1, 37] →<br>logits [1,<br>49152]"),
    ("[1, 37] → logits [1, 49152]", 16, "[1, 37] → logits<br>[1, 49152]"),
    ("logits → one id (greedy)", 10, "logits →<br>one id<br>(greedy)"),
    ("178 characters → ids", 10, "178<br>characters<br>→ ids"),
    ("ids → text", 16, "ids → text"),
])
def test_english_wraps_at_spaces_as_before(text, columns, lines):
    assert wrap(text, columns) == lines
