"""teachllm.viz: every figure's numbers against the engine that produced them.

The bars must be the probabilities `process_logits` gives, the heatmaps the attention probabilities
a traced forward pass captures, the cache plot the cache's own byte count (and the formula). The
widgets are driven from Python here; tests/browser/ drives them in a real JupyterLab.
"""

import json
import math
import subprocess
import sys

import pytest

pytest.importorskip("plotly")  # before anything that imports teachllm.viz
pytest.importorskip("ipywidgets")
import torch
from transformers import TopPLogitsWarper

import teachllm as tl
from teachllm import cost
from teachllm.roofline import Device, PhasePoint
from teachllm.sampling import apply_temperature, apply_top_k, process_logits
from teachllm.viz import data, figures

PROMPT = "The three primary colours are"


SETTINGS = [
    dict(temperature=1.0),
    dict(temperature=0.7, top_k=40),
    dict(temperature=1.3, top_p=0.9),
    dict(temperature=0.8, top_p=0.9, top_k=40, min_p=0.05),
    dict(temperature=1.0, repetition_penalty=1.5, presence_penalty=0.8, frequency_penalty=0.5),
    dict(temperature=1.7, top_p=0.98, top_k=100),
]


@pytest.fixture(scope="module")
def prompt_ids(lm):
    return lm.tokenizer.encode(PROMPT)


@pytest.fixture(scope="module")
def logits(lm, prompt_ids):
    """The next-token logits after the prompt: an uncached forward pass, last position. [V]"""
    return lm.forward(prompt_ids)[0, -1].float()


def test_the_engine_never_imports_plotting_code():
    code = "import sys, teachllm as tl; tl.load; print(sorted(m for m in sys.modules if m.split('.')[0] in " \
           "('plotly', 'ipywidgets', 'anywidget') or m.startswith('teachllm.viz')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_next_token_logits_are_the_forward_pass_last_row(lm, prompt_ids, logits):
    torch.testing.assert_close(data.next_token_logits(lm, prompt_ids), logits, atol=5e-4, rtol=0)


# ---- 1. distribution ------------------------------------------------------------------------------
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: figures.describe(tl.SamplingParams(**s)))
def test_bars_are_the_probabilities_process_logits_gives(lm, prompt_ids, logits, settings):
    params = tl.SamplingParams(**settings)
    output = lm.tokenizer.encode(" red, red and blue", add_special_tokens=False)  # for presence / frequency
    eos = lm.config.eos_token_ids
    d = data.distribution(logits, params, prompt_ids, output, eos, top_n=25)
    processed = process_logits(logits, params, prompt_ids, output, eos)  # [V]
    probs = processed.softmax(-1)
    ids = torch.tensor(d.token_ids)

    fig = figures.distribution_figure(d)
    assert list(fig.data[0].y) == pytest.approx(logits.softmax(-1)[ids].tolist(), abs=1e-6)  # before
    assert list(fig.data[1].y) == pytest.approx(probs[ids].tolist(), abs=1e-6)  # after
    assert d.kept == processed[ids].isfinite().tolist()
    assert d.n_kept == int(processed.isfinite().sum())
    entropy = pytest.importorskip("scipy.stats").entropy  # the reference (not on a bare GPU machine)
    assert d.entropy_after == pytest.approx(entropy(probs.cpu().double().numpy(), base=2), abs=1e-4)
    assert d.entropy_before == pytest.approx(entropy(logits.softmax(-1).cpu().double().numpy(), base=2), abs=1e-4)
    # the bars are the most likely tokens, most likely first
    assert d.after == sorted(d.after, reverse=True)
    assert set(d.token_ids[: min(d.n_kept, 25)]) == set(torch.topk(processed, min(d.n_kept, 25)).indices.tolist())


@pytest.mark.parametrize("top_p", [0.5, 0.9, 0.98])
def test_the_top_p_cut_keeps_the_token_that_crosses_p(lm, prompt_ids, logits, top_p):
    params = tl.SamplingParams(temperature=1.2, top_k=80, top_p=top_p)
    d = data.distribution(logits, params, prompt_ids, top_n=100)
    before_top_p = apply_top_k(apply_temperature(logits, 1.2), 80).softmax(-1)  # what top-p sees
    mass = torch.sort(before_top_p, descending=True).values.cumsum(0)
    reference = TopPLogitsWarper(top_p)(None, apply_top_k(apply_temperature(logits, 1.2), 80)[None])  # transformers
    expected = int(reference.isfinite().sum())  # the tokens transformers keeps: the mass before each is below p
    assert d.n_top_p == expected
    assert d.cumulative == pytest.approx(mass[:100].tolist(), abs=1e-5)
    cut = [s for s in figures.distribution_figure(d).layout.shapes if s.label.text == "top-p cut"]
    assert [s.x0 for s in cut] == ([expected - 0.5] if expected < 100 else [])


