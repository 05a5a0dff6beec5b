"""teachllm.viz in Chinese: every string drawn or printed has a Chinese entry, every entry is used, and a
figure made with set_language("zh") has Chinese titles and axis titles and a font that can draw them.

The catalogue check reads the code (`ast`): the literal first argument of every tr(...) / viz.tr(...) call
in teachllm/viz, notebooks/src and the engine's text formatters (FORMATTERS: they take a `tr`, teachllm.words),
and every literal given to static.templates(...). Strings passed to tr
through a variable (a phase, a slider's name) are checked by building every figure and widget in Chinese and
asking `untranslated` what was missed.
"""

import ast
import base64
import os
import re
import string
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("plotly")  # before anything that imports teachllm.viz
pytest.importorskip("ipywidgets")
import plotly.graph_objects as go
import plotly.io as pio
import torch

import teachllm as tl
from teachllm import viz
from teachllm.roofline import Device, PhasePoint
from teachllm.serving import ServingConfig, ServingEngine, quality_table
from teachllm.viz import data, figures, lecture
from teachllm.viz import serving as vs
from teachllm.viz.language import CJK_FONT, untranslated  # (viz.language is the function that says which)
from teachllm.viz.zh import ZH

ROOT = Path(__file__).resolve().parents[1]
# the engine's text formatters that take a `tr` (teachllm.words) pass their templates to it as literals too
# (and the errors that keep their template: TemplatedError and NoTokenError)
FORMATTERS = [ROOT / "teachllm" / name for name in ("cost.py", "roofline.py", "lm.py", "fastpath/kernels.py",
                                                   "sampling.py", "fastpath/loop.py", "params.py")]
SOURCES = (sorted((ROOT / "teachllm" / "viz").glob("*.py")) + sorted((ROOT / "notebooks" / "src").glob("*.py"))
           + FORMATTERS)
CJK = re.compile(r"[\u4e00-\u9fff]")
SAME = {"FLOP/s", "token"}  # axis titles that read the same in both editions

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def tr_literals() -> dict[str, str]:
    """English template → the file that passes it to tr(...) as a literal (both arms of `a if c else b` too)."""
    found = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            # static.templates(*english): a page's templates
            if name not in ("tr", "templates", "NoTokenError", "TemplatedError"):
                continue
            for arg in node.args if name == "templates" else node.args[:1]:
                for candidate in (arg.body, arg.orelse) if isinstance(arg, ast.IfExp) else (arg,):
                    if isinstance(candidate, ast.Constant) and isinstance(candidate.value, str):
                        found.setdefault(candidate.value, path.name)
    return found


