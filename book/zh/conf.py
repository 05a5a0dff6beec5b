"""Sphinx configuration of the book's Chinese edition (`make book` builds it into book/_build/html/zh).

Everything is the English edition's (book/conf.py) except the language, the pages (book/zh/*.md, each
translated from the English page it names on its first line) and the chapters, which are the Chinese
notebooks in ../notebooks/zh: the same code and outputs, with Chinese prose and figure labels.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conf import *  # noqa: E402,F403  (the English edition's settings)
from conf import BOOK, ROOT  # noqa: E402
from sphinx.search.zh import SearchChinese as SphinxSearchChinese  # noqa: E402

language = "zh_CN"
html_search_language = "zh"  # Sphinx splits Chinese into words with jieba (the book extra installs it)
teachllm_chapters_from = ROOT / "notebooks" / "zh"
teachllm_other_edition = ("../", "English")
html_static_path = ["../_static", "../_vendor"]
html_title = "teachllm 中文版"
project = "teachllm：大语言模型如何生成文本"
nb_code_prompt_show = "显示代码单元格"  # the toggle of a hidden cell (myst-nb's default is English)
nb_code_prompt_hide = "隐藏代码单元格"
graphviz_dot_args = ["-Gfontname=Noto Sans CJK SC", "-Nfontname=Noto Sans CJK SC", "-Efontname=Noto Sans CJK SC"]

# Without jieba, Sphinx's Chinese search silently indexes no Chinese words: fail here instead, and keep
# jieba's start-up messages out of the build log.
try:
    import jieba
except ImportError as error:
    raise RuntimeError("the Chinese book needs jieba for its search index: pip install -e '.[book]'") from error
import logging  # noqa: E402

jieba.setLogLevel(logging.WARNING)


def glossary_words(glossary: Path) -> list[str]:
    """The Chinese terms of the glossary (预填充, 束搜索 …): jieba must keep each one a single word, or a
    search for 预填充 finds nothing (by itself it cuts the word into 预 + 填充)."""
    block = re.search(r"```\{glossary\}(.*?)```", glossary.read_text(encoding="utf-8"), re.S).group(1)
    heads = [line for line in block.splitlines() if line and not line[0].isspace() and not line.startswith(":")]
    return sorted({w for line in heads for w in line.split() if re.search(r"[\u4e00-\u9fff]", w) and len(w) > 1})


JIEBA_WORDS = BOOK / "_build" / "jieba-glossary-words.txt"
JIEBA_WORDS.parent.mkdir(exist_ok=True)
JIEBA_WORDS.write_text("".join(f"{w} 100000\n" for w in glossary_words(BOOK / "zh" / "glossary.md")), encoding="utf-8")
html_search_options = {"dict": str(JIEBA_WORDS)}


class SearchChinese(SphinxSearchChinese):
    """Sphinx 9.0's Chinese search, fixed: its language_data.js ends with `window.Stemmer = ChineseStemmer`,
    a class that does not exist (Chinese search stems Latin words with the English stemmer), so the search
    page stops with a ReferenceError and finds nothing (sphinx-doc/sphinx#14229, fixed upstream by #14416,
    not yet released). The JavaScript class is named after `language_name`, so name it after the stemmer."""

    language_name = "English"


def setup(app):
    from conf import setup as english_setup

    english_setup(app)
    app.add_search_language(SearchChinese)