def test_temperature_zero_is_greedy_one_bar_with_all_the_mass(lm, prompt_ids, logits):
    d = data.distribution(logits, tl.SamplingParams(temperature=0), prompt_ids)
    assert d.after[0] == 1.0 and sum(d.after) == 1.0 and d.n_kept == 1 and d.entropy_after == 0
    assert d.token_ids[0] == int(logits.argmax())
    assert data.sample_token(logits, tl.SamplingParams(temperature=0), seed=3) == (int(logits.argmax()), 0)


def test_sampling_with_a_seed_is_repeatable_and_lands_on_a_kept_token(logits, prompt_ids):
    params = tl.SamplingParams(temperature=1.5, top_k=20)
    draws = [data.sample_token(logits, params, seed) for seed in range(8)]
    assert draws == [data.sample_token(logits, params, seed) for seed in range(8)]
    top20 = torch.topk(logits, 20)
    for token, rank in draws:  # one of the 20 most likely, and its rank counts the tokens above it (ties share one)
        assert logits[token] >= top20.values[-1] and rank == int((logits > logits[token]).sum())
    d = data.distribution(logits, params, prompt_ids)
    d.chosen, d.chosen_rank = draws[0]
    star = figures.distribution_figure(d).data[4]
    assert list(star.x) == [d.token_ids.index(draws[0][0])] and list(star.y) == [round(d.after[star.x[0]], 6)]


def test_presets_follow_the_seeds_table():
    ranges = {"code": dict(temperature=(0.1, 0.3)), "factual QA": dict(temperature=(0.0, 0.5), top_p=(0.9, 0.9)),
              "chat": dict(temperature=(0.7, 0.9), top_p=(0.9, 0.9), top_k=(40, 40)),
              "creative": dict(temperature=(1.0, 1.2), top_p=(0.95, 0.95), top_k=(50, 50)),
              "brainstorm": dict(temperature=(1.5, 2.0), top_p=(0.98, 0.98), top_k=(100, 100))}
    assert set(data.PRESETS) == set(ranges)
    for name, preset in data.PRESETS.items():
        tl.SamplingParams(**preset)  # valid settings
        assert preset.keys() == ranges[name].keys()
        for key, (low, high) in ranges[name].items():
            assert low <= preset[key] <= high, (name, key)


def test_figures_are_rounded_and_deterministic(logits, prompt_ids):
    params = tl.SamplingParams(temperature=0.9, top_p=0.9)
    one = figures.distribution_figure(data.distribution(logits, params, prompt_ids)).to_json()
    two = figures.distribution_figure(data.distribution(logits.clone(), params, prompt_ids)).to_json()
    assert one == two
    numbers = [v for trace in json.loads(one)["data"] for key in ("y",) for v in trace[key] if v is not None]
    assert all(round(v, 6) == v for v in numbers)


def test_distribution_explorer_updates_its_figure_in_place(lm):
    from teachllm.viz import DistributionExplorer

    view = DistributionExplorer(lm, PROMPT)
    bars = view.figure.data[1]
    view.temperature.value = 0.5
    view.top_k.value = 10
    assert view.figure.data[1] is bars  # the same trace, new values
    expected = process_logits(view.logits, view.params(), view.prompt_ids, []).softmax(-1)
    assert list(bars.y) == pytest.approx(expected[view.compute().token_ids].tolist(), abs=1e-6)
    kept = view.compute().n_kept  # top-k = 10 keeps 10 tokens, and in bfloat16 any that tie exactly with the 10th
    assert sum(y > 0 for y in bars.y) == kept and (kept == 10 or lm.dtype != torch.float32)
    view.preset.value = "chat"
    assert (view.temperature.value, view.top_k.value, view.top_p.value) == (0.8, 40, 0.9)
    view.sample_button.click()
    assert view.chosen is not None and "sampled" in view.info.value
    view.temperature.value = 1.0  # moving a slider forgets the sample and leaves the preset
    assert view.chosen is None and view.preset.value == "custom"