def string_constants() -> set[str]:
    return {node.value for path in SOURCES if path.name != "zh.py"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def fields(template: str) -> list[tuple[str, str]]:
    return sorted((name, spec) for _, name, spec, _ in string.Formatter().parse(template) if name is not None)


# ---- (a) the catalogue ------------------------------------------------------------------------------
def test_every_string_given_to_tr_has_a_chinese_entry():
    literals = tr_literals()
    assert len(literals) > 100  # the scan finds the calls
    missing = {english: where for english, where in literals.items() if english not in ZH}
    assert not missing, f"no Chinese for: {missing}"


def test_every_entry_is_used_and_keeps_its_fields():
    constants = string_constants()
    assert not [english for english in ZH if english not in constants], "entries no code uses"
    for english, chinese in ZH.items():
        assert fields(english) == fields(chinese), english
        if chinese != english and english not in {"ms"}:
            assert CJK.search(chinese) or english in {"top-k", "top-p", "min-p", "token"}, english


def test_tr_fills_in_the_fields_in_either_language():
    assert viz.tr("layer {i}", i=3) == "layer 3"
    viz.set_language("zh")
    try:
        assert viz.tr("layer {i}", i=3) == "第 3 层"
        assert viz.tr("an English sentence with no entry") == "an English sentence with no entry"
    finally:
        viz.set_language("en")
        untranslated.discard("an English sentence with no entry")


def test_tr_takes_the_english_text_as_a_str():
    for wrong in (None, 3, b"layer {i}"):
        with pytest.raises(TypeError, match=f"tr takes the English text as a str, got {type(wrong).__name__}"):
            viz.tr(wrong)


def test_tr_refuses_a_missing_field_and_one_the_template_does_not_use():
    """Every field the template names must be given, and no other, in either language: "layer {i}" must never
    reach a figure unfilled, and a misspelt field must not vanish unnoticed."""
    for lang in ("en", "zh"):
        viz.set_language(lang)
        try:
            with pytest.raises(TypeError, match=r"the template 'layer \{i\}' needs the field\(s\) i \(given: none\)"):
                viz.tr("layer {i}")
            with pytest.raises(TypeError, match=r"'layer \{i\}' needs the field\(s\) i \(given: layer\)"):
                viz.tr("layer {i}", layer=3)
            with pytest.raises(TypeError, match=r"'request \{rid\}, iteration \{i\}: ' needs the field\(s\) rid "):
                viz.tr("request {rid}, iteration {i}: ", i=2)
            with pytest.raises(TypeError, match=r"the template 'layer \{i\}' has no field\(s\) head, kv"):
                viz.tr("layer {i}", i=3, kv=0, head=1)
            with pytest.raises(TypeError, match=r"the template 'ms' has no field\(s\) value"):
                viz.tr("ms", value=3)
        finally:
            viz.set_language("en")


def test_tr_braces():
    """A literal brace is written twice, with fields or without; a lone one is refused, not drawn."""
    assert viz.tr("a set {{x}} of {n}", n=2) == "a set {x} of 2" and viz.tr("{{}}") == "{}"
    assert viz.tr("repetition {value:g}", value=1.5) == "repetition 1.5"  # a format spec is not part of the name
    with pytest.raises(ValueError, match=r"tr: 'a \{ b' is not a template.*a literal brace is written twice"):
        viz.tr("a { b")


# ---- (c) languages ----------------------------------------------------------------------------------
def test_only_english_and_chinese():
    with pytest.raises(ValueError, match="'en', 'zh'.*'fr'"):
        viz.set_language("fr")
    assert viz.language() == "en"


def test_the_environment_can_choose_the_language():
    """TEACHLLM_LANGUAGE sets the language at import, so the Chinese notebooks run the English code cells."""
    code = "from teachllm import viz; print(viz.language(), viz.tr('layer {i}', i=2))"
    run = lambda lang: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,  # noqa: E731
                                      env={**os.environ, "TEACHLLM_LANGUAGE": lang})
    assert run("zh").stdout.strip() == "zh 第 2 层" and run("").stdout.strip() == "en layer 2"
    bad = run("fr")  # the message names the variable: the import that fails may be far from where it was set
    assert bad.returncode != 0 and "TEACHLLM_LANGUAGE must be one of 'en', 'zh', got 'fr'" in bad.stderr


# ---- (b) every figure and widget, in Chinese --------------------------------------------------------
@pytest.fixture(scope="module")
def chunked_run(lm):
    """Four requests, two at a time, chunked prefill with block tables: every serving view has something to draw."""
    config = ServingConfig(max_num_seqs=2, block_size=4, num_blocks=64, max_num_batched_tokens=8,
                           chunked_prefill=True, record_block_tables=True)
    params = tl.SamplingParams(temperature=0, max_tokens=3, ignore_eos=True)
    return ServingEngine(lm, config).run(["The sky is", "Water boils at", "def f(n):", "Once upon a time"], params)


