"""The roofline's labels (chapter 10, and wherever teachllm.viz draws a roofline) overlap nothing, in English and
in Chinese: a check on the figure spec.

`labels.label_boxes` maps every text of a finished spec (each point's text at its textposition, the ridge's
label) to a box in pixels, from the spec's own axis ranges, height and margins, for a plot area of a given
width; no two boxes may overlap or come within `labels.GAP` px, at any of the widths the figure is shown at
(the book's column at 1280 px gives a plot about 400 px wide, a notebook about 500, a slide up to 1000), and
none may cover another point's marker or leave the plot. The points are chapter 10's own (measured on the
machine that built each edition, and the H100 prediction), and crowded made-up ones.
tests/browser/test_projector.py draws the same figures in Chromium and compares the real bounding boxes.
"""

import itertools
import random

import pytest

pytest.importorskip("plotly")  # before anything that imports teachllm.viz
pytest.importorskip("ipywidgets")

from roofline_cases import chapter_10, points  # noqa: E402  (tests/ is on the path: pytest puts it there)

from teachllm import viz
from teachllm.roofline import Device, PhasePoint
from teachllm.viz import figures, labels

WIDTHS = sorted({*labels.PLOT_WIDTHS, 384, 437, 520, 700, 900})  # px of plot area: those placed for, and between


def crowded(seed: int) -> tuple[Device, list[PhasePoint]]:
    """RooflineView's default measurement (3 prompt lengths, 2 batches × 2 contexts), at made-up places
    under a CPU-like roof, several of them near each other and near the ridge."""
    rng = random.Random(seed)
    device = Device("cpu", 2e11, 4e10, "float32", "measured")
    prefill = []
    for s in (16, 64, 256):
        x = rng.uniform(2, 60)
        prefill.append((s, x, device.attainable(x) * rng.uniform(0.2, 0.95)))
    decode = []
    for b, t in itertools.product((1, 8), (64, 512)):
        x = rng.uniform(0.3, 8)
        decode.append((b, t, x, device.attainable(x) * rng.uniform(0.1, 0.9)))
    return device, points(prefill, decode)


def problems(spec, width: float) -> list[str]:
    """What is wrong with the labels of `spec` at a plot area `width` px wide."""
    traces, layout = spec
    boxes = labels.label_boxes(traces, layout, width)
    plot = labels.plot_of(layout, width)
    found = [f"{a!r} overlaps {b!r}" for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2)
             if labels.overlap(box_a, box_b, labels.GAP)]
    found += [f"{text!r} leaves the plot" for text, box in boxes if labels.outside(box, plot.width, plot.height)]
    markers = [(t.get("text") or [None] * len(t["x"]), t["x"], t["y"]) for t in traces[1:]]
    for text, box in boxes:
        for texts, xs, ys in markers:
            for own, x, y in zip(texts, xs, ys, strict=True):
                if own != text and labels.overlap(box, labels.marker_box(*plot.px(x, y)), 1):
                    found.append(f"{text!r} covers the marker of {own or (x, y)!r}")
    return found


@pytest.fixture(params=["en", "zh"])
def language(request):
    viz.set_language(request.param)
    yield request.param
    viz.set_language("en")


def test_chapter_10_roofline_labels_overlap_nothing(language):
    for name, spec in chapter_10(language).items():
        traces, layout = spec
        texts = [text for text, _ in labels.label_boxes(traces, layout, 400)]
        expected = {"en": "ridge", "zh": "屋脊点"}[language]
        assert texts.count(expected) == 1, (name, texts)  # the ridge's label, in the figure's language
        if name != "10.13 precisions":
            assert len(texts) == 6 if name == "10.8 measured" else len(texts) == 5, (name, texts)
        for width in WIDTHS:
            assert not problems(spec, width), (language, name, width, problems(spec, width))


def test_crowded_points_keep_their_labels_apart(language):
    for seed in range(6):
        device, measured = crowded(seed)
        spec = figures.roofline_spec(device, measured)
        for width in labels.PLOT_WIDTHS:
            clashes = [p for p in problems(spec, width) if "overlaps" in p]
            assert not clashes, (language, seed, width, clashes)


def test_the_placement_is_what_the_spec_says_and_plotly_accepts():
    """Each labelled trace gets one textposition per point, from plotly's list; the y range leaves room above the
    highest point for its label; the ridge's label is an annotation on the dotted line at the ridge."""
    spec = chapter_10("en")["10.8 measured"]
    traces, layout = spec
    for trace in traces[1:]:
        assert len(trace["textposition"]) == len(trace["x"])
        assert set(trace["textposition"]) <= set(labels.POSITIONS)
    plot = labels.plot_of(layout, 400)
    tops = [plot.px(x, y)[1] for t in traces for x, y in zip(t["x"], t["y"], strict=True)]
    assert min(tops) >= 26 and max(tops) <= plot.height - 20, tops
    (ridge,) = layout["annotations"]
    assert ridge["textangle"] == -90 and 10 ** ridge["x"] == pytest.approx(layout["shapes"][0]["x0"])
    fig = figures.figure(spec)  # plotly validates every property
    assert list(fig.data[1].textposition) == traces[1]["textposition"]
    # s=16 and b=16 T=301 lie 3 px apart: their labels go to different sides
    s16, b16 = traces[1]["textposition"][0], traces[2]["textposition"][1]
    assert s16.split()[0] != b16.split()[0], (s16, b16)


def test_the_same_figure_in_both_languages_is_placed_for_its_own_text():
    """Chinese text is wider: its boxes are measured as such, and the English figure does not change after a
    Chinese one was made."""
    assert labels.text_width("屋脊点") == 36 and labels.text_width("ridge") == pytest.approx(5 * 0.62 * 12)
    before = chapter_10("en")
    viz.set_language("zh")
    try:
        chinese = chapter_10("zh")
    finally:
        viz.set_language("en")
    assert chapter_10("en") == before
    assert chinese["10.8 H100"][1]["annotations"][0]["text"] == "屋脊点"


def test_boxes_and_segments():
    assert labels.overlap((0, 0, 10, 10), (9, 9, 20, 20)) and not labels.overlap((0, 0, 10, 10), (11, 0, 20, 10))
    assert labels.overlap((0, 0, 10, 10), (11, 0, 20, 10), gap=2)
    assert labels.crosses((0, 0, 10, 10), (-5, 5), (15, 5)) and not labels.crosses((0, 0, 10, 10), (-5, 15), (15, 15))
    assert labels.crosses((0, 0, 10, 10), (5, -5), (5, 15)) and not labels.crosses((0, 0, 10, 10), (-5, -4), (4, -5))
    top = labels.point_label_box(100, 100, "s=16", "top center")
    right = labels.point_label_box(100, 100, "s=16", "middle right")
    assert top[3] < 100 - 5 and top[0] < 100 < top[2]  # above the marker, centred on it
    assert right[0] > 100 + 5 and right[1] < 100 < right[3]  # right of it, level with it