# ---- 2. attention ---------------------------------------------------------------------------------
def test_heatmap_values_are_the_captured_attention_probabilities(lm, prompt_ids):
    n_decode, layer, head = 3, 7, 4
    capture = data.capture_attention(lm, prompt_ids, n_decode)
    fig = figures.attention_figure(capture, layer, head)

    # the same run, captured here: a prefill and three greedy decode steps, each with its own Trace
    cache = lm.new_cache(max_len=len(prompt_ids) + n_decode)
    traces = [tl.Trace()]
    logits = lm.prefill(prompt_ids, cache, trace=traces[0])
    for _ in range(n_decode):
        traces.append(tl.Trace())
        logits = lm.decode_step(int(logits.argmax(-1)), cache, trace=traces[-1])

    g = lm.config.n_groups
    group = [h for h in range(lm.config.n_heads) if h // g == head // g]  # heads sharing head's KV head
    assert [t.name for t in fig.data] == [f"{p}, head {h}" for h in group for p in ("prefill", "decode")]
    S = len(prompt_ids)
    for k, h in enumerate(group):
        prefill, decode = fig.data[2 * k], fig.data[2 * k + 1]
        probs = traces[0].layers[layer].probs[0, h]  # [S, S]
        for i in range(S):
            for j in range(S + n_decode):
                if j <= i:
                    assert prefill.z[i][j] == pytest.approx(float(probs[i, j]), abs=1e-6)
                else:
                    assert prefill.z[i][j] is None  # the causal mask: the future is blank
        for step in range(n_decode):
            row = traces[step + 1].layers[layer].probs[0, h, 0]  # [S + step + 1]: one query, the whole cache
            assert decode.z[step][: S + step + 1] == pytest.approx(row.tolist(), abs=1e-6)
            assert all(v is None for v in decode.z[step][S + step + 1:])
            assert list(decode.y)[step] == S + step
    assert "◀ selected" in fig.layout.annotations[group.index(head)].text


def test_attention_explorer_layer_selector_redraws(lm):
    from teachllm.viz import AttentionExplorer

    view = AttentionExplorer(lm, PROMPT, n_decode=2)
    before = [list(map(list, t.z)) for t in view.figure.data]
    view.layer.value = 12
    assert [list(map(list, t.z)) for t in view.figure.data] != before
    expected = figures.attention_figure(view.capture, 12, 0)
    assert [t.z for t in view.figure.data] == [t.z for t in expected.data]
    view.head.value = 8  # KV head 2: query heads 6, 7, 8
    assert [t.name for t in view.figure.data][::2] == ["prefill, head 6", "prefill, head 7", "prefill, head 8"]


# ---- 3. KV cache growth ---------------------------------------------------------------------------
def test_cache_plot_bytes_are_the_caches_own_count_and_the_formula(lm, prompt_ids):
    params = tl.SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    points, used, allocated = [], [], []
    for step in tl.generation_steps(lm, [prompt_ids], params):
        points.append(data.cache_point(step.index, step.phase, step.cache))
        used.append(step.cache.bytes_used)
        allocated.append(step.cache.k.nbytes + step.cache.v.nbytes)
    c = lm.config
    lengths = [len(prompt_ids) + i for i in range(6)]
    assert [p.length for p in points] == lengths
    fig = figures.cache_growth_figure(points)
    measured, formula, alloc, layer_used, layer_free = fig.data
    assert list(measured.y) == used
    size = lm.dtype.itemsize  # bytes per element: 4 in float32
    assert list(formula.y) == [2 * c.n_layers * c.n_kv_heads * c.head_dim * n * size for n in lengths]
    assert list(formula.y) == used  # the cache holds exactly what the formula says
    assert list(alloc.y) == allocated
    assert sum(layer_used.y) == used[-1] and sum(layer_used.y) + sum(layer_free.y) == allocated[-1]


def test_cache_growth_view_grows_step_by_step(lm):
    from teachllm.viz import CacheGrowthView

    view = CacheGrowthView(lm, "The sky is", tl.SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))
    assert len(view.figure.data[0].y) == 1  # prefill only
    view.next()
    assert list(view.figure.data[0].x) == [0, 1]
    view.run()
    assert list(view.figure.data[0].y) == [p.bytes_used for p in view.points] and len(view.points) == 4
    view.restart()
    assert len(view.figure.data[0].y) == 1


