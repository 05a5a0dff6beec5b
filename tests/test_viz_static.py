"""The widgets' kernel-free forms (teachllm.viz.static): what the book draws with no kernel.

- `pack` stores a shared value once and `unpack` gives back exactly what was packed;
- each widget's form has its JupyterLab controls (names, labels, ranges, the value it shows) and one frame per
  setting, and every frame is the figure the widget's own `*_spec` function draws for that setting;
- the distribution explorer's form carries the engine's logits exactly (float32, bit for bit);
- a widget saves its form only while the notebooks are built (TEACHLLM_STATIC_WIDGETS);
- every widget in the committed notebooks, both editions, has a form, and the numbers in them are the engine's:
  the explorers' logits and attention probabilities agree with a fresh run of the model.

The page's side (the controls move, the probabilities the page computes equal teachllm.sampling's) is in
tests/browser/test_live_book.py.
"""

import json
from pathlib import Path

import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")
import torch

import teachllm as tl
from teachllm import viz
from teachllm.serving import ServingConfig, ServingEngine
from teachllm.viz import data, figures, lecture, static
from teachllm.viz import serving as vs

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = (sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
             + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")))
PROMPT = "The capital of France is Paris. The capital of Italy is"

pytestmark = pytest.mark.usefixtures("one_thread")


def frames(form: dict) -> dict:
    return static.unpack(form["frames"], form["table"])


def named(form: dict) -> dict:
    return {c["name"]: c for c in form["controls"] if "name" in c}


@pytest.fixture(scope="module")
def run(lm):
    config = ServingConfig(max_num_seqs=2, block_size=4, num_blocks=32, record_block_tables=True)
    params = tl.SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)
    return ServingEngine(lm, config).run(["The sky is", "Water boils at", "Once upon a time"], params)


# ---- packing ------------------------------------------------------------------------------------------
def test_pack_stores_a_shared_value_once_and_unpacks_to_the_same():
    heavy = {"z": [[0.125 * i + j for i in range(12)] for j in range(3)], "type": "heatmap"}
    value = {"a": {"figure": {"data": [heavy, {"type": "bar", "y": [1, 2]}], "layout": {"title": "x"}}},
             "b": {"figure": {"data": [heavy], "layout": {"title": "y"}}}}
    table, index = [], {}
    packed = {k: static.pack(v, table, index) for k, v in value.items()}
    assert static.unpack(packed, table) == value
    stored = [json.dumps(t, sort_keys=True) for t in table]
    assert sum("heatmap" in s for s in stored) == 1  # the heatmap once, though both frames draw it
    assert len(json.dumps(packed)) + len(json.dumps(table)) < len(json.dumps(value))


def test_pack_refuses_what_json_cannot_hold():
    assert static._plain([float("nan"), float("inf"), 1.5]) == [None, None, 1.5]
    with pytest.raises(ValueError):
        static.pack([float("nan")] * 40, [], {})


# ---- each widget's form ---------------------------------------------------------------------------------
def test_attention_explorer_form_is_every_layer_and_head(lm):
    explorer = viz.AttentionExplorer(lm, PROMPT, n_decode=2)
    explorer.layer.value, explorer.head.value = 3, 4
    form = explorer.static_form()
    c = lm.config
    assert form["widget"] == "AttentionExplorer" and form["lang"] == "en"
    controls = named(form)
    assert controls["layer"]["value"] == 3 and controls["head"]["value"] == 4
    assert controls["layer"]["label"] == explorer.layer.description
    assert [o[1] for o in controls["layer"]["options"]] == list(range(c.n_layers))
    assert [o[0] for o in controls["head"]["options"]] == [label for label, _ in explorer.head.options]
    drawn = frames(form)
    assert set(drawn) == {f"{layer},{head}" for layer in range(c.n_layers) for head in range(c.n_heads)}
    for layer, head in ((0, 0), (3, 4), (c.n_layers - 1, c.n_heads - 1)):
        assert drawn[f"{layer},{head}"]["figure"] == static.figure_json(
            figures.attention_spec(explorer.capture, layer, head))
    assert len(json.dumps(form)) < 0.5 * len(json.dumps(drawn))  # shared traces and layouts stored once


