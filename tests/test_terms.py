"""Both editions use the glossary's terms (scripts/terms.py): no chapter or page writes a form the glossary marks as
replaced, and the Chinese edition keeps a space between Chinese and Latin text; the check notices a planted
replaced term and a planted missing space."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import terms  # noqa: E402  (scripts/ is not a package)

CHAPTER_ZH = ROOT / "notebooks" / "src" / "10-what-it-costs.zh.md"
CHAPTER_EN = ROOT / "notebooks" / "src" / "06-logits-to-token.py"


def test_every_chapter_and_page_follows_the_term_list():
    found = terms.check(terms.default_files())
    assert not found, f"{len(found)} finding(s):\n" + "\n".join(found[:30])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_rule_is_a_glossary_entry_with_both_forms(lang):
    """Every term the check enforces is an entry of both glossaries, with its Chinese and its English form."""
    entries = {lang: terms.glossary_entries(lang) for lang in terms.GLOSSARY}
    headwords = {lang: {h for heads, _ in found for h in heads} for lang, found in entries.items()}
    for rule in terms.rules(lang):
        heads = next(heads for heads, _ in entries[lang] if set(rule.headwords) <= set(heads))
        chinese = [h for h in heads if terms.HAS_CJK.search(h)]
        english = [h for h in heads if not terms.HAS_CJK.search(h)]
        assert chinese and english, f"{rule.headwords}: the entry needs its Chinese and its English form"
        other = "en" if lang == "zh" else "zh"
        assert set(heads) & headwords[other], f"{rule.headwords}: no entry in the {other} glossary"


def test_the_glossaries_hold_the_rules_the_issue_asks_for():
    """The rules are read from the glossaries: this pins that the reading finds them (else the check passes
    vacuously)."""
    zh = {f: r.headwords for r in terms.rules("zh") for f in r.replaced}
    assert {"脊点", "prompt", "讲义", "讲座", "解码回文本", "屋顶线", "kernel", "trace", "种子"} <= set(zh)
    assert "屋脊点" in zh["脊点"] and "提示词" in zh["prompt"] and "反分词器" in zh["解码回文本"]
    en = {f: r.headwords for r in terms.rules("en") for f in r.replaced}
    assert "random seed" in en["seed"]


def planted(path: Path, sentence: str) -> str:
    """A real chapter's text with one more paragraph."""
    return path.read_text(encoding="utf-8") + "\n\n" + sentence + "\n"


def findings(text: str, lang: str) -> list[str]:
    return terms.problems_in(terms.prose(text), lang, terms.rules(lang), "planted")


def test_the_chapters_as_they_are_pass_so_a_planted_finding_is_the_only_one():
    assert findings(CHAPTER_ZH.read_text(encoding="utf-8"), "zh") == []


@pytest.mark.parametrize(("sentence", "word"), [
    ("预填充越过脊点之后就是计算密集型的。", "脊点"),
    ("把 prompt 交给模型。", "prompt"),
    ("第 11 讲的讲义里有这个例子。", "讲义"),
    ("最后把 id 解码回文本。", "解码回文本"),
    ("每一行都画在屋顶线下方。", "屋顶线"),
    ("换一个种子再运行一次。", "种子"),
])
def test_a_planted_replaced_term_is_found(sentence, word):
    found = findings(planted(CHAPTER_ZH, sentence), "zh")
    assert len(found) == 1 and repr(word) in found[0], found


@pytest.mark.parametrize("sentence", ["第 10 章会用Roofline 模型。", "这台机器每秒生成 12个 token。",
                                      "一共有49,152 个 id。"])
def test_a_planted_missing_space_is_found(sentence):
    found = findings(planted(CHAPTER_ZH, sentence), "zh")
    assert len(found) == 1 and "no space" in found[0], found


def test_the_english_edition_says_random_seed():
    text = "\n".join(prose for _, prose in terms.texts(CHAPTER_EN))
    assert findings(text, "en") == []
    found = findings(text + "\n\nThe seeds' first example has k = 3.\n", "en")
    assert len(found) == 1 and "'seeds'" in found[0], found
    assert findings("Run it again with random seed 1, or with `seed=2`.", "en") == []


@pytest.mark.parametrize("text", [
    "预填充越过屋脊点之后就是计算密集型的。",  # the chosen term contains the replaced one
    "本章的提示词（prompt）都套进了对话模板。",  # first use, with the English in brackets
    "调用 `lm.generate(prompt)`，再看 `tl.trace`。",  # code
    "```python\nprompt = \"你好\"  # 种子\n```",  # a code block
    "用随机种子 0 再运行一次。",
    "$$p_i = \\frac{e^{z_i}}{\\sum_j e^{z_j}}$$",  # maths
    "<!-- cell 3 · en 9f1c0a2b -->\n见（prefill）与《LLM 生成过程》。",
])
def test_what_is_not_prose_or_is_the_chosen_term_passes(text):
    assert findings(text, "zh") == []


def test_a_replaced_form_that_holds_the_chosen_term_is_still_found():
    found = findings("运行这个笔记本，看看输出。", "zh")
    assert len(found) == 1 and "'这个笔记本'" in found[0], found


def test_a_planted_chinese_slide_title_is_checked_too(tmp_path):
    """Slide titles live in a chapter source's cell metadata, not in its Markdown: the check reads them as well."""
    source = (ROOT / "notebooks" / "src" / "10-what-it-costs.py").read_text(encoding="utf-8")
    assert '"zh": "Roofline 图"' in source
    planted_source = tmp_path / "10-what-it-costs.py"
    planted_source.write_text(source.replace('"zh": "Roofline 图"', '"zh": "屋顶线图"'), encoding="utf-8")
    found = [f for where, title in terms.slide_titles(planted_source)
             for f in terms.problems_in(title, "zh", terms.rules("zh"), where)]
    assert len(found) == 1 and "'屋顶线'" in found[0], found