# ---- 4. step-through ------------------------------------------------------------------------------
def test_step_through_reproduces_generate(lm):
    from teachllm.viz import StepThrough

    params = tl.SamplingParams(temperature=0, max_tokens=5, ignore_eos=True)
    view = StepThrough(lm, "The sky is", params)
    view.next()
    view.run()
    records = view.loop.records
    expected = lm.generate("The sky is", params)
    assert [r.token for r in records] == expected.token_ids
    assert records[-1].text == expected.text and expected.text in view.text.value
    assert [r.phase for r in records] == ["prefill"] + ["decode"] * 4
    n = len(lm.tokenizer.encode("The sky is"))
    assert [r.cache_length for r in records] == [n + i for i in range(5)]
    for r in records:  # candidates are the processed distribution's most likely tokens; greedy takes the first
        probs = {token: p for token, _, p in r.candidates}  # (in bfloat16 two may tie exactly: either is first)
        assert probs[r.token] == r.candidates[0][2] and r.candidates[0][2] >= r.candidates[1][2]
    assert list(view.figure.data[0].x)[0] == round(records[-1].candidates[0][2], 6)


# ---- 5. cost --------------------------------------------------------------------------------------
def test_timeline_segments_follow_the_steps_and_the_flop_counts(lm):
    params = tl.SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)
    labels_of = lambda ids: [str(i) for i in ids]  # noqa: E731
    records = [data.step_record(s, labels_of) for s in tl.generation_steps(lm, [[1, 2, 3, 4, 5]], params)]
    segments = data.timeline(records, lm.config, peak_flops=1e11)
    assert [s.flops for s in segments] == [cost.prefill_flops(lm.config, 5).total] + [
        cost.decode_flops(lm.config, 5 + i).total for i in (1, 2, 3)]
    assert segments[2].start == pytest.approx(records[0].seconds + records[1].seconds)
    assert segments[0].utilisation == pytest.approx(segments[0].flops / records[0].seconds / 1e11)
    prefill, decode, _, decode_util = figures.timeline_figure(segments).data
    assert len(prefill.x) == 1 and len(decode.x) == 3
    assert list(decode.base) == pytest.approx([s.start * 1e3 for s in segments[1:]], rel=1e-3)
    assert list(decode_util.y) == pytest.approx([100 * s.utilisation for s in segments[1:]], rel=1e-3)


def test_roofline_figure_draws_the_roof_and_the_points():
    device = Device("test", peak_flops=1e12, bandwidth=1e11, dtype="float32", source="measured")
    points = [PhasePoint("prefill", 1, 128, 4_000_000_000, 200_000_000, 0.01),
              PhasePoint("decode", 1, 512, 300_000_000, 300_000_000, 0.005)]
    roof, prefill, decode = figures.roofline_figure(device, points).data
    for x, y in zip(roof.x, roof.y, strict=True):
        assert y == pytest.approx(min(1e12, 1e11 * x), rel=1e-3)
    assert roof.x[1] == pytest.approx(10.0)  # the ridge: peak / bandwidth
    assert list(prefill.x) == [20.0] and list(prefill.y) == [4e11]
    assert list(decode.x) == [1.0] and list(decode.y) == [6e10]
    assert not math.isnan(decode.y[0])


# ---- lecture figures: BPE stepper, penalty stages, beam tree -------------------------------------
def test_bpe_pieces_figure_shows_the_pieces_bpe_encode_makes():
    from teachllm.bpe import bpe_encode, train_bpe
    from teachllm.viz import lecture

    text = "the river and the water, the bridge over the river"
    _, merges = train_bpe(text, n_merges=12)
    for n in (0, 1, 5, 12):
        (trace,), layout = lecture.bpe_pieces_spec(text, merges, n)
        pieces = bpe_encode(text, merges[:n])
        assert trace["text"] == [data.token_label(p) for p in pieces]
        assert trace["x"] == [len(p) for p in pieces]
        assert trace["base"][1:] == [sum(trace["x"][:i]) for i in range(1, len(pieces))]
        assert f"{len(pieces)} pieces" in layout["title"]
    assert len(lecture.bpe_pieces_spec(text, merges, 0)[0][0]["text"]) == len(text.replace(" ", "")) + \
        text.count(" ")  # no merges: one piece per character
    stepper = lecture.BPEStepper(text, merges)
    stepper.slider.value = 5
    assert list(stepper.fig.data[0].text) == [data.token_label(p) for p in bpe_encode(text, merges[:5])]