def test_stepping_views_record_the_whole_run(lm):
    params = tl.SamplingParams(temperature=0, max_tokens=5, ignore_eos=True)
    step = viz.StepThrough(lm, PROMPT, params)
    form = step.static_form()
    drawn = frames(form)
    assert list(drawn) == [str(i) for i in range(5)]  # prefill (the first token) + 4 decode steps
    assert named(form)["step"]["max"] == 4
    assert [a[0] for a in form["controls"][1]["actions"]] == [b.description for b in step.buttons.children]
    expected = lm.generate(PROMPT, params).text
    assert expected in drawn["4"]["html"]["text"].replace("&#x27;", "'") and "(finished)" in drawn["4"]["html"]["text"]
    step.run()  # the widget itself, run to the end, shows the last frame's words
    assert step.text.value == drawn["4"]["html"]["text"]

    cache = viz.CacheGrowthView(lm, PROMPT, params)
    drawn = frames(cache.static_form())
    cache.run()
    assert drawn["4"]["figure"] == static.figure_json(figures.cache_growth_spec(cache.points))
    assert drawn["0"]["figure"]["data"][0]["x"] == [0]


def test_iteration_views_have_one_frame_per_iteration(run):
    for view in (vs.IterationTimeline(run), vs.BlockTableView(run, start=2)):
        form = view.static_form()
        drawn = frames(form)
        assert list(drawn) == [str(r.index) for r in run.timeline]
        assert named(form)["iteration"]["value"] == view.slider.value
        for i in (run.timeline[0].index, 2, run.timeline[-1].index):
            assert drawn[str(i)]["figure"] == static.figure_json(view.spec(i))
            assert drawn[str(i)]["html"]["info"] == view.info_html(view.records[i])


def test_bpe_stepper_has_a_frame_per_merge_count():
    text = "the river and the rover"
    merges = tl.bpe.train_bpe(text, n_merges=6)[1]
    form = lecture.BPEStepper(text, merges, start=2).static_form()
    drawn = frames(form)
    assert list(drawn) == [str(n) for n in range(len(merges) + 1)] and named(form)["merges"]["value"] == 2
    assert drawn["4"]["figure"] == static.figure_json(lecture.bpe_pieces_spec(text, merges, 4))


def test_measuring_views_keep_their_figure_and_say_it_was_recorded(lm):
    view = viz.RooflineView(lm)
    form = view.static_form()
    assert frames(form)["0"]["figure"] == json.loads(view.figure.to_json())
    assert form["controls"][1]["actions"] == [[view.button.description, "replay"]] and "measured" in form["replay"]


def test_distribution_explorer_form_holds_the_engine_logits_exactly(lm):
    explorer = viz.DistributionExplorer(lm, "List of animals: dog, cat,", output=" dog, cat, dog")
    explorer.controls["top_p"].value = 0.9
    form = explorer.static_form()
    logits = static.float32_from_base64(form["logits"])
    assert torch.equal(torch.from_numpy(logits.copy()), explorer.logits.cpu())  # bit for bit
    assert form["prompt_ids"] == explorer.prompt_ids and form["output_ids"] == explorer.output_ids
    assert form["output_ids"] and form["eos_token_ids"] == list(lm.config.eos_token_ids)
    controls = named(form)
    for name, slider in explorer.controls.items():  # every slider, named as its SamplingParams field
        c = controls[name]
        assert (c["kind"], c["label"], c["min"], c["max"], c["step"], c["value"]) == (
            "slider", slider.description, slider.min, slider.max, slider.step, slider.value)
        assert hasattr(tl.SamplingParams(), name)
    assert controls["top_p"]["value"] == 0.9 and controls["seed"]["kind"] == "number"
    top = explorer.logits.topk(200).indices.tolist()
    assert {int(i) for i in form["labels"]} >= set(top) | set(explorer.prompt_ids)
    assert form["labels"][str(top[0])] == data.token_label(lm.tokenizer.token_text(top[0]))
    assert form["presets"] == data.PRESETS and form["top_n"] == explorer.top_n
    # the templates the page fills in are the ones tr fills in
    d = explorer.compute()
    title = figures.distribution_spec(d)[1]["title"]["text"]
    english = "{settings} · entropy {before:.2f} → {after:.2f} bits · {kept:,} of {vocab:,} tokens survive"
    template = form["strings"][english]
    assert title == template.format(settings=figures.describe(d.params), before=d.entropy_before,
                                    after=d.entropy_after, kept=d.n_kept, vocab=d.vocab_size)


