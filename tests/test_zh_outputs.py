"""Every output a learner reads in the Chinese edition is Chinese: no English line, and no English sentence.

The check reads the saved outputs of every executed notebooks/zh/*.ipynb (issue 37, item 2): printed text,
a cell's returned text, HTML tables (tags stripped) and the words of a figure (titles, axis titles, legend
names, annotations, hover templates). A run of English words is reported, numbers, parentheses and punctuation
between its words included ("step 0 (prefill): 12 of 24 slots", "growth per step: 46,080 bytes", otter's "Error at
line 27 in test"): a number does not cut a sentence in two. On a line with no Chinese character, a run of two words
is English ("17 special tokens", "pool: 28 blocks × 4 slots"); beside Chinese it takes four, since a word or two
there is a term the edition keeps (top-p, token) or a name. What is not English a learner reads is left out:

- identifiers and code: a word joined to `_`, `.`, `(` or `/` (`top_p`, `lm.generate`, `slot(p)`), a line of
  Python (an assignment of a call, `def`, `for … :`, `assert …`, any line that parses and calls something: a
  check's failing line), an object's repr (`LanguageModel(…)`), a shape's dimension names (`[batch, vocabulary]`),
  and the whole output of a cell that prints source code (`inspect.getsource`, the native kernel's C file): the
  code is the same in both editions;
- token texts and quoted strings: anything between quotes ('…', "…", “…”, 「…」) — a repr of a token, a prompt,
  a stop string; an apostrophe after a letter or digit ("decoders'", "prompt's") opens no quote — and a line
  that holds a chat template's special tokens (`<|im_start|>`), which is the model's input written out;
- single letters and Python's constants (`Q, K, V`, `N`, `True`): symbols, not words;
- the few outputs in ALLOWED below, each with its reason: text that is data (a training corpus, the model's own
  words cut into tokens), never a sentence the course writes.

Nothing is left on a list of known exceptions: every chapter prints its lines through viz.tr (and the engine's
tables through their `tr`, teachllm.words), so a new English line fails here. A translated line that
tests/notebook_numbers.json ties a prose number to has its Chinese words there too ("out_zh" beside "out").
An error a chapter shows on purpose (a library's message) stays as the library writes it, and the Markdown
cell next to it must explain it in Chinese (EXPLAINED).
"""

from __future__ import annotations

import ast
import copy
import html
import re
import warnings
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))

# a word: two letters or more, or the article "a" (other single letters are symbols: p, T, Q, K, V, request A);
# Python's constants are not words
WORD = r"(?!(?:True|False|None)\b)(?:[A-Za-z][a-z']*[a-z]|a)"
# a number between the words of a sentence ("12 of 24 slots", "46,080 bytes", "0.850", "34%", "×2")
NUMBER = r"[-+×~≈]?\d[\d,.]*(?:%|x|×)?"
# what parts one word (or number) of a run from the next: spaces, a comma, colon or semicolon, a parenthesis
GAP = r"(?:[,:;]? +|[,:;]? *\(|\)[,:;]? *)"
# a run of words and numbers, one gap apart, that starts with a word and is not part of an identifier
RUN = re.compile(rf"(?<![\w.'/-])\(?{WORD}(?:{GAP}\(?(?:{WORD}|{NUMBER})\)?)+(?![\w(/])")
WORD_IN_RUN = re.compile(rf"(?<![\w.'/-]){WORD}(?![\w(/])")
# How many words make a run English a learner reads. On a line with no Chinese character, two: the whole line is
# English ("17 special tokens", "SmolLM2 vocabulary size: 49152", "pool: 28 blocks × 4 slots"). Beside Chinese,
# a word or two is a term the Chinese edition keeps (top-p, token, logits) or a name; four make a sentence
# ("step 0 (prefill): 12 of 24 slots" holds five).
HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
WORDS_ALONE, WORDS_BESIDE_CHINESE = 2, 4
# a quote opens after a space, a bracket or punctuation, never right after a letter or digit: the apostrophe of
# "decoders' longest gap … the long prompt's TTFT" is not a quote around the words between
QUOTED = re.compile(r"(?<![A-Za-z0-9])'[^'\n]*'|\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|「[^」\n]*」|`[^`\n]*`")
CODE_LINE = re.compile(r"^\s*(?:[\w.\[\], ]+=\s*[\w.]+[(\[]|def |class |return\b|assert |import |from \S+ import |@\w"
                       r"|(?:if|for|while|with|elif|else|try|except)\b.*:\s*(?:#.*)?$)")