def test_penalty_stages_are_the_sampling_functions_applied_in_order():
    from teachllm.sampling import apply_penalties
    from teachllm.viz import lecture

    torch.manual_seed(0)
    logits = torch.randn(40) * 3
    prompt, output = [1, 2, 3, 4], [5, 6, 5, 7, 6, 5]
    params = tl.SamplingParams(repetition_penalty=1.3, presence_penalty=0.4, frequency_penalty=0.3,
                               no_repeat_ngram_size=2)
    stages = lecture.penalty_stages(logits, params, prompt, output, lambda ids: [f"t{i}" for i in ids], top_n=6)
    final = apply_penalties(logits, params, prompt, output)
    assert [v for v in stages.stages[0][1]] == [float(logits[i]) for i in stages.token_ids]
    assert stages.stages[-1][1] == [float(final[i]) for i in stages.token_ids]  # the same as the pipeline
    assert len(stages.stages) == 4
    traces, _ = lecture.penalty_stages_spec(stages)
    for trace, (name, values) in zip(traces, stages.stages, strict=True):
        assert trace["name"] == name and trace["x"] == stages.labels
        assert trace["y"] == [None if v == float("-inf") else round(v, 4) for v in values]
    banned = [i for i, v in zip(stages.token_ids, stages.stages[-1][1], strict=True) if v == float("-inf")]
    assert banned == sorted(tl.sampling.banned_ngram_tokens(prompt + output, 2) & set(stages.token_ids),
                            key=stages.token_ids.index)


def test_beam_tree_holds_every_beam_and_marks_the_best_path(lm):
    from teachllm.beam import beam_search_steps
    from teachllm.viz import lecture

    ids = lm.tokenizer.encode("The capital of France is")
    params = tl.SamplingParams(num_beams=3, max_tokens=5)
    steps = list(beam_search_steps(lm, ids, params))
    nodes = lecture.beam_tree(steps, data.labeller(lm.tokenizer))
    running = {tuple(h.token_ids) for s in steps for h in s.running}
    assert running <= {n.ids for n in nodes}
    best = steps[-1].finished[0].token_ids
    assert [n.ids for n in nodes if n.kept_to_end] == [tuple(best[:i]) for i in range(1, len(best) + 1)]
    assert best == lm.generate(ids, params).token_ids  # the tree's best path is what beam search returns
    traces, _ = lecture.beam_tree_spec(nodes)
    points = traces[-1]
    assert len(points["x"]) == len(nodes) and points["x"] == [len(n.ids) for n in nodes]


def test_pipeline_figure_shows_the_shapes_the_engine_produces(lm):
    from teachllm.viz import lecture

    prompt = "The capital of France is"
    stages = lecture.pipeline_stages(lm, prompt)
    ids = lm.tokenizer.encode(prompt)
    greedy = lm.generate(ids, tl.SamplingParams(temperature=0, max_tokens=2, ignore_eos=True)).token_ids
    by_name = {s.name: s.shape for s in stages}
    V, L = lm.config.vocab_size, lm.config.n_layers
    assert by_name["tokenizer"] == f"ids [{len(ids)}]"
    assert by_name["prefill"] == f"[1, {len(ids)}] → logits [1, {V}]"
    assert by_name["KV cache"] == f"K, V: [{L}, 1, {lm.config.n_kv_heads}, {len(ids)}, {lm.config.head_dim}] each"
    assert by_name["sampler"] == f"ids {greedy[0]}, {greedy[1]}"  # greedy: the same two tokens as generate
    assert by_name["detokenizer"] == repr(lm.tokenizer.decode(greedy))
    _, layout = lecture.pipeline_spec(stages)
    texts = [a["text"] for a in layout["annotations"]]
    assert all(lecture.wrap(s.shape, 16) in texts and f"<b>{s.name}</b>" in texts for s in stages)
    assert len(layout["shapes"]) == len(stages)


@pytest.mark.parametrize("text", ["every prompt token at once; fills the KV cache",
                                  "一次处理全部提示词 token；填满 KV 缓存", "[1, 37] → logits [1, 49152]",
                                  "ids → text"])
def test_pipeline_text_wraps_to_the_box_without_losing_a_character(text):
    import unicodedata

    from teachllm.viz.lecture import wrap

    lines = wrap(text, 16).split("<br>")
    widths = [sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line) for line in lines]
    assert all(w <= 16 or " " not in line for w, line in zip(widths, lines, strict=True)), lines
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