def test_forms_in_chinese_are_in_chinese(lm, run):
    viz.set_language("zh")
    try:
        form = viz.DistributionExplorer(lm, "The sky is").static_form()
        assert form["lang"] == "zh" and form["strings"]["sample"] == "采样"
        assert named(form)["temperature"]["label"] == "温度"
        form = vs.IterationTimeline(run).static_form()
        assert named(form)["iteration"]["label"] == "迭代"
        assert form["controls"][1]["actions"][0][0] == viz.tr("previous") != "previous"
    finally:
        viz.set_language("en")


def test_a_widget_saves_its_form_only_while_the_notebooks_are_built(monkeypatch):
    stepper = lecture.BPEStepper("ab ab", tl.bpe.train_bpe("ab ab", n_merges=1)[1])
    monkeypatch.delenv("TEACHLLM_STATIC_WIDGETS", raising=False)
    assert static.MIME not in stepper._repr_mimebundle_()
    monkeypatch.setenv("TEACHLLM_STATIC_WIDGETS", "1")
    bundle = stepper._repr_mimebundle_()
    assert json.loads(bundle[static.MIME]) == stepper.static_form()
    assert "\n" not in bundle[static.MIME]  # one line in the notebook


# ---- the committed notebooks --------------------------------------------------------------------------
def widget_outputs(path: Path):
    """(code, static form or None) of every widget output in a notebook."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            bundle = output.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in bundle:
                form = bundle.get(static.MIME)
                yield "".join(cell["source"]), json.loads(form) if form else None


def test_every_widget_in_the_notebooks_has_a_kernel_free_form():
    seen = {}
    for path in NOTEBOOKS:
        for code, form in widget_outputs(path):
            assert form is not None, f"{path.relative_to(ROOT)}: a widget with no kernel-free form ({code[-80:]!r})"
            assert form["lang"] == ("zh" if path.parent.name == "zh" else "en"), path
            seen.setdefault(form["widget"], []).append(path.name)
    assert set(seen) == {"BPEStepper", "AttentionExplorer", "CacheGrowthView", "StepThrough", "DistributionExplorer",
                         "PhaseTimeline", "RooflineView", "IterationTimeline", "BlockTableView", "Quiz"}, seen


@pytest.mark.floating
def test_the_notebooks_forms_hold_the_engines_numbers(lm32):
    """The logits and attention probabilities saved in chapters 3, 6 and 7 are what the model computes now, on the
    CPU in float32 as they were built (within what another CPU's kernels change: they were saved on the build
    machine)."""
    lm = lm32
    checked = 0
    for path in NOTEBOOKS:
        for _, form in widget_outputs(path):
            if form["widget"] == "DistributionExplorer":
                saved = torch.from_numpy(static.float32_from_base64(form["logits"]).copy())
                now = data.next_token_logits(lm, form["prompt_ids"] + form["output_ids"])
                assert (saved - now).abs().max() < 1e-3, path
                checked += 1
            if form["widget"] == "AttentionExplorer" and path.name.startswith("03"):
                capture = data.capture_attention(lm, lm.tokenizer.encode(PROMPT), 0, data.labeller(lm.tokenizer))
                drawn = frames(form)
                for layer, head in ((0, 0), (1, 2), (29, 8)):
                    k = capture.group_of(head).index(head)  # the panel of this head: its prefill and decode traces
                    traces = drawn[f"{layer},{head}"]["figure"]["data"][2 * k: 2 * k + 2]
                    z = [row for trace in traces for row in trace["z"]]
                    expected = capture.probs[layer][head]
                    assert len(z) == expected.shape[0]
                    for i, row in enumerate(z):
                        for j, value in enumerate(row):
                            if value is None:
                                assert torch.isnan(expected[i, j])
                            else:
                                assert abs(value - float(expected[i, j])) < 1e-4
                checked += 1
    assert checked == 6  # chapters 6 and 7's explorers and chapter 3's attention, in both editions