SPECIAL_TOKENS = re.compile(r"<\|\w+\|>")
# an object's repr as Python prints it, `Name(…)` alone on its line (a module tree's "(gate_proj): Q4_1Linear(…)"),
# or over several lines, from `Name(` to the `)` under it, as PyTorch prints a module
REPR = re.compile(r"^\s*(?:\(\w+\): )?[A-Z]\w*\(.*\)\s*$")
REPR_OPENS = re.compile(r"^(\s*)(?:\(\w+\): )?[A-Z]\w*\($")
# a shape's dimension names in brackets, as the code's shape comments write them: "= [batch, vocabulary]"
SHAPE = re.compile(r"\[[A-Za-z_]\w*(?:, *[A-Za-z_]\w*)+\]")
PRINTS_SOURCE = re.compile(r"getsource\(|\.SOURCE\b")  # a cell that prints the package's own code
FIGURE_KEYS = {"text", "name", "hovertemplate", "title"}  # the words of a plotly figure; "template" is styling

# Text that is data, not a sentence of the course: (chapter, the exact run reported) → why it stays English.
ALLOWED = {
    # the tiny corpus chapter 2 trains its BPE tokenizer on: English sentences by design, the merges it learns
    # are printed beside them
    ("02-tokens", "The farmers carried their grain across the bridge to the mill"): "training corpus",
    ("02-tokens", "After the flood, the river was wider and the water ran faster"): "training corpus",
    ("02-tokens", "Travellers waited on the bank while the ferry crossed the deep water"): "training corpus",
    # the attention table's column labels: the prompt's tokens, each cut to five characters
    ("03-prefill-layer-by-layer", "The  capi    of  Fran    is  Pari"): "token texts",
    ("03-prefill-layer-by-layer", "The  capi    of  Ital    is"): "token texts",
    # the entropy figure's legend: the two prompts the chapter calls "sure" and "open", as the model reads them
    ("06-logits-to-token", "The capital of France is"): "a prompt",
    ("06-logits-to-token", "Once upon a time, there was a"): "a prompt",
    # the course notes' own code for Llama-7B's FLOPs, run as written, prints these lines (the Markdown beside it
    # says so, and what each word means)
    ("10-what-it-costs", "Prefill (1000 tokens): 4557.11"): "the course notes' code",
    ("10-what-it-costs", "Single Decode step: 4.56"): "the course notes' code",
}

# An error a chapter shows on purpose, printed as the library (or PyTorch) writes it: (chapter, the run reported)
# → words the Markdown cell right before or after it must hold, in Chinese, to explain it.
EXPLAINED: dict[tuple[str, str], str] = {}  # none now: chapter 8's refusal prints through tr (TemplatedError)

def is_code(line: str) -> bool:
    """A line of Python (CODE_LINE, or a line that parses and calls something: the failing line a check quotes,
    `stopped(env, run(env["lm"], "Say hello.", 2).token_ids)`), an object's repr, or the model's input."""
    if CODE_LINE.match(line) or REPR.match(line) or SPECIAL_TOKENS.search(line):
        return True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a "\d" in a string is a SyntaxWarning, not an error
        try:
            tree = ast.parse(line.strip())
        except (SyntaxError, ValueError):
            return False
    return any(isinstance(node, ast.Call) for node in ast.walk(tree))


def english_sentences(text: str) -> list[str]:
    """The English runs in `text` (two words or more on a line with no Chinese, four beside Chinese), after quotes,
    shapes, code lines and special tokens are left out."""
    found, closing = [], None  # closing: the line that ends the module repr being read
    for line in text.splitlines():
        if closing is not None:
            closing = None if line == closing else closing
            continue
        if opens := REPR_OPENS.match(line):
            closing = opens.group(1) + ")"
            continue
        if is_code(line):
            continue
        least = WORDS_BESIDE_CHINESE if HAN.search(line) else WORDS_ALONE
        found += [m.group(0) for m in RUN.finditer(SHAPE.sub(" ", QUOTED.sub(" ", line)))
                  if len(WORD_IN_RUN.findall(m.group(0))) >= least]
    return found