def all_figures(lm, run):
    """One of every figure teachllm.viz draws, small, built in the current language."""
    ids = lm.tokenizer.encode("The sky is")
    labels_of = data.labeller(lm.tokenizer)
    logits = data.next_token_logits(lm, ids)  # [V]
    d = data.distribution(logits, tl.SamplingParams(temperature=0.8, top_k=40, top_p=0.9, repetition_penalty=1.2),
                          ids)
    d.chosen, d.chosen_rank = data.sample_token(logits, tl.SamplingParams(temperature=0.8), seed=0)
    steps = list(tl.generation_steps(lm, [ids], tl.SamplingParams(temperature=0, max_tokens=3, ignore_eos=True)))
    records = [data.step_record(s, labels_of) for s in steps]
    points = [data.cache_point(s.index, s.phase, s.cache) for s in steps]
    device = Device("test", peak_flops=1e12, bandwidth=1e11, dtype="float32", source="measured")
    phases = [PhasePoint("prefill", 1, 128, 4e9, 2e8, 0.01), PhasePoint("decode", 1, 512, 3e8, 3e8, 0.005)]
    merges = tl.bpe.train_bpe("the river and the water, the river", n_merges=6)[1]
    torch.manual_seed(0)
    stages = lecture.penalty_stages(torch.randn(40) * 3, tl.SamplingParams(repetition_penalty=1.3,
                                    presence_penalty=0.4, no_repeat_ngram_size=2), [1, 2, 3], [5, 6, 5],
                                    lambda xs: [f"t{i}" for i in xs], top_n=5)
    beams = list(tl.beam.beam_search_steps(lm, ids, tl.SamplingParams(num_beams=2, max_tokens=2)))
    blend = quality_table(lm, [list(range(10, 17)), list(range(20, 28))], list(range(30, 35)), ratios=(0.0, 0.5, 1.0))
    return {
        "distribution": figures.distribution_figure(d),
        "attention": figures.attention_figure(data.capture_attention(lm, ids, 1), 0, 0),
        "cache growth": figures.cache_growth_figure(points, paged=points),
        "step": figures.step_figure(records[1]),
        "timeline": figures.timeline_figure(data.timeline(records, lm.config, 1e11)),
        "roofline": figures.roofline_figure(device, phases),
        "precision roofline": figures.precision_roofline_figure(device, [
            dict(name="float32", intensity=1.0, predicted_flops=1e11, measured_flops=5e10)]),
        "bpe": lecture.bpe_pieces_figure("the river", merges, 1),
        "penalties": lecture.penalty_stages_figure(stages),
        "beam tree": lecture.beam_tree_figure(lecture.beam_tree(beams, labels_of)),
        "pipeline": lecture.pipeline_figure(lecture.pipeline_stages(lm, "The sky is")),
        "iteration timeline": vs.iteration_timeline_figure(run, upto=2),
        "block tables": vs.block_table_figure(run.timeline[1].block_tables),
        "fragmentation": vs.fragmentation_figure(vs.slot_usage(run)),
        "cacheblend": vs.blend_quality_figure(blend),
    }


def axis_titles(fig) -> list[str]:
    layout = fig.to_plotly_json()["layout"]
    return [axis["title"]["text"] for key, axis in layout.items()
            if re.fullmatch(r"[xy]axis\d*", key) and axis.get("title", {}).get("text")]


@pytest.fixture
def chinese():
    viz.set_language("zh")
    untranslated.clear()
    yield
    viz.set_language("en")


def test_every_figure_in_chinese_has_chinese_titles_and_a_cjk_font(lm, chunked_run):
    english = {name: fig.to_json() for name, fig in all_figures(lm, chunked_run).items()}
    viz.set_language("zh")
    try:
        untranslated.clear()
        chinese = all_figures(lm, chunked_run)
        assert not untranslated, f"asked for in Chinese, no entry: {untranslated}"
    finally:
        viz.set_language("en")
    for name, fig in chinese.items():
        assert CJK.search(fig.layout.title.text), name
        titles = axis_titles(fig)
        assert all(CJK.search(t) or t in SAME for t in titles), (name, titles)
        assert fig.layout.font.family == CJK_FONT, name
        names = [t.name for t in fig.data if t.name and t.showlegend is not False]
        assert not names or any(CJK.search(n) for n in names), (name, names)
    # English again: the same figures as before Chinese was switched on, no font set, no Chinese anywhere
    again = all_figures(lm, chunked_run)
    for name, fig in again.items():
        assert fig.to_json() == english[name] or name == "timeline", name  # the timeline is measured: times differ
        assert fig.layout.font.family is None and not CJK.search(fig.to_json()), name


def test_widgets_in_chinese(lm, chunked_run, chinese):
    explorer = viz.DistributionExplorer(lm, "The sky is")
    assert explorer.temperature.description == "温度" and "teachllm-temperature" in explorer.temperature._dom_classes
    assert dict(explorer.preset.options)["对话"] == "chat" and explorer.sample_button.description == "采样"
    explorer.preset.value = "chat"
    explorer.sample_button.click()
    assert "采样到" in explorer.info.value and CJK.search(explorer.figure.layout.title.text)
    assert explorer.figure.layout.font.family == CJK_FONT == viz.PhaseTimeline(lm, "x").figure.layout.font.family
    attention = viz.AttentionExplorer(lm, "The sky is", n_decode=1)
    assert attention.layer.options[2] == ("第 2 层", 2) and attention.head.description == "注意力头"
    step = viz.StepThrough(lm, "The sky is", tl.SamplingParams(temperature=0, max_tokens=2, ignore_eos=True))
    step.run()
    assert "<th>阶段</th>" in step.table.value and "（已结束）" in step.text.value
    viz.CacheGrowthView(lm, "The sky is", tl.SamplingParams(temperature=0, max_tokens=2))
    viz.RooflineView(lm)
    lecture.BPEStepper("the river", tl.bpe.train_bpe("the river", n_merges=2)[1])
    timeline = vs.IterationTimeline(chunked_run)
    timeline.next()
    assert "次迭代" in timeline.info.value and timeline.slider.description == "迭代"
    tables = vs.BlockTableView(chunked_run, start=1)
    assert tables.figure.layout.title.text.startswith("第 1 次迭代之后")
    for view in (explorer, attention, step, tables, viz.RooflineView(lm)):  # the book's forms say the same
        assert view.static_form()["lang"] == "zh"
    assert not untranslated, f"asked for in Chinese, no entry: {untranslated}"