def figure_words(node, key: str = "") -> list[str]:
    """The strings of a plotly figure a reader sees: titles, names, annotations, hover templates (fields removed)."""
    if isinstance(node, dict):
        return [w for k, v in node.items() if k != "template" for w in figure_words(v, k)]
    if isinstance(node, list):
        return [w for v in node for w in figure_words(v, key)] if key not in FIGURE_KEYS else []
    if isinstance(node, str) and key in FIGURE_KEYS:
        return [re.sub(r"%\{[^}]*\}|<[^>]+>", "\n", node)]
    return []


def readable_texts(nb) -> list[tuple[int, str]]:
    """(code cell's index, text) for every output a learner reads."""
    texts = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or PRINTS_SOURCE.search(cell.source):
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                texts.append((k, out.text))
            elif out.output_type == "error":
                texts.append((k, f"{out.ename}: {out.evalue}"))
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" not in data and "text/plain" in data:
                texts.append((k, data["text/plain"]))  # a widget's text/plain is only its Python repr
            if "text/html" in data:
                texts.append((k, html.unescape(re.sub(r"<[^>]+>", "\n", data["text/html"]))))
            if "application/vnd.plotly.v1+json" in data:
                texts += [(k, w) for w in figure_words(data["application/vnd.plotly.v1+json"])]
    return texts


def violations(nb, stem: str) -> dict[str, list[int]]:
    """English run → the code cells that show it, ALLOWED and EXPLAINED left out."""
    found: dict[str, list[int]] = {}
    for k, text in readable_texts(nb):
        for run in english_sentences(text):
            if (stem, run) not in ALLOWED and (stem, run) not in EXPLAINED:
                found.setdefault(run, []).append(k)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_english_sentence_in_what_the_chinese_edition_shows(path):
    found = violations(nbformat.read(path, as_version=4), path.stem)
    assert not found, f"{path.stem}: English in the Chinese edition's outputs (code cell: text): " + \
        "; ".join(f"{cells}: {run!r}" for run, cells in found.items())


def test_every_error_shown_in_english_is_explained_in_chinese_beside_it():
    for (stem, run), chinese in EXPLAINED.items():
        nb = nbformat.read(ROOT / "notebooks" / "zh" / f"{stem}.ipynb", as_version=4)
        cells = [k for k, text in readable_texts(nb) if run in english_sentences(text)]
        assert cells, f"{stem}: {run!r} is explained but no longer shown"
        beside = [nb.cells[j].source for k in cells for j in (k - 1, k + 1)
                  if 0 <= j < len(nb.cells) and nb.cells[j].cell_type == "markdown"]
        assert any(chinese in text for text in beside), f"{stem}: {run!r} is not explained beside it ({chinese!r})"


def test_allowed_entries_are_still_shown():
    for stem, run in ALLOWED:
        nb = nbformat.read(ROOT / "notebooks" / "zh" / f"{stem}.ipynb", as_version=4)
        assert any(run in english_sentences(text) for _, text in readable_texts(nb)), (stem, run)