# ---- (d) how the notebooks show figures ---------------------------------------------------------------
@pytest.fixture
def plotly_settings(monkeypatch):
    """Put plotly's renderer and image defaults back after the test."""
    for name in ("default_width", "default_scale", "headers"):
        monkeypatch.setattr(pio.defaults, name, getattr(pio.defaults, name))
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)


def test_figures_are_drawn_by_jupyterlab(monkeypatch, plotly_settings):
    monkeypatch.delenv("TEACHLLM_STATIC_FIGURES", raising=False)
    assert viz.show_figures_offline() == "plotly_mimetype" == pio.renderers.default


def test_static_figures_add_a_png_made_offline(monkeypatch, plotly_settings):
    kaleido = pytest.importorskip("kaleido")
    calls = []
    monkeypatch.setattr(kaleido, "start_sync_server", lambda **kw: calls.append(kw))
    monkeypatch.setattr(kaleido, "calc_fig_sync", lambda fig: calls.append(fig))
    monkeypatch.setenv("BROWSER_PATH", sys.executable)  # a program where the browser would be; none is started
    monkeypatch.setenv("TEACHLLM_STATIC_FIGURES", "1")
    assert viz.show_figures_offline() == "plotly_mimetype+png" == pio.renderers.default
    assert calls == [{"mathjax": False, "silence_warnings": True},  # MathJax would come from a CDN
                     {"data": [], "layout": {}}]  # a first, empty figure, drawn at once: the browser answers
    assert (pio.defaults.default_width, pio.defaults.default_scale) == (800, 1)


def static_figures_on(monkeypatch):
    """TEACHLLM_STATIC_FIGURES=1 and show_figures_offline(), as the notebooks do: skipped without kaleido or a
    Chromium, except under CI=true, where this must run (.ci/run installs chromium and fonts-noto-cjk)."""
    monkeypatch.setenv("TEACHLLM_STATIC_FIGURES", "1")
    try:
        import kaleido  # noqa: F401
        viz.show_figures_offline()
    except (ImportError, RuntimeError) as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{e}; CI=true, so this test must run (.ci/run installs chromium and fonts-noto-cjk)")
        pytest.skip(f"{e} (pip install -e '.[notebook]'; apt-get install chromium fonts-noto-cjk)")


def test_a_chinese_figure_becomes_a_small_png_on_this_machine(monkeypatch, plotly_settings, chinese):
    """A real PNG through the renderer the notebooks use (chromium on this machine, no network): 800 pixels
    wide, the figure's own height, well under 80 KB."""
    static_figures_on(monkeypatch)
    device = Device("test", peak_flops=1e12, bandwidth=1e11, dtype="float32", source="spec sheet")
    fig = figures.roofline_figure(device, [PhasePoint("decode", 1, 512, 3e8, 3e8, 0.005)])
    bundle = pio.renderers["png"].to_mimebundle(fig.to_dict())
    png = base64.b64decode(bundle["image/png"])
    width, height = struct.unpack(">II", png[16:24])  # the PNG header's IHDR chunk
    assert (width, height) == (800, fig.layout.height) and len(png) < 80_000