# ---- the check catches English, and leaves alone what is not a sentence -------------------------------------
PLANTED = [
    "the cache holds every key and value",                  # a printed sentence
    "batch  ms per step  decode rate  × batch 1",          # a table header
    "mean attention on the previous token: 0.634",          # a sentence with its number
    # numbers, parentheses and punctuation between the words: each piece is under four words, the run is not
    "step  0 (prefill): 12 of 24 slots,   552,960 bytes",
    "growth per step: 46,080 bytes",
    "Error at line 27 in test ch01-ex1:",
    "whole prompt  decoders' longest gap between two tokens:  812 ms, long prompt's TTFT:  812 ms",  # apostrophes
    # short lines: on a line with no Chinese, two words are English a learner reads
    "SmolLM2 vocabulary size: 49152",
    "17 special tokens",
    "pool: 28 blocks × 4 slots = 112 slots",
    "tokens        : 5, last one 314",
]
NOT_SENTENCES = [
    "第 3 层：缓存里有 12 个 token",                            # Chinese
    "提示词：'What is the capital of France?'",               # a quoted prompt (token text)
    "SamplingParams(top_p=0.9, top_k=50, temperature=0.8)",  # code
    "got = half_length(env, env.config if lm in env else tl.load())",  # a line of Python
    "Q, K, V, O projections",                                 # symbols
    "p = 0.6 keeps [False, False, True, True]",               # Python's constants
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM<|im_end|>",  # a chat template
    "FLOP/byte  GFLOP/s  tokens/s  ms",                       # units
    "assert isinstance(text, str) and text.split()",        # a check's failing line (code)
    "第 1 层 (layer 1)：12 个 token, 46,080 bytes",            # a unit and one word beside the numbers
    "保留 3 个 token：top-p keeps them",                       # three words beside Chinese: a term, not a sentence
    "logits: (1, 49152) = [batch, vocabulary]",              # a shape's dimension names
    "LanguageModel(SmolLM2-135M-Instruct: 134.5M parameters, 30 layers, device=cpu)",  # an object's repr
    "  (gate_proj): Q4_1Linear(576 → 1536, 0.53 MiB as stored)",  # a module tree's line
    "Q4_1Linear(\n  576 → 1536, 0.53 MiB as stored, float32: 3.38 MiB, kernel int4\n  (impl): Int4()\n)",  # a module
    '      stopped(env, run(env["lm"], "Say hello.", 2).token_ids)',  # the failing line a check quotes
]


def chapter(cells_out: list[dict]):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(x)", outputs=[nbformat.from_dict(o)]) for o in cells_out]
    return nb


def test_the_check_catches_planted_english_sentences():
    stream = [{"output_type": "stream", "name": "stdout", "text": f"预填充 12 个 token\n{s}\n"} for s in PLANTED]
    table = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
             "data": {"text/plain": "表",
                      "text/html": "<table><tr><th>tokens per second after the first</th></tr></table>"}}
    figure = {"output_type": "display_data", "metadata": {}, "data": {"application/vnd.plotly.v1+json": {
        "data": [{"type": "bar", "name": "the model before any filter", "y": [1, 2]}],
        "layout": {"title": {"text": "where the time of a decode step goes"}, "template": {"layout": {}}}}}}
    error = {"output_type": "error", "ename": "ValueError", "evalue": "beam search does not take top_p",
             "traceback": []}
    found = violations(chapter([*stream, table, figure, error]), "planted")
    for planted in ["the cache holds every key and value", "mean attention on the previous token",
                    "tokens per second after the first", "the model before any filter",
                    "where the time of a decode step goes", "beam search does not take",
                    "batch  ms per step  decode rate",  # the header
                    "step  0 (prefill): 12 of 24 slots", "growth per step: 46,080 bytes", "Error at line 27 in test",
                    "longest gap between two tokens", "vocabulary size", "special tokens", "pool: 28 blocks",
                    "last one 314"]:
        assert any(planted in run for run in found), (planted, found)
    # planted into a real chapter, the English is reported as new
    path = NOTEBOOKS[0]
    nb = nbformat.read(path, as_version=4)
    planted = copy.deepcopy(nb)
    code = next(c for c in planted.cells if c.cell_type == "code" and c.outputs)
    code.outputs.append(nbformat.from_dict(stream[0]))
    assert "the cache holds every key and value" in violations(planted, path.stem)
    assert "the cache holds every key and value" not in violations(nb, path.stem)


def test_the_check_leaves_alone_what_is_not_an_english_sentence():
    stream = [{"output_type": "stream", "name": "stdout", "text": s} for s in NOT_SENTENCES]
    source = nbformat.v4.new_code_cell("print(inspect.getsource(tl.KVCache.write))", outputs=[nbformat.from_dict(
        {"output_type": "stream", "name": "stdout",
         "text": '    """Store the new tokens\' K and V after the filled slots"""'})])
    nb = chapter(stream)
    nb.cells.append(source)
    assert violations(nb, "planted") == {}