def test_chinese_in_a_png_is_drawn_with_a_cjk_font(monkeypatch, plotly_settings, chinese):
    """A picture made outside the reader's browser (the PNG beside each figure) needs a CJK font on the machine
    that makes it: fonts-noto-cjk, which .ci/run installs. Two titles that differ only in their Chinese
    characters must give different pictures, and neither may look like a row of missing-glyph boxes (drawn
    here with private-use characters, which no font has): without a CJK font all three are the same boxes."""
    static_figures_on(monkeypatch)

    def png(title: str) -> bytes:
        layout = figures.figure_layout(title=title, width=260, height=70, margin={"t": 45, "b": 0, "l": 0, "r": 0},
                                       xaxis={"visible": False}, yaxis={"visible": False})
        figure = go.Figure(layout=layout).to_dict()  # resolves the template's name into its settings
        return base64.b64decode(pio.renderers["png"].to_mimebundle(figure)["image/png"])

    prefill, decode, boxes = png("预填充阶段"), png("解码的阶段"), png("\ue000\ue001\ue002\ue003\ue004")
    assert prefill != decode, "two different Chinese titles drew the same picture: no CJK font (fonts-noto-cjk)?"
    assert boxes not in (prefill, decode), "Chinese characters were drawn as missing-glyph boxes"


def test_pad_counts_a_chinese_character_as_two_columns():
    from teachllm.viz import pad

    assert pad("top-k", 8) == "top-k   "
    assert pad("重复惩罚", 10) == "重复惩罚  "  # four characters, eight columns
    assert pad("a longer name", 4) == "a longer name"


def test_the_engines_tables_print_in_chinese_when_given_viz_tr(lm, chinese):
    """cost's FLOP table and textbook comparison, a roofline device, measured points, the kernel choice and
    lm.describe take `tr`: in English (the default, teachllm.words.english) exactly what they printed before
    they took one, and with viz.tr in Chinese every word has an entry, including the reasons `_why` picks from
    the config (each branch: this model's GQA and narrow MLP, a textbook layer, a wider query)."""
    from teachllm import cost, roofline, words
    from teachllm.fastpath import kernels

    textbook = tl.ModelConfig(vocab_size=100, hidden_size=64, intermediate_size=256, n_layers=2, n_heads=4,
                              n_kv_heads=4, head_dim=16, max_position_embeddings=64)  # n_h·d = h, f = 4h
    wide = tl.ModelConfig(vocab_size=100, hidden_size=64, intermediate_size=96, n_layers=2, n_heads=4,
                          n_kv_heads=2, head_dim=32, max_position_embeddings=64)  # n_h·d = 128, not h
    measured = Device("cpu, 2 threads", peak_flops=2e11, bandwidth=4e10, dtype="float32", source="measured")
    points = [PhasePoint("prefill", 1, 16, 3.5e9, 5.4e8, 0.06), PhasePoint("decode", 16, 301, 4.6e9, 7.6e8, 0.08)]
    groups = [kernels.Group("Q4_1", 576, 576, ["layers.0.self_attn.q_proj"], "avx2",
                            step_ms={"avx2": 1.0, "int4": 2.0}),
              kernels.Group("Q4_1", 192, 576, ["layers.0.self_attn.k_proj"], "float32",
                            step_ms={"int4": 1.0, "float32": 1.01}, refused={"avx512": "no AVX-512 here"}),
              kernels.Group("Q8_0", 49152, 576, ["lm_head"], "int8")]  # no times: forced, outside the bound
    facts = {"cpu": "a CPU", "capability": "AVX2", "threads": 1, "torch": "2.13"}
    tables = {
        "flops": lambda tr: cost.prefill_flops(lm.config, 37).table(tr),
        "decode flops": lambda tr: cost.decode_flops(lm.config, 38).table(tr),
        **{f"comparison {name}": (lambda tr, c=c: cost.format_comparison(cost.compare_with_textbook(c, 8), tr))
           for name, c in (("bundled", lm.config), ("textbook", textbook), ("wide", wide))},
        "measured device": measured.describe, "spec device": roofline.KNOWN_DEVICES["H100 SXM"].describe,
        "points": lambda tr: roofline.format_points(points, tr),
        "kernels": kernels.Choice(groups, facts, "measured", 3.4, "2026-11-27").describe,
        "forced": kernels.Choice(groups[2:], facts, "forced").describe,
        "lm": lm.describe,
    }
    for name, table in tables.items():
        english, chinese = table(words.english), table(viz.tr)
        assert CJK.search(chinese) and not CJK.search(english), (name, chinese)
        numbers = [sorted(re.findall(r"\d+(?:[.,]\d+)*", text)) for text in (english, chinese)]
        assert numbers[0] == numbers[1], name  # the same numbers, in whatever order the sentence puts them
    assert str(cost.prefill_flops(lm.config, 37)) == tables["flops"](words.english)  # print(count) is the table
    assert str(measured) == measured.describe()
    assert not untranslated, f"no Chinese for: {sorted(untranslated)}"
